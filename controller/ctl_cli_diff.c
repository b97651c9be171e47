/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `component-controller diff` and `plan` (docs/preview.md): a Component rendered as the
 * controller renders it (ctl_render_component(), with the caller's kubeconfig for Secrets,
 * discovery and sources), its objects prepared, merged into a copy of its inventory and ordered
 * by the apply engine's own functions (ctl_inventory.h), then written to the API server with
 * dryRun=All the way ctl_apply() writes them (field manager, force, server-side apply or PUT per
 * update policy). `diff` prints a unified diff per object and the objects that would be deleted;
 * `plan` prints the same objects as the engine's waves. Nothing is ever persisted.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2.h>
#include <json-c/json.h>

#include "co/api/component.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/source/archive.h"
#include "co/source/source.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/json/yaml.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_cli_int.h"
#include "controller/ctl_inventory.h"
#include "controller/ctl_reconcile.h"
#include "controller/ctl_render.h"

/* Exit statuses, as kubectl diff's. */
enum { EXIT_NO_CHANGE = 0, EXIT_CHANGES = 1, EXIT_ERROR = 2 };

/* kubectl apply keeps the whole object it applied, Secret values in clear, in this annotation */
#define KUBECTL_LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"

/* ---- pure parts: cleaning, hashing, text, diff -------------------------------------------- */

/* metadata fields the API server sets, left out of every comparison */
static const char *const SERVER_FIELDS[] = {
    "managedFields",     "resourceVersion",   "uid",      "generation",
    "creationTimestamp", "deletionTimestamp", "selfLink", NULL,
};

static bool is_secret(const struct json_object *obj)
{
    const char *kind = co_json_str(obj, "kind", NULL);
    const char *api = co_json_str(obj, "apiVersion", NULL);
    return kind && api && strcmp(kind, "Secret") == 0 && strcmp(api, "v1") == 0;
}

/* "sha256:<hex>" of @p bytes. */
static struct json_object *hashed_value(const void *bytes, size_t len)
{
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, bytes, len);
    char text[CO_SHA256_HEX_LEN + 8];
    snprintf(text, sizeof(text), "sha256:%s", hex);
    return json_object_new_string(text);
}

/* Replaces each value of the map @p field of a Secret by the hash of its bytes (data decoded
 * from base64; a value that does not decode is hashed as it is). */
static void hash_map(struct json_object *secret, const char *field, bool base64)
{
    struct json_object *map = co_json_get(secret, field, NULL);
    if (!json_object_is_type(map, json_type_object)) {
        if (map) {
            json_object_object_del(secret, field);
        }
        return;
    }
    json_object_object_foreach (map, key, val) {
        const char *s =
            json_object_is_type(val, json_type_string) ? json_object_get_string(val) : "";
        size_t len = strlen(s);
        struct json_object *h = NULL;
        co_buf b = CO_BUF_INIT(CO_MAX_DOCUMENT);
        if (base64 && co_base64_decode(&b, s, len, CO_BASE64_STD) == 0) {
            h = hashed_value(b.ptr ? b.ptr : "", b.len);
        } else {
            co_error_clear();
            h = hashed_value(s, len);
        }
        co_buf_dispose(&b);
        json_object_object_add(map, key, h);
    }
}

void ctl_cli__preview_clean(struct json_object *obj)
{
    if (!json_object_is_type(obj, json_type_object)) {
        return;
    }
    struct json_object *meta = co_json_get(obj, "metadata", NULL);
    if (json_object_is_type(meta, json_type_object)) {
        for (size_t i = 0; SERVER_FIELDS[i]; i++) {
            json_object_object_del(meta, SERVER_FIELDS[i]);
        }
    }
    /* the controller never writes a dependent's status */
    json_object_object_del(obj, "status");
    if (is_secret(obj)) {
        hash_map(obj, "data", true);
        hash_map(obj, "stringData", false);
        struct json_object *ann = co_json_get(meta, "annotations", NULL);
        struct json_object *last = co_json_get(ann, KUBECTL_LAST_APPLIED, NULL);
        if (last) {
            const char *s = json_object_get_string(last);
            json_object_object_add(ann, KUBECTL_LAST_APPLIED,
                                   hashed_value(s ? s : "", s ? strlen(s) : 0));
        }
    }
}

char *ctl_cli__preview_text(const struct json_object *obj)
{
    if (!obj) {
        return co_xstrdup("");
    }
    char *text = co_yaml_dumps(obj, CO_YAML_SORTED);
    return text ? text : co_xstrdup("");
}

typedef struct colours {
    const char *header, *del, *add, *hunk, *reset;
} colours;

static const colours NO_COLOURS = {"", "", "", "", ""};
static const colours ANSI_COLOURS = {"\033[1m", "\033[31m", "\033[32m", "\033[36m", "\033[0m"};

/* Appends @p text (lines of a unified diff) to @p out, coloured per line with @p c. */
static void colour_lines(co_buf *out, const char *text, const colours *c)
{
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        const char *on = "";
        if (!strncmp(p, "---", 3) || !strncmp(p, "+++", 3) || !strncmp(p, "diff ", 5)) {
            on = c->header;
        } else if (p[0] == '-') {
            on = c->del;
        } else if (p[0] == '+') {
            on = c->add;
        } else if (!strncmp(p, "@@", 2)) {
            on = c->hunk;
        }
        CO_ASSERT(co_buf_puts(out, on) == 0);
        bool has_nl = len > 0 && p[len - 1] == '\n';
        CO_ASSERT(co_buf_put(out, p, has_nl ? len - 1 : len) == 0);
        CO_ASSERT(co_buf_puts(out, *on ? c->reset : "") == 0);
        if (has_nl) {
            CO_ASSERT(co_buf_putc(out, '\n') == 0);
        }
        p += len;
    }
}

