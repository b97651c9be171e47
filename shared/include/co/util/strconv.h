/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file strconv.h
 * Integers read as Go's strconv.ParseInt, ParseUint and Atoi read them, for the places whose
 * answers must equal the Go programs they replace: YAML scalars, template literals and
 * functions, sops values, envsubst offsets, semantic versions.
 *
 * Semantics are Go's with bitSize 64: an optional sign ('+' or '-', ParseInt only); with base
 * 0 the base follows from the prefix ("0x", "0o", "0b" in either case, a bare leading "0" for
 * octal, else decimal) and '_' may separate digits (only there, as Go's underscoreOK() has it;
 * CO_STRCONV_NO_UNDERSCORES refuses them for callers that removed the ones their syntax
 * allows); bases 2 to 36 use the digits and letters of either case. A value that does not fit
 * is a range error as soon as it overflows, as in Go. The strings are counted, not
 * NUL-terminated.
 *
 * The parsers set no error message: they are tried on every scalar of a document and fail
 * often, and each caller names its field in its own words (Go's texts are "strconv.ParseInt:
 * parsing \"s\": invalid syntax" and "...: value out of range"). Thread-safe.
 */
#ifndef CO_STRCONV_H
#define CO_STRCONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"

/** Flags of the parsers. */
enum {
    /** refuse '_' even with base 0 */
    CO_STRCONV_NO_UNDERSCORES = 1 << 0,
};

/**
 * Go's strconv.ParseUint(s, @p base, 64) over the @p len bytes at @p s.
 * @param[out] out the value, written only on success
 * @return 0; CO_EINVALID for a syntax error (or a base other than 0 and 2..36); CO_ETOOBIG
 * when the value exceeds UINT64_MAX. No message is set.
 */
CO_MUST_CHECK int
co_strconv_parse_uint(uint64_t *out, const char *s, size_t len, int base, unsigned flags);

/**
 * Go's strconv.ParseInt(s, @p base, 64) over the @p len bytes at @p s: ParseUint after an
 * optional sign. strconv.Atoi is this with base 10.
 * @param[out] out the value, written only on success
 * @return 0; CO_EINVALID for a syntax error; CO_ETOOBIG when the value is outside the int64
 * range. No message is set.
 */
CO_MUST_CHECK int
co_strconv_parse_int(int64_t *out, const char *s, size_t len, int base, unsigned flags);

/**
 * Go's underscoreOK(), shared by ParseInt, ParseUint and ParseFloat with base 0: whether the
 * underscores of the literal @p s (sign and base prefix included) stand only between digits,
 * or between a base prefix and a digit.
 */
bool co_strconv_underscores_ok(const char *s, size_t len);

#endif
