/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libmicrohttpd glue. The TLS side is one listening socket we create ourselves (so that ":port"
 * can mean dual-stack with an IPv4 fallback, and tests can bind port 0), an acceptor thread, and
 * a set of single-threaded epoll daemons, the workers: the acceptor hands every new connection
 * to the worker with the fewest. libmicrohttpd's own thread pool lets its workers race for the
 * listening socket, and the one that wakes first takes a whole burst of connections (all 16 of
 * a load generator's, or every connection an API server opens at once) while the others idle;
 * its pool also cannot be combined with connections added from outside. Per request the access
 * handler is called once with the headers, once per body chunk and once at the end: the headers
 * alone decide route, method, media type and declared size (wh_http_precheck), chunks go into a
 * buffer capped per route, and the final call hands the bytes to wh_http_handle(). Certificates
 * come from wh_tls on every handshake.
 *
 * The probe and metrics listeners are daemons of their own (one thread each) fed by the same
 * acceptor, so that every listener shares the connection registry: each connection is entered
 * with its peer address and the phase it is in (waiting for its handshake and headers, reading
 * its body, having its answer taken, idle between requests), and the acceptor, waking at least
 * every SWEEP_MS, shuts down the connections whose phase has lasted past its deadline. Shutting
 * down the socket is enough: the connection's worker sees the end of the stream and closes it,
 * and libmicrohttpd reports it closed before it closes the descriptor, so the registry never
 * holds a descriptor that could already belong to something else.
 */
#include "webhook/wh_server.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "webhook/wh_memory.h"
#include "webhook/wh_metrics.h"
#include "webhook/wh_tlsio.h"

#define LISTEN_BACKLOG   1024
#define MAX_READY_CHECKS 8
/* Per-connection memory for headers and read/write buffers. The API server's request headers
 * are a few hundred bytes and bodies are streamed out of it, so half the default suffices. */
#define CONNECTION_MEMORY (16 * 1024)
/* Bodies declared up to this size get their buffer in one allocation. */
#define PRESIZE_BODY_MAX ((unsigned long long)64 * 1024)
/* More than the status line and headers of any of our responses take (about 150 bytes:
 * Content-Type, Content-Length, Date, at most Allow and Connection). */
#define RESPONSE_HEADERS_MAX 512
/* How often the acceptor looks for connections past their deadline. */
#define SWEEP_MS 200
/* Connections taken from one listener in a row before the others get their turn. */
#define ACCEPT_BURST 64
/* Commands through the acceptor's pipe. */
#define CMD_STOP  'q'
#define CMD_CLOSE 'c' /* close the TLS listener (drain) and go on for the probes */

/* What a connection is doing, which sets its deadline. */
enum phase {
    PH_WAIT,    /* TLS handshake, or the headers of a request */
    PH_BODY,    /* the body of a request whose headers are in */
    PH_RESPOND, /* its answer is queued and being taken */
    PH_IDLE,    /* kept alive between requests: libmicrohttpd's idle timeout only */
};

/* A connection in the registry: from the acceptor's hand-over until libmicrohttpd reports it
 * closed. The list and the flags are guarded by the server's conns_lock; the phase is written
 * by the connection's worker and read by the acceptor. */
typedef struct conn {
    struct conn *prev, *next;
    wh_server *server;
    int fd;
    wh_listener listener;
    unsigned char peer[16]; /* IPv6, or IPv4 mapped */
    int evicted;            /* shut down by the server, not yet reported closed */
    atomic_int phase;
    atomic_llong since_ms; /* when the phase began (CLOCK_MONOTONIC) */
    wh_tlsio *io;          /* TLS connections: the read/write layer */
} conn;

struct wh_server {
    wh_server_config cfg;
    struct MHD_Daemon **workers; /* the TLS daemons, one thread each */
    atomic_uint *open;           /* per worker: connections given to it and not yet closed */
    unsigned nworkers;
    int listen_fd[3]; /* listening sockets by wh_listener, -1 when absent or closed */
    int stop_pipe[2]; /* commands to the acceptor */
    pthread_t acceptor;
    int acceptor_running;
    struct MHD_Daemon *probe_daemon;
    struct MHD_Daemon *metrics_daemon; /* NULL when the probe daemon serves /metrics too */
    int ports[3];
    atomic_int draining;
    atomic_int in_flight;
    pthread_mutex_t ready_lock;    /* guards cfg.ready and cfg.ready_ctx */
    pthread_mutex_t conns_lock;    /* guards the registry below */
    pthread_cond_t tls_closed;     /* signalled when the acceptor has closed the TLS listener */
    conn *conns_head, *conns_tail; /* oldest first */
    unsigned count[3];             /* connections in the registry by listener */
    unsigned evicting[3];          /* of those, shut down by the server and not yet closed */
    wh_budget budget;
    long long header_ms, body_ms;
};

/* Per-request state, created on the first call of the access handler. */
typedef struct request {
    wh_route route;
    co_buf body;
    int too_big;
    struct timespec start;
    wh_server *server;
    size_t reserved; /* taken from the memory budget, given back when the request ends */
} request;

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void set_phase(conn *k, enum phase ph)
{
    if (k) {
        atomic_store(&k->since_ms, now_ms());
        atomic_store(&k->phase, (int)ph);
    }
}

/* Bytes came in: after an idle spell, that is a new request, whose headers have a deadline. */
static void on_read(void *ctx)
{
    conn *k = ctx;
    if (atomic_load_explicit(&k->phase, memory_order_relaxed) == PH_IDLE) {
        set_phase(k, PH_WAIT);
    }
}

static double since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

int wh_server_parse_addr(char **host_out, int *port_out, const char *addr)
{
    const char *colon = NULL;
    char *host = NULL;
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':') {
            return co_error_set(CO_EINVALID, "address \"%s\": expected [host]:port", addr);
        }
        host = co_xstrndup(addr + 1, (size_t)(close - addr - 1));
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon) {
            return co_error_set(CO_EINVALID, "address \"%s\": expected host:port or :port", addr);
        }
        host = co_xstrndup(addr, (size_t)(colon - addr));
    }
    char *end = NULL;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || errno || port < 0 || port > 65535) {
        free(host);
        return co_error_set(CO_EINVALID, "address \"%s\": invalid port", addr);
    }
    *host_out = host;
    *port_out = (int)port;
    return 0;
}

