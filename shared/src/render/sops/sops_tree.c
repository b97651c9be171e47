/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The document tree of a SOPS file and its readers and writers for the five storage formats.
 *
 * sops hashes the plaintext of every value, in document order, with the type rules of its Go
 * stores, so the readers here reproduce those rules rather than Kubernetes' YAML conventions:
 * YAML scalars are resolved as gopkg.in/yaml.v3 resolves them into interface{} (YAML 1.2 core
 * booleans, Go integer syntax, implicit timestamps kept as strings), JSON numbers become ints
 * when they parse as int64 and floats otherwise, dotenv and INI values are strings. YAML is
 * parsed with libyaml and JSON with json-c; dotenv and INI are line formats read here, INI
 * with the rules of the go-ini package sops uses. Comments are not kept: they never take part
 * in sops' MAC, and only the comment-regex options (which this module treats by the shape of
 * each value) depend on them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <yaml.h>

#include "co/util/strconv.h"
#include "co/util/digest.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "sops_int.h"

/* ---- nodes ------------------------------------------------------------------------------- */

co_sops__node *co_sops__node_new(co_sops__kind kind)
{
    co_sops__node *node = co_xcalloc(1, sizeof(*node));
    node->kind = kind;
    return node;
}

void co_sops__node_free(co_sops__node *node)
{
    if (!node) {
        return;
    }
    for (size_t i = 0; i < node->n; i++) {
        if (node->keys) {
            free(node->keys[i]);
        }
        co_sops__node_free(node->kids[i]);
    }
    free(node->keys);
    free(node->key_lens);
    free(node->kids);
    if (node->str) {
        co_free_secret(node->str, node->len + 1);
    }
    free(node);
}

static void grow(co_sops__node *node)
{
    if (node->n == node->cap) {
        node->cap = node->cap ? node->cap * 2 : 4;
        node->kids = co_xreallocarray(node->kids, node->cap, sizeof(co_sops__node *));
        if (node->kind == CO_SOPS__N_MAP) {
            node->keys = co_xreallocarray(node->keys, node->cap, sizeof(*node->keys));
            node->key_lens = co_xreallocarray(node->key_lens, node->cap, sizeof(*node->key_lens));
        }
    }
    CO_ASSERT(node->kids != NULL && node->n < node->cap);
}

void co_sops__map_add(co_sops__node *map, const char *key, size_t key_len, co_sops__node *value)
{
    grow(map);
    CO_ASSERT(map->kids && map->keys && map->key_lens);
    map->keys[map->n] = co_xmemdup(key, key_len);
    map->key_lens[map->n] = key_len;
    map->kids[map->n++] = value;
}

void co_sops__list_add(co_sops__node *list, co_sops__node *value)
{
    grow(list);
    CO_ASSERT(list->kids);
    list->kids[list->n++] = value;
}

co_sops__node *co_sops__map_get(const co_sops__node *map, const char *key)
{
    if (!map || map->kind != CO_SOPS__N_MAP) {
        return NULL;
    }
    size_t len = strlen(key);
    for (size_t i = 0; i < map->n; i++) {
        if (map->key_lens[i] == len && memcmp(map->keys[i], key, len) == 0) {
            return map->kids[i];
        }
    }
    return NULL;
}

void co_sops__node_set_str(co_sops__node *node, const char *s, size_t len)
{
    if (node->str) {
        co_free_secret(node->str, node->len + 1);
    }
    node->str = co_xmemdup(s, len);
    node->len = len;
}

static co_sops__node *str_node(const char *s, size_t len)
{
    co_sops__node *node = co_sops__node_new(CO_SOPS__N_STR);
    co_sops__node_set_str(node, s, len);
    return node;
}

/* Removes entry @p i of a map, returning its value (the key is freed). */
static co_sops__node *map_take(co_sops__node *map, size_t i)
{
    co_sops__node *v = map->kids[i];
    free(map->keys[i]);
    memmove(map->keys + i, map->keys + i + 1, (map->n - i - 1) * sizeof(*map->keys));
    memmove(map->key_lens + i, map->key_lens + i + 1, (map->n - i - 1) * sizeof(*map->key_lens));
    memmove(map->kids + i, map->kids + i + 1, (map->n - i - 1) * sizeof(co_sops__node *));
    map->n--;
    return v;
}

static co_sops__node *node_copy(const co_sops__node *src, size_t *budget)
{
    if (*budget == 0) {
        return NULL;
    }
    (*budget)--;
    co_sops__node *dst = co_sops__node_new(src->kind);
    dst->ival = src->ival;
    dst->fval = src->fval;
    dst->bval = src->bval;
    if (src->str) {
        co_sops__node_set_str(dst, src->str, src->len);
    }
    for (size_t i = 0; i < src->n; i++) {
        co_sops__node *kid = node_copy(src->kids[i], budget);
        if (!kid) {
            co_sops__node_free(dst);
            return NULL;
        }
        if (src->kind == CO_SOPS__N_MAP) {
            co_sops__map_add(dst, src->keys[i], src->key_lens[i], kid);
        } else {
            co_sops__list_add(dst, kid);
        }
    }
    return dst;
}

void co_sops__doc_dispose(co_sops__doc *doc)
{
    for (size_t i = 0; i < doc->n; i++) {
        co_sops__node_free(doc->branches[i]);
    }
    free(doc->branches);
    co_sops__node_free(doc->meta);
    memset(doc, 0, sizeof(*doc));
}

static void doc_add(co_sops__doc *doc, co_sops__node *branch)
{
    doc->branches = co_xreallocarray(doc->branches, doc->n + 1, sizeof(co_sops__node *));
    doc->branches[doc->n++] = branch;
}

/* ---- Go number formatting ---------------------------------------------------------------- */

/* Shortest decimal digits that round-trip @p v (positive, finite, non-zero): digits[0..nd),
 * value = 0.d1d2... * 10^dp. */
static void shortest_digits(double v, char digits[32], int *nd, int *dp)
{
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*e", prec - 1, v);
        if (strtod(buf, NULL) == v || prec == 17) {
            break;
        }
    }
    /* buf = d[.ddd]e[+-]XX */
    int n = 0;
    char *p = buf;
    for (; *p && *p != 'e'; p++) {
        if (*p >= '0' && *p <= '9') {
            digits[n++] = *p;
        }
    }
    int exp = (int)strtol(p + 1, NULL, 10);
    while (n > 1 && digits[n - 1] == '0') {
        n--;
    }
    digits[n] = '\0';
    *nd = n;
    *dp = exp + 1;
}

