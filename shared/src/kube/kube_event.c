/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event recorder: events go to a co_sender (co/util/sender.h), whose thread writes them,
 * with a bounded cache (first in, first out) of recently created Events for de-duplication that
 * only that thread touches.
 */
#include "co/json/json.h"
#include "co/kube/kube_event.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/util/sender.h"
#include "co/util/time.h"
#include "kube_int.h"

#define DEFAULT_WINDOW_MS (10L * 60 * 1000)
#define DEFAULT_CACHE     4096
#define MAX_MESSAGE       1024
#define FREE_FLUSH_MS     5000

/* One queued event, detached from the caller's object. */
typedef struct item {
    char *api_version, *kind, *ns, *name, *uid, *rv;
    char *type, *reason, *message;
    struct json_object *annotations; /* for the Event's metadata, or NULL */
} item;

/* A created Event remembered for de-duplication. */
typedef struct seen {
    char *key;
    char *event_ns;
    char *event_name;
    int count;
    int64_t last_ms;
} seen;

struct co_kube_recorder {
    co_kube_client *client;
    char *component, *instance;
    long window_ms;

    co_sender *sender;
    pthread_mutex_t stats_lock;
    co_kube_recorder_stats stats;

    /* sender thread only */
    co_strmap cache; /* key -> seen * */
    seen **order;    /* FIFO ring of cache entries */
    size_t ccap, chead, clen;
};

static void item_free(item *it)
{
    if (!it) {
        return;
    }
    free(it->api_version);
    free(it->kind);
    free(it->ns);
    free(it->name);
    free(it->uid);
    free(it->rv);
    free(it->type);
    free(it->reason);
    free(it->message);
    json_object_put(it->annotations);
    free(it);
}

static void seen_free(seen *s)
{
    if (!s) {
        return;
    }
    free(s->key);
    free(s->event_ns);
    free(s->event_name);
    free(s);
}

/* --- sending --------------------------------------------------------------------------------- */

static char *dedup_key(const item *it)
{
    return co_xasprintf("%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", it->ns ? it->ns : "", it->kind,
                        it->name, it->uid ? it->uid : "", it->type, it->reason, it->message);
}

/* Remembers a created Event under @p key; an existing entry (an expired twin) is reused in
 * place, so the ring never holds a key twice. Takes ownership of @p event_name. */
static void remember(co_kube_recorder *rec, const char *key, const char *ns, char *event_name)
{
    seen *s = co_strmap_get(&rec->cache, key);
    if (!s) {
        if (rec->clen == rec->ccap) {
            seen *old = rec->order[rec->chead];
            co_strmap_remove(&rec->cache, old->key);
            seen_free(old);
            rec->chead = (rec->chead + 1) % rec->ccap;
            rec->clen--;
        }
        s = co_xcalloc(1, sizeof(*s));
        s->key = co_xstrdup(key);
        rec->order[(rec->chead + rec->clen) % rec->ccap] = s;
        rec->clen++;
        co_strmap_put(&rec->cache, key, s);
    }
    free(s->event_ns);
    free(s->event_name);
    s->event_ns = co_xstrdup(ns);
    s->event_name = event_name;
    s->count = 1;
    s->last_ms = co_kube__now_ms();
}

static void set_str(struct json_object *o, const char *key, const char *value)
{
    if (value) {
        json_object_object_add(o, key, json_object_new_string(value));
    }
}

/* Patches count and lastTimestamp of a remembered Event. @return 0, CO_ENOTFOUND, errors. */
static int bump(co_kube_recorder *rec, seen *s)
{
    char now[CO_TIME_STR_MAX];
    co_time_format(now, co_time_now());
    struct json_object *patch = json_object_new_object();
    json_object_object_add(patch, "count", json_object_new_int(s->count + 1));
    set_str(patch, "lastTimestamp", now);
    co_kube_ref ref = {"v1", "Event", s->event_ns, s->event_name};
    co_kube_write_options wo = {0};
    int rc = co_kube_patch(NULL, rec->client, &ref, CO_KUBE_PATCH_MERGE, patch, &wo);
    json_object_put(patch);
    if (rc == 0) {
        s->count++;
    }
    return rc;
}

