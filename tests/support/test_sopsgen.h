/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SOPS-encrypted files made at test time for cmocka tests: keys from `age-keygen` and `gpg`, and
 * files written by tests/oracle/sopsgen with the data key wrapped by the real `age` and `gpg`
 * command-line tools (tests/support/sopsgen.sh does the work; this is its C face).
 */
#ifndef CO_TEST_SOPSGEN_H
#define CO_TEST_SOPSGEN_H

#include <stddef.h>

/** Fresh keys in a private temporary directory. */
typedef struct test_sopsgen {
    char *dir;              /**< the keys and the GnuPG home */
    char *age_key[2];       /**< paths of two age identity files (*.agekey) */
    char *age_recipient[2]; /**< their public keys */
    char *pgp_key;          /**< path of an unprotected, ASCII-armoured OpenPGP secret key */
    char *pgp_fpr;          /**< its fingerprint */
} test_sopsgen;

/** Makes two age keys and an OpenPGP key in a new temporary directory and builds sopsgen;
 * fails the test, naming the missing tool, when age, gpg or go is absent (make deps installs
 * them). Takes a few seconds (RSA key generation): call it once per binary where possible. */
void test_sopsgen_init(test_sopsgen *g);

/** Stops the GnuPG agent of @p g's home and removes its directory and strings. */
void test_sopsgen_dispose(test_sopsgen *g);

/**
 * The SOPS file sopsgen writes for @p request, a sopsgen request (JSON; see
 * tests/oracle/sopsgen/main.go) in which "@0" and "@1" stand for the age recipients and "@pgp"
 * for the OpenPGP fingerprint. Fails the test when sopsgen fails.
 * @param[out] len the file's length (may be NULL)
 * @return the file, NUL-terminated; free with free().
 */
char *test_sopsgen_encrypt(const test_sopsgen *g, const char *request, size_t *len);

/** Reads key file @p path of @p g (an age_key or pgp_key); free with free(). */
char *test_sopsgen_read(const char *path, size_t *len);

#endif
