/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON over json-c: a strict parser, a Go-compatible encoder, path lookup, typed getters,
 * editing, copy, equality and merge. JSON Patch and merge patch live in json_patch.c.
 *
 * The parser is our own recursive-descent reader that builds json-c objects. json-c 0.16's
 * tokener, even in strict mode, accepts single-quoted strings, NaN and Infinity, "1.", raw
 * control characters in strings and silently clamps integers beyond 64 bits; input from the
 * API server, admission requests and user files deserves a precise error instead, with a
 * line and column. The encoder is ours too, because the canonical form must be byte-for-byte
 * what Go's json.Marshal writes (HTML escaping, \u2028, shortest floats), which json-c's
 * serializer does not do.
 */
#include "co/util/utf8.h"
#include "co/json/json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"
#include "json_int.h"

/* ============================================================================================
 * Numbers and UTF-8 (shared with the library through json_lib.h)
 * ========================================================================================== */

/*
 * Shortest decimal digits of @p v that read back as the same value (as a float when @p bits is
 * 32). Writes the digits without a point to @p digits and returns their count; @p dp receives
 * the position of the decimal point (value = 0.d1d2... x 10^dp), as in Go's decimal type.
 */
static int shortest_digits(char digits[24], int *dp, double v, int bits)
{
    char tmp[48];
    int maxp = bits == 32 ? 9 : 17;
    for (int p = 1; p <= maxp; p++) {
        snprintf(tmp, sizeof(tmp), "%.*e", p - 1, v);
        int same;
        if (bits == 32) {
            same = strtof(tmp, NULL) == (float)v;
        } else {
            same = strtod(tmp, NULL) == v;
        }
        if (same || p == maxp) {
            break;
        }
    }
    /* tmp is "d.ddde[+-]XX" (the sign of v was removed by the caller) */
    int n = 0;
    const char *s = tmp;
    for (; *s && *s != 'e'; s++) {
        if (*s >= '0' && *s <= '9') {
            digits[n++] = *s;
        }
    }
    int exp10 = (int)strtol(s + 1, NULL, 10);
    while (n > 1 && digits[n - 1] == '0') {
        n--;
    }
    digits[n] = '\0';
    *dp = exp10 + 1;
    return n;
}

static size_t fmt_e(char *out, const char *digits, int nd, int dp)
{
    size_t o = 0;
    out[o++] = digits[0];
    if (nd > 1) {
        out[o++] = '.';
        for (int i = 1; i < nd; i++) {
            out[o++] = digits[i];
        }
    }
    int exp = dp - 1;
    out[o++] = 'e';
    out[o++] = exp < 0 ? '-' : '+';
    if (exp < 0) {
        exp = -exp;
    }
    o += (size_t)snprintf(out + o, 8, "%02d", exp);
    return o;
}

static size_t fmt_f(char *out, const char *digits, int nd, int dp)
{
    size_t o = 0;
    if (dp > 0) {
        for (int i = 0; i < dp; i++) {
            out[o++] = i < nd ? digits[i] : '0';
        }
    } else {
        out[o++] = '0';
    }
    int frac = nd - dp > 0 ? nd - dp : 0;
    if (frac > 0) {
        out[o++] = '.';
        for (int i = 0; i < frac; i++) {
            int j = dp + i;
            out[o++] = (j >= 0 && j < nd) ? digits[j] : '0';
        }
    }
    return o;
}

size_t co_json__format_double(char out[CO_JSON__NUMBER_MAX], double v, char fmt, int bits)
{
    size_t o = 0;
    if (signbit(v)) {
        out[o++] = '-';
        v = -v;
    }
    if (bits == 32) {
        v = (double)(float)v;
    }
    if (fmt == 'j') {
        /* encoding/json: %f between 1e-6 and 1e21, else %e with "e-07" shortened to "e-7". */
        fmt = (v != 0 && (v < 1e-6 || v >= 1e21)) ? 'e' : 'f';
        size_t n = co_json__format_double(out + o, v, fmt, 64);
        size_t end = o + n;
        if (fmt == 'e' && n >= 4 && out[end - 4] == 'e' && out[end - 3] == '-' &&
            out[end - 2] == '0') {
            out[end - 2] = out[end - 1];
            end--;
            out[end] = '\0';
        }
        return end;
    }
    char digits[24];
    int dp = 0;
    int nd = 0;
    if (v == 0) {
        digits[0] = '0';
        digits[1] = '\0';
        nd = 0;
        dp = 0;
    } else {
        nd = shortest_digits(digits, &dp, v, bits);
    }
    if (fmt == 'g') {
        int exp = dp - 1;
        fmt = (nd > 0 && (exp < -4 || exp >= 6)) ? 'e' : 'f';
    }
    if (fmt == 'e') {
        if (nd == 0) {
            o += (size_t)snprintf(out + o, 8, "0e+00");
        } else {
            o += fmt_e(out + o, digits, nd, dp);
        }
    } else {
        /* %f is only asked for where it stays short: encoding/json's range, or %g */
        CO_ASSERT(dp <= 22 && nd - dp <= 24);
        o += fmt_f(out + o, digits, nd, dp);
    }
    out[o] = '\0';
    return o;
}

int co_json__integer(const struct json_object *obj, int64_t *i, uint64_t *u, int *is_unsigned)
{
    if (!json_object_is_type(obj, json_type_int)) {
        return 0;
    }
    int64_t v = json_object_get_int64(obj);
    *is_unsigned = 0;
    if (v == INT64_MAX) {
        /* json-c clamps uint64 values to INT64_MAX in get_int64; its get_uint64 is exact. */
        uint64_t uv = json_object_get_uint64(obj);
        if (uv > (uint64_t)INT64_MAX) {
            *u = uv;
            *is_unsigned = 1;
            return 1;
        }
    }
    *i = v;
    return 1;
}

/* ============================================================================================
 * Parsing
 * ========================================================================================== */

/* Levels of the skip lists indexed by their names' first byte; deeper ones compare every list. */
#define SKIP_INDEXED_LEVELS 6

typedef struct parser {
    const char *p;   /* next byte */
    const char *end; /* end of input */
    const char *start;
    int depth;
    co_buf str;                     /* scratch for string contents */
    const char *const *const *skip; /* key lists of members to leave out, or NULL */
    /* by_first[level][byte % 64]: the lists whose name at that level begins with such a byte
     * (SKIP_INDEXED_LEVELS rows on the caller's stack, only those in use written) */
    uint32_t (*by_first)[64];
    int full; /* values only checked go through the full parser too (to report an error) */
    /* co_json_parse_each(): the member of the root object whose elements are handed over */
    const char *each_key;
    co_json_element_cb each_cb;
    void *each_payload;
    int each_rc;     /* the callback's non-zero result, while the parse unwinds */
    int each_seen;   /* the member was met (a second one is refused) */
    int stream_next; /* the value about to be parsed is that member's array */
    co_jdoc *doc;    /* co_jdoc_parse(): the document being built */
    char *text;      /* co_jdoc_parse(): the document's own copy of the input, read in place */
} parser;

/* What the parse returns while it unwinds after a callback stopped it (never an error code). */
#define STOPPED INT32_MIN

/* Most key lists co_json_parse_skip() follows at once (one bit each). */
#define SKIP_LISTS_MAX 32

/* Sets an error located at @p at: "line L, column C: ..." (column counts characters). */
static int CO_PRINTF(3, 4) perr(const parser *ps, const char *at, const char *fmt, ...)
{
    int line = 1, col = 1;
    for (const char *q = ps->start; q < at && q < ps->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)*q & 0xc0) != 0x80) {
            col++;
        }
    }
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return co_error_set(CO_EINVALID, "line %d, column %d: %s", line, col, msg);
}

/* Describes the byte at @p q for an error message. */
static const char *describe(const parser *ps, const char *q, char buf[16])
{
    if (q >= ps->end) {
        return "end of input";
    }
    unsigned char c = (unsigned char)*q;
    if (c >= 0x21 && c < 0x7f) {
        snprintf(buf, 16, "'%c'", c);
    } else {
        snprintf(buf, 16, "byte 0x%02x", c);
    }
    return buf;
}

static inline int is_ws(char c)
{
    /* one comparison for the usual case: every byte above ' ' is no whitespace */
    return (unsigned char)c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r');
}

static inline void skip_ws(parser *ps)
{
    while (ps->p < ps->end && is_ws(*ps->p)) {
        ps->p++;
    }
}

/* @p out NULL checks the value without building it; @p live has a bit set for every skip list
 * whose keys so far lead to this value. */
static int parse_value(parser *ps, struct json_object **out, uint32_t live);

static int hex4(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') {
            v |= (uint32_t)(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            v |= (uint32_t)(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
            v |= (uint32_t)(c - 'A' + 10);
        } else {
            return -1;
        }
    }
    *out = v;
    return 0;
}

/*
 * Skips bytes that stand for themselves in a string (printable ASCII but '"' and '\\'). With
 * SSE2 (every x86-64), sixteen at a time: a signed comparison below 0x20 also catches the bytes
 * >= 0x80, which are negative as signed, so one mask marks every byte to stop at. Elsewhere,
 * eight at a time in a word without a byte >= 0x80: subtracting 0x20, or 1 from the word xor
 * '"' or '\\', sets the top bit of the lowest byte that is a control character, a quote or a
 * backslash, and of no byte below it; or-ing the word in marks bytes >= 0x80. Either way the
 * lowest mark is the byte to stop at. The last few bytes of the input are done one by one.
 */
static inline const char *skip_plain(const char *p, const char *end)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i stop =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                         _mm_cmplt_epi8(v, space));
        unsigned mask = (unsigned)_mm_movemask_epi8(stop);
        if (mask) {
            return p + __builtin_ctz(mask);
        }
        p += 16;
    }
