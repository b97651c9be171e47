/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file envsubst.h
 * postBuild variable substitution with the semantics of github.com/drone/envsubst v1.0.3, the
 * library the original operator uses.
 *
 * Only `${...}` is expanded; `$VAR` without braces is left alone. Supported forms: `${v}`,
 * `${#v}`, `${v^}`, `${v^^}`, `${v,}`, `${v,,}`, `${v:pos}`, `${v:pos:len}`, `${v#pat}`,
 * `${v##pat}`, `${v%pat}`, `${v%%pat}`, `${v/old/new}`, `${v//old/new}`, `${v/#old/new}`,
 * `${v/%old/new}`, and the default forms `${v=d}`, `${v:=d}`, `${v:-d}` (and `${v:?d}`,
 * `${v:+d}`, which drone/envsubst also treats as "default when empty"); arguments may nest
 * `${...}`. `$$` stands for `$` and a backslash before `/` or `\` is consumed (both also
 * outside expansions, as in v1.0.3). `${v-d}` is not supported by drone/envsubst and fails with
 * "missing closing brace". Malformed input fails with drone's messages ("bad substitution",
 * "missing closing brace", "unable to parse variable name", ...).
 *
 * Undefined variables expand to the empty string unless CO_ENVSUBST_STRICT is given, in which
 * case a reference to an undefined variable without a default form is an error.
 *
 * Differences from drone/envsubst: an input containing a NUL byte is rejected (drone silently
 * drops everything after it); `${v:pos:len}` with a negative or overflowing length is an error
 * (drone panics).
 *
 * A variable set may be read by several threads at once once filled; evaluation is thread-safe.
 */
#ifndef CO_ENVSUBST_H
#define CO_ENVSUBST_H

#include <stddef.h>

#include "co/util/buf.h"
#include "co/util/common.h"

/** An ordered set of variables; setting a name again replaces its value. */
typedef struct co_envsubst_vars co_envsubst_vars;

/** Creates an empty variable set (free with co_envsubst_vars_free()). */
co_envsubst_vars *co_envsubst_vars_new(void);

/**
 * Sets @p name to @p value (@p len bytes; copies both). A later call for the same name wins,
 * which gives the order substituteFrom Secrets, then inline substitute.
 * @return 0 or CO_EINVALID for an empty name.
 */
CO_MUST_CHECK int
co_envsubst_vars_set(co_envsubst_vars *vars, const char *name, const char *value, size_t len);

/** The value of @p name (borrowed from @p vars until it is modified), or NULL if undefined.
 * @param[out] len_out the value's length, if not NULL */
const char *co_envsubst_vars_get(const co_envsubst_vars *vars, const char *name, size_t *len_out);

/** Number of variables. */
size_t co_envsubst_vars_count(const co_envsubst_vars *vars);

/** Frees the set; NULL is a no-op. */
void co_envsubst_vars_free(co_envsubst_vars *vars);

/** Flags for co_envsubst_eval(). */
enum {
    /** A reference to an undefined variable (other than in a default form) is an error. */
    CO_ENVSUBST_STRICT = 1,
};

/**
 * Expands @p input (@p len bytes) into @p out (appended; its cap applies).
 * @param vars the variables; NULL is an empty set
 * @return 0; CO_EINVALID with drone/envsubst's message for malformed input or, in strict mode,
 * "variable \"X\" is not defined"; CO_ETOOBIG when the output exceeds the cap or
 * CO_MAX_ENVSUBST_OUTPUT. On failure @p out is left as it was.
 */
CO_MUST_CHECK int co_envsubst_eval(co_buf *out,
                                   const char *input,
                                   size_t len,
                                   const co_envsubst_vars *vars,
                                   unsigned flags);

#endif
