/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Component state machine against the real kube-apiserver: the manager runs in-process
 * with the test source (a local directory) and the minimal test applier, and the tests drive
 * Components with the client and watch their status, as a user with kubectl would.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <unistd.h>

#include "co/util/buf.h"
#include "co/util/duration.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/json/yaml.h"
#include "controller/ctl_manager.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_sopsgen.h"
#include "tests/support/test_support.h"

#define WAIT_MS 90000L

static co_kube_client *admin;
static char *ns;
static ctl_manager *mgr;
static char *srcdir;
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;

static void put(const char *rel, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", srcdir, rel);
    co_test_write_file(path, text, strlen(text));
}

#define CM(name, ann)                                                                              \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name "\","           \
    "\"annotations\":{" ann "}},\"data\":{\"k\":\"v\"}}\n"

static ctl_manager *
start_manager_on(const char *kubeconfig, const char *nspace, bool leader, const char *lease)
{
    ctl_manager_options o = {0};
    o.kubeconfig = kubeconfig;
    o.policy_probe_ns = CO_SECOND;
    o.metrics_addr = "127.0.0.1:0";
    o.probe_addr = "127.0.0.1:0";
    o.workers = 3;
    o.namespaces = &nspace;
    o.nnamespaces = 1;
    o.source = &src_ops;
    o.apply = &app_ops;
    o.leader_elect = leader;
    o.leader_namespace = nspace;
    o.leader_name = lease;
    o.lease_duration_ms = 3000;
    ctl_manager *m = NULL;
    assert_co_pass(ctl_manager_new(&m, &o));
    assert_co_pass(ctl_manager_start(m));
    return m;
}

static ctl_manager *start_manager(const char *nspace, bool leader, const char *lease)
{
    return start_manager_on(co_test_env("CO_TEST_KUBECONFIG"), nspace, leader, lease);
}

/* Creates the ComponentPolicy CRD through @p c (it may exist already). */
static void install_policy_crd(co_kube_client *c)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/crds/core.cs.sap.com_componentpolicies.yaml", CO_SOURCE_ROOT);
    size_t len = 0;
    char *text = co_test_read_file(path, &len);
    assert_non_null(text);
    struct json_object *crd = NULL;
    assert_co_pass(co_yaml_parse(&crd, text, len, 0));
    free(text);
    int rc = co_kube_create(NULL, c, crd, NULL);
    assert_true(rc == 0 || rc == CO_EEXISTS);
    json_object_put(crd);
}

