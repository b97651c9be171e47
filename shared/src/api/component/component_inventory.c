/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status.inventory and its packed form. The Go operator's inventory holds about 370 bytes per
 * dependent, so a Component with 4,000 dependents alone reaches etcd's 1.5 MiB object limit
 * and its status can no longer be written. Up to CO_INVENTORY_PLAIN_MAX the list is written as
 * it is, readable by the Go operator and by kubectl; beyond, it is written as
 * status.packedInventory: the same list as compact JSON, gzip-compressed (the repeated member
 * names cost next to nothing; the digests stay), in base64, with its length beside it
 * (docs/behaviour.md, "Inventory"). Both forms are always read.
 */
#include "co/api/component.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <zlib.h>

#include "co/json/json.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"

#define PACKED "status.packedInventory"

/* zlib's windowBits for a gzip wrapper (and no other) around a full 32 KiB window. */
#define GZIP_WINDOW (15 + 16)
/* zlib's memLevel default. */
#define MEM_LEVEL 8
/* Output produced per inflate()/deflate() call. */
#define CHUNK (64 * CO_KIB)

/* The gzip of @p len bytes; the header carries no name and no time, so the output is a
 * function of the input alone. */
static int gzip(co_buf *out, const void *data, size_t len)
{
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WINDOW, MEM_LEVEL,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
        return co_error_set(CO_ERROR, "gzip: cannot initialise");
    }
    zs.next_in = (Bytef *)(uintptr_t)data;
    zs.avail_in = (uInt)len;
    int zrc = Z_OK, rc = 0;
    while (zrc != Z_STREAM_END && rc == 0) {
        if ((rc = co_buf_reserve(out, CHUNK)) < 0) {
            break;
        }
        zs.next_out = (Bytef *)out->ptr + out->len;
        zs.avail_out = (uInt)CHUNK;
        zrc = deflate(&zs, Z_FINISH);
        if (zrc != Z_OK && zrc != Z_STREAM_END) {
            rc = co_error_set(CO_EINVALID, "gzip: %s", zs.msg ? zs.msg : "deflate failed");
        }
        out->len += CHUNK - zs.avail_out;
    }
    deflateEnd(&zs);
    return rc;
}

/* The bytes a gzip stream of @p len bytes holds, at most CO_INVENTORY_UNPACKED_MAX; nothing
 * may follow the stream. */
static int gunzip(co_buf *out, const unsigned char *data, size_t len)
{
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    if (inflateInit2(&zs, GZIP_WINDOW) != Z_OK) {
        return co_error_set(CO_ERROR, PACKED ".data: cannot initialise gzip");
    }
    zs.next_in = (Bytef *)(uintptr_t)data;
    zs.avail_in = (uInt)len;
    int zrc = Z_OK, rc = 0;
    while (zrc != Z_STREAM_END) {
        if (co_buf_reserve(out, CHUNK) < 0) {
            rc = co_error_set(CO_ETOOBIG, PACKED ".data: more than %zu bytes once decompressed",
                              (size_t)CO_INVENTORY_UNPACKED_MAX);
            break;
        }
        zs.next_out = (Bytef *)out->ptr + out->len;
        zs.avail_out = (uInt)CHUNK;
        zrc = inflate(&zs, Z_NO_FLUSH);
        out->len += CHUNK - zs.avail_out;
        if (zrc == Z_BUF_ERROR && zs.avail_in == 0) {
            rc = co_error_set(CO_EINVALID, PACKED ".data: truncated gzip stream");
            break;
        }
        if (zrc != Z_OK && zrc != Z_STREAM_END) {
            rc = co_error_set(CO_EINVALID, PACKED ".data: invalid gzip: %s",
                              zs.msg ? zs.msg : "inflate failed");
            break;
        }
    }
    if (rc == 0 && zs.avail_in != 0) {
        rc = co_error_set(CO_EINVALID, PACKED ".data: %u bytes after the gzip stream",
                          (unsigned)zs.avail_in);
    }
    inflateEnd(&zs);
    return rc;
}

