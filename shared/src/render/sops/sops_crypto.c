/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cryptographic building blocks of the SOPS module: bech32 decoding, thin wrappers
 * over OpenSSL 3 for HKDF, HMAC, X25519, ChaCha20-Poly1305 and AES-GCM, the sops value envelope
 * ENC[AES256_GCM,data:...,iv:...,tag:...,type:...], and the recombination of Shamir shares in
 * GF(2^8) with the AES polynomial, which is the field of HashiCorp Vault's scheme that sops
 * embeds. Everything here works on caller memory and never logs.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pcre2.h>

#include "co/util/digest.h"
#include "co/util/error.h"
#include "sops_int.h"

/* ---- bech32 ------------------------------------------------------------------------------ */

static uint32_t bech32_polymod(const unsigned char *v, size_t n)
{
    static const uint32_t gen[5] = {0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3};
    uint32_t chk = 1;
    for (size_t i = 0; i < n; i++) {
        uint32_t top = chk >> 25;
        chk = ((chk & 0x1ffffff) << 5) ^ v[i];
        for (int j = 0; j < 5; j++) {
            if ((top >> j) & 1) {
                chk ^= gen[j];
            }
        }
    }
    return chk;
}

int co_sops__bech32_decode(char **hrp_out,
                           unsigned char **data_out,
                           size_t *data_len,
                           const char *s,
                           size_t len)
{
    static const char charset[] = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
    bool lower = false, upper = false;
    size_t sep = SIZE_MAX;
    unsigned char *expanded = NULL, *data = NULL;
    int error = CO_EINVALID;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 33 || c > 126) {
            return co_error_set(CO_EINVALID, "invalid character in bech32 string");
        }
        lower |= (c >= 'a' && c <= 'z');
        upper |= (c >= 'A' && c <= 'Z');
        if (c == '1') {
            sep = i;
        }
    }
    if (lower && upper) {
        return co_error_set(CO_EINVALID, "bech32 string mixes upper and lower case");
    }
    if (sep == SIZE_MAX || sep < 1 || sep + 7 > len) {
        return co_error_set(CO_EINVALID, "bech32 separator misplaced");
    }
    size_t dlen = len - sep - 1;
    /* hrp expanded: high bits, zero, low bits, then the data values. */
    expanded = co_xmalloc(sep * 2 + 1 + dlen);
    for (size_t i = 0; i < sep; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 'A' && c <= 'Z') {
            c = (unsigned char)(c - 'A' + 'a');
        }
        expanded[i] = c >> 5;
        expanded[sep + 1 + i] = c & 31;
    }
    expanded[sep] = 0;
    for (size_t i = 0; i < dlen; i++) {
        char c = (char)(s[sep + 1 + i] | 0x20);
        const char *p = strchr(charset, c);
        if (!p || c == '\0') {
            error = co_error_set(CO_EINVALID, "invalid bech32 data character");
            goto done;
        }
        expanded[sep * 2 + 1 + i] = (unsigned char)(p - charset);
    }
    if (bech32_polymod(expanded, sep * 2 + 1 + dlen) != 1) {
        error = co_error_set(CO_EINVALID, "bech32 checksum mismatch");
        goto done;
    }
    /* Regroup 5-bit values (without the 6 checksum values) into bytes, no padding allowed. */
    const unsigned char *vals = expanded + sep * 2 + 1;
    size_t nvals = dlen - 6;
    data = co_xmalloc(nvals * 5 / 8 + 1);
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < nvals; i++) {
        acc = (acc << 5) | vals[i];
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            data[n++] = (unsigned char)(acc >> bits);
        }
    }
    if (bits >= 5 || (acc & ((1u << bits) - 1)) != 0) {
        error = co_error_set(CO_EINVALID, "bech32 data has invalid padding");
        goto done;
    }
    *hrp_out = co_xstrndup(s, sep);
    *data_out = data;
    *data_len = n;
    data = NULL;
    error = 0;
done:
    free(expanded);
    free(data);
    return error;
}

/* ---- OpenSSL wrappers -------------------------------------------------------------------- */

