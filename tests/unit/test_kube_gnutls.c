/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the GnuTLS transport on loopback: round trips against the libmicrohttpd test
 * server, over plain HTTP and over TLS with certificates made for the test (verification,
 * tls-server-name, insecure-skip-tls-verify, keep-alive and idle connections the server
 * closes), and against a scripted raw-socket server that writes exact bytes (chunked bodies
 * with trailers, truncation, malformed heads, stalls, idle connections the server closes) and
 * counts the connections it accepts, to see keep-alive reuse.
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <json-c/json.h>

#include "certs/certs.h"
#include "co/util/digest.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_transport.h"
#include "shared/src/kube/kube_int.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_support.h"

/* --- a scripted raw-socket server --------------------------------------------------------- */

#define MAX_CONNS 64

typedef struct raw_server raw_server;

/* Answers request number @p nreq (0-based) of a connection on @p fd. @return 1 to keep the
 * connection for another request, 0 to close it. */
typedef int (*raw_script)(raw_server *s, int fd, int nreq);

struct raw_server {
    int lfd;
    char url[64];
    pthread_t acceptor;
    pthread_mutex_t mu;
    raw_script script;
    const char *reply; /* for the scripts that write a fixed answer (guarded by mu) */
    int greet;         /* write the reply as soon as a connection opens, then close it */
    int stop;
    int connections; /* accepted so far */
    int requests;    /* complete requests read */
    char last[8192]; /* the last request, head and body */
    size_t last_len;
    int fds[MAX_CONNS];
    pthread_t threads[MAX_CONNS];
    int nthreads;
};

typedef struct raw_conn {
    raw_server *s;
    int fd;
} raw_conn;

static int stopping(raw_server *s)
{
    pthread_mutex_lock(&s->mu);
    int stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop;
}

static const char *reply_of(raw_server *s)
{
    pthread_mutex_lock(&s->mu);
    const char *reply = s->reply;
    pthread_mutex_unlock(&s->mu);
    return reply;
}

static void set_reply(raw_server *s, const char *reply)
{
    pthread_mutex_lock(&s->mu);
    s->reply = reply;
    pthread_mutex_unlock(&s->mu);
}

/* Sleeps @p ms in small steps, returning early when the server stops. */
static void nap(raw_server *s, long ms)
{
    for (long done = 0; done < ms && !stopping(s); done += 20) {
        struct timespec ts = {0, 20L * 1000000};
        nanosleep(&ts, NULL);
    }
}

static void put(int fd, const char *text)
{
    size_t len = strlen(text);
    while (len > 0) {
        ssize_t n = send(fd, text, len, MSG_NOSIGNAL);
        if (n <= 0) {
            return;
        }
        text += n;
        len -= (size_t)n;
    }
}

