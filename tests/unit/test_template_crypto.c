/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for sprig's crypto functions (sprig_crypto.c): certificates checked with OpenSSL,
 * AES round trips and failures, bcrypt checked with libxcrypt, derivePassword's shape and
 * secrets kept out of error messages. Go compares the same functions in
 * test_template_oracle (exact results and errors) and test_template_crypto_go.sh (random
 * results). */
#include <crypt.h>
#include <json-c/json.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/render/template.h"
#include "tests/support/test_support.h"

static co_template_funcs *funcs;

static int setup(void **state)
{
    (void)state;
    co_template_funcs_new(&funcs, CO_TEMPLATE_FUNCS_SPRIG);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    co_template_funcs_free(funcs);
    return 0;
}

/* Renders @text with JSON @data; the output (free) or NULL with the error in *err (free). */
static char *render(const char *text, const char *data, char **err)
{
    co_template_set *set;
    co_template_set_new(&set, funcs, NULL);
    int rc = co_template_set_parse(set, "t", text, strlen(text));
    char *out = NULL;
    if (rc == 0) {
        struct json_object *j = data ? json_tokener_parse(data) : NULL;
        rc = co_template_render(set, "t", j, CO_TEMPLATE_NUMBERS_FLOAT64, NULL, &out, NULL);
        json_object_put(j);
    }
    *err = rc == 0 ? NULL : strdup(co_error_last());
    co_template_set_free(set);
    return out;
}

static char *render_ok(const char *text, const char *data)
{
    char *err = NULL;
    char *out = render(text, data, &err);
    if (!out) {
        fail_msg("render failed: %s", err);
    }
    free(err);
    return out;
}

static char *render_err(const char *text, const char *data)
{
    char *err = NULL;
    char *out = render(text, data, &err);
    if (out) {
        fail_msg("render succeeded: %s", out);
    }
    return err;
}

/* The n-th part of @s split at "|" (a new string). */
static char *part(const char *s, int n)
{
    for (int i = 0; i < n; i++) {
        s = strchr(s, '|');
        assert_non_null(s);
        s++;
    }
    const char *e = strchr(s, '|');
    return strndup(s, e ? (size_t)(e - s) : strlen(s));
}

static X509 *cert_of(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *c = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(c);
    return c;
}

static EVP_PKEY *key_of(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(k);
    return k;
}

static void test_template_crypto__signed_cert_verifies_with_its_ca(void **state)
{
    (void)state;
    char *out = render_ok("{{ $ca := genCA \"test ca\" 365 }}{{ $c := genSignedCert \"leaf\" "
                          "(list \"10.0.0.1\" \"2001:db8::5\") (list \"a.example\") 30 $ca }}"
                          "{{ $ca.Cert }}|{{ $ca.Key }}|{{ $c.Cert }}|{{ $c.Key }}",
                          NULL);
    char *ca_pem = part(out, 0);
    char *ca_key_pem = part(out, 1);
    char *leaf_pem = part(out, 2);
    char *leaf_key_pem = part(out, 3);
    assert_non_null(strstr(ca_key_pem, "-----BEGIN RSA PRIVATE KEY-----"));
    X509 *ca = cert_of(ca_pem);
    X509 *leaf = cert_of(leaf_pem);
    EVP_PKEY *ca_key = key_of(ca_key_pem);
    EVP_PKEY *leaf_key = key_of(leaf_key_pem);
    assert_int_equal(X509_check_private_key(ca, ca_key), 1);
    assert_int_equal(X509_check_private_key(leaf, leaf_key), 1);
    assert_int_equal(EVP_PKEY_get_bits(leaf_key), 2048);

    X509_STORE *store = X509_STORE_new();
    X509_STORE_add_cert(store, ca);
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, leaf, NULL);
    assert_int_equal(X509_verify_cert(ctx), 1);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);

    assert_int_equal(X509_check_ca(ca), 1);
    assert_int_equal(X509_check_ca(leaf), 0);
    assert_int_equal(X509_check_host(leaf, "a.example", 0, 0, NULL), 1);
    assert_int_equal(X509_check_ip_asc(leaf, "10.0.0.1", 0), 1);
    assert_int_equal(X509_check_ip_asc(leaf, "2001:db8::5", 0), 1);
    char cn[64] = "";
    X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn, sizeof(cn));
    assert_string_equal(cn, "leaf");
    int days = 0;
    int secs = 0;
    assert_int_equal(
        ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(leaf), X509_get0_notAfter(leaf)), 1);
    assert_int_equal(days, 30);
    assert_int_equal(secs, 0);
    /* the extended key usages sprig sets */
    uint32_t xku = X509_get_extended_key_usage(leaf);
    assert_true((xku & XKU_SSL_SERVER) && (xku & XKU_SSL_CLIENT));

    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(leaf_key);
    X509_free(ca);
    X509_free(leaf);
    free(ca_pem);
    free(ca_key_pem);
    free(leaf_pem);
    free(leaf_key_pem);
    free(out);
}

