/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deployment targets of the controller against real kube-apiservers (docs/behaviour.md, "Targets
 * and impersonation"): a kubeconfig Secret (keys value, value.yaml, value.yml) pointing at a
 * second, private control plane, where the objects and the events about them land; impersonation
 * through spec.serviceAccountName and the default service account, on the local cluster and —
 * unlike the Go original — on a kubeconfig target too, with a clear Forbidden error without rights;
 * target clients expiring when unused (a short TTL is injected; the cache is observed through the
 * created/active client metrics). The manager runs in-process with the test source and the real
 * apply engine.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "co/util/buf.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_state.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_support.h"

#define WAIT_MS 120000L

static co_kube_client *admin;
static co_kube_client *remote;
static co_test_controlplane cp;
static char *remote_kubeconfig;
static char *ns;
static char *srcdir;
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;
static ctl_manager *mgr;

#define CM(name)                                                                                   \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name                 \
    "\"},\"data\":{\"k\":\"v\"}}\n"

static void put(const char *rel, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", srcdir, rel);
    co_test_write_file(path, text, strlen(text));
}

static void create_namespace(co_kube_client *c, const char *name)
{
    struct json_object *o = co_test_json(
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", name);
    int rc = co_kube_create(NULL, c, o, NULL);
    assert_true(rc == 0 || rc == CO_EEXISTS);
    json_object_put(o);
}

static ctl_manager *start_manager(const char *nspace, const char *default_sa, int64_t ttl_ns)
{
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.metrics_addr = "127.0.0.1:0";
    o.workers = 3;
    o.namespaces = &nspace;
    o.nnamespaces = 1;
    o.source = &src_ops;
    o.apply = &app_ops;
    o.default_service_account = default_sa;
    o.target_ttl_ns = ttl_ns;
    o.dependent_events = true; /* where events on dependents go is part of what is tested */
    ctl_manager *m = NULL;
    assert_co_pass(ctl_manager_new(&m, &o));
    assert_co_pass(ctl_manager_start(m));
    return m;
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    ns = co_test_kube_namespace(admin, "ctl-tgt-");
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    put("value/cm.yaml", CM("kc-value"));
    put("valueyaml/cm.yaml", CM("kc-value-yaml"));
    put("valueyml/cm.yaml", CM("kc-value-yml"));
    put("imp/cm.yaml", CM("kc-imp"));
    put("dsa/cm.yaml", CM("dsa-cm"));
    put("nobody/cm.yaml", CM("nobody-cm"));

    /* the remote cluster: a private control plane with its own etcd */
    co_test_controlplane_start(&cp);
    remote = co_test_kube_client_for(cp.kubeconfig);
    size_t len = 0;
    remote_kubeconfig = co_test_read_file(cp.kubeconfig, &len);
    assert_non_null(remote_kubeconfig);
    create_namespace(remote, ns);

    src_ops = ctl_test_source_ops();
    app_ops = ctl_apply_engine_ops();
    mgr = start_manager(ns, NULL, 0);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_manager_free(mgr);
    co_kube_client_free(remote);
    co_test_controlplane_stop(&cp);
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    free(remote_kubeconfig);
    free(ns);
    curl_global_cleanup();
    return 0;
}

static void create_kubeconfig_secret(const char *name, const char *key)
{
    struct json_object *s =
        co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
                     "{\"namespace\":\"%s\",\"name\":\"%s\"},\"stringData\":{}}",
                     ns, name);
    json_object_object_add(co_json_get(s, "stringData", NULL), key,
                           json_object_new_string(remote_kubeconfig));
    assert_co_pass(co_kube_create(NULL, admin, s, NULL));
    json_object_put(s);
}

static bool configmap_exists(co_kube_client *c, const char *nspace, const char *name)
{
    co_kube_ref ref = {"v1", "ConfigMap", nspace, name};
    struct json_object *obj = NULL;
    int rc = co_kube_get(&obj, c, &ref, NULL);
    json_object_put(obj);
    return rc == 0;
}

static void delete_component(const char *nspace, const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", nspace, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    ctl_test_wait_gone(admin, nspace, name, WAIT_MS);
}

static void touch(const char *nspace, const char *name, const char *value)
{
    struct json_object *patch =
        co_test_json("{\"metadata\":{\"annotations\":{\"test.co/touch\":\"%s\"}}}", value);
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", nspace, name};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
}

static char *condition_message(const char *nspace, const char *name)
{
    struct json_object *c = ctl_test_get_component(admin, nspace, name);
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    struct json_object *m =
        conds ? co_json_get(json_object_array_get_idx(conds, 0), "message", NULL) : NULL;
    char *s = co_xstrdup(m ? json_object_get_string(m) : "");
    json_object_put(c);
    return s;
}

/* Grants cluster-admin to service account @p sa of @p nspace in the cluster of @p c. */
static char *grant(co_kube_client *c, const char *nspace, const char *sa)
{
    char *name = co_test_random_name("ctl-tgt-", 8);
    struct json_object *crb = co_test_json(
        "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
        "\"metadata\":{\"name\":\"%s\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
        "\"kind\":\"ClusterRole\",\"name\":\"cluster-admin\"},\"subjects\":[{\"kind\":"
        "\"ServiceAccount\",\"name\":\"%s\",\"namespace\":\"%s\"}]}",
        name, sa, nspace);
    assert_co_pass(co_kube_create(NULL, c, crb, NULL));
    json_object_put(crb);
    return name;
}

static void revoke_grant(co_kube_client *c, char *name)
{
    co_kube_ref ref = {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", NULL, name};
    assert_co_pass(co_kube_delete(NULL, c, &ref, NULL));
    free(name);
}

/* Events in @p nspace of the cluster of @p c about object @p name with @p reason. */
static int events_about(co_kube_client *c, const char *nspace, const char *name, const char *reason)
{
    co_kube_ref ref = {"v1", "Event", nspace, NULL};
    co_kube_list_options lo = {0};
    char *sel = co_xasprintf("involvedObject.name=%s", name);
    lo.field_selector = sel;
    struct json_object *list = NULL;
    assert_co_pass(co_kube_list(&list, c, &ref, &lo));
    free(sel);
    struct json_object *items = co_json_get(list, "items", NULL);
    int n = 0;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        struct json_object *r = co_json_get(json_object_array_get_idx(items, i), "reason", NULL);
        if (r && strcmp(json_object_get_string(r), reason) == 0) {
            n++;
        }
    }
    json_object_put(list);
    return n;
}

static void test_ctl_targets__kubeconfig_secret_deploys_into_the_remote_cluster(void **state)
{
    (void)state;
    static const char *const keys[] = {"value", "value.yaml", "value.yml"};
    static const char *const names[] = {"kc-value", "kc-value-yaml", "kc-value-yml"};
    static const char *const paths[] = {"value", "valueyaml", "valueyml"};
    for (size_t i = 0; i < 3; i++) {
        char secret[64];
        snprintf(secret, sizeof(secret), "%s-secret", names[i]);
        create_kubeconfig_secret(secret, keys[i]);
        ctl_test_create_component(admin, ns, names[i],
                                  "{\"sourceRef\":{\"httpRepository\":{\"url\":\"http://x.invalid/"
                                  "a.tgz\"}},\"path\":\"%s\",\"kubeConfig\":{\"secretRef\":{"
                                  "\"name\":\"%s\"}}}",
                                  paths[i], secret);
    }
    for (size_t i = 0; i < 3; i++) {
        ctl_test_wait_state(admin, ns, names[i], "Ready", "Ready", WAIT_MS);
        /* the object is in the remote cluster only */
        assert_true(configmap_exists(remote, ns, names[i]));
        assert_false(configmap_exists(admin, ns, names[i]));
    }

    /* the events about the dependents went through the target client: they are in the remote
     * cluster, and none is in the local one */
    int found = 0;
    for (int i = 0; i < 600 && !found; i++) {
        found = events_about(remote, ns, "kc-value", "Created");
        if (!found) {
            usleep(100 * 1000);
        }
    }
    assert_true(found > 0);
    assert_int_equal(events_about(admin, ns, "kc-value", "Created"), 0);

    /* a missing kubeconfig key is named in the error */
    struct json_object *bad =
        co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
                     "{\"namespace\":\"%s\",\"name\":\"kc-bad\"},"
                     "\"stringData\":{\"kubeconfig\":\"x\"}}",
                     ns);
    assert_co_pass(co_kube_create(NULL, admin, bad, NULL));
    json_object_put(bad);
    ctl_test_create_component(admin, ns, "kc-bad",
                              "{\"sourceRef\":{\"httpRepository\":{\"url\":\"http://x.invalid/"
                              "a.tgz\"}},\"path\":\"value\",\"retryInterval\":\"2s\","
                              "\"kubeConfig\":{\"secretRef\":{\"name\":\"kc-bad\"}}}");
    ctl_test_wait_state(admin, ns, "kc-bad", "Pending", "Retrying", WAIT_MS);
    char *msg = condition_message(ns, "kc-bad");
    assert_contains(msg, "kc-bad");
    free(msg);
    delete_component(ns, "kc-bad");

    /* deletion goes through the remote target too */
    for (size_t i = 0; i < 3; i++) {
        delete_component(ns, names[i]);
        assert_false(configmap_exists(remote, ns, names[i]));
    }
}

