/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the pure half of the apply engine: validation and normalisation of rendered
 * objects, object digests, the inventory merge with its adoption and consistency checks, and the
 * orders of docs/behaviour.md, "Apply waves" and "Deletion waves". Scopes and live objects come
 * from small tables instead of an API server.
 */
#include <json-c/json.h>

#include "co/util/digest.h"
#include "co/json/json.h"
#include "controller/ctl_inventory.h"
#include "tests/support/test_support.h"

#define OWNER "cluster-uid/ns/comp"

/* JSON with ' for " (test readability). */
static struct json_object *J(const char *text)
{
    char *t = strdup(text);
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

/* Scopes: ConfigMap, Secret, Deployment, Job namespaced; Namespace, ClusterRole, CRD and
 * APIService cluster-scoped; everything else unknown. */
static int scope(int *namespaced, const char *api_version, const char *kind, void *payload)
{
    (void)payload;
    (void)api_version;
    static const char *const ns_kinds[] = {"ConfigMap", "Secret", "Deployment", "Job", "Service"};
    static const char *const cl_kinds[] = {"Namespace", "ClusterRole", "CustomResourceDefinition",
                                           "APIService"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(ns_kinds); i++) {
        if (!strcmp(kind, ns_kinds[i])) {
            *namespaced = 1;
            return 0;
        }
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(cl_kinds); i++) {
        if (!strcmp(kind, cl_kinds[i])) {
            *namespaced = 0;
            return 0;
        }
    }
    return co_error_set(CO_ENOMATCH, "no matches for kind \"%s\" in version \"%s\"", kind,
                        api_version);
}

/* scope() plus CronJob, Pod and x.io kinds, all namespaced. */
static int scope_with_x(int *namespaced, const char *api_version, const char *kind, void *payload)
{
    if (!strcmp(kind, "CronJob") || !strcmp(kind, "Pod") || !strncmp(api_version, "x.io/", 5)) {
        *namespaced = 1;
        return 0;
    }
    return scope(namespaced, api_version, kind, payload);
}

static ctl_defaults defaults(void)
{
    ctl_defaults d = {CO_COMPONENT_DEFAULT_ADOPTION,
                      CO_COMPONENT_DEFAULT_UPDATE,
                      CO_COMPONENT_DEFAULT_DELETE,
                      CO_COMPONENT_DEFAULT_REAPPLY_NS,
                      "place",
                      "cdigest"};
    return d;
}

static int prepare(ctl_objset *set, struct json_object *objects)
{
    ctl_defaults d = defaults();
    return ctl_objset_prepare(set, objects, &d, scope, NULL);
}

static void expect_prepare_error(const char *objects, int code, const char *msg)
{
    struct json_object *o = J(objects);
    ctl_objset set;
    assert_co_fail_with(code, prepare(&set, o));
    assert_contains(co_error_last(), msg);
    json_object_put(o);
}

static void test_ctl_inventory__generate_name_refused(void **state)
{
    (void)state;
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'generateName':'x-',"
                         "'namespace':'a'}}]",
                         CO_EINVALID,
                         "object v1 ConfigMap a/ specifies metadata.generateName (but dependent "
                         "objects are not allowed to do so)");
}

static void test_ctl_inventory__type_and_name_required(void **state)
{
    (void)state;
    expect_prepare_error("[{'kind':'ConfigMap','metadata':{'name':'x'}}]", CO_EINVALID,
                         "is missing type information");
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{}}]", CO_EINVALID,
                         "has no metadata.name");
    expect_prepare_error("[{'apiVersion':'a/b/c','kind':'X','metadata':{'name':'x'}}]", CO_EINVALID,
                         "malformed apiVersion a/b/c");
}

static void test_ctl_inventory__labels_and_annotations_must_be_strings(void **state)
{
    (void)state;
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x',"
                         "'labels':{'a':1}}}]",
                         CO_EINVALID, "metadata.labels.a: expected string, got number");
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x',"
                         "'annotations':{'a':true}}}]",
                         CO_EINVALID, "metadata.annotations.a: expected string, got boolean");
}

static void test_ctl_inventory__crd_of_unknown_version_refused(void **state)
{
    (void)state;
    expect_prepare_error("[{'apiVersion':'apiextensions.k8s.io/v1beta1','kind':"
                         "'CustomResourceDefinition','metadata':{'name':'x'}}]",
                         CO_EINVALID,
                         "scheme does not recognize type of object apiextensions.k8s.io/v1beta1 "
                         "CustomResourceDefinition x");
}

static void test_ctl_inventory__secret_string_data_folded(void **state)
{
    (void)state;
    struct json_object *o = J("[{'apiVersion':'v1','kind':'Secret','metadata':{'name':'s'},"
                              "'data':{'a':'YQ=='},'stringData':{'b':'hello','a':'x'}}]");
    ctl_objset set;
    assert_co_pass(prepare(&set, o));
    struct json_object *m = set.objs[0].manifest;
    assert_null(co_json_get(m, "stringData", NULL));
    assert_string_equal(json_object_get_string(co_json_get(m, "data", "b", NULL)), "aGVsbG8=");
    assert_string_equal(json_object_get_string(co_json_get(m, "data", "a", NULL)), "eA==");
    ctl_objset_dispose(&set);
    json_object_put(o);
}

