/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ComponentPolicy audit reports (docs/policy-audit.md) against the real kube-apiserver with the
 * manager in-process. Components are written straight to the API server before any policy
 * exists, as Components a new policy finds in a cluster. The periodic audit is an hour away
 * until the last tests, so every report seen before comes from the audit a policy change
 * triggers; then a manager auditing every 2 s finds a Component broken without a policy change. A
 * new Deny policy reports the violating Components in its status, a Warn policy counts under Warn;
 * the list is capped; a fixed or deleted Component leaves the report at the next audit; an
 * audit that finds what the reports already say writes nothing.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "co/api/policy.h"
#include "co/json/json.h"
#include "co/json/yaml.h"
#include "co/kube/kube_client.h"
#include "co/util/duration.h"
#include "co/util/metrics.h"
#include "controller/ctl_manager.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define WAIT_MS  90000L
#define HTTP_SRC "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"
#define GIT_SRC                                                                                    \
    "\"sourceRef\":{\"git\":{\"url\":\"https://git.example.invalid/app.git\",\"ref\":"             \
    "{\"branch\":\"main\"}}}"
#define MANY (CTL_AUDIT_MAX_VIOLATORS + 2)

static co_kube_client *admin;
static char *ns;
static char *label; /* the namespace's label value the policies select */
static char *deny_name, *warn_name, *idle_name;
static ctl_manager *mgr;
static char *srcdir;
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;

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

/* A policy selecting the test namespace (@p selected) or no namespace at all, allowing only git
 * sources, with @p action; @p extra is appended to the rules. */
static void put_policy(const char *name, const char *action, bool selected, const char *extra)
{
    struct json_object *pol = co_test_json(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","
        "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaceSelector\":{\"matchLabels\":"
        "{\"co-audit-test\":\"%s\"}},\"rules\":{\"sourceKinds\":{\"action\":\"%s\","
        "\"allowed\":[\"git\"]}%s}}}",
        name, selected ? label : "nowhere", action, extra ? extra : "");
    co_kube_write_options wo = {0, "co-test", 1, NULL};
    int rc = 0;
    for (int i = 0; i < 100; i++) {
        if ((rc = co_kube_apply(NULL, admin, pol, &wo)) == 0) {
            break;
        }
        usleep(200 * 1000);
    }
    assert_co_pass(rc);
    json_object_put(pol);
}

static struct json_object *get_policy(const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "ComponentPolicy", NULL, name};
    struct json_object *obj = NULL;
    assert_co_pass(co_kube_get(&obj, admin, &ref, NULL));
    return obj;
}

static int64_t int_at(const struct json_object *obj, const char *a, const char *b)
{
    int64_t v = -1;
    if (co_json_get_int64(&v, obj, "status", a, b, NULL) < 0) {
        co_error_clear();
        return -1;
    }
    return v;
}

/* Waits until the policy's report is for its current generation and counts @p deny and @p warn
 * violating Components; returns the policy (json_object_put() it). */
static struct json_object *wait_report(const char *name, int64_t deny, int64_t warn)
{
    struct json_object *pol = NULL;
    for (long waited = 0; waited < WAIT_MS; waited += 100) {
        pol = get_policy(name);
        int64_t gen = 0, seen = -1;
        assert_co_pass(co_json_get_int64(&gen, pol, "metadata", "generation", NULL));
        if (co_json_get_int64(&seen, pol, "status", "observedGeneration", NULL) < 0) {
            co_error_clear();
        }
        if (seen == gen && int_at(pol, "violations", "deny") == deny &&
            int_at(pol, "violations", "warn") == warn) {
            return pol;
        }
        json_object_put(pol);
        usleep(100 * 1000);
    }
    pol = get_policy(name);
    fail_msg("policy %s: no report of %lld denied and %lld warned; status: %s", name,
             (long long)deny, (long long)warn,
             json_object_to_json_string(co_json_get(pol, "status", NULL)));
    return NULL;
}

