/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private interface between the files of the SOPS module: the cryptographic primitives
 * (sops_crypto.c), the age decryptor (sops_age.c), the GnuPG key store (sops_pgp.c), the
 * document tree with its format readers and writers (sops_tree.c) and the decryption driver
 * (sops.c). Nothing here is part of the public API.
 */
#ifndef CO_SOPS_INT_H
#define CO_SOPS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/buf.h"
#include "co/util/common.h"
#include "co/render/sops.h"

/* ---- encodings ------------------------------------------------------------------------- */

/**
 * Decodes a bech32 string (BIP 173 checksum, no length limit, as age uses it).
 * @param[out] hrp the human-readable part as written (free with free())
 * @param[out] data the 8-bit payload (free with free())
 * @return 0 or CO_EINVALID with a message.
 */
CO_MUST_CHECK int co_sops__bech32_decode(char **hrp,
                                         unsigned char **data,
                                         size_t *data_len,
                                         const char *s,
                                         size_t len);

/* ---- primitives over OpenSSL ------------------------------------------------------------- */

/** HKDF-SHA256 into @p out (@p out_len bytes). @return 0 or CO_ERROR. */
CO_MUST_CHECK int co_sops__hkdf_sha256(unsigned char *out,
                                       size_t out_len,
                                       const unsigned char *ikm,
                                       size_t ikm_len,
                                       const unsigned char *salt,
                                       size_t salt_len,
                                       const char *info);

/** HMAC-SHA256 of @p data into @p mac (32 bytes). @return 0 or CO_ERROR. */
CO_MUST_CHECK int co_sops__hmac_sha256(unsigned char mac[32],
                                       const unsigned char key[32],
                                       const void *data,
                                       size_t len);

/**
 * ChaCha20-Poly1305 open with a 12-byte nonce and no associated data; @p in carries the
 * 16-byte tag at its end. @p out receives len - 16 bytes.
 * @return 0, or CO_EAUTH when authentication fails (no message set).
 */
CO_MUST_CHECK int co_sops__chacha_open(unsigned char *out,
                                       const unsigned char key[32],
                                       const unsigned char nonce[12],
                                       const unsigned char *in,
                                       size_t len);

/** X25519(scalar, point) into @p out. @return 0, or CO_EINVALID for a low-order point. */
CO_MUST_CHECK int co_sops__x25519(unsigned char out[32],
                                  const unsigned char scalar[32],
                                  const unsigned char point[32]);

/** The X25519 public key of @p scalar. @return 0 or CO_ERROR. */
CO_MUST_CHECK int co_sops__x25519_base(unsigned char out[32], const unsigned char scalar[32]);

/**
 * AES-256-GCM open with an IV of any length (sops uses 32 bytes) and associated data.
 * @return 0, or CO_EAUTH when the tag does not verify (no message set).
 */
CO_MUST_CHECK int co_sops__aes_gcm_open(unsigned char *out,
                                        const unsigned char key[32],
                                        const unsigned char *iv,
                                        size_t iv_len,
                                        const unsigned char *aad,
                                        size_t aad_len,
                                        const unsigned char *ct,
                                        size_t ct_len,
                                        const unsigned char tag[16]);

/* ---- the sops value envelope ----------------------------------------------------------- */

/** The type word of an ENC[...] envelope. */
typedef enum co_sops__vtype {
    CO_SOPS__T_STR,
    CO_SOPS__T_INT,
    CO_SOPS__T_FLOAT,
    CO_SOPS__T_BOOL,
    CO_SOPS__T_BYTES,
    CO_SOPS__T_TIME,
    CO_SOPS__T_COMMENT,
} co_sops__vtype;

/** True when @p s (length @p len) has the shape of an ENC[AES256_GCM,...] envelope. */
bool co_sops__is_envelope(const char *s, size_t len);

/**
 * Opens one ENC[AES256_GCM,data:..,iv:..,tag:..,type:..] envelope with @p key, using
 * @p aad as additional data. @p out receives the plaintext bytes (capped by its maximum).
 * @return 0, CO_EINVALID (malformed envelope or unknown type), CO_EAUTH (wrong key, wrong
 * path or tampered value), CO_ETOOBIG. A message is set in every case.
 */
CO_MUST_CHECK int co_sops__envelope_open(co_buf *out,
                                         co_sops__vtype *type,
                                         const unsigned char key[32],
                                         const char *env,
                                         size_t env_len,
                                         const char *aad,
                                         size_t aad_len);

/* ---- Shamir secret sharing over GF(2^8), as sops (HashiCorp Vault's scheme) ------------ */

/** Multiplies in GF(2^8) with the AES polynomial x^8 + x^4 + x^3 + x + 1. */
uint8_t co_sops__gf_mul(uint8_t a, uint8_t b);

/**
 * Recombines shares (each: y bytes followed by one x byte, all the same length >= 2).
 * @param[out] out secret of length share_len - 1 (free with co_free_secret()).
 * @return 0 or CO_EINVALID (fewer than two shares, unequal lengths, duplicate x).
 */
CO_MUST_CHECK int co_sops__shamir_combine(unsigned char **out,
                                          size_t *out_len,
                                          const unsigned char *const *shares,
                                          size_t n,
                                          size_t share_len);

/* ---- age --------------------------------------------------------------------------------- */

/** Kinds of age identities. */
typedef enum co_sops__age_kind {
    CO_SOPS__AGE_X25519,      /**< AGE-SECRET-KEY-1... */
    CO_SOPS__AGE_SSH_ED25519, /**< an OpenSSH ed25519 private key */
    CO_SOPS__AGE_SSH_RSA,     /**< an OpenSSH or PEM RSA private key */
} co_sops__age_kind;

