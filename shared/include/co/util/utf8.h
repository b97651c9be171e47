/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file utf8.h
 * UTF-8 as Go's unicode/utf8 reads and writes it: the one decoder of the library. A sequence is
 * valid when it is the shortest encoding of a code point up to U+10FFFF that is not a surrogate
 * (overlong forms, surrogates, larger values and truncated sequences are invalid), so that
 * validation, rune counts and U+FFFD replacement agree byte for byte with the Go programs the
 * operator replaces (encoding/json, text/template, sprig, kustomize, Helm). Thread-safe.
 */
#ifndef CO_UTF8_H
#define CO_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** The most bytes one code point takes. */
#define CO_UTF8_MAX 4
/** Go's utf8.RuneError, what invalid bytes decode to. */
#define CO_UTF8_RUNE_ERROR 0xFFFD

/**
 * Length (1 to 4) of the valid sequence at @p s, reading at most @p len bytes, with its code
 * point in @p cp; 0 when the bytes there are not valid UTF-8 or @p len is 0 (@p cp untouched).
 */
size_t co_utf8_decode(const void *s, size_t len, uint32_t *cp);

/**
 * Go's utf8.DecodeRune: the code point at @p s and its width; an invalid byte is U+FFFD of width
 * 1, and empty input U+FFFD of width 0.
 */
int32_t co_utf8_decode_rune(const void *s, size_t len, size_t *width);

/**
 * Go's utf8.EncodeRune: writes @p r to @p out (CO_UTF8_MAX bytes, not NUL-terminated), U+FFFD
 * in place of a negative value, a surrogate or a value past U+10FFFF.
 * @return the bytes written (1 to 4).
 */
size_t co_utf8_encode(char out[CO_UTF8_MAX], int32_t r);

/** Go's utf8.Valid: whether the @p len bytes at @p s are all valid UTF-8. */
bool co_utf8_valid(const void *s, size_t len);

/** Go's utf8.RuneCount: code points in the @p len bytes at @p s, an invalid byte counting one. */
size_t co_utf8_count(const void *s, size_t len);

#endif
