/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GnuTLS transport: HTTP/1.1 over plain sockets or GnuTLS sessions, without libcurl.
 *
 * Every socket is non-blocking and every wait is a poll() of at most a second, so that the
 * whole-exchange timeout, the low-speed limit (no byte for low_speed_time_s) and the request's
 * cancel callback are checked while nothing arrives. Connections whose response was read to its
 * end wait in a mutex-protected idle list and are handed to whichever thread sends next; one
 * that the server closed while idle is noticed before reuse, and a request that fails on a
 * reused connection before any byte of its answer arrived is sent once more on a new one.
 * Responses are parsed by hand: status line, headers (bounded), Content-Length, chunked bodies
 * with trailers, or a body that lasts until the server closes.
 */
#include "co/kube/kube_transport.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "kube_int.h"

/* Idle connections kept for reuse; more concurrent requests open more, then close them. */
#define POOL_MAX 32
/* Status line plus headers (and, separately, the trailers of a chunked body). */
#define MAX_HEAD (64 * CO_KIB)
/* A chunk-size line with its extensions. */
#define MAX_CHUNK_LINE             (4 * CO_KIB)
#define READ_BUF                   (16 * CO_KIB)
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
/* Requests with a body up to this size go out in one write together with the head. */
#define INLINE_BODY  (64 * CO_KIB)
#define TLS_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/* One open connection, plain or TLS, with the bytes read but not yet parsed. */
typedef struct gconn {
    int fd;
    gnutls_session_t tls; /* NULL for http:// */
    struct gconn *next;   /* in the idle list */
    size_t rpos, rlen;    /* unparsed bytes are rbuf[rpos, rlen) */
    char rbuf[READ_BUF];
} gconn;

typedef struct gtls_transport {
    co_kube_transport base;
    int https;
    char *host;        /* to connect to: a name or an address literal without brackets */
    char *port;        /* decimal */
    char *authority;   /* the Host header: host[:port] as the server URL spells it */
    char *prefix;      /* path prefix of the server URL, "" when none */
    char *verify_name; /* SNI and certificate name: tls-server-name, else host */
    int verify_is_ip;  /* verify_name is an address literal: no SNI */
    int insecure;
    gnutls_certificate_credentials_t cred;
    gnutls_priority_t prio;
    pthread_mutex_t lock;
    gconn *idle; /* guarded by lock */
    size_t nidle;
    /* counters for tests (guarded by lock) */
    unsigned long requests, connects;
} gtls_transport;

/* --- one exchange ------------------------------------------------------------------------- */

typedef struct xfer {
    gtls_transport *t;
    const co_kube_request *req;
    co_kube_response *resp;
    gconn *c;
    int64_t deadline_ms;     /* whole exchange, 0: none */
    int64_t progress_ms;     /* when a byte last moved (low-speed limit) */
    int64_t cancel_check_ms; /* when the cancel callback was last asked */
    int reused;              /* c came from the idle list */
    int wrote;               /* some attempt began to write the request */
    int conn_failed;         /* the failure was the connection's (reset, closed, send error) */
    size_t answered;         /* bytes of the response read so far */
    size_t limit;            /* cap of the buffered body */
    int streaming;           /* 2xx and a stream callback */
    int keep;                /* the connection may be pooled after this response */
} xfer;

static int xfer_fail(xfer *x, int code, const char *fmt, ...) CO_PRINTF(3, 4);

