/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target over certificate and key parsing: the certs/ inspection, counting, pairing,
 * verification and bundling functions and the webhook's serving pair store (both on GnuTLS, with
 * PEM read two different ways), all fed from the same bytes. Input layout: the text up to the
 * first "\n%%\n" is the certificate PEM, the rest the key PEM (or, when there is no separator,
 * both are the whole input, as in a combined PEM file). Besides the sanitizers, the answers must
 * agree with each other: a certificate that inspects fine is counted, a pair the store takes is a
 * pair certs/ accepts, and a bundle holds no more certificates than its input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "certs/certs.h"
#include "co/util/buf.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "webhook/wh_tls.h"

/* 2026-01-01T00:00:00Z: a fixed clock keeps runs reproducible. */
#define FUZZ_NOW ((time_t)1767225600)

static wh_tls *store;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    co_log_setup("fuzz", CO_LOG_ERROR, CO_LOG_FORMAT_TEXT);
    wh_tls_new(&store);
    return 0;
}

static char *dup_text(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) {
        abort();
    }
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (size_t)64 * 1024) {
        return -1;
    }
    /* one memmem(), not a memcmp() per byte: libFuzzer hooks every compare call */
    const uint8_t *sep = memmem(data, size, "\n%%\n", 4);
    size_t cert_len = sep ? (size_t)(sep - data) : size;
    const uint8_t *key_start = sep ? sep + 4 : data;
    size_t key_len = sep ? size - cert_len - 4 : size;
    char *cert = dup_text(data, cert_len);
    char *key = dup_text(key_start, key_len);

    co_certs_info info;
    int inspected = co_certs_inspect(&info, cert, cert_len);
    int count = co_certs_count(cert, cert_len);
    if (inspected == 0 && count == 0) {
        abort(); /* a certificate inspected but not counted */
    }
    if (inspected == 0 &&
        (memchr(info.subject, '\0', sizeof(info.subject)) == NULL ||
         memchr(info.sans, '\0', sizeof(info.sans)) == NULL || strlen(info.sha256) != 64)) {
        abort(); /* inspection left an unterminated or short field */
    }
    int paired = co_certs_check_pair(cert, key);
    (void)co_certs_verify(cert, cert, "127.0.0.1", FUZZ_NOW);
    (void)co_certs_verify(cert, key, NULL, FUZZ_NOW);

    co_buf bundle;
    co_buf_init(&bundle, (size_t)1024 * 1024);
    const char *pems[2] = {cert, key};
    int bundled = co_certs_bundle(&bundle, pems, 2, FUZZ_NOW);
    if (bundled > 0 && count >= 0) {
        int again = co_certs_count(bundle.ptr, bundle.len);
        if (again != bundled) {
            abort(); /* the bundle does not hold what was written into it */
        }
    }
    co_buf_dispose(&bundle);

    int changed = 0;
    int stored = wh_tls_set_pem(store, &changed, cert, cert_len, key, key_len);
    if (stored == 0 && paired != 0) {
        abort(); /* the serving store took a pair that certs/ rejects */
    }
    if (stored == 0 && (!wh_tls_loaded(store) || wh_tls_not_after(store) == 0)) {
        abort(); /* a stored pair that is not served */
    }
    co_error_clear();
    free(cert);
    free(key);
    return 0;
}