void co_sops__format_float(char *buf, size_t size, double v)
{
    if (isnan(v)) {
        snprintf(buf, size, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    size_t o = 0;
    if (signbit(v)) {
        buf[o++] = '-';
        v = -v;
    }
    if (v == 0) {
        snprintf(buf + o, size - o, "0");
        return;
    }
    char d[32];
    int nd, dp;
    shortest_digits(v, d, &nd, &dp);
    if (dp <= 0) {
        o += (size_t)snprintf(buf + o, size - o, "0.");
        for (int i = 0; i < -dp && o + 1 < size; i++) {
            buf[o++] = '0';
        }
        snprintf(buf + o, size - o, "%s", d);
        return;
    }
    for (int i = 0; i < dp && o + 1 < size; i++) {
        buf[o++] = i < nd ? d[i] : '0';
    }
    if (nd > dp && o + 1 < size) {
        buf[o++] = '.';
        for (int i = dp; i < nd && o + 1 < size; i++) {
            buf[o++] = d[i];
        }
    }
    buf[o] = '\0';
}

/* Go's strconv.FormatFloat(v, 'g', -1, 64), the form yaml.v3 writes floats in. */
static void format_float_g(char *buf, size_t size, double v, bool json)
{
    if (!isfinite(v) || v == 0) {
        if (json && v == 0) {
            snprintf(buf, size, signbit(v) ? "-0" : "0");
        } else {
            co_sops__format_float(buf, size, v);
        }
        return;
    }
    char d[32];
    int nd, dp;
    shortest_digits(fabs(v), d, &nd, &dp);
    int exp = dp - 1;
    bool use_e = json ? (exp < -6 || exp >= 21) : (exp < -4 || exp >= 6);
    if (!use_e) {
        co_sops__format_float(buf, size, v);
        return;
    }
    size_t o = 0;
    if (v < 0) {
        buf[o++] = '-';
    }
    buf[o++] = d[0];
    if (nd > 1) {
        buf[o++] = '.';
        for (int i = 1; i < nd; i++) {
            buf[o++] = d[i];
        }
    }
    if (json) {
        snprintf(buf + o, size - o, "e%c%d", exp < 0 ? '-' : '+', abs(exp));
    } else {
        snprintf(buf + o, size - o, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
    }
}

static void set_int(co_sops__node *node, long long v)
{
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%lld", v);
    node->kind = CO_SOPS__N_INT;
    node->ival = v;
    co_sops__node_set_str(node, buf, (size_t)n);
}

static void set_float(co_sops__node *node, double v)
{
    char buf[400];
    co_sops__format_float(buf, sizeof(buf), v);
    node->kind = CO_SOPS__N_FLOAT;
    node->fval = v;
    co_sops__node_set_str(node, buf, strlen(buf));
}

static void set_bool(co_sops__node *node, bool v)
{
    node->kind = CO_SOPS__N_BOOL;
    node->bval = v;
    co_sops__node_set_str(node, v ? "True" : "False", v ? 4 : 5);
}

/* Go's strconv.ParseInt(s, 0, 64) without underscores: the callers removed those YAML allows. */
static bool parse_go_int(const char *s, size_t len, long long *out)
{
    int64_t v = 0;
    if (co_strconv_parse_int(&v, s, len, 0, CO_STRCONV_NO_UNDERSCORES) != 0) {
        return false;
    }
    *out = v;
    return true;
}

/* Go's strconv.ParseFloat for the decimal forms sops and YAML produce. */
static bool parse_go_float(const char *s, size_t len, double *out)
{
    char buf[512];
    if (len == 0 || len >= sizeof(buf) || s[0] == ' ' || s[0] == '\t' || s[0] == '\n') {
        return false;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end != '\0' || errno == ERANGE) {
        return false;
    }
    *out = v;
    return true;
}

static bool yaml_style_float(const char *s, size_t len)
{
    /* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
    size_t i = 0;
    if (i < len && (s[i] == '+' || s[i] == '-')) {
        i++;
    }
    size_t digits = 0;
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            i++, digits++;
        }
        if (!digits) {
            return false;
        }
    } else {
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            i++, digits++;
        }
        if (!digits) {
            return false;
        }
        if (i < len && s[i] == '.') {
            i++;
            while (i < len && s[i] >= '0' && s[i] <= '9') {
                i++;
            }
        }
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-')) {
            i++;
        }
        size_t ed = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            i++, ed++;
        }
        if (!ed) {
            return false;
        }
    }
    return i == len;
}

static bool word_in(const char *s, size_t len, const char *const *words)
{
    for (; *words; words++) {
        if (strlen(*words) == len && memcmp(*words, s, len) == 0) {
            return true;
        }
    }
    return false;
}

static const char *const null_words[] = {"~", "null", "Null", "NULL", NULL};
static const char *const true_words[] = {"true", "True", "TRUE", NULL};
static const char *const false_words[] = {"false", "False", "FALSE", NULL};
static const char *const inf_words[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL};
static const char *const ninf_words[] = {"-.inf", "-.Inf", "-.INF", NULL};
static const char *const nan_words[] = {".nan", ".NaN", ".NAN", NULL};

/* Resolves a plain YAML scalar as yaml.v3 does when decoding into interface{}. */
static int resolve_plain(co_sops__node *node, const char *s, size_t len)
{
    if (len == 0 || word_in(s, len, null_words)) {
        node->kind = CO_SOPS__N_NULL;
        return 0;
    }
    if (word_in(s, len, true_words) || word_in(s, len, false_words)) {
        set_bool(node, s[0] == 't' || s[0] == 'T');
        return 0;
    }
    if (word_in(s, len, inf_words) || word_in(s, len, ninf_words) || word_in(s, len, nan_words)) {
        set_float(node, word_in(s, len, nan_words) ? NAN : s[0] == '-' ? -INFINITY : INFINITY);
        return 0;
    }
    char c = s[0];
    if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.') {
        char plain[512];
        size_t n = 0;
        for (size_t i = 0; i < len && n + 1 < sizeof(plain); i++) {
            if (s[i] != '_') {
                plain[n++] = s[i];
            }
        }
        long long iv;
        double fv;
        if (len < sizeof(plain) && parse_go_int(plain, n, &iv)) {
            set_int(node, iv);
            return 0;
        }
        if (len < sizeof(plain) && yaml_style_float(plain, n) && parse_go_float(plain, n, &fv)) {
            set_float(node, fv);
            return 0;
        }
    }
    co_sops__node_set_str(node, s, len);
    node->kind = CO_SOPS__N_STR;
    return 0;
}

/* ---- YAML -------------------------------------------------------------------------------- */

typedef struct anchor {
    char *name;
    co_sops__node *node; /* borrowed from the tree */
} anchor;

typedef struct yaml_reader {
    yaml_parser_t parser;
    anchor *anchors;
    size_t nanchors;
    size_t alias_budget;
    size_t depth;
} yaml_reader;

static int yaml_fail(yaml_reader *r, const char *what)
{
    if (r->parser.error != YAML_NO_ERROR) {
        return co_error_set(CO_EINVALID, "YAML: %s at line %zu column %zu",
                            r->parser.problem ? r->parser.problem : "syntax error",
                            r->parser.problem_mark.line + 1, r->parser.problem_mark.column + 1);
    }
    return co_error_set(CO_EINVALID, "YAML: %s", what);
}

static void remember_anchor(yaml_reader *r, const yaml_char_t *name, co_sops__node *node)
{
    if (!name) {
        return;
    }
    for (size_t i = 0; i < r->nanchors; i++) {
        if (strcmp(r->anchors[i].name, (const char *)name) == 0) {
            r->anchors[i].node = node;
            return;
        }
    }
    r->anchors = co_xreallocarray(r->anchors, r->nanchors + 1, sizeof(*r->anchors));
    r->anchors[r->nanchors].name = co_xstrdup((const char *)name);
    r->anchors[r->nanchors++].node = node;
}

/* A mapping key does not stay in the tree (its text does): an anchor on it names nothing once
 * it is freed, so that an alias to it is refused as unknown instead of copying freed memory. */
static void forget_anchors_of(yaml_reader *r, const co_sops__node *node)
{
    size_t k = 0;
    for (size_t i = 0; i < r->nanchors; i++) {
        if (r->anchors[i].node == node) {
            free(r->anchors[i].name);
            continue;
        }
        r->anchors[k++] = r->anchors[i];
    }
    r->nanchors = k;
}

static int scalar_node(co_sops__node **out, const yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    co_sops__node *node = co_sops__node_new(CO_SOPS__N_STR);
    static const char core[] = "tag:yaml.org,2002:";
    if (tag && strncmp(tag, core, sizeof(core) - 1) == 0) {
        const char *t = tag + sizeof(core) - 1;
        long long iv;
        double fv;
        if (strcmp(t, "null") == 0) {
            node->kind = CO_SOPS__N_NULL;
        } else if (strcmp(t, "bool") == 0 &&
                   (word_in(s, len, true_words) || word_in(s, len, false_words))) {
            set_bool(node, s[0] == 't' || s[0] == 'T');
        } else if (strcmp(t, "int") == 0 && parse_go_int(s, len, &iv)) {
            set_int(node, iv);
        } else if (strcmp(t, "float") == 0 && parse_go_float(s, len, &fv)) {
            set_float(node, fv);
        } else if (strcmp(t, "binary") == 0) {
            unsigned char *bytes = NULL;
            size_t blen = 0;
            if (co_base64_decode_alloc(&bytes, &blen, s, len, CO_BASE64_STD) < 0) {
                co_sops__node_free(node);
                return co_error_set(CO_EINVALID, "YAML: invalid !!binary value");
            }
            co_sops__node_set_str(node, (const char *)bytes, blen);
            free(bytes);
        } else if (strcmp(t, "str") == 0 || strcmp(t, "timestamp") == 0) {
            co_sops__node_set_str(node, s, len);
        } else {
            co_sops__node_free(node);
            return co_error_set(CO_EINVALID, "YAML: value \"%.40s\" does not match its tag !!%s", s,
                                t);
        }
    } else if (ev->data.scalar.plain_implicit && !tag) {
        resolve_plain(node, s, len);
    } else {
        co_sops__node_set_str(node, s, len);
    }
    *out = node;
    return 0;
}

static int parse_yaml_node(yaml_reader *r, co_sops__node **out, yaml_event_t *ev);

/* Builds a mapping or sequence from the events after its start event. */
static int parse_yaml_collection(yaml_reader *r, co_sops__node *coll, bool is_map)
{
    int error = 0;
    if (++r->depth > CO_MAX_NESTING) {
        return co_error_set(CO_EINVALID, "YAML: nesting deeper than %d levels", CO_MAX_NESTING);
    }
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&r->parser, &ev)) {
            error = yaml_fail(r, "parse error");
            break;
        }
        if (ev.type == (is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT)) {
            yaml_event_delete(&ev);
            break;
        }
        co_sops__node *key = NULL, *value = NULL;
        error = parse_yaml_node(r, is_map ? &key : &value, &ev);
        yaml_event_delete(&ev);
        if (error < 0) {
            break;
        }
        if (!(is_map ? key : value)) {
            error = co_error_set(CO_ERROR, "YAML: empty node");
            break;
        }
        if (is_map && key) {
            if (key->kind == CO_SOPS__N_MAP || key->kind == CO_SOPS__N_LIST) {
                co_sops__node_free(key);
                error = co_error_set(CO_EINVALID, "YAML: complex mapping keys are not supported");
                break;
            }
            const char *ks = key->str ? key->str : "null";
            size_t kl = key->str ? key->len : 4;
            for (size_t i = 0; i < coll->n; i++) {
                if (coll->key_lens[i] == kl && memcmp(coll->keys[i], ks, kl) == 0) {
                    error = co_error_set(CO_EINVALID, "YAML: mapping key \"%.*s\" already defined",
                                         (int)(kl > 60 ? 60 : kl), ks);
                    break;
                }
            }
            if (error < 0) {
                co_sops__node_free(key);
                break;
            }
            yaml_event_t vev;
            if (!yaml_parser_parse(&r->parser, &vev)) {
                co_sops__node_free(key);
                error = yaml_fail(r, "parse error");
                break;
            }
            error = parse_yaml_node(r, &value, &vev);
            yaml_event_delete(&vev);
            if (error < 0) {
                co_sops__node_free(key);
                break;
            }
            /* Keys keep their written text: "1" and "true" stay keys, not numbers. */
            co_sops__map_add(coll, ks, kl, value);
            forget_anchors_of(r, key);
            co_sops__node_free(key);
        } else {
            co_sops__list_add(coll, value);
        }
    }
    r->depth--;
    return error;
}

