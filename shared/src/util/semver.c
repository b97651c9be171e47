/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Semantic versions and constraints, following Masterminds/semver v3.4 rule for rule: the
 * lenient version grammar, the wildcard ("dirty") handling of constraint versions, and the
 * prerelease gate per OR group. The constraint grammar is defined by that library as four
 * regular expressions; their quirks (a `|` inside the version character class, an empty
 * alternative among the operators) decide which inputs are accepted, so the same expressions
 * are compiled here with pcre2, which agrees with Go's leftmost-first matching on them.
 * Versions themselves are scanned by hand: their grammar is deterministic.
 */
#include "co/util/strconv.h"
#include "co/util/semver.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"

/* ------------------------------------------------------------------------------------------ */
/* Versions                                                                                   */
/* ------------------------------------------------------------------------------------------ */

static const char ERR_INVALID[] = "invalid semantic version";

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_ident_char(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

static bool only_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(s[i])) {
            return false;
        }
    }
    return true;
}

/* strconv.ParseUint(s, 10, 64) with Go's error text. */
static int parse_u64(uint64_t *out, const char *s, size_t n, const char *prefix)
{
    int rc = co_strconv_parse_uint(out, s, n, 10, 0);
    if (rc < 0) {
        return co_error_set(CO_EINVALID, "%sstrconv.ParseUint: parsing \"%.*s\": %s", prefix,
                            (int)n, s, rc == CO_ETOOBIG ? "value out of range" : "invalid syntax");
    }
    return 0;
}

/* Scans IDENT(\.IDENT)* at s[*i]; returns false when it does not start with an ident. */
static bool scan_ident_list(const char *s, size_t *i)
{
    size_t j = *i;
    if (!is_ident_char(s[j])) {
        return false;
    }
    for (;;) {
        while (is_ident_char(s[j])) {
            j++;
        }
        if (s[j] == '.' && is_ident_char(s[j + 1])) {
            j++;
            continue;
        }
        break;
    }
    *i = j;
    return true;
}

static int validate_prerelease(const char *p, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '.') {
            continue;
        }
        size_t len = i - start;
        const char *part = p + start;
        if (len == 0) {
            return co_error_set(CO_EINVALID, "invalid prerelease string");
        }
        if (only_digits(part, len)) {
            if (len > 1 && part[0] == '0') {
                return co_error_set(CO_EINVALID, "version segment starts with 0");
            }
        } else {
            for (size_t k = 0; k < len; k++) {
                if (!is_ident_char(part[k])) {
                    return co_error_set(CO_EINVALID, "invalid prerelease string");
                }
            }
        }
        start = i + 1;
    }
    return 0;
}

static int validate_metadata(const char *p, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '.') {
            continue;
        }
        if (i == start) {
            return co_error_set(CO_EINVALID, "invalid metadata string");
        }
        for (size_t k = start; k < i; k++) {
            if (!is_ident_char(p[k])) {
                return co_error_set(CO_EINVALID, "invalid metadata string");
            }
        }
        start = i + 1;
    }
    return 0;
}

