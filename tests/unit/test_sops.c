/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for SOPS decryption against files written by the real sops, read from
 * ../shared/fixtures/sops (Flux's kustomize-controller test data with its age and PGP keys, and
 * sops' own example and functional-test files with its test PGP keys).
 *
 * Where the expected plaintext comes from:
 * - Flux fixtures: kustomize-controller's decryptor test asserts `key: value` for the algorithm,
 *   envs, files and inside secrets, `merge1`/`merge2` for the patches and `global-value` for
 *   the global secret.
 * - sops fixtures: decrypted independently of this code (data key with the gpg command-line
 *   tool, values with Python's cryptography AES-GCM and the path as additional data); the
 *   format.enc.* files hold foo=bar, multiple_keys.yaml message=hello, comments.enc.yaml
 *   lorem=ipsum and dolor=sit.
 * - Files made in the test: tests/oracle/sopsgen (Go, built from Debian's golang-go in GOPATH
 *   mode, standard library only) encrypts a given plaintext tree the way sops does, with Go's
 *   AES-GCM and SHA-512, wraps the data key (or Shamir shares of it, split with its own GF(2^8)
 *   code) with the real `age` and `gpg` command-line tools for keys made by `age-keygen`, and
 *   writes YAML, JSON, dotenv, INI or binary files; the expected plaintext is the tree given to
 *   it. Files made directly by the `age` command line check the age decryptor on its own.
 *   These tests skip when age, gpg or go is missing (tests/env/deps.sh installs them).
 */
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/caps.h"
#include "co/error.h"
#include "co/sops.h"
#include "shared/src/sops_int.h"
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
    assert_co_pass(co_sops_keys_new(&f->keys));
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

static void test_sops__flux_age_yaml(void **state)
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

static void test_sops__flux_dotenv_and_binary(void **state)
{
    fixture *f = *state;
    assert_decrypts_to(f->keys, FLUX "envs/env.env", "key=value\n");
    assert_decrypts_to(f->keys, FLUX "component/env.env", "key=value\n");
    /* A JSON document with a single data key, named .txt: the binary store. */
    assert_decrypts_to(f->keys, FLUX "files/file.txt", "value");
}

static void test_sops__flux_secret_inside_secret(void **state)
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
    assert_co_pass(co_sops__b64_decode(&inner, &inner_len, b64, b64_len, CO_SOPS__B64_PADDED));
    assert_int_equal(co_sops_detect(inner, inner_len), CO_SOPS_FORMAT_JSON);
    co_buf out = CO_BUF_INIT(1024);
    assert_co_pass(co_sops_decrypt_file(&out, f->keys, "key", inner, inner_len));
    assert_string_equal(co_buf_cstr(&out), "value");
    co_buf_dispose(&out);
    free(inner);
    free(yaml);
}

static void test_sops__flux_pgp(void **state)
{
    fixture *f = *state;
    assert_decrypts_containing(f->keys, FLUX "algorithms/pgp.yaml",
                               (const char *[]){"stringData:\n    key: value\n", NULL});
}

static void test_sops__sops_example_yaml(void **state)
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

static void test_sops__sops_example_json_ini_binary(void **state)
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

static void test_sops__sops_functional_formats(void **state)
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

static void test_sops__no_mac_is_rejected(void **state)
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

static void test_sops__tampered_files_fail(void **state)
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

static void test_sops__key_problems(void **state)
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
    assert_co_pass(co_sops_keys_new(&empty));
    assert_co_pass(co_sops_keys_add(empty, "README.md", "not a key", 9));
    assert_int_equal(co_sops_keys_count(empty), 0);
    assert_co_fail_with(CO_EINVALID, co_sops_decrypt_file(&out, empty, "age.yaml", data, len));
    assert_contains(co_error_last(), "age.yaml");
    assert_contains(co_error_last(), "no age or PGP keys");
    co_sops_keys_free(empty);

    /* The wrong identity. */
    co_sops_keys *wrong = NULL;
    assert_co_pass(co_sops_keys_new(&wrong));
    add_key_file(wrong, FLUX "keys/age-global.txt", "other.agekey");
    assert_co_fail_with(CO_EAUTH, co_sops_decrypt_file(&out, wrong, "age.yaml", data, len));
    assert_contains(co_error_last(), "no identity matched");
    assert_int_equal(out.len, 0);
    co_sops_keys_free(wrong);

    /* Post-quantum age recipients need ML-KEM, which OpenSSL 3.0 lacks. */
    co_sops_keys *pq = NULL;
    assert_co_pass(co_sops_keys_new(&pq));
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
    assert_co_pass(co_sops_keys_new(&bad));
    const char *text = "# comment\n\nAGE-SECRET-KEY-1QQQQ\n";
    assert_co_fail_with(CO_EINVALID, co_sops_keys_add(bad, "x.agekey", text, strlen(text)));
    assert_contains(co_error_last(), "x.agekey: line 3");
    co_sops_keys_free(bad);

    co_buf_dispose(&out);
    free(data);
}

