/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sprig's remaining groups: JSON encoding and decoding, regular expressions (Go's regexp
 * API over pcre2), semantic versions, paths, the environment, flow control, hashes and the
 * random generators.
 *
 * Regular expressions: Go's RE2 syntax is run by pcre2 with the options that make the two
 * agree on the common subset ($ only at the very end, invalid UTF-8 tolerated, backtracking
 * bounded). Matching, FindAll's empty-match rules, ReplaceAll's $name expansion and Split
 * follow Go's regexp package. Known differences: compile errors read differently (pcre2's
 * text after Go's "error parsing regexp: " prefix), and pcre2 accepts some syntax RE2
 * rejects (backreferences, lookaround).
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <json-c/json.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/utf8.h"
#include "co/util/path.h"
#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"
#include "co/json/json.h"
#include "co/util/semver.h"
#include "sprig.h"

#define OUT_INIT CO_BUF_INIT(tpl_out_cap())

/* ---- JSON --------------------------------------------------------------------------------- */

static int json_out(tpl_x *x, tv *ret, tv *a, bool html, const char *indent, bool must)
{
    co_buf b = OUT_INIT;
    if (sp_json_encode(x, &b, &a[0], html, indent) < 0) {
        co_buf_dispose(&b);
        if (must || x->code == CO_ETOOBIG) {
            return -1;
        }
        co_buf_reset(x->err);
        *ret = tv_string(x, "", 0);
        return 0;
    }
    *ret = tv_string_take(x, &b);
    return 0;
}

static int fn_to_json(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return json_out(x, ret, a, true, NULL, false);
}

static int fn_must_to_json(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return json_out(x, ret, a, true, NULL, true);
}

static int fn_to_pretty_json(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return json_out(x, ret, a, true, "  ", false);
}

static int fn_must_to_pretty_json(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return json_out(x, ret, a, true, "  ", true);
}

static int fn_to_raw_json(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    /* sprig's toRawJson panics on an encoding error: the error surfaces either way */
    return json_out(x, ret, a, false, NULL, true);
}

/* json.Unmarshal into interface{}: numbers become float64. */
static int from_json(tpl_x *x, tv *ret, const tv_str *s, bool must)
{
    int type = 0;
    if (s->len == 0 || tpl_json_decode(x, s->s, s->len, ret, &type) < 0) {
        if (co_budget_status() < 0) {
            return -1;
        }
        if (!must) {
            co_buf_reset(x->err);
            *ret = tv_nil(&T_IFACE);
            return 0;
        }
        if (s->len == 0) {
            return tpl_fail(x, "unexpected end of JSON input");
        }
        return -1;
    }
    if (type == CO_JV_NULL) {
        *ret = tv_nil(&T_IFACE);
    }
    return 0;
}

static int fn_from_json(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return from_json(x, ret, a[0].u.s, false);
}

static int fn_must_from_json(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return from_json(x, ret, a[0].u.s, true);
}

/* ---- flow control, environment ------------------------------------------------------------ */

static int fn_fail(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)ret;
    (void)n;
    return tpl_fail(x, "%s", sp_cstr(a[0].u.s));
}

static int fn_hello(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)a;
    (void)n;
    *ret = tv_cstring(x, "Hello!");
    return 0;
}

static const char *get_env(tpl_x *x, const char *name)
{
    if (!(x->set->funcs->flags & CO_TEMPLATE_FUNCS_ENV)) {
        return "";
    }
    const char *v = getenv(name); // NOLINT(concurrency-mt-unsafe): the environment is not
                                  // modified while the operator runs
    return v ? v : "";
}

static int fn_env(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    *ret = tv_cstring(x, get_env(x, sp_cstr(a[0].u.s)));
    return 0;
}

static bool shell_special(char c)
{
    return strchr("*#$@!?-", c) != NULL || (c >= '0' && c <= '9');
}

static bool shell_alnum(char c)
{
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* os.ExpandEnv */
static int fn_expandenv(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const char *s = a[0].u.s->s;
    size_t len = a[0].u.s->len;
    co_buf b = OUT_INIT;
    int rc = 0;
    size_t i = 0;
    for (size_t j = 0; j < len && rc == 0; j++) {
        if (s[j] != '$' || j + 1 >= len) {
            continue;
        }
        rc = co_buf_put(&b, s + i, j - i);
        const char *t = s + j + 1;
        size_t tl = len - j - 1;
        size_t w = 0;
        const char *name = NULL;
        size_t nl = 0;
        if (t[0] == '{') {
            if (tl > 2 && shell_special(t[1]) && t[2] == '}') {
                name = t + 1;
                nl = 1;
                w = 3;
            } else {
                w = 1;
                for (size_t k = 1; k < tl; k++) {
                    if (t[k] == '}') {
                        if (k == 1) {
                            w = 2;
                        } else {
                            name = t + 1;
                            nl = k - 1;
                            w = k + 1;
                        }
                        break;
                    }
                }
            }
        } else if (shell_special(t[0])) {
            name = t;
            nl = 1;
            w = 1;
        } else {
            while (w < tl && shell_alnum(t[w])) {
                w++;
            }
            name = w ? t : NULL;
            nl = w;
        }
        if (!name && w == 0) {
            rc = rc < 0 ? rc : co_buf_putc(&b, '$');
        } else if (name) {
            char *key = co_xstrndup(name, nl);
            rc = rc < 0 ? rc : co_buf_puts(&b, get_env(x, key));
            free(key);
        }
        j += w;
        i = j + 1;
    }
    rc = rc < 0 ? rc : co_buf_put(&b, s + (i < len ? i : len), i < len ? len - i : 0);
    return sp_ret_buf(x, ret, &b, rc);
}

static int fn_get_host_by_name(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)ret;
    (void)a;
    (void)n;
    return tpl_fail(x, "getHostByName is disabled: templates may not resolve host names");
}

