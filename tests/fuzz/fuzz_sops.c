/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the SOPS readers: every input is detected, loaded in each of the five
 * formats (YAML, JSON, dotenv, INI, binary) and written back out, fed to the full decryption
 * path with an age-only key set (no GnuPG in the loop), and given to the age decryptor and the
 * value envelope parser directly. Any crash, sanitizer report, leak or hang is a finding; a
 * successful decryption of fuzzer input would mean a forged MAC, so it aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/render/sops.h"
#include "shared/src/render/sops/sops_int.h"

/* An identity generated for this target with age-keygen; it protects nothing. */
static const char identity[] =
    "AGE-SECRET-KEY-1PU0L3EPUMLH2FVN5KS6J9CU6KUC09RN5H2EL339PP9NVUYD7ZDKSMZHQZK\n";

static co_sops_keys *keys;
static co_sops__age_id *ids;
static size_t nids;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!keys) {
        keys = co_sops_keys_new();
        if (co_sops_keys_add(keys, "fuzz.agekey", identity, strlen(identity)) < 0 ||
            co_sops__age_parse_identities(&ids, &nids, identity, strlen(identity)) < 0) {
            abort();
        }
    }
    const char *text = (const char *)data;
    static const co_sops_format formats[] = {CO_SOPS_FORMAT_YAML, CO_SOPS_FORMAT_JSON,
                                             CO_SOPS_FORMAT_DOTENV, CO_SOPS_FORMAT_INI,
                                             CO_SOPS_FORMAT_BINARY};
    (void)co_sops_detect(data, size);
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        co_sops__doc doc;
        if (co_sops__load(&doc, formats[i], text, size) == 0) {
            for (size_t j = 0; j < sizeof(formats) / sizeof(formats[0]); j++) {
                co_buf out = CO_BUF_INIT(CO_MAX_SOPS_FILE);
                (void)!co_sops__emit(&out, &doc, formats[j]);
                co_buf_dispose(&out);
            }
            co_sops__doc_dispose(&doc);
        }
        co_buf plain = CO_BUF_INIT(CO_MAX_SOPS_FILE);
        if (co_sops_decrypt(&plain, keys, formats[i], CO_SOPS_FORMAT_YAML, data, size) == 0) {
            abort();
        }
        co_buf_dispose(&plain);
    }
    co_buf out = CO_BUF_INIT(CO_MAX_AGE_PAYLOAD);
    if (co_sops__age_decrypt(&out, ids, nids, data, size) == 0) {
        abort();
    }
    co_buf_dispose(&out);
    static const unsigned char key[32] = {1, 2, 3};
    co_sops__vtype type;
    co_buf value = CO_BUF_INIT(CO_MAX_SOPS_FILE);
    (void)!co_sops__envelope_open(&value, &type, key, text, size, "a:", 2);
    co_buf_dispose(&value);
    co_error_clear();
    return 0;
}