/* Creates @p pol, retrying while its CRD is not accepting writes yet. */
static void create_policy(co_kube_client *c, struct json_object *pol)
{
    int rc = 0;
    for (int i = 0; i < 100; i++) {
        if ((rc = co_kube_create(NULL, c, pol, NULL)) == 0) {
            break;
        }
        usleep(200 * 1000);
    }
    assert_co_pass(rc);
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    ns = co_test_kube_namespace(admin, "ctl-");
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    put("simple/cm.yaml", CM("simple-cm", ""));
    put("a/cm.yaml", CM("a-cm", ""));
    put("b/cm.yaml", CM("b-cm", ""));
    put("c/cm.yaml", CM("c-cm", ""));
    put("neverready/cm.yaml", CM("nr-cm", "\"test.co/never-ready\":\"true\""));
    put("restart/cm.yaml", CM("rs-cm", "\"test.co/never-ready\":\"true\""));
    src_ops = ctl_test_source_ops();
    app_ops = ctl_test_apply_ops();
    mgr = start_manager(ns, false, NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_manager_free(mgr);
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    free(ns);
    curl_global_cleanup();
    return 0;
}

static int64_t status_int(struct json_object *obj, const char *key)
{
    int64_t v = -1;
    if (co_json_get_int64(&v, obj, "status", key, NULL) < 0) {
        v = -1;
    }
    return v;
}

static const char *status_str(struct json_object *obj, const char *key)
{
    struct json_object *v = co_json_get(obj, "status", key, NULL);
    return v ? json_object_get_string(v) : "";
}

static void patch_spec(const char *nspace, const char *name, const char *patch_fmt, ...)
    CO_PRINTF(3, 4);
static void patch_spec(const char *nspace, const char *name, const char *patch_fmt, ...)
{
    va_list ap;
    va_start(ap, patch_fmt);
    char *text = co_xvasprintf(patch_fmt, ap);
    va_end(ap);
    struct json_object *patch = co_test_json("%s", text);
    free(text);
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", nspace, name};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
}

static void delete_component(const char *nspace, const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", nspace, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
}

static int configmap_exists(const char *nspace, const char *name, struct json_object **out)
{
    co_kube_ref ref = {"v1", "ConfigMap", nspace, name};
    struct json_object *obj = NULL;
    int rc = co_kube_get(&obj, admin, &ref, NULL);
    if (out) {
        *out = obj;
    } else {
        json_object_put(obj);
    }
    return rc == 0;
}

#define SRC "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"

static void test_ctl_reconcile__first_seen_to_ready(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "simple", "{" SRC ",\"path\":\"simple\"}");
    ctl_test_wait_state(admin, ns, "simple", "Ready", "Ready", WAIT_MS);
    struct json_object *c = ctl_test_get_component(admin, ns, "simple");
    int64_t gen = 0;
    assert_co_pass(co_json_get_int64(&gen, c, "metadata", "generation", NULL));
    assert_int_equal(status_int(c, "observedGeneration"), gen);
    assert_int_equal(status_int(c, "appliedGeneration"), gen);
    assert_int_equal(status_int(c, "revision"), 1);
    assert_string_equal(status_str(c, "lastAppliedRevision"), ctl_test_source_revision);
    assert_string_equal(status_str(c, "lastAttemptedDigest"), ctl_test_source_digest);
    assert_true(strlen(status_str(c, "processingDigest")) == 64);
    assert_null(co_json_get(c, "status", "processingSince", NULL));
    assert_string_equal(
        json_object_get_string(
            co_json_get(c, "metadata", "finalizers", NULL)
                ? json_object_array_get_idx(co_json_get(c, "metadata", "finalizers", NULL), 0)
                : NULL),
        "component-operator.cs.sap.com");
    struct json_object *inv = co_json_get(c, "status", "inventory", NULL);
    assert_non_null(inv);
    assert_int_equal(json_object_array_length(inv), 1);
    json_object_put(c);

    /* the dependent carries the hashed owner id (docs/behaviour.md, "Owner identity") */
    struct json_object *cm = NULL;
    assert_true(configmap_exists(ns, "simple-cm", &cm));
    char *owner = ctl_owner_id(ctl_manager_cluster_id(mgr), ns, "simple");
    char *label = ctl_owner_label(owner);
    assert_int_equal(strlen(label), 52);
    struct json_object *lv =
        co_json_get(cm, "metadata", "labels", "component-operator.cs.sap.com/owner-id", NULL);
    assert_non_null(lv);
    assert_string_equal(json_object_get_string(lv), label);
    free(owner);
    free(label);
    json_object_put(cm);

    /* an annotation change restarts processing and bumps the revision */
    patch_spec(ns, "simple", "{\"metadata\":{\"annotations\":{\"touch\":\"1\"}}}");
    for (int i = 0; i < 900; i++) {
        c = ctl_test_get_component(admin, ns, "simple");
        int64_t rev = status_int(c, "revision");
        json_object_put(c);
        if (rev == 2) {
            break;
        }
        usleep(100 * 1000);
    }
    ctl_test_wait_state(admin, ns, "simple", "Ready", "Ready", WAIT_MS);
    c = ctl_test_get_component(admin, ns, "simple");
    assert_int_equal(status_int(c, "revision"), 2);
    json_object_put(c);

    /* deletion removes the dependents and then the finalizer */
    delete_component(ns, "simple");
    ctl_test_wait_gone(admin, ns, "simple", WAIT_MS);
    assert_false(configmap_exists(ns, "simple-cm", NULL));
}

static void test_ctl_reconcile__missing_values_secret_retries_and_recovers(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "vals",
                              "{" SRC ",\"path\":\"simple\",\"retryInterval\":\"1s\","
                              "\"valuesFrom\":[{\"name\":\"vals-secret\"}]}");
    ctl_test_wait_state(admin, ns, "vals", "Pending", "Retrying", WAIT_MS);
    struct json_object *c = ctl_test_get_component(admin, ns, "vals");
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    assert_non_null(conds);
    const char *msg =
        json_object_get_string(co_json_get(json_object_array_get_idx(conds, 0), "message", NULL));
    assert_contains(msg, "vals-secret");
    assert_contains(msg, "Error resolving references");
    json_object_put(c);
    /* nothing was applied while the reference is missing */
    assert_false(configmap_exists(ns, "simple-cm", NULL));

    struct json_object *secret = co_test_json(
        "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"namespace\":\"%s\","
        "\"name\":\"vals-secret\"},\"stringData\":{\"values.yaml\":\"a: 1\\nb: {c: 2}\\n\"}}",
        ns);
    assert_co_pass(co_kube_create(NULL, admin, secret, NULL));
    json_object_put(secret);
    ctl_test_wait_state(admin, ns, "vals", "Ready", "Ready", WAIT_MS);
    delete_component(ns, "vals");
    ctl_test_wait_gone(admin, ns, "vals", WAIT_MS);
}

