/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for co_jdoc documents: values and their kinds, lookups and iteration, duplicate
 * keys, skip lists, growth past the first guess, and refusals identical to co_json_parse()'s.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/json/jdoc.h"
#include "co/json/json.h"
#include "tests/support/hash_flood.h"
#include "tests/support/test_support.h"

static co_jdoc *parse(const char *text)
{
    co_jdoc *doc = NULL;
    assert_co_pass(co_jdoc_parse(&doc, text, strlen(text), CO_MAX_DOCUMENT, NULL));
    return doc;
}

/* The document's value encoded compactly (through json-c), for comparisons. */
static char *dump(const co_jv *v)
{
    struct json_object *o = co_jv_to_json(v);
    char *text = co_json_dumps(o, 0);
    json_object_put(o);
    return text;
}

static void test_jdoc__values_and_their_kinds(void **state)
{
    (void)state;
    co_jdoc *doc =
        parse(" {\"s\":\"a\\\"b\\u00e9\\n\",\"i\":-42,\"big\":18446744073709551615,\"d\":2.5,"
              "\"z\":-0,\"t\":true,\"f\":false,\"n\":null,\"nul\":\"x\\u0000y\","
              "\"a\":[1,[2,{}],[]],\"o\":{\"k\":{\"deep\":\"v\"}}} ");
    const co_jv *root = co_jdoc_root(doc);
    assert_int_equal(root->type, CO_JV_OBJECT);
    assert_int_equal(co_jv_members(root), 11);
    assert_int_equal(root->size, 32);

    assert_string_equal(co_jv_str(root, "s"), "a\"b\xc3\xa9\n");
    const co_jv *i = co_jv_get(root, "i");
    assert_true(co_jv_is(i, CO_JV_NUMBER) && (i->flags & CO_JV_INT));
    assert_int_equal(i->as.i, -42);
    const co_jv *big = co_jv_get(root, "big");
    assert_true(big->flags & CO_JV_UINT);
    assert_true(big->as.u == UINT64_MAX);
    const co_jv *d = co_jv_get(root, "d");
    assert_true((d->flags & CO_JV_DOUBLE) && d->as.d == 2.5);
    const co_jv *z = co_jv_get(root, "z");
    assert_true((z->flags & CO_JV_DOUBLE) && z->as.d == 0 && signbit(z->as.d));
    assert_true(co_jv_is(co_jv_get(root, "t"), CO_JV_BOOL) &&
                (co_jv_get(root, "t")->flags & CO_JV_TRUE));
    assert_false(co_jv_get(root, "f")->flags & CO_JV_TRUE);
    assert_true(co_jv_is(co_jv_get(root, "n"), CO_JV_NULL));
    assert_true(co_jv_unset(co_jv_get(root, "n")) && co_jv_unset(co_jv_get(root, "absent")));
    assert_false(co_jv_unset(co_jv_get(root, "f")));
    const co_jv *nul = co_jv_get(root, "nul");
    assert_int_equal(nul->len, 3);
    assert_memory_equal(nul->as.s, "x\0y", 4);
    /* a string that is not one is no string */
    assert_null(co_jv_str(root, "i"));

    /* nesting: contents follow their container, the value after one is v + v->size */
    const co_jv *a = co_jv_get(root, "a");
    assert_int_equal(a->len, 3);
    assert_int_equal(a->size, 6);
    char *text = dump(a);
    assert_string_equal(text, "[1,[2,{}],[]]");
    free(text);
    assert_ptr_equal(a + a->size, co_jv_get(root, "o") - 1);
    assert_string_equal(co_jv_str(co_jv_get(co_jv_get(root, "o"), "k"), "deep"), "v");

    /* iteration in document order; an object hands out its keys */
    const char *order[] = {"s", "i", "big", "d", "z", "t", "f", "n", "nul", "a", "o"};
    size_t n = 0;
    CO_JV_EACH (k, root) {
        assert_true(n < CO_ARRAY_SIZE(order));
        assert_string_equal(k->as.s, order[n++]);
    }
    assert_int_equal(n, CO_ARRAY_SIZE(order));
    long sum = 0;
    n = 0;
    CO_JV_EACH (e, a) {
        n++;
        sum += e->type == CO_JV_NUMBER ? e->as.i : 100;
    }
    assert_int_equal(n, 3);
    assert_int_equal(sum, 201);

    /* no container, nothing to find */
    assert_null(co_jv_get(a, "0"));
    assert_null(co_jv_get(NULL, "s"));
    assert_null(co_jv_first(i));
    assert_null(co_jv_first(NULL));
    const co_jv *empty = co_jv_next(a, co_jv_next(a, co_jv_first(a)));
    assert_true(co_jv_is(empty, CO_JV_ARRAY) && empty->len == 0);
    assert_null(co_jv_first(empty));
    assert_null(co_jv_next(a, empty));
    assert_int_equal(co_jv_members(a), 0);
    co_jdoc_free(doc);

    /* a scalar and null as the whole document */
    doc = parse("  \"only\"\n");
    assert_string_equal(co_jdoc_root(doc)->as.s, "only");
    co_jdoc_free(doc);
    doc = parse("null");
    assert_true(co_jv_is(co_jdoc_root(doc), CO_JV_NULL));
    co_jdoc_free(doc);
    co_jdoc_free(NULL);
}

