/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for postBuild substitution.
 *
 * Sources of the expectations:
 * - table_cases: drone/envsubst v1.0.3's own tests (eval_test.go TestExpand, funcs_test.go),
 *   which take their examples from the Advanced Bash-Scripting Guide's parameter substitution
 *   chapter; the facts (input, variables, output) are restated here.
 * - the differential test: the real library. tests/oracle/build.sh builds a small Go program
 *   against Debian's golang-github-drone-envsubst-dev 1.0.3 (the version the original operator
 *   pins) and every case, including thousands of generated ones and malformed inputs, must give
 *   the same output or the same error message. Cases where the library panics must give an
 *   error here.
 * - strict mode, caps and the NUL byte: this project's own rules (no original to compare with).
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/digest.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/budget.h"
#include "co/util/duration.h"
#include "co/render/envsubst.h"
#include "co/util/error.h"
#include "tests/support/test_support.h"

typedef struct kv {
    const char *name;
    const char *value;
} kv;

typedef struct table_case {
    kv vars[2];
    const char *in;
    const char *want;
} table_case;

static const table_case table_cases[] = {
    {{{NULL, NULL}}, "abcdEFGH28ij", "abcdEFGH28ij"},
    {{{"var01", "abcdEFGH28ij"}}, "${#var01}", "12"},
    {{{"var01", "abcdEFGH28ij"}}, "${var01^}", "AbcdEFGH28ij"},
    {{{"var01", "abcdEFGH28ij"}}, "${var01^^}", "ABCDEFGH28IJ"},
    {{{"var01", "ABCDEFGH28IJ"}}, "${var01,}", "aBCDEFGH28IJ"},
    {{{"var01", "ABCDEFGH28IJ"}}, "${var01,,}", "abcdefgh28ij"},
    {{{"path_name", "/home/bozo/ideas/thoughts.for.today"}},
     "${path_name:11}",
     "ideas/thoughts.for.today"},
    {{{"path_name", "/home/bozo/ideas/thoughts.for.today"}}, "${path_name:11:5}", "ideas"},
    {{{"var", "abc"}}, "${var=xyz}", "abc"},
    {{{NULL, NULL}}, "${var=xyz}", "xyz"},
    {{{"default_var", "foo"}}, "something ${var=${default_var}}", "something foo"},
    {{{"default_var", "foo1"}}, "foo: ${var=${default_var}-suffix}", "foo: foo1-suffix"},
    {{{"default_var", "foo1"}},
     "foo: ${var=prefix${default_var}-suffix}",
     "foo: prefixfoo1-suffix"},
    {{{NULL, NULL}}, "${var:=xyz}", "xyz"},
    {{{"stringZ", "abcABC123ABCabc"}}, "${stringZ/%abc/XYZ}", "abcABC123ABCXYZ"},
    {{{"stringZ", "abcABC123ABCabc"}}, "${stringZ/#abc/XYZ}", "XYZABC123ABCabc"},
    {{{"stringZ", "abcABC123ABCabc"}}, "${stringZ//abc/xyz}", "xyzABC123ABCxyz"},
    {{{"stringZ", "abcABC123ABCabc"}}, "${stringZ/abc/xyz}", "xyzABC123ABCabc"},
    {{{"filename", "bash.string.txt"}}, "${filename#*.}", "string.txt"},
    {{{"filename", "path/to/file"}}, "${filename#*/}", "to/file"},
    {{{"filename", "/path/to/file"}}, "${filename#*/}", "path/to/file"},
    {{{"filename", "bash.string.txt"}}, "${filename##*.}", "txt"},
    {{{"filename", "path/to/file"}}, "${filename##*/}", "file"},
    {{{"filename", "/path/to/file"}}, "${filename##*/}", "file"},
    {{{"filename", "bash.string.txt"}}, "${filename%.*}", "bash.string"},
    {{{"filename", "bash.string.txt"}}, "${filename%%.*}", "bash"},
    {{{"var01", "abcdEFGH28ij"}}, "${var=${var01^^}}", "ABCDEFGH28IJ"},
    {{{"var01", "abcdEFGH28ij"}}, "$${var01}", "${var01}"},
    {{{"var01", "abcdEFGH28ij"}},
     "some text ${var01}$${var$${var01}$var01${var01}",
     "some text abcdEFGH28ij${var${var01}$var01abcdEFGH28ij"},
    {{{"default_var", "foo"}}, "something $${var=${default_var}}", "something ${var=foo}"},
    {{{"stringZ", "foo/bar"}}, "${stringZ/\\//-}", "foo-bar"},
    {{{"stringZ", "foo/bar/baz"}}, "${stringZ//\\//-}", "foo-bar-baz"},
    {{{"stringZ", "foo.bar"}}, "${stringZ/./}", "foobar"},
    /* funcs_test.go */
    {{{"s", "123456789123456789"}}, "${s:0:8}", "12345678"},
    {{{"s", "123456789123456789"}}, "${s:1:8}", "23456789"},
    {{{"s", "123456789123456789"}}, "${s:9}", "123456789"},
    {{{"s", "123456789123456789"}}, "${s:9:50}", "123456789"},
    /* funcs_test.go calls the function directly; in a template a negative position must come
     * from a variable, because "${s:-" is the default form. */
    {{{"s", "123456789123456789"}, {"m", "-3"}}, "${s:${m}:2}", "78"},
    {{{"s", "123456789123456789"}, {"m", "-300"}}, "${s:${m}:3}", "123"},
    {{{"s", "123456789123456789"}}, "${s:-3:2}", "123456789123456789"},
    {{{"s", "12345678"}}, "${s:9:1}", ""},
    {{{"s", ""}, {"d", "Hola Mundo"}}, "${s=${d}}", "Hola Mundo"},
    /* The behaviour note of the original: $VAR without braces stays. */
    {{{"VAR", "x"}}, "$VAR ${VAR}", "$VAR x"},
};

