/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the YAML module. The central check compares co_yaml with the real thing:
 * tests/oracle/yamltojson (sigs.k8s.io/yaml's YAMLToJSON, built from Debian's Go packages by
 * tests/oracle/build.sh) converts the same table of tricky scalars and documents
 * (tests/fixtures/yaml/), and both JSON outputs must be identical. The other tests cover
 * streams, line numbers, errors, caps and the emitter's round trip.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/json/json.h"
#include "co/json/yaml.h"
#include "tests/support/test_support.h"

static struct json_object *yparse(const char *text)
{
    struct json_object *obj = NULL;
    assert_co_pass(co_yaml_parse(&obj, text, strlen(text), 0));
    return obj;
}

/* Parses @p yaml and compares the canonical JSON with @p want. */
static void assert_yaml_json(const char *yaml, const char *want)
{
    struct json_object *obj = yparse(yaml);
    char *got = co_json_dumps(obj, CO_JSON_CANONICAL);
    if (!got || strcmp(got, want) != 0) {
        fail_msg("YAML %s gave %s, want %s", yaml, got ? got : co_error_last(), want);
    }
    free(got);
    json_object_put(obj);
}

static void assert_yaml_fails(int code, const char *yaml, const char *msg)
{
    struct json_object *obj = (struct json_object *)0x1;
    co_error_clear();
    int rc = co_yaml_parse(&obj, yaml, strlen(yaml), 0);
    if (rc != code) {
        fail_msg("YAML %s returned %d (%s), want %d", yaml, rc, co_error_last(), code);
    }
    assert_ptr_equal(obj, (struct json_object *)0x1);
    assert_contains(co_error_last(), msg);
}

/* ---- comparison with sigs.k8s.io/yaml ------------------------------------------------------ */

typedef struct cases {
    char **items;
    size_t len, cap;
} cases;

static void cases_add(cases *c, char *text)
{
    if (c->len == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->items = co_xreallocarray(c->items, c->cap, sizeof(*c->items));
    }
    c->items[c->len++] = text;
}

/* Builds the cases: each scalar line as a value and as a key, then each document. */
static void load_cases(cases *c)
{
    char *scalars = co_test_fixture("yaml/scalars.txt", NULL);
    char *save = NULL;
    for (char *line = strtok_r(scalars, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "##", 2) == 0) {
            continue;
        }
        cases_add(c, co_xasprintf("v: %s\n", line));
        cases_add(c, co_xasprintf("%s: v\n", line));
    }
    free(scalars);

    char *docs = co_test_fixture("yaml/documents.txt", NULL);
    co_buf cur = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&cur, ""));
    char *p = docs;
    while (*p) {
        char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n == 4 && strncmp(p, "%%%%", 4) == 0) {
            cases_add(c, co_buf_take(&cur, NULL));
        } else if (!(n >= 2 && strncmp(p, "##", 2) == 0)) {
            assert_co_pass(co_buf_put(&cur, p, n));
            assert_co_pass(co_buf_putc(&cur, '\n'));
        }
        p += n + (nl ? 1 : 0);
    }
    cases_add(c, co_buf_take(&cur, NULL));
    free(docs);
}

/* Runs @p cmd and returns its whole standard output (free with free()). */
static char *run_capture(const char *cmd, int *status)
{
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    co_buf out = CO_BUF_INIT(64 * CO_MIB);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        assert_co_pass(co_buf_put(&out, chunk, n));
    }
    *status = pclose(f);
    return co_buf_take(&out, NULL);
}

/* Go 1.19 (the oracle) writes \b and \f as \u0008 and \u000c; Go >= 1.22, like us, does not. */
static void normalize_go_escapes(char *s)
{
    static const char *const from[] = {"\\u0008", "\\u000c"};
    static const char to[] = {'b', 'f'};
    for (size_t k = 0; k < 2; k++) {
        char *p;
        while ((p = strstr(s, from[k])) != NULL) {
            p[1] = to[k];
            memmove(p + 2, p + 6, strlen(p + 6) + 1);
        }
    }
}