static void test_ctl_inventory__owner_marks_stripped(void **state)
{
    (void)state;
    struct json_object *o =
        J("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c','labels':{"
          "'component-operator.cs.sap.com/owner-id':'evil','keep':'1'},'annotations':{"
          "'component-operator.cs.sap.com/owner-id':'x/y/z',"
          "'component-operator.cs.sap.com/digest':'d','other':'2'}}}]");
    ctl_objset set;
    assert_co_pass(prepare(&set, o));
    struct json_object *m = set.objs[0].manifest;
    assert_null(co_json_get(m, "metadata", "labels", CTL_LABEL_OWNER_ID, NULL));
    assert_null(co_json_get(m, "metadata", "annotations", CTL_ANN_OWNER_ID, NULL));
    assert_null(co_json_get(m, "metadata", "annotations", CTL_ANN_DIGEST, NULL));
    assert_non_null(co_json_get(m, "metadata", "labels", "keep", NULL));
    assert_non_null(co_json_get(m, "metadata", "annotations", "other", NULL));
    ctl_objset_dispose(&set);
    json_object_put(o);
}

static void test_ctl_inventory__server_metadata_dropped(void **state)
{
    (void)state;
    struct json_object *o =
        J("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c','resourceVersion':'7',"
          "'uid':'u-1','selfLink':'/x','creationTimestamp':null,'managedFields':[],'generation':"
          "3}}]");
    ctl_objset set;
    assert_co_pass(prepare(&set, o));
    struct json_object *meta = co_json_get(set.objs[0].manifest, "metadata", NULL);
    static const char *const gone[] = {"resourceVersion", "uid", "selfLink", "creationTimestamp",
                                       "managedFields"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(gone); i++) {
        assert_false(json_object_object_get_ex(meta, gone[i], NULL));
    }
    assert_string_equal(json_object_get_string(co_json_get(meta, "name", NULL)), "c");
    ctl_objset_dispose(&set);
    json_object_put(o);
}

static const char *port_protocol(struct json_object *ports, size_t i)
{
    return json_object_get_string(
        co_json_get(json_object_array_get_idx(ports, i), "protocol", NULL));
}

static void test_ctl_inventory__port_protocols_defaulted(void **state)
{
    (void)state;
    struct json_object *o =
        J("[{'apiVersion':'v1','kind':'Service','metadata':{'name':'s'},'spec':{'ports':[{'port':"
          "80},{'port':53,'protocol':'UDP'},'odd']}},"
          "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d'},'spec':{'template':"
          "{'spec':{'initContainers':[{'name':'i','ports':[{'containerPort':1}]}],'containers':[{"
          "'name':'c','ports':[{'containerPort':2},{'containerPort':3,'protocol':'SCTP'}]}]}}}},"
          "{'apiVersion':'batch/v1beta1','kind':'CronJob','metadata':{'name':'cj'},'spec':{"
          "'jobTemplate':{'spec':{'template':{'spec':{'containers':[{'name':'c','ports':[{"
          "'containerPort':4}]}]}}}}}},"
          "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':{'containers':[{'name':"
          "'c','ports':[{'containerPort':5}]}]}},"
          "{'apiVersion':'x.io/v1','kind':'Service','metadata':{'name':'foreign'},'spec':{'ports':"
          "[{'port':80}]}}]");
    ctl_objset set;
    ctl_defaults d = defaults();
    assert_co_pass(ctl_objset_prepare(&set, o, &d, scope_with_x, NULL));
    assert_int_equal(set.len, 5);
    for (size_t i = 0; i < set.len; i++) {
        struct json_object *m = set.objs[i].manifest;
        const char *name = set.objs[i].name;
        if (!strcmp(name, "s")) {
            struct json_object *ports = co_json_get(m, "spec", "ports", NULL);
            assert_string_equal(port_protocol(ports, 0), "TCP");
            assert_string_equal(port_protocol(ports, 1), "UDP");
            assert_string_equal(json_object_get_string(json_object_array_get_idx(ports, 2)), "odd");
        } else if (!strcmp(name, "d")) {
            struct json_object *spec = co_json_get(m, "spec", "template", "spec", NULL);
            struct json_object *c =
                json_object_array_get_idx(co_json_get(spec, "containers", NULL), 0);
            struct json_object *ic =
                json_object_array_get_idx(co_json_get(spec, "initContainers", NULL), 0);
            assert_string_equal(port_protocol(co_json_get(c, "ports", NULL), 0), "TCP");
            assert_string_equal(port_protocol(co_json_get(c, "ports", NULL), 1), "SCTP");
            assert_string_equal(port_protocol(co_json_get(ic, "ports", NULL), 0), "TCP");
        } else if (!strcmp(name, "cj")) {
            struct json_object *c =
                json_object_array_get_idx(co_json_get(m, "spec", "jobTemplate", "spec", "template",
                                                      "spec", "containers", NULL),
                                          0);
            assert_string_equal(port_protocol(co_json_get(c, "ports", NULL), 0), "TCP");
        } else if (!strcmp(name, "p")) {
            struct json_object *c =
                json_object_array_get_idx(co_json_get(m, "spec", "containers", NULL), 0);
            assert_string_equal(port_protocol(co_json_get(c, "ports", NULL), 0), "TCP");
        } else {
            /* not a built-in kind: untouched */
            assert_null(
                co_json_get(json_object_array_get_idx(co_json_get(m, "spec", "ports", NULL), 0),
                            "protocol", NULL));
        }
    }
    ctl_objset_dispose(&set);
    json_object_put(o);
}

