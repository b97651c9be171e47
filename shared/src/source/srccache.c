/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The on-disk artifact cache (srccache.h). Coordination between threads and processes uses
 * flock(2) on one lock file per key: every open of a lock file is its own open file
 * description, so the locks work between threads of one process too. Lock files may be
 * removed by an evictor that holds them exclusively; a locker therefore checks after locking
 * that the path still names the inode it locked, and starts over if not.
 */
#include "co/source/srccache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "co/source/archive.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"

#define MAX_KEY           200
#define STALE_TMP_SECONDS 3600
#define GET_ATTEMPTS      3

struct co_srccache {
    char *root;
    uint64_t max;
};

struct co_srccache_entry {
    char *key;
    char *dir;
    int lockfd;
};

static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > MAX_KEY || s[0] == '.') {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-')) {
            return 0;
        }
    }
    return 1;
}

static int mkdir_p(const char *path)
{
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        return co_error_set_os(CO_ERROR, "creating %s", path);
    }
    return 0;
}

/* Removes entries of tmp/ whose mtime is older than STALE_TMP_SECONDS (crash debris). */
static void sweep_tmp(const co_srccache *c)
{
    char *tmp = co_xasprintf("%s/tmp", c->root);
    DIR *d = opendir(tmp);
    if (!d) {
        free(tmp);
        return;
    }
    time_t now = time(NULL);
    for (;;) {
        struct dirent *e = readdir(d); // NOLINT(concurrency-mt-unsafe): private stream
        if (!e) {
            break;
        }
        if (e->d_name[0] == '.') {
            continue;
        }
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            now - st.st_mtime > STALE_TMP_SECONDS) {
            char *p = co_xasprintf("%s/%s", tmp, e->d_name);
            (void)!co_archive_remove_tree(p);
            free(p);
        }
    }
    closedir(d);
    free(tmp);
}

int co_srccache_open(co_srccache **out, const char *root, uint64_t max_bytes)
{
    static const char *const subdirs[] = {"entries", "locks", "aliases", "tmp"};
    int rc = mkdir_p(root);
    if (rc < 0) {
        return rc;
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(subdirs); i++) {
        char *p = co_xasprintf("%s/%s", root, subdirs[i]);
        rc = mkdir_p(p);
        free(p);
        if (rc < 0) {
            return rc;
        }
    }
    co_srccache *c = co_xcalloc(1, sizeof(*c));
    c->root = co_xstrdup(root);
    c->max = max_bytes ? max_bytes : CO_DEFAULT_SOURCE_CACHE;
    sweep_tmp(c);
    *out = c;
    return 0;
}

void co_srccache_free(co_srccache *c)
{
    if (c) {
        free(c->root);
        free(c);
    }
}

const char *co_srccache_root(const co_srccache *c)
{
    return c->root;
}

void co_srccache_key(char **out, const char *digest)
{
    if (strncmp(digest, "sha256:", 7) == 0 && strlen(digest) == 7 + 64 && valid_name(digest + 7)) {
        *out = co_xasprintf("sha256-%s", digest + 7);
        return;
    }
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, digest, strlen(digest));
    *out = co_xasprintf("h-%s", hex);
}

/*
 * Opens and locks the lock file of @p key with @p op (LOCK_SH or LOCK_EX, optionally
 * LOCK_NB). @p create: create the file when missing. @return the descriptor, CO_ENOTFOUND
 * (missing, not created), CO_ECONFLICT (would block) or CO_ERROR.
 */
static int lock_key(const co_srccache *c, const char *key, int op, int create)
{
    char *path = co_xasprintf("%s/locks/%s.lock", c->root, key);
    int rc;
    for (;;) {
        int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
        if (fd < 0) {
            rc = errno == ENOENT ? CO_ENOTFOUND : co_error_set_os(CO_ERROR, "opening %s", path);
            break;
        }
        if (flock(fd, op) < 0) {
            rc =
                errno == EWOULDBLOCK ? CO_ECONFLICT : co_error_set_os(CO_ERROR, "locking %s", path);
            close(fd);
            break;
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev) {
            rc = fd;
            break;
        }
        close(fd); /* removed by an evictor meanwhile: lock the new file */
    }
    free(path);
    return rc;
}