int ctl_cli__unified_diff(char **out,
                          const char *old_text,
                          const char *new_text,
                          const char *old_label,
                          const char *new_label,
                          bool colour)
{
    if (strcmp(old_text, new_text) == 0) {
        *out = NULL;
        return 0;
    }
    if (git_libgit2_init() < 0) {
        return co_error_set(CO_ERROR, "libgit2: initialisation failed");
    }
    git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
    opts.context_lines = 3;
    opts.old_prefix = "";
    opts.new_prefix = "";
    git_patch *patch = NULL;
    git_buf buf = GIT_BUF_INIT;
    int rc = git_patch_from_buffers(&patch, old_text, strlen(old_text), old_label, new_text,
                                    strlen(new_text), new_label, &opts);
    if (rc == 0) {
        rc = git_patch_to_buf(&buf, patch);
    }
    if (rc < 0) {
        const git_error *ge = git_error_last();
        rc = co_error_set(CO_ERROR, "diff: %s", ge && ge->message ? ge->message : "failed");
    } else {
        /* git's extended header ("diff --git", "index" lines) speaks of a repository: the
         * unified diff starts at its "---" line */
        const char *text = buf.ptr ? buf.ptr : "";
        const char *start = !strncmp(text, "--- ", 4) ? text : strstr(text, "\n--- ");
        text = start ? start + (*start == '\n') : text;
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        colour_lines(&b, text, colour ? &ANSI_COLOURS : &NO_COLOURS);
        *out = co_buf_take(&b, NULL);
    }
    git_buf_dispose(&buf);
    git_patch_free(patch);
    git_libgit2_shutdown();
    return rc < 0 ? rc : 0;
}

/* ---- the preview ---------------------------------------------------------------------------- */

typedef enum change_kind {
    CHANGE_NONE = 0, /* the dry run leaves the object as it is */
    CHANGE_CREATE,   /* absent: created */
    CHANGE_UPDATE,   /* present: changed */
    CHANGE_NOT_WRITTEN,
} change_kind;

typedef struct entry {
    const ctl_obj *o; /* borrowed from the set */
    change_kind change;
    char *note; /* why the result is what it is, or NULL */
    char *diff; /* unified diff, or NULL when nothing changes */
} entry;

typedef struct removal {
    const ctl_item *it; /* borrowed from the merged inventory */
    const char *why;    /* what the controller does instead of deleting, or NULL */
} removal;

typedef struct preview_args {
    const char *kubeconfig;
    const char *context;
    const char *file; /* -f COMPONENT.yaml, or NULL */
    const char *ref;  /* NAMESPACE/NAME, or NULL */
    const char *dir;  /* a local directory in place of the source, or NULL */
    bool colour;
} preview_args;

typedef struct preview {
    co_kube_client *client;
    struct json_object *component; /* the Component rendered */
    co_component *c;
    struct json_object *live; /* the Component as stored, or NULL */
    char *ns, *name;
    char *owner_id, *hashed;
    struct json_object *values;
    char *digest;
    co_sources *sources;
    co_source_tree *tree;
    char *cache_dir;
    char *dir, *root;
    int64_t revision;
    struct json_object *objects;
    ctl_objset set;
    ctl_inventory old_inv; /* status.inventory as stored */
    ctl_inventory inv;     /* the same merged with the rendered set, as ctl_apply() merges */
    entry *entries;        /* one per object of the set, in apply order */
    removal *removals;
    size_t nremovals;
} preview;

static void preview_dispose(preview *p)
{
    for (size_t i = 0; p->entries && i < p->set.len; i++) {
        free(p->entries[i].note);
        free(p->entries[i].diff);
    }
    free(p->entries);
    free(p->removals);
    ctl_objset_dispose(&p->set);
    ctl_inventory_dispose(&p->inv);
    ctl_inventory_dispose(&p->old_inv);
    json_object_put(p->objects);
    co_source_tree_release(p->tree);
    co_sources_free(p->sources);
    if (p->cache_dir && co_archive_remove_tree(p->cache_dir) < 0) {
        co_error_clear();
    }
    free(p->cache_dir);
    free(p->dir);
    free(p->root);
    free(p->digest);
    json_object_put(p->values);
    free(p->owner_id);
    free(p->hashed);
    free(p->ns);
    free(p->name);
    json_object_put(p->live);
    co_component_free(p->c);
    json_object_put(p->component);
    co_kube_client_free(p->client);
    memset(p, 0, sizeof(*p));
}

static int open_client(preview *p, const preview_args *a)
{
    co_kube_config *cfg = NULL;
    int rc = co_kube_config_load(&cfg, a->kubeconfig, a->context);
    if (rc < 0) {
        return co_error_wrap("%s", a->kubeconfig);
    }
    co_kube_client_options opts = CO_KUBE_CLIENT_OPTIONS_INIT;
    opts.max_retries = 2;
    rc = co_kube_client_new(&p->client, cfg, &opts);
    co_kube_config_free(cfg);
    return rc;
}

/* The Component of -f: exactly one, valid as the webhook admits it; placed in "default"
 * without a namespace. */
static int read_component_file(preview *p, const char *path, FILE *err)
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
    struct json_object *obj = l.items[0].obj;
    if (!co_json_meta_namespace(obj) || !*co_json_meta_namespace(obj)) {
        CO_ASSERT(co_json_set(obj, json_object_new_string("default"), "metadata", "namespace",
                              NULL) == 0);
    }
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    if (co_component_validate(&errs, obj, NULL, 0) < 0) {
        const char *n = co_json_meta_name(obj);
        char *what = co_xasprintf("Component \"%s\"", n ? n : "");
        rc = ctl_cli__print_field_errors(err, &l.items[0], what, &errs);
        free(what);
        if (rc == 0) {
            rc = co_error_set(CO_EINVALID, "%s: not a valid Component", path);
        }
    }
    co_field_errors_dispose(&errs);
    if (rc == 0) {
        p->component = json_object_get(obj);
    }
    ctl_cli__manifests_dispose(&l);
    return rc;
}

