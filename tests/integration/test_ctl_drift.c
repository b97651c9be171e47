/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Drift detection (docs/drift.md) against the real kube-apiserver. The first tests drive
 * ctl_reconcile() pass by pass with the real apply engine over a transport that logs every
 * request: a Component that does not drift writes nothing, an object edited by hand is corrected
 * on the next pass although its reapply interval (1 h) is far off, and an ignored field is left
 * as it was edited. The condition's event and the gauge are the manager's, so the Warn test
 * runs one (whose dependents cache serves the ConfigMaps: their values are compared by
 * fingerprint there).
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "co/api/component.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_transport.h"
#include "co/util/buf.h"
#include "co/util/duration.h"
#include "co/util/metrics.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_inventory.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_reconcile.h"
#include "controller/ctl_state.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define SRC     "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"
#define WAIT_MS 90000L
/* far longer than any test: a re-apply seen is drift's, not the interval's */
#define HOUR "\"reapplyInterval\":\"1h\",\"requeueInterval\":\"1h\""

/* ---- fixture ----------------------------------------------------------------------------- */

static co_kube_client *admin;
static co_kube_config *cfg;
static co_kube_client *client;
static co_test_counting *counter;
static char *ns;
static char *srcdir;
static ctl_env env;

static void put(const char *rel, const char *text)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", srcdir, rel);
    co_test_write_file(path, text, strlen(text));
}

#define CM(name, ann, data)                                                                        \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name "\","           \
    "\"annotations\":{" ann "}},\"data\":{" data "}}\n"
#define WARN   "\"component-operator.cs.sap.com/drift-policy\":\"Warn\""
#define IGNORE "\"component-operator.cs.sap.com/ignore-fields\":\"[\\\"/data/scale\\\"]\""

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    ns = co_test_kube_namespace(admin, "ctl-drift-");
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    put("fix/a.yaml", CM("fix-a", "", "\"greeting\":\"hello\""));
    put("fix/b.yaml", CM("fix-b", "", "\"other\":\"1\""));
    put("ign/a.yaml", CM("ign-a", IGNORE, "\"greeting\":\"hello\",\"scale\":\"1\""));
    put("warn/a.yaml", CM("warn-a", WARN, "\"greeting\":\"hello\""));
    put("warn/b.yaml", CM("warn-b", WARN, "\"other\":\"1\""));

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
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_backoff_free(env.backoff);
    co_kube_client_free(client);
    co_kube_config_free(cfg);
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    free(ns);
    curl_global_cleanup();
    return 0;
}

/* ---- helpers ----------------------------------------------------------------------------- */

/* Requests logged that are not GETs (writes), printed. */
static size_t writes(co_test_counting *c)
{
    co_test_counting_print(c, "requests");
    return c->n - co_test_counting_count(c, "GET", NULL);
}

static void reconcile(const char *name)
{
    ctl_result res;
    assert_co_pass(ctl_reconcile(&res, &env, ns, name));
}

static void reconcile_until_ready(const char *name)
{
    char state[64] = "", reason[64] = "";
    for (int i = 0; i < 10; i++) {
        reconcile(name);
        ctl_test_state(admin, ns, name, state, sizeof(state), reason, sizeof(reason));
        if (!strcmp(state, "Ready") && !strcmp(reason, "Ready")) {
            return;
        }
        usleep(20 * 1000);
    }
    fail_msg("%s: %s/%s, expected Ready", name, state, reason);
}

/* data.@p key of ConfigMap @p name in namespace @p cns ("" when unset). */
static char *cm_value(const char *cns, const char *name, const char *key)
{
    struct json_object *cm = NULL;
    assert_co_pass(co_kube_get(&cm, admin, &(co_kube_ref){"v1", "ConfigMap", cns, name}, NULL));
    const char *v = co_json_str(cm, "data", key, NULL);
    char *out = strdup(v ? v : "");
    json_object_put(cm);
    return out;
}

static void expect_cm_value(const char *cns, const char *name, const char *key, const char *want)
{
    char *v = cm_value(cns, name, key);
    assert_string_equal(v, want);
    free(v);
}