static void test_yaml__matches_sigs_k8s_yaml(void **state)
{
    (void)state;
    int status = 0;
    char *cmd = co_xasprintf("'%s/tests/oracle/build.sh' yamltojson", CO_SOURCE_ROOT);
    char *oracle = run_capture(cmd, &status);
    free(cmd);
    if (status != 0 || !oracle[0]) {
        fail_msg("cannot build the yamltojson oracle (tests/oracle/build.sh): status %d", status);
    }
    oracle[strcspn(oracle, "\n")] = '\0';

    cases c = {0};
    load_cases(&c);
    assert_true(c.len > 400);

    char *dir = co_test_tmpdir();
    char *input = co_xasprintf("%s/cases", dir);
    co_buf all = CO_BUF_INIT(SIZE_MAX);
    for (size_t i = 0; i < c.len; i++) {
        assert_co_pass(co_buf_put(&all, c.items[i], strlen(c.items[i]) + (i + 1 < c.len)));
    }
    co_test_write_file(input, all.ptr, all.len);
    co_buf_dispose(&all);

    cmd = co_xasprintf("'%s' < '%s'", oracle, input);
    char *expected = run_capture(cmd, &status);
    free(cmd);
    assert_int_equal(status, 0);

    size_t mismatches = 0, both_ok = 0, both_err = 0;
    char *save = NULL;
    char *line = strtok_r(expected, "\n", &save);
    for (size_t i = 0; i < c.len; i++, line = strtok_r(NULL, "\n", &save)) {
        assert_non_null(line);
        normalize_go_escapes(line);
        struct json_object *obj = NULL;
        char *mine = NULL;
        co_error_clear();
        if (co_yaml_parse(&obj, c.items[i], strlen(c.items[i]), 0) == 0) {
            char *j = co_json_dumps(obj, CO_JSON_CANONICAL);
            mine = j ? co_xasprintf("ok %s", j) : co_xasprintf("err %s", co_error_last());
            free(j);
            json_object_put(obj);
        } else {
            mine = co_xasprintf("err %s", co_error_last());
        }
        int go_ok = strncmp(line, "ok ", 3) == 0, my_ok = strncmp(mine, "ok ", 3) == 0;
        if (!go_ok && !my_ok) {
            both_err++;
        } else if (strcmp(line, mine) == 0) {
            both_ok++;
        } else {
            mismatches++;
            print_message("# case %zu: %s#   sigs.k8s.io/yaml: %s\n#   co_yaml:          %s\n", i,
                          c.items[i], line, mine);
        }
        free(mine);
    }
    print_message("# %zu cases: %zu identical, %zu rejected by both, %zu different\n", c.len,
                  both_ok, both_err, mismatches);
    assert_int_equal(mismatches, 0);
    assert_true(both_ok > both_err);

    co_test_rmtree(dir);
    free(dir);
    free(input);
    free(expected);
    free(oracle);
    for (size_t i = 0; i < c.len; i++) {
        free(c.items[i]);
    }
    free(c.items);
}

/* ---- resolution details (beyond the oracle table) ------------------------------------------ */

static void test_yaml__scalar_types(void **state)
{
    (void)state;
    struct json_object *obj = yparse("a: 012\nb: 0x1F\nc: 1e3\nd: 9223372036854775808\n"
                                     "e: '123'\nf: yes\ng: ~\nh: 2024-01-01\ni: .inf\n");
    assert_true(json_object_is_type(co_json_get(obj, "a", NULL), json_type_int));
    assert_int_equal(json_object_get_int64(co_json_get(obj, "a", NULL)), 10);
    assert_int_equal(json_object_get_int64(co_json_get(obj, "b", NULL)), 31);
    assert_true(json_object_is_type(co_json_get(obj, "c", NULL), json_type_double));
    assert_true(json_object_get_uint64(co_json_get(obj, "d", NULL)) == 9223372036854775808ULL);
    assert_string_equal(json_object_get_string(co_json_get(obj, "e", NULL)), "123");
    assert_true(json_object_get_boolean(co_json_get(obj, "f", NULL)));
    assert_true(json_object_object_get_ex(obj, "g", NULL));
    assert_null(co_json_get(obj, "g", NULL));
    assert_string_equal(json_object_get_string(co_json_get(obj, "h", NULL)), "2024-01-01");
    assert_true(isinf(json_object_get_double(co_json_get(obj, "i", NULL))));
    json_object_put(obj);
}

