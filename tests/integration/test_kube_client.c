/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes client against the real kube-apiserver of the test control plane: every
 * operation, typed errors from real Status answers, optimistic concurrency with preconditions,
 * server-side apply conflicts and force, dry runs, the status subresource, impersonation
 * judged by RBAC, a CustomResourceDefinition created at run time becoming usable through
 * discovery, an aggregated API that is down, client certificates, and connection reuse over
 * HTTP/1.1 from several threads.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "shared/src/kube/kube_int.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

static co_kube_client *admin;
static char *ns;

static int group_setup(void **state)
{
    (void)state;
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ns = co_test_kube_namespace(admin, "co-client-");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    co_kube_delete_options d = CO_KUBE_DELETE_OPTIONS_INIT;
    if (co_kube_delete(NULL, admin, &(co_kube_ref){"v1", "Namespace", NULL, ns}, &d) < 0) {
        co_error_clear();
    }
    free(ns);
    co_kube_client_free(admin);
    return 0;
}

static struct json_object *configmap(const char *name, const char *labels, const char *data)
{
    return co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                        "\"%s\",\"namespace\":\"%s\",\"labels\":{%s}},\"data\":{%s}}",
                        name, ns, labels, data);
}

static const char *data_of(struct json_object *obj, const char *key)
{
    return co_json_str(obj, "data", key, NULL);
}

static void test_kube_client__crud_round_trip(void **state)
{
    (void)state;
    co_kube_ref ref = {"v1", "ConfigMap", ns, "round-trip"};
    struct json_object *cm = configmap("round-trip", "\"app\":\"x\"", "\"k\":\"v1\"");
    struct json_object *out = NULL, *got = NULL;

    assert_co_fail_with(CO_ENOTFOUND, co_kube_get(&got, admin, &ref, NULL));
    assert_int_equal(co_kube_status_last()->code, 404);
    assert_string_equal(co_kube_status_last()->reason, "NotFound");

    assert_co_pass(co_kube_create(&out, admin, cm, NULL));
    assert_string_equal(data_of(out, "k"), "v1");
    assert_non_null(co_json_str(out, "metadata", "uid", NULL));
    json_object_put(out);

    assert_co_fail_with(CO_EEXISTS, co_kube_create(NULL, admin, cm, NULL));
    assert_string_equal(co_kube_status_last()->reason, "AlreadyExists");
    assert_contains(co_error_last(), "already exists");

    assert_co_pass(co_kube_get(&got, admin, &ref, NULL));
    json_object_object_add(co_kube__obj(got, "data"), "k", json_object_new_string("v2"));
    assert_co_pass(co_kube_update(&out, admin, got, NULL));
    assert_string_equal(data_of(out, "k"), "v2");
    json_object_put(out);
    json_object_put(got);

    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    assert_co_fail_with(CO_ENOTFOUND, co_kube_get(&got, admin, &ref, NULL));
    assert_co_fail_with(CO_ENOTFOUND, co_kube_delete(NULL, admin, &ref, NULL));
    json_object_put(cm);
}