static void create_component(const char *name, const char *source)
{
    struct json_object *obj =
        co_test_json("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
                     "\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\"},\"spec\":{%s}}",
                     ns, name, source);
    assert_co_pass(co_kube_create(NULL, admin, obj, NULL));
    json_object_put(obj);
}

static void delete_component(const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    int rc = co_kube_delete(NULL, admin, &ref, NULL);
    assert_true(rc == 0 || rc == CO_ENOTFOUND);
    ctl_test_wait_gone(admin, ns, name, WAIT_MS);
}

/* Names of the listed violators, joined with ",". */
static char *violator_names(const struct json_object *pol)
{
    struct json_object *list = co_json_get(pol, "status", "violators", NULL);
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    size_t n = list ? json_object_array_length(list) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = co_json_str(json_object_array_get_idx(list, i), "name", NULL);
        assert_co_pass(co_buf_printf(&b, "%s%s", i ? "," : "", name ? name : "?"));
    }
    char *s = co_buf_take(&b, NULL);
    return s ? s : co_xstrdup("");
}

/* The value of component_policy_violations for @p policy and @p action, -1 when absent. */
static double metric(const char *policy, const char *action)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_metrics_render(&b, ctl_manager_metrics(mgr)));
    char *want =
        co_xasprintf("component_policy_violations{policy=\"%s\",action=\"%s\"} ", policy, action);
    const char *at = strstr(co_buf_cstr(&b), want);
    double v = at ? strtod(at + strlen(want), NULL) : -1;
    free(want);
    co_buf_dispose(&b);
    return v;
}

static void start_manager(int64_t interval_ns);

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    install_policy_crd();
    ns = co_test_kube_namespace(admin, "ctl-audit-");
    label = co_test_random_name("audit", 8);
    deny_name = co_xasprintf("%s-deny", label);
    warn_name = co_xasprintf("%s-warn", label);
    idle_name = co_xasprintf("%s-zz-idle", label); /* sorts last: written last in an audit */
    struct json_object *lab =
        co_test_json("{\"metadata\":{\"labels\":{\"co-audit-test\":\"%s\"}}}", label);
    co_kube_ref nref = {"v1", "Namespace", NULL, ns};
    assert_co_pass(co_kube_patch(NULL, admin, &nref, CO_KUBE_PATCH_MERGE, lab, NULL));
    json_object_put(lab);
    /* there before any policy: admission never saw them under one */
    create_component("bad-a", HTTP_SRC);
    create_component("bad-b", HTTP_SRC);
    create_component("good", GIT_SRC);
    /* the reconciler runs beside the audit: an empty source renders nothing */
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    src_ops = ctl_test_source_ops();
    app_ops = ctl_test_apply_ops();

    start_manager(CO_HOUR);
    return 0;
}

/* The manager under test, auditing every @p interval_ns and 300 ms after a policy change. */
static void start_manager(int64_t interval_ns)
{
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.policy_probe_ns = CO_SECOND;
    o.metrics_addr = "0";
    o.probe_addr = "0";
    o.workers = 1;
    const char *nss = ns;
    o.namespaces = &nss;
    o.nnamespaces = 1;
    o.source = &src_ops;
    o.apply = &app_ops;
    o.policy_audit_interval_ns = interval_ns;
    o.policy_audit_debounce_ns = 300 * CO_MILLISECOND;
    assert_co_pass(ctl_manager_new(&mgr, &o));
    assert_co_pass(ctl_manager_start(mgr));
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_manager_free(mgr);
    const char *names[] = {deny_name, warn_name, idle_name};
    for (size_t i = 0; i < CO_ARRAY_SIZE(names); i++) {
        co_kube_ref pref = {"core.cs.sap.com/v1alpha1", "ComponentPolicy", NULL, names[i]};
        (void)!co_kube_delete(NULL, admin, &pref, NULL);
    }
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    free(deny_name);
    free(warn_name);
    free(idle_name);
    free(label);
    free(ns);
    curl_global_cleanup();
    return 0;
}

