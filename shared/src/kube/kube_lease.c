/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leader election on a Lease. Every API call the elector makes is bounded: while leading, a
 * request that would outlive the renew deadline is cancelled, so a hung connection cannot let
 * a leader keep believing it leads after the others may take over. Expiry of another holder is
 * judged on the local monotonic clock from the moment the Lease was last seen to change.
 */
#include "co/json/json.h"
#include "co/kube/kube_lease.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/util/time.h"
#include "kube_int.h"

#define DEFAULT_LEASE_MS 15000
#define DEFAULT_RENEW_MS 10000
#define DEFAULT_RETRY_MS 2000
#define JITTER           1.2

struct co_kube_leader {
    co_kube_client *client;
    char *ns, *name, *identity;
    long lease_ms, renew_ms, retry_ms;
    co_kube_leader_options cb;

    pthread_t thread;
    int started;
    volatile int stop;

    pthread_mutex_t lock;
    int leader;
    int lost;
    int64_t last_renew_ms; /* monotonic time of the last successful acquire or renew */

    /* what was last seen of the Lease (elector thread, or the caller when not started) */
    char observed_rv[64];
    int64_t observed_ms;
    char holder[256];
    int64_t deadline_ms; /* requests are cancelled past this (0: no bound) */
    int abort_on_stop;   /* requests are cancelled by stop (while campaigning) */
};

static int stopping(co_kube_leader *le)
{
    return __atomic_load_n(&le->stop, __ATOMIC_RELAXED);
}

int co_kube_leader_new(co_kube_leader **out,
                       co_kube_client *client,
                       const co_kube_leader_options *opts)
{
    if (!opts || !opts->namespace || !opts->namespace[0] || !opts->name || !opts->name[0] ||
        !opts->identity || !opts->identity[0]) {
        return co_error_set(CO_EINVALID, "leader election: namespace, name and identity are "
                                         "required");
    }
    long lease = opts->lease_duration_ms ? opts->lease_duration_ms : DEFAULT_LEASE_MS;
    long renew = opts->renew_deadline_ms ? opts->renew_deadline_ms : DEFAULT_RENEW_MS;
    long retry = opts->retry_period_ms ? opts->retry_period_ms : DEFAULT_RETRY_MS;
    if (lease <= renew || renew <= (long)(retry * JITTER) || retry <= 0) {
        return co_error_set(CO_EINVALID,
                            "leader election: need lease duration (%ld ms) > renew deadline "
                            "(%ld ms) > %.1f x retry period (%ld ms)",
                            lease, renew, JITTER, retry);
    }
    if (strlen(opts->identity) >= sizeof(((co_kube_leader *)0)->holder)) {
        return co_error_set(CO_EINVALID, "leader election: identity is too long");
    }
    co_kube_leader *le = co_xcalloc(1, sizeof(*le));
    le->client = client;
    le->ns = co_xstrdup(opts->namespace);
    le->name = co_xstrdup(opts->name);
    le->identity = co_xstrdup(opts->identity);
    le->lease_ms = lease;
    le->renew_ms = renew;
    le->retry_ms = retry;
    le->cb = *opts;
    le->cb.namespace = le->cb.name = le->cb.identity = NULL;
    pthread_mutex_init(&le->lock, NULL);
    *out = le;
    return 0;
}

/* --- Lease requests ------------------------------------------------------------------------- */

static int past_deadline(void *payload)
{
    co_kube_leader *le = payload;
    return (le->deadline_ms > 0 && co_kube__now_ms() >= le->deadline_ms) ||
           (le->abort_on_stop && stopping(le));
}

