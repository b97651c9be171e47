/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The read-only file tree behind the kustomize and template generators. The disk backend opens
 * every path component relative to the root with O_NOFOLLOW, so neither ".." (rejected earlier)
 * nor a symbolic link can lead outside it. The memory backend keeps a sorted array of files;
 * directories are implied by the paths of the files below them. A memory tree may lie over a
 * lower tree (the rendered kustomization over its source), which shows through outside the
 * memory tree's own directories.
 */
#include "co/render/vfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"

typedef struct mem_file {
    char *path;
    char *data;
    size_t len;
} mem_file;

struct co_vfs {
    char *root; /* disk backend; NULL for memory */
    mem_file *files;
    size_t nfiles;
    size_t cap;
    /* memory backend: the tree seen outside the own directories (co_vfs_mem_set_lower) */
    const co_vfs *lower;
    char **own;
    size_t nown;
    co_vfs_filter_fn filter;
    void *filter_ctx;
};

/* --- paths --------------------------------------------------------------------------------- */

bool co_vfs_is_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 0) {
        return true;
    }
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int co_vfs_join(char **out, const char *dir, const char *rel)
{
    if (rel[0] == '/') {
        return co_error_set(CO_EINVALID, "absolute path '%s' is not allowed", rel);
    }
    size_t cap = strlen(dir) + strlen(rel) + 2;
    char *res = co_xmalloc(cap);
    size_t len = 0;
    res[0] = '\0';
    const char *parts[2] = {dir, rel};
    for (int i = 0; i < 2; i++) {
        const char *p = parts[i];
        while (*p) {
            const char *e = strchr(p, '/');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            if (n == 0 || (n == 1 && p[0] == '.')) {
                /* skip empty and "." segments */
            } else if (n == 2 && p[0] == '.' && p[1] == '.') {
                if (len == 0) {
                    free(res);
                    return co_error_set(CO_EINVALID, "path '%s' leaves the root", rel);
                }
                char *slash = strrchr(res, '/');
                len = slash ? (size_t)(slash - res) : 0;
                res[len] = '\0';
            } else {
                if (len) {
                    res[len++] = '/';
                }
                memcpy(res + len, p, n);
                len += n;
                res[len] = '\0';
            }
            p += n;
            if (*p == '/') {
                p++;
            }
        }
    }
    *out = res;
    return 0;
}

static int path_is_clean(const char *path)
{
    char *clean = NULL;
    if (co_vfs_join(&clean, "", path) < 0 || !clean) {
        co_error_clear();
        return 0;
    }
    int ok = strcmp(clean, path) == 0;
    free(clean);
    return ok;
}

void co_vfs_strv_free(char **v)
{
    if (!v) {
        return;
    }
    for (char **p = v; *p; p++) {
        free(*p);
    }
    free(v);
}

typedef struct strv {
    char **v;
    size_t n, cap;
} strv;

static void strv_push(strv *s, char *str)
{
    if (s->n + 2 > s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = co_xreallocarray(s->v, s->cap, sizeof(char *));
    }
    s->v[s->n++] = str;
    s->v[s->n] = NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **strv_finish(strv *s, size_t *n_out)
{
    if (!s->v) {
        s->v = co_xcalloc(1, sizeof(char *));
    }
    qsort(s->v, s->n, sizeof(char *), cmp_str);
    if (n_out) {
        *n_out = s->n;
    }
    return s->v;
}

/* --- construction ------------------------------------------------------------------------- */

int co_vfs_new_disk(co_vfs **out, const char *root)
{
    struct stat st;
    if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return co_error_set(CO_ENOTFOUND, "no such directory: %s", root);
    }
    co_vfs *fs = co_xcalloc(1, sizeof(*fs));
    fs->root = co_xstrdup(root);
    *out = fs;
    return 0;
}

co_vfs *co_vfs_new_mem(void)
{
    return co_xcalloc(1, sizeof(co_vfs));
}

