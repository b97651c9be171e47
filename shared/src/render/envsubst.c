/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Variable substitution with the exact behaviour of github.com/drone/envsubst v1.0.3, the
 * library the original operator runs over each object's YAML before applying it.
 *
 * drone/envsubst has an unusual hand-written scanner whose quirks are visible to users: escapes
 * ($$, \/ and \\) are removed from the input buffer as it is scanned, every token is scanned
 * with a mode (which of "text", "${", "}" and escapes are recognised) and an acceptance rule,
 * a function argument is exactly one token (text or one nested ${...}), and "${v:" looks one
 * rune ahead with a peek whose width is then used to step back. To reproduce its output for
 * every input rather than only for the documented forms, this file keeps the same scanning
 * primitives (read, unread, peek, skip) and the same grammar, and evaluates each ${...} as soon
 * as it has been parsed (drone parses everything first; the result is the same because any
 * error discards the output).
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include "co/util/utf8.h"
#include "co/util/strconv.h"
#include "co/render/envsubst.h"

#include <locale.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include <pcre2.h>

#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/util/strmap.h"

/* ---- variables --------------------------------------------------------------------------- */

typedef struct var {
    char *name;
    char *value;
    size_t len;
} var;

struct co_envsubst_vars {
    var *items;
    size_t n, cap;
    co_strmap index; /* name -> item index + 1 */
};

co_envsubst_vars *co_envsubst_vars_new(void)
{
    co_envsubst_vars *vars = co_xcalloc(1, sizeof(*vars));
    vars->index = (co_strmap)CO_STRMAP_INIT;
    return vars;
}

int co_envsubst_vars_set(co_envsubst_vars *vars, const char *name, const char *value, size_t len)
{
    if (!name || !*name) {
        return co_error_set(CO_EINVALID, "variable name must not be empty");
    }
    void *at = NULL;
    if (co_strmap_find(&vars->index, name, &at)) {
        var *v = &vars->items[(uintptr_t)at - 1];
        free(v->value);
        v->value = co_xmemdup(value, len);
        v->len = len;
        return 0;
    }
    if (vars->n == vars->cap) {
        vars->cap = vars->cap ? vars->cap * 2 : 8;
        vars->items = co_xreallocarray(vars->items, vars->cap, sizeof(*vars->items));
    }
    vars->items[vars->n] = (var){co_xstrdup(name), co_xmemdup(value, len), len};
    co_strmap_put(&vars->index, name, (void *)(uintptr_t)++vars->n);
    return 0;
}

const char *co_envsubst_vars_get(const co_envsubst_vars *vars, const char *name, size_t *len_out)
{
    if (!vars) {
        return NULL;
    }
    void *found = NULL;
    if (!co_strmap_find(&vars->index, name, &found)) {
        return NULL;
    }
    const var *v = &vars->items[(uintptr_t)found - 1];
    if (len_out) {
        *len_out = v->len;
    }
    return v->value;
}

size_t co_envsubst_vars_count(const co_envsubst_vars *vars)
{
    return vars ? vars->n : 0;
}

void co_envsubst_vars_free(co_envsubst_vars *vars)
{
    if (!vars) {
        return;
    }
    for (size_t i = 0; i < vars->n; i++) {
        free(vars->items[i].name);
        free(vars->items[i].value);
    }
    free(vars->items);
    co_strmap_dispose(&vars->index);
    free(vars);
}

/* Unicode tables come from PCRE2 (letter and decimal-digit properties) and from glibc's
 * C.UTF-8 locale (simple case mapping), both set up once and then only read. */
static pthread_once_t unicode_once = PTHREAD_ONCE_INIT;
static pcre2_code *ident_re;
static locale_t utf8_locale;

