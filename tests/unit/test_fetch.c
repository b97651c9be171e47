/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for downloads and HTTP-repository HEAD resolution against a loopback HTTP server:
 * digest verification, truncation, retries, caps, redirects, proxies, cancellation, and the
 * network deny-list on every hop (a second server on 127.0.0.2 plays the denied address).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "co/source/fetch.h"
#include "co/util/net.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_support.h"

typedef struct fixture {
    test_httpd *srv;
    char *dir;
    char *dest;
    co_fetch_options opts;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->srv = test_httpd_start();
    f->dir = co_test_tmpdir();
    f->dest = co_xasprintf("%s/artifact.tgz", f->dir);
    f->opts.backoff_ms = 10;
    f->opts.timeout_ms = 20000;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    co_net_deny_clear();
    test_httpd_stop(f->srv);
    co_test_rmtree(f->dir);
    free(f->dir);
    free(f->dest);
    free(f);
    return 0;
}

static char *url_of(const fixture *f, const char *path)
{
    return co_xasprintf("%s%s", test_httpd_url(f->srv), path);
}

static char *digest_of(const char *alg, const void *data, size_t len)
{
    const EVP_MD *md = strcmp(alg, "sha512") == 0 ? EVP_sha512() : EVP_sha256();
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_Digest(data, len, out, &n, md, NULL);
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    for (unsigned i = 0; i < n; i++) {
        snprintf(hex + 2 * (size_t)i, 3, "%02x", out[i]);
    }
    return co_xasprintf("%s:%s", alg, hex);
}

/* Nothing but @p allowed (or nothing at all) in the test directory. */
static void assert_dir_holds_only(const fixture *f, const char *allowed)
{
    DIR *d = opendir(f->dir);
    struct dirent *e;
    while ((e = readdir(d))) { // NOLINT(concurrency-mt-unsafe)
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) {
            continue;
        }
        if (!allowed || strcmp(e->d_name, allowed) != 0) {
            fail_msg("unexpected file left behind: %s", e->d_name);
        }
    }
    closedir(d);
}

static const char payload[] = "pretend this is a tar.gz artifact, long enough to be split";

static void test_fetch__downloads_and_verifies(void **state)
{
    fixture *f = *state;
    test_httpd_route(f->srv, "/a.tgz", 200, payload, sizeof(payload), NULL);
    char *url = url_of(f, "/a.tgz");
    char *digest = digest_of("sha256", payload, sizeof(payload));
    co_fetch_result r = {0};
    assert_co_pass(co_fetch_download(url, digest, f->dest, &f->opts, &r));
    assert_string_equal(r.digest, digest);
    assert_int_equal(r.bytes, sizeof(payload));
    size_t len;
    char *got = co_test_read_file(f->dest, &len);
    assert_int_equal(len, sizeof(payload));
    assert_memory_equal(got, payload, len);
    assert_dir_holds_only(f, "artifact.tgz");
    free(got);
    co_fetch_result_dispose(&r);
    co_fetch_result_dispose(&r);

    /* sha512 digests are checked with sha512; the result still reports sha256 */
    char *d512 = digest_of("sha512", payload, sizeof(payload));
    assert_co_pass(co_fetch_download(url, d512, f->dest, &f->opts, &r));
    assert_string_equal(r.digest, digest);
    co_fetch_result_dispose(&r);
    free(d512);
    /* without a digest nothing is verified, but the digest is reported */
    assert_co_pass(co_fetch_download(url, NULL, f->dest, &f->opts, &r));
    assert_string_equal(r.digest, digest);
    co_fetch_result_dispose(&r);
    free(digest);
    free(url);
}

