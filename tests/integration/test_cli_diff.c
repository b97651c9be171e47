/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `component-controller diff` and `plan` against the real kube-apiserver (docs/preview.md): the
 * manager runs in-process with the test source (a local directory) and the real apply engine,
 * and the subcommands run in-process too (ctl_cli_main()) with the test control plane's
 * kubeconfig. diff reports a changed value and a dropped object with exit status 1 and nothing
 * with 0 once the controller applied the change; Secret values never reach its output; plan
 * lists the objects in the order the controller creates them (the order of their
 * resourceVersions); bad input exits with 2 and says why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/util/digest.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_cli.h"
#include "controller/ctl_manager.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_archive_builder.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_support.h"

#define WAIT_MS 90000L
#define SRC     "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"

static co_kube_client *admin;
static char *ns;
static ctl_manager *mgr;
static char *srcdir;   /* the controller's source */
static char *localdir; /* what the CLI renders instead, in some tests */
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;

static void put(const char *dir, const char *rel, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    co_test_write_file(path, text, strlen(text));
}

static void drop(const char *dir, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    assert_int_equal(unlink(path), 0);
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    ns = co_test_kube_namespace(admin, "co-cli-diff-");
    srcdir = co_test_tmpdir();
    localdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    src_ops = ctl_test_source_ops();
    app_ops = ctl_apply_engine_ops();
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.metrics_addr = "127.0.0.1:0";
    o.probe_addr = "127.0.0.1:0";
    o.workers = 2;
    o.namespaces = (const char *const *)&ns;
    o.nnamespaces = 1;
    o.source = &src_ops;
    o.apply = &app_ops;
    assert_co_pass(ctl_manager_new(&mgr, &o));
    assert_co_pass(ctl_manager_start(mgr));
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_manager_free(mgr);
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    co_test_rmtree(localdir);
    free(srcdir);
    free(localdir);
    free(ns);
    curl_global_cleanup();
    return 0;
}

typedef struct run_result {
    int status;
    char *out;
    char *err;
} run_result;

static void run_result_dispose(run_result *r)
{
    free(r->out);
    free(r->err);
}

/* Runs `component-controller ARGS...` in-process (NULL-terminated arguments). */
static run_result run(const char *first, ...)
{
    const char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && argc < 31; a = va_arg(ap, const char *)) {
        argv[argc++] = a;
    }
    va_end(ap);
    argv[argc] = NULL;
    run_result r = {0};
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(&r.out, &olen);
    FILE *err = open_memstream(&r.err, &elen);
    assert_non_null(out);
    assert_non_null(err);
    r.status = ctl_cli_main(argc, (char **)argv, out, err);
    fclose(out);
    fclose(err);
    return r;
}

static struct json_object *get_object(const char *kind, const char *name)
{
    co_kube_ref ref = {"v1", kind, ns, name};
    struct json_object *obj = NULL;
    int rc = co_kube_get(&obj, admin, &ref, NULL);
    return rc == 0 ? obj : NULL;
}

typedef struct cm_wait {
    const char *name, *key, *want; /* want NULL: the ConfigMap is gone */
} cm_wait;

static int cm_reached(void *payload)
{
    const cm_wait *w = payload;
    struct json_object *cm = get_object("ConfigMap", w->name);
    const char *v = cm ? co_json_str(cm, "data", w->key, NULL) : NULL;
    bool ok = w->want ? v && strcmp(v, w->want) == 0 : cm == NULL;
    json_object_put(cm);
    return ok;
}

static void wait_cm(const char *name, const char *key, const char *want)
{
    cm_wait w = {name, key, want};
    assert_true(co_test_poll(cm_reached, &w, WAIT_MS));
}

#define WEB_CM                                                                                     \
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n"                        \
    "  color: '{{ .color }}'\n  size: '{{ .size }}'\n"
#define WEB_SECRET                                                                                 \
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n"                        \
    "  password: '{{ .password }}'\n  user: admin\n"
#define WEB_OLD "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\ndata:\n  k: v\n"

static char *component_yaml(const char *name, const char *path, const char *color, const char *pw)
{
    return co_xasprintf("apiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n"
                        "  name: %s\n  namespace: %s\nspec:\n  sourceRef:\n    httpRepository:\n"
                        "      url: http://example.invalid/x.tar.gz\n  path: %s\n"
                        "  valuesFrom:\n  - name: web-values\n  values:\n"
                        "    color: %s\n    password: %s\n",
                        name, ns, path, color, pw);
}

