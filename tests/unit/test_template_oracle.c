/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The differential suite of the template engine: every case in tests/oracle/gotemplate/cases
 * is rendered by Go (text/template + sprig, the oracle built by
 * tests/oracle/gotemplate/build.sh) and by our engine, and the two results must be byte for
 * byte the same, or the same error.
 *
 * Where the oracle (Debian's Go 1.19 and sprig 3.2.3) differs from what the original runs
 * (recent Go, sprig 3.3), a case states the modern result in a `modern-ok`/`modern-err`
 * section and says why; the oracle's result must then differ (so that stale overrides are
 * noticed). Cases with a `match` section are compared against a pattern instead (random,
 * time and key-generating functions), and both results must match it.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <dirent.h>
#include <json-c/json.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/buf.h"
#include "co/render/template.h"
#include "tests/support/test_support.h"

typedef struct tcase {
    char *name;
    char *tmpl;
    char *data;
    char *defines[8];
    int ndefines;
    char *missingkey;
    char *numbers;
    char *delims;
    char *funcs;
    bool cleanup;
    char *modern;    /* expected output where Go 1.19/sprig 3.2 differ */
    bool modern_err; /* modern is an error message */
    char *match;     /* pattern instead of an exact comparison */
    char *why;
} tcase;

typedef struct result {
    char *name;
    bool ok;
    char *text;
    size_t len;
} result;

static char *join_lines(char **lines, size_t n)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            assert_int_equal(co_buf_putc(&b, '\n'), 0);
        }
        assert_int_equal(co_buf_puts(&b, lines[i]), 0);
    }
    return co_buf_take(&b, NULL);
}

static void case_free(tcase *c)
{
    free(c->name);
    free(c->tmpl);
    free(c->data);
    for (int i = 0; i < c->ndefines; i++) {
        free(c->defines[i]);
    }
    free(c->missingkey);
    free(c->numbers);
    free(c->delims);
    free(c->funcs);
    free(c->modern);
    free(c->match);
    free(c->why);
}

typedef struct parse_state {
    tcase *out;
    size_t n;
    size_t cap;
    tcase cur;
    bool have;
    char section[32];
    char **buf;
    size_t nbuf;
    size_t capbuf;
    char **each_tmpl;
    size_t n_each_tmpl;
    char **each_data;
    size_t n_each_data;
} parse_state;

static void push_case(parse_state *ps, tcase c)
{
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? ps->cap * 2 : 64;
        ps->out = co_xrealloc(ps->out, ps->cap * sizeof(*ps->out));
    }
    ps->out[ps->n++] = c;
}

static char **copy_lines(char **lines, size_t n)
{
    char **c = calloc(n + 1, sizeof(*c));
    for (size_t i = 0; i < n; i++) {
        c[i] = strdup(lines[i]);
    }
    return c;
}

static void free_lines(char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(lines[i]);
    }
    free(lines);
}

