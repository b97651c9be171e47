/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kube_lease.h
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.
 *
 * A candidate tries to acquire the Lease every retry period (with jitter). It may take it when
 * the Lease has no holder or when the holder has not renewed it for a whole lease duration,
 * measured on the candidate's own monotonic clock from the moment it last saw the Lease change
 * (so clock skew between machines does not matter). Writes carry the resourceVersion read, so
 * two candidates can never both succeed. The leader renews every retry period; if it cannot
 * renew within the renew deadline it stops leading and says so (on_stopped_leading) before the
 * lease duration runs out for the others. Stopping a leader releases the Lease (holder
 * cleared), so another candidate takes over at once.
 *
 * Requires renew_deadline < lease_duration and retry_period < renew_deadline. Callbacks run on
 * the elector's thread and must return promptly. Ownership follows shared/README.md.
 */
#ifndef CO_KUBE_LEASE_H
#define CO_KUBE_LEASE_H

#include <stdbool.h>

#include "co/util/common.h"
#include "co/kube/kube_client.h"

typedef struct co_kube_leader co_kube_leader;

typedef struct co_kube_leader_options {
    const char *namespace;  /**< the Lease's namespace (required) */
    const char *name;       /**< the Lease's name (required) */
    const char *identity;   /**< this candidate, unique (required; e.g. hostname_uuid) */
    long lease_duration_ms; /**< 0: 15 s */
    long renew_deadline_ms; /**< 0: 10 s */
    long retry_period_ms;   /**< 0: 2 s */
    void (*on_started_leading)(void *payload); /**< this candidate became the leader */
    void (*on_stopped_leading)(void *payload); /**< it lost or gave up leadership */
    void (*on_new_leader)(const char *identity, void *payload); /**< the holder changed */
    void *payload;                                              /**< for the callbacks */
} co_kube_leader_options;

/**
 * Creates an elector (not yet running).
 * @param client borrowed; must outlive the elector
 * @param opts copied
 * @return 0 or CO_EINVALID (missing names, inconsistent durations).
 */
CO_MUST_CHECK int co_kube_leader_new(co_kube_leader **out,
                                     co_kube_client *client,
                                     const co_kube_leader_options *opts);

/** Starts campaigning on a thread of its own. After leadership is lost the elector stops
 * campaigning (the usual reaction is to exit the process). @return 0 or CO_ERROR. */
CO_MUST_CHECK int co_kube_leader_start(co_kube_leader *le);

/** Whether this candidate currently holds the Lease (as far as it knows). */
bool co_kube_leader_is_leader(co_kube_leader *le);

/** Whether leadership was held and then lost (the elector has stopped campaigning). */
bool co_kube_leader_lost(co_kube_leader *le);

/** Stops campaigning; a leader releases the Lease first (on_stopped_leading runs). Waits for
 * the thread. Idempotent. */
void co_kube_leader_stop(co_kube_leader *le);

/** Stops and frees. NULL is a no-op. */
void co_kube_leader_free(co_kube_leader *le);

/**
 * One attempt to acquire or renew, as the elector's thread makes it; for callers that drive
 * the schedule themselves and for tests.
 * @param[out] acquired 1 when this candidate holds the Lease afterwards
 * @return 0 (whether or not the Lease was acquired); an API error when the Lease could not be
 * read or written for another reason than a lost race.
 */
CO_MUST_CHECK int co_kube_leader_try(int *acquired, co_kube_leader *le);

/** Releases the Lease if this candidate holds it. @return 0 or an API error. */
CO_MUST_CHECK int co_kube_leader_release(co_kube_leader *le);

/** The holder last seen (borrowed until the next call on @p le; "" when none). Not
 * thread-safe with a running elector: use it from callbacks or after stop. */
const char *co_kube_leader_holder(co_kube_leader *le);

#endif
