/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sprig's string functions (strings.go and the goutils/xstrings helpers it wraps): Go's
 * strings package semantics byte for byte, including what happens to invalid UTF-8 and the
 * runtime panics of out-of-range arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/utf8.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "sprig.h"

#define OUT_INIT CO_BUF_INIT(tpl_out_cap())

static const tv_str *S(const tv *v)
{
    return v->u.s;
}

/* Appends a rune as UTF-8 (Go's WriteRune: invalid runes become U+FFFD). */
static int put_rune(co_buf *b, int32_t r)
{
    char tmp[4];
    size_t n = co_utf8_encode(tmp, r);
    return co_buf_put(b, tmp, n);
}

typedef int32_t (*rune_map)(int32_t r, void *ctx);

/* strings.Map with a mapping that never drops runes: invalid bytes come out as U+FFFD. */
static int map_runes(co_buf *b, const tv_str *s, rune_map fn, void *ctx)
{
    int rc = 0;
    for (size_t i = 0; i < s->len && rc == 0;) {
        size_t w;
        int32_t r = co_utf8_decode_rune(s->s + i, s->len - i, &w);
        int32_t m = fn(r, ctx);
        if (m == r && !(r == 0xFFFD && w == 1)) {
            rc = co_buf_put(b, s->s + i, w);
        } else {
            rc = put_rune(b, m);
        }
        i += w;
    }
    return rc;
}

static int32_t map_upper(int32_t r, void *ctx)
{
    (void)ctx;
    return tpl_to_upper(r);
}

static int32_t map_lower(int32_t r, void *ctx)
{
    (void)ctx;
    return tpl_to_lower(r);
}

static bool is_separator(int32_t r)
{
    if (r <= 0x7F) {
        return !((r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') ||
                 r == '_');
    }
    if (tpl_is_letter(r) || tpl_is_digit(r)) {
        return false;
    }
    return tpl_is_space(r);
}

static int32_t map_title(int32_t r, void *ctx)
{
    int32_t *prev = ctx;
    bool sep = is_separator(*prev);
    *prev = r;
    return sep ? tpl_to_title(r) : r;
}

static int fn_upper(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = OUT_INIT;
    return sp_ret_buf(x, ret, &b, map_runes(&b, S(&a[0]), map_upper, NULL));
}

static int fn_lower(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = OUT_INIT;
    return sp_ret_buf(x, ret, &b, map_runes(&b, S(&a[0]), map_lower, NULL));
}

static int fn_title(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int32_t prev = ' ';
    co_buf b = OUT_INIT;
    return sp_ret_buf(x, ret, &b, map_runes(&b, S(&a[0]), map_title, &prev));
}

/* Decodes a string into runes as []rune(s) does (invalid bytes: U+FFFD). */
static int32_t *to_runes(tpl_x *x, const tv_str *s, size_t *n)
{
    int32_t *r = tpl_alloc(x, (s->len + 1) * sizeof(int32_t));
    size_t k = 0;
    for (size_t i = 0; i < s->len;) {
        size_t w;
        r[k++] = co_utf8_decode_rune(s->s + i, s->len - i, &w);
        i += w;
    }
    *n = k;
    return r;
}

static int from_runes(tpl_x *x, tv *ret, const int32_t *r, size_t n)
{
    co_buf b = OUT_INIT;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = put_rune(&b, r[i]);
    }
    return sp_ret_buf(x, ret, &b, rc);
}

static int fn_untitle(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (S(&a[0])->len == 0) {
        *ret = a[0];
        return 0;
    }
    size_t nr;
    int32_t *r = to_runes(x, S(&a[0]), &nr);
    bool next = true;
    for (size_t i = 0; i < nr; i++) {
        if (tpl_is_space(r[i])) {
            next = true;
        } else if (next) {
            r[i] = tpl_to_lower(r[i]);
            next = false;
        }
    }
    return from_runes(x, ret, r, nr);
}

static bool is_title_case(int32_t r)
{
    static const int32_t lt[][2] = {
        {0x01C5, 0x01C5}, {0x01C8, 0x01C8}, {0x01CB, 0x01CB}, {0x01F2, 0x01F2}, {0x1F88, 0x1F8F},
        {0x1F98, 0x1F9F}, {0x1FA8, 0x1FAF}, {0x1FBC, 0x1FBC}, {0x1FCC, 0x1FCC}, {0x1FFC, 0x1FFC}};
    for (size_t i = 0; i < CO_ARRAY_SIZE(lt); i++) {
        if (r >= lt[i][0] && r <= lt[i][1]) {
            return true;
        }
    }
    return false;
}

static int fn_swapcase(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (S(&a[0])->len == 0) {
        *ret = a[0];
        return 0;
    }
    size_t nr;
    int32_t *r = to_runes(x, S(&a[0]), &nr);
    bool ws = true;
    for (size_t i = 0; i < nr; i++) {
        int32_t c = r[i];
        if (tpl_is_upper(c) || is_title_case(c)) {
            r[i] = tpl_to_lower(c);
            ws = false;
        } else if (tpl_is_lower(c)) {
            r[i] = ws ? tpl_to_title(c) : tpl_to_upper(c);
            ws = false;
        } else {
            ws = tpl_is_space(c);
        }
    }
    return from_runes(x, ret, r, nr);
}

/* strings.TrimSpace */
static void trim_space(const char **s, size_t *len)
{
    const char *p = *s;
    size_t n = *len;
    while (n > 0) {
        size_t w;
        int32_t r = co_utf8_decode_rune(p, n, &w);
        if (!tpl_is_space(r)) {
            break;
        }
        p += w;
        n -= w;
    }
    while (n > 0) {
        /* find the start of the last rune */
        size_t k = n - 1;
        while (k > 0 && n - k < 4 && ((unsigned char)p[k] & 0xC0) == 0x80) {
            k--;
        }
        size_t w;
        int32_t r = co_utf8_decode_rune(p + k, n - k, &w);
        if (k + w != n) {
            k = n - 1;
            r = 0xFFFD;
        }
        if (!tpl_is_space(r)) {
            break;
        }
        n = k;
    }
    *s = p;
    *len = n;
}

