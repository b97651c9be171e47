/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Strategic merge patches as kustomize v5 applies them (its kyaml merge walker), and JSON 6902
 * patches. A list is merged by key only where the built-in Kubernetes schema gives its field a
 * "merge" patch strategy (containers by name, ports by containerPort and protocol, ...);
 * everywhere else, custom resources included, a list in the patch replaces the target's list.
 * Merged keyed lists list the patch's elements first, then the target's remaining ones, and a
 * null in the patch deletes the field. $patch: delete | replace | merge is honoured on maps and
 * lists. JSON 6902 patches go through co/json/json.h.
 */
#include "kz_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/budget.h"
#include "co/util/error.h"
#include "co/json/json.h"

/* --- the schema: which lists merge, and by which keys -------------------------------------- */

typedef struct list_schema {
    int merge;
    const char *keys[2];
} list_schema;

/* Lists inside a PodSpec, relative to it. */
static const struct {
    const char *path;
    list_schema s;
} podspec_lists[] = {
    {"containers", {1, {"name", NULL}}},
    {"initContainers", {1, {"name", NULL}}},
    {"ephemeralContainers", {1, {"name", NULL}}},
    {"volumes", {1, {"name", NULL}}},
    {"imagePullSecrets", {1, {"name", NULL}}},
    {"hostAliases", {1, {"ip", NULL}}},
    {"topologySpreadConstraints", {1, {"topologyKey", "whenUnsatisfiable"}}},
};

/* Lists inside a Container. */
static const struct {
    const char *path;
    list_schema s;
} container_lists[] = {
    {"ports", {1, {"containerPort", "protocol"}}},
    {"env", {1, {"name", NULL}}},
    {"volumeMounts", {1, {"mountPath", NULL}}},
    {"volumeDevices", {1, {"devicePath", NULL}}},
};

/* Where the PodSpec lives in each built-in kind. */
static const char *podspec_root(const char *kind, const char *group)
{
    static const char *const tmpl_kinds[] = {"Deployment",  "ReplicaSet", "DaemonSet",
                                             "StatefulSet", "Job",        "ReplicationController"};
    if (strcmp(kind, "Pod") == 0 && !group[0]) {
        return "spec";
    }
    if (strcmp(kind, "PodTemplate") == 0 && !group[0]) {
        return "template/spec";
    }
    if (strcmp(kind, "CronJob") == 0 && strcmp(group, "batch") == 0) {
        return "spec/jobTemplate/spec/template/spec";
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(tmpl_kinds); i++) {
        if (strcmp(kind, tmpl_kinds[i]) == 0 &&
            (!group[0] || strcmp(group, "apps") == 0 || strcmp(group, "batch") == 0 ||
             strcmp(group, "extensions") == 0)) {
            return "spec/template/spec";
        }
    }
    return NULL;
}

