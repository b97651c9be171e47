/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The whole-Component switches of docs/lifecycle.md against the real kube-apiserver: Disabled
 * (`spec.enabled: false`), Unmanaged (`spec.managed: false`) and the skip-reconciliation label.
 * Most tests drive ctl_reconcile() pass by pass with the real apply engine over a transport
 * that logs every request, so that what a pass wrote can be counted; the dependants gate and
 * the dependency gate get their Components from small lookups over the API server. The event
 * and the metric of skipped Components are the manager's, so the last test runs one.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "co/api/component.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_transport.h"
#include "co/util/buf.h"
#include "co/util/duration.h"
#include "co/util/metrics.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_inventory.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_reconcile.h"
#include "controller/ctl_state.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define SRC     "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"
#define WAIT_MS 90000L

/* Requests logged that are not GETs (writes), printed. */
static size_t writes(co_test_counting *c)
{
    co_test_counting_print(c, "requests");
    return c->n - co_test_counting_count(c, "GET", NULL);
}

/* ---- fixture ----------------------------------------------------------------------------- */

static co_kube_client *admin;
static co_kube_config *cfg;
static co_kube_client *client;
static co_test_counting *counter;
static char *ns;
static char *srcdir;
static ctl_env env;
/* the dependants gate's answer: this key ("ns/name") is a dependant of every Component */
static char blocking_dependant[256];

static void put(const char *rel, const char *text)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", srcdir, rel);
    co_test_write_file(path, text, strlen(text));
}

#define CM(name, ann)                                                                              \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name "\","           \
    "\"annotations\":{" ann "}},\"data\":{\"k\":\"v\"}}\n"
#define ORPHAN "\"component-operator.cs.sap.com/delete-policy\":\"orphan\""

static int fake_dependants(void *ctx, const char *key, co_kube_keys *out)
{
    (void)ctx;
    (void)key;
    if (blocking_dependant[0]) {
        co_kube_keys_add(out, blocking_dependant);
    }
    return 0;
}

static int get_component(void *ctx, const char *cns, const char *name, co_component **out)
{
    (void)ctx;
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", cns, name};
    struct json_object *obj = NULL;
    int rc = co_kube_get(&obj, admin, &ref, NULL);
    if (rc == 0) {
        rc = co_component_parse(out, obj);
    }
    json_object_put(obj);
    return rc;
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    ns = co_test_kube_namespace(admin, "ctl-lc-");
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    put("dis/a.yaml", CM("dis-a", ""));
    put("dis/b.yaml", CM("dis-b", ""));
    put("dis/kept.yaml", CM("dis-kept", ORPHAN));
    put("gate/a.yaml", CM("gate-a", ""));
    put("user/a.yaml", CM("user-a", ""));
    put("um/a.yaml", CM("um-a", ""));
    put("um/b.yaml", CM("um-b", ""));
    put("skip/a.yaml", CM("skip-a", ""));
    put("skip2/a.yaml", CM("skip2-a", ""));
    put("mgr/a.yaml", CM("mgr-a", ""));

    assert_co_pass(co_kube_config_load(&cfg, co_test_env("CO_TEST_KUBECONFIG"), NULL));
    counter = co_test_counting_new(cfg);
    co_kube_client_options o = CO_KUBE_CLIENT_OPTIONS_INIT;
    o.qps = -1;
    assert_co_pass(co_kube_client_new_with_transport(&client, cfg, &counter->base, &o));

    memset(&env, 0, sizeof(env));
    env.client = client;
    env.cluster_id = "test-cluster";
    env.backoff = ctl_backoff_new();
    env.source = ctl_test_source_ops();
    env.apply = ctl_apply_engine_ops();
    env.cache.dependants = fake_dependants;
    env.cache.get_component = get_component;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_backoff_free(env.backoff);
    co_kube_client_free(client);
    co_kube_config_free(cfg);
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    free(ns);
    curl_global_cleanup();
    return 0;
}

/* ---- helpers ----------------------------------------------------------------------------- */

static ctl_result reconcile(const char *name)
{
    ctl_result res;
    assert_co_pass(ctl_reconcile(&res, &env, ns, name));
    return res;
}

/* The Component's state, Ready reason and message (copies; "" when unset). */
typedef struct seen {
    char state[64], reason[64], message[512], status[16];
} seen;

