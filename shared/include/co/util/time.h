/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file time.h
 * Timestamps as Kubernetes writes them, and the clocks every module reads through one seam.
 *
 * A timestamp is an int64 of nanoseconds since the Unix epoch, UTC (years 1678 to 2262).
 * metav1.Time is RFC 3339 at whole seconds in UTC (`2006-01-02T15:04:05Z`), metav1.MicroTime
 * has six fractional digits (`2006-01-02T15:04:05.000000Z`); formatting truncates towards the
 * past, as Go does. Parsing follows Go's time.Parse(time.RFC3339, ...) (Go >= 1.20, strict):
 * two-digit fields, an optional fraction of any length (beyond nanoseconds truncated), `Z` or a
 * `+hh:mm`/`-hh:mm` offset, upper-case `T` and `Z`.
 *
 * Clocks: co_time_now() and co_time_monotonic() read the system clocks unless a test has
 * installed its own functions with co_time_set_clock() (see tests/support/fake_clock.h).
 * Everything else is thread-safe; co_time_set_clock() must be called while no other thread
 * reads the clocks.
 */
#ifndef CO_TIME_H
#define CO_TIME_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"

/** Room for any formatted timestamp, NUL included. */
#define CO_TIME_STR_MAX 40

/** A clock: returns nanoseconds; @p payload is what was given to co_time_set_clock(). */
typedef int64_t (*co_clock_fn)(void *payload);

/** The wall clock: nanoseconds since the Unix epoch (CLOCK_REALTIME unless replaced). */
int64_t co_time_now(void);

/** A monotonic clock for timeouts and intervals (CLOCK_MONOTONIC unless replaced); its zero is
 * arbitrary. */
int64_t co_time_monotonic(void);

/**
 * Replaces the clocks (for tests). NULL for either restores the system clock for it.
 * @p payload is passed to both functions.
 */
void co_time_set_clock(co_clock_fn wall, co_clock_fn monotonic, void *payload);

/** Writes @p unix_ns as metav1.Time does: `2006-01-02T15:04:05Z`. @return the length. */
size_t co_time_format(char out[CO_TIME_STR_MAX], int64_t unix_ns);

/** Writes @p unix_ns as metav1.MicroTime does: `2006-01-02T15:04:05.000000Z`.
 * @return the length. */
size_t co_time_format_micro(char out[CO_TIME_STR_MAX], int64_t unix_ns);

/**
 * Parses an RFC 3339 timestamp (see the file comment).
 * @param[out] out nanoseconds since the Unix epoch
 * @return 0; CO_EINVALID with a message naming the bad part, or when the instant is outside the
 * int64 nanosecond range.
 */
CO_MUST_CHECK int co_time_parse(int64_t *out, const char *str);

#endif
