/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a Component's templates see of the cluster, against the real kube-apiserver: a Helm
 * chart's lookups reach the cluster as a templated kustomization's do (so the "reuse the live
 * Secret, else generate" idiom settles instead of rotating the password on every pass),
 * .Release.Service is the operator's name, and .Capabilities.APIVersions and apiResources come
 * from the target's discovery, kinds included, with a CRD installed meanwhile. The manager runs
 * in-process with the test source and the real apply engine.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "co/util/duration.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_manager.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define WAIT_MS 120000L
#define SRC     "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://x.invalid/a.tgz\"}}"

static co_kube_client *admin;
static char *ns;
static char *srcdir;
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;
static ctl_manager *mgr;

static void put(const char *rel, const char *fmt, ...) CO_PRINTF(2, 3);
static void put(const char *rel, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = co_xvasprintf(fmt, ap);
    va_end(ap);
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", srcdir, rel);
    co_test_write_file(path, text, strlen(text));
    free(text);
}

static const char *status_str(struct json_object *obj, const char *key)
{
    struct json_object *v = co_json_get(obj, "status", key, NULL);
    return v ? json_object_get_string(v) : "";
}

static void touch(const char *name, int value)
{
    struct json_object *patch =
        co_test_json("{\"metadata\":{\"annotations\":{\"test.co/touch\":\"%d\"}}}", value);
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
}

/* Makes the controller reconcile @p name once more and waits until it is Ready again:
 * status.lastObservedAt (whole seconds) moves past its value from before the trigger. */
static void reconcile_again(const char *name, int round)
{
    struct json_object *c = ctl_test_get_component(admin, ns, name);
    char *before = co_xstrdup(status_str(c, "lastObservedAt"));
    json_object_put(c);
    usleep(1100 * 1000);
    touch(name, round);
    int moved = 0;
    for (int i = 0; i < 1200 && !moved; i++) {
        c = ctl_test_get_component(admin, ns, name);
        moved = strcmp(status_str(c, "lastObservedAt"), before) != 0;
        json_object_put(c);
        if (!moved) {
            usleep(100 * 1000);
        }
    }
    free(before);
    assert_true(moved);
    ctl_test_wait_state(admin, ns, name, "Ready", "Ready", WAIT_MS);
}

static void delete_component(const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    ctl_test_wait_gone(admin, ns, name, WAIT_MS);
}

static struct json_object *get_object(const char *api, const char *kind, const char *name)
{
    co_kube_ref ref = {api, kind, ns, name};
    struct json_object *o = NULL;
    int rc = co_kube_get(&o, admin, &ref, NULL);
    if (rc == CO_ENOTFOUND) {
        return NULL;
    }
    assert_co_pass(rc);
    return o;
}

static char *str_of(struct json_object *obj, const char *a, const char *b)
{
    struct json_object *v = co_json_get(obj, a, b, NULL);
    return co_xstrdup(v ? json_object_get_string(v) : "");
}

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    ns = co_test_kube_namespace(admin, "rnd-");
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    src_ops = ctl_test_source_ops();
    app_ops = ctl_apply_engine_ops();
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.metrics_addr = "127.0.0.1:0";
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
    free(srcdir);
    free(ns);
    curl_global_cleanup();
    return 0;
}

/* The Go original's charts looked up through the target as its kustomizations do; a chart that
 * keeps its generated password in a Secret must settle: Ready, and the Secret untouched by
 * later reconciles. */
static void test_ctl_render__chart_reuses_its_secret_through_lookup(void **state)
{
    (void)state;
    put("pw/Chart.yaml", "apiVersion: v2\nname: pw\nversion: 0.1.0\n");
    put("pw/templates/secret.yaml",
        "{{- $s := lookup \"v1\" \"Secret\" .Release.Namespace \"pw-secret\" }}\n"
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: pw-secret\n  labels:\n"
        "    app.kubernetes.io/managed-by: {{ .Release.Service }}\n"
        "data:\n  password: {{ if $s }}{{ $s.data.password }}{{ else }}"
        "{{ randAlphaNum 16 | b64enc }}{{ end }}\n");
    ctl_test_create_component(admin, ns, "pw", "{" SRC ",\"path\":\"pw\",\"timeout\":\"60s\"}");
    ctl_test_wait_state(admin, ns, "pw", "Ready", "Ready", WAIT_MS);
    struct json_object *secret = get_object("v1", "Secret", "pw-secret");
    assert_non_null(secret);
    char *password = str_of(co_json_get(secret, "data", NULL), "password", NULL);
    char *rv = str_of(secret, "metadata", "resourceVersion");
    assert_int_equal(strlen(password), 24);
    struct json_object *managed =
        co_json_get(secret, "metadata", "labels", "app.kubernetes.io/managed-by", NULL);
    assert_non_null(managed);
    assert_string_equal(json_object_get_string(managed), "component-operator.cs.sap.com");
    json_object_put(secret);

    for (int round = 1; round <= 2; round++) {
        reconcile_again("pw", round);
        secret = get_object("v1", "Secret", "pw-secret");
        assert_non_null(secret);
        char *now_password = str_of(co_json_get(secret, "data", NULL), "password", NULL);
        char *now_rv = str_of(secret, "metadata", "resourceVersion");
        assert_string_equal(now_password, password);
        assert_string_equal(now_rv, rv);
        free(now_password);
        free(now_rv);
        json_object_put(secret);
    }
    free(password);
    free(rv);
    delete_component("pw");
}

/* The common Flux layout: one artifact with base/ and overlays/, the Component pointing at an
 * overlay that refers to ../../base (docs/behaviour.md, "Templated kustomization"). The overlay
 * is templated, the base is taken as it is. */
