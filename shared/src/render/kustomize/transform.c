/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The built-in transformers, run per kustomization in kustomize's order: patchesStrategicMerge,
 * patches, namespace, namePrefix, nameSuffix, labels/commonLabels, commonAnnotations,
 * patchesJson6902, replicas, images, replacements. Also target selectors, the name-reference
 * fix-up run once at the end of a build, and the output order.
 */
#include "kz_int.h"
#include "shared/src/json/json_lib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "co/util/budget.h"
#include "co/util/error.h"

static void res_gv(const kz_res *r, char *g, char *v)
{
    kz_split_api_version(kz_res_api_version(r), g, v, 256);
}

/* Whether the whole of @p s matches the Go regular expression @p re (anchored). */
static int regex_full_match(const char *re, const char *s, int *err)
{
    char *anchored = co_xasprintf("^(?:%s)$", re);
    int ec = 0;
    PCRE2_SIZE eoff = 0;
    pcre2_code *code =
        pcre2_compile((PCRE2_SPTR)anchored, PCRE2_ZERO_TERMINATED, 0, &ec, &eoff, NULL);
    free(anchored);
    if (!code) {
        *err = co_error_set(CO_EINVALID, "invalid regular expression '%s'", re);
        return 0;
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    int rc = pcre2_match(code, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);
    pcre2_match_data_free(md);
    pcre2_code_free(code);
    return rc >= 0;
}

/* --- label selectors -------------------------------------------------------------------------- */

static char *trim(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) {
        n--;
    }
    return co_xstrndup(s, n);
}

/* Matches a Kubernetes label selector string against the map @p labels. */
static int selector_matches(const char *sel, json_object *labels, int *err)
{
    const char *p = sel;
    while (*p) {
        /* split at commas outside parentheses */
        const char *e = p;
        int depth = 0;
        while (*e && (depth || *e != ',')) {
            depth += *e == '(' ? 1 : *e == ')' ? -1 : 0;
            e++;
        }
        char *req = trim(p, (size_t)(e - p));
        p = *e ? e + 1 : e;
        if (!req[0]) {
            free(req);
            continue;
        }
        int ok = 1;
        char *op = NULL;
        if (req[0] == '!') {
            char *key = trim(req + 1, strlen(req + 1));
            ok = co_json__member(labels, key) == NULL;
            free(key);
        } else if ((op = strstr(req, " notin ")) != NULL || (op = strstr(req, " in ")) != NULL) {
            int notin = strncmp(op, " notin ", 7) == 0;
            char *key = trim(req, (size_t)(op - req));
            const char *open = strchr(op, '(');
            const char *close = open ? strchr(open, ')') : NULL;
            if (!open || !close) {
                free(key);
                free(req);
                *err = co_error_set(CO_EINVALID, "invalid label selector '%s'", sel);
                return 0;
            }
            json_object *lv = co_json__member(labels, key);
            const char *have =
                json_object_is_type(lv, json_type_string) ? json_object_get_string(lv) : NULL;
            int found = 0;
            const char *q = open + 1;
            while (q < close) {
                const char *c = memchr(q, ',', (size_t)(close - q));
                if (!c) {
                    c = close;
                }
                char *val = trim(q, (size_t)(c - q));
                if (have && strcmp(val, have) == 0) {
                    found = 1;
                }
                free(val);
                q = c + 1;
            }
            ok = notin ? !found : found;
            free(key);
        } else if ((op = strstr(req, "!=")) != NULL) {
            char *key = trim(req, (size_t)(op - req));
            char *val = trim(op + 2, strlen(op + 2));
            json_object *lv = co_json__member(labels, key);
            ok = !json_object_is_type(lv, json_type_string) ||
                 strcmp(json_object_get_string(lv), val) != 0;
            free(key);
            free(val);
        } else if ((op = strchr(req, '=')) != NULL) {
            char *key = trim(req, (size_t)(op - req));
            const char *vs = op[1] == '=' ? op + 2 : op + 1;
            char *val = trim(vs, strlen(vs));
            json_object *lv = co_json__member(labels, key);
            ok = json_object_is_type(lv, json_type_string) &&
                 strcmp(json_object_get_string(lv), val) == 0;
            free(key);
            free(val);
        } else {
            ok = co_json__member(labels, req) != NULL;
        }
        free(req);
        if (!ok) {
            return 0;
        }
    }
    return 1;
}

/* --- target selection ------------------------------------------------------------------------ */

/* Whether @p r is selected by a kustomize Selector (group, version, kind, name, namespace as
 * anchored regular expressions; labelSelector, annotationSelector). */
static int selected(const kz_res *r, json_object *sel, int *err)
{
    /* every patch with a target asks this of every resource: counted against the render's CPU
     * time (the field transformers count in kz_fs_apply()) */
    int rc = co_budget_tick();
    if (rc < 0) {
        *err = rc;
        return 0;
    }
    char g[256], v[256];
    res_gv(r, g, v);
    const char *ok_kind, *org_name, *org_ns;
    kz_res_org(r, &ok_kind, &org_name, &org_ns);
    const char *cur_ns = kz_effective_ns(kz_res_kind(r), kz_res_ns(r));
    const char *org_eff = kz_effective_ns(ok_kind, org_ns);
    const char *ns = kz_get_str(sel, "namespace", NULL);
    if (ns[0] && !regex_full_match(ns, org_eff, err) && !regex_full_match(ns, cur_ns, err)) {
        return 0;
    }
    const char *name = kz_get_str(sel, "name", NULL);
    if (name[0] && !regex_full_match(name, org_name, err) &&
        !regex_full_match(name, kz_res_name(r), err)) {
        return 0;
    }
    const char *fields[3] = {"group", "version", "kind"};
    const char *have[3] = {g, v, kz_res_kind(r)};
    for (int i = 0; i < 3; i++) {
        const char *want = kz_get_str(sel, fields[i], NULL);
        if (want[0] && !regex_full_match(want, have[i], err)) {
            return 0;
        }
    }
    json_object *md = co_json__member(r->obj, "metadata");
    const char *ls = kz_get_str(sel, "labelSelector", NULL);
    if (ls[0] && !selector_matches(ls, co_json__member(md, "labels"), err)) {
        return 0;
    }
    const char *as = kz_get_str(sel, "annotationSelector", NULL);
    if (as[0] && !selector_matches(as, co_json__member(md, "annotations"), err)) {
        return 0;
    }
    return 1;
}

int kz_selector_labels_match(const kz_res *r, json_object *sel, int *err)
{
    json_object *md = co_json__member(r->obj, "metadata");
    const char *ls = kz_get_str(sel, "labelSelector", NULL);
    if (ls[0] && !selector_matches(ls, co_json__member(md, "labels"), err)) {
        return 0;
    }
    const char *as = kz_get_str(sel, "annotationSelector", NULL);
    return !as[0] || selector_matches(as, co_json__member(md, "annotations"), err);
}