static int parse_yaml_node(yaml_reader *r, co_sops__node **out, yaml_event_t *ev)
{
    int error;
    co_sops__node *node = NULL;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        if ((error = scalar_node(&node, ev)) < 0) {
            return error;
        }
        remember_anchor(r, ev->data.scalar.anchor, node);
        break;
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT: {
        bool is_map = ev->type == YAML_MAPPING_START_EVENT;
        const yaml_char_t *anchor_name =
            is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
        node = co_sops__node_new(is_map ? CO_SOPS__N_MAP : CO_SOPS__N_LIST);
        if ((error = parse_yaml_collection(r, node, is_map)) < 0) {
            co_sops__node_free(node);
            return error;
        }
        remember_anchor(r, anchor_name, node);
        break;
    }
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)ev->data.alias.anchor;
        for (size_t i = r->nanchors; i-- > 0;) {
            if (strcmp(r->anchors[i].name, name) == 0) {
                node = node_copy(r->anchors[i].node, &r->alias_budget);
                if (!node) {
                    return co_error_set(CO_ETOOBIG, "YAML: aliases expand to more than %d nodes",
                                        CO_MAX_YAML_ALIAS_NODES);
                }
                break;
            }
        }
        if (!node) {
            return co_error_set(CO_EINVALID, "YAML: unknown anchor \"%.40s\"", name);
        }
        break;
    }
    default:
        return yaml_fail(r, "unexpected event");
    }
    *out = node;
    return 0;
}

