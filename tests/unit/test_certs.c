/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Certificates: what co_certs_create_ca() and co_certs_create_serving() produce (verification
 * against the CA for every name, key usage, validity, serials), errors for malformed PEM and bad
 * names, bundles, the validity periods checked against the clock given, what the openssl
 * command makes of our certificates and we of its, and the rotation rules of co_certs_plan()
 * walked through a CA's whole life on a fake clock; the `certs` command line writing its files
 * without following links planted in the output directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/stat.h>
#include <unistd.h>

#include "certs/certs.h"
#include "certs/certs_cli.h"
#include "certs/certs_plan.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "tests/support/test_support.h"

#define T0   ((time_t)1800000000) /* 2027-01-15 */
#define HOUR 3600LL
#define DAY  (24 * HOUR)

static const char *const dns[] = {"component-webhook", "component-webhook.co-system",
                                  "component-webhook.co-system.svc",
                                  "component-webhook.co-system.svc.cluster.local"};
static const char *const ips[] = {"127.0.0.1", "::1"};

static co_certs_pair make_ca(co_certs_key_type type, time_t now, long long validity)
{
    co_certs_request req = {.common_name = "component-webhook-ca",
                            .key_type = type,
                            .now = now,
                            .validity_s = validity,
                            .backdate_s = HOUR};
    co_certs_pair ca = {0};
    assert_co_pass(co_certs_create_ca(&ca, &req));
    return ca;
}

static co_certs_pair
make_serving(const co_certs_pair *ca, co_certs_key_type type, time_t now, long long validity)
{
    co_certs_request req = {.common_name = "component-webhook",
                            .dns_names = dns,
                            .ndns = 4,
                            .ip_addrs = ips,
                            .nips = 2,
                            .key_type = type,
                            .now = now,
                            .validity_s = validity,
                            .backdate_s = HOUR};
    co_certs_pair leaf = {0};
    assert_co_pass(co_certs_create_serving(&leaf, ca, &req));
    return leaf;
}

static void test_certs__ca_is_a_ca_with_the_asked_validity(void **state)
{
    (void)state;
    co_certs_pair ca = make_ca(CO_CERTS_ECDSA_P256, T0, 365 * DAY);
    co_certs_info i;
    assert_co_pass(co_certs_inspect(&i, ca.cert_pem, strlen(ca.cert_pem)));
    assert_true(i.is_ca);
    assert_false(i.server_auth);
    assert_int_equal(i.not_before, T0 - HOUR);
    assert_int_equal(i.not_after, T0 + 365 * DAY);
    assert_string_equal(i.subject, "CN=component-webhook-ca");
    assert_string_equal(i.issuer, i.subject);
    assert_co_pass(co_certs_check_pair(ca.cert_pem, ca.key_pem));
    assert_contains(ca.key_pem, "-----BEGIN PRIVATE KEY-----"); /* PKCS#8 */
    co_certs_pair_dispose(&ca);
}

static void test_certs__serving_verifies_for_every_name(void **state)
{
    (void)state;
    static const co_certs_key_type types[] = {CO_CERTS_ECDSA_P256, CO_CERTS_ECDSA_P384,
                                              CO_CERTS_RSA_2048};
    for (size_t t = 0; t < CO_ARRAY_SIZE(types); t++) {
        co_certs_pair ca = make_ca(types[t], T0, 365 * DAY);
        co_certs_pair leaf = make_serving(&ca, types[t], T0, 90 * DAY);
        for (size_t i = 0; i < CO_ARRAY_SIZE(dns); i++) {
            assert_co_pass(co_certs_verify(leaf.cert_pem, ca.cert_pem, dns[i], T0));
        }
        assert_co_pass(co_certs_verify(leaf.cert_pem, ca.cert_pem, "127.0.0.1", T0));
        assert_co_pass(co_certs_verify(leaf.cert_pem, ca.cert_pem, "::1", T0));
        assert_co_fail_with(CO_EINVALID,
                            co_certs_verify(leaf.cert_pem, ca.cert_pem, "other.example", T0));
        assert_contains(co_error_last(), "hostname mismatch");
        assert_co_fail_with(CO_EINVALID,
                            co_certs_verify(leaf.cert_pem, ca.cert_pem, "10.0.0.1", T0));
        /* not before the backdated start, not after the end */
        assert_co_fail_with(CO_EINVALID,
                            co_certs_verify(leaf.cert_pem, ca.cert_pem, NULL, T0 - 2 * HOUR));
        assert_contains(co_error_last(), "not yet valid");
        assert_co_fail_with(CO_EINVALID,
                            co_certs_verify(leaf.cert_pem, ca.cert_pem, NULL, T0 + 91 * DAY));
        assert_contains(co_error_last(), "expired");
        co_certs_info i;
        assert_co_pass(co_certs_inspect(&i, leaf.cert_pem, strlen(leaf.cert_pem)));
        assert_false(i.is_ca);
        assert_true(i.server_auth);
        assert_int_equal(i.not_before, T0 - HOUR);
        assert_int_equal(i.not_after, T0 + 90 * DAY);
        assert_string_equal(i.issuer, "CN=component-webhook-ca");
        assert_string_equal(i.sans, "DNS:component-webhook, DNS:component-webhook.co-system, "
                                    "DNS:component-webhook.co-system.svc, "
                                    "DNS:component-webhook.co-system.svc.cluster.local, "
                                    "IP Address:127.0.0.1, IP Address:::1");
        assert_co_pass(co_certs_check_pair(leaf.cert_pem, leaf.key_pem));
        /* a serving certificate cannot sign */
        co_certs_request req = {.common_name = "x",
                                .dns_names = dns,
                                .ndns = 1,
                                .now = T0,
                                .validity_s = DAY};
        co_certs_pair bad = {0};
        assert_co_fail_with(CO_EINVALID, co_certs_create_serving(&bad, &leaf, &req));
        assert_contains(co_error_last(), "not a CA");
        co_certs_pair_dispose(&leaf);
        co_certs_pair_dispose(&ca);
    }
}