#elif __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ULL;
    const uint64_t highs = 0x8080808080808080ULL;
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, sizeof(w));
        uint64_t special =
            ((w - ones * 0x20) | ((w ^ (ones * '"')) - ones) | ((w ^ (ones * '\\')) - ones) | w) &
            highs;
        if (special) {
            return p + (__builtin_ctzll(special) >> 3);
        }
        p += 8;
    }
#endif
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) {
            break;
        }
        p++;
    }
    return p;
}

/*
 * Reads a string (ps->p at the opening quote). Its contents are returned in @p s_out and
 * @p len_out (not NUL-terminated): the input bytes themselves when there is no escape (no copy
 * at all), else ps->str, where the bytes between escapes are copied in runs. With @p keep 0 it
 * only checks the string (same errors at the same places) and returns nothing.
 */
static int parse_string_slow(parser *ps, int keep, const char **s_out, size_t *len_out);

/* Most strings are plain ASCII up to the closing quote: those are read inline, without the call
 * (whose set-up for escapes cost more than the scan of a short key). */
static inline int parse_string(parser *ps, int keep, const char **s_out, size_t *len_out)
{
    const char *q = skip_plain(ps->p + 1, ps->end);
    if (q < ps->end && *q == '"') {
        if (keep) {
            *s_out = ps->p + 1;
            *len_out = (size_t)(q - ps->p - 1);
        }
        ps->p = q + 1;
        return 0;
    }
    return parse_string_slow(ps, keep, s_out, len_out);
}

/* Whether "\" followed by @p c stands for one character (every escape but \u). */
static inline int one_char_escape(char c)
{
    switch (c) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
        return 1;
    default:
        return 0;
    }
}

/*
 * For a string only checked: skips what skip_plain() skips and the escapes that stand for one
 * character, and stops at anything else (the closing quote, a \u or invalid escape, a control
 * character, a byte >= 0x80, the end of the input). With SSE2, sixteen bytes at a time: a
 * block's backslashes and its other stops are two masks, taken lowest bit first; a valid
 * escape clears its own two bits (the escaped byte may be a quote or a backslash), so a block
 * dense with \" costs no reload per escape. An escape whose second byte is in the next block
 * continues after it. The last bytes of the input are done as skip_plain() does.
 */
static const char *skip_checked(const char *p, const char *end)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    /* 17: the byte after a backslash in the block is always there to look at */
    while (end - p >= 17) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned bs = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash));
        unsigned all = bs | (unsigned)_mm_movemask_epi8(
                                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmplt_epi8(v, space)));
        unsigned next = 16;
        while (all) {
            unsigned i = (unsigned)__builtin_ctz(all);
            if (!(bs >> i & 1) || !one_char_escape(p[i + 1])) {
                return p + i;
            }
            if (i == 15) {
                next = 17;
                break;
            }
            all &= ~(3u << i);
        }
        p += next;
    }
#endif
    for (;;) {
        p = skip_plain(p, end);
        if (end - p < 2 || p[0] != '\\' || !one_char_escape(p[1])) {
            return p;
        }
        p += 2;
    }
}

static int parse_string_slow(parser *ps, int keep, const char **s_out, size_t *len_out)
{
    const char *open = ps->p;
    const char *pending = open + 1; /* first byte not yet copied to ps->str */
    int copying = 0;                /* ps->str holds the string so far: an escape was seen */
    int rc;
    ps->p++;
    for (;;) {
        /* A string only checked (a last-applied-configuration annotation is mostly \") steps
         * over the escapes that stand for one character here; the rest go the long way. */
        ps->p = keep ? skip_plain(ps->p, ps->end) : skip_checked(ps->p, ps->end);
        if (ps->p >= ps->end) {
            return perr(ps, open, "unterminated string");
        }
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            if (keep && !copying) {
                *s_out = pending;
                *len_out = (size_t)(ps->p - pending);
            } else if (keep) {
                if ((rc = co_buf_put(&ps->str, pending, (size_t)(ps->p - pending))) < 0) {
                    return rc;
                }
                *s_out = ps->str.ptr;
                *len_out = ps->str.len;
            }
            ps->p++;
            return 0;
        }
        if (c < 0x20) {
            return perr(ps, ps->p, "control character 0x%02x in string (escape it)", c);
        }
        if (c >= 0x80) {
            uint32_t cp;
            size_t n = co_utf8_decode((const unsigned char *)ps->p, (size_t)(ps->end - ps->p), &cp);
            if (n == 0) {
                return perr(ps, ps->p, "invalid UTF-8 in string");
            }
            ps->p += n;
            continue;
        }
        /* a backslash */
        const char *esc = ps->p;
        if (ps->p + 1 >= ps->end) {
            return perr(ps, open, "unterminated string");
        }
        char e = ps->p[1];
        ps->p += 2;
        char simple = 0;
        switch (e) {
        case '"':
        case '\\':
        case '/':
            simple = e;
            break;
        case 'b':
            simple = '\b';
            break;
        case 'f':
            simple = '\f';
            break;
        case 'n':
            simple = '\n';
            break;
        case 'r':
            simple = '\r';
            break;
        case 't':
            simple = '\t';
            break;
        case 'u':
            break;
        default:
            return perr(ps, esc, "invalid escape sequence in string");
        }
        uint32_t cp = 0;
        if (!simple) {
            if (ps->end - ps->p < 4 || hex4(ps->p, &cp) < 0) {
                return perr(ps, esc, "invalid \\u escape in string");
            }
            ps->p += 4;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                uint32_t lo;
                if (ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u' &&
                    hex4(ps->p + 2, &lo) == 0 && lo >= 0xdc00 && lo <= 0xdfff) {
                    ps->p += 6;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else {
                    cp = 0xfffd; /* a lone surrogate, replaced as Go does */
                }
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                cp = 0xfffd;
            }
        }
        if (!keep) {
            continue;
        }
        if (!copying) {
            co_buf_reset(&ps->str);
            copying = 1;
        }
        /* the run before the escape and what it stands for, in one append */
        size_t run = (size_t)(esc - pending);
        if ((rc = co_buf_reserve(&ps->str, run + 4)) < 0) {
            return rc;
        }
        memcpy(ps->str.ptr + ps->str.len, pending, run);
        ps->str.len += run;
        if (simple) {
            ps->str.ptr[ps->str.len++] = simple;
        } else {
            ps->str.len += co_utf8_encode(ps->str.ptr + ps->str.len, (int32_t)cp);
        }
        ps->str.ptr[ps->str.len] = '\0';
        pending = ps->p;
    }
}

/* A number as read: which of the fields holds it. */
typedef struct number {
    enum { NUM_INT, NUM_UINT, NUM_DOUBLE } kind;
    int64_t i;
    uint64_t u;
    double d;
} number;

/* Reads a number at ps->p into @p n (always checked in full: a double out of range is refused
 * even when nothing is built). */
static int scan_number(parser *ps, number *n)
{
    const char *s = ps->p;
    const char *q = s;
    int neg = 0, is_int = 1;
    char cb[16];
    if (q < ps->end && *q == '-') {
        neg = 1;
        q++;
    }
    if (q >= ps->end || *q < '0' || *q > '9') {
        return perr(ps, q, "invalid number: expected a digit, found %s", describe(ps, q, cb));
    }
    if (*q == '0') {
        q++;
        if (q < ps->end && *q >= '0' && *q <= '9') {
            return perr(ps, s, "invalid number: leading zero");
        }
    } else {
        while (q < ps->end && *q >= '0' && *q <= '9') {
            q++;
        }
    }
    const char *int_end = q;
    if (q < ps->end && *q == '.') {
        is_int = 0;
        q++;
        if (q >= ps->end || *q < '0' || *q > '9') {
            return perr(ps, q, "invalid number: expected a digit after '.', found %s",
                        describe(ps, q, cb));
        }
        while (q < ps->end && *q >= '0' && *q <= '9') {
            q++;
        }
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        is_int = 0;
        q++;
        if (q < ps->end && (*q == '+' || *q == '-')) {
            q++;
        }
        if (q >= ps->end || *q < '0' || *q > '9') {
            return perr(ps, q, "invalid number: expected a digit in the exponent, found %s",
                        describe(ps, q, cb));
        }
        while (q < ps->end && *q >= '0' && *q <= '9') {
            q++;
        }
    }
    ps->p = q;
    if (is_int) {
        uint64_t mag = 0;
        int overflow = 0;
        for (const char *d = s + neg; d < int_end; d++) {
            unsigned dv = (unsigned)(*d - '0');
            if (mag > (UINT64_MAX - dv) / 10) {
                overflow = 1;
                break;
            }
            mag = mag * 10 + dv;
        }
        if (!overflow && !(neg && mag == 0)) { /* "-0" is the double -0.0, as in Go */
            if (!neg && mag <= (uint64_t)INT64_MAX) {
                n->kind = NUM_INT;
                n->i = (int64_t)mag;
                return 0;
            }
            if (neg && mag <= (uint64_t)INT64_MAX + 1) {
                n->kind = NUM_INT;
                n->i = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
                return 0;
            }
            if (!neg) {
                n->kind = NUM_UINT;
                n->u = mag;
                return 0;
            }
        }
        /* beyond 64 bits: a double, as Go and Kubernetes read such numbers */
    }
    size_t len = (size_t)(q - s);
    char small[64];
    char *text = len < sizeof(small) ? small : co_xmalloc(len + 1);
    memcpy(text, s, len);
    text[len] = '\0';
    errno = 0;
    double d = strtod(text, NULL);
    int range = isinf(d);
    if (text != small) {
        free(text);
    }
    if (range) {
        return perr(ps, s, "number %.*s is out of range", len > 40 ? 40 : (int)len, s);
    }
    n->kind = NUM_DOUBLE;
    n->d = d;
    return 0;
}

