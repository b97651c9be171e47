/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Artifact downloads and HTTP-repository HEAD resolution over libcurl. One easy handle per
 * attempt keeps the code free of shared state; artifacts are fetched rarely (the cache sees to
 * that), so connection reuse across downloads is not worth a shared pool here. URLs come from
 * Components and the servers they name, so every socket goes through the network deny-list
 * (net.h) before it connects, whichever redirect hop opens it.
 */
#include "co/source/fetch.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/util/net.h"

#define DEFAULT_CONNECT_TIMEOUT_MS 30000L
#define DEFAULT_TIMEOUT_MS         600000L
#define DEFAULT_LOW_SPEED_TIME_S   60L
#define DEFAULT_RETRIES            3
#define DEFAULT_BACKOFF_MS         500L
#define HEAD_TIMEOUT_MS            60000L
#define USER_AGENT                 "component-operator/" CO_VERSION

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int ensure_curl(void)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        return co_error_set(CO_ERROR, "initialising libcurl: %s", curl_easy_strerror(curl_init_rc));
    }
    return 0;
}

/* ---- options ----------------------------------------------------------------------------- */

typedef struct opts {
    long connect_timeout_ms, timeout_ms, low_speed_time_s, backoff_ms;
    uint64_t max_bytes;
    int retries;
    const char *ca_file;
    const volatile int *cancel;
} opts;

static void resolve_opts(opts *o, const co_fetch_options *in, long default_timeout)
{
    co_fetch_options z = {0};
    if (!in) {
        in = &z;
    }
    o->connect_timeout_ms =
        in->connect_timeout_ms > 0 ? in->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
    o->timeout_ms = in->timeout_ms > 0 ? in->timeout_ms : default_timeout;
    o->low_speed_time_s =
        in->low_speed_time_s > 0 ? in->low_speed_time_s : DEFAULT_LOW_SPEED_TIME_S;
    o->backoff_ms = in->backoff_ms > 0 ? in->backoff_ms : DEFAULT_BACKOFF_MS;
    o->max_bytes = in->max_bytes ? in->max_bytes : CO_MAX_ARTIFACT_DOWNLOAD;
    o->retries = in->retries > 0 ? in->retries : in->retries < 0 ? 0 : DEFAULT_RETRIES;
    o->ca_file = in->ca_file;
    o->cancel = in->cancel;
}

/* ---- digests ----------------------------------------------------------------------------- */

static const EVP_MD *digest_md(const char *digest, size_t *hexlen)
{
    if (strncmp(digest, "sha256:", 7) == 0) {
        *hexlen = 64;
        return EVP_sha256();
    }
    if (strncmp(digest, "sha384:", 7) == 0) {
        *hexlen = 96;
        return EVP_sha384();
    }
    if (strncmp(digest, "sha512:", 7) == 0) {
        *hexlen = 128;
        return EVP_sha512();
    }
    return NULL;
}

int co_fetch_digest_check(const char *digest)
{
    const char *colon = digest ? strchr(digest, ':') : NULL;
    if (!colon || colon == digest) {
        return co_error_set(CO_EINVALID, "digest '%.64s' is not of the form <algorithm>:<hex>",
                            digest ? digest : "");
    }
    size_t hexlen = 0;
    if (!digest_md(digest, &hexlen)) {
        return co_error_set(CO_EUNSUPPORTED,
                            "digest algorithm '%.*s' is not supported (sha256, sha384, sha512)",
                            (int)(colon - digest > 32 ? 32 : colon - digest), digest);
    }
    const char *hex = colon + 1;
    size_t n = strlen(hex);
    for (size_t i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)hex[i]) || isupper((unsigned char)hex[i])) {
            n = (size_t)-1;
            break;
        }
    }
    if (n != hexlen) {
        return co_error_set(CO_EINVALID, "digest '%.140s' needs %zu lowercase hex digits", digest,
                            hexlen);
    }
    return 0;
}

/* ---- proxies (Go's ProxyFromEnvironment) ------------------------------------------------- */

