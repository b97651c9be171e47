/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read-ahead and one-record responses for server-side GnuTLS sessions (see wh_tlsio.h). The
 * read buffer and the bytes a flush could not write are taken when needed and given back as
 * soon as they are empty, so between requests a connection holds none; with the allocator's
 * thread caches that costs far less than the system calls it saves.
 */
#include "webhook/wh_tlsio.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <gnutls/gnutls.h>

#include "co/util/common.h"

/* iovecs passed to one sendmsg(): bytes a flush could not write and GnuTLS's records */
#define MAX_IOV 16

/* pushes made by flushes, in the whole process */
static atomic_ulong pushes;

struct wh_tlsio {
    gnutls_session_t session; /* NULL when driven directly (tests) */
    int fd;
    char *buf; /* read ahead: WH_TLSIO_CHUNK bytes while off < len, else NULL */
    size_t off, len;
    int corked;      /* GnuTLS gathers writes until wh_tlsio_flush() */
    int sock_corked; /* the socket has been corked (TCP_CORK) by the server */
    int uncorked;    /* ...and a flush has taken the cork off since: nothing more to push */
    int flushing;    /* in wh_tlsio_flush(): what the socket does not take is kept in held */
    int err;         /* errno of the last failed write */
    char *held;      /* records written by GnuTLS and not yet by the socket, NULL when none */
    size_t held_len;
    unsigned long reads, writes;
    void (*on_read)(void *ctx);
    void *on_read_ctx;
};

static void set_errno(wh_tlsio *r, int err)
{
    errno = err;
    if (r->session) {
        gnutls_transport_set_errno(r->session, err);
    }
}

/* --- reads ------------------------------------------------------------------------------------ */

static ssize_t read_socket(wh_tlsio *r, void *buf, size_t len)
{
    ssize_t n;
    do {
        n = recv(r->fd, buf, len, 0);
    } while (n < 0 && errno == EINTR);
    r->reads++;
    if (n < 0) {
        set_errno(r, errno);
    } else if (n > 0 && r->on_read) {
        r->on_read(r->on_read_ctx);
    }
    return n;
}

ssize_t wh_tlsio_pull(wh_tlsio *r, void *buf, size_t len)
{
    if (r->off < r->len) {
        size_t n = r->len - r->off < len ? r->len - r->off : len;
        memcpy(buf, r->buf + r->off, n);
        r->off += n;
        if (r->off == r->len) {
            free(r->buf);
            r->buf = NULL;
            r->off = r->len = 0;
        }
        return (ssize_t)n;
    }
    if (len >= WH_TLSIO_CHUNK) {
        /* as much as a chunk is wanted: nothing to gain from a copy */
        return read_socket(r, buf, len);
    }
    r->buf = co_xmalloc(WH_TLSIO_CHUNK);
    ssize_t got = read_socket(r, r->buf, WH_TLSIO_CHUNK);
    if (got <= 0) {
        int saved = errno;
        free(r->buf);
        r->buf = NULL;
        errno = saved;
        return got;
    }
    r->len = (size_t)got;
    return wh_tlsio_pull(r, buf, len);
}

size_t wh_tlsio_buffered(const wh_tlsio *r)
{
    return r->len - r->off;
}

unsigned long wh_tlsio_reads(const wh_tlsio *r)
{
    return r->reads;
}

static ssize_t pull(gnutls_transport_ptr_t ptr, void *buf, size_t len)
{
    return wh_tlsio_pull(ptr, buf, len);
}

/* GnuTLS waits with this where a read may time out (handshake and record timeouts): bytes in
 * the buffer count as readable, as they would in the socket. */
static int pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms)
{
    wh_tlsio *r = ptr;
    if (r->off < r->len) {
        return 1;
    }
    struct pollfd p = {.fd = r->fd, .events = POLLIN};
    int wait = ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : ms > INT32_MAX ? INT32_MAX : (int)ms;
    int rc;
    do {
        rc = poll(&p, 1, wait);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        set_errno(r, errno);
    }
    return rc;
}

/* --- writes ----------------------------------------------------------------------------------- */

/* Drops the first @p n bytes kept. */
static void consume_held(wh_tlsio *r, size_t n)
{
    if (n < r->held_len) {
        memmove(r->held, r->held + n, r->held_len - n);
        r->held_len -= n;
        return;
    }
    free(r->held);
    r->held = NULL;
    r->held_len = 0;
}

/* Keeps the bytes of @p iov from offset @p skip on, after those already kept. */
static void keep(wh_tlsio *r, const giovec_t *iov, int cnt, size_t skip)
{
    size_t more = 0;
    for (int i = 0; i < cnt; i++) {
        more += iov[i].iov_len;
    }
    more -= skip;
    if (!more) {
        return;
    }
    r->held = co_xrealloc(r->held, r->held_len + more);
    for (int i = 0; i < cnt; i++) {
        size_t n = iov[i].iov_len, from = skip < n ? skip : n;
        skip -= from;
        memcpy(r->held + r->held_len, (const char *)iov[i].iov_base + from, n - from);
        r->held_len += n - from;
    }
}

