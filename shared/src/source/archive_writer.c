/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The confined tree writer (archive_lib.h). Every path is cleaned lexically first (no
 * absolute paths, no "..", bounded length and depth), then walked from the tree's root one
 * component at a time with openat(O_NOFOLLOW | O_DIRECTORY), so a symlink created by an earlier
 * entry can never redirect a later write. Symlinks themselves are created as given and checked
 * at commit, when the whole tree exists: each one is resolved inside the tree, following any
 * links it passes through, and must neither leave the tree nor loop.
 */
#include "archive_lib.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"

/* One file or symlink of the tree, for the canonical digest. */
typedef struct record {
    char *path;
    char kind; /* 'f' file, 'x' executable file, 'l' symlink */
    unsigned char sha[32];
    size_t seq; /* insertion order: a later entry for the same path wins */
} record;

struct co_archive__writer {
    char *dest;
    char *tmp;
    int rootfd;
    unsigned flags;
    co_archive_limits lim;
    co_archive_stats stats;
    uint64_t headers; /* entries announced, against the same cap as entries created */
    char *lastdir;    /* the parent directory of the previous entry, kept open: archives */
    int lastfd;       /* list files directory by directory */
    char **links;     /* symlinks to check at commit */
    size_t nlinks, caplinks;
    record *recs;
    size_t nrecs, caprecs;
    /* the file being written */
    int curfd;
    char *curpath;
    int curexec;
    uint64_t curbytes;
    EVP_MD_CTX *curmd;
};

const char *co_archive__printable(const char *name, char *buf, size_t len)
{
    CO_ASSERT(len >= 8);
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        int ctrl = *p < 0x20 || *p == 0x7f;
        if (o + (ctrl ? 4 : 1) + 4 > len) {
            memcpy(buf + o, "...", 4);
            return buf;
        }
        if (ctrl) {
            o += (size_t)snprintf(buf + o, len - o, "\\x%02x", *p);
        } else {
            buf[o++] = (char)*p;
        }
    }
    buf[o] = '\0';
    return buf;
}

/* A path being resolved may grow by the targets of the links it meets. */
#define RESOLVE_CAP ((size_t)CO_MAX_EXTRACT_PATH * 4)

#define PRINTABLE(name) co_archive__printable((name), (char[256]){0}, 256)

/*
 * Cleans an entry path: drops empty and "." components and a trailing "/", rejects absolute
 * paths, "..", over-long names and over-deep paths. The result ("" for the root) is written
 * into @p out.
 */
static int clean_path(co_buf *out, const char *raw, const char *what)
{
    if (raw[0] == '/') {
        return co_error_set(CO_EINVALID, "%s %s: absolute paths are not allowed", what,
                            PRINTABLE(raw));
    }
    if (strlen(raw) > CO_MAX_EXTRACT_PATH) {
        return co_error_set(CO_EINVALID, "%s %s: path longer than %d bytes", what, PRINTABLE(raw),
                            CO_MAX_EXTRACT_PATH);
    }
    co_buf_reset(out);
    size_t depth = 0;
    const char *p = raw;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            return co_error_set(CO_EINVALID, "%s %s: path contains '..'", what, PRINTABLE(raw));
        }
        if (n > 255) {
            return co_error_set(CO_EINVALID, "%s %s: a path component is longer than 255 bytes",
                                what, PRINTABLE(raw));
        }
        if (n > 0 && !(n == 1 && p[0] == '.')) {
            if (++depth > CO_MAX_EXTRACT_DEPTH) {
                return co_error_set(CO_EINVALID, "%s %s: deeper than %d directories", what,
                                    PRINTABLE(raw), CO_MAX_EXTRACT_DEPTH);
            }
            if ((out->len && co_buf_putc(out, '/') < 0) || co_buf_put(out, p, n) < 0) {
                return CO_ETOOBIG;
            }
        }
        p += n;
        if (*p == '/') {
            p++;
        }
    }
    if (co_buf_putc(out, '\0') < 0) { /* make ptr non-NULL even for the root */
        return CO_ETOOBIG;
    }
    out->len--;
    return 0;
}

