/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the informer over the fake transport: list then watch, the store and its
 * secondary indexes, handlers in event order, resuming from the last resourceVersion, relisting
 * after 410 with the right add/update/delete differences, backoff after failures, stopping.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_informer.h"
#include "shared/src/kube/kube_int.h"
#include "tests/support/fake_kube.h"
#include "tests/support/test_support.h"

#define CM(name, rv, team, extra)                                                                  \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name                 \
    "\",\"namespace\":\"ns1\",\"resourceVersion\":\"" rv "\",\"labels\":{\"team\":\"" team         \
    "\"},\"managedFields\":[{\"manager\":\"m\"}]},\"data\":{\"v\":\"" rv "\"" extra "}}"
#define EV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"

static const char *const LIST = "/api/v1/namespaces/ns1/configmaps?limit=2";
static const char *const WATCH = "/api/v1/namespaces/ns1/configmaps?watch=1";

/* --- recording handlers ------------------------------------------------------------------ */

typedef struct log {
    pthread_mutex_t lock;
    char lines[64][96];
    size_t n;
} log_t;

static void log_add(log_t *l, const char *what, const struct json_object *obj)
{
    pthread_mutex_lock(&l->lock);
    if (l->n < CO_ARRAY_SIZE(l->lines)) {
        const char *v = co_json_str(obj, "data", "v", NULL);
        snprintf(l->lines[l->n++], sizeof(l->lines[0]), "%s %s %s", what, co_json_meta_name(obj),
                 v ? v : "-");
    }
    pthread_mutex_unlock(&l->lock);
}

static void on_add(const struct json_object *obj, void *payload)
{
    log_add(payload, "add", obj);
}

static void on_update(const struct json_object *old, const struct json_object *obj, void *payload)
{
    char what[48];
    const char *v = co_json_str(old, "data", "v", NULL);
    snprintf(what, sizeof(what), "update(from %s)", v ? v : "-");
    log_add(payload, what, obj);
}

static void on_delete(const struct json_object *obj, void *payload)
{
    log_add(payload, "delete", obj);
}

static size_t log_len(log_t *l)
{
    pthread_mutex_lock(&l->lock);
    size_t n = l->n;
    pthread_mutex_unlock(&l->lock);
    return n;
}

/* Index: one key per comma-separated value of label "team". */
static int by_team(co_kube_keys *out, const struct json_object *obj, void *payload)
{
    (void)payload;
    const char *team = co_json_str(obj, "metadata", "labels", "team", NULL);
    if (!team) {
        return 0;
    }
    if (strcmp(team, "broken") == 0) {
        return co_error_set(CO_EINVALID, "cannot index team broken");
    }
    char *copy = co_xstrdup(team), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        co_kube_keys_add(out, t);
    }
    free(copy);
    return 0;
}

typedef struct fixture {
    co_fake_kube *f;
    co_kube_client *c;
    co_kube_informer *inf;
    log_t log;
} fixture;

static int setup(void **state)
{
    fixture *fx = co_xcalloc(1, sizeof(*fx));
    pthread_mutex_init(&fx->log.lock, NULL);
    fx->f = co_fake_kube_new();
    co_fake_kube_discovery(fx->f);
    fx->c = co_fake_kube_client(fx->f);
    co_kube_informer_options o = {.api_version = "v1",
                                  .kind = "ConfigMap",
                                  .namespace = "ns1",
                                  .page_size = 2,
                                  .backoff_base_ms = 5,
                                  .backoff_cap_ms = 20,
                                  .strip_managed_fields = 1};
    assert_co_pass(co_kube_informer_new(&fx->inf, fx->c, &o));
    assert_co_pass(co_kube_informer_add_index(fx->inf, "team", by_team, NULL));
    co_kube_handlers h = {on_add, on_update, on_delete, &fx->log};
    assert_co_pass(co_kube_informer_add_handlers(fx->inf, &h));
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    co_kube_informer_free(fx->inf);
    co_kube_client_free(fx->c);
    co_fake_kube_free(fx->f);
    pthread_mutex_destroy(&fx->log.lock);
    free(fx);
    return 0;
}

