/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manager's informers (see ctl_manager_int.h): Components (per watched namespace or all),
 * with indexes by Flux source and by inventory item, and the dependency graph of the watched
 * Components (co/api/depgraph.h); ComponentPolicies and the Flux source kinds, each CRD installed
 * after start looked for again until it is served. Handlers only decide which keys to queue;
 * all work happens on the worker threads.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "co/api/blueprint.h"
#include "co/api/lifecycle.h"
#include "co/json/json.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "co/util/thread.h"
#include "controller/ctl_manager_int.h"

/* Component texts longer than this are kept deflated in the informer's store. */
#define COMPONENT_DEFLATE_OVER 512

const char *const ctl_manager__flux_kinds[NFLUX][2] = {
    {"fluxGitRepository", "GitRepository"},
    {"fluxOciRepository", "OCIRepository"},
    {"fluxBucket", "Bucket"},
    {"fluxHelmChart", "HelmChart"},
};

co_kube_informer *ctl_manager__informer_for(ctl_manager *m, const char *ns)
{
    if (m->nnamespaces == 0) {
        return m->ncomp_inf ? m->comp_inf[0] : NULL;
    }
    for (size_t i = 0; i < m->nnamespaces; i++) {
        if (strcmp(m->namespaces[i], ns) == 0) {
            return m->comp_inf[i];
        }
    }
    return NULL;
}

void ctl_manager_enqueue(ctl_manager *m, const char *ns, const char *name)
{
    char *key = co_xasprintf("%s/%s", ns, name);
    ctl_queue_add(m->queue, key);
    free(key);
}

static void enqueue_key(ctl_manager *m, const char *key)
{
    ctl_queue_add(m->queue, key);
}

static void enqueue_obj(ctl_manager *m, const struct json_object *obj)
{
    char *key = co_kube_informer_key_of(obj);
    if (key) {
        enqueue_key(m, key);
        free(key);
    }
}

/* Dependency keys "ns/name" of a Component object (namespace defaulted); none when the object
 * has no namespace or name. */
void ctl_manager__dependency_keys(co_depgraph_list *out, const struct json_object *obj)
{
    if (co_depgraph_object_deps(out, NULL, obj, NULL) < 0) {
        co_error_clear();
        *out = (co_depgraph_list){NULL, 0};
    }
}

/* Follows a Component's dependencies in the graph (a Component that is not one is left out). */
static void graph_set(ctl_manager *m, const struct json_object *obj)
{
    pthread_mutex_lock(&m->graph_mu);
    if (co_depgraph_set_object(m->graph, obj, NULL) < 0) {
        co_error_clear();
    }
    pthread_mutex_unlock(&m->graph_mu);
}

static void graph_remove(ctl_manager *m, const struct json_object *obj)
{
    char *key = co_kube_informer_key_of(obj);
    if (key) {
        pthread_mutex_lock(&m->graph_mu);
        co_depgraph_remove(m->graph, key);
        pthread_mutex_unlock(&m->graph_mu);
        free(key);
    }
}

/* The watched Components that list @p key as a dependency. */
void ctl_manager__graph_dependents(ctl_manager *m, const char *key, co_depgraph_list *out)
{
    pthread_mutex_lock(&m->graph_mu);
    CO_ASSERT(co_depgraph_dependents(out, m->graph, key) == 0);
    pthread_mutex_unlock(&m->graph_mu);
}

