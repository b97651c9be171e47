/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target client cache (see ctl_targets.h): a mutex-guarded list of entries with a
 * reference count and a last-used time; expiry frees only entries nobody holds.
 */
#include "controller/ctl_targets.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/kube/kube_config.h"
#include "co/util/time.h"
#include "co/json/yaml.h"

typedef struct entry {
    char *key;
    co_kube_client *client;
    co_kube_config *cfg;   /* NULL for impersonating clients of the local cluster */
    co_kube_recorder *rec; /* events through this client, created on first use */
    int refs;
    int64_t last_used;
    struct entry *next;
} entry;

struct ctl_targets {
    pthread_mutex_t mu;
    co_kube_client *local;
    int64_t ttl_ns;
    entry *head;
    size_t n;
    unsigned long created;
    int64_t (*now)(void);
};

ctl_targets *ctl_targets_new(co_kube_client *local, int64_t ttl_ns)
{
    ctl_targets *t = co_xcalloc(1, sizeof(*t));
    pthread_mutex_init(&t->mu, NULL);
    t->local = local;
    t->ttl_ns = ttl_ns;
    t->now = co_time_monotonic;
    return t;
}

void ctl_targets_set_clock(ctl_targets *t, int64_t (*now)(void))
{
    t->now = now ? now : co_time_monotonic;
}

static void entry_free(entry *e)
{
    co_kube_recorder_free(e->rec);
    co_kube_client_free(e->client);
    co_kube_config_free(e->cfg);
    free(e->key);
    free(e);
}

void ctl_targets_free(ctl_targets *t)
{
    if (!t) {
        return;
    }
    entry *e = t->head;
    while (e) {
        entry *next = e->next;
        entry_free(e);
        e = next;
    }
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static void sweep_locked(ctl_targets *t, int64_t now)
{
    entry **pp = &t->head;
    while (*pp) {
        entry *e = *pp;
        if (e->refs == 0 && now - e->last_used > t->ttl_ns) {
            *pp = e->next;
            entry_free(e);
            t->n--;
        } else {
            pp = &e->next;
        }
    }
}

void ctl_targets_sweep(ctl_targets *t)
{
    pthread_mutex_lock(&t->mu);
    sweep_locked(t, t->now());
    pthread_mutex_unlock(&t->mu);
}

static int build(entry *e,
                 ctl_targets *t,
                 const char *kubeconfig,
                 size_t len,
                 const char *user,
                 unsigned flags)
{
    if (!kubeconfig) {
        return co_kube_client_new_impersonating(&e->client, t->local, user, NULL, 0);
    }
    struct json_object *doc = NULL;
    int rc = co_yaml_parse(&doc, kubeconfig, len, 0);
    if (rc < 0) {
        return co_error_wrap("kubeconfig");
    }
    if (!doc || !json_object_is_type(doc, json_type_object)) {
        json_object_put(doc);
        return co_error_set(CO_EINVALID, "kubeconfig: not a mapping");
    }
    rc = co_kube_config_from_untrusted_json(
        &e->cfg, doc, NULL, (flags & CTL_TARGET_ALLOW_HTTP) ? CO_KUBE_CONFIG_ALLOW_HTTP : 0);
    json_object_put(doc);
    if (rc < 0) {
        return co_error_wrap("kubeconfig");
    }
    co_kube_client_options o = CO_KUBE_CLIENT_OPTIONS_INIT;
    o.impersonate_user = user;
    rc = co_kube_client_new(&e->client, e->cfg, &o);
    if (rc < 0) {
        return co_error_wrap("kubeconfig");
    }
    return 0;
}

int ctl_targets_acquire(ctl_targets *t,
                        const char *kubeconfig,
                        size_t kubeconfig_len,
                        const char *user,
                        unsigned flags,
                        co_kube_client **out,
                        void **hold_out)
{
    if (!kubeconfig && (!user || !*user)) {
        *out = t->local;
        *hold_out = NULL;
        return 0;
    }
    char hex[CO_SHA256_HEX_LEN + 1] = "local";
    if (kubeconfig) {
        co_sha256_hex(hex, kubeconfig, kubeconfig_len);
    }
    /* the flags are part of the key: a policy that stops granting http:// is not masked by a
     * client built while it did */
    char *key = co_xasprintf("%s|%s|%u", hex, user ? user : "", kubeconfig ? flags : 0u);
    int64_t now = t->now();
    pthread_mutex_lock(&t->mu);
    sweep_locked(t, now);
    entry *e = t->head;
    while (e && strcmp(e->key, key) != 0) {
        e = e->next;
    }
    if (e) {
        e->refs++;
        e->last_used = now;
        pthread_mutex_unlock(&t->mu);
        free(key);
        *out = e->client;
        *hold_out = e;
        return 0;
    }
    pthread_mutex_unlock(&t->mu);

    /* built outside the lock (parsing, TLS set-up); a racing builder of the same key just
     * adds a duplicate that expires like any other */
    entry *ne = co_xcalloc(1, sizeof(*ne));
    ne->key = key;
    int rc = build(ne, t, kubeconfig, kubeconfig_len, user && *user ? user : NULL, flags);
    if (rc < 0) {
        entry_free(ne);
        return rc;
    }
    ne->refs = 1;
    ne->last_used = now;
    pthread_mutex_lock(&t->mu);
    ne->next = t->head;
    t->head = ne;
    t->n++;
    t->created++;
    pthread_mutex_unlock(&t->mu);
    *out = ne->client;
    *hold_out = ne;
    return 0;
}

void ctl_targets_release(ctl_targets *t, void *hold)
{
    if (!hold) {
        return;
    }
    entry *e = hold;
    int64_t now = t->now();
    pthread_mutex_lock(&t->mu);
    e->refs--;
    e->last_used = now;
    sweep_locked(t, now);
    pthread_mutex_unlock(&t->mu);
}

co_kube_recorder *
ctl_targets_recorder(ctl_targets *t, void *hold, const co_kube_recorder_options *ro)
{
    if (!hold) {
        return NULL;
    }
    entry *e = hold;
    pthread_mutex_lock(&t->mu);
    if (!e->rec && co_kube_recorder_new(&e->rec, e->client, ro) < 0) {
        e->rec = NULL;
    }
    co_kube_recorder *rec = e->rec;
    pthread_mutex_unlock(&t->mu);
    return rec;
}

size_t ctl_targets_active(ctl_targets *t)
{
    pthread_mutex_lock(&t->mu);
    size_t n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}

unsigned long ctl_targets_created(ctl_targets *t)
{
    pthread_mutex_lock(&t->mu);
    unsigned long n = t->created;
    pthread_mutex_unlock(&t->mu);
    return n;
}