static seen seen_of(const char *name)
{
    seen s = {{0}};
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    assert_non_null(c);
    snprintf(s.state, sizeof(s.state), "%s", ctl_state_get(co_json_get(c, "status", NULL)));
    snprintf(s.reason, sizeof(s.reason), "%s", ctl_state_reason(co_json_get(c, "status", NULL)));
    struct json_object *cond = co_json_get(c, "status", "conditions", NULL);
    if (cond && json_object_array_length(cond) > 0) {
        const char *m = co_json_str(json_object_array_get_idx(cond, 0), "message", NULL);
        const char *st = co_json_str(json_object_array_get_idx(cond, 0), "status", NULL);
        snprintf(s.message, sizeof(s.message), "%s", m ? m : "");
        snprintf(s.status, sizeof(s.status), "%s", st ? st : "");
    }
    json_object_put(c);
    return s;
}

/* Reconciles @p name until its state and reason are @p state and @p reason (at most @p max
 * passes); returns the passes run, failing the test otherwise. */
static int reconcile_until(const char *name, const char *state, const char *reason, int max)
{
    seen s = {{0}};
    for (int i = 1; i <= max; i++) {
        reconcile(name);
        s = seen_of(name);
        if (!strcmp(s.state, state) && !strcmp(s.reason, reason)) {
            return i;
        }
        usleep(20 * 1000);
    }
    fail_msg("%s: %s/%s after %d passes, expected %s/%s (%s)", name, s.state, s.reason, max, state,
             reason, s.message);
    return -1;
}

static void patch_component(const char *name, const char *patch_text)
{
    struct json_object *patch = co_test_json("%s", patch_text);
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
}

static void delete_component(const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
}

/* The ConfigMap @p name (NULL when it does not exist). */
static struct json_object *configmap(const char *name)
{
    struct json_object *cm = NULL;
    int rc = co_kube_get(&cm, admin, &(co_kube_ref){"v1", "ConfigMap", ns, name}, NULL);
    if (rc == CO_ENOTFOUND) {
        return NULL;
    }
    assert_co_pass(rc);
    return cm;
}

static bool configmap_exists(const char *name)
{
    struct json_object *cm = configmap(name);
    json_object_put(cm);
    return cm != NULL;
}

/* Whether ConfigMap @p name carries any of the owner marks. */
static bool owner_marked(const char *name)
{
    struct json_object *cm = configmap(name);
    assert_non_null(cm);
    bool marked = co_json_meta_label(cm, CTL_LABEL_OWNER_ID) ||
                  co_json_meta_annotation(cm, CTL_ANN_OWNER_ID) ||
                  co_json_meta_annotation(cm, CTL_ANN_DIGEST);
    json_object_put(cm);
    return marked;
}

static size_t inventory_len(const char *name)
{
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    struct json_object *inv = NULL;
    assert_co_pass(co_component_inventory_get(&inv, co_json_get(c, "status", NULL)));
    size_t n = inv ? json_object_array_length(inv) : 0;
    json_object_put(inv);
    json_object_put(c);
    return n;
}

static bool component_exists(const char *name)
{
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    json_object_put(c);
    return c != NULL;
}

static bool has_finalizer(const char *name)
{
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    struct json_object *f = co_json_get(c, "metadata", "finalizers", NULL);
    bool found = false;
    for (size_t i = 0; f && i < json_object_array_length(f); i++) {
        found = found || !strcmp(json_object_get_string(json_object_array_get_idx(f, i)),
                                 CTL_RECONCILER_NAME);
    }
    json_object_put(c);
    return found;
}

/* ---- Disabled ---------------------------------------------------------------------------- */

/* enabled: false deletes the dependents as a deletion would (an orphan-policy one stays), keeps
 * the Component and its finalizer, needs no source, and ends Ready with reason Disabled;
 * enabled: true installs everything again. */
