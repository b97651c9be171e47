/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the controller's keyed work queue, driven by a fake clock. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "co/util/metrics.h"
#include "controller/ctl_queue.h"
#include "tests/support/test_support.h"

#define MS 1000000LL

static int64_t fake_now;
static int64_t clock_fn(void)
{
    return fake_now;
}
static uint64_t no_jitter(void)
{
    return 0;
}

static ctl_queue *new_queue(double qps, int burst)
{
    ctl_queue_options o = CTL_QUEUE_OPTIONS_INIT;
    o.now = clock_fn;
    o.random = no_jitter;
    o.qps = qps;
    o.burst = burst;
    fake_now = 1000 * MS;
    return ctl_queue_new(&o);
}

static void expect_key(ctl_queue *q, const char *want)
{
    char *key = NULL;
    assert_co_pass(ctl_queue_try_get(q, &key));
    assert_string_equal(key, want);
    free(key);
}

static void expect_empty(ctl_queue *q)
{
    char *key = NULL;
    int rc = ctl_queue_try_get(q, &key);
    if (rc != CO_ENOTFOUND) {
        fail_msg("expected an empty queue, got rc=%d key=%s", rc, key ? key : "(null)");
    }
}

static void test_ctl_queue__fifo_and_dedup(void **state)
{
    (void)state;
    ctl_queue *q = new_queue(10, 100);
    ctl_queue_add(q, "ns/a");
    ctl_queue_add(q, "ns/b");
    ctl_queue_add(q, "ns/a");
    ctl_queue_stats st;
    ctl_queue_get_stats(q, &st);
    assert_int_equal(st.depth, 2);
    assert_int_equal(st.adds_total, 2);
    expect_key(q, "ns/a");
    expect_key(q, "ns/b");
    expect_empty(q);
    ctl_queue_done(q, "ns/a");
    ctl_queue_done(q, "ns/b");
    expect_empty(q);
    ctl_queue_free(q);
}

static void test_ctl_queue__key_is_never_processed_twice_at_once(void **state)
{
    (void)state;
    ctl_queue *q = new_queue(10, 100);
    ctl_queue_add(q, "k");
    expect_key(q, "k");
    /* re-added while a worker holds it: not handed out again until done */
    ctl_queue_add(q, "k");
    ctl_queue_add(q, "k");
    expect_empty(q);
    ctl_queue_stats st;
    ctl_queue_get_stats(q, &st);
    assert_int_equal(st.processing, 1);
    assert_int_equal(st.depth, 0);
    ctl_queue_done(q, "k");
    expect_key(q, "k");
    ctl_queue_done(q, "k");
    expect_empty(q);
    ctl_queue_free(q);
}

static void test_ctl_queue__add_after_waits_and_earliest_wins(void **state)
{
    (void)state;
    ctl_queue *q = new_queue(10, 100);
    ctl_queue_add_after(q, "k", 100 * MS);
    ctl_queue_add_after(q, "k", 300 * MS); /* later: ignored */
    expect_empty(q);
    assert_int_equal(ctl_queue_next_due_in(q), 100 * MS);
    ctl_queue_add_after(q, "k", 50 * MS); /* earlier: wins */
    assert_int_equal(ctl_queue_next_due_in(q), 50 * MS);
    fake_now += 49 * MS;
    expect_empty(q);
    fake_now += 1 * MS;
    expect_key(q, "k");
    ctl_queue_done(q, "k");
    fake_now += 1000 * MS;
    expect_empty(q); /* the superseded delays left nothing behind */
    assert_int_equal(ctl_queue_next_due_in(q), INT64_MAX);
    ctl_queue_free(q);
}

static void test_ctl_queue__delayed_and_immediate_merge(void **state)
{
    (void)state;
    ctl_queue *q = new_queue(10, 100);
    ctl_queue_add_after(q, "k", 10 * MS);
    ctl_queue_add(q, "k");
    expect_key(q, "k");
    /* the pending delay fires while the key is processed: deferred until done */
    fake_now += 20 * MS;
    expect_empty(q);
    ctl_queue_done(q, "k");
    expect_key(q, "k");
    ctl_queue_done(q, "k");
    ctl_queue_free(q);
}

static void test_ctl_queue__per_key_exponential_backoff(void **state)
{
    (void)state;
    ctl_queue *q = new_queue(0, 1); /* no global bucket */
    int64_t expected[] = {5 * MS, 10 * MS, 20 * MS, 40 * MS, 80 * MS};
    for (size_t i = 0; i < CO_ARRAY_SIZE(expected); i++) {
        ctl_queue_add_rate_limited(q, "k");
        assert_int_equal(ctl_queue_next_due_in(q), expected[i]);
        fake_now += expected[i];
        expect_key(q, "k");
        ctl_queue_done(q, "k");
    }
    assert_int_equal(ctl_queue_num_requeues(q, "k"), 5);
    ctl_queue_forget(q, "k");
    assert_int_equal(ctl_queue_num_requeues(q, "k"), 0);
    ctl_queue_add_rate_limited(q, "k");
    assert_int_equal(ctl_queue_next_due_in(q), 5 * MS);
    ctl_queue_free(q);
}