static int read_live_component(preview *p, const char *ns, const char *name, bool required)
{
    co_kube_ref ref = {CO_COMPONENT_V1ALPHA1, CO_COMPONENT_KIND, ns, name};
    int rc = co_kube_get(&p->live, p->client, &ref, NULL);
    if ((rc == CO_ENOTFOUND || rc == CO_ENOMATCH) && !required) {
        co_error_clear();
        p->live = NULL;
        return 0;
    }
    if (rc == CO_ENOTFOUND || rc == CO_ENOMATCH) {
        return co_error_set(CO_ENOTFOUND, "Component %s/%s not found", ns, name);
    }
    if (rc < 0) {
        return co_error_wrap("reading Component %s/%s", ns, name);
    }
    return 0;
}

/* The Component to render and, when it is stored, the stored one (its inventory). */
static int load_component(preview *p, const preview_args *a, FILE *err)
{
    int rc = 0;
    if (a->file) {
        if ((rc = read_component_file(p, a->file, err)) < 0) {
            return rc;
        }
        p->ns = co_xstrdup(co_json_meta_namespace(p->component));
        const char *n = co_json_meta_name(p->component);
        p->name = co_xstrdup(n ? n : "");
        rc = read_live_component(p, p->ns, p->name, false);
    } else {
        const char *slash = strchr(a->ref, '/');
        if (!slash || slash == a->ref || !slash[1] || strchr(slash + 1, '/')) {
            return co_error_set(CO_EINVALID, "%s: expected NAMESPACE/NAME", a->ref);
        }
        p->ns = co_xstrndup(a->ref, (size_t)(slash - a->ref));
        p->name = co_xstrdup(slash + 1);
        rc = read_live_component(p, p->ns, p->name, true);
        if (rc == 0) {
            p->component = json_object_get(p->live);
        }
    }
    if (rc == 0 && (rc = co_component_parse(&p->c, p->component)) < 0) {
        rc = co_error_wrap("Component %s/%s", p->ns, p->name);
    }
    return rc;
}

/* One key of a Secret of the Component's namespace, decoded (the reconciler's reading:
 * data only, the key or the first of @p fallbacks present). */
static int secret_key(preview *p,
                      co_buf *out,
                      const char *what,
                      const char *name,
                      const char *key,
                      const char *const *fallbacks)
{
    co_kube_ref ref = {"v1", "Secret", p->ns, name};
    struct json_object *s = NULL;
    int rc = co_kube_get(&s, p->client, &ref, NULL);
    if (rc < 0) {
        return co_error_wrap("%s: secret %s/%s", what, p->ns, name);
    }
    rc = CO_ENOTFOUND;
    for (size_t i = 0; rc == CO_ENOTFOUND && (key ? i == 0 : fallbacks[i] != NULL); i++) {
        const char *b64 = co_json_str(s, "data", key ? key : fallbacks[i], NULL);
        if (b64) {
            rc = co_base64_decode(out, b64, strlen(b64), 0);
        }
    }
    json_object_put(s);
    if (rc == CO_ENOTFOUND) {
        return co_error_set(CO_ENOTFOUND, "%s: key %s not found in secret %s/%s", what,
                            key ? key : "values(.yaml|.yml)", p->ns, name);
    }
    if (rc < 0) {
        return co_error_wrap("%s: secret %s/%s", what, p->ns, name);
    }
    return 0;
}

static void add_ref(struct json_object *refs, const char *key, const char *digest)
{
    json_object_object_add(refs, key, json_object_new_string(digest ? digest : ""));
}

/* valuesFrom in order, then spec.values (ctl_values_merge()); the Secrets' digests go to
 * @p refs as the reconciler records them for the Component digest. */
static int load_values(preview *p, struct json_object *refs)
{
    static const char *const VALUES_KEYS[] = {"values", "values.yaml", "values.yml", NULL};
    const co_component_spec *spec = &p->c->spec;
    size_t n = spec->n_values_from;
    struct json_object **docs = co_xcalloc(n + 1, sizeof(struct json_object *));
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char what[64], key[96];
        snprintf(what, sizeof(what), "spec.valuesFrom[%zu]", i);
        co_buf val = CO_BUF_INIT(CO_MAX_DOCUMENT);
        rc = secret_key(p, &val, what, spec->values_from[i].name, spec->values_from[i].key,
                        VALUES_KEYS);
        if (rc == 0) {
            char hex[CO_SHA256_HEX_LEN + 1];
            co_sha256_hex_buf(hex, &val);
            snprintf(key, sizeof(key), "refs:[\"spec\",\"valuesFrom\",%zu]", i);
            add_ref(refs, key, hex);
            if ((rc = co_yaml_parse(&docs[i], co_buf_cstr(&val), val.len, 0)) < 0) {
                rc = co_error_wrap("%s", what);
            }
        }
        co_buf_dispose(&val);
    }
    if (rc == 0) {
        rc = ctl_values_merge(&p->values, docs, n, spec->values);
    }
    for (size_t i = 0; i < n; i++) {
        json_object_put(docs[i]);
    }
    free(docs);
    return rc;
}

/* Adds the digest of the data map of Secret @p name, as the reconciler records it. */
static int add_secret_ref(preview *p, struct json_object *refs, const char *key, const char *name)
{
    co_kube_ref ref = {"v1", "Secret", p->ns, name};
    struct json_object *s = NULL;
    int rc = co_kube_get(&s, p->client, &ref, NULL);
    if (rc < 0) {
        return co_error_wrap("%s: secret %s/%s", key, p->ns, name);
    }
    co_buf b = CO_BUF_INIT(CO_MAX_API_RESPONSE);
    struct json_object *data = co_json_get(s, "data", NULL);
    rc = data ? co_json_encode(&b, data, CO_JSON_CANONICAL) : co_buf_puts(&b, "null");
    if (rc == 0) {
        char hex[CO_SHA256_HEX_LEN + 1];
        co_sha256_hex_buf(hex, &b);
        add_ref(refs, key, hex);
    }
    co_buf_dispose(&b);
    json_object_put(s);
    return rc;
}

