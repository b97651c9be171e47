/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the JSON module: strict parsing and its errors, Go-compatible encoding, paths
 * and typed getters, editing, copy/equality/merge, JSON Patch and JSON merge patch.
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
#include "shared/src/json/json_lib.h"
#include "tests/support/hash_flood.h"
#include "tests/support/test_support.h"

/* Parses @p text, failing the test on error. */
static struct json_object *parse(const char *text)
{
    struct json_object *obj = NULL;
    assert_co_pass(co_json_parse(&obj, text, strlen(text)));
    return obj;
}

/* Encodes @p obj with @p flags and compares with @p want. */
static void assert_encodes(const struct json_object *obj, unsigned flags, const char *want)
{
    char *got = co_json_dumps(obj, flags);
    if (!got) {
        fail_msg("encoding failed: %s", co_error_last());
        return;
    }
    assert_string_equal(got, want);
    free(got);
}

/* Parses @p in and checks its canonical encoding. */
static void assert_roundtrip(const char *in, const char *want)
{
    struct json_object *obj = parse(in);
    assert_encodes(obj, CO_JSON_CANONICAL, want);
    json_object_put(obj);
}

/* Checks that parsing fails with @p code and a message containing @p msg. */
static void assert_parse_fails(int code, const char *in, size_t len, const char *msg)
{
    struct json_object *obj = (struct json_object *)0x1;
    co_error_clear();
    int rc = co_json_parse(&obj, in, len);
    if (rc != code) {
        fail_msg("parsing \"%.*s\" returned %d (%s), expected %d", (int)(len > 60 ? 60 : len), in,
                 rc, co_error_last(), code);
    }
    assert_ptr_equal(obj, (struct json_object *)0x1); /* untouched on failure */
    assert_contains(co_error_last(), msg);
}

/* ---- parsing -------------------------------------------------------------------------------- */

static void test_json__parses_every_type(void **state)
{
    (void)state;
    assert_roundtrip(" {\"s\":\"x\",\"i\":-12,\"d\":2.5,\"t\":true,\"f\":false,\"n\":null,"
                     "\"a\":[1,[],{}]}\n",
                     "{\"a\":[1,[],{}],\"d\":2.5,\"f\":false,\"i\":-12,\"n\":null,\"s\":\"x\","
                     "\"t\":true}");
    struct json_object *obj = NULL;
    assert_co_pass(co_json_parse(&obj, "null", 4));
    assert_null(obj);
    obj = parse("\"\\u0041\\u00e9\\ud83d\\ude00\\n\\/\"");
    assert_string_equal(json_object_get_string(obj), "A\xc3\xa9\xf0\x9f\x98\x80\n/");
    json_object_put(obj);
}

static void test_json__strict_syntax_errors_have_positions(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        const char *msg;
    } cases[] = {
        {"", "line 1, column 1: unexpected end of input"},
        {"   ", "unexpected end of input"},
        {"[1,]", "line 1, column 4: unexpected ']'"},
        {"{\"a\":1,}", "expected a string key, found '}'"},
        {"{'a':1}", "expected a string key, found '''"},
        {"NaN", "unexpected 'N'"},
        {"Infinity", "unexpected 'I'"},
        {"-Infinity", "expected a digit"},
        {"True", "unexpected 'T'"},
        {"nul", "expected null"},
        {"01", "leading zero"},
        {"-01", "leading zero"},
        {"1.", "expected a digit after '.'"},
        {".5", "unexpected '.'"},
        {"1e", "expected a digit in the exponent"},
        {"+1", "unexpected '+'"},
        {"\"\\x\"", "invalid escape"},
        {"\"\\u12\"", "invalid \\u escape"},
        {"\"a\tb\"", "control character 0x09"},
        {"\"abc", "unterminated string"},
        {"[1] x", "line 1, column 5: unexpected 'x' after the JSON value"},
        {"{\"a\" 1}", "expected ':'"},
        {"[1 2]", "expected ',' or ']'"},
        {"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
        {"/* c */ 1", "unexpected '/'"},
        {"{\n  \"a\": 1,\n  \"b\": x\n}", "line 3, column 8: unexpected 'x'"},
        {"{\"k\\u0000\":1}", "object key contains a NUL character"},
        {"1e400", "number 1e400 is out of range"},
        {"-1e400", "out of range"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        assert_parse_fails(CO_EINVALID, cases[i].in, strlen(cases[i].in), cases[i].msg);
    }
}

static void test_json__rejects_invalid_utf8(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\"\xff\"",             /* never valid */
        "\"\xc0\xaf\"",         /* overlong '/' */
        "\"\xe0\x80\xaf\"",     /* overlong */
        "\"\xed\xa0\x80\"",     /* UTF-16 surrogate encoded in UTF-8 */
        "\"\xf4\x90\x80\x80\"", /* above U+10FFFF */
        "\"\xe2\x82\"",         /* truncated sequence */
        "\xef\xbb\xbf{}",       /* a byte-order mark is not JSON */
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        assert_parse_fails(CO_EINVALID, bad[i], strlen(bad[i]), i == 6 ? "byte 0xef" : "UTF-8");
    }
    struct json_object *ok = parse("\"\xe2\x82\xac \xf0\x9f\x98\x80\"");
    assert_int_equal(co_json_string_len(ok), 8);
    json_object_put(ok);
}

static void test_json__truncated_documents_fail_cleanly(void **state)
{
    (void)state;
    const char *doc = "{\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":\"b\"}},"
                      "\"spec\":[1,2.5e3,true,null,\"\\u00e9\"]}";
    size_t len = strlen(doc);
    for (size_t cut = 0; cut < len; cut++) {
        struct json_object *obj = NULL;
        co_error_clear();
        int rc = co_json_parse(&obj, doc, cut);
        assert_int_equal(rc, CO_EINVALID);
        assert_contains(co_error_last(), "line 1, column ");
    }
    struct json_object *obj = parse(doc);
    json_object_put(obj);
}

static void test_json__nesting_cap(void **state)
{
    (void)state;
    size_t n = CO_MAX_NESTING;
    char *deep = co_xmalloc(2 * n + 3);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    struct json_object *obj = parse(deep); /* exactly the cap: accepted */
    json_object_put(obj);

    memset(deep, '[', n + 1);
    memset(deep + n + 1, ']', n + 1);
    deep[2 * n + 2] = '\0';
    assert_parse_fails(CO_EINVALID, deep, 2 * n + 2, "nesting deeper than 512 levels");

    /* a very deep unterminated document fails at the cap, not on the stack */
    char *huge = co_xmalloc(1000000);
    memset(huge, '[', 1000000);
    assert_parse_fails(CO_EINVALID, huge, 1000000, "nesting deeper");
    free(huge);
    free(deep);
}

static void test_json__size_cap(void **state)
{
    (void)state;
    struct json_object *obj = NULL;
    assert_co_fail_with(CO_ETOOBIG, co_json_parse_max(&obj, "[1,2,3]", 7, 6));
    assert_contains(co_error_last(), "exceeds the limit of 6");
    assert_co_pass(co_json_parse_max(&obj, "[1,2,3]", 7, 7));
    json_object_put(obj);
}

static void test_json__numbers_keep_their_kind(void **state)
{
    (void)state;
    struct json_object *obj =
        parse("[9223372036854775807,-9223372036854775808,9223372036854775808,"
              "18446744073709551615,18446744073709551616,123456789012345678901234567890,"
              "1.0,-0,-0.0,1e2,5e-324,1e-400]");
    assert_true(json_object_is_type(json_object_array_get_idx(obj, 0), json_type_int));
    assert_int_equal(json_object_get_int64(json_object_array_get_idx(obj, 0)), INT64_MAX);
    assert_int_equal(json_object_get_int64(json_object_array_get_idx(obj, 1)), INT64_MIN);
    /* beyond int64 but within uint64: exact */
    assert_true(json_object_is_type(json_object_array_get_idx(obj, 2), json_type_int));
    assert_true(json_object_get_uint64(json_object_array_get_idx(obj, 3)) == UINT64_MAX);
    /* beyond uint64: a double, as Go reads it */
    assert_true(json_object_is_type(json_object_array_get_idx(obj, 4), json_type_double));
    assert_true(json_object_get_double(json_object_array_get_idx(obj, 4)) ==
                18446744073709551616.0);
    assert_true(json_object_is_type(json_object_array_get_idx(obj, 5), json_type_double));
    assert_true(json_object_is_type(json_object_array_get_idx(obj, 6), json_type_double));
    /* "-0" keeps its sign, so it is the double -0.0 (Go reads and writes it so) */
    assert_true(json_object_is_type(json_object_array_get_idx(obj, 7), json_type_double));
    assert_true(signbit(json_object_get_double(json_object_array_get_idx(obj, 7))));
    assert_true(signbit(json_object_get_double(json_object_array_get_idx(obj, 8))));
    assert_encodes(obj, 0,
                   "[9223372036854775807,-9223372036854775808,9223372036854775808,"
                   "18446744073709551615,18446744073709552000,1.2345678901234568e+29,1,-0,-0,100,"
                   "5e-324,0]");
    int64_t i = 0;
    assert_co_fail_with(CO_EINVALID, co_json_get_int64(&i, obj, "2", NULL));
    assert_contains(co_error_last(), "[2]: expected integer in the int64 range, got number");
    assert_co_pass(co_json_get_int64(&i, obj, "6", NULL));
    assert_int_equal(i, 1);
    json_object_put(obj);
}

static void test_json__duplicate_keys_last_wins(void **state)
{
    (void)state;
    assert_roundtrip("{\"a\":1,\"b\":2,\"a\":3}", "{\"a\":3,\"b\":2}");
}

