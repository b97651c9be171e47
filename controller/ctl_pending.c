/* SPDX-License-Identifier: Apache-2.0 */
/* Status writes held back (ctl_pending.h): a map from "ns/name" to the status and the
 * resourceVersion it was built over, under one mutex. A status is held as its compact text,
 * deflated: a json-c tree of a status with an inventory takes about 25 KB, its text about
 * 4 KB, deflated about 1 KB, and at full load every Component waiting for its objects holds
 * one. */
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <zlib.h>

#include "co/util/common.h"
#include "co/util/strmap.h"
#include "controller/ctl_pending.h"

typedef struct held {
    char *rv;
    size_t len;          /* of the text */
    size_t packed_len;   /* of the deflate stream */
    size_t size;         /* what its allocation takes (malloc_usable_size()) */
    unsigned char *data; /* the raw deflate stream of the status's compact text */
} held;

/* small windows: a status is a few kilobytes, and each call sets up its own stream */
#define WBITS    (-12)
#define MEMLEVEL 5

struct ctl_pending {
    pthread_mutex_t mu;
    co_strmap map; /* key -> held */
    size_t bytes;  /* sum of size */
};

static void held_free(held *h)
{
    if (h) {
        free(h->rv);
        free(h->data);
        free(h);
    }
}

ctl_pending *ctl_pending_new(void)
{
    ctl_pending *p = co_xcalloc(1, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    p->map = (co_strmap)CO_STRMAP_INIT;
    return p;
}

void ctl_pending_free(ctl_pending *p)
{
    if (!p) {
        return;
    }
    const char *key = NULL;
    void *value = NULL;
    for (size_t i = 0; co_strmap_next(&p->map, &i, &key, &value);) {
        held_free(value);
    }
    co_strmap_dispose(&p->map);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Deflates @p text into @p h; false when zlib fails (then nothing is held). */
static bool pack(held *h, const char *text, size_t len)
{
    z_stream zs = {0};
    if (deflateInit2(&zs, 1, Z_DEFLATED, WBITS, MEMLEVEL, Z_DEFAULT_STRATEGY) != Z_OK) {
        return false;
    }
    /* deflated into a scratch buffer of the worst case, then kept at its own size: a status is
     * held for seconds, beside thousands of others */
    uLong cap = deflateBound(&zs, (uLong)len);
    unsigned char *scratch = co_xmalloc(cap);
    zs.next_in = (Bytef *)text;
    zs.avail_in = (uInt)len;
    zs.next_out = scratch;
    zs.avail_out = (uInt)cap;
    bool ok = deflate(&zs, Z_FINISH) == Z_STREAM_END;
    if (ok) {
        h->len = len;
        h->packed_len = zs.total_out;
        h->data = (unsigned char *)co_xmemdup(scratch, h->packed_len);
        h->size = malloc_usable_size(h->data);
    }
    deflateEnd(&zs);
    free(scratch);
    return ok;
}

/* The status held in @p h, parsed; NULL when it cannot be restored. */
static struct json_object *unpack(const held *h)
{
    char *text = co_xmalloc(h->len + 1);
    z_stream zs = {0};
    bool ok = inflateInit2(&zs, WBITS) == Z_OK;
    if (ok) {
        zs.next_in = h->data;
        zs.avail_in = (uInt)h->packed_len;
        zs.next_out = (Bytef *)text;
        zs.avail_out = (uInt)h->len;
        ok = inflate(&zs, Z_FINISH) == Z_STREAM_END && zs.total_out == h->len;
        inflateEnd(&zs);
    }
    struct json_object *status = NULL;
    if (ok) {
        text[h->len] = '\0';
        status = json_tokener_parse(text);
    }
    free(text);
    return status;
}

bool ctl_pending_put(ctl_pending *p, const char *key, const char *rv, struct json_object *status)
{
    size_t len = 0;
    const char *text = json_object_to_json_string_length(status, JSON_C_TO_STRING_PLAIN, &len);
    held *h = co_xcalloc(1, sizeof(*h));
    h->rv = co_xstrdup(rv);
    if (!rv || !text || len > UINT32_MAX || !pack(h, text, len)) {
        held_free(h);
        h = NULL;
    }
    pthread_mutex_lock(&p->mu);
    held *old = h ? co_strmap_put(&p->map, key, h) : co_strmap_remove(&p->map, key);
    p->bytes += (h ? h->size : 0) - (old ? old->size : 0);
    pthread_mutex_unlock(&p->mu);
    held_free(old);
    return h != NULL;
}

struct json_object *ctl_pending_take(ctl_pending *p, const char *key, const char *rv)
{
    pthread_mutex_lock(&p->mu);
    held *h = co_strmap_remove(&p->map, key);
    p->bytes -= h ? h->size : 0;
    pthread_mutex_unlock(&p->mu);
    struct json_object *status = NULL;
    if (h && h->rv && rv && strcmp(h->rv, rv) == 0) {
        status = unpack(h);
    }
    held_free(h);
    return status;
}

void ctl_pending_drop(ctl_pending *p, const char *key)
{
    pthread_mutex_lock(&p->mu);
    held *h = co_strmap_remove(&p->map, key);
    p->bytes -= h ? h->size : 0;
    pthread_mutex_unlock(&p->mu);
    held_free(h);
}

size_t ctl_pending_len(ctl_pending *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = co_strmap_len(&p->map);
    pthread_mutex_unlock(&p->mu);
    return n;
}

size_t ctl_pending_bytes(ctl_pending *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->bytes;
    pthread_mutex_unlock(&p->mu);
    return n;
}
