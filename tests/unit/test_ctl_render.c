/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for a Component's render against a fake API server, and the probe and metrics
 * listener. */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>

#include "co/util/buf.h"
#include "co/json/json.h"
#include "co/api/policy.h"
#include "controller/ctl_http.h"
#include "controller/ctl_render.h"
#include "tests/support/fake_kube.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

/* Manifests are written as JSON, which every YAML reader accepts. */
#define CM(name)                                                                                   \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name "\"}}\n"

static void put(const char *dir, const char *rel, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    co_test_write_file(path, text, strlen(text));
}

static const char *name_of(struct json_object *objs, size_t i)
{
    struct json_object *v =
        co_json_get(json_object_array_get_idx(objs, i), "metadata", "name", NULL);
    return v ? json_object_get_string(v) : "";
}

/* ---- a Component's render against a fake API server ------------------------------------- */

static co_fake_kube *fake_cluster(void)
{
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_kube_json(f, "GET", "/version$", 200,
                      "{\"major\":\"1\",\"minor\":\"20\",\"gitVersion\":\"v1.20.2\"}");
    co_fake_kube_json(f, "GET", "/api$", 200, "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}");
    co_fake_kube_json(f, "GET", "/apis$", 200,
                      "{\"kind\":\"APIGroupList\",\"groups\":[{\"name\":\"apps\",\"versions\":"
                      "[{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}]}]}");
    return f;
}

/* A Component: @p fields are the members of the object besides apiVersion and kind. */
static struct json_object *component_object(const char *fields)
{
    return co_test_json("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",%s}",
                        fields);
}

static int
render_component(struct json_object **out, co_fake_kube *f, const char *dir, const char *fields)
{
    co_kube_client *c = co_fake_kube_client(f);
    struct json_object *obj = component_object(fields);
    co_component *comp = NULL;
    assert_co_pass(co_component_parse(&comp, obj));
    ctl_render_request rq = {0};
    rq.dir = dir;
    rq.component = comp;
    rq.object = obj;
    rq.revision = 1;
    rq.local = c;
    int rc = ctl_render_component(out, &rq);
    co_component_free(comp);
    json_object_put(obj);
    co_kube_client_free(c);
    return rc;
}

static void test_ctl_render__component_variables_and_capabilities(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    put(dir, "Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n");
    put(dir, "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"
        "data:\n  a: '${A}'\n  b: '${B}'\n  c: '${C}'\n"
        "  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n"
        "  apps: {{ .Capabilities.APIVersions.Has \"apps/v1\" | quote }}\n"
        "  batch: {{ .Capabilities.APIVersions.Has \"batch/v1\" | quote }}\n"
        "  ns: {{ .Release.Namespace }}\n");
    co_fake_kube *f = fake_cluster();
    /* "ZnJvbS1zZWNyZXQ=" is "from-secret": Secret values are decoded */
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/secrets/vars$", 200,
                      "{\"kind\":\"Secret\",\"data\":{\"A\":\"ZnJvbS1zZWNyZXQ=\","
                      "\"B\":\"ZnJvbS1zZWNyZXQ=\"}}");
    /* "bW9yZQ==" is "more": a later Secret wins */
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/secrets/more$", 200,
                      "{\"kind\":\"Secret\",\"data\":{\"B\":\"bW9yZQ==\"}}");
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/secrets/absent$", 404,
                      "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}");
    struct json_object *objs = NULL;
    assert_co_pass(render_component(
        &objs, f, dir,
        "\"metadata\":{\"namespace\":\"ns1\",\"name\":\"comp\"},\"spec\":{\"name\":\"rel\","
        "\"namespace\":\"target\",\"postBuild\":{\"substituteFrom\":[{\"name\":\"vars\"},"
        "{\"name\":\"more\"}],\"substitute\":{\"C\":\"from-spec\"}}}"));
    assert_int_equal(json_object_array_length(objs), 1);
    struct json_object *cm = json_object_array_get_idx(objs, 0);
    assert_string_equal(name_of(objs, 0), "rel");
    assert_string_equal(json_object_get_string(co_json_get(cm, "data", "a", NULL)), "from-secret");
    assert_string_equal(json_object_get_string(co_json_get(cm, "data", "b", NULL)), "more");
    assert_string_equal(json_object_get_string(co_json_get(cm, "data", "c", NULL)), "from-spec");
    assert_string_equal(json_object_get_string(co_json_get(cm, "data", "kube", NULL)), "v1.20.2");
    assert_string_equal(json_object_get_string(co_json_get(cm, "data", "apps", NULL)), "true");
    assert_string_equal(json_object_get_string(co_json_get(cm, "data", "batch", NULL)), "false");
    assert_string_equal(json_object_get_string(co_json_get(cm, "data", "ns", NULL)), "target");
    json_object_put(objs);

    /* a missing substituteFrom Secret names it */
    objs = NULL;
    int rc =
        render_component(&objs, f, dir,
                         "\"metadata\":{\"namespace\":\"ns1\",\"name\":\"comp\"},"
                         "\"spec\":{\"postBuild\":{\"substituteFrom\":[{\"name\":\"absent\"}]}}");
    assert_int_equal(rc, CO_ENOTFOUND);
    assert_null(objs);
    assert_contains(co_error_last(), "spec.postBuild.substituteFrom[0]");
    assert_contains(co_error_last(), "ns1/absent");
    co_fake_kube_free(f);
    co_test_rmtree(dir);
    free(dir);
}