/* ---- paths -------------------------------------------------------------------------------- */

static tv path_clean(tpl_x *x, const char *p, size_t n)
{
    char *out = tpl_alloc(x, CO_PATH_CLEAN_SIZE(n));
    return tv_string(x, out, co_path_clean_into(out, p, n));
}

static int fn_clean(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    *ret = path_clean(x, a[0].u.s->s, a[0].u.s->len);
    return 0;
}

static int fn_base(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const char *p = a[0].u.s->s;
    size_t len = a[0].u.s->len;
    if (len == 0) {
        *ret = tv_string(x, ".", 1);
        return 0;
    }
    while (len > 0 && p[len - 1] == '/') {
        len--;
    }
    size_t i = len;
    while (i > 0 && p[i - 1] != '/') {
        i--;
    }
    if (len - i == 0) {
        *ret = tv_string(x, "/", 1);
        return 0;
    }
    *ret = tv_string(x, p + i, len - i);
    return 0;
}

static int fn_dir(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const char *p = a[0].u.s->s;
    size_t len = a[0].u.s->len;
    size_t i = len;
    while (i > 0 && p[i - 1] != '/') {
        i--;
    }
    *ret = path_clean(x, p, i);
    return 0;
}

static int fn_ext(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const char *p = a[0].u.s->s;
    for (size_t i = a[0].u.s->len; i > 0 && p[i - 1] != '/'; i--) {
        if (p[i - 1] == '.') {
            *ret = tv_string(x, p + i - 1, a[0].u.s->len - i + 1);
            return 0;
        }
    }
    *ret = tv_string(x, "", 0);
    return 0;
}

static int fn_is_abs(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = tv_bool(a[0].u.s->len > 0 && a[0].u.s->s[0] == '/');
    return 0;
}

/* ---- hashes and random values ------------------------------------------------------------- */

static int fn_sha1sum(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(a[0].u.s->s, a[0].u.s->len, md, &mdlen, EVP_sha1(), NULL) != 1) {
        return tpl_fail(x, "sha1 is not available");
    }
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    for (unsigned i = 0; i < mdlen; i++) {
        snprintf(hex + 2 * (size_t)i, 3, "%02x", md[i]);
    }
    *ret = tv_string(x, hex, 2 * (size_t)mdlen);
    return 0;
}

static int random_bytes(tpl_x *x, void *buf, size_t n)
{
    if (n > 0 && RAND_bytes(buf, (int)n) != 1) {
        return tpl_fail(x, "no random data available");
    }
    return 0;
}

/* A uniformly random index below @n (rejection sampling). */
static int random_below(tpl_x *x, uint32_t n, uint32_t *out)
{
    uint32_t limit = UINT32_MAX - UINT32_MAX % n;
    for (;;) {
        uint32_t r;
        if (random_bytes(x, &r, sizeof(r)) < 0) {
            return -1;
        }
        if (r < limit) {
            *out = r % n;
            return 0;
        }
    }
}

static int random_string(tpl_x *x, tv *ret, int64_t count, const char *alphabet)
{
    if (count < 0) {
        return tpl_fail(x, "invalid count %lld: must not be negative", (long long)count);
    }
    if ((uint64_t)count > CO_MAX_TEMPLATE_OUTPUT) {
        return tpl_fail_code(x, CO_ETOOBIG, "output too large (more than %zu bytes)",
                             (size_t)CO_MAX_TEMPLATE_OUTPUT);
    }
    if (tpl_reserve(x, (size_t)count + 1, 1) < 0) {
        return -1;
    }
    char *s = tpl_alloc(x, (size_t)count + 1);
    uint32_t alen = (uint32_t)strlen(alphabet);
    for (int64_t i = 0; i < count; i++) {
        uint32_t k;
        if (random_below(x, alen, &k) < 0) {
            return -1;
        }
        s[i] = alphabet[k];
    }
    *ret = tv_string(x, s, (size_t)count);
    return 0;
}

#define LETTERS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define DIGITS  "0123456789"

static int fn_rand_alnum(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return random_string(x, ret, a[0].u.i, LETTERS DIGITS);
}

static int fn_rand_alpha(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return random_string(x, ret, a[0].u.i, LETTERS);
}

static int fn_rand_numeric(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return random_string(x, ret, a[0].u.i, DIGITS);
}

static int fn_rand_ascii(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    char printable[96];
    for (int c = 32; c <= 126; c++) {
        printable[c - 32] = (char)c;
    }
    printable[95] = '\0';
    return random_string(x, ret, a[0].u.i, printable);
}

static int fn_rand_int(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t lo = a[0].u.i;
    int64_t span = a[1].u.i - lo;
    if (span <= 0) {
        return tpl_fail(x, "invalid argument to Intn");
    }
    uint64_t r;
    if (random_bytes(x, &r, sizeof(r)) < 0) {
        return -1;
    }
    *ret = tv_int(&T_INT, lo + (int64_t)(r % (uint64_t)span));
    return 0;
}

