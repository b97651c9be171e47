/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kube_client.h
 * The Kubernetes API client: requests with authentication, rate limiting and retries; typed
 * errors from metav1.Status; discovery and REST mapping; operations on objects of any kind as
 * json-c trees (get, list, create, update, patch, server-side apply, delete, status).
 *
 * Requests pass through a client-side token bucket (20 QPS, burst 30 unless configured) and
 * are retried with exponential backoff and jitter when the server was not reached, answered
 * 429, or, for idempotent requests (GET, PUT, server-side apply), answered 5xx or dropped the
 * connection. Retry-After is honoured. A 401 makes a client that reads its token from a file
 * re-read it and try once more.
 *
 * Failures return a co_error_code; an API error is mapped from its HTTP status and Status
 * reason: 404 CO_ENOTFOUND, 409 AlreadyExists CO_EEXISTS, other 409 CO_ECONFLICT, 410
 * CO_EGONE, 400/422 CO_EINVALID, 401/403 CO_EAUTH, 408/504 and reason Timeout CO_ETIMEOUT,
 * 413 CO_ETOOBIG, 429/5xx CO_EUNAVAILABLE. The message ("GET /api/v1/...: 404 NotFound:
 * configmaps \"x\" not found") is in co_error_last(); the decoded Status is in
 * co_kube_status_last().
 *
 * Discovery: the resource list of a group/version is fetched when first needed, cached, and
 * fetched again (at most once a second per group/version) when a kind is not in it, so a CRD
 * created while the process runs becomes usable. Group/versions served by aggregated API
 * servers are looked up the same way; an unavailable one fails alone with CO_EUNAVAILABLE.
 *
 * A client is thread-safe: any number of threads may use it at once. Objects returned through
 * `out` are new json-c references (release with json_object_put()); objects passed in are
 * borrowed and not modified. Ownership otherwise follows shared/README.md.
 */
#ifndef CO_KUBE_CLIENT_H
#define CO_KUBE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/buf.h"
#include "co/util/common.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_transport.h"

struct json_object;

typedef struct co_kube_client co_kube_client;

/** Client settings; zero values select the defaults. */
typedef struct co_kube_client_options {
    double qps;                   /**< sustained requests per second; 0: 20; negative: no limit */
    int burst;                    /**< bucket size; 0: 30 */
    const char *user_agent;       /**< NULL: "component-operator/<version>" */
    const char *impersonate_user; /**< Impersonate-User (overrides the kubeconfig's `as`) */
    const char *const *impersonate_groups; /**< Impersonate-Group values */
    size_t nimpersonate_groups;            /**< number of @ref impersonate_groups */
    long connect_timeout_ms;               /**< 0: 10 s */
    long request_timeout_ms;               /**< per attempt, except watches; 0: 60 s */
    int max_retries;                       /**< retries after the first attempt; 0: 5;
                                                negative: none */
    long token_reload_ms;                  /**< token file re-read period; 0: 60 s */
    long retry_base_ms;                    /**< first retry delay (doubling, jittered, at
                                                most 10 s); 0: 200 ms */
} co_kube_client_options;

#define CO_KUBE_CLIENT_OPTIONS_INIT                                                                \
    {                                                                                              \
        0                                                                                          \
    }

/** The decoded metav1.Status of the last failed API call on this thread. */
typedef struct co_kube_status {
    int code;           /**< HTTP status; 0 when the failure was not an API answer */
    char reason[64];    /**< "NotFound", "AlreadyExists", "Conflict", "Invalid", ... or "" */
    char message[4096]; /**< the Status message (truncated), or "" */
    char details[8192]; /**< Status.details as JSON text (name, kind, causes...), or "" */
} co_kube_status;

/** Where an object or a collection is. Strings are borrowed. */
typedef struct co_kube_ref {
    const char *api_version; /**< "v1", "apps/v1", "core.cs.sap.com/v1alpha1" */
    const char *kind;        /**< "ConfigMap" */
    const char *namespace;   /**< NULL for cluster-scoped kinds (and all namespaces in lists) */
    const char *name;        /**< object name; NULL for collections */
} co_kube_ref;

