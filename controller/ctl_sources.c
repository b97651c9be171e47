/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binding of the source seam to co/source.h (see ctl_sources.h).
 */
#include "controller/ctl_sources.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

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
    rc = co_source_resolve(s->src, &ref, ns, &a, &retry_ms);
    *retry_ns = (int64_t)retry_ms * 1000000;
    if (rc < 0) {
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
    rc = co_source_fetch(s->src, &ref, or_empty(component->ns), &a, &tree, NULL);
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
