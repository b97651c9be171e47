/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read-ahead for server-side GnuTLS sessions (see wh_tlsread.h). The buffer is taken when a
 * read needs it and given back as soon as GnuTLS has taken every byte, so between requests a
 * connection holds none; with the allocator's thread caches the pair costs far less than the
 * recv() it saves.
 */
#include "webhook/wh_tlsread.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <gnutls/gnutls.h>

#include "co/common.h"

struct wh_tlsread {
    gnutls_session_t session; /* NULL when driven directly (tests) */
    int fd;
    char *buf; /* WH_TLSREAD_CHUNK bytes while off < len, else NULL */
    size_t off, len;
    unsigned long reads;
};

static ssize_t read_socket(wh_tlsread *r, void *buf, size_t len)
{
    ssize_t n;
    do {
        n = recv(r->fd, buf, len, 0);
    } while (n < 0 && errno == EINTR);
    r->reads++;
    if (n < 0 && r->session) {
        gnutls_transport_set_errno(r->session, errno);
    }
    return n;
}

ssize_t wh_tlsread_pull(wh_tlsread *r, void *buf, size_t len)
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
    if (len >= WH_TLSREAD_CHUNK) {
        /* as much as a chunk is wanted: nothing to gain from a copy */
        return read_socket(r, buf, len);
    }
    r->buf = co_xmalloc(WH_TLSREAD_CHUNK);
    ssize_t got = read_socket(r, r->buf, WH_TLSREAD_CHUNK);
    if (got <= 0) {
        int saved = errno;
        free(r->buf);
        r->buf = NULL;
        errno = saved;
        return got;
    }
    r->len = (size_t)got;
    return wh_tlsread_pull(r, buf, len);
}

size_t wh_tlsread_buffered(const wh_tlsread *r)
{
    return r->len - r->off;
}

unsigned long wh_tlsread_reads(const wh_tlsread *r)
{
    return r->reads;
}

static ssize_t pull(gnutls_transport_ptr_t ptr, void *buf, size_t len)
{
    return wh_tlsread_pull(ptr, buf, len);
}

/* GnuTLS waits with this where a read may time out (handshake and record timeouts): bytes in
 * the buffer count as readable, as they would in the socket. */
static int pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms)
{
    wh_tlsread *r = ptr;
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
        gnutls_transport_set_errno(r->session, errno);
    }
    return rc;
}

wh_tlsread *wh_tlsread_attach(void *session, int fd)
{
    wh_tlsread *r = co_xcalloc(1, sizeof(*r));
    r->session = session;
    r->fd = fd;
    if (session) {
        gnutls_session_t s = session;
        gnutls_transport_set_pull_function(s, pull);
        gnutls_transport_set_pull_timeout_function(s, pull_timeout);
        /* reads come here, writes still go to the socket through GnuTLS's own push */
        gnutls_transport_set_ptr2(s, r, (gnutls_transport_ptr_t)(intptr_t)fd);
    }
    return r;
}

void wh_tlsread_free(wh_tlsread *r)
{
    if (r) {
        free(r->buf);
        free(r);
    }
}