/* The digests of the decryption and substituteFrom Secrets; a remote target is refused. */
static int load_secret_refs(preview *p, struct json_object *refs)
{
    const co_component_spec *spec = &p->c->spec;
    if (spec->has_kube_config && spec->kube_config.name) {
        return co_error_set(CO_EUNSUPPORTED,
                            "spec.kubeConfig: a Component deploying to another cluster is not "
                            "previewed (docs/preview.md)");
    }
    int rc = 0;
    if (spec->decryption_secret_name) {
        rc = add_secret_ref(p, refs, "refs:[\"spec\",\"decryption\",\"secretRef\"]",
                            spec->decryption_secret_name);
    }
    for (size_t i = 0; rc == 0 && i < spec->n_substitute_from; i++) {
        char key[96];
        snprintf(key, sizeof(key), "refs:[\"spec\",\"postBuild\",\"substituteFrom\",%zu]", i);
        rc = add_secret_ref(p, refs, key, spec->substitute_from[i] ? spec->substitute_from[i] : "");
    }
    return rc;
}

/* docs/behaviour.md, "Component digest", over the Component rendered. */
static void component_digest(preview *p, struct json_object *refs)
{
    struct json_object *m = json_object_get(refs);
    json_object_object_add(m, "generation", json_object_new_int64(p->c->generation));
    struct json_object *ann = co_json_get(p->component, "metadata", "annotations", NULL);
    json_object_object_add(m, "annotations", ann ? json_object_get(ann) : NULL);
    struct json_object *spec = co_json_get(p->component, "spec", NULL);
    json_object_object_add(m, "spec", spec ? json_object_get(spec) : NULL);
    co_buf b = CO_BUF_INIT(CO_MAX_API_RESPONSE);
    if (co_json_encode(&b, m, CO_JSON_CANONICAL) == 0) {
        char hex[CO_SHA256_HEX_LEN + 1];
        co_sha256_hex_buf(hex, &b);
        p->digest = co_xstrdup(hex);
    } else {
        co_error_clear();
    }
    co_buf_dispose(&b);
    json_object_put(m);
}

static int source_get(void *ctx,
                      const char *api_version,
                      const char *kind,
                      const char *ns,
                      const char *name,
                      struct json_object **out)
{
    preview *p = ctx;
    co_kube_ref ref = {api_version, kind, ns, name};
    return co_kube_get(out, p->client, &ref, NULL);
}

/* The directory to render: DIR joined with spec.path, or the Component's source fetched into a
 * private artifact cache with the caller's credentials, as the controller fetches it. */
static int load_source(preview *p, const preview_args *a, struct json_object *refs)
{
    const char *path = p->c->spec.path ? p->c->spec.path : "";
    if (a->dir) {
        int rc = co_archive_resolve(&p->dir, a->dir, path);
        struct stat st;
        if (rc < 0 || stat(p->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            return co_error_set(CO_ENOTFOUND, "%s: spec.path %s: no such directory", a->dir, path);
        }
        add_ref(refs, "refs:[\"spec\",\"sourceRef\"]", "");
        return 0;
    }
    co_source_spec ref = {0};
    if (p->c->spec.source.kind == CO_SOURCE_NONE) {
        return co_error_set(CO_EINVALID, "spec.sourceRef: required");
    }
    if (p->c->spec.source.kind == CO_SOURCE_BLUEPRINT) {
        return co_error_set(CO_EUNSUPPORTED,
                            "spec.sourceRef.blueprint: give the Blueprint's files as DIR (for "
                            "instance from `component-controller render --blueprint`)");
    }
    int rc = co_source_spec_from_ref(&ref, &p->c->spec.source);
    if (rc < 0) {
        return co_error_wrap("spec.sourceRef");
    }
    const char *tmp = getenv("TMPDIR"); // NOLINT(concurrency-mt-unsafe): no threads yet
    p->cache_dir =
        co_xasprintf("%s/component-controller-diff-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(p->cache_dir)) {
        rc = co_error_set_os(CO_ERROR, "creating a temporary directory %s", p->cache_dir);
        free(p->cache_dir);
        p->cache_dir = NULL;
        return rc;
    }
    co_source_config cfg = {0};
    cfg.cache_dir = p->cache_dir;
    cfg.get = source_get;
    cfg.get_ctx = p;
    if ((rc = co_sources_new(&p->sources, &cfg)) < 0) {
        return rc;
    }
    co_source_artifact art = {0};
    long retry = 0;
    rc = co_source_resolve(p->sources, &ref, p->ns, &art, &retry);
    if (rc == 0) {
        rc = co_source_fetch(p->sources, &ref, p->ns, &art, &p->tree, NULL);
    }
    if (rc == 0) {
        rc = co_source_tree_path(p->tree, path, &p->dir);
    }
    if (rc == 0) {
        p->root = co_xstrdup(co_source_tree_dir(p->tree));
        add_ref(refs, "refs:[\"spec\",\"sourceRef\"]", art.source_digest);
    }
    co_source_artifact_dispose(&art);
    return rc < 0 ? co_error_wrap("spec.sourceRef") : 0;
}

static int scope_cb(int *namespaced, const char *api_version, const char *kind, void *payload)
{
    preview *p = payload;
    co_kube_mapping m = {0};
    int rc = co_kube_client_mapping(&m, p->client, api_version, kind);
    if (rc < 0) {
        return rc;
    }
    *namespaced = m.namespaced ? 1 : 0;
    co_kube_mapping_dispose(&m);
    return 0;
}

/* Renders, prepares and orders the objects, and merges them into a copy of the inventory. */
static int render_and_order(preview *p)
{
    ctl_render_request rq = {0};
    rq.dir = p->dir;
    rq.root = p->root;
    rq.component = p->c;
    rq.object = p->component;
    rq.values = p->values;
    rq.component_digest = p->digest;
    rq.revision = p->revision;
    rq.local = p->client;
    rq.target = p->client;
    int rc = ctl_render_component(&p->objects, &rq);
    if (rc < 0) {
        return co_error_wrap("error generating manifests");
    }
    ctl_defaults d = {0};
    co_adoption_policy ap = co_component_adoption_policy(p->c);
    co_update_policy up = co_component_update_policy(p->c);
    co_delete_policy dp = co_component_delete_policy(p->c);
    int64_t reapply = co_component_reapply_ns(p->c);
    d.adoption = ap ? ap : CO_COMPONENT_DEFAULT_ADOPTION;
    d.update = up ? up : CO_COMPONENT_DEFAULT_UPDATE;
    d.delete_policy = dp ? dp : CO_COMPONENT_DEFAULT_DELETE;
    d.reapply_ns = reapply > 0 ? reapply : CO_COMPONENT_DEFAULT_REAPPLY_NS;
    d.namespace = co_component_target_namespace(p->c);
    d.component_digest = p->digest ? p->digest : "";
    if ((rc = ctl_objset_prepare(&p->set, p->objects, &d, scope_cb, p)) < 0) {
        return rc;
    }
    struct json_object *inv = NULL;
    if (co_component_inventory_get(&inv, co_json_get(p->live, "status", NULL)) < 0) {
        return co_error_wrap("Component %s/%s", p->ns, p->name);
    }
    rc = ctl_inventory_read(&p->old_inv, inv);
    if (rc == 0) {
        rc = ctl_inventory_read(&p->inv, inv);
    }
    json_object_put(inv);
    if (rc < 0) {
        return co_error_wrap("Component %s/%s: status.inventory", p->ns, p->name);
    }
    size_t added = 0;
    if ((rc = ctl_inventory_update(&added, &p->inv, &p->set, p->hashed, NULL, NULL, NULL)) < 0) {
        return rc;
    }
    ctl_objset_sort_for_apply(&p->set);
    return 0;
}

/* Whether ctl_apply() writes @p o by server-side apply (its use_ssa()). */
static bool writes_by_ssa(const ctl_obj *o)
{
    return (o->update == CO_UPDATE_SSA_MERGE || o->update == CO_UPDATE_SSA_OVERRIDE) &&
           !ctl_is_apiservice(o->group, o->kind);
}

static void add_string(struct json_object *obj, const char *field, const char *key, const char *v)
{
    CO_ASSERT(co_json_set(obj, json_object_new_string(v), "metadata", field, key, NULL) == 0);
}

static void add_finalizer(struct json_object *obj, const char *f)
{
    struct json_object *meta = co_json_get(obj, "metadata", NULL);
    struct json_object *list = co_json_get(meta, "finalizers", NULL);
    if (!json_object_is_type(list, json_type_array)) {
        list = json_object_new_array();
        json_object_object_add(meta, "finalizers", list);
    }
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(list, i));
        if (s && !strcmp(s, f)) {
            return;
        }
    }
    json_object_array_add(list, json_object_new_string(f));
}