static int parse_number(parser *ps, struct json_object **out)
{
    number n;
    int rc = scan_number(ps, &n);
    if (rc < 0 || !out) {
        return rc;
    }
    switch (n.kind) {
    case NUM_INT:
        *out = json_object_new_int64(n.i);
        break;
    case NUM_UINT:
        *out = json_object_new_uint64(n.u);
        break;
    case NUM_DOUBLE:
    default:
        *out = json_object_new_double(n.d);
        break;
    }
    return 0;
}

static int expect_literal(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) {
        char cb[16];
        return perr(ps, ps->p, "invalid literal: expected %s, found %s", word,
                    describe(ps, ps->p, cb));
    }
    ps->p += n;
    return 0;
}

/* After a member or element: skips a ',' (returns 1: another follows) or the closing
 * @p close (returns 0); anything else is an error naming the container @p what. */
static int next_or_close(parser *ps, char close, const char *what)
{
    char cb[16];
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
        ps->p++;
        return 1;
    }
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    return perr(ps, ps->p, "expected ',' or '%c' in %s, found %s", close, what,
                describe(ps, ps->p, cb));
}

/*
 * Which of the skip lists in @p live go on below member @p key of an object at nesting level
 * @p level (0 for the root object's members): their bits in *child_live. Returns 1 when a list
 * ends at @p key, i.e. the member is to be left out.
 */
static int
skip_member(const parser *ps, uint32_t live, int level, const char *key, uint32_t *child_live)
{
    uint32_t next = 0;
    if (level < SKIP_INDEXED_LEVELS) {
        /* only lists whose name there begins with a byte like the key's can go on */
        live &= ps->by_first[level][(unsigned char)key[0] % 64];
    }
    const char *seen = NULL; /* the name last compared: lists often share a string literal */
    int named = 0;
    for (; live; live &= live - 1) {
        int i = __builtin_ctz(live);
        const char *want = ps->skip[i][level];
        if (want != seen) {
            /* the first byte before the whole key; an array's element marker names no member,
             * even one called "[]" */
            seen = want;
            named = want[0] == key[0] && strcmp(want, key) == 0 &&
                    strcmp(want, CO_JSON_EVERY_ELEMENT) != 0;
        }
        if (!named) {
            continue;
        }
        if (!ps->skip[i][level + 1]) {
            *child_live = 0;
            return 1;
        }
        next |= (uint32_t)1 << i;
    }
    *child_live = next;
    return 0;
}

/* Whether key @p ks (from parse_string) holds a NUL. Only an escape (\u0000) can put one there,
 * and escaped strings are the copied ones: a raw control character is an error. */
static int key_has_nul(const parser *ps, const char *ks, size_t klen)
{
    return ks == ps->str.ptr && memchr(ks, '\0', klen) != NULL;
}

static int parse_object(parser *ps, struct json_object **out, uint32_t live)
{
    struct json_object *obj = out ? json_object_new_object() : NULL;
    char cb[16];
    int rc = 0;
    ps->p++; /* '{' */
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        if (out) {
            *out = obj;
        }
        return 0;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            rc = perr(ps, ps->p, "expected a string key, found %s", describe(ps, ps->p, cb));
            goto fail;
        }
        const char *key_at = ps->p;
        const char *ks = "";
        size_t klen = 0;
        if ((rc = parse_string(ps, 1, &ks, &klen)) < 0) {
            goto fail;
        }
        if (key_has_nul(ps, ks, klen)) {
            rc = perr(ps, key_at, "object key contains a NUL character");
            goto fail;
        }
        /* The key is copied for json-c, which wants it NUL-terminated, and because the scratch
         * buffer is reused by the value: on the stack when short (nearly always), saving an
         * allocation per member. A value that is only checked needs no key. */
        char short_key[64];
        char *key = short_key;
        short_key[0] = '\0';
        if (out && klen < sizeof(short_key)) {
            memcpy(short_key, ks, klen);
            short_key[klen] = '\0';
        } else if (out) {
            key = co_xmemdup(ks, klen);
        }
        uint32_t child_live = 0;
        int keep = out && !(live && skip_member(ps, live, ps->depth - 1, key, &child_live));
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            rc =
                perr(ps, ps->p, "expected ':' after object key, found %s", describe(ps, ps->p, cb));
            if (key != short_key) {
                free(key);
            }
            goto fail;
        }
        ps->p++;
        struct json_object *val = NULL;
        /* co_json_parse_each()'s array: its elements go to the callback and the member is left
         * out. A second one cannot replace the first, whose elements are gone: refused. */
        int stream = keep && ps->depth == 1 && ps->each_key && !strcmp(key, ps->each_key);
        if (stream && ps->each_seen++) {
            rc = perr(ps, key_at, "member \"%s\" appears twice", ps->each_key);
        } else {
            if (stream) {
                skip_ws(ps);
                stream = ps->p < ps->end && *ps->p == '[';
            }
            ps->stream_next = stream;
            rc = parse_value(ps, keep ? &val : NULL, child_live);
        }
        if (rc < 0) {
            if (key != short_key) {
                free(key);
            }
            goto fail;
        }
        if (keep && !stream) {
            json_object_object_add(obj, key, val);
        }
        if (key != short_key) {
            free(key);
        }
        if ((rc = next_or_close(ps, '}', "object")) <= 0) {
            if (rc == 0) {
                break;
            }
            goto fail;
        }
    }
    if (out) {
        *out = obj;
    }
    return 0;
fail:
    json_object_put(obj);
    return rc;
}

/*
 * Which of the skip lists in @p live go on into the elements of an array at nesting level
 * @p level: those that name "[]" there (every element).
 */
static uint32_t skip_elements(const parser *ps, uint32_t live, int level)
{
    uint32_t next = 0;
    for (int i = 0; live; i++, live >>= 1) {
        if ((live & 1) && !strcmp(ps->skip[i][level], CO_JSON_EVERY_ELEMENT)) {
            next |= (uint32_t)1 << i;
        }
    }
    return next;
}

/* With @p stream, elements are built one at a time and handed to ps->each_cb instead of being
 * gathered (co_json_parse_each()); *out is then left alone. */
static int parse_array(parser *ps, struct json_object **out, uint32_t live, int stream)
{
    struct json_object *arr = out && !stream ? json_object_new_array() : NULL;
    uint32_t child_live = live && out ? skip_elements(ps, live, ps->depth - 1) : 0;
    int rc = 0;
    ps->p++; /* '[' */
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        if (out && !stream) {
            *out = arr;
        }
        return 0;
    }
    for (;;) {
        struct json_object *val = NULL;
        if ((rc = parse_value(ps, out ? &val : NULL, child_live)) < 0) {
            goto fail;
        }
        if (stream) {
            int stop = ps->each_cb(val, ps->each_payload);
            json_object_put(val);
            if (stop != 0) {
                ps->each_rc = stop;
                rc = STOPPED;
                goto fail;
            }
        } else if (out) {
            json_object_array_add(arr, val);
        }
        if ((rc = next_or_close(ps, ']', "array")) <= 0) {
            if (rc == 0) {
                break;
            }
            goto fail;
        }
    }
    if (out && !stream) {
        *out = arr;
    }
    return 0;
fail:
    json_object_put(arr);
    return rc;
}

/*
 * Values that are only checked (members left out by the skip lists) are passed over by a loop
 * over the same scanners, without recursion, objects or key copies: in an admission review
 * they are most of the bytes (the last-applied-configuration annotation, managedFields). On
 * anything the scanners refuse it gives up, and the full parser goes over the same value again
 * to report the error exactly as it always has.
 */
static int pass_value(parser *ps)
{
    const char *start = ps->p;
    uint64_t in_object[CO_MAX_NESTING / 64 + 1] = {0}; /* one bit per open container */
    int depth = 0;                                     /* containers open here */
    for (;;) {
        /* a value */
        skip_ws(ps);
        if (ps->p >= ps->end) {
            goto refuse;
        }
        switch (*ps->p) {
        case '{':
        case '[': {
            if (ps->depth + depth >= CO_MAX_NESTING) {
                goto refuse;
            }
            int obj = *ps->p == '{';
            uint64_t bit = (uint64_t)1 << (depth % 64);
            in_object[depth / 64] =
                obj ? in_object[depth / 64] | bit : in_object[depth / 64] & ~bit;
            depth++;
            ps->p++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
                ps->p++;
                depth--;
                break;
            }
            if (!obj) {
                continue; /* the first element */
            }
            goto key;
        }
        case '"':
            if (parse_string(ps, 0, NULL, NULL) < 0) {
                goto refuse;
            }
            break;
        case 't':
        case 'f':
        case 'n':
            if (expect_literal(ps, *ps->p == 't' ? "true" : *ps->p == 'f' ? "false" : "null") < 0) {
                goto refuse;
            }
            break;
        default:
            if (parse_number(ps, NULL) < 0) {
                goto refuse;
            }
            break;
        }
        /* after a value: the end, or what comes next in the container holding it */
        for (;;) {
            if (depth == 0) {
                return 1;
            }
            int obj = (int)(in_object[(depth - 1) / 64] >> ((depth - 1) % 64)) & 1;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                if (obj) {
                    goto key;
                }
                break; /* the next element */
            }
            if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
                ps->p++;
                depth--;
                continue;
            }
            goto refuse;
        }
        continue;
    key:
        skip_ws(ps);
        const char *ks = "";
        size_t klen = 0;
        if (ps->p >= ps->end || *ps->p != '"' || parse_string(ps, 1, &ks, &klen) < 0 ||
            key_has_nul(ps, ks, klen)) {
            goto refuse;
        }
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            goto refuse;
        }
        ps->p++;
    }
refuse:
    ps->p = start;
    return 0;
}

/* At the start of a value: skips whitespace and refuses the end of the input. */
static int value_start(parser *ps)
{
    skip_ws(ps);
    if (ps->p >= ps->end) {
        return perr(ps, ps->p, "unexpected end of input, expected a value");
    }
    return 0;
}