static void test_ctl_reconcile__dependency_chain_orders_creation_and_deletion(void **state)
{
    (void)state;
    /* A -> B -> C, created in the wrong order */
    ctl_test_create_component(admin, ns, "a",
                              "{" SRC ",\"path\":\"a\",\"retryInterval\":\"2s\","
                              "\"dependencies\":[{\"name\":\"b\"}]}");
    ctl_test_wait_state(admin, ns, "a", "Pending", "Retrying", WAIT_MS);
    ctl_test_create_component(admin, ns, "b",
                              "{" SRC ",\"path\":\"b\",\"retryInterval\":\"2s\","
                              "\"dependencies\":[{\"name\":\"c\",\"namespace\":\"%s\"}]}",
                              ns);
    ctl_test_wait_state(admin, ns, "b", "Pending", "Retrying", WAIT_MS);
    assert_false(configmap_exists(ns, "a-cm", NULL));
    assert_false(configmap_exists(ns, "b-cm", NULL));
    ctl_test_create_component(admin, ns, "c", "{" SRC ",\"path\":\"c\",\"retryInterval\":\"2s\"}");
    ctl_test_wait_state(admin, ns, "c", "Ready", "Ready", WAIT_MS);
    ctl_test_wait_state(admin, ns, "b", "Ready", "Ready", WAIT_MS);
    ctl_test_wait_state(admin, ns, "a", "Ready", "Ready", WAIT_MS);
    struct json_object *a = ctl_test_get_component(admin, ns, "a");
    struct json_object *b = ctl_test_get_component(admin, ns, "b");
    struct json_object *c = ctl_test_get_component(admin, ns, "c");
    /* applied in dependency order (RFC 3339 strings compare as times) */
    assert_true(strcmp(status_str(c, "lastAppliedAt"), status_str(b, "lastAppliedAt")) <= 0);
    assert_true(strcmp(status_str(b, "lastAppliedAt"), status_str(a, "lastAppliedAt")) <= 0);
    json_object_put(a);
    json_object_put(b);
    json_object_put(c);

    /* deleting C first: blocked while B depends on it */
    delete_component(ns, "c");
    ctl_test_wait_state(admin, ns, "c", "DeletionPending", "DeletionRetrying", WAIT_MS);
    c = ctl_test_get_component(admin, ns, "c");
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    assert_contains(
        json_object_get_string(co_json_get(json_object_array_get_idx(conds, 0), "message", NULL)),
        "deletion blocked by depending component");
    json_object_put(c);
    assert_true(configmap_exists(ns, "c-cm", NULL));
    delete_component(ns, "b");
    ctl_test_wait_state(admin, ns, "b", "DeletionPending", "DeletionRetrying", WAIT_MS);
    delete_component(ns, "a");
    ctl_test_wait_gone(admin, ns, "a", WAIT_MS);
    ctl_test_wait_gone(admin, ns, "b", WAIT_MS);
    ctl_test_wait_gone(admin, ns, "c", WAIT_MS);
    assert_false(configmap_exists(ns, "c-cm", NULL));
}

static void test_ctl_reconcile__cycle_yields_dependency_cycle_and_recovers(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "x",
                              "{" SRC ",\"path\":\"simple\",\"retryInterval\":\"2s\","
                              "\"dependencies\":[{\"name\":\"y\"}]}");
    ctl_test_create_component(admin, ns, "y",
                              "{" SRC ",\"path\":\"simple\",\"retryInterval\":\"2s\","
                              "\"dependencies\":[{\"name\":\"x\"}]}");
    ctl_test_wait_state(admin, ns, "x", "Error", "DependencyCycle", WAIT_MS);
    ctl_test_wait_state(admin, ns, "y", "Error", "DependencyCycle", WAIT_MS);
    struct json_object *x = ctl_test_get_component(admin, ns, "x");
    struct json_object *conds = co_json_get(x, "status", "conditions", NULL);
    char *want = co_xasprintf("%s/x -> %s/y -> %s/x", ns, ns, ns);
    assert_contains(
        json_object_get_string(co_json_get(json_object_array_get_idx(conds, 0), "message", NULL)),
        want);
    free(want);
    json_object_put(x);
    /* break the cycle */
    patch_spec(ns, "y", "{\"spec\":{\"dependencies\":null}}");
    ctl_test_wait_state(admin, ns, "y", "Ready", "Ready", WAIT_MS);
    ctl_test_wait_state(admin, ns, "x", "Ready", "Ready", WAIT_MS);
    delete_component(ns, "x");
    ctl_test_wait_gone(admin, ns, "x", WAIT_MS);
    delete_component(ns, "y");
    ctl_test_wait_gone(admin, ns, "y", WAIT_MS);
}

