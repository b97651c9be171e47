/* SPDX-License-Identifier: Apache-2.0 */
/*
 * YAML <-> json-c. Reading drives libyaml's event parser and builds json-c values directly,
 * resolving plain scalars with a transcription of go-yaml v2's resolve() (the rules
 * sigs.k8s.io/yaml, kubectl and Helm apply) and converting mapping keys as YAMLToJSON does.
 * Aliases are expanded into copies under a node budget, which defeats "billion laughs"
 * documents. Writing drives libyaml's emitter, choosing a style per scalar so that the text
 * reads back to the same value under those same rules.
 */
#include "co/util/utf8.h"
#include "co/util/strconv.h"
#include "co/json/yaml.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <yaml.h>

#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/util/strmap.h"
#include "co/json/json.h"
#include "json_lib.h"

#define TAG_PREFIX    "tag:yaml.org,2002:"
#define TAG_STR       TAG_PREFIX "str"
#define TAG_BOOL      TAG_PREFIX "bool"
#define TAG_INT       TAG_PREFIX "int"
#define TAG_FLOAT     TAG_PREFIX "float"
#define TAG_NULL      TAG_PREFIX "null"
#define TAG_TIMESTAMP TAG_PREFIX "timestamp"
#define TAG_BINARY    TAG_PREFIX "binary"
#define TAG_MERGE     TAG_PREFIX "merge"

/* ============================================================================================
 * Scalar resolution (go-yaml v2 resolve.go, with Go's strconv rules spelled out)
 * ========================================================================================== */

typedef enum rkind {
    R_NULL,
    R_BOOL,
    R_INT,
    R_UINT,
    R_FLOAT,
    R_STR,
    R_TIMESTAMP,
    R_MERGE,
} rkind;

typedef struct resolved {
    rkind kind;
    int b;
    int64_t i;
    uint64_t u;
    double d;
} resolved;

static const char *const null_words[] = {"~", "null", "Null", "NULL"};
static const char *const true_words[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                         "True", "TRUE", "on",  "On",  "ON"};
static const char *const false_words[] = {"n",     "N",     "no",  "No",  "NO", "false",
                                          "False", "FALSE", "off", "Off", "OFF"};

/* The booleans of YAML 1.2's core schema (CO_YAML_CORE_BOOLS). */
static const char *const core_bool_words[] = {"true", "True", "TRUE", "false", "False", "FALSE"};

static int in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(s, list[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The words go-yaml looks up in its resolve map. Returns 1 when @p s is one of them. */
static int resolve_map(const char *s, resolved *r)
{
    if (s[0] == '\0' || in_list(s, null_words, CO_ARRAY_SIZE(null_words))) {
        r->kind = R_NULL;
    } else if (in_list(s, true_words, CO_ARRAY_SIZE(true_words))) {
        r->kind = R_BOOL;
        r->b = 1;
    } else if (in_list(s, false_words, CO_ARRAY_SIZE(false_words))) {
        r->kind = R_BOOL;
        r->b = 0;
    } else if (!strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN")) {
        r->kind = R_FLOAT;
        r->d = NAN;
    } else if (!strcmp(s, ".inf") || !strcmp(s, ".Inf") || !strcmp(s, ".INF") ||
               !strcmp(s, "+.inf") || !strcmp(s, "+.Inf") || !strcmp(s, "+.INF")) {
        r->kind = R_FLOAT;
        r->d = INFINITY;
    } else if (!strcmp(s, "-.inf") || !strcmp(s, "-.Inf") || !strcmp(s, "-.INF")) {
        r->kind = R_FLOAT;
        r->d = -INFINITY;
    } else if (!strcmp(s, "<<")) {
        r->kind = R_MERGE;
    } else {
        return 0;
    }
    return 1;
}

enum { NUM_OK = 0, NUM_SYNTAX = 1, NUM_RANGE = 2 };

/* go-yaml's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static int yaml_style_float(const char *s)
{
    if (*s == '+' || *s == '-') {
        s++;
    }
    if (*s == '.') {
        s++;
        if (*s < '0' || *s > '9') {
            return 0;
        }
        while (*s >= '0' && *s <= '9') {
            s++;
        }
    } else {
        if (*s < '0' || *s > '9') {
            return 0;
        }
        while (*s >= '0' && *s <= '9') {
            s++;
        }
        if (*s == '.') {
            s++;
            while (*s >= '0' && *s <= '9') {
                s++;
            }
        }
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') {
            s++;
        }
        if (*s < '0' || *s > '9') {
            return 0;
        }
        while (*s >= '0' && *s <= '9') {
            s++;
        }
    }
    return *s == '\0';
}

/* Converts a decimal float text (no underscores) like Go's ParseFloat; fails on overflow. */
static int decimal_to_double(const char *s, double *out)
{
    double d = strtod(s, NULL);
    if (isinf(d)) {
        return NUM_RANGE;
    }
    *out = d;
    return NUM_OK;
}

/* Go's underscoreOK() for a float text. */
static int underscore_ok(const char *s)
{
    char saw = '^';
    if (*s == '+' || *s == '-') {
        s++;
    }
    for (; *s; s++) {
        if (*s >= '0' && *s <= '9') {
            saw = '0';
            continue;
        }
        if (*s == '_') {
            if (saw != '0') {
                return 0;
            }
            saw = '_';
            continue;
        }
        if (saw == '_') {
            return 0;
        }
        saw = '!';
    }
    return saw != '_';
}

/*
 * Go's ParseFloat for the texts go-yaml hands it unfiltered: those starting with '.'. Syntax:
 * '.' digits (underscores between them), optional exponent.
 */
static int go_parse_dot_float(const char *s, double *out)
{
    const char *p = s + 1;
    int digits = 0;
    while ((*p >= '0' && *p <= '9') || *p == '_') {
        digits += *p != '_';
        p++;
    }
    if (!digits) {
        return NUM_SYNTAX;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') {
            p++;
        }
        if (*p < '0' || *p > '9') {
            return NUM_SYNTAX;
        }
        while ((*p >= '0' && *p <= '9') || *p == '_') {
            p++;
        }
    }
    if (*p != '\0' || !underscore_ok(s)) {
        return NUM_SYNTAX;
    }
    char buf[128];
    size_t o = 0;
    for (const char *q = s; *q && o + 1 < sizeof(buf); q++) {
        if (*q != '_') {
            buf[o++] = *q;
        }
    }
    buf[o] = '\0';
    if (strlen(s) >= sizeof(buf) - 1) {
        /* Absurdly long: let strtod see the full text. */
        char *copy = co_xstrdup(s);
        char *w = copy;
        for (const char *q = s; *q; q++) {
            if (*q != '_') {
                *w++ = *q;
            }
        }
        *w = '\0';
        int rc = decimal_to_double(copy, out);
        free(copy);
        return rc;
    }
    return decimal_to_double(buf, out);
}

/* Reads 1..max digits; returns the count or 0. */
static int read_num(const char **s, int min, int max, int *out)
{
    int n = 0, v = 0;
    while (n < max && **s >= '0' && **s <= '9') {
        v = v * 10 + (**s - '0');
        (*s)++;
        n++;
    }
    if (n < min) {
        return 0;
    }
    *out = v;
    return n;
}

static int days_in_month(int year, int month)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month == 2 && (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0))) {
        return 29;
    }
    return days[month - 1];
}