/* Entering the container at ps->p: one level more, within the nesting cap. */
static int enter_container(parser *ps)
{
    if (ps->depth >= CO_MAX_NESTING) {
        return perr(ps, ps->p, "nesting deeper than %d levels", CO_MAX_NESTING);
    }
    ps->depth++;
    return 0;
}

static int parse_value(parser *ps, struct json_object **out, uint32_t live)
{
    char cb[16];
    int rc;
    int stream = ps->stream_next;
    ps->stream_next = 0;
    if (!out && !ps->full && pass_value(ps)) {
        return 0;
    }
    if (!out && !ps->full) {
        /* refused: the full parser finds the error and says where */
        ps->full = 1;
        rc = parse_value(ps, NULL, 0);
        ps->full = 0;
        return rc;
    }
    if ((rc = value_start(ps)) < 0) {
        return rc;
    }
    switch (*ps->p) {
    case '{':
    case '[':
        if ((rc = enter_container(ps)) < 0) {
            return rc;
        }
        rc = *ps->p == '{' ? parse_object(ps, out, live) : parse_array(ps, out, live, stream);
        ps->depth--;
        return rc;
    case '"': {
        const char *s = "";
        size_t len = 0;
        if ((rc = parse_string(ps, out != NULL, &s, &len)) < 0) {
            return rc;
        }
        if (out) {
            *out = json_object_new_string_len(s, (int)len);
        }
        return 0;
    }
    case 't':
        if ((rc = expect_literal(ps, "true")) < 0) {
            return rc;
        }
        if (out) {
            *out = json_object_new_boolean(1);
        }
        return 0;
    case 'f':
        if ((rc = expect_literal(ps, "false")) < 0) {
            return rc;
        }
        if (out) {
            *out = json_object_new_boolean(0);
        }
        return 0;
    case 'n':
        if ((rc = expect_literal(ps, "null")) < 0) {
            return rc;
        }
        if (out) {
            *out = NULL;
        }
        return 0;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
            return parse_number(ps, out);
        }
        return perr(ps, ps->p, "unexpected %s, expected a value", describe(ps, ps->p, cb));
    }
}

/* ============================================================================================
 * Documents (co/json/jdoc.h): the same reader, building nodes instead of json-c objects
 * ========================================================================================== */

/* The first arena block comes with the document; later ones hold at least this much. */
#define JD_BLOCK_MIN 4096

/* Doubles the node array (its nodes move). */
static void jd_grow(co_jdoc *doc)
{
    doc->cap *= 2;
    doc->nodes = co_xreallocarray(doc->nodes, doc->cap, sizeof(*doc->nodes));
}

/* Appends a node of type @p type; returns its index (nodes move as the array grows). */
static inline size_t jd_push(co_jdoc *doc, co_jv_type type)
{
    if (doc->n == doc->cap) {
        jd_grow(doc);
    }
    co_jv *v = &doc->nodes[doc->n];
    *v = (co_jv){.type = (uint8_t)type, .size = 1};
    return doc->n++;
}

/* Ends the container at @p at: @p count elements or members, and the nodes up to here. */
static void jd_close(co_jdoc *doc, size_t at, uint32_t count)
{
    doc->nodes[at].len = count;
    doc->nodes[at].size = (uint32_t)(doc->n - at);
}

/* A NUL-terminated copy of @p len bytes at @p s in the document's arena. */
static const char *jd_copy(co_jdoc *doc, const char *s, size_t len)
{
    if (doc->left <= len) {
        size_t size = len + 1 > JD_BLOCK_MIN ? len + 1 : JD_BLOCK_MIN;
        co_jdoc__block *b = co_xmalloc(sizeof(*b) + size);
        b->next = doc->blocks;
        doc->blocks = b;
        doc->at = (char *)(b + 1);
        doc->left = size;
    }
    char *out = doc->at;
    memcpy(out, s, len);
    out[len] = '\0';
    doc->at += len + 1;
    doc->left -= len + 1;
    return out;
}

/*
 * Reads a string into a node. A plain string stays where it is in the document's copy of the
 * input, its closing quote overwritten with the NUL that ends it (the parser never looks back
 * at a quote it has passed); one with escapes is decoded into the arena. *escaped tells which.
 */
static int jd_string(parser *ps, int *escaped)
{
    const char *s = "";
    size_t len = 0;
    int rc = parse_string(ps, 1, &s, &len);
    if (rc < 0) {
        return rc;
    }
    if (len > UINT32_MAX) {
        return co_error_set(CO_ETOOBIG, "a string of %zu bytes is too long", len);
    }
    co_jdoc *doc = ps->doc;
    const char *str = s;
    *escaped = s == ps->str.ptr;
    if (*escaped) {
        str = jd_copy(doc, s, len);
    } else {
        ps->text[s + len - ps->start] = '\0';
    }
    size_t at = jd_push(doc, CO_JV_STRING); /* before the array is read: it may move */
    co_jv *v = &doc->nodes[at];
    v->len = (uint32_t)len;
    v->as.s = str;
    return 0;
}

/* Whether member keys @p a and @p b are the same (keys hold no NUL). */
static int jd_same_key(const co_jv *a, const co_jv *b)
{
    return a->len == b->len && a->as.s[0] == b->as.s[0] && !memcmp(a->as.s, b->as.s, a->len);
}

/* The most members compared pairwise for duplicates; a larger object goes through a hash. */
#define JD_PAIRWISE_MAX 16

/*
 * Marks the members of the object at @p at whose key comes again later as dead (the last one
 * wins, as in co_json_parse()). Small objects compare their keys pairwise; larger ones go
 * through a table of the keys, so that a hostile object of many members costs linear time.
 * The table's hash is keyed: with unkeyed FNV-1a, 49,152 keys chosen offline to share one slot
 * kept a review busy for seconds, each insertion walking past all the earlier keys.
 */
static void jd_dedupe(co_jdoc *doc, size_t at)
{
    co_jv *obj = &doc->nodes[at];
    uint32_t n = obj->len;
    if (n < 2) {
        return;
    }
    if (n <= JD_PAIRWISE_MAX) {
        co_jv *keys[JD_PAIRWISE_MAX];
        co_jv *k = obj + 1;
        for (uint32_t i = 0; i < n; i++) {
            keys[i] = k;
            for (uint32_t j = 0; j < i; j++) {
                if (!(keys[j]->flags & CO_JV_DEAD) && jd_same_key(keys[j], k)) {
                    keys[j]->flags |= CO_JV_DEAD;
                    obj->flags |= CO_JV_DUPS;
                }
            }
            k = k + 1 + k[1].size;
        }
        return;
    }
    size_t slots = co_jv__keys_slots(n);
    uint32_t *table = co_xcalloc(slots, sizeof(*table));
    co_jv *k = obj + 1;
    for (uint32_t i = 0; i < n; i++) {
        size_t slot = co_jv__keys_find(table, slots, obj, k->as.s, k->len);
        if (table[slot]) {
            obj[table[slot]].flags |= CO_JV_DEAD;
            obj->flags |= CO_JV_DUPS;
        }
        table[slot] = (uint32_t)(k - obj);
        k = k + 1 + k[1].size;
    }
    free(table);
}

static int jd_value(parser *ps, uint32_t live);

/* Mirrors parse_object(): the same checks in the same order, so the same errors. */
static int jd_object(parser *ps, uint32_t live)
{
    co_jdoc *doc = ps->doc;
    size_t at = jd_push(doc, CO_JV_OBJECT);
    uint32_t members = 0;
    char cb[16];
    int rc;
    ps->p++; /* '{' */
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 0;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            return perr(ps, ps->p, "expected a string key, found %s", describe(ps, ps->p, cb));
        }
        const char *key_at = ps->p;
        int escaped = 0;
        if ((rc = jd_string(ps, &escaped)) < 0) {
            return rc;
        }
        co_jv *key = &doc->nodes[doc->n - 1];
        /* only an escape (\u0000) can put a NUL there: a raw one is an error */
        if (escaped && memchr(key->as.s, '\0', key->len)) {
            return perr(ps, key_at, "object key contains a NUL character");
        }
        uint32_t child_live = 0;
        int keep = !(live && skip_member(ps, live, ps->depth - 1, key->as.s, &child_live));
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            return perr(ps, ps->p, "expected ':' after object key, found %s",
                        describe(ps, ps->p, cb));
        }
        ps->p++;
        if (keep) {
            rc = jd_value(ps, child_live);
            members++;
        } else {
            /* the key goes too; its copy stays in the arena, unused */
            doc->n--;
            rc = parse_value(ps, NULL, 0);
        }
        if (rc < 0) {
            return rc;
        }
        if ((rc = next_or_close(ps, '}', "object")) <= 0) {
            if (rc < 0) {
                return rc;
            }
            break;
        }
    }
    jd_close(doc, at, members);
    jd_dedupe(doc, at);
    return 0;
}

static int jd_array(parser *ps, uint32_t live)
{
    co_jdoc *doc = ps->doc;
    size_t at = jd_push(doc, CO_JV_ARRAY);
    uint32_t child_live = live ? skip_elements(ps, live, ps->depth - 1) : 0;
    uint32_t elements = 0;
    int rc;
    ps->p++; /* '[' */
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return 0;
    }
    for (;;) {
        if ((rc = jd_value(ps, child_live)) < 0) {
            return rc;
        }
        elements++;
        if ((rc = next_or_close(ps, ']', "array")) <= 0) {
            if (rc < 0) {
                return rc;
            }
            break;
        }
    }
    jd_close(doc, at, elements);
    return 0;
}