static int mem_find(const co_vfs *fs, const char *path, size_t *pos)
{
    size_t lo = 0, hi = fs->nfiles;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(fs->files[mid].path, path);
        if (c == 0) {
            *pos = mid;
            return 1;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *pos = lo;
    return 0;
}

int co_vfs_mem_put(co_vfs *fs, const char *path, const void *data, size_t len)
{
    if (fs->root) {
        return co_error_set(CO_EINVALID, "cannot add files to a disk tree");
    }
    if (!path[0] || !path_is_clean(path)) {
        return co_error_set(CO_EINVALID, "invalid file path '%s'", path);
    }
    if (len > CO_MAX_SOURCE_FILE) {
        return co_error_set(CO_ETOOBIG, "file '%s' is larger than %zu bytes", path,
                            (size_t)CO_MAX_SOURCE_FILE);
    }
    size_t pos;
    if (mem_find(fs, path, &pos)) {
        free(fs->files[pos].data);
        fs->files[pos].data = co_xmemdup(data, len);
        fs->files[pos].len = len;
        return 0;
    }
    if (fs->nfiles >= CO_MAX_SOURCE_FILES) {
        return co_error_set(CO_ETOOBIG, "more than %d files", CO_MAX_SOURCE_FILES);
    }
    if (fs->nfiles == fs->cap) {
        fs->cap = fs->cap ? fs->cap * 2 : 16;
        fs->files = co_xreallocarray(fs->files, fs->cap, sizeof(mem_file));
    }
    memmove(fs->files + pos + 1, fs->files + pos, (fs->nfiles - pos) * sizeof(mem_file));
    fs->files[pos].path = co_xstrdup(path);
    fs->files[pos].data = co_xmemdup(data, len);
    fs->files[pos].len = len;
    fs->nfiles++;
    return 0;
}

void co_vfs_mem_set_lower(co_vfs *fs,
                          const co_vfs *lower,
                          const char *const *own,
                          size_t nown,
                          co_vfs_filter_fn filter,
                          void *filter_ctx)
{
    CO_ASSERT(fs != NULL && !fs->root);
    for (size_t i = 0; i < fs->nown; i++) {
        free(fs->own[i]);
    }
    free(fs->own);
    fs->own = nown ? co_xcalloc(nown, sizeof(char *)) : NULL;
    for (size_t i = 0; i < nown; i++) {
        fs->own[i] = co_xstrdup(own[i]);
    }
    fs->nown = nown;
    fs->lower = lower;
    fs->filter = filter;
    fs->filter_ctx = filter_ctx;
}

/* The lower tree when @p path lies outside the memory tree's own directories, else NULL. */
static const co_vfs *lower_for(const co_vfs *fs, const char *path)
{
    if (fs->root || !fs->lower) {
        return NULL;
    }
    for (size_t i = 0; i < fs->nown; i++) {
        if (co_vfs_is_within(path, fs->own[i])) {
            return NULL;
        }
    }
    return fs->lower;
}

void co_vfs_free(co_vfs *fs)
{
    if (!fs) {
        return;
    }
    for (size_t i = 0; i < fs->nown; i++) {
        free(fs->own[i]);
    }
    free(fs->own);
    for (size_t i = 0; i < fs->nfiles; i++) {
        free(fs->files[i].path);
        free(fs->files[i].data);
    }
    free(fs->files);
    free(fs->root);
    free(fs);
}

/* --- disk access --------------------------------------------------------------------------- */

/* The directories on the way to a file are only walked through: O_PATH needs no read
 * permission on them (a tree rooted at "/" passes through home directories with mode 0711). */
#ifdef O_PATH
#define WALK_FLAGS (O_PATH | O_DIRECTORY)
#else
#define WALK_FLAGS (O_RDONLY | O_DIRECTORY)
#endif

/* Opens @p path below the root without following links; returns an fd or -1 (errno set). */
static int disk_open(const co_vfs *fs, const char *path, int flags)
{
    if (!path[0]) {
        return open(fs->root, flags | O_DIRECTORY | O_CLOEXEC);
    }
    int dirfd = open(fs->root, WALK_FLAGS | O_CLOEXEC);
    if (dirfd < 0) {
        return dirfd;
    }
    char *copy = co_xstrdup(path);
    char *p = copy;
    int fd = -1;
    for (;;) {
        char *slash = strchr(p, '/');
        if (slash) {
            *slash = '\0';
        }
        int f = slash ? WALK_FLAGS : flags;
        fd = openat(dirfd, p, f | O_NOFOLLOW | O_CLOEXEC);
        close(dirfd);
        if (fd < 0 || !slash) {
            break;
        }
        dirfd = fd;
        p = slash + 1;
    }
    free(copy);
    return fd;
}

co_vfs_type co_vfs_stat(const co_vfs *fs, const char *path)
{
    const co_vfs *lower = lower_for(fs, path);
    if (lower) {
        co_vfs_type t = co_vfs_stat(lower, path);
        /* the directories leading to an own directory exist in the memory tree too */
        if (t == CO_VFS_NONE) {
            for (size_t i = 0; i < fs->nown; i++) {
                if (co_vfs_is_within(fs->own[i], path)) {
                    return CO_VFS_DIR;
                }
            }
        }
        return t;
    }
    if (!fs->root) {
        size_t pos;
        if (!path[0]) {
            return CO_VFS_DIR;
        }
        if (mem_find(fs, path, &pos)) {
            return CO_VFS_FILE;
        }
        size_t n = strlen(path);
        if (pos < fs->nfiles && strncmp(fs->files[pos].path, path, n) == 0 &&
            fs->files[pos].path[n] == '/') {
            return CO_VFS_DIR;
        }
        return CO_VFS_NONE;
    }
    int fd = disk_open(fs, path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        return CO_VFS_NONE;
    }
    struct stat st;
    co_vfs_type t = CO_VFS_NONE;
    if (fstat(fd, &st) == 0) {
        t = S_ISDIR(st.st_mode) ? CO_VFS_DIR : S_ISREG(st.st_mode) ? CO_VFS_FILE : CO_VFS_NONE;
    }
    close(fd);
    return t;
}

int co_vfs_read(char **out, size_t *len_out, const co_vfs *fs, const char *path)
{
    const co_vfs *lower = lower_for(fs, path);
    if (lower) {
        char *data = NULL;
        size_t len = 0;
        int rc = co_vfs_read(&data, &len, lower, path);
        if (rc < 0 || !fs->filter) {
            if (rc == 0) {
                *out = data;
                if (len_out) {
                    *len_out = len;
                }
            }
            return rc;
        }
        char *filtered = NULL;
        size_t flen = 0;
        rc = fs->filter(fs->filter_ctx, &filtered, &flen, path, data, len);
        if (rc < 0) {
            free(data);
            return rc;
        }
        if (filtered) {
            free(data);
            data = filtered;
            len = flen;
        }
        *out = data;
        if (len_out) {
            *len_out = len;
        }
        return 0;
    }
    if (!fs->root) {
        size_t pos;
        if (!mem_find(fs, path, &pos)) {
            return co_error_set(CO_ENOTFOUND, "no such file: %s", path);
        }
        *out = co_xmemdup(fs->files[pos].data, fs->files[pos].len);
        if (len_out) {
            *len_out = fs->files[pos].len;
        }
        return 0;
    }
    int fd = disk_open(fs, path, O_RDONLY);
    if (fd < 0) {
        return co_error_set(errno == ENOENT ? CO_ENOTFOUND : CO_ERROR, "cannot open %s: %s", path,
                            errno == ENOENT ? "no such file" : "not a readable file");
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return co_error_set(CO_ENOTFOUND, "not a regular file: %s", path);
    }
    co_buf b = CO_BUF_INIT(CO_MAX_SOURCE_FILE);
    char chunk[16384];
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            rc = co_error_set_os(CO_ERROR, "reading %s", path);
            break;
        }
        if (n == 0) {
            break;
        }
        if (co_buf_put(&b, chunk, (size_t)n) < 0) {
            rc = co_error_set(CO_ETOOBIG, "file %s is larger than %zu bytes", path,
                              (size_t)CO_MAX_SOURCE_FILE);
            break;
        }
    }
    close(fd);
    if (rc < 0) {
        co_buf_dispose(&b);
        return rc;
    }
    *out = co_buf_take(&b, len_out);
    return 0;
}

