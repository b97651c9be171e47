/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kustomize's content hash for generated ConfigMaps and Secrets: a Go-encoding/json rendering
 * of {kind, name (always empty), data[, binaryData]} (Secrets: {kind, type, name, data[,
 * stringData]}) with sorted keys, its SHA-256 in hex, the first ten characters with 0→g, 1→h, 3→k,
 * a→m, e→t so the suffix never looks like a number or hex word.
 */
#include "kz_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "co/util/buf.h"
#include "co/util/error.h"
#include "co/json/json.h"

/* The buffer is uncapped (SIZE_MAX), so appends cannot fail. */
static void bput(co_buf *b, const void *p, size_t n)
{
    int rc = co_buf_put(b, p, n);
    CO_ASSERT(rc == 0);
}

static void bputs(co_buf *b, const char *s)
{
    bput(b, s, strlen(s));
}

static void bputc(co_buf *b, char c)
{
    bput(b, &c, 1);
}

static void go_string(co_buf *b, const char *s, size_t n)
{
    int rc = co_json_go_quote(b, s, n, 0);
    CO_ASSERT(rc == 0);
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void go_value(co_buf *b, json_object *v)
{
    if (v == NULL) {
        bputs(b, "null");
        return;
    }
    switch (json_object_get_type(v)) {
    case json_type_string:
        go_string(b, json_object_get_string(v), (size_t)json_object_get_string_len(v));
        return;
    case json_type_object: {
        size_t n = (size_t)json_object_object_length(v), i = 0;
        const char **keys = co_xcalloc(n + 1, sizeof(char *));
        json_object_object_foreach (v, k, val) {
            (void)val;
            keys[i++] = k;
        }
        qsort(keys, n, sizeof(char *), cmp_keys);
        bputc(b, '{');
        for (i = 0; i < n; i++) {
            if (i) {
                bputc(b, ',');
            }
            go_string(b, keys[i], strlen(keys[i]));
            bputc(b, ':');
            go_value(b, json_object_object_get(v, keys[i]));
        }
        bputc(b, '}');
        free(keys);
        return;
    }
    case json_type_array: {
        bputc(b, '[');
        size_t n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
            if (i) {
                bputc(b, ',');
            }
            go_value(b, json_object_array_get_idx(v, i));
        }
        bputc(b, ']');
        return;
    }
    default:
        bputs(b, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        return;
    }
}

char *kz_go_json(json_object *v)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    go_value(&b, v);
    return co_buf_take(&b, NULL);
}

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
    char *enc = kz_go_json(m);
    json_object_put(m);
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)enc, strlen(enc), digest);
    free(enc);
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