static void test_ctl_lifecycle__disabled_removes_dependents_and_enabling_reinstalls(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "dis", "{" SRC ",\"path\":\"dis\"}");
    reconcile_until("dis", "Ready", "Ready", 5);
    assert_true(configmap_exists("dis-a"));
    assert_true(configmap_exists("dis-kept"));
    assert_int_equal(inventory_len("dis"), 3);

    /* disabled: the source is not even resolved */
    ctl_test_source_unready = 1;
    patch_component("dis", "{\"spec\":{\"enabled\":false}}");
    reconcile("dis");
    seen s = seen_of("dis");
    assert_string_equal(s.state, "Processing");
    assert_string_equal(s.reason, "Disabled");
    assert_string_equal(s.status, "Unknown");
    reconcile_until("dis", "Ready", "Disabled", 10);
    s = seen_of("dis");
    assert_string_equal(s.message, "Component is disabled");
    assert_string_equal(s.status, "True");
    assert_false(configmap_exists("dis-a"));
    assert_false(configmap_exists("dis-b"));
    assert_true(configmap_exists("dis-kept"));
    assert_int_equal(inventory_len("dis"), 0);
    assert_true(has_finalizer("dis"));

    /* disabled and done: requeued at the requeue interval, and a pass writes nothing */
    co_test_counting_reset(counter);
    ctl_result res = reconcile("dis");
    assert_int_equal(writes(counter), 0);
    assert_true(res.requeue_after_ns >= (int64_t)600 * CO_SECOND);

    /* enabled again: everything comes back (the orphaned object is adopted back) */
    ctl_test_source_unready = 0;
    patch_component("dis", "{\"spec\":{\"enabled\":true}}");
    reconcile_until("dis", "Ready", "Ready", 5);
    assert_true(configmap_exists("dis-a"));
    assert_true(configmap_exists("dis-b"));
    assert_true(owner_marked("dis-kept"));
    assert_int_equal(inventory_len("dis"), 3);

    /* disabled and suspended: disabled wins */
    patch_component("dis", "{\"spec\":{\"enabled\":false,\"suspend\":true}}");
    reconcile_until("dis", "Ready", "Disabled", 10);
    assert_false(configmap_exists("dis-a"));

    /* deleting a disabled Component is an ordinary deletion with nothing left to delete */
    delete_component("dis");
    reconcile("dis");
    assert_false(component_exists("dis"));
    assert_true(configmap_exists("dis-kept"));
}

/* A Component that lists this one as a dependency keeps it from being disabled, as it would
 * keep it from being deleted; and a Component waiting on a disabled dependency waits. */
static void test_ctl_lifecycle__dependant_blocks_disabling(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "gate", "{" SRC ",\"path\":\"gate\"}");
    reconcile_until("gate", "Ready", "Ready", 5);
    snprintf(blocking_dependant, sizeof(blocking_dependant), "%s/user", ns);
    patch_component("gate", "{\"spec\":{\"enabled\":false}}");
    reconcile("gate");
    seen s = seen_of("gate");
    assert_string_equal(s.state, "Pending");
    assert_string_equal(s.reason, "Disabled");
    char *want = co_xasprintf("Disabling blocked by depending component %s/user", ns);
    assert_string_equal(s.message, want);
    free(want);
    assert_true(configmap_exists("gate-a"));
    assert_int_equal(inventory_len("gate"), 1);

    /* the dependant goes: disabling goes on */
    blocking_dependant[0] = '\0';
    reconcile_until("gate", "Ready", "Disabled", 10);
    assert_false(configmap_exists("gate-a"));

    /* a Component depending on a disabled one is not applied */
    ctl_test_create_component(admin, ns, "user",
                              "{" SRC ",\"path\":\"user\",\"dependencies\":[{\"name\":\"gate\"}]}");
    reconcile("user");
    s = seen_of("user");
    assert_string_equal(s.state, "Pending");
    assert_non_null(strstr(s.message, "is disabled"));
    assert_false(configmap_exists("user-a"));

    /* enabled again, the dependency is Ready and the dependant proceeds */
    patch_component("gate", "{\"spec\":{\"enabled\":null}}");
    reconcile_until("gate", "Ready", "Ready", 5);
    reconcile_until("user", "Ready", "Ready", 5);
    assert_true(configmap_exists("user-a"));
}

/* ---- Unmanaged --------------------------------------------------------------------------- */

/* managed: false leaves the objects as they are without the owner marks, empties the inventory
 * and reports Unmanaged; later passes write nothing; managed: true adopts them back; deleting
 * an unmanaged Component deletes none of them. */
