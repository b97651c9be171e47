/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The informer: a reflector thread (list, watch, resume, relist on 410, backoff) feeding a
 * store of immutable JSON texts keyed by namespace/name, with secondary indexes and handlers.
 *
 * Storing text rather than json-c trees is deliberate: json-c's reference counts and
 * serialisation buffers are not thread-safe, so sharing trees between the reflector and
 * readers would need a lock around every json-c call a reader makes. Text is immutable, about
 * a third of the size of a tree, and each read decodes a private tree for its caller. With
 * compress_over, longer texts are kept deflated (Kubernetes JSON shrinks three to eight times:
 * repeated keys, inventories of similar items) and inflated by each read.
 *
 * Locking: one rwlock guards the store, the indexes and the counters. Index functions and
 * handlers run on the reflector thread without the lock held, so handlers may read the store.
 */
#include "co/json/json.h"
#include "co/kube/kube_informer.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#define ZLIB_CONST
#include <zlib.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/util/thread.h"
#include "kube_int.h"

#define DEFAULT_PAGE            500
#define DEFAULT_BACKOFF_BASE_MS 800
#define DEFAULT_BACKOFF_CAP_MS  30000
#define SHORT_WATCH_MS          1000

/* zlib's windowBits for stored texts: a 4 KiB window is enough for one object's repetitions
 * and keeps the deflate state at about 35 KiB per informer. */
#define STORE_WBITS    12
#define STORE_MEMLEVEL 5

/* One cached object. */
typedef struct entry {
    char *json;    /* compact JSON text, or its deflate stream when packed */
    size_t len;    /* of the text */
    size_t stored; /* bytes at json */
    bool packed;
    char *rv;
    co_kube_keys *ikeys; /* per index: the keys this object is listed under */
} entry;

/* The store keys under one index key, sorted: most index keys name one object (an inventory
 * item claimed by one Component), so a set is one small block, not a hash table. */
typedef struct key_set {
    size_t len, cap;
    char *keys[];
} key_set;

typedef struct index_def {
    char *name;
    co_kube_index_fn fn;
    void *payload;
    co_strmap values; /* index key -> key_set * */
} index_def;

/* A change to hand to the handlers once the lock is released. */
typedef struct pending {
    co_kube_event_type type; /* ADDED, MODIFIED or DELETED */
    char *old_json;          /* previous text (MODIFIED, DELETED from a relist) */
    char *new_json;          /* new text when no tree is at hand */
} pending;

struct co_kube_informer {
    co_kube_client *client;
    char *api_version, *kind, *namespace, *label_selector, *field_selector;
    long page_size, watch_timeout_s, backoff_base_ms, backoff_cap_ms;
    int strip_managed_fields;
    int metadata_only;
    void (*transform)(struct json_object *obj, void *payload);
    void *transform_payload;
    bool (*admit)(const struct json_object *obj, void *payload);
    void *admit_payload;
    size_t compress_over;
    z_stream zs; /* reflector thread: deflates stored texts */
    bool zs_ready;

    pthread_rwlock_t lock;
    co_strmap store; /* key -> entry * */
    size_t bytes;
    index_def *indexes;
    size_t nindexes;
    co_kube_informer_stats stats;

    co_kube_handlers *handlers;
    size_t nhandlers;
    int want_old; /* some handler wants the old object of updates */

    pthread_t thread;
    int started;
    volatile int stop;
    pthread_mutex_t sync_lock;
    pthread_cond_t sync_cond;
    int synced;

    /* reflector-thread state */
    char rv[64];
    unsigned long watch_events;
};

/* --- keys ----------------------------------------------------------------------------------- */

void co_kube_keys_add(co_kube_keys *keys, const char *key)
{
    for (size_t i = 0; i < keys->len; i++) {
        if (strcmp(keys->items[i], key) == 0) {
            return;
        }
    }
    keys->items = co_xreallocarray(keys->items, keys->len + 1, sizeof(char *));
    keys->items[keys->len++] = co_xstrdup(key);
}

void co_kube_keys_dispose(co_kube_keys *keys)
{
    if (!keys) {
        return;
    }
    for (size_t i = 0; i < keys->len; i++) {
        free(keys->items[i]);
    }
    free(keys->items);
    keys->items = NULL;
    keys->len = 0;
}

char *co_kube_informer_key_of(const struct json_object *obj)
{
    const char *name = co_json_meta_name(obj);
    const char *ns = co_json_meta_namespace(obj);
    if (!name || !name[0]) {
        return NULL;
    }
    return ns && ns[0] ? co_xasprintf("%s/%s", ns, name) : co_xstrdup(name);
}