int co_semver_parse(co_semver *out, const char *text)
{
    /* ^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-IDENTS)?(\+IDENTS)?$ */
    const char *s = text;
    size_t i = 0;
    size_t seg[3][2] = {{0, 0}, {0, 0}, {0, 0}};
    int nseg = 0;
    size_t pre_at = 0;
    size_t pre_len = 0;
    size_t meta_at = 0;
    size_t meta_len = 0;
    if (s[i] == 'v') {
        i++;
    }
    if (!is_digit(s[i])) {
        return co_error_set(CO_EINVALID, ERR_INVALID);
    }
    seg[0][0] = i;
    while (is_digit(s[i])) {
        i++;
    }
    seg[0][1] = i - seg[0][0];
    nseg = 1;
    while (nseg < 3 && s[i] == '.' && is_digit(s[i + 1])) {
        i++;
        seg[nseg][0] = i;
        while (is_digit(s[i])) {
            i++;
        }
        seg[nseg][1] = i - seg[nseg][0];
        nseg++;
    }
    if (s[i] == '-') {
        size_t j = i + 1;
        if (scan_ident_list(s, &j)) {
            pre_at = i + 1;
            pre_len = j - pre_at;
            i = j;
        }
    }
    if (s[i] == '+') {
        size_t j = i + 1;
        if (scan_ident_list(s, &j)) {
            meta_at = i + 1;
            meta_len = j - meta_at;
            i = j;
        }
    }
    if (s[i] != '\0') {
        return co_error_set(CO_EINVALID, ERR_INVALID);
    }
    uint64_t parts[3] = {0, 0, 0};
    for (int k = 0; k < nseg; k++) {
        if (parse_u64(&parts[k], s + seg[k][0], seg[k][1], "error parsing version segment: ") < 0) {
            return CO_EINVALID;
        }
    }
    if (pre_len && validate_prerelease(s + pre_at, pre_len) < 0) {
        return CO_EINVALID;
    }
    if (meta_len && validate_metadata(s + meta_at, meta_len) < 0) {
        return CO_EINVALID;
    }
    out->major = parts[0];
    out->minor = parts[1];
    out->patch = parts[2];
    out->pre = co_xstrndup(s + pre_at, pre_len);
    out->metadata = co_xstrndup(s + meta_at, meta_len);
    out->original = co_xstrdup(text);
    return 0;
}

int co_semver_parse_strict(co_semver *out, const char *text)
{
    if (!*text) {
        return co_error_set(CO_EINVALID, "version string empty");
    }
    const char *d1 = strchr(text, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d2) {
        return co_error_set(CO_EINVALID, ERR_INVALID);
    }
    const char *third = d2 + 1;
    size_t third_len = strlen(third);
    const char *plus = strchr(third, '+');
    const char *meta = "";
    size_t meta_len = 0;
    if (plus) {
        meta = plus + 1;
        meta_len = strlen(meta);
        third_len = (size_t)(plus - third);
        if (validate_metadata(meta, meta_len) < 0) {
            return CO_EINVALID;
        }
    }
    const char *dash = memchr(third, '-', third_len);
    const char *pre = "";
    size_t pre_len = 0;
    if (dash) {
        pre = dash + 1;
        pre_len = third_len - (size_t)(pre - third);
        third_len = (size_t)(dash - third);
        if (validate_prerelease(pre, pre_len) < 0) {
            return CO_EINVALID;
        }
    }
    const char *ps[3] = {text, d1 + 1, third};
    size_t ns[3] = {(size_t)(d1 - text), (size_t)(d2 - d1 - 1), third_len};
    for (int k = 0; k < 3; k++) {
        if (!only_digits(ps[k], ns[k])) {
            return co_error_set(CO_EINVALID, "invalid characters in version");
        }
        if (ns[k] > 1 && ps[k][0] == '0') {
            return co_error_set(CO_EINVALID, "version segment starts with 0");
        }
    }
    uint64_t parts[3];
    for (int k = 0; k < 3; k++) {
        if (parse_u64(&parts[k], ps[k], ns[k], "") < 0) {
            return CO_EINVALID;
        }
    }
    out->major = parts[0];
    out->minor = parts[1];
    out->patch = parts[2];
    out->pre = co_xstrndup(pre, pre_len);
    out->metadata = co_xstrndup(meta, meta_len);
    out->original = co_xstrdup(text);
    return 0;
}

void co_semver_dispose(co_semver *v)
{
    if (!v) {
        return;
    }
    free(v->pre);
    free(v->metadata);
    free(v->original);
    memset(v, 0, sizeof(*v));
}