static int load_yaml(co_sops__doc *doc, const char *data, size_t len)
{
    yaml_reader r = {.alias_budget = CO_MAX_YAML_ALIAS_NODES};
    int error = 0;
    bool done = false;
    if (!yaml_parser_initialize(&r.parser)) {
        return co_error_set(CO_ERROR, "YAML: cannot initialise the parser");
    }
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)data, len);
    while (!done && error == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&r.parser, &ev)) {
            error = yaml_fail(&r, "parse error");
            break;
        }
        if (ev.type == YAML_STREAM_END_EVENT) {
            done = true;
        } else if (ev.type == YAML_DOCUMENT_START_EVENT) {
            yaml_event_t root;
            if (!yaml_parser_parse(&r.parser, &root)) {
                yaml_event_delete(&ev);
                error = yaml_fail(&r, "parse error");
                break;
            }
            co_sops__node *node = NULL;
            error = parse_yaml_node(&r, &node, &root);
            yaml_event_delete(&root);
            if (error == 0 && !node) {
                error = co_error_set(CO_ERROR, "YAML: empty document node");
            }
            if (error == 0 && node) {
                if (node->kind == CO_SOPS__N_NULL) {
                    co_sops__node_free(node);
                    node = co_sops__node_new(CO_SOPS__N_MAP);
                }
                if (node->kind == CO_SOPS__N_LIST) {
                    error = co_error_set(CO_EINVALID,
                                         "YAML documents that are sequences are not supported");
                } else if (node->kind != CO_SOPS__N_MAP) {
                    error = co_error_set(CO_EINVALID,
                                         "YAML documents that are values are not supported");
                }
                if (error < 0) {
                    co_sops__node_free(node);
                } else {
                    doc_add(doc, node);
                }
            }
            /* Anchors do not cross documents. */
            for (size_t i = 0; i < r.nanchors; i++) {
                free(r.anchors[i].name);
            }
            r.nanchors = 0;
        }
        yaml_event_delete(&ev);
    }
    for (size_t i = 0; i < r.nanchors; i++) {
        free(r.anchors[i].name);
    }
    free(r.anchors);
    yaml_parser_delete(&r.parser);
    return error;
}

/* ---- JSON -------------------------------------------------------------------------------- */

static co_sops__node *from_json(struct json_object *o)
{
    co_sops__node *node;
    switch (json_object_get_type(o)) {
    case json_type_object:
        node = co_sops__node_new(CO_SOPS__N_MAP);
        json_object_object_foreach (o, k, v) {
            co_sops__map_add(node, k, strlen(k), from_json(v));
        }
        return node;
    case json_type_array:
        node = co_sops__node_new(CO_SOPS__N_LIST);
        for (size_t i = 0; i < json_object_array_length(o); i++) {
            co_sops__list_add(node, from_json(json_object_array_get_idx(o, i)));
        }
        return node;
    case json_type_string:
        return str_node(json_object_get_string(o), (size_t)json_object_get_string_len(o));
    case json_type_int:
        node = co_sops__node_new(CO_SOPS__N_INT);
        /* Beyond int64, Go's json.Number.Int64 fails and sops falls back to float64. */
        if (json_object_get_int64(o) == INT64_MAX && json_object_get_uint64(o) > INT64_MAX) {
            set_float(node, (double)json_object_get_uint64(o));
        } else {
            set_int(node, json_object_get_int64(o));
        }
        return node;
    case json_type_double:
        node = co_sops__node_new(CO_SOPS__N_FLOAT);
        set_float(node, json_object_get_double(o));
        return node;
    case json_type_boolean:
        node = co_sops__node_new(CO_SOPS__N_BOOL);
        set_bool(node, json_object_get_boolean(o));
        return node;
    case json_type_null:
    default:
        return co_sops__node_new(CO_SOPS__N_NULL);
    }
}

static int load_json(co_sops__doc *doc, const char *data, size_t len)
{
    struct json_tokener *tok = json_tokener_new_ex(CO_MAX_NESTING);
    struct json_object *obj = NULL;
    int error = 0;
    if (!tok) {
        return co_error_set(CO_ERROR, "JSON: cannot create a tokener");
    }
    if (len > INT32_MAX) {
        json_tokener_free(tok);
        return co_error_set(CO_ETOOBIG, "JSON document too large");
    }
    obj = json_tokener_parse_ex(tok, data, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    if (!obj || jerr != json_tokener_success) {
        error = co_error_set(CO_EINVALID, "JSON: %s at offset %zu",
                             json_tokener_error_desc(jerr ? jerr : json_tokener_continue),
                             json_tokener_get_parse_end(tok));
        goto done;
    }
    for (size_t i = json_tokener_get_parse_end(tok); i < len; i++) {
        if (data[i] != ' ' && data[i] != '\n' && data[i] != '\r' && data[i] != '\t') {
            error = co_error_set(CO_EINVALID, "JSON: trailing data after the document");
            goto done;
        }
    }
    if (json_object_get_type(obj) != json_type_object) {
        error = co_error_set(CO_EINVALID, "SOPS only supports JSON files with a top-level object");
        goto done;
    }
    doc_add(doc, from_json(obj));
done:
    json_object_put(obj);
    json_tokener_free(tok);
    return error;
}

/* ---- dotenv ------------------------------------------------------------------------------ */

/* Appends @p s with every "\n" escape (backslash, n) turned into a newline. */
static co_sops__node *unescape_newlines(const char *s, size_t len)
{
    co_sops__node *node = co_sops__node_new(CO_SOPS__N_STR);
    char *out = co_xmalloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\' && i + 1 < len && s[i + 1] == 'n') {
            out[n++] = '\n';
            i++;
        } else {
            out[n++] = s[i];
        }
    }
    co_sops__node_set_str(node, out, n);
    free(out);
    return node;
}

static int load_dotenv(co_sops__doc *doc, const char *data, size_t len)
{
    co_sops__node *branch = co_sops__node_new(CO_SOPS__N_MAP);
    size_t pos = 0, lineno = 0;
    while (pos <= len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - data) : len;
        const char *line = data + pos;
        size_t n = end - pos;
        lineno++;
        pos = end + 1;
        if (n == 0 || line[0] == '#') {
            if (!nl) {
                break;
            }
            continue;
        }
        const char *eq = memchr(line, '=', n);
        if (!eq) {
            co_sops__node_free(branch);
            return co_error_set(CO_EINVALID, "dotenv: line %zu has no '='", lineno);
        }
        size_t klen = (size_t)(eq - line);
        co_sops__map_add(branch, line, klen, unescape_newlines(eq + 1, n - klen - 1));
        if (!nl) {
            break;
        }
    }
    doc_add(doc, branch);
    return 0;
}

/* ---- INI --------------------------------------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static void trim(const char **s, size_t *len)
{
    while (*len && is_space(**s)) {
        (*s)++, (*len)--;
    }
    while (*len && is_space((*s)[*len - 1])) {
        (*len)--;
    }
}

static const char *mem_rfind(const char *s, size_t len, const char *needle, size_t nlen)
{
    if (nlen > len) {
        return NULL;
    }
    for (size_t i = len - nlen + 1; i-- > 0;) {
        if (memcmp(s + i, needle, nlen) == 0) {
            return s + i;
        }
    }
    return NULL;
}

/* Reads the next raw line including its "\n"; false at end of input. */
static bool raw_line(const char *data, size_t len, size_t *pos, const char **line, size_t *n)
{
    if (*pos >= len) {
        return false;
    }
    const char *start = data + *pos;
    const char *nl = memchr(start, '\n', len - *pos);
    *n = nl ? (size_t)(nl - start) + 1 : len - *pos;
    *line = start;
    *pos += *n;
    return true;
}

