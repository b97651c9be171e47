/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Discovery and REST mapping. Each group/version's APIResourceList is fetched on first use and
 * cached; a kind missing from a cached list triggers one refetch (at most one per second per
 * group/version), which is how CustomResourceDefinitions created at run time become usable.
 * Group/versions are fetched one by one, so an aggregated API server that is down only fails
 * lookups in its own group. The network is never touched with the cache lock held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/caps.h"
#include "co/error.h"
#include "co/kube_client.h"
#include "kube_int.h"

#define REFETCH_MIN_MS 1000

typedef struct gv_resource {
    char *name; /* plural, without subresources */
    char *kind;
    int namespaced;
} gv_resource;

typedef struct co_kube_gv_doc {
    int64_t fetched_ms;
    int served; /* 0 when the server answered 404 for the group/version */
    gv_resource *items;
    size_t n;
} co_kube_gv_doc;

void co_kube__discovery_dispose(co_kube_core *core);

static void doc_free(co_kube_gv_doc *doc)
{
    if (!doc) {
        return;
    }
    for (size_t i = 0; i < doc->n; i++) {
        free(doc->items[i].name);
        free(doc->items[i].kind);
    }
    free(doc->items);
    free(doc);
}

void co_kube__discovery_dispose(co_kube_core *core)
{
    const char *key;
    void *value;
    for (size_t it = 0; co_kube_map_next(&core->discovery, &it, &key, &value);) {
        doc_free(value);
    }
    co_kube_map_dispose(&core->discovery);
}

void co_kube_client_invalidate_discovery(co_kube_client *client)
{
    co_kube_core *core = client->core;
    pthread_mutex_lock(&core->disc_lock);
    co_kube__discovery_dispose(core);
    pthread_mutex_unlock(&core->disc_lock);
}

void co_kube_mapping_dispose(co_kube_mapping *m)
{
    if (!m) {
        return;
    }
    free(m->group);
    free(m->version);
    free(m->resource);
    free(m->kind);
    memset(m, 0, sizeof(*m));
}

/* Splits "group/version" or "version". */
static int split_api_version(char **group, char **version, const char *api_version)
{
    if (!api_version || !api_version[0]) {
        co_error_set(CO_EINVALID, "apiVersion is missing");
        return CO_EINVALID;
    }
    const char *slash = strchr(api_version, '/');
    if (!slash) {
        *group = co_xstrdup("");
        *version = co_xstrdup(api_version);
    } else {
        if (slash == api_version || !slash[1] || strchr(slash + 1, '/')) {
            co_error_set(CO_EINVALID, "apiVersion \"%s\" is not group/version", api_version);
            return CO_EINVALID;
        }
        *group = co_xstrndup(api_version, (size_t)(slash - api_version));
        *version = co_xstrdup(slash + 1);
    }
    return 0;
}

static int parse_doc(co_kube_gv_doc *doc, const struct json_object *list, const char *gv)
{
    struct json_object *resources = NULL;
    if (!json_object_object_get_ex(list, "resources", &resources) ||
        !json_object_is_type(resources, json_type_array)) {
        return co_error_set(CO_EINVALID, "discovery of %s: no resources list", gv);
    }
    size_t len = json_object_array_length(resources);
    doc->items = co_xcalloc(len ? len : 1, sizeof(gv_resource));
    for (size_t i = 0; i < len; i++) {
        struct json_object *r = json_object_array_get_idx(resources, i);
        const char *name = co_kube__str(r, "name");
        const char *kind = co_kube__str(r, "kind");
        if (!name || !kind || strchr(name, '/')) {
            continue; /* subresources ("pods/status") are not kinds of their own */
        }
        struct json_object *ns = NULL;
        gv_resource *item = &doc->items[doc->n++];
        item->name = co_xstrdup(name);
        item->kind = co_xstrdup(kind);
        item->namespaced =
            json_object_object_get_ex(r, "namespaced", &ns) && json_object_get_boolean(ns);
    }
    return 0;
}

/* Fetches the APIResourceList of one group/version. */
static int fetch_doc(co_kube_gv_doc **out,
                     co_kube_client *client,
                     const char *group,
                     const char *version,
                     const char *gv)
{
    char *path =
        group[0] ? co_xasprintf("/apis/%s/%s", group, version) : co_xasprintf("/api/%s", version);
    struct json_object *list = NULL;
    co_kube_gv_doc *doc = co_xcalloc(1, sizeof(*doc));
    int rc = co_kube_request_json(&list, client, "GET", path, NULL);
    if (rc == CO_ENOTFOUND) {
        co_error_clear();
        rc = 0; /* not served: remembered, so that repeated misses stay cheap */
    } else if (rc < 0) {
        rc = co_error_wrap("discovery of %s", gv);
        goto done;
    } else {
        doc->served = 1;
        if ((rc = parse_doc(doc, list, gv)) < 0) {
            goto done;
        }
    }
    doc->fetched_ms = co_kube__now_ms();
    *out = doc;
    doc = NULL;
done:
    doc_free(doc);
    json_object_put(list);
    free(path);
    return rc;
}

