/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for SOPS decryption against files encrypted at test time, independently of this
 * code: tests/oracle/sopsgen (Go, built from Debian's golang-go in GOPATH mode, standard
 * library only) encrypts a given plaintext tree the way sops does, with Go's AES-GCM and
 * SHA-512, wraps the data key (or Shamir shares of it, split with its own GF(2^8) code) with
 * the real `age` and `gpg` command-line tools, and writes YAML, JSON, dotenv, INI or binary
 * files; the keys are made for each run by `age-keygen` and `gpg` (tests/support/sopsgen.sh).
 * The expected plaintext is the tree given to it. Files made directly by the `age` command line
 * check the age decryptor on its own. age, gpg and go come from tests/env/deps.sh.
 *
 * Files written by the real sops (Flux's and sops' own test data) are decrypted in the
 * conformance lane, tests/conformance/test_sops_files.c.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/digest.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/render/sops.h"
#include "shared/src/render/sops/sops_int.h"
#include "tests/support/test_sopsgen.h"
#include "tests/support/test_support.h"

/* The keys of every test, made once for the binary (RSA key generation takes seconds). */
static test_sopsgen gen;

#define LASTMOD "\"lastmodified\":\"2024-01-02T03:04:05Z\""
#define AGE0    "{\"age\":\"@0\"}"
#define AGE1    "{\"age\":\"@1\"}"
#define PGP     "{\"pgp\":\"@pgp\"}"

/* A Kubernetes Secret encrypted as Flux users encrypt them (only data and stringData), with
 * stringData.key = @p value, for the key group @p keys. */
#define SECRET_REQ(name, value, keys)                                                              \
    "{\"format\":\"yaml\",\"tree\":{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"       \
    "{\"name\":\"" name "\",\"namespace\":\"default\"},\"type\":\"Opaque\",\"stringData\":"        \
    "{\"key\":\"" value "\"}},\"rule\":{\"encrypted_regex\":\"^(data|stringData)$\"},"             \
    "\"groups\":[[" keys "]]," LASTMOD "}"

static int group_setup(void **state)
{
    (void)state;
    test_sopsgen_init(&gen);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    test_sopsgen_dispose(&gen);
    return 0;
}

/* The file sopsgen writes for @p request (see tests/support/test_sopsgen.h). */
static char *gen_file(const char *request, size_t *len)
{
    return test_sopsgen_encrypt(&gen, request, len);
}

static void add_key_file(co_sops_keys *keys, const char *path, const char *name)
{
    size_t len = 0;
    char *data = test_sopsgen_read(path, &len);
    assert_co_pass(co_sops_keys_add(keys, name, data, len));
    free(data);
}

