/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the reference index of the Secret watch (controller/ctl_refwatch.h). */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "controller/ctl_refwatch.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

static co_kube_keys refs_of(const char *json)
{
    struct json_object *c = co_test_json("%s", json);
    co_kube_keys k = {0};
    ctl_refindex_refs_of(&k, c);
    json_object_put(c);
    return k;
}

static bool has(const co_kube_keys *k, const char *key)
{
    for (size_t i = 0; i < k->len; i++) {
        if (strcmp(k->items[i], key) == 0) {
            return true;
        }
    }
    return false;
}

static void test_ctl_refwatch__refs_of_every_reference_once(void **state)
{
    (void)state;
    co_kube_keys k = refs_of(
        "{\"metadata\":{\"namespace\":\"team\",\"name\":\"c\"},\"spec\":{"
        "\"valuesFrom\":[{\"name\":\"vals\"},{\"name\":\"shared\",\"key\":\"x\"},{\"name\":\"\"}],"
        "\"kubeConfig\":{\"secretRef\":{\"name\":\"kc\"}},"
        "\"decryption\":{\"provider\":\"sops\",\"secretRef\":{\"name\":\"keys\"}},"
        "\"postBuild\":{\"substituteFrom\":[{\"name\":\"vars\"},{\"name\":\"shared\"}]},"
        "\"sourceRef\":{\"fluxGitRepository\":{\"name\":\"not-a-secret\"}}}}");
    assert_int_equal(k.len, 5);
    assert_true(has(&k, "Secret/team/vals"));
    assert_true(has(&k, "Secret/team/shared"));
    assert_true(has(&k, "Secret/team/kc"));
    assert_true(has(&k, "Secret/team/keys"));
    assert_true(has(&k, "Secret/team/vars"));
    assert_false(has(&k, "Secret/team/not-a-secret"));
    co_kube_keys_dispose(&k);
}

static void test_ctl_refwatch__refs_of_none(void **state)
{
    (void)state;
    co_kube_keys k = refs_of("{\"metadata\":{\"namespace\":\"team\",\"name\":\"c\"},"
                             "\"spec\":{\"values\":{\"a\":1},\"valuesFrom\":\"bad\"}}");
    assert_int_equal(k.len, 0);
    /* no namespace: no key can be made */
    co_kube_keys n = refs_of("{\"metadata\":{\"name\":\"c\"},\"spec\":{\"valuesFrom\":[{\"name\":"
                             "\"v\"}]}}");
    assert_int_equal(n.len, 0);
    co_kube_keys_dispose(&k);
    co_kube_keys_dispose(&n);
}

static void set(ctl_refindex *idx, const char *comp, const char *a, const char *b)
{
    co_kube_keys k = {0};
    if (a) {
        co_kube_keys_add(&k, a);
    }
    if (b) {
        co_kube_keys_add(&k, b);
    }
    ctl_refindex_set(idx, comp, &k);
    co_kube_keys_dispose(&k);
}

static void test_ctl_refwatch__index_follows_changes(void **state)
{
    (void)state;
    ctl_refindex *idx = ctl_refindex_new();
    set(idx, "ns/b", "Secret/ns/s1", "Secret/ns/s2");
    set(idx, "ns/a", "Secret/ns/s1", NULL);
    assert_int_equal(ctl_refindex_len(idx), 2);
    co_kube_keys r = {0};
    ctl_refindex_referrers(&r, idx, "Secret/ns/s1");
    assert_int_equal(r.len, 2);
    assert_string_equal(r.items[0], "ns/a"); /* sorted */
    assert_string_equal(r.items[1], "ns/b");
    co_kube_keys_dispose(&r);

    /* b no longer names s2: nobody does */
    set(idx, "ns/b", "Secret/ns/s1", NULL);
    assert_false(ctl_refindex_referenced(idx, "Secret/ns/s2"));
    assert_true(ctl_refindex_referenced(idx, "Secret/ns/s1"));
    assert_int_equal(ctl_refindex_len(idx), 1);

    /* an empty list and a removal forget the Component */
    set(idx, "ns/a", NULL, NULL);
    ctl_refindex_referrers(&r, idx, "Secret/ns/s1");
    assert_int_equal(r.len, 1);
    assert_string_equal(r.items[0], "ns/b");
    co_kube_keys_dispose(&r);
    ctl_refindex_remove(idx, "ns/b");
    ctl_refindex_remove(idx, "ns/never");
    assert_int_equal(ctl_refindex_len(idx), 0);
    assert_false(ctl_refindex_referenced(idx, "Secret/ns/s1"));
    ctl_refindex_referrers(&r, idx, "Secret/ns/s1");
    assert_int_equal(r.len, 0);
    ctl_refindex_free(idx);
    ctl_refindex_free(NULL);
}

/* The index is proportional to the references: many Components naming one Secret are one key,
 * and setting the same references again changes nothing. */
static void test_ctl_refwatch__index_size_follows_references(void **state)
{
    (void)state;
    ctl_refindex *idx = ctl_refindex_new();
    char comp[64];
    for (int i = 0; i < 200; i++) {
        snprintf(comp, sizeof(comp), "ns/c%03d", i);
        set(idx, comp, "Secret/ns/common", NULL);
        set(idx, comp, "Secret/ns/common", NULL);
    }
    assert_int_equal(ctl_refindex_len(idx), 1);
    co_kube_keys r = {0};
    ctl_refindex_referrers(&r, idx, "Secret/ns/common");
    assert_int_equal(r.len, 200);
    co_kube_keys_dispose(&r);
    for (int i = 0; i < 200; i++) {
        snprintf(comp, sizeof(comp), "ns/c%03d", i);
        ctl_refindex_remove(idx, comp);
    }
    assert_int_equal(ctl_refindex_len(idx), 0);
    ctl_refindex_free(idx);
}

static void enqueue_nothing(void *ctx, const char *component)
{
    (void)ctx;
    (void)component;
}

/* Without any reference the watch makes no request: its starter waits, and stopping it ends. */
static void test_ctl_refwatch__watch_idles_without_references(void **state)
{
    (void)state;
    ctl_refwatch *rw = NULL;
    ctl_refwatch_options o = {0};
    assert_int_equal(ctl_refwatch_new(&rw, &o), CO_EINVALID);
    co_error_clear();
    o.client = (co_kube_client *)&o; /* never used: no reference, no request */
    o.enqueue = enqueue_nothing;
    assert_co_pass(ctl_refwatch_new(&rw, &o));
    assert_co_pass(ctl_refwatch_start(rw));
    struct json_object *c =
        co_test_json("{\"metadata\":{\"namespace\":\"n\",\"name\":\"c\"},\"spec\":{}}");
    ctl_refwatch_component_set(rw, c);
    assert_false(ctl_refwatch_wait_watching(rw, 100));
    ctl_refwatch_stats st;
    ctl_refwatch_stats_get(&st, rw);
    assert_false(st.watching);
    assert_int_equal(st.referenced, 0);
    json_object_put(c);
    ctl_refwatch_free(rw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_refwatch__refs_of_every_reference_once),
        cmocka_unit_test(test_ctl_refwatch__refs_of_none),
        cmocka_unit_test(test_ctl_refwatch__index_follows_changes),
        cmocka_unit_test(test_ctl_refwatch__index_size_follows_references),
        cmocka_unit_test(test_ctl_refwatch__watch_idles_without_references),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