static void test_ctl_queue__backoff_is_capped(void **state)
{
    (void)state;
    ctl_queue_options o = CTL_QUEUE_OPTIONS_INIT;
    o.now = clock_fn;
    o.random = no_jitter;
    o.qps = 0;
    fake_now = 0;
    ctl_queue *q = ctl_queue_new(&o);
    for (int i = 0; i < 80; i++) {
        ctl_queue_add_rate_limited(q, "k");
        fake_now += 2000000 * MS;
        char *key = NULL;
        assert_co_pass(ctl_queue_try_get(q, &key));
        ctl_queue_done(q, key);
        free(key);
    }
    ctl_queue_add_rate_limited(q, "k");
    assert_int_equal(ctl_queue_next_due_in(q), 1000000 * MS); /* 1000 s */
    ctl_queue_free(q);
}

static uint64_t max_jitter(void)
{
    return 999;
}

static void test_ctl_queue__jitter_adds_at_most_ten_percent(void **state)
{
    (void)state;
    ctl_queue_options o = CTL_QUEUE_OPTIONS_INIT;
    o.now = clock_fn;
    o.random = max_jitter;
    o.qps = 0;
    fake_now = 0;
    ctl_queue *q = ctl_queue_new(&o);
    ctl_queue_add_rate_limited(q, "k");
    int64_t d = ctl_queue_next_due_in(q);
    assert_true(d > 5 * MS);
    assert_true(d <= 5 * MS + 5 * MS / 10);
    ctl_queue_free(q);
}

static void test_ctl_queue__global_token_bucket(void **state)
{
    (void)state;
    ctl_queue *q = new_queue(10, 2); /* 10/s, burst 2 */
    ctl_queue_add_rate_limited(q, "a");
    ctl_queue_add_rate_limited(q, "b");
    assert_int_equal(ctl_queue_next_due_in(q), 5 * MS); /* per-key delay, bucket had tokens */
    ctl_queue_add_rate_limited(q, "c");                 /* bucket empty: wait one token */
    fake_now += 5 * MS;
    expect_key(q, "a");
    expect_key(q, "b");
    expect_empty(q);
    assert_int_equal(ctl_queue_next_due_in(q), 95 * MS);
    fake_now += 95 * MS;
    expect_key(q, "c");
    ctl_queue_free(q);
}

/* ---- threads ----------------------------------------------------------------------------------
 */

static void *blocking_getter(void *arg)
{
    ctl_queue *q = arg;
    char *key = NULL;
    int rc = ctl_queue_get(q, &key);
    if (rc == 0) {
        ctl_queue_done(q, key);
        free(key);
        return (void *)1;
    }
    return (void *)(intptr_t)(rc == CO_ECANCELED ? 2 : 3);
}

static void test_ctl_queue__shutdown_wakes_blocked_workers(void **state)
{
    (void)state;
    ctl_queue *q = ctl_queue_new(NULL);
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, blocking_getter, q), 0);
    }
    ctl_queue_add(q, "one");
    ctl_queue_shutdown(q);
    int got = 0, canceled = 0;
    for (int i = 0; i < 3; i++) {
        void *res = NULL;
        pthread_join(t[i], &res);
        got += (intptr_t)res == 1;
        canceled += (intptr_t)res == 2;
    }
    /* the ready key may be handed out before or after the shutdown; never lost or doubled */
    assert_true(got <= 1);
    assert_int_equal(got + canceled, 3);
    ctl_queue_add(q, "after");
    char *key = NULL;
    assert_co_fail_with(CO_ECANCELED, ctl_queue_get(q, &key));
    ctl_queue_free(q);
}

static void test_ctl_queue__blocking_get_wakes_for_delayed_key(void **state)
{
    (void)state;
    ctl_queue *q = ctl_queue_new(NULL); /* real clock */
    ctl_queue_add_after(q, "later", 20 * MS);
    char *key = NULL;
    assert_co_pass(ctl_queue_get(q, &key));
    assert_string_equal(key, "later");
    ctl_queue_done(q, key);
    free(key);
    ctl_queue_free(q);
}

#define NKEYS    50
#define NWORKERS 6
static atomic_int busy[NKEYS];
static atomic_int processed[NKEYS];
static atomic_int violations;

static void *stress_worker(void *arg)
{
    ctl_queue *q = arg;
    char *key = NULL;
    while (ctl_queue_get(q, &key) == 0) {
        int k = (int)strtol(key, NULL, 10);
        if (atomic_fetch_add(&busy[k], 1) != 0) {
            atomic_fetch_add(&violations, 1);
        }
        for (volatile int spin = 0; spin < 2000; spin++) {
        }
        atomic_fetch_sub(&busy[k], 1);
        atomic_fetch_add(&processed[k], 1);
        ctl_queue_done(q, key);
        free(key);
    }
    return NULL;
}