static void flush_section(parse_state *ps)
{
    if (!ps->have || !ps->section[0]) {
        ps->nbuf = 0;
        return;
    }
    char *text = join_lines(ps->buf, ps->nbuf);
    const char *s = ps->section;
    if (strcmp(s, "template") == 0) {
        ps->cur.tmpl = text;
    } else if (strcmp(s, "data") == 0) {
        ps->cur.data = text;
    } else if (strcmp(s, "define") == 0 && ps->cur.ndefines < 8) {
        ps->cur.defines[ps->cur.ndefines++] = text;
    } else if (strcmp(s, "modern-ok") == 0 || strcmp(s, "modern-err") == 0) {
        ps->cur.modern = text;
        ps->cur.modern_err = strcmp(s, "modern-err") == 0;
    } else if (strcmp(s, "match") == 0) {
        ps->cur.match = text;
    } else if (strcmp(s, "why") == 0) {
        ps->cur.why = text;
    } else if (strcmp(s, "template-each") == 0) {
        ps->each_tmpl = copy_lines(ps->buf, ps->nbuf);
        ps->n_each_tmpl = ps->nbuf;
        free(text);
    } else if (strcmp(s, "data-each") == 0) {
        ps->each_data = copy_lines(ps->buf, ps->nbuf);
        ps->n_each_data = ps->nbuf;
        free(text);
    } else {
        free(text);
    }
    for (size_t i = 0; i < ps->nbuf; i++) {
        free(ps->buf[i]);
    }
    ps->nbuf = 0;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static tcase clone_case(const tcase *c, const char *name)
{
    tcase n = *c;
    n.name = strdup(name);
    n.tmpl = dup_or_null(c->tmpl);
    n.data = dup_or_null(c->data);
    for (int i = 0; i < c->ndefines; i++) {
        n.defines[i] = strdup(c->defines[i]);
    }
    n.missingkey = dup_or_null(c->missingkey);
    n.numbers = dup_or_null(c->numbers);
    n.delims = dup_or_null(c->delims);
    n.funcs = dup_or_null(c->funcs);
    n.modern = dup_or_null(c->modern);
    n.match = dup_or_null(c->match);
    n.why = dup_or_null(c->why);
    return n;
}

static void finish_case(parse_state *ps)
{
    flush_section(ps);
    if (!ps->have) {
        return;
    }
    if (ps->n_each_tmpl || ps->n_each_data) {
        size_t n = ps->n_each_tmpl ? ps->n_each_tmpl : ps->n_each_data;
        for (size_t i = 0; i < n; i++) {
            char name[512];
            snprintf(name, sizeof(name), "%s#%zu", ps->cur.name, i + 1);
            tcase c = clone_case(&ps->cur, name);
            if (ps->n_each_tmpl) {
                free(c.tmpl);
                c.tmpl = strdup(ps->each_tmpl[i]);
            } else {
                free(c.data);
                c.data = strdup(ps->each_data[i]);
            }
            push_case(ps, c);
        }
        case_free(&ps->cur);
        free_lines(ps->each_tmpl, ps->n_each_tmpl);
        free_lines(ps->each_data, ps->n_each_data);
        ps->each_tmpl = ps->each_data = NULL;
        ps->n_each_tmpl = ps->n_each_data = 0;
    } else {
        push_case(ps, ps->cur);
    }
    memset(&ps->cur, 0, sizeof(ps->cur));
    ps->have = false;
    ps->section[0] = '\0';
}

static void set_option(tcase *c, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq) {
        return;
    }
    size_t kl = (size_t)(eq - kv);
    char **slot = NULL;
    if (kl == 10 && strncmp(kv, "missingkey", kl) == 0) {
        slot = &c->missingkey;
    } else if (kl == 7 && strncmp(kv, "numbers", kl) == 0) {
        slot = &c->numbers;
    } else if (kl == 6 && strncmp(kv, "delims", kl) == 0) {
        slot = &c->delims;
    } else if (kl == 5 && strncmp(kv, "funcs", kl) == 0) {
        slot = &c->funcs;
    } else if (kl == 7 && strncmp(kv, "cleanup", kl) == 0) {
        c->cleanup = strcmp(eq + 1, "true") == 0;
        return;
    }
    if (slot) {
        free(*slot);
        *slot = strdup(eq + 1);
    }
}

/* Parses one case file (format: tests/oracle/gotemplate/README.md). */
static tcase *parse_cases(const char *path, size_t *n_out)
{
    size_t len;
    char *raw = co_test_read_file(path, &len);
    assert_non_null(raw);
    parse_state ps;
    memset(&ps, 0, sizeof(ps));
    char *save = NULL;
    /* split keeping empty lines */
    char *p = raw;
    for (;;) {
        char *nl = strchr(p, '\n');
        if (nl) {
            *nl = '\0';
        }
        char *line = p;
        if (strncmp(line, "### ", 4) == 0) {
            finish_case(&ps);
            ps.have = true;
            ps.cur.name = strdup(line + 4);
        } else if (strncmp(line, "--- ", 4) == 0 && ps.have) {
            flush_section(&ps);
            char *fields = strdup(line + 4);
            char *tok = strtok_r(fields, " ", &save);
            snprintf(ps.section, sizeof(ps.section), "%s", tok ? tok : "");
            if (strcmp(ps.section, "options") == 0) {
                while ((tok = strtok_r(NULL, " ", &save))) {
                    set_option(&ps.cur, tok);
                }
                ps.section[0] = '\0';
            }
            free(fields);
        } else if (ps.have && ps.section[0]) {
            if (ps.nbuf == ps.capbuf) {
                ps.capbuf = ps.capbuf ? ps.capbuf * 2 : 16;
                ps.buf = co_xrealloc(ps.buf, ps.capbuf * sizeof(*ps.buf));
            }
            ps.buf[ps.nbuf++] = strdup(line);
        }
        /* the newline that ends the file ends the last line; it does not start an empty one */
        if (!nl || nl[1] == '\0') {
            break;
        }
        p = nl + 1;
    }
    finish_case(&ps);
    free(ps.buf);
    free(raw);
    *n_out = ps.n;
    return ps.out; // NOLINT(clang-analyzer-unix.Malloc): every case moved into ps.out
}

