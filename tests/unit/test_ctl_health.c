/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the readiness rules: one table row per kind, rule and hint, each an object as
 * the API server would return it. Expected results follow kstatus v0.37.2 and the Go
 * framework's analyzer, except the documented difference for failed Pods.
 */
#include <json-c/json.h>

#include "co/json/json.h"
#include "controller/ctl_health.h"
#include "tests/support/test_support.h"

#define HINT "component-operator.cs.sap.com/status-hint"
#define NOW  1700000000 /* 2023-11-14T22:13:20Z */

typedef struct row {
    const char *name;
    const char *json;
    ctl_health want;
} row;

/* clang-format off */
static const row rows[] = {
    /* ---- Deployment ---- */
    {"deployment ready",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"generation\":2},"
     "\"spec\":{\"replicas\":2,\"progressDeadlineSeconds\":600},\"status\":{\"observedGeneration\":2,"
     "\"replicas\":2,\"updatedReplicas\":2,\"readyReplicas\":2,\"availableReplicas\":2,\"conditions\":["
     "{\"type\":\"Progressing\",\"status\":\"True\",\"reason\":\"NewReplicaSetAvailable\"},"
     "{\"type\":\"Available\",\"status\":\"True\"}]}}", CTL_HEALTH_CURRENT},
    {"deployment without progress deadline needs no Progressing condition",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{},\"status\":{\"replicas\":1,"
     "\"updatedReplicas\":1,\"readyReplicas\":1,\"availableReplicas\":1,\"conditions\":["
     "{\"type\":\"Available\",\"status\":\"True\"}]}}", CTL_HEALTH_CURRENT},
    {"deployment with progress deadline waits for NewReplicaSetAvailable",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"progressDeadlineSeconds\":60},"
     "\"status\":{\"replicas\":1,\"updatedReplicas\":1,\"readyReplicas\":1,\"availableReplicas\":1,"
     "\"conditions\":[{\"type\":\"Available\",\"status\":\"True\"},{\"type\":\"Progressing\","
     "\"status\":\"True\",\"reason\":\"ReplicaSetUpdated\"}]}}", CTL_HEALTH_IN_PROGRESS},
    {"deployment too few ready",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"replicas\":3},\"status\":{"
     "\"replicas\":3,\"updatedReplicas\":3,\"readyReplicas\":2,\"availableReplicas\":3,"
     "\"conditions\":[{\"type\":\"Available\",\"status\":\"True\"}]}}", CTL_HEALTH_IN_PROGRESS},
    {"deployment extra pods pending termination",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"replicas\":1},\"status\":{"
     "\"replicas\":2,\"updatedReplicas\":1,\"readyReplicas\":1,\"availableReplicas\":1}}",
     CTL_HEALTH_IN_PROGRESS},
    {"deployment progress deadline exceeded",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"progressDeadlineSeconds\":1},"
     "\"status\":{\"conditions\":[{\"type\":\"Progressing\",\"status\":\"False\","
     "\"reason\":\"ProgressDeadlineExceeded\"}]}}", CTL_HEALTH_FAILED},
    {"deployment generation not observed",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"generation\":3},"
     "\"spec\":{\"replicas\":0},\"status\":{\"observedGeneration\":2}}", CTL_HEALTH_IN_PROGRESS},
    {"deployment being deleted",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"deletionTimestamp\":"
     "\"2024-01-01T00:00:00Z\"}}", CTL_HEALTH_TERMINATING},
    {"deployment replicas as float read as default",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"replicas\":2.0},\"status\":{"
     "\"replicas\":1,\"updatedReplicas\":1,\"readyReplicas\":1,\"availableReplicas\":1,"
     "\"conditions\":[{\"type\":\"Available\",\"status\":\"True\"}]}}", CTL_HEALTH_CURRENT},
    /* ---- StatefulSet ---- */
    {"statefulset on-delete strategy",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"spec\":{\"replicas\":3,"
     "\"updateStrategy\":{\"type\":\"OnDelete\"}}}", CTL_HEALTH_CURRENT},
    {"statefulset ready",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"spec\":{\"replicas\":2},\"status\":{"
     "\"replicas\":2,\"readyReplicas\":2,\"currentReplicas\":2,\"currentRevision\":\"r1\","
     "\"updateRevision\":\"r1\"}}", CTL_HEALTH_CURRENT},
    {"statefulset revision mismatch",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"spec\":{\"replicas\":2},\"status\":{"
     "\"replicas\":2,\"readyReplicas\":2,\"currentReplicas\":2,\"currentRevision\":\"r1\","
     "\"updateRevision\":\"r2\"}}", CTL_HEALTH_IN_PROGRESS},
    {"statefulset partition rollout complete",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"spec\":{\"replicas\":3,"
     "\"updateStrategy\":{\"rollingUpdate\":{\"partition\":2}}},\"status\":{\"replicas\":3,"
     "\"readyReplicas\":3,\"updatedReplicas\":1}}", CTL_HEALTH_CURRENT},
    {"statefulset partition rollout pending",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"spec\":{\"replicas\":3,"
     "\"updateStrategy\":{\"rollingUpdate\":{\"partition\":1}}},\"status\":{\"replicas\":3,"
     "\"readyReplicas\":3,\"updatedReplicas\":1}}", CTL_HEALTH_IN_PROGRESS},
    /* ---- DaemonSet ---- */
    {"daemonset without observed generation",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"generation\":1},"
     "\"status\":{\"desiredNumberScheduled\":0}}", CTL_HEALTH_IN_PROGRESS},
    {"daemonset ready",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"generation\":1},"
     "\"status\":{\"observedGeneration\":1,\"desiredNumberScheduled\":2,\"currentNumberScheduled\":2,"
     "\"updatedNumberScheduled\":2,\"numberAvailable\":2,\"numberReady\":2}}", CTL_HEALTH_CURRENT},
    {"daemonset not all available",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"generation\":1},"
     "\"status\":{\"observedGeneration\":1,\"desiredNumberScheduled\":2,\"currentNumberScheduled\":2,"
     "\"updatedNumberScheduled\":2,\"numberAvailable\":1,\"numberReady\":2}}", CTL_HEALTH_IN_PROGRESS},
    /* ---- ReplicaSet ---- */
    {"replicaset replica failure",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"status\":{\"conditions\":[{\"type\":"
     "\"ReplicaFailure\",\"status\":\"True\"}]}}", CTL_HEALTH_IN_PROGRESS},
    {"replicaset ready",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"spec\":{\"replicas\":1},\"status\":{"
     "\"replicas\":1,\"fullyLabeledReplicas\":1,\"availableReplicas\":1,\"readyReplicas\":1}}",
     CTL_HEALTH_CURRENT},
    /* ---- Job (framework override: ready only when finished) ---- */
    {"job not started",
     "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"status\":{}}", CTL_HEALTH_IN_PROGRESS},
    {"job running is not ready",
     "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"status\":{\"startTime\":"
     "\"2024-01-01T00:00:00Z\",\"active\":1}}", CTL_HEALTH_IN_PROGRESS},
    {"job complete",
     "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"status\":{\"startTime\":"
     "\"2024-01-01T00:00:00Z\",\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}",
     CTL_HEALTH_CURRENT},
    {"job failed",
     "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"status\":{\"conditions\":[{\"type\":"
     "\"Failed\",\"status\":\"True\"}]}}", CTL_HEALTH_FAILED},
    /* ---- Pod ---- */
    {"pod running and ready",
     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"status\":{\"phase\":\"Running\",\"conditions\":[{"
     "\"type\":\"Ready\",\"status\":\"True\"}]}}", CTL_HEALTH_CURRENT},
    {"pod crash looping",
     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"status\":{\"phase\":\"Running\",\"containerStatuses\":"
     "[{\"name\":\"c\",\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}}}]}}",
     CTL_HEALTH_FAILED},
    {"pod running not ready",
     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"status\":{\"phase\":\"Running\"}}",
     CTL_HEALTH_IN_PROGRESS},
    {"pod succeeded",
     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"status\":{\"phase\":\"Succeeded\"}}",
     CTL_HEALTH_CURRENT},
    {"pod failed is not ready (differs from the Go original)",
     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"status\":{\"phase\":\"Failed\"}}", CTL_HEALTH_FAILED},
    {"pod unschedulable within the 15 s window",
     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"creationTimestamp\":"
     "\"2023-11-14T22:13:10Z\"},\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":"
     "\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}", CTL_HEALTH_IN_PROGRESS},
    {"pod unschedulable after the window",
     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"creationTimestamp\":"
     "\"2023-11-14T22:13:04Z\"},\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":"
     "\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}", CTL_HEALTH_FAILED},
    {"pod pending", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"status\":{\"phase\":\"Pending\"}}",
     CTL_HEALTH_IN_PROGRESS},
    {"pod without phase", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}", CTL_HEALTH_IN_PROGRESS},
    /* ---- other built-ins ---- */
    {"pvc bound", "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"status\":{\"phase\":"
     "\"Bound\"}}", CTL_HEALTH_CURRENT},
    {"pvc pending", "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"status\":{"
     "\"phase\":\"Pending\"}}", CTL_HEALTH_IN_PROGRESS},
    {"load balancer without cluster ip", "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"spec\":{"
     "\"type\":\"LoadBalancer\"}}", CTL_HEALTH_IN_PROGRESS},
    {"load balancer with cluster ip (ingress not awaited)", "{\"apiVersion\":\"v1\",\"kind\":"
     "\"Service\",\"spec\":{\"type\":\"LoadBalancer\",\"clusterIP\":\"10.0.0.1\"}}",
     CTL_HEALTH_CURRENT},
    {"configmap", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}", CTL_HEALTH_CURRENT},
    {"secret", "{\"apiVersion\":\"v1\",\"kind\":\"Secret\"}", CTL_HEALTH_CURRENT},
    {"pdb", "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\"}", CTL_HEALTH_CURRENT},
    {"cronjob", "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\"}", CTL_HEALTH_CURRENT},
    /* ---- CRD and APIService with their extra conditions ---- */
    {"crd established and names accepted",
     "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\",\"status\":"
     "{\"conditions\":[{\"type\":\"NamesAccepted\",\"status\":\"True\"},{\"type\":\"Established\","
     "\"status\":\"True\"}]}}", CTL_HEALTH_CURRENT},
    {"crd established without names accepted",
     "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\",\"status\":"
     "{\"conditions\":[{\"type\":\"Established\",\"status\":\"True\"}]}}", CTL_HEALTH_IN_PROGRESS},
    {"crd names not accepted",
     "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\",\"status\":"
     "{\"conditions\":[{\"type\":\"NamesAccepted\",\"status\":\"False\"}]}}", CTL_HEALTH_FAILED},
    {"crd installing",
     "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\",\"status\":"
     "{\"conditions\":[{\"type\":\"Established\",\"status\":\"False\",\"reason\":\"Installing\"}]}}",
     CTL_HEALTH_IN_PROGRESS},
    {"apiservice not available",
     "{\"apiVersion\":\"apiregistration.k8s.io/v1\",\"kind\":\"APIService\",\"status\":{}}",
     CTL_HEALTH_IN_PROGRESS},
    {"apiservice available",
     "{\"apiVersion\":\"apiregistration.k8s.io/v1\",\"kind\":\"APIService\",\"status\":{"
     "\"conditions\":[{\"type\":\"Available\",\"status\":\"True\"}]}}", CTL_HEALTH_CURRENT},
    /* ---- custom resources: generic conditions ---- */
    {"custom resource without conditions", "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\"}",
     CTL_HEALTH_CURRENT},
    {"custom resource ready false",
     "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\",\"status\":{\"conditions\":[{\"type\":\"Ready\","
     "\"status\":\"False\"}]}}", CTL_HEALTH_IN_PROGRESS},
    {"custom resource ready true",
     "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\",\"status\":{\"conditions\":[{\"type\":\"Ready\","
     "\"status\":\"True\"}]}}", CTL_HEALTH_CURRENT},
    {"custom resource reconciling",
     "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\",\"status\":{\"conditions\":[{\"type\":"
     "\"Reconciling\",\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"True\"}]}}",
     CTL_HEALTH_IN_PROGRESS},
    {"custom resource stalled",
     "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\",\"status\":{\"conditions\":[{\"type\":"
     "\"Stalled\",\"status\":\"True\"}]}}", CTL_HEALTH_FAILED},
    /* ---- status hints ---- */
    {"hint has-ready-condition waits for the condition",
     "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\",\"metadata\":{\"annotations\":{\"" HINT "\":"
     "\"has-ready-condition\"}}}", CTL_HEALTH_IN_PROGRESS},
    {"hint has-observed-generation (camel case) waits for the controller",
     "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\",\"metadata\":{\"generation\":1,\"annotations\":{"
     "\"" HINT "\":\"hasObservedGeneration\"}}}", CTL_HEALTH_IN_PROGRESS},
    {"hint has-observed-generation takes the Ready condition's generation",
     "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\",\"metadata\":{\"generation\":4,\"annotations\":{"
     "\"" HINT "\":\"has-observed-generation\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
     "\"status\":\"True\",\"observedGeneration\":4}]}}", CTL_HEALTH_CURRENT},
    {"hint conditions require every listed condition to be True",
     "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\",\"metadata\":{\"annotations\":{\"" HINT "\":"
     "\"conditions=Synced;Healthy\"}},\"status\":{\"conditions\":[{\"type\":\"Synced\","
     "\"status\":\"True\"}]}}", CTL_HEALTH_IN_PROGRESS},
    {"hint conditions satisfied",
     "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\",\"metadata\":{\"annotations\":{\"" HINT "\":"
     "\"has_ready_condition,conditions=Synced\"}},\"status\":{\"conditions\":[{\"type\":\"Synced\","
     "\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"True\"}]}}", CTL_HEALTH_CURRENT},
};
/* clang-format on */