static co_envsubst_vars *make_vars(const kv *vars, size_t n)
{
    co_envsubst_vars *v = NULL;
    v = co_envsubst_vars_new();
    for (size_t i = 0; i < n && vars[i].name; i++) {
        assert_co_pass(co_envsubst_vars_set(v, vars[i].name, vars[i].value, strlen(vars[i].value)));
    }
    return v;
}

static void test_envsubst__drone_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < CO_ARRAY_SIZE(table_cases); i++) {
        const table_case *c = &table_cases[i];
        co_envsubst_vars *vars = make_vars(c->vars, 2);
        co_buf out = CO_BUF_INIT(1 << 20);
        co_error_clear();
        int rc = co_envsubst_eval(&out, c->in, strlen(c->in), vars, 0);
        if (rc != 0 || strcmp(co_buf_cstr(&out), c->want) != 0) {
            fail_msg("%s: got rc %d \"%s\" (%s), want \"%s\"", c->in, rc, co_buf_cstr(&out),
                     co_error_last(), c->want);
        }
        co_buf_dispose(&out);
        co_envsubst_vars_free(vars);
    }
}

static void expect_error(const char *in, const char *message)
{
    co_buf out = CO_BUF_INIT(1024);
    assert_co_pass(co_buf_puts(&out, "kept"));
    assert_co_fail_with(CO_EINVALID, co_envsubst_eval(&out, in, strlen(in), NULL, 0));
    assert_contains(co_error_last(), message);
    assert_string_equal(co_buf_cstr(&out), "kept");
    co_buf_dispose(&out);
}