/* --- patches -----------------------------------------------------------------------------------
 */

/* Applies strategic-merge patch @p patch to resource index @p i; removes it when deleted. */
static int apply_smp(kz_resmap *ra, size_t *i, json_object *patch, int allow_name, int allow_kind)
{
    kz_res *r = ra->v[*i];
    char *name = co_xstrdup(kz_res_name(r));
    char *ns = co_xstrdup(kz_res_ns(r));
    char *kind = co_xstrdup(kz_res_kind(r));
    char *apiv = co_xstrdup(kz_res_api_version(r));
    if (allow_name || allow_kind) {
        kz_res_store_prev_id(r);
    }
    json_object *pc = NULL;
    json_object_deep_copy(patch, &pc, NULL);
    json_object_object_add(pc, "apiVersion", json_object_new_string(apiv));
    int deleted = 0;
    int rc = kz_smp_apply(r->obj, pc, &deleted);
    json_object_put(pc);
    if (rc == 0 && deleted) {
        kz_resmap_remove_at(ra, *i);
        (*i)--;
    } else if (rc == 0) {
        if (!allow_kind) {
            json_object_object_add(r->obj, "kind", json_object_new_string(kind));
        }
        if (!allow_name) {
            kz_res_set_name(r, name);
        }
        kz_res_set_ns(r, ns);
    }
    free(name);
    free(ns);
    free(kind);
    free(apiv);
    return rc;
}

/* The unique resource having any id equal to the patch's id (kustomize's GetById). */
static int find_by_patch_id(size_t *out, kz_resmap *ra, json_object *patch)
{
    char g[256], v[256];
    kz_split_api_version(kz_get_str(patch, "apiVersion", NULL), g, v, sizeof(g));
    const char *kind = kz_get_str(patch, "kind", NULL);
    json_object *md = co_json__member(patch, "metadata");
    const char *name = kz_get_str(md, "name", NULL);
    const char *ns = kz_get_str(md, "namespace", NULL);
    size_t count = 0;
    for (size_t i = 0; i < ra->n; i++) {
        if (kz_res_matches_any_id(ra->v[i], g, v, kind, name, ns)) {
            *out = i;
            count++;
        }
    }
    if (count == 1) {
        return 0;
    }
    return co_error_set(CO_EINVALID,
                        "%s for Id %s.%s.%s/%s.%s; failed to find unique target for patch",
                        count ? "multiple matches" : "no matches", kind[0] ? kind : "[noKind]",
                        v[0] ? v : "[noVer]", g[0] ? g : "[noGrp]", name, ns[0] ? ns : "[noNs]");
}

/* Applies the SM patches of @p docs, either to their own id or to every selected resource. */
static int
apply_sm_docs(kz_resmap *ra, json_object *docs, json_object *target, int allow_name, int allow_kind)
{
    size_t n = json_object_array_length(docs);
    for (size_t p = 0; p < n; p++) {
        json_object *patch = json_object_array_get_idx(docs, p);
        if (!json_object_is_type(patch, json_type_object)) {
            return co_error_set(CO_EINVALID, "a strategic merge patch must be a mapping");
        }
        int rc = 0;
        if (!target) {
            size_t idx = 0;
            if ((rc = find_by_patch_id(&idx, ra, patch)) < 0) {
                return rc;
            }
            rc = apply_smp(ra, &idx, patch, allow_name, allow_kind);
        } else {
            /* select first, then patch, since patching may change what matches */
            int err = 0;
            char *sel = co_xcalloc(ra->n + 1, 1);
            for (size_t i = 0; i < ra->n; i++) {
                sel[i] = (char)selected(ra->v[i], target, &err);
            }
            kz_res **snapshot = co_xcalloc(ra->n + 1, sizeof(kz_res *));
            size_t ns = ra->n;
            if (ns) {
                memcpy(snapshot, ra->v, ns * sizeof(kz_res *));
            }
            /* patching only removes resources, so each one is found after the one before */
            size_t from = 0;
            for (size_t s = 0; s < ns && rc == 0 && err == 0; s++) {
                if (!sel[s]) {
                    continue;
                }
                for (size_t i = from; i < ra->n; i++) {
                    if (ra->v[i] == snapshot[s]) {
                        rc = apply_smp(ra, &i, patch, allow_name, allow_kind);
                        from = i + 1; /* i went back by one (wrapping at 0) when deleted */
                        break;
                    }
                }
            }
            free(sel);
            free(snapshot);
            if (err < 0) {
                return err;
            }
        }
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

static int apply_json_patch(kz_resmap *ra, json_object *ops, json_object *target)
{
    int err = 0;
    for (size_t i = 0; i < ra->n; i++) {
        if (!selected(ra->v[i], target, &err)) {
            if (err < 0) {
                return err;
            }
            continue;
        }
        int rc = kz_json6902_apply(&ra->v[i]->obj, ops);
        if (rc < 0) {
            char *id = kz_res_id_string(ra->v[i]);
            co_error_wrap("applying JSON patch to %s", id);
            free(id);
            return rc;
        }
    }
    return 0;
}

/* Parses patch text: a list of operations (JSON 6902) or mapping documents (strategic merge). */
static int
parse_patch(json_object **docs, int *is_json, const char *text, size_t len, const char *what)
{
    int rc = kz_decode_stream(docs, text, len, what);
    if (rc < 0) {
        return rc;
    }
    *is_json = json_object_array_length(*docs) == 1 &&
               json_object_is_type(json_object_array_get_idx(*docs, 0), json_type_array);
    if (json_object_array_length(*docs) == 0) {
        json_object_put(*docs);
        return co_error_set(CO_EINVALID, "%s: empty patch", what);
    }
    return 0;
}

static int
load_patch_text(char **text, size_t *len, kz_dir *d, json_object *entry, const char *what)
{
    const char *path = kz_get_str(entry, "path", NULL);
    const char *patch = kz_get_str(entry, "patch", NULL);
    size_t pl = strlen(patch);
    while (pl && strchr(" \t\r\n", patch[pl - 1])) {
        pl--;
    }
    if (!path[0] && !pl) {
        return co_error_set(CO_EINVALID, "%s: must specify one of patch and path", what);
    }
    if (path[0] && pl) {
        return co_error_set(CO_EINVALID, "%s: patch and path can't be set at the same time", what);
    }
    if (path[0]) {
        return kz_dir_load(text, len, d, path);
    }
    *text = co_xstrndup(patch, pl);
    *len = pl;
    return 0;
}

static int t_patches(kz_dir *d, kz_resmap *ra)
{
    json_object *list = co_json__member(kz_dir_kustomization(d), "patches");
    size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        char what[128];
        snprintf(what, sizeof(what), "patches[%zu]", i);
        char *text = NULL;
        size_t len = 0;
        int rc = load_patch_text(&text, &len, d, e, what);
        json_object *docs = NULL;
        int is_json = 0;
        if (rc == 0) {
            rc = parse_patch(&docs, &is_json, text, len, what);
        }
        free(text);
        if (rc < 0) {
            return co_error_wrap("%s", kz_dir_file(d));
        }
        json_object *target = co_json__member(e, "target");
        json_object *opts = co_json__member(e, "options");
        if (is_json) {
            if (!target) {
                rc = co_error_set(CO_EINVALID, "%s: must specify a target for JSON patch", what);
            } else {
                rc = apply_json_patch(ra, json_object_array_get_idx(docs, 0), target);
            }
        } else {
            rc = apply_sm_docs(ra, docs, target,
                               json_object_get_boolean(co_json__member(opts, "allowNameChange")),
                               json_object_get_boolean(co_json__member(opts, "allowKindChange")));
        }
        json_object_put(docs);
        if (rc < 0) {
            return co_error_wrap("%s: %s", kz_dir_file(d), what);
        }
    }
    return 0;
}

static int t_patches_sm(kz_dir *d, kz_resmap *ra)
{
    json_object *list = co_json__member(kz_dir_kustomization(d), "patchesStrategicMerge");
    size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        const char *s = json_object_get_string(e);
        char what[128];
        snprintf(what, sizeof(what), "patchesStrategicMerge[%zu]", i);
        char *text = NULL;
        size_t len = 0;
        int rc = 0;
        if (json_object_is_type(e, json_type_string) && !strchr(s, '\n') && !strchr(s, '{')) {
            rc = kz_dir_load(&text, &len, d, s);
        } else if (json_object_is_type(e, json_type_string)) {
            text = co_xstrdup(s);
            len = strlen(s);
        } else {
            text = co_xstrdup(json_object_to_json_string(e));
            len = strlen(text);
        }
        json_object *docs = NULL;
        int is_json = 0;
        if (rc == 0) {
            rc = parse_patch(&docs, &is_json, text, len, what);
        }
        free(text);
        if (rc == 0 && is_json) {
            rc = co_error_set(CO_EINVALID, "%s is not a strategic merge patch", what);
        }
        if (rc == 0) {
            rc = apply_sm_docs(ra, docs, NULL, 0, 0);
        }
        json_object_put(docs);
        if (rc < 0) {
            return co_error_wrap("%s: %s", kz_dir_file(d), what);
        }
    }
    return 0;
}