typedef struct until {
    fixture *fx;
    size_t log_len;
    unsigned long lists, watches, gone, errors;
} until;

static int reached(void *payload)
{
    until *u = payload;
    co_kube_informer_stats st;
    co_kube_informer_stats_get(&st, u->fx->inf);
    return log_len(&u->fx->log) >= u->log_len && st.lists >= u->lists && st.watches >= u->watches &&
           st.gone >= u->gone && st.errors >= u->errors;
}

/* Waits (generously) for the informer to reach a state. */
static void wait_for(fixture *fx,
                     size_t log_n,
                     unsigned long lists,
                     unsigned long watches,
                     unsigned long gone,
                     unsigned long errors)
{
    until u = {fx, log_n, lists, watches, gone, errors};
    for (int i = 0; i < 3000 && !reached(&u); i++) {
        co_kube__sleep_ms(10, NULL);
    }
    if (!reached(&u)) {
        co_kube_informer_stats st;
        co_kube_informer_stats_get(&st, fx->inf);
        fail_msg("informer did not get there: log %zu/%zu lists %lu watches %lu gone %lu "
                 "errors %lu last error %s",
                 log_len(&fx->log), log_n, st.lists, st.watches, st.gone, st.errors, st.last_error);
    }
}

static void list_pages(co_fake_kube *f, int once)
{
    co_fake_answer p1 = {.status = 200,
                         .body = "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":"
                                 "\"10\",\"continue\":\"c2\"},\"items\":[" CM(
                                     "a", "1", "red", "") "," CM("b", "2", "red,blue", "") "]}"};
    co_fake_answer p2 = {.status = 200,
                         .body = "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":"
                                 "\"10\"},\"items\":[" CM("c", "3", "blue", "") "]}"};
    if (once) {
        co_fake_kube_once(f, "GET", "/api/v1/namespaces/ns1/configmaps?limit=2&continue=c2", &p2);
        co_fake_kube_once(f, "GET", LIST, &p1);
    } else {
        co_fake_kube_on(f, "GET", LIST, &p1);
        co_fake_kube_on(f, "GET", "/api/v1/namespaces/ns1/configmaps?limit=2&continue=c2", &p2);
    }
}

