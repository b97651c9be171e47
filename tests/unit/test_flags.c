/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for command-line flag parsing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/flags.h"
#include "tests/support/test_support.h"

typedef struct opts {
    int verbose;
    const char *addr;
    long long n;
    co_flag_list sets;
} opts;

static int parse(opts *o, int *next, int argc, const char **argv)
{
    const co_flag flags[] = {
        {"verbose", CO_FLAG_BOOL, &o->verbose, NULL, "be loud"},
        {"addr", CO_FLAG_STRING, &o->addr, "ADDR", "address"},
        {"n", CO_FLAG_INT, &o->n, "N", "count"},
        {"set", CO_FLAG_LIST, &o->sets, "K=V", "repeatable"},
    };
    return co_flags_parse(next, flags, CO_ARRAY_SIZE(flags), argc, (char **)argv);
}

static void test_flags__all_forms(void **state)
{
    (void)state;
    opts o = {0};
    int next = 0;
    const char *argv[] = {"prog", "--verbose", "--addr=:8080", "-n",     "12", "--set",
                          "a=1",  "-set=b=2",  "rest",         "--addr", "x"};
    assert_co_pass(parse(&o, &next, (int)CO_ARRAY_SIZE(argv), argv));
    assert_int_equal(o.verbose, 1);
    assert_string_equal(o.addr, ":8080");
    assert_int_equal(o.n, 12);
    assert_int_equal(o.sets.len, 2);
    assert_string_equal(o.sets.items[0], "a=1");
    assert_string_equal(o.sets.items[1], "b=2");
    assert_int_equal(next, 8);
    co_flag_list_dispose(&o.sets);
}

static void test_flags__bool_values_and_double_dash(void **state)
{
    (void)state;
    opts o = {.verbose = 1};
    int next = 0;
    const char *argv[] = {"prog", "--verbose=false", "--", "--addr"};
    assert_co_pass(parse(&o, &next, 4, argv));
    assert_int_equal(o.verbose, 0);
    assert_int_equal(next, 3);
    const char *bad[] = {"prog", "--verbose=maybe"};
    assert_co_fail_with(CO_EINVALID, parse(&o, &next, 2, bad));
    assert_contains(co_error_last(), "--verbose");
}

static void test_flags__errors_name_the_flag(void **state)
{
    (void)state;
    opts o = {0};
    int next = 0;
    const char *unknown[] = {"prog", "--nope=1"};
    assert_co_fail_with(CO_EINVALID, parse(&o, &next, 2, unknown));
    assert_string_equal(co_error_last(), "unknown flag: --nope");
    const char *missing[] = {"prog", "--addr"};
    assert_co_fail_with(CO_EINVALID, parse(&o, &next, 2, missing));
    assert_string_equal(co_error_last(), "flag --addr needs a value");
    const char *badint[] = {"prog", "--n=12x"};
    assert_co_fail_with(CO_EINVALID, parse(&o, &next, 2, badint));
    assert_string_equal(co_error_last(), "flag --n: invalid integer \"12x\"");
    const char *overflow[] = {"prog", "--n=99999999999999999999"};
    assert_co_fail_with(CO_EINVALID, parse(&o, &next, 2, overflow));
}

static void test_flags__usage_lists_every_flag(void **state)
{
    (void)state;
    int v = 0;
    const char *out = NULL;
    const co_flag flags[] = {
        {"verbose", CO_FLAG_BOOL, &v, NULL, "be loud"},
        {"o", CO_FLAG_STRING, &out, "FORMAT", "output format"},
        {"addr", CO_FLAG_STRING, &out, NULL, "address"},
    };
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    co_flags_usage(f, flags, CO_ARRAY_SIZE(flags));
    assert_int_equal(fclose(f), 0);
    assert_string_equal(text, "  --verbose\n"
                              "        be loud\n"
                              "  -o FORMAT\n"
                              "        output format\n"
                              "  --addr VALUE\n"
                              "        address\n");
    free(text);
}

static void test_flags__go_bool_spellings(void **state)
{
    (void)state;
    const char *yes[] = {"1", "t", "T", "true", "TRUE", "True"};
    const char *no[] = {"0", "f", "F", "false", "FALSE", "False"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(yes); i++) {
        opts o = {0};
        int next = 0;
        char *a = co_xasprintf("-verbose=%s", yes[i]);
        const char *argv[] = {"prog", a};
        assert_co_pass(parse(&o, &next, 2, argv));
        assert_int_equal(o.verbose, 1);
        free(a);
        o.verbose = 1;
        a = co_xasprintf("--verbose=%s", no[i]);
        argv[1] = a;
        assert_co_pass(parse(&o, &next, 2, argv));
        assert_int_equal(o.verbose, 0);
        free(a);
    }
}