static void test_envsubst__malformed_inputs(void **state)
{
    (void)state;
    expect_error("${", "unable to parse variable name");
    expect_error("${}", "unable to parse variable name");
    expect_error("a ${ b}", "unable to parse variable name");
    expect_error("${v", "missing closing brace");
    expect_error("${v-d}", "missing closing brace");
    expect_error("${v+d}", "missing closing brace");
    expect_error("${#}", "bad substitution");
    expect_error("${#v:1}", "bad substitution");
    expect_error("${v:", "bad substitution");
    expect_error("${v:1:2", "bad substitution");
    expect_error("${v/a}", "bad substitution");
    expect_error("${v#a${x}}", "bad substitution");
    expect_error("${v^^^}", "bad substitution");
    expect_error("${v=", "unable to parse substitution within function");
    expect_error("${v/", "unable to parse substitution within function");
    co_buf out = CO_BUF_INIT(64);
    assert_co_fail_with(CO_EINVALID, co_envsubst_eval(&out, "a\0${b}", 6, NULL, 0));
    assert_contains(co_error_last(), "NUL");
    co_buf_dispose(&out);
    /* Nesting is capped. */
    co_buf deep = CO_BUF_INIT(SIZE_MAX);
    for (int i = 0; i < CO_MAX_ENVSUBST_NESTING + 2; i++) {
        assert_co_pass(co_buf_puts(&deep, "${a="));
    }
    expect_error(co_buf_cstr(&deep), "nested deeper");
    co_buf_dispose(&deep);
}

static void test_envsubst__strict_mode(void **state)
{
    (void)state;
    kv defs[] = {{"SET", "yes"}, {"EMPTY", ""}};
    co_envsubst_vars *vars = make_vars(defs, 2);
    co_buf out = CO_BUF_INIT(1024);
    const char *ok = "${SET} ${EMPTY} ${UNSET:=d} ${UNSET=e} ${UNSET:-f} $UNSET $${UNSET}";
    assert_co_pass(co_envsubst_eval(&out, ok, strlen(ok), vars, CO_ENVSUBST_STRICT));
    assert_string_equal(co_buf_cstr(&out), "yes  d e f $UNSET ${UNSET}");
    static const char *const bad_refs[] = {"${UNSET}", "x ${UNSET^^}", "${#UNSET}",
                                           "${SET:=${UNSET}}", "${UNSET/a/b}"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad_refs); i++) {
        co_buf_reset(&out);
        assert_co_fail_with(CO_EINVALID, co_envsubst_eval(&out, bad_refs[i], strlen(bad_refs[i]),
                                                          vars, CO_ENVSUBST_STRICT));
        assert_contains(co_error_last(), "variable \"UNSET\" is not defined");
        /* Without strict mode the same input expands the undefined variable to "". */
        assert_co_pass(co_envsubst_eval(&out, bad_refs[i], strlen(bad_refs[i]), vars, 0));
    }
    co_buf_dispose(&out);
    co_envsubst_vars_free(vars);
}

static void test_envsubst__variables_and_caps(void **state)
{
    (void)state;
    co_envsubst_vars *vars = NULL;
    vars = co_envsubst_vars_new();
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "V%d", i);
        assert_co_pass(co_envsubst_vars_set(vars, name, name, strlen(name)));
    }
    /* Later wins: substituteFrom Secrets in order, then inline substitute. */
    assert_co_pass(co_envsubst_vars_set(vars, "V7", "inline", 6));
    assert_int_equal(co_envsubst_vars_count(vars), 1000);
    size_t len = 0;
    assert_string_equal(co_envsubst_vars_get(vars, "V7", &len), "inline");
    assert_int_equal(len, 6);
    assert_string_equal(co_envsubst_vars_get(vars, "V999", NULL), "V999");
    assert_null(co_envsubst_vars_get(vars, "V1000", NULL));
    assert_co_fail_with(CO_EINVALID, co_envsubst_vars_set(vars, "", "x", 1));

    /* Binary-safe values. */
    assert_co_pass(co_envsubst_vars_set(vars, "BIN", "a\0b", 3));
    co_buf out = CO_BUF_INIT(16);
    assert_co_pass(co_envsubst_eval(&out, "${BIN}", 6, vars, 0));
    assert_int_equal(out.len, 3);
    assert_memory_equal(out.ptr, "a\0b", 3);

    /* The output cap is the buffer's. */
    co_buf_reset(&out);
    const char *in = "${V100}${V100}${V100}${V100}${V100}";
    assert_co_fail_with(CO_ETOOBIG, co_envsubst_eval(&out, in, strlen(in), vars, 0));
    assert_int_equal(out.len, 0);
    co_buf_dispose(&out);
    co_envsubst_vars_free(vars);
}