/* The Content-Type and the URL that answered, after redirects, choose the artifact's format. */
static void test_fetch__reports_content_type_and_final_url(void **state)
{
    fixture *f = *state;
    test_httpd_route(f->srv, "/store/app.yaml", 200, payload, sizeof(payload),
                     "Content-Type: text/yaml; charset=utf-8");
    char *target = url_of(f, "/store/app.yaml");
    char *loc = co_xasprintf("Location: %s", target);
    test_httpd_route(f->srv, "/latest", 302, NULL, 0, loc);
    char *url = url_of(f, "/latest");
    co_fetch_result r = {0};
    assert_co_pass(co_fetch_download(url, NULL, f->dest, &f->opts, &r));
    assert_non_null(r.content_type);
    assert_string_equal(r.content_type, "text/yaml; charset=utf-8");
    assert_string_equal(r.url, target);
    co_fetch_result_dispose(&r);
    assert_null(r.content_type);
    assert_null(r.url);
    /* no Content-Type at all */
    test_httpd_route(f->srv, "/bare", 200, payload, sizeof(payload), NULL);
    char *bare = url_of(f, "/bare");
    assert_co_pass(co_fetch_download(bare, NULL, f->dest, &f->opts, &r));
    assert_string_equal(r.url, bare);
    co_fetch_result_dispose(&r);
    free(bare);
    free(url);
    free(loc);
    free(target);
}

static void test_fetch__digest_mismatch_fails_clearly(void **state)
{
    fixture *f = *state;
    test_httpd_route(f->srv, "/a.tgz", 200, payload, sizeof(payload), NULL);
    char *url = url_of(f, "/a.tgz");
    char *actual = digest_of("sha256", payload, sizeof(payload));
    const char *wrong = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    assert_co_fail_with(CO_EINVALID, co_fetch_download(url, wrong, f->dest, &f->opts, NULL));
    assert_contains(co_error_last(), "digest mismatch");
    assert_contains(co_error_last(), wrong);
    assert_contains(co_error_last(), actual);
    assert_contains(co_error_last(), url);
    assert_dir_holds_only(f, NULL);
    assert_int_equal(test_httpd_hits(f->srv, "/a.tgz"), 1); /* a mismatch is not retried */
    free(actual);
    free(url);
}

static void test_fetch__truncated_download_is_detected(void **state)
{
    fixture *f = *state;
    test_httpd_route_truncated(f->srv, "/t.tgz", payload, sizeof(payload), 10);
    char *url = url_of(f, "/t.tgz");
    char *digest = digest_of("sha256", payload, sizeof(payload));
    assert_co_fail_with(CO_EUNAVAILABLE, co_fetch_download(url, digest, f->dest, &f->opts, NULL));
    assert_contains(co_error_last(), "truncated after 10 bytes");
    assert_dir_holds_only(f, NULL);
    assert_int_equal(test_httpd_hits(f->srv, "/t.tgz"), 4); /* 1 + 3 retries */
    /* an existing good file is not touched by a failed download */
    co_test_write_file(f->dest, "old", 3);
    assert_co_fail_with(CO_EUNAVAILABLE, co_fetch_download(url, NULL, f->dest, &f->opts, NULL));
    char *old = co_test_read_file(f->dest, NULL);
    assert_string_equal(old, "old");
    assert_dir_holds_only(f, "artifact.tgz");
    free(old);
    free(digest);
    free(url);
}

static void test_fetch__transient_failures_are_retried(void **state)
{
    fixture *f = *state;
    test_httpd_route(f->srv, "/a.tgz", 200, payload, sizeof(payload), NULL);
    test_httpd_fail_next(f->srv, "/a.tgz", 2);
    char *url = url_of(f, "/a.tgz");
    assert_co_pass(co_fetch_download(url, NULL, f->dest, &f->opts, NULL));
    assert_int_equal(test_httpd_hits(f->srv, "/a.tgz"), 3);
    /* more failures than retries */
    test_httpd_fail_next(f->srv, "/a.tgz", 10);
    f->opts.retries = 1;
    assert_co_fail_with(CO_EUNAVAILABLE, co_fetch_download(url, NULL, f->dest, &f->opts, NULL));
    assert_contains(co_error_last(), "HTTP 503 Service Unavailable");
    assert_int_equal(test_httpd_hits(f->srv, "/a.tgz"), 5);
    f->opts.retries = -1;
    assert_co_fail_with(CO_EUNAVAILABLE, co_fetch_download(url, NULL, f->dest, &f->opts, NULL));
    assert_int_equal(test_httpd_hits(f->srv, "/a.tgz"), 6);
    free(url);
}

