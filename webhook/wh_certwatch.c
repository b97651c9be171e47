/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File-backed certificate reloading: inotify on the directories plus a poll, one thread.
 * Events are coalesced for a short moment before re-reading, because writers (kubelet,
 * cert-manager's csi driver, a human with cp) produce bursts and may write the certificate
 * before the key; a pair read in between fails the key check and is simply retried.
 */
#include "webhook/wh_certwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "webhook/wh_metrics.h"

/* How long a burst of file events is left to settle before the files are read. */
#define SETTLE_MS 100

struct wh_certwatch {
    wh_tls *tls;
    char *cert_path;
    char *key_path;
    int interval_ms;
    int inotify_fd;
    int stop_fd;
    int watching; /* directory watches are in place */
    pthread_t thread;
    int started;
    pthread_mutex_t lock; /* serialises reloads from the thread and from callers */
    char *last_error;     /* the last reported failure, so a broken pair is logged once */
};

static int read_file(co_buf *out, const char *path, const char *what)
{
    co_buf_init(out, CO_MAX_PEM_FILE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return co_error_set_os(errno == ENOENT ? CO_ENOTFOUND : CO_ERROR, "reading %s %s", what,
                               path);
    }
    char chunk[4096];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            int rc = co_error_set_os(CO_ERROR, "reading %s %s", what, path);
            close(fd);
            co_buf_dispose(out);
            return rc;
        }
        if (n == 0) {
            break;
        }
        if (co_buf_put(out, chunk, (size_t)n) < 0) {
            close(fd);
            return co_error_set(CO_ETOOBIG, "%s %s is larger than %zu bytes", what, path,
                                CO_MAX_PEM_FILE);
        }
    }
    close(fd);
    return 0;
}

static int load(wh_certwatch *w, int *changed)
{
    co_buf cert, key;
    int rc = read_file(&cert, w->cert_path, "certificate");
    if (rc < 0) {
        return rc;
    }
    rc = read_file(&key, w->key_path, "private key");
    if (rc < 0) {
        co_buf_dispose(&cert);
        return rc;
    }
    rc = wh_tls_set_pem(w->tls, changed, cert.ptr ? cert.ptr : "", cert.len, key.ptr ? key.ptr : "",
                        key.len);
    if (rc < 0) {
        co_error_wrap("loading %s and %s", w->cert_path, w->key_path);
    }
    co_buf_dispose(&cert);
    co_memzero(key.ptr, key.len);
    co_buf_dispose(&key);
    return rc;
}

static void log_expiry(wh_certwatch *w)
{
    time_t t = wh_tls_not_after(w->tls);
    struct tm tm;
    char when[32] = "unknown";
    if (t && gmtime_r(&t, &tm)) {
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    co_log(CO_LOG_INFO, "serving certificate loaded", "cert", w->cert_path, "notAfter", when, NULL);
}

int wh_certwatch_reload(wh_certwatch *w)
{
    pthread_mutex_lock(&w->lock);
    int changed = 0;
    int rc = load(w, &changed);
    wh_metrics_certificate_read(rc == 0);
    if (rc < 0) {
        const char *msg = co_error_last();
        if (!w->last_error || strcmp(w->last_error, msg)) {
            co_log(CO_LOG_WARN, "serving certificate not reloaded; the previous one stays", "error",
                   msg, NULL);
            free(w->last_error);
            w->last_error = co_xstrdup(msg);
        }
        pthread_mutex_unlock(&w->lock);
        return rc;
    }
    free(w->last_error);
    w->last_error = NULL;
    if (changed) {
        log_expiry(w);
    }
    pthread_mutex_unlock(&w->lock);
    return 0;
}

static void add_watch(wh_certwatch *w, const char *file)
{
    char *dir = co_xstrdup(file);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        free(dir);
        dir = co_xstrdup(".");
    } else if (slash == dir) {
        slash[1] = '\0';
    } else {
        *slash = '\0';
    }
    /* Adding the same directory twice returns the same descriptor, which is fine. */
    if (inotify_add_watch(w->inotify_fd, dir,
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE |
                              IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) >= 0) {
        w->watching = 1;
    }
    free(dir);
}

