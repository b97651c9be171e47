/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the template engine's API, caps and concurrency (the language itself is
 * checked against Go by test_template_oracle). */
#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/budget.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/duration.h"
#include "co/render/template.h"
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

/* toJson and its kin write strings as Go's encoding/json does (Go 1.22 and later for \b and \f):
 * NUL, control characters, HTML (not in toRawJson), U+2028/9, and one U+FFFD per invalid byte. */
static void test_template__to_json_escapes_strings_as_go(void **state)
{
    (void)state;
    static const char data[] =
        "{\"s\": \"\\u0000a\\b\\f\\u001f\x7f<>&\\u2028\\u2029\\ufffd"
        "\xed\xa0\x80\xc0\xaf\xf5\x80\xf4\x90\x80\x80\xe2\x82\x80\xe2\x82\"}";
    static const char go[] = "\"\\u0000a\\b\\f\\u001f\x7f%s\\u2028\\u2029\xef\xbf\xbd"
                             "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd"
                             "\\ufffd\\ufffd\xe2\x82\x80\\ufffd\\ufffd\"";
    char want[512];
    int rc;
    char *out = render("{{ toJson .s }}", data, &rc);
    assert_int_equal(rc, 0);
    snprintf(want, sizeof(want), go, "\\u003c\\u003e\\u0026");
    assert_string_equal(out, want);
    free(out);
    out = render("{{ toRawJson .s }}", data, &rc);
    assert_int_equal(rc, 0);
    snprintf(want, sizeof(want), go, "<>&");
    assert_string_equal(out, want);
    free(out);
    /* keys too, and the indented form */
    out = render("{{ toPrettyJson (dict \"<k>\\u2028\" 1) }}|{{ toRawJson (dict \"<k>\" 1) }}",
                 NULL, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "{\n  \"\\u003ck\\u003e\\u2028\": 1\n}|{\"<k>\":1}");
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

/* One function applied to a value no walk can finish: the expression and the part of the
 * error every engine walk must report instead of exhausting the stack. */
typedef struct walk_case {
    const char *expr;
    const char *cycle; /* expected for a map that contains itself */
    const char *deep;  /* expected for 200000 levels of nesting */
} walk_case;

#define CYCLE      "value contains itself"
#define DEEP       "value nested deeper than 1000 levels"
#define JSON_CYCLE "json: unsupported value: encountered a cycle via map[string]interface {}"
#define JSON_DEEP  "json: unsupported value: nested deeper than 1000 levels"

static const walk_case walk_cases[] = {
    {"{{ $d }}", "at <{{$d}}>: " CYCLE, "at <{{$d}}>: " DEEP},
    {"{{ print $d }}", "error calling print: " CYCLE, "error calling print: " DEEP},
    {"{{ println $d }}", "error calling println: " CYCLE, "error calling println: " DEEP},
    {"{{ printf \"%v\" $d }}", "error calling printf: " CYCLE, "error calling printf: " DEEP},
    {"{{ printf \"%#v\" $d }}", "error calling printf: " CYCLE, "error calling printf: " DEEP},
    {"{{ toString $d }}", "error calling toString: " CYCLE, "error calling toString: " DEEP},
    {"{{ toStrings (list $d) }}", "error calling toStrings: " CYCLE,
     "error calling toStrings: " DEEP},
    {"{{ join \",\" (list $d) }}", "error calling join: " CYCLE, "error calling join: " DEEP},
    {"{{ sortAlpha (list $d) }}", "error calling sortAlpha: " CYCLE,
     "error calling sortAlpha: " DEEP},
    {"{{ cat $d }}", "error calling cat: " CYCLE, "error calling cat: " DEEP},
    {"{{ quote $d }}", "error calling quote: " CYCLE, "error calling quote: " DEEP},
    {"{{ squote $d }}", "error calling squote: " CYCLE, "error calling squote: " DEEP},
    {"{{ dict $d 1 }}", "error calling dict: " CYCLE, "error calling dict: " DEEP},
    {"{{ html $d }}", "error calling html: " CYCLE, "error calling html: " DEEP},
    {"{{ js $d }}", "error calling js: " CYCLE, "error calling js: " DEEP},
    {"{{ urlquery $d }}", "error calling urlquery: " CYCLE, "error calling urlquery: " DEEP},
    {"{{ toJson $d }}", "error calling toJson: " JSON_CYCLE, "error calling toJson: " JSON_DEEP},
    {"{{ mustToJson $d }}", "error calling mustToJson: " JSON_CYCLE,
     "error calling mustToJson: " JSON_DEEP},
    {"{{ toPrettyJson $d }}", "error calling toPrettyJson: " JSON_CYCLE,
     "error calling toPrettyJson: " JSON_DEEP},
    {"{{ toRawJson $d }}", "error calling toRawJson: " JSON_CYCLE,
     "error calling toRawJson: " JSON_DEEP},
    {"{{ toYaml $d }}", "error calling toYaml: " JSON_CYCLE, "error calling toYaml: " JSON_DEEP},
    {"{{ toToml $d }}", "error calling toToml: " CYCLE, "error calling toToml: " DEEP},
    {"{{ eq $d $e }}", "error calling eq: non-comparable type", NULL},
    {"{{ ne $d $e }}", "error calling ne: non-comparable type", NULL},
    {"{{ deepEqual $d $e }}", "error calling deepEqual: " CYCLE, "error calling deepEqual: " DEEP},
    {"{{ has $d (list $e) }}", "error calling has: " CYCLE, "error calling has: " DEEP},
    {"{{ mustHas $d (list $e) }}", "error calling mustHas: " CYCLE, "error calling mustHas: " DEEP},
    {"{{ uniq (list $d $e) }}", "error calling uniq: " CYCLE, "error calling uniq: " DEEP},
    {"{{ without (list $d) $e }}", "error calling without: " CYCLE, "error calling without: " DEEP},
    {"{{ deepCopy $d }}", "error calling deepCopy: " CYCLE, "error calling deepCopy: " DEEP},
    {"{{ mustDeepCopy $d }}", "error calling mustDeepCopy: " CYCLE,
     "error calling mustDeepCopy: " DEEP},
    {"{{ merge $d $e }}", "error calling merge: " CYCLE, "error calling merge: " DEEP},
    {"{{ mergeOverwrite $d $e }}", "error calling mergeOverwrite: " CYCLE,
     "error calling mergeOverwrite: " DEEP},
    {"{{ mustMerge $d $e }}", "error calling mustMerge: " CYCLE, "error calling mustMerge: " DEEP},
    {"{{ mustMergeOverwrite $d $e }}", "error calling mustMergeOverwrite: " CYCLE,
     "error calling mustMergeOverwrite: " DEEP},
    {"{{ parseIPv4Address $d }}", "error calling parseIPv4Address: unable to cast", NULL},
    {"{{ include \"show\" $d }}",
     "error calling include: template: show:1:3: executing \"show\" "
     "at <{{.}}>: " CYCLE,
     "error calling include: template: show:1:3: executing \"show\" at <{{.}}>: " DEEP},
    {"{{ tpl \"{{ . }}\" $d }}",
     "error calling tpl: template: gotpl:1:3: executing \"gotpl\" "
     "at <{{.}}>: " CYCLE,
     "error calling tpl: template: gotpl:1:3: executing \"gotpl\" at <{{.}}>: " DEEP},
    {"{{ pass $d }}", "error calling pass: " CYCLE, "error calling pass: " DEEP},
};

static int
ext_pass(void *ctx, struct json_object **out, struct json_object *const *args, size_t nargs)
{
    (void)ctx;
    *out = nargs ? json_object_get(args[0]) : NULL;
    return 0;
}

/* Renders @p prelude followed by each case's expression; @p deep picks the expectation. */
static void expect_walk_errors(const char *prelude, bool deep)
{
    co_template_funcs *f;
    co_template_funcs_new(&f, CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_RUNTIME |
                                  CO_TEMPLATE_FUNCS_HELM);
    assert_co_pass(co_template_funcs_add(f, "pass", 1, CO_TEMPLATE_NUMBERS_FLOAT64, ext_pass));
    for (size_t i = 0; i < CO_ARRAY_SIZE(walk_cases); i++) {
        const walk_case *c = &walk_cases[i];
        const char *want = deep ? c->deep : c->cycle;
        if (!want) {
            continue;
        }
        co_template_set *set;
        co_template_set_new(&set, f, NULL);
        static const char show[] = "{{ . }}";
        assert_co_pass(co_template_set_parse(set, "show", show, strlen(show)));
        char *text = co_xasprintf("%s%s", prelude, c->expr);
        assert_co_pass(co_template_set_parse(set, "t", text, strlen(text)));
        char *out = NULL;
        int rc = co_template_render(set, "t", NULL, CO_TEMPLATE_NUMBERS_FLOAT64, NULL, &out, NULL);
        if (rc == 0) {
            fail_msg("%s rendered instead of failing", c->expr);
        }
        assert_null(out);
        assert_contains(co_error_last(), want);
        free(text);
        co_template_set_free(set);
    }
    co_template_funcs_free(f);
}

static void test_template__self_referencing_dict_is_an_error(void **state)
{
    (void)state;
    expect_walk_errors("{{ $d := dict \"a\" 1 }}{{ $_ := set $d \"self\" $d }}"
                       "{{ $e := dict \"a\" 1 }}{{ $_ := set $e \"self\" $e }}",
                       false);
}

static void test_template__deep_nesting_is_an_error(void **state)
{
    (void)state;
    /* two values of 200000 levels take more than the default memory budget */
    co_budget_limits big = {.memory = 1024 * CO_MIB};
    co_budget_begin(&big);
    expect_walk_errors("{{ $d := dict }}{{ $e := dict }}{{ range until 200000 }}"
                       "{{ $d = dict \"a\" $d }}{{ $e = dict \"a\" $e }}{{ end }}",
                       true);
    /* lists nest the same way */
    int rc;
    char *out = render("{{ $l := list }}{{ range until 200000 }}{{ $l = list $l }}{{ end }}"
                       "{{ toString $l }}",
                       NULL, &rc);
    co_budget_end();
    assert_null(out);
    assert_contains(co_error_last(), "error calling toString: " DEEP);
}

/* Control structures nested in a template that calls itself: each call is within the call
 * depth and each template within the nesting cap, together they would exhaust the stack. */
static void test_template__deep_execution_is_an_error(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_int_equal(co_buf_puts(&b, "{{ define \"r\" }}"), 0);
    for (size_t i = 0; i < 900; i++) {
        assert_int_equal(co_buf_puts(&b, "{{ with . }}"), 0);
    }
    assert_int_equal(co_buf_puts(&b, "{{ template \"r\" . }}"), 0);
    for (size_t i = 0; i < 900; i++) {
        assert_int_equal(co_buf_puts(&b, "{{ end }}"), 0);
    }
    assert_int_equal(co_buf_puts(&b, "{{ end }}{{ template \"r\" 1 }}"), 0);
    int rc;
    char *out = render(co_buf_cstr(&b), NULL, &rc);
    co_buf_dispose(&b);
    assert_null(out);
    assert_int_equal(rc, CO_ETOOBIG);
    assert_contains(co_error_last(), "nested deeper than");
}

/* Renders @p text under a budget of @p memory bytes and @p cpu_ns; returns the code, the
 * message is in co_error_last(). */
static int render_budget(const char *text, size_t memory, int64_t cpu_ns)
{
    co_budget_limits l = {.cpu_ns = cpu_ns, .memory = memory};
    co_budget_begin(&l);
    int rc;
    char *out = render(text, NULL, &rc);
    co_budget_end();
    free(out);
    return rc;
}

static void test_template__budget_stops_a_doubling_list(void **state)
{
    (void)state;
    int rc = render_budget("{{ $l := list 1 }}{{ range until 64 }}{{ $l = concat $l $l }}{{ end }}"
                           "{{ len $l }}",
                           16 * CO_MIB, 0);
    assert_int_equal(rc, CO_ETOOBIG);
    assert_contains(co_error_last(), "error calling concat: render budget exceeded: more than 16 "
                                     "MiB of memory");
    /* strings double the same way */
    rc = render_budget("{{ $s := \"x\" }}{{ range until 64 }}{{ $s = print $s $s }}{{ end }}",
                       16 * CO_MIB, 0);
    assert_int_equal(rc, CO_ETOOBIG);
    assert_contains(co_error_last(), "render budget exceeded: more than 16 MiB of memory");
    /* and so does the output */
    rc = render_budget("{{ $s := repeat 1000000 \"x\" }}{{ range until 64 }}{{ $s }}{{ end }}",
                       16 * CO_MIB, 0);
    assert_int_equal(rc, CO_ETOOBIG);
    assert_contains(co_error_last(), "render budget exceeded: more than 16 MiB of memory");
}

static void test_template__budget_stops_an_endless_range(void **state)
{
    (void)state;
    int rc = render_budget("{{ $s := repeat 100000 \"x\" }}{{ range 1000000000 }}"
                           "{{ $_ := sha256sum $s }}{{ end }}",
                           0, 100 * CO_MILLISECOND);
    assert_int_equal(rc, CO_ETIMEOUT);
    assert_contains(co_error_last(), "render budget exceeded: more than 100ms of CPU time");
}

/* Values that share their parts: a list of the same list twice, sixty times over, is small but
 * would print, encode or compare 2^60 elements. Each walk stops on the output cap or the
 * budget. */
static void test_template__shared_values_stay_within_the_budget(void **state)
{
    (void)state;
    static const char dag[] =
        "{{ $a := list 1 2 }}{{ range until 60 }}{{ $a = list $a $a }}{{ end }}"
        "{{ $b := list 1 2 }}{{ range until 60 }}{{ $b = list $b $b }}{{ end }}";
    /* which limit is reached first depends on the machine: either stops the walk */
    static const char *const cases[] = {
        "{{ toString $a }}",      "{{ $a }}",          "{{ toJson $a }}",
        "{{ toYaml $a }}",        "{{ deepCopy $a }}", "{{ deepEqual $a $b }}",
        "{{ has $a (list $b) }}",
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        char *text = co_xasprintf("%s%s", dag, cases[i]);
        int rc = render_budget(text, 4 * CO_MIB, 100 * CO_MILLISECOND);
        free(text);
        if (rc != CO_ETOOBIG && rc != CO_ETIMEOUT) {
            fail_msg("%s: got %d (%s)", cases[i], rc, co_error_last());
        }
        assert_contains(co_error_last(), "render budget exceeded: more than ");
    }
}

/* fromJson decodes into a compact document whose size is reserved first: JSON of empty objects
 * would take 250 times its size as a json-c tree. */
static void test_template__from_json_is_within_the_budget(void **state)
{
    (void)state;
    int rc = render_budget("{{ $j := printf \"[%s{}]\" (repeat 300000 \"{},\") }}"
                           "{{ len (fromJson $j) }}",
                           4 * CO_MIB, 0);
    assert_int_equal(rc, CO_ETOOBIG);
    assert_contains(co_error_last(), "error calling fromJson: render budget exceeded");
    co_budget_limits l = {.memory = 64 * CO_MIB};
    co_budget_begin(&l);
    char *out = render("{{ $j := printf \"[%s{}]\" (repeat 3000 \"{},\") }}{{ len (fromJson $j) }} "
                       "{{ (fromJson \"{\\\"a\\\": [1, 2.5, \\\"x\\\", null, true]}\").a }}",
                       NULL, &rc);
    co_budget_end();
    assert_int_equal(rc, 0);
    assert_string_equal(out, "3001 [1 2.5 x <nil> true]");
    free(out);
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

static int
ext_shout(void *ctx, struct json_object **out, struct json_object *const *args, size_t nargs)
{
    (void)ctx;
    (void)args;
    (void)nargs;
    *out = json_object_new_string("SHOUT");
    return 0;
}

/* Renders @p text with the functions of @p f; returns the output (free) or NULL. */
static char *render_with(co_template_funcs *f, const char *text)
{
    co_template_set *set;
    co_template_set_new(&set, f, NULL);
    char *out = NULL;
    if (co_template_set_parse(set, "t", text, strlen(text)) != 0 ||
        co_template_render(set, "t", NULL, CO_TEMPLATE_NUMBERS_FLOAT64, NULL, &out, NULL) != 0) {
        out = NULL;
    }
    co_template_set_free(set);
    return out;
}

/* Function sets of the same groups start alike, whatever sets of other groups were made
 * before them, and what one set adds or replaces no other set sees. */
static void test_template__function_sets_are_independent(void **state)
{
    (void)state;
    co_template_funcs *helm, *plain, *sprig, *again, *env;
    co_template_funcs_new(&helm, CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_RUNTIME |
                                     CO_TEMPLATE_FUNCS_HELM);
    co_template_funcs_new(&plain, 0);
    co_template_funcs_new(&sprig, CO_TEMPLATE_FUNCS_SPRIG);
    assert_true(co_template_funcs_has(helm, "toToml"));
    assert_true(co_template_funcs_has(helm, "bitwiseAnd"));
    assert_true(co_template_funcs_has(helm, "upper"));
    assert_false(co_template_funcs_has(sprig, "toToml"));
    assert_false(co_template_funcs_has(sprig, "bitwiseAnd"));
    assert_true(co_template_funcs_has(sprig, "upper"));
    assert_false(co_template_funcs_has(plain, "upper"));
    assert_true(co_template_funcs_has(plain, "printf"));

    /* adding to one set, and replacing a function in it */
    assert_co_pass(
        co_template_funcs_add(sprig, "extra", 0, CO_TEMPLATE_NUMBERS_FLOAT64, ext_shout));
    assert_co_pass(
        co_template_funcs_add(sprig, "upper", 1, CO_TEMPLATE_NUMBERS_FLOAT64, ext_shout));
    co_template_funcs_new(&again, CO_TEMPLATE_FUNCS_SPRIG);
    assert_true(co_template_funcs_has(sprig, "extra"));
    assert_false(co_template_funcs_has(again, "extra"));
    assert_false(co_template_funcs_has(helm, "extra"));
    char *out = render_with(sprig, "{{ upper \"a\" }}");
    assert_non_null(out);
    assert_string_equal(out, "SHOUT");
    free(out);
    out = render_with(again, "{{ upper \"a\" }}");
    assert_non_null(out);
    assert_string_equal(out, "A");
    free(out);

    /* the groups that change behaviour stay the set's own */
    co_template_funcs_new(&env, CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_ENV);
    setenv("CO_TEST_FUNCS_ENV", "on", 1); // NOLINT(concurrency-mt-unsafe): single-threaded test
    out = render_with(env, "[{{ env \"CO_TEST_FUNCS_ENV\" }}]");
    assert_non_null(out);
    assert_string_equal(out, "[on]");
    free(out);
    out = render_with(again, "[{{ env \"CO_TEST_FUNCS_ENV\" }}]");
    assert_non_null(out);
    assert_string_equal(out, "[]");
    free(out);
    unsetenv("CO_TEST_FUNCS_ENV"); // NOLINT(concurrency-mt-unsafe): single-threaded test

    co_template_funcs_free(env);
    co_template_funcs_free(again);
    co_template_funcs_free(sprig);
    co_template_funcs_free(plain);
    co_template_funcs_free(helm);
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

/* A zone named or numbered in a parsed value is resolved against Local as Go's
 * ParseInLocation does (the oracle suite runs with a UTC Local, which has no zone to find):
 * a name in effect then, else any zone of that name, else a fixed zone; an offset keeps Local
 * when Local has that offset (and that name, if one was parsed) then. dateModify across the
 * March switch tells Local (which moves to CEST) from a fixed zone (which does not). The
 * expected values are Go's. */
static void test_template__to_date_resolves_zones_in_local(void **state)
{
    (void)state;
    setenv("TZ", "Europe/Berlin", 1); // NOLINT(concurrency-mt-unsafe): single-threaded test
    static const struct {
        const char *value;
        const char *layout;
        const char *want;
    } cases[] = {
        {"2020-07-01 12:00 CEST", "2006-01-02 15:04 MST", "2020-07-01 12:00:00 +0200 CEST"},
        /* CEST is not in effect in January: its offset is taken, the time shown in CET */
        {"2020-01-01 12:00 CEST", "2006-01-02 15:04 MST", "2020-01-01 11:00:00 +0100 CET"},
        {"1900-01-01 12:00 CEST", "2006-01-02 15:04 MST", "1900-01-01 11:00:00 +0100 CET"},
        {"2020-07-01 12:00 LMT", "2006-01-02 15:04 MST", "2020-07-01 13:06:32 +0200 CEST"},
        {"2020-01-01 12:00 PST", "2006-01-02 15:04 MST", "2020-01-01 12:00:00 +0000 PST"},
        {"2020-07-01 12:00 UTC", "2006-01-02 15:04 MST", "2020-07-01 12:00:00 +0000 UTC"},
        {"2020-07-01 12:00", "2006-01-02 15:04", "2020-07-01 12:00:00 +0200 CEST"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        char text[160];
        snprintf(text, sizeof(text), "{{ toDate \"%s\" \"%s\" }}", cases[i].layout, cases[i].value);
        expect(text, cases[i].want);
    }
    static const struct {
        const char *value;
        const char *layout;
        const char *want;
    } moved[] = {
        {"2020-03-28 12:00 CET", "2006-01-02 15:04 MST", "2020-03-30 13:00:00 +0200 CEST"},
        {"2020-03-28 12:00 CET +0100", "2006-01-02 15:04 MST -0700",
         "2020-03-30 13:00:00 +0200 CEST"},
        {"2020-03-28 12:00 CEST +0100", "2006-01-02 15:04 MST -0700",
         "2020-03-30 12:00:00 +0100 CEST"},
        {"2020-03-28 12:00 +0100", "2006-01-02 15:04 -0700", "2020-03-30 13:00:00 +0200 CEST"},
        {"2020-03-28 12:00 +0200", "2006-01-02 15:04 -0700", "2020-03-30 12:00:00 +0200 +0200"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(moved); i++) {
        char text[200];
        snprintf(text, sizeof(text), "{{ toDate \"%s\" \"%s\" | dateModify \"48h\" }}",
                 moved[i].layout, moved[i].value);
        expect(text, moved[i].want);
    }
    /* MSK was +0400 from 2011 to 2014: the zone in effect decides, not the first of the name */
    setenv("TZ", "Europe/Moscow", 1); // NOLINT(concurrency-mt-unsafe): single-threaded test
    expect("{{ toDate \"2006-01-02 15:04 MST\" \"2012-07-01 12:00 MSK\" }}",
           "2012-07-01 12:00:00 +0400 MSK");
    expect("{{ toDate \"2006-01-02 15:04 MST\" \"2020-07-01 12:00 MSK\" }}",
           "2020-07-01 12:00:00 +0300 MSK");
    unsetenv("TZ"); // NOLINT(concurrency-mt-unsafe): single-threaded test
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
        cmocka_unit_test(test_template__to_json_escapes_strings_as_go),
        cmocka_unit_test(test_template__values_are_float64_like_go),
        cmocka_unit_test(test_template__parse_error_names_line),
        cmocka_unit_test(test_template__exec_error_has_context),
        cmocka_unit_test(test_template__missingkey_modes),
        cmocka_unit_test(test_template__strip_no_value),
        cmocka_unit_test(test_template__custom_delimiters),
        cmocka_unit_test(test_template__recursion_is_capped),
        cmocka_unit_test(test_template__steps_are_capped),
        cmocka_unit_test(test_template__nesting_is_capped),
        cmocka_unit_test(test_template__self_referencing_dict_is_an_error),
        cmocka_unit_test(test_template__deep_nesting_is_an_error),
        cmocka_unit_test(test_template__deep_execution_is_an_error),
        cmocka_unit_test(test_template__budget_stops_a_doubling_list),
        cmocka_unit_test(test_template__budget_stops_an_endless_range),
        cmocka_unit_test(test_template__shared_values_stay_within_the_budget),
        cmocka_unit_test(test_template__from_json_is_within_the_budget),
        cmocka_unit_test(test_template__source_is_capped),
        cmocka_unit_test(test_template__unknown_template_is_not_found),
        cmocka_unit_test(test_template__caller_functions),
        cmocka_unit_test(test_template__function_sets_are_independent),
        cmocka_unit_test(test_template__renders_concurrently),
        cmocka_unit_test(test_template__local_zone_follows_tz),
        cmocka_unit_test(test_template__to_date_resolves_zones_in_local),
        cmocka_unit_test(test_template__now_reads_the_clock),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