/* Sets the error, prefixed with the request's method and path, and returns @p code. */
static int xfer_fail(xfer *x, int code, const char *fmt, ...)
{
    char msg[CO_MAX_ERROR_MESSAGE / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return co_error_set(code, "%s %s: %s", x->req->method, x->req->path, msg);
}

/* A connection-level failure: the server closed or reset the connection. */
static int conn_fail(xfer *x, const char *what)
{
    x->conn_failed = 1;
    if (x->answered > 0) {
        return xfer_fail(x, CO_EUNAVAILABLE, "%s:%s: %s after %zu bytes of the response",
                         x->t->host, x->t->port, what, x->answered);
    }
    return xfer_fail(x, CO_EUNAVAILABLE, "%s:%s: %s", x->t->host, x->t->port, what);
}

/* Asks the cancel callback; CO_ECANCELED when it says so. */
static int check_cancel(xfer *x, int64_t now)
{
    x->cancel_check_ms = now;
    if (x->req->cancelled && x->req->cancelled(x->req->cancel_payload)) {
        return xfer_fail(x, CO_ECANCELED, "cancelled");
    }
    return 0;
}

/* Checks the timers at @p now: the whole-exchange deadline, the low-speed limit and a phase
 * deadline (@p phase_ms, 0: none, named @p phase). Sets *@p wait_ms to how long a poll may
 * wait before one of them (or the next cancel check) is due. */
static int check_timers(xfer *x, int64_t now, int64_t phase_ms, const char *phase, int *wait_ms)
{
    int64_t wait = 1000;
    if (x->req->cancelled && now - x->cancel_check_ms >= 250) {
        int rc = check_cancel(x, now);
        if (rc < 0) {
            return rc;
        }
    }
    if (x->deadline_ms) {
        if (now >= x->deadline_ms) {
            return xfer_fail(x, CO_ETIMEOUT, "timed out after %ld ms", x->req->timeout_ms);
        }
        wait = x->deadline_ms - now < wait ? x->deadline_ms - now : wait;
    }
    if (phase_ms) {
        if (now >= phase_ms) {
            return xfer_fail(x, CO_ETIMEOUT, "%s %s:%s timed out", phase, x->t->host, x->t->port);
        }
        wait = phase_ms - now < wait ? phase_ms - now : wait;
    }
    if (x->req->low_speed_time_s > 0) {
        int64_t stall = x->progress_ms + (int64_t)x->req->low_speed_time_s * 1000;
        if (now >= stall) {
            return xfer_fail(x, CO_ETIMEOUT, "no data for %ld s", x->req->low_speed_time_s);
        }
        wait = stall - now < wait ? stall - now : wait;
    }
    if (x->req->cancelled) {
        int64_t next = x->cancel_check_ms + 250 - now;
        wait = next < wait ? next : wait;
    }
    *wait_ms = wait > 0 ? (int)wait : 0;
    return 0;
}

/* Waits until @p fd is ready for @p events, checking the timers at least once a second.
 * @return 0 when ready; CO_ETIMEOUT or CO_ECANCELED. */
static int wait_fd(xfer *x, int fd, short events, int64_t phase_ms, const char *phase)
{
    for (;;) {
        int wait = 0;
        int rc = check_timers(x, co_kube__now_ms(), phase_ms, phase, &wait);
        if (rc < 0) {
            return rc;
        }
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, wait);
        if (n > 0) {
            return 0; /* ready, or an error the next read or write reports */
        }
        if (n < 0 && errno != EINTR) {
            char eb[128];
            return xfer_fail(x, CO_ERROR, "poll: %s", co_errno_text(errno, eb, sizeof(eb)));
        }
    }
}

/* Notes that bytes moved and checks the timers now and then while data flows freely. */
static int progress(xfer *x)
{
    int64_t now = co_kube__now_ms();
    x->progress_ms = now;
    int wait = 0;
    return check_timers(x, now, 0, NULL, &wait);
}

/* --- connections -------------------------------------------------------------------------- */

static void conn_close(gconn *c)
{
    if (!c) {
        return;
    }
    if (c->tls) {
        gnutls_bye(c->tls, GNUTLS_SHUT_WR); /* best effort: the socket is non-blocking */
        gnutls_deinit(c->tls);
    }
    if (c->fd >= 0) {
        close(c->fd);
    }
    free(c);
}

/* Whether an idle connection still looks usable: nothing to read (a plain connection that is
 * readable was closed by the server or sent something unasked), or for TLS only records that
 * carry no data (session tickets). */
static int conn_alive(gconn *c)
{
    if (c->rpos < c->rlen) {
        return 0;
    }
    for (int i = 0; i < 4; i++) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int n = poll(&p, 1, 0);
        if (n == 0) {
            return 1;
        }
        if (n < 0 || !c->tls || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) {
            return 0;
        }
        char probe[256];
        ssize_t r = gnutls_record_recv(c->tls, probe, sizeof(probe));
        if (r != GNUTLS_E_AGAIN && r != GNUTLS_E_INTERRUPTED) {
            return 0;
        }
    }
    return 1;
}

/* Takes an idle connection that still looks usable, closing the ones that do not; NULL when
 * none is left. */
static gconn *pool_take(gtls_transport *t)
{
    for (;;) {
        pthread_mutex_lock(&t->lock);
        gconn *c = t->idle;
        if (c) {
            t->idle = c->next;
            t->nidle--;
        }
        pthread_mutex_unlock(&t->lock);
        if (!c) {
            return NULL;
        }
        c->next = NULL;
        if (conn_alive(c)) {
            return c;
        }
        conn_close(c);
    }
}

/* Returns a connection to the idle list, or closes it when the list is full. */
static void pool_give(gtls_transport *t, gconn *c)
{
    pthread_mutex_lock(&t->lock);
    if (t->nidle < POOL_MAX) {
        c->next = t->idle;
        t->idle = c;
        t->nidle++;
        c = NULL;
    }
    pthread_mutex_unlock(&t->lock);
    conn_close(c);
}

static void set_socket_options(int fd)
{
    int one = 1, idle = 30, intvl = 15;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
}

/* Connects to one address before @p until_ms. @return the socket, or -1 with errno set (a
 * timer's error is returned through *@p rc). */
static int connect_one(xfer *x, const struct addrinfo *ai, int64_t until_ms, int *rc)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        return -1;
    }
    set_socket_options(fd);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        *rc = wait_fd(x, fd, POLLOUT, until_ms, "connecting to");
        if (*rc < 0) {
            close(fd);
            return -1;
        }
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
            close(fd);
            errno = err ? err : ECONNREFUSED;
            return -1;
        }
    }
    return fd;
}

