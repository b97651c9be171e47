/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kustomize build: loads a kustomization, accumulates its resources (files, directories,
 * nested kustomizations), runs the generators, merges components, runs the built-in
 * transformers in kustomize's fixed order, and at the top level adds content hashes to
 * generated names, fixes name references across kinds, drops local-config objects and sorts.
 * The steps follow kustomize v5's KustTarget, so the output matches `kubectl kustomize`.
 */
#include "kz_int.h"

#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/error.h"

typedef struct kz_build {
    const co_vfs *fs;
    const co_kustomize_options *opts;
    int depth;
    kz_strv stack;
} kz_build;

struct kz_dir {
    kz_build *b;
    char *dir;      /* tree path of the kustomization's directory */
    char *file;     /* tree path of the kustomization file */
    json_object *k; /* the kustomization */
};

static int accumulate_target(kz_dir *d, kz_resmap *ra);

/* --- loading -------------------------------------------------------------------------------- */

/* A tree path as messages show it (see co_kustomize_options.shown_prefix); free() it. */
static char *shown(const kz_build *b, const char *path)
{
    const char *prefix = b->opts->shown_prefix ? b->opts->shown_prefix : "";
    if (!prefix[0]) {
        return co_xstrdup(path[0] ? path : ".");
    }
    return co_xasprintf("%s%s", prefix, path);
}

static int is_remote(const char *ref)
{
    return strstr(ref, "://") != NULL || strncmp(ref, "github.com/", 11) == 0 ||
           strncmp(ref, "git@", 4) == 0 || strncmp(ref, "gitlab.com/", 11) == 0 ||
           strncmp(ref, "bitbucket.org/", 14) == 0;
}

/* Resolves @p rel against the kustomization's directory (anywhere in the tree). */
static int resolve(char **out, kz_dir *d, const char *rel)
{
    if (is_remote(rel)) {
        return co_error_set(CO_EUNSUPPORTED, "%s: remote resource '%s' is not supported", d->file,
                            rel);
    }
    char *p = NULL;
    int rc = co_vfs_join(&p, d->dir, rel);
    if (rc < 0) {
        return co_error_wrap("%s", d->file);
    }
    *out = p;
    return 0;
}

/* The load restriction of a file the kustomization of @p d reads (kustomize's
 * RestrictionRootOnly): in or below the kustomization's own directory. */
static int in_open_dir(const co_kustomize_options *o, const char *path)
{
    for (size_t i = 0; i < o->nopen_dirs; i++) {
        if (co_vfs_is_within(path, o->open_dirs[i])) {
            return 1;
        }
    }
    return 0;
}

static int check_file(kz_dir *d, const char *path)
{
    CO_ASSERT(path != NULL);
    const co_kustomize_options *o = d->b->opts;
    if (o->load_restrictor == CO_KUSTOMIZE_LOAD_NONE || co_vfs_is_within(path, d->dir) ||
        (in_open_dir(o, d->dir) && in_open_dir(o, path))) {
        return 0;
    }
    char *file = shown(d->b, path);
    char *root = shown(d->b, d->dir);
    co_error_set(CO_EINVALID, "security; file '%s' is not in or below '%s'", file, root);
    free(file);
    free(root);
    return CO_EINVALID;
}

