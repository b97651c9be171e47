/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for render budgets: limits, nesting, charges, the sticky state, the process
 * default and the parsing of the flags' values. */
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/budget.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/duration.h"
#include "co/json/yaml.h"
#include "tests/support/test_support.h"

static void test_budget__without_a_budget_nothing_is_counted(void **state)
{
    (void)state;
    assert_false(co_budget_active());
    assert_co_pass(co_budget_charge(SIZE_MAX / 2));
    assert_co_pass(co_budget_check());
    assert_co_pass(co_budget_tick());
    assert_int_equal(co_budget_memory_left(), SIZE_MAX);
    assert_int_equal(co_budget_id(), 0);
}

static void test_budget__memory_over_the_limit_fails_and_stays_failed(void **state)
{
    (void)state;
    co_budget_limits l = {.memory = 1000};
    co_budget_begin(&l);
    assert_true(co_budget_active());
    assert_co_pass(co_budget_charge(600));
    assert_int_equal(co_budget_memory_left(), 400);
    assert_co_fail_with(CO_ETOOBIG, co_budget_charge(500));
    assert_string_equal(co_error_last(),
                        "render budget exceeded: more than 1000 bytes of memory for template "
                        "values, rendered output and decoded documents");
    /* giving memory back does not undo the failure */
    co_budget_release(co_budget_id(), 1100);
    assert_co_fail_with(CO_ETOOBIG, co_budget_status());
    assert_co_fail_with(CO_ETOOBIG, co_budget_tick());
    assert_co_fail_with(CO_ETOOBIG, co_budget_charge(1));
    co_budget_end();
    assert_false(co_budget_active());
    assert_co_pass(co_budget_status());
}

static void test_budget__cpu_time_over_the_limit_fails(void **state)
{
    (void)state;
    co_budget_limits l = {.cpu_ns = 20 * CO_MILLISECOND};
    co_budget_begin(&l);
    int rc = 0;
    volatile uint64_t sink = 0;
    /* bounded: far more work than 20 ms of CPU time on any machine */
    for (uint64_t i = 0; i < 100000000000ULL && rc == 0; i++) {
        sink += i * i;
        rc = co_budget_tick();
    }
    assert_int_equal(rc, CO_ETIMEOUT);
    assert_string_equal(co_error_last(), "render budget exceeded: more than 20ms of CPU time");
    assert_co_fail_with(CO_ETIMEOUT, co_budget_check());
    co_budget_end();
}

static void test_budget__an_inner_budget_keeps_the_outer_one(void **state)
{
    (void)state;
    co_budget_limits outer = {.memory = 1000};
    co_budget_limits inner = {.memory = 1 << 30};
    co_budget_begin(&outer);
    uint64_t id = co_budget_id();
    co_budget_begin(&inner);
    assert_int_equal(co_budget_id(), id);
    assert_int_equal(co_budget_memory_limit(), 1000);
    co_budget_end();
    assert_true(co_budget_active());
    assert_co_fail_with(CO_ETOOBIG, co_budget_charge(2000));
    co_budget_end();
    assert_false(co_budget_active());
}

static void test_budget__memory_is_given_back_only_to_its_budget(void **state)
{
    (void)state;
    co_budget_limits l = {.memory = 1000};
    co_budget_begin(&l);
    uint64_t first = co_budget_id();
    assert_co_pass(co_budget_charge(800));
    co_budget_end();
    co_budget_begin(&l);
    assert_int_not_equal(co_budget_id(), first);
    assert_co_pass(co_budget_charge(800));
    co_budget_release(first, 800); /* an old budget's memory */
    assert_int_equal(co_budget_memory_left(), 200);
    co_budget_release(co_budget_id(), 800);
    assert_int_equal(co_budget_memory_left(), 1000);
    co_budget_end();
}

static void test_budget__process_default_applies_to_zero_limits(void **state)
{
    (void)state;
    co_budget_limits d = {.cpu_ns = 5 * CO_SECOND, .memory = 4096};
    co_budget_set_default(&d);
    co_budget_limits half = {.cpu_ns = CO_SECOND};
    co_budget_begin(&half);
    assert_int_equal(co_budget_memory_limit(), 4096);
    co_budget_end();
    co_budget_begin(NULL);
    assert_int_equal(co_budget_memory_limit(), 4096);
    co_budget_end();
    co_budget_set_default(NULL);
    assert_int_equal(co_budget_default().memory, CO_DEFAULT_RENDER_MEMORY);
    assert_int_equal(co_budget_default().cpu_ns, CO_DEFAULT_RENDER_CPU);
}

static void test_budget__refused_allocation_fails_the_budget(void **state)
{
    (void)state;
    co_budget_limits l = {.memory = 64 * CO_MIB};
    co_budget_begin(&l);
    assert_co_fail_with(CO_ETOOBIG, co_budget_refuse(100 * CO_MIB));
    assert_contains(co_error_last(), "more than 64 MiB of memory");
    assert_co_fail_with(CO_ETOOBIG, co_budget_status());
    co_budget_end();
}