static void test_kube_client__optimistic_concurrency_and_preconditions(void **state)
{
    (void)state;
    co_kube_ref ref = {"v1", "ConfigMap", ns, "occ"};
    struct json_object *cm = configmap("occ", "", "\"k\":\"a\"");
    struct json_object *v1 = NULL, *v2 = NULL, *out = NULL;
    assert_co_pass(co_kube_create(&v1, admin, cm, NULL));
    /* two writers read the same version; the second write must lose */
    assert_co_pass(co_kube_get(&v2, admin, &ref, NULL));
    json_object_object_add(co_kube__obj(v1, "data"), "k", json_object_new_string("first"));
    json_object_object_add(co_kube__obj(v2, "data"), "k", json_object_new_string("second"));
    assert_co_pass(co_kube_update(&out, admin, v1, NULL));
    assert_co_fail_with(CO_ECONFLICT, co_kube_update(NULL, admin, v2, NULL));
    assert_int_equal(co_kube_status_last()->code, 409);
    assert_string_equal(co_kube_status_last()->reason, "Conflict");
    assert_contains(co_kube_status_last()->message, "the object has been modified");

    /* delete preconditions: wrong uid, wrong resourceVersion, then the right ones */
    co_kube_delete_options d = CO_KUBE_DELETE_OPTIONS_INIT;
    d.precondition_uid = "00000000-0000-0000-0000-000000000000";
    assert_co_fail_with(CO_ECONFLICT, co_kube_delete(NULL, admin, &ref, &d));
    assert_contains(co_error_last(), "the UID in the precondition");
    d.precondition_uid = co_json_str(out, "metadata", "uid", NULL);
    d.precondition_rv = co_json_str(v2, "metadata", "resourceVersion", NULL); /* stale */
    assert_co_fail_with(CO_ECONFLICT, co_kube_delete(NULL, admin, &ref, &d));
    d.precondition_rv = co_json_str(out, "metadata", "resourceVersion", NULL);
    d.dry_run = 1;
    assert_co_pass(co_kube_delete(NULL, admin, &ref, &d));
    struct json_object *still = NULL;
    assert_co_pass(co_kube_get(&still, admin, &ref, NULL));
    json_object_put(still);
    d.dry_run = 0;
    d.propagation_policy = "Background";
    assert_co_pass(co_kube_delete(NULL, admin, &ref, &d));
    assert_co_fail_with(CO_ENOTFOUND, co_kube_get(&still, admin, &ref, NULL));
    json_object_put(out);
    json_object_put(v1);
    json_object_put(v2);
    json_object_put(cm);
}

static void test_kube_client__dry_run_create_persists_nothing(void **state)
{
    (void)state;
    struct json_object *cm = configmap("dry", "", "\"k\":\"v\"");
    struct json_object *out = NULL;
    co_kube_write_options wo = {.dry_run = 1};
    assert_co_pass(co_kube_create(&out, admin, cm, &wo));
    assert_string_equal(data_of(out, "k"), "v");
    json_object_put(out);
    assert_co_fail_with(
        CO_ENOTFOUND, co_kube_get(&out, admin, &(co_kube_ref){"v1", "ConfigMap", ns, "dry"}, NULL));
    json_object_put(cm);
}

static int count_item(struct json_object *item, void *payload)
{
    (void)item;
    (*(int *)payload)++;
    return 0;
}

static void test_kube_client__list_selectors_and_pages(void **state)
{
    (void)state;
    for (int i = 0; i < 7; i++) {
        char name[32];
        snprintf(name, sizeof(name), "page-%d", i);
        struct json_object *cm = configmap(name,
                                           i % 2 ? "\"tier\":\"odd\",\"set\":\"pages\""
                                                 : "\"tier\":\"even\",\"set\":\"pages\"",
                                           "\"i\":\"x\"");
        assert_co_pass(co_kube_create(NULL, admin, cm, NULL));
        json_object_put(cm);
    }
    co_kube_ref coll = {"v1", "ConfigMap", ns, NULL};
    /* one page of two: a continue token comes back */
    co_kube_list_options lo = {.label_selector = "set=pages", .limit = 2};
    struct json_object *page = NULL;
    assert_co_pass(co_kube_list(&page, admin, &coll, &lo));
    const char *cont = co_json_str(page, "metadata", "continue", NULL);
    assert_non_null(cont);
    assert_true(strlen(cont) > 0);
    struct json_object *items = NULL;
    assert_true(json_object_object_get_ex(page, "items", &items));
    assert_int_equal(json_object_array_length(items), 2);
    /* the server sends the items without their type; the client gives them the listed one */
    struct json_object *item = json_object_array_get_idx(items, 0);
    assert_string_equal(co_json_str(item, "apiVersion", NULL), "v1");
    assert_string_equal(co_json_str(item, "kind", NULL), "ConfigMap");
    json_object_put(page);
    /* every page, through the continue tokens */
    int n = 0;
    char *rv = NULL;
    assert_co_pass(co_kube_list_each(&rv, admin, &coll, &lo, count_item, &n));
    assert_int_equal(n, 7);
    assert_true(strlen(rv) > 0);
    free(rv);
    /* label and field selectors */
    co_kube_list_options odd = {.label_selector = "set=pages,tier!=even"};
    n = 0;
    assert_co_pass(co_kube_list_each(NULL, admin, &coll, &odd, count_item, &n));
    assert_int_equal(n, 3);
    co_kube_list_options one = {.field_selector = "metadata.name=page-4"};
    struct json_object *all = NULL;
    assert_co_pass(co_kube_list_all(&all, admin, &coll, &one));
    assert_true(json_object_object_get_ex(all, "items", &items));
    assert_int_equal(json_object_array_length(items), 1);
    json_object_put(all);
    /* a bad selector is the caller's error */
    co_kube_list_options bad = {.label_selector = "a in (b"};
    assert_co_fail_with(CO_EINVALID, co_kube_list(&all, admin, &coll, &bad));
}

