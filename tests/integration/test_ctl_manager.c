/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manager's wiring against the real kube-apiserver: the event recorder exists before the
 * workers do, so the first reconciles record their dependents' events, except for a Component
 * that disables them; a dependant outside the
 * watched namespaces or the label selector still blocks its dependency's deletion, also for a
 * controller whose rights end at the namespaces it watches; and Flux source CRDs installed
 * after start are watched without a restart, on a private control plane that starts without
 * them.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "co/util/digest.h"
#include "co/util/duration.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_event.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_depcache.h"
#include "controller/ctl_health.h"
#include "controller/ctl_inventory.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_manager_int.h"
#include "controller/ctl_pending.h"
#include "controller/ctl_sources.h"
#include "controller/ctl_state.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_archive_builder.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_kubectl.h"
#include "tests/support/test_support.h"

#define WAIT_MS    120000L
#define FLUX_GROUP "source.toolkit.fluxcd.io"
#define SRC        "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"
#define CM_TEXT(name)                                                                              \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name "\"},"          \
    "\"data\":{\"k\":\"v\"}}\n"

static co_kube_client *admin;
static char *srcdir;
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;

/* Whether new_manager() turns on events on dependents (--dependent-events). */
static bool with_dependent_events = true;
static bool with_cache_dependents = false;

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    char path[4096];
    snprintf(path, sizeof(path), "%s/base/cm.yaml", srcdir);
    co_test_write_file(path, CM_TEXT("base-cm"), strlen(CM_TEXT("base-cm")));
    snprintf(path, sizeof(path), "%s/first/cm.yaml", srcdir);
    co_test_write_file(path, CM_TEXT("first-cm"), strlen(CM_TEXT("first-cm")));
    snprintf(path, sizeof(path), "%s/quiet/cm.yaml", srcdir);
    co_test_write_file(path, CM_TEXT("quiet-cm"), strlen(CM_TEXT("quiet-cm")));
    snprintf(path, sizeof(path), "%s/watched/cm.yaml", srcdir);
    co_test_write_file(path, CM_TEXT("watched-cm"), strlen(CM_TEXT("watched-cm")));
    /* no kube-controller-manager runs here: this Deployment never becomes available */
    static const char rollout[] =
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
        "\"rollout\"},\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{\"app\":"
        "\"rollout\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"rollout\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"registry.invalid/c:1\"}]}}}}\n";
    snprintf(path, sizeof(path), "%s/rollout/deploy.yaml", srcdir);
    co_test_write_file(path, rollout, strlen(rollout));
    src_ops = ctl_test_source_ops();
    app_ops = ctl_test_apply_ops();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    curl_global_cleanup();
    return 0;
}

/* A manager on @p kubeconfig watching namespace @p ns (NULL: all) and @p selector (NULL: all
 * Components); not started. */
static ctl_manager *new_manager(const char *kubeconfig,
                                const char *ns,
                                const char *selector,
                                const ctl_source_ops *source,
                                const ctl_apply_ops *apply)
{
    ctl_manager_options o = {0};
    o.kubeconfig = kubeconfig;
    o.policy_probe_ns = CO_SECOND;
    o.workers = 3;
    o.namespaces = ns ? &ns : NULL;
    o.nnamespaces = ns ? 1 : 0;
    o.label_selector = selector;
    o.source = source;
    o.apply = apply;
    o.dependent_events = with_dependent_events;
    o.cache_dependents = with_cache_dependents;
    ctl_manager *m = NULL;
    assert_co_pass(ctl_manager_new(&m, &o));
    return m;
}

static void delete_component(const char *ns, const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
}

static void delete_namespace(const char *ns)
{
    co_kube_ref ref = {"v1", "Namespace", NULL, ns};
    (void)!co_kube_delete(NULL, admin, &ref, NULL);
}

static char *condition_message(co_kube_client *c, const char *ns, const char *name)
{
    struct json_object *obj = ctl_test_get_component(c, ns, name);
    struct json_object *conds = co_json_get(obj, "status", "conditions", NULL);
    struct json_object *m =
        conds ? co_json_get(json_object_array_get_idx(conds, 0), "message", NULL) : NULL;
    char *msg = co_xstrdup(m ? json_object_get_string(m) : "");
    json_object_put(obj);
    return msg;
}

