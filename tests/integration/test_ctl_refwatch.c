/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reconciles on referenced Secrets (docs/refwatch.md) against the real kube-apiserver: the
 * manager with its real source binding (Blueprint sources, so that a new source revision has a
 * real trigger) and the minimal test applier. Every Component has a requeue interval of one hour,
 * so that a reconcile seen within the bound can only come from the change made. A changed
 * valuesFrom or substituteFrom Secret re-renders its Component; a deleted one queues it too;
 * changes of a Secret nobody references queue nothing and are not stored; Secrets are read as
 * metadata only; a Component whose dependents never become ready moves to a new Blueprint
 * revision at once, unless it is sticky.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "co/api/blueprint.h"
#include "co/json/json.h"
#include "co/json/yaml.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_informer.h"
#include "co/util/buf.h"
#include "co/util/log.h"
#include "co/util/metrics.h"
#include "co/util/time.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_refwatch.h"
#include "controller/ctl_sources.h"
#include "controller/ctl_state.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define WAIT_MS 120000L
/* "within seconds": the bound a change must show within; far below the requeue interval */
#define CHANGE_BOUND_MS 20000L
#define API             "core.cs.sap.com/v1alpha1"

static co_kube_client *admin;
static char *ns;
static char *dir;
static ctl_sources *sources;
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;
static ctl_manager *mgr;

static void install_blueprint_crd(co_blueprint_type type, const char *kind)
{
    struct json_object *crd = NULL;
    assert_co_pass(co_blueprint_crd(&crd, type));
    int rc = co_kube_create(NULL, admin, crd, NULL);
    if (rc != 0 && rc != CO_EEXISTS) {
        fail_msg("creating the %s CRD: %s", kind, co_error_last());
    }
    co_error_clear();
    json_object_put(crd);
    for (int i = 0; i < 600; i++) {
        co_kube_mapping m;
        if (co_kube_client_mapping(&m, admin, API, kind) == 0) {
            co_kube_mapping_dispose(&m);
            usleep(500 * 1000);
            return;
        }
        co_error_clear();
        usleep(100 * 1000);
    }
    fail_msg("the %s CRD is not served", kind);
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    install_blueprint_crd(CO_BLUEPRINT_TYPE_BLUEPRINT, CO_BLUEPRINT_KIND);
    install_blueprint_crd(CO_BLUEPRINT_TYPE_VERSION, CO_BLUEPRINT_VERSION_KIND);
    dir = co_test_tmpdir();
    ns = co_test_kube_namespace(admin, "ctl-refwatch-");
    char *cache = co_xasprintf("%s/cache", dir);
    assert_co_pass(ctl_sources_new(&sources, cache));
    free(cache);
    src_ops = ctl_sources_ops(sources);
    app_ops = ctl_test_apply_ops();

    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.workers = 2;
    const char *nss[] = {ns};
    o.namespaces = nss;
    o.nnamespaces = 1;
    o.source = &src_ops;
    o.apply = &app_ops;
    assert_co_pass(ctl_manager_new(&mgr, &o));
    assert_co_pass(ctl_sources_attach(sources, mgr));
    assert_co_pass(ctl_manager_start(mgr));
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_manager_free(mgr);
    ctl_sources_free(sources);
    co_kube_client_free(admin);
    co_test_rmtree(dir);
    free(dir);
    free(ns);
    curl_global_cleanup();
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------------ */

/* Blueprint @p name holding app/cm.yaml: ConfigMap @p cm with data.v = @p value (a template or
 * a substitution), annotated never-ready when @p never_ready. */
static void put_blueprint(const char *name, const char *cm, const char *value, bool never_ready)
{
    char *text = co_xasprintf(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n%s"
        "data:\n  v: '%s'\n",
        cm, never_ready ? "  annotations:\n    test.co/never-ready: 'true'\n" : "", value);
    struct json_object *files = json_object_new_object();
    json_object_object_add(files, "app/cm.yaml", json_object_new_string(text));
    free(text);
    co_kube_ref ref = {API, CO_BLUEPRINT_KIND, ns, name};
    struct json_object *cur = NULL;
    if (co_kube_get(&cur, admin, &ref, NULL) == 0) {
        struct json_object *patch = co_test_json("{\"spec\":{}}");
        json_object_object_add(co_json_get(patch, "spec", NULL), "files", files);
        assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
        json_object_put(patch);
        json_object_put(cur);
        return;
    }
    co_error_clear();
    struct json_object *obj = co_test_json("{\"apiVersion\":\"%s\",\"kind\":\"Blueprint\","
                                           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
                                           "\"spec\":{}}",
                                           API, name, ns);
    json_object_object_add(co_json_get(obj, "spec", NULL), "files", files);
    assert_co_pass(co_kube_create(NULL, admin, obj, NULL));
    json_object_put(obj);
}

/* Creates or changes Secret @p name with one key (stringData: the server encodes it). */
static void put_secret(const char *name, const char *key, const char *value)
{
    struct json_object *data = json_object_new_object();
    json_object_object_add(data, key, json_object_new_string(value));
    co_kube_ref ref = {"v1", "Secret", ns, name};
    struct json_object *patch = json_object_new_object();
    json_object_object_add(patch, "stringData", data);
    int rc = co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL);
    if (rc == CO_ENOTFOUND) {
        co_error_clear();
        struct json_object *obj =
            co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"%s\","
                         "\"namespace\":\"%s\"}}",
                         name, ns);
        json_object_object_add(obj, "stringData", json_object_get(data));
        rc = co_kube_create(NULL, admin, obj, NULL);
        json_object_put(obj);
    }
    assert_co_pass(rc);
    json_object_put(patch);
}

