/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The apply engine against the real kube-apiserver of the test control plane, one test per rule
 * group of docs/behaviour.md ("Apply pass" to "Finalizers"): create → ready, the update policies
 * (with the kubectl field takeover of SsaOverride), adoption, waves, purge, obsolete removal,
 * reverse-wave deletion with namespaces last, orphan policies, the deletion guard for managed CRDs
 * and APIServices, Service-backed APIServices, crash safety of the inventory (also a process killed
 * amid creation), events on dependents with their error variants, the auxiliary participation
 * annotation, objects as users write them (ports without protocol, metadata copied from a live
 * object) and server-side apply merge failures that fail fast.
 *
 * There is no kube-controller-manager: Deployments and Jobs are made ready by writing their
 * status, and terminating namespaces are finalized by the test, as envtest users do. Each test
 * works in its own placement namespace with its own owner id; the inventory is serialised and
 * parsed again between passes, as the Component status would be.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_event.h"
#include "co/kube/kube_transport.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_inventory.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define MAX_PASSES 30

static co_kube_client *admin;

typedef struct fixture {
    char *ns;
    char *owner_id;
    ctl_apply_opts opts;
    struct json_object *inventory;
    ctl_apply_stats stats;
    bool changed;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->ns = co_test_kube_namespace(admin, "co-apply-");
    f->owner_id = co_xasprintf("test-cluster/%s/comp", f->ns);
    f->opts.target = admin;
    f->opts.owner_id = f->owner_id;
    f->opts.namespace = f->ns;
    f->opts.component_digest = "c1";
    f->opts.stats = &f->stats;
    f->opts.inventory_changed = &f->changed;
    f->inventory = json_object_new_array();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    json_object_put(f->inventory);
    free(f->owner_id);
    free(f->ns);
    free(f);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    co_kube_client_free(admin);
    return 0;
}

/* The objects of one render: printf-formatted JSON with ' for ". */
static struct json_object *render(const char *fmt, ...) CO_PRINTF(1, 2);
static struct json_object *render(const char *fmt, ...)
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

/* Persists the inventory the way a status write and read would. */
static void persist(fixture *f)
{
    char *text = co_json_dumps(f->inventory, 0);
    struct json_object *again = NULL;
    assert_co_pass(co_json_parse(&again, text, strlen(text)));
    free(text);
    json_object_put(f->inventory);
    f->inventory = again;
}

/* One reconcile: a fresh render, one Apply step, the inventory persisted. */
static int pass(fixture *f, const char *objects, bool *done)
{
    struct json_object *objs = render("%s", objects);
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

static int delete_until_done(fixture *f, int max, void (*between)(fixture *))
{
    bool done = false;
    int n = 0;
    while (!done && n < max) {
        co_error_clear();
        int rc = ctl_apply_delete(&f->opts, f->inventory, &done);
        if (rc < 0) {
            fail_msg("deletion step %d: %s", n, co_error_last());
        }
        persist(f);
        if (between) {
            between(f);
        }
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

static const char *str(const struct json_object *o, const char *a, const char *b, const char *c)
{
    struct json_object *v = c ? co_json_get(o, a, b, c, NULL) : co_json_get(o, a, b, NULL);
    return v ? json_object_get_string(v) : NULL;
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

/* Writes a ready status onto Deployment @p name (what the deployment controller would do). */
static void make_deployment_ready(const char *ns, const char *name)
{
    struct json_object *d = get("apps/v1", "Deployment", ns, name);
    assert_non_null(d);
    int64_t gen = 1, replicas = 1;
    assert_co_pass(co_json_get_int64(&gen, d, "metadata", "generation", NULL));
    if (co_json_get(d, "spec", "replicas", NULL)) {
        assert_co_pass(co_json_get_int64(&replicas, d, "spec", "replicas", NULL));
    }
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

#define DEPLOYMENT(name, annotations)                                                              \
    "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'" name                        \
    "','annotations':{" annotations                                                                \
    "}},'spec':{'replicas':1,'selector':{'matchLabels':{'app':'" name "'}},"                       \
    "'template':{'metadata':{'labels':{'app':'" name "'}},'spec':{'containers':[{'name':'c',"      \
    "'image':'busybox'}]}}}}"

#define CONFIGMAP(name, annotations, data)                                                         \
    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'" name                              \
    "','annotations':{" annotations "}},'data':{" data "}}"

#define ANN(key, value) "'component-operator.cs.sap.com/" key "':'" value "'"

/* ---- create → ready ------------------------------------------------------------------------- */

static void test_ctl_apply__create_then_ready(void **state)
{
    fixture *f = *state;
    const char *objs = "[" DEPLOYMENT("web", "") "," CONFIGMAP("cfg", "", "'k':'v'") "]";
    bool done = true;

    /* pass 1 records the keys and creates nothing */
    pass_ok(f, objs, &done);
    assert_false(done);
    assert_true(f->changed);
    assert_int_equal(json_object_array_length(f->inventory), 2);
    assert_string_equal(item_field(f, "web", "phase"), "ScheduledForApplication");
    assert_false(exists("apps/v1", "Deployment", f->ns, "web"));
    assert_int_equal(f->stats.creates, 0);

    /* pass 2 creates; the ConfigMap is ready at once, the Deployment is not */
    pass_ok(f, objs, &done);
    assert_false(done);
    struct json_object *live = get("apps/v1", "Deployment", f->ns, "web");
    assert_non_null(live);
    char *hashed = ctl_hash_owner_id(f->owner_id);
    assert_string_equal(str(live, "metadata", "labels", CTL_LABEL_OWNER_ID), hashed);
    assert_string_equal(str(live, "metadata", "annotations", CTL_ANN_OWNER_ID), f->owner_id);
    assert_string_equal(str(live, "metadata", "annotations", CTL_ANN_DIGEST),
                        item_field(f, "web", "digest"));
    json_object_put(live);
    free(hashed);
    assert_string_equal(item_field(f, "web", "phase"), "Creating");
    assert_non_null(item_field(f, "web", "lastAppliedAt"));

    pass_ok(f, objs, &done);
    assert_false(done);
    assert_string_equal(item_field(f, "cfg", "phase"), "Ready");
    assert_string_equal(item_field(f, "web", "status"), "InProgress");

    make_deployment_ready(f->ns, "web");
    pass_ok(f, objs, &done);
    assert_true(done);
    assert_string_equal(item_field(f, "web", "phase"), "Ready");
    assert_string_equal(item_field(f, "web", "status"), "Current");

    /* nothing changed: reads only */
    ctl_apply_stats before = f->stats;
    pass_ok(f, objs, &done);
    assert_true(done);
    assert_false(f->changed);
    assert_int_equal(f->stats.creates, before.creates);
    assert_int_equal(f->stats.updates, before.updates);
    assert_int_equal(f->stats.deletes, before.deletes);
    assert_true(f->stats.reads > before.reads);
}

/* ---- update policies ------------------------------------------------------------------------ */

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name); // NOLINT(concurrency-mt-unsafe): the tests run on one thread
    return v && *v ? v : dflt;
}

static void kubectl_apply(const char *json)
{
    char *dir = co_test_tmpdir();
    char *file = co_xasprintf("%s/obj.json", dir);
    co_test_write_file(file, json, strlen(json));
    /* kubectl from PATH, or the one tests/env/deps.sh installs */
    const char *cache = env_or("XDG_CACHE_HOME", NULL);
    char *path = cache
                     ? co_xasprintf("PATH=%s:%s/component-operator/bin", env_or("PATH", ""), cache)
                     : co_xasprintf("PATH=%s:%s/.cache/component-operator/bin", env_or("PATH", ""),
                                    env_or("HOME", "/root"));
    const char *argv[] = {
        "/usr/bin/env", path, "kubectl", "--kubeconfig", co_test_env("CO_TEST_KUBECONFIG"), "apply",
        "-f",           file, NULL};
    assert_int_equal(co_test_run(argv), 0);
    free(path);
    co_test_rmtree(dir);
    free(file);
    free(dir);
}

static void ssa_case(fixture *f, const char *policy, bool extra_survives)
{
    char *name = co_xasprintf("ssa-%s", policy);
    char *cm = co_xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                            "\"name\":\"%s\",\"namespace\":\"%s\"},\"data\":{\"a\":\"1\","
                            "\"extra\":\"from-kubectl\"}}",
                            name, f->ns);
    kubectl_apply(cm);
    char *objs = co_xasprintf("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'%s',"
                              "'annotations':{" ANN("update-policy", "%s") "}},'data':{'a':'1'}}]",
                              name, policy);
    /* adopt: the first apply finds the object and updates it */
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    struct json_object *live = get("v1", "ConfigMap", f->ns, name);
    assert_string_equal(str(live, "data", "a", NULL), "1");
    if (extra_survives) {
        assert_non_null(str(live, "data", "extra", NULL));
    } else {
        assert_null(co_json_get(live, "data", "extra", NULL));
    }
    json_object_put(live);
    free(objs);
    free(cm);
    free(name);
}

