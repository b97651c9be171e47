/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for postBuild substitution: the first byte chooses strict mode, the rest is
 * the input, evaluated against a fixed variable set. Any crash, sanitizer report, leak or hang
 * is a finding, as is a result over the output cap or a change to the buffer on failure.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/caps.h"
#include "co/render/envsubst.h"
#include "co/util/error.h"

static co_envsubst_vars *vars;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!vars) {
        static const char *const kv[][2] = {
            {"v", "abcABCabc"},
            {"x", "a/b.c"},
            {"w", ""},
            {"n", "3"},
            {"u", "h\xc3\xa9llo w\xc3\xb6rld"},
            {"p", "*.c"},
            {"m", "-2"},
        };
        vars = co_envsubst_vars_new();
        for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
            if (co_envsubst_vars_set(vars, kv[i][0], kv[i][1], strlen(kv[i][1])) < 0) {
                abort();
            }
        }
    }
    if (size == 0) {
        return 0;
    }
    unsigned flags = (data[0] & 1) ? CO_ENVSUBST_STRICT : 0;
    co_buf out = CO_BUF_INIT(1 << 20);
    if (co_buf_puts(&out, "prefix") < 0) {
        abort();
    }
    int rc = co_envsubst_eval(&out, (const char *)data + 1, size - 1, vars, flags);
    if (out.len > out.max || (rc < 0 && (out.len != 6 || memcmp(out.ptr, "prefix", 6) != 0))) {
        abort();
    }
    co_buf_dispose(&out);
    co_error_clear();
    return 0;
}
