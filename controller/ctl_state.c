/* SPDX-License-Identifier: Apache-2.0 */
/*
 * State names, the Ready condition, jitter and the internal backoff ramp (see ctl_state.h).
 * The backoff table is a small mutex-guarded hash table of per-key counters; entries are
 * removed when forgotten, so it holds at most one entry per Component that is busy.
 */
#include "controller/ctl_state.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/duration.h"
#include "co/util/hash.h"
#include "co/json/json.h"
#include "co/util/time.h"

static struct json_object *ready_condition(const struct json_object *status)
{
    struct json_object *conds = NULL;
    if (!status || !json_object_object_get_ex(status, "conditions", &conds) ||
        !json_object_is_type(conds, json_type_array)) {
        return NULL;
    }
    size_t n = json_object_array_length(conds);
    for (size_t i = 0; i < n; i++) {
        struct json_object *c = json_object_array_get_idx(conds, i);
        const char *type = co_json_str(c, "type", NULL);
        if (type && strcmp(type, "Ready") == 0) {
            return c;
        }
    }
    return NULL;
}

static void condition_dispose(co_condition *c)
{
    free(c->type);
    free(c->status);
    free(c->last_transition_time);
    free(c->reason);
    free(c->message);
}

/* The lastTransitionTime of a condition becoming @p cstatus: kept while the value stays. */
static char *transition_time(const co_condition *old, const char *cstatus, int64_t now_ns)
{
    if (old && old->status && strcmp(old->status, cstatus) == 0 && old->last_transition_time &&
        old->last_transition_time[0]) {
        return co_xstrdup(old->last_transition_time);
    }
    char now[CO_TIME_STR_MAX];
    co_time_format(now, now_ns);
    return co_xstrdup(now);
}

const co_condition *ctl_condition_find(const co_component_status *status, const char *type)
{
    for (size_t i = 0; i < status->n_conditions; i++) {
        const co_condition *c = &status->conditions[i];
        if (c->type && strcmp(c->type, type) == 0) {
            return c;
        }
    }
    return NULL;
}

void ctl_state_set(co_component_status *status,
                   const char *state,
                   const char *reason,
                   const char *message,
                   int64_t now_ns)
{
    const char *cstatus = "Unknown";
    if (strcmp(state, CTL_STATE_READY) == 0 || strcmp(state, CTL_STATE_WARNING) == 0 ||
        strcmp(state, CTL_STATE_UNMANAGED) == 0) {
        cstatus = "True";
    } else if (strcmp(state, CTL_STATE_ERROR) == 0) {
        cstatus = "False";
    }
    const co_condition *old = ctl_condition_find(status, "Ready");
    co_condition cond = {co_xstrdup("Ready"), co_xstrdup(cstatus),
                         transition_time(old, cstatus, now_ns), co_xstrdup(reason ? reason : ""),
                         co_xstrdup(message ? message : "")};
    /* Ready first, then the Degraded and Drifted conditions when there are; the rest is
     * dropped */
    co_condition *conds = co_xcalloc(status->n_conditions + 1, sizeof(co_condition));
    size_t n = 0;
    bool degraded = false, drifted = false;
    conds[n++] = cond;
    for (size_t i = 0; i < status->n_conditions; i++) {
        co_condition *c = &status->conditions[i];
        if (!degraded && c->type && strcmp(c->type, CTL_CONDITION_DEGRADED) == 0) {
            degraded = true;
            conds[n++] = *c;
        } else if (!drifted && c->type && strcmp(c->type, CTL_CONDITION_DRIFTED) == 0) {
            drifted = true;
            conds[n++] = *c;
        } else {
            condition_dispose(c);
        }
    }
    free(status->conditions);
    status->conditions = conds;
    status->n_conditions = n;
    char *st = co_xstrdup(state);
    free(status->state);
    status->state = st;
}