/* The listing of a directory outside the own ones: the lower tree's and the memory tree's. */
static int list_merged(char ***out, size_t *n_out, const co_vfs *fs, const char *dir)
{
    strv s = {0};
    char **names = NULL;
    if (co_vfs_stat(fs->lower, dir) == CO_VFS_DIR) {
        int rc = co_vfs_list(&names, NULL, fs->lower, dir);
        if (rc < 0) {
            return rc;
        }
        for (char **p = names; p && *p; p++) {
            strv_push(&s, co_xstrdup(*p));
        }
        co_vfs_strv_free(names);
        names = NULL;
    }
    co_vfs mem = *fs;
    mem.lower = NULL;
    if (co_vfs_stat(&mem, dir) == CO_VFS_DIR && co_vfs_list(&names, NULL, &mem, dir) == 0) {
        for (char **p = names; p && *p; p++) {
            int seen = 0;
            for (size_t i = 0; i < s.n && !seen; i++) {
                seen = strcmp(s.v[i], *p) == 0;
            }
            if (!seen) {
                strv_push(&s, co_xstrdup(*p));
            }
        }
        co_vfs_strv_free(names);
    }
    *out = strv_finish(&s, n_out);
    return 0;
}

int co_vfs_list(char ***out, size_t *n_out, const co_vfs *fs, const char *dir)
{
    strv s = {0};
    if (co_vfs_stat(fs, dir) != CO_VFS_DIR) {
        return co_error_set(CO_ENOTFOUND, "no such directory: %s", dir[0] ? dir : ".");
    }
    if (lower_for(fs, dir)) {
        return list_merged(out, n_out, fs, dir);
    }
    if (!fs->root) {
        size_t n = strlen(dir);
        const char *last = NULL;
        size_t lastlen = 0;
        for (size_t i = 0; i < fs->nfiles; i++) {
            const char *p = fs->files[i].path;
            if (n) {
                if (strncmp(p, dir, n) != 0 || p[n] != '/') {
                    continue;
                }
                p += n + 1;
            }
            const char *slash = strchr(p, '/');
            size_t len = slash ? (size_t)(slash - p) : strlen(p);
            if (last && lastlen == len && strncmp(last, p, len) == 0) {
                continue;
            }
            last = p;
            lastlen = len;
            strv_push(&s, co_xstrndup(p, len));
        }
        *out = strv_finish(&s, n_out);
        return 0;
    }
    int fd = disk_open(fs, dir, O_RDONLY | O_DIRECTORY);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) {
            close(fd);
        }
        return co_error_set(CO_ENOTFOUND, "cannot list directory %s", dir);
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) { /* NOLINT(concurrency-mt-unsafe): one DIR per call */
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        strv_push(&s, co_xstrdup(e->d_name));
    }
    closedir(d);
    *out = strv_finish(&s, n_out);
    return 0;
}

