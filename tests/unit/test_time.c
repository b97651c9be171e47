/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for timestamps and the clock seam. Formatting is checked against the C library's
 * own calendar (gmtime_r/timegm) over a sweep of instants; parsing against the same, plus
 * offsets, fractions and the malformed inputs Go's strict RFC 3339 parser refuses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "co/util/time.h"
#include "tests/support/fake_clock.h"
#include "tests/support/test_support.h"

#define SEC 1000000000LL

static void test_time__formats_like_metav1(void **state)
{
    (void)state;
    char buf[CO_TIME_STR_MAX];
    assert_int_equal(co_time_format(buf, 0), 20);
    assert_string_equal(buf, "1970-01-01T00:00:00Z");
    co_time_format(buf, 1136214245 * SEC + 999999999);
    assert_string_equal(buf, "2006-01-02T15:04:05Z"); /* truncated, not rounded */
    assert_int_equal(co_time_format_micro(buf, 1136214245 * SEC + 123456789), 27);
    assert_string_equal(buf, "2006-01-02T15:04:05.123456Z");
    co_time_format_micro(buf, 1136214245 * SEC);
    assert_string_equal(buf, "2006-01-02T15:04:05.000000Z");
    co_time_format(buf, -1);
    assert_string_equal(buf, "1969-12-31T23:59:59Z"); /* towards the past, as Go */
    co_time_format_micro(buf, -1);
    assert_string_equal(buf, "1969-12-31T23:59:59.999999Z");
    co_time_format(buf, 951782400 * SEC);
    assert_string_equal(buf, "2000-02-29T00:00:00Z");
    co_time_format(buf, INT64_MAX);
    assert_string_equal(buf, "2262-04-11T23:47:16Z");
    co_time_format(buf, INT64_MIN);
    assert_string_equal(buf, "1677-09-21T00:12:43Z");
}

static void test_time__agrees_with_the_c_library(void **state)
{
    (void)state;
    /* a deterministic sweep over 1680..2260, both directions */
    unsigned long long x = 88172645463325252ULL;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int64_t secs = (int64_t)(x % 18300000000ULL) - 9100000000LL;
        struct tm tm;
        time_t t = (time_t)secs;
        assert_non_null(gmtime_r(&t, &tm));
        char want[64], got[CO_TIME_STR_MAX];
        strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%SZ", &tm);
        co_time_format(got, secs * SEC);
        assert_string_equal(got, want);
        int64_t back = 0;
        assert_co_pass(co_time_parse(&back, want));
        assert_true(back == secs * SEC);
        assert_true(timegm(&tm) == t);
    }
}

static void test_time__parses_offsets_and_fractions(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        long long want;
    } cases[] = {
        {"2006-01-02T15:04:05Z", 1136214245 * SEC},
        {"2006-01-02T15:04:05.5Z", 1136214245 * SEC + 500000000},
        {"2006-01-02T15:04:05.000001Z", 1136214245 * SEC + 1000},
        {"2006-01-02T15:04:05.123456789Z", 1136214245 * SEC + 123456789},
        {"2006-01-02T15:04:05.1234567891234Z", 1136214245 * SEC + 123456789},
        {"2006-01-02T08:04:05-07:00", 1136214245 * SEC},
        {"2006-01-03T00:34:05+09:30", 1136214245 * SEC},
        {"2006-01-02T15:04:05+00:00", 1136214245 * SEC},
        {"2006-01-02T15:04:05-00:00", 1136214245 * SEC},
        {"1970-01-01T00:00:00Z", 0},
        {"1969-12-31T23:59:59.999999999Z", -1},
        {"2024-02-29T12:00:00Z", 1709208000 * SEC},
        {"2262-04-11T23:47:16Z", 9223372036 * SEC},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        int64_t got = 0;
        assert_co_pass(co_time_parse(&got, cases[i].in));
        if (got != cases[i].want) {
            fail_msg("%s: got %lld, want %lld", cases[i].in, (long long)got, cases[i].want);
        }
    }
}