/* controller-runtime's Deployments use Go's single-dash forms: -kubeconfig, -leader-elect */
static void test_flags__single_dash_as_go_flag(void **state)
{
    (void)state;
    opts o = {0};
    int next = 0;
    const char *argv[] = {"prog", "-addr", ":9090", "-verbose", "-n=3", "-set", "k=v"};
    assert_co_pass(parse(&o, &next, (int)CO_ARRAY_SIZE(argv), argv));
    assert_string_equal(o.addr, ":9090");
    assert_int_equal(o.verbose, 1);
    assert_int_equal(o.n, 3);
    assert_int_equal(o.sets.len, 1);
    assert_int_equal(next, (int)CO_ARRAY_SIZE(argv));
    co_flag_list_dispose(&o.sets);
}

static int parse_family(co_flag_list *other, int *verbose, int *next, int argc, const char **argv)
{
    const co_flag flags[] = {
        {"zap-known", CO_FLAG_BOOL, verbose, NULL, "known"},
        {"zap-*", CO_FLAG_LIST, other, "VALUE", "the rest"},
    };
    return co_flags_parse(next, flags, CO_ARRAY_SIZE(flags), argc, (char **)argv);
}

static void test_flags__family_takes_the_rest_of_a_prefix(void **state)
{
    (void)state;
    co_flag_list other = {0};
    int verbose = 0;
    int next = 0;
    const char *argv[] = {"prog",       "--zap-known", "--zap-new=1", "-zap-sep",  "value",
                          "--zap-flag", "--zap-last",  "--",          "positional"};
    assert_co_pass(parse_family(&other, &verbose, &next, (int)CO_ARRAY_SIZE(argv), argv));
    assert_int_equal(verbose, 1);
    assert_int_equal(other.len, 4);
    assert_string_equal(other.items[0], "--zap-new=1");
    assert_string_equal(other.items[1], "-zap-sep");
    assert_string_equal(other.items[2], "--zap-flag");
    assert_string_equal(other.items[3], "--zap-last");
    assert_int_equal(next, 8);
    co_flag_list_dispose(&other);
    /* the prefix alone and other prefixes stay unknown */
    const char *bad[] = {"prog", "--zapx"};
    assert_co_fail_with(CO_EINVALID, parse_family(&other, &verbose, &next, 2, bad));
    assert_string_equal(co_error_last(), "unknown flag: --zapx");
    co_flag_list_dispose(&other);
}

typedef struct logging_case {
    const char *args[6];
    co_log_level level;
    co_log_format format;
    size_t warnings;
} logging_case;

static int resolve_logging(const char *const *args,
                           co_log_level *level,
                           co_log_format *format,
                           char ***warnings)
{
    co_flags_logging lf = {0};
    const co_flag flags[] = {CO_FLAGS_LOGGING(&lf)};
    const char *argv[8] = {"prog"};
    int argc = 1;
    for (; args[argc - 1]; argc++) {
        argv[argc] = args[argc - 1];
    }
    int next = 0;
    int rc = co_flags_parse(&next, flags, CO_ARRAY_SIZE(flags), argc, (char **)argv);
    if (rc == 0) {
        assert_int_equal(next, argc);
        rc = co_flags_logging_resolve(level, format, warnings, &lf);
    }
    co_flags_logging_dispose(&lf);
    return rc;
}

static size_t count_strv(char **v)
{
    size_t n = 0;
    while (v && v[n]) {
        n++;
    }
    return n;
}