/* Checks the cap before anything new is created. */
static int room_for_entry(co_archive__writer *w)
{
    if (w->stats.entries >= w->lim.max_entries) {
        return co_error_set(CO_ETOOBIG, "archive has more than %llu entries",
                            (unsigned long long)w->lim.max_entries);
    }
    return 0;
}

/*
 * Opens the directory @p dir (a cleaned path, "" for the root) below the tree's root without
 * following any symlink, creating missing components when @p create is set.
 * @return a descriptor, or a negative error code.
 */
static int walk_dir(co_archive__writer *w, const char *dir, int create, const char *entry)
{
    int fd = dup(w->rootfd);
    if (fd < 0) {
        return co_error_set_os(CO_ERROR, "dup");
    }
    char comp[256];
    const char *p = dir;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        memcpy(comp, p, n);
        comp[n] = '\0';
        p += n + (end ? 1 : 0);
        int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create) {
            int rc = room_for_entry(w);
            if (rc < 0) {
                close(fd);
                return rc;
            }
            if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
                rc = co_error_set_os(CO_ERROR, "entry %s: creating directory '%s'",
                                     PRINTABLE(entry), PRINTABLE(comp));
                close(fd);
                return rc;
            }
            w->stats.entries++;
            next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (next < 0) {
            int err = errno;
            close(fd);
            if (err == ELOOP || err == ENOTDIR) {
                return co_error_set(CO_EINVALID,
                                    "entry %s: path component '%s' is a symlink or not a "
                                    "directory",
                                    PRINTABLE(entry), PRINTABLE(comp));
            }
            errno = err;
            return co_error_set_os(err == ENOENT ? CO_ENOTFOUND : CO_ERROR,
                                   "entry %s: opening '%s'", PRINTABLE(entry), PRINTABLE(comp));
        }
        close(fd);
        fd = next;
    }
    return fd;
}

/*
 * walk_dir() with a one-entry cache of the last directory. A directory of the tree is never
 * replaced by anything else (replace_existing() refuses), so the cached descriptor stays valid.
 * The caller closes the returned descriptor.
 */
static int open_dir(co_archive__writer *w, const char *dir, int create, const char *entry)
{
    if (w->lastdir && strcmp(w->lastdir, dir) == 0) {
        int fd = dup(w->lastfd);
        return fd >= 0 ? fd : co_error_set_os(CO_ERROR, "dup");
    }
    int fd = walk_dir(w, dir, create, entry);
    if (fd >= 0) {
        int keep = dup(fd);
        if (keep >= 0) {
            if (w->lastfd >= 0) {
                close(w->lastfd);
            }
            free(w->lastdir);
            w->lastfd = keep;
            w->lastdir = co_xstrdup(dir);
        }
    }
    return fd;
}

/* Splits a cleaned path at its last '/' into a parent (in @p parent) and a base name. */
static const char *split_parent(co_buf *parent, const char *path)
{
    const char *slash = strrchr(path, '/');
    co_buf_reset(parent);
    if (!slash) {
        (void)!co_buf_puts(parent, "");
        return path;
    }
    (void)!co_buf_put(parent, path, (size_t)(slash - path));
    return slash + 1;
}

