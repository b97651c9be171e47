/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the pure parts of `diff` and `plan` (docs/preview.md): what is left out of the
 * comparison, Secret values replaced by hashes, the sorted YAML text, the unified diff, and the
 * waves and delete waves printed from the apply engine's own ordering (objects prepared and
 * merged into an inventory with scopes from a small table instead of an API server).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/util/digest.h"
#include "controller/ctl_cli_int.h"
#include "controller/ctl_inventory.h"
#include "tests/support/test_support.h"

#define OWNER "cluster-uid/ns/comp"

/* JSON with ' for " (test readability). */
static struct json_object *J(const char *text)
{
    char *t = co_xstrdup(text);
    for (char *p = t; *p; p++) {
        if (*p == '\'') {
            *p = '"';
        }
    }
    struct json_object *o = NULL;
    if (co_json_parse(&o, t, strlen(t)) < 0) {
        fail_msg("bad test JSON %s: %s", t, co_error_last());
    }
    free(t);
    return o;
}

static char *text_of(struct json_object *obj)
{
    return ctl_cli__preview_text(obj);
}

static void test_ctl_cli_diff__clean_leaves_out_server_fields_and_status(void **state)
{
    (void)state;
    struct json_object *o = J(
        "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c','namespace':'ns1',"
        "'uid':'u','resourceVersion':'7','generation':2,'creationTimestamp':'2024-01-01T00:00:00Z',"
        "'deletionTimestamp':'2024-01-02T00:00:00Z','selfLink':'/x','managedFields':[{}],"
        "'labels':{'a':'b'}},'data':{'k':'v'},'status':{'x':1}}");
    ctl_cli__preview_clean(o);
    char *t = text_of(o);
    assert_string_equal(t, "apiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n  labels:\n"
                           "    a: b\n  name: c\n  namespace: ns1\n");
    free(t);
    json_object_put(o);
    ctl_cli__preview_clean(NULL); /* no-op */
}

static void test_ctl_cli_diff__secret_values_become_hashes(void **state)
{
    (void)state;
    /* "hunter2" in base64; stringData in clear; kubectl's annotation holds both */
    struct json_object *o =
        J("{'apiVersion':'v1','kind':'Secret','metadata':{'name':'s','annotations':{"
          "'kubectl.kubernetes.io/last-applied-configuration':'{\\'data\\':{\\'pw\\':"
          "\\'aHVudGVyMg==\\'}}','other':'kept'}},'data':{'pw':'aHVudGVyMg==','bad':'***'},"
          "'stringData':{'token':'t0ken'}}");
    ctl_cli__preview_clean(o);
    char *t = text_of(o);
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, "hunter2", 7);
    char want[128];
    snprintf(want, sizeof(want), "  pw: sha256:%s\n", hex);
    assert_non_null(strstr(t, want));
    co_sha256_hex(hex, "t0ken", 5);
    snprintf(want, sizeof(want), "  token: sha256:%s\n", hex);
    assert_non_null(strstr(t, want));
    co_sha256_hex(hex, "***", 3); /* not base64: hashed as it is */
    snprintf(want, sizeof(want), "  bad: sha256:%s\n", hex);
    assert_non_null(strstr(t, want));
    assert_null(strstr(t, "hunter2"));
    assert_null(strstr(t, "aHVudGVyMg"));
    assert_null(strstr(t, "t0ken"));
    assert_non_null(strstr(t, "kubectl.kubernetes.io/last-applied-configuration: sha256:"));
    assert_non_null(strstr(t, "other: kept"));
    free(t);
    json_object_put(o);

    /* only core v1 Secrets: a ConfigMap's data stays readable */
    o = J("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c'},'data':{'k':'aGk='}}");
    ctl_cli__preview_clean(o);
    assert_string_equal(co_json_str(o, "data", "k", NULL), "aGk=");
    json_object_put(o);
}

static void test_ctl_cli_diff__text_has_sorted_keys(void **state)
{
    (void)state;
    struct json_object *o = J("{'b':1,'a':{'d':[2,1],'c':'x'}}");
    char *t = text_of(o);
    assert_string_equal(t, "a:\n  c: x\n  d:\n  - 2\n  - 1\nb: 1\n");
    free(t);
    json_object_put(o);
    t = ctl_cli__preview_text(NULL);
    assert_string_equal(t, "");
    free(t);
}