/* Duplicate keys: the last wins, as in co_json_parse(), in small objects (compared pairwise)
 * and large ones (hashed). */
static void test_jdoc__duplicate_keys_last_wins(void **state)
{
    (void)state;
    co_jdoc *doc = parse("{\"a\":1,\"b\":2,\"a\":3,\"c\":4,\"a\":{\"x\":5}}");
    const co_jv *root = co_jdoc_root(doc);
    assert_int_equal(co_jv_members(root), 3);
    char *text = dump(co_jv_get(root, "a"));
    assert_string_equal(text, "{\"x\":5}");
    free(text);
    size_t n = 0;
    CO_JV_EACH (k, root) {
        n++;
        assert_true(strcmp(k->as.s, "a") || co_jv_is(k + 1, CO_JV_OBJECT));
    }
    assert_int_equal(n, 3);
    co_jdoc_free(doc);

    /* 40 members, each key twice or more: the hashed path */
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&b, "{"));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 20; i++) {
            if (round == 2 && i % 2) {
                continue;
            }
            assert_co_pass(
                co_buf_printf(&b, "%s\"key%d\":%d", b.len > 1 ? "," : "", i, round * 100 + i));
        }
    }
    assert_co_pass(co_buf_puts(&b, "}"));
    doc = parse(co_buf_cstr(&b));
    root = co_jdoc_root(doc);
    assert_int_equal(root->len, 50);
    assert_int_equal(co_jv_members(root), 20);
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof(key), "key%d", i);
        const co_jv *v = co_jv_get(root, key);
        assert_non_null(v);
        assert_int_equal(v->as.i, (i % 2 ? 100 : 200) + i);
    }
    struct json_object *want = NULL;
    assert_co_pass(co_json_parse(&want, co_buf_cstr(&b), b.len));
    struct json_object *got = co_jv_to_json(root);
    assert_true(co_json_equal(want, got));
    json_object_put(want);
    json_object_put(got);
    co_jdoc_free(doc);
    co_buf_dispose(&b);
}

