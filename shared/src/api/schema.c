/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The schema walker, the OpenAPI/YAML emitter for the CRDs, Go duration syntax and the
 * Kubernetes name rules. Everything that must agree between "what the CRD says" and "what the
 * webhook checks" is derived from the co_schema trees passed in here.
 */
#include "schema_lib.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/utf8.h"
#include "co/util/caps.h"
#include "co/util/common.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"

/* ---------------------------------------------------------------------------------------------
 * Paths and JSON helpers
 * ------------------------------------------------------------------------------------------- */

/* Unknown keys come from outside; show at most this much of one in a path. */
#define MAX_KEY_IN_PATH 64

/* Paths are built on every admission for every field present, so without printf: a plain
 * copy is several times cheaper than formatting. */
char *co_schema__join(const char *path, const char *name)
{
    size_t n = strlen(name);
    int cut = n > MAX_KEY_IN_PATH;
    if (cut) {
        n = MAX_KEY_IN_PATH;
    }
    size_t plen = path ? strlen(path) : 0;
    char *out = co_xmalloc(plen + 1 + n + 3 + 1);
    char *w = out;
    if (plen) {
        memcpy(w, path, plen);
        w += plen;
        *w++ = '.';
    }
    memcpy(w, name, n);
    w += n;
    if (cut) {
        memcpy(w, "...", 3);
        w += 3;
    }
    *w = '\0';
    return out;
}