static int try_bind(const struct sockaddr *sa, socklen_t len, int family, int dual)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return -1;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (family == AF_INET6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, dual ? &zero : &one, sizeof(int));
    }
    if (bind(fd, sa, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Binds @p addr; an empty host means every address (IPv6 dual-stack, else IPv4). */
static int open_listener(int *fd_out, int *port_out, const char *addr)
{
    char *host = NULL;
    int port = 0;
    int rc = wh_server_parse_addr(&host, &port, addr);
    if (rc < 0 || !host) {
        return rc < 0 ? rc : CO_ERROR;
    }
    int fd = -1;
    if (!*host) {
        struct sockaddr_in6 a6 = {.sin6_family = AF_INET6,
                                  .sin6_port = htons((uint16_t)port),
                                  .sin6_addr = IN6ADDR_ANY_INIT};
        fd = try_bind((struct sockaddr *)&a6, sizeof(a6), AF_INET6, 1);
        if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
            struct sockaddr_in a4 = {.sin_family = AF_INET,
                                     .sin_port = htons((uint16_t)port),
                                     .sin_addr = {htonl(INADDR_ANY)}};
            fd = try_bind((struct sockaddr *)&a4, sizeof(a4), AF_INET, 0);
        }
    } else {
        struct addrinfo hints = {.ai_family = AF_UNSPEC,
                                 .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
        struct addrinfo *res = NULL;
        char portstr[8];
        snprintf(portstr, sizeof(portstr), "%d", port);
        int gai = getaddrinfo(host, portstr, &hints, &res);
        if (gai != 0) {
            rc = co_error_set(CO_EINVALID, "address \"%s\": %s", addr, gai_strerror(gai));
            free(host);
            return rc;
        }
        for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
            fd = try_bind(ai->ai_addr, ai->ai_addrlen, ai->ai_family, 0);
        }
        freeaddrinfo(res);
    }
    free(host);
    if (fd < 0) {
        return co_error_set_os(CO_ERROR, "cannot listen on %s", addr);
    }
    union {
        struct sockaddr sa;
        struct sockaddr_in in4;
        struct sockaddr_in6 in6;
        struct sockaddr_storage ss;
    } bound;
    memset(&bound, 0, sizeof(bound));
    socklen_t sl = sizeof(bound);
    if (getsockname(fd, &bound.sa, &sl) < 0) {
        rc = co_error_set_os(CO_ERROR, "cannot listen on %s", addr);
        close(fd);
        return rc;
    }
    *port_out =
        bound.sa.sa_family == AF_INET6 ? ntohs(bound.in6.sin6_port) : ntohs(bound.in4.sin_port);
    *fd_out = fd;
    return 0;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (!co_log_enabled(CO_LOG_DEBUG)) {
        return;
    }
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) {
        msg[--n] = '\0';
    }
    co_log(CO_LOG_DEBUG, "http server", "detail", msg, NULL);
}

/* The registry entry of a connection (NULL when it never got one). */
static conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* The read/write layer under a TLS connection (NULL on plain HTTP). */
static wh_tlsio *tlsio_of(struct MHD_Connection *c)
{
    conn *k = conn_of(c);
    return k ? k->io : NULL;
}