static int fn_trim(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const char *p = S(&a[0])->s;
    size_t len = S(&a[0])->len;
    trim_space(&p, &len);
    *ret = tv_string(x, p, len);
    return 0;
}

static bool in_cutset(const tv_str *cut, int32_t r)
{
    for (size_t i = 0; i < cut->len;) {
        size_t w;
        int32_t c = co_utf8_decode_rune(cut->s + i, cut->len - i, &w);
        if (c == r) {
            return true;
        }
        i += w;
    }
    return false;
}

/* trimAll CUTSET S: strings.Trim(S, CUTSET) */
static int fn_trim_all(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *cut = S(&a[0]);
    const char *p = S(&a[1])->s;
    size_t len = S(&a[1])->len;
    if (len == 0 || cut->len == 0) {
        *ret = a[1];
        return 0;
    }
    while (len > 0) {
        size_t w;
        int32_t r = co_utf8_decode_rune(p, len, &w);
        if (!in_cutset(cut, r)) {
            break;
        }
        p += w;
        len -= w;
    }
    while (len > 0) {
        size_t k = len - 1;
        while (k > 0 && len - k < 4 && ((unsigned char)p[k] & 0xC0) == 0x80) {
            k--;
        }
        size_t w;
        int32_t r = co_utf8_decode_rune(p + k, len - k, &w);
        if (k + w != len) {
            k = len - 1;
            r = 0xFFFD;
        }
        if (!in_cutset(cut, r)) {
            break;
        }
        len = k;
    }
    *ret = tv_string(x, p, len);
    return 0;
}

static int fn_trim_suffix(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *suf = S(&a[0]);
    const tv_str *s = S(&a[1]);
    if (s->len >= suf->len && memcmp(s->s + s->len - suf->len, suf->s, suf->len) == 0) {
        *ret = tv_string(x, s->s, s->len - suf->len);
    } else {
        *ret = a[1];
    }
    return 0;
}

static int fn_trim_prefix(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *pre = S(&a[0]);
    const tv_str *s = S(&a[1]);
    if (s->len >= pre->len && memcmp(s->s, pre->s, pre->len) == 0) {
        *ret = tv_string(x, s->s + pre->len, s->len - pre->len);
    } else {
        *ret = a[1];
    }
    return 0;
}

static bool byte_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x85 || c == 0xA0;
}

/* goutils.DeleteWhiteSpace works on bytes, writing each kept byte as a rune. */
static int fn_nospace(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *s = S(&a[0]);
    size_t kept = 0;
    for (size_t i = 0; i < s->len; i++) {
        kept += !byte_space((unsigned char)s->s[i]);
    }
    if (kept == s->len) {
        *ret = a[0];
        return 0;
    }
    co_buf b = OUT_INIT;
    int rc = 0;
    for (size_t i = 0; i < s->len && rc == 0; i++) {
        unsigned char c = (unsigned char)s->s[i];
        if (!byte_space(c)) {
            rc = put_rune(&b, c);
        }
    }
    return sp_ret_buf(x, ret, &b, rc);
}

static int fn_initials(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *s = S(&a[0]);
    co_buf b = OUT_INIT;
    int rc = 0;
    bool gap = true;
    for (size_t i = 0; i < s->len && rc == 0; i++) {
        unsigned char c = (unsigned char)s->s[i];
        if (byte_space(c)) {
            gap = true;
        } else if (gap) {
            rc = put_rune(&b, c);
            gap = false;
        }
    }
    return sp_ret_buf(x, ret, &b, rc);
}

static int fn_substr(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t start = a[0].u.i;
    int64_t end = a[1].u.i;
    const tv_str *s = S(&a[2]);
    int64_t len = (int64_t)s->len;
    if (start < 0) {
        if (end < 0 || end > len) {
            return sp_panic_slice(x, 0, end, len, false, true);
        }
        *ret = tv_string(x, s->s, (size_t)end);
        return 0;
    }
    if (end < 0 || end > len) {
        if (start > len) {
            return sp_panic_slice(x, start, len, len, true, true);
        }
        *ret = tv_string(x, s->s + start, (size_t)(len - start));
        return 0;
    }
    if (start > end) {
        return sp_panic_slice(x, start, end, len, true, true);
    }
    *ret = tv_string(x, s->s + start, (size_t)(end - start));
    return 0;
}

/* strings.Repeat with Go's panics; the result is capped like any output. */
static int repeat(tpl_x *x, co_buf *b, const tv_str *s, int64_t count)
{
    if (count < 0) {
        return tpl_fail(x, "strings: negative Repeat count");
    }
    if (s->len > 0 && (uint64_t)count > (uint64_t)(b->max - b->len) / s->len) {
        return tpl_fail_out(x, b);
    }
    for (int64_t i = 0; i < count; i++) {
        if (co_buf_put(b, s->s, s->len) < 0) {
            return tpl_fail_out(x, b);
        }
    }
    return 0;
}

static int fn_repeat(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = OUT_INIT;
    if (repeat(x, &b, S(&a[1]), a[0].u.i) < 0) {
        co_buf_dispose(&b);
        return -1;
    }
    *ret = tv_string_take(x, &b);
    return 0;
}

static int fn_trunc(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t c = a[0].u.i;
    const tv_str *s = S(&a[1]);
    int64_t len = (int64_t)s->len;
    if (c < 0 && len + c > 0) {
        *ret = tv_string(x, s->s + len + c, (size_t)(-c));
    } else if (c >= 0 && len > c) {
        *ret = tv_string(x, s->s, (size_t)c);
    } else {
        *ret = a[1];
    }
    return 0;
}