/* ---- the differential test against drone/envsubst ---------------------------------------- */

typedef struct gen_case {
    char in[96];
} gen_case;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static const kv oracle_vars[] = {
    {"v", "abcABCabc"},   {"x", "a/b.c"}, {"w", ""},    {"n", "3"},
    {"u", "héllo wörld"}, {"é", "ü"},     {"p", "*.c"}, {"m", "-2"},
};

static const char *const fixed_cases[] = {
    "${v:${n}}",   "${v:${m}}",      "${v:1:${n}}", "${v:0:-1}",    "${v:a}",       "${v:1:b}",
    "${v:é}",      "${u^}",          "${u^^}",      "${u,,}",       "${é}",         "${é^^}",
    "${#u}",       "${x#*/}",        "${x%/*}",     "${x##*[./]}",  "${x%%[.]*}",   "${x#[}",
    "${x#\\}",     "${v//${w}/-}",   "${v/${w}/-}", "${v/#${w}/-}", "${v/%${w}/-}", "${v/#abc}",
    "${v/%abc}",   "${w:-${v}}",     "${w:?x}",     "${w:+x}",      "${w=a${v}b}",  "${w=a$b}",
    "${w=a$$b}",   "a\\\\b\\/c\\d",  "\\$",         "$$$",          "$$${v}",       "${v,^}",
    "${v^,}",      "}}{{$",          "${v}}",       "${v:1::2}",    "${p}",         "${v#${p}}",
    "${v/a/${x}}", "${v//\\\\/x}",   "${v/\\/}",    "${u:2:3}",     "${v::}",       "${v:-}",
    "${v=}",       "${x//\\//\\\\}", "${v//b/}",    "\xff${v}\xfe", "${v#\xff}",    "${u%?}",
    "${u#?}",
};

static const char *const tokens[] = {
    "$", "{", "}", "${", "v", "x", "w", "n", ":", "#", "%", "/",  "\\", ",",   "^", "=",    "-",
    "?", "+", "*", "a",  "b", ".", "[", "]", "é", "1", "0", "$$", " ",  "${v", "}", "${x:", "${w="};

/* Runs the oracle over @p n inputs; returns the responses (json array) or NULL when the
 * oracle cannot be built here. */
static struct json_object *run_oracle(char **inputs, size_t n)
{
    char *dir = co_test_tmpdir();
    char *req = co_xasprintf("%s/req", dir), *resp = co_xasprintf("%s/resp", dir);
    char *path_file = co_xasprintf("%s/oracle", dir);
    char *build = co_xasprintf("%s/tests/oracle/build.sh", CO_SOURCE_ROOT);
    struct json_object *result = NULL;
    pid_t pid;
    int status = 0;

    /* Build (or find) the oracle; its path is printed on stdout. */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, path_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char *bargv[] = {build, (char *)"envsubst", NULL};
    if (posix_spawn(&pid, build, &fa, NULL, bargv, environ) != 0 || waitpid(pid, &status, 0) < 0 ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        goto done;
    }
    posix_spawn_file_actions_destroy(&fa);
    char *oracle = co_test_read_file(path_file, NULL);
    oracle[strcspn(oracle, "\n")] = '\0';