static void test_jdoc__skip_lists_leave_members_out(void **state)
{
    (void)state;
    static const char *const status[] = {"request", "object", "status", NULL};
    static const char *const managed[] = {"items", CO_JSON_EVERY_ELEMENT, "metadata",
                                          "managedFields", NULL};
    static const char *const *const skip[] = {status, managed, NULL};
    const char *text = "{\"request\":{\"uid\":\"u\",\"object\":{\"spec\":{\"a\":1},"
                       "\"status\":{\"big\":[1,2,3,{\"x\":\"\\\"y\\\"\"}]}}},"
                       "\"items\":[{\"metadata\":{\"name\":\"n\",\"managedFields\":[{}]}},7]}";
    co_jdoc *doc = NULL;
    assert_co_pass(co_jdoc_parse(&doc, text, strlen(text), CO_MAX_DOCUMENT, skip));
    char *got = dump(co_jdoc_root(doc));
    assert_string_equal(got, "{\"request\":{\"uid\":\"u\",\"object\":{\"spec\":{\"a\":1}}},"
                             "\"items\":[{\"metadata\":{\"name\":\"n\"}},7]}");
    free(got);
    /* the same tree co_json_parse_skip() builds */
    struct json_object *want = NULL;
    assert_co_pass(co_json_parse_skip(&want, text, strlen(text), CO_MAX_DOCUMENT, skip));
    struct json_object *back = co_jv_to_json(co_jdoc_root(doc));
    assert_true(co_json_equal(want, back));
    json_object_put(want);
    json_object_put(back);
    co_jdoc_free(doc);
}

/* Many values and long strings: the node array and the arena grow past their first guess. */
static void test_jdoc__grows_past_the_first_guess(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&b, "["));
    for (int i = 0; i < 5000; i++) {
        assert_co_pass(co_buf_printf(&b, "%s[%d,\"s%d\"]", i ? "," : "", i, i));
    }
    char *long_string = malloc(20001);
    memset(long_string, 'q', 20000);
    long_string[20000] = '\0';
    assert_co_pass(co_buf_printf(&b, ",\"%s\"]", long_string));
    co_jdoc *doc = parse(co_buf_cstr(&b));
    const co_jv *root = co_jdoc_root(doc);
    assert_int_equal(root->len, 5001);
    assert_int_equal(root->size, 1 + 5000 * 3 + 1);
    int i = 0;
    CO_JV_EACH (e, root) {
        if (i < 5000) {
            char want[16];
            snprintf(want, sizeof(want), "s%d", i);
            assert_int_equal(e->len, 2);
            assert_int_equal(e[1].as.i, i);
            assert_string_equal(e[2].as.s, want);
        } else {
            assert_int_equal(e->len, 20000);
            assert_string_equal(e->as.s, long_string);
        }
        i++;
    }
    assert_int_equal(i, 5001);
    co_jdoc_free(doc);
    free(long_string);
    co_buf_dispose(&b);
}

/* Every refusal is co_json_parse()'s, with the same message, and leaves nothing behind. */
static void test_jdoc__refusals_match_the_json_parser(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "[1,]",
        "{\"a\":1,}",
        "{'a':1}",
        "NaN",
        "tru",
        "01",
        "1.",
        "1e400",
        "\"\\x\"",
        "\"\\u12\"",
        "\"a\tb\"",
        "\"\xff\"",
        "{\"a\" 1}",
        "[1 2]",
        "{\"k\\u0000\":1}",
        "{\"a\":1} x",
        "{1:2}",
        "[\"unterminated",
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        struct json_object *obj = NULL;
        int want = co_json_parse(&obj, bad[i], strlen(bad[i]));
        char *want_msg = co_xstrdup(co_error_last());
        assert_int_equal(want, CO_EINVALID);
        co_jdoc *doc = (co_jdoc *)&obj; /* must be left alone */
        int got = co_jdoc_parse(&doc, bad[i], strlen(bad[i]), CO_MAX_DOCUMENT, NULL);
        if (got != want || strcmp(want_msg, co_error_last()) != 0) {
            fail_msg("%s: json %d \"%s\", jdoc %d \"%s\"", bad[i], want, want_msg, got,
                     co_error_last());
        }
        assert_ptr_equal(doc, (co_jdoc *)&obj);
        free(want_msg);
    }
    /* the nesting cap */
    co_buf deep = CO_BUF_INIT(SIZE_MAX);
    for (int i = 0; i <= CO_MAX_NESTING; i++) {
        assert_co_pass(co_buf_puts(&deep, "["));
    }
    co_jdoc *doc = NULL;
    assert_co_fail_with(CO_EINVALID,
                        co_jdoc_parse(&doc, co_buf_cstr(&deep), deep.len, CO_MAX_DOCUMENT, NULL));
    assert_non_null(strstr(co_error_last(), "nesting deeper than"));
    co_buf_dispose(&deep);
    /* the size cap */
    assert_co_fail_with(CO_ETOOBIG, co_jdoc_parse(&doc, "[1,2,3]", 7, 6, NULL));
    assert_null(doc);
}

