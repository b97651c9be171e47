/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Grace period, Degraded and Down, the Warning state, prerequisites and status.lastOperation
 * (docs/lifecycle.md) against the real kube-apiserver: ctl_reconcile() with the real apply
 * engine and a clock of the test's own, so that a grace period of minutes passes in no time.
 * Nothing runs the Deployments: the tests write their status as a kubelet and the deployment
 * controller would. The Warning of a ComponentPolicy Warn rule is shown through a running
 * manager, which evaluates the policies.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "co/api/component.h"
#include "co/json/json.h"
#include "co/json/yaml.h"
#include "co/kube/kube_client.h"
#include "co/util/duration.h"
#include "co/util/time.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_reconcile.h"
#include "controller/ctl_state.h"
#include "controller/ctl_targets.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define SRC     "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"
#define WAIT_MS 90000L
#define MINUTE  ((int64_t)60 * CO_SECOND)
/* 2026-01-01T00:00:00Z */
#define T0 ((int64_t)1767225600 * CO_SECOND)

static co_kube_client *admin;
static char *ns;
static char *srcdir;
static ctl_env env;
static ctl_targets *targets;
static int64_t clock_ns = T0;

/* The target clients as the manager hands them out: a Component with a service account acts
 * as it. */
static int targets_acquire(void *ctx,
                           const char *kubeconfig,
                           size_t kubeconfig_len,
                           const char *user,
                           unsigned flags,
                           co_kube_client **out,
                           void **hold)
{
    return ctl_targets_acquire(ctx, kubeconfig, kubeconfig_len, user, flags, out, hold);
}

static void targets_release(void *ctx, void *hold)
{
    ctl_targets_release(ctx, hold);
}

static int64_t fake_now(void)
{
    return clock_ns;
}

static void put(const char *rel, const char *text)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", srcdir, rel);
    co_test_write_file(path, text, strlen(text));
}

#define DEPLOYMENT(name, ann)                                                                      \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"" name "\","     \
    "\"annotations\":{" ann "}},\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":"           \
    "{\"app\":\"" name "\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"" name "\"}},"      \
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"example.invalid/x:1\"}]}}}}\n"

#define AUXILIARY "\"component-operator.cs.sap.com/participation\":\"auxiliary\""

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    ns = co_test_kube_namespace(admin, "ctl-grace-");
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    put("grace/web.yaml", DEPLOYMENT("web", ""));
    put("grace/api.yaml", DEPLOYMENT("api", ""));
    put("grace/side.yaml", DEPLOYMENT("side", AUXILIARY));
    put("prereq/cm.yaml", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                          "{\"name\":\"after-db\"},\"data\":{\"k\":\"v\"}}\n");

    memset(&env, 0, sizeof(env));
    env.client = admin;
    env.cluster_id = "test-cluster";
    env.backoff = ctl_backoff_new();
    env.source = ctl_test_source_ops();
    env.apply = ctl_apply_engine_ops();
    env.now = fake_now;
    targets = ctl_targets_new(admin, 60 * CO_SECOND);
    env.targets.acquire = targets_acquire;
    env.targets.release = targets_release;
    env.targets.ctx = targets;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_backoff_free(env.backoff);
    ctl_targets_free(targets);
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    free(ns);
    curl_global_cleanup();
    return 0;
}

/* ---- helpers ----------------------------------------------------------------------------- */

static ctl_result reconcile(const char *name)
{
    ctl_result res;
    assert_co_pass(ctl_reconcile(&res, &env, ns, name));
    return res;
}

/* Reconciles until the Component is Ready (at most @p max passes). */
static void reconcile_until_ready(const char *name, int max)
{
    for (int i = 0; i < max; i++) {
        (void)reconcile(name);
        struct json_object *c = ctl_test_get_component(admin, ns, name);
        bool ready = ctl_state_component_ready(c);
        json_object_put(c);
        if (ready) {
            return;
        }
    }
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    fail_msg("%s not Ready after %d passes: %s", name, max,
             json_object_to_json_string(co_json_get(c, "status", NULL)));
}

static const char *str_at(struct json_object *c, const char *a, const char *b, const char *d)
{
    const char *v = co_json_str(c, a, b, d, NULL);
    return v ? v : "";
}