/*
 * Hash flooding: 49,152 members whose keys all started probing at one slot of the old unkeyed
 * duplicate-key table (FNV-1a over 131,072 slots) kept a review busy for seconds; now they are
 * read like any others, and a duplicate among them still loses to the last one.
 */
static void test_json__keys_colliding_under_fnv_are_read_and_deduplicated(void **state)
{
    (void)state;
    const size_t n = 49152;
    size_t slots = co_test_old_dedupe_slots(n);
    co_test_names keys = co_test_flood_keys(CO_TEST_FNV_BASIS, n, slots, "");
    uint64_t first =
        co_test_fnv1a64(CO_TEST_FNV_BASIS, keys.items[0], strlen(keys.items[0])) & (slots - 1);
    for (size_t i = 1; i < n; i++) {
        assert_true((co_test_fnv1a64(CO_TEST_FNV_BASIS, keys.items[i], strlen(keys.items[i])) &
                     (slots - 1)) == first);
    }
    char *members = co_test_object_of(&keys);
    members[strlen(members) - 1] = '\0'; /* the closing brace: one more member comes */
    char *text = co_xasprintf("%s,\"%s\":\"last\"}", members, keys.items[n / 2]);

    co_jdoc *doc = NULL;
    assert_co_pass(co_jdoc_parse(&doc, text, strlen(text), CO_MAX_DOCUMENT, NULL));
    const co_jv *root = co_jdoc_root(doc);
    assert_int_equal(root->len, n + 1);
    assert_int_equal(co_jv_members(root), n);
    assert_string_equal(co_jv_str(root, keys.items[n / 2]), "last");
    const co_jv *v = co_jv_get(root, keys.items[n - 1]);
    assert_non_null(v);
    assert_int_equal(v->as.i, n - 1);
    co_jdoc_free(doc);

    struct json_object *obj = parse(text);
    assert_int_equal(json_object_object_length(obj), n);
    assert_string_equal(json_object_get_string(json_object_object_get(obj, keys.items[n / 2])),
                        "last");
    json_object_put(obj);
    free(text);
    free(members);
    co_test_names_free(&keys);
}

static void test_json__lone_surrogates_become_replacement_characters(void **state)
{
    (void)state;
    assert_roundtrip("[\"\\ud800\",\"\\udc00x\",\"\\ud83d\\u0041\"]",
                     "[\"\xef\xbf\xbd\",\"\xef\xbf\xbdx\",\"\xef\xbf\xbd"
                     "A\"]");
}

/* ---- encoding ------------------------------------------------------------------------------- */

static void test_json__canonical_matches_go_marshal(void **state)
{
    (void)state;
    /* Expected strings are what Go's json.Marshal writes for the same map. */
    static const char text[] = "<a&b>\xe2\x80\xa8\xe2\x80\xa9\x01\x7f\t\n\r\"\\\xc3\xa9"
                               "\xf0\x9f\x98\x80\xff";
    struct json_object *obj = json_object_new_object();
    json_object_object_add(obj, "z", json_object_new_string_len(text, sizeof(text) - 1));
    struct json_object *arr = json_object_new_array();
    json_object_array_add(arr, json_object_new_int(1));
    json_object_array_add(arr, json_object_new_double(2.5));
    json_object_array_add(arr, NULL);
    json_object_array_add(arr, json_object_new_boolean(1));
    json_object_object_add(obj, "a", arr);
    assert_encodes(obj, CO_JSON_CANONICAL,
                   "{\"a\":[1,2.5,null,true],\"z\":\"\\u003ca\\u0026b\\u003e\\u2028\\u2029"
                   "\\u0001\x7f\\t\\n\\r\\\"\\\\\xc3\xa9\xf0\x9f\x98\x80\\ufffd\"}");
    /* insertion order without CO_JSON_SORTED; literal <>& on request */
    assert_encodes(obj, CO_JSON_NO_HTML_ESCAPE,
                   "{\"z\":\"<a&b>\\u2028\\u2029\\u0001\x7f\\t\\n\\r\\\"\\\\\xc3\xa9\xf0\x9f\x98"
                   "\x80\\ufffd\",\"a\":[1,2.5,null,true]}");
    json_object_put(obj);
    /* byte order of keys, not locale order */
    assert_roundtrip("{\"b\":1,\"B\":2,\"\xc3\xa9\":3,\"a\":4,\"aa\":5}",
                     "{\"B\":2,\"a\":4,\"aa\":5,\"b\":1,\"\xc3\xa9\":3}");
    /* control characters: \b and \f as Go >= 1.22 writes them */
    assert_roundtrip("\"\\b\\f\\u0000\\u001f\"", "\"\\b\\f\\u0000\\u001f\"");
}

/* Tricky bytes for every encoder of Go's string encoding: NUL, \b and \f, a control character,
 * DEL, HTML, U+2028/9, a valid U+FFFD, a surrogate, an overlong form, bytes that never start a
 * sequence, a code point past U+10FFFF, a valid three-byte character and a truncated one. */
static const char TRICKY[] =
    "\x00"
    "a\b\f\x1f\x7f<>&\xe2\x80\xa8\xe2\x80\xa9\xef\xbf\xbd\xed\xa0\x80\xc0\xaf"
    "\xf5\x80\xf4\x90\x80\x80\xe2\x82\x80\xe2\x82";
/* Go's json.Marshal of TRICKY, with the HTML escapes in %s (Go 1.22 and later for \b and \f):
 * each invalid byte is one U+FFFD, the NUL is written, not an end. */
#define TRICKY_GO(lt, gt, amp)                                                                     \
    "\"\\u0000a\\b\\f\\u001f\x7f" lt gt amp "\\u2028\\u2029\xef\xbf\xbd"                           \
    "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\xe2\x82\x80"    \
    "\\ufffd\\ufffd\""

static void test_json__strings_and_keys_encode_as_go(void **state)
{
    (void)state;
    struct json_object *str = json_object_new_string_len(TRICKY, (int)sizeof(TRICKY) - 1);
    assert_encodes(str, CO_JSON_CANONICAL, TRICKY_GO("\\u003c", "\\u003e", "\\u0026"));
    assert_encodes(str, CO_JSON_NO_HTML_ESCAPE, TRICKY_GO("<", ">", "&"));
    json_object_put(str);
    /* keys go through the same encoding */
    struct json_object *obj = json_object_new_object();
    json_object_object_add(obj, "<k>\xe2\x80\xa8&\xff", json_object_new_int(1));
    assert_encodes(obj, CO_JSON_CANONICAL, "{\"\\u003ck\\u003e\\u2028\\u0026\\ufffd\":1}");
    assert_encodes(obj, CO_JSON_NO_HTML_ESCAPE, "{\"<k>\\u2028&\\ufffd\":1}");
    json_object_put(obj);
}

static void test_json__pretty_matches_go_marshal_indent(void **state)
{
    (void)state;
    struct json_object *obj = parse("{\"a\":1,\"b\":[1,{\"c\":null}],\"d\":{},\"e\":[]}");
    assert_encodes(obj, CO_JSON_PRETTY,
                   "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    {\n      \"c\": null\n    }\n  ],\n"
                   "  \"d\": {},\n  \"e\": []\n}");
    json_object_put(obj);
}

static void test_json__float_formatting_matches_go(void **state)
{
    (void)state;
    /* FormatFloat(v,'g',-1,64), FormatFloat(v,'g',-1,32), json.Marshal(v), from Go 1.19 */
    static const struct {
        double v;
        const char *g64, *g32, *json;
    } cases[] = {
        {0, "0", "0", "0"},
        {1, "1", "1", "1"},
        {-1, "-1", "-1", "-1"},
        {0.5, "0.5", "0.5", "0.5"},
        {100, "100", "100", "100"},
        {1e6, "1e+06", "1e+06", "1000000"},
        {123456, "123456", "123456", "123456"},
        {1234567, "1.234567e+06", "1.234567e+06", "1234567"},
        {1e20, "1e+20", "1e+20", "100000000000000000000"},
        {1e21, "1e+21", "1e+21", "1e+21"},
        {1e-6, "1e-06", "1e-06", "0.000001"},
        {1e-7, "1e-07", "1e-07", "1e-7"},
        {1.5e-7, "1.5e-07", "1.5e-07", "1.5e-7"},
        {0.1, "0.1", "0.1", "0.1"},
        {1.0 / 3, "0.3333333333333333", "0.33333334", "0.3333333333333333"},
        {123456789.125, "1.23456789125e+08", "1.2345679e+08", "123456789.125"},
        {5e-324, "5e-324", "0", "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308", NULL, "1.7976931348623157e+308"},
        {9223372036854775808.0, "9.223372036854776e+18", "9.223372e+18", "9223372036854776000"},
        {2.5e-5, "2.5e-05", "2.5e-05", "0.000025"},
        {-0.0, "-0", "-0", "-0"},
    };
    char buf[CO_JSON__NUMBER_MAX];
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        co_json__format_double(buf, cases[i].v, 'g', 64);
        assert_string_equal(buf, cases[i].g64);
        if (cases[i].g32) {
            co_json__format_double(buf, cases[i].v, 'g', 32);
            assert_string_equal(buf, cases[i].g32);
        }
        co_json__format_double(buf, cases[i].v, 'j', 64);
        assert_string_equal(buf, cases[i].json);
    }
}

