/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for directory rendering (plain manifests and kustomizations) and the probe and
 * metrics listener. */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>

#include "co/buf.h"
#include "co/json.h"
#include "controller/ctl_http.h"
#include "controller/ctl_render.h"
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

static void test_ctl_render__plain_manifests_get_a_kustomization(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    put(dir, "a.yaml", CM("a"));
    put(dir, "sub/b.yml",
        CM("b") "\n---\n{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                "\"metadata\":{\"name\":\"n1\"}}\n");
    put(dir, ".hidden.yaml", CM("hidden"));
    put(dir, ".component-config.yaml", "templateSuffix: .tpl\n");
    put(dir, "README.md", "not a manifest\n");
    struct json_object *objs = NULL;
    assert_co_pass(ctl_render_dir(&objs, dir));
    assert_int_equal(json_object_array_length(objs), 3);
    /* kustomize's legacy order: Namespace first */
    assert_string_equal(name_of(objs, 0), "n1");
    int seen_a = 0, seen_b = 0;
    for (size_t i = 0; i < 3; i++) {
        seen_a |= strcmp(name_of(objs, i), "a") == 0;
        seen_b |= strcmp(name_of(objs, i), "b") == 0;
    }
    assert_true(seen_a && seen_b);
    json_object_put(objs);
    co_test_rmtree(dir);
    free(dir);
}

static void test_ctl_render__existing_kustomization_is_used(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    put(dir, "kustomization.yaml", "{\"namePrefix\":\"p-\",\"resources\":[\"a.yaml\"]}\n");
    put(dir, "a.yaml", CM("a"));
    put(dir, "b.yaml", CM("b"));
    struct json_object *objs = NULL;
    assert_co_pass(ctl_render_dir(&objs, dir));
    assert_int_equal(json_object_array_length(objs), 1);
    assert_string_equal(name_of(objs, 0), "p-a");
    json_object_put(objs);
    co_test_rmtree(dir);
    free(dir);
}

static void test_ctl_render__empty_directory_renders_nothing(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    struct json_object *objs = NULL;
    assert_co_pass(ctl_render_dir(&objs, dir));
    assert_int_equal(json_object_array_length(objs), 0);
    json_object_put(objs);
    co_test_rmtree(dir);
    free(dir);
}

static void test_ctl_render__bad_manifest_names_the_file(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    put(dir, "broken.yaml", "{\"apiVersion\": [\n");
    struct json_object *objs = NULL;
    int rc = ctl_render_dir(&objs, dir);
    assert_true(rc < 0);
    assert_contains(co_error_last(), "broken.yaml");
    assert_true(ctl_render_dir(&objs, "/nonexistent/dir/for/test") == CO_ENOTFOUND);
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
        cmocka_unit_test(test_ctl_render__plain_manifests_get_a_kustomization),
        cmocka_unit_test(test_ctl_render__existing_kustomization_is_used),
        cmocka_unit_test(test_ctl_render__empty_directory_renders_nothing),
        cmocka_unit_test(test_ctl_render__bad_manifest_names_the_file),
        cmocka_unit_test(test_ctl_render__http_listener_answers_probes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