    co_buf lines = CO_BUF_INIT(SIZE_MAX);
    struct json_object *vars = json_object_new_object();
    for (size_t i = 0; i < CO_ARRAY_SIZE(oracle_vars); i++) {
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        assert_co_pass(co_base64_encode_buf(&b, oracle_vars[i].value, strlen(oracle_vars[i].value),
                                            CO_BASE64_STD));
        json_object_object_add(vars, oracle_vars[i].name, json_object_new_string(co_buf_cstr(&b)));
        co_buf_dispose(&b);
    }
    for (size_t i = 0; i < n; i++) {
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        assert_co_pass(co_base64_encode_buf(&b, inputs[i], strlen(inputs[i]), CO_BASE64_STD));
        struct json_object *o = json_object_new_object();
        json_object_object_add(o, "vars", json_object_get(vars));
        json_object_object_add(o, "in", json_object_new_string(co_buf_cstr(&b)));
        assert_co_pass(co_buf_printf(&lines, "%s\n",
                                     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)));
        json_object_put(o);
        co_buf_dispose(&b);
    }
    json_object_put(vars);
    co_test_write_file(req, lines.ptr, lines.len);
    co_buf_dispose(&lines);

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, req, O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, resp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char *oargv[] = {oracle, NULL};
    int spawned = posix_spawn(&pid, oracle, &fa, NULL, oargv, environ);
    posix_spawn_file_actions_destroy(&fa);
    free(oracle);
    if (spawned != 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fail_msg("the envsubst oracle failed");
    }
    char *text = co_test_read_file(resp, NULL);
    result = json_object_new_array();
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_object_array_add(result, json_tokener_parse(line));
    }
    free(text);
    assert_int_equal(json_object_array_length(result), n);
done:
    free(build);
    free(path_file);
    free(req);
    free(resp);
    co_test_rmtree(dir);
    free(dir);
    return result;
}

static void test_envsubst__same_as_drone_envsubst(void **state)
{
    (void)state;
    size_t nfixed = CO_ARRAY_SIZE(fixed_cases), ngen = 4000, n = nfixed + ngen;
    char **inputs = co_xcalloc(n, sizeof(*inputs));
    for (size_t i = 0; i < nfixed; i++) {
        inputs[i] = co_xstrdup(fixed_cases[i]);
    }
    for (size_t i = nfixed; i < n; i++) {
        gen_case c = {{0}};
        size_t count = 1 + rng() % 9;
        for (size_t k = 0; k < count; k++) {
            const char *t = tokens[rng() % CO_ARRAY_SIZE(tokens)];
            if (strlen(c.in) + strlen(t) < sizeof(c.in)) {
                strcat(c.in, t); // NOLINT(clang-analyzer-security.insecureAPI.strcpy)
            }
        }
        inputs[i] = co_xstrdup(c.in);
    }
    struct json_object *answers = run_oracle(inputs, n);
    if (!answers) {
        for (size_t i = 0; i < n; i++) {
            free(inputs[i]);
        }
        free(inputs);
        fail_msg("the drone/envsubst oracle cannot run: tests/oracle/build.sh envsubst needs "
                 "golang-go and golang-github-drone-envsubst-dev (make deps installs them)");
    }
    co_envsubst_vars *vars = make_vars(oracle_vars, CO_ARRAY_SIZE(oracle_vars));
    size_t errors = 0, panics = 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *a = json_object_array_get_idx(answers, i), *o = NULL, *e = NULL;
        assert_true(json_object_object_get_ex(a, "out", &o));
        assert_true(json_object_object_get_ex(a, "err", &e));
        const char *want_err = json_object_get_string(e);
        unsigned char *want = NULL;
        size_t want_len = 0;
        const char *ob = json_object_get_string(o);
        assert_co_pass(co_base64_decode_alloc(&want, &want_len, ob, strlen(ob), CO_BASE64_STD));
        co_buf out = CO_BUF_INIT(1 << 20);
        co_error_clear();
        int rc = co_envsubst_eval(&out, inputs[i], strlen(inputs[i]), vars, 0);
        if (want_err[0]) {
            errors++;
            bool panic = strncmp(want_err, "panic:", 6) == 0;
            panics += panic;
            if (rc == 0 || (!panic && strncmp(co_error_last(), want_err, strlen(want_err)) != 0)) {
                fail_msg("input \"%s\": drone/envsubst fails with \"%s\", we return %d \"%s\" (%s)",
                         inputs[i], want_err, rc, co_buf_cstr(&out), co_error_last());
            }
        } else if (rc != 0 || out.len != want_len || memcmp(out.ptr, want, want_len) != 0) {
            fail_msg("input \"%s\": drone/envsubst gives \"%.*s\", we return %d \"%s\" (%s)",
                     inputs[i], (int)want_len, want, rc, co_buf_cstr(&out), co_error_last());
        }
        free(want);
        co_buf_dispose(&out);
    }
    /* The generated inputs must exercise both outcomes. */
    assert_true(errors > n / 10);
    assert_true(errors < n - n / 10);
    print_message("# %zu cases compared with drone/envsubst: %zu errors (%zu panics there)\n", n,
                  errors, panics);
    co_envsubst_vars_free(vars);
    json_object_put(answers);
    for (size_t i = 0; i < n; i++) {
        free(inputs[i]);
    }
    free(inputs);
}