/* Edits ConfigMap data by hand, under a field manager of its own (not a kubectl one, whose
 * fields an SsaOverride update would take over and drop: docs/behaviour.md). */
static void edit_cm(const char *cns, const char *name, const char *data_json)
{
    struct json_object *patch = co_test_json("{\"data\":%s}", data_json);
    co_kube_write_options wo = {0};
    wo.field_manager = "by-hand";
    assert_co_pass(co_kube_patch(NULL, admin, &(co_kube_ref){"v1", "ConfigMap", cns, name},
                                 CO_KUBE_PATCH_MERGE, patch, &wo));
    json_object_put(patch);
}

/* The Component's condition @p type (a copy; NULL when absent). */
static struct json_object *condition(const char *cns, const char *name, const char *type)
{
    struct json_object *c = ctl_test_get_component(admin, cns, name);
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    struct json_object *found = NULL;
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        struct json_object *cd = json_object_array_get_idx(conds, i);
        const char *t = co_json_str(cd, "type", NULL);
        if (t && !strcmp(t, type)) {
            found = co_json_copy(cd);
        }
    }
    json_object_put(c);
    return found;
}

/* The inventory item of ConfigMap @p item of Component @p name (a copy). */
static struct json_object *item_of(const char *cns, const char *name, const char *item)
{
    struct json_object *c = ctl_test_get_component(admin, cns, name);
    struct json_object *inv = NULL;
    assert_co_pass(co_component_inventory_get(&inv, co_json_get(c, "status", NULL)));
    struct json_object *found = NULL;
    for (size_t i = 0; inv && i < json_object_array_length(inv); i++) {
        struct json_object *it = json_object_array_get_idx(inv, i);
        if (!strcmp(co_json_str(it, "name", NULL), item)) {
            found = co_json_copy(it);
        }
    }
    json_object_put(inv);
    json_object_put(c);
    assert_non_null(found);
    return found;
}

/* How often an event with reason @p reason was recorded about @p name. */
static int events_with_reason(const char *ens, const char *name, const char *reason)
{
    co_kube_ref ref = {"v1", "Event", ens, NULL};
    co_kube_list_options lo = {0};
    char *sel = co_xasprintf("involvedObject.name=%s", name);
    lo.field_selector = sel;
    struct json_object *list = NULL;
    assert_co_pass(co_kube_list(&list, admin, &ref, &lo));
    free(sel);
    struct json_object *items = co_json_get(list, "items", NULL);
    int n = 0;
    for (size_t j = 0; j < json_object_array_length(items); j++) {
        struct json_object *ev = json_object_array_get_idx(items, j);
        const char *r = co_json_str(ev, "reason", NULL);
        int64_t count = 1;
        if (co_json_get_int64(&count, ev, "count", NULL) < 0) {
            co_error_clear();
            count = 1;
        }
        if (r && !strcmp(r, reason)) {
            n += (int)count;
        }
    }
    json_object_put(list);
    return n;
}

static bool metrics_contain(ctl_manager *m, const char *text)
{
    co_buf body = CO_BUF_INIT(64 << 20);
    assert_co_pass(co_metrics_render(&body, ctl_manager_metrics(m)));
    bool found = strstr(co_buf_cstr(&body), text) != NULL;
    co_buf_dispose(&body);
    return found;
}

/* ---- Correct ----------------------------------------------------------------------------- */

/* A Component whose objects do not drift makes no write at all on a pass (no status write, no
 * Drifted condition); an object edited by hand is re-applied on the next pass, without waiting
 * for its reapply interval of an hour, and nothing is reported as drifted after that. */