/* The object as ctl_apply() sends it: owner marks and digest, our finalizer on CRDs and
 * APIServices, for PUT the live finalizers and resourceVersion. */
static struct json_object *
to_send(const preview *p, const ctl_obj *o, const struct json_object *live)
{
    struct json_object *obj = co_json_copy(o->manifest);
    add_string(obj, "labels", CTL_LABEL_OWNER_ID, p->hashed);
    add_string(obj, "annotations", CTL_ANN_OWNER_ID, p->owner_id);
    add_string(obj, "annotations", CTL_ANN_DIGEST, o->digest);
    json_object_object_del(co_json_get(obj, "metadata", NULL), "managedFields");
    if (ctl_is_crd(o->group, o->kind) || ctl_is_apiservice(o->group, o->kind)) {
        add_finalizer(obj, CTL_FINALIZER);
    }
    if (live && !writes_by_ssa(o)) {
        struct json_object *fins = co_json_get(live, "metadata", "finalizers", NULL);
        for (size_t i = 0;
             json_object_is_type(fins, json_type_array) && i < json_object_array_length(fins);
             i++) {
            const char *f = json_object_get_string(json_object_array_get_idx(fins, i));
            if (f) {
                add_finalizer(obj, f);
            }
        }
    }
    const char *rv = co_json_str(live, "metadata", "resourceVersion", NULL);
    if (rv) {
        add_string(obj, "resourceVersion", NULL, rv);
    }
    return obj;
}

static char *path_label(const char *side, const ctl_obj *o)
{
    char *av = ctl_api_version(o->group, o->version);
    char *s = *o->namespace
                  ? co_xasprintf("%s/%s/%s/%s/%s", side, av, o->kind, o->namespace, o->name)
                  : co_xasprintf("%s/%s/%s/%s", side, av, o->kind, o->name);
    free(av);
    return s;
}

/* Dry-runs one object and records its diff. */
static int preview_one(preview *p, entry *en, bool colour)
{
    const ctl_obj *o = en->o;
    char *av = ctl_api_version(o->group, o->version);
    co_kube_ref ref = {av, o->kind, *o->namespace ? o->namespace : NULL, o->name};
    struct json_object *live = NULL, *result = NULL, *sent = NULL;
    int rc = co_kube_get(&live, p->client, &ref, NULL);
    bool unserved = rc == CO_ENOMATCH;
    if (rc == CO_ENOTFOUND || rc == CO_ENOMATCH) {
        co_error_clear();
        live = NULL;
        rc = 0;
    }
    if (rc < 0) {
        char *key = ctl_obj_key(o);
        rc = co_error_wrap("error reading object %s", key);
        free(key);
        goto done;
    }
    if (o->mode != CO_MODE_MANAGED) {
        en->change = CHANGE_NOT_WRITTEN;
        en->note = co_xasprintf("mode %s: only %s, never written", co_object_mode_name(o->mode),
                                o->mode == CO_MODE_READ_ONLY ? "read" : "deleted");
        goto done;
    }
    if (live && !ctl_inventory_find(&p->old_inv, o) && ctl_adoption_check(o, live, p->hashed) < 0) {
        en->note = co_xasprintf("the controller would refuse it: %s", co_error_last());
        co_error_clear();
    }
    sent = to_send(p, o, live);
    co_kube_write_options wo = {0};
    wo.dry_run = 1;
    wo.field_manager = CTL_FIELD_MANAGER;
    if (unserved) {
        rc = CO_ENOMATCH;
    } else if (!live) {
        rc = writes_by_ssa(o) ? co_kube_apply(&result, p->client, sent, &wo)
                              : co_kube_create(&result, p->client, sent, &wo);
    } else if (writes_by_ssa(o) && o->update != CO_UPDATE_RECREATE) {
        wo.force = 1;
        rc = co_kube_apply(&result, p->client, sent, &wo);
    } else {
        rc = co_kube_update(&result, p->client, sent, &wo);
    }
    if (rc == CO_ENOMATCH || (!live && rc == CO_ENOTFOUND)) {
        /* its type or namespace is created by the same pass: what is sent stands in */
        free(en->note);
        en->note =
            co_xstrdup(rc == CO_ENOMATCH ? "its type is not served yet: shown as rendered"
                                         : "its namespace does not exist yet: shown as rendered");
        co_error_clear();
        json_object_put(result);
        result = json_object_get(sent);
        json_object_object_del(co_json_get(result, "metadata", NULL), "resourceVersion");
        rc = 0;
    }
    if (rc < 0) {
        char *key = ctl_obj_key(o);
        rc = co_error_wrap("dry run of %s", key);
        free(key);
        goto done;
    }
    ctl_cli__preview_clean(live);
    ctl_cli__preview_clean(result);
    char *before = ctl_cli__preview_text(live);
    char *after = ctl_cli__preview_text(result);
    char *old_label = path_label("live", o);
    char *new_label = path_label("applied", o);
    rc = ctl_cli__unified_diff(&en->diff, before, after, old_label, new_label, colour);
    en->change = !en->diff ? CHANGE_NONE : live ? CHANGE_UPDATE : CHANGE_CREATE;
    if (en->change == CHANGE_UPDATE && o->update == CO_UPDATE_RECREATE) {
        free(en->note);
        en->note = co_xstrdup("update policy Recreate: deleted, then created again");
    }
    free(old_label);
    free(new_label);
    free(before);
    free(after);
done:
    free(av);
    json_object_put(live);
    json_object_put(result);
    json_object_put(sent);
    return rc;
}