int co_sops__hkdf_sha256(unsigned char *out,
                         size_t out_len,
                         const unsigned char *ikm,
                         size_t ikm_len,
                         const unsigned char *salt,
                         size_t salt_len,
                         const char *info)
{
    /* RFC 5869 over HMAC directly: an empty salt is HashLen zero bytes, which HMAC pads to
     * the same key, and an empty input key (age's ssh-ed25519 tweak) needs no special case. */
    unsigned char prk[32], t[32];
    unsigned int len = 32;
    size_t info_len = strlen(info), done = 0;
    int error = CO_ERROR;
    unsigned char *msg = co_xmalloc(32 + info_len + 1);
    static const unsigned char empty[1] = {0};
    if (out_len > (size_t)255 * 32 || !HMAC(EVP_sha256(), salt_len ? salt : empty, (int)salt_len,
                                            ikm_len ? ikm : empty, ikm_len, prk, &len)) {
        goto done;
    }
    for (unsigned char counter = 1; done < out_len; counter++) {
        size_t m = 0;
        if (counter > 1) {
            memcpy(msg, t, 32);
            m = 32;
        }
        memcpy(msg + m, info, info_len + 1); /* the NUL's place takes the counter */
        msg[m + info_len] = counter;
        len = 32;
        if (!HMAC(EVP_sha256(), prk, 32, msg, m + info_len + 1, t, &len)) {
            goto done;
        }
        size_t n = out_len - done < 32 ? out_len - done : 32;
        memcpy(out + done, t, n);
        done += n;
    }
    error = 0;
done:
    if (error < 0) {
        co_error_set(CO_ERROR, "HKDF-SHA256 failed");
    }
    co_memzero(prk, sizeof(prk));
    co_memzero(t, sizeof(t));
    co_free_secret(msg, 32 + info_len + 1);
    return error;
}

int co_sops__hmac_sha256(unsigned char mac[32],
                         const unsigned char key[32],
                         const void *data,
                         size_t len)
{
    unsigned int mac_len = 32;
    if (!HMAC(EVP_sha256(), key, 32, data, len, mac, &mac_len) || mac_len != 32) {
        return co_error_set(CO_ERROR, "HMAC-SHA256 failed");
    }
    return 0;
}

/* One AEAD open: cipher, key, IV (any length the cipher accepts), AAD, 16-byte tag. */
static int aead_open(const EVP_CIPHER *cipher,
                     unsigned char *out,
                     const unsigned char *key,
                     const unsigned char *iv,
                     size_t iv_len,
                     const unsigned char *aad,
                     size_t aad_len,
                     const unsigned char *ct,
                     size_t ct_len,
                     const unsigned char *tag)
{
    int error = CO_EAUTH, n = 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx || ct_len > INT32_MAX || aad_len > INT32_MAX || iv_len == 0 || iv_len > 1024) {
        goto done;
    }
    if (EVP_DecryptInit_ex(ctx, cipher, NULL, NULL, NULL) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)iv_len, NULL) != 1 ||
        EVP_DecryptInit_ex(ctx, NULL, NULL, key, iv) != 1) {
        goto done;
    }
    if (aad_len && EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)aad_len) != 1) {
        goto done;
    }
    if (ct_len && EVP_DecryptUpdate(ctx, out, &n, ct, (int)ct_len) != 1) {
        goto done;
    }
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, (void *)tag) != 1) {
        goto done;
    }
    if (EVP_DecryptFinal_ex(ctx, out + n, &n) != 1) {
        co_memzero(out, ct_len);
        goto done;
    }
    error = 0;
done:
    EVP_CIPHER_CTX_free(ctx);
    return error;
}

int co_sops__chacha_open(unsigned char *out,
                         const unsigned char key[32],
                         const unsigned char nonce[12],
                         const unsigned char *in,
                         size_t len)
{
    if (len < 16) {
        return CO_EAUTH;
    }
    return aead_open(EVP_chacha20_poly1305(), out, key, nonce, 12, NULL, 0, in, len - 16,
                     in + len - 16);
}

int co_sops__aes_gcm_open(unsigned char *out,
                          const unsigned char key[32],
                          const unsigned char *iv,
                          size_t iv_len,
                          const unsigned char *aad,
                          size_t aad_len,
                          const unsigned char *ct,
                          size_t ct_len,
                          const unsigned char tag[16])
{
    return aead_open(EVP_aes_256_gcm(), out, key, iv, iv_len, aad, aad_len, ct, ct_len, tag);
}

