/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes-style field errors. The rendering follows the API server's (apimachinery
 * field.Error): the type's words, then the bad value for types that show one, then the detail,
 * joined with ": "; several errors are bracketed and comma-separated like an aggregate.
 */
#include "co/util/utf8.h"
#include "co/api/field_error.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"

static const char *const type_names[] = {
    [CO_FIELD_REQUIRED] = "Required value",
    [CO_FIELD_INVALID] = "Invalid value",
    [CO_FIELD_UNSUPPORTED] = "Unsupported value",
    [CO_FIELD_FORBIDDEN] = "Forbidden",
    [CO_FIELD_DUPLICATE] = "Duplicate value",
    [CO_FIELD_TOO_MANY] = "Too many",
    [CO_FIELD_TOO_LONG] = "Too long",
    [CO_FIELD_NOT_FOUND] = "Not found",
};

const char *co_field_error_type_name(co_field_error_type type)
{
    if ((size_t)type < CO_ARRAY_SIZE(type_names) && type_names[type]) {
        return type_names[type];
    }
    return "Invalid value";
}

void co_field_errors_init(co_field_errors *errs)
{
    memset(errs, 0, sizeof(*errs));
}

static void error_dispose(co_field_error *e)
{
    free(e->field);
    free(e->value);
    free(e->detail);
}

void co_field_errors_dispose(co_field_errors *errs)
{
    if (!errs) {
        return;
    }
    for (size_t i = 0; i < errs->len; i++) {
        error_dispose(&errs->items[i]);
    }
    free(errs->items);
    co_field_errors_init(errs);
}

bool co_field_errors_empty(const co_field_errors *errs)
{
    return errs->len == 0 && errs->dropped == 0;
}

static int same_str(const char *a, const char *b)
{
    if (!a || !b) {
        return a == b;
    }
    return strcmp(a, b) == 0;
}

/* Takes ownership of the three strings in every case. */
static void
push(co_field_errors *errs, co_field_error_type type, char *field, char *value, char *detail)
{
    for (size_t i = 0; i < errs->len; i++) {
        const co_field_error *e = &errs->items[i];
        if (e->type == type && same_str(e->field, field) && same_str(e->value, value) &&
            same_str(e->detail, detail)) {
            free(field);
            free(value);
            free(detail);
            return;
        }
    }
    if (errs->len >= CO_MAX_FIELD_ERRORS) {
        errs->dropped++;
        free(field);
        free(value);
        free(detail);
        return;
    }
    if (errs->len == errs->cap) {
        errs->cap = errs->cap ? errs->cap * 2 : 8;
        errs->items = co_xreallocarray(errs->items, errs->cap, sizeof(*errs->items));
    }
    co_field_error *e = &errs->items[errs->len++];
    e->type = type;
    e->field = field;
    e->value = value;
    e->detail = detail;
}

static char *vdetail(const char *fmt, va_list ap)
{
    return fmt ? co_xvasprintf(fmt, ap) : NULL;
}

/* Values longer than this are shown cut, so one huge bad value cannot swamp the message. */
#define MAX_SHOWN_VALUE 256

static int quote_n(co_buf *out, const char *s, size_t n);

/* Quotes @p n bytes of @p s (which may hold NULs); long values are cut, never inside a UTF-8
 * sequence, and marked with "...". */
static char *quoted_n(const char *s, size_t n)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    if (n > MAX_SHOWN_VALUE) {
        size_t len = MAX_SHOWN_VALUE;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80) {
            len--;
        }
        co_buf cut = CO_BUF_INIT(SIZE_MAX);
        CO_ASSERT(co_buf_put(&cut, s, len) == 0);
        CO_ASSERT(co_buf_puts(&cut, "...") == 0);
        CO_ASSERT(quote_n(&b, cut.ptr, cut.len) == 0);
        co_buf_dispose(&cut);
    } else {
        CO_ASSERT(quote_n(&b, s, n) == 0);
    }
    return co_buf_take(&b, NULL);
}

static char *quoted(const char *s)
{
    return quoted_n(s, strlen(s));
}

static char *render_json(const struct json_object *value)
{
    json_object *v = (json_object *)value;
    switch (json_object_get_type(v)) {
    case json_type_null:
        return co_xstrdup("null");
    case json_type_boolean:
        return co_xstrdup(json_object_get_boolean(v) ? "true" : "false");
    case json_type_int:
        return co_xasprintf("%" PRId64, json_object_get_int64(v));
    case json_type_string:
        return quoted_n(json_object_get_string(v), (size_t)json_object_get_string_len(v));
    case json_type_double:
    case json_type_object:
    case json_type_array:
    default: {
        const char *s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE);
        size_t n = strlen(s);
        if (n > MAX_SHOWN_VALUE) {
            char *cut = co_xstrndup(s, MAX_SHOWN_VALUE);
            char *r = co_xasprintf("%s...", cut);
            free(cut);
            return r;
        }
        return co_xstrdup(s);
    }
    }
}

void co_field_errors_add(co_field_errors *errs,
                         co_field_error_type type,
                         const char *field,
                         const struct json_object *value,
                         const char *detail_fmt,
                         ...)
{
    va_list ap;
    va_start(ap, detail_fmt);
    char *detail = vdetail(detail_fmt, ap);
    va_end(ap);
    push(errs, type, co_xstrdup(field), render_json(value), detail);
}

void co_field_errors_add_jv(co_field_errors *errs,
                            co_field_error_type type,
                            const char *field,
                            const co_jv *value,
                            const char *detail_fmt,
                            ...)
{
    va_list ap;
    va_start(ap, detail_fmt);
    char *detail = vdetail(detail_fmt, ap);
    va_end(ap);
    /* errors are rare: the value goes through json-c to be rendered exactly as above */
    struct json_object *v = value ? co_jv_to_json(value) : NULL;
    push(errs, type, co_xstrdup(field), render_json(v), detail);
    json_object_put(v);
}