static int fn_rand_bytes(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t count = a[0].u.i;
    if (count < 0 || (uint64_t)count > CO_MAX_TEMPLATE_OUTPUT / 2) {
        return tpl_fail(x, "runtime error: makeslice: len out of range");
    }
    if (tpl_reserve(x, (size_t)count + 1, 3) < 0) {
        return -1;
    }
    unsigned char *buf = tpl_alloc(x, (size_t)count + 1);
    if (random_bytes(x, buf, (size_t)count) < 0) {
        return -1;
    }
    char *e = co_base64_encode(buf, (size_t)count, 0);
    *ret = tv_cstring(x, e);
    free(e);
    return 0;
}

static int fn_uuidv4(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)a;
    (void)n;
    unsigned char u[16];
    if (random_bytes(x, u, sizeof(u)) < 0) {
        return -1;
    }
    u[6] = (unsigned char)((u[6] & 0x0F) | 0x40);
    u[8] = (unsigned char)((u[8] & 0x3F) | 0x80);
    char s[37];
    snprintf(s, sizeof(s), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
    *ret = tv_string(x, s, 36);
    return 0;
}

/* xstrings.Shuffle: a random permutation of the runes */
static int fn_shuffle(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *s = a[0].u.s;
    int32_t *r = tpl_alloc(x, (s->len + 1) * sizeof(int32_t));
    size_t nr = 0;
    for (size_t i = 0; i < s->len;) {
        size_t w;
        r[nr++] = co_utf8_decode_rune(s->s + i, s->len - i, &w);
        i += w;
    }
    for (size_t i = nr; i > 1; i--) {
        uint32_t k;
        if (random_below(x, (uint32_t)i, &k) < 0) {
            return -1;
        }
        int32_t t = r[i - 1];
        r[i - 1] = r[k];
        r[k] = t;
    }
    co_buf b = OUT_INIT;
    int rc = 0;
    for (size_t i = 0; i < nr && rc == 0; i++) {
        char tmp[4];
        rc = co_buf_put(&b, tmp, co_utf8_encode(tmp, r[i]));
    }
    return sp_ret_buf(x, ret, &b, rc);
}

/* ---- regular expressions ------------------------------------------------------------------ */

typedef struct rx {
    pcre2_code *code;
    pcre2_match_data *md;
    pcre2_match_context *mc;
} rx;

static void rx_free(rx *r)
{
    pcre2_match_data_free(r->md);
    pcre2_match_context_free(r->mc);
    pcre2_code_free(r->code);
}

/* Compiles @pat; on failure sets the message (with Go's MustCompile wording when @panic). */
static int rx_compile(tpl_x *x, rx *r, const tv_str *pat, bool panic)
{
    int err = 0;
    PCRE2_SIZE off = 0;
    memset(r, 0, sizeof(*r));
    r->code =
        pcre2_compile((PCRE2_SPTR)pat->s, pat->len,
                      PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY, &err, &off, NULL);
    if (!r->code) {
        PCRE2_UCHAR msg[256];
        tpl_ignore(pcre2_get_error_message(err, msg, sizeof(msg)));
        if (panic) {
            return tpl_fail(x, "regexp: Compile(%s): error parsing regexp: %s", sp_cstr(pat),
                            (const char *)msg);
        }
        return tpl_fail(x, "error parsing regexp: %s", (const char *)msg);
    }
    r->md = pcre2_match_data_create_from_pattern(r->code, NULL);
    r->mc = pcre2_match_context_create(NULL);
    pcre2_set_match_limit(r->mc, 10000000);
    pcre2_set_depth_limit(r->mc, 10000);
    return 0;
}

/* One match at or after @pos: 1 found (ovector in r->md), 0 none, -1 error. */
static int rx_exec(tpl_x *x, rx *r, const tv_str *s, size_t pos)
{
    int rc = pcre2_match(r->code, (PCRE2_SPTR)s->s, s->len, pos, 0, r->md, r->mc);
    if (rc == PCRE2_ERROR_NOMATCH) {
        return 0;
    }
    if (rc < 0) {
        PCRE2_UCHAR msg[256];
        tpl_ignore(pcre2_get_error_message(rc, msg, sizeof(msg)));
        return tpl_fail_code(x, CO_ETOOBIG, "regexp: %s", (const char *)msg);
    }
    return 1;
}

static size_t rune_width(const tv_str *s, size_t pos)
{
    if (pos >= s->len) {
        return 1;
    }
    size_t w;
    tpl_ignore(co_utf8_decode_rune(s->s + pos, s->len - pos, &w));
    return w;
}

typedef int (*rx_visit)(tpl_x *x, void *ctx, const PCRE2_SIZE *ov, uint32_t npairs);

/* Go's allMatches: every match, no empty match right after the previous one, n < 0 = all. */
static int rx_all(tpl_x *x, rx *r, const tv_str *s, int64_t n, rx_visit fn, void *ctx)
{
    size_t pos = 0;
    long prev_end = -1;
    int64_t count = 0;
    while ((n < 0 || count < n) && pos <= s->len) {
        int rc = co_budget_tick();
        if (rc < 0) {
            return tpl_fail_budget(x, rc);
        }
        rc = rx_exec(x, r, s, pos);
        if (rc <= 0) {
            return rc;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);
        bool accept = true;
        if (ov[1] == pos) {
            if ((long)ov[0] == prev_end) {
                accept = false;
            }
            pos += rune_width(s, pos);
        } else {
            pos = ov[1];
        }
        prev_end = (long)ov[1];
        if (accept) {
            if (fn(x, ctx, ov, pcre2_get_ovector_count(r->md)) < 0) {
                return -1;
            }
            count++;
        }
    }
    return 0;
}

