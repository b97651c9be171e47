/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What one reconcile costs the API server, counted request by request: ctl_reconcile() with the
 * real apply engine over a transport that logs every request, against the real kube-apiserver.
 * A new Component with ten ConfigMaps reaches Ready in one pass with at most 14 requests after
 * its first read (its finalizer, the persisted inventory, one write per object, the final
 * status); a second reconcile with nothing changed
 * writes nothing and reads the Component and, with one LIST, its ConfigMaps. A pass that applied a
 * Deployment and waits for it holds its status back for the next pass (ctl_pending.h), which
 * applies nothing again. The client's discovery is warmed by one Component first, as in a running
 * controller, where it is cached per client. Component events are the manager's (one per state
 * reached, see test_ctl_manager.c); events on dependents are off unless --dependent-events.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "co/api/component.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_transport.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_depcache.h"
#include "controller/ctl_inventory.h"
#include "controller/ctl_pending.h"
#include "controller/ctl_reconcile.h"
#include "controller/ctl_state.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define SRC "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"

/* ---- fixture ----------------------------------------------------------------------------- */

static co_kube_client *admin;
static co_kube_config *cfg;
static co_kube_client *client;
static co_test_counting *counter;
static char *ns;
static char *srcdir;
static ctl_env env;

static void put_configmaps(const char *dir, const char *prefix, int n)
{
    for (int i = 0; i < n; i++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s/cm%d.yaml", srcdir, dir, i);
        char *text = co_xasprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\n"
                                  "data:\n  k: \"%d\"\n",
                                  prefix, i, i);
        co_test_write_file(path, text, strlen(text));
        free(text);
    }
}

/* A Deployment @p name of one replica in source directory @p dir, selecting label app=@p app. */
static void put_deployment(const char *dir, const char *name, const char *app)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s/deploy.yaml", srcdir, dir);
    char *text = co_xasprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n"
                              "spec:\n  replicas: 1\n  selector:\n    matchLabels: {app: %s}\n"
                              "  template:\n    metadata:\n      labels: {app: %s}\n    spec:\n"
                              "      containers:\n      - name: app\n        image: "
                              "registry.invalid/app:1\n",
                              name, app, app);
    co_test_write_file(path, text, strlen(text));
    free(text);
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    ns = co_test_kube_namespace(admin, "ctl-req-");
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    put_configmaps("warm", "warm", 1);
    put_configmaps("owned", "owned", 1);
    put_configmaps("ten", "ten", 10);
    put_configmaps("many", "many", 40);
    put_configmaps("cached", "cached", 10);
    put_configmaps("workload", "workload", 2);
    put_deployment("workload", "workload-app", "workload");
    put_configmaps("held", "held", 1);
    put_deployment("held", "held-app", "held");

    assert_co_pass(co_kube_config_load(&cfg, co_test_env("CO_TEST_KUBECONFIG"), NULL));
    counter = co_test_counting_new(cfg);
    co_kube_client_options o = CO_KUBE_CLIENT_OPTIONS_INIT;
    o.qps = -1;
    assert_co_pass(co_kube_client_new_with_transport(&client, cfg, &counter->base, &o));

    memset(&env, 0, sizeof(env));
    env.client = client;
    env.cluster_id = "test-cluster";
    env.backoff = ctl_backoff_new();
    env.source = ctl_test_source_ops();
    env.apply = ctl_apply_engine_ops();
    /* as the manager runs it: a pass waiting for its objects holds its status back */
    env.pending = ctl_pending_new();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_backoff_free(env.backoff);
    ctl_pending_free(env.pending);
    co_kube_client_free(client);
    co_kube_config_free(cfg);
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    free(ns);
    curl_global_cleanup();
    return 0;
}

/* Reconciles @p name until it is Ready (at most @p max passes); returns the passes run. */
static int reconcile_until_ready(const char *name, int max)
{
    for (int i = 1; i <= max; i++) {
        ctl_result res;
        assert_co_pass(ctl_reconcile(&res, &env, ns, name));
        struct json_object *c = ctl_test_get_component(admin, ns, name);
        bool ready = ctl_state_component_ready(c);
        json_object_put(c);
        if (ready) {
            return i;
        }
    }
    return -1;
}