/* goutils.AbbreviateFull; *err set for the widths it refuses. */
static int abbreviate(tpl_x *x, tv *ret, const tv_str *s, int64_t offset, int64_t width)
{
    int64_t len = (int64_t)s->len;
    if (len == 0 || width < 4) {
        *ret = tv_string(x, "", 0);
        return 0;
    }
    if (len <= width) {
        *ret = tv_string(x, s->s, s->len);
        return 0;
    }
    if (offset > len) {
        offset = len;
    }
    if (len - offset < width - 3) {
        offset = len - (width - 3);
    }
    co_buf b = OUT_INIT;
    int rc = 0;
    if (offset <= 4) {
        rc = co_buf_put(&b, s->s, (size_t)(width - 3));
        rc = rc < 0 ? rc : co_buf_puts(&b, "...");
        return sp_ret_buf(x, ret, &b, rc);
    }
    if (width < 7) {
        *ret = tv_string(x, "", 0);
        co_buf_dispose(&b);
        return 0;
    }
    rc = co_buf_puts(&b, "...");
    if (offset + width - 3 < len) {
        tv inner;
        tv_str *rest = tpl_alloc(x, sizeof(*rest) + (size_t)(len - offset) + 1);
        rest->len = (size_t)(len - offset);
        memcpy(rest->s, s->s + offset, rest->len);
        rest->s[rest->len] = '\0';
        tpl_ignore(abbreviate(x, &inner, rest, 0, width - 3));
        rc = rc < 0 ? rc : co_buf_put(&b, inner.u.s->s, inner.u.s->len);
    } else {
        rc = rc < 0 ? rc : co_buf_put(&b, s->s + len - (width - 3), (size_t)(width - 3));
    }
    return sp_ret_buf(x, ret, &b, rc);
}

static int fn_abbrev(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (a[0].u.i < 4) {
        *ret = a[1];
        return 0;
    }
    return abbreviate(x, ret, S(&a[1]), 0, a[0].u.i);
}

static int fn_abbrevboth(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t left = a[0].u.i;
    int64_t right = a[1].u.i;
    if (right < 4 || (left > 0 && right < 7)) {
        *ret = a[2];
        return 0;
    }
    return abbreviate(x, ret, S(&a[2]), left, right);
}

static bool contains(const tv_str *s, const tv_str *sub)
{
    if (sub->len == 0) {
        return true;
    }
    return s->len >= sub->len && memmem(s->s, s->len, sub->s, sub->len) != NULL;
}

static int fn_contains(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = tv_bool(contains(S(&a[1]), S(&a[0])));
    return 0;
}

static int fn_has_prefix(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    const tv_str *p = S(&a[0]);
    const tv_str *s = S(&a[1]);
    *ret = tv_bool(s->len >= p->len && memcmp(s->s, p->s, p->len) == 0);
    return 0;
}

static int fn_has_suffix(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    const tv_str *p = S(&a[0]);
    const tv_str *s = S(&a[1]);
    *ret = tv_bool(s->len >= p->len && memcmp(s->s + s->len - p->len, p->s, p->len) == 0);
    return 0;
}

static int fn_quote(tpl_x *x, tv *ret, tv *a, size_t n)
{
    co_buf b = OUT_INIT;
    co_buf tmp = OUT_INIT;
    int rc = 0;
    bool first = true;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (sp_is_nil(&a[i])) {
            continue;
        }
        if (!first) {
            rc = co_buf_putc(&b, ' ');
        }
        first = false;
        co_buf_reset(&tmp);
        rc = rc < 0 ? rc : sp_strval(x, &tmp, &a[i]);
        rc = rc < 0 ? rc : tpl_quote(&b, tmp.ptr ? tmp.ptr : "", tmp.len, false);
    }
    co_buf_dispose(&tmp);
    return sp_ret_buf(x, ret, &b, rc);
}

static int fn_squote(tpl_x *x, tv *ret, tv *a, size_t n)
{
    co_buf b = OUT_INIT;
    int rc = 0;
    bool first = true;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (sp_is_nil(&a[i])) {
            continue;
        }
        if (!first) {
            rc = co_buf_putc(&b, ' ');
        }
        first = false;
        rc = rc < 0 ? rc : co_buf_putc(&b, '\'');
        rc = rc < 0 ? rc : tpl_print_value(x, &b, &a[i]);
        rc = rc < 0 ? rc : co_buf_putc(&b, '\'');
    }
    return sp_ret_buf(x, ret, &b, rc);
}

static int fn_cat(tpl_x *x, tv *ret, tv *a, size_t n)
{
    co_buf b = OUT_INIT;
    int rc = 0;
    bool first = true;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (sp_is_nil(&a[i])) {
            continue;
        }
        if (!first) {
            rc = co_buf_putc(&b, ' ');
        }
        first = false;
        rc = rc < 0 ? rc : tpl_print_value(x, &b, &a[i]);
    }
    return sp_ret_buf(x, ret, &b, rc);
}

static int indent(tpl_x *x, tv *ret, int64_t spaces, const tv_str *s, bool newline)
{
    co_buf pad = CO_BUF_INIT(tpl_out_cap());
    static const tv_str space = {1, " "};
    if (repeat(x, &pad, &space, spaces) < 0) {
        co_buf_dispose(&pad);
        return -1;
    }
    co_buf b = OUT_INIT;
    int rc = newline ? co_buf_putc(&b, '\n') : 0;
    const char *p = pad.ptr ? pad.ptr : "";
    rc = rc < 0 ? rc : co_buf_put(&b, p, pad.len);
    size_t start = 0;
    for (size_t i = 0; i < s->len && rc == 0; i++) {
        if (s->s[i] == '\n') {
            rc = co_buf_put(&b, s->s + start, i + 1 - start);
            rc = rc < 0 ? rc : co_buf_put(&b, p, pad.len);
            start = i + 1;
        }
    }
    rc = rc < 0 ? rc : co_buf_put(&b, s->s + start, s->len - start);
    co_buf_dispose(&pad);
    return sp_ret_buf(x, ret, &b, rc);
}