static void test_ctl_drift__no_drift_no_write_and_correct_reapplies_at_once(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "fix", "{" SRC ",\"path\":\"fix\"," HOUR "}");
    reconcile_until_ready("fix");
    expect_cm_value(ns, "fix-a", "greeting", "hello");

    co_test_counting_reset(counter);
    reconcile("fix");
    reconcile("fix");
    assert_int_equal(writes(counter), 0);
    struct json_object *cond = condition(ns, "fix", CTL_CONDITION_DRIFTED);
    assert_null(cond);

    /* edited by hand: one pass puts the manifest's value back with one apply */
    edit_cm(ns, "fix-a", "{\"greeting\":\"edited\",\"added\":\"by hand\"}");
    co_test_counting_reset(counter);
    reconcile("fix");
    expect_cm_value(ns, "fix-a", "greeting", "hello");
    /* what the manifest does not set is no drift and stays */
    expect_cm_value(ns, "fix-a", "added", "by hand");
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/configmaps/fix-a"), 1);
    assert_int_equal(co_test_counting_count(counter, "PATCH", "/configmaps/fix-b"), 0);
    cond = condition(ns, "fix", CTL_CONDITION_DRIFTED);
    assert_null(cond);
    reconcile_until_ready("fix");

    /* corrected: quiet again */
    co_test_counting_reset(counter);
    reconcile("fix");
    assert_int_equal(writes(counter), 0);

    /* a value removed by hand counts too */
    struct json_object *patch = co_test_json("{\"data\":{\"other\":null}}");
    assert_co_pass(co_kube_patch(NULL, admin, &(co_kube_ref){"v1", "ConfigMap", ns, "fix-b"},
                                 CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
    reconcile("fix");
    expect_cm_value(ns, "fix-b", "other", "1");
}

/* A field in ignore-fields is neither compared nor put back: an edit of it alone causes no
 * write, and a re-apply for another field's drift keeps its live value. */
static void test_ctl_drift__ignored_field_left_alone(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "ign", "{" SRC ",\"path\":\"ign\"," HOUR "}");
    reconcile_until_ready("ign");
    expect_cm_value(ns, "ign-a", "scale", "1");

    edit_cm(ns, "ign-a", "{\"scale\":\"5\"}");
    co_test_counting_reset(counter);
    reconcile("ign");
    reconcile("ign");
    assert_int_equal(writes(counter), 0);
    expect_cm_value(ns, "ign-a", "scale", "5");

    /* another field drifts: re-applied, the ignored one keeps its live value */
    edit_cm(ns, "ign-a", "{\"greeting\":\"edited\",\"scale\":\"7\"}");
    reconcile("ign");
    expect_cm_value(ns, "ign-a", "greeting", "hello");
    expect_cm_value(ns, "ign-a", "scale", "7");
    struct json_object *cond = condition(ns, "ign", CTL_CONDITION_DRIFTED);
    assert_null(cond);
    struct json_object *it = item_of(ns, "ign", "ign-a");
    assert_null(co_json_get(it, "drift", NULL));
    json_object_put(it);
}

/* ---- Warn, through the manager ----------------------------------------------------------- */

/* Waits until the Component's Drifted condition is present with @p message (NULL: absent). */
static void wait_drifted(ctl_manager *m, const char *cns, const char *name, const char *message)
{
    for (int i = 0; i < 600; i++) {
        struct json_object *cd = condition(cns, name, CTL_CONDITION_DRIFTED);
        const char *msg = co_json_str(cd, "message", NULL);
        bool done = message ? msg && !strcmp(msg, message) : cd == NULL;
        json_object_put(cd);
        if (done) {
            return;
        }
        if (i % 10 == 0) {
            ctl_manager_enqueue(m, cns, name);
        }
        usleep(100 * 1000);
    }
    fail_msg("%s/%s: Drifted condition not %s", cns, name, message ? message : "absent");
}

/* Under Warn an object edited by hand is reported (condition naming object and field, inventory
 * item, one event, the gauge) and left as edited however many passes run; once it is back as
 * the manifest has it the report goes (an event says so). */
