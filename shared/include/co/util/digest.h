/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file digest.h
 * SHA-256 digests and the text encodings the operator writes into objects: lower-case hex,
 * lower-case unpadded base32 (the owner-id label) and base64 in its standard and URL-safe
 * alphabets, padded or raw.
 *
 * Hashing goes through OpenSSL's EVP interface. The encodings follow Go's encoding/base32 and
 * encoding/base64 exactly, so that values computed here equal those the Go operator writes:
 * the owner-id label is `strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding)
 * .EncodeToString(sha256(ownerId)))`. Strings returned as `char *` are freed with free().
 * Functions without a handle are thread-safe; a co_sha256_ctx is used by one thread at a time.
 */
#ifndef CO_DIGEST_H
#define CO_DIGEST_H

#include <stddef.h>

#include "co/util/buf.h"
#include "co/util/common.h"

/** Bytes of a SHA-256 digest. */
#define CO_SHA256_LEN 32
/** Characters of a SHA-256 digest in hex, without the terminating NUL. */
#define CO_SHA256_HEX_LEN 64

/** An incremental SHA-256 computation (for streams and files). */
typedef struct co_sha256_ctx co_sha256_ctx;

/** Base64 variants for co_base64_encode() and co_base64_decode(). */
typedef enum co_base64_flags {
    CO_BASE64_STD = 0,      /**< standard alphabet (+ /), padded with '=' */
    CO_BASE64_URL = 1 << 0, /**< URL-safe alphabet (- _) */
    CO_BASE64_RAW = 1 << 1, /**< no padding (Go's RawStdEncoding / RawURLEncoding) */
    /** decoding: the unused bits of the last character must be zero (Go's Strict()) */
    CO_BASE64_STRICT = 1 << 2,
    /** decoding: '\r' and '\n' are refused instead of skipped (age's format forbids them) */
    CO_BASE64_NO_NEWLINES = 1 << 3,
} co_base64_flags;

/** Writes the SHA-256 digest of @p len bytes at @p data to @p out. */
void co_sha256(unsigned char out[CO_SHA256_LEN], const void *data, size_t len);

/** Writes the lower-case hex SHA-256 digest of @p data, NUL-terminated, to @p out. */
void co_sha256_hex(char out[CO_SHA256_HEX_LEN + 1], const void *data, size_t len);

/** Like co_sha256_hex() over the content of @p buf. */
void co_sha256_hex_buf(char out[CO_SHA256_HEX_LEN + 1], const co_buf *buf);

/** Starts an incremental digest; free it with co_sha256_free(). Aborts on out-of-memory. */
co_sha256_ctx *co_sha256_new(void);

/** Feeds @p len bytes into @p ctx. */
void co_sha256_update(co_sha256_ctx *ctx, const void *data, size_t len);

/**
 * Finishes the digest and writes it as lower-case hex to @p out. The context is reset and
 * may be fed again for a new digest.
 */
void co_sha256_final_hex(co_sha256_ctx *ctx, char out[CO_SHA256_HEX_LEN + 1]);

/** Frees @p ctx; NULL is a no-op. */
void co_sha256_free(co_sha256_ctx *ctx);

/** Lower-case hex of @p len bytes. Free the result with free(). */
char *co_hex_encode(const void *data, size_t len);

/**
 * Lower-case, unpadded base32 (RFC 4648 alphabet) of @p len bytes, as Go's
 * `base32.StdEncoding.WithPadding(base32.NoPadding)` followed by strings.ToLower.
 * Free the result with free().
 */
char *co_base32_lower(const void *data, size_t len);

/** Base64 of @p len bytes in the variant @p flags (co_base64_flags). Free with free(). */
char *co_base64_encode(const void *data, size_t len, unsigned flags);

/**
 * Appends the base64 of @p len bytes in the variant @p flags to @p out, whose cap bounds it.
 * @return 0 or CO_ETOOBIG (the buffer is disposed).
 */
CO_MUST_CHECK int co_base64_encode_buf(co_buf *out, const void *data, size_t len, unsigned flags);

/**
 * Decodes base64 text in the variant @p flags and appends the bytes to @p out, whose cap bounds
 * the result. As Go's decoder: carriage returns and newlines are ignored (unless
 * CO_BASE64_NO_NEWLINES), padding is required exactly when the variant is padded, and any other
 * character is refused. The message and its offset are Go's CorruptInputError's.
 * @return 0; CO_EINVALID ("illegal base64 data at input byte N"; @p out keeps what it held
 * before); CO_ETOOBIG when @p out's cap is exceeded (the buffer is disposed).
 */
CO_MUST_CHECK int co_base64_decode(co_buf *out, const char *text, size_t len, unsigned flags);

/**
 * Like co_base64_decode() into one new allocation sized for the whole result up front, so that
 * no reallocation leaves a copy of key material behind; on failure it is wiped before it is
 * freed. The input's length bounds the result: callers cap it first.
 * @param[out] out the bytes, NUL-terminated for convenience (free with free() or
 * co_free_secret())
 * @param[out] out_len their number
 * @return 0 or CO_EINVALID (as co_base64_decode()).
 */
CO_MUST_CHECK int co_base64_decode_alloc(unsigned char **out,
                                         size_t *out_len,
                                         const char *text,
                                         size_t len,
                                         unsigned flags);

#endif
