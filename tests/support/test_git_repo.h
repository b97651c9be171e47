/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Real git repositories for tests, made with the git command line: commits, branches, tags.
 */
#ifndef CO_TEST_GIT_REPO_H
#define CO_TEST_GIT_REPO_H

/** Creates an empty repository at @p path with branch "main"; fails the test on error. */
void tgr_init(const char *path);

/** Writes @p content to @p rel in the work tree (creating directories) and stages it. */
void tgr_write(const char *repo, const char *rel, const char *content);

/** Creates a symlink @p rel -> @p target in the work tree and stages it. */
void tgr_symlink(const char *repo, const char *rel, const char *target);

/** Marks @p rel executable and stages it. */
void tgr_chmod_x(const char *repo, const char *rel);

/** Removes @p rel from the work tree and the index. */
void tgr_remove(const char *repo, const char *rel);

/** Commits what is staged; returns the commit id (free with free()). */
char *tgr_commit(const char *repo, const char *message);

/** Creates a lightweight tag (or an annotated one) at HEAD. */
void tgr_tag(const char *repo, const char *name, int annotated);

/** Creates branch @p name at HEAD and checks it out (or just checks it out if it exists). */
void tgr_switch(const char *repo, const char *name);

/** Runs a git command in @p repo (arguments as one string of test-controlled words). */
void tgr_git(const char *repo, const char *args);

#endif