static void test_ctl_apply__ssa_override_takes_kubectl_fields(void **state)
{
    ssa_case(*state, "ssa-override", false);
}

static void test_ctl_apply__ssa_merge_leaves_kubectl_fields(void **state)
{
    ssa_case(*state, "ssa-merge", true);
}

/* Fields our own POST/PUT wrote (managedFields operation Update) are taken over into our Apply
 * entry when the policy becomes server-side apply, so dropping them from the manifest removes
 * them — under SsaMerge as well, which leaves kubectl's fields alone. */
static void test_ctl_apply__ssa_takes_over_own_update_fields(void **state)
{
    fixture *f = *state;
    assert_true(apply_until_done(
                    f, "[" CONFIGMAP("own", ANN("update-policy", "replace"), "'a':'1','b':'1'") "]",
                    MAX_PASSES) > 0);
    struct json_object *live = get("v1", "ConfigMap", f->ns, "own");
    struct json_object *mf = co_json_get(live, "metadata", "managedFields", NULL);
    assert_int_equal(json_object_array_length(mf), 1);
    assert_string_equal(str(json_object_array_get_idx(mf, 0), "operation", NULL, NULL), "Update");
    json_object_put(live);

    assert_true(
        apply_until_done(f, "[" CONFIGMAP("own", ANN("update-policy", "ssa-merge"), "'a':'2'") "]",
                         MAX_PASSES) > 0);
    live = get("v1", "ConfigMap", f->ns, "own");
    assert_string_equal(str(live, "data", "a", NULL), "2");
    assert_null(co_json_get(live, "data", "b", NULL));
    mf = co_json_get(live, "metadata", "managedFields", NULL);
    assert_int_equal(json_object_array_length(mf), 1);
    assert_string_equal(str(json_object_array_get_idx(mf, 0), "operation", NULL, NULL), "Apply");
    assert_string_equal(str(json_object_array_get_idx(mf, 0), "manager", NULL, NULL),
                        CTL_FIELD_MANAGER);
    json_object_put(live);
}

static void test_ctl_apply__replace_and_recreate(void **state)
{
    fixture *f = *state;
    const char *v1 = "[" CONFIGMAP("rep", ANN("update-policy", "replace"), "'k':'1'") "," CONFIGMAP(
        "rec", ANN("update-policy", "recreate"), "'k':'1'") "]";
    const char *v2 = "[" CONFIGMAP("rep", ANN("update-policy", "replace"), "'k':'2'") "," CONFIGMAP(
        "rec", ANN("update-policy", "recreate"), "'k':'2'") "]";
    assert_true(apply_until_done(f, v1, MAX_PASSES) > 0);
    struct json_object *rec = get("v1", "ConfigMap", f->ns, "rec");
    char *uid = co_xstrdup(str(rec, "metadata", "uid", NULL));
    json_object_put(rec);

    /* someone else adds a label to the Replace object; the PUT drops it */
    struct json_object *patch = co_test_json("{\"metadata\":{\"labels\":{\"foreign\":\"x\"}}}");
    co_kube_write_options wo = {0};
    wo.field_manager = "someone";
    assert_co_pass(co_kube_patch(NULL, admin, &(co_kube_ref){"v1", "ConfigMap", f->ns, "rep"},
                                 CO_KUBE_PATCH_MERGE, patch, &wo));
    json_object_put(patch);

    assert_true(apply_until_done(f, v2, MAX_PASSES) > 0);
    struct json_object *rep = get("v1", "ConfigMap", f->ns, "rep");
    assert_string_equal(str(rep, "data", "k", NULL), "2");
    assert_null(co_json_get(rep, "metadata", "labels", "foreign", NULL));
    json_object_put(rep);
    rec = get("v1", "ConfigMap", f->ns, "rec");
    assert_string_equal(str(rec, "data", "k", NULL), "2");
    assert_string_not_equal(str(rec, "metadata", "uid", NULL), uid); /* deleted and created */
    json_object_put(rec);
    free(uid);
}

/* ---- adoption ------------------------------------------------------------------------------- */

static void create_foreign(const fixture *f,
                           const char *name,
                           const char *owner_label,
                           const char *owner_annotation)
{
    struct json_object *cm =
        co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                     "\"%s\",\"namespace\":\"%s\",\"labels\":{%s%s%s},\"annotations\":{%s%s%s}}}",
                     name, f->ns, owner_label ? "\"" CTL_LABEL_OWNER_ID "\":\"" : "",
                     owner_label ? owner_label : "", owner_label ? "\"" : "",
                     owner_annotation ? "\"" CTL_ANN_OWNER_ID "\":\"" : "",
                     owner_annotation ? owner_annotation : "", owner_annotation ? "\"" : "");
    assert_co_pass(co_kube_create(NULL, admin, cm, NULL));
    json_object_put(cm);
}

/* The fixture's persist hook: the inventory written, and the pass goes on. */
static int persist_hook(void *ctx, struct json_object *inventory)
{
    (void)ctx;
    return inventory ? 0 : CO_EINVALID;
}

static void test_ctl_apply__adoption_policies(void **state)
{
    fixture *f = *state;
    bool done;
    /* with the reconciler's persist hook, a new object's adoption is checked in the pass that
     * records it, at its first write */
    f->opts.persist = persist_hook;
    create_foreign(f, "unowned", NULL, NULL);
    create_foreign(f, "foreign", "someoneelse", "other/ns/comp");

    assert_co_fail_with(
        CO_ECONFLICT,
        pass(f, "[" CONFIGMAP("unowned", ANN("adoption-policy", "never"), "") "]", &done));
    char *want = co_xasprintf("found existing object v1 ConfigMap %s/unowned without owner", f->ns);
    assert_string_equal(co_error_last(), want);
    free(want);
    assert_int_equal(json_object_array_length(f->inventory), 0);

    assert_co_fail_with(CO_ECONFLICT, pass(f, "[" CONFIGMAP("foreign", "", "") "]", &done));
    want = co_xasprintf("owner conflict; object v1 ConfigMap %s/foreign is owned by other/ns/comp",
                        f->ns);
    assert_string_equal(co_error_last(), want);
    free(want);

    /* IfUnowned adopts the unowned one, Always the foreign one */
    const char *both = "[" CONFIGMAP("unowned", "", "'x':'1'") "," CONFIGMAP(
        "foreign", ANN("adoption-policy", "Always"), "'x':'2'") "]";
    assert_true(apply_until_done(f, both, MAX_PASSES) > 0);
    char *hashed = ctl_hash_owner_id(f->owner_id);
    struct json_object *live = get("v1", "ConfigMap", f->ns, "foreign");
    assert_string_equal(str(live, "metadata", "labels", CTL_LABEL_OWNER_ID), hashed);
    assert_string_equal(str(live, "data", "x", NULL), "2");
    json_object_put(live);
    live = get("v1", "ConfigMap", f->ns, "unowned");
    assert_string_equal(str(live, "metadata", "labels", CTL_LABEL_OWNER_ID), hashed);
    json_object_put(live);
    free(hashed);
}

/* ---- waves and purge ------------------------------------------------------------------------ */

static void test_ctl_apply__waves_in_order(void **state)
{
    fixture *f = *state;
    const char *objs =
        "[" CONFIGMAP("second", ANN("apply-order", "1"), "") "," DEPLOYMENT("first", "") "]";
    bool done;
    for (int i = 0; i < 4; i++) {
        pass_ok(f, objs, &done);
        assert_false(done);
    }
    assert_true(exists("apps/v1", "Deployment", f->ns, "first"));
    assert_false(exists("v1", "ConfigMap", f->ns, "second")); /* waits for wave 0 */
    assert_string_equal(item_field(f, "second", "phase"), "ScheduledForApplication");
    make_deployment_ready(f->ns, "first");
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    assert_true(exists("v1", "ConfigMap", f->ns, "second"));
}

static void complete_job(const char *ns, const char *name)
{
    struct json_object *j = get("batch/v1", "Job", ns, name);
    assert_non_null(j);
    json_object_object_add(
        j, "status",
        co_test_json("{\"startTime\":\"2024-01-01T00:00:00Z\",\"completionTime\":"
                     "\"2024-01-01T00:00:01Z\",\"succeeded\":1,\"conditions\":[{\"type\":"
                     "\"Complete\",\"status\":\"True\"}]}"));
    assert_co_pass(co_kube_update_status(NULL, admin, j, NULL));
    json_object_put(j);
}

