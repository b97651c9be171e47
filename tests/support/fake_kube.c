/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fake Kubernetes transport (see fake_kube.h).
 */
#include "tests/support/fake_kube.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "co/util/error.h"

typedef struct route {
    char *method;
    char *prefix;
    int once;
    int used;
    int status, error, not_sent, truncate, hang;
    long retry_after_s;
    char **chunks;
    size_t nchunks;
} route;

struct co_fake_kube {
    pthread_mutex_t lock;
    int refs;
    route *routes;
    size_t nroutes;
    co_fake_call *calls;
    size_t ncalls;
    int fault_after, fault_repeat, fault_kind, fault_http;
    int call_counter; /* calls since the fault was armed */
    int faults;
};

typedef struct fake_transport {
    co_kube_transport base;
    co_fake_kube *f;
} fake_transport;

static void fake_unref(co_fake_kube *f)
{
    pthread_mutex_lock(&f->lock);
    int last = --f->refs == 0;
    pthread_mutex_unlock(&f->lock);
    if (!last) {
        return;
    }
    for (size_t i = 0; i < f->nroutes; i++) {
        free(f->routes[i].method);
        free(f->routes[i].prefix);
        for (size_t k = 0; k < f->routes[i].nchunks; k++) {
            free(f->routes[i].chunks[k]);
        }
        free(f->routes[i].chunks);
    }
    free(f->routes);
    for (size_t i = 0; i < f->ncalls; i++) {
        co_fake_call_dispose(&f->calls[i]);
    }
    free(f->calls);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

co_fake_kube *co_fake_kube_new(void)
{
    co_fake_kube *f = co_xcalloc(1, sizeof(*f));
    pthread_mutex_init(&f->lock, NULL);
    f->refs = 1;
    f->fault_after = -1;
    return f;
}

void co_fake_kube_free(co_fake_kube *f)
{
    if (f) {
        fake_unref(f);
    }
}

void co_fake_call_dispose(co_fake_call *c)
{
    free(c->method);
    free(c->path);
    free(c->body);
    free(c->headers);
    memset(c, 0, sizeof(*c));
}

static void add_route(co_fake_kube *f,
                      const char *method,
                      const char *prefix,
                      const co_fake_answer *a,
                      int once)
{
    route r = {0};
    r.method = co_xstrdup(method);
    r.prefix = co_xstrdup(prefix ? prefix : "");
    r.once = once;
    r.status = a->status;
    r.error = a->error;
    r.not_sent = a->not_sent;
    r.truncate = a->truncate;
    r.hang = a->hang;
    r.retry_after_s = a->retry_after_s;
    if (a->chunks) {
        r.chunks = co_xcalloc(a->nchunks ? a->nchunks : 1, sizeof(char *));
        for (size_t i = 0; i < a->nchunks; i++) {
            r.chunks[i] = co_xstrdup(a->chunks[i]);
        }
        r.nchunks = a->nchunks;
    } else if (a->body) {
        r.chunks = co_xcalloc(1, sizeof(char *));
        r.chunks[0] = co_xstrdup(a->body);
        r.nchunks = 1;
    }
    pthread_mutex_lock(&f->lock);
    f->routes = co_xreallocarray(f->routes, f->nroutes + 1, sizeof(route));
    f->routes[f->nroutes++] = r;
    pthread_mutex_unlock(&f->lock);
}

void co_fake_kube_on(co_fake_kube *f,
                     const char *method,
                     const char *prefix,
                     const co_fake_answer *a)
{
    add_route(f, method, prefix, a, 0);
}

void co_fake_kube_once(co_fake_kube *f,
                       const char *method,
                       const char *prefix,
                       const co_fake_answer *a)
{
    add_route(f, method, prefix, a, 1);
}

void co_fake_kube_json(co_fake_kube *f,
                       const char *method,
                       const char *prefix,
                       int status,
                       const char *body)
{
    co_fake_answer a = {.status = status, .body = body};
    add_route(f, method, prefix, &a, 0);
}

void co_fake_kube_fail_after(co_fake_kube *f,
                             int after,
                             int repeat,
                             co_fake_fault fault,
                             int http_code)
{
    pthread_mutex_lock(&f->lock);
    f->fault_after = after;
    f->fault_repeat = repeat;
    f->fault_kind = (int)fault;
    f->fault_http = http_code;
    f->call_counter = 0;
    pthread_mutex_unlock(&f->lock);
}

size_t co_fake_kube_ncalls(co_fake_kube *f)
{
    pthread_mutex_lock(&f->lock);
    size_t n = f->ncalls;
    pthread_mutex_unlock(&f->lock);
    return n;
}

int co_fake_kube_nfaults(co_fake_kube *f)
{
    pthread_mutex_lock(&f->lock);
    int n = f->faults;
    pthread_mutex_unlock(&f->lock);
    return n;
}

co_fake_call co_fake_kube_call(co_fake_kube *f, size_t i)
{
    co_fake_call c = {0};
    pthread_mutex_lock(&f->lock);
    if (i < f->ncalls) {
        c.method = co_xstrdup(f->calls[i].method);
        c.path = co_xstrdup(f->calls[i].path);
        c.body = co_xstrdup(f->calls[i].body);
        c.headers = co_xstrdup(f->calls[i].headers);
    }
    pthread_mutex_unlock(&f->lock);
    return c;
}

size_t co_fake_kube_count(co_fake_kube *f, const char *method, const char *needle)
{
    size_t n = 0;
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->ncalls; i++) {
        if ((!method || strcmp(method, f->calls[i].method) == 0) &&
            strstr(f->calls[i].path, needle)) {
            n++;
        }
    }
    pthread_mutex_unlock(&f->lock);
    return n;
}

