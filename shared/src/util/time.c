/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 3339 timestamps and the clock seam. Calendar arithmetic uses the days-from-civil
 * algorithm (proleptic Gregorian, no time zone database needed: Kubernetes writes UTC and
 * offsets are explicit), so formatting and parsing never depend on the process's TZ or locale.
 */
#include "co/util/time.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "co/util/error.h"

#define NS_PER_SEC 1000000000LL

static int64_t system_wall(void *payload)
{
    (void)payload;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static int64_t system_monotonic(void *payload)
{
    (void)payload;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static co_clock_fn wall_fn = system_wall;
static co_clock_fn mono_fn = system_monotonic;
static void *clock_payload;

int64_t co_time_now(void)
{
    return wall_fn(clock_payload);
}

int64_t co_time_monotonic(void)
{
    return mono_fn(clock_payload);
}

void co_time_set_clock(co_clock_fn wall, co_clock_fn monotonic, void *payload)
{
    wall_fn = wall ? wall : system_wall;
    mono_fn = monotonic ? monotonic : system_monotonic;
    clock_payload = payload;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static size_t format(char out[CO_TIME_STR_MAX], int64_t unix_ns, int micro)
{
    int64_t secs = unix_ns / NS_PER_SEC;
    int64_t ns = unix_ns % NS_PER_SEC;
    if (ns < 0) {
        ns += NS_PER_SEC;
        secs--;
    }
    int64_t days = secs / 86400;
    int64_t sod = secs % 86400;
    if (sod < 0) {
        sod += 86400;
        days--;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int n;
    if (micro) {
        n = snprintf(out, CO_TIME_STR_MAX, "%04lld-%02d-%02dT%02d:%02d:%02d.%06lldZ", (long long)y,
                     m, d, (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60),
                     (long long)(ns / 1000));
    } else {
        n = snprintf(out, CO_TIME_STR_MAX, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)y, m, d,
                     (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60));
    }
    CO_ASSERT(n > 0 && n < CO_TIME_STR_MAX);
    return (size_t)n;
}

size_t co_time_format(char out[CO_TIME_STR_MAX], int64_t unix_ns)
{
    return format(out, unix_ns, 0);
}

size_t co_time_format_micro(char out[CO_TIME_STR_MAX], int64_t unix_ns)
{
    return format(out, unix_ns, 1);
}

/* Reads exactly @p n digits at *p. */
static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9') {
            return -1;
        }
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int bad(const char *str, const char *what)
{
    return co_error_set(CO_EINVALID,
                        "invalid timestamp \"%.64s\": %s (want RFC 3339, "
                        "e.g. 2006-01-02T15:04:05Z)",
                        str, what);
}

int co_time_parse(int64_t *out, const char *str)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = str;
    int year, month, day, hour, min, sec;
    if (digits(&p, 4, &year) < 0 || *p++ != '-') {
        return bad(str, "bad year");
    }
    if (digits(&p, 2, &month) < 0 || *p++ != '-') {
        return bad(str, "bad month");
    }
    if (digits(&p, 2, &day) < 0 || *p++ != 'T') {
        return bad(str, "bad day or missing 'T'");
    }
    if (digits(&p, 2, &hour) < 0 || *p++ != ':' || digits(&p, 2, &min) < 0 || *p++ != ':' ||
        digits(&p, 2, &sec) < 0) {
        return bad(str, "bad time of day");
    }
    if (month < 1 || month > 12) {
        return bad(str, "month out of range");
    }
    int leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    if (day < 1 || day > mdays[month - 1] + (month == 2 && leap)) {
        return bad(str, "day out of range");
    }
    if (hour > 23 || min > 59 || sec > 59) {
        return bad(str, "time of day out of range");
    }
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        for (; *p >= '0' && *p <= '9'; p++, nd++) {
            if (nd < 9) {
                frac = frac * 10 + (*p - '0');
            }
        }
        if (nd == 0) {
            return bad(str, "empty fraction");
        }
        for (; nd < 9; nd++) {
            frac *= 10;
        }
    }
    int offset = 0;
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        int oh, om;
        p++;
        if (digits(&p, 2, &oh) < 0 || *p++ != ':' || digits(&p, 2, &om) < 0) {
            return bad(str, "bad zone offset");
        }
        if (oh > 23 || om > 59) {
            return bad(str, "zone offset out of range");
        }
        offset = sign * (oh * 3600 + om * 60);
    } else {
        return bad(str, "missing zone ('Z' or an offset)");
    }
    if (*p != '\0') {
        return bad(str, "extra text after the timestamp");
    }
    int64_t secs = days_from_civil(year, month, day) * 86400 + (int64_t)hour * 3600 +
                   (int64_t)min * 60 + sec - offset;
    /* int64 nanoseconds reach from 1677-09-21T00:12:43Z to 2262-04-11T23:47:16Z */
    if (secs > INT64_MAX / NS_PER_SEC || secs < INT64_MIN / NS_PER_SEC ||
        (secs > 0 && frac > INT64_MAX - secs * NS_PER_SEC)) {
        return bad(str, "outside the representable range (years 1678 to 2262)");
    }
    *out = secs * NS_PER_SEC + frac;
    return 0;
}
