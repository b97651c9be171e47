/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The keyed work queue (see ctl_queue.h). One mutex guards everything: a hash table of
 * per-key records, a FIFO of ready keys and a binary min-heap of delayed keys. Each record
 * carries independent flags (queued, processing, dirty) plus its position in the heap, so
 * the client-go semantics fall out of a few state transitions. Workers block on one
 * condition variable; the earliest delayed key bounds their wait.
 */
#include "controller/ctl_queue.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "co/util/error.h"
#include "co/util/metrics.h"
#include "co/util/thread.h"

typedef struct item {
    char *key;
    struct item *next_in_bucket;
    struct item *next_ready; /* FIFO link while queued */
    int queued;              /* in the ready FIFO */
    int dirty;               /* added while processing: queue again on done */
    int processing;          /* held by a worker */
    size_t heap_index;       /* position in the delay heap + 1; 0 when not waiting */
    int64_t due_ns;          /* when waiting */
    int64_t started_ns;      /* when processing */
    int64_t ready_ns;        /* when it entered the ready FIFO */
    int failures;            /* for the per-key backoff */
} item;

struct ctl_queue {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    ctl_queue_options opts;
    int shut;

    item **buckets;
    size_t nbuckets;
    size_t nitems;

    item *ready_head, *ready_tail;
    size_t ready_len;

    item **heap;
    size_t heap_len, heap_cap;

    size_t processing;
    uint64_t adds_total, retries_total;

    /* global token bucket */
    double tokens;
    int64_t tokens_at_ns;
};

static int64_t monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t system_random(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
        v = (uint64_t)monotonic_now() * 6364136223846793005ULL;
    }
    return v;
}

/* ---- hash table --------------------------------------------------------------------------- */

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    }
    return h;
}

static item *lookup(ctl_queue *q, const char *key)
{
    for (item *it = q->buckets[hash(key) % q->nbuckets]; it; it = it->next_in_bucket) {
        if (strcmp(it->key, key) == 0) {
            return it;
        }
    }
    return NULL;
}

static void rehash(ctl_queue *q)
{
    size_t n = q->nbuckets * 2;
    item **b = co_xcalloc(n, sizeof(item *));
    for (size_t i = 0; i < q->nbuckets; i++) {
        item *it = q->buckets[i];
        while (it) {
            item *next = it->next_in_bucket;
            size_t h = hash(it->key) % n;
            it->next_in_bucket = b[h];
            b[h] = it;
            it = next;
        }
    }
    free(q->buckets);
    q->buckets = b;
    q->nbuckets = n;
}

static item *get_or_create(ctl_queue *q, const char *key)
{
    item *it = lookup(q, key);
    if (it) {
        return it;
    }
    if (q->nitems >= q->nbuckets) {
        rehash(q);
    }
    CO_ASSERT(q->nbuckets > 0);
    it = co_xcalloc(1, sizeof(*it));
    it->key = co_xstrdup(key);
    size_t h = hash(key) % q->nbuckets;
    it->next_in_bucket = q->buckets[h];
    q->buckets[h] = it;
    q->nitems++;
    return it;
}

/* Drops a record that no longer carries any state. */
static void maybe_release(ctl_queue *q, item *it)
{
    if (it->queued || it->dirty || it->processing || it->heap_index || it->failures) {
        return;
    }
    item **pp = &q->buckets[hash(it->key) % q->nbuckets];
    while (*pp != it) {
        pp = &(*pp)->next_in_bucket;
    }
    *pp = it->next_in_bucket;
    q->nitems--;
    free(it->key);
    free(it);
}

/* ---- delay heap ----------------------------------------------------------------------------- */

static void heap_swap(ctl_queue *q, size_t a, size_t b)
{
    item *t = q->heap[a];
    q->heap[a] = q->heap[b];
    q->heap[b] = t;
    q->heap[a]->heap_index = a + 1;
    q->heap[b]->heap_index = b + 1;
}

static void heap_up(ctl_queue *q, size_t i)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (q->heap[parent]->due_ns <= q->heap[i]->due_ns) {
            break;
        }
        heap_swap(q, i, parent);
        i = parent;
    }
}

static void heap_down(ctl_queue *q, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->heap_len && q->heap[l]->due_ns < q->heap[m]->due_ns) {
            m = l;
        }
        if (r < q->heap_len && q->heap[r]->due_ns < q->heap[m]->due_ns) {
            m = r;
        }
        if (m == i) {
            return;
        }
        heap_swap(q, i, m);
        i = m;
    }
}

static void heap_push(ctl_queue *q, item *it)
{
    if (q->heap_len == q->heap_cap) {
        q->heap_cap = q->heap_cap ? q->heap_cap * 2 : 16;
        q->heap = co_xreallocarray(q->heap, q->heap_cap, sizeof(item *));
    }
    q->heap[q->heap_len] = it;
    it->heap_index = ++q->heap_len;
    heap_up(q, q->heap_len - 1);
}

