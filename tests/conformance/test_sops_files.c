/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conformance: SOPS decryption of files written by the real sops, from other projects' test
 * data in $CO_SHARED_FIXTURES/sops (Flux's kustomize-controller test data with its age and PGP
 * keys, and sops' own example and functional-test files with its test PGP key). `make
 * test-conformance` runs it; tests/unit/test_sops.c covers the same behaviour with files
 * encrypted at test time.
 *
 * Where the expected plaintext comes from:
 * - Flux fixtures: kustomize-controller's decryptor test asserts `key: value` for the algorithm,
 *   envs, files and inside secrets, `merge1`/`merge2` for the patches and `global-value` for
 *   the global secret.
 * - sops fixtures: decrypted independently of this code (data key with the gpg command-line
 *   tool, values with Python's cryptography AES-GCM and the path as additional data); the
 *   format.enc.* files hold foo=bar, multiple_keys.yaml message=hello, comments.enc.yaml
 *   lorem=ipsum and dolor=sit.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/digest.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/render/sops.h"
#include "shared/src/render/sops/sops_int.h"
#include "tests/support/test_support.h"

#define FLUX "sops/flux/controller/testdata/sops/"
#define SOPS "sops/sops/"

typedef struct fixture {
    co_sops_keys *keys;
} fixture;

static void add_key_file(co_sops_keys *keys, const char *rel, const char *name)
{
    size_t len = 0;
    char *data = co_test_shared_fixture(rel, &len);
    assert_co_pass(co_sops_keys_add(keys, name, data, len));
    free(data);
}

static int setup_age(void **state)
{
    fixture *f = co_xcalloc(1, sizeof(*f));
    f->keys = co_sops_keys_new();
    add_key_file(f->keys, FLUX "keys/age.txt", "age.agekey");
    add_key_file(f->keys, FLUX "keys/age-global.txt", "identity.agekey");
    *state = f;
    return 0;
}

static int setup_all(void **state)
{
    setup_age(state);
    fixture *f = *state;
    add_key_file(f->keys, FLUX "keys/pgp.asc", "pgp.asc");
    add_key_file(f->keys, SOPS "pgp/sops_functional_tests_key.asc", "sops.asc");
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    co_sops_keys_free(f->keys);
    free(f);
    return 0;
}

/* Decrypts a shared fixture as if it were named @p name; returns the plaintext or NULL with
 * *rc set. */
static char *decrypt_named(co_sops_keys *keys, const char *rel, const char *name, int *rc)
{
    size_t len = 0;
    char *data = co_test_shared_fixture(rel, &len);
    co_buf out = CO_BUF_INIT(CO_MAX_SOPS_FILE);
    co_error_clear();
    *rc = co_sops_decrypt_file(&out, keys, name, data, len);
    free(data);
    if (*rc < 0) {
        co_buf_dispose(&out);
        return NULL;
    }
    return co_buf_take(&out, NULL);
}

static char *decrypt_ok(co_sops_keys *keys, const char *rel)
{
    int rc = 0;
    char *out = decrypt_named(keys, rel, rel, &rc);
    if (!out) {
        fail_msg("decrypting %s failed (%d): %s", rel, rc, co_error_last());
    }
    return out;
}

/* Decrypts fixture @p rel and fails unless the plaintext is exactly @p want. */
static void assert_decrypts_to(co_sops_keys *keys, const char *rel, const char *want)
{
    char *out = decrypt_ok(keys, rel);
    assert_string_equal(out, want);
    free(out);
}

/* Decrypts fixture @p rel and fails unless the plaintext contains every string of the
 * NULL-terminated list @p wants. */
static void
assert_decrypts_containing(co_sops_keys *keys, const char *rel, const char *const *wants)
{
    char *out = decrypt_ok(keys, rel);
    for (const char *const *w = wants; *w; w++) {
        assert_contains(out, *w);
    }
    free(out);
}

static void test_sops_files__flux_age_yaml(void **state)
{
    fixture *f = *state;
    char *out = decrypt_ok(f->keys, FLUX "algorithms/age.yaml");
    assert_contains(out, "stringData:\n    key: value\n");
    assert_contains(out, "name: age\n");
    assert_null(strstr(out, "sops"));
    assert_null(strstr(out, "ENC["));
    free(out);

    assert_decrypts_containing(f->keys, FLUX "patches/merge1.yaml",
                               (const char *[]){"key: merge1\n", NULL});
    assert_decrypts_containing(f->keys, FLUX "patches/merge2.yaml",
                               (const char *[]){"merge2: merge2\n", NULL});
    assert_decrypts_containing(
        f->keys, FLUX "global/secret.yaml",
        (const char *[]){"key: global-value\n", "namespace: default\n", NULL});
}

static void test_sops_files__flux_dotenv_and_binary(void **state)
{
    fixture *f = *state;
    assert_decrypts_to(f->keys, FLUX "envs/env.env", "key=value\n");
    assert_decrypts_to(f->keys, FLUX "component/env.env", "key=value\n");
    /* A JSON document with a single data key, named .txt: the binary store. */
    assert_decrypts_to(f->keys, FLUX "files/file.txt", "value");
}

static void test_sops_files__flux_secret_inside_secret(void **state)
{
    fixture *f = *state;
    size_t len = 0;
    char *yaml = co_test_shared_fixture(FLUX "inside/secret.yaml", &len);
    /* The Secret's data.key is base64 of a sops binary-format document. */
    char *b64 = strstr(yaml, "key: ");
    assert_non_null(b64);
    b64 += 5;
    size_t b64_len = strcspn(b64, "\n");
    unsigned char *inner = NULL;
    size_t inner_len = 0;
    assert_co_pass(co_base64_decode_alloc(&inner, &inner_len, b64, b64_len, CO_BASE64_STD));
    assert_int_equal(co_sops_detect(inner, inner_len), CO_SOPS_FORMAT_JSON);
    co_buf out = CO_BUF_INIT(1024);
    assert_co_pass(co_sops_decrypt_file(&out, f->keys, "key", inner, inner_len));
    assert_string_equal(co_buf_cstr(&out), "value");
    co_buf_dispose(&out);
    free(inner);
    free(yaml);
}

static void test_sops_files__flux_pgp(void **state)
{
    fixture *f = *state;
    assert_decrypts_containing(f->keys, FLUX "algorithms/pgp.yaml",
                               (const char *[]){"stringData:\n    key: value\n", NULL});
}

static void test_sops_files__sops_example_yaml(void **state)
{
    fixture *f = *state;
    assert_decrypts_containing(
        f->keys, SOPS "example.yaml",
        (const char *[]){"myapp1: t00m4nys3cr3tzupdated\n",
                         "        user: eve\n        password: c4r1b0u\n",
                         "    key: |\n        -----BEGIN RSA PRIVATE KEY-----\n",
                         "number: 1.234568e+09\n", "- secretuser1\n- secretuser2\n",
                         "somebooleans:\n- true\n- false\n", "value: with something secret in it\n",
                         "- remain in clear text\n", "all: going to remain in clear text\n", NULL});
}

static void test_sops_files__sops_example_json_ini_binary(void **state)
{
    fixture *f = *state;
    char *out = decrypt_ok(f->keys, SOPS "example.json");
    struct json_object *o = json_tokener_parse(out);
    assert_non_null(o);
    struct json_object *v = NULL, *addr = NULL;
    assert_true(json_object_object_get_ex(o, "firstName", &v));
    assert_string_equal(json_object_get_string(v), "John");
    assert_true(json_object_object_get_ex(o, "age", &v));
    assert_true(json_object_get_double(v) == 25.4);
    assert_true(json_object_object_get_ex(o, "address", &addr));
    assert_true(json_object_object_get_ex(addr, "postalCode", &v));
    assert_string_equal(json_object_get_string(v), "10021-3100");
    assert_true(json_object_object_get_ex(o, "anEmptyValue", &v));
    assert_string_equal(json_object_get_string(v), "");
    json_object_put(o);
    free(out);

    assert_decrypts_containing(
        f->keys, SOPS "example.ini",
        (const char *[]){"[name]\nfirstName = John\nlastName = Smith\nage = 25.4\n",
                         "[not private]\nnotsecret_unencrypted = hi there!\n", NULL});

    out = decrypt_ok(f->keys, SOPS "example.txt");
    assert_true(strncmp(out, "Welcome to SOPS!\n", 17) == 0);
    free(out);
}

static void test_sops_files__sops_functional_formats(void **state)
{
    fixture *f = *state;
    assert_decrypts_to(f->keys, SOPS "functional-tests/res/format.enc.yaml", "foo: bar\n");
    assert_decrypts_to(f->keys, SOPS "functional-tests/res/format.enc.json",
                       "{\n\t\"foo\": \"bar\"\n}\n");
    /* The key is "foo " and the value " bar": sops does not trim dotenv lines. */
    assert_decrypts_to(f->keys, SOPS "functional-tests/res/format.enc.env", "foo = bar\n");
    assert_decrypts_to(f->keys, SOPS "functional-tests/res/format.enc.ini", "[foo]\nbar = baz\n");
    /* The PGP data key is a """ multi-line INI value. */
    assert_decrypts_to(f->keys, SOPS "functional-tests/res/format-2.enc.ini", "[foo]\nbar = baz\n");
    assert_decrypts_to(f->keys, SOPS "functional-tests/res/multiple_keys.yaml", "message: hello\n");
    assert_decrypts_to(f->keys, SOPS "functional-tests/res/comments.enc.yaml",
                       "lorem: ipsum\ndolor: sit\n");
    assert_decrypts_to(f->keys, SOPS "functional-tests/res/comments_unencrypted_comments.yaml",
                       "lorem: ipsum\ndolor: sit\n");
}

static void test_sops_files__no_mac_is_rejected(void **state)
{
    fixture *f = *state;
    size_t len = 0;
    char *data = co_test_shared_fixture(SOPS "functional-tests/res/no_mac.yaml", &len);
    /* Without a MAC the file carries no marker, so by name it passes through unchanged... */
    co_buf out = CO_BUF_INIT(CO_MAX_SOPS_FILE);
    assert_co_pass(co_sops_decrypt_file(&out, f->keys, "no_mac.yaml", data, len));
    assert_int_equal(out.len, len);
    co_buf_reset(&out);
    /* ...and read as sops YAML it is refused. */
    assert_co_fail_with(CO_EAUTH, co_sops_decrypt(&out, f->keys, CO_SOPS_FORMAT_YAML,
                                                  CO_SOPS_FORMAT_YAML, data, len));
    assert_contains(co_error_last(), "no MAC");
    assert_int_equal(out.len, 0);
    co_buf_dispose(&out);
    free(data);
}

/* Applies @p edit to a fixture and expects decryption to fail with @p code and no output. */
static void expect_tamper_fails(co_sops_keys *keys,
                                const char *rel,
                                const char *from,
                                const char *to,
                                int code,
                                const char *message)
{
    size_t len = 0;
    char *data = co_test_shared_fixture(rel, &len);
    char *at = strstr(data, from);
    if (!at) {
        free(data);
        fail_msg("%s does not contain %s", rel, from);
        return;
    }
    size_t from_len = strlen(from);
    co_buf e = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_put(&e, data, (size_t)(at - data)));
    assert_co_pass(co_buf_puts(&e, to));
    assert_co_pass(co_buf_puts(&e, at + from_len));
    size_t edited_len = 0;
    char *edited = co_buf_take(&e, &edited_len);
    co_buf out = CO_BUF_INIT(CO_MAX_SOPS_FILE);
    int rc = co_sops_decrypt_file(&out, keys, rel, edited, edited_len);
    if (rc != code) {
        co_buf_dispose(&out);
        fail_msg("%s with %s -> %s: got %d, want %d (%s)", rel, from, to, rc, code,
                 co_error_last());
    }
    assert_contains(co_error_last(), message);
    assert_int_equal(out.len, 0);
    assert_null(out.ptr);
    co_buf_dispose(&out);
    free(edited);
    free(data);
}

static void test_sops_files__tampered_files_fail(void **state)
{
    fixture *f = *state;
    /* A flipped ciphertext character: the value's tag fails. */
    expect_tamper_fails(f->keys, FLUX "algorithms/age.yaml",
                        "data:mHeXsmQ=", "data:nHeXsmQ=", CO_EAUTH, "AES_GCM");
    /* An unencrypted value changed: only the MAC notices. */
    expect_tamper_fails(f->keys, FLUX "algorithms/age.yaml", "name: age", "name: agf", CO_EAUTH,
                        "MAC mismatch");
    expect_tamper_fails(f->keys, SOPS "example.yaml", "remain in clear text",
                        "remain in plain text", CO_EAUTH, "MAC mismatch");
    /* A value removed. */
    expect_tamper_fails(f->keys, SOPS "example.yaml",
                        "    - because of the _unencrypted suffix in "
                        "the key\n",
                        "", CO_EAUTH, "MAC mismatch");
    /* Values moved between keys: the path is the additional data. */
    expect_tamper_fails(f->keys, SOPS "example.json", "\"firstName\"", "\"lastNameX\"", CO_EAUTH,
                        "AES_GCM");
    /* The MAC itself, and the timestamp it is bound to. */
    expect_tamper_fails(f->keys, FLUX "algorithms/age.yaml", "mac: ENC[AES256_GCM,data:vmrF",
                        "mac: ENC[AES256_GCM,data:vmrG", CO_EAUTH, "MAC");
    expect_tamper_fails(f->keys, FLUX "algorithms/age.yaml", "2024-11-12T13:33:42Z",
                        "2024-11-12T13:33:43Z", CO_EAUTH, "MAC");
    /* A plain value where an encrypted one belongs. */
    expect_tamper_fails(
        f->keys, FLUX "algorithms/age.yaml",
        "ENC[AES256_GCM,data:mHeXsmQ=,iv:vUMpILz3xchORqkzDFvgwENY7EqIHHGJdEF6C8xqbFE="
        ",tag:IroV7hykADvD0IUaq6kikA==,type:str]",
        "value", CO_EINVALID, "stringData.key");
    /* The dotenv and INI readers see tampering too. */
    expect_tamper_fails(f->keys, FLUX "envs/env.env", "key=ENC", "kez=ENC", CO_EAUTH, "AES_GCM");
    expect_tamper_fails(f->keys, SOPS "example.ini", "hi there!", "hi there?", CO_EAUTH,
                        "MAC mismatch");
}

static void test_sops_files__key_problems(void **state)
{
    (void)state;
    size_t len = 0;
    char *data = co_test_shared_fixture(FLUX "algorithms/age.yaml", &len);
    co_buf out = CO_BUF_INIT(CO_MAX_SOPS_FILE);

    /* Decryption not configured: passes through like the original. */
    assert_co_pass(co_sops_decrypt_file(&out, NULL, "age.yaml", data, len));
    assert_memory_equal(out.ptr, data, len);
    co_buf_reset(&out);

    /* Configured but empty: an error, not a silent pass-through. */
    co_sops_keys *empty = NULL;
    empty = co_sops_keys_new();
    assert_co_pass(co_sops_keys_add(empty, "README.md", "not a key", 9));
    assert_int_equal(co_sops_keys_count(empty), 0);
    assert_co_fail_with(CO_EINVALID, co_sops_decrypt_file(&out, empty, "age.yaml", data, len));
    assert_contains(co_error_last(), "age.yaml");
    assert_contains(co_error_last(), "no age or PGP keys");
    co_sops_keys_free(empty);

    /* The wrong identity. */
    co_sops_keys *wrong = NULL;
    wrong = co_sops_keys_new();
    add_key_file(wrong, FLUX "keys/age-global.txt", "other.agekey");
    assert_co_fail_with(CO_EAUTH, co_sops_decrypt_file(&out, wrong, "age.yaml", data, len));
    assert_contains(co_error_last(), "no identity matched");
    assert_int_equal(out.len, 0);
    co_sops_keys_free(wrong);

    /* Post-quantum age recipients need ML-KEM, which OpenSSL 3.0 lacks. */
    co_sops_keys *pq = NULL;
    pq = co_sops_keys_new();
    size_t pq_len = 0;
    char *pq_key = co_test_shared_fixture(FLUX "keys/age-pq.txt", &pq_len);
    assert_co_fail_with(CO_EUNSUPPORTED, co_sops_keys_add(pq, "age-pq.agekey", pq_key, pq_len));
    assert_contains(co_error_last(), "age-pq.agekey");
    assert_null(strstr(co_error_last(), "AGE-SECRET-KEY"));
    free(pq_key);
    add_key_file(pq, FLUX "keys/age.txt", "age.agekey");
    free(data);
    data = co_test_shared_fixture(FLUX "algorithms/age-pq.yaml", &len);
    assert_co_fail_with(CO_EAUTH, co_sops_decrypt_file(&out, pq, "age-pq.yaml", data, len));
    assert_contains(co_error_last(), "not supported");
    co_sops_keys_free(pq);

    /* A malformed identity names its line, never the key. */
    co_sops_keys *bad = NULL;
    bad = co_sops_keys_new();
    const char *text = "# comment\n\nAGE-SECRET-KEY-1QQQQ\n";
    assert_co_fail_with(CO_EINVALID, co_sops_keys_add(bad, "x.agekey", text, strlen(text)));
    assert_contains(co_error_last(), "x.agekey: line 3");
    co_sops_keys_free(bad);

    co_buf_dispose(&out);
    free(data);
}

static void test_sops_files__keys_from_secret_object(void **state)
{
    (void)state;
    size_t len = 0;
    char *key = co_test_shared_fixture(FLUX "keys/age.txt", &len);
    co_buf b64 = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_base64_encode_buf(&b64, key, len, CO_BASE64_STD));
    struct json_object *secret = json_object_new_object();
    struct json_object *data = json_object_new_object();
    json_object_object_add(data, "age.agekey", json_object_new_string(co_buf_cstr(&b64)));
    json_object_object_add(data, "token", json_object_new_string("aGVsbG8="));
    json_object_object_add(secret, "data", data);
    co_sops_keys *keys = NULL;
    keys = co_sops_keys_new();
    assert_co_pass(co_sops_keys_add_secret(keys, secret));
    assert_int_equal(co_sops_keys_count(keys), 1);
    assert_decrypts_to(keys, FLUX "files/file.txt", "value");
    co_sops_keys_free(keys);

    json_object_object_add(data, "broken.agekey", json_object_new_string("%%%"));
    keys = co_sops_keys_new();
    assert_co_fail_with(CO_EINVALID, co_sops_keys_add_secret(keys, secret));
    assert_contains(co_error_last(), "broken.agekey");
    co_sops_keys_free(keys);
    json_object_put(secret);
    co_buf_dispose(&b64);
    free(key);
}

static void copy_fixture(const char *rel, const char *dir, const char *name)
{
    size_t len = 0;
    char *data = co_test_shared_fixture(rel, &len);
    char *path = co_xasprintf("%s/%s", dir, name);
    co_test_write_file(path, data, len);
    free(path);
    free(data);
}

static void test_sops_files__decrypts_a_tree_in_place(void **state)
{
    fixture *f = *state;
    char *dir = co_test_tmpdir();
    char *chart = co_xasprintf("%s/chart", dir);
    copy_fixture(FLUX "algorithms/age.yaml", chart, "templates/secret.yaml");
    copy_fixture(FLUX "envs/env.env", chart, "files/app.env");
    copy_fixture(FLUX "algorithms/vault.yaml", chart, "templates/plain.yaml");
    char *outside = co_xasprintf("%s/outside.yaml", dir);
    copy_fixture(FLUX "patches/merge1.yaml", dir, "outside.yaml");
    char *link = co_xasprintf("%s/templates/link.yaml", chart);
    assert_int_equal(symlink(outside, link), 0);

    size_t count = 0;
    assert_co_pass(co_sops_decrypt_tree(f->keys, chart, &count));
    assert_int_equal(count, 2);
    char *p = co_xasprintf("%s/templates/secret.yaml", chart);
    char *s = co_test_read_file(p, NULL);
    assert_contains(s, "key: value");
    free(s);
    free(p);
    p = co_xasprintf("%s/files/app.env", chart);
    s = co_test_read_file(p, NULL);
    assert_string_equal(s, "key=value\n");
    free(s);
    free(p);
    /* The file behind the symbolic link is outside the tree and stays encrypted. */
    s = co_test_read_file(outside, NULL);
    assert_contains(s, "ENC[AES256_GCM");
    free(s);
    char *templates = co_xasprintf("%s/templates", chart);
    assert_int_equal(co_test_count_entries(templates, "secret.yaml.co-sops-"), 0);
    free(templates);

    /* A tampered file stops the walk with its name. */
    copy_fixture(FLUX "patches/merge2.yaml", chart, "templates/z.yaml");
    p = co_xasprintf("%s/templates/z.yaml", chart);
    s = co_test_read_file(p, NULL);
    char *at = strstr(s, "data:QN7wGPNK");
    assert_non_null(at);
    at[5] = 'R';
    co_test_write_file(p, s, strlen(s));
    free(s);
    assert_co_fail_with(CO_EAUTH, co_sops_decrypt_tree(f->keys, chart, NULL));
    assert_contains(co_error_last(), "templates/z.yaml");
    free(p);

    free(link);
    free(outside);
    free(chart);
    co_test_rmtree(dir);
    free(dir);
}

static void test_sops_files__gnupg_home_is_private_and_removed(void **state)
{
    (void)state;
    char *tmp = co_test_tmpdir();
    char *saved = co_test_env_swap("TMPDIR", tmp);
    co_sops_keys *keys = NULL;
    keys = co_sops_keys_new();
    add_key_file(keys, FLUX "keys/pgp.asc", "pgp.asc");
    assert_int_equal(co_sops_keys_count(keys), 1);
    assert_int_equal(co_test_count_entries(tmp, "co-gnupg-"), 1);
    co_test_assert_entries_mode(tmp, "co-gnupg-", 0700);
    assert_decrypts_containing(keys, FLUX "algorithms/pgp.yaml",
                               (const char *[]){"key: value", NULL});
    co_sops_keys_free(keys);
    assert_int_equal(co_test_count_entries(tmp, "co-gnupg-"), 0);
    co_test_env_restore("TMPDIR", saved);
    co_test_rmtree(tmp);
    free(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sops_files__flux_age_yaml, setup_age, teardown),
        cmocka_unit_test_setup_teardown(test_sops_files__flux_dotenv_and_binary, setup_age,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sops_files__flux_secret_inside_secret, setup_age,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sops_files__flux_pgp, setup_all, teardown),
        cmocka_unit_test_setup_teardown(test_sops_files__sops_example_yaml, setup_all, teardown),
        cmocka_unit_test_setup_teardown(test_sops_files__sops_example_json_ini_binary, setup_all,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sops_files__sops_functional_formats, setup_all,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sops_files__no_mac_is_rejected, setup_all, teardown),
        cmocka_unit_test_setup_teardown(test_sops_files__tampered_files_fail, setup_all, teardown),
        cmocka_unit_test(test_sops_files__key_problems),
        cmocka_unit_test(test_sops_files__keys_from_secret_object),
        cmocka_unit_test_setup_teardown(test_sops_files__decrypts_a_tree_in_place, setup_age,
                                        teardown),
        cmocka_unit_test(test_sops_files__gnupg_home_is_private_and_removed),
    };
    return cmocka_run_group_tests_name("sops_files", tests, NULL, NULL);
}