static int fn_indent(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return indent(x, ret, a[0].u.i, S(&a[1]), false);
}

static int fn_nindent(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return indent(x, ret, a[0].u.i, S(&a[1]), true);
}

/* strings.Replace(src, old, new, -1) */
static int replace_all(co_buf *b, const tv_str *src, const tv_str *old, const tv_str *nw)
{
    int rc = 0;
    if (old->len == 0) {
        rc = co_buf_put(b, nw->s, nw->len);
        for (size_t i = 0; i < src->len && rc == 0;) {
            size_t w;
            tpl_ignore(co_utf8_decode_rune(src->s + i, src->len - i, &w));
            rc = co_buf_put(b, src->s + i, w);
            rc = rc < 0 ? rc : co_buf_put(b, nw->s, nw->len);
            i += w;
        }
        return rc;
    }
    size_t i = 0;
    while (rc == 0) {
        const char *hit = i <= src->len ? memmem(src->s + i, src->len - i, old->s, old->len) : NULL;
        if (!hit) {
            break;
        }
        size_t at = (size_t)(hit - src->s);
        rc = co_buf_put(b, src->s + i, at - i);
        rc = rc < 0 ? rc : co_buf_put(b, nw->s, nw->len);
        i = at + old->len;
    }
    return rc < 0 ? rc : co_buf_put(b, src->s + i, src->len - i);
}

static int fn_replace(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = OUT_INIT;
    return sp_ret_buf(x, ret, &b, replace_all(&b, S(&a[2]), S(&a[0]), S(&a[1])));
}

static int fn_plural(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = a[2].u.i == 1 ? a[0] : a[1];
    return 0;
}

static int fn_to_string(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = OUT_INIT;
    return sp_ret_buf(x, ret, &b, sp_strval(x, &b, &a[0]));
}

/* strings.SplitN(s, sep, limit); limit < 0: all. The parts in a []string; -1 when they
 * would not fit in the budget (@p extra: bytes the caller adds per part). */
static int
split_n(tpl_x *x, tv *out, const tv_str *s, const tv_str *sep, int64_t limit, size_t extra)
{
    if (limit == 0) {
        *out = tv_nil(&T_LIST_STRING);
        return 0;
    }
    size_t cnt = 0;
    if (sep->len == 0) {
        for (size_t i = 0; i < s->len;) {
            size_t w;
            tpl_ignore(co_utf8_decode_rune(s->s + i, s->len - i, &w));
            i += w;
            cnt++;
        }
    } else {
        cnt = 1;
        for (size_t i = 0; i + sep->len <= s->len;) {
            const char *hit = memmem(s->s + i, s->len - i, sep->s, sep->len);
            if (!hit) {
                break;
            }
            cnt++;
            i = (size_t)(hit - s->s) + sep->len;
        }
    }
    if (limit > 0 && (uint64_t)limit < cnt) {
        cnt = (size_t)limit;
    }
    /* a one-byte separator makes a part of every other byte: an item and a string header each */
    if (tpl_reserve(x, cnt, sizeof(tv) + sizeof(tv_str) + 16 + extra) < 0) {
        return -1;
    }
    *out = tv_list_new(x, &T_LIST_STRING, cnt);
    size_t i = 0;
    for (size_t k = 0; k < cnt; k++) {
        if (k == cnt - 1) {
            out->u.l->items[k] = tv_string(x, s->s + i, s->len - i);
            break;
        }
        size_t w;
        if (sep->len == 0) {
            tpl_ignore(co_utf8_decode_rune(s->s + i, s->len - i, &w));
            out->u.l->items[k] = tv_string(x, s->s + i, w);
            i += w;
            continue;
        }
        const char *hit = memmem(s->s + i, s->len - i, sep->s, sep->len);
        size_t at = (size_t)(hit - s->s);
        out->u.l->items[k] = tv_string(x, s->s + i, at - i);
        i = at + sep->len;
    }
    return 0;
}

/* What parts_map() adds per part: a key "_N", an index slot and a map entry. */
enum { PART_KEY_BYTES = 96 };

static tv parts_map(tpl_x *x, tv list)
{
    size_t cnt = list.u.l ? list.u.l->n : 0;
    tv m = tv_map_new(x, &T_MAP_STRING, cnt);
    for (size_t i = 0; i < cnt; i++) {
        char key[32];
        int kl = snprintf(key, sizeof(key), "_%zu", i);
        tv_map_set(x, m.u.m, tv_str_new(x, key, (size_t)kl), list.u.l->items[i]);
    }
    return m;
}

static int fn_split(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    tv parts;
    if (split_n(x, &parts, S(&a[1]), S(&a[0]), -1, PART_KEY_BYTES) < 0) {
        return -1;
    }
    *ret = parts_map(x, parts);
    return 0;
}

static int fn_splitn(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    tv parts;
    if (split_n(x, &parts, S(&a[2]), S(&a[0]), a[1].u.i, PART_KEY_BYTES) < 0) {
        return -1;
    }
    *ret = parts_map(x, parts);
    return 0;
}

static int fn_split_list(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return split_n(x, ret, S(&a[1]), S(&a[0]), -1, 0);
}

