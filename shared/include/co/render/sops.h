/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file sops.h
 * Decryption of SOPS-encrypted files (YAML, JSON, dotenv, INI and binary), compatible with
 * sops 3.x and with the way Flux and the original operator use it.
 *
 * A key set (co_sops_keys) holds the private keys taken from a Component's decryption Secret:
 * entries named `*.agekey` carry age identities (`AGE-SECRET-KEY-1...` lines, or, beyond the
 * original, one unencrypted OpenSSH ed25519 or RSA private key for age's ssh-ed25519 and
 * ssh-rsa recipient types), entries named
 * `*.asc` carry OpenPGP keys, which are imported into a private, temporary GnuPG home (mode
 * 0700, removed by co_sops_keys_free()); everything else is ignored. Keys are never logged and
 * never written anywhere else.
 *
 * A file counts as encrypted when its bytes contain one of sops' MAC markers (`mac: ENC[`,
 * `"mac": "ENC[`, `sops_mac=ENC[`, `[sops]`). Decryption recovers the data key (age, PGP, key
 * groups with a Shamir threshold), opens every value with its tree path as additional data,
 * and verifies the file's MAC over the plaintext before anything is returned: a tampered file
 * fails with CO_EAUTH and yields no plaintext. The output format follows the file name's
 * extension (`.yaml`/`.yml`, `.json`, `.env`, `.ini`, anything else: binary, i.e. the value of
 * the document's single `data` key).
 *
 * Differences from the original (see README.md): the MAC is always verified; a file that is
 * encrypted while the key set is empty is an error, never a silent pass-through; master keys
 * other than age and PGP (cloud KMS, Vault) are reported as unsupported, as are post-quantum
 * (ML-KEM) age recipients, which OpenSSL 3.0 cannot do; YAML comments are not reproduced in the
 * output.
 *
 * A key set may be used by one thread at a time; functions without a key set are thread-safe.
 */
#ifndef CO_SOPS_H
#define CO_SOPS_H

#include <stdbool.h>
#include <stddef.h>

#include "co/util/buf.h"
#include "co/util/common.h"

struct json_object;

/** Storage formats of sops. */
typedef enum co_sops_format {
    CO_SOPS_FORMAT_NONE = 0, /**< not a sops file */
    CO_SOPS_FORMAT_YAML,
    CO_SOPS_FORMAT_JSON,
    CO_SOPS_FORMAT_DOTENV,
    CO_SOPS_FORMAT_INI,
    CO_SOPS_FORMAT_BINARY, /**< a JSON document whose `data` key holds the whole file */
} co_sops_format;

/** A set of decryption keys. */
typedef struct co_sops_keys co_sops_keys;

/** Creates an empty key set (free with co_sops_keys_free()). */
co_sops_keys *co_sops_keys_new(void);

/**
 * Adds one entry of a decryption Secret: `*.agekey` → age identities, `*.asc` → OpenPGP keys,
 * other names are ignored (as Flux and the original do).
 * @param name the Secret data key, used for the suffix and in error messages
 * @return 0; CO_EINVALID when an age identity or PGP key cannot be parsed (the message names
 * the entry, never the key material); CO_EUNSUPPORTED for age plugin or post-quantum identities.
 */
CO_MUST_CHECK int
co_sops_keys_add(co_sops_keys *keys, const char *name, const void *value, size_t len);

/**
 * Adds every entry of a Secret object's `data` (base64, as the API server returns it) and
 * `stringData` maps through co_sops_keys_add(). @p secret is borrowed.
 * @return 0 or the first error of co_sops_keys_add(); CO_EINVALID for bad base64.
 */
CO_MUST_CHECK int co_sops_keys_add_secret(co_sops_keys *keys, const struct json_object *secret);

/** Number of usable private keys (age identities plus PGP secret keys). */
size_t co_sops_keys_count(const co_sops_keys *keys);

/** Frees the key set: wipes age identities, stops the GnuPG agent, removes the GnuPG home.
 * NULL is a no-op. */
void co_sops_keys_free(co_sops_keys *keys);

/** The sops format of @p data by its markers, or CO_SOPS_FORMAT_NONE when not encrypted. */
co_sops_format co_sops_detect(const void *data, size_t len);

/** The output format for a file name by its extension (binary when not recognised). */
co_sops_format co_sops_format_for_path(const char *path);

/**
 * Decrypts one file as it is read: "these bytes named @p path, with this key set".
 * A file without sops markers is copied to @p out unchanged. An encrypted file is decrypted
 * from its detected format into the format of @p path's extension.
 * @param[out] out receives the plaintext (appended; its cap applies)
 * @param keys the key set; NULL means decryption is not configured, and encrypted files then
 * pass through unchanged, as in the original
 * @param path the file's name, used for the output format and in error messages
 * @return 0; CO_EINVALID (malformed file, empty key set for an encrypted file); CO_EAUTH (no
 * key can recover the data key, a value or the MAC does not verify); CO_EUNSUPPORTED (only
 * unsupported master keys); CO_ETOOBIG. The message names @p path.
 */
CO_MUST_CHECK int co_sops_decrypt_file(co_buf *out,
                                       co_sops_keys *keys,
                                       const char *path,
                                       const void *data,
                                       size_t len);

/**
 * Decrypts with explicit input and output formats (input NONE: detect by markers).
 * Errors as co_sops_decrypt_file(); an input without markers and format NONE is CO_EINVALID.
 */
CO_MUST_CHECK int co_sops_decrypt(co_buf *out,
                                  co_sops_keys *keys,
                                  co_sops_format in_format,
                                  co_sops_format out_format,
                                  const void *data,
                                  size_t len);

/**
 * Decrypts, in place, every regular file under @p dir that carries sops markers (symbolic
 * links are not followed; each file is replaced atomically). Used for Helm chart trees.
 * @param[out] count number of files decrypted, if not NULL
 * @return 0 or the first error (the message names the file relative to @p dir).
 */
CO_MUST_CHECK int co_sops_decrypt_tree(co_sops_keys *keys, const char *dir, size_t *count);

#endif
