/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for semantic versions and constraints (co/util/semver.h), which read a git
 * source's ref.semver, the tags it is matched against, a chart's version and the templates'
 * semver functions. Input: lines; the first two are versions, the third a constraint.
 * Invariants beyond "no crash, no leak, no hang":
 * - a version that parses prints in canonical form, which parses to an equal version and
 *   prints the same; a strict parse implies a lenient one of an equal version;
 * - comparison is a total order on what parses: reflexive, antisymmetric;
 * - a bump (below the largest number) gives a greater version;
 * - a constraint that parses answers Check and Validate alike, Validate explains a refusal, and
 *   its printed form parses to a constraint with the same answer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/common.h"
#include "co/util/error.h"
#include "co/util/semver.h"

static char *next_line(const char **p, const char *end)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *stop = nl ? nl : end;
    char *s = co_xstrndup(*p, (size_t)(stop - *p));
    *p = nl ? nl + 1 : end;
    return s;
}

/* Parses @p text; checks the canonical-form properties. 1 when it parsed. */
static int parse_checked(co_semver *v, const char *text)
{
    co_error_clear();
    if (co_semver_parse(v, text) < 0) {
        if (!*co_error_last()) {
            __builtin_trap();
        }
        co_semver strict;
        if (co_semver_parse_strict(&strict, text) == 0) {
            __builtin_trap(); /* strict accepts what lenient refuses */
        }
        return 0;
    }
    char *s = co_semver_string(v);
    co_semver again;
    if (co_semver_parse(&again, s) < 0) {
        __builtin_trap();
    }
    char *s2 = co_semver_string(&again);
    if (strcmp(s, s2) != 0 || co_semver_compare(v, &again) != 0 ||
        strcmp(v->metadata, again.metadata) != 0) {
        __builtin_trap();
    }
    free(s2);
    co_semver_dispose(&again);
    co_semver strict;
    if (co_semver_parse_strict(&strict, text) == 0) {
        if (co_semver_compare(&strict, v) != 0 || strcmp(strict.metadata, v->metadata) != 0) {
            __builtin_trap();
        }
        co_semver_dispose(&strict);
    }
    free(s);
    return 1;
}

static void check_bump(const co_semver *v)
{
    static const char parts[] = {'M', 'm', 'p'};
    const uint64_t *fields[] = {&v->major, &v->minor, &v->patch};
    for (size_t i = 0; i < 3; i++) {
        if (*fields[i] == UINT64_MAX) {
            continue;
        }
        co_semver n;
        co_semver_increment(&n, v, parts[i]);
        if (co_semver_compare(&n, v) <= 0) {
            __builtin_trap();
        }
        co_semver_dispose(&n);
    }
}

static void check_constraint(const char *text, const co_semver *a, int have_a)
{
    co_semver_constraints *c = NULL;
    co_error_clear();
    if (co_semver_constraints_parse(&c, text) < 0) {
        if (!*co_error_last()) {
            __builtin_trap();
        }
        return;
    }
    char *printed = co_semver_constraints_string(c);
    co_semver_constraints *c2 = NULL;
    if (!printed || co_semver_constraints_parse(&c2, printed) < 0) {
        __builtin_trap();
    }
    if (have_a) {
        bool ok = co_semver_constraints_check(c, a);
        char *why = NULL;
        bool valid = co_semver_constraints_validate(c, a, &why);
        if (ok != valid || (!valid && (!why || !*why)) || (valid && why)) {
            __builtin_trap();
        }
        free(why);
        if (co_semver_constraints_check(c2, a) != ok) {
            __builtin_trap();
        }
    }
    co_semver_constraints_free(c2);
    free(printed);
    co_semver_constraints_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (memchr(data, '\0', size)) {
        return 0; /* versions and constraints are C strings everywhere */
    }
    const char *p = (const char *)data, *end = p + size;
    char *ta = next_line(&p, end);
    char *tb = next_line(&p, end);
    char *tc = next_line(&p, end);
    co_semver a = {0}, b = {0};
    int have_a = parse_checked(&a, ta);
    int have_b = parse_checked(&b, tb);
    if (have_a) {
        if (co_semver_compare(&a, &a) != 0) {
            __builtin_trap();
        }
        check_bump(&a);
    }
    if (have_a && have_b && co_semver_compare(&a, &b) != -co_semver_compare(&b, &a)) {
        __builtin_trap();
    }
    check_constraint(tc, &a, have_a);
    co_semver_dispose(&a);
    co_semver_dispose(&b);
    free(ta);
    free(tb);
    free(tc);
    return 0;
}
