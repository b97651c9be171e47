/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `component-controller render`: renders a directory, or the files of a Blueprint manifest
 * (docs/blueprints.md) written to a private temporary directory, as the controller renders a
 * Component's source (co_render), with the Component's values, Secrets and placement from files.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/util/digest.h"
#include "co/render/helm.h"
#include "co/api/blueprint.h"
#include "co/api/policy.h"
#include "co/source/archive.h"
#include "co/render/render.h"
#include "co/util/semver.h"
#include "co/json/yaml.h"
#include "controller/ctl_cli_int.h"

/* Everything `render` hands to co_render, gathered from flags, a Component and its Secrets. */
typedef struct render_args {
    char *dir; /* DIR joined with spec.path */
    char *ns;  /* placement from the Component, or NULL */
    char *name;
    struct json_object *component; /* from --component, or NULL */
    struct json_object *values;    /* merged */
    struct json_object *post_build;
    struct json_object *substitutions; /* object of strings */
    co_sops_keys *keys;
    int64_t revision;
    unsigned flags;
} render_args;

static void render_args_dispose(render_args *a)
{
    free(a->dir);
    free(a->ns);
    free(a->name);
    json_object_put(a->component);
    json_object_put(a->values);
    json_object_put(a->post_build);
    json_object_put(a->substitutions);
    co_sops_keys_free(a->keys);
    memset(a, 0, sizeof(*a));
}

/* The Secret @p name among the --secret manifests, or NULL. */
static const manifest *find_secret(const manifest_list *secrets, const char *name)
{
    for (size_t i = 0; i < secrets->len; i++) {
        const struct json_object *o = secrets->items[i].obj;
        const char *kind = co_json_str(o, "kind", NULL);
        const char *n = co_json_meta_name(o);
        if (kind && n && strcmp(kind, "Secret") == 0 && strcmp(n, name) == 0) {
            return &secrets->items[i];
        }
    }
    return NULL;
}

/*
 * The value of @p key of a Secret (stringData wins over data, as the API server merges them).
 * @return 0, CO_ENOTFOUND (no such key), CO_EINVALID (bad base64).
 */
static int secret_value(co_buf *out, const manifest *secret, const char *key)
{
    /* co_json_get() rather than co_json_str(): it also indexes a list standing in for the map
     * (a numeric key), which this reader has always accepted */
    struct json_object *v = co_json_get(secret->obj, "stringData", key, NULL);
    if (json_object_is_type(v, json_type_string)) {
        return co_buf_puts(out, json_object_get_string(v));
    }
    v = co_json_get(secret->obj, "data", key, NULL);
    if (!json_object_is_type(v, json_type_string)) {
        return CO_ENOTFOUND;
    }
    const char *s = json_object_get_string(v);
    if (co_base64_decode(out, s, strlen(s), CO_BASE64_STD) < 0) {
        return co_error_wrap("%s:%d: Secret data.%s", secret->file, secret->line, key);
    }
    return 0;
}

/* valuesFrom: each referenced Secret key (or values, values.yaml, values.yml) merged in. */
static int
merge_values_from(struct json_object *values, const co_component *c, const manifest_list *secrets)
{
    for (size_t i = 0; i < c->spec.n_values_from; i++) {
        const co_secret_key_ref *ref = &c->spec.values_from[i];
        const manifest *secret = find_secret(secrets, ref->name);
        if (!secret) {
            return co_error_set(CO_ENOTFOUND,
                                "spec.valuesFrom[%zu]: Secret \"%s\" not given (--secret FILE)", i,
                                ref->name);
        }
        const char *fallbacks[] = {"values", "values.yaml", "values.yml"};
        co_buf b = CO_BUF_INIT(CO_MAX_DOCUMENT);
        int rc = CO_ENOTFOUND;
        if (ref->key) {
            rc = secret_value(&b, secret, ref->key);
        }
        for (size_t k = 0; !ref->key && rc == CO_ENOTFOUND && k < CO_ARRAY_SIZE(fallbacks); k++) {
            rc = secret_value(&b, secret, fallbacks[k]);
        }
        if (rc == CO_ENOTFOUND) {
            co_buf_dispose(&b);
            return co_error_set(CO_ENOTFOUND, "spec.valuesFrom[%zu]: Secret \"%s\" has no key %s",
                                i, ref->name, ref->key ? ref->key : "values(.yaml|.yml)");
        }
        if (rc < 0) {
            co_buf_dispose(&b);
            return rc;
        }
        struct json_object *v = NULL;
        rc = co_yaml_parse(&v, co_buf_cstr(&b), b.len, 0);
        co_buf_dispose(&b);
        if (rc < 0) {
            return co_error_wrap("spec.valuesFrom[%zu]: Secret \"%s\"", i, ref->name);
        }
        if (v && !json_object_is_type(v, json_type_object)) {
            json_object_put(v);
            return co_error_set(CO_EINVALID,
                                "spec.valuesFrom[%zu]: Secret \"%s\": values are not a mapping", i,
                                ref->name);
        }
        if (v) {
            co_json_merge(values, v);
        }
        json_object_put(v);
    }
    return 0;
}