static void test_kube_informer__list_then_watch(void **state)
{
    fixture *fx = *state;
    list_pages(fx->f, 0);
    const char *events[] = {
        EV("ADDED", CM("d", "11", "blue", "")) EV("MODIFIED", CM("a", "12", "green", "")),
        EV("DELETED",
           CM("b", "13", "red,blue",
              "")) "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":"
                   "{\"resourceVersion\":\"20\"}}}\n",
    };
    co_fake_answer w = {.status = 200, .chunks = events, .nchunks = 2, .hang = 1};
    co_fake_kube_on(fx->f, "GET", WATCH, &w);

    assert_false(co_kube_informer_has_synced(fx->inf));
    assert_co_pass(co_kube_informer_start(fx->inf));
    assert_co_fail_with(CO_EINVALID, co_kube_informer_start(fx->inf));
    assert_co_pass(co_kube_informer_wait_synced(fx->inf, 30000));
    assert_true(co_kube_informer_has_synced(fx->inf));
    wait_for(fx, 6, 1, 1, 0, 0);
    for (int i = 0; i < 3000; i++) {
        co_kube_informer_stats st;
        co_kube_informer_stats_get(&st, fx->inf);
        if (strcmp(st.resource_version, "20") == 0) {
            break;
        }
        co_kube__sleep_ms(10, NULL);
    }

    assert_string_equal(fx->log.lines[0], "add a 1");
    assert_string_equal(fx->log.lines[1], "add b 2");
    assert_string_equal(fx->log.lines[2], "add c 3");
    assert_string_equal(fx->log.lines[3], "add d 11");
    assert_string_equal(fx->log.lines[4], "update(from 1) a 12");
    assert_string_equal(fx->log.lines[5], "delete b 13");

    assert_int_equal(co_kube_informer_len(fx->inf), 3);
    struct json_object *obj = NULL;
    assert_co_pass(co_kube_informer_get(&obj, fx->inf, "ns1", "a"));
    assert_string_equal(co_json_str(obj, "data", "v", NULL), "12");
    /* managed fields were dropped before caching */
    assert_null(json_object_object_get(co_kube__obj(obj, "metadata"), "managedFields"));
    json_object_put(obj);
    assert_co_fail_with(CO_ENOTFOUND, co_kube_informer_get(&obj, fx->inf, "ns1", "b"));

    struct json_object *all = NULL;
    assert_co_pass(co_kube_informer_list(&all, fx->inf, "ns1"));
    assert_int_equal(json_object_array_length(all), 3);
    assert_string_equal(co_json_meta_name(json_object_array_get_idx(all, 0)), "a");
    assert_string_equal(co_json_meta_name(json_object_array_get_idx(all, 2)), "d");
    json_object_put(all);
    assert_co_pass(co_kube_informer_list(&all, fx->inf, "other"));
    assert_int_equal(json_object_array_length(all), 0);
    json_object_put(all);

    /* the index follows every change: b (red,blue) left, a moved from red to green */
    co_kube_keys keys = {0};
    assert_co_pass(co_kube_informer_index_keys(&keys, fx->inf, "team", "blue"));
    assert_int_equal(keys.len, 2);
    assert_string_equal(keys.items[0], "ns1/c");
    assert_string_equal(keys.items[1], "ns1/d");
    co_kube_keys_dispose(&keys);
    assert_co_pass(co_kube_informer_index_keys(&keys, fx->inf, "team", "red"));
    assert_int_equal(keys.len, 0);
    co_kube_keys_dispose(&keys);
    assert_co_pass(co_kube_informer_by_index(&all, fx->inf, "team", "green"));
    assert_int_equal(json_object_array_length(all), 1);
    json_object_put(all);
    assert_co_fail_with(CO_ENOTFOUND, co_kube_informer_by_index(&all, fx->inf, "nope", "x"));

    co_kube_informer_stats st;
    co_kube_informer_stats_get(&st, fx->inf);
    assert_int_equal(st.lists, 1);
    assert_int_equal(st.events, 3);
    assert_int_equal(st.bookmarks, 1);
    assert_int_equal(st.objects, 3);
    assert_true(st.bytes > 0);
    assert_string_equal(st.resource_version, "20");
    co_fake_call call = co_fake_kube_call(fx->f, co_fake_kube_ncalls(fx->f) - 1);
    assert_contains(call.path, "watch=1&resourceVersion=10&allowWatchBookmarks=true");
    co_fake_call_dispose(&call);

    /* configuration is closed once running; stop returns although the watch hangs */
    co_kube_handlers h = {0};
    assert_co_fail_with(CO_EINVALID, co_kube_informer_add_handlers(fx->inf, &h));
    co_kube_informer_stop(fx->inf);
    co_kube_informer_stop(fx->inf);
    assert_int_equal(co_kube_informer_len(fx->inf), 3);
}

static void drop_data(struct json_object *obj, void *payload)
{
    json_object_object_del(obj, "data");
    (*(int *)payload)++;
}

/* Starts a second informer over the fixture's fake (ConfigMaps of ns1, pages of 2) with the
 * options of @p o; with @p log, its handlers write to the fixture's log. */
static co_kube_informer *start_informer(fixture *fx, co_kube_informer_options o, bool log)
{
    o.api_version = "v1";
    o.kind = "ConfigMap";
    o.namespace = "ns1";
    o.page_size = 2;
    co_kube_informer *inf = NULL;
    assert_co_pass(co_kube_informer_new(&inf, fx->c, &o));
    if (log) {
        co_kube_handlers h = {on_add, on_update, on_delete, &fx->log};
        assert_co_pass(co_kube_informer_add_handlers(inf, &h));
    }
    assert_co_pass(co_kube_informer_start(inf));
    return inf;
}