static void test_kube_client__patches(void **state)
{
    (void)state;
    co_kube_ref ref = {"v1", "ConfigMap", ns, "patched"};
    struct json_object *cm = configmap("patched", "", "\"a\":\"1\",\"b\":\"2\"");
    assert_co_pass(co_kube_create(NULL, admin, cm, NULL));
    struct json_object *out = NULL;

    struct json_object *jp =
        co_test_json("[{\"op\":\"add\",\"path\":\"/data/c\",\"value\":\"3\"},"
                     "{\"op\":\"replace\",\"path\":\"/data/a\",\"value\":\"one\"}]");
    assert_co_pass(co_kube_patch(&out, admin, &ref, CO_KUBE_PATCH_JSON, jp, NULL));
    assert_string_equal(data_of(out, "a"), "one");
    assert_string_equal(data_of(out, "c"), "3");
    json_object_put(out);
    json_object_put(jp);

    /* a failing "test" operation refuses the whole patch */
    jp = co_test_json("[{\"op\":\"test\",\"path\":\"/data/a\",\"value\":\"nope\"},"
                      "{\"op\":\"remove\",\"path\":\"/data/a\"}]");
    int rc = co_kube_patch(&out, admin, &ref, CO_KUBE_PATCH_JSON, jp, NULL);
    assert_true(rc == CO_EINVALID || rc == CO_ECONFLICT);
    json_object_put(jp);

    struct json_object *mp = co_test_json("{\"data\":{\"b\":null,\"d\":\"4\"}}");
    assert_co_pass(co_kube_patch(&out, admin, &ref, CO_KUBE_PATCH_MERGE, mp, NULL));
    assert_null(data_of(out, "b"));
    assert_string_equal(data_of(out, "d"), "4");
    assert_string_equal(data_of(out, "a"), "one");
    json_object_put(out);
    json_object_put(mp);

    /* strategic merge keys list items by name: the second container is added, not replaced */
    struct json_object *dep = co_test_json(
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"smp\","
        "\"namespace\":\"%s\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"smp\"}},"
        "\"template\":{\"metadata\":{\"labels\":{\"app\":\"smp\"}},\"spec\":{\"containers\":"
        "[{\"name\":\"main\",\"image\":\"busybox:1\"}]}}}}",
        ns);
    assert_co_pass(co_kube_create(NULL, admin, dep, NULL));
    struct json_object *sp = co_test_json(
        "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"side\",\"image\":"
        "\"busybox:2\"}]}}}}");
    assert_co_pass(co_kube_patch(&out, admin, &(co_kube_ref){"apps/v1", "Deployment", ns, "smp"},
                                 CO_KUBE_PATCH_STRATEGIC, sp, NULL));
    struct json_object *containers = NULL;
    struct json_object *tspec =
        co_kube__obj(co_kube__obj(co_kube__obj(out, "spec"), "template"), "spec");
    assert_true(json_object_object_get_ex(tspec, "containers", &containers));
    assert_int_equal(json_object_array_length(containers), 2);
    json_object_put(out);
    json_object_put(sp);
    json_object_put(dep);
    json_object_put(cm);
}