/* Adds every key of the Secret @p secret to @p vars (later calls win). */
static int add_secret_variables(struct json_object *vars, const manifest *secret)
{
    const char *maps[] = {"data", "stringData"};
    for (size_t m = 0; m < CO_ARRAY_SIZE(maps); m++) {
        struct json_object *map = co_json_get(secret->obj, maps[m], NULL);
        if (!json_object_is_type(map, json_type_object)) {
            continue;
        }
        json_object_object_foreach (map, key, val) {
            (void)val;
            co_buf b = CO_BUF_INIT(CO_MAX_DOCUMENT);
            int rc = secret_value(&b, secret, key);
            if (rc < 0) {
                co_buf_dispose(&b);
                return rc;
            }
            json_object_object_add(vars, key,
                                   json_object_new_string_len(co_buf_cstr(&b), (int)b.len));
            co_buf_dispose(&b);
        }
    }
    return 0;
}

/* ---- --blueprint FILE -------------------------------------------------------------------- */

/* The Blueprint of --blueprint and the private directory its files are written to, which
 * stands in for DIR. */
typedef struct blueprint_tree {
    co_blueprint *bp;
    char *ref;  /* "NS/NAME", or "NAME" without a namespace: for messages */
    char *root; /* the temporary directory; NULL until made */
    char *dir;  /* root/files, the tree that stands in for DIR */
} blueprint_tree;

/* Removes the directory (if made) and frees @p t. @return 0, or CO_ERROR naming it. */
static int blueprint_tree_dispose(blueprint_tree *t)
{
    int rc = 0;
    if (t->root && co_archive_remove_tree(t->root) < 0) {
        rc = co_error_wrap("removing %s", t->root);
    }
    free(t->root);
    free(t->dir);
    free(t->ref);
    co_blueprint_free(t->bp);
    memset(t, 0, sizeof(*t));
    return rc;
}

/*
 * Reads the Blueprint of --blueprint: exactly one, valid as the webhook admits it at CREATE. Its
 * field errors are printed to @p err one a line, as `validate` prints them.
 */
static int read_blueprint(blueprint_tree *t, const char *path, FILE *err)
{
    manifest_list l = {NULL, 0, 0};
    int rc = ctl_cli__read_manifests(&l, path, false);
    if (rc < 0) {
        return rc;
    }
    const char *kind = l.len == 1 ? co_json_str(l.items[0].obj, "kind", NULL) : NULL;
    if (!kind || ctl_cli__classify(l.items[0].obj) != OBJ_BLUEPRINT ||
        strcmp(kind, CO_BLUEPRINT_KIND) != 0) {
        ctl_cli__manifests_dispose(&l);
        (void)co_error_set(CO_EINVALID, "%s: expected exactly one Blueprint", path);
        return CO_EINVALID;
    }
    const manifest *m = &l.items[0];
    const char *ns = co_json_meta_namespace(m->obj);
    const char *name = co_json_meta_name(m->obj);
    t->ref =
        ns && ns[0] ? co_xasprintf("%s/%s", ns, name ? name : "") : co_xstrdup(name ? name : "");
    char *what = co_xasprintf("Blueprint \"%s\"", t->ref);
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    if (co_blueprint_validate(&errs, m->obj, 0) < 0) {
        rc = ctl_cli__print_field_errors(err, m, what, &errs);
        if (rc == 0) {
            rc = co_error_set(CO_EINVALID, "%s: not a valid Blueprint", path);
        }
    }
    co_field_errors_dispose(&errs);
    free(what);
    if (rc == 0 && co_blueprint_parse(&t->bp, m->obj) < 0) {
        (void)co_error_wrap("%s", path);
        rc = CO_EINVALID;
    }
    ctl_cli__manifests_dispose(&l);
    return rc;
}