/* The condition @p type of Component @p c (NULL when absent). */
static struct json_object *condition(struct json_object *c, const char *type)
{
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    size_t n = conds ? json_object_array_length(conds) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *x = json_object_array_get_idx(conds, i);
        const char *t = co_json_str(x, "type", NULL);
        if (t && strcmp(t, type) == 0) {
            return x;
        }
    }
    return NULL;
}

/* Asserts state, Ready reason and (when not NULL) that the Ready message contains @p msg_part;
 * returns the Component (json_object_put()). */
static struct json_object *
expect(const char *name, const char *state, const char *reason, const char *msg_part)
{
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    assert_non_null(c);
    struct json_object *ready = condition(c, "Ready");
    assert_non_null(ready);
    const char *msg = co_json_str(ready, "message", NULL);
    if (strcmp(str_at(c, "status", "state", NULL), state) != 0 ||
        strcmp(co_json_str(ready, "reason", NULL), reason) != 0 ||
        (msg_part && (!msg || !strstr(msg, msg_part)))) {
        fail_msg("%s: expected %s/%s (%s), got %s/%s: %s", name, state, reason,
                 msg_part ? msg_part : "", str_at(c, "status", "state", NULL),
                 co_json_str(ready, "reason", NULL), msg ? msg : "");
    }
    return c;
}

static const char *last_operation(struct json_object *c)
{
    return str_at(c, "status", "lastOperation", "operation");
}

static void time_text(char out[CO_TIME_STR_MAX], int64_t t)
{
    co_time_format(out, t);
}

/* Writes the status of Deployment @p name as the deployment controller and a kubelet would:
 * one replica, available or not. */
static void deployment_status(const char *name, bool available)
{
    co_kube_ref ref = {"apps/v1", "Deployment", ns, name};
    struct json_object *d = NULL;
    assert_co_pass(co_kube_get(&d, admin, &ref, NULL));
    int64_t gen = 0;
    assert_co_pass(co_json_get_int64(&gen, d, "metadata", "generation", NULL));
    json_object_put(d);
    struct json_object *patch = co_test_json(
        "{\"status\":{\"observedGeneration\":%lld,\"replicas\":1,\"updatedReplicas\":1,"
        "\"readyReplicas\":%d,\"availableReplicas\":%d,\"conditions\":["
        "{\"type\":\"Available\",\"status\":\"%s\",\"reason\":\"MinimumReplicasAvailable\","
        "\"message\":\"Deployment has %s availability.\"},"
        "{\"type\":\"Progressing\",\"status\":\"True\",\"reason\":\"NewReplicaSetAvailable\","
        "\"message\":\"ReplicaSet has successfully progressed.\"}]}}",
        (long long)gen, available ? 1 : 0, available ? 1 : 0, available ? "True" : "False",
        available ? "minimum" : "no");
    co_kube_write_options wo = {0};
    wo.subresource = "status";
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, &wo));
    json_object_put(patch);
}

static void patch_component(const char *name, const char *patch_text)
{
    struct json_object *patch = co_test_json("%s", patch_text);
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
}

static char *resource_version(const char *name)
{
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    char *rv = co_xstrdup(str_at(c, "metadata", "resourceVersion", NULL));
    json_object_put(c);
    return rv;
}

/* Deletes the Component and reconciles until it is gone. */
static void delete_and_reconcile(const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    for (int i = 0; i < 50; i++) {
        (void)reconcile(name);
        struct json_object *c = ctl_test_get_component(admin, ns, name);
        json_object_put(c);
        if (!c) {
            return;
        }
    }
    fail_msg("%s not gone", name);
}

/* ---- grace period ------------------------------------------------------------------------ */