/* Whether @p key is published (its .meta exists); touches it to mark the use when @p touch. */
static int published(const co_srccache *c, const char *key, int touch)
{
    char *meta = co_xasprintf("%s/entries/%s.meta", c->root, key);
    char *dir = co_xasprintf("%s/entries/%s", c->root, key);
    struct stat st;
    int ok = stat(meta, &st) == 0 && stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
    if (ok && touch) {
        utimensat(AT_FDCWD, meta, NULL, 0);
    }
    free(meta);
    free(dir);
    return ok;
}

static co_srccache_entry *hold(const co_srccache *c, const char *key, int fd)
{
    co_srccache_entry *e = co_xcalloc(1, sizeof(*e));
    e->key = co_xstrdup(key);
    e->dir = co_xasprintf("%s/entries/%s", c->root, key);
    e->lockfd = fd;
    return e;
}

static char *random_suffix(void)
{
    unsigned long long r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        r = (unsigned long long)ts.tv_nsec ^ ((unsigned long long)getpid() << 32);
    }
    return co_xasprintf("%016llx", r);
}

/* Writes the .meta file of @p key atomically. */
static int write_meta(const co_srccache *c, const char *key, uint64_t bytes)
{
    char *suffix = random_suffix();
    char *tmp = co_xasprintf("%s/tmp/%s.meta.%s", c->root, key, suffix);
    char *meta = co_xasprintf("%s/entries/%s.meta", c->root, key);
    int rc = 0;
    FILE *f = fopen(tmp, "we");
    if (!f) {
        rc = co_error_set_os(CO_ERROR, "writing %s", tmp);
        goto done;
    }
    fprintf(f, "%" PRIu64 "\n", bytes);
    if (fclose(f) != 0) {
        rc = co_error_set_os(CO_ERROR, "writing %s", tmp);
        unlink(tmp);
        goto done;
    }
    if (rename(tmp, meta) < 0) {
        rc = co_error_set_os(CO_ERROR, "publishing %s", meta);
        unlink(tmp);
    }
done:
    free(suffix);
    free(tmp);
    free(meta);
    return rc;
}

/* Runs @p fill for @p key while holding its lock exclusively, then publishes the result. */
static int fill_entry(const co_srccache *c, const char *key, co_srccache_fill_fn fill, void *ctx)
{
    char *suffix = random_suffix();
    char *tmp = co_xasprintf("%s/tmp/%s.fill.%s", c->root, key, suffix);
    char *dir = co_xasprintf("%s/entries/%s", c->root, key);
    uint64_t bytes = 0;
    int rc;
    /* a tree without .meta is an interrupted publication: start afresh */
    (void)!co_archive_remove_tree(dir);
    rc = fill(ctx, tmp, &bytes);
    if (rc < 0) {
        (void)!co_archive_remove_tree(tmp);
        goto done;
    }
    if (rename(tmp, dir) < 0) {
        rc = co_error_set_os(CO_ERROR, "publishing cache entry %s", key);
        (void)!co_archive_remove_tree(tmp);
        goto done;
    }
    rc = write_meta(c, key, bytes);
done:
    free(suffix);
    free(tmp);
    free(dir);
    return rc;
}

