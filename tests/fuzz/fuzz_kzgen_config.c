/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the kustomize generator's `.component-config.yaml`: the input up to the
 * first line "=== PATH" is app/.component-config.yaml, every later section a file PATH of the
 * tree (replacing a fixed one or adding to it). The fixed tree holds a templated manifest in
 * app/, a file and a templated kustomization beside it for includedFiles and
 * includedKustomizations, and an ignore file, so that each option of the config reaches code.
 * The generator is parsed at app/ and, when that succeeds, rendered with a few values.
 * Any crash, sanitizer report, leak or hang is a finding, as is a success whose result is not
 * a list of objects, or a failure without a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "co/render/kzgen.h"
#include "co/util/log.h"
#include "co/render/vfs.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const base_tree[][2] = {
    {"app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .name | default "
                    "\"cm\" }}\ndata:\n  a: {{ .a | default 1 | quote }}\n"},
    {"app/cm.yaml.tpl", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: <% .name %>-t\n"},
    {"app/.component-ignore", "*.bak\n!keep.bak\n"},
    {"lib/extra.txt", "{{ .a }}\n"},
    {"lib/dir/one.txt", "one\n"},
    {"other/kustomization.yaml", "resources:\n- cm.yaml\n"},
    {"other/cm.yaml",
     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other-{{ .a | default 0 }}\n"},
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    co_log_setup("fuzz", CO_LOG_ERROR, CO_LOG_FORMAT_TEXT);
    return 0;
}

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

static void check(int rc, json_object *out)
{
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
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *end = s + size;
    co_vfs *fs = co_vfs_new_mem();
    for (size_t i = 0; i < sizeof base_tree / sizeof base_tree[0]; i++) {
        put(fs, base_tree[i][0], strlen(base_tree[i][0]), base_tree[i][1], strlen(base_tree[i][1]));
    }
    const char *path = "app/.component-config.yaml";
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

    co_error_clear();
    co_kzgen *g = NULL;
    int rc = co_kzgen_parse(&g, fs, "app", NULL);
    if (rc < 0) {
        check(rc, NULL);
    } else {
        json_object *values = json_tokener_parse("{\"name\":\"n\",\"a\":2,\"list\":[1,\"x\"]}");
        co_kzgen_context ctx = {0};
        ctx.namespace = "ns";
        ctx.name = "comp";
        json_object *out = NULL;
        co_error_clear();
        rc = co_kzgen_render(&out, g, values, &ctx);
        check(rc, out);
        json_object_put(out);
        json_object_put(values);
        co_kzgen_free(g);
    }
    co_vfs_free(fs);
    return 0;
}