/* docs/lifecycle.md, "Grace period and Degraded". */
static void
test_ctl_grace__unready_dependents_stay_ready_then_degraded_down_and_recover(void **state)
{
    (void)state;
    clock_ns = T0;
    ctl_test_create_component(admin, ns, "g",
                              "{" SRC ",\"path\":\"grace\",\"gracePeriod\":\"5m\","
                              "\"reapplyInterval\":\"24h\"}");
    /* installing: Processing until the Deployments report available */
    (void)reconcile("g");
    (void)reconcile("g");
    json_object_put(expect("g", "Processing", "Processing", NULL));
    deployment_status("web", true);
    deployment_status("api", true);
    deployment_status("side", true);
    reconcile_until_ready("g", 10);
    struct json_object *c = expect("g", "Ready", "Ready", CTL_MSG_READY);
    assert_string_equal(last_operation(c), "applied revision 1 (3 objects)");
    char t0[CO_TIME_STR_MAX];
    time_text(t0, T0);
    assert_string_equal(str_at(c, "status", "lastOperation", "lastUpdateTime"), t0);
    assert_null(condition(c, "Degraded"));
    json_object_put(c);

    /* web becomes unready: within the grace period the Component stays Ready, names it, and
     * comes back when the period ends */
    deployment_status("web", false);
    clock_ns = T0 + MINUTE;
    ctl_result res = reconcile("g");
    c = expect("g", "Ready", "Ready",
               "Dependent resources successfully reconciled; 1 dependent unready within the grace "
               "period (5m0s): apps/v1 Deployment ");
    struct json_object *ready = condition(c, "Ready");
    assert_non_null(strstr(co_json_str(ready, "message", NULL), "/web"));
    char t1[CO_TIME_STR_MAX];
    time_text(t1, T0 + MINUTE);
    assert_string_equal(str_at(c, "status", "unreadySince", NULL), t1);
    assert_string_equal(last_operation(c), "waiting for 1 dependent to become ready");
    assert_string_equal(str_at(c, "status", "lastOperation", "lastUpdateTime"), t1);
    assert_null(condition(c, "Degraded"));
    json_object_put(c);
    /* requeued at the end of the grace period, which runs from this pass on (plus the 1–5 %
     * jitter) */
    assert_true(res.requeue_after_ns >= 5 * MINUTE);
    assert_true(res.requeue_after_ns <= 5 * MINUTE + 5 * MINUTE / 20);

    /* later within the period: nothing changes, nothing is written */
    clock_ns = T0 + 3 * MINUTE;
    char *rv = resource_version("g");
    res = reconcile("g");
    char *rv2 = resource_version("g");
    assert_string_equal(rv, rv2);
    free(rv);
    free(rv2);
    assert_true(res.requeue_after_ns >= 3 * MINUTE);
    assert_true(res.requeue_after_ns <= 3 * MINUTE + 3 * MINUTE / 20);

    /* past it: Degraded, for api is still ready */
    clock_ns = T0 + 7 * MINUTE;
    (void)reconcile("g");
    c = expect("g", "Warning", "Degraded",
               "1 of 2 dependents unready for longer than the grace period (5m0s): apps/v1 "
               "Deployment ");
    assert_string_equal(str_at(c, "status", "unreadySince", NULL), t1);
    struct json_object *deg = condition(c, "Degraded");
    assert_non_null(deg);
    assert_string_equal(co_json_str(deg, "status", NULL), "True");
    assert_string_equal(co_json_str(deg, "reason", NULL), "Degraded");
    assert_string_equal(co_json_str(condition(c, "Ready"), "status", NULL), "True");
    json_object_put(c);
    /* Warning still counts as ready for dependants */
    c = ctl_test_get_component(admin, ns, "g");
    assert_true(ctl_state_component_ready(c));
    json_object_put(c);

    /* nothing gating ready: Down */
    deployment_status("api", false);
    clock_ns = T0 + 8 * MINUTE;
    (void)reconcile("g");
    c = expect("g", "Error", "Down", "2 of 2 dependents unready");
    deg = condition(c, "Degraded");
    assert_non_null(deg);
    assert_string_equal(co_json_str(deg, "reason", NULL), "Down");
    assert_string_equal(co_json_str(condition(c, "Ready"), "status", NULL), "False");
    assert_string_equal(last_operation(c), "waiting for 2 dependents to become ready");
    json_object_put(c);

    /* suspended while Down: Down comes first (docs/lifecycle.md, "One reason, chosen by
     * priority"); the last operation says what the pass did */
    patch_component("g", "{\"spec\":{\"suspend\":true}}");
    (void)reconcile("g");
    c = expect("g", "Error", "Down", "2 of 2 dependents unready");
    assert_string_equal(last_operation(c), "reconciliation is suspended");
    json_object_put(c);

    /* resumed: a new generation is a real change and goes through Processing */
    patch_component("g", "{\"spec\":{\"suspend\":false}}");
    (void)reconcile("g");
    c = expect("g", "Processing", "Processing", NULL);
    assert_null(condition(c, "Degraded"));
    assert_null(co_json_get(c, "status", "unreadySince", NULL));
    json_object_put(c);

    /* recovery */
    deployment_status("web", true);
    deployment_status("api", true);
    clock_ns = T0 + 9 * MINUTE;
    reconcile_until_ready("g", 10);
    c = expect("g", "Ready", "Ready", NULL);
    assert_string_equal(co_json_str(condition(c, "Ready"), "message", NULL), CTL_MSG_READY);
    assert_null(co_json_get(c, "status", "unreadySince", NULL));
    assert_null(condition(c, "Degraded"));
    assert_string_equal(last_operation(c), "applied revision 2 (3 objects)");
    json_object_put(c);
    rv = resource_version("g");
    (void)reconcile("g");
    rv2 = resource_version("g");
    assert_string_equal(rv, rv2);
    free(rv);
    free(rv2);

    /* an auxiliary dependent never makes it Degraded, but unready past the grace period it
     * makes it Warning */
    deployment_status("side", false);
    clock_ns = T0 + 20 * MINUTE;
    res = reconcile("g");
    c = expect("g", "Ready", "Ready", NULL);
    char t20[CO_TIME_STR_MAX];
    time_text(t20, T0 + 20 * MINUTE);
    assert_string_equal(str_at(c, "status", "unreadySince", NULL), t20);
    json_object_put(c);
    assert_true(res.requeue_after_ns >= 5 * MINUTE);
    assert_true(res.requeue_after_ns <= 5 * MINUTE + 5 * MINUTE / 20);
    clock_ns = T0 + 26 * MINUTE;
    (void)reconcile("g");
    c = expect("g", "Warning", "AuxiliaryUnready",
               "1 auxiliary dependent unready for longer than the grace period (5m0s): apps/v1 "
               "Deployment ");
    assert_non_null(strstr(co_json_str(condition(c, "Ready"), "message", NULL), "/side"));
    assert_null(condition(c, "Degraded"));
    json_object_put(c);
    deployment_status("side", true);
    (void)reconcile("g");
    c = expect("g", "Ready", "Ready", NULL);
    assert_null(co_json_get(c, "status", "unreadySince", NULL));
    json_object_put(c);

    /* Down again, then disabled: with no dependent left to judge, the Degraded condition goes
     * and Disabled is the reason (docs/lifecycle.md, "Disabled") */
    deployment_status("web", false);
    deployment_status("api", false);
    clock_ns = T0 + 27 * MINUTE;
    (void)reconcile("g");
    clock_ns = T0 + 33 * MINUTE;
    (void)reconcile("g");
    c = expect("g", "Error", "Down", NULL);
    assert_non_null(condition(c, "Degraded"));
    json_object_put(c);
    patch_component("g", "{\"spec\":{\"enabled\":false}}");
    for (int i = 0; i < 20; i++) {
        (void)reconcile("g");
        c = ctl_test_get_component(admin, ns, "g");
        bool disabled = strcmp(str_at(c, "status", "state", NULL), "Ready") == 0;
        json_object_put(c);
        if (disabled) {
            break;
        }
    }
    c = expect("g", "Ready", "Disabled", "Component is disabled");
    assert_null(condition(c, "Degraded"));
    assert_null(co_json_get(c, "status", "unreadySince", NULL));
    json_object_put(c);

    delete_and_reconcile("g");
}

