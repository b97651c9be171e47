/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The events forwarder (ctl_notify.h): callers build the JSON body at once, from the object they
 * hold, and queue it; one sender thread POSTs the bodies in order with libcurl, retrying as
 * Flux's recorder (go-retryablehttp with its defaults) does. The queue and the thread are a
 * co_sender (co/util/sender.h): waits between attempts are co_sender_sleep() and transfers
 * watch co_sender_stopping(), so shutting down never waits out a backoff or a slow receiver.
 */
#include "controller/ctl_notify.h"

#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "co/util/error.h"
#include "co/json/json.h"
#include "co/util/log.h"
#include "co/util/metrics.h"
#include "co/util/sender.h"
#include "co/util/time.h"

#define DEFAULT_TIMEOUT_MS  5000L
#define DEFAULT_RETRIES     4
#define DEFAULT_BACKOFF_MS  1000L
#define DEFAULT_BACKOFF_MAX 30000L
#define FREE_FLUSH_MS       5000L
/* the Event CRD of Flux's notification API accepts messages up to this length */
#define MAX_MESSAGE 39000
/* Flux's recorder copies the object's annotations of its own group into the metadata */
#define FLUX_EVENT_PREFIX "event.toolkit.fluxcd.io/"

struct ctl_notify {
    char *address;
    char *controller, *instance;
    long timeout_ms, backoff_ms, backoff_max_ms;
    int retries;
    co_metric *results;

    co_sender *sender; /* of JSON bodies */
    pthread_mutex_t stats_lock;
    ctl_notify_stats stats;
};

typedef enum outcome { SENT, REJECTED, FAILED, DROPPED } outcome;

static void count(ctl_notify *n, outcome o, unsigned long k)
{
    static const char *const names[] = {"sent", "rejected", "failed", "dropped"};
    unsigned long *field[] = {&n->stats.sent, &n->stats.rejected, &n->stats.failed,
                              &n->stats.dropped};
    pthread_mutex_lock(&n->stats_lock);
    *field[o] += k;
    pthread_mutex_unlock(&n->stats_lock);
    if (n->results && k) {
        const char *lv[] = {names[o]};
        co_metric_add(n->results, lv, (double)k);
    }
}

/* ---- the body ------------------------------------------------------------------------------ */

static void add_str(struct json_object *o, const char *key, const char *value)
{
    if (value && value[0]) {
        json_object_object_add(o, key, json_object_new_string(value));
    }
}

/* The length of at most @p max bytes of @p s that ends on a UTF-8 character boundary. */
static size_t utf8_prefix(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max) {
        return n;
    }
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) {
        n--;
    }
    return n;
}

/* Members in the order of the Go structs (corev1.ObjectReference, eventv1beta1.Event). */
static char *build_body(const ctl_notify *n,
                        const struct json_object *involved,
                        const char *type,
                        const char *reason,
                        const char *message,
                        const char *const *metadata)
{
    struct json_object *ref = json_object_new_object();
    add_str(ref, "kind", co_json_str(involved, "kind", NULL));
    add_str(ref, "namespace", co_json_meta_namespace(involved));
    add_str(ref, "name", co_json_meta_name(involved));
    add_str(ref, "uid", co_json_str(involved, "metadata", "uid", NULL));
    add_str(ref, "apiVersion", co_json_str(involved, "apiVersion", NULL));
    add_str(ref, "resourceVersion", co_json_str(involved, "metadata", "resourceVersion", NULL));

    struct json_object *md = json_object_new_object();
    for (const char *const *p = metadata; p && p[0] && p[1]; p += 2) {
        json_object_object_add(md, p[0], json_object_new_string(p[1]));
    }
    struct json_object *ann = co_json_get(involved, "metadata", "annotations", NULL);
    if (ann && json_object_is_type(ann, json_type_object)) {
        json_object_object_foreach (ann, k, v) {
            if (strncmp(k, FLUX_EVENT_PREFIX, strlen(FLUX_EVENT_PREFIX)) == 0 &&
                json_object_is_type(v, json_type_string)) {
                json_object_object_add(md, k, json_object_get(v));
            }
        }
    }

    char ts[CO_TIME_STR_MAX];
    co_time_format(ts, co_time_now());
    const char *msg = message ? message : "";
    struct json_object *ev = json_object_new_object();
    json_object_object_add(ev, "involvedObject", ref);
    json_object_object_add(
        ev, "severity",
        json_object_new_string(type && strcmp(type, "Warning") == 0 ? "error" : "info"));
    json_object_object_add(ev, "timestamp", json_object_new_string(ts));
    json_object_object_add(ev, "message",
                           json_object_new_string_len(msg, (int)utf8_prefix(msg, MAX_MESSAGE)));
    json_object_object_add(ev, "reason", json_object_new_string(reason ? reason : ""));
    if (json_object_object_length(md) > 0) {
        json_object_object_add(ev, "metadata", md);
    } else {
        json_object_put(md);
    }
    json_object_object_add(ev, "reportingController", json_object_new_string(n->controller));
    add_str(ev, "reportingInstance", n->instance);
    char *body = co_json_dumps(ev, 0);
    json_object_put(ev);
    return body;
}