/*
 * go-yaml's parseTimestamp(): "2006-1-2", "2006-1-2 15:4:5[.frac]", and
 * "2006-1-2T15:4:5[.frac]Z07:00" (or with a lower-case 't'), with Go's range checks.
 */
static int is_timestamp(const char *s)
{
    int year, month, day, hour, min, sec;
    const char *p = s;
    if (read_num(&p, 4, 4, &year) != 4 || *p != '-') {
        return 0;
    }
    p++;
    if (!read_num(&p, 1, 2, &month) || *p != '-') {
        return 0;
    }
    p++;
    if (!read_num(&p, 1, 2, &day)) {
        return 0;
    }
    if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month)) {
        return 0;
    }
    if (*p == '\0') {
        return 1;
    }
    char sep = *p;
    if (sep != 'T' && sep != 't' && sep != ' ') {
        return 0;
    }
    p++;
    if (!read_num(&p, 1, 2, &hour) || *p++ != ':' || !read_num(&p, 1, 2, &min) || *p++ != ':' ||
        !read_num(&p, 1, 2, &sec)) {
        return 0;
    }
    if (hour > 23 || min > 59 || sec > 59) {
        return 0;
    }
    if (*p == '.' || *p == ',') {
        p++;
        if (*p < '0' || *p > '9') {
            return 0;
        }
        while (*p >= '0' && *p <= '9') {
            p++;
        }
    }
    if (sep == ' ') {
        return *p == '\0';
    }
    if (*p == 'Z') {
        return p[1] == '\0';
    }
    if (*p != '+' && *p != '-') {
        return 0;
    }
    p++;
    int zh, zm;
    if (read_num(&p, 2, 2, &zh) != 2 || *p++ != ':' || read_num(&p, 2, 2, &zm) != 2) {
        return 0;
    }
    return *p == '\0' && zh <= 24 && zm <= 59;
}

/*
 * go-yaml v2's resolve() for the text @p in; @p check_timestamp is set for untagged plain
 * scalars and for the !!timestamp tag, the only cases in which go-yaml looks for one.
 */
static void resolve_plain(const char *in, resolved *r, int check_timestamp)
{
    unsigned char c0 = (unsigned char)in[0];
    char hint;
    if (c0 == '\0') {
        hint = 'N';
    } else if (c0 == '+' || c0 == '-') {
        hint = 'S';
    } else if (c0 >= '0' && c0 <= '9') {
        hint = 'D';
    } else if (strchr("yYnNtTfFoO~", c0)) {
        hint = 'M';
    } else if (c0 == '.') {
        hint = '.';
    } else {
        hint = 0;
    }
    r->kind = R_STR;
    if (!hint) {
        return;
    }
    if (resolve_map(in, r)) {
        return;
    }
    if (hint == '.') {
        if (go_parse_dot_float(in, &r->d) == NUM_OK) {
            r->kind = R_FLOAT;
        }
        return;
    }
    if (hint != 'D' && hint != 'S') {
        return;
    }
    if (check_timestamp && is_timestamp(in)) {
        r->kind = R_TIMESTAMP;
        return;
    }
    size_t len = strlen(in);
    char small[128];
    char *plain = len < sizeof(small) ? small : co_xmalloc(len + 1);
    size_t o = 0;
    for (const char *q = in; *q; q++) {
        if (*q != '_') {
            plain[o++] = *q;
        }
    }
    plain[o] = '\0';
    if (co_strconv_parse_int(&r->i, plain, o, 0, 0) == 0) {
        r->kind = R_INT;
    } else if (co_strconv_parse_uint(&r->u, plain, o, 0, 0) == 0) {
        r->kind = R_UINT;
    } else if (yaml_style_float(plain) && decimal_to_double(plain, &r->d) == NUM_OK) {
        r->kind = R_FLOAT;
    } else if (strncmp(plain, "0b", 2) == 0) {
        if (co_strconv_parse_int(&r->i, plain + 2, o - 2, 2, 0) == 0) {
            r->kind = R_INT;
        } else if (co_strconv_parse_uint(&r->u, plain + 2, o - 2, 2, 0) == 0) {
            r->kind = R_UINT;
        }
    } else if (strncmp(plain, "-0b", 3) == 0) {
        plain[2] = '-';
        if (co_strconv_parse_int(&r->i, plain + 2, o - 2, 2, 0) == 0) {
            r->kind = R_INT;
        }
    }
    if (plain != small) {
        free(plain);
    }
}

