/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reconciler's lookups (ctl_cache_ops) in what the manager's informers hold (see
 * ctl_manager_int.h): cached Components, parsed; who claims an object in its inventory; the
 * dependants of a Component, beyond the watched set when it is narrowed; dependency cycles,
 * searched by co_depgraph over the part of the graph reachable from the Component; and the
 * ComponentPolicy verdict with its grants.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "co/util/strconv.h"
#include "controller/ctl_manager_int.h"

static int cache_get_component(void *ctx, const char *ns, const char *name, co_component **out)
{
    ctl_manager *m = ctx;
    co_kube_informer *inf = ctl_manager__informer_for(m, ns);
    struct json_object *obj = NULL;
    int rc;
    if (inf) {
        rc = co_kube_informer_get(&obj, inf, ns, name);
    } else {
        /* not watched by this instance: read it directly */
        co_kube_ref ref = {COMPONENT_API, "Component", ns, name};
        rc = co_kube_get(&obj, m->client, &ref, NULL);
    }
    if (rc == 0) {
        rc = co_component_parse(out, obj);
    }
    json_object_put(obj);
    return rc;
}

/* Whether resourceVersion @p have is at least @p want. Resource versions are opaque to clients,
 * but the API server's are etcd revisions, which grow: when both are decimal numbers they are
 * compared as such, otherwise only equality counts. */
static bool rv_reached(const char *have, const char *want)
{
    uint64_t h = 0, w = 0;
    if (co_strconv_parse_uint(&h, have, strlen(have), 10, CO_STRCONV_NO_UNDERSCORES) == 0 &&
        co_strconv_parse_uint(&w, want, strlen(want), 10, CO_STRCONV_NO_UNDERSCORES) == 0) {
        return h >= w;
    }
    return strcmp(have, want) == 0;
}

/* The cached Component, when the informer has seen the last write of it this controller made
 * (read-your-writes: a pass must never start from a status older than the one the last pass
 * wrote, whose inventory may name objects created since). */
static int cache_read(void *ctx, const char *ns, const char *name, struct json_object **out)
{
    ctl_manager *m = ctx;
    co_kube_informer *inf = ctl_manager__informer_for(m, ns);
    if (!inf) {
        return CO_ENOTFOUND;
    }
    struct json_object *obj = NULL;
    int rc = co_kube_informer_get(&obj, inf, ns, name);
    if (rc < 0) {
        return rc;
    }
    const char *rv = co_json_str(obj, "metadata", "resourceVersion", NULL);
    char *key = co_xasprintf("%s/%s", ns, name);
    pthread_mutex_lock(&m->wrote_mu);
    const char *want = co_strmap_get(&m->wrote, key);
    bool fresh = !want || (rv && rv_reached(rv, want));
    if (want && fresh) {
        free(co_strmap_remove(&m->wrote, key));
    }
    pthread_mutex_unlock(&m->wrote_mu);
    free(key);
    if (!fresh) {
        json_object_put(obj);
        return CO_ENOTFOUND;
    }
    *out = obj;
    return 0;
}

static void cache_wrote(void *ctx, const char *ns, const char *name, const struct json_object *obj)
{
    ctl_manager *m = ctx;
    const char *rv = obj ? co_json_str(obj, "metadata", "resourceVersion", NULL) : NULL;
    char *key = co_xasprintf("%s/%s", ns, name);
    pthread_mutex_lock(&m->wrote_mu);
    free(rv ? co_strmap_put(&m->wrote, key, co_xstrdup(rv)) : co_strmap_remove(&m->wrote, key));
    pthread_mutex_unlock(&m->wrote_mu);
    free(key);
}

static int cache_claimed_by(void *ctx,
                            const char *self,
                            const char *group,
                            const char *kind,
                            const char *ns,
                            const char *name,
                            char **owner_out)
{
    ctl_manager *m = ctx;
    char *key = ctl_manager__inventory_key(group, kind, ns, name);
    int found = 0;
    for (size_t i = 0; i < m->ncomp_inf && !found; i++) {
        co_kube_keys keys = {0};
        if (co_kube_informer_index_keys(&keys, m->comp_inf[i], "inventory", key) == 0) {
            for (size_t k = 0; k < keys.len && !found; k++) {
                if (strcmp(keys.items[k], self) != 0) {
                    *owner_out = co_xstrdup(keys.items[k]);
                    found = 1;
                }
            }
        }
        co_kube_keys_dispose(&keys);
    }
    free(key);
    return found;
}

typedef struct dependants_scan {
    const char *key;
    co_kube_keys *out;
} dependants_scan;