static void test_fetch__http_errors_map_to_codes(void **state)
{
    fixture *f = *state;
    test_httpd_route(f->srv, "/forbidden", 403, "no", 2, NULL);
    char *missing = url_of(f, "/missing");
    char *forbidden = url_of(f, "/forbidden");
    assert_co_fail_with(CO_ENOTFOUND, co_fetch_download(missing, NULL, f->dest, &f->opts, NULL));
    assert_contains(co_error_last(), "HTTP 404 Not Found");
    assert_co_fail_with(CO_EAUTH, co_fetch_download(forbidden, NULL, f->dest, &f->opts, NULL));
    assert_int_equal(test_httpd_hits(f->srv, "/forbidden"), 1);
    assert_dir_holds_only(f, NULL);
    free(missing);
    free(forbidden);
}

static void test_fetch__size_cap(void **state)
{
    fixture *f = *state;
    test_httpd_route(f->srv, "/big", 200, payload, sizeof(payload), NULL);
    char *url = url_of(f, "/big");
    f->opts.max_bytes = 16;
    assert_co_fail_with(CO_ETOOBIG, co_fetch_download(url, NULL, f->dest, &f->opts, NULL));
    assert_contains(co_error_last(), "larger than the limit of 16 bytes");
    assert_dir_holds_only(f, NULL);
    free(url);
}

