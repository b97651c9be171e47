/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file log.h
 * Level-checked, structured logging to stderr, one line per event.
 *
 * Lines are either logfmt-style text
 * (`2026-01-02T03:04:05.678Z level=info component=controller msg="..." key=value`) or JSON
 * objects with the same keys. The level check happens in the macro, before any argument is
 * evaluated or formatted. Fields are string pairs ending with NULL. Field values whose key names
 * a credential (token, password, authorization, private key, ...) are replaced by "[redacted]":
 * a safety net only; Secret data is never passed to the logger at all. Thread-safe: each line
 * is written with a single write(2).
 */
#ifndef CO_LOG_H
#define CO_LOG_H

#include <stdbool.h>

#include "co/util/common.h"

typedef enum co_log_level {
    CO_LOG_ERROR = 0, /**< a failure an operator must look at */
    CO_LOG_WARN = 1,  /**< degraded but continuing */
    CO_LOG_INFO = 2,  /**< lifecycle events and state changes */
    CO_LOG_DEBUG = 3, /**< per-request detail */
    CO_LOG_TRACE = 4, /**< wire-level detail */
} co_log_level;

typedef enum co_log_format {
    CO_LOG_FORMAT_TEXT = 0, /**< key=value text */
    CO_LOG_FORMAT_JSON = 1, /**< one JSON object per line */
} co_log_format;

/** The active level; read by co_log() without a lock (an int store is atomic enough here). */
extern volatile int co_log__level;

/**
 * Configures the logger: @p component names the daemon ("controller", "webhook"; copied).
 * Call once at start-up, before other threads exist.
 */
void co_log_setup(const char *component, co_log_level level, co_log_format format);

/** Redirects output to @p fd (default 2). For tests. */
void co_log_set_fd(int fd);

/** Parses "error", "warn", "info", "debug", "trace" (or 0..4). @return 0 or CO_EINVALID. */
CO_MUST_CHECK int co_log_level_parse(co_log_level *out, const char *str);

/** Parses "text" or "json". @return 0 or CO_EINVALID. */
CO_MUST_CHECK int co_log_format_parse(co_log_format *out, const char *str);

/** Whether @p level is enabled. */
#define co_log_enabled(level) ((int)(level) <= co_log__level)

/**
 * Logs @p msg with fields given as key, value, ..., NULL:
 * `co_log(CO_LOG_INFO, "starting", "version", CO_VERSION, NULL);`
 */
#define co_log(level, ...)                                                                         \
    do {                                                                                           \
        if (co_log_enabled(level)) {                                                               \
            co_log__emit((level), __VA_ARGS__);                                                    \
        }                                                                                          \
    } while (0)

/** Logs a printf-formatted message without fields. */
#define co_logf(level, ...)                                                                        \
    do {                                                                                           \
        if (co_log_enabled(level)) {                                                               \
            co_log__emitf((level), __VA_ARGS__);                                                   \
        }                                                                                          \
    } while (0)

/** Writes one line; use co_log(). */
void co_log__emit(co_log_level level, const char *msg, ...) CO_SENTINEL;
/** Writes one line with a formatted message; use co_logf(). */
void co_log__emitf(co_log_level level, const char *fmt, ...) CO_PRINTF(2, 3);

/** Whether a field named @p key would be redacted. */
bool co_log_key_is_sensitive(const char *key);

#endif
