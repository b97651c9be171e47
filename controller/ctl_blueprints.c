/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Blueprint controller (docs/behaviour.md, "The Blueprint controller"): one thread, active
 * while the manager leads, that keeps the finalizer on every live Blueprint and removes the
 * BlueprintVersions no Component refers to any more. Its queue holds Blueprint keys with the time
 * each is due; the Blueprint and BlueprintVersion informers (ctl_informers.c) feed it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "co/api/blueprint.h"
#include "co/json/json.h"
#include "co/kube/kube_event.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "co/util/strmap.h"
#include "co/util/thread.h"
#include "co/util/time.h"
#include "controller/ctl_manager_int.h"

#define BP_FINALIZER     "component-operator.cs.sap.com"
#define BP_AGAIN_SOON_NS (1LL * CO_SECOND)
#define BP_BLOCKED_NS    (10LL * CO_SECOND)
#define BP_IDLE_NS       (600LL * CO_SECOND)
#define BP_WAIT_NS       (1LL * CO_SECOND) /* a follower looks again this often */

typedef struct bp_item {
    char *ns;
    char *name;
    int64_t due; /* monotonic ns */
} bp_item;

typedef struct ctl_blueprints ctl_blueprints;

struct ctl_blueprints {
    ctl_manager *m;
    pthread_t thread;
    bool running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    bp_item *items;
    size_t n, cap;
};

static int64_t now_ns(void)
{
    return co_time_monotonic();
}

/* Queues @p ns/@p name due in @p delay_ns; a key already queued keeps the earlier time (mu). */
static void put_locked(ctl_blueprints *b, const char *ns, const char *name, int64_t delay_ns)
{
    int64_t due = now_ns() + delay_ns;
    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->items[i].ns, ns) == 0 && strcmp(b->items[i].name, name) == 0) {
            if (due < b->items[i].due) {
                b->items[i].due = due;
            }
            return;
        }
    }
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->items = co_xrealloc(b->items, b->cap * sizeof(*b->items));
    }
    b->items[b->n++] = (bp_item){co_xstrdup(ns), co_xstrdup(name), due};
}

void ctl_manager__blueprint_enqueue(ctl_manager *m,
                                    const char *ns,
                                    const char *name,
                                    int64_t delay_ns)
{
    ctl_blueprints *b = m->blueprints;
    if (!b || !name) {
        return;
    }
    pthread_mutex_lock(&b->mu);
    put_locked(b, ns ? ns : "", name, delay_ns);
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

void ctl_manager__blueprint_changed(ctl_manager *m, const struct json_object *bp)
{
    ctl_manager__blueprint_enqueue(m, co_json_meta_namespace(bp), co_json_meta_name(bp), 0);
}

/* ---- one Blueprint ------------------------------------------------------------------------ */

static bool has_finalizer(const json_object *obj)
{
    json_object *f = co_json_get(obj, "metadata", "finalizers", NULL);
    size_t n = f && json_object_is_type(f, json_type_array) ? json_object_array_length(f) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(f, i));
        if (s && strcmp(s, BP_FINALIZER) == 0) {
            return true;
        }
    }
    return false;
}

/* Adds (@p add) or removes the finalizer with a merge patch bound to the resourceVersion read. */
static int set_finalizer(ctl_manager *m, const json_object *obj, bool add)
{
    json_object *f = co_json_get(obj, "metadata", "finalizers", NULL);
    size_t n = f && json_object_is_type(f, json_type_array) ? json_object_array_length(f) : 0;
    json_object *list = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(f, i));
        if (s && strcmp(s, BP_FINALIZER) != 0) {
            json_object_array_add(list, json_object_new_string(s));
        }
    }
    if (add) {
        json_object_array_add(list, json_object_new_string(BP_FINALIZER));
    }
    json_object *patch = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object_object_add(meta, "finalizers", list);
    const char *rv = co_json_str(co_json_get(obj, "metadata", NULL), "resourceVersion", NULL);
    if (rv) {
        json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
    }
    json_object_object_add(patch, "metadata", meta);
    co_kube_ref ref = {CO_BLUEPRINT_API_VERSION, CO_BLUEPRINT_KIND, co_json_meta_namespace(obj),
                       co_json_meta_name(obj)};
    co_kube_write_options wo = {0};
    wo.field_manager = CTL_RECONCILER_NAME;
    int rc = co_kube_patch(NULL, m->client, &ref, CO_KUBE_PATCH_MERGE, patch, &wo);
    json_object_put(patch);
    return rc == CO_ENOTFOUND ? 0 : rc;
}

