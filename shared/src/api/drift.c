/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Drift detection (see co/api/drift.h and docs/drift.md): the annotation parsers, the subset
 * comparison of a manifest with its live object, and the carrying of ignored fields into a
 * re-apply. The comparison walks the manifest, never the live object, so its cost is bounded by
 * what the tenant rendered (CO_DRIFT_MAX_NODES, CO_DRIFT_MAX_DEPTH) and not by what the API
 * server or other managers added.
 */
#include "co/api/drift.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/util/strmap.h"
#include "co/util/error.h"

/* ---- policy --------------------------------------------------------------------------------- */

static const char *const POLICY_NAMES[] = {"Correct", "Warn", "Ignore"};

const char *co_drift_policy_name(co_drift_policy p)
{
    return (unsigned)p < CO_ARRAY_SIZE(POLICY_NAMES) ? POLICY_NAMES[p] : "";
}

int co_drift_policy_parse(co_drift_policy *out, const char *value)
{
    for (size_t i = 0; value && i < CO_ARRAY_SIZE(POLICY_NAMES); i++) {
        if (strcasecmp(value, POLICY_NAMES[i]) == 0) {
            *out = (co_drift_policy)i;
            return 0;
        }
    }
    return co_error_set(CO_EINVALID, "%.64s%s: must be Correct, Warn or Ignore", value ? value : "",
                        value && strlen(value) > 64 ? "..." : "");
}

/* ---- ignored fields ------------------------------------------------------------------------- */

static void pointer_dispose(co_drift_pointer *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->tokens[i]);
    }
    free(p->tokens);
    p->tokens = NULL;
    p->n = 0;
}

void co_drift_ignore_dispose(co_drift_ignore *ig)
{
    if (!ig) {
        return;
    }
    for (size_t i = 0; i < ig->n; i++) {
        pointer_dispose(&ig->ptrs[i]);
    }
    free(ig->ptrs);
    ig->ptrs = NULL;
    ig->n = 0;
}

/* Decodes one pointer ("/a/b~1c" -> {"a", "b/c"}). */
static int pointer_parse(co_drift_pointer *out, const char *s)
{
    if (*s != '/') {
        return co_error_set(CO_EINVALID, "%.128s: a JSON pointer starts with '/'", s);
    }
    co_drift_pointer p = {NULL, 0};
    const char *at = s + 1;
    for (;;) {
        const char *end = strchr(at, '/');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        char *tok = co_xmalloc(len + 1);
        size_t k = 0;
        for (size_t i = 0; i < len; i++) {
            if (at[i] != '~') {
                tok[k++] = at[i];
            } else if (i + 1 < len && (at[i + 1] == '0' || at[i + 1] == '1')) {
                tok[k++] = at[i + 1] == '0' ? '~' : '/';
                i++;
            } else {
                free(tok);
                pointer_dispose(&p);
                return co_error_set(CO_EINVALID, "%.128s: '~' must be followed by 0 or 1", s);
            }
        }
        tok[k] = '\0';
        p.tokens = co_xrealloc(p.tokens, (p.n + 1) * sizeof(char *));
        p.tokens[p.n++] = tok;
        if (!end) {
            break;
        }
        at = end + 1;
    }
    *out = p;
    return 0;
}

/* Whether a pointer reaches what identifies the object or carries the operator's own marks:
 * ignoring those would keep a re-apply from renaming, re-owning or re-digesting it. */
static bool pointer_refused(const co_drift_pointer *p)
{
    const char *t0 = p->tokens[0];
    if (!strcmp(t0, "apiVersion") || !strcmp(t0, "kind")) {
        return true;
    }
    if (strcmp(t0, "metadata") != 0) {
        return false;
    }
    if (p->n == 1) {
        return true;
    }
    const char *t1 = p->tokens[1];
    if (!strcmp(t1, "name") || !strcmp(t1, "namespace")) {
        return true;
    }
    if (strcmp(t1, "labels") != 0 && strcmp(t1, "annotations") != 0) {
        return false;
    }
    return p->n == 2 || !strncmp(p->tokens[2], CO_DRIFT_OWN_PREFIX, strlen(CO_DRIFT_OWN_PREFIX));
}