/* ============================================================================================
 * Reading
 * ========================================================================================== */

typedef struct anchor {
    char *name;
    struct json_object *value; /* a reference; NULL for null */
    size_t nodes;              /* nodes in the value */
    int depth;                 /* nesting depth of the value (0 for a scalar) */
    int done;                  /* the value is complete (aliases to it are not recursive) */
} anchor;

typedef struct frame {
    int is_map;
    struct json_object *obj;
    char *anchor; /* the anchor on this collection, registered when it completes */
    size_t anchor_idx;
    size_t nodes; /* nodes below this collection */
    int depth;    /* max depth below this collection */
    /* mapping state */
    int have_key;
    char *key;
    int key_is_merge;
    yaml_mark_t key_mark;
    struct json_object *seen; /* explicit keys, for CO_YAML_UNIQUE_KEYS */
} frame;

typedef struct reader {
    const char *data;
    size_t len;
    unsigned flags;
    frame *stack;
    size_t nstack, capstack;
    anchor *anchors;
    size_t nanchors, capanchors;
    co_strmap anchor_index; /* name -> index into anchors plus one: see add_anchor() */
    size_t alias_nodes;
    struct json_object *root;
} reader;

static int CO_PRINTF(3, 4) rerr_at(int code, yaml_mark_t mark, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return co_error_set(code, "line %zu, column %zu: %s", mark.line + 1, mark.column + 1, msg);
}

/* Formats a scalar for a message: at most 40 bytes, control characters as '?'. */
static const char *shorten(const char *s, char buf[48])
{
    size_t n = 0;
    for (; n < 40 && s[n]; n++) {
        buf[n] = ((unsigned char)s[n] < 0x20) ? '?' : s[n];
    }
    if (s[n]) {
        memcpy(buf + n, "...", 4);
    } else {
        buf[n] = '\0';
    }
    return buf;
}

static const char *rkind_tag(rkind k)
{
    switch (k) {
    case R_NULL:
        return "!!null";
    case R_BOOL:
        return "!!bool";
    case R_INT:
    case R_UINT:
        return "!!int";
    case R_FLOAT:
        return "!!float";
    case R_TIMESTAMP:
        return "!!timestamp";
    case R_MERGE:
        return "!!merge";
    case R_STR:
        break;
    }
    return "!!str";
}

static struct json_object *resolved_value(const resolved *r, const char *text, size_t len)
{
    switch (r->kind) {
    case R_NULL:
        return NULL;
    case R_BOOL:
        return json_object_new_boolean(r->b);
    case R_INT:
        return json_object_new_int64(r->i);
    case R_UINT:
        return json_object_new_uint64(r->u);
    case R_FLOAT:
        return json_object_new_double(r->d);
    case R_STR:
    case R_TIMESTAMP:
    case R_MERGE:
        break;
    }
    return json_object_new_string_len(text, (int)len);
}

/* Builds the value of a scalar event, applying go-yaml's tag rules. */
static int scalar_value(struct json_object **out, const yaml_event_t *ev)
{
    const char *text = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    resolved r = {R_STR, 0, 0, 0, 0};
    char sb[48];

    if (!tag && !ev->data.scalar.plain_implicit) {
        *out = json_object_new_string_len(text, (int)len); /* quoted, untagged */
        return 0;
    }
    if (tag && strcmp(tag, TAG_BINARY) == 0) {
        co_buf b = CO_BUF_INIT(CO_MAX_DOCUMENT);
        if (co_base64_decode(&b, text, len, CO_BASE64_STD) < 0) {
            co_buf_dispose(&b);
            return rerr_at(CO_EINVALID, ev->start_mark,
                           "!!binary value contains invalid base64 data");
        }
        *out = json_object_new_string_len(co_buf_cstr(&b), (int)b.len);
        co_buf_dispose(&b);
        return 0;
    }
    int resolvable = !tag || !strcmp(tag, TAG_STR) || !strcmp(tag, TAG_BOOL) ||
                     !strcmp(tag, TAG_INT) || !strcmp(tag, TAG_FLOAT) || !strcmp(tag, TAG_NULL) ||
                     !strcmp(tag, TAG_TIMESTAMP);
    if (!resolvable || (tag && !strcmp(tag, TAG_STR))) {
        *out = json_object_new_string_len(text, (int)len);
        return 0;
    }
    if (!memchr(text, '\0', len)) {
        /* (a NUL byte, from an escape, matches no number or keyword: it stays a string) */
        resolve_plain(text, &r, !tag || !strcmp(tag, TAG_TIMESTAMP));
    }
    if (tag) {
        const char *want = tag + strlen(TAG_PREFIX);
        const char *got = rkind_tag(r.kind) + 2;
        if (r.kind == R_MERGE) {
            got = "merge";
        }
        int same = strcmp(want, got) == 0;
        if (!same && !strcmp(want, "float") && r.kind == R_INT) {
            r.kind = R_FLOAT;
            r.d = (double)r.i;
            same = 1;
        }
        if (!same) {
            return rerr_at(CO_EINVALID, ev->start_mark, "cannot decode %s `%s` as a !!%s",
                           rkind_tag(r.kind), shorten(text, sb), want);
        }
    }
    *out = resolved_value(&r, text, len);
    return 0;
}