/* ---- events ------------------------------------------------------------------------------ */

typedef struct event_wait {
    const char *ns;
    const char *name;
    const char *reason;
} event_wait;

static int event_recorded(void *payload)
{
    const event_wait *w = payload;
    struct json_object *list = NULL;
    co_kube_list_options lo = {0};
    char *sel = co_xasprintf("involvedObject.name=%s,reason=%s", w->name, w->reason);
    lo.field_selector = sel;
    int rc = co_kube_list(&list, admin, &(co_kube_ref){"v1", "Event", w->ns, NULL}, &lo);
    free(sel);
    size_t n = rc == 0 ? json_object_array_length(co_json_get(list, "items", NULL)) : 0;
    json_object_put(list);
    return n > 0;
}

/* Events about dependents go through the manager's recorder, which exists from
 * ctl_manager_new() on: the first reconciles (a Component that exists when the controller
 * starts) record them too. So does the store of statuses its passes hold back for one pass
 * (docs/controller-performance.md, "Deferred status writes"; integration/test_ctl_requests pins
 * what holding does), empty once every Component is Ready. */
static void test_ctl_manager__recorder_exists_before_the_workers(void **state)
{
    (void)state;
    char *ns = co_test_kube_namespace(admin, "ctl-mgr-ev-");
    ctl_test_create_component(admin, ns, "first", "{" SRC ",\"path\":\"first\"}");
    ctl_apply_ops engine_ops = ctl_apply_engine_ops();
    ctl_manager *m =
        new_manager(co_test_env("CO_TEST_KUBECONFIG"), ns, NULL, &src_ops, &engine_ops);
    assert_non_null(ctl_manager_recorder(m));
    assert_non_null(m->env.pending);
    assert_ptr_equal(m->env.pending, m->pending);
    assert_co_pass(ctl_manager_start(m));
    ctl_test_wait_state(admin, ns, "first", "Ready", "Ready", WAIT_MS);
    assert_int_equal(ctl_pending_len(m->pending), 0);
    assert_co_pass(co_kube_recorder_flush(ctl_manager_recorder(m), 30000));
    event_wait w = {ns, "first-cm", "Created"};
    assert_true(co_test_poll(event_recorded, &w, WAIT_MS));

    delete_component(ns, "first");
    ctl_test_wait_gone(admin, ns, "first", WAIT_MS);
    ctl_manager_free(m);
    delete_namespace(ns);
    free(ns);
}

/* Without --dependent-events (the default) the dependents get no events; the Component gets its
 * own, one per state it reached. */
static void test_ctl_manager__dependent_events_only_when_enabled(void **state)
{
    (void)state;
    char *ns = co_test_kube_namespace(admin, "ctl-mgr-noev-");
    ctl_test_create_component(admin, ns, "first", "{" SRC ",\"path\":\"first\"}");
    ctl_apply_ops engine_ops = ctl_apply_engine_ops();
    with_dependent_events = false;
    ctl_manager *m =
        new_manager(co_test_env("CO_TEST_KUBECONFIG"), ns, NULL, &src_ops, &engine_ops);
    with_dependent_events = true;
    assert_co_pass(ctl_manager_start(m));
    ctl_test_wait_state(admin, ns, "first", "Ready", "Ready", WAIT_MS);
    assert_co_pass(co_kube_recorder_flush(ctl_manager_recorder(m), 30000));
    event_wait ready = {ns, "first", "Ready"};
    assert_true(co_test_poll(event_recorded, &ready, WAIT_MS));
    event_wait created = {ns, "first-cm", "Created"};
    assert_false(event_recorded(&created));
    /* the Component went to Ready in one pass: Ready is its only event */
    struct json_object *list = NULL;
    co_kube_list_options lo = {0};
    lo.field_selector = "involvedObject.name=first";
    assert_co_pass(co_kube_list(&list, admin, &(co_kube_ref){"v1", "Event", ns, NULL}, &lo));
    assert_int_equal(json_object_array_length(co_json_get(list, "items", NULL)), 1);
    json_object_put(list);

    delete_component(ns, "first");
    ctl_test_wait_gone(admin, ns, "first", WAIT_MS);
    ctl_manager_free(m);
    delete_namespace(ns);
    free(ns);
}

