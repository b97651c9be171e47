/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replacements: copy a value from one field of a source object into fields of the selected
 * target objects, as kustomize's ReplacementTransformer does. Paths are dot-separated with
 * "[key=value]" element matchers, "*" for every element and numeric indexes; options split and
 * join values at a delimiter and create missing target fields. A scalar target keeps its type:
 * only its text changes.
 */
#include "kz_int.h"
#include "shared/src/json/json_lib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/budget.h"
#include "co/util/error.h"

/* Splits a field path at dots outside brackets. */
static size_t split_path(char **parts, size_t max, const char *path)
{
    size_t n = 0;
    const char *p = path;
    while (*p && n < max) {
        const char *e = p;
        int depth = 0;
        while (*e && (depth || *e != '.')) {
            depth += *e == '[' ? 1 : *e == ']' ? -1 : 0;
            e++;
        }
        parts[n++] = co_xstrndup(p, (size_t)(e - p));
        p = *e ? e + 1 : e;
    }
    return n;
}

/* The text of a scalar as kustomize sees it. */
static const char *scalar_text(json_object *v, char *buf, size_t cap)
{
    if (json_object_is_type(v, json_type_string)) {
        return json_object_get_string(v);
    }
    snprintf(buf, cap, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    return buf;
}

static int elem_matches(json_object *e, const char *matcher)
{
    /* matcher is "[key=value]" (key may be empty for primitive lists) */
    size_t n = strlen(matcher);
    char *inner = co_xstrndup(matcher + 1, n - 2);
    char *eq = strchr(inner, '=');
    int ok = 0;
    if (eq) {
        *eq = '\0';
        char buf[64];
        json_object *v = inner[0] ? co_json__member(e, inner) : e;
        ok = v && !json_object_is_type(v, json_type_object) &&
             !json_object_is_type(v, json_type_array) &&
             strcmp(scalar_text(v, buf, sizeof(buf)), eq + 1) == 0;
    }
    free(inner);
    return ok;
}

typedef struct hit {
    json_object *parent; /* object or array holding the field */
    char *key;           /* field name, or NULL for an array element */
    size_t idx;
} hit;

typedef struct hits {
    hit *v;
    size_t n, cap;
} hits;

static void hits_push(hits *h, json_object *parent, const char *key, size_t idx)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 8;
        h->v = co_xreallocarray(h->v, h->cap, sizeof(hit));
    }
    h->v[h->n].parent = parent;
    h->v[h->n].key = key ? co_xstrdup(key) : NULL;
    h->v[h->n].idx = idx;
    h->n++;
}

static void hits_dispose(hits *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->v[i].key);
    }
    free(h->v);
}

static json_object *hit_value(const hit *h)
{
    return h->key ? co_json__member(h->parent, h->key)
                  : json_object_array_get_idx(h->parent, h->idx);
}

/* Collects the nodes @p parts[i..] reaches from @p node (held at parent/key/idx). With @p
 * create, missing map fields are created (maps inside the path, @p leaf at its end). */
static void walk(hits *out,
                 char **parts,
                 size_t n,
                 size_t i,
                 json_object *parent,
                 const char *key,
                 size_t idx,
                 json_object *node,
                 json_type leaf,
                 int create)
{
    if (i == n) {
        hits_push(out, parent, key, idx);
        return;
    }
    const char *part = parts[i];
    if (json_object_is_type(node, json_type_array)) {
        size_t len = json_object_array_length(node);
        if (strcmp(part, "*") == 0) {
            for (size_t j = 0; j < len; j++) {
                walk(out, parts, n, i + 1, node, NULL, j, json_object_array_get_idx(node, j), leaf,
                     create);
            }
            return;
        }
        if (part[0] == '[' && part[strlen(part) - 1] == ']') {
            int found = 0;
            for (size_t j = 0; j < len; j++) {
                json_object *e = json_object_array_get_idx(node, j);
                if (elem_matches(e, part)) {
                    found = 1;
                    walk(out, parts, n, i + 1, node, NULL, j, e, leaf, create);
                }
            }
            if (!found && create) {
                char *inner = co_xstrndup(part + 1, strlen(part) - 2);
                char *eq = strchr(inner, '=');
                if (eq && inner != eq) {
                    *eq = '\0';
                    json_object *e = json_object_new_object();
                    json_object_object_add(e, inner, json_object_new_string(eq + 1));
                    json_object_array_add(node, e);
                    walk(out, parts, n, i + 1, node, NULL, len, e, leaf, create);
                }
                free(inner);
            }
            return;
        }
        if (strspn(part, "0123456789") == strlen(part) && part[0]) {
            size_t j = strtoul(part, NULL, 10);
            if (j < len) {
                walk(out, parts, n, i + 1, node, NULL, j, json_object_array_get_idx(node, j), leaf,
                     create);
            }
        }
        return;
    }
    if (!json_object_is_type(node, json_type_object)) {
        return;
    }
    if (strcmp(part, "*") == 0) {
        json_object_object_foreach (node, k, v) {
            walk(out, parts, n, i + 1, node, k, 0, v, leaf, create);
        }
        return;
    }
    const char *field = part;
    char *unbr = NULL;
    if (part[0] == '[' && part[strlen(part) - 1] == ']' && !strchr(part, '=')) {
        unbr = co_xstrndup(part + 1, strlen(part) - 2);
        field = unbr;
    }
    json_object *v = NULL;
    int has = json_object_object_get_ex(node, field, &v);
    if ((!has || !v) && create) {
        int last = i + 1 == n;
        int next_list = !last && (parts[i + 1][0] == '[' || strcmp(parts[i + 1], "*") == 0);
        v = last        ? (leaf == json_type_array    ? json_object_new_array()
                           : leaf == json_type_object ? json_object_new_object()
                                                      : json_object_new_string(""))
            : next_list ? json_object_new_array()
                        : json_object_new_object();
        json_object_object_add(node, field, v);
        has = 1;
    }
    if (has && (v || i + 1 == n)) {
        walk(out, parts, n, i + 1, node, field, 0, v, leaf, create);
    }
    free(unbr);
}