int co_sops__x25519(unsigned char out[32],
                    const unsigned char scalar[32],
                    const unsigned char point[32])
{
    int error = CO_EINVALID;
    size_t len = 32;
    EVP_PKEY *priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, scalar, 32);
    EVP_PKEY *peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, point, 32);
    EVP_PKEY_CTX *ctx = priv ? EVP_PKEY_CTX_new(priv, NULL) : NULL;
    if (!ctx || !peer || EVP_PKEY_derive_init(ctx) != 1 ||
        EVP_PKEY_derive_set_peer(ctx, peer) != 1) {
        goto done;
    }
    /* OpenSSL refuses an all-zero result (a low-order point), as age requires. */
    if (EVP_PKEY_derive(ctx, out, &len) != 1 || len != 32) {
        goto done;
    }
    error = 0;
done:
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(peer);
    EVP_PKEY_free(priv);
    return error;
}

int co_sops__x25519_base(unsigned char out[32], const unsigned char scalar[32])
{
    size_t len = 32;
    EVP_PKEY *priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, scalar, 32);
    int ok = priv && EVP_PKEY_get_raw_public_key(priv, out, &len) == 1 && len == 32;
    EVP_PKEY_free(priv);
    return ok ? 0 : co_error_set(CO_ERROR, "cannot derive an X25519 public key");
}

/* ---- the value envelope ------------------------------------------------------------------ */

/* sops matches envelopes with a Go regular expression; PCRE's greedy backtracking picks the
 * same groups for it. Compiled once, shared read-only between threads. */
static pcre2_code *envelope_re;
static pthread_once_t envelope_once = PTHREAD_ONCE_INIT;

