/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a Component can reach, against the real kube-apiserver (docs/security.md): template
 * lookups act with the Component's identity, and without one stay in its namespace unless a
 * ComponentPolicy grants more; a Component deploys no Components or ComponentPolicies without a
 * grant; objects another Component lists in its inventory are not adopted; and a Component the
 * webhook would refuse (here the webhook is not installed, as when it is bypassed) is refused
 * by the controller before anything it names is used. The manager runs in-process with the
 * test source and the real apply engine, with the test's cluster-admin credentials, so every
 * refusal here is the controller's own doing and not the API server's.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "co/util/duration.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/json/yaml.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_manager.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_support.h"

#define WAIT_MS 120000L
#define SRC     "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://x.invalid/a.tgz\"}}"
/* "c2VjcmV0LXZhbHVl" is base64 of the Secret's value */
#define SECRET_VALUE "secret-value"

static co_kube_client *admin;
static char *ns;
static char *other;
static char *label;
static char *srcdir;
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;
static ctl_manager *mgr;

static void put(const char *rel, const char *fmt, ...) CO_PRINTF(2, 3);
static void put(const char *rel, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = co_xvasprintf(fmt, ap);
    va_end(ap);
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", srcdir, rel);
    co_test_write_file(path, text, strlen(text));
    free(text);
}

static void create(struct json_object *obj)
{
    int rc = 0;
    /* a CRD just created may take a moment to accept objects */
    for (int i = 0; i < 100; i++) {
        if ((rc = co_kube_create(NULL, admin, obj, NULL)) != CO_ENOMATCH && rc != CO_ENOTFOUND) {
            break;
        }
        co_kube_client_invalidate_discovery(admin);
        usleep(200 * 1000);
    }
    assert_co_pass(rc);
    json_object_put(obj);
}

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

/* A ComponentPolicy selecting only this test's namespace, with @p spec_fields added. */
static char *create_policy(const char *spec_fields)
{
    char *name = co_test_random_name("idn-", 8);
    create(co_test_json("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                        "\"ComponentPolicy\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
                        "\"namespaceSelector\":{\"matchLabels\":{\"co-identity-test\":\"%s\"}},"
                        "%s}}",
                        name, label, spec_fields));
    return name;
}

static void delete_policy(char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "ComponentPolicy", NULL, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    free(name);
}

static void delete_component(const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    ctl_test_wait_gone(admin, ns, name, WAIT_MS);
}

static void touch(const char *name, const char *value)
{
    struct json_object *patch =
        co_test_json("{\"metadata\":{\"annotations\":{\"test.co/touch\":\"%s\"}}}", value);
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
}

static char *condition_message(const char *name)
{
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    struct json_object *m =
        conds ? co_json_get(json_object_array_get_idx(conds, 0), "message", NULL) : NULL;
    char *s = co_xstrdup(m ? json_object_get_string(m) : "");
    json_object_put(c);
    return s;
}

static struct json_object *get_object(const char *api, const char *kind, const char *name)
{
    co_kube_ref ref = {api, kind, ns, name};
    struct json_object *o = NULL;
    int rc = co_kube_get(&o, admin, &ref, NULL);
    if (rc == CO_ENOTFOUND) {
        return NULL;
    }
    assert_co_pass(rc);
    return o;
}

static const char *cm_value(struct json_object *cm, const char *key)
{
    struct json_object *v = co_json_get(cm, "data", key, NULL);
    return v ? json_object_get_string(v) : "";
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    install_policy_crd();
    ns = co_test_kube_namespace(admin, "idn-");
    other = co_test_kube_namespace(admin, "idn-other-");
    label = co_test_random_name("l", 8);
    struct json_object *lab =
        co_test_json("{\"metadata\":{\"labels\":{\"co-identity-test\":\"%s\"}}}", label);
    co_kube_ref nref = {"v1", "Namespace", NULL, ns};
    assert_co_pass(co_kube_patch(NULL, admin, &nref, CO_KUBE_PATCH_MERGE, lab, NULL));
    json_object_put(lab);
    create(co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"namespace\":"
                        "\"%s\",\"name\":\"creds\"},\"stringData\":{\"password\":\"" SECRET_VALUE
                        "\"}}",
                        other));
    create(co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                        "{\"namespace\":\"%s\",\"name\":\"settings\"},\"data\":{\"x\":\"theirs\"}}",
                        other));
    create(co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                        "{\"namespace\":\"%s\",\"name\":\"settings\"},\"data\":{\"x\":\"ours\"}}",
                        ns));
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    src_ops = ctl_test_source_ops();
    app_ops = ctl_apply_engine_ops();
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.metrics_addr = "127.0.0.1:0";
    o.workers = 3;
    o.namespaces = (const char *const *)&ns;
    o.nnamespaces = 1;
    o.source = &src_ops;
    o.apply = &app_ops;
    o.policy_probe_ns = CO_SECOND;
    assert_co_pass(ctl_manager_new(&mgr, &o));
    assert_co_pass(ctl_manager_start(mgr));
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_manager_free(mgr);
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    free(label);
    free(other);
    free(ns);
    curl_global_cleanup();
    return 0;
}

