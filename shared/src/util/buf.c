/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The capped growable buffer. Growth doubles (amortised O(1) appends) but never allocates past
 * max + 1 bytes, so a hostile peer cannot make us reserve more than the cap it is charged.
 */
#include "co/util/buf.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/error.h"

void co_buf_init(co_buf *buf, size_t max)
{
    buf->ptr = NULL;
    buf->len = 0;
    buf->cap = 0;
    buf->max = max;
}

void co_buf_dispose(co_buf *buf)
{
    if (!buf) {
        return;
    }
    free(buf->ptr);
    buf->ptr = NULL;
    buf->len = 0;
    buf->cap = 0;
}

void co_buf_reset(co_buf *buf)
{
    buf->len = 0;
    if (buf->ptr) {
        buf->ptr[0] = '\0';
    }
}

static int too_big(co_buf *buf, size_t want)
{
    size_t max = buf->max;
    co_buf_dispose(buf);
    return co_error_set(CO_ETOOBIG, "data exceeds the limit of %zu bytes (needed %zu)", max, want);
}

int co_buf_reserve(co_buf *buf, size_t extra)
{
    /* No object can be larger than PTRDIFF_MAX, so such a request can only be refused. */
    if (extra > buf->max || buf->len > buf->max - extra || buf->len + extra >= PTRDIFF_MAX) {
        return too_big(buf, extra > SIZE_MAX - buf->len ? SIZE_MAX : buf->len + extra);
    }
    size_t need = buf->len + extra + 1;
    if (need <= buf->cap) {
        return 0;
    }
    size_t cap = buf->cap ? buf->cap : 64;
    while (cap < need) {
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    }
    if (buf->max < SIZE_MAX && cap > buf->max + 1) {
        cap = buf->max + 1;
    }
    buf->ptr = co_xrealloc(buf->ptr, cap);
    buf->cap = cap;
    return 0;
}

int co_buf_put(co_buf *buf, const void *data, size_t len)
{
    int rc = co_buf_reserve(buf, len);
    if (rc < 0) {
        return rc;
    }
    CO_ASSERT(buf->ptr); /* a successful reserve always leaves room for the NUL */
    if (len) {
        memcpy(buf->ptr + buf->len, data, len);
    }
    buf->len += len;
    buf->ptr[buf->len] = '\0';
    return 0;
}

int co_buf_puts(co_buf *buf, const char *str)
{
    return co_buf_put(buf, str, strlen(str));
}

int co_buf_putc(co_buf *buf, char c)
{
    return co_buf_put(buf, &c, 1);
}

int co_buf_vprintf(co_buf *buf, const char *fmt, va_list ap)
{
    /* Most texts are short: formatted once on the stack and copied, rather than measured by one
     * vsnprintf and written by a second. */
    char small[256];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof(small), fmt, ap2);
    va_end(ap2);
    CO_ASSERT(n >= 0);
    if ((size_t)n < sizeof(small)) {
        return co_buf_put(buf, small, (size_t)n);
    }
    int rc = co_buf_reserve(buf, (size_t)n);
    if (rc < 0) {
        return rc;
    }
    vsnprintf(buf->ptr + buf->len, (size_t)n + 1, fmt, ap);
    buf->len += (size_t)n;
    return 0;
}

int co_buf_printf(co_buf *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = co_buf_vprintf(buf, fmt, ap);
    va_end(ap);
    return rc;
}

const char *co_buf_cstr(const co_buf *buf)
{
    return buf->ptr ? buf->ptr : "";
}

char *co_buf_take(co_buf *buf, size_t *len_out)
{
    char *p = buf->ptr ? buf->ptr : co_xstrdup("");
    if (len_out) {
        *len_out = buf->len;
    }
    buf->ptr = NULL;
    buf->len = 0;
    buf->cap = 0;
    return p;
}

void co_buf_consume(co_buf *buf, size_t n)
{
    if (n >= buf->len) {
        co_buf_reset(buf);
        return;
    }
    memmove(buf->ptr, buf->ptr + n, buf->len - n);
    buf->len -= n;
    buf->ptr[buf->len] = '\0';
}

void co_buf_truncate(co_buf *buf, size_t len)
{
    if (len < buf->len) {
        buf->len = len;
        buf->ptr[len] = '\0';
    }
}