#define JOB(name, annotations)                                                                     \
    "{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'" name                              \
    "','annotations':{" annotations                                                                \
    "}},'spec':{'template':{'spec':{'restartPolicy':'Never','containers':[{"                       \
    "'name':'c','image':'busybox'}]}}}}"

static void test_ctl_apply__purge_after_wave(void **state)
{
    fixture *f = *state;
    const char *objs = "[" JOB("migrate", ANN("purge-order", "0")) "," CONFIGMAP(
        "after", ANN("apply-order", "1"), "") "]";
    bool done;
    pass_ok(f, objs, &done);
    pass_ok(f, objs, &done);
    assert_true(exists("batch/v1", "Job", f->ns, "migrate"));
    pass_ok(f, objs, &done);
    assert_false(done);
    assert_false(exists("v1", "ConfigMap", f->ns, "after"));
    complete_job(f->ns, "migrate");
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    assert_false(exists("batch/v1", "Job", f->ns, "migrate")); /* purged */
    assert_string_equal(item_field(f, "migrate", "phase"), "Completed");
    assert_true(exists("v1", "ConfigMap", f->ns, "after"));
    /* a further pass leaves the completed job alone */
    pass_ok(f, objs, &done);
    assert_true(done);
    assert_false(exists("batch/v1", "Job", f->ns, "migrate"));
}

/* ---- obsolete objects, deletion ------------------------------------------------------------- */

static void test_ctl_apply__obsolete_objects_removed(void **state)
{
    fixture *f = *state;
    assert_true(apply_until_done(f, "[" CONFIGMAP("a", "", "") "," CONFIGMAP("b", "", "") "]",
                                 MAX_PASSES) > 0);
    assert_true(exists("v1", "ConfigMap", f->ns, "b"));
    assert_true(apply_until_done(f, "[" CONFIGMAP("a", "", "") "]", MAX_PASSES) > 0);
    assert_false(exists("v1", "ConfigMap", f->ns, "b"));
    assert_true(exists("v1", "ConfigMap", f->ns, "a"));
    assert_int_equal(json_object_array_length(f->inventory), 1);
}

static char *child_ns;

/* The namespace controller's job: a terminating namespace is finalized. */
static void finalize_namespaces(fixture *f)
{
    (void)f;
    struct json_object *n = get("v1", "Namespace", NULL, child_ns);
    if (!n || !co_json_get(n, "metadata", "deletionTimestamp", NULL)) {
        json_object_put(n);
        return;
    }
    json_object_object_add(co_json_get(n, "spec", NULL), "finalizers", json_object_new_array());
    char *path = co_xasprintf("/api/v1/namespaces/%s/finalize", child_ns);
    assert_co_pass(co_kube_request_json(NULL, admin, "PUT", path, n));
    free(path);
    json_object_put(n);
}

typedef struct seen {
    bool early_gone_while_late_present;
    bool ns_gone_while_content_present;
} seen;

static void test_ctl_apply__deletion_in_reverse_waves_namespaces_last(void **state)
{
    fixture *f = *state;
    child_ns = co_test_random_name("co-apply-child-", 6);
    char *objs = co_xasprintf(
        "[{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'%s'}},"
        "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'inner','namespace':'%s'}},"
        "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'late','annotations':{" ANN(
            "delete-order", "1") "}}},"
                                 "{'apiVersion':'v1','kind':'Secret','metadata':{'name':'early'}}]",
        child_ns, child_ns);
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    assert_true(exists("v1", "ConfigMap", child_ns, "inner"));

    bool done = false;
    int n = 0;
    bool early_first = true, ns_last = true;
    while (!done && n++ < MAX_PASSES) {
        assert_co_pass(ctl_apply_delete(&f->opts, f->inventory, &done));
        persist(f);
        bool early = exists("v1", "Secret", f->ns, "early");
        bool late = exists("v1", "ConfigMap", f->ns, "late");
        bool inner = exists("v1", "ConfigMap", child_ns, "inner");
        struct json_object *nso = get("v1", "Namespace", NULL, child_ns);
        bool ns_deleting = !nso || co_json_get(nso, "metadata", "deletionTimestamp", NULL);
        json_object_put(nso);
        if (!late && early) {
            early_first = false; /* the later wave went first */
        }
        if (ns_deleting && inner) {
            ns_last = false;
        }
        finalize_namespaces(f);
    }
    assert_true(done);
    assert_true(early_first);
    assert_true(ns_last);
    assert_false(exists("v1", "ConfigMap", f->ns, "late"));
    assert_false(exists("v1", "Namespace", NULL, child_ns));
    assert_int_equal(json_object_array_length(f->inventory), 0);
    free(objs);
    free(child_ns);
}

static void test_ctl_apply__orphan_policies(void **state)
{
    fixture *f = *state;
    const char *all = "[" CONFIGMAP("keep", ANN("delete-policy", "orphan"), "") "," CONFIGMAP(
        "on-apply", ANN("delete-policy", "orphan-on-apply"),
        "") "," CONFIGMAP("on-delete", ANN("delete-policy", "OrphanOnDelete"),
                          "") "," CONFIGMAP("plain", "", "") "]";
    assert_true(apply_until_done(f, all, MAX_PASSES) > 0);
    /* obsolete during apply: orphan and orphan-on-apply stay, orphan-on-delete goes */
    assert_true(apply_until_done(f, "[" CONFIGMAP("plain", "", "") "]", MAX_PASSES) > 0);
    assert_true(exists("v1", "ConfigMap", f->ns, "keep"));
    assert_true(exists("v1", "ConfigMap", f->ns, "on-apply"));
    assert_false(exists("v1", "ConfigMap", f->ns, "on-delete"));
    /* the orphans keep our owner label (another component cannot adopt them silently) */
    struct json_object *kept = get("v1", "ConfigMap", f->ns, "keep");
    assert_non_null(co_json_get(kept, "metadata", "labels", CTL_LABEL_OWNER_ID, NULL));
    json_object_put(kept);

    /* component deletion: orphan-on-delete stays, plain goes */
    assert_true(apply_until_done(f, all, MAX_PASSES) > 0);
    assert_true(delete_until_done(f, MAX_PASSES, NULL) > 0);
    assert_true(exists("v1", "ConfigMap", f->ns, "keep"));
    assert_false(exists("v1", "ConfigMap", f->ns, "on-apply"));
    assert_true(exists("v1", "ConfigMap", f->ns, "on-delete"));
    assert_false(exists("v1", "ConfigMap", f->ns, "plain"));
}

/* ---- deletion guard ------------------------------------------------------------------------- */

static void test_ctl_apply__deletion_blocked_by_foreign_instance(void **state)
{
    fixture *f = *state;
    char *group = co_test_random_name("g", 8);
    char *objs = co_xasprintf(
        "[{'apiVersion':'apiextensions.k8s.io/v1','kind':'CustomResourceDefinition','metadata':"
        "{'name':'widgets.%s.example.com'},'spec':{'group':'%s.example.com','scope':"
        "'Namespaced','names':{'plural':'widgets','singular':'widget','kind':'Widget',"
        "'listKind':'WidgetList'},'versions':[{'name':'v1','served':true,'storage':true,"
        "'schema':{'openAPIV3Schema':{'type':'object','x-kubernetes-preserve-unknown-fields':"
        "true}}}]}},"
        "{'apiVersion':'%s.example.com/v1','kind':'Widget','metadata':{'name':'ours'}}]",
        group, group, group);
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    char *crd_name = co_xasprintf("widgets.%s.example.com", group);
    struct json_object *crd =
        get("apiextensions.k8s.io/v1", "CustomResourceDefinition", NULL, crd_name);
    assert_true(json_object_array_length(co_json_get(crd, "metadata", "finalizers", NULL)) > 0);
    json_object_put(crd);

    char *av = co_xasprintf("%s.example.com/v1", group);
    struct json_object *foreign = co_test_json("{\"apiVersion\":\"%s\",\"kind\":\"Widget\","
                                               "\"metadata\":{\"name\":\"theirs\",\"namespace\":"
                                               "\"%s\"}}",
                                               av, f->ns);
    assert_co_pass(co_kube_create(NULL, admin, foreign, NULL));
    json_object_put(foreign);

    bool allowed = true;
    char *msg = NULL;
    assert_co_pass(ctl_apply_deletion_allowed(&f->opts, f->inventory, &allowed, &msg));
    assert_false(allowed);
    char *want = co_xasprintf("crd %s is still in use (instances exist)", crd_name);
    assert_string_equal(msg, want);
    free(want);
    free(msg);

    co_kube_delete_options d = CO_KUBE_DELETE_OPTIONS_INIT;
    assert_co_pass(co_kube_delete(NULL, admin, &(co_kube_ref){av, "Widget", f->ns, "theirs"}, &d));
    assert_co_pass(ctl_apply_deletion_allowed(&f->opts, f->inventory, &allowed, &msg));
    assert_true(allowed);
    assert_null(msg);
    assert_true(delete_until_done(f, MAX_PASSES, NULL) > 0);
    assert_false(exists("apiextensions.k8s.io/v1", "CustomResourceDefinition", NULL, crd_name));
    free(av);
    free(crd_name);
    free(objs);
    free(group);
}