/* A transform trims every object before it is stored. */
static void test_kube_informer__transform_trims_before_caching(void **state)
{
    fixture *fx = *state;
    list_pages(fx->f, 0);
    co_fake_answer w = {.status = 200, .hang = 1};
    co_fake_kube_on(fx->f, "GET", WATCH, &w);
    int calls = 0;
    co_kube_informer_options o = {.transform = drop_data, .transform_payload = &calls};
    co_kube_informer *inf = start_informer(fx, o, false);
    assert_co_pass(co_kube_informer_wait_synced(inf, 30000));
    struct json_object *obj = NULL;
    assert_co_pass(co_kube_informer_get(&obj, inf, "ns1", "a"));
    assert_null(co_json_get(obj, "data", NULL));
    assert_string_equal(co_json_meta_name(obj), "a");
    /* managed fields are kept unless asked */
    assert_non_null(co_json_get(obj, "metadata", "managedFields", NULL));
    json_object_put(obj);
    co_kube_informer_free(inf);
    assert_int_equal(calls, 3);
}

/* Admits everything but team green. */
static bool not_green(const struct json_object *obj, void *payload)
{
    (*(int *)payload)++;
    const char *team = co_json_str(obj, "metadata", "labels", "team", NULL);
    return !team || strcmp(team, "green") != 0;
}

/* An object the admit function refuses is absent: a stored one that turns refused is deleted
 * (the handlers see its last admitted state), a refused one is never stored or reported. */
static void test_kube_informer__admit_keeps_refused_objects_out(void **state)
{
    fixture *fx = *state;
    list_pages(fx->f, 0);
    const char *events[] = {
        EV("MODIFIED", CM("a", "11", "green", "")) EV("ADDED", CM("d", "12", "green", ""))
            EV("MODIFIED", CM("c", "13", "blue", "")) EV("DELETED", CM("d", "14", "green", "")),
    };
    co_fake_answer w = {.status = 200, .chunks = events, .nchunks = 1, .hang = 1};
    co_fake_kube_on(fx->f, "GET", WATCH, &w);
    int calls = 0;
    co_kube_informer_options o = {.admit = not_green, .admit_payload = &calls};
    co_kube_informer *inf = start_informer(fx, o, true);
    for (int i = 0; i < 3000 && log_len(&fx->log) < 5; i++) {
        co_kube__sleep_ms(10, NULL);
    }
    /* the last event (the refused d's deletion) ends the chunk: wait until it was applied */
    for (int i = 0; i < 3000; i++) {
        co_kube_informer_stats st;
        co_kube_informer_stats_get(&st, inf);
        if (st.events >= 4) {
            break;
        }
        co_kube__sleep_ms(10, NULL);
    }
    co_kube_informer_stop(inf);
    assert_int_equal(log_len(&fx->log), 5);
    assert_string_equal(fx->log.lines[0], "add a 1");
    assert_string_equal(fx->log.lines[1], "add b 2");
    assert_string_equal(fx->log.lines[2], "add c 3");
    assert_string_equal(fx->log.lines[3], "delete a 1");
    assert_string_equal(fx->log.lines[4], "update(from 3) c 13");
    assert_false(co_kube_informer_contains(inf, "ns1", "a"));
    assert_true(co_kube_informer_contains(inf, "ns1", "b"));
    assert_false(co_kube_informer_contains(inf, "ns1", "d"));
    assert_int_equal(co_kube_informer_len(inf), 2);
    assert_int_equal(calls, 7); /* 3 listed, 4 events */
    co_kube_informer_free(inf);
}

#define PAD                                                                                        \
    "\"pad\":\""                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "\""

/* With compress_over, long texts are stored deflated: reads, lists, handlers (old and new
 * states) and the relist's comparison see the same objects, in less memory. */