/* A json-c tree turned into a document holds the same values, kinds included. */
static void test_jdoc__of_json_keeps_values_and_kinds(void **state)
{
    (void)state;
    const char *text = "{\"u\":18446744073709551615,\"i\":-7,\"d\":1.5,\"s\":\"x\\u0000y\","
                       "\"a\":[null,true,{\"k\":[]}],\"o\":{}}";
    struct json_object *obj = NULL;
    assert_co_pass(co_json_parse(&obj, text, strlen(text)));
    co_jdoc *doc = co_jdoc_of_json(obj);
    const co_jv *root = co_jdoc_root(doc);
    assert_true(co_jv_get(root, "u")->flags & CO_JV_UINT);
    assert_true(co_jv_get(root, "i")->flags & CO_JV_INT);
    assert_true(co_jv_get(root, "d")->flags & CO_JV_DOUBLE);
    assert_int_equal(co_jv_get(root, "s")->len, 3);
    assert_int_equal(root->size, 18);
    struct json_object *back = co_jv_to_json(root);
    assert_true(co_json_equal(obj, back));
    json_object_put(back);
    co_jdoc_free(doc);
    /* the same as parsing the text */
    co_jdoc *parsed = parse(text);
    char *a = dump(co_jdoc_root(parsed));
    doc = co_jdoc_of_json(obj);
    char *b = dump(co_jdoc_root(doc));
    assert_string_equal(a, b);
    free(a);
    free(b);
    co_jdoc_free(doc);
    co_jdoc_free(parsed);
    json_object_put(obj);
    /* JSON null is the NULL tree */
    doc = co_jdoc_of_json(NULL);
    assert_true(co_jv_is(co_jdoc_root(doc), CO_JV_NULL));
    co_jdoc_free(doc);
}

static void test_jdoc__equality_is_strict_about_types(void **state)
{
    (void)state;
    static const struct {
        const char *a, *b;
        int equal;
    } cases[] = {
        {"{\"a\":1,\"b\":[true,null,\"x\"]}", "{\"b\":[true,null,\"x\"],\"a\":1}", 1},
        {"1", "1.0", 0},
        {"18446744073709551615", "18446744073709551615", 1},
        {"-0", "0", 0},
        {"\"a\\u0000b\"", "\"a\\u0000c\"", 0},
        {"[1,2]", "[2,1]", 0},
        {"[1]", "[1,1]", 0},
        {"{\"a\":1}", "{\"a\":1,\"b\":null}", 0},
        {"{\"a\":1,\"a\":2}", "{\"a\":2}", 1},
        {"{}", "[]", 0},
        {"true", "false", 0},
        {"null", "null", 1},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        co_jdoc *a = parse(cases[i].a);
        co_jdoc *b = parse(cases[i].b);
        if (co_jv_equal(co_jdoc_root(a), co_jdoc_root(b)) != (cases[i].equal != 0)) {
            fail_msg("%s vs %s: expected %s", cases[i].a, cases[i].b,
                     cases[i].equal ? "equal" : "different");
        }
        co_jdoc_free(a);
        co_jdoc_free(b);
    }
    assert_true(co_jv_equal(NULL, NULL));
    co_jdoc *a = parse("1");
    assert_false(co_jv_equal(co_jdoc_root(a), NULL));
    co_jdoc_free(a);
}

/* {"<key>":<value>,...} of @p keys in order @p order (NULL: as they are), value i for key i
 * but @p odd_value for key @p odd (odd >= n: none), and @p extra members before the brace. */