void ctl_condition_put(co_component_status *status,
                       const char *type,
                       const char *cstatus,
                       const char *reason,
                       const char *message,
                       int64_t now_ns)
{
    co_condition *slot = (co_condition *)ctl_condition_find(status, type);
    co_condition cond = {co_xstrdup(type), co_xstrdup(cstatus),
                         transition_time(slot, cstatus, now_ns), co_xstrdup(reason ? reason : ""),
                         co_xstrdup(message ? message : "")};
    if (!slot) {
        status->conditions =
            co_xrealloc(status->conditions, (status->n_conditions + 1) * sizeof(co_condition));
        slot = &status->conditions[status->n_conditions++];
    } else {
        condition_dispose(slot);
    }
    *slot = cond;
}

void ctl_condition_remove(co_component_status *status, const char *type)
{
    size_t k = 0;
    for (size_t i = 0; i < status->n_conditions; i++) {
        co_condition *c = &status->conditions[i];
        if (c->type && strcmp(c->type, type) == 0) {
            condition_dispose(c);
        } else {
            status->conditions[k++] = *c;
        }
    }
    status->n_conditions = k;
}

/* The framework's order (docs/lifecycle.md, "One reason, chosen by priority"). */
static const struct {
    const char *reason;
    ctl_reason_tier tier;
} TIERS[] = {
    {CTL_REASON_ERROR, CTL_TIER_FAILURE},
    {CTL_REASON_TIMEOUT, CTL_TIER_FAILURE},
    {CTL_REASON_RETRYING, CTL_TIER_FAILURE},
    {CTL_REASON_DELETION_RETRYING, CTL_TIER_FAILURE},
    {CTL_REASON_DOWN, CTL_TIER_FAILURE},
    {CTL_REASON_DEGRADED, CTL_TIER_FAILURE},
    {CTL_REASON_DEPENDENCY_CYCLE, CTL_TIER_FAILURE},
    {CTL_REASON_POLICY_VIOLATION, CTL_TIER_FAILURE},
    {CTL_REASON_INVALID_SPEC, CTL_TIER_FAILURE},
    {CTL_REASON_SUSPENDED, CTL_TIER_SUSPENSION},
    {CTL_REASON_PENDING_SUSPENSION, CTL_TIER_SUSPENSION},
    {CTL_REASON_SUSPENDING, CTL_TIER_SUSPENSION},
    {CTL_REASON_DISABLED, CTL_TIER_DISABLED},
    {CTL_REASON_UNMANAGED, CTL_TIER_DISABLED},
    {CTL_REASON_BLOCKED, CTL_TIER_PRECONDITION},
    {CTL_REASON_PREREQUISITE_NOT_MET, CTL_TIER_PRECONDITION},
    {CTL_REASON_POLICY_WARNING, CTL_TIER_ATTENTION},
    {CTL_REASON_AUXILIARY_UNREADY, CTL_TIER_ATTENTION},
    {CTL_REASON_READY, CTL_TIER_READY},
};

ctl_reason_tier ctl_reason_priority(const char *reason)
{
    for (size_t i = 0; reason && i < CO_ARRAY_SIZE(TIERS); i++) {
        if (strcmp(TIERS[i].reason, reason) == 0) {
            return TIERS[i].tier;
        }
    }
    return CTL_TIER_PROGRESS;
}

size_t ctl_candidate_pick(const ctl_candidate *c, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++) {
        if (ctl_reason_priority(c[i].reason) < ctl_reason_priority(c[best].reason)) {
            best = i;
        }
    }
    return best;
}

const char *ctl_state_get(const struct json_object *status)
{
    const char *state = co_json_str(status, "state", NULL);
    return state ? state : "";
}

const char *ctl_state_reason(const struct json_object *status)
{
    const char *reason = co_json_str(ready_condition(status), "reason", NULL);
    return reason ? reason : "";
}

char *ctl_capitalise(const char *msg)
{
    char *s = co_xstrdup(msg ? msg : "");
    if (s[0] >= 'a' && s[0] <= 'z') {
        s[0] = (char)(s[0] - 'a' + 'A');
    }
    return s;
}

