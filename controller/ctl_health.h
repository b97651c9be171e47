/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_health.h
 * Readiness of dependent objects: the kstatus rules (sigs.k8s.io/cli-utils v0.37.2) as the Go
 * framework applies them (docs/behaviour.md, "Health"), with the framework's status hints, its
 * Job override and the extra conditions of CRDs and APIServices.
 *
 * One deliberate difference from the Go original: a Pod in phase Failed is Failed (the original
 * counts it as Current, i.e. ready). Only CTL_HEALTH_CURRENT counts as ready.
 * Pure functions; thread-safe.
 */
#ifndef CTL_HEALTH_H
#define CTL_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "co/util/common.h"

struct json_object;

typedef enum ctl_health {
    CTL_HEALTH_IN_PROGRESS = 0, /**< "InProgress" */
    CTL_HEALTH_CURRENT,         /**< "Current": ready */
    CTL_HEALTH_FAILED,          /**< "Failed" (not special: the item just stays unready) */
    CTL_HEALTH_TERMINATING,     /**< "Terminating": deletionTimestamp set */
    CTL_HEALTH_NOT_FOUND,       /**< "NotFound" */
    CTL_HEALTH_UNKNOWN,         /**< "Unknown" */
} ctl_health;

/** The kstatus name of @p h ("InProgress", "Current", ...). */
const char *ctl_health_name(ctl_health h);

/**
 * Computes the readiness of the live object @p obj.
 *
 * @param[out] out the status
 * @param[out] message_out if not NULL, a short explanation (a static or @p msgbuf string)
 * @param obj the live object (apiVersion, kind, metadata, spec, status)
 * @param hint_key the annotation holding status hints, e.g.
 *        "component-operator.cs.sap.com/status-hint"
 * @param now_unix the current time in seconds (for the Pod scheduling window)
 * @return 0, or CO_EINVALID for an unknown or malformed hint or a status of the wrong shape
 *         (the message names the problem).
 */
CO_MUST_CHECK int ctl_health_compute(ctl_health *out,
                                     const char **message_out,
                                     const struct json_object *obj,
                                     const char *hint_key,
                                     int64_t now_unix);

/**
 * Whether the live object @p obj satisfies a prerequisite or guard (docs/lifecycle.md,
 * "Conditions of other objects"): its condition @p type has status "True". An object without
 * such a condition satisfies the default type "Ready" when ctl_health_compute() judges it
 * Current (so that a Deployment or a ConfigMap can be waited for too); any other absent type is
 * not met.
 * @param obj the live object; NULL = not found (not met)
 * @param[out] met whether the condition holds
 * @param[out] currently when not met, what holds instead, for a message "(currently %s)":
 *         `False: <the condition's message>`, `InProgress: <why>`, `absent`, `not found`
 *         (free()); NULL when met
 */
void ctl_condition_met(bool *met,
                       char **currently,
                       const struct json_object *obj,
                       const char *type,
                       const char *hint_key,
                       int64_t now_unix);

/**
 * Normalises @p in to kebab case exactly like Go's strcase.ToKebab (iancoleman/strcase):
 * "IfUnowned" → "if-unowned", "SSAMerge" → "ssa-merge", "has_ready_condition" →
 * "has-ready-condition". Free the result with free().
 */
char *ctl_to_kebab(const char *in);

#endif