static void test_ctl_inventory__scope_fix_up(void **state)
{
    (void)state;
    struct json_object *o =
        J("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c'}},"
          "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'d','namespace':'own'}},"
          "{'apiVersion':'rbac.authorization.k8s.io/v1','kind':'ClusterRole','metadata':{"
          "'name':'r','namespace':'wrong'}},"
          "{'apiVersion':'apiextensions.k8s.io/v1','kind':'CustomResourceDefinition',"
          "'metadata':{'name':'foos.x.io'},'spec':{'group':'x.io','scope':'Namespaced',"
          "'names':{'kind':'Foo'}}},"
          "{'apiVersion':'x.io/v1','kind':'Foo','metadata':{'name':'f'}},"
          "{'apiVersion':'apiregistration.k8s.io/v1','kind':'APIService','metadata':{"
          "'name':'v1.agg.io'},'spec':{'group':'agg.io','version':'v1'}},"
          "{'apiVersion':'agg.io/v1','kind':'Thing','metadata':{'name':'t','namespace':'q'}}]");
    ctl_objset set;
    assert_co_pass(prepare(&set, o));
    assert_string_equal(set.objs[0].namespace, "place");
    assert_string_equal(
        json_object_get_string(co_json_get(set.objs[0].manifest, "metadata", "namespace", NULL)),
        "place");
    assert_string_equal(set.objs[1].namespace, "own");
    assert_string_equal(set.objs[2].namespace, "");
    assert_null(co_json_get(set.objs[2].manifest, "metadata", "namespace", NULL));
    assert_string_equal(set.objs[4].namespace, "place"); /* scope from the CRD of the set */
    assert_string_equal(set.objs[6].namespace, "q");     /* type from the APIService: as is */
    assert_int_equal(set.objs[3].nmanaged_types, 1);
    assert_string_equal(set.objs[3].managed_types[0].group, "x.io");
    assert_string_equal(set.objs[3].managed_types[0].version, "*");
    assert_string_equal(set.objs[3].managed_types[0].kind, "Foo");
    assert_string_equal(set.objs[5].managed_types[0].version, "v1");
    assert_string_equal(set.objs[5].managed_types[0].kind, "*");
    ctl_objset_dispose(&set);
    json_object_put(o);

    expect_prepare_error("[{'apiVersion':'y.io/v1','kind':'Bar','metadata':{'name':'b'}}]",
                         CO_ENOMATCH,
                         "error getting rest mapping for object y.io/v1 Bar b: no matches for "
                         "kind \"Bar\"");
}

static void test_ctl_inventory__duplicates_refused(void **state)
{
    (void)state;
    /* the version does not tell objects apart; the placement namespace is applied first */
    expect_prepare_error("[{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d'}},"
                         "{'apiVersion':'apps/v1beta1','kind':'Deployment','metadata':{'name':'d',"
                         "'namespace':'place'}}]",
                         CO_EINVALID, "duplicate object apps/v1beta1 Deployment place/d");
}

static void test_ctl_inventory__annotations_validated(void **state)
{
    (void)state;
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
                         "'annotations':{'component-operator.cs.sap.com/update-policy':'merge'}}}]",
                         CO_EINVALID,
                         "error validating object v1 ConfigMap place/c: invalid value for "
                         "annotation component-operator.cs.sap.com/update-policy: merge");
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
                         "'annotations':{'component-operator.cs.sap.com/apply-order':'40000'}}}]",
                         CO_EINVALID, "value 40000 not in allowed range [-32768,32767]");
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
                         "'annotations':{'component-operator.cs.sap.com/delete-order':'1x'}}}]",
                         CO_EINVALID, "strconv.Atoi: parsing \"1x\": invalid syntax");
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
                         "'annotations':{'component-operator.cs.sap.com/reapply-interval':'1d'}}}]",
                         CO_EINVALID, "reapply-interval: 1d");
    expect_prepare_error("[{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'n',"
                         "'annotations':{'component-operator.cs.sap.com/purge-order':'1'}}}]",
                         CO_EINVALID, "namespaces must not define a purge order");
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
                         "'annotations':{'component-operator.cs.sap.com/participation':'x'}}}]",
                         CO_EINVALID, "participation: x");
}

static void test_ctl_inventory__policies_resolved(void **state)
{
    (void)state;
    struct json_object *o =
        J("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'a','annotations':{"
          "'component-operator.cs.sap.com/adoption-policy':'Always',"
          "'component-operator.cs.sap.com/update-policy':'ssaMerge',"
          "'component-operator.cs.sap.com/delete-policy':'orphan-on-apply',"
          "'component-operator.cs.sap.com/reconcile-policy':'Once',"
          "'component-operator.cs.sap.com/apply-order':'-3',"
          "'component-operator.cs.sap.com/purge-order':'+2',"
          "'component-operator.cs.sap.com/reapply-interval':'90s',"
          "'component-operator.cs.sap.com/participation':'Auxiliary'}}},"
          "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'b','annotations':{"
          "'component-operator.cs.sap.com/update-policy':'default'}}}]");
    ctl_objset set;
    ctl_defaults d = defaults();
    d.adoption = CO_ADOPTION_NEVER;
    d.update = CO_UPDATE_REPLACE;
    d.delete_policy = CO_DELETE_ORPHAN;
    d.reapply_ns = 5000 * (int64_t)1000000;
    assert_co_pass(ctl_objset_prepare(&set, o, &d, scope, NULL));
    const ctl_obj *a = &set.objs[0], *b = &set.objs[1];
    assert_int_equal(a->adoption, CO_ADOPTION_ALWAYS);
    assert_int_equal(a->update, CO_UPDATE_SSA_MERGE);
    assert_int_equal(a->delete_policy, CO_DELETE_ORPHAN_ON_APPLY);
    assert_int_equal(a->reconcile, CTL_RECONCILE_ONCE);
    assert_int_equal(a->apply_order, -3);
    assert_int_equal(a->purge_order, 2);
    assert_int_equal(a->reapply_ns, 90 * (int64_t)1000000000);
    assert_true(a->auxiliary);
    assert_string_equal(a->digest, CTL_DIGEST_ONCE);
    assert_int_equal(b->adoption, CO_ADOPTION_NEVER);
    assert_int_equal(b->update, CO_UPDATE_REPLACE);
    assert_int_equal(b->delete_policy, CO_DELETE_ORPHAN);
    assert_int_equal(b->purge_order, CTL_NO_PURGE);
    assert_int_equal(b->reapply_ns, 5000 * (int64_t)1000000);
    assert_false(b->auxiliary);
    ctl_objset_dispose(&set);
    json_object_put(o);
}

