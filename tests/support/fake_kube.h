/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake Kubernetes transport for unit tests: scripted answers matched by method and path
 * prefix, streamed bodies for watches, and sqlite-style countdown fault injection ("let the
 * first N calls through, then fail R times"). Every request is recorded for assertions.
 * Thread-safe.
 */
#ifndef CO_TEST_FAKE_KUBE_H
#define CO_TEST_FAKE_KUBE_H

#include <stddef.h>

#include "co/kube/kube_client.h"
#include "co/kube/kube_transport.h"

typedef struct co_fake_kube co_fake_kube;

/** One answer. Strings are copied when registered. */
typedef struct co_fake_answer {
    int status;                /**< HTTP status; 0 for a transport failure (see error) */
    int error;                 /**< transport error when status is 0 (CO_EUNAVAILABLE...) */
    int not_sent;              /**< with error: the server never saw the request */
    const char *body;          /**< whole body, or NULL */
    const char *const *chunks; /**< streamed body in pieces (overrides body) */
    size_t nchunks;            /**< number of chunks */
    long retry_after_s;        /**< Retry-After; 0: none */
    int truncate;              /**< deliver half the body, then fail with CO_EUNAVAILABLE */
    int hang;                  /**< after the body, wait until the request is cancelled */
} co_fake_answer;

/** A recorded request. */
typedef struct co_fake_call {
    char *method;
    char *path;
    char *body;    /**< "" when none */
    char *headers; /**< all header lines joined by '\n' */
} co_fake_call;

/** Kinds of injected faults. */
typedef enum co_fake_fault {
    CO_FAKE_REFUSED = 1,   /**< connection refused: CO_EUNAVAILABLE, not sent */
    CO_FAKE_TRUNCATED = 2, /**< the connection drops halfway through the body */
    CO_FAKE_TIMEOUT = 3,   /**< CO_ETIMEOUT */
    CO_FAKE_HTTP = 4,      /**< an HTTP error answer with a Status body (code given) */
} co_fake_fault;

co_fake_kube *co_fake_kube_new(void);

/** Releases the test's reference (the client holds the other through its transport). */
void co_fake_kube_free(co_fake_kube *f);

/** A transport over @p f for co_kube_client_new_with_transport() (which owns it). */
co_kube_transport *co_fake_kube_transport(co_fake_kube *f);

/** A minimal configuration pointing at the fake (free with co_kube_config_free()). */
co_kube_config *co_fake_kube_config(void);

/** A client over @p f with no rate limit, no retry delay worth waiting for, max_retries 3. */
co_kube_client *co_fake_kube_client(co_fake_kube *f);

/** Answers every request matching @p method (NULL: any) and @p prefix with @p a. Later
 * registrations take precedence. A prefix ending in '$' must equal the whole path (the query
 * aside). */
void co_fake_kube_on(co_fake_kube *f,
                     const char *method,
                     const char *prefix,
                     const co_fake_answer *a);

/** Like co_fake_kube_on() but for one request only; one-shot answers are used first, in the
 * order they were queued. */
void co_fake_kube_once(co_fake_kube *f,
                       const char *method,
                       const char *prefix,
                       const co_fake_answer *a);

/** Shorthand: co_fake_kube_on() with a status and a body. */
void co_fake_kube_json(co_fake_kube *f,
                       const char *method,
                       const char *prefix,
                       int status,
                       const char *body);

/**
 * Countdown fault injection: calls number @p after + 1 to @p after + @p repeat (1-based over
 * all calls from now on) fail with @p fault (@p http_code for CO_FAKE_HTTP).
 */
void co_fake_kube_fail_after(co_fake_kube *f,
                             int after,
                             int repeat,
                             co_fake_fault fault,
                             int http_code);

/** Registers discovery documents for the kinds the unit tests use (v1 ConfigMap, Namespace,
 * Secret, Event, Pod; apps/v1 Deployment; coordination.k8s.io/v1 Lease). */
void co_fake_kube_discovery(co_fake_kube *f);

/** Number of requests seen so far. */
size_t co_fake_kube_ncalls(co_fake_kube *f);

/** Number of faults injected so far. */
int co_fake_kube_nfaults(co_fake_kube *f);

/** A copy of request @p i (0-based); free with co_fake_call_dispose(). */
co_fake_call co_fake_kube_call(co_fake_kube *f, size_t i);

/** Number of recorded requests whose method matches (NULL: any) and whose path contains
 * @p needle. */
size_t co_fake_kube_count(co_fake_kube *f, const char *method, const char *needle);

void co_fake_call_dispose(co_fake_call *c);

/** Forgets recorded requests (answers and faults stay). */
void co_fake_kube_clear_calls(co_fake_kube *f);

#endif