static bool item_managed(const ctl_inventory *inv, const co_component *c, const ctl_item *it)
{
    const co_type_info *extra = c ? c->spec.additional_managed_types : NULL;
    size_t nextra = c ? c->spec.n_additional_managed_types : 0;
    return ctl_is_managed_instance(extra, nextra, inv, it->group, it->version, it->kind);
}

static bool item_obsolete(const ctl_item *it)
{
    return it->phase == CTL_PHASE_SCHEDULED_FOR_DELETION || it->phase == CTL_PHASE_DELETING;
}

/* The indexes of the items of @p inv (sorted for delete) in the order deletion_waves() of
 * ctl_apply.c takes them: by delete order, and within one the managed instances first (the
 * rest of the wave waits for them). Returns how many were written to @p idx. */
static size_t
deletion_walk(size_t *idx, const ctl_inventory *inv, const co_component *c, bool obsolete_only)
{
    size_t n = 0;
    for (size_t k = 0; k < inv->len;) {
        int order = inv->items[k].delete_order;
        size_t end = k;
        while (end < inv->len && inv->items[end].delete_order == order) {
            end++;
        }
        for (int managed = 1; managed >= 0; managed--) {
            for (size_t i = k; i < end; i++) {
                const ctl_item *it = &inv->items[i];
                if ((!obsolete_only || item_obsolete(it)) &&
                    item_managed(inv, c, it) == (managed == 1)) {
                    idx[n++] = i;
                }
            }
        }
        k = end;
    }
    return n;
}

void ctl_cli__plan_deletions(FILE *out,
                             const ctl_inventory *inv,
                             const co_component *c,
                             bool obsolete_only)
{
    size_t *idx = co_xcalloc(inv->len + 1, sizeof(*idx));
    size_t n = deletion_walk(idx, inv, c, obsolete_only);
    for (size_t j = 0; j < n; j++) {
        const ctl_item *it = &inv->items[idx[j]];
        if (j == 0 || inv->items[idx[j - 1]].delete_order != it->delete_order) {
            fprintf(out, "  delete-order %d\n", it->delete_order);
        }
        char *key = ctl_item_key(it);
        fprintf(out, "    - %s  delete=%s%s%s\n", key, co_delete_policy_name(it->delete_policy),
                it->mode != CO_MODE_MANAGED ? " mode=" : "",
                it->mode != CO_MODE_MANAGED ? co_object_mode_name(it->mode) : "");
        free(key);
    }
    if (n == 0) {
        fprintf(out, "  (none)\n");
    }
    free(idx);
}

/* The items of the merged inventory that no object matches (ctl_inventory_update() scheduled
 * them for deletion), in the order of the delete waves, as far as they still exist. */
static int find_removals(preview *p)
{
    p->removals = co_xcalloc(p->inv.len + 1, sizeof(*p->removals));
    size_t *idx = co_xcalloc(p->inv.len + 1, sizeof(*idx));
    size_t n = deletion_walk(idx, &p->inv, p->c, true);
    int rc = 0;
    for (size_t j = 0; rc == 0 && j < n; j++) {
        const ctl_item *it = &p->inv.items[idx[j]];
        char *av = ctl_api_version(it->group, it->version);
        co_kube_ref ref = {av, it->kind, *it->namespace ? it->namespace : NULL, it->name};
        struct json_object *live = NULL;
        rc = co_kube_get(&live, p->client, &ref, NULL);
        free(av);
        if (rc == CO_ENOTFOUND || rc == CO_ENOMATCH) {
            co_error_clear();
            rc = 0;
            continue;
        }
        if (rc < 0) {
            char *key = ctl_item_key(it);
            rc = co_error_wrap("error reading object %s", key);
            free(key);
            break;
        }
        const char *owner = co_json_meta_label(live, CTL_LABEL_OWNER_ID);
        removal *r = &p->removals[p->nremovals++];
        r->it = it;
        if (it->mode != CO_MODE_MANAGED) {
            r->why = "left in place (object mode)";
        } else if (it->delete_policy == CO_DELETE_ORPHAN ||
                   it->delete_policy == CO_DELETE_ORPHAN_ON_APPLY) {
            r->why = "orphaned (delete policy)";
        } else if (!owner || strcmp(owner, p->hashed) != 0) {
            r->why = "orphaned (owned by someone else)";
        }
        json_object_put(live);
    }
    free(idx);
    return rc;
}

