/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The libcurl transport. libcurl does not support sharing one connection cache between
 * threads that transfer concurrently (CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT), so
 * connections travel with easy handles instead: an idle handle keeps its open connection
 * (curl_easy_reset() leaves live connections alone), handles wait in a pool, and each request
 * borrows one, so a connection opened by one thread is reused by the next thread that sends.
 * DNS results and TLS sessions are shared between all handles through a share object with one
 * lock per data kind. Credentials reach libcurl only as in-memory blobs. co_kube_client_new(),
 * the client with this transport, lives here too. For a configuration from an untrusted
 * kubeconfig every socket passes the network deny-list before it connects (net.h).
 */
#include "co/kube/kube_transport.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/kube/kube_client.h"
#include "co/util/net.h"
#include "kube_int.h"

/* Idle easy handles kept for reuse; more concurrent requests open more, then close them. */
#define POOL_MAX 32

typedef struct curl_transport {
    co_kube_transport base;
    CURLSH *share;
    pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
    pthread_mutex_t pool_lock;
    CURL *idle[POOL_MAX];
    size_t nidle;
    char *base_url; /* scheme://host:port[/prefix], the host replaced by tls-server-name */
    struct curl_slist *connect_to;
    co_kube_blob ca, cert, key;
    int insecure;
    char *proxy;
    int untrusted;      /* the configuration's: connections pass the deny-list */
    char *proxied_host; /* untrusted and a proxy may carry requests: the server's host */
    /* counters for tests and benchmarks (guarded by pool_lock) */
    unsigned long requests, connects, h2;
} curl_transport;

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* --- share locks -------------------------------------------------------------------------- */

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *userp)
{
    (void)h;
    (void)access;
    curl_transport *t = userp;
    if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST) {
        pthread_mutex_lock(&t->share_locks[data]);
    }
}

static void share_unlock(CURL *h, curl_lock_data data, void *userp)
{
    (void)h;
    curl_transport *t = userp;
    if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST) {
        pthread_mutex_unlock(&t->share_locks[data]);
    }
}

/* --- one transfer ------------------------------------------------------------------------- */

typedef struct xfer {
    CURL *h;
    const co_kube_request *req;
    co_kube_response *resp;
    int status_known;
    int streaming; /* 2xx and a stream callback */
    int err;       /* our own reason for aborting */
    char errmsg[CO_MAX_ERROR_MESSAGE / 4];
} xfer;

static void learn_status(xfer *x)
{
    if (x->status_known) {
        return;
    }
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    x->resp->status = (int)code;
    x->status_known = 1;
    x->streaming = x->req->stream && code >= 200 && code < 300;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *userp)
{
    xfer *x = userp;
    size_t len = size * nmemb;
    learn_status(x);
    if (x->streaming) {
        int rc = x->req->stream(data, len, x->req->stream_payload);
        if (rc < 0) {
            x->err = rc;
            snprintf(x->errmsg, sizeof(x->errmsg), "%s", co_error_last());
            return 0;
        }
        return len;
    }
    if (co_buf_put(&x->resp->body, data, len) < 0) {
        x->err = CO_ETOOBIG;
        snprintf(x->errmsg, sizeof(x->errmsg), "response body exceeds %zu bytes",
                 x->resp->body.max);
        return 0;
    }
    return len;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userp)
{
    xfer *x = userp;
    size_t len = size * nmemb;
    static const char name[] = "retry-after:";
    if (len > sizeof(name) - 1 && strncasecmp(data, name, sizeof(name) - 1) == 0) {
        char val[32];
        size_t n = len - (sizeof(name) - 1);
        if (n >= sizeof(val)) {
            n = sizeof(val) - 1;
        }
        memcpy(val, data + sizeof(name) - 1, n);
        val[n] = '\0';
        char *end = NULL;
        long secs = strtol(val, &end, 10);
        if (end != val && secs >= 0) {
            x->resp->retry_after_s = secs;
        }
    }
    return len;
}

