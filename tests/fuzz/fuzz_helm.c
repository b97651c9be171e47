/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for Helm chart loading and values processing. The input is a chart as a
 * sequence of files, each "path\n" followed by its content up to a NUL byte; paths that the
 * in-memory tree refuses are skipped. The chart is loaded, its values are computed (with the
 * chart's own values.yaml also given as user values, which exercises coalescing of equal
 * trees) and every document of every file is put through the hook mapping. Invariants: no
 * crash, no leak, and a failure always comes with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/common.h"
#include "co/util/error.h"
#include "co/render/helm.h"
#include "co/render/vfs.h"
#include "co/json/yaml.h"

static void check_failure(int rc)
{
    if (rc < 0 && co_error_last()[0] == '\0') {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256 * 1024) {
        return 0;
    }
    co_vfs *fs = co_vfs_new_mem();
    const char *p = (const char *)data;
    const char *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            break;
        }
        char *path = co_xstrndup(p, (size_t)(nl - p));
        const char *body = nl + 1;
        const char *nul = memchr(body, '\0', (size_t)(end - body));
        size_t len = nul ? (size_t)(nul - body) : (size_t)(end - body);
        co_error_clear();
        (void)!co_vfs_mem_put(fs, path, body, len);
        /* the hook mapping must cope with any document */
        co_yaml_docs docs = CO_YAML_DOCS_INIT;
        if (co_yaml_parse_stream(&docs, body, len, CO_YAML_SKIP_NULL) == 0) {
            for (size_t i = 0; i < docs.len; i++) {
                bool keep;
                co_error_clear();
                check_failure(co_helm_map_object(&keep, docs.items[i].value, 2, 0));
            }
        }
        co_yaml_docs_dispose(&docs);
        free(path);
        p = body + len + (nul ? 1 : 0);
    }
    co_helm_chart *c = NULL;
    co_error_clear();
    int rc = co_helm_chart_load(&c, fs, "");
    check_failure(rc);
    if (rc == 0) {
        struct json_object *out = NULL;
        co_error_clear();
        rc = co_helm_values(&out, c, NULL);
        check_failure(rc);
        if (rc == 0) {
            struct json_object *again = NULL;
            co_error_clear();
            check_failure(co_helm_values(&again, c, out));
            json_object_put(again);
        }
        json_object_put(out);
    }
    co_helm_chart_free(c);
    co_vfs_free(fs);
    return 0;
}