/* --- lifecycle ------------------------------------------------------------------------------ */

int co_kube_informer_new(co_kube_informer **out,
                         co_kube_client *client,
                         const co_kube_informer_options *opts)
{
    if (!opts || !opts->api_version || !opts->api_version[0] || !opts->kind || !opts->kind[0]) {
        return co_error_set(CO_EINVALID, "informer: apiVersion and kind are required");
    }
    if (opts->page_size < 0 || opts->watch_timeout_s < 0 || opts->backoff_base_ms < 0 ||
        opts->backoff_cap_ms < 0) {
        return co_error_set(CO_EINVALID, "informer: sizes and durations must not be negative");
    }
    co_kube_informer *inf = co_xcalloc(1, sizeof(*inf));
    inf->client = client;
    inf->api_version = co_xstrdup(opts->api_version);
    inf->kind = co_xstrdup(opts->kind);
    inf->namespace = co_xstrdup(opts->namespace);
    inf->label_selector = co_xstrdup(opts->label_selector);
    inf->field_selector = co_xstrdup(opts->field_selector);
    inf->page_size = opts->page_size ? opts->page_size : DEFAULT_PAGE;
    inf->watch_timeout_s = opts->watch_timeout_s;
    inf->backoff_base_ms = opts->backoff_base_ms ? opts->backoff_base_ms : DEFAULT_BACKOFF_BASE_MS;
    inf->backoff_cap_ms = opts->backoff_cap_ms ? opts->backoff_cap_ms : DEFAULT_BACKOFF_CAP_MS;
    inf->strip_managed_fields = opts->strip_managed_fields;
    inf->metadata_only = opts->metadata_only;
    inf->transform = opts->transform;
    inf->transform_payload = opts->transform_payload;
    inf->admit = opts->admit;
    inf->admit_payload = opts->admit_payload;
    inf->compress_over = opts->compress_over;
    pthread_rwlock_init(&inf->lock, NULL);
    pthread_mutex_init(&inf->sync_lock, NULL);
    co_cond_init_monotonic(&inf->sync_cond);
    *out = inf;
    return 0;
}

/* A private, NUL-terminated copy of an entry's text (inflated when packed). */
static char *entry_text(const entry *e)
{
    if (!e->packed) {
        return co_xmemdup(e->json, e->len);
    }
    char *text = co_xmalloc(e->len + 1);
    z_stream zs = {0};
    bool ok = inflateInit2(&zs, STORE_WBITS) == Z_OK;
    if (ok) {
        zs.next_in = (const Bytef *)e->json;
        zs.avail_in = (uInt)e->stored;
        zs.next_out = (Bytef *)text;
        zs.avail_out = (uInt)e->len;
        ok = inflate(&zs, Z_FINISH) == Z_STREAM_END && zs.total_out == e->len;
        inflateEnd(&zs);
    }
    /* the stream was written by this process: failing to read it back is a bug */
    CO_ASSERT(ok);
    text[e->len] = '\0';
    return text;
}

/* The entry's text, taken from it (the entry keeps no text afterwards). */
static char *entry_take_text(entry *e)
{
    char *text = e->packed ? entry_text(e) : e->json;
    if (e->packed) {
        free(e->json);
    }
    e->json = NULL;
    return text;
}

/* Stores @p text in @p e, deflated when it is long and that pays. */
static void entry_set_text(co_kube_informer *inf, entry *e, const char *text, size_t len)
{
    e->len = len;
    if (inf->compress_over && len > inf->compress_over && len < UINT_MAX / 2) {
        if (!inf->zs_ready) {
            inf->zs_ready = deflateInit2(&inf->zs, 1, Z_DEFLATED, STORE_WBITS, STORE_MEMLEVEL,
                                         Z_DEFAULT_STRATEGY) == Z_OK;
        } else {
            (void)deflateReset(&inf->zs);
        }
        if (inf->zs_ready) {
            size_t cap = deflateBound(&inf->zs, (uLong)len);
            unsigned char *out = co_xmalloc(cap);
            inf->zs.next_in = (const Bytef *)text;
            inf->zs.avail_in = (uInt)len;
            inf->zs.next_out = out;
            inf->zs.avail_out = (uInt)cap;
            if (deflate(&inf->zs, Z_FINISH) == Z_STREAM_END && inf->zs.total_out < len) {
                e->stored = inf->zs.total_out;
                e->json = co_xmemdup(out, e->stored);
                e->packed = true;
                free(out);
                return;
            }
            free(out);
        }
    }
    e->json = co_xmemdup(text, len);
    e->stored = len;
    e->packed = false;
}