static void test_json__encode_refuses_nan_and_inf(void **state)
{
    (void)state;
    struct json_object *arr = json_object_new_array();
    json_object_array_add(arr, json_object_new_double(NAN));
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&b, "keep"));
    assert_co_fail_with(CO_EINVALID, co_json_encode(&b, arr, 0));
    assert_contains(co_error_last(), "json: unsupported value: NaN");
    assert_string_equal(co_buf_cstr(&b), "keep");
    json_object_array_put_idx(arr, 0, json_object_new_double(-INFINITY));
    assert_null(co_json_dumps(arr, 0));
    assert_contains(co_error_last(), "-Inf");
    co_buf_dispose(&b);
    json_object_put(arr);
}

static void test_json__encode_respects_buffer_cap(void **state)
{
    (void)state;
    struct json_object *obj = parse("{\"key\":\"a long enough value\"}");
    co_buf b = CO_BUF_INIT(10);
    assert_co_fail_with(CO_ETOOBIG, co_json_encode(&b, obj, 0));
    assert_null(b.ptr);
    json_object_put(obj);
}

/* Cases beside TRICKY, one kind of byte each. */
static void test_json__go_quote_escapes_like_go(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "\"plain\""},
        {"a<b>&c", "\"a\\u003cb\\u003e\\u0026c\""},
        {"q\"b\\", "\"q\\\"b\\\\\""},
        {"\n\r\t", "\"\\n\\r\\t\""},
        /* Go 1.22 and later (the operator is built with 1.26) escape these two briefly */
        {"\b\f", "\"\\b\\f\""},
        {"\x01\x1f\x7f", "\"\\u0001\\u001f\x7f\""},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
         "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
        {"\xe2\x80\xa8\xe2\x80\xa9", "\"\\u2028\\u2029\""},
        {"bad\xff", "\"bad\\ufffd\""},
        {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},
        {"\xc0\x80", "\"\\ufffd\\ufffd\""},
        {"\xe2\x82", "\"\\ufffd\\ufffd\""},
        {"", "\"\""},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        assert_co_pass(co_json_go_quote(&b, cases[i].in, strlen(cases[i].in), 0));
        assert_string_equal(co_buf_cstr(&b), cases[i].out);
        co_buf_dispose(&b);
    }
}

/* co_json_go_quote appends to what is there, reads exactly the length given (a NUL is a byte),
 * takes only CO_JSON_NO_HTML_ESCAPE from the flags, and fails at the cap with the buffer gone. */
static void test_json__go_quote_appends_len_bytes(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&b, "x="));
    assert_co_pass(co_json_go_quote(&b, TRICKY, sizeof(TRICKY) - 1, 0));
    assert_string_equal(co_buf_cstr(&b), "x=" TRICKY_GO("\\u003c", "\\u003e", "\\u0026"));
    co_buf_reset(&b);
    assert_co_pass(co_json_go_quote(&b, TRICKY, sizeof(TRICKY) - 1,
                                    CO_JSON_NO_HTML_ESCAPE | CO_JSON_PRETTY | CO_JSON_SORTED));
    assert_string_equal(co_buf_cstr(&b), TRICKY_GO("<", ">", "&"));
    co_buf_reset(&b);
    /* the length bounds the read: "a\0b" is three bytes, the first two of it two */
    assert_co_pass(co_json_go_quote(&b, "a\0b", 3, 0));
    assert_co_pass(co_json_go_quote(&b, "a\0b", 2, 0));
    assert_co_pass(co_json_go_quote(&b, "\xe2\x80\xa8", 2, 0));
    assert_co_pass(co_json_go_quote(&b, "", 0, 0));
    assert_string_equal(co_buf_cstr(&b), "\"a\\u0000b\"\"a\\u0000\"\"\\ufffd\\ufffd\"\"\"");
    co_buf_dispose(&b);
    /* the cap counts the escapes: 8 bytes hold "\u003c" in quotes, not "<<" */
    co_buf small = CO_BUF_INIT(8);
    assert_co_pass(co_json_go_quote(&small, "<", 1, 0));
    assert_int_equal(small.len, 8);
    co_buf_reset(&small);
    assert_co_fail_with(CO_ETOOBIG, co_json_go_quote(&small, "<<", 2, 0));
    assert_null(small.ptr);
}

/* ---- lookup and getters --------------------------------------------------------------------- */

static const char *manifest = "{\"metadata\":{\"name\":\"c1\",\"labels\":{"
                              "\"component-operator.cs.sap.com/owner-id\":\"abc\"},"
                              "\"generation\":3},"
                              "\"spec\":{\"requeueInterval\":10,\"suspend\":true,\"ratio\":0.5,"
                              "\"timeout\":null,\"dependencies\":[{\"name\":\"d0\"},{\"name\":7}],"
                              "\"a/b\":{\"~c\":1}}}";

static void test_json__str_follows_members_to_a_string(void **state)
{
    (void)state;
    struct json_object *o =
        parse("{\"a\":{\"b\":\"x\",\"n\":1,\"z\":null,\"l\":[\"y\"]},\"s\":\"top\"}");
    assert_string_equal(co_json_str(o, "a", "b", NULL), "x");
    assert_string_equal(co_json_str(o, "s", NULL), "top");
    assert_null(co_json_str(o, "a", "n", NULL));       /* not a string */
    assert_null(co_json_str(o, "a", "z", NULL));       /* null */
    assert_null(co_json_str(o, "a", "missing", NULL)); /* absent */
    assert_null(co_json_str(o, "a", "l", "0", NULL));  /* members only, never array elements */
    assert_null(co_json_str(o, "s", "x", NULL));       /* a string on the way */
    assert_null(co_json_str(o, "a", NULL));            /* an object at the end */
    assert_null(co_json_str(NULL, "a", NULL));
    json_object_put(o);
}

static void test_json__meta_accessors(void **state)
{
    (void)state;
    struct json_object *o = parse("{\"metadata\":{\"name\":\"n\",\"namespace\":\"ns\","
                                  "\"labels\":{\"app\":\"web\",\"num\":3},"
                                  "\"annotations\":{\"example.com/a\":\"v\"}}}");
    assert_string_equal(co_json_meta_name(o), "n");
    assert_string_equal(co_json_meta_namespace(o), "ns");
    assert_string_equal(co_json_meta_label(o, "app"), "web");
    assert_null(co_json_meta_label(o, "num"));
    assert_null(co_json_meta_label(o, "other"));
    assert_string_equal(co_json_meta_annotation(o, "example.com/a"), "v");
    assert_null(co_json_meta_annotation(o, "app"));
    json_object_put(o);
    o = parse("{\"metadata\":[]}");
    assert_null(co_json_meta_name(o));
    assert_null(co_json_meta_label(o, "app"));
    json_object_put(o);
}

static void test_json__member_lookup_past_the_linear_scan(void **state)
{
    (void)state;
    /* the first members are compared one by one, the rest found through the hash table */
    struct json_object *o = json_object_new_object();
    char key[16];
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        json_object_object_add(o, key, json_object_new_int(i));
    }
    json_object_object_add(o, "nil", NULL);
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(json_object_get_int(co_json__member(o, key)), i);
    }
    assert_null(co_json__member(o, "k40"));
    assert_null(co_json__member(o, "nil"));
    assert_null(co_json__member(json_object_object_get(o, "k1"), "k1"));
    assert_null(co_json__member(NULL, "k1"));
    json_object_put(o);
}

static void test_json__get_by_keys_with_dots_and_slashes(void **state)
{
    (void)state;
    struct json_object *obj = parse(manifest);
    struct json_object *v =
        co_json_get(obj, "metadata", "labels", "component-operator.cs.sap.com/owner-id", NULL);
    assert_string_equal(json_object_get_string(v), "abc");
    assert_string_equal(
        json_object_get_string(co_json_get(obj, "spec", "dependencies", "0", "name", NULL)), "d0");
    assert_null(co_json_get(obj, "spec", "dependencies", "2", NULL));
    assert_null(co_json_get(obj, "spec", "dependencies", "01", NULL));
    assert_null(co_json_get(obj, "spec", "missing", "x", NULL));
    assert_null(co_json_get(obj, "metadata", "name", "x", NULL)); /* through a string */
    assert_ptr_equal(co_json_get(obj, NULL), obj);
    static const char *const keys[] = {"spec", "a/b", "~c", NULL};
    assert_int_equal(json_object_get_int(co_json_getv(obj, keys)), 1);
    json_object_put(obj);
}

static void test_json__pointer_lookup(void **state)
{
    (void)state;
    struct json_object *obj = parse(manifest);
    struct json_object *v = NULL;
    assert_co_pass(
        co_json_pointer_get(&v, obj, "/metadata/labels/component-operator.cs.sap.com~1owner-id"));
    assert_string_equal(json_object_get_string(v), "abc");
    assert_co_pass(co_json_pointer_get(&v, obj, "/spec/a~1b/~0c"));
    assert_int_equal(json_object_get_int(v), 1);
    assert_co_pass(co_json_pointer_get(&v, obj, "/spec/dependencies/1/name"));
    assert_int_equal(json_object_get_int(v), 7);
    assert_co_pass(co_json_pointer_get(&v, obj, ""));
    assert_ptr_equal(v, obj);
    assert_co_pass(co_json_pointer_get(&v, obj, "/spec/timeout"));
    assert_null(v);
    assert_co_fail_with(CO_ENOTFOUND, co_json_pointer_get(&v, obj, "/spec/dependencies/-"));
    assert_co_fail_with(CO_ENOTFOUND, co_json_pointer_get(&v, obj, "/spec/dependencies/01"));
    assert_co_fail_with(CO_ENOTFOUND, co_json_pointer_get(&v, obj, "/nope"));
    assert_co_fail_with(CO_EINVALID, co_json_pointer_get(&v, obj, "spec"));
    assert_co_fail_with(CO_EINVALID, co_json_pointer_get(&v, obj, "/spec/a~2b"));
    json_object_put(obj);
}

