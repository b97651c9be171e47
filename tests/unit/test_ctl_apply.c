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
#include "co/util/digest.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_depcache.h"
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
    /* the answer to the apply is a ConfigMap, current at once */
    assert_true(done);
    assert_string_equal(json_object_get_string(co_json_get(inv, "0", "phase", NULL)), "Ready");
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
          "'phase':'Ready','lastAppliedAt':'2024-01-01T00:00:00Z'}]");
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

    /* pass 2: only the regular ConfigMap is created, and the answer to its POST makes it
     * Ready */
    co_fake_kube_clear_calls(f);
    objs = J(staged_objects);
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_false(done);
    assert_int_equal(co_fake_kube_count(f, "POST", "/configmaps"), 1);
    assert_int_equal(co_fake_kube_count(f, NULL, "/apiservices/"), 0);
    assert_int_equal(co_fake_kube_count(f, NULL, "/apis/agg.io/v1/"), 0);
    const char *digest = NULL;
    for (size_t i = 0; i < json_object_array_length(inv); i++) {
        struct json_object *it = json_object_array_get_idx(inv, i);
        if (!strcmp(json_object_get_string(co_json_get(it, "kind", NULL)), "ConfigMap")) {
            digest = json_object_get_string(co_json_get(it, "digest", NULL));
            assert_string_equal(json_object_get_string(co_json_get(it, "phase", NULL)), "Ready");
        }
    }
    assert_non_null(digest);

    /* pass 3: with the wave's regular objects ready, the APIService comes next */
    char *cm = co_xasprintf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
                            "'namespace':'ns','labels':{'component-operator.cs.sap.com/owner-id':"
                            "'%s'},'annotations':{'component-operator.cs.sap.com/digest':'%s'}}}",
                            hashed, digest);
    on(f, "GET", "/api/v1/namespaces/ns/configmaps/c", 200, cm);
    co_fake_kube_clear_calls(f);
    objs = J(staged_objects);
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_false(done);
    assert_int_equal(co_fake_kube_count(f, "POST", "/configmaps"), 0);
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

/* What the persist hook saw: the inventory's length and the writes made before it ran. */
typedef struct persisted {
    co_fake_kube *f;
    size_t calls, items, writes_before;
    int rc;
} persisted;

static int persist_hook(void *ctx, struct json_object *inventory)
{
    persisted *p = ctx;
    p->calls++;
    p->items = json_object_array_length(inventory);
    p->writes_before =
        co_fake_kube_count(p->f, "POST", NULL) + co_fake_kube_count(p->f, "PATCH", NULL);
    return p->rc;
}

#define TWO_CONFIGMAPS                                                                             \
    "[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'a'}},"                             \
    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'b'}}]"

/* A fake API server answering the applies of ConfigMaps a and b of namespace ns, and the
 * options of a pass over them whose persist hook records into @p seen. */
static co_kube_client *two_configmaps(co_fake_kube **f_out, ctl_apply_opts *o, persisted *seen)
{
    co_fake_kube *f = fake_new();
    on(f, "PATCH", "/api/v1/namespaces/ns/configmaps/a", 200,
       "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'a','namespace':'ns'}}");
    on(f, "PATCH", "/api/v1/namespaces/ns/configmaps/b", 200,
       "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'b','namespace':'ns'}}");
    co_kube_client *c = co_fake_kube_client(f);
    *seen = (persisted){f, 0, 0, 0, 0};
    memset(o, 0, sizeof(*o));
    o->target = c;
    o->owner_id = OWNER;
    o->namespace = "ns";
    o->persist = persist_hook;
    o->persist_ctx = seen;
    *f_out = f;
    return c;
}