/* "<Kind>/<ns>/<name>" of a Flux sourceRef, or NULL. */
static char *flux_source_key(const struct json_object *obj)
{
    struct json_object *sr = co_json_get(obj, "spec", "sourceRef", NULL);
    const char *ns = co_json_meta_namespace(obj);
    for (size_t i = 0; i < NFLUX; i++) {
        struct json_object *v = co_json_get(sr, ctl_manager__flux_kinds[i][0], NULL);
        const char *n = co_json_str(v, "name", NULL);
        if (n) {
            const char *sns = co_json_str(v, "namespace", NULL);
            return co_xasprintf("%s/%s/%s", ctl_manager__flux_kinds[i][1],
                                sns && *sns ? sns
                                : ns        ? ns
                                            : "",
                                n);
        }
    }
    /* Blueprints share the index: their keys start with their kind, as the Flux ones do */
    struct json_object *bp = co_json_get(sr, "blueprint", NULL);
    const char *bn = co_json_str(bp, "name", NULL);
    if (bn) {
        const char *bns = co_json_str(bp, "namespace", NULL);
        return co_xasprintf("%s/%s/%s", CO_BLUEPRINT_KIND, bns && *bns ? bns : ns ? ns : "", bn);
    }
    return NULL;
}

/* "group/kind/namespace/name" of an inventory item; the one key format of the inventory index. */
char *
ctl_manager__inventory_key(const char *group, const char *kind, const char *ns, const char *name)
{
    return co_xasprintf("%s/%s/%s/%s", group ? group : "", kind ? kind : "", ns ? ns : "",
                        name ? name : "");
}

/* The objects a Component deploying into this cluster lists in its inventory, so that another
 * Component cannot adopt them (ctl_claim_fn). */
static int index_inventory(co_kube_keys *out, const struct json_object *obj, void *payload)
{
    (void)payload;
    if (co_json_get(obj, "spec", "kubeConfig", NULL)) {
        return 0;
    }
    /* either form; an unreadable one claims nothing, as an unreadable list always did (the
     * Component's own reconcile reports it) */
    struct json_object *inv = NULL;
    if (co_component_inventory_get(&inv, co_json_get(obj, "status", NULL)) < 0) {
        co_error_clear();
        return 0;
    }
    size_t n = inv ? json_object_array_length(inv) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *it = json_object_array_get_idx(inv, i);
        char *k = ctl_manager__inventory_key(
            co_json_str(it, "group", NULL), co_json_str(it, "kind", NULL),
            co_json_str(it, "namespace", NULL), co_json_str(it, "name", NULL));
        co_kube_keys_add(out, k);
        free(k);
    }
    json_object_put(inv);
    return 0;
}