static int preview_run(preview *p, const preview_args *a, FILE *err)
{
    int rc = open_client(p, a);
    if (rc == 0) {
        rc = load_component(p, a, err);
    }
    char *cluster_id = NULL;
    if (rc == 0 && (rc = ctl_apply_cluster_id(&cluster_id, p->client)) == 0) {
        p->owner_id = ctl_owner_id(cluster_id, p->ns, p->name);
        p->hashed = ctl_hash_owner_id(p->owner_id);
        free(cluster_id);
    }
    struct json_object *refs = json_object_new_object();
    if (rc == 0) {
        rc = load_values(p, refs);
    }
    if (rc == 0) {
        rc = load_secret_refs(p, refs);
    }
    if (rc == 0) {
        rc = load_source(p, a, refs);
    }
    if (rc == 0) {
        component_digest(p, refs);
        /* the stored Component's revision: a -f file has no status */
        int64_t revision = 0;
        if (co_json_get_int64(&revision, p->live, "status", "revision", NULL) < 0) {
            co_error_clear();
            revision = 0;
        }
        p->revision = revision > 0 ? revision : 1;
        rc = render_and_order(p);
    }
    json_object_put(refs);
    if (rc < 0) {
        return rc;
    }
    p->entries = co_xcalloc(p->set.len + 1, sizeof(*p->entries));
    for (size_t i = 0; rc == 0 && i < p->set.len; i++) {
        p->entries[i].o = &p->set.objs[i];
        rc = preview_one(p, &p->entries[i], a->colour);
    }
    if (rc == 0) {
        rc = find_removals(p);
    }
    return rc;
}

static bool has_changes(const preview *p)
{
    for (size_t i = 0; i < p->set.len; i++) {
        if (p->entries[i].change == CHANGE_CREATE || p->entries[i].change == CHANGE_UPDATE) {
            return true;
        }
    }
    return p->nremovals > 0;
}

/* ---- output --------------------------------------------------------------------------------- */

static void print_diff(FILE *out, const preview *p)
{
    for (size_t i = 0; i < p->set.len; i++) {
        const entry *en = &p->entries[i];
        if (en->note) {
            char *key = ctl_obj_key(en->o);
            fprintf(out, "# %s: %s\n", key, en->note);
            free(key);
        }
        if (en->diff) {
            fputs(en->diff, out);
        }
    }
    if (p->nremovals == 0) {
        return;
    }
    fprintf(out, "# no longer rendered, in the order of the delete waves:\n");
    for (size_t i = 0; i < p->nremovals; i++) {
        char *key = ctl_item_key(p->removals[i].it);
        fprintf(out, "%s %s%s%s\n", p->removals[i].why ? "~" : "-", key,
                p->removals[i].why ? ": " : ": deleted",
                p->removals[i].why ? p->removals[i].why : "");
        free(key);
    }
}

static const char *change_mark(change_kind k)
{
    switch (k) {
    case CHANGE_CREATE:
        return "+";
    case CHANGE_UPDATE:
        return "~";
    case CHANGE_NOT_WRITTEN:
        return "?";
    case CHANGE_NONE:
    default:
        return "=";
    }
}

static const char *change_word(change_kind k)
{
    switch (k) {
    case CHANGE_CREATE:
        return "create";
    case CHANGE_UPDATE:
        return "update";
    case CHANGE_NOT_WRITTEN:
        return "not written";
    case CHANGE_NONE:
    default:
        return "unchanged";
    }
}

static void plan_object(FILE *out, const ctl_obj *o, const char *mark, const char *word)
{
    char *key = ctl_obj_key(o);
    fprintf(out, "    %s %s  [%s] update=%s delete=%s reconcile=%s", mark, key, word,
            co_update_policy_name(o->update), co_delete_policy_name(o->delete_policy),
            ctl_reconcile_policy_name(o->reconcile));
    if (o->mode != CO_MODE_MANAGED) {
        fprintf(out, " mode=%s", co_object_mode_name(o->mode));
    }
    if (o->auxiliary) {
        fprintf(out, " participation=auxiliary");
    }
    if (o->purge_order != CTL_NO_PURGE) {
        fprintf(out, " purge-order=%d", o->purge_order);
    }
    if (o->guard.name) {
        fprintf(out, " guard");
    }
    const char *hook = co_json_meta_annotation(o->manifest, "helm.sh/hook");
    if (hook) {
        fprintf(out, " hook=%s", hook);
    }
    fputc('\n', out);
    free(key);
}

/* Which stage of its wave an object is applied in (docs/behaviour.md, "Apply waves"): regular
 * objects, then APIServices, then managed instances. */
static int
stage_of(const ctl_objset *set, const ctl_inventory *inv, const co_component *c, size_t i)
{
    const ctl_obj *o = &set->objs[i];
    if (ctl_is_apiservice(o->group, o->kind)) {
        return 1;
    }
    const co_type_info *extra = c ? c->spec.additional_managed_types : NULL;
    size_t nextra = c ? c->spec.n_additional_managed_types : 0;
    return ctl_is_managed_instance(extra, nextra, inv, o->group, o->version, o->kind) ? 2 : 0;
}