static void test_ctl_render__overlay_with_base_in_the_same_artifact_is_ready(void **state)
{
    (void)state;
    put("kz/base/kustomization.yaml", "resources: [cm.yaml]\n");
    put("kz/base/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n"
                           "data:\n  raw: \"{{ .x }}\"\n");
    put("kz/overlays/prod/kustomization.yaml",
        "resources: [../../base]\nnamePrefix: {{ .prefix }}-\n");
    ctl_test_create_component(admin, ns, "ovl",
                              "{" SRC
                              ",\"path\":\"kz/overlays/prod\",\"values\":{\"prefix\":\"prod\"}}");
    ctl_test_wait_state(admin, ns, "ovl", "Ready", "Ready", WAIT_MS);
    struct json_object *cm = get_object("v1", "ConfigMap", "prod-app");
    assert_non_null(cm);
    char *raw = str_of(co_json_get(cm, "data", NULL), "raw", NULL);
    assert_string_equal(raw, "{{ .x }}");
    free(raw);
    json_object_put(cm);
    delete_component("ovl");
}

/* A CRD installed while the controller runs (and after it read discovery for another render)
 * is in .Capabilities.APIVersions with its kind, and in apiResources. */
static void test_ctl_render__capabilities_and_api_resources_come_from_discovery(void **state)
{
    (void)state;
    char *prefix = co_test_random_name("w", 8);
    char *group = co_xasprintf("%s.render-test.co", prefix);
    char *gv = co_xasprintf("%s/v1", group);
    struct json_object *crd = co_test_json(
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"widgets.%s\"},\"spec\":{\"group\":\"%s\",\"names\":{\"kind\":"
        "\"Widget\",\"plural\":\"widgets\",\"singular\":\"widget\",\"listKind\":\"WidgetList\"},"
        "\"scope\":\"Namespaced\",\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
        "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
        "\"x-kubernetes-preserve-unknown-fields\":true}}}]}}",
        group, group);
    assert_co_pass(co_kube_create(NULL, admin, crd, NULL));
    json_object_put(crd);
    int rc = CO_ENOMATCH;
    for (int i = 0; i < 100 && rc != 0; i++) {
        co_kube_mapping m;
        co_kube_client_invalidate_discovery(admin);
        rc = co_kube_client_mapping(&m, admin, gv, "Widget");
        if (rc == 0) {
            co_kube_mapping_dispose(&m);
        } else {
            usleep(200 * 1000);
        }
    }
    assert_co_pass(rc);
    /* a CRD installed by someone else (here: the test) reaches the controller's discovery
     * within CO_KUBE_GV_RECHECK_MS */
    usleep((CO_KUBE_GV_RECHECK_MS + 200) * 1000);

    put("caps/Chart.yaml", "apiVersion: v2\nname: caps\nversion: 0.1.0\n");
    put("caps/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\ndata:\n"
        "  kind: {{ .Capabilities.APIVersions.Has \"%s/Widget\" | quote }}\n"
        "  gv: {{ .Capabilities.APIVersions.Has \"%s\" | quote }}\n"
        "  deployment: {{ .Capabilities.APIVersions.Has \"apps/v1/Deployment\" | quote }}\n"
        "  gadget: {{ .Capabilities.APIVersions.Has \"%s/Gadget\" | quote }}\n",
        gv, gv, gv);
    put("res/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: res\ndata:\n"
        "  lists: {{ len apiResources | quote }}\n"
        "  widget: '{{ range apiResources }}{{ if eq .GroupVersion \"%s\" }}"
        "{{ range .APIResources }}{{ .Kind }}{{ end }}{{ end }}{{ end }}'\n",
        gv);
    ctl_test_create_component(admin, ns, "caps", "{" SRC ",\"path\":\"caps\"}");
    ctl_test_create_component(admin, ns, "res", "{" SRC ",\"path\":\"res\"}");
    ctl_test_wait_state(admin, ns, "caps", "Ready", "Ready", WAIT_MS);
    ctl_test_wait_state(admin, ns, "res", "Ready", "Ready", WAIT_MS);

    struct json_object *cm = get_object("v1", "ConfigMap", "caps");
    assert_non_null(cm);
    struct json_object *data = co_json_get(cm, "data", NULL);
    assert_string_equal(json_object_get_string(co_json_get(data, "kind", NULL)), "true");
    assert_string_equal(json_object_get_string(co_json_get(data, "gv", NULL)), "true");
    assert_string_equal(json_object_get_string(co_json_get(data, "deployment", NULL)), "true");
    assert_string_equal(json_object_get_string(co_json_get(data, "gadget", NULL)), "false");
    json_object_put(cm);
    cm = get_object("v1", "ConfigMap", "res");
    assert_non_null(cm);
    data = co_json_get(cm, "data", NULL);
    assert_true(strtol(json_object_get_string(co_json_get(data, "lists", NULL)), NULL, 10) > 5);
    assert_string_equal(json_object_get_string(co_json_get(data, "widget", NULL)), "Widget");
    json_object_put(cm);

    delete_component("res");
    delete_component("caps");
    char *crd_name = co_xasprintf("widgets.%s", group);
    co_kube_ref ref = {"apiextensions.k8s.io/v1", "CustomResourceDefinition", NULL, crd_name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    free(crd_name);
    free(gv);
    free(group);
    free(prefix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_render__chart_reuses_its_secret_through_lookup),
        cmocka_unit_test(test_ctl_render__capabilities_and_api_resources_come_from_discovery),
        cmocka_unit_test(test_ctl_render__overlay_with_base_in_the_same_artifact_is_ready),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