static void test_ctl_requests__ten_configmaps_in_one_pass_then_nothing_written(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "warm", "{" SRC ",\"path\":\"warm\"}");
    assert_true(reconcile_until_ready("warm", 5) > 0);

    ctl_test_create_component(admin, ns, "ten", "{" SRC ",\"path\":\"ten\"}");
    co_test_counting_reset(counter);
    int passes = reconcile_until_ready("ten", 5);
    co_test_counting_print(counter, "first reconcile");
    assert_int_equal(passes, 1);
    /* the first read of the Component, then at most dependents + 4 */
    assert_true(counter->n >= 1);
    assert_int_equal(co_test_counting_count(counter, "GET", "/components/ten"), 1);
    size_t after_first_read = counter->n - 1;
    assert_true(after_first_read <= 14);
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/components/ten?"),
                     1); /* the finalizer */
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/configmaps/ten-"), 10);
    assert_int_equal(co_test_counting_count(counter, "GET", "/configmaps/"), 0);
    assert_true(co_test_counting_count(counter, "PATCH", "/components/ten/status") <= 2);
    for (int i = 0; i < 10; i++) {
        char name[32];
        snprintf(name, sizeof(name), "ten-%d", i);
        struct json_object *cm = NULL;
        assert_co_pass(co_kube_get(&cm, admin, &(co_kube_ref){"v1", "ConfigMap", ns, name}, NULL));
        json_object_put(cm);
    }
    struct json_object *c = ctl_test_get_component(admin, ns, "ten");
    assert_int_equal(json_object_array_length(co_json_get(c, "status", "inventory", NULL)), 10);
    char *applied = co_xstrdup(co_json_str(c, "status", "lastAppliedAt", NULL));
    json_object_put(c);

    /* nothing changed: nothing written */
    co_test_counting_reset(counter);
    ctl_result res;
    assert_co_pass(ctl_reconcile(&res, &env, ns, "ten"));
    co_test_counting_print(counter, "second reconcile");
    size_t writes = counter->n - co_test_counting_count(counter, "GET", NULL);
    assert_int_equal(writes, 0);
    /* the Component, then its ConfigMaps with one LIST by owner label */
    assert_int_equal(counter->n, 2);
    assert_int_equal(co_test_counting_count(counter, "GET", "/configmaps?"), 1);
    assert_int_equal(co_test_counting_count(counter, "GET", "/configmaps/"), 0);
    c = ctl_test_get_component(admin, ns, "ten");
    assert_true(ctl_state_component_ready(c));
    assert_string_equal(co_json_str(c, "status", "lastAppliedAt", NULL), applied);
    json_object_put(c);
    free(applied);
}

/* The manager that owns @p field (an "f:" key) of the spec in the managedFields of @p obj, or
 * NULL. */
static const char *spec_owner(const struct json_object *obj, const char *field)
{
    struct json_object *mf = co_json_get(obj, "metadata", "managedFields", NULL);
    for (size_t i = 0; mf && i < json_object_array_length(mf); i++) {
        struct json_object *e = json_object_array_get_idx(mf, i);
        if (co_json_get(e, "fieldsV1", "f:spec", field, NULL)) {
            return co_json_str(e, "manager", NULL);
        }
    }
    return NULL;
}

/* Whoever applies the Component's spec (a GitOps tool, server-side) keeps owning it after the
 * controller's status writes. They are merge patches of the status alone, which the API server
 * applies to the stored object, so the spec is unchanged for the field manager. A status PUT of
 * a body without the spec would, on an API server before 1.22, read as the spec removed and take
 * every spec field from its owner, and the tool's next apply could no longer remove a field it
 * dropped (docs/controller-performance.md). */