static void entry_free(entry *e, size_t nindexes)
{
    if (!e) {
        return;
    }
    free(e->json);
    free(e->rv);
    if (e->ikeys) {
        for (size_t i = 0; i < nindexes; i++) {
            co_kube_keys_dispose(&e->ikeys[i]);
        }
        free(e->ikeys);
    }
    free(e);
}

static void free_set(key_set *set)
{
    for (size_t i = 0; set && i < set->len; i++) {
        free(set->keys[i]);
    }
    free(set);
}

/* Where @p key is, or would be inserted, in @p set; *found tells which. */
static size_t set_find(const key_set *set, const char *key, bool *found)
{
    size_t lo = 0, hi = set->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(set->keys[mid], key);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return lo;
}

void co_kube_informer_free(co_kube_informer *inf)
{
    if (!inf) {
        return;
    }
    co_kube_informer_stop(inf);
    const char *key;
    void *value;
    for (size_t it = 0; co_strmap_next(&inf->store, &it, &key, &value);) {
        entry_free(value, inf->nindexes);
    }
    co_strmap_dispose(&inf->store);
    for (size_t i = 0; i < inf->nindexes; i++) {
        for (size_t it = 0; co_strmap_next(&inf->indexes[i].values, &it, &key, &value);) {
            free_set(value);
        }
        co_strmap_dispose(&inf->indexes[i].values);
        free(inf->indexes[i].name);
    }
    free(inf->indexes);
    free(inf->handlers);
    free(inf->api_version);
    free(inf->kind);
    free(inf->namespace);
    free(inf->label_selector);
    free(inf->field_selector);
    if (inf->zs_ready) {
        deflateEnd(&inf->zs);
    }
    pthread_rwlock_destroy(&inf->lock);
    pthread_mutex_destroy(&inf->sync_lock);
    pthread_cond_destroy(&inf->sync_cond);
    free(inf);
}

int co_kube_informer_add_index(co_kube_informer *inf,
                               const char *name,
                               co_kube_index_fn fn,
                               void *payload)
{
    if (inf->started) {
        return co_error_set(CO_EINVALID, "informer: indexes must be added before start");
    }
    if (!name || !fn) {
        return co_error_set(CO_EINVALID, "informer: an index needs a name and a function");
    }
    for (size_t i = 0; i < inf->nindexes; i++) {
        if (strcmp(inf->indexes[i].name, name) == 0) {
            return co_error_set(CO_EEXISTS, "informer: index \"%s\" exists", name);
        }
    }
    inf->indexes = co_xreallocarray(inf->indexes, inf->nindexes + 1, sizeof(index_def));
    inf->indexes[inf->nindexes++] = (index_def){co_xstrdup(name), fn, payload, CO_STRMAP_INIT};
    return 0;
}

int co_kube_informer_add_handlers(co_kube_informer *inf, const co_kube_handlers *handlers)
{
    if (inf->started) {
        return co_error_set(CO_EINVALID, "informer: handlers must be added before start");
    }
    inf->handlers = co_xreallocarray(inf->handlers, inf->nhandlers + 1, sizeof(*handlers));
    inf->handlers[inf->nhandlers++] = *handlers;
    if (handlers->on_update) {
        inf->want_old = 1;
    }
    return 0;
}

/* --- store updates (reflector thread) ----------------------------------------------------- */

static void index_add(index_def *idx, const char *value, const char *key)
{
    key_set *set = co_strmap_get(&idx->values, value);
    bool found = false;
    size_t at = set ? set_find(set, key, &found) : 0;
    if (found) {
        return;
    }
    if (!set || set->len == set->cap) {
        size_t cap = set ? set->cap * 2 : 1;
        key_set *grown = co_xrealloc(set, sizeof(key_set) + cap * sizeof(char *));
        if (!set) {
            grown->len = 0;
        }
        grown->cap = cap;
        set = grown;
        co_strmap_put(&idx->values, value, set); /* the former block is gone (realloc) */
    }
    memmove(&set->keys[at + 1], &set->keys[at], (set->len - at) * sizeof(char *));
    set->keys[at] = co_xstrdup(key);
    set->len++;
}

static void index_remove(index_def *idx, const char *value, const char *key)
{
    key_set *set = co_strmap_get(&idx->values, value);
    bool found = false;
    size_t at = set ? set_find(set, key, &found) : 0;
    if (!found) {
        return;
    }
    free(set->keys[at]);
    set->len--;
    memmove(&set->keys[at], &set->keys[at + 1], (set->len - at) * sizeof(char *));
    if (set->len == 0) {
        co_strmap_remove(&idx->values, value);
        free_set(set);
    }
}