static int configmap_present(void *payload)
{
    const char *const *ref = payload;
    struct json_object *obj = NULL;
    int rc = co_kube_get(&obj, admin, &(co_kube_ref){"v1", "ConfigMap", ref[0], ref[1]}, NULL);
    json_object_put(obj);
    co_error_clear();
    return rc == 0;
}

/* A started manager of @p ns with the real apply engine and the dependents cache. */
static ctl_manager *cached_manager(const char *ns)
{
    ctl_apply_ops engine_ops = ctl_apply_engine_ops();
    with_cache_dependents = true;
    ctl_manager *m =
        new_manager(co_test_env("CO_TEST_KUBECONFIG"), ns, NULL, &src_ops, &engine_ops);
    with_cache_dependents = false;
    assert_co_pass(ctl_manager_start(m));
    return m;
}

static int cache_serves_configmaps(void *payload)
{
    return payload && ctl_depcache_serves(payload, "", "v1", "ConfigMap");
}

/* With the dependents cache, a dependent deleted behind the controller's back queues its
 * Component, which creates it again: here the Component's next requeue is an hour away. */
static void test_ctl_manager__deleted_dependent_queues_its_component(void **state)
{
    (void)state;
    char *ns = co_test_kube_namespace(admin, "ctl-mgr-dep-");
    ctl_test_create_component(admin, ns, "watched",
                              "{" SRC ",\"path\":\"watched\",\"requeueInterval\":\"1h\"}");
    ctl_manager *m = cached_manager(ns);
    ctl_test_wait_state(admin, ns, "watched", "Ready", "Ready", WAIT_MS);
    const char *cm[2] = {ns, "watched-cm"};
    assert_true(configmap_present(cm));
    /* the cache watches ConfigMaps from the first one applied on */
    assert_true(co_test_poll(cache_serves_configmaps, ctl_manager_dependents_cache(m), WAIT_MS));
    co_kube_ref ref = {"v1", "ConfigMap", ns, "watched-cm"};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    assert_true(co_test_poll(configmap_present, cm, WAIT_MS));

    delete_component(ns, "watched");
    ctl_test_wait_gone(admin, ns, "watched", WAIT_MS);
    ctl_manager_free(m);
    delete_namespace(ns);
    free(ns);
}

/* A string field for assert_string_equal(), which cannot take NULL. */
static const char *or_absent(const char *s)
{
    return s ? s : "(absent)";
}

static int cache_serves_deployments(void *payload)
{
    return payload && ctl_depcache_serves(payload, "apps", "v1", "Deployment");
}

/* A dependent that exists when the cache starts reaches it through a LIST, whose items the API
 * server sends without their type. The cached copy must still read as a Deployment: without its
 * type, the readiness rules took it for an object of no known kind, current whatever its status,
 * and a pass served from the cache made the Component Ready before its Deployment was available. */