static void test_yaml__deliberate_differences_from_go_yaml(void **state)
{
    (void)state;
    /* json-c keys are C strings: a key with a NUL byte is refused, not truncated */
    assert_yaml_fails(CO_EINVALID, "\"a\\0b\": v\n", "mapping key contains a NUL character");
    /* go-yaml silently reads "[]: v" as the empty list; libyaml sees a list used as a key */
    assert_yaml_fails(CO_EINVALID, "[]: v\n", "invalid map key");
    /* go-yaml reads the first document only; silently dropping the rest would lose data */
    assert_yaml_fails(CO_EINVALID, "a: 1\n---\nb: 2\n",
                      "line 2: expected a single YAML document, found another one");
    /* libyaml knows YAML 1.2's \/ escape, go-yaml v2 does not */
    assert_yaml_json("a: \"\\/\"\n", "{\"a\":\"/\"}");
}

static void test_yaml__merge_keys_follow_go_yaml_v2(void **state)
{
    (void)state;
    /* explicit keys after << win, keys before it are overridden (go-yaml v2 order) */
    assert_yaml_json("b: &b {a: 1, c: 1}\nx: {a: 10, <<: *b, c: 3}\n",
                     "{\"b\":{\"a\":1,\"c\":1},\"x\":{\"a\":1,\"c\":3}}");
    assert_yaml_json("b: &b {a: 1}\nd: &d {a: 2, e: 2}\nx: {<<: [*b, *d]}\n",
                     "{\"b\":{\"a\":1},\"d\":{\"a\":2,\"e\":2},\"x\":{\"a\":1,\"e\":2}}");
    assert_yaml_fails(CO_EINVALID, "x: {<<: [1]}\n",
                      "map merge requires map or sequence of maps as the value");
    assert_yaml_fails(CO_EINVALID, "s: &s [1]\nx:\n  <<: *s\n", "line 3, column 3: map merge");
}

/* ---- streams -------------------------------------------------------------------------------- */

static void test_yaml__stream_documents_and_lines(void **state)
{
    (void)state;
    const char *text = "# leading comment\n"
                       "a: 1\n" /* line 2 */
                       "---\n"  /* line 3 */
                       "# only a comment\n"
                       "---\n" /* line 5: empty document */
                       "b: 2\n"
                       "...\n"
                       "---\n" /* line 8 */
                       "~\n"
                       "--- c\n" /* line 10 */
                       "---\n"   /* line 11 */
                       "- x\n";
    co_yaml_docs docs = CO_YAML_DOCS_INIT;
    assert_co_pass(co_yaml_parse_stream(&docs, text, strlen(text), 0));
    assert_int_equal(docs.len, 6);
    static const int lines[] = {2, 3, 5, 8, 10, 11};
    for (size_t i = 0; i < docs.len; i++) {
        assert_int_equal(docs.items[i].line, lines[i]);
    }
    assert_null(docs.items[1].value);
    assert_string_equal(json_object_get_string(docs.items[4].value), "c");
    co_yaml_docs_dispose(&docs);
    assert_null(docs.items);
    co_yaml_docs_dispose(NULL);

    assert_co_pass(co_yaml_parse_stream(&docs, text, strlen(text), CO_YAML_SKIP_NULL));
    assert_int_equal(docs.len, 4);
    assert_int_equal(docs.items[0].line, 2);
    assert_int_equal(docs.items[1].line, 5);
    assert_int_equal(docs.items[2].line, 10);
    assert_int_equal(docs.items[3].line, 11);
    co_yaml_docs_dispose(&docs);

    assert_co_pass(co_yaml_parse_stream(&docs, "", 0, 0));
    assert_int_equal(docs.len, 0);
    assert_co_pass(co_yaml_parse_stream(&docs, "# nothing\n", 10, 0));
    assert_int_equal(docs.len, 0);

    /* anchors do not cross documents */
    co_error_clear();
    assert_int_equal(co_yaml_parse_stream(&docs, "a: &x 1\n---\nb: *x\n", 18, 0), CO_EINVALID);
    assert_contains(co_error_last(), "line 3, column 4: unknown anchor 'x'");
    assert_int_equal(docs.len, 0);
}