int64_t ctl_jitter(int64_t delay_ns, uint64_t rnd)
{
    if (delay_ns <= 0) {
        return delay_ns;
    }
    /* 1 % + up to 4 % more, in steps of 1/10000 of the delay */
    int64_t extra_permyriad = 100 + (int64_t)(rnd % 401);
    return delay_ns + (int64_t)((double)delay_ns * (double)extra_permyriad / 10000.0);
}

bool ctl_state_component_ready(const struct json_object *component)
{
    int64_t gen = 0, observed = -1;
    if (co_json_get_int64(&gen, component, "metadata", "generation", NULL) < 0 ||
        co_json_get_int64(&observed, component, "status", "observedGeneration", NULL) < 0) {
        return false;
    }
    struct json_object *status = co_json_get(component, "status", NULL);
    const char *state = ctl_state_get(status);
    return observed == gen &&
           (strcmp(state, CTL_STATE_READY) == 0 || strcmp(state, CTL_STATE_WARNING) == 0);
}

bool ctl_state_ready(const co_component *component)
{
    return component->has_status &&
           component->status.observed_generation == component->generation &&
           component->status.state &&
           (strcmp(component->status.state, CTL_STATE_READY) == 0 ||
            strcmp(component->status.state, CTL_STATE_WARNING) == 0);
}

/* ---- backoff ------------------------------------------------------------------------------- */

#define NBUCKETS 256

typedef struct entry {
    char *key;
    char *activity;
    int n;
    struct entry *next;
} entry;

struct ctl_backoff {
    pthread_mutex_t mu;
    entry *buckets[NBUCKETS];
};

/* Keyed (co/hash.h): Component names that all share one bucket cannot be prepared. */
static unsigned bucket_of(const char *s)
{
    return (unsigned)(co_hash_str(s) % NBUCKETS);
}

ctl_backoff *ctl_backoff_new(void)
{
    ctl_backoff *b = co_xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->mu, NULL);
    return b;
}

void ctl_backoff_free(ctl_backoff *b)
{
    if (!b) {
        return;
    }
    for (size_t i = 0; i < NBUCKETS; i++) {
        entry *e = b->buckets[i];
        while (e) {
            entry *next = e->next;
            free(e->key);
            free(e->activity);
            free(e);
            e = next;
        }
    }
    pthread_mutex_destroy(&b->mu);
    free(b);
}

int64_t ctl_backoff_delay(int n)
{
    if (n <= 5) {
        return 50 * CO_MILLISECOND << (n < 1 ? 0 : n - 1);
    }
    if (n <= 20) {
        return CO_SECOND;
    }
    if (n <= 50) {
        return 2 * CO_SECOND;
    }
    return 10 * CO_SECOND;
}

int64_t ctl_backoff_next(ctl_backoff *b, const char *key, const char *activity)
{
    unsigned h = bucket_of(key);
    pthread_mutex_lock(&b->mu);
    entry *e = b->buckets[h];
    while (e && strcmp(e->key, key) != 0) {
        e = e->next;
    }
    if (!e) {
        e = co_xcalloc(1, sizeof(*e));
        e->key = co_xstrdup(key);
        e->activity = co_xstrdup(activity);
        e->next = b->buckets[h];
        b->buckets[h] = e;
    } else if (strcmp(e->activity, activity) != 0) {
        free(e->activity);
        e->activity = co_xstrdup(activity);
        e->n = 0;
    }
    if (e->n < 1000) {
        e->n++;
    }
    int n = e->n;
    pthread_mutex_unlock(&b->mu);
    return ctl_backoff_delay(n);
}

void ctl_backoff_forget(ctl_backoff *b, const char *key)
{
    unsigned h = bucket_of(key);
    pthread_mutex_lock(&b->mu);
    entry **pp = &b->buckets[h];
    while (*pp) {
        entry *e = *pp;
        if (strcmp(e->key, key) == 0) {
            *pp = e->next;
            free(e->key);
            free(e->activity);
            free(e);
            break;
        }
        pp = &e->next;
    }
    pthread_mutex_unlock(&b->mu);
}