static void test_ctl_requests__status_writes_keep_the_owner_of_the_spec(void **state)
{
    (void)state;
    char *text =
        co_xasprintf("{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"name\":"
                     "\"owned\",\"namespace\":\"%s\"},\"spec\":{" SRC ",\"path\":\"owned\"}}",
                     CO_COMPONENT_V1ALPHA1, CO_COMPONENT_KIND, ns);
    struct json_object *obj = json_tokener_parse(text);
    free(text);
    assert_non_null(obj);
    co_kube_write_options wo = {0};
    wo.field_manager = "gitops";
    assert_co_pass(co_kube_apply(NULL, admin, obj, &wo));
    json_object_put(obj);
    co_test_counting_reset(counter);
    assert_true(reconcile_until_ready("owned", 5) > 0);
    assert_int_equal(co_test_counting_count(counter, "PUT", NULL), 0);
    assert_true(co_test_counting_count(counter, "PATCH", "/components/owned/status") >= 1);
    char *sent = co_test_counting_last_body(counter, "PATCH", "/components/owned/status");
    assert_non_null(sent);
    struct json_object *body = json_tokener_parse(sent);
    free(sent);
    assert_null(co_json_get(body, "spec", NULL));
    assert_non_null(co_json_str(body, "metadata", "resourceVersion", NULL));
    assert_string_equal(co_json_str(body, "status", "state", NULL), "Ready");
    json_object_put(body);

    struct json_object *c = NULL;
    co_kube_ref ref = {CO_COMPONENT_V1ALPHA1, CO_COMPONENT_KIND, ns, "owned"};
    assert_co_pass(co_kube_get(&c, admin, &ref, NULL));
    assert_true(ctl_state_component_ready(c));
    const char *owner = spec_owner(c, "f:path");
    assert_non_null(owner);
    assert_string_equal(owner, "gitops");
    owner = spec_owner(c, "f:sourceRef");
    assert_non_null(owner);
    assert_string_equal(owner, "gitops");
    json_object_put(c);
}

static bool configmap_exists(const char *name)
{
    struct json_object *cm = NULL;
    int rc = co_kube_get(&cm, admin, &(co_kube_ref){"v1", "ConfigMap", ns, name}, NULL);
    json_object_put(cm);
    return rc == 0;
}

/* An inventory over the plain-size limit is written packed; one stored in the plain form (by
 * an older controller, or the Go operator) is read and rewritten packed without touching a
 * dependent; the packed form is stable (an unchanged pass writes nothing) and names every
 * dependent for deletion. */
static void test_ctl_requests__large_inventory_packed_and_plain_still_read(void **state)
{
    (void)state;
    env.inventory_plain_max = SIZE_MAX;
    ctl_test_create_component(admin, ns, "many", "{" SRC ",\"path\":\"many\"}");
    assert_true(reconcile_until_ready("many", 5) > 0);
    struct json_object *c = ctl_test_get_component(admin, ns, "many");
    struct json_object *plain = co_json_get(c, "status", "inventory", NULL);
    assert_non_null(plain);
    assert_int_equal(json_object_array_length(plain), 40);
    assert_null(co_json_get(c, "status", "packedInventory", NULL));
    size_t plain_len = strlen(json_object_to_json_string_ext(plain, JSON_C_TO_STRING_PLAIN));
    struct json_object *plain_copy = co_json_copy(plain);
    json_object_put(c);

    /* the plain form read, and written packed: no dependent written */
    env.inventory_plain_max = 1024;
    co_test_counting_reset(counter);
    ctl_result res;
    assert_co_pass(ctl_reconcile(&res, &env, ns, "many"));
    co_test_counting_print(counter, "reconcile with a lower plain-size limit");
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/configmaps/"), 0);
    assert_int_equal(co_test_counting_count(counter, "DELETE", NULL), 0);
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/components/many/status"), 1);
    c = ctl_test_get_component(admin, ns, "many");
    assert_true(ctl_state_component_ready(c));
    assert_null(co_json_get(c, "status", "inventory", NULL));
    struct json_object *packed = co_json_get(c, "status", "packedInventory", NULL);
    assert_non_null(packed);
    assert_string_equal(co_json_str(packed, "encoding", NULL), "gzip");
    int64_t items = 0;
    assert_co_pass(co_json_get_int64(&items, packed, "items", NULL));
    assert_int_equal(items, 40);
    assert_true(strlen(co_json_str(packed, "data", NULL)) < plain_len / 2);
    struct json_object *unpacked = NULL;
    assert_co_pass(co_component_inventory_get(&unpacked, co_json_get(c, "status", NULL)));
    assert_true(co_json_equal(unpacked, plain_copy));
    json_object_put(unpacked);
    json_object_put(plain_copy);
    json_object_put(c);

    /* packed again to the same bytes: nothing to write */
    co_test_counting_reset(counter);
    assert_co_pass(ctl_reconcile(&res, &env, ns, "many"));
    assert_int_equal(counter->n - co_test_counting_count(counter, "GET", NULL), 0);

    /* deletion reads the packed list: every dependent goes */
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, "many"};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    int gone_after = -1;
    for (int i = 1; i <= 10 && gone_after < 0; i++) {
        assert_co_pass(ctl_reconcile(&res, &env, ns, "many"));
        struct json_object *obj = NULL;
        if (co_kube_get(&obj, admin, &ref, NULL) == CO_ENOTFOUND) {
            gone_after = i;
        }
        json_object_put(obj);
    }
    assert_true(gone_after > 0);
    for (int i = 0; i < 40; i++) {
        char name[32];
        snprintf(name, sizeof(name), "many-%d", i);
        assert_false(configmap_exists(name));
    }
    env.inventory_plain_max = 0;
}