/* strslice */
static int strslice(tpl_x *x, const tv *v, tv *out)
{
    if (v->t == &T_LIST_STRING) {
        *out = *v;
        return 0;
    }
    if (sp_is_list(v)) {
        size_t len = (size_t)tv_len(v);
        if (tpl_reserve(x, len, sizeof(tv)) < 0) {
            return -1;
        }
        *out = tv_list_new(x, &T_LIST_STRING, len);
        size_t k = 0;
        for (size_t i = 0; i < len; i++) {
            tv it = sp_list_item(v, i);
            if (!sp_is_nil(&it) && sp_strval_tv(x, &it, &out->u.l->items[k++]) < 0) {
                return -1;
            }
        }
        out->u.l->n = k;
        return 0;
    }
    if (sp_is_nil(v)) {
        *out = tv_list_new(x, &T_LIST_STRING, 0);
        return 0;
    }
    *out = tv_list_new(x, &T_LIST_STRING, 1);
    return sp_strval_tv(x, v, &out->u.l->items[0]);
}

static int fn_to_strings(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return strslice(x, &a[0], ret);
}

static int fn_join(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    tv l;
    if (strslice(x, &a[1], &l) < 0) {
        return -1;
    }
    const tv_str *sep = S(&a[0]);
    co_buf b = OUT_INIT;
    int rc = 0;
    for (size_t i = 0; l.u.l && i < l.u.l->n && rc == 0; i++) {
        if (i > 0) {
            rc = co_buf_put(&b, sep->s, sep->len);
        }
        rc = rc < 0 ? rc : co_buf_put(&b, l.u.l->items[i].u.s->s, l.u.l->items[i].u.s->len);
    }
    return sp_ret_buf(x, ret, &b, rc);
}

static int str_cmp(const void *pa, const void *pb)
{
    const tv *a = pa;
    const tv *b = pb;
    size_t m = a->u.s->len < b->u.s->len ? a->u.s->len : b->u.s->len;
    int c = memcmp(a->u.s->s, b->u.s->s, m);
    if (c != 0) {
        return c;
    }
    return a->u.s->len < b->u.s->len ? -1 : a->u.s->len > b->u.s->len ? 1 : 0;
}

static int fn_sort_alpha(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (!sp_is_list(&a[0])) {
        tv out = tv_list_new(x, &T_LIST_STRING, 1);
        if (sp_strval_tv(x, &a[0], &out.u.l->items[0]) < 0) {
            return -1;
        }
        *ret = out;
        return 0;
    }
    tv l;
    if (strslice(x, &a[0], &l) < 0) {
        return -1;
    }
    if (l.u.l && l.u.l->n > 1) {
        /* sorting a []string argument sorts the caller's slice, as in Go */
        qsort(l.u.l->items, l.u.l->n, sizeof(tv), str_cmp);
    }
    *ret = l;
    return 0;
}

/* goutils.WrapCustom */
static int wrap(tpl_x *x, tv *ret, const tv_str *s, int64_t width, const tv_str *nl, bool longw)
{
    if (s->len == 0) {
        *ret = tv_string(x, "", 0);
        return 0;
    }
    const char *nls = nl->len ? nl->s : "\n";
    size_t nll = nl->len ? nl->len : 1;
    if (width < 1) {
        width = 1;
    }
    size_t w = (size_t)width;
    size_t len = s->len;
    size_t off = 0;
    co_buf b = OUT_INIT;
    int rc = 0;
    while (rc == 0 && len - off > w) {
        if (s->s[off] == ' ') {
            off++;
            continue;
        }
        size_t end = w + off + 1;
        size_t at = SIZE_MAX;
        for (size_t i = end; i > off; i--) {
            if (s->s[i - 1] == ' ') {
                at = i - 1;
                break;
            }
        }
        if (at != SIZE_MAX) {
            rc = co_buf_put(&b, s->s + off, at - off);
            rc = rc < 0 ? rc : co_buf_put(&b, nls, nll);
            off = at + 1;
        } else if (longw) {
            rc = co_buf_put(&b, s->s + off, w);
            rc = rc < 0 ? rc : co_buf_put(&b, nls, nll);
            off += w;
        } else {
            size_t e2 = w + off;
            const char *sp = memchr(s->s + e2, ' ', len - e2);
            if (!sp) {
                rc = co_buf_put(&b, s->s + off, len - off);
                off = len;
            } else {
                at = (size_t)(sp - s->s);
                rc = co_buf_put(&b, s->s + off, at - off);
                rc = rc < 0 ? rc : co_buf_put(&b, nls, nll);
                off = at + 1;
            }
        }
    }
    rc = rc < 0 ? rc : co_buf_put(&b, s->s + off, len - off);
    return sp_ret_buf(x, ret, &b, rc);
}

static int fn_wrap(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return wrap(x, ret, S(&a[1]), a[0].u.i, &tv_empty_str, false);
}

static int fn_wrap_with(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return wrap(x, ret, S(&a[2]), a[0].u.i, S(&a[1]), true);
}

/* ---- xstrings.ToCamelCase ----------------------------------------------------------------- */

static bool is_connector(int32_t r)
{
    return r == '-' || r == '_' || tpl_is_space(r);
}

static int fn_camelcase(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *s = S(&a[0]);
    if (s->len == 0) {
        *ret = a[0];
        return 0;
    }
    co_buf b = OUT_INIT;
    int rc = 0;
    size_t i = 0;
    size_t w = 0;
    int32_t r0 = 0;
    int32_t r1;
    while (i < s->len && rc == 0) {
        r0 = co_utf8_decode_rune(s->s + i, s->len - i, &w);
        i += w;
        if (!is_connector(r0)) {
            r0 = tpl_to_upper(r0);
            break;
        }
        rc = put_rune(&b, r0);
    }
    if (i >= s->len) {
        if (w != 0) {
            rc = rc < 0 ? rc : put_rune(&b, r0);
        }
        return sp_ret_buf(x, ret, &b, rc);
    }
    while (i < s->len && rc == 0) {
        r1 = r0;
        r0 = co_utf8_decode_rune(s->s + i, s->len - i, &w);
        i += w;
        if (is_connector(r0) && is_connector(r1)) {
            rc = put_rune(&b, r1);
            continue;
        }
        if (is_connector(r1)) {
            r0 = tpl_to_upper(r0);
        } else {
            r0 = tpl_to_lower(r0);
            rc = put_rune(&b, r1);
        }
    }
    rc = rc < 0 ? rc : put_rune(&b, r0);
    return sp_ret_buf(x, ret, &b, rc);
}