static void test_kube_client__server_side_apply_conflicts_and_force(void **state)
{
    (void)state;
    struct json_object *mine = configmap("ssa", "", "\"owned\":\"by-a\"");
    struct json_object *theirs = configmap("ssa", "", "\"owned\":\"by-b\"");
    co_kube_write_options a = {.field_manager = "manager-a"};
    co_kube_write_options b = {.field_manager = "manager-b"};
    struct json_object *out = NULL;

    assert_co_pass(co_kube_apply(&out, admin, mine, &a));
    assert_string_equal(data_of(out, "owned"), "by-a");
    json_object_put(out);
    /* applying again is a no-op for the same manager */
    assert_co_pass(co_kube_apply(NULL, admin, mine, &a));

    assert_co_fail_with(CO_ECONFLICT, co_kube_apply(&out, admin, theirs, &b));
    assert_int_equal(co_kube_status_last()->code, 409);
    assert_contains(co_kube_status_last()->message, "manager-a");
    assert_contains(co_kube_status_last()->details, ".data.owned");

    /* dry run with force changes nothing */
    b.force = 1;
    b.dry_run = 1;
    assert_co_pass(co_kube_apply(&out, admin, theirs, &b));
    assert_string_equal(data_of(out, "owned"), "by-b");
    json_object_put(out);
    struct json_object *got = NULL;
    assert_co_pass(co_kube_get(&got, admin, &(co_kube_ref){"v1", "ConfigMap", ns, "ssa"}, NULL));
    assert_string_equal(data_of(got, "owned"), "by-a");
    json_object_put(got);

    b.dry_run = 0;
    assert_co_pass(co_kube_apply(&out, admin, theirs, &b));
    assert_string_equal(data_of(out, "owned"), "by-b");
    json_object_put(out);
    json_object_put(mine);
    json_object_put(theirs);
}

static void test_kube_client__status_subresource(void **state)
{
    (void)state;
    co_kube_ref ref = {"apps/v1", "Deployment", ns, "with-status"};
    struct json_object *dep = co_test_json(
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
        "\"with-status\",\"namespace\":\"%s\"},\"spec\":{\"replicas\":1,\"selector\":"
        "{\"matchLabels\":{\"app\":\"s\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":"
        "\"s\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}",
        ns);
    struct json_object *out = NULL;
    assert_co_pass(co_kube_create(&out, admin, dep, NULL));
    json_object_put(out);

    co_kube_get_options go = {.subresource = "status"};
    struct json_object *st = NULL;
    assert_co_pass(co_kube_get(&st, admin, &ref, &go));
    /* the status endpoint writes status only: the replica change in spec is ignored */
    struct json_object *status = co_test_json("{\"replicas\":1,\"readyReplicas\":1,"
                                              "\"observedGeneration\":1}");
    json_object_object_add(st, "status", status);
    json_object_object_add(co_kube__obj(st, "spec"), "replicas", json_object_new_int(5));
    assert_co_pass(co_kube_update_status(&out, admin, st, NULL));
    json_object_put(out);
    json_object_put(st);
    struct json_object *got = NULL;
    assert_co_pass(co_kube_get(&got, admin, &ref, NULL));
    struct json_object *v = NULL;
    assert_true(json_object_object_get_ex(co_kube__obj(got, "status"), "readyReplicas", &v));
    assert_int_equal(json_object_get_int(v), 1);
    assert_true(json_object_object_get_ex(co_kube__obj(got, "spec"), "replicas", &v));
    assert_int_equal(json_object_get_int(v), 1);
    json_object_put(got);

    /* a merge patch of the status subresource */
    struct json_object *sp = co_test_json("{\"status\":{\"availableReplicas\":1}}");
    co_kube_write_options wo = {.subresource = "status"};
    assert_co_pass(co_kube_patch(&out, admin, &ref, CO_KUBE_PATCH_MERGE, sp, &wo));
    assert_true(json_object_object_get_ex(co_kube__obj(out, "status"), "availableReplicas", &v));
    assert_int_equal(json_object_get_int(v), 1);
    json_object_put(out);
    json_object_put(sp);
    json_object_put(dep);
}

