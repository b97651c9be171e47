/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kube_watch.h
 * One watch request: a stream of ADDED/MODIFIED/DELETED/BOOKMARK events for a collection,
 * framed line by line as the API server writes them.
 *
 * The stream is framed incrementally: bytes are scanned once, a complete line is decoded as
 * soon as its newline arrives, and only the unfinished tail of a chunk is kept (at most
 * CO_MAX_WATCH_LINE bytes, else CO_ETOOBIG). An ERROR event ends the watch with the error of
 * its Status (410 Gone: CO_EGONE, the resourceVersion is too old and the caller must list
 * again). Reconnecting, relisting and caching are the informer's job (kube_informer.h).
 *
 * Thread-safe in the sense of kube_client.h; the callback runs on the calling thread.
 */
#ifndef CO_KUBE_WATCH_H
#define CO_KUBE_WATCH_H

#include <stddef.h>

#include "co/util/common.h"
#include "co/kube/kube_client.h"

struct json_object;

typedef enum co_kube_event_type {
    CO_KUBE_ADDED = 0,    /**< the object was created (or first seen) */
    CO_KUBE_MODIFIED = 1, /**< the object changed */
    CO_KUBE_DELETED = 2,  /**< the object is gone; the event carries its last state */
    CO_KUBE_BOOKMARK = 3, /**< no change; the object carries only a newer resourceVersion */
} co_kube_event_type;

/**
 * Receives one event. @p obj is borrowed for the call (take a reference with
 * json_object_get() to keep it on this thread).
 * @return 0 to continue; nonzero to stop the watch (a negative value is returned by
 * co_kube_watch(), a positive one makes it return 0).
 */
typedef int (*co_kube_watch_cb)(co_kube_event_type type, struct json_object *obj, void *payload);

typedef struct co_kube_watch_options {
    const char *resource_version; /**< start after this version; NULL/"": from now (the
                                       server first sends ADDED for existing objects) */
    const char *label_selector;   /**< or NULL */
    const char *field_selector;   /**< or NULL */
    long timeout_s;               /**< the server ends the watch after this; 0: 300 */
    int allow_bookmarks;          /**< ask for BOOKMARK events */
    co_kube_cancel_cb cancelled;  /**< polled at least once a second; nonzero stops */
    void *cancel_payload;         /**< for @ref cancelled */
    /** leave the objects' metadata.managedFields out of the parse (checked, never built) */
    int skip_managed_fields;
    /** ask for PartialObjectMetadata (meta.k8s.io/v1): each event's object is only its
     * apiVersion, kind and metadata */
    int metadata_only;
} co_kube_watch_options;

/**
 * Watches the collection of @p ref (name ignored; namespace NULL: all namespaces) until the
 * server ends the stream, the callback stops it or it is cancelled.
 * @return 0 when the server closed the stream normally or the callback stopped it with a
 * positive value; CO_EGONE when the resourceVersion is too old (HTTP 410 or an ERROR event);
 * CO_ECANCELED; CO_EUNAVAILABLE and CO_ETIMEOUT for connection failures and stalls (no byte
 * for timeout_s + 60 s); CO_ETOOBIG for a line over CO_MAX_WATCH_LINE; CO_EINVALID for an
 * undecodable line; the callback's negative result; other API errors.
 */
CO_MUST_CHECK int co_kube_watch(co_kube_client *client,
                                const co_kube_ref *ref,
                                const co_kube_watch_options *opts,
                                co_kube_watch_cb cb,
                                void *payload);

/** The event name the API server uses ("ADDED", ...). */
const char *co_kube_event_type_name(co_kube_event_type type);

/* --- framing, exposed for tests and fuzzing ----------------------------------------------- */

/** Receives one complete line (without its newline; not NUL-terminated). */
typedef int (*co_kube_line_cb)(const char *line, size_t len, void *payload);

/** Splits a byte stream into lines. Initialise with CO_KUBE_FRAMER_INIT(cap). */
typedef struct co_kube_framer {
    co_buf partial; /**< the unfinished line carried over from earlier chunks */
} co_kube_framer;

#define CO_KUBE_FRAMER_INIT(cap)                                                                   \
    {                                                                                              \
        CO_BUF_INIT(cap)                                                                           \
    }

/**
 * Feeds one chunk; calls @p cb for every line it completes, in order.
 * @return 0; CO_ETOOBIG when a line grows past the framer's cap (the framer is emptied); the
 * callback's nonzero result, which stops feeding (the rest of the chunk is dropped).
 */
CO_MUST_CHECK int co_kube_framer_feed(co_kube_framer *fr,
                                      const char *data,
                                      size_t len,
                                      co_kube_line_cb cb,
                                      void *payload);

/** Frees the carried-over bytes. */
void co_kube_framer_dispose(co_kube_framer *fr);

#endif