static void delete_secret(const char *name)
{
    co_kube_ref ref = {"v1", "Secret", ns, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
}

/* data.v of ConfigMap @p name ("" when absent; free()). */
static char *cm_value(const char *name)
{
    co_kube_ref ref = {"v1", "ConfigMap", ns, name};
    struct json_object *obj = NULL;
    if (co_kube_get(&obj, admin, &ref, NULL) < 0) {
        co_error_clear();
        return co_xstrdup("");
    }
    const char *v = co_json_str(obj, "data", "v", NULL);
    char *s = co_xstrdup(v ? v : "");
    json_object_put(obj);
    return s;
}

/* Waits until ConfigMap @p name has data.v = @p want; fails after @p bound_ms. Returns the
 * milliseconds it took. */
static long wait_cm(const char *name, const char *want, long bound_ms)
{
    int64_t start = co_time_monotonic();
    char *last = NULL;
    for (;;) {
        free(last);
        last = cm_value(name);
        long took = (long)((co_time_monotonic() - start) / 1000000);
        if (strcmp(last, want) == 0) {
            free(last);
            return took;
        }
        if (took > bound_ms) {
            fail_msg("ConfigMap %s: v is '%s', not '%s', after %ld ms", name, last, want, took);
        }
        usleep(50 * 1000);
    }
}

static const char *status_str(struct json_object *c, const char *key)
{
    const char *v = co_json_str(co_json_get(c, "status", NULL), key, NULL);
    return v ? v : "";
}

/* Waits until Component @p name is Ready with @p rev as its last applied revision. */
static void wait_ready(const char *name, const char *rev)
{
    for (long waited = 0; waited < WAIT_MS; waited += 100) {
        struct json_object *c = ctl_test_get_component(admin, ns, name);
        bool ok = c && ctl_state_component_ready(c) &&
                  strcmp(status_str(c, "lastAppliedRevision"), rev) == 0;
        json_object_put(c);
        if (ok) {
            return;
        }
        usleep(100 * 1000);
    }
    ctl_test_wait_state(admin, ns, name, "Ready", NULL, 1);
}

/* Waits until Component @p name is Processing with @p rev as its last attempted revision;
 * fails after @p bound_ms. */
static void wait_processing(const char *name, const char *rev, long bound_ms)
{
    char last[256] = "";
    for (long waited = 0; waited < bound_ms; waited += 50) {
        struct json_object *c = ctl_test_get_component(admin, ns, name);
        struct json_object *st = co_json_get(c, "status", NULL);
        bool ok = strcmp(ctl_state_get(st), "Processing") == 0 &&
                  strcmp(status_str(c, "lastAttemptedRevision"), rev) == 0;
        snprintf(last, sizeof(last), "%s at %s", ctl_state_get(st),
                 status_str(c, "lastAttemptedRevision"));
        json_object_put(c);
        if (ok) {
            return;
        }
        usleep(50 * 1000);
    }
    fail_msg("%s: not Processing at %s in time (last: %s)", name, rev, last);
}

/* The Ready condition's message ("" when none). */
static const char *ready_message(struct json_object *c)
{
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    size_t n =
        conds && json_object_is_type(conds, json_type_array) ? json_object_array_length(conds) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *cond = json_object_array_get_idx(conds, i);
        const char *t = co_json_str(cond, "type", NULL);
        if (t && strcmp(t, "Ready") == 0) {
            const char *m = co_json_str(cond, "message", NULL);
            return m ? m : "";
        }
    }
    return "";
}

