/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lifecycle controls of the apply engine against the real kube-apiserver of the test
 * control plane (docs/lifecycle.md): read-only objects counted and never written, delete-only
 * objects deleted and never created (and never another owner's), a guard holding back its
 * object and every later wave until the object it names reports its condition, and a ScaleDown
 * suspension that scales workloads to 0 and suspends CronJobs, recording what they were, and
 * the apply pass after it that restores them.
 *
 * The last tests run the manager with this engine and watch the Component's status: Processing
 * with reason Blocked while a guard holds, and the reasons Suspending and Suspended of a ScaleDown
 * suspension, then Ready again after resume.
 *
 * There is no kube-controller-manager: workloads report what the test writes into their status.
 * Each test works in its own placement namespace with its own owner id; the inventory is
 * serialised and parsed again between passes, as the Component status would be.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "co/util/duration.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_inventory.h"
#include "controller/ctl_manager.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define MAX_PASSES 20
#define WAIT_MS    120000L
#define SRC        "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"

static co_kube_client *admin;
static char *srcdir;
static ctl_source_ops src_ops;

typedef struct fixture {
    char *ns;
    char *owner_id;
    ctl_apply_opts opts;
    struct json_object *inventory;
    ctl_apply_stats stats;
    bool changed;
    char *blocked;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->ns = co_test_kube_namespace(admin, "co-lifecycle-");
    f->owner_id = co_xasprintf("test-cluster/%s/comp", f->ns);
    f->opts.target = admin;
    f->opts.owner_id = f->owner_id;
    f->opts.namespace = f->ns;
    f->opts.component_digest = "c1";
    f->opts.stats = &f->stats;
    f->opts.inventory_changed = &f->changed;
    f->opts.blocked = &f->blocked;
    f->inventory = json_object_new_array();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    json_object_put(f->inventory);
    free(f->blocked);
    free(f->owner_id);
    free(f->ns);
    free(f);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    src_ops = ctl_test_source_ops();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    curl_global_cleanup();
    return 0;
}

/* printf-formatted JSON with ' for ". */
static struct json_object *jsonf(const char *fmt, ...) CO_PRINTF(1, 2);
static struct json_object *jsonf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = co_xvasprintf(fmt, ap);
    va_end(ap);
    for (char *p = text; *p; p++) {
        if (*p == '\'') {
            *p = '"';
        }
    }
    struct json_object *o = co_test_json("%s", text);
    free(text);
    return o;
}

static void persist(fixture *f)
{
    char *text = co_json_dumps(f->inventory, 0);
    struct json_object *again = NULL;
    assert_co_pass(co_json_parse(&again, text, strlen(text)));
    free(text);
    json_object_put(f->inventory);
    f->inventory = again;
}

/* One reconcile: a fresh render, one apply pass, the inventory persisted. */
static int pass(fixture *f, const char *objects, bool *done)
{
    struct json_object *objs = jsonf("%s", objects);
    free(f->blocked);
    f->blocked = NULL;
    co_error_clear();
    int rc = ctl_apply(&f->opts, f->inventory, objs, done);
    char *msg = co_xstrdup(co_error_last());
    json_object_put(objs);
    persist(f);
    if (rc < 0) {
        co_error_set(rc, "%s", msg);
    }
    free(msg);
    return rc;
}

static void pass_ok(fixture *f, const char *objects, bool *done)
{
    assert_co_pass(pass(f, objects, done));
}

/* Passes until one is done or @p max were made; the number made, or -1. */
static int apply_until_done(fixture *f, const char *objects, int max)
{
    bool done = false;
    int n = 0;
    while (!done && n < max) {
        pass_ok(f, objects, &done);
        n++;
    }
    return done ? n : -1;
}

static struct json_object *
get(const char *api_version, const char *kind, const char *ns, const char *name)
{
    co_kube_ref ref = {api_version, kind, ns, name};
    struct json_object *out = NULL;
    co_error_clear();
    int rc = co_kube_get(&out, admin, &ref, NULL);
    if (rc == CO_ENOTFOUND) {
        co_error_clear();
        return NULL;
    }
    if (rc < 0) {
        fail_msg("GET %s %s: %s", kind, name, co_error_last());
    }
    return out;
}

