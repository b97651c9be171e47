/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers of the Kubernetes client: JSON member access, percent-encoding, bounded JSON
 * parsing, clocks, jitter, an interruptible sleep, the string hash
 * map behind the discovery cache and the informer store, the token bucket and backoff.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/kube/kube_transport.h"
#include "co/util/time.h"
#include "kube_int.h"

struct json_object *co_kube__obj(const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    if (!obj || !json_object_is_type(obj, json_type_object) ||
        !json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_object)) {
        return NULL;
    }
    return v;
}

int co_kube__parse_json(struct json_object **out, const char *data, size_t len)
{
    if (len > INT_MAX) {
        return co_error_set(CO_ETOOBIG, "JSON document of %zu bytes is too large", len);
    }
    struct json_tokener *tok = json_tokener_new_ex(CO_MAX_NESTING);
    CO_ASSERT(tok);
    struct json_object *obj = json_tokener_parse_ex(tok, data, (int)len);
    enum json_tokener_error err = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (err != json_tokener_success) {
        json_object_put(obj);
        if (err == json_tokener_continue) {
            return co_error_set(CO_EINVALID, "invalid JSON: unexpected end of data");
        }
        return co_error_set(CO_EINVALID, "invalid JSON at byte %zu: %s", used,
                            json_tokener_error_desc(err));
    }
    for (size_t i = used; i < len; i++) {
        char c = data[i];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
            json_object_put(obj);
            return co_error_set(CO_EINVALID, "invalid JSON: trailing data at byte %zu", i);
        }
    }
    *out = obj;
    return 0;
}

int co_kube__parse_json_skip(struct json_object **out,
                             const char *data,
                             size_t len,
                             const char *const *const *skip)
{
    if (!skip) {
        return co_kube__parse_json(out, data, len);
    }
    return co_json_parse_skip(out, data, len, len, skip);
}

/* managedFields is the server's record of field ownership: often the larger part of an object,
 * and as a tree of mostly empty objects the costliest part to build. */
static const char *const list_managed_fields[] = {"items", CO_JSON_EVERY_ELEMENT, "metadata",
                                                  "managedFields", NULL};
static const char *const event_managed_fields[] = {"object", "metadata", "managedFields", NULL};
const char *const *const co_kube__skip_list_managed_fields[] = {list_managed_fields, NULL};
const char *const *const co_kube__skip_event_managed_fields[] = {event_managed_fields, NULL};

/* --- responses (every transport's) --------------------------------------------------------- */

void co_kube_response_init(co_kube_response *resp, size_t max_body)
{
    resp->status = 0;
    co_buf_init(&resp->body, max_body);
    resp->retry_after_s = -1;
    resp->not_sent = 0;
}

void co_kube_response_dispose(co_kube_response *resp)
{
    co_buf_dispose(&resp->body);
    resp->status = 0;
    resp->retry_after_s = -1;
    resp->not_sent = 0;
}

/* --- URLs ---------------------------------------------------------------------------------- */

int co_kube__escape(co_buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_' || c == '~';
        int rc;
        if (plain) {
            rc = co_buf_putc(out, (char)c);
        } else {
            char enc[3] = {'%', hex[c >> 4], hex[c & 15]};
            rc = co_buf_put(out, enc, 3);
        }
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

/* --- time ---------------------------------------------------------------------------------- */

int64_t co_kube__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t co_kube__wall_us(void)
{
    return co_time_now() / 1000;
}

/* --- randomness and sleeping -------------------------------------------------------------- */

double co_kube__random(void)
{
    static _Thread_local uint64_t state;
    if (state == 0) {
        if (getrandom(&state, sizeof(state), 0) != (ssize_t)sizeof(state) || state == 0) {
            state = (uint64_t)co_kube__wall_us() ^ (uint64_t)(uintptr_t)&state;
            state |= 1;
        }
    }
    /* xorshift64* */
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    uint64_t r = state * 0x2545F4914F6CDD1DULL;
    return (double)(r >> 11) / (double)(1ULL << 53);
}

int co_kube__sleep_ms(int64_t ms, const volatile int *stop)
{
    int64_t deadline = co_kube__now_ms() + ms;
    for (;;) {
        /* the flag is set with an atomic store by the stopping thread */
        if (stop && __atomic_load_n(stop, __ATOMIC_RELAXED)) {
            return 1;
        }
        int64_t left = deadline - co_kube__now_ms();
        if (left <= 0) {
            return 0;
        }
        if (stop && left > 50) {
            left = 50;
        }
        struct timespec ts = {(time_t)(left / 1000), (long)(left % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
}

/* --- token bucket and backoff ------------------------------------------------------------- */

void co_kube_bucket_init(co_kube_bucket *b, double qps, int burst, int64_t now_ms)
{
    pthread_mutex_init(&b->lock, NULL);
    b->qps = qps;
    b->burst = burst > 0 ? burst : 1;
    b->tokens = b->burst;
    b->last_ms = now_ms;
}

void co_kube_bucket_dispose(co_kube_bucket *b)
{
    pthread_mutex_destroy(&b->lock);
}

int64_t co_kube_bucket_reserve(co_kube_bucket *b, int64_t now_ms)
{
    if (b->qps <= 0) {
        return 0;
    }
    pthread_mutex_lock(&b->lock);
    if (now_ms > b->last_ms) {
        b->tokens += (double)(now_ms - b->last_ms) * b->qps / 1000.0;
        if (b->tokens > b->burst) {
            b->tokens = b->burst;
        }
        b->last_ms = now_ms;
    }
    /* Tokens may go negative: each waiter reserves its own future token, so waiters are
     * served in order at the configured rate. */
    b->tokens -= 1.0;
    int64_t wait = 0;
    if (b->tokens < 0) {
        wait = (int64_t)(-b->tokens * 1000.0 / b->qps + 0.999);
    }
    pthread_mutex_unlock(&b->lock);
    return wait;
}

int64_t co_kube_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms, double r)
{
    int64_t d = base_ms;
    for (int i = 0; i < attempt && d < cap_ms; i++) {
        d *= 2;
    }
    if (d > cap_ms) {
        d = cap_ms;
    }
    /* half fixed, half jitter: never zero, never above the cap */
    return d / 2 + (int64_t)((double)(d - d / 2) * r);
}