static ctl_refwatch_stats watch_stats(void)
{
    ctl_refwatch_stats st;
    ctl_refwatch_stats_get(&st, ctl_manager_reference_watch(mgr));
    return st;
}

static unsigned long reconciles(void)
{
    ctl_manager_stats st;
    ctl_manager_stats_get(mgr, &st);
    return st.reconciles;
}

/* ---- tests -------------------------------------------------------------------------------- */

/* The list and watch the reference watch makes: metadata only, no data, nothing but the
 * metadata stored. */
static void test_ctl_refwatch__secrets_are_read_as_metadata_only(void **state)
{
    (void)state;
    put_secret("meta-only", "password", "do-not-ship");
    co_kube_ref ref = {"v1", "Secret", ns, NULL};
    co_kube_list_options lo = {0};
    lo.metadata_only = 1;
    struct json_object *list = NULL;
    assert_co_pass(co_kube_list_all(&list, admin, &ref, &lo));
    struct json_object *items = co_json_get(list, "items", NULL);
    assert_true(json_object_array_length(items) >= 1);
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        struct json_object *it = json_object_array_get_idx(items, i);
        assert_string_equal(co_json_str(it, "kind", NULL), "PartialObjectMetadata");
        assert_null(co_json_get(it, "data", NULL));
        assert_null(co_json_get(it, "stringData", NULL));
    }
    json_object_put(list);

    /* the informer: the initial list and a watched change both come as metadata */
    co_kube_informer_options io = {0};
    io.api_version = "v1";
    io.kind = "Secret";
    io.namespace = ns;
    io.metadata_only = 1;
    co_kube_informer *inf = NULL;
    assert_co_pass(co_kube_informer_new(&inf, admin, &io));
    assert_co_pass(co_kube_informer_start(inf));
    assert_co_pass(co_kube_informer_wait_synced(inf, WAIT_MS));
    put_secret("meta-later", "password", "do-not-ship-either");
    struct json_object *obj = NULL;
    for (long waited = 0; waited < WAIT_MS && !obj; waited += 50) {
        if (co_kube_informer_get(&obj, inf, ns, "meta-later") < 0) {
            co_error_clear();
            usleep(50 * 1000);
        }
    }
    assert_non_null(obj);
    assert_string_equal(co_json_str(obj, "kind", NULL), "PartialObjectMetadata");
    assert_null(co_json_get(obj, "data", NULL));
    assert_non_null(co_json_str(obj, "metadata", "resourceVersion", NULL));
    json_object_put(obj);
    co_kube_informer_free(inf);
}

static void test_ctl_refwatch__values_from_change_rerenders(void **state)
{
    (void)state;
    put_secret("vals", "values", "v: one\n");
    put_blueprint("bp-vf", "vf-cm", "{{ .v }}", false);
    ctl_test_create_component(admin, ns, "c-vf",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp-vf\"}},"
                              "\"path\":\"app\",\"requeueInterval\":\"1h\","
                              "\"valuesFrom\":[{\"name\":\"vals\"}]}");
    wait_ready("c-vf", "generation:1");
    assert_true(ctl_refwatch_wait_watching(ctl_manager_reference_watch(mgr), WAIT_MS));
    wait_cm("vf-cm", "one", WAIT_MS);
    ctl_refwatch_stats before = watch_stats();

    put_secret("vals", "values", "v: two\n");
    long took = wait_cm("vf-cm", "two", CHANGE_BOUND_MS);
    print_message("# re-rendered %ld ms after the valuesFrom Secret changed\n", took);
    ctl_refwatch_stats after = watch_stats();
    assert_true(after.changes > before.changes);
    assert_true(after.requeues > before.requeues);
    co_buf text = CO_BUF_INIT(1 << 20);
    assert_co_pass(co_metrics_render(&text, ctl_manager_metrics(mgr)));
    assert_non_null(
        strstr(co_buf_cstr(&text),
               "component_operator_reference_requeues_total{controller=\"component\"} "));
    co_buf_dispose(&text);
    wait_ready("c-vf", "generation:1");
}