int co_srccache_get(co_srccache *c,
                    const char *key,
                    co_srccache_fill_fn fill,
                    void *ctx,
                    co_srccache_entry **out,
                    int *filled)
{
    if (!valid_name(key)) {
        return co_error_set(CO_EINVALID, "invalid cache key '%.64s'", key);
    }
    int did_fill = 0;
    for (int attempt = 0; attempt < GET_ATTEMPTS; attempt++) {
        int fd = lock_key(c, key, LOCK_SH, 1);
        if (fd < 0) {
            return fd;
        }
        if (published(c, key, 1)) {
            *out = hold(c, key, fd);
            if (filled) {
                *filled = did_fill;
            }
            if (did_fill) {
                /* held now, so the new entry itself is safe from this trim */
                (void)!co_srccache_trim(c);
            }
            return 0;
        }
        if (!fill) {
            close(fd);
            return co_error_set(CO_ENOTFOUND, "cache entry %s does not exist", key);
        }
        /* upgrade; not atomic, so look again once exclusive */
        if (flock(fd, LOCK_EX) < 0) {
            int rc = co_error_set_os(CO_ERROR, "locking cache entry %s", key);
            close(fd);
            return rc;
        }
        if (!published(c, key, 0)) {
            int rc = fill_entry(c, key, fill, ctx);
            if (rc < 0) {
                close(fd);
                return rc;
            }
            did_fill = 1;
        }
        /* relock shared and check again: an evictor may slip in between */
        close(fd);
    }
    return co_error_set(CO_ETOOBIG,
                        "cache entry %s was evicted right after it was filled; "
                        "the cache (%" PRIu64 " bytes) is too small",
                        key, c->max);
}

const char *co_srccache_entry_dir(const co_srccache_entry *e)
{
    return e->dir;
}

const char *co_srccache_entry_key(const co_srccache_entry *e)
{
    return e->key;
}

void co_srccache_release(co_srccache_entry *e)
{
    if (!e) {
        return;
    }
    close(e->lockfd);
    free(e->key);
    free(e->dir);
    free(e);
}

/* ---- size and eviction ------------------------------------------------------------------- */

typedef struct meta_info {
    char *key;
    uint64_t bytes;
    struct timespec used;
} meta_info;

static int read_meta_size(int dfd, const char *name, uint64_t *bytes)
{
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    char buf[32];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return -1;
    }
    buf[n] = '\0';
    char *end = NULL;
    *bytes = strtoull(buf, &end, 10);
    return end == buf ? -1 : 0;
}

/* Lists the published entries. */
static int list_entries(const co_srccache *c, meta_info **out, size_t *n_out, uint64_t *total)
{
    char *dir = co_xasprintf("%s/entries", c->root);
    DIR *d = opendir(dir);
    free(dir);
    if (!d) {
        return co_error_set_os(CO_ERROR, "listing %s/entries", c->root);
    }
    meta_info *list = NULL;
    size_t n = 0, cap = 0;
    *total = 0;
    for (;;) {
        struct dirent *e = readdir(d); // NOLINT(concurrency-mt-unsafe): private stream
        if (!e) {
            break;
        }
        size_t len = strlen(e->d_name);
        if (len <= 5 || strcmp(e->d_name + len - 5, ".meta") != 0) {
            continue;
        }
        struct stat st;
        uint64_t bytes = 0;
        if (fstatat(dirfd(d), e->d_name, &st, 0) < 0 ||
            read_meta_size(dirfd(d), e->d_name, &bytes) < 0) {
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            list = co_xreallocarray(list, cap, sizeof(*list));
        }
        list[n].key = co_xstrndup(e->d_name, len - 5);
        list[n].bytes = bytes;
        list[n].used = st.st_mtim;
        *total += bytes;
        n++;
    }
    closedir(d);
    *out = list;
    *n_out = n;
    return 0;
}

static void free_list(meta_info *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(list[i].key);
    }
    free(list);
}

uint64_t co_srccache_size(co_srccache *c)
{
    meta_info *list = NULL;
    size_t n = 0;
    uint64_t total = 0;
    if (list_entries(c, &list, &n, &total) < 0) {
        return 0;
    }
    free_list(list, n);
    return total;
}

static int cmp_used(const void *a, const void *b)
{
    const meta_info *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) {
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    }
    if (x->used.tv_nsec != y->used.tv_nsec) {
        return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    }
    return strcmp(x->key, y->key);
}