static void test_template_crypto__keys_are_written_as_go_writes_them(void **state)
{
    (void)state;
    char *out = render_ok("{{ $k := genPrivateKey \"ecdsa\" }}{{ $k }}|{{ $e := genPrivateKey "
                          "\"ed25519\" }}{{ $e }}|{{ (genCAWithKey \"c\" 1 $k).Key }}|"
                          "{{ (genSelfSignedCertWithKey \"s\" nil nil 1 $e).Key }}",
                          NULL);
    char *ec = part(out, 0);
    char *ed = part(out, 1);
    char *ec_again = part(out, 2);
    char *ed_again = part(out, 3);
    assert_true(strncmp(ec, "-----BEGIN EC PRIVATE KEY-----\n", 31) == 0);
    assert_true(strncmp(ed, "-----BEGIN PRIVATE KEY-----\n", 28) == 0);
    /* the WithKey forms return the key they were given, re-encoded identically */
    assert_string_equal(ec_again, ec);
    assert_string_equal(ed_again, ed);
    EVP_PKEY *k = key_of(ec);
    assert_true(EVP_PKEY_is_a(k, "EC"));
    assert_int_equal(EVP_PKEY_get_bits(k), 256);
    EVP_PKEY_free(k);
    free(ec);
    free(ed);
    free(ec_again);
    free(ed_again);
    free(out);
}

static void test_template_crypto__aes_round_trips_with_fresh_ivs(void **state)
{
    (void)state;
    char *out = render_ok("{{ $a := encryptAES .pw .text }}{{ $b := encryptAES .pw .text }}"
                          "{{ decryptAES .pw $a }}|{{ ne $a $b }}|{{ len $a }}|"
                          "{{ len (encryptAES .pw (printf \"%s%s\" .text .text)) }}",
                          "{\"pw\":\"k3y\",\"text\":\"a secret value\"}");
    char *plain = part(out, 0);
    char *differ = part(out, 1);
    char *len = part(out, 2);
    char *two = part(out, 3);
    assert_string_equal(plain, "a secret value");
    assert_string_equal(differ, "true");
    assert_string_equal(len, "44"); /* base64 of 16 bytes of IV and one 16-byte block */
    assert_string_equal(two, "64"); /* IV and two blocks */
    free(plain);
    free(differ);
    free(len);
    free(two);
    free(out);
}

static void test_template_crypto__decrypt_aes_rejects_short_input(void **state)
{
    (void)state;
    char *err = render_err("{{ decryptAES \"k\" \"AAAA\" }}", NULL);
    assert_non_null(strstr(err, "slice bounds out of range [:16] with capacity 3"));
    free(err);
    err = render_err("{{ decryptAES \"k\" \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\" }}", NULL);
    assert_non_null(strstr(err, "crypto/cipher: input not full blocks"));
    free(err);
    err = render_err("{{ decryptAES \"k\" \"!!\" }}", NULL);
    assert_non_null(strstr(err, "illegal base64 data at input byte 0"));
    free(err);
}

