/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binding of the source seam to co/source.h (see ctl_sources.h).
 */
#include "controller/ctl_sources.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/api/blueprint.h"
#include "co/kube/kube_client.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/util/log.h"
#include "co/util/metrics.h"
#include "co/source/source.h"

struct ctl_sources {
    co_sources *src;
    co_source_poller *poller;
    long http_interval_ms;
    ctl_manager *m;
};

static int cluster_get(void *ctx,
                       const char *api_version,
                       const char *kind,
                       const char *ns,
                       const char *name,
                       struct json_object **out)
{
    ctl_sources *s = ctx;
    if (!s->m) {
        return co_error_set(CO_EUNAVAILABLE, "not connected to a cluster yet");
    }
    return ctl_manager_read(s->m, api_version, kind, ns, name, out);
}

int ctl_sources_new(ctl_sources **out, const char *cache_dir)
{
    ctl_sources *s = co_xcalloc(1, sizeof(*s));
    co_source_config cfg = {0};
    cfg.cache_dir = cache_dir;
    cfg.get = cluster_get;
    cfg.get_ctx = s;
    int rc = co_sources_new(&s->src, &cfg);
    if (rc < 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

static void on_changed(void *ctx, const char *key, const char *digest, const char *revision)
{
    (void)digest;
    (void)revision;
    ctl_sources *s = ctx;
    const char *slash = strchr(key, '/');
    if (s->m && slash) {
        char *ns = co_xstrndup(key, (size_t)(slash - key));
        ctl_manager_enqueue(s->m, ns, slash + 1);
        free(ns);
    }
}

static void on_poll_error(void *ctx, const char *key, int code, const char *message)
{
    (void)ctx;
    co_log(CO_LOG_WARN, "polling source failed", "component", key, "error", co_error_name(code),
           "message", message, NULL);
}

static void unwatch(ctl_sources *s, const char *ns, const char *name)
{
    if (s->poller) {
        char *key = co_xasprintf("%s/%s", ns, name);
        co_source_poller_unwatch(s->poller, key);
        free(key);
    }
}

static void on_release(void *ctx, const char *ns, const char *name)
{
    unwatch(ctx, ns, name);
}

static double polled_gauge(void *payload)
{
    return (double)ctl_sources_polled(payload);
}

void ctl_sources_set_http_interval(ctl_sources *s, long interval_ms)
{
    s->http_interval_ms = interval_ms;
}

int ctl_sources_attach(ctl_sources *s, ctl_manager *m)
{
    s->m = m;
    int rc =
        co_source_poller_new(&s->poller, s->src, s->http_interval_ms, on_changed, on_poll_error, s);
    if (rc < 0) {
        return rc;
    }
    ctl_manager_on_release(m, on_release, s);
    co_metrics_gauge_func(ctl_manager_metrics(m), "component_operator_polled_sources",
                          "HTTP and git sources the poller follows, one per Component.",
                          polled_gauge, s);
    return 0;
}

size_t ctl_sources_polled(ctl_sources *s)
{
    return s->poller ? co_source_poller_len(s->poller) : 0;
}

void ctl_sources_set_leader(ctl_sources *s, int leader)
{
    if (s->poller) {
        co_source_poller_set_leader(s->poller, leader);
    }
}

void ctl_sources_free(ctl_sources *s)
{
    if (!s) {
        return;
    }
    co_source_poller_free(s->poller);
    co_sources_free(s->src);
    free(s);
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

static int parse_ref(co_source_spec *ref, const co_component *component)
{
    if (component->spec.source.kind == CO_SOURCE_NONE) {
        return co_error_set(CO_EINVALID, "spec.sourceRef: required");
    }
    return co_source_spec_from_ref(ref, &component->spec.source);
}

/* ---- blueprint sources (docs/behaviour.md, "Blueprint sources") ---------------------------- */

#define BLUEPRINT_SCHEME "blueprint://"

/* The BlueprintVersion that snapshots @p obj (a Blueprint) as @p bp. */
static json_object *version_of(const json_object *obj, const co_blueprint *bp)
{
    json_object *spec_in = NULL;
    json_object *files = NULL;
    if (json_object_object_get_ex(obj, "spec", &spec_in)) {
        json_object_object_get_ex(spec_in, "files", &files);
    }
    char *name = co_blueprint_version_name(bp->name, bp->digest);
    char *label = co_blueprint_label_value(bp->name);
    json_object *v = json_object_new_object();
    json_object_object_add(v, "apiVersion", json_object_new_string(CO_BLUEPRINT_API_VERSION));
    json_object_object_add(v, "kind", json_object_new_string(CO_BLUEPRINT_VERSION_KIND));
    json_object *meta = json_object_new_object();
    json_object_object_add(meta, "name", json_object_new_string(name));
    json_object_object_add(meta, "namespace", json_object_new_string(bp->ns ? bp->ns : ""));
    json_object *labels = json_object_new_object();
    json_object_object_add(labels, CO_BLUEPRINT_NAME_LABEL, json_object_new_string(label));
    json_object_object_add(meta, "labels", labels);
    json_object_object_add(v, "metadata", meta);
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, "blueprint", json_object_new_string(bp->name));
    json_object_object_add(spec, "digest", json_object_new_string(bp->digest));
    json_object_object_add(spec, "revision", json_object_new_string(bp->revision));
    json_object *copy = NULL;
    if (!files || json_object_deep_copy(files, &copy, NULL) < 0) {
        copy = json_object_new_object();
    }
    json_object_object_add(spec, "files", copy);
    json_object_object_add(v, "spec", spec);
    free(name);
    free(label);
    return v;
}

static int resolve_blueprint(ctl_sources *s,
                             const co_source_spec *ref,
                             const char *component_ns,
                             co_source_artifact *out,
                             long *retry_ms)
{
    const char *bns = ref->ns && *ref->ns ? ref->ns : component_ns;
    *retry_ms = 0;
    if (!s->m) {
        return co_error_set(CO_EUNAVAILABLE, "not connected to a cluster yet");
    }
    json_object *obj = NULL;
    int rc =
        ctl_manager_read(s->m, CO_BLUEPRINT_API_VERSION, CO_BLUEPRINT_KIND, bns, ref->name, &obj);
    if (rc == CO_ENOTFOUND || rc == CO_ENOMATCH) {
        *retry_ms = CO_SOURCE_RETRY_MS;
        return co_error_set(rc, "Blueprint %s/%s not found", bns, or_empty(ref->name));
    }
    if (rc < 0) {
        return rc;
    }
    co_blueprint *bp = NULL;
    rc = co_blueprint_parse(&bp, obj);
    if (rc < 0) {
        json_object_put(obj);
        return rc;
    }
    json_object *version = version_of(obj, bp);
    json_object_put(obj);
    co_kube_write_options wo = {0};
    wo.field_manager = CTL_RECONCILER_NAME;
    wo.force = 1;
    rc = co_kube_apply(NULL, ctl_manager_client(s->m), version, &wo);
    json_object_put(version);
    if (rc < 0) {
        co_error_wrap("applying the BlueprintVersion of %s/%s", bns, bp->name);
        co_blueprint_free(bp);
        return rc;
    }
    out->url = co_xasprintf(BLUEPRINT_SCHEME "%s/%s/%s", bns, bp->name, bp->digest);
    out->digest = co_xstrdup(bp->digest);
    out->revision = co_xstrdup(bp->revision);
    co_source_plain_digest(&out->source_digest, out->url, out->digest, out->revision);
    co_blueprint_free(bp);
    return 0;
}

/* Splits blueprint://<ns>/<name>/<digest>. */
static int split_blueprint_url(const char *url, char **ns, char **name, char **digest)
{
    size_t n = strlen(BLUEPRINT_SCHEME);
    const char *p = url && strncmp(url, BLUEPRINT_SCHEME, n) == 0 ? url + n : NULL;
    const char *a = p ? strchr(p, '/') : NULL;
    const char *b = a ? strchr(a + 1, '/') : NULL;
    if (!a || !b || a == p || b == a + 1 || !b[1] || strchr(b + 1, '/')) {
        return co_error_set(CO_EINVALID, "'%.300s' is not a blueprint artifact URL",
                            url ? url : "");
    }
    *ns = co_xstrndup(p, (size_t)(a - p));
    *name = co_xstrndup(a + 1, (size_t)(b - a - 1));
    *digest = co_xstrdup(b + 1);
    return 0;
}

static int fill_blueprint(void *ctx, const char *dir, uint64_t *bytes)
{
    const co_blueprint_version *v = ctx;
    return co_blueprint_write_files(dir, v->files, v->nfiles, bytes);
}

static int fetch_blueprint(ctl_sources *s, const ctl_artifact *art, co_source_tree **tree)
{
    if (!s->m) {
        return co_error_set(CO_EUNAVAILABLE, "not connected to a cluster yet");
    }
    char *bns = NULL;
    char *bname = NULL;
    char *digest = NULL;
    int rc = split_blueprint_url(art->url, &bns, &bname, &digest);
    if (rc < 0 || !bns || !bname || !digest) {
        return rc < 0 ? rc : co_error_set(CO_EINVALID, "no blueprint artifact URL");
    }
    char *vname = co_blueprint_version_name(bname, digest);
    json_object *obj = NULL;
    co_blueprint_version *v = NULL;
    rc = ctl_manager_read(s->m, CO_BLUEPRINT_API_VERSION, CO_BLUEPRINT_VERSION_KIND, bns, vname,
                          &obj);
    if (rc == 0) {
        rc = co_blueprint_version_parse(&v, obj);
    }
    if (rc == 0 && v && (strcmp(v->digest, digest) != 0 || strcmp(v->blueprint, bname) != 0)) {
        rc = co_error_set(CO_EINVALID, "BlueprintVersion %s/%s does not hold the artifact", bns,
                          vname);
    }
    if (rc == 0) {
        /* one tree per content: the digest names it, kept apart from other kinds' keys */
        char *id = co_xasprintf("blueprint\n%s", digest);
        rc = co_source_materialise(s->src, id, fill_blueprint, v, tree, NULL);
        free(id);
    }
    if (rc < 0) {
        co_error_wrap("BlueprintVersion %s/%s", bns, vname);
    }
    co_blueprint_version_free(v);
    json_object_put(obj);
    free(vname);
    free(bns);
    free(bname);
    free(digest);
    return rc;
}

static int
do_resolve(void *ctx, const co_component *component, ctl_artifact *out, int64_t *retry_ns)
{
    ctl_sources *s = ctx;
    co_source_spec ref = {0};
    *retry_ns = 0;
    const char *ns = or_empty(component->ns);
    int rc = parse_ref(&ref, component);
    if (rc < 0 || (ref.kind != CO_SOURCE_HTTP_REPOSITORY && ref.kind != CO_SOURCE_GIT)) {
        /* switched to a Flux source (or to none that parses): nothing to poll any more */
        unwatch(s, ns, or_empty(component->name));
    }
    if (rc < 0) {
        return rc;
    }
    co_source_artifact a = {0};
    long retry_ms = 0;
    if (ref.kind == CO_SOURCE_BLUEPRINT) {
        rc = resolve_blueprint(s, &ref, ns, &a, &retry_ms);
    } else {
        rc = co_source_resolve(s->src, &ref, ns, &a, &retry_ms);
    }
    *retry_ns = (int64_t)retry_ms * 1000000;
    if (rc < 0) {
        co_source_artifact_dispose(&a);
        return rc;
    }
    if (s->poller && (ref.kind == CO_SOURCE_HTTP_REPOSITORY || ref.kind == CO_SOURCE_GIT)) {
        char *key = co_xasprintf("%s/%s", ns, or_empty(component->name));
        if (co_source_poller_watch(s->poller, key, &ref, ns, a.digest, a.revision) < 0) {
            co_log(CO_LOG_WARN, "cannot poll source", "component", key, "error", co_error_last(),
                   NULL);
        }
        free(key);
    }
    out->url = a.url;
    out->digest = a.digest;
    out->revision = a.revision;
    out->source_digest = a.source_digest;
    return 0;
}

static int do_fetch(void *ctx,
                    const co_component *component,
                    const ctl_artifact *art,
                    char **dir_out,
                    void **hold_out)
{
    ctl_sources *s = ctx;
    co_source_spec ref = {0};
    int rc = parse_ref(&ref, component);
    if (rc < 0) {
        return rc;
    }
    co_source_artifact a = {art->url, art->digest, art->revision, art->source_digest};
    co_source_tree *tree = NULL;
    if (ref.kind == CO_SOURCE_BLUEPRINT) {
        rc = fetch_blueprint(s, art, &tree);
    } else {
        rc = co_source_fetch(s->src, &ref, or_empty(component->ns), &a, &tree, NULL);
    }
    if (rc < 0) {
        return rc;
    }
    rc = co_source_tree_path(tree, or_empty(component->spec.path), dir_out);
    if (rc < 0) {
        co_source_tree_release(tree);
        return rc;
    }
    *hold_out = tree;
    return 0;
}

static void do_release(void *ctx, void *hold)
{
    (void)ctx;
    co_source_tree_release(hold);
}

static int do_root(void *ctx, void *hold, char **root_out)
{
    (void)ctx;
    *root_out = co_xstrdup(co_source_tree_dir(hold));
    return 0;
}

ctl_source_ops ctl_sources_ops(ctl_sources *s)
{
    ctl_source_ops ops = {do_resolve, do_fetch, do_release, s, do_root};
    return ops;
}