static void test_certs__serving_never_outlives_its_ca(void **state)
{
    (void)state;
    co_certs_pair ca = make_ca(CO_CERTS_ECDSA_P256, T0, 30 * DAY);
    co_certs_pair leaf = make_serving(&ca, CO_CERTS_ECDSA_P256, T0 + 20 * DAY, 90 * DAY);
    co_certs_info i;
    assert_co_pass(co_certs_inspect(&i, leaf.cert_pem, strlen(leaf.cert_pem)));
    assert_int_equal(i.not_after, T0 + 30 * DAY);
    co_certs_pair_dispose(&leaf);
    co_certs_pair_dispose(&ca);
}

static void test_certs__serials_are_random(void **state)
{
    (void)state;
    co_certs_pair a = make_ca(CO_CERTS_ECDSA_P256, T0, DAY);
    co_certs_pair b = make_ca(CO_CERTS_ECDSA_P256, T0, DAY);
    co_certs_info ia, ib;
    assert_co_pass(co_certs_inspect(&ia, a.cert_pem, strlen(a.cert_pem)));
    assert_co_pass(co_certs_inspect(&ib, b.cert_pem, strlen(b.cert_pem)));
    assert_int_equal(strlen(ia.serial), 32); /* 128 bits */
    assert_string_not_equal(ia.serial, ib.serial);
    assert_string_not_equal(ia.sha256, ib.sha256);
    /* each CA verifies only what it signed */
    co_certs_pair leaf = make_serving(&a, CO_CERTS_ECDSA_P256, T0, DAY);
    assert_co_fail_with(CO_EINVALID, co_certs_verify(leaf.cert_pem, b.cert_pem, NULL, T0));
    assert_contains(co_error_last(), "unable to get local issuer certificate");
    co_certs_pair_dispose(&leaf);
    co_certs_pair_dispose(&a);
    co_certs_pair_dispose(&b);
}

static void test_certs__malformed_pem_is_named(void **state)
{
    (void)state;
    co_certs_info i;
    assert_co_fail_with(CO_EINVALID, co_certs_inspect(&i, "hello", 5));
    assert_string_equal(co_error_last(), "no PEM certificate found");
    const char *broken = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n"
                         "-----END CERTIFICATE-----\n";
    assert_co_fail_with(CO_EINVALID, co_certs_inspect(&i, broken, strlen(broken)));
    assert_contains(co_error_last(), "malformed PEM certificate: ");
    const char *unterminated = "-----BEGIN CERTIFICATE-----\nMIIB\n";
    assert_co_fail_with(CO_EINVALID, co_certs_inspect(&i, unterminated, strlen(unterminated)));
    assert_contains(co_error_last(), "malformed PEM certificate");
    co_certs_pair a = make_ca(CO_CERTS_ECDSA_P256, T0, DAY);
    co_certs_pair b = make_ca(CO_CERTS_ECDSA_P256, T0, DAY);
    assert_co_fail_with(CO_EINVALID, co_certs_check_pair(a.cert_pem, b.key_pem));
    assert_string_equal(co_error_last(), "the private key does not belong to the certificate");
    assert_co_fail_with(CO_EINVALID, co_certs_check_pair(a.cert_pem, "-----BEGIN PRIVATE KEY"));
    assert_contains(co_error_last(), "malformed PEM private key");
    /* An encrypted key is refused at once (no passphrase prompt on a terminal). */
    const char *encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
                            "MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAhocbJVqUZo5gICCAAw\n"
                            "DAYIKoZIhvcNAgkFADAdBglghkgBZQMEAQIEEAmFUvZ/PIYZwVvINFBr3/UEgZDP\n"
                            "xiJN0144Vy1fo+enX2NfpnOZbPbI7HF+l1Om1d9mrjuN0hrJEGG1k9sN2mb4qUA5\n"
                            "iXi64g4kRn5gcTTFgE80f2m6heAZEvHBReOzMKVEZOIOQXcBlrWJpKfzioUovoYY\n"
                            "y/x1hpf14qHSTCG8qqWQ/itldozQTm8govxOa84B+LG8ithHYvhV6+29FvTgU4E=\n"
                            "-----END ENCRYPTED PRIVATE KEY-----\n";
    assert_co_fail_with(CO_EINVALID, co_certs_check_pair(a.cert_pem, encrypted));
    assert_contains(co_error_last(), "malformed PEM private key");
    assert_co_fail_with(CO_EINVALID, co_certs_verify(a.cert_pem, "", NULL, T0));
    assert_contains(co_error_last(), "the CA bundle: no PEM certificate found");
    co_certs_pair_dispose(&a);
    co_certs_pair_dispose(&b);
}