int co_archive__writer_new(co_archive__writer **out,
                           const char *dest,
                           const co_archive_limits *limits,
                           unsigned flags)
{
    struct stat st;
    if (lstat(dest, &st) == 0) {
        return co_error_set(CO_EEXISTS, "destination %s already exists", dest);
    }
    co_archive__writer *w = co_xcalloc(1, sizeof(*w));
    w->rootfd = -1;
    w->curfd = -1;
    w->lastfd = -1;
    w->flags = flags;
    w->lim.max_total = limits && limits->max_total ? limits->max_total : CO_MAX_EXTRACT_TOTAL;
    w->lim.max_file = limits && limits->max_file ? limits->max_file : CO_MAX_EXTRACT_FILE;
    w->lim.max_entries =
        limits && limits->max_entries ? limits->max_entries : CO_MAX_EXTRACT_ENTRIES;
    w->dest = co_xstrdup(dest);
    w->tmp = co_xasprintf("%s.partial-XXXXXX", dest);
    if (!mkdtemp(w->tmp)) {
        int rc = co_error_set_os(CO_ERROR, "creating a temporary directory beside %s", dest);
        free(w->tmp);
        w->tmp = NULL;
        co_archive__writer_free(w);
        return rc;
    }
    w->rootfd = open(w->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (w->rootfd < 0) {
        int rc = co_error_set_os(CO_ERROR, "opening %s", w->tmp);
        co_archive__writer_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void co_archive__writer_free(co_archive__writer *w)
{
    if (!w) {
        return;
    }
    if (w->curfd >= 0) {
        close(w->curfd);
    }
    EVP_MD_CTX_free(w->curmd);
    free(w->curpath);
    if (w->lastfd >= 0) {
        close(w->lastfd);
    }
    free(w->lastdir);
    if (w->rootfd >= 0) {
        close(w->rootfd);
    }
    if (w->tmp) {
        (void)!co_archive_remove_tree(w->tmp);
        free(w->tmp);
    }
    for (size_t i = 0; i < w->nlinks; i++) {
        free(w->links[i]);
    }
    free(w->links);
    for (size_t i = 0; i < w->nrecs; i++) {
        free(w->recs[i].path);
    }
    free(w->recs);
    free(w->dest);
    free(w);
}

const co_archive_stats *co_archive__stats(const co_archive__writer *w)
{
    return &w->stats;
}

int co_archive__count_entry(co_archive__writer *w)
{
    if (w->headers++ >= w->lim.max_entries) {
        return co_error_set(CO_ETOOBIG, "archive has more than %llu entries",
                            (unsigned long long)w->lim.max_entries);
    }
    return 0;
}

static void
add_record(co_archive__writer *w, const char *path, char kind, const unsigned char sha[32])
{
    if (!(w->flags & CO_ARCHIVE__DIGEST)) {
        return;
    }
    if (w->nrecs == w->caprecs) {
        w->caprecs = w->caprecs ? w->caprecs * 2 : 64;
        w->recs = co_xreallocarray(w->recs, w->caprecs, sizeof(*w->recs));
    }
    record *r = &w->recs[w->nrecs];
    r->path = co_xstrdup(path);
    r->kind = kind;
    memcpy(r->sha, sha, 32);
    r->seq = w->nrecs++;
}

/* Lowercase hex of a sha256 sum into @p hex (65 bytes). */
static void to_hex(const unsigned char sha[32], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (size_t k = 0; k < 32; k++) {
        hex[2 * k] = digits[sha[k] >> 4];
        hex[2 * k + 1] = digits[sha[k] & 15];
    }
    hex[64] = '\0';
}

static void sha256(const void *data, size_t len, unsigned char out[32])
{
    unsigned int n = 32;
    EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
}

int co_archive__mkdir(co_archive__writer *w, const char *path)
{
    co_buf clean = CO_BUF_INIT(CO_MAX_EXTRACT_PATH + 1);
    int rc = clean_path(&clean, path, "entry");
    if (rc < 0) {
        goto done;
    }
    rc = open_dir(w, clean.ptr, 1, path);
    if (rc >= 0) {
        close(rc);
        rc = 0;
    }
done:
    co_buf_dispose(&clean);
    return rc;
}

/*
 * Makes room for a new non-directory entry @p name in @p pfd: a previous file or link of that
 * name is replaced (as tar does when an archive lists a path twice); a directory is not.
 */
static int replace_existing(int pfd, const char *name, const char *entry)
{
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        return 0;
    }
    if (S_ISDIR(st.st_mode)) {
        return co_error_set(CO_EINVALID, "entry %s: a directory of that name already exists",
                            PRINTABLE(entry));
    }
    if (unlinkat(pfd, name, 0) < 0) {
        return co_error_set_os(CO_ERROR, "entry %s: replacing", PRINTABLE(entry));
    }
    return 0;
}

int co_archive__file_begin(co_archive__writer *w, const char *path, int executable)
{
    CO_ASSERT(w->curfd < 0);
    co_buf clean = CO_BUF_INIT(CO_MAX_EXTRACT_PATH + 1);
    co_buf parent = CO_BUF_INIT(CO_MAX_EXTRACT_PATH + 1);
    int pfd = -1;
    int rc = clean_path(&clean, path, "entry");
    if (rc < 0) {
        goto done;
    }
    if (clean.len == 0) {
        rc = co_error_set(CO_EINVALID, "entry %s: a file needs a name", PRINTABLE(path));
        goto done;
    }
    const char *name = split_parent(&parent, clean.ptr);
    pfd = open_dir(w, co_buf_cstr(&parent), 1, path);
    if (pfd < 0) {
        rc = pfd;
        goto done;
    }
    if ((rc = replace_existing(pfd, name, path)) < 0 || (rc = room_for_entry(w)) < 0) {
        goto done;
    }
    w->curfd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      executable ? 0755 : 0644);
    if (w->curfd < 0) {
        rc = co_error_set_os(CO_ERROR, "entry %s: creating file", PRINTABLE(path));
        goto done;
    }
    w->curpath = co_buf_take(&clean, NULL);
    w->curexec = executable;
    w->curbytes = 0;
    if (w->flags & CO_ARCHIVE__DIGEST) {
        w->curmd = EVP_MD_CTX_new();
        CO_ASSERT(w->curmd);
        EVP_DigestInit_ex(w->curmd, EVP_sha256(), NULL);
    }
    w->stats.entries++;
    rc = 0;
done:
    if (pfd >= 0) {
        close(pfd);
    }
    co_buf_dispose(&clean);
    co_buf_dispose(&parent);
    return rc;
}

int co_archive__write(co_archive__writer *w, const void *data, size_t len)
{
    CO_ASSERT(w->curfd >= 0);
    if (len > w->lim.max_file - w->curbytes || w->curbytes > w->lim.max_file) {
        return co_error_set(CO_ETOOBIG, "entry %s: file larger than the limit of %llu bytes",
                            PRINTABLE(w->curpath), (unsigned long long)w->lim.max_file);
    }
    if (len > w->lim.max_total - w->stats.bytes) {
        return co_error_set(CO_ETOOBIG,
                            "entry %s: archive expands to more than the limit of %llu bytes",
                            PRINTABLE(w->curpath), (unsigned long long)w->lim.max_total);
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t n = write(w->curfd, p, left);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return co_error_set_os(CO_ERROR, "entry %s: writing", PRINTABLE(w->curpath));
        }
        p += n;
        left -= (size_t)n;
    }
    if (w->curmd) {
        EVP_DigestUpdate(w->curmd, data, len);
    }
    w->curbytes += len;
    w->stats.bytes += len;
    return 0;
}