static bool exists(const char *api_version, const char *kind, const char *ns, const char *name)
{
    struct json_object *o = get(api_version, kind, ns, name);
    bool e = o != NULL && !co_json_get(o, "metadata", "deletionTimestamp", NULL);
    json_object_put(o);
    return e;
}

/* metadata.resourceVersion of an existing object (free()). */
static char *rv_of(const char *api_version, const char *kind, const char *ns, const char *name)
{
    struct json_object *o = get(api_version, kind, ns, name);
    assert_non_null(o);
    char *rv = co_xstrdup(co_json_str(o, "metadata", "resourceVersion", NULL));
    json_object_put(o);
    return rv;
}

static const char *item_field(const fixture *f, const char *name, const char *field)
{
    for (size_t i = 0; i < json_object_array_length(f->inventory); i++) {
        struct json_object *it = json_object_array_get_idx(f->inventory, i);
        if (!strcmp(json_object_get_string(co_json_get(it, "name", NULL)), name)) {
            struct json_object *v = co_json_get(it, field, NULL);
            return v ? json_object_get_string(v) : "";
        }
    }
    return NULL;
}

static void create(struct json_object *obj)
{
    assert_co_pass(co_kube_create(NULL, admin, obj, NULL));
    json_object_put(obj);
}

/* Writes a Deployment status of @p replicas replicas, all ready and available (what the
 * deployment controller would do). */
static void deployment_status(const char *ns, const char *name, int64_t replicas)
{
    struct json_object *d = get("apps/v1", "Deployment", ns, name);
    assert_non_null(d);
    int64_t gen = 1;
    assert_co_pass(co_json_get_int64(&gen, d, "metadata", "generation", NULL));
    struct json_object *status = co_test_json(
        "{\"observedGeneration\":%lld,\"replicas\":%lld,\"updatedReplicas\":%lld,"
        "\"readyReplicas\":%lld,\"availableReplicas\":%lld,\"conditions\":[{\"type\":"
        "\"Available\",\"status\":\"True\",\"reason\":\"MinimumReplicasAvailable\"},{\"type\":"
        "\"Progressing\",\"status\":\"True\",\"reason\":\"NewReplicaSetAvailable\"}]}",
        (long long)gen, (long long)replicas, (long long)replicas, (long long)replicas,
        (long long)replicas);
    json_object_object_add(d, "status", status);
    assert_co_pass(co_kube_update_status(NULL, admin, d, NULL));
    json_object_put(d);
}

/* The ready status of its spec.replicas. */
static void make_deployment_ready(const char *ns, const char *name)
{
    struct json_object *d = get("apps/v1", "Deployment", ns, name);
    assert_non_null(d);
    int64_t replicas = 1;
    if (co_json_get(d, "spec", "replicas", NULL)) {
        assert_co_pass(co_json_get_int64(&replicas, d, "spec", "replicas", NULL));
    }
    json_object_put(d);
    deployment_status(ns, name, replicas);
}

#define ANN(key, value) "'component-operator.cs.sap.com/" key "':'" value "'"

#define DEPLOYMENT_N(name, replicas, annotations)                                                  \
    "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'" name                        \
    "','annotations':{" annotations "}},'spec':{'replicas':" replicas                              \
    ",'selector':{'matchLabels':{'app':'" name                                                     \
    "'}},'template':{'metadata':{'labels':{'app':'" name                                           \
    "'}},'spec':{'containers':[{'name':'c','image':'busybox'}]}}}}"

#define DEPLOYMENT(name, annotations) DEPLOYMENT_N(name, "1", annotations)

#define CONFIGMAP(name, annotations, data)                                                         \
    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'" name                              \
    "','annotations':{" annotations "}},'data':{" data "}}"

