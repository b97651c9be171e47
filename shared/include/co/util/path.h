/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file path.h
 * Lexical processing of '/'-separated paths as Go's package path does it: the one
 * implementation of path.Clean, which Helm's chart loader and the template function `clean`
 * both need to give Go's answers byte for byte. Nothing here touches the file system.
 * Thread-safe.
 */
#ifndef CO_PATH_H
#define CO_PATH_H

#include <stddef.h>

/** Bytes co_path_clean_into() may write for an input of @p len bytes, the NUL included. */
#define CO_PATH_CLEAN_SIZE(len) ((len) + 2)

/**
 * Go's path.Clean of the @p len bytes at @p path: repeated '/' become one, "." elements go,
 * ".." removes the element before it (and is dropped after the root), a trailing '/' goes, and
 * an empty result is ".". Writes the result, NUL-terminated, to @p out, which holds
 * CO_PATH_CLEAN_SIZE(@p len) bytes.
 * @return the length of the result.
 */
size_t co_path_clean_into(char *out, const char *path, size_t len);

/** co_path_clean_into() of the NUL-terminated @p path into a new string (free with free()). */
char *co_path_clean(const char *path);

#endif