static void test_budget__json_documents_are_charged(void **state)
{
    (void)state;
    struct json_object *o = json_tokener_parse("{\"a\":[1,2,{\"b\":\"text\"}],\"c\":{}}");
    assert_non_null(o);
    co_budget_limits l = {.memory = 1 << 20};
    co_budget_begin(&l);
    size_t charged = 0;
    assert_co_pass(co_budget_charge_json(o, &charged));
    /* three objects of a 16-slot table each, an array, four scalars */
    assert_true(charged > 3 * (size_t)800);
    assert_true(charged < 5000);
    assert_int_equal(co_budget_memory_left(), (1 << 20) - charged);
    co_budget_end();
    json_object_put(o);
}

/* The YAML decoder charges what it builds as it goes, so a stream of empty mappings (800 bytes
 * of json-c each from 5 bytes of text) stops at the budget instead of taking 160 times it. */
static void test_budget__yaml_is_charged_while_decoded(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    for (int i = 0; i < 100000; i++) {
        assert_co_pass(co_buf_puts(&b, "- {}\n"));
    }
    co_budget_limits l = {.memory = CO_MIB};
    co_budget_begin(&l);
    struct json_object *out = NULL;
    assert_co_fail_with(CO_ETOOBIG, co_yaml_parse(&out, b.ptr, b.len, 0));
    assert_null(out);
    assert_contains(co_error_last(), "render budget exceeded: more than 1 MiB of memory");
    co_budget_end();
    /* without a budget the same stream decodes */
    assert_co_pass(co_yaml_parse(&out, b.ptr, b.len, 0));
    assert_int_equal(json_object_array_length(out), 100000);
    json_object_put(out);
    co_buf_dispose(&b);
}

static void test_budget__sizes_parse_like_quantities(void **state)
{
    (void)state;
    uint64_t n = 0;
    assert_co_pass(co_budget_parse_bytes(&n, "x", "64Mi"));
    assert_int_equal(n, 64 * 1024 * 1024);
    assert_co_pass(co_budget_parse_bytes(&n, "x", "1Gi"));
    assert_int_equal(n, 1024 * 1024 * 1024);
    assert_co_pass(co_budget_parse_bytes(&n, "x", "500M"));
    assert_int_equal(n, 500000000);
    assert_co_pass(co_budget_parse_bytes(&n, "x", "12k"));
    assert_int_equal(n, 12000);
    assert_co_pass(co_budget_parse_bytes(&n, "x", "1048576"));
    assert_int_equal(n, 1048576);
    assert_co_fail_with(CO_EINVALID, co_budget_parse_bytes(&n, "--render-memory-budget", "64MB"));
    assert_string_equal(co_error_last(), "--render-memory-budget: unknown unit \"MB\" in size "
                                         "\"64MB\" (use k, M, G, T, Ki, Mi, Gi or Ti)");
    assert_co_fail_with(CO_EINVALID, co_budget_parse_bytes(&n, "x", "Mi"));
    assert_co_fail_with(CO_EINVALID, co_budget_parse_bytes(&n, "x", ""));
    assert_co_fail_with(CO_EINVALID, co_budget_parse_bytes(&n, "x", "-1"));
    assert_co_fail_with(CO_EINVALID, co_budget_parse_bytes(&n, "x", "99999999999Ti"));
    assert_co_fail_with(CO_EINVALID, co_budget_parse_bytes(&n, "x", "99999999999999999999"));
}

static void test_budget__flag_values_become_limits(void **state)
{
    (void)state;
    co_budget_limits l;
    assert_co_pass(co_budget_limits_parse(&l, "1m30s", "128Mi"));
    assert_int_equal(l.cpu_ns, 90 * CO_SECOND);
    assert_int_equal(l.memory, 128 * CO_MIB);
    assert_co_pass(co_budget_limits_parse(&l, NULL, NULL));
    assert_int_equal(l.cpu_ns, 0);
    assert_int_equal(l.memory, 0);
    assert_co_fail_with(CO_EINVALID, co_budget_limits_parse(&l, "30", NULL));
    assert_string_equal(co_error_last(),
                        "--render-cpu-budget: time: missing unit in duration \"30\"");
    assert_co_fail_with(CO_EINVALID, co_budget_limits_parse(&l, "-1s", NULL));
    assert_contains(co_error_last(), "--render-cpu-budget: must be positive");
    assert_co_fail_with(CO_EINVALID, co_budget_limits_parse(&l, NULL, "0"));
    assert_contains(co_error_last(), "--render-memory-budget: must be positive");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget__without_a_budget_nothing_is_counted),
        cmocka_unit_test(test_budget__memory_over_the_limit_fails_and_stays_failed),
        cmocka_unit_test(test_budget__cpu_time_over_the_limit_fails),
        cmocka_unit_test(test_budget__an_inner_budget_keeps_the_outer_one),
        cmocka_unit_test(test_budget__memory_is_given_back_only_to_its_budget),
        cmocka_unit_test(test_budget__process_default_applies_to_zero_limits),
        cmocka_unit_test(test_budget__refused_allocation_fails_the_budget),
        cmocka_unit_test(test_budget__json_documents_are_charged),
        cmocka_unit_test(test_budget__yaml_is_charged_while_decoded),
        cmocka_unit_test(test_budget__sizes_parse_like_quantities),
        cmocka_unit_test(test_budget__flag_values_become_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
