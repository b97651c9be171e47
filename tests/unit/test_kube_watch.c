/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for watch streams: line framing at every possible chunk boundary, the line cap,
 * event decoding, ERROR events and 410 answers, cut streams, and stopping from the callback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_watch.h"
#include "shared/src/kube/kube_int.h"
#include "tests/support/fake_kube.h"
#include "tests/support/test_support.h"

typedef struct lines {
    char *items[64];
    size_t n;
} lines;

static int collect_line(const char *line, size_t len, void *payload)
{
    lines *l = payload;
    if (l->n >= CO_ARRAY_SIZE(l->items)) {
        return CO_ERROR;
    }
    l->items[l->n++] = co_xmemdup(line, len);
    return 0;
}

static void lines_dispose(lines *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i]);
    }
    l->n = 0;
}

static void test_kube_watch__framer_every_split(void **state)
{
    (void)state;
    static const char stream[] = "{\"a\":1}\n{\"b\":\"x\\ny\"}\n\n{\"c\":[1,2,3]}\n";
    size_t len = strlen(stream);
    /* every way to cut the stream in three pieces gives the same lines */
    for (size_t i = 0; i <= len; i++) {
        for (size_t j = i; j <= len; j++) {
            co_kube_framer fr = CO_KUBE_FRAMER_INIT(64);
            lines l = {0};
            assert_co_pass(co_kube_framer_feed(&fr, stream, i, collect_line, &l));
            assert_co_pass(co_kube_framer_feed(&fr, stream + i, j - i, collect_line, &l));
            assert_co_pass(co_kube_framer_feed(&fr, stream + j, len - j, collect_line, &l));
            assert_int_equal(l.n, 4);
            assert_string_equal(l.items[0], "{\"a\":1}");
            assert_string_equal(l.items[1], "{\"b\":\"x\\ny\"}");
            assert_string_equal(l.items[2], "");
            assert_string_equal(l.items[3], "{\"c\":[1,2,3]}");
            assert_int_equal(fr.partial.len, 0);
            lines_dispose(&l);
            co_kube_framer_dispose(&fr);
        }
    }
    /* byte by byte */
    co_kube_framer fr = CO_KUBE_FRAMER_INIT(64);
    lines l = {0};
    for (size_t i = 0; i < len; i++) {
        assert_co_pass(co_kube_framer_feed(&fr, stream + i, 1, collect_line, &l));
    }
    assert_int_equal(l.n, 4);
    lines_dispose(&l);
    co_kube_framer_dispose(&fr);
}

static void test_kube_watch__framer_enforces_the_line_cap(void **state)
{
    (void)state;
    co_kube_framer fr = CO_KUBE_FRAMER_INIT(8);
    lines l = {0};
    /* exactly at the cap, split or whole */
    assert_co_pass(co_kube_framer_feed(&fr, "1234", 4, collect_line, &l));
    assert_co_pass(co_kube_framer_feed(&fr, "5678\n12345678\n", 14, collect_line, &l));
    assert_int_equal(l.n, 2);
    /* one byte over: in one chunk, and assembled from pieces */
    assert_co_fail_with(CO_ETOOBIG, co_kube_framer_feed(&fr, "123456789\n", 10, collect_line, &l));
    assert_co_pass(co_kube_framer_feed(&fr, "12345", 5, collect_line, &l));
    assert_co_fail_with(CO_ETOOBIG, co_kube_framer_feed(&fr, "6789", 4, collect_line, &l));
    assert_null(fr.partial.ptr);
    /* a partial line never grows past the cap either */
    assert_co_fail_with(CO_ETOOBIG, co_kube_framer_feed(&fr, "123456789", 9, collect_line, &l));
    lines_dispose(&l);
    co_kube_framer_dispose(&fr);
}

static int stop_on_b(const char *line, size_t len, void *payload)
{
    (void)payload;
    return len && line[0] == 'b' ? 1 : 0;
}

