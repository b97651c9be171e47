/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_pending.h
 * Status writes held back (docs/controller-performance.md, "Deferred status writes"). A pass
 * that applied a Component's objects and now waits for them to become ready ends in the state
 * its status already shows (Processing); what changed is the inventory's phases and digests.
 * Writing that status costs the API server as much as any Component write, and the next pass,
 * queued by the dependents' own changes, usually writes again soon after (Ready). So the pass
 * leaves its status here instead, keyed by Component and by the resourceVersion it was built
 * over, and requeues the Component within CTL_PENDING_MAX_NS. The next pass starts from the
 * held status when the stored object has not changed since, and writes it with its own.
 *
 * Nothing is lost if the process ends with statuses held: the stored inventory still names
 * every object (it was written before they were created), and the next pass applies them again
 * (server-side apply, idempotent). Thread-safe.
 */
#ifndef CTL_PENDING_H
#define CTL_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/duration.h"

struct json_object;

/** The longest a status is held: the pass that defers requeues its Component within this. */
#define CTL_PENDING_MAX_NS (2 * CO_SECOND)

typedef struct ctl_pending ctl_pending;

ctl_pending *ctl_pending_new(void);
void ctl_pending_free(ctl_pending *p);

/** Holds a copy of @p status for @p key ("ns/name"), built over the stored object at
 * resourceVersion @p rv, in place of what was held for the key. False when it cannot be held
 * (no @p rv): then nothing is held for the key, and the status must be written. */
bool ctl_pending_put(ctl_pending *p, const char *key, const char *rv, struct json_object *status);

/** The status held for @p key when it was built over resourceVersion @p rv (a new reference),
 * else NULL. Whatever was held for the key is dropped either way: a status built over an
 * older object is stale. */
struct json_object *ctl_pending_take(ctl_pending *p, const char *key, const char *rv);

/** Drops what is held for @p key (the Component is gone). */
void ctl_pending_drop(ctl_pending *p, const char *key);

/** How many statuses are held. */
size_t ctl_pending_len(ctl_pending *p);

/** The bytes the held statuses' deflated texts take in the heap (without the map's own). */
size_t ctl_pending_bytes(ctl_pending *p);

#endif