/* Moves the index entries of @p key from @p old to @p new (either may be NULL); lock held. */
static bool same_keys(const co_kube_keys *a, const co_kube_keys *b)
{
    if (a->len != b->len) {
        return false;
    }
    for (size_t k = 0; k < a->len; k++) {
        if (strcmp(a->items[k], b->items[k]) != 0) {
            return false;
        }
    }
    return true;
}

static void reindex(co_kube_informer *inf, const char *key, const entry *old, const entry *neu)
{
    for (size_t i = 0; i < inf->nindexes; i++) {
        if (old && neu && same_keys(&old->ikeys[i], &neu->ikeys[i])) {
            continue; /* most updates (a status write) keep an object's index keys */
        }
        if (old) {
            for (size_t k = 0; k < old->ikeys[i].len; k++) {
                index_remove(&inf->indexes[i], old->ikeys[i].items[k], key);
            }
        }
        if (neu) {
            for (size_t k = 0; k < neu->ikeys[i].len; k++) {
                index_add(&inf->indexes[i], neu->ikeys[i].items[k], key);
            }
        }
    }
}

static void record_error(co_kube_informer *inf, const char *what)
{
    pthread_rwlock_wrlock(&inf->lock);
    inf->stats.errors++;
    snprintf(inf->stats.last_error, sizeof(inf->stats.last_error), "%s: %s", what, co_error_last());
    pthread_rwlock_unlock(&inf->lock);
}