static void test_time__refuses_malformed_timestamps(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        const char *msg;
    } cases[] = {
        {"", "bad year"},
        {"2006", "bad year"},
        {"06-01-02T15:04:05Z", "bad year"},
        {"2006-1-02T15:04:05Z", "bad month"},
        {"2006-01-2T15:04:05Z", "bad day"},
        {"2006-01-02 15:04:05Z", "missing 'T'"},
        {"2006-01-02t15:04:05Z", "missing 'T'"},
        {"2006-01-02T5:04:05Z", "bad time of day"},
        {"2006-01-02T15:04Z", "bad time of day"},
        {"2006-13-02T15:04:05Z", "month out of range"},
        {"2006-00-02T15:04:05Z", "month out of range"},
        {"2006-02-29T15:04:05Z", "day out of range"},
        {"2006-04-31T15:04:05Z", "day out of range"},
        {"2006-01-00T15:04:05Z", "day out of range"},
        {"2006-01-02T24:00:00Z", "time of day out of range"},
        {"2006-01-02T15:60:05Z", "time of day out of range"},
        {"2006-01-02T15:04:60Z", "time of day out of range"},
        {"2006-01-02T15:04:05", "missing zone"},
        {"2006-01-02T15:04:05z", "missing zone"},
        {"2006-01-02T15:04:05.Z", "empty fraction"},
        {"2006-01-02T15:04:05,5Z", "missing zone"},
        {"2006-01-02T15:04:05+7:00", "bad zone offset"},
        {"2006-01-02T15:04:05+0700", "bad zone offset"},
        {"2006-01-02T15:04:05+24:00", "zone offset out of range"},
        {"2006-01-02T15:04:05ZZ", "extra text"},
        {"2006-01-02T15:04:05Z ", "extra text"},
        {"2262-04-11T23:47:17Z", "outside the representable range"},
        {"1600-01-01T00:00:00Z", "outside the representable range"},
        {"2006-01-02T15:04:05\xff", "missing zone"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        int64_t got = 42;
        co_error_clear();
        if (co_time_parse(&got, cases[i].in) != CO_EINVALID) {
            fail_msg("%s was accepted", cases[i].in);
        }
        assert_true(got == 42);
        assert_contains(co_error_last(), cases[i].msg);
    }
}

static void test_time__system_clocks_move_forward(void **state)
{
    (void)state;
    int64_t w1 = co_time_now(), m1 = co_time_monotonic();
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
    int64_t w2 = co_time_now(), m2 = co_time_monotonic();
    assert_true(m2 > m1);
    /* the wall clock is after 2020 and did not move backwards by more than a step */
    assert_true(w1 > 1577836800 * SEC);
    assert_true(w2 >= w1 - 10 * SEC);
}

static void test_time__clock_seam_fakes_time(void **state)
{
    (void)state;
    co_fake_clock_install(1136214245 * SEC);
    char buf[CO_TIME_STR_MAX];
    co_time_format(buf, co_time_now());
    assert_string_equal(buf, "2006-01-02T15:04:05Z");
    int64_t m = co_time_monotonic();
    co_fake_clock_advance(90 * SEC);
    assert_true(co_time_monotonic() - m == 90 * SEC);
    co_time_format(buf, co_time_now());
    assert_string_equal(buf, "2006-01-02T15:05:35Z");
    co_fake_clock_set_wall(0);
    assert_true(co_time_now() == 0);
    assert_true(co_time_monotonic() - m == 90 * SEC);
    assert_int_equal(co_fake_clock_reads(), 6);
    co_fake_clock_uninstall();
    assert_true(co_time_now() > 1577836800 * SEC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time__formats_like_metav1),
        cmocka_unit_test(test_time__agrees_with_the_c_library),
        cmocka_unit_test(test_time__parses_offsets_and_fractions),
        cmocka_unit_test(test_time__refuses_malformed_timestamps),
        cmocka_unit_test(test_time__system_clocks_move_forward),
        cmocka_unit_test(test_time__clock_seam_fakes_time),
    };
    return cmocka_run_group_tests_name("time", tests, NULL, NULL);
}
