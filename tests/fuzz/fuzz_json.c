/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the JSON parser and encoder. Beyond "no crash, no leak", it checks
 * invariants on every input the parser accepts: the canonical encoding parses back and encodes
 * to the same bytes (so does the pretty encoding), and a deep copy is equal. (The reparsed
 * value need not be co_json_equal(): like Go, the encoder writes the double 1.8e18 as an
 * integer literal of the shortest digits, which reads back as a slightly different int64.)
 * It also holds the members a skip list leaves out to the full parser's verdicts, and a streamed
 * "items" array (co_json_parse_each) to the elements and the rest the full parser builds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/caps.h"
#include "co/error.h"
#include "co/json.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_left_out(data, size);
    check_streamed(data, size);
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