static void test_sops__keys_from_secret_object(void **state)
{
    (void)state;
    size_t len = 0;
    char *key = co_test_shared_fixture(FLUX "keys/age.txt", &len);
    co_buf b64 = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_sops__b64_encode(&b64, (const unsigned char *)key, len));
    struct json_object *secret = json_object_new_object();
    struct json_object *data = json_object_new_object();
    json_object_object_add(data, "age.agekey", json_object_new_string(co_buf_cstr(&b64)));
    json_object_object_add(data, "token", json_object_new_string("aGVsbG8="));
    json_object_object_add(secret, "data", data);
    co_sops_keys *keys = NULL;
    assert_co_pass(co_sops_keys_new(&keys));
    assert_co_pass(co_sops_keys_add_secret(keys, secret));
    assert_int_equal(co_sops_keys_count(keys), 1);
    assert_decrypts_to(keys, FLUX "files/file.txt", "value");
    co_sops_keys_free(keys);

    json_object_object_add(data, "broken.agekey", json_object_new_string("%%%"));
    assert_co_pass(co_sops_keys_new(&keys));
    assert_co_fail_with(CO_EINVALID, co_sops_keys_add_secret(keys, secret));
    assert_contains(co_error_last(), "broken.agekey");
    co_sops_keys_free(keys);
    json_object_put(secret);
    co_buf_dispose(&b64);
    free(key);
}

static void test_sops__detect_and_output_format(void **state)
{
    (void)state;
    assert_int_equal(co_sops_detect("a: b\nsops:\n  mac: ENC[x", 22), CO_SOPS_FORMAT_YAML);
    assert_int_equal(co_sops_detect("{\"mac\": \"ENC[", 13), CO_SOPS_FORMAT_JSON);
    assert_int_equal(co_sops_detect("sops_mac=ENC[", 13), CO_SOPS_FORMAT_DOTENV);
    assert_int_equal(co_sops_detect("[sops]\n", 7), CO_SOPS_FORMAT_INI);
    assert_int_equal(co_sops_detect("mac: ENX[", 9), CO_SOPS_FORMAT_NONE);
    assert_int_equal(co_sops_format_for_path("a/b.yml"), CO_SOPS_FORMAT_YAML);
    assert_int_equal(co_sops_format_for_path("a/b.yaml"), CO_SOPS_FORMAT_YAML);
    assert_int_equal(co_sops_format_for_path("b.json"), CO_SOPS_FORMAT_JSON);
    assert_int_equal(co_sops_format_for_path("b.env"), CO_SOPS_FORMAT_DOTENV);
    assert_int_equal(co_sops_format_for_path("b.ini"), CO_SOPS_FORMAT_INI);
    assert_int_equal(co_sops_format_for_path("b.txt"), CO_SOPS_FORMAT_BINARY);
    assert_int_equal(co_sops_format_for_path("yaml"), CO_SOPS_FORMAT_BINARY);
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

static size_t count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) { // NOLINT(concurrency-mt-unsafe)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    }
    closedir(d);
    return n;
}

static void test_sops__decrypts_a_tree_in_place(void **state)
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
    assert_int_equal(count_entries(templates, "secret.yaml.co-sops-"), 0);
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

static void test_sops__gnupg_home_is_private_and_removed(void **state)
{
    (void)state;
    char *tmp = co_test_tmpdir();
    const char *old = getenv("TMPDIR"); // NOLINT(concurrency-mt-unsafe)
    char *saved = old ? co_xstrdup(old) : NULL;
    setenv("TMPDIR", tmp, 1); // NOLINT(concurrency-mt-unsafe)
    co_sops_keys *keys = NULL;
    assert_co_pass(co_sops_keys_new(&keys));
    add_key_file(keys, FLUX "keys/pgp.asc", "pgp.asc");
    assert_int_equal(co_sops_keys_count(keys), 1);
    assert_int_equal(count_entries(tmp, "co-gnupg-"), 1);
    DIR *d = opendir(tmp);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) { // NOLINT(concurrency-mt-unsafe)
        if (strncmp(e->d_name, "co-gnupg-", 9) == 0) {
            char *home = co_xasprintf("%s/%s", tmp, e->d_name);
            struct stat st;
            assert_int_equal(stat(home, &st), 0);
            assert_int_equal(st.st_mode & 0777, 0700);
            free(home);
        }
    }
    closedir(d);
    assert_decrypts_containing(keys, FLUX "algorithms/pgp.yaml",
                               (const char *[]){"key: value", NULL});
    co_sops_keys_free(keys);
    assert_int_equal(count_entries(tmp, "co-gnupg-"), 0);
    if (saved) {
        setenv("TMPDIR", saved, 1); // NOLINT(concurrency-mt-unsafe)
    } else {
        unsetenv("TMPDIR"); // NOLINT(concurrency-mt-unsafe)
    }
    free(saved);
    co_test_rmtree(tmp);
    free(tmp);
}

/* ---- independent encryption: the age CLI and sopsgen --------------------------------------- */

/* Runs argv[0] (searched in PATH) with stdin/stdout redirected to files (NULL: /dev/null) and
 * @p envp (NULL: ours). Returns the exit status, or -1 when it could not run. */
static int run_cmd(char *const argv[], const char *in, const char *out, char *const envp[])
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in ? in : "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) {
        return -1;
    }
    return WEXITSTATUS(status);
}

typedef struct oracle {
    char *dir;
    char *sopsgen;
    char *key_path[2];
    char *recipient[2];
    char *gnupg_env;
} oracle;

/* Two fresh age keys from age-keygen and the sopsgen binary; false when the tools are
 * missing (the test is then skipped). */
