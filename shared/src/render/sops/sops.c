/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SOPS decryption driver: key sets from decryption Secrets, detection of encrypted files,
 * recovery of the data key (age and PGP master keys, key groups recombined with Shamir), the
 * walk that opens every value with its path as additional data while hashing the plaintext
 * for the MAC, the MAC check, and the output in the format the file name asks for. Nothing is
 * returned unless the MAC verifies. The rules for which values are encrypted
 * (unencrypted_suffix, encrypted_suffix, unencrypted_regex, encrypted_regex) and the MAC
 * variant (mac_only_encrypted) are sops 3.x's.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/evp.h>
#include <pcre2.h>

#include "co/util/strconv.h"
#include "co/util/digest.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/render/sops.h"
#include "sops_int.h"

struct co_sops_keys {
    co_sops__age_id *age;
    size_t nage;
    co_sops__pgp *pgp;
};

/* ---- key sets ---------------------------------------------------------------------------- */

co_sops_keys *co_sops_keys_new(void)
{
    return co_xcalloc(1, sizeof(co_sops_keys));
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int co_sops_keys_add(co_sops_keys *keys, const char *name, const void *value, size_t len)
{
    int error;
    if (has_suffix(name, ".agekey")) {
        if ((error = co_sops__age_parse_identities(&keys->age, &keys->nage, value, len)) < 0) {
            co_error_wrap("decryption secret entry %s", name);
        }
        return error;
    }
    if (has_suffix(name, ".asc")) {
        if (!keys->pgp && (error = co_sops__pgp_new(&keys->pgp)) < 0) {
            return error;
        }
        if ((error = co_sops__pgp_import(keys->pgp, value, len)) < 0) {
            co_error_wrap("decryption secret entry %s", name);
        }
        return error;
    }
    return 0;
}

int co_sops_keys_add_secret(co_sops_keys *keys, const struct json_object *secret)
{
    struct json_object *data = NULL, *string_data = NULL;
    int error = 0;
    if (json_object_object_get_ex(secret, "data", &data) &&
        json_object_is_type(data, json_type_object)) {
        json_object_object_foreach (data, name, v) {
            unsigned char *bytes = NULL;
            size_t n = 0;
            const char *s = json_object_get_string(v);
            if (!s || co_base64_decode_alloc(&bytes, &n, s, strlen(s), CO_BASE64_STD) < 0) {
                return co_error_set(CO_EINVALID, "decryption secret entry %s: invalid base64",
                                    name);
            }
            error = co_sops_keys_add(keys, name, bytes, n);
            co_free_secret(bytes, n);
            if (error < 0) {
                return error;
            }
        }
    }
    if (json_object_object_get_ex(secret, "stringData", &string_data) &&
        json_object_is_type(string_data, json_type_object)) {
        json_object_object_foreach (string_data, name, v) {
            const char *s = json_object_get_string(v);
            if (s && (error = co_sops_keys_add(keys, name, s, strlen(s))) < 0) {
                return error;
            }
        }
    }
    return 0;
}

size_t co_sops_keys_count(const co_sops_keys *keys)
{
    return keys ? keys->nage + co_sops__pgp_secret_count(keys->pgp) : 0;
}

void co_sops_keys_free(co_sops_keys *keys)
{
    if (!keys) {
        return;
    }
    co_sops__age_ids_free(keys->age, keys->nage);
    co_sops__pgp_free(keys->pgp);
    free(keys);
}

/* ---- detection --------------------------------------------------------------------------- */

static bool contains(const void *data, size_t len, const char *marker)
{
    if (!data || len == 0) {
        return false;
    }
    return memmem(data, len, marker, strlen(marker)) != NULL;
}

co_sops_format co_sops_detect(const void *data, size_t len)
{
    /* Fixed order: the original iterated a Go map, so a file carrying two markers was read in
     * a random format; YAML, JSON and dotenv markers cannot occur in each other's files. */
    if (contains(data, len, "mac: ENC[")) {
        return CO_SOPS_FORMAT_YAML;
    }
    if (contains(data, len, "\"mac\": \"ENC[")) {
        return CO_SOPS_FORMAT_JSON;
    }
    if (contains(data, len, "sops_mac=ENC[")) {
        return CO_SOPS_FORMAT_DOTENV;
    }
    if (contains(data, len, "[sops]")) {
        return CO_SOPS_FORMAT_INI;
    }
    return CO_SOPS_FORMAT_NONE;
}

co_sops_format co_sops_format_for_path(const char *path)
{
    if (has_suffix(path, ".yaml") || has_suffix(path, ".yml")) {
        return CO_SOPS_FORMAT_YAML;
    }
    if (has_suffix(path, ".json")) {
        return CO_SOPS_FORMAT_JSON;
    }
    if (has_suffix(path, ".env")) {
        return CO_SOPS_FORMAT_DOTENV;
    }
    if (has_suffix(path, ".ini")) {
        return CO_SOPS_FORMAT_INI;
    }
    return CO_SOPS_FORMAT_BINARY;
}

/* ---- metadata accessors ------------------------------------------------------------------ */

/* A metadata value as text (mapstructure's weak typing lets strings stand for numbers and
 * booleans in the flattened formats). NULL when missing. */
static const char *meta_str(const co_sops__node *meta, const char *key, size_t *len)
{
    const co_sops__node *v = co_sops__map_get(meta, key);
    if (!v || v->kind == CO_SOPS__N_NULL || v->kind == CO_SOPS__N_MAP ||
        v->kind == CO_SOPS__N_LIST) {
        return NULL;
    }
    if (v->kind == CO_SOPS__N_BOOL) {
        *len = v->bval ? 4 : 5;
        return v->bval ? "true" : "false";
    }
    *len = v->len;
    return v->str;
}

static int meta_bool(const co_sops__node *meta, const char *key, bool *out)
{
    size_t len = 0;
    const char *s = meta_str(meta, key, &len);
    *out = false;
    if (!s || len == 0) {
        return 0;
    }
    static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(t); i++) {
        if (strlen(t[i]) == len && memcmp(t[i], s, len) == 0) {
            *out = true;
            return 0;
        }
        if (strlen(f[i]) == len && memcmp(f[i], s, len) == 0) {
            return 0;
        }
    }
    return co_error_set(CO_EINVALID, "sops metadata field %s is not a boolean", key);
}