/* Polls @p path until it answers (a type that was just defined is served a moment later). */
static void wait_served(const char *path)
{
    for (int i = 0; i < 600; i++) {
        struct json_object *doc = NULL;
        co_error_clear();
        if (co_kube_request_json(&doc, admin, "GET", path, NULL) == 0) {
            json_object_put(doc);
            return;
        }
        struct timespec tick = {0, 100000000L};
        nanosleep(&tick, NULL);
    }
    fail_msg("%s never served: %s", co_error_last(), path);
}

/* An APIService (a local one: no backing service, so kube-apiserver reports it Available) is
 * applied late within its wave, after the regular objects of the wave are ready; it carries our
 * finalizer, and the component's deletion is blocked while a foreign instance of its group
 * version exists (here served by a CRD outside the component), and proceeds once it is gone. */
static void test_ctl_apply__apiservice_late_and_deletion_guard(void **state)
{
    fixture *f = *state;
    char *group = co_test_random_name("svc", 8);
    char *svc_name = co_xasprintf("v1.%s.example.com", group);
    char *objs = co_xasprintf(
        "[{'apiVersion':'apiregistration.k8s.io/v1','kind':'APIService','metadata':{'name':"
        "'%s'},'spec':{'group':'%s.example.com','version':'v1','groupPriorityMinimum':1000,"
        "'versionPriority':15}}," DEPLOYMENT("gate", "") "]",
        svc_name, group);
    bool done = false;
    for (int i = 0; i < 4; i++) {
        pass_ok(f, objs, &done);
        assert_false(done);
    }
    assert_true(exists("apps/v1", "Deployment", f->ns, "gate"));
    /* late: waits for the regular Deployment of the same wave */
    assert_false(exists("apiregistration.k8s.io/v1", "APIService", NULL, svc_name));
    assert_string_equal(item_field(f, svc_name, "phase"), "ScheduledForApplication");
    make_deployment_ready(f->ns, "gate");
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    struct json_object *svc = get("apiregistration.k8s.io/v1", "APIService", NULL, svc_name);
    assert_non_null(svc);
    struct json_object *fins = co_json_get(svc, "metadata", "finalizers", NULL);
    assert_non_null(fins);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(fins, 0)), CTL_NAME);
    json_object_put(svc);
    assert_string_equal(item_field(f, svc_name, "status"), "Current");

    /* someone else serves a type in that group version and creates an instance */
    struct json_object *crd = co_test_json(
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"gadgets.%s.example.com\"},\"spec\":{\"group\":"
        "\"%s.example.com\",\"scope\":\"Namespaced\",\"names\":{\"plural\":\"gadgets\","
        "\"singular\":\"gadget\",\"kind\":\"Gadget\",\"listKind\":\"GadgetList\"},"
        "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{"
        "\"openAPIV3Schema\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":"
        "true}}}]}}",
        group, group);
    assert_co_pass(co_kube_create(NULL, admin, crd, NULL));
    json_object_put(crd);
    char *av = co_xasprintf("%s.example.com/v1", group);
    char *path = co_xasprintf("/apis/%s/namespaces/%s/gadgets", av, f->ns);
    wait_served(path);
    struct json_object *gadget = co_test_json("{\"apiVersion\":\"%s\",\"kind\":\"Gadget\","
                                              "\"metadata\":{\"name\":\"theirs\",\"namespace\":"
                                              "\"%s\"}}",
                                              av, f->ns);
    assert_co_pass(co_kube_create(NULL, admin, gadget, NULL));
    json_object_put(gadget);

    bool allowed = true;
    char *msg = NULL;
    assert_co_pass(ctl_apply_deletion_allowed(&f->opts, f->inventory, &allowed, &msg));
    assert_false(allowed);
    char *want = co_xasprintf("api service %s is still in use (instances exist)", svc_name);
    assert_string_equal(msg, want);
    free(want);
    free(msg);

    co_kube_delete_options d = CO_KUBE_DELETE_OPTIONS_INIT;
    assert_co_pass(co_kube_delete(NULL, admin, &(co_kube_ref){av, "Gadget", f->ns, "theirs"}, &d));
    assert_co_pass(ctl_apply_deletion_allowed(&f->opts, f->inventory, &allowed, &msg));
    assert_true(allowed);
    assert_null(msg);
    /* the CRD goes first: while it exists, kube-apiserver registers an APIService of its own
     * under the same name */
    char *crd_name = co_xasprintf("gadgets.%s.example.com", group);
    assert_co_pass(co_kube_delete(
        NULL, admin,
        &(co_kube_ref){"apiextensions.k8s.io/v1", "CustomResourceDefinition", NULL, crd_name}, &d));
    bool crd_left = true;
    for (int i = 0; i < 600 && crd_left; i++) {
        struct json_object *left =
            get("apiextensions.k8s.io/v1", "CustomResourceDefinition", NULL, crd_name);
        crd_left = left != NULL;
        json_object_put(left);
        struct timespec tick = {0, 100000000L};
        nanosleep(&tick, NULL);
    }
    assert_false(crd_left);
    free(crd_name);
    assert_true(delete_until_done(f, MAX_PASSES, NULL) > 0);
    assert_false(exists("apiregistration.k8s.io/v1", "APIService", NULL, svc_name));
    assert_false(exists("apps/v1", "Deployment", f->ns, "gate"));
    free(path);
    free(av);
    free(objs);
    free(svc_name);
    free(group);
}

/* What one deletion step left behind (for the deletion order of the Service-backed APIService). */
static const char *order_svc_name;
static bool order_violated;
static int order_steps_with_apiservice;

static void record_order(fixture *f)
{
    bool svc = exists("apiregistration.k8s.io/v1", "APIService", NULL, order_svc_name);
    bool backing = exists("v1", "Service", f->ns, "api");
    if (svc) {
        order_steps_with_apiservice++;
        if (!backing) {
            order_violated = true; /* the backing Service went before its APIService */
        }
    }
}

#define SB_APISERVICE                                                                              \
    "[{'apiVersion':'apiregistration.k8s.io/v1','kind':'APIService','metadata':{'name':"           \
    "'%s'},'spec':{'group':'%s.example.com','version':'v1','groupPriorityMinimum':1000,"           \
    "'versionPriority':%d,'insecureSkipTLSVerify':true,'service':{'namespace':'%s','name':"        \
    "'api','port':443}}},"                                                                         \
    "{'apiVersion':'v1','kind':'Service','metadata':{'name':'api'},'spec':{'ports':[{"             \
    "'port':443,'targetPort':8443}]}}]"

/* An APIService backed by a Service of the component (not local): kube-apiserver's aggregator of
 * 1.20 takes no server-side apply for APIServices, so it is created and updated with POST and PUT
 * (no managedFields entry is an Apply); it is applied after the Service (late in its wave); with
 * no endpoints behind the Service the aggregator reports it not Available, which keeps it
 * InProgress; on deletion it goes before its Service, also when its discovery answers 503. */