static void test_ctl_refwatch__substitute_from_change_rerenders(void **state)
{
    (void)state;
    put_secret("vars", "v", "first");
    put_blueprint("bp-sf", "sf-cm", "${v}", false);
    ctl_test_create_component(admin, ns, "c-sf",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp-sf\"}},"
                              "\"path\":\"app\",\"requeueInterval\":\"1h\","
                              "\"postBuild\":{\"substituteFrom\":[{\"name\":\"vars\"}]}}");
    wait_ready("c-sf", "generation:1");
    wait_cm("sf-cm", "first", WAIT_MS);
    assert_true(ctl_refwatch_wait_watching(ctl_manager_reference_watch(mgr), WAIT_MS));

    put_secret("vars", "v", "second");
    long took = wait_cm("sf-cm", "second", CHANGE_BOUND_MS);
    print_message("# re-rendered %ld ms after the substituteFrom Secret changed\n", took);
    wait_ready("c-sf", "generation:1");
}

/* Changes of a Secret no Component names queue nothing and leave nothing in memory. The watch
 * delivers events in order: once a later change of a referenced Secret has been seen, the
 * earlier ones of the unreferenced Secret have been judged. */
static void test_ctl_refwatch__unreferenced_secret_queues_nothing(void **state)
{
    (void)state;
    wait_ready("c-vf", "generation:1");
    wait_ready("c-sf", "generation:1");
    usleep(1000 * 1000); /* the passes that made them Ready have ended */
    unsigned long r0 = reconciles();
    ctl_refwatch_stats s0 = watch_stats();

    put_secret("unrelated", "values", "v: 1\n");
    put_secret("unrelated", "values", "v: 2\n");
    put_secret("unrelated", "other", "x");
    delete_secret("unrelated");
    usleep(2000 * 1000);
    assert_int_equal(reconciles(), r0);

    /* the marker: one change of a referenced Secret, named by one Component */
    put_secret("vars", "v", "third");
    wait_cm("sf-cm", "third", CHANGE_BOUND_MS);
    ctl_refwatch_stats s1 = watch_stats();
    assert_int_equal(s1.changes - s0.changes, 1);
    assert_int_equal(s1.requeues - s0.requeues, 1);
    /* what is stored: referenced Secrets only (vals and vars), never the others of the
     * namespace (meta-only, meta-later, unrelated) */
    assert_int_equal(s1.referenced, 2);
    assert_true(s1.stored <= s1.referenced);
    wait_ready("c-sf", "generation:1");
}

static void test_ctl_refwatch__deleted_secret_requeues(void **state)
{
    (void)state;
    wait_ready("c-vf", "generation:1");
    delete_secret("vals");
    /* the pass the deletion causes finds the Secret gone */
    char last[512] = "";
    bool seen = false;
    for (long waited = 0; waited < CHANGE_BOUND_MS && !seen; waited += 50) {
        struct json_object *c = ctl_test_get_component(admin, ns, "c-vf");
        struct json_object *st = co_json_get(c, "status", NULL);
        const char *msg = ready_message(c);
        snprintf(last, sizeof(last), "%s: %s", ctl_state_get(st), msg);
        seen = !ctl_state_component_ready(c) && strstr(msg, "spec.valuesFrom[0]") &&
               strstr(msg, "vals not found");
        json_object_put(c);
        if (!seen) {
            usleep(50 * 1000);
        }
    }
    if (!seen) {
        fail_msg("c-vf did not notice the deleted Secret in time (last: %s)", last);
    }
    /* and a new one is taken up */
    put_secret("vals", "values", "v: three\n");
    wait_cm("vf-cm", "three", CHANGE_BOUND_MS);
    wait_ready("c-vf", "generation:1");
}

