/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file buf.h
 * A growable byte buffer with a hard maximum size.
 *
 * Every buffer carries the cap it was initialised with (a constant from caps.h, or SIZE_MAX for
 * purely internal data). An append that would exceed the cap fails with CO_ETOOBIG and
 * disposes of the buffer, so the caller's error path has nothing left to free. The content is
 * always NUL-terminated (the terminator is not counted in len and not charged to the cap).
 * A co_buf is caller-embedded: co_buf_init()/co_buf_dispose(); after dispose it is empty and
 * reusable with the same cap. Not thread-safe.
 */
#ifndef CO_BUF_H
#define CO_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"

typedef struct co_buf {
    char *ptr;  /**< content, NUL-terminated; NULL while nothing was ever appended */
    size_t len; /**< bytes of content */
    size_t cap; /**< bytes allocated */
    size_t max; /**< hard maximum for len */
} co_buf;

/** Static initialiser for a buffer with maximum @p maxlen. */
#define CO_BUF_INIT(maxlen)                                                                        \
    {                                                                                              \
        NULL, 0, 0, (maxlen)                                                                       \
    }

/** Initialises @p buf as empty with maximum @p max. */
void co_buf_init(co_buf *buf, size_t max);

/** Frees the content; the buffer stays usable with the same maximum. NULL is a no-op. */
void co_buf_dispose(co_buf *buf);

/** Empties the buffer but keeps its allocation. */
void co_buf_reset(co_buf *buf);

/**
 * Appends @p len bytes.
 * @return 0, or CO_ETOOBIG (the buffer is disposed) when the result would exceed the maximum.
 */
CO_MUST_CHECK int co_buf_put(co_buf *buf, const void *data, size_t len);

/** Appends a NUL-terminated string. @return 0 or CO_ETOOBIG (buffer disposed). */
CO_MUST_CHECK int co_buf_puts(co_buf *buf, const char *str);

/** Appends one byte. @return 0 or CO_ETOOBIG (buffer disposed). */
CO_MUST_CHECK int co_buf_putc(co_buf *buf, char c);

/** Appends formatted text. @return 0 or CO_ETOOBIG (buffer disposed). */
CO_MUST_CHECK int co_buf_printf(co_buf *buf, const char *fmt, ...) CO_PRINTF(2, 3);

/** Appends formatted text from a va_list. @return 0 or CO_ETOOBIG (buffer disposed). */
CO_MUST_CHECK int co_buf_vprintf(co_buf *buf, const char *fmt, va_list ap) CO_PRINTF(2, 0);

/** The content as a C string; "" for an empty buffer. Borrowed from @p buf. */
const char *co_buf_cstr(const co_buf *buf);

/**
 * Hands the content to the caller (free with free()) and leaves the buffer empty.
 * Never returns NULL: an empty buffer yields an allocated "".
 * @param[out] len_out the content length, if not NULL
 */
char *co_buf_take(co_buf *buf, size_t *len_out);

/** Removes the first @p n bytes (all of them if n >= len), keeping the rest in place. */
void co_buf_consume(co_buf *buf, size_t n);

/** Shortens the content to @p len bytes (no-op when already shorter). */
void co_buf_truncate(co_buf *buf, size_t len);

/** Makes room for at least @p extra more bytes. @return 0 or CO_ETOOBIG (buffer disposed). */
CO_MUST_CHECK int co_buf_reserve(co_buf *buf, size_t extra);

#endif
