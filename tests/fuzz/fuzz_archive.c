/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for archive extraction. Every input is extracted twice, with the format
 * auto-detected (the tar and zip readers) and as a single, possibly compressed, YAML file (the
 * raw reader behind the filters), each into a fresh destination inside a private directory;
 * then the invariants are checked: the call either failed and left nothing behind, or it
 * succeeded and the only thing in the private directory is the destination, whose symlinks all
 * resolve inside it.
 *
 * The private directory lives in memory (/dev/shm, or $CO_FUZZ_TMPDIR when set) when it can:
 * every input creates and removes a few directories and files, and on a disk file system such
 * as ext4 that churn makes inode allocation slower and slower over a long run (docs/fuzzing.md).
 */
#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "co/source/archive.h"
#include "co/util/common.h"

static char *base;

/* the directory the private one is made in: $CO_FUZZ_TMPDIR, else tmpfs, else $TMPDIR or /tmp */
static const char *scratch_parent(void)
{
    const char *dir = getenv("CO_FUZZ_TMPDIR"); // NOLINT(concurrency-mt-unsafe): one thread
    if (dir && *dir) {
        return dir;
    }
    if (access("/dev/shm", W_OK | X_OK) == 0) {
        return "/dev/shm";
    }
    dir = getenv("TMPDIR"); // NOLINT(concurrency-mt-unsafe): one thread
    return dir && *dir ? dir : "/tmp";
}

static void remove_base(void)
{
    if (base) {
        (void)!co_archive_remove_tree(base);
    }
}

static void walk_links(const char *root, const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d || depth > 300) {
        abort();
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) {
            continue;
        }
        char *p = co_xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) < 0) {
            abort();
        }
        if (S_ISLNK(st.st_mode)) {
            char real[PATH_MAX];
            /* dangling links are allowed; existing targets must be inside */
            if (realpath(p, real) && strncmp(real, root, strlen(root)) != 0) {
                fprintf(stderr, "symlink %s escapes to %s\n", p, real);
                abort();
            }
        } else if (S_ISDIR(st.st_mode)) {
            walk_links(root, p, depth + 1);
        } else if (!S_ISREG(st.st_mode)) {
            fprintf(stderr, "unexpected file type at %s\n", p);
            abort();
        }
        free(p);
    }
    closedir(d);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    }
    closedir(d);
    return n;
}

static void extract_one(const uint8_t *data, size_t size, co_archive_format format)
{
    char *dest = co_xasprintf("%s/out", base);
    co_archive_limits lim = {.max_total = 8u << 20, .max_file = 4u << 20, .max_entries = 2000};
    int rc = co_archive_extract_mem(data, size, format, dest, &lim, 0, NULL);
    if (rc == 0) {
        char real[PATH_MAX];
        if (!realpath(dest, real)) {
            abort();
        }
        walk_links(real, dest, 0);
        if (count_entries(base) != 1) {
            abort();
        }
        if (co_archive_remove_tree(dest) != 0) {
            abort();
        }
    }
    if (count_entries(base) != 0) {
        fprintf(stderr, "extraction left files behind (rc %d)\n", rc);
        abort();
    }
    free(dest);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!base) {
        base = co_xasprintf("%s/co-fuzz-archive-XXXXXX", scratch_parent());
        if (!mkdtemp(base)) {
            abort();
        }
        atexit(remove_base);
    }
    extract_one(data, size, CO_ARCHIVE_AUTO);
    extract_one(data, size, CO_ARCHIVE_YAML);
    return 0;
}