static void test_ctl_reconcile__timeout_turns_processing_into_error(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "slow",
                              "{" SRC ",\"path\":\"neverready\",\"timeout\":\"3s\"}");
    ctl_test_wait_state(admin, ns, "slow", "Processing", "Processing", WAIT_MS);
    ctl_test_wait_state(admin, ns, "slow", "Error", "Timeout", WAIT_MS);
    /* timeout never stops work: it keeps being reconciled (backoff at most 10 s), though a
     * pass that changes nothing writes no status */
    unsigned long applied = ctl_test_apply_writes();
    int moved = 0;
    for (int i = 0; i < 300 && !moved; i++) {
        usleep(100 * 1000);
        struct json_object *c = ctl_test_get_component(admin, ns, "slow");
        moved = ctl_test_apply_writes() >= applied + 2 &&
                strcmp(ctl_state_reason(co_json_get(c, "status", NULL)), "Timeout") == 0;
        json_object_put(c);
    }
    assert_true(moved);
    delete_component(ns, "slow");
    ctl_test_wait_gone(admin, ns, "slow", WAIT_MS);
}

static void test_ctl_reconcile__suspend_stops_work(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "susp", "{" SRC ",\"path\":\"b\",\"suspend\":true}");
    ctl_test_wait_state(admin, ns, "susp", "Pending", "Suspended", WAIT_MS);
    usleep(2000 * 1000);
    assert_false(configmap_exists(ns, "b-cm", NULL));
    struct json_object *c = ctl_test_get_component(admin, ns, "susp");
    assert_null(co_json_get(c, "status", "inventory", NULL));
    json_object_put(c);
    patch_spec(ns, "susp", "{\"spec\":{\"suspend\":false}}");
    ctl_test_wait_state(admin, ns, "susp", "Ready", "Ready", WAIT_MS);
    assert_true(configmap_exists(ns, "b-cm", NULL));
    /* suspension never blocks deletion */
    patch_spec(ns, "susp", "{\"spec\":{\"suspend\":true}}");
    delete_component(ns, "susp");
    ctl_test_wait_gone(admin, ns, "susp", WAIT_MS);
    assert_false(configmap_exists(ns, "b-cm", NULL));
}

static void test_ctl_reconcile__restart_mid_reconcile_loses_nothing(void **state)
{
    (void)state;
    char *ns2 = co_test_kube_namespace(admin, "ctl-restart-");
    ctl_manager *m = start_manager(ns2, false, NULL);
    ctl_test_create_component(admin, ns2, "r", "{" SRC ",\"path\":\"restart\"}");
    ctl_test_wait_state(admin, ns2, "r", "Processing", "Processing", WAIT_MS);
    ctl_manager_free(m);
    struct json_object *c = ctl_test_get_component(admin, ns2, "r");
    assert_int_equal(json_object_array_length(co_json_get(c, "status", "inventory", NULL)), 1);
    char *since = co_xstrdup(status_str(c, "processingSince"));
    assert_true(*since);
    int64_t rev = status_int(c, "revision");
    json_object_put(c);

    /* the object becomes ready while no controller runs; a new one takes over */
    put("restart/cm.yaml", CM("rs-cm", ""));
    m = start_manager(ns2, false, NULL);
    ctl_test_wait_state(admin, ns2, "r", "Ready", "Ready", WAIT_MS);
    c = ctl_test_get_component(admin, ns2, "r");
    assert_int_equal(status_int(c, "revision"), rev);
    assert_int_equal(json_object_array_length(co_json_get(c, "status", "inventory", NULL)), 1);
    json_object_put(c);
    free(since);
    delete_component(ns2, "r");
    ctl_test_wait_gone(admin, ns2, "r", WAIT_MS);
    ctl_manager_free(m);
    free(ns2);
}

static void test_ctl_reconcile__leader_election_single_actor(void **state)
{
    (void)state;
    char *ns3 = co_test_kube_namespace(admin, "ctl-leader-");
    ctl_manager *m1 = start_manager(ns3, true, "ctl-test-lease");
    ctl_manager *m2 = start_manager(ns3, true, "ctl-test-lease");
    int leaders = 0;
    for (int i = 0; i < 600; i++) {
        leaders = (int)ctl_manager_leading(m1) + (int)ctl_manager_leading(m2);
        if (leaders > 0) {
            break;
        }
        usleep(100 * 1000);
    }
    assert_int_equal(leaders, 1);
    ctl_manager *leader = ctl_manager_leading(m1) ? m1 : m2;
    ctl_manager *follower = leader == m1 ? m2 : m1;
    ctl_test_create_component(admin, ns3, "l1", "{" SRC ",\"path\":\"simple\"}");
    ctl_test_wait_state(admin, ns3, "l1", "Ready", "Ready", WAIT_MS);
    ctl_manager_stats s1, s2;
    ctl_manager_stats_get(leader, &s1);
    ctl_manager_stats_get(follower, &s2);
    assert_true(s1.reconciles > 0);
    assert_int_equal(s2.reconciles, 0);
    assert_int_equal(s2.status_writes, 0);
    assert_false(ctl_manager_leading(follower));

    /* the leader goes away (releasing the Lease); the other one takes over */
    ctl_manager_free(leader);
    for (int i = 0; i < 600 && !ctl_manager_leading(follower); i++) {
        usleep(100 * 1000);
    }
    assert_true(ctl_manager_leading(follower));
    delete_component(ns3, "l1");
    ctl_test_wait_gone(admin, ns3, "l1", WAIT_MS);
    ctl_manager_stats_get(follower, &s2);
    assert_true(s2.reconciles > 0);
    ctl_manager_free(follower);
    free(ns3);
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    return co_buf_put(ud, p, sz * n) == 0 ? sz * n : 0;
}