/* Resolves a file reference and checks the load restriction. */
static int resolve_file(char **out, kz_dir *d, const char *rel)
{
    char *p = NULL;
    int rc = resolve(&p, d, rel);
    if (rc < 0 || !p) {
        return rc < 0 ? rc : CO_EINVALID;
    }
    if ((rc = check_file(d, p)) < 0) {
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

static int load_file(char **data, size_t *len, kz_dir *d, const char *rel)
{
    char *p = NULL;
    int rc = resolve_file(&p, d, rel);
    if (rc < 0) {
        return rc;
    }
    rc = co_vfs_read(data, len, d->b->fs, p);
    free(p);
    if (rc < 0) {
        return co_error_wrap("%s", d->file);
    }
    return 0;
}

static const char *const kust_names[] = {"kustomization.yaml", "kustomization.yml",
                                         "Kustomization"};

static const char *const known_fields[] = {
    "apiVersion",
    "kind",
    "metadata",
    "resources",
    "bases",
    "components",
    "namespace",
    "namePrefix",
    "nameSuffix",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "images",
    "replicas",
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "configMapGenerator",
    "secretGenerator",
    "generatorOptions",
    "replacements",
    "sortOptions",
    "crds",
    "configurations",
    "generators",
    "transformers",
    "validators",
    "helmCharts",
    "helmGlobals",
    "helmChartInflationGenerator",
    "vars",
    "openapi",
    "buildMetadata",
    "imageTags",
};

static int check_fields(kz_dir *d)
{
    static const char *const unsupported[] = {
        "crds",       "configurations", "generators",   "transformers",
        "validators", "helmCharts",     "helmGlobals",  "helmChartInflationGenerator",
        "vars",       "openapi",        "buildMetadata"};
    json_object_object_foreach (d->k, key, val) {
        int known = 0;
        for (size_t i = 0; i < CO_ARRAY_SIZE(known_fields); i++) {
            known |= strcmp(key, known_fields[i]) == 0;
        }
        if (!known) {
            return co_error_set(CO_EINVALID, "%s: invalid Kustomization: unknown field \"%s\"",
                                d->file, key);
        }
        for (size_t i = 0; i < CO_ARRAY_SIZE(unsupported); i++) {
            if (strcmp(key, unsupported[i]) == 0 && val != NULL &&
                !(json_object_is_type(val, json_type_array) &&
                  json_object_array_length(val) == 0)) {
                return co_error_set(CO_EUNSUPPORTED, "%s: '%s' is not supported", d->file, key);
            }
        }
    }
    return 0;
}

/* kustomize refuses a kustomization that says nothing: it compares the decoded document, its
 * deprecated fields moved to their successors, with an empty one, apiVersion and kind aside.
 * So a field counts when it holds anything but null or an empty string, except an empty
 * `bases` or `imageTags` list, which the move leaves as nothing. An empty list or mapping
 * elsewhere (`resources: []`) counts. */
static int check_empty(const kz_dir *d)
{
    json_object_object_foreach (d->k, key, val) {
        if (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0 || val == NULL) {
            continue;
        }
        if (json_object_is_type(val, json_type_string) && json_object_get_string_len(val) == 0) {
            continue;
        }
        if ((strcmp(key, "bases") == 0 || strcmp(key, "imageTags") == 0) &&
            json_object_is_type(val, json_type_array) && json_object_array_length(val) == 0) {
            continue;
        }
        return 0;
    }
    return co_error_set(CO_EINVALID, "kustomization.yaml is empty");
}

static void dir_dispose(kz_dir *d)
{
    free(d->dir);
    free(d->file);
    json_object_put(d->k);
}

/* Loads the kustomization of tree directory @p dir. */
static int load_kustomization(kz_dir *d, kz_build *b, const char *dir)
{
    CO_ASSERT(dir != NULL);
    memset(d, 0, sizeof(*d));
    d->b = b;
    d->dir = co_xstrdup(dir);
    const char *found = NULL;
    for (size_t i = 0; i < CO_ARRAY_SIZE(kust_names); i++) {
        char *p = dir[0] ? co_xasprintf("%s/%s", dir, kust_names[i]) : co_xstrdup(kust_names[i]);
        if (co_vfs_stat(b->fs, p) == CO_VFS_FILE) {
            if (found) {
                free(p);
                return co_error_set(CO_EINVALID, "found multiple kustomization files under: %s",
                                    dir[0] ? dir : ".");
            }
            found = kust_names[i];
            d->file = p;
        } else {
            free(p);
        }
    }
    if (!found) {
        return co_error_set(CO_ENOTFOUND,
                            "unable to find one of 'kustomization.yaml', 'kustomization.yml' or "
                            "'Kustomization' in directory '%s'",
                            dir[0] ? dir : ".");
    }
    char *data = NULL;
    size_t len = 0;
    json_object *docs = NULL;
    int rc = co_vfs_read(&data, &len, b->fs, d->file);
    if (b->opts->shown_prefix && b->opts->shown_prefix[0]) {
        char *tree_path = d->file;
        d->file = shown(b, tree_path);
        free(tree_path);
    }
    if (rc == 0) {
        rc = kz_decode_kustomization(&docs, data, len, d->file);
    }
    free(data);
    if (rc < 0) {
        return rc;
    }
    if (json_object_array_length(docs) == 0) {
        d->k = json_object_new_object();
    } else if (json_object_array_length(docs) == 1 &&
               json_object_is_type(json_object_array_get_idx(docs, 0), json_type_object)) {
        d->k = json_object_get(json_object_array_get_idx(docs, 0));
    } else {
        json_object_put(docs);
        return co_error_set(CO_EINVALID, "%s: a kustomization must be a single mapping", d->file);
    }
    json_object_put(docs);
    const char *kind = kz_get_str(d->k, "kind", NULL);
    if (kind[0] && strcmp(kind, "Kustomization") != 0 && strcmp(kind, "Component") != 0) {
        return co_error_set(CO_EINVALID, "%s: invalid kind '%s'", d->file, kind);
    }
    rc = check_fields(d);
    return rc < 0 ? rc : check_empty(d);
}

/* Field accessors over the kustomization with type checks. */
static json_object *kfield(kz_dir *d, const char *key)
{
    json_object *v = NULL;
    json_object_object_get_ex(d->k, key, &v);
    return v;
}

static int klist(json_object **out, kz_dir *d, const char *key)
{
    json_object *v = kfield(d, key);
    if (v && !json_object_is_type(v, json_type_array)) {
        return co_error_set(CO_EINVALID, "%s: '%s' must be a list", d->file, key);
    }
    *out = v;
    return 0;
}

static int kmap(json_object **out, kz_dir *d, const char *key)
{
    json_object *v = kfield(d, key);
    if (v && !json_object_is_type(v, json_type_object)) {
        return co_error_set(CO_EINVALID, "%s: '%s' must be a mapping", d->file, key);
    }
    *out = v;
    return 0;
}

/* --- the resource list ------------------------------------------------------------------------ */

static int ids_equal(const char *g1,
                     const char *v1,
                     const char *k1,
                     const char *n1,
                     const char *ns1,
                     const char *g2,
                     const char *v2,
                     const char *k2,
                     const char *n2,
                     const char *ns2)
{
    return strcmp(g1, g2) == 0 && strcmp(v1, v2) == 0 && strcmp(k1, k2) == 0 &&
           strcmp(n1, n2) == 0 && strcmp(kz_effective_ns(k1, ns1), kz_effective_ns(k2, ns2)) == 0;
}

/* Whether @p r's current id or any of its previous ids equals the given id. */
static int matches_any_id(const kz_res *r,
                          const char *g,
                          const char *v,
                          const char *k,
                          const char *n,
                          const char *ns)
{
    char rg[256], rv[256];
    kz_split_api_version(kz_res_api_version(r), rg, rv, sizeof(rg));
    if (ids_equal(rg, rv, kz_res_kind(r), kz_res_name(r), kz_res_ns(r), g, v, k, n, ns)) {
        return 1;
    }
    for (size_t i = 0; i < r->prev_names.n; i++) {
        if (ids_equal(rg, rv, r->prev_kinds.v[i], r->prev_names.v[i], r->prev_nss.v[i], g, v, k, n,
                      ns)) {
            return 1;
        }
    }
    return 0;
}

static int same_cur_id(const kz_res *a, const kz_res *b)
{
    char ag[256], av[256], bg[256], bv[256];
    kz_split_api_version(kz_res_api_version(a), ag, av, sizeof(ag));
    kz_split_api_version(kz_res_api_version(b), bg, bv, sizeof(bg));
    return ids_equal(ag, av, kz_res_kind(a), kz_res_name(a), kz_res_ns(a), bg, bv, kz_res_kind(b),
                     kz_res_name(b), kz_res_ns(b));
}

static char *res_id_string(const kz_res *r)
{
    char g[256], v[256];
    kz_split_api_version(kz_res_api_version(r), g, v, sizeof(g));
    const char *ns = kz_res_ns(r);
    return co_xasprintf("%s.%s.%s/%s.%s", kz_res_kind(r)[0] ? kz_res_kind(r) : "[noKind]",
                        v[0] ? v : "[noVer]", g[0] ? g : "[noGrp]", kz_res_name(r),
                        ns[0] ? ns : "[noNs]");
}

/* The current ids of the resources being accumulated, in a search tree (POSIX tsearch, a
 * red-black tree in glibc), so that each new resource is checked in O(log n): kustomize checks
 * it against every resource before it, which makes a few thousand resources take seconds. The
 * ids change only when transformers run, after the accumulation. */
typedef struct id_index {
    void *root; /* of id_key */
} id_index;

/* The fields same_cur_id() compares, NUL-separated. */
typedef struct id_key {
    size_t len;
    char text[];
} id_key;

static id_key *id_key_of(const kz_res *r)
{
    char g[256], v[256];
    kz_split_api_version(kz_res_api_version(r), g, v, sizeof(g));
    const char *parts[5] = {g, v, kz_res_kind(r), kz_res_name(r),
                            kz_effective_ns(kz_res_kind(r), kz_res_ns(r))};
    size_t len = 0;
    for (size_t i = 0; i < 5; i++) {
        len += strlen(parts[i]) + 1;
    }
    id_key *k = co_xmalloc(sizeof(*k) + len);
    k->len = len;
    char *p = k->text;
    for (size_t i = 0; i < 5; i++) {
        size_t n = strlen(parts[i]) + 1;
        memcpy(p, parts[i], n);
        p += n;
    }
    return k;
}

static int id_key_cmp(const void *a, const void *b)
{
    const id_key *x = a;
    const id_key *y = b;
    int c = memcmp(x->text, y->text, x->len < y->len ? x->len : y->len);
    return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/* Adds the id of @p r; 0 when it was there already (@p k is then freed). */
static int id_index_add(id_index *idx, id_key *k)
{
    id_key **at = tsearch(k, &idx->root, id_key_cmp);
    CO_ASSERT(at != NULL);
    if (*at != k) {
        free(k);
        return 0;
    }
    return 1;
}

static void id_index_init(id_index *idx, const kz_resmap *ra)
{
    idx->root = NULL;
    for (size_t i = 0; i < ra->n; i++) {
        (void)id_index_add(idx, id_key_of(ra->v[i]));
    }
}

static void id_index_dispose(id_index *idx)
{
    tdestroy(idx->root, free);
    idx->root = NULL;
}

/* Appends @p r (consumed), refusing a second resource with the same current id. */
static int ra_append(kz_resmap *ra, id_index *idx, kz_res *r)
{
    int rc = co_budget_tick();
    if (rc < 0) {
        kz_res_free(r);
        return rc;
    }
    if (!id_index_add(idx, id_key_of(r))) {
        char *id = res_id_string(r);
        co_error_set(CO_EINVALID, "may not add resource with an already registered id: %s", id);
        free(id);
        kz_res_free(r);
        return CO_EINVALID;
    }
    kz_resmap_push(ra, r);
    return 0;
}

/* Turns decoded documents into resources; List kinds are flattened. */
static int append_docs(kz_resmap *ra, id_index *idx, json_object *docs, const char *what)
{
    size_t n = json_object_array_length(docs);
    for (size_t i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(docs, i);
        if (o == NULL) {
            continue;
        }
        if (!json_object_is_type(o, json_type_object)) {
            return co_error_set(CO_EINVALID, "%s: document %zu is not a mapping", what, i + 1);
        }
        const char *kind = kz_get_str(o, "kind", NULL);
        size_t klen = strlen(kind);
        json_object *items = NULL;
        if (klen >= 4 && strcmp(kind + klen - 4, "List") == 0 &&
            json_object_object_get_ex(o, "items", &items)) {
            if (items && !json_object_is_type(items, json_type_array)) {
                return co_error_set(CO_EINVALID, "%s: 'items' of a %s must be a list", what, kind);
            }
            int rc = items ? append_docs(ra, idx, items, what) : 0;
            if (rc < 0) {
                return rc;
            }
            continue;
        }
        if (!kind[0]) {
            return co_error_set(CO_EINVALID, "%s: missing Resource metadata: kind is empty", what);
        }
        if (!kz_get_str(o, "metadata", "name")[0] &&
            !kz_get_str(o, "metadata", "generateName")[0]) {
            return co_error_set(CO_EINVALID, "%s: missing metadata.name in object of kind %s", what,
                                kind);
        }
        int rc = ra_append(ra, idx, kz_res_new(json_object_get(o)));
        if (rc < 0) {
            return co_error_wrap("%s", what);
        }
    }
    return 0;
}

/* --- accumulation -------------------------------------------------------------------------------
 */

static int build_dir(kz_build *b, const char *dir, int component, kz_resmap *ra);

static int accumulate_resources(kz_dir *d, kz_resmap *ra)
{
    json_object *list = NULL;
    id_index idx;
    id_index_init(&idx, ra);
    int rc = klist(&list, d, "resources");
    json_object *bases = NULL;
    if (rc == 0) {
        rc = klist(&bases, d, "bases");
    }
    json_object *lists[2] = {list, bases};
    for (int l = 0; l < 2 && rc == 0; l++) {
        size_t n = lists[l] ? json_object_array_length(lists[l]) : 0;
        for (size_t i = 0; i < n && rc == 0; i++) {
            json_object *e = json_object_array_get_idx(lists[l], i);
            if (!json_object_is_type(e, json_type_string)) {
                rc = co_error_set(CO_EINVALID, "%s: resources[%zu] must be a string", d->file, i);
                break;
            }
            const char *rel = json_object_get_string(e);
            char *p = NULL;
            if ((rc = resolve(&p, d, rel)) < 0) {
                break;
            }
            co_vfs_type t = co_vfs_stat(d->b->fs, p);
            if (t == CO_VFS_FILE && (rc = check_file(d, p)) < 0) {
                co_error_wrap("%s: accumulating resources from '%s'", d->file, rel);
            } else if (t == CO_VFS_FILE) {
                char *data = NULL;
                size_t len = 0;
                json_object *docs = NULL;
                rc = co_vfs_read(&data, &len, d->b->fs, p);
                if (rc == 0) {
                    rc = kz_decode_stream(&docs, data, len, p);
                }
                free(data);
                if (rc == 0) {
                    rc = append_docs(ra, &idx, docs, p);
                }
                json_object_put(docs);
                if (rc < 0) {
                    co_error_wrap("accumulating resources from '%s'", rel);
                }
            } else if (t == CO_VFS_DIR) {
                kz_resmap sub = {0};
                rc = build_dir(d->b, p, 0, &sub);
                for (size_t j = 0; j < sub.n && rc == 0; j++) {
                    rc = ra_append(ra, &idx, sub.v[j]);
                    sub.v[j] = NULL;
                }
                for (size_t j = 0; j < sub.n; j++) {
                    kz_res_free(sub.v[j]);
                }
                free(sub.v);
                if (rc < 0) {
                    co_error_wrap("accumulating resources from '%s'", rel);
                }
            } else {
                rc = co_error_set(CO_ENOTFOUND, "%s: accumulating resources: '%s' does not exist",
                                  d->file, rel);
            }
            free(p);
        }
    }
    id_index_dispose(&idx);
    return rc;
}

static int accumulate_components(kz_dir *d, kz_resmap *ra)
{
    json_object *list = NULL;
    int rc = klist(&list, d, "components");
    size_t n = list ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        if (!json_object_is_type(e, json_type_string)) {
            return co_error_set(CO_EINVALID, "%s: components[%zu] must be a string", d->file, i);
        }
        char *p = NULL;
        if ((rc = resolve(&p, d, json_object_get_string(e))) < 0) {
            break;
        }
        if (co_vfs_stat(d->b->fs, p) != CO_VFS_DIR) {
            rc = co_error_set(CO_ENOTFOUND, "%s: component '%s' is not a directory", d->file,
                              json_object_get_string(e));
        } else {
            rc = build_dir(d->b, p, 1, ra);
        }
        free(p);
    }
    return rc;
}

/* --- generators ----------------------------------------------------------------------------- */

static int run_generators(kz_dir *d, kz_resmap *ra)
{
    static const char *const fields[2] = {"configMapGenerator", "secretGenerator"};
    static const char *const kinds[2] = {"ConfigMap", "Secret"};
    json_object *global = NULL;
    int rc = kmap(&global, d, "generatorOptions");
    for (int f = 0; f < 2 && rc == 0; f++) {
        json_object *list = NULL;
        if ((rc = klist(&list, d, fields[f])) < 0) {
            break;
        }
        size_t n = list ? json_object_array_length(list) : 0;
        for (size_t i = 0; i < n && rc == 0; i++) {
            kz_res *r = NULL;
            rc = kz_generate(&r, d, json_object_array_get_idx(list, i), kinds[f], global);
            if (rc == 0) {
                rc = kz_absorb(ra, r);
            }
            if (rc < 0) {
                co_error_wrap("%s: %s[%zu]", d->file, fields[f], i);
            }
        }
    }
    return rc;
}

/* --- transformers ---------------------------------------------------------------------------- */

static int accumulate_target(kz_dir *d, kz_resmap *ra)
{
    int rc = accumulate_resources(d, ra);
    if (rc == 0) {
        rc = run_generators(d, ra);
    }
    if (rc == 0) {
        rc = accumulate_components(d, ra);
    }
    if (rc == 0) {
        rc = kz_transform_all(d, ra);
    }
    return rc;
}

/* Builds directory @p dir into @p ra: a Component works on the resources accumulated so far, a
 * Kustomization on a fresh list that is then appended. */
static int build_dir(kz_build *b, const char *dir, int component, kz_resmap *ra)
{
    CO_ASSERT(dir != NULL);
    int rc0 = co_budget_check();
    if (rc0 < 0) {
        return rc0;
    }
    if (b->depth >= CO_MAX_KUSTOMIZE_DEPTH) {
        return co_error_set(CO_ETOOBIG, "kustomizations nested deeper than %d",
                            CO_MAX_KUSTOMIZE_DEPTH);
    }
    /* kustomize's loader refuses a root at or above any root on the way to it */
    for (size_t i = b->stack.n; i-- > 0;) {
        CO_ASSERT(b->stack.v[i] != NULL);
        if (co_vfs_is_within(b->stack.v[i], dir)) {
            char *cand = shown(b, dir);
            char *visited = shown(b, b->stack.v[i]);
            co_error_set(CO_EINVALID,
                         "cycle detected: candidate root '%s' contains visited root '%s'", cand,
                         visited);
            free(cand);
            free(visited);
            return CO_EINVALID;
        }
    }
    kz_dir d;
    int rc = load_kustomization(&d, b, dir);
    if (rc == 0) {
        int is_comp = strcmp(kz_get_str(d.k, "kind", NULL), "Component") == 0;
        if (component && !is_comp) {
            rc = co_error_set(
                CO_EINVALID, "expected kind 'Component' for path '%s' but got '%s'", dir,
                kz_get_str(d.k, "kind", NULL)[0] ? kz_get_str(d.k, "kind", NULL) : "Kustomization");
        } else if (!component && is_comp) {
            rc = co_error_set(CO_EINVALID, "expected kind != 'Component' for path '%s'",
                              dir[0] ? dir : ".");
        }
    }
    if (rc == 0) {
        b->depth++;
        kz_strv_push(&b->stack, dir);
        rc = accumulate_target(&d, ra);
        free(b->stack.v[--b->stack.n]);
        b->depth--;
    }
    dir_dispose(&d);
    return rc;
}

/* --- top level -----------------------------------------------------------------------------------
 */

static int add_hashes(kz_resmap *ra)
{
    for (size_t i = 0; i < ra->n; i++) {
        kz_res *r = ra->v[i];
        if (!r->needs_hash) {
            continue;
        }
        char h[11];
        int rc = kz_hash_res(h, r->obj);
        if (rc < 0) {
            return rc;
        }
        kz_res_store_prev_id(r);
        char *name = co_xasprintf("%s-%s", kz_res_name(r), h);
        kz_res_set_name(r, name);
        free(name);
    }
    return 0;
}

static void drop_local_config(kz_resmap *ra)
{
    for (size_t i = 0; i < ra->n;) {
        json_object *md = NULL, *ann = NULL, *v = NULL;
        if (json_object_object_get_ex(ra->v[i]->obj, "metadata", &md) &&
            json_object_object_get_ex(md, "annotations", &ann) &&
            json_object_object_get_ex(ann, "config.kubernetes.io/local-config", &v) &&
            json_object_is_type(v, json_type_string) &&
            strcmp(json_object_get_string(v), "true") == 0) {
            kz_resmap_remove_at(ra, i);
            continue;
        }
        i++;
    }
}

int co_kustomize_build(struct json_object **out,
                       const co_vfs *fs,
                       const char *root,
                       const co_kustomize_options *opts)
{
    co_kustomize_options defaults = CO_KUSTOMIZE_OPTIONS_INIT;
    char *top = NULL;
    int rc = co_vfs_join(&top, "", root);
    if (rc < 0) {
        return rc;
    }
    kz_build b = {fs, opts ? opts : &defaults, 0, {0}};
    kz_resmap ra = {0};
    kz_dir d;
    memset(&d, 0, sizeof(d));
    rc = load_kustomization(&d, &b, top);
    if (rc == 0 && strcmp(kz_get_str(d.k, "kind", NULL), "Component") == 0) {
        rc = co_error_set(CO_EINVALID, "expected kind != 'Component' for path '%s'",
                          top[0] ? top : ".");
    }
    if (rc == 0) {
        kz_strv_push(&b.stack, top);
        b.depth = 1;
        rc = accumulate_target(&d, &ra);
    }
    if (rc == 0) {
        rc = add_hashes(&ra);
    }
    if (rc == 0) {
        rc = kz_fix_name_references(&ra);
    }
    if (rc == 0) {
        drop_local_config(&ra);
        json_object *so = NULL;
        rc = kmap(&so, &d, "sortOptions");
        if (rc == 0) {
            rc = kz_sort(&ra, so, d.file);
        }
    }
    if (rc == 0) {
        json_object *arr = json_object_new_array_ext((int)ra.n);
        for (size_t i = 0; i < ra.n; i++) {
            json_object_array_add(arr, json_object_get(ra.v[i]->obj));
        }
        *out = arr;
    }
    kz_resmap_dispose(&ra);
    kz_strv_dispose(&b.stack);
    dir_dispose(&d);
    free(top);
    return rc;
}

int kz_dir_load(char **data, size_t *len, kz_dir *d, const char *rel)
{
    return load_file(data, len, d, rel);
}

const char *kz_dir_file(const kz_dir *d)
{
    return d->file;
}

json_object *kz_dir_kustomization(const kz_dir *d)
{
    return d->k;
}

int kz_res_matches_any_id(const kz_res *r,
                          const char *g,
                          const char *v,
                          const char *k,
                          const char *n,
                          const char *ns)
{
    return matches_any_id(r, g, v, k, n, ns);
}

int kz_same_cur_id(const kz_res *a, const kz_res *b)
{
    return same_cur_id(a, b);
}

char *kz_res_id_string(const kz_res *r)
{
    return res_id_string(r);
}

int kz_append_docs(kz_resmap *ra, json_object *docs, const char *what)
{
    id_index idx;
    id_index_init(&idx, ra);
    int rc = append_docs(ra, &idx, docs, what);
    id_index_dispose(&idx);
    return rc;
}