#define CRONJOB(name)                                                                              \
    "{'apiVersion':'batch/v1beta1','kind':'CronJob','metadata':{'name':'" name                     \
    "'},'spec':{'schedule':'*/5 * * * *','jobTemplate':{'spec':{'template':{'spec':{"              \
    "'restartPolicy':'Never','containers':[{'name':'c','image':'busybox'}]}}}}}}"

/* ---- read-only ------------------------------------------------------------------------------ */

static void test_lifecycle__read_only_counted_never_written(void **state)
{
    fixture *f = *state;
    /* someone else's ConfigMap, different from what the source says */
    create(jsonf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'settings',"
                 "'namespace':'%s','labels':{'component-operator.cs.sap.com/owner-id':'zzz'}},"
                 "'data':{'k':'live'}}",
                 f->ns));
    char *rv = rv_of("v1", "ConfigMap", f->ns, "settings");
    const char *objs =
        "[" CONFIGMAP("settings", ANN("mode", "read-only"), "'k':'source'") "," DEPLOYMENT(
            "ext", ANN("mode", "read-only")) "," CONFIGMAP("own", "", "'a':'b'") "]";

    /* the missing read-only Deployment keeps the pass from being done */
    assert_int_equal(apply_until_done(f, objs, 4), -1);
    assert_string_equal(item_field(f, "ext", "mode"), "read-only");
    assert_string_equal(item_field(f, "ext", "status"), "NotFound");
    assert_string_equal(item_field(f, "ext", "phase"), "ScheduledForApplication");
    assert_string_equal(item_field(f, "settings", "mode"), "read-only");
    assert_string_equal(item_field(f, "settings", "phase"), "Ready");
    assert_string_equal(item_field(f, "settings", "lastAppliedAt"), "");
    assert_string_equal(item_field(f, "own", "phase"), "Ready");
    assert_false(exists("apps/v1", "Deployment", f->ns, "ext"));
    char *now = rv_of("v1", "ConfigMap", f->ns, "settings");
    assert_string_equal(now, rv);
    free(now);

    /* it appears (not ours): judged like any other, still never written */
    create(jsonf("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'ext',"
                 "'namespace':'%s'},'spec':{'replicas':2,'selector':{'matchLabels':{'app':'ext'}},"
                 "'template':{'metadata':{'labels':{'app':'ext'}},'spec':{'containers':[{'name':"
                 "'c','image':'busybox'}]}}}}",
                 f->ns));
    bool done = true;
    pass_ok(f, objs, &done);
    assert_false(done);
    assert_string_equal(item_field(f, "ext", "status"), "InProgress");
    make_deployment_ready(f->ns, "ext");
    char *ext_rv = rv_of("apps/v1", "Deployment", f->ns, "ext");
    unsigned long writes = f->stats.creates + f->stats.updates + f->stats.deletes;
    pass_ok(f, objs, &done);
    assert_true(done);
    assert_string_equal(item_field(f, "ext", "phase"), "Ready");
    assert_int_equal(f->stats.creates + f->stats.updates + f->stats.deletes, writes);
    now = rv_of("apps/v1", "Deployment", f->ns, "ext");
    assert_string_equal(now, ext_rv);
    free(now);
    now = rv_of("v1", "ConfigMap", f->ns, "settings");
    assert_string_equal(now, rv);
    free(now);
    struct json_object *live = get("v1", "ConfigMap", f->ns, "settings");
    assert_string_equal(co_json_str(live, "data", "k", NULL), "live");
    json_object_put(live);

    /* dropped from the source: it leaves the inventory, the object stays */
    const char *fewer = "[" CONFIGMAP("settings", ANN("mode", "read-only"),
                                      "'k':'source'") "," CONFIGMAP("own", "", "'a':'b'") "]";
    assert_true(apply_until_done(f, fewer, MAX_PASSES) > 0);
    assert_null(item_field(f, "ext", "name"));
    assert_true(exists("apps/v1", "Deployment", f->ns, "ext"));
    now = rv_of("apps/v1", "Deployment", f->ns, "ext");
    assert_string_equal(now, ext_rv);
    free(now);

    /* the Component's deletion deletes its own objects only */
    bool gone = false;
    for (int i = 0; i < MAX_PASSES && !gone; i++) {
        assert_co_pass(ctl_apply_delete(&f->opts, f->inventory, &gone));
        persist(f);
    }
    assert_true(gone);
    assert_false(exists("v1", "ConfigMap", f->ns, "own"));
    now = rv_of("v1", "ConfigMap", f->ns, "settings");
    assert_string_equal(now, rv);
    free(now);
    free(ext_rv);
    free(rv);
}