char *co_schema__index(const char *path, size_t i)
{
    char digits[24];
    size_t nd = 0;
    do {
        digits[nd++] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    size_t plen = strlen(path);
    char *out = co_xmalloc(plen + nd + 3);
    memcpy(out, path, plen + 1);
    char *w = out + plen;
    *w++ = '[';
    while (nd) {
        *w++ = digits[--nd];
    }
    *w++ = ']';
    *w = '\0';
    return out;
}

/* ---------------------------------------------------------------------------------------------
 * Go durations
 * ------------------------------------------------------------------------------------------- */

/* Length of the duration unit at @p p (ns, us, \xc2\xb5s, ms, s, m, h), or 0. "ms" is taken
 * before "m". */
static size_t duration_unit_len(const char *p)
{
    switch (p[0]) {
    case 'n':
    case 'u':
        return p[1] == 's' ? 2 : 0;
    case 'm':
        return p[1] == 's' ? 2 : 1;
    case 's':
    case 'h':
        return 1;
    case '\xc2':
        return p[1] == '\xb5' && p[2] == 's' ? 3 : 0;
    default:
        return 0;
    }
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int co_schema__duration(const char *str, int64_t *ns_out)
{
    const char *p = str;
    if (!*p) {
        return 0;
    }
    while (*p) {
        if (!is_digit(*p)) {
            return 0;
        }
        while (is_digit(*p)) {
            p++;
        }
        if (*p == '.') {
            p++;
            if (!is_digit(*p)) {
                return 0;
            }
            while (is_digit(*p)) {
                p++;
            }
        }
        size_t ulen = duration_unit_len(p);
        if (!ulen) {
            return 0;
        }
        p += ulen;
    }
    if (ns_out) {
        /* the pattern matched, so only a value beyond int64 nanoseconds can fail */
        int64_t ns = 0;
        *ns_out = co_duration_parse(&ns, str) == 0 ? ns : -1;
    }
    return 1;
}

/* ---------------------------------------------------------------------------------------------
 * The walker
 * ------------------------------------------------------------------------------------------- */

const co_schema *co_schema__field(const co_schema *s, const char *name)
{
    if (!s || !s->fields) {
        return NULL;
    }
    for (const co_schema *f = s->fields; f->name; f++) {
        /* the first byte before the whole name: most fields differ there */
        if (f->name[0] == name[0] && strcmp(f->name, name) == 0) {
            return f;
        }
    }
    return NULL;
}

static const char *type_word(co_schema_type t)
{
    switch (t) {
    case CO_SCHEMA_STRING:
        return "string";
    case CO_SCHEMA_BOOLEAN:
        return "boolean";
    case CO_SCHEMA_INTEGER:
        return "integer";
    case CO_SCHEMA_ARRAY:
        return "array";
    case CO_SCHEMA_OBJECT:
    case CO_SCHEMA_STRING_MAP:
    case CO_SCHEMA_ANY_OBJECT:
    case CO_SCHEMA_METADATA:
    default:
        return "object";
    }
}

static int has_type(const co_jv *v, co_schema_type t)
{
    switch (t) {
    case CO_SCHEMA_STRING:
        return v->type == CO_JV_STRING;
    case CO_SCHEMA_BOOLEAN:
        return v->type == CO_JV_BOOL;
    case CO_SCHEMA_INTEGER:
        return v->type == CO_JV_NUMBER && !(v->flags & CO_JV_DOUBLE);
    case CO_SCHEMA_ARRAY:
        return v->type == CO_JV_ARRAY;
    case CO_SCHEMA_OBJECT:
    case CO_SCHEMA_STRING_MAP:
    case CO_SCHEMA_ANY_OBJECT:
    case CO_SCHEMA_METADATA:
    default:
        return v->type == CO_JV_OBJECT;
    }
}

static void quoted_list(co_buf *b, const char *const *names)
{
    for (size_t i = 0; names[i]; i++) {
        if (i > 0) {
            CO_ASSERT(co_buf_puts(b, ", ") == 0);
        }
        CO_ASSERT(co_field_quote(b, names[i]) == 0);
    }
}

const co_jv *co_jv__field(const co_jv *obj, const char *key)
{
    const co_jv *v = co_jv_get(obj, key);
    return v && v->type != CO_JV_NULL ? v : NULL;
}

/*
 * Where the walk is, rendered only when an error needs it: most of the fields it visits are
 * fine, and building every path cost an allocation per field on every admission. A step is a
 * field name or, with name NULL, an index; the first step holds the caller's path in name.
 */
typedef struct spath {
    const struct spath *up;
    const char *name;
    size_t index;
} spath;

static void spath_put(co_buf *b, const spath *p)
{
    if (!p->up) {
        CO_ASSERT(co_buf_puts(b, p->name ? p->name : "") == 0);
        return;
    }
    spath_put(b, p->up);
    if (!p->name) {
        CO_ASSERT(co_buf_printf(b, "[%zu]", p->index) == 0);
        return;
    }
    size_t n = strlen(p->name);
    if (b->len) {
        CO_ASSERT(co_buf_put(b, ".", 1) == 0);
    }
    CO_ASSERT(co_buf_put(b, p->name, n > MAX_KEY_IN_PATH ? MAX_KEY_IN_PATH : n) == 0);
    if (n > MAX_KEY_IN_PATH) {
        CO_ASSERT(co_buf_puts(b, "...") == 0);
    }
}

/* The path of @p p as co_schema__join() and co_schema__index() write it; free() it. */
static char *spath_str(const spath *p)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    spath_put(&b, p);
    return co_buf_take(&b, NULL);
}

static void check_one_of(co_field_errors *errs, const co_jv *v, const co_schema *s, const spath *at)
{
    size_t n = 0;
    for (size_t i = 0; s->one_of[i]; i++) {
        n += co_jv__field(v, s->one_of[i]) != NULL;
    }
    if (n == 1) {
        /* the usual case: no message to build */
        return;
    }
    co_buf list = CO_BUF_INIT(SIZE_MAX);
    co_buf found = CO_BUF_INIT(SIZE_MAX);
    quoted_list(&list, s->one_of);
    for (size_t i = 0, k = 0; s->one_of[i]; i++) {
        if (co_jv__field(v, s->one_of[i])) {
            if (k++ > 0) {
                CO_ASSERT(co_buf_puts(&found, ", ") == 0);
            }
            CO_ASSERT(co_field_quote(&found, s->one_of[i]) == 0);
        }
    }
    char *path = spath_str(at);
    if (n == 0) {
        co_field_errors_add_novalue(errs, CO_FIELD_REQUIRED, path, "exactly one of %s must be set",
                                    co_buf_cstr(&list));
    } else {
        co_field_errors_add_novalue(errs, CO_FIELD_FORBIDDEN, path,
                                    "exactly one of %s may be set, found %s", co_buf_cstr(&list),
                                    co_buf_cstr(&found));
    }
    free(path);
    co_buf_dispose(&list);
    co_buf_dispose(&found);
}

static void check_string(co_field_errors *errs, const co_jv *v, const co_schema *s, const spath *at)
{
    const char *str = v->as.s;
    char *path = NULL;
    if (v->len != strlen(str)) {
        path = spath_str(at);
        co_field_errors_add_jv(errs, CO_FIELD_INVALID, path, v, "must not contain NUL characters");
    } else if (s->min_length && co_utf8_count(str, v->len) < s->min_length) {
        path = spath_str(at);
        co_field_errors_add_jv(errs, CO_FIELD_INVALID, path, v,
                               "must be at least %u character%s long", s->min_length,
                               s->min_length == 1 ? "" : "s");
    } else if (s->enums) {
        size_t n = 0;
        int ok = 0;
        for (; s->enums[n]; n++) {
            ok = ok || strcmp(s->enums[n], str) == 0;
        }
        if (!ok) {
            path = spath_str(at);
            co_field_errors_unsupported(errs, path, str, s->enums, n);
        }
    } else if (s->flags & CO_SCHEMA_DURATION) {
        int64_t ns = 0;
        if (!co_schema__duration(str, &ns)) {
            path = spath_str(at);
            co_field_errors_add_jv(errs, CO_FIELD_INVALID, path, v,
                                   "must be a duration such as \"90s\", \"10m\" or \"1h30m\" "
                                   "(units ns, us, \xc2\xb5s, ms, s, m, h)");
        } else if (ns < 0) {
            path = spath_str(at);
            co_field_errors_add_jv(errs, CO_FIELD_INVALID, path, v,
                                   "duration is too large (at most 2562047h47m16s)");
        }
    }
    free(path);
}

/* The most fields an object schema has (the Component spec has about 25). */
#define SCHEMA_FIELDS_MAX 64

static void
walk(co_field_errors *errs, const co_jv *v, const co_schema *s, const spath *at, unsigned mode)
{
    int types_only = mode & CO_SCHEMA_TYPES_ONLY;
    if (co_jv_unset(v)) {
        return;
    }
    if (!has_type(v, s->type)) {
        char *path = spath_str(at);
        co_field_errors_add_jv(errs, CO_FIELD_INVALID, path, v, "must be of type %s",
                               type_word(s->type));
        free(path);
        return;
    }
    switch (s->type) {
    case CO_SCHEMA_OBJECT: {
        /* One pass over the members finds each one's field (a lookup per schema field would
         * walk the members once per field, present or not); the fields are then checked in
         * schema order, as before. */
        const co_jv *found[SCHEMA_FIELDS_MAX];
        size_t nfields = 0;
        for (const co_schema *f = s->fields; f && f->name; f++) {
            CO_ASSERT(nfields < SCHEMA_FIELDS_MAX);
            found[nfields++] = NULL;
        }
        size_t unknown = 0;
        CO_JV_EACH (k, v) {
            if (k[1].type == CO_JV_NULL) {
                continue; /* null is absent */
            }
            const co_schema *f = co_schema__field(s, k->as.s);
            if (f) {
                found[f - s->fields] = k + 1;
            } else {
                unknown++;
            }
        }
        size_t present = 0;
        for (size_t i = 0; i < nfields; i++) {
            const co_schema *f = &s->fields[i];
            const co_jv *child = found[i];
            if (child) {
                spath step = {at, f->name, 0};
                present++;
                walk(errs, child, f, &step, mode);
            } else if ((f->flags & CO_SCHEMA_REQUIRED) && !types_only) {
                spath step = {at, f->name, 0};
                char *cpath = spath_str(&step);
                co_field_errors_add_novalue(errs, CO_FIELD_REQUIRED, cpath, NULL);
                free(cpath);
            }
        }
        if (types_only) {
            break;
        }
        if (!(mode & CO_SCHEMA_NO_UNKNOWN) && unknown) {
            CO_JV_EACH (k, v) {
                if (k[1].type != CO_JV_NULL && !co_schema__field(s, k->as.s)) {
                    spath step = {at, k->as.s, 0};
                    char *cpath = spath_str(&step);
                    co_field_errors_add_novalue(errs, CO_FIELD_FORBIDDEN, cpath, "unknown field");
                    free(cpath);
                }
            }
        }
        if (s->one_of) {
            check_one_of(errs, v, s, at);
        }
        if (s->min_properties && present < s->min_properties) {
            char *path = spath_str(at);
            co_field_errors_add_int(errs, CO_FIELD_INVALID, path, (long long)present,
                                    "must have at least %u field%s", s->min_properties,
                                    s->min_properties == 1 ? "" : "s");
            free(path);
        }
        break;
    }
    case CO_SCHEMA_STRING:
        if (!types_only) {
            check_string(errs, v, s, at);
        }
        break;
    case CO_SCHEMA_ARRAY: {
        size_t n = v->len;
        if (!types_only && s->max_items && n > s->max_items) {
            char *path = spath_str(at);
            co_field_errors_add_int(errs, CO_FIELD_TOO_MANY, path, (long long)n,
                                    "must have at most %u items", s->max_items);
            free(path);
            /* the items past the limit are not worth a report each */
            n = s->max_items;
        }
        size_t i = 0;
        CO_JV_EACH (item, v) {
            if (i == n) {
                break;
            }
            spath step = {at, NULL, i++};
            if (item->type != CO_JV_NULL) {
                walk(errs, item, s->items, &step, mode);
            } else if (!types_only) {
                char *ipath = spath_str(&step);
                co_field_errors_add(errs, CO_FIELD_INVALID, ipath, NULL, "must not be null");
                free(ipath);
            }
        }
        break;
    }
    case CO_SCHEMA_STRING_MAP: {
        size_t n = 0;
        CO_JV_EACH (k, v) {
            n++;
            if (k[1].type != CO_JV_STRING) {
                spath step = {at, k->as.s, 0};
                char *cpath = spath_str(&step);
                co_field_errors_add_jv(errs, CO_FIELD_INVALID, cpath, k + 1,
                                       "must be of type string");
                free(cpath);
            }
        }
        if (!types_only && s->max_items && n > s->max_items) {
            char *path = spath_str(at);
            co_field_errors_add_int(errs, CO_FIELD_TOO_MANY, path, (long long)n,
                                    "must have at most %u items", s->max_items);
            free(path);
        }
        break;
    }
    case CO_SCHEMA_BOOLEAN:
    case CO_SCHEMA_INTEGER:
    case CO_SCHEMA_ANY_OBJECT:
    case CO_SCHEMA_METADATA:
    default:
        break;
    }
}

void co_schema__check_jv(co_field_errors *errs,
                         const co_jv *v,
                         const co_schema *s,
                         const char *path,
                         unsigned mode)
{
    spath root = {NULL, path, 0};
    walk(errs, v, s, &root, mode);
}

void co_schema__check(co_field_errors *errs,
                      const struct json_object *value,
                      const co_schema *s,
                      const char *path,
                      unsigned mode)
{
    if (!value) {
        return;
    }
    co_jdoc *doc = co_jdoc_of_json(value);
    co_schema__check_jv(errs, co_jdoc_root(doc), s, path, mode);
    co_jdoc_free(doc);
}

/* ---------------------------------------------------------------------------------------------
 * OpenAPI v3
 * ------------------------------------------------------------------------------------------- */

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static json_object *string_array(const char *const *names)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; names[i]; i++) {
        json_object_array_add(a, json_object_new_string(names[i]));
    }
    return a;
}