static void test_ctl_manager__cached_dependent_listed_at_start_keeps_its_kind(void **state)
{
    (void)state;
    char *ns = co_test_kube_namespace(admin, "ctl-mgr-kind-");
    ctl_test_create_component(admin, ns, "rollout",
                              "{" SRC ",\"path\":\"rollout\",\"requeueInterval\":\"1h\"}");
    ctl_manager *first = cached_manager(ns);
    ctl_test_wait_state(admin, ns, "rollout", "Processing", NULL, WAIT_MS);
    ctl_manager_free(first);

    /* a restarted controller: its cache lists the Deployment created before it */
    ctl_manager *m = cached_manager(ns);
    assert_true(co_test_poll(cache_serves_deployments, ctl_manager_dependents_cache(m), WAIT_MS));
    struct json_object *live = NULL;
    assert_co_pass(
        co_kube_get(&live, admin, &(co_kube_ref){"apps/v1", "Deployment", ns, "rollout"}, NULL));
    const char *owner = co_json_str(live, "metadata", "labels", CTL_LABEL_OWNER_ID, NULL);
    assert_non_null(owner);
    struct json_object *cached = NULL;
    assert_co_pass(ctl_depcache_get(&cached, ctl_manager_dependents_cache(m), "apps", "v1",
                                    "Deployment", ns, "rollout", owner));
    assert_string_equal(or_absent(co_json_str(cached, "apiVersion", NULL)), "apps/v1");
    assert_string_equal(or_absent(co_json_str(cached, "kind", NULL)), "Deployment");
    ctl_health h = CTL_HEALTH_UNKNOWN;
    assert_co_pass(ctl_health_compute(&h, NULL, cached, CTL_ANN_STATUS_HINT, (int64_t)time(NULL)));
    assert_int_equal(h, CTL_HEALTH_IN_PROGRESS);
    json_object_put(cached);
    json_object_put(live);

    /* and no pass so far took it for ready */
    char st[64], reason[64];
    ctl_test_state(admin, ns, "rollout", st, sizeof(st), reason, sizeof(reason));
    assert_string_equal(st, "Processing");

    delete_component(ns, "rollout");
    ctl_test_wait_gone(admin, ns, "rollout", WAIT_MS);
    ctl_manager_free(m);
    delete_namespace(ns);
    free(ns);
}

/* A Component annotated component-operator.cs.sap.com/disable-events: "true" (docs/behaviour.md,
 * "Create, update and delete") gets no events about its dependents, where one without it does. */
static void test_ctl_manager__disable_events_suppresses_dependent_events(void **state)
{
    (void)state;
    char *ns = co_test_kube_namespace(admin, "ctl-mgr-quiet-");
    struct json_object *quiet = co_test_json(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":"
        "{\"namespace\":\"%s\",\"name\":\"quiet\",\"annotations\":{\"component-operator.cs.sap."
        "com/disable-events\":\"true\"}},\"spec\":{" SRC ",\"path\":\"quiet\"}}",
        ns);
    assert_co_pass(co_kube_create(NULL, admin, quiet, NULL));
    json_object_put(quiet);
    ctl_test_create_component(admin, ns, "first", "{" SRC ",\"path\":\"first\"}");
    ctl_apply_ops engine_ops = ctl_apply_engine_ops();
    ctl_manager *m =
        new_manager(co_test_env("CO_TEST_KUBECONFIG"), ns, NULL, &src_ops, &engine_ops);
    assert_co_pass(ctl_manager_start(m));
    ctl_test_wait_state(admin, ns, "quiet", "Ready", "Ready", WAIT_MS);
    ctl_test_wait_state(admin, ns, "first", "Ready", "Ready", WAIT_MS);
    assert_co_pass(co_kube_recorder_flush(ctl_manager_recorder(m), 30000));
    event_wait loud = {ns, "first-cm", "Created"};
    assert_true(co_test_poll(event_recorded, &loud, WAIT_MS));
    event_wait silent = {ns, "quiet-cm", "Created"};
    assert_false(event_recorded(&silent));

    delete_component(ns, "quiet");
    delete_component(ns, "first");
    ctl_test_wait_gone(admin, ns, "quiet", WAIT_MS);
    ctl_test_wait_gone(admin, ns, "first", WAIT_MS);
    ctl_manager_free(m);
    delete_namespace(ns);
    free(ns);
}

/* ---- dependants outside the watched set ------------------------------------------------- */

/* "base" in @p ns, watched by @p m, and "app" depending on it, created in @p app_ns with
 * labels @p app_labels where @p m does not look: deleting "base" waits for "app". */
