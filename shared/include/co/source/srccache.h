/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file srccache.h
 * A content-addressed cache of extracted source trees on disk, bounded in size, evicting the
 * least recently used entries, and safe to share between threads and processes.
 *
 * An entry is a directory tree stored under a key derived from the content's digest
 * (co_srccache_key()), so an unchanged source is never downloaded or extracted twice. Layout
 * below the cache root:
 *
 *     entries/<key>/        the tree (never modified once published)
 *     entries/<key>.meta    its size in bytes; its mtime is the last use (the LRU clock)
 *     locks/<key>.lock      flock(2): shared while an entry is in use, exclusive while it is
 *                           filled or evicted
 *     aliases/<name>        a file naming a key (e.g. git commit -> tree digest)
 *     tmp/                  trees being filled, and trees being removed
 *
 * Publication is a rename followed by writing the .meta file, so readers never see a partial
 * tree; a crash leaves only debris in tmp/, removed when a cache is opened later. An entry in
 * use is never evicted: users hold it through a co_srccache_entry until they release it.
 *
 * The co_srccache handle is immutable after co_srccache_open() and may be shared by threads.
 */
#ifndef CO_SRCCACHE_H
#define CO_SRCCACHE_H

#include <stdint.h>

#include "co/util/common.h"

typedef struct co_srccache co_srccache;
typedef struct co_srccache_entry co_srccache_entry;

/**
 * Opens (creating directories as needed) the cache at @p root, bounded to @p max_bytes
 * (0: CO_DEFAULT_SOURCE_CACHE). Removes debris older than an hour from tmp/.
 * @return 0 or CO_ERROR.
 */
CO_MUST_CHECK int co_srccache_open(co_srccache **out, const char *root, uint64_t max_bytes);

/** Closes the handle (the cache stays on disk). NULL is a no-op. */
void co_srccache_free(co_srccache *c);

/** The cache root (borrowed from @p c). */
const char *co_srccache_root(const co_srccache *c);

/**
 * Fills an entry: creates the directory @p dir (which does not exist yet) holding the tree and
 * stores the bytes it occupies in @p bytes. On failure it returns a negative code with the
 * last error set; whatever it left at @p dir is removed.
 */
typedef int (*co_srccache_fill_fn)(void *ctx, const char *dir, uint64_t *bytes);

/**
 * Looks up @p key and holds the entry. On a miss with @p fill NULL: CO_ENOTFOUND. On a miss with
 * @p fill: exactly one caller across all threads and processes runs @p fill, the others wait
 * for it and then share its result; afterwards the cache is trimmed to its size.
 * @param[out] out the held entry; release with co_srccache_release()
 * @param[out] filled (may be NULL) set to 1 when this call ran @p fill, else 0
 * @return 0; CO_ENOTFOUND; CO_EINVALID for a malformed key; the fill function's error;
 *         CO_ETOOBIG when the entry cannot stay in a cache this small; CO_ERROR.
 */
CO_MUST_CHECK int co_srccache_get(co_srccache *c,
                                  const char *key,
                                  co_srccache_fill_fn fill,
                                  void *ctx,
                                  co_srccache_entry **out,
                                  int *filled);

/** The entry's tree (borrowed; valid until release). */
const char *co_srccache_entry_dir(const co_srccache_entry *e);

/** The entry's key (borrowed; valid until release). */
const char *co_srccache_entry_key(const co_srccache_entry *e);

/** Releases a held entry, making it evictable again. NULL is a no-op. */
void co_srccache_release(co_srccache_entry *e);

/**
 * Evicts least recently used entries that nobody holds until the cache fits its size.
 * Entries in use are skipped. Concurrent trims do not wait for each other.
 * @return 0 or CO_ERROR.
 */
CO_MUST_CHECK int co_srccache_trim(co_srccache *c);

/** Bytes currently published in the cache (sum of the entries' sizes). */
uint64_t co_srccache_size(co_srccache *c);

/**
 * Derives the cache key of a digest: "sha256:<hex>" becomes "sha256-<hex>"; any other string
 * becomes "h-" + sha256 hex of the string (opaque digests such as ETags).
 * @param[out] out the key (free with free())
 */
void co_srccache_key(char **out, const char *digest);

/**
 * Records that @p alias (a name of [A-Za-z0-9._-], at most 200 bytes) stands for @p key.
 * @return 0, CO_EINVALID or CO_ERROR.
 */
CO_MUST_CHECK int co_srccache_alias_set(co_srccache *c, const char *alias, const char *key);

/**
 * Reads an alias.
 * @param[out] key the key (free with free())
 * @return 0, CO_ENOTFOUND, CO_EINVALID or CO_ERROR.
 */
CO_MUST_CHECK int co_srccache_alias_get(co_srccache *c, const char *alias, char **key);

#endif