static bool oracle_setup(oracle *o)
{
    memset(o, 0, sizeof(*o));
    o->dir = co_test_tmpdir();
    char *path_file = co_xasprintf("%s/sopsgen.path", o->dir);
    char *build = co_xasprintf("%s/tests/oracle/build.sh", CO_SOURCE_ROOT);
    char *bargv[] = {build, (char *)"sopsgen", NULL};
    int rc = run_cmd(bargv, NULL, path_file, NULL);
    free(build);
    if (rc != 0) {
        free(path_file);
        return false;
    }
    o->sopsgen = co_test_read_file(path_file, NULL);
    o->sopsgen[strcspn(o->sopsgen, "\n")] = '\0';
    free(path_file);
    for (int i = 0; i < 2; i++) {
        o->key_path[i] = co_xasprintf("%s/key%d.txt", o->dir, i);
        char *kargv[] = {(char *)"age-keygen", (char *)"-o", o->key_path[i], NULL};
        if (run_cmd(kargv, NULL, NULL, NULL) != 0) {
            return false;
        }
        char *text = co_test_read_file(o->key_path[i], NULL);
        const char *pub = strstr(text, "age1");
        assert_non_null(pub);
        o->recipient[i] = co_xstrndup(pub, strcspn(pub, "\n"));
        free(text);
    }
    /* A GnuPG home holding the Flux test key's public half, for the PGP recipients. */
    char *home = co_xasprintf("%s/gnupg", o->dir);
    assert_int_equal(mkdir(home, 0700), 0);
    char *asc = co_test_shared_fixture_path(FLUX "keys/pgp.asc");
    char *gargv[] = {
        (char *)"gpg", (char *)"--homedir", home, (char *)"--batch", (char *)"--import", asc, NULL};
    rc = run_cmd(gargv, NULL, NULL, NULL);
    free(asc);
    o->gnupg_env = co_xasprintf("GNUPGHOME=%s", home);
    free(home);
    return rc == 0;
}

static void oracle_dispose(oracle *o)
{
    char *home = co_xasprintf("%s/gnupg", o->dir);
    char *kargv[] = {(char *)"gpgconf", (char *)"--homedir", home,
                     (char *)"--kill",  (char *)"all",       NULL};
    (void)run_cmd(kargv, NULL, NULL, NULL);
    free(home);
    co_test_rmtree(o->dir);
    free(o->dir);
    free(o->sopsgen);
    for (int i = 0; i < 2; i++) {
        free(o->key_path[i]);
        free(o->recipient[i]);
    }
    free(o->gnupg_env);
}

/* Asks sopsgen for a file; @p request is JSON with "@0"/"@1" standing for the recipients. */
static char *oracle_generate(oracle *o, const char *request, size_t *len)
{
    co_buf req = CO_BUF_INIT(SIZE_MAX);
    for (const char *p = request; *p; p++) {
        if (p[0] == '@' && (p[1] == '0' || p[1] == '1')) {
            assert_co_pass(co_buf_puts(&req, o->recipient[p[1] - '0']));
            p++;
        } else {
            assert_co_pass(co_buf_putc(&req, *p));
        }
    }
    char *in = co_xasprintf("%s/req.json", o->dir), *out = co_xasprintf("%s/gen.out", o->dir);
    co_test_write_file(in, req.ptr, req.len);
    co_buf_dispose(&req);
    char *path_env = co_xasprintf("PATH=%s", getenv("PATH")); // NOLINT(concurrency-mt-unsafe)
    char *envp[] = {o->gnupg_env, path_env, NULL};
    char *argv[] = {o->sopsgen, NULL};
    assert_int_equal(run_cmd(argv, in, out, envp), 0);
    char *data = co_test_read_file(out, len);
    free(path_env);
    free(in);
    free(out);
    return data;
}

static co_sops_keys *oracle_keys(oracle *o, bool k0, bool k1, bool pgp)
{
    co_sops_keys *keys = NULL;
    assert_co_pass(co_sops_keys_new(&keys));
    for (int i = 0; i < 2; i++) {
        if (i == 0 ? k0 : k1) {
            size_t len = 0;
            char *text = co_test_read_file(o->key_path[i], &len);
            assert_co_pass(co_sops_keys_add(keys, i ? "b.agekey" : "a.agekey", text, len));
            free(text);
        }
    }
    if (pgp) {
        add_key_file(keys, FLUX "keys/pgp.asc", "pgp.asc");
    }
    return keys;
}

static char *
decrypt_mem(co_sops_keys *keys, const char *name, const char *data, size_t len, int *rc)
{
    co_buf out = CO_BUF_INIT(CO_MAX_SOPS_FILE);
    co_error_clear();
    *rc = co_sops_decrypt_file(&out, keys, name, data, len);
    if (*rc < 0) {
        assert_null(out.ptr);
        return NULL;
    }
    return co_buf_take(&out, NULL);
}

static char *decrypt_mem_ok(co_sops_keys *keys, const char *name, const char *data, size_t len)
{
    int rc = 0;
    char *out = decrypt_mem(keys, name, data, len, &rc);
    if (!out) {
        fail_msg("decrypting generated %s failed (%d): %s\n%s", name, rc, co_error_last(), data);
    }
    return out;
}

static void replace_once(char *s, const char *from, const char *to)
{
    char *at = strstr(s, from);
    assert_non_null(at);
    assert_int_equal(strlen(from), strlen(to));
    for (size_t i = 0; to[i]; i++) {
        at[i] = to[i];
    }
}