/* Converts a mapping key value to its JSON key as YAMLToJSON does. */
static int key_string(char **out, const struct json_object *key, yaml_mark_t mark)
{
    char num[CO_JSON__NUMBER_MAX];
    int64_t i = 0;
    uint64_t u = 0;
    int uns = 0;
    switch (json_object_get_type(key)) {
    case json_type_string:
        if (memchr(json_object_get_string((struct json_object *)key), '\0',
                   (size_t)json_object_get_string_len(key))) {
            return rerr_at(CO_EINVALID, mark, "mapping key contains a NUL character");
        }
        *out = co_xstrdup(json_object_get_string((struct json_object *)key));
        return 0;
    case json_type_boolean:
        *out = co_xstrdup(json_object_get_boolean(key) ? "true" : "false");
        return 0;
    case json_type_int:
        co_json__integer(key, &i, &u, &uns);
        if (uns) {
            return rerr_at(CO_EINVALID, mark, "unsupported map key of type uint64: %llu",
                           (unsigned long long)u);
        }
        *out = co_xasprintf("%lld", (long long)i);
        return 0;
    case json_type_double: {
        double d = json_object_get_double(key);
        if (isnan(d)) {
            *out = co_xstrdup(".nan");
        } else if (isinf((float)d)) { /* also doubles beyond the float32 range */
            *out = co_xstrdup(d > 0 ? ".inf" : "-.inf");
        } else {
            co_json__format_double(num, d, 'g', 32);
            *out = co_xstrdup(num);
        }
        return 0;
    }
    case json_type_null:
        return rerr_at(CO_EINVALID, mark, "unsupported map key: null");
    case json_type_object:
    case json_type_array:
        return rerr_at(CO_EINVALID, mark, "invalid map key: a %s cannot be a key",
                       json_object_is_type(key, json_type_object) ? "mapping" : "sequence");
    }
    return rerr_at(CO_EINVALID, mark, "unsupported map key");
}

static int merge_into(frame *f, const struct json_object *src, yaml_mark_t mark)
{
    const char *msg = "map merge requires map or sequence of maps as the value";
    if (json_object_is_type(src, json_type_object)) {
        json_object_object_foreach ((struct json_object *)src, k, v) {
            json_object_object_add(f->obj, k, co_json_copy(v));
        }
        return 0;
    }
    if (!json_object_is_type(src, json_type_array)) {
        return rerr_at(CO_EINVALID, mark, "%s", msg);
    }
    size_t n = json_object_array_length(src);
    for (size_t i = 0; i < n; i++) {
        if (!json_object_is_type(json_object_array_get_idx(src, i), json_type_object)) {
            return rerr_at(CO_EINVALID, mark, "%s", msg);
        }
    }
    /* earlier mappings take precedence: apply them last */
    for (size_t i = n; i > 0; i--) {
        merge_into(f, json_object_array_get_idx(src, i - 1), mark);
    }
    return 0;
}

/*
 * Hands a finished value (ownership taken) to the collection being built, or makes it the
 * document root. @p is_merge marks a plain "<<" scalar, @p nodes and @p depth describe it.
 */
static int deliver(reader *rd,
                   struct json_object *val,
                   int is_merge,
                   size_t nodes,
                   int depth,
                   yaml_mark_t mark)
{
    int rc = 0;
    if (rd->nstack == 0) {
        rd->root = val;
        return 0;
    }
    frame *f = &rd->stack[rd->nstack - 1];
    f->nodes += nodes;
    if (depth + 1 > f->depth) {
        f->depth = depth + 1;
    }
    if (!f->is_map) {
        json_object_array_add(f->obj, val);
        return 0;
    }
    if (!f->have_key) {
        f->have_key = 1;
        f->key_mark = mark;
        f->key_is_merge = is_merge;
        if (!is_merge) {
            rc = key_string(&f->key, val, mark);
        }
        json_object_put(val);
        return rc;
    }
    f->have_key = 0;
    if (f->key_is_merge) {
        rc = merge_into(f, val, f->key_mark);
        json_object_put(val);
        return rc;
    }
    if (rd->flags & CO_YAML_UNIQUE_KEYS) {
        if (!f->seen) {
            f->seen = json_object_new_object();
        }
        if (json_object_object_get_ex(f->seen, f->key, NULL)) {
            rc = rerr_at(CO_EINVALID, f->key_mark, "mapping key \"%s\" already defined", f->key);
            json_object_put(val);
            free(f->key);
            f->key = NULL;
            return rc;
        }
        json_object_object_add(f->seen, f->key, NULL);
    }
    json_object_object_add(f->obj, f->key, val);
    free(f->key);
    f->key = NULL;
    return 0;
}