static void test_certs__bad_requests_are_refused(void **state)
{
    (void)state;
    co_certs_pair ca = make_ca(CO_CERTS_ECDSA_P256, T0, DAY);
    const char *bad_dns[] = {"ok.example", "bad,DNS:evil.example"};
    co_certs_request req = {.common_name = "x",
                            .dns_names = bad_dns,
                            .ndns = 2,
                            .now = T0,
                            .validity_s = DAY};
    co_certs_pair leaf = {0};
    assert_co_fail_with(CO_EINVALID, co_certs_create_serving(&leaf, &ca, &req));
    assert_string_equal(co_error_last(),
                        "invalid DNS name \"bad,DNS:evil.example\" for a certificate");
    const char *bad_ip[] = {"300.1.1.1"};
    co_certs_request req2 = {.common_name = "x",
                             .ip_addrs = bad_ip,
                             .nips = 1,
                             .now = T0,
                             .validity_s = DAY};
    assert_co_fail_with(CO_EINVALID, co_certs_create_serving(&leaf, &ca, &req2));
    assert_contains(co_error_last(), "invalid IP address \"300.1.1.1\"");
    co_certs_request req3 = {.common_name = "x", .now = T0, .validity_s = DAY};
    assert_co_fail_with(CO_EINVALID, co_certs_create_serving(&leaf, &ca, &req3));
    assert_contains(co_error_last(), "at least one DNS name or IP");
    co_certs_request req4 = {.common_name = "x", .now = T0, .validity_s = 0};
    assert_co_fail_with(CO_EINVALID, co_certs_create_ca(&leaf, &req4));
    /* a CA that has expired signs nothing */
    co_certs_request req5 = {.common_name = "x",
                             .dns_names = dns,
                             .ndns = 1,
                             .now = T0 + 2 * DAY,
                             .validity_s = DAY};
    assert_co_fail_with(CO_EINVALID, co_certs_create_serving(&leaf, &ca, &req5));
    assert_contains(co_error_last(), "expired");
    co_certs_key_type kt;
    assert_co_fail_with(CO_EINVALID, co_certs_key_type_parse(&kt, "dsa"));
    assert_co_pass(co_certs_key_type_parse(&kt, "ecdsa-p384"));
    assert_int_equal(kt, CO_CERTS_ECDSA_P384);
    co_certs_pair_dispose(&ca);
}

static void test_certs__bundle_dedupes_and_drops_expired(void **state)
{
    (void)state;
    co_certs_pair a = make_ca(CO_CERTS_ECDSA_P256, T0, 10 * DAY);
    co_certs_pair b = make_ca(CO_CERTS_ECDSA_P256, T0, 20 * DAY);
    co_buf both = CO_BUF_INIT(CO_MIB);
    assert_co_pass(co_buf_puts(&both, a.cert_pem));
    assert_co_pass(co_buf_puts(&both, b.cert_pem));
    const char *parts[] = {b.cert_pem, co_buf_cstr(&both), "garbage"};
    co_buf out = CO_BUF_INIT(CO_MIB);
    assert_int_equal(co_certs_bundle(&out, parts, 3, T0), 2);
    assert_int_equal(co_certs_count(co_buf_cstr(&out), out.len), 2);
    /* b first: order of first appearance */
    assert_true(!strncmp(co_buf_cstr(&out), b.cert_pem, strlen(b.cert_pem)));
    co_buf_reset(&out);
    assert_int_equal(co_certs_bundle(&out, parts, 3, T0 + 15 * DAY), 1);
    assert_string_equal(co_buf_cstr(&out), b.cert_pem);
    co_buf_dispose(&out);
    co_buf_dispose(&both);
    co_certs_pair_dispose(&a);
    co_certs_pair_dispose(&b);
}

static void test_certs__verify_follows_the_given_clock(void **state)
{
    (void)state;
    /* 2001: long expired by the wall clock, valid at the time given */
    const time_t past = 978307200;
    co_certs_pair ca = make_ca(CO_CERTS_ECDSA_P256, past, 10 * DAY);
    co_certs_pair leaf = make_serving(&ca, CO_CERTS_ECDSA_P256, past, DAY);
    assert_co_pass(co_certs_verify(leaf.cert_pem, ca.cert_pem, "component-webhook", past));
    assert_co_fail_with(CO_EINVALID, co_certs_verify(leaf.cert_pem, ca.cert_pem, NULL, time(NULL)));
    assert_contains(co_error_last(), "expired");
    /* valid from notBefore on, up to (not including) notAfter */
    assert_co_pass(co_certs_verify(leaf.cert_pem, ca.cert_pem, NULL, past - HOUR));
    assert_co_fail_with(CO_EINVALID,
                        co_certs_verify(leaf.cert_pem, ca.cert_pem, NULL, past - HOUR - 1));
    assert_contains(co_error_last(), "certificate is not yet valid");
    assert_co_pass(co_certs_verify(leaf.cert_pem, ca.cert_pem, NULL, past + DAY - 1));
    assert_co_fail_with(CO_EINVALID, co_certs_verify(leaf.cert_pem, ca.cert_pem, NULL, past + DAY));
    assert_contains(co_error_last(), "certificate has expired");
    co_certs_pair_dispose(&leaf);
    co_certs_pair_dispose(&ca);

    /* The CA's own period counts too: a CA without backdating, a leaf backdated an hour. */
    co_certs_request req = {.common_name = "component-webhook-ca",
                            .now = T0,
                            .validity_s = 10 * DAY};
    assert_co_pass(co_certs_create_ca(&ca, &req));
    leaf = make_serving(&ca, CO_CERTS_ECDSA_P256, T0, DAY);
    assert_co_pass(co_certs_verify(leaf.cert_pem, ca.cert_pem, NULL, T0));
    assert_co_fail_with(CO_EINVALID,
                        co_certs_verify(leaf.cert_pem, ca.cert_pem, NULL, T0 - HOUR / 2));
    assert_contains(co_error_last(), "the CA certificate is not yet valid");
    co_certs_pair_dispose(&leaf);
    co_certs_pair_dispose(&ca);
}