static const char *env2(const char *upper, const char *lower)
{
    /* the environment is set before start-up and never modified by the daemons */
    const char *v = getenv(upper); // NOLINT(concurrency-mt-unsafe)
    if (!v || !*v) {
        v = getenv(lower); // NOLINT(concurrency-mt-unsafe)
    }
    return v && *v ? v : NULL;
}

static int is_loopback_host(const char *host)
{
    return strcasecmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
           strcmp(host, "[::1]") == 0 || strcmp(host, "::1") == 0;
}

/*
 * Validates @p url (http/https only) and sets the proxy options for it; @p proxied is set when
 * a proxy may carry the transfer. The proxy, not us, then connects to the URL's host, so that
 * host is checked against the deny-list here, by name.
 */
static int setup_url(CURL *h, const char *url, int *proxied)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL;
    int rc = 0;
    CO_ASSERT(u);
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
        rc = co_error_set(CO_EINVALID, "invalid URL '%.200s'", url);
        goto done;
    }
    if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0) {
        rc = co_error_set(CO_EINVALID, "URL '%.200s': only http and https are supported", url);
        goto done;
    }
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        rc = co_error_set(CO_EINVALID, "invalid URL '%.200s': no host", url);
        goto done;
    }
    const char *proxy = strcasecmp(scheme, "https") == 0 ? env2("HTTPS_PROXY", "https_proxy")
                                                         : env2("HTTP_PROXY", "http_proxy");
    if (!proxy || is_loopback_host(host)) {
        proxy = "";
    }
    *proxied = proxy[0] != '\0';
    if (*proxied && co_net_deny_check_host(host) < 0) {
        rc = co_error_wrap("%.300s", url);
        goto done;
    }
    const char *noproxy = env2("NO_PROXY", "no_proxy");
    curl_easy_setopt(h, CURLOPT_PROXY, proxy);
    curl_easy_setopt(h, CURLOPT_NOPROXY, noproxy ? noproxy : "");
    curl_easy_setopt(h, CURLOPT_URL, url);
done:
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

/* ---- one transfer ------------------------------------------------------------------------ */

typedef struct xfer {
    CURL *h;
    int fd;             /* download target, -1 for HEAD */
    EVP_MD_CTX *md;     /* content hash */
    EVP_MD_CTX *verify; /* hash of the expected algorithm, when not sha256 */
    uint64_t bytes;
    uint64_t max;
    int too_big;
    int write_failed;
    const volatile int *cancel;
    size_t header_bytes;
    int proxied;                              /* a proxy may carry the transfer (setup_url()) */
    int denied;                               /* a connection was refused by the deny-list */
    char deny_msg[CO_MAX_ERROR_MESSAGE / 16]; /* why */
    char *content_type;                       /* of the response that delivered the content */
    char *final_url;                          /* that answered, after redirects */
} xfer;

static void note_denied(xfer *x)
{
    x->denied = 1;
    snprintf(x->deny_msg, sizeof(x->deny_msg), "%s", co_error_last());
}

/* Every socket libcurl opens, to the server or to a proxy, on the first request or after a
 * redirect, passes the deny-list before it exists. */