/*
 * Writes the files of t->bp below a new private directory under $TMPDIR (else /tmp), t->root,
 * into t->dir, within the caps of a Blueprint (CO_MAX_BLUEPRINT_FILES) and of a source tree
 * (CO_MAX_SOURCE_FILES), as the controller writes a BlueprintVersion (co_blueprint_write_files():
 * paths checked again, nothing followed or overwritten). On failure t->root, when made, is left
 * for blueprint_tree_dispose().
 */
static int write_blueprint_tree(blueprint_tree *t)
{
    const char *tmp = getenv("TMPDIR"); // NOLINT(concurrency-mt-unsafe): no threads yet
    char *root =
        co_xasprintf("%s/component-controller-blueprint-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        int rc = co_error_set_os(CO_ERROR, "creating a temporary directory %s", root);
        free(root);
        return rc;
    }
    t->root = root;
    if (t->bp->nfiles > CO_MAX_SOURCE_FILES) {
        return co_error_set(CO_ETOOBIG, "Blueprint \"%s\": more than %d files", t->ref,
                            CO_MAX_SOURCE_FILES);
    }
    size_t total = 0;
    for (size_t i = 0; i < t->bp->nfiles; i++) {
        total += strlen(t->bp->files[i].path) + t->bp->files[i].len;
    }
    if (total > CO_MAX_BLUEPRINT_FILES) {
        return co_error_set(CO_ETOOBIG, "Blueprint \"%s\": spec.files: more than %zu bytes", t->ref,
                            (size_t)CO_MAX_BLUEPRINT_FILES);
    }
    t->dir = co_xasprintf("%s/files", root);
    if (co_blueprint_write_files(t->dir, t->bp->files, t->bp->nfiles, NULL) < 0) {
        return co_error_wrap("Blueprint \"%s\"", t->ref);
    }
    return 0;
}

/*
 * With --blueprint: a Component whose source is another Blueprint is refused, naming both; its
 * spec.path narrows inside the Blueprint's tree as the controller narrows inside an artifact
 * (co_archive_resolve(): the path must not leave the tree).
 */
static int component_in_blueprint(render_args *a, const co_component *c, const blueprint_tree *bt)
{
    const co_source_ref *src = &c->spec.source;
    if (src->kind == CO_SOURCE_BLUEPRINT && src->flux.name) {
        const char *ns = src->flux.ns && src->flux.ns[0] ? src->flux.ns : c->ns;
        const char *bns = bt->bp->ns;
        bool same = strcmp(src->flux.name, bt->bp->name) == 0 &&
                    (!ns || !bns || !bns[0] || strcmp(ns, bns) == 0);
        if (!same) {
            char *named =
                ns ? co_xasprintf("%s/%s", ns, src->flux.name) : co_xstrdup(src->flux.name);
            int rc = co_error_set(CO_EINVALID,
                                  "spec.sourceRef.blueprint: the Component uses Blueprint \"%s\", "
                                  "not Blueprint \"%s\" of --blueprint",
                                  named, bt->ref);
            free(named);
            return rc;
        }
    }
    const char *path = c->spec.path ? c->spec.path : "";
    char *resolved = NULL;
    int rc = co_archive_resolve(&resolved, a->dir, path);
    if (rc == CO_EINVALID) {
        return co_error_set(CO_EINVALID, "spec.path %s leaves Blueprint \"%s\"", path, bt->ref);
    }
    struct stat st;
    if (rc < 0 || stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) {
        free(resolved);
        return co_error_set(CO_ENOTFOUND, "spec.path %s: no such directory in Blueprint \"%s\"",
                            path, bt->ref);
    }
    free(a->dir);
    a->dir = resolved;
    return 0;
}

