/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the JSON parser and encoder. Beyond "no crash, no leak", it checks
 * invariants on every input the parser accepts: the canonical encoding parses back and encodes
 * to the same bytes (so does the pretty encoding), and a deep copy is equal. (The reparsed
 * value need not be co_json_equal(): like Go, the encoder writes the double 1.8e18 as an
 * integer literal of the shortest digits, which reads back as a slightly different int64.)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
