/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test repositories via the git command line (test_git_repo.h). Paths and arguments are all
 * chosen by the tests themselves.
 */
#include "tests/support/test_git_repo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "co/util/common.h"
#include "tests/support/test_support.h"

#define GIT                                                                                        \
    "git -c user.name=test -c user.email=test@example.com -c init.defaultBranch=main "             \
    "-c commit.gpgsign=false -c tag.gpgsign=false "

static void run(const char *cmd)
{
    int rc = system(cmd); // NOLINT(concurrency-mt-unsafe): test set-up, one thread
    if (rc != 0) {
        fail_msg("command failed (%d): %s", rc, cmd);
    }
}

void tgr_git(const char *repo, const char *args)
{
    char *cmd = co_xasprintf(GIT "-C '%s' %s >/dev/null 2>&1", repo, args);
    run(cmd);
    free(cmd);
}

void tgr_init(const char *path)
{
    char *cmd = co_xasprintf(GIT "init -q -b main '%s'", path);
    run(cmd);
    free(cmd);
}

void tgr_write(const char *repo, const char *rel, const char *content)
{
    char *p = co_xasprintf("%s/%s", repo, rel);
    co_test_write_file(p, content, strlen(content));
    free(p);
    char *args = co_xasprintf("add -- '%s'", rel);
    tgr_git(repo, args);
    free(args);
}

void tgr_symlink(const char *repo, const char *rel, const char *target)
{
    char *p = co_xasprintf("%s/%s", repo, rel);
    unlink(p);
    if (symlink(target, p) < 0) {
        fail_msg("symlink %s", p);
    }
    free(p);
    char *args = co_xasprintf("add -- '%s'", rel);
    tgr_git(repo, args);
    free(args);
}

void tgr_chmod_x(const char *repo, const char *rel)
{
    char *args = co_xasprintf("update-index --chmod=+x -- '%s'", rel);
    tgr_git(repo, args);
    free(args);
}

void tgr_remove(const char *repo, const char *rel)
{
    char *args = co_xasprintf("rm -q -- '%s'", rel);
    tgr_git(repo, args);
    free(args);
}

char *tgr_commit(const char *repo, const char *message)
{
    char *args = co_xasprintf("commit -q --allow-empty -m '%s'", message);
    tgr_git(repo, args);
    free(args);
    char *cmd = co_xasprintf("git -C '%s' rev-parse HEAD", repo);
    FILE *p = popen(cmd, "r"); // NOLINT(concurrency-mt-unsafe)
    free(cmd);
    char buf[64] = "";
    if (!p || !fgets(buf, sizeof(buf), p)) {
        fail_msg("rev-parse failed in %s", repo);
    }
    pclose(p);
    buf[strcspn(buf, "\n")] = '\0';
    return co_xstrdup(buf);
}

void tgr_tag(const char *repo, const char *name, int annotated)
{
    char *args = annotated ? co_xasprintf("tag -a -m 'release %s' '%s'", name, name)
                           : co_xasprintf("tag '%s'", name);
    tgr_git(repo, args);
    free(args);
}

void tgr_switch(const char *repo, const char *name)
{
    char *cmd = co_xasprintf(GIT "-C '%s' rev-parse -q --verify 'refs/heads/%s' >/dev/null 2>&1",
                             repo, name);
    int exists = system(cmd) == 0; // NOLINT(concurrency-mt-unsafe)
    free(cmd);
    char *args =
        exists ? co_xasprintf("checkout -q '%s'", name) : co_xasprintf("checkout -q -b '%s'", name);
    tgr_git(repo, args);
    free(args);
}