#define CM_HEADER "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n"

/* The Go original's lookups ran with the controller's rights wherever they pointed; here a
 * Component without a service account reads its own namespace only, and a policy can widen. */
static void test_ctl_identity__lookups_without_service_account_stay_in_the_namespace(void **state)
{
    (void)state;
    put("own/cm.yaml",
        CM_HEADER "  x: '{{ (lookup \"v1\" \"ConfigMap\" namespace \"settings\").data.x }}'\n",
        "own-cm");
    ctl_test_create_component(admin, ns, "own", "{" SRC ",\"path\":\"own\"}");
    ctl_test_wait_state(admin, ns, "own", "Ready", "Ready", WAIT_MS);
    struct json_object *cm = get_object("v1", "ConfigMap", "own-cm");
    assert_non_null(cm);
    assert_string_equal(cm_value(cm, "x"), "ours");
    json_object_put(cm);

    /* the published attack: another namespace's Secret into the status message */
    put("steal/cm.yaml", "{{ fail (toJson (localLookup \"v1\" \"Secret\" \"%s\" \"creds\")) }}\n",
        other);
    ctl_test_create_component(admin, ns, "steal", "{" SRC ",\"path\":\"steal\"}");
    ctl_test_wait_state(admin, ns, "steal", "Error", "Error", WAIT_MS);
    char *msg = condition_message("steal");
    assert_contains(msg, "may only look up objects in its own namespace");
    assert_contains(msg, "grants.lookupsOutsideNamespace");
    assert_null(strstr(msg, "c2VjcmV0LXZhbHVl"));
    assert_null(strstr(msg, SECRET_VALUE));
    free(msg);

    /* lookup (the target is this cluster, as the controller) and cluster-scoped kinds too */
    put("wide/cm.yaml", "{{ $n := lookup \"v1\" \"Namespace\" \"\" \"kube-system\" }}\n");
    ctl_test_create_component(admin, ns, "wide", "{" SRC ",\"path\":\"wide\"}");
    ctl_test_wait_state(admin, ns, "wide", "Error", "Error", WAIT_MS);
    msg = condition_message("wide");
    assert_contains(msg, "Namespace cluster-wide");
    free(msg);

    /* an admin's grant lets the Component read elsewhere with the controller's rights */
    put("granted/cm.yaml",
        CM_HEADER "  x: '{{ (lookup \"v1\" \"ConfigMap\" \"%s\" \"settings\").data.x }}'\n",
        "granted-cm", other);
    ctl_test_create_component(admin, ns, "granted", "{" SRC ",\"path\":\"granted\"}");
    ctl_test_wait_state(admin, ns, "granted", "Error", "Error", WAIT_MS);
    char *pol = create_policy("\"grants\":{\"lookupsOutsideNamespace\":true}");
    touch("granted", "1");
    ctl_test_wait_state(admin, ns, "granted", "Ready", "Ready", WAIT_MS);
    cm = get_object("v1", "ConfigMap", "granted-cm");
    assert_non_null(cm);
    assert_string_equal(cm_value(cm, "x"), "theirs");
    json_object_put(cm);
    delete_policy(pol);

    delete_component("granted");
    delete_component("wide");
    delete_component("steal");
    delete_component("own");
}

/* With a service account, every lookup is that account's: RBAC decides, and what it refuses
 * is named in the status. */
