/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the JSON parser and encoder. Beyond "no crash, no leak", it checks
 * invariants on every input the parser accepts: the canonical encoding parses back and encodes
 * to the same bytes (so does the pretty encoding), and a deep copy is equal. (The reparsed
 * value need not be co_json_equal(): like Go, the encoder writes the double 1.8e18 as an
 * integer literal of the shortest digits, which reads back as a slightly different int64.)
 * It also holds the members a skip list leaves out to the full parser's verdicts.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_left_out(data, size);
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
