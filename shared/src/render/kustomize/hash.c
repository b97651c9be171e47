/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kustomize's content hash for generated ConfigMaps and Secrets: the canonical JSON encoding
 * (Go's encoding/json of a map: sorted keys, HTML escaping) of {kind, name (always empty),
 * data[, binaryData]} (Secrets: {kind, type, name, data[, stringData]}), its SHA-256 in hex, the
 * first ten characters with 0→g, 1→h, 3→k, a→m, e→t so the suffix never looks like a number or
 * hex word. kustomize reads the fields back from JSON into Go's interface{} before it encodes
 * them, so a number there is a float64 and written in Go's shortest form, as co_json_encode
 * writes it.
 */
#include "kz_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/buf.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/json/json.h"

/* The value kustomize's hasher reads at a field: the node, or "" when absent. */
static json_object *field_or_empty(json_object *obj, const char *key)
{
    json_object *v = NULL;
    if (json_object_object_get_ex(obj, key, &v) && v != NULL) {
        return json_object_get(v);
    }
    return json_object_new_string("");
}

int kz_hash_res(char out[11], json_object *obj)
{
    const char *kind = kz_get_str(obj, "kind", NULL);
    json_object *m = json_object_new_object();
    json_object_object_add(m, "kind", json_object_new_string(kind));
    /* kustomize looks the name up as one field called "metadata/name", which never exists, so
     * the name it hashes is always "" */
    json_object_object_add(m, "name", json_object_new_string(""));
    json_object_object_add(m, "data", field_or_empty(obj, "data"));
    json_object *extra = NULL;
    if (strcmp(kind, "ConfigMap") == 0) {
        if (json_object_object_get_ex(obj, "binaryData", &extra) &&
            json_object_is_type(extra, json_type_object)) {
            json_object_object_add(m, "binaryData", json_object_get(extra));
        }
    } else if (strcmp(kind, "Secret") == 0) {
        json_object_object_add(m, "type", field_or_empty(obj, "type"));
        if (json_object_object_get_ex(obj, "stringData", &extra) &&
            json_object_is_type(extra, json_type_object)) {
            json_object_object_add(m, "stringData", json_object_get(extra));
        }
    } else {
        json_object_put(m);
        return co_error_set(CO_EINVALID, "cannot hash a %s: only ConfigMaps and Secrets", kind);
    }
    co_buf enc = CO_BUF_INIT(SIZE_MAX);
    int rc = co_json_encode(&enc, m, CO_JSON_CANONICAL);
    json_object_put(m);
    if (rc < 0) {
        co_buf_dispose(&enc);
        return co_error_wrap("%s %s: name suffix hash", kind, kz_get_str(obj, "metadata", "name"));
    }
    unsigned char digest[CO_SHA256_LEN];
    co_sha256(digest, enc.ptr, enc.len);
    co_buf_dispose(&enc);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 10; i++) {
        unsigned nib = (i % 2 == 0) ? digest[i / 2] >> 4 : digest[i / 2] & 15;
        char ch = hex[nib];
        switch (ch) {
        case '0':
            ch = 'g';
            break;
        case '1':
            ch = 'h';
            break;
        case '3':
            ch = 'k';
            break;
        case 'a':
            ch = 'm';
            break;
        case 'e':
            ch = 't';
            break;
        default:
            break;
        }
        out[i] = ch;
    }
    out[10] = '\0';
    return 0;
}

int co_kustomize_hash(char out[11], const struct json_object *obj)
{
    return kz_hash_res(out, (json_object *)obj);
}
