/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the asynchronous sender and the monotonic deadlines it waits on. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "co/util/error.h"
#include "co/util/sender.h"
#include "co/util/thread.h"
#include "tests/support/test_support.h"

#define MAX_ITEMS 256

/* What the callbacks saw. `gate` holds deliveries back until opened (or the sender stops). */
typedef struct log {
    pthread_mutex_t mu;
    int delivered[MAX_ITEMS];
    size_t ndelivered;
    int dropped[MAX_ITEMS];
    size_t ndropped;
    atomic_bool gate_open;
    atomic_int in_delivery;
    long sleep_ms;          /* > 0: each delivery first sleeps this long */
    atomic_int slept_fully; /* -1 before any sleep; else what co_sender_sleep() returned */
} log_t;

static void log_init(log_t *l, bool gate_open)
{
    memset(l, 0, sizeof(*l));
    pthread_mutex_init(&l->mu, NULL);
    atomic_init(&l->gate_open, gate_open);
    atomic_init(&l->in_delivery, 0);
    atomic_init(&l->slept_fully, -1);
}

static void deliver(void *ctx, co_sender *s, void *item)
{
    log_t *l = ctx;
    atomic_fetch_add(&l->in_delivery, 1);
    if (l->sleep_ms > 0) {
        atomic_store(&l->slept_fully, co_sender_sleep(s, l->sleep_ms) ? 1 : 0);
    }
    while (!atomic_load(&l->gate_open) && !co_sender_stopping(s)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&l->mu);
    l->delivered[l->ndelivered++] = *(int *)item;
    pthread_mutex_unlock(&l->mu);
    free(item);
}

static void drop(void *ctx, void *item)
{
    log_t *l = ctx;
    pthread_mutex_lock(&l->mu);
    l->dropped[l->ndropped++] = *(int *)item;
    pthread_mutex_unlock(&l->mu);
    free(item);
}

static int *boxed(int v)
{
    int *p = co_xmalloc(sizeof(int));
    *p = v;
    return p;
}

static co_sender *start(log_t *l, size_t queue_len)
{
    co_sender_options o = {"test sender", queue_len, deliver, drop, l};
    co_sender *s = NULL;
    assert_co_pass(co_sender_new(&s, &o));
    return s;
}

/* Waits (bounded) until the sender's thread has taken an item into delivery. */
static void wait_in_delivery(log_t *l)
{
    for (int i = 0; i < 10000 && atomic_load(&l->in_delivery) == 0; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    assert_true(atomic_load(&l->in_delivery) > 0);
}

static void test_sender__delivers_every_item_in_order(void **state)
{
    (void)state;
    log_t l;
    log_init(&l, true);
    co_sender *s = start(&l, 8);
    int pushed = 0;
    while (pushed < 100) {
        int *item = boxed(pushed);
        if (co_sender_push(s, item)) {
            pushed++;
        } else {
            free(item); /* refused: still ours; wait for room */
            assert_co_pass(co_sender_flush(s, 10000));
        }
    }
    assert_co_pass(co_sender_flush(s, 10000));
    assert_int_equal(l.ndelivered, 100);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(l.delivered[i], i);
    }
    assert_int_equal(co_sender_free(s, 1000), 0);
    assert_int_equal(l.ndropped, 0);
}

static void test_sender__full_queue_refuses_and_free_drops_the_rest(void **state)
{
    (void)state;
    log_t l;
    log_init(&l, false);
    co_sender *s = start(&l, 3);
    assert_true(co_sender_push(s, boxed(0)));
    wait_in_delivery(&l); /* item 0 is held at the gate: the queue is empty again */
    for (int i = 1; i <= 3; i++) {
        assert_true(co_sender_push(s, boxed(i)));
    }
    int *extra = boxed(4);
    assert_false(co_sender_push(s, extra)); /* full: the item stays the caller's */
    free(extra);

    assert_co_fail_with(CO_ETIMEOUT, co_sender_flush(s, 20));
    assert_contains(co_error_last(), "test sender: 4 items still queued");
    co_error_clear();

    /* free: the grace period passes, the held delivery sees the stop, items 1-3 are dropped */
    assert_int_equal(co_sender_free(s, 20), 3);
    assert_int_equal(l.ndelivered, 1);
    assert_int_equal(l.delivered[0], 0);
    assert_int_equal(l.ndropped, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(l.dropped[i], i + 1);
    }
}

static void test_sender__stop_cuts_a_sleep_short(void **state)
{
    (void)state;
    log_t l;
    log_init(&l, true);
    l.sleep_ms = 600000; /* ten minutes: the test would hang if the stop did not end it */
    co_sender *s = start(&l, 4);
    assert_true(co_sender_push(s, boxed(7)));
    wait_in_delivery(&l);
    assert_int_equal(co_sender_free(s, 0), 0);
    assert_int_equal(atomic_load(&l.slept_fully), 0);
    assert_int_equal(l.ndelivered, 1);

    /* a sleep that nothing interrupts lasts and reports so */
    log_init(&l, true);
    l.sleep_ms = 1;
    s = start(&l, 4);
    assert_true(co_sender_push(s, boxed(8)));
    assert_co_pass(co_sender_flush(s, 10000));
    assert_int_equal(atomic_load(&l.slept_fully), 1);
    assert_int_equal(co_sender_free(s, 1000), 0);
}

static void test_sender__options_are_checked(void **state)
{
    (void)state;
    co_sender *s = NULL;
    assert_co_fail_with(CO_EINVALID, co_sender_new(&s, NULL));
    co_sender_options o = {"x", 0, deliver, NULL, NULL};
    assert_co_fail_with(CO_EINVALID, co_sender_new(&s, &o));
    o.drop = drop;
    o.name = NULL;
    assert_co_fail_with(CO_EINVALID, co_sender_new(&s, &o));
    assert_null(s);
    assert_int_equal(co_sender_free(NULL, 0), 0);
}

static int64_t ts_ns(struct timespec t)
{
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void test_sender__monotonic_deadlines_are_normalised(void **state)
{
    (void)state;
    const int64_t cases[] = {0, -5, 1, 999999999, 1000000000, 1500000000, 86400LL * 1000000000};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct timespec before;
        clock_gettime(CLOCK_MONOTONIC, &before);
        struct timespec d = co_monotonic_deadline_ns(cases[i]);
        struct timespec after;
        clock_gettime(CLOCK_MONOTONIC, &after);
        assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000);
        int64_t want = cases[i] > 0 ? cases[i] : 0;
        assert_true(ts_ns(d) >= ts_ns(before) + want);
        assert_true(ts_ns(d) <= ts_ns(after) + want);
    }
    /* a condition variable on the monotonic clock times out at such a deadline */
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv;
    co_cond_init_monotonic(&cv);
    pthread_mutex_lock(&mu);
    struct timespec d = co_monotonic_deadline_ns(1000000);
    int rc = 0;
    while (rc == 0) {
        rc = pthread_cond_timedwait(&cv, &mu, &d);
    }
    pthread_mutex_unlock(&mu);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    assert_true(ts_ns(now) >= ts_ns(d));
    pthread_cond_destroy(&cv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sender__delivers_every_item_in_order),
        cmocka_unit_test(test_sender__full_queue_refuses_and_free_drops_the_rest),
        cmocka_unit_test(test_sender__stop_cuts_a_sleep_short),
        cmocka_unit_test(test_sender__options_are_checked),
        cmocka_unit_test(test_sender__monotonic_deadlines_are_normalised),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