/* ---- RFC 3339 ---------------------------------------------------------------------------- */

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Parses an RFC 3339 time as Go's time.Parse(time.RFC3339) does and writes it back as Go's
 * Format: RFC3339 (whole seconds) or RFC3339Nano (fraction without trailing zeros). */
static int rfc3339_normalize(char *out, size_t size, const char *s, size_t len, bool nano)
{
    int y, mo, d, h, mi, sec, oh = 0, om = 0;
    if (len < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
        !digits(s + 8, 2, &d) || s[10] != 'T' || !digits(s + 11, 2, &h) || s[13] != ':' ||
        !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &sec)) {
        return CO_EINVALID;
    }
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) ||
        h > 23 || mi > 59 || sec > 59) {
        return CO_EINVALID;
    }
    size_t i = 19;
    char frac[16] = "";
    if (i < len && (s[i] == '.' || s[i] == ',')) {
        size_t start = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            i++;
        }
        if (i == start || i - start > 9) {
            return CO_EINVALID;
        }
        size_t n = i - start;
        while (n > 0 && s[start + n - 1] == '0') {
            n--;
        }
        if (n) {
            frac[0] = '.';
            memcpy(frac + 1, s + start, n);
            frac[n + 1] = '\0';
        }
    }
    char zone[32] = "Z";
    if (i + 1 == len && s[i] == 'Z') {
        i++;
    } else if (i + 6 == len && (s[i] == '+' || s[i] == '-') && digits(s + i + 1, 2, &oh) &&
               s[i + 3] == ':' && digits(s + i + 4, 2, &om) && oh < 24 && om < 60) {
        if (oh || om) {
            snprintf(zone, sizeof(zone), "%c%02d:%02d", s[i], oh, om);
        }
    } else {
        return CO_EINVALID;
    }
    snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d%s%s", y, mo, d, h, mi, sec, nano ? frac : "",
             zone);
    return 0;
}

/* ---- data key ---------------------------------------------------------------------------- */

/* Appends to an error description; an over-long description is simply cut. */
static void note(co_buf *why, const char *fmt, ...) CO_PRINTF(2, 3);
static void note(co_buf *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (co_buf_vprintf(why, fmt, ap) < 0) {
        co_buf_init(why, why->max);
    }
    va_end(ap);
}

typedef struct part_list {
    unsigned char *parts[64];
    size_t lens[64];
    size_t n;
} part_list;

static const char *const offline_types[] = {"pgp", "age"};
static const char *const online_types[] = {"kms", "gcp_kms", "hckms", "azure_kv", "hc_vault"};

