/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the Prometheus metrics registry and its text exposition. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/metrics.h"
#include "tests/support/test_support.h"

static char *render(co_metrics *reg)
{
    co_buf out = CO_BUF_INIT(1 << 20);
    assert_co_pass(co_metrics_render(&out, reg));
    return co_buf_take(&out, NULL);
}

static void test_metrics__counter_and_gauge_exposition(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    const char *labels[] = {"webhook", "code"};
    co_metric *c = co_metrics_counter(reg, "requests_total", "Requests.", labels, 2);
    const char *v1[] = {"/validate", "200"};
    const char *v2[] = {"/convert", "200"};
    co_metric_inc(c, v1);
    co_metric_inc(c, v1);
    co_metric_add(c, v2, 3);
    co_metric *g = co_metrics_gauge(reg, "in_flight", "In flight.", NULL, 0);
    co_metric_set(g, NULL, 1.5);
    assert_true(co_metric_value(c, v1) == 2.0);
    char *text = render(reg);
    assert_string_equal(text, "# HELP in_flight In flight.\n"
                              "# TYPE in_flight gauge\n"
                              "in_flight 1.5\n"
                              "# HELP requests_total Requests.\n"
                              "# TYPE requests_total counter\n"
                              "requests_total{webhook=\"/convert\",code=\"200\"} 3\n"
                              "requests_total{webhook=\"/validate\",code=\"200\"} 2\n");
    free(text);
    co_metrics_free(reg);
}

/* A series handle updates the same series as a lookup does, and stays valid while other series
 * are inserted around it (the family's array grows and shifts). */
static void test_metrics__series_handles(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    const char *labels[] = {"webhook", "code"};
    co_metric *c = co_metrics_counter(reg, "requests_total", "Requests.", labels, 2);
    const char *v[] = {"/m", "200"};
    co_series *s = co_metric_series(c, v);
    assert_true(co_metric_series(c, v) == s);
    co_series_add(s, 2);
    for (int i = 0; i < 40; i++) {
        char code[8];
        snprintf(code, sizeof(code), "%d", 100 + i * 10);
        const char *other[] = {i % 2 ? "/a" : "/z", code};
        co_metric_inc(c, other);
    }
    co_series_add(s, 1);
    co_metric_inc(c, v);
    assert_true(co_metric_value(c, v) == 4.0);

    const double buckets[] = {0.1, 1};
    co_metric *h = co_metrics_histogram(reg, "latency_seconds", "Latency.", labels, 1, buckets, 2);
    co_series *hs = co_metric_series(h, v);
    co_series_observe(hs, 0.05);
    co_series_observe(hs, 2);
    co_metric_observe(h, v, 0.5);
    char *text = render(reg);
    assert_contains(text, "latency_seconds_bucket{webhook=\"/m\",le=\"0.1\"} 1\n"
                          "latency_seconds_bucket{webhook=\"/m\",le=\"1\"} 2\n"
                          "latency_seconds_bucket{webhook=\"/m\",le=\"+Inf\"} 3\n"
                          "latency_seconds_sum{webhook=\"/m\"} 2.55\n"
                          "latency_seconds_count{webhook=\"/m\"} 3\n");
    assert_contains(text, "requests_total{webhook=\"/m\",code=\"200\"} 4\n");
    free(text);
    co_metrics_free(reg);
}

static void test_metrics__histogram_is_cumulative(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    const double buckets[] = {0.1, 1};
    const char *labels[] = {"webhook"};
    co_metric *h = co_metrics_histogram(reg, "latency_seconds", "Latency.", labels, 1, buckets, 2);
    const char *v[] = {"/mutate"};
    co_metric_observe(h, v, 0.05);
    co_metric_observe(h, v, 0.5);
    co_metric_observe(h, v, 0.7);
    co_metric_observe(h, v, 3);
    char *text = render(reg);
    assert_contains(text, "latency_seconds_bucket{webhook=\"/mutate\",le=\"0.1\"} 1\n"
                          "latency_seconds_bucket{webhook=\"/mutate\",le=\"1\"} 3\n"
                          "latency_seconds_bucket{webhook=\"/mutate\",le=\"+Inf\"} 4\n"
                          "latency_seconds_sum{webhook=\"/mutate\"} 4.25\n"
                          "latency_seconds_count{webhook=\"/mutate\"} 4\n");
    free(text);
    co_metrics_free(reg);
}