static int create(co_kube_recorder *rec, const item *it, const char *key)
{
    char now[CO_TIME_STR_MAX];
    int64_t ns_now = co_time_now();
    co_time_format(now, ns_now);
    const char *ns = it->ns && it->ns[0] ? it->ns : "default";
    char *name = co_xasprintf("%s.%llx", it->name, (unsigned long long)ns_now);

    struct json_object *ev = json_object_new_object();
    set_str(ev, "apiVersion", "v1");
    set_str(ev, "kind", "Event");
    struct json_object *meta = json_object_new_object();
    set_str(meta, "name", name);
    set_str(meta, "namespace", ns);
    if (it->annotations) {
        json_object_object_add(meta, "annotations", json_object_get(it->annotations));
    }
    json_object_object_add(ev, "metadata", meta);
    struct json_object *ref = json_object_new_object();
    set_str(ref, "apiVersion", it->api_version);
    set_str(ref, "kind", it->kind);
    set_str(ref, "namespace", it->ns);
    set_str(ref, "name", it->name);
    set_str(ref, "uid", it->uid);
    set_str(ref, "resourceVersion", it->rv);
    json_object_object_add(ev, "involvedObject", ref);
    set_str(ev, "type", it->type);
    set_str(ev, "reason", it->reason);
    set_str(ev, "message", it->message);
    struct json_object *source = json_object_new_object();
    set_str(source, "component", rec->component);
    set_str(source, "host", rec->instance);
    json_object_object_add(ev, "source", source);
    set_str(ev, "firstTimestamp", now);
    set_str(ev, "lastTimestamp", now);
    json_object_object_add(ev, "count", json_object_new_int(1));
    set_str(ev, "reportingComponent", rec->component);
    set_str(ev, "reportingInstance", rec->instance ? rec->instance : "");

    int rc = co_kube_create(NULL, rec->client, ev, NULL);
    json_object_put(ev);
    if (rc == 0) {
        remember(rec, key, ns, name);
        name = NULL;
    }
    free(name);
    return rc;
}

/* Sends one event: a count bump for a recent twin, else a new Event. */
static int send_item(co_kube_recorder *rec, const item *it, int *counted)
{
    char *key = dedup_key(it);
    seen *s = co_strmap_get(&rec->cache, key);
    int rc;
    *counted = 0;
    if (s && co_kube__now_ms() - s->last_ms < rec->window_ms) {
        rc = bump(rec, s);
        if (rc == 0) {
            s->last_ms = co_kube__now_ms();
            *counted = 1;
            goto done;
        }
        if (rc != CO_ENOTFOUND) {
            goto done;
        }
        co_error_clear(); /* the Event expired on the server: create it anew */
    }
    rc = create(rec, it, key);
done:
    free(key);
    return rc;
}

static void count(co_kube_recorder *rec, unsigned long *counter)
{
    pthread_mutex_lock(&rec->stats_lock);
    (*counter)++;
    pthread_mutex_unlock(&rec->stats_lock);
}

static void deliver(void *ctx, co_sender *sender, void *arg)
{
    (void)sender;
    co_kube_recorder *rec = ctx;
    item *it = arg;
    int counted = 0;
    co_error_clear();
    int rc = send_item(rec, it, &counted);
    item_free(it);
    count(rec, rc < 0 ? &rec->stats.failed : counted ? &rec->stats.counted : &rec->stats.created);
}

static void drop(void *ctx, void *arg)
{
    co_kube_recorder *rec = ctx;
    item_free(arg);
    count(rec, &rec->stats.dropped);
}

/* --- public ------------------------------------------------------------------------------------
 */

int co_kube_recorder_new(co_kube_recorder **out,
                         co_kube_client *client,
                         const co_kube_recorder_options *opts)
{
    if (!opts || !opts->component || !opts->component[0]) {
        return co_error_set(CO_EINVALID, "event recorder: a component name is required");
    }
    co_kube_recorder *rec = co_xcalloc(1, sizeof(*rec));
    rec->client = client;
    rec->component = co_xstrdup(opts->component);
    rec->instance = co_xstrdup(opts->instance);
    rec->window_ms = opts->dedup_window_ms > 0 ? opts->dedup_window_ms : DEFAULT_WINDOW_MS;
    rec->ccap = opts->cache_len ? opts->cache_len : DEFAULT_CACHE;
    rec->order = co_xcalloc(rec->ccap, sizeof(seen *));
    pthread_mutex_init(&rec->stats_lock, NULL);
    co_sender_options so = {"event recorder", opts->queue_len, deliver, drop, rec};
    int rc = co_sender_new(&rec->sender, &so);
    if (rc < 0) {
        pthread_mutex_destroy(&rec->stats_lock);
        free(rec->order);
        free(rec->component);
        free(rec->instance);
        free(rec);
        return rc;
    }
    *out = rec;
    return 0;
}