static void test_ctl_apply__service_backed_apiservice(void **state)
{
    fixture *f = *state;
    char *group = co_test_random_name("sb", 8);
    char *svc_name = co_xasprintf("v1.%s.example.com", group);
    char *v1 = co_xasprintf(SB_APISERVICE, svc_name, group, 15, f->ns);
    bool done = false;
    for (int i = 0;
         i < MAX_PASSES && !exists("apiregistration.k8s.io/v1", "APIService", NULL, svc_name);
         i++) {
        pass_ok(f, v1, &done);
    }
    assert_true(exists("v1", "Service", f->ns, "api"));
    struct json_object *live = get("apiregistration.k8s.io/v1", "APIService", NULL, svc_name);
    assert_non_null(live);
    assert_string_equal(str(live, "spec", "service", "name"), "api");
    struct json_object *fins = co_json_get(live, "metadata", "finalizers", NULL);
    assert_non_null(fins);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(fins, 0)), CTL_NAME);
    /* whatever field management the aggregator records, none of it is an Apply */
    struct json_object *mf = co_json_get(live, "metadata", "managedFields", NULL);
    for (size_t i = 0; mf && i < json_object_array_length(mf); i++) {
        assert_string_not_equal(str(json_object_array_get_idx(mf, i), "operation", NULL, NULL),
                                "Apply");
    }
    json_object_put(live);

    /* the aggregator finds no endpoints: not Available, so not ready */
    const char *avail = NULL;
    for (int i = 0; i < 600; i++) {
        live = get("apiregistration.k8s.io/v1", "APIService", NULL, svc_name);
        struct json_object *conds = co_json_get(live, "status", "conditions", NULL);
        for (size_t j = 0; conds && j < json_object_array_length(conds); j++) {
            struct json_object *c = json_object_array_get_idx(conds, j);
            if (!strcmp(str(c, "type", NULL, NULL), "Available")) {
                avail = !strcmp(str(c, "status", NULL, NULL), "False") ? "False" : "other";
            }
        }
        json_object_put(live);
        if (avail) {
            break;
        }
        struct timespec tick = {0, 100000000L};
        nanosleep(&tick, NULL);
    }
    assert_non_null(avail);
    assert_string_equal(avail, "False");
    for (int i = 0; i < 3; i++) {
        pass_ok(f, v1, &done);
        assert_false(done);
    }
    assert_string_equal(item_field(f, svc_name, "status"), "InProgress");
    assert_string_equal(item_field(f, "api", "status"), "Current");

    /* an update goes through PUT as well */
    char *v2 = co_xasprintf(SB_APISERVICE, svc_name, group, 16, f->ns);
    for (int i = 0; i < 3; i++) {
        pass_ok(f, v2, &done);
    }
    live = get("apiregistration.k8s.io/v1", "APIService", NULL, svc_name);
    int64_t prio = 0;
    assert_co_pass(co_json_get_int64(&prio, live, "spec", "versionPriority", NULL));
    assert_int_equal(prio, 16);
    json_object_put(live);

    /* deletion: the APIService before the Service that backs it */
    order_svc_name = svc_name;
    order_violated = false;
    order_steps_with_apiservice = 0;
    assert_true(delete_until_done(f, MAX_PASSES, record_order) > 0);
    assert_false(order_violated);
    assert_false(exists("apiregistration.k8s.io/v1", "APIService", NULL, svc_name));
    assert_false(exists("v1", "Service", f->ns, "api"));
    free(v2);
    free(v1);
    free(svc_name);
    free(group);
}

/* Within one wave, an instance of a type the component defines (a managed instance) waits
 * until the regular objects of the wave — its CRD and an unready Deployment here — are ready. */
static void test_ctl_apply__managed_instances_staged_within_wave(void **state)
{
    fixture *f = *state;
    char *group = co_test_random_name("m", 8);
    char *objs = co_xasprintf(
        "[{'apiVersion':'%s.example.com/v1','kind':'Widget','metadata':{'name':'inst'}},"
        "{'apiVersion':'apiextensions.k8s.io/v1','kind':'CustomResourceDefinition','metadata':"
        "{'name':'widgets.%s.example.com'},'spec':{'group':'%s.example.com','scope':"
        "'Namespaced','names':{'plural':'widgets','singular':'widget','kind':'Widget',"
        "'listKind':'WidgetList'},'versions':[{'name':'v1','served':true,'storage':true,"
        "'schema':{'openAPIV3Schema':{'type':'object','x-kubernetes-preserve-unknown-fields':"
        "true}}}]}}," DEPLOYMENT("gate", "") "]",
        group, group, group);
    char *crd_name = co_xasprintf("widgets.%s.example.com", group);
    char *av = co_xasprintf("%s.example.com/v1", group);
    bool done = false;
    for (int i = 0; i < 5; i++) {
        pass_ok(f, objs, &done);
        assert_false(done);
    }
    assert_true(exists("apiextensions.k8s.io/v1", "CustomResourceDefinition", NULL, crd_name));
    assert_true(exists("apps/v1", "Deployment", f->ns, "gate"));
    assert_string_equal(item_field(f, "inst", "phase"), "ScheduledForApplication");
    /* not created: absent, or its type not even discovered yet */
    struct json_object *inst = NULL;
    co_error_clear();
    int rc = co_kube_get(&inst, admin, &(co_kube_ref){av, "Widget", f->ns, "inst"}, NULL);
    assert_true(rc == CO_ENOTFOUND || rc == CO_ENOMATCH);
    co_error_clear();
    make_deployment_ready(f->ns, "gate");
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    assert_true(exists(av, "Widget", f->ns, "inst"));
    /* deletion: the instance goes before its CRD */
    assert_true(delete_until_done(f, MAX_PASSES, NULL) > 0);
    assert_false(exists("apiextensions.k8s.io/v1", "CustomResourceDefinition", NULL, crd_name));
    free(av);
    free(crd_name);
    free(objs);
    free(group);
}

static void test_ctl_apply__additional_managed_types_block_deletion(void **state)
{
    fixture *f = *state;
    char group[] = "", kind[] = "ServiceAccount";
    co_type_info amt[] = {{group, kind}};
    f->opts.additional_managed_types = amt;
    f->opts.n_additional_managed_types = 1;
    struct json_object *sa = co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\","
                                          "\"metadata\":{\"name\":\"x\",\"namespace\":\"%s\"}}",
                                          f->ns);
    assert_co_pass(co_kube_create(NULL, admin, sa, NULL));
    json_object_put(sa);
    bool allowed = true;
    char *msg = NULL;
    assert_co_pass(ctl_apply_deletion_allowed(&f->opts, f->inventory, &allowed, &msg));
    assert_false(allowed);
    assert_string_equal(msg, "type ServiceAccount is still in use (instances exist)");
    free(msg);
    f->opts.additional_managed_types = NULL;
    f->opts.n_additional_managed_types = 0;
}

/* ---- crash safety --------------------------------------------------------------------------- */

