/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SOPS files made at test time (test_sopsgen.h): tests/support/sopsgen.sh run with posix_spawn,
 * its standard streams in files of the key directory so that a failure shows what the tool
 * said.
 */
#include "tests/support/test_sopsgen.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "co/util/common.h"
#include "tests/support/test_support.h"

/* Runs tests/support/sopsgen.sh CMD DIR with stdin from @p in (NULL: /dev/null) and stdout to
 * @p out (NULL: /dev/null); fails the test with the script's messages unless it exits 0. */
static void run_script(const test_sopsgen *g, const char *cmd, const char *in, const char *out)
{
    char *script = co_xasprintf("%s/tests/support/sopsgen.sh", CO_SOURCE_ROOT);
    char *err = co_xasprintf("%s.stderr", g->dir);
    char *argv[] = {script, (char *)cmd, g->dir, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in ? in : "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int status = 0;
    int rc = posix_spawn(&pid, script, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc == 0 && waitpid(pid, &status, 0) < 0) {
        rc = -1;
    }
    if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char *text = co_test_read_file(err, NULL);
        fail_msg("%s %s %s failed: %s", script, cmd, g->dir, text ? text : "(no message)");
    }
    unlink(err);
    free(err);
    free(script);
}

/* The first line of file @p name in @p dir. */
static char *first_line(const char *dir, const char *name)
{
    char *path = co_xasprintf("%s/%s", dir, name);
    char *text = co_test_read_file(path, NULL);
    if (!text) {
        fail_msg("sopsgen.sh wrote no %s", path);
        return NULL;
    }
    text[strcspn(text, "\n")] = '\0';
    free(path);
    return text;
}

void test_sopsgen_init(test_sopsgen *g)
{
    memset(g, 0, sizeof(*g));
    char *base = co_test_tmpdir();
    g->dir = co_xasprintf("%s/keys", base);
    free(base);
    run_script(g, "keys", NULL, NULL);
    for (int i = 0; i < 2; i++) {
        g->age_key[i] = co_xasprintf("%s/age%d.agekey", g->dir, i);
        char *name = co_xasprintf("age%d.recipient", i);
        g->age_recipient[i] = first_line(g->dir, name);
        free(name);
    }
    g->pgp_key = co_xasprintf("%s/pgp.asc", g->dir);
    g->pgp_fpr = first_line(g->dir, "pgp.fpr");
}

void test_sopsgen_dispose(test_sopsgen *g)
{
    if (!g->dir) {
        return;
    }
    run_script(g, "stop", NULL, NULL);
    /* the key directory's parent is the co_test_tmpdir() it was made in */
    char *base = co_xstrdup(g->dir);
    *strrchr(base, '/') = '\0';
    co_test_rmtree(base);
    free(base);
    free(g->dir);
    for (int i = 0; i < 2; i++) {
        free(g->age_key[i]);
        free(g->age_recipient[i]);
    }
    free(g->pgp_key);
    free(g->pgp_fpr);
    memset(g, 0, sizeof(*g));
}

char *test_sopsgen_encrypt(const test_sopsgen *g, const char *request, size_t *len)
{
    char *in = co_xasprintf("%s.request", g->dir);
    char *out = co_xasprintf("%s.out", g->dir);
    co_test_write_file(in, request, strlen(request));
    run_script(g, "encrypt", in, out);
    size_t n = 0;
    char *data = co_test_read_file(out, &n);
    if (!data || n == 0) {
        fail_msg("sopsgen wrote nothing for %s", request);
    }
    unlink(in);
    unlink(out);
    free(in);
    free(out);
    if (len) {
        *len = n;
    }
    return data;
}

char *test_sopsgen_read(const char *path, size_t *len)
{
    char *data = co_test_read_file(path, len);
    if (!data) {
        fail_msg("cannot read key file %s", path);
    }
    return data;
}