/* Opens a TCP connection to the server, trying each resolved address in turn. */
static int tcp_connect(xfer *x, int64_t until_ms, int *fd_out)
{
    gtls_transport *t = x->t;
    /* no AI_ADDRCONFIG: on a host whose only interface is loopback it hides 127.0.0.1 */
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(t->host, t->port, &hints, &res);
    char eb[128];
    if (gai != 0) {
        return xfer_fail(x, CO_EUNAVAILABLE, "cannot resolve %s: %s", t->host,
                         gai == EAI_SYSTEM ? co_errno_text(errno, eb, sizeof(eb))
                                           : gai_strerror(gai));
    }
    int last_errno = ECONNREFUSED;
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int rc = 0;
        int fd = connect_one(x, ai, until_ms, &rc);
        if (rc < 0) {
            freeaddrinfo(res);
            return rc;
        }
        if (fd >= 0) {
            freeaddrinfo(res);
            *fd_out = fd;
            return 0;
        }
        last_errno = errno;
    }
    freeaddrinfo(res);
    return xfer_fail(x, CO_EUNAVAILABLE, "cannot connect to %s:%s: %s", t->host, t->port,
                     co_errno_text(last_errno, eb, sizeof(eb)));
}

/* The error of a failed handshake: verification and TLS protocol failures are CO_ERROR,
 * transport failures CO_EUNAVAILABLE. */
static int handshake_error(xfer *x, gnutls_session_t s, int grc)
{
    gtls_transport *t = x->t;
    if (grc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
        unsigned status = gnutls_session_get_verify_cert_status(s);
        gnutls_datum_t out = {NULL, 0};
        const char *why = "verification failed";
        if (gnutls_certificate_verification_status_print(status, gnutls_certificate_type_get(s),
                                                         &out, 0) == 0 &&
            out.data) {
            size_t n = strlen((const char *)out.data);
            while (n > 0 && (out.data[n - 1] == ' ' || out.data[n - 1] == '\n')) {
                out.data[--n] = '\0';
            }
            why = (const char *)out.data;
        }
        int rc = xfer_fail(x, CO_ERROR, "TLS: the certificate of %s:%s is not valid for %s: %s",
                           t->host, t->port, t->verify_name, why);
        gnutls_free(out.data);
        return rc;
    }
    if (grc == GNUTLS_E_PUSH_ERROR || grc == GNUTLS_E_PULL_ERROR ||
        grc == GNUTLS_E_PREMATURE_TERMINATION || grc == GNUTLS_E_UNEXPECTED_PACKET_LENGTH) {
        return xfer_fail(x, CO_EUNAVAILABLE, "TLS handshake with %s:%s failed: %s", t->host,
                         t->port, gnutls_strerror(grc));
    }
    if (grc == GNUTLS_E_FATAL_ALERT_RECEIVED) {
        return xfer_fail(x, CO_ERROR, "TLS handshake with %s:%s failed: the server sent alert %s",
                         t->host, t->port, gnutls_alert_get_name(gnutls_alert_get(s)));
    }
    return xfer_fail(x, CO_ERROR, "TLS handshake with %s:%s failed: %s", t->host, t->port,
                     gnutls_strerror(grc));
}

/* Starts a TLS session on @p c and completes the handshake before @p until_ms. */
static int tls_start(xfer *x, gconn *c, int64_t until_ms)
{
    gtls_transport *t = x->t;
    gnutls_session_t s = NULL;
    int grc = gnutls_init(&s, GNUTLS_CLIENT | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL);
    if (grc < 0) {
        return xfer_fail(x, CO_ERROR, "gnutls_init: %s", gnutls_strerror(grc));
    }
    c->tls = s;
    gnutls_priority_set(s, t->prio);
    gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, t->cred);
    if (!t->verify_is_ip) {
        gnutls_server_name_set(s, GNUTLS_NAME_DNS, t->verify_name, strlen(t->verify_name));
    }
    if (!t->insecure) {
        gnutls_session_set_verify_cert(s, t->verify_name, 0);
    }
    gnutls_datum_t alpn = {(unsigned char *)"http/1.1", 8};
    gnutls_alpn_set_protocols(s, &alpn, 1, 0);
    gnutls_transport_set_int(s, c->fd);
    for (;;) {
        grc = gnutls_handshake(s);
        if (grc == GNUTLS_E_SUCCESS) {
            return 0;
        }
        if (grc == GNUTLS_E_AGAIN || grc == GNUTLS_E_INTERRUPTED || !gnutls_error_is_fatal(grc)) {
            short ev = gnutls_record_get_direction(s) ? POLLOUT : POLLIN;
            int rc = wait_fd(x, c->fd, ev, until_ms, "connecting to");
            if (rc < 0) {
                return rc;
            }
            continue;
        }
        return handshake_error(x, s, grc);
    }
}

/* Opens a new connection (TCP, then TLS for https://). */
static int conn_open(xfer *x, gconn **out)
{
    long ms =
        x->req->connect_timeout_ms > 0 ? x->req->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
    int64_t until_ms = co_kube__now_ms() + ms;
    int fd = -1;
    int rc = tcp_connect(x, until_ms, &fd);
    if (rc < 0) {
        return rc;
    }
    gconn *c = co_xcalloc(1, sizeof(*c));
    c->fd = fd;
    if (x->t->https && (rc = tls_start(x, c, until_ms)) < 0) {
        conn_close(c);
        return rc;
    }
    pthread_mutex_lock(&x->t->lock);
    x->t->connects++;
    pthread_mutex_unlock(&x->t->lock);
    *out = c;
    return 0;
}

