/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small HTTP(S) server on loopback for tests (libmicrohttpd, own thread): routes with a fixed
 * status, body and headers, redirects, truncated bodies, bodies that fail the first N requests,
 * slow answers, per-path hit counters and the request bodies received, and a count of the
 * connections it accepted. Routes can be replaced
 * while the server runs.
 */
#ifndef CO_TEST_HTTPD_H
#define CO_TEST_HTTPD_H

#include <stddef.h>

typedef struct test_httpd test_httpd;

/** Starts a server on 127.0.0.1 and a free port; fails the test on error. */
test_httpd *test_httpd_start(void);

/** Like test_httpd_start() on the loopback address @p ipv4 ("127.0.0.2"). */
test_httpd *test_httpd_start_at(const char *ipv4);

/**
 * Like test_httpd_start() over TLS with the PEM certificate @p cert_pem and key @p key_pem
 * (copied); the URL is "https://127.0.0.1:PORT". Idle connections are closed after
 * @p idle_timeout_s seconds (0: 30).
 */
test_httpd *
test_httpd_start_tls(const char *cert_pem, const char *key_pem, unsigned idle_timeout_s);

/** Stops the server and frees it. NULL is a no-op. */
void test_httpd_stop(test_httpd *s);

/** "http://127.0.0.1:PORT" (the address it listens on; borrowed from @p s). */
const char *test_httpd_url(const test_httpd *s);

/**
 * Serves @p path (exact match; the query string is ignored) with @p status, the @p len bytes at
 * @p body (copied) and extra headers @p headers ("Name: value" lines separated by '\n', may be
 * NULL). Replaces an earlier route of that path.
 */
void test_httpd_route(test_httpd *s,
                      const char *path,
                      int status,
                      const void *body,
                      size_t len,
                      const char *headers);

/** Like test_httpd_route() but announces @p len bytes and closes after @p send bytes. */
void test_httpd_route_truncated(test_httpd *s,
                                const char *path,
                                const void *body,
                                size_t len,
                                size_t send);

/** Makes the next @p n requests of @p path answer 503 before the route applies. */
void test_httpd_fail_next(test_httpd *s, const char *path, int n);

/** TCP connections the server accepted so far. */
int test_httpd_connections(test_httpd *s);

/** Requests seen for @p path (any method). */
int test_httpd_hits(test_httpd *s, const char *path);

/** Requests seen for @p path with @p method (HEAD, GET or POST). */
int test_httpd_hits_method(test_httpd *s, const char *path, const char *method);

/** Makes every request of @p path wait @p ms before it is answered (0: none). */
void test_httpd_delay(test_httpd *s, const char *path, int ms);

/**
 * A copy of the body of the @p n-th request (from 0) of @p path, NUL-terminated, or NULL when
 * fewer arrived (the first 256 requests are kept); free with free(). @p content_type_out (may
 * be NULL) receives a copy of its Content-Type header, or NULL.
 */
char *test_httpd_body(test_httpd *s, const char *path, int n, char **content_type_out);

#endif
