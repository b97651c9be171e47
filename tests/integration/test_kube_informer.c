/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watches and informers against the real kube-apiserver: events and indexes follow changes;
 * the informer keeps going across an apiserver restart and relists when the restart made its
 * resourceVersion too old (410); a resourceVersion older than the watch cache is refused with
 * CO_EGONE, and so is a list continue token after etcd compaction. Also Events with
 * de-duplication. The restart and compaction tests use a private control plane.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_event.h"
#include "co/kube/kube_informer.h"
#include "co/kube/kube_watch.h"
#include "shared/src/kube/kube_int.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

static co_kube_client *admin;
static char *ns;

static int group_setup(void **state)
{
    (void)state;
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ns = co_test_kube_namespace(admin, "co-informer-");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (co_kube_delete(NULL, admin, &(co_kube_ref){"v1", "Namespace", NULL, ns}, NULL) < 0) {
        co_error_clear();
    }
    free(ns);
    co_kube_client_free(admin);
    return 0;
}

static void put_configmap(co_kube_client *c,
                          const char *nspace,
                          const char *name,
                          const char *dep,
                          const char *value)
{
    struct json_object *cm = co_test_json(
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
        "\"namespace\":\"%s\",\"labels\":{\"suite\":\"informer\"},\"annotations\":{\"deps\":"
        "\"%s\"}},\"data\":{\"v\":\"%s\"}}",
        name, nspace, dep, value);
    co_kube_write_options wo = {.field_manager = "co-test", .force = 1};
    assert_co_pass(co_kube_apply(NULL, c, cm, &wo));
    json_object_put(cm);
}

/* Index: every dependency named in annotation "deps" (comma-separated "ns/name"). */
static int by_dependency(co_kube_keys *out, const struct json_object *obj, void *payload)
{
    (void)payload;
    const char *deps = co_json_str(obj, "metadata", "annotations", "deps", NULL);
    if (!deps || !deps[0]) {
        return 0;
    }
    char *copy = co_xstrdup(deps), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        co_kube_keys_add(out, t);
    }
    free(copy);
    return 0;
}

typedef struct counts {
    pthread_mutex_t lock;
    int adds, updates, deletes;
} counts;

static void count_add(const struct json_object *obj, void *payload)
{
    (void)obj;
    counts *c = payload;
    pthread_mutex_lock(&c->lock);
    c->adds++;
    pthread_mutex_unlock(&c->lock);
}

static void count_update(const struct json_object *o, const struct json_object *n, void *payload)
{
    (void)o;
    (void)n;
    counts *c = payload;
    pthread_mutex_lock(&c->lock);
    c->updates++;
    pthread_mutex_unlock(&c->lock);
}

static void count_delete(const struct json_object *obj, void *payload)
{
    (void)obj;
    counts *c = payload;
    pthread_mutex_lock(&c->lock);
    c->deletes++;
    pthread_mutex_unlock(&c->lock);
}

typedef struct cached_value {
    co_kube_informer *inf;
    const char *ns, *name, *value; /* value NULL: must be absent */
} cached_value;

static int has_value(void *payload)
{
    cached_value *cv = payload;
    struct json_object *obj = NULL;
    co_error_clear();
    int rc = co_kube_informer_get(&obj, cv->inf, cv->ns, cv->name);
    if (rc < 0) {
        return cv->value == NULL;
    }
    const char *v = co_json_str(obj, "data", "v", NULL);
    int ok = cv->value && v && strcmp(v, cv->value) == 0;
    json_object_put(obj);
    return ok;
}

static void
expect_cached(co_kube_informer *inf, const char *nspace, const char *name, const char *value)
{
    cached_value cv = {inf, nspace, name, value};
    if (!co_test_poll(has_value, &cv, 60000)) {
        co_kube_informer_stats st;
        co_kube_informer_stats_get(&st, inf);
        fail_msg("%s/%s never became %s in the cache (lists %lu watches %lu gone %lu errors "
                 "%lu: %s)",
                 nspace, name, value ? value : "absent", st.lists, st.watches, st.gone, st.errors,
                 st.last_error);
    }
}

static co_kube_informer *start_informer(co_kube_client *c, const char *nspace, counts *cnt)
{
    co_kube_informer *inf = NULL;
    co_kube_informer_options o = {.api_version = "v1",
                                  .kind = "ConfigMap",
                                  .namespace = nspace,
                                  .label_selector = "suite=informer",
                                  .page_size = 2,
                                  .backoff_base_ms = 200,
                                  .backoff_cap_ms = 2000,
                                  .strip_managed_fields = 1};
    assert_co_pass(co_kube_informer_new(&inf, c, &o));
    assert_co_pass(co_kube_informer_add_index(inf, "dependency", by_dependency, NULL));
    if (cnt) {
        co_kube_handlers h = {count_add, count_update, count_delete, cnt};
        assert_co_pass(co_kube_informer_add_handlers(inf, &h));
    }
    assert_co_pass(co_kube_informer_start(inf));
    assert_co_pass(co_kube_informer_wait_synced(inf, 120000));
    return inf;
}