/*
 * Anchors by name: rd->anchor_index maps a name to its newest anchor (an index into rd->anchors
 * plus one), which is the one an alias means. An alias then costs one lookup: a scan back
 * through the anchors made a stream of 40,000 anchors and as many aliases (0.7 MB) take 11 s.
 */
static anchor *add_anchor(reader *rd, const char *name)
{
    if (rd->nanchors == rd->capanchors) {
        rd->capanchors = rd->capanchors ? rd->capanchors * 2 : 8;
        rd->anchors = co_xreallocarray(rd->anchors, rd->capanchors, sizeof(*rd->anchors));
    }
    anchor *a = &rd->anchors[rd->nanchors++];
    memset(a, 0, sizeof(*a));
    a->name = co_xstrdup(name);
    co_strmap_put(&rd->anchor_index, name, (void *)(uintptr_t)rd->nanchors);
    return a;
}

static void free_frame(frame *f)
{
    json_object_put(f->obj);
    json_object_put(f->seen);
    free(f->anchor);
    free(f->key);
}

static void reader_reset(reader *rd)
{
    while (rd->nstack > 0) {
        free_frame(&rd->stack[--rd->nstack]);
    }
    for (size_t i = 0; i < rd->nanchors; i++) {
        free(rd->anchors[i].name);
        json_object_put(rd->anchors[i].value);
    }
    rd->nanchors = 0;
    /* dropped rather than cleared: a later small document would pay for a large one's table */
    co_strmap_dispose(&rd->anchor_index);
    json_object_put(rd->root);
    rd->root = NULL;
}

static int start_collection(reader *rd, const yaml_event_t *ev, int is_map)
{
    const yaml_char_t *anchor_name =
        is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
    if (rd->nstack >= CO_MAX_NESTING) {
        return rerr_at(CO_EINVALID, ev->start_mark, "nesting deeper than %d levels",
                       CO_MAX_NESTING);
    }
    if (rd->nstack == rd->capstack) {
        rd->capstack = rd->capstack ? rd->capstack * 2 : 16;
        rd->stack = co_xreallocarray(rd->stack, rd->capstack, sizeof(*rd->stack));
    }
    frame *f = &rd->stack[rd->nstack++];
    memset(f, 0, sizeof(*f));
    f->is_map = is_map;
    f->obj = is_map ? json_object_new_object() : json_object_new_array();
    if (anchor_name) {
        anchor *a = add_anchor(rd, (const char *)anchor_name);
        f->anchor = co_xstrdup((const char *)anchor_name);
        f->anchor_idx = (size_t)(a - rd->anchors);
    }
    return 0;
}

static int end_collection(reader *rd, const yaml_event_t *ev)
{
    CO_ASSERT(rd->stack != NULL && rd->nstack > 0); /* libyaml balances start and end */
    frame f = rd->stack[--rd->nstack];
    struct json_object *obj = f.obj;
    f.obj = NULL;
    if (f.anchor) {
        CO_ASSERT(rd->anchors != NULL && f.anchor_idx < rd->nanchors);
        anchor *a = &rd->anchors[f.anchor_idx];
        a->value = json_object_get(obj);
        a->nodes = f.nodes + 1;
        a->depth = f.depth;
        a->done = 1;
    }
    size_t nodes = f.nodes + 1;
    int depth = f.depth;
    free_frame(&f);
    return deliver(rd, obj, 0, nodes, depth, ev->start_mark);
}

static int on_alias(reader *rd, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    size_t at = (uintptr_t)co_strmap_get(&rd->anchor_index, name);
    anchor *a = at ? &rd->anchors[at - 1] : NULL;
    if (!a) {
        return rerr_at(CO_EINVALID, ev->start_mark, "unknown anchor '%s' referenced", name);
    }
    if (!a->done) {
        return rerr_at(CO_EINVALID, ev->start_mark, "anchor '%s' value contains itself", name);
    }
    if (rd->nstack + (size_t)a->depth > CO_MAX_NESTING) {
        return rerr_at(CO_EINVALID, ev->start_mark,
                       "alias '%s' makes the document nest deeper than %d levels", name,
                       CO_MAX_NESTING);
    }
    if (a->nodes > CO_MAX_YAML_ALIAS_NODES - rd->alias_nodes) {
        return rerr_at(CO_ETOOBIG, ev->start_mark,
                       "aliases expand to more than %d nodes (excessive aliasing)",
                       CO_MAX_YAML_ALIAS_NODES);
    }
    rd->alias_nodes += a->nodes;
    struct json_object *copy = co_json_copy(a->value);
    int rc = co_budget_charge_json(copy, NULL);
    if (rc < 0) {
        json_object_put(copy);
        return rc;
    }
    /* An alias to the plain scalar "<<" is a string, never a merge key. */
    return deliver(rd, copy, 0, a->nodes, a->depth, ev->start_mark);
}

/* Charges the render budget (co/util/budget.h) with what the json-c value of @p ev will hold, so
 * that a render's decoded documents count against its memory (an empty mapping costs 800
 * bytes: a flow of "{}" takes 160 times its text), and counts the event against its CPU time. */
static int budget_event(const yaml_event_t *ev)
{
    size_t bytes = 0;
    if (ev->type == YAML_SCALAR_EVENT) {
        bytes = 64 + ev->data.scalar.length;
    } else if (ev->type == YAML_MAPPING_START_EVENT) {
        bytes = 800;
    } else if (ev->type == YAML_SEQUENCE_START_EVENT) {
        bytes = 352;
    }
    int rc = bytes ? co_budget_charge(bytes) : 0;
    return rc < 0 ? rc : co_budget_tick();
}