static char *object_text(const co_test_names *keys,
                         const size_t *order,
                         size_t odd,
                         const char *odd_value,
                         const char *extra)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&b, "{"));
    for (size_t j = 0; j < keys->len; j++) {
        size_t i = order ? order[j] : j;
        if (i == odd) {
            assert_co_pass(
                co_buf_printf(&b, "%s\"%s\":%s", j ? "," : "", keys->items[i], odd_value));
        } else {
            assert_co_pass(co_buf_printf(&b, "%s\"%s\":%zu", j ? "," : "", keys->items[i], i));
        }
    }
    assert_co_pass(co_buf_printf(&b, "%s}", extra));
    char *text = co_xstrdup(co_buf_cstr(&b));
    co_buf_dispose(&b);
    return text;
}

static int texts_equal(const char *a, const char *b)
{
    co_jdoc *x = parse(a);
    co_jdoc *y = parse(b);
    int same = co_jv_equal(co_jdoc_root(x), co_jdoc_root(y));
    assert_int_equal(co_jv_equal(co_jdoc_root(y), co_jdoc_root(x)), same);
    co_jdoc_free(x);
    co_jdoc_free(y);
    return same;
}

/*
 * Objects too large to search member by member are compared through a table of one side's
 * keys: an UPDATE that left 50,000 values as they were took seconds while each key of one
 * object was searched for in the other. The same answers, at every size around the switch.
 */
static void test_jdoc__large_objects_compare_through_a_key_table(void **state)
{
    (void)state;
    static const size_t sizes[] = {15, 16, 17, 18, 33, 2000};
    for (size_t s = 0; s < CO_ARRAY_SIZE(sizes); s++) {
        size_t n = sizes[s];
        co_test_names keys = co_test_ordinary_keys(n, "");
        size_t *reversed = co_xcalloc(n, sizeof(size_t));
        for (size_t i = 0; i < n; i++) {
            reversed[i] = n - 1 - i;
        }
        char *a = object_text(&keys, NULL, n, "", "");
        char *same = object_text(&keys, reversed, n, "", "");
        char *other_value = object_text(&keys, reversed, n / 3, "\"x\"", "");
        char *other_type = object_text(&keys, reversed, n - 1, "1.0", "");
        char *more = object_text(&keys, reversed, n, "", ",\"more\":0");
        /* a dead duplicate with another value, then the live member as in a */
        char *dup_first = co_xasprintf("{\"%s\":\"dead\",%s", keys.items[0], same + 1);
        /* the same number of members, one of them under another name */
        char *renamed = co_xstrdup(same);
        char *at = strstr(renamed, keys.items[n / 2]);
        assert_non_null(at);
        at[0] = 'K';
        if (!texts_equal(a, same) || !texts_equal(a, dup_first)) {
            fail_msg("%zu members: equal objects compare different", n);
        }
        if (texts_equal(a, other_value) || texts_equal(a, other_type) || texts_equal(a, more) ||
            texts_equal(a, renamed)) {
            fail_msg("%zu members: different objects compare equal", n);
        }
        /* one level down, inside an object of a few members */
        char *in_a = co_xasprintf("{\"x\":1,\"values\":%s}", a);
        char *in_same = co_xasprintf("{\"values\":%s,\"x\":1}", same);
        char *in_other = co_xasprintf("{\"values\":%s,\"x\":1}", other_value);
        assert_true(texts_equal(in_a, in_same));
        assert_false(texts_equal(in_a, in_other));
        free(in_a);
        free(in_same);
        free(in_other);
        free(a);
        free(same);
        free(other_value);
        free(other_type);
        free(more);
        free(dup_first);
        free(renamed);
        free(reversed);
        co_test_names_free(&keys);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jdoc__values_and_their_kinds),
        cmocka_unit_test(test_jdoc__duplicate_keys_last_wins),
        cmocka_unit_test(test_jdoc__skip_lists_leave_members_out),
        cmocka_unit_test(test_jdoc__grows_past_the_first_guess),
        cmocka_unit_test(test_jdoc__refusals_match_the_json_parser),
        cmocka_unit_test(test_jdoc__of_json_keeps_values_and_kinds),
        cmocka_unit_test(test_jdoc__equality_is_strict_about_types),
        cmocka_unit_test(test_jdoc__large_objects_compare_through_a_key_table),
    };
    return cmocka_run_group_tests_name("jdoc", tests, NULL, NULL);
}
