/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the webhook knows about the cluster: the dependency graph of every Component, the
 * ComponentPolicies, and the labels of every Namespace, fed by watches (wh_cache.c) and read
 * by the admission handlers. The graph also holds *tentative* edges: a Component admitted a
 * moment ago whose write the watch has not delivered yet. They close the race between two
 * concurrent requests (A→B and B→A) handled by this process, and expire after a while in case
 * the write never happened (another webhook denied it, the API server failed). Check and
 * tentative insert happen under one lock (docs/webhook-and-certs.md, "Dependency cycles").
 *
 * Thread-safe. Lock order: policies, namespaces, graph.
 */
#ifndef WH_STATE_H
#define WH_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"
#include "co/api/depgraph.h"
#include "co/api/policy.h"

struct json_object;

typedef struct wh_state wh_state;

/** Default lifetime of a tentative graph entry. */
#define WH_STATE_PENDING_TTL_MS 30000

/** Creates an empty state; @p pending_ttl_ms bounds how long tentative edges live. */
void wh_state_new(wh_state **out, long pending_ttl_ms);

/** Frees the state. NULL is a no-op. */
void wh_state_free(wh_state *s);

/** Replaces the clock (milliseconds, monotonic) for tests; NULL restores the real one. */
void wh_state_set_clock(wh_state *s, uint64_t (*now_ms)(void));

/* --- the watches' side ---------------------------------------------------------------------- */

/**
 * Records the dependencies of a Component as stored in the cluster (either version); any
 * tentative entry for it is dropped. Objects without name or namespace are ignored.
 */
void wh_state_component_put(wh_state *s, const struct json_object *obj);

/** Forgets a deleted Component. */
void wh_state_component_delete(wh_state *s, const struct json_object *obj);

/**
 * Adds or replaces a ComponentPolicy. A policy that does not validate is removed instead (the
 * validating webhook normally keeps such objects out).
 * @return 0, or CO_EINVALID with the reason (the set then lacks that policy).
 */
CO_MUST_CHECK int wh_state_policy_put(wh_state *s, const struct json_object *obj);

/** Forgets a ComponentPolicy. */
void wh_state_policy_delete(wh_state *s, const char *name);

/** Records a Namespace's labels. */
void wh_state_namespace_put(wh_state *s, const struct json_object *obj);

/** Forgets a Namespace. */
void wh_state_namespace_delete(wh_state *s, const char *name);

/** Sizes, for metrics and logs. */
void wh_state_sizes(wh_state *s,
                    size_t *components,
                    size_t *policies,
                    size_t *namespaces,
                    size_t *pending);

/* --- the admission side --------------------------------------------------------------------- */

/** A consistent view for one admission decision; see wh_state_enter(). */
typedef struct wh_state_view {
    wh_state *state;
    const co_policy_set *policies; /**< never NULL */
    co_depgraph *graph;            /**< NULL unless the view was entered with the graph */
} wh_state_view;

/**
 * Takes the read locks on policies and namespaces and, when @p with_graph, the graph lock
 * (expiring old tentative entries first). Leave with wh_state_leave() soon: watch updates
 * wait meanwhile.
 */
void wh_state_enter(wh_state_view *v, wh_state *s, int with_graph);

/**
 * Takes the graph lock (expiring old tentative entries first) in a view entered without it,
 * so that only the part of a decision that reads the graph holds it. No-op when held.
 */
void wh_state_take_graph(wh_state_view *v);

/** Releases what wh_state_enter() and wh_state_take_graph() took. */
void wh_state_leave(wh_state_view *v);

/** Labels of Namespace @p ns (a JSON object), or NULL when unknown. Borrowed from the view. */
const struct json_object *wh_state_namespace_labels(wh_state_view *v, const char *ns);

/**
 * Enters a tentative entry: Component @p key now depends on @p deps, until the watch delivers
 * the Component or the entry expires. The view must hold the graph.
 * @return 0 or CO_EINVALID for a malformed key.
 */
CO_MUST_CHECK int
wh_state_pending_set(wh_state_view *v, const char *key, const char *const *deps, size_t ndeps);

#endif
