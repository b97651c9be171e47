/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file depgraph.h
 * The dependency graph of a set of Components, for cycle detection at admission (webhook) and
 * as the controller's DependencyCycle backstop.
 *
 * Nodes are keys `<namespace>/<name>`; edges go from a Component to each of its dependencies
 * (spec.dependencies, namespace defaulted to the Component's). A dependency on a key that no
 * Component occupies is a *missing target*, never a cycle. Edges to missing targets are kept,
 * so a cycle closes as soon as the missing Component appears with edges back.
 *
 * co_depgraph_check() answers "would giving this Component these dependencies close a cycle?"
 * by following only the edges that are new compared with what the graph holds for it (a
 * cycle that already existed is not blamed on an unrelated update), and returns the path,
 * e.g. `ns/a -> ns/b -> ns/a`. co_depgraph_find_cycles() lists every cycle present.
 *
 * A graph is not thread-safe: the owner serialises access (one mutex around check-then-set).
 */
#ifndef CO_DEPGRAPH_H
#define CO_DEPGRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "co/util/common.h"

struct co_component;
struct co_jv;
struct json_object;

typedef struct co_depgraph co_depgraph;

/** A list of strings owned by whoever received it (co_depgraph_list_dispose()). */
typedef struct co_depgraph_list {
    char **items; /**< the strings */
    size_t len;   /**< number of strings */
} co_depgraph_list;

/** Frees every string and the array; the list is empty afterwards. NULL is a no-op. */
void co_depgraph_list_dispose(co_depgraph_list *list);

/** Creates an empty graph (aborts on OOM, like every small allocation); free it with
 * co_depgraph_free(). */
co_depgraph *co_depgraph_new(void);

/** Frees the graph. NULL is a no-op. */
void co_depgraph_free(co_depgraph *g);

/** Number of Components in the graph (missing targets not counted). */
size_t co_depgraph_size(const co_depgraph *g);

/**
 * Adds or replaces the Component @p key with dependencies @p deps (keys `ns/name`, already
 * namespace-defaulted; duplicates are stored once). Strings are copied.
 * @return 0; CO_EINVALID when a key is not of the form `ns/name`.
 */
CO_MUST_CHECK int
co_depgraph_set(co_depgraph *g, const char *key, const char *const *deps, size_t ndeps);

/**
 * Adds or replaces a Component given as a JSON object of either served version (namespace and
 * name from metadata; @p ns overrides the namespace when not NULL).
 * @return 0; CO_EINVALID when the object has no namespace or name or is not a Component.
 */
CO_MUST_CHECK int
co_depgraph_set_object(co_depgraph *g, const struct json_object *obj, const char *ns);

/** Removes the Component @p key (its outgoing edges go; edges pointing to it stay, now to a
 * missing target). Unknown keys are ignored. */
void co_depgraph_remove(co_depgraph *g, const char *key);

/** Whether a Component with @p key is in the graph. */
bool co_depgraph_contains(const co_depgraph *g, const char *key);

/**
 * Would replacing the dependencies of @p key by @p deps close a cycle? Only edges not already
 * present for @p key are followed. The graph is not changed.
 * @param[out] cycle_out on CO_ECONFLICT, the cycle path `key -> ... -> key` (free with free())
 * @return 0 when no cycle closes; CO_ECONFLICT when one does; CO_EINVALID for a malformed key.
 */
CO_MUST_CHECK int co_depgraph_check(char **cycle_out,
                                    const co_depgraph *g,
                                    const char *key,
                                    const char *const *deps,
                                    size_t ndeps);

/**
 * Like co_depgraph_check() for a Component given as a JSON object of either served version.
 * @return 0, CO_ECONFLICT (cycle in @p cycle_out) or CO_EINVALID.
 */
CO_MUST_CHECK int co_depgraph_check_object(char **cycle_out,
                                           const co_depgraph *g,
                                           const struct json_object *obj,
                                           const char *ns);

/**
 * The dependencies of the Component @p key, as last set (namespace-defaulted, in the order
 * given, duplicates once).
 * @param[out] out the keys; dispose with co_depgraph_list_dispose()
 * @return 0; CO_ENOTFOUND when no Component occupies @p key (a missing target included).
 */
CO_MUST_CHECK int co_depgraph_deps(co_depgraph_list *out, const co_depgraph *g, const char *key);

/**
 * Lists the dependencies of @p key that no Component occupies (in the order given).
 * @param[out] out the missing keys; dispose with co_depgraph_list_dispose(). @return 0.
 */
CO_MUST_CHECK int co_depgraph_missing(co_depgraph_list *out,
                                      const co_depgraph *g,
                                      const char *const *deps,
                                      size_t ndeps);

/**
 * Whether @p to can be reached from @p from along dependency edges (a key reaches itself), so
 * that an edge a -> b lies on a cycle exactly when b reaches a. Unknown keys reach nothing.
 */
bool co_depgraph_reaches(const co_depgraph *g, const char *from, const char *to);

/**
 * A cycle through @p key in the current graph, if there is one (shortest found first by
 * breadth-first search).
 * @param[out] cycle_out the path `key -> ... -> key` (free with free())
 * @return 0 when found, CO_ENOTFOUND when @p key is on no cycle.
 */
CO_MUST_CHECK int co_depgraph_cycle_of(char **cycle_out, const co_depgraph *g, const char *key);

/**
 * Every cycle of the graph: one path per strongly connected component (and per self-loop),
 * starting at its smallest key, the list sorted. Deterministic.
 * @param[out] out the paths; dispose with co_depgraph_list_dispose(). @return 0.
 */
CO_MUST_CHECK int co_depgraph_find_cycles(co_depgraph_list *out, const co_depgraph *g);

/**
 * The Components that depend on @p key (reverse edges), sorted.
 * @param[out] out the keys; dispose with co_depgraph_list_dispose(). @return 0.
 */
CO_MUST_CHECK int
co_depgraph_dependents(co_depgraph_list *out, const co_depgraph *g, const char *key);

/**
 * The dependency keys of a Component object (either version), namespace-defaulted, duplicates
 * removed, in document order; entries without a string name are skipped.
 * @param[out] out the keys; dispose with co_depgraph_list_dispose()
 * @param[out] key_out the Component's own key `ns/name` (free with free()), or NULL
 * @return 0; CO_EINVALID when the namespace or name is unknown or the object is not a Component.
 */
CO_MUST_CHECK int co_depgraph_object_deps(co_depgraph_list *out,
                                          char **key_out,
                                          const struct json_object *obj,
                                          const char *ns);

/**
 * A cycle path (`a -> b -> a`, as co_depgraph_check() writes it) fit for the owner of the
 * Component @p key: keys in its own namespace and the dependencies it names itself (@p deps)
 * stay, every other key reads "(a Component in another namespace)", so that a message never
 * names what the reader may not be allowed to see.
 * @return a new string (free()).
 */
char *
co_depgraph_redact_path(const char *path, const char *key, const char *const *deps, size_t ndeps);

/**
 * co_depgraph_object_deps() of a parsed Component (co/api/component.h), with its namespace.
 * @param[out] out the keys; dispose with co_depgraph_list_dispose()
 * @return 0; CO_EINVALID when the Component has no namespace.
 */
CO_MUST_CHECK int co_depgraph_component_deps(co_depgraph_list *out, const struct co_component *c);

/** co_depgraph_object_deps() of a Component in a co_jdoc document (see co/json/jdoc.h). */
CO_MUST_CHECK int co_depgraph_object_deps_jv(co_depgraph_list *out,
                                             char **key_out,
                                             const struct co_jv *obj,
                                             const char *ns);

#endif