/* Looks @p kind up in a cached document (caller holds disc_lock). */
static const gv_resource *find_kind(const co_kube_gv_doc *doc, const char *kind)
{
    for (size_t i = 0; doc && i < doc->n; i++) {
        if (strcmp(doc->items[i].kind, kind) == 0) {
            return &doc->items[i];
        }
    }
    return NULL;
}

static void
fill_mapping(co_kube_mapping *out, const char *group, const char *version, const gv_resource *r)
{
    out->group = co_xstrdup(group);
    out->version = co_xstrdup(version);
    out->resource = co_xstrdup(r->name);
    out->kind = co_xstrdup(r->kind);
    out->namespaced = r->namespaced;
}

int co_kube_client_mapping(co_kube_mapping *out,
                           co_kube_client *client,
                           const char *api_version,
                           const char *kind)
{
    co_kube_core *core = client->core;
    char *group = NULL, *version = NULL;
    co_kube_gv_doc *fresh = NULL;
    int rc;
    if (!kind || !kind[0]) {
        co_error_set(CO_EINVALID, "kind is missing");
        return CO_EINVALID;
    }
    if ((rc = split_api_version(&group, &version, api_version)) < 0) {
        return rc;
    }
    int found = 0, refetch = 1;
    pthread_mutex_lock(&core->disc_lock);
    co_kube_gv_doc *doc = co_kube_map_get(&core->discovery, api_version);
    const gv_resource *r = find_kind(doc, kind);
    if (r) {
        fill_mapping(out, group, version, r);
        found = 1;
    } else if (doc && co_kube__now_ms() - doc->fetched_ms < REFETCH_MIN_MS) {
        refetch = 0;
    }
    pthread_mutex_unlock(&core->disc_lock);
    if (found) {
        goto done;
    }
    if (refetch) {
        if ((rc = fetch_doc(&fresh, client, group, version, api_version)) < 0) {
            goto done;
        }
        pthread_mutex_lock(&core->disc_lock);
        doc_free(co_kube_map_put(&core->discovery, api_version, fresh));
        r = find_kind(fresh, kind);
        if (r) {
            fill_mapping(out, group, version, r);
            found = 1;
        }
        pthread_mutex_unlock(&core->disc_lock);
    }
    if (!found) {
        co_error_set(CO_ENOMATCH, "the server does not serve kind %s in %s", kind, api_version);
        rc = CO_ENOMATCH;
    }
done:
    free(group);
    free(version);
    return rc;
}

/* A name or namespace must be one path segment. */
static int check_segment(const char *what, const char *s)
{
    if (!s[0] || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strchr(s, '/') || strchr(s, '%')) {
        return co_error_set(CO_EINVALID, "%s \"%s\" is not a valid name", what, s);
    }
    return 0;
}

int co_kube__path(co_buf *out,
                  co_kube_client *client,
                  const co_kube_ref *ref,
                  const char *subresource,
                  int require_namespace)
{
    co_kube_mapping m = {0};
    int rc;
    if ((rc = co_kube_client_mapping(&m, client, ref->api_version, ref->kind)) < 0) {
        return rc;
    }
    if (m.group[0]) {
        rc = co_buf_printf(out, "/apis/%s/%s", m.group, m.version);
    } else {
        rc = co_buf_printf(out, "/api/%s", m.version);
    }
    if (rc < 0) {
        goto done;
    }
    if (m.namespaced && ref->namespace && ref->namespace[0]) {
        if ((rc = check_segment("namespace", ref->namespace)) < 0 ||
            (rc = co_buf_puts(out, "/namespaces/")) < 0 ||
            (rc = co_kube__escape(out, ref->namespace)) < 0) {
            goto done;
        }
    } else if (m.namespaced && (ref->name || require_namespace)) {
        rc = co_error_set(CO_EINVALID, "%s %s \"%s\" needs metadata.namespace", ref->api_version,
                          ref->kind, ref->name ? ref->name : "");
        goto done;
    }
    if ((rc = co_buf_printf(out, "/%s", m.resource)) < 0) {
        goto done;
    }
    if (ref->name) {
        if ((rc = check_segment("name", ref->name)) < 0 || (rc = co_buf_putc(out, '/')) < 0 ||
            (rc = co_kube__escape(out, ref->name)) < 0) {
            goto done;
        }
    }
    if (subresource) {
        if (!ref->name) {
            rc = co_error_set(CO_EINVALID, "subresource %s needs an object name", subresource);
            goto done;
        }
        if ((rc = check_segment("subresource", subresource)) < 0 ||
            (rc = co_buf_printf(out, "/%s", subresource)) < 0) {
            goto done;
        }
    }
done:
    co_kube_mapping_dispose(&m);
    return rc;
}

int co_kube_client_path(co_buf *out,
                        co_kube_client *client,
                        const co_kube_ref *ref,
                        const char *subresource)
{
    return co_kube__path(out, client, ref, subresource, 0);
}