static void test_ctl_cli_diff__unified_diff(void **state)
{
    (void)state;
    char *d = NULL;
    assert_co_pass(ctl_cli__unified_diff(&d, "a\nb\n", "a\nb\n", "live/x", "applied/x", false));
    assert_null(d);
    assert_co_pass(
        ctl_cli__unified_diff(&d, "a\nb\nc\n", "a\nB\nc\n", "live/x", "applied/x", false));
    assert_string_equal(d, "--- live/x\n+++ applied/x\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
    free(d);
    /* a new object: everything added */
    assert_co_pass(ctl_cli__unified_diff(&d, "", "a\n", "live/x", "applied/x", false));
    assert_string_equal(d, "--- live/x\n+++ applied/x\n@@ -0,0 +1 @@\n+a\n");
    free(d);
    assert_co_pass(ctl_cli__unified_diff(&d, "a\n", "b\n", "live/x", "applied/x", true));
    assert_non_null(strstr(d, "\033[31m-a\033[0m\n"));
    assert_non_null(strstr(d, "\033[32m+b\033[0m\n"));
    assert_non_null(strstr(d, "\033[1m--- live/x\033[0m\n"));
    free(d);
}

/* Scopes: CRDs, APIServices and Namespaces cluster-scoped; x.io/v1 Foo not served yet (its CRD
 * is in the set); everything else namespaced. */
static int scope(int *namespaced, const char *api_version, const char *kind, void *payload)
{
    (void)payload;
    if (!strcmp(kind, "Foo")) {
        return co_error_set(CO_ENOMATCH, "no matches for kind \"%s\" in version \"%s\"", kind,
                            api_version);
    }
    *namespaced = strcmp(kind, "CustomResourceDefinition") != 0 &&
                  strcmp(kind, "APIService") != 0 && strcmp(kind, "Namespace") != 0;
    return 0;
}

static void prepare(ctl_objset *set, struct json_object *objects)
{
    ctl_defaults d = {0};
    d.adoption = CO_ADOPTION_IF_UNOWNED;
    d.update = CO_UPDATE_SSA_OVERRIDE;
    d.delete_policy = CO_DELETE_DELETE;
    d.reapply_ns = 3600000000000LL;
    d.namespace = "ns";
    d.component_digest = "";
    assert_co_pass(ctl_objset_prepare(set, objects, &d, scope, NULL));
}

static char *captured(void (*print)(FILE *out, void *payload), void *payload)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    print(f, payload);
    fclose(f);
    return text;
}

typedef struct waves_args {
    ctl_objset *set;
    ctl_inventory *inv;
} waves_args;

static void print_waves(FILE *out, void *payload)
{
    waves_args *a = payload;
    ctl_cli__plan_waves(out, a->set, a->inv, NULL, NULL, NULL);
}

static void print_obsolete(FILE *out, void *payload)
{
    ctl_cli__plan_deletions(out, payload, NULL, true);
}

static void print_all(FILE *out, void *payload)
{
    ctl_cli__plan_deletions(out, payload, NULL, false);
}

#define ORD(n) "'annotations':{'component-operator.cs.sap.com/apply-order':'" n "'}"