int co_archive__file_end(co_archive__writer *w)
{
    CO_ASSERT(w->curfd >= 0);
    int rc = 0;
    if (close(w->curfd) < 0) {
        rc = co_error_set_os(CO_ERROR, "entry %s: closing", PRINTABLE(w->curpath));
    }
    w->curfd = -1;
    if (rc == 0 && w->curmd) {
        unsigned char sha[32];
        unsigned int n = 32;
        EVP_DigestFinal_ex(w->curmd, sha, &n);
        add_record(w, w->curpath, w->curexec ? 'x' : 'f', sha);
    }
    EVP_MD_CTX_free(w->curmd);
    w->curmd = NULL;
    free(w->curpath);
    w->curpath = NULL;
    return rc;
}

/*
 * A lexical pre-check of a symlink target relative to the link's directory (@p depth deep):
 * relative, bounded, and never climbing above the root. The full check, through other links,
 * happens at commit.
 */
static int check_link_target(const char *entry, const char *target, size_t depth)
{
    if (!target[0]) {
        return co_error_set(CO_EINVALID, "entry %s: symlink with an empty target",
                            PRINTABLE(entry));
    }
    if (target[0] == '/') {
        return co_error_set(CO_EINVALID, "entry %s: symlink target '%s' is an absolute path",
                            PRINTABLE(entry), PRINTABLE(target));
    }
    if (strlen(target) > CO_MAX_EXTRACT_PATH) {
        return co_error_set(CO_EINVALID, "entry %s: symlink target longer than %d bytes",
                            PRINTABLE(entry), CO_MAX_EXTRACT_PATH);
    }
    long level = (long)depth;
    const char *p = target;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (--level < 0) {
                return co_error_set(CO_EINVALID,
                                    "entry %s: symlink target '%s' points outside the archive",
                                    PRINTABLE(entry), PRINTABLE(target));
            }
        } else if (n > 0 && !(n == 1 && p[0] == '.')) {
            level++;
        }
        p += n + (end ? 1 : 0);
    }
    return 0;
}