static int index_source(co_kube_keys *out, const struct json_object *obj, void *payload)
{
    (void)payload;
    char *k = flux_source_key(obj);
    if (k) {
        co_kube_keys_add(out, k);
        free(k);
    }
    return 0;
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_json(const struct json_object *a, const struct json_object *b)
{
    return (!a && !b) || (a && b && co_json_equal(a, b));
}

/* Every cached Component for which @p want holds (all of them when @p want is NULL). */
static void enqueue_components(ctl_manager *m, bool (*want)(const struct json_object *component))
{
    for (size_t i = 0; i < m->ncomp_inf; i++) {
        struct json_object *all = NULL;
        if (co_kube_informer_list(&all, m->comp_inf[i], NULL) < 0) {
            co_error_clear();
            continue;
        }
        size_t n = json_object_array_length(all);
        for (size_t j = 0; j < n; j++) {
            struct json_object *c = json_object_array_get_idx(all, j);
            if (!want || want(c)) {
                enqueue_obj(m, c);
            }
        }
        json_object_put(all);
    }
}

static bool in_dependency_cycle(const struct json_object *component)
{
    return strcmp(ctl_state_reason(co_json_get(component, "status", NULL)),
                  CTL_REASON_DEPENDENCY_CYCLE) == 0;
}

/* Every cached Component in Error/DependencyCycle: a dependency change may have broken the
 * cycle they are on. */
static void enqueue_cycle_members(ctl_manager *m)
{
    enqueue_components(m, in_dependency_cycle);
}

static void enqueue_dependants(ctl_manager *m, const struct json_object *obj)
{
    char *key = co_kube_informer_key_of(obj);
    if (!key) {
        return;
    }
    co_depgraph_list keys = {NULL, 0};
    ctl_manager__graph_dependents(m, key, &keys);
    for (size_t i = 0; i < keys.len; i++) {
        enqueue_key(m, keys.items[i]);
    }
    co_depgraph_list_dispose(&keys);
    free(key);
}

/* ---- Component handlers ------------------------------------------------------------------ */

/* The source of @p obj need not be followed any more (polling stops at once, not when the last
 * reconcile of the Component happens to run). */
static void release_obj(ctl_manager *m, const struct json_object *obj)
{
    const char *ns = co_json_meta_namespace(obj);
    const char *name = co_json_meta_name(obj);
    if (m->release && ns && name) {
        m->release(m->release_ctx, ns, name);
    }
}

/* The Blueprint a Component's sourceRef names: its namespace defaults to the Component's. */
static bool blueprint_of(const struct json_object *obj, const char **ns, const char **name)
{
    struct json_object *bp = co_json_get(obj, "spec", "sourceRef", "blueprint", NULL);
    *name = co_json_str(bp, "name", NULL);
    *ns = co_json_str(bp, "namespace", NULL);
    if (!*ns || !**ns) {
        *ns = co_json_meta_namespace(obj);
    }
    return *name != NULL;
}

/* A Component let go of a BlueprintVersion: it names another source, another content, or is
 * gone (@p new_obj NULL). The Blueprint controller looks at the Blueprint it named. */
static void blueprint_let_go(ctl_manager *m,
                             const struct json_object *old_obj,
                             const struct json_object *new_obj)
{
    const char *ons = NULL, *oname = NULL, *nns = NULL, *nname = NULL;
    if (!blueprint_of(old_obj, &ons, &oname)) {
        return;
    }
    bool same = new_obj && blueprint_of(new_obj, &nns, &nname) && same_str(ons, nns) &&
                same_str(oname, nname) &&
                same_str(co_json_str(co_json_get(old_obj, "status", "sourceRef", "artifact", NULL),
                                     "digest", NULL),
                         co_json_str(co_json_get(new_obj, "status", "sourceRef", "artifact", NULL),
                                     "digest", NULL));
    if (!same) {
        ctl_manager__blueprint_enqueue(m, ons, oname, 0);
    }
}

/* Whether the skip-reconciliation labels of two versions of a Component differ
 * (docs/lifecycle.md, "Skip reconciliation"): labels are not in the framework's predicate, but
 * removing this one must resume the Component. */
static bool skip_label_changed(const struct json_object *om, const struct json_object *nm)
{
    const char *keys[] = {CO_LIFECYCLE_SKIP_LABEL, CO_LIFECYCLE_SKIP_LABEL_KYMA};
    for (size_t i = 0; i < CO_ARRAY_SIZE(keys); i++) {
        if (!same_str(co_json_str(om, "labels", keys[i], NULL),
                      co_json_str(nm, "labels", keys[i], NULL))) {
            return true;
        }
    }
    return false;
}

/* Whether a Component stopped reporting Disabled (docs/lifecycle.md, "Disabled"): its
 * dependants, which waited for it, may go on. */
static bool enabled_again(const struct json_object *os, const struct json_object *ns)
{
    return strcmp(ctl_state_reason(os), CTL_REASON_DISABLED) == 0 &&
           strcmp(ctl_state_reason(ns), CTL_REASON_DISABLED) != 0;
}

static void on_comp_add(const struct json_object *obj, void *payload)
{
    ctl_manager *m = payload;
    graph_set(m, obj);
    ctl_refwatch_component_set(m->refwatch, obj);
    enqueue_obj(m, obj);
}

static void
on_comp_update(const struct json_object *old_obj, const struct json_object *new_obj, void *payload)
{
    ctl_manager *m = payload;
    struct json_object *om = co_json_get(old_obj, "metadata", NULL);
    struct json_object *nm = co_json_get(new_obj, "metadata", NULL);
    int64_t og = 0, ng = 0;
    if (co_json_get_int64(&og, om, "generation", NULL) < 0) {
        og = -1;
    }
    if (co_json_get_int64(&ng, nm, "generation", NULL) < 0) {
        ng = -1;
    }
    /* the framework's predicate: generation or annotations changed (status writes do not
     * retrigger); deletion, and finalizer changes while being deleted (a foreign finalizer
     * that goes unblocks it); not our own finalizer patch, made in a pass that goes on */
    const char *deleted = co_json_str(nm, "deletionTimestamp", NULL);
    if (og != ng ||
        !same_json(co_json_get(om, "annotations", NULL), co_json_get(nm, "annotations", NULL)) ||
        !same_str(co_json_str(om, "deletionTimestamp", NULL), deleted) ||
        (deleted &&
         !same_json(co_json_get(om, "finalizers", NULL), co_json_get(nm, "finalizers", NULL))) ||
        skip_label_changed(om, nm)) {
        enqueue_obj(m, new_obj);
    }
    if (!co_json_str(om, "deletionTimestamp", NULL) && co_json_str(nm, "deletionTimestamp", NULL)) {
        release_obj(m, new_obj); /* a Component being deleted never reads its source again */
    }
    if (og != ng) {
        /* the references are spec: they change with the generation (docs/refwatch.md) */
        ctl_refwatch_component_set(m->refwatch, new_obj);
    }
    blueprint_let_go(m, old_obj, new_obj);
    /* dependants wait for this one to be Ready (and synced) */
    bool ready = ctl_state_component_ready(new_obj);
    struct json_object *os = co_json_get(old_obj, "status", NULL);
    struct json_object *ns = co_json_get(new_obj, "status", NULL);
    if (ready && (!ctl_state_component_ready(old_obj) || enabled_again(os, ns) ||
                  !same_str(co_json_str(os, "lastAttemptedDigest", NULL),
                            co_json_str(ns, "lastAttemptedDigest", NULL)) ||
                  !same_str(co_json_str(os, "lastAttemptedRevision", NULL),
                            co_json_str(ns, "lastAttemptedRevision", NULL)))) {
        enqueue_dependants(m, new_obj);
    }
    if (!same_json(co_json_get(old_obj, "spec", "dependencies", NULL),
                   co_json_get(new_obj, "spec", "dependencies", NULL))) {
        graph_set(m, new_obj);
        enqueue_cycle_members(m);
    }
}

static void on_comp_delete(const struct json_object *obj, void *payload)
{
    ctl_manager *m = payload;
    release_obj(m, obj);
    graph_remove(m, obj);
    ctl_refwatch_component_remove(m->refwatch, obj);
    enqueue_obj(m, obj);
    blueprint_let_go(m, obj, NULL);
    /* its dependencies may be waiting for it to go (DeletionPending) */
    co_depgraph_list deps = {NULL, 0};
    ctl_manager__dependency_keys(&deps, obj);
    for (size_t i = 0; i < deps.len; i++) {
        enqueue_key(m, deps.items[i]);
    }
    co_depgraph_list_dispose(&deps);
    enqueue_cycle_members(m);
}

/* ---- Flux source handlers (docs/behaviour.md, "Source-change triggers") ------------------ */

static bool flux_ready_artifact(const struct json_object *src, const char **dig, const char **rev)
{
    int64_t gen = 0;
    if (co_json_get_int64(&gen, src, "metadata", "generation", NULL) < 0) {
        gen = -1;
    }
    struct json_object *conds = co_json_get(src, "status", "conditions", NULL);
    size_t n =
        conds && json_object_is_type(conds, json_type_array) ? json_object_array_length(conds) : 0;
    bool ready = false;
    for (size_t i = 0; i < n; i++) {
        struct json_object *c = json_object_array_get_idx(conds, i);
        int64_t og = -1;
        if (co_json_get_int64(&og, c, "observedGeneration", NULL) < 0) {
            og = -2;
        }
        if (same_str(co_json_str(c, "type", NULL), "Ready") &&
            same_str(co_json_str(c, "status", NULL), "True") && og == gen) {
            ready = true;
        }
    }
    struct json_object *a = co_json_get(src, "status", "artifact", NULL);
    *dig = co_json_str(a, "digest", NULL);
    *rev = co_json_str(a, "revision", NULL);
    return ready && *dig && **dig && *rev && **rev;
}

static void
requeue_by_source(ctl_manager *m, const struct json_object *src, const char *dig, const char *rev);

static void
on_flux_update(const struct json_object *old_obj, const struct json_object *new_obj, void *payload)
{
    (void)old_obj;
    ctl_manager *m = payload;
    const char *dig = NULL, *rev = NULL;
    if (!flux_ready_artifact(new_obj, &dig, &rev)) {
        return;
    }
    requeue_by_source(m, new_obj, dig, rev);
}

/* Enqueues the Components whose sourceRef names @p src, except those Ready with @p dig and
 * @p rev as their last attempt. */
static void
requeue_by_source(ctl_manager *m, const struct json_object *src, const char *dig, const char *rev)
{
    const char *kind = co_json_str(src, "kind", NULL);
    const char *sns = co_json_meta_namespace(src);
    const char *sname = co_json_meta_name(src);
    char *key = co_xasprintf("%s/%s/%s", kind ? kind : "", sns ? sns : "", sname ? sname : "");
    for (size_t i = 0; i < m->ncomp_inf; i++) {
        struct json_object *list = NULL;
        if (co_kube_informer_by_index(&list, m->comp_inf[i], "source", key) < 0) {
            continue;
        }
        size_t n = json_object_array_length(list);
        for (size_t j = 0; j < n; j++) {
            struct json_object *c = json_object_array_get_idx(list, j);
            struct json_object *st = co_json_get(c, "status", NULL);
            if (ctl_state_component_ready(c) &&
                same_str(co_json_str(st, "lastAttemptedDigest", NULL), dig) &&
                same_str(co_json_str(st, "lastAttemptedRevision", NULL), rev)) {
                continue;
            }
            enqueue_obj(m, c);
        }
        json_object_put(list);
    }
    free(key);
}

/* A ComponentPolicy appeared, changed its spec or went away: every cached Component is
 * evaluated again, so a new Deny rule takes effect (and a removed one releases) without waiting
 * for the requeue interval. Policies change rarely; the work queue de-duplicates. */
static void on_policy_add(const struct json_object *obj, void *payload)
{
    (void)obj;
    enqueue_components(payload, NULL);
    ctl_manager__audit_trigger(payload); /* docs/policy-audit.md */
}

static void on_policy_update(const struct json_object *old_obj,
                             const struct json_object *new_obj,
                             void *payload)
{
    if (!same_json(co_json_get(old_obj, "spec", NULL), co_json_get(new_obj, "spec", NULL))) {
        enqueue_components(payload, NULL);
        ctl_manager__audit_trigger(payload); /* not for its own status writes */
    }
}

/* Creates and starts an informer of @p kind when the cluster serves it.
 * @param[out] out the informer, or NULL when the kind is not served (not an error) */
static int new_optional_informer(co_kube_informer **out,
                                 ctl_manager *m,
                                 const char *api_version,
                                 const char *kind,
                                 const co_kube_handlers *h)
{
    co_kube_mapping mp = {0};
    *out = NULL;
    if (co_kube_client_mapping(&mp, m->client, api_version, kind) < 0) {
        co_error_clear();
        return 0;
    }
    co_kube_mapping_dispose(&mp);
    co_kube_informer_options io = {0};
    io.api_version = api_version;
    io.kind = kind;
    io.strip_managed_fields = 1;
    co_kube_informer *inf = NULL;
    int rc;
    if ((rc = co_kube_informer_new(&inf, m->client, &io)) < 0 ||
        (rc = co_kube_informer_add_handlers(inf, h)) < 0 ||
        (rc = co_kube_informer_start(inf)) < 0) {
        co_kube_informer_free(inf);
        return rc;
    }
    *out = inf;
    return 0;
}

int ctl_manager__new_policy_informer(co_kube_informer **out, ctl_manager *m)
{
    co_kube_handlers h = {on_policy_add, on_policy_update, on_policy_add, m};
    return new_optional_informer(out, m, COMPONENT_API, "ComponentPolicy", &h);
}

/* Flux source events are filtered by on_flux_update() alone (creations and deletions of sources
 * are ignored; docs/behaviour.md, "Source-change triggers"). */
int ctl_manager__new_flux_informer(co_kube_informer **out, ctl_manager *m, size_t kind)
{
    co_kube_handlers h = {NULL, on_flux_update, NULL, m};
    return new_optional_informer(out, m, FLUX_API, ctl_manager__flux_kinds[kind][1], &h);
}

/* ---- Blueprint handlers (docs/behaviour.md, "Blueprint sources") ------------------------- */

/* A Blueprint's content as its Components will resolve it: they are queued unless already
 * Ready with this digest and revision. */
static void requeue_blueprint(ctl_manager *m, const struct json_object *bp)
{
    int64_t gen = 0;
    char dig[CO_SHA256_HEX_LEN + 1];
    if (co_json_get_int64(&gen, bp, "metadata", "generation", NULL) < 0 ||
        co_blueprint_digest(dig, co_json_get(bp, "spec", "files", NULL)) < 0) {
        co_error_clear();
        return;
    }
    char *rev = co_blueprint_revision(gen);
    requeue_by_source(m, bp, dig, rev);
    free(rev);
}

static void on_blueprint_add(const struct json_object *obj, void *payload)
{
    requeue_blueprint(payload, obj);
    ctl_manager__blueprint_changed(payload, obj);
}

static void on_blueprint_update(const struct json_object *old_obj,
                                const struct json_object *new_obj,
                                void *payload)
{
    int64_t og = 0, ng = 0;
    if (co_json_get_int64(&og, old_obj, "metadata", "generation", NULL) < 0 ||
        co_json_get_int64(&ng, new_obj, "metadata", "generation", NULL) < 0) {
        co_error_clear();
    }
    if (og != ng) {
        requeue_blueprint(payload, new_obj);
    }
    if (og != ng ||
        !same_json(co_json_get(old_obj, "metadata", "annotations", NULL),
                   co_json_get(new_obj, "metadata", "annotations", NULL)) ||
        !same_json(co_json_get(old_obj, "metadata", "deletionTimestamp", NULL),
                   co_json_get(new_obj, "metadata", "deletionTimestamp", NULL))) {
        ctl_manager__blueprint_changed(payload, new_obj);
    }
}

int ctl_manager__new_blueprint_informer(co_kube_informer **out, ctl_manager *m)
{
    co_kube_handlers h = {on_blueprint_add, on_blueprint_update, NULL, m};
    return new_optional_informer(out, m, CO_BLUEPRINT_API_VERSION, CO_BLUEPRINT_KIND, &h);
}

static void on_version_add(const struct json_object *obj, void *payload)
{
    ctl_manager *m = payload;
    const char *bp = co_json_str(co_json_get(obj, "spec", NULL), "blueprint", NULL);
    if (bp) {
        ctl_manager__blueprint_enqueue(m, co_json_meta_namespace(obj), bp, 0);
    }
}

int ctl_manager__new_blueprint_version_informer(co_kube_informer **out, ctl_manager *m)
{
    co_kube_handlers h = {on_version_add, NULL, NULL, m};
    return new_optional_informer(out, m, CO_BLUEPRINT_API_VERSION, CO_BLUEPRINT_VERSION_KIND, &h);
}

/* Whether a CRD the manager watches when served is still unwatched (crd_mu held). */
bool ctl_manager__crd_missing(const ctl_manager *m)
{
    bool missing = !m->policy_inf || !m->bp_inf || !m->bpv_inf;
    for (size_t i = 0; i < NFLUX; i++) {
        missing = missing || !m->flux_inf[i];
    }
    return missing;
}

/* Waits for the first list of @p inf in short steps, so that stopping the manager is never held
 * up for long. */
static bool await_synced(ctl_manager *m, co_kube_informer *inf)
{
    for (long waited = 0; waited < SYNC_TIMEOUT_MS && !atomic_load(&m->crd_stop); waited += 1000) {
        if (co_kube_informer_wait_synced(inf, 1000) == 0) {
            return true;
        }
        co_error_clear();
    }
    return co_kube_informer_has_synced(inf);
}

/* A Flux kind watched late: its sources may have published artifacts while nobody watched, so
 * each one is judged as if it had just been updated. */
static void flux_catch_up(ctl_manager *m, co_kube_informer *inf)
{
    struct json_object *all = NULL;
    if (co_kube_informer_list(&all, inf, NULL) < 0) {
        co_error_clear();
        return;
    }
    size_t n = json_object_array_length(all);
    for (size_t i = 0; i < n; i++) {
        on_flux_update(NULL, json_object_array_get_idx(all, i), m);
    }
    json_object_put(all);
}

/* Publishes @p inf into @p slot once it has synced (else drops it, to try again at the next
 * look) and says whether it did. */
static bool publish_informer(ctl_manager *m, co_kube_informer **slot, co_kube_informer *inf)
{
    if (!await_synced(m, inf)) {
        if (!atomic_load(&m->crd_stop)) {
            co_log(CO_LOG_WARN, "a late informer did not sync; trying again", "error",
                   co_error_last(), NULL);
        }
        co_error_clear();
        co_kube_informer_free(inf);
        return false;
    }
    pthread_mutex_lock(&m->crd_mu);
    *slot = inf; /* stopped and freed with the manager */
    pthread_mutex_unlock(&m->crd_mu);
    return !atomic_load(&m->crd_stop);
}

/* One look for every CRD that was not served at the last one. */
static void probe_crds(ctl_manager *m)
{
    pthread_mutex_lock(&m->crd_mu);
    bool want_policy = !m->policy_inf;
    bool want_bp = !m->bp_inf;
    bool want_bpv = !m->bpv_inf;
    bool want_flux[NFLUX];
    for (size_t i = 0; i < NFLUX; i++) {
        want_flux[i] = !m->flux_inf[i];
    }
    pthread_mutex_unlock(&m->crd_mu);
    co_kube_informer *inf = NULL;
    if (want_policy && ctl_manager__new_policy_informer(&inf, m) < 0) {
        co_log(CO_LOG_WARN, "cannot watch ComponentPolicies", "error", co_error_last(), NULL);
        co_error_clear();
    } else if (inf && publish_informer(m, &m->policy_inf, inf)) {
        co_log(CO_LOG_INFO, "ComponentPolicy CRD found; policies are enforced", NULL);
        enqueue_components(m, NULL);
        ctl_manager__audit_trigger(m);
    }
    inf = NULL;
    if (want_bpv && ctl_manager__new_blueprint_version_informer(&inf, m) < 0) {
        co_log(CO_LOG_WARN, "cannot watch BlueprintVersions", "error", co_error_last(), NULL);
        co_error_clear();
    } else if (inf) {
        (void)publish_informer(m, &m->bpv_inf, inf);
    }
    inf = NULL;
    if (want_bp && ctl_manager__new_blueprint_informer(&inf, m) < 0) {
        co_log(CO_LOG_WARN, "cannot watch Blueprints", "error", co_error_last(), NULL);
        co_error_clear();
    } else if (inf && publish_informer(m, &m->bp_inf, inf)) {
        co_log(CO_LOG_INFO, "Blueprint CRD found; Blueprints are watched", NULL);
    }
    for (size_t i = 0; i < NFLUX && !atomic_load(&m->crd_stop); i++) {
        inf = NULL;
        if (want_flux[i] && ctl_manager__new_flux_informer(&inf, m, i) < 0) {
            co_log(CO_LOG_WARN, "cannot watch Flux sources", "kind", ctl_manager__flux_kinds[i][1],
                   "error", co_error_last(), NULL);
            co_error_clear();
        } else if (inf && publish_informer(m, &m->flux_inf[i], inf)) {
            co_log(CO_LOG_INFO, "Flux source CRD found; its sources are watched", "kind",
                   ctl_manager__flux_kinds[i][1], NULL);
            flux_catch_up(m, inf);
        }
    }
}

/*
 * Runs while a CRD the manager watches is not served: the ComponentPolicy CRD and the Flux
 * source CRDs may be installed after the controller. It looks for them every crd_probe_ns. A new
 * informer is published only once it has synced; then every Component is enqueued (a policy
 * applies without a restart), or those whose Flux source has an artifact they have not seen (a
 * new artifact does not wait for the requeue interval). Workers never wait for the prober: it
 * holds crd_mu only to publish.
 */
void *ctl_manager__crd_prober(void *arg)
{
    ctl_manager *m = arg;
    pthread_mutex_lock(&m->crd_mu);
    while (!atomic_load(&m->crd_stop) && ctl_manager__crd_missing(m)) {
        struct timespec ts = co_monotonic_deadline_ns(m->crd_probe_ns);
        pthread_cond_timedwait(&m->crd_cv, &m->crd_mu, &ts);
        if (atomic_load(&m->crd_stop)) {
            break;
        }
        pthread_mutex_unlock(&m->crd_mu);
        probe_crds(m);
        pthread_mutex_lock(&m->crd_mu);
    }
    pthread_mutex_unlock(&m->crd_mu);
    return NULL;
}

co_kube_informer *ctl_manager__policy_informer(ctl_manager *m)
{
    pthread_mutex_lock(&m->crd_mu);
    co_kube_informer *inf = m->policy_inf;
    pthread_mutex_unlock(&m->crd_mu);
    return inf;
}

co_kube_informer *ctl_manager__blueprint_version_informer(ctl_manager *m)
{
    pthread_mutex_lock(&m->crd_mu);
    co_kube_informer *inf = m->bpv_inf;
    pthread_mutex_unlock(&m->crd_mu);
    return inf;
}

co_kube_informer *ctl_manager__flux_informer(ctl_manager *m, size_t kind)
{
    pthread_mutex_lock(&m->crd_mu);
    co_kube_informer *inf = m->flux_inf[kind];
    pthread_mutex_unlock(&m->crd_mu);
    return inf;
}

int ctl_manager__start_component_informer(ctl_manager *m, co_kube_informer **out, const char *ns)
{
    co_kube_informer_options io = {0};
    io.api_version = COMPONENT_API;
    io.kind = "Component";
    io.namespace = ns;
    io.label_selector = m->label_selector;
    io.strip_managed_fields = 1;
    /* a Component's inventory repeats itself: a ten-item status deflates about eight times, and
     * the reconciler reads each Component once a pass */
    io.compress_over = COMPONENT_DEFLATE_OVER;
    co_kube_informer *inf = NULL;
    int rc = co_kube_informer_new(&inf, m->client, &io);
    if (rc < 0) {
        return rc;
    }
    co_kube_handlers h = {on_comp_add, on_comp_update, on_comp_delete, m};
    if ((rc = co_kube_informer_add_index(inf, "source", index_source, NULL)) < 0 ||
        (rc = co_kube_informer_add_index(inf, "inventory", index_inventory, NULL)) < 0 ||
        (rc = co_kube_informer_add_handlers(inf, &h)) < 0 ||
        (rc = co_kube_informer_start(inf)) < 0) {
        co_kube_informer_free(inf);
        return rc;
    }
    *out = inf;
    return 0;
}