static int t_patches_json(kz_dir *d, kz_resmap *ra)
{
    json_object *list = co_json__member(kz_dir_kustomization(d), "patchesJson6902");
    size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        char what[128];
        snprintf(what, sizeof(what), "patchesJson6902[%zu]", i);
        json_object *target = co_json__member(e, "target");
        if (!target) {
            return co_error_set(CO_EINVALID, "%s: %s: must specify a target", kz_dir_file(d), what);
        }
        char *text = NULL;
        size_t len = 0;
        int rc = load_patch_text(&text, &len, d, e, what);
        json_object *docs = NULL;
        int is_json = 0;
        if (rc == 0) {
            rc = parse_patch(&docs, &is_json, text, len, what);
        }
        free(text);
        if (rc == 0 && !is_json) {
            rc = co_error_set(CO_EINVALID, "%s: a JSON 6902 patch must be a list of operations",
                              what);
        }
        if (rc == 0) {
            rc = apply_json_patch(ra, json_object_array_get_idx(docs, 0), target);
        }
        json_object_put(docs);
        if (rc < 0) {
            return co_error_wrap("%s", kz_dir_file(d));
        }
    }
    return 0;
}

/* --- namespace -----------------------------------------------------------------------------------
 */

typedef struct set_ctx {
    const char *value;
    const char *prefix, *suffix;
} set_ctx;

static int set_string_visit(json_object *parent, const char *key, json_object *node, void *ctx)
{
    set_ctx *c = ctx;
    (void)node;
    if (!parent || !key) {
        return 0;
    }
    json_object_object_add(parent, key, json_object_new_string(c->value));
    return 0;
}

static int set_subject_ns(json_object *subj, const char *ns)
{
    if (json_object_is_type(subj, json_type_object)) {
        json_object_object_add(subj, "namespace", json_object_new_string(ns));
    }
    return 0;
}

static int t_namespace(kz_dir *d, kz_resmap *ra)
{
    const char *ns = kz_get_str(kz_dir_kustomization(d), "namespace", NULL);
    if (!ns[0]) {
        return 0;
    }
    set_ctx c = {ns, NULL, NULL};
    for (size_t i = 0; i < ra->n; i++) {
        kz_res *r = ra->v[i];
        if (json_object_object_length(r->obj) == 0) {
            continue;
        }
        kz_res_store_prev_id(r);
        const char *kind = kz_res_kind(r);
        if (!kz_kind_is_cluster_scoped(kind)) {
            kz_res_set_ns(r, ns);
        }
        if (strcmp(kind, "RoleBinding") == 0 || strcmp(kind, "ClusterRoleBinding") == 0) {
            json_object *subjects = co_json__member(r->obj, "subjects");
            size_t n = json_object_is_type(subjects, json_type_array)
                           ? json_object_array_length(subjects)
                           : 0;
            for (size_t s = 0; s < n; s++) {
                json_object *subj = json_object_array_get_idx(subjects, s);
                if (strcmp(kz_get_str(subj, "name", NULL), "default") == 0) {
                    set_subject_ns(subj, ns);
                }
            }
        }
        for (size_t f = 0; f < kz_fs_namespace.n; f++) {
            const kz_fieldspec *fs = &kz_fs_namespace.v[f];
            if (strcmp(fs->path, "metadata/name") == 0 &&
                strcmp(kz_res_api_version(r), "v1") != 0) {
                continue;
            }
            int rc = kz_fs_apply(r->obj, fs, json_type_string, set_string_visit, &c);
            if (rc < 0) {
                return rc;
            }
        }
        for (size_t j = 0; j < ra->n; j++) {
            if (j != i && kz_same_cur_id(ra->v[j], r)) {
                char *id = kz_res_id_string(r);
                co_error_set(CO_EINVALID, "namespace transformation produces ID conflict: %s", id);
                free(id);
                return CO_EINVALID;
            }
        }
    }
    return 0;
}

/* --- prefix / suffix
 * ------------------------------------------------------------------------------ */