static int scan_dependant(struct json_object *item, void *payload)
{
    dependants_scan *d = payload;
    co_depgraph_list deps = {NULL, 0};
    ctl_manager__dependency_keys(&deps, item);
    for (size_t i = 0; i < deps.len; i++) {
        if (strcmp(deps.items[i], d->key) == 0) {
            char *k = co_kube_informer_key_of(item);
            if (k && strcmp(k, d->key) != 0) {
                co_kube_keys_add(d->out, k);
            }
            free(k);
            break;
        }
    }
    co_depgraph_list_dispose(&deps);
    return 0;
}

static int cache_dependants(void *ctx, const char *key, co_kube_keys *out)
{
    ctl_manager *m = ctx;
    co_depgraph_list keys = {NULL, 0};
    ctl_manager__graph_dependents(m, key, &keys);
    for (size_t i = 0; i < keys.len; i++) {
        if (strcmp(keys.items[i], key) != 0) {
            co_kube_keys_add(out, keys.items[i]);
        }
    }
    co_depgraph_list_dispose(&keys);
    bool selective = m->label_selector && *m->label_selector;
    if (m->nnamespaces == 0 && !selective) {
        return 0;
    }
    /* The caches hold only the Components this instance watches, but a dependant may live in
     * another namespace or another shard: a dependency is never deleted under one. Deletions
     * are rare, so every Component is listed from the API server, page by page, rather than
     * cached cluster-wide. An error blocks the deletion (the reconciler retries). */
    co_kube_ref ref = {COMPONENT_API, "Component", NULL, NULL};
    co_kube_list_options lo = {0};
    lo.skip_managed_fields = 1;
    dependants_scan d = {key, out};
    int rc = co_kube_list_each(NULL, m->client, &ref, &lo, scan_dependant, &d);
    if (rc == CO_EAUTH && m->nnamespaces > 0) {
        /* Rights in the watched namespaces only (a watch of every namespace needs the list
         * above): those are searched whole, the others cannot be, which is said once. */
        if (!atomic_exchange(&m->warned_dependants, true)) {
            co_log(CO_LOG_WARN,
                   "cannot list Components in every namespace: dependants in namespaces "
                   "not watched do not hold back a deletion",
                   "error", co_error_last(), NULL);
        }
        co_error_clear();
        rc = 0;
        for (size_t i = 0; i < m->nnamespaces && selective && rc == 0; i++) {
            ref.namespace = m->namespaces[i];
            rc = co_kube_list_each(NULL, m->client, &ref, &lo, scan_dependant, &d);
        }
    }
    if (rc < 0) {
        return co_error_wrap("listing Components to find dependants");
    }
    return 0;
}

/* The dependencies of @p key: from the graph for a watched Component, else (a namespace this
 * instance does not watch) from the API server. CO_ENOTFOUND: no such Component. */
static int deps_of(ctl_manager *m, const char *key, co_depgraph_list *out)
{
    const char *slash = strchr(key, '/');
    char *ns = co_xstrndup(key, (size_t)(slash - key));
    int rc;
    if (ctl_manager__informer_for(m, ns)) {
        pthread_mutex_lock(&m->graph_mu);
        rc = co_depgraph_deps(out, m->graph, key);
        pthread_mutex_unlock(&m->graph_mu);
    } else {
        struct json_object *obj = NULL;
        co_kube_ref ref = {COMPONENT_API, "Component", ns, slash + 1};
        rc = co_kube_get(&obj, m->client, &ref, NULL);
        if (rc == 0) {
            ctl_manager__dependency_keys(out, obj);
        }
        json_object_put(obj);
    }
    free(ns);
    return rc;
}

/* Shortest cycle through @p key: the part of the graph reachable from it (Components in
 * namespaces this instance does not watch included) is copied and searched. */
static int cache_cycle_of(void *ctx, const char *key, char **path_out)
{
    ctl_manager *m = ctx;
    if (!strchr(key, '/')) {
        return CO_ENOTFOUND;
    }
    co_depgraph *reach = co_depgraph_new();
    co_kube_keys todo = {0};
    co_kube_keys_add(&todo, key);
    for (size_t i = 0; i < todo.len && todo.len < 100000; i++) {
        const char *k = todo.items[i];
        co_depgraph_list deps = {NULL, 0};
        if (co_depgraph_contains(reach, k)) {
            continue;
        }
        if (deps_of(m, k, &deps) < 0) {
            /* absent or unreadable: on no cycle, and not looked up again */
            co_error_clear();
        }
        if (co_depgraph_set(reach, k, (const char *const *)deps.items, deps.len) < 0) {
            co_error_clear();
        }
        for (size_t j = 0; j < deps.len; j++) {
            if (!co_depgraph_contains(reach, deps.items[j])) {
                co_kube_keys_add(&todo, deps.items[j]);
            }
        }
        co_depgraph_list_dispose(&deps);
    }
    int rc = co_depgraph_cycle_of(path_out, reach, key);
    if (rc < 0) {
        co_error_clear();
    }
    co_kube_keys_dispose(&todo);
    co_depgraph_free(reach);
    return rc;
}