/* --- raw reads and writes ----------------------------------------------------------------- */

/* Writes all @p len bytes. */
static int write_all(xfer *x, const char *data, size_t len)
{
    gconn *c = x->c;
    while (len > 0) {
        ssize_t n;
        short ev = POLLOUT;
        if (c->tls) {
            n = gnutls_record_send(c->tls, data, len);
            if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
                ev = gnutls_record_get_direction(c->tls) ? POLLOUT : POLLIN;
            } else if (n < 0) {
                return conn_fail(x, gnutls_strerror((int)n));
            }
        } else {
            n = send(c->fd, data, len, MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                char eb[128];
                return conn_fail(x, co_errno_text(errno, eb, sizeof(eb)));
            }
        }
        if (n > 0) {
            data += n;
            len -= (size_t)n;
            int rc = progress(x);
            if (rc < 0) {
                return rc;
            }
            continue;
        }
        int rc = wait_fd(x, c->fd, ev, 0, NULL);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

/* Reads more bytes into the connection's buffer (which must be empty).
 * @return bytes read, 0 at the end of the stream, or a negative error. */
static ssize_t fill(xfer *x)
{
    gconn *c = x->c;
    c->rpos = c->rlen = 0;
    for (;;) {
        ssize_t n;
        short ev = POLLIN;
        if (c->tls) {
            n = gnutls_record_recv(c->tls, c->rbuf, sizeof(c->rbuf));
            if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
                ev = gnutls_record_get_direction(c->tls) ? POLLOUT : POLLIN;
            } else if (n == GNUTLS_E_PREMATURE_TERMINATION) {
                n = 0; /* closed without close_notify: the framing tells whether it matters */
            } else if (n == GNUTLS_E_REHANDSHAKE || n == GNUTLS_E_WARNING_ALERT_RECEIVED) {
                continue;
            } else if (n < 0) {
                return conn_fail(x, gnutls_strerror((int)n));
            }
        } else {
            n = recv(c->fd, c->rbuf, sizeof(c->rbuf), 0);
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                char eb[128];
                return conn_fail(x, co_errno_text(errno, eb, sizeof(eb)));
            }
        }
        if (n >= 0) {
            if (n > 0) {
                c->rlen = (size_t)n;
                x->answered += (size_t)n;
                int rc = progress(x);
                if (rc < 0) {
                    return rc;
                }
            }
            return n;
        }
        int rc = wait_fd(x, c->fd, ev, 0, NULL);
        if (rc < 0) {
            return rc;
        }
    }
}

/* Makes at least one unparsed byte available. @return 0; CO_EUNAVAILABLE when the stream
 * ended (the message names @p what was being read); other errors. */
static int need(xfer *x, const char *what)
{
    if (x->c->rpos < x->c->rlen) {
        return 0;
    }
    ssize_t n = fill(x);
    if (n < 0) {
        return (int)n;
    }
    if (n == 0) {
        return conn_fail(x, x->answered ? what
                                        : "the server closed the connection without an "
                                          "answer");
    }
    return 0;
}

/* Reads one line ending in LF (CR before it dropped) into @p line, at most @p max bytes
 * including the line end; *@p budget (if not NULL) is charged for the bytes. */
static int read_line(xfer *x, co_buf *line, size_t max, size_t *budget, const char *what)
{
    gconn *c = x->c;
    co_buf_reset(line);
    size_t used = 0;
    for (;;) {
        int rc = need(x, what);
        if (rc < 0) {
            return rc;
        }
        const char *start = c->rbuf + c->rpos;
        size_t avail = c->rlen - c->rpos;
        const char *lf = memchr(start, '\n', avail);
        size_t take = lf ? (size_t)(lf - start) + 1 : avail;
        used += take;
        if (used > max || (budget && take > *budget)) {
            return xfer_fail(x, CO_ERROR, "%s exceeds %zu bytes", what,
                             budget ? (size_t)MAX_HEAD : max);
        }
        if (budget) {
            *budget -= take;
        }
        if (co_buf_put(line, start, lf ? take - 1 : take) < 0) {
            return xfer_fail(x, CO_ERROR, "%s exceeds %zu bytes", what, max);
        }
        c->rpos += take;
        if (lf) {
            if (line->len > 0 && line->ptr[line->len - 1] == '\r') {
                co_buf_truncate(line, line->len - 1);
            }
            return 0;
        }
    }
}

/* --- the response ------------------------------------------------------------------------- */

/* What the head of a response says about its body. */
typedef struct head {
    int status;
    int http10;
    int close;
    int chunked;
    int has_length;
    uint64_t length;
} head;