/** The REST mapping of a kind. Dispose with co_kube_mapping_dispose(). */
typedef struct co_kube_mapping {
    char *group;    /**< "" for the core group */
    char *version;  /**< "v1" */
    char *resource; /**< plural resource name, "configmaps" */
    char *kind;     /**< "ConfigMap" */
    int namespaced; /**< 1 for namespaced kinds */
} co_kube_mapping;

typedef struct co_kube_get_options {
    const char *resource_version; /**< "0" allows a cached answer; NULL: a quorum read */
    const char *subresource;      /**< "status", "scale" or NULL */
} co_kube_get_options;

typedef struct co_kube_list_options {
    const char *label_selector;         /**< "app=x,tier!=db" or NULL */
    const char *field_selector;         /**< "metadata.name=x" or NULL */
    long limit;                         /**< page size; 0: no limit (co_kube_list_each: 500) */
    const char *continue_token;         /**< from a previous page's metadata.continue */
    const char *resource_version;       /**< NULL: most recent */
    const char *resource_version_match; /**< "NotOlderThan", "Exact" or NULL */
    co_kube_cancel_cb cancelled;        /**< polled during requests and retries, or NULL */
    void *cancel_payload;               /**< for @ref cancelled */
    /** leave the items' metadata.managedFields out of the parse (checked, never built) */
    int skip_managed_fields;
    /** ask for PartialObjectMetadataList (meta.k8s.io/v1): every item is only its apiVersion,
     * kind and metadata, so that a Secret's data never leaves the API server */
    int metadata_only;
} co_kube_list_options;

/** Options of the writing operations. */
typedef struct co_kube_write_options {
    int dry_run;               /**< dryRun=All: validated and admitted, not persisted */
    const char *field_manager; /**< fieldManager (required for co_kube_apply()) */
    int force;                 /**< server-side apply: take fields owned by other managers */
    const char *subresource;   /**< "status" and the like, or NULL */
} co_kube_write_options;

typedef struct co_kube_delete_options {
    const char *propagation_policy; /**< "Foreground", "Background", "Orphan" or NULL */
    const char *precondition_uid;   /**< delete only this incarnation, or NULL */
    const char *precondition_rv;    /**< delete only at this resourceVersion, or NULL */
    int dry_run;                    /**< dryRun=All */
    long grace_period_s;            /**< gracePeriodSeconds; negative: the default */
} co_kube_delete_options;

#define CO_KUBE_DELETE_OPTIONS_INIT                                                                \
    {                                                                                              \
        NULL, NULL, NULL, 0, -1                                                                    \
    }

typedef enum co_kube_patch_type {
    CO_KUBE_PATCH_JSON = 0,      /**< application/json-patch+json (RFC 6902 array) */
    CO_KUBE_PATCH_MERGE = 1,     /**< application/merge-patch+json (RFC 7386) */
    CO_KUBE_PATCH_STRATEGIC = 2, /**< application/strategic-merge-patch+json (built-in kinds) */
    CO_KUBE_PATCH_APPLY = 3,     /**< application/apply-patch+yaml (server-side apply) */
} co_kube_patch_type;

/** Called once per item of a list; the item is borrowed for the call. Nonzero stops (and is
 * returned by the listing function when negative). */
typedef int (*co_kube_item_cb)(struct json_object *item, void *payload);

/* --- lifecycle ------------------------------------------------------------------------------ */

/**
 * Creates a client for @p cfg over the libcurl transport.
 * @param[out] out the client (free with co_kube_client_free())
 * @param cfg configuration; copied, may be freed afterwards
 * @param opts settings, or NULL for the defaults
 * @return 0; CO_EINVALID for bad options; CO_ERROR when libcurl cannot start.
 */
CO_MUST_CHECK int co_kube_client_new(co_kube_client **out,
                                     const co_kube_config *cfg,
                                     const co_kube_client_options *opts);

/**
 * Creates a client over a given transport (the webhook brings its GnuTLS one, tests a fake).
 * @param transport takes ownership, also on failure
 * @return as co_kube_client_new().
 */
CO_MUST_CHECK int co_kube_client_new_with_transport(co_kube_client **out,
                                                    const co_kube_config *cfg,
                                                    co_kube_transport *transport,
                                                    const co_kube_client_options *opts);