/* One value as go-ini reads it (quotes, multi-line """, continuation, inline comments). */
static int
ini_value(co_buf *val, const char *data, size_t len, size_t *pos, const char *in, size_t in_len)
{
    int error = 0;
    while (in_len && is_space(*in)) {
        in++, in_len--;
    }
    if (in_len == 0) {
        return 0;
    }
    const char *quote = NULL;
    if (in_len > 3 && memcmp(in, "\"\"\"", 3) == 0) {
        quote = "\"\"\"";
    } else if (in[0] == '`') {
        quote = "`";
    }
    if (quote) {
        size_t ql = strlen(quote);
        const char *close = mem_rfind(in + ql, in_len - ql, quote, ql);
        if (close) {
            return co_buf_put(val, in + ql, (size_t)(close - in - ql));
        }
        if ((error = co_buf_put(val, in + ql, in_len - ql)) < 0) {
            return error;
        }
        const char *line;
        size_t n;
        for (;;) {
            if (!raw_line(data, len, pos, &line, &n)) {
                return co_error_set(CO_EINVALID,
                                    "INI: missing closing quote of a multi-line value");
            }
            close = mem_rfind(line, n, quote, ql);
            if (close) {
                return co_buf_put(val, line, (size_t)(close - line));
            }
            if ((error = co_buf_put(val, line, n)) < 0) {
                return error;
            }
        }
    }
    const char *s = in;
    size_t n = in_len;
    trim(&s, &n);
    if (n && s[n - 1] == '\\') {
        if ((error = co_buf_put(val, s, n - 1)) < 0) {
            return error;
        }
        const char *line;
        size_t ln;
        while (raw_line(data, len, pos, &line, &ln)) {
            trim(&line, &ln);
            if (ln == 0) {
                break;
            }
            if ((error = co_buf_put(val, line, ln)) < 0) {
                return error;
            }
            if (val->ptr[val->len - 1] != '\\') {
                break;
            }
            co_buf_truncate(val, val->len - 1);
        }
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '#' || s[i] == ';') {
            n = i;
            trim(&s, &n);
            break;
        }
    }
    if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0] &&
        memchr(s + 1, s[0], n - 1) == s + n - 1) {
        s++;
        n -= 2;
    }
    return co_buf_put(val, s, n);
}

static int load_ini(co_sops__doc *doc, const char *data, size_t len)
{
    co_sops__node *branch = co_sops__node_new(CO_SOPS__N_MAP);
    co_sops__node *section = co_sops__node_new(CO_SOPS__N_MAP);
    co_buf val = CO_BUF_INIT(CO_MAX_SOPS_FILE);
    size_t pos = 0, lineno = 0;
    int error = 0;
    const char *line;
    size_t n;
    co_sops__map_add(branch, "DEFAULT", 7, section);
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0) {
        pos = 3;
    }
    while (raw_line(data, len, &pos, &line, &n)) {
        lineno++;
        while (n && is_space(*line)) {
            line++, n--;
        }
        if (n == 0 || line[0] == '#' || line[0] == ';') {
            continue;
        }
        if (line[0] == '[') {
            const char *close = mem_rfind(line, n, "]", 1);
            if (!close) {
                error = co_error_set(CO_EINVALID, "INI: line %zu: unclosed section", lineno);
                goto done;
            }
            size_t name_len = (size_t)(close - line - 1);
            if (name_len == 0) {
                error = co_error_set(CO_EINVALID, "INI: line %zu: empty section name", lineno);
                goto done;
            }
            section = co_sops__node_new(CO_SOPS__N_MAP);
            co_sops__map_add(branch, line + 1, name_len, section);
            continue;
        }
        const char *key = line, *rest;
        size_t key_len;
        char kq = (line[0] == '"' || line[0] == '`') ? line[0] : 0;
        if (kq) {
            size_t ql = (kq == '"' && n > 6 && memcmp(line, "\"\"\"", 3) == 0) ? 3 : 1;
            const char *qs = ql == 3 ? "\"\"\"" : (kq == '"' ? "\"" : "`");
            const char *close = NULL;
            for (size_t i = ql; i + ql <= n; i++) {
                if (memcmp(line + i, qs, ql) == 0) {
                    close = line + i;
                    break;
                }
            }
            if (!close) {
                error =
                    co_error_set(CO_EINVALID, "INI: line %zu: missing closing key quote", lineno);
                goto done;
            }
            const char *d = close + ql;
            while (d < line + n && *d != '=' && *d != ':') {
                d++;
            }
            if (d >= line + n) {
                error = co_error_set(CO_EINVALID, "INI: line %zu: key-value delimiter not found",
                                     lineno);
                goto done;
            }
            key = line + ql;
            key_len = (size_t)(close - key);
            rest = d + 1;
        } else {
            size_t d = 0;
            while (d < n && line[d] != '=' && line[d] != ':') {
                d++;
            }
            if (d == n) {
                error = co_error_set(CO_EINVALID, "INI: line %zu: key-value delimiter not found",
                                     lineno);
                goto done;
            }
            if (d == 0) {
                error = co_error_set(CO_EINVALID, "INI: line %zu: empty key name", lineno);
                goto done;
            }
            key_len = d;
            rest = line + d + 1;
        }
        trim(&key, &key_len);
        co_buf_reset(&val);
        if ((error = ini_value(&val, data, len, &pos, rest, (size_t)(line + n - rest))) < 0) {
            goto done;
        }
        /* A repeated key keeps its place and takes the new value. */
        bool replaced = false;
        for (size_t i = 0; i < section->n; i++) {
            if (section->key_lens[i] == key_len && memcmp(section->keys[i], key, key_len) == 0) {
                co_sops__node_set_str(section->kids[i], co_buf_cstr(&val), val.len);
                replaced = true;
                break;
            }
        }
        if (!replaced) {
            co_sops__map_add(section, key, key_len, str_node(co_buf_cstr(&val), val.len));
        }
    }
    doc_add(doc, branch);
    branch = NULL;
done:
    co_sops__node_free(branch);
    co_buf_dispose(&val);
    return error;
}

/* ---- metadata ---------------------------------------------------------------------------- */