/* Reads one request (head and Content-Length body). @return 0, or -1 at the end. */
static int read_request(raw_server *s, int fd)
{
    char buf[8192];
    buf[0] = '\0';
    size_t len = 0;
    char *end = NULL;
    while (!(end = strstr(buf, "\r\n\r\n"))) {
        if (len == sizeof(buf) - 1) {
            return -1;
        }
        ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
        if (n <= 0) {
            return -1;
        }
        len += (size_t)n;
        buf[len] = '\0';
    }
    size_t head = (size_t)(end - buf) + 4;
    size_t body = 0;
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (cl && cl < end) {
        body = strtoul(cl + 17, NULL, 10);
    }
    while (len < head + body && len < sizeof(buf) - 1) {
        ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
        if (n <= 0) {
            return -1;
        }
        len += (size_t)n;
        buf[len] = '\0';
    }
    pthread_mutex_lock(&s->mu);
    memcpy(s->last, buf, len + 1);
    s->last_len = len;
    s->requests++;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static void *serve_conn(void *arg)
{
    raw_conn *rc = arg;
    if (rc->s->greet) {
        put(rc->fd, reply_of(rc->s));
        nap(rc->s, 200);
    }
    for (int nreq = 0; !rc->s->greet && !stopping(rc->s); nreq++) {
        if (read_request(rc->s, rc->fd) < 0 || !rc->s->script(rc->s, rc->fd, nreq)) {
            break;
        }
    }
    shutdown(rc->fd, SHUT_RDWR);
    free(rc);
    return NULL;
}

static void *accept_loop(void *arg)
{
    raw_server *s = arg;
    while (!stopping(s)) {
        struct pollfd p = {.fd = s->lfd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0) {
            continue;
        }
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) {
            continue;
        }
        pthread_mutex_lock(&s->mu);
        if (s->nthreads == MAX_CONNS) {
            pthread_mutex_unlock(&s->mu);
            close(fd);
            continue;
        }
        raw_conn *c = co_xcalloc(1, sizeof(*c));
        c->s = s;
        c->fd = fd;
        s->fds[s->nthreads] = fd;
        s->connections++;
        if (pthread_create(&s->threads[s->nthreads], NULL, serve_conn, c) == 0) {
            s->nthreads++;
        } else {
            close(fd);
            free(c);
        }
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

static raw_server *raw_start(raw_script script, const char *reply)
{
    raw_server *s = co_xcalloc(1, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    s->script = script;
    s->reply = reply;
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s->lfd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t alen = sizeof(addr);
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(listen(s->lfd, 64), 0);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&addr, &alen), 0);
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%u", (unsigned)ntohs(addr.sin_port));
    assert_int_equal(pthread_create(&s->acceptor, NULL, accept_loop, s), 0);
    return s;
}

static void raw_stop(raw_server *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    for (int i = 0; i < s->nthreads; i++) {
        shutdown(s->fds[i], SHUT_RDWR);
    }
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->acceptor, NULL);
    for (int i = 0; i < s->nthreads; i++) {
        pthread_join(s->threads[i], NULL);
        close(s->fds[i]);
    }
    close(s->lfd);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static int raw_connections(raw_server *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->connections;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Writes the fixed reply and keeps the connection. */
static int script_reply(raw_server *s, int fd, int nreq)
{
    (void)nreq;
    put(fd, reply_of(s));
    return 1;
}

/* Writes the fixed reply, then closes without saying so. */
static int script_reply_close(raw_server *s, int fd, int nreq)
{
    (void)nreq;
    put(fd, reply_of(s));
    return 0;
}

/* Answers the first request of a connection; closes at the second without an answer, as a
 * server does whose idle timeout fires just as the request arrives. */
static int script_close_second(raw_server *s, int fd, int nreq)
{
    if (nreq > 0) {
        return 0;
    }
    put(fd, reply_of(s));
    return 1;
}

/* Answers the first request of a connection; the second answer is the fixed reply, after
 * which the connection closes. */
static int script_cut_second(raw_server *s, int fd, int nreq)
{
    put(fd, nreq == 0 ? "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na" : reply_of(s));
    return nreq == 0;
}

/* A chunked answer written in three pieces with pauses between them. */
static int script_pieces(raw_server *s, int fd, int nreq)
{
    (void)nreq;
    put(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nfirst \r\n");
    nap(s, 150);
    put(fd, "7\r\nsecond \r\n");
    nap(s, 150);
    put(fd, "5\r\nthird\r\n0\r\n\r\n");
    return 1;
}

/* The head and two bytes of a ten-byte body, then silence. */
static int script_stall(raw_server *s, int fd, int nreq)
{
    (void)nreq;
    put(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab");
    nap(s, 8000);
    return 0;
}

/* Never answers. */
static int script_silent(raw_server *s, int fd, int nreq)
{
    (void)fd;
    (void)nreq;
    nap(s, 8000);
    return 0;
}

/* --- helpers ------------------------------------------------------------------------------ */

static co_kube_config *config_for(const char *server, const char *cluster_extra)
{
    char *doc = co_xasprintf(
        "{\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"%s\"%s}}],"
        "\"users\":[{\"name\":\"u\",\"user\":{\"token\":\"t\"}}],"
        "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\",\"user\":\"u\"}}],"
        "\"current-context\":\"x\"}",
        server, cluster_extra ? cluster_extra : "");
    struct json_object *obj = json_tokener_parse(doc);
    assert_non_null(obj);
    co_kube_config *cfg = NULL;
    assert_co_pass(co_kube_config_from_json(&cfg, obj, NULL, NULL));
    json_object_put(obj);
    free(doc);
    return cfg;
}

static co_kube_transport *transport_for(const char *server)
{
    co_kube_config *cfg = config_for(server, NULL);
    co_kube_transport *t = NULL;
    assert_co_pass(co_kube_transport_gnutls_new(&t, cfg));
    co_kube_config_free(cfg);
    return t;
}

static co_kube_request get_request(const char *path)
{
    co_kube_request req = {
        .method = "GET",
        .path = path,
        .timeout_ms = 10000,
        .max_response = 1 << 20,
    };
    return req;
}

static int64_t now_ms(void)
{
    return co_kube__now_ms();
}

static unsigned long connects_of(co_kube_transport *t)
{
    unsigned long requests = 0, connects = 0;
    assert_co_pass(co_kube__gnutls_stats(t, &requests, &connects));
    return connects;
}

/* Sends @p req with a fresh response and checks that it succeeded with @p status and @p body. */
static void
expect_answer(co_kube_transport *t, const co_kube_request *req, int status, const char *body)
{
    co_kube_response resp;
    co_kube_response_init(&resp, 1 << 20);
    assert_co_pass(t->send(t, req, &resp));
    assert_int_equal(resp.status, status);
    assert_string_equal(co_buf_cstr(&resp.body), body);
    co_kube_response_dispose(&resp);
}

/* Sends @p req and checks that it fails with @p code; returns the response's not_sent. */
static int expect_failure(co_kube_transport *t, const co_kube_request *req, int code)
{
    co_kube_response resp;
    co_kube_response_init(&resp, 1 << 20);
    assert_co_fail_with(code, t->send(t, req, &resp));
    int not_sent = resp.not_sent;
    co_kube_response_dispose(&resp);
    return not_sent;
}

/* --- against libmicrohttpd ---------------------------------------------------------------- */

static void test_kube_gnutls__get_status_and_body(void **state)
{
    (void)state;
    test_httpd *srv = test_httpd_start();
    test_httpd_route(srv, "/api/v1/x", 200, "{\"kind\":\"X\"}", 12, "X-Other: 1");
    test_httpd_route(srv, "/missing", 404, "{\"code\":404}", 12, NULL);
    co_kube_transport *t = transport_for(test_httpd_url(srv));
    co_kube_request req = get_request("/api/v1/x");
    co_kube_response resp;
    co_kube_response_init(&resp, 1 << 20);
    assert_co_pass(t->send(t, &req, &resp));
    assert_int_equal(resp.status, 200);
    assert_string_equal(co_buf_cstr(&resp.body), "{\"kind\":\"X\"}");
    assert_int_equal(resp.retry_after_s, -1);
    assert_int_equal(resp.not_sent, 0);
    co_kube_response_dispose(&resp);
    /* a 404 is an answer: its body comes back with it */
    req.path = "/missing";
    expect_answer(t, &req, 404, "{\"code\":404}");
    assert_int_equal(test_httpd_hits(srv, "/api/v1/x"), 1);
    t->free(t);
    test_httpd_stop(srv);
}

static void test_kube_gnutls__retry_after_seconds(void **state)
{
    (void)state;
    test_httpd *srv = test_httpd_start();
    test_httpd_route(srv, "/busy", 429, "slow down", 9, "Retry-After: 7");
    test_httpd_route(srv, "/dated", 503, "", 0, "Retry-After: Wed, 21 Oct 2015 07:28:00 GMT");
    co_kube_transport *t = transport_for(test_httpd_url(srv));
    co_kube_request req = get_request("/busy");
    co_kube_response resp;
    co_kube_response_init(&resp, 1 << 20);
    assert_co_pass(t->send(t, &req, &resp));
    assert_int_equal(resp.status, 429);
    assert_int_equal(resp.retry_after_s, 7);
    assert_string_equal(co_buf_cstr(&resp.body), "slow down");
    co_kube_response_dispose(&resp);
    /* an HTTP date is not a number of seconds */
    req.path = "/dated";
    co_kube_response_init(&resp, 1 << 20);
    assert_co_pass(t->send(t, &req, &resp));
    assert_int_equal(resp.status, 503);
    assert_int_equal(resp.retry_after_s, -1);
    co_kube_response_dispose(&resp);
    t->free(t);
    test_httpd_stop(srv);
}

static void test_kube_gnutls__max_response_and_truncation(void **state)
{
    (void)state;
    test_httpd *srv = test_httpd_start();
    char big[1000];
    memset(big, 'b', sizeof(big));
    test_httpd_route(srv, "/big", 200, big, sizeof(big), NULL);
    test_httpd_route_truncated(srv, "/cut", big, sizeof(big), 300);
    co_kube_transport *t = transport_for(test_httpd_url(srv));
    co_kube_request req = get_request("/big");
    req.max_response = 100;
    expect_failure(t, &req, CO_ETOOBIG);
    assert_contains(co_error_last(), "exceeds 100 bytes");
    req.max_response = 1000;
    co_kube_response resp;
    co_kube_response_init(&resp, 1 << 20);
    assert_co_pass(t->send(t, &req, &resp));
    assert_int_equal(resp.body.len, 1000);
    co_kube_response_dispose(&resp);
    req.path = "/cut";
    assert_int_equal(expect_failure(t, &req, CO_EUNAVAILABLE), 0);
    assert_contains(co_error_last(), "cut short");
    t->free(t);
    test_httpd_stop(srv);
}

/* --- against the scripted server ---------------------------------------------------------- */

static void test_kube_gnutls__post_sends_headers_and_body(void **state)
{
    (void)state;
    raw_server *s = raw_start(script_reply, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok");
    co_kube_transport *t = transport_for(s->url);
    const char *headers[] = {"Content-Type: application/json", "Authorization: Bearer abc",
                             "Expect:", "Host: evil"};
    co_kube_request req = get_request("/api/v1/namespaces/a/configmaps?fieldManager=m");
    req.method = "POST";
    req.headers = headers;
    req.nheaders = 4;
    req.body = "{\"a\":1}";
    req.body_len = 7;
    expect_answer(t, &req, 201, "ok");
    assert_contains(s->last, "POST /api/v1/namespaces/a/configmaps?fieldManager=m HTTP/1.1\r\n");
    assert_contains(s->last, "\r\nHost: 127.0.0.1:");
    assert_contains(s->last, "\r\nContent-Type: application/json\r\n");
    assert_contains(s->last, "\r\nAuthorization: Bearer abc\r\n");
    assert_contains(s->last, "\r\nContent-Length: 7\r\n");
    assert_contains(s->last, "\r\nConnection: keep-alive\r\n");
    assert_contains(s->last, "\r\n\r\n{\"a\":1}");
    assert_null(strstr(s->last, "Expect"));
    assert_null(strstr(s->last, "evil"));
    /* a PUT without a body still says how long it is */
    req.method = "PUT";
    req.body = NULL;
    req.body_len = 0;
    expect_answer(t, &req, 201, "ok");
    assert_contains(s->last, "\r\nContent-Length: 0\r\n");
    /* a header with a line break would smuggle another one */
    const char *bad[] = {"X-A: b\r\nX-B: c"};
    req.headers = bad;
    req.nheaders = 1;
    expect_failure(t, &req, CO_EINVALID);
    t->free(t);
    raw_stop(s);
}

static void test_kube_gnutls__server_path_prefix(void **state)
{
    (void)state;
    raw_server *s = raw_start(script_reply, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    char *server = co_xasprintf("%s/k8s/cluster-1", s->url);
    co_kube_transport *t = transport_for(server);
    co_kube_request req = get_request("/api/v1/pods");
    expect_answer(t, &req, 200, "");
    assert_contains(s->last, "GET /k8s/cluster-1/api/v1/pods HTTP/1.1\r\n");
    t->free(t);
    free(server);
    raw_stop(s);
}

static void test_kube_gnutls__chunked_body_with_trailers_and_reuse(void **state)
{
    (void)state;
    raw_server *s = raw_start(script_reply, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                                            "X-Case: 1\r\n\r\n"
                                            "5;name=value\r\nhello\r\n"
                                            "7\r\n, world\r\n"
                                            "0\r\nX-Trailer: yes\r\nX-More: 2\r\n\r\n");
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/chunked");
    expect_answer(t, &req, 200, "hello, world");
    expect_answer(t, &req, 200, "hello, world");
    /* both requests went over one connection */
    assert_int_equal(raw_connections(s), 1);
    assert_int_equal(connects_of(t), 1);
    t->free(t);
    raw_stop(s);
}

static void test_kube_gnutls__header_names_are_case_insensitive(void **state)
{
    (void)state;
    raw_server *s = raw_start(script_reply, "HTTP/1.1 429 Too Many\r\ncontent-LENGTH: 3\r\n"
                                            "retry-after:   12  \r\n\r\nabc");
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/x");
    co_kube_response resp;
    co_kube_response_init(&resp, 1 << 20);
    assert_co_pass(t->send(t, &req, &resp));
    assert_int_equal(resp.status, 429);
    assert_int_equal(resp.retry_after_s, 12);
    assert_string_equal(co_buf_cstr(&resp.body), "abc");
    co_kube_response_dispose(&resp);
    t->free(t);
    raw_stop(s);
}

typedef struct pieces {
    int calls;
    co_buf all;
    int fail_at; /* 0: never */
} pieces;

static int collect(const char *data, size_t len, void *payload)
{
    pieces *p = payload;
    p->calls++;
    if (p->fail_at && p->calls == p->fail_at) {
        return co_error_set(CO_EINVALID, "the consumer gave up");
    }
    return co_buf_put(&p->all, data, len);
}

static void test_kube_gnutls__streamed_body_arrives_in_pieces(void **state)
{
    (void)state;
    raw_server *s = raw_start(script_pieces, NULL);
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/watch");
    req.timeout_ms = 0;
    req.low_speed_time_s = 5;
    pieces p = {.all = CO_BUF_INIT(1 << 20)};
    req.stream = collect;
    req.stream_payload = &p;
    co_kube_response resp;
    co_kube_response_init(&resp, 1 << 20);
    assert_co_pass(t->send(t, &req, &resp));
    assert_int_equal(resp.status, 200);
    assert_int_equal(resp.body.len, 0);
    assert_true(p.calls >= 3);
    assert_string_equal(co_buf_cstr(&p.all), "first second third");
    co_kube_response_dispose(&resp);

    /* the callback's error stops the transfer and is returned */
    co_buf_reset(&p.all);
    p.calls = 0;
    p.fail_at = 2;
    co_kube_response_init(&resp, 1 << 20);
    assert_co_fail_with(CO_EINVALID, t->send(t, &req, &resp));
    assert_contains(co_error_last(), "the consumer gave up");
    assert_int_equal(p.calls, 2);
    co_kube_response_dispose(&resp);
    co_buf_dispose(&p.all);
    t->free(t);
    raw_stop(s);
}

static void test_kube_gnutls__streamed_error_answer_is_buffered(void **state)
{
    (void)state;
    raw_server *s =
        raw_start(script_reply, "HTTP/1.1 410 Gone\r\nContent-Length: 7\r\n\r\nexpired");
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/watch");
    pieces p = {.all = CO_BUF_INIT(1 << 20)};
    req.stream = collect;
    req.stream_payload = &p;
    expect_answer(t, &req, 410, "expired");
    assert_int_equal(p.calls, 0);
    co_buf_dispose(&p.all);
    t->free(t);
    raw_stop(s);
}

static void test_kube_gnutls__chunked_body_over_the_cap(void **state)
{
    (void)state;
    raw_server *s = raw_start(script_reply, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                            "20\r\n0123456789abcdef0123456789abcdef\r\n0\r\n\r\n");
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/big");
    req.max_response = 31;
    expect_failure(t, &req, CO_ETOOBIG);
    req.max_response = 32;
    expect_answer(t, &req, 200, "0123456789abcdef0123456789abcdef");
    t->free(t);
    raw_stop(s);
}

/* Each reply fails with @p code and a message containing @p words. */
static void expect_bad_reply(const char *reply, int code, const char *words)
{
    raw_server *s = raw_start(script_reply_close, reply);
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/bad");
    expect_failure(t, &req, code);
    assert_contains(co_error_last(), words);
    t->free(t);
    raw_stop(s);
}

static void test_kube_gnutls__malformed_and_truncated_answers(void **state)
{
    (void)state;
    expect_bad_reply("", CO_EUNAVAILABLE, "without an answer");
    expect_bad_reply("HTTP/1.1 2", CO_EUNAVAILABLE, "response head");
    expect_bad_reply("SSH-2.0-OpenSSH_9.2\r\n\r\n", CO_ERROR, "malformed HTTP status line");
    expect_bad_reply("HTTP/1.1 abc OK\r\n\r\n", CO_ERROR, "malformed HTTP status line");
    expect_bad_reply("HTTP/2 200\r\n\r\n", CO_ERROR, "malformed HTTP status line");
    expect_bad_reply("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", CO_ERROR, "malformed HTTP header");
    expect_bad_reply("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", CO_ERROR, "Content-Length");
    expect_bad_reply("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab",
                     CO_ERROR, "Content-Length");
    expect_bad_reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", CO_ERROR,
                     "Transfer-Encoding");
    expect_bad_reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", CO_ERROR,
                     "chunk size");
    expect_bad_reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "fffffffffffffffffff\r\n",
                     CO_ERROR, "chunk size");
    expect_bad_reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
                     CO_ERROR, "beyond its size");
    expect_bad_reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc",
                     CO_EUNAVAILABLE, "cut short");
    expect_bad_reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
                     CO_EUNAVAILABLE, "chunk size line");
    expect_bad_reply("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", CO_EUNAVAILABLE,
                     "cut short");

    /* a head over 64 KiB */
    co_buf big = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&big, "HTTP/1.1 200 OK\r\n"));
    for (int i = 0; i < 2000; i++) {
        assert_co_pass(co_buf_printf(&big, "X-Filler-%04d: %040d\r\n", i, i));
    }
    assert_co_pass(co_buf_puts(&big, "\r\n"));
    expect_bad_reply(co_buf_cstr(&big), CO_ERROR, "exceeds");
    co_buf_dispose(&big);
}