static void test_ctl_apply__new_items_persisted_before_anything_is_created(void **state)
{
    (void)state;
    co_fake_kube *f = NULL;
    persisted seen;
    ctl_apply_opts o;
    co_kube_client *c = two_configmaps(&f, &o, &seen);
    const char *two = TWO_CONFIGMAPS;

    /* a failing hook stops the pass before anything is written */
    seen.rc = co_error_set(CO_EUNAVAILABLE, "status write refused");
    struct json_object *inv = json_object_new_array();
    struct json_object *objs = J(two);
    bool done = true;
    assert_co_fail_with(CO_EUNAVAILABLE, ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    json_object_put(inv);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(co_fake_kube_count(f, "PATCH", NULL), 0);

    /* with the inventory persisted, the same call creates both, judged Ready by the answers */
    seen = (persisted){f, 0, 0, 0, 0};
    inv = json_object_new_array();
    objs = J(two);
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.items, 2);
    assert_int_equal(seen.writes_before, 0);
    assert_int_equal(co_fake_kube_count(f, "PATCH", "/configmaps/"), 2);
    /* no reads: the guarded creates are tried first */
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/"), 0);
    assert_true(done);
    for (size_t i = 0; i < 2; i++) {
        assert_string_equal(
            json_object_get_string(co_json_get(json_object_array_get_idx(inv, i), "phase", NULL)),
            "Ready");
    }

    /* nothing new: no second persist */
    seen = (persisted){f, 0, 0, 0, 0};
    objs = J(two);
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_int_equal(seen.calls, 0);
    json_object_put(inv);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static atomic_bool halt_proceed;

/* The persist hook, and the controller is told to stop while it runs. */
static int persist_then_stop(void *ctx, struct json_object *inventory)
{
    atomic_store(&halt_proceed, false);
    return persist_hook(ctx, inventory);
}

/* A controller that stops (or loses its lease) ends a pass before its next object: the new
 * items are recorded, nothing is written, the call is "not done"; the next pass goes on. A
 * deletion halted the same way deletes nothing and keeps every item. */
static void test_ctl_apply__halted_pass_writes_nothing_more(void **state)
{
    (void)state;
    co_fake_kube *f = NULL;
    persisted seen;
    ctl_apply_opts o;
    co_kube_client *c = two_configmaps(&f, &o, &seen);
    const char *two = TWO_CONFIGMAPS;
    atomic_store(&halt_proceed, true);
    o.persist = persist_then_stop;
    o.proceed = &halt_proceed;
    struct json_object *inv = json_object_new_array();
    struct json_object *objs = J(two);
    bool done = true;
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_false(done);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.items, 2);
    assert_int_equal(co_fake_kube_count(f, "PATCH", NULL), 0);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps"), 0);
    assert_int_equal(json_object_array_length(inv), 2);
    assert_string_equal(co_json_str(json_object_array_get_idx(inv, 0), "phase", NULL),
                        "ScheduledForApplication");

    atomic_store(&halt_proceed, true);
    o.persist = persist_hook;
    objs = J(two);
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_true(done);
    assert_int_equal(co_fake_kube_count(f, "PATCH", "/configmaps/"), 2);

    atomic_store(&halt_proceed, false);
    size_t before = co_fake_kube_ncalls(f);
    assert_co_pass(ctl_apply_delete(&o, inv, &done));
    assert_false(done);
    assert_int_equal(co_fake_kube_ncalls(f) - before, 0);
    assert_int_equal(json_object_array_length(inv), 2);
    assert_string_equal(co_json_str(json_object_array_get_idx(inv, 1), "phase", NULL), "Ready");
    json_object_put(inv);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* The digest the inventory @p inv records for the item named @p name. */
static const char *digest_of(struct json_object *inv, const char *name)
{
    for (size_t i = 0; i < json_object_array_length(inv); i++) {
        struct json_object *it = json_object_array_get_idx(inv, i);
        if (!strcmp(co_json_str(it, "name", NULL), name)) {
            return co_json_str(it, "digest", NULL);
        }
    }
    fail_msg("no item %s", name);
    return NULL;
}

/* A ConfigMap of ours carrying @p digest at @p rv, as JSON text. */
static char *ours_with_digest(const char *name, const char *digest, const char *rv)
{
    char *hashed = ctl_hash_owner_id(OWNER);
    char *t = co_xasprintf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'%s',"
                           "'namespace':'ns','resourceVersion':'%s','labels':{"
                           "'component-operator.cs.sap.com/owner-id':'%s'},'annotations':{"
                           "'component-operator.cs.sap.com/digest':'%s'}}}",
                           name, rv, hashed, digest);
    free(hashed);
    char *q = Q(t);
    free(t);
    return q;
}