void ctl_cli__plan_waves(FILE *out,
                         const ctl_objset *set,
                         const ctl_inventory *inv,
                         const co_component *c,
                         const char *const *marks,
                         const char *const *words)
{
    static const char *const STAGES[] = {
        NULL,
        "then, once the objects above are ready: APIServices",
        "then, once the objects above are ready: instances of managed types",
    };
    size_t wave = 0;
    for (size_t k = 0; k < set->len;) {
        int order = set->objs[k].apply_order;
        size_t end = k;
        while (end < set->len && set->objs[end].apply_order == order) {
            end++;
        }
        fprintf(out, "wave %zu (apply-order %d)\n", ++wave, order);
        for (int stage = 0; stage < 3; stage++) {
            bool first = true;
            for (size_t i = k; i < end; i++) {
                if (stage_of(set, inv, c, i) != stage) {
                    continue;
                }
                if (first && STAGES[stage]) {
                    fprintf(out, "  %s\n", STAGES[stage]);
                }
                first = false;
                plan_object(out, &set->objs[i], marks ? marks[i] : "-",
                            words ? words[i] : "planned");
            }
        }
        /* apply_waves(): at the end of a ready wave, the objects so far whose purge order is
         * at most its apply order are purged; after the last wave, every one with a purge order */
        bool last = end == set->len, first = true;
        for (size_t j = 0; j < end; j++) {
            const ctl_obj *x = &set->objs[j];
            bool due = x->purge_order != CTL_NO_PURGE && (last || x->purge_order <= order) &&
                       !(j < k && x->purge_order <= set->objs[k - 1].apply_order);
            if (due) {
                if (first) {
                    fprintf(out, "  purged once this wave is ready:\n");
                }
                first = false;
                char *key = ctl_obj_key(x);
                fprintf(out, "    - %s (purge-order %d)\n", key, x->purge_order);
                free(key);
            }
        }
        k = end;
    }
}

static void print_plan(FILE *out, const preview *p)
{
    size_t n = p->set.len;
    const char **marks = co_xcalloc(n + 1, sizeof(*marks));
    const char **words = co_xcalloc(n + 1, sizeof(*words));
    size_t counts[4] = {0};
    for (size_t i = 0; i < n; i++) {
        marks[i] = change_mark(p->entries[i].change);
        words[i] = change_word(p->entries[i].change);
        counts[p->entries[i].change]++;
    }
    fprintf(out,
            "Component %s/%s: %zu objects (%zu to create, %zu to update, %zu unchanged, %zu not "
            "written), %zu to remove\n\n",
            p->ns, p->name, n, counts[CHANGE_CREATE], counts[CHANGE_UPDATE], counts[CHANGE_NONE],
            counts[CHANGE_NOT_WRITTEN], p->nremovals);
    ctl_cli__plan_waves(out, &p->set, &p->inv, p->c, marks, words);
    fprintf(out, "\nthen, once every wave is ready, no longer rendered (delete waves):\n");
    if (p->nremovals == 0) {
        fprintf(out, "  (none)\n");
    }
    for (size_t i = 0; i < p->nremovals; i++) {
        const ctl_item *it = p->removals[i].it;
        if (i == 0 || p->removals[i - 1].it->delete_order != it->delete_order) {
            fprintf(out, "  delete-order %d\n", it->delete_order);
        }
        char *key = ctl_item_key(it);
        fprintf(out, "    - %s  %s\n", key, p->removals[i].why ? p->removals[i].why : "deleted");
        free(key);
    }
    fprintf(out, "\non deletion of the Component (delete waves):\n");
    ctl_cli__plan_deletions(out, &p->inv, p->c, false);
    free(marks);
    free(words);
}

/* ---- the subcommands --------------------------------------------------------------------------
 */

static int run_preview(int argc, char **argv, FILE *out, FILE *err, bool plan)
{
    const subcommand *cmd = ctl_cli__find(plan ? "plan" : "diff");
    const char *kubeconfig = NULL, *context = NULL, *file = NULL, *colour = NULL;
    int help = 0;
    const co_flag flags[] = {
        {"kubeconfig", CO_FLAG_STRING, &kubeconfig, "PATH",
         "the cluster; its credentials read the Secrets and sources and make the dry run "
         "(required)"},
        {"context", CO_FLAG_STRING, &context, "NAME",
         "kubeconfig context (default: its current-context)"},
        {"f", CO_FLAG_STRING, &file, "FILE",
         "the Component from this file (the stored one's inventory, when there is one, tells "
         "what is deleted)"},
        {"filename", CO_FLAG_STRING, &file, "FILE", "same as -f"},
        {"color", CO_FLAG_STRING, &colour, "WHEN",
         "colour the diff: auto (on a terminal; the default), always or never"},
        {"help", CO_FLAG_BOOL, &help, NULL, "print this help and exit"},
    };
    int next = 0;
    int status =
        ctl_cli__parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
    if (status == 0) {
        return 0;
    }
    if (status > 0) {
        return EXIT_ERROR;
    }
    int npos = argc - next;
    const char *usage = NULL;
    if (!kubeconfig) {
        usage = "--kubeconfig PATH is required";
    } else if (file ? npos > 1 : npos < 1 || npos > 2) {
        usage = "expected -f COMPONENT.yaml [DIR] or NAMESPACE/NAME [DIR]";
    } else if (colour && strcmp(colour, "auto") != 0 && strcmp(colour, "always") != 0 &&
               strcmp(colour, "never") != 0) {
        usage = "--color: expected auto, always or never";
    }
    if (usage) {
        fprintf(err, "component-controller %s: %s\n", cmd->name, usage);
        return EXIT_ERROR;
    }
    preview_args a = {0};
    a.kubeconfig = kubeconfig;
    a.context = context;
    a.file = file;
    a.ref = file ? NULL : argv[next];
    a.dir = file ? (npos == 1 ? argv[next] : NULL) : (npos == 2 ? argv[next + 1] : NULL);
    if (colour && !strcmp(colour, "always")) {
        a.colour = true;
    } else if (!colour || !strcmp(colour, "auto")) {
        a.colour = isatty(fileno(out)) != 0;
    }
    preview p;
    memset(&p, 0, sizeof(p));
    int rc = preview_run(&p, &a, err);
    if (rc < 0) {
        fprintf(err, "component-controller %s: %s\n", cmd->name, co_error_last());
        preview_dispose(&p);
        return EXIT_ERROR;
    }
    if (plan) {
        print_plan(out, &p);
    } else {
        print_diff(out, &p);
    }
    status = has_changes(&p) ? EXIT_CHANGES : EXIT_NO_CHANGE;
    preview_dispose(&p);
    return status;
}

int ctl_cli__run_diff(int argc, char **argv, FILE *out, FILE *err)
{
    return run_preview(argc, argv, out, err, false);
}

int ctl_cli__run_plan(int argc, char **argv, FILE *out, FILE *err)
{
    return run_preview(argc, argv, out, err, true);
}
