/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The loopback HTTP test server (test_httpd.h), on libmicrohttpd with its internal polling
 * thread. Routes live in a small array under a mutex.
 */
#include "tests/support/test_httpd.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <microhttpd.h>

#include "co/util/common.h"
#include "tests/support/test_support.h"

#define MAX_ROUTES 64
#define MAX_BODIES 256       /* request bodies kept per route */
#define MAX_BODY   (1 << 20) /* bytes kept of one request body */

/* A request body as received, with its Content-Type. */
typedef struct received {
    char *body;
    size_t len;
    char *content_type;
} received;

/* Per-request state while a body arrives. */
typedef struct request {
    char *body;
    size_t len;
} request;

typedef struct route {
    char *path;
    int status;
    char *body;
    size_t len;
    size_t send; /* bytes actually sent (len unless truncated) */
    char *headers;
    int fail_next;
    int hits;
    int head_hits;
    int get_hits;
    int post_hits;
    int delay_ms; /* before answering */
    received bodies[MAX_BODIES];
    int nbodies;
} route;

struct test_httpd {
    struct MHD_Daemon *d;
    char url[64];
    pthread_mutex_t mu;
    route routes[MAX_ROUTES];
    size_t nroutes;
    char *cert_pem, *key_pem; /* TLS only: libmicrohttpd keeps pointers to them */
    char host[INET_ADDRSTRLEN];
    int connections; /* accepted, under mu */
};

static route *find(test_httpd *s, const char *path, int create)
{
    for (size_t i = 0; i < s->nroutes; i++) {
        if (strcmp(s->routes[i].path, path) == 0) {
            return &s->routes[i];
        }
    }
    if (!create) {
        return NULL;
    }
    if (s->nroutes == MAX_ROUTES) {
        fail_msg("test_httpd: too many routes");
    }
    route *r = &s->routes[s->nroutes++];
    memset(r, 0, sizeof(*r));
    r->path = co_xstrdup(path);
    r->status = 404;
    return r;
}

typedef struct body_reader {
    char *data;
    size_t send;
} body_reader;

static ssize_t read_body(void *cls, uint64_t pos, char *buf, size_t max)
{
    body_reader *b = cls;
    if (pos >= b->send) {
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = b->send - (size_t)pos;
    if (n > max) {
        n = max;
    }
    memcpy(buf, b->data + pos, n);
    return (ssize_t)n;
}

static void free_body(void *cls)
{
    body_reader *b = cls;
    free(b->data);
    free(b);
}

static void add_headers(struct MHD_Response *resp, const char *headers)
{
    if (!headers) {
        return;
    }
    char *copy = co_xstrdup(headers);
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *colon = strchr(line, ':');
        if (!colon) {
            continue;
        }
        *colon = '\0';
        const char *value = colon + 1;
        while (*value == ' ') {
            value++;
        }
        MHD_add_response_header(resp, line, value);
    }
    free(copy);
}

static enum MHD_Result handle(void *cls,
                              struct MHD_Connection *conn,
                              const char *url,
                              const char *method,
                              const char *version,
                              const char *upload,
                              size_t *upload_size,
                              void **con_cls)
{
    (void)version;
    test_httpd *s = cls;
    if (!*con_cls) {
        *con_cls = co_xcalloc(1, sizeof(request)); /* first call: headers only */
        return MHD_YES;
    }
    request *rq = *con_cls;
    if (*upload_size) {
        size_t n = *upload_size;
        if (rq->len + n <= MAX_BODY) {
            rq->body = co_xrealloc(rq->body, rq->len + n + 1);
            memcpy(rq->body + rq->len, upload, n);
            rq->len += n;
            rq->body[rq->len] = '\0';
        }
        *upload_size = 0;
        return MHD_YES;
    }
    struct MHD_Response *resp = NULL;
    int status;
    pthread_mutex_lock(&s->mu);
    route *r = find(s, url, 0);
    if (r && r->delay_ms > 0) {
        int ms = r->delay_ms;
        pthread_mutex_unlock(&s->mu);
        usleep((useconds_t)ms * 1000);
        pthread_mutex_lock(&s->mu);
        r = find(s, url, 0);
    }
    if (!r) {
        status = 404;
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    } else {
        r->hits++;
        r->head_hits += strcmp(method, "HEAD") == 0;
        r->get_hits += strcmp(method, "GET") == 0;
        r->post_hits += strcmp(method, "POST") == 0;
        if (r->nbodies < MAX_BODIES) {
            received *b = &r->bodies[r->nbodies++];
            b->body = rq->body ? rq->body : co_xstrdup("");
            b->len = rq->len;
            rq->body = NULL;
            const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
            b->content_type = ct ? co_xstrdup(ct) : NULL;
        }
        if (r->fail_next > 0) {
            r->fail_next--;
            status = 503;
            resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        } else {
            status = r->status;
            if (r->send < r->len) {
                body_reader *b = co_xcalloc(1, sizeof(*b));
                b->data = co_xmemdup(r->body, r->len);
                b->send = r->send;
                resp = MHD_create_response_from_callback(r->len, 4096, read_body, b, free_body);
            } else {
                resp = MHD_create_response_from_buffer(r->len, r->body ? r->body : (void *)"",
                                                       MHD_RESPMEM_MUST_COPY);
            }
            add_headers(resp, r->headers);
        }
    }
    pthread_mutex_unlock(&s->mu);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void on_completed(void *cls,
                         struct MHD_Connection *conn,
                         void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    request *rq = *con_cls;
    if (rq) {
        free(rq->body);
        free(rq);
        *con_cls = NULL;
    }
}

static void on_connection(void *cls,
                          struct MHD_Connection *conn,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    (void)conn;
    (void)socket_context;
    test_httpd *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        pthread_mutex_lock(&s->mu);
        s->connections++;
        pthread_mutex_unlock(&s->mu);
    }
}