/*
 * GnuTLS's write, one sendmsg() for the bytes still kept (first) and the records offered. Out of
 * a flush it returns the bytes of @p iov written, reporting EAGAIN while kept bytes remain, and
 * GnuTLS offers the same records again once the socket is writable. In a flush it takes every
 * record: what the socket does not, is kept for wh_tlsio_flush() to write.
 */
static ssize_t vec_push(gnutls_transport_ptr_t ptr, const giovec_t *iov, int cnt)
{
    wh_tlsio *r = ptr;
    struct iovec v[MAX_IOV];
    int n = 0;
    if (r->held) {
        v[n].iov_base = r->held;
        v[n++].iov_len = r->held_len;
    }
    /* more than fit go in a later call: GnuTLS offers what was not written again */
    for (int i = 0; i < cnt && n < MAX_IOV; i++) {
        v[n++] = iov[i];
    }
    struct msghdr msg = {.msg_iov = v, .msg_iovlen = (size_t)n};
    ssize_t sent;
    do {
        sent = sendmsg(r->fd, &msg, MSG_NOSIGNAL | (r->flushing ? MSG_DONTWAIT : 0));
    } while (sent < 0 && errno == EINTR);
    r->writes++;
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        r->err = errno;
        set_errno(r, errno);
        return -1;
    }
    size_t done = sent < 0 ? 0 : (size_t)sent;
    if (r->held) {
        size_t from_held = done < r->held_len ? done : r->held_len;
        consume_held(r, from_held);
        done -= from_held;
    }
    if (r->flushing) {
        keep(r, iov, cnt, done);
        size_t total = 0;
        for (int i = 0; i < cnt; i++) {
            total += iov[i].iov_len;
        }
        return (ssize_t)total;
    }
    if (r->held || !done) {
        set_errno(r, EAGAIN);
        return -1;
    }
    return (ssize_t)done;
}

void wh_tlsio_cork(wh_tlsio *r, int socket_corked)
{
    if (socket_corked) {
        r->sock_corked = 1;
    }
    if (r->session && !r->corked) {
        gnutls_record_cork(r->session);
        r->corked = 1;
    }
}

/*
 * Pushes what the socket holds: clearing TCP_CORK sends the queued bytes (tcp(7)); left corked,
 * they would wait for the cork's timer (200 ms). The socket itself sends at once (TCP_NODELAY,
 * set when it was accepted), so once the cork the server set is off, later responses need no
 * push. Not a TCP socket (tests): nothing to do.
 */
static void push(wh_tlsio *r)
{
    if (r->uncorked) {
        return;
    }
    int off = 0;
    atomic_fetch_add_explicit(&pushes, 1, memory_order_relaxed);
    if (setsockopt(r->fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)) == 0 && r->sock_corked) {
        r->uncorked = 1;
    }
}

int wh_tlsio_flush(wh_tlsio *r)
{
    int wrote = 0;
    if (r->corked) {
        r->corked = 0;
        r->flushing = 1;
        r->err = 0;
        int rc = gnutls_record_uncork(r->session, 0);
        r->flushing = 0;
        if (rc < 0) {
            errno = r->err ? r->err : EIO;
            return -1;
        }
        wrote = rc > 0;
    }
    while (r->held) {
        ssize_t sent = send(r->fd, r->held, r->held_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        r->writes++;
        if (sent < 0 && errno == EINTR) {
            continue;
        }
        if (sent <= 0) {
            if (sent == 0) {
                errno = EPIPE;
            }
            return -1;
        }
        consume_held(r, (size_t)sent);
        wrote = 1;
    }
    if (wrote) {
        push(r);
    }
    return 0;
}

unsigned long wh_tlsio_writes(const wh_tlsio *r)
{
    return r->writes;
}

unsigned long wh_tlsio_pushes(void)
{
    return atomic_load_explicit(&pushes, memory_order_relaxed);
}

/* --- the session ------------------------------------------------------------------------------ */

wh_tlsio *wh_tlsio_attach(void *session, int fd)
{
    wh_tlsio *r = co_xcalloc(1, sizeof(*r));
    r->session = session;
    r->fd = fd;
    if (session) {
        gnutls_session_t s = session;
        gnutls_transport_set_pull_function(s, pull);
        gnutls_transport_set_pull_timeout_function(s, pull_timeout);
        gnutls_transport_set_vec_push_function(s, vec_push);
        gnutls_transport_set_ptr(s, r);
    }
    return r;
}

void wh_tlsio_on_read(wh_tlsio *r, void (*fn)(void *ctx), void *ctx)
{
    r->on_read = fn;
    r->on_read_ctx = ctx;
}

void wh_tlsio_free(wh_tlsio *r)
{
    if (r) {
        free(r->held);
        free(r->buf);
        free(r);
    }
}