static void test_ctl_inventory__digest(void **state)
{
    (void)state;
    struct json_object *a = J("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'a',"
                              "'resourceVersion':'5','generation':3,'managedFields':[{}]},"
                              "'data':{'k':'v'}}");
    struct json_object *b = J("{'data':{'k':'v'},'kind':'ConfigMap','apiVersion':'v1',"
                              "'metadata':{'name':'a'}}");
    struct json_object *c = J("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'a'},"
                              "'data':{'k':'w'}}");
    char *da = ctl_object_digest(a, CTL_RECONCILE_ON_OBJECT_CHANGE, "x");
    char *db = ctl_object_digest(b, CTL_RECONCILE_ON_OBJECT_CHANGE, "x");
    char *dc = ctl_object_digest(c, CTL_RECONCILE_ON_OBJECT_CHANGE, "x");
    char *dd = ctl_object_digest(b, CTL_RECONCILE_ON_OBJECT_OR_COMPONENT_CHANGE, "comp");
    char *de = ctl_object_digest(b, CTL_RECONCILE_ONCE, "comp");
    assert_string_equal(da, db);
    assert_string_not_equal(da, dc);
    assert_int_equal(strlen(da), 64);
    char hex[CO_SHA256_HEX_LEN + 1];
    const char *canon = "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"v\"},\"kind\":\"ConfigMap\","
                        "\"metadata\":{\"name\":\"a\"}}";
    co_sha256_hex(hex, canon, strlen(canon));
    assert_string_equal(da, hex);
    char *want = co_xasprintf("%s@comp", db);
    assert_string_equal(dd, want);
    assert_string_equal(de, "__once__");
    free(want);
    free(da);
    free(db);
    free(dc);
    free(dd);
    free(de);
    json_object_put(a);
    json_object_put(b);
    json_object_put(c);
}

static void test_ctl_inventory__owner_id_hash(void **state)
{
    (void)state;
    char *h = ctl_hash_owner_id("abc");
    /* sha256("abc") = ba7816bf..., base32 lower without padding */
    assert_string_equal(h, "xj4bnp4pahh6uqkbidpf3lrceoyagyndsylxvhfucd7wd4qacwwq");
    free(h);
}

/* ---- inventory merge ------------------------------------------------------------------------ */

typedef struct live_table {
    const char *name;
    const char *json;
} live_table;

static int live(struct json_object **out, const ctl_obj *o, void *payload)
{
    const live_table *t = payload;
    *out = NULL;
    for (; t && t->name; t++) {
        if (!strcmp(t->name, o->name)) {
            *out = J(t->json);
        }
    }
    return 0;
}

static void
update(ctl_inventory *inv, const char *objects, const live_table *table, size_t *added, int want)
{
    struct json_object *o = J(objects);
    ctl_objset set;
    assert_co_pass(prepare(&set, o));
    char *h = ctl_hash_owner_id(OWNER);
    co_error_clear();
    int rc = ctl_inventory_update(added, inv, &set, h, live, NULL, (void *)table);
    if (rc != want) {
        fail_msg("ctl_inventory_update returned %d, expected %d: %s", rc, want, co_error_last());
    }
    free(h);
    ctl_objset_dispose(&set);
    json_object_put(o);
}

static void test_ctl_inventory__new_items_added_then_updated(void **state)
{
    (void)state;
    ctl_inventory inv = {NULL, 0, 0};
    size_t added = 0;
    const char *v1 = "[{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d'}},"
                     "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c'}}]";
    update(&inv, v1, NULL, &added, 0);
    assert_int_equal(added, 2);
    assert_int_equal(inv.len, 2);
    /* sorted for deletion: ConfigMap (priority 2) after Deployment (0) */
    assert_string_equal(inv.items[0].kind, "Deployment");
    assert_string_equal(inv.items[1].kind, "ConfigMap");
    assert_int_equal(inv.items[0].phase, CTL_PHASE_SCHEDULED_FOR_APPLICATION);
    assert_string_equal(inv.items[0].status, "InProgress");
    assert_string_equal(inv.items[0].namespace, "place");
    assert_int_equal(inv.items[0].update, CO_UPDATE_SSA_OVERRIDE);

    /* same objects: nothing added, phase kept */
    inv.items[0].phase = CTL_PHASE_READY;
    update(&inv, v1, NULL, &added, 0);
    assert_int_equal(added, 0);
    assert_int_equal(inv.items[0].phase, CTL_PHASE_READY);

    /* changed Deployment, ConfigMap dropped; the version changes in place */
    const char *v2 = "[{'apiVersion':'apps/v2','kind':'Deployment','metadata':{'name':'d'},"
                     "'spec':{'replicas':2}}]";
    update(&inv, v2, NULL, &added, 0);
    assert_int_equal(added, 0);
    assert_int_equal(inv.len, 2);
    assert_string_equal(inv.items[0].version, "v2");
    assert_int_equal(inv.items[0].phase, CTL_PHASE_SCHEDULED_FOR_APPLICATION);
    assert_int_equal(inv.items[1].phase, CTL_PHASE_SCHEDULED_FOR_DELETION);
    assert_string_equal(inv.items[1].status, "Terminating");
    assert_string_equal(inv.items[1].digest, "");

    /* round trip through JSON */
    struct json_object *arr = json_object_new_array();
    ctl_inventory_write(&inv, arr);
    ctl_inventory back;
    assert_co_pass(ctl_inventory_read(&back, arr));
    assert_int_equal(back.len, 2);
    assert_string_equal(back.items[0].digest, inv.items[0].digest);
    assert_int_equal(back.items[1].phase, CTL_PHASE_SCHEDULED_FOR_DELETION);
    assert_string_equal(back.items[0].namespace, "place");
    struct json_object *again = json_object_new_array();
    ctl_inventory_write(&back, again);
    assert_true(co_json_equal(arr, again));
    assert_string_equal(json_object_get_string(co_json_get(arr, "0", "updatePolicy", NULL)),
                        "SsaOverride");
    json_object_put(again);
    json_object_put(arr);
    ctl_inventory_dispose(&back);
    ctl_inventory_dispose(&inv);
}