static void test_ctl_lifecycle__unmanaged_releases_readopts_and_deletion_keeps(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "um", "{" SRC ",\"path\":\"um\"}");
    reconcile_until("um", "Ready", "Ready", 5);
    assert_true(owner_marked("um-a"));
    struct json_object *before = configmap("um-b");

    patch_component("um", "{\"spec\":{\"managed\":false}}");
    reconcile("um");
    seen s = seen_of("um");
    assert_string_equal(s.state, "Unmanaged");
    assert_string_equal(s.reason, "Unmanaged");
    assert_string_equal(s.status, "True");
    assert_int_equal(inventory_len("um"), 0);
    assert_false(owner_marked("um-a"));
    assert_false(owner_marked("um-b"));
    struct json_object *after = configmap("um-b");
    assert_true(co_json_equal(co_json_get(before, "data", NULL), co_json_get(after, "data", NULL)));
    json_object_put(before);
    json_object_put(after);

    /* nothing else is done: the Component is read, nothing rendered or written */
    ctl_test_source_unready = 1;
    co_test_counting_reset(counter);
    ctl_result res = reconcile("um");
    assert_int_equal(writes(counter), 0);
    assert_int_equal(counter->n, 1);
    assert_int_equal(res.requeue_after_ns, 0);
    ctl_test_source_unready = 0;

    /* managed again: adopted (IfUnowned) and recorded */
    patch_component("um", "{\"spec\":{\"managed\":true}}");
    reconcile_until("um", "Ready", "Ready", 5);
    assert_true(owner_marked("um-a"));
    assert_true(owner_marked("um-b"));
    assert_int_equal(inventory_len("um"), 2);

    /* unmanaged and deleted: the objects stay */
    patch_component("um", "{\"spec\":{\"managed\":false}}");
    reconcile_until("um", "Unmanaged", "Unmanaged", 3);
    delete_component("um");
    reconcile("um");
    assert_false(component_exists("um"));
    assert_true(configmap_exists("um-a"));
    assert_true(configmap_exists("um-b"));
    assert_false(owner_marked("um-a"));
}

/* The release itself (ctl_apply_release()): of the objects an inventory names, ours lose the
 * owner label and annotations, a CRD also our finalizer; one someone else took over keeps its
 * marks, and one that is gone is no error. Every item leaves the inventory. */