/* Builds a store entry from @p obj (a private tree, possibly modified: managed fields). */
static entry *make_entry(co_kube_informer *inf, struct json_object *obj)
{
    struct json_object *meta = co_kube__obj(obj, "metadata");
    if (inf->strip_managed_fields && meta) {
        json_object_object_del(meta, "managedFields");
    }
    if (inf->transform) {
        inf->transform(obj, inf->transform_payload);
    }
    entry *e = co_xcalloc(1, sizeof(*e));
    size_t len = 0;
    const char *text = json_object_to_json_string_length(
        obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    entry_set_text(inf, e, text, len);
    const char *rv = co_json_str(meta, "resourceVersion", NULL);
    e->rv = co_xstrdup(rv ? rv : "");
    if (inf->nindexes) {
        e->ikeys = co_xcalloc(inf->nindexes, sizeof(co_kube_keys));
        for (size_t i = 0; i < inf->nindexes; i++) {
            co_error_clear();
            if (inf->indexes[i].fn(&e->ikeys[i], obj, inf->indexes[i].payload) < 0) {
                co_kube_keys_dispose(&e->ikeys[i]);
                record_error(inf, inf->indexes[i].name);
            }
        }
    }
    return e;
}

static struct json_object *parse_text(const char *text, size_t len)
{
    struct json_object *obj = NULL;
    if (co_kube__parse_json(&obj, text, len) < 0) {
        return NULL; /* cannot happen: the text was written by json-c */
    }
    return obj;
}

/* Calls the handlers for one change. @p obj is the new (or, for DELETED, last) state. */
static void dispatch(co_kube_informer *inf,
                     co_kube_event_type type,
                     const char *old_json,
                     const struct json_object *obj)
{
    if (!inf->nhandlers) {
        return;
    }
    struct json_object *old = NULL;
    if (type == CO_KUBE_MODIFIED && inf->want_old && old_json) {
        old = parse_text(old_json, strlen(old_json));
    }
    for (size_t i = 0; i < inf->nhandlers; i++) {
        const co_kube_handlers *h = &inf->handlers[i];
        if (type == CO_KUBE_ADDED && h->on_add) {
            h->on_add(obj, h->payload);
        } else if (type == CO_KUBE_MODIFIED && h->on_update) {
            h->on_update(old ? old : obj, obj, h->payload);
        } else if (type == CO_KUBE_DELETED && h->on_delete) {
            h->on_delete(obj, h->payload);
        }
    }
    json_object_put(old);
}

/* Applies one watch event to the store and runs the handlers. */
static void apply_event(co_kube_informer *inf, co_kube_event_type type, struct json_object *obj)
{
    char *key = co_kube_informer_key_of(obj);
    if (!key) {
        return;
    }
    char *old_json = NULL;
    bool refused = inf->admit && !inf->admit(obj, inf->admit_payload);
    if (type == CO_KUBE_DELETED || refused) {
        pthread_rwlock_wrlock(&inf->lock);
        entry *old = co_strmap_remove(&inf->store, key);
        if (old) {
            reindex(inf, key, old, NULL);
            inf->bytes -= old->stored;
        }
        inf->stats.events++;
        pthread_rwlock_unlock(&inf->lock);
        if (old && refused && type != CO_KUBE_DELETED) {
            /* the object as the handlers knew it, the last state they were told */
            char *text = entry_text(old);
            struct json_object *last = parse_text(text, old->len);
            if (last) {
                dispatch(inf, CO_KUBE_DELETED, NULL, last);
            }
            json_object_put(last);
            free(text);
        } else if (old || !refused) {
            dispatch(inf, CO_KUBE_DELETED, NULL, obj);
        }
        entry_free(old, inf->nindexes);
    } else {
        entry *e = make_entry(inf, obj);
        pthread_rwlock_wrlock(&inf->lock);
        entry *old = co_strmap_put(&inf->store, key, e);
        reindex(inf, key, old, e);
        inf->bytes += e->stored;
        if (old) {
            inf->bytes -= old->stored;
            old_json = entry_take_text(old);
        }
        inf->stats.events++;
        pthread_rwlock_unlock(&inf->lock);
        entry_free(old, inf->nindexes);
        dispatch(inf, old ? CO_KUBE_MODIFIED : CO_KUBE_ADDED, old_json, obj);
    }
    free(old_json);
    free(key);
}

/* --- listing -------------------------------------------------------------------------------- */

typedef struct list_acc {
    co_kube_informer *inf;
    co_strmap fresh; /* key -> entry * */
    char **order;    /* keys in list order, for handlers */
    size_t norder;
} list_acc;

static int on_list_item(struct json_object *item, void *payload)
{
    list_acc *acc = payload;
    if (acc->inf->admit && !acc->inf->admit(item, acc->inf->admit_payload)) {
        return 0; /* absent: a stored one is deleted below */
    }
    char *key = co_kube_informer_key_of(item);
    if (!key) {
        return 0;
    }
    /* the item belongs to the page: work on a copy, managed fields may be dropped */
    struct json_object *copy = NULL;
    if (json_object_deep_copy(item, &copy, NULL) != 0) {
        free(key);
        return co_error_set(CO_ERROR, "cannot copy a listed object");
    }
    entry *dup = co_strmap_put(&acc->fresh, key, make_entry(acc->inf, copy));
    if (dup) {
        entry_free(dup, acc->inf->nindexes);
        free(key);
    } else {
        acc->order = co_xreallocarray(acc->order, acc->norder + 1, sizeof(char *));
        acc->order[acc->norder++] = key;
    }
    json_object_put(copy);
    return 0;
}

static int cancelled(void *payload)
{
    co_kube_informer *inf = payload;
    return __atomic_load_n(&inf->stop, __ATOMIC_RELAXED);
}

/* Lists the collection and replaces the store with the result, running the handlers for the
 * difference: new keys are added, changed ones updated, missing ones deleted. */
static int relist(co_kube_informer *inf)
{
    list_acc acc = {inf, CO_STRMAP_INIT, NULL, 0};
    char *rv = NULL;
    pending *ev = NULL;
    size_t nev = 0;
    co_kube_ref ref = {inf->api_version, inf->kind, inf->namespace, NULL};
    co_kube_list_options lo = {
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .limit = inf->page_size,
        .cancelled = cancelled,
        .cancel_payload = inf,
        .skip_managed_fields = inf->strip_managed_fields,
        .metadata_only = inf->metadata_only,
    };
    const char *key;
    void *value;
    int rc = co_kube_list_each(&rv, inf->client, &ref, &lo, on_list_item, &acc);
    if (rc < 0) {
        goto done;
    }
    ev = co_xcalloc(acc.fresh.len + inf->store.len + 1, sizeof(pending));
    pthread_rwlock_wrlock(&inf->lock);
    /* objects that disappeared (removing during the walk is safe: slots never move) */
    for (size_t it = 0; co_strmap_next(&inf->store, &it, &key, &value);) {
        if (!co_strmap_get(&acc.fresh, key)) {
            entry *old = value;
            ev[nev++] = (pending){CO_KUBE_DELETED, entry_take_text(old), NULL};
            reindex(inf, key, old, NULL);
            inf->bytes -= old->stored;
            co_strmap_remove(&inf->store, key);
            entry_free(old, inf->nindexes);
        }
    }
    /* new and changed objects, in list order */
    for (size_t i = 0; i < acc.norder; i++) {
        key = acc.order[i];
        entry *e = co_strmap_get(&acc.fresh, key);
        entry *old = co_strmap_get(&inf->store, key);
        if (old && strcmp(old->rv, e->rv) == 0) {
            continue; /* unchanged: keep the stored entry, drop the fresh one below */
        }
        co_strmap_put(&inf->store, key, e);
        reindex(inf, key, old, e);
        inf->bytes += e->stored;
        pending *p = &ev[nev++];
        p->type = old ? CO_KUBE_MODIFIED : CO_KUBE_ADDED;
        p->new_json = entry_text(e);
        if (old) {
            inf->bytes -= old->stored;
            p->old_json = entry_take_text(old);
            entry_free(old, inf->nindexes);
        }
        /* now owned by the store */
        co_strmap_put(&acc.fresh, key, NULL);
    }
    inf->stats.lists++;
    snprintf(inf->rv, sizeof(inf->rv), "%s", rv ? rv : "");
    pthread_rwlock_unlock(&inf->lock);
    for (size_t i = 0; i < nev; i++) {
        const char *text = ev[i].type == CO_KUBE_DELETED ? ev[i].old_json : ev[i].new_json;
        struct json_object *o = inf->nhandlers ? parse_text(text, strlen(text)) : NULL;
        if (o) {
            dispatch(inf, ev[i].type, ev[i].old_json, o);
        }
        json_object_put(o);
    }
done:
    for (size_t i = 0; i < nev; i++) {
        free(ev[i].old_json);
        free(ev[i].new_json);
    }
    free(ev);
    for (size_t it = 0; co_strmap_next(&acc.fresh, &it, &key, &value);) {
        entry_free(value, inf->nindexes);
    }
    co_strmap_dispose(&acc.fresh);
    for (size_t i = 0; i < acc.norder; i++) {
        free(acc.order[i]);
    }
    free(acc.order);
    free(rv);
    return rc;
}

/* --- watching ------------------------------------------------------------------------------- */

static int on_watch_event(co_kube_event_type type, struct json_object *obj, void *payload)
{
    co_kube_informer *inf = payload;
    const char *rv = co_json_str(obj, "metadata", "resourceVersion", NULL);
    if (type == CO_KUBE_BOOKMARK) {
        pthread_rwlock_wrlock(&inf->lock);
        inf->stats.bookmarks++;
        pthread_rwlock_unlock(&inf->lock);
    } else {
        apply_event(inf, type, obj);
    }
    if (rv && rv[0]) {
        pthread_rwlock_wrlock(&inf->lock);
        snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
        pthread_rwlock_unlock(&inf->lock);
    }
    inf->watch_events++;
    return cancelled(inf) ? 1 : 0;
}

static void set_synced(co_kube_informer *inf)
{
    pthread_mutex_lock(&inf->sync_lock);
    inf->synced = 1;
    pthread_cond_broadcast(&inf->sync_cond);
    pthread_mutex_unlock(&inf->sync_lock);
}

static void *reflector(void *arg)
{
    co_kube_informer *inf = arg;
    int need_list = 1;
    int attempt = 0;
    co_kube_ref ref = {inf->api_version, inf->kind, inf->namespace, NULL};
    while (!cancelled(inf)) {
        co_error_clear();
        if (need_list) {
            int rc = relist(inf);
            if (cancelled(inf)) {
                break;
            }
            if (rc < 0) {
                record_error(inf, "list");
                co_kube__sleep_ms(co_kube_backoff_ms(attempt++, inf->backoff_base_ms,
                                                     inf->backoff_cap_ms, co_kube__random()),
                                  &inf->stop);
                continue;
            }
            need_list = 0;
            set_synced(inf);
        }
        char rv[64];
        pthread_rwlock_rdlock(&inf->lock);
        snprintf(rv, sizeof(rv), "%s", inf->rv);
        inf->stats.watches++;
        pthread_rwlock_unlock(&inf->lock);
        long timeout =
            inf->watch_timeout_s ? inf->watch_timeout_s : 300 + (long)(300.0 * co_kube__random());
        co_kube_watch_options wo = {
            .resource_version = rv,
            .label_selector = inf->label_selector,
            .field_selector = inf->field_selector,
            .timeout_s = timeout,
            .allow_bookmarks = 1,
            .cancelled = cancelled,
            .cancel_payload = inf,
            .skip_managed_fields = inf->strip_managed_fields,
            .metadata_only = inf->metadata_only,
        };
        inf->watch_events = 0;
        int64_t started = co_kube__now_ms();
        int rc = co_kube_watch(inf->client, &ref, &wo, on_watch_event, inf);
        if (cancelled(inf)) {
            break;
        }
        if (rc == CO_EGONE) {
            pthread_rwlock_wrlock(&inf->lock);
            inf->stats.gone++;
            pthread_rwlock_unlock(&inf->lock);
            need_list = 1;
            continue;
        }
        if (rc == 0 && (inf->watch_events > 0 || co_kube__now_ms() - started >= SHORT_WATCH_MS)) {
            attempt = 0; /* a normal end (server timeout): resume from the last version */
            continue;
        }
        if (rc == 0) {
            co_error_set(CO_EUNAVAILABLE, "the watch ended at once without events");
        }
        if (inf->watch_events > 0) {
            attempt = 0; /* it worked for a while: start the backoff over */
        }
        record_error(inf, "watch");
        co_kube__sleep_ms(co_kube_backoff_ms(attempt++, inf->backoff_base_ms, inf->backoff_cap_ms,
                                             co_kube__random()),
                          &inf->stop);
    }
    pthread_mutex_lock(&inf->sync_lock);
    pthread_cond_broadcast(&inf->sync_cond);
    pthread_mutex_unlock(&inf->sync_lock);
    return NULL;
}

int co_kube_informer_start(co_kube_informer *inf)
{
    if (inf->started) {
        return co_error_set(CO_EINVALID, "informer: already started");
    }
    __atomic_store_n(&inf->stop, 0, __ATOMIC_RELAXED);
    if (pthread_create(&inf->thread, NULL, reflector, inf) != 0) {
        return co_error_set_os(CO_ERROR, "informer: cannot start a thread");
    }
    inf->started = 1;
    return 0;
}

void co_kube_informer_stop(co_kube_informer *inf)
{
    if (!inf->started) {
        return;
    }
    __atomic_store_n(&inf->stop, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&inf->sync_lock);
    pthread_cond_broadcast(&inf->sync_cond);
    pthread_mutex_unlock(&inf->sync_lock);
    pthread_join(inf->thread, NULL);
    inf->started = 0;
}

bool co_kube_informer_has_synced(co_kube_informer *inf)
{
    pthread_mutex_lock(&inf->sync_lock);
    int s = inf->synced;
    pthread_mutex_unlock(&inf->sync_lock);
    return s;
}

int co_kube_informer_wait_synced(co_kube_informer *inf, long timeout_ms)
{
    struct timespec deadline = co_monotonic_deadline_ns((int64_t)timeout_ms * 1000000);
    int rc = 0;
    pthread_mutex_lock(&inf->sync_lock);
    while (!inf->synced) {
        if (!inf->started || cancelled(inf)) {
            rc = co_error_set(CO_ECANCELED, "informer %s %s: stopped before it synced",
                              inf->api_version, inf->kind);
            break;
        }
        int w = timeout_ms >= 0
                    ? pthread_cond_timedwait(&inf->sync_cond, &inf->sync_lock, &deadline)
                    : pthread_cond_wait(&inf->sync_cond, &inf->sync_lock);
        if (w != 0 && !inf->synced) {
            rc = co_error_set(CO_ETIMEOUT, "informer %s %s: not synced after %ld ms",
                              inf->api_version, inf->kind, timeout_ms);
            break;
        }
    }
    pthread_mutex_unlock(&inf->sync_lock);
    return rc;
}

/* --- reading ------------------------------------------------------------------------------- */

bool co_kube_informer_contains(co_kube_informer *inf, const char *ns, const char *name)
{
    char *key = ns && ns[0] ? co_xasprintf("%s/%s", ns, name) : co_xstrdup(name);
    pthread_rwlock_rdlock(&inf->lock);
    bool found = co_strmap_get(&inf->store, key) != NULL;
    pthread_rwlock_unlock(&inf->lock);
    free(key);
    return found;
}

int co_kube_informer_get(struct json_object **out,
                         co_kube_informer *inf,
                         const char *ns,
                         const char *name)
{
    char *key = ns && ns[0] ? co_xasprintf("%s/%s", ns, name) : co_xstrdup(name);
    char *text = NULL;
    size_t len = 0;
    pthread_rwlock_rdlock(&inf->lock);
    entry *e = co_strmap_get(&inf->store, key);
    if (e) {
        text = entry_text(e);
        len = e->len;
    }
    pthread_rwlock_unlock(&inf->lock);
    int rc = 0;
    if (!text) {
        rc = co_error_set(CO_ENOTFOUND, "%s %s \"%s\" is not in the cache", inf->api_version,
                          inf->kind, key);
    } else {
        rc = co_kube__parse_json(out, text, len);
    }
    free(text);
    free(key);
    return rc;
}

/* Decodes the texts of @p keys (sorted) into a new array; lock not held. */
static struct json_object *decode_all(char **texts, size_t n)
{
    struct json_object *arr = json_object_new_array_ext((int)(n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        struct json_object *o = parse_text(texts[i], strlen(texts[i]));
        if (o) {
            json_object_array_add(arr, o);
        }
    }
    return arr;
}

typedef struct kv {
    char *key;
    char *text;
} kv;

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(((const kv *)a)->key, ((const kv *)b)->key);
}

static struct json_object *sorted_objects(kv *items, size_t n)
{
    if (n > 1) {
        qsort(items, n, sizeof(kv), cmp_kv);
    }
    char **texts = co_xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        texts[i] = items[i].text;
    }
    struct json_object *arr = decode_all(texts, n);
    for (size_t i = 0; i < n; i++) {
        free(items[i].key);
        free(items[i].text);
    }
    free(texts);
    return arr;
}