/* sops' flattened metadata keys: "a__map_b", "a__list_0__map_c". */
static int unflatten_place(co_sops__node *root, const char *key, size_t len, co_sops__node *value)
{
    static const char map_sep[] = "__map_", list_sep[] = "__list_";
    co_sops__node *cur = root;
    size_t pos = 0;
    bool list_token = false;
    for (;;) {
        size_t end = pos;
        while (end < len && !(len - end >= 6 && memcmp(key + end, map_sep, 6) == 0) &&
               !(len - end >= 7 && memcmp(key + end, list_sep, 7) == 0)) {
            end++;
        }
        bool last = end == len;
        bool next_list = !last && len - end >= 7 && memcmp(key + end, list_sep, 7) == 0;
        co_sops__node **slot = NULL;
        if (list_token) {
            long long idx = 0;
            if (cur->kind != CO_SOPS__N_LIST || !parse_go_int(key + pos, end - pos, &idx) ||
                idx < 0 || idx > 100000) {
                return co_error_set(CO_EINVALID, "metadata key \"%.*s\": bad list index", (int)len,
                                    key);
            }
            while (cur->n <= (size_t)idx) {
                co_sops__list_add(cur, NULL);
            }
            slot = &cur->kids[idx];
        } else {
            if (cur->kind != CO_SOPS__N_MAP) {
                return co_error_set(CO_EINVALID, "metadata key \"%.*s\": type mismatch", (int)len,
                                    key);
            }
            for (size_t i = 0; i < cur->n && !slot; i++) {
                if (cur->key_lens[i] == end - pos &&
                    memcmp(cur->keys[i], key + pos, end - pos) == 0) {
                    slot = &cur->kids[i];
                }
            }
            if (!slot) {
                co_sops__map_add(cur, key + pos, end - pos, NULL);
                slot = &cur->kids[cur->n - 1];
            }
        }
        if (last) {
            if (*slot) {
                return co_error_set(CO_EINVALID, "metadata key \"%.*s\" is duplicated", (int)len,
                                    key);
            }
            *slot = value;
            return 0;
        }
        if (!*slot) {
            *slot = co_sops__node_new(next_list ? CO_SOPS__N_LIST : CO_SOPS__N_MAP);
        }
        cur = *slot;
        list_token = next_list;
        pos = end + (next_list ? 7 : 6);
    }
}

/* Takes the flattened metadata entries of @p branch (prefix, if any, stripped) into a map. */
static int unflatten(co_sops__node **out, co_sops__node *flat, bool escape_newlines)
{
    co_sops__node *root = co_sops__node_new(CO_SOPS__N_MAP);
    for (size_t i = 0; i < flat->n; i++) {
        co_sops__node *v = flat->kids[i];
        flat->kids[i] = NULL;
        if (escape_newlines && v && v->kind == CO_SOPS__N_STR) {
            co_sops__node *u = unescape_newlines(v->str, v->len);
            co_sops__node_free(v);
            v = u;
        }
        int error = unflatten_place(root, flat->keys[i], flat->key_lens[i], v);
        if (error < 0) {
            co_sops__node_free(v);
            co_sops__node_free(root);
            return error;
        }
    }
    *out = root;
    return 0;
}

static int extract_metadata(co_sops__doc *doc, co_sops_format format)
{
    int error = 0;
    if (doc->n == 0) {
        return co_error_set(CO_EINVALID, "sops metadata not found");
    }
    if (format == CO_SOPS_FORMAT_DOTENV) {
        co_sops__node *branch = doc->branches[0];
        co_sops__node *flat = co_sops__node_new(CO_SOPS__N_MAP);
        for (size_t i = 0; i < branch->n;) {
            if (branch->key_lens[i] >= 5 && memcmp(branch->keys[i], "sops_", 5) == 0) {
                co_sops__map_add(flat, branch->keys[i] + 5, branch->key_lens[i] - 5, NULL);
                flat->kids[flat->n - 1] = map_take(branch, i);
            } else {
                i++;
            }
        }
        if (flat->n == 0) {
            co_sops__node_free(flat);
            return co_error_set(CO_EINVALID, "sops metadata not found");
        }
        error = unflatten(&doc->meta, flat, false);
        co_sops__node_free(flat);
        return error;
    }
    co_sops__node *found = NULL;
    for (size_t b = 0; b < doc->n; b++) {
        co_sops__node *branch = doc->branches[b];
        for (size_t i = 0; i < branch->n;) {
            if (branch->key_lens[i] == 4 && memcmp(branch->keys[i], "sops", 4) == 0) {
                co_sops__node *v = map_take(branch, i);
                if (b == 0 && !found && v && v->kind == CO_SOPS__N_MAP) {
                    found = v;
                } else if (b == 0) {
                    co_sops__node_free(v);
                    co_sops__node_free(found);
                    return co_error_set(CO_EINVALID,
                                        found ? "found duplicate sops entry"
                                              : "found sops entry that is not a mapping");
                } else {
                    co_sops__node_free(v);
                }
            } else {
                i++;
            }
        }
    }
    if (!found) {
        return co_error_set(CO_EINVALID, "sops metadata not found");
    }
    if (format == CO_SOPS_FORMAT_INI) {
        /* Values below the section are flattened, newlines escaped. */
        for (size_t i = 0; i < found->n; i++) {
            if (found->kids[i] && found->kids[i]->kind != CO_SOPS__N_STR) {
                co_sops__node_free(found);
                return co_error_set(CO_EINVALID, "INI sops section holds a non-string value");
            }
        }
        error = unflatten(&doc->meta, found, true);
        co_sops__node_free(found);
        return error;
    }
    doc->meta = found;
    return 0;
}

int co_sops__load(co_sops__doc *doc, co_sops_format format, const char *data, size_t len)
{
    int error;
    memset(doc, 0, sizeof(*doc));
    switch (format) {
    case CO_SOPS_FORMAT_YAML:
        error = load_yaml(doc, data, len);
        break;
    case CO_SOPS_FORMAT_JSON:
    case CO_SOPS_FORMAT_BINARY:
        error = load_json(doc, data, len);
        break;
    case CO_SOPS_FORMAT_DOTENV:
        error = load_dotenv(doc, data, len);
        break;
    case CO_SOPS_FORMAT_INI:
        error = load_ini(doc, data, len);
        break;
    default:
        error = co_error_set(CO_EINVALID, "not a sops format");
        break;
    }
    if (error == 0) {
        error = extract_metadata(doc, format);
    }
    if (error < 0) {
        co_sops__doc_dispose(doc);
    }
    return error;
}

/* ---- writers ----------------------------------------------------------------------------- */

/* Would a plain YAML scalar with this text be read back as something other than a string, by
 * YAML 1.2 (yaml.v3) or YAML 1.1 (yaml.v2, kyaml) readers? Then it must be quoted. */
static bool needs_quotes(const char *s, size_t len)
{
    static const char *const words[] = {
        "y",    "Y",     "yes",   "Yes",   "YES",   "n",     "N",     "no",    "No",
        "NO",   "on",    "On",    "ON",    "off",   "Off",   "OFF",   "true",  "True",
        "TRUE", "false", "False", "FALSE", "null",  "Null",  "NULL",  "~",     ".inf",
        ".Inf", ".INF",  "-.inf", "-.Inf", "-.INF", "+.inf", "+.Inf", "+.INF", ".nan",
        ".NaN", ".NAN",  "<<",    "=",     NULL};
    if (len == 0 || word_in(s, len, words)) {
        return true;
    }
    char c = s[0];
    return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

static int
emit_scalar(yaml_emitter_t *em, const char *s, size_t len, yaml_scalar_style_t style, bool plain_ok)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len, plain_ok, 1,
                                      style) ||
        !yaml_emitter_emit(em, &ev)) {
        return co_error_set(CO_ERROR, "YAML: cannot emit a value: %s",
                            em->problem ? em->problem : "emitter error");
    }
    return 0;
}