static void test_flags__zap_flags_are_log_aliases(void **state)
{
    (void)state;
    const logging_case cases[] = {
        {{NULL}, CO_LOG_INFO, CO_LOG_FORMAT_TEXT, 0},
        {{"--zap-log-level=debug"}, CO_LOG_DEBUG, CO_LOG_FORMAT_TEXT, 0},
        {{"--zap-log-level", "ERROR"}, CO_LOG_ERROR, CO_LOG_FORMAT_TEXT, 0},
        {{"--zap-log-level=panic"}, CO_LOG_ERROR, CO_LOG_FORMAT_TEXT, 0},
        {{"--zap-log-level=1"}, CO_LOG_DEBUG, CO_LOG_FORMAT_TEXT, 0},
        {{"--zap-log-level=5"}, CO_LOG_TRACE, CO_LOG_FORMAT_TEXT, 0},
        {{"--zap-encoder=json"}, CO_LOG_INFO, CO_LOG_FORMAT_JSON, 0},
        {{"--zap-encoder=console"}, CO_LOG_INFO, CO_LOG_FORMAT_TEXT, 0},
        {{"--zap-devel"}, CO_LOG_DEBUG, CO_LOG_FORMAT_TEXT, 0},
        {{"--zap-devel", "--zap-log-level=info", "--zap-encoder=json"},
         CO_LOG_INFO,
         CO_LOG_FORMAT_JSON,
         0},
        /* our own flags win over the aliases */
        {{"--zap-log-level=debug", "--log-level=warn", "--zap-encoder=json", "--log-format=text"},
         CO_LOG_WARN,
         CO_LOG_FORMAT_TEXT,
         0},
        {{"-zap-log-level=info", "-log-format", "json"}, CO_LOG_INFO, CO_LOG_FORMAT_JSON, 0},
        /* accepted without effect, with a warning */
        {{"--zap-stacktrace-level=error"}, CO_LOG_INFO, CO_LOG_FORMAT_TEXT, 1},
        {{"--zap-time-encoding=epoch"}, CO_LOG_INFO, CO_LOG_FORMAT_TEXT, 1},
        {{"--zap-time-encoding=rfc3339nano"}, CO_LOG_INFO, CO_LOG_FORMAT_TEXT, 0},
        {{"--zap-sampling=false", "--zap-unheard-of", "x"}, CO_LOG_INFO, CO_LOG_FORMAT_TEXT, 2},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        co_log_level level = CO_LOG_TRACE;
        co_log_format format = CO_LOG_FORMAT_JSON;
        char **warnings = NULL;
        int rc = resolve_logging(cases[i].args, &level, &format, &warnings);
        if (rc < 0) {
            fail_msg("case %zu: %s", i, co_error_last());
        }
        if (level != cases[i].level || format != cases[i].format ||
            count_strv(warnings) != cases[i].warnings) {
            fail_msg("case %zu: level %d format %d warnings %zu", i, (int)level, (int)format,
                     count_strv(warnings));
        }
        co_flags_strv_free(warnings);
    }
}

static void test_flags__zap_flag_values_are_checked(void **state)
{
    (void)state;
    const struct {
        const char *args[3];
        const char *message;
    } cases[] = {
        {{"--zap-log-level=verbose"}, "flag --zap-log-level: invalid log level \"verbose\""},
        {{"--zap-log-level=0"}, "flag --zap-log-level: invalid log level \"0\""},
        {{"--zap-encoder=logfmt"}, "flag --zap-encoder: invalid encoder value \"logfmt\""},
        {{"--zap-stacktrace-level=debug"}, "flag --zap-stacktrace-level: invalid stacktrace"},
        {{"--zap-time-encoding=unix"}, "flag --zap-time-encoding: invalid time-encoding"},
        {{"--log-level=loud"}, "flag --log-level: invalid log level \"loud\""},
        {{"--zap-devel=maybe"}, "flag --zap-devel: invalid boolean \"maybe\""},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        co_log_level level = CO_LOG_TRACE;
        co_log_format format = CO_LOG_FORMAT_JSON;
        char **warnings = (char **)&cases[i];
        assert_co_fail_with(CO_EINVALID,
                            resolve_logging(cases[i].args, &level, &format, &warnings));
        assert_contains(co_error_last(), cases[i].message);
        /* outputs are untouched on failure */
        assert_int_equal(level, CO_LOG_TRACE);
        assert_ptr_equal(warnings, (char **)&cases[i]);
    }
}

/* ---- a daemon's command line ---------------------------------------------------------------- */

typedef struct daemon_flags {
    const char *addr;
    int help, version;
    co_flags_logging logging;
} daemon_flags;

static void daemon_usage(FILE *out, const co_flag *flags, size_t n)
{
    fprintf(out, "Usage: demo [flags]\n");
    co_flags_usage(out, flags, n);
}