/* Mirrors parse_value() building a value. */
static int jd_value(parser *ps, uint32_t live)
{
    co_jdoc *doc = ps->doc;
    char cb[16];
    int rc;
    if ((rc = value_start(ps)) < 0) {
        return rc;
    }
    switch (*ps->p) {
    case '{':
    case '[':
        if ((rc = enter_container(ps)) < 0) {
            return rc;
        }
        rc = *ps->p == '{' ? jd_object(ps, live) : jd_array(ps, live);
        ps->depth--;
        return rc;
    case '"': {
        int escaped = 0;
        return jd_string(ps, &escaped);
    }
    case 't':
    case 'f': {
        int truth = *ps->p == 't';
        if ((rc = expect_literal(ps, truth ? "true" : "false")) < 0) {
            return rc;
        }
        size_t at = jd_push(doc, CO_JV_BOOL);
        doc->nodes[at].flags = truth ? CO_JV_TRUE : 0;
        return 0;
    }
    case 'n':
        if ((rc = expect_literal(ps, "null")) < 0) {
            return rc;
        }
        jd_push(doc, CO_JV_NULL);
        return 0;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
            number n;
            if ((rc = scan_number(ps, &n)) < 0) {
                return rc;
            }
            size_t at = jd_push(doc, CO_JV_NUMBER);
            co_jv *v = &doc->nodes[at];
            if (n.kind == NUM_INT) {
                v->flags = CO_JV_INT;
                v->as.i = n.i;
            } else if (n.kind == NUM_UINT) {
                v->flags = CO_JV_UINT;
                v->as.u = n.u;
            } else {
                v->flags = CO_JV_DOUBLE;
                v->as.d = n.d;
            }
            return 0;
        }
        return perr(ps, ps->p, "unexpected %s, expected a value", describe(ps, ps->p, cb));
    }
}

/*
 * Checks the size of a document and readies @p ps to read it with the skip lists @p skip; their
 * bits in *live.
 */
static int begin_document(parser *ps,
                          const char *data,
                          size_t len,
                          size_t max,
                          const char *const *const *skip,
                          uint32_t *live)
{
    if (len > max) {
        return co_error_set(CO_ETOOBIG, "JSON document of %zu bytes exceeds the limit of %zu", len,
                            max);
    }
    if (len > (size_t)INT32_MAX) {
        return co_error_set(CO_ETOOBIG, "JSON document of %zu bytes is too large", len);
    }
    *live = 0;
    size_t cleared = 0; /* rows of the index cleared: those some list reaches */
    for (size_t i = 0; skip && skip[i]; i++) {
        CO_ASSERT(i < SKIP_LISTS_MAX && skip[i][0] != NULL);
        size_t l = 0;
        for (; skip[i][l]; l++) {
            if (l >= SKIP_INDEXED_LEVELS) {
                continue;
            }
            if (l == cleared) {
                memset(ps->by_first[cleared++], 0, sizeof(*ps->by_first));
            }
            ps->by_first[l][(unsigned char)skip[i][l][0] % 64] |= (uint32_t)1 << i;
        }
        /* a list names a member to leave out, never a whole array's elements */
        CO_ASSERT(strcmp(skip[i][l - 1], CO_JSON_EVERY_ELEMENT) != 0);
        *live |= (uint32_t)1 << i;
    }
    ps->p = ps->start = data;
    ps->end = data + len;
    co_buf_init(&ps->str, SIZE_MAX);
    ps->skip = skip;
    return 0;
}

/* After the value: only whitespace may follow. */
static int end_document(parser *ps)
{
    char cb[16];
    skip_ws(ps);
    if (ps->p < ps->end) {
        return perr(ps, ps->p, "unexpected %s after the JSON value", describe(ps, ps->p, cb));
    }
    return 0;
}

static int parse_document(struct json_object **out,
                          const char *data,
                          size_t len,
                          size_t max,
                          const char *const *const *skip,
                          parser *ps)
{
    uint32_t live = 0;
    int rc = begin_document(ps, data, len, max, skip, &live);
    if (rc < 0) {
        return rc;
    }
    struct json_object *val = NULL;
    rc = parse_value(ps, &val, live);
    if (rc == 0 && (rc = end_document(ps)) < 0) {
        json_object_put(val);
    }
    co_buf_dispose(&ps->str);
    if (rc == STOPPED) {
        return ps->each_rc;
    }
    if (rc == 0) {
        *out = val;
    }
    return rc;
}

int co_json_parse_skip(struct json_object **out,
                       const char *data,
                       size_t len,
                       size_t max,
                       const char *const *const *skip)
{
    parser ps = {0};
    uint32_t by_first[SKIP_INDEXED_LEVELS][64];
    ps.by_first = by_first;
    return parse_document(out, data, len, max, skip, &ps);
}

int co_json_parse_each(struct json_object **out,
                       const char *data,
                       size_t len,
                       size_t max,
                       const char *const *const *skip,
                       const char *key,
                       co_json_element_cb cb,
                       void *payload)
{
    parser ps = {0};
    uint32_t by_first[SKIP_INDEXED_LEVELS][64];
    ps.by_first = by_first;
    ps.each_key = key;
    ps.each_cb = cb;
    ps.each_payload = payload;
    return parse_document(out, data, len, max, skip, &ps);
}

/* The first guess of a document's nodes and arena, from its size: a Kubernetes object has a
 * value every 20 to 30 bytes; the arena holds only strings with escapes. */
#define JD_NODES_PER_BYTE_SHIFT 4
#define JD_ARENA_PER_BYTE_SHIFT 4

int co_jdoc_parse(co_jdoc **out,
                  const char *data,
                  size_t len,
                  size_t max,
                  const char *const *const *skip)
{
    parser ps = {0};
    uint32_t live = 0;
    uint32_t by_first[SKIP_INDEXED_LEVELS][64];
    ps.by_first = by_first;
    int rc = begin_document(&ps, data, len, max, skip, &live);
    if (rc < 0) {
        return rc;
    }
    /* the copy of the input that plain strings stay in, then the arena's first block */
    size_t arena = (len >> JD_ARENA_PER_BYTE_SHIFT) + 64;
    co_jdoc *doc = co_xmalloc(sizeof(*doc) + len + 1 + arena);
    char *text = (char *)(doc + 1);
    memcpy(text, data, len);
    text[len] = '\0';
    doc->cap = (len >> JD_NODES_PER_BYTE_SHIFT) + 16;
    doc->nodes = co_xreallocarray(NULL, doc->cap, sizeof(*doc->nodes));
    doc->n = 0;
    doc->blocks = NULL;
    doc->at = text + len + 1;
    doc->left = arena;
    ps.doc = doc;
    ps.text = text;
    ps.p = ps.start = text;
    ps.end = text + len;
    rc = jd_value(&ps, live);
    if (rc == 0) {
        rc = end_document(&ps);
    }
    co_buf_dispose(&ps.str);
    if (rc < 0) {
        co_jdoc_free(doc);
        return rc;
    }
    *out = doc;
    return 0;
}

/* Appends the nodes of json-c value @p o (JSON null is NULL). */
static void jd_from_json(co_jdoc *doc, const struct json_object *o)
{
    struct json_object *v = (struct json_object *)o;
    size_t at;
    switch (json_object_get_type(v)) {
    case json_type_boolean:
        at = jd_push(doc, CO_JV_BOOL);
        doc->nodes[at].flags = json_object_get_boolean(v) ? CO_JV_TRUE : 0;
        return;
    case json_type_int: {
        int64_t i = 0;
        uint64_t u = 0;
        int is_unsigned = 0;
        co_json__integer(v, &i, &u, &is_unsigned);
        at = jd_push(doc, CO_JV_NUMBER);
        if (is_unsigned) {
            doc->nodes[at].flags = CO_JV_UINT;
            doc->nodes[at].as.u = u;
        } else {
            doc->nodes[at].flags = CO_JV_INT;
            doc->nodes[at].as.i = i;
        }
        return;
    }
    case json_type_double:
        at = jd_push(doc, CO_JV_NUMBER);
        doc->nodes[at].flags = CO_JV_DOUBLE;
        doc->nodes[at].as.d = json_object_get_double(v);
        return;
    case json_type_string: {
        size_t len = (size_t)json_object_get_string_len(v);
        const char *copy = jd_copy(doc, json_object_get_string(v), len);
        at = jd_push(doc, CO_JV_STRING);
        doc->nodes[at].len = (uint32_t)len;
        doc->nodes[at].as.s = copy;
        return;
    }
    case json_type_array: {
        size_t n = json_object_array_length(v);
        at = jd_push(doc, CO_JV_ARRAY);
        for (size_t i = 0; i < n; i++) {
            jd_from_json(doc, json_object_array_get_idx(v, i));
        }
        jd_close(doc, at, (uint32_t)n);
        return;
    }
    case json_type_object: {
        uint32_t members = 0;
        at = jd_push(doc, CO_JV_OBJECT);
        json_object_object_foreach (v, key, val) {
            const char *copy = jd_copy(doc, key, strlen(key));
            size_t k = jd_push(doc, CO_JV_STRING);
            doc->nodes[k].len = (uint32_t)strlen(copy);
            doc->nodes[k].as.s = copy;
            jd_from_json(doc, val);
            members++;
        }
        jd_close(doc, at, members);
        return;
    }
    case json_type_null:
    default:
        jd_push(doc, CO_JV_NULL);
        return;
    }
}

co_jdoc *co_jdoc_of_json(const struct json_object *obj)
{
    size_t arena = 1024;
    co_jdoc *doc = co_xmalloc(sizeof(*doc) + arena);
    doc->cap = 64;
    doc->nodes = co_xreallocarray(NULL, doc->cap, sizeof(*doc->nodes));
    doc->n = 0;
    doc->blocks = NULL;
    doc->at = (char *)(doc + 1);
    doc->left = arena;
    jd_from_json(doc, obj);
    return doc;
}