/* ---- encodings and hashes ----------------------------------------------------------------- */

static int fn_b64enc(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    char *e = co_base64_encode(S(&a[0])->s, S(&a[0])->len, 0);
    *ret = tv_cstring(x, e);
    free(e);
    return 0;
}

static int b32val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= '2' && c <= '7') {
        return c - '2' + 26;
    }
    return -1;
}

/* encoding/base32 StdEncoding.DecodeString: strict padding, \r and \n ignored;
 * on failure the error text is the result (sprig returns err.Error()). */
static void b32_decode(tpl_x *x, tv *ret, const tv_str *s)
{
    const int bits = 5;
    const size_t quantum = 8;
    co_buf out = OUT_INIT;
    uint64_t acc = 0;
    size_t nacc = 0; /* symbols in the current quantum */
    size_t nsym = 0; /* significant symbols in the current quantum */
    size_t pad = 0;
    size_t si = 0; /* index in the input, counting \r\n */
    long bad = -1;
    size_t i = 0;
    while (i < s->len) {
        unsigned char c = (unsigned char)s->s[i];
        if (c == '\r' || c == '\n') {
            i++;
            continue;
        }
        si = i;
        if (c == '=') {
            /* padding must complete the quantum, and only valid symbol counts get it */
            size_t need = quantum - nacc;
            bool okcount = nacc == 2 || nacc == 4 || nacc == 5 || nacc == 7;
            if (!okcount) {
                bad = (long)si;
                break;
            }
            size_t got = 0;
            size_t j = i;
            while (j < s->len && got < need) {
                unsigned char d = (unsigned char)s->s[j];
                if (d == '\r' || d == '\n') {
                    j++;
                    continue;
                }
                if (d != '=') {
                    bad = (long)j;
                    break;
                }
                got++;
                j++;
            }
            if (bad >= 0) {
                break;
            }
            if (got < need) {
                bad = (long)s->len;
                break;
            }
            /* nothing but newlines may follow */
            while (j < s->len && (s->s[j] == '\r' || s->s[j] == '\n')) {
                j++;
            }
            if (j < s->len) {
                bad = (long)j;
                break;
            }
            pad = need;
            nsym = nacc;
            nacc = quantum;
            break;
        }
        int v = b32val(c);
        if (v < 0) {
            bad = (long)si;
            break;
        }
        acc = (acc << bits) | (uint64_t)v;
        nacc++;
        i++;
        if (nacc == quantum) {
            size_t nbytes = quantum * (size_t)bits / 8;
            for (size_t k = 0; k < nbytes; k++) {
                char ch = (char)(acc >> (8 * (nbytes - 1 - k)));
                tpl_ignore(co_buf_putc(&out, ch));
            }
            acc = 0;
            nacc = 0;
        }
    }
    if (bad < 0 && nacc != 0 && pad == 0) {
        bad = (long)(s->len - nacc);
    }
    if (bad < 0 && pad > 0) {
        /* the padded quantum: shift in zero symbols, keep the significant bytes */
        for (size_t k = nsym; k < quantum; k++) {
            acc <<= bits;
        }
        size_t nbytes = quantum * (size_t)bits / 8;
        size_t keep = nsym * (size_t)bits / 8;
        for (size_t k = 0; k < keep; k++) {
            char ch = (char)(acc >> (8 * (nbytes - 1 - k)));
            tpl_ignore(co_buf_putc(&out, ch));
        }
    }
    if (bad >= 0) {
        co_buf_dispose(&out);
        char msg[80];
        snprintf(msg, sizeof(msg), "illegal base32 data at input byte %ld", bad);
        *ret = tv_cstring(x, msg);
        return;
    }
    *ret = tv_string_take(x, &out);
}

static int fn_b64dec(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *s = S(&a[0]);
    co_buf out = OUT_INIT;
    int rc = co_base64_decode(&out, s->s, s->len, CO_BASE64_STD);
    if (rc == CO_EINVALID) {
        /* sprig returns err.Error() as the result */
        co_buf_dispose(&out);
        *ret = tv_cstring(x, co_error_last());
        co_error_clear();
        return 0;
    }
    return sp_ret_buf(x, ret, &out, rc);
}

static int fn_b32enc(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    const tv_str *s = S(&a[0]);
    co_buf b = OUT_INIT;
    int rc = 0;
    for (size_t i = 0; i < s->len && rc == 0; i += 5) {
        size_t take = s->len - i < 5 ? s->len - i : 5;
        uint64_t acc = 0;
        for (size_t k = 0; k < 5; k++) {
            acc = (acc << 8) | (k < take ? (unsigned char)s->s[i + k] : 0);
        }
        size_t syms = (take * 8 + 4) / 5;
        for (size_t k = 0; k < 8 && rc == 0; k++) {
            rc = co_buf_putc(&b, k < syms ? alpha[(acc >> (35 - 5 * k)) & 31] : '=');
        }
    }
    return sp_ret_buf(x, ret, &b, rc);
}

static int fn_b32dec(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    b32_decode(x, ret, S(&a[0]));
    return 0;
}

static int fn_sha256sum(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, S(&a[0])->s, S(&a[0])->len);
    *ret = tv_cstring(x, hex);
    return 0;
}

static int fn_adler32sum(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *s = S(&a[0]);
    uint32_t s1 = 1;
    uint32_t s2 = 0;
    for (size_t i = 0; i < s->len; i++) {
        s1 = (s1 + (unsigned char)s->s[i]) % 65521U;
        s2 = (s2 + s1) % 65521U;
    }
    char buf[16];
    snprintf(buf, sizeof(buf), "%u", (s2 << 16) | s1);
    *ret = tv_cstring(x, buf);
    return 0;
}