static int
on_progress(void *userp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    xfer *x = userp;
    if (x->req->cancelled && x->req->cancelled(x->req->cancel_payload)) {
        x->err = CO_ECANCELED;
        snprintf(x->errmsg, sizeof(x->errmsg), "request cancelled");
        return 1;
    }
    return 0;
}

static CURL *take_handle(curl_transport *t)
{
    CURL *h = NULL;
    pthread_mutex_lock(&t->pool_lock);
    if (t->nidle > 0) {
        h = t->idle[--t->nidle];
    }
    pthread_mutex_unlock(&t->pool_lock);
    if (!h) {
        h = curl_easy_init();
        CO_ASSERT(h);
    } else {
        curl_easy_reset(h); /* keeps the live connection, DNS and TLS caches */
    }
    return h;
}

static void give_handle(curl_transport *t, CURL *h)
{
    pthread_mutex_lock(&t->pool_lock);
    if (t->nidle < POOL_MAX) {
        t->idle[t->nidle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&t->pool_lock);
    if (h) {
        curl_easy_cleanup(h);
    }
}

static void set_blob(CURL *h, CURLoption opt, const co_kube_blob *b)
{
    struct curl_blob blob = {b->data, b->len, CURL_BLOB_COPY};
    curl_easy_setopt(h, opt, &blob);
}

/* An untrusted configuration's sockets, to its server or to a proxy, pass the deny-list before
 * they exist. */
static curl_socket_t on_open_socket(void *userp, curlsocktype purpose, struct curl_sockaddr *a)
{
    xfer *x = userp;
    (void)purpose;
    if (co_net_deny_check(&a->addr, a->addrlen) < 0) {
        x->err = CO_EAUTH;
        snprintf(x->errmsg, sizeof(x->errmsg), "%s", co_error_last());
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static int map_curl_error(CURLcode cc, xfer *x, const char *errbuf)
{
    const char *m = x->req->method;
    const char *p = x->req->path;
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);
    if (x->err) {
        return co_error_set(x->err, "%s %s: %s", m, p, x->errmsg);
    }
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
        x->resp->not_sent = 1;
        return co_error_set(CO_EUNAVAILABLE, "%s %s: cannot connect: %s", m, p, why);
    case CURLE_OPERATION_TIMEDOUT:
        return co_error_set(CO_ETIMEOUT, "%s %s: timed out: %s", m, p, why);
    case CURLE_ABORTED_BY_CALLBACK:
        return co_error_set(CO_ECANCELED, "%s %s: cancelled", m, p);
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
        return co_error_set(CO_EUNAVAILABLE, "%s %s: connection failed: %s", m, p, why);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
        return co_error_set(CO_ERROR, "%s %s: TLS: %s", m, p, why);
    default:
        return co_error_set(CO_ERROR, "%s %s: %s", m, p, why);
    }
}

static int curl_send(co_kube_transport *self, const co_kube_request *req, co_kube_response *resp)
{
    curl_transport *t = (curl_transport *)self;
    CURL *h = take_handle(t);
    struct curl_slist *headers = NULL;
    char *url = co_xasprintf("%s%s", t->base_url, req->path);
    char errbuf[CURL_ERROR_SIZE];
    errbuf[0] = '\0';
    xfer x = {.h = h, .req = req, .resp = resp};
    int rc = 0;

    for (size_t i = 0; i < req->nheaders; i++) {
        headers = curl_slist_append(headers, req->headers[i]);
        CO_ASSERT(headers);
    }
    /* never wait for "100 Continue" before sending a large body */
    headers = curl_slist_append(headers, "Expect:");
    CO_ASSERT(headers);

    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_SHARE, t->share);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    /* HTTP/1.1: a connection here carries one transfer at a time, so HTTP/2 would multiplex
     * nothing and only add its framing on both ends (docs/controller-performance.md,
     * "HTTP/1.1 rather than HTTP/2") */
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 15L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    if (t->untrusted) {
        curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
        curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &x);
    }
    if (t->proxied_host && co_net_deny_check_host(t->proxied_host) < 0) {
        /* the proxy, not us, would connect to the server: its host is checked by name */
        rc = co_error_wrap("%s %s", req->method, req->path);
        resp->not_sent = 1;
        goto done;
    }
    if (t->ca.data) {
        set_blob(h, CURLOPT_CAINFO_BLOB, &t->ca);
    }
    if (t->cert.data) {
        set_blob(h, CURLOPT_SSLCERT_BLOB, &t->cert);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        set_blob(h, CURLOPT_SSLKEY_BLOB, &t->key);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (t->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (t->proxy) {
        curl_easy_setopt(h, CURLOPT_PROXY, t->proxy);
    }
    if (t->connect_to) {
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, t->connect_to);
    }
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     req->connect_timeout_ms > 0 ? req->connect_timeout_ms : 10000L);
    if (req->timeout_ms > 0) {
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    }
    if (req->low_speed_time_s > 0) {
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, req->low_speed_time_s);
    }
    if (strcmp(req->method, "GET") != 0) {
        if (strcmp(req->method, "POST") == 0) {
            curl_easy_setopt(h, CURLOPT_POST, 1L);
        } else {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
        }
        if (req->body || strcmp(req->method, "POST") == 0) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        }
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);

    CURLcode cc = curl_easy_perform(h);
    long connects = 0, version = 0;
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
    curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &version);
    pthread_mutex_lock(&t->pool_lock);
    t->requests++;
    t->connects += (unsigned long)connects;
    if (version == CURL_HTTP_VERSION_2_0) {
        t->h2++;
    }
    pthread_mutex_unlock(&t->pool_lock);
    if (cc == CURLE_OK) {
        learn_status(&x);
        if (resp->status == 0) {
            rc = co_error_set(CO_EUNAVAILABLE, "%s %s: no HTTP answer", req->method, req->path);
        }
    } else {
        rc = map_curl_error(cc, &x, errbuf);
    }
