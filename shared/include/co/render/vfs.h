/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file vfs.h
 * A read-only file tree with two backends: a directory on disk, and a set of files held in
 * memory (what a template generator renders before handing the tree to kustomize or Helm).
 *
 * Paths are always relative to the tree's root, '/'-separated, without "." or ".." segments
 * (use co_vfs_join() to resolve a relative reference against a directory). A disk tree never
 * reads outside its root: symbolic links are not followed. Files are capped at
 * CO_MAX_SOURCE_FILE. A handle may be shared by threads once built (reads do not modify it).
 */
#ifndef CO_VFS_H
#define CO_VFS_H

#include <stdbool.h>
#include <stddef.h>

#include "co/util/common.h"

typedef struct co_vfs co_vfs;

/** What a path names. */
typedef enum co_vfs_type {
    CO_VFS_NONE = 0, /**< nothing (or something that is neither a file nor a directory) */
    CO_VFS_FILE = 1, /**< a regular file */
    CO_VFS_DIR = 2,  /**< a directory */
} co_vfs_type;

/**
 * Opens the directory @p root (copied) as a tree.
 * @return 0, CO_ENOTFOUND when @p root is not a directory.
 */
CO_MUST_CHECK int co_vfs_new_disk(co_vfs **out, const char *root);

/** Creates an empty in-memory tree. Never fails. */
co_vfs *co_vfs_new_mem(void);

/**
 * Adds (or replaces) a file of an in-memory tree; parent directories exist implicitly.
 * @return 0, CO_EINVALID for an unclean path or a disk tree, CO_ETOOBIG over the file cap.
 */
CO_MUST_CHECK int co_vfs_mem_put(co_vfs *fs, const char *path, const void *data, size_t len);

/**
 * Filters the bytes of a file as co_vfs_read() returns it: 0 with *out NULL keeps them, 0 with
 * a malloc'ed *out (NUL-terminated, length in *out_len) replaces them, negative fails the read
 * (message set).
 */
typedef int (*co_vfs_filter_fn)(void *ctx,
                                char **out,
                                size_t *out_len,
                                const char *path,
                                const char *data,
                                size_t len);

/**
 * Lets the in-memory tree @p fs show the files of @p lower where it has none of its own: a path
 * in or below one of the directories @p own (copied) names only @p fs's files; any other path
 * names @p lower's, read through @p filter (NULL: as they are). Directory listings outside
 * @p own merge both trees. @p lower and @p filter_ctx are borrowed and must outlive @p fs.
 */
void co_vfs_mem_set_lower(co_vfs *fs,
                          const co_vfs *lower,
                          const char *const *own,
                          size_t nown,
                          co_vfs_filter_fn filter,
                          void *filter_ctx);

/** Frees the tree. NULL is a no-op. */
void co_vfs_free(co_vfs *fs);

/** What @p path names ("" is the root directory). */
co_vfs_type co_vfs_stat(const co_vfs *fs, const char *path);

/**
 * Reads a whole file; the content is NUL-terminated (not counted in @p len_out).
 * @param[out] out the bytes; free with free()
 * @return 0, CO_ENOTFOUND (no such file), CO_ETOOBIG (over CO_MAX_SOURCE_FILE), CO_ERROR.
 */
CO_MUST_CHECK int co_vfs_read(char **out, size_t *len_out, const co_vfs *fs, const char *path);

/**
 * Lists the entries of directory @p dir, sorted bytewise, names only.
 * @param[out] out a NULL-terminated array; free with co_vfs_strv_free()
 * @return 0, CO_ENOTFOUND (no such directory), CO_ERROR.
 */
CO_MUST_CHECK int co_vfs_list(char ***out, size_t *n_out, const co_vfs *fs, const char *dir);

/**
 * Lists every regular file below @p dir (recursively), as tree paths, sorted bytewise.
 * @return 0, CO_ENOTFOUND, CO_ERROR.
 */
CO_MUST_CHECK int co_vfs_walk(char ***out, size_t *n_out, const co_vfs *fs, const char *dir);

/** Frees a NULL-terminated string array. NULL is a no-op. */
void co_vfs_strv_free(char **v);

/**
 * Resolves @p rel against directory @p dir into a clean tree path.
 * @param[out] out the path; free with free()
 * @return 0, or CO_EINVALID when @p rel is absolute or climbs above the tree's root.
 */
CO_MUST_CHECK int co_vfs_join(char **out, const char *dir, const char *rel);

/** Whether @p path equals @p dir or lies below it (both clean; "" contains everything). */
bool co_vfs_is_within(const char *path, const char *dir);

#endif