/* ---- snakecase / kebabcase (xstrings' word splitter) -------------------------------------- */

enum { W_INVALID, W_NUMBER, W_UPPER, W_ALPHA, W_CONNECTOR, W_PUNCT, W_OTHER };

/* A letter that is not one of the CJK ideograph ranges xstrings treats as "other". */
static bool is_alphabet(int32_t r)
{
    if (!tpl_is_letter(r)) {
        return false;
    }
    if (r < 0x3400) {
        return true;
    }
    return !((r >= 0x4E00 && r <= 0x9FCC) || (r >= 0x3400 && r <= 0x4D85) ||
             (r >= 0x20000 && r <= 0x2B81D));
}

/* The next rune that is not U+FFFD (skipped bytes count in *size); prev if there is none. */
static int32_t next_valid_rune(const char *s, size_t len, int32_t prev, size_t *size)
{
    size_t w = 0;
    *size = 0;
    while (len > 0) {
        int32_t r = co_utf8_decode_rune(s, len, &w);
        *size += w;
        if (r != 0xFFFD) {
            return r;
        }
        s += w;
        len -= w;
    }
    return prev;
}

/* Length of the word that starts s (never 0 for a non-empty s) and its kind in *wt. */
static size_t next_word(const char *s, size_t len, int *wt)
{
    size_t off;
    size_t sz;
    if (len == 0) {
        *wt = W_INVALID;
        return 0;
    }
    int32_t r = next_valid_rune(s, len, 0xFFFD, &sz);
    off = sz;
    if (r == 0xFFFD) {
        *wt = W_INVALID;
        return off;
    }
    if (is_connector(r) || tpl_is_punct(r)) {
        bool conn = is_connector(r);
        *wt = conn ? W_CONNECTOR : W_PUNCT;
        while (off < len) {
            r = next_valid_rune(s + off, len - off, r, &sz);
            if (conn ? !is_connector(r) : !tpl_is_punct(r)) {
                break;
            }
            off += sz;
        }
    } else if (tpl_is_upper(r)) {
        *wt = W_UPPER;
        if (off < len) {
            r = next_valid_rune(s + off, len - off, r, &sz);
            if (tpl_is_upper(r)) {
                size_t prev_sz = sz;
                off += sz;
                while (off < len) {
                    r = next_valid_rune(s + off, len - off, r, &sz);
                    if (!tpl_is_upper(r)) {
                        break;
                    }
                    prev_sz = sz;
                    off += sz;
                }
                /* "HTTPStatus": the S starts the next word */
                if (off < len && is_alphabet(r)) {
                    off -= prev_sz;
                }
            } else if (is_alphabet(r)) {
                off += sz;
                while (off < len) {
                    r = next_valid_rune(s + off, len - off, r, &sz);
                    if (!is_alphabet(r) || tpl_is_upper(r)) {
                        break;
                    }
                    off += sz;
                }
            }
        }
    } else if (is_alphabet(r)) {
        *wt = W_ALPHA;
        while (off < len) {
            r = next_valid_rune(s + off, len - off, r, &sz);
            if (!is_alphabet(r) || tpl_is_upper(r)) {
                break;
            }
            off += sz;
        }
    } else if (tpl_is_digit(r)) {
        *wt = W_NUMBER;
        while (off < len) {
            r = next_valid_rune(s + off, len - off, r, &sz);
            if (!tpl_is_digit(r)) {
                break;
            }
            off += sz;
        }
    } else {
        *wt = W_OTHER;
        while (off < len) {
            r = next_valid_rune(s + off, len - off, r, &sz);
            if (is_connector(r) || is_alphabet(r) || tpl_is_digit(r) || tpl_is_punct(r)) {
                break;
            }
            off += sz;
        }
    }
    return off;
}

/* Writes a word: upper-case and connector words lower-cased with connectors replaced. */
static int put_word_lower(co_buf *b, int wt, const char *w, size_t len, int32_t conn)
{
    if (wt != W_UPPER && wt != W_CONNECTOR) {
        return co_buf_put(b, w, len);
    }
    int rc = 0;
    size_t i = 0;
    while (i < len && rc == 0) {
        size_t sz = 0;
        int32_t r = co_utf8_decode_rune(w + i, len - i, &sz);
        i += sz;
        if (is_connector(r)) {
            r = conn;
        } else if (tpl_is_upper(r)) {
            r = tpl_to_lower(r);
        }
        rc = put_rune(b, r);
    }
    return rc;
}

typedef struct {
    const char *s;
    size_t len;
    size_t pos;
    int wt;
    const char *w;
    size_t wlen;
} word_iter;

static void word_next(word_iter *it)
{
    it->w = it->s + it->pos;
    it->wlen = next_word(it->w, it->len - it->pos, &it->wt);
    it->pos += it->wlen;
}

static bool word_left(const word_iter *it)
{
    return it->pos < it->len;
}

/* After a number: letters and digits that follow stay glued to it. */
static int glue_run(co_buf *b, word_iter *it, int32_t conn)
{
    int rc = 0;
    while ((it->wt == W_ALPHA || it->wt == W_NUMBER) && rc == 0) {
        rc = put_word_lower(b, it->wt, it->w, it->wlen, conn);
        word_next(it);
    }
    return rc;
}