/* Takes path, placement, values, postBuild and decryption keys from the Component @p c. */
static int gather_component(render_args *a,
                            const co_component *c,
                            const manifest_list *secrets,
                            const blueprint_tree *bt)
{
    if (bt) {
        int rc = component_in_blueprint(a, c, bt);
        if (rc < 0) {
            return rc;
        }
    } else if (c->spec.path && c->spec.path[0]) {
        char *joined = co_xasprintf("%s/%s", a->dir, c->spec.path);
        free(a->dir);
        a->dir = joined;
    }
    const char *ns = c->spec.ns ? c->spec.ns : c->ns;
    const char *name = c->spec.name ? c->spec.name : c->name;
    a->ns = ns ? strdup(ns) : NULL;
    a->name = name ? strdup(name) : NULL;
    int rc = merge_values_from(a->values, c, secrets);
    if (rc == 0 && c->spec.values && json_object_is_type(c->spec.values, json_type_object)) {
        co_json_merge(a->values, c->spec.values);
    }
    if (rc == 0 && c->spec.has_decryption) {
        const manifest *secret = find_secret(secrets, c->spec.decryption_secret_name);
        if (!secret) {
            return co_error_set(
                CO_ENOTFOUND, "spec.decryption.secretRef: Secret \"%s\" not given (--secret FILE)",
                c->spec.decryption_secret_name);
        }
        rc = co_sops_keys_add_secret(a->keys, secret->obj);
        if (rc < 0) {
            return co_error_wrap("%s:%d: Secret \"%s\"", secret->file, secret->line,
                                 c->spec.decryption_secret_name);
        }
    }
    for (size_t i = 0; rc == 0 && i < c->spec.n_substitute_from; i++) {
        const manifest *secret = find_secret(secrets, c->spec.substitute_from[i]);
        if (!secret) {
            return co_error_set(CO_ENOTFOUND,
                                "spec.postBuild.substituteFrom[%zu]: Secret \"%s\" not given "
                                "(--secret FILE)",
                                i, c->spec.substitute_from[i]);
        }
        rc = add_secret_variables(a->substitutions, secret);
    }
    for (size_t i = 0; rc == 0 && i < c->spec.substitute.len; i++) {
        json_object_object_add(a->substitutions, c->spec.substitute.keys[i],
                               json_object_new_string(c->spec.substitute.values[i]));
    }
    return rc;
}

/* Reads the Component of --component: exactly one, valid as the webhook would admit it. */
static int read_component(struct json_object **out, co_component **parsed, const char *path)
{
    manifest_list l = {NULL, 0, 0};
    int rc = ctl_cli__read_manifests(&l, path, false);
    if (rc < 0) {
        return rc;
    }
    if (l.len != 1 || ctl_cli__classify(l.items[0].obj) != OBJ_COMPONENT) {
        ctl_cli__manifests_dispose(&l);
        return co_error_set(CO_EINVALID, "%s: expected exactly one Component", path);
    }
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    if (co_component_validate(&errs, l.items[0].obj, NULL, 0) < 0) {
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        rc = co_field_errors_format(&b, &errs);
        rc = co_error_set(CO_EINVALID, "%s:%d: %s", path, l.items[0].line,
                          rc == 0 ? co_buf_cstr(&b) : "invalid Component");
        co_buf_dispose(&b);
        co_field_errors_dispose(&errs);
        ctl_cli__manifests_dispose(&l);
        return rc;
    }
    co_field_errors_dispose(&errs);
    rc = co_component_parse(parsed, l.items[0].obj);
    if (rc < 0 || *parsed == NULL) {
        ctl_cli__manifests_dispose(&l);
        return rc < 0 ? co_error_wrap("%s", path)
                      : co_error_set(CO_EINVALID, "%s: not a Component", path);
    }
    *out = json_object_get(l.items[0].obj);
    ctl_cli__manifests_dispose(&l);
    return 0;
}

/* --decryption-keys DIR: every *.agekey and *.asc file, as the entries of a decryption Secret. */
static int read_key_dir(co_sops_keys *keys, const char *dir)
{
    co_vfs *fs = NULL;
    if (co_vfs_new_disk(&fs, dir) < 0) {
        return co_error_set(CO_ENOTFOUND, "--decryption-keys %s: not a directory", dir);
    }
    char **names = NULL;
    size_t n = 0;
    int rc = co_vfs_list(&names, &n, fs, "");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        size_t len = strlen(names[i]);
        bool age = len > 7 && strcmp(names[i] + len - 7, ".agekey") == 0;
        bool pgp = len > 4 && strcmp(names[i] + len - 4, ".asc") == 0;
        if (!age && !pgp) {
            continue;
        }
        char *data = NULL;
        size_t dlen = 0;
        rc = co_vfs_read(&data, &dlen, fs, names[i]);
        if (rc == 0) {
            rc = co_sops_keys_add(keys, names[i], data, dlen);
        }
        if (data) {
            memset(data, 0, dlen);
        }
        free(data);
        if (rc < 0) {
            rc = co_error_wrap("%s/%s", dir, names[i]);
        }
    }
    co_vfs_strv_free(names);
    co_vfs_free(fs);
    return rc;
}