/* ---- the dependents cache ------------------------------------------------------------------ */

typedef struct triggered {
    pthread_mutex_t mu;
    char last[256];
    int n;
} triggered;

static void on_changed(void *ctx, const char *cns, const char *name)
{
    triggered *t = ctx;
    pthread_mutex_lock(&t->mu);
    snprintf(t->last, sizeof(t->last), "%s/%s", cns, name);
    t->n++;
    pthread_mutex_unlock(&t->mu);
}

/* The cache's view of which Components this controller manages: all but "unmanaged". */
static bool manages(void *ctx, const char *cns, const char *name)
{
    (void)ctx;
    return strcmp(cns, ns) == 0 && strcmp(name, "unmanaged") != 0;
}

/* Creates @p kind @p name (a ConfigMap or a one-replica Deployment) carrying the owner marks of
 * Component @p component of cluster @p cluster, as the controller would write them. */
static void
create_marked(const char *kind, const char *name, const char *cluster, const char *component)
{
    char *owner_id = ctl_owner_id(cluster, ns, component);
    char *hashed = ctl_owner_label(owner_id);
    char *json = NULL;
    if (!strcmp(kind, "ConfigMap")) {
        json = co_xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                            "\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{\"%s\":\"%s\"},"
                            "\"annotations\":{\"%s\":\"%s\"}},\"data\":{\"k\":\"v\"}}",
                            name, ns, CTL_LABEL_OWNER_ID, hashed, CTL_ANN_OWNER_ID, owner_id);
    } else {
        json = co_xasprintf(
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{"
            "\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{\"%s\":\"%s\"},"
            "\"annotations\":{\"%s\":\"%s\"}},\"spec\":{\"replicas\":1,\"selector\":{"
            "\"matchLabels\":{\"app\":\"%s\"}},\"template\":{\"metadata\":{\"labels\":{"
            "\"app\":\"%s\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
            name, ns, CTL_LABEL_OWNER_ID, hashed, CTL_ANN_OWNER_ID, owner_id, name, name);
    }
    struct json_object *obj = co_test_json("%s", json);
    assert_co_pass(co_kube_create(NULL, admin, obj, NULL));
    json_object_put(obj);
    free(json);
    free(hashed);
    free(owner_id);
}

/* Waits (bounded) until the cache holds ConfigMap @p name with @p digest annotation (NULL: any).
 * Returns whether it did. */
