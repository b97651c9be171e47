/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file common.h
 * Compiler attributes, the project version and the allocation wrappers every module uses.
 *
 * Small internal allocations go through co_xmalloc() and friends, which abort the process on
 * out-of-memory: a daemon that Kubernetes restarts gains nothing from hundreds of untestable
 * recovery branches. Sizes that come from outside are capped before allocating (see caps.h).
 * Thread-safe.
 */
#ifndef CO_COMMON_H
#define CO_COMMON_H

#include <stdarg.h>
#include <stddef.h>

#define CO_VERSION "0.1.0"

/** Marks a function whose int result must be checked. */
#define CO_MUST_CHECK __attribute__((warn_unused_result))
/** printf-style format checking: a = format index, b = first variadic index. */
#define CO_PRINTF(a, b) __attribute__((format(printf, a, b)))
/** The last variadic argument must be NULL. */
#define CO_SENTINEL __attribute__((sentinel))
/** The function never returns. */
#define CO_NORETURN __attribute__((noreturn))

/** Number of elements of a true array. */
#define CO_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/** Internal invariant, active in every build: logs file and line and aborts when false. */
#define CO_ASSERT(expr)                                                                            \
    do {                                                                                           \
        if (!(expr)) {                                                                             \
            co__assert_fail(#expr, __FILE__, __LINE__);                                            \
        }                                                                                          \
    } while (0)

/** Called by CO_ASSERT; never returns. */
CO_NORETURN void co__assert_fail(const char *expr, const char *file, int line);

/** malloc() that aborts on failure; never returns NULL (a zero size allocates one byte). */
void *co_xmalloc(size_t size);
/** calloc() that aborts on failure or on multiplication overflow. */
void *co_xcalloc(size_t nmemb, size_t size);
/** realloc() that aborts on failure; co_xrealloc(NULL, n) behaves like co_xmalloc(n). */
void *co_xrealloc(void *ptr, size_t size);
/** reallocarray()-style growth with overflow check; aborts on failure. */
void *co_xreallocarray(void *ptr, size_t nmemb, size_t size);
/** strdup() that aborts on failure; co_xstrdup(NULL) returns NULL. */
char *co_xstrdup(const char *s);
/** strndup() that aborts on failure. */
char *co_xstrndup(const char *s, size_t n);
/** Copies @p len bytes and appends a NUL; aborts on failure. */
char *co_xmemdup(const void *data, size_t len);
/** @p a, the byte @p sep and @p b in one new string ("ns" '/' "name"), as
 * co_xasprintf("%s%c%s") would write it without formatting; aborts on failure. */
char *co_xjoin(const char *a, char sep, const char *b);
/** asprintf() that aborts on failure. Free the result with free(). */
char *co_xasprintf(const char *fmt, ...) CO_PRINTF(1, 2);
/** vasprintf() that aborts on failure. Free the result with free(). */
char *co_xvasprintf(const char *fmt, va_list ap) CO_PRINTF(1, 0);

/** Clears and frees a sensitive allocation of @p len bytes (the compiler cannot elide it). */
void co_free_secret(void *ptr, size_t len);

/** Zeroes @p len bytes in a way the compiler cannot elide. */
void co_memzero(void *ptr, size_t len);

#endif