static struct json_object *parse(const char *text)
{
    struct json_object *obj = NULL;
    assert_co_pass(co_json_parse(&obj, text, strlen(text)));
    return obj;
}

static void test_ctl_health__table(void **state)
{
    (void)state;
    for (size_t i = 0; i < CO_ARRAY_SIZE(rows); i++) {
        struct json_object *obj = parse(rows[i].json);
        ctl_health got = CTL_HEALTH_UNKNOWN;
        const char *msg = NULL;
        int rc = ctl_health_compute(&got, &msg, obj, HINT, NOW);
        if (rc != 0) {
            fail_msg("%s: unexpected error %s", rows[i].name, co_error_last());
        }
        if (got != rows[i].want) {
            fail_msg("%s: got %s (%s), want %s", rows[i].name, ctl_health_name(got), msg ? msg : "",
                     ctl_health_name(rows[i].want));
        }
        assert_non_null(msg);
        json_object_put(obj);
    }
}

static void expect_error(const char *json, const char *fragment)
{
    struct json_object *obj = parse(json);
    ctl_health got = CTL_HEALTH_CURRENT;
    assert_co_fail_with(CO_EINVALID, ctl_health_compute(&got, NULL, obj, HINT, NOW));
    assert_contains(co_error_last(), fragment);
    assert_int_equal(got, CTL_HEALTH_CURRENT); /* not written on failure */
    json_object_put(obj);
}