static void test_ctl_inventory__adoption_policies(void **state)
{
    (void)state;
    char *h = ctl_hash_owner_id(OWNER);
    char *ours = co_xasprintf("{'metadata':{'labels':{'component-operator.cs.sap.com/owner-id':"
                              "'%s'}}}",
                              h);
    const live_table table[] = {
        {"unowned", "{'metadata':{'labels':{'a':'b'}}}"},
        {"foreign", "{'metadata':{'labels':{'component-operator.cs.sap.com/owner-id':'zzz'},"
                    "'annotations':{'component-operator.cs.sap.com/owner-id':'c/other/x'}}}"},
        {"ours", ours},
        {NULL, NULL},
    };
    size_t added;
    static const struct {
        const char *name;
        const char *policy;
        int want;
        const char *msg;
    } cases[] = {
        {"unowned", "never", CO_ECONFLICT,
         "found existing object v1 ConfigMap place/unowned without owner"},
        {"unowned", "if-unowned", 0, NULL},
        {"unowned", "always", 0, NULL},
        {"foreign", "if-unowned", CO_ECONFLICT,
         "owner conflict; object v1 ConfigMap place/foreign is owned by c/other/x"},
        {"foreign", "never", CO_ECONFLICT, "owner conflict"},
        {"foreign", "always", 0, NULL},
        {"ours", "never", 0, NULL},
        {"absent", "never", 0, NULL},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        ctl_inventory inv = {NULL, 0, 0};
        char *objs = co_xasprintf("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':"
                                  "'%s','annotations':{'component-operator.cs.sap.com/"
                                  "adoption-policy':'%s'}}}]",
                                  cases[i].name, cases[i].policy);
        update(&inv, objs, table, &added, cases[i].want);
        if (cases[i].msg) {
            assert_contains(co_error_last(), cases[i].msg);
            assert_int_equal(inv.len, 0);
        } else {
            assert_int_equal(inv.len, 1);
        }
        free(objs);
        ctl_inventory_dispose(&inv);
    }
    /* an item already in the inventory is not re-checked */
    ctl_inventory inv = {NULL, 0, 0};
    update(&inv,
           "[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'foreign','annotations':{"
           "'component-operator.cs.sap.com/adoption-policy':'always'}}}]",
           table, &added, 0);
    update(&inv, "[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'foreign'}}]", table,
           &added, 0);
    assert_int_equal(added, 0);
    ctl_inventory_dispose(&inv);
    free(ours);
    free(h);
}

static void test_ctl_inventory__consistency_checks(void **state)
{
    (void)state;
    ctl_inventory inv = {NULL, 0, 0};
    size_t added;
    const char *crd = "{'apiVersion':'apiextensions.k8s.io/v1','kind':'CustomResourceDefinition',"
                      "'metadata':{'name':'foos.x.io','annotations':{"
                      "'component-operator.cs.sap.com/apply-order':'2'}},'spec':{'group':"
                      "'x.io','scope':'Namespaced','names':{'kind':'Foo'}}}";
    char *objs = co_xasprintf("[%s,{'apiVersion':'x.io/v1','kind':'Foo','metadata':{'name':"
                              "'f'}}]",
                              crd);
    update(&inv, objs, NULL, &added, CO_EINVALID);
    assert_contains(co_error_last(), "error validating object set (x.io/v1 Foo place/f): managed "
                                     "instance must not have an apply order lesser than the one "
                                     "of its type");
    free(objs);

    objs = co_xasprintf("[%s,{'apiVersion':'x.io/v1','kind':'Foo','metadata':{'name':'f',"
                        "'annotations':{'component-operator.cs.sap.com/apply-order':'2',"
                        "'component-operator.cs.sap.com/delete-order':'1'}}}]",
                        crd);
    update(&inv, objs, NULL, &added, CO_EINVALID);
    assert_contains(co_error_last(), "delete order greater than the one of its type");
    free(objs);

    /* the namespace leaves while an object stays in it */
    update(&inv,
           "[{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'n'}},{'apiVersion':'v1',"
           "'kind':'ConfigMap','metadata':{'name':'c','namespace':'n'}}]",
           NULL, &added, 0);
    update(&inv, "[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c','namespace':'n'}}]",
           NULL, &added, CO_EINVALID);
    assert_contains(co_error_last(),
                    "namespaced object is not being deleted, but the namespace is");
    assert_int_equal(inv.len, 2); /* unchanged on failure */
    assert_int_equal(inv.items[0].phase, CTL_PHASE_SCHEDULED_FOR_APPLICATION);
    ctl_inventory_dispose(&inv);
}

