/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blueprint sources end to end (docs/behaviour.md, "Blueprint sources" and "The Blueprint
 * controller"): the controller with its real source binding against the real kube-apiserver with
 * the Blueprint CRDs installed. A Component on a Blueprint applies its files through a
 * BlueprintVersion; an edit of the Blueprint re-queues it; pins hold; unreferenced versions are
 * collected, also when a Component moves to a git source, and a Blueprint in use is held by
 * its finalizer; a Blueprint laid out as the Go
 * operator's reference describes one (tests/fixtures/blueprint/docs-layout) is reconciled.
 * Objects are applied by the minimal test applier.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "co/api/blueprint.h"
#include "co/json/json.h"
#include "co/json/yaml.h"
#include "co/kube/kube_client.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_sources.h"
#include "controller/ctl_state.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_git_repo.h"
#include "tests/support/test_support.h"

#define WAIT_MS 120000L
#define BP_API  "core.cs.sap.com/v1alpha1"

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
    json_object_put(crd);
    for (int i = 0; i < 600; i++) {
        co_kube_mapping m;
        if (co_kube_client_mapping(&m, admin, BP_API, kind) == 0) {
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
    ns = co_test_kube_namespace(admin, "ctl-bp-");
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
    o.blueprint_grace_ns = 1000LL * 1000 * 1000; /* short, so that collection is seen quickly */
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

/* spec.files of a Blueprint holding app/cm.yaml: ConfigMap @p cm with data.v = @p value. */
static struct json_object *files_of(const char *cm, const char *value)
{
    char *text = co_xasprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n"
                              "data:\n  v: %s\n",
                              cm, value);
    struct json_object *files = json_object_new_object();
    json_object_object_add(files, "app/cm.yaml", json_object_new_string(text));
    free(text);
    return files;
}

/* The digest of those files. */
static char *digest_of(const char *cm, const char *value)
{
    struct json_object *files = files_of(cm, value);
    char d[CO_SHA256_HEX_LEN + 1];
    assert_co_pass(co_blueprint_digest(d, files));
    json_object_put(files);
    return co_xstrdup(d);
}

static void put_blueprint(const char *name, const char *cm, const char *value)
{
    struct json_object *obj =
        co_test_json("{\"apiVersion\":\"%s\",\"kind\":\"Blueprint\",\"metadata\":{\"name\":\"%s\","
                     "\"namespace\":\"%s\"},\"spec\":{}}",
                     BP_API, name, ns);
    json_object_object_add(co_json_get(obj, "spec", NULL), "files", files_of(cm, value));
    co_kube_ref ref = {BP_API, CO_BLUEPRINT_KIND, ns, name};
    struct json_object *cur = NULL;
    if (co_kube_get(&cur, admin, &ref, NULL) == 0) {
        struct json_object *patch = co_test_json("{\"spec\":{}}");
        json_object_object_add(co_json_get(patch, "spec", NULL), "files", files_of(cm, value));
        assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
        json_object_put(patch);
        json_object_put(cur);
    } else {
        co_error_clear();
        assert_co_pass(co_kube_create(NULL, admin, obj, NULL));
    }
    json_object_put(obj);
}

static struct json_object *get_obj(const char *kind, const char *name)
{
    co_kube_ref ref = {BP_API, kind, ns, name};
    struct json_object *obj = NULL;
    if (co_kube_get(&obj, admin, &ref, NULL) < 0) {
        co_error_clear();
        return NULL;
    }
    return obj;
}

static bool version_exists(const char *bp, const char *digest)
{
    char *name = co_blueprint_version_name(bp, digest);
    struct json_object *v = get_obj(CO_BLUEPRINT_VERSION_KIND, name);
    free(name);
    json_object_put(v);
    return v != NULL;
}

/* How many BlueprintVersions carry the label of Blueprint @p bp. */
static size_t versions_of(const char *bp)
{
    char *label = co_blueprint_label_value(bp);
    char *sel = co_xasprintf("%s=%s", CO_BLUEPRINT_NAME_LABEL, label);
    co_kube_list_options lo = {0};
    lo.label_selector = sel;
    co_kube_ref ref = {BP_API, CO_BLUEPRINT_VERSION_KIND, ns, NULL};
    struct json_object *list = NULL;
    assert_co_pass(co_kube_list_all(&list, admin, &ref, &lo));
    size_t n = json_object_array_length(co_json_get(list, "items", NULL));
    json_object_put(list);
    free(sel);
    free(label);
    return n;
}

static void wait_versions(const char *bp, size_t want)
{
    size_t n = 0;
    for (long waited = 0; waited < WAIT_MS; waited += 200) {
        if ((n = versions_of(bp)) == want) {
            return;
        }
        usleep(200 * 1000);
    }
    fail_msg("Blueprint %s: %zu versions, not %zu", bp, n, want);
}

static const char *status_str(struct json_object *obj, const char *key)
{
    struct json_object *v = co_json_get(obj, "status", key, NULL);
    return v ? json_object_get_string(v) : "";
}

static const char *artifact_str(struct json_object *obj, const char *key)
{
    struct json_object *v = co_json_get(obj, "status", "sourceRef", "artifact", key, NULL);
    return v ? json_object_get_string(v) : "";
}

static const char *condition_message(struct json_object *c)
{
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    struct json_object *m =
        conds ? co_json_get(json_object_array_get_idx(conds, 0), "message", NULL) : NULL;
    return m ? json_object_get_string(m) : "";
}

static char *cm_value(const char *name)
{
    co_kube_ref ref = {"v1", "ConfigMap", ns, name};
    struct json_object *obj = NULL;
    if (co_kube_get(&obj, admin, &ref, NULL) < 0) {
        co_error_clear();
        return co_xstrdup("");
    }
    struct json_object *v = co_json_get(obj, "data", "v", NULL);
    char *s = co_xstrdup(v ? json_object_get_string(v) : "");
    json_object_put(obj);
    return s;
}

static void wait_applied(const char *name, const char *rev)
{
    char last[512] = "";
    for (long waited = 0; waited < WAIT_MS; waited += 100) {
        struct json_object *c = ctl_test_get_component(admin, ns, name);
        bool ok = c && ctl_state_component_ready(c) &&
                  strcmp(status_str(c, "lastAppliedRevision"), rev) == 0;
        snprintf(last, sizeof(last), "%s/%s applied %s: %s",
                 ctl_state_get(co_json_get(c, "status", NULL)),
                 ctl_state_reason(co_json_get(c, "status", NULL)),
                 status_str(c, "lastAppliedRevision"), condition_message(c));
        json_object_put(c);
        if (ok) {
            return;
        }
        usleep(100 * 1000);
    }
    fail_msg("%s/%s: not Ready at %s in time (last: %s)", ns, name, rev, last);
}

static void delete_component(const char *name)
{
    co_kube_ref ref = {BP_API, "Component", ns, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    ctl_test_wait_gone(admin, ns, name, WAIT_MS);
}

static void delete_blueprint(const char *name)
{
    co_kube_ref ref = {BP_API, CO_BLUEPRINT_KIND, ns, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
}

static void wait_blueprint_gone(const char *name)
{
    for (long waited = 0; waited < WAIT_MS; waited += 200) {
        struct json_object *b = get_obj(CO_BLUEPRINT_KIND, name);
        if (!b) {
            return;
        }
        json_object_put(b);
        usleep(200 * 1000);
    }
    fail_msg("Blueprint %s not gone in time", name);
}

static void assert_cm(const char *name, const char *want)
{
    char *v = cm_value(name);
    assert_string_equal(v, want);
    free(v);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_ctl_blueprints__component_applies_its_blueprint(void **state)
{
    (void)state;
    put_blueprint("bp1", "bp1-cm", "one");
    ctl_test_create_component(admin, ns, "c1",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp1\"}},"
                              "\"path\":\"app\"}");
    wait_applied("c1", "generation:1");
    assert_cm("bp1-cm", "one");

    char *d = digest_of("bp1-cm", "one");
    struct json_object *c = ctl_test_get_component(admin, ns, "c1");
    char *url = co_xasprintf("blueprint://%s/bp1/%s", ns, d);
    assert_string_equal(artifact_str(c, "url"), url);
    assert_string_equal(artifact_str(c, "digest"), d);
    assert_string_equal(artifact_str(c, "revision"), "generation:1");
    json_object_put(c);

    char *vname = co_blueprint_version_name("bp1", d);
    struct json_object *v = get_obj(CO_BLUEPRINT_VERSION_KIND, vname);
    assert_non_null(v);
    assert_string_equal(
        co_json_str(co_json_get(v, "metadata", "labels", NULL), CO_BLUEPRINT_NAME_LABEL, NULL),
        "bp1");
    assert_string_equal(co_json_str(co_json_get(v, "spec", NULL), "blueprint", NULL), "bp1");
    assert_string_equal(co_json_str(co_json_get(v, "spec", NULL), "revision", NULL),
                        "generation:1");
    json_object_put(v);

    /* the Blueprint controller holds it with its finalizer */
    bool held = false;
    for (long waited = 0; waited < WAIT_MS && !held; waited += 100) {
        struct json_object *b = get_obj(CO_BLUEPRINT_KIND, "bp1");
        struct json_object *f = co_json_get(b, "metadata", "finalizers", NULL);
        held = f && json_object_array_length(f) == 1 &&
               strcmp(json_object_get_string(json_object_array_get_idx(f, 0)),
                      "component-operator.cs.sap.com") == 0;
        json_object_put(b);
        if (!held) {
            usleep(100 * 1000);
        }
    }
    assert_true(held);
    free(vname);
    free(url);
    free(d);
}

static void test_ctl_blueprints__missing_blueprint_is_retried(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "c-missing",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"later\"}},"
                              "\"path\":\"app\"}");
    ctl_test_wait_state(admin, ns, "c-missing", "Pending", "Retrying", WAIT_MS);
    struct json_object *c = ctl_test_get_component(admin, ns, "c-missing");
    assert_contains(condition_message(c), "not found");
    json_object_put(c);
    assert_cm("later-cm", "");

    put_blueprint("later", "later-cm", "here");
    wait_applied("c-missing", "generation:1");
    assert_cm("later-cm", "here");
    delete_component("c-missing");
}

static void test_ctl_blueprints__edit_is_applied_and_old_version_collected(void **state)
{
    (void)state;
    put_blueprint("bp2", "bp2-cm", "one");
    ctl_test_create_component(admin, ns, "c2",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp2\"}},"
                              "\"path\":\"app\"}");
    wait_applied("c2", "generation:1");
    char *d1 = digest_of("bp2-cm", "one");
    char *d2 = digest_of("bp2-cm", "two");
    assert_true(version_exists("bp2", d1));

    put_blueprint("bp2", "bp2-cm", "two");
    wait_applied("c2", "generation:2");
    assert_cm("bp2-cm", "two");
    assert_true(version_exists("bp2", d2));
    /* nobody refers to the first content any more */
    wait_versions("bp2", 1);
    assert_false(version_exists("bp2", d1));
    assert_true(version_exists("bp2", d2));

    delete_component("c2");
    free(d1);
    free(d2);
}

static void test_ctl_blueprints__pinned_component_waits_for_its_digest(void **state)
{
    (void)state;
    put_blueprint("bp3", "bp3-cm", "one");
    char *d1 = digest_of("bp3-cm", "one");
    ctl_test_create_component(admin, ns, "c3",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp3\"}},"
                              "\"path\":\"app\",\"digest\":\"%s\"}",
                              d1);
    wait_applied("c3", "generation:1");
    assert_cm("bp3-cm", "one");

    /* the Blueprint moves on: the Component waits on its pin and keeps what it applied */
    put_blueprint("bp3", "bp3-cm", "two");
    ctl_test_wait_state(admin, ns, "c3", "Pending", "Retrying", WAIT_MS);
    struct json_object *c = ctl_test_get_component(admin, ns, "c3");
    assert_contains(condition_message(c), "does not match specified digest");
    assert_string_equal(status_str(c, "lastAppliedRevision"), "generation:1");
    json_object_put(c);
    assert_cm("bp3-cm", "one");

    /* the content comes back to the pin: applied again */
    put_blueprint("bp3", "bp3-cm", "one");
    wait_applied("c3", "generation:3");
    assert_cm("bp3-cm", "one");
    delete_component("c3");
    free(d1);
}

static void test_ctl_blueprints__blueprint_in_use_waits_for_its_components(void **state)
{
    (void)state;
    put_blueprint("bp4", "bp4-cm", "one");
    ctl_test_create_component(admin, ns, "c4",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp4\"}},"
                              "\"path\":\"app\"}");
    wait_applied("c4", "generation:1");
    /* the finalizer is there before the deletion starts */
    for (long waited = 0; waited < WAIT_MS; waited += 100) {
        struct json_object *b = get_obj(CO_BLUEPRINT_KIND, "bp4");
        bool held = co_json_get(b, "metadata", "finalizers", NULL) != NULL;
        json_object_put(b);
        if (held) {
            break;
        }
        usleep(100 * 1000);
    }
    delete_blueprint("bp4");
    usleep(3000 * 1000);
    struct json_object *b = get_obj(CO_BLUEPRINT_KIND, "bp4");
    assert_non_null(b);
    assert_non_null(co_json_get(b, "metadata", "deletionTimestamp", NULL));
    json_object_put(b);
    assert_int_equal(versions_of("bp4"), 1);

    delete_component("c4");
    wait_versions("bp4", 0);
    wait_blueprint_gone("bp4");
}

static void test_ctl_blueprints__component_moved_away_leaves_no_versions(void **state)
{
    (void)state;
    put_blueprint("bp5", "bp5-cm", "one");
    put_blueprint("bp5b", "bp5-cm", "other");
    ctl_test_create_component(admin, ns, "c5",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp5\"}},"
                              "\"path\":\"app\"}");
    wait_applied("c5", "generation:1");
    assert_int_equal(versions_of("bp5"), 1);

    struct json_object *patch =
        co_test_json("{\"spec\":{\"sourceRef\":{\"blueprint\":{\"name\":\"bp5b\"}}}}");
    co_kube_ref ref = {BP_API, "Component", ns, "c5"};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
    wait_applied("c5", "generation:1");
    assert_cm("bp5-cm", "other");
    wait_versions("bp5", 0);
    assert_int_equal(versions_of("bp5b"), 1);
    delete_component("c5");
}

/* Serves the repositories below @p root over smart HTTP on loopback (tests/support/
 * git_http_server.py); *port receives its port. */
static pid_t start_git_server(const char *work, const char *root, int *port)
{
    char *script = co_xasprintf("%s/tests/support/git_http_server.py", CO_SOURCE_ROOT);
    char *port_file = co_xasprintf("%s/port", work);
    char *log = co_xasprintf("%s/git-http.log", work);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(log, "a", stderr) || !freopen("/dev/null", "w", stdout)) {
            _exit(126);
        }
        execlp("python3", "python3", script, "--root", root, "--port-file", port_file,
               (char *)NULL);
        _exit(127);
    }
    assert_true(pid > 0);
    *port = 0;
    for (int i = 0; i < 600 && *port == 0; i++) {
        char *text = co_test_read_file(port_file, NULL);
        *port = text && *text ? atoi(text) : 0; // NOLINT(cert-err34-c): our own helper's file
        free(text);
        if (*port == 0) {
            usleep(50 * 1000);
        }
    }
    assert_true(*port > 0);
    free(script);
    free(port_file);
    free(log);
    return pid;
}

/* A Component that moves from a Blueprint to a git source deploys from git, and the Blueprint's
 * versions, no longer referenced, are collected. */
static void test_ctl_blueprints__component_moved_to_git_leaves_no_versions(void **state)
{
    (void)state;
    char *work = co_test_tmpdir();
    char *root = co_xasprintf("%s/repos", work);
    assert_int_equal(mkdir(root, 0755), 0);
    char *repo = co_xasprintf("%s/app", root);
    tgr_init(repo);
    const char *cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bp6-cm\n"
                     "data:\n  v: from-git\n";
    tgr_write(repo, "app/cm.yaml", cm);
    free(tgr_commit(repo, "a ConfigMap"));
    int port = 0;
    pid_t server = start_git_server(work, root, &port);

    put_blueprint("bp6", "bp6-cm", "one");
    ctl_test_create_component(admin, ns, "c6",
                              "{\"sourceRef\":{\"blueprint\":{\"name\":\"bp6\"}},"
                              "\"path\":\"app\"}");
    wait_applied("c6", "generation:1");
    assert_int_equal(versions_of("bp6"), 1);

    struct json_object *patch =
        co_test_json("{\"spec\":{\"sourceRef\":{\"blueprint\":null,\"git\":{\"url\":"
                     "\"http://127.0.0.1:%d/app\",\"ref\":{\"branch\":\"main\"}}}}}",
                     port);
    co_kube_ref ref = {BP_API, "Component", ns, "c6"};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
    bool moved = false;
    for (long waited = 0; waited < WAIT_MS && !moved; waited += 100) {
        struct json_object *c = ctl_test_get_component(admin, ns, "c6");
        char *v = cm_value("bp6-cm");
        moved = c && ctl_state_component_ready(c) && strcmp(v, "from-git") == 0 &&
                strncmp(artifact_str(c, "url"), "blueprint://", 12) != 0;
        free(v);
        json_object_put(c);
        if (!moved) {
            usleep(100 * 1000);
        }
    }
    assert_true(moved);
    wait_versions("bp6", 0);

    delete_component("c6");
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    co_test_rmtree(work);
    free(repo);
    free(root);
    free(work);
}

/* The object of fixture tests/fixtures/blueprint/docs-layout/@p file, placed in the test's
 * namespace. */
static struct json_object *docs_layout(const char *file)
{
    char *rel = co_xasprintf("blueprint/docs-layout/%s", file);
    char *path = co_test_fixture_path(rel);
    char *text = co_test_read_file(path, NULL);
    assert_non_null(text);
    struct json_object *obj = NULL;
    assert_co_pass(co_yaml_parse(&obj, text, strlen(text), 0));
    json_object_object_add(co_json_get(obj, "metadata", NULL), "namespace",
                           json_object_new_string(ns));
    free(text);
    free(path);
    free(rel);
    return obj;
}

/* A Blueprint with a kustomization at the top, manifests under resources/ and templates, and a
 * Component giving values and path ".": the templates are rendered with the values. */
static void test_ctl_blueprints__documented_layout_is_reconciled(void **state)
{
    (void)state;
    struct json_object *bp = docs_layout("blueprint.yaml");
    struct json_object *c = docs_layout("component.yaml");
    assert_co_pass(co_kube_create(NULL, admin, bp, NULL));
    assert_co_pass(co_kube_create(NULL, admin, c, NULL));
    json_object_put(bp);
    json_object_put(c);
    wait_applied("docs-layout", "generation:1");

    co_kube_ref cm = {"v1", "ConfigMap", ns, "docs-layout-config"};
    struct json_object *obj = NULL;
    assert_co_pass(co_kube_get(&obj, admin, &cm, NULL));
    assert_string_equal(co_json_str(obj, "data", "greeting", NULL), "hi");
    assert_string_equal(co_json_str(obj, "data", "replicas", NULL), "3");
    json_object_put(obj);
    co_kube_ref sa = {"v1", "ServiceAccount", ns, "docs-layout"};
    assert_co_pass(co_kube_get(&obj, admin, &sa, NULL));
    json_object_put(obj);

    delete_component("docs-layout");
    delete_blueprint("docs-layout");
    wait_blueprint_gone("docs-layout");
    assert_int_equal(versions_of("docs-layout"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_blueprints__component_applies_its_blueprint),
        cmocka_unit_test(test_ctl_blueprints__missing_blueprint_is_retried),
        cmocka_unit_test(test_ctl_blueprints__edit_is_applied_and_old_version_collected),
        cmocka_unit_test(test_ctl_blueprints__pinned_component_waits_for_its_digest),
        cmocka_unit_test(test_ctl_blueprints__blueprint_in_use_waits_for_its_components),
        cmocka_unit_test(test_ctl_blueprints__component_moved_away_leaves_no_versions),
        cmocka_unit_test(test_ctl_blueprints__component_moved_to_git_leaves_no_versions),
        cmocka_unit_test(test_ctl_blueprints__documented_layout_is_reconciled),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
