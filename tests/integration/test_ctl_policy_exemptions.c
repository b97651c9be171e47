/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ComponentPolicy user and group exemptions at reconcile time, against the real kube-apiserver
 * with the manager in-process (docs/security.md, "ComponentPolicy exemptions"). Components are
 * written straight to the API server, as when the webhook is bypassed; the exemption record the
 * mutating webhook would set is written by hand where a test needs one. A policy that exempts a
 * group is enforced on every Component whose record does not name an exempt group: without a
 * record, with a record of a group the policy does not (or no longer) exempt, with a malformed
 * record; a Component whose record names an exempt group is applied.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "co/util/duration.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/api/policy.h"
#include "co/json/yaml.h"
#include "controller/ctl_manager.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define WAIT_MS 90000L
#define SRC     "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"

static co_kube_client *admin;
static char *ns;
static char *policy;
static ctl_manager *mgr;
static char *srcdir;
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;

/* Creates the ComponentPolicy CRD (it may exist already). */
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

/* Writes the policy @p name with @p spec (JSON text), retrying while its CRD is not served. */
static void put_policy(const char *name, const char *spec)
{
    struct json_object *pol =
        co_test_json("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","
                     "\"metadata\":{\"name\":\"%s\"},\"spec\":%s}",
                     name, spec);
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

/* A Component of the source directory "simple" with @p record as its exemption record (JSON
 * text of the annotation's value, NULL for none). */
static void create_component(const char *name, const char *record, const char *extra)
{
    struct json_object *obj = co_test_json(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":"
        "{\"namespace\":\"%s\",\"name\":\"%s\"},\"spec\":{" SRC ",\"path\":\"simple\"%s}}",
        ns, name, extra ? extra : "");
    if (record) {
        struct json_object *ann = json_object_new_object();
        json_object_object_add(ann, CO_POLICY_REQUESTER_ANNOTATION, json_object_new_string(record));
        assert_co_pass(co_json_set(obj, ann, "metadata", "annotations", NULL));
    }
    assert_co_pass(co_kube_create(NULL, admin, obj, NULL));
    json_object_put(obj);
}

static void delete_component(const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    ctl_test_wait_gone(admin, ns, name, WAIT_MS);
}

static int configmap_exists(void)
{
    co_kube_ref ref = {"v1", "ConfigMap", ns, "simple-cm"};
    struct json_object *obj = NULL;
    int rc = co_kube_get(&obj, admin, &ref, NULL);
    json_object_put(obj);
    return rc == 0;
}

/* The status message of a Component (copied; free() it). */
static char *status_message(const char *name)
{
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    struct json_object *msg =
        conds && json_object_array_length(conds) > 0
            ? co_json_get(json_object_array_get_idx(conds, 0), "message", NULL)
            : NULL;
    char *out = co_xstrdup(msg ? json_object_get_string(msg) : "");
    json_object_put(c);
    return out;
}

#define EXEMPTING_SPEC                                                                             \
    "{\"namespaceSelector\":{\"matchLabels\":{\"co-exemption-test\":\"%s\"}},"                     \
    "\"exemptUsers\":[\"system:serviceaccount:ci:*\"],\"exemptGroups\":[%s],"                      \
    "\"rules\":{\"sourceKinds\":{\"allowed\":[\"git\"]}}}"

static void put_exempting_policy(const char *groups)
{
    char *spec = co_xasprintf(EXEMPTING_SPEC, policy, groups);
    put_policy(policy, spec);
    free(spec);
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    install_policy_crd();
    ns = co_test_kube_namespace(admin, "ctl-exempt-");
    policy = co_test_random_name("exempt", 8);
    struct json_object *lab =
        co_test_json("{\"metadata\":{\"labels\":{\"co-exemption-test\":\"%s\"}}}", policy);
    co_kube_ref nref = {"v1", "Namespace", NULL, ns};
    assert_co_pass(co_kube_patch(NULL, admin, &nref, CO_KUBE_PATCH_MERGE, lab, NULL));
    json_object_put(lab);
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    char path[4096];
    snprintf(path, sizeof(path), "%s/simple/cm.yaml", srcdir);
    static const char cm[] = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                             "{\"name\":\"simple-cm\"},\"data\":{\"k\":\"v\"}}\n";
    co_test_write_file(path, cm, strlen(cm));
    src_ops = ctl_test_source_ops();
    app_ops = ctl_test_apply_ops();

    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.policy_probe_ns = CO_SECOND;
    o.metrics_addr = "127.0.0.1:0";
    o.probe_addr = "127.0.0.1:0";
    o.workers = 2;
    const char *nss = ns;
    o.namespaces = &nss;
    o.nnamespaces = 1;
    o.source = &src_ops;
    o.apply = &app_ops;
    assert_co_pass(ctl_manager_new(&mgr, &o));
    assert_co_pass(ctl_manager_start(mgr));

    put_exempting_policy("\"platform-admins\"");
    /* A probe that can never apply anything (its dependency does not exist) reaches
     * PolicyViolation once the manager has seen the policy; only then are Components created
     * that would apply objects. */
    create_component("probe", NULL, ",\"dependencies\":[{\"name\":\"absent\"}]");
    ctl_test_wait_state(admin, ns, "probe", "Error", "PolicyViolation", WAIT_MS);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    delete_component("probe");
    co_kube_ref pref = {"core.cs.sap.com/v1alpha1", "ComponentPolicy", NULL, policy};
    (void)!co_kube_delete(NULL, admin, &pref, NULL);
    ctl_manager_free(mgr);
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    free(policy);
    free(ns);
    curl_global_cleanup();
    return 0;
}

/* No record: nobody wrote the spec through an exemption, so the rule holds. */
static void test_ctl_policy_exemptions__rule_of_an_exempting_policy_is_enforced(void **state)
{
    (void)state;
    create_component("tenant", NULL, NULL);
    ctl_test_wait_state(admin, ns, "tenant", "Error", "PolicyViolation", WAIT_MS);
    char *msg = status_message("tenant");
    assert_contains(msg, policy);
    assert_contains(msg, "sourceKinds");
    free(msg);
    assert_false(configmap_exists());
    delete_component("tenant");
}

/* Records that name nobody the policy exempts now, and records that cannot be read, exempt
 * nobody. */
static void test_ctl_policy_exemptions__records_of_unexempt_or_malformed_requesters(void **state)
{
    (void)state;
    static const char *const records[] = {
        "{\"groups\":[\"developers\"],\"user\":\"alice\"}",
        "{\"user\":\"system:serviceaccount:other:deployer\"}",
        "{\"groups\":\"platform-admins\"}",
        "platform-admins",
        "{}",
    };
    char name[32];
    for (size_t i = 0; i < CO_ARRAY_SIZE(records); i++) {
        snprintf(name, sizeof(name), "unexempt-%zu", i);
        create_component(name, records[i], NULL);
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(records); i++) {
        snprintf(name, sizeof(name), "unexempt-%zu", i);
        ctl_test_wait_state(admin, ns, name, "Error", "PolicyViolation", WAIT_MS);
    }
    assert_false(configmap_exists());
    for (size_t i = 0; i < CO_ARRAY_SIZE(records); i++) {
        snprintf(name, sizeof(name), "unexempt-%zu", i);
        delete_component(name);
    }
}

/*
 * A record naming an exempt group: the policy does not apply, the Component is applied. Once
 * the policy stops exempting that group, the next reconcile (which the policy change itself
 * triggers) enforces it.
 */
static void
test_ctl_policy_exemptions__recorded_exemption_holds_while_the_policy_grants_it(void **state)
{
    (void)state;
    create_component("platform", "{\"groups\":[\"platform-admins\"]}", NULL);
    ctl_test_wait_state(admin, ns, "platform", "Ready", "Ready", WAIT_MS);
    assert_true(configmap_exists());
    put_exempting_policy("\"former-admins\"");
    ctl_test_wait_state(admin, ns, "platform", "Error", "PolicyViolation", WAIT_MS);
    put_exempting_policy("\"platform-admins\"");
    ctl_test_wait_state(admin, ns, "platform", "Ready", "Ready", WAIT_MS);
    delete_component("platform");
    assert_false(configmap_exists());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_policy_exemptions__rule_of_an_exempting_policy_is_enforced),
        cmocka_unit_test(test_ctl_policy_exemptions__records_of_unexempt_or_malformed_requesters),
        cmocka_unit_test(
            test_ctl_policy_exemptions__recorded_exemption_holds_while_the_policy_grants_it),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