static void unicode_setup(void)
{
    int err = 0;
    PCRE2_SIZE off = 0;
    ident_re = pcre2_compile((PCRE2_SPTR) "\\A[\\p{L}\\p{Nd}]\\z", PCRE2_ZERO_TERMINATED, PCRE2_UTF,
                             &err, &off, NULL);
    CO_ASSERT(ident_re != NULL);
    utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' */
static bool is_ident_rune(int32_t r)
{
    if (r < 0x80) {
        return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') ||
               r == '_';
    }
    pthread_once(&unicode_once, unicode_setup);
    char buf[4];
    size_t n = co_utf8_encode(buf, r);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    int rc = pcre2_match(ident_re, (PCRE2_SPTR)buf, n, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

static int32_t case_rune(int32_t r, bool upper)
{
    if (r < 0x80) {
        if (upper && r >= 'a' && r <= 'z') {
            return r - 32;
        }
        if (!upper && r >= 'A' && r <= 'Z') {
            return r + 32;
        }
        return r;
    }
    pthread_once(&unicode_once, unicode_setup);
    if (!utf8_locale) {
        return r;
    }
    return (int32_t)(upper ? towupper_l((wint_t)r, utf8_locale)
                           : towlower_l((wint_t)r, utf8_locale));
}

/* strings.ToUpper / ToLower: every rune mapped, invalid bytes become U+FFFD. With @p first
 * only the first rune is mapped and the rest copied (unicode.ToUpper on one rune). */
static int map_case(co_buf *out, const char *s, size_t len, bool upper, bool first)
{
    int error = 0;
    size_t i = 0;
    while (i < len && error == 0) {
        size_t w;
        int32_t r = co_utf8_decode_rune(s + i, len - i, &w);
        char enc[4];
        size_t n = co_utf8_encode(enc, case_rune(r, upper));
        error = co_buf_put(out, enc, n);
        i += w;
        if (first) {
            return error ? error : co_buf_put(out, s + i, len - i);
        }
    }
    return error;
}

/* ---- the scanner --------------------------------------------------------------------------- */

enum { M_IDENT = 1, M_LBRACK = 2, M_RBRACK = 4, M_ESCAPE = 8 };
typedef enum token { T_ILLEGAL, T_EOF, T_IDENT, T_LBRACK, T_RBRACK } token;
typedef bool (*accept_fn)(int32_t r, size_t i);

/* The input is read at pos; what has been read, less the escape characters removed, is kept
 * compacted before it at [0, out), so that removing an escape moves nothing but the characters
 * read after it (moving the rest of the input for each one made "$$"-heavy input quadratic).
 * A token is [start, out). */
typedef struct scanner {
    char *buf;
    size_t len, pos, out, start, width;
    unsigned mode;
    accept_fn accept;
    const co_envsubst_vars *vars;
    unsigned flags;
    size_t depth;
} scanner;

#define EOF_RUNE (-1)

static int32_t sc_read(scanner *s)
{
    if (s->pos >= s->len) {
        s->width = 0;
        return EOF_RUNE;
    }
    int32_t r = co_utf8_decode_rune(s->buf + s->pos, s->len - s->pos, &s->width);
    if (s->out != s->pos) {
        memmove(s->buf + s->out, s->buf + s->pos, s->width);
    }
    s->pos += s->width;
    s->out += s->width;
    return r;
}

static void sc_unread(scanner *s)
{
    s->pos -= s->width;
    s->out -= s->width;
    /* the copy may have overwritten what is read again */
    if (s->out != s->pos) {
        memmove(s->buf + s->pos, s->buf + s->out, s->width);
    }
}

static int32_t sc_peek(scanner *s)
{
    int32_t r = sc_read(s);
    sc_unread(s);
    return r;
}

/* Drops the escape character just read: the byte after it ('$', '/' or '\\', which the caller
 * has peeked at) takes its place and is not scanned again, as when drone deletes the escape
 * from its buffer. */
static void sc_skip(scanner *s)
{
    s->buf[s->out - 1] = s->buf[s->pos];
    s->pos++;
}

static bool scan_lbrack(scanner *s, int32_t r)
{
    if (!(s->mode & M_LBRACK) || r != '$') {
        return false;
    }
    if (sc_read(s) == '{') {
        return true;
    }
    sc_unread(s);
    return false;
}

static bool scan_escaped(scanner *s, int32_t r)
{
    if (!(s->mode & M_ESCAPE)) {
        return false;
    }
    if (r == '$' && sc_peek(s) == '$') {
        return true;
    }
    if (r != '\\') {
        return false;
    }
    int32_t next = sc_peek(s);
    return next == '/' || next == '\\';
}

static bool scan_ident(scanner *s, int32_t r)
{
    if (!(s->mode & M_IDENT)) {
        return false;
    }
    if (scan_escaped(s, r)) {
        sc_skip(s);
    } else if (!s->accept(r, s->out - s->start)) {
        return false;
    }
    for (;;) {
        r = sc_read(s);
        if (r == EOF_RUNE) {
            sc_unread(s);
            break;
        }
        if (scan_lbrack(s, r)) {
            sc_unread(s);
            sc_unread(s);
            break;
        }
        if (scan_escaped(s, r)) {
            sc_skip(s);
            continue;
        }
        if (!s->accept(r, s->out - s->start)) {
            sc_unread(s);
            break;
        }
    }
    return true;
}

static token sc_scan(scanner *s)
{
    s->start = s->out;
    int32_t r = sc_read(s);
    if (r == EOF_RUNE) {
        return T_EOF;
    }
    if (scan_lbrack(s, r)) {
        return T_LBRACK;
    }
    if ((s->mode & M_RBRACK) && r == '}') {
        return T_RBRACK;
    }
    if (scan_ident(s, r)) {
        return T_IDENT;
    }
    return T_ILLEGAL;
}

static bool accept_any(int32_t r, size_t i)
{
    (void)r, (void)i;
    return true;
}
static bool accept_ident(int32_t r, size_t i)
{
    (void)i;
    return is_ident_rune(r);
}
static bool accept_colon(int32_t r, size_t i)
{
    (void)i;
    return r == ':';
}
static bool accept_one_hash(int32_t r, size_t i)
{
    return r == '#' && i == 1;
}
static bool accept_not_closing(int32_t r, size_t i)
{
    (void)i;
    return r != '}';
}
static bool accept_hash_func(int32_t r, size_t i)
{
    return r == '#' && i < 3;
}
static bool accept_percent_func(int32_t r, size_t i)
{
    return r == '%' && i < 3;
}
static bool accept_default_func(int32_t r, size_t i)
{
    return (i == 1 && r == ':') || (i == 2 && (r == '=' || r == '-' || r == '?' || r == '+'));
}
static bool accept_replace_func(int32_t r, size_t i)
{
    return (i == 1 && r == '/') || (i == 2 && (r == '/' || r == '#' || r == '%'));
}
static bool accept_one_equal(int32_t r, size_t i)
{
    return i == 1 && r == '=';
}
static bool accept_one_colon(int32_t r, size_t i)
{
    return i == 1 && r == ':';
}
static bool reject_colon_close(int32_t r, size_t i)
{
    (void)i;
    return r != ':' && r != '}';
}
static bool accept_slash(int32_t r, size_t i)
{
    (void)i;
    return r == '/';
}
static bool accept_not_slash(int32_t r, size_t i)
{
    (void)i;
    return r != '/';
}
static bool accept_casing_func(int32_t r, size_t i)
{
    return (r == ',' || r == '^') && i < 3;
}

/* ---- errors -------------------------------------------------------------------------------- */

static int bad(const scanner *s, const char *what)
{
    return co_error_set(CO_EINVALID, "%s (near byte %zu)", what, s->start);
}

#define ERR_BAD     "bad substitution"
#define ERR_BRACE   "missing closing brace"
#define ERR_NAME    "unable to parse variable name"
#define ERR_FUNC    "unable to parse substitution within function"
#define ERR_DEFAULT "unable to parse default function"

/* ---- the functions ------------------------------------------------------------------------- */

typedef struct args {
    co_buf v[8];
    size_t n;
    co_buf *more; /* beyond 8, for long default lists */
    size_t more_n;
} args;

static co_buf *arg_new(args *a)
{
    if (a->n < 8) {
        co_buf_init(&a->v[a->n], CO_MAX_ENVSUBST_OUTPUT);
        return &a->v[a->n++];
    }
    a->more = co_xreallocarray(a->more, a->more_n + 1, sizeof(*a->more));
    co_buf_init(&a->more[a->more_n], CO_MAX_ENVSUBST_OUTPUT);
    return &a->more[a->more_n++];
}

static co_buf *arg_at(args *a, size_t i)
{
    return i < 8 ? &a->v[i] : &a->more[i - 8];
}

static size_t arg_count(const args *a)
{
    return a->n + a->more_n;
}

static void args_dispose(args *a)
{
    for (size_t i = 0; i < a->n; i++) {
        co_buf_dispose(&a->v[i]);
    }
    for (size_t i = 0; i < a->more_n; i++) {
        co_buf_dispose(&a->more[i]);
    }
    free(a->more);
}

static int substr(co_buf *out, const scanner *sc, const char *s, size_t len, args *a)
{
    int64_t pos, length;
    if (co_strconv_parse_int(&pos, co_buf_cstr(arg_at(a, 0)), arg_at(a, 0)->len, 10, 0) != 0) {
        return co_buf_put(out, s, len);
    }
    if (pos < 0) {
        pos += (long long)len;
        if (pos < 0) {
            pos = 0;
        }
    }
    if (arg_count(a) == 1) {
        return pos < (long long)len ? co_buf_put(out, s + pos, len - (size_t)pos) : 0;
    }
    if (co_strconv_parse_int(&length, co_buf_cstr(arg_at(a, 1)), arg_at(a, 1)->len, 10, 0) != 0) {
        return co_buf_put(out, s, len);
    }
    if (length < 0 || length > (long long)CO_MAX_ENVSUBST_OUTPUT) {
        return bad(sc, "substring length out of range");
    }
    if (pos + length >= (long long)len) {
        return pos < (long long)len ? co_buf_put(out, s + pos, len - (size_t)pos) : 0;
    }
    return co_buf_put(out, s + pos, (size_t)length);
}

/* strings.Replace(s, old, new, n) with n = 1 or all (-1), including the empty-old case. */
static int replace(co_buf *out,
                   const char *s,
                   size_t len,
                   const co_buf *old,
                   const char *nw,
                   size_t nw_len,
                   bool all)
{
    int error = 0;
    size_t i = 0, done = 0;
    if (old->len == 0) {
        while (error == 0) {
            if ((error = co_buf_put(out, nw, nw_len)) < 0 || i >= len) {
                break;
            }
            done++;
            size_t w;
            co_utf8_decode_rune(s + i, len - i, &w);
            error = co_buf_put(out, s + i, w);
            i += w;
            if (!all) {
                error = error ? error : co_buf_put(out, s + i, len - i);
                return error;
            }
        }
        return error;
    }
    while (i < len) {
        const char *hit = (all || done == 0) ? memmem(s + i, len - i, old->ptr, old->len) : NULL;
        if (!hit) {
            break;
        }
        size_t at = (size_t)(hit - s);
        if ((error = co_buf_put(out, s + i, at - i)) < 0 ||
            (error = co_buf_put(out, nw, nw_len)) < 0) {
            return error;
        }
        i = at + old->len;
        done++;
    }
    return co_buf_put(out, s + i, len - i);
}

/* []rune(s) reversed, as drone reverses strings and patterns for the suffix forms. */
static char *reverse_runes(const char *s, size_t len, size_t *out_len)
{
    char *out = co_xmalloc(len * 3 + 1);
    size_t o = len * 3, i = 0;
    while (i < len) {
        size_t w;
        int32_t r = co_utf8_decode_rune(s + i, len - i, &w);
        char enc[4];
        size_t n = co_utf8_encode(enc, r);
        o -= n;
        memcpy(out + o, enc, n);
        i += w;
    }
    *out_len = len * 3 - o;
    memmove(out, out + o, *out_len);
    out[*out_len] = '\0';
    return out;
}

/* drone's copy of Go's path.Match, in which '*' also matches '/'. Returns 1 on a match, 0 on
 * none, -1 for a malformed pattern. */
static int get_esc(const char **chunk, size_t *clen, int32_t *r)
{
    if (*clen == 0 || **chunk == '-' || **chunk == ']') {
        return -1;
    }
    if (**chunk == '\\') {
        (*chunk)++, (*clen)--;
        if (*clen == 0) {
            return -1;
        }
    }
    size_t w;
    *r = co_utf8_decode_rune(*chunk, *clen, &w);
    if (*r == CO_UTF8_RUNE_ERROR && w == 1) {
        return -1;
    }
    *chunk += w;
    *clen -= w;
    return *clen == 0 ? -1 : 0;
}

/* Matches @p chunk against the start of @p s; on success *rest is what remains of s. */
static int match_chunk(const char *chunk,
                       size_t clen,
                       const char *s,
                       size_t slen,
                       const char **rest,
                       size_t *rest_len)
{
    while (clen > 0) {
        if (slen == 0) {
            return 0;
        }
        if (chunk[0] == '[') {
            size_t w;
            int32_t r = co_utf8_decode_rune(s, slen, &w);
            s += w, slen -= w;
            chunk++, clen--;
            bool negated = false;
            if (clen > 0 && chunk[0] == '^') {
                negated = true;
                chunk++, clen--;
            }
            bool match = false;
            size_t nrange = 0;
            for (;;) {
                if (clen > 0 && chunk[0] == ']' && nrange > 0) {
                    chunk++, clen--;
                    break;
                }
                int32_t lo, hi;
                if (get_esc(&chunk, &clen, &lo) < 0) {
                    return -1;
                }
                hi = lo;
                if (chunk[0] == '-') {
                    chunk++, clen--;
                    if (get_esc(&chunk, &clen, &hi) < 0) {
                        return -1;
                    }
                }
                if (lo <= r && r <= hi) {
                    match = true;
                }
                nrange++;
            }
            if (match == negated) {
                return 0;
            }
        } else if (chunk[0] == '?') {
            size_t w;
            co_utf8_decode_rune(s, slen, &w);
            s += w, slen -= w;
            chunk++, clen--;
        } else {
            if (chunk[0] == '\\') {
                chunk++, clen--;
                if (clen == 0) {
                    return -1;
                }
            }
            if (chunk[0] != s[0]) {
                return 0;
            }
            s++, slen--;
            chunk++, clen--;
        }
    }
    *rest = s;
    *rest_len = slen;
    return 1;
}

static int path_match(const char *pattern, size_t plen, const char *name, size_t nlen)
{
    while (plen > 0) {
        bool star = false;
        while (plen > 0 && pattern[0] == '*') {
            pattern++, plen--;
            star = true;
        }
        bool inrange = false;
        size_t i;
        for (i = 0; i < plen; i++) {
            if (pattern[i] == '\\') {
                if (i + 1 < plen) {
                    i++;
                }
            } else if (pattern[i] == '[') {
                inrange = true;
            } else if (pattern[i] == ']') {
                inrange = false;
            } else if (pattern[i] == '*' && !inrange) {
                break;
            }
        }
        const char *chunk = pattern;
        size_t clen = i;
        pattern += i, plen -= i;
        if (star && clen == 0) {
            return 1;
        }
        const char *t;
        size_t tlen;
        int ok = match_chunk(chunk, clen, name, nlen, &t, &tlen);
        if (ok == 1 && (tlen == 0 || plen > 0)) {
            name = t, nlen = tlen;
            continue;
        }
        if (ok < 0) {
            return -1;
        }
        bool advanced = false;
        if (star) {
            for (size_t k = 0; k < nlen; k++) {
                ok = match_chunk(chunk, clen, name + k + 1, nlen - k - 1, &t, &tlen);
                if (ok == 1) {
                    if (plen == 0 && tlen > 0) {
                        continue;
                    }
                    name = t, nlen = tlen;
                    advanced = true;
                    break;
                }
                if (ok < 0) {
                    return -1;
                }
            }
        }
        if (!advanced) {
            return 0;
        }
    }
    return nlen == 0;
}

/* The prefix forms on (s, pattern); the suffix forms call this on reversed strings. */
static int
trim_prefix(co_buf *out, const char *s, size_t len, const char *pat, size_t plen, bool longest)
{
    size_t cut = 0;
    for (size_t i = 0; i < len; i++) {
        /* a match per prefix: quadratic in the value (as drone's), so it counts against the
         * render's CPU time */
        int rc = co_budget_tick();
        if (rc < 0) {
            return rc;
        }
        int m = path_match(pat, plen, s, len - i);
        if (m < 0) {
            return co_buf_put(out, s, len);
        }
        if (m == 1) {
            cut = len - i;
            if (longest) {
                break;
            }
        }
    }
    return co_buf_put(out, s + cut, len - cut);
}

static int
trim(co_buf *out, const char *s, size_t len, const co_buf *pat, bool suffix, bool longest)
{
    if (!suffix) {
        return trim_prefix(out, s, len, pat->ptr ? pat->ptr : "", pat->len, longest);
    }
    size_t rlen, plen, tlen;
    char *r = reverse_runes(s, len, &rlen);
    char *p = reverse_runes(pat->ptr ? pat->ptr : "", pat->len, &plen);
    co_buf tmp = CO_BUF_INIT(CO_MAX_ENVSUBST_OUTPUT);
    int error = trim_prefix(&tmp, r, rlen, p, plen, longest);
    if (error == 0) {
        char *back = reverse_runes(tmp.ptr ? tmp.ptr : "", tmp.len, &tlen);
        error = co_buf_put(out, back, tlen);
        free(back);
    }
    co_buf_dispose(&tmp);
    free(r);
    free(p);
    return error;
}

static bool name_is(const char *fname, const char *want)
{
    return strcmp(fname, want) == 0;
}

/* Applies function @p fname of variable @p param, as drone's lookupFunc dispatches. */
static int apply(co_buf *out, scanner *sc, const char *param, const char *fname, args *a)
{
    size_t len = 0;
    const char *v = co_envsubst_vars_get(sc->vars, param, &len);
    size_t nargs = arg_count(a);
    bool is_default = name_is(fname, "=") || name_is(fname, ":=") || name_is(fname, ":-") ||
                      name_is(fname, ":?") || name_is(fname, ":+");
    if (!v) {
        if ((sc->flags & CO_ENVSUBST_STRICT) && !is_default) {
            return co_error_set(CO_EINVALID, "variable \"%s\" is not defined", param);
        }
        v = "";
        len = 0;
    }
    if (name_is(fname, ",") || name_is(fname, "^")) {
        return map_case(out, v, len, fname[0] == '^', true);
    }
    if (name_is(fname, ",,") || name_is(fname, "^^")) {
        return map_case(out, v, len, fname[0] == '^', false);
    }
    if (name_is(fname, "#") && nargs == 0) {
        return co_buf_printf(out, "%zu", len);
    }
    if (name_is(fname, "#") || name_is(fname, "##") || name_is(fname, "%") ||
        name_is(fname, "%%")) {
        if (nargs == 0) {
            return co_buf_put(out, v, len);
        }
        return trim(out, v, len, arg_at(a, 0), fname[0] == '%', fname[1] != '\0');
    }
    if (name_is(fname, ":")) {
        return nargs ? substr(out, sc, v, len, a) : co_buf_put(out, v, len);
    }
    if (name_is(fname, "/#") || name_is(fname, "/%")) {
        const co_buf *old = nargs == 2 ? arg_at(a, 0) : NULL;
        const char *o = old && old->ptr ? old->ptr : "";
        bool prefix = fname[1] == '#';
        bool hit =
            old && old->len <= len && memcmp(prefix ? v : v + len - old->len, o, old->len) == 0;
        if (!hit) {
            return co_buf_put(out, v, len);
        }
        const co_buf *nw = arg_at(a, 1);
        if (prefix) {
            return replace(out, v, len, old, nw->ptr ? nw->ptr : "", nw->len, false);
        }
        int error = co_buf_put(out, v, len - old->len);
        return error ? error : co_buf_put(out, nw->ptr ? nw->ptr : "", nw->len);
    }
    if (name_is(fname, "/") || name_is(fname, "//")) {
        if (nargs == 0) {
            return co_buf_put(out, v, len);
        }
        const co_buf *nw = nargs > 1 ? arg_at(a, 1) : NULL;
        return replace(out, v, len, arg_at(a, 0), nw && nw->ptr ? nw->ptr : "", nw ? nw->len : 0,
                       fname[1] == '/');
    }
    /* ${v}, the default forms and any other operator spelling: default when empty. */
    if (len == 0 && nargs > 0) {
        int error = 0;
        for (size_t i = 0; i < nargs && error == 0; i++) {
            co_buf *b = arg_at(a, i);
            error = co_buf_put(out, b->ptr ? b->ptr : "", b->len);
        }
        return error;
    }
    return co_buf_put(out, v, len);
}

/* ---- the grammar --------------------------------------------------------------------------- */

static int parse_func(scanner *s, co_buf *out);

static int consume_rbrack(scanner *s)
{
    s->mode = M_RBRACK;
    return sc_scan(s) == T_RBRACK ? 0 : bad(s, ERR_BAD);
}

/* One function argument: one text token or one nested ${...}, appended to @p arg. */
static int parse_param(scanner *s, accept_fn accept, unsigned mode, co_buf *arg)
{
    s->accept = accept;
    s->mode = mode | M_LBRACK;
    switch (sc_scan(s)) {
    case T_LBRACK:
        return parse_func(s, arg);
    case T_IDENT:
    case T_RBRACK:
        return co_buf_put(arg, s->buf + s->start, s->out - s->start);
    default:
        return bad(s, ERR_FUNC);
    }
}

/* Scans the operator token with @p accept into @p fname (not kept when NULL). */
static int scan_operator(scanner *s, accept_fn accept, char *fname, size_t size, const char *err)
{
    s->accept = accept;
    s->mode = M_IDENT;
    if (sc_scan(s) != T_IDENT) {
        return bad(s, err);
    }
    if (!fname) {
        return 0;
    }
    if (s->out - s->start >= size) {
        return bad(s, err);
    }
    memcpy(fname, s->buf + s->start, s->out - s->start);
    fname[s->out - s->start] = '\0';
    return 0;
}

static int parse_body(scanner *s, co_buf *out, const char *name)
{
    char fname[16] = "";
    args a = {0};
    int error = 0;
    int32_t next = sc_peek(s);
    if (next == ':') {
        sc_read(s);
        int32_t r = sc_peek(s);
        sc_unread(s);
        if (r == '=' || r == '-' || r == '?' || r == '+') {
            goto default_form;
        }
        /* ${v:pos} and ${v:pos:len} */
        if ((error = scan_operator(s, accept_one_colon, fname, sizeof(fname), ERR_BAD)) < 0 ||
            (error = parse_param(s, reject_colon_close, M_IDENT, arg_new(&a))) < 0) {
            goto done;
        }
        s->accept = accept_colon;
        s->mode = M_IDENT | M_RBRACK;
        token t = sc_scan(s);
        if (t == T_IDENT) {
            if ((error = parse_param(s, accept_not_closing, M_IDENT, arg_new(&a))) < 0 ||
                (error = consume_rbrack(s)) < 0) {
                goto done;
            }
        } else if (t != T_RBRACK) {
            error = bad(s, ERR_BAD);
            goto done;
        }
        error = apply(out, s, name, fname, &a);
        goto done;
    }
    if (next == '=') {
    default_form:
        if ((error = scan_operator(s, sc_peek(s) == '=' ? accept_one_equal : accept_default_func,
                                   fname, sizeof(fname), ERR_DEFAULT)) < 0) {
            goto done;
        }
        while (sc_peek(s) != '}') {
            if ((error = parse_param(s, accept_not_closing, M_IDENT, arg_new(&a))) < 0) {
                goto done;
            }
        }
        if ((error = consume_rbrack(s)) == 0) {
            error = apply(out, s, name, fname, &a);
        }
        goto done;
    }
    if (next == ',' || next == '^') {
        if ((error = scan_operator(s, accept_casing_func, fname, sizeof(fname), ERR_BAD)) == 0 &&
            (error = consume_rbrack(s)) == 0) {
            error = apply(out, s, name, fname, &a);
        }
        goto done;
    }
    if (next == '/') {
        if ((error = scan_operator(s, accept_replace_func, fname, sizeof(fname), ERR_BAD)) < 0 ||
            (error = parse_param(s, accept_not_slash, M_IDENT | M_ESCAPE, arg_new(&a))) < 0) {
            goto done;
        }
        if ((error = scan_operator(s, accept_slash, NULL, 0, ERR_BAD)) < 0) {
            goto done;
        }
        if (sc_peek(s) != '}' &&
            (error = parse_param(s, accept_not_closing, M_IDENT | M_ESCAPE, arg_new(&a))) < 0) {
            goto done;
        }
        if ((error = consume_rbrack(s)) == 0) {
            error = apply(out, s, name, fname, &a);
        }
        goto done;
    }
    if (next == '#' || next == '%') {
        if ((error = scan_operator(s, next == '#' ? accept_hash_func : accept_percent_func, fname,
                                   sizeof(fname), ERR_BAD)) < 0 ||
            (error = parse_param(s, accept_not_closing, M_IDENT, arg_new(&a))) < 0 ||
            (error = consume_rbrack(s)) < 0) {
            goto done;
        }
        error = apply(out, s, name, fname, &a);
        goto done;
    }
    s->accept = accept_ident;
    s->mode = M_RBRACK;
    if (sc_scan(s) != T_RBRACK) {
        error = bad(s, ERR_BRACE);
        goto done;
    }
    error = apply(out, s, name, "", &a);
done:
    args_dispose(&a);
    return error;
}

/* After "${": one expansion, appended to @p out. */
static int parse_func(scanner *s, co_buf *out)
{
    int error;
    if (++s->depth > CO_MAX_ENVSUBST_NESTING) {
        return co_error_set(CO_EINVALID, "expressions nested deeper than %d levels",
                            CO_MAX_ENVSUBST_NESTING);
    }
    if (sc_peek(s) == '#') {
        char fname[16] = "";
        if ((error = scan_operator(s, accept_one_hash, fname, sizeof(fname), ERR_BAD)) == 0) {
            s->accept = accept_ident;
            s->mode = M_IDENT;
            if (sc_scan(s) != T_IDENT) {
                error = bad(s, ERR_BAD);
            } else {
                char *name = co_xstrndup(s->buf + s->start, s->out - s->start);
                args a = {0};
                error = consume_rbrack(s);
                if (error == 0) {
                    error = apply(out, s, name, fname, &a);
                }
                free(name);
            }
        }
        s->depth--;
        return error;
    }
    s->accept = accept_ident;
    s->mode = M_IDENT;
    if (sc_scan(s) != T_IDENT) {
        s->depth--;
        return bad(s, ERR_NAME);
    }
    char *name = co_xstrndup(s->buf + s->start, s->out - s->start);
    error = parse_body(s, out, name);
    free(name);
    s->depth--;
    return error;
}

int co_envsubst_eval(co_buf *out,
                     const char *input,
                     size_t len,
                     const co_envsubst_vars *vars,
                     unsigned flags)
{
    if (memchr(input, '\0', len)) {
        return co_error_set(CO_EINVALID, "input contains a NUL byte");
    }
    size_t max = out->max < CO_MAX_ENVSUBST_OUTPUT ? out->max - out->len : CO_MAX_ENVSUBST_OUTPUT;
    co_buf tmp = CO_BUF_INIT(max);
    scanner s = {.buf = co_xmemdup(input, len), .len = len, .vars = vars, .flags = flags};
    int error = 0;
    for (;;) {
        if ((error = co_budget_tick()) < 0) {
            break;
        }
        s.accept = accept_any;
        s.mode = M_IDENT | M_LBRACK | M_ESCAPE;
        token t = sc_scan(&s);
        if (t == T_EOF) {
            break;
        }
        if (t == T_IDENT) {
            error = co_buf_put(&tmp, s.buf + s.start, s.out - s.start);
        } else if (t == T_LBRACK) {
            error = parse_func(&s, &tmp);
        } else {
            error = bad(&s, ERR_BAD);
        }
        if (error < 0) {
            break;
        }
    }
    if (error == CO_ETOOBIG && co_budget_status() == 0) {
        co_error_set(CO_ETOOBIG, "substitution output exceeds %zu bytes", max);
    }
    if (error == 0 && (error = co_buf_put(out, tmp.ptr ? tmp.ptr : "", tmp.len)) < 0) {
        co_error_set(error, "substitution output exceeds %zu bytes", out->max);
    }
    co_buf_dispose(&tmp);
    free(s.buf);
    return error;
}