static int walk_into(strv *s, const co_vfs *fs, const char *dir)
{
    char **names = NULL;
    int rc = co_vfs_list(&names, NULL, fs, dir);
    if (rc < 0 || !names) {
        return rc;
    }
    for (char **p = names; *p && rc == 0; p++) {
        char *path = dir[0] ? co_xasprintf("%s/%s", dir, *p) : co_xstrdup(*p);
        co_vfs_type t = co_vfs_stat(fs, path);
        if (t == CO_VFS_FILE) {
            if (s->n >= CO_MAX_SOURCE_FILES) {
                rc = co_error_set(CO_ETOOBIG, "more than %d files", CO_MAX_SOURCE_FILES);
                free(path);
                break;
            }
            strv_push(s, path);
            continue;
        }
        if (t == CO_VFS_DIR) {
            rc = walk_into(s, fs, path);
        }
        free(path);
    }
    co_vfs_strv_free(names);
    return rc;
}

int co_vfs_walk(char ***out, size_t *n_out, const co_vfs *fs, const char *dir)
{
    strv s = {0};
    int rc = walk_into(&s, fs, dir);
    if (rc < 0) {
        if (s.v) {
            co_vfs_strv_free(s.v);
        }
        return rc;
    }
    *out = strv_finish(&s, n_out);
    return 0;
}
