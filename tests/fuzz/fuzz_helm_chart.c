/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for a chart's metadata: Chart.yaml and requirements.yaml (decoded into the
 * same metadata, as Helm does), and the chart's values.yaml. The input is those three files
 * separated by NUL bytes (a missing one is left out); they join two fixed subcharts under
 * charts/ and one template, so that dependencies (conditions, tags, aliases, import-values)
 * are processed against real subcharts. The chart is loaded, its values computed and it is
 * rendered. Invariants beyond "no crash, no leak, no hang": every failure carries a message;
 * a chart that loads has a name that is neither empty nor a path and a version that parses as
 * a semantic version; computing the values twice gives equal trees (NaN counting as equal to
 * NaN).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/render/helm.h"
#include "co/render/vfs.h"
#include "co/util/error.h"
#include "co/util/semver.h"

static void check_failure(int rc)
{
    if (rc < 0 && co_error_last()[0] == '\0') {
        __builtin_trap();
    }
}

static void put(co_vfs *fs, const char *path, const char *data, size_t len)
{
    if (co_vfs_mem_put(fs, path, data, len) < 0) {
        __builtin_trap();
    }
}

static void put_text(co_vfs *fs, const char *path, const char *text)
{
    put(fs, path, text, strlen(text));
}

/* co_json_equal(), except that a NaN equals a NaN: values.yaml may hold `.nan`, and a value
 * computed twice must come out the same, not equal in the IEEE sense. */
static bool same_tree(struct json_object *a, struct json_object *b)
{
    if (json_object_is_type(a, json_type_double) && json_object_is_type(b, json_type_double) &&
        isnan(json_object_get_double(a)) && isnan(json_object_get_double(b))) {
        return true;
    }
    if (json_object_is_type(a, json_type_object) && json_object_is_type(b, json_type_object)) {
        if (json_object_object_length(a) != json_object_object_length(b)) {
            return false;
        }
        json_object_object_foreach (a, key, val) {
            struct json_object *other = NULL;
            if (!json_object_object_get_ex(b, key, &other) || !same_tree(val, other)) {
                return false;
            }
        }
        return true;
    }
    if (json_object_is_type(a, json_type_array) && json_object_is_type(b, json_type_array)) {
        size_t n = json_object_array_length(a);
        if (n != json_object_array_length(b)) {
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            if (!same_tree(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i))) {
                return false;
            }
        }
        return true;
    }
    return co_json_equal(a, b);
}

static void check_chart(const co_helm_chart *c)
{
    const char *name = co_helm_chart_name(c);
    const char *version = co_helm_chart_version(c);
    if (!name || !*name || strchr(name, '/') || !version) {
        __builtin_trap();
    }
    co_semver v;
    if (co_semver_parse(&v, version) < 0) {
        __builtin_trap();
    }
    co_semver_dispose(&v);

    struct json_object *vals = NULL, *again = NULL;
    co_error_clear();
    int rc = co_helm_values(&vals, c, NULL);
    check_failure(rc);
    co_error_clear();
    int rc2 = co_helm_values(&again, c, NULL);
    if ((rc < 0) != (rc2 < 0) || (rc == 0 && !same_tree(vals, again))) {
        __builtin_trap();
    }
    json_object_put(again);
    json_object_put(vals);

    struct json_object *out = NULL;
    co_helm_options opts = {0};
    co_error_clear();
    rc = co_helm_template(&out, c, NULL, &opts);
    check_failure(rc);
    json_object_put(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const files[] = {"Chart.yaml", "requirements.yaml", "values.yaml"};
    if (size > (size_t)64 * 1024) {
        return 0;
    }
    co_vfs *fs = co_vfs_new_mem();
    const char *p = (const char *)data, *end = p + size;
    for (size_t i = 0; i < 3 && p <= end; i++) {
        const char *nul = memchr(p, '\0', (size_t)(end - p));
        size_t len = nul ? (size_t)(nul - p) : (size_t)(end - p);
        if (i == 0 || len > 0) {
            put(fs, files[i], p, len);
        }
        if (!nul) {
            break;
        }
        p = nul + 1;
    }
    put_text(fs, "charts/sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 1.0.0\n");
    put_text(fs, "charts/sub/values.yaml",
             "enabled: true\nport: 80\nexports:\n  data:\n    shared: {a: 1}\n"
             "child:\n  k: v\n");
    put_text(fs, "charts/sub/templates/s.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\n"
             "data:\n  port: {{ .Values.port | quote }}\n");
    put_text(fs, "charts/other/Chart.yaml",
             "apiVersion: v1\nname: other\nversion: 0.2.0-rc.1\nkubeVersion: '>=1.20.0-0'\n");
    put_text(fs, "templates/cm.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n"
             "  name: {{ .Chart.Name | quote }}\n  version: {{ .Chart.Version | quote }}\n"
             "  deps: {{ len .Chart.Dependencies | quote }}\n");

    co_helm_chart *c = NULL;
    co_error_clear();
    int rc = co_helm_chart_load(&c, fs, "");
    check_failure(rc);
    if (rc == 0) {
        check_chart(c);
    }
    co_helm_chart_free(c);
    co_vfs_free(fs);
    co_error_clear();
    return 0;
}
