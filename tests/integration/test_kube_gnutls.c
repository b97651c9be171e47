/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes client over the GnuTLS transport against the real kube-apiserver of the test
 * control plane: a create/get/update/delete round trip, paged lists, patches, a watch stream,
 * impersonation, client-certificate authentication, certificate verification (a wrong CA, no
 * CA, tls-server-name, insecure-skip-tls-verify) and connection reuse from several threads.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_transport.h"
#include "co/kube/kube_watch.h"
#include "shared/src/kube/kube_int.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

static co_kube_client *admin;
static char *ns;

static int group_setup(void **state)
{
    (void)state;
    admin = co_test_kube_client_gnutls(co_test_env("CO_TEST_KUBECONFIG"));
    ns = co_test_kube_namespace(admin, "co-gnutls-");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    co_kube_delete_options d = CO_KUBE_DELETE_OPTIONS_INIT;
    if (co_kube_delete(NULL, admin, &(co_kube_ref){"v1", "Namespace", NULL, ns}, &d) < 0) {
        co_error_clear();
    }
    free(ns);
    co_kube_client_free(admin);
    return 0;
}

static struct json_object *configmap(const char *name, const char *data)
{
    return co_test_json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                        "\"%s\",\"namespace\":\"%s\",\"labels\":{\"set\":\"gnutls\"}},"
                        "\"data\":{%s}}",
                        name, ns, data);
}

static const char *data_of(struct json_object *obj, const char *key)
{
    return co_json_str(obj, "data", key, NULL);
}

static void test_kube_gnutls__crud_round_trip(void **state)
{
    (void)state;
    co_kube_ref ref = {"v1", "ConfigMap", ns, "round-trip"};
    struct json_object *cm = configmap("round-trip", "\"k\":\"v1\"");
    struct json_object *out = NULL, *got = NULL;
    assert_co_fail_with(CO_ENOTFOUND, co_kube_get(&got, admin, &ref, NULL));
    assert_string_equal(co_kube_status_last()->reason, "NotFound");
    assert_co_pass(co_kube_create(&out, admin, cm, NULL));
    assert_string_equal(data_of(out, "k"), "v1");
    json_object_put(out);
    assert_co_fail_with(CO_EEXISTS, co_kube_create(NULL, admin, cm, NULL));
    assert_co_pass(co_kube_get(&got, admin, &ref, NULL));
    json_object_object_add(co_kube__obj(got, "data"), "k", json_object_new_string("v2"));
    assert_co_pass(co_kube_update(&out, admin, got, NULL));
    assert_string_equal(data_of(out, "k"), "v2");
    json_object_put(out);
    json_object_put(got);
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    assert_co_fail_with(CO_ENOTFOUND, co_kube_get(&got, admin, &ref, NULL));
    json_object_put(cm);
}

static int count_item(struct json_object *item, void *payload)
{
    (void)item;
    (*(int *)payload)++;
    return 0;
}

static void test_kube_gnutls__list_pages_and_patches(void **state)
{
    (void)state;
    for (int i = 0; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof(name), "page-%d", i);
        struct json_object *cm = configmap(name, "\"a\":\"1\"");
        assert_co_pass(co_kube_create(NULL, admin, cm, NULL));
        json_object_put(cm);
    }
    co_kube_ref coll = {"v1", "ConfigMap", ns, NULL};
    co_kube_list_options lo = {.label_selector = "set=gnutls", .limit = 2};
    int n = 0;
    char *rv = NULL;
    assert_co_pass(co_kube_list_each(&rv, admin, &coll, &lo, count_item, &n));
    assert_int_equal(n, 5);
    assert_true(strlen(rv) > 0);
    free(rv);

    co_kube_ref ref = {"v1", "ConfigMap", ns, "page-0"};
    struct json_object *out = NULL;
    struct json_object *jp =
        co_test_json("[{\"op\":\"add\",\"path\":\"/data/b\",\"value\":\"2\"}]");
    assert_co_pass(co_kube_patch(&out, admin, &ref, CO_KUBE_PATCH_JSON, jp, NULL));
    assert_string_equal(data_of(out, "b"), "2");
    json_object_put(out);
    json_object_put(jp);
    struct json_object *mp = co_test_json("{\"data\":{\"a\":null,\"c\":\"3\"}}");
    assert_co_pass(co_kube_patch(&out, admin, &ref, CO_KUBE_PATCH_MERGE, mp, NULL));
    assert_null(data_of(out, "a"));
    assert_string_equal(data_of(out, "c"), "3");
    json_object_put(out);
    json_object_put(mp);
    struct json_object *applied = configmap("page-0", "\"applied\":\"yes\"");
    co_kube_write_options wo = {.field_manager = "co-gnutls"};
    assert_co_pass(co_kube_apply(&out, admin, applied, &wo));
    assert_string_equal(data_of(out, "applied"), "yes");
    json_object_put(out);
    json_object_put(applied);
}