void co_semver_copy(co_semver *out, const co_semver *src)
{
    out->major = src->major;
    out->minor = src->minor;
    out->patch = src->patch;
    out->pre = co_xstrdup(src->pre ? src->pre : "");
    out->metadata = co_xstrdup(src->metadata ? src->metadata : "");
    out->original = co_xstrdup(src->original ? src->original : "");
}

char *co_semver_string(const co_semver *v)
{
    const char *pre = v->pre ? v->pre : "";
    const char *meta = v->metadata ? v->metadata : "";
    return co_xasprintf("%llu.%llu.%llu%s%s%s%s", (unsigned long long)v->major,
                        (unsigned long long)v->minor, (unsigned long long)v->patch, *pre ? "-" : "",
                        pre, *meta ? "+" : "", meta);
}

void co_semver_increment(co_semver *out, const co_semver *v, char part)
{
    co_semver n = {v->major, v->minor, v->patch, NULL, NULL, NULL};
    const char *pre = v->pre ? v->pre : "";
    switch (part) {
    case 'M':
        n.major++;
        n.minor = 0;
        n.patch = 0;
        break;
    case 'm':
        n.minor++;
        n.patch = 0;
        break;
    default:
        /* a prerelease is released by a patch bump; otherwise the patch grows */
        if (!*pre) {
            n.patch++;
        }
        break;
    }
    n.pre = co_xstrdup("");
    n.metadata = co_xstrdup("");
    char *s = co_semver_string(&n);
    bool vprefix = v->original && v->original[0] == 'v';
    n.original = co_xasprintf("%s%s", vprefix ? "v" : "", s);
    free(s);
    *out = n;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b ? 1 : 0;
}

/* One dot-separated prerelease part, as comparePrePart. */
static int compare_pre_part(const char *s, size_t sn, const char *o, size_t on)
{
    if (sn == on && memcmp(s, o, sn) == 0) {
        return 0;
    }
    if (sn == 0) {
        return -1;
    }
    if (on == 0) {
        return 1;
    }
    uint64_t si = 0;
    uint64_t oi = 0;
    co_error_clear();
    bool s_num = parse_u64(&si, s, sn, "") == 0;
    bool o_num = parse_u64(&oi, o, on, "") == 0;
    co_error_clear();
    if (!s_num && !o_num) {
        size_t n = sn < on ? sn : on;
        int c = memcmp(s, o, n);
        if (c > 0 || (c == 0 && sn > on)) {
            return 1;
        }
        return -1;
    }
    if (!o_num) {
        return -1;
    }
    if (!s_num) {
        return 1;
    }
    return si > oi ? 1 : -1;
}

static int compare_prerelease(const char *a, const char *b)
{
    for (;;) {
        const char *ae = strchr(a, '.');
        const char *be = strchr(b, '.');
        size_t an = ae ? (size_t)(ae - a) : strlen(a);
        size_t bn = be ? (size_t)(be - b) : strlen(b);
        int d = compare_pre_part(a, an, b, bn);
        if (d != 0) {
            return d;
        }
        if (!ae && !be) {
            return 0;
        }
        a = ae ? ae + 1 : a + an;
        b = be ? be + 1 : b + bn;
    }
}

int co_semver_compare(const co_semver *a, const co_semver *b)
{
    int d = cmp_u64(a->major, b->major);
    if (d == 0) {
        d = cmp_u64(a->minor, b->minor);
    }
    if (d == 0) {
        d = cmp_u64(a->patch, b->patch);
    }
    if (d != 0) {
        return d;
    }
    const char *pa = a->pre ? a->pre : "";
    const char *pb = b->pre ? b->pre : "";
    if (!*pa && !*pb) {
        return 0;
    }
    if (!*pa) {
        return 1;
    }
    if (!*pb) {
        return -1;
    }
    return compare_prerelease(pa, pb);
}

/* ------------------------------------------------------------------------------------------ */
/* Constraints                                                                                */
/* ------------------------------------------------------------------------------------------ */