static void assert_unwatched_dependant_blocks(ctl_manager *m,
                                              const char *ns,
                                              const char *base_labels,
                                              const char *app_ns,
                                              const char *app_labels)
{
    assert_co_pass(ctl_manager_start(m));
    struct json_object *base = co_test_json(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":"
        "{\"namespace\":\"%s\",\"name\":\"base\",\"labels\":%s},\"spec\":{" SRC ",\"path\":"
        "\"base\",\"retryInterval\":\"1s\"}}",
        ns, base_labels);
    assert_co_pass(co_kube_create(NULL, admin, base, NULL));
    json_object_put(base);
    ctl_test_wait_state(admin, ns, "base", "Ready", "Ready", WAIT_MS);
    /* nobody reconciles "app" here: it never gets a status, yet it is live */
    struct json_object *app = co_test_json(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":"
        "{\"namespace\":\"%s\",\"name\":\"app\",\"labels\":%s},\"spec\":{" SRC ",\"path\":"
        "\"base\",\"dependencies\":[{\"namespace\":\"%s\",\"name\":\"base\"}]}}",
        app_ns, app_labels, ns);
    assert_co_pass(co_kube_create(NULL, admin, app, NULL));
    json_object_put(app);

    delete_component(ns, "base");
    ctl_test_wait_state(admin, ns, "base", "DeletionPending", "DeletionRetrying", WAIT_MS);
    char *msg = condition_message(admin, ns, "base");
    char *want = co_xasprintf("deletion blocked by depending component %s/app", app_ns);
    assert_contains(msg, want);
    free(want);
    free(msg);
    co_kube_ref cm = {"v1", "ConfigMap", ns, "base-cm"};
    struct json_object *obj = NULL;
    assert_co_pass(co_kube_get(&obj, admin, &cm, NULL));
    json_object_put(obj);

    /* the dependant goes (it has no finalizer: nobody reconciled it): so does the dependency */
    delete_component(app_ns, "app");
    ctl_test_wait_gone(admin, app_ns, "app", WAIT_MS);
    ctl_test_wait_gone(admin, ns, "base", WAIT_MS);
    assert_int_equal(co_kube_get(&obj, admin, &cm, NULL), CO_ENOTFOUND);
}

static void test_ctl_manager__dependant_in_an_unwatched_namespace_blocks_deletion(void **state)
{
    (void)state;
    char *ns = co_test_kube_namespace(admin, "ctl-mgr-a-");
    char *other = co_test_kube_namespace(admin, "ctl-mgr-b-");
    ctl_manager *m = new_manager(co_test_env("CO_TEST_KUBECONFIG"), ns, NULL, &src_ops, &app_ops);
    assert_unwatched_dependant_blocks(m, ns, "{}", other, "{}");
    ctl_manager_free(m);
    delete_namespace(ns);
    delete_namespace(other);
    free(ns);
    free(other);
}

static void test_ctl_manager__dependant_outside_the_label_selector_blocks_deletion(void **state)
{
    (void)state;
    char *ns = co_test_kube_namespace(admin, "ctl-mgr-sel-");
    char *shard = co_test_random_name("shard-", 8);
    char *selector = co_xasprintf("test.co/shard=%s", shard);
    char *mine = co_xasprintf("{\"test.co/shard\":\"%s\"}", shard);
    /* every namespace, one shard: the dependant sits beside its dependency, in another shard */
    ctl_manager *m =
        new_manager(co_test_env("CO_TEST_KUBECONFIG"), NULL, selector, &src_ops, &app_ops);
    assert_unwatched_dependant_blocks(m, ns, mine, ns, "{\"test.co/shard\":\"another\"}");
    ctl_manager_free(m);
    delete_namespace(ns);
    free(mine);
    free(selector);
    free(shard);
    free(ns);
}

/* Rights on Components in @p ns only: a list in every namespace is forbidden. */
typedef struct narrow_rights {
    char *name; /* of the ClusterRole, its binding, the Role and its RoleBinding */
    const char *ns;
} narrow_rights;

static int can_list_components(void *payload)
{
    const narrow_rights *r = payload;
    co_kube_client *c = co_test_kube_client("CO_TEST_RESTRICTED_KUBECONFIG");
    struct json_object *list = NULL;
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", r->ns, NULL};
    int ok = co_kube_list(&list, c, &ref, NULL) == 0;
    co_error_clear();
    json_object_put(list);
    co_kube_client_free(c);
    return ok;
}