static long http_get(int port, const char *path, co_buf *body)
{
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    }
    curl_easy_cleanup(c);
    return code;
}

static void test_ctl_reconcile__metrics_probes_and_events(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "obs", "{" SRC ",\"path\":\"c\"}");
    ctl_test_wait_state(admin, ns, "obs", "Ready", "Ready", WAIT_MS);
    co_buf body = CO_BUF_INIT(64 << 20);
    assert_int_equal(http_get(ctl_manager_probe_port(mgr), "/readyz", &body), 200);
    co_buf_reset(&body);
    assert_int_equal(http_get(ctl_manager_probe_port(mgr), "/healthz", &body), 200);
    co_buf_reset(&body);
    assert_int_equal(http_get(ctl_manager_metrics_port(mgr), "/metrics", &body), 200);
    char *series = co_xasprintf(
        "component_operator_runtime_component_state{controller=\"component\",group=\"core.cs."
        "sap.com\",kind=\"Component\",namespace=\"%s\",name=\"obs\",state=\"Ready\"} 1",
        ns);
    assert_contains(co_buf_cstr(&body), series);
    free(series);
    assert_contains(co_buf_cstr(&body), "component_operator_runtime_requests_total{");
    assert_contains(co_buf_cstr(&body), "component_operator_runtime_reconcile_total{");
    assert_contains(co_buf_cstr(&body), "workqueue_depth{");
    co_buf_dispose(&body);

    /* one Normal event with the Ready reason reached the API */
    int found = 0;
    for (int i = 0; i < 300 && !found; i++) {
        co_kube_ref ref = {"v1", "Event", ns, NULL};
        co_kube_list_options lo = {0};
        lo.field_selector = "involvedObject.name=obs";
        struct json_object *list = NULL;
        assert_co_pass(co_kube_list(&list, admin, &ref, &lo));
        struct json_object *items = co_json_get(list, "items", NULL);
        for (size_t j = 0; j < json_object_array_length(items); j++) {
            struct json_object *r =
                co_json_get(json_object_array_get_idx(items, j), "reason", NULL);
            if (r && strcmp(json_object_get_string(r), "Ready") == 0) {
                found = 1;
            }
        }
        json_object_put(list);
        if (!found) {
            usleep(100 * 1000);
        }
    }
    assert_true(found);
    delete_component(ns, "obs");
    ctl_test_wait_gone(admin, ns, "obs", WAIT_MS);
}

static void test_ctl_reconcile__policy_violation_is_an_error(void **state)
{
    (void)state;
    install_policy_crd(admin);
    char *ns4 = co_test_kube_namespace(admin, "ctl-policy-");
    char *sel = co_test_random_name("p", 8);
    struct json_object *lab =
        co_test_json("{\"metadata\":{\"labels\":{\"co-policy-test\":\"%s\"}}}", sel);
    co_kube_ref nref = {"v1", "Namespace", NULL, ns4};
    assert_co_pass(co_kube_patch(NULL, admin, &nref, CO_KUBE_PATCH_MERGE, lab, NULL));
    json_object_put(lab);
    /* a manager of its own, for the namespace the policy selects */
    ctl_manager *m = start_manager(ns4, false, NULL);
    struct json_object *pol = co_test_json(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","
        "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaceSelector\":{\"matchLabels\":"
        "{\"co-policy-test\":\"%s\"}},\"rules\":{\"sourceKinds\":{\"allowed\":[\"git\"]}}}}",
        sel, sel);
    create_policy(admin, pol);
    /* A probe that can never apply anything (its dependency does not exist) turns from Pending
     * into PolicyViolation once the manager has seen the policy; only then is a Component that
     * would apply objects created, so that none can be applied before the policy is known. */
    ctl_test_create_component(admin, ns4, "probe",
                              "{" SRC
                              ",\"path\":\"simple\",\"dependencies\":[{\"name\":\"absent\"}]}");
    ctl_test_wait_state(admin, ns4, "probe", "Error", "PolicyViolation", WAIT_MS);
    ctl_test_create_component(admin, ns4, "denied", "{" SRC ",\"path\":\"simple\"}");
    ctl_test_wait_state(admin, ns4, "denied", "Error", "PolicyViolation", WAIT_MS);
    assert_false(configmap_exists(ns4, "simple-cm", NULL));
    co_kube_ref pref = {"core.cs.sap.com/v1alpha1", "ComponentPolicy", NULL, sel};
    assert_co_pass(co_kube_delete(NULL, admin, &pref, NULL));
    json_object_put(pol);
    /* removing the policy re-evaluates at once (the retry interval is the default 10 minutes):
     * nothing touches the Components, yet they leave PolicyViolation */
    ctl_test_wait_state(admin, ns4, "probe", "Pending", NULL, WAIT_MS);
    ctl_test_wait_state(admin, ns4, "denied", "Ready", "Ready", WAIT_MS);
    delete_component(ns4, "denied");
    delete_component(ns4, "probe");
    ctl_test_wait_gone(admin, ns4, "denied", WAIT_MS);
    ctl_test_wait_gone(admin, ns4, "probe", WAIT_MS);
    ctl_manager_free(m);
    free(sel);
    free(ns4);
}