static void test_yaml__single_document_rules(void **state)
{
    (void)state;
    struct json_object *obj = (struct json_object *)0x1;
    assert_co_pass(co_yaml_parse(&obj, "", 0, 0));
    assert_null(obj);
    assert_yaml_json("---\na: 1\n---\n", "{\"a\":1}");
    assert_yaml_json("---\n---\na: 1\n", "{\"a\":1}");
}

/* ---- errors, caps, malformed input ---------------------------------------------------------- */

static void test_yaml__errors_carry_line_and_column(void **state)
{
    (void)state;
    assert_yaml_fails(CO_EINVALID, "a: 1\nb:\n  - x\n - y\n",
                      "line 4, column 2: did not find expected key (while parsing a block "
                      "mapping at line 1, column 1)");
    assert_yaml_fails(CO_EINVALID, "a: \"open\n",
                      "line 2, column 1: found unexpected end of stream");
    assert_yaml_fails(CO_EINVALID, "a:\n\tb: 1\n", "line 2, column 1: found character that cannot");
    assert_yaml_fails(CO_EINVALID, "x: 1\ny: !!int abc\n",
                      "line 2, column 4: cannot decode !!str `abc` as a !!int");
    assert_yaml_fails(CO_EINVALID, "x: [1, 2\n", "did not find expected ',' or ']'");
    assert_yaml_fails(CO_EINVALID, "? [a]\n: 1\n", "invalid map key");
}

static void test_yaml__invalid_utf8_is_refused(void **state)
{
    (void)state;
    assert_yaml_fails(CO_EINVALID, "a: b\nc: \xff\n", "line 2, column 4: invalid leading UTF-8");
    assert_yaml_fails(CO_EINVALID, "a: \xc3\n", "UTF-8");
    assert_yaml_fails(CO_EINVALID, "a: \xed\xa0\x80\n", "line 1, column 4");
}

static void test_yaml__truncated_documents_fail_cleanly(void **state)
{
    (void)state;
    const char *doc = "apiVersion: v1\nkind: List\nitems:\n- {a: [1, \"x\"], b: &q 'y'}\n"
                      "- c: *q\n  d: |\n    text\n";
    size_t len = strlen(doc);
    size_t failures = 0;
    for (size_t cut = 0; cut <= len; cut++) {
        struct json_object *obj = NULL;
        co_error_clear();
        int rc = co_yaml_parse(&obj, doc, cut, 0);
        if (rc == 0) {
            json_object_put(obj); /* a prefix can be a complete document */
        } else {
            assert_int_equal(rc, CO_EINVALID);
            assert_contains(co_error_last(), "line ");
            failures++;
        }
    }
    assert_true(failures > 5);
}

static void test_yaml__nesting_cap(void **state)
{
    (void)state;
    size_t n = CO_MAX_NESTING;
    char *deep = co_xmalloc(2 * n + 3);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    struct json_object *obj = yparse(deep);
    json_object_put(obj);
    memset(deep, '[', n + 1);
    memset(deep + n + 1, ']', n + 1);
    deep[2 * n + 2] = '\0';
    assert_yaml_fails(CO_EINVALID, deep, "nesting deeper than 512 levels");
    free(deep);

    /* an alias can nest a deep anchor deeper still */
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&b, "a: &a "));
    for (size_t i = 0; i < 300; i++) {
        assert_co_pass(co_buf_putc(&b, '['));
    }
    for (size_t i = 0; i < 300; i++) {
        assert_co_pass(co_buf_putc(&b, ']'));
    }
    assert_co_pass(co_buf_puts(&b, "\nb: "));
    for (size_t i = 0; i < 300; i++) {
        assert_co_pass(co_buf_putc(&b, '['));
    }
    assert_co_pass(co_buf_puts(&b, "*a"));
    for (size_t i = 0; i < 300; i++) {
        assert_co_pass(co_buf_putc(&b, ']'));
    }
    assert_co_pass(co_buf_puts(&b, "\n"));
    assert_yaml_fails(CO_EINVALID, co_buf_cstr(&b), "alias 'a' makes the document nest deeper");
    co_buf_dispose(&b);
}