/* ---- delivery ------------------------------------------------------------------------------ */

static size_t discard(char *ptr, size_t size, size_t nmemb, void *ud)
{
    (void)ptr;
    (void)ud;
    return size * nmemb;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    ctl_notify *n = ud;
    return co_sender_stopping(n->sender) ? 1 : 0;
}

/* An error that another attempt will not cure: the address or the receiver's certificate. */
static bool permanent(CURLcode cc)
{
    switch (cc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_ABORTED_BY_CALLBACK:
        return true;
    default:
        return false;
    }
}

/*
 * One POST. @return the outcome if final, or -1 to retry; @p retry_after_ms is a 503's
 * Retry-After (0 when none).
 */
static int attempt(ctl_notify *n, const char *body, long *retry_after_ms)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    CURL *h = curl_easy_init();
    if (!h) {
        co_error_set(CO_ERROR, "cannot create a transfer");
        return -1;
    }
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, n->address);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(h, CURLOPT_USERAGENT, "component-controller/" CO_VERSION);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, n->timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, n);
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    int result = -1;
    *retry_after_ms = 0;
    if (cc != CURLE_OK) {
        co_error_set(CO_EUNAVAILABLE, "posting the event to %s: %s", n->address,
                     errbuf[0] ? errbuf : curl_easy_strerror(cc));
        result = permanent(cc) ? FAILED : -1;
    } else if (status >= 200 && status < 300) {
        result = SENT;
    } else if (status >= 500 && status != 501) {
        co_error_set(CO_EUNAVAILABLE, "posting the event to %s: HTTP %ld", n->address, status);
        curl_off_t ra = 0;
        if (status == 503 && curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK &&
            ra > 0) {
            *retry_after_ms = ra > 86400 ? 86400000L : (long)ra * 1000;
        }
    } else {
        co_error_set(CO_EINVALID, "posting the event to %s: HTTP %ld", n->address, status);
        result = REJECTED;
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return result;
}

/* Delivers one body, retrying with backoff, and counts the outcome. */
static void deliver(void *ctx, co_sender *sender, void *item)
{
    ctl_notify *n = ctx;
    char *body = item;
    outcome o = FAILED;
    long wait = n->backoff_ms;
    for (int i = 0;; i++) {
        long retry_after = 0;
        co_error_clear();
        int r = attempt(n, body, &retry_after);
        if (r >= 0) {
            if (r != SENT) {
                co_log(CO_LOG_WARN, "event not forwarded", "error", co_error_last(), NULL);
            }
            o = (outcome)r;
            break;
        }
        if (i >= n->retries || co_sender_stopping(sender)) {
            char tries[16];
            snprintf(tries, sizeof(tries), "%d", i + 1);
            co_log(CO_LOG_WARN, "event not forwarded", "error", co_error_last(), "attempts", tries,
                   NULL);
            break;
        }
        long ms = retry_after > 0 ? retry_after : wait;
        if (!co_sender_sleep(sender, ms < n->backoff_max_ms ? ms : n->backoff_max_ms)) {
            break;
        }
        wait *= 2;
    }
    free(body);
    count(n, o, 1);
}