static void test_ctl_drift__warn_reports_and_leaves_the_edit(void **state)
{
    (void)state;
    char *mns = co_test_kube_namespace(admin, "ctl-drift-mgr-");
    ctl_source_ops src = ctl_test_source_ops();
    ctl_apply_ops app = ctl_apply_engine_ops();
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.policy_probe_ns = CO_SECOND;
    o.metrics_addr = "127.0.0.1:0";
    o.probe_addr = "127.0.0.1:0";
    o.workers = 2;
    const char *watched = mns;
    o.namespaces = &watched;
    o.nnamespaces = 1;
    o.source = &src;
    o.apply = &app;
    ctl_manager *m = NULL;
    assert_co_pass(ctl_manager_new(&m, &o));
    assert_co_pass(ctl_manager_start(m));

    ctl_test_create_component(admin, mns, "warn", "{" SRC ",\"path\":\"warn\"," HOUR "}");
    ctl_test_wait_state(admin, mns, "warn", "Ready", "Ready", WAIT_MS);
    /* a few passes without drift: no condition, no gauge series */
    for (int i = 0; i < 3; i++) {
        ctl_manager_enqueue(m, mns, "warn");
        usleep(200 * 1000);
    }
    struct json_object *cd = condition(mns, "warn", CTL_CONDITION_DRIFTED);
    assert_null(cd);
    assert_false(metrics_contain(m, "component_operator_drifted_objects{"));

    edit_cm(mns, "warn-a", "{\"greeting\":\"edited\"}");
    char *want = co_xasprintf("ConfigMap %s/warn-a: /data/greeting", mns);
    wait_drifted(m, mns, "warn", want);
    cd = condition(mns, "warn", CTL_CONDITION_DRIFTED);
    assert_string_equal(co_json_str(cd, "status", NULL), "True");
    assert_string_equal(co_json_str(cd, "reason", NULL), CTL_REASON_DRIFTED);
    json_object_put(cd);
    struct json_object *it = item_of(mns, "warn", "warn-a");
    assert_string_equal(co_json_str(it, "drift", NULL), "/data/greeting");
    assert_string_equal(co_json_str(it, "phase", NULL), "Ready");
    json_object_put(it);
    it = item_of(mns, "warn", "warn-b");
    assert_null(co_json_get(it, "drift", NULL));
    json_object_put(it);
    char *series = co_xasprintf("component_operator_drifted_objects{controller=\"component\","
                                "group=\"core.cs.sap.com\",kind=\"Component\",namespace=\"%s\","
                                "name=\"warn\"} 1",
                                mns);
    for (int i = 0; i < 50 && !metrics_contain(m, series); i++) {
        usleep(100 * 1000);
    }
    assert_true(metrics_contain(m, series));
    int n = 0;
    for (int i = 0; i < 100 && n == 0; i++) {
        n = events_with_reason(mns, "warn", CTL_REASON_DRIFTED);
        usleep(100 * 1000);
    }
    assert_int_equal(n, 1);

    /* more passes: still reported, still as edited, no second event */
    for (int i = 0; i < 5; i++) {
        ctl_manager_enqueue(m, mns, "warn");
        usleep(200 * 1000);
    }
    expect_cm_value(mns, "warn-a", "greeting", "edited");
    assert_int_equal(events_with_reason(mns, "warn", CTL_REASON_DRIFTED), 1);
    char state_[64] = "", reason[64] = "";
    ctl_test_state(admin, mns, "warn", state_, sizeof(state_), reason, sizeof(reason));
    assert_string_equal(state_, "Ready");

    /* put back by hand: the report goes */
    edit_cm(mns, "warn-a", "{\"greeting\":\"hello\"}");
    wait_drifted(m, mns, "warn", NULL);
    it = item_of(mns, "warn", "warn-a");
    assert_null(co_json_get(it, "drift", NULL));
    json_object_put(it);
    n = 0;
    for (int i = 0; i < 100 && n == 0; i++) {
        n = events_with_reason(mns, "warn", CTL_REASON_DRIFT_RESOLVED);
        usleep(100 * 1000);
    }
    assert_int_equal(n, 1);
    for (int i = 0; i < 50 && metrics_contain(m, "component_operator_drifted_objects{"); i++) {
        usleep(100 * 1000);
    }
    assert_false(metrics_contain(m, "component_operator_drifted_objects{"));

    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", mns, "warn"};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    ctl_test_wait_gone(admin, mns, "warn", WAIT_MS);
    ctl_manager_free(m);
    free(series);
    free(want);
    free(mns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_drift__no_drift_no_write_and_correct_reapplies_at_once),
        cmocka_unit_test(test_ctl_drift__ignored_field_left_alone),
        cmocka_unit_test(test_ctl_drift__warn_reports_and_leaves_the_edit),
    };
    return cmocka_run_group_tests_name("ctl_drift", tests, group_setup, group_teardown);
}
