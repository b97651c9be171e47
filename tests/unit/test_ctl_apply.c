/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the apply engine over the fake Kubernetes transport, for what the test control
 * plane cannot show or shows only indirectly: the exact managedFields rewrite of the SsaOverride
 * and SsaMerge takeover (docs/behaviour.md, "Create, update and delete"), and the staging of
 * APIServices and of instances of managed types within a wave (docs/behaviour.md, "Apply
 * waves"), which needs an aggregated API server
 * the test control plane does not have.
 */
#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_inventory.h"
#include "tests/support/fake_kube.h"
#include "tests/support/test_support.h"

#define OWNER "cluster/ns/comp"

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

/* Single quotes to double quotes, for bodies registered with the fake. */
static char *Q(const char *text)
{
    char *t = co_xstrdup(text);
    for (char *p = t; *p; p++) {
        if (*p == '\'') {
            *p = '"';
        }
    }
    return t;
}

static void on(co_fake_kube *f, const char *method, const char *path, int status, const char *body)
{
    char *b = Q(body);
    co_fake_kube_json(f, method, path, status, b);
    free(b);
}

/* A fake with discovery and the placement namespace "ns". */
static co_fake_kube *fake_new(void)
{
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    on(f, "GET", "/api/v1/namespaces/ns$", 200,
       "{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'ns'}}");
    return f;
}

/* The PATCH bodies sent to @p needle, in order (new references in a json array). */
static struct json_object *patches(co_fake_kube *f, const char *needle)
{
    struct json_object *out = json_object_new_array();
    for (size_t i = 0; i < co_fake_kube_ncalls(f); i++) {
        co_fake_call c = co_fake_kube_call(f, i);
        if (!strcmp(c.method, "PATCH") && strstr(c.path, needle)) {
            struct json_object *b = NULL;
            assert_co_pass(co_json_parse(&b, c.body, strlen(c.body)));
            json_object_array_add(out, b);
        }
        co_fake_call_dispose(&c);
    }
    return out;
}

#define LIVE_CONFIGMAP                                                                             \
    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x','namespace':'ns',"               \
    "'resourceVersion':'5','labels':{'component-operator.cs.sap.com/owner-id':'%s'},"              \
    "'annotations':{'component-operator.cs.sap.com/digest':'old'},'managedFields':["               \
    "{'manager':'kubectl-client-side-apply','operation':'Update','apiVersion':'v1',"               \
    "'fieldsType':'FieldsV1','fieldsV1':{'f:data':{'f:extra':{}}}},"                               \
    "{'manager':'component-operator.cs.sap.com','operation':'Update','apiVersion':'v1',"           \
    "'fieldsType':'FieldsV1','fieldsV1':{'f:data':{'f:a':{}},'f:metadata':{'f:labels':{}}}},"      \
    "{'manager':'helm','operation':'Update','apiVersion':'v1','fieldsType':'FieldsV1',"            \
    "'fieldsV1':{'f:data':{'f:h':{}}}},"                                                           \
    "{'manager':'kubectl-edit','operation':'Update','apiVersion':'v1','subresource':'status',"     \
    "'fieldsType':'FieldsV1','fieldsV1':{'f:status':{}}}]},'data':{'a':'1','extra':'2'}}"

static void update_with_policy(co_update_policy policy, struct json_object **patches_out)
{
    co_fake_kube *f = fake_new();
    co_kube_client *c = co_fake_kube_client(f);
    char *hashed = ctl_hash_owner_id(OWNER);
    char *live = co_xasprintf(LIVE_CONFIGMAP, hashed);
    on(f, "GET", "/api/v1/namespaces/ns/configmaps/x", 200, live);
    on(f, "PATCH", "/api/v1/namespaces/ns/configmaps/x", 200,
       "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x','namespace':'ns',"
       "'resourceVersion':'6'}}");
    struct json_object *inv =
        J("[{'group':'','version':'v1','kind':'ConfigMap','namespace':'ns','name':'x',"
          "'adoptionPolicy':'IfUnowned','reconcilePolicy':'OnObjectChange','updatePolicy':"
          "'SsaOverride','deletePolicy':'Delete','applyOrder':0,'deleteOrder':0,'digest':'old',"
          "'phase':'Ready','status':'Current','lastAppliedAt':'2024-01-01T00:00:00Z'}]");
    struct json_object *objs = J("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x'},"
                                 "'data':{'a':'1'}}]");
    ctl_apply_opts o = {0};
    o.target = c;
    o.owner_id = OWNER;
    o.namespace = "ns";
    o.update_policy = policy;
    bool done = true;
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    assert_false(done);
    assert_string_equal(json_object_get_string(co_json_get(inv, "0", "phase", NULL)), "Updating");
    *patches_out = patches(f, "/configmaps/x");
    json_object_put(objs);
    json_object_put(inv);
    free(live);
    free(hashed);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static struct json_object *entry_of(struct json_object *mf, const char *manager, const char *sub)
{
    for (size_t i = 0; i < json_object_array_length(mf); i++) {
        struct json_object *e = json_object_array_get_idx(mf, i);
        struct json_object *s = co_json_get(e, "subresource", NULL);
        if (!strcmp(json_object_get_string(co_json_get(e, "manager", NULL)), manager) &&
            (sub ? s && !strcmp(json_object_get_string(s), sub) : !s)) {
            return e;
        }
    }
    return NULL;
}

static void test_ctl_apply__ssa_override_takes_over_kubectl_and_own_update_fields(void **state)
{
    (void)state;
    struct json_object *p = NULL;
    update_with_policy(CO_UPDATE_SSA_OVERRIDE, &p);
    assert_int_equal(json_object_array_length(p), 2); /* managedFields patch, then the apply */

    struct json_object *jp = json_object_array_get_idx(p, 0);
    assert_string_equal(json_object_get_string(co_json_get(jp, "0", "path", NULL)),
                        "/metadata/managedFields");
    assert_string_equal(json_object_get_string(co_json_get(jp, "1", "path", NULL)),
                        "/metadata/resourceVersion");
    assert_string_equal(json_object_get_string(co_json_get(jp, "1", "value", NULL)), "5");
    struct json_object *mf = co_json_get(jp, "0", "value", NULL);
    assert_int_equal(json_object_array_length(mf), 3);
    struct json_object *ours = entry_of(mf, CTL_FIELD_MANAGER, NULL);
    assert_non_null(ours);
    assert_string_equal(json_object_get_string(co_json_get(ours, "operation", NULL)), "Apply");
    struct json_object *want = J("{'f:data':{'f:extra':{},'f:a':{}},'f:metadata':{'f:labels':{}}}");
    assert_true(co_json_equal(co_json_get(ours, "fieldsV1", NULL), want));
    json_object_put(want);
    assert_non_null(entry_of(mf, "helm", NULL));                  /* helm is not reclaimed */
    assert_non_null(entry_of(mf, "kubectl-edit", "status"));      /* nor subresource entries */
    assert_null(entry_of(mf, "kubectl-client-side-apply", NULL)); /* merged away */

    struct json_object *apply = json_object_array_get_idx(p, 1);
    assert_string_equal(
        json_object_get_string(co_json_get(apply, "metadata", "resourceVersion", NULL)), "6");
    assert_null(co_json_get(apply, "data", "extra", NULL));
    assert_string_equal(json_object_get_string(
                            co_json_get(apply, "metadata", "annotations", CTL_ANN_OWNER_ID, NULL)),
                        OWNER);
    json_object_put(p);
}

static void test_ctl_apply__ssa_merge_reclaims_only_own_update_fields(void **state)
{
    (void)state;
    struct json_object *p = NULL;
    update_with_policy(CO_UPDATE_SSA_MERGE, &p);
    assert_int_equal(json_object_array_length(p), 2);
    struct json_object *mf = co_json_get(json_object_array_get_idx(p, 0), "0", "value", NULL);
    assert_int_equal(json_object_array_length(mf), 4);
    assert_non_null(entry_of(mf, "kubectl-client-side-apply", NULL)); /* kept */
    struct json_object *ours = entry_of(mf, CTL_FIELD_MANAGER, NULL);
    assert_string_equal(json_object_get_string(co_json_get(ours, "operation", NULL)), "Apply");
    assert_null(co_json_get(ours, "fieldsV1", "f:data", "f:extra", NULL));
    json_object_put(p);
}

static void test_ctl_apply__replace_puts_with_live_finalizers(void **state)
{
    (void)state;
    co_fake_kube *f = fake_new();
    co_kube_client *c = co_fake_kube_client(f);
    char *hashed = ctl_hash_owner_id(OWNER);
    char *live = co_xasprintf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x',"
                              "'namespace':'ns','resourceVersion':'9','finalizers':['keep/me'],"
                              "'labels':{'component-operator.cs.sap.com/owner-id':'%s'}}}",
                              hashed);
    on(f, "GET", "/api/v1/namespaces/ns/configmaps/x", 200, live);
    on(f, "PUT", "/api/v1/namespaces/ns/configmaps/x", 200, live);
    struct json_object *inv =
        J("[{'version':'v1','kind':'ConfigMap','namespace':'ns','name':'x','digest':'old',"
          "'phase':'Ready'}]");
    struct json_object *objs = J("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x'},"
                                 "'data':{'a':'1'}}]");
    ctl_apply_opts o = {0};
    o.target = c;
    o.owner_id = OWNER;
    o.namespace = "ns";
    o.update_policy = CO_UPDATE_REPLACE;
    bool done;
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    assert_int_equal(co_fake_kube_count(f, "PUT", "/configmaps/x"), 1);
    assert_int_equal(co_fake_kube_count(f, "PATCH", NULL), 0);
    bool found = false;
    for (size_t i = 0; i < co_fake_kube_ncalls(f); i++) {
        co_fake_call call = co_fake_kube_call(f, i);
        if (!strcmp(call.method, "PUT")) {
            struct json_object *b = NULL;
            assert_co_pass(co_json_parse(&b, call.body, strlen(call.body)));
            assert_string_equal(
                json_object_get_string(co_json_get(b, "metadata", "finalizers", "0", NULL)),
                "keep/me");
            assert_string_equal(
                json_object_get_string(co_json_get(b, "metadata", "resourceVersion", NULL)), "9");
            json_object_put(b);
            found = true;
        }
        co_fake_call_dispose(&call);
    }
    assert_true(found);
    json_object_put(objs);
    json_object_put(inv);
    free(live);
    free(hashed);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* ---- staging within a wave ------------------------------------------------------------------ */

static const char *staged_objects =
    "[{'apiVersion':'agg.io/v1','kind':'Thing','metadata':{'name':'t','namespace':'ns'}},"
    "{'apiVersion':'apiregistration.k8s.io/v1','kind':'APIService','metadata':{'name':"
    "'v1.agg.io'},'spec':{'group':'agg.io','version':'v1','service':{'name':'s','namespace':"
    "'ns'}}},"
    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c'}}]";

static void test_ctl_apply__apiservices_then_managed_instances(void **state)
{
    (void)state;
    co_fake_kube *f = fake_new();
    on(f, "GET", "/apis/apiregistration.k8s.io/v1$", 200,
       "{'kind':'APIResourceList','groupVersion':'apiregistration.k8s.io/v1','resources':["
       "{'name':'apiservices','namespaced':false,'kind':'APIService'}]}");
    co_kube_client *c = co_fake_kube_client(f);
    char *hashed = ctl_hash_owner_id(OWNER);
    ctl_apply_opts o = {0};
    o.target = c;
    o.owner_id = OWNER;
    o.namespace = "ns";
    o.update_policy = CO_UPDATE_REPLACE; /* POST on create */
    on(f, "POST", "/api/v1/namespaces/ns/configmaps", 201,
       "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c','namespace':'ns'}}");
    on(f, "POST", "/apis/apiregistration.k8s.io/v1/apiservices", 201,
       "{'apiVersion':'apiregistration.k8s.io/v1','kind':'APIService','metadata':{'name':"
       "'v1.agg.io'}}");

    struct json_object *inv = json_object_new_array();
    bool done = true;
    struct json_object *objs = J(staged_objects);
    assert_co_pass(ctl_apply(&o, inv, objs, &done)); /* items recorded */
    json_object_put(objs);
    assert_false(done);
    assert_int_equal(json_object_array_length(inv), 3);
    assert_int_equal(co_fake_kube_count(f, "POST", NULL), 0);

    /* pass 2: only the regular ConfigMap is created */
    co_fake_kube_clear_calls(f);
    objs = J(staged_objects);
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_false(done);
    assert_int_equal(co_fake_kube_count(f, "POST", "/configmaps"), 1);
    assert_int_equal(co_fake_kube_count(f, NULL, "/apiservices/"), 0);
    assert_int_equal(co_fake_kube_count(f, NULL, "/apis/agg.io/v1/"), 0);

    /* pass 3: the ConfigMap exists with our digest */
    const char *digest = NULL;
    for (size_t i = 0; i < json_object_array_length(inv); i++) {
        struct json_object *it = json_object_array_get_idx(inv, i);
        if (!strcmp(json_object_get_string(co_json_get(it, "kind", NULL)), "ConfigMap")) {
            digest = json_object_get_string(co_json_get(it, "digest", NULL));
        }
    }
    assert_non_null(digest);
    char *cm = co_xasprintf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
                            "'namespace':'ns','labels':{'component-operator.cs.sap.com/owner-id':"
                            "'%s'},'annotations':{'component-operator.cs.sap.com/digest':'%s'}}}",
                            hashed, digest);
    on(f, "GET", "/api/v1/namespaces/ns/configmaps/c", 200, cm);
    objs = J(staged_objects);
    assert_co_pass(ctl_apply(&o, inv, objs, &done)); /* the ConfigMap becomes Ready */
    json_object_put(objs);
    assert_false(done);
    assert_int_equal(co_fake_kube_count(f, NULL, "/apiservices/"), 0);

    /* pass 4: with the wave's regular objects ready, the APIService comes next */
    co_fake_kube_clear_calls(f);
    objs = J(staged_objects);
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_false(done);
    assert_int_equal(co_fake_kube_count(f, "POST", "/apiservices"), 1);
    assert_int_equal(co_fake_kube_count(f, NULL, "/apis/agg.io/v1/"), 0);
    /* the APIService was created with our finalizer */
    for (size_t i = 0; i < co_fake_kube_ncalls(f); i++) {
        co_fake_call call = co_fake_kube_call(f, i);
        if (!strcmp(call.method, "POST")) {
            assert_contains(call.body, "\"finalizers\":[\"component-operator.cs.sap.com\"]");
        }
        co_fake_call_dispose(&call);
    }
    free(cm);
    json_object_put(inv);
    free(hashed);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_ctl_apply__options_checked(void **state)
{
    (void)state;
    struct json_object *inv = json_object_new_array();
    ctl_apply_opts o = {0};
    bool done;
    assert_co_fail_with(CO_EINVALID, ctl_apply(&o, inv, NULL, &done));
    co_fake_kube *f = co_fake_kube_new();
    co_kube_client *c = co_fake_kube_client(f);
    o.target = c;
    o.owner_id = OWNER;
    o.namespace = "ns";
    assert_co_pass(ctl_apply(&o, inv, NULL, &done)); /* nothing to do */
    assert_true(done);
    co_kube_client_free(c);
    co_fake_kube_free(f);
    json_object_put(inv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_apply__ssa_override_takes_over_kubectl_and_own_update_fields),
        cmocka_unit_test(test_ctl_apply__ssa_merge_reclaims_only_own_update_fields),
        cmocka_unit_test(test_ctl_apply__replace_puts_with_live_finalizers),
        cmocka_unit_test(test_ctl_apply__apiservices_then_managed_instances),
        cmocka_unit_test(test_ctl_apply__options_checked),
    };
    return cmocka_run_group_tests_name("ctl_apply", tests, NULL, NULL);
}