static void test_kube_client__impersonation_is_judged_by_rbac(void **state)
{
    (void)state;
    const char *restricted = co_test_env("CO_TEST_RESTRICTED_USER");
    co_kube_ref coll = {"v1", "ConfigMap", ns, NULL};
    co_kube_client *as_user = NULL;
    const char *groups[] = {"co-testers"};
    assert_co_pass(co_kube_client_new_impersonating(&as_user, admin, restricted, groups, 1));
    struct json_object *out = NULL;
    assert_co_fail_with(CO_EAUTH, co_kube_list(&out, as_user, &coll, NULL));
    assert_int_equal(co_kube_status_last()->code, 403);
    assert_string_equal(co_kube_status_last()->reason, "Forbidden");
    assert_contains(co_kube_status_last()->message, restricted);

    /* the restricted user's own credentials are refused the same way */
    co_kube_client *direct = co_test_kube_client("CO_TEST_RESTRICTED_KUBECONFIG");
    assert_co_fail_with(CO_EAUTH, co_kube_list(&out, direct, &coll, NULL));

    /* grant list on configmaps in this namespace: both succeed, writing is still refused */
    struct json_object *role = co_test_json(
        "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\",\"metadata\":"
        "{\"name\":\"cm-reader\",\"namespace\":\"%s\"},\"rules\":[{\"apiGroups\":[\"\"],"
        "\"resources\":[\"configmaps\"],\"verbs\":[\"get\",\"list\",\"watch\"]}]}",
        ns);
    struct json_object *binding = co_test_json(
        "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\",\"metadata\":"
        "{\"name\":\"cm-reader\",\"namespace\":\"%s\"},\"roleRef\":{\"apiGroup\":"
        "\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"cm-reader\"},\"subjects\":"
        "[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Group\",\"name\":"
        "\"co-testers\"}]}",
        ns);
    assert_co_pass(co_kube_create(NULL, admin, role, NULL));
    assert_co_pass(co_kube_create(NULL, admin, binding, NULL));
    int ok = 0;
    for (int i = 0; i < 50 && !ok; i++) {
        co_error_clear();
        if (co_kube_list(&out, as_user, &coll, NULL) == 0) {
            ok = 1;
            json_object_put(out);
        } else {
            co_kube__sleep_ms(200, NULL);
        }
    }
    assert_true(ok);
    assert_co_pass(co_kube_list(&out, direct, &coll, NULL));
    json_object_put(out);
    struct json_object *cm = configmap("not-allowed", "", "\"a\":\"b\"");
    assert_co_fail_with(CO_EAUTH, co_kube_create(NULL, as_user, cm, NULL));
    /* the impersonated identity lacks the group: forbidden again */
    co_kube_client *no_group = NULL;
    assert_co_pass(co_kube_client_new_impersonating(&no_group, admin, restricted, NULL, 0));
    assert_co_fail_with(CO_EAUTH, co_kube_list(&out, no_group, &coll, NULL));
    co_kube_client_free(no_group);
    json_object_put(cm);
    json_object_put(role);
    json_object_put(binding);
    co_kube_client_free(direct);
    co_kube_client_free(as_user);
}

typedef struct crd_wait {
    co_kube_client *c;
    const char *api_version;
} crd_wait;

