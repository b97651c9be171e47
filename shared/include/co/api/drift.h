/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file drift.h
 * Drift detection of dependent objects (docs/drift.md): the two annotations a dependent may
 * carry (drift policy, ignored fields), their parsers, and the comparison of a rendered
 * manifest with the live object. A field drifts when the manifest sets it and the live value
 * differs: maps compare as subsets (the API server adds defaults), lists element by element
 * (lists of named maps by name), a few normalisations of the API server are foreseen
 * (quantities, numbers written as strings, zero values it drops). Everything here takes
 * tenant-controlled input and is bounded (CO_DRIFT_MAX_*).
 *
 * Pure functions; thread-safe.
 */
#ifndef CO_DRIFT_H
#define CO_DRIFT_H

#include <stddef.h>

#include "co/util/common.h"

struct json_object;

/** Dependent annotation: Correct (default), Warn or Ignore (docs/drift.md, "Policies"). */
#define CO_DRIFT_POLICY_ANNOTATION "component-operator.cs.sap.com/drift-policy"
/** Dependent annotation: a JSON list of JSON pointers (RFC 6901) left out of the comparison
 * and kept at their live values by re-applies (docs/drift.md, "Ignored fields"). */
#define CO_DRIFT_IGNORE_FIELDS_ANNOTATION "component-operator.cs.sap.com/ignore-fields"

/** The prefix of the operator's own labels and annotations, which are not compared. */
#define CO_DRIFT_OWN_PREFIX "component-operator.cs.sap.com/"

/** Longest ignore-fields annotation value accepted. */
#define CO_DRIFT_IGNORE_MAX 4096
/** Most pointers in one ignore-fields annotation. */
#define CO_DRIFT_MAX_POINTERS 32
/** Deepest nesting compared; a deeper manifest is not compared (CO_ETOOBIG). */
#define CO_DRIFT_MAX_DEPTH 32
/** Most values visited by one comparison; a larger manifest is not compared (CO_ETOOBIG). */
#define CO_DRIFT_MAX_NODES 100000
/** Most drifted fields named per object (the count goes on). */
#define CO_DRIFT_MAX_FIELDS 10

/** What is done about an object's drift. */
typedef enum co_drift_policy {
    CO_DRIFT_CORRECT = 0, /**< re-applied at once (and every reapply interval, as before) */
    CO_DRIFT_WARN = 1,    /**< reported, never re-applied for it */
    CO_DRIFT_IGNORE = 2,  /**< neither compared nor reported */
} co_drift_policy;

/** "Correct", "Warn", "Ignore". */
const char *co_drift_policy_name(co_drift_policy p);

/**
 * Parses a drift-policy annotation value: "Correct", "Warn", "Ignore" (any case).
 * @return 0; CO_EINVALID naming the allowed values otherwise.
 */
CO_MUST_CHECK int co_drift_policy_parse(co_drift_policy *out, const char *value);

/** One JSON pointer, decoded: its reference tokens (~0 and ~1 unescaped). */
typedef struct co_drift_pointer {
    char **tokens;
    size_t n;
} co_drift_pointer;

/** The ignored fields of one object. A zeroed value ignores nothing. */
typedef struct co_drift_ignore {
    co_drift_pointer *ptrs;
    size_t n;
} co_drift_ignore;

/**
 * Parses an ignore-fields annotation value: a JSON array of JSON pointers, for example
 * `["/spec/replicas", "/metadata/annotations/a~1b"]`. The empty pointer (the whole object) and
 * pointers into apiVersion, kind, metadata.name and metadata.namespace are refused.
 * @param[out] out free with co_drift_ignore_dispose(); written only on success
 * @return 0; CO_EINVALID (not a JSON array of strings, a pointer not starting with '/', a '~' not
 *         followed by 0 or 1, a refused pointer); CO_ETOOBIG over CO_DRIFT_IGNORE_MAX bytes or
 *         CO_DRIFT_MAX_POINTERS pointers.
 */
CO_MUST_CHECK int co_drift_ignore_parse(co_drift_ignore *out, const char *text);

void co_drift_ignore_dispose(co_drift_ignore *ig);

/** The drifted fields of one object. */
typedef struct co_drift_result {
    /** JSON pointers of the first CO_DRIFT_MAX_FIELDS drifted fields, in manifest order */
    char *fields[CO_DRIFT_MAX_FIELDS];
    size_t nfields;
    /** every drifted field found (>= nfields) */
    size_t total;
} co_drift_result;

void co_drift_result_dispose(co_drift_result *r);

/**
 * Compares @p desired (the rendered manifest as applied) with @p live (docs/drift.md,
 * "Comparison"). apiVersion, kind and status are not compared, of metadata only labels and
 * annotations (not those of the operator's own prefix, CO_DRIFT_OWN_PREFIX); fields under a
 * pointer of @p ignore are left out. When @p owned is given (the
 * fieldsV1 of this controller's field manager, merged), a field the manifest sets whose path is
 * made of map keys only and which @p owned does not list counts as drifted too: another manager
 * took it.
 * @param[out] out zeroed first; free with co_drift_result_dispose() (also on error)
 * @return 0; CO_ETOOBIG past CO_DRIFT_MAX_DEPTH or CO_DRIFT_MAX_NODES (nothing is known then).
 */
CO_MUST_CHECK int co_drift_compare(co_drift_result *out,
                                   const struct json_object *desired,
                                   const struct json_object *live,
                                   const co_drift_ignore *ignore,
                                   const struct json_object *owned);

/**
 * Makes @p applied (a manifest about to be written over @p live) keep the live value of every
 * ignored field: copied from @p live where it has one, removed from @p applied where it has
 * none (docs/drift.md, "Ignored fields"). Pointers through lists touch only existing elements.
 */
void co_drift_carry_ignored(struct json_object *applied,
                            const struct json_object *live,
                            const co_drift_ignore *ignore);

/**
 * "/data/a~1b" for the tokens {"data", "a/b"}: a JSON pointer with ~ and / escaped.
 * @return a new string (free()).
 */
char *co_drift_pointer_format(const char *const *tokens, size_t n);

#endif