/* A managed object turned read-only is kept as it is: no write, no deletion. */
static void test_lifecycle__managed_turned_read_only_is_kept(void **state)
{
    fixture *f = *state;
    assert_true(apply_until_done(f, "[" CONFIGMAP("c", "", "'a':'1'") "]", MAX_PASSES) > 0);
    char *rv = rv_of("v1", "ConfigMap", f->ns, "c");
    const char *ro = "[" CONFIGMAP("c", ANN("mode", "read-only"), "'a':'2'") "]";
    assert_true(apply_until_done(f, ro, MAX_PASSES) > 0);
    assert_string_equal(item_field(f, "c", "mode"), "read-only");
    char *now = rv_of("v1", "ConfigMap", f->ns, "c");
    assert_string_equal(now, rv);
    free(now);
    bool gone = false;
    for (int i = 0; i < MAX_PASSES && !gone; i++) {
        assert_co_pass(ctl_apply_delete(&f->opts, f->inventory, &gone));
        persist(f);
    }
    assert_true(gone);
    assert_true(exists("v1", "ConfigMap", f->ns, "c"));
    free(rv);
}

/* ---- delete-only ---------------------------------------------------------------------------- */

static void test_lifecycle__delete_only_deleted_never_created(void **state)
{
    fixture *f = *state;
    create(jsonf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'old','namespace':"
                 "'%s'},'data':{'x':'y'}}",
                 f->ns));
    const char *objs =
        "[" CONFIGMAP("old", ANN("mode", "delete-only") "," ANN("adoption-policy", "if-unowned"),
                      "") "," CONFIGMAP("never", ANN("mode", "delete-only"),
                                        "") "," CONFIGMAP("own", "", "'a':'b'") "]";
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    assert_false(exists("v1", "ConfigMap", f->ns, "old"));
    assert_false(exists("v1", "ConfigMap", f->ns, "never"));
    assert_true(exists("v1", "ConfigMap", f->ns, "own"));
    assert_string_equal(item_field(f, "old", "mode"), "delete-only");
    /* deleted, and not waited for */
    assert_string_equal(item_field(f, "old", "status"), "Terminating");
    bool done = false;
    pass_ok(f, objs, &done);
    assert_true(done);
    assert_string_equal(item_field(f, "old", "status"), "NotFound");
    assert_string_equal(item_field(f, "old", "phase"), "Ready");
    assert_string_equal(item_field(f, "never", "status"), "NotFound");
    assert_string_equal(item_field(f, "never", "phase"), "Ready");

    /* it reappears: deleted again */
    create(jsonf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'old','namespace':"
                 "'%s'}}",
                 f->ns));
    unsigned long deletes = f->stats.deletes;
    pass_ok(f, objs, &done);
    assert_true(done); /* never counts */
    assert_int_equal(f->stats.deletes, deletes + 1);
    assert_false(exists("v1", "ConfigMap", f->ns, "old"));
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    assert_false(exists("v1", "ConfigMap", f->ns, "never"));
}