/* Grants the restricted user what the manager needs to run for @p ns, with rights on
 * Components (and what it deploys) in @p ns alone. */
static narrow_rights grant_namespace_rights(const char *ns)
{
    narrow_rights r = {co_test_random_name("co-narrow-", 8), ns};
    const char *user = co_test_env("CO_TEST_RESTRICTED_USER");
    /* the cluster id, the namespace a policy selects by, and the caches of cluster-wide kinds
     * (ComponentPolicies, Blueprints and Flux sources, where earlier suites installed their
     * CRDs) */
    struct json_object *objs[4] = {
        co_test_json("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\","
                     "\"metadata\":{\"name\":\"%s\"},\"rules\":[{\"apiGroups\":[\"\"],"
                     "\"resources\":[\"namespaces\"],\"verbs\":[\"get\"]},{\"apiGroups\":"
                     "[\"core.cs.sap.com\"],\"resources\":[\"componentpolicies\",\"blueprints\","
                     "\"blueprintversions\"],\"verbs\":"
                     "[\"get\",\"list\",\"watch\"]},{\"apiGroups\":[\"" FLUX_GROUP "\"],"
                     "\"resources\":[\"*\"],\"verbs\":[\"get\",\"list\",\"watch\"]}]}",
                     r.name),
        co_test_json("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":"
                     "\"ClusterRoleBinding\",\"metadata\":{\"name\":\"%s\"},\"roleRef\":"
                     "{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
                     "\"name\":\"%s\"},\"subjects\":[{\"apiGroup\":"
                     "\"rbac.authorization.k8s.io\",\"kind\":\"User\",\"name\":\"%s\"}]}",
                     r.name, r.name, user),
        co_test_json("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\","
                     "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"rules\":"
                     "[{\"apiGroups\":[\"core.cs.sap.com\"],\"resources\":[\"components\","
                     "\"components/status\",\"components/finalizers\"],\"verbs\":[\"*\"]},"
                     "{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\",\"events\"],"
                     "\"verbs\":[\"*\"]}]}",
                     r.name, ns),
        co_test_json("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\","
                     "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"roleRef\":"
                     "{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Role\","
                     "\"name\":\"%s\"},\"subjects\":[{\"apiGroup\":"
                     "\"rbac.authorization.k8s.io\",\"kind\":\"User\",\"name\":\"%s\"}]}",
                     r.name, ns, r.name, user),
    };
    for (size_t i = 0; i < 4; i++) {
        assert_co_pass(co_kube_create(NULL, admin, objs[i], NULL));
        json_object_put(objs[i]);
    }
    /* the authorizer learns of new bindings through its own watch */
    assert_true(co_test_poll(can_list_components, &r, WAIT_MS));
    return r;
}