static void test_ctl_health__bad_hints_are_errors(void **state)
{
    (void)state;
    expect_error("{\"kind\":\"T\",\"metadata\":{\"annotations\":{\"" HINT "\":\"soon\"}}}",
                 "unknown status hint soon");
    expect_error("{\"kind\":\"T\",\"metadata\":{\"annotations\":{\"" HINT
                 "\":\"has-ready-condition=yes\"}}}",
                 "does not take a value");
    expect_error("{\"kind\":\"T\",\"metadata\":{\"annotations\":{\"" HINT "\":\"conditions\"}}}",
                 "requires a value");
    expect_error("{\"kind\":\"T\",\"metadata\":{\"annotations\":{\"" HINT "\":\"\"}}}",
                 "unknown status hint");
}

static void test_ctl_health__malformed_status_is_an_error(void **state)
{
    (void)state;
    expect_error("{\"kind\":\"T\",\"status\":{\"conditions\":{}}}",
                 "status.conditions: expected array");
    expect_error("{\"kind\":\"T\",\"status\":{\"conditions\":[{\"type\":1}]}}",
                 "status.conditions[0].type: expected string");
    expect_error("{\"kind\":\"T\",\"status\":[]}", "status: expected object");
    expect_error("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"status\":{\"phase\":\"Lost\"}}",
                 "unknown pod phase Lost");
}