static int emit_yaml_node(yaml_emitter_t *em, const co_sops__node *node)
{
    yaml_event_t ev;
    int error;
    char buf[400];
    switch (node ? node->kind : CO_SOPS__N_NULL) {
    case CO_SOPS__N_NULL:
        return emit_scalar(em, "null", 4, YAML_PLAIN_SCALAR_STYLE, true);
    case CO_SOPS__N_STR: {
        yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
        if (memchr(node->str, '\n', node->len)) {
            /* Block scalars are always strings; libyaml falls back to quoting when the text
             * cannot be written as one (leading spaces, trailing blanks). */
            style = YAML_LITERAL_SCALAR_STYLE;
        } else if (needs_quotes(node->str, node->len)) {
            style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        }
        return emit_scalar(em, node->str, node->len, style,
                           style == YAML_ANY_SCALAR_STYLE || style == YAML_LITERAL_SCALAR_STYLE);
    }
    case CO_SOPS__N_INT:
    case CO_SOPS__N_TIME:
        return emit_scalar(em, node->str, node->len, YAML_PLAIN_SCALAR_STYLE, true);
    case CO_SOPS__N_FLOAT:
        if (isnan(node->fval)) {
            snprintf(buf, sizeof(buf), ".nan");
        } else if (isinf(node->fval)) {
            snprintf(buf, sizeof(buf), node->fval > 0 ? ".inf" : "-.inf");
        } else {
            format_float_g(buf, sizeof(buf), node->fval, false);
        }
        return emit_scalar(em, buf, strlen(buf), YAML_PLAIN_SCALAR_STYLE, true);
    case CO_SOPS__N_BOOL:
        return emit_scalar(em, node->bval ? "true" : "false", node->bval ? 4 : 5,
                           YAML_PLAIN_SCALAR_STYLE, true);
    case CO_SOPS__N_MAP:
        if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) ||
            !yaml_emitter_emit(em, &ev)) {
            return co_error_set(CO_ERROR, "YAML: cannot emit a mapping");
        }
        for (size_t i = 0; i < node->n; i++) {
            const char *k = node->keys[i];
            size_t kl = node->key_lens[i];
            bool quote = needs_quotes(k, kl) || memchr(k, '\n', kl);
            if ((error = emit_scalar(
                     em, k, kl, quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE,
                     !quote)) < 0 ||
                (error = emit_yaml_node(em, node->kids[i])) < 0) {
                return error;
            }
        }
        if (!yaml_mapping_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev)) {
            return co_error_set(CO_ERROR, "YAML: cannot emit a mapping");
        }
        return 0;
    case CO_SOPS__N_LIST:
        if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE) ||
            !yaml_emitter_emit(em, &ev)) {
            return co_error_set(CO_ERROR, "YAML: cannot emit a sequence");
        }
        for (size_t i = 0; i < node->n; i++) {
            if ((error = emit_yaml_node(em, node->kids[i])) < 0) {
                return error;
            }
        }
        if (!yaml_sequence_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev)) {
            return co_error_set(CO_ERROR, "YAML: cannot emit a sequence");
        }
        return 0;
    }
    return co_error_set(CO_ERROR, "YAML: unknown node kind");
}

static int yaml_write_cb(void *data, unsigned char *buffer, size_t size)
{
    return co_buf_put(data, buffer, size) == 0;
}

static int emit_yaml(co_buf *out, const co_sops__doc *doc)
{
    yaml_emitter_t em;
    yaml_event_t ev;
    int error = 0;
    if (!yaml_emitter_initialize(&em)) {
        return co_error_set(CO_ERROR, "YAML: cannot initialise the emitter");
    }
    yaml_emitter_set_output(&em, yaml_write_cb, out);
    yaml_emitter_set_indent(&em, 4);
    yaml_emitter_set_width(&em, -1);
    yaml_emitter_set_unicode(&em, 1);
    if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) ||
        !yaml_emitter_emit(&em, &ev)) {
        error = co_error_set(CO_ERROR, "YAML: cannot start the stream");
        goto done;
    }
    for (size_t i = 0; i < doc->n; i++) {
        if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, i == 0) ||
            !yaml_emitter_emit(&em, &ev)) {
            error = co_error_set(CO_ERROR, "YAML: cannot start a document");
            goto done;
        }
        if ((error = emit_yaml_node(&em, doc->branches[i])) < 0) {
            goto done;
        }
        if (!yaml_document_end_event_initialize(&ev, 1) || !yaml_emitter_emit(&em, &ev)) {
            error = co_error_set(CO_ERROR, "YAML: cannot end a document");
            goto done;
        }
    }
    if (!yaml_stream_end_event_initialize(&ev) || !yaml_emitter_emit(&em, &ev) ||
        !yaml_emitter_flush(&em)) {
        error = co_error_set(out->ptr ? CO_ERROR : CO_ETOOBIG, "YAML: cannot finish the stream");
        goto done;
    }
done:
    yaml_emitter_delete(&em);
    return error;
}

static int json_string(co_buf *out, const char *s, size_t len)
{
    int error;
    if ((error = co_buf_putc(out, '"')) < 0) {
        return error;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            error = co_buf_printf(out, "\\%c", c);
        } else if (c == '\n') {
            error = co_buf_puts(out, "\\n");
        } else if (c == '\t') {
            error = co_buf_puts(out, "\\t");
        } else if (c == '\r') {
            error = co_buf_puts(out, "\\r");
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            error = co_buf_printf(out, "\\u%04x", c);
        } else {
            error = co_buf_putc(out, (char)c);
        }
        if (error < 0) {
            return error;
        }
    }
    return co_buf_putc(out, '"');
}

static int emit_json_node(co_buf *out, const co_sops__node *node, int depth)
{
    int error = 0;
    char buf[400];
    switch (node ? node->kind : CO_SOPS__N_NULL) {
    case CO_SOPS__N_NULL:
        return co_buf_puts(out, "null");
    case CO_SOPS__N_STR:
    case CO_SOPS__N_TIME:
        return json_string(out, node->str, node->len);
    case CO_SOPS__N_INT:
        return co_buf_put(out, node->str, node->len);
    case CO_SOPS__N_FLOAT:
        if (!isfinite(node->fval)) {
            return co_error_set(CO_EINVALID, "JSON cannot represent the float value %s", node->str);
        }
        format_float_g(buf, sizeof(buf), node->fval, true);
        return co_buf_puts(out, buf);
    case CO_SOPS__N_BOOL:
        return co_buf_puts(out, node->bval ? "true" : "false");
    case CO_SOPS__N_MAP:
    case CO_SOPS__N_LIST: {
        bool map = node->kind == CO_SOPS__N_MAP;
        if (node->n == 0) {
            return co_buf_puts(out, map ? "{}" : "[]");
        }
        if ((error = co_buf_puts(out, map ? "{\n" : "[\n")) < 0) {
            return error;
        }
        for (size_t i = 0; i < node->n; i++) {
            for (int d = 0; d <= depth && error == 0; d++) {
                error = co_buf_putc(out, '\t');
            }
            if (error == 0 && map) {
                if ((error = json_string(out, node->keys[i], node->key_lens[i])) == 0) {
                    error = co_buf_puts(out, ": ");
                }
            }
            if (error == 0) {
                error = emit_json_node(out, node->kids[i], depth + 1);
            }
            if (error == 0) {
                error = co_buf_puts(out, i + 1 < node->n ? ",\n" : "\n");
            }
            if (error < 0) {
                return error;
            }
        }
        for (int d = 0; d < depth && error == 0; d++) {
            error = co_buf_putc(out, '\t');
        }
        return error < 0 ? error : co_buf_putc(out, map ? '}' : ']');
    }
    }
    return co_error_set(CO_ERROR, "JSON: unknown node kind");
}