/* Input of a million escapes: each removal moved the rest of the input (minutes for a few
 * megabytes); an escaped "${" stays literal as before. */
static void test_envsubst__many_escapes(void **state)
{
    (void)state;
    enum { N = 1000000 };
    co_buf in = CO_BUF_INIT(SIZE_MAX);
    for (int i = 0; i < N; i++) {
        assert_co_pass(co_buf_puts(&in, i % 2 ? "$$" : "\\\\"));
    }
    assert_co_pass(co_buf_puts(&in, "$${V} ${V}"));
    kv defs[] = {{"V", "v"}, {NULL, NULL}};
    co_envsubst_vars *vars = make_vars(defs, 1);
    co_buf out = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_envsubst_eval(&out, in.ptr, in.len, vars, 0));
    assert_int_equal(out.len, N + strlen("${V} v"));
    for (size_t i = 0; i < N; i++) {
        if (out.ptr[i] != (i % 2 ? '$' : '\\')) {
            fail_msg("byte %zu: %c", i, out.ptr[i]);
        }
    }
    assert_string_equal(out.ptr + N, "${V} v");
    co_buf_dispose(&out);
    co_buf_dispose(&in);
    co_envsubst_vars_free(vars);
}

/* ${v#pattern} tries the pattern against every prefix of the value, as drone does: the work
 * counts against the render's CPU time. */
static void test_envsubst__prefix_patterns_count_against_the_budget(void **state)
{
    (void)state;
    char *value = co_xmalloc(200001);
    memset(value, 'a', 200000);
    value[200000] = '\0';
    kv defs[] = {{"V", value}, {NULL, NULL}};
    co_envsubst_vars *vars = make_vars(defs, 1);
    co_buf out = CO_BUF_INIT(SIZE_MAX);
    static const char in[] = "${V#*a*a*a*b}";
    co_budget_limits l = {.cpu_ns = 100 * CO_MILLISECOND};
    co_budget_begin(&l);
    int rc = co_envsubst_eval(&out, in, strlen(in), vars, 0);
    co_budget_end();
    assert_int_equal(rc, CO_ETIMEOUT);
    assert_contains(co_error_last(), "render budget exceeded: more than 100ms of CPU time");
    co_buf_dispose(&out);
    co_envsubst_vars_free(vars);
    free(value);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_envsubst__drone_table),
        cmocka_unit_test(test_envsubst__malformed_inputs),
        cmocka_unit_test(test_envsubst__strict_mode),
        cmocka_unit_test(test_envsubst__variables_and_caps),
        cmocka_unit_test(test_envsubst__same_as_drone_envsubst),
        cmocka_unit_test(test_envsubst__many_escapes),
        cmocka_unit_test(test_envsubst__prefix_patterns_count_against_the_budget),
    };
    return cmocka_run_group_tests_name("envsubst", tests, NULL, NULL);
}