/* Starts the daemon over plain HTTP, or over TLS when s->cert_pem is set. */
static test_httpd *start(test_httpd *s, unsigned idle_timeout_s)
{
    pthread_mutex_init(&s->mu, NULL);
    if (!s->host[0]) {
        snprintf(s->host, sizeof(s->host), "127.0.0.1");
    }
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    if (inet_pton(AF_INET, s->host, &addr.sin_addr) != 1) {
        fail_msg("test_httpd: %s is not an IPv4 address", s->host);
    }
    addr.sin_port = 0;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION;
    if (s->cert_pem) {
        s->d = MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR,
                                &addr, MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout_s,
                                MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                                MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                MHD_OPTION_HTTPS_MEM_CERT, s->cert_pem, MHD_OPTION_HTTPS_MEM_KEY,
                                s->key_pem, MHD_OPTION_END);
    } else {
        s->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, &addr,
                                MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout_s,
                                MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                                MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
    }
    if (!s->d) {
        fail_msg("test_httpd: cannot start libmicrohttpd on %s", s->host);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(s->url, sizeof(s->url), "%s://%s:%u", s->cert_pem ? "https" : "http", s->host,
             (unsigned)info->port);
    return s;
}

test_httpd *test_httpd_start(void)
{
    return start(co_xcalloc(1, sizeof(test_httpd)), 30u);
}

test_httpd *test_httpd_start_at(const char *ipv4)
{
    test_httpd *s = co_xcalloc(1, sizeof(test_httpd));
    snprintf(s->host, sizeof(s->host), "%s", ipv4);
    return start(s, 30u);
}

int test_httpd_connections(test_httpd *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->connections;
    pthread_mutex_unlock(&s->mu);
    return n;
}

test_httpd *test_httpd_start_tls(const char *cert_pem, const char *key_pem, unsigned idle_timeout_s)
{
    test_httpd *s = co_xcalloc(1, sizeof(*s));
    s->cert_pem = co_xstrdup(cert_pem);
    s->key_pem = co_xstrdup(key_pem);
    return start(s, idle_timeout_s ? idle_timeout_s : 30u);
}

void test_httpd_stop(test_httpd *s)
{
    if (!s) {
        return;
    }
    MHD_stop_daemon(s->d);
    for (size_t i = 0; i < s->nroutes; i++) {
        free(s->routes[i].path);
        free(s->routes[i].body);
        free(s->routes[i].headers);
        for (int j = 0; j < s->routes[i].nbodies; j++) {
            free(s->routes[i].bodies[j].body);
            free(s->routes[i].bodies[j].content_type);
        }
    }
    pthread_mutex_destroy(&s->mu);
    free(s->cert_pem);
    if (s->key_pem) {
        co_free_secret(s->key_pem, strlen(s->key_pem) + 1);
    }
    free(s);
}

const char *test_httpd_url(const test_httpd *s)
{
    return s->url;
}

static void set_route(test_httpd *s,
                      const char *path,
                      int status,
                      const void *body,
                      size_t len,
                      size_t send,
                      const char *headers)
{
    pthread_mutex_lock(&s->mu);
    route *r = find(s, path, 1);
    free(r->body);
    free(r->headers);
    r->status = status;
    r->body = len ? co_xmemdup(body, len) : NULL;
    r->len = len;
    r->send = send;
    r->headers = co_xstrdup(headers);
    pthread_mutex_unlock(&s->mu);
}

void test_httpd_route(test_httpd *s,
                      const char *path,
                      int status,
                      const void *body,
                      size_t len,
                      const char *headers)
{
    set_route(s, path, status, body, len, len, headers);
}

void test_httpd_route_truncated(test_httpd *s,
                                const char *path,
                                const void *body,
                                size_t len,
                                size_t send)
{
    set_route(s, path, 200, body, len, send, NULL);
}

void test_httpd_fail_next(test_httpd *s, const char *path, int n)
{
    pthread_mutex_lock(&s->mu);
    find(s, path, 1)->fail_next = n;
    pthread_mutex_unlock(&s->mu);
}

int test_httpd_hits(test_httpd *s, const char *path)
{
    pthread_mutex_lock(&s->mu);
    route *r = find(s, path, 0);
    int n = r ? r->hits : 0;
    pthread_mutex_unlock(&s->mu);
    return n;
}

int test_httpd_hits_method(test_httpd *s, const char *path, const char *method)
{
    pthread_mutex_lock(&s->mu);
    route *r = find(s, path, 0);
    int n = !r                            ? 0
            : strcmp(method, "HEAD") == 0 ? r->head_hits
            : strcmp(method, "POST") == 0 ? r->post_hits
                                          : r->get_hits;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void test_httpd_delay(test_httpd *s, const char *path, int ms)
{
    pthread_mutex_lock(&s->mu);
    find(s, path, 1)->delay_ms = ms;
    pthread_mutex_unlock(&s->mu);
}

char *test_httpd_body(test_httpd *s, const char *path, int n, char **content_type_out)
{
    char *body = NULL;
    pthread_mutex_lock(&s->mu);
    route *r = find(s, path, 0);
    if (r && n >= 0 && n < r->nbodies) {
        body = co_xmemdup(r->bodies[n].body, r->bodies[n].len + 1);
        if (content_type_out) {
            *content_type_out = co_xstrdup(r->bodies[n].content_type);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return body;
}