/* One request about the Lease, cancelled at le->deadline_ms. */
static int lease_call(struct json_object **out,
                      co_kube_leader *le,
                      const char *method,
                      int with_name,
                      struct json_object *body)
{
    co_buf path = CO_BUF_INIT(CO_MAX_API_REQUEST);
    co_kube_response resp;
    co_kube_response_init(&resp, CO_MAX_API_RESPONSE);
    const char *text = NULL;
    size_t len = 0;
    int rc;
    co_kube_ref ref = {"coordination.k8s.io/v1", "Lease", le->ns, with_name ? le->name : NULL};
    if ((rc = co_kube__path(&path, le->client, &ref, NULL, 1)) < 0) {
        goto done;
    }
    if (body) {
        text = json_object_to_json_string_length(
            body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    }
    co_kube_call call = {
        .method = method,
        .path = co_buf_cstr(&path),
        .content_type = body ? "application/json" : NULL,
        .body = text,
        .body_len = len,
        .idempotent = strcmp(method, "POST") != 0,
        .cancelled = past_deadline,
        .cancel_payload = le,
    };
    if ((rc = co_kube__do(le->client, &call, &resp)) < 0) {
        goto done;
    }
    if (out) {
        rc = co_kube__parse_json(out, co_buf_cstr(&resp.body), resp.body.len);
    }
done:
    co_kube_response_dispose(&resp);
    co_buf_dispose(&path);
    return rc;
}

static void set_str(struct json_object *o, const char *key, const char *value)
{
    json_object_object_add(o, key, json_object_new_string(value));
}

/* Records what the Lease looks like now; reports a new holder. */
static void observe(co_kube_leader *le, struct json_object *lease)
{
    const char *rv = co_json_str(lease, "metadata", "resourceVersion", NULL);
    if (rv && strcmp(rv, le->observed_rv) != 0) {
        snprintf(le->observed_rv, sizeof(le->observed_rv), "%s", rv);
        le->observed_ms = co_kube__now_ms();
    }
    const char *holder = co_json_str(lease, "spec", "holderIdentity", NULL);
    if (!holder) {
        holder = "";
    }
    if (strcmp(holder, le->holder) != 0) {
        snprintf(le->holder, sizeof(le->holder), "%s", holder);
        if (holder[0] && le->cb.on_new_leader) {
            le->cb.on_new_leader(holder, le->cb.payload);
        }
    }
}

static struct json_object *new_lease(co_kube_leader *le)
{
    struct json_object *lease = json_object_new_object();
    set_str(lease, "apiVersion", "coordination.k8s.io/v1");
    set_str(lease, "kind", "Lease");
    struct json_object *meta = json_object_new_object();
    set_str(meta, "name", le->name);
    set_str(meta, "namespace", le->ns);
    json_object_object_add(lease, "metadata", meta);
    json_object_object_add(lease, "spec", json_object_new_object());
    return lease;
}

/* Writes this candidate as holder into @p spec. */
static void fill_spec(co_kube_leader *le, struct json_object *spec, int new_holder)
{
    char now[CO_TIME_STR_MAX];
    co_time_format_micro(now, co_time_now());
    set_str(spec, "holderIdentity", le->identity);
    json_object_object_add(spec, "leaseDurationSeconds",
                           json_object_new_int((int)((le->lease_ms + 999) / 1000)));
    set_str(spec, "renewTime", now);
    if (new_holder) {
        set_str(spec, "acquireTime", now);
        struct json_object *t = NULL;
        int transitions = json_object_object_get_ex(spec, "leaseTransitions", &t)
                              ? json_object_get_int(t) + 1
                              : 0;
        json_object_object_add(spec, "leaseTransitions", json_object_new_int(transitions));
    }
}

int co_kube_leader_try(int *acquired, co_kube_leader *le)
{
    struct json_object *lease = NULL, *stored = NULL;
    int rc = lease_call(&lease, le, "GET", 1, NULL);
    *acquired = 0;
    if (rc == CO_ENOTFOUND) {
        co_error_clear();
        struct json_object *fresh = new_lease(le);
        fill_spec(le, co_kube__obj(fresh, "spec"), 1);
        rc = lease_call(&stored, le, "POST", 0, fresh);
        json_object_put(fresh);
        if (rc == CO_EEXISTS || rc == CO_ECONFLICT) {
            co_error_clear();
            return 0; /* another candidate created it first */
        }
        if (rc < 0) {
            return rc;
        }
        observe(le, stored);
        json_object_put(stored);
        *acquired = 1;
        return 0;
    }
    if (rc < 0) {
        return rc;
    }
    observe(le, lease);
    struct json_object *spec = co_kube__obj(lease, "spec");
    if (!spec) {
        spec = json_object_new_object();
        json_object_object_add(lease, "spec", spec);
    }
    const char *holder = co_json_str(spec, "holderIdentity", NULL);
    int mine = holder && strcmp(holder, le->identity) == 0;
    if (holder && holder[0] && !mine) {
        struct json_object *d = NULL;
        int64_t dur_ms = json_object_object_get_ex(spec, "leaseDurationSeconds", &d)
                             ? (int64_t)json_object_get_int(d) * 1000
                             : le->lease_ms;
        if (le->observed_ms + dur_ms > co_kube__now_ms()) {
            json_object_put(lease);
            return 0; /* held by another candidate that is still renewing */
        }
    }
    fill_spec(le, spec, !mine);
    rc = lease_call(&stored, le, "PUT", 1, lease);
    json_object_put(lease);
    if (rc == CO_ECONFLICT || rc == CO_ENOTFOUND) {
        co_error_clear();
        return 0; /* lost the race for this version */
    }
    if (rc < 0) {
        return rc;
    }
    observe(le, stored);
    json_object_put(stored);
    *acquired = 1;
    return 0;
}

int co_kube_leader_release(co_kube_leader *le)
{
    struct json_object *lease = NULL, *stored = NULL;
    int64_t saved = le->deadline_ms;
    le->deadline_ms = co_kube__now_ms() + le->renew_ms;
    int rc = lease_call(&lease, le, "GET", 1, NULL);
    if (rc == CO_ENOTFOUND) {
        co_error_clear();
        rc = 0;
        goto done;
    }
    if (rc < 0) {
        goto done;
    }
    struct json_object *spec = co_kube__obj(lease, "spec");
    const char *holder = co_json_str(spec, "holderIdentity", NULL);
    if (!holder || strcmp(holder, le->identity) != 0) {
        goto done; /* not ours (any more) */
    }
    char now[CO_TIME_STR_MAX];
    co_time_format_micro(now, co_time_now());
    json_object_object_del(spec, "holderIdentity");
    json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(1));
    set_str(spec, "renewTime", now);
    set_str(spec, "acquireTime", now);
    rc = lease_call(&stored, le, "PUT", 1, lease);
    if (rc == 0) {
        observe(le, stored);
    }
done:
    le->deadline_ms = saved;
    json_object_put(lease);
    json_object_put(stored);
    return rc;
}

