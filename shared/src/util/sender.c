/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sender: a ring of item pointers under one mutex, one thread that takes the head, drops
 * the lock and delivers it. `busy` counts the item in delivery, so that a flush waits for it as
 * well as for the queue. Two condition variables: `wake` (work arrived, or stop; also what
 * co_sender_sleep() waits on, so that stopping cuts a backoff short) and `drained`.
 */
#include "co/util/sender.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "co/util/error.h"
#include "co/util/thread.h"

#define DEFAULT_QUEUE 1000

struct co_sender {
    char *name;
    void (*deliver)(void *ctx, co_sender *s, void *item);
    void (*drop)(void *ctx, void *item);
    void *ctx;

    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t drained;
    void **queue;
    size_t qcap, qhead, qlen;
    bool busy;
    atomic_bool stop; /* written under the lock; read without it by co_sender_stopping() */
    pthread_t thread;
};

static void *run(void *arg)
{
    co_sender *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->qlen == 0 && !atomic_load(&s->stop)) {
            pthread_cond_wait(&s->wake, &s->lock);
        }
        if (atomic_load(&s->stop)) {
            break;
        }
        void *item = s->queue[s->qhead];
        s->qhead = (s->qhead + 1) % s->qcap;
        s->qlen--;
        s->busy = true;
        pthread_mutex_unlock(&s->lock);
        s->deliver(s->ctx, s, item);
        pthread_mutex_lock(&s->lock);
        s->busy = false;
        if (s->qlen == 0) {
            pthread_cond_broadcast(&s->drained);
        }
    }
    pthread_cond_broadcast(&s->drained);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int co_sender_new(co_sender **out, const co_sender_options *opts)
{
    if (!opts || !opts->name || !opts->deliver || !opts->drop) {
        return co_error_set(CO_EINVALID, "sender: a name, a deliver and a drop are required");
    }
    co_sender *s = co_xcalloc(1, sizeof(*s));
    s->name = co_xstrdup(opts->name);
    s->deliver = opts->deliver;
    s->drop = opts->drop;
    s->ctx = opts->ctx;
    s->qcap = opts->queue_len ? opts->queue_len : DEFAULT_QUEUE;
    s->queue = co_xcalloc(s->qcap, sizeof(void *));
    atomic_init(&s->stop, false);
    pthread_mutex_init(&s->lock, NULL);
    co_cond_init_monotonic(&s->wake);
    co_cond_init_monotonic(&s->drained);
    if (pthread_create(&s->thread, NULL, run, s) != 0) {
        int rc = co_error_set_os(CO_ERROR, "%s: cannot start a thread", s->name);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->wake);
        pthread_cond_destroy(&s->drained);
        free(s->queue);
        free(s->name);
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

bool co_sender_push(co_sender *s, void *item)
{
    pthread_mutex_lock(&s->lock);
    bool taken = !atomic_load(&s->stop) && s->qlen < s->qcap;
    if (taken) {
        s->queue[(s->qhead + s->qlen) % s->qcap] = item;
        s->qlen++;
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->lock);
    return taken;
}

int co_sender_flush(co_sender *s, long timeout_ms)
{
    struct timespec deadline = co_monotonic_deadline_ns((int64_t)timeout_ms * 1000000);
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    while (s->qlen > 0 || s->busy) {
        if (pthread_cond_timedwait(&s->drained, &s->lock, &deadline) != 0 &&
            (s->qlen > 0 || s->busy)) {
            rc = co_error_set(CO_ETIMEOUT, "%s: %zu items still queued after %ld ms", s->name,
                              s->qlen + (size_t)s->busy, timeout_ms);
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

bool co_sender_sleep(co_sender *s, long ms)
{
    struct timespec deadline = co_monotonic_deadline_ns((int64_t)ms * 1000000);
    pthread_mutex_lock(&s->lock);
    /* a push signals `wake` too: only the deadline or a stop ends the wait */
    while (!atomic_load(&s->stop)) {
        if (pthread_cond_timedwait(&s->wake, &s->lock, &deadline) != 0) {
            break;
        }
    }
    bool full = !atomic_load(&s->stop);
    pthread_mutex_unlock(&s->lock);
    return full;
}

bool co_sender_stopping(const co_sender *s)
{
    return atomic_load(&s->stop);
}

size_t co_sender_free(co_sender *s, long grace_ms)
{
    if (!s) {
        return 0;
    }
    if (co_sender_flush(s, grace_ms) < 0) {
        co_error_clear();
    }
    pthread_mutex_lock(&s->lock);
    atomic_store(&s->stop, true);
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    size_t dropped = s->qlen;
    for (; s->qlen > 0; s->qlen--) {
        s->drop(s->ctx, s->queue[s->qhead]);
        s->qhead = (s->qhead + 1) % s->qcap;
    }
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->wake);
    pthread_cond_destroy(&s->drained);
    free(s->queue);
    free(s->name);
    free(s);
    return dropped;
}
