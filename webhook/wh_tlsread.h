/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read-ahead under a server-side GnuTLS session. GnuTLS reads a record in two calls, its 5-byte
 * header and then the rest, so every request costs two recv() system calls. Attached to a
 * session, this layer asks the socket for up to a whole record at once and hands GnuTLS what it
 * asks for from that buffer: one recv() per request.
 *
 * Readiness is kept exactly as without it. "Would block" is reported only when the buffer is
 * empty and the socket says EAGAIN, so an event loop that keeps a connection read-ready until it
 * sees EAGAIN (libmicrohttpd with edge-triggered epoll) never waits on bytes already read here.
 * The buffer exists only while it holds bytes; an idle connection costs a few words.
 */
#ifndef WH_TLSREAD_H
#define WH_TLSREAD_H

#include <stddef.h>
#include <sys/types.h>

typedef struct wh_tlsread wh_tlsread;

/** Bytes asked of the socket at once: the largest TLS record with its header. */
#define WH_TLSREAD_CHUNK (16384 + 256 + 5)

/**
 * Makes @p session (a gnutls_session_t) read socket @p fd through a new read-ahead layer; its
 * writes keep going straight to @p fd. Call before the handshake; free after gnutls_deinit().
 */
wh_tlsread *wh_tlsread_attach(void *session, int fd);

/** Frees the layer. NULL is a no-op. */
void wh_tlsread_free(wh_tlsread *r);

/**
 * The pull function GnuTLS calls: up to @p len bytes into @p buf. Returns the count, 0 at end
 * of stream, or -1 with errno (EAGAIN only when nothing is buffered and the socket is drained).
 */
ssize_t wh_tlsread_pull(wh_tlsread *r, void *buf, size_t len);

/** Bytes read from the socket and not yet handed on. */
size_t wh_tlsread_buffered(const wh_tlsread *r);

/** recv() calls made so far (for tests and diagnostics). */
unsigned long wh_tlsread_reads(const wh_tlsread *r);

#endif
