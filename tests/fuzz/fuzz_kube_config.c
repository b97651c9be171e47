/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for kubeconfig documents: any text is read as YAML (as kubeconfig files are)
 * and resolved into a configuration twice, as a trusted file (file references point into a
 * directory that does not exist) and as an untrusted kubeconfig from a Secret, with and
 * without plain http allowed. Malformed structure, base64 and URLs must end in an error naming
 * the field, never in a crash or a leak; the untrusted loader must never try to open a file,
 * and what it accepts must be marked untrusted, hold no token file and, without the flag, an
 * https server.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "co/kube/kube_config.h"
#include "co/json/yaml.h"
#include "shared/src/kube/kube_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void untrusted(const struct json_object *doc, unsigned flags)
{
    co_kube_config *cfg = NULL;
    unsigned long opened = co_kube__files_opened();
    int rc = co_kube_config_from_untrusted_json(&cfg, doc, NULL, flags);
    if (co_kube__files_opened() != opened) {
        abort(); /* a tenant's kubeconfig made us open a file */
    }
    if (rc == 0) {
        if (!co_kube_config_is_untrusted(cfg) || cfg->token_file ||
            (!(flags & CO_KUBE_CONFIG_ALLOW_HTTP) &&
             strncmp(co_kube_config_server(cfg), "https://", 8) != 0)) {
            abort();
        }
        co_kube_config_free(cfg);
    } else if (co_error_last()[0] == '\0') {
        abort();
    }
    co_error_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct json_object *doc = NULL;
    if (co_yaml_parse(&doc, (const char *)data, size, 0) < 0 || !doc ||
        !json_object_is_type(doc, json_type_object)) {
        json_object_put(doc);
        co_error_clear();
        return 0;
    }
    co_kube_config *cfg = NULL;
    if (co_kube_config_from_json(&cfg, doc, "/nonexistent-co-fuzz", NULL) == 0) {
        if (!co_kube_config_server(cfg) || !co_kube_config_namespace(cfg) ||
            co_kube_config_is_untrusted(cfg)) {
            abort();
        }
        co_kube_config_free(cfg);
    } else if (co_error_last()[0] == '\0') {
        abort(); /* a failure always says why */
    }
    co_error_clear();
    untrusted(doc, 0);
    untrusted(doc, CO_KUBE_CONFIG_ALLOW_HTTP);
    json_object_put(doc);
    return 0;
}
