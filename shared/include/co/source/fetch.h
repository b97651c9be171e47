/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file fetch.h
 * Downloading source artifacts over HTTP(S) with libcurl, and the HEAD resolution of HTTP
 * repositories.
 *
 * Downloads have connect, overall and low-speed timeouts, a size cap (CO_MAX_ARTIFACT_DOWNLOAD),
 * retries with exponential backoff and jitter for transient failures (connection errors,
 * truncated transfers, HTTP 408/429/5xx), TLS 1.2 or newer, and only http/https (also across
 * redirects). Proxies come from the environment as Go's net/http reads them: HTTPS_PROXY or
 * https_proxy for https URLs, HTTP_PROXY or http_proxy for http URLs, NO_PROXY or no_proxy for
 * exceptions; requests to localhost and loopback addresses never use a proxy.
 *
 * URLs are untrusted input: every connection, to the server or a proxy, on the first request or
 * after a redirect, is checked against the network deny-list (co/util/net.h) before it is made, and
 * a refused one fails with CO_EAUTH ("connection to 169.254.169.254 refused: address in denied
 * range 169.254.0.0/16"), never retried. Through a proxy, the host of each URL requested is
 * checked by name as well, since the proxy connects to it.
 *
 * Every download is hashed while it is written. When the caller passes the artifact's digest
 * (`sha256:<hex>` as Flux writes it; sha384 and sha512 work too) the content must match it,
 * or the download fails with a message giving both digests; the Go original never checks.
 * The file appears at its destination only after the whole transfer succeeded and matched, so a
 * truncated or corrupt download is never seen by anyone.
 *
 * Thread-safe: no shared state besides libcurl's global initialisation, done once here.
 */
#ifndef CO_FETCH_H
#define CO_FETCH_H

#include <stdint.h>

#include "co/util/common.h"

/** Download options; a zero field takes the default given in brackets. */
typedef struct co_fetch_options {
    long connect_timeout_ms;    /**< TCP + TLS connect [30 s] */
    long timeout_ms;            /**< one whole attempt [10 min] */
    long low_speed_time_s;      /**< abort an attempt that moves < 1 byte/s for this long [60 s] */
    uint64_t max_bytes;         /**< size cap [CO_MAX_ARTIFACT_DOWNLOAD] */
    int retries;                /**< retries after a transient failure [3]; negative: none */
    long backoff_ms;            /**< first retry delay, doubled each time, +0..50 % jitter [500] */
    const char *ca_file;        /**< extra CA bundle file (PEM) instead of the system one */
    const volatile int *cancel; /**< when it becomes non-zero the transfer stops (CO_ECANCELED) */
} co_fetch_options;

/** What a download produced. */
typedef struct co_fetch_result {
    char *digest;       /**< "sha256:<hex>" of the content */
    uint64_t bytes;     /**< content length */
    char *content_type; /**< Content-Type of the response, or NULL when it had none */
    char *url;          /**< the URL that answered, after redirects */
} co_fetch_result;

/** Frees the strings of @p r and zeroes it. NULL is a no-op. */
void co_fetch_result_dispose(co_fetch_result *r);

/**
 * Checks that @p digest has the form `<algorithm>:<lowercase hex>` with a supported algorithm
 * (sha256, sha384, sha512) and the right length.
 * @return 0; CO_EUNSUPPORTED for another algorithm (e.g. blake3); CO_EINVALID otherwise.
 */
CO_MUST_CHECK int co_fetch_digest_check(const char *digest);

/**
 * Downloads @p url (GET, following up to CO_MAX_HTTP_REDIRECTS redirects) to the file @p dest,
 * replacing it atomically. When @p digest is not NULL the content must match it.
 * @param[out] result digest and size of the content (may be NULL); written on success
 * @return 0; CO_EINVALID for a bad URL or digest, or a digest mismatch; CO_ENOTFOUND (HTTP
 *         404/410); CO_EAUTH (HTTP 401/403, or a denied address); CO_ETOOBIG (over the cap);
 *         CO_EUNAVAILABLE when transient failures outlasted the retries (the message says
 *         which, e.g. "truncated"); CO_ETIMEOUT; CO_ECANCELED; CO_ERROR otherwise.
 */
CO_MUST_CHECK int co_fetch_download(const char *url,
                                    const char *digest,
                                    const char *dest,
                                    const co_fetch_options *opts,
                                    co_fetch_result *result);

/** The artifact an HTTP repository points at (docs/behaviour.md, "Sources"). */
typedef struct co_fetch_head_result {
    char *url;      /**< the artifact URL: the final URL, or a redirect's Location */
    char *digest;   /**< value of the digest header */
    char *revision; /**< value of the revision header */
} co_fetch_head_result;

/** Frees the strings of @p r and zeroes it. NULL is a no-op. */
void co_fetch_head_result_dispose(co_fetch_head_result *r);

/**
 * Resolves an HTTP repository like the Go original: HEAD @p url, following redirects (301, 302,
 * 303, 307, 308; at most CO_MAX_HTTP_REDIRECTS) until a response carries the digest header
 * @p digest_header (NULL or "" means "ETag"; names match case-insensitively). The artifact URL
 * is then that redirect's Location, or the URL that answered 2xx. The revision comes from
 * @p revision_header (NULL or "": the digest header). Transient failures are retried as for
 * downloads.
 * @return 0; CO_EINVALID ("missing digest on source reference", "missing revision on source
 *         reference", a bad URL, a 3xx without Location); CO_ENOTFOUND, CO_EAUTH or CO_ERROR
 *         for HTTP errors ("error calling source reference URL: 404 (Not Found)"); CO_EAUTH for
 *         a denied address;
 *         CO_EUNAVAILABLE, CO_ETIMEOUT, CO_ECANCELED as for downloads.
 */
CO_MUST_CHECK int co_fetch_head(const char *url,
                                const char *digest_header,
                                const char *revision_header,
                                const co_fetch_options *opts,
                                co_fetch_head_result *out);

#endif