static void test_ctl_targets__impersonation_applies_to_a_kubeconfig_target(void **state)
{
    (void)state;
    create_kubeconfig_secret("kc-imp-secret", "value");
    ctl_test_create_component(admin, ns, "kc-imp",
                              "{\"sourceRef\":{\"httpRepository\":{\"url\":\"http://x.invalid/"
                              "a.tgz\"}},\"path\":\"imp\",\"serviceAccountName\":\"remote-sa\","
                              "\"kubeConfig\":{\"secretRef\":{\"name\":\"kc-imp-secret\"}}}");
    ctl_test_wait_state(admin, ns, "kc-imp", "Error", "Error", WAIT_MS);
    char *msg = condition_message(ns, "kc-imp");
    char *user = co_xasprintf("system:serviceaccount:%s:remote-sa", ns);
    assert_contains(msg, "forbidden");
    assert_contains(msg, user);
    free(msg);
    assert_false(configmap_exists(remote, ns, "kc-imp"));

    /* with rights in the remote cluster (the local one is not asked) it works */
    char *crb = grant(remote, ns, "remote-sa");
    touch(ns, "kc-imp", "1");
    ctl_test_wait_state(admin, ns, "kc-imp", "Ready", "Ready", WAIT_MS);
    assert_true(configmap_exists(remote, ns, "kc-imp"));
    assert_false(configmap_exists(admin, ns, "kc-imp"));
    delete_component(ns, "kc-imp");
    assert_false(configmap_exists(remote, ns, "kc-imp"));
    revoke_grant(remote, crb);
    free(user);
}