static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    xfer *x = ud;
    (void)purpose;
    if (co_net_deny_check(&a->addr, a->addrlen) < 0) {
        note_denied(x);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/*
 * Through a proxy the sockets above reach the proxy alone: before each request, the host of
 * the URL being requested (a redirect's target too) is checked by name. With https the proxy
 * has been asked to open the tunnel by then, but nothing has been sent through it.
 */
static int on_prereq(void *ud, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    (void)local_port;
    xfer *x = ud;
    if (!x->proxied) {
        return CURL_PREREQFUNC_OK;
    }
    const char *url = NULL;
    CURLU *u = curl_url();
    char *host = NULL;
    int rc = 0;
    CO_ASSERT(u);
    if (curl_easy_getinfo(x->h, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK && url &&
        curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
        rc = co_net_deny_check_host(host);
    }
    curl_free(host);
    curl_url_cleanup(u);
    if (rc < 0) {
        note_denied(x);
        return CURL_PREREQFUNC_ABORT;
    }
    return CURL_PREREQFUNC_OK;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (n > x->max - x->bytes) {
        x->too_big = 1;
        return 0;
    }
    for (size_t off = 0; off < n;) {
        ssize_t w = write(x->fd, ptr + off, n - off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            x->write_failed = errno ? errno : EIO;
            return 0;
        }
        off += (size_t)w;
    }
    EVP_DigestUpdate(x->md, ptr, n);
    if (x->verify) {
        EVP_DigestUpdate(x->verify, ptr, n);
    }
    x->bytes += n;
    return n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    (void)ptr;
    xfer *x = ud;
    size_t n = size * nmemb;
    x->header_bytes += n;
    /* a response whose headers never end is cut off */
    return x->header_bytes > CO_MAX_HTTP_HEADERS ? 0 : n;
}

static int
on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    const xfer *x = ud;
    return x->cancel && *x->cancel ? 1 : 0;
}

static void common_setopts(CURL *h, const opts *o, xfer *x, char *errbuf)
{
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o->timeout_ms);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, o->low_speed_time_s);
    curl_easy_setopt(h, CURLOPT_USERAGENT, USER_AGENT);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    if (o->ca_file) {
        curl_easy_setopt(h, CURLOPT_CAINFO, o->ca_file);
    }
    x->h = h;
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, x);
    curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(h, CURLOPT_PREREQDATA, x);
}