static void test_certs__ipv6_and_wildcard_names(void **state)
{
    (void)state;
    co_certs_pair ca = make_ca(CO_CERTS_ECDSA_P256, T0, DAY);
    const char *names[] = {"*.example.test"};
    const char *addrs[] = {"2001:db8::1", "::ffff:192.0.2.1", "fe80::1", "192.0.2.7"};
    co_certs_request req = {.common_name = "x",
                            .dns_names = names,
                            .ndns = 1,
                            .ip_addrs = addrs,
                            .nips = 4,
                            .now = T0,
                            .validity_s = DAY};
    co_certs_pair leaf = {0};
    assert_co_pass(co_certs_create_serving(&leaf, &ca, &req));
    co_certs_info i;
    assert_co_pass(co_certs_inspect(&i, leaf.cert_pem, strlen(leaf.cert_pem)));
    assert_string_equal(i.sans, "DNS:*.example.test, IP Address:2001:db8::1, "
                                "IP Address:::ffff:192.0.2.1, IP Address:fe80::1, "
                                "IP Address:192.0.2.7");
    /* addresses compare as bytes, whatever their spelling */
    assert_co_pass(co_certs_verify(leaf.cert_pem, ca.cert_pem, "2001:0db8:0:0:0:0:0:1", T0));
    assert_co_pass(co_certs_verify(leaf.cert_pem, ca.cert_pem, "192.0.2.7", T0));
    assert_co_fail_with(CO_EINVALID,
                        co_certs_verify(leaf.cert_pem, ca.cert_pem, "2001:db8::2", T0));
    assert_contains(co_error_last(), "IP address mismatch");
    /* a wildcard covers one label */
    assert_co_pass(co_certs_verify(leaf.cert_pem, ca.cert_pem, "a.example.test", T0));
    assert_co_fail_with(CO_EINVALID,
                        co_certs_verify(leaf.cert_pem, ca.cert_pem, "b.a.example.test", T0));
    assert_contains(co_error_last(), "hostname mismatch");
    co_certs_pair_dispose(&leaf);
    const char *bad[] = {"2001:db8:::1"};
    req.ip_addrs = bad;
    req.nips = 1;
    assert_co_fail_with(CO_EINVALID, co_certs_create_serving(&leaf, &ca, &req));
    assert_string_equal(co_error_last(), "invalid IP address \"2001:db8:::1\" for a certificate");
    co_certs_pair_dispose(&ca);
}

static void test_certs__pem_texts_are_counted(void **state)
{
    (void)state;
    co_certs_pair a = make_ca(CO_CERTS_ECDSA_P256, T0, DAY);
    co_certs_pair b = make_ca(CO_CERTS_RSA_2048, T0, DAY);
    /* text around and between the blocks, and blocks of other kinds, are skipped */
    char *text = co_xasprintf("a bundle\n%s\n%s%s", a.cert_pem, a.key_pem, b.cert_pem);
    assert_int_equal(co_certs_count(text, strlen(text)), 2);
    co_certs_info i;
    assert_co_pass(co_certs_inspect(&i, text, strlen(text)));
    co_certs_info ia;
    assert_co_pass(co_certs_inspect(&ia, a.cert_pem, strlen(a.cert_pem)));
    assert_string_equal(i.sha256, ia.sha256);
    /* the certificate and key of a combined file belong together */
    assert_co_pass(co_certs_check_pair(text, text));
    /* one broken block spoils the count */
    char *broken = co_xasprintf("%s-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                                a.cert_pem);
    assert_co_fail_with(CO_EINVALID, co_certs_count(broken, strlen(broken)));
    assert_contains(co_error_last(), "malformed PEM certificate: ");
    /* a length that ends inside the second block */
    char *two = co_xasprintf("%s%s", a.cert_pem, b.cert_pem);
    assert_int_equal(co_certs_count(two, strlen(two)), 2);
    assert_co_fail_with(CO_EINVALID, co_certs_count(two, strlen(a.cert_pem) + 40));
    assert_string_equal(co_error_last(), "malformed PEM certificate: no END line");
    assert_int_equal(co_certs_count(two, strlen(a.cert_pem)), 1);
    free(two);
    /* a bundle larger than its buffer */
    const char *parts[] = {a.cert_pem, b.cert_pem};
    co_buf small = CO_BUF_INIT(strlen(a.cert_pem) + 10);
    assert_co_fail_with(CO_ETOOBIG, co_certs_bundle(&small, parts, 2, T0));
    co_buf_dispose(&small);
    free(broken);
    free(text);
    co_certs_pair_dispose(&a);
    co_certs_pair_dispose(&b);
}

/* --- cross-checks with the openssl command ---------------------------------------------------- */

/* The standard output of the shell command @p cmd (free with free()); fails the test unless it
 * exits with status 0. */
static char *sh(const char *cmd)
{
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    co_buf out = CO_BUF_INIT(CO_MIB);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        assert_co_pass(co_buf_put(&out, chunk, n));
    }
    int status = pclose(f);
    if (status != 0) {
        fail_msg("%s: exit status %d: %s", cmd, status, co_buf_cstr(&out));
    }
    return co_buf_take(&out, NULL);
}

