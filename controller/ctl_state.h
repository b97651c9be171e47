/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_state.h
 * The pure pieces of the Component state machine (docs/behaviour.md, "States and reasons", "Ready
 * condition" and "Intervals and requeue"): state and reason names, the Ready condition rewrite with
 * its lastTransitionTime rule, the capitalised error text, the requeue jitter, and the internal
 * backoff ramp the Go framework uses for Processing, DeletionProcessing, DeletionBlocked and
 * Suspended.
 *
 * The reconciler writes the state into the typed status (co/api/component.h); the readers of
 * cached objects (the manager's informer handlers, tests) read it from the JSON.
 * Functions without a handle are thread-safe; a ctl_backoff is thread-safe.
 */
#ifndef CTL_STATE_H
#define CTL_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "co/api/component.h"
#include "co/util/common.h"

struct json_object;

/* States (status.state). */
#define CTL_STATE_READY            "Ready"
#define CTL_STATE_PENDING          "Pending"
#define CTL_STATE_PROCESSING       "Processing"
#define CTL_STATE_DELETION_PENDING "DeletionPending"
#define CTL_STATE_DELETING         "Deleting"
#define CTL_STATE_ERROR            "Error"
/* Ours (docs/lifecycle.md): working but needing attention; released dependents. */
#define CTL_STATE_WARNING   "Warning"
#define CTL_STATE_UNMANAGED "Unmanaged"

/* Reasons of the Ready condition. */
#define CTL_REASON_SUSPENDED           "Suspended"
#define CTL_REASON_RETRYING            "Retrying"
#define CTL_REASON_TIMEOUT             "Timeout"
#define CTL_REASON_PROCESSING          "Processing"
#define CTL_REASON_READY               "Ready"
#define CTL_REASON_ERROR               "Error"
#define CTL_REASON_DELETION_RETRYING   "DeletionRetrying"
#define CTL_REASON_DELETION_BLOCKED    "DeletionBlocked"
#define CTL_REASON_DELETION_PROCESSING "DeletionProcessing"
/* Ours (not in the Go original). */
#define CTL_REASON_DEPENDENCY_CYCLE "DependencyCycle"
#define CTL_REASON_POLICY_VIOLATION "PolicyViolation"
/** The Component fails the webhook's validation (the webhook was bypassed). */
#define CTL_REASON_INVALID_SPEC "InvalidSpec"
/* Lifecycle controls (docs/lifecycle.md). */
#define CTL_REASON_FIRST_SEEN           "FirstSeen"
#define CTL_REASON_DISABLED             "Disabled"
#define CTL_REASON_UNMANAGED            "Unmanaged"
#define CTL_REASON_DEGRADED             "Degraded"
#define CTL_REASON_DOWN                 "Down"
#define CTL_REASON_PENDING_SUSPENSION   "PendingSuspension"
#define CTL_REASON_SUSPENDING           "Suspending"
#define CTL_REASON_BLOCKED              "Blocked"
#define CTL_REASON_PREREQUISITE_NOT_MET "PrerequisiteNotMet"
/** Warning: a ComponentPolicy rule with action Warn matched at reconcile. */
#define CTL_REASON_POLICY_WARNING "PolicyWarning"
/** Warning: an auxiliary dependent has been unready for longer than the grace period. */
#define CTL_REASON_AUXILIARY_UNREADY "AuxiliaryUnready"

/** The condition beside Ready that the grace period sets (docs/lifecycle.md, "Grace period and
 * Degraded"); present only while it is True. */
#define CTL_CONDITION_DEGRADED "Degraded"

/* --- drift detection (docs/drift.md, "Reporting") --- */
/** The condition naming the dependents that drifted from their manifests and were kept so
 * (drift policy Warn); present only while some are. */
#define CTL_CONDITION_DRIFTED "Drifted"
/** Its reason, and that of the event when the drifted set changes. */
#define CTL_REASON_DRIFTED "Drifted"
/** The event when no dependent is drifted any more. */
#define CTL_REASON_DRIFT_RESOLVED "DriftResolved"
/** Most objects the condition names. */
#define CTL_DRIFT_MAX_OBJECTS 10

/* Messages, verbatim from the Go framework (spelling included). */
#define CTL_MSG_SUSPENDED "Reconciliation is suspended"
#define CTL_MSG_PROCESSING                                                                         \
    "Reconcilation of dependent resources triggered; waiting until all dependent resources are "   \
    "ready"
#define CTL_MSG_READY       "Dependent resources successfully reconciled"
#define CTL_MSG_TIMEOUT     "Reconcilation of dependent resources timed out"
#define CTL_MSG_FOREIGN_FIN "Deletion blocked due to existing foreign finalizers"
#define CTL_MSG_DELETION_PROCESSING                                                                \
    "Deletion of dependent resources triggered; waiting until dependent resources are deleted"

/**
 * Sets status.state and rewrites the Ready condition of @p status (docs/behaviour.md, "Ready
 * condition"): Ready, Warning and Unmanaged → "True", Error → "False", anything else →
 * "Unknown". lastTransitionTime
 * becomes @p now_ns only when the condition is new or its status value changes. Ready comes first;
 * a Degraded and a Drifted condition (ctl_condition_put()) are kept after it; other conditions
 * are dropped (the framework keeps only Ready). @p message may be NULL ("").
 */
void ctl_state_set(co_component_status *status,
                   const char *state,
                   const char *reason,
                   const char *message,
                   int64_t now_ns);

/**
 * Sets the condition @p type (not "Ready") of @p status to @p cstatus ("True", "False",
 * "Unknown"), adding it after the others when absent; lastTransitionTime follows the rule of
 * ctl_state_set(). @p message may be NULL ("").
 */
void ctl_condition_put(co_component_status *status,
                       const char *type,
                       const char *cstatus,
                       const char *reason,
                       const char *message,
                       int64_t now_ns);

/** Removes the condition @p type from @p status; absent is a no-op. */
void ctl_condition_remove(co_component_status *status, const char *type);

/** The condition @p type of @p status, or NULL. Borrowed. */
const co_condition *ctl_condition_find(const co_component_status *status, const char *type);

/* --- one reason, chosen by priority (docs/lifecycle.md, "One reason, chosen by priority") --- */

/** The tiers of the framework's priority, most critical first. */
typedef enum ctl_reason_tier {
    CTL_TIER_FAILURE = 1,      /**< Error, Timeout, Retrying, Down, Degraded, ... */
    CTL_TIER_SUSPENSION = 2,   /**< Suspended, PendingSuspension, Suspending */
    CTL_TIER_DISABLED = 3,     /**< Disabled, Unmanaged */
    CTL_TIER_PRECONDITION = 4, /**< Blocked, PrerequisiteNotMet */
    CTL_TIER_PROGRESS = 5,     /**< Processing, FirstSeen, deletion in progress, unknown reasons */
    CTL_TIER_ATTENTION = 6,    /**< PolicyWarning, AuxiliaryUnready: working, needing attention */
    CTL_TIER_READY = 7,        /**< Ready */
} ctl_reason_tier;

/** The tier of a Ready condition reason; unknown reasons (and NULL) count as progress. */
ctl_reason_tier ctl_reason_priority(const char *reason);

/** One candidate outcome of a pass. Strings borrowed. */
typedef struct ctl_candidate {
    const char *state;
    const char *reason;
    const char *message;
} ctl_candidate;

/**
 * The index of the candidate whose reason has the most critical tier; among equals the first
 * wins (the pass's own outcome goes first). @p n must be > 0.
 */
size_t ctl_candidate_pick(const ctl_candidate *c, size_t n);

/** status.state, or "" when unset. Borrowed from @p status. */
const char *ctl_state_get(const struct json_object *status);

/** The Ready condition's reason, or "" when unset. Borrowed from @p status. */
const char *ctl_state_reason(const struct json_object *status);

/** A copy of @p msg with its first letter upper-cased ASCII-wise (free with free()). */
char *ctl_capitalise(const char *msg);

/**
 * Adds the framework's requeue jitter: @p delay_ns plus 1–5 % of it, chosen by @p rnd.
 * Zero and negative delays are returned unchanged.
 */
int64_t ctl_jitter(int64_t delay_ns, uint64_t rnd);

/** Whether a Component object is Ready in the sense of the dependency gate (docs/behaviour.md,
 * "Dependencies"): status.observedGeneration == metadata.generation and status.state is Ready or
 * Warning (working, needing attention; docs/lifecycle.md). */
bool ctl_state_component_ready(const struct json_object *component);

/** ctl_state_component_ready() of a parsed Component. */
bool ctl_state_ready(const co_component *component);

/* --- the framework's internal backoff (docs/behaviour.md, "Intervals and requeue") ---------- */

typedef struct ctl_backoff ctl_backoff;

/** Creates an empty backoff table. */
ctl_backoff *ctl_backoff_new(void);

/** Frees it. NULL is a no-op. */
void ctl_backoff_free(ctl_backoff *b);

/**
 * The next delay for @p key doing @p activity: about 50, 100, 200, 400, 800 ms, then 1 s up to
 * the 20th call, 2 s up to the 50th, then 10 s. A different activity than last time starts the
 * ramp over.
 */
int64_t ctl_backoff_next(ctl_backoff *b, const char *key, const char *activity);

/** Starts the ramp of @p key over (inventory changed, Ready, any error, digest change). */
void ctl_backoff_forget(ctl_backoff *b, const char *key);

/** The delay of the @p n-th (1-based) consecutive call. */
int64_t ctl_backoff_delay(int n);

#endif