int co_drift_ignore_parse(co_drift_ignore *out, const char *text)
{
    size_t len = text ? strlen(text) : 0;
    if (len > CO_DRIFT_IGNORE_MAX) {
        return co_error_set(CO_ETOOBIG, "longer than %d bytes", CO_DRIFT_IGNORE_MAX);
    }
    struct json_object *doc = NULL;
    if (co_json_parse(&doc, text ? text : "", len) < 0) {
        return co_error_wrap("not a JSON list of JSON pointers");
    }
    co_drift_ignore ig = {NULL, 0};
    int rc = 0;
    if (!json_object_is_type(doc, json_type_array)) {
        rc = co_error_set(CO_EINVALID, "not a JSON list of JSON pointers");
        goto done;
    }
    size_t n = json_object_array_length(doc);
    if (n > CO_DRIFT_MAX_POINTERS) {
        rc = co_error_set(CO_ETOOBIG, "more than %d pointers", CO_DRIFT_MAX_POINTERS);
        goto done;
    }
    ig.ptrs = co_xcalloc(n ? n : 1, sizeof(*ig.ptrs));
    for (size_t i = 0; i < n; i++) {
        struct json_object *e = json_object_array_get_idx(doc, i);
        if (!json_object_is_type(e, json_type_string)) {
            rc = co_error_set(CO_EINVALID, "element %zu: not a string", i);
            goto done;
        }
        if ((rc = pointer_parse(&ig.ptrs[i], json_object_get_string(e))) < 0) {
            goto done;
        }
        ig.n++;
        if (pointer_refused(&ig.ptrs[i])) {
            rc = co_error_set(CO_EINVALID,
                              "%.128s: the object's identity and the operator's own labels and "
                              "annotations cannot be ignored",
                              json_object_get_string(e));
            goto done;
        }
    }
    *out = ig;
    ig.ptrs = NULL;
    ig.n = 0;
done:
    co_drift_ignore_dispose(&ig);
    json_object_put(doc);
    return rc;
}

char *co_drift_pointer_format(const char *const *tokens, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++) {
        len += 1 + 2 * strlen(tokens[i]);
    }
    char *out = co_xmalloc(len);
    char *o = out;
    for (size_t i = 0; i < n; i++) {
        *o++ = '/';
        for (const char *c = tokens[i]; *c; c++) {
            if (*c == '~' || *c == '/') {
                *o++ = '~';
                *o++ = *c == '~' ? '0' : '1';
            } else {
                *o++ = *c;
            }
        }
    }
    *o = '\0';
    return out;
}

/* ---- comparison ----------------------------------------------------------------------------- */

typedef struct walk {
    co_drift_result *out;
    const co_drift_ignore *ig;
    const char *path[CO_DRIFT_MAX_DEPTH + 1];
    char index[CO_DRIFT_MAX_DEPTH + 1][24];
    size_t depth;
    size_t nodes;
    int rc;
} walk;

void co_drift_result_dispose(co_drift_result *r)
{
    if (!r) {
        return;
    }
    for (size_t i = 0; i < r->nfields; i++) {
        free(r->fields[i]);
        r->fields[i] = NULL;
    }
    r->nfields = 0;
    r->total = 0;
}

static void drifted(walk *w)
{
    if (w->out->nfields < CO_DRIFT_MAX_FIELDS) {
        w->out->fields[w->out->nfields++] = co_drift_pointer_format(w->path, w->depth);
    }
    w->out->total++;
}

