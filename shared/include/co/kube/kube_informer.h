/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kube_informer.h
 * A cache of one collection kept current by a reflector: list, then watch from the list's
 * resourceVersion, with bookmarks; a watch that ends is resumed from the last version seen; a
 * 410 Gone (the version was compacted away) leads to a fresh list; failures are retried with
 * exponential backoff and jitter. The cache is a thread-safe store keyed by "namespace/name"
 * (just "name" for cluster-scoped objects) with caller-defined secondary indexes, and event
 * handlers run for every change.
 *
 * Objects are stored as compact JSON text, immutable once stored: any thread may read at any
 * time, and every read returns a private copy the caller owns. Handlers run on the informer's
 * own thread, one at a time, in the order of events; the objects they receive are borrowed for
 * the call and private to that thread (json_object_deep_copy() them to keep them elsewhere).
 * Configure (indexes, handlers) before co_kube_informer_start(). Ownership follows
 * shared/README.md.
 */
#ifndef CO_KUBE_INFORMER_H
#define CO_KUBE_INFORMER_H

#include <stdbool.h>
#include <stddef.h>

#include "co/util/common.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_watch.h"

struct json_object;

typedef struct co_kube_informer co_kube_informer;

/** A list of strings (index keys, store keys). Start from {0}; free with _dispose(). */
typedef struct co_kube_keys {
    char **items;
    size_t len;
} co_kube_keys;

/** Appends a copy of @p key (duplicates are ignored). */
void co_kube_keys_add(co_kube_keys *keys, const char *key);

/** Frees the strings and the array; @p keys is empty and reusable afterwards. */
void co_kube_keys_dispose(co_kube_keys *keys);

/**
 * Computes the keys under which @p obj appears in an index (any number, e.g. one per
 * dependency target "namespace/name"). Runs on the informer's thread.
 * @return 0, or a negative error: the object is then not indexed (the error is counted).
 */
typedef int (*co_kube_index_fn)(co_kube_keys *out, const struct json_object *obj, void *payload);

/** Change notifications; any member may be NULL. Objects are borrowed for the call. */
typedef struct co_kube_handlers {
    void (*on_add)(const struct json_object *obj, void *payload);
    void (*on_update)(const struct json_object *old_obj,
                      const struct json_object *new_obj,
                      void *payload);
    /** @p obj is the last state known (from the DELETED event, or the cache when a relist
     * found the object gone). */
    void (*on_delete)(const struct json_object *obj, void *payload);
    void *payload;
} co_kube_handlers;

typedef struct co_kube_informer_options {
    const char *api_version;    /**< required */
    const char *kind;           /**< required */
    const char *namespace;      /**< NULL: all namespaces */
    const char *label_selector; /**< or NULL */
    const char *field_selector; /**< or NULL */
    long page_size;             /**< list page size; 0: 500 */
    long watch_timeout_s;       /**< 0: a random 300-600 s per watch, as client-go */
    int strip_managed_fields;   /**< drop metadata.managedFields before caching (saves memory) */
    /** list and watch PartialObjectMetadata (co_kube_list_options.metadata_only): the objects
     * the informer sees, stores and hands over are metadata only, of kind PartialObjectMetadata */
    int metadata_only;
    /** Optional: trims each object before it is cached (on the informer's thread, after the
     * managed fields are dropped); handlers and readers see the trimmed object. */
    void (*transform)(struct json_object *obj, void *payload);
    void *transform_payload; /**< for @ref transform */
    /** Optional: whether an object belongs in the cache at all (on the informer's thread, before
     * @ref transform). One it refuses is treated as absent: never stored, never handed to the
     * handlers, and removed (a delete to the handlers) when a change makes a stored one refused. */
    bool (*admit)(const struct json_object *obj, void *payload);
    void *admit_payload; /**< for @ref admit */
    /** Texts longer than this many bytes are stored deflated and inflated by each read (0: never):
     * memory for CPU, worth it for a large store of objects read now and then. */
    size_t compress_over;
    long backoff_base_ms; /**< first retry delay; 0: 800 ms */
    long backoff_cap_ms;  /**< longest retry delay; 0: 30 s */
} co_kube_informer_options;