/* The digests of the versions of @p ns/@p name that a watched Component refers to, and whether
 * any Component names the Blueprint at all. */
static co_strmap referenced(ctl_manager *m, const char *ns, const char *name, bool *named)
{
    co_strmap refs = CO_STRMAP_INIT;
    char *key = co_xasprintf("%s/%s/%s", CO_BLUEPRINT_KIND, ns, name);
    *named = false;
    for (size_t i = 0; i < m->ncomp_inf; i++) {
        json_object *list = NULL;
        if (co_kube_informer_by_index(&list, m->comp_inf[i], "source", key) < 0) {
            co_error_clear();
            continue;
        }
        size_t n = json_object_array_length(list);
        for (size_t j = 0; j < n; j++) {
            json_object *c = json_object_array_get_idx(list, j);
            *named = true;
            const char *d = co_json_str(co_json_get(c, "status", "sourceRef", "artifact", NULL),
                                        "digest", NULL);
            if (d && *d) {
                (void)co_strmap_put(&refs, d, (void *)1);
            }
        }
        json_object_put(list);
    }
    free(key);
    return refs;
}

/* Whether @p v was created less than @p grace_ns ago (or its age is unknown). */
static bool young(const json_object *v, int64_t grace_ns)
{
    const char *ts = co_json_str(co_json_get(v, "metadata", NULL), "creationTimestamp", NULL);
    int64_t created = 0;
    if (!ts || co_time_parse(&created, ts) < 0) {
        co_error_clear();
        return true;
    }
    return co_time_now() - created < grace_ns;
}

/* Reconciles one Blueprint and returns when it is due again (negative: not at all). */
static int64_t reconcile_one(ctl_manager *m, const char *ns, const char *name)
{
    co_kube_ref ref = {CO_BLUEPRINT_API_VERSION, CO_BLUEPRINT_KIND, ns, name};
    json_object *bp = NULL;
    int rc = co_kube_get(&bp, m->client, &ref, NULL);
    if (rc == CO_ENOTFOUND) {
        co_error_clear();
        return -1;
    }
    if (rc < 0) {
        co_log(CO_LOG_WARN, "reading a Blueprint failed", "namespace", ns, "name", name, "error",
               co_error_last(), NULL);
        co_error_clear();
        return BP_BLOCKED_NS;
    }
    bool deleting = co_json_get(bp, "metadata", "deletionTimestamp", NULL) != NULL;
    int64_t again = BP_IDLE_NS;
    if (!deleting && !has_finalizer(bp) && set_finalizer(m, bp, true) < 0) {
        co_log(CO_LOG_WARN, "adding the Blueprint finalizer failed", "namespace", ns, "name", name,
               "error", co_error_last(), NULL);
        co_error_clear();
        json_object_put(bp);
        return BP_AGAIN_SOON_NS;
    }
    char current[CO_SHA256_HEX_LEN + 1] = "";
    if (co_blueprint_digest(current, co_json_get(bp, "spec", "files", NULL)) < 0) {
        co_error_clear();
        current[0] = '\0';
    }
    bool named = false;
    co_strmap refs = referenced(m, ns, name, &named);

    char *label = co_blueprint_label_value(name);
    char *sel = co_xasprintf("%s=%s", CO_BLUEPRINT_NAME_LABEL, label);
    free(label);
    co_kube_list_options lo = {0};
    lo.label_selector = sel;
    co_kube_ref vref = {CO_BLUEPRINT_API_VERSION, CO_BLUEPRINT_VERSION_KIND, ns, NULL};
    json_object *list = NULL;
    rc = co_kube_list_all(&list, m->client, &vref, &lo);
    free(sel);
    if (rc < 0) {
        co_log(CO_LOG_WARN, "listing BlueprintVersions failed", "namespace", ns, "blueprint", name,
               "error", co_error_last(), NULL);
        co_error_clear();
        co_strmap_dispose(&refs);
        json_object_put(bp);
        return BP_BLOCKED_NS;
    }
    json_object *items = co_json_get(list, "items", NULL);
    size_t n = items ? json_object_array_length(items) : 0;
    size_t left = 0;
    bool deleted = false;
    bool kept_young = false;
    for (size_t i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(items, i);
        json_object *spec = co_json_get(v, "spec", NULL);
        const char *owner = co_json_str(spec, "blueprint", NULL);
        const char *digest = co_json_str(spec, "digest", NULL);
        if (!owner || strcmp(owner, name) != 0) {
            continue; /* a hashed label shared by another name */
        }
        /* kept: referenced by a Component; the current content while a Component names the
         * Blueprint (it may have applied it without writing its status yet); or just made */
        if (!digest || co_strmap_get(&refs, digest) || (named && strcmp(digest, current) == 0)) {
            left++;
            continue;
        }
        if (young(v, m->blueprint_grace_ns)) {
            kept_young = true;
            left++;
            continue;
        }
        co_kube_ref dref = {CO_BLUEPRINT_API_VERSION, CO_BLUEPRINT_VERSION_KIND, ns,
                            co_json_meta_name(v)};
        co_kube_delete_options dopts = CO_KUBE_DELETE_OPTIONS_INIT;
        rc = co_kube_delete(NULL, m->client, &dref, &dopts);
        if (rc < 0 && rc != CO_ENOTFOUND) {
            co_log(CO_LOG_WARN, "deleting a BlueprintVersion failed", "namespace", ns, "name",
                   dref.name, "error", co_error_last(), NULL);
            left++;
        } else {
            co_log(CO_LOG_INFO, "deleted an unreferenced BlueprintVersion", "namespace", ns, "name",
                   dref.name, NULL);
            deleted = true;
        }
        co_error_clear();
    }
    if (deleted) {
        again = BP_AGAIN_SOON_NS;
    }
    if (deleting) {
        if (left > 0) {
            co_kube_event(m->recorder, bp, "Normal", "DeletionBlocked",
                          "Blueprint cannot be deleted because there are still %zu "
                          "BlueprintVersions referencing it",
                          left);
            again = BP_BLOCKED_NS;
        } else if (has_finalizer(bp) && set_finalizer(m, bp, false) < 0) {
            co_log(CO_LOG_WARN, "removing the Blueprint finalizer failed", "namespace", ns, "name",
                   name, "error", co_error_last(), NULL);
            co_error_clear();
            again = BP_AGAIN_SOON_NS;
        } else if (!deleted) {
            again = -1;
        }
    } else if (kept_young && !deleted) {
        /* a version kept only for its youth is looked at again once it has grown up */
        again = m->blueprint_grace_ns < BP_IDLE_NS ? m->blueprint_grace_ns + BP_AGAIN_SOON_NS
                                                   : BP_IDLE_NS;
    }
    json_object_put(list);
    co_strmap_dispose(&refs);
    json_object_put(bp);
    return again;
}