/* Another Component's object is not deleted, whatever the mode says. */
static void test_lifecycle__delete_only_respects_owners(void **state)
{
    fixture *f = *state;
    create(jsonf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'theirs','namespace':"
                 "'%s','labels':{'component-operator.cs.sap.com/owner-id':'zzz'},'annotations':{"
                 "'component-operator.cs.sap.com/owner-id':'c/other/x'}}}",
                 f->ns));
    create(jsonf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'unowned',"
                 "'namespace':'%s'}}",
                 f->ns));
    const char *objs = "[" CONFIGMAP(
        "theirs", ANN("mode", "delete-only") "," ANN("adoption-policy", "if-unowned"), "") "]";
    bool done = false;
    int rc = CO_OK;
    for (int i = 0; i < 3 && rc == CO_OK; i++) {
        rc = pass(f, objs, &done);
    }
    assert_int_equal(rc, CO_ECONFLICT);
    assert_contains(co_error_last(), "owner conflict");
    assert_contains(co_error_last(), "theirs");
    assert_true(exists("v1", "ConfigMap", f->ns, "theirs"));

    /* adoption policy Never: an unowned object is not taken either */
    const char *never = "[" CONFIGMAP(
        "unowned", ANN("mode", "delete-only") "," ANN("adoption-policy", "never"), "") "]";
    rc = CO_OK;
    for (int i = 0; i < 3 && rc == CO_OK; i++) {
        rc = pass(f, never, &done);
    }
    assert_int_equal(rc, CO_ECONFLICT);
    assert_contains(co_error_last(), "without owner");
    assert_true(exists("v1", "ConfigMap", f->ns, "unowned"));
}

/* ---- guards --------------------------------------------------------------------------------- */

static void test_lifecycle__guard_blocks_later_waves(void **state)
{
    fixture *f = *state;
    /* second waits for Deployment gate to be Available; it is auxiliary, and still blocks */
    const char *objs = "[" CONFIGMAP("first", "", "'a':'1'") "," CONFIGMAP(
        "second",
        ANN("apply-order", "1") "," ANN("participation", "auxiliary") "," ANN(
            "guard", "apps/v1 Deployment gate Available"),
        "'a':'2'") "," CONFIGMAP("third", ANN("apply-order", "2"), "'a':'3'") "]";
    assert_int_equal(apply_until_done(f, objs, 4), -1);
    assert_true(exists("v1", "ConfigMap", f->ns, "first"));
    assert_false(exists("v1", "ConfigMap", f->ns, "second"));
    assert_false(exists("v1", "ConfigMap", f->ns, "third"));
    assert_non_null(f->blocked);
    char *want = co_xasprintf("guard of v1 ConfigMap %s/second: waiting for condition "
                              "\"Available\" of apps/v1 Deployment %s/gate to become True "
                              "(currently not found)",
                              f->ns, f->ns);
    assert_string_equal(f->blocked, want);
    free(want);

    /* the object exists, without the condition */
    create(jsonf("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'gate',"
                 "'namespace':'%s'},'spec':{'replicas':1,'selector':{'matchLabels':{'app':'gate'}},"
                 "'template':{'metadata':{'labels':{'app':'gate'}},'spec':{'containers':[{'name':"
                 "'c','image':'busybox'}]}}}}",
                 f->ns));
    bool done = true;
    pass_ok(f, objs, &done);
    assert_false(done);
    assert_non_null(f->blocked);
    assert_contains(f->blocked, "(currently absent)");
    assert_false(exists("v1", "ConfigMap", f->ns, "second"));

    /* Available: the rest follows */
    make_deployment_ready(f->ns, "gate");
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    assert_null(f->blocked);
    assert_true(exists("v1", "ConfigMap", f->ns, "second"));
    assert_true(exists("v1", "ConfigMap", f->ns, "third"));
}

/* ---- ScaleDown suspension ------------------------------------------------------------------- */

static const char *annotation(const struct json_object *o, const char *key)
{
    return co_json_meta_annotation(o, key);
}

static int64_t replicas_of(const char *ns, const char *name)
{
    struct json_object *d = get("apps/v1", "Deployment", ns, name);
    int64_t n = -1;
    assert_co_pass(co_json_get_int64(&n, d, "spec", "replicas", NULL));
    json_object_put(d);
    return n;
}

