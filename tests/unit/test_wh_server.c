/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The webhook's socket server on 127.0.0.1 with libcurl as the client: TLS versions, keep-alive,
 * body caps enforced while streaming, certificate swaps that reach new connections without
 * dropping established ones, reloading from files, probes and metrics, and the graceful drain.
 * Certificates are generated here with OpenSSL.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/common.h"
#include "tests/support/test_support.h"
#include "webhook/wh_certwatch.h"
#include "webhook/wh_metrics.h"
#include "webhook/wh_server.h"
#include "webhook/wh_tls.h"
#include "webhook/wh_tlsio.h"

/* --- certificates --------------------------------------------------------------------------- */

typedef struct pair {
    char *cert;
    char *key;
} pair;

static char *bio_text(BIO *b)
{
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    char *out = co_xmemdup(data, (size_t)n);
    BIO_free(b);
    return out;
}

/* A self-signed ECDSA P-256 certificate for 127.0.0.1 valid for @p days. */
static pair make_pair(const char *cn, int days)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    assert_non_null(key);
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)time(NULL));
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    const char *exts[][2] = {{"subjectAltName", "IP:127.0.0.1,DNS:localhost"},
                             {"basicConstraints", "critical,CA:TRUE"},
                             {"keyUsage", "critical,digitalSignature,keyCertSign"},
                             {"extendedKeyUsage", "serverAuth"}};
    for (size_t i = 0; i < CO_ARRAY_SIZE(exts); i++) {
        X509_EXTENSION *e = X509V3_EXT_conf(NULL, &ctx, exts[i][0], exts[i][1]);
        assert_non_null(e);
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    }
    assert_true(X509_sign(x, key, EVP_sha256()) > 0);
    BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(cb, x);
    PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL);
    pair p = {bio_text(cb), bio_text(kb)};
    X509_free(x);
    EVP_PKEY_free(key);
    return p;
}

static void free_pair(pair *p)
{
    free(p->cert);
    free(p->key);
}

/* --- a server with a fake decision ------------------------------------------------------------ */

static int slow_ms;