static void test_kube_informer__follows_changes_with_indexes(void **state)
{
    (void)state;
    put_configmap(admin, ns, "a", "", "1");
    put_configmap(admin, ns, "b", "x/a", "1");
    put_configmap(admin, ns, "c", "x/a,x/b", "1");
    counts cnt = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    co_kube_informer *inf = start_informer(admin, ns, &cnt);
    assert_int_equal(co_kube_informer_len(inf), 3);
    co_kube_keys keys = {0};
    assert_co_pass(co_kube_informer_index_keys(&keys, inf, "dependency", "x/a"));
    assert_int_equal(keys.len, 2);
    co_kube_keys_dispose(&keys);

    put_configmap(admin, ns, "d", "x/b", "1");
    put_configmap(admin, ns, "a", "", "2");
    assert_co_pass(co_kube_delete(NULL, admin, &(co_kube_ref){"v1", "ConfigMap", ns, "c"}, NULL));
    expect_cached(inf, ns, "d", "1");
    expect_cached(inf, ns, "a", "2");
    expect_cached(inf, ns, "c", NULL);
    assert_co_pass(co_kube_informer_index_keys(&keys, inf, "dependency", "x/b"));
    assert_int_equal(keys.len, 1);
    char *want = co_xasprintf("%s/d", ns);
    assert_string_equal(keys.items[0], want);
    free(want);
    co_kube_keys_dispose(&keys);
    pthread_mutex_lock(&cnt.lock);
    assert_int_equal(cnt.adds, 4);
    assert_true(cnt.updates >= 1);
    assert_int_equal(cnt.deletes, 1);
    pthread_mutex_unlock(&cnt.lock);
    co_kube_informer_stats st;
    co_kube_informer_stats_get(&st, inf);
    assert_int_equal(st.lists, 1);
    assert_int_equal(st.gone, 0);
    co_kube_informer_free(inf);
}

/* A string field for assert_string_equal(), which cannot take NULL. */
static const char *or_absent(const char *s)
{
    return s ? s : "(absent)";
}

/* The API server leaves the type out of a built-in type's list items; the informer's copy of an
 * object it listed (one that existed before it started) carries it, like one it was sent by the
 * watch. */
static void test_kube_informer__listed_objects_carry_their_type(void **state)
{
    (void)state;
    put_configmap(admin, ns, "listed", "", "1");
    /* what makes this test needed: were the server to send the type, it would prove nothing.
     * The list is read as a plain request, past the list calls, which give items their type. */
    char *path =
        co_xasprintf("/api/v1/namespaces/%s/configmaps?labelSelector=suite%%3Dinformer", ns);
    struct json_object *list = NULL;
    assert_co_pass(co_kube_request_json(&list, admin, "GET", path, NULL));
    struct json_object *first = json_object_array_get_idx(co_json_get(list, "items", NULL), 0);
    assert_non_null(first);
    assert_null(co_json_get(first, "kind", NULL));
    json_object_put(list);
    free(path);

    co_kube_informer *inf = start_informer(admin, ns, NULL);
    struct json_object *obj = NULL;
    assert_co_pass(co_kube_informer_get(&obj, inf, ns, "listed"));
    assert_string_equal(or_absent(co_json_str(obj, "apiVersion", NULL)), "v1");
    assert_string_equal(or_absent(co_json_str(obj, "kind", NULL)), "ConfigMap");
    json_object_put(obj);

    put_configmap(admin, ns, "watched", "", "1");
    expect_cached(inf, ns, "watched", "1");
    assert_co_pass(co_kube_informer_get(&obj, inf, ns, "watched"));
    assert_string_equal(or_absent(co_json_str(obj, "kind", NULL)), "ConfigMap");
    json_object_put(obj);
    co_kube_informer_free(inf);
}

static void test_kube_informer__events_are_deduplicated(void **state)
{
    (void)state;
    put_configmap(admin, ns, "evented", "", "1");
    struct json_object *obj = NULL;
    assert_co_pass(
        co_kube_get(&obj, admin, &(co_kube_ref){"v1", "ConfigMap", ns, "evented"}, NULL));
    co_kube_recorder *rec = NULL;
    co_kube_recorder_options o = {.component = "co-test", .instance = "host-1"};
    assert_co_pass(co_kube_recorder_new(&rec, admin, &o));
    co_kube_event(rec, obj, "Warning", "Broken", "it broke %d", 1);
    co_kube_event(rec, obj, "Warning", "Broken", "it broke %d", 1);
    co_kube_event(rec, obj, "Warning", "Broken", "it broke %d", 1);
    co_kube_event(rec, obj, "Normal", "Fixed", "it is fixed");
    assert_co_pass(co_kube_recorder_flush(rec, 60000));
    co_kube_recorder_stats st;
    co_kube_recorder_stats_get(&st, rec);
    assert_int_equal(st.created, 2);
    assert_int_equal(st.counted, 2);
    assert_int_equal(st.failed, 0);
    co_kube_recorder_free(rec);

    struct json_object *list = NULL;
    co_kube_list_options lo = {.field_selector = "involvedObject.name=evented"};
    assert_co_pass(co_kube_list_all(&list, admin, &(co_kube_ref){"v1", "Event", ns, NULL}, &lo));
    struct json_object *items = NULL;
    assert_true(json_object_object_get_ex(list, "items", &items));
    assert_int_equal(json_object_array_length(items), 2);
    int saw_broken = 0;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        struct json_object *ev = json_object_array_get_idx(items, i);
        if (strcmp(co_json_str(ev, "reason", NULL), "Broken") == 0) {
            struct json_object *cnt = NULL;
            assert_true(json_object_object_get_ex(ev, "count", &cnt));
            assert_int_equal(json_object_get_int(cnt), 3);
            assert_string_equal(co_json_str(ev, "type", NULL), "Warning");
            assert_string_equal(co_json_str(ev, "involvedObject", "uid", NULL),
                                co_json_str(obj, "metadata", "uid", NULL));
            saw_broken = 1;
        }
    }
    assert_true(saw_broken);
    json_object_put(list);
    json_object_put(obj);
}