done:
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    give_handle(t, h);
    curl_slist_free_all(headers);
    free(url);
    return rc;
}

static void blob_wipe(co_kube_blob *b)
{
    if (b->data) {
        co_free_secret(b->data, b->len + 1);
    }
    b->data = NULL;
    b->len = 0;
}

static void curl_free_transport(co_kube_transport *self)
{
    curl_transport *t = (curl_transport *)self;
    if (!t) {
        return;
    }
    for (size_t i = 0; i < t->nidle; i++) {
        curl_easy_cleanup(t->idle[i]);
    }
    if (t->share) {
        curl_share_cleanup(t->share);
    }
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) {
        pthread_mutex_destroy(&t->share_locks[i]);
    }
    pthread_mutex_destroy(&t->pool_lock);
    curl_slist_free_all(t->connect_to);
    blob_wipe(&t->ca);
    blob_wipe(&t->cert);
    blob_wipe(&t->key);
    free(t->base_url);
    free(t->proxy);
    free(t->proxied_host);
    free(t);
}

static void copy_blob(co_kube_blob *dst, const co_kube_blob *src)
{
    dst->data = src->data ? co_xmemdup(src->data, src->len) : NULL;
    dst->len = src->len;
}

/* Whether libcurl may take a proxy from the environment (it reads these when CURLOPT_PROXY is
 * not set; NO_PROXY exceptions are left to it, the check by name is merely redundant then). */
static int env_proxy_set(void)
{
    static const char *const names[] = {"https_proxy", "HTTPS_PROXY", "http_proxy", "ALL_PROXY",
                                        "all_proxy"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(names); i++) {
        const char *v = getenv(names[i]); // NOLINT(concurrency-mt-unsafe): set before start-up
        if (v && *v) {
            return 1;
        }
    }
    return 0;
}

/* The host of a server URL "scheme://host[:port][/path]", brackets kept for IPv6. */
static char *server_host(const char *server)
{
    const char *host = strstr(server, "://");
    CO_ASSERT(host);
    host += 3;
    size_t len = strcspn(host, "/");
    const char *at = memchr(host, '@', len);
    if (at) {
        len -= (size_t)(at + 1 - host);
        host = at + 1;
    }
    if (host[0] == '[') {
        const char *close = memchr(host, ']', len);
        return co_xstrndup(host, close ? (size_t)(close - host) + 1 : len);
    }
    const char *colon = memchr(host, ':', len);
    return co_xstrndup(host, colon ? (size_t)(colon - host) : len);
}