/** One parsed identity. */
typedef struct co_sops__age_id {
    co_sops__age_kind kind;
    unsigned char secret[32];     /**< X25519 scalar (for ed25519: derived from the seed) */
    unsigned char public_key[32]; /**< its X25519 public key */
    unsigned char ssh_tag[4];     /**< SSH keys: SHA-256 of the wire public key, first 4 bytes */
    unsigned char tweak[32];      /**< ssh-ed25519: HKDF of the wire public key */
    void *rsa;                    /**< ssh-rsa: the private key (an EVP_PKEY) */
} co_sops__age_id;

/**
 * Parses an identity file: one identity per line, blank lines and '#' comments ignored, as
 * sops' Import does; or, as a whole, an unencrypted OpenSSH (or PEM RSA) private key for the
 * ssh-ed25519 and ssh-rsa recipient types. Appends to @p ids (free with
 * co_sops__age_ids_free()).
 * @return 0, CO_EINVALID (malformed line; the message names the line number, never the key)
 * or CO_EUNSUPPORTED (post-quantum or plugin identities, passphrase-protected SSH keys).
 */
CO_MUST_CHECK int
co_sops__age_parse_identities(co_sops__age_id **ids, size_t *n, const char *text, size_t len);

/** Wipes and frees identities; NULL is a no-op. */
void co_sops__age_ids_free(co_sops__age_id *ids, size_t n);

/**
 * Decrypts an age file (binary or ASCII-armored) with any of @p ids.
 * @return 0; CO_EAUTH when no identity matches or the file was tampered with; CO_EINVALID
 * for malformed input; CO_EUNSUPPORTED for recipient types we cannot unwrap; CO_ETOOBIG.
 */
CO_MUST_CHECK int
co_sops__age_decrypt(co_buf *out, const co_sops__age_id *ids, size_t n, const void *in, size_t len);

/* ---- GnuPG ------------------------------------------------------------------------------- */

typedef struct co_sops__pgp co_sops__pgp;

/** Creates a private GnuPG home (mode 0700 under $TMPDIR). @return 0 or CO_ERROR. */
CO_MUST_CHECK int co_sops__pgp_new(co_sops__pgp **out);

/** Imports ASCII-armored or binary keys. @return 0 or CO_EINVALID. */
CO_MUST_CHECK int co_sops__pgp_import(co_sops__pgp *pgp, const void *data, size_t len);

/** Number of secret keys imported so far. */
size_t co_sops__pgp_secret_count(const co_sops__pgp *pgp);

/** Decrypts an OpenPGP message. @return 0, CO_EAUTH (no usable key) or CO_EINVALID. */
CO_MUST_CHECK int co_sops__pgp_decrypt(co_buf *out, co_sops__pgp *pgp, const char *msg, size_t len);

/** Stops the home's agent and removes the home; NULL is a no-op. */
void co_sops__pgp_free(co_sops__pgp *pgp);

/* ---- the document tree ------------------------------------------------------------------- */

typedef enum co_sops__kind {
    CO_SOPS__N_NULL,
    CO_SOPS__N_STR,
    CO_SOPS__N_INT,
    CO_SOPS__N_FLOAT,
    CO_SOPS__N_BOOL,
    CO_SOPS__N_TIME,
    CO_SOPS__N_MAP,
    CO_SOPS__N_LIST,
} co_sops__kind;

/**
 * A node of a document. Scalars keep their text in @c str: strings their bytes, ints and
 * floats their canonical text as sops' MAC hashes it (Go's strconv formatting), booleans
 * "True"/"False", times RFC 3339. Maps keep keys in document order (duplicates allowed, as in
 * sops' tree).
 */
typedef struct co_sops__node {
    co_sops__kind kind;
    char *str;
    size_t len;
    long long ival;
    double fval;
    bool bval;
    size_t n;
    size_t cap;
    char **keys;
    size_t *key_lens;
    struct co_sops__node **kids;
} co_sops__node;

/** A whole file: one map per document. */
typedef struct co_sops__doc {
    co_sops__node **branches;
    size_t n;
    co_sops__node *meta; /**< the "sops" metadata map, taken out of the branches */
} co_sops__doc;

co_sops__node *co_sops__node_new(co_sops__kind kind);
void co_sops__node_free(co_sops__node *node);
/** Appends a key/value pair to a map; takes ownership of @p value. */
void co_sops__map_add(co_sops__node *map, const char *key, size_t key_len, co_sops__node *value);
/** Appends an item to a list; takes ownership of @p value. */
void co_sops__list_add(co_sops__node *list, co_sops__node *value);
/** The first value under @p key in @p map, or NULL (borrowed from the map). */
co_sops__node *co_sops__map_get(const co_sops__node *map, const char *key);
/** Sets a scalar node to a string, taking a copy. */
void co_sops__node_set_str(co_sops__node *node, const char *s, size_t len);
void co_sops__doc_dispose(co_sops__doc *doc);

/**
 * Go's strconv.FormatFloat(v, 'f', -1, 64): shortest round-trip digits, never an exponent.
 * @p buf must hold at least 400 bytes.
 */
void co_sops__format_float(char *buf, size_t size, double v);

/** Reads an encrypted file of the given format, separating its metadata. */
CO_MUST_CHECK int
co_sops__load(co_sops__doc *doc, co_sops_format format, const char *data, size_t len);

/** Writes the (decrypted) branches in @p format. */
CO_MUST_CHECK int co_sops__emit(co_buf *out, const co_sops__doc *doc, co_sops_format format);

#endif