/* Whether the current path is an ignored pointer (or lies under one: the walk stops there). */
static bool ignored(const walk *w)
{
    for (size_t i = 0; w->ig && i < w->ig->n; i++) {
        const co_drift_pointer *p = &w->ig->ptrs[i];
        if (p->n != w->depth) {
            continue;
        }
        size_t k = 0;
        while (k < p->n && !strcmp(p->tokens[k], w->path[k])) {
            k++;
        }
        if (k == p->n) {
            return true;
        }
    }
    return false;
}

/* Enters @p key (or list element @p idx when key is NULL); false when the bound is passed. */
static bool push(walk *w, const char *key, size_t idx)
{
    if (w->depth >= CO_DRIFT_MAX_DEPTH) {
        w->rc = co_error_set(CO_ETOOBIG, "nested deeper than %d levels", CO_DRIFT_MAX_DEPTH);
        return false;
    }
    if (!key) {
        snprintf(w->index[w->depth], sizeof(w->index[0]), "%zu", idx);
        key = w->index[w->depth];
    }
    w->path[w->depth++] = key;
    return true;
}

static bool is_zero(const struct json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null:
        return true;
    case json_type_boolean:
        return !json_object_get_boolean(v);
    case json_type_int:
        return json_object_get_int64(v) == 0;
    case json_type_double:
        return json_object_get_double(v) == 0.0;
    case json_type_string:
        return json_object_get_string_len(v) == 0;
    case json_type_object:
        return json_object_object_length(v) == 0;
    case json_type_array:
        return json_object_array_length(v) == 0;
    }
    return false;
}

/* A Kubernetes quantity ("500m", "1Gi", "1e3", "0.5") as a number; false when @p s is none. */
static bool quantity(long double *out, const char *s)
{
    static const struct {
        const char *suffix;
        long double factor;
    } SUFFIXES[] = {{"Ki", 1024.0L},
                    {"Mi", 1048576.0L},
                    {"Gi", 1073741824.0L},
                    {"Ti", 1099511627776.0L},
                    {"Pi", 1125899906842624.0L},
                    {"Ei", 1152921504606846976.0L},
                    {"n", 1e-9L},
                    {"u", 1e-6L},
                    {"m", 1e-3L},
                    {"", 1.0L},
                    {"k", 1e3L},
                    {"M", 1e6L},
                    {"G", 1e9L},
                    {"T", 1e12L},
                    {"P", 1e15L},
                    {"E", 1e18L}};
    const char *c = s;
    if (*c == '+' || *c == '-') {
        c++;
    }
    if (!isdigit((unsigned char)*c) && !(*c == '.' && isdigit((unsigned char)c[1]))) {
        return false;
    }
    while (isdigit((unsigned char)*c)) {
        c++;
    }
    if (*c == '.') {
        c++;
        while (isdigit((unsigned char)*c)) {
            c++;
        }
    }
    size_t num_len = (size_t)(c - s);
    if (num_len > 64) {
        return false;
    }
    char num[72];
    memcpy(num, s, num_len);
    num[num_len] = '\0';
    long double v = strtold(num, NULL);
    if ((*c == 'e' || *c == 'E') && c[1]) {
        char *end = NULL;
        errno = 0;
        long e = strtol(c + 1, &end, 10);
        if (*end || errno || e < -64 || e > 64) {
            return false;
        }
        *out = v * powl(10.0L, (long double)e);
        return true;
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(SUFFIXES); i++) {
        if (!strcmp(c, SUFFIXES[i].suffix)) {
            *out = v * SUFFIXES[i].factor;
            return true;
        }
    }
    return false;
}

static bool close_enough(long double a, long double b)
{
    if (a == b) {
        return true; /* infinities too */
    }
    long double scale = fabsl(a) > fabsl(b) ? fabsl(a) : fabsl(b);
    return fabsl(a - b) <= scale * 1e-12L;
}

