/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Discovery and REST mapping. Each group/version's APIResourceList is fetched on first use and
 * cached; a kind missing from a cached list triggers one refetch (at most one per second per
 * group/version), which is how CustomResourceDefinitions created at run time become usable.
 * Group/versions are fetched one by one, so an aggregated API server that is down only fails
 * lookups in its own group. The network is never touched with the cache lock held.
 *
 * The whole listing (every resource list of every served group/version, for templates) is
 * cached apart: each call reads /api and /apis, so a new group/version (a CRD of a new group)
 * is seen at once, and reuses the lists while that set is unchanged and younger than the
 * caller's maximum age. A kind that mapping finds only on a refetch drops the listing too.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
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

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i]);
    }
    free(v);
}

struct co_kube_api_listing {
    atomic_long refs;
    struct json_object *lists; /* never changed after creation */
    /* co_kube_api_listing_memo(), set once under memo_lock */
    pthread_mutex_t memo_lock;
    void *memo;
    void *(*memo_make)(const struct json_object *lists);
    void (*memo_dispose)(void *);
};

static co_kube_api_listing *listing_new(struct json_object *lists)
{
    co_kube_api_listing *l = co_xcalloc(1, sizeof(*l));
    atomic_init(&l->refs, 1);
    l->lists = lists;
    pthread_mutex_init(&l->memo_lock, NULL);
    return l;
}

static co_kube_api_listing *listing_retain(co_kube_api_listing *l)
{
    atomic_fetch_add(&l->refs, 1);
    return l;
}

void *co_kube_api_listing_memo(co_kube_api_listing *l,
                               void *(*make)(const struct json_object *lists),
                               void (*dispose)(void *))
{
    void *out = NULL;
    pthread_mutex_lock(&l->memo_lock);
    if (!l->memo_make) {
        l->memo = make(l->lists);
        l->memo_make = make;
        l->memo_dispose = dispose;
    }
    if (l->memo_make == make) {
        out = l->memo;
    }
    pthread_mutex_unlock(&l->memo_lock);
    return out;
}

void co_kube_api_listing_release(co_kube_api_listing *l)
{
    if (l && atomic_fetch_sub(&l->refs, 1) == 1) {
        if (l->memo_dispose) {
            l->memo_dispose(l->memo);
        }
        pthread_mutex_destroy(&l->memo_lock);
        json_object_put(l->lists);
        free(l);
    }
}

const struct json_object *co_kube_api_listing_lists(const co_kube_api_listing *l)
{
    return l->lists;
}

/* Forgets the whole listing (caller holds disc_lock or is the last user of the core). */
static void listing_drop(co_kube_core *core)
{
    core->listing_gen++;
    co_kube_api_listing_release(core->listing);
    strv_free(core->listing_gvs, core->nlisting_gvs);
    core->listing = NULL;
    core->listing_gvs = NULL;
    core->nlisting_gvs = 0;
}

void co_kube__discovery_dispose(co_kube_core *core)
{
    const char *key;
    void *value;
    for (size_t it = 0; co_strmap_next(&core->discovery, &it, &key, &value);) {
        doc_free(value);
    }
    co_strmap_dispose(&core->discovery);
    listing_drop(core);
    json_object_put(core->version);
    core->version = NULL;
}

void co_kube_client_expire_api_resources(co_kube_client *client)
{
    co_kube_core *core = client->core;
    pthread_mutex_lock(&core->disc_lock);
    listing_drop(core);
    pthread_mutex_unlock(&core->disc_lock);
}

int co_kube_client_server_version(struct json_object **out,
                                  co_kube_client *client,
                                  int64_t max_age_ms)
{
    co_kube_core *core = client->core;
    pthread_mutex_lock(&core->disc_lock);
    if (core->version && co_kube__now_ms() - core->version_ms < max_age_ms) {
        *out = co_json_copy(core->version);
        pthread_mutex_unlock(&core->disc_lock);
        return 0;
    }
    pthread_mutex_unlock(&core->disc_lock);
    struct json_object *v = NULL;
    int rc = co_kube_request_json(&v, client, "GET", "/version", NULL);
    if (rc < 0) {
        return rc;
    }
    pthread_mutex_lock(&core->disc_lock);
    json_object_put(core->version);
    core->version = co_json_copy(v);
    core->version_ms = co_kube__now_ms();
    pthread_mutex_unlock(&core->disc_lock);
    *out = v;
    return 0;
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
        const char *name = co_json_str(r, "name", NULL);
        const char *kind = co_json_str(r, "kind", NULL);
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
    co_kube_gv_doc *doc = co_strmap_get(&core->discovery, api_version);
    int had_doc = doc != NULL;
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
        doc_free(co_strmap_put(&core->discovery, api_version, fresh));
        r = find_kind(fresh, kind);
        if (r) {
            fill_mapping(out, group, version, r);
            found = 1;
            /* a kind that was not there before: the listing is out of date as well */
            if (had_doc) {
                listing_drop(core);
            }
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

/* --- the whole listing ------------------------------------------------------------------- */

/* A group/version as a server names it ("v1", "apps/v1"): it becomes a path, so nothing but
 * the characters of group and version names, and at most one slash. */
static int valid_group_version(const char *gv, int core_group)
{
    const char *slash = strchr(gv, '/');
    if (!gv[0] || (core_group && slash) || (slash && (slash == gv || !slash[1])) ||
        (slash && strchr(slash + 1, '/')) || strstr(gv, "..")) {
        return 0;
    }
    for (const char *p = gv; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '-' || *p == '/')) {
            return 0;
        }
    }
    return 1;
}

