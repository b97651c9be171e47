/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by every cmocka test binary: assertions that print the last error message on
 * failure, fixture loading, and temporary directories.
 */
#ifndef CO_TEST_SUPPORT_H
#define CO_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "co/util/error.h"

/** Runs @p expr (an int-returning call) and fails the test, printing the last error, unless it
 * returns 0. */
#define assert_co_pass(expr)                                                                       \
    do {                                                                                           \
        co_error_clear();                                                                          \
        int co__rc = (expr);                                                                       \
        if (co__rc != 0) {                                                                         \
            fail_msg("%s returned %d (%s): %s", #expr, co__rc, co_error_name(co__rc),              \
                     co_error_last());                                                             \
        }                                                                                          \
    } while (0)

/** Runs @p expr and fails the test unless it returns exactly @p code. */
#define assert_co_fail_with(code, expr)                                                            \
    do {                                                                                           \
        co_error_clear();                                                                          \
        int co__rc = (expr);                                                                       \
        if (co__rc != (code)) {                                                                    \
            fail_msg("%s returned %d (%s), expected %d (%s): %s", #expr, co__rc,                   \
                     co_error_name(co__rc), (int)(code), co_error_name(code), co_error_last());    \
        }                                                                                          \
    } while (0)

/** Fails unless @p haystack contains @p needle. */
#define assert_contains(haystack, needle)                                                          \
    do {                                                                                           \
        const char *co__h = (haystack);                                                            \
        const char *co__n = (needle);                                                              \
        if (!co__h || !strstr(co__h, co__n)) {                                                     \
            fail_msg("\"%s\" does not contain \"%s\"", co__h ? co__h : "(null)", co__n);           \
        }                                                                                          \
    } while (0)

/** Reads tests/fixtures/@p rel into a NUL-terminated allocation (free with free()); fails the
 * test when the file cannot be read. */
char *co_test_fixture(const char *rel, size_t *len_out);

/** Absolute path of tests/fixtures/@p rel (free with free()). */
char *co_test_fixture_path(const char *rel);

/** A list of strings owned by the list. */
typedef struct co_test_names {
    char **items;
    size_t len;
} co_test_names;

/** qsort() comparator for an array of C strings. */
int co_test_strcmp_ptr(const void *a, const void *b);

/** The files of tests/fixtures/@p dir whose names end in @p suffix, as "@p dir/<name>", sorted;
 * fails the test when the directory cannot be read or holds no such file. */
co_test_names co_test_fixture_files(const char *dir, const char *suffix);

/** Frees the strings of @p n and the list. */
void co_test_names_free(co_test_names *n);

struct json_object;

/** Parses tests/fixtures/@p rel as JSON (json_object_put()); fails the test when it is not. */
struct json_object *co_test_fixture_json(const char *rel);

/** Creates a fresh private temporary directory (free the path with free(); remove it with
 * co_test_rmtree()). */
char *co_test_tmpdir(void);

/** Removes a directory tree created by a test. */
void co_test_rmtree(const char *path);

/** How many entries of directory @p dir have a name that starts with @p prefix; fails the test
 * when the directory cannot be read. */
size_t co_test_count_entries(const char *dir, const char *prefix);

/** Fails the test unless every entry of @p dir whose name starts with @p prefix has exactly the
 * permission bits @p mode (e.g. 0700). */
void co_test_assert_entries_mode(const char *dir, const char *prefix, unsigned mode);

/** Sets the environment variable @p name to @p value and returns its previous value (NULL when
 * it was unset), for co_test_env_restore(). Tests are single-threaded while they do this. */
char *co_test_env_swap(const char *name, const char *value);

/** Gives @p name back the value co_test_env_swap() returned (NULL: unset) and frees @p saved. */
void co_test_env_restore(const char *name, char *saved);

/** Writes @p len bytes to @p path, creating parent directories; fails the test on error. */
void co_test_write_file(const char *path, const void *data, size_t len);

/** Reads a whole file (free with free()); NULL if it does not exist. */
char *co_test_read_file(const char *path, size_t *len_out);

/** Path of @p rel in $CO_SHARED_FIXTURES, the test data from other projects that only the
 * conformance lane reads (`make test-conformance` sets it to ../shared/fixtures beside the
 * source tree); free with free(). Fails the test when the variable is not set. */
char *co_test_shared_fixture_path(const char *rel);

/** Reads $CO_SHARED_FIXTURES/@p rel (free with free()); fails the test when it cannot. */
char *co_test_shared_fixture(const char *rel, size_t *len_out);

#endif