static int lower_with_connector(co_buf *b, const tv_str *str, int32_t conn)
{
    word_iter it = {.s = str->s, .len = str->len};
    int rc = 0;
    word_next(&it);
    while (word_left(&it) && rc == 0) {
        if (it.wt != W_CONNECTOR) {
            rc = put_word_lower(b, it.wt, it.w, it.wlen, conn);
        }
        int prev = it.wt;
        const char *last = it.w;
        size_t last_len = it.wlen;
        word_next(&it);
        if (rc != 0) {
            break;
        }
        if (prev == W_NUMBER) {
            rc = glue_run(b, &it, conn);
            if (rc == 0 && it.wt != W_INVALID && it.wt != W_PUNCT && it.wt != W_CONNECTOR) {
                rc = put_rune(b, conn);
            }
        } else if (prev == W_CONNECTOR) {
            rc = put_word_lower(b, prev, last, last_len, conn);
        } else if (prev == W_PUNCT) {
            /* nothing */
        } else if (it.wt != W_NUMBER) {
            if (it.wt != W_CONNECTOR && it.wt != W_PUNCT) {
                rc = put_rune(b, conn);
            }
        } else if (word_left(&it)) {
            const char *num = it.w;
            size_t num_len = it.wlen;
            word_next(&it);
            if (it.wt != W_ALPHA) {
                /* "Bld4Floor": the number belongs to the previous word */
                rc = put_word_lower(b, W_NUMBER, num, num_len, conn);
                if (rc == 0 && it.wt != W_CONNECTOR && it.wt != W_PUNCT) {
                    rc = put_rune(b, conn);
                }
            } else {
                /* "HTTP2xx": lower-case letters after the number start a new word */
                rc = put_rune(b, conn);
                rc = rc < 0 ? rc : put_word_lower(b, W_NUMBER, num, num_len, conn);
                rc = rc < 0 ? rc : glue_run(b, &it, conn);
                if (rc == 0 && it.wt != W_INVALID && it.wt != W_CONNECTOR && it.wt != W_PUNCT) {
                    rc = put_rune(b, conn);
                }
            }
        }
    }
    if (rc == 0) {
        rc = put_word_lower(b, it.wt, it.w, it.wlen, conn);
    }
    return rc;
}

static int fn_snakecase(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = OUT_INIT;
    return sp_ret_buf(x, ret, &b, lower_with_connector(&b, S(&a[0]), '_'));
}

static int fn_kebabcase(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = OUT_INIT;
    return sp_ret_buf(x, ret, &b, lower_with_connector(&b, S(&a[0]), '-'));
}

/* ---- table -------------------------------------------------------------------------------- */

static const tpl_func funcs[] = {
    TPL_FUNC("abbrev", fn_abbrev, SP_IS, 2, false, false, &T_STRING),
    TPL_FUNC("abbrevboth", fn_abbrevboth, SP_IIS, 3, false, false, &T_STRING),
    TPL_FUNC("adler32sum", fn_adler32sum, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("b32dec", fn_b32dec, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("b32enc", fn_b32enc, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("b64dec", fn_b64dec, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("b64enc", fn_b64enc, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("camelcase", fn_camelcase, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("cat", fn_cat, SP_A, 1, true, false, &T_STRING),
    TPL_FUNC("contains", fn_contains, SP_S, 2, false, false, &T_BOOL),
    TPL_FUNC("hasPrefix", fn_has_prefix, SP_S, 2, false, false, &T_BOOL),
    TPL_FUNC("hasSuffix", fn_has_suffix, SP_S, 2, false, false, &T_BOOL),
    TPL_FUNC("indent", fn_indent, SP_IS, 2, false, false, &T_STRING),
    TPL_FUNC("initials", fn_initials, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("join", fn_join, SP_SA, 2, false, false, &T_STRING),
    TPL_FUNC("kebabcase", fn_kebabcase, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("lower", fn_lower, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("nindent", fn_nindent, SP_IS, 2, false, false, &T_STRING),
    TPL_FUNC("nospace", fn_nospace, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("plural", fn_plural, SP_SSI, 3, false, false, &T_STRING),
    TPL_FUNC("quote", fn_quote, SP_A, 1, true, false, &T_STRING),
    TPL_FUNC("repeat", fn_repeat, SP_IS, 2, false, false, &T_STRING),
    TPL_FUNC("replace", fn_replace, SP_S, 3, false, false, &T_STRING),
    TPL_FUNC("sha256sum", fn_sha256sum, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("snakecase", fn_snakecase, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("sortAlpha", fn_sort_alpha, SP_A, 1, false, false, &T_LIST_STRING),
    TPL_FUNC("split", fn_split, SP_S, 2, false, false, &T_MAP_STRING),
    TPL_FUNC("splitList", fn_split_list, SP_S, 2, false, false, &T_LIST_STRING),
    TPL_FUNC("splitn", fn_splitn, SP_SIS, 3, false, false, &T_MAP_STRING),
    TPL_FUNC("squote", fn_squote, SP_A, 1, true, false, &T_STRING),
    TPL_FUNC("substr", fn_substr, SP_IIS, 3, false, false, &T_STRING),
    TPL_FUNC("swapcase", fn_swapcase, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("title", fn_title, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("toString", fn_to_string, SP_A, 1, false, false, &T_STRING),
    TPL_FUNC("toStrings", fn_to_strings, SP_A, 1, false, false, &T_LIST_STRING),
    TPL_FUNC("trim", fn_trim, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("trimAll", fn_trim_all, SP_S, 2, false, false, &T_STRING),
    TPL_FUNC("trimPrefix", fn_trim_prefix, SP_S, 2, false, false, &T_STRING),
    TPL_FUNC("trimSuffix", fn_trim_suffix, SP_S, 2, false, false, &T_STRING),
    TPL_FUNC("trimall", fn_trim_all, SP_S, 2, false, false, &T_STRING),
    TPL_FUNC("trunc", fn_trunc, SP_IS, 2, false, false, &T_STRING),
    TPL_FUNC("untitle", fn_untitle, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("upper", fn_upper, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("wrap", fn_wrap, SP_IS, 2, false, false, &T_STRING),
    TPL_FUNC("wrapWith", fn_wrap_with, SP_ISS, 3, false, false, &T_STRING),
};

void tpl_register_sprig_strings(co_template_funcs *f)
{
    tpl_register_all(f, funcs, CO_ARRAY_SIZE(funcs));
}