enum op {
    OP_TILDE_OR_EQUAL,
    OP_NOT_EQUAL,
    OP_GREATER,
    OP_LESS,
    OP_GREATER_EQUAL,
    OP_LESS_EQUAL,
    OP_TILDE,
    OP_CARET,
};

typedef struct constraint {
    co_semver con;
    char *orig;     /* the version text as written */
    char *origfunc; /* the operator as written */
    enum op op;
    bool minor_dirty;
    bool patch_dirty;
    bool dirty;
} constraint;

typedef struct group {
    constraint *items;
    size_t n;
    bool contains_pre;
} group;

struct co_semver_constraints {
    group *groups;
    size_t n;
};

/* Go's \s is [\t\n\f\r ]; PCRE's would also take \v. */
#define WS  "[\\t\\n\\f\\r ]"
#define OPS "=||!=|>|<|>=|=>|<=|=<|~|~>|\\^"
#define CV                                                                                         \
    "v?([0-9|x|X|\\*]+)(\\.[0-9|x|X|\\*]+)?(\\.[0-9|x|X|\\*]+)?"                                   \
    "(-([0-9A-Za-z\\-]+(\\.[0-9A-Za-z\\-]+)*))?"                                                   \
    "(\\+([0-9A-Za-z\\-]+(\\.[0-9A-Za-z\\-]+)*))?"

enum { RX_CONSTRAINT, RX_RANGE, RX_FIND, RX_VALID, RX_COUNT };

static const char *const rx_source[RX_COUNT] = {
    "^" WS "*(" OPS ")" WS "*(" CV ")" WS "*$",
    WS "*(" CV ")" WS "+-" WS "+(" CV ")" WS "*",
    "(" OPS ")" WS "*(" CV ")",
    "^(" WS "*(" OPS ")" WS "*(" CV ")" WS "*)((?:" WS "+|," WS "*)(" OPS ")" WS "*(" CV ")" WS
    "*)*$",
};

static pcre2_code *rx[RX_COUNT];
static pcre2_match_context *rx_mctx;
static pthread_once_t rx_once = PTHREAD_ONCE_INIT;

static void rx_init(void)
{
    for (int i = 0; i < RX_COUNT; i++) {
        int err = 0;
        PCRE2_SIZE off = 0;
        rx[i] = pcre2_compile((PCRE2_SPTR)rx_source[i], PCRE2_ZERO_TERMINATED, PCRE2_DOLLAR_ENDONLY,
                              &err, &off, NULL);
        CO_ASSERT(rx[i] != NULL);
    }
    rx_mctx = pcre2_match_context_create(NULL);
    CO_ASSERT(rx_mctx != NULL);
    pcre2_set_match_limit(rx_mctx, 1000000);
}

/* Matches rx[which] against s[0..n) from offset start; fills ov (pairs) and returns the
 * number of pairs, 0 when there is no match. */
static int rx_match(int which, const char *s, size_t n, size_t start, size_t *ov, size_t maxpairs)
{
    pthread_once(&rx_once, rx_init);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(rx[which], NULL);
    CO_ASSERT(md != NULL);
    int rc = pcre2_match(rx[which], (PCRE2_SPTR)s, n, start, 0, md, rx_mctx);
    int pairs = 0;
    if (rc > 0) {
        PCRE2_SIZE *v = pcre2_get_ovector_pointer(md);
        uint32_t count = pcre2_get_ovector_count(md);
        for (size_t i = 0; i < maxpairs; i++) {
            if (i < count && i < (size_t)rc && v[2 * i] != PCRE2_UNSET) {
                ov[2 * i] = v[2 * i];
                ov[2 * i + 1] = v[2 * i + 1];
            } else {
                ov[2 * i] = SIZE_MAX;
                ov[2 * i + 1] = SIZE_MAX;
            }
        }
        pairs = (int)maxpairs;
    }
    pcre2_match_data_free(md);
    return pairs;
}