static void test_json__typed_getters_name_the_field(void **state)
{
    (void)state;
    struct json_object *obj = parse(manifest);
    const char *s = NULL;
    int64_t i = 0;
    double d = 0;
    bool b = false;
    struct json_object *o = NULL;

    assert_co_pass(co_json_get_string(&s, obj, "metadata", "name", NULL));
    assert_string_equal(s, "c1");
    assert_co_pass(co_json_get_int64(&i, obj, "metadata", "generation", NULL));
    assert_int_equal(i, 3);
    assert_co_pass(co_json_get_double(&d, obj, "spec", "ratio", NULL));
    assert_true(d == 0.5);
    assert_co_pass(co_json_get_double(&d, obj, "spec", "requeueInterval", NULL));
    assert_true(d == 10);
    assert_co_pass(co_json_get_bool(&b, obj, "spec", "suspend", NULL));
    assert_true(b);
    assert_co_pass(co_json_get_object(&o, obj, "spec", "a/b", NULL));
    assert_co_pass(co_json_get_array(&o, obj, "spec", "dependencies", NULL));
    assert_int_equal(json_object_array_length(o), 2);

    assert_co_fail_with(CO_EINVALID, co_json_get_string(&s, obj, "spec", "requeueInterval", NULL));
    assert_string_equal(co_error_last(), "spec.requeueInterval: expected string, got number");
    assert_co_fail_with(CO_EINVALID, co_json_get_int64(&i, obj, "spec", "ratio", NULL));
    assert_string_equal(co_error_last(), "spec.ratio: expected integer, got number 0.5");
    assert_co_fail_with(CO_EINVALID,
                        co_json_get_string(&s, obj, "spec", "dependencies", "1", "name", NULL));
    assert_string_equal(co_error_last(), "spec.dependencies[1].name: expected string, got number");
    assert_co_fail_with(CO_EINVALID, co_json_get_bool(&b, obj, "metadata", "name", "x", NULL));
    assert_string_equal(co_error_last(), "metadata.name: expected object, got string");
    assert_co_fail_with(CO_EINVALID, co_json_get_array(&o, obj, "spec", NULL));
    assert_string_equal(co_error_last(), "spec: expected array, got object");
    assert_co_fail_with(CO_ENOTFOUND, co_json_get_string(&s, obj, "spec", "timeout", NULL));
    assert_string_equal(co_error_last(), "spec.timeout: not found");
    assert_co_fail_with(CO_ENOTFOUND, co_json_get_string(&s, obj, "spec", "x", "y", NULL));
    assert_string_equal(co_error_last(), "spec.x: not found");
    assert_co_fail_with(CO_ENOTFOUND, co_json_get_object(&o, obj, "spec", "timeout", "x", NULL));
    assert_string_equal(co_error_last(), "spec.timeout: not found");
    /* out-parameters are untouched on failure */
    assert_string_equal(s, "c1");
    assert_int_equal(i, 3);
    json_object_put(obj);
}

/* ---- editing -------------------------------------------------------------------------------- */

static void test_json__set_creates_intermediates(void **state)
{
    (void)state;
    struct json_object *obj = parse("{\"metadata\":{\"name\":\"x\",\"annotations\":null}}");
    assert_co_pass(co_json_set(obj, json_object_new_string("abc"), "metadata", "labels",
                               "component-operator.cs.sap.com/owner-id", NULL));
    assert_co_pass(
        co_json_set(obj, json_object_new_string("v"), "metadata", "annotations", "k", NULL));
    assert_co_pass(co_json_set(obj, json_object_new_int(1), "a", "b", "c", NULL));
    assert_co_pass(co_json_set(obj, NULL, "metadata", "name", NULL));
    assert_encodes(obj, CO_JSON_CANONICAL,
                   "{\"a\":{\"b\":{\"c\":1}},\"metadata\":{\"annotations\":{\"k\":\"v\"},"
                   "\"labels\":{\"component-operator.cs.sap.com/owner-id\":\"abc\"},"
                   "\"name\":null}}");
    /* a scalar on the way is an error, and the value is released (ASan checks) */
    assert_co_fail_with(
        CO_EINVALID, co_json_set(obj, json_object_new_string("leak?"), "a", "b", "c", "d", NULL));
    assert_string_equal(co_error_last(), "a.b.c: expected object, got number");
    struct json_object *arr = parse("{\"l\":[{\"x\":1}]}");
    assert_co_pass(co_json_set(arr, json_object_new_int(2), "l", "0", "x", NULL));
    assert_co_pass(co_json_set(arr, json_object_new_int(3), "l", "0", NULL));
    assert_co_fail_with(CO_EINVALID, co_json_set(arr, json_object_new_int(4), "l", "1", NULL));
    assert_contains(co_error_last(), "l[1]: no such array element");
    assert_encodes(arr, 0, "{\"l\":[3]}");
    struct json_object *scalar = json_object_new_int(1);
    assert_co_fail_with(CO_EINVALID, co_json_set(scalar, json_object_new_int(2), "a", NULL));
    json_object_put(scalar);
    json_object_put(arr);
    json_object_put(obj);
}

static void test_json__delete(void **state)
{
    (void)state;
    struct json_object *obj = parse("{\"a\":{\"b\":1,\"c\":2},\"l\":[1,2,3]}");
    assert_co_pass(co_json_delete(obj, "a", "b", NULL));
    assert_co_fail_with(CO_ENOTFOUND, co_json_delete(obj, "a", "b", NULL));
    assert_string_equal(co_error_last(), "a.b: not found");
    assert_co_pass(co_json_delete(obj, "l", "1", NULL));
    assert_co_fail_with(CO_ENOTFOUND, co_json_delete(obj, "l", "5", NULL));
    assert_co_fail_with(CO_ENOTFOUND, co_json_delete(obj, "x", "y", NULL));
    assert_co_fail_with(CO_ENOTFOUND, co_json_delete(obj, NULL));
    assert_encodes(obj, 0, "{\"a\":{\"c\":2},\"l\":[1,3]}");
    json_object_put(obj);
}

static void test_json__copy_is_deep_and_equal(void **state)
{
    (void)state;
    struct json_object *obj = parse(manifest);
    struct json_object *copy = co_json_copy(obj);
    assert_ptr_not_equal(copy, obj);
    assert_true(co_json_equal(obj, copy));
    assert_co_pass(co_json_set(copy, json_object_new_string("changed"), "metadata", "name", NULL));
    assert_false(co_json_equal(obj, copy));
    const char *s = NULL;
    assert_co_pass(co_json_get_string(&s, obj, "metadata", "name", NULL));
    assert_string_equal(s, "c1");
    assert_null(co_json_copy(NULL));
    struct json_object *u = parse("[18446744073709551615,\"a\\u0000b\"]");
    struct json_object *uc = co_json_copy(u);
    assert_true(co_json_equal(u, uc));
    assert_int_equal(co_json_string_len(json_object_array_get_idx(uc, 1)), 3);
    json_object_put(u);
    json_object_put(uc);
    json_object_put(copy);
    json_object_put(obj);
}

static void test_json__equality_rules(void **state)
{
    (void)state;
    static const struct {
        const char *a, *b;
        bool eq;
    } cases[] = {
        {"{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}", true},
        {"1", "1.0", true},
        {"1", "1.5", false},
        {"[1,2]", "[2,1]", false},
        {"null", "null", true},
        {"null", "false", false},
        {"0", "false", false},
        {"\"a\"", "\"a\"", true},
        {"\"a\\u0000b\"", "\"a\\u0000c\"", false},
        {"{\"a\":null}", "{}", false},
        {"{\"a\":null}", "{\"b\":null}", false},
        {"9223372036854775807", "9223372036854775808", false},
        {"18446744073709551615", "18446744073709551615", true},
        {"9223372036854775807", "9.223372036854775807e18", false},
        {"-0", "0.0", true},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        struct json_object *a = parse(cases[i].a), *b = parse(cases[i].b);
        if (co_json_equal(a, b) != cases[i].eq || co_json_equal(b, a) != cases[i].eq) {
            fail_msg("equal(%s, %s) should be %d", cases[i].a, cases[i].b, cases[i].eq);
        }
        json_object_put(a);
        json_object_put(b);
    }
}

static void test_json__merge_recurses_and_later_wins(void **state)
{
    (void)state;
    struct json_object *dst =
        parse("{\"a\":{\"x\":1,\"y\":{\"z\":1}},\"b\":{\"m\":1},\"c\":[1,2],\"d\":1,\"e\":2}");
    struct json_object *src =
        parse("{\"a\":{\"y\":{\"w\":2},\"q\":3},\"b\":\"scalar\",\"c\":[3],\"d\":{\"n\":1},"
              "\"e\":null,\"f\":true}");
    co_json_merge(dst, src);
    /* b: a map overridden by a scalar is that scalar (the Go original yields null) */
    assert_encodes(dst, CO_JSON_CANONICAL,
                   "{\"a\":{\"q\":3,\"x\":1,\"y\":{\"w\":2,\"z\":1}},\"b\":\"scalar\",\"c\":[3],"
                   "\"d\":{\"n\":1},\"e\":null,\"f\":true}");
    /* src is untouched and shares nothing with dst */
    assert_co_pass(co_json_set(dst, json_object_new_int(9), "d", "n", NULL));
    assert_int_equal(json_object_get_int(co_json_get(src, "d", "n", NULL)), 1);
    json_object_put(src);
    json_object_put(dst);
}

/* ---- JSON Patch ----------------------------------------------------------------------------- */