static int fake_admit(wh_decision *d, void *ctx, wh_route route, const wh_admission_request *req)
{
    (void)ctx;
    (void)route;
    if (!strcmp(req->operation, "DELETE")) {
        wh_decision_deny(d, 403, "Forbidden", "no deleting today");
    }
    if (slow_ms) {
        struct timespec ts = {slow_ms / 1000, (slow_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static int
fake_convert(struct json_object **out, void *ctx, struct json_object *obj, const char *desired)
{
    (void)ctx;
    (void)out;
    (void)obj;
    return co_error_set(CO_EINVALID, "cannot convert to %s", desired);
}

static const wh_handlers handlers = {fake_admit, fake_convert, NULL};

static const char review[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u-1\",\"operation\":\"CREATE\",\"kind\":{\"group\":\"core.cs.sap.com\","
    "\"version\":\"v1alpha1\",\"kind\":\"Component\"},\"object\":{}}}";

typedef struct fixture {
    wh_tls *tls;
    wh_server *server;
    pair p1;
    char url[128];
    char probe[128];
    char metrics[128];
} fixture;

static size_t synced_checks(void *ctx, wh_probe_check *out, size_t max)
{
    (void)ctx;
    (void)max;
    out[0].name = "caches";
    out[0].failure = NULL;
    return 1;
}

static void start_limited(fixture *f, wh_tls_min_version min, unsigned max_connections)
{
    memset(f, 0, sizeof(*f));
    f->p1 = make_pair("first", 30);
    wh_tls_new(&f->tls);
    assert_co_pass(
        wh_tls_set_pem(f->tls, NULL, f->p1.cert, strlen(f->p1.cert), f->p1.key, strlen(f->p1.key)));
    wh_server_config cfg = {
        .webhook_addr = "127.0.0.1:0",
        .probe_addr = "127.0.0.1:0",
        .metrics_addr = "127.0.0.1:0",
        .threads = 2,
        .max_connections = max_connections,
        .connection_timeout_s = 30,
        .tls_min = min,
        .handlers = &handlers,
        .tls = f->tls,
        .ready = synced_checks,
    };
    assert_co_pass(wh_server_start(&f->server, &cfg));
    snprintf(f->url, sizeof(f->url), "https://127.0.0.1:%d",
             wh_server_port(f->server, WH_LISTENER_WEBHOOK));
    snprintf(f->probe, sizeof(f->probe), "http://127.0.0.1:%d",
             wh_server_port(f->server, WH_LISTENER_PROBE));
    snprintf(f->metrics, sizeof(f->metrics), "http://127.0.0.1:%d",
             wh_server_port(f->server, WH_LISTENER_METRICS));
}

static void start(fixture *f, wh_tls_min_version min)
{
    start_limited(f, min, 64);
}

static void stop(fixture *f)
{
    wh_server_free(f->server);
    wh_tls_free(f->tls);
    free_pair(&f->p1);
}

/* --- a small client ------------------------------------------------------------------------- */

typedef struct reply {
    long status;
    co_buf body;
    co_buf headers;
    CURLcode rc;
    long connects;
} reply;

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    return co_buf_put(ud, p, sz * n) == 0 ? sz * n : 0;
}

static CURL *client(const char *ca)
{
    CURL *c = curl_easy_init();
    if (ca) {
        struct curl_blob blob = {(void *)ca, strlen(ca), CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
    }
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    return c;
}

static void
perform(reply *r, CURL *c, const char *url, const char *method, const char *ct, const char *body)
{
    memset(r, 0, sizeof(*r));
    co_buf_init(&r->body, 64 * CO_MIB);
    co_buf_init(&r->headers, CO_MIB);
    struct curl_slist *h = NULL;
    if (ct) {
        char *line = co_xasprintf("Content-Type: %s", ct);
        h = curl_slist_append(h, line);
        free(line);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r->headers);
    r->rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &r->connects);
    curl_slist_free_all(h);
}

static void dispose(reply *r)
{
    co_buf_dispose(&r->body);
    co_buf_dispose(&r->headers);
}

static void post_review(reply *r, CURL *c, const fixture *f, const char *path)
{
    char *url = co_xasprintf("%s%s", f->url, path);
    perform(r, c, url, "POST", "application/json", review);
    free(url);
}

/* --- tests ---------------------------------------------------------------------------------- */

static void test_wh_server__tls_keep_alive_and_routes(void **state)
{
    (void)state;
    fixture f;
    start(&f, WH_TLS_MIN_12);
    CURL *c = client(f.p1.cert);
    reply r;
    post_review(&r, c, &f, "/validate/v1alpha1/components");
    assert_int_equal(r.rc, CURLE_OK);
    assert_int_equal(r.status, 200);
    assert_contains(co_buf_cstr(&r.body), "\"uid\":\"u-1\",\"allowed\":true");
    assert_contains(co_buf_cstr(&r.headers), "Content-Type: application/json");
    assert_int_equal(r.connects, 1);
    dispose(&r);
    /* The second request reuses the connection (no new handshake). */
    post_review(&r, c, &f, "/mutate/v1alpha1/components");
    assert_int_equal(r.status, 200);
    assert_int_equal(r.connects, 0);
    dispose(&r);
    char *url = co_xasprintf("%s/validate/v1alpha1/components", f.url);
    perform(&r, c, url, "GET", NULL, NULL);
    assert_int_equal(r.status, 405);
    assert_contains(co_buf_cstr(&r.headers), "Allow: POST");
    dispose(&r);
    /* HEAD gets the headers of that answer and no body, at once: nothing of it is kept back
     * waiting for a body that is not sent (the client would time out) */
    memset(&r, 0, sizeof(r));
    co_buf_init(&r.headers, CO_MIB);
    co_buf_init(&r.body, CO_MIB);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    assert_int_equal(r.status, 405);
    assert_contains(co_buf_cstr(&r.headers), "Allow: POST");
    assert_int_equal(r.body.len, 0);
    dispose(&r);
    curl_easy_setopt(c, CURLOPT_NOBODY, 0L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    perform(&r, c, url, "POST", "text/yaml", "a: b");
    assert_int_equal(r.status, 415);
    dispose(&r);
    free(url);
    url = co_xasprintf("%s/nope", f.url);
    perform(&r, c, url, "POST", "application/json", "{}");
    assert_int_equal(r.status, 404);
    assert_contains(co_buf_cstr(&r.body), "\"reason\":\"NotFound\"");
    dispose(&r);
    free(url);
    curl_easy_cleanup(c);
    stop(&f);
}

/* The server's end of the connection that has local port @p client_port (this process holds
 * both ends), or -1. */
static int server_end(int server_port, long client_port)
{
    for (int fd = 3; fd < 1024; fd++) {
        struct sockaddr_in self = {0}, peer = {0};
        socklen_t ls = sizeof(self), lp = sizeof(peer);
        if (getsockname(fd, (struct sockaddr *)&self, &ls) == 0 &&
            getpeername(fd, (struct sockaddr *)&peer, &lp) == 0 && self.sin_family == AF_INET &&
            ntohs(self.sin_port) == server_port && ntohs(peer.sin_port) == client_port) {
            return fd;
        }
    }
    return -1;
}

/*
 * libmicrohttpd corks a connection's socket for its first small response and leaves it so; the
 * server takes the cork off once, after which every answer leaves with a single write. A socket
 * still corked after the answers would hold each of them back until its 200 ms timer, or need
 * a push of its own per answer.
 */
static void test_wh_server__small_answers_leave_the_socket_uncorked(void **state)
{
    (void)state;
    fixture f;
    start(&f, WH_TLS_MIN_12);
    CURL *c = client(f.p1.cert);
    reply r;
    unsigned long pushes = wh_tlsio_pushes();
    for (int i = 0; i < 3; i++) {
        post_review(&r, c, &f, "/validate/v1alpha1/components");
        assert_int_equal(r.status, 200);
        assert_contains(co_buf_cstr(&r.body), "\"allowed\":true");
        assert_int_equal(r.connects, i == 0);
        dispose(&r);
    }
    long port = 0;
    assert_int_equal(curl_easy_getinfo(c, CURLINFO_LOCAL_PORT, &port), CURLE_OK);
    int fd = server_end(wh_server_port(f.server, WH_LISTENER_WEBHOOK), port);
    assert_true(fd >= 0);
    int cork = -1, nodelay = -1;
    socklen_t len = sizeof(int);
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_CORK, &cork, &len), 0);
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
    assert_int_equal(cork, 0);
    assert_int_not_equal(nodelay, 0);
    /* one push took the cork off, for the first answer */
    assert_int_equal(wh_tlsio_pushes() - pushes, 1);
    curl_easy_cleanup(c);
    stop(&f);
}

static unsigned held(const fixture *f, unsigned worker)
{
    return wh_server_worker_connections(f->server, worker);
}

/* Waits (up to 5 s) until the workers hold @p total connections between them. */
static int wait_total(const fixture *f, unsigned total)
{
    for (int i = 0; i < 500; i++) {
        if (held(f, 0) + held(f, 1) == total) {
            return 1;
        }
        struct timespec nap = {0, 10000000L};
        nanosleep(&nap, NULL);
    }
    return 0;
}

/*
 * Connections opened one after another (as a load generator or the API server opens them) go
 * to the worker holding the fewest, not all to the one that happened to wake first, and the
 * connection limit counts them across workers.
 */
static void test_wh_server__connections_spread_over_workers_within_the_limit(void **state)
{
    (void)state;
    fixture f;
    start_limited(&f, WH_TLS_MIN_12, 4);
    assert_int_equal(held(&f, 2), 0); /* only two workers */
    CURL *c[5];
    reply r;
    for (int i = 0; i < 4; i++) {
        c[i] = client(f.p1.cert);
        post_review(&r, c[i], &f, "/validate/v1alpha1/components");
        assert_int_equal(r.rc, CURLE_OK);
        assert_int_equal(r.status, 200);
        dispose(&r);
    }
    /* each handle keeps its connection open */
    assert_true(wait_total(&f, 4));
    assert_int_equal(held(&f, 0), 2);
    assert_int_equal(held(&f, 1), 2);
    /* a fifth connection is over the limit: closed before the handshake */
    c[4] = client(f.p1.cert);
    post_review(&r, c[4], &f, "/validate/v1alpha1/components");
    assert_int_not_equal(r.rc, CURLE_OK);
    dispose(&r);
    /* one closes, and the fifth is served */
    curl_easy_cleanup(c[0]);
    assert_true(wait_total(&f, 3));
    post_review(&r, c[4], &f, "/validate/v1alpha1/components");
    assert_int_equal(r.rc, CURLE_OK);
    assert_int_equal(r.status, 200);
    dispose(&r);
    assert_true(wait_total(&f, 4));
    assert_int_equal(held(&f, 0), 2);
    assert_int_equal(held(&f, 1), 2);
    for (int i = 1; i < 5; i++) {
        curl_easy_cleanup(c[i]);
    }
    stop(&f);
}

/* A plain TCP connection to the webhook port (no handshake: it only has to be held). */
static int raw_connect(const fixture *f)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port =
                                htons((uint16_t)wh_server_port(f->server, WH_LISTENER_WEBHOOK)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/*
 * Connections opened all at once (a client opening its pool) are spread too: the acceptor
 * takes the whole burst before any worker has picked up the first connection.
 */
static void test_wh_server__a_burst_of_connections_is_spread_over_workers(void **state)
{
    (void)state;
    fixture f;
    start_limited(&f, WH_TLS_MIN_12, 16);
    int fds[16];
    for (int i = 0; i < 16; i++) {
        fds[i] = raw_connect(&f);
    }
    assert_true(wait_total(&f, 16));
    assert_int_equal(held(&f, 0), 8);
    assert_int_equal(held(&f, 1), 8);
    /* the limit counts them: one more takes the place of the one that has waited longest for
     * its handshake, which the server closes */
    int extra = raw_connect(&f);
    char b;
    assert_int_equal(recv(fds[0], &b, 1, 0), 0);
    close(fds[0]);
    fds[0] = extra;
    assert_true(wait_total(&f, 16));
    /* closed ones come off the counts: the next burst fills both workers up again */
    for (int i = 0; i < 8; i++) {
        close(fds[i]);
    }
    assert_true(wait_total(&f, 8));
    for (int i = 0; i < 8; i++) {
        fds[i] = raw_connect(&f);
    }
    assert_true(wait_total(&f, 16));
    assert_int_equal(held(&f, 0), 8);
    assert_int_equal(held(&f, 1), 8);
    for (int i = 0; i < 16; i++) {
        close(fds[i]);
    }
    stop(&f);
}

static void test_wh_server__refuses_plain_http_and_old_tls(void **state)
{
    (void)state;
    fixture f;
    start(&f, WH_TLS_MIN_12);
    char *url = co_xasprintf("%s/validate/v1alpha1/components", f.url);
    /* TLS 1.1 at most: refused by the server (the client allows anything). */
    CURL *c = client(f.p1.cert);
    curl_easy_setopt(c, CURLOPT_SSLVERSION,
                     (long)(CURL_SSLVERSION_TLSv1_0 | CURL_SSLVERSION_MAX_TLSv1_1));
    curl_easy_setopt(c, CURLOPT_SSL_CIPHER_LIST, "DEFAULT@SECLEVEL=0");
    reply r;
    perform(&r, c, url, "POST", "application/json", review);
    assert_int_not_equal(r.rc, CURLE_OK);
    dispose(&r);
    curl_easy_cleanup(c);
    /* The same client limited to TLS 1.2 is served. */
    c = client(f.p1.cert);
    curl_easy_setopt(c, CURLOPT_SSLVERSION,
                     (long)(CURL_SSLVERSION_TLSv1_2 | CURL_SSLVERSION_MAX_TLSv1_2));
    perform(&r, c, url, "POST", "application/json", review);
    assert_int_equal(r.rc, CURLE_OK);
    assert_int_equal(r.status, 200);
    dispose(&r);
    curl_easy_cleanup(c);
    /* Plain HTTP on the TLS port gets no HTTP answer. */
    char *plain = co_xasprintf("http://127.0.0.1:%d/validate/v1alpha1/components",
                               wh_server_port(f.server, WH_LISTENER_WEBHOOK));
    c = client(NULL);
    perform(&r, c, plain, "POST", "application/json", review);
    assert_true(r.rc != CURLE_OK || r.status != 200);
    dispose(&r);
    curl_easy_cleanup(c);
    free(plain);
    free(url);
    stop(&f);
    /* With TLS 1.3 as the minimum, a TLS 1.2 client is refused. */
    start(&f, WH_TLS_MIN_13);
    url = co_xasprintf("%s/validate/v1alpha1/components", f.url);
    c = client(f.p1.cert);
    curl_easy_setopt(c, CURLOPT_SSLVERSION,
                     (long)(CURL_SSLVERSION_TLSv1_2 | CURL_SSLVERSION_MAX_TLSv1_2));
    perform(&r, c, url, "POST", "application/json", review);
    assert_int_not_equal(r.rc, CURLE_OK);
    dispose(&r);
    curl_easy_cleanup(c);
    free(url);
    stop(&f);
}

typedef struct stream {
    size_t left;
} stream;

static size_t produce(char *buf, size_t sz, size_t n, void *ud)
{
    stream *s = ud;
    size_t k = sz * n < s->left ? sz * n : s->left;
    memset(buf, ' ', k);
    s->left -= k;
    return k;
}

static void test_wh_server__body_cap_while_streaming(void **state)
{
    (void)state;
    fixture f;
    start(&f, WH_TLS_MIN_12);
    char *url = co_xasprintf("%s/validate/v1alpha1/components", f.url);
    /* Chunked: the size is only known while reading. */
    CURL *c = client(f.p1.cert);
    stream s = {CO_MAX_ADMISSION_BODY + 4096};
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Transfer-Encoding: chunked");
    co_buf body = CO_BUF_INIT(CO_MIB);
    long status = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, produce);
    curl_easy_setopt(c, CURLOPT_READDATA, &s);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    assert_int_equal(status, 413);
    assert_contains(co_buf_cstr(&body), "request body exceeds the limit of 3670016 bytes");
    co_buf_dispose(&body);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    /* Declared too large: refused from the headers, before the body is sent. */
    c = client(f.p1.cert);
    s.left = CO_MAX_ADMISSION_BODY + 1;
    h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s.left);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, produce);
    curl_easy_setopt(c, CURLOPT_READDATA, &s);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    assert_int_equal(status, 413);
    assert_true(rc == CURLE_OK || rc == CURLE_SEND_ERROR);
    assert_true(s.left > 0); /* most of the body was never sent */
    co_buf_dispose(&body);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(url);
    stop(&f);
}

static void test_wh_server__certificate_swap_reaches_new_connections_only(void **state)
{
    (void)state;
    fixture f;
    start(&f, WH_TLS_MIN_12);
    pair p2 = make_pair("second", 60);
    CURL *old = client(f.p1.cert);
    reply r;
    post_review(&r, old, &f, "/validate/v1alpha1/components");
    assert_int_equal(r.status, 200);
    dispose(&r);
    /* A key that does not belong to the certificate is refused; the old pair stays. */
    assert_co_fail_with(CO_EINVALID, wh_tls_set_pem(f.tls, NULL, p2.cert, strlen(p2.cert), f.p1.key,
                                                    strlen(f.p1.key)));
    assert_contains(co_error_last(), "does not match");
    assert_co_fail_with(CO_EINVALID,
                        wh_tls_set_pem(f.tls, NULL, "junk", 4, f.p1.key, strlen(f.p1.key)));
    /* GnuTLS alone would take a certificate with a damaged END line followed by its key in one
     * file; OpenSSL (what certs/ inspects with) refuses it, and so does the store. */
    char *damaged = co_xasprintf("%s%s", p2.cert, p2.key);
    char *end = strstr(damaged, "-----END CERTIFICATE-----");
    assert_non_null(end);
    end[7] = ' '; /* "-----EN  CERTIFICATE-----" */
    assert_co_fail_with(CO_EINVALID, wh_tls_set_pem(f.tls, NULL, damaged, strlen(damaged), damaged,
                                                    strlen(damaged)));
    assert_contains(co_error_last(), "malformed PEM certificate");
    free(damaged);
    int changed = -1;
    assert_co_pass(
        wh_tls_set_pem(f.tls, &changed, f.p1.cert, strlen(f.p1.cert), f.p1.key, strlen(f.p1.key)));
    assert_int_equal(changed, 0);
    assert_co_pass(
        wh_tls_set_pem(f.tls, &changed, p2.cert, strlen(p2.cert), p2.key, strlen(p2.key)));
    assert_int_equal(changed, 1);
    /* New connections get the new certificate: trusting only the old one fails now. */
    CURL *c = client(f.p1.cert);
    post_review(&r, c, &f, "/validate/v1alpha1/components");
    assert_int_equal(r.rc, CURLE_PEER_FAILED_VERIFICATION);
    dispose(&r);
    curl_easy_cleanup(c);
    c = client(p2.cert);
    post_review(&r, c, &f, "/validate/v1alpha1/components");
    assert_int_equal(r.rc, CURLE_OK);
    assert_int_equal(r.status, 200);
    dispose(&r);
    curl_easy_cleanup(c);
    /* The established keep-alive connection was not dropped. */
    post_review(&r, old, &f, "/validate/v1alpha1/components");
    assert_int_equal(r.rc, CURLE_OK);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.connects, 0);
    dispose(&r);
    curl_easy_cleanup(old);
    free_pair(&p2);
    stop(&f);
}