static void test_ctl_apply__crash_after_inventory_write_leaks_nothing(void **state)
{
    fixture *f = *state;
    const char *objs =
        "[" CONFIGMAP("c1", "", "") "," CONFIGMAP("c2", "", "") "," DEPLOYMENT("d1", "") "]";
    char *dir = co_test_tmpdir();
    char *file = co_xasprintf("%s/inventory.json", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the first operator process: pass 1 persisted, pass 2 creates and is killed before
         * its status write */
        bool done;
        struct json_object *o1 = render("%s", objs);
        if (ctl_apply(&f->opts, f->inventory, o1, &done) < 0) {
            _exit(2);
        }
        char *text = co_json_dumps(f->inventory, 0);
        FILE *fp = fopen(file, "w");
        if (!fp || fputs(text, fp) < 0 || fclose(fp) != 0) {
            _exit(3);
        }
        struct json_object *o2 = render("%s", objs);
        if (ctl_apply(&f->opts, f->inventory, o2, &done) < 0) {
            _exit(4);
        }
        raise(SIGKILL);
        _exit(5);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_true(exists("v1", "ConfigMap", f->ns, "c1")); /* the objects were created */

    /* the next operator process starts from the persisted inventory */
    size_t len = 0;
    char *text = co_test_read_file(file, &len);
    assert_non_null(text);
    json_object_put(f->inventory);
    assert_co_pass(co_json_parse(&f->inventory, text, len));
    free(text);
    assert_int_equal(json_object_array_length(f->inventory), 3);
    /* it picks up where the first left off: the objects it finds are its own */
    make_deployment_ready(f->ns, "d1");
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    assert_int_equal(json_object_array_length(f->inventory), 3);
    assert_string_equal(item_field(f, "c2", "phase"), "Ready");
    /* and then the component is deleted */
    assert_true(delete_until_done(f, MAX_PASSES, NULL) > 0);

    char *sel = co_xasprintf("%s", CTL_LABEL_OWNER_ID);
    static const char *const kinds[][2] = {{"v1", "ConfigMap"}, {"apps/v1", "Deployment"}};
    for (size_t i = 0; i < CO_ARRAY_SIZE(kinds); i++) {
        struct json_object *list = NULL;
        co_kube_list_options lo = {0};
        lo.label_selector = sel;
        assert_co_pass(
            co_kube_list(&list, admin, &(co_kube_ref){kinds[i][0], kinds[i][1], f->ns, NULL}, &lo));
        assert_int_equal(json_object_array_length(co_json_get(list, "items", NULL)), 0);
        json_object_put(list);
    }
    free(sel);
    co_test_rmtree(dir);
    free(file);
    free(dir);
}

/* A transport over the real one that kills the process (SIGKILL: no clean-up, no status write)
 * as soon as the server has accepted @ref kill_after writes: the fault point of a crash in the
 * middle of a pass that creates objects. */
typedef struct killer_transport {
    co_kube_transport base;
    co_kube_transport *real;
    int writes;
    int kill_after;
} killer_transport;

static int killer_send(co_kube_transport *self, const co_kube_request *req, co_kube_response *resp)
{
    killer_transport *k = (killer_transport *)self;
    if (strcmp(req->method, "GET") != 0 && k->writes >= k->kill_after) {
        raise(SIGKILL);
    }
    int rc = k->real->send(k->real, req, resp);
    if (rc == 0 && strcmp(req->method, "GET") != 0 && resp->status >= 200 && resp->status < 300) {
        k->writes++;
    }
    return rc;
}

static void killer_free(co_kube_transport *self)
{
    killer_transport *k = (killer_transport *)self;
    k->real->free(k->real);
    free(k);
}

/* A client of the test cluster that dies before its (@p kill_after + 1)-th write. */
static co_kube_client *killer_client(int kill_after)
{
    co_kube_config *cfg = NULL;
    assert_co_pass(co_kube_config_load(&cfg, co_test_env("CO_TEST_KUBECONFIG"), NULL));
    killer_transport *k = calloc(1, sizeof(*k));
    assert_non_null(k);
    assert_co_pass(co_kube_transport_curl_new(&k->real, cfg));
    k->base.send = killer_send;
    k->base.free = killer_free;
    k->kill_after = kill_after;
    co_kube_client *c = NULL;
    assert_co_pass(co_kube_client_new_with_transport(&c, cfg, &k->base, NULL));
    co_kube_config_free(cfg);
    return c;
}

/* Objects carrying our owner-id label in the fixture's namespace, of the given kinds. */
static size_t owned_objects(const fixture *f)
{
    static const char *const kinds[][2] = {{"v1", "ConfigMap"},
                                           {"v1", "Secret"},
                                           {"apps/v1", "Deployment"}};
    size_t n = 0;
    for (size_t i = 0; i < CO_ARRAY_SIZE(kinds); i++) {
        struct json_object *list = NULL;
        co_kube_list_options lo = {0};
        lo.label_selector = CTL_LABEL_OWNER_ID;
        assert_co_pass(
            co_kube_list(&list, admin, &(co_kube_ref){kinds[i][0], kinds[i][1], f->ns, NULL}, &lo));
        n += json_object_array_length(co_json_get(list, "items", NULL));
        json_object_put(list);
    }
    return n;
}

/* The operator process is killed in the middle of creating the objects of a pass — after the
 * inventory was persisted, after the first object was created and before the others were:
 * restarted from the persisted inventory it creates the rest, every object on the server is in
 * the inventory, and the component's deletion leaves nothing behind. */
static void test_ctl_apply__crash_amid_creation_leaks_nothing(void **state)
{
    fixture *f = *state;
    const char *objs = "[" CONFIGMAP("a1", "", "") "," CONFIGMAP("a2", "", "") "," CONFIGMAP(
        "a3", "", "") ",{'apiVersion':'v1','kind':'Secret','metadata':{'name':'s1'},"
                      "'stringData':{'k':'v'}}," DEPLOYMENT("d1", "") "]";
    char *dir = co_test_tmpdir();
    char *file = co_xasprintf("%s/inventory.json", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        bool done;
        struct json_object *o1 = render("%s", objs);
        if (ctl_apply(&f->opts, f->inventory, o1, &done) < 0 || done) {
            _exit(2);
        }
        /* the status write of the new inventory items */
        char *text = co_json_dumps(f->inventory, 0);
        FILE *fp = fopen(file, "w");
        if (!fp || fputs(text, fp) < 0 || fclose(fp) != 0) {
            _exit(3);
        }
        f->opts.target = killer_client(1);
        struct json_object *o2 = render("%s", objs);
        if (ctl_apply(&f->opts, f->inventory, o2, &done) < 0) {
            _exit(5);
        }
        _exit(4); /* not reached: the pass writes more than once */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* killed amid creation: exactly one object made it */
    assert_int_equal(owned_objects(f), 1);

    size_t len = 0;
    char *text = co_test_read_file(file, &len);
    assert_non_null(text);
    json_object_put(f->inventory);
    assert_co_pass(co_json_parse(&f->inventory, text, len));
    free(text);
    assert_int_equal(json_object_array_length(f->inventory), 5);

    /* the restarted process: a few passes create the rest; the Deployment is made ready */
    bool done = false;
    for (int i = 0; i < MAX_PASSES && !exists("apps/v1", "Deployment", f->ns, "d1"); i++) {
        pass_ok(f, objs, &done);
    }
    make_deployment_ready(f->ns, "d1");
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    /* every object is on the server and in the inventory, and nothing else is ours */
    assert_int_equal(json_object_array_length(f->inventory), 5);
    static const char *const names[] = {"a1", "a2", "a3", "s1", "d1"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(names); i++) {
        assert_string_equal(item_field(f, names[i], "phase"), "Ready");
    }
    assert_int_equal(owned_objects(f), 5);

    assert_true(delete_until_done(f, MAX_PASSES, NULL) > 0);
    assert_int_equal(json_object_array_length(f->inventory), 0);
    assert_int_equal(owned_objects(f), 0);
    co_test_rmtree(dir);
    free(file);
    free(dir);
}

/* ---- reconcile policies, forced reapply, missing namespaces ---------------------------------- */

static void test_ctl_apply__reconcile_policies_and_reapply(void **state)
{
    fixture *f = *state;
    const char *v1 =
        "[" CONFIGMAP("periodic", ANN("reapply-interval", "1s"), "'k':'1'") "," CONFIGMAP(
            "once", ANN("reconcile-policy", "once"),
            "'k':'1'") "," CONFIGMAP("comp",
                                     ANN("reconcile-policy", "on-object-or-component-change"),
                                     "'k':'1'") "]";
    const char *v2 =
        "[" CONFIGMAP("periodic", ANN("reapply-interval", "1s"), "'k':'1'") "," CONFIGMAP(
            "once", ANN("reconcile-policy", "once"),
            "'k':'2'") "," CONFIGMAP("comp",
                                     ANN("reconcile-policy", "on-object-or-component-change"),
                                     "'k':'1'") "]";
    assert_true(apply_until_done(f, v1, MAX_PASSES) > 0);
    assert_string_equal(item_field(f, "once", "digest"), "__once__");
    char *want = co_xasprintf("@%s", "c1");
    assert_contains(item_field(f, "comp", "digest"), want);
    free(want);

    struct timespec two = {2, 0};
    nanosleep(&two, NULL);
    bool done = true;
    unsigned long updates = f->stats.updates;
    pass_ok(f, v2, &done);
    /* the forced reapply is written, and the answer (a ConfigMap) is current at once */
    assert_true(done);
    assert_string_equal(item_field(f, "periodic", "phase"), "Ready");
    assert_string_equal(item_field(f, "comp", "phase"), "Ready");
    assert_true(f->stats.updates > updates);
    assert_true(apply_until_done(f, v2, MAX_PASSES) > 0);
    struct json_object *once = get("v1", "ConfigMap", f->ns, "once");
    assert_string_equal(str(once, "data", "k", NULL), "1"); /* never touched again */
    json_object_put(once);

    f->opts.component_digest = "c2";
    updates = f->stats.updates;
    pass_ok(f, v2, &done);
    assert_true(done);
    assert_string_equal(item_field(f, "comp", "phase"), "Ready");
    assert_true(f->stats.updates > updates);
    assert_true(apply_until_done(f, v2, MAX_PASSES) > 0);
    struct json_object *comp = get("v1", "ConfigMap", f->ns, "comp");
    assert_contains(str(comp, "metadata", "annotations", CTL_ANN_DIGEST), "@c2");
    json_object_put(comp);
}

static void test_ctl_apply__missing_namespace_created_untracked(void **state)
{
    fixture *f = *state;
    char *other = co_test_random_name("co-apply-missing-", 6);
    char *objs = co_xasprintf("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x',"
                              "'namespace':'%s'}}]",
                              other);
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    struct json_object *n = get("v1", "Namespace", NULL, other);
    assert_non_null(n);
    assert_null(co_json_get(n, "metadata", "labels", CTL_LABEL_OWNER_ID, NULL));
    json_object_put(n);
    assert_int_equal(json_object_array_length(f->inventory), 1);
    assert_true(delete_until_done(f, MAX_PASSES, NULL) > 0);
    assert_true(exists("v1", "Namespace", NULL, other)); /* never deleted by us */
    free(objs);

    /* policy DoNotCreate: the object cannot be created */
    char *third = co_test_random_name("co-apply-missing-", 6);
    objs = co_xasprintf("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'x',"
                        "'namespace':'%s'}}]",
                        third);
    f->opts.missing_namespaces_policy = CO_MISSING_NAMESPACES_DO_NOT_CREATE;
    bool done;
    pass_ok(f, objs, &done);
    assert_co_fail_with(CO_ENOTFOUND, pass(f, objs, &done));
    assert_contains(co_error_last(), "error creating object v1 ConfigMap");
    assert_false(exists("v1", "Namespace", NULL, third));
    free(objs);
    free(third);
    free(other);
}

/* ---- beyond the original -------------------------------------------------------------------- */

static void test_ctl_apply__auxiliary_object_does_not_gate(void **state)
{
    fixture *f = *state;
    const char *objs = "[" DEPLOYMENT("helper", ANN("participation", "auxiliary")) "," CONFIGMAP(
        "next", ANN("apply-order", "1"), "") "]";
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    assert_true(exists("v1", "ConfigMap", f->ns, "next"));
    assert_string_equal(item_field(f, "helper", "status"), "InProgress"); /* still reported */
}

static void test_ctl_apply__events_on_dependents(void **state)
{
    fixture *f = *state;
    co_kube_recorder *rec = NULL;
    co_kube_recorder_options ro = {0};
    ro.component = CTL_NAME;
    assert_co_pass(co_kube_recorder_new(&rec, admin, &ro));
    f->opts.events = rec;
    assert_true(apply_until_done(f, "[" CONFIGMAP("ev", "", "") "]", MAX_PASSES) > 0);
    assert_co_pass(co_kube_recorder_flush(rec, 30000));
    f->opts.events = NULL;
    co_kube_recorder_free(rec);
    struct json_object *list = NULL;
    co_kube_list_options lo = {0};
    lo.field_selector = "involvedObject.name=ev";
    assert_co_pass(co_kube_list(&list, admin, &(co_kube_ref){"v1", "Event", f->ns, NULL}, &lo));
    struct json_object *items = co_json_get(list, "items", NULL);
    assert_true(json_object_array_length(items) >= 1);
    assert_string_equal(str(json_object_array_get_idx(items, 0), "reason", NULL, NULL), "Created");
    json_object_put(list);

    struct json_object *obj = co_test_json(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":"
        "{\"annotations\":{\"%s\":\"true\"}}}",
        CTL_ANN_DISABLE_EVENTS);
    co_component *comp = NULL;
    assert_co_pass(co_component_parse(&comp, obj));
    assert_true(ctl_apply_events_disabled(comp));
    co_component_free(comp);
    json_object_put(obj);
}

/* The Events about object @p name in the fixture's namespace with @p reason; the first one's
 * type and message are returned through the out parameters (caller frees). */
static size_t
events_of(const fixture *f, const char *name, const char *reason, char **type, char **message)
{
    struct json_object *list = NULL;
    co_kube_list_options lo = {0};
    char *sel = co_xasprintf("involvedObject.name=%s", name);
    lo.field_selector = sel;
    assert_co_pass(co_kube_list(&list, admin, &(co_kube_ref){"v1", "Event", f->ns, NULL}, &lo));
    free(sel);
    struct json_object *items = co_json_get(list, "items", NULL);
    size_t n = 0;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        struct json_object *ev = json_object_array_get_idx(items, i);
        const char *r = str(ev, "reason", NULL, NULL);
        if (!r || strcmp(r, reason) != 0) {
            continue;
        }
        if (n++ == 0) {
            const char *t = str(ev, "type", NULL, NULL), *m = str(ev, "message", NULL, NULL);
            if (type) {
                *type = co_xstrdup(t ? t : "");
            }
            if (message) {
                *message = co_xstrdup(m ? m : "");
            }
        }
    }
    json_object_put(list);
    return n;
}

/* A cluster role granting everything but delete to user @p user (and its binding). */
static void grant_all_but_delete(const char *user, bool grant)
{
    struct json_object *role = co_test_json(
        "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":"
        "{\"name\":\"%s\"},\"rules\":[{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":"
        "[\"get\",\"list\",\"watch\",\"create\",\"update\",\"patch\"]}]}",
        user);
    struct json_object *binding = co_test_json(
        "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
        "\"metadata\":{\"name\":\"%s\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
        "\"kind\":\"ClusterRole\",\"name\":\"%s\"},\"subjects\":[{\"apiGroup\":"
        "\"rbac.authorization.k8s.io\",\"kind\":\"User\",\"name\":\"%s\"}]}",
        user, user, user);
    if (grant) {
        assert_co_pass(co_kube_create(NULL, admin, role, NULL));
        assert_co_pass(co_kube_create(NULL, admin, binding, NULL));
    } else {
        co_kube_delete_options d = CO_KUBE_DELETE_OPTIONS_INIT;
        assert_co_pass(co_kube_delete(
            NULL, admin,
            &(co_kube_ref){"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", NULL, user}, &d));
        assert_co_pass(co_kube_delete(
            NULL, admin, &(co_kube_ref){"rbac.authorization.k8s.io/v1", "ClusterRole", NULL, user},
            &d));
    }
    json_object_put(binding);
    json_object_put(role);
}

#define IMMUTABLE(name, value)                                                                     \
    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'" name "'},'immutable':true,"       \
    "'data':{'k':'" value "'}}"