/* Tries the keys of one group in sops' order (PGP and age first, as the original sorts them);
 * the first that decrypts gives the group's part. Failures are described in @p why. */
static int decrypt_group(co_buf *part, co_sops_keys *keys, const co_sops__node *group, co_buf *why)
{
    int error;
    for (size_t t = 0; t < CO_ARRAY_SIZE(offline_types); t++) {
        const co_sops__node *list = co_sops__map_get(group, offline_types[t]);
        for (size_t i = 0; list && list->kind == CO_SOPS__N_LIST && i < list->n; i++) {
            const co_sops__node *key = list->kids[i];
            size_t enc_len = 0, id_len = 0;
            const char *enc = meta_str(key, "enc", &enc_len);
            const char *id = meta_str(key, t == 0 ? "fp" : "recipient", &id_len);
            if (!id) {
                id = "?";
                id_len = 1;
            }
            if (!enc) {
                note(why, "; %s key %.*s has no encrypted data key", offline_types[t], (int)id_len,
                     id);
                continue;
            }
            co_buf_reset(part);
            if (t == 0) {
                error = keys->pgp ? co_sops__pgp_decrypt(part, keys->pgp, enc, enc_len)
                                  : co_error_set(CO_EAUTH, "no PGP keys in the decryption secret");
            } else {
                error = co_sops__age_decrypt(part, keys->age, keys->nage, enc, enc_len);
            }
            if (error == 0) {
                return 0;
            }
            note(why, "; %s key %.*s: %s", offline_types[t], (int)(id_len > 48 ? 48 : id_len), id,
                 co_error_last());
        }
    }
    for (size_t t = 0; t < CO_ARRAY_SIZE(online_types); t++) {
        const co_sops__node *list = co_sops__map_get(group, online_types[t]);
        if (list && list->kind == CO_SOPS__N_LIST && list->n > 0) {
            note(why, "; %s keys are not supported (only age and PGP)", online_types[t]);
        }
    }
    return CO_EAUTH;
}

static bool group_has_keys(const co_sops__node *group)
{
    for (size_t t = 0; t < CO_ARRAY_SIZE(offline_types) + CO_ARRAY_SIZE(online_types); t++) {
        const char *name = t < 2 ? offline_types[t] : online_types[t - 2];
        const co_sops__node *list = co_sops__map_get(group, name);
        if (list && list->kind == CO_SOPS__N_LIST && list->n > 0) {
            return true;
        }
    }
    return false;
}

static int recover_data_key(unsigned char key[32], co_sops_keys *keys, const co_sops__node *meta)
{
    const co_sops__node *groups[64];
    size_t ngroups = 0;
    part_list parts = {0};
    co_buf part = CO_BUF_INIT(CO_MAX_AGE_PAYLOAD), why = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    unsigned char *secret = NULL;
    size_t secret_len = 0;
    int error;

    if (group_has_keys(meta)) {
        groups[ngroups++] = meta;
    } else {
        const co_sops__node *kg = co_sops__map_get(meta, "key_groups");
        for (size_t i = 0; kg && kg->kind == CO_SOPS__N_LIST && i < kg->n; i++) {
            if (ngroups == CO_ARRAY_SIZE(groups)) {
                return co_error_set(CO_EINVALID, "too many key groups");
            }
            if (kg->kids[i] && kg->kids[i]->kind == CO_SOPS__N_MAP) {
                groups[ngroups++] = kg->kids[i];
            }
        }
    }
    if (ngroups == 0) {
        return co_error_set(CO_EINVALID, "no keys found in the sops metadata");
    }
    long long threshold = 0;
    size_t tl = 0;
    const char *ts = meta_str(meta, "shamir_threshold", &tl);
    if (ts) {
        char tb[24];
        char *end = NULL;
        snprintf(tb, sizeof(tb), "%.*s", (int)(tl < 20 ? tl : 20), ts);
        threshold = strtoll(tb, &end, 10);
        if (*end || threshold < 0) {
            return co_error_set(CO_EINVALID,
                                "sops metadata field shamir_threshold is not a number");
        }
    }
    for (size_t g = 0; g < ngroups; g++) {
        if (ngroups > 1) {
            note(&why, "; group %zu", g + 1);
        }
        if (decrypt_group(&part, keys, groups[g], &why) == 0) {
            parts.parts[parts.n] = (unsigned char *)co_xmemdup(part.ptr, part.len);
            parts.lens[parts.n++] = part.len;
        }
    }
    if (ngroups == 1) {
        if (parts.n != 1) {
            error = co_error_set(CO_EAUTH, "cannot get the sops data key%s", co_buf_cstr(&why));
            goto done;
        }
        secret = parts.parts[0];
        secret_len = parts.lens[0];
        parts.parts[0] = NULL;
    } else {
        if ((long long)parts.n < threshold || parts.n < 2) {
            error = co_error_set(CO_EAUTH,
                                 "cannot get the sops data key: %zu of %zu key groups decrypted, "
                                 "%lld needed%s",
                                 parts.n, ngroups, threshold ? threshold : (long long)ngroups,
                                 co_buf_cstr(&why));
            goto done;
        }
        for (size_t i = 1; i < parts.n; i++) {
            if (parts.lens[i] != parts.lens[0]) {
                error = co_error_set(CO_EINVALID, "Shamir parts have different lengths");
                goto done;
            }
        }
        if ((error = co_sops__shamir_combine(&secret, &secret_len,
                                             (const unsigned char *const *)parts.parts, parts.n,
                                             parts.lens[0])) < 0) {
            co_error_wrap("could not get the data key from Shamir parts");
            goto done;
        }
    }
    if (secret_len != 32) {
        error = co_error_set(CO_EAUTH, "recovered data key has %zu bytes, expected 32", secret_len);
        goto done;
    }
    memcpy(key, secret, 32);
    error = 0;
done:
    for (size_t i = 0; i < parts.n; i++) {
        if (parts.parts[i]) {
            co_free_secret(parts.parts[i], parts.lens[i]);
        }
    }
    if (secret) {
        co_free_secret(secret, secret_len);
    }
    if (part.ptr) {
        co_memzero(part.ptr, part.len);
    }
    co_buf_dispose(&part);
    co_buf_dispose(&why);
    return error;
}