/* localLookup reads the local cluster as the Component's service account when the objects go
 * to another cluster, not with the controller's own rights (the Go original's local client
 * impersonates the same account). */
static void test_ctl_targets__local_lookups_of_a_remote_component_use_its_identity(void **state)
{
    (void)state;
    char *other = co_test_kube_namespace(admin, "ctl-tgt-other-");
    struct json_object *s = co_test_json(
        "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"namespace\":\"%s\","
        "\"name\":\"creds\"},\"stringData\":{\"password\":\"local-secret\"}}",
        other);
    assert_co_pass(co_kube_create(NULL, admin, s, NULL));
    json_object_put(s);
    char path[4096];
    snprintf(path, sizeof(path), "%s/lkp/cm.yaml", srcdir);
    char *text = co_xasprintf(
        "{{ fail (toJson (localLookup \"v1\" \"Secret\" \"%s\" \"creds\")) }}\n", other);
    co_test_write_file(path, text, strlen(text));
    free(text);
    create_kubeconfig_secret("kc-lkp-secret", "value");
    char *crb = grant(remote, ns, "lkp-sa");
    ctl_test_create_component(admin, ns, "kc-lkp",
                              "{\"sourceRef\":{\"httpRepository\":{\"url\":\"http://x.invalid/"
                              "a.tgz\"}},\"path\":\"lkp\",\"serviceAccountName\":\"lkp-sa\","
                              "\"kubeConfig\":{\"secretRef\":{\"name\":\"kc-lkp-secret\"}}}");
    ctl_test_wait_state(admin, ns, "kc-lkp", "Error", "Error", WAIT_MS);
    char *msg = condition_message(ns, "kc-lkp");
    char *user = co_xasprintf("system:serviceaccount:%s:lkp-sa", ns);
    assert_contains(msg, "localLookup");
    assert_contains(msg, "forbidden");
    assert_contains(msg, user);
    assert_null(strstr(msg, "bG9jYWwtc2VjcmV0"));
    free(user);
    free(msg);
    delete_component(ns, "kc-lkp");
    revoke_grant(remote, crb);
    free(other);
}