static void test_ctl_identity__lookups_run_as_the_service_account(void **state)
{
    (void)state;
    /* the built-in edit role is aggregated by kube-controller-manager, which does not run here */
    create(co_test_json("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\","
                        "\"metadata\":{\"namespace\":\"%s\",\"name\":\"tenant\"},\"rules\":[{"
                        "\"apiGroups\":[\"\"],\"resources\":[\"configmaps\",\"secrets\"],"
                        "\"verbs\":[\"*\"]},{\"apiGroups\":[\"\"],\"resources\":[\"namespaces\"],"
                        "\"verbs\":[\"get\"]}]}",
                        ns));
    create(co_test_json("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":"
                        "\"RoleBinding\",\"metadata\":{\"namespace\":\"%s\",\"name\":\"tenant\"},"
                        "\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":"
                        "\"Role\",\"name\":\"tenant\"},\"subjects\":[{\"kind\":"
                        "\"ServiceAccount\",\"name\":\"tenant\",\"namespace\":\"%s\"}]}",
                        ns, ns));
    put("sa-own/cm.yaml",
        CM_HEADER "  x: '{{ (localLookup \"v1\" \"ConfigMap\" namespace \"settings\").data.x }}'\n",
        "sa-own-cm");
    ctl_test_create_component(admin, ns, "sa-own",
                              "{" SRC ",\"path\":\"sa-own\",\"serviceAccountName\":\"tenant\"}");
    ctl_test_wait_state(admin, ns, "sa-own", "Ready", "Ready", WAIT_MS);
    struct json_object *cm = get_object("v1", "ConfigMap", "sa-own-cm");
    assert_non_null(cm);
    assert_string_equal(cm_value(cm, "x"), "ours");
    json_object_put(cm);

    put("sa-steal/cm.yaml",
        "{{ fail (toJson (localLookup \"v1\" \"Secret\" \"%s\" \"creds\")) }}\n", other);
    ctl_test_create_component(admin, ns, "sa-steal",
                              "{" SRC ",\"path\":\"sa-steal\",\"serviceAccountName\":\"tenant\"}");
    ctl_test_wait_state(admin, ns, "sa-steal", "Error", "Error", WAIT_MS);
    char *msg = condition_message("sa-steal");
    char *user = co_xasprintf("system:serviceaccount:%s:tenant", ns);
    assert_contains(msg, "forbidden");
    assert_contains(msg, user);
    assert_null(strstr(msg, "c2VjcmV0LXZhbHVl"));
    free(user);
    free(msg);
    delete_component("sa-steal");
    delete_component("sa-own");
}

/* A source that brings a Component (here one rewriting a Component of this namespace) is
 * refused until a policy grants nested Components. */
static void test_ctl_identity__nested_components_need_a_grant(void **state)
{
    (void)state;
    put("child/cm.yaml", CM_HEADER "  k: v\n", "child-cm");
    put("parent/child.yaml",
        "apiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n  name: child\n"
        "spec:\n  sourceRef:\n    httpRepository:\n      url: http://x.invalid/a.tgz\n"
        "  path: child\n");
    ctl_test_create_component(admin, ns, "parent", "{" SRC ",\"path\":\"parent\"}");
    ctl_test_wait_state(admin, ns, "parent", "Error", "Error", WAIT_MS);
    char *msg = condition_message("parent");
    assert_contains(msg, "core.cs.sap.com/v1alpha1 Component");
    assert_contains(msg, "grants.nestedComponents");
    free(msg);
    struct json_object *child = get_object("core.cs.sap.com/v1alpha1", "Component", "child");
    assert_null(child);

    char *pol = create_policy("\"grants\":{\"nestedComponents\":true}");
    touch("parent", "1");
    ctl_test_wait_state(admin, ns, "parent", "Ready", "Ready", WAIT_MS);
    ctl_test_wait_state(admin, ns, "child", "Ready", "Ready", WAIT_MS);
    delete_component("parent");
    ctl_test_wait_gone(admin, ns, "child", WAIT_MS);
    delete_policy(pol);
}

/* An object another Component lists in its inventory is not adopted by default, even when its
 * owner label is gone (a Component lists new objects before it creates them). */
static void test_ctl_identity__objects_in_another_inventory_are_not_adopted(void **state)
{
    (void)state;
    put("first/cm.yaml", CM_HEADER "  who: first\n", "shared-cm");
    put("second/cm.yaml", CM_HEADER "  who: second\n", "shared-cm");
    ctl_test_create_component(admin, ns, "first", "{" SRC ",\"path\":\"first\"}");
    ctl_test_wait_state(admin, ns, "first", "Ready", "Ready", WAIT_MS);
    struct json_object *unlabel = co_test_json(
        "{\"metadata\":{\"labels\":{\"component-operator.cs.sap.com/owner-id\":null}}}");
    co_kube_ref ref = {"v1", "ConfigMap", ns, "shared-cm"};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, unlabel, NULL));
    json_object_put(unlabel);

    ctl_test_create_component(admin, ns, "second", "{" SRC ",\"path\":\"second\"}");
    ctl_test_wait_state(admin, ns, "second", "Error", "Error", WAIT_MS);
    char *msg = condition_message("second");
    char *want = co_xasprintf("is in the inventory of component %s/first", ns);
    assert_contains(msg, "owner conflict");
    assert_contains(msg, want);
    free(want);
    free(msg);
    struct json_object *cm = get_object("v1", "ConfigMap", "shared-cm");
    assert_non_null(cm);
    assert_string_equal(cm_value(cm, "who"), "first");
    json_object_put(cm);
    delete_component("second");
    delete_component("first");
}