static int t_affix(kz_dir *d, kz_resmap *ra, int suffix)
{
    const char *affix =
        kz_get_str(kz_dir_kustomization(d), suffix ? "nameSuffix" : "namePrefix", NULL);
    if (!affix[0]) {
        return 0;
    }
    for (size_t i = 0; i < ra->n; i++) {
        kz_res *r = ra->v[i];
        const char *kind, *name, *ns;
        kz_res_org(r, &kind, &name, &ns);
        char g[256], v[256];
        res_gv(r, g, v);
        if (strcmp(kind, "CustomResourceDefinition") == 0 || strcmp(kind, "Namespace") == 0 ||
            (strcmp(kind, "APIService") == 0 && strcmp(g, "apiregistration.k8s.io") == 0)) {
            continue;
        }
        kz_strv_push(suffix ? &r->suffixes : &r->prefixes, affix);
        kz_res_store_prev_id(r);
        const char *cur = kz_res_name(r);
        char *nn = suffix ? co_xasprintf("%s%s", cur, affix) : co_xasprintf("%s%s", affix, cur);
        kz_res_set_name(r, nn);
        free(nn);
    }
    return 0;
}

/* --- labels and annotations ----------------------------------------------------------------------
 */

typedef struct map_ctx {
    json_object *pairs;
} map_ctx;

static int set_pairs_visit(json_object *parent, const char *key, json_object *node, void *ctx)
{
    map_ctx *c = ctx;
    if (!json_object_is_type(node, json_type_object)) {
        if (node == NULL && parent && key) {
            return 0;
        }
        return co_error_set(CO_EINVALID, "field '%s' is not a mapping", key ? key : "");
    }
    json_object_object_foreach (c->pairs, k, v) {
        const char *s = v ? json_object_get_string(v) : "";
        json_object_object_add(node, k, json_object_new_string(s ? s : ""));
    }
    return 0;
}

static int apply_fsset(kz_resmap *ra, const kz_fieldspec *v, size_t n, json_object *pairs)
{
    map_ctx c = {pairs};
    for (size_t i = 0; i < ra->n; i++) {
        for (size_t f = 0; f < n; f++) {
            int rc = kz_fs_apply(ra->v[i]->obj, &v[f], json_type_object, set_pairs_visit, &c);
            if (rc < 0) {
                return rc;
            }
        }
    }
    return 0;
}

static int parse_fieldspecs(kz_fieldspec **out, size_t *n, json_object *list)
{
    size_t len = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    kz_fieldspec *v = co_xcalloc(len + 1, sizeof(kz_fieldspec));
    for (size_t i = 0; i < len; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        v[i].group = kz_get_str(e, "group", NULL);
        v[i].version = kz_get_str(e, "version", NULL);
        v[i].kind = kz_get_str(e, "kind", NULL);
        v[i].path = kz_get_str(e, "path", NULL);
        v[i].create = json_object_get_boolean(co_json__member(e, "create"));
        if (!v[i].path[0]) {
            free(v);
            return co_error_set(CO_EINVALID, "fields[%zu] has no path", i);
        }
    }
    *out = v;
    *n = len;
    return 0;
}

static int t_labels(kz_dir *d, kz_resmap *ra)
{
    json_object *k = kz_dir_kustomization(d);
    json_object *labels = co_json__member(k, "labels");
    size_t n = json_object_is_type(labels, json_type_array) ? json_object_array_length(labels) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *l = json_object_array_get_idx(labels, i);
        json_object *pairs = co_json__member(l, "pairs");
        if (!json_object_is_type(pairs, json_type_object)) {
            continue;
        }
        kz_fieldspec *extra = NULL;
        size_t nextra = 0;
        int rc = parse_fieldspecs(&extra, &nextra, co_json__member(l, "fields"));
        if (rc < 0) {
            return co_error_wrap("%s: labels[%zu]", kz_dir_file(d), i);
        }
        rc = apply_fsset(ra, extra, nextra, pairs);
        free(extra);
        if (rc == 0 && json_object_get_boolean(co_json__member(l, "includeSelectors"))) {
            rc = apply_fsset(ra, kz_fs_common_labels.v, kz_fs_common_labels.n, pairs);
        } else if (rc == 0) {
            if (json_object_get_boolean(co_json__member(l, "includeTemplates"))) {
                rc = apply_fsset(ra, kz_fs_metadata_labels.v, kz_fs_metadata_labels.n, pairs);
            }
            static const kz_fieldspec md = {NULL, NULL, NULL, "metadata/labels", 1};
            if (rc == 0) {
                rc = apply_fsset(ra, &md, 1, pairs);
            }
        }
        if (rc < 0) {
            return rc;
        }
    }
    json_object *common = co_json__member(k, "commonLabels");
    if (json_object_is_type(common, json_type_object) && json_object_object_length(common)) {
        return apply_fsset(ra, kz_fs_common_labels.v, kz_fs_common_labels.n, common);
    }
    return 0;
}

static int t_annotations(kz_dir *d, kz_resmap *ra)
{
    json_object *common = co_json__member(kz_dir_kustomization(d), "commonAnnotations");
    if (json_object_is_type(common, json_type_object) && json_object_object_length(common)) {
        return apply_fsset(ra, kz_fs_common_annotations.v, kz_fs_common_annotations.n, common);
    }
    return 0;
}

/* --- replicas ----------------------------------------------------------------------------------
 */

typedef struct replica_ctx {
    json_object *count;
} replica_ctx;

static int set_replicas_visit(json_object *parent, const char *key, json_object *node, void *ctx)
{
    replica_ctx *c = ctx;
    (void)node;
    if (parent && key) {
        json_object_object_add(parent, key, json_object_get(c->count));
    }
    return 0;
}

static int t_replicas(kz_dir *d, kz_resmap *ra)
{
    json_object *list = co_json__member(kz_dir_kustomization(d), "replicas");
    size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        const char *name = kz_get_str(e, "name", NULL);
        json_object *count = co_json__member(e, "count");
        replica_ctx c = {count ? count : json_object_new_int(0)};
        int found = 0;
        for (size_t f = 0; f < kz_fs_replicas.n; f++) {
            const kz_fieldspec *fs = &kz_fs_replicas.v[f];
            for (size_t r = 0; r < ra->n; r++) {
                kz_res *res = ra->v[r];
                char g[256], v[256];
                res_gv(res, g, v);
                int match =
                    strcmp(kz_res_name(res), name) == 0 &&
                    kz_gvk_selected(g, v, kz_res_kind(res), fs->group, fs->version, fs->kind);
                for (size_t p = 0; !match && p < res->prev_names.n; p++) {
                    match = strcmp(res->prev_names.v[p], name) == 0 &&
                            kz_gvk_selected(g, v, res->prev_kinds.v[p], fs->group, fs->version,
                                            fs->kind);
                }
                if (!match) {
                    continue;
                }
                found = 1;
                int rc = kz_fs_apply(res->obj, fs, json_type_object, set_replicas_visit, &c);
                if (rc < 0) {
                    if (!count) {
                        json_object_put(c.count);
                    }
                    return rc;
                }
            }
        }
        if (!count) {
            json_object_put(c.count);
        }
        if (!found) {
            return co_error_set(CO_EINVALID,
                                "%s: resource with name %s does not match a config with the "
                                "following GVK [Deployment.[noVer].[noGrp] "
                                "ReplicationController.[noVer].[noGrp] ReplicaSet.[noVer].[noGrp] "
                                "StatefulSet.[noVer].[noGrp]]",
                                kz_dir_file(d), name);
        }
    }
    return 0;
}