static int on_scalar(reader *rd, const yaml_event_t *ev)
{
    struct json_object *val = NULL;
    int rc = scalar_value(&val, ev);
    if (rc < 0) {
        return rc;
    }
    const char *tag = (const char *)ev->data.scalar.tag;
    if ((rd->flags & CO_YAML_CORE_BOOLS) && !tag && json_object_is_type(val, json_type_boolean) &&
        !in_list((const char *)ev->data.scalar.value, core_bool_words,
                 CO_ARRAY_SIZE(core_bool_words))) {
        json_object_put(val);
        val = json_object_new_string_len((const char *)ev->data.scalar.value,
                                         (int)ev->data.scalar.length);
    }
    int is_merge = ev->data.scalar.length == 2 && memcmp(ev->data.scalar.value, "<<", 2) == 0 &&
                   (ev->data.scalar.plain_implicit || (tag && !strcmp(tag, TAG_MERGE)));
    if (ev->data.scalar.anchor) {
        anchor *a = add_anchor(rd, (const char *)ev->data.scalar.anchor);
        a->value = json_object_get(val);
        a->nodes = 1;
        a->done = 1;
    }
    return deliver(rd, val, is_merge, 1, 0, ev->start_mark);
}

/* Line and column (1-based, in characters) of byte @p offset of the input. */
static void offset_position(const reader *rd, size_t offset, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < offset && i < rd->len; i++) {
        if (rd->data[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)rd->data[i] & 0xc0) != 0x80) {
            (*col)++;
        }
    }
}

static int parser_error(const reader *rd, const yaml_parser_t *p)
{
    const char *problem = p->problem ? p->problem : "unknown error";
    if (p->error != YAML_MEMORY_ERROR && (rd->flags & CO_YAML_GO_UNMARSHAL)) {
        /* go-yaml names the problem's 0-based line (a scanner's 1-based), else the context's,
         * and no line at all when that is 0 */
        size_t line = 0;
        if (p->problem_mark.line != 0) {
            line = p->problem_mark.line + (p->error == YAML_SCANNER_ERROR);
        } else if (p->context_mark.line != 0) {
            line = p->context_mark.line;
        }
        const char *msg = p->problem ? p->problem : "unknown problem parsing YAML content";
        if (line) {
            return co_error_set(CO_EINVALID, "line %zu: %s", line, msg);
        }
        return co_error_set(CO_EINVALID, "%s", msg);
    }
    switch (p->error) {
    case YAML_MEMORY_ERROR:
        return co_error_set(CO_ERROR, "YAML parser out of memory");
    case YAML_READER_ERROR: {
        size_t line, col;
        offset_position(rd, p->problem_offset, &line, &col);
        if (p->problem_value != -1) {
            return co_error_set(CO_EINVALID, "line %zu, column %zu: %s (byte 0x%02x)", line, col,
                                problem, (unsigned)p->problem_value & 0xff);
        }
        return co_error_set(CO_EINVALID, "line %zu, column %zu: %s", line, col, problem);
    }
    default:
        if (p->context) {
            return co_error_set(CO_EINVALID,
                                "line %zu, column %zu: %s (%s at line %zu, column %zu)",
                                p->problem_mark.line + 1, p->problem_mark.column + 1, problem,
                                p->context, p->context_mark.line + 1, p->context_mark.column + 1);
        }
        return co_error_set(CO_EINVALID, "line %zu, column %zu: %s", p->problem_mark.line + 1,
                            p->problem_mark.column + 1, problem);
    }
}

int co_yaml_parse_stream(co_yaml_docs *out, const char *data, size_t len, unsigned flags)
{
    if (len > CO_MAX_DOCUMENT) {
        return co_error_set(CO_ETOOBIG, "YAML stream of %zu bytes exceeds the limit of %zu", len,
                            (size_t)CO_MAX_DOCUMENT);
    }
    yaml_parser_t parser;
    reader rd;
    co_yaml_docs docs = CO_YAML_DOCS_INIT;
    size_t capdocs = 0;
    int doc_line = 0;
    int rc = 0;
    int done = 0;

    memset(&rd, 0, sizeof(rd));
    rd.data = data;
    rd.len = len;
    rd.flags = flags;
    CO_ASSERT(yaml_parser_initialize(&parser) == 1);
    yaml_parser_set_input_string(&parser, (const unsigned char *)(len ? data : ""), len);

    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser_error(&rd, &parser);
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        case YAML_DOCUMENT_START_EVENT:
            doc_line = (int)ev.start_mark.line + 1;
            break;
        case YAML_DOCUMENT_END_EVENT:
            if (!(flags & CO_YAML_SKIP_NULL) || rd.root != NULL) {
                if (docs.len == capdocs) {
                    capdocs = capdocs ? capdocs * 2 : 4;
                    docs.items = co_xreallocarray(docs.items, capdocs, sizeof(*docs.items));
                }
                docs.items[docs.len].value = rd.root;
                docs.items[docs.len].line = doc_line;
                docs.len++;
                rd.root = NULL;
            }
            /* anchors do not cross documents; the alias budget covers the whole stream */
            reader_reset(&rd);
            break;
        case YAML_SCALAR_EVENT:
            rc = on_scalar(&rd, &ev);
            break;
        case YAML_ALIAS_EVENT:
            rc = on_alias(&rd, &ev);
            break;
        case YAML_SEQUENCE_START_EVENT:
            rc = start_collection(&rd, &ev, 0);
            break;
        case YAML_MAPPING_START_EVENT:
            rc = start_collection(&rd, &ev, 1);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            rc = end_collection(&rd, &ev);
            break;
        default:
            break;
        }
        if (rc == 0) {
            rc = budget_event(&ev);
        }
        yaml_event_delete(&ev);
        if (rc < 0) {
            break;
        }
    }
    yaml_parser_delete(&parser);
    reader_reset(&rd);
    free(rd.stack);
    free(rd.anchors);
    if (rc < 0) {
        co_yaml_docs_dispose(&docs);
        return rc;
    }
    *out = docs;
    return 0;
}