static void ensure_watches(wh_certwatch *w)
{
    if (w->watching || w->inotify_fd < 0) {
        return;
    }
    add_watch(w, w->cert_path);
    add_watch(w, w->key_path);
}

/* Reads pending events; returns 1 when any arrived. A removed directory drops the watches. */
static int drain_events(wh_certwatch *w)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int any = 0;
    for (;;) {
        ssize_t n = read(w->inotify_fd, buf, sizeof(buf));
        if (n <= 0) {
            break;
        }
        any = 1;
        for (ssize_t off = 0; off < n;) {
            const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
            if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
                w->watching = 0;
            }
            off += (ssize_t)(sizeof(*ev) + ev->len);
        }
    }
    return any;
}

static void *run(void *arg)
{
    wh_certwatch *w = arg;
    for (;;) {
        ensure_watches(w);
        struct pollfd fds[2] = {{w->stop_fd, POLLIN, 0}, {w->inotify_fd, POLLIN, 0}};
        int n = poll(fds, w->inotify_fd >= 0 ? 2 : 1, w->interval_ms);
        if (n < 0 && errno != EINTR) {
            break;
        }
        if (fds[0].revents) {
            break;
        }
        if (n > 0 && fds[1].revents) {
            /* Let the burst settle, then take everything that arrived meanwhile. */
            drain_events(w);
            struct pollfd stop = {w->stop_fd, POLLIN, 0};
            if (poll(&stop, 1, SETTLE_MS) > 0) {
                break;
            }
            drain_events(w);
        }
        /* On an event or a poll timeout alike: re-read, a no-op when nothing changed. A failure
         * was logged by the reload and the previous pair stays. */
        if (wh_certwatch_reload(w) < 0) {
            continue;
        }
    }
    return NULL;
}

int wh_certwatch_start(wh_certwatch **out,
                       wh_tls *tls,
                       const char *cert_path,
                       const char *key_path,
                       int interval_ms)
{
    wh_certwatch *w = co_xcalloc(1, sizeof(*w));
    w->tls = tls;
    w->cert_path = co_xstrdup(cert_path);
    w->key_path = co_xstrdup(key_path);
    w->interval_ms = interval_ms > 0 ? interval_ms : 10000;
    w->inotify_fd = -1;
    w->stop_fd = -1;
    pthread_mutex_init(&w->lock, NULL);
    int changed = 0;
    int rc = load(w, &changed);
    wh_metrics_certificate_read(rc == 0);
    if (rc < 0) {
        goto fail;
    }
    log_expiry(w);
    /* Without inotify (exhausted instances, odd file systems) the poll still works. */
    w->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->inotify_fd < 0) {
        co_log(CO_LOG_WARN, "inotify unavailable; certificate changes are found by polling only",
               NULL);
    }
    /* Watch before the thread starts, so that no change after this call can be missed. */
    ensure_watches(w);
    w->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (w->stop_fd < 0) {
        rc = co_error_set_os(CO_ERROR, "creating the certificate watcher");
        goto fail;
    }
    if (pthread_create(&w->thread, NULL, run, w) != 0) {
        rc = co_error_set(CO_ERROR, "cannot start the certificate watcher thread");
        goto fail;
    }
    w->started = 1;
    *out = w;
    return 0;
fail:
    wh_certwatch_stop(w);
    return rc;
}

void wh_certwatch_stop(wh_certwatch *w)
{
    if (!w) {
        return;
    }
    if (w->started) {
        uint64_t one = 1;
        ssize_t n = write(w->stop_fd, &one, sizeof(one));
        (void)n;
        pthread_join(w->thread, NULL);
    }
    if (w->inotify_fd >= 0) {
        close(w->inotify_fd);
    }
    if (w->stop_fd >= 0) {
        close(w->stop_fd);
    }
    free(w->cert_path);
    free(w->key_path);
    free(w->last_error);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