/* --- images ------------------------------------------------------------------------------------
 */

typedef struct image_ctx {
    json_object *img;
    int err;
} image_ctx;

static void split_image(const char *s, char **name, char **tag, char **digest)
{
    const char *slash = strchr(s, '/');
    size_t off = slash && slash != s ? (size_t)(slash - s) : 0;
    const char *search = s + off;
    const char *at = strchr(search, '@');
    const char *colon = strchr(search, ':');
    *tag = co_xstrdup("");
    *digest = co_xstrdup("");
    if (!at && !colon) {
        *name = co_xstrdup(s);
        return;
    }
    if (at && (!colon || at < colon)) {
        *name = co_xstrndup(s, (size_t)(at - s));
        free(*digest);
        *digest = co_xstrdup(at + 1);
        return;
    }
    *name = co_xstrndup(s, (size_t)(colon - s));
    free(*tag);
    if (at) {
        *tag = co_xstrndup(colon + 1, (size_t)(at - colon - 1));
        free(*digest);
        *digest = co_xstrdup(at + 1);
    } else {
        *tag = co_xstrdup(colon + 1);
    }
}

static int image_matches(const char *value, const char *name, int *err)
{
    char *re = co_xasprintf("%s(:[a-zA-Z0-9_.{}-]*)?(@sha256:[a-zA-Z0-9_.{}-]*)?", name);
    int m = regex_full_match(re, value, err);
    free(re);
    return m;
}

static int update_image(json_object *parent, const char *key, json_object *node, image_ctx *c)
{
    if (!json_object_is_type(node, json_type_string)) {
        return 0;
    }
    const char *value = json_object_get_string(node);
    if (!image_matches(value, kz_get_str(c->img, "name", NULL), &c->err)) {
        return c->err;
    }
    char *name, *tag, *digest;
    split_image(value, &name, &tag, &digest);
    const char *new_name = kz_get_str(c->img, "newName", NULL);
    const char *new_tag = kz_get_str(c->img, "newTag", NULL);
    const char *new_digest = kz_get_str(c->img, "digest", NULL);
    const char *tag_suffix = kz_get_str(c->img, "tagSuffix", NULL);
    json_object *nt = co_json__member(c->img, "newTag");
    char numbuf[64];
    if (nt && !json_object_is_type(nt, json_type_string)) {
        snprintf(numbuf, sizeof(numbuf), "%s", json_object_to_json_string(nt));
        new_tag = numbuf;
    }
    if (new_name[0]) {
        free(name);
        name = co_xstrdup(new_name);
    }
    if (new_tag[0] && new_digest[0]) {
        free(tag);
        free(digest);
        tag = co_xstrdup(new_tag);
        digest = co_xstrdup(new_digest);
    } else if (new_tag[0]) {
        free(tag);
        free(digest);
        tag = co_xstrdup(new_tag);
        digest = co_xstrdup("");
    } else if (new_digest[0]) {
        free(tag);
        free(digest);
        tag = co_xstrdup("");
        digest = co_xstrdup(new_digest);
    } else if (tag_suffix[0]) {
        char *t = co_xasprintf("%s%s", tag, tag_suffix);
        free(tag);
        free(digest);
        tag = t;
        digest = co_xstrdup("");
    }
    char *res =
        co_xasprintf("%s%s%s%s%s", name, tag[0] ? ":" : "", tag, digest[0] ? "@" : "", digest);
    json_object_object_add(parent, key, json_object_new_string(res));
    free(res);
    free(name);
    free(tag);
    free(digest);
    return 0;
}

/* kustomize's legacy image filter: every containers/initContainers list at any depth. */
static int legacy_images(json_object *node, image_ctx *c)
{
    if (json_object_is_type(node, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(node); i++) {
            int rc = legacy_images(json_object_array_get_idx(node, i), c);
            if (rc < 0) {
                return rc;
            }
        }
        return 0;
    }
    if (!json_object_is_type(node, json_type_object)) {
        return 0;
    }
    json_object_object_foreach (node, k, v) {
        int rc = legacy_images(v, c);
        if (rc < 0) {
            return rc;
        }
        if ((strcmp(k, "containers") == 0 || strcmp(k, "initContainers") == 0) &&
            json_object_is_type(v, json_type_array)) {
            for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *ctr = json_object_array_get_idx(v, i);
                json_object *img = co_json__member(ctr, "image");
                if (img && (rc = update_image(ctr, "image", img, c)) < 0) {
                    return rc;
                }
            }
        }
    }
    return 0;
}

static int image_visit(json_object *parent, const char *key, json_object *node, void *ctx)
{
    if (!parent || !key) {
        return 0;
    }
    return update_image(parent, key, node, ctx);
}

static int t_images(kz_dir *d, kz_resmap *ra)
{
    json_object *k = kz_dir_kustomization(d);
    json_object *lists[2] = {co_json__member(k, "images"), co_json__member(k, "imageTags")};
    for (int l = 0; l < 2; l++) {
        size_t n =
            json_object_is_type(lists[l], json_type_array) ? json_object_array_length(lists[l]) : 0;
        for (size_t i = 0; i < n; i++) {
            image_ctx c = {json_object_array_get_idx(lists[l], i), 0};
            for (size_t r = 0; r < ra->n; r++) {
                json_object *obj = ra->v[r]->obj;
                int rc = 0;
                if (strcmp(kz_res_kind(ra->v[r]), "CustomResourceDefinition") != 0) {
                    rc = legacy_images(obj, &c);
                }
                for (size_t f = 0; rc == 0 && f < kz_fs_images.n; f++) {
                    /* image field specs never create: an absent image stays absent */
                    kz_fieldspec fs = kz_fs_images.v[f];
                    fs.create = 0;
                    rc = kz_fs_apply(obj, &fs, json_type_string, image_visit, &c);
                }
                if (rc < 0) {
                    return co_error_wrap("%s: images[%zu]", kz_dir_file(d), i);
                }
            }
        }
    }
    return 0;
}