static int add_group_version(char ***gvs, size_t *n, size_t *cap, const char *gv, int core_group)
{
    if (!gv || !valid_group_version(gv, core_group)) {
        return co_error_set(CO_EINVALID,
                            "discovery: the server names an invalid group/version "
                            "\"%s\"",
                            gv ? gv : "");
    }
    if (*n >= CO_MAX_API_GROUP_VERSIONS) {
        return co_error_set(CO_ETOOBIG, "discovery: the server serves more than %d group/versions",
                            CO_MAX_API_GROUP_VERSIONS);
    }
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 32;
        *gvs = co_xreallocarray(*gvs, *cap, sizeof(char *));
    }
    (*gvs)[(*n)++] = co_xstrdup(gv);
    return 0;
}

static struct json_object *array_member(const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    return obj && json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_array)
               ? v
               : NULL;
}

/* The group/versions the server serves: the core group's from /api, then every version of
 * every group of /apis, in the server's order. */
static int served_group_versions(char ***out, size_t *n_out, co_kube_client *client)
{
    struct json_object *core_versions = NULL, *groups = NULL;
    char **gvs = NULL;
    size_t n = 0, cap = 0;
    int rc = co_kube_request_json(&core_versions, client, "GET", "/api", NULL);
    if (rc == 0) {
        rc = co_kube_request_json(&groups, client, "GET", "/apis", NULL);
    }
    if (rc < 0) {
        rc = co_error_wrap("discovery of the served API versions");
        goto done;
    }
    struct json_object *cv = array_member(core_versions, "versions");
    for (size_t i = 0; rc == 0 && cv && i < json_object_array_length(cv); i++) {
        struct json_object *v = json_object_array_get_idx(cv, i);
        rc = add_group_version(
            &gvs, &n, &cap,
            json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL, 1);
    }
    struct json_object *gl = array_member(groups, "groups");
    for (size_t i = 0; rc == 0 && gl && i < json_object_array_length(gl); i++) {
        struct json_object *vs = array_member(json_object_array_get_idx(gl, i), "versions");
        for (size_t j = 0; rc == 0 && vs && j < json_object_array_length(vs); j++) {
            rc = add_group_version(
                &gvs, &n, &cap, co_json_str(json_object_array_get_idx(vs, j), "groupVersion", NULL),
                0);
        }
    }
done:
    json_object_put(core_versions);
    json_object_put(groups);
    if (rc < 0) {
        strv_free(gvs, n);
        return rc;
    }
    *out = gvs;
    *n_out = n;
    return 0;
}

static int same_strv(char *const *a, size_t na, char *const *b, size_t nb)
{
    if (na != nb) {
        return 0;
    }
    for (size_t i = 0; i < na; i++) {
        if (strcmp(a[i], b[i]) != 0) {
            return 0;
        }
    }
    return 1;
}

/* Reads the resource list of every group/version, refreshing the mapping cache on the way. */
static int
fetch_listing(struct json_object **out, co_kube_client *client, char *const *gvs, size_t n)
{
    co_kube_core *core = client->core;
    struct json_object *lists = json_object_new_array();
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *path = strchr(gvs[i], '/') ? co_xasprintf("/apis/%s", gvs[i])
                                         : co_xasprintf("/api/%s", gvs[i]);
        struct json_object *list = NULL;
        rc = co_kube_request_json(&list, client, "GET", path, NULL);
        free(path);
        if (rc == CO_ENOTFOUND || rc == CO_EUNAVAILABLE) {
            /* withdrawn since /apis answered, or an aggregated API server that is down: left
             * out, as Helm leaves out groups whose discovery failed */
            co_error_clear();
            rc = 0;
            continue;
        }
        if (rc < 0) {
            rc = co_error_wrap("discovery of %s", gvs[i]);
            break;
        }
        co_kube_gv_doc *doc = co_xcalloc(1, sizeof(*doc));
        rc = parse_doc(doc, list, gvs[i]);
        if (rc < 0) {
            doc_free(doc);
            json_object_put(list);
            break;
        }
        doc->served = 1;
        doc->fetched_ms = co_kube__now_ms();
        pthread_mutex_lock(&core->disc_lock);
        doc_free(co_strmap_put(&core->discovery, gvs[i], doc));
        pthread_mutex_unlock(&core->disc_lock);
        json_object_array_add(lists, list);
    }
    if (rc < 0) {
        json_object_put(lists);
        return rc;
    }
    *out = lists;
    return 0;
}