static int unpack(struct json_object **out, const struct json_object *packed)
{
    if (!json_object_is_type(packed, json_type_object)) {
        return co_error_set(CO_EINVALID, PACKED ": expected object, got %s",
                            co_json_type_name(packed));
    }
    const char *enc = co_json_str(packed, "encoding", NULL);
    if (!enc || strcmp(enc, CO_INVENTORY_ENCODING) != 0) {
        return co_error_set(
            CO_EINVALID, PACKED ".encoding: %s%s%s; only " CO_INVENTORY_ENCODING " is supported",
            enc ? "unsupported value \"" : "not set", enc ? enc : "", enc ? "\"" : "");
    }
    int64_t items = 0;
    struct json_object *n = co_json_get(packed, "items", NULL);
    if (!n || !json_object_is_type(n, json_type_int) ||
        co_json_get_int64(&items, packed, "items", NULL) < 0 || items < 0) {
        co_error_clear();
        return co_error_set(CO_EINVALID, PACKED ".items: expected a count");
    }
    struct json_object *d = co_json_get(packed, "data", NULL);
    if (!d || !json_object_is_type(d, json_type_string)) {
        return co_error_set(CO_EINVALID, PACKED ".data: expected string");
    }
    size_t dlen = (size_t)json_object_get_string_len(d);
    if (dlen > CO_INVENTORY_PACKED_MAX) {
        return co_error_set(CO_ETOOBIG, PACKED ".data: %zu bytes; at most %zu are read", dlen,
                            (size_t)CO_INVENTORY_PACKED_MAX);
    }
    co_buf gz, text;
    co_buf_init(&gz, CO_INVENTORY_PACKED_MAX);
    co_buf_init(&text, CO_INVENTORY_UNPACKED_MAX);
    int rc = co_base64_decode(&gz, json_object_get_string(d), dlen, CO_BASE64_STD);
    if (rc < 0) {
        rc = co_error_wrap(PACKED ".data");
    }
    if (rc == 0) {
        rc = gunzip(&text, (const unsigned char *)gz.ptr, gz.len);
    }
    struct json_object *arr = NULL;
    if (rc == 0 &&
        (rc = co_json_parse_max(&arr, text.ptr, text.len, CO_INVENTORY_UNPACKED_MAX)) < 0) {
        rc = co_error_wrap(PACKED ".data");
    }
    if (rc == 0 && !json_object_is_type(arr, json_type_array)) {
        rc = co_error_set(CO_EINVALID, PACKED ".data: expected a JSON array, got %s",
                          co_json_type_name(arr));
    }
    if (rc == 0 && json_object_array_length(arr) != (size_t)items) {
        rc = co_error_set(CO_EINVALID, PACKED ".items: %" PRId64 ", but data holds %zu", items,
                          json_object_array_length(arr));
    }
    co_buf_dispose(&gz);
    co_buf_dispose(&text);
    if (rc < 0) {
        json_object_put(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

int co_component_inventory_get(struct json_object **out, const struct json_object *status)
{
    *out = NULL;
    if (!status || !json_object_is_type(status, json_type_object)) {
        return 0;
    }
    struct json_object *plain = co_json_get(status, "inventory", NULL);
    struct json_object *packed = co_json_get(status, "packedInventory", NULL);
    if (plain && packed) {
        return co_error_set(CO_EINVALID,
                            "status.inventory and " PACKED " are both set; only one may be");
    }
    if (packed) {
        return unpack(out, packed);
    }
    if (plain && !json_object_is_type(plain, json_type_array)) {
        return co_error_set(CO_EINVALID, "status.inventory: expected array, got %s",
                            co_json_type_name(plain));
    }
    *out = plain ? json_object_get(plain) : NULL;
    return 0;
}

void co_component_inventory_put(struct json_object *status,
                                struct json_object *inventory,
                                size_t plain_max)
{
    json_object_object_del(status, "inventory");
    json_object_object_del(status, "packedInventory");
    if (!inventory) {
        return;
    }
    co_buf text, gz;
    co_buf_init(&text, CO_INVENTORY_UNPACKED_MAX);
    co_buf_init(&gz, CO_INVENTORY_PACKED_MAX);
    char *b64 = NULL;
    /* a list that cannot be encoded or compressed within the caps is written plain: the status
     * write then fails with the API server's own error naming the size */
    if (co_json_encode(&text, inventory, 0) == 0 && text.len > plain_max &&
        gzip(&gz, text.ptr, text.len) == 0) {
        b64 = co_base64_encode(gz.ptr, gz.len, CO_BASE64_STD);
    }
    co_error_clear();
    if (b64) {
        struct json_object *p = json_object_new_object();
        json_object_object_add(p, "encoding", json_object_new_string(CO_INVENTORY_ENCODING));
        json_object_object_add(p, "items",
                               json_object_new_int64((int64_t)json_object_array_length(inventory)));
        json_object_object_add(p, "data", json_object_new_string(b64));
        json_object_object_add(status, "packedInventory", p);
        free(b64);
    } else {
        json_object_object_add(status, "inventory", json_object_get(inventory));
    }
    co_buf_dispose(&text);
    co_buf_dispose(&gz);
}