static void test_cli_diff__change_and_deletion_then_nothing_once_applied(void **state)
{
    (void)state;
    const char *kc = co_test_env("CO_TEST_KUBECONFIG");
    put(srcdir, "web/cm.yaml", WEB_CM);
    put(srcdir, "web/secret.yaml", WEB_SECRET);
    put(srcdir, "web/old.yaml", WEB_OLD);
    /* a valuesFrom Secret, read with the caller's credentials */
    struct json_object *values = co_test_json(
        "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"web-values\","
        "\"namespace\":\"%s\"},\"stringData\":{\"values\":\"size: large\\n\"}}",
        ns);
    assert_co_pass(co_kube_create(NULL, admin, values, NULL));
    json_object_put(values);
    ctl_test_create_component(admin, ns, "web",
                              "{" SRC
                              ",\"path\":\"web\",\"valuesFrom\":[{\"name\":\"web-values\"}],"
                              "\"values\":{\"color\":\"blue\","
                              "\"password\":\"first-pass-111\"}}");
    ctl_test_wait_state(admin, ns, "web", "Ready", "Ready", WAIT_MS);
    char *ref = co_xasprintf("%s/web", ns);

    /* what the controller applied: no change, nothing printed */
    run_result r = run("diff", "--kubeconfig", kc, ref, srcdir, NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    run_result_dispose(&r);

    /* the change under review: a new value and password, old.yaml dropped */
    put(localdir, "web/cm.yaml", WEB_CM);
    put(localdir, "web/secret.yaml", WEB_SECRET);
    char *comp = component_yaml("web", "web", "green", "second-pass-222");
    char *file = co_xasprintf("%s/component.yaml", localdir);
    co_test_write_file(file, comp, strlen(comp));
    r = run("diff", "--kubeconfig", kc, "-f", file, localdir, NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "--- live/v1/ConfigMap/"));
    assert_non_null(strstr(r.out, "-  color: blue\n"));
    assert_non_null(strstr(r.out, "+  color: green\n"));
    /* unchanged (from the valuesFrom Secret): context */
    assert_non_null(strstr(r.out, "\n   size: large\n"));
    char *gone = co_xasprintf("- v1 ConfigMap %s/old: deleted", ns);
    assert_non_null(strstr(r.out, gone));
    free(gone);
    /* the Secret: its changed key as a changed hash, never a value */
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, "second-pass-222", strlen("second-pass-222"));
    char *line = co_xasprintf("+  password: sha256:%s\n", hex);
    assert_non_null(strstr(r.out, line));
    free(line);
    co_sha256_hex(hex, "first-pass-111", strlen("first-pass-111"));
    line = co_xasprintf("-  password: sha256:%s\n", hex);
    assert_non_null(strstr(r.out, line));
    free(line);
    const char *secrets[] = {"first-pass-111", "second-pass-222", "Zmlyc3QtcGFzcy0xMTE",
                             "c2Vjb25kLXBhc3MtMjIy", "YWRtaW4"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(secrets); i++) {
        assert_null(strstr(r.out, secrets[i]));
        assert_null(strstr(r.err, secrets[i]));
    }
    assert_null(strstr(r.out, "\033[")); /* not a terminal: no colour */
    assert_null(strstr(r.out, "managedFields"));
    assert_null(strstr(r.out, "resourceVersion"));
    assert_null(strstr(r.out, "creationTimestamp"));
    assert_null(strstr(r.out, "uid:"));
    run_result_dispose(&r);

    /* stable: the same output again */
    r = run("diff", "--kubeconfig", kc, "-f", file, localdir, NULL);
    run_result again = run("diff", "--kubeconfig", kc, "-f", file, localdir, NULL);
    assert_string_equal(r.out, again.out);
    run_result_dispose(&again);
    run_result_dispose(&r);
    r = run("diff", "--color=always", "--kubeconfig", kc, "-f", file, localdir, NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "\033[32m+  color: green"));
    run_result_dispose(&r);

    /* the controller applies the change: nothing left to show */
    drop(srcdir, "web/old.yaml");
    struct json_object *patch = co_test_json(
        "{\"spec\":{\"values\":{\"color\":\"green\",\"password\":\"second-pass-222\"}}}");
    co_kube_ref cref = {"core.cs.sap.com/v1alpha1", "Component", ns, "web"};
    assert_co_pass(co_kube_patch(NULL, admin, &cref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
    wait_cm("settings", "color", "green");
    wait_cm("old", "k", NULL);
    ctl_test_wait_state(admin, ns, "web", "Ready", "Ready", WAIT_MS);
    r = run("diff", "--kubeconfig", kc, ref, srcdir, NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    run_result_dispose(&r);
    r = run("diff", "--kubeconfig", kc, "-f", file, localdir, NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    run_result_dispose(&r);

    free(file);
    free(comp);
    free(ref);
}

#define ORDERED(kind, name, ann)                                                                   \
    "---\napiVersion: " kind "\nmetadata:\n  name: " name "\n  annotations: {" ann "}\n"

/* plan's object keys in the order printed ("    + KEY  [..."). */
static size_t plan_keys(char **keys, size_t max, const char *text)
{
    size_t n = 0;
    for (const char *p = strstr(text, "\n    + "); p && n < max; p = strstr(p + 1, "\n    + ")) {
        const char *start = p + 7;
        const char *end = strstr(start, "  [");
        assert_non_null(end);
        keys[n++] = co_xstrndup(start, (size_t)(end - start));
    }
    return n;
}

static int64_t rv_of(const char *api, const char *kind, const char *name)
{
    co_kube_ref ref = {api, kind, ns, name};
    struct json_object *obj = NULL;
    assert_co_pass(co_kube_get(&obj, admin, &ref, NULL));
    int64_t rv = strtoll(co_json_str(obj, "metadata", "resourceVersion", NULL), NULL, 10);
    json_object_put(obj);
    return rv;
}

static void test_cli_diff__plan_lists_waves_in_the_controllers_order(void **state)
{
    (void)state;
    const char *kc = co_test_env("CO_TEST_KUBECONFIG");
    /* generator order (kustomize's, by kind) is not apply order: orders and kind priorities
     * decide, ties keep generator order */
    put(srcdir, "waves/all.yaml",
        ORDERED("v1\nkind: ConfigMap", "late", "'component-operator.cs.sap.com/apply-order': '2'")
            ORDERED("v1\nkind: ServiceAccount", "sa", "")
                ORDERED("v1\nkind: ConfigMap", "plain", "")
                    ORDERED("rbac.authorization.k8s.io/v1\nkind: Role", "role", "")
                        ORDERED("v1\nkind: ConfigMap", "early",
                                "'component-operator.cs.sap.com/apply-order': '-1'")
                            ORDERED("v1\nkind: Secret", "sec", "")
                                ORDERED("v1\nkind: ConfigMap", "purged",
                                        "'component-operator.cs.sap.com/purge-order': '0'"));
    char *comp = component_yaml("waves", "waves", "x", "y");
    char *file = co_xasprintf("%s/waves.yaml", localdir);
    co_test_write_file(file, comp, strlen(comp));
    run_result r = run("plan", "--kubeconfig", kc, "-f", file, srcdir, NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "wave 1 (apply-order -1)\n"));
    assert_non_null(strstr(r.out, "wave 2 (apply-order 0)\n"));
    assert_non_null(strstr(r.out, "wave 3 (apply-order 2)\n"));
    assert_non_null(strstr(r.out, "update=SsaOverride delete=Delete"));
    assert_non_null(strstr(r.out, "  purged once this wave is ready:\n"));
    char *keys[16];
    size_t n = plan_keys(keys, 16, r.out);
    assert_int_equal(n, 7);
    const char *want[] = {"v1 ConfigMap/early", "rbac.authorization.k8s.io/v1 Role/role",
                          "v1 ConfigMap/plain", "v1 ConfigMap/purged",
                          "v1 Secret/sec",      "v1 ServiceAccount/sa",
                          "v1 ConfigMap/late"};
    for (size_t i = 0; i < n; i++) {
        const char *slash = strchr(want[i], '/');
        if (strncmp(want[i], "rbac", 4) == 0) {
            slash = strchr(slash + 1, '/');
        }
        char *w = co_xasprintf("%.*s %s%s", (int)(slash - want[i]), want[i], ns, slash);
        assert_string_equal(keys[i], w);
        free(w);
    }
    run_result_dispose(&r);

    /* the controller creates them in that order (etcd's revisions say when); "purged" is gone
     * once its wave is ready, so it is left out */
    ctl_test_create_component(admin, ns, "waves", "{" SRC ",\"path\":\"waves\"}");
    ctl_test_wait_state(admin, ns, "waves", "Ready", "Ready", WAIT_MS);
    int64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        /* "API KIND NS/NAME" */
        char *sp1 = strchr(keys[i], ' ');
        char *sp2 = strchr(sp1 + 1, ' ');
        char *slash = strchr(sp2 + 1, '/');
        *sp1 = *sp2 = '\0';
        if (strcmp(slash + 1, "purged") == 0) {
            continue;
        }
        int64_t rv = rv_of(keys[i], sp1 + 1, slash + 1);
        assert_true(rv > prev);
        prev = rv;
    }
    wait_cm("purged", "k", NULL);
    char *ref = co_xasprintf("%s/waves", ns);
    r = run("plan", "--kubeconfig", kc, ref, srcdir, NULL);
    assert_non_null(strstr(r.out, "[unchanged]"));
    run_result_dispose(&r);
    for (size_t i = 0; i < n; i++) {
        free(keys[i]);
    }
    free(ref);
    free(file);
    free(comp);
}

static void test_cli_diff__bad_input_exits_2_with_a_reason(void **state)
{
    (void)state;
    const char *kc = co_test_env("CO_TEST_KUBECONFIG");
    char *ref = co_xasprintf("%s/missing", ns);
    run_result r = run("diff", "--kubeconfig", kc, ref, srcdir, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "not found"));
    assert_string_equal(r.out, "");
    run_result_dispose(&r);
    free(ref);

    char *bad = co_xasprintf("%s/bad.yaml", localdir);
    put(localdir, "bad.yaml", "apiVersion: core.cs.sap.com/v1alpha1\nkind: Component\n  x: [\n");
    r = run("diff", "--kubeconfig", kc, "-f", bad, localdir, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "bad.yaml"));
    run_result_dispose(&r);
    r = run("plan", "--kubeconfig", kc, "-f", bad, localdir, NULL);
    assert_int_equal(r.status, 2);
    run_result_dispose(&r);
    free(bad);

    char *unreachable = co_xasprintf("%s/unreachable.kubeconfig", localdir);
    put(localdir, "unreachable.kubeconfig",
        "apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters:\n- name: x\n  cluster:\n"
        "    server: https://127.0.0.1:9\n    insecure-skip-tls-verify: true\ncontexts:\n"
        "- name: x\n  context:\n    cluster: x\n    user: x\nusers:\n- name: x\n  user:\n"
        "    token: t\n");
    char *nsref = co_xasprintf("%s/web", ns);
    r = run("diff", "--kubeconfig", unreachable, nsref, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "component-controller diff: "));
    run_result_dispose(&r);
    free(nsref);
    free(unreachable);

    r = run("diff", "-f", "x.yaml", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--kubeconfig"));
    run_result_dispose(&r);
}

