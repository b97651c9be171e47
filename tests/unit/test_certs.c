/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Certificates: what co_certs_create_ca() and co_certs_create_serving() produce (verification
 * against the CA with OpenSSL for every name, key usage, validity, serials), errors for
 * malformed PEM and bad names, bundles, and the rotation rules of co_certs_plan() walked
 * through a CA's whole life on a fake clock.
 */
#include <string.h>
#include <time.h>

#include "certs/certs.h"
#include "certs/certs_plan.h"
#include "co/buf.h"
#include "co/caps.h"
#include "co/error.h"
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
        cmocka_unit_test(test_certs__plan_walks_a_ca_lifetime),
        cmocka_unit_test(test_certs__plan_repairs_what_is_broken),
        cmocka_unit_test(test_certs__next_event_is_the_earliest_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