/**
 * Creates a client that acts as @p user (and @p groups) through impersonation headers and
 * otherwise shares everything with @p parent: transport, connections, credentials, rate
 * limiter and discovery cache. The parent must outlive it.
 * @param user the user to impersonate ("system:serviceaccount:ns:name")
 * @return 0 or CO_EINVALID.
 */
CO_MUST_CHECK int co_kube_client_new_impersonating(co_kube_client **out,
                                                   co_kube_client *parent,
                                                   const char *user,
                                                   const char *const *groups,
                                                   size_t ngroups);

/** Frees a client (its derived clients must be freed first). NULL is a no-op. */
void co_kube_client_free(co_kube_client *client);

/** The default namespace of the client's configuration. Borrowed from @p client. */
const char *co_kube_client_namespace(const co_kube_client *client);

/** The Status of the last failed API call on this thread (code 0 when the last failure was
 * not an API answer). Borrowed until the next call on this thread. */
const co_kube_status *co_kube_status_last(void);

/* --- raw requests ------------------------------------------------------------------------- */

/**
 * Sends one request through the full pipeline (rate limit, authentication, retries) and
 * returns the body of a 2xx answer.
 * @param[out] out receives the body (appended; its cap applies), or NULL to discard it
 * @param path absolute path with escaped query ("/version", "/apis/x/v1/...")
 * @param content_type of @p body, or NULL when there is none
 * @return 0 or a mapped API error (see the file comment).
 */
CO_MUST_CHECK int co_kube_request_raw(co_buf *out,
                                      co_kube_client *client,
                                      const char *method,
                                      const char *path,
                                      const char *content_type,
                                      const char *body,
                                      size_t body_len);

/**
 * Like co_kube_request_raw() with JSON in and out.
 * @param[out] out the decoded answer (new reference), or NULL to discard it
 * @param body JSON body (borrowed), or NULL
 */
CO_MUST_CHECK int co_kube_request_json(struct json_object **out,
                                       co_kube_client *client,
                                       const char *method,
                                       const char *path,
                                       const struct json_object *body);

/* --- discovery ---------------------------------------------------------------------------- */

/**
 * Maps @p api_version and @p kind to a resource through discovery.
 * @param[out] out filled on success (dispose with co_kube_mapping_dispose())
 * @return 0; CO_ENOMATCH when the server does not serve the kind; CO_EUNAVAILABLE when the
 * group/version's server does not answer; CO_EINVALID for a malformed apiVersion.
 */
CO_MUST_CHECK int co_kube_client_mapping(co_kube_mapping *out,
                                         co_kube_client *client,
                                         const char *api_version,
                                         const char *kind);

/** Frees the strings of @p mapping and zeroes it. */
void co_kube_mapping_dispose(co_kube_mapping *mapping);

/** Forgets every cached discovery document, so the next lookups fetch them again. */
void co_kube_client_invalidate_discovery(co_kube_client *client);

/**
 * Everything the server serves, as client-go's ServerGroupsAndResources() reads it: one
 * APIResourceList object (`groupVersion`, `resources` with subresources) per served
 * group/version, the core group's first, then every version of every group in the server's
 * order. A group/version whose list is not found or whose (aggregated) server is unavailable is
 * left out, as Helm leaves it out.
 *
 * The lists are cached on the client (shared with the clients impersonating through it). They
 * are reused without a request for CO_KUBE_GV_RECHECK_MS; after that /api and /apis are read,
 * and the lists reused while the set of group/versions is unchanged and they are younger than
 * @p max_age_ms. So a CRD of a new group shows up within CO_KUBE_GV_RECHECK_MS, a new kind of a
 * known group/version within @p max_age_ms, and either at once after co_kube_client_mapping()
 * had to fetch a new kind, after co_kube_client_expire_api_resources() (called by whoever writes
 * a CRD or APIService) or after co_kube_client_invalidate_discovery(). A busy caller so reads
 * /api and /apis once a second rather than on every call. One thread fetches at a time; the
 * others wait for its answer.
 * @param[out] out a new JSON array (json_object_put())
 * @param max_age_ms 0: never reuse the cached lists
 * @return 0; API errors of the discovery requests; CO_EINVALID for a group/version name that
 *         is no path segment; CO_ETOOBIG over CO_MAX_API_GROUP_VERSIONS group/versions.
 */
CO_MUST_CHECK int
co_kube_client_api_resources(struct json_object **out, co_kube_client *client, int64_t max_age_ms);