/* ---- the walk ---------------------------------------------------------------------------- */

typedef enum rule {
    RULE_UNENCRYPTED_SUFFIX,
    RULE_ENCRYPTED_SUFFIX,
    RULE_UNENCRYPTED_REGEX,
    RULE_ENCRYPTED_REGEX,
    RULE_BY_SHAPE, /* comment-regex files: a value is encrypted when it is an envelope */
} rule;

typedef struct walk {
    const unsigned char *key;
    rule rule;
    const char *arg;
    size_t arg_len;
    pcre2_code *re;
    pcre2_match_data *md;
    bool mac_only;
    EVP_MD_CTX *mac;
    const char *seg[CO_MAX_NESTING + 1];
    size_t seg_len[CO_MAX_NESTING + 1];
    size_t depth;
    co_buf aad;
} walk;

static bool seg_matches(walk *w, size_t i)
{
    if (w->rule == RULE_UNENCRYPTED_SUFFIX || w->rule == RULE_ENCRYPTED_SUFFIX) {
        return w->seg_len[i] >= w->arg_len &&
               memcmp(w->seg[i] + w->seg_len[i] - w->arg_len, w->arg, w->arg_len) == 0;
    }
    return pcre2_match(w->re, (PCRE2_SPTR)w->seg[i], w->seg_len[i], 0, 0, w->md, NULL) >= 0;
}

static bool should_be_encrypted(walk *w, const co_sops__node *leaf)
{
    if (w->rule == RULE_BY_SHAPE) {
        return leaf->kind == CO_SOPS__N_STR && co_sops__is_envelope(leaf->str, leaf->len);
    }
    bool any = false;
    for (size_t i = 0; i < w->depth && !any; i++) {
        any = seg_matches(w, i);
    }
    switch (w->rule) {
    case RULE_UNENCRYPTED_SUFFIX:
    case RULE_UNENCRYPTED_REGEX:
        return !any;
    default:
        return any;
    }
}

