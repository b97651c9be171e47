/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Values as Helm computes them: the per-render dependency tree (aliases, tags, conditions,
 * import-values: chartutil's ProcessDependenciesWithMerge) and coalescing (CoalesceValues /
 * MergeValues). These rules are full of corner cases users rely on (a null deletes a default,
 * globals are copied into every subchart section, a subchart's section must be a map, imported
 * values rank below the parent's own), so the code follows Helm's algorithm step by step,
 * including where Go shares maps between trees: a json-c reference taken with
 * json_object_get() stands for a Go map value copied by reference.
 */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/error.h"
#include "co/json/json.h"
#include "co/util/semver.h"
#include "helm_int.h"

static bool istable(struct json_object *v)
{
    return v && json_object_is_type(v, json_type_object);
}

/* Whether @p key exists in @p obj; its value (possibly NULL for null) in *val. */
static bool has(struct json_object *obj, const char *key, struct json_object **val)
{
    struct json_object *v = NULL;
    bool ok = obj && json_object_object_get_ex(obj, key, &v);
    if (val) {
        *val = ok ? v : NULL;
    }
    return ok;
}

static void put(struct json_object *obj, const char *key, struct json_object *val_ref)
{
    json_object_object_add(obj, key, val_ref);
}

/* ------------------------------------------------------------------------------------------ */
/* Nodes                                                                                      */
/* ------------------------------------------------------------------------------------------ */

helm_node *co_helm__node_new(const co_helm_chart *c, helm_node *parent)
{
    helm_node *n = co_xcalloc(1, sizeof(*n));
    n->chart = c;
    n->parent = parent;
    co_helm__meta_copy(&n->meta, &c->meta);
    n->values = json_object_get(c->values);
    n->ndeps = c->ndeps;
    n->deps = co_xcalloc(c->ndeps + 1, sizeof(helm_node *));
    for (size_t i = 0; i < c->ndeps; i++) {
        n->deps[i] = co_helm__node_new(c->deps[i], n);
    }
    return n;
}

/* A copy of a node and its subtree (Go's shallow copy of a chart plus its own metadata). */
static helm_node *node_clone(const helm_node *src, helm_node *parent)
{
    helm_node *n = co_xcalloc(1, sizeof(*n));
    n->chart = src->chart;
    n->parent = parent;
    co_helm__meta_copy(&n->meta, &src->meta);
    n->values = json_object_get(src->values);
    n->ndeps = src->ndeps;
    n->deps = co_xcalloc(src->ndeps + 1, sizeof(helm_node *));
    for (size_t i = 0; i < src->ndeps; i++) {
        n->deps[i] = node_clone(src->deps[i], n);
    }
    return n;
}

void co_helm__node_free(helm_node *n)
{
    if (!n) {
        return;
    }
    co_helm__meta_dispose(&n->meta);
    json_object_put(n->values);
    for (size_t i = 0; i < n->ndeps; i++) {
        co_helm__node_free(n->deps[i]);
    }
    free(n->deps);
    free(n);
}

char *co_helm__full_path(const helm_node *n)
{
    if (!n->parent) {
        return co_xstrdup(n->meta.name);
    }
    char *p = co_helm__full_path(n->parent);
    char *r = co_xasprintf("%s/charts/%s", p, n->meta.name);
    free(p);
    return r;
}

bool co_helm__compatible_range(const char *constraint, const char *version)
{
    co_semver v;
    if (!version || co_semver_parse(&v, version) < 0) {
        co_error_clear();
        return false;
    }
    co_semver_constraints *c = NULL;
    if (!constraint || co_semver_constraints_parse(&c, constraint) < 0) {
        co_error_clear();
        co_semver_dispose(&v);
        return false;
    }
    bool ok = co_semver_constraints_check(c, &v);
    co_semver_constraints_free(c);
    co_semver_dispose(&v);
    return ok;
}

/* ------------------------------------------------------------------------------------------ */
/* Coalescing                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* Most objects holds() visits; values shared by reference form a graph, not a tree. */
#define HOLDS_MAX 65536

/* Whether @p target is @p root or inside it. A walk that visits more than *@p left objects
 * answers yes, the safe answer for its caller. */
static bool holds(struct json_object *root, const struct json_object *target, size_t *left)
{
    if (root == target || *left == 0) {
        return true;
    }
    (*left)--;
    if (json_object_is_type(root, json_type_object)) {
        json_object_object_foreach (root, key, val) {
            (void)key;
            if (val && holds(val, target, left)) {
                return true;
            }
        }
    } else if (json_object_is_type(root, json_type_array)) {
        size_t n = json_object_array_length(root);
        for (size_t i = 0; i < n; i++) {
            struct json_object *v = json_object_array_get_idx(root, i);
            if (v && holds(v, target, left)) {
                return true;
            }
        }
    }
    return false;
}

/* coalesceTablesFullKey: merges @p src into @p dst, @p dst winning. Returns the result
 * (a borrowed @p dst, or @p src when @p dst is NULL). Tables are shared by reference, as
 * Helm's maps are: import-values merge into tables of the subchart's values, and Helm's results
 * show those changes. A table that holds @p dst is put as a copy: two imports of the same table
 * under one parent (deep.section, then deep) would otherwise put a table inside itself, which
 * json-c's counted references never free and every later walk would follow without end (Helm
 * builds that cycle). */
static struct json_object *
coalesce_tables(struct json_object *dst, struct json_object *src, bool merge)
{
    if (!src) {
        return dst;
    }
    if (!dst) {
        return src;
    }
    if (dst == src) {
        return dst;
    }
    json_object_object_foreach (src, key, val) {
        struct json_object *dv;
        bool ok = has(dst, key, &dv);
        if (ok && !merge && !dv) {
            json_object_object_del(dst, key);
        } else if (!ok) {
            size_t left = HOLDS_MAX;
            put(dst, key,
                istable(val) && holds(val, dst, &left) ? co_json_copy(val) : json_object_get(val));
        } else if (istable(val)) {
            if (istable(dv)) {
                coalesce_tables(dv, val, merge);
            }
        }
    }
    return dst;
}

static bool child_chart_merge_true(const helm_node *n, const char *key, bool merge)
{
    for (size_t i = 0; i < n->ndeps; i++) {
        if (n->deps[i]->meta.name && strcmp(n->deps[i]->meta.name, key) == 0) {
            return true;
        }
    }
    return merge;
}

/* coalesceValues: the chart's own values under @p v, @p v winning. */
static void coalesce_values(helm_node *n, struct json_object *v, bool merge)
{
    struct json_object *vc = co_json_copy(n->values);
    if (istable(vc)) {
        json_object_object_foreach (vc, key, val) {
            struct json_object *value;
            if (has(v, key, &value)) {
                if (!value && !merge) {
                    json_object_object_del(v, key);
                } else if (istable(value) && istable(val)) {
                    coalesce_tables(value, val, child_chart_merge_true(n, key, merge));
                }
            } else {
                put(v, key, json_object_get(val));
            }
        }
    }
    json_object_put(vc);
}

/* coalesceGlobals: copies the globals of @p src into those of @p dest. */
static void coalesce_globals(struct json_object *dest, struct json_object *src)
{
    struct json_object *dg;
    struct json_object *sg;
    struct json_object *own_dg = NULL;
    struct json_object *own_sg = NULL;
    if (!has(dest, "global", &dg)) {
        dg = own_dg = json_object_new_object();
    } else if (!istable(dg)) {
        return;
    }
    if (!has(src, "global", &sg)) {
        sg = own_sg = json_object_new_object();
    } else if (!istable(sg)) {
        json_object_put(own_dg);
        return;
    }
    json_object_object_foreach (sg, key, val) {
        struct json_object *dv;
        bool dok = has(dg, key, &dv);
        if (istable(val)) {
            struct json_object *vv = json_object_new_object();
            json_object_object_foreach (val, k2, v2) {
                put(vv, k2, json_object_get(v2));
            }
            if (!dok) {
                put(dg, key, vv);
            } else if (!istable(dv)) {
                json_object_put(vv); /* Helm warns: cannot merge map onto non-map */
            } else {
                coalesce_tables(vv, dv, true);
                put(dg, key, vv);
            }
        } else if (dok && istable(dv)) {
            continue; /* Helm warns: key is a table */
        } else {
            put(dg, key, json_object_get(val));
        }
    }
    if (own_dg) {
        put(dest, "global", own_dg);
    }
    json_object_put(own_sg);
}

static int coalesce_rec(helm_node *n, struct json_object *dest, bool merge);

/* coalesceDeps: each subchart's section of @p dest, with the globals, over its defaults. */
static int coalesce_deps(helm_node *n, struct json_object *dest, bool merge)
{
    for (size_t i = 0; i < n->ndeps; i++) {
        helm_node *sub = n->deps[i];
        const char *name = sub->meta.name;
        struct json_object *c;
        if (!has(dest, name, &c)) {
            put(dest, name, json_object_new_object());
        } else if (!istable(c)) {
            return co_error_set(CO_EINVALID,
                                "values: type mismatch on %s: expected a map for the subchart's "
                                "values, got %s",
                                name, co_json_type_name(c));
        }
        struct json_object *dv = NULL;
        (void)has(dest, name, &dv);
        coalesce_globals(dv, dest);
        int rc = coalesce_rec(sub, dv, merge);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

static int coalesce_rec(helm_node *n, struct json_object *dest, bool merge)
{
    coalesce_values(n, dest, merge);
    return coalesce_deps(n, dest, merge);
}

int co_helm__coalesce(struct json_object **out,
                      helm_node *n,
                      const struct json_object *vals,
                      bool merge)
{
    struct json_object *v = vals ? co_json_copy(vals) : NULL;
    if (!v) {
        v = json_object_new_object();
    }
    int rc = coalesce_rec(n, v, merge);
    if (rc < 0) {
        json_object_put(v);
        return rc;
    }
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Paths into values                                                                          */
/* ------------------------------------------------------------------------------------------ */

/* Values.Table: the map at the dotted path @p name (borrowed), or NULL. */
static struct json_object *table(struct json_object *v, const char *name)
{
    char *tmp = co_xstrdup(name);
    struct json_object *cur = v;
    char *save = NULL;
    char *p = tmp;
    for (;;) {
        char *dot = strchr(p, '.');
        if (dot) {
            *dot = '\0';
        }
        struct json_object *next;
        if (!has(cur, p, &next) || !istable(next)) {
            cur = NULL;
            break;
        }
        cur = next;
        if (!dot) {
            break;
        }
        p = dot + 1;
    }
    (void)save;
    free(tmp);
    return cur;
}

/* Values.PathValue: the non-table value at the dotted path. Returns false when there is none
 * (*out may then be anything). */
static bool path_value(struct json_object *v, const char *path, struct json_object **out)
{
    if (!*path) {
        return false;
    }
    const char *dot = strrchr(path, '.');
    struct json_object *t = v;
    const char *key = path;
    if (dot) {
        char *head = co_xstrndup(path, (size_t)(dot - path));
        t = table(v, head);
        free(head);
        key = dot + 1;
        if (!t) {
            return false;
        }
    }
    struct json_object *val;
    if (!has(t, key, &val) || istable(val)) {
        return false;
    }
    *out = val;
    return true;
}

/* ------------------------------------------------------------------------------------------ */
/* Dependency processing                                                                      */
/* ------------------------------------------------------------------------------------------ */

static void process_tags(helm_meta *m, struct json_object *cvals)
{
    struct json_object *vt = table(cvals, "tags");
    if (!vt) {
        return;
    }
    for (size_t i = 0; i < m->ndeps; i++) {
        helm_dep *r = &m->deps[i];
        bool has_true = false;
        bool has_false = false;
        for (size_t t = 0; t < r->ntags; t++) {
            struct json_object *b;
            if (has(vt, r->tags[t], &b) && b && json_object_is_type(b, json_type_boolean)) {
                if (json_object_get_boolean(b)) {
                    has_true = true;
                } else {
                    has_false = true;
                }
            }
        }
        if (!has_true && has_false) {
            r->enabled = false;
        } else {
            r->enabled = true;
        }
    }
}

static void process_conditions(helm_meta *m, struct json_object *cvals, const char *cpath)
{
    for (size_t i = 0; i < m->ndeps; i++) {
        helm_dep *r = &m->deps[i];
        if (!r->condition) {
            continue;
        }
        /* Helm trims the whole list but not the single conditions. */
        const char *s = r->condition;
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') {
            s++;
        }
        size_t len = strlen(s);
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\n' ||
                           s[len - 1] == '\r')) {
            len--;
        }
        char *list = co_xstrndup(s, len);
        char *p = list;
        for (;;) {
            char *comma = strchr(p, ',');
            if (comma) {
                *comma = '\0';
            }
            if (*p) {
                char *full = co_xasprintf("%s%s", cpath, p);
                struct json_object *vv = NULL;
                bool found = path_value(cvals, full, &vv);
                free(full);
                if (found && vv && json_object_is_type(vv, json_type_boolean)) {
                    r->enabled = json_object_get_boolean(vv);
                    break;
                }
            }
            if (!comma) {
                break;
            }
            p = comma + 1;
        }
        free(list);
    }
}

/* getAliasDependency: a copy of the subchart a requirement names (renamed to its alias). */
static helm_node *alias_dependency(helm_node *n, const helm_dep *dep)
{
    for (size_t i = 0; i < n->ndeps; i++) {
        helm_node *c = n->deps[i];
        if (!c->meta.name || !dep->name || strcmp(c->meta.name, dep->name) != 0) {
            continue;
        }
        if (!co_helm__compatible_range(dep->version, c->meta.version)) {
            continue;
        }
        helm_node *out = node_clone(c, n);
        if (dep->alias && *dep->alias) {
            free(out->meta.name);
            out->meta.name = co_xstrdup(dep->alias);
        }
        return out;
    }
    return NULL;
}

static void dep_remove(helm_meta *m, size_t i)
{
    helm_dep *d = &m->deps[i];
    free(d->name);
    free(d->version);
    free(d->repository);
    free(d->condition);
    for (size_t t = 0; t < d->ntags; t++) {
        free(d->tags[t]);
    }
    free(d->tags);
    json_object_put(d->import_values);
    free(d->alias);
    memmove(&m->deps[i], &m->deps[i + 1], (m->ndeps - i - 1) * sizeof(*m->deps));
    m->ndeps--;
}

/* processDependencyEnabled. */
static int process_enabled(helm_node *n, struct json_object *v, const char *path)
{
    if (!n->meta.has_deps) {
        return 0;
    }
    helm_node **next = co_xcalloc(n->ndeps + n->meta.ndeps + 1, sizeof(helm_node *));
    size_t nnext = 0;
    bool *used = co_xcalloc(n->ndeps + 1, sizeof(bool));
    for (size_t i = 0; i < n->ndeps; i++) {
        helm_node *existing = n->deps[i];
        bool listed = false;
        for (size_t r = 0; r < n->meta.ndeps && !listed; r++) {
            const helm_dep *req = &n->meta.deps[r];
            listed = existing->meta.name && req->name &&
                     strcmp(existing->meta.name, req->name) == 0 &&
                     co_helm__compatible_range(req->version, existing->meta.version);
        }
        if (!listed) {
            next[nnext++] = existing;
            used[i] = true;
        }
    }
    for (size_t r = 0; r < n->meta.ndeps; r++) {
        helm_dep *req = &n->meta.deps[r];
        helm_node *c = alias_dependency(n, req);
        if (c) {
            next[nnext++] = c;
        }
        if (req->alias && *req->alias) {
            free(req->name);
            req->name = co_xstrdup(req->alias);
        }
    }
    for (size_t i = 0; i < n->ndeps; i++) {
        if (!used[i]) {
            co_helm__node_free(n->deps[i]);
        }
    }
    free(used);
    free(n->deps);
    n->deps = next;
    n->ndeps = nnext;

    for (size_t r = 0; r < n->meta.ndeps; r++) {
        n->meta.deps[r].enabled = true;
    }
    struct json_object *cvals = NULL;
    int rc = co_helm__coalesce(&cvals, n, v, false);
    if (rc < 0) {
        return rc;
    }
    process_tags(&n->meta, cvals);
    process_conditions(&n->meta, cvals, path);

    /* Drop disabled charts (by name: an alias has replaced the name by now). */
    for (size_t r = 0; r < n->meta.ndeps;) {
        if (n->meta.deps[r].enabled) {
            r++;
            continue;
        }
        /* a dependency without a name counts as named "": the one at r always goes */
        char *gone = co_xstrdup(n->meta.deps[r].name ? n->meta.deps[r].name : "");
        for (size_t i = 0; i < n->ndeps;) {
            const char *dn = n->deps[i]->meta.name ? n->deps[i]->meta.name : "";
            if (strcmp(dn, gone) == 0) {
                co_helm__node_free(n->deps[i]);
                memmove(&n->deps[i], &n->deps[i + 1], (n->ndeps - i - 1) * sizeof(helm_node *));
                n->ndeps--;
            } else {
                i++;
            }
        }
        for (size_t k = 0; k < n->meta.ndeps;) {
            const char *kn = n->meta.deps[k].name ? n->meta.deps[k].name : "";
            if (strcmp(kn, gone) == 0) {
                dep_remove(&n->meta, k);
                if (k < r) {
                    r--;
                }
            } else {
                k++;
            }
        }
        free(gone);
    }
    for (size_t i = 0; i < n->ndeps && rc == 0; i++) {
        char *sub = co_xasprintf("%s%s.", path, n->deps[i]->meta.name);
        rc = process_enabled(n->deps[i], cvals, sub);
        free(sub);
    }
    json_object_put(cvals);
    return rc;
}

/* pathToMap: @p data nested under the dotted @p path ("." = @p data itself). New ref. */
static struct json_object *path_to_map(const char *path, struct json_object *data)
{
    if (strcmp(path, ".") == 0) {
        return json_object_get(data);
    }
    struct json_object *cur = json_object_get(data);
    const char *end = path + strlen(path);
    while (end >= path) {
        const char *start = end;
        while (start > path && start[-1] != '.') {
            start--;
        }
        struct json_object *m = json_object_new_object();
        char *k = co_xstrndup(start, (size_t)(end - start));
        put(m, k, cur);
        free(k);
        cur = m;
        if (start == path) {
            break;
        }
        end = start - 1;
    }
    return cur;
}

/* processImportValues (with merge, as `helm install` and `helm template` run it). */
static int process_imports(helm_node *n)
{
    if (!n->meta.has_deps) {
        return 0;
    }
    struct json_object *cvals = NULL;
    int rc = co_helm__coalesce(&cvals, n, NULL, true);
    if (rc < 0) {
        return rc;
    }
    struct json_object *b = json_object_new_object();
    for (size_t r = 0; r < n->meta.ndeps; r++) {
        helm_dep *req = &n->meta.deps[r];
        struct json_object *iv = req->import_values;
        if (!iv) {
            continue;
        }
        struct json_object *outiv = json_object_new_array();
        size_t len = json_object_array_length(iv);
        for (size_t i = 0; i < len; i++) {
            struct json_object *e = json_object_array_get_idx(iv, i);
            if (istable(e)) {
                struct json_object *child = NULL;
                struct json_object *parent = NULL;
                (void)has(e, "child", &child);
                (void)has(e, "parent", &parent);
                if (!child || !json_object_is_type(child, json_type_string) || !parent ||
                    !json_object_is_type(parent, json_type_string)) {
                    json_object_put(outiv);
                    json_object_put(b);
                    json_object_put(cvals);
                    return co_error_set(CO_EINVALID,
                                        "Chart.yaml: dependency %s: import-values[%zu] needs "
                                        "string fields child and parent",
                                        req->name ? req->name : "", i);
                }
                const char *cs = json_object_get_string(child);
                const char *ps = json_object_get_string(parent);
                struct json_object *o = json_object_new_object();
                put(o, "child", json_object_new_string(cs));
                put(o, "parent", json_object_new_string(ps));
                json_object_array_add(outiv, o);
                char *tp = co_xasprintf("%s.%s", req->name ? req->name : "", cs);
                struct json_object *vv = table(cvals, tp);
                free(tp);
                if (!vv) {
                    continue; /* Helm warns: missing table */
                }
                struct json_object *m = path_to_map(ps, vv);
                struct json_object *nb = coalesce_tables(b, m, true);
                (void)nb;
                json_object_put(m);
            } else if (e && json_object_is_type(e, json_type_string)) {
                char *child = co_xasprintf("exports.%s", json_object_get_string(e));
                struct json_object *o = json_object_new_object();
                put(o, "child", json_object_new_string(child));
                put(o, "parent", json_object_new_string("."));
                json_object_array_add(outiv, o);
                char *tp = co_xasprintf("%s.%s", req->name ? req->name : "", child);
                free(child);
                struct json_object *vm = table(cvals, tp);
                free(tp);
                if (!vm) {
                    continue;
                }
                coalesce_tables(b, vm, true);
            }
        }
        json_object_put(req->import_values);
        req->import_values = json_object_array_length(outiv) ? outiv : NULL;
        if (!req->import_values) {
            json_object_put(outiv);
        }
    }
    struct json_object *copy = co_json_copy(cvals);
    json_object_put(cvals);
    coalesce_tables(copy, b, true);
    json_object_put(b);
    json_object_put(n->values);
    n->values = copy;
    return 0;
}

static int process_imports_rec(helm_node *n)
{
    for (size_t i = 0; i < n->ndeps; i++) {
        int rc = process_imports_rec(n->deps[i]);
        if (rc < 0) {
            return rc;
        }
    }
    return process_imports(n);
}

int co_helm__process_dependencies(helm_node *root, struct json_object *vals)
{
    int rc = process_enabled(root, vals, "");
    if (rc < 0) {
        return rc;
    }
    return process_imports_rec(root);
}

/* ------------------------------------------------------------------------------------------ */
/* Public entry                                                                               */
/* ------------------------------------------------------------------------------------------ */

int co_helm_values(struct json_object **out,
                   const co_helm_chart *c,
                   const struct json_object *values)
{
    if (values && !istable((struct json_object *)values)) {
        return co_error_set(CO_EINVALID, "values: expected a map, got %s",
                            co_json_type_name(values));
    }
    helm_node *root = co_helm__node_new(c, NULL);
    struct json_object *vals = co_json_copy(values);
    int rc = co_helm__process_dependencies(root, vals);
    if (rc == 0) {
        rc = co_helm__coalesce(out, root, vals, false);
    }
    json_object_put(vals);
    co_helm__node_free(root);
    return rc;
}