static const char *status_text(long code)
{
    static const struct {
        long code;
        const char *text;
    } table[] = {
        {200, "OK"},
        {301, "Moved Permanently"},
        {302, "Found"},
        {303, "See Other"},
        {304, "Not Modified"},
        {307, "Temporary Redirect"},
        {308, "Permanent Redirect"},
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {408, "Request Timeout"},
        {410, "Gone"},
        {429, "Too Many Requests"},
        {500, "Internal Server Error"},
        {501, "Not Implemented"},
        {502, "Bad Gateway"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(table); i++) {
        if (table[i].code == code) {
            return table[i].text;
        }
    }
    return "";
}

static int status_is_transient(long code)
{
    return code == 408 || code == 429 || code >= 500;
}

static int status_error_code(long code)
{
    if (code == 404 || code == 410) {
        return CO_ENOTFOUND;
    }
    if (code == 401 || code == 403) {
        return CO_EAUTH;
    }
    return status_is_transient(code) ? CO_EUNAVAILABLE : CO_ERROR;
}

/* Maps a failed transfer to an error; @p transient is set for failures worth retrying. */
static int transfer_error(CURLcode cc,
                          const xfer *x,
                          const opts *o,
                          const char *what,
                          const char *url,
                          const char *errbuf,
                          int *transient)
{
    const char *detail = errbuf[0] ? errbuf : curl_easy_strerror(cc);
    *transient = 0;
    if (x->denied && (cc == CURLE_COULDNT_CONNECT || cc == CURLE_ABORTED_BY_CALLBACK)) {
        return co_error_set(CO_EAUTH, "%s %.300s: %s", what, url, x->deny_msg);
    }
    switch (cc) {
    case CURLE_ABORTED_BY_CALLBACK:
        return co_error_set(CO_ECANCELED, "%s %.300s: canceled", what, url);
    case CURLE_FILESIZE_EXCEEDED:
        return co_error_set(CO_ETOOBIG, "%s %.300s: larger than the limit of %llu bytes", what, url,
                            (unsigned long long)o->max_bytes);
    case CURLE_WRITE_ERROR:
        if (x->too_big) {
            return co_error_set(CO_ETOOBIG, "%s %.300s: larger than the limit of %llu bytes", what,
                                url, (unsigned long long)o->max_bytes);
        }
        errno = x->write_failed;
        return co_error_set_os(CO_ERROR, "%s %.300s: writing the download", what, url);
    case CURLE_PARTIAL_FILE:
        *transient = 1;
        return co_error_set(CO_EUNAVAILABLE, "%s %.300s: truncated after %llu bytes: %s", what, url,
                            (unsigned long long)x->bytes, detail);
    case CURLE_OPERATION_TIMEDOUT:
        *transient = 1;
        return co_error_set(CO_ETIMEOUT, "%s %.300s: timed out: %s", what, url, detail);
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        *transient = 1;
        return co_error_set(CO_EUNAVAILABLE, "%s %.300s: %s", what, url, detail);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return co_error_set(CO_EINVALID, "%s %.300s: %s", what, url, detail);
    case CURLE_TOO_MANY_REDIRECTS:
        return co_error_set(CO_ERROR, "%s %.300s: more than %d redirects", what, url,
                            CO_MAX_HTTP_REDIRECTS);
    default:
        return co_error_set(CO_ERROR, "%s %.300s: %s", what, url, detail);
    }
}

/* Sleeps @p ms, waking early when cancelled. @return CO_ECANCELED or 0. */
static int backoff_sleep(long ms, const volatile int *cancel)
{
    while (ms > 0) {
        if (cancel && *cancel) {
            return co_error_set(CO_ECANCELED, "canceled");
        }
        long step = ms > 100 ? 100 : ms;
        struct timespec ts = {step / 1000, (step % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
    return 0;
}

static long jittered(long ms)
{
    unsigned r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        r = (unsigned)ms;
    }
    return ms + (long)(r % (unsigned)(ms / 2 + 1));
}

/* ---- download ---------------------------------------------------------------------------- */

void co_fetch_result_dispose(co_fetch_result *r)
{
    if (r) {
        free(r->digest);
        free(r->content_type);
        free(r->url);
        r->digest = r->content_type = r->url = NULL;
        r->bytes = 0;
    }
}

/* One download attempt into the open file @p fd (truncated first). */
static int download_once(const char *url,
                         const opts *o,
                         int fd,
                         const EVP_MD *verify_md,
                         xfer *x,
                         int *transient)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    CURL *h = curl_easy_init();
    int rc = 0;
    CO_ASSERT(h);
    *transient = 0;
    if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
        rc = co_error_set_os(CO_ERROR, "resetting the download file");
        goto done;
    }
    x->fd = fd;
    x->bytes = 0;
    x->too_big = 0;
    x->write_failed = 0;
    x->header_bytes = 0;
    x->denied = 0;
    EVP_DigestInit_ex(x->md, EVP_sha256(), NULL);
    if (x->verify) {
        EVP_DigestInit_ex(x->verify, verify_md, NULL);
    }
    if ((rc = setup_url(h, url, &x->proxied)) < 0) {
        goto done;
    }
    common_setopts(h, o, x, errbuf);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, (long)CO_MAX_HTTP_REDIRECTS);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_bytes);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK) {
        rc = transfer_error(cc, x, o, "downloading", url, errbuf, transient);
        goto done;
    }
    if (status != 200) {
        *transient = status_is_transient(status);
        rc = co_error_set(status_error_code(status), "downloading %.300s: HTTP %ld %s", url, status,
                          status_text(status));
        goto done;
    }
    /* both pick the artifact's format (co_archive_format_for()); libcurl owns the strings */
    const char *ct = NULL, *eff = NULL;
    free(x->content_type);
    free(x->final_url);
    x->content_type =
        curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct ? co_xstrdup(ct) : NULL;
    x->final_url = co_xstrdup(
        curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff ? eff : url);
done:
    curl_easy_cleanup(h);
    return rc;
}