/* ---- the thread --------------------------------------------------------------------------- */

static void *bp_main(void *arg)
{
    ctl_blueprints *b = arg;
    pthread_mutex_lock(&b->mu);
    while (!b->stop) {
        int64_t now = now_ns();
        size_t at = b->n;
        int64_t next = now + BP_IDLE_NS;
        for (size_t i = 0; i < b->n; i++) {
            if (b->items[i].due <= now && at == b->n) {
                at = i;
            }
            if (b->items[i].due < next) {
                next = b->items[i].due;
            }
        }
        if (at == b->n) {
            struct timespec ts = co_monotonic_deadline_ns(next - now);
            pthread_cond_timedwait(&b->cv, &b->mu, &ts);
            continue;
        }
        bp_item it = b->items[at];
        b->items[at] = b->items[--b->n];
        pthread_mutex_unlock(&b->mu);
        int64_t again = BP_WAIT_NS;
        if (atomic_load(&b->m->leading)) {
            again = reconcile_one(b->m, it.ns, it.name);
        }
        pthread_mutex_lock(&b->mu);
        if (again >= 0 && !b->stop) {
            put_locked(b, it.ns, it.name, again);
        }
        free(it.ns);
        free(it.name);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int ctl_manager__start_blueprints(ctl_manager *m)
{
    ctl_blueprints *b = co_xcalloc(1, sizeof(*b));
    b->m = m;
    pthread_mutex_init(&b->mu, NULL);
    co_cond_init_monotonic(&b->cv);
    if (pthread_create(&b->thread, NULL, bp_main, b) != 0) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        free(b);
        return co_error_set(CO_ERROR, "cannot start the Blueprint controller");
    }
    b->running = true;
    m->blueprints = b;
    return 0;
}

void ctl_manager__stop_blueprints(ctl_manager *m)
{
    ctl_blueprints *b = m->blueprints;
    if (!b || !b->running) {
        return;
    }
    pthread_mutex_lock(&b->mu);
    b->stop = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    b->running = false;
}

void ctl_manager__free_blueprints(ctl_manager *m)
{
    ctl_blueprints *b = m->blueprints;
    if (!b) {
        return;
    }
    ctl_manager__stop_blueprints(m);
    for (size_t i = 0; i < b->n; i++) {
        free(b->items[i].ns);
        free(b->items[i].name);
    }
    free(b->items);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
    m->blueprints = NULL;
}