int kz_transform_all(kz_dir *d, kz_resmap *ra)
{
    int rc = co_budget_check();
    if (rc == 0) {
        rc = t_patches_sm(d, ra);
    }
    if (rc == 0) {
        rc = t_patches(d, ra);
    }
    if (rc == 0) {
        rc = t_namespace(d, ra);
    }
    if (rc == 0) {
        rc = t_affix(d, ra, 0);
    }
    if (rc == 0) {
        rc = t_affix(d, ra, 1);
    }
    if (rc == 0) {
        rc = t_labels(d, ra);
    }
    if (rc == 0) {
        rc = t_annotations(d, ra);
    }
    if (rc == 0) {
        rc = t_patches_json(d, ra);
    }
    if (rc == 0) {
        rc = t_replicas(d, ra);
    }
    if (rc == 0) {
        rc = t_images(d, ra);
    }
    if (rc == 0) {
        rc = kz_replacements(d, ra);
    }
    return rc;
}

/* --- name references -----------------------------------------------------------------------------
 */

typedef struct ref_ctx {
    kz_resmap *ra;
    kz_res *referrer;
    const kz_nameref *target;
    const kz_fieldspec *spec;
    char *cand; /* candidates that could be referenced by the referrer */
} ref_ctx;

static int prev_name_matches(const kz_res *r, const char *name)
{
    for (size_t i = 0; i < r->prev_names.n; i++) {
        if (strcmp(r->prev_names.v[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

static int prev_gvk_selected(const kz_res *r, const char *sg, const char *sv, const char *sk)
{
    char g[256], v[256];
    res_gv(r, g, v);
    for (size_t i = 0; i < r->prev_kinds.n; i++) {
        if (kz_gvk_selected(g, v, r->prev_kinds.v[i], sg, sv, sk)) {
            return 1;
        }
    }
    return 0;
}

static int same_ending(const kz_strv *a, const kz_strv *b)
{
    const kz_strv *s = a->n <= b->n ? a : b, *l = a->n <= b->n ? b : a;
    size_t diff = l->n - s->n;
    if (s->n == 0) {
        return diff == 0;
    }
    for (size_t i = s->n; i-- > 0;) {
        if (strcmp(l->v[i + diff], s->v[i]) != 0) {
            return 0;
        }
    }
    return 1;
}

static int affixes_equal(const kz_res *r, const kz_res *o, int allow_empty)
{
    if (allow_empty) {
        int pe = r->prefixes.n == 0 || o->prefixes.n == 0;
        int se = r->suffixes.n == 0 || o->suffixes.n == 0;
        return (pe || same_ending(&r->prefixes, &o->prefixes)) &&
               (se || same_ending(&r->suffixes, &o->suffixes));
    }
    return same_ending(&r->prefixes, &o->prefixes) && same_ending(&r->suffixes, &o->suffixes);
}

static int ns_equal_cur(const kz_res *a, const kz_res *b)
{
    return strcmp(kz_effective_ns(kz_res_kind(a), kz_res_ns(a)),
                  kz_effective_ns(kz_res_kind(b), kz_res_ns(b))) == 0;
}

/* kustomize's selectReferral: the one resource the name @p old refers to, or NULL. */
static int
select_referral(kz_res **out, ref_ctx *c, const char *old, const char *ns_filter, int with_ns)
{
    kz_resmap *ra = c->ra;
    size_t n = ra->n;
    kz_res **cand = co_xcalloc(n + 1, sizeof(kz_res *));
    size_t nc = 0;
    const kz_res *ref = c->referrer;
    int role_ref = strlen(c->spec->path) >= 12 &&
                   strcmp(c->spec->path + strlen(c->spec->path) - 12, "roleRef/name") == 0;
    json_object *roleref = co_json__member(ref->obj, "roleRef");
    const char *rr_group = kz_get_str(roleref, "apiGroup", NULL);
    const char *rr_kind = kz_get_str(roleref, "kind", NULL);
    int have_rr =
        role_ref && co_json__member(roleref, "apiGroup") && co_json__member(roleref, "kind");
    int ref_cluster = kz_kind_is_cluster_scoped(kz_res_kind(ref));
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        kz_res *r = ra->v[i];
        if (!c->cand[i]) {
            continue;
        }
        /* every name field of every resource looks at every resource, as kustomize does */
        if ((rc = co_budget_tick()) < 0) {
            free(cand);
            return rc;
        }
        if (ns_filter) {
            const char *ok, *on, *ons;
            kz_res_org(r, &ok, &on, &ons);
            if (strcmp(ons, ns_filter) != 0) {
                continue;
            }
        }
        if (!prev_name_matches(r, old) ||
            !prev_gvk_selected(r, c->target->group, c->target->version, c->target->kind)) {
            continue;
        }
        if (have_rr && !prev_gvk_selected(r, rr_group, NULL, rr_kind)) {
            continue;
        }
        if (!ref_cluster && !kz_kind_is_cluster_scoped(kz_res_kind(r)) &&
            strcmp(kz_res_kind(r), "ServiceAccount") != 0 && !ns_equal_cur(ref, r)) {
            continue;
        }
        cand[nc++] = r;
    }
    *out = NULL;
    if (nc == 1) {
        *out = cand[0];
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < nc; i++) {
        if (affixes_equal(cand[i], ref, 1)) {
            cand[k++] = cand[i];
        }
    }
    nc = k;
    if (nc > 1) {
        k = 0;
        for (size_t i = 0; i < nc; i++) {
            if (affixes_equal(cand[i], ref, 0)) {
                cand[k++] = cand[i];
            }
        }
        nc = k;
    }
    if (nc == 1) {
        *out = cand[0];
        goto done;
    }
    if (nc == 0) {
        goto done;
    }
    int same = 1;
    for (size_t i = 1; i < nc; i++) {
        same &= strcmp(kz_res_name(cand[i]), kz_res_name(cand[0])) == 0;
        if (with_ns) {
            same &= strcmp(kz_res_ns(cand[i]), kz_res_ns(cand[0])) == 0;
        }
    }
    if (same) {
        *out = cand[0];
        goto done;
    }
    {
        char *a = kz_res_id_string(cand[0]), *b = kz_res_id_string(cand[1]);
        rc = co_error_set(CO_EINVALID, "found multiple possible referrals: %s, %s", a, b);
        free(a);
        free(b);
    }
done:
    free(cand);
    return rc;
}

static int
set_ref_scalar(json_object *holder, const char *key, size_t idx, json_object *node, ref_ctx *c)
{
    kz_res *referral = NULL;
    int rc = select_referral(&referral, c, json_object_get_string(node), NULL, 0);
    if (rc < 0 || !referral || strcmp(kz_res_name(referral), json_object_get_string(node)) == 0) {
        return rc;
    }
    json_object *nv = json_object_new_string(kz_res_name(referral));
    if (key) {
        json_object_object_add(holder, key, nv);
    } else {
        json_object_array_put_idx(holder, idx, nv);
    }
    return 0;
}

static int set_ref_mapping(json_object *node, ref_ctx *c)
{
    json_object *name = co_json__member(node, "name");
    if (!name) {
        return co_error_set(CO_EINVALID, "path config error; no 'name' field in node");
    }
    json_object *nsn = co_json__member(node, "namespace");
    const char *nsf = NULL;
    if (nsn) {
        nsf = json_object_get_string(nsn);
        /* candidates grouped by original namespace, else by current namespace */
        int any = 0;
        for (size_t i = 0; i < c->ra->n && !any; i++) {
            const char *ok, *on, *ons;
            kz_res_org(c->ra->v[i], &ok, &on, &ons);
            any = c->cand[i] && strcmp(ons, nsf) == 0;
        }
        if (!any) {
            char *saved = c->cand;
            char *narrowed = co_xcalloc(c->ra->n + 1, 1);
            for (size_t i = 0; i < c->ra->n; i++) {
                narrowed[i] = (char)(saved[i] && strcmp(kz_res_ns(c->ra->v[i]), nsf) == 0);
            }
            c->cand = narrowed;
            kz_res *referral = NULL;
            int rc = select_referral(&referral, c, json_object_get_string(name), NULL, 1);
            c->cand = saved;
            free(narrowed);
            if (rc < 0 || !referral) {
                return rc;
            }
            json_object_object_add(node, "name", json_object_new_string(kz_res_name(referral)));
            if (kz_res_ns(referral)[0]) {
                json_object_object_add(node, "namespace",
                                       json_object_new_string(kz_res_ns(referral)));
            }
            return 0;
        }
    }
    kz_res *referral = NULL;
    int rc = select_referral(&referral, c, json_object_get_string(name), nsf, 1);
    if (rc < 0 || !referral) {
        return rc;
    }
    if (strcmp(kz_res_name(referral), json_object_get_string(name)) == 0 &&
        !kz_res_ns(referral)[0]) {
        return 0;
    }
    json_object_object_add(node, "name", json_object_new_string(kz_res_name(referral)));
    if (kz_res_ns(referral)[0]) {
        json_object_object_add(node, "namespace", json_object_new_string(kz_res_ns(referral)));
    }
    return 0;
}

static int ref_visit(json_object *parent, const char *key, json_object *node, void *ctx)
{
    ref_ctx *c = ctx;
    if (node == NULL) {
        return 0;
    }
    if (json_object_is_type(node, json_type_string)) {
        return set_ref_scalar(parent, key, 0, node, c);
    }
    if (json_object_is_type(node, json_type_object)) {
        return set_ref_mapping(node, c);
    }
    if (json_object_is_type(node, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(node); i++) {
            json_object *e = json_object_array_get_idx(node, i);
            int rc = 0;
            if (json_object_is_type(e, json_type_string)) {
                rc = set_ref_scalar(node, NULL, i, e, c);
            } else if (json_object_is_type(e, json_type_object)) {
                rc = set_ref_mapping(e, c);
            }
            if (rc < 0) {
                return rc;
            }
        }
        return 0;
    }
    return co_error_set(CO_EINVALID, "node must be a scalar, sequence or map");
}

/* Resources a referrer may point at: same namespace, cluster-scoped, or (RoleBinding) the
 * namespaces of its ServiceAccount subjects. */
static void candidates_for(char *cand, kz_resmap *ra, const kz_res *ref)
{
    int ref_cluster = kz_kind_is_cluster_scoped(kz_res_kind(ref));
    json_object *subjects = NULL;
    if (strcmp(kz_res_kind(ref), "RoleBinding") == 0) {
        subjects = co_json__member(ref->obj, "subjects");
    }
    for (size_t i = 0; i < ra->n; i++) {
        kz_res *r = ra->v[i];
        cand[i] = (char)(ref_cluster || kz_kind_is_cluster_scoped(kz_res_kind(r)) ||
                         ns_equal_cur(ref, r));
        for (size_t s = 0; !cand[i] && json_object_is_type(subjects, json_type_array) &&
                           s < json_object_array_length(subjects);
             s++) {
            json_object *subj = json_object_array_get_idx(subjects, s);
            if (strcmp(kz_get_str(subj, "kind", NULL), "ServiceAccount") == 0 &&
                strcmp(kz_get_str(subj, "namespace", NULL), kz_res_ns(r)) == 0) {
                cand[i] = 1;
            }
        }
    }
}

int kz_fix_name_references(kz_resmap *ra)
{
    char *cand = co_xcalloc(ra->n + 1, 1);
    int rc = 0;
    for (size_t r = 0; r < ra->n && rc == 0; r++) {
        kz_res *ref = ra->v[r];
        const char *ok, *on, *ons;
        kz_res_org(ref, &ok, &on, &ons);
        char g[256], v[256];
        res_gv(ref, g, v);
        int computed = 0;
        for (size_t t = 0; t < kz_nnamerefs && rc == 0; t++) {
            const kz_nameref *nr = &kz_namerefs[t];
            for (size_t f = 0; f < nr->referrers.n && rc == 0; f++) {
                const kz_fieldspec *fs = &nr->referrers.v[f];
                if (!kz_gvk_selected(g, v, ok, fs->group, fs->version, fs->kind)) {
                    continue;
                }
                if (!computed) {
                    candidates_for(cand, ra, ref);
                    computed = 1;
                }
                ref_ctx c = {ra, ref, nr, fs, cand};
                kz_fieldspec nocreate = *fs;
                nocreate.create = 0;
                rc = kz_fs_apply(ref->obj, &nocreate, json_type_string, ref_visit, &c);
            }
        }
    }
    free(cand);
    /* kustomize removes its build annotations at the end, and with them an emptied map */
    for (size_t i = 0; i < ra->n; i++) {
        kz_res *r = ra->v[i];
        json_object *md = co_json__member(r->obj, "metadata");
        json_object *ann = co_json__member(md, "annotations");
        if ((r->prev_names.n || r->prefixes.n || r->suffixes.n || r->generated) &&
            json_object_is_type(ann, json_type_object) && json_object_object_length(ann) == 0) {
            json_object_object_del(md, "annotations");
        }
    }
    return rc;
}

/* --- output order -------------------------------------------------------------------------------
 */

static const char *const order_first[] = {"Namespace",
                                          "ResourceQuota",
                                          "StorageClass",
                                          "CustomResourceDefinition",
                                          "ServiceAccount",
                                          "PodSecurityPolicy",
                                          "Role",
                                          "ClusterRole",
                                          "RoleBinding",
                                          "ClusterRoleBinding",
                                          "ConfigMap",
                                          "Secret",
                                          "Endpoints",
                                          "Service",
                                          "LimitRange",
                                          "PriorityClass",
                                          "PersistentVolume",
                                          "PersistentVolumeClaim",
                                          "Deployment",
                                          "StatefulSet",
                                          "CronJob",
                                          "PodDisruptionBudget"};
static const char *const order_last[] = {"MutatingWebhookConfiguration",
                                         "ValidatingWebhookConfiguration"};

typedef struct sort_cfg {
    const char *const *first;
    size_t nfirst;
    const char *const *last;
    size_t nlast;
} sort_cfg;

static int type_order(const sort_cfg *s, const char *kind)
{
    for (size_t i = 0; i < s->nfirst; i++) {
        if (strcmp(kind, s->first[i]) == 0) {
            return -(int)s->nfirst + (int)i;
        }
    }
    for (size_t i = 0; i < s->nlast; i++) {
        if (strcmp(kind, s->last[i]) == 0) {
            return 1 + (int)i;
        }
    }
    return 0;
}

static char *gvk_sort_string(const char *g, const char *v, const char *k)
{
    return co_xasprintf("%s_%s_%s", g[0] ? g : "~G", v[0] ? v : "~V", k[0] ? k : "~K");
}

/* What the legacy order compares of a resource, computed once per resource: the comparisons
 * of a sort would otherwise format the same strings again each time. */
typedef struct sort_key {
    kz_res *r;
    char g[256], v[256];
    const char *k;
    int type;
    char *gvk; /* gvk_sort_string() */
    char *id;  /* kind.version.group|namespace|name */
} sort_key;

static void sort_key_init(sort_key *key, const sort_cfg *s, kz_res *r)
{
    key->r = r;
    res_gv(r, key->g, key->v);
    key->k = kz_res_kind(r);
    key->type = type_order(s, key->k);
    key->gvk = gvk_sort_string(key->g, key->v, key->k);
    key->id = co_xasprintf("%s.%s.%s|%s|%s", key->k[0] ? key->k : "[noKind]",
                           key->v[0] ? key->v : "[noVer]", key->g[0] ? key->g : "[noGrp]",
                           kz_res_ns(r)[0] ? kz_res_ns(r) : "~X",
                           kz_res_name(r)[0] ? kz_res_name(r) : "~N");
}

static int legacy_less(const sort_key *a, const sort_key *b)
{
    if (strcmp(a->g, b->g) != 0 || strcmp(a->v, b->v) != 0 || strcmp(a->k, b->k) != 0) {
        if (a->type != b->type) {
            return a->type < b->type;
        }
        int c = strcmp(a->gvk, b->gvk);
        if (strcmp(a->k, "Namespace") == 0 && strcmp(b->k, "Namespace") == 0 &&
            (!a->g[0] || !b->g[0])) {
            c = -c;
        }
        return c < 0;
    }
    return strcmp(a->id, b->id) < 0;
}

/* A stable merge sort of @p v by legacy_less(): equal resources keep their order, as they did
 * with the insertion sort this replaces (which took seconds for a few thousand resources). */
static void legacy_sort(sort_key **v, size_t n, sort_key **tmp)
{
    if (n < 2) {
        return;
    }
    size_t h = n / 2;
    legacy_sort(v, h, tmp);
    legacy_sort(v + h, n - h, tmp);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        /* the right one goes first only when strictly less */
        tmp[k++] = legacy_less(v[j], v[i]) ? v[j++] : v[i++];
    }
    while (i < h) {
        tmp[k++] = v[i++];
    }
    while (j < n) {
        tmp[k++] = v[j++];
    }
    memcpy(v, tmp, n * sizeof(sort_key *));
}

static int string_array(const char ***out, size_t *n, json_object *list)
{
    size_t len = json_object_array_length(list);
    const char **v = co_xcalloc(len + 1, sizeof(char *));
    for (size_t i = 0; i < len; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        if (!json_object_is_type(e, json_type_string)) {
            free(v);
            return co_error_set(CO_EINVALID, "sortOptions: kinds must be strings");
        }
        v[i] = json_object_get_string(e);
    }
    *out = v;
    *n = len;
    return 0;
}

int kz_sort(kz_resmap *ra, json_object *so, const char *file)
{
    sort_cfg s = {order_first, CO_ARRAY_SIZE(order_first), order_last, CO_ARRAY_SIZE(order_last)};
    const char **first = NULL, **last = NULL;
    if (so) {
        const char *order = kz_get_str(so, "order", NULL);
        json_object *lso = co_json__member(so, "legacySortOptions");
        if (strcmp(order, "fifo") == 0) {
            if (lso) {
                return co_error_set(CO_EINVALID,
                                    "%s: the field 'sortOptions.legacySortOptions' is set but the "
                                    "selected sort order is 'fifo', not 'legacy'",
                                    file);
            }
            return 0;
        }
        if (strcmp(order, "legacy") != 0) {
            return co_error_set(CO_EINVALID,
                                "%s: the field 'sortOptions.order' must be one of [fifo, legacy]",
                                file);
        }
        if (lso) {
            json_object *f = co_json__member(lso, "orderFirst"),
                        *l = co_json__member(lso, "orderLast");
            int rc = 0;
            s.nfirst = s.nlast = 0;
            if (json_object_is_type(f, json_type_array)) {
                rc = string_array(&first, &s.nfirst, f);
                s.first = first;
            }
            if (rc == 0 && json_object_is_type(l, json_type_array)) {
                rc = string_array(&last, &s.nlast, l);
                s.last = last;
            }
            if (rc < 0) {
                free(first);
                return rc;
            }
        }
    }
    size_t n = ra->n;
    sort_key *keys = co_xcalloc(n + 1, sizeof(*keys));
    sort_key **order = co_xcalloc(n + 1, sizeof(sort_key *));
    sort_key **tmp = co_xcalloc(n + 1, sizeof(sort_key *));
    for (size_t i = 0; i < n; i++) {
        sort_key_init(&keys[i], &s, ra->v[i]);
        order[i] = &keys[i];
    }
    legacy_sort(order, n, tmp);
    for (size_t i = 0; i < n; i++) {
        ra->v[i] = order[i]->r;
        free(keys[i].gvk);
        free(keys[i].id);
    }
    free(tmp);
    free(order);
    free(keys);
    free(first);
    free(last);
    return 0;
}
