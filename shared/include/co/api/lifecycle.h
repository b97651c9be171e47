/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file lifecycle.h
 * The lifecycle controls of a Component (docs/lifecycle.md) that live outside its spec: the
 * annotations a dependent object may carry (mode, guard), the labels that stop reconciliation,
 * and the compact text form of a guard. The spec fields themselves (enabled, managed,
 * gracePeriod, suspendMode, prerequisites) are in co/api/component.h.
 *
 * Pure functions; thread-safe.
 */
#ifndef CO_LIFECYCLE_H
#define CO_LIFECYCLE_H

#include <stdbool.h>

#include "co/util/common.h"
#include "co/api/component.h"

/** Dependent annotation: "read-only" or "delete-only" (docs/lifecycle.md, "Object modes"). */
#define CO_LIFECYCLE_MODE_ANNOTATION "component-operator.cs.sap.com/mode"
/** Dependent annotation: a guard (docs/lifecycle.md, "Guards"). */
#define CO_LIFECYCLE_GUARD_ANNOTATION "component-operator.cs.sap.com/guard"
/** Component label: "true" stops every reconciliation of the Component. */
#define CO_LIFECYCLE_SKIP_LABEL "component-operator.cs.sap.com/skip-reconciliation"
/** Kyma's label of the same meaning, accepted too. */
#define CO_LIFECYCLE_SKIP_LABEL_KYMA "operator.kyma-project.io/skip-reconciliation"
/** The condition type a prerequisite or guard waits for when it names none. */
#define CO_LIFECYCLE_DEFAULT_CONDITION "Ready"
/** Longest guard annotation value accepted. */
#define CO_LIFECYCLE_GUARD_MAX 1024

/** The mode of a dependent object. */
typedef enum co_object_mode {
    CO_MODE_MANAGED = 0,     /**< no annotation: created, updated and deleted */
    CO_MODE_READ_ONLY = 1,   /**< "read-only": read, never written; its readiness counts */
    CO_MODE_DELETE_ONLY = 2, /**< "delete-only": deleted if present; never counts */
} co_object_mode;

/** "read-only", "delete-only"; NULL for CO_MODE_MANAGED. */
const char *co_object_mode_name(co_object_mode m);

/**
 * Parses a mode annotation value.
 * @return 0; CO_EINVALID (message: the allowed values) for anything but "read-only" and
 *         "delete-only".
 */
CO_MUST_CHECK int co_object_mode_parse(co_object_mode *out, const char *value);

/**
 * Parses a guard annotation: `<apiVersion> <Kind> [<namespace>/]<name> [<conditionType>]`,
 * fields separated by single or repeated spaces, for example
 * `apps/v1 Deployment db/postgres Available`. Without a namespace the guarded object's own
 * namespace is meant (the caller fills it in; cluster-scoped kinds ignore it); without a
 * condition type, CO_LIFECYCLE_DEFAULT_CONDITION.
 * @param[out] out the reference (free its strings with co_prerequisite_dispose()); ns is NULL
 *         when the text names none, condition_type is never NULL
 * @return 0; CO_EINVALID with a message saying which part is wrong (wrong number of fields, an
 *         apiVersion that is not `v1` or `group/version`, an empty or over-long name, a
 *         namespace or name that is not a DNS name, a value longer than CO_LIFECYCLE_GUARD_MAX).
 */
CO_MUST_CHECK int co_guard_parse(co_prerequisite *out, const char *text);

/** Whether @p s is an apiVersion: `v1` (a DNS label) or `group/version` (a DNS subdomain, a
 * slash, a DNS label). */
bool co_lifecycle_is_api_version(const char *s);

/** Whether @p s is a kind name: a letter, then letters and digits, at most 63. */
bool co_lifecycle_is_kind(const char *s);

/** Whether @p s is a condition type: a qualified name (`[prefix/]name`, the prefix a DNS
 * subdomain, the name at most 316 characters of alphanumerics and inner '-', '_', '.'). */
bool co_lifecycle_is_condition_type(const char *s);

/** Frees the strings of @p p (not @p p itself). */
void co_prerequisite_dispose(co_prerequisite *p);

/**
 * How a prerequisite or guard reads in messages: `apps/v1 Deployment db/postgres`
 * (cluster-scoped: without the namespace). @return a new string (free()).
 */
char *co_prerequisite_describe(const co_prerequisite *p);

/** The skip-reconciliation label @p c carries with the value "true" (CO_LIFECYCLE_SKIP_LABEL
 * first, then CO_LIFECYCLE_SKIP_LABEL_KYMA), or NULL when it carries neither. */
const char *co_component_skip_label(const co_component *c);

/** Whether @p c carries one of the skip-reconciliation labels with the value "true". */
bool co_component_skip_reconciliation(const co_component *c);

#endif