static void test_ctl_policy_audit__new_deny_policy_reports_existing_violators(void **state)
{
    (void)state;
    put_policy(deny_name, "Deny", true, NULL);
    struct json_object *pol = wait_report(deny_name, 2, 0);
    assert_int_equal(int_at(pol, "componentsEvaluated", NULL), 3);
    assert_int_equal(int_at(pol, "violations", "audit"), 0);
    char *names = violator_names(pol);
    assert_string_equal(names, "bad-a,bad-b");
    free(names);
    struct json_object *first =
        json_object_array_get_idx(co_json_get(pol, "status", "violators", NULL), 0);
    assert_string_equal(co_json_str(first, "namespace", NULL), ns);
    assert_string_equal(co_json_str(first, "action", NULL), "Deny");
    const char *msg = co_json_str(first, "message", NULL);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "sourceKinds: "));
    assert_true(strlen(msg) <= CTL_AUDIT_MAX_MESSAGE);
    assert_non_null(co_json_str(pol, "status", "lastReportTime", NULL));
    json_object_put(pol);
    assert_true(metric(deny_name, "Deny") == 2);
    assert_true(metric(deny_name, "Warn") == 0);
}

static void test_ctl_policy_audit__warn_policy_counts_separately(void **state)
{
    (void)state;
    put_policy(warn_name, "Warn", true, NULL);
    struct json_object *pol = wait_report(warn_name, 0, 2);
    struct json_object *first =
        json_object_array_get_idx(co_json_get(pol, "status", "violators", NULL), 0);
    assert_string_equal(co_json_str(first, "action", NULL), "Warn");
    json_object_put(pol);
    /* each policy is judged on its own: the Deny one still counts its violators */
    json_object_put(wait_report(deny_name, 2, 0));
    assert_true(metric(warn_name, "Warn") == 2);
    assert_true(metric(warn_name, "Deny") == 0);
}

/* A policy change audits every policy; a report that says what is stored is not written. */
static void test_ctl_policy_audit__unchanged_report_is_not_written(void **state)
{
    (void)state;
    struct json_object *d = get_policy(deny_name);
    struct json_object *w = get_policy(warn_name);
    char *drv = co_xstrdup(co_json_str(d, "metadata", "resourceVersion", NULL));
    char *wrv = co_xstrdup(co_json_str(w, "metadata", "resourceVersion", NULL));
    json_object_put(d);
    json_object_put(w);
    ctl_manager_stats before;
    ctl_manager_stats_get(mgr, &before);
    /* applies nowhere: its own first report is the only thing this audit writes */
    put_policy(idle_name, "Deny", false, NULL);
    json_object_put(wait_report(idle_name, 0, 0));
    ctl_manager_stats after;
    ctl_manager_stats_get(mgr, &after);
    assert_int_equal(after.policy_status_writes - before.policy_status_writes, 1);
    d = get_policy(deny_name);
    w = get_policy(warn_name);
    assert_string_equal(co_json_str(d, "metadata", "resourceVersion", NULL), drv);
    assert_string_equal(co_json_str(w, "metadata", "resourceVersion", NULL), wrv);
    json_object_put(d);
    json_object_put(w);
    free(drv);
    free(wrv);
}

static void test_ctl_policy_audit__violator_list_is_capped(void **state)
{
    (void)state;
    char name[64];
    for (int i = 0; i < MANY; i++) {
        snprintf(name, sizeof(name), "many-%02d", i);
        create_component(name, HTTP_SRC);
    }
    /* a change of the idle policy audits them all */
    put_policy(idle_name, "Deny", false, ",\"dependencies\":{\"maxCount\":5}");
    struct json_object *pol = wait_report(deny_name, 2 + MANY, 0);
    struct json_object *list = co_json_get(pol, "status", "violators", NULL);
    assert_int_equal(json_object_array_length(list), CTL_AUDIT_MAX_VIOLATORS);
    assert_int_equal(int_at(pol, "componentsEvaluated", NULL), 3 + MANY);
    /* in namespace and name order: the first ones listed, the last ones left out */
    assert_string_equal(co_json_str(json_object_array_get_idx(list, 0), "name", NULL), "bad-a");
    assert_string_equal(co_json_str(json_object_array_get_idx(list, 2), "name", NULL), "many-00");
    json_object_put(pol);
    for (int i = 0; i < MANY; i++) {
        snprintf(name, sizeof(name), "many-%02d", i);
        delete_component(name);
    }
}