void co_yaml_docs_dispose(co_yaml_docs *docs)
{
    if (!docs) {
        return;
    }
    for (size_t i = 0; i < docs->len; i++) {
        json_object_put(docs->items[i].value);
    }
    free(docs->items);
    docs->items = NULL;
    docs->len = 0;
}

int co_yaml_parse(struct json_object **out, const char *data, size_t len, unsigned flags)
{
    co_yaml_docs docs = CO_YAML_DOCS_INIT;
    int rc = co_yaml_parse_stream(&docs, data, len, flags | CO_YAML_SKIP_NULL);
    if (rc < 0) {
        return rc;
    }
    if (docs.len > 1 && !(flags & CO_YAML_GO_UNMARSHAL)) {
        rc =
            co_error_set(CO_EINVALID, "line %d: expected a single YAML document, found another one",
                         docs.items[1].line);
        co_yaml_docs_dispose(&docs);
        return rc;
    }
    *out = docs.len ? json_object_get(docs.items[0].value) : NULL;
    co_yaml_docs_dispose(&docs);
    return 0;
}

/* ============================================================================================
 * Writing
 * ========================================================================================== */

typedef struct writer {
    co_buf *out;
    int rc;
} writer;

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
    writer *w = data;
    if (w->rc < 0) {
        return 0;
    }
    w->rc = co_buf_put(w->out, buffer, size);
    return w->rc == 0;
}

/* go-yaml's isBase60Float: ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$ */
static int is_base60_float(const char *s)
{
    if (*s == '+' || *s == '-') {
        s++;
    }
    if (*s < '0' || *s > '9') {
        return 0;
    }
    while ((*s >= '0' && *s <= '9') || *s == '_') {
        s++;
    }
    int groups = 0;
    while (*s == ':') {
        s++;
        if (s[0] >= '0' && s[0] <= '5' && s[1] >= '0' && s[1] <= '9') {
            s += 2;
        } else if (s[0] >= '0' && s[0] <= '9') {
            s++;
        } else {
            return 0;
        }
        groups++;
    }
    if (!groups) {
        return 0;
    }
    if (*s == '.') {
        s++;
        while ((*s >= '0' && *s <= '9') || *s == '_') {
            s++;
        }
    }
    return *s == '\0';
}

/* Whether a string must be quoted so that it reads back as a string. */
static int needs_quotes(const char *s, size_t len)
{
    if (len == 0 || memchr(s, '\0', len)) {
        return len == 0;
    }
    resolved r = {R_STR, 0, 0, 0, 0};
    resolve_plain(s, &r, 1);
    return r.kind != R_STR || is_base60_float(s) || strcmp(s, "<<") == 0;
}

/* Whether libyaml's literal style can carry @p s exactly: only '\n' line breaks. */
static int literal_ok(const char *s, size_t len)
{
    if (!memchr(s, '\n', len)) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\r' || c == '\0') {
            return 0;
        }
        /* NEL (C2 85), LS and PS (E2 80 A8/A9) are line breaks to YAML as well */
        if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] == 0x85) {
            return 0;
        }
        if (c == 0xe2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
            ((unsigned char)s[i + 2] == 0xa8 || (unsigned char)s[i + 2] == 0xa9)) {
            return 0;
        }
    }
    return 1;
}

static int emit_event(yaml_emitter_t *em, yaml_event_t *ev, writer *w)
{
    if (!yaml_emitter_emit(em, ev)) {
        if (w->rc < 0) {
            return w->rc;
        }
        return co_error_set(CO_EINVALID, "YAML emitter: %s",
                            em->problem ? em->problem : "unknown error");
    }
    return 0;
}

static int emit_scalar(yaml_emitter_t *em,
                       writer *w,
                       const char *tag,
                       const char *value,
                       size_t len,
                       int implicit,
                       yaml_scalar_style_t style)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, (yaml_char_t *)tag, (yaml_char_t *)value, (int)len,
                                      implicit, implicit, style)) {
        return co_error_set(CO_EINVALID, "YAML emitter: cannot represent a scalar");
    }
    return emit_event(em, &ev, w);
}

static int emit_string(yaml_emitter_t *em, writer *w, const char *s, size_t len, int is_key)
{
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        size_t n = co_utf8_decode((const unsigned char *)s + i, len - i, &cp);
        if (n == 0) {
            char *b64 = co_base64_encode(s, len, CO_BASE64_STD);
            int rc = emit_scalar(em, w, TAG_BINARY, b64, strlen(b64), 0, YAML_PLAIN_SCALAR_STYLE);
            free(b64);
            return rc;
        }
        i += n;
    }
    yaml_scalar_style_t style = YAML_PLAIN_SCALAR_STYLE;
    if (needs_quotes(s, len)) {
        style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    } else if (memchr(s, '\n', len)) {
        style = (!is_key && literal_ok(s, len)) ? YAML_LITERAL_SCALAR_STYLE
                                                : YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    }
    return emit_scalar(em, w, NULL, s, len, 1, style);
}

