/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_queue.h
 * The controller's keyed work queue, with the semantics of client-go's rate-limited delaying
 * queue that controller-runtime reconcilers rely on:
 *
 * - a key is processed by at most one worker at a time: adding a key that is being processed
 *   marks it dirty, and it is queued again when the worker calls ctl_queue_done();
 * - adding a key that is already queued is a no-op (de-duplication);
 * - ctl_queue_add_after() queues a key once a delay has passed; when a key is delayed several
 *   times, the earliest time wins;
 * - ctl_queue_add_rate_limited() delays by the larger of a per-key exponential backoff
 *   (5 ms doubling up to 1000 s, with jitter) and a global token bucket (10/s, burst 100) —
 *   controller-runtime's defaults; ctl_queue_forget() resets a key's backoff.
 *
 * All functions are thread-safe. Keys are copied.
 */
#ifndef CTL_QUEUE_H
#define CTL_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"

typedef struct ctl_queue ctl_queue;
struct co_series;

typedef struct ctl_queue_options {
    int64_t base_delay_ns;    /**< first per-key backoff delay (default 5 ms) */
    int64_t max_delay_ns;     /**< per-key backoff cap (default 1000 s) */
    double qps;               /**< global token bucket refill rate (default 10/s) */
    int burst;                /**< global token bucket size (default 100) */
    int64_t (*now)(void);     /**< monotonic clock in ns (default CLOCK_MONOTONIC); a test seam */
    uint64_t (*random)(void); /**< randomness for jitter (default arc4random-like); a test seam */
    /** Histograms (seconds) of how long a key waited ready before a worker took it, and how
     * long a worker held it: controller-runtime's workqueue_queue_duration_seconds and
     * workqueue_work_duration_seconds. Borrowed; NULL: not observed. */
    struct co_series *queue_duration, *work_duration;
} ctl_queue_options;

#define CTL_QUEUE_OPTIONS_INIT                                                                     \
    {                                                                                              \
        5000000, 1000000000000LL, 10.0, 100, NULL, NULL                                            \
    }

/** Queue statistics, for metrics. */
typedef struct ctl_queue_stats {
    size_t depth;                 /**< keys ready to be processed */
    size_t waiting;               /**< keys waiting for a delay to pass */
    size_t processing;            /**< keys held by workers */
    uint64_t adds_total;          /**< keys queued, after de-duplication */
    uint64_t retries_total;       /**< adds with a delay (rate-limited or ctl_queue_add_after) */
    int64_t oldest_processing_ns; /**< age of the longest-running key, 0 if none */
    int64_t processing_total_ns;  /**< sum of the ages of the keys being processed */
} ctl_queue_stats;

/** Creates a queue. @p opts may be NULL for the defaults. */
ctl_queue *ctl_queue_new(const ctl_queue_options *opts);

/** Frees the queue; no thread may be using it. NULL is a no-op. */
void ctl_queue_free(ctl_queue *q);

/** Queues @p key now (no-op if already queued; deferred if being processed). */
void ctl_queue_add(ctl_queue *q, const char *key);

/** Queues @p key after @p delay_ns (<= 0 means now). */
void ctl_queue_add_after(ctl_queue *q, const char *key, int64_t delay_ns);

/** Queues @p key after its rate-limited backoff delay and counts one more failure for it. */
void ctl_queue_add_rate_limited(ctl_queue *q, const char *key);

/** Resets the backoff of @p key (call after a successful reconcile). */
void ctl_queue_forget(ctl_queue *q, const char *key);

/** Number of rate-limited re-adds of @p key since the last forget. */
int ctl_queue_num_requeues(ctl_queue *q, const char *key);

/**
 * Blocks until a key is ready, hands it to the caller and marks it as being processed.
 * @param[out] key_out the key (free with free())
 * @return 0, or CO_ECANCELED once the queue is shut down and drained of ready keys.
 */
CO_MUST_CHECK int ctl_queue_get(ctl_queue *q, char **key_out);

/**
 * Non-blocking ctl_queue_get(): first moves keys whose delay has passed into the ready list.
 * @return 0, CO_ENOTFOUND when no key is ready, or CO_ECANCELED after shutdown.
 */
CO_MUST_CHECK int ctl_queue_try_get(ctl_queue *q, char **key_out);

/** Marks @p key as no longer processed; if it was added meanwhile it is queued again. */
void ctl_queue_done(ctl_queue *q, const char *key);

/** Stops the queue: blocked and future ctl_queue_get() calls return CO_ECANCELED. */
void ctl_queue_shutdown(ctl_queue *q);

/** Current statistics. */
void ctl_queue_get_stats(ctl_queue *q, ctl_queue_stats *out);

/** Nanoseconds until the next delayed key is due (INT64_MAX if none). For tests. */
int64_t ctl_queue_next_due_in(ctl_queue *q);

#endif