/* A key set with the first and second age identity and the OpenPGP key, as chosen. */
static co_sops_keys *gen_keys(bool k0, bool k1, bool pgp)
{
    co_sops_keys *keys = NULL;
    keys = co_sops_keys_new();
    if (k0) {
        add_key_file(keys, gen.age_key[0], "a.agekey");
    }
    if (k1) {
        add_key_file(keys, gen.age_key[1], "b.agekey");
    }
    if (pgp) {
        add_key_file(keys, gen.pgp_key, "pgp.asc");
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

/* Encrypts @p request, decrypts the file as @p name and fails unless the plaintext is exactly
 * @p want. */
static void assert_generated_decrypts_to(co_sops_keys *keys,
                                         const char *request,
                                         const char *name,
                                         const char *want)
{
    size_t len = 0;
    char *data = gen_file(request, &len);
    char *out = decrypt_mem_ok(keys, name, data, len);
    assert_string_equal(out, want);
    free(out);
    free(data);
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

/* A copy of @p s with the first @p from replaced by @p to (any lengths). */
static char *replaced(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    if (!at) {
        fail_msg("\"%s\" does not contain \"%s\"", s, from);
    }
    return co_xasprintf("%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
}

/* The character after the first @p marker in @p s, changed to another base64 character. */
static void flip_after(char *s, const char *marker)
{
    char *at = strstr(s, marker);
    assert_non_null(at);
    at += strlen(marker);
    *at = *at == 'A' ? 'B' : 'A';
}

/* ---- files as users encrypt them ------------------------------------------------------------- */

static void test_sops__age_yaml_secret(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(true, true, false);
    size_t len = 0;
    char *data = gen_file(SECRET_REQ("age", "value", AGE0), &len);
    char *out = decrypt_mem_ok(keys, "age.yaml", data, len);
    assert_contains(out, "stringData:\n    key: value\n");
    assert_contains(out, "name: age\n");
    assert_null(strstr(out, "sops"));
    assert_null(strstr(out, "ENC["));
    free(out);
    free(data);
    /* The other identity of the set: the one that fits is found. */
    data = gen_file(SECRET_REQ("global", "global-value", AGE1), &len);
    out = decrypt_mem_ok(keys, "global.yaml", data, len);
    assert_contains(out, "key: global-value\n");
    assert_contains(out, "namespace: default\n");
    free(out);
    free(data);
    co_sops_keys_free(keys);
}

static void test_sops__dotenv_and_binary(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(true, false, false);
    assert_generated_decrypts_to(
        keys,
        "{\"format\":\"dotenv\",\"tree\":{\"key\":\"value\"},\"groups\":[[" AGE0 "]]," LASTMOD "}",
        "env.env", "key=value\n");
    /* A JSON document with a single data key, named .txt: the binary store. */
    assert_generated_decrypts_to(
        keys,
        "{\"format\":\"binary\",\"tree\":{\"data\":\"value\"},\"groups\":[[" AGE0 "]]," LASTMOD "}",
        "file.txt", "value");
    co_sops_keys_free(keys);
}

static void test_sops__secret_inside_secret(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(true, false, false);
    size_t len = 0;
    char *inner_file = gen_file(
        "{\"format\":\"binary\",\"tree\":{\"data\":\"value\"},\"groups\":[[" AGE0 "]]," LASTMOD "}",
        &len);
    /* A Secret whose data.key is base64 of a sops binary-format document. */
    co_buf b64 = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_base64_encode_buf(&b64, inner_file, len, CO_BASE64_STD));
    char *yaml = co_xasprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: inside\n"
                              "data:\n  key: %s\n",
                              co_buf_cstr(&b64));
    char *b = strstr(yaml, "key: ") + 5;
    unsigned char *inner = NULL;
    size_t inner_len = 0;
    assert_co_pass(co_base64_decode_alloc(&inner, &inner_len, b, strcspn(b, "\n"), CO_BASE64_STD));
    assert_int_equal(co_sops_detect(inner, inner_len), CO_SOPS_FORMAT_JSON);
    co_buf out = CO_BUF_INIT(1024);
    assert_co_pass(co_sops_decrypt_file(&out, keys, "key", inner, inner_len));
    assert_string_equal(co_buf_cstr(&out), "value");
    co_buf_dispose(&out);
    free(inner);
    free(yaml);
    co_buf_dispose(&b64);
    free(inner_file);
    co_sops_keys_free(keys);
}

static void test_sops__pgp_yaml_secret(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(false, false, true);
    size_t len = 0;
    char *data = gen_file(SECRET_REQ("pgp", "value", PGP), &len);
    char *out = decrypt_mem_ok(keys, "pgp.yaml", data, len);
    assert_contains(out, "stringData:\n    key: value\n");
    free(out);
    free(data);
    co_sops_keys_free(keys);
}

/* Nested values of every kind, encrypted for the OpenPGP key alone, as sops' example files. */
#define EXAMPLE_TREE                                                                               \
    "{\"token\":\"s3cr3t-t0ken\",\"app\":{\"db\":{\"user\":\"alice\",\"password\":"                \
    "\"pa55word\"},\"key\":\"-----BEGIN PRIVATE KEY-----\\nc29tZSBrZXkgbWF0ZXJpYWw=\\n"            \
    "-----END PRIVATE KEY-----\\n\"},\"number\":1.234568e+09,\"users\":[\"reader\",\"writer\"],"   \
    "\"flags\":[true,false],\"notes_unencrypted\":[\"stays readable\"],\"public_unencrypted\":"    \
    "{\"all\":\"readable below here\"},\"colon\":\"value: with a colon\"}"

static void test_sops__pgp_nested_yaml(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(false, false, true);
    size_t len = 0;
    char *data = gen_file(
        "{\"format\":\"yaml\",\"tree\":" EXAMPLE_TREE ",\"groups\":[[" PGP "]]," LASTMOD "}", &len);
    /* the _unencrypted keys stay readable in the file */
    assert_contains(data, "\"stays readable\"");
    char *out = decrypt_mem_ok(keys, "example.yaml", data, len);
    static const char *const wants[] = {
        "token: s3cr3t-t0ken\n",
        "        user: alice\n        password: pa55word\n",
        "    key: |\n        -----BEGIN PRIVATE KEY-----\n",
        "number: 1.234568e+09\n",
        "users:\n- reader\n- writer\n",
        "flags:\n- true\n- false\n",
        "notes_unencrypted:\n- stays readable\n",
        "    all: readable below here\n",
        "colon: 'value: with a colon'\n",
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(wants); i++) {
        assert_contains(out, wants[i]);
    }
    free(out);
    free(data);
    co_sops_keys_free(keys);
}

static void test_sops__pgp_json_ini_binary(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(false, false, true);
    size_t len = 0;
    char *data = gen_file("{\"format\":\"json\",\"tree\":{\"name\":\"Ada\",\"team\":\"ops\","
                          "\"ratio\":25.4,\"address\":{\"city\":\"Zurich\",\"postalCode\":"
                          "\"8000-12\"},\"phones\":[{\"type\":\"work\",\"number\":\"+41 1 234\"}],"
                          "\"empty\":\"\"},\"groups\":[[" PGP "]]," LASTMOD "}",
                          &len);
    char *out = decrypt_mem_ok(keys, "example.json", data, len);
    struct json_object *o = json_tokener_parse(out);
    assert_non_null(o);
    struct json_object *v = NULL, *addr = NULL;
    assert_true(json_object_object_get_ex(o, "name", &v));
    assert_string_equal(json_object_get_string(v), "Ada");
    assert_true(json_object_object_get_ex(o, "ratio", &v));
    assert_true(json_object_get_double(v) == 25.4);
    assert_true(json_object_object_get_ex(o, "address", &addr));
    assert_true(json_object_object_get_ex(addr, "postalCode", &v));
    assert_string_equal(json_object_get_string(v), "8000-12");
    assert_true(json_object_object_get_ex(o, "empty", &v));
    assert_string_equal(json_object_get_string(v), "");
    json_object_put(o);
    free(out);
    free(data);

    assert_generated_decrypts_to(
        keys,
        "{\"format\":\"ini\",\"tree\":{\"person\":{\"name\":\"Ada\",\"team\":\"ops\","
        "\"ratio\":\"25.4\"},\"open part\":{\"motd_unencrypted\":\"hello all!\"}},"
        "\"groups\":[[" PGP "]]," LASTMOD "}",
        "settings.ini",
        "[person]\nname = Ada\nteam = ops\nratio = 25.4\n\n"
        "[open part]\nmotd_unencrypted = hello all!\n");

    assert_generated_decrypts_to(keys,
                                 "{\"format\":\"binary\",\"tree\":{\"data\":\"line one\\n"
                                 "line two\\n\"},\"groups\":[[" PGP "]]," LASTMOD "}",
                                 "notes.txt", "line one\nline two\n");
    co_sops_keys_free(keys);
}

/* sops writes a long INI value either escaped on one line or between """ over several lines. */
static void test_sops__ini_multiline_data_key(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(false, false, true);
    size_t len = 0;
    char *data =
        gen_file("{\"format\":\"ini\",\"tree\":{\"foo\":{\"bar\":\"baz\"}},\"groups\":[[" PGP
                 "]]," LASTMOD "}",
                 &len);
    char *out = decrypt_mem_ok(keys, "format.enc.ini", data, len);
    assert_string_equal(out, "[foo]\nbar = baz\n");
    free(out);
    /* pgp__list_0__map_enc = -----BEGIN...\n...  ->  """-----BEGIN...<newlines>...""" */
    const char *key = "pgp__list_0__map_enc = ";
    char *at = strstr(data, key);
    assert_non_null(at);
    at += strlen(key);
    size_t vlen = strcspn(at, "\n");
    co_buf multi = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_put(&multi, data, (size_t)(at - data)));
    assert_co_pass(co_buf_puts(&multi, "\"\"\""));
    for (size_t i = 0; i < vlen; i++) {
        if (at[i] == '\\' && at[i + 1] == 'n') {
            assert_co_pass(co_buf_putc(&multi, '\n'));
            i++;
        } else {
            assert_co_pass(co_buf_putc(&multi, at[i]));
        }
    }
    /* the armour's last newline is not part of the quoted value */
    if (multi.len && multi.ptr[multi.len - 1] == '\n') {
        multi.len--;
    }
    assert_co_pass(co_buf_puts(&multi, "\"\"\""));
    assert_co_pass(co_buf_puts(&multi, at + vlen));
    assert_non_null(strstr(co_buf_cstr(&multi), "\"\"\"-----BEGIN PGP MESSAGE-----\n\n"));
    out = decrypt_mem_ok(keys, "format-2.enc.ini", multi.ptr, multi.len);
    assert_string_equal(out, "[foo]\nbar = baz\n");
    free(out);
    co_buf_dispose(&multi);
    free(data);
    co_sops_keys_free(keys);
}

/* Comments take no part in the MAC and are dropped, encrypted or not. */
static void test_sops__comments_are_dropped(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(true, false, false);
    size_t len = 0;
    char *data = gen_file("{\"format\":\"yaml\",\"tree\":{\"lorem\":\"ipsum\",\"dolor\":\"sit\"},"
                          "\"groups\":[[" AGE0 "]]," LASTMOD "}",
                          &len);
    char *plain = replaced(data, "dolor:", "# this-is-a-comment\ndolor:");
    char *with = co_xasprintf("# first comment in file\n%s", plain);
    char *out = decrypt_mem_ok(keys, "comments.yaml", with, strlen(with));
    assert_string_equal(out, "lorem: ipsum\ndolor: sit\n");
    free(out);
    free(with);
    /* sops' encrypted comments: an envelope of type comment */
    char *enc = replaced(data, "dolor:",
                         "#ENC[AES256_GCM,data:Y29tbWVudA==,iv:aXZpdml2aXZpdml2aXZpdml2aXZpdml2aXZp"
                         "dml2aXY=,tag:dGFndGFndGFndGFndGFnIQ==,type:comment]\ndolor:");
    out = decrypt_mem_ok(keys, "comments.enc.yaml", enc, strlen(enc));
    assert_string_equal(out, "lorem: ipsum\ndolor: sit\n");
    free(out);
    free(enc);
    free(plain);
    free(data);
    co_sops_keys_free(keys);
}

static void test_sops__no_mac_is_rejected(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(true, false, false);
    size_t len = 0;
    char *data = gen_file("{\"format\":\"yaml\",\"tree\":{\"foo\":\"bar\"},\"groups\":[[" AGE0
                          "]]," LASTMOD "}",
                          &len);
    char *mac = strstr(data, "    mac: ENC[");
    assert_non_null(mac);
    memmove(mac, mac + strcspn(mac, "\n") + 1, strlen(mac + strcspn(mac, "\n") + 1) + 1);
    len = strlen(data);
    /* Without a MAC the file carries no marker, so by name it passes through unchanged... */
    co_buf out = CO_BUF_INIT(CO_MAX_SOPS_FILE);
    assert_co_pass(co_sops_decrypt_file(&out, keys, "no_mac.yaml", data, len));
    assert_int_equal(out.len, len);
    co_buf_reset(&out);
    /* ...and read as sops YAML it is refused. */
    assert_co_fail_with(
        CO_EAUTH, co_sops_decrypt(&out, keys, CO_SOPS_FORMAT_YAML, CO_SOPS_FORMAT_YAML, data, len));
    assert_contains(co_error_last(), "no MAC");
    assert_int_equal(out.len, 0);
    co_buf_dispose(&out);
    free(data);
    co_sops_keys_free(keys);
}

/* Decrypting @p data, named @p name, with @p from replaced by @p to fails with @p code, a
 * message containing @p message and no output. */
static void expect_tamper_fails(co_sops_keys *keys,
                                const char *name,
                                const char *data,
                                const char *from,
                                const char *to,
                                int code,
                                const char *message)
{
    char *edited = replaced(data, from, to);
    co_buf out = CO_BUF_INIT(CO_MAX_SOPS_FILE);
    int rc = co_sops_decrypt_file(&out, keys, name, edited, strlen(edited));
    if (rc != code) {
        co_buf_dispose(&out);
        fail_msg("%s with %s -> %s: got %d, want %d (%s)", name, from, to, rc, code,
                 co_error_last());
    }
    assert_contains(co_error_last(), message);
    assert_int_equal(out.len, 0);
    assert_null(out.ptr);
    co_buf_dispose(&out);
    free(edited);
}

/* The text of the first "ENC[...]" after @p marker in @p s (a new string). */
static char *envelope_after(const char *s, const char *marker)
{
    const char *at = strstr(s, marker);
    assert_non_null(at);
    at = strstr(at, "ENC[");
    assert_non_null(at);
    return co_xstrndup(at, strcspn(at, "]") + 1);
}

static void test_sops__tampered_files_fail(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(true, false, true);
    size_t len = 0;
    char *secret = gen_file(SECRET_REQ("age", "value", AGE0), &len);
    /* A flipped ciphertext character: the value's tag fails. */
    char *edited = co_xstrdup(secret);
    flip_after(edited, "key: ENC[AES256_GCM,data:");
    char *value = envelope_after(secret, "key: ");
    char *flipped = envelope_after(edited, "key: ");
    expect_tamper_fails(keys, "age.yaml", secret, value, flipped, CO_EAUTH, "AES_GCM");
    free(flipped);
    /* An unencrypted value changed: only the MAC notices. */
    expect_tamper_fails(keys, "age.yaml", secret, "name: \"age\"", "name: \"agf\"", CO_EAUTH,
                        "MAC mismatch");
    /* The MAC itself, and the timestamp it is bound to. */
    free(edited);
    edited = co_xstrdup(secret);
    flip_after(edited, "mac: ENC[AES256_GCM,data:");
    char *mac = envelope_after(secret, "mac: ");
    char *bad_mac = envelope_after(edited, "mac: ");
    expect_tamper_fails(keys, "age.yaml", secret, mac, bad_mac, CO_EAUTH, "MAC");
    expect_tamper_fails(keys, "age.yaml", secret, "lastmodified: \"2024-01-02T03:04:05Z\"",
                        "lastmodified: \"2024-01-02T03:04:06Z\"", CO_EAUTH, "MAC");
    /* A plain value where an encrypted one belongs. */
    expect_tamper_fails(keys, "age.yaml", secret, value, "value", CO_EINVALID, "stringData.key");
    free(bad_mac);
    free(mac);
    free(value);
    free(edited);
    free(secret);

    /* A value removed, in an encrypted list and in a clear one. */
    char *nested = gen_file(
        "{\"format\":\"yaml\",\"tree\":" EXAMPLE_TREE ",\"groups\":[[" PGP "]]," LASTMOD "}", &len);
    expect_tamper_fails(keys, "example.yaml", nested, "stays readable", "stays readables", CO_EAUTH,
                        "MAC mismatch");
    char *item = envelope_after(strstr(nested, "users:"), "-");
    const char *line = strstr(nested, item);
    while (line[-1] != '\n') {
        line--;
    }
    char *whole_line = co_xstrndup(line, strcspn(line, "\n") + 1);
    expect_tamper_fails(keys, "example.yaml", nested, whole_line, "", CO_EAUTH, "MAC mismatch");
    free(whole_line);
    free(item);
    free(nested);

    /* Values moved between keys: the path is the additional data. */
    char *json = gen_file("{\"format\":\"json\",\"tree\":{\"user\":\"ada\",\"password\":"
                          "\"s3cr3t\"},\"groups\":[[" AGE0 "]]," LASTMOD "}",
                          &len);
    expect_tamper_fails(keys, "moved.json", json, "\"user\"", "\"pass\"", CO_EAUTH, "AES_GCM");
    free(json);

    /* The dotenv and INI readers see tampering too. */
    char *env = gen_file("{\"format\":\"dotenv\",\"tree\":{\"key\":\"value\"},\"groups\":[[" AGE0
                         "]]," LASTMOD "}",
                         &len);
    expect_tamper_fails(keys, "env.env", env, "key=ENC", "kez=ENC", CO_EAUTH, "AES_GCM");
    free(env);
    char *ini =
        gen_file("{\"format\":\"ini\",\"tree\":{\"person\":{\"name\":\"Ada\"},\"open part\":"
                 "{\"motd_unencrypted\":\"hello all!\"}},\"groups\":[[" PGP "]]," LASTMOD "}",
                 &len);
    expect_tamper_fails(keys, "settings.ini", ini, "hello all!", "hello all?", CO_EAUTH,
                        "MAC mismatch");
    free(ini);
    co_sops_keys_free(keys);
}

/* @p file (a sops YAML file from sopsgen, one age recipient) with the type of the X25519
 * stanza in its age header changed to @p type: what a file for a recipient of another kind
 * (post-quantum, plugin) looks like to a reader that holds only X25519 identities. */
static char *retype_age_stanza(const char *file, const char *type)
{
    static const char begin[] = "-----BEGIN AGE ENCRYPTED FILE-----\\n";
    static const char end[] = "-----END AGE ENCRYPTED FILE-----";
    const char *b = strstr(file, begin);
    assert_non_null(b);
    b += strlen(begin);
    const char *e = strstr(b, end);
    assert_non_null(e);
    /* the armour's lines, joined: "\n" in the YAML string separates them */
    co_buf b64 = CO_BUF_INIT(SIZE_MAX);
    for (const char *p = b; p < e; p++) {
        if (p[0] == '\\' && p[1] == 'n') {
            p++;
        } else {
            assert_co_pass(co_buf_putc(&b64, *p));
        }
    }
    unsigned char *bin = NULL;
    size_t bin_len = 0;
    assert_co_pass(co_base64_decode_alloc(&bin, &bin_len, b64.ptr, b64.len, CO_BASE64_STD));
    co_buf_dispose(&b64);
    /* the header is text, the payload after it binary */
    const char *stanza = memmem(bin, bin_len, "\n-> X25519 ", 11);
    assert_non_null(stanza);
    size_t head = (size_t)(stanza - (const char *)bin) + 4;
    co_buf raw = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_put(&raw, bin, head));
    assert_co_pass(co_buf_puts(&raw, type));
    assert_co_pass(
        co_buf_put(&raw, bin + head + strlen("X25519"), bin_len - head - strlen("X25519")));
    co_buf enc = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_base64_encode_buf(&enc, raw.ptr, raw.len, CO_BASE64_STD));
    co_buf out = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_put(&out, file, (size_t)(b - file)));
    for (size_t i = 0; i < enc.len; i += 64) {
        assert_co_pass(co_buf_put(&out, enc.ptr + i, enc.len - i < 64 ? enc.len - i : 64));
        assert_co_pass(co_buf_puts(&out, "\\n"));
    }
    assert_co_pass(co_buf_puts(&out, e));
    co_buf_dispose(&enc);
    co_buf_dispose(&raw);
    free(bin);
    return co_buf_take(&out, NULL);
}