/* A controller started before the ComponentPolicy CRD exists (a fresh cluster, the CRDs applied
 * in any order) enforces policies once the CRD is installed, without a restart. */
static void test_ctl_reconcile__policy_crd_installed_after_start(void **state)
{
    (void)state;
    co_test_controlplane cp = {0};
    co_test_controlplane_start(&cp);
    co_kube_client *c = co_test_kube_client_for(cp.kubeconfig);
    ctl_test_install_crd(c);
    co_kube_mapping mp;
    assert_co_fail_with(
        CO_ENOMATCH, co_kube_client_mapping(&mp, c, "core.cs.sap.com/v1alpha1", "ComponentPolicy"));
    char *pns = co_test_kube_namespace(c, "late-policy-");
    ctl_manager *m = start_manager_on(cp.kubeconfig, pns, false, NULL);
    install_policy_crd(c);
    struct json_object *pol =
        co_test_json("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","
                     "\"metadata\":{\"name\":\"git-only\"},"
                     "\"spec\":{\"rules\":{\"sourceKinds\":{\"allowed\":[\"git\"]}}}}");
    create_policy(c, pol);
    json_object_put(pol);
    /* as above: a probe that can never apply anything first, then one that would */
    ctl_test_create_component(
        c, pns, "probe", "{" SRC ",\"path\":\"simple\",\"dependencies\":[{\"name\":\"absent\"}]}");
    ctl_test_wait_state(c, pns, "probe", "Error", "PolicyViolation", WAIT_MS);
    ctl_test_create_component(c, pns, "denied", "{" SRC ",\"path\":\"simple\"}");
    ctl_test_wait_state(c, pns, "denied", "Error", "PolicyViolation", WAIT_MS);
    co_kube_ref cref = {"v1", "ConfigMap", pns, "simple-cm"};
    assert_co_fail_with(CO_ENOTFOUND, co_kube_get(NULL, c, &cref, NULL));
    ctl_manager_free(m);
    free(pns);
    co_kube_client_free(c);
    co_test_controlplane_stop(&cp);
}

/* ---- rendering through co_render -------------------------------------------------------- */

static void create_secret(const char *name, const char *string_data_json)
{
    struct json_object *secret = co_test_json(
        "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"namespace\":\"%s\","
        "\"name\":\"%s\"},\"stringData\":%s}",
        ns, name, string_data_json);
    assert_co_pass(co_kube_create(NULL, admin, secret, NULL));
    json_object_put(secret);
}

static const char *cm_data(struct json_object *cm, const char *key)
{
    struct json_object *v = co_json_get(cm, "data", key, NULL);
    return v ? json_object_get_string(v) : "";
}

static char *condition_message(const char *name)
{
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    struct json_object *m =
        conds ? co_json_get(json_object_array_get_idx(conds, 0), "message", NULL) : NULL;
    char *msg = co_xstrdup(m ? json_object_get_string(m) : "");
    json_object_put(c);
    return msg;
}