static void test_ctl_lifecycle__release_takes_only_our_marks(void **state)
{
    (void)state;
    char *group = co_test_random_name("rel", 8);
    char *crd_name = co_xasprintf("gadgets.%s.example.com", group);
    char *text = co_xasprintf(
        "[{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"group\":\"%s.example.com\",\"scope\":"
        "\"Namespaced\",\"names\":{\"plural\":\"gadgets\",\"singular\":\"gadget\",\"kind\":"
        "\"Gadget\",\"listKind\":\"GadgetList\"},\"versions\":[{\"name\":\"v1\",\"served\":"
        "true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}}]}},"
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"rel-ours\"}},"
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"rel-taken\"}},"
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"rel-gone\"}}]",
        crd_name, group);
    char *owner_id = ctl_owner_id(env.cluster_id, ns, "rel");
    ctl_apply_opts o = {0};
    o.target = client;
    o.owner_id = owner_id;
    o.namespace = ns;
    struct json_object *inv = json_object_new_array();
    bool done = false;
    for (int i = 0; i < 20 && !done; i++) {
        struct json_object *objects = co_test_json("%s", text);
        co_error_clear();
        int rc = ctl_apply(&o, inv, objects, &done);
        if (rc < 0) {
            fail_msg("apply: %s", co_error_last());
        }
        json_object_put(objects);
        usleep(50 * 1000);
    }
    assert_true(done);
    assert_int_equal(json_object_array_length(inv), 4);
    co_kube_ref crd_ref = {"apiextensions.k8s.io/v1", "CustomResourceDefinition", NULL, crd_name};
    struct json_object *crd = NULL;
    assert_co_pass(co_kube_get(&crd, admin, &crd_ref, NULL));
    assert_non_null(co_json_get(crd, "metadata", "finalizers", NULL));
    json_object_put(crd);

    struct json_object *patch =
        co_test_json("{\"metadata\":{\"labels\":{\"%s\":\"someone-else\"}}}", CTL_LABEL_OWNER_ID);
    co_kube_ref taken = {"v1", "ConfigMap", ns, "rel-taken"};
    assert_co_pass(co_kube_patch(NULL, admin, &taken, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
    assert_co_pass(
        co_kube_delete(NULL, admin, &(co_kube_ref){"v1", "ConfigMap", ns, "rel-gone"}, NULL));

    done = false;
    bool changed = false;
    o.inventory_changed = &changed;
    assert_co_pass(ctl_apply_release(&o, inv, &done));
    assert_true(done);
    assert_true(changed);
    assert_int_equal(json_object_array_length(inv), 0);
    assert_false(owner_marked("rel-ours"));
    struct json_object *cm = configmap("rel-taken");
    assert_string_equal(co_json_meta_label(cm, CTL_LABEL_OWNER_ID), "someone-else");
    assert_non_null(co_json_meta_annotation(cm, CTL_ANN_OWNER_ID));
    json_object_put(cm);
    assert_co_pass(co_kube_get(&crd, admin, &crd_ref, NULL));
    assert_null(co_json_meta_label(crd, CTL_LABEL_OWNER_ID));
    struct json_object *fins = co_json_get(crd, "metadata", "finalizers", NULL);
    for (size_t i = 0; fins && i < json_object_array_length(fins); i++) {
        assert_string_not_equal(json_object_get_string(json_object_array_get_idx(fins, i)),
                                CTL_FINALIZER);
    }
    json_object_put(crd);
    /* released, the CRD can go without the controller */
    assert_co_pass(co_kube_delete(NULL, admin, &crd_ref, NULL));

    /* nothing left to release: no request */
    co_test_counting_reset(counter);
    assert_co_pass(ctl_apply_release(&o, inv, &done));
    assert_true(done);
    assert_int_equal(counter->n, 0);
    json_object_put(inv);
    free(owner_id);
    free(text);
    free(crd_name);
    free(group);
}

/* ---- Skip reconciliation ----------------------------------------------------------------- */

/* While labelled, a pass reads the Component and writes nothing, even with a changed spec and
 * a deletion pending; once the label goes, the deletion proceeds. */
static void test_ctl_lifecycle__skip_reconciliation_writes_nothing_and_holds_deletion(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "skip", "{" SRC ",\"path\":\"skip\"}");
    reconcile_until("skip", "Ready", "Ready", 5);
    patch_component("skip", "{\"metadata\":{\"labels\":{\"component-operator.cs.sap.com/"
                            "skip-reconciliation\":\"true\"}},\"spec\":{\"path\":\"skip2\"}}");
    struct json_object *c0 = ctl_test_get_component(admin, ns, "skip");

    co_test_counting_reset(counter);
    for (int i = 0; i < 3; i++) {
        ctl_result res = reconcile("skip");
        assert_int_equal(res.requeue_after_ns, 0);
    }
    assert_int_equal(writes(counter), 0);
    assert_int_equal(counter->n, 3);
    assert_int_equal(co_test_counting_count(counter, NULL, "/components/skip"), 3);
    assert_false(configmap_exists("skip2-a"));
    struct json_object *c1 = ctl_test_get_component(admin, ns, "skip");
    assert_true(co_json_equal(co_json_get(c0, "status", NULL), co_json_get(c1, "status", NULL)));
    json_object_put(c0);
    json_object_put(c1);

    /* deletion waits for the label to go (Kyma's label works as well) */
    patch_component("skip", "{\"metadata\":{\"labels\":{\"component-operator.cs.sap.com/"
                            "skip-reconciliation\":null,\"operator.kyma-project.io/"
                            "skip-reconciliation\":\"true\"}}}");
    delete_component("skip");
    co_test_counting_reset(counter);
    reconcile("skip");
    reconcile("skip");
    assert_int_equal(writes(counter), 0);
    struct json_object *c2 = ctl_test_get_component(admin, ns, "skip");
    assert_non_null(c2);
    assert_non_null(co_json_get(c2, "metadata", "deletionTimestamp", NULL));
    json_object_put(c2);
    assert_true(configmap_exists("skip-a"));

    /* any other value does not skip */
    patch_component("skip", "{\"metadata\":{\"labels\":{\"operator.kyma-project.io/"
                            "skip-reconciliation\":\"false\"}}}");
    for (int i = 0; i < 10 && component_exists("skip"); i++) {
        reconcile("skip");
    }
    assert_false(component_exists("skip"));
    assert_false(configmap_exists("skip-a"));
}

/* How often an event with reason @p reason was recorded about @p name (the recorder counts a
 * repeat on the first Event). */
static int events_with_reason(const char *ens, const char *name, const char *reason)
{
    co_kube_ref ref = {"v1", "Event", ens, NULL};
    co_kube_list_options lo = {0};
    char *sel = co_xasprintf("involvedObject.name=%s", name);
    lo.field_selector = sel;
    struct json_object *list = NULL;
    assert_co_pass(co_kube_list(&list, admin, &ref, &lo));
    free(sel);
    struct json_object *items = co_json_get(list, "items", NULL);
    int n = 0;
    for (size_t j = 0; j < json_object_array_length(items); j++) {
        struct json_object *ev = json_object_array_get_idx(items, j);
        const char *r = co_json_str(ev, "reason", NULL);
        int64_t count = 1;
        if (co_json_get_int64(&count, ev, "count", NULL) < 0) {
            co_error_clear();
            count = 1;
        }
        if (r && !strcmp(r, reason)) {
            n += (int)count;
        }
    }
    json_object_put(list);
    return n;
}

static bool metrics_contain(ctl_manager *m, const char *text)
{
    co_buf body = CO_BUF_INIT(64 << 20);
    assert_co_pass(co_metrics_render(&body, ctl_manager_metrics(m)));
    bool found = strstr(co_buf_cstr(&body), text) != NULL;
    co_buf_dispose(&body);
    return found;
}

/* The manager: a labelled Component gets one event however often it is queued, the gauge
 * counts it, and removing the label (an update the informer passes on) reconciles it. */
static void test_ctl_lifecycle__skipped_component_event_once_and_gauge(void **state)
{
    (void)state;
    char *mns = co_test_kube_namespace(admin, "ctl-lc-mgr-");
    ctl_source_ops src = ctl_test_source_ops();
    ctl_apply_ops app = ctl_apply_engine_ops();
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.policy_probe_ns = CO_SECOND;
    o.metrics_addr = "127.0.0.1:0";
    o.probe_addr = "127.0.0.1:0";
    o.workers = 2;
    const char *watched = mns;
    o.namespaces = &watched;
    o.nnamespaces = 1;
    o.source = &src;
    o.apply = &app;
    ctl_manager *m = NULL;
    assert_co_pass(ctl_manager_new(&m, &o));
    assert_co_pass(ctl_manager_start(m));

    struct json_object *obj = co_test_json(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":{"
        "\"namespace\":\"%s\",\"name\":\"held\",\"labels\":{\"component-operator.cs.sap.com/"
        "skip-reconciliation\":\"true\"}},\"spec\":{" SRC ",\"path\":\"mgr\"}}",
        mns);
    assert_co_pass(co_kube_create(NULL, admin, obj, NULL));
    json_object_put(obj);
    int n = 0;
    for (int i = 0; i < 300 && n == 0; i++) {
        n = events_with_reason(mns, "held", "ReconciliationSkipped");
        usleep(100 * 1000);
    }
    assert_int_equal(n, 1);
    for (int i = 0; i < 5; i++) {
        ctl_manager_enqueue(m, mns, "held");
        usleep(100 * 1000);
    }
    usleep(500 * 1000);
    assert_int_equal(events_with_reason(mns, "held", "ReconciliationSkipped"), 1);
    assert_true(
        metrics_contain(m, "component_operator_skipped_components{controller=\"component\"} 1"));
    /* nothing written: no finalizer, no status */
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", mns, "held"};
    struct json_object *c = NULL;
    assert_co_pass(co_kube_get(&c, admin, &ref, NULL));
    assert_null(co_json_get(c, "status", "state", NULL));
    assert_null(co_json_get(c, "metadata", "finalizers", NULL));
    json_object_put(c);

    /* the label goes: the informer passes the change on and the Component is reconciled */
    struct json_object *patch = co_test_json("{\"metadata\":{\"labels\":{\"component-operator."
                                             "cs.sap.com/skip-reconciliation\":null}}}");
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
    ctl_test_wait_state(admin, mns, "held", "Ready", "Ready", WAIT_MS);
    assert_true(
        metrics_contain(m, "component_operator_skipped_components{controller=\"component\"} 0"));

    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    ctl_test_wait_gone(admin, mns, "held", WAIT_MS);
    ctl_manager_free(m);
    free(mns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_lifecycle__disabled_removes_dependents_and_enabling_reinstalls),
        cmocka_unit_test(test_ctl_lifecycle__dependant_blocks_disabling),
        cmocka_unit_test(test_ctl_lifecycle__unmanaged_releases_readopts_and_deletion_keeps),
        cmocka_unit_test(test_ctl_lifecycle__release_takes_only_our_marks),
        cmocka_unit_test(test_ctl_lifecycle__skip_reconciliation_writes_nothing_and_holds_deletion),
        cmocka_unit_test(test_ctl_lifecycle__skipped_component_event_once_and_gauge),
    };
    return cmocka_run_group_tests_name("ctl_lifecycle", tests, group_setup, group_teardown);
}