static void test_lifecycle__scale_down_and_resume(void **state)
{
    fixture *f = *state;
    create(jsonf("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'ext',"
                 "'namespace':'%s'},'spec':{'replicas':2,'selector':{'matchLabels':{'app':'ext'}},"
                 "'template':{'metadata':{'labels':{'app':'ext'}},'spec':{'containers':[{'name':"
                 "'c','image':'busybox'}]}}}}",
                 f->ns));
    make_deployment_ready(f->ns, "ext");
    const char *objs = "[" DEPLOYMENT_N("web", "3", "") "," CRONJOB("tick") "," DEPLOYMENT(
        "ext", ANN("mode", "read-only")) "]";
    bool done = false;
    for (int i = 0; i < 3; i++) {
        pass_ok(f, objs, &done);
    }
    make_deployment_ready(f->ns, "web");
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    char *ext_rv = rv_of("apps/v1", "Deployment", f->ns, "ext");

    /* a controller that is stopping does nothing yet */
    atomic_bool stop = false;
    f->opts.proceed = &stop;
    ctl_suspension phase = CTL_SUSPENSION_SUSPENDED;
    char *msg = NULL;
    unsigned long writes = f->stats.updates;
    assert_co_pass(ctl_apply_suspend(&f->opts, f->inventory, &phase, &msg));
    f->opts.proceed = NULL;
    assert_int_equal(phase, CTL_SUSPENSION_PENDING);
    assert_int_equal(f->stats.updates, writes);
    assert_contains(msg, "to be scaled down");
    assert_contains(msg, "apps/v1 Deployment");
    assert_contains(msg, "batch/v1beta1 CronJob");
    free(msg);
    assert_int_equal(replicas_of(f->ns, "web"), 3);

    /* suspend: the workloads are told to stop, the Deployment still runs */
    assert_co_pass(ctl_apply_suspend(&f->opts, f->inventory, &phase, &msg));
    assert_int_equal(phase, CTL_SUSPENSION_SUSPENDING);
    char *want =
        co_xasprintf("waiting for apps/v1 Deployment %s/web (3 replicas) to scale down", f->ns);
    assert_string_equal(msg, want);
    free(want);
    free(msg);
    struct json_object *web = get("apps/v1", "Deployment", f->ns, "web");
    int64_t n = -1;
    assert_co_pass(co_json_get_int64(&n, web, "spec", "replicas", NULL));
    assert_int_equal(n, 0);
    assert_string_equal(annotation(web, CTL_ANN_SUSPENDED_STATE), "{\"replicas\":3}");
    json_object_put(web);
    struct json_object *tick = get("batch/v1beta1", "CronJob", f->ns, "tick");
    assert_true(json_object_get_boolean(co_json_get(tick, "spec", "suspend", NULL)));
    assert_string_equal(annotation(tick, CTL_ANN_SUSPENDED_STATE), "{\"suspend\":false}");
    json_object_put(tick);
    /* read-only workloads are never scaled */
    char *now = rv_of("apps/v1", "Deployment", f->ns, "ext");
    assert_string_equal(now, ext_rv);
    free(now);

    /* still running: nothing more is written */
    unsigned long updates = f->stats.updates;
    assert_co_pass(ctl_apply_suspend(&f->opts, f->inventory, &phase, &msg));
    assert_int_equal(phase, CTL_SUSPENSION_SUSPENDING);
    assert_int_equal(f->stats.updates, updates);
    free(msg);

    /* the pods are gone */
    deployment_status(f->ns, "web", 0);
    assert_co_pass(ctl_apply_suspend(&f->opts, f->inventory, &phase, &msg));
    assert_int_equal(phase, CTL_SUSPENSION_SUSPENDED);
    assert_string_equal(msg, "");
    free(msg);
    assert_int_equal(f->stats.updates, updates);

    /* someone scales it up meanwhile: down again, the first record kept */
    web = get("apps/v1", "Deployment", f->ns, "web");
    assert_co_pass(co_json_set(web, json_object_new_int64(5), "spec", "replicas", NULL));
    assert_co_pass(co_kube_update(NULL, admin, web, NULL));
    json_object_put(web);
    assert_co_pass(ctl_apply_suspend(&f->opts, f->inventory, &phase, &msg));
    free(msg);
    web = get("apps/v1", "Deployment", f->ns, "web");
    assert_co_pass(co_json_get_int64(&n, web, "spec", "replicas", NULL));
    assert_int_equal(n, 0);
    assert_string_equal(annotation(web, CTL_ANN_SUSPENDED_STATE), "{\"replicas\":3}");
    json_object_put(web);

    /* resume: the next apply pass restores what was recorded */
    pass_ok(f, objs, &done);
    assert_false(done);
    web = get("apps/v1", "Deployment", f->ns, "web");
    assert_co_pass(co_json_get_int64(&n, web, "spec", "replicas", NULL));
    assert_int_equal(n, 3);
    assert_null(annotation(web, CTL_ANN_SUSPENDED_STATE));
    json_object_put(web);
    tick = get("batch/v1beta1", "CronJob", f->ns, "tick");
    assert_false(json_object_get_boolean(co_json_get(tick, "spec", "suspend", NULL)));
    assert_null(annotation(tick, CTL_ANN_SUSPENDED_STATE));
    json_object_put(tick);
    make_deployment_ready(f->ns, "web");
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    web = get("apps/v1", "Deployment", f->ns, "web");
    assert_co_pass(co_json_get_int64(&n, web, "spec", "replicas", NULL));
    assert_int_equal(n, 3);
    json_object_put(web);
    now = rv_of("apps/v1", "Deployment", f->ns, "ext");
    assert_string_equal(now, ext_rv);
    free(now);
    free(ext_rv);
}