/* Runs `openssl ARGS` in @p dir and returns its output with the trailing newline removed. */
static char *openssl(const char *dir, const char *args)
{
    char *cmd = co_xasprintf("cd '%s' && openssl %s 2>&1", dir, args);
    char *out = sh(cmd);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '\n') {
        out[--n] = '\0';
    }
    free(cmd);
    return out;
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char *path = co_xasprintf("%s/%s", dir, name);
    co_test_write_file(path, text, strlen(text));
    free(path);
}

/* Fails unless `openssl @p args` in @p dir prints @p want (both freed here). */
static void assert_openssl_prints(const char *dir, char *args, char *want)
{
    char *out = openssl(dir, args);
    assert_string_equal(out, want);
    free(out);
    free(args);
    free(want);
}

/* Checks the serial, subject, fingerprint and key of @p p (written as NAME.crt/NAME.key) the way
 * the openssl command reads them. */
static void
assert_openssl_reads_like_inspect(const char *dir, const char *name, const co_certs_pair *p)
{
    co_certs_info i;
    assert_co_pass(co_certs_inspect(&i, p->cert_pem, strlen(p->cert_pem)));
    assert_openssl_prints(dir, co_xasprintf("x509 -in %s.crt -noout -serial", name),
                          co_xasprintf("serial=%s", i.serial));
    assert_openssl_prints(dir,
                          co_xasprintf("x509 -in %s.crt -noout -subject -nameopt RFC2253", name),
                          co_xasprintf("subject=%s", i.subject));
    assert_openssl_prints(dir,
                          co_xasprintf("x509 -in %s.crt -noout -fingerprint -sha256 | tr -d : | "
                                       "tr A-F a-f",
                                       name),
                          co_xasprintf("sha256 fingerprint=%s", i.sha256));
    /* the key's public half is the certificate's */
    char *args = co_xasprintf("pkey -in %s.key -pubout", name);
    assert_openssl_prints(dir, co_xasprintf("x509 -in %s.crt -noout -pubkey", name),
                          openssl(dir, args));
    free(args);
}