int co_archive__symlink(co_archive__writer *w, const char *path, const char *target)
{
    co_buf clean = CO_BUF_INIT(CO_MAX_EXTRACT_PATH + 1);
    co_buf parent = CO_BUF_INIT(CO_MAX_EXTRACT_PATH + 1);
    int pfd = -1;
    int rc = clean_path(&clean, path, "entry");
    if (rc < 0) {
        goto done;
    }
    if (clean.len == 0) {
        rc = co_error_set(CO_EINVALID, "entry %s: a symlink needs a name", PRINTABLE(path));
        goto done;
    }
    size_t depth = 0;
    for (const char *c = clean.ptr; *c; c++) {
        depth += *c == '/';
    }
    if ((rc = check_link_target(path, target, depth)) < 0) {
        goto done;
    }
    const char *name = split_parent(&parent, clean.ptr);
    pfd = open_dir(w, co_buf_cstr(&parent), 1, path);
    if (pfd < 0) {
        rc = pfd;
        goto done;
    }
    if ((rc = replace_existing(pfd, name, path)) < 0 || (rc = room_for_entry(w)) < 0) {
        goto done;
    }
    if (symlinkat(target, pfd, name) < 0) {
        rc = co_error_set_os(CO_ERROR, "entry %s: creating symlink", PRINTABLE(path));
        goto done;
    }
    if (w->nlinks == w->caplinks) {
        w->caplinks = w->caplinks ? w->caplinks * 2 : 16;
        w->links = co_xreallocarray(w->links, w->caplinks, sizeof(*w->links));
    }
    w->links[w->nlinks++] = co_xstrdup(clean.ptr);
    unsigned char sha[32];
    sha256(target, strlen(target), sha);
    add_record(w, clean.ptr, 'l', sha);
    w->stats.entries++;
    rc = 0;
done:
    if (pfd >= 0) {
        close(pfd);
    }
    co_buf_dispose(&clean);
    co_buf_dispose(&parent);
    return rc;
}

/* Hashes the regular file open at @p fd (for a hard link's digest record). */
static int hash_fd(int fd, unsigned char sha[32])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    CO_ASSERT(md);
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    char buf[65536];
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            rc = co_error_set_os(CO_ERROR, "reading a hard link target");
            break;
        }
        if (n == 0) {
            break;
        }
        EVP_DigestUpdate(md, buf, (size_t)n);
    }
    unsigned int len = 32;
    EVP_DigestFinal_ex(md, sha, &len);
    EVP_MD_CTX_free(md);
    return rc;
}