/* Error events on dependents against the real server: an update the API server refuses (an
 * immutable ConfigMap changed) yields a Warning UpdateError, a deletion it forbids (the target
 * client acts as a user without the delete verb) a Warning DeleteError, each with the server's
 * message. (The disable-events annotation is shown through the reconciler in test_ctl_manager.) */
static void test_ctl_apply__error_events_on_dependents(void **state)
{
    fixture *f = *state;
    char *user = co_test_random_name("co-apply-nodelete-", 8);
    grant_all_but_delete(user, true);
    co_kube_client *limited = NULL;
    assert_co_pass(co_kube_client_new_impersonating(&limited, admin, user, NULL, 0));
    co_kube_recorder *rec = NULL;
    co_kube_recorder_options ro = {0};
    ro.component = CTL_NAME;
    assert_co_pass(co_kube_recorder_new(&rec, admin, &ro));
    f->opts.target = limited;
    f->opts.events = rec;

    const char *v1 = "[" IMMUTABLE("imm", "1") "," CONFIGMAP("gone", "", "") "]";
    bool done = false;
    /* the authorizer sees the new binding after a moment */
    for (int i = 0; i < 100 && !done; i++) {
        if (pass(f, v1, &done) < 0) {
            assert_int_equal(co_error_last_code(), CO_EAUTH);
            struct timespec tick = {0, 200000000L};
            nanosleep(&tick, NULL);
        }
    }
    assert_true(done);

    /* an update the API server refuses */
    const char *v2 = "[" IMMUTABLE("imm", "2") "," CONFIGMAP("gone", "", "") "]";
    assert_co_fail_with(CO_EINVALID, pass(f, v2, &done));
    assert_contains(co_error_last(), "immutable");

    /* a deletion it forbids: "gone" becomes obsolete */
    const char *v3 = "[" IMMUTABLE("imm", "1") "]";
    int rc = 0;
    for (int i = 0; i < MAX_PASSES && rc == 0; i++) {
        done = false;
        rc = pass(f, v3, &done);
        assert_false(done); /* never done while "gone" remains */
    }
    assert_int_equal(rc, CO_EAUTH);
    assert_contains(co_error_last(), "forbidden");
    assert_true(exists("v1", "ConfigMap", f->ns, "gone"));

    assert_co_pass(co_kube_recorder_flush(rec, 30000));
    char *type = NULL, *msg = NULL;
    assert_true(events_of(f, "imm", "UpdateError", &type, &msg) >= 1);
    assert_string_equal(type ? type : "", "Warning");
    assert_true(msg && strncmp(msg, "Error updating object: ", 23) == 0);
    assert_contains(msg, "field is immutable");
    free(type);
    free(msg);
    type = msg = NULL;
    assert_true(events_of(f, "gone", "DeleteError", &type, &msg) >= 1);
    assert_string_equal(type ? type : "", "Warning");
    assert_true(msg && strncmp(msg, "Error deleting object: ", 23) == 0);
    assert_contains(msg, "forbidden");
    free(type);
    free(msg);
    assert_true(events_of(f, "imm", "Created", NULL, NULL) >= 1);
    f->opts.target = admin;
    f->opts.events = NULL;

    co_kube_recorder_free(rec);
    co_kube_client_free(limited);
    grant_all_but_delete(user, false);
    free(user);
}