static void test_certs__openssl_accepts_what_is_made(void **state)
{
    (void)state;
    static const struct {
        co_certs_key_type type;
        const char *key_text; /* in `openssl pkey -text` */
        const char *sig;      /* signature algorithm */
        const char *usage;    /* keyUsage of the serving certificate */
    } kinds[] = {
        {CO_CERTS_ECDSA_P256, "NIST CURVE: P-256", "ecdsa-with-SHA256", "Digital Signature\n"},
        {CO_CERTS_ECDSA_P384, "NIST CURVE: P-384", "ecdsa-with-SHA256", "Digital Signature\n"},
        {CO_CERTS_RSA_2048, "Private-Key: (2048 bit", "sha256WithRSAEncryption",
         "Digital Signature, Key Encipherment\n"},
    };
    char *dir = co_test_tmpdir();
    for (size_t k = 0; k < CO_ARRAY_SIZE(kinds); k++) {
        co_certs_pair ca = make_ca(kinds[k].type, T0, 365 * DAY);
        co_certs_pair leaf = make_serving(&ca, kinds[k].type, T0, 90 * DAY);
        write_text(dir, "ca.crt", ca.cert_pem);
        write_text(dir, "ca.key", ca.key_pem);
        write_text(dir, "leaf.crt", leaf.cert_pem);
        write_text(dir, "leaf.key", leaf.key_pem);

        /* the chain, the purpose and the names, at T0 */
        assert_openssl_prints(dir,
                              co_xasprintf("verify -attime %lld -purpose sslserver "
                                           "-verify_hostname component-webhook.co-system.svc "
                                           "-CAfile ca.crt leaf.crt",
                                           (long long)T0),
                              co_xstrdup("leaf.crt: OK"));
        assert_openssl_prints(dir,
                              co_xasprintf("verify -attime %lld -verify_ip ::1 -CAfile ca.crt "
                                           "leaf.crt",
                                           (long long)T0),
                              co_xstrdup("leaf.crt: OK"));

        /* the extensions */
        char *out = openssl(dir, "x509 -in ca.crt -noout -text");
        assert_contains(out, "Version: 3 (0x2)");
        assert_contains(out, kinds[k].sig);
        assert_contains(out, "X509v3 Basic Constraints: critical\n                CA:TRUE, "
                             "pathlen:0\n");
        assert_contains(out, "X509v3 Key Usage: critical\n                Certificate Sign, "
                             "CRL Sign\n");
        assert_contains(out, "X509v3 Subject Key Identifier:");
        free(out);
        out = openssl(dir, "x509 -in leaf.crt -noout -text");
        assert_contains(out, kinds[k].sig);
        assert_contains(out, "X509v3 Basic Constraints: critical\n                CA:FALSE\n");
        char *usage =
            co_xasprintf("X509v3 Key Usage: critical\n                %s", kinds[k].usage);
        assert_contains(out, usage);
        free(usage);
        assert_contains(out, "X509v3 Extended Key Usage: \n                TLS Web Server "
                             "Authentication\n");
        assert_contains(out, "DNS:component-webhook, DNS:component-webhook.co-system, "
                             "DNS:component-webhook.co-system.svc, "
                             "DNS:component-webhook.co-system.svc.cluster.local, "
                             "IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1\n");
        free(out);
        /* the authority key identifier is the CA's subject key identifier, and that is SHA-1
         * of the public key bits (RFC 5280 method 1, OpenSSL's "hash") */
        char *ski = openssl(dir, "x509 -in ca.crt -noout -ext subjectKeyIdentifier | tail -n 1");
        char *aki =
            openssl(dir, "x509 -in leaf.crt -noout -ext authorityKeyIdentifier | tail -n 1");
        assert_contains(aki, ski + strspn(ski, " "));
        char *hash = openssl(dir, "x509 -in ca.crt -noout -pubkey | openssl asn1parse -noout "
                                  "-strparse \"$(openssl x509 -in ca.crt -noout -pubkey | "
                                  "openssl asn1parse | awk -F: '/BIT STRING/ {print $1 + 0}')\" "
                                  "-out /dev/stdout | openssl sha1 -r | tr a-f A-F");
        hash[40] = '\0';
        char *colons = co_xmalloc(60);
        for (size_t b = 0; b < 20; b++) {
            snprintf(colons + 3 * b, 4, "%.2s%s", hash + 2 * b, b < 19 ? ":" : "");
        }
        assert_string_equal(ski + strspn(ski, " "), colons);
        free(colons);
        free(hash);
        free(aki);
        free(ski);

        /* unencrypted PKCS#8 keys of the kind asked for */
        out = openssl(dir, "pkey -in leaf.key -noout -text");
        assert_contains(out, kinds[k].key_text);
        free(out);
        assert_openssl_reads_like_inspect(dir, "ca", &ca);
        assert_openssl_reads_like_inspect(dir, "leaf", &leaf);
        co_certs_pair_dispose(&leaf);
        co_certs_pair_dispose(&ca);
    }
    co_test_rmtree(dir);
    free(dir);
}

static void test_certs__reads_what_openssl_makes(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    /* a name that needs escaping, a serial with a leading zero digit, all kinds of SANs */
    char *out = openssl(dir, "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                             "-keyout o.key -out o.crt -days 2 -set_serial 0x0A0B0C "
                             "-subj '/O=Acme, Inc./CN=host.example' "
                             "-addext 'subjectAltName=DNS:host.example,email:a@example.test,"
                             "IP:10.0.0.1,IP:2001:db8::1' -addext extendedKeyUsage=serverAuth");
    free(out);
    char *cert_path = co_xasprintf("%s/o.crt", dir);
    char *key_path = co_xasprintf("%s/o.key", dir);
    char *cert = co_test_read_file(cert_path, NULL);
    char *key = co_test_read_file(key_path, NULL);
    assert_non_null(cert);
    assert_non_null(key);
    co_certs_info i;
    assert_co_pass(co_certs_inspect(&i, cert, strlen(cert)));
    assert_string_equal(i.serial, "0A0B0C");
    assert_string_equal(i.subject, "CN=host.example,O=Acme\\, Inc.");
    assert_string_equal(i.issuer, i.subject);
    assert_string_equal(i.sans, "DNS:host.example, IP Address:10.0.0.1, IP Address:2001:db8::1");
    assert_true(i.server_auth);
    assert_true(i.not_after - i.not_before == 2 * DAY);
    co_certs_pair p = {.cert_pem = cert, .key_pem = key};
    assert_openssl_reads_like_inspect(dir, "o", &p);
    assert_co_pass(co_certs_check_pair(cert, key));
    /* the same key in its traditional (SEC 1) form */
    char *sec1 = openssl(dir, "pkey -in o.key -traditional");
    assert_contains(sec1, "-----BEGIN EC PRIVATE KEY-----");
    assert_co_pass(co_certs_check_pair(cert, sec1));
    /* self-signed, it verifies against itself while valid */
    assert_co_pass(co_certs_verify(cert, cert, "host.example", i.not_before + DAY));
    assert_co_pass(co_certs_verify(cert, cert, "10.0.0.1", i.not_before + DAY));
    assert_co_fail_with(CO_EINVALID, co_certs_verify(cert, cert, NULL, i.not_after + 1));
    assert_contains(co_error_last(), "expired");
    free(sec1);
    free(cert_path);
    free(key_path);
    free(cert);
    free(key);
    co_test_rmtree(dir);
    free(dir);
}

/* --- the rotation rules ---------------------------------------------------------------------- */

