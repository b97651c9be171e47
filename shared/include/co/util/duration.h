/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file duration.h
 * Go durations: parsing exactly like Go's time.ParseDuration and formatting exactly like
 * time.Duration.String(), on int64 nanoseconds.
 *
 * Accepted: an optional sign, then one or more decimal numbers with optional fraction, each
 * followed by a unit (ns, us, µs (U+00B5), μs (U+03BC), ms, s, m, h): "300ms", "-1.5h",
 * "2h45m", ".5s"; the bare "0" (with an optional sign) is zero. Error messages are Go's,
 * word for word (`time: invalid duration "x"`, `time: missing unit in duration "1"`,
 * `time: unknown unit "d" in duration "1d"`), so that they read the same as the Go operator's.
 * Thread-safe.
 */
#ifndef CO_DURATION_H
#define CO_DURATION_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"

/** Room for any formatted duration, NUL included ("-2562047h47m16.854775808s"). */
#define CO_DURATION_STR_MAX 32

#define CO_NANOSECOND  ((int64_t)1)
#define CO_MICROSECOND ((int64_t)1000)
#define CO_MILLISECOND ((int64_t)1000000)
#define CO_SECOND      ((int64_t)1000000000)
#define CO_MINUTE      (60 * CO_SECOND)
#define CO_HOUR        (60 * CO_MINUTE)

/**
 * Parses the Go duration @p str.
 * @param[out] out nanoseconds
 * @return 0, or CO_EINVALID with Go's message (also for values beyond the int64 range).
 */
CO_MUST_CHECK int co_duration_parse(int64_t *out, const char *str);

/**
 * Writes @p ns as Go's Duration.String() does ("1h30m0s", "1.5s", "300ms", "0s", "-2µs").
 * @return the length written to @p out (NUL-terminated).
 */
size_t co_duration_format(char out[CO_DURATION_STR_MAX], int64_t ns);

#endif
