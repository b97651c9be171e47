/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the template engine's API, caps and concurrency (the language itself is
 * checked against Go by test_template_oracle). */
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/buf.h"
#include "co/caps.h"
#include "co/template.h"
#include "tests/support/fake_clock.h"
#include "tests/support/test_support.h"

static co_template_funcs *funcs;

static int setup(void **state)
{
    (void)state;
    co_template_funcs_new(&funcs, CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_RUNTIME);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    co_template_funcs_free(funcs);
    return 0;
}

/* Renders @text with JSON @data; returns the output (free) or NULL with the error set. */
static char *
render_opts(const char *text, const char *data, const co_template_options *opts, int *rc_out)
{
    co_template_set *set;
    co_template_set_new(&set, funcs, opts);
    int rc = co_template_set_parse(set, "t", text, strlen(text));
    char *out = NULL;
    if (rc == 0) {
        struct json_object *j = data ? json_tokener_parse(data) : NULL;
        rc = co_template_render(set, "t", j, CO_TEMPLATE_NUMBERS_FLOAT64, NULL, &out, NULL);
        json_object_put(j);
    }
    co_template_set_free(set);
    *rc_out = rc;
    return out;
}

static char *render(const char *text, const char *data, int *rc)
{
    return render_opts(text, data, NULL, rc);
}

static void test_template__renders_data(void **state)
{
    (void)state;
    int rc;
    char *out =
        render("{{ .name }} has {{ len .items }} items: {{ range .items }}{{ . }},{{ end }}",
               "{\"name\":\"box\",\"items\":[1,2.5,\"x\"]}", &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "box has 3 items: 1,2.5,x,");
    free(out);
}

static void test_template__values_are_float64_like_go(void **state)
{
    (void)state;
    int rc;
    char *out =
        render("{{ .n }} {{ .small }} {{ printf \"%T\" .n }}", "{\"n\":1000000,\"small\":12}", &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "1e+06 12 float64");
    free(out);
}

static void test_template__parse_error_names_line(void **state)
{
    (void)state;
    int rc;
    char *out = render("line1\n{{ if }}", NULL, &rc);
    assert_null(out);
    assert_int_equal(rc, CO_EINVALID);
    assert_string_equal(co_error_last(), "template: t:2: missing value for if");
}

static void test_template__exec_error_has_context(void **state)
{
    (void)state;
    int rc;
    char *out = render("a\n  {{ .x.y.z }}", "{\"x\":\"s\"}", &rc);
    assert_null(out);
    assert_int_equal(rc, CO_EINVALID);
    assert_string_equal(co_error_last(), "template: t:2:7: executing \"t\" at <.x.y.z>: can't "
                                         "evaluate field y in type interface {}");
}

static void test_template__missingkey_modes(void **state)
{
    (void)state;
    co_template_options o;
    memset(&o, 0, sizeof(o));
    int rc;
    char *out = render_opts("[{{ .a }}]", "{}", &o, &rc);
    assert_string_equal(out, "[<no value>]");
    free(out);
    o.missingkey = CO_TEMPLATE_MISSINGKEY_ZERO;
    out = render_opts("[{{ .a }}]", "{}", &o, &rc);
    assert_string_equal(out, "[<no value>]");
    free(out);
    out = render_opts("{{ .a.b }}", "{}", &o, &rc);
    assert_null(out);
    assert_contains(co_error_last(), "nil pointer evaluating interface {}.b");
    o.missingkey = CO_TEMPLATE_MISSINGKEY_ERROR;
    out = render_opts("{{ .a }}", "{}", &o, &rc);
    assert_null(out);
    assert_contains(co_error_last(), "map has no entry for key \"a\"");
}

static void test_template__strip_no_value(void **state)
{
    (void)state;
    char s[] = "a<no value>b<no value><no value>c<no valu";
    size_t n = co_template_strip_no_value(s, strlen(s));
    assert_int_equal(n, strlen("abc<no valu"));
    assert_string_equal(s, "abc<no valu");
}

static void test_template__custom_delimiters(void **state)
{
    (void)state;
    co_template_options o;
    memset(&o, 0, sizeof(o));
    o.left_delim = "<%";
    o.right_delim = "%>";
    int rc;
    char *out = render_opts("<% .a %> {{ .a }}", "{\"a\":1}", &o, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "1 {{ .a }}");
    free(out);
}

static void test_template__recursion_is_capped(void **state)
{
    (void)state;
    int rc;
    char *out = render("{{ define \"r\" }}x{{ template \"r\" . }}{{ end }}{{ template \"r\" . }}",
                       NULL, &rc);
    assert_null(out);
    assert_int_equal(rc, CO_ETOOBIG);
    assert_contains(co_error_last(), "exceeded maximum template depth (1000)");
}

static void test_template__steps_are_capped(void **state)
{
    (void)state;
    co_template_options o;
    memset(&o, 0, sizeof(o));
    o.max_steps = 1000;
    int rc;
    char *out = render_opts("{{ range .l }}{{ range $.l }}{{ . }}{{ end }}{{ end }}",
                            "{\"l\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,"
                            "24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40]}",
                            &o, &rc);
    assert_null(out);
    assert_int_equal(rc, CO_ETOOBIG);
    assert_contains(co_error_last(), "execution exceeds the limit of 1000 steps");
}