/** A discovery listing shared between threads: immutable, reference-counted. */
typedef struct co_kube_api_listing co_kube_api_listing;

/**
 * The listing co_kube_client_api_resources() copies, shared instead: for callers that only read
 * it (rendering reads it on every pass; copying it cost more than the rest of a render).
 * @param[out] out release with co_kube_api_listing_release()
 * @return as co_kube_client_api_resources().
 */
CO_MUST_CHECK int
co_kube_client_api_listing(co_kube_api_listing **out, co_kube_client *client, int64_t max_age_ms);

/**
 * The array of APIResourceList objects of @p l, valid until @p l is released. Read it only:
 * nothing may change it, take or drop references into it, or serialise it (json-c caches the
 * text in the object), since other threads read it at the same time; copy what must change.
 */
const struct json_object *co_kube_api_listing_lists(const co_kube_api_listing *l);

/** Drops a reference; the last frees the listing. NULL is a no-op. Thread-safe. */
void co_kube_api_listing_release(co_kube_api_listing *l);

/**
 * Data derived from @p l once and kept with it, so that every reader of one listing shares one
 * derivation: the first call runs @p make on the lists and keeps what it returns (concurrent
 * first calls wait for that one), later calls return the same. @p dispose frees it when the
 * listing goes. A listing keeps one derivation: a call with another @p make than the first
 * returns NULL (derive a private copy then). Valid until @p l is released; read it only.
 * Thread-safe.
 */
void *co_kube_api_listing_memo(co_kube_api_listing *l,
                               void *(*make)(const struct json_object *lists),
                               void (*dispose)(void *));

/** How long co_kube_client_api_resources() trusts its lists without asking the server. */
#define CO_KUBE_GV_RECHECK_MS 1000

/**
 * Makes the next co_kube_client_api_resources() read the server again: a CRD or APIService was
 * written. The per-group/version mappings stay.
 */
void co_kube_client_expire_api_resources(co_kube_client *client);

/**
 * The server's GET /version, cached on the client like co_kube_client_api_resources() and
 * reused while younger than @p max_age_ms.
 * @param[out] out a new JSON object (json_object_put())
 * @return 0 or the request's error.
 */
CO_MUST_CHECK int
co_kube_client_server_version(struct json_object **out, co_kube_client *client, int64_t max_age_ms);

/**
 * Builds the request path of @p ref ("/apis/apps/v1/namespaces/ns/deployments/name").
 * @param out appended to
 * @param subresource appended after the name, or NULL
 * @return 0; CO_EINVALID when a namespaced object has no namespace or a name is malformed;
 * discovery errors as co_kube_client_mapping().
 */
CO_MUST_CHECK int co_kube_client_path(co_buf *out,
                                      co_kube_client *client,
                                      const co_kube_ref *ref,
                                      const char *subresource);

/* --- operations --------------------------------------------------------------------------- */

/*
 * What the operations return: on success, `*out` is a new object (a reference of its own) that
 * the caller releases with json_object_put(); where `out` may be NULL the answer is read and
 * discarded. On failure `*out` is not written, so callers initialise it to NULL and may put it
 * unconditionally. Strings of a co_kube_ref filled by co_kube_ref_of() are borrowed from the
 * object and live as long as it does.
 */

/**
 * Reads one object (or a subresource of it).
 * @param[out] out the object
 * @param opts NULL for a plain quorum read
 * @return 0; CO_ENOTFOUND; other API errors.
 */
CO_MUST_CHECK int co_kube_get(struct json_object **out,
                              co_kube_client *client,
                              const co_kube_ref *ref,
                              const co_kube_get_options *opts);

/**
 * Reads one page of a collection (ref->name is ignored; namespace NULL lists all namespaces
 * of a namespaced kind). The page's metadata.continue, when non-empty, asks for the next one.
 * Every item carries apiVersion and kind: the API server leaves them out of a built-in type's
 * list, and they are then @p ref's (PartialObjectMetadata's for a metadata-only list).
 * @param[out] out the List object
 * @return 0; CO_EGONE when a continue token has expired; other API errors.
 */
CO_MUST_CHECK int co_kube_list(struct json_object **out,
                               co_kube_client *client,
                               const co_kube_ref *ref,
                               const co_kube_list_options *opts);