/* --- a private control plane: restarts and compaction --------------------------------------- */

static int ignore_event(co_kube_event_type type, struct json_object *obj, void *payload)
{
    (void)type;
    (void)obj;
    (void)payload;
    return 0;
}

static void test_kube_informer__survives_apiserver_restarts_and_relists_after_gone(void **state)
{
    (void)state;
    co_test_controlplane cp = {0};
    co_test_controlplane_start(&cp);
    co_kube_client *c = co_test_kube_client_for(cp.kubeconfig);
    char *pns = co_test_kube_namespace(c, "restart-");
    char *other = co_test_kube_namespace(c, "other-");
    put_configmap(c, pns, "before", "", "1");
    co_kube_informer *inf = start_informer(c, pns, NULL);
    assert_int_equal(co_kube_informer_len(inf), 1);

    /* 1: a restart; the informer resumes or relists by itself and sees later changes */
    assert_int_equal(co_test_controlplane_cmd(&cp, "restart"), 0);
    put_configmap(c, pns, "after-restart", "", "1");
    expect_cached(inf, pns, "after-restart", "1");
    put_configmap(c, pns, "before", "", "2");
    expect_cached(inf, pns, "before", "2");
    co_kube_informer_stats st;
    co_kube_informer_stats_get(&st, inf);
    assert_true(st.watches >= 2);

    /* 2: history moves on elsewhere while the apiserver is down; when it comes back its watch
     * cache starts after the informer's resourceVersion: 410, and the informer lists again */
    unsigned long gone_before = st.gone, lists_before = st.lists;
    put_configmap(c, other, "elsewhere", "", "1");
    put_configmap(c, other, "elsewhere", "", "2");
    assert_int_equal(co_test_controlplane_cmd(&cp, "apiserver-stop"), 0);
    assert_int_equal(co_test_controlplane_cmd(&cp, "apiserver-start"), 0);
    put_configmap(c, pns, "after-gone", "", "1");
    expect_cached(inf, pns, "after-gone", "1");
    co_kube_informer_stats_get(&st, inf);
    assert_true(st.gone > gone_before);
    assert_true(st.lists > lists_before);
    assert_int_equal(co_kube_informer_len(inf), 3);

    /* the restarted watch cache starts after revision 1: a watch from there is refused */
    co_kube_watch_options wo = {.resource_version = "1", .timeout_s = 30};
    assert_co_fail_with(CO_EGONE, co_kube_watch(c, &(co_kube_ref){"v1", "ConfigMap", pns, NULL},
                                                &wo, ignore_event, NULL));
    assert_int_equal(co_kube_status_last()->code, 410);
    assert_contains(co_error_last(), "too old resource version");

    /* 3: an expired list continue token after etcd compaction */
    co_kube_list_options lo = {.limit = 1};
    struct json_object *page = NULL;
    assert_co_pass(co_kube_list(&page, c, &(co_kube_ref){"v1", "ConfigMap", pns, NULL}, &lo));
    char *cont = co_xstrdup(co_json_str(page, "metadata", "continue", NULL));
    json_object_put(page);
    put_configmap(c, other, "elsewhere", "", "3");
    assert_int_equal(co_test_controlplane_cmd(&cp, "compact"), 0);
    lo.continue_token = cont;
    assert_co_fail_with(CO_EGONE,
                        co_kube_list(&page, c, &(co_kube_ref){"v1", "ConfigMap", pns, NULL}, &lo));
    assert_int_equal(co_kube_status_last()->code, 410);
    free(cont);

    co_kube_informer_free(inf);
    free(pns);
    free(other);
    co_kube_client_free(c);
    co_test_controlplane_stop(&cp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_informer__follows_changes_with_indexes),
        cmocka_unit_test(test_kube_informer__listed_objects_carry_their_type),
        cmocka_unit_test(test_kube_informer__events_are_deduplicated),
        cmocka_unit_test(test_kube_informer__survives_apiserver_restarts_and_relists_after_gone),
    };
    return cmocka_run_group_tests_name("kube_informer_integration", tests, group_setup,
                                       group_teardown);
}