static void test_yaml__billion_laughs_is_capped(void **state)
{
    (void)state;
    const char *lol = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
                      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                      "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                      "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                      "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                      "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
                      "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                      "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n";
    assert_yaml_fails(CO_ETOOBIG, lol, "aliases expand to more than 100000 nodes");
    /* moderate aliasing is fine */
    struct json_object *obj = yparse("a: &a [1, 2]\nb: [*a, *a, *a]\n");
    assert_int_equal(json_object_array_length(co_json_get(obj, "b", NULL)), 3);
    json_object_put(obj);
}

/*
 * Many anchors: an alias finds the newest anchor of its name through a table; a scan back
 * through every anchor made 40,000 anchors and as many aliases take seconds. A redefined name
 * means its earlier value until the redefinition, and no anchor outlives its document.
 */
static void test_yaml__many_anchors_each_alias_finds_the_newest(void **state)
{
    (void)state;
    const int n = 5000;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&b, "anchors:\n"));
    for (int i = 0; i < n; i++) {
        assert_co_pass(co_buf_printf(&b, "- &a%d v%d\n", i, i));
    }
    assert_co_pass(co_buf_puts(&b, "before: [*a7, *a0]\nredefined: &a7 {new: 1}\naliases:\n"));
    for (int i = n - 1; i >= 0; i--) {
        assert_co_pass(co_buf_printf(&b, "- *a%d\n", i));
    }
    co_yaml_docs docs = CO_YAML_DOCS_INIT;
    assert_co_pass(co_yaml_parse_stream(&docs, co_buf_cstr(&b), b.len, 0));
    assert_int_equal(docs.len, 1);
    struct json_object *root = docs.items[0].value;
    struct json_object *aliases = co_json_get(root, "aliases", NULL);
    assert_int_equal(json_object_array_length(aliases), n);
    for (int i = 0; i < n; i++) {
        struct json_object *v = json_object_array_get_idx(aliases, (size_t)(n - 1 - i));
        if (i == 7) {
            assert_true(json_object_is_type(v, json_type_object));
            continue;
        }
        char want[16];
        snprintf(want, sizeof(want), "v%d", i);
        assert_string_equal(json_object_get_string(v), want);
    }
    assert_string_equal(json_object_get_string(co_json_get(root, "before", "0", NULL)), "v7");
    assert_string_equal(json_object_get_string(co_json_get(root, "before", "1", NULL)), "v0");
    co_yaml_docs_dispose(&docs);

    /* a second document does not see the first one's anchors, however many */
    assert_co_pass(co_buf_puts(&b, "---\nagain: *a1\n"));
    co_error_clear();
    assert_int_equal(co_yaml_parse_stream(&docs, co_buf_cstr(&b), b.len, 0), CO_EINVALID);
    assert_contains(co_error_last(), "unknown anchor 'a1'");
    co_buf_dispose(&b);
}

static void test_yaml__size_cap(void **state)
{
    (void)state;
    struct json_object *obj = NULL;
    co_yaml_docs docs = CO_YAML_DOCS_INIT;
    /* the length is checked before anything is read */
    assert_co_fail_with(CO_ETOOBIG, co_yaml_parse(&obj, "a: 1", CO_MAX_DOCUMENT + 1, 0));
    assert_co_fail_with(CO_ETOOBIG, co_yaml_parse_stream(&docs, "a", CO_MAX_DOCUMENT + 1, 0));
    assert_contains(co_error_last(), "exceeds the limit");
}

static void test_yaml__unique_keys_option(void **state)
{
    (void)state;
    const char *text = "a: 1\nb: 2\na: 3\n";
    struct json_object *obj = NULL;
    assert_co_pass(co_yaml_parse(&obj, text, strlen(text), 0));
    assert_int_equal(json_object_get_int(co_json_get(obj, "a", NULL)), 3);
    json_object_put(obj);
    co_error_clear();
    assert_int_equal(co_yaml_parse(&obj, text, strlen(text), CO_YAML_UNIQUE_KEYS), CO_EINVALID);
    assert_contains(co_error_last(), "line 3, column 1: mapping key \"a\" already defined");
    /* keys brought in by a merge may be overridden */
    text = "b: &b {a: 1}\nx: {<<: *b, a: 2}\n";
    assert_co_pass(co_yaml_parse(&obj, text, strlen(text), CO_YAML_UNIQUE_KEYS));
    json_object_put(obj);
}

