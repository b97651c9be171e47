/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fixture and temporary-file helpers for the unit and integration tests.
 */
#include "tests/support/test_support.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/common.h"

static const char *errtext(int err, char *buf, size_t len)
{
    return strerror_r(err, buf, len);
}

char *co_test_fixture_path(const char *rel)
{
    return co_xasprintf("%s/%s", CO_TEST_FIXTURES, rel);
}

char *co_test_read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *data = co_xmalloc(cap);
    for (;;) {
        if (len + 1 >= cap) {
            cap *= 2;
            data = co_xrealloc(data, cap);
        }
        size_t n = fread(data + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) {
            break;
        }
    }
    fclose(f);
    data[len] = '\0';
    if (len_out) {
        *len_out = len;
    }
    return data;
}

char *co_test_fixture(const char *rel, size_t *len_out)
{
    char *path = co_test_fixture_path(rel);
    char *data = co_test_read_file(path, len_out);
    if (!data) {
        char eb[128];
        fail_msg("cannot read fixture %s: %s", path, errtext(errno, eb, sizeof(eb)));
    }
    free(path);
    return data;
}

char *co_test_tmpdir(void)
{
    const char *base = getenv("TMPDIR"); // NOLINT(concurrency-mt-unsafe): test set-up only
    char *tmpl = co_xasprintf("%s/co-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpl)) {
        char eb[128];
        fail_msg("mkdtemp: %s", errtext(errno, eb, sizeof(eb)));
    }
    return tmpl;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void co_test_rmtree(const char *path)
{
    if (path) {
        /* tests remove their own trees from one thread */
        nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); // NOLINT(concurrency-mt-unsafe)
    }
}

size_t co_test_count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d) {
        char eb[128];
        fail_msg("cannot read directory %s: %s", dir, errtext(errno, eb, sizeof(eb)));
        return 0;
    }
    size_t n = 0;
    size_t plen = strlen(prefix);
    const struct dirent *e;
    while ((e = readdir(d)) != NULL) { // NOLINT(concurrency-mt-unsafe): one stream per caller
        n += strncmp(e->d_name, prefix, plen) == 0;
    }
    closedir(d);
    return n;
}

void co_test_assert_entries_mode(const char *dir, const char *prefix, unsigned mode)
{
    DIR *d = opendir(dir);
    if (!d) {
        char eb[128];
        fail_msg("cannot read directory %s: %s", dir, errtext(errno, eb, sizeof(eb)));
        return;
    }
    size_t plen = strlen(prefix);
    const struct dirent *e;
    while ((e = readdir(d)) != NULL) { // NOLINT(concurrency-mt-unsafe): one stream per caller
        if (strncmp(e->d_name, prefix, plen) != 0) {
            continue;
        }
        char *path = co_xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || (st.st_mode & 07777) != mode) {
            fail_msg("%s: mode %o, want %o", path, (unsigned)(st.st_mode & 07777), mode);
        }
        free(path);
    }
    closedir(d);
}

char *co_test_env_swap(const char *name, const char *value)
{
    const char *old = getenv(name); // NOLINT(concurrency-mt-unsafe): test set-up only
    char *saved = old ? co_xstrdup(old) : NULL;
    setenv(name, value, 1); // NOLINT(concurrency-mt-unsafe): test set-up only
    return saved;
}

void co_test_env_restore(const char *name, char *saved)
{
    if (saved) {
        setenv(name, saved, 1); // NOLINT(concurrency-mt-unsafe): test set-up only
    } else {
        unsetenv(name); // NOLINT(concurrency-mt-unsafe): test set-up only
    }
    free(saved);
}

static void mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0700);
            *p = '/';
        }
    }
}

void co_test_write_file(const char *path, const void *data, size_t len)
{
    char *copy = co_xstrdup(path);
    mkdirs(copy);
    free(copy);
    FILE *f = fopen(path, "wb");
    if (!f) {
        char eb[128];
        fail_msg("cannot write %s: %s", path, errtext(errno, eb, sizeof(eb)));
    }
    if (len && fwrite(data, 1, len, f) != len) {
        fail_msg("short write to %s", path);
    }
    fclose(f);
}

char *co_test_shared_fixture_path(const char *rel)
{
    /* Only the conformance lane sets it: a suite of `make test` that reached for other
     * projects' data fails here even on a machine that has them. */
    const char *dir = getenv("CO_SHARED_FIXTURES"); // NOLINT(concurrency-mt-unsafe): set-up
    if (!dir || !*dir) {
        fail_msg("CO_SHARED_FIXTURES is not set: data from other projects is read only in the "
                 "conformance lane (make test-conformance)");
    }
    return co_xasprintf("%s/%s", dir, rel);
}

char *co_test_shared_fixture(const char *rel, size_t *len_out)
{
    char *path = co_test_shared_fixture_path(rel);
    char *data = co_test_read_file(path, len_out);
    if (!data) {
        char eb[128];
        fail_msg("cannot read shared fixture %s: %s", path, errtext(errno, eb, sizeof(eb)));
    }
    free(path);
    return data;
}

int co_test_strcmp_ptr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

co_test_names co_test_fixture_files(const char *dir, const char *suffix)
{
    co_test_names n = {NULL, 0};
    char *path = co_test_fixture_path(dir);
    size_t slen = strlen(suffix);
    DIR *d = opendir(path);
    if (!d) {
        fail_msg("cannot open fixture directory %s", path);
        free(path);
        return n;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) { // NOLINT(concurrency-mt-unsafe): tests are one thread
        size_t len = strlen(e->d_name);
        if (len > slen && strcmp(e->d_name + len - slen, suffix) == 0) {
            n.items = co_xreallocarray(n.items, n.len + 1, sizeof(char *));
            n.items[n.len++] = co_xasprintf("%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    free(path);
    if (n.len == 0) {
        fail_msg("no *%s fixtures in %s", suffix, dir);
        return n;
    }
    qsort(n.items, n.len, sizeof(char *), co_test_strcmp_ptr);
    return n;
}

void co_test_names_free(co_test_names *n)
{
    for (size_t i = 0; i < n->len; i++) {
        free(n->items[i]);
    }
    free(n->items);
    n->items = NULL;
    n->len = 0;
}

struct json_object *co_test_fixture_json(const char *rel)
{
    char *text = co_test_fixture(rel, NULL);
    struct json_object *o = json_tokener_parse(text);
    if (!o) {
        fail_msg("fixture %s is not valid JSON", rel);
    }
    free(text);
    return o;
}