/* Removes the grants (a namespace left terminating keeps its Roles: nothing deletes them). */
static void revoke_rights(narrow_rights *r)
{
    const co_kube_ref refs[4] = {
        {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", NULL, r->name},
        {"rbac.authorization.k8s.io/v1", "ClusterRole", NULL, r->name},
        {"rbac.authorization.k8s.io/v1", "RoleBinding", r->ns, r->name},
        {"rbac.authorization.k8s.io/v1", "Role", r->ns, r->name},
    };
    for (size_t i = 0; i < 4; i++) {
        assert_co_pass(co_kube_delete(NULL, admin, &refs[i], NULL));
    }
    free(r->name);
}

/* A controller allowed to read Components only in the namespace it watches cannot list them
 * everywhere: it still searches that namespace whole, beyond its label selector. */
static void test_ctl_manager__without_cluster_rights_the_namespace_is_searched_whole(void **state)
{
    (void)state;
    char *ns = co_test_kube_namespace(admin, "ctl-mgr-narrow-");
    narrow_rights rights = grant_namespace_rights(ns);
    char *shard = co_test_random_name("shard-", 8);
    char *selector = co_xasprintf("test.co/shard=%s", shard);
    char *mine = co_xasprintf("{\"test.co/shard\":\"%s\"}", shard);
    ctl_manager *m =
        new_manager(co_test_env("CO_TEST_RESTRICTED_KUBECONFIG"), ns, selector, &src_ops, &app_ops);
    assert_unwatched_dependant_blocks(m, ns, mine, ns, "{\"test.co/shard\":\"another\"}");
    ctl_manager_free(m);
    revoke_rights(&rights);
    delete_namespace(ns);
    free(mine);
    free(selector);
    free(shard);
    free(ns);
}

/* ---- Flux source CRDs installed after start ---------------------------------------------- */

/* Where the test finds the Flux source CRD of @p plural ("gitrepositories"); free(). */
static char *flux_crd_path(const char *plural)
{
    return co_xasprintf("%s/tests/fixtures/flux-crds/%s_%s.yaml", CO_SOURCE_ROOT, FLUX_GROUP,
                        plural);
}

/* Installs the Flux source CRD of @p plural through @p k and waits until it is established. */
static void install_flux_crd(const tkc *k, const char *plural)
{
    char *path = flux_crd_path(plural);
    /* no client validation: kube-apiserver 1.20 drops the CEL rules */
    tkc_ok(k, NULL, "create", "--validate=false", "-f", path, NULL);
    char *crd = co_xasprintf("crd/%s.%s", plural, FLUX_GROUP);
    tkc_ok(k, NULL, "wait", "--for=condition=Established", "--timeout=120s", crd, NULL);
    free(crd);
    free(path);
}

typedef struct artifact {
    char *url;
    char *digest;
} artifact;

/* Serves a tar.gz whose app/cm.yaml is ConfigMap "late-cm" with data.v = @p value. */
static artifact serve_artifact(test_httpd *srv, const char *value)
{
    char *text = co_xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                              "{\"name\":\"late-cm\"},\"data\":{\"v\":\"%s\"}}\n",
                              value);
    tab_entry e[] = {{TAB_FILE, 0, "app/cm.yaml", text, 0}};
    size_t len = 0;
    void *data = tab_build(TAB_TAR_GZ, e, 1, &len);
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, data, len);
    char *path = co_xasprintf("/late-%s.tar.gz", value);
    test_httpd_route(srv, path, 200, data, len, NULL);
    artifact a = {co_xasprintf("%s%s", test_httpd_url(srv), path), co_xasprintf("sha256:%s", hex)};
    free(path);
    free(data);
    free(text);
    return a;
}

/* Writes the status source-controller would: Ready for generation 1, artifact @p a. */
static void publish(const tkc *k, const char *ns, const artifact *a, const char *revision)
{
    char *patch = co_xasprintf(
        "{\"status\":{\"observedGeneration\":1,\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"True\",\"reason\":\"Succeeded\",\"message\":\"stored artifact\","
        "\"observedGeneration\":1,\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}],"
        "\"artifact\":{\"url\":\"%s\",\"digest\":\"%s\",\"revision\":\"%s\",\"path\":\"x\","
        "\"lastUpdateTime\":\"2026-01-01T00:00:00Z\"}}}",
        a->url, a->digest, revision);
    tkc_ok(k, NULL, "patch", "-n", ns, "gitrepositories.v1." FLUX_GROUP, "repo",
           "--subresource=status", "--type=merge", "-p", patch, NULL);
    free(patch);
}

static void wait_applied(co_kube_client *c, const char *ns, const char *rev)
{
    char last[256] = "";
    for (long waited = 0; waited < WAIT_MS; waited += 100) {
        struct json_object *obj = ctl_test_get_component(c, ns, "late");
        struct json_object *v = co_json_get(obj, "status", "lastAppliedRevision", NULL);
        bool ok = obj && ctl_state_component_ready(obj) && v &&
                  strcmp(json_object_get_string(v), rev) == 0;
        snprintf(last, sizeof(last), "%s, applied %s",
                 ctl_state_get(co_json_get(obj, "status", NULL)),
                 v ? json_object_get_string(v) : "nothing");
        json_object_put(obj);
        if (ok) {
            return;
        }
        usleep(100 * 1000);
    }
    fail_msg("%s/late: not Ready at %s in time (last: %s)", ns, rev, last);
}