static enum MHD_Result
queue(wh_server *s, struct MHD_Connection *c, const char *method, wh_http_response *r)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r->body_len, r->body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        wh_http_response_dispose(r);
        return MHD_NO;
    }
    r->body = NULL;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
    if (r->allow) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
    }
    if (r->retry_after > 0) {
        char secs[16];
        snprintf(secs, sizeof(secs), "%d", r->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    conn *k = conn_of(c);
    /* A probe connection carries one request: its deadline runs from the accept. */
    if (atomic_load_explicit(&s->draining, memory_order_relaxed) ||
        (k && k->listener != WH_LISTENER_WEBHOOK)) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    if (k && k->listener == WH_LISTENER_WEBHOOK) {
        set_phase(k, PH_RESPOND);
    }
    /* libmicrohttpd writes the headers and then, at once, the body, as two TLS records. A
     * small response is gathered instead and goes out as one record in one sendmsg() when it
     * is complete (on_completed()). Only when a body follows (none to a HEAD request). The
     * library holds back the headers of a response that fits a packet (under 1400 bytes with
     * the body) by corking the socket; ours take less than RESPONSE_HEADERS_MAX bytes. */
    wh_tlsio *io = tlsio_of(c);
    if (io && r->body_len > 0 && r->body_len <= WH_TLSIO_CORK_MAX &&
        strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        wh_tlsio_cork(io, r->body_len + RESPONSE_HEADERS_MAX < 1400);
    }
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    if (ret != MHD_YES && io) {
        (void)wh_tlsio_flush(io);
    }
    return ret;
}

static void log_request(const char *method, const char *url, int status, double secs)
{
    if (co_log_enabled(CO_LOG_DEBUG)) {
        char st[8], ms[32];
        snprintf(st, sizeof(st), "%d", status);
        snprintf(ms, sizeof(ms), "%.3f", secs * 1e3);
        co_log(CO_LOG_DEBUG, "request", "method", method, "path", url, "status", st, "durationMs",
               ms, NULL);
    }
}

static enum MHD_Result answer(wh_server *s,
                              struct MHD_Connection *c,
                              request *rq,
                              const char *method,
                              const char *url,
                              wh_http_response *r)
{
    double secs = since(&rq->start);
    wh_metrics_request_answered(rq->route, r->status, secs);
    if (r->internal_error) {
        wh_metrics_internal_error(rq->route);
        co_log(CO_LOG_ERROR, "webhook handler failed", "path", url, NULL);
    }
    log_request(method, url, r->status, secs);
    return queue(s, c, method, r);
}

/* Looked up when a request starts and when it ends, not for every chunk of its body. */
static const char *content_type(struct MHD_Connection *c)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
}

/* Takes @p n more bytes of the budget for request @p ctx (wh_reserve_fn). */
static int reserve(void *ctx, size_t n)
{
    request *rq = ctx;
    wh_budget *b = &rq->server->budget;
    if (n > b->total || rq->reserved > b->total - n) {
        return co_error_set(CO_ETOOBIG,
                            "needs an estimated %zu bytes of memory, more than the %zu bytes "
                            "the webhook gives requests in flight (--max-request-memory-bytes)",
                            rq->reserved + n, b->total);
    }
    int rc = wh_budget_take(b, n);
    if (rc == 0) {
        rq->reserved += n;
    }
    return rc;
}

static enum MHD_Result on_webhook(void *cls,
                                  struct MHD_Connection *c,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_size,
                                  void **con_cls)
{
    (void)version;
    wh_server *s = cls;
    request *rq = *con_cls;
    if (!rq) {
        const char *ct = content_type(c);
        rq = co_xcalloc(1, sizeof(*rq));
        clock_gettime(CLOCK_MONOTONIC, &rq->start);
        rq->server = s;
        rq->route = wh_route_lookup(url);
        size_t cap = rq->route != WH_ROUTE_NONE ? wh_http_body_cap(&s->cfg.limits, rq->route) : 0;
        co_buf_init(&rq->body, cap);
        *con_cls = rq;
        set_phase(conn_of(c), PH_BODY);
        atomic_fetch_add(&s->in_flight, 1);
        wh_metrics_request_started(rq->route);
        /* Decide from the headers alone whether the body is worth reading. */
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        unsigned long long declared = cl ? strtoull(cl, NULL, 10) : 0;
        wh_http_request hr = {method, url, ct, NULL, (size_t)declared, &s->cfg.limits, NULL, NULL};
        wh_http_response r;
        if (wh_http_precheck(&r, &hr)) {
            return answer(s, c, rq, method, url, &r);
        }
        /* The body's buffer is reserved before a byte of it is read: its declared length, or
         * for a chunked body (which the API server never sends) the whole cap. */
        int chunked = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
        size_t body = cl ? (size_t)declared : chunked ? cap : 0;
        int rc = reserve(rq, WH_MEMORY_REQUEST_OVERHEAD + body);
        if (rc < 0) {
            wh_http_over_budget(&r, rc);
            return answer(s, c, rq, method, url, &r);
        }
        /* One allocation for a body of the usual size instead of a doubling series; a larger
         * declared length still grows as the bytes arrive, so what a client can make the server
         * set aside before sending anything stays at 64 KiB a connection. */
        if (declared > 0 && declared <= PRESIZE_BODY_MAX &&
            co_buf_reserve(&rq->body, (size_t)declared) < 0) {
            rq->too_big = 1; /* not reached: the precheck held the length to the route's cap */
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!rq->too_big && co_buf_put(&rq->body, upload_data, *upload_size) < 0) {
            /* Keep reading (and dropping) the rest; 413 is answered once it is in. */
            rq->too_big = 1;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    wh_http_response r;
    if (rq->too_big) {
        wh_http_too_large(&r, rq->body.max);
    } else {
        wh_http_request hr = {method,          url,
                              content_type(c), rq->body.ptr ? rq->body.ptr : "",
                              rq->body.len,    &s->cfg.limits,
                              reserve,         rq};
        wh_http_handle(&r, s->cfg.handlers, &hr);
    }
    return answer(s, c, rq, method, url, &r);
}

/* A connection of a worker closed: one fewer for the acceptor to count (hand_over()). */
static void closed(wh_server *s, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON);
    for (unsigned i = 0; info && i < s->nworkers; i++) {
        if (info->daemon == s->workers[i]) {
            atomic_fetch_sub(&s->open[i], 1);
            return;
        }
    }
}

/* Takes @p k out of the registry (the caller holds conns_lock). */
static void unlink_conn(wh_server *s, conn *k)
{
    if (k->prev) {
        k->prev->next = k->next;
    } else {
        s->conns_head = k->next;
    }
    if (k->next) {
        k->next->prev = k->prev;
    } else {
        s->conns_tail = k->prev;
    }
    s->count[k->listener]--;
    if (k->evicted) {
        s->evicting[k->listener]--;
    }
}

/* The registry entry of descriptor @p fd (the caller holds conns_lock); newest first, as the
 * one asked for has just been handed over. */
static conn *find_fd(wh_server *s, int fd)
{
    for (conn *k = s->conns_tail; k; k = k->prev) {
        if (k->fd == fd) {
            return k;
        }
    }
    return NULL;
}

/* Every answer goes out as soon as it is written: with Nagle's algorithm, the second TLS record
 * of a response (body after headers) would wait for the client's delayed ACK, tens of ms.
 * Reads and writes go through wh_tlsio: one recv() and one sendmsg() per request. A connection
 * finds its registry entry here, and leaves the registry (and its worker's count) when closed. */
static void on_connection(void *cls,
                          struct MHD_Connection *c,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    wh_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn *k = *socket_context;
        *socket_context = NULL;
        if (k) {
            pthread_mutex_lock(&s->conns_lock);
            unlink_conn(s, k);
            pthread_mutex_unlock(&s->conns_lock);
            /* after gnutls_deinit(): nothing reads through it any more */
            wh_tlsio_free(k->io);
            if (k->listener == WH_LISTENER_WEBHOOK) {
                closed(s, c);
            }
            free(k);
        }
        return;
    }
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info) {
        return;
    }
    int fd = info->connect_fd;
    pthread_mutex_lock(&s->conns_lock);
    conn *k = find_fd(s, fd);
    pthread_mutex_unlock(&s->conns_lock);
    if (!k) {
        return;
    }
    *socket_context = k;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info && info->tls_session) {
        k->io = wh_tlsio_attach(info->tls_session, fd);
        wh_tlsio_on_read(k->io, on_read, k);
    }
}