/* Keys are added in alphabetical order, as controller-gen writes them. */
struct json_object *co_schema__openapi(const co_schema *s)
{
    json_object *o = json_object_new_object();
    size_t nfields = 0;
    const char **sorted = NULL; /* field names in order */
    if (s->type == CO_SCHEMA_OBJECT && s->fields) {
        while (s->fields[nfields].name) {
            nfields++;
        }
        sorted = co_xcalloc(nfields + 1, sizeof(const char *));
        for (size_t i = 0; i < nfields; i++) {
            sorted[i] = s->fields[i].name;
        }
        qsort((void *)sorted, nfields, sizeof(const char *), cmp_name);
    }
    if (s->type == CO_SCHEMA_STRING_MAP) {
        json_object *ap = json_object_new_object();
        json_object_object_add(ap, "type", json_object_new_string("string"));
        json_object_object_add(o, "additionalProperties", ap);
    }
    if (s->default_json) {
        json_object *d = json_tokener_parse(s->default_json);
        CO_ASSERT(d != NULL);
        json_object_object_add(o, "default", d);
    }
    /* The API server refuses anything but a type for metadata (it supplies ObjectMeta's own
     * schema and descriptions), so a description there would make the CRD invalid. */
    if (s->description && s->type != CO_SCHEMA_METADATA) {
        json_object_object_add(o, "description", json_object_new_string(s->description));
    }
    if (s->enums) {
        json_object_object_add(o, "enum", string_array(s->enums));
    }
    if (s->flags & CO_SCHEMA_DATE_TIME) {
        json_object_object_add(o, "format", json_object_new_string("date-time"));
    } else if (s->flags & CO_SCHEMA_INT64) {
        json_object_object_add(o, "format", json_object_new_string("int64"));
    }
    if (s->type == CO_SCHEMA_ARRAY) {
        json_object_object_add(o, "items", co_schema__openapi(s->items));
        if (s->max_items) {
            json_object_object_add(o, "maxItems", json_object_new_int64(s->max_items));
        }
    }
    if (s->type == CO_SCHEMA_STRING_MAP && s->max_items) {
        json_object_object_add(o, "maxProperties", json_object_new_int64(s->max_items));
    }
    if (s->min_length) {
        json_object_object_add(o, "minLength", json_object_new_int64(s->min_length));
    }
    if (s->min_properties) {
        json_object_object_add(o, "minProperties", json_object_new_int64(s->min_properties));
    }
    if (s->one_of) {
        json_object *one_of = json_object_new_array();
        for (size_t i = 0; s->one_of[i]; i++) {
            json_object *branch = json_object_new_object();
            json_object *req = json_object_new_array();
            json_object_array_add(req, json_object_new_string(s->one_of[i]));
            json_object_object_add(branch, "required", req);
            json_object_array_add(one_of, branch);
        }
        json_object_object_add(o, "oneOf", one_of);
    }
    if (s->flags & CO_SCHEMA_DURATION) {
        json_object_object_add(o, "pattern", json_object_new_string(CO_SCHEMA_DURATION_PATTERN));
    }
    if (sorted && nfields) {
        json_object *props = json_object_new_object();
        json_object *required = json_object_new_array();
        for (size_t i = 0; i < nfields; i++) {
            const co_schema *f = co_schema__field(s, sorted[i]);
            json_object_object_add(props, f->name, co_schema__openapi(f));
            if (f->flags & CO_SCHEMA_REQUIRED) {
                json_object_array_add(required, json_object_new_string(f->name));
            }
        }
        json_object_object_add(o, "properties", props);
        if (json_object_array_length(required) > 0) {
            json_object_object_add(o, "required", required);
        } else {
            json_object_put(required);
        }
    }
    free((void *)sorted);
    json_object_object_add(o, "type", json_object_new_string(type_word(s->type)));
    if (s->type == CO_SCHEMA_ANY_OBJECT) {
        json_object_object_add(o, "x-kubernetes-preserve-unknown-fields",
                               json_object_new_boolean(1));
    }
    return o;
}