/* The ids a replacement selector is compared with: current and previous. */
static int id_selected(const kz_res *r, json_object *sel)
{
    char g[256], v[256];
    kz_split_api_version(kz_res_api_version(r), g, v, sizeof(g));
    const char *sg = kz_get_str(sel, "group", NULL), *sv = kz_get_str(sel, "version", NULL),
               *sk = kz_get_str(sel, "kind", NULL);
    const char *sn = kz_get_str(sel, "name", NULL), *sns = kz_get_str(sel, "namespace", NULL);
    size_t nids = r->prev_names.n + 1;
    for (size_t i = 0; i < nids; i++) {
        int cur = i == r->prev_names.n;
        const char *kind = cur ? kz_res_kind(r) : r->prev_kinds.v[i];
        const char *name = cur ? kz_res_name(r) : r->prev_names.v[i];
        const char *ns = cur ? kz_res_ns(r) : r->prev_nss.v[i];
        if (sn[0] && strcmp(sn, name) != 0) {
            continue;
        }
        if (sns[0] && strcmp(kz_effective_ns(kind, sns), kz_effective_ns(kind, ns)) != 0) {
            continue;
        }
        if (kz_gvk_selected(g, v, kind, sg, sv, sk)) {
            return 1;
        }
    }
    return 0;
}

static int sel_empty_id(json_object *sel)
{
    static const char *const f[] = {"group", "version", "kind", "name", "namespace"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(f); i++) {
        if (kz_get_str(sel, f[i], NULL)[0]) {
            return 0;
        }
    }
    return 1;
}

/* The first @p delim in s[0..len), or s + len: memchr and memcmp read only what they look at
 * (strstr reads to the end of the string first under the sanitizers, which made the split of a
 * long value quadratic there). */
static const char *find_delim(const char *s, size_t len, const char *delim, size_t dl)
{
    const char *end = s + len;
    while ((size_t)(end - s) >= dl) {
        const char *p = memchr(s, delim[0], (size_t)(end - s) - dl + 1);
        if (!p) {
            break;
        }
        if (memcmp(p, delim, dl) == 0) {
            return p;
        }
        s = p + 1;
    }
    return end;
}

static int split_delim(char ***out, const char *s, const char *delim)
{
    size_t n = 1, dl = strlen(delim), len = strlen(s);
    const char *end = s + len;
    for (const char *p = find_delim(s, len, delim, dl); p < end;
         p = find_delim(p + dl, (size_t)(end - p - dl), delim, dl)) {
        n++;
    }
    char **v = co_xcalloc(n + 1, sizeof(char *));
    const char *p = s;
    for (size_t i = 0; i < n; i++) {
        const char *e = find_delim(p, (size_t)(end - p), delim, dl);
        v[i] = co_xstrndup(p, (size_t)(e - p));
        p = e + dl;
    }
    *out = v;
    return (int)n;
}

static void free_strv(char **v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i]);
    }
    free(v);
}

/* The scalar type of @p old with the text @p text, as a YAML node keeping its tag would be;
 * NULL when the text cannot be read as that type (kustomize then fails to decode it). */
static json_object *retyped(json_object *old, const char *text)
{
    if (json_object_is_type(old, json_type_int)) {
        char *end = NULL;
        long long x = strtoll(text, &end, 10);
        if (text[0] && end && !*end) {
            return json_object_new_int64(x);
        }
        return NULL;
    } else if (json_object_is_type(old, json_type_double)) {
        char *end = NULL;
        double x = strtod(text, &end);
        if (text[0] && end && !*end) {
            return json_object_new_double(x);
        }
        return NULL;
    } else if (json_object_is_type(old, json_type_boolean)) {
        if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0) {
            return json_object_new_boolean(text[0] == 't');
        }
        return NULL;
    }
    return json_object_new_string(text);
}