static void test_sops__independently_encrypted_yaml(void **state)
{
    (void)state;
    oracle o;
    if (!oracle_setup(&o)) {
        oracle_dispose(&o);
        fail_msg("the independent encrypter cannot run: tests/oracle/build.sh sopsgen, age-keygen "
                 "and gpg are needed (make deps installs them)");
        return;
    }
    size_t len = 0;
    /* A Kubernetes Secret, as Flux users write them. */
    char *data = oracle_generate(
        &o,
        "{\"format\":\"yaml\",\"tree\":{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
        "{\"name\":\"db\",\"labels\":{\"app\":\"x\"}},\"type\":\"Opaque\",\"stringData\":"
        "{\"password\":\"s3cr3t\",\"multi\":\"line1\\nline2\\n\",\"unicode\":\"gr\\u00fc\\u00df\","
        "\"quoted\":\"true\",\"empty\":\"\"}},\"rule\":{\"encrypted_regex\":\"^(data|stringData)$"
        "\"},"
        "\"groups\":[[{\"age\":\"@0\"}]],\"lastmodified\":\"2024-01-02T03:04:05Z\"}",
        &len);
    co_sops_keys *keys = oracle_keys(&o, true, false, false);
    char *out = decrypt_mem_ok(keys, "secret.yaml", data, len);
    assert_contains(out, "name: db\n");
    assert_contains(out, "password: s3cr3t\n");
    assert_contains(out, "multi: |\n        line1\n        line2\n");
    assert_contains(out, "unicode: grüß\n");
    assert_contains(out, "quoted: \"true\"\n");
    assert_contains(out, "empty: \"\"\n");
    free(out);
    /* The unencrypted parts are under the MAC. */
    replace_once(data, "app: \"x\"", "app: \"y\"");
    int rc = 0;
    assert_null(decrypt_mem(keys, "secret.yaml", data, len, &rc));
    assert_int_equal(rc, CO_EAUTH);
    assert_contains(co_error_last(), "MAC mismatch");
    co_sops_keys_free(keys);
    free(data);

    /* Every scalar type, nested lists, the default _unencrypted suffix, two documents. */
    data = oracle_generate(
        &o,
        "{\"format\":\"yaml\",\"tree\":[{\"n\":42,\"neg\":-7,\"f\":1.5,\"big\":1e21,"
        "\"t\":true,\"no\":false,\"z\":null,\"l\":[1,\"two\",{\"three\":3.25}],"
        "\"keep_unencrypted\":{\"a\":\"b\",\"c\":[1,2]}},{\"second\":\"doc\"}],"
        "\"groups\":[[{\"age\":\"@1\"},{\"age\":\"@0\"}]],\"lastmodified\":\"2024-01-02T03:04:"
        "05Z\"}",
        &len);
    keys = oracle_keys(&o, true, false, false);
    out = decrypt_mem_ok(keys, "values.yaml", data, len);
    assert_contains(out,
                    "\"n\": 42\nneg: -7\nf: 1.5\nbig: 1e+21\nt: true\n\"no\": false\nz: null\n");
    assert_contains(out, "l:\n- 1\n- two\n-   three: 3.25\n");
    assert_contains(out, "keep_unencrypted:\n    a: b\n");
    assert_contains(out, "---\nsecond: doc\n");
    free(out);
    co_sops_keys_free(keys);
    free(data);
    oracle_dispose(&o);
}

static void test_sops__independently_encrypted_rules(void **state)
{
    (void)state;
    oracle o;
    if (!oracle_setup(&o)) {
        oracle_dispose(&o);
        fail_msg("the independent encrypter cannot run: tests/oracle/build.sh sopsgen, age-keygen "
                 "and gpg are needed (make deps installs them)");
        return;
    }
    co_sops_keys *keys = oracle_keys(&o, true, false, false);
    static const char *const rules[] = {
        "\"rule\":{\"unencrypted_regex\":\"^pub\"}",
        "\"rule\":{\"encrypted_suffix\":\"_secret\"}",
        "\"rule\":{\"unencrypted_suffix\":\"_plain\"}",
        "\"rule\":{\"encrypted_suffix\":\"_secret\"},\"mac_only_encrypted\":true",
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(rules); i++) {
        char *req = co_xasprintf("{\"format\":\"yaml\",\"tree\":{\"pub\":\"open\","
                                 "\"x_plain\":\"seen\",\"a_secret\":\"hidden\",\"other\":{\"deep\":"
                                 "\"v\"}},%s,\"groups\":[[{\"age\":\"@0\"}]],"
                                 "\"lastmodified\":\"2024-01-02T03:04:05Z\"}",
                                 rules[i]);
        size_t len = 0;
        char *data = oracle_generate(&o, req, &len);
        char *out = decrypt_mem_ok(keys, "r.yaml", data, len);
        assert_string_equal(out,
                            "pub: open\nx_plain: seen\na_secret: hidden\nother:\n    deep: v\n");
        free(out);
        /* Changing a plain value: caught by the MAC, except with mac_only_encrypted. */
        if (i == 2) {
            replace_once(data, "x_plain: \"seen\"", "x_plain: \"seem\"");
        } else {
            replace_once(data, "pub: \"open\"", "pub: \"opem\"");
        }
        int rc = 0;
        out = decrypt_mem(keys, "r.yaml", data, len, &rc);
        if (i == 3) {
            assert_non_null(out);
            assert_contains(out, "pub: opem\n");
        } else {
            assert_null(out);
            assert_int_equal(rc, CO_EAUTH);
            assert_contains(co_error_last(), "MAC mismatch");
        }
        free(out);
        free(data);
        free(req);
    }
    co_sops_keys_free(keys);
    oracle_dispose(&o);
}