/* A kubeconfig naming a plain http:// server is refused unless a ComponentPolicy grants
 * insecureKubeConfigServers; with the grant the controller talks to it. */
static void test_ctl_identity__http_kubeconfig_servers_need_a_grant(void **state)
{
    (void)state;
    test_httpd *listener = test_httpd_start();
    char *kc = co_xasprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                            "    server: %s\nusers:\n- name: u\n  user:\n    token: t\n"
                            "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                            "current-context: x\n",
                            test_httpd_url(listener));
    struct json_object *secret =
        co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
                     "{\"namespace\":\"%s\",\"name\":\"plain-http\"},\"stringData\":{}}",
                     ns);
    json_object_object_add(co_json_get(secret, "stringData", NULL), "value",
                           json_object_new_string(kc));
    create(secret);
    put("remote/cm.yaml", CM_HEADER "  k: v\n", "remote-cm");
    ctl_test_create_component(admin, ns, "plain",
                              "{" SRC ",\"path\":\"remote\","
                              "\"kubeConfig\":{\"secretRef\":{\"name\":\"plain-http\"}}}");
    ctl_test_wait_state(admin, ns, "plain", "Error", "Error", WAIT_MS);
    char *msg = condition_message("plain");
    assert_contains(msg, "clusters[0].cluster.server");
    free(msg);
    assert_int_equal(test_httpd_connections(listener), 0);

    char *pol = create_policy("\"grants\":{\"insecureKubeConfigServers\":true}");
    touch("plain", "1");
    /* the listener is no API server: the Component fails, but only after asking it */
    for (int i = 0; i < 600 && test_httpd_connections(listener) == 0; i++) {
        usleep(100 * 1000);
    }
    assert_true(test_httpd_connections(listener) > 0);
    delete_policy(pol);
    /* the deletion reaches the same server: strip the finalizer to end the test */
    struct json_object *patch = co_test_json("{\"metadata\":{\"finalizers\":null}}");
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, "plain"};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
    delete_component("plain");
    test_httpd_stop(listener);
    free(kc);
}

/* The webhook is not installed here, as when it is bypassed: what it would refuse the
 * controller refuses, before any client is built or any source is read. */
static void test_ctl_identity__controller_refuses_what_the_webhook_refuses(void **state)
{
    (void)state;
    put("plain/cm.yaml", CM_HEADER "  k: v\n", "plain-cm");
    /* an impersonation header would carry this name */
    ctl_test_create_component(admin, ns, "badsa",
                              "{" SRC ",\"path\":\"plain\",\"serviceAccountName\":\"a:b\"}");
    ctl_test_wait_state(admin, ns, "badsa", "Error", "InvalidSpec", WAIT_MS);
    char *msg = condition_message("badsa");
    assert_contains(msg, "spec.serviceAccountName");
    free(msg);
    /* a git URL on the controller's own disk */
    ctl_test_create_component(admin, ns, "filegit",
                              "{\"sourceRef\":{\"git\":{\"url\":\"file:///var/cache/x\","
                              "\"ref\":{\"branch\":\"main\"}}},\"path\":\"plain\"}");
    ctl_test_wait_state(admin, ns, "filegit", "Error", "InvalidSpec", WAIT_MS);
    msg = condition_message("filegit");
    assert_contains(msg, "spec.sourceRef.git.url");
    free(msg);
    assert_null(get_object("v1", "ConfigMap", "plain-cm"));
    delete_component("filegit");
    delete_component("badsa");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_identity__lookups_without_service_account_stay_in_the_namespace),
        cmocka_unit_test(test_ctl_identity__lookups_run_as_the_service_account),
        cmocka_unit_test(test_ctl_identity__nested_components_need_a_grant),
        cmocka_unit_test(test_ctl_identity__objects_in_another_inventory_are_not_adopted),
        cmocka_unit_test(test_ctl_identity__http_kubeconfig_servers_need_a_grant),
        cmocka_unit_test(test_ctl_identity__controller_refuses_what_the_webhook_refuses),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