void co_jdoc_free(co_jdoc *doc)
{
    if (!doc) {
        return;
    }
    co_jdoc__block *b = doc->blocks;
    while (b) {
        co_jdoc__block *next = b->next;
        free(b);
        b = next;
    }
    free(doc->nodes);
    free(doc);
}

int co_json_parse_max(struct json_object **out, const char *data, size_t len, size_t max)
{
    return co_json_parse_skip(out, data, len, max, NULL);
}

int co_json_parse(struct json_object **out, const char *data, size_t len)
{
    return co_json_parse_max(out, data, len, CO_MAX_DOCUMENT);
}

/* ============================================================================================
 * Encoding
 * ========================================================================================== */

static const char lower_hex[] = "0123456789abcdef";

/* Bytes that need no escape are copied in runs, the common case being a string without any. */
int co_json_go_quote(co_buf *out, const char *s, size_t len, unsigned flags)
{
    int rc;
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0; /* start of bytes copied verbatim */
    if ((rc = co_buf_putc(out, '"')) < 0) {
        return rc;
    }
    size_t i = 0;
    while (i < len) {
        unsigned char c = u[i];
        const char *esc = NULL;
        char ubuf[7];
        size_t adv = 1;
        if (c < 0x80) {
            if (c >= 0x20 && c != '"' && c != '\\' &&
                ((flags & CO_JSON_NO_HTML_ESCAPE) || (c != '<' && c != '>' && c != '&'))) {
                i++;
                continue;
            }
            switch (c) {
            case '"':
                esc = "\\\"";
                break;
            case '\\':
                esc = "\\\\";
                break;
            case '\n':
                esc = "\\n";
                break;
            case '\r':
                esc = "\\r";
                break;
            case '\t':
                esc = "\\t";
                break;
            case '\b':
                esc = "\\b";
                break;
            case '\f':
                esc = "\\f";
                break;
            default:
                memcpy(ubuf, "\\u00", 4);
                ubuf[4] = lower_hex[c >> 4];
                ubuf[5] = lower_hex[c & 15];
                ubuf[6] = '\0';
                esc = ubuf;
            }
        } else {
            uint32_t cp;
            size_t n = co_utf8_decode(u + i, len - i, &cp);
            if (n == 0) {
                esc = "\\ufffd";
            } else if (cp == 0x2028 || cp == 0x2029) {
                esc = cp == 0x2028 ? "\\u2028" : "\\u2029";
                adv = n;
            } else {
                i += n;
                continue;
            }
        }
        if ((rc = co_buf_put(out, s + run, i - run)) < 0 || (rc = co_buf_puts(out, esc)) < 0) {
            return rc;
        }
        i += adv;
        run = i;
    }
    if ((rc = co_buf_put(out, s + run, len - run)) < 0) {
        return rc;
    }
    return co_buf_putc(out, '"');
}

static int indent(co_buf *b, int level)
{
    int rc = co_buf_putc(b, '\n');
    for (int i = 0; rc == 0 && i < level; i++) {
        rc = co_buf_put(b, "  ", 2);
    }
    return rc;
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const co_json__kv *)a)->key, ((const co_json__kv *)b)->key);
}

co_json__kv *co_json__members(const struct json_object *obj, int sorted, size_t *n)
{
    size_t len = (size_t)json_object_object_length(obj);
    co_json__kv *ms = co_xcalloc(len ? len : 1, sizeof(*ms));
    size_t k = 0;
    json_object_object_foreach ((struct json_object *)obj, key, val) {
        ms[k].key = key;
        ms[k].val = val;
        k++;
    }
    if (sorted) {
        qsort(ms, k, sizeof(*ms), kv_cmp);
    }
    *n = k;
    return ms;
}

static int encode_value(co_buf *b, const struct json_object *obj, unsigned flags, int level);

static int encode_object(co_buf *b, const struct json_object *obj, unsigned flags, int level)
{
    int pretty = (flags & CO_JSON_PRETTY) != 0;
    int rc;
    if (json_object_object_length(obj) == 0) {
        return co_buf_puts(b, "{}");
    }
    size_t k = 0;
    co_json__kv *ms = co_json__members(obj, (flags & CO_JSON_SORTED) != 0, &k);
    if ((rc = co_buf_putc(b, '{')) < 0) {
        goto done;
    }
    for (size_t i = 0; i < k; i++) {
        if (i > 0 && (rc = co_buf_putc(b, ',')) < 0) {
            goto done;
        }
        if (pretty && (rc = indent(b, level + 1)) < 0) {
            goto done;
        }
        if ((rc = co_json_go_quote(b, ms[i].key, strlen(ms[i].key), flags)) < 0 ||
            (rc = co_buf_puts(b, pretty ? ": " : ":")) < 0 ||
            (rc = encode_value(b, ms[i].val, flags, level + 1)) < 0) {
            goto done;
        }
    }
    if (pretty && (rc = indent(b, level)) < 0) {
        goto done;
    }
    rc = co_buf_putc(b, '}');
done:
    free(ms);
    return rc;
}

static int encode_array(co_buf *b, const struct json_object *obj, unsigned flags, int level)
{
    int pretty = (flags & CO_JSON_PRETTY) != 0;
    size_t n = json_object_array_length(obj);
    int rc;
    if (n == 0) {
        return co_buf_puts(b, "[]");
    }
    if ((rc = co_buf_putc(b, '[')) < 0) {
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && (rc = co_buf_putc(b, ',')) < 0) {
            return rc;
        }
        if (pretty && (rc = indent(b, level + 1)) < 0) {
            return rc;
        }
        if ((rc = encode_value(b, json_object_array_get_idx(obj, i), flags, level + 1)) < 0) {
            return rc;
        }
    }
    if (pretty && (rc = indent(b, level)) < 0) {
        return rc;
    }
    return co_buf_putc(b, ']');
}

static int encode_value(co_buf *b, const struct json_object *obj, unsigned flags, int level)
{
    char num[CO_JSON__NUMBER_MAX];
    switch (json_object_get_type(obj)) {
    case json_type_null:
        return co_buf_puts(b, "null");
    case json_type_boolean:
        return co_buf_puts(b, json_object_get_boolean(obj) ? "true" : "false");
    case json_type_int: {
        int64_t i = 0;
        uint64_t u = 0;
        int uns = 0;
        co_json__integer(obj, &i, &u, &uns);
        if (uns) {
            return co_buf_printf(b, "%llu", (unsigned long long)u);
        }
        return co_buf_printf(b, "%lld", (long long)i);
    }
    case json_type_double: {
        double d = json_object_get_double(obj);
        if (!isfinite(d)) {
            return co_error_set(CO_EINVALID, "json: unsupported value: %s",
                                isnan(d) ? "NaN" : (d > 0 ? "+Inf" : "-Inf"));
        }
        co_json__format_double(num, d, 'j', 64);
        return co_buf_puts(b, num);
    }
    case json_type_string:
        return co_json_go_quote(b, json_object_get_string((struct json_object *)obj),
                                (size_t)json_object_get_string_len(obj), flags);
    case json_type_object:
        return encode_object(b, obj, flags, level);
    case json_type_array:
        return encode_array(b, obj, flags, level);
    }
    return co_error_set(CO_EINVALID, "json: unknown value type");
}

int co_json_encode(co_buf *out, const struct json_object *obj, unsigned flags)
{
    size_t start = out->len;
    int rc = encode_value(out, obj, flags, 0);
    if (rc < 0 && rc != CO_ETOOBIG) {
        co_buf_truncate(out, start);
    }
    return rc;
}

char *co_json_dumps(const struct json_object *obj, unsigned flags)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    if (co_json_encode(&b, obj, flags) < 0) {
        co_buf_dispose(&b);
        return NULL;
    }
    return co_buf_take(&b, NULL);
}

const char *co_json_type_name(const struct json_object *obj)
{
    switch (json_object_get_type(obj)) {
    case json_type_null:
        return "null";
    case json_type_boolean:
        return "boolean";
    case json_type_int:
    case json_type_double:
        return "number";
    case json_type_string:
        return "string";
    case json_type_object:
        return "object";
    case json_type_array:
        return "array";
    }
    return "unknown";
}

size_t co_json_string_len(const struct json_object *obj)
{
    if (!json_object_is_type(obj, json_type_string)) {
        return 0;
    }
    return (size_t)json_object_get_string_len(obj);
}

/* ============================================================================================
 * Lookup and typed getters
 * ========================================================================================== */

int co_json__array_index(const char *key, size_t *out)
{
    if (!key[0] || (key[0] == '0' && key[1]) || strlen(key) > 18) {
        return -1;
    }
    size_t v = 0;
    for (const char *p = key; *p; p++) {
        if (*p < '0' || *p > '9') {
            return -1;
        }
        v = v * 10 + (size_t)(*p - '0');
    }
    *out = v;
    return 0;
}

/*
 * Steps from @p cur into the member or element named @p key. Returns 1 and sets @p next when
 * it exists (the value may be null), 0 when it does not, -1 when @p cur cannot be indexed.
 */
static int step(const struct json_object *cur, const char *key, struct json_object **next)
{
    if (json_object_is_type(cur, json_type_object)) {
        return json_object_object_get_ex(cur, key, next) ? 1 : 0;
    }
    if (json_object_is_type(cur, json_type_array)) {
        size_t idx;
        if (co_json__array_index(key, &idx) < 0 || idx >= json_object_array_length(cur)) {
            return 0;
        }
        *next = json_object_array_get_idx(cur, idx);
        return 1;
    }
    return -1;
}

struct json_object *co_json_getv(const struct json_object *obj, const char *const *keys)
{
    struct json_object *cur = (struct json_object *)obj;
    for (size_t i = 0; keys[i]; i++) {
        struct json_object *next = NULL;
        if (step(cur, keys[i], &next) != 1) {
            return NULL;
        }
        cur = next;
    }
    return cur;
}