/* Reads the oracle's length-prefixed results. */
static result *parse_results(const char *text, size_t len, size_t *n_out)
{
    result *out = NULL;
    size_t n = 0;
    size_t cap = 0;
    size_t i = 0;
    while (i < len) {
        assert_true(len - i > 4 && strncmp(text + i, "### ", 4) == 0);
        const char *nl = memchr(text + i, '\n', len - i);
        assert_non_null(nl);
        result r;
        r.name = strndup(text + i + 4, (size_t)(nl - text - i - 4));
        i = (size_t)(nl - text) + 1;
        r.ok = strncmp(text + i, "OK ", 3) == 0;
        size_t k = i + (r.ok ? 3 : 4);
        r.len = strtoul(text + k, NULL, 10);
        nl = memchr(text + i, '\n', len - i);
        assert_non_null(nl);
        i = (size_t)(nl - text) + 1;
        assert_true(i + r.len <= len);
        r.text = strndup(text + i, r.len);
        i += r.len + 1;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            out = co_xrealloc(out, cap * sizeof(*out));
        }
        out[n++] = r;
    }
    *n_out = n;
    return out;
}

static char *run_command(const char *cmd, size_t *len_out)
{
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        assert_int_equal(co_buf_put(&b, chunk, got), 0);
    }
    int status = pclose(f);
    if (status != 0) {
        fail_msg("command failed (%d): %s", status, cmd);
    }
    return co_buf_take(&b, len_out);
}

static char *oracle_path;

static int setup(void **state)
{
    (void)state;
    const char *root = getenv("CO_SOURCE_ROOT"); // NOLINT(concurrency-mt-unsafe): test set-up
    if (!root) {
        root = CO_SOURCE_ROOT;
    }
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "%s/tests/oracle/gotemplate/build.sh", root);
    size_t len;
    char *out = run_command(cmd, &len);
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r')) {
        out[--len] = '\0';
    }
    oracle_path = out;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(oracle_path);
    return 0;
}

static int
ext_upper(void *ctx, struct json_object **out, struct json_object *const *args, size_t nargs)
{
    (void)ctx;
    (void)nargs;
    *out = json_object_new_string(json_object_get_string(args[0]));
    return 0;
}

/* Renders one case with our engine: ok + text, or error + message. */
static void
render_ours(const tcase *c, co_template_funcs *funcs, bool *ok, char **text, size_t *len)
{
    co_template_options opts;
    memset(&opts, 0, sizeof(opts));
    opts.name = c->name;
    if (c->missingkey) {
        opts.missingkey = strcmp(c->missingkey, "zero") == 0    ? CO_TEMPLATE_MISSINGKEY_ZERO
                          : strcmp(c->missingkey, "error") == 0 ? CO_TEMPLATE_MISSINGKEY_ERROR
                                                                : CO_TEMPLATE_MISSINGKEY_DEFAULT;
    }
    char *ld = NULL;
    if (c->delims) {
        ld = strdup(c->delims);
        char *comma = strchr(ld, ',');
        if (comma) {
            *comma = '\0';
            opts.left_delim = ld;
            opts.right_delim = comma + 1;
        }
    }
    co_template_set *set;
    co_template_set_new(&set, funcs, &opts);
    free(ld);
    int rc = 0;
    for (int i = 0; i < c->ndefines && rc == 0; i++) {
        char name[32];
        snprintf(name, sizeof(name), "define%d", i + 1);
        rc = co_template_set_parse(set, name, c->defines[i], strlen(c->defines[i]));
    }
    if (rc == 0) {
        rc = co_template_set_parse(set, c->name, c->tmpl ? c->tmpl : "",
                                   c->tmpl ? strlen(c->tmpl) : 0);
    }
    struct json_object *data = NULL;
    if (rc == 0 && c->data && c->data[strspn(c->data, " \t\n")]) {
        data = json_tokener_parse(c->data);
        if (!data && strcmp(c->data, "null") != 0) {
            fail_msg("case %s: bad JSON data", c->name);
        }
    }
    if (rc == 0) {
        co_template_numbers nm = c->numbers && strcmp(c->numbers, "int64") == 0
                                     ? CO_TEMPLATE_NUMBERS_INT64
                                     : CO_TEMPLATE_NUMBERS_FLOAT64;
        rc = co_template_render(set, c->name, data, nm, NULL, text, len);
        if (rc == 0 && c->cleanup) {
            *len = co_template_strip_no_value(*text, *len);
        }
    }
    json_object_put(data);
    co_template_set_free(set);
    if (rc < 0) {
        *ok = false;
        *text = strdup(co_error_last());
        *len = strlen(*text);
    } else {
        *ok = true;
    }
}