/** Counters, read with co_kube_informer_stats(). */
typedef struct co_kube_informer_stats {
    unsigned long lists;       /**< complete lists (the first one included) */
    unsigned long watches;     /**< watch requests started */
    unsigned long gone;        /**< 410 Gone answers (each followed by a list) */
    unsigned long events;      /**< ADDED/MODIFIED/DELETED events applied */
    unsigned long bookmarks;   /**< BOOKMARK events */
    unsigned long errors;      /**< failed lists and watches (retried with backoff) */
    size_t objects;            /**< objects in the store */
    size_t bytes;              /**< bytes of stored JSON text (as stored: deflated or not) */
    char resource_version[64]; /**< the last resourceVersion seen */
    char last_error[512];      /**< the last failure's message, or "" */
} co_kube_informer_stats;

/**
 * Creates an informer (not yet running).
 * @param client borrowed; must outlive the informer
 * @param opts copied
 * @return 0 or CO_EINVALID.
 */
CO_MUST_CHECK int co_kube_informer_new(co_kube_informer **out,
                                       co_kube_client *client,
                                       const co_kube_informer_options *opts);

/**
 * Adds a secondary index named @p name. Call before co_kube_informer_start().
 * @return 0; CO_EEXISTS for a duplicate name; CO_EINVALID once started.
 */
CO_MUST_CHECK int co_kube_informer_add_index(co_kube_informer *inf,
                                             const char *name,
                                             co_kube_index_fn fn,
                                             void *payload);

/** Adds a set of handlers (copied). Call before co_kube_informer_start().
 * @return 0 or CO_EINVALID once started. */
CO_MUST_CHECK int co_kube_informer_add_handlers(co_kube_informer *inf,
                                                const co_kube_handlers *handlers);

/** Starts the reflector thread. @return 0, CO_EINVALID when already started, CO_ERROR. */
CO_MUST_CHECK int co_kube_informer_start(co_kube_informer *inf);

/** Stops the reflector and waits for its thread (handlers have returned afterwards). The
 * store keeps its content. Idempotent. */
void co_kube_informer_stop(co_kube_informer *inf);

/** Stops and frees the informer. NULL is a no-op. */
void co_kube_informer_free(co_kube_informer *inf);

/** Whether the first list has been stored and its add handlers have run. */
bool co_kube_informer_has_synced(co_kube_informer *inf);

/**
 * Waits until the informer has synced.
 * @return 0; CO_ETIMEOUT after @p timeout_ms (negative: forever); CO_ECANCELED when stopped.
 */
CO_MUST_CHECK int co_kube_informer_wait_synced(co_kube_informer *inf, long timeout_ms);

/** Whether the object @p ns / @p name (ns NULL: cluster-scoped) is cached; reads no text. */
bool co_kube_informer_contains(co_kube_informer *inf, const char *ns, const char *name);

/**
 * Reads one cached object.
 * @param ns namespace, or NULL for cluster-scoped objects
 * @param[out] out a private copy (json_object_put())
 * @return 0 or CO_ENOTFOUND.
 */
CO_MUST_CHECK int co_kube_informer_get(struct json_object **out,
                                       co_kube_informer *inf,
                                       const char *ns,
                                       const char *name);

/**
 * Copies the cached objects of one namespace (NULL: all) into a new JSON array, sorted by key.
 * @return 0.
 */
CO_MUST_CHECK int
co_kube_informer_list(struct json_object **out, co_kube_informer *inf, const char *ns);

/**
 * Copies the objects an index lists under @p key into a new JSON array, sorted by key.
 * @return 0 (an empty array when nothing matches); CO_ENOTFOUND for an unknown index.
 */
CO_MUST_CHECK int co_kube_informer_by_index(struct json_object **out,
                                            co_kube_informer *inf,
                                            const char *index,
                                            const char *key);

/**
 * The store keys ("namespace/name") an index lists under @p key, sorted.
 * @param[out] out filled (co_kube_keys_dispose())
 * @return 0 or CO_ENOTFOUND for an unknown index.
 */
CO_MUST_CHECK int co_kube_informer_index_keys(co_kube_keys *out,
                                              co_kube_informer *inf,
                                              const char *index,
                                              const char *key);

/** The store key of @p obj ("namespace/name" or "name"), or NULL without a name (free()). */
char *co_kube_informer_key_of(const struct json_object *obj);

/** Number of cached objects. */
size_t co_kube_informer_len(co_kube_informer *inf);

/** Copies the counters. */
void co_kube_informer_stats_get(co_kube_informer_stats *out, co_kube_informer *inf);

#endif