/* ---- objects as users write them ------------------------------------------------------------ */

/* A Service and a Deployment whose ports carry no protocol (the API server defaults it, but the
 * server-side apply of 1.20 needs it as part of the ports' merge key), applied under the default
 * policy (SsaOverride), then updated. */
static void test_ctl_apply__ports_without_protocol(void **state)
{
    fixture *f = *state;
    const char *v1 =
        "[{'apiVersion':'v1','kind':'Service','metadata':{'name':'svc'},'spec':{'selector':"
        "{'app':'web'},'ports':[{'name':'http','port':80,'targetPort':8080},{'name':'dns',"
        "'port':53,'protocol':'UDP'}]}},"
        "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{"
        "'selector':{'matchLabels':{'app':'web'}},'template':{'metadata':{'labels':{'app':"
        "'web'}},'spec':{'initContainers':[{'name':'init','image':'busybox','ports':[{"
        "'containerPort':9000}]}],'containers':[{'name':'c','image':'busybox','ports':[{"
        "'containerPort':8080,'name':'http'}]}]}}}}]";
    bool done = false;
    pass_ok(f, v1, &done);
    pass_ok(f, v1, &done);
    struct json_object *svc = get("v1", "Service", f->ns, "svc");
    assert_non_null(svc);
    struct json_object *ports = co_json_get(svc, "spec", "ports", NULL);
    assert_int_equal(json_object_array_length(ports), 2);
    assert_string_equal(str(json_object_array_get_idx(ports, 0), "protocol", NULL, NULL), "TCP");
    assert_string_equal(str(json_object_array_get_idx(ports, 1), "protocol", NULL, NULL), "UDP");
    json_object_put(svc);
    assert_true(exists("apps/v1", "Deployment", f->ns, "web"));
    make_deployment_ready(f->ns, "web");
    for (int i = 0; i < MAX_PASSES && !done; i++) {
        pass_ok(f, v1, &done);
    }
    assert_true(done);

    /* an update of the same objects, still without protocol: the port list is merged, not
     * doubled */
    const char *v2 =
        "[{'apiVersion':'v1','kind':'Service','metadata':{'name':'svc'},'spec':{'selector':"
        "{'app':'web'},'ports':[{'name':'http','port':80,'targetPort':8081}]}},"
        "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'web'},'spec':{"
        "'selector':{'matchLabels':{'app':'web'}},'template':{'metadata':{'labels':{'app':"
        "'web'}},'spec':{'initContainers':[{'name':'init','image':'busybox','ports':[{"
        "'containerPort':9000}]}],'containers':[{'name':'c','image':'busybox','ports':[{"
        "'containerPort':8081,'name':'http'}]}]}}}}]";
    pass_ok(f, v2, &done);
    svc = get("v1", "Service", f->ns, "svc");
    ports = co_json_get(svc, "spec", "ports", NULL);
    assert_int_equal(json_object_array_length(ports), 1);
    int64_t tp = 0;
    assert_co_pass(co_json_get_int64(&tp, json_object_array_get_idx(ports, 0), "targetPort", NULL));
    assert_int_equal(tp, 8081);
    json_object_put(svc);
    struct json_object *dep = get("apps/v1", "Deployment", f->ns, "web");
    struct json_object *cports =
        co_json_get(json_object_array_get_idx(
                        co_json_get(dep, "spec", "template", "spec", "containers", NULL), 0),
                    "ports", NULL);
    assert_int_equal(json_object_array_length(cports), 1);
    assert_co_pass(
        co_json_get_int64(&tp, json_object_array_get_idx(cports, 0), "containerPort", NULL));
    assert_int_equal(tp, 8081);
    json_object_put(dep);
}

/* A manifest the server-side apply of kube-apiserver 1.20 cannot merge (two env entries with the
 * same name: duplicate keys of an associative list) is refused with a 500 and no reason; the
 * pass fails at once with the server's message instead of being retried as server trouble. */
static void test_ctl_apply__ssa_merge_failure_fails_fast(void **state)
{
    fixture *f = *state;
    const char *objs =
        "[{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'dup'},'spec':{"
        "'selector':{'matchLabels':{'app':'dup'}},'template':{'metadata':{'labels':{'app':"
        "'dup'}},'spec':{'containers':[{'name':'c','image':'busybox','env':[{'name':'A',"
        "'value':'1'},{'name':'A','value':'2'}]}]}}}}]";
    bool done = false;
    pass_ok(f, objs, &done); /* the inventory item */
    assert_co_fail_with(CO_EINVALID, pass(f, objs, &done));
    assert_int_equal(co_kube_status_last()->code, 500);
    assert_contains(co_error_last(), "duplicate entries for key");
    assert_contains(co_error_last(), "apps/v1 Deployment");
    assert_false(exists("apps/v1", "Deployment", f->ns, "dup"));
}

/* An object copied from `kubectl get -o yaml` carries the server's resourceVersion, uid and
 * creationTimestamp: created under every update policy all the same. */
static void test_ctl_apply__copied_object_with_resource_version(void **state)
{
    fixture *f = *state;
    char *objs = co_xasprintf(
        "[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'copied-ssa',"
        "'namespace':'%s','resourceVersion':'4711','uid':'0b5e0c52-3f0d-4a4e-9a64-9d1f3c1e2a11',"
        "'creationTimestamp':'2021-01-01T00:00:00Z','selfLink':'/api/v1/namespaces/%s/"
        "configmaps/copied-ssa'},'data':{'a':'1'}},"
        "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'copied-replace',"
        "'namespace':'%s','resourceVersion':'4712','annotations':{" ANN(
            "update-policy", "replace") "}},"
                                        "'data':{'a':'1'}}]",
        f->ns, f->ns, f->ns);
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    assert_true(exists("v1", "ConfigMap", f->ns, "copied-ssa"));
    assert_true(exists("v1", "ConfigMap", f->ns, "copied-replace"));
    free(objs);

    /* and updated later with a stale resourceVersion in the manifest */
    objs = co_xasprintf("[{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'copied-ssa',"
                        "'namespace':'%s','resourceVersion':'4711'},'data':{'a':'2'}},"
                        "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'copied-replace',"
                        "'namespace':'%s','resourceVersion':'4712','annotations':{" ANN(
                            "update-policy", "replace") "}},"
                                                        "'data':{'a':'2'}}]",
                        f->ns, f->ns);
    assert_true(apply_until_done(f, objs, MAX_PASSES) > 0);
    struct json_object *live = get("v1", "ConfigMap", f->ns, "copied-ssa");
    assert_string_equal(str(live, "data", "a", NULL), "2");
    json_object_put(live);
    live = get("v1", "ConfigMap", f->ns, "copied-replace");
    assert_string_equal(str(live, "data", "a", NULL), "2");
    json_object_put(live);
    free(objs);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_ctl_apply__create_then_ready),
        T(test_ctl_apply__ssa_override_takes_kubectl_fields),
        T(test_ctl_apply__ssa_merge_leaves_kubectl_fields),
        T(test_ctl_apply__ssa_takes_over_own_update_fields),
        T(test_ctl_apply__replace_and_recreate),
        T(test_ctl_apply__adoption_policies),
        T(test_ctl_apply__waves_in_order),
        T(test_ctl_apply__purge_after_wave),
        T(test_ctl_apply__obsolete_objects_removed),
        T(test_ctl_apply__deletion_in_reverse_waves_namespaces_last),
        T(test_ctl_apply__orphan_policies),
        T(test_ctl_apply__deletion_blocked_by_foreign_instance),
        T(test_ctl_apply__apiservice_late_and_deletion_guard),
        T(test_ctl_apply__service_backed_apiservice),
        T(test_ctl_apply__managed_instances_staged_within_wave),
        T(test_ctl_apply__additional_managed_types_block_deletion),
        T(test_ctl_apply__crash_after_inventory_write_leaks_nothing),
        T(test_ctl_apply__crash_amid_creation_leaks_nothing),
        T(test_ctl_apply__reconcile_policies_and_reapply),
        T(test_ctl_apply__missing_namespace_created_untracked),
        T(test_ctl_apply__auxiliary_object_does_not_gate),
        T(test_ctl_apply__events_on_dependents),
        T(test_ctl_apply__error_events_on_dependents),
        T(test_ctl_apply__ports_without_protocol),
        T(test_ctl_apply__copied_object_with_resource_version),
        T(test_ctl_apply__ssa_merge_failure_fails_fast),
    };
#undef T
    return cmocka_run_group_tests_name("ctl_apply_integration", tests, group_setup, group_teardown);
}