typedef struct seen {
    int added;
    int modified;
} seen;

static int on_event(co_kube_event_type type, struct json_object *obj, void *payload)
{
    seen *s = payload;
    const char *name = co_json_meta_name(obj);
    if (!name || strcmp(name, "watched") != 0) {
        return 0;
    }
    s->added += type == CO_KUBE_ADDED;
    s->modified += type == CO_KUBE_MODIFIED;
    return s->modified > 0 ? 1 : 0; /* a positive value ends the watch */
}

static void test_kube_gnutls__watch_streams_events(void **state)
{
    (void)state;
    co_kube_ref coll = {"v1", "ConfigMap", ns, NULL};
    co_kube_list_options lo = {.label_selector = "set=gnutls", .limit = 1};
    struct json_object *page = NULL;
    assert_co_pass(co_kube_list(&page, admin, &coll, &lo));
    char *rv = co_xstrdup(co_json_str(page, "metadata", "resourceVersion", NULL));
    json_object_put(page);
    /* created and changed after the list: the watch from its version sees both */
    struct json_object *cm = configmap("watched", "\"v\":\"1\"");
    assert_co_pass(co_kube_create(NULL, admin, cm, NULL));
    struct json_object *mp = co_test_json("{\"data\":{\"v\":\"2\"}}");
    assert_co_pass(co_kube_patch(NULL, admin, &(co_kube_ref){"v1", "ConfigMap", ns, "watched"},
                                 CO_KUBE_PATCH_MERGE, mp, NULL));
    co_kube_watch_options wo = {.resource_version = rv, .timeout_s = 30};
    seen s = {0};
    assert_co_pass(co_kube_watch(admin, &coll, &wo, on_event, &s));
    assert_int_equal(s.added, 1);
    assert_int_equal(s.modified, 1);
    json_object_put(mp);
    json_object_put(cm);
    free(rv);
}

static void test_kube_gnutls__impersonation_headers_reach_the_server(void **state)
{
    (void)state;
    const char *restricted = co_test_env("CO_TEST_RESTRICTED_USER");
    co_kube_client *as_user = NULL;
    const char *groups[] = {"co-testers"};
    assert_co_pass(co_kube_client_new_impersonating(&as_user, admin, restricted, groups, 1));
    struct json_object *out = NULL;
    assert_co_fail_with(
        CO_EAUTH, co_kube_list(&out, as_user, &(co_kube_ref){"v1", "Secret", ns, NULL}, NULL));
    assert_int_equal(co_kube_status_last()->code, 403);
    assert_contains(co_kube_status_last()->message, restricted);
    co_kube_client_free(as_user);
}

static void test_kube_gnutls__client_certificate_authenticates(void **state)
{
    (void)state;
    co_kube_client *c = co_test_kube_client_gnutls(co_test_env("CO_TEST_CERT_KUBECONFIG"));
    struct json_object *out = NULL;
    assert_co_pass(co_kube_get(&out, c, &(co_kube_ref){"v1", "Namespace", NULL, ns}, NULL));
    json_object_put(out);
    co_kube_client_free(c);
}

/* A client for the admin kubeconfig after @p edit changed its configuration. */
static co_kube_client *edited_client(void (*edit)(co_kube_config *cfg))
{
    co_kube_config *cfg = NULL;
    co_kube_transport *t = NULL;
    co_kube_client *c = NULL;
    assert_co_pass(co_kube_config_load(&cfg, co_test_env("CO_TEST_KUBECONFIG"), NULL));
    edit(cfg);
    assert_co_pass(co_kube_transport_gnutls_new(&t, cfg));
    co_kube_client_options o = {.max_retries = -1};
    assert_co_pass(co_kube_client_new_with_transport(&c, cfg, t, &o));
    co_kube_config_free(cfg);
    return c;
}

/* Replaces the CA with the client certificate of the certificate kubeconfig: a valid PEM
 * certificate that did not issue the server's. */
static void use_wrong_ca(co_kube_config *cfg)
{
    co_kube_config *other = NULL;
    assert_co_pass(co_kube_config_load(&other, co_test_env("CO_TEST_CERT_KUBECONFIG"), NULL));
    co_free_secret(cfg->ca.data, cfg->ca.len + 1);
    cfg->ca.data = co_xmemdup(other->client_cert.data, other->client_cert.len);
    cfg->ca.len = other->client_cert.len;
    co_kube_config_free(other);
}

