/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Differential test of the kustomize engine against `kubectl kustomize`: every directory under
 * tests/fixtures/kustomize/corpus/ is built by both, and the object lists must be equal after
 * parsing (object order included). A case kustomize rejects must be rejected by us too. The
 * reference runs through tests/support/kustomize_oracle.py (no shell involved).
 *
 * A case is built at its own directory, unless it holds a file BUILD: its one line names the
 * directory to build, relative to the case (`overlays/prod`), followed by kubectl kustomize's
 * flags (`--load-restrictor LoadRestrictionsNone`). Our engine then reads the case directory
 * as its tree and builds that directory in it, so bases outside the built directory
 * (`../../base`) load as kustomize loads them, and files outside a kustomization's directory
 * are refused by both. test_cli.sh reads BUILD the same way. A case kustomize rejects may hold
 * a file ERROR: its line is a text our message must contain (the reason kustomize gives).
 */
#include <dirent.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/common.h"
#include "co/json/json.h"
#include "co/render/kustomize.h"
#include "co/render/vfs.h"
#include "tests/support/test_support.h"

/* The build of one case: its BUILD file, or the case directory itself. */
typedef struct build_spec {
    char path[512];  /* relative to the case; "" = the case */
    char flags[512]; /* kubectl kustomize's flags, space-separated */
    co_kustomize_options opts;
} build_spec;

static void read_build_spec(build_spec *b, const char *case_dir)
{
    memset(b, 0, sizeof(*b));
    co_kustomize_options init = CO_KUSTOMIZE_OPTIONS_INIT;
    b->opts = init;
    char *file = co_xasprintf("%s/BUILD", case_dir);
    FILE *f = fopen(file, "r");
    free(file);
    if (!f) {
        return;
    }
    char line[512] = "";
    if (!fgets(line, sizeof(line), f)) {
        line[0] = '\0';
    }
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    char *sp = strchr(line, ' ');
    if (sp) {
        *sp = '\0';
        snprintf(b->flags, sizeof(b->flags), "%s", sp + 1);
    }
    snprintf(b->path, sizeof(b->path), "%s", line);
    if (strstr(b->flags, "--load-restrictor LoadRestrictionsNone")) {
        b->opts.load_restrictor = CO_KUSTOMIZE_LOAD_NONE;
    }
}

/* The line of the case's ERROR file (trailing newline dropped), or NULL. */
static char *read_error_file(const char *case_dir)
{
    char *file = co_xasprintf("%s/ERROR", case_dir);
    FILE *f = fopen(file, "r");
    free(file);
    if (!f) {
        return NULL;
    }
    char line[512] = "";
    if (!fgets(line, sizeof(line), f)) {
        line[0] = '\0';
    }
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    return co_xstrdup(line);
}

/* Runs the oracle on @p case_dir as @p b says; returns its exit status and its stdout in *out. */
static int run_oracle(char **out, const char *case_dir, const build_spec *b)
{
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
    char *script = co_xasprintf("%s/tests/support/kustomize_oracle.py", CO_SOURCE_ROOT);
    char *tree = co_xstrdup(case_dir);
    char *dircopy = b->path[0] ? co_xasprintf("%s/%s", case_dir, b->path) : co_xstrdup(case_dir);
    char py[] = "python3";
    char tree_flag[] = "--tree";
    char flags[512];
    snprintf(flags, sizeof(flags), "%s", b->flags);
    char *argv[16] = {py, script, tree_flag, tree, dircopy};
    size_t argc = 5;
    char *save = NULL;
    for (char *tok = strtok_r(flags, " ", &save); tok && argc < 15;
         tok = strtok_r(NULL, " ", &save)) {
        argv[argc++] = tok;
    }
    argv[argc] = NULL;
    pid_t pid;
    int rc = posix_spawnp(&pid, "python3", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    free(script);
    free(tree);
    free(dircopy);
    if (rc != 0) {
        close(pipefd[0]);
        return -1;
    }
    size_t cap = 65536, len = 0;
    char *buf = co_xmalloc(cap);
    for (;;) {
        if (len + 4096 > cap) {
            cap *= 2;
            buf = co_xrealloc(buf, cap);
        }
        ssize_t n = read(pipefd[0], buf + len, cap - len - 1);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_kustomize__matches_kubectl_kustomize(void **state)
{
    (void)state;
    char *corpus = co_test_fixture_path("kustomize/corpus");
    DIR *d = opendir(corpus);
    assert_non_null(d);
    char *names[1024] = {0};
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 1024) { /* NOLINT(concurrency-mt-unsafe) */
        if (e->d_name[0] != '.') {
            names[n++] = strdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof(char *), cmp_names);
    size_t failed = 0, compared = 0;
    for (size_t i = 0; i < n; i++) {
        char *dir = co_xasprintf("%s/%s", corpus, names[i]);
        char *expect_text = NULL;
        build_spec spec;
        read_build_spec(&spec, dir);
        int orc = run_oracle(&expect_text, dir, &spec);
        if (orc == 2 || orc < 0) {
            fail_msg("the reference kustomize is not available (run tests/env/deps.sh)");
        }
        co_vfs *fs = NULL;
        json_object *got = NULL;
        assert_co_pass(co_vfs_new_disk(&fs, dir));
        co_error_clear();
        int rc = co_kustomize_build(&got, fs, spec.path, &spec.opts);
        compared++;
        if (orc == 3) {
            char *want_error = read_error_file(dir);
            if (rc == 0) {
                print_message("[%s] kustomize fails but we succeeded\n", names[i]);
                failed++;
            } else if (want_error && !strstr(co_error_last(), want_error)) {
                print_message("[%s] our error \"%s\" does not contain \"%s\"\n", names[i],
                              co_error_last(), want_error);
                failed++;
            }
            free(want_error);
        } else if (rc != 0) {
            print_message("[%s] build failed: %s\n", names[i], co_error_last());
            failed++;
        } else {
            /* co_json reads numbers as Go does (beyond 64 bits: a double; json-c would clamp) */
            json_object *want = NULL;
            const char *text = expect_text ? expect_text : "";
            if (co_json_parse(&want, text, strlen(text)) < 0 || !json_object_equal(want, got)) {
                print_message("[%s] output differs\n--- kustomize:\n%s\n--- ours:\n%s\n", names[i],
                              json_object_to_json_string_ext(want, JSON_C_TO_STRING_PRETTY),
                              json_object_to_json_string_ext(got, JSON_C_TO_STRING_PRETTY));
                failed++;
            }
            json_object_put(want);
        }
        json_object_put(got);
        co_vfs_free(fs);
        free(expect_text);
        free(dir);
        free(names[i]);
    }
    free(corpus);
    print_message("kustomize corpus: %zu cases, %zu differ\n", compared, failed);
    assert_true(compared >= 1);
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kustomize__matches_kubectl_kustomize),
    };
    return cmocka_run_group_tests_name("kustomize_corpus", tests, NULL, NULL);
}
