/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The socket side of a server-side GnuTLS session, arranged for request/response traffic.
 *
 * Reads: GnuTLS reads a record in two calls, its 5-byte header and then the rest, so every
 * request costs two recv() system calls. This layer asks the socket for up to a whole record at
 * once and hands GnuTLS what it asks for from that buffer: one recv() per request. "Would
 * block" is reported only when the buffer is empty and the socket says EAGAIN, so an event loop
 * that keeps a connection read-ready until it sees EAGAIN (libmicrohttpd with edge-triggered
 * epoll) never waits on bytes already read here. The buffer exists only while it holds bytes.
 *
 * Writes: libmicrohttpd sends a TLS response as two records, headers then body, each with its
 * own sendmsg(). When the server knows a body follows, it asks (wh_tlsio_hold_next) for the
 * next record to be kept back and written together with the one after it: one sendmsg() per
 * response. Whatever is still kept back when the response is complete is written out by
 * wh_tlsio_flush(), so a response never waits on a record that did not come.
 */
#ifndef WH_TLSIO_H
#define WH_TLSIO_H

#include <stddef.h>
#include <sys/types.h>

typedef struct wh_tlsio wh_tlsio;

/** Bytes asked of the socket at once: the largest TLS record with its header. */
#define WH_TLSIO_CHUNK (16384 + 256 + 5)

/**
 * Makes @p session (a gnutls_session_t) read and write socket @p fd through a new layer. Call
 * before the handshake; free after gnutls_deinit(). With @p session NULL the layer is only
 * driven directly (tests).
 */
wh_tlsio *wh_tlsio_attach(void *session, int fd);

/** Frees the layer. NULL is a no-op. */
void wh_tlsio_free(wh_tlsio *r);

/**
 * The pull function GnuTLS calls: up to @p len bytes into @p buf. Returns the count, 0 at end
 * of stream, or -1 with errno (EAGAIN only when nothing is buffered and the socket is drained).
 */
ssize_t wh_tlsio_pull(wh_tlsio *r, void *buf, size_t len);

/** Bytes read from the socket and not yet handed on. */
size_t wh_tlsio_buffered(const wh_tlsio *r);

/** Keeps the next record GnuTLS writes back, to go out with the record after it. */
void wh_tlsio_hold_next(wh_tlsio *r);

/**
 * Writes out a record still kept back, without blocking, and cancels a hold not yet used.
 * @return 0, or -1 when the socket would not take it all (errno set): the connection cannot
 * deliver its response and should be closed.
 */
int wh_tlsio_flush(wh_tlsio *r);

/** recv() calls made so far (for tests and diagnostics). */
unsigned long wh_tlsio_reads(const wh_tlsio *r);

/** sendmsg()/send() calls made so far (for tests and diagnostics). */
unsigned long wh_tlsio_writes(const wh_tlsio *r);

#endif