int co_kube_recorder_flush(co_kube_recorder *rec, long timeout_ms)
{
    return co_sender_flush(rec->sender, timeout_ms);
}

void co_kube_recorder_free(co_kube_recorder *rec)
{
    if (!rec) {
        return;
    }
    /* what is still queued after the grace period is dropped (and counted by drop()) */
    (void)co_sender_free(rec->sender, FREE_FLUSH_MS);
    for (size_t i = 0; i < rec->clen; i++) {
        seen_free(rec->order[(rec->chead + i) % rec->ccap]);
    }
    co_strmap_dispose(&rec->cache);
    free(rec->order);
    pthread_mutex_destroy(&rec->stats_lock);
    free(rec->component);
    free(rec->instance);
    free(rec);
}

static char *dup_or_null(const char *s)
{
    return s && s[0] ? co_xstrdup(s) : NULL;
}

static void enqueue(co_kube_recorder *rec,
                    const struct json_object *involved,
                    const char *const *annotations,
                    const char *type,
                    const char *reason,
                    const char *fmt,
                    va_list ap) CO_PRINTF(6, 0);

void co_kube_event(co_kube_recorder *rec,
                   const struct json_object *involved,
                   const char *type,
                   const char *reason,
                   const char *fmt,
                   ...)
{
    va_list ap;
    va_start(ap, fmt);
    enqueue(rec, involved, NULL, type, reason, fmt, ap);
    va_end(ap);
}

void co_kube_event_annotated(co_kube_recorder *rec,
                             const struct json_object *involved,
                             const char *const *annotations,
                             const char *type,
                             const char *reason,
                             const char *fmt,
                             ...)
{
    va_list ap;
    va_start(ap, fmt);
    enqueue(rec, involved, annotations, type, reason, fmt, ap);
    va_end(ap);
}

static void enqueue(co_kube_recorder *rec,
                    const struct json_object *involved,
                    const char *const *annotations,
                    const char *type,
                    const char *reason,
                    const char *fmt,
                    va_list ap)
{
    const char *name = co_json_meta_name(involved);
    const char *kind = co_json_str(involved, "kind", NULL);
    if (!name || !name[0] || !kind) {
        count(rec, &rec->stats.failed);
        return;
    }
    item *it = co_xcalloc(1, sizeof(*it));
    it->api_version = co_xstrdup(co_json_str(involved, "apiVersion", NULL));
    it->kind = co_xstrdup(kind);
    it->ns = dup_or_null(co_json_meta_namespace(involved));
    it->name = co_xstrdup(name);
    it->uid = dup_or_null(co_json_str(involved, "metadata", "uid", NULL));
    it->rv = dup_or_null(co_json_str(involved, "metadata", "resourceVersion", NULL));
    it->type = co_xstrdup(type ? type : "Normal");
    it->reason = co_xstrdup(reason ? reason : "");
    for (const char *const *p = annotations; p && p[0] && p[1]; p += 2) {
        if (!it->annotations) {
            it->annotations = json_object_new_object();
        }
        json_object_object_add(it->annotations, p[0], json_object_new_string(p[1]));
    }
    char *msg = co_xvasprintf(fmt, ap);
    if (strlen(msg) > MAX_MESSAGE) {
        memcpy(msg + MAX_MESSAGE - 3, "...", 4);
    }
    it->message = msg;

    if (!co_sender_push(rec->sender, it)) {
        drop(rec, it);
    }
}

void co_kube_recorder_stats_get(co_kube_recorder_stats *out, co_kube_recorder *rec)
{
    pthread_mutex_lock(&rec->stats_lock);
    *out = rec->stats;
    pthread_mutex_unlock(&rec->stats_lock);
}