static item *heap_pop(ctl_queue *q)
{
    item *top = q->heap[0];
    q->heap_len--;
    if (q->heap_len) {
        q->heap[0] = q->heap[q->heap_len];
        q->heap[0]->heap_index = 1;
        heap_down(q, 0);
    }
    top->heap_index = 0;
    return top;
}

/* ---- state transitions (mutex held) -----------------------------------------------------------
 */

static void push_ready(ctl_queue *q, item *it)
{
    it->queued = 1;
    it->ready_ns = q->opts.now();
    it->next_ready = NULL;
    if (q->ready_tail) {
        q->ready_tail->next_ready = it;
    } else {
        q->ready_head = it;
    }
    q->ready_tail = it;
    q->ready_len++;
    pthread_cond_signal(&q->cond);
}

static void add_locked(ctl_queue *q, item *it)
{
    if (q->shut || it->dirty) {
        return;
    }
    it->dirty = 1;
    q->adds_total++;
    if (!it->processing) {
        push_ready(q, it);
    }
}

/* Moves every delayed key whose time has come into the ready list. */
static void promote_due(ctl_queue *q, int64_t now)
{
    while (q->heap_len && q->heap[0]->due_ns <= now) {
        item *it = heap_pop(q);
        add_locked(q, it);
        maybe_release(q, it);
    }
}

static void add_after_locked(ctl_queue *q, const char *key, int64_t delay_ns)
{
    if (q->shut) {
        return;
    }
    item *it = get_or_create(q, key);
    if (delay_ns <= 0) {
        add_locked(q, it);
        return;
    }
    /* controller-runtime counts every add with a delay as a retry (workqueue_retries_total) */
    q->retries_total++;
    int64_t due = q->opts.now() + delay_ns;
    if (it->heap_index) {
        if (due < it->due_ns) {
            it->due_ns = due;
            heap_up(q, it->heap_index - 1);
        }
    } else {
        it->due_ns = due;
        heap_push(q, it);
    }
    /* a sleeping worker may need to wake earlier */
    pthread_cond_broadcast(&q->cond);
}

/* ---- public API ----------------------------------------------------------------------------- */

ctl_queue *ctl_queue_new(const ctl_queue_options *opts)
{
    ctl_queue *q = co_xcalloc(1, sizeof(*q));
    ctl_queue_options defaults = CTL_QUEUE_OPTIONS_INIT;
    q->opts = opts ? *opts : defaults;
    if (!q->opts.now) {
        q->opts.now = monotonic_now;
    }
    if (!q->opts.random) {
        q->opts.random = system_random;
    }
    if (q->opts.base_delay_ns <= 0) {
        q->opts.base_delay_ns = defaults.base_delay_ns;
    }
    if (q->opts.max_delay_ns < q->opts.base_delay_ns) {
        q->opts.max_delay_ns = q->opts.base_delay_ns;
    }
    if (q->opts.burst < 1) {
        q->opts.burst = 1;
    }
    q->nbuckets = 64;
    q->buckets = co_xcalloc(q->nbuckets, sizeof(item *));
    q->tokens = q->opts.burst;
    q->tokens_at_ns = q->opts.now();
    pthread_mutex_init(&q->mu, NULL);
    co_cond_init_monotonic(&q->cond);
    return q;
}

void ctl_queue_free(ctl_queue *q)
{
    if (!q) {
        return;
    }
    for (size_t i = 0; i < q->nbuckets; i++) {
        item *it = q->buckets[i];
        while (it) {
            item *next = it->next_in_bucket;
            free(it->key);
            free(it);
            it = next;
        }
    }
    free(q->buckets);
    free(q->heap);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cond);
    free(q);
}

void ctl_queue_add(ctl_queue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    add_after_locked(q, key, 0);
    pthread_mutex_unlock(&q->mu);
}

void ctl_queue_add_after(ctl_queue *q, const char *key, int64_t delay_ns)
{
    pthread_mutex_lock(&q->mu);
    add_after_locked(q, key, delay_ns);
    pthread_mutex_unlock(&q->mu);
}

/* Per-key exponential delay with up to +10 % jitter, capped. */
static int64_t item_delay(ctl_queue *q, int failures)
{
    int64_t d = q->opts.base_delay_ns;
    for (int i = 0; i < failures && d < q->opts.max_delay_ns; i++) {
        d = d > q->opts.max_delay_ns / 2 ? q->opts.max_delay_ns : d * 2;
    }
    if (d > q->opts.max_delay_ns) {
        d = q->opts.max_delay_ns;
    }
    int64_t jitter = (int64_t)(q->opts.random() % 1000) * (d / 10000);
    d += jitter;
    return d > q->opts.max_delay_ns ? q->opts.max_delay_ns : d;
}