static void test_metrics__label_values_are_escaped(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    const char *labels[] = {"name"};
    co_metric *g = co_metrics_gauge(reg, "g", "Help with \\ and\nnewline.", labels, 1);
    const char *v[] = {"a\"b\\c\nd"};
    co_metric_set(g, v, 1);
    char *text = render(reg);
    assert_contains(text, "# HELP g Help with \\\\ and\\nnewline.\n");
    assert_contains(text, "g{name=\"a\\\"b\\\\c\\nd\"} 1\n");
    free(text);
    co_metrics_free(reg);
}

static void test_metrics__remove_series_and_reregister(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    const char *labels[] = {"name", "state"};
    co_metric *g = co_metrics_gauge(reg, "state", "State.", labels, 2);
    const char *a[] = {"x", "Ready"};
    const char *b[] = {"y", "Ready"};
    co_metric_set(g, a, 1);
    co_metric_set(g, b, 1);
    co_metric_remove(g, a);
    co_metric_remove(g, a); /* absent: no-op */
    assert_ptr_equal(co_metrics_gauge(reg, "state", "State.", labels, 2), g);
    char *text = render(reg);
    assert_null(strstr(text, "name=\"x\""));
    assert_contains(text, "state{name=\"y\",state=\"Ready\"} 1\n");
    free(text);
    co_metrics_free(reg);
}

/* Series render ordered by their label values, value by value, a value before the longer ones
 * it begins (as Prometheus clients sort them), whatever the order they were made in; each of
 * many series is found again by its values. */
static void test_metrics__series_ordered_by_values(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    const char *labels[] = {"namespace", "name"};
    co_metric *g = co_metrics_gauge(reg, "g", "G.", labels, 2);
    const char *v[][2] = {{"ab", "a"}, {"a", "b"}, {"a", "ab"}, {"b", ""}, {"a", "a"}, {"", "z"}};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        co_metric_set(g, v[i], (double)i);
    }
    char *text = render(reg);
    assert_string_equal(text, "# HELP g G.\n"
                              "# TYPE g gauge\n"
                              "g{namespace=\"\",name=\"z\"} 5\n"
                              "g{namespace=\"a\",name=\"a\"} 4\n"
                              "g{namespace=\"a\",name=\"ab\"} 2\n"
                              "g{namespace=\"a\",name=\"b\"} 1\n"
                              "g{namespace=\"ab\",name=\"a\"} 0\n"
                              "g{namespace=\"b\",name=\"\"} 3\n");
    free(text);
    char ns[16], name[16];
    for (int i = 999; i >= 0; i--) {
        snprintf(ns, sizeof(ns), "ns%d", i % 7);
        snprintf(name, sizeof(name), "c%d", i);
        const char *lv[] = {ns, name};
        co_metric_set(g, lv, i);
    }
    for (int i = 0; i < 1000; i++) {
        snprintf(ns, sizeof(ns), "ns%d", i % 7);
        snprintf(name, sizeof(name), "c%d", i);
        const char *lv[] = {ns, name};
        assert_true(co_metric_value(g, lv) == (double)i);
    }
    co_metrics_free(reg);
}

/* A state gauge renders, for each series, a sample per state in the order of the states'
 * names, 1 for the current one; a state past the always rendered ones only while current; a
 * state it does not know makes every sample 0; removing the series removes all its samples. */