static void test_kube_gnutls__body_until_close_and_interim_answers(void **state)
{
    (void)state;
    /* no length, no chunks: the body lasts until the server closes, and is not pooled */
    raw_server *s = raw_start(script_reply_close, "HTTP/1.0 200 OK\r\n\r\nuntil the end");
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/eof");
    expect_answer(t, &req, 200, "until the end");
    expect_answer(t, &req, 200, "until the end");
    assert_int_equal(connects_of(t), 2);
    t->free(t);
    raw_stop(s);

    s = raw_start(script_reply,
                  "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n"
                  "Link: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody");
    t = transport_for(s->url);
    expect_answer(t, &req, 200, "body");
    t->free(t);
    raw_stop(s);
}

static void test_kube_gnutls__connection_refused_is_not_sent(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t alen = sizeof(addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &alen), 0);
    char *url = co_xasprintf("http://127.0.0.1:%u", (unsigned)ntohs(addr.sin_port));
    close(fd); /* nobody listens there now */
    co_kube_transport *t = transport_for(url);
    co_kube_request req = get_request("/x");
    req.method = "POST";
    assert_int_equal(expect_failure(t, &req, CO_EUNAVAILABLE), 1);
    assert_contains(co_error_last(), "cannot connect to 127.0.0.1");
    t->free(t);
    free(url);

    t = transport_for("http://no-such-host.invalid:80");
    assert_int_equal(expect_failure(t, &req, CO_EUNAVAILABLE), 1);
    assert_contains(co_error_last(), "cannot resolve no-such-host.invalid");
    t->free(t);
}