static void test_ctl_inventory__apply_and_delete_order(void **state)
{
    (void)state;
    struct json_object *o =
        J("[{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d1'}},"
          "{'apiVersion':'apiregistration.k8s.io/v1','kind':'APIService','metadata':{'name':'a'},"
          "'spec':{'group':'g','version':'v1'}},"
          "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'late','annotations':{"
          "'component-operator.cs.sap.com/apply-order':'1'}}},"
          "{'apiVersion':'v1','kind':'Secret','metadata':{'name':'s'}},"
          "{'apiVersion':'rbac.authorization.k8s.io/v1','kind':'ClusterRole','metadata':{'name':"
          "'r'}},"
          "{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'n'}},"
          "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d2'}},"
          "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'early','annotations':{"
          "'component-operator.cs.sap.com/apply-order':'-1'}}}]");
    ctl_objset set;
    assert_co_pass(prepare(&set, o));
    ctl_objset_sort_for_apply(&set);
    static const char *const want[] = {"early", "n", "r", "s", "d1", "d2", "a", "late"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(want); i++) {
        assert_string_equal(set.objs[i].name, want[i]);
    }
    ctl_inventory inv = {NULL, 0, 0};
    size_t added;
    char *h = ctl_hash_owner_id(OWNER);
    ctl_objset_sort_for_apply(&set); /* idempotent */
    assert_co_pass(ctl_inventory_update(&added, &inv, &set, h, live, NULL, NULL));
    /* delete order: all at 0; APIService -1, Deployments/ClusterRole 0, ConfigMaps/Secret 2,
     * Namespace 3; ties keep their order */
    static const char *const want_del[] = {"a", "r", "d1", "d2", "early", "s", "late", "n"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(want_del); i++) {
        assert_string_equal(inv.items[i].name, want_del[i]);
    }
    free(h);
    ctl_inventory_dispose(&inv);
    ctl_objset_dispose(&set);
    json_object_put(o);

    assert_int_equal(ctl_apply_priority("", "Namespace"), -4);
    assert_int_equal(ctl_apply_priority("rbac.authorization.k8s.io", "RoleBinding"), -1);
    assert_int_equal(ctl_delete_priority("storage.k8s.io", "StorageClass"), 4);
    assert_int_equal(ctl_delete_priority("apps", "Deployment"), 0);
}

static void test_ctl_inventory__managed_instances(void **state)
{
    (void)state;
    char g1[] = "*.crossplane.io", k1[] = "*", g2[] = "x.io", k2[] = "Bar";
    co_type_info ts[] = {{g1, k1}, {g2, k2}};
    size_t nts = CO_ARRAY_SIZE(ts);
    ctl_inventory inv = {NULL, 0, 0};
    assert_true(ctl_is_managed_instance(ts, nts, &inv, "pkg.crossplane.io", "v1", "Provider"));
    assert_false(ctl_is_managed_instance(ts, nts, &inv, "crossplane.io", "v1", "Provider"));
    assert_true(ctl_is_managed_instance(ts, nts, &inv, "x.io", "v1", "Bar"));
    assert_false(ctl_is_managed_instance(ts, nts, &inv, "x.io", "v1", "Foo"));
    size_t added;
    update(&inv,
           "[{'apiVersion':'apiextensions.k8s.io/v1','kind':'CustomResourceDefinition',"
           "'metadata':{'name':'foos.x.io'},'spec':{'group':'x.io','scope':'Namespaced',"
           "'names':{'kind':'Foo'}}}]",
           NULL, &added, 0);
    assert_true(ctl_is_managed_instance(ts, nts, &inv, "x.io", "v9", "Foo"));
    assert_false(ctl_is_managed_instance(NULL, 0, &inv, "x.io", "v1", "Bar"));
    assert_true(ctl_group_matches("*", "anything"));
    assert_true(ctl_group_matches("a.b", "a.b"));
    assert_false(ctl_group_matches("a.b", "x.a.b"));
    assert_true(ctl_namespace_used(&inv, "") == true);
    assert_false(ctl_namespace_used(&inv, "zz"));
    ctl_inventory_dispose(&inv);
}

/* docs/lifecycle.md, "Object modes" and "Guards": the annotations are parsed with the object,
 * the mode travels into the inventory and back, and only non-managed items store one. */