/* ---- through the reconciler ----------------------------------------------------------------- */

/* The test source's directory @p dir holds @p json in file @p file.yaml. */
static void put_source(const char *dir, const char *file, const char *json)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s/%s.yaml", srcdir, dir, file);
    char *text = co_xstrdup(json);
    for (char *p = text; *p; p++) {
        if (*p == '\'') {
            *p = '"';
        }
    }
    co_test_write_file(path, text, strlen(text));
    free(text);
}

/* A started manager with this engine, watching @p ns. */
static ctl_manager *start_manager(const char *ns, ctl_apply_ops *engine)
{
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.policy_probe_ns = CO_SECOND;
    o.workers = 2;
    o.namespaces = &ns;
    o.nnamespaces = 1;
    o.source = &src_ops;
    o.apply = engine;
    ctl_manager *m = NULL;
    assert_co_pass(ctl_manager_new(&m, &o));
    assert_co_pass(ctl_manager_start(m));
    return m;
}

static char *condition_message(const char *ns, const char *name)
{
    struct json_object *obj = ctl_test_get_component(admin, ns, name);
    struct json_object *conds = co_json_get(obj, "status", "conditions", NULL);
    struct json_object *m =
        conds ? co_json_get(json_object_array_get_idx(conds, 0), "message", NULL) : NULL;
    char *msg = co_xstrdup(m ? json_object_get_string(m) : "");
    json_object_put(obj);
    return msg;
}

static void patch_component(const char *ns, const char *name, const char *patch)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    struct json_object *p = jsonf("%s", patch);
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, p, NULL));
    json_object_put(p);
}

static void finish(ctl_manager *m, const char *ns, const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    ctl_test_wait_gone(admin, ns, name, WAIT_MS);
    ctl_manager_free(m);
}

