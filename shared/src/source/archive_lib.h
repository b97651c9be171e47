/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The confined tree writer behind co_archive_extract_*() and the git checkout: it creates a
 * tree entry by entry inside a temporary directory, refuses anything that could escape it,
 * enforces the caps, optionally computes the canonical tree digest, and renames the finished
 * tree into place. Library-internal (co_archive__*); one writer is used by one thread.
 */
#ifndef CO_ARCHIVE_LIB_H
#define CO_ARCHIVE_LIB_H

#include <stddef.h>
#include <stdint.h>

#include "co/source/archive.h"

typedef struct co_archive__writer co_archive__writer;

/** Writer options. */
enum {
    CO_ARCHIVE__DIGEST = 0x100, /**< compute the canonical tree digest (see co_archive__commit) */
};

/**
 * Starts a tree that will become @p dest (which must not exist; its parent must).
 * @p flags: co_archive_flags plus CO_ARCHIVE__DIGEST.
 * @return 0, CO_EEXISTS or CO_ERROR.
 */
CO_MUST_CHECK int co_archive__writer_new(co_archive__writer **out,
                                         const char *dest,
                                         const co_archive_limits *limits,
                                         unsigned flags);

/** Abandons an uncommitted tree (its temporary directory is removed). NULL is a no-op. */
void co_archive__writer_free(co_archive__writer *w);

/** Counts one entry against the entry cap. @return 0 or CO_ETOOBIG. */
CO_MUST_CHECK int co_archive__count_entry(co_archive__writer *w);

/** Creates the directory @p path (and missing parents). @return 0, CO_EINVALID or CO_ERROR. */
CO_MUST_CHECK int co_archive__mkdir(co_archive__writer *w, const char *path);

/**
 * Starts the regular file @p path; @p executable selects mode 0755 over 0644. Content follows
 * with co_archive__write() and ends with co_archive__file_end().
 */
CO_MUST_CHECK int co_archive__file_begin(co_archive__writer *w, const char *path, int executable);
/** Appends content to the current file. @return 0, CO_ETOOBIG or CO_ERROR. */
CO_MUST_CHECK int co_archive__write(co_archive__writer *w, const void *data, size_t len);
/** Finishes the current file. @return 0 or CO_ERROR. */
CO_MUST_CHECK int co_archive__file_end(co_archive__writer *w);

/** Creates the symlink @p path -> @p target (checked again at commit). */
CO_MUST_CHECK int co_archive__symlink(co_archive__writer *w, const char *path, const char *target);

/** Creates the hard link @p path to the already written regular file @p target. */
CO_MUST_CHECK int co_archive__hardlink(co_archive__writer *w, const char *path, const char *target);

/**
 * Checks every symlink, then renames the tree to its destination.
 * With CO_ARCHIVE__DIGEST, @p digest_out (may be NULL otherwise) receives
 * "sha256:<hex>" of the canonical tree serialisation (free with free()); see git.h.
 * @return 0, CO_EINVALID (a symlink leaves the tree), CO_EEXISTS or CO_ERROR.
 */
CO_MUST_CHECK int co_archive__commit(co_archive__writer *w, char **digest_out);

/** Statistics so far. */
const co_archive_stats *co_archive__stats(const co_archive__writer *w);

/** Writes a printable, length-limited copy of an entry name (for error messages). */
const char *co_archive__printable(const char *name, char *buf, size_t len);

#endif