static bool matches(const char *pattern, const char *text, size_t len)
{
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_DOTALL | PCRE2_UTF, &err, &off, NULL);
    if (!re) {
        fail_msg("bad match pattern: %s", pattern);
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int rc =
        pcre2_match(re, (PCRE2_SPTR)text, len, 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED, md, NULL);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return rc >= 0;
}

static void run_file(const char *file)
{
    const char *root = getenv("CO_SOURCE_ROOT"); // NOLINT(concurrency-mt-unsafe): test set-up
    if (!root) {
        root = CO_SOURCE_ROOT;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/oracle/gotemplate/cases/%s", root, file);
    size_t ncases;
    tcase *cases = parse_cases(path, &ncases);
    assert_true(ncases > 0);

    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "cd /tmp && TZ=UTC CO_TEMPLATE_TEST_ENV=hello %s '%s'", oracle_path,
             path);
    size_t olen;
    char *otext = run_command(cmd, &olen);
    size_t nres;
    result *res = parse_results(otext, olen, &nres);
    assert_int_equal(nres, ncases);

    co_template_funcs *funcs_all;
    co_template_funcs *funcs_sprig;
    co_template_funcs *funcs_builtin;
    co_template_funcs *funcs_helm;
    co_template_funcs_new(&funcs_builtin, 0);
    co_template_funcs_new(&funcs_all, CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_RUNTIME |
                                          CO_TEMPLATE_FUNCS_ENV);
    co_template_funcs_new(&funcs_sprig, CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_ENV);
    co_template_funcs_new(&funcs_helm, CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_RUNTIME |
                                           CO_TEMPLATE_FUNCS_ENV | CO_TEMPLATE_FUNCS_HELM);
    assert_co_pass(
        co_template_funcs_add(funcs_all, "extEcho", 1, CO_TEMPLATE_NUMBERS_FLOAT64, ext_upper));

    co_buf report = CO_BUF_INIT(SIZE_MAX);
    int failures = 0;
    setenv("CO_TEMPLATE_TEST_ENV", "hello", 1); // NOLINT(concurrency-mt-unsafe): test set-up
    /* the oracle's Local is UTC; ours must be too */
    setenv("TZ", "UTC", 1); // NOLINT(concurrency-mt-unsafe): test set-up
    for (size_t i = 0; i < ncases; i++) {
        tcase *c = &cases[i];
        result *r = &res[i];
        assert_string_equal(r->name, c->name);
        bool ok = false;
        char *text = NULL;
        size_t len = 0;
        co_template_funcs *funcs = funcs_all;
        if (c->funcs && strcmp(c->funcs, "sprig") == 0) {
            funcs = funcs_sprig;
        } else if (c->funcs && strcmp(c->funcs, "builtin") == 0) {
            funcs = funcs_builtin;
        } else if (c->funcs && strcmp(c->funcs, "helm") == 0) {
            funcs = funcs_helm;
        }
        render_ours(c, funcs, &ok, &text, &len);
        if (!text) {
            text = strdup("");
            ok = false;
        }
        bool good = false;
        const char *want = "";
        size_t want_len = 0;
        bool want_ok = false;
        if (c->match) {
            good =
                ok && r->ok && matches(c->match, text, len) && matches(c->match, r->text, r->len);
            want = c->match;
            want_len = strlen(c->match);
            want_ok = true;
        } else if (c->modern) {
            want = c->modern;
            want_len = strlen(c->modern);
            want_ok = !c->modern_err;
            bool oracle_same =
                r->ok == want_ok && r->len == want_len && memcmp(r->text, want, want_len) == 0;
            good = ok == want_ok && len == want_len && text && memcmp(text, want, len) == 0 &&
                   !oracle_same;
            if (oracle_same) {
                assert_int_equal(
                    co_buf_printf(&report, "%s: stale modern override (oracle agrees)\n", c->name),
                    0);
            }
        } else {
            want = r->text;
            want_len = r->len;
            want_ok = r->ok;
            good = ok == r->ok && len == r->len && text && memcmp(text, r->text, len) == 0;
        }
        if (!good) {
            failures++;
            if (failures <= 40) {
                assert_int_equal(co_buf_printf(&report,
                                               "--- %s\n  template: %s\n  want %s: [%.*s]\n  got  "
                                               "%s: [%.*s]\n",
                                               c->name, c->tmpl ? c->tmpl : "",
                                               want_ok ? "ok" : "error", (int)want_len, want,
                                               ok ? "ok" : "error", (int)len, text),
                                 0);
                if (c->modern && !c->match) {
                    assert_int_equal(co_buf_printf(&report, "  oracle %s: [%.*s]\n",
                                                   r->ok ? "ok" : "error", (int)r->len, r->text),
                                     0);
                }
            }
        }
        free(text);
    }
    co_template_funcs_free(funcs_all);
    co_template_funcs_free(funcs_sprig);
    co_template_funcs_free(funcs_builtin);
    co_template_funcs_free(funcs_helm);
    for (size_t i = 0; i < ncases; i++) {
        case_free(&cases[i]);
        free(res[i].name);
        free(res[i].text);
    }
    free(cases);
    free(res);
    free(otext);
    if (failures) {
        fprintf(stderr, "%s: %d of %zu cases differ\n%s", file, failures, ncases,
                co_buf_cstr(&report));
        co_buf_dispose(&report);
        fail_msg("%s: %d of %zu cases differ from Go", file, failures, ncases);
    }
    co_buf_dispose(&report);
    printf("# %s: %zu cases identical to Go\n", file, ncases);
}