static void test_kube_informer__deflated_store_reads_back_the_same(void **state)
{
    fixture *fx = *state;
    list_pages(fx->f, 0);
    const char *events[] = {
        EV("MODIFIED", CM("a", "11", "red", "," PAD)) EV("MODIFIED", CM("a", "12", "red", "," PAD))
            EV("ADDED", CM("d", "13", "blue", "," PAD)) EV("DELETED", CM("b", "14", "red", "")),
    };
    co_fake_answer w = {.status = 200, .chunks = events, .nchunks = 1, .hang = 1};
    co_fake_kube_on(fx->f, "GET", WATCH, &w);
    co_kube_informer_options o = {.compress_over = 64};
    co_kube_informer *inf = start_informer(fx, o, true);
    for (int i = 0; i < 3000 && log_len(&fx->log) < 7; i++) {
        co_kube__sleep_ms(10, NULL);
    }
    co_kube_informer_stop(inf);
    assert_int_equal(log_len(&fx->log), 7);
    assert_string_equal(fx->log.lines[3], "update(from 1) a 11");
    assert_string_equal(fx->log.lines[4], "update(from 11) a 12");
    assert_string_equal(fx->log.lines[5], "add d 13");
    assert_string_equal(fx->log.lines[6], "delete b 14");

    struct json_object *obj = NULL;
    assert_co_pass(co_kube_informer_get(&obj, inf, "ns1", "a"));
    assert_string_equal(co_json_str(obj, "data", "v", NULL), "12");
    assert_int_equal(strlen(co_json_str(obj, "data", "pad", NULL)), 100);
    assert_non_null(co_json_get(obj, "metadata", "managedFields", NULL));
    json_object_put(obj);
    struct json_object *all = NULL;
    assert_co_pass(co_kube_informer_list(&all, inf, "ns1"));
    assert_int_equal(json_object_array_length(all), 3);
    size_t plain = 0;
    for (size_t i = 0; i < json_object_array_length(all); i++) {
        struct json_object *it = json_object_array_get_idx(all, i);
        plain += strlen(json_object_to_json_string_ext(it, JSON_C_TO_STRING_PLAIN |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE));
    }
    assert_string_equal(co_json_meta_name(json_object_array_get_idx(all, 2)), "d");
    assert_string_equal(co_json_str(json_object_array_get_idx(all, 2), "data", "pad", NULL),
                        "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij"
                        "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij");
    json_object_put(all);
    co_kube_informer_stats st;
    co_kube_informer_stats_get(&st, inf);
    assert_int_equal(st.objects, 3);
    assert_true(st.bytes > 0);
    assert_true(st.bytes < plain);
    co_kube_informer_free(inf);
}

static void test_kube_informer__resumes_from_last_version(void **state)
{
    fixture *fx = *state;
    list_pages(fx->f, 0);
    /* the first watch ends normally (server timeout) after two events */
    const char *first[] = {EV("ADDED", CM("d", "30", "blue", ""))
                               EV("MODIFIED", CM("c", "31", "blue", ""))};
    co_fake_answer w1 = {.status = 200, .chunks = first, .nchunks = 1};
    co_fake_kube_once(fx->f, "GET", WATCH, &w1);
    co_fake_answer w2 = {.status = 200, .hang = 1};
    co_fake_kube_on(fx->f, "GET", WATCH, &w2);
    assert_co_pass(co_kube_informer_start(fx->inf));
    wait_for(fx, 5, 1, 2, 0, 0);
    co_kube_informer_stop(fx->inf);
    /* no relist: the second watch started where the first ended */
    assert_int_equal(co_fake_kube_count(fx->f, "GET", "limit=2"), 2); /* one list, 2 pages */
    assert_int_equal(co_fake_kube_count(fx->f, "GET", "watch=1&resourceVersion=10&"), 1);
    assert_int_equal(co_fake_kube_count(fx->f, "GET", "watch=1&resourceVersion=31&"), 1);
}