static bool cache_holds(ctl_depcache *dc, const char *name, const char *hashed, const char *digest)
{
    for (int i = 0; i < 1000; i++) {
        struct json_object *obj = NULL;
        if (ctl_depcache_get(&obj, dc, "", "v1", "ConfigMap", ns, name, hashed) == 0) {
            const char *d = co_json_meta_annotation(obj, "component-operator.cs.sap.com/digest");
            bool ok = !digest || (d && strcmp(d, digest) == 0);
            json_object_put(obj);
            if (ok) {
                return true;
            }
        }
        co_error_clear();
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* A dependents cache, its hooks recording into @p t, that the reconciles from now on use. */
static ctl_depcache *use_cache(triggered *t)
{
    ctl_depcache *dc = NULL;
    ctl_depcache_hooks hooks = {on_changed, manages, t};
    assert_co_pass(ctl_depcache_new(&dc, admin, env.cluster_id, &hooks));
    env.dependents = dc;
    return dc;
}

/* Unchanged dependents come from the cache: a second reconcile reads nothing but the Component;
 * a dependent changed behind the controller's back queues its Component and is read live and
 * written again; a controller that may not list a type does not cache it. */
static void test_ctl_requests__unchanged_dependents_read_from_the_cache(void **state)
{
    (void)state;
    triggered t = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ctl_depcache *dc = use_cache(&t);
    ctl_test_create_component(admin, ns, "cached", "{" SRC ",\"path\":\"cached\"}");
    assert_true(reconcile_until_ready("cached", 5) > 0);
    /* the type is watched from its first use on, and served once its informer has synced */
    bool serves = false;
    for (int i = 0; i < 1000 && !(serves = ctl_depcache_serves(dc, "", "v1", "ConfigMap")); i++) {
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(serves);
    assert_int_equal(ctl_depcache_types(dc), 1);
    char *owner_id = ctl_owner_id(env.cluster_id, ns, "cached");
    char *hashed = ctl_owner_label(owner_id);
    for (int i = 0; i < 10; i++) {
        char name[32];
        snprintf(name, sizeof(name), "cached-%d", i);
        assert_true(cache_holds(dc, name, hashed, NULL));
    }
    /* another owner's object is not served as ours */
    struct json_object *none = NULL;
    assert_co_fail_with(CO_ENOTFOUND, ctl_depcache_get(&none, dc, "", "v1", "ConfigMap", ns,
                                                       "cached-0", "someone-else"));

    co_test_counting_reset(counter);
    ctl_result res;
    assert_co_pass(ctl_reconcile(&res, &env, ns, "cached"));
    co_test_counting_print(counter, "reconcile with the cache");
    assert_int_equal(counter->n, 1);
    assert_int_equal(co_test_counting_count(counter, "GET", "/components/cached"), 1);

    /* only the dependents of Components this controller manages, in its cluster, are kept */
    create_marked("ConfigMap", "of-unmanaged", env.cluster_id, "unmanaged");
    create_marked("ConfigMap", "of-elsewhere", "another-cluster", "cached");
    char *unmanaged_id = ctl_owner_id(env.cluster_id, ns, "unmanaged");
    char *unmanaged = ctl_owner_label(unmanaged_id);
    char *elsewhere_id = ctl_owner_id("another-cluster", ns, "cached");
    char *elsewhere = ctl_owner_label(elsewhere_id);

    /* drift: someone rewrites our digest annotation; the Component is queued, reads that object
     * live and applies it again */
    struct json_object *patch =
        co_test_json("{\"metadata\":{\"annotations\":{\"component-operator.cs.sap.com/"
                     "digest\":\"tampered\"}}}");
    co_kube_ref cm = {"v1", "ConfigMap", ns, "cached-3"};
    assert_co_pass(co_kube_patch(NULL, admin, &cm, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
    assert_true(cache_holds(dc, "cached-3", hashed, "tampered"));
    /* the watch delivers in order: both were seen before the tampering */
    assert_co_fail_with(CO_ENOTFOUND, ctl_depcache_get(&none, dc, "", "v1", "ConfigMap", ns,
                                                       "of-unmanaged", unmanaged));
    assert_co_fail_with(CO_ENOTFOUND, ctl_depcache_get(&none, dc, "", "v1", "ConfigMap", ns,
                                                       "of-elsewhere", elsewhere));
    free(unmanaged);
    free(unmanaged_id);
    free(elsewhere);
    free(elsewhere_id);
    bool queued = false;
    for (int i = 0; i < 1000 && !queued; i++) {
        pthread_mutex_lock(&t.mu);
        char *key = co_xasprintf("%s/cached", ns);
        queued = t.n > 0 && strcmp(t.last, key) == 0;
        free(key);
        pthread_mutex_unlock(&t.mu);
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(queued);
    co_test_counting_reset(counter);
    assert_co_pass(ctl_reconcile(&res, &env, ns, "cached"));
    co_test_counting_print(counter, "reconcile after a dependent changed");
    assert_int_equal(co_test_counting_count(counter, "GET", "/configmaps/cached-3"), 1);
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/configmaps/cached-3"), 1);
    assert_int_equal(co_test_counting_count(counter, "GET", "/configmaps"), 1);
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/configmaps/"), 1);
    struct json_object *live = NULL;
    assert_co_pass(co_kube_get(&live, admin, &cm, NULL));
    assert_string_not_equal(co_json_meta_annotation(live, "component-operator.cs.sap.com/digest"),
                            "tampered");
    json_object_put(live);

    /* a workload is kept without its pod template, which readiness never reads */
    create_marked("Deployment", "workload", env.cluster_id, "cached");
    struct json_object *dep = NULL;
    for (int i = 0; i < 1000; i++) {
        if (ctl_depcache_get(&dep, dc, "apps", "v1", "Deployment", ns, "workload", hashed) == 0) {
            break;
        }
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    assert_non_null(dep);
    assert_int_equal(json_object_get_int(co_json_get(dep, "spec", "replicas", NULL)), 1);
    assert_non_null(co_json_get(dep, "spec", "selector", NULL));
    assert_null(co_json_get(dep, "spec", "template", NULL));
    json_object_put(dep);
    env.dependents = NULL;
    ctl_depcache_free(dc);

    /* an identity that may not list ConfigMaps caches nothing and serves nothing */
    co_kube_client *nobody = NULL;
    assert_co_pass(co_kube_client_new_impersonating(
        &nobody, admin, "system:serviceaccount:default:nobody", NULL, 0));
    assert_co_pass(ctl_depcache_new(&dc, nobody, env.cluster_id, NULL));
    assert_false(ctl_depcache_serves(dc, "", "v1", "ConfigMap"));
    assert_int_equal(ctl_depcache_types(dc), 0);
    assert_co_fail_with(CO_ENOTFOUND,
                        ctl_depcache_get(&none, dc, "", "v1", "ConfigMap", ns, "cached-0", hashed));
    /* and a type outside the built-in list is never cached */
    ctl_depcache_free(dc);
    assert_co_pass(ctl_depcache_new(&dc, admin, env.cluster_id, NULL));
    assert_false(ctl_depcache_serves(dc, "", "v1", "Secret"));
    assert_false(ctl_depcache_serves(dc, "core.cs.sap.com", "v1alpha1", "Component"));
    assert_int_equal(ctl_depcache_types(dc), 0);
    ctl_depcache_free(dc);
    co_kube_client_free(nobody);
    free(hashed);
    free(owner_id);
}

/* Marks Deployment @p name available, as a kubelet would. */
static void deployment_available(const char *name)
{
    co_kube_ref dref = {"apps/v1", "Deployment", ns, name};
    struct json_object *d = NULL;
    assert_co_pass(co_kube_get(&d, admin, &dref, NULL));
    long long gen =
        (long long)json_object_get_int64(co_json_get(d, "metadata", "generation", NULL));
    json_object_put(d);
    struct json_object *st = co_test_json(
        "{\"status\":{\"observedGeneration\":%lld,\"replicas\":1,\"updatedReplicas\":1,"
        "\"readyReplicas\":1,\"availableReplicas\":1,\"conditions\":[{\"type\":\"Available\","
        "\"status\":\"True\",\"reason\":\"MinimumReplicasAvailable\",\"message\":\"up\"},{\"type\":"
        "\"Progressing\",\"status\":\"True\",\"reason\":\"NewReplicaSetAvailable\"}]}}",
        gen);
    co_kube_write_options wo = {0};
    wo.subresource = "status";
    assert_co_pass(co_kube_patch(NULL, admin, &dref, CO_KUBE_PATCH_MERGE, st, &wo));
    json_object_put(st);
}

/* The phase of every item of the stored inventory of @p name when they all have the same one,
 * else NULL (free()). */
static char *stored_phase(const char *name)
{
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    struct json_object *inv = co_json_get(c, "status", "inventory", NULL);
    char *phase = NULL;
    bool same = inv && json_object_array_length(inv) > 0;
    for (size_t i = 0; same && i < json_object_array_length(inv); i++) {
        const char *ph = co_json_str(json_object_array_get_idx(inv, i), "phase", NULL);
        same = ph && (!phase || strcmp(ph, phase) == 0);
        if (same && !phase) {
            phase = co_xstrdup(ph);
        }
    }
    json_object_put(c);
    if (!same) {
        free(phase);
        phase = NULL;
    }
    return phase;
}

/* What the observer was last told: the state and whether the status was held. */
typedef struct last_outcome {
    char state[32];
    bool held;
    int calls;
} last_outcome;

static void record_outcome(void *ctx, const ctl_outcome *o)
{
    last_outcome *l = ctx;
    snprintf(l->state, sizeof(l->state), "%s", o->state);
    l->held = o->held;
    l->calls++;
}

/* A pass that applied the objects and now waits for the Deployment holds its status back
 * (ctl_pending.h): the stored status keeps the inventory persisted before the objects were
 * created, and the Component is requeued within CTL_PENDING_MAX_NS. The next pass starts from
 * the held status: it applies nothing again and writes its status, since a status is held for
 * one pass at most. Once the Deployment is available, one more status write says Ready. */
static void test_ctl_requests__waiting_pass_holds_its_status_for_the_next(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "held", "{" SRC ",\"path\":\"held\"}");
    /* the outcome says the status was held, so that the manager records no event for it
     * (the pass that writes the status reports the state it writes) */
    last_outcome seen = {{0}, false, 0};
    ctl_observer saved = env.observer;
    env.observer = (ctl_observer){0};
    env.observer.outcome = record_outcome;
    env.observer.ctx = &seen;
    co_test_counting_reset(counter);
    ctl_result res;
    assert_co_pass(ctl_reconcile(&res, &env, ns, "held"));
    co_test_counting_print(counter, "first pass");
    assert_int_equal(seen.calls, 1);
    assert_string_equal(seen.state, "Processing");
    assert_true(seen.held);
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/components/held/status"), 1);
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/configmaps/held-0"), 1);
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/deployments/held-app"), 1);
    assert_int_equal(ctl_pending_len(env.pending), 1);
    assert_true(res.requeue_after_ns > 0 && res.requeue_after_ns <= CTL_PENDING_MAX_NS);
    char *phase = stored_phase("held");
    assert_non_null(phase);
    assert_string_equal(phase, "ScheduledForApplication");
    free(phase);
    struct json_object *c = ctl_test_get_component(admin, ns, "held");
    assert_string_equal(co_json_str(c, "status", "state", NULL), "Processing");
    json_object_put(c);

    /* still waiting: the held status is written, nothing is applied again */
    co_test_counting_reset(counter);
    assert_co_pass(ctl_reconcile(&res, &env, ns, "held"));
    co_test_counting_print(counter, "second pass");
    assert_int_equal(seen.calls, 2);
    assert_string_equal(seen.state, "Processing");
    assert_false(seen.held);
    env.observer = saved;
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/components/held/status"), 1);
    assert_int_equal(co_test_counting_count(counter, "PATCH", NULL), 1); /* the status */
    assert_int_equal(co_test_counting_count(counter, "POST", NULL), 0);
    assert_int_equal(ctl_pending_len(env.pending), 0);
    phase = stored_phase("held");
    assert_true(phase == NULL || strcmp(phase, "ScheduledForApplication") != 0);
    free(phase);

    /* nothing changed since: nothing written, nothing held */
    co_test_counting_reset(counter);
    assert_co_pass(ctl_reconcile(&res, &env, ns, "held"));
    assert_int_equal(counter->n - co_test_counting_count(counter, "GET", NULL), 0);
    assert_int_equal(ctl_pending_len(env.pending), 0);

    deployment_available("held-app");
    co_test_counting_reset(counter);
    assert_co_pass(ctl_reconcile(&res, &env, ns, "held"));
    co_test_counting_print(counter, "pass after the Deployment turned available");
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/components/held/status"), 1);
    assert_int_equal(co_test_counting_count(counter, "PATCH", NULL), 1); /* the status */
    c = ctl_test_get_component(admin, ns, "held");
    assert_true(ctl_state_component_ready(c));
    json_object_put(c);
    phase = stored_phase("held");
    assert_non_null(phase);
    assert_string_equal(phase, "Ready");
    free(phase);
}

/* A workload from the dependents cache, which keeps it without its pod template, is compared
 * for drift without it (docs/drift.md, "Limits"): once the Component is Ready, a pass with
 * nothing changed reads only the Component and writes nothing, the Deployment included. */
static void test_ctl_requests__cached_workload_unchanged_nothing_written(void **state)
{
    (void)state;
    triggered t = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ctl_depcache *dc = use_cache(&t);
    ctl_test_create_component(admin, ns, "workload", "{" SRC ",\"path\":\"workload\"}");
    ctl_result res;
    assert_co_pass(ctl_reconcile(&res, &env, ns, "workload"));

    /* the Deployment reports one available replica, as a kubelet would make it */
    deployment_available("workload-app");
    assert_true(reconcile_until_ready("workload", 5) > 0);
    struct json_object *d = NULL;

    /* the cache holds the Deployment as it is now, without its template */
    char *owner_id = ctl_owner_id(env.cluster_id, ns, "workload");
    char *hashed = ctl_owner_label(owner_id);
    bool held = false;
    for (int i = 0; i < 1000 && !held; i++) {
        if (ctl_depcache_get(&d, dc, "apps", "v1", "Deployment", ns, "workload-app", hashed) == 0) {
            held = co_json_get(d, "status", "availableReplicas", NULL) != NULL;
            assert_null(co_json_get(d, "spec", "template", NULL));
            json_object_put(d);
        }
        co_error_clear();
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(held);
    assert_true(cache_holds(dc, "workload-1", hashed, NULL));

    co_test_counting_reset(counter);
    assert_co_pass(ctl_reconcile(&res, &env, ns, "workload"));
    co_test_counting_print(counter, "reconcile of an unchanged workload");
    assert_int_equal(counter->n, 1);
    assert_int_equal(co_test_counting_count(counter, "GET", "/components/workload"), 1);
    struct json_object *c = ctl_test_get_component(admin, ns, "workload");
    assert_true(ctl_state_component_ready(c));
    json_object_put(c);

    env.dependents = NULL;
    ctl_depcache_free(dc);
    free(hashed);
    free(owner_id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_requests__ten_configmaps_in_one_pass_then_nothing_written),
        cmocka_unit_test(test_ctl_requests__large_inventory_packed_and_plain_still_read),
        cmocka_unit_test(test_ctl_requests__unchanged_dependents_read_from_the_cache),
        cmocka_unit_test(test_ctl_requests__cached_workload_unchanged_nothing_written),
        cmocka_unit_test(test_ctl_requests__waiting_pass_holds_its_status_for_the_next),
        cmocka_unit_test(test_ctl_requests__status_writes_keep_the_owner_of_the_spec),
    };
    return cmocka_run_group_tests_name("ctl_requests", tests, group_setup, group_teardown);
}
