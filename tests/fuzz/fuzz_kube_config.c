/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for kubeconfig documents: any text is read as YAML (as kubeconfig files are)
 * and resolved into a configuration (file references point into a directory that does not
 * exist). Malformed structure, base64 and URLs must end in an error naming the field, never
 * in a crash or a leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "co/error.h"
#include "co/kube_config.h"
#include "co/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
        if (!co_kube_config_server(cfg) || !co_kube_config_namespace(cfg)) {
            abort();
        }
        co_kube_config_free(cfg);
    } else if (co_error_last()[0] == '\0') {
        abort(); /* a failure always says why */
    }
    json_object_put(doc);
    co_error_clear();
    return 0;
}
