/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for JSON Patch and JSON merge patch. The input is a document and a patch
 * separated by the first newline. Applying must never crash or modify the input; when it
 * succeeds, the generated patch from the document to the result must reproduce the result, and
 * the same holds for merge patches.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_diffs(const struct json_object *from, const struct json_object *to)
{
    struct json_object *patch = co_json_patch_diff(from, to), *out = NULL;
    if (co_json_patch_apply(&out, from, patch) < 0 || !co_json_equal(out, to)) {
        abort();
    }
    json_object_put(out);
    json_object_put(patch);
    struct json_object *mp = co_json_merge_patch_diff(from, to);
    struct json_object *merged = co_json_merge_patch_apply(from, mp);
    struct json_object *again = co_json_merge_patch_apply(merged, mp);
    /* a merge patch is idempotent */
    if (!co_json_equal(merged, again)) {
        abort();
    }
    json_object_put(again);
    json_object_put(merged);
    json_object_put(mp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nl = memchr(text, '\n', size);
    if (!nl) {
        return 0;
    }
    struct json_object *doc = NULL, *patch = NULL, *out = NULL;
    if (co_json_parse(&doc, text, (size_t)(nl - text)) < 0) {
        return 0;
    }
    if (co_json_parse(&patch, nl + 1, size - (size_t)(nl - text) - 1) < 0) {
        json_object_put(doc);
        return 0;
    }
    char *before = co_json_dumps(doc, 0);
    if (co_json_patch_apply(&out, doc, patch) == 0) {
        check_diffs(doc, out);
        json_object_put(out);
    }
    struct json_object *merged = co_json_merge_patch_apply(doc, patch);
    check_diffs(doc, merged);
    json_object_put(merged);
    char *after = co_json_dumps(doc, 0);
    if (!before || !after || strcmp(before, after) != 0) {
        abort(); /* the input document is never modified */
    }
    free(before);
    free(after);
    json_object_put(patch);
    json_object_put(doc);
    return 0;
}
