/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_http.h
 * The controller's plain-HTTP endpoints: Prometheus metrics on --metrics-bind-address
 * (`/metrics`) and the probes on --health-probe-bind-address (`/healthz`, `/readyz`), as
 * controller-runtime serves them. Each listener is a libmicrohttpd daemon with one internal
 * thread; handlers are callbacks so the manager decides what "ready" means.
 */
#ifndef CTL_HTTP_H
#define CTL_HTTP_H

#include <stdbool.h>

#include "co/util/buf.h"
#include "co/util/common.h"

typedef struct ctl_http ctl_http;

/**
 * Answers one GET. Fill @p body; return the HTTP status (200 when fine, 500 when failing),
 * or 404 for an unknown path. Runs on the listener's thread.
 */
typedef int (*ctl_http_handler)(co_buf *body, const char *path, void *payload);

/**
 * Starts a listener on @p addr ("host:port", ":port", "[v6]:port"; port 0 picks a free one).
 * @param[out] out free with ctl_http_stop()
 * @return 0; CO_EINVALID for a malformed address; CO_ERROR when it cannot bind (the message
 *         names the address).
 */
CO_MUST_CHECK int
ctl_http_start(ctl_http **out, const char *addr, ctl_http_handler handler, void *payload);

/** The port actually bound. */
int ctl_http_port(const ctl_http *h);

/** Stops the listener and frees it. NULL is a no-op. */
void ctl_http_stop(ctl_http *h);

/** Whether @p addr disables a listener ("0" or ""). */
bool ctl_http_disabled(const char *addr);

#endif