/* Without a grace period an unready dependent turns a Ready Component to Processing at once,
 * as it always did. */
static void test_ctl_grace__without_grace_period_unready_means_processing(void **state)
{
    (void)state;
    clock_ns = T0;
    ctl_test_create_component(admin, ns, "ng",
                              "{" SRC ",\"path\":\"grace\",\"reapplyInterval\":\"24h\"}");
    (void)reconcile("ng");
    deployment_status("web", true);
    deployment_status("api", true);
    deployment_status("side", true);
    reconcile_until_ready("ng", 10);
    deployment_status("web", false);
    clock_ns = T0 + MINUTE;
    (void)reconcile("ng");
    struct json_object *c = expect("ng", "Processing", "Processing", CTL_MSG_PROCESSING);
    assert_null(co_json_get(c, "status", "unreadySince", NULL));
    assert_string_equal(last_operation(c), "waiting for 1 dependent to become ready");
    json_object_put(c);
    deployment_status("web", true);
    reconcile_until_ready("ng", 10);
    delete_and_reconcile("ng");
}

/* ---- prerequisites ----------------------------------------------------------------------- */

/* docs/lifecycle.md, "Prerequisites": a one-time barrier before the first install. */
static void test_ctl_grace__prerequisite_holds_first_install_only(void **state)
{
    (void)state;
    clock_ns = T0;
    ctl_test_create_component(
        admin, ns, "pq",
        "{" SRC ",\"path\":\"prereq\",\"prerequisites\":["
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"name\":\"%s\"},"
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"db\"}]}",
        ns);
    ctl_result res = reconcile("pq");
    char *want = co_xasprintf("Prerequisite not met: waiting for condition \"Ready\" of apps/v1 "
                              "Deployment %s/db to become True (currently not found)",
                              ns);
    struct json_object *c = expect("pq", "Pending", "PrerequisiteNotMet", want);
    free(want);
    char *op =
        co_xasprintf("waiting for prerequisite apps/v1 Deployment %s/db (condition Ready)", ns);
    assert_string_equal(last_operation(c), op);
    free(op);
    assert_null(co_json_get(c, "status", "inventory", NULL));
    json_object_put(c);
    assert_true(res.requeue_after_ns > 0);
    co_kube_ref cm = {"v1", "ConfigMap", ns, "after-db"};
    assert_co_fail_with(CO_ENOTFOUND, co_kube_get(NULL, admin, &cm, NULL));

    /* the object exists, not ready yet: the message says what it is instead */
    struct json_object *db = co_test_json(DEPLOYMENT("db", ""));
    assert_co_pass(co_json_set(db, json_object_new_string(ns), "metadata", "namespace", NULL));
    assert_co_pass(co_kube_create(NULL, admin, db, NULL));
    json_object_put(db);
    (void)reconcile("pq");
    json_object_put(expect("pq", "Pending", "PrerequisiteNotMet", "(currently InProgress"));
    assert_co_fail_with(CO_ENOTFOUND, co_kube_get(NULL, admin, &cm, NULL));

    /* met: the Component installs */
    deployment_status("db", true);
    reconcile_until_ready("pq", 10);
    c = expect("pq", "Ready", "Ready", CTL_MSG_READY);
    assert_string_equal(last_operation(c), "applied revision 1 (1 object)");
    json_object_put(c);
    assert_co_pass(co_kube_get(NULL, admin, &cm, NULL));

    /* never again: the prerequisite turning unready, or missing, does not hold later passes,
     * not even of a new generation */
    deployment_status("db", false);
    (void)reconcile("pq");
    json_object_put(expect("pq", "Ready", "Ready", NULL));
    co_kube_ref dref = {"apps/v1", "Deployment", ns, "db"};
    assert_co_pass(co_kube_delete(NULL, admin, &dref, NULL));
    patch_component("pq", "{\"metadata\":{\"annotations\":{\"touch\":\"1\"}}}");
    reconcile_until_ready("pq", 10);
    c = expect("pq", "Ready", "Ready", NULL);
    assert_string_equal(last_operation(c), "applied revision 2 (1 object)");
    json_object_put(c);
    delete_and_reconcile("pq");
}