/* ---------------------------------------------------------------------------------------------
 * YAML emitter (block style, for the CRD files)
 * ------------------------------------------------------------------------------------------- */

#define YAML_WIDTH 96

/* Words YAML 1.1 (sigs.k8s.io/yaml) would read as something other than a string. */
static int is_special_word(const char *s)
{
    static const char *const words[] = {"y",     "n",    "yes", "no",   "on",    "off", "true",
                                        "false", "null", "~",   ".inf", "-.inf", ".nan"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(words); i++) {
        if (strcasecmp(s, words[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

static int plain_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || s[0] == ' ' || s[n - 1] == ' ' || s[n - 1] == ':' || is_special_word(s)) {
        return 0;
    }
    if (strchr("-?:,[]{}#&*!|>'\"%@`", s[0])) {
        return 0;
    }
    /* anything that starts like a number is quoted */
    if ((s[0] >= '0' && s[0] <= '9') ||
        ((s[0] == '+' || s[0] == '.') && s[1] >= '0' && s[1] <= '9')) {
        return 0;
    }
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7F) {
            return 0;
        }
        if ((c == ':' && p[1] == ' ') || (c == ' ' && p[1] == '#')) {
            return 0;
        }
    }
    return 1;
}

static int put_indent(co_buf *out, int indent)
{
    for (int i = 0; i < indent; i++) {
        int rc = co_buf_putc(out, ' ');
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

/* A scalar may be folded at a single space between non-spaces. In a plain scalar the next
 * line must not start with an indicator, so only breaks before a letter, digit or '(' are used;
 * inside double quotes any such space will do. */
static int breakable(const char *q, int quoted)
{
    char next = q[1];
    if (q[0] != ' ' || q[-1] == ' ' || next == ' ' || next == '\0') {
        return 0;
    }
    return quoted || (next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') ||
           (next >= '0' && next <= '9') || next == '(';
}

/* Writes @p text folded at YAML_WIDTH; @p col is the column where it starts, @p cont the
 * indentation of continuation lines. */
static int put_folded(co_buf *out, const char *text, int col, int cont, int quoted)
{
    const char *p = text;
    int rc = 0;
    while (rc == 0 && *p) {
        size_t rest = strlen(p);
        if (col + (int)rest <= YAML_WIDTH) {
            return co_buf_put(out, p, rest);
        }
        /* the last usable break within the width, else the first one after it */
        const char *brk = NULL;
        for (const char *q = p + 1; *q; q++) {
            if (breakable(q, quoted)) {
                if (brk && col + (int)(q - p) > YAML_WIDTH) {
                    break;
                }
                brk = q;
                if (col + (int)(q - p) > YAML_WIDTH) {
                    break;
                }
            }
        }
        if (!brk) {
            return co_buf_put(out, p, rest);
        }
        rc = co_buf_put(out, p, (size_t)(brk - p));
        if (rc == 0) {
            rc = co_buf_putc(out, '\n');
        }
        if (rc == 0) {
            rc = put_indent(out, cont);
        }
        p = brk + 1;
        col = cont;
    }
    return rc;
}

/* Writes a scalar string, plain when YAML reads it back unchanged, else double-quoted (a JSON
 * string is a valid YAML double-quoted scalar). Keys are never folded (@p cont < 0). */
static int put_string(co_buf *out, const char *s, int col, int cont)
{
    int rc;
    if (plain_ok(s)) {
        return cont < 0 ? co_buf_puts(out, s) : put_folded(out, s, col, cont, 0);
    }
    json_object *tmp = json_object_new_string(s);
    const char *q = json_object_to_json_string_ext(tmp, JSON_C_TO_STRING_PLAIN |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE);
    rc = cont < 0 ? co_buf_puts(out, q) : put_folded(out, q, col, cont, 1);
    json_object_put(tmp);
    return rc;
}

static int put_value(co_buf *out, const json_object *v, int indent, int col);

static int put_scalar(co_buf *out, const json_object *v, int col, int cont)
{
    json_object *o = (json_object *)v;
    switch (json_object_get_type(o)) {
    case json_type_string:
        return put_string(out, json_object_get_string(o), col, cont);
    case json_type_null:
        return co_buf_puts(out, "null");
    case json_type_object:
        return co_buf_puts(out, "{}");
    case json_type_array:
        return co_buf_puts(out, "[]");
    case json_type_boolean:
    case json_type_int:
    case json_type_double:
    default:
        return co_buf_puts(out, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    }
}

static int is_block(const json_object *v)
{
    json_object *o = (json_object *)v;
    if (json_object_is_type(o, json_type_object)) {
        return json_object_object_length(o) > 0;
    }
    if (json_object_is_type(o, json_type_array)) {
        return json_object_array_length(o) > 0;
    }
    return 0;
}

/* Writes the entries of a block mapping at @p indent. When @p first_inline, the first key
 * continues the current line (after "- "). */
static int put_mapping(co_buf *out, const json_object *obj, int indent, int first_inline)
{
    int rc = 0;
    int first = 1;
    json_object_object_foreach ((json_object *)obj, key, val) {
        if (!(first && first_inline)) {
            rc = put_indent(out, indent);
        }
        first = 0;
        if (rc == 0) {
            rc = put_string(out, key, indent, -1);
        }
        if (rc == 0) {
            rc = co_buf_putc(out, ':');
        }
        if (rc == 0) {
            int key_col = indent + (int)strlen(key) + 2;
            rc = put_value(out, val, indent, key_col);
        }
        if (rc < 0) {
            return rc;
        }
    }
    return rc;
}

/* Writes the value of a mapping key (the cursor is right after "key:"). */
static int put_value(co_buf *out, const json_object *v, int indent, int col)
{
    json_object *o = (json_object *)v;
    int rc;
    if (!is_block(o)) {
        rc = co_buf_putc(out, ' ');
        if (rc == 0) {
            rc = put_scalar(out, o, col, indent + 2);
        }
        return rc == 0 ? co_buf_putc(out, '\n') : rc;
    }
    rc = co_buf_putc(out, '\n');
    if (rc < 0) {
        return rc;
    }
    if (json_object_is_type(o, json_type_object)) {
        return put_mapping(out, o, indent + 2, 0);
    }
    /* sequences sit at the key's indentation, as kubectl and controller-gen write them */
    size_t n = json_object_array_length(o);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        json_object *item = json_object_array_get_idx(o, i);
        rc = put_indent(out, indent);
        if (rc == 0) {
            rc = co_buf_puts(out, "- ");
        }
        if (rc < 0) {
            break;
        }
        if (json_object_is_type(item, json_type_object) && is_block(item)) {
            rc = put_mapping(out, item, indent + 2, 1);
        } else if (json_object_is_type(item, json_type_array) && is_block(item)) {
            rc = co_error_set(CO_EINVALID, "nested sequences are not supported by the emitter");
        } else {
            rc = put_scalar(out, item, indent + 2, indent + 2);
            if (rc == 0) {
                rc = co_buf_putc(out, '\n');
            }
        }
    }
    return rc;
}

int co_schema__yaml(co_buf *out, const struct json_object *doc)
{
    int rc = co_buf_puts(out, "---\n");
    if (rc == 0) {
        rc = put_mapping(out, doc, 0, 0);
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Kubernetes name rules
 * ------------------------------------------------------------------------------------------- */

const char co_name__dns_label_msg[] =
    "must be a lowercase RFC 1123 label: at most 63 characters from a-z, 0-9 and '-', "
    "starting and ending with a letter or digit";
const char co_name__dns_subdomain_msg[] =
    "must be a lowercase RFC 1123 subdomain: at most 253 characters, dot-separated labels of "
    "a-z, 0-9 and '-', each starting and ending with a letter or digit";

static int is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* One label of [a-z0-9-], alphanumeric at both ends, of length n (> 0). */
static int label_ok(const char *s, size_t n)
{
    if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1])) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (!is_lower_alnum(s[i]) && s[i] != '-') {
            return 0;
        }
    }
    return 1;
}

int co_name__is_dns_label(const char *s)
{
    size_t n = strlen(s);
    return n <= 63 && label_ok(s, n);
}

int co_name__is_dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253) {
        return 0;
    }
    const char *p = s;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (!label_ok(p, len)) {
            return 0;
        }
        if (!dot) {
            return 1;
        }
        p = dot + 1;
    }
}

int co_name__is_config_key(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253 || strcmp(s, ".") == 0 || strncmp(s, "..", 2) == 0) {
        return 0;
    }
    for (const char *p = s; *p; p++) {
        if (!is_alnum(*p) && *p != '-' && *p != '_' && *p != '.') {
            return 0;
        }
    }
    return 1;
}

/* The name part of a qualified name and label values: [A-Za-z0-9][-A-Za-z0-9_.]*[A-Za-z0-9]. */
static int name_part_ok(const char *s, size_t n)
{
    if (n == 0 || n > 63 || !is_alnum(s[0]) || !is_alnum(s[n - 1])) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.') {
            return 0;
        }
    }
    return 1;
}

int co_name__is_qualified_name(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash) {
        return name_part_ok(s, strlen(s));
    }
    if (strchr(slash + 1, '/')) {
        return 0;
    }
    char *prefix = co_xstrndup(s, (size_t)(slash - s));
    int ok = co_name__is_dns_subdomain(prefix) && name_part_ok(slash + 1, strlen(slash + 1));
    free(prefix);
    return ok;
}

int co_name__is_label_value(const char *s)
{
    size_t n = strlen(s);
    return n == 0 || name_part_ok(s, n);
}