static int fn_regex_match_impl(tpl_x *x, tv *ret, tv *a, bool must)
{
    rx r;
    if (rx_compile(x, &r, a[0].u.s, false) < 0) {
        if (must) {
            return -1;
        }
        co_buf_reset(x->err);
        *ret = tv_bool(false);
        return 0;
    }
    int rc = rx_exec(x, &r, a[1].u.s, 0);
    rx_free(&r);
    if (rc < 0) {
        return -1;
    }
    *ret = tv_bool(rc == 1);
    return 0;
}

static int fn_regex_match(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return fn_regex_match_impl(x, ret, a, false);
}

static int fn_must_regex_match(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return fn_regex_match_impl(x, ret, a, true);
}

static int regex_find(tpl_x *x, tv *ret, tv *a, bool must)
{
    rx r;
    if (rx_compile(x, &r, a[0].u.s, !must) < 0) {
        return -1;
    }
    int rc = rx_exec(x, &r, a[1].u.s, 0);
    if (rc == 1) {
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r.md);
        *ret = tv_string(x, a[1].u.s->s + ov[0], ov[1] - ov[0]);
    } else if (rc == 0) {
        *ret = tv_string(x, "", 0);
    }
    rx_free(&r);
    return rc < 0 ? -1 : 0;
}

static int fn_regex_find(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return regex_find(x, ret, a, false);
}

static int fn_must_regex_find(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return regex_find(x, ret, a, true);
}

typedef struct collect {
    const tv_str *s;
    co_buf items; /* tv array */
} collect;

static int collect_match(tpl_x *x, void *ctx, const PCRE2_SIZE *ov, uint32_t npairs)
{
    (void)npairs;
    collect *c = ctx;
    tv v = tv_string(x, c->s->s + ov[0], ov[1] - ov[0]);
    if (co_buf_put(&c->items, &v, sizeof(v)) < 0) {
        return tpl_fail_budget(x, co_budget_refuse(c->items.max + sizeof(v)));
    }
    return 0;
}

static tv collected(tpl_x *x, collect *c)
{
    size_t cnt = c->items.len / sizeof(tv);
    if (cnt == 0) {
        co_buf_dispose(&c->items);
        return tv_nil(&T_LIST_STRING);
    }
    tv l = tv_list_new(x, &T_LIST_STRING, cnt);
    memcpy(l.u.l->items, c->items.ptr, cnt * sizeof(tv));
    co_buf_dispose(&c->items);
    return l;
}

static int regex_find_all(tpl_x *x, tv *ret, tv *a, bool must)
{
    rx r;
    if (rx_compile(x, &r, a[0].u.s, !must) < 0) {
        return -1;
    }
    collect c = {a[1].u.s, CO_BUF_INIT(co_budget_memory_left())};
    int rc = rx_all(x, &r, a[1].u.s, a[2].u.i, collect_match, &c);
    rx_free(&r);
    if (rc < 0) {
        co_buf_dispose(&c.items);
        return -1;
    }
    *ret = collected(x, &c);
    return 0;
}

static int fn_regex_find_all(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return regex_find_all(x, ret, a, false);
}

static int fn_must_regex_find_all(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return regex_find_all(x, ret, a, true);
}

/* Go's Regexp.expand for a replacement template. */
static int expand(co_buf *b,
                  const rx *r,
                  const tv_str *tmpl,
                  const tv_str *src,
                  const PCRE2_SIZE *ov,
                  uint32_t npairs)
{
    const char *t = tmpl->s;
    size_t tl = tmpl->len;
    int rc = 0;
    while (tl > 0 && rc == 0) {
        const char *d = memchr(t, '$', tl);
        if (!d) {
            break;
        }
        rc = co_buf_put(b, t, (size_t)(d - t));
        tl -= (size_t)(d - t) + 1;
        t = d + 1;
        if (tl > 0 && t[0] == '$') {
            rc = rc < 0 ? rc : co_buf_putc(b, '$');
            t++;
            tl--;
            continue;
        }
        /* extract */
        bool brace = tl > 0 && t[0] == '{';
        const char *s = brace ? t + 1 : t;
        size_t sl = brace ? tl - 1 : tl;
        size_t i = 0;
        while (i < sl) {
            size_t w;
            int32_t c = co_utf8_decode_rune(s + i, sl - i, &w);
            if (!tpl_is_letter(c) && !tpl_is_digit(c) && c != '_') {
                break;
            }
            i += w;
        }
        bool ok = i > 0 && (!brace || (i < sl && s[i] == '}'));
        if (!ok) {
            rc = rc < 0 ? rc : co_buf_putc(b, '$');
            continue;
        }
        const char *name = s;
        size_t nl = i;
        size_t consumed = (brace ? 1 : 0) + i + (brace ? 1 : 0);
        long num = 0;
        for (size_t k = 0; k < nl; k++) {
            if (name[k] < '0' || name[k] > '9' || num >= 100000000) {
                num = -1;
                break;
            }
            num = num * 10 + (name[k] - '0');
        }
        if (name[0] == '0' && nl > 1) {
            num = -1;
        }
        t += consumed;
        tl -= consumed;
        long group = -1;
        if (num >= 0) {
            group = num;
        } else {
            uint32_t count = 0;
            uint32_t esize = 0;
            PCRE2_SPTR table = NULL;
            tpl_ignore(pcre2_pattern_info(r->code, PCRE2_INFO_NAMECOUNT, &count));
            tpl_ignore(pcre2_pattern_info(r->code, PCRE2_INFO_NAMEENTRYSIZE, &esize));
            tpl_ignore(pcre2_pattern_info(r->code, PCRE2_INFO_NAMETABLE, &table));
            long best = -1;
            for (uint32_t k = 0; k < count && table; k++) {
                PCRE2_SPTR e = table + (size_t)k * esize;
                long g = (long)((e[0] << 8) | e[1]);
                const char *en = (const char *)e + 2;
                if (strlen(en) == nl && memcmp(en, name, nl) == 0 && (best < 0 || g < best)) {
                    best = g;
                }
            }
            group = best;
        }
        if (group >= 0 && (uint32_t)group < npairs && ov[2 * group] != PCRE2_UNSET) {
            rc = rc < 0 ? rc
                        : co_buf_put(b, src->s + ov[2 * group], ov[2 * group + 1] - ov[2 * group]);
        }
    }
    return rc < 0 ? rc : co_buf_put(b, t, tl);
}

