/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kube_transport.h
 * The seam between the Kubernetes client and HTTP: one request in, one response out.
 *
 * The client (kube_client.h) does everything Kubernetes-specific: URLs, authentication
 * headers, rate limiting, retries, Status decoding. A transport only moves bytes. The real one
 * is libcurl (co_kube_transport_curl_new()); co_kube_transport_gnutls_new() is a smaller one over
 * GnuTLS and plain sockets for programs that link neither libcurl nor OpenSSL; tests plug in a fake
 * that replays scripted answers and fails on the N-th call (tests/support/fake_kube.h).
 *
 * A transport must be safe to call from several threads at once. Ownership follows
 * shared/README.md: the client owns the transport it is given and frees it with the client.
 */
#ifndef CO_KUBE_TRANSPORT_H
#define CO_KUBE_TRANSPORT_H

#include <stddef.h>

#include "co/util/buf.h"
#include "co/util/common.h"
#include "co/kube/kube_config.h"

/**
 * Receives the body of a streamed 2xx response in pieces of any size, in order.
 * @return 0 to continue; a negative co_error_code to stop the transfer, which the transport's
 * send then returns.
 */
typedef int (*co_kube_stream_cb)(const char *data, size_t len, void *payload);

/** Polled during a transfer (at least once a second); nonzero aborts it with CO_ECANCELED. */
typedef int (*co_kube_cancel_cb)(void *payload);

/** One HTTP request. Everything is borrowed for the duration of send. */
typedef struct co_kube_request {
    const char *method;          /**< "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *path;            /**< absolute path and query, already escaped ("/api/v1/...") */
    const char *const *headers;  /**< "Name: value" lines (authentication included) */
    size_t nheaders;             /**< number of @ref headers */
    const char *body;            /**< request body, or NULL */
    size_t body_len;             /**< bytes of @ref body */
    long connect_timeout_ms;     /**< 0: the transport's default */
    long timeout_ms;             /**< whole exchange; 0: none (watches) */
    long low_speed_time_s;       /**< abort when under 1 byte/s for this long; 0: off */
    size_t max_response;         /**< cap of the buffered body (CO_ETOOBIG beyond it) */
    co_kube_stream_cb stream;    /**< non-NULL: a 2xx body goes here instead of the buffer */
    void *stream_payload;        /**< passed to @ref stream */
    co_kube_cancel_cb cancelled; /**< polled during the transfer, or NULL */
    void *cancel_payload;        /**< passed to @ref cancelled */
} co_kube_request;

/** What came back. Initialise with co_kube_response_init(), release with _dispose(). */
typedef struct co_kube_response {
    int status;         /**< HTTP status; 0 when no response arrived */
    co_buf body;        /**< the body (non-2xx bodies also when streaming) */
    long retry_after_s; /**< the Retry-After header in seconds, or -1 */
    int not_sent;       /**< set on failure when the server never saw the request (connect
                             failed), so that any method may be retried */
} co_kube_response;

/** The transport interface; implementations embed it as their first member. */
typedef struct co_kube_transport co_kube_transport;
struct co_kube_transport {
    /**
     * Performs @p req and fills @p resp (already initialised by the caller).
     * @return 0 when an HTTP response arrived (whatever its status); CO_EUNAVAILABLE for a
     * connection failure or a truncated response; CO_ETIMEOUT when a timeout or the
     * low-speed limit fired; CO_ETOOBIG when the body exceeds max_response; CO_ECANCELED when
     * @ref co_kube_request.cancelled said so; a stream callback's own error; CO_ERROR for
     * anything else (TLS set-up, bad certificates).
     */
    int (*send)(co_kube_transport *self, const co_kube_request *req, co_kube_response *resp);
    /** Releases the transport. */
    void (*free)(co_kube_transport *self);
};

/** Initialises @p resp as empty with a body cap of @p max_body. */
void co_kube_response_init(co_kube_response *resp, size_t max_body);

/** Releases the body; @p resp may be initialised again. */
void co_kube_response_dispose(co_kube_response *resp);

/**
 * Creates the libcurl transport for @p cfg: TLS 1.2 or newer, the configuration's CA, client
 * certificate and key passed to libcurl as in-memory blobs, HTTP/1.1 (each connection carries
 * one transfer at a time, so HTTP/2 would multiplex nothing), TCP keep-alive, the proxy and
 * tls-server-name of the configuration. Connections are kept open and reused: idle easy handles
 * (each holding its connection) are pooled and handed to whichever thread sends next; DNS and TLS
 * sessions are shared between them.
 * @param[out] out the transport (free with its free member, or hand it to a client)
 * @param cfg the configuration (copied from; may be freed afterwards)
 * @return 0; CO_ERROR when libcurl cannot be initialised.
 */
CO_MUST_CHECK int co_kube_transport_curl_new(co_kube_transport **out, const co_kube_config *cfg);

/**
 * Creates the GnuTLS transport for @p cfg: HTTP/1.1 only (no HTTP/2), over plain sockets for
 * http:// servers and GnuTLS sessions (TLS 1.2 or 1.3) for https:// ones. The configuration's
 * CA (else the system trust store), its client certificate and key are loaded from memory; the
 * certificate is checked against tls-server-name when set, else the server URL's host, which is
 * also sent as SNI unless it is an address literal; insecure-skip-tls-verify turns the check
 * off. The Host header is the server URL's authority. Connections are kept alive and pooled:
 * an idle one is reused by whichever thread sends next, and a request that meets a pooled
 * connection the server has just closed is sent once more on a new one (only when nothing of
 * an answer was read). Timeouts, the low-speed limit (no byte for low_speed_time_s) and the
 * cancel callback are checked at least once a second. Host names are resolved with a blocking
 * getaddrinfo() that the connect timeout does not bound. Proxies are not supported.
 * @param[out] out the transport (free with its free member, or hand it to a client)
 * @param cfg the configuration (copied from; may be freed afterwards)
 * @return 0; CO_EINVALID when the configuration names a proxy, the server URL is not http(s)
 * or the CA, client certificate or key cannot be loaded; CO_ERROR when GnuTLS fails to set up.
 */
CO_MUST_CHECK int co_kube_transport_gnutls_new(co_kube_transport **out, const co_kube_config *cfg);

#endif