/* The text of group g ("" when unset), as a borrowed slice. */
static size_t grp(const size_t *ov, size_t g, const char *s, const char **at)
{
    if (ov[2 * g] == SIZE_MAX) {
        *at = s;
        return 0;
    }
    *at = s + ov[2 * g];
    return ov[2 * g + 1] - ov[2 * g];
}

static bool is_x(const char *s, size_t n)
{
    return n == 1 && (s[0] == 'x' || s[0] == 'X' || s[0] == '*');
}

/* rewriteRange: every "A - B" becomes ">= A, <= B ". */
static char *rewrite_range(const char *in)
{
    size_t n = strlen(in);
    char *o = co_xstrdup(in);
    size_t pos = 0;
    size_t ov[2 * 12];
    while (pos <= n && rx_match(RX_RANGE, in, n, pos, ov, 12) > 0) {
        const char *a;
        const char *b;
        size_t an = grp(ov, 1, in, &a);
        size_t bn = grp(ov, 11, in, &b);
        char *whole = co_xstrndup(in + ov[0], ov[1] - ov[0]);
        char *repl = co_xasprintf(">= %.*s, <= %.*s ", (int)an, a, (int)bn, b);
        char *hit = strstr(o, whole);
        if (hit) {
            size_t before = (size_t)(hit - o);
            char *next = co_xasprintf("%.*s%s%s", (int)before, o, repl, hit + strlen(whole));
            free(o);
            o = next;
        }
        free(whole);
        free(repl);
        /* matches never overlap; an empty match cannot happen (a version is non-empty) */
        pos = ov[1] > ov[0] ? ov[1] : ov[1] + 1;
    }
    return o;
}

static void constraint_dispose(constraint *c)
{
    co_semver_dispose(&c->con);
    free(c->orig);
    free(c->origfunc);
}

static enum op op_of(const char *s, size_t n)
{
    if (n == 0 || (n == 1 && s[0] == '=')) {
        return OP_TILDE_OR_EQUAL;
    }
    if (n == 2 && s[0] == '!') {
        return OP_NOT_EQUAL;
    }
    if (n == 1 && s[0] == '>') {
        return OP_GREATER;
    }
    if (n == 1 && s[0] == '<') {
        return OP_LESS;
    }
    if (n == 2 && (memcmp(s, ">=", 2) == 0 || memcmp(s, "=>", 2) == 0)) {
        return OP_GREATER_EQUAL;
    }
    if (n == 2 && (memcmp(s, "<=", 2) == 0 || memcmp(s, "=<", 2) == 0)) {
        return OP_LESS_EQUAL;
    }
    if (s[0] == '~') {
        return OP_TILDE;
    }
    return OP_CARET;
}

static int parse_constraint(constraint *out, const char *s, size_t n)
{
    memset(out, 0, sizeof(*out));
    if (n == 0) {
        CO_ASSERT(co_semver_parse_strict(&out->con, "0.0.0") == 0);
        out->orig = co_xstrdup("");
        out->origfunc = co_xstrdup("");
        out->dirty = true;
        return 0;
    }
    size_t ov[2 * 12];
    if (rx_match(RX_CONSTRAINT, s, n, 0, ov, 12) == 0) {
        return co_error_set(CO_EINVALID, "improper constraint: %.*s", (int)n, s);
    }
    const char *m1;
    const char *m2;
    const char *m3;
    const char *m4;
    const char *m5;
    const char *m6;
    size_t n1 = grp(ov, 1, s, &m1);
    size_t n2 = grp(ov, 2, s, &m2);
    size_t n3 = grp(ov, 3, s, &m3);
    size_t n4 = grp(ov, 4, s, &m4);
    size_t n5 = grp(ov, 5, s, &m5);
    size_t n6 = grp(ov, 6, s, &m6);
    char *ver;
    if (n3 == 0 || is_x(m3, n3)) {
        ver = co_xasprintf("0.0.0%.*s", (int)n6, m6);
        out->dirty = true;
    } else if (n4 == 0 || is_x(m4 + 1, n4 - 1)) {
        out->minor_dirty = true;
        out->dirty = true;
        ver = co_xasprintf("%.*s.0.0%.*s", (int)n3, m3, (int)n6, m6);
    } else if (n5 == 0 || is_x(m5 + 1, n5 - 1)) {
        out->dirty = true;
        out->patch_dirty = true;
        ver = co_xasprintf("%.*s%.*s.0%.*s", (int)n3, m3, (int)n4, m4, (int)n6, m6);
    } else {
        ver = co_xstrndup(m2, n2);
    }
    int rc = co_semver_parse(&out->con, ver);
    free(ver);
    if (rc < 0) {
        return co_error_set(CO_EINVALID, "constraint parser error");
    }
    out->orig = co_xstrndup(m2, n2);
    out->origfunc = co_xstrndup(m1, n1);
    out->op = op_of(m1, n1);
    return 0;
}