static int regex_replace(tpl_x *x, tv *ret, tv *a, bool literal, bool must)
{
    rx r;
    if (rx_compile(x, &r, a[0].u.s, !must) < 0) {
        return -1;
    }
    const tv_str *src = a[1].u.s;
    const tv_str *repl = a[2].u.s;
    co_buf b = OUT_INIT;
    int rc = 0;
    size_t last = 0;
    size_t pos = 0;
    while (pos <= src->len && rc == 0) {
        int m = rx_exec(x, &r, src, pos);
        if (m < 0) {
            rx_free(&r);
            co_buf_dispose(&b);
            return -1;
        }
        if (m == 0) {
            break;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r.md);
        size_t s0 = ov[0];
        size_t s1 = ov[1];
        rc = co_buf_put(&b, src->s + last, s0 > last ? s0 - last : 0);
        if (s1 > last || s0 == 0) {
            if (literal) {
                rc = rc < 0 ? rc : co_buf_put(&b, repl->s, repl->len);
            } else {
                rc = rc < 0 ? rc : expand(&b, &r, repl, src, ov, pcre2_get_ovector_count(r.md));
            }
        }
        last = s1;
        size_t w = rune_width(src, pos);
        if (pos + w > s1) {
            pos += w;
        } else if (pos + 1 > s1) {
            pos++;
        } else {
            pos = s1;
        }
    }
    rx_free(&r);
    rc = rc < 0 ? rc : co_buf_put(&b, src->s + last, src->len - last);
    return sp_ret_buf(x, ret, &b, rc);
}

static int fn_regex_replace_all(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return regex_replace(x, ret, a, false, false);
}

static int fn_must_regex_replace_all(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return regex_replace(x, ret, a, false, true);
}

static int fn_regex_replace_all_literal(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return regex_replace(x, ret, a, true, false);
}

static int fn_must_regex_replace_all_literal(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return regex_replace(x, ret, a, true, true);
}

typedef struct spans {
    co_buf items; /* pairs of size_t */
} spans;

static int collect_span(tpl_x *x, void *ctx, const PCRE2_SIZE *ov, uint32_t npairs)
{
    (void)npairs;
    spans *c = ctx;
    size_t pair[2] = {ov[0], ov[1]};
    if (co_buf_put(&c->items, pair, sizeof(pair)) < 0) {
        return tpl_fail_budget(x, co_budget_refuse(c->items.max + sizeof(pair)));
    }
    return 0;
}

static int regex_split(tpl_x *x, tv *ret, tv *a, bool must)
{
    const tv_str *pat = a[0].u.s;
    const tv_str *s = a[1].u.s;
    int64_t n = a[2].u.i;
    rx r;
    if (rx_compile(x, &r, pat, !must) < 0) {
        return -1;
    }
    if (n == 0) {
        rx_free(&r);
        *ret = tv_nil(&T_LIST_STRING);
        return 0;
    }
    if (pat->len > 0 && s->len == 0) {
        rx_free(&r);
        tv l = tv_list_new(x, &T_LIST_STRING, 1);
        l.u.l->items[0] = tv_string(x, "", 0);
        *ret = l;
        return 0;
    }
    spans sp = {CO_BUF_INIT(co_budget_memory_left())};
    int rc = rx_all(x, &r, s, n, collect_span, &sp);
    rx_free(&r);
    if (rc < 0) {
        co_buf_dispose(&sp.items);
        return -1;
    }
    size_t cnt = sp.items.len / (2 * sizeof(size_t));
    const size_t *m = (const size_t *)(void *)sp.items.ptr;
    tv l = tv_list_new(x, &T_LIST_STRING, cnt + 1);
    size_t k = 0;
    size_t beg = 0;
    size_t end = 0;
    for (size_t i = 0; i < cnt; i++) {
        if (n > 0 && (int64_t)k == n - 1) {
            break;
        }
        end = m[2 * i];
        if (m[2 * i + 1] != 0) {
            l.u.l->items[k++] = tv_string(x, s->s + beg, end - beg);
        }
        beg = m[2 * i + 1];
    }
    if (end != s->len) {
        l.u.l->items[k++] = tv_string(x, s->s + beg, s->len - beg);
    }
    l.u.l->n = k;
    co_buf_dispose(&sp.items);
    *ret = l;
    return 0;
}

static int fn_regex_split(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return regex_split(x, ret, a, false);
}

static int fn_must_regex_split(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return regex_split(x, ret, a, true);
}

static int fn_regex_quote_meta(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *s = a[0].u.s;
    co_buf b = OUT_INIT;
    int rc = 0;
    for (size_t i = 0; i < s->len && rc == 0; i++) {
        if (strchr("\\.+*?()|[]{}^$", s->s[i]) && s->s[i] != '\0') {
            rc = co_buf_putc(&b, '\\');
        }
        rc = rc < 0 ? rc : co_buf_putc(&b, s->s[i]);
    }
    return sp_ret_buf(x, ret, &b, rc);
}