static void test_yaml__core_bools_option(void **state)
{
    (void)state;
    const char *text = "a: yes\nb: On\ny: n\nc: TRUE\nd: false\ne: !!bool yes\nf: \"true\"\n";
    struct json_object *obj = NULL;
    assert_co_pass(co_yaml_parse(&obj, text, strlen(text), CO_YAML_CORE_BOOLS));
    assert_string_equal(json_object_get_string(co_json_get(obj, "a", NULL)), "yes");
    assert_string_equal(json_object_get_string(co_json_get(obj, "b", NULL)), "On");
    assert_string_equal(json_object_get_string(co_json_get(obj, "y", NULL)), "n");
    assert_true(json_object_is_type(co_json_get(obj, "c", NULL), json_type_boolean));
    assert_true(json_object_get_boolean(co_json_get(obj, "c", NULL)));
    assert_true(json_object_is_type(co_json_get(obj, "d", NULL), json_type_boolean));
    /* an explicit tag still decides */
    assert_true(json_object_is_type(co_json_get(obj, "e", NULL), json_type_boolean));
    assert_true(json_object_is_type(co_json_get(obj, "f", NULL), json_type_string));
    json_object_put(obj);
    /* without the option, YAML 1.1 words are booleans (and the key y is "true") */
    assert_co_pass(co_yaml_parse(&obj, text, strlen(text), 0));
    assert_true(json_object_is_type(co_json_get(obj, "a", NULL), json_type_boolean));
    assert_non_null(co_json_get(obj, "true", NULL));
    json_object_put(obj);
}

/* ---- emitting ------------------------------------------------------------------------------- */

static void assert_emits(const struct json_object *obj, unsigned flags, const char *want)
{
    char *got = co_yaml_dumps(obj, flags);
    if (!got) {
        fail_msg("emit failed: %s", co_error_last());
        return;
    }
    assert_string_equal(got, want);
    free(got);
}

/* Emits @p obj, reads it back and checks it is equal. */
static void assert_round_trip(const struct json_object *obj)
{
    char *text = co_yaml_dumps(obj, 0);
    if (!text) {
        fail_msg("emit failed: %s", co_error_last());
        return;
    }
    struct json_object *back = NULL;
    co_error_clear();
    if (co_yaml_parse(&back, text, strlen(text), 0) != 0 || !co_json_equal(obj, back)) {
        char *j = co_json_dumps(obj, 0);
        fail_msg("%s emitted as\n%sdoes not read back (%s)", j, text, co_error_last());
    }
    json_object_put(back);
    free(text);
}

static void test_yaml__emit_block_style_and_quoting(void **state)
{
    (void)state;
    struct json_object *obj = NULL;
    const char *json = "{\"kind\":\"ConfigMap\",\"data\":{\"enabled\":\"yes\","
                       "\"port\":\"8080\",\"empty\":\"\",\"n\":\"null\",\"e\":\"1e3\","
                       "\"d\":\"2024-01-01\",\"t\":\"1:20\",\"m\":\"<<\",\"c\":\"a: b\","
                       "\"h\":\"#x\",\"s\":\" lead\",\"x\":\"plain text\"},"
                       "\"list\":[1,2.5,true,null,{\"a\":[]},{}],\"big\":1e6}";
    assert_co_pass(co_json_parse(&obj, json, strlen(json)));
    assert_emits(obj, 0,
                 "kind: ConfigMap\n"
                 "data:\n"
                 "  enabled: \"yes\"\n"
                 "  port: \"8080\"\n"
                 "  empty: \"\"\n"
                 "  \"n\": \"null\"\n" /* n alone is the boolean false */
                 "  e: \"1e3\"\n"
                 "  d: \"2024-01-01\"\n"
                 "  t: \"1:20\"\n"
                 "  m: \"<<\"\n"
                 "  c: 'a: b'\n"
                 "  h: '#x'\n"
                 "  s: ' lead'\n"
                 "  x: plain text\n"
                 "list:\n"
                 "- 1\n"
                 "- 2.5\n"
                 "- true\n"
                 "- null\n"
                 "- a: []\n"
                 "- {}\n"
                 "big: 1e+06\n");
    assert_round_trip(obj);
    json_object_put(obj);
}