/* Applies @p patch to @p doc and compares with @p want (NULL: expect @p code). */
static void
check_patch(const char *doc, const char *patch, const char *want, int code, const char *msg)
{
    struct json_object *d = parse(doc), *p = parse(patch), *out = (struct json_object *)0x1;
    if (want) {
        assert_co_pass(co_json_patch_apply(&out, d, p));
        struct json_object *w = parse(want);
        if (!co_json_equal(out, w)) {
            char *got = co_json_dumps(out, 0);
            fail_msg("patch %s on %s gave %s, want %s", patch, doc, got, want);
        }
        json_object_put(w);
        json_object_put(out);
    } else {
        co_error_clear();
        int rc = co_json_patch_apply(&out, d, p);
        if (rc != code) {
            fail_msg("patch %s on %s returned %d (%s), want %d", patch, doc, rc, co_error_last(),
                     code);
        }
        assert_ptr_equal(out, (struct json_object *)0x1);
        assert_contains(co_error_last(), msg);
    }
    /* the input document is never modified */
    struct json_object *again = parse(doc);
    assert_true(co_json_equal(again, d));
    json_object_put(again);
    json_object_put(d);
    json_object_put(p);
}

static void test_json__patch_rfc6902_examples(void **state)
{
    (void)state;
    /* RFC 6902 appendix A */
    check_patch("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
                "{\"baz\":\"qux\",\"foo\":\"bar\"}", 0, NULL);
    check_patch("{\"foo\":[\"bar\",\"baz\"]}",
                "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
                "{\"foo\":[\"bar\",\"qux\",\"baz\"]}", 0, NULL);
    check_patch("{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]",
                "{\"foo\":\"bar\"}", 0, NULL);
    check_patch("{\"foo\":[\"bar\",\"qux\",\"baz\"]}", "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
                "{\"foo\":[\"bar\",\"baz\"]}", 0, NULL);
    check_patch("{\"baz\":\"qux\",\"foo\":\"bar\"}",
                "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]",
                "{\"baz\":\"boo\",\"foo\":\"bar\"}", 0, NULL);
    check_patch("{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
                "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
                "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}", 0,
                NULL);
    check_patch("{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
                "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]",
                "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}", 0, NULL);
    check_patch("{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
                "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},"
                "{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2}]",
                "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}", 0, NULL);
    check_patch("{\"baz\":\"qux\"}", "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]",
                NULL, CO_ECONFLICT, "test /baz: value differs");
    check_patch("{\"foo\":\"bar\"}",
                "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]",
                "{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}", 0, NULL);
    check_patch("{\"foo\":\"bar\"}",
                "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"xyz\":123}]",
                "{\"foo\":\"bar\",\"baz\":\"qux\"}", 0, NULL);
    check_patch("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":\"qux\"}]",
                NULL, CO_EINVALID, "path \"/baz/bat\" does not exist");
    check_patch("{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]",
                "{\"/\":9,\"~1\":10}", 0, NULL);
    check_patch("{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":\"10\"}]",
                NULL, CO_ECONFLICT, "value differs");
    check_patch("{\"foo\":[\"bar\"]}",
                "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"abc\",\"def\"]}]",
                "{\"foo\":[\"bar\",[\"abc\",\"def\"]]}", 0, NULL);
}

static void test_json__patch_edge_cases(void **state)
{
    (void)state;
    /* root replacement, copy, escapes, null values, no-op move */
    check_patch("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[1]}]", "[1]", 0, NULL);
    check_patch("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"\",\"value\":null}]", "null", 0, NULL);
    check_patch("{\"a\":{\"b\":[1]}}",
                "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/c\"},"
                "{\"op\":\"add\",\"path\":\"/c/b/0\",\"value\":0}]",
                "{\"a\":{\"b\":[1]},\"c\":{\"b\":[0,1]}}", 0, NULL);
    check_patch("{\"a/b\":{\"~\":1}}",
                "[{\"op\":\"move\",\"from\":\"/a~1b/~0\",\"path\":\"/x~0y\"}]",
                "{\"a/b\":{},\"x~y\":1}", 0, NULL);
    check_patch("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/n\",\"value\":null}]",
                "{\"a\":1,\"n\":null}", 0, NULL);
    check_patch("{\"a\":1}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a\"}]", "{\"a\":1}", 0,
                NULL);
    check_patch("[1,2]", "[{\"op\":\"add\",\"path\":\"/2\",\"value\":3}]", "[1,2,3]", 0, NULL);
    check_patch("[]", "[]", "[]", 0, NULL);
    /* failures: all or nothing, precise messages */
    check_patch(
        "{\"a\":1}",
        "[{\"op\":\"add\",\"path\":\"/b\",\"value\":2},{\"op\":\"remove\",\"path\":\"/c\"}]", NULL,
        CO_EINVALID, "JSON patch operation 1: remove /c: path \"/c\" does not exist");
    check_patch("[1,2]", "[{\"op\":\"add\",\"path\":\"/3\",\"value\":3}]", NULL, CO_EINVALID,
                "index 3 is out of range (length 2)");
    check_patch("[1,2]", "[{\"op\":\"remove\",\"path\":\"/-\"}]", NULL, CO_EINVALID,
                "\"-\" is not an array index");
    check_patch("[1,2]", "[{\"op\":\"replace\",\"path\":\"/01\",\"value\":0}]", NULL, CO_EINVALID,
                "does not exist");
    check_patch("{\"a\":{\"b\":1}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/c\"}]", NULL,
                CO_EINVALID, "cannot move \"/a\" into itself");
    check_patch("{}", "[{\"op\":\"bogus\",\"path\":\"/a\"}]", NULL, CO_EINVALID,
                "unknown operation \"bogus\"");
    check_patch("{}", "[{\"op\":\"add\",\"path\":\"/a\"}]", NULL, CO_EINVALID,
                "add /a: missing \"value\"");
    check_patch("{}", "[{\"op\":\"copy\",\"path\":\"/a\"}]", NULL, CO_EINVALID, "missing \"from\"");
    check_patch("{}", "[{\"path\":\"/a\"}]", NULL, CO_EINVALID, "missing \"op\"");
    check_patch("{}", "[{\"op\":\"remove\",\"path\":1}]", NULL, CO_EINVALID,
                "\"path\" must be a string");
    check_patch("{}", "[1]", NULL, CO_EINVALID, "operation must be an object");
    check_patch("{}", "{}", NULL, CO_EINVALID, "JSON patch must be an array");
    check_patch("{}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", NULL, CO_EINVALID,
                "not a JSON pointer");
    check_patch("{\"a\":\"s\"}", "[{\"op\":\"add\",\"path\":\"/a/b\",\"value\":1}]", NULL,
                CO_EINVALID, "parent is string");
    check_patch("{}", "[{\"op\":\"remove\",\"path\":\"\"}]", NULL, CO_EINVALID,
                "cannot remove the whole document");
}

/* Diffs @p a and @p b, checks the patch has @p nops operations and turns a into b. */
static void check_diff(const char *a, const char *b, int nops)
{
    struct json_object *ja = parse(a), *jb = parse(b), *out = NULL;
    struct json_object *patch = co_json_patch_diff(ja, jb);
    char *ptext = co_json_dumps(patch, 0);
    assert_co_pass(co_json_patch_apply(&out, ja, patch));
    if (!co_json_equal(out, jb)) {
        fail_msg("patch %s does not turn %s into %s", ptext, a, b);
    }
    /* the exact types survive, not just numeric equality */
    char *want = co_json_dumps(jb, CO_JSON_CANONICAL), *got = co_json_dumps(out, CO_JSON_CANONICAL);
    assert_string_equal(got, want);
    if (nops >= 0 && (int)json_object_array_length(patch) != nops) {
        fail_msg("diff of %s and %s: %s has %zu operations, want %d", a, b, ptext,
                 json_object_array_length(patch), nops);
    }
    free(want);
    free(got);
    free(ptext);
    json_object_put(patch);
    json_object_put(out);
    json_object_put(ja);
    json_object_put(jb);
}

static void test_json__patch_diff_round_trips_minimally(void **state)
{
    (void)state;
    check_diff("{}", "{}", 0);
    check_diff("{\"a\":1}", "{\"a\":1}", 0);
    check_diff("{\"a\":1}", "{\"a\":2}", 1);
    check_diff("{\"a\":1}", "{\"a\":1.0}", 1);
    check_diff("{\"a\":1,\"b\":2}", "{\"b\":2,\"c\":3}", 2);
    check_diff("{\"a/b\":{\"~x\":1}}", "{\"a/b\":{\"~x\":2}}", 1);
    check_diff("{\"m\":{\"labels\":{\"x\":\"1\"}}}",
               "{\"m\":{\"labels\":{\"x\":\"1\",\"y\":\"2\"}}}", 1);
    check_diff("[1,2,3,4,5]", "[1,2,9,3,4,5]", 1);
    check_diff("[1,2,3,4,5]", "[1,2,4,5]", 1);
    check_diff("[1,2,3]", "[1,2,3,4,5]", 2);
    check_diff("[1,2,3,4,5]", "[1]", 4);
    check_diff("[1,2,3]", "[3,2,1]", 2);
    check_diff("[{\"a\":1},{\"b\":2}]", "[{\"a\":1},{\"b\":3}]", 1);
    check_diff("[1,1,1]", "[1,1]", 1);
    check_diff("[]", "[[],{}]", 2);
    check_diff("{\"a\":[1]}", "{\"a\":{\"0\":1}}", 1);
    check_diff("{\"a\":null}", "{\"a\":0}", 1);
    check_diff("null", "{\"a\":1}", 1);
    check_diff("{\"a\":1}", "\"s\"", 1);
    check_diff("{\"spec\":{\"values\":{\"x\":[1,{\"y\":[true,false]}]},\"timeout\":\"10m\"}}",
               "{\"spec\":{\"values\":{\"x\":[1,{\"y\":[true]},3]},\"retryInterval\":\"1m\"}}", -1);
}