static void test_ctl_manager__flux_crds_installed_after_start_are_watched(void **state)
{
    (void)state;
    co_test_controlplane cp = {0};
    co_test_controlplane_start(&cp);
    co_kube_client *pc = co_test_kube_client_for(cp.kubeconfig);
    ctl_test_install_crd(pc);
    char *ns = co_test_kube_namespace(pc, "ctl-mgr-flux-");
    char *dir = co_test_tmpdir();
    tkc k;
    tkc_init(&k, cp.kubeconfig, dir);
    test_httpd *srv = test_httpd_start();
    char *cache = co_xasprintf("%s/cache", dir);
    ctl_sources *sources = NULL;
    assert_co_pass(ctl_sources_new(&sources, cache));
    free(cache);
    ctl_source_ops flux_ops = ctl_sources_ops(sources);
    ctl_manager *m = new_manager(cp.kubeconfig, ns, NULL, &flux_ops, &app_ops);
    assert_co_pass(ctl_sources_attach(sources, m));
    assert_co_pass(ctl_manager_start(m));

    /* Flux arrives after the controller */
    install_flux_crd(&k, "gitrepositories");
    char *repo = co_xasprintf("{\"apiVersion\":\"%s/v1\",\"kind\":\"GitRepository\",\"metadata\":"
                              "{\"name\":\"repo\",\"namespace\":\"%s\"},\"spec\":{\"url\":"
                              "\"https://example.com/app.git\",\"interval\":\"1m\"}}",
                              FLUX_GROUP, ns);
    tkc_ok(&k, repo, "create", "-f", "-", NULL);
    free(repo);
    artifact v1 = serve_artifact(srv, "v1");
    publish(&k, ns, &v1, "main@sha1:1111");
    /* an hour between periodic passes: only a watch of the source can bring the next artifact
     * within the wait below */
    ctl_test_create_component(pc, ns, "late",
                              "{\"sourceRef\":{\"fluxGitRepository\":{\"name\":\"repo\"}},"
                              "\"path\":\"app\",\"requeueInterval\":\"1h\"}");
    wait_applied(pc, ns, "main@sha1:1111");

    artifact v2 = serve_artifact(srv, "v2");
    publish(&k, ns, &v2, "main@sha1:2222");
    wait_applied(pc, ns, "main@sha1:2222");
    co_kube_ref cm = {"v1", "ConfigMap", ns, "late-cm"};
    struct json_object *obj = NULL;
    assert_co_pass(co_kube_get(&obj, pc, &cm, NULL));
    assert_string_equal(json_object_get_string(co_json_get(obj, "data", "v", NULL)), "v2");
    json_object_put(obj);

    ctl_manager_free(m);
    ctl_sources_free(sources);
    test_httpd_stop(srv);
    free(v1.url);
    free(v1.digest);
    free(v2.url);
    free(v2.digest);
    tkc_dispose(&k);
    co_kube_client_free(pc);
    co_test_controlplane_stop(&cp);
    co_test_rmtree(dir);
    free(dir);
    free(ns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_manager__recorder_exists_before_the_workers),
        cmocka_unit_test(test_ctl_manager__dependent_events_only_when_enabled),
        cmocka_unit_test(test_ctl_manager__disable_events_suppresses_dependent_events),
        cmocka_unit_test(test_ctl_manager__deleted_dependent_queues_its_component),
        cmocka_unit_test(test_ctl_manager__cached_dependent_listed_at_start_keeps_its_kind),
        cmocka_unit_test(test_ctl_manager__dependant_in_an_unwatched_namespace_blocks_deletion),
        cmocka_unit_test(test_ctl_manager__dependant_outside_the_label_selector_blocks_deletion),
        cmocka_unit_test(test_ctl_manager__without_cluster_rights_the_namespace_is_searched_whole),
        cmocka_unit_test(test_ctl_manager__flux_crds_installed_after_start_are_watched),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