static void *stress_producer(void *arg)
{
    ctl_queue *q = arg;
    char key[16];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof(key), "%d", i % NKEYS);
        if (i % 7 == 0) {
            ctl_queue_add_after(q, key, (int64_t)(i % 3) * 100000);
        } else {
            ctl_queue_add(q, key);
        }
    }
    return NULL;
}

static void test_ctl_queue__concurrent_workers_keep_keys_exclusive(void **state)
{
    (void)state;
    ctl_queue *q = ctl_queue_new(NULL);
    pthread_t w[NWORKERS], p[2];
    for (int i = 0; i < NWORKERS; i++) {
        pthread_create(&w[i], NULL, stress_worker, q);
    }
    for (int i = 0; i < 2; i++) {
        pthread_create(&p[i], NULL, stress_producer, q);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(p[i], NULL);
    }
    /* wait until every key has been processed after the producers stopped */
    for (;;) {
        ctl_queue_stats st;
        ctl_queue_get_stats(q, &st);
        if (st.depth == 0 && st.waiting == 0 && st.processing == 0) {
            break;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    ctl_queue_shutdown(q);
    for (int i = 0; i < NWORKERS; i++) {
        pthread_join(w[i], NULL);
    }
    assert_int_equal(atomic_load(&violations), 0);
    for (int k = 0; k < NKEYS; k++) {
        assert_true(atomic_load(&processed[k]) >= 1);
    }
    ctl_queue_free(q);
}

/* The figures behind controller-runtime's workqueue metrics: waiting and working time per key,
 * retries as every add with a delay, and the work in progress. */
static void test_ctl_queue__metrics_figures(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    const double buckets[] = {1, 10};
    co_metric *wait = co_metrics_histogram(reg, "wait", "", NULL, 0, buckets, 2);
    co_metric *work = co_metrics_histogram(reg, "work", "", NULL, 0, buckets, 2);
    ctl_queue_options o = CTL_QUEUE_OPTIONS_INIT;
    o.now = clock_fn;
    o.random = no_jitter;
    o.queue_duration = co_metric_series(wait, NULL);
    o.work_duration = co_metric_series(work, NULL);
    fake_now = 1000 * MS;
    ctl_queue *q = ctl_queue_new(&o);

    ctl_queue_add(q, "a");
    fake_now += 2000 * MS;
    expect_key(q, "a");
    fake_now += 3000 * MS;
    ctl_queue_stats st;
    ctl_queue_get_stats(q, &st);
    assert_int_equal(st.processing_total_ns, 3000 * MS);
    assert_int_equal(st.oldest_processing_ns, 3000 * MS);
    ctl_queue_done(q, "a");
    assert_true(co_metric_value(wait, NULL) == 1.0);
    assert_true(co_metric_value(work, NULL) == 1.0);
    co_buf out = CO_BUF_INIT(1 << 16);
    assert_co_pass(co_metrics_render(&out, reg));
    assert_contains(co_buf_cstr(&out), "wait_sum 2\n");
    assert_contains(co_buf_cstr(&out), "work_sum 3\n");
    co_buf_dispose(&out);

    ctl_queue_add_after(q, "b", 10 * MS);
    ctl_queue_add_after(q, "c", 0);
    ctl_queue_add_rate_limited(q, "d");
    ctl_queue_get_stats(q, &st);
    assert_int_equal(st.retries_total, 2);
    assert_int_equal(st.adds_total, 2);
    ctl_queue_free(q);
    co_metrics_free(reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_queue__fifo_and_dedup),
        cmocka_unit_test(test_ctl_queue__key_is_never_processed_twice_at_once),
        cmocka_unit_test(test_ctl_queue__add_after_waits_and_earliest_wins),
        cmocka_unit_test(test_ctl_queue__delayed_and_immediate_merge),
        cmocka_unit_test(test_ctl_queue__per_key_exponential_backoff),
        cmocka_unit_test(test_ctl_queue__backoff_is_capped),
        cmocka_unit_test(test_ctl_queue__jitter_adds_at_most_ten_percent),
        cmocka_unit_test(test_ctl_queue__global_token_bucket),
        cmocka_unit_test(test_ctl_queue__shutdown_wakes_blocked_workers),
        cmocka_unit_test(test_ctl_queue__blocking_get_wakes_for_delayed_key),
        cmocka_unit_test(test_ctl_queue__concurrent_workers_keep_keys_exclusive),
        cmocka_unit_test(test_ctl_queue__metrics_figures),
    };
    return cmocka_run_group_tests_name("ctl_queue", tests, NULL, NULL);
}
