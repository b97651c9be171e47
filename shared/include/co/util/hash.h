/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file hash.h
 * The string hash of every hash table whose keys come from outside the process: SipHash under
 * a key drawn at random once per process.
 *
 * An unkeyed hash (FNV-1a, say) lets whoever writes the keys (a Component's values, a source's
 * YAML, object names in the cluster) compute, offline, thousands of keys that land in one slot,
 * and every insertion then walks all of them: quadratic time from linear input. With a secret
 * random key the slot of a key cannot be predicted, so colliding sets cannot be prepared.
 *
 * co_hash_bytes() and co_hash_str() are SipHash-1-3 (one compression round per word, three
 * finalisation rounds; the variant Python and Rust use for their tables) under the process key,
 * which is read from getrandom(2) on first use. co_hash_sip13() and co_hash_sip24() take the
 * key as an argument: SipHash-2-4 is the pseudorandom function of the paper that defines them
 * (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012) and checks the
 * implementation against its reference vectors.
 *
 * The values are not stable across processes: never store or send them (content digests are
 * co/util/digest.h's). Thread-safe.
 */
#ifndef CO_HASH_H
#define CO_HASH_H

#include <stddef.h>
#include <stdint.h>

/** A 128-bit SipHash key: the key's bytes 0-7 and 8-15, each read as a little-endian word. */
typedef struct co_hash_key {
    uint64_t k0;
    uint64_t k1;
} co_hash_key;

/** SipHash-1-3 of the @p len bytes at @p data under the process key. */
uint64_t co_hash_bytes(const void *data, size_t len);

/** co_hash_bytes() of the NUL-terminated string @p s (without its NUL). */
uint64_t co_hash_str(const char *s);

/** SipHash-1-3 of the @p len bytes at @p data under @p key. */
uint64_t co_hash_sip13(const co_hash_key *key, const void *data, size_t len);

/** SipHash-2-4 of the @p len bytes at @p data under @p key. */
uint64_t co_hash_sip24(const co_hash_key *key, const void *data, size_t len);

#endif