/* Collects a NULL-terminated variadic key list into an array (the keys stay borrowed). */
static const char **collect_keys(va_list ap)
{
    size_t cap = 8, n = 0;
    const char **keys = co_xmalloc(cap * sizeof(*keys));
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (n + 1 >= cap) {
            cap *= 2;
            keys = co_xreallocarray(keys, cap, sizeof(*keys));
        }
        keys[n++] = k;
        if (!k) {
            return keys;
        }
    }
}

struct json_object *co_json_get(const struct json_object *obj, ...)
{
    va_list ap;
    va_start(ap, obj);
    const char **keys = collect_keys(ap);
    va_end(ap);
    struct json_object *res = co_json_getv(obj, keys);
    free(keys);
    return res;
}

/*
 * Members of an object compared one by one before the hash table is asked. Kubernetes objects
 * mostly have a handful of members, and comparing a few keys (most differ in the first byte)
 * costs less than hashing the key once; the validators look up every field their schema knows,
 * present or not, on every admission.
 */
#define LINEAR_LOOKUP_MAX 24

struct json_object *co_json__member(const struct json_object *obj, const char *key)
{
    /* NULL for anything but an object; json-c stores a JSON null as a NULL value */
    struct lh_table *t = obj ? json_object_get_object((json_object *)obj) : NULL;
    if (!t) {
        return NULL;
    }
    int n = 0;
    struct lh_entry *e = lh_table_head(t);
    for (; e && n < LINEAR_LOOKUP_MAX; e = lh_entry_next(e), n++) {
        const char *k = lh_entry_k(e);
        if (k[0] != key[0]) {
            continue;
        }
        /* keys are short: an inline comparison costs less than a call to strcmp */
        size_t i = 0;
        while (k[i] && k[i] == key[i]) {
            i++;
        }
        if (k[i] == key[i]) {
            return (json_object *)lh_entry_v(e);
        }
    }
    json_object *v = NULL;
    if (e && json_object_object_get_ex((json_object *)obj, key, &v)) {
        return v;
    }
    return NULL;
}

/* Walks members only, without collecting the keys as co_json_get() does: these accessors run
 * for every object a list or an informer hands over. */
static const char *str_at(const struct json_object *obj, va_list ap)
{
    struct json_object *cur = (struct json_object *)obj;
    for (const char *k = va_arg(ap, const char *); k; k = va_arg(ap, const char *)) {
        cur = co_json__member(cur, k);
        if (!cur) {
            return NULL;
        }
    }
    return json_object_is_type(cur, json_type_string) ? json_object_get_string(cur) : NULL;
}

const char *co_json_str(const struct json_object *obj, ...)
{
    va_list ap;
    va_start(ap, obj);
    const char *s = str_at(obj, ap);
    va_end(ap);
    return s;
}

const char *co_json_meta_name(const struct json_object *obj)
{
    return co_json_str(obj, "metadata", "name", NULL);
}

const char *co_json_meta_namespace(const struct json_object *obj)
{
    return co_json_str(obj, "metadata", "namespace", NULL);
}

const char *co_json_meta_label(const struct json_object *obj, const char *key)
{
    return co_json_str(obj, "metadata", "labels", key, NULL);
}

const char *co_json_meta_annotation(const struct json_object *obj, const char *key)
{
    return co_json_str(obj, "metadata", "annotations", key, NULL);
}

/* Appends the path keys[0..n) as "a.b[2].c" to @p b. */
static void
format_path(co_buf *b, const struct json_object *root, const char *const *keys, size_t n)
{
    const struct json_object *cur = root;
    for (size_t i = 0; i < n; i++) {
        int rc;
        if (json_object_is_type(cur, json_type_array)) {
            rc = co_buf_printf(b, "[%s]", keys[i]);
        } else {
            rc = co_buf_printf(b, "%s%s", b->len ? "." : "", keys[i]);
        }
        CO_ASSERT(rc == 0);
        struct json_object *next = NULL;
        cur = step(cur, keys[i], &next) == 1 ? next : NULL;
    }
}

/* Walks the key list for a typed getter: finds the value or sets an error naming the path. */
static int
lookup_typed(struct json_object **out, const struct json_object *root, const char *const *keys)
{
    const struct json_object *cur = root;
    size_t i = 0;
    co_buf path = CO_BUF_INIT(SIZE_MAX);
    int rc = 0;
    for (; keys[i]; i++) {
        struct json_object *next = NULL;
        int s = step(cur, keys[i], &next);
        if (s < 0) {
            format_path(&path, root, keys, i);
            rc = co_error_set(CO_EINVALID, "%s: expected %s, got %s",
                              path.len ? co_buf_cstr(&path) : "(document)",
                              keys[i][0] >= '0' && keys[i][0] <= '9' ? "object or array" : "object",
                              co_json_type_name(cur));
            goto done;
        }
        if (s == 0 || (next == NULL && keys[i + 1])) {
            format_path(&path, root, keys, i + 1);
            rc = co_error_set(CO_ENOTFOUND, "%s: not found", co_buf_cstr(&path));
            goto done;
        }
        cur = next;
    }
    if (!cur) {
        format_path(&path, root, keys, i);
        rc = co_error_set(CO_ENOTFOUND, "%s: not found",
                          path.len ? co_buf_cstr(&path) : "(document)");
        goto done;
    }
    *out = (struct json_object *)cur;
done:
    co_buf_dispose(&path);
    return rc;
}

static int type_error(const struct json_object *root,
                      const char *const *keys,
                      const char *want,
                      const struct json_object *got)
{
    co_buf path = CO_BUF_INIT(SIZE_MAX);
    size_t n = 0;
    while (keys[n]) {
        n++;
    }
    format_path(&path, root, keys, n);
    char extra[CO_JSON__NUMBER_MAX + 4] = "";
    if (json_object_is_type(got, json_type_double)) {
        double d = json_object_get_double(got);
        if (isfinite(d)) {
            extra[0] = ' ';
            co_json__format_double(extra + 1, d, 'j', 64);
        }
    }
    int rc = co_error_set(CO_EINVALID, "%s: expected %s, got %s%s",
                          path.len ? co_buf_cstr(&path) : "(document)", want,
                          co_json_type_name(got), extra);
    co_buf_dispose(&path);
    return rc;
}

#define GET_KEYS(last)                                                                             \
    va_list ap;                                                                                    \
    va_start(ap, last);                                                                            \
    const char **keys = collect_keys(ap);                                                          \
    va_end(ap)

int co_json_get_string(const char **out, const struct json_object *obj, ...)
{
    GET_KEYS(obj);
    struct json_object *v = NULL;
    int rc = lookup_typed(&v, obj, keys);
    if (rc == 0) {
        if (json_object_is_type(v, json_type_string)) {
            *out = json_object_get_string(v);
        } else {
            rc = type_error(obj, keys, "string", v);
        }
    }
    free(keys);
    return rc;
}

int co_json_get_int64(int64_t *out, const struct json_object *obj, ...)
{
    GET_KEYS(obj);
    struct json_object *v = NULL;
    int rc = lookup_typed(&v, obj, keys);
    if (rc == 0) {
        int64_t i = 0;
        uint64_t u = 0;
        int uns = 0;
        if (co_json__integer(v, &i, &u, &uns)) {
            if (uns) {
                rc = type_error(obj, keys, "integer in the int64 range", v);
            } else {
                *out = i;
            }
        } else if (json_object_is_type(v, json_type_double)) {
            double d = json_object_get_double(v);
            if (isfinite(d) && d == floor(d) && d >= -9223372036854775808.0 &&
                d < 9223372036854775808.0) {
                *out = (int64_t)d;
            } else {
                rc = type_error(obj, keys, "integer", v);
            }
        } else {
            rc = type_error(obj, keys, "integer", v);
        }
    }
    free(keys);
    return rc;
}

int co_json_get_double(double *out, const struct json_object *obj, ...)
{
    GET_KEYS(obj);
    struct json_object *v = NULL;
    int rc = lookup_typed(&v, obj, keys);
    if (rc == 0) {
        int64_t i = 0;
        uint64_t u = 0;
        int uns = 0;
        if (co_json__integer(v, &i, &u, &uns)) {
            *out = uns ? (double)u : (double)i;
        } else if (json_object_is_type(v, json_type_double)) {
            *out = json_object_get_double(v);
        } else {
            rc = type_error(obj, keys, "number", v);
        }
    }
    free(keys);
    return rc;
}

int co_json_get_bool(bool *out, const struct json_object *obj, ...)
{
    GET_KEYS(obj);
    struct json_object *v = NULL;
    int rc = lookup_typed(&v, obj, keys);
    if (rc == 0) {
        if (json_object_is_type(v, json_type_boolean)) {
            *out = json_object_get_boolean(v) != 0;
        } else {
            rc = type_error(obj, keys, "boolean", v);
        }
    }
    free(keys);
    return rc;
}

static int get_container(struct json_object **out,
                         const struct json_object *obj,
                         const char **keys,
                         json_type type)
{
    const char *want = type == json_type_object ? "object" : "array";
    struct json_object *v = NULL;
    int rc = lookup_typed(&v, obj, keys);
    if (rc == 0) {
        if (json_object_is_type(v, type)) {
            *out = v;
        } else {
            rc = type_error(obj, keys, want, v);
        }
    }
    return rc;
}

int co_json_get_object(struct json_object **out, const struct json_object *obj, ...)
{
    GET_KEYS(obj);
    int rc = get_container(out, obj, keys, json_type_object);
    free(keys);
    return rc;
}

int co_json_get_array(struct json_object **out, const struct json_object *obj, ...)
{
    GET_KEYS(obj);
    int rc = get_container(out, obj, keys, json_type_array);
    free(keys);
    return rc;
}

/* ============================================================================================
 * JSON Pointer
 * ========================================================================================== */