static void test_ctl_render__component_decryption_errors(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    put(dir, "a.yaml", CM("a"));
    co_fake_kube *f = fake_cluster();
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/secrets/keys$", 404,
                      "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}");
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/secrets/badkey$", 200,
                      "{\"kind\":\"Secret\",\"data\":{\"x.agekey\":\"bm90IGEga2V5\"}}");
    struct json_object *objs = NULL;
    int rc = render_component(&objs, f, dir,
                              "\"metadata\":{\"namespace\":\"ns1\",\"name\":\"c\"},\"spec\":"
                              "{\"decryption\":{\"provider\":\"kms\",\"secretRef\":{\"name\":"
                              "\"keys\"}}}");
    assert_int_equal(rc, CO_EINVALID);
    assert_contains(co_error_last(), "invalid decryption provider");
    rc = render_component(&objs, f, dir,
                          "\"metadata\":{\"namespace\":\"ns1\",\"name\":\"c\"},\"spec\":"
                          "{\"decryption\":{\"secretRef\":{\"name\":\"keys\"}}}");
    assert_int_equal(rc, CO_ENOTFOUND);
    assert_contains(co_error_last(), "spec.decryption.secretRef");
    rc = render_component(&objs, f, dir,
                          "\"metadata\":{\"namespace\":\"ns1\",\"name\":\"c\"},\"spec\":"
                          "{\"decryption\":{\"secretRef\":{\"name\":\"badkey\"}}}");
    assert_int_equal(rc, CO_EINVALID);
    assert_contains(co_error_last(), "x.agekey");
    assert_null(objs);
    /* operator annotations in a chart need the Component's opt-in */
    char *chart = co_test_tmpdir();
    put(chart, "Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n");
    put(chart, "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n"
        "    component-operator.cs.sap.com/apply-order: '1'\n");
    rc = render_component(&objs, f, chart, "\"metadata\":{\"namespace\":\"ns1\",\"name\":\"c\"}");
    assert_int_equal(rc, CO_EINVALID);
    assert_null(objs);
    assert_co_pass(
        render_component(&objs, f, chart,
                         "\"metadata\":{\"namespace\":\"ns1\",\"name\":\"c\",\"annotations\":"
                         "{\"component-operator.cs.sap.com/chart-annotations\":\"allow\"}}"));
    assert_int_equal(json_object_array_length(objs), 1);
    json_object_put(objs);
    objs = NULL;
    co_test_rmtree(chart);
    free(chart);
    /* a plain source with valid (empty) settings renders */
    assert_co_pass(
        render_component(&objs, f, dir, "\"metadata\":{\"namespace\":\"ns1\",\"name\":\"c\"}"));
    assert_int_equal(json_object_array_length(objs), 1);
    json_object_put(objs);
    co_fake_kube_free(f);
    co_test_rmtree(dir);
    free(dir);
}

/* A Component's chart looks up what the Component may see, as its templated kustomizations
 * do: the same confinement without an identity, the operator's .Release.Service, and
 * .Capabilities.APIVersions / apiResources from the target's discovery. */