static const co_certs_config cfg = {
    .ca_name = "component-webhook-ca",
    .common_name = "component-webhook",
    .dns_names = dns,
    .ndns = 4,
    .ip_addrs = ips,
    .nips = 1,
    .key_type = CO_CERTS_ECDSA_P256,
    .ca_validity_s = 300 * DAY,
    .cert_validity_s = 30 * DAY,
    .backdate_s = 0,
    .settle_s = 60,
};

/* Plans at @p now; the Secret becomes the outcome; returns the change bits. */
static unsigned step(co_certs_data *secret, const co_certs_published *pub, time_t now)
{
    co_certs_outcome o;
    assert_co_pass(co_certs_plan(&o, secret, &cfg, pub, now));
    co_certs_data_dispose(secret);
    *secret = o.next;
    memset(&o.next, 0, sizeof(o.next));
    unsigned changes = o.changes;
    co_certs_outcome_dispose(&o);
    return changes;
}

/* Publishes the current bundle at @p now into @p pub (hash kept in @p hash). */
static void publish(co_certs_published *pub, char hash[65], const co_certs_data *d, time_t now)
{
    char *bundle = NULL;
    co_certs_data_bundle(&bundle, d, now);
    co_certs_sha256_hex(hash, bundle);
    free(bundle);
    pub->bundle_sha256 = hash;
    pub->since = now;
}

static void assert_serves(const co_certs_data *d, time_t now)
{
    char *bundle = NULL;
    assert_true(co_certs_data_bundle(&bundle, d, now) >= 1);
    assert_co_pass(co_certs_verify(d->tls_crt, bundle, "component-webhook.co-system.svc", now));
    assert_co_pass(co_certs_check_pair(d->tls_crt, d->tls_key));
    free(bundle);
}

static void test_certs__plan_walks_a_ca_lifetime(void **state)
{
    (void)state;
    co_certs_data s = {0};
    co_certs_published pub = {0};
    char hash[65];

    /* No Secret: a CA and a serving certificate. */
    assert_int_equal(step(&s, &pub, T0), CO_CERTS_NEW_CA | CO_CERTS_NEW_SERVING);
    assert_serves(&s, T0);
    assert_null(s.ca_previous);
    publish(&pub, hash, &s, T0);
    char *first_ca = co_xstrdup(s.ca_crt);

    /* Nothing to do while young. */
    assert_int_equal(step(&s, &pub, T0 + DAY), 0);

    /* The serving certificate rotates at two thirds of 30 days, signed by the same CA: no
     * need to wait for publication (the bundle did not change). */
    char *leaf1 = co_xstrdup(s.tls_crt);
    assert_int_equal(step(&s, &pub, T0 + 20 * DAY + 1), CO_CERTS_ROTATED_SERVING);
    assert_string_not_equal(s.tls_crt, leaf1);
    assert_serves(&s, T0 + 20 * DAY + 1);
    free(leaf1);

    /* At two thirds of 300 days the CA rotates; the old one stays in the bundle and the
     * serving certificate it signed keeps being served until the new bundle has settled. */
    time_t r = T0 + 200 * DAY + 1;
    /* Day by day until then, the serving certificate rotates every 20 days and only so. */
    int rotations = 0;
    for (time_t t = T0 + 21 * DAY; t < T0 + 200 * DAY; t += DAY) {
        unsigned c = step(&s, &pub, t);
        if (c != 0 && c != CO_CERTS_ROTATED_SERVING) {
            fail_msg("day %lld: changes %u", (long long)((t - T0) / DAY), c);
        }
        rotations += c != 0;
        assert_serves(&s, t);
    }
    assert_int_equal(rotations, 8);
    char *leaf2 = co_xstrdup(s.tls_crt);
    unsigned ch = step(&s, &pub, r);
    assert_true(ch & CO_CERTS_ROTATED_CA);
    assert_true(ch & CO_CERTS_WAITING);
    assert_false(ch & (CO_CERTS_ROTATED_SERVING | CO_CERTS_NEW_SERVING));
    assert_string_equal(s.tls_crt, leaf2);
    assert_string_equal(s.ca_previous, first_ca);
    assert_string_not_equal(s.ca_crt, first_ca);
    assert_serves(&s, r);
    /* published, not yet settled: still waiting */
    publish(&pub, hash, &s, r + 10);
    assert_int_equal(step(&s, &pub, r + 30), CO_CERTS_WAITING);
    /* settled: re-issued by the new CA, which alone verifies it */
    assert_int_equal(step(&s, &pub, r + 71), CO_CERTS_ROTATED_SERVING);
    assert_co_pass(co_certs_verify(s.tls_crt, s.ca_crt, NULL, r + 71));
    assert_co_fail_with(CO_EINVALID, co_certs_verify(s.tls_crt, first_ca, NULL, r + 71));
    free(leaf2);

    /* The old CA leaves the bundle when it expires. */
    assert_int_equal(step(&s, &pub, T0 + 300 * DAY + 1) & CO_CERTS_DROPPED_CA, CO_CERTS_DROPPED_CA);
    assert_null(s.ca_previous);
    free(first_ca);
    co_certs_data_dispose(&s);
}