/* Parses "HTTP/1.x NNN reason". */
static int parse_status_line(xfer *x, const char *s, head *h)
{
    if (strncmp(s, "HTTP/1.", 7) != 0 || (s[7] != '0' && s[7] != '1') || s[8] != ' ' ||
        s[9] < '1' || s[9] > '5' || s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9' ||
        (s[12] != ' ' && s[12] != '\0')) {
        return xfer_fail(x, CO_ERROR, "malformed HTTP status line from %s:%s: \"%.60s\"",
                         x->t->host, x->t->port, s);
    }
    h->http10 = s[7] == '0';
    h->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    return 0;
}

/* Whether the comma-separated list @p list holds @p token (case-insensitive). */
static int has_token(const char *list, const char *token)
{
    size_t tlen = strlen(token);
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',') {
            p++;
        }
        const char *end = p;
        while (*end && *end != ',') {
            end++;
        }
        const char *last = end;
        while (last > p && (last[-1] == ' ' || last[-1] == '\t')) {
            last--;
        }
        if ((size_t)(last - p) == tlen && strncasecmp(p, token, tlen) == 0) {
            return 1;
        }
        p = end;
    }
    return 0;
}

/* Parses a decimal number of up to 18 digits (no sign, no spaces). @return 0 or -1. */
static int parse_decimal(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    size_t n = 0;
    for (; s[n] >= '0' && s[n] <= '9'; n++) {
        if (n == 18) {
            return -1;
        }
        v = v * 10 + (uint64_t)(s[n] - '0');
    }
    if (n == 0 || s[n] != '\0') {
        return -1;
    }
    *out = v;
    return 0;
}

/* Interprets one header line "Name: value". */
static int parse_header(xfer *x, char *line, head *h)
{
    char *colon = strchr(line, ':');
    if (!colon || colon == line) {
        return xfer_fail(x, CO_ERROR, "malformed HTTP header from %s:%s: \"%.60s\"", x->t->host,
                         x->t->port, line);
    }
    *colon = '\0';
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t') {
        v++;
    }
    size_t vlen = strlen(v);
    while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t')) {
        v[--vlen] = '\0';
    }
    if (strcasecmp(line, "Content-Length") == 0) {
        uint64_t len = 0;
        if (parse_decimal(v, &len) < 0 || (h->has_length && h->length != len)) {
            return xfer_fail(x, CO_ERROR, "invalid Content-Length from %s:%s: \"%.30s\"",
                             x->t->host, x->t->port, v);
        }
        h->has_length = 1;
        h->length = len;
    } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
        if (!has_token(v, "chunked")) {
            return xfer_fail(x, CO_ERROR, "unsupported Transfer-Encoding from %s:%s: \"%.30s\"",
                             x->t->host, x->t->port, v);
        }
        h->chunked = 1;
    } else if (strcasecmp(line, "Connection") == 0) {
        if (has_token(v, "close")) {
            h->close = 1;
        } else if (has_token(v, "keep-alive")) {
            h->http10 = 0; /* an HTTP/1.0 server that keeps the connection */
        }
    } else if (strcasecmp(line, "Retry-After") == 0) {
        uint64_t secs = 0;
        if (parse_decimal(v, &secs) == 0) {
            x->resp->retry_after_s = secs > LONG_MAX ? LONG_MAX : (long)secs;
        }
    }
    return 0;
}

/* Reads the status line and headers, skipping interim 1xx answers. */
static int read_head(xfer *x, head *h)
{
    co_buf line = CO_BUF_INIT(MAX_HEAD);
    size_t budget = MAX_HEAD;
    int rc = 0;
    for (;;) {
        memset(h, 0, sizeof(*h));
        x->resp->retry_after_s = -1;
        if ((rc = read_line(x, &line, MAX_HEAD, &budget, "the response head")) < 0 ||
            (rc = parse_status_line(x, co_buf_cstr(&line), h)) < 0) {
            break;
        }
        for (;;) {
            if ((rc = read_line(x, &line, MAX_HEAD, &budget, "the response head")) < 0) {
                goto out;
            }
            if (line.len == 0) {
                break;
            }
            if (line.ptr[0] == ' ' || line.ptr[0] == '\t') {
                continue; /* an obsolete folded continuation: nothing we read spans lines */
            }
            if ((rc = parse_header(x, line.ptr, h)) < 0) {
                goto out;
            }
        }
        if (h->status >= 200 || h->status == 101) {
            break;
        }
    }
out:
    co_buf_dispose(&line);
    return rc;
}

/* Hands body bytes to the stream callback or appends them to the buffered body. */
static int deliver(xfer *x, const char *data, size_t len)
{
    if (len == 0) {
        return 0;
    }
    if (x->streaming) {
        int rc = x->req->stream(data, len, x->req->stream_payload);
        if (rc < 0) {
            char msg[CO_MAX_ERROR_MESSAGE / 4];
            snprintf(msg, sizeof(msg), "%s", co_error_last());
            return xfer_fail(x, rc, "%s", msg);
        }
        return 0;
    }
    if (x->resp->body.len + len > x->limit || co_buf_put(&x->resp->body, data, len) < 0) {
        co_buf_dispose(&x->resp->body);
        return xfer_fail(x, CO_ETOOBIG, "response body exceeds %zu bytes", x->limit);
    }
    return 0;
}

