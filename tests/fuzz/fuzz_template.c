/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the template engine: parse and render. The first byte chooses the
 * options (missingkey mode, number decoding, whether sprig, the runtime and Helm's functions
 * exist); the rest is template text, optionally followed by a NUL byte and JSON data for the dot.
 * Any crash, sanitizer report, leak or hang is a finding, as is a success with an output over
 * the cap, or a failure without an error message. Each run has a small render budget (co/budget.h)
 * so that templates that build large or shared values stay short; the seeds include values that
 * contain themselves, values nested 5000 levels deep and executions nested without end.
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/render/template.h"

static co_template_funcs *funcs[2];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!funcs[0]) {
        co_template_funcs_new(&funcs[0], 0);
        co_template_funcs_new(&funcs[1], CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_RUNTIME |
                                             CO_TEMPLATE_FUNCS_HELM);
    }
    if (size == 0) {
        return 0;
    }
    uint8_t opt = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    const char *nul = memchr(text, '\0', len);
    size_t tlen = nul ? (size_t)(nul - text) : len;

    struct json_object *dot = NULL;
    if (nul && co_json_parse(&dot, nul + 1, len - tlen - 1) < 0) {
        dot = NULL;
    }

    co_template_options o = {0};
    o.missingkey = (co_template_missingkey)(opt % 3);
    o.max_steps = 20000; /* keeps every run short; the step cap is part of what is tested */
    co_template_numbers numbers =
        (opt & 4) ? CO_TEMPLATE_NUMBERS_INT64 : CO_TEMPLATE_NUMBERS_FLOAT64;
    co_template_set *set = NULL;
    co_budget_limits budget = {.cpu_ns = 2LL * 1000 * 1000 * 1000, .memory = 16 * CO_MIB};
    co_budget_begin(&budget);
    co_template_set_new(&set, funcs[(opt >> 3) & 1], &o);
    if (co_template_set_parse(set, "fuzz", text, tlen) == 0) {
        char *out = NULL;
        size_t out_len = 0;
        int rc = co_template_render(set, "fuzz", dot, numbers, NULL, &out, &out_len);
        if (rc == 0 && (out_len > CO_MAX_TEMPLATE_OUTPUT || strlen(out) > out_len)) {
            abort();
        }
        if (rc < 0 && co_error_last()[0] == '\0') {
            abort();
        }
        if (rc == 0) {
            /* the clean-up never grows the text */
            if (co_template_strip_no_value(out, out_len) > out_len) {
                abort();
            }
        }
        free(out);
    } else if (co_error_last()[0] == '\0') {
        abort();
    }
    co_template_set_free(set);
    co_budget_end();
    json_object_put(dot);
    co_error_clear();
    return 0;
}