/**
 * Reads a whole collection page by page (opts->limit per page, 500 when 0) and calls @p cb for
 * every item, in order. Items are handed over as a page is parsed: one page's text and one
 * item's tree are in memory at a time. A page found malformed after some of its items were
 * handed over still fails the call, so a caller keeps nothing from a call that failed.
 * Items carry their type, as co_kube_list() says.
 * @param[out] rv_out the collection's resourceVersion (free with free()), or NULL
 * @return 0; @p cb's negative result; CO_EGONE when the snapshot expired between pages (list
 * again); other API errors.
 */
CO_MUST_CHECK int co_kube_list_each(char **rv_out,
                                    co_kube_client *client,
                                    const co_kube_ref *ref,
                                    const co_kube_list_options *opts,
                                    co_kube_item_cb cb,
                                    void *payload);

/**
 * Reads a whole collection into one List object (items of every page).
 * @return as co_kube_list_each().
 */
CO_MUST_CHECK int co_kube_list_all(struct json_object **out,
                                   co_kube_client *client,
                                   const co_kube_ref *ref,
                                   const co_kube_list_options *opts);

/**
 * Creates @p obj (apiVersion, kind, metadata.name or generateName, and metadata.namespace for
 * namespaced kinds).
 * @param[out] out the stored object, or NULL
 * @return 0; CO_EEXISTS; CO_EINVALID; other API errors.
 */
CO_MUST_CHECK int co_kube_create(struct json_object **out,
                                 co_kube_client *client,
                                 const struct json_object *obj,
                                 const co_kube_write_options *opts);

/**
 * Replaces @p obj (PUT); with metadata.resourceVersion set, only if it is still current.
 * opts->subresource "status" writes the status subresource.
 * @param[out] out the stored object, or NULL
 * @return 0; CO_ECONFLICT when the resourceVersion is stale; CO_ENOTFOUND; other API errors.
 */
CO_MUST_CHECK int co_kube_update(struct json_object **out,
                                 co_kube_client *client,
                                 const struct json_object *obj,
                                 const co_kube_write_options *opts);

/** co_kube_update() of the status subresource. */
CO_MUST_CHECK int co_kube_update_status(struct json_object **out,
                                        co_kube_client *client,
                                        const struct json_object *obj,
                                        const co_kube_write_options *opts);

/**
 * Patches the object @p ref names.
 * @param patch the patch document: an array for CO_KUBE_PATCH_JSON, an object otherwise
 * @param opts opts->field_manager is required for CO_KUBE_PATCH_APPLY
 * @param[out] out the patched object, or NULL
 * @return 0; CO_ENOTFOUND; CO_ECONFLICT (apply conflicts without force, failed test op);
 * CO_EINVALID; other API errors.
 */
CO_MUST_CHECK int co_kube_patch(struct json_object **out,
                                co_kube_client *client,
                                const co_kube_ref *ref,
                                co_kube_patch_type type,
                                const struct json_object *patch,
                                const co_kube_write_options *opts);

/**
 * Server-side apply of @p obj (the fields this manager wants to own), creating it if needed.
 * @param opts field_manager is required; force takes over conflicting fields
 * @return 0; CO_ECONFLICT when other managers own fields and force is off (the Status
 * details list them); other API errors.
 */
CO_MUST_CHECK int co_kube_apply(struct json_object **out,
                                co_kube_client *client,
                                const struct json_object *obj,
                                const co_kube_write_options *opts);

/**
 * Deletes the object @p ref names.
 * @param[out] out the answer (the object, now with a deletionTimestamp when finalizers hold
 * it, or a Status), or NULL
 * @param opts NULL for the defaults
 * @return 0; CO_ENOTFOUND; CO_ECONFLICT when a precondition fails; other API errors.
 */
CO_MUST_CHECK int co_kube_delete(struct json_object **out,
                                 co_kube_client *client,
                                 const co_kube_ref *ref,
                                 const co_kube_delete_options *opts);

/**
 * Fills @p out with the co_kube_ref of @p obj (apiVersion, kind, namespace, name), borrowing
 * its strings from @p obj.
 * @return 0 or CO_EINVALID naming the missing field.
 */
CO_MUST_CHECK int co_kube_ref_of(co_kube_ref *out, const struct json_object *obj);

#endif