static void test_ctl_inventory__modes_round_trip(void **state)
{
    (void)state;
    const live_table table[] = {
        {"foreign", "{'metadata':{'labels':{'component-operator.cs.sap.com/owner-id':'zzz'},"
                    "'annotations':{'component-operator.cs.sap.com/owner-id':'c/other/x'}}}"},
        {NULL, NULL},
    };
    ctl_inventory inv = {NULL, 0, 0};
    size_t added = 0;
    /* a read-only object may be anyone's: no adoption check */
    const char *objs =
        "[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'foreign','annotations':{"
        "'component-operator.cs.sap.com/mode':'read-only'}}},"
        "{'apiVersion':'v1','kind':'Secret','metadata':{'name':'old','annotations':{"
        "'component-operator.cs.sap.com/mode':'delete-only'}}},"
        "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d'}}]";
    update(&inv, objs, table, &added, 0);
    assert_int_equal(added, 3);
    for (size_t i = 0; i < inv.len; i++) {
        const ctl_item *it = &inv.items[i];
        co_object_mode want = !strcmp(it->name, "foreign") ? CO_MODE_READ_ONLY
                              : !strcmp(it->name, "old")   ? CO_MODE_DELETE_ONLY
                                                           : CO_MODE_MANAGED;
        assert_int_equal(it->mode, want);
    }
    struct json_object *arr = json_object_new_array();
    ctl_inventory_write(&inv, arr);
    size_t with_mode = 0;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        struct json_object *it = json_object_array_get_idx(arr, i);
        const char *name = co_json_str(it, "name", NULL);
        const char *mode = co_json_str(it, "mode", NULL);
        if (!strcmp(name, "d")) {
            assert_null(mode);
        } else {
            assert_non_null(mode);
            assert_string_equal(mode, !strcmp(name, "old") ? "delete-only" : "read-only");
            with_mode++;
        }
    }
    assert_int_equal(with_mode, 2);
    ctl_inventory back;
    assert_co_pass(ctl_inventory_read(&back, arr));
    assert_int_equal(back.len, inv.len);
    for (size_t i = 0; i < inv.len; i++) {
        assert_int_equal(back.items[i].mode, inv.items[i].mode);
    }
    struct json_object *again = json_object_new_array();
    ctl_inventory_write(&back, again);
    assert_true(co_json_equal(arr, again));
    json_object_put(again);
    ctl_inventory_dispose(&back);

    /* a mode change reschedules the item (its digest covers the annotation) */
    for (size_t i = 0; i < inv.len; i++) {
        inv.items[i].phase = CTL_PHASE_READY;
    }
    update(&inv,
           "[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'foreign','annotations':{"
           "'component-operator.cs.sap.com/mode':'read-only'}}},"
           "{'apiVersion':'v1','kind':'Secret','metadata':{'name':'old'}},"
           "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d'}}]",
           table, &added, 0);
    for (size_t i = 0; i < inv.len; i++) {
        const ctl_item *it = &inv.items[i];
        bool changed = !strcmp(it->name, "old");
        assert_int_equal(it->phase,
                         changed ? CTL_PHASE_SCHEDULED_FOR_APPLICATION : CTL_PHASE_READY);
        assert_int_equal(it->mode,
                         !strcmp(it->name, "foreign") ? CO_MODE_READ_ONLY : CO_MODE_MANAGED);
    }
    json_object_put(arr);
    ctl_inventory_dispose(&inv);

    /* an unknown stored mode is refused with its field */
    struct json_object *a =
        J("[{'version':'v1','kind':'ConfigMap','name':'x','mode':'sometimes'}]");
    assert_co_fail_with(CO_EINVALID, ctl_inventory_read(&back, a));
    assert_contains(co_error_last(), "status.inventory[0].mode");
    json_object_put(a);
}

static void test_ctl_inventory__mode_and_guard_annotations(void **state)
{
    (void)state;
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
                         "'annotations':{'component-operator.cs.sap.com/mode':'readonly'}}}]",
                         CO_EINVALID,
                         "error validating object v1 ConfigMap place/c: invalid value for "
                         "annotation component-operator.cs.sap.com/mode: ");
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
                         "'annotations':{'component-operator.cs.sap.com/guard':'v1 ConfigMap'}}}]",
                         CO_EINVALID,
                         "error validating object v1 ConfigMap place/c: invalid value for "
                         "annotation component-operator.cs.sap.com/guard: ");
    struct json_object *o =
        J("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'a','annotations':{"
          "'component-operator.cs.sap.com/guard':'apps/v1 Deployment db/pg Available'}}},"
          "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'b','annotations':{"
          "'component-operator.cs.sap.com/guard':'v1 ConfigMap settings'}}},"
          "{'apiVersion':'v1','kind':'ClusterRole','metadata':{'name':'r','annotations':{"
          "'component-operator.cs.sap.com/guard':'v1 ConfigMap settings'}}},"
          "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'plain'}}]");
    ctl_objset set;
    assert_co_pass(prepare(&set, o));
    assert_int_equal(set.len, 4);
    assert_string_equal(set.objs[0].guard.api_version, "apps/v1");
    assert_string_equal(set.objs[0].guard.kind, "Deployment");
    assert_string_equal(set.objs[0].guard.ns, "db");
    assert_string_equal(set.objs[0].guard.name, "pg");
    assert_string_equal(set.objs[0].guard.condition_type, "Available");
    /* without a namespace: the guarded object's */
    assert_string_equal(set.objs[1].guard.ns, "place");
    assert_string_equal(set.objs[1].guard.condition_type, "Ready");
    /* a cluster-scoped object has none to lend */
    assert_null(set.objs[2].guard.ns);
    assert_null(set.objs[3].guard.name);
    assert_int_equal(set.objs[3].mode, CO_MODE_MANAGED);
    ctl_objset_dispose(&set);
    json_object_put(o);
}

/* docs/drift.md: the drift annotations are validated with the other per-object annotations
 * (the error names the object and the annotation); an item's drift text is stored and read
 * back, and a new manifest clears it. */