void co_semver_constraints_free(co_semver_constraints *c)
{
    if (!c) {
        return;
    }
    for (size_t i = 0; i < c->n; i++) {
        for (size_t j = 0; j < c->groups[i].n; j++) {
            constraint_dispose(&c->groups[i].items[j]);
        }
        free(c->groups[i].items);
    }
    free(c->groups);
    free(c);
}

static int parse_group(group *g, const char *v, size_t n)
{
    size_t ov[2 * 2];
    char *copy = co_xstrndup(v, n);
    if (rx_match(RX_VALID, copy, n, 0, ov, 1) == 0) {
        int rc = co_error_set(CO_EINVALID, "improper constraint: %s", copy);
        free(copy);
        return rc;
    }
    size_t pos = 0;
    size_t cap = 0;
    int rc = 0;
    while (pos <= n && rx_match(RX_FIND, copy, n, pos, ov, 1) > 0) {
        if (g->n == cap) {
            cap = cap ? cap * 2 : 4;
            g->items = co_xreallocarray(g->items, cap, sizeof(*g->items));
        }
        rc = parse_constraint(&g->items[g->n], copy + ov[0], ov[1] - ov[0]);
        if (rc < 0) {
            goto done;
        }
        if (g->items[g->n].con.pre[0]) {
            g->contains_pre = true;
        }
        g->n++;
        pos = ov[1] > ov[0] ? ov[1] : ov[1] + 1;
    }
    if (g->n == 0) {
        g->items = co_xcalloc(1, sizeof(*g->items));
        rc = parse_constraint(&g->items[0], copy, n);
        if (rc < 0) {
            goto done;
        }
        g->contains_pre = g->items[0].con.pre[0] != '\0';
        g->n = 1;
    }
done:
    free(copy);
    return rc;
}

int co_semver_constraints_parse(co_semver_constraints **out, const char *text)
{
    if (strlen(text) > CO_MAX_CONFIG_FILE) {
        return co_error_set(CO_ETOOBIG, "constraint is longer than %zu bytes", CO_MAX_CONFIG_FILE);
    }
    char *c = rewrite_range(text);
    co_semver_constraints *cs = co_xcalloc(1, sizeof(*cs));
    int rc = 0;
    size_t ngroups = 1;
    for (const char *p = strstr(c, "||"); p; p = strstr(p + 2, "||")) {
        ngroups++;
    }
    cs->groups = co_xcalloc(ngroups, sizeof(*cs->groups));
    const char *start = c;
    for (size_t k = 0; k < ngroups; k++) {
        const char *end = strstr(start, "||");
        size_t len = end ? (size_t)(end - start) : strlen(start);
        rc = parse_group(&cs->groups[k], start, len);
        cs->n = k + 1;
        if (rc < 0) {
            goto done;
        }
        start = end ? end + 2 : start + len;
    }
done:
    free(c);
    if (rc < 0) {
        co_semver_constraints_free(cs);
        return rc;
    }
    *out = cs;
    return 0;
}