/* Groups whose kinds come with the built-in schema. */
static int builtin_group(const char *group)
{
    static const char *const groups[] = {"",
                                         "apps",
                                         "batch",
                                         "extensions",
                                         "policy",
                                         "networking.k8s.io",
                                         "rbac.authorization.k8s.io",
                                         "autoscaling",
                                         "storage.k8s.io",
                                         "scheduling.k8s.io",
                                         "admissionregistration.k8s.io",
                                         "apiextensions.k8s.io",
                                         "apiregistration.k8s.io",
                                         "coordination.k8s.io",
                                         "discovery.k8s.io",
                                         "node.k8s.io",
                                         "certificates.k8s.io",
                                         "events.k8s.io"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(groups); i++) {
        if (strcmp(group, groups[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

typedef struct smp_ctx {
    char kind[256];
    char group[256];
    int known; /* the object's type has a built-in schema */
} smp_ctx;

/* The schema of the list at @p path (fields joined by '/', from the object root). */
static list_schema lookup_list(const smp_ctx *c, const char *path)
{
    list_schema none = {0, {NULL, NULL}};
    if (!c->known) {
        return none;
    }
    size_t pl = strlen(path);
    static const char fin[] = "metadata/finalizers";
    static const char own[] = "metadata/ownerReferences";
    if ((pl == sizeof(fin) - 1 || (pl > sizeof(fin) - 1 && path[pl - sizeof(fin)] == '/')) &&
        strcmp(path + pl - (sizeof(fin) - 1 < pl ? sizeof(fin) - 1 : pl), fin) == 0) {
        list_schema s = {1, {NULL, NULL}};
        return s;
    }
    if (pl >= sizeof(own) - 1 && strcmp(path + pl - (sizeof(own) - 1), own) == 0) {
        list_schema s = {1, {"uid", NULL}};
        return s;
    }
    if (strcmp(c->kind, "Service") == 0 && !c->group[0] && strcmp(path, "spec/ports") == 0) {
        list_schema s = {1, {"port", "protocol"}};
        return s;
    }
    const char *root = podspec_root(c->kind, c->group);
    if (!root) {
        return none;
    }
    size_t rl = strlen(root);
    if (strncmp(path, root, rl) != 0 || path[rl] != '/') {
        return none;
    }
    const char *rest = path + rl + 1;
    for (size_t i = 0; i < CO_ARRAY_SIZE(podspec_lists); i++) {
        if (strcmp(rest, podspec_lists[i].path) == 0) {
            return podspec_lists[i].s;
        }
    }
    static const char *const ctypes[] = {"containers/", "initContainers/", "ephemeralContainers/"};
    for (size_t t = 0; t < CO_ARRAY_SIZE(ctypes); t++) {
        size_t cl = strlen(ctypes[t]);
        if (strncmp(rest, ctypes[t], cl) == 0) {
            for (size_t i = 0; i < CO_ARRAY_SIZE(container_lists); i++) {
                if (strcmp(rest + cl, container_lists[i].path) == 0) {
                    return container_lists[i].s;
                }
            }
        }
    }
    return none;
}

/* --- helpers -------------------------------------------------------------------------------- */

enum { DIR_NONE = 0, DIR_MERGE, DIR_REPLACE, DIR_DELETE };

static int map_directive(json_object *m, int *out)
{
    json_object *d = NULL;
    *out = DIR_NONE;
    if (!json_object_object_get_ex(m, "$patch", &d)) {
        return 0;
    }
    const char *v = json_object_get_string(d);
    if (v && strcmp(v, "delete") == 0) {
        *out = DIR_DELETE;
    } else if (v && strcmp(v, "replace") == 0) {
        *out = DIR_REPLACE;
    } else if (v && strcmp(v, "merge") == 0) {
        *out = DIR_MERGE;
    } else {
        return co_error_set(CO_EINVALID, "unknown patch strategy '%s'", v ? v : "");
    }
    return 0;
}

static json_object *deep_copy(json_object *v)
{
    json_object *c = NULL;
    if (v) {
        json_object_deep_copy(v, &c, NULL);
    }
    return c;
}

/* A copy of a patch value for a place where the target has nothing: null fields and $patch
 * directives are dropped, elements and maps marked for deletion vanish. Sets *gone when the
 * value itself is deleted. */
static json_object *clean_copy(json_object *v, int *gone)
{
    *gone = 0;
    if (json_object_is_type(v, json_type_object)) {
        int d = DIR_NONE;
        if (map_directive(v, &d) == 0 && d == DIR_DELETE) {
            *gone = 1;
            return NULL;
        }
        co_error_clear();
        json_object *res = json_object_new_object();
        json_object_object_foreach (v, k, val) {
            if (strcmp(k, "$patch") == 0 || val == NULL) {
                continue;
            }
            int g = 0;
            json_object *c = clean_copy(val, &g);
            if (!g) {
                json_object_object_add(res, k, c);
            }
        }
        return res;
    }
    if (json_object_is_type(v, json_type_array)) {
        json_object *res = json_object_new_array();
        size_t n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(v, i);
            json_object *d = NULL;
            if (json_object_is_type(e, json_type_object) &&
                json_object_object_get_ex(e, "$patch", &d) && json_object_object_length(e) == 1) {
                const char *s = json_object_get_string(d);
                if (s && strcmp(s, "delete") == 0) {
                    json_object_put(res);
                    *gone = 1;
                    return NULL;
                }
                continue;
            }
            int g = 0;
            json_object *c = clean_copy(e, &g);
            if (!g) {
                json_object_array_add(res, c);
            }
        }
        return res;
    }
    return deep_copy(v);
}

/* The string form of a scalar used to compare merge keys ("" when absent). */
static const char *key_value(json_object *elem, const char *key, char *buf, size_t cap)
{
    json_object *v = NULL;
    if (!key || !json_object_is_type(elem, json_type_object) ||
        !json_object_object_get_ex(elem, key, &v) || v == NULL) {
        return "";
    }
    if (json_object_is_type(v, json_type_string)) {
        return json_object_get_string(v);
    }
    snprintf(buf, cap, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    return buf;
}

/* Whether two elements are the same element of a keyed list: keys present on both must be
 * equal, and at least one key must be. */
static int same_element(json_object *a, json_object *b, const list_schema *s)
{
    int common = 0;
    for (int k = 0; k < 2 && s->keys[k]; k++) {
        char b1[64], b2[64];
        const char *va = key_value(a, s->keys[k], b1, sizeof(b1));
        const char *vb = key_value(b, s->keys[k], b2, sizeof(b2));
        if (!va[0] || !vb[0]) {
            continue;
        }
        if (strcmp(va, vb) != 0) {
            return 0;
        }
        common = 1;
    }
    return common;
}

static int
merge_value(json_object **dest, json_object *patch, smp_ctx *c, char *path, int *cleared);

/* --- lists of thousands of elements ----------------------------------------------------------
 * Comparing each element of the patch with each of the target is quadratic, so equal elements
 * are found by sorting instead (a sort, unlike a hash table, cannot be flooded). */

/* One scalar of a primitive list, with what json_object_equal() compares of it. */
typedef struct prim {
    size_t pos; /* in the patch, then the target */
    int type;   /* json_type */
    char *text; /* the value (doubles: canonical), NULL for one that equals nothing */
} prim;

static int prim_cmp(const void *a, const void *b)
{
    const prim *x = a;
    const prim *y = b;
    if (x->type != y->type) {
        return x->type < y->type ? -1 : 1;
    }
    int c = strcmp(x->text, y->text);
    return c != 0 ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* The text json_object_equal() agrees with: strings as they are, doubles by value (0 and -0
 * alike), other scalars as JSON; NULL for NaN (equal to nothing) and for containers. */
static char *prim_text(json_object *e)
{
    switch (json_object_get_type(e)) {
    case json_type_null:
        return co_xstrdup("");
    case json_type_string:
        return co_xstrndup(json_object_get_string(e), (size_t)json_object_get_string_len(e));
    case json_type_double: {
        double d = json_object_get_double(e);
        if (d != d) {
            return NULL;
        }
        return co_xasprintf("%.17g", d == 0 ? 0.0 : d);
    }
    case json_type_boolean:
    case json_type_int:
        return co_xstrdup(json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN));
    default:
        return NULL;
    }
}

/* Primitive list: the union of @p all[0] and @p all[1], each value once, at its first place. */
static void primitive_union(json_object *res, json_object *const all[2])
{
    size_t n0 = json_object_array_length(all[0]);
    size_t n = n0 + json_object_array_length(all[1]);
    prim *p = co_xcalloc(n + 1, sizeof(*p));
    char *keep = co_xcalloc(n + 1, 1);
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(all[i >= n0], i < n0 ? i : i - n0);
        char *text = prim_text(e);
        keep[i] = 1;
        if (text) {
            p[np].pos = i;
            p[np].type = (int)json_object_get_type(e);
            p[np].text = text;
            np++;
        }
    }
    qsort(p, np, sizeof(*p), prim_cmp);
    for (size_t i = 1; i < np; i++) {
        if (p[i].type == p[i - 1].type && strcmp(p[i].text, p[i - 1].text) == 0) {
            keep[p[i].pos] = 0; /* a later copy of an equal value */
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!keep[i]) {
            continue;
        }
        json_object *e = json_object_array_get_idx(all[i >= n0], i < n0 ? i : i - n0);
        /* containers (not expected in a primitive list) are compared as before */
        int seen = 0;
        if (json_object_is_type(e, json_type_object) || json_object_is_type(e, json_type_array)) {
            for (size_t j = 0; j < json_object_array_length(res) && !seen; j++) {
                seen = json_object_equal(json_object_array_get_idx(res, j), e);
            }
        }
        if (!seen) {
            json_object_array_add(res, deep_copy(e));
        }
    }
    for (size_t i = 0; i < np; i++) {
        free(p[i].text);
    }
    free(p);
    free(keep);
}

/* The elements of a target list with one merge key, sorted by it: the element a patch element
 * merges into is the first unused one with its key, and since they are used in that order, a
 * cursor per key finds it. */
typedef struct keyed {
    char *key;
    size_t pos;  /* in the target */
    size_t next; /* for the first of a key: its first unused one */
} keyed;

static int keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a;
    const keyed *y = b;
    int c = strcmp(x->key, y->key);
    return c != 0 ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

static keyed *keyed_index(json_object *d, const char *key, size_t *count)
{
    size_t nd = json_object_array_length(d);
    keyed *k = co_xcalloc(nd + 1, sizeof(*k));
    size_t n = 0;
    for (size_t j = 0; j < nd; j++) {
        char buf[64];
        const char *v = key_value(json_object_array_get_idx(d, j), key, buf, sizeof(buf));
        if (v[0]) {
            k[n].key = co_xstrdup(v);
            k[n].pos = j;
            n++;
        }
    }
    qsort(k, n, sizeof(*k), keyed_cmp);
    for (size_t i = 0; i < n; i++) {
        k[i].next = i;
    }
    *count = n;
    return k;
}

/* The target element @p pe merges into (by the single key @p key), or @p none. */
static size_t keyed_match(keyed *k, size_t n, json_object *pe, const char *key, size_t none)
{
    char buf[64];
    const char *v = key_value(pe, key, buf, sizeof(buf));
    if (!v[0]) {
        return none;
    }
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(k[mid].key, v) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo == n || strcmp(k[lo].key, v) != 0) {
        return none;
    }
    size_t at = k[lo].next;
    if (at >= n || strcmp(k[at].key, v) != 0) {
        return none;
    }
    k[lo].next++;
    return k[at].pos;
}

static void keyed_free(keyed *k, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(k[i].key);
    }
    free(k);
}

/* Merges keyed (or primitive) list @p patch into @p dest; the result replaces *dest. */
static int merge_keyed_list(json_object **dest,
                            json_object *patch,
                            const list_schema *s,
                            smp_ctx *c,
                            char *path)
{
    json_object *d = *dest;
    json_object *res = json_object_new_array();
    size_t np = json_object_array_length(patch), nd = json_object_array_length(d);
    char *used = co_xcalloc(nd + 1, 1);
    int rc = 0;
    if (!s->keys[0]) {
        /* primitive list: union, patch values first */
        json_object *all[2] = {patch, d};
        primitive_union(res, all);
        goto done;
    }
    size_t nk = 0;
    keyed *index = s->keys[1] ? NULL : keyed_index(d, s->keys[0], &nk);
    for (size_t i = 0; i < np && rc == 0; i++) {
        json_object *pe = json_object_array_get_idx(patch, i);
        size_t match = nd;
        if (index) {
            match = keyed_match(index, nk, pe, s->keys[0], nd);
        } else {
            /* two keys, either of which may be missing on either side: compared one by one */
            for (size_t j = 0; j < nd && rc == 0; j++) {
                rc = co_budget_tick();
                if (rc == 0 && !used[j] && same_element(json_object_array_get_idx(d, j), pe, s)) {
                    match = j;
                    break;
                }
            }
            if (rc < 0) {
                break;
            }
        }
        int d_dir = DIR_NONE;
        if (json_object_is_type(pe, json_type_object) && (rc = map_directive(pe, &d_dir)) < 0) {
            break;
        }
        if (match == nd) {
            if (d_dir == DIR_DELETE) {
                continue;
            }
            int gone = 0;
            json_object *cc = clean_copy(pe, &gone);
            if (!gone) {
                json_object_array_add(res, cc);
            }
            continue;
        }
        used[match] = 1;
        if (d_dir == DIR_DELETE) {
            continue;
        }
        json_object *merged = deep_copy(json_object_array_get_idx(d, match));
        int cleared = 0;
        rc = merge_value(&merged, pe, c, path, &cleared);
        if (rc == 0 && !cleared && merged) {
            json_object_array_add(res, merged);
        } else {
            json_object_put(merged);
        }
    }
    for (size_t j = 0; j < nd; j++) {
        if (!used[j]) {
            json_object_array_add(res, deep_copy(json_object_array_get_idx(d, j)));
        }
    }
    keyed_free(index, nk);
done:
    free(used);
    if (rc < 0) {
        json_object_put(res);
        return rc;
    }
    json_object_put(*dest);
    *dest = res;
    return 0;
}

static int merge_map(json_object *dest, json_object *patch, smp_ctx *c, char *path)
{
    size_t plen = strlen(path);
    json_object_object_foreach (patch, k, pv) {
        if (strcmp(k, "$patch") == 0) {
            continue;
        }
        if (plen + strlen(k) + 2 >= 4096) {
            return co_error_set(CO_EINVALID, "patch is nested too deeply");
        }
        size_t kl = strlen(k);
        if (plen) {
            path[plen] = '/';
            memcpy(path + plen + 1, k, kl + 1);
        } else {
            memcpy(path, k, kl + 1);
        }
        json_object *dv = NULL;
        int has = json_object_object_get_ex(dest, k, &dv);
        if (pv == NULL) {
            json_object_object_del(dest, k);
        } else if (!has || dv == NULL) {
            int gone = 0;
            json_object *cc = clean_copy(pv, &gone);
            if (!gone) {
                json_object_object_add(dest, k, cc);
            } else {
                json_object_object_del(dest, k);
            }
        } else {
            json_object *nv = json_object_get(dv);
            int cleared = 0;
            int rc = merge_value(&nv, pv, c, path, &cleared);
            if (rc < 0) {
                json_object_put(nv);
                path[plen] = '\0';
                return rc;
            }
            if (cleared) {
                json_object_put(nv);
                json_object_object_del(dest, k);
            } else if (nv != dv) {
                json_object_object_add(dest, k, nv);
            } else {
                json_object_put(nv);
            }
        }
        path[plen] = '\0';
    }
    return 0;
}

/* Merges @p patch into *dest, which may be replaced; *cleared when the field must go. */
static int merge_value(json_object **dest, json_object *patch, smp_ctx *c, char *path, int *cleared)
{
    *cleared = 0;
    int rc0 = co_budget_tick();
    if (rc0 < 0) {
        return rc0;
    }
    json_object *d = *dest;
    if (json_object_is_type(patch, json_type_object)) {
        int dir = DIR_NONE;
        int rc = map_directive(patch, &dir);
        if (rc < 0) {
            return rc;
        }
        if (dir == DIR_DELETE) {
            *cleared = 1;
            return 0;
        }
        if (dir == DIR_REPLACE || !json_object_is_type(d, json_type_object)) {
            int gone = 0;
            json_object *cc = clean_copy(patch, &gone);
            json_object_put(*dest);
            *dest = cc ? cc : json_object_new_object();
            return 0;
        }
        return merge_map(d, patch, c, path);
    }
    if (json_object_is_type(patch, json_type_array)) {
        list_schema s = lookup_list(c, path);
        if (!s.merge || !json_object_is_type(d, json_type_array)) {
            int gone = 0;
            json_object *cc = clean_copy(patch, &gone);
            json_object_put(*dest);
            *dest = gone ? NULL : cc;
            *cleared = gone;
            return 0;
        }
        /* a {$patch: ...} element steers the whole list */
        size_t n = json_object_array_length(patch);
        for (size_t i = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(patch, i);
            json_object *dv = NULL;
            if (json_object_is_type(e, json_type_object) &&
                json_object_object_get_ex(e, "$patch", &dv) && json_object_object_length(e) == 1) {
                const char *v = json_object_get_string(dv);
                if (v && strcmp(v, "delete") == 0) {
                    *cleared = 1;
                    return 0;
                }
                if (v && strcmp(v, "replace") == 0) {
                    int gone = 0;
                    json_object *cc = clean_copy(patch, &gone);
                    json_object_put(*dest);
                    *dest = cc;
                    return 0;
                }
            }
        }
        return merge_keyed_list(dest, patch, &s, c, path);
    }
    json_object_put(*dest);
    *dest = deep_copy(patch);
    return 0;
}

int kz_smp_apply(json_object *target, json_object *patch, int *deleted)
{
    smp_ctx c;
    *deleted = 0;
    const char *apiv = kz_get_str(target, "apiVersion", NULL);
    char version[256];
    kz_split_api_version(apiv, c.group, version, sizeof(c.group));
    snprintf(c.kind, sizeof(c.kind), "%s", kz_get_str(target, "kind", NULL));
    c.known = builtin_group(c.group);
    if (!json_object_is_type(patch, json_type_object)) {
        return co_error_set(CO_EINVALID, "a strategic merge patch must be a mapping");
    }
    int dir = DIR_NONE;
    int rc = map_directive(patch, &dir);
    if (rc < 0) {
        return rc;
    }
    if (dir == DIR_DELETE) {
        *deleted = 1;
        return 0;
    }
    char *path = co_xcalloc(4096, 1);
    if (dir == DIR_REPLACE) {
        json_object_object_foreach (target, k, v) {
            (void)v;
            json_object_object_del(target, k);
        }
    }
    rc = merge_map(target, patch, &c, path);
    free(path);
    if (rc == 0 && json_object_object_length(target) == 0) {
        *deleted = 1;
    }
    return rc;
}

/* --- JSON 6902 ------------------------------------------------------------------------------ */

int kz_json6902_apply(json_object **doc, json_object *ops)
{
    json_object *res = NULL;
    int rc = co_json_patch_apply(&res, *doc, ops);
    if (rc < 0) {
        return rc;
    }
    json_object_put(*doc);
    *doc = res;
    return 0;
}