/* --substitute-from FILE: a mapping of strings, or a Secret or ConfigMap manifest. */
static int read_substitute_file(struct json_object *vars, const char *path)
{
    manifest_list l = {NULL, 0, 0};
    int rc = ctl_cli__read_manifests(&l, path, false);
    for (size_t i = 0; rc == 0 && i < l.len; i++) {
        const manifest *m = &l.items[i];
        const char *kind = co_json_str(m->obj, "kind", NULL);
        if (kind && strcmp(kind, "Secret") == 0) {
            rc = add_secret_variables(vars, m);
            continue;
        }
        struct json_object *map = m->obj;
        if (kind && strcmp(kind, "ConfigMap") == 0) {
            map = co_json_get(m->obj, "data", NULL);
        }
        if (!json_object_is_type(map, json_type_object)) {
            rc = co_error_set(CO_EINVALID,
                              "%s:%d: expected a mapping of variables, a ConfigMap or a Secret",
                              path, m->line);
            break;
        }
        json_object_object_foreach (map, key, val) {
            if (!json_object_is_type(val, json_type_string)) {
                rc = co_error_set(CO_EINVALID, "%s:%d: variable %s: not a string", path, m->line,
                                  key);
                break;
            }
            json_object_object_add(vars, key, json_object_get(val));
        }
    }
    ctl_cli__manifests_dispose(&l);
    return rc;
}

static int gather_render_args(render_args *a,
                              const char *dir,
                              const blueprint_tree *bt,
                              const char *component_file,
                              const co_flag_list *secret_files,
                              const co_flag_list *values_files,
                              const co_flag_list *sets,
                              const char *key_dir,
                              const co_flag_list *subst_files,
                              const co_flag_list *substs)
{
    a->dir = strdup(dir);
    a->values = json_object_new_object();
    a->substitutions = json_object_new_object();
    a->keys = co_sops_keys_new();
    int rc = 0;
    if (component_file) {
        manifest_list secrets = {NULL, 0, 0};
        for (size_t i = 0; rc == 0 && i < secret_files->len; i++) {
            rc = ctl_cli__read_manifests(&secrets, secret_files->items[i], false);
        }
        co_component *c = NULL;
        if (rc == 0) {
            rc = read_component(&a->component, &c, component_file);
        }
        if (rc == 0 && c) { /* read_component() sets c when it succeeds */
            rc = gather_component(a, c, &secrets, bt);
            if (rc < 0) {
                rc = co_error_wrap("%s", component_file);
            }
        }
        if (rc == 0) {
            a->post_build = json_object_get(co_json_get(a->component, "spec", "postBuild", NULL));
        }
        co_component_free(c);
        ctl_cli__manifests_dispose(&secrets);
    } else if (secret_files->len > 0) {
        return co_error_set(CO_EINVALID, "--secret is only used with --component");
    }
    for (size_t i = 0; rc == 0 && i < values_files->len; i++) {
        struct json_object *v = NULL;
        rc = ctl_cli__read_document(&v, values_files->items[i]);
        if (rc == 0 && v && !json_object_is_type(v, json_type_object)) {
            rc = co_error_set(CO_EINVALID, "%s: values must be a mapping, not %s",
                              values_files->items[i], co_json_type_name(v));
        }
        if (rc == 0 && v) {
            co_json_merge(a->values, v);
        }
        json_object_put(v);
    }
    for (size_t i = 0; rc == 0 && i < sets->len; i++) {
        rc = ctl_cli__apply_set(a->values, sets->items[i]);
    }
    if (rc == 0 && key_dir) {
        rc = read_key_dir(a->keys, key_dir);
    }
    for (size_t i = 0; rc == 0 && i < subst_files->len; i++) {
        rc = read_substitute_file(a->substitutions, subst_files->items[i]);
    }
    for (size_t i = 0; rc == 0 && i < substs->len; i++) {
        const char *eq = strchr(substs->items[i], '=');
        if (!eq || eq == substs->items[i]) {
            rc =
                co_error_set(CO_EINVALID, "--substitute %s: expected NAME=VALUE", substs->items[i]);
            break;
        }
        char *key = strndup(substs->items[i], (size_t)(eq - substs->items[i]));
        json_object_object_add(a->substitutions, key, json_object_new_string(eq + 1));
        free(key);
    }
    return rc;
}

