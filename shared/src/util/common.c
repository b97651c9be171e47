/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocation wrappers and the assertion handler. Out-of-memory is fatal by design (see
 * common.h); these are the only places that call the C allocator directly.
 */
#include "co/util/common.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CO_NORETURN void oom(size_t size)
{
    char msg[96];
    int n = snprintf(msg, sizeof(msg), "fatal: out of memory allocating %zu bytes\n", size);
    if (n > 0) {
        (void)!fwrite(msg, 1, (size_t)n, stderr);
    }
    abort();
}

void co__assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "fatal: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}

void *co_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) {
        oom(size);
    }
    return p;
}

void *co_xcalloc(size_t nmemb, size_t size)
{
    if (size && nmemb > SIZE_MAX / size) {
        oom(SIZE_MAX);
    }
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p) {
        oom(nmemb * size);
    }
    return p;
}

void *co_xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p) {
        oom(size);
    }
    return p;
}

void *co_xreallocarray(void *ptr, size_t nmemb, size_t size)
{
    if (size && nmemb > SIZE_MAX / size) {
        oom(SIZE_MAX);
    }
    return co_xrealloc(ptr, nmemb * size);
}

char *co_xstrdup(const char *s)
{
    if (!s) {
        return NULL;
    }
    return co_xmemdup(s, strlen(s));
}

char *co_xstrndup(const char *s, size_t n)
{
    size_t len = 0;
    while (len < n && s[len]) {
        len++;
    }
    return co_xmemdup(s, len);
}

char *co_xmemdup(const void *data, size_t len)
{
    if (len == SIZE_MAX) {
        oom(len);
    }
    char *p = co_xmalloc(len + 1);
    if (len) {
        memcpy(p, data, len);
    }
    p[len] = '\0';
    return p;
}

char *co_xjoin(const char *a, char sep, const char *b)
{
    size_t alen = strlen(a), blen = strlen(b);
    if (alen > SIZE_MAX - 2 - blen) {
        oom(SIZE_MAX);
    }
    char *p = co_xmalloc(alen + 1 + blen + 1);
    memcpy(p, a, alen + 1);
    p[alen] = sep; /* over a's terminator */
    memcpy(p + alen + 1, b, blen + 1);
    return p;
}

char *co_xvasprintf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        /* Only an invalid format can get here; treat it as a programming error. */
        CO_ASSERT(!"invalid format string");
    }
    char *p = co_xmalloc((size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *co_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = co_xvasprintf(fmt, ap);
    va_end(ap);
    return p;
}

void co_memzero(void *ptr, size_t len)
{
    volatile unsigned char *p = ptr;
    while (len--) {
        *p++ = 0;
    }
}

void co_free_secret(void *ptr, size_t len)
{
    if (ptr) {
        co_memzero(ptr, len);
        free(ptr);
    }
}