/* --- the elector -------------------------------------------------------------------------- */

/* On the way out a failed release only delays the next leader by one lease duration. */
static void release_best_effort(co_kube_leader *le)
{
    if (co_kube_leader_release(le) < 0) {
        co_error_clear();
    }
}

static void set_leader(co_kube_leader *le, int leader, int lost)
{
    pthread_mutex_lock(&le->lock);
    le->leader = leader;
    if (leader) {
        le->last_renew_ms = co_kube__now_ms();
    }
    if (lost) {
        le->lost = 1;
    }
    pthread_mutex_unlock(&le->lock);
}

static void *elector(void *arg)
{
    co_kube_leader *le = arg;
    int acquired = 0;
    /* campaign */
    le->abort_on_stop = 1;
    while (!stopping(le)) {
        le->deadline_ms = co_kube__now_ms() + le->renew_ms;
        co_error_clear();
        if (co_kube_leader_try(&acquired, le) == 0 && acquired) {
            break;
        }
        long wait = le->retry_ms + (long)(le->retry_ms * (JITTER - 1.0) * co_kube__random());
        co_kube__sleep_ms(wait, &le->stop);
    }
    le->abort_on_stop = 0;
    if (stopping(le)) {
        if (acquired) {
            release_best_effort(le);
        }
        return NULL;
    }
    set_leader(le, 1, 0);
    if (le->cb.on_started_leading) {
        le->cb.on_started_leading(le->cb.payload);
    }
    /* lead: renew every retry period; give up when the renew deadline passes */
    int lost = 0;
    int64_t last_ok = co_kube__now_ms();
    while (!stopping(le)) {
        co_kube__sleep_ms(le->retry_ms, &le->stop);
        if (stopping(le)) {
            break;
        }
        le->deadline_ms = last_ok + le->renew_ms;
        co_error_clear();
        int rc = co_kube_leader_try(&acquired, le);
        int64_t now = co_kube__now_ms();
        if (rc == 0 && acquired && now < last_ok + le->renew_ms) {
            last_ok = now;
            set_leader(le, 1, 0);
        } else if (now >= last_ok + le->renew_ms || (rc == 0 && !acquired)) {
            lost = 1; /* deadline passed, or someone else holds it now */
            break;
        }
    }
    le->deadline_ms = 0;
    if (lost) {
        set_leader(le, 0, 1);
    } else {
        release_best_effort(le);
        set_leader(le, 0, 0);
    }
    if (le->cb.on_stopped_leading) {
        le->cb.on_stopped_leading(le->cb.payload);
    }
    return NULL;
}

int co_kube_leader_start(co_kube_leader *le)
{
    if (le->started) {
        return co_error_set(CO_EINVALID, "leader election: already started");
    }
    __atomic_store_n(&le->stop, 0, __ATOMIC_RELAXED);
    if (pthread_create(&le->thread, NULL, elector, le) != 0) {
        return co_error_set_os(CO_ERROR, "leader election: cannot start a thread");
    }
    le->started = 1;
    return 0;
}

bool co_kube_leader_is_leader(co_kube_leader *le)
{
    pthread_mutex_lock(&le->lock);
    int yes = le->leader && co_kube__now_ms() < le->last_renew_ms + le->renew_ms;
    pthread_mutex_unlock(&le->lock);
    return yes;
}

bool co_kube_leader_lost(co_kube_leader *le)
{
    pthread_mutex_lock(&le->lock);
    int lost = le->lost;
    pthread_mutex_unlock(&le->lock);
    return lost;
}

const char *co_kube_leader_holder(co_kube_leader *le)
{
    return le->holder;
}

void co_kube_leader_stop(co_kube_leader *le)
{
    if (!le->started) {
        return;
    }
    __atomic_store_n(&le->stop, 1, __ATOMIC_RELAXED);
    pthread_join(le->thread, NULL);
    le->started = 0;
}

void co_kube_leader_free(co_kube_leader *le)
{
    if (!le) {
        return;
    }
    co_kube_leader_stop(le);
    pthread_mutex_destroy(&le->lock);
    free(le->ns);
    free(le->name);
    free(le->identity);
    free(le);
}