/*
 * --kube-version X.Y[.Z] (a leading `v` allowed): the version.Info the templated kustomization
 * sees as kubernetesVersion, as discovery would report that server.
 */
static int kube_version_info(struct json_object **out, const char *text)
{
    co_semver v;
    if (co_semver_parse(&v, text) < 0) {
        return co_error_set(CO_EINVALID, "--kube-version %s: expected X.Y or X.Y.Z", text);
    }
    char *major = co_xasprintf("%llu", (unsigned long long)v.major);
    char *minor = co_xasprintf("%llu", (unsigned long long)v.minor);
    char *git = co_xasprintf("v%llu.%llu.%llu", (unsigned long long)v.major,
                             (unsigned long long)v.minor, (unsigned long long)v.patch);
    co_semver_dispose(&v);
    struct json_object *info = json_object_new_object();
    json_object_object_add(info, "major", json_object_new_string(major));
    json_object_object_add(info, "minor", json_object_new_string(minor));
    json_object_object_add(info, "gitVersion", json_object_new_string(git));
    free(major);
    free(minor);
    free(git);
    *out = info;
    return 0;
}

/*
 * --api-versions G/V[/K] (or V for the core group): checked, and gathered into the
 * APIResourceList array the templated kustomization sees as apiResources (one list per
 * group/version, one resource per kind given).
 */
static int api_resource_lists(struct json_object **out, const co_flag_list *versions)
{
    struct json_object *lists = json_object_new_array();
    for (size_t i = 0; i < versions->len; i++) {
        const char *text = versions->items[i];
        const char *s1 = strchr(text, '/');
        const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
        bool bad = text[0] == '\0' || text[0] == '/' || (s1 && s1[1] == '\0') ||
                   (s1 && s1[1] == '/') || (s2 && (s2[1] == '\0' || strchr(s2 + 1, '/')));
        if (bad) {
            json_object_put(lists);
            return co_error_set(CO_EINVALID, "--api-versions %s: expected GROUP/VERSION[/KIND]",
                                text);
        }
        char *gv = s2 ? strndup(text, (size_t)(s2 - text)) : strdup(text);
        CO_ASSERT(gv != NULL);
        struct json_object *list = NULL;
        for (size_t k = 0; k < json_object_array_length(lists) && !list; k++) {
            struct json_object *l = json_object_array_get_idx(lists, k);
            if (strcmp(json_object_get_string(co_json_get(l, "groupVersion", NULL)), gv) == 0) {
                list = l;
            }
        }
        if (!list) {
            list = json_object_new_object();
            json_object_object_add(list, "kind", json_object_new_string("APIResourceList"));
            json_object_object_add(list, "groupVersion", json_object_new_string(gv));
            json_object_object_add(list, "resources", json_object_new_array());
            json_object_array_add(lists, list);
        }
        free(gv);
        if (s2) {
            struct json_object *res = json_object_new_object();
            json_object_object_add(res, "kind", json_object_new_string(s2 + 1));
            json_object_array_add(co_json_get(list, "resources", NULL), res);
        }
    }
    *out = lists;
    return 0;
}

