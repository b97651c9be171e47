/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the artifact cache: hits and misses, one filler among concurrent threads and
 * processes, LRU eviction that spares entries in use, crash debris, keys and aliases.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "co/source/srccache.h"
#include "tests/support/test_support.h"

typedef struct fixture {
    char *dir;
    co_srccache *cache;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->dir = co_test_tmpdir();
    char *root = co_xasprintf("%s/cache", f->dir);
    assert_co_pass(co_srccache_open(&f->cache, root, 1000));
    free(root);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    co_srccache_free(f->cache);
    co_test_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* A fill function writing one file "content" with the given text and size. */
typedef struct filler {
    const char *text;
    uint64_t bytes;
    int calls;
    int fail;
    int sleep_ms;
    const char *count_file; /* for fills in other processes: append a line per call */
    pthread_mutex_t mu;
} filler;

static int fill(void *ctx, const char *dir, uint64_t *bytes)
{
    filler *fl = ctx;
    pthread_mutex_lock(&fl->mu);
    fl->calls++;
    pthread_mutex_unlock(&fl->mu);
    if (fl->count_file) {
        int fd = open(fl->count_file, O_WRONLY | O_APPEND | O_CREAT, 0644);
        (void)!write(fd, "x\n", 2);
        close(fd);
    }
    if (fl->sleep_ms) {
        struct timespec ts = {0, fl->sleep_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (mkdir(dir, 0755) < 0) {
        return co_error_set(CO_ERROR, "mkdir");
    }
    char *p = co_xasprintf("%s/content", dir);
    co_test_write_file(p, fl->text, strlen(fl->text));
    free(p);
    if (fl->fail) {
        return co_error_set(CO_EINVALID, "fill failed on purpose");
    }
    *bytes = fl->bytes;
    return 0;
}

static char *entry_content(const co_srccache_entry *e)
{
    char *p = co_xasprintf("%s/content", co_srccache_entry_dir(e));
    char *s = co_test_read_file(p, NULL);
    free(p);
    return s;
}

static int count_dir(const fixture *f, const char *sub)
{
    char *p = co_xasprintf("%s/cache/%s", f->dir, sub);
    DIR *d = opendir(p);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) { // NOLINT(concurrency-mt-unsafe)
        n += e->d_name[0] != '.';
    }
    closedir(d);
    free(p);
    return n;
}

static void test_srccache__miss_fill_hit(void **state)
{
    fixture *f = *state;
    filler fl = {.text = "v1", .bytes = 10, .mu = PTHREAD_MUTEX_INITIALIZER};
    co_srccache_entry *e = NULL;
    assert_co_fail_with(CO_ENOTFOUND, co_srccache_get(f->cache, "sha256-aa", NULL, NULL, &e, NULL));
    int filled = -1;
    assert_co_pass(co_srccache_get(f->cache, "sha256-aa", fill, &fl, &e, &filled));
    assert_int_equal(filled, 1);
    assert_int_equal(fl.calls, 1);
    char *s = entry_content(e);
    assert_string_equal(s, "v1");
    free(s);
    assert_string_equal(co_srccache_entry_key(e), "sha256-aa");
    co_srccache_release(e);
    /* a hit never fills again */
    assert_co_pass(co_srccache_get(f->cache, "sha256-aa", fill, &fl, &e, &filled));
    assert_int_equal(filled, 0);
    assert_int_equal(fl.calls, 1);
    co_srccache_release(e);
    assert_co_pass(co_srccache_get(f->cache, "sha256-aa", NULL, NULL, &e, NULL));
    co_srccache_release(e);
    co_srccache_release(NULL);
    assert_int_equal(co_srccache_size(f->cache), 10);
    assert_int_equal(count_dir(f, "tmp"), 0);
}

static void test_srccache__failed_fill_publishes_nothing(void **state)
{
    fixture *f = *state;
    filler fl = {.text = "bad", .bytes = 1, .fail = 1, .mu = PTHREAD_MUTEX_INITIALIZER};
    co_srccache_entry *e = NULL;
    assert_co_fail_with(CO_EINVALID, co_srccache_get(f->cache, "k1", fill, &fl, &e, NULL));
    assert_string_equal(co_error_last(), "fill failed on purpose");
    assert_int_equal(count_dir(f, "tmp"), 0);
    assert_int_equal(count_dir(f, "entries"), 0);
    /* the next caller tries again */
    fl.fail = 0;
    assert_co_pass(co_srccache_get(f->cache, "k1", fill, &fl, &e, NULL));
    assert_int_equal(fl.calls, 2);
    co_srccache_release(e);
}

static void test_srccache__invalid_keys(void **state)
{
    fixture *f = *state;
    co_srccache_entry *e = NULL;
    const char *bad[] = {"", "../x", "a/b", ".hidden", "sp ace", "sha256:abc"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        assert_co_fail_with(CO_EINVALID, co_srccache_get(f->cache, bad[i], NULL, NULL, &e, NULL));
    }
}

static void test_srccache__lru_eviction_spares_held_entries(void **state)
{
    fixture *f = *state; /* cache of 1000 bytes */
    filler fl = {.text = "x", .bytes = 400, .mu = PTHREAD_MUTEX_INITIALIZER};
    co_srccache_entry *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    assert_co_pass(co_srccache_get(f->cache, "a", fill, &fl, &a, NULL));
    co_srccache_release(a);
    struct timespec ts = {0, 20000000L};
    nanosleep(&ts, NULL);
    assert_co_pass(co_srccache_get(f->cache, "b", fill, &fl, &b, NULL)); /* b stays held */
    nanosleep(&ts, NULL);
    /* a is used again, so it is more recent than b */
    assert_co_pass(co_srccache_get(f->cache, "a", NULL, NULL, &a, NULL));
    co_srccache_release(a);
    nanosleep(&ts, NULL);
    /* 1200 > 1000: the least recently used entry not in use goes; b is older but held */
    assert_co_pass(co_srccache_get(f->cache, "c", fill, &fl, &c, NULL));
    co_srccache_release(c);
    assert_co_pass(co_srccache_get(f->cache, "b", NULL, NULL, &d, NULL));
    co_srccache_release(d);
    assert_co_fail_with(CO_ENOTFOUND, co_srccache_get(f->cache, "a", NULL, NULL, &a, NULL));
    /* the held tree is still intact */
    char *s = entry_content(b);
    assert_string_equal(s, "x");
    free(s);
    co_srccache_release(b);
    assert_true(co_srccache_size(f->cache) <= 1000);
    assert_int_equal(count_dir(f, "tmp"), 0);
}

static void test_srccache__too_small_for_one_entry(void **state)
{
    fixture *f = *state;
    filler fl = {.text = "x", .bytes = 5000, .mu = PTHREAD_MUTEX_INITIALIZER};
    co_srccache_entry *e = NULL;
    /* the entry is bigger than the cache, but held, so it survives until released */
    assert_co_pass(co_srccache_get(f->cache, "huge", fill, &fl, &e, NULL));
    co_srccache_release(e);
    assert_co_pass(co_srccache_trim(f->cache));
    assert_int_equal(co_srccache_size(f->cache), 0);
}

typedef struct race {
    co_srccache *cache;
    filler *fl;
    int rc;
    char *content;
} race;

static void *racer(void *arg)
{
    race *r = arg;
    co_srccache_entry *e = NULL;
    r->rc = co_srccache_get(r->cache, "shared", fill, r->fl, &e, NULL);
    if (r->rc == 0) {
        r->content = entry_content(e);
        co_srccache_release(e);
    }
    return NULL;
}

static void test_srccache__one_filler_among_threads(void **state)
{
    fixture *f = *state;
    filler fl = {.text = "once", .bytes = 10, .sleep_ms = 200, .mu = PTHREAD_MUTEX_INITIALIZER};
    pthread_t t[6];
    race r[6];
    for (int i = 0; i < 6; i++) {
        r[i] = (race){f->cache, &fl, -1, NULL};
        pthread_create(&t[i], NULL, racer, &r[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(r[i].rc, 0);
        assert_string_equal(r[i].content, "once");
        free(r[i].content);
    }
    assert_int_equal(fl.calls, 1);
}

static void test_srccache__one_filler_among_processes(void **state)
{
    fixture *f = *state;
    char *count = co_xasprintf("%s/fills", f->dir);
    char *root = co_xasprintf("%s/cache", f->dir);
    pid_t pids[4];
    for (int i = 0; i < 4; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            co_srccache *c = NULL;
            filler fl = {.text = "proc",
                         .bytes = 1,
                         .sleep_ms = 200,
                         .count_file = count,
                         .mu = PTHREAD_MUTEX_INITIALIZER};
            co_srccache_entry *e = NULL;
            int ok = co_srccache_open(&c, root, 1000) == 0 &&
                     co_srccache_get(c, "proc", fill, &fl, &e, NULL) == 0;
            if (ok) {
                char *s = entry_content(e);
                ok = s && strcmp(s, "proc") == 0;
                free(s);
            }
            co_srccache_release(e);
            co_srccache_free(c);
            _exit(ok ? 0 : 1);
        }
    }
    for (int i = 0; i < 4; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    size_t len = 0;
    char *lines = co_test_read_file(count, &len);
    assert_int_equal(len, 2); /* exactly one "x\n" */
    free(lines);
    free(count);
    free(root);
}

static void test_srccache__crash_debris_is_swept(void **state)
{
    fixture *f = *state;
    char *old = co_xasprintf("%s/cache/tmp/k.fill.dead/file", f->dir);
    co_test_write_file(old, "x", 1);
    char *olddir = co_xasprintf("%s/cache/tmp/k.fill.dead", f->dir);
    struct timespec times[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    assert_int_equal(utimensat(AT_FDCWD, olddir, times, 0), 0);
    char *fresh = co_xasprintf("%s/cache/tmp/k.fill.live", f->dir);
    mkdir(fresh, 0755);
    /* an unpublished tree (no .meta) from an interrupted fill is not served */
    char *half = co_xasprintf("%s/cache/entries/half/file", f->dir);
    co_test_write_file(half, "partial", 7);
    co_srccache *c = NULL;
    char *root = co_xasprintf("%s/cache", f->dir);
    assert_co_pass(co_srccache_open(&c, root, 1000));
    struct stat st;
    assert_int_equal(stat(olddir, &st), -1);
    assert_int_equal(stat(fresh, &st), 0);
    co_srccache_entry *e = NULL;
    assert_co_fail_with(CO_ENOTFOUND, co_srccache_get(c, "half", NULL, NULL, &e, NULL));
    filler fl = {.text = "complete", .bytes = 1, .mu = PTHREAD_MUTEX_INITIALIZER};
    assert_co_pass(co_srccache_get(c, "half", fill, &fl, &e, NULL));
    char *s = entry_content(e);
    assert_string_equal(s, "complete");
    free(s);
    co_srccache_release(e);
    co_srccache_free(c);
    free(root);
    free(half);
    free(fresh);
    free(olddir);
    free(old);
}

static void test_srccache__keys_and_aliases(void **state)
{
    fixture *f = *state;
    char *k = NULL;
    co_srccache_key(&k, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_string_equal(k,
                        "sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    free(k);
    char *k1 = NULL, *k2 = NULL;
    co_srccache_key(&k1, "\"etag/with spaces\"");
    co_srccache_key(&k2, "\"etag/with spaces2\"");
    assert_int_equal(strncmp(k1, "h-", 2), 0);
    assert_int_equal(strlen(k1), 66);
    assert_string_not_equal(k1, k2);
    free(k1);
    free(k2);

    char *got = NULL;
    assert_co_fail_with(CO_ENOTFOUND, co_srccache_alias_get(f->cache, "git-abc", &got));
    assert_co_pass(co_srccache_alias_set(f->cache, "git-abc", "sha256-ff"));
    assert_co_pass(co_srccache_alias_get(f->cache, "git-abc", &got));
    assert_string_equal(got, "sha256-ff");
    free(got);
    assert_co_pass(co_srccache_alias_set(f->cache, "git-abc", "sha256-ee"));
    assert_co_pass(co_srccache_alias_get(f->cache, "git-abc", &got));
    assert_string_equal(got, "sha256-ee");
    free(got);
    assert_co_fail_with(CO_EINVALID, co_srccache_alias_set(f->cache, "../x", "k"));
    assert_co_fail_with(CO_EINVALID, co_srccache_alias_set(f->cache, "x", "k/../y"));
    assert_int_equal(count_dir(f, "tmp"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_srccache__miss_fill_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_srccache__failed_fill_publishes_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_srccache__invalid_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_srccache__lru_eviction_spares_held_entries, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_srccache__too_small_for_one_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_srccache__one_filler_among_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_srccache__one_filler_among_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_srccache__crash_debris_is_swept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_srccache__keys_and_aliases, setup, teardown),
    };
    return cmocka_run_group_tests_name("srccache", tests, NULL, NULL);
}