static void test_lifecycle__reconciler_reports_blocked_guard(void **state)
{
    fixture *f = *state;
    put_source("guarded", "first", CONFIGMAP("g-first", "", "'a':'1'"));
    put_source("guarded", "second",
               CONFIGMAP("g-second", ANN("apply-order", "1") "," ANN("guard", "v1 ConfigMap gate"),
                         "'a':'2'"));
    ctl_test_create_component(admin, f->ns, "guarded", "{" SRC ",\"path\":\"guarded\"}");
    ctl_apply_ops engine = ctl_apply_engine_ops();
    ctl_manager *m = start_manager(f->ns, &engine);
    ctl_test_wait_state(admin, f->ns, "guarded", "Processing", "Blocked", WAIT_MS);
    char *msg = condition_message(f->ns, "guarded");
    char *want = co_xasprintf("Guard of v1 ConfigMap %s/g-second: waiting for condition \"Ready\" "
                              "of v1 ConfigMap %s/gate to become True (currently not found)",
                              f->ns, f->ns);
    assert_string_equal(msg, want);
    free(want);
    free(msg);
    assert_true(exists("v1", "ConfigMap", f->ns, "g-first"));
    assert_false(exists("v1", "ConfigMap", f->ns, "g-second"));

    create(jsonf("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'gate','namespace':"
                 "'%s'}}",
                 f->ns));
    ctl_test_wait_state(admin, f->ns, "guarded", "Ready", "Ready", WAIT_MS);
    assert_true(exists("v1", "ConfigMap", f->ns, "g-second"));
    finish(m, f->ns, "guarded");
}

static void test_lifecycle__reconciler_scales_down_and_resumes(void **state)
{
    fixture *f = *state;
    put_source("scaled", "web", DEPLOYMENT_N("sd-web", "3", ""));
    ctl_test_create_component(admin, f->ns, "scaled", "{" SRC ",\"path\":\"scaled\"}");
    ctl_apply_ops engine = ctl_apply_engine_ops();
    ctl_manager *m = start_manager(f->ns, &engine);
    ctl_test_wait_state(admin, f->ns, "scaled", "Processing", NULL, WAIT_MS);
    while (!exists("apps/v1", "Deployment", f->ns, "sd-web")) {
        ctl_test_wait_state(admin, f->ns, "scaled", "Processing", NULL, WAIT_MS);
    }
    make_deployment_ready(f->ns, "sd-web");
    ctl_test_wait_state(admin, f->ns, "scaled", "Ready", "Ready", WAIT_MS);

    patch_component(f->ns, "scaled", "{'spec':{'suspend':true,'suspendMode':'ScaleDown'}}");
    ctl_test_wait_state(admin, f->ns, "scaled", "Pending", "Suspending", WAIT_MS);
    char *msg = condition_message(f->ns, "scaled");
    char *want =
        co_xasprintf("Waiting for apps/v1 Deployment %s/sd-web (3 replicas) to scale down", f->ns);
    assert_string_equal(msg, want);
    free(want);
    free(msg);
    assert_int_equal(replicas_of(f->ns, "sd-web"), 0);

    deployment_status(f->ns, "sd-web", 0);
    ctl_test_wait_state(admin, f->ns, "scaled", "Pending", "Suspended", WAIT_MS);

    patch_component(f->ns, "scaled", "{'spec':{'suspend':false}}");
    ctl_test_wait_state(admin, f->ns, "scaled", "Processing", NULL, WAIT_MS);
    assert_int_equal(replicas_of(f->ns, "sd-web"), 3);
    struct json_object *web = get("apps/v1", "Deployment", f->ns, "sd-web");
    assert_null(annotation(web, CTL_ANN_SUSPENDED_STATE));
    json_object_put(web);
    make_deployment_ready(f->ns, "sd-web");
    ctl_test_wait_state(admin, f->ns, "scaled", "Ready", "Ready", WAIT_MS);
    finish(m, f->ns, "scaled");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_lifecycle__read_only_counted_never_written),
        T(test_lifecycle__managed_turned_read_only_is_kept),
        T(test_lifecycle__delete_only_deleted_never_created),
        T(test_lifecycle__delete_only_respects_owners),
        T(test_lifecycle__guard_blocks_later_waves),
        T(test_lifecycle__scale_down_and_resume),
        T(test_lifecycle__reconciler_reports_blocked_guard),
        T(test_lifecycle__reconciler_scales_down_and_resumes),
    };
#undef T
    return cmocka_run_group_tests_name("ctl_lifecycle_engine_integration", tests, group_setup,
                                       group_teardown);
}