/* ---- checks: each returns true or false and, when asked, why not ------------------------- */

typedef struct why {
    co_buf *buf; /* NULL: nobody wants the reasons */
} why;

CO_PRINTF(2, 3) static bool refuse(why *w, const char *fmt, ...)
{
    if (!w->buf) {
        return false;
    }
    /* an overflowing buffer is disposed by co_buf; the reasons are then simply dropped */
    if (w->buf->len && co_buf_puts(w->buf, "; ") < 0) {
        w->buf = NULL;
        return false;
    }
    va_list ap;
    va_start(ap, fmt);
    int rc = co_buf_vprintf(w->buf, fmt, ap);
    va_end(ap);
    if (rc < 0) {
        w->buf = NULL;
    }
    return false;
}

static bool check_tilde(const co_semver *v, const char *vs, const constraint *c, why *w)
{
    if (co_semver_compare(v, &c->con) < 0) {
        return refuse(w, "%s is less than %s", vs, c->orig);
    }
    if (c->con.major == 0 && c->con.minor == 0 && c->con.patch == 0 && !c->minor_dirty &&
        !c->patch_dirty) {
        return true;
    }
    if (v->major != c->con.major) {
        return refuse(w, "%s does not have same major version as %s", vs, c->orig);
    }
    if (v->minor != c->con.minor && !c->minor_dirty) {
        return refuse(w, "%s does not have same major and minor version as %s", vs, c->orig);
    }
    return true;
}

static bool
check_one(const co_semver *v, const char *vs, const constraint *c, bool include_pre, why *w)
{
    if (v->pre[0] && !include_pre) {
        return refuse(w,
                      "%s is a prerelease version and the constraint is only looking for release "
                      "versions",
                      vs);
    }
    const co_semver *k = &c->con;
    switch (c->op) {
    case OP_NOT_EQUAL:
        if (c->dirty) {
            if (k->major != v->major) {
                return true;
            }
            if (k->minor != v->minor && !c->minor_dirty) {
                return true;
            }
            if (c->minor_dirty) {
                return refuse(w, "%s is equal to %s", vs, c->orig);
            }
            if (k->patch != v->patch && !c->patch_dirty) {
                return true;
            }
            if (c->patch_dirty) {
                if ((v->pre[0] || k->pre[0]) && compare_prerelease(v->pre, k->pre) != 0) {
                    return true;
                }
                return refuse(w, "%s is equal to %s", vs, c->orig);
            }
        }
        if (co_semver_compare(v, k) == 0) {
            return refuse(w, "%s is equal to %s", vs, c->orig);
        }
        return true;
    case OP_GREATER:
        if (c->dirty) {
            if (v->major > k->major) {
                return true;
            }
            if (v->major < k->major || c->minor_dirty) {
                return refuse(w, "%s is less than or equal to %s", vs, c->orig);
            }
            if (c->patch_dirty) {
                if (v->minor > k->minor) {
                    return true;
                }
                return refuse(w, "%s is less than or equal to %s", vs, c->orig);
            }
        }
        if (co_semver_compare(v, k) == 1) {
            return true;
        }
        return refuse(w, "%s is less than or equal to %s", vs, c->orig);
    case OP_LESS:
        if (co_semver_compare(v, k) < 0) {
            return true;
        }
        return refuse(w, "%s is greater than or equal to %s", vs, c->orig);
    case OP_GREATER_EQUAL:
        if (co_semver_compare(v, k) >= 0) {
            return true;
        }
        return refuse(w, "%s is less than %s", vs, c->orig);
    case OP_LESS_EQUAL:
        if (!c->dirty) {
            if (co_semver_compare(v, k) <= 0) {
                return true;
            }
            return refuse(w, "%s is greater than %s", vs, c->orig);
        }
        if (v->major > k->major ||
            (v->major == k->major && v->minor > k->minor && !c->minor_dirty)) {
            return refuse(w, "%s is greater than %s", vs, c->orig);
        }
        return true;
    case OP_TILDE:
        return check_tilde(v, vs, c, w);
    case OP_TILDE_OR_EQUAL:
        if (c->dirty) {
            return check_tilde(v, vs, c, w);
        }
        if (co_semver_compare(v, k) == 0) {
            return true;
        }
        return refuse(w, "%s is not equal to %s", vs, c->orig);
    case OP_CARET:
        if (co_semver_compare(v, k) < 0) {
            return refuse(w, "%s is less than %s", vs, c->orig);
        }
        if (k->major > 0 || c->minor_dirty) {
            if (v->major == k->major) {
                return true;
            }
            return refuse(w, "%s does not have same major version as %s", vs, c->orig);
        }
        if (v->major > 0) {
            return refuse(w, "%s does not have same major version as %s", vs, c->orig);
        }
        if (k->minor > 0 || c->patch_dirty) {
            if (v->minor == k->minor) {
                return true;
            }
            return refuse(w,
                          "%s does not have same minor version as %s. Expected minor versions to "
                          "match when constraint major version is 0",
                          vs, c->orig);
        }
        if (v->minor > 0) {
            return refuse(w, "%s does not have same minor version as %s", vs, c->orig);
        }
        if (k->patch == v->patch) {
            return true;
        }
        return refuse(w,
                      "%s does not equal %s. Expect version and constraint to equal when major "
                      "and minor versions are 0",
                      vs, c->orig);
    }
    return false;
}

