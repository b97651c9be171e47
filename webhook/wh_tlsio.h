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
 * Writes: libmicrohttpd sends a TLS response as two records, headers then body. For a small
 * response the server corks the session first (wh_tlsio_cork): GnuTLS gathers both writes, and
 * wh_tlsio_flush(), once the response is complete, seals them as one record and writes it with
 * one sendmsg(). The client then decrypts one record per answer instead of two, and the server
 * seals one.
 *
 * Pushing: libmicrohttpd corks the socket (TCP_CORK) before the headers of a small response and
 * then leaves it corked, pushing each response out with TCP_NODELAY right after its own writes,
 * which here come before the flush. So a flush must push too. It takes the cork off rather than
 * setting TCP_NODELAY again, and once the library is known to have corked the socket, it does
 * so only once: the library then holds the socket for corked and never corks it again, so every
 * later response leaves with its sendmsg() alone, one system call fewer per request.
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

/**
 * Calls @p fn(@p ctx) whenever bytes arrive from the socket (the server starts a request's
 * deadline with the first byte after an idle spell). Set it before the handshake.
 */
void wh_tlsio_on_read(wh_tlsio *r, void (*fn)(void *ctx), void *ctx);

/** Frees the layer. NULL is a no-op. */
void wh_tlsio_free(wh_tlsio *r);

/**
 * The pull function GnuTLS calls: up to @p len bytes into @p buf. Returns the count, 0 at end
 * of stream, or -1 with errno (EAGAIN only when nothing is buffered and the socket is drained).
 */
ssize_t wh_tlsio_pull(wh_tlsio *r, void *buf, size_t len);

/** Bytes read from the socket and not yet handed on. */
size_t wh_tlsio_buffered(const wh_tlsio *r);

/**
 * Largest response body worth corking: with the headers it still fits one record (16 KiB).
 * Larger bodies are written as libmicrohttpd sends them, so a cork never holds much.
 */
#define WH_TLSIO_CORK_MAX (16384 - 1024)

/**
 * Gathers what GnuTLS is asked to send from now until wh_tlsio_flush(), to go out as one
 * record. The session must have nothing pending (no write that returned GNUTLS_E_AGAIN). A
 * no-op without a session. @p socket_corked: the socket will have been corked (by
 * libmicrohttpd, for this response or an earlier one) when the flush comes; then the flush
 * takes the cork off for good. 0 when unsure.
 */
void wh_tlsio_cork(wh_tlsio *r, int socket_corked);

/**
 * Seals and writes what was gathered since wh_tlsio_cork(), without blocking, and pushes it out
 * of the socket: TCP_CORK is cleared, unless an earlier flush cleared it after the socket was
 * known to be corked. Nothing gathered: nothing is written.
 * @return 0, or -1 when the socket would not take it all or the write failed (errno set): the
 * connection cannot deliver its response and should be closed.
 */
int wh_tlsio_flush(wh_tlsio *r);

/** recv() calls made so far (for tests and diagnostics). */
unsigned long wh_tlsio_reads(const wh_tlsio *r);

/** sendmsg()/send() calls made so far (for tests and diagnostics). */
unsigned long wh_tlsio_writes(const wh_tlsio *r);

/** Pushes (setsockopt() calls) made so far by all flushes in the process (for tests and
 * diagnostics). */
unsigned long wh_tlsio_pushes(void);

#endif