static void test_kube_gnutls__whole_exchange_timeout(void **state)
{
    (void)state;
    raw_server *s = raw_start(script_stall, NULL);
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/stall");
    req.timeout_ms = 400;
    int64_t start = now_ms();
    expect_failure(t, &req, CO_ETIMEOUT);
    int64_t took = now_ms() - start;
    assert_true(took >= 350 && took < 2000);
    assert_contains(co_error_last(), "timed out after 400 ms");
    t->free(t);
    raw_stop(s);
}

static void test_kube_gnutls__low_speed_limit(void **state)
{
    (void)state;
    raw_server *s = raw_start(script_stall, NULL);
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/stall");
    req.timeout_ms = 0;
    req.low_speed_time_s = 1;
    int64_t start = now_ms();
    expect_failure(t, &req, CO_ETIMEOUT);
    int64_t took = now_ms() - start;
    assert_true(took >= 900 && took < 3000);
    assert_contains(co_error_last(), "no data for 1 s");
    t->free(t);
    raw_stop(s);
}

typedef struct cancel_after {
    int64_t at_ms;
    int asked;
} cancel_after;

static int cancelled_yet(void *payload)
{
    cancel_after *c = payload;
    c->asked++;
    return co_kube__now_ms() >= c->at_ms;
}

static void test_kube_gnutls__cancel_stops_a_silent_exchange(void **state)
{
    (void)state;
    raw_server *s = raw_start(script_silent, NULL);
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/silent");
    req.timeout_ms = 0;
    cancel_after c = {.at_ms = now_ms() + 300};
    req.cancelled = cancelled_yet;
    req.cancel_payload = &c;
    int64_t start = now_ms();
    expect_failure(t, &req, CO_ECANCELED);
    int64_t took = now_ms() - start;
    assert_true(took >= 250 && took < 1500);
    assert_true(c.asked >= 2);
    /* already cancelled: nothing goes out */
    assert_int_equal(expect_failure(t, &req, CO_ECANCELED), 1);
    t->free(t);
    raw_stop(s);
}

