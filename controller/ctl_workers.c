/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manager's workers (see ctl_manager_int.h): each takes a key from the queue, reconciles
 * it unless leadership is gone, and queues it again as the result says. With leader election
 * they start when the Lease is won; when it is lost the queue shuts down and the manager
 * reports the loss.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/error.h"
#include "co/util/log.h"
#include "co/util/time.h"
#include "controller/ctl_manager_int.h"

static void *worker_main(void *arg)
{
    ctl_manager *m = arg;
    for (;;) {
        char *key = NULL;
        if (ctl_queue_get(m->queue, &key) < 0) {
            break;
        }
        if (!atomic_load(&m->leading)) {
            ctl_queue_done(m->queue, key);
            free(key);
            continue;
        }
        char *slash = strchr(key, '/');
        if (!slash) {
            ctl_queue_forget(m->queue, key);
            ctl_queue_done(m->queue, key);
            free(key);
            continue;
        }
        char *ns = co_xstrndup(key, (size_t)(slash - key));
        const char *name = slash + 1;
        const char *lv[] = {CONTROLLER};
        co_metric_inc(m->m_reconcile_total, lv);
        atomic_fetch_add(&m->n_reconciles, 1);
        int64_t t0 = co_time_monotonic();
        ctl_result res;
        co_error_clear();
        int rc = ctl_reconcile(&res, &m->env, ns, name);
        double secs = (double)(co_time_monotonic() - t0) / 1e9;
        co_metric_observe(m->m_cr_time, lv, secs);
        const char *result = "success";
        if (rc < 0 || res.rate_limited) {
            result = "error";
            atomic_fetch_add(&m->n_reconcile_errors, 1);
            co_metric_inc(m->m_cr_errors, lv);
            if (rc < 0) {
                co_log(CO_LOG_ERROR, "reconcile failed", "component", key, "error", co_error_last(),
                       NULL);
            }
            ctl_queue_add_rate_limited(m->queue, key);
        } else {
            if (res.forget) {
                ctl_queue_forget(m->queue, key);
            }
            if (res.requeue_after_ns > 0) {
                result = "requeue_after";
                ctl_queue_add_after(m->queue, key, res.requeue_after_ns);
            }
        }
        const char *rv[] = {CONTROLLER, result};
        co_metric_inc(m->m_cr_total, rv);
        ctl_queue_done(m->queue, key);
        free(ns);
        free(key);
    }
    return NULL;
}

int ctl_manager__start_workers(ctl_manager *m)
{
    pthread_mutex_lock(&m->mu);
    /* the elector may win the Lease while the manager stops: no workers once stop has taken
     * them (it sets stopped before it locks mu) */
    if (m->workers || atomic_load(&m->stopped)) {
        pthread_mutex_unlock(&m->mu);
        return 0;
    }
    size_t n = (size_t)(m->opts.workers > 0 ? m->opts.workers : 5);
    m->workers = co_xcalloc(n, sizeof(*m->workers));
    for (size_t i = 0; i < n; i++) {
        if (pthread_create(&m->workers[i], NULL, worker_main, m) != 0) {
            break;
        }
        m->nworkers++;
    }
    bool all = m->nworkers == n;
    pthread_mutex_unlock(&m->mu);
    return all ? 0 : co_error_set(CO_ERROR, "cannot start worker threads");
}

void ctl_manager__on_started_leading(void *payload)
{
    ctl_manager *m = payload;
    co_log(CO_LOG_INFO, "became leader", "identity", m->identity, NULL);
    atomic_store(&m->leading, true);
    if (ctl_manager__start_workers(m) < 0) {
        co_log(CO_LOG_ERROR, "cannot start workers", "error", co_error_last(), NULL);
    }
}

void ctl_manager__on_stopped_leading(void *payload)
{
    ctl_manager *m = payload;
    bool was = atomic_exchange(&m->leading, false);
    if (was && !atomic_load(&m->stopped)) {
        co_log(CO_LOG_ERROR, "leader election lost", "identity", m->identity, NULL);
        atomic_store(&m->lost, true);
        ctl_queue_shutdown(m->queue);
    }
}