int co_archive__hardlink(co_archive__writer *w, const char *path, const char *target)
{
    co_buf clean = CO_BUF_INIT(CO_MAX_EXTRACT_PATH + 1);
    co_buf tclean = CO_BUF_INIT(CO_MAX_EXTRACT_PATH + 1);
    co_buf parent = CO_BUF_INIT(CO_MAX_EXTRACT_PATH + 1);
    co_buf tparent = CO_BUF_INIT(CO_MAX_EXTRACT_PATH + 1);
    int pfd = -1, tpfd = -1, tfd = -1;
    int rc = clean_path(&clean, path, "entry");
    if (rc < 0) {
        goto done;
    }
    if (clean_path(&tclean, target, "hard link target") < 0) {
        rc = co_error_wrap("entry %s", PRINTABLE(path));
        goto done;
    }
    if (clean.len == 0 || tclean.len == 0) {
        rc = co_error_set(CO_EINVALID, "entry %s: a hard link needs a name and a target",
                          PRINTABLE(path));
        goto done;
    }
    const char *tname = split_parent(&tparent, tclean.ptr);
    tpfd = open_dir(w, co_buf_cstr(&tparent), 0, path);
    if (tpfd < 0) {
        rc = co_error_set(CO_EINVALID, "entry %s: hard link target '%s' is not in the archive",
                          PRINTABLE(path), PRINTABLE(target));
        goto done;
    }
    struct stat st;
    if (fstatat(tpfd, tname, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) {
        rc = co_error_set(CO_EINVALID,
                          "entry %s: hard link target '%s' is not a regular file of the archive",
                          PRINTABLE(path), PRINTABLE(target));
        goto done;
    }
    const char *name = split_parent(&parent, clean.ptr);
    pfd = open_dir(w, co_buf_cstr(&parent), 1, path);
    if (pfd < 0) {
        rc = pfd;
        goto done;
    }
    if (strcmp(clean.ptr, tclean.ptr) == 0) {
        rc = co_error_set(CO_EINVALID, "entry %s: hard link to itself", PRINTABLE(path));
        goto done;
    }
    if ((rc = replace_existing(pfd, name, path)) < 0 || (rc = room_for_entry(w)) < 0) {
        goto done;
    }
    if (linkat(tpfd, tname, pfd, name, 0) < 0) {
        rc = co_error_set_os(CO_ERROR, "entry %s: creating hard link", PRINTABLE(path));
        goto done;
    }
    if (w->flags & CO_ARCHIVE__DIGEST) {
        unsigned char sha[32];
        tfd = openat(tpfd, tname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (tfd < 0 || hash_fd(tfd, sha) < 0) {
            rc = co_error_set_os(CO_ERROR, "entry %s: reading hard link target", PRINTABLE(path));
            goto done;
        }
        add_record(w, clean.ptr, (st.st_mode & 0100) ? 'x' : 'f', sha);
    }
    w->stats.entries++;
    rc = 0;
done:
    if (tfd >= 0) {
        close(tfd);
    }
    if (pfd >= 0) {
        close(pfd);
    }
    if (tpfd >= 0) {
        close(tpfd);
    }
    co_buf_dispose(&clean);
    co_buf_dispose(&tclean);
    co_buf_dispose(&parent);
    co_buf_dispose(&tparent);
    return rc;
}

/* ---- resolution inside a tree ------------------------------------------------------------ */

/*
 * Resolves @p rel below the directory @p rootfd, expanding symlinks met on the way (the last
 * component too when @p follow_last) and refusing to climb above the root. Components that do
 * not exist are kept lexically (nothing below them can be a link). The resolved relative path
 * goes to @p out ("" for the root).
 * @return 0; CO_EINVALID when the path leaves the tree, names an absolute link or loops.
 */
static int resolve_in(int rootfd, const char *rel, int follow_last, co_buf *out, const char *what)
{
    co_buf rest = CO_BUF_INIT(RESOLVE_CAP);
    int rc = 0;
    int hops = 0;
    co_buf_reset(out);
    if ((rc = co_buf_puts(&rest, rel)) < 0) {
        goto done;
    }
    while (rest.len > 0) {
        /* take the first component of rest */
        size_t n = 0;
        while (n < rest.len && rest.ptr[n] != '/') {
            n++;
        }
        char comp[256];
        if (n > 255) {
            rc = co_error_set(CO_EINVALID, "%s: a path component is longer than 255 bytes", what);
            goto done;
        }
        memcpy(comp, rest.ptr, n);
        comp[n] = '\0';
        co_buf_consume(&rest, n < rest.len ? n + 1 : n);
        if (n == 0 || strcmp(comp, ".") == 0) {
            continue;
        }
        if (strcmp(comp, "..") == 0) {
            char *slash = out->len ? strrchr(out->ptr, '/') : NULL;
            if (out->len == 0) {
                rc = co_error_set(CO_EINVALID, "%s: points outside the tree", what);
                goto done;
            }
            co_buf_truncate(out, slash ? (size_t)(slash - out->ptr) : 0);
            continue;
        }
        size_t keep = out->len;
        if ((out->len && (rc = co_buf_putc(out, '/')) < 0) || (rc = co_buf_puts(out, comp)) < 0) {
            goto done;
        }
        if (rest.len == 0 && !follow_last) {
            break;
        }
        struct stat st;
        if (fstatat(rootfd, out->ptr, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode)) {
            continue;
        }
        if (++hops > CO_MAX_EXTRACT_SYMLINK_HOPS) {
            rc = co_error_set(CO_EINVALID, "%s: too many levels of symbolic links", what);
            goto done;
        }
        char target[CO_MAX_EXTRACT_PATH + 1];
        ssize_t tl = readlinkat(rootfd, out->ptr, target, sizeof(target));
        if (tl < 0 || (size_t)tl >= sizeof(target)) {
            rc = co_error_set(CO_EINVALID, "%s: unreadable symlink", what);
            goto done;
        }
        target[tl] = '\0';
        if (target[0] == '/') {
            rc = co_error_set(CO_EINVALID, "%s: symlink to an absolute path", what);
            goto done;
        }
        co_buf_truncate(out, keep);
        /* rest = target + "/" + rest */
        co_buf next = CO_BUF_INIT(RESOLVE_CAP);
        if ((rc = co_buf_puts(&next, target)) < 0 ||
            (rest.len && ((rc = co_buf_putc(&next, '/')) < 0 ||
                          (rc = co_buf_put(&next, rest.ptr, rest.len)) < 0))) {
            co_buf_dispose(&next);
            goto done;
        }
        co_buf_dispose(&rest);
        rest = next;
    }
    if (!out->ptr && (rc = co_buf_puts(out, "")) < 0) {
        goto done;
    }
    rc = 0;
done:
    co_buf_dispose(&rest);
    return rc;
}

int co_archive_resolve(char **out, const char *root, const char *rel)
{
    co_buf res = CO_BUF_INIT(RESOLVE_CAP);
    int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc;
    if (rootfd < 0) {
        return co_error_set_os(errno == ENOENT ? CO_ENOTFOUND : CO_ERROR, "opening %s", root);
    }
    char what[300];
    snprintf(what, sizeof(what), "path %s", PRINTABLE(rel));
    if ((rc = resolve_in(rootfd, rel, 1, &res, what)) < 0) {
        goto done;
    }
    struct stat st;
    if (res.len > 0 && fstatat(rootfd, res.ptr, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = co_error_set(CO_ENOTFOUND, "no such file or directory: %s", PRINTABLE(rel));
        goto done;
    }
    *out = res.len ? co_xasprintf("%s/%s", root, res.ptr) : co_xstrdup(root);
    rc = 0;
done:
    close(rootfd);
    co_buf_dispose(&res);
    return rc;
}

/* ---- commit ------------------------------------------------------------------------------ */

static int cmp_record(const void *a, const void *b)
{
    const record *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    if (c) {
        return c;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The canonical tree digest: see the definition in git.h. */
static char *tree_digest(co_archive__writer *w)
{
    qsort(w->recs, w->nrecs, sizeof(*w->recs), cmp_record);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    CO_ASSERT(md);
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    for (size_t i = 0; i < w->nrecs; i++) {
        if (i + 1 < w->nrecs && strcmp(w->recs[i].path, w->recs[i + 1].path) == 0) {
            continue; /* replaced by a later entry */
        }
        char hex[65];
        to_hex(w->recs[i].sha, hex);
        char head[2] = {w->recs[i].kind, ' '};
        EVP_DigestUpdate(md, head, 2);
        EVP_DigestUpdate(md, hex, 64);
        EVP_DigestUpdate(md, " ", 1);
        EVP_DigestUpdate(md, w->recs[i].path, strlen(w->recs[i].path) + 1);
    }
    unsigned char sha[32];
    unsigned int n = 32;
    EVP_DigestFinal_ex(md, sha, &n);
    EVP_MD_CTX_free(md);
    char hex[65];
    to_hex(sha, hex);
    return co_xasprintf("sha256:%s", hex);
}

int co_archive__commit(co_archive__writer *w, char **digest_out)
{
    CO_ASSERT(w->curfd < 0);
    co_buf res = CO_BUF_INIT(RESOLVE_CAP);
    int rc = 0;
    for (size_t i = 0; i < w->nlinks; i++) {
        char what[600];
        char target[CO_MAX_EXTRACT_PATH + 1];
        ssize_t tl = readlinkat(w->rootfd, w->links[i], target, sizeof(target) - 1);
        if (tl < 0) {
            continue; /* replaced by a later entry */
        }
        target[tl] = '\0';
        snprintf(what, sizeof(what), "entry %s: symlink target '%s'", PRINTABLE(w->links[i]),
                 PRINTABLE(target));
        if ((rc = resolve_in(w->rootfd, w->links[i], 1, &res, what)) < 0) {
            goto done;
        }
    }
    if ((w->flags & CO_ARCHIVE_SYNC) && syncfs(w->rootfd) < 0) {
        rc = co_error_set_os(CO_ERROR, "flushing %s", w->tmp);
        goto done;
    }
    if (renameat2(AT_FDCWD, w->tmp, AT_FDCWD, w->dest, RENAME_NOREPLACE) < 0) {
        if (errno == EEXIST) {
            rc = co_error_set(CO_EEXISTS, "destination %s already exists", w->dest);
            goto done;
        }
        if ((errno != EINVAL && errno != ENOSYS) || rename(w->tmp, w->dest) < 0) {
            rc = co_error_set_os(errno == ENOTEMPTY || errno == EEXIST ? CO_EEXISTS : CO_ERROR,
                                 "moving the extracted tree to %s", w->dest);
            goto done;
        }
    }
    free(w->tmp);
    w->tmp = NULL;
    if (digest_out) {
        *digest_out = (w->flags & CO_ARCHIVE__DIGEST) ? tree_digest(w) : NULL;
    }
done:
    co_buf_dispose(&res);
    return rc;
}

/* ---- removal ----------------------------------------------------------------------------- */

static int remove_at(int parent, const char *name, int depth)
{
    if (unlinkat(parent, name, 0) == 0 || errno == ENOENT) {
        return 0;
    }
    if (errno != EISDIR && errno != EPERM) {
        return co_error_set_os(CO_ERROR, "removing %s", name);
    }
    if (depth > CO_MAX_EXTRACT_DEPTH + 8) {
        return co_error_set(CO_ERROR, "removing %s: tree too deep", name);
    }
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return co_error_set_os(CO_ERROR, "opening %s", name);
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return co_error_set_os(CO_ERROR, "listing %s", name);
    }
    int rc = 0;
    for (;;) {
        errno = 0;
        /* the stream is private to this call */
        struct dirent *e = readdir(d); // NOLINT(concurrency-mt-unsafe)
        if (!e) {
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        if ((rc = remove_at(dirfd(d), e->d_name, depth + 1)) < 0) {
            break;
        }
    }
    closedir(d);
    if (rc == 0 && unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
        rc = co_error_set_os(CO_ERROR, "removing directory %s", name);
    }
    return rc;
}

int co_archive_remove_tree(const char *path)
{
    return remove_at(AT_FDCWD, path, 0);
}