/* The violations of @p res with action @p action, formatted and joined with "; ". */
static char *policy_message(const co_policy_result *res, co_policy_action action)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    int brc = 0;
    for (size_t i = 0; i < res->len && brc == 0; i++) {
        if (res->items[i].action != action) {
            continue;
        }
        if (b.len > 0) {
            brc = co_buf_puts(&b, "; ");
        }
        if (brc == 0) {
            brc = co_policy_violation_format(&b, &res->items[i]);
        }
    }
    return co_buf_take(&b, NULL);
}

/* docs/webhook-and-certs.md, "ComponentPolicy": the rules, evaluated again at reconcile time (a
 * webhook can be bypassed or fail open), and the grants of the applying policies. User and group
 * exemptions hold for the requester the webhook recorded on the Component (co/policy.h); an
 * unreadable record exempts nobody. Whatever keeps the policies from being evaluated is an error of
 * the pass: a policy never fails open. */
static int cache_policy_check(void *ctx,
                              const struct json_object *component,
                              char **msg_out,
                              co_policy_permissions *perm_out)
{
    ctl_manager *m = ctx;
    memset(perm_out, 0, sizeof(*perm_out));
    co_kube_informer *inf = ctl_manager__policy_informer(m);
    if (!inf || co_kube_informer_len(inf) == 0) {
        return 0;
    }
    struct json_object *all = NULL;
    int rc = co_kube_informer_list(&all, inf, NULL);
    if (rc < 0) {
        return co_error_wrap("reading the cached ComponentPolicies");
    }
    co_policy_set *set = co_policy_set_new();
    for (size_t i = 0; i < json_object_array_length(all); i++) {
        /* an invalid policy is skipped here; its own validation reports it */
        (void)!co_policy_set_put(set, json_object_array_get_idx(all, i));
    }
    json_object_put(all);
    const char *ns = co_json_meta_namespace(component);
    struct json_object *nsobj = NULL;
    struct json_object *defaulted = NULL;
    co_component *c = NULL;
    co_kube_ref ref = {"v1", "Namespace", NULL, ns};
    co_policy_result res = {0};
    co_policy_requester requester = {NULL, NULL, 0};
    if (co_kube_get(&nsobj, m->client, &ref, NULL) < 0) {
        rc = co_error_wrap("reading namespace %s for its labels", ns ? ns : "");
        goto done;
    }
    if ((rc = co_component_default(&defaulted, component, ns, NULL)) < 0 ||
        (rc = co_component_parse(&c, defaulted)) < 0) {
        goto done;
    }
    co_policy_request req = {0};
    req.ns = ns;
    req.namespace_labels = co_json_get(nsobj, "metadata", "labels", NULL);
    if (co_policy_requester_of(&requester, component) < 0) {
        /* the webhook never writes such a record: somebody wrote it past the webhook */
        const char *name = co_json_meta_name(component);
        co_log(CO_LOG_DEBUG, "exemption record ignored", "namespace", ns ? ns : "", "name",
               name ? name : "", "error", co_error_last(), NULL);
        co_error_clear();
    }
    co_policy_request_set_requester(&req, &requester);
    /* grants first: a Component being deleted needs them even when a rule now denies it */
    if ((rc = co_policy_permissions_of(perm_out, set, &req)) < 0 ||
        (rc = co_policy_evaluate(&res, set, c, &req)) < 0) {
        goto done;
    }
    if (res.verdict == CO_POLICY_DENY) {
        *msg_out = policy_message(&res, CO_POLICY_DENY);
        rc = CO_EINVALID;
    } else if (res.verdict == CO_POLICY_WARN) {
        /* admitted; the reconciler shows the warning (docs/lifecycle.md, "Warning state") */
        *msg_out = policy_message(&res, CO_POLICY_WARN);
    }
done:
    co_policy_requester_dispose(&requester);
    co_policy_result_dispose(&res);
    co_component_free(c);
    json_object_put(defaulted);
    json_object_put(nsobj);
    co_policy_set_free(set);
    return rc;
}

ctl_cache_ops ctl_manager__cache_ops(ctl_manager *m)
{
    ctl_cache_ops ops = {0};
    ops.read = cache_read;
    ops.wrote = cache_wrote;
    ops.get_component = cache_get_component;
    ops.dependants = cache_dependants;
    ops.cycle_of = cache_cycle_of;
    ops.policy_check = cache_policy_check;
    ops.claimed_by = cache_claimed_by;
    ops.ctx = m;
    return ops;
}