static int widget_mapped(void *payload)
{
    crd_wait *w = payload;
    co_kube_mapping m;
    co_error_clear();
    if (co_kube_client_mapping(&m, w->c, w->api_version, "Widget") == 0) {
        co_kube_mapping_dispose(&m);
        return 1;
    }
    return 0;
}

static void test_kube_client__crd_created_at_run_time_becomes_usable(void **state)
{
    (void)state;
    char *group = co_test_random_name("co", 8);
    char *full = co_xasprintf("%s.example.com", group);
    char *api_version = co_xasprintf("%s/v1", full);
    co_kube_mapping m;
    /* unknown before: the group is not served */
    assert_co_fail_with(CO_ENOMATCH, co_kube_client_mapping(&m, admin, api_version, "Widget"));

    struct json_object *crd = co_test_json(
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"widgets.%s\"},\"spec\":{\"group\":\"%s\",\"scope\":"
        "\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":"
        "\"Widget\"},\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
        "\"subresources\":{\"status\":{}},\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
        "\"x-kubernetes-preserve-unknown-fields\":true}}}]}}",
        full, full);
    assert_co_pass(co_kube_create(NULL, admin, crd, NULL));
    crd_wait w = {admin, api_version};
    assert_true(co_test_poll(widget_mapped, &w, 60000));
    assert_co_pass(co_kube_client_mapping(&m, admin, api_version, "Widget"));
    assert_string_equal(m.resource, "widgets");
    assert_true(m.namespaced);
    co_kube_mapping_dispose(&m);

    struct json_object *widget = co_test_json(
        "{\"apiVersion\":\"%s\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w1\",\"namespace\":"
        "\"%s\"},\"spec\":{\"size\":3}}",
        api_version, ns);
    struct json_object *out = NULL;
    assert_co_pass(co_kube_create(&out, admin, widget, NULL));
    json_object_put(out);
    assert_co_pass(co_kube_get(&out, admin, &(co_kube_ref){api_version, "Widget", ns, "w1"}, NULL));
    struct json_object *size = NULL;
    assert_true(json_object_object_get_ex(co_kube__obj(out, "spec"), "size", &size));
    assert_int_equal(json_object_get_int(size), 3);
    json_object_put(out);

    co_kube_ref crd_ref = {"apiextensions.k8s.io/v1", "CustomResourceDefinition", NULL, NULL};
    char *crd_name = co_xasprintf("widgets.%s", full);
    crd_ref.name = crd_name;
    assert_co_pass(co_kube_delete(NULL, admin, &crd_ref, NULL));
    free(crd_name);
    json_object_put(widget);
    json_object_put(crd);
    free(api_version);
    free(full);
    free(group);
}

static int aggregated_down(void *payload)
{
    crd_wait *w = payload;
    co_kube_mapping m;
    co_error_clear();
    int rc = co_kube_client_mapping(&m, w->c, w->api_version, "Thing");
    if (rc == 0) {
        co_kube_mapping_dispose(&m);
    }
    return rc == CO_EUNAVAILABLE;
}

static void test_kube_client__aggregated_api_down_fails_alone(void **state)
{
    (void)state;
    char *group = co_test_random_name("agg", 8);
    char *full = co_xasprintf("%s.example.com", group);
    char *api_version = co_xasprintf("%s/v1", full);
    struct json_object *svc = co_test_json(
        "{\"apiVersion\":\"apiregistration.k8s.io/v1\",\"kind\":\"APIService\",\"metadata\":"
        "{\"name\":\"v1.%s\"},\"spec\":{\"group\":\"%s\",\"version\":\"v1\",\"service\":"
        "{\"namespace\":\"%s\",\"name\":\"nobody-home\",\"port\":443},"
        "\"insecureSkipTLSVerify\":true,\"groupPriorityMinimum\":1000,\"versionPriority\":15}}",
        full, full, ns);
    assert_co_pass(co_kube_create(NULL, admin, svc, NULL));
    crd_wait w = {admin, api_version};
    assert_true(co_test_poll(aggregated_down, &w, 60000));
    assert_contains(co_error_last(), "discovery of");
    /* everything else still resolves */
    co_kube_mapping m;
    assert_co_pass(co_kube_client_mapping(&m, admin, "apps/v1", "Deployment"));
    co_kube_mapping_dispose(&m);
    /* an API served by the aggregator itself */
    assert_co_pass(co_kube_client_mapping(&m, admin, "apiregistration.k8s.io/v1", "APIService"));
    assert_false(m.namespaced);
    co_kube_mapping_dispose(&m);
    char *name = co_xasprintf("v1.%s", full);
    assert_co_pass(co_kube_delete(
        NULL, admin, &(co_kube_ref){"apiregistration.k8s.io/v1", "APIService", NULL, name}, NULL));
    free(name);
    json_object_put(svc);
    free(api_version);
    free(full);
    free(group);
}