/* A new source revision while the dependents of the old one are not ready: the Component moves
 * to it at once (each pass resolves the source again; the Blueprint's change queues it), while a
 * sticky one keeps its artifact until the cycle ends (docs/behaviour.md, "Sticky sources"). */
static void test_ctl_refwatch__new_revision_cancels_a_stuck_health_wait(void **state)
{
    (void)state;
    put_blueprint("bp-rev", "rev-cm", "one", true);
    put_blueprint("bp-stk", "stk-cm", "one", true);
    ctl_test_create_component(admin, ns, "c-rev",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp-rev\"}},"
                              "\"path\":\"app\",\"requeueInterval\":\"1h\"}");
    ctl_test_create_component(admin, ns, "c-stk",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp-stk\"}},"
                              "\"path\":\"app\",\"requeueInterval\":\"1h\",\"sticky\":true}");
    wait_processing("c-rev", "generation:1", WAIT_MS);
    wait_processing("c-stk", "generation:1", WAIT_MS);
    wait_cm("rev-cm", "one", WAIT_MS);
    wait_cm("stk-cm", "one", WAIT_MS);

    put_blueprint("bp-rev", "rev-cm", "two", true);
    put_blueprint("bp-stk", "stk-cm", "two", true);
    wait_processing("c-rev", "generation:2", CHANGE_BOUND_MS);
    wait_cm("rev-cm", "two", CHANGE_BOUND_MS);

    /* the sticky one was queued by the same change and held on to its artifact */
    usleep(3000 * 1000);
    struct json_object *c = ctl_test_get_component(admin, ns, "c-stk");
    assert_string_equal(status_str(c, "lastAttemptedRevision"), "generation:1");
    assert_string_equal(ctl_state_get(co_json_get(c, "status", NULL)), "Processing");
    json_object_put(c);
    char *v = cm_value("stk-cm");
    assert_string_equal(v, "one");
    free(v);
}

/* A kubeconfig of the test control plane that impersonates @p user (a file under dir). */
static char *impersonating_kubeconfig(const char *user)
{
    size_t len = 0;
    char *text = co_test_read_file(co_test_env("CO_TEST_KUBECONFIG"), &len);
    struct json_object *kc = NULL;
    assert_co_pass(co_yaml_parse(&kc, text, len, 0));
    free(text);
    struct json_object *users = co_json_get(kc, "users", NULL);
    for (size_t i = 0; i < json_object_array_length(users); i++) {
        struct json_object *u = co_json_get(json_object_array_get_idx(users, i), "user", NULL);
        json_object_object_add(u, "as", json_object_new_string(user));
    }
    char *path = co_xasprintf("%s/limited.kubeconfig", dir);
    const char *out = json_object_to_json_string_ext(kc, JSON_C_TO_STRING_PLAIN);
    co_test_write_file(path, out, strlen(out));
    json_object_put(kc);
    return path;
}

/* Everything the manager needs, with Secrets readable one by one only. */
static void bind_limited(const char *user)
{
    struct json_object *role = co_test_json(
        "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\","
        "\"metadata\":{\"name\":\"co-test-refwatch-limited\"},\"rules\":["
        "{\"apiGroups\":[\"core.cs.sap.com\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]},"
        "{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\",\"events\"],\"verbs\":[\"*\"]},"
        "{\"apiGroups\":[\"events.k8s.io\"],\"resources\":[\"events\"],\"verbs\":[\"*\"]},"
        /* as the shipped role: the Flux sources, whose CRDs another suite may have installed */
        "{\"apiGroups\":[\"source.toolkit.fluxcd.io\"],\"resources\":[\"*\"],"
        "\"verbs\":[\"get\",\"list\",\"watch\"]},"
        "{\"apiGroups\":[\"\"],\"resources\":[\"namespaces\",\"secrets\"],\"verbs\":[\"get\"]}]}");
    struct json_object *binding = co_test_json(
        "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
        "\"metadata\":{\"name\":\"co-test-refwatch-limited\"},\"roleRef\":{\"apiGroup\":"
        "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":"
        "\"co-test-refwatch-limited\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\","
        "\"kind\":\"User\",\"name\":\"%s\"}]}",
        user);
    int rc = co_kube_create(NULL, admin, role, NULL);
    assert_true(rc == 0 || rc == CO_EEXISTS);
    rc = co_kube_create(NULL, admin, binding, NULL);
    assert_true(rc == 0 || rc == CO_EEXISTS);
    co_error_clear();
    json_object_put(role);
    json_object_put(binding);
}