static int set_hit(const hit *h, json_object *v)
{
    if (!v) {
        return co_error_set(CO_EINVALID, "replacement value cannot be decoded as the target's "
                                         "type");
    }
    if (h->key) {
        json_object_object_add(h->parent, h->key, v);
    } else {
        json_object_array_put_idx(h->parent, h->idx, v);
    }
    return 0;
}

static int apply_value(const hit *h, json_object *value, json_object *opts)
{
    json_object *old = hit_value(h);
    const char *delim = kz_get_str(opts, "delimiter", NULL);
    int scalar_value = !json_object_is_type(value, json_type_object) &&
                       !json_object_is_type(value, json_type_array);
    char buf[64];
    if (delim[0]) {
        if (old && (json_object_is_type(old, json_type_object) ||
                    json_object_is_type(old, json_type_array))) {
            return co_error_set(CO_EINVALID, "delimiter option can only be used with scalar nodes");
        }
        char **parts = NULL;
        char ob[64];
        int n = split_delim(&parts, old ? scalar_text(old, ob, sizeof(ob)) : "", delim);
        int index = json_object_get_int(co_json__member(opts, "index"));
        const char *v = scalar_value ? scalar_text(value, buf, sizeof(buf)) : "";
        char **np = co_xcalloc((size_t)n + 2, sizeof(char *));
        int m = 0;
        if (index < 0) {
            np[m++] = co_xstrdup(v);
        }
        for (int i = 0; i < n; i++) {
            np[m++] = co_xstrdup(i == index ? v : parts[i]);
        }
        if (index >= n) {
            np[m++] = co_xstrdup(v);
        }
        /* joined by appending at the end: strcat would look for the end from the start each
         * time, quadratic in the number of parts */
        size_t dl = strlen(delim);
        size_t total = 1;
        for (int i = 0; i < m; i++) {
            total += strlen(np[i]) + dl;
        }
        char *joined = co_xmalloc(total);
        char *end = joined;
        for (int i = 0; i < m; i++) {
            if (i) {
                memcpy(end, delim, dl);
                end += dl;
            }
            size_t pl = strlen(np[i]);
            memcpy(end, np[i], pl);
            end += pl;
        }
        *end = '\0';
        int rc = set_hit(h, old ? retyped(old, joined) : json_object_new_string(joined));
        free(joined);
        free_strv(parts, n);
        free_strv(np, m);
        return rc;
    }
    if (old && scalar_value && !json_object_is_type(old, json_type_object) &&
        !json_object_is_type(old, json_type_array)) {
        return set_hit(h, retyped(old, scalar_text(value, buf, sizeof(buf))));
    }
    json_object *copy = NULL;
    json_object_deep_copy(value, &copy, NULL);
    return set_hit(h, copy);
}

