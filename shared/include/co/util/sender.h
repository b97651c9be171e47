/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file sender.h
 * A bounded queue drained in order by one thread of its own: what lets a caller hand work to
 * the network (Kubernetes Events, notifications to Flux) without ever waiting for it.
 *
 * co_sender_push() never blocks: an item that finds the queue full, or the sender stopping, is
 * refused and stays the caller's. The thread calls `deliver` for each item, in queue order,
 * with no lock held; `deliver` owns the item from then on. co_sender_free() gives what is
 * queued a grace period to be delivered, then stops the thread and hands every item still
 * queued to `drop`. A `deliver` that waits (a retry backoff) does so with co_sender_sleep(),
 * which ends early when the sender stops, and a long transfer can poll co_sender_stopping().
 *
 * Waits use CLOCK_MONOTONIC, which wall-clock changes do not move; co/util/time.h's test
 * clocks do not apply to them. Thread-safe, except that co_sender_free() must not race any
 * other call on the same sender.
 */
#ifndef CO_SENDER_H
#define CO_SENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "co/util/common.h"

typedef struct co_sender co_sender;

typedef struct co_sender_options {
    /** Names the sender in error messages ("event recorder"); required, copied. */
    const char *name;
    /** Items waiting to be delivered; 0: 1000. */
    size_t queue_len;
    /** Delivers one item on the sender's thread and frees it; required. */
    void (*deliver)(void *ctx, co_sender *s, void *item);
    /** Frees an item that will not be delivered (still queued at co_sender_free()); required. */
    void (*drop)(void *ctx, void *item);
    /** Passed to both. */
    void *ctx;
} co_sender_options;

/**
 * Starts the sender's thread.
 * @return 0; CO_EINVALID (no name, deliver or drop); CO_ERROR (no thread could be started).
 */
CO_MUST_CHECK int co_sender_new(co_sender **out, const co_sender_options *opts);

/**
 * Queues @p item for delivery and returns at once.
 * @return true: the sender owns @p item; false: the queue is full or the sender is stopping,
 *         and @p item stays the caller's.
 */
bool co_sender_push(co_sender *s, void *item);

/**
 * Waits until every item queued so far has been delivered (none queued, none in delivery).
 * @return 0, or CO_ETIMEOUT naming how many items remain.
 */
CO_MUST_CHECK int co_sender_flush(co_sender *s, long timeout_ms);

/**
 * For `deliver` only: waits @p ms milliseconds unless the sender is told to stop meanwhile.
 * @return true after the full wait; false when the sender is stopping.
 */
bool co_sender_sleep(co_sender *s, long ms);

/** Whether co_sender_free() has told the sender to stop (for a `deliver` to abort a transfer). */
bool co_sender_stopping(const co_sender *s);

/**
 * Waits up to @p grace_ms for the queue to drain, then stops the thread (waiting for the item
 * in delivery, which should notice co_sender_stopping()), hands each item still queued to
 * `drop`, and frees. NULL is a no-op.
 * @return how many items were dropped.
 */
size_t co_sender_free(co_sender *s, long grace_ms);

#endif