/* Reserves one token of the global bucket; returns how long to wait for it. */
static int64_t bucket_delay(ctl_queue *q)
{
    if (q->opts.qps <= 0) {
        return 0;
    }
    int64_t now = q->opts.now();
    double elapsed = (double)(now - q->tokens_at_ns) / 1e9;
    q->tokens += elapsed * q->opts.qps;
    if (q->tokens > q->opts.burst) {
        q->tokens = q->opts.burst;
    }
    q->tokens_at_ns = now;
    q->tokens -= 1.0;
    if (q->tokens >= 0) {
        return 0;
    }
    return (int64_t)(-q->tokens / q->opts.qps * 1e9);
}

void ctl_queue_add_rate_limited(ctl_queue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    if (!q->shut) {
        item *it = get_or_create(q, key);
        int64_t d = item_delay(q, it->failures);
        it->failures++;
        int64_t b = bucket_delay(q);
        add_after_locked(q, key, d > b ? d : b);
    }
    pthread_mutex_unlock(&q->mu);
}

void ctl_queue_forget(ctl_queue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    item *it = lookup(q, key);
    if (it) {
        it->failures = 0;
        maybe_release(q, it);
    }
    pthread_mutex_unlock(&q->mu);
}

int ctl_queue_num_requeues(ctl_queue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    item *it = lookup(q, key);
    int n = it ? it->failures : 0;
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* Pops the first ready key (mutex held). */
static void take(ctl_queue *q, char **key_out)
{
    item *it = q->ready_head;
    q->ready_head = it->next_ready;
    if (!q->ready_head) {
        q->ready_tail = NULL;
    }
    q->ready_len--;
    it->queued = 0;
    it->dirty = 0;
    it->processing = 1;
    it->started_ns = q->opts.now();
    if (q->opts.queue_duration) {
        co_series_observe(q->opts.queue_duration, (double)(it->started_ns - it->ready_ns) / 1e9);
    }
    q->processing++;
    *key_out = co_xstrdup(it->key);
}

int ctl_queue_try_get(ctl_queue *q, char **key_out)
{
    int rc = CO_ENOTFOUND;
    pthread_mutex_lock(&q->mu);
    promote_due(q, q->opts.now());
    if (q->ready_head) {
        take(q, key_out);
        rc = 0;
    } else if (q->shut) {
        rc = CO_ECANCELED;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int ctl_queue_get(ctl_queue *q, char **key_out)
{
    int rc = 0;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        promote_due(q, q->opts.now());
        if (q->ready_head) {
            take(q, key_out);
            break;
        }
        if (q->shut) {
            rc = CO_ECANCELED;
            break;
        }
        if (q->heap_len) {
            int64_t wake = q->heap[0]->due_ns;
            /* the test clock may differ from the real one; never sleep past the real due time */
            int64_t wait = wake - q->opts.now();
            struct timespec ts = co_monotonic_deadline_ns(wait);
            pthread_cond_timedwait(&q->cond, &q->mu, &ts);
        } else {
            pthread_cond_wait(&q->cond, &q->mu);
        }
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

void ctl_queue_done(ctl_queue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    item *it = lookup(q, key);
    if (it && it->processing) {
        it->processing = 0;
        q->processing--;
        if (q->opts.work_duration) {
            co_series_observe(q->opts.work_duration,
                              (double)(q->opts.now() - it->started_ns) / 1e9);
        }
        if (it->dirty && !q->shut) {
            push_ready(q, it);
        } else {
            it->dirty = 0;
        }
        maybe_release(q, it);
    }
    pthread_mutex_unlock(&q->mu);
}

void ctl_queue_shutdown(ctl_queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->shut = 1;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->mu);
}

void ctl_queue_get_stats(ctl_queue *q, ctl_queue_stats *out)
{
    pthread_mutex_lock(&q->mu);
    out->depth = q->ready_len;
    out->waiting = q->heap_len;
    out->processing = q->processing;
    out->adds_total = q->adds_total;
    out->retries_total = q->retries_total;
    out->oldest_processing_ns = 0;
    out->processing_total_ns = 0;
    int64_t now = q->opts.now();
    for (size_t i = 0; i < q->nbuckets && q->processing; i++) {
        for (item *it = q->buckets[i]; it; it = it->next_in_bucket) {
            if (!it->processing) {
                continue;
            }
            out->processing_total_ns += now - it->started_ns;
            if (now - it->started_ns > out->oldest_processing_ns) {
                out->oldest_processing_ns = now - it->started_ns;
            }
        }
    }
    pthread_mutex_unlock(&q->mu);
}

int64_t ctl_queue_next_due_in(ctl_queue *q)
{
    pthread_mutex_lock(&q->mu);
    int64_t d = q->heap_len ? q->heap[0]->due_ns - q->opts.now() : INT64_MAX;
    pthread_mutex_unlock(&q->mu);
    return d;
}