static void test_template_crypto__bcrypt_verifies_with_libxcrypt(void **state)
{
    (void)state;
    char *out = render_ok("{{ bcrypt .pw }}|{{ htpasswd \"admin\" .pw }}", "{\"pw\":\"s3cr3t\"}");
    char *hash = part(out, 0);
    char *line = part(out, 1);
    assert_true(strncmp(hash, "$2a$10$", 7) == 0);
    assert_int_equal(strlen(hash), 60);
    struct crypt_data *cd = calloc(1, sizeof(*cd));
    assert_non_null(cd);
    const char *again = crypt_r("s3cr3t", hash, cd);
    assert_non_null(again);
    assert_string_equal(again, hash);
    again = crypt_r("wrong", hash, cd);
    assert_true(again == NULL || strcmp(again, hash) != 0);
    assert_true(strncmp(line, "admin:$2a$10$", 13) == 0);
    again = crypt_r("s3cr3t", line + 6, cd);
    assert_non_null(again);
    assert_string_equal(again, line + 6);
    free(cd);
    free(hash);
    free(line);
    free(out);
}

static void test_template_crypto__derive_password_is_deterministic(void **state)
{
    (void)state;
    const char *t = "{{ derivePassword 1 \"pin\" \"pw\" \"user\" \"site\" }}|"
                    "{{ derivePassword 1 \"pin\" \"pw\" \"user\" \"site\" }}|"
                    "{{ derivePassword 1 \"medium\" \"pw\" \"user\" \"site\" }}";
    char *out = render_ok(t, NULL);
    char *a = part(out, 0);
    char *b = part(out, 1);
    char *m = part(out, 2);
    assert_string_equal(a, b);
    assert_int_equal(strlen(a), 4);
    assert_int_equal(strspn(a, "0123456789"), 4);
    assert_int_equal(strlen(m), 8);
    free(a);
    free(b);
    free(m);
    free(out);
}

static void test_template_crypto__bad_keys_are_named_and_not_echoed(void **state)
{
    (void)state;
    /* keys come from data: the error context shows the template text, as in Go */
    char *err = render_err("{{ genCAWithKey \"x\" 1 .key }}", "{\"key\":\"SECRET-MATERIAL\"}");
    assert_non_null(strstr(err, "error calling genCAWithKey: parsing private key: no PEM data"));
    assert_null(strstr(err, "SECRET-MATERIAL"));
    free(err);
    err = render_err("{{ genCAWithKey \"x\" 1 .key }}",
                     "{\"key\":\"-----BEGIN RSA PRIVATE KEY-----\\nU0VDUkVU\\n"
                     "-----END RSA PRIVATE KEY-----\\n\"}");
    assert_non_null(strstr(err, "parsing RSA private key from PEM"));
    assert_null(strstr(err, "U0VDUkVU"));
    free(err);
    err = render_err("{{ genSelfSignedCert \"x\" (list \"300.1.1.1\") nil 1 }}", NULL);
    assert_non_null(strstr(err, "error parsing ip: 300.1.1.1"));
    free(err);
    err = render_err("{{ genSignedCert \"x\" nil nil 1 . }}", "{\"Cert\":\"\",\"Key\":\"\"}");
    assert_non_null(strstr(err, "sprig.certificate"));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_crypto__signed_cert_verifies_with_its_ca),
        cmocka_unit_test(test_template_crypto__keys_are_written_as_go_writes_them),
        cmocka_unit_test(test_template_crypto__aes_round_trips_with_fresh_ivs),
        cmocka_unit_test(test_template_crypto__decrypt_aes_rejects_short_input),
        cmocka_unit_test(test_template_crypto__bcrypt_verifies_with_libxcrypt),
        cmocka_unit_test(test_template_crypto__derive_password_is_deterministic),
        cmocka_unit_test(test_template_crypto__bad_keys_are_named_and_not_echoed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