static void test_ctl_policy_audit__fixed_and_deleted_components_leave_the_report(void **state)
{
    (void)state;
    struct json_object *fix = co_test_json("{\"spec\":{\"sourceRef\":{\"httpRepository\":null,"
                                           "\"git\":{\"url\":\"https://git.example.invalid/a.git\","
                                           "\"ref\":{\"branch\":\"main\"}}}}}");
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, "bad-a"};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, fix, NULL));
    json_object_put(fix);
    delete_component("bad-b");
    /* Component changes alone do not audit (the reconciler judges them); a policy change
     * does */
    put_policy(idle_name, "Deny", false, ",\"dependencies\":{\"maxCount\":6}");
    struct json_object *pol = wait_report(deny_name, 0, 0);
    assert_null(co_json_get(pol, "status", "violators", NULL));
    assert_int_equal(int_at(pol, "componentsEvaluated", NULL), 2);
    json_object_put(pol);
    json_object_put(wait_report(warn_name, 0, 0));
    assert_true(metric(deny_name, "Deny") == 0);
}

/* Without any policy change, the periodic audit finds a Component that broke a rule. */
static void test_ctl_policy_audit__periodic_audit_sees_component_changes(void **state)
{
    (void)state;
    ctl_manager_free(mgr);
    start_manager(2 * CO_SECOND);
    /* the new leader's first audit has run once its gauges exist */
    long waited = 0;
    while (metric(deny_name, "Deny") < 0 && waited < WAIT_MS) {
        usleep(100 * 1000);
        waited += 100;
    }
    assert_true(metric(deny_name, "Deny") == 0);
    struct json_object *brk = co_test_json("{\"spec\":{\"sourceRef\":{\"git\":null,"
                                           "\"httpRepository\":{\"url\":"
                                           "\"http://example.invalid/y.tar.gz\"}}}}");
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, "good"};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, brk, NULL));
    json_object_put(brk);
    struct json_object *pol = wait_report(deny_name, 1, 0);
    char *names = violator_names(pol);
    assert_string_equal(names, "good");
    free(names);
    json_object_put(pol);
}

/* A policy gone takes its metric series along. */
static void test_ctl_policy_audit__deleted_policy_leaves_the_metrics(void **state)
{
    (void)state;
    assert_true(metric(idle_name, "Deny") == 0);
    co_kube_ref pref = {"core.cs.sap.com/v1alpha1", "ComponentPolicy", NULL, idle_name};
    assert_co_pass(co_kube_delete(NULL, admin, &pref, NULL));
    long waited = 0;
    while (metric(idle_name, "Deny") >= 0 && waited < WAIT_MS) {
        usleep(100 * 1000);
        waited += 100;
    }
    assert_true(metric(idle_name, "Deny") < 0);
    assert_true(metric(deny_name, "Deny") == 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_policy_audit__new_deny_policy_reports_existing_violators),
        cmocka_unit_test(test_ctl_policy_audit__warn_policy_counts_separately),
        cmocka_unit_test(test_ctl_policy_audit__unchanged_report_is_not_written),
        cmocka_unit_test(test_ctl_policy_audit__violator_list_is_capped),
        cmocka_unit_test(test_ctl_policy_audit__fixed_and_deleted_components_leave_the_report),
        cmocka_unit_test(test_ctl_policy_audit__periodic_audit_sees_component_changes),
        cmocka_unit_test(test_ctl_policy_audit__deleted_policy_leaves_the_metrics),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