/* Objects being applied are read ahead from the API server's watch cache (resourceVersion=0),
 * which may be a moment behind: one shown there with our digest is judged without another
 * read; one shown with another digest is read again before anything is written to it (its
 * resourceVersion would be the write's precondition), and not written when it is current. */
static void test_ctl_apply__applied_objects_judged_from_the_watch_cache(void **state)
{
    (void)state;
    co_fake_kube *f = NULL;
    persisted seen;
    ctl_apply_opts o;
    co_kube_client *c = two_configmaps(&f, &o, &seen);
    const char *two = TWO_CONFIGMAPS;
    struct json_object *inv = json_object_new_array();
    struct json_object *objs = J(two);
    bool done = false;
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_true(done);

    char *a = ours_with_digest("a", digest_of(inv, "a"), "5");
    char *b_cached = ours_with_digest("b", "before", "5");
    char *b_now = ours_with_digest("b", digest_of(inv, "b"), "7");
    char *list = co_xasprintf("{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":"
                              "{\"resourceVersion\":\"9\"},\"items\":[%s,%s]}",
                              a, b_cached);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns/configmaps?", 200, list);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns/configmaps/b", 200, b_now);
    co_fake_kube_clear_calls(f);
    objs = J(two);
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_true(done);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps?"), 1);
    assert_int_equal(co_fake_kube_count(f, "GET", "resourceVersion=0"), 1);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/a"), 0);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/b"), 1);
    assert_int_equal(co_fake_kube_count(f, "PATCH", NULL), 0);
    assert_int_equal(co_fake_kube_count(f, "PUT", NULL), 0);
    free(list);
    free(b_now);
    free(b_cached);
    free(a);
    json_object_put(inv);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* One pass over a new inventory with one ConfigMap "x" that exists already as @p live. */
static int first_write_over(const char *live,
                            co_adoption_policy adoption,
                            co_fake_kube **fout,
                            struct json_object **inv_out)
{
    co_fake_kube *f = fake_new();
    co_kube_client *c = co_fake_kube_client(f);
    on(f, "PATCH", "/api/v1/namespaces/ns/configmaps/x", 200, live);
    char *conflict = Q("{'kind':'Status','apiVersion':'v1','status':'Failure','reason':'Conflict',"
                       "'code':409,'message':'the object has been modified'}");
    co_fake_answer a = {0};
    a.status = 409;
    a.body = conflict;
    co_fake_kube_once(f, "PATCH", "/api/v1/namespaces/ns/configmaps/x", &a); /* the create */
    free(conflict);
    on(f, "GET", "/api/v1/namespaces/ns/configmaps/x", 200, live);
    on(f, "PUT", "/api/v1/namespaces/ns/configmaps/x", 200, live);
    persisted seen = {f, 0, 0, 0, 0};
    ctl_apply_opts o = {0};
    o.target = c;
    o.owner_id = OWNER;
    o.namespace = "ns";
    o.adoption_policy = adoption;
    o.persist = persist_hook;
    o.persist_ctx = &seen;
    struct json_object *inv = json_object_new_array();
    struct json_object *objs =
        J("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x'}}]");
    bool done = false;
    int rc = ctl_apply(&o, inv, objs, &done);
    json_object_put(objs);
    co_kube_client_free(c);
    *fout = f;
    *inv_out = inv;
    return rc;
}