static size_t count_in_file(const char *path, const char *needle)
{
    size_t len = 0;
    char *text = co_test_read_file(path, &len);
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle)) {
        n++;
    }
    free(text);
    return n;
}

/* A controller that may not list and watch Secrets says so once and reconciles as before, at
 * the requeue interval. */
static void test_ctl_refwatch__without_the_right_it_falls_back(void **state)
{
    (void)state;
    const char *user = "co-test-refwatch-limited";
    bind_limited(user);
    char *kubeconfig = impersonating_kubeconfig(user);
    char *ns2 = co_test_kube_namespace(admin, "ctl-refwatch-limited-");
    char *logpath = co_xasprintf("%s/limited.log", dir);
    int fd = open(logpath, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    assert_true(fd >= 0);
    co_log_set_fd(fd);

    char *cache = co_xasprintf("%s/cache2", dir);
    ctl_sources *src2 = NULL;
    assert_co_pass(ctl_sources_new(&src2, cache));
    ctl_source_ops ops2 = ctl_sources_ops(src2);
    ctl_manager_options o = {0};
    o.kubeconfig = kubeconfig;
    o.workers = 1;
    const char *nss[] = {ns2};
    o.namespaces = nss;
    o.nnamespaces = 1;
    o.source = &ops2;
    o.apply = &app_ops;
    ctl_manager *m2 = NULL;
    assert_co_pass(ctl_manager_new(&m2, &o));
    assert_co_pass(ctl_sources_attach(src2, m2));
    assert_co_pass(ctl_manager_start(m2));

    char *saved_ns = ns;
    ns = ns2; /* the helpers work in ns */
    put_secret("vals", "values", "v: limited\n");
    put_blueprint("bp-lim", "lim-cm", "{{ .v }}", false);
    ctl_test_create_component(admin, ns, "c-lim",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp-lim\"}},"
                              "\"path\":\"app\",\"requeueInterval\":\"1h\","
                              "\"valuesFrom\":[{\"name\":\"vals\"}]}");
    wait_cm("lim-cm", "limited", WAIT_MS);
    ctl_refwatch *rw = ctl_manager_reference_watch(m2);
    ctl_refwatch_stats st = {0};
    for (long waited = 0; waited < WAIT_MS && !st.refused; waited += 50) {
        ctl_refwatch_stats_get(&st, rw);
        usleep(50 * 1000);
    }
    assert_true(st.refused);
    assert_false(st.watching);
    /* a second referencing Component does not ask again */
    ctl_test_create_component(admin, ns, "c-lim2",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp-lim\"}},"
                              "\"path\":\"app\",\"requeueInterval\":\"1h\","
                              "\"valuesFrom\":[{\"name\":\"vals\"}]}");
    usleep(1000 * 1000);
    ctl_refwatch_stats_get(&st, rw);
    assert_false(st.watching);
    ns = saved_ns;

    ctl_manager_free(m2);
    ctl_sources_free(src2);
    co_log_set_fd(2);
    close(fd);
    assert_int_equal(count_in_file(logpath, "may not list and watch Secrets"), 1);
    free(logpath);
    free(cache);
    free(kubeconfig);
    free(ns2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_refwatch__secrets_are_read_as_metadata_only),
        cmocka_unit_test(test_ctl_refwatch__values_from_change_rerenders),
        cmocka_unit_test(test_ctl_refwatch__substitute_from_change_rerenders),
        cmocka_unit_test(test_ctl_refwatch__unreferenced_secret_queues_nothing),
        cmocka_unit_test(test_ctl_refwatch__deleted_secret_requeues),
        cmocka_unit_test(test_ctl_refwatch__new_revision_cancels_a_stuck_health_wait),
        cmocka_unit_test(test_ctl_refwatch__without_the_right_it_falls_back),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