/* Without DIR the Component's own source is fetched, as the controller fetches it: here an HTTP
 * repository. The Component lives in a namespace the manager does not watch. */
static void test_cli_diff__fetches_the_components_source(void **state)
{
    (void)state;
    const char *kc = co_test_env("CO_TEST_KUBECONFIG");
    test_httpd *srv = test_httpd_start();
    tab_entry e[] = {{TAB_FILE, 0, "app/cm.yaml",
                      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\ndata:\n"
                      "  from: '{{ .where }}'\n",
                      0}};
    size_t len = 0;
    void *data = tab_build(TAB_TAR_GZ, e, 1, &len);
    test_httpd_route(srv, "/src.tar.gz", 200, data, len, "ETag: \"v1\"");
    free(data);
    char *other = co_test_kube_namespace(admin, "co-cli-diff-src-");
    ctl_test_create_component(admin, other, "remote",
                              "{\"sourceRef\":{\"httpRepository\":{\"url\":\"%s/src.tar.gz\"}},"
                              "\"path\":\"app\",\"values\":{\"where\":\"http\"}}",
                              test_httpd_url(srv));
    char *ref = co_xasprintf("%s/remote", other);
    run_result r = run("diff", "--kubeconfig", kc, ref, NULL);
    if (r.status != 1) {
        print_error("diff: %s\n", r.err);
    }
    assert_int_equal(r.status, 1);
    char *label = co_xasprintf("+++ applied/v1/ConfigMap/%s/fetched\n", other);
    assert_non_null(strstr(r.out, label));
    assert_non_null(strstr(r.out, "+  from: http\n"));
    assert_true(test_httpd_hits(srv, "/src.tar.gz") >= 1);
    free(label);
    run_result_dispose(&r);

    /* a source that cannot be fetched is an error naming it */
    test_httpd_route(srv, "/src.tar.gz", 404, "gone", 4, NULL);
    char *comp = co_xasprintf(
        "apiVersion: core.cs.sap.com/v1alpha1\nkind: Component\nmetadata:\n  name: remote\n"
        "  namespace: %s\nspec:\n  sourceRef:\n    httpRepository:\n      url: %s/none.tar.gz\n"
        "  path: app\n",
        other, test_httpd_url(srv));
    char *file = co_xasprintf("%s/remote.yaml", localdir);
    co_test_write_file(file, comp, strlen(comp));
    r = run("plan", "--kubeconfig", kc, "-f", file, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "spec.sourceRef"));
    run_result_dispose(&r);
    free(file);
    free(comp);
    free(ref);
    free(other);
    test_httpd_stop(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_diff__change_and_deletion_then_nothing_once_applied),
        cmocka_unit_test(test_cli_diff__plan_lists_waves_in_the_controllers_order),
        cmocka_unit_test(test_cli_diff__bad_input_exits_2_with_a_reason),
        cmocka_unit_test(test_cli_diff__fetches_the_components_source),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