static int one_replacement(kz_resmap *ra, json_object *rep, size_t ri)
{
    json_object *src = co_json__member(rep, "source");
    json_object *targets = co_json__member(rep, "targets");
    if (!src || !json_object_is_type(targets, json_type_array)) {
        return co_error_set(
            CO_EINVALID,
            "replacements[%zu]: replacements must specify a source and at least one "
            "target",
            ri);
    }
    kz_res *source = NULL;
    for (size_t i = 0; i < ra->n; i++) {
        if (id_selected(ra->v[i], src)) {
            if (source) {
                return co_error_set(CO_EINVALID, "replacements[%zu]: multiple matches for selector",
                                    ri);
            }
            source = ra->v[i];
        }
    }
    if (!source) {
        return co_error_set(CO_EINVALID, "replacements[%zu]: nothing selected by the source", ri);
    }
    const char *fp = kz_get_str(src, "fieldPath", NULL);
    if (!fp[0]) {
        fp = "metadata.name";
    }
    char *parts[64];
    size_t np = split_path(parts, CO_ARRAY_SIZE(parts), fp);
    hits found = {0};
    walk(&found, parts, np, 0, NULL, NULL, 0, source->obj, json_type_string, 0);
    json_object *value = found.n ? hit_value(&found.v[0]) : NULL;
    for (size_t i = 0; i < np; i++) {
        free(parts[i]);
    }
    hits_dispose(&found);
    if (!value ||
        (json_object_is_type(value, json_type_string) && json_object_get_string_len(value) == 0)) {
        return co_error_set(CO_EINVALID,
                            "replacements[%zu]: fieldPath `%s` is missing for replacement source",
                            ri, fp);
    }
    json_object *sopts = co_json__member(src, "options");
    json_object *val = json_object_get(value);
    const char *sdelim = kz_get_str(sopts, "delimiter", NULL);
    if (sdelim[0]) {
        if (!json_object_is_type(value, json_type_string)) {
            json_object_put(val);
            return co_error_set(CO_EINVALID, "delimiter option can only be used with scalar nodes");
        }
        char **sp = NULL;
        int n = split_delim(&sp, json_object_get_string(value), sdelim);
        int index = json_object_get_int(co_json__member(sopts, "index"));
        if (index < 0 || index >= n) {
            free_strv(sp, n);
            json_object_put(val);
            return co_error_set(CO_EINVALID, "options.index %d is out of bounds for value %s",
                                index, json_object_get_string(value));
        }
        json_object_put(val);
        val = json_object_new_string(sp[index]);
        free_strv(sp, n);
    }
    int rc = 0;
    for (size_t t = 0; t < json_object_array_length(targets) && rc == 0; t++) {
        json_object *tgt = json_object_array_get_idx(targets, t);
        json_object *sel = co_json__member(tgt, "select");
        if (!sel) {
            rc = co_error_set(CO_EINVALID, "target must specify resources to select");
            break;
        }
        json_object *rejects = co_json__member(tgt, "reject");
        json_object *fps = co_json__member(tgt, "fieldPaths");
        json_object *opts = co_json__member(tgt, "options");
        int create = json_object_get_boolean(co_json__member(opts, "create"));
        for (size_t i = 0; i < ra->n && rc == 0; i++) {
            kz_res *r = ra->v[i];
            int err = 0;
            if ((rc = co_budget_tick()) < 0) {
                break;
            }
            if (!kz_selector_labels_match(r, sel, &err)) {
                rc = err;
                continue;
            }
            int rejected = 0;
            size_t nrej = json_object_is_type(rejects, json_type_array)
                              ? json_object_array_length(rejects)
                              : 0;
            for (size_t j = 0; j < nrej && !rejected; j++) {
                json_object *rj = json_object_array_get_idx(rejects, j);
                if (kz_get_str(rj, "labelSelector", NULL)[0] ||
                    kz_get_str(rj, "annotationSelector", NULL)[0]) {
                    rejected = kz_selector_labels_match(r, rj, &err);
                }
                if (!sel_empty_id(rj) && id_selected(r, rj)) {
                    rejected = 1;
                }
            }
            if (rejected || !id_selected(r, sel)) {
                continue;
            }
            size_t nfp =
                json_object_is_type(fps, json_type_array) ? json_object_array_length(fps) : 0;
            for (size_t f = 0; f < (nfp ? nfp : 1) && rc == 0; f++) {
                const char *path = nfp ? json_object_get_string(json_object_array_get_idx(fps, f))
                                       : "metadata.name";
                char *tp[64];
                size_t ntp = split_path(tp, CO_ARRAY_SIZE(tp), path);
                hits th = {0};
                walk(&th, tp, ntp, 0, NULL, NULL, 0, r->obj, json_object_get_type(val), create);
                if (th.n == 0) {
                    rc = co_error_set(CO_EINVALID,
                                      create ? "unable to find or create field \"%s\" in "
                                               "replacement target"
                                             : "unable to find field \"%s\" in replacement target",
                                      path);
                }
                for (size_t h = 0; h < th.n && rc == 0; h++) {
                    rc = apply_value(&th.v[h], val, opts);
                }
                hits_dispose(&th);
                for (size_t x = 0; x < ntp; x++) {
                    free(tp[x]);
                }
            }
        }
    }
    json_object_put(val);
    return rc;
}

int kz_replacements(kz_dir *d, kz_resmap *ra)
{
    json_object *list = co_json__member(kz_dir_kustomization(d), "replacements");
    size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *rep = json_object_array_get_idx(list, i);
        json_object *path = co_json__member(rep, "path");
        int rc = 0;
        if (path) {
            char *data = NULL;
            size_t len = 0;
            json_object *docs = NULL;
            rc = kz_dir_load(&data, &len, d, json_object_get_string(path));
            if (rc == 0) {
                rc = kz_decode_stream(&docs, data, len, json_object_get_string(path));
            }
            free(data);
            for (size_t j = 0; rc == 0 && j < json_object_array_length(docs); j++) {
                json_object *doc = json_object_array_get_idx(docs, j);
                if (json_object_is_type(doc, json_type_array)) {
                    for (size_t x = 0; rc == 0 && x < json_object_array_length(doc); x++) {
                        rc = one_replacement(ra, json_object_array_get_idx(doc, x), i);
                    }
                } else {
                    rc = one_replacement(ra, doc, i);
                }
            }
            json_object_put(docs);
        } else {
            rc = one_replacement(ra, rep, i);
        }
        if (rc < 0) {
            return co_error_wrap("%s", kz_dir_file(d));
        }
    }
    return 0;
}