static void test_sops__independently_encrypted_formats(void **state)
{
    (void)state;
    oracle o;
    if (!oracle_setup(&o)) {
        oracle_dispose(&o);
        fail_msg("the independent encrypter cannot run: tests/oracle/build.sh sopsgen, age-keygen "
                 "and gpg are needed (make deps installs them)");
        return;
    }
    co_sops_keys *keys = oracle_keys(&o, false, true, false);
    size_t len = 0;
    char *data = oracle_generate(
        &o,
        "{\"format\":\"json\",\"tree\":{\"s\":\"x<y>&\\\"z\\\"\",\"i\":-3,\"f\":0.1,\"b\":false,"
        "\"a\":[{\"k\":\"v\"}],\"u\":\"\\u00e9\"},\"groups\":[[{\"age\":\"@1\"}]],"
        "\"lastmodified\":\"2024-01-02T03:04:05Z\"}",
        &len);
    char *out = decrypt_mem_ok(keys, "v.json", data, len);
    struct json_object *obj = json_tokener_parse(out), *v = NULL;
    assert_non_null(obj);
    assert_true(json_object_object_get_ex(obj, "s", &v));
    assert_string_equal(json_object_get_string(v), "x<y>&\"z\"");
    assert_true(json_object_object_get_ex(obj, "i", &v));
    assert_int_equal(json_object_get_int(v), -3);
    assert_true(json_object_object_get_ex(obj, "f", &v));
    assert_true(json_object_get_double(v) == 0.1);
    assert_true(json_object_object_get_ex(obj, "u", &v));
    assert_string_equal(json_object_get_string(v), "é");
    json_object_put(obj);
    free(out);
    /* The same file read as YAML output (the name decides the output format). */
    out = decrypt_mem_ok(keys, "v.yaml", data, len);
    assert_contains(out, "s: x<y>&\"z\"\ni: -3\nf: 0.1\nb: false\n");
    free(out);
    free(data);

    data = oracle_generate(
        &o,
        "{\"format\":\"dotenv\",\"tree\":{\"USER\":\"admin\",\"CERT\":"
        "\"-----BEGIN-----\\nabc\\n-----END-----\"},\"groups\":[[{\"age\":\"@1\"}]],"
        "\"lastmodified\":\"2024-01-02T03:04:05+02:00\"}",
        &len);
    out = decrypt_mem_ok(keys, "app.env", data, len);
    assert_string_equal(out, "USER=admin\nCERT=-----BEGIN-----\\nabc\\n-----END-----\n");
    free(out);
    free(data);

    data = oracle_generate(&o,
                           "{\"format\":\"ini\",\"tree\":{\"db\":{\"user\":\"u\",\"pass\":\"p w\"},"
                           "\"web\":{\"port\":\"8080\"}},\"groups\":[[{\"age\":\"@1\"}]],"
                           "\"lastmodified\":\"2024-01-02T03:04:05Z\"}",
                           &len);
    out = decrypt_mem_ok(keys, "app.ini", data, len);
    assert_string_equal(out, "[db]\nuser = u\npass = p w\n\n[web]\nport = 8080\n");
    free(out);
    free(data);

    data = oracle_generate(
        &o,
        "{\"format\":\"binary\",\"tree\":{\"data\":\"raw\\u0001bytes\\n\"},"
        "\"groups\":[[{\"age\":\"@1\"}]],\"lastmodified\":\"2024-01-02T03:04:05Z\"}",
        &len);
    out = decrypt_mem_ok(keys, "blob.bin", data, len);
    assert_string_equal(out, "raw\001bytes\n");
    free(out);
    free(data);
    co_sops_keys_free(keys);
    oracle_dispose(&o);
}

static void test_sops__key_groups_and_shamir_threshold(void **state)
{
    (void)state;
    oracle o;
    if (!oracle_setup(&o)) {
        oracle_dispose(&o);
        fail_msg("the independent encrypter cannot run: tests/oracle/build.sh sopsgen, age-keygen "
                 "and gpg are needed (make deps installs them)");
        return;
    }
    size_t len = 0;
    char *data = oracle_generate(
        &o,
        "{\"format\":\"yaml\",\"tree\":{\"secret\":\"shared\"},\"groups\":[[{\"age\":\"@0\"}],"
        "[{\"age\":\"@1\"}],[{\"pgp\":\"35C1A64CD7FC0AB6EB66756B2445463C3234ECE1\"}]],"
        "\"threshold\":2,\"lastmodified\":\"2024-01-02T03:04:05Z\"}",
        &len);
    static const struct {
        bool k0, k1, pgp, ok;
    } sets[] = {
        {true, true, false, true}, {true, false, true, true},   {false, true, true, true},
        {true, true, true, true},  {true, false, false, false}, {false, false, true, false},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(sets); i++) {
        co_sops_keys *keys = oracle_keys(&o, sets[i].k0, sets[i].k1, sets[i].pgp);
        int rc = 0;
        char *out = decrypt_mem(keys, "s.yaml", data, len, &rc);
        if (sets[i].ok) {
            if (!out) {
                fail_msg("key set %zu: %s", i, co_error_last());
            }
            assert_string_equal(out, "secret: shared\n");
        } else {
            assert_null(out);
            assert_int_equal(rc, CO_EAUTH);
            assert_contains(co_error_last(), "1 of 3 key groups decrypted, 2 needed");
        }
        free(out);
        co_sops_keys_free(keys);
    }
    free(data);
    oracle_dispose(&o);
}