int ctl_cli__run_render(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = ctl_cli__find("render");
    co_flag_list values_files = {NULL, 0};
    co_flag_list sets = {NULL, 0};
    co_flag_list api_versions = {NULL, 0};
    co_flag_list substs = {NULL, 0};
    co_flag_list subst_files = {NULL, 0};
    co_flag_list secret_files = {NULL, 0};
    const char *ns = NULL;
    const char *name = NULL;
    const char *kube_version = NULL;
    const char *key_dir = NULL;
    const char *component_file = NULL;
    const char *blueprint_file = NULL;
    const char *format_name = NULL;
    const char *release_service = NULL;
    long long revision = 1;
    int no_hook_mapping = 0;
    int include_crds = 0, skip_crds = 0, skip_tests = 0, no_hooks = 0;
    int help = 0;
    const char *cpu_budget = NULL;
    const char *memory_budget = NULL;
    const co_flag flags[] = {
        {"values", CO_FLAG_LIST, &values_files, "FILE",
         "values (YAML or JSON mapping), deep-merged in order over the Component's (repeatable)"},
        {"set", CO_FLAG_LIST, &sets, "PATH=VALUE",
         "set a value after all --values (repeatable; typed as helm --set types it)"},
        {"namespace", CO_FLAG_STRING, &ns, "NS",
         "placement namespace (default: the Component's, else \"default\")"},
        {"name", CO_FLAG_STRING, &name, "NAME",
         "placement name (default: the Component's, else the directory's base name or the "
         "Blueprint's name)"},
        {"kube-version", CO_FLAG_STRING, &kube_version, "X.Y[.Z]",
         "Kubernetes version for .Capabilities.KubeVersion and kubernetesVersion"},
        {"api-versions", CO_FLAG_LIST, &api_versions, "G/V[/K]",
         "an API version the cluster serves: .Capabilities.APIVersions, apiResources (repeatable)"},
        {"revision", CO_FLAG_INT, &revision, "N",
         "component revision: 1 renders an install, more an upgrade (default 1)"},
        {"decryption-keys", CO_FLAG_STRING, &key_dir, "DIR",
         "SOPS keys: the *.agekey and *.asc files of DIR, as in a decryption Secret"},
        {"substitute", CO_FLAG_LIST, &substs, "NAME=VALUE",
         "a postBuild variable; wins over every other source (repeatable)"},
        {"substitute-from", CO_FLAG_LIST, &subst_files, "FILE",
         "postBuild variables: a mapping of strings, a ConfigMap or a Secret (repeatable)"},
        {"blueprint", CO_FLAG_STRING, &blueprint_file, "FILE",
         "render the files of this Blueprint manifest instead of DIR (the webhook's checks first)"},
        {"component", CO_FLAG_STRING, &component_file, "FILE",
         "take path, values, valuesFrom, decryption, postBuild and placement from a Component"},
        {"secret", CO_FLAG_LIST, &secret_files, "FILE",
         "Secrets the --component references (valuesFrom, decryption, substituteFrom)"},
        {"no-hook-mapping", CO_FLAG_BOOL, &no_hook_mapping, NULL,
         "leave Helm hooks as Helm renders them (comparable with helm template)"},
        {"include-crds", CO_FLAG_BOOL, &include_crds, NULL,
         "with --no-hook-mapping: print the charts' crds/ files, as helm template --include-crds "
         "(without --no-hook-mapping they are printed, as the controller applies them)"},
        {"skip-crds", CO_FLAG_BOOL, &skip_crds, NULL,
         "leave out the charts' crds/ files, as the controller would not apply them (with "
         "--no-hook-mapping only --include-crds decides, as in helm template)"},
        {"skip-tests", CO_FLAG_BOOL, &skip_tests, NULL,
         "leave out Helm test hooks (helm.sh/hook test or test-success)"},
        {"no-hooks", CO_FLAG_BOOL, &no_hooks, NULL, "leave out every Helm hook"},
        {"release-service", CO_FLAG_STRING, &release_service, "NAME",
         "Helm's .Release.Service (default: " CO_HELM_OPERATOR_SERVICE
         ", as the controller; helm template: Helm)"},
        {"o", CO_FLAG_STRING, &format_name, "FORMAT", "output format: yaml (default) or json"},
        {"output", CO_FLAG_STRING, &format_name, "FORMAT", "same as -o"},
        {"render-cpu-budget", CO_FLAG_STRING, &cpu_budget, "DURATION",
         "CPU time the render may take, as in the controller (default 30s)"},
        {"render-memory-budget", CO_FLAG_STRING, &memory_budget, "BYTES",
         "memory the render may take, as in the controller (default 64Mi)"},
        {"help", CO_FLAG_BOOL, &help, NULL, "print this help and exit"},
    };
    co_flag_list *lists[] = {&values_files, &sets,        &api_versions,
                             &substs,       &subst_files, &secret_files};
    int next = 0;
    int status =
        ctl_cli__parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
    output_format fmt = FORMAT_YAML;
    if (status < 0 && format_name && ctl_cli__parse_format(&fmt, format_name) < 0) {
        fprintf(err, "component-controller render: %s\n", co_error_last());
        status = EXIT_USAGE;
    }
    if (status < 0 && blueprint_file && argc - next != 0) {
        fprintf(err, "component-controller render: give DIR or --blueprint FILE, not both\n");
        status = EXIT_USAGE;
    }
    if (status < 0 && !blueprint_file && argc - next != 1) {
        fprintf(err,
                "component-controller render: expected one directory (or --blueprint FILE), got "
                "%d arguments\n",
                argc - next);
        status = EXIT_USAGE;
    }
    if (status < 0 && revision < 1) {
        fprintf(err, "component-controller render: --revision must be at least 1\n");
        status = EXIT_USAGE;
    }
    if (status < 0) {
        status = ctl_cli__apply_budget(cmd, cpu_budget, memory_budget, err);
    }
    if (status >= 0) {
        for (size_t i = 0; i < CO_ARRAY_SIZE(lists); i++) {
            co_flag_list_dispose(lists[i]);
        }
        return status;
    }
    /* With --blueprint, its files in a directory of our own stand in for DIR; what names the
     * source in messages is the manifest and the Blueprint, never that directory. */
    blueprint_tree bt;
    memset(&bt, 0, sizeof(bt));
    int rc = 0;
    const char *dir = NULL;
    char *source = NULL;
    if (blueprint_file) {
        rc = read_blueprint(&bt, blueprint_file, err);
        if (rc == 0 && write_blueprint_tree(&bt) < 0) {
            rc = co_error_wrap("%s", blueprint_file);
        }
        if (rc == 0) {
            dir = bt.dir;
            source = co_xasprintf("%s: Blueprint \"%s\"", blueprint_file, bt.ref);
        }
    } else {
        dir = argv[next];
        source = co_xstrdup(dir);
    }
    render_args a;
    memset(&a, 0, sizeof(a));
    if (rc == 0) {
        rc = gather_render_args(&a, dir, blueprint_file ? &bt : NULL, component_file, &secret_files,
                                &values_files, &sets, key_dir, &subst_files, &substs);
    }
    struct json_object *server_version = NULL;
    struct json_object *api_resources = NULL;
    if (rc == 0 && kube_version) {
        rc = kube_version_info(&server_version, kube_version);
    }
    if (rc == 0 && api_versions.len > 0) {
        rc = api_resource_lists(&api_resources, &api_versions);
    }
    struct stat st;
    if (rc == 0 && (stat(a.dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        rc = co_error_set(CO_ENOTFOUND, "%s: not a directory", a.dir);
    }
    struct json_object *objects = NULL;
    if (rc == 0) {
        const char *base = bt.bp ? bt.bp->name : ctl_cli__base_name(dir);
        co_render_input in;
        memset(&in, 0, sizeof(in));
        in.dir = a.dir;
        in.namespace = ns ? ns : a.ns ? a.ns : "default";
        in.name = name ? name : a.name ? a.name : base;
        in.component = a.component;
        in.revision = revision;
        in.values = a.values;
        in.kube_version = kube_version;
        in.api_versions = api_versions.items;
        in.n_api_versions = api_versions.len;
        in.server_version = server_version;
        in.api_resources = api_resources;
        in.release_service = release_service;
        in.keys = co_sops_keys_count(a.keys) > 0 ? a.keys : NULL;
        in.post_build = a.post_build;
        in.substitutions = json_object_object_length(a.substitutions) > 0 ? a.substitutions : NULL;
        in.flags = no_hook_mapping ? CO_RENDER_NO_HOOK_MAPPING : 0u;
        /* helm template's view without a cluster: its default API versions, the flags' after */
        in.helm_flags = CO_HELM_DEFAULT_API_VERSIONS;
        /* as helm template, only --include-crds decides there; --skip-crds, an install
         * option, changes nothing in its output */
        if (no_hook_mapping ? !include_crds : skip_crds) {
            in.helm_flags |= CO_HELM_SKIP_CRDS;
        }
        in.helm_flags |= (skip_tests ? (unsigned)CO_HELM_SKIP_TESTS : 0u) |
                         (no_hooks ? (unsigned)CO_HELM_NO_HOOKS : 0u);
        rc = co_render(&objects, &in);
        if (rc < 0) {
            rc = co_error_wrap("%s", source);
        }
    }
    if (rc == 0) {
        rc = ctl_cli__print_objects(out, objects, fmt);
    }
    if (rc < 0) {
        fprintf(err, "component-controller render: %s\n", co_error_last());
    }
    if (blueprint_tree_dispose(&bt) < 0) {
        fprintf(err, "component-controller render: %s\n", co_error_last());
        rc = CO_ERROR;
    }
    json_object_put(objects);
    json_object_put(server_version);
    json_object_put(api_resources);
    render_args_dispose(&a);
    free(source);
    for (size_t i = 0; i < CO_ARRAY_SIZE(lists); i++) {
        co_flag_list_dispose(lists[i]);
    }
    return rc < 0 ? EXIT_BAD_INPUT : 0;
}