/* Go's strconv.ParseBool. */
static bool parse_go_bool(const char *s, size_t len, bool *out)
{
    static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(t); i++) {
        if (strlen(t[i]) == len && memcmp(t[i], s, len) == 0) {
            *out = true;
            return true;
        }
        if (strlen(f[i]) == len && memcmp(f[i], s, len) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* Turns the plaintext of an envelope into a typed node, as sops' cipher does. */
static int typed_value(co_sops__node *leaf, co_sops__vtype type, const char *s, size_t len)
{
    char buf[400];
    leaf->kind = CO_SOPS__N_STR;
    switch (type) {
    case CO_SOPS__T_STR:
    case CO_SOPS__T_BYTES:
    case CO_SOPS__T_COMMENT:
        co_sops__node_set_str(leaf, s, len);
        return 0;
    case CO_SOPS__T_INT: {
        /* strconv.Atoi; a sign without digits and a value out of range fail as the wrong type */
        size_t i = (len && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
        int64_t v = 0;
        if (i == len || len >= sizeof(buf)) {
            break;
        }
        int rc = co_strconv_parse_int(&v, s, len, 10, 0);
        if (rc == CO_EINVALID) {
            return co_error_set(CO_EINVALID, "decrypted int value is not a number");
        }
        if (rc < 0) {
            break;
        }
        int n = snprintf(buf, sizeof(buf), "%" PRId64, v);
        leaf->kind = CO_SOPS__N_INT;
        leaf->ival = v;
        co_sops__node_set_str(leaf, buf, (size_t)n);
        return 0;
    }
    case CO_SOPS__T_FLOAT: {
        if (len == 0 || len >= sizeof(buf) || s[0] == ' ') {
            break;
        }
        memcpy(buf, s, len);
        buf[len] = '\0';
        char *end;
        errno = 0;
        double v = strtod(buf, &end);
        if (*end || errno == ERANGE) {
            break;
        }
        co_sops__format_float(buf, sizeof(buf), v);
        leaf->kind = CO_SOPS__N_FLOAT;
        leaf->fval = v;
        co_sops__node_set_str(leaf, buf, strlen(buf));
        return 0;
    }
    case CO_SOPS__T_BOOL: {
        bool b;
        if (!parse_go_bool(s, len, &b)) {
            break;
        }
        leaf->kind = CO_SOPS__N_BOOL;
        leaf->bval = b;
        co_sops__node_set_str(leaf, b ? "True" : "False", b ? 4 : 5);
        return 0;
    }
    case CO_SOPS__T_TIME:
        if (rfc3339_normalize(buf, sizeof(buf), s, len, true) < 0) {
            break;
        }
        leaf->kind = CO_SOPS__N_TIME;
        co_sops__node_set_str(leaf, buf, strlen(buf));
        return 0;
    }
    return co_error_set(CO_EINVALID, "decrypted value does not parse as its declared type");
}

static int walk_leaf(walk *w, co_sops__node *leaf)
{
    bool encrypted = should_be_encrypted(w, leaf);
    int error;
    if (encrypted) {
        if (leaf->kind != CO_SOPS__N_STR) {
            return co_error_set(CO_EINVALID, "expected an encrypted value (string) but found a "
                                             "plain value");
        }
        if (leaf->len > 0) {
            co_buf_reset(&w->aad);
            for (size_t i = 0; i < w->depth; i++) {
                if ((error = co_buf_put(&w->aad, w->seg[i], w->seg_len[i])) < 0 ||
                    (error = co_buf_putc(&w->aad, ':')) < 0) {
                    return co_error_set(error, "value path too long");
                }
            }
            if (w->depth == 0 && (error = co_buf_putc(&w->aad, ':')) < 0) {
                return error;
            }
            co_buf plain = CO_BUF_INIT(CO_MAX_SOPS_FILE);
            co_sops__vtype type;
            error = co_sops__envelope_open(&plain, &type, w->key, leaf->str, leaf->len, w->aad.ptr,
                                           w->aad.len);
            if (error == 0) {
                error = typed_value(leaf, type, co_buf_cstr(&plain), plain.len);
            }
            if (plain.ptr) {
                co_memzero(plain.ptr, plain.len);
            }
            co_buf_dispose(&plain);
            if (error < 0) {
                return error;
            }
        }
    }
    if ((!w->mac_only || encrypted) && leaf->len > 0 &&
        EVP_DigestUpdate(w->mac, leaf->str, leaf->len) != 1) {
        return co_error_set(CO_ERROR, "SHA-512 update failed");
    }
    return 0;
}

static int walk_node(walk *w, co_sops__node *node)
{
    int error;
    if (!node || node->kind == CO_SOPS__N_NULL) {
        return 0;
    }
    if (node->kind == CO_SOPS__N_LIST) {
        for (size_t i = 0; i < node->n; i++) {
            if ((error = walk_node(w, node->kids[i])) < 0) {
                return error;
            }
        }
        return 0;
    }
    if (node->kind == CO_SOPS__N_MAP) {
        if (w->depth >= CO_MAX_NESTING) {
            return co_error_set(CO_EINVALID, "document nested deeper than %d levels",
                                CO_MAX_NESTING);
        }
        for (size_t i = 0; i < node->n; i++) {
            w->seg[w->depth] = node->keys[i];
            w->seg_len[w->depth] = node->key_lens[i];
            w->depth++;
            error = walk_node(w, node->kids[i]);
            w->depth--;
            if (error < 0) {
                return error;
            }
        }
        return 0;
    }
    if ((error = walk_leaf(w, node)) < 0) {
        char where[512];
        size_t o = 0;
        for (size_t i = 0; i < w->depth && o + 2 < sizeof(where); i++) {
            int n = snprintf(where + o, sizeof(where) - o, "%s%.*s", i ? "." : "",
                             (int)w->seg_len[i], w->seg[i]);
            o += n > 0 ? (size_t)n : 0;
        }
        co_error_wrap("value at %s", w->depth ? where : "(top level)");
    }
    return error;
}

static int setup_rules(walk *w, const co_sops__node *meta)
{
    static const struct {
        const char *name;
        rule rule;
    } rules[] = {
        {"unencrypted_suffix", RULE_UNENCRYPTED_SUFFIX},
        {"encrypted_suffix", RULE_ENCRYPTED_SUFFIX},
        {"unencrypted_regex", RULE_UNENCRYPTED_REGEX},
        {"encrypted_regex", RULE_ENCRYPTED_REGEX},
        {"unencrypted_comment_regex", RULE_BY_SHAPE},
        {"encrypted_comment_regex", RULE_BY_SHAPE},
    };
    size_t count = 0;
    w->rule = RULE_UNENCRYPTED_SUFFIX;
    w->arg = "_unencrypted";
    w->arg_len = strlen(w->arg);
    for (size_t i = 0; i < CO_ARRAY_SIZE(rules); i++) {
        size_t len = 0;
        const char *s = meta_str(meta, rules[i].name, &len);
        if (s && len > 0) {
            count++;
            w->rule = rules[i].rule;
            w->arg = s;
            w->arg_len = len;
        }
    }
    if (count > 1) {
        return co_error_set(CO_EINVALID,
                            "cannot use more than one of encrypted_suffix, unencrypted_suffix, "
                            "encrypted_regex, unencrypted_regex, encrypted_comment_regex or "
                            "unencrypted_comment_regex in the same file");
    }
    if (w->rule == RULE_UNENCRYPTED_REGEX || w->rule == RULE_ENCRYPTED_REGEX) {
        int err = 0;
        PCRE2_SIZE off = 0;
        w->re = pcre2_compile((PCRE2_SPTR)w->arg, w->arg_len, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
                              &err, &off, NULL);
        if (!w->re) {
            return co_error_set(CO_EINVALID,
                                "invalid regular expression in sops metadata at "
                                "offset %zu",
                                (size_t)off);
        }
        w->md = pcre2_match_data_create_from_pattern(w->re, NULL);
    }
    return meta_bool(meta, "mac_only_encrypted", &w->mac_only);
}

/* The first 32 bytes of a mac_only_encrypted MAC: SHA-256 of "sops", as sops defines them. */
static const unsigned char mac_only_init[32] = {
    0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b,
    0x0b, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69};

static int decrypt_doc(co_sops__doc *doc, co_sops_keys *keys)
{
    walk w = {.aad = CO_BUF_INIT(CO_MAX_SOPS_FILE)};
    unsigned char key[32], digest[64];
    unsigned int dlen = 0;
    char computed[129], lastmod[64];
    co_buf file_mac = CO_BUF_INIT(1024);
    int error;

    size_t lm_len = 0;
    const char *lm = meta_str(doc->meta, "lastmodified", &lm_len);
    if (!lm || rfc3339_normalize(lastmod, sizeof(lastmod), lm, lm_len, false) < 0) {
        return co_error_set(CO_EINVALID, "sops metadata field lastmodified is missing or not an "
                                         "RFC 3339 time");
    }
    if ((error = setup_rules(&w, doc->meta)) < 0) {
        goto done;
    }
    if ((error = recover_data_key(key, keys, doc->meta)) < 0) {
        goto done;
    }
    w.key = key;
    w.mac = EVP_MD_CTX_new();
    if (!w.mac || EVP_DigestInit_ex(w.mac, EVP_sha512(), NULL) != 1 ||
        (w.mac_only && EVP_DigestUpdate(w.mac, mac_only_init, sizeof(mac_only_init)) != 1)) {
        error = co_error_set(CO_ERROR, "SHA-512 init failed");
        goto done;
    }
    for (size_t b = 0; b < doc->n; b++) {
        if ((error = walk_node(&w, doc->branches[b])) < 0) {
            co_error_wrap("error decrypting sops tree");
            goto done;
        }
    }
    if (EVP_DigestFinal_ex(w.mac, digest, &dlen) != 1 || dlen != 64) {
        error = co_error_set(CO_ERROR, "SHA-512 final failed");
        goto done;
    }
    for (size_t i = 0; i < 64; i++) {
        snprintf(computed + 2 * i, 3, "%02X", digest[i]);
    }
    size_t mac_len = 0;
    const char *mac = meta_str(doc->meta, "mac", &mac_len);
    if (!mac || mac_len == 0) {
        error = co_error_set(CO_EAUTH, "MAC mismatch: the file has no MAC");
        goto done;
    }
    co_sops__vtype type;
    if (co_sops__envelope_open(&file_mac, &type, key, mac, mac_len, lastmod, strlen(lastmod)) < 0) {
        co_error_wrap("cannot decrypt the MAC");
        error = CO_EAUTH;
        goto done;
    }
    if (file_mac.len != 128 || memcmp(file_mac.ptr, computed, 128) != 0) {
        error = co_error_set(CO_EAUTH, "MAC mismatch: the file was modified after encryption");
        goto done;
    }
    error = 0;
done:
    co_memzero(key, sizeof(key));
    co_buf_dispose(&file_mac);
    co_buf_dispose(&w.aad);
    EVP_MD_CTX_free(w.mac);
    pcre2_match_data_free(w.md);
    pcre2_code_free(w.re);
    return error;
}

/* ---- public entry points ----------------------------------------------------------------- */

static const char *format_name(co_sops_format f)
{
    static const char *const names[] = {"plain", "YAML", "JSON", "dotenv", "INI", "binary"};
    return (size_t)f < CO_ARRAY_SIZE(names) ? names[f] : "unknown";
}

int co_sops_decrypt(co_buf *out,
                    co_sops_keys *keys,
                    co_sops_format in_format,
                    co_sops_format out_format,
                    const void *data,
                    size_t len)
{
    co_sops__doc doc = {0};
    co_buf plain = CO_BUF_INIT(out->max);
    int error;
    if (len > CO_MAX_SOPS_FILE) {
        return co_error_set(CO_ETOOBIG, "encrypted file exceeds %zu bytes", CO_MAX_SOPS_FILE);
    }
    if (in_format == CO_SOPS_FORMAT_NONE) {
        in_format = co_sops_detect(data, len);
        if (in_format == CO_SOPS_FORMAT_NONE) {
            return co_error_set(CO_EINVALID, "not a sops-encrypted file");
        }
    }
    if (!keys || co_sops_keys_count(keys) == 0) {
        return co_error_set(CO_EINVALID, "the file is sops-encrypted but the decryption secret "
                                         "holds no age or PGP keys");
    }
    if ((error = co_sops__load(&doc, in_format, data, len)) < 0) {
        co_error_wrap("failed to load encrypted %s data", format_name(in_format));
        return error;
    }
    if ((error = decrypt_doc(&doc, keys)) < 0) {
        goto done;
    }
    if ((error = co_sops__emit(&plain, &doc, out_format)) < 0) {
        co_error_wrap("failed to emit encrypted %s file as decrypted %s", format_name(in_format),
                      format_name(out_format));
        goto done;
    }
    if ((error = co_buf_put(out, plain.ptr ? plain.ptr : "", plain.len)) < 0) {
        co_error_set(error, "decrypted output exceeds %zu bytes", out->max);
    }
done:
    if (plain.ptr) {
        co_memzero(plain.ptr, plain.len);
    }
    co_buf_dispose(&plain);
    co_sops__doc_dispose(&doc);
    return error;
}

int co_sops_decrypt_file(co_buf *out,
                         co_sops_keys *keys,
                         const char *path,
                         const void *data,
                         size_t len)
{
    co_sops_format in = co_sops_detect(data, len);
    int error;
    if (len == 0) {
        return 0;
    }
    if (in == CO_SOPS_FORMAT_NONE || !keys) {
        if ((error = co_buf_put(out, data, len)) < 0) {
            co_error_set(error, "%s: file exceeds %zu bytes", path, out->max);
        }
        return error;
    }
    if ((error = co_sops_decrypt(out, keys, in, co_sops_format_for_path(path), data, len)) < 0) {
        co_error_wrap("%s", path);
    }
    return error;
}

/* Reads a whole regular file opened as @p fd, capped. */
static int read_fd(co_buf *out, int fd)
{
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return co_error_set_os(CO_ERROR, "read");
        }
        if (n == 0) {
            return 0;
        }
        int error = co_buf_put(out, chunk, (size_t)n);
        if (error < 0) {
            return co_error_set(error, "file exceeds %zu bytes", out->max);
        }
    }
}

static int write_atomically(const char *path, mode_t mode, const co_buf *data)
{
    char *tmp = co_xasprintf("%s.co-sops-XXXXXX", path);
    int fd = mkstemp(tmp), error = 0;
    if (fd < 0) {
        error = co_error_set_os(CO_ERROR, "cannot create a temporary file");
        free(tmp);
        return error;
    }
    size_t off = 0;
    while (off < data->len) {
        ssize_t n = write(fd, data->ptr + off, data->len - off);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            error = co_error_set_os(CO_ERROR, "write");
            break;
        }
        off += (size_t)n;
    }
    if (error == 0 && fchmod(fd, mode & 07777) != 0) {
        error = co_error_set_os(CO_ERROR, "chmod");
    }
    if (close(fd) != 0 && error == 0) {
        error = co_error_set_os(CO_ERROR, "close");
    }
    if (error == 0 && rename(tmp, path) != 0) {
        error = co_error_set_os(CO_ERROR, "rename");
    }
    if (error < 0) {
        unlink(tmp);
    }
    free(tmp);
    return error;
}