static void test_ctl_apply__first_write_checks_adoption(void **state)
{
    (void)state;
    co_fake_kube *f = NULL;
    struct json_object *inv = NULL;
    /* owned by another Component: refused, and the item leaves the inventory again */
    int rc = first_write_over("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x',"
                              "'namespace':'ns','resourceVersion':'3','labels':{"
                              "'component-operator.cs.sap.com/owner-id':'someoneelse'},"
                              "'annotations':{'component-operator.cs.sap.com/owner-id':"
                              "'c/other/comp'}}}",
                              CO_ADOPTION_IF_UNOWNED, &f, &inv);
    assert_int_equal(rc, CO_ECONFLICT);
    assert_contains(co_error_last(), "owner conflict; object");
    assert_contains(co_error_last(), "is owned by c/other/comp");
    assert_int_equal(json_object_array_length(inv), 0);
    assert_int_equal(co_fake_kube_count(f, "PUT", NULL), 0);
    json_object_put(inv);
    co_fake_kube_free(f);

    /* unowned and policy IfUnowned: adopted by an update of the object read */
    rc = first_write_over("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x',"
                          "'namespace':'ns','resourceVersion':'3'}}",
                          CO_ADOPTION_IF_UNOWNED, &f, &inv);
    assert_co_pass(rc);
    assert_int_equal(json_object_array_length(inv), 1);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/x"), 1);
    assert_true(co_fake_kube_count(f, "PATCH", "/configmaps/x") >= 2); /* create, then apply */
    json_object_put(inv);
    co_fake_kube_free(f);

    /* a create the API server forbids leaves nothing behind: the item goes too */
    f = fake_new();
    co_kube_client *c = co_fake_kube_client(f);
    on(f, "PATCH", "/api/v1/namespaces/ns/configmaps/x", 403,
       "{'kind':'Status','apiVersion':'v1','status':'Failure','reason':'Forbidden','code':403,"
       "'message':'configmaps is forbidden'}");
    ctl_apply_opts o = {0};
    o.target = c;
    o.owner_id = OWNER;
    o.namespace = "ns";
    persisted seen = {f, 0, 0, 0, 0};
    o.persist = persist_hook;
    o.persist_ctx = &seen;
    inv = json_object_new_array();
    struct json_object *objs =
        J("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x'}}]");
    bool done = true;
    assert_co_fail_with(CO_EAUTH, ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_int_equal(seen.items, 1); /* it was recorded first */
    assert_int_equal(json_object_array_length(inv), 0);
    json_object_put(inv);
    co_kube_client_free(c);
    co_fake_kube_free(f);

    /* unowned and policy Never: refused */
    rc = first_write_over("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x',"
                          "'namespace':'ns','resourceVersion':'3'}}",
                          CO_ADOPTION_NEVER, &f, &inv);
    assert_int_equal(rc, CO_ECONFLICT);
    assert_contains(co_error_last(), "without owner");
    assert_int_equal(json_object_array_length(inv), 0);
    json_object_put(inv);
    co_fake_kube_free(f);
}

/* A ConfigMap of ours as the API server has it. */
static char *ours(const char *name)
{
    char *hashed = ctl_hash_owner_id(OWNER);
    char *t = co_xasprintf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'%s',"
                           "'namespace':'ns','resourceVersion':'5','labels':{"
                           "'component-operator.cs.sap.com/owner-id':'%s'}}}",
                           name, hashed);
    free(hashed);
    char *q = Q(t);
    free(t);
    return q;
}

/* Deletes three ConfigMaps of the inventory; the LIST by owner label answers @p status with the
 * first two (the third carries no label). Returns the fake for counting. */