/* A prerequisite is read with the Component's identity: one it may not read is reported as
 * such, and nothing is installed. */
static void test_ctl_grace__prerequisite_forbidden_to_the_component(void **state)
{
    (void)state;
    clock_ns = T0;
    ctl_test_create_component(admin, ns, "pqf",
                              "{" SRC ",\"path\":\"prereq\",\"serviceAccountName\":\"nobody\","
                              "\"prerequisites\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
                              "\"Deployment\",\"namespace\":\"kube-system\",\"name\":\"x\"}]}");
    (void)reconcile("pqf");
    char *want = co_xasprintf("Prerequisite not met: apps/v1 Deployment kube-system/x cannot be "
                              "read with the identity of the Component "
                              "(system:serviceaccount:%s:nobody): forbidden",
                              ns);
    struct json_object *c = expect("pqf", "Pending", "PrerequisiteNotMet", want);
    free(want);
    assert_null(co_json_get(c, "status", "inventory", NULL));
    json_object_put(c);
    delete_and_reconcile("pqf");
}

/* ---- a ComponentPolicy Warn rule --------------------------------------------------------- */

static void install_policy_crd(void)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/crds/core.cs.sap.com_componentpolicies.yaml", CO_SOURCE_ROOT);
    size_t len = 0;
    char *text = co_test_read_file(path, &len);
    assert_non_null(text);
    struct json_object *crd = NULL;
    assert_co_pass(co_yaml_parse(&crd, text, len, 0));
    free(text);
    int rc = co_kube_create(NULL, admin, crd, NULL);
    assert_true(rc == 0 || rc == CO_EEXISTS);
    json_object_put(crd);
}