static void test_yaml__emit_sorted_keys(void **state)
{
    (void)state;
    struct json_object *obj = yparse("b: 1\na: {d: 1, c: 2}\n");
    assert_emits(obj, 0, "b: 1\na:\n  d: 1\n  c: 2\n");
    assert_emits(obj, CO_YAML_SORTED, "a:\n  c: 2\n  d: 1\nb: 1\n");
    json_object_put(obj);
}

static void test_yaml__emit_multiline_strings_readably(void **state)
{
    (void)state;
    struct json_object *obj = json_object_new_object();
    json_object_object_add(obj, "script", json_object_new_string("#!/bin/sh\necho hi\n"));
    json_object_object_add(obj, "nofinal", json_object_new_string("a\nb"));
    json_object_object_add(obj, "keep", json_object_new_string("a\n\n"));
    json_object_object_add(obj, "indented", json_object_new_string("  x\ny\n"));
    json_object_object_add(obj, "crlf", json_object_new_string("a\r\nb\n"));
    json_object_object_add(obj, "trailing", json_object_new_string("a \nb\n"));
    char *text = co_yaml_dumps(obj, 0);
    assert_non_null(text);
    assert_contains(text, "script: |\n  #!/bin/sh\n  echo hi\n");
    assert_contains(text, "nofinal: |-\n  a\n  b\n");
    assert_contains(text, "keep: |+\n  a\n\n");
    assert_contains(text, "crlf: \"a\\r\\nb\\n\"\n");
    free(text);
    assert_round_trip(obj);
    json_object_put(obj);
}