static co_fake_kube *delete_three(int status)
{
    co_fake_kube *f = fake_new();
    co_kube_client *c = co_fake_kube_client(f);
    char *a = ours("a"), *b = ours("b");
    char *list = co_xasprintf("{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":"
                              "{\"resourceVersion\":\"9\"},\"items\":[%s,%s]}",
                              a, b);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns/configmaps?", status,
                      status == 200 ? list : "{\"kind\":\"Status\",\"code\":403}");
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns/configmaps/a", 200, a);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns/configmaps/b", 200, b);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns/configmaps/c", 404,
                      "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}");
    co_fake_kube_json(f, "DELETE", "/api/v1/namespaces/ns/configmaps/", 200, "{}");
    free(list);
    free(a);
    free(b);
    struct json_object *inv =
        J("[{'version':'v1','kind':'ConfigMap','namespace':'ns','name':'a','digest':'d',"
          "'phase':'Ready','lastAppliedAt':'2024-01-01T00:00:00Z'},"
          "{'version':'v1','kind':'ConfigMap','namespace':'ns','name':'b','digest':'d',"
          "'phase':'Ready','lastAppliedAt':'2024-01-01T00:00:00Z'},"
          "{'version':'v1','kind':'ConfigMap','namespace':'ns','name':'c','digest':'d',"
          "'phase':'Ready','lastAppliedAt':'2024-01-01T00:00:00Z'}]");
    ctl_apply_opts o = {0};
    o.target = c;
    o.owner_id = OWNER;
    o.namespace = "ns";
    bool done = true;
    assert_co_pass(ctl_apply_delete(&o, inv, &done));
    assert_false(done); /* a and b are being deleted */
    json_object_put(inv);
    co_kube_client_free(c);
    return f;
}

static void test_ctl_apply__objects_of_a_type_read_with_one_list(void **state)
{
    (void)state;
    co_fake_kube *f = delete_three(200);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps?labelSelector="), 1);
    /* a deletion lists consistently, never from the watch cache */
    assert_int_equal(co_fake_kube_count(f, "GET", "resourceVersion="), 0);
    /* a and b came with the list; c, not listed, is read on its own */
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/a"), 0);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/b"), 0);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/c"), 1);
    assert_int_equal(co_fake_kube_count(f, "DELETE", "/configmaps/a"), 1);
    assert_int_equal(co_fake_kube_count(f, "DELETE", "/configmaps/b"), 1);
    co_fake_kube_free(f);

    /* a list refused (no list permission): each object is read */
    f = delete_three(403);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/a"), 1);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/b"), 1);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/c"), 1);
    assert_int_equal(co_fake_kube_count(f, "DELETE", "/configmaps/a"), 1);
    co_fake_kube_free(f);
}

/* Waiting for deletions: objects being deleted that a full LIST of their group does not return
 * are gone, without a GET each; when the LIST is refused, each is read. */
static co_fake_kube *wait_for_three(int status)
{
    co_fake_kube *f = fake_new();
    co_kube_client *c = co_fake_kube_client(f);
    /* b is terminating (a finalizer of someone else's holds it) */
    char *owned = ours("b");
    struct json_object *bo = J(owned);
    json_object_object_add(co_json_get(bo, "metadata", NULL), "deletionTimestamp",
                           json_object_new_string("2024-01-01T00:00:00Z"));
    char *b = co_xstrdup(json_object_to_json_string_ext(bo, JSON_C_TO_STRING_PLAIN));
    json_object_put(bo);
    free(owned);
    char *list = co_xasprintf("{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":"
                              "{\"resourceVersion\":\"9\"},\"items\":[%s]}",
                              b);
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns/configmaps?", status,
                      status == 200 ? list : "{\"kind\":\"Status\",\"code\":403}");
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns/configmaps/", 404,
                      "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}");
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns/configmaps/b", 200, b);
    free(list);
    free(b);
    struct json_object *inv = J("[{'version':'v1','kind':'ConfigMap','namespace':'ns','name':'a',"
                                "'digest':'d','phase':'Deleting'},"
                                "{'version':'v1','kind':'ConfigMap','namespace':'ns','name':'b',"
                                "'digest':'d','phase':'Deleting'},"
                                "{'version':'v1','kind':'ConfigMap','namespace':'ns','name':'c',"
                                "'digest':'d','phase':'Deleting'}]");
    ctl_apply_opts o = {0};
    o.target = c;
    o.owner_id = OWNER;
    o.namespace = "ns";
    bool done = true;
    assert_co_pass(ctl_apply_delete(&o, inv, &done));
    assert_false(done); /* b is still there */
    /* a and c left the inventory; b waits */
    assert_int_equal(json_object_array_length(inv), 1);
    assert_string_equal(co_json_str(json_object_array_get_idx(inv, 0), "name", NULL), "b");
    json_object_put(inv);
    co_kube_client_free(c);
    return f;
}