int co_fetch_download(const char *url,
                      const char *digest,
                      const char *dest,
                      const co_fetch_options *options,
                      co_fetch_result *result)
{
    opts o;
    resolve_opts(&o, options, DEFAULT_TIMEOUT_MS);
    const EVP_MD *verify_md = NULL;
    size_t hexlen = 0;
    xfer x = {.fd = -1, .max = o.max_bytes, .cancel = o.cancel};
    char *tmp = NULL;
    char *got = NULL, *want_alg = NULL;
    int fd = -1;
    int rc;
    if ((rc = ensure_curl()) < 0) {
        return rc;
    }
    if (digest) {
        if (co_fetch_digest_check(digest) < 0) {
            return co_error_wrap("downloading %.300s", url);
        }
        verify_md = digest_md(digest, &hexlen);
    }
    x.md = EVP_MD_CTX_new();
    CO_ASSERT(x.md);
    if (verify_md && verify_md != EVP_sha256()) {
        x.verify = EVP_MD_CTX_new();
        CO_ASSERT(x.verify);
    }
    tmp = co_xasprintf("%s.part-XXXXXX", dest);
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        rc = co_error_set_os(CO_ERROR, "creating %s", tmp);
        free(tmp);
        tmp = NULL;
        goto done;
    }
    long delay = o.backoff_ms;
    for (int attempt = 0;; attempt++) {
        int transient = 0;
        rc = download_once(url, &o, fd, verify_md, &x, &transient);
        if (rc == 0 || !transient || attempt >= o.retries) {
            break;
        }
        if (backoff_sleep(jittered(delay), o.cancel) < 0) {
            rc = co_error_set(CO_ECANCELED, "downloading %.300s: canceled", url);
            break;
        }
        delay *= 2;
    }
    if (rc < 0) {
        goto done;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    EVP_DigestFinal_ex(x.md, md, &mdlen);
    char *hex = co_hex_encode(md, mdlen);
    got = co_xasprintf("sha256:%s", hex);
    free(hex);
    if (digest) {
        char *actual = NULL;
        if (x.verify) {
            EVP_DigestFinal_ex(x.verify, md, &mdlen);
            hex = co_hex_encode(md, mdlen);
            want_alg = co_xstrndup(digest, (size_t)(strchr(digest, ':') - digest));
            actual = co_xasprintf("%s:%s", want_alg, hex);
            free(hex);
        } else {
            actual = co_xstrdup(got);
        }
        int same = strcmp(actual, digest) == 0;
        if (!same) {
            rc = co_error_set(CO_EINVALID,
                              "downloading %.300s: digest mismatch: expected %s, got %s (%llu "
                              "bytes)",
                              url, digest, actual, (unsigned long long)x.bytes);
        }
        free(actual);
        if (!same) {
            goto done;
        }
    }
    if (fsync(fd) < 0 || close(fd) < 0) {
        fd = -1;
        rc = co_error_set_os(CO_ERROR, "writing %s", tmp);
        goto done;
    }
    fd = -1;
    if (rename(tmp, dest) < 0) {
        rc = co_error_set_os(CO_ERROR, "moving the download to %s", dest);
        goto done;
    }
    free(tmp);
    tmp = NULL;
    if (result) {
        result->digest = got;
        result->bytes = x.bytes;
        result->content_type = x.content_type;
        result->url = x.final_url;
        got = NULL;
        x.content_type = x.final_url = NULL;
    }
    rc = 0;
done:
    if (fd >= 0) {
        close(fd);
    }
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    free(got);
    free(want_alg);
    free(x.content_type);
    free(x.final_url);
    EVP_MD_CTX_free(x.md);
    EVP_MD_CTX_free(x.verify);
    return rc;
}

/* ---- HEAD resolution --------------------------------------------------------------------- */

void co_fetch_head_result_dispose(co_fetch_head_result *r)
{
    if (r) {
        free(r->url);
        free(r->digest);
        free(r->revision);
        r->url = r->digest = r->revision = NULL;
    }
}

/* The first value of header @p name in the last response of @p h, or NULL. */
static char *header_value(CURL *h, const char *name)
{
    struct curl_header *hdr = NULL;
    if (curl_easy_header(h, name, 0, CURLH_HEADER, -1, &hdr) != CURLHE_OK || !hdr->value) {
        return NULL;
    }
    if (strlen(hdr->value) > CO_MAX_SOURCE_STRING) {
        return NULL;
    }
    return co_xstrdup(hdr->value);
}

