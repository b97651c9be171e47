/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file glob.h
 * Shell-style globs over '/'-separated paths, and ignore files in gitignore syntax
 * (.component-ignore, .helmignore).
 *
 * Globs: '*' matches any run of characters except '/', '?' one character except '/',
 * '[abc]', '[a-z]', '[!x]' / '[^x]' a character class, '\' escapes the next character. With
 * CO_GLOB_DOUBLESTAR, a "**" segment matches any number of whole segments (zero included).
 *
 * Ignore files: one pattern per line; blank lines and '#' comments skipped ("\#" is a literal
 * '#'); trailing spaces dropped unless escaped; '!' re-includes; a trailing '/' matches
 * directories only; a pattern with a '/' elsewhere is anchored at the ignore file's directory,
 * one without matches the name at any depth; "**" as in git. The last matching pattern wins,
 * and nothing below an ignored directory can be re-included. Thread-safe: a parsed ignore set
 * is read-only.
 */
#ifndef CO_GLOB_H
#define CO_GLOB_H

#include <stdbool.h>
#include <stddef.h>

#include "co/util/common.h"

/** Flags of co_glob_match(). */
enum {
    CO_GLOB_DOUBLESTAR = 1, /**< "**" segments match any number of segments */
};

/** Whether @p path matches @p pattern as a whole. Never fails (a malformed class is taken
 * literally). */
bool co_glob_match(const char *pattern, const char *path, int flags);

typedef struct co_ignore co_ignore;

/**
 * Parses ignore-file text.
 * @param[out] out the pattern set; free with co_ignore_free()
 * @return 0, or CO_ETOOBIG when @p len exceeds CO_MAX_CONFIG_FILE.
 */
CO_MUST_CHECK int co_ignore_parse(co_ignore **out, const char *text, size_t len);

/** Whether @p path (relative to the ignore file's directory, '/'-separated) is ignored;
 * @p is_dir says whether it names a directory. */
bool co_ignore_match(const co_ignore *ig, const char *path, bool is_dir);

/** Frees a pattern set. NULL is a no-op. */
void co_ignore_free(co_ignore *ig);

#endif