/* sops' ValToString for dotenv and INI values that are not strings. */
static void val_to_string(const co_sops__node *node, char *buf, size_t size)
{
    switch (node ? node->kind : CO_SOPS__N_NULL) {
    case CO_SOPS__N_NULL:
        snprintf(buf, size, "<nil>");
        break;
    case CO_SOPS__N_BOOL:
        snprintf(buf, size, "%s", node->bval ? "true" : "false");
        break;
    case CO_SOPS__N_FLOAT:
        format_float_g(buf, size, node->fval, false);
        for (char *p = buf; *p; p++) {
            if (*p == 'e') {
                *p = 'E';
            }
        }
        if (!strchr(buf, '.') && !strchr(buf, 'E') && isfinite(node->fval)) {
            snprintf(buf, size, "%.1f", node->fval);
        }
        break;
    default:
        snprintf(buf, size, "%.*s", (int)node->len, node->str);
        break;
    }
}

static int emit_dotenv(co_buf *out, const co_sops__doc *doc)
{
    const co_sops__node *branch = doc->n ? doc->branches[0] : NULL;
    int error = 0;
    char buf[400];
    for (size_t i = 0; branch && i < branch->n && error == 0; i++) {
        const co_sops__node *v = branch->kids[i];
        if (v && (v->kind == CO_SOPS__N_MAP || v->kind == CO_SOPS__N_LIST)) {
            return co_error_set(CO_EINVALID,
                                "cannot use complex value in dotenv file; offending key %.*s",
                                (int)branch->key_lens[i], branch->keys[i]);
        }
        if ((error = co_buf_put(out, branch->keys[i], branch->key_lens[i])) < 0 ||
            (error = co_buf_putc(out, '=')) < 0) {
            return error;
        }
        if (v && v->kind == CO_SOPS__N_STR) {
            for (size_t j = 0; j < v->len && error == 0; j++) {
                error = v->str[j] == '\n' ? co_buf_puts(out, "\\n") : co_buf_putc(out, v->str[j]);
            }
        } else {
            val_to_string(v, buf, sizeof(buf));
            error = co_buf_puts(out, buf);
        }
        if (error == 0) {
            error = co_buf_putc(out, '\n');
        }
    }
    return error;
}

static int emit_ini(co_buf *out, const co_sops__doc *doc)
{
    int error = 0;
    char buf[400];
    for (size_t b = 0; b < doc->n; b++) {
        const co_sops__node *branch = doc->branches[b];
        for (size_t i = 0; i < branch->n; i++) {
            const co_sops__node *sec = branch->kids[i];
            if (!sec || sec->kind != CO_SOPS__N_MAP) {
                return co_error_set(CO_EINVALID, "INI: section values should always be mappings");
            }
            if (sec->n == 0 && branch->key_lens[i] == 7 &&
                memcmp(branch->keys[i], "DEFAULT", 7) == 0) {
                continue;
            }
            if ((error = co_buf_printf(out, "%s[%.*s]\n", out->len ? "\n" : "",
                                       (int)branch->key_lens[i], branch->keys[i])) < 0) {
                return error;
            }
            for (size_t k = 0; k < sec->n; k++) {
                const co_sops__node *v = sec->kids[k];
                const char *s = buf;
                size_t len;
                if (v && v->kind == CO_SOPS__N_STR) {
                    s = v->str;
                    len = v->len;
                } else if (v && (v->kind == CO_SOPS__N_MAP || v->kind == CO_SOPS__N_LIST)) {
                    return co_error_set(CO_EINVALID, "INI: nested values are not supported");
                } else {
                    val_to_string(v, buf, sizeof(buf));
                    len = strlen(buf);
                }
                bool special = len && (is_space(s[0]) || is_space(s[len - 1]) || s[0] == '"' ||
                                       s[0] == '\'' || s[0] == '`');
                for (size_t j = 0; j < len && !special; j++) {
                    special = s[j] == '#' || s[j] == ';' || s[j] == '\n';
                }
                const char *q = !special                                        ? ""
                                : (memchr(s, '`', len) || memchr(s, '\n', len)) ? "\"\"\""
                                                                                : "`";
                if ((error = co_buf_printf(out, "%.*s = %s", (int)sec->key_lens[k], sec->keys[k],
                                           q)) < 0 ||
                    (error = co_buf_put(out, s, len)) < 0 ||
                    (error = co_buf_printf(out, "%s\n", q)) < 0) {
                    return error;
                }
            }
        }
    }
    return 0;
}

static int emit_binary(co_buf *out, const co_sops__doc *doc)
{
    if (doc->n != 1) {
        return co_error_set(CO_EINVALID, "binary output needs exactly one document");
    }
    const co_sops__node *data = co_sops__map_get(doc->branches[0], "data");
    if (!data) {
        return co_error_set(CO_EINVALID, "no binary data found in tree (no \"data\" key)");
    }
    if (data->kind != CO_SOPS__N_STR) {
        return co_error_set(CO_EINVALID, "\"data\" key in tree does not have a string value");
    }
    return co_buf_put(out, data->str, data->len);
}

int co_sops__emit(co_buf *out, const co_sops__doc *doc, co_sops_format format)
{
    int error;
    switch (format) {
    case CO_SOPS_FORMAT_YAML:
        error = emit_yaml(out, doc);
        break;
    case CO_SOPS_FORMAT_JSON:
        error = doc->n ? emit_json_node(out, doc->branches[0], 0) : 0;
        if (error == 0 && doc->n) {
            error = co_buf_putc(out, '\n');
        }
        break;
    case CO_SOPS_FORMAT_DOTENV:
        error = emit_dotenv(out, doc);
        break;
    case CO_SOPS_FORMAT_INI:
        error = emit_ini(out, doc);
        break;
    case CO_SOPS_FORMAT_BINARY:
        error = emit_binary(out, doc);
        break;
    default:
        error = co_error_set(CO_EINVALID, "unknown output format");
        break;
    }
    if (error == CO_ETOOBIG) {
        co_error_set(CO_ETOOBIG, "decrypted output exceeds %zu bytes", out->max);
    }
    return error;
}