static void test_sops__age_cli_files(void **state)
{
    (void)state;
    oracle o;
    if (!oracle_setup(&o)) {
        oracle_dispose(&o);
        fail_msg("the independent encrypter cannot run: tests/oracle/build.sh sopsgen, age-keygen "
                 "and gpg are needed (make deps installs them)");
        return;
    }
    co_sops__age_id *ids = NULL;
    size_t nids = 0;
    size_t klen = 0;
    char *ktext = co_test_read_file(o.key_path[0], &klen);
    assert_co_pass(co_sops__age_parse_identities(&ids, &nids, ktext, klen));
    assert_int_equal(nids, 1);
    free(ktext);
    static const size_t sizes[] = {0, 1, 47, 48, 65535, 65536, 65537, 2 * 65536 + 7};
    char *plain_path = co_xasprintf("%s/plain", o.dir), *enc_path = co_xasprintf("%s/enc", o.dir);
    for (size_t i = 0; i < CO_ARRAY_SIZE(sizes); i++) {
        unsigned char *plain = co_xmalloc(sizes[i] + 1);
        for (size_t j = 0; j < sizes[i]; j++) {
            plain[j] = (unsigned char)(j * 131 + i);
        }
        co_test_write_file(plain_path, plain, sizes[i]);
        for (int armor = 0; armor < 2; armor++) {
            char *argv[] = {(char *)"age",
                            (char *)"-r",
                            o.recipient[0],
                            (char *)"-o",
                            enc_path,
                            armor ? (char *)"-a" : plain_path,
                            armor ? plain_path : NULL,
                            NULL};
            assert_int_equal(run_cmd(argv, NULL, NULL, NULL), 0);
            size_t elen = 0;
            char *enc = co_test_read_file(enc_path, &elen);
            co_buf out = CO_BUF_INIT(CO_MAX_AGE_PAYLOAD);
            assert_co_pass(co_sops__age_decrypt(&out, ids, nids, enc, elen));
            assert_int_equal(out.len, sizes[i]);
            if (sizes[i]) {
                assert_memory_equal(out.ptr, plain, sizes[i]);
            }
            co_buf_dispose(&out);
            if (!armor && elen > 200) {
                /* A flipped payload byte, a flipped header byte. */
                enc[elen - 20] ^= 1;
                assert_co_fail_with(CO_EAUTH, co_sops__age_decrypt(&out, ids, nids, enc, elen));
                assert_null(out.ptr);
                enc[elen - 20] ^= 1;
                char *mac_line = strstr(enc, "\n--- ");
                assert_non_null(mac_line);
                mac_line[6] = mac_line[6] == 'A' ? 'B' : 'A';
                assert_int_not_equal(co_sops__age_decrypt(&out, ids, nids, enc, elen), 0);
                assert_null(out.ptr);
            }
            free(enc);
        }
        free(plain);
    }
    /* SSH recipients (age -R with a key from ssh-keygen), ed25519 and RSA. */
    static const char *const types[][2] = {{"ed25519", NULL}, {"rsa", "2048"}};
    for (size_t t = 0; t < CO_ARRAY_SIZE(types); t++) {
        char *ssh_key = co_xasprintf("%s/id_%s", o.dir, types[t][0]);
        char *kargv[] = {(char *)"ssh-keygen", (char *)"-q", (char *)"-t",
                         (char *)types[t][0],  (char *)"-N", (char *)"",
                         (char *)"-f",         ssh_key,      types[t][1] ? (char *)"-b" : NULL,
                         (char *)types[t][1],  NULL};
        assert_int_equal(run_cmd(kargv, NULL, NULL, NULL), 0);
        char *pub = co_xasprintf("%s.pub", ssh_key);
        char *argv[] = {(char *)"age", (char *)"-R", pub,        (char *)"-a",
                        (char *)"-o",  enc_path,     plain_path, NULL};
        assert_int_equal(run_cmd(argv, NULL, NULL, NULL), 0);
        size_t elen = 0, slen = 0, plen = 0;
        char *enc = co_test_read_file(enc_path, &elen);
        char *plain = co_test_read_file(plain_path, &plen);
        co_buf out = CO_BUF_INIT(CO_MAX_AGE_PAYLOAD);
        /* Only the X25519 identity: no match. */
        assert_co_fail_with(CO_EAUTH, co_sops__age_decrypt(&out, ids, nids, enc, elen));
        co_sops__age_id *ssh_ids = NULL;
        size_t nssh = 0;
        char *key_text = co_test_read_file(ssh_key, &slen);
        assert_co_pass(co_sops__age_parse_identities(&ssh_ids, &nssh, key_text, slen));
        assert_co_pass(co_sops__age_decrypt(&out, ssh_ids, nssh, enc, elen));
        assert_int_equal(out.len, plen);
        assert_memory_equal(out.ptr, plain, plen);
        co_buf_dispose(&out);
        /* Another key of the same type does not match. */
        co_sops__age_ids_free(ssh_ids, nssh);
        char *other = co_xasprintf("%s/other_%s", o.dir, types[t][0]);
        char *oargv[] = {(char *)"ssh-keygen", (char *)"-q", (char *)"-t",
                         (char *)types[t][0],  (char *)"-N", (char *)"",
                         (char *)"-f",         other,        types[t][1] ? (char *)"-b" : NULL,
                         (char *)types[t][1],  NULL};
        assert_int_equal(run_cmd(oargv, NULL, NULL, NULL), 0);
        free(key_text);
        key_text = co_test_read_file(other, &slen);
        ssh_ids = NULL;
        nssh = 0;
        assert_co_pass(co_sops__age_parse_identities(&ssh_ids, &nssh, key_text, slen));
        assert_co_fail_with(CO_EAUTH, co_sops__age_decrypt(&out, ssh_ids, nssh, enc, elen));
        co_sops__age_ids_free(ssh_ids, nssh);
        /* A passphrase-protected key is refused clearly. */
        char *locked = co_xasprintf("%s/locked_%s", o.dir, types[t][0]);
        char *largv[] = {(char *)"ssh-keygen", (char *)"-q", (char *)"-t",
                         (char *)types[t][0],  (char *)"-N", (char *)"secret",
                         (char *)"-f",         locked,       types[t][1] ? (char *)"-b" : NULL,
                         (char *)types[t][1],  NULL};
        assert_int_equal(run_cmd(largv, NULL, NULL, NULL), 0);
        free(key_text);
        key_text = co_test_read_file(locked, &slen);
        ssh_ids = NULL;
        nssh = 0;
        assert_co_fail_with(CO_EUNSUPPORTED,
                            co_sops__age_parse_identities(&ssh_ids, &nssh, key_text, slen));
        assert_contains(co_error_last(), "passphrase");
        free(locked);
        free(other);
        free(key_text);
        free(plain);
        free(enc);
        free(pub);
        free(ssh_key);
    }
    free(plain_path);
    free(enc_path);
    co_sops__age_ids_free(ids, nids);
    oracle_dispose(&o);
}

