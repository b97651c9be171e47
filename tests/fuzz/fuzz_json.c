/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the JSON parser and encoder. Beyond "no crash, no leak", it checks
 * invariants on every input the parser accepts: the canonical encoding parses back and encodes
 * to the same bytes (so does the pretty encoding), and a deep copy is equal. (The reparsed
 * value need not be co_json_equal(): like Go, the encoder writes the double 1.8e18 as an
 * integer literal of the shortest digits, which reads back as a slightly different int64.)
 * It also holds the members a skip list leaves out to the full parser's verdicts, and a streamed
 * "items" array (co_json_parse_each) to the elements and the rest the full parser builds, and a
 * co_jdoc document to the full parser's verdicts and values (lookups included). Any bytes at
 * all, encoded by co_json_go_quote, parse back as a JSON string, and as themselves when valid
 * UTF-8.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"
#include "co/json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * A member left out by a skip list is only checked, by a faster loop than the parser's: inside
 * a member, the input must be accepted or refused exactly as the full parser does it, with the
 * same message.
 */
static void check_left_out(const uint8_t *data, size_t size)
{
    static const char *const member[] = {"k", NULL};
    static const char *const *const skip[] = {member, NULL};
    size_t len = size + 6;
    char *doc = malloc(len);
    if (!doc) {
        return;
    }
    memcpy(doc, "{\"k\":", 5);
    memcpy(doc + 5, data, size);
    doc[len - 1] = '}';
    struct json_object *full = NULL, *left = NULL;
    int rc_full = co_json_parse(&full, doc, len);
    char *msg = strdup(co_error_last());
    int rc_left = co_json_parse_skip(&left, doc, len, CO_MAX_DOCUMENT, skip);
    if (!msg || rc_full != rc_left || (rc_full < 0 && strcmp(msg, co_error_last()) != 0) ||
        (rc_left == 0 && json_object_object_get_ex(left, "k", NULL))) {
        abort();
    }
    co_jdoc *d = NULL;
    int rc_doc = co_jdoc_parse(&d, doc, len, CO_MAX_DOCUMENT, skip);
    if (rc_doc != rc_left || (rc_doc < 0 && strcmp(msg, co_error_last()) != 0) ||
        (rc_doc == 0 && co_jv_get(co_jdoc_root(d), "k"))) {
        abort();
    }
    co_jdoc_free(d);
    free(msg);
    free(doc);
    json_object_put(full);
    json_object_put(left);
}

static int collect(struct json_object *element, void *payload)
{
    json_object_array_add(payload, json_object_get(element));
    return 0;
}

/*
 * Streaming a root object's "items" hands over the elements the full parse would have put in
 * that array, in order, and returns the rest; a refusal is the full parser's, except for a second
 * "items", which streaming alone refuses.
 */
static void check_streamed(const uint8_t *data, size_t size)
{
    struct json_object *full = NULL, *rest = NULL;
    int rc_full = co_json_parse(&full, (const char *)data, size);
    char *msg = strdup(co_error_last());
    struct json_object *items = json_object_new_array();
    int rc_each = co_json_parse_each(&rest, (const char *)data, size, CO_MAX_DOCUMENT, NULL,
                                     "items", collect, items);
    if (!msg) {
        abort();
    }
    if (rc_each < 0) {
        if (!strstr(co_error_last(), "\"items\" appears twice") &&
            (rc_full != rc_each || strcmp(msg, co_error_last()) != 0)) {
            abort();
        }
    } else {
        struct json_object *want = NULL;
        if (rc_full != 0 || rc_each != 0) {
            abort();
        }
        if (json_object_is_type(full, json_type_object) &&
            json_object_object_get_ex(full, "items", &want) &&
            json_object_is_type(want, json_type_array)) {
            if (!co_json_equal(want, items)) {
                abort();
            }
            json_object_object_del(full, "items");
        } else if (json_object_array_length(items) != 0) {
            abort();
        }
        if (!co_json_equal(full, rest)) {
            abort();
        }
    }
    free(msg);
    json_object_put(items);
    json_object_put(full);
    json_object_put(rest);
}

/* Every member of the json-c object @p want is found by co_jv_get() in @p got, equal; recursively.
 */
static void check_lookups(const struct json_object *want, const co_jv *got)
{
    if (!json_object_is_type(want, json_type_object)) {
        if (json_object_is_type(want, json_type_array)) {
            size_t i = 0;
            CO_JV_EACH (e, got) {
                check_lookups(json_object_array_get_idx(want, i++), e);
            }
        }
        return;
    }
    if (co_jv_members(got) != (size_t)json_object_object_length(want)) {
        abort();
    }
    json_object_object_foreach ((struct json_object *)want, key, val) {
        const co_jv *v = co_jv_get(got, key);
        struct json_object *back = v ? co_jv_to_json(v) : NULL;
        if (!v || !co_json_equal(val, back)) {
            abort();
        }
        json_object_put(back);
        check_lookups(val, v);
    }
}

