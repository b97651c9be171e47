/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_notify.h
 * Forwarding Component events to Flux's notification-controller (--events-address), as the Go
 * operator does through fluxcd/pkg/runtime/events (docs/behaviour.md, "Events" and "Flux
 * notifications").
 *
 * Each event is POSTed as JSON (Content-Type: application/json) in the shape of Flux's
 * event/v1beta1 Event: `involvedObject` (kind, namespace, name, uid, apiVersion,
 * resourceVersion), `severity` ("error" for type Warning, else "info"), `timestamp` (RFC 3339,
 * seconds, when the event was recorded), `message`, `reason`, `metadata` (the caller's pairs
 * and the object's annotations prefixed `event.toolkit.fluxcd.io/`; left out when empty),
 * `reportingController` and `reportingInstance` (the host name).
 *
 * Delivery follows Flux's recorder: each attempt times out after 5 s; connection failures and
 * HTTP 5xx other than 501 are retried 4 times, after 1, 2, 4 and 8 s (capped at 30 s, or a
 * 503's Retry-After); HTTP 429 (the notification-controller's answer to a duplicate) and other
 * statuses end the delivery at once; TLS certificate failures are not retried. Redirects are not
 * followed. Unlike Flux's recorder, which posts from the reconciling goroutine, the caller never
 * waits: events go to a bounded queue drained by one sender thread, and an event that finds the
 * queue full is dropped and counted.
 *
 * The address is configured by the operator, not by Components, so the network deny-list
 * (co/net.h) does not apply to it. Thread-safe.
 */
#ifndef CTL_NOTIFY_H
#define CTL_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"

struct json_object;
struct co_metric;

typedef struct ctl_notify ctl_notify;

typedef struct ctl_notify_options {
    const char *address;              /**< http:// or https:// URL (required) */
    const char *reporting_controller; /**< reportingController (required) */
    const char *reporting_instance;   /**< reportingInstance; NULL: the host name */
    size_t queue_len;                 /**< events waiting to be sent; 0: 1000 */
    long timeout_ms;                  /**< one attempt; 0: 5000 */
    int retries;                      /**< attempts after the first; 0: 4; negative: none */
    long backoff_ms;     /**< wait before the first retry, doubled each time; 0: 1000 */
    long backoff_max_ms; /**< longest wait; 0: 30000 */
    /** Counter family with the label "result" ("sent", "rejected", "failed", "dropped"),
     * counted per event; borrowed; NULL: none. */
    struct co_metric *results;
} ctl_notify_options;

/** Events by how their delivery ended. */
typedef struct ctl_notify_stats {
    unsigned long sent;     /**< answered 2xx */
    unsigned long rejected; /**< answered another status that is not retried (429, 4xx, 3xx) */
    unsigned long failed;   /**< retries exhausted, or an error that is not retried */
    unsigned long dropped;  /**< found the queue full, or were still queued at shutdown */
} ctl_notify_stats;

/**
 * Checks the options and starts the sender thread.
 * @return 0; CO_EINVALID naming the problem (no address, not an http(s) URL, no reporting
 *         controller); CO_ERROR when no thread can be started.
 */
CO_MUST_CHECK int ctl_notify_new(ctl_notify **out, const ctl_notify_options *opts);

/** Sends what is queued (waiting up to 5 s), stops the sender, drops the rest and frees.
 * NULL is a no-op. */
void ctl_notify_free(ctl_notify *n);

/**
 * Queues an event about @p involved (read for its apiVersion, kind, namespace, name, uid,
 * resourceVersion and annotations; not kept) and returns at once.
 * @param type "Normal" or "Warning"
 * @param metadata key, value, key, value, ..., NULL (copied; may be NULL)
 */
void ctl_notify_event(ctl_notify *n,
                      const struct json_object *involved,
                      const char *type,
                      const char *reason,
                      const char *message,
                      const char *const *metadata);

/**
 * Waits until every event queued so far has been delivered or given up.
 * @return 0 or CO_ETIMEOUT.
 */
CO_MUST_CHECK int ctl_notify_flush(ctl_notify *n, long timeout_ms);

/** Copies the counters. */
void ctl_notify_stats_get(ctl_notify_stats *out, ctl_notify *n);

#endif