static void test_sops__ssh_key_in_agekey_entry(void **state)
{
    (void)state;
    oracle o;
    if (!oracle_setup(&o)) {
        oracle_dispose(&o);
        fail_msg("the independent encrypter cannot run: tests/oracle/build.sh sopsgen, age-keygen "
                 "and gpg are needed (make deps installs them)");
        return;
    }
    char *ssh_key = co_xasprintf("%s/id_ed25519", o.dir);
    char *kargv[] = {(char *)"ssh-keygen", (char *)"-q", (char *)"-t", (char *)"ed25519",
                     (char *)"-N",         (char *)"",   (char *)"-C", (char *)"",
                     (char *)"-f",         ssh_key,      NULL};
    assert_int_equal(run_cmd(kargv, NULL, NULL, NULL), 0);
    char *pub_path = co_xasprintf("%s.pub", ssh_key);
    char *pub = co_test_read_file(pub_path, NULL);
    pub[strcspn(pub, "\n")] = '\0';
    while (strlen(pub) && pub[strlen(pub) - 1] == ' ') {
        pub[strlen(pub) - 1] = '\0';
    }
    char *req = co_xasprintf("{\"format\":\"yaml\",\"tree\":{\"stringData\":{\"k\":\"v\"}},"
                             "\"groups\":[[{\"age\":\"%s\"}]],"
                             "\"lastmodified\":\"2024-01-02T03:04:05Z\"}",
                             pub);
    size_t len = 0, klen = 0;
    char *data = oracle_generate(&o, req, &len);
    co_sops_keys *keys = NULL;
    assert_co_pass(co_sops_keys_new(&keys));
    char *key_text = co_test_read_file(ssh_key, &klen);
    assert_co_pass(co_sops_keys_add(keys, "id_ed25519.agekey", key_text, klen));
    assert_int_equal(co_sops_keys_count(keys), 1);
    char *out = decrypt_mem_ok(keys, "s.yaml", data, len);
    assert_string_equal(out, "stringData:\n    k: v\n");
    free(out);
    co_sops_keys_free(keys);
    free(key_text);
    free(data);
    free(req);
    free(pub);
    free(pub_path);
    free(ssh_key);
    oracle_dispose(&o);
}

/* ---- primitives ---------------------------------------------------------------------------- */

static void test_sops__gf256_is_the_aes_field(void **state)
{
    (void)state;
    /* FIPS-197 section 4.2: {57}.{83} = {c1}, {57}.{13} = {fe}; {53} and {ca} are inverses. */
    assert_int_equal(co_sops__gf_mul(0x57, 0x83), 0xc1);
    assert_int_equal(co_sops__gf_mul(0x57, 0x13), 0xfe);
    assert_int_equal(co_sops__gf_mul(0x53, 0xca), 0x01);
    for (unsigned a = 0; a < 256; a++) {
        assert_int_equal(co_sops__gf_mul((uint8_t)a, 1), a);
        assert_int_equal(co_sops__gf_mul((uint8_t)a, 0), 0);
    }
}

/* Evaluates a polynomial with the given coefficients (constant first) at x. */
static uint8_t poly_eval(const uint8_t *coef, size_t n, uint8_t x)
{
    uint8_t acc = 0;
    for (size_t i = n; i-- > 0;) {
        acc = (uint8_t)(co_sops__gf_mul(acc, x) ^ coef[i]);
    }
    return acc;
}