static void test_kube_gnutls__idle_connection_closed_by_the_server(void **state)
{
    (void)state;
    /* the server closes after each answer without announcing it: noticed before reuse */
    raw_server *s = raw_start(script_reply_close, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na");
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/x");
    req.method = "POST";
    req.body = "{}";
    req.body_len = 2;
    expect_answer(t, &req, 200, "a");
    struct timespec ts = {0, 100L * 1000000};
    nanosleep(&ts, NULL);
    expect_answer(t, &req, 200, "a");
    assert_int_equal(raw_connections(s), 2);
    t->free(t);
    raw_stop(s);

    /* the server closes as the second request arrives: sent once more on a new connection */
    s = raw_start(script_close_second, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb");
    t = transport_for(s->url);
    expect_answer(t, &req, 200, "b");
    expect_answer(t, &req, 200, "b");
    expect_answer(t, &req, 200, "b");
    assert_int_equal(raw_connections(s), 3);
    t->free(t);
    raw_stop(s);

    /* "Connection: close" is honoured: never pooled */
    s = raw_start(script_reply,
                  "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nc");
    t = transport_for(s->url);
    expect_answer(t, &req, 200, "c");
    expect_answer(t, &req, 200, "c");
    assert_int_equal(connects_of(t), 2);
    t->free(t);
    raw_stop(s);
}

static void test_kube_gnutls__no_retry_once_an_answer_began(void **state)
{
    (void)state;
    /* a reused connection that dies in the middle of an answer is not retried */
    raw_server *s = raw_start(script_cut_second, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab");
    co_kube_transport *t = transport_for(s->url);
    co_kube_request req = get_request("/x");
    expect_answer(t, &req, 200, "a");
    expect_failure(t, &req, CO_EUNAVAILABLE);
    assert_contains(co_error_last(), "cut short");
    assert_int_equal(raw_connections(s), 1);
    t->free(t);
    raw_stop(s);
}

/* One mutation of @p text into @p out (at most @p max bytes, never NUL). */
static void mutate(char *out, size_t max, const char *text, unsigned *seed)
{
    size_t len = strlen(text);
    memcpy(out, text, len + 1);
    int edits = 1 + (int)(rand_r(seed) % 4);
    for (int e = 0; e < edits && len > 0; e++) {
        size_t at = (size_t)rand_r(seed) % len;
        switch (rand_r(seed) % 4) {
        case 0: /* replace a byte */
            out[at] = (char)(1 + rand_r(seed) % 255);
            break;
        case 1: /* cut the answer short */
            out[at] = '\0';
            len = at;
            break;
        case 2: /* drop a byte */
            memmove(out + at, out + at + 1, len - at);
            len--;
            break;
        default: /* repeat a stretch */
            if (len + 16 < max) {
                memmove(out + at + 16, out + at, len - at + 1);
                len += 16;
            }
            break;
        }
    }
}

static void test_kube_gnutls__mutated_answers_fail_cleanly(void **state)
{
    (void)state;
    static const char *const seeds[] = {
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nRetry-After: 3\r\n\r\n"
        "5;x=y\r\nhello\r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\n",
        "HTTP/1.1 404 Not Found\r\nContent-Length: 12\r\nConnection: close\r\n\r\n"
        "{\"code\":404}",
        "HTTP/1.0 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nuntil the end",
    };
    raw_server *s = raw_start(script_reply_close, seeds[0]);
    co_kube_transport *t = transport_for(s->url);
    unsigned seed = 20261126;
    char reply[512];
    int answered = 0, failed = 0;
    for (int i = 0; i < 300; i++) {
        mutate(reply, sizeof(reply), seeds[i % 3], &seed);
        set_reply(s, reply);
        co_kube_request req = get_request("/m");
        req.timeout_ms = 3000;
        req.max_response = 64;
        pieces p = {.all = CO_BUF_INIT(1 << 20)};
        if (i % 2) {
            req.stream = collect;
            req.stream_payload = &p;
        }
        co_kube_response resp;
        co_kube_response_init(&resp, 1 << 20);
        co_error_clear();
        int rc = t->send(t, &req, &resp);
        if (rc != 0 && rc != CO_ERROR && rc != CO_EUNAVAILABLE && rc != CO_ETOOBIG) {
            fail_msg("answer %d gave %d (%s): %s", i, rc, co_error_name(rc), co_error_last());
        }
        if (rc == 0) {
            assert_true(resp.status >= 100 && resp.status <= 599);
            answered++;
        } else {
            assert_true(strlen(co_error_last()) > 0);
            failed++;
        }
        co_kube_response_dispose(&resp);
        co_buf_dispose(&p.all);
    }
    /* the mutations are neither all harmless nor all fatal */
    assert_true(answered > 10);
    assert_true(failed > 10);
    t->free(t);
    raw_stop(s);
}

#define THREADS    4
#define PER_THREAD 25

typedef struct worker {
    co_kube_transport *t;
    int failures;
} worker;

static void *hammer(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        co_kube_request req = get_request("/shared");
        co_kube_response resp;
        co_kube_response_init(&resp, 1 << 20);
        if (w->t->send(w->t, &req, &resp) < 0 || resp.status != 200 ||
            strcmp(co_buf_cstr(&resp.body), "shared") != 0) {
            w->failures++;
        }
        co_kube_response_dispose(&resp);
    }
    return NULL;
}

static void test_kube_gnutls__concurrent_sends_share_connections(void **state)
{
    (void)state;
    raw_server *s = raw_start(script_reply, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nshared");
    co_kube_transport *t = transport_for(s->url);
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.t = t};
        assert_int_equal(pthread_create(&th[i], NULL, hammer, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
    unsigned long requests = 0, connects = 0;
    assert_co_pass(co_kube__gnutls_stats(t, &requests, &connects));
    assert_int_equal(requests, THREADS * PER_THREAD);
    assert_true(connects >= 1 && connects <= THREADS);
    assert_int_equal(raw_connections(s), (int)connects);
    t->free(t);
    raw_stop(s);
}

static void test_kube_gnutls__configuration_checks(void **state)
{
    (void)state;
    co_kube_config *cfg = config_for("https://127.0.0.1:6443", ",\"proxy-url\":\"http://p:3128\"");
    co_kube_transport *t = NULL;
    assert_co_fail_with(CO_EINVALID, co_kube_transport_gnutls_new(&t, cfg));
    assert_contains(co_error_last(), "does not support proxies");
    assert_null(t);
    co_kube_config_free(cfg);

    cfg = config_for("https://127.0.0.1:6443",
                     ",\"certificate-authority-data\":\"bm90IGEgY2VydGlmaWNhdGU=\"");
    assert_co_fail_with(CO_EINVALID, co_kube_transport_gnutls_new(&t, cfg));
    assert_contains(co_error_last(), "certificate authority");
    co_kube_config_free(cfg);

    /* IPv6 literals and default ports parse */
    cfg = config_for("https://[::1]:6443/prefix", ",\"insecure-skip-tls-verify\":true");
    assert_co_pass(co_kube_transport_gnutls_new(&t, cfg));
    t->free(t);
    co_kube_config_free(cfg);
    cfg = config_for("http://localhost", NULL);
    assert_co_pass(co_kube_transport_gnutls_new(&t, cfg));
    t->free(t);
    co_kube_config_free(cfg);
}

static void test_kube_gnutls__tls_to_a_plain_server_fails_cleanly(void **state)
{
    (void)state;
    raw_server *s =
        raw_start(script_reply, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    s->greet = 1;
    char *url = co_xasprintf("https%s", s->url + 4);
    co_kube_config *cfg = config_for(url, ",\"insecure-skip-tls-verify\":true");
    co_kube_transport *t = NULL;
    assert_co_pass(co_kube_transport_gnutls_new(&t, cfg));
    co_kube_request req = get_request("/x");
    co_kube_response resp;
    co_kube_response_init(&resp, 1 << 20);
    int rc = t->send(t, &req, &resp);
    assert_true(rc == CO_ERROR || rc == CO_EUNAVAILABLE);
    assert_contains(co_error_last(), "TLS handshake with 127.0.0.1");
    co_kube_response_dispose(&resp);
    t->free(t);
    co_kube_config_free(cfg);
    free(url);
    raw_stop(s);
}

/* --- TLS against libmicrohttpd ----------------------------------------------------------- */

typedef struct pki {
    co_certs_pair ca, other_ca, serving;
    char *ca_b64, *other_ca_b64;
} pki;

static void make_ca(co_certs_pair *out, char **b64, const char *cn)
{
    co_certs_request req = {.common_name = cn,
                            .now = time(NULL),
                            .validity_s = 3600,
                            .backdate_s = 60};
    assert_co_pass(co_certs_create_ca(out, &req));
    *b64 = co_base64_encode(out->cert_pem, strlen(out->cert_pem), CO_BASE64_STD);
}

static void pki_make(pki *p)
{
    make_ca(&p->ca, &p->ca_b64, "co-gnutls-test-ca");
    make_ca(&p->other_ca, &p->other_ca_b64, "co-gnutls-other-ca");
    const char *dns[] = {"localhost"};
    const char *ips[] = {"127.0.0.1"};
    co_certs_request req = {.common_name = "server",
                            .dns_names = dns,
                            .ndns = 1,
                            .ip_addrs = ips,
                            .nips = 1,
                            .now = time(NULL),
                            .validity_s = 3600,
                            .backdate_s = 60};
    assert_co_pass(co_certs_create_serving(&p->serving, &p->ca, &req));
}

static void pki_dispose(pki *p)
{
    co_certs_pair_dispose(&p->ca);
    co_certs_pair_dispose(&p->other_ca);
    co_certs_pair_dispose(&p->serving);
    free(p->ca_b64);
    free(p->other_ca_b64);
}

/* GET /tls from @p server with the cluster fields @p extra; @return the send's result. */
static int tls_get(const char *server, const char *extra, co_kube_transport **keep)
{
    co_kube_config *cfg = config_for(server, extra);
    co_kube_transport *t = NULL;
    assert_co_pass(co_kube_transport_gnutls_new(&t, cfg));
    co_kube_config_free(cfg);
    co_kube_request req = get_request("/tls");
    co_kube_response resp;
    co_kube_response_init(&resp, 1 << 20);
    co_error_clear();
    int rc = t->send(t, &req, &resp);
    if (rc == 0) {
        assert_int_equal(resp.status, 200);
        assert_string_equal(co_buf_cstr(&resp.body), "secret");
    }
    co_kube_response_dispose(&resp);
    if (keep) {
        *keep = t;
    } else {
        t->free(t);
    }
    return rc;
}

static void test_kube_gnutls__tls_verification(void **state)
{
    (void)state;
    pki p = {0};
    pki_make(&p);
    test_httpd *srv = test_httpd_start_tls(p.serving.cert_pem, p.serving.key_pem, 0);
    test_httpd_route(srv, "/tls", 200, "secret", 6, NULL);
    const char *url = test_httpd_url(srv);
    char *ca = co_xasprintf(",\"certificate-authority-data\":\"%s\"", p.ca_b64);
    char *other = co_xasprintf(",\"certificate-authority-data\":\"%s\"", p.other_ca_b64);
    char *ca_named = co_xasprintf("%s,\"tls-server-name\":\"localhost\"", ca);
    char *ca_misnamed = co_xasprintf("%s,\"tls-server-name\":\"elsewhere.example\"", ca);
    char *other_insecure = co_xasprintf("%s,\"insecure-skip-tls-verify\":true", other);
    char *by_name = co_xasprintf("https://localhost:%s", strrchr(url, ':') + 1);

    assert_co_pass(tls_get(url, ca, NULL));
    /* a DNS name: sent as SNI and matched against the DNS SANs */
    assert_co_pass(tls_get(by_name, ca, NULL));
    assert_co_pass(tls_get(url, ca_named, NULL));
    assert_co_fail_with(CO_ERROR, tls_get(url, ca_misnamed, NULL));
    assert_contains(co_error_last(), "not valid for elsewhere.example");
    assert_co_fail_with(CO_ERROR, tls_get(url, other, NULL));
    assert_contains(co_error_last(), "TLS: the certificate of 127.0.0.1:");
    assert_contains(co_error_last(), "issuer");
    assert_co_pass(tls_get(url, other_insecure, NULL));

    free(by_name);
    free(other_insecure);
    free(ca_misnamed);
    free(ca_named);
    free(other);
    free(ca);
    test_httpd_stop(srv);
    pki_dispose(&p);
}

static void test_kube_gnutls__tls_keep_alive_and_idle_close(void **state)
{
    (void)state;
    pki p = {0};
    pki_make(&p);
    test_httpd *srv = test_httpd_start_tls(p.serving.cert_pem, p.serving.key_pem, 1);
    test_httpd_route(srv, "/tls", 200, "secret", 6, NULL);
    char *ca = co_xasprintf(",\"certificate-authority-data\":\"%s\"", p.ca_b64);
    co_kube_transport *t = NULL;
    assert_co_pass(tls_get(test_httpd_url(srv), ca, &t));
    co_kube_request req = get_request("/tls");
    expect_answer(t, &req, 200, "secret");
    expect_answer(t, &req, 200, "secret");
    assert_int_equal(connects_of(t), 1);
    /* the server drops the idle connection after a second: the next request opens another */
    struct timespec ts = {2, 0};
    nanosleep(&ts, NULL);
    expect_answer(t, &req, 200, "secret");
    assert_int_equal(connects_of(t), 2);
    assert_int_equal(test_httpd_hits(srv, "/tls"), 4);
    t->free(t);
    free(ca);
    test_httpd_stop(srv);
    pki_dispose(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_gnutls__get_status_and_body),
        cmocka_unit_test(test_kube_gnutls__retry_after_seconds),
        cmocka_unit_test(test_kube_gnutls__max_response_and_truncation),
        cmocka_unit_test(test_kube_gnutls__post_sends_headers_and_body),
        cmocka_unit_test(test_kube_gnutls__server_path_prefix),
        cmocka_unit_test(test_kube_gnutls__chunked_body_with_trailers_and_reuse),
        cmocka_unit_test(test_kube_gnutls__header_names_are_case_insensitive),
        cmocka_unit_test(test_kube_gnutls__streamed_body_arrives_in_pieces),
        cmocka_unit_test(test_kube_gnutls__streamed_error_answer_is_buffered),
        cmocka_unit_test(test_kube_gnutls__chunked_body_over_the_cap),
        cmocka_unit_test(test_kube_gnutls__malformed_and_truncated_answers),
        cmocka_unit_test(test_kube_gnutls__body_until_close_and_interim_answers),
        cmocka_unit_test(test_kube_gnutls__connection_refused_is_not_sent),
        cmocka_unit_test(test_kube_gnutls__whole_exchange_timeout),
        cmocka_unit_test(test_kube_gnutls__low_speed_limit),
        cmocka_unit_test(test_kube_gnutls__cancel_stops_a_silent_exchange),
        cmocka_unit_test(test_kube_gnutls__idle_connection_closed_by_the_server),
        cmocka_unit_test(test_kube_gnutls__no_retry_once_an_answer_began),
        cmocka_unit_test(test_kube_gnutls__mutated_answers_fail_cleanly),
        cmocka_unit_test(test_kube_gnutls__concurrent_sends_share_connections),
        cmocka_unit_test(test_kube_gnutls__configuration_checks),
        cmocka_unit_test(test_kube_gnutls__tls_to_a_plain_server_fails_cleanly),
        cmocka_unit_test(test_kube_gnutls__tls_verification),
        cmocka_unit_test(test_kube_gnutls__tls_keep_alive_and_idle_close),
    };
    return cmocka_run_group_tests_name("kube_gnutls", tests, NULL, NULL);
}