/* ---- semantic versions -------------------------------------------------------------------- */

static const tpl_func semver_methods[];
static const tv_type T_SEMVER;

static const co_semver *sv(const tv *v)
{
    return v->u.o ? v->u.o->native : NULL;
}

static int sv_marshal(tpl_x *x, co_buf *out, const tv *v)
{
    (void)x;
    char *s = co_semver_string(sv(v));
    int rc = co_buf_putc(out, '"');
    rc = rc < 0 ? rc : co_buf_puts(out, s);
    rc = rc < 0 ? rc : co_buf_putc(out, '"');
    free(s);
    return rc;
}

static const tv_type T_SEMVER_VAL = {.kind = TK_STRUCT,
                                     .name = "semver.Version",
                                     .methods = semver_methods + 7,
                                     .nmethods = 11,
                                     .marshal_json = sv_marshal};
static const tv_type T_SEMVER = {.kind = TK_PTR,
                                 .name = "*semver.Version",
                                 .elem = &T_SEMVER_VAL,
                                 .methods = semver_methods,
                                 .nmethods = 7,
                                 .marshal_json = sv_marshal};

static const tv_type *const P_SV[] = {&T_SEMVER, &T_SEMVER};
static const tv_type *const P_STR_ARG[] = {&T_STRING};

static char *arena_strdup(tpl_x *x, const char *s)
{
    size_t n = strlen(s);
    char *p = tpl_alloc(x, n + 1);
    memcpy(p, s, n + 1);
    return p;
}

/* Wraps a parsed version (moved into the session) as a value of @p type (*semver.Version or
 * semver.Version). */
static tv semver_wrap(tpl_x *x, co_semver *v, const tv_type *type)
{
    co_semver *copy = tpl_alloc(x, sizeof(*copy));
    /* the strings are copied into the arena so that nothing needs freeing later */
    copy->major = v->major;
    copy->minor = v->minor;
    copy->patch = v->patch;
    copy->pre = arena_strdup(x, v->pre);
    copy->metadata = arena_strdup(x, v->metadata);
    copy->original = arena_strdup(x, v->original);
    co_semver_dispose(v);
    tv_obj *o = tpl_alloc(x, sizeof(*o));
    o->native = copy;
    tv r = {type, {.o = o}};
    return r;
}

/* Wraps a parsed version (moved into the session) as a *semver.Version value. */
static tv semver_value(tpl_x *x, co_semver *v)
{
    return semver_wrap(x, v, &T_SEMVER);
}

static int need_sv(tpl_x *x, const tv *v)
{
    if (!sv(v)) {
        return sp_panic_nil(x);
    }
    return 0;
}

static int m_major(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_sv(x, &a[0]) < 0) {
        return -1;
    }
    *ret = tv_uint(&T_UINT64, sv(&a[0])->major);
    return 0;
}

static int m_minor(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_sv(x, &a[0]) < 0) {
        return -1;
    }
    *ret = tv_uint(&T_UINT64, sv(&a[0])->minor);
    return 0;
}

static int m_patch(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_sv(x, &a[0]) < 0) {
        return -1;
    }
    *ret = tv_uint(&T_UINT64, sv(&a[0])->patch);
    return 0;
}

static int m_prerelease(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_sv(x, &a[0]) < 0) {
        return -1;
    }
    *ret = tv_cstring(x, sv(&a[0])->pre);
    return 0;
}

static int m_metadata(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_sv(x, &a[0]) < 0) {
        return -1;
    }
    *ret = tv_cstring(x, sv(&a[0])->metadata);
    return 0;
}

static int m_original(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_sv(x, &a[0]) < 0) {
        return -1;
    }
    *ret = tv_cstring(x, sv(&a[0])->original);
    return 0;
}

static int m_string(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_sv(x, &a[0]) < 0) {
        return -1;
    }
    char *s = co_semver_string(sv(&a[0]));
    *ret = tv_cstring(x, s);
    free(s);
    return 0;
}

/* IncMajor, IncMinor and IncPatch (value receivers: they return a semver.Version). */
static int increment(tpl_x *x, tv *ret, const tv *v, char part)
{
    if (need_sv(x, v) < 0) {
        return -1;
    }
    co_semver next;
    co_semver_increment(&next, sv(v), part);
    *ret = semver_wrap(x, &next, &T_SEMVER_VAL);
    return 0;
}

static int m_inc_major(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return increment(x, ret, &a[0], 'M');
}

static int m_inc_minor(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return increment(x, ret, &a[0], 'm');
}

static int m_inc_patch(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return increment(x, ret, &a[0], 'p');
}

/* Whether @p s is made of @p allowed bytes only. */
static bool only_of(const char *s, size_t len, const char *allowed)
{
    for (size_t i = 0; i < len; i++) {
        if (!s[i] || !strchr(allowed, s[i])) {
            return false;
        }
    }
    return true;
}

#define SV_DIGITS    "0123456789"
#define SV_IDENT_SET "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-" SV_DIGITS

/* The checks of SetPrerelease (@p pre) and SetMetadata in Masterminds/semver 3.4 (the Go
 * operator's): dot-separated non-empty identifiers of [0-9A-Za-z-], and for a prerelease no
 * numeric identifier with a leading zero. */