static void test_template__nesting_is_capped(void **state)
{
    (void)state;
    size_t depth = CO_MAX_TEMPLATE_NESTING + 10;
    char *text = malloc(depth * 2 + 16);
    char *p = text;
    p += sprintf(p, "{{ ");
    for (size_t i = 0; i < depth; i++) {
        *p++ = '(';
    }
    *p++ = '1';
    for (size_t i = 0; i < depth; i++) {
        *p++ = ')';
    }
    sprintf(p, " }}");
    int rc;
    char *out = render(text, NULL, &rc);
    free(text);
    assert_null(out);
    assert_int_equal(rc, CO_EINVALID);
    assert_contains(co_error_last(), "max expression depth exceeded");

    /* deep control nesting is refused the same way, without exhausting the stack */
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    for (size_t i = 0; i < depth; i++) {
        assert_int_equal(co_buf_puts(&b, "{{ if 1 }}"), 0);
    }
    for (size_t i = 0; i < depth; i++) {
        assert_int_equal(co_buf_puts(&b, "{{ end }}"), 0);
    }
    out = render(co_buf_cstr(&b), NULL, &rc);
    co_buf_dispose(&b);
    assert_null(out);
    assert_contains(co_error_last(), "max nesting depth exceeded");
}

static void test_template__source_is_capped(void **state)
{
    (void)state;
    co_template_set *set;
    co_template_set_new(&set, funcs, NULL);
    static const char text[] = "x";
    assert_co_fail_with(CO_ETOOBIG,
                        co_template_set_parse(set, "big", text, CO_MAX_TEMPLATE_SOURCE + 1));
    co_template_set_free(set);
}

static void test_template__unknown_template_is_not_found(void **state)
{
    (void)state;
    co_template_set *set;
    co_template_set_new(&set, funcs, NULL);
    assert_co_pass(co_template_set_parse(set, "a", "x", 1));
    assert_true(co_template_set_has(set, "a"));
    assert_false(co_template_set_has(set, "b"));
    char *out = NULL;
    assert_co_fail_with(
        CO_ENOTFOUND,
        co_template_render(set, "b", NULL, CO_TEMPLATE_NUMBERS_FLOAT64, NULL, &out, NULL));
    assert_string_equal(co_error_last(),
                        "template: no template \"b\" associated with template \"a\"");
    co_template_set_free(set);
}

static int
ext_join(void *ctx, struct json_object **out, struct json_object *const *args, size_t nargs)
{
    const char *sep = ctx;
    co_buf b = CO_BUF_INIT(1024);
    for (size_t i = 0; i < nargs; i++) {
        if (i && co_buf_puts(&b, sep) < 0) {
            return CO_ETOOBIG;
        }
        if (co_buf_puts(&b, args[i] ? json_object_get_string(args[i]) : "nil") < 0) {
            return CO_ETOOBIG;
        }
    }
    *out = json_object_new_string(co_buf_cstr(&b));
    co_buf_dispose(&b);
    return 0;
}

static int
ext_fail(void *ctx, struct json_object **out, struct json_object *const *args, size_t nargs)
{
    (void)ctx;
    (void)out;
    (void)args;
    (void)nargs;
    return co_error_set(CO_EINVALID, "lookup refused");
}

static void test_template__caller_functions(void **state)
{
    (void)state;
    co_template_funcs *f;
    co_template_funcs_new(&f, 0);
    assert_co_pass(co_template_funcs_add(f, "join", -1, CO_TEMPLATE_NUMBERS_FLOAT64, ext_join));
    assert_co_pass(co_template_funcs_add(f, "nope", 0, CO_TEMPLATE_NUMBERS_FLOAT64, ext_fail));
    assert_co_fail_with(CO_EINVALID,
                        co_template_funcs_add(f, "1bad", 0, CO_TEMPLATE_NUMBERS_FLOAT64, ext_fail));
    co_template_set *set;
    co_template_set_new(&set, f, NULL);
    /* a function set in use is frozen */
    assert_co_fail_with(CO_EINVALID,
                        co_template_funcs_add(f, "late", 0, CO_TEMPLATE_NUMBERS_FLOAT64, ext_fail));
    assert_co_pass(co_template_set_parse(set, "t", "{{ join \"a\" 1 nil }}", 21));
    assert_co_pass(co_template_set_parse(set, "u", "{{ nope }}", 10));
    co_template_env env = {(void *)"+"};
    char *out;
    assert_co_pass(
        co_template_render(set, "t", NULL, CO_TEMPLATE_NUMBERS_FLOAT64, &env, &out, NULL));
    assert_string_equal(out, "a+1+nil");
    free(out);
    assert_co_fail_with(CO_EINVALID, co_template_render(set, "u", NULL, CO_TEMPLATE_NUMBERS_FLOAT64,
                                                        &env, &out, NULL));
    assert_string_equal(
        co_error_last(),
        "template: u:1:3: executing \"u\" at <nope>: error calling nope: lookup refused");
    co_template_set_free(set);
    co_template_funcs_free(f);
}

