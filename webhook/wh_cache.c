/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Informers for Components, ComponentPolicies and Namespaces, with handlers that feed
 * wh_state. Only what admission needs is kept beside the informers' own stores: dependency
 * edges, parsed policies, namespace labels. The stores drop managedFields to save memory.
 */
#include "webhook/wh_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/api/component.h"
#include "co/util/error.h"
#include "co/kube/kube_informer.h"
#include "co/util/log.h"
#include "co/api/policy.h"
#include "webhook/wh_metrics.h"

enum { COMPONENTS, POLICIES, NAMESPACES, NKINDS };

/* Objects per list request when an informer (re)lists. */
#define LIST_PAGE 100

struct wh_cache {
    wh_state *state;
    co_kube_informer *inf[NKINDS];
};

static const char *const kind_names[NKINDS] = {"Components", "ComponentPolicies", "Namespaces"};

/* --- handlers (informer threads) ------------------------------------------------------------ */

static void component_put(const struct json_object *obj, void *payload)
{
    wh_state_component_put(payload, obj);
}

static void component_update(const struct json_object *old_obj,
                             const struct json_object *new_obj,
                             void *payload)
{
    (void)old_obj;
    wh_state_component_put(payload, new_obj);
}

static void component_delete(const struct json_object *obj, void *payload)
{
    wh_state_component_delete(payload, obj);
}

static const char *name_of(const struct json_object *obj)
{
    const char *name = co_json_meta_name(obj);
    return name ? name : "";
}

static void policy_put(const struct json_object *obj, void *payload)
{
    if (wh_state_policy_put(payload, obj) < 0) {
        co_log(CO_LOG_WARN, "ComponentPolicy ignored: it does not validate", "name", name_of(obj),
               "error", co_error_last(), NULL);
    }
}

static void
policy_update(const struct json_object *old_obj, const struct json_object *new_obj, void *payload)
{
    (void)old_obj;
    policy_put(new_obj, payload);
}

static void policy_delete(const struct json_object *obj, void *payload)
{
    wh_state_policy_delete(payload, name_of(obj));
}

static void namespace_put(const struct json_object *obj, void *payload)
{
    wh_state_namespace_put(payload, obj);
}

static void namespace_update(const struct json_object *old_obj,
                             const struct json_object *new_obj,
                             void *payload)
{
    (void)old_obj;
    wh_state_namespace_put(payload, new_obj);
}

static void namespace_delete(const struct json_object *obj, void *payload)
{
    wh_state_namespace_delete(payload, name_of(obj));
}

/* --- metrics -------------------------------------------------------------------------------- */

static double cached_components(void *payload)
{
    size_t c, p, n, pend;
    wh_state_sizes(payload, &c, &p, &n, &pend);
    return (double)c;
}

static double cached_policies(void *payload)
{
    size_t c, p, n, pend;
    wh_state_sizes(payload, &c, &p, &n, &pend);
    return (double)p;
}

static double pending_entries(void *payload)
{
    size_t c, p, n, pend;
    wh_state_sizes(payload, &c, &p, &n, &pend);
    return (double)pend;
}

/* --- life cycle ----------------------------------------------------------------------------- */

int wh_cache_start(wh_cache **out, co_kube_client *client, wh_state *state)
{
    static const struct {
        const char *api_version;
        const char *kind;
        co_kube_handlers handlers;
    } specs[NKINDS] = {
        [COMPONENTS] = {CO_COMPONENT_V1ALPHA1,
                        CO_COMPONENT_KIND,
                        {component_put, component_update, component_delete, NULL}},
        [POLICIES] = {CO_POLICY_API_VERSION,
                      CO_POLICY_KIND,
                      {policy_put, policy_update, policy_delete, NULL}},
        [NAMESPACES] = {"v1",
                        "Namespace",
                        {namespace_put, namespace_update, namespace_delete, NULL}},
    };
    wh_cache *c = co_xcalloc(1, sizeof(*c));
    c->state = state;
    int rc = 0;
    for (int k = 0; k < NKINDS && rc == 0; k++) {
        co_kube_informer_options opts = {0};
        opts.api_version = specs[k].api_version;
        opts.kind = specs[k].kind;
        opts.strip_managed_fields = 1;
        /* A listed page's text is held while its items are parsed and handed over one at a
         * time; 100 objects keep it to a few hundred kilobytes on a large cluster. */
        opts.page_size = LIST_PAGE;
        co_kube_handlers h = specs[k].handlers;
        h.payload = state;
        rc = co_kube_informer_new(&c->inf[k], client, &opts);
        if (rc == 0) {
            rc = co_kube_informer_add_handlers(c->inf[k], &h);
        }
        if (rc == 0) {
            rc = co_kube_informer_start(c->inf[k]);
        }
        if (rc < 0) {
            co_error_wrap("watching %s", kind_names[k]);
        }
    }
    if (rc < 0) {
        wh_cache_stop(c);
        return rc;
    }
    co_metrics *reg = wh_metrics_registry();
    co_metrics_gauge_func(reg, "component_webhook_cached_components",
                          "Components in the webhook's dependency graph.", cached_components,
                          state);
    co_metrics_gauge_func(reg, "component_webhook_cached_policies",
                          "ComponentPolicies the webhook enforces.", cached_policies, state);
    co_metrics_gauge_func(reg, "component_webhook_pending_dependency_entries",
                          "Admitted Components whose write the watch has not delivered yet.",
                          pending_entries, state);
    *out = c;
    return 0;
}

void wh_cache_stop(wh_cache *c)
{
    if (!c) {
        return;
    }
    for (int k = 0; k < NKINDS; k++) {
        co_kube_informer_free(c->inf[k]);
    }
    free(c);
}

size_t wh_cache_ready(void *ctx, wh_probe_check *out, size_t max)
{
    static _Thread_local char why[160];
    wh_cache *c = ctx;
    if (max == 0) {
        return 0;
    }
    why[0] = '\0';
    for (int k = 0; k < NKINDS; k++) {
        if (!co_kube_informer_has_synced(c->inf[k])) {
            size_t len = strlen(why);
            snprintf(why + len, sizeof(why) - len, "%s%s", len ? ", " : "waiting for ",
                     kind_names[k]);
        }
    }
    out[0].name = "caches";
    out[0].failure = why[0] ? why : NULL;
    return 1;
}