static void on_completed(void *cls,
                         struct MHD_Connection *c,
                         void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    wh_server *s = cls;
    /* A gathered response goes out now, as one record. A client whose socket takes nothing
     * more is not reading its responses: its connection is shut, rather than left to wait for
     * bytes that would never be sent. */
    wh_tlsio *io = tlsio_of(c);
    if (io && wh_tlsio_flush(io) < 0) {
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (fd) {
            shutdown(fd->connect_fd, SHUT_RDWR);
        }
    }
    set_phase(conn_of(c), PH_IDLE);
    request *rq = *con_cls;
    if (!rq) {
        return;
    }
    wh_metrics_request_finished(rq->route);
    atomic_fetch_sub(&s->in_flight, 1);
    wh_budget_give(&s->budget, rq->reserved);
    co_buf_dispose(&rq->body);
    free(rq);
    *con_cls = NULL;
}

static enum MHD_Result on_probe(void *cls,
                                struct MHD_Connection *c,
                                const char *url,
                                const char *method,
                                const char *version,
                                const char *upload_data,
                                size_t *upload_size,
                                void **con_cls)
{
    (void)version;
    (void)upload_data;
    wh_server *s = cls;
    /* The first call carries the headers only; a body, if any, is ignored. */
    if (!*con_cls) {
        *con_cls = s;
        return MHD_YES;
    }
    *upload_size = 0;
    wh_probe_check checks[2 + MAX_READY_CHECKS];
    size_t n = 0;
    /* Liveness asks nothing of the rest of the process: no lock, no check that could wait. */
    if (strcmp(url, "/healthz") != 0) {
        checks[n].name = "tls";
        checks[n++].failure = wh_tls_loaded(s->cfg.tls) ? NULL : "no serving certificate loaded";
        checks[n].name = "shutdown";
        checks[n++].failure = atomic_load(&s->draining) ? "the server is shutting down" : NULL;
        pthread_mutex_lock(&s->ready_lock);
        wh_ready_fn ready = s->cfg.ready;
        void *ready_ctx = s->cfg.ready_ctx;
        pthread_mutex_unlock(&s->ready_lock);
        if (ready) {
            n += ready(ready_ctx, checks + n, MAX_READY_CHECKS);
        }
    }
    int metrics = s->metrics_daemon == NULL && s->ports[WH_LISTENER_METRICS] >= 0;
    wh_http_response r;
    wh_http_probe(&r, method, url, checks, n, metrics);
    return queue(s, c, method, &r);
}