static void test_ctl_reconcile__templated_kustomization_gets_values_and_placement(void **state)
{
    (void)state;
    put("tpl/kustomization.yaml", "resources:\n- cm.yaml\nnamePrefix: '{{ .prefix }}-'\n");
    put("tpl/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tpl-cm\n"
                       "data:\n  greeting: '{{ .greeting }} {{ .who }}'\n"
                       "  placement: '{{ namespace }}/{{ name }}'\n"
                       "  revision: '{{ componentRevision }}'\n"
                       "  major: '{{ kubernetesVersion.Major }}'\n");
    create_secret("tpl-values", "{\"values\":\"who: from-secret\\ngreeting: overridden\\n\"}");
    ctl_test_create_component(admin, ns, "tpl",
                              "{" SRC ",\"path\":\"tpl\",\"name\":\"placed\","
                              "\"valuesFrom\":[{\"name\":\"tpl-values\"}],"
                              "\"values\":{\"greeting\":\"hello\",\"prefix\":\"p\"}}");
    ctl_test_wait_state(admin, ns, "tpl", "Ready", "Ready", WAIT_MS);
    struct json_object *cm = NULL;
    assert_true(configmap_exists(ns, "p-tpl-cm", &cm));
    assert_string_equal(cm_data(cm, "greeting"), "hello from-secret");
    char *want = co_xasprintf("%s/placed", ns);
    assert_string_equal(cm_data(cm, "placement"), want);
    free(want);
    assert_string_equal(cm_data(cm, "revision"), "1");
    assert_string_equal(cm_data(cm, "major"), "1");
    json_object_put(cm);
    delete_component(ns, "tpl");
    ctl_test_wait_gone(admin, ns, "tpl", WAIT_MS);
}

static void test_ctl_reconcile__helm_chart_gets_values_release_and_capabilities(void **state)
{
    (void)state;
    put("chart/Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n");
    put("chart/values.yaml", "color: blue\nsize: small\n");
    put("chart/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n"
        "data:\n  color: {{ .Values.color | quote }}\n  size: {{ .Values.size | quote }}\n"
        "  install: {{ .Release.IsInstall | quote }}\n"
        "  ns: {{ .Release.Namespace | quote }}\n"
        "  apps: {{ .Capabilities.APIVersions.Has \"apps/v1\" | quote }}\n"
        "  kube: {{ .Capabilities.KubeVersion.Major | quote }}\n");
    ctl_test_create_component(admin, ns, "helm",
                              "{" SRC ",\"path\":\"chart\",\"values\":{\"color\":\"red\"}}");
    ctl_test_wait_state(admin, ns, "helm", "Ready", "Ready", WAIT_MS);
    struct json_object *cm = NULL;
    assert_true(configmap_exists(ns, "helm-cm", &cm));
    assert_string_equal(cm_data(cm, "color"), "red");
    assert_string_equal(cm_data(cm, "size"), "small");
    assert_string_equal(cm_data(cm, "install"), "true");
    assert_string_equal(cm_data(cm, "ns"), ns);
    assert_string_equal(cm_data(cm, "apps"), "true");
    assert_string_equal(cm_data(cm, "kube"), "1");
    json_object_put(cm);

    /* a template error is an Error naming the file, never a crash */
    put("badchart/Chart.yaml", "apiVersion: v2\nname: bad\nversion: 0.1.0\n");
    put("badchart/templates/cm.yaml", "{{ required \"size is required\" .Values.size }}\n");
    ctl_test_create_component(admin, ns, "badhelm", "{" SRC ",\"path\":\"badchart\"}");
    ctl_test_wait_state(admin, ns, "badhelm", "Error", "Error", WAIT_MS);
    char *msg = condition_message("badhelm");
    assert_contains(msg, "Error generating manifests");
    assert_contains(msg, "cm.yaml");
    assert_contains(msg, "size is required");
    free(msg);
    delete_component(ns, "badhelm");
    delete_component(ns, "helm");
    ctl_test_wait_gone(admin, ns, "badhelm", WAIT_MS);
    ctl_test_wait_gone(admin, ns, "helm", WAIT_MS);
}

