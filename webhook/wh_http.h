/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The webhook's HTTP protocol layer as a pure function: (method, path, content type, body) in,
 * (status, headers, body) out. It routes, checks the transport-level rules (method, media type,
 * size, JSON, envelope) and answers them with a precise 4xx, and hands well-formed reviews to
 * the admission and conversion handlers, whose decision always travels in an HTTP 200 body.
 * The socket server (wh_server.c) only moves bytes; tests and the fuzzer call this directly.
 */
#ifndef WH_HTTP_H
#define WH_HTTP_H

#include <stddef.h>

#include "webhook/wh_review.h"

struct json_object;

/** The webhook's routes (docs/webhook-and-certs.md, "Routes"). */
typedef enum wh_route {
    WH_ROUTE_NONE = 0,
    WH_ROUTE_VALIDATE_V1ALPHA1,
    WH_ROUTE_VALIDATE_V1BETA1,
    WH_ROUTE_MUTATE_V1ALPHA1,
    WH_ROUTE_MUTATE_V1BETA1,
    WH_ROUTE_CONVERT,
    WH_ROUTE_VALIDATE_POLICY,
    WH_ROUTE_VALIDATE_BLUEPRINT,
    WH_ROUTE_VALIDATE_BLUEPRINT_VERSION,
    WH_ROUTE_COUNT
} wh_route;

typedef enum wh_route_kind {
    WH_KIND_VALIDATE, /**< validating admission */
    WH_KIND_MUTATE,   /**< mutating admission */
    WH_KIND_CONVERT,  /**< CRD conversion */
} wh_route_kind;

typedef struct wh_route_info {
    const char *path;     /**< exact URL path */
    wh_route_kind kind;   /**< what the route does */
    const char *version;  /**< API version of the objects it admits ("" for conversion) */
    const char *kindname; /**< kind of the objects it admits ("" for conversion) */
    size_t body_cap;      /**< default request body cap (caps.h) */
} wh_route_info;

/** The route for an exact @p path; WH_ROUTE_NONE when there is none. */
wh_route wh_route_lookup(const char *path);

/** Static description of @p route (valid for every route but WH_ROUTE_NONE). */
const wh_route_info *wh_route_get(wh_route route);

/**
 * The decisions behind the routes. The protocol layer calls them only with well-formed reviews.
 * admit() fills @p d (which starts allowed) and returns 0, or a negative code for an internal
 * failure (the review is then answered as an errored 500 with co_error_last()). convert()
 * returns a new reference to @p obj converted to @p desired_api_version, or a negative code with
 * the reason in co_error_last(). Both may run concurrently on several threads.
 * unread(), when set, names the members of a review on @p route that the handlers never read
 * (key lists from the review's root, as co_json_parse_skip() takes them, or NULL for none):
 * they are checked for syntax but not built, and are absent from what the handlers see.
 */
typedef struct wh_handlers {
    int (*admit)(wh_decision *d, void *ctx, wh_route route, const wh_admission_request *req);
    int (*convert)(struct json_object **out,
                   void *ctx,
                   struct json_object *obj,
                   const char *desired_api_version);
    void *ctx;
    const char *const *const *(*unread)(wh_route route);
} wh_handlers;

/** Body caps in force (flags); a zero field means the route's default (caps.h). */
typedef struct wh_http_limits {
    size_t admission_body;  /**< AdmissionReview bodies */
    size_t conversion_body; /**< ConversionReview bodies */
} wh_http_limits;

/** The body cap of @p route under @p limits (NULL: the defaults). */
size_t wh_http_body_cap(const wh_http_limits *limits, wh_route route);

/**
 * Reserves @p bytes of memory for the request before a stage spends them (wh_memory.h).
 * Returns 0, CO_EUNAVAILABLE when they do not fit now, CO_ETOOBIG when they never will; the
 * reservation lasts until the request ends (the caller's business).
 */
typedef int (*wh_reserve_fn)(void *ctx, size_t bytes);

typedef struct wh_http_request {
    const char *method;           /**< "POST", ... */
    const char *path;             /**< URL path without the query string */
    const char *content_type;     /**< Content-Type header, NULL when absent */
    const char *body;             /**< request body (need not be NUL-terminated) */
    size_t body_len;              /**< its length */
    const wh_http_limits *limits; /**< body caps; NULL for the defaults */
    wh_reserve_fn reserve;        /**< memory reservations; NULL reserves nothing */
    void *reserve_ctx;            /**< passed to @p reserve */
} wh_http_request;

typedef struct wh_http_response {
    int status;               /**< HTTP status code */
    const char *content_type; /**< static string */
    const char *allow;        /**< Allow header value for 405, else NULL (static) */
    char *body;               /**< owned; free with wh_http_response_dispose() */
    size_t body_len;          /**< its length */
    int internal_error;       /**< a handler failed internally (counted as a panic) */
    int retry_after;          /**< seconds for a Retry-After header (429), 0 for none */
} wh_http_response;

/**
 * The checks that need no body: route, method, media type and the declared body length
 * (@p req->body_len, e.g. from Content-Length). The server calls it when the headers arrive,
 * so that a request that will be refused is not read first.
 * @return 1 when @p out holds the answer, 0 when the body is needed (@p out is then empty).
 */
int wh_http_precheck(wh_http_response *out, const wh_http_request *req);

/**
 * Answers @p req on the webhook (TLS) port. Never fails: every problem becomes a response.
 * With @p req->reserve set, the memory of each stage (the parsed document, then the json-c
 * trees and text the route builds) is reserved before it is spent: a reservation that does not
 * fit now is answered 429 with Retry-After, one that never will 413.
 * @param[out] out the response; dispose with wh_http_response_dispose()
 */
void wh_http_handle(wh_http_response *out, const wh_handlers *h, const wh_http_request *req);

/** Answers a body over its route's cap @p cap (HTTP 413). */
void wh_http_too_large(wh_http_response *out, size_t cap);

/**
 * Answers a request refused for memory: @p rc CO_EUNAVAILABLE is HTTP 429 with Retry-After
 * (the budget is held by other requests now), CO_ETOOBIG is 413 (it would never fit);
 * co_error_last() says how much was needed.
 */
void wh_http_over_budget(wh_http_response *out, int rc);

/** One readiness check: @p failure is NULL when it passes, else why it fails. */
typedef struct wh_probe_check {
    const char *name;
    const char *failure;
} wh_probe_check;

/**
 * Answers the plain-HTTP port: GET /healthz (always "ok" while the process serves), GET /readyz
 * (200 "ok" when every check passes, else 503 listing them) and, when @p metrics is set, GET
 * /metrics in the Prometheus text format.
 */
void wh_http_probe(wh_http_response *out,
                   const char *method,
                   const char *path,
                   const wh_probe_check *checks,
                   size_t nchecks,
                   int metrics);

/** Frees the body; NULL is a no-op. */
void wh_http_response_dispose(wh_http_response *r);

#endif