static void test_certs__plan_repairs_what_is_broken(void **state)
{
    (void)state;
    co_certs_data s = {0};
    co_certs_published pub = {0};
    char hash[65];
    step(&s, &pub, T0);
    publish(&pub, hash, &s, T0);
    char *ca = co_xstrdup(s.ca_crt);

    /* A serving key that does not match: replaced at once, by the same CA. */
    free(s.tls_key);
    co_certs_pair other = make_ca(CO_CERTS_ECDSA_P256, T0, DAY);
    s.tls_key = co_xstrdup(other.key_pem);
    assert_int_equal(step(&s, &pub, T0 + 1), CO_CERTS_NEW_SERVING);
    assert_string_equal(s.ca_crt, ca);
    assert_serves(&s, T0 + 1);

    /* A wanted name added to the configuration: replaced. */
    co_certs_config more = cfg;
    more.nips = 2;
    co_certs_outcome o;
    assert_co_pass(co_certs_plan(&o, &s, &more, &pub, T0 + 2));
    assert_int_equal(o.changes, CO_CERTS_NEW_SERVING);
    co_certs_info i;
    assert_co_pass(co_certs_inspect(&i, o.next.tls_crt, strlen(o.next.tls_crt)));
    assert_contains(i.sans, "IP Address:::1");
    co_certs_outcome_dispose(&o);

    /* A CA without its key: a new CA (nothing usable to keep), and a new serving certificate
     * since the old one no longer verifies against anything trusted... except the old CA,
     * which is still valid and stays in the bundle. */
    free(s.ca_key);
    s.ca_key = NULL;
    unsigned ch = step(&s, &pub, T0 + 3);
    assert_true(ch & CO_CERTS_NEW_CA);
    assert_string_equal(s.ca_previous, ca);
    assert_serves(&s, T0 + 3);

    co_certs_pair_dispose(&other);
    free(ca);
    co_certs_data_dispose(&s);
}

static void test_certs__next_event_is_the_earliest_rule(void **state)
{
    (void)state;
    co_certs_data s = {0};
    co_certs_published pub = {0};
    step(&s, &pub, T0);
    /* serving: 30 days from T0 (no backdate) -> two thirds at T0 + 20 days */
    assert_int_equal(co_certs_next_event(&s), T0 + 20 * DAY);
    co_certs_data empty = {0};
    assert_int_equal(co_certs_next_event(&empty), 0);
    co_certs_data_dispose(&s);
}

/* The `certs` command line once wrote through the fixed name ".<file>.tmp": a link planted
 * there made it write the new CA key wherever the link pointed. */
static void test_certs__cli_does_not_follow_planted_links(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    char *out = co_xasprintf("%s/out", dir);
    assert_int_equal(mkdir(out, 0700), 0);
    char *victim = co_xasprintf("%s/victim", dir);
    co_test_write_file(victim, "precious\n", 9);
    struct stat st;
    assert_int_equal(chmod(victim, 0640), 0);
    const char *names[] = {".ca.key.tmp", ".ca.crt.tmp", "ca.key"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(names); i++) {
        char *link = co_xasprintf("%s/%s", out, names[i]);
        assert_int_equal(symlink(victim, link), 0);
        free(link);
    }
    char a0[] = "certs", a1[] = "create-ca", a2[] = "--out-dir";
    char *argv[] = {a0, a1, a2, out, NULL};
    assert_int_equal(co_certs_cli(4, argv), 0);
    /* the file the links point at is untouched */
    char *text = co_test_read_file(victim, NULL);
    assert_string_equal(text, "precious\n");
    free(text);
    assert_int_equal(lstat(victim, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    /* the planted temporary names are left alone, the key replaced the link at its own name */
    char *tmp_link = co_xasprintf("%s/.ca.key.tmp", out);
    assert_int_equal(lstat(tmp_link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    free(tmp_link);
    char *key = co_xasprintf("%s/ca.key", out);
    assert_int_equal(lstat(key, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    text = co_test_read_file(key, NULL);
    assert_non_null(strstr(text, "PRIVATE KEY"));
    free(text);
    free(key);
    char *crt = co_xasprintf("%s/ca.crt", out);
    assert_int_equal(lstat(crt, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0644);
    free(crt);
    co_test_rmtree(dir);
    free(victim);
    free(out);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_certs__ca_is_a_ca_with_the_asked_validity),
        cmocka_unit_test(test_certs__serving_verifies_for_every_name),
        cmocka_unit_test(test_certs__serving_never_outlives_its_ca),
        cmocka_unit_test(test_certs__serials_are_random),
        cmocka_unit_test(test_certs__malformed_pem_is_named),
        cmocka_unit_test(test_certs__bad_requests_are_refused),
        cmocka_unit_test(test_certs__bundle_dedupes_and_drops_expired),
        cmocka_unit_test(test_certs__verify_follows_the_given_clock),
        cmocka_unit_test(test_certs__ipv6_and_wildcard_names),
        cmocka_unit_test(test_certs__pem_texts_are_counted),
        cmocka_unit_test(test_certs__openssl_accepts_what_is_made),
        cmocka_unit_test(test_certs__reads_what_openssl_makes),
        cmocka_unit_test(test_certs__plan_walks_a_ca_lifetime),
        cmocka_unit_test(test_certs__plan_repairs_what_is_broken),
        cmocka_unit_test(test_certs__next_event_is_the_earliest_rule),
        cmocka_unit_test(test_certs__cli_does_not_follow_planted_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