/* Passes on @p len body bytes (or, with @p to_eof, everything until the server closes). */
static int read_body_bytes(xfer *x, uint64_t len, int to_eof)
{
    gconn *c = x->c;
    while (to_eof || len > 0) {
        if (c->rpos == c->rlen) {
            ssize_t n = fill(x);
            if (n < 0) {
                return (int)n;
            }
            if (n == 0) {
                if (to_eof) {
                    return 0;
                }
                return conn_fail(x, "the response body was cut short");
            }
        }
        size_t avail = c->rlen - c->rpos;
        size_t take = !to_eof && (uint64_t)avail > len ? (size_t)len : avail;
        int rc = deliver(x, c->rbuf + c->rpos, take);
        if (rc < 0) {
            return rc;
        }
        c->rpos += take;
        len -= to_eof ? 0 : take;
    }
    return 0;
}

/* Parses a chunk-size line: hexadecimal digits, then optional ";extensions". */
static int parse_chunk_size(xfer *x, const char *s, uint64_t *out)
{
    uint64_t v = 0;
    size_t n = 0;
    for (;; n++) {
        char ch = s[n];
        int d = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
        if (d < 0) {
            break;
        }
        if (n == 15) {
            n = 0; /* too large: reported below */
            break;
        }
        v = v * 16 + (uint64_t)d;
    }
    const char *rest = s + n;
    while (*rest == ' ' || *rest == '\t') {
        rest++;
    }
    if (n == 0 || (*rest != '\0' && *rest != ';')) {
        return xfer_fail(x, CO_ERROR, "malformed chunk size from %s:%s: \"%.30s\"", x->t->host,
                         x->t->port, s);
    }
    *out = v;
    return 0;
}

/* Reads a chunked body, its last chunk and the trailers (which are ignored). */
static int read_chunked(xfer *x)
{
    co_buf line = CO_BUF_INIT(MAX_CHUNK_LINE);
    int rc = 0;
    for (;;) {
        uint64_t size = 0;
        if ((rc = read_line(x, &line, MAX_CHUNK_LINE, NULL, "a chunk size line")) < 0 ||
            (rc = parse_chunk_size(x, co_buf_cstr(&line), &size)) < 0) {
            break;
        }
        if (size == 0) {
            size_t budget = MAX_HEAD;
            do {
                rc = read_line(x, &line, MAX_HEAD, &budget, "the trailers");
            } while (rc == 0 && line.len > 0);
            break;
        }
        if ((rc = read_body_bytes(x, size, 0)) < 0 ||
            (rc = read_line(x, &line, MAX_CHUNK_LINE, NULL, "the end of a chunk")) < 0) {
            break;
        }
        if (line.len != 0) {
            rc = xfer_fail(x, CO_ERROR, "malformed chunk from %s:%s: data beyond its size",
                           x->t->host, x->t->port);
            break;
        }
    }
    co_buf_dispose(&line);
    return rc;
}

/* Reads the answer: head, then the body as its framing says. */
static int read_response(xfer *x)
{
    head h;
    int rc = read_head(x, &h);
    if (rc < 0) {
        return rc;
    }
    x->resp->status = h.status;
    x->streaming = x->req->stream && h.status >= 200 && h.status < 300;
    x->keep = !h.close && !h.http10;
    if (strcmp(x->req->method, "HEAD") == 0 || h.status == 204 || h.status == 304 ||
        h.status == 101) {
        x->keep = x->keep && h.status != 101;
        return 0;
    }
    if (h.chunked) {
        return read_chunked(x);
    }
    if (h.has_length) {
        if (!x->streaming && h.length > x->limit) {
            x->keep = 0;
            co_buf_dispose(&x->resp->body);
            return xfer_fail(x, CO_ETOOBIG, "response body of %llu bytes exceeds %zu bytes",
                             (unsigned long long)h.length, x->limit);
        }
        return read_body_bytes(x, h.length, 0);
    }
    x->keep = 0; /* the body lasts until the server closes */
    return read_body_bytes(x, 0, 1);
}

/* --- the request -------------------------------------------------------------------------- */