/* Evicts @p key if nobody holds it. @return 1 evicted, 0 busy, or a negative error. */
static int evict(const co_srccache *c, const char *key)
{
    int fd = lock_key(c, key, LOCK_EX | LOCK_NB, 0);
    if (fd == CO_ECONFLICT || fd == CO_ENOTFOUND) {
        return fd == CO_ENOTFOUND ? 1 : 0;
    }
    if (fd < 0) {
        return fd;
    }
    char *meta = co_xasprintf("%s/entries/%s.meta", c->root, key);
    char *dir = co_xasprintf("%s/entries/%s", c->root, key);
    char *suffix = random_suffix();
    char *trash = co_xasprintf("%s/tmp/%s.evict.%s", c->root, key, suffix);
    char *lock = co_xasprintf("%s/locks/%s.lock", c->root, key);
    int rc = 1;
    /* unpublish first: without .meta nobody uses the tree */
    if (unlink(meta) < 0 && errno != ENOENT) {
        rc = co_error_set_os(CO_ERROR, "evicting %s", key);
        goto done;
    }
    if (rename(dir, trash) == 0) {
        (void)!co_archive_remove_tree(trash);
    }
    unlink(lock);
done:
    close(fd);
    free(meta);
    free(dir);
    free(suffix);
    free(trash);
    free(lock);
    return rc;
}

int co_srccache_trim(co_srccache *c)
{
    char *gpath = co_xasprintf("%s/locks/.trim", c->root);
    int gfd = open(gpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    free(gpath);
    if (gfd < 0) {
        return co_error_set_os(CO_ERROR, "opening the cache trim lock");
    }
    if (flock(gfd, LOCK_EX | LOCK_NB) < 0) {
        close(gfd);
        return 0; /* another trim is running */
    }
    meta_info *list = NULL;
    size_t n = 0;
    uint64_t total = 0;
    int rc = list_entries(c, &list, &n, &total);
    if (rc < 0 || total <= c->max) {
        goto done;
    }
    qsort(list, n, sizeof(*list), cmp_used);
    for (size_t i = 0; i < n && total > c->max; i++) {
        int r = evict(c, list[i].key);
        if (r < 0) {
            rc = r;
            break;
        }
        if (r == 1) {
            total -= list[i].bytes;
        }
    }
done:
    free_list(list, n);
    close(gfd);
    return rc;
}

/* ---- aliases ----------------------------------------------------------------------------- */

int co_srccache_alias_set(co_srccache *c, const char *alias, const char *key)
{
    if (!valid_name(alias) || !valid_name(key)) {
        return co_error_set(CO_EINVALID, "invalid cache alias '%.64s' or key '%.64s'", alias, key);
    }
    char *suffix = random_suffix();
    char *tmp = co_xasprintf("%s/tmp/alias.%s.%s", c->root, alias, suffix);
    char *path = co_xasprintf("%s/aliases/%s", c->root, alias);
    int rc = 0;
    FILE *f = fopen(tmp, "we");
    if (!f) {
        rc = co_error_set_os(CO_ERROR, "writing %s", tmp);
        goto done;
    }
    fputs(key, f);
    if (fclose(f) != 0 || rename(tmp, path) < 0) {
        rc = co_error_set_os(CO_ERROR, "writing alias %s", alias);
        unlink(tmp);
    }
done:
    free(suffix);
    free(tmp);
    free(path);
    return rc;
}

int co_srccache_alias_get(co_srccache *c, const char *alias, char **key)
{
    if (!valid_name(alias)) {
        return co_error_set(CO_EINVALID, "invalid cache alias '%.64s'", alias);
    }
    char *path = co_xasprintf("%s/aliases/%s", c->root, alias);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0) {
        return errno == ENOENT ? co_error_set(CO_ENOTFOUND, "no cache alias %s", alias)
                               : co_error_set_os(CO_ERROR, "reading cache alias %s", alias);
    }
    char buf[MAX_KEY + 2];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return co_error_set(CO_EINVALID, "cache alias %s is empty", alias);
    }
    buf[n] = '\0';
    if (!valid_name(buf)) {
        return co_error_set(CO_EINVALID, "cache alias %s holds an invalid key", alias);
    }
    *key = co_xstrdup(buf);
    return 0;
}
