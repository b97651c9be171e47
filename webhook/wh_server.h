/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sockets: a TLS listener (libmicrohttpd over GnuTLS, worker threads, keep-alive,
 * connection limit and inactivity timeout) for the webhook routes, and a plain-HTTP listener
 * for /healthz, /readyz and /metrics (or two, when the metrics address differs from the probe
 * address). Bodies are streamed into capped buffers; everything else is wh_http.c's job.
 *
 * Nobody has to authenticate to reach these ports, so each is bounded: bodies by their route's
 * cap and, with what parsing them costs, by a memory budget (wh_memory.h: 429 past it);
 * connections by a total and a per-address limit, and by deadlines that no trickle of bytes
 * extends: the handshake and the headers, then the body, then taking the answer. When a
 * listener is full, the connection that has waited longest for its headers makes room for a
 * new one, so silent connections cannot lock new clients (or the kubelet's probes) out.
 */
#ifndef WH_SERVER_H
#define WH_SERVER_H

#include "co/util/common.h"
#include "webhook/wh_http.h"
#include "webhook/wh_tls.h"

typedef struct wh_server wh_server;

/**
 * Extra readiness checks (for example "caches synced"). Fills @p out with up to @p max checks
 * and returns how many; failure strings must stay valid until the next call on that thread
 * (static or thread-local storage).
 */
typedef size_t (*wh_ready_fn)(void *ctx, wh_probe_check *out, size_t max);

/** Seconds a connection has for its TLS handshake and a request's headers. */
#define WH_DEFAULT_HEADER_TIMEOUT 5
/** Seconds a request has for its body once the headers are in, and again to take its answer. */
#define WH_DEFAULT_BODY_TIMEOUT 10
/**
 * TLS connections from one address. An API server opens one per concurrent webhook call (its
 * client speaks HTTP/1.1 to us and sets no per-host limit; it keeps 25 idle), and its calls
 * are bounded by its in-flight limits (400 + 200 by default), so a few hundred.
 */
#define WH_DEFAULT_MAX_PER_PEER 256
/** Memory requests in flight may hold, estimated (wh_memory.h); see the README's arithmetic. */
#define WH_DEFAULT_MEMORY_BUDGET ((size_t)48 * 1024 * 1024)
/** Connections of a probe or metrics listener, in all and from one address. */
#define WH_PROBE_MAX_CONNECTIONS 64
#define WH_PROBE_MAX_PER_PEER    8

typedef struct wh_server_config {
    const char *webhook_addr;      /**< "[host]:port" of the TLS listener, e.g. ":9443" */
    const char *probe_addr;        /**< health listener; "0" or "" disables it */
    const char *metrics_addr;      /**< metrics listener; "0" or "" disables it */
    unsigned threads;              /**< TLS worker threads (at least 1) */
    unsigned max_connections;      /**< concurrent TLS connections */
    unsigned connection_timeout_s; /**< seconds of inactivity before a connection closes */
    unsigned max_per_peer;         /**< TLS connections from one address (0: the default) */
    unsigned header_timeout_s;     /**< handshake + headers deadline, seconds (0: the default) */
    unsigned body_timeout_s;       /**< body, and answer, deadline, seconds (0: the default) */
    size_t memory_budget;          /**< bytes for requests in flight (0: the default) */
    wh_http_limits limits;         /**< body caps (zeros: caps.h's) */
    wh_tls_min_version tls_min;    /**< minimum TLS version */
    const wh_handlers *handlers;   /**< the routes' decisions; borrowed */
    wh_tls *tls;                   /**< key pair store; borrowed, served process-wide */
    wh_ready_fn ready;             /**< extra readiness checks, may be NULL */
    void *ready_ctx;               /**< passed to @p ready */
} wh_server_config;

/** Listeners, for wh_server_port(). */
typedef enum wh_listener {
    WH_LISTENER_WEBHOOK = 0,
    WH_LISTENER_PROBE = 1,
    WH_LISTENER_METRICS = 2,
} wh_listener;

/**
 * Parses "host:port", ":port", "[v6]:port" into its parts (an empty host means every address).
 * @param[out] host_out allocated host (free with free()), "" for any
 * @return 0 or CO_EINVALID.
 */
CO_MUST_CHECK int wh_server_parse_addr(char **host_out, int *port_out, const char *addr);

/**
 * Binds every listener and starts serving. The configuration is copied; handlers and tls are
 * borrowed and must outlive the server.
 * @return 0, CO_EINVALID for a bad address or option, CO_ERROR when binding fails.
 */
CO_MUST_CHECK int wh_server_start(wh_server **out, const wh_server_config *cfg);

/**
 * The TLS listener's request handling without a socket of its own, TLS or threads, for the
 * fuzzer and tests: a connection given with wh_server_local_add() is read by libmicrohttpd
 * and its requests go through the TLS listener's access handler (route, method, media type and
 * declared length decided from the headers, the body streamed into the route's capped buffer
 * under the memory budget, then wh_http_handle()); wh_server_local_run() does whatever can be
 * done without waiting. Plain HTTP: no certificate is needed. Of @p cfg only the handlers,
 * limits, memory budget, connection limit and inactivity timeout (0: none) count; the server is
 * freed with wh_server_free().
 * @return 0, CO_EINVALID without handlers, CO_ERROR when libmicrohttpd refuses.
 */
CO_MUST_CHECK int wh_server_local_new(wh_server **out, const wh_server_config *cfg);

/**
 * Hands @p fd, one end of a connected stream socket (a socketpair(), say), to a local server;
 * it is closed when the connection ends, also on failure.
 * @return 0 or CO_ERROR.
 */
CO_MUST_CHECK int wh_server_local_add(wh_server *s, int fd);

/** Reads, answers and writes what the local server's connections allow now; never blocks. */
void wh_server_local_run(wh_server *s);

/** Replaces the extra readiness checks (e.g. once the caches exist). Thread-safe. */
void wh_server_set_ready(wh_server *s, wh_ready_fn ready, void *ctx);

/** The port a listener is bound to (useful with port 0), or -1 when it is disabled. */
int wh_server_port(const wh_server *s, wh_listener which);

/**
 * TLS connections held by worker @p i now (0 for an index past the last worker); every new
 * connection goes to the worker holding the fewest.
 */
unsigned wh_server_worker_connections(const wh_server *s, unsigned i);

/** Bytes of the memory budget that requests in flight hold now (tests, diagnostics). */
size_t wh_server_memory_used(const wh_server *s);

/**
 * Graceful stop: readiness turns false, no new connections are accepted, requests being
 * served finish (each answer carries "Connection: close"), for at most @p timeout_ms.
 * @return the number of requests still in flight when the wait ended (0 = clean drain).
 */
int wh_server_drain(wh_server *s, int timeout_ms);

/** Stops every listener (cutting what is left) and frees the server. NULL is a no-op. */
void wh_server_free(wh_server *s);

#endif