static void test_ctl_render__chart_lookups_capabilities_and_api_resources(void **state)
{
    (void)state;
    char *chart = co_test_tmpdir();
    put(chart, "Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n");
    put(chart, "templates/secret.yaml",
        "{{- $s := lookup \"v1\" \"Secret\" .Release.Namespace \"x\" }}\n"
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n  labels:\n"
        "    app.kubernetes.io/managed-by: {{ .Release.Service }}\n"
        "  annotations:\n"
        "    deploy: {{ .Capabilities.APIVersions.Has \"apps/v1/Deployment\" | quote }}\n"
        "    pod: {{ .Capabilities.APIVersions.Has \"v1/Pod\" | quote }}\n"
        "    lease: {{ .Capabilities.APIVersions.Has \"coordination.k8s.io/v1/Lease\" | quote }}\n"
        "data:\n  password: {{ if $s }}{{ $s.data.password }}{{ else }}"
        "{{ randAlphaNum 16 | b64enc }}{{ end }}\n");
    co_fake_kube *f = fake_cluster();
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/secrets/x$", 200,
                      "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"x\"},"
                      "\"data\":{\"password\":\"c2VjcmV0\"}}");
    co_kube_client *c = co_fake_kube_client(f);
    struct json_object *obj =
        component_object("\"metadata\":{\"namespace\":\"ns1\",\"name\":\"c\"}");
    co_component *comp = NULL;
    assert_co_pass(co_component_parse(&comp, obj));
    ctl_render_request rq = {0};
    rq.dir = chart;
    rq.component = comp;
    rq.object = obj;
    rq.revision = 2;
    rq.local = c;
    rq.confine_target = true;
    rq.confine_local = true;
    struct json_object *objs = NULL;
    assert_co_pass(ctl_render_component(&objs, &rq));
    struct json_object *secret = json_object_array_get_idx(objs, 0);
    assert_string_equal(json_object_get_string(co_json_get(secret, "data", "password", NULL)),
                        "c2VjcmV0");
    assert_string_equal(json_object_get_string(co_json_get(secret, "metadata", "labels",
                                                           "app.kubernetes.io/managed-by", NULL)),
                        "component-operator.cs.sap.com");
    struct json_object *ann = co_json_get(secret, "metadata", "annotations", NULL);
    assert_string_equal(json_object_get_string(co_json_get(ann, "deploy", NULL)), "true");
    assert_string_equal(json_object_get_string(co_json_get(ann, "pod", NULL)), "true");
    /* coordination.k8s.io is not among the fake's /apis groups */
    assert_string_equal(json_object_get_string(co_json_get(ann, "lease", NULL)), "false");
    json_object_put(objs);
    objs = NULL;

    /* no identity: a lookup elsewhere is refused before any request */
    put(chart, "templates/secret.yaml",
        "a: {{ (lookup \"v1\" \"Secret\" \"other\" \"x\").data.password }}\n");
    size_t before = co_fake_kube_count(f, "GET", "/namespaces/other/");
    assert_co_fail_with(CO_EINVALID, ctl_render_component(&objs, &rq));
    assert_null(objs);
    assert_contains(co_error_last(), "may only look up objects in its own namespace (ns1)");
    assert_int_equal(co_fake_kube_count(f, "GET", "/namespaces/other/"), before);
    /* and so is localLookup */
    put(chart, "templates/secret.yaml",
        "a: {{ (localLookup \"v1\" \"Secret\" \"other\" \"x\").data.password }}\n");
    assert_co_fail_with(CO_EINVALID, ctl_render_component(&objs, &rq));
    assert_contains(co_error_last(), "localLookup v1 Secret in namespace other");
    /* ... unless a policy grants it */
    put(chart, "templates/secret.yaml",
        "a: '{{ len (lookup \"v1\" \"Secret\" \"other\" \"x\") }}'\n");
    rq.grants = CO_GRANT_LOOKUPS_OUTSIDE_NAMESPACE;
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/other/secrets/x$", 404,
                      "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}");
    assert_co_pass(ctl_render_component(&objs, &rq));
    assert_int_equal(co_fake_kube_count(f, "GET", "/namespaces/other/secrets/x"), 1);
    json_object_put(objs);
    objs = NULL;
    co_test_rmtree(chart);
    free(chart);

    /* a templated kustomization sees the same discovery as apiResources */
    char *kust = co_test_tmpdir();
    put(kust, "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\ndata:\n"
        "  lists: {{ len apiResources | quote }}\n"
        "  kinds: '{{ range apiResources }}{{ range .APIResources }}{{ .Kind }},{{ end }}{{ end "
        "}}'\n");
    rq.dir = kust;
    assert_co_pass(ctl_render_component(&objs, &rq));
    struct json_object *cm = json_object_array_get_idx(objs, 0);
    assert_string_equal(json_object_get_string(co_json_get(cm, "data", "lists", NULL)), "2");
    assert_string_equal(json_object_get_string(co_json_get(cm, "data", "kinds", NULL)),
                        "Deployment,ConfigMap,Event,Namespace,Namespace,Pod,Pod,Secret,");
    json_object_put(objs);
    co_test_rmtree(kust);
    free(kust);
    co_component_free(comp);
    json_object_put(obj);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* The target's discovery is asked only by a render that needs it: plain manifests and templates
 * that read neither kubernetesVersion nor apiResources make no request; one that reads both,
 * twice, asks once; and a discovery that fails fails only the renders that need it. */
