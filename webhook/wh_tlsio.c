/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read-ahead and write coalescing for server-side GnuTLS sessions (see wh_tlsio.h). Both
 * buffers are taken when needed and given back as soon as they are empty, so between requests
 * a connection holds none; with the allocator's thread caches that costs far less than the
 * system calls it saves.
 */
#include "webhook/wh_tlsio.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <gnutls/gnutls.h>

#include "co/common.h"

/* iovecs passed to one sendmsg(): the kept-back record and GnuTLS's pending ones */
#define MAX_IOV 16

struct wh_tlsio {
    gnutls_session_t session; /* NULL when driven directly (tests) */
    int fd;
    char *buf; /* read ahead: WH_TLSIO_CHUNK bytes while off < len, else NULL */
    size_t off, len;
    int hold_next; /* keep the next record back */
    char *held;    /* the record kept back, NULL when none */
    size_t held_len;
    unsigned long reads, writes;
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

/* Drops the first @p n bytes kept back. */
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

/*
 * GnuTLS's write: the kept-back record, if any, goes first in the same sendmsg(). Returns the
 * bytes of @p iov written; while kept-back bytes remain unwritten, it reports EAGAIN, and
 * GnuTLS offers the same records again once the socket is writable.
 */
static ssize_t vec_push(gnutls_transport_ptr_t ptr, const giovec_t *iov, int cnt)
{
    wh_tlsio *r = ptr;
    if (r->hold_next && !r->held) {
        size_t total = 0;
        for (int i = 0; i < cnt; i++) {
            total += iov[i].iov_len;
        }
        r->hold_next = 0;
        r->held = co_xmalloc(total ? total : 1);
        for (int i = 0; i < cnt; i++) {
            memcpy(r->held + r->held_len, iov[i].iov_base, iov[i].iov_len);
            r->held_len += iov[i].iov_len;
        }
        return (ssize_t)total;
    }
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
        sent = sendmsg(r->fd, &msg, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    r->writes++;
    if (sent < 0) {
        set_errno(r, errno);
        return -1;
    }
    if (r->held) {
        size_t from_held = (size_t)sent < r->held_len ? (size_t)sent : r->held_len;
        consume_held(r, from_held);
        if (r->held) {
            set_errno(r, EAGAIN);
            return -1;
        }
        sent -= (ssize_t)from_held;
    }
    return sent;
}

void wh_tlsio_hold_next(wh_tlsio *r)
{
    r->hold_next = 1;
}

int wh_tlsio_flush(wh_tlsio *r)
{
    r->hold_next = 0;
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
    }
    return 0;
}

unsigned long wh_tlsio_writes(const wh_tlsio *r)
{
    return r->writes;
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

void wh_tlsio_free(wh_tlsio *r)
{
    if (r) {
        free(r->held);
        free(r->buf);
        free(r);
    }
}