static void test_metrics__state_gauge(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    const char *labels[] = {"name", "state"};
    const char *states[] = {"Ready", "Error", "Pending", "Unmanaged"};
    co_metric *g = co_metrics_state_gauge(reg, "st", "State.", labels, 2, states, 4, 3);
    assert_ptr_equal(co_metrics_state_gauge(reg, "st", "State.", labels, 2, states, 4, 3), g);
    const char *x[] = {"x"}, *y[] = {"y"}, *z[] = {"z"};
    co_metric_set_state(g, y, "Unmanaged");
    co_metric_set_state(g, x, "Pending");
    co_metric_set_state(g, x, "Ready");
    co_metric_set_state(g, z, "Deleted");
    assert_true(co_metric_value(g, x) == 0);
    assert_true(co_metric_value(g, y) == 3);
    assert_true(co_metric_value(g, z) == -1);
    char *text = render(reg);
    assert_string_equal(text, "# HELP st State.\n"
                              "# TYPE st gauge\n"
                              "st{name=\"x\",state=\"Error\"} 0\n"
                              "st{name=\"x\",state=\"Pending\"} 0\n"
                              "st{name=\"x\",state=\"Ready\"} 1\n"
                              "st{name=\"y\",state=\"Error\"} 0\n"
                              "st{name=\"y\",state=\"Pending\"} 0\n"
                              "st{name=\"y\",state=\"Ready\"} 0\n"
                              "st{name=\"y\",state=\"Unmanaged\"} 1\n"
                              "st{name=\"z\",state=\"Error\"} 0\n"
                              "st{name=\"z\",state=\"Pending\"} 0\n"
                              "st{name=\"z\",state=\"Ready\"} 0\n");
    free(text);
    co_metric_set_state(g, y, "Error");
    co_metric_remove(g, x);
    co_metric_remove(g, z);
    text = render(reg);
    assert_string_equal(text, "# HELP st State.\n"
                              "# TYPE st gauge\n"
                              "st{name=\"y\",state=\"Error\"} 1\n"
                              "st{name=\"y\",state=\"Pending\"} 0\n"
                              "st{name=\"y\",state=\"Ready\"} 0\n");
    free(text);
    co_metrics_free(reg);
}

static double forty_two(void *payload)
{
    return *(double *)payload;
}

static void test_metrics__gauge_func_and_special_values(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    double v = 42;
    co_metrics_gauge_func(reg, "depth", "Depth.", forty_two, &v);
    co_metric *g = co_metrics_gauge(reg, "tiny", "Tiny.", NULL, 0);
    co_metric_set(g, NULL, 0.000001);
    char *text = render(reg);
    assert_contains(text, "# TYPE depth gauge\ndepth 42\n");
    assert_contains(text, "tiny 1e-06\n");
    free(text);
    co_metrics_free(reg);
}

/* Sample values print as Go's strconv.FormatFloat(v, 'g', -1, 64): plain decimals from 1e-4
 * up to below 1e6 (560 is "560", never C's "5.6e+02"), exponent form outside. */
static void test_metrics__numbers_print_as_go_does(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0, "0"},           {10, "10"},
        {560, "560"},       {999999, "999999"},
        {1e6, "1e+06"},     {1234567, "1.234567e+06"},
        {0.0001, "0.0001"}, {0.00012, "0.00012"},
        {0.00001, "1e-05"}, {-20, "-20"},
        {0.1, "0.1"},       {123.25, "123.25"},
        {1e21, "1e+21"},    {9007199254740993.0, "9.007199254740992e+15"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        co_metrics *reg = co_metrics_new();
        co_metric *g = co_metrics_gauge(reg, "v", "V.", NULL, 0);
        co_metric_set(g, NULL, cases[i].v);
        char *text = render(reg);
        char want[96];
        snprintf(want, sizeof(want), "\nv %s\n", cases[i].text);
        assert_contains(text, want);
        free(text);
        co_metrics_free(reg);
    }
}

static void test_metrics__render_respects_buffer_cap(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    co_metric *g = co_metrics_gauge(reg, "g", "G.", NULL, 0);
    co_metric_set(g, NULL, 1);
    co_buf out = CO_BUF_INIT(10);
    assert_co_fail_with(CO_ETOOBIG, co_metrics_render(&out, reg));
    co_metrics_free(reg);
}

static co_metric *shared_counter;
static void *bump(void *arg)
{
    (void)arg;
    const char *v[] = {"k"};
    for (int i = 0; i < 10000; i++) {
        co_metric_inc(shared_counter, v);
    }
    return NULL;
}