static const char *identifiers_error(const tv_str *text, bool pre)
{
    const char *p = text->s, *end = text->s + text->len;
    while (p <= end) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        size_t len = dot ? (size_t)(dot - p) : (size_t)(end - p);
        if (len == 0 || (!(pre && only_of(p, len, SV_DIGITS)) && !only_of(p, len, SV_IDENT_SET))) {
            return pre ? "invalid prerelease string" : "invalid metadata string";
        }
        if (pre && only_of(p, len, SV_DIGITS) && len > 1 && p[0] == '0') {
            return "version segment starts with 0";
        }
        if (!dot) {
            break;
        }
        p = dot + 1;
    }
    return NULL;
}

/* SetPrerelease and SetMetadata: a copy with that part replaced, its original text rebuilt. */
static int set_part(tpl_x *x, tv *ret, tv *a, bool pre)
{
    if (need_sv(x, &a[0]) < 0) {
        return -1;
    }
    const co_semver *v = sv(&a[0]);
    const tv_str *text = a[1].u.s;
    const char *bad = text->len ? identifiers_error(text, pre) : NULL;
    if (bad) {
        return tpl_fail(x, "%s", bad);
    }
    co_semver next = {v->major, v->minor, v->patch, NULL, NULL, NULL};
    char *value = co_xstrndup(text->s, text->len);
    next.pre = pre ? value : co_xstrdup(v->pre ? v->pre : "");
    next.metadata = pre ? co_xstrdup(v->metadata ? v->metadata : "") : value;
    char *str = co_semver_string(&next);
    next.original = co_xasprintf("%s%s", v->original && v->original[0] == 'v' ? "v" : "", str);
    free(str);
    *ret = semver_wrap(x, &next, &T_SEMVER_VAL);
    return 0;
}

static int m_set_prerelease(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return set_part(x, ret, a, true);
}

static int m_set_metadata(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return set_part(x, ret, a, false);
}

static int m_compare(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_sv(x, &a[0]) < 0 || need_sv(x, &a[1]) < 0) {
        return -1;
    }
    *ret = tv_int(&T_INT, co_semver_compare(sv(&a[0]), sv(&a[1])));
    return 0;
}

static int m_equal(tpl_x *x, tv *ret, tv *a, size_t n)
{
    if (m_compare(x, ret, a, n) < 0) {
        return -1;
    }
    *ret = tv_bool(ret->u.i == 0);
    return 0;
}

static int m_less(tpl_x *x, tv *ret, tv *a, size_t n)
{
    if (m_compare(x, ret, a, n) < 0) {
        return -1;
    }
    *ret = tv_bool(ret->u.i < 0);
    return 0;
}

static int m_greater(tpl_x *x, tv *ret, tv *a, size_t n)
{
    if (m_compare(x, ret, a, n) < 0) {
        return -1;
    }
    *ret = tv_bool(ret->u.i > 0);
    return 0;
}

static int m_less_equal(tpl_x *x, tv *ret, tv *a, size_t n)
{
    if (m_compare(x, ret, a, n) < 0) {
        return -1;
    }
    *ret = tv_bool(ret->u.i <= 0);
    return 0;
}

static int m_greater_equal(tpl_x *x, tv *ret, tv *a, size_t n)
{
    if (m_compare(x, ret, a, n) < 0) {
        return -1;
    }
    *ret = tv_bool(ret->u.i >= 0);
    return 0;
}

/* pointer-receiver methods first, then the value-receiver ones, each group sorted by name (as
 * Masterminds/semver 3.4 declares them: a method's result, a semver.Version, is not
 * addressable, so its pointer methods cannot be called) */
static const tpl_func semver_methods[] = {
    TPL_FUNC("Compare", m_compare, P_SV, 1, false, false, &T_INT),
    TPL_FUNC("Equal", m_equal, P_SV, 1, false, false, &T_BOOL),
    TPL_FUNC("GreaterThan", m_greater, P_SV, 1, false, false, &T_BOOL),
    TPL_FUNC("GreaterThanEqual", m_greater_equal, P_SV, 1, false, false, &T_BOOL),
    TPL_FUNC("LessThan", m_less, P_SV, 1, false, false, &T_BOOL),
    TPL_FUNC("LessThanEqual", m_less_equal, P_SV, 1, false, false, &T_BOOL),
    TPL_FUNC("Original", m_original, P_SV, 0, false, false, &T_STRING),
    TPL_FUNC("IncMajor", m_inc_major, P_SV, 0, false, false, &T_SEMVER_VAL),
    TPL_FUNC("IncMinor", m_inc_minor, P_SV, 0, false, false, &T_SEMVER_VAL),
    TPL_FUNC("IncPatch", m_inc_patch, P_SV, 0, false, false, &T_SEMVER_VAL),
    TPL_FUNC("Major", m_major, P_SV, 0, false, false, &T_UINT64),
    TPL_FUNC("Metadata", m_metadata, P_SV, 0, false, false, &T_STRING),
    TPL_FUNC("Minor", m_minor, P_SV, 0, false, false, &T_UINT64),
    TPL_FUNC("Patch", m_patch, P_SV, 0, false, false, &T_UINT64),
    TPL_FUNC("Prerelease", m_prerelease, P_SV, 0, false, false, &T_STRING),
    TPL_FUNC("SetMetadata", m_set_metadata, P_STR_ARG, 1, false, true, &T_SEMVER_VAL),
    TPL_FUNC("SetPrerelease", m_set_prerelease, P_STR_ARG, 1, false, true, &T_SEMVER_VAL),
    TPL_FUNC("String", m_string, P_SV, 0, false, false, &T_STRING),
};