static void test_ctl_apply__deletions_awaited_with_one_list(void **state)
{
    (void)state;
    co_fake_kube *f = wait_for_three(200);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps?labelSelector="), 1);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/"), 0);
    assert_int_equal(co_fake_kube_count(f, "DELETE", NULL), 0);
    co_fake_kube_free(f);

    f = wait_for_three(403);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/a"), 1);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/b"), 1);
    assert_int_equal(co_fake_kube_count(f, "GET", "/configmaps/c"), 1);
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

/* docs/drift.md, "Policies": of three ConfigMaps edited by hand after they were applied, the
 * Correct one is re-applied on the next pass, the Warn one is recorded as drifted and not
 * written, the Ignore one neither; once the reapply interval passes, the Ignore one is
 * re-applied as before and the drifted Warn one still is not. */
static void test_ctl_apply__drift_policies(void **state)
{
    (void)state;
    const char *objs_text =
        "[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c'},'data':{'k':'v'}},"
        "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'w','annotations':{"
        "'component-operator.cs.sap.com/drift-policy':'Warn'}},'data':{'k':'v'}},"
        "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'i','annotations':{"
        "'component-operator.cs.sap.com/drift-policy':'Ignore'}},'data':{'k':'v'}}]";
    co_fake_kube *f = fake_new();
    static const char *const NAMES[] = {"c", "w", "i"};
    for (size_t k = 0; k < 3; k++) {
        char *path = co_xasprintf("/api/v1/namespaces/ns/configmaps/%s", NAMES[k]);
        char *body = co_xasprintf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'%s',"
                                  "'namespace':'ns'},'data':{'k':'v'}}",
                                  NAMES[k]);
        on(f, "PATCH", path, 200, body);
        free(body);
        free(path);
    }
    co_kube_client *c = co_fake_kube_client(f);
    persisted seen = {f, 0, 0, 0, 0};
    ctl_apply_opts o;
    memset(&o, 0, sizeof(o));
    o.target = c;
    o.owner_id = OWNER;
    o.namespace = "ns";
    o.persist = persist_hook;
    o.persist_ctx = &seen;
    struct json_object *inv = json_object_new_array();
    struct json_object *objs = J(objs_text);
    bool done = false;
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_true(done);

    /* edited by hand: data.k is "edited" on every one */
    char *hashed = ctl_hash_owner_id(OWNER);
    for (size_t k = 0; k < 3; k++) {
        char *path = co_xasprintf("/api/v1/namespaces/ns/configmaps/%s", NAMES[k]);
        char *body = co_xasprintf(
            "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'%s','namespace':'ns',"
            "'resourceVersion':'5','labels':{'component-operator.cs.sap.com/owner-id':'%s'},"
            "'annotations':{'component-operator.cs.sap.com/digest':'%s'}},'data':{'k':'edited'}}",
            NAMES[k], hashed, digest_of(inv, NAMES[k]));
        on(f, "GET", path, 200, body);
        free(body);
        free(path);
    }
    co_fake_kube_clear_calls(f);
    objs = J(objs_text);
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_int_equal(co_fake_kube_count(f, "PATCH", "/configmaps/c"), 1);
    assert_int_equal(co_fake_kube_count(f, "PATCH", "/configmaps/w"), 0);
    assert_int_equal(co_fake_kube_count(f, "PATCH", "/configmaps/i"), 0);
    for (size_t i = 0; i < json_object_array_length(inv); i++) {
        struct json_object *it = json_object_array_get_idx(inv, i);
        const char *drift = co_json_str(it, "drift", NULL);
        if (!strcmp(co_json_str(it, "name", NULL), "w")) {
            assert_non_null(drift);
            assert_string_equal(drift, "/data/k");
            assert_string_equal(co_json_str(it, "phase", NULL), "Ready");
        } else {
            assert_null(drift);
        }
        /* the reapply interval (one hour by default) passed since */
        json_object_object_add(it, "lastAppliedAt", json_object_new_string("2000-01-01T00:00:00Z"));
    }
    co_fake_kube_clear_calls(f);
    objs = J(objs_text);
    assert_co_pass(ctl_apply(&o, inv, objs, &done));
    json_object_put(objs);
    assert_int_equal(co_fake_kube_count(f, "PATCH", "/configmaps/c"), 1);
    assert_int_equal(co_fake_kube_count(f, "PATCH", "/configmaps/w"), 0);
    assert_int_equal(co_fake_kube_count(f, "PATCH", "/configmaps/i"), 1);
    free(hashed);
    json_object_put(inv);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* docs/drift.md, "Comparison": the cache's shape of a ConfigMap keeps a value no longer than a
 * fingerprint as it is and replaces a longer one (in data and binaryData) by its SHA-256, so
 * that the same shape of a manifest compares equal exactly when the values are equal. */