static void test_ctl_health__kebab_case_like_strcase(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"IfUnowned", "if-unowned"},
        {"ifUnowned", "if-unowned"},
        {"if-unowned", "if-unowned"},
        {"SSAMerge", "ssa-merge"},
        {"SsaOverride", "ssa-override"},
        {"OrphanOnApply", "orphan-on-apply"},
        {"hasObservedGeneration", "has-observed-generation"},
        {"has_ready_condition", "has-ready-condition"},
        {"  Once ", "once"},
        {"v1Alpha1", "v-1-alpha-1"},
        {"on.object change", "on-object-change"},
        {"", ""},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        char *got = ctl_to_kebab(cases[i][0]);
        if (strcmp(got, cases[i][1]) != 0) {
            fail_msg("kebab(\"%s\") = \"%s\", want \"%s\"", cases[i][0], got, cases[i][1]);
        }
        free(got);
    }
}

static void test_ctl_health__names(void **state)
{
    (void)state;
    assert_string_equal(ctl_health_name(CTL_HEALTH_IN_PROGRESS), "InProgress");
    assert_string_equal(ctl_health_name(CTL_HEALTH_TERMINATING), "Terminating");
    assert_string_equal(ctl_health_name((ctl_health)99), "Unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_health__table),
        cmocka_unit_test(test_ctl_health__bad_hints_are_errors),
        cmocka_unit_test(test_ctl_health__malformed_status_is_an_error),
        cmocka_unit_test(test_ctl_health__kebab_case_like_strcase),
        cmocka_unit_test(test_ctl_health__names),
    };
    return cmocka_run_group_tests_name("ctl_health", tests, NULL, NULL);
}