static void use_no_ca(co_kube_config *cfg)
{
    co_free_secret(cfg->ca.data, cfg->ca.len + 1);
    cfg->ca.data = NULL;
    cfg->ca.len = 0;
}

static void use_wrong_ca_insecure(co_kube_config *cfg)
{
    use_wrong_ca(cfg);
    cfg->insecure = 1;
}

static void use_server_name_localhost(co_kube_config *cfg)
{
    cfg->tls_server_name = co_xstrdup("localhost");
}

static void use_server_name_wrong(co_kube_config *cfg)
{
    cfg->tls_server_name = co_xstrdup("not-the-apiserver.example");
}

/* GET /version through a client configured by @p edit. */
static int version_with(void (*edit)(co_kube_config *cfg))
{
    co_kube_client *c = edited_client(edit);
    co_buf out = CO_BUF_INIT(1 << 20);
    co_error_clear();
    int rc = co_kube_request_raw(&out, c, "GET", "/version", NULL, NULL, 0);
    if (rc == 0) {
        assert_contains(co_buf_cstr(&out), "gitVersion");
    }
    co_buf_dispose(&out);
    co_kube_client_free(c);
    return rc;
}

static void test_kube_gnutls__server_certificate_is_verified(void **state)
{
    (void)state;
    assert_co_fail_with(CO_ERROR, version_with(use_wrong_ca));
    assert_contains(co_error_last(), "TLS: the certificate of 127.0.0.1:");
    assert_contains(co_error_last(), "not valid for 127.0.0.1");
    assert_co_fail_with(CO_ERROR, version_with(use_no_ca));
    assert_contains(co_error_last(), "NOT trusted");
    /* tls-server-name replaces the URL's host as the name to verify */
    assert_co_pass(version_with(use_server_name_localhost));
    assert_co_fail_with(CO_ERROR, version_with(use_server_name_wrong));
    assert_contains(co_error_last(), "not valid for not-the-apiserver.example");
    /* insecure-skip-tls-verify trusts whatever answers */
    assert_co_pass(version_with(use_wrong_ca_insecure));
}

#define THREADS    4
#define PER_THREAD 25

static void *hammer(void *arg)
{
    co_kube_client *c = arg;
    long failures = 0;
    for (int i = 0; i < PER_THREAD; i++) {
        struct json_object *out = NULL;
        if (co_kube_get(&out, c, &(co_kube_ref){"v1", "Namespace", NULL, "default"}, NULL) < 0) {
            failures++;
        }
        json_object_put(out);
    }
    return (void *)failures;
}

static void test_kube_gnutls__connections_are_reused_across_threads(void **state)
{
    (void)state;
    co_kube_config *cfg = NULL;
    co_kube_transport *t = NULL;
    co_kube_client *c = NULL;
    assert_co_pass(co_kube_config_load(&cfg, co_test_env("CO_TEST_KUBECONFIG"), NULL));
    assert_co_pass(co_kube_transport_gnutls_new(&t, cfg));
    co_kube_client_options o = {.qps = -1};
    assert_co_pass(co_kube_client_new_with_transport(&c, cfg, t, &o));
    co_kube_config_free(cfg);
    /* discovery first, so that the threads only GET */
    struct json_object *out = NULL;
    assert_co_pass(co_kube_get(&out, c, &(co_kube_ref){"v1", "Namespace", NULL, "default"}, NULL));
    json_object_put(out);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, hammer, c), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        void *res = NULL;
        pthread_join(th[i], &res);
        assert_int_equal((long)res, 0);
    }
    unsigned long requests = 0, connects = 0;
    assert_co_pass(co_kube__gnutls_stats(t, &requests, &connects));
    assert_true(requests > (unsigned long)THREADS * PER_THREAD);
    assert_true(connects >= 1);
    assert_true(connects <= THREADS);
    co_kube_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_gnutls__crud_round_trip),
        cmocka_unit_test(test_kube_gnutls__list_pages_and_patches),
        cmocka_unit_test(test_kube_gnutls__watch_streams_events),
        cmocka_unit_test(test_kube_gnutls__impersonation_headers_reach_the_server),
        cmocka_unit_test(test_kube_gnutls__client_certificate_authenticates),
        cmocka_unit_test(test_kube_gnutls__server_certificate_is_verified),
        cmocka_unit_test(test_kube_gnutls__connections_are_reused_across_threads),
    };
    return cmocka_run_group_tests_name("kube_gnutls_integration", tests, group_setup,
                                       group_teardown);
}