static void test_sops__shamir_recombines_any_threshold_subset(void **state)
{
    (void)state;
    const unsigned char secret[4] = {0xde, 0xad, 0xbe, 0xef};
    /* Threshold 3: a degree-2 polynomial per byte; shares at x = 7, 19, 200, 3. */
    const uint8_t xs[4] = {7, 19, 200, 3};
    unsigned char shares[4][5];
    for (size_t k = 0; k < 4; k++) {
        uint8_t coef[3] = {secret[k], (uint8_t)(0x31 * (k + 1)), (uint8_t)(0x5b + k)};
        for (size_t s = 0; s < 4; s++) {
            shares[s][k] = poly_eval(coef, 3, xs[s]);
        }
    }
    for (size_t s = 0; s < 4; s++) {
        shares[s][4] = xs[s];
    }
    const unsigned char *subset[4] = {shares[3], shares[0], shares[2], shares[1]};
    for (size_t n = 3; n <= 4; n++) {
        unsigned char *out = NULL;
        size_t out_len = 0;
        assert_co_pass(co_sops__shamir_combine(&out, &out_len, subset, n, 5));
        assert_int_equal(out_len, 4);
        assert_memory_equal(out, secret, 4);
        free(out);
    }
    /* Two shares of a threshold-3 secret give something else. */
    unsigned char *out = NULL;
    size_t out_len = 0;
    assert_co_pass(co_sops__shamir_combine(&out, &out_len, subset, 2, 5));
    assert_memory_not_equal(out, secret, 4);
    free(out);
    assert_co_fail_with(CO_EINVALID, co_sops__shamir_combine(&out, &out_len, subset, 1, 5));
    const unsigned char *dup[2] = {shares[0], shares[0]};
    assert_co_fail_with(CO_EINVALID, co_sops__shamir_combine(&out, &out_len, dup, 2, 5));
}

static void test_sops__float_formatting_matches_go(void **state)
{
    (void)state;
    /* Outputs of Go's strconv.FormatFloat(v, 'f', -1, 64). */
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {0.1, "0.1"},
        {25.4, "25.4"},
        {1234568000, "1234568000"},
        {1e21, "1000000000000000000000"},
        {1e-7, "0.0000001"},
        {-2.5, "-2.5"},
        {3, "3"},
        {0.3333333333333333, "0.3333333333333333"},
        {-0.0, "-0"},
        {123456789.125, "123456789.125"},
    };
    char buf[400];
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        co_sops__format_float(buf, sizeof(buf), cases[i].v);
        assert_string_equal(buf, cases[i].want);
    }
}

static void test_sops__base64_and_bech32(void **state)
{
    (void)state;
    unsigned char *out = NULL;
    size_t len = 0;
    assert_co_pass(co_sops__b64_decode(&out, &len, "aGVsbG8=", 8, CO_SOPS__B64_PADDED));
    assert_int_equal(len, 5);
    assert_memory_equal(out, "hello", 5);
    free(out);
    assert_int_equal(co_sops__b64_decode(&out, &len, "aGVsbG8", 7, CO_SOPS__B64_PADDED),
                     CO_EINVALID);
    assert_co_pass(co_sops__b64_decode(&out, &len, "aGVsbG8", 7, CO_SOPS__B64_STRICT));
    free(out);
    /* Non-zero trailing bits are not canonical. */
    assert_int_equal(co_sops__b64_decode(&out, &len, "aGVsbG9", 7, CO_SOPS__B64_STRICT),
                     CO_EINVALID);

    char *hrp = NULL;
    const char *id = "AGE-SECRET-KEY-1RH87A5Z54ZGUR9S0AS3R6WHFSEFNPLYMAKF5Z2CEU7R06VRJ0A3Q7242AM";
    assert_co_pass(co_sops__bech32_decode(&hrp, &out, &len, id, strlen(id)));
    assert_string_equal(hrp, "AGE-SECRET-KEY-");
    assert_int_equal(len, 32);
    free(hrp);
    free(out);
    char *bad = co_xstrdup(id);
    bad[20] = bad[20] == 'Q' ? 'P' : 'Q';
    assert_co_fail_with(CO_EINVALID, co_sops__bech32_decode(&hrp, &out, &len, bad, strlen(bad)));
    free(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sops__flux_age_yaml, setup_age, teardown),
        cmocka_unit_test_setup_teardown(test_sops__flux_dotenv_and_binary, setup_age, teardown),
        cmocka_unit_test_setup_teardown(test_sops__flux_secret_inside_secret, setup_age, teardown),
        cmocka_unit_test_setup_teardown(test_sops__flux_pgp, setup_all, teardown),
        cmocka_unit_test_setup_teardown(test_sops__sops_example_yaml, setup_all, teardown),
        cmocka_unit_test_setup_teardown(test_sops__sops_example_json_ini_binary, setup_all,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sops__sops_functional_formats, setup_all, teardown),
        cmocka_unit_test_setup_teardown(test_sops__no_mac_is_rejected, setup_all, teardown),
        cmocka_unit_test_setup_teardown(test_sops__tampered_files_fail, setup_all, teardown),
        cmocka_unit_test(test_sops__key_problems),
        cmocka_unit_test(test_sops__keys_from_secret_object),
        cmocka_unit_test(test_sops__detect_and_output_format),
        cmocka_unit_test_setup_teardown(test_sops__decrypts_a_tree_in_place, setup_age, teardown),
        cmocka_unit_test(test_sops__gnupg_home_is_private_and_removed),
        cmocka_unit_test(test_sops__independently_encrypted_yaml),
        cmocka_unit_test(test_sops__independently_encrypted_rules),
        cmocka_unit_test(test_sops__independently_encrypted_formats),
        cmocka_unit_test(test_sops__key_groups_and_shamir_threshold),
        cmocka_unit_test(test_sops__age_cli_files),
        cmocka_unit_test(test_sops__ssh_key_in_agekey_entry),
        cmocka_unit_test(test_sops__gf256_is_the_aes_field),
        cmocka_unit_test(test_sops__shamir_recombines_any_threshold_subset),
        cmocka_unit_test(test_sops__float_formatting_matches_go),
        cmocka_unit_test(test_sops__base64_and_bech32),
    };
    return cmocka_run_group_tests_name("sops", tests, NULL, NULL);
}