static int
emit_node(yaml_emitter_t *em, writer *w, const struct json_object *obj, unsigned flags, int depth)
{
    char num[CO_JSON__NUMBER_MAX];
    yaml_event_t ev;
    int rc = 0;
    if (depth > CO_MAX_NESTING) {
        return co_error_set(CO_EINVALID, "YAML emitter: nesting deeper than %d levels",
                            CO_MAX_NESTING);
    }
    switch (json_object_get_type(obj)) {
    case json_type_null:
        return emit_scalar(em, w, NULL, "null", 4, 1, YAML_PLAIN_SCALAR_STYLE);
    case json_type_boolean: {
        const char *v = json_object_get_boolean(obj) ? "true" : "false";
        return emit_scalar(em, w, NULL, v, strlen(v), 1, YAML_PLAIN_SCALAR_STYLE);
    }
    case json_type_int: {
        int64_t i = 0;
        uint64_t u = 0;
        int uns = 0;
        co_json__integer(obj, &i, &u, &uns);
        int n = uns ? snprintf(num, sizeof(num), "%llu", (unsigned long long)u)
                    : snprintf(num, sizeof(num), "%lld", (long long)i);
        return emit_scalar(em, w, NULL, num, (size_t)n, 1, YAML_PLAIN_SCALAR_STYLE);
    }
    case json_type_double: {
        double d = json_object_get_double(obj);
        const char *v = num;
        if (isnan(d)) {
            v = ".nan";
        } else if (isinf(d)) {
            v = d > 0 ? ".inf" : "-.inf";
        } else {
            co_json__format_double(num, d, 'g', 64);
        }
        return emit_scalar(em, w, NULL, v, strlen(v), 1, YAML_PLAIN_SCALAR_STYLE);
    }
    case json_type_string:
        return emit_string(em, w, json_object_get_string((struct json_object *)obj),
                           (size_t)json_object_get_string_len(obj), 0);
    case json_type_array: {
        yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
        if ((rc = emit_event(em, &ev, w)) < 0) {
            return rc;
        }
        size_t n = json_object_array_length(obj);
        for (size_t i = 0; i < n; i++) {
            if ((rc = emit_node(em, w, json_object_array_get_idx(obj, i), flags, depth + 1)) < 0) {
                return rc;
            }
        }
        yaml_sequence_end_event_initialize(&ev);
        return emit_event(em, &ev, w);
    }
    case json_type_object: {
        size_t k = 0;
        co_json__kv *items = co_json__members(obj, (flags & CO_YAML_SORTED) != 0, &k);
        yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
        rc = emit_event(em, &ev, w);
        for (size_t i = 0; rc == 0 && i < k; i++) {
            rc = emit_string(em, w, items[i].key, strlen(items[i].key), 1);
            if (rc == 0) {
                rc = emit_node(em, w, items[i].val, flags, depth + 1);
            }
        }
        free(items);
        if (rc < 0) {
            return rc;
        }
        yaml_mapping_end_event_initialize(&ev);
        return emit_event(em, &ev, w);
    }
    }
    return co_error_set(CO_EINVALID, "YAML emitter: unknown value type");
}

int co_yaml_emit(co_buf *out, const struct json_object *obj, unsigned flags)
{
    yaml_emitter_t em;
    yaml_event_t ev;
    writer w = {out, 0};
    size_t start = out->len;
    int rc;

    CO_ASSERT(yaml_emitter_initialize(&em) == 1);
    yaml_emitter_set_output(&em, write_handler, &w);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_width(&em, -1);
    yaml_emitter_set_indent(&em, 2);

    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    if ((rc = emit_event(&em, &ev, &w)) < 0) {
        goto done;
    }
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    if ((rc = emit_event(&em, &ev, &w)) < 0) {
        goto done;
    }
    if ((rc = emit_node(&em, &w, obj, flags, 0)) < 0) {
        goto done;
    }
    yaml_document_end_event_initialize(&ev, 1);
    if ((rc = emit_event(&em, &ev, &w)) < 0) {
        goto done;
    }
    yaml_stream_end_event_initialize(&ev);
    if ((rc = emit_event(&em, &ev, &w)) < 0) {
        goto done;
    }
    if (!yaml_emitter_flush(&em)) {
        rc = w.rc < 0 ? w.rc : co_error_set(CO_EINVALID, "YAML emitter: flush failed");
    }
done:
    yaml_emitter_delete(&em);
    if (rc < 0 && rc != CO_ETOOBIG) {
        co_buf_truncate(out, start);
    }
    return rc;
}

int co_yaml_emit_stream(co_buf *out, struct json_object *const *docs, size_t n, unsigned flags)
{
    for (size_t i = 0; i < n; i++) {
        int rc;
        if (i > 0 && (rc = co_buf_puts(out, "---\n")) < 0) {
            return rc;
        }
        if ((rc = co_yaml_emit(out, docs[i], flags)) < 0) {
            return rc;
        }
    }
    return 0;
}

char *co_yaml_dumps(const struct json_object *obj, unsigned flags)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    if (co_yaml_emit(&b, obj, flags) < 0) {
        co_buf_dispose(&b);
        return NULL;
    }
    return co_buf_take(&b, NULL);
}
