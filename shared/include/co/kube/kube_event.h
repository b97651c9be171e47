/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kube_event.h
 * Recording core/v1 Events about objects, asynchronously and with de-duplication.
 *
 * co_kube_event() never blocks on the network: it queues the event (dropping it, and counting
 * the drop, when the queue is full) and a sender thread writes it. An event equal to one sent
 * within the de-duplication window (same object, type, reason and message) is not created
 * again: the existing Event's count and lastTimestamp are patched instead, as client-go's
 * EventCorrelator does. Messages must not contain secrets. Thread-safe. Ownership follows
 * shared/README.md.
 */
#ifndef CO_KUBE_EVENT_H
#define CO_KUBE_EVENT_H

#include <stddef.h>

#include "co/util/common.h"
#include "co/kube/kube_client.h"

struct json_object;

typedef struct co_kube_recorder co_kube_recorder;

typedef struct co_kube_recorder_options {
    const char *component; /**< source.component and reportingComponent (required) */
    const char *instance;  /**< source.host and reportingInstance (e.g. the pod name), or NULL */
    size_t queue_len;      /**< events waiting to be sent; 0: 1000 */
    long dedup_window_ms;  /**< repeats within this are counted, not created; 0: 10 min */
    size_t cache_len;      /**< events remembered for de-duplication; 0: 4096 */
} co_kube_recorder_options;

typedef struct co_kube_recorder_stats {
    unsigned long created; /**< Events created */
    unsigned long counted; /**< repeats recorded by patching count */
    unsigned long dropped; /**< events dropped because the queue was full */
    unsigned long failed;  /**< events the API server refused or that could not be sent */
} co_kube_recorder_stats;

/**
 * Creates a recorder and starts its sender thread.
 * @param client borrowed; must outlive the recorder
 * @return 0, CO_EINVALID (no component), CO_ERROR (no thread).
 */
CO_MUST_CHECK int co_kube_recorder_new(co_kube_recorder **out,
                                       co_kube_client *client,
                                       const co_kube_recorder_options *opts);

/** Sends what is queued (waiting up to 5 s), stops the thread and frees. NULL is a no-op. */
void co_kube_recorder_free(co_kube_recorder *rec);

/**
 * Queues an event about @p involved (read for its apiVersion, kind, namespace, name, uid and
 * resourceVersion; not kept).
 * @param type "Normal" or "Warning"
 * @param reason UpperCamelCase reason ("Reconciled", "ApplyFailed")
 */
void co_kube_event(co_kube_recorder *rec,
                   const struct json_object *involved,
                   const char *type,
                   const char *reason,
                   const char *fmt,
                   ...) CO_PRINTF(5, 6);

/**
 * Like co_kube_event(), with annotations on the Event (client-go's AnnotatedEventf):
 * @p annotations is key, value, key, value, ..., NULL (copied; may be NULL). They do not take
 * part in de-duplication: a repeat with other annotations is counted on the first Event.
 */
void co_kube_event_annotated(co_kube_recorder *rec,
                             const struct json_object *involved,
                             const char *const *annotations,
                             const char *type,
                             const char *reason,
                             const char *fmt,
                             ...) CO_PRINTF(6, 7);

/**
 * Waits until every event queued so far has been handled.
 * @return 0 or CO_ETIMEOUT.
 */
CO_MUST_CHECK int co_kube_recorder_flush(co_kube_recorder *rec, long timeout_ms);

/** Copies the counters. */
void co_kube_recorder_stats_get(co_kube_recorder_stats *out, co_kube_recorder *rec);

#endif