static void test_yaml__emit_round_trips_tricky_strings(void **state)
{
    (void)state;
    /* every line of the scalar table, and some more, as a string value and as a key */
    char *scalars = co_test_fixture("yaml/scalars.txt", NULL);
    static const char *const extra[] = {
        "",
        " ",
        "a ",
        " a",
        "-",
        "- a",
        "? a",
        ": a",
        "a:",
        "a: b",
        "a #b",
        "#",
        "'",
        "\"",
        "[",
        "]",
        "{",
        "}",
        ",",
        "&a",
        "*a",
        "!a",
        "|",
        ">",
        "%",
        "@",
        "`",
        "---",
        "...",
        "--- a",
        "\t",
        "a\tb",
        "\x01",
        "\x7f",
        "\xc2\x85",
        "\xe2\x80\xa8",
        "\xef\xbb\xbf",
        "\xf0\x9f\x98\x80",
        "\\",
        "\\n",
        "0o",
        "1_",
        "_1",
        "+.5",
        "-.5e3",
        "0x1p-2",
        "1:2:3",
        "12:30:45.5",
        "y",
        "Y",
        "~",
        "<<",
    };
    struct json_object *obj = json_object_new_object();
    struct json_object *list = json_object_new_array();
    char *save = NULL;
    for (char *line = strtok_r(scalars, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_object_array_add(list, json_object_new_string(line));
        json_object_object_add(obj, line, json_object_new_string(line));
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(extra); i++) {
        json_object_array_add(list, json_object_new_string(extra[i]));
        json_object_object_add(obj, extra[i], json_object_new_string(extra[i]));
    }
    json_object_array_add(list, json_object_new_string_len("a\0b", 3));
    json_object_object_add(obj, "list", list);
    assert_round_trip(obj);
    json_object_put(obj);
    free(scalars);
}

static void test_yaml__emit_round_trips_oracle_documents(void **state)
{
    (void)state;
    cases c = {0};
    load_cases(&c);
    size_t tried = 0;
    for (size_t i = 0; i < c.len; i++) {
        struct json_object *obj = NULL;
        if (co_yaml_parse(&obj, c.items[i], strlen(c.items[i]), 0) == 0) {
            /* NaN never equals itself; everything else must come back equal */
            char *j = co_json_dumps(obj, 0);
            if (j || !strstr(co_error_last(), "NaN")) {
                assert_round_trip(obj);
                tried++;
            }
            free(j);
            json_object_put(obj);
        }
        free(c.items[i]);
    }
    free(c.items);
    assert_true(tried > 400);
}

static void test_yaml__emit_numbers_and_binary(void **state)
{
    (void)state;
    struct json_object *obj = json_object_new_array();
    json_object_array_add(obj, json_object_new_int64(INT64_MIN));
    json_object_array_add(obj, json_object_new_uint64(UINT64_MAX));
    json_object_array_add(obj, json_object_new_double(0.1));
    json_object_array_add(obj, json_object_new_double(1e21));
    json_object_array_add(obj, json_object_new_double(-INFINITY));
    json_object_array_add(obj, json_object_new_double(5.0));
    json_object_array_add(obj, json_object_new_string_len("\xff\xfe", 2));
    assert_emits(obj, 0,
                 "- -9223372036854775808\n- 18446744073709551615\n- 0.1\n- 1e+21\n- -.inf\n- 5\n"
                 "- !!binary //4=\n");
    assert_round_trip(obj);
    json_object_put(obj);
    /* a scalar document */
    struct json_object *s = json_object_new_string("just text");
    assert_emits(s, 0, "just text\n");
    json_object_put(s);
    assert_emits(NULL, 0, "null\n");
}

static void test_yaml__emit_stream(void **state)
{
    (void)state;
    struct json_object *docs[3] = {yparse("a: 1"), NULL, yparse("[x]")};
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_yaml_emit_stream(&b, docs, 3, 0));
    assert_string_equal(co_buf_cstr(&b), "a: 1\n---\nnull\n---\n- x\n");
    co_yaml_docs back = CO_YAML_DOCS_INIT;
    assert_co_pass(co_yaml_parse_stream(&back, b.ptr, b.len, 0));
    assert_int_equal(back.len, 3);
    assert_true(co_json_equal(back.items[0].value, docs[0]));
    assert_null(back.items[1].value);
    assert_true(co_json_equal(back.items[2].value, docs[2]));
    assert_int_equal(back.items[2].line, 4);
    co_yaml_docs_dispose(&back);
    co_buf_reset(&b);
    assert_co_pass(co_yaml_emit_stream(&b, docs, 0, 0));
    assert_int_equal(b.len, 0);
    co_buf_dispose(&b);

    co_buf small = CO_BUF_INIT(8);
    assert_co_fail_with(CO_ETOOBIG, co_yaml_emit_stream(&small, docs, 3, 0));
    assert_null(small.ptr);
    json_object_put(docs[0]);
    json_object_put(docs[2]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yaml__matches_sigs_k8s_yaml),
        cmocka_unit_test(test_yaml__scalar_types),
        cmocka_unit_test(test_yaml__deliberate_differences_from_go_yaml),
        cmocka_unit_test(test_yaml__merge_keys_follow_go_yaml_v2),
        cmocka_unit_test(test_yaml__stream_documents_and_lines),
        cmocka_unit_test(test_yaml__single_document_rules),
        cmocka_unit_test(test_yaml__errors_carry_line_and_column),
        cmocka_unit_test(test_yaml__invalid_utf8_is_refused),
        cmocka_unit_test(test_yaml__truncated_documents_fail_cleanly),
        cmocka_unit_test(test_yaml__nesting_cap),
        cmocka_unit_test(test_yaml__billion_laughs_is_capped),
        cmocka_unit_test(test_yaml__many_anchors_each_alias_finds_the_newest),
        cmocka_unit_test(test_yaml__size_cap),
        cmocka_unit_test(test_yaml__unique_keys_option),
        cmocka_unit_test(test_yaml__core_bools_option),
        cmocka_unit_test(test_yaml__emit_block_style_and_quoting),
        cmocka_unit_test(test_yaml__emit_sorted_keys),
        cmocka_unit_test(test_yaml__emit_multiline_strings_readably),
        cmocka_unit_test(test_yaml__emit_round_trips_tricky_strings),
        cmocka_unit_test(test_yaml__emit_round_trips_oracle_documents),
        cmocka_unit_test(test_yaml__emit_numbers_and_binary),
        cmocka_unit_test(test_yaml__emit_stream),
    };
    return cmocka_run_group_tests_name("yaml", tests, NULL, NULL);
}