typedef struct worker {
    const co_template_set *set;
    int id;
    int failures;
} worker;

static void *render_many(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 200; i++) {
        char data[64];
        snprintf(data, sizeof(data), "{\"id\":%d,\"i\":%d}", w->id, i);
        struct json_object *j = json_tokener_parse(data);
        char *out = NULL;
        int rc = co_template_render(w->set, "page", j, CO_TEMPLATE_NUMBERS_INT64, NULL, &out, NULL);
        json_object_put(j);
        char want[128];
        snprintf(want, sizeof(want), "worker %d iteration %d: [%d]", w->id, i, w->id);
        if (rc != 0 || strcmp(out, want) != 0) {
            w->failures++;
        }
        free(out);
    }
    return NULL;
}

static void test_template__renders_concurrently(void **state)
{
    (void)state;
    co_template_set *set;
    co_template_set_new(&set, funcs, NULL);
    static const char page[] = "{{ define \"id\" }}[{{ . }}]{{ end }}"
                               "worker {{ .id }} iteration {{ .i }}: {{ template \"id\" .id }}";
    assert_co_pass(co_template_set_parse(set, "page", page, strlen(page)));
    pthread_t th[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){set, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, render_many, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(w[i].failures, 0);
    }
    co_template_set_free(set);
}

/* Renders @text and compares the output with @want (rendering must succeed). */
static void expect(const char *text, const char *want)
{
    int rc;
    char *out = render(text, NULL, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(out, want);
    free(out);
}

/* Local follows $TZ as in Go: a zone name, a file path (with or without ':'), "" and "UTC" for
 * UTC, and UTC again for a name no zone file has. */
static void test_template__local_zone_follows_tz(void **state)
{
    (void)state;
    const char *saved = getenv("TZ"); // NOLINT(concurrency-mt-unsafe): single-threaded test
    char *keep = saved ? strdup(saved) : NULL;
    setenv("TZ", "Asia/Tokyo", 1); // NOLINT(concurrency-mt-unsafe): single-threaded test
    expect("{{ date \"15:04 MST\" 0 }}", "09:00 JST");
    expect("{{ toDate \"2006-01-02 15:04\" \"2020-01-01 09:00\" | unixEpoch }}", "1577836800");
    setenv("TZ", ":/usr/share/zoneinfo/Europe/Berlin", 1); // NOLINT(concurrency-mt-unsafe)
    expect("{{ date \"MST -0700\" 1600000000 }}", "CEST +0200");
    setenv("TZ", "", 1); // NOLINT(concurrency-mt-unsafe): single-threaded test
    expect("{{ date \"MST\" 0 }}", "UTC");
    setenv("TZ", "No/Such_Zone", 1); // NOLINT(concurrency-mt-unsafe): single-threaded test
    expect("{{ date \"MST\" 0 }}|{{ dateInZone \"MST\" 0 \"Nowhere/Else\" }}", "UTC|UTC");
    if (keep) {
        setenv("TZ", keep, 1); // NOLINT(concurrency-mt-unsafe): single-threaded test
        free(keep);
    } else {
        unsetenv("TZ"); // NOLINT(concurrency-mt-unsafe): single-threaded test
    }
}

/* now, ago and durationRound read the wall clock through the clock seam. */
static void test_template__now_reads_the_clock(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1); // NOLINT(concurrency-mt-unsafe): single-threaded test
    co_fake_clock_install((int64_t)1600000000 * 1000000000 + 5);
    expect("{{ now | date \"2006-01-02T15:04:05.999999999Z07:00\" }}",
           "2020-09-13T12:26:40.000000005Z");
    expect("{{ now | unixEpoch }}", "1600000000");
    expect("{{ ago 1599999910 }}|{{ ago (int64 1600003600) }}", "1m30s|-1h0m0s");
    expect("{{ durationRound (toDate \"2006-01-02\" \"2020-09-01\") }}", "12d");
    expect("{{ $t := now }}{{ ago $t }}", "0s");
    co_fake_clock_uninstall();
    unsetenv("TZ"); // NOLINT(concurrency-mt-unsafe): single-threaded test
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template__renders_data),
        cmocka_unit_test(test_template__values_are_float64_like_go),
        cmocka_unit_test(test_template__parse_error_names_line),
        cmocka_unit_test(test_template__exec_error_has_context),
        cmocka_unit_test(test_template__missingkey_modes),
        cmocka_unit_test(test_template__strip_no_value),
        cmocka_unit_test(test_template__custom_delimiters),
        cmocka_unit_test(test_template__recursion_is_capped),
        cmocka_unit_test(test_template__steps_are_capped),
        cmocka_unit_test(test_template__nesting_is_capped),
        cmocka_unit_test(test_template__source_is_capped),
        cmocka_unit_test(test_template__unknown_template_is_not_found),
        cmocka_unit_test(test_template__caller_functions),
        cmocka_unit_test(test_template__renders_concurrently),
        cmocka_unit_test(test_template__local_zone_follows_tz),
        cmocka_unit_test(test_template__now_reads_the_clock),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