/* Ends this thread's recheck of the listing's group/versions, if it made one, and wakes the
 * readers waiting for it. */
static void recheck_done(co_kube_core *core, bool rechecking)
{
    if (rechecking) {
        pthread_mutex_lock(&core->disc_lock);
        core->listing_rechecking = 0;
        pthread_cond_broadcast(&core->listing_rechecked);
        pthread_mutex_unlock(&core->disc_lock);
    }
}

int co_kube_client_api_listing(co_kube_api_listing **out,
                               co_kube_client *client,
                               int64_t max_age_ms)
{
    co_kube_core *core = client->core;
    char **gvs = NULL;
    size_t ngvs = 0;
    co_kube_api_listing *listing = NULL;
    bool rechecking = false;
    pthread_mutex_lock(&core->disc_lock);
    for (;;) {
        int64_t now = co_kube__now_ms();
        if (!core->listing || now - core->listing_ms >= max_age_ms) {
            break; /* fetched below */
        }
        if (now - core->listing_checked_ms < CO_KUBE_GV_RECHECK_MS) {
            listing = listing_retain(core->listing);
            break;
        }
        if (!core->listing_rechecking) {
            core->listing_rechecking = 1;
            rechecking = true;
            break;
        }
        /* another thread is asking /api and /apis whether the listing still holds: its answer
         * is a moment away and serves this reader too (without this, every render of a busy
         * controller read both once a second) */
        pthread_cond_wait(&core->listing_rechecked, &core->disc_lock);
    }
    pthread_mutex_unlock(&core->disc_lock);
    if (listing) {
        *out = listing;
        return 0;
    }
    int rc = served_group_versions(&gvs, &ngvs, client);
    if (rc < 0) {
        recheck_done(core, rechecking);
        return rc;
    }
    /* one fetch at a time: the others wait for it and take its result */
    pthread_mutex_lock(&core->disc_fetch_lock);
    pthread_mutex_lock(&core->disc_lock);
    if (core->listing && co_kube__now_ms() - core->listing_ms < max_age_ms &&
        same_strv(core->listing_gvs, core->nlisting_gvs, gvs, ngvs)) {
        listing = listing_retain(core->listing);
        core->listing_checked_ms = co_kube__now_ms();
    }
    uint64_t gen = core->listing_gen;
    pthread_mutex_unlock(&core->disc_lock);
    if (!listing) {
        struct json_object *lists = NULL;
        rc = fetch_listing(&lists, client, gvs, ngvs);
        if (rc == 0) {
            listing = listing_new(lists);
            pthread_mutex_lock(&core->disc_lock);
            /* dropped meanwhile (a new kind, an invalidation): this answer may predate it */
            if (core->listing_gen == gen) {
                co_kube_api_listing_release(core->listing);
                strv_free(core->listing_gvs, core->nlisting_gvs);
                core->listing = listing_retain(listing);
                core->listing_gvs = gvs;
                core->nlisting_gvs = ngvs;
                core->listing_ms = co_kube__now_ms();
                core->listing_checked_ms = core->listing_ms;
                gvs = NULL;
                ngvs = 0;
            }
            pthread_mutex_unlock(&core->disc_lock);
        }
    }
    pthread_mutex_unlock(&core->disc_fetch_lock);
    recheck_done(core, rechecking);
    strv_free(gvs, ngvs);
    if (rc < 0) {
        return rc;
    }
    *out = listing;
    return 0;
}

int co_kube_client_api_resources(struct json_object **out,
                                 co_kube_client *client,
                                 int64_t max_age_ms)
{
    *out = NULL;
    co_kube_api_listing *listing = NULL;
    int rc = co_kube_client_api_listing(&listing, client, max_age_ms);
    if (rc < 0 || !listing) {
        return rc;
    }
    *out = co_json_copy(listing->lists);
    co_kube_api_listing_release(listing);
    return 0;
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