static void test_kube_informer__relists_after_gone(void **state)
{
    fixture *fx = *state;
    list_pages(fx->f, 1);
    /* the watch says 410: the informer lists again and reconciles the difference */
    const char *gone[] = {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
                          "\"reason\":\"Expired\",\"message\":\"too old resource version\"}}\n"};
    co_fake_answer w1 = {.status = 200, .chunks = gone, .nchunks = 1};
    co_fake_kube_once(fx->f, "GET", WATCH, &w1);
    co_fake_answer relist = {
        .status = 200,
        .body =
            "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"50\"},\"items\":[" CM(
                "a", "41", "red", "") "," CM("c", "3", "blue", "") "," CM("e", "42", "red",
                                                                          "") "]}"};
    co_fake_kube_on(fx->f, "GET", LIST, &relist);
    co_fake_answer w2 = {.status = 200, .hang = 1};
    co_fake_kube_on(fx->f, "GET", WATCH, &w2);
    assert_co_pass(co_kube_informer_start(fx->inf));
    wait_for(fx, 6, 2, 2, 1, 0);
    co_kube_informer_stop(fx->inf);
    assert_string_equal(fx->log.lines[0], "add a 1");
    assert_string_equal(fx->log.lines[2], "add c 3");
    /* the relist: b vanished, a changed, c did not (no event), e is new */
    char rest[3][96];
    for (int i = 0; i < 3; i++) {
        snprintf(rest[i], sizeof(rest[i]), "%s", fx->log.lines[3 + i]);
    }
    assert_string_equal(rest[0], "delete b 2");
    int saw_a = 0, saw_e = 0;
    for (int i = 1; i < 3; i++) {
        saw_a |= strcmp(rest[i], "update(from 1) a 41") == 0;
        saw_e |= strcmp(rest[i], "add e 42") == 0;
    }
    assert_true(saw_a && saw_e);
    assert_int_equal(log_len(&fx->log), 6);
    assert_int_equal(co_kube_informer_len(fx->inf), 3);
    co_kube_keys keys = {0};
    assert_co_pass(co_kube_informer_index_keys(&keys, fx->inf, "team", "red"));
    assert_int_equal(keys.len, 2);
    co_kube_keys_dispose(&keys);
    co_kube_informer_stats st;
    co_kube_informer_stats_get(&st, fx->inf);
    assert_int_equal(st.gone, 1);
    assert_int_equal(st.lists, 2);
    assert_int_equal(co_fake_kube_count(fx->f, "GET", "watch=1&resourceVersion=50&"), 1);
}

static void test_kube_informer__backs_off_and_recovers(void **state)
{
    fixture *fx = *state;
    list_pages(fx->f, 0);
    co_fake_answer w = {.status = 200, .hang = 1};
    co_fake_kube_on(fx->f, "GET", WATCH, &w);
    /* discovery and the first list page pass, then five calls are refused: more than the
     * client's own retries (3), so the list fails and the informer backs off */
    co_fake_kube_fail_after(fx->f, 2, 5, CO_FAKE_REFUSED, 0);
    assert_co_pass(co_kube_informer_start(fx->inf));
    assert_co_pass(co_kube_informer_wait_synced(fx->inf, 30000));
    wait_for(fx, 3, 1, 1, 0, 1);
    co_kube_informer_stop(fx->inf);
    assert_int_equal(co_fake_kube_nfaults(fx->f), 5);
    assert_int_equal(co_kube_informer_len(fx->inf), 3);
}

static void test_kube_informer__every_fault_at_every_call(void **state)
{
    fixture *fx = *state;
    (void)fx;
    static const struct {
        co_fake_fault fault;
        int http;
    } faults[] = {
        {CO_FAKE_REFUSED, 0}, {CO_FAKE_TRUNCATED, 0}, {CO_FAKE_HTTP, 500},  {CO_FAKE_HTTP, 429},
        {CO_FAKE_HTTP, 409},  {CO_FAKE_HTTP, 410},    {CO_FAKE_TIMEOUT, 0},
    };
    for (size_t k = 0; k < CO_ARRAY_SIZE(faults); k++) {
        for (int n = 0; n < 6; n++) {
            co_fake_kube *f = co_fake_kube_new();
            co_fake_kube_discovery(f);
            co_kube_client *c = co_fake_kube_client(f);
            list_pages(f, 0);
            const char *events[] = {EV("ADDED", CM("d", "11", "blue", ""))};
            co_fake_answer w = {.status = 200, .chunks = events, .nchunks = 1, .hang = 1};
            co_fake_kube_on(f, "GET", WATCH, &w);
            co_fake_kube_fail_after(f, n, 2, faults[k].fault, faults[k].http);
            co_kube_informer *inf = NULL;
            co_kube_informer_options o = {.api_version = "v1",
                                          .kind = "ConfigMap",
                                          .namespace = "ns1",
                                          .page_size = 2,
                                          .backoff_base_ms = 2,
                                          .backoff_cap_ms = 10};
            assert_co_pass(co_kube_informer_new(&inf, c, &o));
            assert_co_pass(co_kube_informer_add_index(inf, "team", by_team, NULL));
            assert_co_pass(co_kube_informer_start(inf));
            /* whatever failed, the informer ends up with the complete, current state */
            int ok = 0;
            for (int i = 0; i < 3000 && !ok; i++) {
                ok = co_kube_informer_len(inf) == 4;
                if (!ok) {
                    co_kube__sleep_ms(10, NULL);
                }
            }
            co_kube_informer_stats st;
            co_kube_informer_stats_get(&st, inf);
            if (!ok) {
                fail_msg("fault %zu after %d calls: %zu objects, last error %s", k, n,
                         co_kube_informer_len(inf), st.last_error);
            }
            co_kube_keys keys = {0};
            assert_co_pass(co_kube_informer_index_keys(&keys, inf, "team", "blue"));
            assert_int_equal(keys.len, 3);
            co_kube_keys_dispose(&keys);
            co_kube_informer_free(inf);
            co_kube_client_free(c);
            co_fake_kube_free(f);
        }
    }
}