static void test_ctl_cli_diff__plan_prints_the_engines_waves(void **state)
{
    (void)state;
    struct json_object *objects =
        J("[{'apiVersion':'x.io/v1','kind':'Foo','metadata':{'name':'f'," ORD(
            "1") "}},"
                 "{'apiVersion':'apiregistration.k8s.io/v1','kind':'APIService','metadata':{'name':"
                 "'v1.g.io'," ORD(
                     "1") "},'spec':{'group':'g.io','version':'v1'}},"
                          "{'apiVersion':'apps/"
                          "v1','kind':'Deployment','metadata':{'name':'web'," ORD(
                              "1") "}},"
                                   "{'apiVersion':'apiextensions.k8s.io/"
                                   "v1','kind':'CustomResourceDefinition',"
                                   "'metadata':{'name':'foos.x.io'},'spec':{'group':'x.io','scope':"
                                   "'Namespaced',"
                                   "'names':{'kind':'Foo'}}},"
                                   "{'apiVersion':'batch/"
                                   "v1','kind':'Job','metadata':{'name':'migrate','annotations':{"
                                   "'component-operator.cs.sap.com/purge-order':'0',"
                                   "'component-operator.cs.sap.com/update-policy':'Recreate'}}},"
                                   "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm'}}"
                                   ","
                                   "{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'ns'}}"
                                   "]");
    ctl_objset set;
    prepare(&set, objects);
    ctl_inventory inv = {NULL, 0, 0};
    size_t added = 0;
    char *hashed = ctl_hash_owner_id(OWNER);
    assert_co_pass(ctl_inventory_update(&added, &inv, &set, hashed, NULL, NULL, NULL));
    ctl_objset_sort_for_apply(&set);
    waves_args a = {&set, &inv};
    char *t = captured(print_waves, &a);
    assert_string_equal(
        t, "wave 1 (apply-order 0)\n"
           "    - v1 Namespace ns  [planned] update=SsaOverride delete=Delete "
           "reconcile=OnObjectChange\n"
           "    - apiextensions.k8s.io/v1 CustomResourceDefinition foos.x.io  [planned] "
           "update=SsaOverride delete=Delete reconcile=OnObjectChange\n"
           "    - v1 ConfigMap ns/cm  [planned] update=SsaOverride delete=Delete "
           "reconcile=OnObjectChange\n"
           "    - batch/v1 Job ns/migrate  [planned] update=Recreate delete=Delete "
           "reconcile=OnObjectChange purge-order=0\n"
           "  purged once this wave is ready:\n"
           "    - batch/v1 Job ns/migrate (purge-order 0)\n"
           "wave 2 (apply-order 1)\n"
           "    - apps/v1 Deployment ns/web  [planned] update=SsaOverride delete=Delete "
           "reconcile=OnObjectChange\n"
           "  then, once the objects above are ready: APIServices\n"
           "    - apiregistration.k8s.io/v1 APIService v1.g.io  [planned] update=SsaOverride "
           "delete=Delete reconcile=OnObjectChange\n"
           "  then, once the objects above are ready: instances of managed types\n"
           "    - x.io/v1 Foo ns/f  [planned] update=SsaOverride delete=Delete "
           "reconcile=OnObjectChange\n");
    free(t);
    ctl_objset_dispose(&set);
    json_object_put(objects);

    /* the next render drops the ConfigMap and the Deployment: both scheduled for deletion, in
     * delete order (Deployment before ConfigMap: kind priorities) */
    objects = J("[{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'ns'}},"
                "{'apiVersion':'apiextensions.k8s.io/v1','kind':'CustomResourceDefinition',"
                "'metadata':{'name':'foos.x.io'},'spec':{'group':'x.io','scope':'Namespaced',"
                "'names':{'kind':'Foo'}}},"
                "{'apiVersion':'apiregistration.k8s.io/v1','kind':'APIService','metadata':{"
                "'name':'v1.g.io'," ORD(
                    "1") "},'spec':{'group':'g.io','version':'v1'}},"
                         "{'apiVersion':'x.io/v1','kind':'Foo','metadata':{'name':'f'," ORD(
                             "1") "}},"
                                  "{'apiVersion':'batch/"
                                  "v1','kind':'Job','metadata':{'name':'migrate','annotations':{"
                                  "'component-operator.cs.sap.com/purge-order':'0'}}}]");
    prepare(&set, objects);
    assert_co_pass(ctl_inventory_update(&added, &inv, &set, hashed, NULL, NULL, NULL));
    t = captured(print_obsolete, &inv);
    assert_string_equal(t, "  delete-order 0\n"
                           "    - apps/v1 Deployment ns/web  delete=Delete\n"
                           "    - v1 ConfigMap ns/cm  delete=Delete\n");
    free(t);
    /* on Component deletion: everything; by kind priority CRDs and APIServices first, the
     * Namespace last, but the instances of the CRD's type before it */
    t = captured(print_all, &inv);
    assert_string_equal(t, "  delete-order 0\n"
                           "    - x.io/v1 Foo ns/f  delete=Delete\n"
                           "    - apiregistration.k8s.io/v1 APIService v1.g.io  delete=Delete\n"
                           "    - apiextensions.k8s.io/v1 CustomResourceDefinition foos.x.io  "
                           "delete=Delete\n"
                           "    - apps/v1 Deployment ns/web  delete=Delete\n"
                           "    - batch/v1 Job ns/migrate  delete=Delete\n"
                           "    - v1 ConfigMap ns/cm  delete=Delete\n"
                           "    - v1 Namespace ns  delete=Delete\n");
    free(t);
    ctl_inventory empty = {NULL, 0, 0};
    t = captured(print_all, &empty);
    assert_string_equal(t, "  (none)\n");
    free(t);
    ctl_objset_dispose(&set);
    json_object_put(objects);
    ctl_inventory_dispose(&inv);
    free(hashed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_cli_diff__clean_leaves_out_server_fields_and_status),
        cmocka_unit_test(test_ctl_cli_diff__secret_values_become_hashes),
        cmocka_unit_test(test_ctl_cli_diff__text_has_sorted_keys),
        cmocka_unit_test(test_ctl_cli_diff__unified_diff),
        cmocka_unit_test(test_ctl_cli_diff__plan_prints_the_engines_waves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
