/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the kustomize engine: the input is a file tree, one file after each
 * line "=== PATH" (text before the first such line is kustomization.yaml), built at the root.
 * Any crash, sanitizer report, leak or hang is a finding, as is a success whose result is not
 * a list of objects, or a failure without a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "co/render/kustomize.h"
#include "co/render/vfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(co_vfs *fs, const char *path, size_t plen, const char *body, size_t blen)
{
    char name[256];
    if (plen == 0 || plen >= sizeof name) {
        return;
    }
    memcpy(name, path, plen);
    name[plen] = '\0';
    if (co_vfs_mem_put(fs, name, body, blen) < 0) {
        /* unclean or oversized paths are refused: that is a result, not a finding */
        co_error_clear();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *end = s + size;
    co_vfs *fs = co_vfs_new_mem();
    const char *path = "kustomization.yaml";
    size_t plen = strlen(path);
    const char *body = s;
    for (const char *p = s; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        if (eol - p > 4 && memcmp(p, "=== ", 4) == 0) {
            put(fs, path, plen, body, (size_t)(p - body));
            path = p + 4;
            plen = (size_t)(eol - path);
            body = nl ? nl + 1 : end;
        }
        p = nl ? nl + 1 : end;
    }
    put(fs, path, plen, body, (size_t)(end - body));
    json_object *out = NULL;
    co_error_clear();
    int rc = co_kustomize_build(&out, fs, "", NULL);
    if (rc == 0) {
        if (!json_object_is_type(out, json_type_array)) {
            abort();
        }
        for (size_t i = 0; i < json_object_array_length(out); i++) {
            if (!json_object_is_type(json_object_array_get_idx(out, i), json_type_object)) {
                abort();
            }
        }
    } else if (co_error_last()[0] == '\0') {
        abort();
    }
    json_object_put(out);
    co_vfs_free(fs);
    return 0;
}