static enum MHD_Result on_metrics(void *cls,
                                  struct MHD_Connection *c,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_size,
                                  void **con_cls)
{
    (void)version;
    (void)upload_data;
    wh_server *s = cls;
    if (!*con_cls) {
        *con_cls = s;
        return MHD_YES;
    }
    *upload_size = 0;
    wh_http_response r;
    if (strcmp(url, "/metrics")) {
        /* Only /metrics lives here; reuse the probe answer for 404 and 405. */
        wh_http_probe(&r, method, "/", NULL, 0, 0);
    } else {
        wh_http_probe(&r, method, url, NULL, 0, 1);
    }
    return queue(s, c, method, &r);
}

static int disabled(const char *addr)
{
    return !addr || !*addr || !strcmp(addr, "0");
}

/* A plain-HTTP daemon fed by the acceptor from listening socket s->listen_fd[@p which]. */
static int start_plain(struct MHD_Daemon **out,
                       wh_listener which,
                       const char *addr,
                       MHD_AccessHandlerCallback handler,
                       wh_server *s)
{
    int rc = open_listener(&s->listen_fd[which], &s->ports[which], addr);
    if (rc < 0) {
        return rc;
    }
    /* the acceptor holds the limits; these are backstops */
    *out = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_NO_LISTEN_SOCKET |
                                MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG,
                            0, NULL, NULL, handler, s, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)(2 * WH_PROBE_MAX_CONNECTIONS), MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)30, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                            (size_t)CONNECTION_MEMORY, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
                            s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
    if (!*out) {
        return co_error_set(CO_ERROR, "cannot start the HTTP listener on %s", addr);
    }
    return 0;
}

/* Connections the workers hold now. */
static unsigned worker_connections(struct MHD_Daemon *w)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(w, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

/* The peer's address as 16 bytes (IPv4 mapped into IPv6). */
static void peer_key(unsigned char out[16], const struct sockaddr *addr)
{
    memset(out, 0, 16);
    if (addr->sa_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr, 16);
    } else if (addr->sa_family == AF_INET) {
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &((const struct sockaddr_in *)(const void *)addr)->sin_addr, 4);
    }
}

/* Shuts @p k down for its worker to close, once (the caller holds conns_lock). */
static void evict(wh_server *s, conn *k, const char *why)
{
    if (k->evicted) {
        return;
    }
    k->evicted = 1;
    s->evicting[k->listener]++;
    shutdown(k->fd, SHUT_RDWR);
    co_log(CO_LOG_DEBUG, "connection closed", "reason", why, NULL);
}

/*
 * Enters a new connection on listener @p l into the registry, within the listener's limits:
 * a peer at its own limit is refused; a full listener makes room by evicting the connection
 * that has waited longest for its handshake or headers, and refuses only when every connection
 * is past that. Returns the entry, or NULL when refused. The caller holds conns_lock.
 */
static conn *admit(wh_server *s, wh_listener l, int fd, const struct sockaddr *addr)
{
    unsigned limit = l == WH_LISTENER_WEBHOOK ? s->cfg.max_connections : WH_PROBE_MAX_CONNECTIONS;
    unsigned per_peer = l == WH_LISTENER_WEBHOOK ? s->cfg.max_per_peer : WH_PROBE_MAX_PER_PEER;
    unsigned char peer[16];
    peer_key(peer, addr);
    unsigned same = 0;
    conn *oldest = NULL;
    long long oldest_since = 0;
    for (conn *k = s->conns_head; k; k = k->next) {
        if (k->listener != l || k->evicted) {
            continue;
        }
        same += memcmp(k->peer, peer, 16) == 0;
        long long since_ms = atomic_load(&k->since_ms);
        if (atomic_load(&k->phase) == PH_WAIT && (!oldest || since_ms < oldest_since)) {
            oldest = k;
            oldest_since = since_ms;
        }
    }
    if (same >= per_peer) {
        co_log(CO_LOG_DEBUG, "connection limit per address reached, connection refused", NULL);
        return NULL;
    }
    if (s->count[l] - s->evicting[l] >= limit) {
        if (!oldest) {
            co_log(CO_LOG_DEBUG, "connection limit reached, connection refused", NULL);
            return NULL;
        }
        evict(s, oldest, "listener full: waited longest for its headers");
    }
    conn *k = co_xcalloc(1, sizeof(*k));
    k->server = s;
    k->fd = fd;
    k->listener = l;
    memcpy(k->peer, peer, 16);
    atomic_init(&k->phase, PH_WAIT);
    atomic_init(&k->since_ms, now_ms());
    k->prev = s->conns_tail;
    if (s->conns_tail) {
        s->conns_tail->next = k;
    } else {
        s->conns_head = k;
    }
    s->conns_tail = k;
    s->count[l]++;
    return k;
}

/*
 * Gives a new connection to its listener's daemon: a TLS connection to the worker with the
 * fewest open. The counts are the server's own, raised here and lowered when libmicrohttpd
 * reports a connection closed: a worker counts a connection only once its thread has taken it
 * from the queue, so in a burst (a client opening its connections at once) libmicrohttpd's
 * counts stay behind and every connection would go to the same worker.
 */