static void test_kube_informer__index_errors_are_counted(void **state)
{
    fixture *fx = *state;
    co_fake_kube_json(
        fx->f, "GET", LIST, 200,
        "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[" CM("x", "1", "broken", "") "]}");
    co_fake_answer w = {.status = 200, .hang = 1};
    co_fake_kube_on(fx->f, "GET", WATCH, &w);
    assert_co_pass(co_kube_informer_start(fx->inf));
    assert_co_pass(co_kube_informer_wait_synced(fx->inf, 30000));
    co_kube_informer_stop(fx->inf);
    co_kube_informer_stats st;
    co_kube_informer_stats_get(&st, fx->inf);
    assert_int_equal(st.errors, 1);
    assert_contains(st.last_error, "cannot index team broken");
    /* the object is cached, just not indexed */
    assert_int_equal(co_kube_informer_len(fx->inf), 1);
}

static void test_kube_informer__stop_before_sync(void **state)
{
    fixture *fx = *state;
    co_fake_kube_fail_after(fx->f, 0, 1000000, CO_FAKE_REFUSED, 0);
    assert_co_pass(co_kube_informer_start(fx->inf));
    assert_co_fail_with(CO_ETIMEOUT, co_kube_informer_wait_synced(fx->inf, 100));
    co_kube_informer_stop(fx->inf);
    assert_co_fail_with(CO_ECANCELED, co_kube_informer_wait_synced(fx->inf, 100));
    assert_false(co_kube_informer_has_synced(fx->inf));
}

static void test_kube_informer__options_are_checked(void **state)
{
    fixture *fx = *state;
    co_kube_informer *inf = NULL;
    co_kube_informer_options o = {.kind = "ConfigMap"};
    assert_co_fail_with(CO_EINVALID, co_kube_informer_new(&inf, fx->c, &o));
    o.api_version = "v1";
    o.page_size = -1;
    assert_co_fail_with(CO_EINVALID, co_kube_informer_new(&inf, fx->c, &o));
    assert_co_fail_with(CO_EEXISTS, co_kube_informer_add_index(fx->inf, "team", by_team, NULL));
    struct json_object *obj = json_tokener_parse("{\"metadata\":{\"name\":\"n\"}}");
    char *key = co_kube_informer_key_of(obj);
    assert_string_equal(key, "n");
    free(key);
    json_object_put(obj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kube_informer__list_then_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_informer__deflated_store_reads_back_the_same,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_informer__admit_keeps_refused_objects_out, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_informer__transform_trims_before_caching, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_informer__resumes_from_last_version, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_informer__relists_after_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_informer__backs_off_and_recovers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_informer__every_fault_at_every_call, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_informer__index_errors_are_counted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_informer__stop_before_sync, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_informer__options_are_checked, setup, teardown),
    };
    return cmocka_run_group_tests_name("kube_informer", tests, NULL, NULL);
}