/* Runs co_flags_parse_command() on @p argv; *out_text and *err_text get what was printed. */
static int
run_command(daemon_flags *d, int argc, const char **argv, char **out_text, char **err_text)
{
    memset(d, 0, sizeof(*d));
    const co_flag flags[] = {
        {"addr", CO_FLAG_STRING, &d->addr, "ADDR", "address"},
        CO_FLAGS_LOGGING(&d->logging),
        {"version", CO_FLAG_BOOL, &d->version, NULL, "print the version and exit"},
        {"help", CO_FLAG_BOOL, &d->help, NULL, "print this help and exit"},
    };
    co_flags_command cmd = {"demo",   flags,       CO_ARRAY_SIZE(flags),
                            &d->help, &d->version, daemon_usage};
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(out_text, &olen);
    FILE *err = open_memstream(err_text, &elen);
    assert_non_null(out);
    assert_non_null(err);
    int status = co_flags_parse_command(&cmd, argc, (char **)argv, out, err);
    fclose(out);
    fclose(err);
    return status;
}

static void test_flags__daemon_command_line(void **state)
{
    (void)state;
    daemon_flags d;
    char *o = NULL, *e = NULL;

    const char *go_on[] = {"demo", "--addr=:80", "--log-level", "debug"};
    assert_int_equal(run_command(&d, 4, go_on, &o, &e), -1);
    assert_string_equal(d.addr, ":80");
    assert_string_equal(o, "");
    assert_string_equal(e, "");
    co_flags_logging_dispose(&d.logging);
    free(o);
    free(e);

    const char *help[] = {"demo", "--help"};
    assert_int_equal(run_command(&d, 2, help, &o, &e), 0);
    assert_contains(o, "Usage: demo [flags]");
    assert_contains(o, "--addr");
    assert_string_equal(e, "");
    free(o);
    free(e);

    const char *version[] = {"demo", "--version"};
    assert_int_equal(run_command(&d, 2, version, &o, &e), 0);
    assert_true(strncmp(o, "demo ", 5) == 0);
    assert_string_equal(e, "");
    free(o);
    free(e);

    const char *bad[] = {"demo", "--nope"};
    assert_int_equal(run_command(&d, 2, bad, &o, &e), CO_FLAGS_EXIT_USAGE);
    assert_contains(e, "demo: ");
    assert_contains(e, "nope");
    assert_contains(e, "Usage: demo [flags]");
    assert_string_equal(o, "");
    free(o);
    free(e);

    const char *extra[] = {"demo", "--addr", "x", "stray"};
    assert_int_equal(run_command(&d, 4, extra, &o, &e), CO_FLAGS_EXIT_USAGE);
    assert_string_equal(e, "demo: unexpected argument \"stray\"\n");
    free(o);
    free(e);
}

static void test_flags__logging_setup_refuses_bad_values_and_disposes(void **state)
{
    (void)state;
    co_flags_logging lf = {0};
    lf.log_level = "loud";
    assert_co_fail_with(CO_EINVALID, co_flags_logging_setup(&lf, "test"));
    assert_contains(co_error_last(), "loud");
    co_error_clear();

    co_flags_logging ok = {0};
    ok.log_level = "error";
    ok.log_format = "json";
    assert_co_pass(co_flags_logging_setup(&ok, "test"));
    assert_false(co_log_enabled(CO_LOG_INFO));
    assert_true(co_log_enabled(CO_LOG_ERROR));
    assert_null(ok.zap_other.items);
    co_log_setup("test", CO_LOG_INFO, CO_LOG_FORMAT_TEXT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flags__all_forms),
        cmocka_unit_test(test_flags__bool_values_and_double_dash),
        cmocka_unit_test(test_flags__errors_name_the_flag),
        cmocka_unit_test(test_flags__usage_lists_every_flag),
        cmocka_unit_test(test_flags__go_bool_spellings),
        cmocka_unit_test(test_flags__single_dash_as_go_flag),
        cmocka_unit_test(test_flags__family_takes_the_rest_of_a_prefix),
        cmocka_unit_test(test_flags__zap_flags_are_log_aliases),
        cmocka_unit_test(test_flags__zap_flag_values_are_checked),
        cmocka_unit_test(test_flags__daemon_command_line),
        cmocka_unit_test(test_flags__logging_setup_refuses_bad_values_and_disposes),
    };
    return cmocka_run_group_tests_name("flags", tests, NULL, NULL);
}