bool co_semver_constraints_check(const co_semver_constraints *c, const co_semver *v)
{
    why w = {NULL};
    char *vs = co_semver_string(v);
    bool ok = false;
    for (size_t i = 0; i < c->n && !ok; i++) {
        bool all = true;
        for (size_t j = 0; j < c->groups[i].n && all; j++) {
            all = check_one(v, vs, &c->groups[i].items[j], c->groups[i].contains_pre, &w);
        }
        ok = all;
    }
    free(vs);
    return ok;
}

bool co_semver_constraints_validate(const co_semver_constraints *c,
                                    const co_semver *v,
                                    char **why_out)
{
    co_buf reasons = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    why w = {&reasons};
    char *vs = co_semver_string(v);
    bool prerelease_noted = false;
    bool ok = false;
    for (size_t i = 0; i < c->n && !ok; i++) {
        const group *g = &c->groups[i];
        bool joy = true;
        for (size_t j = 0; j < g->n; j++) {
            if (!g->contains_pre && v->pre[0]) {
                if (!prerelease_noted) {
                    refuse(&w,
                           "%s is a prerelease version and the constraint is only looking for "
                           "release versions",
                           vs);
                    prerelease_noted = true;
                }
                joy = false;
            } else if (!check_one(v, vs, &g->items[j], g->contains_pre, &w)) {
                joy = false;
            }
        }
        ok = joy;
    }
    free(vs);
    if (why_out) {
        *why_out = ok ? NULL : co_buf_take(&reasons, NULL);
    }
    co_buf_dispose(&reasons);
    return ok;
}

char *co_semver_constraints_string(const co_semver_constraints *c)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    for (size_t i = 0; i < c->n; i++) {
        if (i) {
            CO_ASSERT(co_buf_puts(&b, " || ") == 0);
        }
        for (size_t j = 0; j < c->groups[i].n; j++) {
            const constraint *k = &c->groups[i].items[j];
            CO_ASSERT(co_buf_printf(&b, "%s%s%s", j ? " " : "", k->origfunc, k->orig) == 0);
        }
    }
    return co_buf_take(&b, NULL);
}