void co_fake_kube_clear_calls(co_fake_kube *f)
{
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->ncalls; i++) {
        co_fake_call_dispose(&f->calls[i]);
    }
    f->ncalls = 0;
    pthread_mutex_unlock(&f->lock);
}

/* --- sending --------------------------------------------------------------------------------- */

static void record(co_fake_kube *f, const co_kube_request *req)
{
    co_buf h = CO_BUF_INIT(SIZE_MAX);
    for (size_t i = 0; i < req->nheaders; i++) {
        if (co_buf_puts(&h, req->headers[i]) < 0 || co_buf_putc(&h, '\n') < 0) {
            abort();
        }
    }
    co_fake_call c = {
        co_xstrdup(req->method),
        co_xstrdup(req->path),
        req->body ? co_xmemdup(req->body, req->body_len) : co_xstrdup(""),
        co_buf_take(&h, NULL),
    };
    f->calls = co_xreallocarray(f->calls, f->ncalls + 1, sizeof(co_fake_call));
    f->calls[f->ncalls++] = c;
}

static const char *reason_for(int code)
{
    switch (code) {
    case 404:
        return "NotFound";
    case 409:
        return "Conflict";
    case 410:
        return "Expired";
    case 422:
        return "Invalid";
    case 429:
        return "TooManyRequests";
    case 500:
        return "InternalError";
    case 503:
        return "ServiceUnavailable";
    default:
        return "";
    }
}

/* Delivers @p text as the body: to the stream callback for 2xx with a stream, else buffered. */
static int deliver(const co_kube_request *req, co_kube_response *resp, const char *text, size_t len)
{
    if (req->stream && resp->status >= 200 && resp->status < 300) {
        return len ? req->stream(text, len, req->stream_payload) : 0;
    }
    if (co_buf_put(&resp->body, text, len) < 0) {
        return co_error_set(CO_ETOOBIG, "%s %s: response body exceeds %zu bytes", req->method,
                            req->path, resp->body.max);
    }
    return 0;
}

/* A prefix matches the start of the path; one ending in '$' must equal the path without its
 * query. */
static int path_matches(const char *prefix, const char *path)
{
    size_t n = strlen(prefix);
    if (n > 0 && prefix[n - 1] == '$') {
        const char *q = strchr(path, '?');
        size_t plen = q ? (size_t)(q - path) : strlen(path);
        return plen == n - 1 && strncmp(path, prefix, n - 1) == 0;
    }
    return strncmp(path, prefix, n) == 0;
}