static void test_metrics__concurrent_increments_are_not_lost(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    const char *labels[] = {"l"};
    shared_counter = co_metrics_counter(reg, "c", "C.", labels, 1);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        pthread_create(&t[i], NULL, bump, NULL);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
    }
    const char *v[] = {"k"};
    assert_true(co_metric_value(shared_counter, v) == 40000.0);
    co_metrics_free(reg);
}

/* A counter never goes down, whether it is added to or copies a total kept elsewhere. */
static void test_metrics__counters_never_decrease(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    const char *labels[] = {"name"};
    const char *v[] = {"component"};
    co_metric *c = co_metrics_counter(reg, "adds_total", "Adds.", labels, 1);
    co_metric_set(c, v, 5);
    assert_true(co_metric_value(c, v) == 5.0);
    co_metric_set(c, v, 3);
    assert_true(co_metric_value(c, v) == 5.0);
    co_metric_add(c, v, -2);
    co_series_add(co_metric_series(c, v), -1);
    assert_true(co_metric_value(c, v) == 5.0);
    co_metric_set(c, v, 7);
    co_metric_add(c, v, 1);
    assert_true(co_metric_value(c, v) == 8.0);
    /* gauges go both ways */
    co_metric *g = co_metrics_gauge(reg, "depth", "Depth.", labels, 1);
    co_metric_set(g, v, 5);
    co_metric_set(g, v, 3);
    co_metric_add(g, v, -1);
    assert_true(co_metric_value(g, v) == 2.0);
    char *text = render(reg);
    assert_contains(text, "# TYPE adds_total counter\nadds_total{name=\"component\"} 8\n");
    free(text);
    co_metrics_free(reg);
}

static double fixed_total(void *payload)
{
    return *(double *)payload;
}

/* Totals read at scrape time are typed counters; the process collector's names and types. */
static void test_metrics__counter_func_and_process_metrics(void **state)
{
    (void)state;
    co_metrics *reg = co_metrics_new();
    double total = 7;
    co_metrics_counter_func(reg, "things_total", "Things.", fixed_total, &total);
    co_metrics_process(reg);
    char *text = render(reg);
    assert_contains(text, "# TYPE things_total counter\nthings_total 7\n");
    assert_contains(text, "# TYPE process_cpu_seconds_total counter\n");
    assert_contains(text, "# TYPE process_resident_memory_bytes gauge\n");
    assert_contains(text, "# TYPE process_virtual_memory_bytes gauge\n");
    assert_contains(text, "# TYPE process_start_time_seconds gauge\n");
    assert_contains(text, "# TYPE process_max_fds gauge\n");
    const char *fds = strstr(text, "\nprocess_open_fds ");
    assert_non_null(fds);
    assert_true(strtod(fds + strlen("\nprocess_open_fds "), NULL) >= 3); /* stdin, out, err */
    const char *rss = strstr(text, "\nprocess_resident_memory_bytes ");
    assert_non_null(rss);
    assert_true(strtod(rss + strlen("\nprocess_resident_memory_bytes "), NULL) > 0);
    free(text);
    co_metrics_free(reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics__counter_and_gauge_exposition),
        cmocka_unit_test(test_metrics__histogram_is_cumulative),
        cmocka_unit_test(test_metrics__series_handles),
        cmocka_unit_test(test_metrics__label_values_are_escaped),
        cmocka_unit_test(test_metrics__remove_series_and_reregister),
        cmocka_unit_test(test_metrics__gauge_func_and_special_values),
        cmocka_unit_test(test_metrics__numbers_print_as_go_does),
        cmocka_unit_test(test_metrics__render_respects_buffer_cap),
        cmocka_unit_test(test_metrics__concurrent_increments_are_not_lost),
        cmocka_unit_test(test_metrics__counters_never_decrease),
        cmocka_unit_test(test_metrics__counter_func_and_process_metrics),
        cmocka_unit_test(test_metrics__series_ordered_by_values),
        cmocka_unit_test(test_metrics__state_gauge),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