static void test_sops__key_problems(void **state)
{
    (void)state;
    size_t len = 0;
    char *data = gen_file(SECRET_REQ("age", "value", AGE0), &len);
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
    co_sops_keys *wrong = gen_keys(false, true, false);
    assert_co_fail_with(CO_EAUTH, co_sops_decrypt_file(&out, wrong, "age.yaml", data, len));
    assert_contains(co_error_last(), "no identity matched");
    assert_int_equal(out.len, 0);
    co_sops_keys_free(wrong);

    /* Post-quantum age identities need ML-KEM, which OpenSSL 3.0 lacks; the message never
     * shows the key. */
    co_sops_keys *pq = NULL;
    pq = co_sops_keys_new();
    const char *pq_key =
        "# a post-quantum identity (its text only: it is never decoded)\n"
        "AGE-SECRET-KEY-PQ-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ\n";
    assert_co_fail_with(CO_EUNSUPPORTED,
                        co_sops_keys_add(pq, "age-pq.agekey", pq_key, strlen(pq_key)));
    assert_contains(co_error_last(), "age-pq.agekey");
    assert_null(strstr(co_error_last(), "AGE-SECRET-KEY"));
    add_key_file(pq, gen.age_key[0], "age.agekey");
    /* A file for a post-quantum recipient only: "not supported", not just "no match". */
    char *pq_file = retype_age_stanza(data, "mlkem768x25519");
    assert_co_fail_with(CO_EAUTH,
                        co_sops_decrypt_file(&out, pq, "age-pq.yaml", pq_file, strlen(pq_file)));
    assert_contains(co_error_last(), "not supported");
    free(pq_file);
    /* The same file with its stanza type unchanged decrypts: only the type made the difference. */
    char *same = retype_age_stanza(data, "X25519");
    assert_co_pass(co_sops_decrypt_file(&out, pq, "age.yaml", same, strlen(same)));
    assert_contains(co_buf_cstr(&out), "key: value");
    co_buf_reset(&out);
    free(same);
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

static void test_sops__keys_from_secret_object(void **state)
{
    (void)state;
    size_t len = 0;
    char *key = test_sopsgen_read(gen.age_key[0], &len);
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
    assert_generated_decrypts_to(
        keys,
        "{\"format\":\"binary\",\"tree\":{\"data\":\"value\"},\"groups\":[[" AGE0 "]]," LASTMOD "}",
        "file.txt", "value");
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

/* Writes a file sopsgen makes for @p request to @p dir/@p name. */
static void put_generated(const char *request, const char *dir, const char *name)
{
    size_t len = 0;
    char *data = gen_file(request, &len);
    char *path = co_xasprintf("%s/%s", dir, name);
    co_test_write_file(path, data, len);
    free(path);
    free(data);
}

static void test_sops__decrypts_a_tree_in_place(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(true, true, false);
    char *dir = co_test_tmpdir();
    char *chart = co_xasprintf("%s/chart", dir);
    put_generated(SECRET_REQ("age", "value", AGE0), chart, "templates/secret.yaml");
    put_generated("{\"format\":\"dotenv\",\"tree\":{\"key\":\"value\"},\"groups\":[[" AGE1
                  "]]," LASTMOD "}",
                  chart, "files/app.env");
    const char *plain = "apiVersion: v1\nkind: Secret\nmetadata:\n    name: vault\n"
                        "stringData:\n    key: value\n";
    char *p = co_xasprintf("%s/templates/plain.yaml", chart);
    co_test_write_file(p, plain, strlen(plain));
    free(p);
    char *outside = co_xasprintf("%s/outside.yaml", dir);
    put_generated(SECRET_REQ("merge1", "merge1", AGE0), dir, "outside.yaml");
    char *link = co_xasprintf("%s/templates/link.yaml", chart);
    assert_int_equal(symlink(outside, link), 0);

    size_t count = 0;
    assert_co_pass(co_sops_decrypt_tree(keys, chart, &count));
    assert_int_equal(count, 2);
    p = co_xasprintf("%s/templates/secret.yaml", chart);
    char *s = co_test_read_file(p, NULL);
    assert_contains(s, "key: value");
    free(s);
    free(p);
    p = co_xasprintf("%s/files/app.env", chart);
    s = co_test_read_file(p, NULL);
    assert_string_equal(s, "key=value\n");
    free(s);
    free(p);
    p = co_xasprintf("%s/templates/plain.yaml", chart);
    s = co_test_read_file(p, NULL);
    assert_string_equal(s, plain);
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
    put_generated(SECRET_REQ("merge2", "merge2", AGE0), chart, "templates/z.yaml");
    p = co_xasprintf("%s/templates/z.yaml", chart);
    s = co_test_read_file(p, NULL);
    flip_after(s, "key: ENC[AES256_GCM,data:");
    co_test_write_file(p, s, strlen(s));
    free(s);
    assert_co_fail_with(CO_EAUTH, co_sops_decrypt_tree(keys, chart, NULL));
    assert_contains(co_error_last(), "templates/z.yaml");
    free(p);

    free(link);
    free(outside);
    free(chart);
    co_test_rmtree(dir);
    free(dir);
    co_sops_keys_free(keys);
}

static void test_sops__gnupg_home_is_private_and_removed(void **state)
{
    (void)state;
    size_t len = 0;
    char *data = gen_file(SECRET_REQ("pgp", "value", PGP), &len);
    char *tmp = co_test_tmpdir();
    char *saved = co_test_env_swap("TMPDIR", tmp);
    co_sops_keys *keys = NULL;
    keys = co_sops_keys_new();
    add_key_file(keys, gen.pgp_key, "pgp.asc");
    assert_int_equal(co_sops_keys_count(keys), 1);
    assert_int_equal(co_test_count_entries(tmp, "co-gnupg-"), 1);
    co_test_assert_entries_mode(tmp, "co-gnupg-", 0700);
    char *out = decrypt_mem_ok(keys, "pgp.yaml", data, len);
    assert_contains(out, "key: value");
    free(out);
    co_sops_keys_free(keys);
    assert_int_equal(co_test_count_entries(tmp, "co-gnupg-"), 0);
    co_test_env_restore("TMPDIR", saved);
    co_test_rmtree(tmp);
    free(tmp);
    free(data);
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

static void test_sops__independently_encrypted_yaml(void **state)
{
    (void)state;
    size_t len = 0;
    /* A Kubernetes Secret, as Flux users write them. */
    char *data = gen_file(
        "{\"format\":\"yaml\",\"tree\":{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
        "{\"name\":\"db\",\"labels\":{\"app\":\"x\"}},\"type\":\"Opaque\",\"stringData\":"
        "{\"password\":\"s3cr3t\",\"multi\":\"line1\\nline2\\n\",\"unicode\":\"gr\\u00fc\\u00df\","
        "\"quoted\":\"true\",\"empty\":\"\"}},\"rule\":{\"encrypted_regex\":\"^(data|stringData)$"
        "\"},"
        "\"groups\":[[{\"age\":\"@0\"}]],\"lastmodified\":\"2024-01-02T03:04:05Z\"}",
        &len);
    co_sops_keys *keys = gen_keys(true, false, false);
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
    data = gen_file(
        "{\"format\":\"yaml\",\"tree\":[{\"n\":42,\"neg\":-7,\"f\":1.5,\"big\":1e21,"
        "\"t\":true,\"no\":false,\"z\":null,\"l\":[1,\"two\",{\"three\":3.25}],"
        "\"keep_unencrypted\":{\"a\":\"b\",\"c\":[1,2]}},{\"second\":\"doc\"}],"
        "\"groups\":[[{\"age\":\"@1\"},{\"age\":\"@0\"}]],\"lastmodified\":\"2024-01-02T03:04:"
        "05Z\"}",
        &len);
    keys = gen_keys(true, false, false);
    out = decrypt_mem_ok(keys, "values.yaml", data, len);
    assert_contains(out,
                    "\"n\": 42\nneg: -7\nf: 1.5\nbig: 1e+21\nt: true\n\"no\": false\nz: null\n");
    assert_contains(out, "l:\n- 1\n- two\n-   three: 3.25\n");
    assert_contains(out, "keep_unencrypted:\n    a: b\n");
    assert_contains(out, "---\nsecond: doc\n");
    free(out);
    co_sops_keys_free(keys);
    free(data);
}

static void test_sops__independently_encrypted_rules(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(true, false, false);
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
        char *data = gen_file(req, &len);
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
}

static void test_sops__independently_encrypted_formats(void **state)
{
    (void)state;
    co_sops_keys *keys = gen_keys(false, true, false);
    size_t len = 0;
    char *data = gen_file(
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

    data = gen_file("{\"format\":\"dotenv\",\"tree\":{\"USER\":\"admin\",\"CERT\":"
                    "\"-----BEGIN-----\\nabc\\n-----END-----\"},\"groups\":[[{\"age\":\"@1\"}]],"
                    "\"lastmodified\":\"2024-01-02T03:04:05+02:00\"}",
                    &len);
    out = decrypt_mem_ok(keys, "app.env", data, len);
    assert_string_equal(out, "USER=admin\nCERT=-----BEGIN-----\\nabc\\n-----END-----\n");
    free(out);
    free(data);

    data = gen_file("{\"format\":\"ini\",\"tree\":{\"db\":{\"user\":\"u\",\"pass\":\"p w\"},"
                    "\"web\":{\"port\":\"8080\"}},\"groups\":[[{\"age\":\"@1\"}]],"
                    "\"lastmodified\":\"2024-01-02T03:04:05Z\"}",
                    &len);
    out = decrypt_mem_ok(keys, "app.ini", data, len);
    assert_string_equal(out, "[db]\nuser = u\npass = p w\n\n[web]\nport = 8080\n");
    free(out);
    free(data);

    data = gen_file("{\"format\":\"binary\",\"tree\":{\"data\":\"raw\\u0001bytes\\n\"},"
                    "\"groups\":[[{\"age\":\"@1\"}]],\"lastmodified\":\"2024-01-02T03:04:05Z\"}",
                    &len);
    out = decrypt_mem_ok(keys, "blob.bin", data, len);
    assert_string_equal(out, "raw\001bytes\n");
    free(out);
    free(data);
    co_sops_keys_free(keys);
}

static void test_sops__key_groups_and_shamir_threshold(void **state)
{
    (void)state;
    size_t len = 0;
    char *data = gen_file(
        "{\"format\":\"yaml\",\"tree\":{\"secret\":\"shared\"},\"groups\":[[{\"age\":\"@0\"}],"
        "[{\"age\":\"@1\"}],[{\"pgp\":\"@pgp\"}]],"
        "\"threshold\":2,\"lastmodified\":\"2024-01-02T03:04:05Z\"}",
        &len);
    static const struct {
        bool k0, k1, pgp, ok;
    } sets[] = {
        {true, true, false, true}, {true, false, true, true},   {false, true, true, true},
        {true, true, true, true},  {true, false, false, false}, {false, false, true, false},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(sets); i++) {
        co_sops_keys *keys = gen_keys(sets[i].k0, sets[i].k1, sets[i].pgp);
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
}

static void test_sops__age_cli_files(void **state)
{
    (void)state;
    co_sops__age_id *ids = NULL;
    size_t nids = 0;
    size_t klen = 0;
    char *ktext = co_test_read_file(gen.age_key[0], &klen);
    assert_co_pass(co_sops__age_parse_identities(&ids, &nids, ktext, klen));
    assert_int_equal(nids, 1);
    free(ktext);
    static const size_t sizes[] = {0, 1, 47, 48, 65535, 65536, 65537, 2 * 65536 + 7};
    char *dir = co_test_tmpdir();
    char *plain_path = co_xasprintf("%s/plain", dir), *enc_path = co_xasprintf("%s/enc", dir);
    for (size_t i = 0; i < CO_ARRAY_SIZE(sizes); i++) {
        unsigned char *plain = co_xmalloc(sizes[i] + 1);
        for (size_t j = 0; j < sizes[i]; j++) {
            plain[j] = (unsigned char)(j * 131 + i);
        }
        co_test_write_file(plain_path, plain, sizes[i]);
        for (int armor = 0; armor < 2; armor++) {
            char *argv[] = {(char *)"age",
                            (char *)"-r",
                            gen.age_recipient[0],
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
        char *ssh_key = co_xasprintf("%s/id_%s", dir, types[t][0]);
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
        char *other = co_xasprintf("%s/other_%s", dir, types[t][0]);
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
        char *locked = co_xasprintf("%s/locked_%s", dir, types[t][0]);
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
    co_test_rmtree(dir);
    free(dir);
}

static void test_sops__ssh_key_in_agekey_entry(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    char *ssh_key = co_xasprintf("%s/id_ed25519", dir);
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
    char *data = gen_file(req, &len);
    co_sops_keys *keys = NULL;
    keys = co_sops_keys_new();
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
    co_test_rmtree(dir);
    free(dir);
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
    assert_co_pass(co_base64_decode_alloc(&out, &len, "aGVsbG8=", 8, CO_BASE64_STD));
    assert_int_equal(len, 5);
    assert_memory_equal(out, "hello", 5);
    free(out);
    assert_int_equal(co_base64_decode_alloc(&out, &len, "aGVsbG8", 7, CO_BASE64_STD), CO_EINVALID);
    assert_co_pass(
        co_base64_decode_alloc(&out, &len, "aGVsbG8", 7, CO_BASE64_RAW | CO_BASE64_STRICT));
    free(out);
    /* Non-zero trailing bits are not canonical. */
    assert_int_equal(
        co_base64_decode_alloc(&out, &len, "aGVsbG9", 7, CO_BASE64_RAW | CO_BASE64_STRICT),
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
        cmocka_unit_test(test_sops__age_yaml_secret),
        cmocka_unit_test(test_sops__dotenv_and_binary),
        cmocka_unit_test(test_sops__secret_inside_secret),
        cmocka_unit_test(test_sops__pgp_yaml_secret),
        cmocka_unit_test(test_sops__pgp_nested_yaml),
        cmocka_unit_test(test_sops__pgp_json_ini_binary),
        cmocka_unit_test(test_sops__ini_multiline_data_key),
        cmocka_unit_test(test_sops__comments_are_dropped),
        cmocka_unit_test(test_sops__no_mac_is_rejected),
        cmocka_unit_test(test_sops__tampered_files_fail),
        cmocka_unit_test(test_sops__key_problems),
        cmocka_unit_test(test_sops__keys_from_secret_object),
        cmocka_unit_test(test_sops__detect_and_output_format),
        cmocka_unit_test(test_sops__decrypts_a_tree_in_place),
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
    return cmocka_run_group_tests_name("sops", tests, group_setup, group_teardown);
}