static int fake_send(co_kube_transport *self, const co_kube_request *req, co_kube_response *resp)
{
    co_fake_kube *f = ((fake_transport *)self)->f;
    route r = {0};
    int fault = 0, fault_http = 0, found = 0;
    pthread_mutex_lock(&f->lock);
    record(f, req);
    if (f->fault_after >= 0) {
        int n = ++f->call_counter;
        if (n > f->fault_after && n <= f->fault_after + f->fault_repeat) {
            fault = f->fault_kind;
            fault_http = f->fault_http;
            f->faults++;
        }
    }
    if (!fault) {
        /* one-shot answers first, oldest first; then persistent ones, newest first */
        for (size_t i = 0; i < f->nroutes && !found; i++) {
            route *c = &f->routes[i];
            if (c->once && !c->used && (!c->method || strcmp(c->method, req->method) == 0) &&
                path_matches(c->prefix, req->path)) {
                c->used = 1;
                r = *c;
                found = 1;
            }
        }
        for (size_t i = f->nroutes; i > 0 && !found; i--) {
            route *c = &f->routes[i - 1];
            if (!c->once && (!c->method || strcmp(c->method, req->method) == 0) &&
                path_matches(c->prefix, req->path)) {
                r = *c;
                found = 1;
            }
        }
    }
    /* copy the chunks so that the lock can be released while streaming */
    char **chunks = NULL;
    if (found && r.nchunks) {
        chunks = co_xcalloc(r.nchunks, sizeof(char *));
        for (size_t i = 0; i < r.nchunks; i++) {
            chunks[i] = co_xstrdup(r.chunks[i]);
        }
    }
    pthread_mutex_unlock(&f->lock);

    int rc = 0;
    if (fault == CO_FAKE_REFUSED) {
        resp->not_sent = 1;
        rc = co_error_set(CO_EUNAVAILABLE, "%s %s: cannot connect: Connection refused (injected)",
                          req->method, req->path);
        goto done;
    }
    if (fault == CO_FAKE_TIMEOUT) {
        rc = co_error_set(CO_ETIMEOUT, "%s %s: timed out (injected)", req->method, req->path);
        goto done;
    }
    if (fault == CO_FAKE_HTTP) {
        char body[512];
        snprintf(body, sizeof(body),
                 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                 "\"message\":\"injected %d\",\"reason\":\"%s\",\"code\":%d}",
                 fault_http, reason_for(fault_http), fault_http);
        resp->status = fault_http;
        if (fault_http == 429) {
            resp->retry_after_s = 0;
        }
        rc = deliver(req, resp, body, strlen(body));
        goto done;
    }
    if (fault == CO_FAKE_TRUNCATED) {
        /* the answer the route would give, cut in the middle */
        r.truncate = 1;
        if (!found) {
            r.status = 200;
        }
    } else if (!found) {
        resp->status = 404;
        const char *nf = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                         "\"message\":\"no fake route\",\"reason\":\"NotFound\",\"code\":404}";
        rc = deliver(req, resp, nf, strlen(nf));
        goto done;
    }
    if (r.status == 0 && !fault) {
        resp->not_sent = r.not_sent;
        rc = co_error_set(r.error ? r.error : CO_EUNAVAILABLE, "%s %s: scripted failure",
                          req->method, req->path);
        goto done;
    }
    resp->status = r.status;
    resp->retry_after_s = r.retry_after_s > 0 ? r.retry_after_s : -1;
    for (size_t i = 0; chunks && i < r.nchunks && rc == 0; i++) {
        size_t len = strlen(chunks[i]);
        if (r.truncate) {
            rc = deliver(req, resp, chunks[i], len / 2);
            if (rc == 0) {
                rc = co_error_set(CO_EUNAVAILABLE,
                                  "%s %s: connection failed: transfer closed "
                                  "with bytes remaining (injected)",
                                  req->method, req->path);
            }
            break;
        }
        rc = deliver(req, resp, chunks[i], len);
    }
    if (rc == 0 && r.truncate && r.nchunks == 0) {
        rc = co_error_set(CO_EUNAVAILABLE, "%s %s: connection failed (injected)", req->method,
                          req->path);
    }
    if (rc == 0 && r.hang) {
        while (req->cancelled && !req->cancelled(req->cancel_payload)) {
            struct timespec ts = {0, 5L * 1000000};
            nanosleep(&ts, NULL);
        }
        if (req->cancelled) {
            rc = co_error_set(CO_ECANCELED, "%s %s: cancelled", req->method, req->path);
        }
    }
done:
    if (chunks) {
        for (size_t i = 0; i < r.nchunks; i++) {
            free(chunks[i]);
        }
        free(chunks);
    }
    return rc;
}