static void test_ctl_render__discovery_asked_only_when_needed(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    put(dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }}\n");
    co_fake_kube *f = fake_cluster();
    struct json_object *objs = NULL;
    const char *fields = "\"metadata\":{\"namespace\":\"ns1\",\"name\":\"plain\"}";
    assert_co_pass(render_component(&objs, f, dir, fields));
    assert_string_equal(name_of(objs, 0), "plain");
    json_object_put(objs);
    assert_int_equal(co_fake_kube_count(f, "GET", "/version"), 0);
    assert_int_equal(co_fake_kube_count(f, "GET", "/api"), 0);

    put(dir, "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }}\ndata:\n"
        "  v: {{ kubernetesVersion.GitVersion }}\n  w: {{ kubernetesVersion.Minor | quote }}\n"
        "  n: {{ len apiResources | quote }}\n  m: {{ len apiResources | quote }}\n");
    assert_co_pass(render_component(&objs, f, dir, fields));
    struct json_object *cm = json_object_array_get_idx(objs, 0);
    assert_string_equal(co_json_str(cm, "data", "v", NULL), "v1.20.2");
    assert_string_equal(co_json_str(cm, "data", "w", NULL), "20");
    assert_string_equal(co_json_str(cm, "data", "n", NULL), "2");
    json_object_put(objs);
    assert_int_equal(co_fake_kube_count(f, "GET", "/version"), 1);
    assert_int_equal(co_fake_kube_count(f, "GET", "/apis/apps/v1"), 1);
    co_fake_kube_free(f);

    /* a target whose version cannot be read */
    f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_fake_kube_json(f, "GET", "/version$", 500,
                      "{\"kind\":\"Status\",\"code\":500,\"message\":\"boom\"}");
    assert_true(render_component(&objs, f, dir, fields) < 0);
    assert_null(objs);
    assert_contains(co_error_last(), "reading the target's version");
    put(dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }}\n");
    assert_co_pass(render_component(&objs, f, dir, fields));
    assert_string_equal(name_of(objs, 0), "plain");
    json_object_put(objs);
    co_fake_kube_free(f);
    co_test_rmtree(dir);
    free(dir);
}

static int handler(co_buf *body, const char *path, void *payload)
{
    int *ready = payload;
    if (strcmp(path, "/readyz") == 0) {
        return co_buf_puts(body, *ready ? "ok" : "not ready") < 0 ? 500 : (*ready ? 200 : 500);
    }
    return 404;
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    co_buf *b = ud;
    return co_buf_put(b, p, sz * n) == 0 ? sz * n : 0;
}

static long get(int port, const char *path, co_buf *body)
{
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    }
    curl_easy_cleanup(c);
    return code;
}

static void test_ctl_render__http_listener_answers_probes(void **state)
{
    (void)state;
    int ready = 0;
    ctl_http *h = NULL;
    assert_co_pass(ctl_http_start(&h, "127.0.0.1:0", handler, &ready));
    int port = ctl_http_port(h);
    assert_true(port > 0);
    co_buf body = CO_BUF_INIT(1 << 20);
    assert_int_equal(get(port, "/readyz", &body), 500);
    ready = 1;
    co_buf_reset(&body);
    assert_int_equal(get(port, "/readyz", &body), 200);
    assert_string_equal(co_buf_cstr(&body), "ok");
    co_buf_reset(&body);
    assert_int_equal(get(port, "/nope", &body), 404);
    co_buf_dispose(&body);
    /* the same port cannot be bound twice */
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ctl_http *h2 = NULL;
    assert_co_fail_with(CO_ERROR, ctl_http_start(&h2, addr, handler, &ready));
    assert_co_fail_with(CO_EINVALID, ctl_http_start(&h2, "nocolon", handler, &ready));
    assert_true(ctl_http_disabled("0"));
    assert_false(ctl_http_disabled(":8080"));
    ctl_http_stop(h);
    ctl_http_stop(NULL);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_render__component_variables_and_capabilities),
        cmocka_unit_test(test_ctl_render__component_decryption_errors),
        cmocka_unit_test(test_ctl_render__chart_lookups_capabilities_and_api_resources),
        cmocka_unit_test(test_ctl_render__discovery_asked_only_when_needed),
        cmocka_unit_test(test_ctl_render__http_listener_answers_probes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