/* A document is accepted or refused as the full parse is, with the same message, and holds the
 * same values, found by the same keys. */
static void check_document(const uint8_t *data, size_t size)
{
    struct json_object *full = NULL;
    int rc_full = co_json_parse(&full, (const char *)data, size);
    char *msg = strdup(co_error_last());
    co_jdoc *doc = NULL;
    int rc_doc = co_jdoc_parse(&doc, (const char *)data, size, CO_MAX_DOCUMENT, NULL);
    if (!msg || rc_full != rc_doc || (rc_full < 0 && strcmp(msg, co_error_last()) != 0)) {
        abort();
    }
    if (rc_doc == 0) {
        struct json_object *back = co_jv_to_json(co_jdoc_root(doc));
        if (!co_json_equal(full, back)) {
            abort();
        }
        json_object_put(back);
        check_lookups(full, co_jdoc_root(doc));
    }
    co_jdoc_free(doc);
    json_object_put(full);
    free(msg);
}

/* co_jv_equal() agrees with json_object_equal() on the two halves of the input, when both parse
 * (and each half equals itself). */
static void check_equality(const uint8_t *data, size_t size)
{
    size_t half = size / 2;
    struct json_object *ja = NULL, *jb = NULL;
    co_jdoc *a = NULL, *b = NULL;
    if (co_json_parse(&ja, (const char *)data, half) == 0 &&
        co_json_parse(&jb, (const char *)data + half, size - half) == 0 &&
        co_jdoc_parse(&a, (const char *)data, half, CO_MAX_DOCUMENT, NULL) == 0 &&
        co_jdoc_parse(&b, (const char *)data + half, size - half, CO_MAX_DOCUMENT, NULL) == 0) {
        if (co_jv_equal(co_jdoc_root(a), co_jdoc_root(b)) != (json_object_equal(ja, jb) != 0) ||
            !co_jv_equal(co_jdoc_root(a), co_jdoc_root(a))) {
            abort();
        }
    }
    co_jdoc_free(a);
    co_jdoc_free(b);
    json_object_put(ja);
    json_object_put(jb);
}

/* Whether the @p n bytes at @p s are valid UTF-8 without surrogates: a decoder of its own, so
 * that the check below does not take the encoder's word for it. */
static int valid_utf8(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (i + len > n) {
            return 0;
        }
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) {
                return 0;
            }
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff)) {
            return 0;
        }
        i += len;
    }
    return 1;
}

/* co_json_go_quote: whatever the bytes, the result parses as one JSON string, and valid UTF-8
 * (NUL bytes included) reads back as itself. */
static void check_go_quote(const uint8_t *data, size_t size)
{
    co_buf b = CO_BUF_INIT((size_t)1 << 24);
    if (co_json_go_quote(&b, (const char *)data, size, 0) < 0) {
        return;
    }
    struct json_object *back = NULL;
    if (co_json_parse(&back, co_buf_cstr(&b), b.len) < 0 ||
        !json_object_is_type(back, json_type_string)) {
        abort();
    }
    if (valid_utf8(data, size) && ((size_t)json_object_get_string_len(back) != size ||
                                   memcmp(json_object_get_string(back), data, size) != 0)) {
        abort();
    }
    json_object_put(back);
    co_buf_dispose(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_equality(data, size);
    check_left_out(data, size);
    check_streamed(data, size);
    check_document(data, size);
    check_go_quote(data, size);
    struct json_object *obj = NULL;
    if (co_json_parse(&obj, (const char *)data, size) < 0) {
        return 0;
    }
    char *canon = co_json_dumps(obj, CO_JSON_CANONICAL);
    char *pretty = co_json_dumps(obj, CO_JSON_PRETTY | CO_JSON_NO_HTML_ESCAPE);
    if (!canon || !pretty) {
        abort(); /* parsed JSON never holds NaN or Inf */
    }
    struct json_object *back = NULL, *back2 = NULL;
    if (co_json_parse(&back, canon, strlen(canon)) < 0 ||
        co_json_parse(&back2, pretty, strlen(pretty)) < 0) {
        abort();
    }
    char *again = co_json_dumps(back, CO_JSON_CANONICAL);
    char *again2 = co_json_dumps(back2, CO_JSON_CANONICAL);
    struct json_object *copy = co_json_copy(obj);
    if (!again || !again2 || strcmp(canon, again) != 0 || strcmp(canon, again2) != 0 ||
        !co_json_equal(obj, copy) || !co_json_equal(back, back2)) {
        abort();
    }
    free(again);
    free(again2);
    free(canon);
    free(pretty);
    json_object_put(copy);
    json_object_put(back);
    json_object_put(back2);
    json_object_put(obj);
    return 0;
}
