/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file archive.h
 * Safe extraction of source artifacts (tar, gzip/bzip2/xz/zstd-compressed tar, zip, or a single
 * YAML file, plain or compressed).
 *
 * Artifacts come from outside, so extraction is confined to the destination directory:
 * - entries with an absolute path or a `..` component are rejected;
 * - nothing is ever written through a symlink: every parent directory is opened with
 *   O_NOFOLLOW, and an entry whose path passes through a symlink is rejected;
 * - symlinks are allowed when their target is relative and stays inside the tree, checked
 *   once the whole tree exists by resolving each link (and every link it passes through)
 *   within the tree, so a chain of individually harmless links cannot point outside;
 * - hard links must name a regular file already extracted;
 * - device files, fifos and sockets are rejected;
 * - the number of entries, the size of each file and the total size are capped
 *   (co_archive_limits, defaults in caps.h) against decompression bombs;
 * - file modes are reduced to 0644 or 0755 (directories 0755); owners and times are not kept.
 *
 * Extraction writes into a fresh temporary directory beside the destination and renames it
 * into place only when everything succeeded, so a destination either does not exist or holds
 * the complete tree; on failure the temporary directory is removed. Errors name the entry.
 *
 * Thread-safe: no shared state.
 */
#ifndef CO_ARCHIVE_H
#define CO_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"

/** Accepted input formats. */
typedef enum co_archive_format {
    CO_ARCHIVE_AUTO = 0, /**< tar (uncompressed, gzip, bzip2, xz or zstd) or zip, detected */
    CO_ARCHIVE_TAR_GZ,   /**< gzip-compressed tar only */
    CO_ARCHIVE_TAR,      /**< uncompressed tar only */
    CO_ARCHIVE_ZIP,      /**< zip only */
    CO_ARCHIVE_TAR_BZ2,  /**< bzip2-compressed tar only */
    CO_ARCHIVE_TAR_ZST,  /**< zstd-compressed tar only */
    CO_ARCHIVE_TAR_XZ,   /**< xz-compressed tar only */
    /** one YAML document stream, as is or gzip-, bzip2-, xz- or zstd-compressed (detected),
     * written as CO_ARCHIVE_YAML_NAME at the root of the tree */
    CO_ARCHIVE_YAML,
    /** tar only, uncompressed or gzip-, bzip2-, xz- or zstd-compressed (detected) */
    CO_ARCHIVE_TAR_ANY,
} co_archive_format;

/** The file a CO_ARCHIVE_YAML artifact becomes, as in the Go operator's downloads. */
#define CO_ARCHIVE_YAML_NAME "resources.yaml"

/**
 * The format of an artifact downloaded from @p url (the URL that answered, after redirects)
 * with the Content-Type @p content_type (NULL when absent), by the Go operator's rules for HTTP
 * downloads: first the media type (parameters and case ignored): application/(x-)gzip is a
 * gzip-compressed tar (YAML when the URL path ends in .yaml.gz or .yml.gz), likewise
 * application/(x-)bzip2, application/(x-)zstd and application/x-xz; application/(x-)tar,
 * application/(x-)tar+gzip, +bzip2 and +zstd; application/(x-)zip and
 * application/x-zip-compressed; application/(x-)yaml and text/(x-)yaml, also with +gzip or
 * +bzip2. Then the URL path's suffix: .tar.gz or .tgz, .tar.bz2, .tbz2 or .tbz, .tar.zst or
 * .tzst, .tar.xz or .txz, .tar, .zip, and .yaml or .yml (also followed by .gz, .bz2, .xz or
 * .zst). Anything else is CO_ARCHIVE_AUTO (detected from the content). Never fails.
 */
co_archive_format co_archive_format_for(const char *content_type, const char *url);

/** A short name of @p format for messages ("tar.gz", "zip", "yaml", "tar or zip"). */
const char *co_archive_format_name(co_archive_format format);

/** Caps for one extraction; a zero field takes the default from caps.h. */
typedef struct co_archive_limits {
    uint64_t max_total;   /**< bytes written (CO_MAX_EXTRACT_TOTAL) */
    uint64_t max_file;    /**< bytes of one file (CO_MAX_EXTRACT_FILE) */
    uint64_t max_entries; /**< entries of every type (CO_MAX_EXTRACT_ENTRIES) */
} co_archive_limits;

/** Flags for extraction. */
typedef enum co_archive_flags {
    CO_ARCHIVE_SYNC = 1, /**< flush the file system before the final rename (crash safety) */
} co_archive_flags;

/** What an extraction produced. */
typedef struct co_archive_stats {
    uint64_t bytes;   /**< content bytes written */
    uint64_t entries; /**< entries created (files, directories, links) */
} co_archive_stats;

/**
 * Extracts the archive in memory at @p data into the directory @p dest, which must not exist
 * (its parent must). @p limits may be NULL for the defaults; @p flags is a set of
 * co_archive_flags. @p stats (may be NULL) is written on success.
 * @return 0; CO_EINVALID for a corrupt archive or a rejected entry (the message names it);
 *         CO_ETOOBIG when a cap is exceeded; CO_EEXISTS when @p dest already exists;
 *         CO_ERROR for a local I/O failure.
 */
CO_MUST_CHECK int co_archive_extract_mem(const void *data,
                                         size_t len,
                                         co_archive_format format,
                                         const char *dest,
                                         const co_archive_limits *limits,
                                         unsigned flags,
                                         co_archive_stats *stats);

/** Like co_archive_extract_mem() for the archive file at @p path. */
CO_MUST_CHECK int co_archive_extract_file(const char *path,
                                          co_archive_format format,
                                          const char *dest,
                                          const co_archive_limits *limits,
                                          unsigned flags,
                                          co_archive_stats *stats);

/**
 * Resolves the relative path @p rel inside the extracted tree @p root, following symlinks only
 * while they stay inside the tree ("" and "." name the root; a leading "/" is ignored, as Go's
 * filepath.Join does). The result is an absolute path without symlinks below @p root.
 * @param[out] out the resolved path (free with free())
 * @return 0; CO_ENOTFOUND "no such file or directory: <rel>"; CO_EINVALID when the path or
 *         a link on the way leaves the tree or loops.
 */
CO_MUST_CHECK int co_archive_resolve(char **out, const char *root, const char *rel);

/**
 * Removes the directory tree @p path without following symlinks (a missing path is fine).
 * @return 0 or CO_ERROR.
 */
CO_MUST_CHECK int co_archive_remove_tree(const char *path);

#endif