static void test_kube_watch__framer_callback_stops(void **state)
{
    (void)state;
    co_kube_framer fr = CO_KUBE_FRAMER_INIT(64);
    assert_int_equal(co_kube_framer_feed(&fr, "a\nb\nc\n", 6, stop_on_b, NULL), 1);
    co_kube_framer_dispose(&fr);
}

typedef struct seen {
    co_kube_event_type types[32];
    char names[32][32];
    size_t n;
    size_t stop_after; /* 0: never */
} seen;

static int record_event(co_kube_event_type type, struct json_object *obj, void *payload)
{
    seen *s = payload;
    if (s->n < CO_ARRAY_SIZE(s->types)) {
        s->types[s->n] = type;
        const char *name = co_json_meta_name(obj);
        const char *rv = co_json_str(obj, "metadata", "resourceVersion", NULL);
        snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name ? name : rv ? rv : "");
        s->n++;
    }
    return s->stop_after && s->n >= s->stop_after ? 1 : 0;
}

#define EV(type, name, rv)                                                                         \
    "{\"type\":\"" type "\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","             \
    "\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns1\",\"resourceVersion\":\"" rv          \
    "\"}}}\n"

static void test_kube_watch__decodes_events_across_chunks(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    const char *chunks[] = {
        EV("ADDED", "a", "11") "{\"type\":\"MODI",
        "FIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"12\"}}}\n",
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":"
        "{\"resourceVersion\":\"15\"}}}\n" EV("DELETED", "a", "16"),
    };
    co_fake_answer a = {.status = 200, .chunks = chunks, .nchunks = 3};
    co_fake_kube_on(f, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", &a);
    co_kube_client *c = co_fake_kube_client(f);
    seen s = {0};
    co_kube_watch_options wo = {.resource_version = "10",
                                .allow_bookmarks = 1,
                                .label_selector = "a=b",
                                .timeout_s = 42};
    assert_co_pass(
        co_kube_watch(c, &(co_kube_ref){"v1", "ConfigMap", "ns1", NULL}, &wo, record_event, &s));
    assert_int_equal(s.n, 4);
    assert_int_equal(s.types[0], CO_KUBE_ADDED);
    assert_int_equal(s.types[1], CO_KUBE_MODIFIED);
    assert_int_equal(s.types[2], CO_KUBE_BOOKMARK);
    assert_string_equal(s.names[2], "15");
    assert_int_equal(s.types[3], CO_KUBE_DELETED);
    co_fake_call call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_string_equal(call.path, "/api/v1/namespaces/ns1/configmaps?watch=1&resourceVersion=10"
                                   "&allowWatchBookmarks=true&labelSelector=a%3Db"
                                   "&timeoutSeconds=42");
    co_fake_call_dispose(&call);
    assert_string_equal(co_kube_event_type_name(CO_KUBE_BOOKMARK), "BOOKMARK");
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static int count_managed_fields(co_kube_event_type type, struct json_object *obj, void *payload)
{
    (void)type;
    int *n = payload;
    struct json_object *meta = co_kube__obj(obj, "metadata");
    n[0]++;
    n[1] += meta && json_object_object_get_ex(meta, "managedFields", NULL);
    return 0;
}

/* skip_managed_fields: the events' objects arrive without metadata.managedFields. */
static void test_kube_watch__can_leave_out_managed_fields(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    const char *chunks[] = {
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":"
        "\"11\",\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":{\"f:data\":{}}}]}}}\n",
    };
    co_fake_answer a = {.status = 200, .chunks = chunks, .nchunks = 1};
    co_fake_kube_on(f, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", &a);
    co_kube_client *c = co_fake_kube_client(f);
    co_kube_ref ref = {"v1", "ConfigMap", "ns1", NULL};
    int with[2] = {0, 0}, without[2] = {0, 0};
    co_kube_watch_options wo = {.resource_version = "10"};
    assert_co_pass(co_kube_watch(c, &ref, &wo, count_managed_fields, with));
    wo.skip_managed_fields = 1;
    assert_co_pass(co_kube_watch(c, &ref, &wo, count_managed_fields, without));
    assert_int_equal(with[0], 1);
    assert_int_equal(with[1], 1);
    assert_int_equal(without[0], 1);
    assert_int_equal(without[1], 0);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_watch__error_event_410_is_gone(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    const char *chunks[] = {
        EV("ADDED", "a", "11"),
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
        "\"Failure\",\"message\":\"too old resource version: 1 (5000)\",\"reason\":\"Expired\","
        "\"code\":410}}\n" EV("ADDED", "never", "99"),
    };
    co_fake_answer a = {.status = 200, .chunks = chunks, .nchunks = 2};
    co_fake_kube_on(f, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", &a);
    co_kube_client *c = co_fake_kube_client(f);
    seen s = {0};
    assert_co_fail_with(CO_EGONE, co_kube_watch(c, &(co_kube_ref){"v1", "ConfigMap", "ns1", NULL},
                                                NULL, record_event, &s));
    assert_int_equal(s.n, 1);
    assert_contains(co_error_last(), "too old resource version");
    assert_int_equal(co_kube_status_last()->code, 410);
    assert_string_equal(co_kube_status_last()->reason, "Expired");

    /* the same as an HTTP answer */
    co_fake_kube_json(
        f, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", 410,
        "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Gone\",\"message\":\"gone\"}");
    assert_co_fail_with(CO_EGONE, co_kube_watch(c, &(co_kube_ref){"v1", "ConfigMap", "ns1", NULL},
                                                NULL, record_event, &s));
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_watch__broken_streams(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    co_kube_client *c = co_fake_kube_client(f);
    co_kube_ref ref = {"v1", "ConfigMap", "ns1", NULL};
    seen s = {0};

    /* the stream ends inside an event */
    const char *cut[] = {EV("ADDED", "a", "11") "{\"type\":\"ADDED\",\"obj"};
    co_fake_answer a = {.status = 200, .chunks = cut, .nchunks = 1};
    co_fake_kube_once(f, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", &a);
    assert_co_fail_with(CO_EUNAVAILABLE, co_kube_watch(c, &ref, NULL, record_event, &s));
    assert_contains(co_error_last(), "stream ended inside an event");
    assert_int_equal(s.n, 1);

    /* the connection drops */
    const char *two[] = {EV("ADDED", "a", "11"), EV("ADDED", "b", "12")};
    co_fake_answer t = {.status = 200, .chunks = two, .nchunks = 2, .truncate = 1};
    co_fake_kube_once(f, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", &t);
    s.n = 0;
    assert_co_fail_with(CO_EUNAVAILABLE, co_kube_watch(c, &ref, NULL, record_event, &s));

    /* garbage and unknown types */
    const char *junk[] = {"{not json}\n"};
    co_fake_answer j = {.status = 200, .chunks = junk, .nchunks = 1};
    co_fake_kube_once(f, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", &j);
    assert_co_fail_with(CO_EINVALID, co_kube_watch(c, &ref, NULL, record_event, &s));
    const char *odd[] = {"{\"type\":\"SIDEWAYS\",\"object\":{}}\n"};
    co_fake_answer o = {.status = 200, .chunks = odd, .nchunks = 1};
    co_fake_kube_once(f, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", &o);
    assert_co_fail_with(CO_EINVALID, co_kube_watch(c, &ref, NULL, record_event, &s));
    assert_contains(co_error_last(), "SIDEWAYS");

    /* a refused connection is not retried by the watch itself (the informer backs off) */
    co_fake_kube_clear_calls(f);
    co_fake_kube_fail_after(f, 0, 1, CO_FAKE_REFUSED, 0);
    assert_co_fail_with(CO_EUNAVAILABLE, co_kube_watch(c, &ref, NULL, record_event, &s));
    assert_int_equal(co_fake_kube_count(f, "GET", "watch=1"), 1);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

static void test_kube_watch__callback_stops_the_watch(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    const char *chunks[] = {EV("ADDED", "a", "1") EV("ADDED", "b", "2") EV("ADDED", "c", "3")};
    co_fake_answer a = {.status = 200, .chunks = chunks, .nchunks = 1, .hang = 1};
    co_fake_kube_on(f, "GET", "/api/v1/namespaces/ns1/configmaps?watch=1", &a);
    co_kube_client *c = co_fake_kube_client(f);
    seen s = {.stop_after = 2};
    assert_co_pass(
        co_kube_watch(c, &(co_kube_ref){"v1", "ConfigMap", "ns1", NULL}, NULL, record_event, &s));
    assert_int_equal(s.n, 2);
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

/* Metadata-only reads ask for PartialObjectMetadata, with no fallback to whole objects: a list
 * for the List form, a watch for the object form; other reads keep plain JSON. */
static void test_kube_watch__metadata_only_asks_for_partial_metadata(void **state)
{
    (void)state;
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_discovery(f);
    const char *chunks[] = {"{\"type\":\"ADDED\",\"object\":{\"kind\":\"PartialObjectMetadata\","
                            "\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"name\":\"s\","
                            "\"namespace\":\"ns1\",\"resourceVersion\":\"3\"}}}\n"};
    co_fake_answer a = {.status = 200, .chunks = chunks, .nchunks = 1};
    co_fake_kube_json(f, "GET", "/api/v1/namespaces/ns1/secrets", 200,
                      "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\","
                      "\"metadata\":{\"resourceVersion\":\"2\"},\"items\":[]}");
    co_fake_kube_on(f, "GET", "/api/v1/namespaces/ns1/secrets?watch=1", &a);
    co_kube_client *c = co_fake_kube_client(f);
    co_kube_ref ref = {"v1", "Secret", "ns1", NULL};
    co_kube_list_options lo = {.metadata_only = 1};
    struct json_object *list = NULL;
    assert_co_pass(co_kube_list(&list, c, &ref, &lo));
    json_object_put(list);
    co_fake_call call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_contains(call.headers,
                    "Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1\n");
    co_fake_call_dispose(&call);

    seen s = {0};
    co_kube_watch_options wo = {.metadata_only = 1};
    assert_co_pass(co_kube_watch(c, &ref, &wo, record_event, &s));
    assert_int_equal(s.n, 1);
    call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_contains(call.headers,
                    "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1\n");
    co_fake_call_dispose(&call);

    /* the same reads without the option */
    assert_co_pass(co_kube_list(&list, c, &ref, NULL));
    json_object_put(list);
    call = co_fake_kube_call(f, co_fake_kube_ncalls(f) - 1);
    assert_contains(call.headers, "Accept: application/json\n");
    co_fake_call_dispose(&call);
    assert_string_equal(s.names[0], "s");
    co_kube_client_free(c);
    co_fake_kube_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_watch__framer_every_split),
        cmocka_unit_test(test_kube_watch__framer_enforces_the_line_cap),
        cmocka_unit_test(test_kube_watch__framer_callback_stops),
        cmocka_unit_test(test_kube_watch__decodes_events_across_chunks),
        cmocka_unit_test(test_kube_watch__can_leave_out_managed_fields),
        cmocka_unit_test(test_kube_watch__error_event_410_is_gone),
        cmocka_unit_test(test_kube_watch__broken_streams),
        cmocka_unit_test(test_kube_watch__callback_stops_the_watch),
        cmocka_unit_test(test_kube_watch__metadata_only_asks_for_partial_metadata),
    };
    return cmocka_run_group_tests_name("kube_watch", tests, NULL, NULL);
}
