/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file error.h
 * Error codes and the thread-local last-error message.
 *
 * Every fallible function returns an int: 0 on success, a negative co_error_code on failure.
 * Only codes that callers branch on exist; everything else is CO_ERROR. The human-readable
 * message is stored, once, where the failure is found, in a slot private to the calling
 * thread, and read with co_error_last(). Callers that add context use co_error_wrap(), which
 * prefixes the existing message ("loading values: ...") and keeps the code. The library never
 * logs failures; the daemon that decides what to do logs once.
 */
#ifndef CO_ERROR_H
#define CO_ERROR_H

#include "co/util/common.h"

/** Error codes; all failures are negative. */
typedef enum co_error_code {
    CO_OK = 0,             /**< success */
    CO_ERROR = -1,         /**< generic failure */
    CO_ENOTFOUND = -2,     /**< object or key does not exist (HTTP 404) */
    CO_EEXISTS = -3,       /**< object already exists */
    CO_ECONFLICT = -4,     /**< optimistic-concurrency or field-manager conflict (HTTP 409) */
    CO_EGONE = -5,         /**< resource version expired; relist (HTTP 410) */
    CO_EINVALID = -6,      /**< invalid input, spec or argument (HTTP 400/422) */
    CO_EAUTH = -7,         /**< unauthorized or forbidden (HTTP 401/403) */
    CO_ETIMEOUT = -8,      /**< deadline exceeded */
    CO_ETOOBIG = -9,       /**< input over a named cap (HTTP 413) */
    CO_EUNAVAILABLE = -10, /**< transient: connection failure, 429 or 5xx; retry with backoff */
    CO_ENOMATCH = -11,     /**< the API server does not serve this kind */
    CO_EUNSUPPORTED = -12, /**< a feature we deliberately do not implement */
    CO_ECANCELED = -13,    /**< the operation was stopped (shutdown, lost leadership) */
} co_error_code;

/**
 * Sets the last error of this thread and returns @p code, so that a failure can be reported as
 * `return co_error_set(CO_EINVALID, "...")`.
 */
int co_error_set(int code, const char *fmt, ...) CO_PRINTF(2, 3);

/** Like co_error_set() with a va_list. */
int co_error_vset(int code, const char *fmt, va_list ap) CO_PRINTF(2, 0);

/** Like co_error_set(), appending ": " and the text of the current errno. */
int co_error_set_os(int code, const char *fmt, ...) CO_PRINTF(2, 3);

/**
 * Prefixes the current message with a formatted context and ": ", keeps the current code and
 * returns it (CO_ERROR if no error was set).
 */
int co_error_wrap(const char *fmt, ...) CO_PRINTF(1, 2);

/** The last error message of this thread; never NULL ("" when none). Borrowed until the next
 * co_error_* call on this thread. */
const char *co_error_last(void);

/** The code of the last error of this thread (CO_OK when none). */
int co_error_last_code(void);

/** Forgets the last error of this thread. */
void co_error_clear(void);

/** A short constant name for @p code ("ENOTFOUND", ...). */
const char *co_error_name(int code);

/**
 * The text of the errno value @p err, thread-safe: in @p buf (@p size bytes) or a constant
 * string; never NULL.
 */
const char *co_errno_text(int err, char *buf, size_t size);

#endif