static void drop(void *ctx, void *item)
{
    free(item);
    count(ctx, DROPPED, 1);
}

/* ---- public -------------------------------------------------------------------------------- */

int ctl_notify_new(ctl_notify **out, const ctl_notify_options *opts)
{
    const char *a = opts ? opts->address : NULL;
    if (!a || !a[0]) {
        return co_error_set(CO_EINVALID, "events address: empty");
    }
    if ((strncasecmp(a, "http://", 7) != 0 || !a[7]) &&
        (strncasecmp(a, "https://", 8) != 0 || !a[8])) {
        return co_error_set(CO_EINVALID,
                            "events address \"%.200s\": not an http:// or https:// URL", a);
    }
    for (const char *p = a; *p; p++) {
        if ((unsigned char)*p <= ' ' || *p == 0x7f) {
            return co_error_set(
                CO_EINVALID, "events address \"%.200s\": contains spaces or control characters", a);
        }
    }
    if (!opts->reporting_controller || !opts->reporting_controller[0]) {
        return co_error_set(CO_EINVALID, "events address: a reporting controller is required");
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        return co_error_set(CO_ERROR, "events address: cannot initialise libcurl");
    }
    ctl_notify *n = co_xcalloc(1, sizeof(*n));
    n->address = co_xstrdup(a);
    n->controller = co_xstrdup(opts->reporting_controller);
    if (opts->reporting_instance) {
        n->instance = co_xstrdup(opts->reporting_instance);
    } else {
        char host[256] = "";
        if (gethostname(host, sizeof(host) - 1) == 0) {
            n->instance = co_xstrdup(host);
        }
    }
    n->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
    n->retries = opts->retries > 0 ? opts->retries : opts->retries < 0 ? 0 : DEFAULT_RETRIES;
    n->backoff_ms = opts->backoff_ms > 0 ? opts->backoff_ms : DEFAULT_BACKOFF_MS;
    n->backoff_max_ms = opts->backoff_max_ms > 0 ? opts->backoff_max_ms : DEFAULT_BACKOFF_MAX;
    n->results = opts->results;
    pthread_mutex_init(&n->stats_lock, NULL);
    co_sender_options so = {"events address", opts->queue_len, deliver, drop, n};
    int rc = co_sender_new(&n->sender, &so);
    if (rc < 0) {
        pthread_mutex_destroy(&n->stats_lock);
        free(n->address);
        free(n->controller);
        free(n->instance);
        free(n);
        curl_global_cleanup();
        return rc;
    }
    *out = n;
    return 0;
}

int ctl_notify_flush(ctl_notify *n, long timeout_ms)
{
    return co_sender_flush(n->sender, timeout_ms);
}

void ctl_notify_free(ctl_notify *n)
{
    if (!n) {
        return;
    }
    /* what is still queued after the grace period is dropped (and counted by drop()) */
    (void)co_sender_free(n->sender, FREE_FLUSH_MS);
    pthread_mutex_destroy(&n->stats_lock);
    free(n->address);
    free(n->controller);
    free(n->instance);
    free(n);
    curl_global_cleanup();
}

void ctl_notify_event(ctl_notify *n,
                      const struct json_object *involved,
                      const char *type,
                      const char *reason,
                      const char *message,
                      const char *const *metadata)
{
    /* Flux's recorder sends nothing for an object it cannot reference completely */
    const char *kind = co_json_str(involved, "kind", NULL), *name = co_json_meta_name(involved),
               *ns = co_json_meta_namespace(involved);
    char *body = kind && kind[0] && name && name[0] && ns && ns[0]
                     ? build_body(n, involved, type, reason, message, metadata)
                     : NULL;
    if (!body) {
        count(n, FAILED, 1);
    } else if (!co_sender_push(n->sender, body)) {
        drop(n, body);
    }
}

void ctl_notify_stats_get(ctl_notify_stats *out, ctl_notify *n)
{
    pthread_mutex_lock(&n->stats_lock);
    *out = n->stats;
    pthread_mutex_unlock(&n->stats_lock);
}