static void test_ctl_reconcile__sops_decryption_and_substitution(void **state)
{
    (void)state;
    /* keys from age-keygen, and a Secret encrypted for them with the age tool */
    test_sopsgen gen;
    test_sopsgen_init(&gen);
    size_t len = 0;
    char *enc = test_sopsgen_encrypt(
        &gen,
        "{\"format\":\"yaml\",\"tree\":{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
        "{\"name\":\"age\"},\"stringData\":{\"key\":\"value\"}},\"rule\":{\"encrypted_regex\":"
        "\"^(data|stringData)$\"},\"groups\":[[{\"age\":\"@0\"}]],\"lastmodified\":"
        "\"2024-01-02T03:04:05Z\"}",
        &len);
    put("enc/secret.yaml", enc);
    free(enc);
    put("enc/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: subst-cm\n"
                       "data:\n  text: '${GREETING}, ${WHO:=nobody} ${UPPER^^}'\n");
    put("enc/keep.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep-cm\n  annotations:\n"
        "    component-operator.cs.sap.com/disableSubstitution: 'true'\ndata:\n"
        "  text: '${GREETING}'\n");

    /* without keys the encrypted file is an error naming it */
    ctl_test_create_component(admin, ns, "nokeys", "{" SRC ",\"path\":\"enc\"}");
    ctl_test_wait_state(admin, ns, "nokeys", "Error", "Error", WAIT_MS);
    char *msg = condition_message("nokeys");
    assert_contains(msg, "secret.yaml");
    assert_contains(msg, "encrypted");
    free(msg);
    assert_false(configmap_exists(ns, "subst-cm", NULL));

    char *key = test_sopsgen_read(gen.age_key[0], &len);
    struct json_object *dec = co_test_json(
        "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"namespace\":\"%s\","
        "\"name\":\"sops-keys\"},\"stringData\":{}}",
        ns);
    json_object_object_add(co_json_get(dec, "stringData", NULL), "age.agekey",
                           json_object_new_string_len(key, (int)len));
    free(key);
    assert_co_pass(co_kube_create(NULL, admin, dec, NULL));
    json_object_put(dec);
    create_secret("subst-vars", "{\"GREETING\":\"hello\",\"UPPER\":\"loud\"}");
    ctl_test_create_component(admin, ns, "sops",
                              "{" SRC ",\"path\":\"enc\","
                              "\"decryption\":{\"provider\":\"sops\","
                              "\"secretRef\":{\"name\":\"sops-keys\"}},"
                              "\"postBuild\":{\"substituteFrom\":[{\"name\":\"subst-vars\"}],"
                              "\"substitute\":{\"WHO\":\"world\"}}}");
    ctl_test_wait_state(admin, ns, "sops", "Ready", "Ready", WAIT_MS);
    co_kube_ref ref = {"v1", "Secret", ns, "age"};
    struct json_object *s = NULL;
    assert_co_pass(co_kube_get(&s, admin, &ref, NULL));
    struct json_object *v = co_json_get(s, "data", "key", NULL);
    assert_non_null(v);
    assert_string_equal(json_object_get_string(v), "dmFsdWU="); /* "value" */
    json_object_put(s);
    struct json_object *cm = NULL;
    assert_true(configmap_exists(ns, "subst-cm", &cm));
    assert_string_equal(cm_data(cm, "text"), "hello, world LOUD");
    json_object_put(cm);
    assert_true(configmap_exists(ns, "keep-cm", &cm));
    assert_string_equal(cm_data(cm, "text"), "${GREETING}");
    json_object_put(cm);

    /* a provider other than sops is refused, by the webhook's own validation when the webhook
     * was bypassed (as here) */
    ctl_test_create_component(admin, ns, "badprov",
                              "{" SRC ",\"path\":\"enc\",\"decryption\":{\"provider\":\"vault\","
                              "\"secretRef\":{\"name\":\"sops-keys\"}}}");
    ctl_test_wait_state(admin, ns, "badprov", "Error", "InvalidSpec", WAIT_MS);
    msg = condition_message("badprov");
    assert_contains(msg, "spec.decryption.provider: Unsupported value: \"vault\"");
    free(msg);
    delete_component(ns, "badprov");
    delete_component(ns, "nokeys");
    delete_component(ns, "sops");
    ctl_test_wait_gone(admin, ns, "badprov", WAIT_MS);
    ctl_test_wait_gone(admin, ns, "nokeys", WAIT_MS);
    ctl_test_wait_gone(admin, ns, "sops", WAIT_MS);
    test_sopsgen_dispose(&gen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_reconcile__first_seen_to_ready),
        cmocka_unit_test(test_ctl_reconcile__missing_values_secret_retries_and_recovers),
        cmocka_unit_test(test_ctl_reconcile__dependency_chain_orders_creation_and_deletion),
        cmocka_unit_test(test_ctl_reconcile__cycle_yields_dependency_cycle_and_recovers),
        cmocka_unit_test(test_ctl_reconcile__timeout_turns_processing_into_error),
        cmocka_unit_test(test_ctl_reconcile__suspend_stops_work),
        cmocka_unit_test(test_ctl_reconcile__metrics_probes_and_events),
        cmocka_unit_test(test_ctl_reconcile__restart_mid_reconcile_loses_nothing),
        cmocka_unit_test(test_ctl_reconcile__leader_election_single_actor),
        cmocka_unit_test(test_ctl_reconcile__policy_violation_is_an_error),
        cmocka_unit_test(test_ctl_reconcile__policy_crd_installed_after_start),
        cmocka_unit_test(test_ctl_reconcile__templated_kustomization_gets_values_and_placement),
        cmocka_unit_test(test_ctl_reconcile__helm_chart_gets_values_release_and_capabilities),
        cmocka_unit_test(test_ctl_reconcile__sops_decryption_and_substitution),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