static void test_ctl_apply__cached_configmap_fingerprints_only_long_values(void **state)
{
    (void)state;
    char long_value[200];
    memset(long_value, 'x', sizeof(long_value) - 1);
    long_value[sizeof(long_value) - 1] = 0;
    char exact[72]; /* exactly as long as a fingerprint: kept */
    memset(exact, 'y', sizeof(exact) - 1);
    exact[sizeof(exact) - 1] = 0;
    char *text = co_xasprintf("{'kind':'ConfigMap','data':{'short':'v','exact':'%s','long':'%s'},"
                              "'binaryData':{'b':'%s'}}",
                              exact, long_value, long_value);
    struct json_object *cm = J(text);
    free(text);
    ctl_depcache_trim(cm, "ConfigMap");
    assert_string_equal(co_json_str(cm, "data", "short", NULL), "v");
    assert_string_equal(co_json_str(cm, "data", "exact", NULL), exact);
    char want[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(want, long_value, strlen(long_value));
    const char *fp = co_json_str(cm, "data", "long", NULL);
    assert_non_null(fp);
    assert_string_equal(fp + strlen(CTL_DEPCACHE_FINGERPRINT), want);
    assert_memory_equal(fp, CTL_DEPCACHE_FINGERPRINT, strlen(CTL_DEPCACHE_FINGERPRINT));
    assert_string_equal(co_json_str(cm, "binaryData", "b", NULL), fp);
    json_object_put(cm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_apply__ssa_override_takes_over_kubectl_and_own_update_fields),
        cmocka_unit_test(test_ctl_apply__ssa_merge_reclaims_only_own_update_fields),
        cmocka_unit_test(test_ctl_apply__replace_puts_with_live_finalizers),
        cmocka_unit_test(test_ctl_apply__apiservices_then_managed_instances),
        cmocka_unit_test(test_ctl_apply__new_items_persisted_before_anything_is_created),
        cmocka_unit_test(test_ctl_apply__halted_pass_writes_nothing_more),
        cmocka_unit_test(test_ctl_apply__first_write_checks_adoption),
        cmocka_unit_test(test_ctl_apply__applied_objects_judged_from_the_watch_cache),
        cmocka_unit_test(test_ctl_apply__drift_policies),
        cmocka_unit_test(test_ctl_apply__objects_of_a_type_read_with_one_list),
        cmocka_unit_test(test_ctl_apply__deletions_awaited_with_one_list),
        cmocka_unit_test(test_ctl_apply__options_checked),
        cmocka_unit_test(test_ctl_apply__cached_configmap_fingerprints_only_long_values),
    };
    return cmocka_run_group_tests_name("ctl_apply", tests, NULL, NULL);
}