static int is_followed_redirect(long status)
{
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/*
 * One HEAD request without following redirects. On success @p status, @p location (the
 * resolved Location, if any), @p digest and @p revision (header values or NULL) are set.
 */
static int head_once(const char *url,
                     const char *dh,
                     const char *rh,
                     const opts *o,
                     long *status,
                     char **location,
                     char **digest,
                     char **revision,
                     int *transient)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    xfer x = {.fd = -1, .cancel = o->cancel};
    CURL *h = curl_easy_init();
    int rc = 0;
    CO_ASSERT(h);
    *transient = 0;
    if ((rc = setup_url(h, url, &x.proxied)) < 0) {
        goto done;
    }
    common_setopts(h, o, &x, errbuf);
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    CURLcode cc = curl_easy_perform(h);
    if (cc != CURLE_OK) {
        rc = transfer_error(cc, &x, o, "calling source reference URL", url, errbuf, transient);
        goto done;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    char *loc = NULL;
    curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &loc);
    *location = loc ? co_xstrdup(loc) : NULL;
    *digest = header_value(h, dh);
    *revision = header_value(h, rh);
done:
    curl_easy_cleanup(h);
    return rc;
}

int co_fetch_head(const char *url,
                  const char *digest_header,
                  const char *revision_header,
                  const co_fetch_options *options,
                  co_fetch_head_result *out)
{
    opts o;
    resolve_opts(&o, options, HEAD_TIMEOUT_MS);
    const char *dh = digest_header && *digest_header ? digest_header : "ETag";
    const char *rh = revision_header && *revision_header ? revision_header : dh;
    char *current = co_xstrdup(url);
    char *location = NULL, *digest = NULL, *revision = NULL, *final = NULL;
    long status = 0;
    int rc;
    if ((rc = ensure_curl()) < 0) {
        goto done;
    }
    for (int hop = 0;; hop++) {
        long delay = o.backoff_ms;
        for (int attempt = 0;; attempt++) {
            int transient = 0;
            free(location);
            free(digest);
            free(revision);
            location = digest = revision = NULL;
            rc = head_once(current, dh, rh, &o, &status, &location, &digest, &revision, &transient);
            if (rc == 0 && status_is_transient(status)) {
                transient = 1;
                rc = co_error_set(status_error_code(status),
                                  "error calling source reference URL: %ld (%s)", status,
                                  status_text(status));
            }
            if (rc == 0 || !transient || attempt >= o.retries) {
                break;
            }
            if (backoff_sleep(jittered(delay), o.cancel) < 0) {
                rc = co_error_set(CO_ECANCELED, "calling source reference URL: canceled");
                break;
            }
            delay *= 2;
        }
        if (rc < 0) {
            goto done;
        }
        if (status >= 400) {
            rc = co_error_set(status_error_code(status),
                              "error calling source reference URL: %ld (%s)", status,
                              status_text(status));
            goto done;
        }
        if (status >= 300 && !digest && is_followed_redirect(status) && location) {
            if (hop >= CO_MAX_HTTP_REDIRECTS) {
                rc = co_error_set(CO_ERROR,
                                  "calling source reference URL %.300s: more than %d "
                                  "redirects",
                                  url, CO_MAX_HTTP_REDIRECTS);
                goto done;
            }
            free(current);
            current = location;
            location = NULL;
            continue;
        }
        break;
    }
    if (status >= 300) {
        if (!location) {
            rc = co_error_set(CO_EINVALID,
                              "calling source reference URL %.300s: HTTP %ld "
                              "without a Location header",
                              current, status);
            goto done;
        }
        final = location;
        location = NULL;
    } else if (status >= 200) {
        final = current;
        current = NULL;
    } else {
        rc = co_error_set(CO_EUNAVAILABLE, "referenced source not ready");
        goto done;
    }
    if (!digest || !*digest) {
        rc = co_error_set(CO_EINVALID, "missing digest on source reference");
        goto done;
    }
    if (!revision || !*revision) {
        rc = co_error_set(CO_EINVALID, "missing revision on source reference");
        goto done;
    }
    out->url = final;
    out->digest = digest;
    out->revision = revision;
    final = digest = revision = NULL;
    rc = 0;
done:
    free(current);
    free(location);
    free(digest);
    free(revision);
    free(final);
    return rc;
}