int co_kube_informer_list(struct json_object **out, co_kube_informer *inf, const char *ns)
{
    size_t plen = ns && ns[0] ? strlen(ns) : 0;
    const char *key;
    void *value;
    pthread_rwlock_rdlock(&inf->lock);
    kv *items = co_xcalloc(inf->store.len + 1, sizeof(kv));
    size_t n = 0;
    for (size_t it = 0; co_strmap_next(&inf->store, &it, &key, &value);) {
        if (plen && (strncmp(key, ns, plen) != 0 || key[plen] != '/')) {
            continue;
        }
        entry *e = value;
        items[n].key = co_xstrdup(key);
        items[n].text = entry_text(e);
        n++;
    }
    pthread_rwlock_unlock(&inf->lock);
    *out = sorted_objects(items, n);
    free(items);
    return 0;
}

static index_def *find_index(co_kube_informer *inf, const char *name)
{
    for (size_t i = 0; i < inf->nindexes; i++) {
        if (strcmp(inf->indexes[i].name, name) == 0) {
            return &inf->indexes[i];
        }
    }
    return NULL;
}

int co_kube_informer_by_index(struct json_object **out,
                              co_kube_informer *inf,
                              const char *index,
                              const char *key)
{
    index_def *idx = find_index(inf, index);
    if (!idx) {
        return co_error_set(CO_ENOTFOUND, "informer: no index \"%s\"", index);
    }
    kv *items = NULL;
    size_t n = 0;
    pthread_rwlock_rdlock(&inf->lock);
    key_set *set = co_strmap_get(&idx->values, key);
    if (set) {
        items = co_xcalloc(set->len + 1, sizeof(kv));
        for (size_t i = 0; i < set->len; i++) {
            const char *k = set->keys[i];
            entry *e = co_strmap_get(&inf->store, k);
            if (e) {
                items[n].key = co_xstrdup(k);
                items[n].text = entry_text(e);
                n++;
            }
        }
    }
    pthread_rwlock_unlock(&inf->lock);
    *out = sorted_objects(items, n);
    free(items);
    return 0;
}