/* ---- JSON merge patch ----------------------------------------------------------------------- */

static void test_json__merge_patch_rfc7386_examples(void **state)
{
    (void)state;
    /* RFC 7386 appendix A: target, patch, result */
    static const char *const cases[][3] = {
        {"{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"a\":null}", "{}"},
        {"{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"},
        {"{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"},
        {"{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"},
        {"{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"},
        {"[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]"},
        {"{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]"},
        {"{\"a\":\"foo\"}", "null", "null"},
        {"{\"a\":\"foo\"}", "\"bar\"", "\"bar\""},
        {"{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"},
        {"[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}"},
        {"{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        struct json_object *t = parse(cases[i][0]), *p = parse(cases[i][1]);
        struct json_object *want = parse(cases[i][2]);
        struct json_object *got = co_json_merge_patch_apply(t, p);
        if (!co_json_equal(got, want)) {
            fail_msg("merge patch %s on %s", cases[i][1], cases[i][0]);
        }
        json_object_put(t);
        json_object_put(p);
        json_object_put(want);
        json_object_put(got);
    }
}

static void test_json__merge_patch_diff(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        /* from, to, expected patch */
        {"{\"a\":1}", "{\"a\":1}", "{}"},
        {"{\"a\":1,\"b\":2}", "{\"a\":1,\"c\":3}", "{\"b\":null,\"c\":3}"},
        {"{\"m\":{\"x\":1,\"y\":2}}", "{\"m\":{\"x\":1,\"y\":3}}", "{\"m\":{\"y\":3}}"},
        {"{\"m\":{\"x\":1}}", "{\"m\":[1]}", "{\"m\":[1]}"},
        {"{\"l\":[1,2]}", "{\"l\":[1]}", "{\"l\":[1]}"},
        {"{\"a\":1}", "[1]", "[1]"},
        {"{\"a\":1}", "{\"a\":1.0}", "{\"a\":1.0}"},
        {"{\"metadata\":{\"finalizers\":[\"x\"],\"resourceVersion\":\"5\"}}",
         "{\"metadata\":{\"finalizers\":[],\"resourceVersion\":\"5\"}}",
         "{\"metadata\":{\"finalizers\":[]}}"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        struct json_object *from = parse(cases[i][0]), *to = parse(cases[i][1]);
        struct json_object *want = parse(cases[i][2]);
        struct json_object *patch = co_json_merge_patch_diff(from, to);
        char *text = co_json_dumps(patch, CO_JSON_CANONICAL);
        char *wtext = co_json_dumps(want, CO_JSON_CANONICAL);
        assert_string_equal(text, wtext);
        struct json_object *applied = co_json_merge_patch_apply(from, patch);
        assert_true(co_json_equal(applied, to));
        free(text);
        free(wtext);
        json_object_put(applied);
        json_object_put(patch);
        json_object_put(want);
        json_object_put(from);
        json_object_put(to);
    }
}

static const char *const skip_a_b[] = {"a", "b", NULL};
static const char *const skip_x_a[] = {"x", "a", NULL};
static const char *const skip_n_m[] = {"n", "m", NULL};
static const char *const skip_top[] = {"top", NULL};

static void test_json__skip_leaves_out_the_members_named_and_nothing_else(void **state)
{
    (void)state;
    static const char *const *const skip[] = {skip_a_b, skip_x_a, skip_n_m, skip_top, NULL};
    /* a.b twice (the last "a" wins either way); x.a only inside an array, which is not
     * followed; n is a scalar, so n.m names nothing. */
    const char *doc = "{\"a\":{\"b\":1,\"c\":{\"b\":[{\"b\":2}]}},\"top\":{\"deep\":[1,{\"q\":"
                      "\"\\u00e9\"}]},\"x\":[{\"a\":{\"b\":4}}],\"n\":3,"
                      "\"a\":{\"b\":{\"z\":1e300},\"e\":6,\"c\":{\"b\":\"kept\"}}}";
    struct json_object *got = NULL;
    assert_co_pass(co_json_parse_skip(&got, doc, strlen(doc), CO_MAX_DOCUMENT, skip));
    struct json_object *want =
        parse("{\"a\":{\"e\":6,\"c\":{\"b\":\"kept\"}},\"x\":[{\"a\":{\"b\":4}}],"
              "\"n\":3}");
    assert_true(co_json_equal(got, want));
    json_object_put(got);
    json_object_put(want);
    /* No lists, or an empty set: everything is built. */
    static const char *const *const none[] = {NULL};
    struct json_object *full = parse(doc);
    assert_co_pass(co_json_parse_skip(&got, doc, strlen(doc), CO_MAX_DOCUMENT, none));
    assert_true(co_json_equal(got, full));
    json_object_put(got);
    assert_co_pass(co_json_parse_skip(&got, doc, strlen(doc), CO_MAX_DOCUMENT, NULL));
    assert_true(co_json_equal(got, full));
    json_object_put(got);
    json_object_put(full);
    /* A root that is not an object has no members to leave out. */
    assert_co_pass(co_json_parse_skip(&got, "[{\"top\":1}]", 11, CO_MAX_DOCUMENT, skip));
    assert_int_equal(json_object_array_length(got), 1);
    json_object_put(got);
}

/* "[]" follows every element of an array, at any depth, and only there. */
/* Lists whose names share first bytes, at one level and across levels, separate copies of the
 * same name among them (so neither the string nor its address tells them apart), and keys that
 * begin like a name without being it, or that a byte-class lookup would confuse ('a' and '!'
 * are 64 apart). Seven lists also spread the bits over more than one word of a byte index. */
static void test_json__skip_lists_that_begin_alike(void **state)
{
    (void)state;
    static const char a1[] = "a", a2[] = "a";
    static const char *const l1[] = {a1, "b1", NULL};
    static const char *const l2[] = {a2, "b2", NULL};
    static const char *const l3[] = {a1, "c", NULL};
    static const char *const l4[] = {"ab", NULL};
    static const char *const l5[] = {"b", "a", "a", NULL};
    static const char *const l6[] = {a2, "b1x", NULL};
    static const char *const l7[] = {"!", NULL};
    /* deeper than the index reaches */
    static const char *const l8[] = {"d", "d", "d", "d", "d", "d", "d", "x", NULL};
    static const char *const *const skip[] = {l1, l2, l3, l4, l5, l6, l7, l8, NULL};
    const char *doc = "{\"a\":{\"b1\":1,\"b2\":2,\"b3\":3,\"c\":4,\"cc\":5,\"b1x\":0,\"b\":9},"
                      "\"ab\":6,\"ac\":7,\"abc\":8,\"!\":1,\"A\":2,\"b\":{\"a\":{\"a\":1,\"ab\":2},"
                      "\"ab\":{\"a\":3}},\"d\":{\"d\":{\"d\":{\"d\":{\"d\":{\"d\":{\"d\":"
                      "{\"x\":1,\"y\":2}}}}}}}}";
    struct json_object *got = NULL;
    assert_co_pass(co_json_parse_skip(&got, doc, strlen(doc), CO_MAX_DOCUMENT, skip));
    struct json_object *want =
        parse("{\"a\":{\"b3\":3,\"cc\":5,\"b\":9},\"ac\":7,\"abc\":8,\"A\":2,"
              "\"b\":{\"a\":{\"ab\":2},\"ab\":{\"a\":3}},"
              "\"d\":{\"d\":{\"d\":{\"d\":{\"d\":{\"d\":{\"d\":{\"y\":2}}}}}}}}");
    assert_true(co_json_equal(got, want));
    json_object_put(got);
    /* the document leaves out the same members, and keeps the others in order */
    co_jdoc *d = NULL;
    assert_co_pass(co_jdoc_parse(&d, doc, strlen(doc), CO_MAX_DOCUMENT, skip));
    struct json_object *built = co_jv_to_json(co_jdoc_root(d));
    char *text = co_json_dumps(built, 0);
    char *want_text = co_json_dumps(want, 0);
    json_object_put(built);
    json_object_put(want);
    assert_string_equal(text, want_text);
    free(want_text);
    free(text);
    co_jdoc_free(d);
}

static void test_json__skip_into_every_array_element(void **state)
{
    (void)state;
    static const char *const mf[] = {"items", CO_JSON_EVERY_ELEMENT, "metadata", "managedFields",
                                     NULL};
    static const char *const nested[] = {"m", CO_JSON_EVERY_ELEMENT, CO_JSON_EVERY_ELEMENT, "x",
                                         NULL};
    static const char *const *const skip[] = {mf, nested, NULL};
    const char *doc = "{\"items\":[{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"f\":{}}]}},"
                      "7,{\"metadata\":{\"managedFields\":null}},{\"spec\":{\"managedFields\":1}},"
                      "[{\"metadata\":{\"managedFields\":2}}]],"
                      "\"m\":[[{\"x\":1,\"y\":2}],[],{\"x\":3}],"
                      "\"other\":[{\"metadata\":{\"managedFields\":3}}],"
                      "\"[]\":{\"metadata\":{\"managedFields\":4}}}";
    struct json_object *got = NULL;
    assert_co_pass(co_json_parse_skip(&got, doc, strlen(doc), CO_MAX_DOCUMENT, skip));
    /* left out: managedFields of the items' metadata, x of the objects in m's inner arrays;
     * kept: a scalar element, an object without metadata, an array element (not an object),
     * an object directly in m (one level too shallow), other lists, a member named "[]" */
    struct json_object *want =
        parse("{\"items\":[{\"metadata\":{\"name\":\"a\"}},7,{\"metadata\":{}},"
              "{\"spec\":{\"managedFields\":1}},[{\"metadata\":{\"managedFields\":2}}]],"
              "\"m\":[[{\"y\":2}],[],{\"x\":3}],"
              "\"other\":[{\"metadata\":{\"managedFields\":3}}],"
              "\"[]\":{\"metadata\":{\"managedFields\":4}}}");
    if (!co_json_equal(got, want)) {
        fail_msg("got %s", json_object_to_json_string(got));
    }
    json_object_put(got);
    json_object_put(want);
    /* malformed JSON inside a left-out member is refused as before */
    const char *bad = "{\"items\":[{\"metadata\":{\"managedFields\":[1,]}}]}";
    assert_co_fail_with(CO_EINVALID,
                        co_json_parse_skip(&got, bad, strlen(bad), CO_MAX_DOCUMENT, skip));
    assert_contains(co_error_last(), "column 43");
}

/* Parses @p doc with and without @p skip and requires the same code and message. */
static void assert_same_refusal(const char *doc, size_t len, const char *const *const *skip)
{
    struct json_object *obj = NULL;
    co_error_clear();
    int want = co_json_parse(&obj, doc, len);
    char *want_msg = co_xstrdup(co_error_last());
    json_object_put(obj);
    obj = NULL;
    co_error_clear();
    int got = co_json_parse_skip(&obj, doc, len, CO_MAX_DOCUMENT, skip);
    if (got != want || strcmp(want_msg, co_error_last()) != 0) {
        fail_msg("%.*s: full parse %d \"%s\", with skip %d \"%s\"", (int)len, doc, want, want_msg,
                 got, co_error_last());
    }
    json_object_put(obj);
    free(want_msg);
}

/*
 * A left-out string is passed over sixteen bytes at a time, an escape clearing its two bytes
 * in the block. Each piece, valid or not, at every offset across three blocks (an escape that
 * straddles two, an escaped backslash before a quote, a stop right after an escape) is judged
 * exactly as when the string is kept, and the member after it is still read.
 */
static void test_json__left_out_strings_are_judged_at_every_offset(void **state)
{
    (void)state;
    static const char *const *const skip[] = {skip_top, NULL};
    static const char *const pieces[] = {
        "\\\"",           "\\\\", "\\\\\\\"",  "\\/\\b\\f", "\\n\\r\\t", "\\u00e9\\\"",
        "\\ud83d\\ude00", "\\x",  "\\u12g",    "\\\"\\'",   "\x01",      "\\\"\x1f",
        "\xc3\xa9\\\"",   "\xff", "\\\\\"x\"", "\\",        "\\\\\\",
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(pieces); i++) {
        for (int off = 0; off < 40; off++) {
            char *doc = co_xasprintf("{\"top\":\"%.*s%s%.*s\",\"after\":[1,2,3,4,5,6,7,8,9]}", off,
                                     "\\\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", pieces[i],
                                     40 - off, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
            assert_same_refusal(doc, strlen(doc), skip);
            struct json_object *obj = NULL;
            if (co_json_parse(&obj, doc, strlen(doc)) == 0) {
                json_object_put(obj);
                assert_co_pass(co_json_parse_skip(&obj, doc, strlen(doc), CO_MAX_DOCUMENT, skip));
                assert_non_null(json_object_object_get(obj, "after"));
                assert_null(json_object_object_get(obj, "top"));
                json_object_put(obj);
            }
            free(doc);
        }
    }
}

static void test_json__skip_refuses_malformed_members_exactly_as_a_full_parse(void **state)
{
    (void)state;
    static const char *const *const skip[] = {skip_top, NULL};
    static const char *const bad[] = {
        "[1,]",
        "{\"a\":1,}",
        "{'a':1}",
        "NaN",
        "-Infinity",
        "True",
        "nul",
        "01",
        "-01",
        "1.",
        ".5",
        "1e",
        "+1",
        "\"\\x\"",
        "\"\\u12\"",
        "\"a\tb\"",
        "\"\xff\"",
        "\"\xe2\x82\"",
        "\"\xed\xa0\x80\"",
        "{\"a\" 1}",
        "[1 2]",
        "{\"a\":1 \"b\":2}",
        "/* c */ 1",
        "{\"k\\u0000\":1}",
        "1e400",
        "-1e400",
        "[\"\\ud800\\u12\"]",
        "{\"a\":[{\"b\":\"\\uDBFF\\uDFFF\",\"c\":[tru]}]}",
        /* after a run of one-character escapes, which a left-out string steps over apart */
        "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\x\"",
        "\"\\n\\n\\",
        "\"\\\"\\u12\"",
        "\"\\t\x01\"",
        "\"\\n\xff\"",
        "\"\\\"\\\"",
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        char *doc = co_xasprintf("{\"keep\":[1],\n \"top\": %s,\"after\":2}", bad[i]);
        assert_same_refusal(doc, strlen(doc), skip);
        free(doc);
    }
    /* Every truncation of a document whose second half is left out. */
    const char *doc = "{\"keep\":{\"x\":\"y\"},\"top\":{\"metadata\":{\"name\":\"x\",\"labels\":"
                      "{\"a\":\"b\"}},\"spec\":[1,2.5e3,-0,true,false,null,\"\\u00e9\\n\"]}}";
    for (size_t cut = 0; cut < strlen(doc); cut++) {
        assert_same_refusal(doc, cut, skip);
    }
    /* ... and of one whose left-out part is escaped JSON, as in a last-applied annotation */
    const char *escaped = "{\"keep\":1,\"top\":\"{\\\"a\\\":\\\"b\\\\\\\"c\\\"}\\n\\t\\/"
                          "\\u00e9\\r\\b\\f\"}";
    for (size_t cut = 0; cut < strlen(escaped); cut++) {
        assert_same_refusal(escaped, cut, skip);
    }
    struct json_object *kept = NULL;
    assert_co_pass(co_json_parse_skip(&kept, escaped, strlen(escaped), CO_MAX_DOCUMENT, skip));
    char *text = co_json_dumps(kept, 0);
    assert_string_equal(text, "{\"keep\":1}");
    free(text);
    json_object_put(kept);
    /* The nesting cap counts the levels of a left-out member too: one level below it is
     * accepted, the cap itself is not, whether the levels are arrays or objects. */
    for (int levels = CO_MAX_NESTING - 1; levels <= CO_MAX_NESTING; levels++) {
        for (int objects = 0; objects < 2; objects++) {
            co_buf deep = CO_BUF_INIT(SIZE_MAX);
            assert_co_pass(co_buf_puts(&deep, "{\"top\":"));
            for (int i = 0; i < levels; i++) {
                assert_co_pass(co_buf_puts(&deep, objects ? "{\"k\":" : "["));
            }
            assert_co_pass(co_buf_puts(&deep, "0"));
            for (int i = 0; i < levels; i++) {
                assert_co_pass(co_buf_putc(&deep, objects ? '}' : ']'));
            }
            assert_co_pass(co_buf_putc(&deep, '}'));
            struct json_object *obj = NULL;
            static const char *const *const none[] = {NULL};
            int rc = co_json_parse_skip(&obj, co_buf_cstr(&deep), deep.len, CO_MAX_DOCUMENT, none);
            assert_int_equal(rc == 0, levels < CO_MAX_NESTING);
            json_object_put(obj);
            assert_same_refusal(co_buf_cstr(&deep), deep.len, skip);
            co_buf_dispose(&deep);
        }
    }
}

/* Strings are scanned a word at a time: every kind of byte that ends a plain run must be found
 * wherever it falls in a word, and runs between escapes must be kept in order. */
static void test_json__string_scanning_finds_every_byte_at_every_offset(void **state)
{
    (void)state;
    static const struct {
        const char *insert; /* put after @p at plain bytes */
        const char *want;   /* decoded, or NULL when refused */
        const char *msg;
    } kinds[] = {
        {"\\\"", "\"", NULL},
        {"\\\\", "\\", NULL},
        {"\\n", "\n", NULL},
        {"\\u00e9", "\xc3\xa9", NULL},
        {"\\ud83d\\ude00", "\xf0\x9f\x98\x80", NULL},
        {"\xc3\xa9", "\xc3\xa9", NULL},
        {"\x7f", "\x7f", NULL},
        {"~", "~", NULL},
        {"\x1f", NULL, "control character 0x1f"},
        {"\t", NULL, "control character 0x09"},
        {"\x80", NULL, "invalid UTF-8"},
        {"\xff", NULL, "invalid UTF-8"},
        {"\\q", NULL, "invalid escape"},
    };
    static const char plain[] = "abc DEF/{}[]:,0123456789 !#$%&'()*+-.;<=>?@^_`|~";
    for (size_t k = 0; k < CO_ARRAY_SIZE(kinds); k++) {
        for (int at = 0; at <= 17; at++) {
            for (int after = 0; after <= 9; after += 9) {
                char *doc =
                    co_xasprintf("[\"%.*s%s%.*s\"]", at, plain, kinds[k].insert, after, plain + 20);
                struct json_object *obj = NULL;
                co_error_clear();
                int rc = co_json_parse(&obj, doc, strlen(doc));
                if (!kinds[k].want) {
                    assert_int_equal(rc, CO_EINVALID);
                    char *where = co_xasprintf("column %d: %s", 3 + at, kinds[k].msg);
                    assert_contains(co_error_last(), where);
                    free(where);
                } else {
                    assert_co_pass(rc);
                    char *want =
                        co_xasprintf("%.*s%s%.*s", at, plain, kinds[k].want, after, plain + 20);
                    struct json_object *str = json_object_array_get_idx(obj, 0);
                    assert_int_equal(co_json_string_len(str), strlen(want));
                    assert_memory_equal(json_object_get_string(str), want, strlen(want));
                    free(want);
                }
                json_object_put(obj);
                free(doc);
            }
        }
    }
    /* The input ends inside a run, at every offset. */
    for (int at = 0; at <= 17; at++) {
        char *doc = co_xasprintf("\"%.*s", at, plain);
        assert_parse_fails(CO_EINVALID, doc, strlen(doc), "line 1, column 1: unterminated string");
        free(doc);
    }
}

typedef struct gathered {
    struct json_object *items; /* what the callback was given, in order */
    int stop_at;               /* 1-based element at which to return stop_rc, 0: never */
    int stop_rc;
} gathered;

static int gather(struct json_object *element, void *payload)
{
    gathered *g = payload;
    json_object_array_add(g->items, json_object_get(element));
    if (g->stop_at && (int)json_object_array_length(g->items) == g->stop_at) {
        if (g->stop_rc < 0) {
            return co_error_set(g->stop_rc, "stopped by the callback");
        }
        return g->stop_rc;
    }
    return 0;
}

/* co_json_parse_each() of @p doc refuses it with the code and message of a full parse. */
static void assert_same_each_refusal(const char *doc, void *g)
{
    struct json_object *obj = NULL;
    co_error_clear();
    int want = co_json_parse(&obj, doc, strlen(doc));
    assert_true(want < 0);
    char *want_msg = co_xstrdup(co_error_last());
    co_error_clear();
    int got = co_json_parse_each(&obj, doc, strlen(doc), CO_MAX_DOCUMENT, NULL, "items", gather, g);
    if (got != want || strcmp(want_msg, co_error_last()) != 0) {
        fail_msg("%s: full parse %d \"%s\", streamed %d \"%s\"", doc, want, want_msg, got,
                 co_error_last());
    }
    free(want_msg);
}

static void test_json__each_hands_over_the_elements_and_returns_the_rest(void **state)
{
    (void)state;
    static const char *const mf[] = {"items", CO_JSON_EVERY_ELEMENT, "metadata", "managedFields",
                                     NULL};
    static const char *const *const skip[] = {mf, NULL};
    const char *doc =
        "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"name\":\"a\",\"managedFields\":"
        "[{\"f\":{}}]}},7,{\"items\":[1,2]},[3]],\"metadata\":{\"continue\":\"x\"}}";
    gathered g = {json_object_new_array(), 0, 0};
    struct json_object *rest = NULL;
    assert_co_pass(
        co_json_parse_each(&rest, doc, strlen(doc), CO_MAX_DOCUMENT, skip, "items", gather, &g));
    /* the elements as co_json_parse_skip() builds them, the skip lists applied inside them; an
     * "items" below the root is an ordinary member */
    struct json_object *whole = NULL;
    assert_co_pass(co_json_parse_skip(&whole, doc, strlen(doc), CO_MAX_DOCUMENT, skip));
    struct json_object *want_items = NULL;
    assert_true(json_object_object_get_ex(whole, "items", &want_items));
    if (!co_json_equal(g.items, want_items)) {
        fail_msg("elements %s", json_object_to_json_string(g.items));
    }
    struct json_object *want_rest = parse("{\"kind\":\"List\",\"metadata\":{\"continue\":\"x\"}}");
    if (!co_json_equal(rest, want_rest)) {
        fail_msg("rest %s", json_object_to_json_string(rest));
    }
    json_object_put(want_rest);
    json_object_put(whole);
    json_object_put(rest);
    json_object_put(g.items);

    /* no such member, or not an array, or not an object at the root: nothing is handed over */
    const char *others[] = {"{\"kind\":\"List\"}", "{\"items\":null}", "{\"items\":{\"a\":[1]}}",
                            "[{\"items\":[1]}]", "\"items\""};
    for (size_t i = 0; i < CO_ARRAY_SIZE(others); i++) {
        g.items = json_object_new_array();
        assert_co_pass(co_json_parse_each(&rest, others[i], strlen(others[i]), CO_MAX_DOCUMENT,
                                          NULL, "items", gather, &g));
        assert_int_equal(json_object_array_length(g.items), 0);
        struct json_object *same = parse(others[i]);
        assert_true(co_json_equal(rest, same));
        json_object_put(same);
        json_object_put(rest);
        json_object_put(g.items);
    }
}

static void test_json__each_stops_and_fails_where_asked(void **state)
{
    (void)state;
    const char *doc = "{\"items\":[1,2,3,4],\"after\":true}";
    struct json_object *rest = NULL;
    /* a positive result stops the parse and is returned */
    gathered g = {json_object_new_array(), 2, 7};
    assert_int_equal(
        co_json_parse_each(&rest, doc, strlen(doc), CO_MAX_DOCUMENT, NULL, "items", gather, &g), 7);
    assert_null(rest);
    assert_int_equal(json_object_array_length(g.items), 2);
    json_object_put(g.items);
    /* so is a negative one, with the callback's error */
    g = (gathered){json_object_new_array(), 3, CO_ECANCELED};
    assert_co_fail_with(CO_ECANCELED, co_json_parse_each(&rest, doc, strlen(doc), CO_MAX_DOCUMENT,
                                                         NULL, "items", gather, &g));
    assert_contains(co_error_last(), "stopped by the callback");
    assert_int_equal(json_object_array_length(g.items), 3);
    json_object_put(g.items);
    /* a document malformed after some elements fails as a full parse does */
    const char *bad = "{\"items\":[1,2,{\"a\":}]}";
    g = (gathered){json_object_new_array(), 0, 0};
    assert_same_each_refusal(bad, &g);
    assert_int_equal(json_object_array_length(g.items), 2);
    json_object_put(g.items);
    const char *late = "{\"items\":[1],\"x\":tru}";
    g = (gathered){json_object_new_array(), 0, 0};
    assert_same_each_refusal(late, &g);
    json_object_put(g.items);
    /* a second member of that name cannot replace the elements already handed over */
    const char *twice = "{\"items\":[1],\"items\":[2]}";
    g = (gathered){json_object_new_array(), 0, 0};
    assert_co_fail_with(CO_EINVALID,
                        co_json_parse_each(&rest, twice, strlen(twice), CO_MAX_DOCUMENT, NULL,
                                           "items", gather, &g));
    assert_contains(co_error_last(), "line 1, column 14: member \"items\" appears twice");
    json_object_put(g.items);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json__parses_every_type),
        cmocka_unit_test(test_json__str_follows_members_to_a_string),
        cmocka_unit_test(test_json__meta_accessors),
        cmocka_unit_test(test_json__member_lookup_past_the_linear_scan),
        cmocka_unit_test(test_json__strict_syntax_errors_have_positions),
        cmocka_unit_test(test_json__rejects_invalid_utf8),
        cmocka_unit_test(test_json__truncated_documents_fail_cleanly),
        cmocka_unit_test(test_json__nesting_cap),
        cmocka_unit_test(test_json__size_cap),
        cmocka_unit_test(test_json__numbers_keep_their_kind),
        cmocka_unit_test(test_json__duplicate_keys_last_wins),
        cmocka_unit_test(test_json__keys_colliding_under_fnv_are_read_and_deduplicated),
        cmocka_unit_test(test_json__string_scanning_finds_every_byte_at_every_offset),
        cmocka_unit_test(test_json__skip_leaves_out_the_members_named_and_nothing_else),
        cmocka_unit_test(test_json__skip_lists_that_begin_alike),
        cmocka_unit_test(test_json__skip_into_every_array_element),
        cmocka_unit_test(test_json__skip_refuses_malformed_members_exactly_as_a_full_parse),
        cmocka_unit_test(test_json__left_out_strings_are_judged_at_every_offset),
        cmocka_unit_test(test_json__each_hands_over_the_elements_and_returns_the_rest),
        cmocka_unit_test(test_json__each_stops_and_fails_where_asked),
        cmocka_unit_test(test_json__lone_surrogates_become_replacement_characters),
        cmocka_unit_test(test_json__canonical_matches_go_marshal),
        cmocka_unit_test(test_json__strings_and_keys_encode_as_go),
        cmocka_unit_test(test_json__pretty_matches_go_marshal_indent),
        cmocka_unit_test(test_json__float_formatting_matches_go),
        cmocka_unit_test(test_json__encode_refuses_nan_and_inf),
        cmocka_unit_test(test_json__encode_respects_buffer_cap),
        cmocka_unit_test(test_json__go_quote_escapes_like_go),
        cmocka_unit_test(test_json__go_quote_appends_len_bytes),
        cmocka_unit_test(test_json__get_by_keys_with_dots_and_slashes),
        cmocka_unit_test(test_json__pointer_lookup),
        cmocka_unit_test(test_json__typed_getters_name_the_field),
        cmocka_unit_test(test_json__set_creates_intermediates),
        cmocka_unit_test(test_json__delete),
        cmocka_unit_test(test_json__copy_is_deep_and_equal),
        cmocka_unit_test(test_json__equality_rules),
        cmocka_unit_test(test_json__merge_recurses_and_later_wins),
        cmocka_unit_test(test_json__patch_rfc6902_examples),
        cmocka_unit_test(test_json__patch_edge_cases),
        cmocka_unit_test(test_json__patch_diff_round_trips_minimally),
        cmocka_unit_test(test_json__merge_patch_rfc7386_examples),
        cmocka_unit_test(test_json__merge_patch_diff),
    };
    return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