static void fake_transport_free(co_kube_transport *self)
{
    fake_transport *t = (fake_transport *)self;
    fake_unref(t->f);
    free(t);
}

co_kube_transport *co_fake_kube_transport(co_fake_kube *f)
{
    fake_transport *t = co_xcalloc(1, sizeof(*t));
    t->base.send = fake_send;
    t->base.free = fake_transport_free;
    t->f = f;
    pthread_mutex_lock(&f->lock);
    f->refs++;
    pthread_mutex_unlock(&f->lock);
    return &t->base;
}

co_kube_config *co_fake_kube_config(void)
{
    static const char doc[] =
        "{\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://fake.invalid:6443\"}}],"
        "\"users\":[{\"name\":\"u\",\"user\":{\"token\":\"fake-token\"}}],"
        "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\",\"user\":\"u\","
        "\"namespace\":\"ns1\"}}],\"current-context\":\"x\"}";
    struct json_object *obj = json_tokener_parse(doc);
    co_kube_config *cfg = NULL;
    if (!obj || co_kube_config_from_json(&cfg, obj, NULL, NULL) < 0) {
        abort();
    }
    json_object_put(obj);
    return cfg;
}

co_kube_client *co_fake_kube_client(co_fake_kube *f)
{
    co_kube_config *cfg = co_fake_kube_config();
    co_kube_client_options opts = CO_KUBE_CLIENT_OPTIONS_INIT;
    opts.qps = -1;
    opts.max_retries = 3;
    opts.retry_base_ms = 2;
    co_kube_client *c = NULL;
    if (co_kube_client_new_with_transport(&c, cfg, co_fake_kube_transport(f), &opts) < 0) {
        abort();
    }
    co_kube_config_free(cfg);
    return c;
}

void co_fake_kube_discovery(co_fake_kube *f)
{
    co_fake_kube_json(
        f, "GET", "/api/v1$", 200,
        "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
        "{\"name\":\"configmaps\",\"namespaced\":true,\"kind\":\"ConfigMap\"},"
        "{\"name\":\"namespaces\",\"namespaced\":false,\"kind\":\"Namespace\"},"
        "{\"name\":\"namespaces/status\",\"namespaced\":false,\"kind\":\"Namespace\"},"
        "{\"name\":\"secrets\",\"namespaced\":true,\"kind\":\"Secret\"},"
        "{\"name\":\"events\",\"namespaced\":true,\"kind\":\"Event\"},"
        "{\"name\":\"pods\",\"namespaced\":true,\"kind\":\"Pod\"},"
        "{\"name\":\"pods/status\",\"namespaced\":true,\"kind\":\"Pod\"}]}");
    co_fake_kube_json(f, "GET", "/apis/apps/v1$", 200,
                      "{\"kind\":\"APIResourceList\",\"groupVersion\":\"apps/v1\",\"resources\":["
                      "{\"name\":\"deployments\",\"namespaced\":true,\"kind\":\"Deployment\"}]}");
    co_fake_kube_json(f, "GET", "/apis/coordination.k8s.io/v1$", 200,
                      "{\"kind\":\"APIResourceList\",\"groupVersion\":\"coordination.k8s.io/v1\","
                      "\"resources\":[{\"name\":\"leases\",\"namespaced\":true,\"kind\":"
                      "\"Lease\"}]}");
}
