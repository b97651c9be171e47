/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file source.h
 * A Component's source, end to end: resolve `spec.sourceRef` to an artifact (url, digest,
 * revision) and the source digest, then materialise the artifact as a local directory from the
 * artifact cache; plus the re-queue triggers (Flux source events, and a poller for HTTP and git
 * sources). This is the one interface the controller uses for sources (docs/behaviour.md,
 * "Sources", "Sticky sources", "Pinning", "Artifacts", "Source-change triggers" and
 * "Retriable errors").
 *
 * Source kinds:
 * - Flux GitRepository, OCIRepository, Bucket, HelmChart (`source.toolkit.fluxcd.io/v1`, or
 *   `v1beta2` where the cluster serves only that): the object must be Ready for its current
 *   generation and carry `status.artifact` url, digest and revision. The download is verified
 *   against the artifact digest.
 * - httpRepository: HEAD resolution as the Go original (co_fetch_head()).
 * - git (ours): ls-remote resolution and checkout with libgit2 (co/source/git.h); credentials
 *   from the Secret `secretRef.name` in the Component's namespace (keys `username`,
 *   `password`, `bearerToken`, `identity`, `identity.pub`, `known_hosts`, as Flux uses).
 *
 * Errors carry a retry delay: the retriable conditions (Flux object or kind missing,
 * source not ready, artifact incomplete, credentials Secret missing, pinned digest or revision
 * not matching) set `*retry_after_ms` to CO_SOURCE_RETRY_MS; every other failure sets it to 0
 * and is for the controller's error handling. A cluster without the Flux CRDs works: Flux kinds
 * then fail with a clear retriable error naming the missing kind.
 *
 * Cluster reads go through the co_source_get_fn seam, so the controller can serve them from
 * its informer cache (the Go original reads Flux sources through the manager's cache) and tests
 * can fake them. A co_sources handle is thread-safe once created.
 *
 * How the controller uses this module
 * -----------------------------------
 * Start-up (once per process):
 *  1. Fill a co_source_config: `cache_dir` (e.g. under the daemon's writable cache volume),
 *     optionally `cache_max_bytes`, `fetch` and `git` options (zero = defaults), and the
 *     cluster-read seam `get`/`get_ctx`. `get` is called from every reconcile worker and from
 *     the poller thread at the same time, so it must be thread-safe. It is asked for
 *     `source.toolkit.fluxcd.io/v1` (then `v1beta2` after CO_ENOMATCH) GitRepository,
 *     OCIRepository, Bucket and HelmChart objects, and for `v1` Secrets (git credentials).
 *     Serve the Flux kinds from the informer cache: return a new reference to the cached
 *     object (json_object_get()), CO_ENOTFOUND when the store has no such object, and
 *     CO_ENOMATCH when discovery says the cluster does not serve that group/version/kind (no
 *     informer is running for it) — never block waiting for a cache that cannot sync. Secrets
 *     may be read live from the API server (the controller does not need to cache them).
 *  2. co_sources_new(). One handle for all workers.
 *  3. co_source_poller_new() with the HTTP polling interval flag (0 = 30 s) and a
 *     `changed` callback that enqueues the Component key it is given (it runs on the poller's
 *     thread: enqueue only, do not reconcile there). Call co_source_poller_set_leader(p, 1)
 *     when leadership is gained and (p, 0) when it is lost: polling is leader-only, as in the
 *     Go original; every replica keeps its watch list, so a new leader polls overdue sources at
 *     once.
 *  4. For Flux sources, in the informer's update handler of each Flux kind: look up the
 *     Components indexed under co_source_index_key() of the updated object and enqueue those
 *     for which co_source_should_requeue(new_object, component) is true. Create and
 *     delete events are ignored, as in the Go original.
 *
 * Per reconcile of a Component (not being deleted):
 *  1. co_source_spec_parse(&ref, spec.sourceRef) — CO_EINVALID is a spec error (state Error).
 *  2. Sticky shortcut (the controller's decision): if it applies, reuse status.sourceRef and
 *     skip to step 5 with that artifact.
 *  3. co_source_resolve(s, &ref, component_ns, &artifact, &retry_ms). On failure:
 *     retry_ms > 0 means a retriable condition (source not ready, Flux object or kind missing,
 *     incomplete artifact, credentials Secret missing): state Pending, reason Retrying,
 *     co_error_last() as the message, requeue after retry_ms. retry_ms == 0: a plain error
 *     (HEAD failure, git failure, ...) for the controller's error path (state Error, backoff).
 *     On success `artifact` holds url, digest, revision and source_digest: write them to
 *     status.sourceRef; source_digest feeds the Component digest.
 *  4. co_source_check_pins(&artifact, spec.digest, spec.revision, &retry_ms): on failure the
 *     same retriable mapping as above (CO_ECONFLICT, retry_ms = CO_SOURCE_RETRY_MS).
 *  5. co_source_fetch(s, &ref, component_ns, &artifact, &tree, NULL): the verified, extracted
 *     artifact held in the cache (downloaded at most once per digest, also across workers
 *     asking at the same time). Failures are non-retriable errors (digest mismatch, truncated
 *     download, hostile archive, ...); nothing half-written is ever used.
 *  6. co_source_tree_path(tree, spec.path, &dir): the absolute directory to render from; its
 *     errors say which path is missing or not a directory. Render, then free(dir) and
 *     co_source_tree_release(tree) (the tree may not be evicted while held; release it as soon as
 *     rendering is done).
 *  7. For HTTP and git sources: co_source_poller_watch(p, "ns/name", &ref, component_ns,
 *     status.lastAttemptedDigest, status.lastAttemptedRevision) after every attempt (it
 *     updates the watch in place), and co_source_poller_unwatch() when the Component is
 *     deleted or switches to a Flux source.
 */
#ifndef CO_SOURCE_H
#define CO_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "co/source/archive.h"
#include "co/util/buf.h"
#include "co/util/common.h"
#include "co/source/fetch.h"
#include "co/source/git.h"
#include "co/source/source_kind.h"

struct json_object;

/** The delay of every retriable source error (10 s, as in the Go original). */
#define CO_SOURCE_RETRY_MS 10000L
/** Default polling interval of HTTP repositories (the Go original's 30 s). */
#define CO_SOURCE_HTTP_POLL_MS 30000L
/** Default polling interval of git sources without `interval`. */
#define CO_SOURCE_GIT_POLL_MS 60000L

/**
 * A validated, flattened view of `spec.sourceRef` as the source layer uses it. The kind is
 * co_source_kind (co/source/source_kind.h), the one definition of what a sourceRef is, shared
 * with the API model; build the view from the JSON with co_source_spec_parse(), or from the
 * model's parsed co_source_ref with co_source_spec_from_ref() (co/api/component.h). Strings are
 * borrowed from what it was built from.
 */
typedef struct co_source_spec {
    co_source_kind kind;
    const char *ns;              /**< Flux kinds: the object's namespace; NULL: the Component's */
    const char *name;            /**< Flux kinds: the object's name */
    const char *url;             /**< httpRepository and git */
    const char *digest_header;   /**< httpRepository: default "ETag" */
    const char *revision_header; /**< httpRepository: default the digest header */
    co_git_ref git;              /**< git: the reference */
    const char *secret_name;     /**< git: `secretRef.name` (Component namespace), or NULL */
    long interval_ms;            /**< git: polling interval, 0 for CO_SOURCE_GIT_POLL_MS */
} co_source_spec;

/**
 * Parses `spec.sourceRef` (exactly one variant must be set).
 * @param[out] out borrows strings from @p source_ref
 * @return 0 or CO_EINVALID naming the field ("sourceRef.git.url: ...").
 */
CO_MUST_CHECK int co_source_spec_parse(co_source_spec *out, const struct json_object *source_ref);

/** The Flux kind name ("GitRepository", ...), or NULL for other kinds. */
const char *co_source_flux_kind(co_source_kind kind);

/**
 * The key under which the controller indexes Components by Flux source:
 * "<Kind>/<namespace>/<name>" (the namespace defaulted to @p component_ns); NULL for non-Flux
 * kinds. Free with free().
 */
char *co_source_index_key(const co_source_spec *ref, const char *component_ns);

/**
 * Reads one object for the source layer: @p api_version, @p kind, @p ns, @p name. On success a
 * new reference goes to @p out (release with json_object_put()).
 * @return 0; CO_ENOTFOUND; CO_ENOMATCH when the cluster does not serve the kind; any other
 *         error code with the last error set.
 */
typedef int (*co_source_get_fn)(void *ctx,
                                const char *api_version,
                                const char *kind,
                                const char *ns,
                                const char *name,
                                struct json_object **out);

/** Configuration of a co_sources handle; zero fields take defaults. */
typedef struct co_source_config {
    const char *cache_dir;    /**< artifact cache and git repositories (required) */
    uint64_t cache_max_bytes; /**< artifact cache size [CO_DEFAULT_SOURCE_CACHE] */
    co_fetch_options fetch;   /**< downloads and HEAD requests */
    co_git_options git;       /**< git operations */
    co_source_get_fn get;     /**< cluster reads (Flux objects, Secrets); NULL: none */
    void *get_ctx;            /**< passed to @p get */
    co_archive_limits limits; /**< extraction and checkout caps [CO_MAX_EXTRACT_*] */
} co_source_config;

typedef struct co_sources co_sources;

/** Creates the handle. @return 0 or CO_ERROR (cache directory unusable). */
CO_MUST_CHECK int co_sources_new(co_sources **out, const co_source_config *cfg);

/** Frees the handle. NULL is a no-op. */
void co_sources_free(co_sources *s);

/** A resolved artifact (`status.sourceRef`). */
typedef struct co_source_artifact {
    char *url;           /**< status.sourceRef.artifact.url */
    char *digest;        /**< status.sourceRef.artifact.digest */
    char *revision;      /**< status.sourceRef.artifact.revision */
    char *source_digest; /**< status.sourceRef.digest: feeds the Component digest */
} co_source_artifact;

/** Frees the strings of @p a and zeroes it. NULL is a no-op. */
void co_source_artifact_dispose(co_source_artifact *a);

/**
 * Resolves @p ref for a Component in namespace @p component_ns. For git sources a new
 * commit is also fetched and checked out into the cache here, because the artifact digest is
 * the digest of its tree.
 * @param[out] out written on success
 * @param[out] retry_after_ms always written: CO_SOURCE_RETRY_MS for a retriable failure, else 0
 * @return 0 or an error code; the message is what the Component's status should say.
 */
CO_MUST_CHECK int co_source_resolve(co_sources *s,
                                    const co_source_spec *ref,
                                    const char *component_ns,
                                    co_source_artifact *out,
                                    long *retry_after_ms);

/**
 * The pin check (spec.digest, spec.revision): @p spec_digest / @p spec_revision (NULL or "" = no
 * pin) against the resolved artifact. A mismatch is retriable: "source digest (X) does not match
 * specified digest (Y)".
 * @return 0 or CO_ECONFLICT (with *retry_after_ms = CO_SOURCE_RETRY_MS).
 */
CO_MUST_CHECK int co_source_check_pins(const co_source_artifact *a,
                                       const char *spec_digest,
                                       const char *spec_revision,
                                       long *retry_after_ms);

/** A materialised artifact: a directory held in the cache until released. */
typedef struct co_source_tree co_source_tree;

/**
 * Materialises the artifact @p a of @p ref: from the cache when present, else downloaded
 * (verified against the digest where it is one), extracted and cached; git sources are checked
 * out. Nothing half-written is ever returned or cached.
 * @param[out] out release with co_source_tree_release()
 * @param[out] downloaded (may be NULL) 1 when this call downloaded or checked out, else 0
 * @return 0 or the fetch, git or extraction error.
 */
CO_MUST_CHECK int co_source_fetch(co_sources *s,
                                  const co_source_spec *ref,
                                  const char *component_ns,
                                  const co_source_artifact *a,
                                  co_source_tree **out,
                                  int *downloaded);

/**
 * Fills a tree: creates the directory @p dir (which does not exist yet) holding the tree and
 * stores the bytes it occupies in @p bytes (co_srccache_fill_fn).
 */
typedef int (*co_source_fill_fn)(void *ctx, const char *dir, uint64_t *bytes);

/**
 * Materialises a tree the caller writes (a source held in the cluster, such as a
 * BlueprintVersion) through the artifact cache: looked up under the cache key of @p id (a
 * content digest, possibly prefixed to keep kinds apart); on a miss @p fill writes it, once
 * across threads and processes. The tree is held, confined and evicted as fetched ones are.
 * @param[out] out release with co_source_tree_release()
 * @param[out] filled (may be NULL) 1 when this call ran @p fill, else 0
 * @return 0 or the fill function's or the cache's error.
 */
CO_MUST_CHECK int co_source_materialise(co_sources *s,
                                        const char *id,
                                        co_source_fill_fn fill,
                                        void *ctx,
                                        co_source_tree **out,
                                        int *filled);

/** The artifact's root directory (borrowed; valid until release). */
const char *co_source_tree_dir(const co_source_tree *t);

/**
 * Resolves `spec.path` inside the artifact: "" is the root; the path may not leave the
 * artifact, also not through symlinks.
 * @param[out] out an absolute directory path (free with free())
 * @return 0; CO_ENOTFOUND "no such file or directory: <path>"; CO_EINVALID
 *         "not a directory: <path>" or a path leaving the artifact.
 */
CO_MUST_CHECK int co_source_tree_path(const co_source_tree *t, const char *path, char **out);

/** Releases a tree (it becomes evictable). NULL is a no-op. */
void co_source_tree_release(co_source_tree *t);

/* ---- triggers ---------------------------------------------------------------------------- */

/**
 * Whether a Flux source object is Ready for its generation with a complete artifact (the condition
 * for re-queueing its Components). @p digest / @p revision (may be NULL) borrow from @p obj.
 */
bool co_source_flux_has_artifact(const struct json_object *obj,
                                 const char **digest,
                                 const char **revision);

/**
 * The re-queue filter for one Component when its Flux source @p source was updated:
 * true when the source has a ready artifact and the Component is not already Ready
 * (observedGeneration == generation, state Ready) with lastAttemptedDigest and
 * lastAttemptedRevision equal to the artifact's.
 */
bool co_source_should_requeue(const struct json_object *source,
                              const struct json_object *component);

/** Called by the poller when a watched source changed; runs on the poller's thread. */
typedef void (*co_source_changed_fn)(void *ctx,
                                     const char *key,
                                     const char *digest,
                                     const char *revision);
/** Called by the poller when polling a source failed (the daemon logs it). */
typedef void (*co_source_poll_error_fn)(void *ctx, const char *key, int code, const char *message);

typedef struct co_source_poller co_source_poller;

/**
 * Starts a poller thread for HTTP repositories (every @p http_interval_ms, 0 for
 * CO_SOURCE_HTTP_POLL_MS) and git sources (their own interval). It polls only while it is
 * leader (co_source_poller_set_leader()), like the Go original's leader-only checker.
 * @return 0 or CO_ERROR.
 */
CO_MUST_CHECK int co_source_poller_new(co_source_poller **out,
                                       co_sources *s,
                                       long http_interval_ms,
                                       co_source_changed_fn changed,
                                       co_source_poll_error_fn failed,
                                       void *ctx);

/** Stops the thread and frees the poller. NULL is a no-op. */
void co_source_poller_free(co_source_poller *p);

/** Starts (non-zero) or stops (0) polling, e.g. on gaining or losing leadership. */
void co_source_poller_set_leader(co_source_poller *p, int leader);

/**
 * Watches the source of Component @p key ("namespace/name"), or updates the watch: HTTP and git
 * kinds only (others: CO_EINVALID). @p last_digest / @p last_revision are the Component's
 * lastAttemptedDigest/Revision; a poll that finds anything else calls `changed` (HTTP: digest or
 * revision differ, as in the Go original; git: the revision, which names the commit, differs,
 * and `changed` gets a NULL digest because the tree is not fetched to poll). Strings are
 * copied. A new watch is first polled at the next multiple of its interval on the monotonic
 * clock, so that watches of one interval fall due together: Components of one namespace that
 * name the same source share one poll per round.
 */
CO_MUST_CHECK int co_source_poller_watch(co_source_poller *p,
                                         const char *key,
                                         const co_source_spec *ref,
                                         const char *component_ns,
                                         const char *last_digest,
                                         const char *last_revision);

/** Stops watching @p key (unknown keys are fine). */
void co_source_poller_unwatch(co_source_poller *p, const char *key);

/** Polls every watched source now (still only when leader). For tests and start-up. */
void co_source_poller_poll_now(co_source_poller *p);

/** Number of completed poll rounds (for tests). */
unsigned long co_source_poller_rounds(co_source_poller *p);

/** Number of sources watched now (for tests and metrics). Thread-safe. */
size_t co_source_poller_len(co_source_poller *p);

/* ---- digests ----------------------------------------------------------------------------- */

/**
 * The source digest of a Flux object: sha256 hex of Go's JSON of
 * `[uid, generation, annotations, url, digest, revision]` (annotations `null` when absent).
 * @param[out] out free with free()
 * @return 0 or CO_EINVALID (object without metadata).
 */
CO_MUST_CHECK int co_source_flux_digest(char **out,
                                        const struct json_object *obj,
                                        const char *url,
                                        const char *digest,
                                        const char *revision);

/** The source digest of HTTP and git sources: sha256 hex of JSON `[url, digest, revision]`. */
void co_source_plain_digest(char **out, const char *url, const char *digest, const char *revision);

#endif