int co_kube_informer_index_keys(co_kube_keys *out,
                                co_kube_informer *inf,
                                const char *index,
                                const char *key)
{
    index_def *idx = find_index(inf, index);
    if (!idx) {
        return co_error_set(CO_ENOTFOUND, "informer: no index \"%s\"", index);
    }
    co_kube_keys keys = {0};
    pthread_rwlock_rdlock(&inf->lock);
    key_set *set = co_strmap_get(&idx->values, key);
    if (set) {
        /* sorted already */
        keys.items = co_xcalloc(set->len + 1, sizeof(char *));
        for (size_t i = 0; i < set->len; i++) {
            keys.items[keys.len++] = co_xstrdup(set->keys[i]);
        }
    }
    pthread_rwlock_unlock(&inf->lock);
    *out = keys;
    return 0;
}

size_t co_kube_informer_len(co_kube_informer *inf)
{
    pthread_rwlock_rdlock(&inf->lock);
    size_t n = inf->store.len;
    pthread_rwlock_unlock(&inf->lock);
    return n;
}

void co_kube_informer_stats_get(co_kube_informer_stats *out, co_kube_informer *inf)
{
    pthread_rwlock_rdlock(&inf->lock);
    *out = inf->stats;
    out->objects = inf->store.len;
    out->bytes = inf->bytes;
    snprintf(out->resource_version, sizeof(out->resource_version), "%s", inf->rv);
    pthread_rwlock_unlock(&inf->lock);
}