static void write_pair(const char *dir, const pair *p)
{
    /* Write beside and rename, as kubelet and careful tools do. */
    char *tmp = co_xasprintf("%s/tls.key.tmp", dir), *dst = co_xasprintf("%s/tls.key", dir);
    co_test_write_file(tmp, p->key, strlen(p->key));
    assert_int_equal(rename(tmp, dst), 0);
    free(tmp);
    free(dst);
    tmp = co_xasprintf("%s/tls.crt.tmp", dir);
    dst = co_xasprintf("%s/tls.crt", dir);
    co_test_write_file(tmp, p->cert, strlen(p->cert));
    assert_int_equal(rename(tmp, dst), 0);
    free(tmp);
    free(dst);
}

static int wait_not_after(wh_tls *t, time_t not, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 20) {
        if (wh_tls_not_after(t) != not ) {
            return 1;
        }
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void test_wh_server__certificate_files_are_reloaded(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    char *crt = co_xasprintf("%s/tls.crt", dir), *key = co_xasprintf("%s/tls.key", dir);
    wh_tls *t = NULL;
    wh_tls_new(&t);
    wh_certwatch *w = NULL;
    /* Missing files are a start-up error naming the file. */
    assert_co_fail_with(CO_ENOTFOUND, wh_certwatch_start(&w, t, crt, key, 60000));
    assert_contains(co_error_last(), crt);
    assert_false(wh_tls_loaded(t));
    pair p1 = make_pair("one", 10), p2 = make_pair("two", 20), p3 = make_pair("three", 30);
    write_pair(dir, &p1);
    /* A long poll interval: the change must be found through inotify. */
    assert_co_pass(wh_certwatch_start(&w, t, crt, key, 60000));
    assert_true(wh_tls_loaded(t));
    time_t first = wh_tls_not_after(t);
    write_pair(dir, &p2);
    assert_true(wait_not_after(t, first, 20000));
    time_t second = wh_tls_not_after(t);
    assert_true(second > first);
    /* An inconsistent pair (new certificate, old key) is not served. */
    co_test_write_file(crt, p3.cert, strlen(p3.cert));
    assert_co_fail_with(CO_EINVALID, wh_certwatch_reload(w));
    assert_true(wh_tls_not_after(t) == second);
    /* Once the key follows, the pair is taken. */
    co_test_write_file(key, p3.key, strlen(p3.key));
    assert_true(wait_not_after(t, second, 20000));
    assert_true(wh_tls_not_after(t) > second);
    wh_certwatch_stop(w);
    /* Without inotify events, the poll finds the change. */
    write_pair(dir, &p1);
    assert_co_pass(wh_certwatch_start(&w, t, crt, key, 100));
    time_t now = wh_tls_not_after(t);
    write_pair(dir, &p2);
    assert_true(wait_not_after(t, now, 20000));
    wh_certwatch_stop(w);
    wh_tls_free(t);
    free_pair(&p1);
    free_pair(&p2);
    free_pair(&p3);
    co_test_rmtree(dir);
    free(dir);
    free(crt);
    free(key);
}

static void test_wh_server__probes_and_metrics(void **state)
{
    (void)state;
    wh_metrics_reset();
    fixture f;
    start(&f, WH_TLS_MIN_12);
    CURL *c = client(f.p1.cert);
    reply r;
    post_review(&r, c, &f, "/validate/v1alpha1/components");
    assert_int_equal(r.status, 200);
    dispose(&r);
    curl_easy_cleanup(c);
    c = client(NULL);
    char *url = co_xasprintf("%s/readyz", f.probe);
    perform(&r, c, url, "GET", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(co_buf_cstr(&r.body), "ok");
    dispose(&r);
    free(url);
    url = co_xasprintf("%s/healthz", f.probe);
    perform(&r, c, url, "GET", NULL, NULL);
    assert_int_equal(r.status, 200);
    dispose(&r);
    free(url);
    /* /metrics lives on its own listener here. */
    url = co_xasprintf("%s/metrics", f.probe);
    perform(&r, c, url, "GET", NULL, NULL);
    assert_int_equal(r.status, 404);
    dispose(&r);
    free(url);
    url = co_xasprintf("%s/metrics", f.metrics);
    perform(&r, c, url, "GET", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_contains(co_buf_cstr(&r.body),
                    "controller_runtime_webhook_requests_total{webhook=\"/validate/v1alpha1/"
                    "components\",code=\"200\"} 1\n");
    assert_contains(co_buf_cstr(&r.body), "certwatcher_read_certificate_total ");
    dispose(&r);
    free(url);
    curl_easy_cleanup(c);
    stop(&f);
}

typedef struct slow_call {
    const fixture *f;
    reply r;
} slow_call;

static void *slow_request(void *arg)
{
    slow_call *sc = arg;
    CURL *c = client(sc->f->p1.cert);
    post_review(&sc->r, c, sc->f, "/validate/v1alpha1/components");
    curl_easy_cleanup(c);
    return NULL;
}

static void test_wh_server__drain_finishes_requests_in_flight(void **state)
{
    (void)state;
    fixture f;
    start(&f, WH_TLS_MIN_12);
    slow_ms = 700;
    slow_call sc = {&f, {0}};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, slow_request, &sc), 0);
    /* Wait until the request is being handled. */
    for (int i = 0; i < 500; i++) {
        char *text = NULL;
        size_t len = 0;
        wh_metrics_render(&text, &len);
        int busy = strstr(text, "controller_runtime_webhook_requests_in_flight{webhook=\"/"
                                "validate/v1alpha1/components\"} 1") != NULL;
        free(text);
        if (busy) {
            break;
        }
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(wh_server_drain(f.server, 30000), 0);
    pthread_join(th, NULL);
    slow_ms = 0;
    assert_int_equal(sc.r.rc, CURLE_OK);
    assert_int_equal(sc.r.status, 200);
    assert_contains(co_buf_cstr(&sc.r.headers), "Connection: close");
    dispose(&sc.r);
    /* Draining: not ready, and no new connections. */
    CURL *c = client(NULL);
    char *url = co_xasprintf("%s/readyz", f.probe);
    reply r;
    perform(&r, c, url, "GET", NULL, NULL);
    assert_int_equal(r.status, 503);
    assert_contains(co_buf_cstr(&r.body), "[-]shutdown failed: the server is shutting down");
    dispose(&r);
    curl_easy_cleanup(c);
    free(url);
    c = client(f.p1.cert);
    post_review(&r, c, &f, "/validate/v1alpha1/components");
    assert_int_equal(r.rc, CURLE_COULDNT_CONNECT);
    dispose(&r);
    curl_easy_cleanup(c);
    stop(&f);
}

/* Writes @p req into a local connection and serves it until the server closes it; the
 * answers in @p out. */
static void local_exchange(co_buf *out, wh_server *s, const char *req)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    assert_co_pass(wh_server_local_add(s, sv[1]));
    assert_int_equal(send(sv[0], req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    shutdown(sv[0], SHUT_WR);
    int ended = 0;
    for (int round = 0; round < 10000 && !ended; round++) {
        wh_server_local_run(s);
        char buf[4096];
        ssize_t n;
        while ((n = recv(sv[0], buf, sizeof(buf), 0)) > 0) {
            assert_co_pass(co_buf_put(out, buf, (size_t)n));
        }
        ended = n == 0;
    }
    close(sv[0]);
    assert_true(ended);
}

static void test_wh_server__local_connection_is_served_like_the_tls_listener(void **state)
{
    (void)state;
    wh_server_config cfg = {.handlers = &handlers, .limits = {.admission_body = 1024}};
    wh_server *s = NULL;
    assert_co_pass(wh_server_local_new(&s, &cfg));
    /* two pipelined requests: a review, then a body over the route's cap */
    char *req = co_xasprintf("POST /validate/v1alpha1/components HTTP/1.1\r\nHost: w\r\n"
                             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s"
                             "POST /validate/v1alpha1/components HTTP/1.1\r\nHost: w\r\n"
                             "Content-Type: application/json\r\nContent-Length: 2048\r\n\r\n",
                             strlen(review), review);
    co_buf out = CO_BUF_INIT(CO_MIB);
    local_exchange(&out, s, req);
    assert_co_pass(co_buf_putc(&out, '\0'));
    assert_contains(out.ptr, "HTTP/1.1 200");
    assert_contains(out.ptr, "\"uid\":\"u-1\",\"allowed\":true");
    assert_contains(out.ptr, "HTTP/1.1 413");
    /* every request has given its memory back */
    assert_int_equal(wh_server_memory_used(s), 0);
    co_buf_dispose(&out);
    free(req);

    /* a request cut short in its body is dropped without an answer */
    co_buf_init(&out, CO_MIB);
    local_exchange(&out, s,
                   "POST /convert HTTP/1.1\r\nHost: w\r\nContent-Type: application/json\r\n"
                   "Content-Length: 100\r\n\r\n{\"apiVersion\"");
    assert_int_equal(out.len, 0);
    assert_int_equal(wh_server_memory_used(s), 0);
    co_buf_dispose(&out);
    wh_server_free(s);
}

static void test_wh_server__parse_addr(void **state)
{
    (void)state;
    char *host = NULL;
    int port = 0;
    assert_co_pass(wh_server_parse_addr(&host, &port, ":9443"));
    assert_string_equal(host, "");
    assert_int_equal(port, 9443);
    free(host);
    assert_co_pass(wh_server_parse_addr(&host, &port, "[::1]:80"));
    assert_string_equal(host, "::1");
    assert_int_equal(port, 80);
    free(host);
    assert_co_pass(wh_server_parse_addr(&host, &port, "127.0.0.1:0"));
    assert_string_equal(host, "127.0.0.1");
    free(host);
    assert_co_fail_with(CO_EINVALID, wh_server_parse_addr(&host, &port, "9443"));
    assert_co_fail_with(CO_EINVALID, wh_server_parse_addr(&host, &port, ":99999"));
    assert_co_fail_with(CO_EINVALID, wh_server_parse_addr(&host, &port, ":"));
    assert_co_fail_with(CO_EINVALID, wh_server_parse_addr(&host, &port, "[::1]9443"));
    assert_contains(co_error_last(), "[::1]9443");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wh_server__tls_keep_alive_and_routes),
        cmocka_unit_test(test_wh_server__small_answers_leave_the_socket_uncorked),
        cmocka_unit_test(test_wh_server__refuses_plain_http_and_old_tls),
        cmocka_unit_test(test_wh_server__connections_spread_over_workers_within_the_limit),
        cmocka_unit_test(test_wh_server__a_burst_of_connections_is_spread_over_workers),
        cmocka_unit_test(test_wh_server__body_cap_while_streaming),
        cmocka_unit_test(test_wh_server__certificate_swap_reaches_new_connections_only),
        cmocka_unit_test(test_wh_server__certificate_files_are_reloaded),
        cmocka_unit_test(test_wh_server__probes_and_metrics),
        cmocka_unit_test(test_wh_server__drain_finishes_requests_in_flight),
        cmocka_unit_test(test_wh_server__local_connection_is_served_like_the_tls_listener),
        cmocka_unit_test(test_wh_server__parse_addr),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