/* Whether a caller's header names one that framing owns (Host, Content-Length and the like). */
static int reserved_header(const char *line, size_t name_len)
{
    static const char *const names[] = {"Host", "Content-Length", "Connection", "Transfer-Encoding",
                                        "Expect"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(names); i++) {
        if (strlen(names[i]) == name_len && strncasecmp(line, names[i], name_len) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Writes the request line and headers into @p out. */
static int build_head(xfer *x, co_buf *out)
{
    const co_kube_request *req = x->req;
    if (strpbrk(req->path, " \r\n\t") || req->path[0] != '/' || strpbrk(req->method, " \r\n")) {
        return xfer_fail(x, CO_EINVALID, "the request line would be malformed");
    }
    int rc = co_buf_printf(out, "%s %s%s HTTP/1.1\r\nHost: %s\r\n", req->method, x->t->prefix,
                           req->path, x->t->authority);
    for (size_t i = 0; rc == 0 && i < req->nheaders; i++) {
        const char *h = req->headers[i];
        const char *colon = strchr(h, ':');
        if (!colon || colon == h || strpbrk(h, "\r\n")) {
            return xfer_fail(x, CO_EINVALID, "malformed request header \"%.40s\"", h);
        }
        const char *v = colon + 1;
        while (*v == ' ') {
            v++;
        }
        if (*v == '\0' || reserved_header(h, (size_t)(colon - h))) {
            continue; /* an empty value removes a header, as with libcurl */
        }
        rc = co_buf_printf(out, "%s\r\n", h);
    }
    if (rc == 0 && (req->body || strcmp(req->method, "POST") == 0 ||
                    strcmp(req->method, "PUT") == 0 || strcmp(req->method, "PATCH") == 0)) {
        rc = co_buf_printf(out, "Content-Length: %zu\r\n", req->body ? req->body_len : 0);
    }
    if (rc == 0) {
        rc = co_buf_puts(out, "Connection: keep-alive\r\n\r\n");
    }
    if (rc == 0 && req->body && req->body_len <= INLINE_BODY) {
        rc = co_buf_put(out, req->body, req->body_len);
    }
    if (rc < 0) {
        return xfer_fail(x, CO_ETOOBIG, "request headers too large");
    }
    return 0;
}

/* One attempt on one connection: a pooled one when @p allow_pooled and one is idle. */
static int attempt(xfer *x, const co_buf *head_buf, int allow_pooled)
{
    const co_kube_request *req = x->req;
    x->c = allow_pooled ? pool_take(x->t) : NULL;
    x->reused = x->c != NULL;
    x->conn_failed = 0;
    x->answered = 0;
    x->keep = 0;
    if (!x->c) {
        int rc = conn_open(x, &x->c);
        if (rc < 0) {
            x->resp->not_sent = !x->wrote;
            return rc;
        }
    }
    x->wrote = 1;
    int rc = write_all(x, head_buf->ptr, head_buf->len);
    if (rc == 0 && req->body && req->body_len > INLINE_BODY) {
        rc = write_all(x, req->body, req->body_len);
    }
    if (rc == 0) {
        rc = read_response(x);
    }
    if (rc == 0 && x->keep && x->c->rpos == x->c->rlen) {
        pool_give(x->t, x->c);
    } else {
        conn_close(x->c);
    }
    x->c = NULL;
    return rc;
}

/* The transport's send: builds the head once, then one attempt, and a second on a new
 * connection when a pooled one turned out to be closed before any answer came. */
static int gtls_send(co_kube_transport *self, const co_kube_request *req, co_kube_response *resp)
{
    gtls_transport *t = (gtls_transport *)self;
    int64_t now = co_kube__now_ms();
    xfer x = {
        .t = t,
        .req = req,
        .resp = resp,
        .deadline_ms = req->timeout_ms > 0 ? now + req->timeout_ms : 0,
        .progress_ms = now,
        .cancel_check_ms = now,
        .limit = req->max_response ? req->max_response : SIZE_MAX,
    };
    if (resp->body.max < x.limit) {
        x.limit = resp->body.max;
    }
    pthread_mutex_lock(&t->lock);
    t->requests++;
    pthread_mutex_unlock(&t->lock);
    int rc = check_cancel(&x, now);
    if (rc < 0) {
        resp->not_sent = 1;
        return rc;
    }
    co_buf head_buf = CO_BUF_INIT(SIZE_MAX);
    rc = build_head(&x, &head_buf);
    if (rc == 0) {
        rc = attempt(&x, &head_buf, 1);
        if (rc < 0 && x.reused && x.conn_failed && x.answered == 0) {
            /* the server closed the idle connection as the request went out: one more try on a
             * fresh connection, which is safe because nothing of an answer was seen */
            resp->status = 0;
            resp->retry_after_s = -1;
            co_buf_reset(&resp->body);
            co_error_clear();
            rc = attempt(&x, &head_buf, 0);
        }
    }
    co_buf_dispose(&head_buf);
    return rc;
}

/* --- construction ------------------------------------------------------------------------- */

static void gtls_free(co_kube_transport *self)
{
    gtls_transport *t = (gtls_transport *)self;
    if (!t) {
        return;
    }
    while (t->idle) {
        gconn *c = t->idle;
        t->idle = c->next;
        conn_close(c);
    }
    if (t->cred) {
        gnutls_certificate_free_credentials(t->cred);
    }
    if (t->prio) {
        gnutls_priority_deinit(t->prio);
    }
    pthread_mutex_destroy(&t->lock);
    free(t->host);
    free(t->port);
    free(t->authority);
    free(t->prefix);
    free(t->verify_name);
    free(t);
}

/* Whether @p s is an IPv4 or IPv6 address literal. */
static int is_ip_literal(const char *s)
{
    unsigned char addr[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, addr) == 1 || inet_pton(AF_INET6, s, addr) == 1;
}

/* Splits the server URL into scheme, host, port and path prefix. */
static int parse_server(gtls_transport *t, const char *server)
{
    const char *p;
    if (strncasecmp(server, "https://", 8) == 0) {
        t->https = 1;
        p = server + 8;
    } else if (strncasecmp(server, "http://", 7) == 0) {
        p = server + 7;
    } else {
        return co_error_set(CO_EINVALID, "server %s: the URL must start with https:// or http://",
                            server);
    }
    size_t alen = strcspn(p, "/?#");
    t->authority = co_xstrndup(p, alen);
    t->prefix = co_xstrdup(p + alen);
    if (strpbrk(t->prefix, "?# \r\n") || strpbrk(t->authority, "@ \r\n")) {
        return co_error_set(CO_EINVALID, "server %s: unsupported URL", server);
    }
    const char *a = t->authority;
    const char *port = NULL;
    if (a[0] == '[') {
        const char *close = strchr(a, ']');
        if (!close || (close[1] != '\0' && close[1] != ':')) {
            return co_error_set(CO_EINVALID, "server %s: malformed IPv6 address", server);
        }
        t->host = co_xstrndup(a + 1, (size_t)(close - a - 1));
        port = close[1] == ':' ? close + 2 : NULL;
    } else {
        const char *colon = strchr(a, ':');
        t->host = co_xstrndup(a, colon ? (size_t)(colon - a) : strlen(a));
        port = colon ? colon + 1 : NULL;
    }
    uint64_t num = 0;
    if (port && (parse_decimal(port, &num) < 0 || num == 0 || num > 65535)) {
        return co_error_set(CO_EINVALID, "server %s: invalid port", server);
    }
    if (!t->host[0]) {
        return co_error_set(CO_EINVALID, "server %s: no host", server);
    }
    t->port = port ? co_xstrdup(port) : co_xstrdup(t->https ? "443" : "80");
    return 0;
}

/* Loads the trust anchors and the client certificate into the credentials. */
static int setup_credentials(gtls_transport *t, const co_kube_config *cfg)
{
    int grc = gnutls_certificate_allocate_credentials(&t->cred);
    if (grc < 0) {
        return co_error_set(CO_ERROR, "gnutls credentials: %s", gnutls_strerror(grc));
    }
    if (cfg->ca.data) {
        gnutls_datum_t ca = {(unsigned char *)cfg->ca.data, (unsigned)cfg->ca.len};
        grc = gnutls_certificate_set_x509_trust_mem(t->cred, &ca, GNUTLS_X509_FMT_PEM);
        if (grc <= 0) {
            return co_error_set(CO_EINVALID, "certificate authority of %s: %s", cfg->server,
                                grc < 0 ? gnutls_strerror(grc) : "no PEM certificate found");
        }
    } else if (t->https && !t->insecure) {
        /* none found is reported by the first handshake, whose verification fails */
        (void)gnutls_certificate_set_x509_system_trust(t->cred);
    }
    if (cfg->client_cert.data || cfg->client_key.data) {
        if (!cfg->client_cert.data || !cfg->client_key.data) {
            return co_error_set(CO_EINVALID,
                                "client certificate for %s: certificate and key "
                                "must be given together",
                                cfg->server);
        }
        gnutls_datum_t cert = {(unsigned char *)cfg->client_cert.data,
                               (unsigned)cfg->client_cert.len};
        gnutls_datum_t key = {(unsigned char *)cfg->client_key.data, (unsigned)cfg->client_key.len};
        grc = gnutls_certificate_set_x509_key_mem2(t->cred, &cert, &key, GNUTLS_X509_FMT_PEM, NULL,
                                                   0);
        if (grc < 0) {
            return co_error_set(CO_EINVALID, "client certificate and key for %s: %s", cfg->server,
                                gnutls_strerror(grc));
        }
    }
    const char *err = NULL;
    grc = gnutls_priority_init(&t->prio, TLS_PRIORITY, &err);
    if (grc < 0) {
        return co_error_set(CO_ERROR, "gnutls priority \"%s\": %s", TLS_PRIORITY,
                            gnutls_strerror(grc));
    }
    return 0;
}

int co_kube_transport_gnutls_new(co_kube_transport **out, const co_kube_config *cfg)
{
    if (cfg->proxy_url) {
        return co_error_set(CO_EINVALID,
                            "proxy %s: the GnuTLS transport does not support "
                            "proxies",
                            cfg->proxy_url);
    }
    gtls_transport *t = co_xcalloc(1, sizeof(*t));
    t->base.send = gtls_send;
    t->base.free = gtls_free;
    pthread_mutex_init(&t->lock, NULL);
    t->insecure = cfg->insecure;
    int rc = parse_server(t, cfg->server);
    if (rc == 0) {
        t->verify_name = co_xstrdup(cfg->tls_server_name ? cfg->tls_server_name : t->host);
        t->verify_is_ip = is_ip_literal(t->verify_name);
        rc = setup_credentials(t, cfg);
    }
    if (rc < 0) {
        gtls_free(&t->base);
        return rc;
    }
    *out = &t->base;
    return 0;
}

int co_kube__gnutls_stats(const co_kube_transport *tr,
                          unsigned long *requests,
                          unsigned long *connects)
{
    if (!tr || tr->send != gtls_send) {
        return CO_EINVALID;
    }
    gtls_transport *t = (gtls_transport *)tr;
    pthread_mutex_lock(&t->lock);
    *requests = t->requests;
    *connects = t->connects;
    pthread_mutex_unlock(&t->lock);
    return 0;
}