#define CASE_FILE(fn, file)                                                                        \
    static void fn(void **state)                                                                   \
    {                                                                                              \
        (void)state;                                                                               \
        run_file(file);                                                                            \
    }

CASE_FILE(test_template_oracle__language, "language.txt")
CASE_FILE(test_template_oracle__sprig_strings, "sprig_strings.txt")
CASE_FILE(test_template_oracle__sprig_lists, "sprig_lists.txt")
CASE_FILE(test_template_oracle__sprig_math, "sprig_math.txt")
CASE_FILE(test_template_oracle__sprig_misc, "sprig_misc.txt")
CASE_FILE(test_template_oracle__runtime, "runtime.txt")
CASE_FILE(test_template_oracle__chart, "chart.txt")
CASE_FILE(test_template_oracle__sprig_case, "sprig_case.txt")
CASE_FILE(test_template_oracle__sprig_crypto, "sprig_crypto.txt")
CASE_FILE(test_template_oracle__sprig_date, "sprig_date.txt")
CASE_FILE(test_template_oracle__sprig_url, "sprig_url.txt")
CASE_FILE(test_template_oracle__helm_toml, "helm_toml.txt")
CASE_FILE(test_template_oracle__coverage_strings, "coverage_strings.txt")
CASE_FILE(test_template_oracle__coverage_math, "coverage_math.txt")
CASE_FILE(test_template_oracle__coverage_lists, "coverage_lists.txt")
CASE_FILE(test_template_oracle__coverage_builtins, "coverage_builtins.txt")
CASE_FILE(test_template_oracle__coverage_actions, "coverage_actions.txt")

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_oracle__language),
        cmocka_unit_test(test_template_oracle__sprig_strings),
        cmocka_unit_test(test_template_oracle__sprig_lists),
        cmocka_unit_test(test_template_oracle__sprig_math),
        cmocka_unit_test(test_template_oracle__sprig_misc),
        cmocka_unit_test(test_template_oracle__runtime),
        cmocka_unit_test(test_template_oracle__chart),
        cmocka_unit_test(test_template_oracle__sprig_case),
        cmocka_unit_test(test_template_oracle__sprig_crypto),
        cmocka_unit_test(test_template_oracle__sprig_date),
        cmocka_unit_test(test_template_oracle__sprig_url),
        cmocka_unit_test(test_template_oracle__helm_toml),
        cmocka_unit_test(test_template_oracle__coverage_strings),
        cmocka_unit_test(test_template_oracle__coverage_math),
        cmocka_unit_test(test_template_oracle__coverage_lists),
        cmocka_unit_test(test_template_oracle__coverage_builtins),
        cmocka_unit_test(test_template_oracle__coverage_actions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