/*
 * Reads the next reference token of a JSON Pointer at *p (which points at a '/') into @p token,
 * unescaping ~0 and ~1, and advances *p. Returns 0 or CO_EINVALID.
 */
int co_json__pointer_next(const char **p, co_buf *token)
{
    const char *s = *p;
    CO_ASSERT(*s == '/');
    s++;
    co_buf_reset(token);
    int rc = co_buf_puts(token, "");
    for (; rc == 0 && *s && *s != '/'; s++) {
        if (*s == '~') {
            if (s[1] == '0') {
                rc = co_buf_putc(token, '~');
            } else if (s[1] == '1') {
                rc = co_buf_putc(token, '/');
            } else {
                return co_error_set(CO_EINVALID, "invalid escape '~%c' in JSON pointer",
                                    s[1] ? s[1] : ' ');
            }
            s++;
        } else {
            rc = co_buf_putc(token, *s);
        }
    }
    *p = s;
    return rc;
}

int co_json_pointer_get(struct json_object **out,
                        const struct json_object *obj,
                        const char *pointer)
{
    if (pointer[0] != '\0' && pointer[0] != '/') {
        return co_error_set(CO_EINVALID, "invalid JSON pointer \"%s\": must start with '/'",
                            pointer);
    }
    co_buf tok = CO_BUF_INIT(SIZE_MAX);
    const char *p = pointer;
    struct json_object *cur = (struct json_object *)obj;
    int rc = 0;
    while (*p) {
        if ((rc = co_json__pointer_next(&p, &tok)) < 0) {
            goto done;
        }
        struct json_object *next = NULL;
        if (step(cur, co_buf_cstr(&tok), &next) != 1) {
            rc = co_error_set(CO_ENOTFOUND, "JSON pointer \"%s\": not found", pointer);
            goto done;
        }
        cur = next;
    }
    *out = cur;
done:
    co_buf_dispose(&tok);
    return rc;
}

/* ============================================================================================
 * Editing
 * ========================================================================================== */

int co_json_setv(struct json_object *root, struct json_object *value, const char *const *keys)
{
    struct json_object *cur = root;
    int rc = 0;
    if (!keys[0] || !json_object_is_type(root, json_type_object)) {
        rc = co_error_set(CO_EINVALID, "set: %s",
                          keys[0] ? "the root is not an object" : "empty key list");
        goto fail;
    }
    for (size_t i = 0; keys[i]; i++) {
        int last = keys[i + 1] == NULL;
        if (json_object_is_type(cur, json_type_array)) {
            size_t idx;
            if (co_json__array_index(keys[i], &idx) < 0 || idx >= json_object_array_length(cur)) {
                co_buf path = CO_BUF_INIT(SIZE_MAX);
                format_path(&path, root, keys, i + 1);
                rc = co_error_set(CO_EINVALID, "%s: no such array element", co_buf_cstr(&path));
                co_buf_dispose(&path);
                goto fail;
            }
            if (last) {
                json_object_array_put_idx(cur, idx, value);
                return 0;
            }
            struct json_object *next = json_object_array_get_idx(cur, idx);
            if (!next) {
                next = json_object_new_object();
                json_object_array_put_idx(cur, idx, next);
            }
            cur = next;
            continue;
        }
        if (!json_object_is_type(cur, json_type_object)) {
            co_buf path = CO_BUF_INIT(SIZE_MAX);
            format_path(&path, root, keys, i);
            rc = co_error_set(CO_EINVALID, "%s: expected object, got %s", co_buf_cstr(&path),
                              co_json_type_name(cur));
            co_buf_dispose(&path);
            goto fail;
        }
        if (last) {
            json_object_object_add(cur, keys[i], value);
            return 0;
        }
        struct json_object *next = NULL;
        if (!json_object_object_get_ex(cur, keys[i], &next) || next == NULL) {
            next = json_object_new_object();
            json_object_object_add(cur, keys[i], next);
        }
        cur = next;
    }
    CO_ASSERT(0);
fail:
    json_object_put(value);
    return rc;
}

int co_json_set(struct json_object *root, struct json_object *value, ...)
{
    GET_KEYS(value);
    int rc = co_json_setv(root, value, keys);
    free(keys);
    return rc;
}

int co_json_delete(struct json_object *root, ...)
{
    GET_KEYS(root);
    size_t n = 0;
    while (keys[n]) {
        n++;
    }
    int rc = CO_ENOTFOUND;
    struct json_object *parent = NULL;
    if (n > 0) {
        const char *last = keys[n - 1];
        keys[n - 1] = NULL;
        parent = co_json_getv(root, keys);
        keys[n - 1] = last;
        if (json_object_is_type(parent, json_type_object)) {
            if (json_object_object_get_ex(parent, last, NULL)) {
                json_object_object_del(parent, last);
                rc = 0;
            }
        } else if (json_object_is_type(parent, json_type_array)) {
            size_t idx;
            if (co_json__array_index(last, &idx) == 0 && idx < json_object_array_length(parent)) {
                json_object_array_del_idx(parent, idx, 1);
                rc = 0;
            }
        }
    }
    if (rc != 0) {
        co_buf path = CO_BUF_INIT(SIZE_MAX);
        format_path(&path, root, keys, n);
        rc = co_error_set(CO_ENOTFOUND, "%s: not found", co_buf_cstr(&path));
        co_buf_dispose(&path);
    }
    free(keys);
    return rc;
}

/* ============================================================================================
 * Copy, equality, merge
 * ========================================================================================== */

struct json_object *co_json_copy(const struct json_object *obj)
{
    switch (json_object_get_type(obj)) {
    case json_type_null:
        return NULL;
    case json_type_boolean:
        return json_object_new_boolean(json_object_get_boolean(obj));
    case json_type_int: {
        int64_t i = 0;
        uint64_t u = 0;
        int uns = 0;
        co_json__integer(obj, &i, &u, &uns);
        return uns ? json_object_new_uint64(u) : json_object_new_int64(i);
    }
    case json_type_double:
        return json_object_new_double(json_object_get_double(obj));
    case json_type_string:
        return json_object_new_string_len(json_object_get_string((struct json_object *)obj),
                                          json_object_get_string_len(obj));
    case json_type_object: {
        struct json_object *res = json_object_new_object();
        json_object_object_foreach ((struct json_object *)obj, key, val) {
            json_object_object_add(res, key, co_json_copy(val));
        }
        return res;
    }
    case json_type_array: {
        size_t n = json_object_array_length(obj);
        struct json_object *res = json_object_new_array_ext((int)n);
        for (size_t i = 0; i < n; i++) {
            json_object_array_add(res, co_json_copy(json_object_array_get_idx(obj, i)));
        }
        return res;
    }
    }
    return NULL;
}

static int number_equal(const struct json_object *a, const struct json_object *b)
{
    int64_t ai = 0, bi = 0;
    uint64_t au = 0, bu = 0;
    int aun = 0, bun = 0;
    int aint = co_json__integer(a, &ai, &au, &aun);
    int bint = co_json__integer(b, &bi, &bu, &bun);
    if (aint && bint) {
        return aun == bun && (aun ? au == bu : ai == bi);
    }
    if (!aint && !bint) {
        return json_object_get_double(a) == json_object_get_double(b);
    }
    /* one integer, one double: equal when the double holds exactly that integer */
    double d = aint ? json_object_get_double(b) : json_object_get_double(a);
    int uns = aint ? aun : bun;
    int64_t i = aint ? ai : bi;
    uint64_t u = aint ? au : bu;
    if (!isfinite(d) || d != floor(d)) {
        return 0;
    }
    if (uns) {
        return d >= 9223372036854775808.0 && d < 18446744073709551616.0 && (uint64_t)d == u;
    }
    return d >= -9223372036854775808.0 && d < 9223372036854775808.0 && (int64_t)d == i;
}

bool co_json_equal(const struct json_object *a, const struct json_object *b)
{
    json_type ta = json_object_get_type(a), tb = json_object_get_type(b);
    int anum = ta == json_type_int || ta == json_type_double;
    int bnum = tb == json_type_int || tb == json_type_double;
    if (anum && bnum) {
        return number_equal(a, b);
    }
    if (ta != tb) {
        return false;
    }
    switch (ta) {
    case json_type_null:
        return true;
    case json_type_boolean:
        return !json_object_get_boolean(a) == !json_object_get_boolean(b);
    case json_type_string: {
        int la = json_object_get_string_len(a), lb = json_object_get_string_len(b);
        return la == lb && memcmp(json_object_get_string((struct json_object *)a),
                                  json_object_get_string((struct json_object *)b), (size_t)la) == 0;
    }
    case json_type_object: {
        if (json_object_object_length(a) != json_object_object_length(b)) {
            return false;
        }
        json_object_object_foreach ((struct json_object *)a, key, val) {
            struct json_object *other = NULL;
            if (!json_object_object_get_ex(b, key, &other) || !co_json_equal(val, other)) {
                return false;
            }
        }
        return true;
    }
    case json_type_array: {
        size_t n = json_object_array_length(a);
        if (n != json_object_array_length(b)) {
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            if (!co_json_equal(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i))) {
                return false;
            }
        }
        return true;
    }
    default:
        return false;
    }
}

void co_json_merge(struct json_object *dst, const struct json_object *src)
{
    CO_ASSERT(json_object_is_type(dst, json_type_object));
    CO_ASSERT(json_object_is_type(src, json_type_object));
    json_object_object_foreach ((struct json_object *)src, key, val) {
        struct json_object *cur = NULL;
        if (json_object_is_type(val, json_type_object) &&
            json_object_object_get_ex(dst, key, &cur) &&
            json_object_is_type(cur, json_type_object)) {
            co_json_merge(cur, val);
        } else {
            json_object_object_add(dst, key, co_json_copy(val));
        }
    }
}