static void
hand_over(wh_server *s, wh_listener l, int fd, const struct sockaddr *addr, socklen_t len)
{
    pthread_mutex_lock(&s->conns_lock);
    conn *k = admit(s, l, fd, addr);
    pthread_mutex_unlock(&s->conns_lock);
    if (!k) {
        close(fd);
        return;
    }
    struct MHD_Daemon *d = l == WH_LISTENER_PROBE ? s->probe_daemon : s->metrics_daemon;
    unsigned best = 0;
    if (l == WH_LISTENER_WEBHOOK) {
        unsigned best_n = UINT32_MAX;
        for (unsigned i = 0; i < s->nworkers; i++) {
            unsigned n = atomic_load(&s->open[i]);
            if (n < best_n) {
                best_n = n;
                best = i;
            }
        }
        atomic_fetch_add(&s->open[best], 1);
        d = s->workers[best];
    }
    /* on failure libmicrohttpd has closed the socket; the entry goes unless it was reported
     * closed already */
    if (MHD_add_connection(d, fd, addr, len) != MHD_YES) {
        int err = errno;
        if (l == WH_LISTENER_WEBHOOK) {
            atomic_fetch_sub(&s->open[best], 1);
        }
        pthread_mutex_lock(&s->conns_lock);
        for (conn *it = s->conns_head; it; it = it->next) {
            if (it == k) {
                unlink_conn(s, k);
                free(k);
                break;
            }
        }
        pthread_mutex_unlock(&s->conns_lock);
        char eb[128];
        co_log(CO_LOG_DEBUG, "a worker refused a connection", "error",
               co_errno_text(err, eb, sizeof(eb)), NULL);
    }
}

/* Accepts from listener @p l until it runs dry or ACCEPT_BURST were taken. Returns 0, or -1
 * when the listener failed. */
static int accept_burst(wh_server *s, wh_listener l)
{
    for (int taken = 0; taken < ACCEPT_BURST; taken++) {
        struct sockaddr_storage ss = {0};
        socklen_t len = sizeof(ss);
        int fd =
            accept4(s->listen_fd[l], (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            hand_over(s, l, fd, (const struct sockaddr *)&ss, len);
            continue;
        }
        switch (errno) {
        case EINTR:
        case ECONNABORTED:
        case EPROTO:
            continue;
        case EAGAIN:
#if EAGAIN != EWOULDBLOCK
        case EWOULDBLOCK:
#endif
            return 0;
        case EMFILE:
        case ENFILE:
        case ENOBUFS:
        case ENOMEM: {
            /* out of descriptors or memory: let connections close, then try again */
            char eb[128];
            co_log(CO_LOG_WARN, "cannot accept a connection", "error",
                   co_errno_text(errno, eb, sizeof(eb)), NULL);
            struct timespec nap = {0, 100000000L};
            nanosleep(&nap, NULL);
            return 0;
        }
        default: {
            char eb[128];
            co_log(CO_LOG_ERROR, "accepting connections failed", "error",
                   co_errno_text(errno, eb, sizeof(eb)), NULL);
            return -1;
        }
        }
    }
    return 0;
}

/* Shuts down the connections whose phase has outlived its deadline. */
static void sweep(wh_server *s)
{
    long long now = now_ms();
    pthread_mutex_lock(&s->conns_lock);
    for (conn *k = s->conns_head; k; k = k->next) {
        if (k->evicted) {
            continue;
        }
        int ph = atomic_load(&k->phase);
        long long since_ms = atomic_load(&k->since_ms);
        long long limit = 0;
        /* a probe connection carries one request, its deadline counted from the accept */
        if (k->listener != WH_LISTENER_WEBHOOK || ph == PH_WAIT) {
            limit = s->header_ms;
        } else if (ph == PH_BODY || ph == PH_RESPOND) {
            limit = s->body_ms;
        }
        if (limit > 0 && now - since_ms > limit) {
            evict(s, k,
                  ph == PH_WAIT   ? "no complete request headers in time"
                  : ph == PH_BODY ? "no complete request body in time"
                                  : "answer not taken in time");
        }
    }
    pthread_mutex_unlock(&s->conns_lock);
}

static void close_tls_listener(wh_server *s)
{
    pthread_mutex_lock(&s->conns_lock);
    if (s->listen_fd[WH_LISTENER_WEBHOOK] >= 0) {
        close(s->listen_fd[WH_LISTENER_WEBHOOK]);
        s->listen_fd[WH_LISTENER_WEBHOOK] = -1;
    }
    pthread_cond_broadcast(&s->tls_closed);
    pthread_mutex_unlock(&s->conns_lock);
}

static void *accept_loop(void *arg)
{
    wh_server *s = arg;
    long long last_sweep = now_ms();
    for (;;) {
        struct pollfd pf[4];
        wh_listener which[3];
        nfds_t n = 0;
        for (int l = 0; l < 3; l++) {
            if (s->listen_fd[l] >= 0) {
                pf[n] = (struct pollfd){s->listen_fd[l], POLLIN, 0};
                which[n++] = (wh_listener)l;
            }
        }
        pf[n] = (struct pollfd){s->stop_pipe[0], POLLIN, 0};
        if (poll(pf, n + 1, SWEEP_MS) < 0 && errno != EINTR) {
            char eb[128];
            co_log(CO_LOG_ERROR, "waiting for connections failed", "error",
                   co_errno_text(errno, eb, sizeof(eb)), NULL);
            break;
        }
        if (pf[n].revents) {
            char cmd = 0;
            if (read(s->stop_pipe[0], &cmd, 1) == 1 && cmd == CMD_CLOSE) {
                close_tls_listener(s);
                continue;
            }
            break;
        }
        int failed = 0;
        for (nfds_t i = 0; i < n && !failed; i++) {
            if (pf[i].revents) {
                failed = accept_burst(s, which[i]) < 0;
            }
        }
        if (failed) {
            break;
        }
        long long now = now_ms();
        if (now - last_sweep >= SWEEP_MS) {
            sweep(s);
            last_sweep = now;
        }
    }
    return NULL;
}

static void command(wh_server *s, char cmd)
{
    while (write(s->stop_pipe[1], &cmd, 1) < 0 && errno == EINTR) {
    }
}

/* Stops the acceptor and closes every listening socket; connections already open go on. */
static void stop_accepting(wh_server *s)
{
    if (s->acceptor_running) {
        command(s, CMD_STOP);
        pthread_join(s->acceptor, NULL);
        s->acceptor_running = 0;
    }
    for (int l = 0; l < 3; l++) {
        if (s->listen_fd[l] >= 0) {
            close(s->listen_fd[l]);
            s->listen_fd[l] = -1;
        }
    }
}

static int start_tls(wh_server *s)
{
    int rc = open_listener(&s->listen_fd[WH_LISTENER_WEBHOOK], &s->ports[WH_LISTENER_WEBHOOK],
                           s->cfg.webhook_addr);
    if (rc < 0) {
        return rc;
    }
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)wh_tls_priorities(s->cfg.tls_min)},
        {MHD_OPTION_HTTPS_CERT_CALLBACK2, 0, wh_tls_retrieve_function()},
        /* the acceptor keeps the total under the limit; this is a backstop per worker, with
         * room for connections evicted and not yet closed */
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->cfg.max_connections * 2, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)CONNECTION_MEMORY, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->cfg.connection_timeout_s, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s},
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    wh_tls_serve(s->cfg.tls);
    s->nworkers = s->cfg.threads ? s->cfg.threads : 1;
    s->workers = co_xcalloc(s->nworkers, sizeof(struct MHD_Daemon *));
    s->open = co_xcalloc(s->nworkers, sizeof(atomic_uint));
    for (unsigned i = 0; i < s->nworkers; i++) {
        s->workers[i] = MHD_start_daemon(
            MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_INTERNAL_POLLING_THREAD |
                MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_TURBO | MHD_USE_ERROR_LOG,
            0, NULL, NULL, on_webhook, s, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
        if (!s->workers[i]) {
            return co_error_set(CO_ERROR, "cannot start TLS worker %u of %u for %s", i + 1,
                                s->nworkers, s->cfg.webhook_addr);
        }
    }
    return 0;
}