static void test_kube_client__client_certificate_authenticates(void **state)
{
    (void)state;
    co_kube_client *c = co_test_kube_client("CO_TEST_CERT_KUBECONFIG");
    struct json_object *out = NULL;
    assert_co_pass(co_kube_get(&out, c, &(co_kube_ref){"v1", "Namespace", NULL, ns}, NULL));
    json_object_put(out);
    co_kube_client_free(c);
}

#define THREADS    4
#define PER_THREAD 25

static void *hammer(void *arg)
{
    co_kube_client *c = arg;
    long failures = 0;
    for (int i = 0; i < PER_THREAD; i++) {
        struct json_object *out = NULL;
        if (co_kube_get(&out, c, &(co_kube_ref){"v1", "Namespace", NULL, "default"}, NULL) < 0) {
            failures++;
        }
        json_object_put(out);
    }
    return (void *)failures;
}

static void test_kube_client__connections_are_reused_over_http1(void **state)
{
    (void)state;
    co_kube_config *cfg = NULL;
    co_kube_client *c = NULL;
    assert_co_pass(co_kube_config_load(&cfg, co_test_env("CO_TEST_KUBECONFIG"), NULL));
    co_kube_client_options o = {.qps = -1};
    assert_co_pass(co_kube_client_new(&c, cfg, &o));
    co_kube_config_free(cfg);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, hammer, c), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        void *res = NULL;
        pthread_join(th[i], &res);
        assert_int_equal((long)res, 0);
    }
    unsigned long requests = 0, connects = 0, h2 = 0;
    assert_co_pass(co_kube__curl_stats(c->core->transport, &requests, &connects, &h2));
    /* discovery + 100 GETs; never more connections than threads ran at once */
    assert_true(requests >= (unsigned long)THREADS * PER_THREAD);
    assert_true(connects >= 1);
    assert_true(connects <= THREADS);
    /* HTTP/1.1 although the API server offers HTTP/2 (ALPN): a connection carries one
     * transfer at a time here */
    assert_int_equal(h2, 0);
    co_kube_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_client__crud_round_trip),
        cmocka_unit_test(test_kube_client__optimistic_concurrency_and_preconditions),
        cmocka_unit_test(test_kube_client__dry_run_create_persists_nothing),
        cmocka_unit_test(test_kube_client__list_selectors_and_pages),
        cmocka_unit_test(test_kube_client__patches),
        cmocka_unit_test(test_kube_client__server_side_apply_conflicts_and_force),
        cmocka_unit_test(test_kube_client__status_subresource),
        cmocka_unit_test(test_kube_client__impersonation_is_judged_by_rbac),
        cmocka_unit_test(test_kube_client__crd_created_at_run_time_becomes_usable),
        cmocka_unit_test(test_kube_client__aggregated_api_down_fails_alone),
        cmocka_unit_test(test_kube_client__client_certificate_authenticates),
        cmocka_unit_test(test_kube_client__connections_are_reused_over_http1),
    };
    return cmocka_run_group_tests_name("kube_client_integration", tests, group_setup,
                                       group_teardown);
}