/* A number written as a string ("8080" for 8080: int-or-string fields). */
static bool number_text(long double *out, const char *s)
{
    if (!*s || strlen(s) > 64) {
        return false;
    }
    char *end = NULL;
    errno = 0;
    long double v = strtold(s, &end);
    if (*end || errno || isspace((unsigned char)*s)) {
        return false;
    }
    *out = v;
    return true;
}

static bool is_number(const struct json_object *v)
{
    return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

static long double number_of(const struct json_object *v)
{
    return json_object_is_type(v, json_type_int) ? (long double)json_object_get_int64(v)
                                                 : (long double)json_object_get_double(v);
}

static bool scalar_equal(const struct json_object *cd, const struct json_object *cl, bool quant)
{
    /* json-c before 0.14 takes no const objects */
    struct json_object *d = (struct json_object *)cd, *l = (struct json_object *)cl;
    bool ds = json_object_is_type(d, json_type_string),
         ls = json_object_is_type(l, json_type_string);
    long double a, b;
    if (ds && ls) {
        const char *x = json_object_get_string(d), *y = json_object_get_string(l);
        if (!strcmp(x, y)) {
            return true;
        }
        return quant && quantity(&a, x) && quantity(&b, y) && close_enough(a, b);
    }
    if (is_number(d) && is_number(l)) {
        if (json_object_is_type(d, json_type_int) && json_object_is_type(l, json_type_int)) {
            return json_object_get_int64(d) == json_object_get_int64(l);
        }
        return close_enough(number_of(d), number_of(l));
    }
    if (ds && is_number(l)) {
        return number_text(&a, json_object_get_string(d)) && close_enough(a, number_of(l));
    }
    if (is_number(d) && ls) {
        const char *y = json_object_get_string(l);
        return (number_text(&b, y) || (quant && quantity(&b, y))) && close_enough(number_of(d), b);
    }
    if (json_object_is_type(d, json_type_boolean) && json_object_is_type(l, json_type_boolean)) {
        return json_object_get_boolean(d) == json_object_get_boolean(l);
    }
    return false;
}

/* Maps whose values are quantities: a container's limits and requests, a ResourceQuota's hard,
 * a LimitRange's bounds, a PVC's capacity. */
static bool quantity_map(const char *key)
{
    static const char *const KEYS[] = {"limits",      "requests",      "hard", "capacity",
                                       "allocatable", "overhead",      "min",  "max",
                                       "default",     "defaultRequest"};
    for (size_t i = 0; key && i < CO_ARRAY_SIZE(KEYS); i++) {
        if (!strcmp(key, KEYS[i])) {
            return true;
        }
    }
    return false;
}

/* The member @p key of @p obj when it is an object (live values may be anything). */
static struct json_object *member(const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    if (obj && json_object_is_type(obj, json_type_object) &&
        json_object_object_get_ex(obj, key, &v)) {
        return v;
    }
    return NULL;
}

/* Our entry for map key @p key in a fieldsV1 tree. */
static const struct json_object *owned_child(const struct json_object *own, const char *key)
{
    if (!own) {
        return NULL;
    }
    char *fk = co_xasprintf("f:%s", key);
    const struct json_object *v = member(own, fk);
    free(fk);
    return v;
}

/* The name of a list element that is a map with a string "name", else NULL. */
static const char *element_name(const struct json_object *e)
{
    struct json_object *name = member(e, "name");
    return name && json_object_is_type(name, json_type_string) ? json_object_get_string(name)
                                                               : NULL;
}

/* Whether every element of @p a is a map with a string "name", each name once (a list keyed by
 * name, as containers, env and volumes are). */
static bool named_list(const struct json_object *a)
{
    size_t n = json_object_array_length(a);
    co_strmap seen = CO_STRMAP_INIT;
    bool named = n > 0;
    for (size_t i = 0; named && i < n; i++) {
        const char *name = element_name(json_object_array_get_idx(a, i));
        named = name && !co_strmap_find(&seen, name, NULL);
        if (named) {
            co_strmap_put(&seen, name, (void *)a);
        }
    }
    co_strmap_dispose(&seen);
    return named;
}

/* @p own: our fieldsV1 node at this path, or NULL; @p check_own: the path is made of map keys
 * and the caller gave managed fields. */
static void compare(walk *w,
                    const struct json_object *d,
                    const struct json_object *l,
                    const struct json_object *own,
                    bool check_own,
                    bool quant);

static void compare_child(walk *w,
                          const char *key,
                          size_t idx,
                          const struct json_object *d,
                          const struct json_object *l,
                          const struct json_object *own,
                          bool check_own,
                          bool quant)
{
    if (w->rc < 0 || !push(w, key, idx)) {
        return;
    }
    if (!ignored(w)) {
        compare(w, d, l, own, check_own, quant);
    }
    w->depth--;
}

static void compare(walk *w,
                    const struct json_object *d,
                    const struct json_object *l,
                    const struct json_object *own,
                    bool check_own,
                    bool quant)
{
    if (++w->nodes > CO_DRIFT_MAX_NODES) {
        w->rc = co_error_set(CO_ETOOBIG, "more than %d values", CO_DRIFT_MAX_NODES);
        return;
    }
    if (!d || json_object_is_type(d, json_type_null)) {
        return; /* nothing is asked of it */
    }
    if (!l || json_object_is_type(l, json_type_null)) {
        if (!is_zero(d)) {
            drifted(w); /* removed (the API server drops zero values: those are no drift) */
        }
        return;
    }
    if (json_object_is_type(d, json_type_object)) {
        if (!json_object_is_type(l, json_type_object)) {
            drifted(w);
            return;
        }
        const char *self = w->depth ? w->path[w->depth - 1] : NULL;
        bool meta = w->depth == 2 && !strcmp(w->path[0], "metadata");
        if (own && json_object_is_type(own, json_type_object) &&
            json_object_object_length(own) == 0) {
            check_own = false; /* an atomic map (a selector): owned as a whole */
        }
        json_object_object_foreach ((struct json_object *)d, k, v) {
            if (meta && !strncmp(k, CO_DRIFT_OWN_PREFIX, strlen(CO_DRIFT_OWN_PREFIX))) {
                continue; /* the operator's own marks and policies: the manifest decides */
            }
            compare_child(w, k, 0, v, member(l, k), owned_child(own, k), check_own,
                          quantity_map(self));
            if (w->rc < 0) {
                return;
            }
        }
        return;
    }
    if (json_object_is_type(d, json_type_array)) {
        if (!json_object_is_type(l, json_type_array)) {
            drifted(w);
            return;
        }
        size_t n = json_object_array_length(d);
        if (named_list(d)) {
            /* others may add elements of their own; ours are found by name (the first of a
             * name, as the API server keeps each once) */
            co_strmap live_names = CO_STRMAP_INIT;
            size_t nl = json_object_array_length(l);
            for (size_t i = 0; i < nl; i++) {
                struct json_object *e = json_object_array_get_idx(l, i);
                const char *name = element_name(e);
                if (name && !co_strmap_find(&live_names, name, NULL)) {
                    co_strmap_put(&live_names, name, e);
                }
            }
            for (size_t i = 0; i < n && w->rc == 0; i++) {
                struct json_object *e = json_object_array_get_idx(d, i);
                compare_child(w, NULL, i, e, co_strmap_get(&live_names, element_name(e)), NULL,
                              false, false);
            }
            co_strmap_dispose(&live_names);
            return;
        }
        if (json_object_array_length(l) != n) {
            drifted(w);
            return;
        }
        for (size_t i = 0; i < n && w->rc == 0; i++) {
            compare_child(w, NULL, i, json_object_array_get_idx(d, i),
                          json_object_array_get_idx(l, i), NULL, false, false);
        }
        return;
    }
    /* a value of ours that another manager took drifted too */
    if (!scalar_equal(d, l, quant) || (check_own && !own)) {
        drifted(w);
    }
}

int co_drift_compare(co_drift_result *out,
                     const struct json_object *desired,
                     const struct json_object *live,
                     const co_drift_ignore *ignore,
                     const struct json_object *owned)
{
    memset(out, 0, sizeof(*out));
    walk w;
    memset(&w, 0, sizeof(w));
    w.out = out;
    w.ig = ignore;
    if (!desired || !json_object_is_type(desired, json_type_object)) {
        return 0;
    }
    bool check_own = owned != NULL;
    json_object_object_foreach ((struct json_object *)desired, k, v) {
        if (!strcmp(k, "apiVersion") || !strcmp(k, "kind") || !strcmp(k, "status")) {
            continue;
        }
        if (strcmp(k, "metadata") != 0) {
            compare_child(&w, k, 0, v, member(live, k), owned_child(owned, k), check_own, false);
        } else if (push(&w, k, 0)) {
            const struct json_object *lm = member(live, k), *om = owned_child(owned, k);
            static const char *const META[] = {"labels", "annotations"};
            for (size_t i = 0; i < CO_ARRAY_SIZE(META) && !ignored(&w); i++) {
                struct json_object *dv = member(v, META[i]);
                if (dv) {
                    compare_child(&w, META[i], 0, dv, member(lm, META[i]), owned_child(om, META[i]),
                                  check_own, false);
                }
            }
            w.depth--;
        }
        if (w.rc < 0) {
            break;
        }
    }
    return w.rc;
}

/* ---- carrying ignored fields ---------------------------------------------------------------- */

static struct json_object *step(const struct json_object *node, const char *tok)
{
    if (json_object_is_type(node, json_type_object)) {
        return member(node, tok);
    }
    if (json_object_is_type(node, json_type_array)) {
        char *end = NULL;
        errno = 0;
        unsigned long long i = strtoull(tok, &end, 10);
        if (!*tok || *end || errno || !isdigit((unsigned char)*tok) ||
            i >= json_object_array_length(node)) {
            return NULL;
        }
        return json_object_array_get_idx(node, (size_t)i);
    }
    return NULL;
}

static void
carry_one(struct json_object *applied, const struct json_object *live, const co_drift_pointer *p)
{
    struct json_object *a = applied;
    const struct json_object *l = live;
    for (size_t i = 0; i + 1 < p->n; i++) {
        struct json_object *an = step(a, p->tokens[i]);
        const struct json_object *ln = l ? step(l, p->tokens[i]) : NULL;
        if (!an) {
            /* a map the live object has and the manifest lacks is made, so that the live value
             * can be kept; nothing is made inside a list */
            if (!ln || !json_object_is_type(ln, json_type_object) ||
                !json_object_is_type(a, json_type_object)) {
                return;
            }
            an = json_object_new_object();
            json_object_object_add(a, p->tokens[i], an);
        }
        a = an;
        l = ln;
    }
    const char *last = p->tokens[p->n - 1];
    const struct json_object *lv = l ? step(l, last) : NULL;
    if (json_object_is_type(a, json_type_object)) {
        if (lv) {
            json_object_object_add(a, last, co_json_copy(lv));
        } else {
            json_object_object_del(a, last);
        }
    } else if (json_object_is_type(a, json_type_array) && lv && step(a, last)) {
        json_object_array_put_idx(a, (size_t)strtoull(last, NULL, 10), co_json_copy(lv));
    }
}

void co_drift_carry_ignored(struct json_object *applied,
                            const struct json_object *live,
                            const co_drift_ignore *ignore)
{
    for (size_t i = 0; ignore && applied && i < ignore->n; i++) {
        if (ignore->ptrs[i].n > 0) {
            carry_one(applied, live, &ignore->ptrs[i]);
        }
    }
}