static void test_fetch__bad_digests_and_urls(void **state)
{
    fixture *f = *state;
    assert_co_fail_with(CO_EUNSUPPORTED, co_fetch_digest_check("blake3:abcd"));
    assert_co_fail_with(CO_EINVALID, co_fetch_digest_check("sha256:ABC"));
    assert_co_fail_with(CO_EINVALID, co_fetch_digest_check("etag-value"));
    assert_co_fail_with(CO_EINVALID, co_fetch_digest_check(NULL));
    assert_co_fail_with(CO_EINVALID,
                        co_fetch_digest_check("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b"
                                              "934ca495991b7852b85"));
    assert_co_pass(co_fetch_digest_check(
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    assert_co_fail_with(CO_EINVALID,
                        co_fetch_download("file:///etc/passwd", NULL, f->dest, &f->opts, NULL));
    assert_contains(co_error_last(), "only http and https");
    assert_co_fail_with(CO_EINVALID, co_fetch_download("not a url", NULL, f->dest, &f->opts, NULL));
    char *url = url_of(f, "/x");
    assert_co_fail_with(CO_EUNSUPPORTED,
                        co_fetch_download(url, "blake3:00", f->dest, &f->opts, NULL));
    assert_contains(co_error_last(), "downloading");
    assert_int_equal(test_httpd_hits(f->srv, "/x"), 0);
    free(url);
    assert_dir_holds_only(f, NULL);
}

static void test_fetch__redirects_are_followed(void **state)
{
    fixture *f = *state;
    char *target = url_of(f, "/real.tgz");
    char *loc = co_xasprintf("Location: %s", target);
    test_httpd_route(f->srv, "/moved", 302, NULL, 0, loc);
    test_httpd_route(f->srv, "/real.tgz", 200, payload, sizeof(payload), NULL);
    char *url = url_of(f, "/moved");
    assert_co_pass(co_fetch_download(url, NULL, f->dest, &f->opts, NULL));
    assert_int_equal(test_httpd_hits(f->srv, "/real.tgz"), 1);
    /* a redirect loop ends */
    char *self = co_xasprintf("Location: %s", url);
    test_httpd_route(f->srv, "/moved", 302, NULL, 0, self);
    assert_co_fail_with(CO_ERROR, co_fetch_download(url, NULL, f->dest, &f->opts, NULL));
    assert_contains(co_error_last(), "more than 10 redirects");
    /* and never to another protocol */
    test_httpd_route(f->srv, "/moved", 302, NULL, 0, "Location: file:///etc/passwd");
    assert_int_not_equal(co_fetch_download(url, NULL, f->dest, &f->opts, NULL), 0);
    free(self);
    free(url);
    free(loc);
    free(target);
}

static void test_fetch__connection_refused_is_unavailable(void **state)
{
    fixture *f = *state;
    /* a server that stopped: its port refuses connections */
    test_httpd *gone = test_httpd_start();
    char *url = co_xasprintf("%s/x", test_httpd_url(gone));
    test_httpd_stop(gone);
    f->opts.retries = 1;
    assert_co_fail_with(CO_EUNAVAILABLE, co_fetch_download(url, NULL, f->dest, &f->opts, NULL));
    assert_dir_holds_only(f, NULL);
    free(url);
}

static void test_fetch__cancel_stops(void **state)
{
    fixture *f = *state;
    test_httpd_route(f->srv, "/a.tgz", 200, payload, sizeof(payload), NULL);
    char *url = url_of(f, "/a.tgz");
    volatile int stop = 1;
    f->opts.cancel = &stop;
    assert_co_fail_with(CO_ECANCELED, co_fetch_download(url, NULL, f->dest, &f->opts, NULL));
    assert_dir_holds_only(f, NULL);
    free(url);
}

static void test_fetch__proxy_from_environment(void **state)
{
    fixture *f = *state;
    /* the test server plays the proxy: it sees the absolute URL as the request target */
    test_httpd_route(f->srv, "http://artifacts.invalid/a.tgz", 200, payload, sizeof(payload), NULL);
    setenv("HTTP_PROXY", test_httpd_url(f->srv), 1); // NOLINT(concurrency-mt-unsafe)
    assert_co_pass(
        co_fetch_download("http://artifacts.invalid/a.tgz", NULL, f->dest, &f->opts, NULL));
    assert_int_equal(test_httpd_hits(f->srv, "http://artifacts.invalid/a.tgz"), 1);
    /* NO_PROXY exempts a host; then the name does not resolve */
    setenv("NO_PROXY", "artifacts.invalid", 1); // NOLINT(concurrency-mt-unsafe)
    f->opts.retries = -1;
    assert_co_fail_with(CO_EUNAVAILABLE, co_fetch_download("http://artifacts.invalid/a.tgz", NULL,
                                                           f->dest, &f->opts, NULL));
    unsetenv("NO_PROXY"); // NOLINT(concurrency-mt-unsafe)
    /* loopback never goes through a proxy, even a dead one */
    setenv("HTTP_PROXY", "http://127.0.0.1:1", 1); // NOLINT(concurrency-mt-unsafe)
    test_httpd_route(f->srv, "/direct", 200, payload, sizeof(payload), NULL);
    char *url = url_of(f, "/direct");
    assert_co_pass(co_fetch_download(url, NULL, f->dest, &f->opts, NULL));
    unsetenv("HTTP_PROXY"); // NOLINT(concurrency-mt-unsafe)
    free(url);
}

/* ---- HEAD -------------------------------------------------------------------------------- */

static void test_fetch__head_etag_default(void **state)
{
    fixture *f = *state;
    test_httpd_route(f->srv, "/repo.tgz", 200, payload, sizeof(payload), "ETag: \"abc123\"");
    char *url = url_of(f, "/repo.tgz");
    co_fetch_head_result r = {0};
    assert_co_pass(co_fetch_head(url, NULL, NULL, &f->opts, &r));
    assert_string_equal(r.url, url);
    assert_string_equal(r.digest, "\"abc123\"");
    assert_string_equal(r.revision, "\"abc123\"");
    assert_int_equal(test_httpd_hits_method(f->srv, "/repo.tgz", "HEAD"), 1);
    assert_int_equal(test_httpd_hits_method(f->srv, "/repo.tgz", "GET"), 0);
    co_fetch_head_result_dispose(&r);
    co_fetch_head_result_dispose(&r);
    free(url);
}

static void test_fetch__head_follows_redirects_until_digest(void **state)
{
    fixture *f = *state;
    char *b = url_of(f, "/b");
    char *artifact = url_of(f, "/store/v2.tgz");
    char *h1 = co_xasprintf("Location: %s", b);
    /* /a -> /b (no digest: followed); /b redirects to the artifact carrying the digest */
    test_httpd_route(f->srv, "/a", 302, NULL, 0, h1);
    char *h2 = co_xasprintf("Location: /store/v2.tgz\nx-artifact-digest: sha256:1\n"
                            "X-Artifact-Revision: v2");
    test_httpd_route(f->srv, "/b", 307, NULL, 0, h2);
    char *url = url_of(f, "/a");
    co_fetch_head_result r = {0};
    assert_co_pass(co_fetch_head(url, "X-Artifact-Digest", "x-artifact-revision", &f->opts, &r));
    assert_string_equal(r.url, artifact);
    assert_string_equal(r.digest, "sha256:1");
    assert_string_equal(r.revision, "v2");
    assert_int_equal(test_httpd_hits(f->srv, "/store/v2.tgz"), 0);
    co_fetch_head_result_dispose(&r);
    /* with the digest only at the end of the chain, the final URL is the artifact */
    test_httpd_route(f->srv, "/b", 302, NULL, 0, "Location: /store/v2.tgz");
    test_httpd_route(f->srv, "/store/v2.tgz", 200, NULL, 0, "ETag: W/\"x\"");
    assert_co_pass(co_fetch_head(url, NULL, NULL, &f->opts, &r));
    assert_string_equal(r.url, artifact);
    assert_string_equal(r.digest, "W/\"x\"");
    co_fetch_head_result_dispose(&r);
    free(url);
    free(h1);
    free(h2);
    free(b);
    free(artifact);
}

static void test_fetch__head_errors(void **state)
{
    fixture *f = *state;
    co_fetch_head_result r = {0};
    char *missing = url_of(f, "/missing");
    assert_co_fail_with(CO_ENOTFOUND, co_fetch_head(missing, NULL, NULL, &f->opts, &r));
    assert_string_equal(co_error_last(), "error calling source reference URL: 404 (Not Found)");
    test_httpd_route(f->srv, "/nodigest", 200, NULL, 0, "X-Revision: 1");
    char *nodigest = url_of(f, "/nodigest");
    assert_co_fail_with(CO_EINVALID, co_fetch_head(nodigest, NULL, NULL, &f->opts, &r));
    assert_string_equal(co_error_last(), "missing digest on source reference");
    test_httpd_route(f->srv, "/norev", 200, NULL, 0, "ETag: 1");
    char *norev = url_of(f, "/norev");
    assert_co_fail_with(CO_EINVALID, co_fetch_head(norev, NULL, "X-Revision", &f->opts, &r));
    assert_string_equal(co_error_last(), "missing revision on source reference");
    char *loop = url_of(f, "/loop");
    char *h = co_xasprintf("Location: %s", loop);
    test_httpd_route(f->srv, "/loop", 301, NULL, 0, h);
    assert_co_fail_with(CO_ERROR, co_fetch_head(loop, NULL, NULL, &f->opts, &r));
    assert_contains(co_error_last(), "more than 10 redirects");
    test_httpd_route(f->srv, "/flaky", 200, NULL, 0, "ETag: ok");
    test_httpd_fail_next(f->srv, "/flaky", 1);
    char *flaky = url_of(f, "/flaky");
    assert_co_pass(co_fetch_head(flaky, NULL, NULL, &f->opts, &r));
    assert_string_equal(r.digest, "ok");
    co_fetch_head_result_dispose(&r);
    assert_null(r.url);
    free(flaky);
    free(h);
    free(loop);
    free(norev);
    free(nodigest);
    free(missing);
}

/* ---- the network deny-list --------------------------------------------------------------- */

static void deny(const char *cidrs)
{
    assert_co_pass(co_net_deny_set(&cidrs, 1));
}

static void test_fetch__denied_address_is_never_contacted(void **state)
{
    fixture *f = *state;
    test_httpd *denied = test_httpd_start_at("127.0.0.2");
    test_httpd_route(denied, "/a.tgz", 200, payload, sizeof(payload), "ETag: \"x\"");
    test_httpd_route(f->srv, "/a.tgz", 200, payload, sizeof(payload), "ETag: \"x\"");
    char *bad = co_xasprintf("%s/a.tgz", test_httpd_url(denied));
    char *good = url_of(f, "/a.tgz");
    deny("127.0.0.2/32");
    assert_co_fail_with(CO_EAUTH, co_fetch_download(bad, NULL, f->dest, &f->opts, NULL));
    assert_contains(co_error_last(),
                    "connection to 127.0.0.2 refused: address in denied range 127.0.0.2/32");
    assert_contains(co_error_last(), bad);
    co_fetch_head_result h = {0};
    assert_co_fail_with(CO_EAUTH, co_fetch_head(bad, NULL, NULL, &f->opts, &h));
    assert_contains(co_error_last(), "address in denied range 127.0.0.2/32");
    /* a redirect hop to the denied address is refused the same way */
    char *loc = co_xasprintf("Location: %s", bad);
    test_httpd_route(f->srv, "/moved", 302, NULL, 0, loc);
    char *moved = url_of(f, "/moved");
    assert_co_fail_with(CO_EAUTH, co_fetch_download(moved, NULL, f->dest, &f->opts, NULL));
    assert_contains(co_error_last(), "connection to 127.0.0.2 refused");
    assert_int_equal(test_httpd_hits(f->srv, "/moved"), 1); /* refused, so never retried */
    /* 127.0.0.1 is not in the range */
    assert_co_pass(co_fetch_download(good, NULL, f->dest, &f->opts, NULL));
    assert_co_pass(co_fetch_head(good, NULL, NULL, &f->opts, &h));
    co_fetch_head_result_dispose(&h);
    /* the denied server saw nothing; once allowed, it sees exactly the one request asked for */
    assert_int_equal(test_httpd_connections(denied), 0);
    co_net_deny_clear();
    assert_co_pass(co_fetch_download(bad, NULL, f->dest, &f->opts, NULL));
    assert_int_equal(test_httpd_connections(denied), 1);
    assert_int_equal(test_httpd_hits(denied, "/a.tgz"), 1);
    test_httpd_stop(denied);
    free(moved);
    free(loc);
    free(good);
    free(bad);
}

static void test_fetch__denied_address_behind_a_proxy(void **state)
{
    fixture *f = *state;
    /* the test server plays the proxy, which would reach whatever it is asked for */
    test_httpd_route(f->srv, "http://169.254.169.254/latest", 200, payload, sizeof(payload), NULL);
    test_httpd_route(f->srv, "http://artifacts.invalid/a.tgz", 302, NULL, 0,
                     "Location: http://169.254.169.254/latest");
    setenv("HTTP_PROXY", test_httpd_url(f->srv), 1); // NOLINT(concurrency-mt-unsafe)
    deny("169.254.0.0/16");
    f->opts.retries = 2;
    assert_co_fail_with(CO_EAUTH, co_fetch_download("http://169.254.169.254/latest", NULL, f->dest,
                                                    &f->opts, NULL));
    assert_contains(co_error_last(),
                    "connection to 169.254.169.254 refused: address in denied range "
                    "169.254.0.0/16");
    assert_co_fail_with(CO_EAUTH, co_fetch_download("http://artifacts.invalid/a.tgz", NULL, f->dest,
                                                    &f->opts, NULL));
    assert_contains(co_error_last(), "address in denied range 169.254.0.0/16");
    co_fetch_head_result h = {0};
    assert_co_fail_with(
        CO_EAUTH, co_fetch_head("http://artifacts.invalid/a.tgz", "X-Digest", NULL, &f->opts, &h));
    unsetenv("HTTP_PROXY"); // NOLINT(concurrency-mt-unsafe)
    assert_int_equal(test_httpd_hits(f->srv, "http://artifacts.invalid/a.tgz"), 2);
    assert_int_equal(test_httpd_hits(f->srv, "http://169.254.169.254/latest"), 0);
    assert_dir_holds_only(f, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fetch__downloads_and_verifies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch__reports_content_type_and_final_url, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fetch__digest_mismatch_fails_clearly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch__truncated_download_is_detected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fetch__transient_failures_are_retried, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fetch__http_errors_map_to_codes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch__size_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch__bad_digests_and_urls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch__redirects_are_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch__connection_refused_is_unavailable, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fetch__cancel_stops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch__proxy_from_environment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch__head_etag_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch__head_follows_redirects_until_digest, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fetch__head_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch__denied_address_is_never_contacted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fetch__denied_address_behind_a_proxy, setup, teardown),
    };
    return cmocka_run_group_tests_name("fetch", tests, NULL, NULL);
}
