/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file semver.h
 * Semantic versions and version constraints with the semantics of Masterminds/semver v3.4
 * (the library behind sprig's `semver`/`semverCompare` and Helm's version ranges).
 *
 * Parsing is lenient the way that library's NewVersion is: an optional `v` prefix, missing
 * minor/patch parts (`1.2` is 1.2.0) and leading zeros are accepted; the prerelease and build
 * metadata are validated. Constraints accept the operators `=`, `!=`, `>`, `<`, `>=`, `=>`,
 * `<=`, `=<`, `~`, `~>`, `^`, wildcards `x`/`X`/`*` in any position, hyphen ranges
 * (`1.2 - 1.4.5`), comma or space for AND and `||` for OR. A prerelease version satisfies a
 * constraint group only when a constraint of that group names a prerelease itself.
 *
 * Error messages are the library's own ("invalid semantic version", "improper constraint: x",
 * ...) so that template errors read the same as with the Go original. Thread-safe; values are
 * caller-owned.
 */
#ifndef CO_SEMVER_H
#define CO_SEMVER_H

#include <stdbool.h>
#include <stdint.h>

#include "co/util/common.h"

/** A parsed version. Strings are owned by the struct (co_semver_dispose()). */
typedef struct co_semver {
    uint64_t major;
    uint64_t minor;
    uint64_t patch;
    char *pre;      /**< prerelease without the '-', "" when none */
    char *metadata; /**< build metadata without the '+', "" when none */
    char *original; /**< the text that was parsed */
} co_semver;

/** A parsed constraint set (an OR of AND groups). */
typedef struct co_semver_constraints co_semver_constraints;

/**
 * Parses @p text leniently (NewVersion). On success @p out must be disposed.
 * @return 0, or CO_EINVALID with the library's message.
 */
CO_MUST_CHECK int co_semver_parse(co_semver *out, const char *text);

/**
 * Parses @p text strictly: exactly MAJOR.MINOR.PATCH, no `v`, no leading zeros
 * (StrictNewVersion). @return 0 or CO_EINVALID.
 */
CO_MUST_CHECK int co_semver_parse_strict(co_semver *out, const char *text);

/** Frees the strings of @p v and leaves it zeroed. NULL is a no-op. */
void co_semver_dispose(co_semver *v);

/** Copies @p src into @p out (dispose @p out afterwards). */
void co_semver_copy(co_semver *out, const co_semver *src);

/** -1, 0 or 1 as @p a sorts before, equal to or after @p b (metadata is ignored). */
int co_semver_compare(const co_semver *a, const co_semver *b);

/** The canonical form "MAJOR.MINOR.PATCH[-pre][+metadata]"; free with free(). */
char *co_semver_string(const co_semver *v);

/**
 * The version bumped like the library's IncMajor/IncMinor/IncPatch: @p part is 'M', 'm' or
 * 'p'. The original text keeps a leading `v`.
 */
void co_semver_increment(co_semver *out, const co_semver *v, char part);

/**
 * Parses a constraint expression (NewConstraint).
 * @param[out] out the constraints; free with co_semver_constraints_free()
 * @return 0 or CO_EINVALID ("improper constraint: ...").
 */
CO_MUST_CHECK int co_semver_constraints_parse(co_semver_constraints **out, const char *text);

/** Frees @p c. NULL is a no-op. */
void co_semver_constraints_free(co_semver_constraints *c);

/** Whether @p v satisfies @p c (Check). */
bool co_semver_constraints_check(const co_semver_constraints *c, const co_semver *v);

/**
 * Like co_semver_constraints_check() but explains a refusal (Validate).
 * @param[out] why when not satisfied and not NULL: the reasons joined with "; " (free with
 *             free()); NULL when satisfied
 */
bool co_semver_constraints_validate(const co_semver_constraints *c, const co_semver *v, char **why);

/** The normalised text of @p c ("1.2.x || >= 2" style, as the library prints it); free(). */
char *co_semver_constraints_string(const co_semver_constraints *c);

#endif
