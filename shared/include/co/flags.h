/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file flags.h
 * Table-driven command-line flags in the Go/controller-runtime style.
 *
 * Accepted forms: `--name=value`, `--name value`, `-name=value`, and for booleans `--name`,
 * `--name=true|false`. Parsing stops at `--` or at the first non-flag argument (the index is
 * returned), so subcommands can parse the rest with their own table. Unknown flags, missing
 * values and malformed numbers are reported with the flag's name. String targets point into
 * argv (borrowed). Not thread-safe; call from main().
 */
#ifndef CO_FLAGS_H
#define CO_FLAGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "co/common.h"

typedef enum co_flag_type {
    CO_FLAG_BOOL,   /**< target: int *, set to 0 or 1 */
    CO_FLAG_STRING, /**< target: const char **, borrowed from argv */
    CO_FLAG_INT,    /**< target: long long *, decimal */
    CO_FLAG_LIST,   /**< target: co_flag_list *, repeatable; each occurrence appends */
} co_flag_type;

/** Values of a repeatable flag, borrowed from argv; free items with co_flag_list_dispose(). */
typedef struct co_flag_list {
    const char **items;
    size_t len;
} co_flag_list;

typedef struct co_flag {
    const char *name;    /**< without leading dashes */
    co_flag_type type;   /**< kind of value */
    void *target;        /**< where the value goes (see co_flag_type) */
    const char *metavar; /**< value placeholder for the usage text, e.g. "ADDR" */
    const char *help;    /**< one-line description, including the default */
} co_flag;

/**
 * Parses flags from argv[1..argc).
 * @param[out] next_out index of the first argument that is not a flag (argc if none)
 * @return 0, or CO_EINVALID with a message naming the flag.
 */
CO_MUST_CHECK int
co_flags_parse(int *next_out, const co_flag *flags, size_t nflags, int argc, char **argv);

/** Writes the flag table as help text, one flag per line group. */
void co_flags_usage(FILE *out, const co_flag *flags, size_t nflags);

/** Frees the array of a list flag (not the strings, which belong to argv). */
void co_flag_list_dispose(co_flag_list *list);

#endif