static int decrypt_dir(co_sops_keys *keys,
                       int dirfd_unused,
                       const char *dir,
                       const char *rel,
                       size_t depth,
                       size_t *count)
{
    (void)dirfd_unused;
    char *path = rel[0] ? co_xasprintf("%s/%s", dir, rel) : co_xstrdup(dir);
    DIR *d = opendir(path);
    int error = 0;
    if (!d) {
        error = co_error_set_os(CO_ERROR, "cannot open directory %s", rel[0] ? rel : ".");
        free(path);
        return error;
    }
    if (depth > CO_MAX_NESTING) {
        closedir(d);
        free(path);
        return co_error_set(CO_EINVALID, "directory tree deeper than %d levels", CO_MAX_NESTING);
    }
    struct dirent *e;
    while (error == 0 && (e = readdir(d)) != NULL) { // NOLINT(concurrency-mt-unsafe)
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        char *child_rel = rel[0] ? co_xasprintf("%s/%s", rel, e->d_name) : co_xstrdup(e->d_name);
        char *child = co_xasprintf("%s/%s", dir, child_rel);
        struct stat st;
        if (lstat(child, &st) != 0) {
            error = co_error_set_os(CO_ERROR, "%s: stat", child_rel);
        } else if (S_ISDIR(st.st_mode)) {
            error = decrypt_dir(keys, -1, dir, child_rel, depth + 1, count);
        } else if (S_ISREG(st.st_mode)) {
            int fd = open(child, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            co_buf in = CO_BUF_INIT(CO_MAX_SOPS_FILE), out = CO_BUF_INIT(CO_MAX_SOPS_FILE);
            if (fd < 0) {
                error = co_error_set_os(CO_ERROR, "%s: open", child_rel);
            } else {
                error = read_fd(&in, fd);
                close(fd);
                if (error < 0) {
                    co_error_wrap("%s", child_rel);
                }
            }
            const char *bytes = in.ptr ? in.ptr : "";
            if (error == 0 && co_sops_detect(bytes, in.len) != CO_SOPS_FORMAT_NONE) {
                error = co_sops_decrypt_file(&out, keys, child_rel, bytes, in.len);
                if (error == 0 && (error = write_atomically(child, st.st_mode, &out)) < 0) {
                    co_error_wrap("%s", child_rel);
                }
                if (error == 0) {
                    (*count)++;
                }
            }
            if (out.ptr) {
                co_memzero(out.ptr, out.len);
            }
            co_buf_dispose(&in);
            co_buf_dispose(&out);
        }
        free(child);
        free(child_rel);
    }
    closedir(d);
    free(path);
    return error;
}

int co_sops_decrypt_tree(co_sops_keys *keys, const char *dir, size_t *count)
{
    size_t n = 0;
    int error = decrypt_dir(keys, -1, dir, "", 0, &n);
    if (error == 0 && count) {
        *count = n;
    }
    return error;
}