static int start_acceptor(wh_server *s)
{
    if (pipe2(s->stop_pipe, O_CLOEXEC) < 0) {
        return co_error_set_os(CO_ERROR, "webhook server: pipe");
    }
    int rc = pthread_create(&s->acceptor, NULL, accept_loop, s);
    if (rc != 0) {
        char eb[128];
        return co_error_set(CO_ERROR, "webhook server: cannot start the acceptor: %s",
                            co_errno_text(rc, eb, sizeof(eb)));
    }
    s->acceptor_running = 1;
    return 0;
}

int wh_server_start(wh_server **out, const wh_server_config *cfg)
{
    if (!cfg->handlers || !cfg->tls) {
        return co_error_set(CO_EINVALID, "webhook server: handlers and tls are required");
    }
    if (cfg->max_connections == 0 || cfg->connection_timeout_s == 0) {
        return co_error_set(CO_EINVALID,
                            "webhook server: connection limit and timeout must be positive");
    }
    wh_server *s = co_xcalloc(1, sizeof(*s));
    s->cfg = *cfg;
    if (!s->cfg.max_per_peer) {
        s->cfg.max_per_peer = WH_DEFAULT_MAX_PER_PEER;
    }
    s->header_ms =
        1000LL * (cfg->header_timeout_s ? cfg->header_timeout_s : WH_DEFAULT_HEADER_TIMEOUT);
    s->body_ms = 1000LL * (cfg->body_timeout_s ? cfg->body_timeout_s : WH_DEFAULT_BODY_TIMEOUT);
    wh_budget_init(&s->budget, cfg->memory_budget ? cfg->memory_budget : WH_DEFAULT_MEMORY_BUDGET);
    pthread_mutex_init(&s->ready_lock, NULL);
    pthread_mutex_init(&s->conns_lock, NULL);
    pthread_cond_init(&s->tls_closed, NULL);
    for (int l = 0; l < 3; l++) {
        s->ports[l] = -1;
        s->listen_fd[l] = -1;
    }
    s->stop_pipe[0] = s->stop_pipe[1] = -1;
    int rc = start_tls(s);
    if (rc == 0 && !disabled(cfg->probe_addr)) {
        rc = start_plain(&s->probe_daemon, WH_LISTENER_PROBE, cfg->probe_addr, on_probe, s);
    }
    if (rc == 0 && !disabled(cfg->metrics_addr)) {
        /* The same address means one listener for both, unless the port is chosen by the
         * system (port 0), where two listeners are asked for. */
        if (!disabled(cfg->probe_addr) && !strcmp(cfg->metrics_addr, cfg->probe_addr) &&
            !(strlen(cfg->probe_addr) >= 2 &&
              !strcmp(cfg->probe_addr + strlen(cfg->probe_addr) - 2, ":0"))) {
            s->ports[WH_LISTENER_METRICS] = s->ports[WH_LISTENER_PROBE];
        } else {
            rc = start_plain(&s->metrics_daemon, WH_LISTENER_METRICS, cfg->metrics_addr, on_metrics,
                             s);
        }
    }
    if (rc == 0) {
        rc = start_acceptor(s);
    }
    if (rc < 0) {
        wh_server_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int wh_server_local_new(wh_server **out, const wh_server_config *cfg)
{
    if (!cfg->handlers) {
        return co_error_set(CO_EINVALID, "webhook server: handlers are required");
    }
    wh_server *s = co_xcalloc(1, sizeof(*s));
    s->cfg = *cfg;
    s->cfg.tls = NULL;
    s->header_ms = s->body_ms = 0;
    wh_budget_init(&s->budget, cfg->memory_budget ? cfg->memory_budget : WH_DEFAULT_MEMORY_BUDGET);
    pthread_mutex_init(&s->ready_lock, NULL);
    pthread_mutex_init(&s->conns_lock, NULL);
    pthread_cond_init(&s->tls_closed, NULL);
    for (int l = 0; l < 3; l++) {
        s->ports[l] = -1;
        s->listen_fd[l] = -1;
    }
    s->stop_pipe[0] = s->stop_pipe[1] = -1;
    s->nworkers = 1;
    s->workers = co_xcalloc(1, sizeof(struct MHD_Daemon *));
    s->open = co_xcalloc(1, sizeof(atomic_uint));
    /* The TLS workers' options, less TLS and the thread: the caller polls with
     * wh_server_local_run(). */
    s->workers[0] = MHD_start_daemon(
        MHD_USE_NO_LISTEN_SOCKET | MHD_USE_TURBO | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_webhook, s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)(cfg->max_connections ? cfg->max_connections : 16),
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->connection_timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
        s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
    if (!s->workers[0]) {
        wh_server_free(s);
        return co_error_set(CO_ERROR, "cannot start a local webhook listener");
    }
    *out = s;
    return 0;
}

int wh_server_local_add(wh_server *s, int fd)
{
    /* libmicrohttpd wants an IP peer; this one is never looked at */
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons(1)};
    peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (MHD_add_connection(s->workers[0], fd, (const struct sockaddr *)&peer, sizeof(peer)) !=
        MHD_YES) {
        return co_error_set_os(CO_ERROR, "webhook server: cannot add a local connection");
    }
    return 0;
}

void wh_server_local_run(wh_server *s)
{
    (void)MHD_run(s->workers[0]);
}

void wh_server_set_ready(wh_server *s, wh_ready_fn ready, void *ctx)
{
    pthread_mutex_lock(&s->ready_lock);
    s->cfg.ready = ready;
    s->cfg.ready_ctx = ctx;
    pthread_mutex_unlock(&s->ready_lock);
}

int wh_server_port(const wh_server *s, wh_listener which)
{
    return s->ports[which];
}

unsigned wh_server_worker_connections(const wh_server *s, unsigned i)
{
    return i < s->nworkers ? worker_connections(s->workers[i]) : 0;
}

size_t wh_server_memory_used(const wh_server *s)
{
    return wh_budget_used(&s->budget);
}

int wh_server_drain(wh_server *s, int timeout_ms)
{
    atomic_store(&s->draining, 1);
    /* the probes go on answering (not ready) while the requests in flight finish */
    if (s->acceptor_running) {
        command(s, CMD_CLOSE);
        pthread_mutex_lock(&s->conns_lock);
        while (s->listen_fd[WH_LISTENER_WEBHOOK] >= 0) {
            pthread_cond_wait(&s->tls_closed, &s->conns_lock);
        }
        pthread_mutex_unlock(&s->conns_lock);
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int left = atomic_load(&s->in_flight);
    while (left > 0 && since(&t0) * 1000.0 < timeout_ms) {
        struct timespec nap = {0, 10000000L};
        nanosleep(&nap, NULL);
        left = atomic_load(&s->in_flight);
    }
    return left;
}

void wh_server_free(wh_server *s)
{
    if (!s) {
        return;
    }
    stop_accepting(s);
    for (unsigned i = 0; i < s->nworkers; i++) {
        if (s->workers[i]) {
            MHD_stop_daemon(s->workers[i]);
        }
    }
    free(s->workers);
    free(s->open);
    for (int i = 0; i < 2; i++) {
        if (s->stop_pipe[i] >= 0) {
            close(s->stop_pipe[i]);
        }
    }
    if (s->probe_daemon) {
        MHD_stop_daemon(s->probe_daemon);
    }
    if (s->metrics_daemon) {
        MHD_stop_daemon(s->metrics_daemon);
    }
    /* every daemon has reported its connections closed */
    CO_ASSERT(s->conns_head == NULL);
    pthread_cond_destroy(&s->tls_closed);
    pthread_mutex_destroy(&s->conns_lock);
    pthread_mutex_destroy(&s->ready_lock);
    free(s);
}