static void create_text_secret(const char *name, const char *key, const char *text)
{
    struct json_object *s =
        co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
                     "{\"namespace\":\"%s\",\"name\":\"%s\"},\"stringData\":{}}",
                     ns, name);
    json_object_object_add(co_json_get(s, "stringData", NULL), key, json_object_new_string(text));
    assert_co_pass(co_kube_create(NULL, admin, s, NULL));
    json_object_put(s);
}

/* A tenant's kubeconfig naming one of the controller's files (its service-account token) and a
 * server of the tenant's choosing: refused before the file is read or anything is contacted.
 * An http:// server needs a ComponentPolicy's grant. */
static void test_ctl_targets__untrusted_kubeconfig_reads_no_file_and_contacts_nobody(void **state)
{
    (void)state;
    test_httpd *listener = test_httpd_start();
    char *token = co_xasprintf("%s/token", srcdir);
    co_test_write_file(token, "controller-token", 16);
    char *kc = co_xasprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                            "    server: %s\nusers:\n- name: u\n  user:\n    tokenFile: %s\n"
                            "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                            "current-context: x\n",
                            test_httpd_url(listener), token);
    create_text_secret("kc-steal", "value", kc);
    ctl_test_create_component(admin, ns, "kc-steal",
                              "{\"sourceRef\":{\"httpRepository\":{\"url\":\"http://x.invalid/"
                              "a.tgz\"}},\"path\":\"value\","
                              "\"kubeConfig\":{\"secretRef\":{\"name\":\"kc-steal\"}}}");
    ctl_test_wait_state(admin, ns, "kc-steal", "Error", "Error", WAIT_MS);
    char *msg = condition_message(ns, "kc-steal");
    assert_contains(msg, "users[0].user.tokenFile: file references are not allowed");
    free(msg);

    /* inline credentials, but a plain http:// server: refused without a grant */
    char *kc2 = co_xasprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                             "    server: %s\nusers:\n- name: u\n  user:\n    token: t\n"
                             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                             "current-context: x\n",
                             test_httpd_url(listener));
    create_text_secret("kc-http", "value", kc2);
    ctl_test_create_component(admin, ns, "kc-http",
                              "{\"sourceRef\":{\"httpRepository\":{\"url\":\"http://x.invalid/"
                              "a.tgz\"}},\"path\":\"value\","
                              "\"kubeConfig\":{\"secretRef\":{\"name\":\"kc-http\"}}}");
    ctl_test_wait_state(admin, ns, "kc-http", "Error", "Error", WAIT_MS);
    msg = condition_message(ns, "kc-http");
    assert_contains(msg, "clusters[0].cluster.server");
    free(msg);
    /* neither Component reached the listener */
    assert_int_equal(test_httpd_connections(listener), 0);
    delete_component(ns, "kc-http");
    delete_component(ns, "kc-steal");
    test_httpd_stop(listener);
    free(kc2);
    free(kc);
    free(token);
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    return co_buf_put(ud, p, sz * n) == 0 ? sz * n : 0;
}

