/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Builds archives in memory for tests, including hostile ones a normal tool would refuse to
 * write (absolute paths, "..", links pointing outside, devices, bombs).
 */
#ifndef CO_TEST_ARCHIVE_BUILDER_H
#define CO_TEST_ARCHIVE_BUILDER_H

#include <stddef.h>
#include <stdint.h>

/** Entry kinds. */
enum {
    TAB_FILE,     /**< regular file with content (or `zeros` zero bytes) */
    TAB_DIR,      /**< directory */
    TAB_SYMLINK,  /**< symlink to `target` */
    TAB_HARDLINK, /**< hard link to `target` */
    TAB_CHARDEV,  /**< character device */
    TAB_FIFO,     /**< fifo */
};

/** One entry; content may be NULL for an empty file. */
typedef struct tab_entry {
    int kind;
    unsigned mode; /**< permission bits; 0 = 0644 / 0755 */
    const char *path;
    const char *content; /**< file content, or link target */
    uint64_t zeros;      /**< a file of this many zero bytes instead of content */
} tab_entry;

/** Output formats. */
enum { TAB_TAR_GZ, TAB_TAR, TAB_ZIP, TAB_TAR_BZ2, TAB_TAR_ZST, TAB_TAR_XZ };

/** Compressions of a single stream (tab_compress). */
enum { TAB_GZIP, TAB_BZIP2, TAB_ZSTD, TAB_XZ };

/**
 * Builds an archive of @p n entries in @p format into a malloc'd buffer (free with free()).
 * Fails the test when libarchive refuses.
 */
void *tab_build(int format, const tab_entry *entries, size_t n, size_t *len_out);

/**
 * Compresses @p len bytes at @p data, followed by @p zeros zero bytes, with @p compression into
 * a malloc'd buffer (free with free()).
 */
void *tab_compress(int compression, const void *data, size_t len, uint64_t zeros, size_t *len_out);

/** Builds a gzip-compressed tar of @p count empty files "f/<i>" (many-files attack). */
void *tab_build_many(size_t count, size_t *len_out);

#endif