/* With tls-server-name, requests go to https://<name>:<port>/... so that libcurl sends that
 * name as SNI and checks the certificate against it, while CONNECT_TO sends the connection to
 * the configured host. */
static int setup_server(curl_transport *t, const co_kube_config *cfg)
{
    if (!cfg->tls_server_name) {
        t->base_url = co_xstrdup(cfg->server);
        return 0;
    }
    const char *server = cfg->server;
    const char *host = strstr(server, "://");
    CO_ASSERT(host);
    host += 3;
    const char *path = strchr(host, '/');
    size_t hostport_len = path ? (size_t)(path - host) : strlen(host);
    char *hostport = co_xstrndup(host, hostport_len);
    const char *colon = hostport[0] == '[' ? strchr(hostport, ']') : hostport;
    colon = colon ? strrchr(colon, ':') : NULL;
    const char *port = colon ? colon + 1 : (strncmp(server, "https", 5) == 0 ? "443" : "80");
    size_t hlen = colon ? (size_t)(colon - hostport) : strlen(hostport);
    char *real_host = co_xstrndup(hostport, hlen);
    char *rule = co_xasprintf("%s:%s:%s:%s", cfg->tls_server_name, port, real_host, port);
    t->connect_to = curl_slist_append(NULL, rule);
    CO_ASSERT(t->connect_to);
    t->base_url = co_xasprintf("%.*s://%s:%s%s", (int)(host - 3 - server), server,
                               cfg->tls_server_name, port, path ? path : "");
    free(rule);
    free(real_host);
    free(hostport);
    return 0;
}

int co_kube_transport_curl_new(co_kube_transport **out, const co_kube_config *cfg)
{
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK) {
        return co_error_set(CO_ERROR, "libcurl initialisation failed: %s",
                            curl_easy_strerror(global_rc));
    }
    curl_transport *t = co_xcalloc(1, sizeof(*t));
    t->base.send = curl_send;
    t->base.free = curl_free_transport;
    pthread_mutex_init(&t->pool_lock, NULL);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) {
        pthread_mutex_init(&t->share_locks[i], NULL);
    }
    t->share = curl_share_init();
    if (!t->share) {
        curl_free_transport(&t->base);
        return co_error_set(CO_ERROR, "curl_share_init failed");
    }
    curl_share_setopt(t->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(t->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(t->share, CURLSHOPT_USERDATA, t);
    curl_share_setopt(t->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(t->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    copy_blob(&t->ca, &cfg->ca);
    copy_blob(&t->cert, &cfg->client_cert);
    copy_blob(&t->key, &cfg->client_key);
    t->insecure = cfg->insecure;
    t->proxy = co_xstrdup(cfg->proxy_url);
    t->untrusted = cfg->untrusted;
    if (t->untrusted && (t->proxy || env_proxy_set())) {
        t->proxied_host = server_host(cfg->server);
    }
    setup_server(t, cfg);
    *out = &t->base;
    return 0;
}

int co_kube__curl_stats(const co_kube_transport *tr,
                        unsigned long *requests,
                        unsigned long *connects,
                        unsigned long *h2)
{
    if (!tr || tr->send != curl_send) {
        return CO_EINVALID;
    }
    curl_transport *t = (curl_transport *)tr;
    pthread_mutex_lock(&t->pool_lock);
    *requests = t->requests;
    *connects = t->connects;
    *h2 = t->h2;
    pthread_mutex_unlock(&t->pool_lock);
    return 0;
}

/* Here rather than in kube_client.c: a program that brings its own transport (the webhook's
 * GnuTLS one) then links no libcurl. */
int co_kube_client_new(co_kube_client **out,
                       const co_kube_config *cfg,
                       const co_kube_client_options *opts)
{
    co_kube_transport *t = NULL;
    int rc = co_kube_transport_curl_new(&t, cfg);
    if (rc < 0) {
        return rc;
    }
    return co_kube_client_new_with_transport(out, cfg, t, opts);
}