static void test_ctl_inventory__drift_annotations_and_item_text(void **state)
{
    (void)state;
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
                         "'annotations':{'component-operator.cs.sap.com/drift-policy':'Fix'}}}]",
                         CO_EINVALID,
                         "error validating object v1 ConfigMap place/c: invalid value for "
                         "annotation component-operator.cs.sap.com/drift-policy: Fix: must be "
                         "Correct, Warn or Ignore");
    expect_prepare_error("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
                         "'annotations':{'component-operator.cs.sap.com/ignore-fields':"
                         "'/spec/replicas'}}}]",
                         CO_EINVALID,
                         "error validating object v1 ConfigMap place/c: invalid value for "
                         "annotation component-operator.cs.sap.com/ignore-fields: ");
    struct json_object *o =
        J("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'a','annotations':{"
          "'component-operator.cs.sap.com/drift-policy':'Warn',"
          "'component-operator.cs.sap.com/ignore-fields':'[\\'/data/x\\']'}}},"
          "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'b'}}]");
    ctl_objset set;
    assert_co_pass(prepare(&set, o));
    assert_int_equal(set.objs[0].drift, CO_DRIFT_WARN);
    assert_int_equal(set.objs[0].ignore.n, 1);
    assert_string_equal(set.objs[0].ignore.ptrs[0].tokens[1], "x");
    assert_int_equal(set.objs[1].drift, CO_DRIFT_CORRECT);
    assert_int_equal(set.objs[1].ignore.n, 0);
    ctl_objset_dispose(&set);
    json_object_put(o);

    const live_table table[] = {{NULL, NULL}};
    ctl_inventory inv = {NULL, 0, 0};
    size_t added = 0;
    const char *objs = "[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'a'}},"
                       "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'b'}}]";
    update(&inv, objs, table, &added, 0);
    for (size_t i = 0; i < inv.len; i++) {
        inv.items[i].phase = CTL_PHASE_READY;
        inv.items[i].drift = co_xstrdup("/data/greeting");
    }
    struct json_object *arr = json_object_new_array();
    ctl_inventory_write(&inv, arr);
    assert_string_equal(co_json_str(json_object_array_get_idx(arr, 0), "drift", NULL),
                        "/data/greeting");
    ctl_inventory back;
    assert_co_pass(ctl_inventory_read(&back, arr));
    assert_string_equal(back.items[1].drift, "/data/greeting");
    ctl_inventory_dispose(&back);
    json_object_put(arr);
    /* b's manifest changes: compared afresh; a keeps what was found */
    update(&inv,
           "[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'a'}},"
           "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'b'},'data':{'k':'v'}}]",
           table, &added, 0);
    for (size_t i = 0; i < inv.len; i++) {
        if (!strcmp(inv.items[i].name, "a")) {
            assert_string_equal(inv.items[i].drift, "/data/greeting");
        } else {
            assert_null(inv.items[i].drift);
        }
    }
    arr = json_object_new_array();
    ctl_inventory_write(&inv, arr);
    size_t with = 0;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        with += co_json_get(json_object_array_get_idx(arr, i), "drift", NULL) != NULL;
    }
    assert_int_equal(with, 1);
    json_object_put(arr);
    ctl_inventory_dispose(&inv);
}

static void test_ctl_inventory__bad_inventory_refused(void **state)
{
    (void)state;
    struct json_object *a = J("[{'version':'v1','kind':'ConfigMap','name':'x','phase':'Bogus'}]");
    ctl_inventory inv;
    assert_co_fail_with(CO_EINVALID, ctl_inventory_read(&inv, a));
    assert_contains(co_error_last(), "status.inventory[0].phase: unknown value Bogus");
    json_object_put(a);
    a = J("[{'kind':'ConfigMap','name':'x'}]");
    assert_co_fail_with(CO_EINVALID, ctl_inventory_read(&inv, a));
    assert_contains(co_error_last(), "status.inventory[0].version: not found");
    json_object_put(a);
    a = J("[{'version':'v1','kind':'ConfigMap','name':'x','lastAppliedAt':'yesterday'}]");
    assert_co_fail_with(CO_EINVALID, ctl_inventory_read(&inv, a));
    json_object_put(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_inventory__generate_name_refused),
        cmocka_unit_test(test_ctl_inventory__type_and_name_required),
        cmocka_unit_test(test_ctl_inventory__labels_and_annotations_must_be_strings),
        cmocka_unit_test(test_ctl_inventory__crd_of_unknown_version_refused),
        cmocka_unit_test(test_ctl_inventory__secret_string_data_folded),
        cmocka_unit_test(test_ctl_inventory__owner_marks_stripped),
        cmocka_unit_test(test_ctl_inventory__server_metadata_dropped),
        cmocka_unit_test(test_ctl_inventory__port_protocols_defaulted),
        cmocka_unit_test(test_ctl_inventory__scope_fix_up),
        cmocka_unit_test(test_ctl_inventory__duplicates_refused),
        cmocka_unit_test(test_ctl_inventory__annotations_validated),
        cmocka_unit_test(test_ctl_inventory__policies_resolved),
        cmocka_unit_test(test_ctl_inventory__digest),
        cmocka_unit_test(test_ctl_inventory__owner_id_hash),
        cmocka_unit_test(test_ctl_inventory__new_items_added_then_updated),
        cmocka_unit_test(test_ctl_inventory__adoption_policies),
        cmocka_unit_test(test_ctl_inventory__consistency_checks),
        cmocka_unit_test(test_ctl_inventory__apply_and_delete_order),
        cmocka_unit_test(test_ctl_inventory__managed_instances),
        cmocka_unit_test(test_ctl_inventory__bad_inventory_refused),
        cmocka_unit_test(test_ctl_inventory__modes_round_trip),
        cmocka_unit_test(test_ctl_inventory__mode_and_guard_annotations),
        cmocka_unit_test(test_ctl_inventory__drift_annotations_and_item_text),
    };
    return cmocka_run_group_tests_name("ctl_inventory", tests, NULL, NULL);
}