static int fn_semver(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_semver v;
    if (co_semver_parse(&v, sp_cstr(a[0].u.s)) < 0) {
        return tpl_fail(x, "%s", co_error_last());
    }
    *ret = semver_value(x, &v);
    return 0;
}

static int fn_semver_compare(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_semver_constraints *c = NULL;
    if (co_semver_constraints_parse(&c, sp_cstr(a[0].u.s)) < 0) {
        return tpl_fail(x, "%s", co_error_last());
    }
    co_semver v;
    if (co_semver_parse(&v, sp_cstr(a[1].u.s)) < 0) {
        co_semver_constraints_free(c);
        return tpl_fail(x, "%s", co_error_last());
    }
    *ret = tv_bool(co_semver_constraints_check(c, &v));
    co_semver_dispose(&v);
    co_semver_constraints_free(c);
    return 0;
}

/* ---- table -------------------------------------------------------------------------------- */

static const tv_type *const P_SSI[] = {&T_STRING, &T_STRING, &T_INT};
static const tv_type *const P_SSS[] = {&T_STRING, &T_STRING, &T_STRING};

static const tpl_func funcs[] = {
    TPL_FUNC("base", fn_base, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("clean", fn_clean, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("dir", fn_dir, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("env", fn_env, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("expandenv", fn_expandenv, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("ext", fn_ext, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("fail", fn_fail, SP_S, 1, false, true, &T_STRING),
    TPL_FUNC("fromJson", fn_from_json, SP_S, 1, false, false, &T_IFACE),
    TPL_FUNC("getHostByName", fn_get_host_by_name, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("hello", fn_hello, SP_S, 0, false, false, &T_STRING),
    TPL_FUNC("isAbs", fn_is_abs, SP_S, 1, false, false, &T_BOOL),
    TPL_FUNC("mustFromJson", fn_must_from_json, SP_S, 1, false, true, &T_IFACE),
    TPL_FUNC("mustRegexFind", fn_must_regex_find, SP_S, 2, false, true, &T_STRING),
    TPL_FUNC("mustRegexFindAll", fn_must_regex_find_all, P_SSI, 3, false, true, &T_LIST_STRING),
    TPL_FUNC("mustRegexMatch", fn_must_regex_match, SP_S, 2, false, true, &T_BOOL),
    TPL_FUNC("mustRegexReplaceAll", fn_must_regex_replace_all, P_SSS, 3, false, true, &T_STRING),
    TPL_FUNC("mustRegexReplaceAllLiteral",
             fn_must_regex_replace_all_literal,
             P_SSS,
             3,
             false,
             true,
             &T_STRING),
    TPL_FUNC("mustRegexSplit", fn_must_regex_split, P_SSI, 3, false, true, &T_LIST_STRING),
    TPL_FUNC("mustToJson", fn_must_to_json, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("mustToPrettyJson", fn_must_to_pretty_json, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("mustToRawJson", fn_to_raw_json, SP_A, 1, false, true, &T_STRING),
    TPL_FUNC("osBase", fn_base, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("osClean", fn_clean, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("osDir", fn_dir, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("osExt", fn_ext, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("osIsAbs", fn_is_abs, SP_S, 1, false, false, &T_BOOL),
    TPL_FUNC("randAlpha", fn_rand_alpha, SP_I, 1, false, false, &T_STRING),
    TPL_FUNC("randAlphaNum", fn_rand_alnum, SP_I, 1, false, false, &T_STRING),
    TPL_FUNC("randAscii", fn_rand_ascii, SP_I, 1, false, false, &T_STRING),
    TPL_FUNC("randBytes", fn_rand_bytes, SP_I, 1, false, true, &T_STRING),
    TPL_FUNC("randInt", fn_rand_int, SP_I, 2, false, false, &T_INT),
    TPL_FUNC("randNumeric", fn_rand_numeric, SP_I, 1, false, false, &T_STRING),
    TPL_FUNC("regexFind", fn_regex_find, SP_S, 2, false, false, &T_STRING),
    TPL_FUNC("regexFindAll", fn_regex_find_all, P_SSI, 3, false, false, &T_LIST_STRING),
    TPL_FUNC("regexMatch", fn_regex_match, SP_S, 2, false, false, &T_BOOL),
    TPL_FUNC("regexQuoteMeta", fn_regex_quote_meta, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("regexReplaceAll", fn_regex_replace_all, P_SSS, 3, false, false, &T_STRING),
    TPL_FUNC("regexReplaceAllLiteral",
             fn_regex_replace_all_literal,
             P_SSS,
             3,
             false,
             false,
             &T_STRING),
    TPL_FUNC("regexSplit", fn_regex_split, P_SSI, 3, false, false, &T_LIST_STRING),
    TPL_FUNC("semver", fn_semver, SP_S, 1, false, true, &T_SEMVER),
    TPL_FUNC("semverCompare", fn_semver_compare, SP_S, 2, false, true, &T_BOOL),
    TPL_FUNC("sha1sum", fn_sha1sum, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("shuffle", fn_shuffle, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("toJson", fn_to_json, SP_A, 1, false, false, &T_STRING),
    TPL_FUNC("toPrettyJson", fn_to_pretty_json, SP_A, 1, false, false, &T_STRING),
    TPL_FUNC("toRawJson", fn_to_raw_json, SP_A, 1, false, false, &T_STRING),
    TPL_FUNC("uuidv4", fn_uuidv4, SP_S, 0, false, false, &T_STRING),
};

void tpl_register_sprig_misc(co_template_funcs *f)
{
    tpl_register_all(f, funcs, CO_ARRAY_SIZE(funcs));
    (void)T_SEMVER;
}