/* docs/lifecycle.md, "Warning state": a Warn rule that matches at reconcile makes a Component
 * that would be Ready Warning, with the rule named; removing the policy makes it Ready. */
static void test_ctl_grace__policy_warn_rule_gives_warning(void **state)
{
    (void)state;
    install_policy_crd();
    char *wns = co_test_kube_namespace(admin, "ctl-warn-");
    char *sel = co_test_random_name("w", 8);
    struct json_object *lab =
        co_test_json("{\"metadata\":{\"labels\":{\"co-warn-test\":\"%s\"}}}", sel);
    co_kube_ref nref = {"v1", "Namespace", NULL, wns};
    assert_co_pass(co_kube_patch(NULL, admin, &nref, CO_KUBE_PATCH_MERGE, lab, NULL));
    json_object_put(lab);
    put("warn/cm.yaml", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                        "{\"name\":\"warn-cm\"},\"data\":{\"k\":\"v\"}}\n");
    ctl_source_ops src = ctl_test_source_ops();
    ctl_apply_ops app = ctl_test_apply_ops();
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.policy_probe_ns = CO_SECOND;
    o.metrics_addr = "127.0.0.1:0";
    o.probe_addr = "127.0.0.1:0";
    o.workers = 2;
    const char *nss[] = {wns};
    o.namespaces = nss;
    o.nnamespaces = 1;
    o.source = &src;
    o.apply = &app;
    ctl_manager *m = NULL;
    assert_co_pass(ctl_manager_new(&m, &o));
    assert_co_pass(ctl_manager_start(m));
    struct json_object *pol = co_test_json(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","
        "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaceSelector\":{\"matchLabels\":"
        "{\"co-warn-test\":\"%s\"}},\"rules\":{\"sourceKinds\":{\"allowed\":[\"git\"],"
        "\"action\":\"Warn\"}}}}",
        sel, sel);
    int rc = 0;
    for (int i = 0; i < 100 && (rc = co_kube_create(NULL, admin, pol, NULL)) != 0; i++) {
        usleep(200 * 1000);
    }
    assert_co_pass(rc);
    json_object_put(pol);
    ctl_test_create_component(admin, wns, "warned", "{" SRC ",\"path\":\"warn\"}");
    ctl_test_wait_state(admin, wns, "warned", "Warning", "PolicyWarning", WAIT_MS);
    struct json_object *c = ctl_test_get_component(admin, wns, "warned");
    struct json_object *ready = condition(c, "Ready");
    char *named = co_xasprintf("ComponentPolicy \"%s\": sourceKinds", sel);
    const char *msg = co_json_str(ready, "message", NULL);
    assert_non_null(strstr(msg, CTL_MSG_READY));
    assert_non_null(strstr(msg, named));
    assert_string_equal(co_json_str(ready, "status", NULL), "True");
    free(named);
    json_object_put(c);
    /* admitted: the objects are there */
    co_kube_ref cm = {"v1", "ConfigMap", wns, "warn-cm"};
    assert_co_pass(co_kube_get(NULL, admin, &cm, NULL));

    co_kube_ref pref = {"core.cs.sap.com/v1alpha1", "ComponentPolicy", NULL, sel};
    assert_co_pass(co_kube_delete(NULL, admin, &pref, NULL));
    ctl_test_wait_state(admin, wns, "warned", "Ready", "Ready", WAIT_MS);
    co_kube_ref cref = {"core.cs.sap.com/v1alpha1", "Component", wns, "warned"};
    assert_co_pass(co_kube_delete(NULL, admin, &cref, NULL));
    ctl_test_wait_gone(admin, wns, "warned", WAIT_MS);
    ctl_manager_free(m);
    free(sel);
    free(wns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_ctl_grace__unready_dependents_stay_ready_then_degraded_down_and_recover),
        cmocka_unit_test(test_ctl_grace__without_grace_period_unready_means_processing),
        cmocka_unit_test(test_ctl_grace__prerequisite_holds_first_install_only),
        cmocka_unit_test(test_ctl_grace__prerequisite_forbidden_to_the_component),
        cmocka_unit_test(test_ctl_grace__policy_warn_rule_gives_warning),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