static double metric_value(ctl_manager *m, const char *name)
{
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", ctl_manager_metrics_port(m));
    co_buf body = CO_BUF_INIT(64 << 20);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_cleanup(c);
    char *prefix = co_xasprintf("\n%s{", name);
    const char *line = strstr(co_buf_cstr(&body), prefix);
    assert_non_null(line);
    const char *sp = strchr(line + 1, '\n');
    const char *val = line;
    for (const char *q = line + 1; q < (sp ? sp : line + strlen(line)); q++) {
        if (*q == ' ') {
            val = q + 1;
        }
    }
    double v = strtod(val, NULL);
    free(prefix);
    co_buf_dispose(&body);
    return v;
}

#define ACTIVE  "component_operator_runtime_active_clients_total"
#define CREATED "component_operator_runtime_created_clients_total"

static void test_ctl_targets__default_service_account_and_client_expiry(void **state)
{
    (void)state;
    char *ns2 = co_test_kube_namespace(admin, "ctl-dsa-");
    /* clients unused for a second expire */
    ctl_manager *m = start_manager(ns2, "deployer", 1000LL * 1000 * 1000);

    /* the default service account without rights: a clear Forbidden error naming it */
    ctl_test_create_component(admin, ns2, "dsa",
                              "{\"sourceRef\":{\"httpRepository\":{\"url\":\"http://x.invalid/"
                              "a.tgz\"}},\"path\":\"dsa\"}");
    ctl_test_wait_state(admin, ns2, "dsa", "Error", "Error", WAIT_MS);
    char *msg = condition_message(ns2, "dsa");
    char *user = co_xasprintf("system:serviceaccount:%s:deployer", ns2);
    assert_contains(msg, "forbidden");
    assert_contains(msg, user);
    free(msg);
    free(user);
    assert_false(configmap_exists(admin, ns2, "dsa-cm"));

    /* spec.serviceAccountName wins over the default */
    char *crb = grant(admin, ns2, "deployer");
    ctl_test_create_component(admin, ns2, "nobody",
                              "{\"sourceRef\":{\"httpRepository\":{\"url\":\"http://x.invalid/"
                              "a.tgz\"}},\"path\":\"nobody\",\"serviceAccountName\":\"nobody\"}");
    ctl_test_wait_state(admin, ns2, "nobody", "Error", "Error", WAIT_MS);
    msg = condition_message(ns2, "nobody");
    user = co_xasprintf("system:serviceaccount:%s:nobody", ns2);
    assert_contains(msg, user);
    free(msg);
    free(user);
    assert_false(configmap_exists(admin, ns2, "nobody-cm"));
    delete_component(ns2, "nobody");

    /* with rights the default service account deploys */
    touch(ns2, "dsa", "1");
    ctl_test_wait_state(admin, ns2, "dsa", "Ready", "Ready", WAIT_MS);
    assert_true(configmap_exists(admin, ns2, "dsa-cm"));

    /* unused, the impersonating client is dropped from the cache ... */
    double active = -1;
    for (int i = 0; i < 600; i++) {
        active = metric_value(m, ACTIVE);
        if (active == 0) {
            break;
        }
        usleep(200 * 1000);
    }
    assert_true(active == 0);
    double created = metric_value(m, CREATED);
    assert_true(created >= 2);
    /* ... and built again for the next reconcile */
    touch(ns2, "dsa", "2");
    double again = created;
    for (int i = 0; i < 600 && again <= created; i++) {
        usleep(100 * 1000);
        again = metric_value(m, CREATED);
    }
    assert_true(again > created);
    ctl_test_wait_state(admin, ns2, "dsa", "Ready", "Ready", WAIT_MS);

    delete_component(ns2, "dsa");
    assert_false(configmap_exists(admin, ns2, "dsa-cm"));
    revoke_grant(admin, crb);
    ctl_manager_free(m);
    free(ns2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_targets__kubeconfig_secret_deploys_into_the_remote_cluster),
        cmocka_unit_test(test_ctl_targets__impersonation_applies_to_a_kubeconfig_target),
        cmocka_unit_test(test_ctl_targets__local_lookups_of_a_remote_component_use_its_identity),
        cmocka_unit_test(test_ctl_targets__untrusted_kubeconfig_reads_no_file_and_contacts_nobody),
        cmocka_unit_test(test_ctl_targets__default_service_account_and_client_expiry),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