void co_field_errors_add_str(co_field_errors *errs,
                             co_field_error_type type,
                             const char *field,
                             const char *value,
                             const char *detail_fmt,
                             ...)
{
    va_list ap;
    va_start(ap, detail_fmt);
    char *detail = vdetail(detail_fmt, ap);
    va_end(ap);
    push(errs, type, co_xstrdup(field), value ? quoted(value) : co_xstrdup("null"), detail);
}

void co_field_errors_add_novalue(co_field_errors *errs,
                                 co_field_error_type type,
                                 const char *field,
                                 const char *detail_fmt,
                                 ...)
{
    va_list ap;
    va_start(ap, detail_fmt);
    char *detail = vdetail(detail_fmt, ap);
    va_end(ap);
    push(errs, type, co_xstrdup(field), NULL, detail);
}

void co_field_errors_add_int(co_field_errors *errs,
                             co_field_error_type type,
                             const char *field,
                             long long value,
                             const char *detail_fmt,
                             ...)
{
    va_list ap;
    va_start(ap, detail_fmt);
    char *detail = vdetail(detail_fmt, ap);
    va_end(ap);
    push(errs, type, co_xstrdup(field), co_xasprintf("%lld", value), detail);
}

void co_field_errors_unsupported(co_field_errors *errs,
                                 const char *field,
                                 const char *value,
                                 const char *const *supported,
                                 size_t n)
{
    co_buf d = CO_BUF_INIT(SIZE_MAX);
    CO_ASSERT(co_buf_puts(&d, "supported values: ") == 0);
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            CO_ASSERT(co_buf_puts(&d, ", ") == 0);
        }
        CO_ASSERT(co_field_quote(&d, supported[i]) == 0);
    }
    push(errs, CO_FIELD_UNSUPPORTED, co_xstrdup(field), value ? quoted(value) : co_xstrdup("null"),
         co_buf_take(&d, NULL));
}

void co_field_errors_move(co_field_errors *to, co_field_errors *from)
{
    for (size_t i = 0; i < from->len; i++) {
        co_field_error *e = &from->items[i];
        push(to, e->type, e->field, e->value, e->detail);
    }
    to->dropped += from->dropped;
    free(from->items);
    co_field_errors_init(from);
}

void co_field_errors_set_field(co_field_errors *errs, size_t i, const char *field)
{
    CO_ASSERT(i < errs->len);
    char *copy = co_xstrdup(field);
    free(errs->items[i].field);
    errs->items[i].field = copy;
}

static int shows_value(co_field_error_type type)
{
    return type != CO_FIELD_REQUIRED && type != CO_FIELD_FORBIDDEN && type != CO_FIELD_TOO_LONG;
}

int co_field_error_format(co_buf *out, const co_field_error *err)
{
    int rc = co_buf_printf(out, "%s: %s", err->field, co_field_error_type_name(err->type));
    if (rc == 0 && err->value && shows_value(err->type)) {
        rc = co_buf_printf(out, ": %s", err->value);
    }
    if (rc == 0 && err->detail && err->detail[0]) {
        rc = co_buf_printf(out, ": %s", err->detail);
    }
    return rc;
}

int co_field_errors_format(co_buf *out, const co_field_errors *errs)
{
    int rc = 0;
    int bracket = errs->len + errs->dropped > 1;
    if (bracket) {
        rc = co_buf_putc(out, '[');
    }
    for (size_t i = 0; rc == 0 && i < errs->len; i++) {
        if (i > 0) {
            rc = co_buf_puts(out, ", ");
        }
        if (rc == 0) {
            rc = co_field_error_format(out, &errs->items[i]);
        }
    }
    if (rc == 0 && errs->dropped) {
        rc = co_buf_printf(out, "%sand %zu more", errs->len ? ", " : "", errs->dropped);
    }
    if (rc == 0 && bracket) {
        rc = co_buf_putc(out, ']');
    }
    return rc;
}

static int quote_n(co_buf *out, const char *s, size_t len)
{
    int rc = co_buf_putc(out, '"');
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *end = p + len;
    while (rc == 0 && p < end) {
        unsigned c = *p;
        uint32_t cp = 0;
        size_t n = co_utf8_decode(p, (size_t)(end - p), &cp);
        if (n == 0) {
            rc = co_buf_printf(out, "\\x%02x", c);
            p++;
            continue;
        }
        if (n > 1) {
            rc = co_buf_put(out, p, n);
            p += n;
            continue;
        }
        switch (c) {
        case '"':
            rc = co_buf_puts(out, "\\\"");
            break;
        case '\\':
            rc = co_buf_puts(out, "\\\\");
            break;
        case '\a':
            rc = co_buf_puts(out, "\\a");
            break;
        case '\b':
            rc = co_buf_puts(out, "\\b");
            break;
        case '\f':
            rc = co_buf_puts(out, "\\f");
            break;
        case '\n':
            rc = co_buf_puts(out, "\\n");
            break;
        case '\r':
            rc = co_buf_puts(out, "\\r");
            break;
        case '\t':
            rc = co_buf_puts(out, "\\t");
            break;
        case '\v':
            rc = co_buf_puts(out, "\\v");
            break;
        default:
            if (c < 0x20 || c == 0x7F) {
                rc = co_buf_printf(out, "\\x%02x", c);
            } else {
                rc = co_buf_putc(out, (char)c);
            }
        }
        p++;
    }
    if (rc == 0) {
        rc = co_buf_putc(out, '"');
    }
    return rc;
}

int co_field_quote(co_buf *out, const char *s)
{
    return quote_n(out, s, strlen(s));
}