static void envelope_compile(void)
{
    int err = 0;
    PCRE2_SIZE off = 0;
    envelope_re =
        pcre2_compile((PCRE2_SPTR) "^ENC\\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\\]",
                      PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    CO_ASSERT(envelope_re != NULL);
}

bool co_sops__is_envelope(const char *s, size_t len)
{
    static const char prefix[] = "ENC[AES256_GCM,data:";
    return len > sizeof(prefix) && memcmp(s, prefix, sizeof(prefix) - 1) == 0;
}

static const struct {
    const char *name;
    co_sops__vtype type;
} vtypes[] = {
    {"str", CO_SOPS__T_STR},         {"int", CO_SOPS__T_INT},     {"float", CO_SOPS__T_FLOAT},
    {"bool", CO_SOPS__T_BOOL},       {"bytes", CO_SOPS__T_BYTES}, {"time", CO_SOPS__T_TIME},
    {"comment", CO_SOPS__T_COMMENT},
};

int co_sops__envelope_open(co_buf *out,
                           co_sops__vtype *type,
                           const unsigned char key[32],
                           const char *env,
                           size_t env_len,
                           const char *aad,
                           size_t aad_len)
{
    int error = CO_EINVALID;
    pcre2_match_data *md = NULL;
    unsigned char *data = NULL, *iv = NULL, *tag = NULL, *plain = NULL;
    size_t data_len = 0, iv_len = 0, tag_len = 0;

    pthread_once(&envelope_once, envelope_compile);
    md = pcre2_match_data_create_from_pattern(envelope_re, NULL);
    if (pcre2_match(envelope_re, (PCRE2_SPTR)env, env_len, 0, 0, md, NULL) < 5) {
        error = co_error_set(CO_EINVALID, "value does not match the sops data format");
        goto done;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    const char *tname = env + ov[8];
    size_t tname_len = ov[9] - ov[8];
    size_t t;
    for (t = 0; t < CO_ARRAY_SIZE(vtypes); t++) {
        if (strlen(vtypes[t].name) == tname_len && memcmp(vtypes[t].name, tname, tname_len) == 0) {
            break;
        }
    }
    if (t == CO_ARRAY_SIZE(vtypes)) {
        error = co_error_set(CO_EINVALID, "unknown sops data type \"%.*s\"", (int)tname_len, tname);
        goto done;
    }
    if (co_base64_decode_alloc(&data, &data_len, env + ov[2], ov[3] - ov[2], CO_BASE64_STD) < 0) {
        error = co_error_set(CO_EINVALID, "invalid base64 in the data of a sops value");
        goto done;
    }
    if (co_base64_decode_alloc(&iv, &iv_len, env + ov[4], ov[5] - ov[4], CO_BASE64_STD) < 0 ||
        co_base64_decode_alloc(&tag, &tag_len, env + ov[6], ov[7] - ov[6], CO_BASE64_STD) < 0) {
        error = co_error_set(CO_EINVALID, "invalid base64 in the iv or tag of a sops value");
        goto done;
    }
    if (iv_len == 0 || tag_len != 16) {
        error =
            co_error_set(CO_EINVALID, "sops value has an empty iv or a tag that is not 16 bytes");
        goto done;
    }
    plain = co_xmalloc(data_len + 1);
    if (co_sops__aes_gcm_open(plain, key, iv, iv_len, (const unsigned char *)aad, aad_len, data,
                              data_len, tag) < 0) {
        error = co_error_set(CO_EAUTH, "could not decrypt with AES_GCM (wrong data key, moved "
                                       "or tampered value)");
        goto done;
    }
    if ((error = co_buf_put(out, plain, data_len)) < 0) {
        co_error_set(error, "decrypted value exceeds the output limit");
        goto done;
    }
    *type = vtypes[t].type;
    error = 0;
done:
    if (plain) {
        co_free_secret(plain, data_len + 1);
    }
    free(data);
    free(iv);
    free(tag);
    pcre2_match_data_free(md);
    return error;
}

/* ---- Shamir ------------------------------------------------------------------------------ */

uint8_t co_sops__gf_mul(uint8_t a, uint8_t b)
{
    /* Constant-time shift-and-add; reduction by x^8 + x^4 + x^3 + x + 1 (0x11b). */
    uint8_t r = 0;
    for (int i = 0; i < 8; i++) {
        r ^= (uint8_t)(a & (uint8_t) - (b & 1));
        uint8_t hi = (uint8_t) - (a >> 7);
        a = (uint8_t)((a << 1) ^ (hi & 0x1b));
        b >>= 1;
    }
    return r;
}

/* a^254 = a^-1 in GF(2^8) (0 maps to 0). */
static uint8_t gf_inv(uint8_t a)
{
    uint8_t r = 1, base = a;
    for (int e = 254; e > 0; e >>= 1) {
        if (e & 1) {
            r = co_sops__gf_mul(r, base);
        }
        base = co_sops__gf_mul(base, base);
    }
    return r;
}

int co_sops__shamir_combine(unsigned char **out,
                            size_t *out_len,
                            const unsigned char *const *shares,
                            size_t n,
                            size_t share_len)
{
    if (n < 2) {
        return co_error_set(CO_EINVALID,
                            "less than two Shamir parts cannot reconstruct the data key");
    }
    if (share_len < 2) {
        return co_error_set(CO_EINVALID, "Shamir parts must be at least two bytes");
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++) {
            if (shares[i][share_len - 1] == shares[j][share_len - 1]) {
                return co_error_set(CO_EINVALID, "duplicate Shamir part");
            }
        }
    }
    size_t len = share_len - 1;
    unsigned char *secret = co_xmalloc(len);
    /* Lagrange interpolation at x = 0 for every byte position. */
    for (size_t k = 0; k < len; k++) {
        uint8_t acc = 0;
        for (size_t i = 0; i < n; i++) {
            uint8_t xi = shares[i][share_len - 1];
            uint8_t basis = 1;
            for (size_t j = 0; j < n; j++) {
                if (i == j) {
                    continue;
                }
                uint8_t xj = shares[j][share_len - 1];
                /* (0 - xj) / (xi - xj); subtraction is XOR in characteristic 2. */
                basis = co_sops__gf_mul(basis, co_sops__gf_mul(xj, gf_inv((uint8_t)(xi ^ xj))));
            }
            acc ^= co_sops__gf_mul(shares[i][k], basis);
        }
        secret[k] = acc;
    }
    *out = secret;
    *out_len = len;
    return 0;
}
