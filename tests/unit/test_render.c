/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the rendering pipeline over small trees written to a temporary directory:
 * generator choice, SOPS decryption as files are read (an age-encrypted Secret made at test time
 * by tests/support/sopsgen.sh, with its key), postBuild substitution and images, the errors, and
 * the render budget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/render/render.h"
#include "co/render/sops.h"
#include "tests/support/test_sopsgen.h"
#include "tests/support/test_support.h"

/* The keys, made once for the binary, and the encrypted Secret every test uses. */
static test_sopsgen gen;
static char *secret_file;
static size_t secret_len;

typedef struct fixture {
    char *dir;
    co_sops_keys *keys;
} fixture;

static void put(const fixture *f, const char *rel, const char *text)
{
    char *path = co_xasprintf("%s/%s", f->dir, rel);
    char *slash = strrchr(path, '/');
    if (slash && strchr(rel, '/')) {
        *slash = '\0';
        (void)mkdir(path, 0700);
        *slash = '/';
    }
    co_test_write_file(path, text, strlen(text));
    free(path);
}

/* Secret "age" with stringData.key "value", encrypted as Flux users encrypt Secrets. */
static int group_setup(void **state)
{
    (void)state;
    test_sopsgen_init(&gen);
    secret_file = test_sopsgen_encrypt(
        &gen,
        "{\"format\":\"yaml\",\"tree\":{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":"
        "{\"name\":\"age\"},\"stringData\":{\"key\":\"value\"}},\"rule\":{\"encrypted_regex\":"
        "\"^(data|stringData)$\"},\"groups\":[[{\"age\":\"@0\"}]],\"lastmodified\":"
        "\"2024-01-02T03:04:05Z\"}",
        &secret_len);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    free(secret_file);
    test_sopsgen_dispose(&gen);
    return 0;
}

static void put_encrypted_secret(const fixture *f, const char *rel)
{
    char *path = co_xasprintf("%s/%s", f->dir, rel);
    co_test_write_file(path, secret_file, secret_len);
    free(path);
}

static int setup(void **state)
{
    fixture *f = co_xcalloc(1, sizeof(*f));
    f->dir = co_test_tmpdir();
    f->keys = co_sops_keys_new();
    size_t len = 0;
    char *key = test_sopsgen_read(gen.age_key[0], &len);
    assert_co_pass(co_sops_keys_add(f->keys, "age.agekey", key, len));
    free(key);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    co_test_rmtree(f->dir);
    free(f->dir);
    co_sops_keys_free(f->keys);
    free(f);
    return 0;
}

/* The object of @p kind and @p name in @p objs, or NULL. */
static struct json_object *find(struct json_object *objs, const char *kind, const char *name)
{
    for (size_t i = 0; i < json_object_array_length(objs); i++) {
        struct json_object *o = json_object_array_get_idx(objs, i);
        const char *k = json_object_get_string(co_json_get(o, "kind", NULL));
        const char *n = json_object_get_string(co_json_get(o, "metadata", "name", NULL));
        if (k && n && strcmp(k, kind) == 0 && strcmp(n, name) == 0) {
            return o;
        }
    }
    return NULL;
}

static const char *str_at(struct json_object *o, const char *a, const char *b)
{
    return json_object_get_string(co_json_get(o, a, b, NULL));
}

static const char CONFIGMAPS[] = "apiVersion: v1\n"
                                 "kind: ConfigMap\n"
                                 "metadata:\n"
                                 "  name: {{ .prefix }}-cm\n"
                                 "  namespace: {{ namespace }}\n"
                                 "data:\n"
                                 "  greeting: ${GREETING}\n"
                                 "  shout: ${GREETING^^}\n"
                                 "  unset: \"x${UNSET}y\"\n"
                                 "---\n"
                                 "apiVersion: v1\n"
                                 "kind: ConfigMap\n"
                                 "metadata:\n"
                                 "  name: raw\n"
                                 "  annotations:\n"
                                 "    " CO_RENDER_DISABLE_SUBST_ANNOTATION ": \"true\"\n"
                                 "data:\n"
                                 "  greeting: ${GREETING}\n";

static void test_render__kustomization_decrypts_and_substitutes(void **state)
{
    fixture *f = *state;
    put(f, "cms.yaml", CONFIGMAPS);
    put_encrypted_secret(f, "secret.yaml");
    struct json_object *values = json_tokener_parse("{\"prefix\": \"demo\"}");
    struct json_object *subs = json_tokener_parse("{\"GREETING\": \"hello\"}");
    co_render_input in = {
        .dir = f->dir,
        .namespace = "ns1",
        .name = "comp",
        .revision = 1,
        .values = values,
        .keys = f->keys,
        .substitutions = subs,
    };
    struct json_object *objs = NULL;
    assert_co_pass(co_render(&objs, &in));
    assert_int_equal(json_object_array_length(objs), 3);

    struct json_object *cm = find(objs, "ConfigMap", "demo-cm");
    assert_non_null(cm);
    assert_string_equal(json_object_get_string(co_json_get(cm, "metadata", "namespace", NULL)),
                        "ns1");
    assert_string_equal(str_at(cm, "data", "greeting"), "hello");
    assert_string_equal(str_at(cm, "data", "shout"), "HELLO");
    assert_string_equal(str_at(cm, "data", "unset"), "xy");

    struct json_object *raw = find(objs, "ConfigMap", "raw");
    assert_non_null(raw);
    assert_string_equal(str_at(raw, "data", "greeting"), "${GREETING}");

    struct json_object *secret = find(objs, "Secret", "age");
    assert_non_null(secret);
    assert_string_equal(str_at(secret, "stringData", "key"), "value");
    assert_null(co_json_get(secret, "sops", NULL));

    json_object_put(objs);
    json_object_put(values);
    json_object_put(subs);
}

/* With the artifact's root, the kustomization at spec.path reads its base elsewhere in the
 * artifact: not templated, but decrypted; without it, the base lies outside the source. */
static void test_render__overlay_reads_its_base_below_the_root(void **state)
{
    fixture *f = *state;
    put(f, "base/kustomization.yaml", "resources: [cm.yaml, secret.yaml]\n");
    put(f, "base/cm.yaml",
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\"},"
        "\"data\":{\"t\":\"{{ .x }}\"}}\n");
    put_encrypted_secret(f, "base/secret.yaml");
    put(f, "app/kustomization.yaml", "resources: [../base]\nnamePrefix: \"{{ .prefix }}-\"\n");
    struct json_object *values = json_tokener_parse("{\"prefix\": \"demo\"}");
    char *app = co_xasprintf("%s/app", f->dir);
    co_render_input in = {.dir = app, .root = f->dir, .values = values, .keys = f->keys};
    struct json_object *objs = NULL;
    assert_co_pass(co_render(&objs, &in));
    assert_int_equal(json_object_array_length(objs), 2);
    struct json_object *cm = find(objs, "ConfigMap", "demo-cm");
    assert_non_null(cm);
    assert_string_equal(str_at(cm, "data", "t"), "{{ .x }}");
    struct json_object *secret = find(objs, "Secret", "demo-age");
    assert_non_null(secret);
    assert_string_equal(str_at(secret, "stringData", "key"), "value");
    json_object_put(objs);
    objs = NULL;
    in.root = NULL;
    assert_co_fail_with(CO_EINVALID, co_render(&objs, &in));
    assert_non_null(strstr(co_error_last(), "leaves the root"));
    free(app);
    json_object_put(values);
}

static void test_render__encrypted_file_without_keys_fails(void **state)
{
    fixture *f = *state;
    put_encrypted_secret(f, "secret.yaml");
    co_render_input in = {.dir = f->dir, .namespace = "ns1", .name = "comp"};
    struct json_object *objs = NULL;
    assert_co_fail_with(CO_EINVALID, co_render(&objs, &in));
    assert_null(objs);
    assert_non_null(strstr(co_error_last(), "secret.yaml"));
    assert_non_null(strstr(co_error_last(), "decryption"));
}

static void test_render__helm_chart_with_encrypted_template(void **state)
{
    fixture *f = *state;
    put(f, "Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n");
    put(f, "values.yaml", "replicas: 1\nimage: nginx\n");
    put(f, "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n"
        "  namespace: {{ .Release.Namespace }}\n"
        "data:\n  replicas: {{ .Values.replicas | quote }}\n  who: ${WHO}\n");
    put(f, "templates/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n"
        "  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n"
        "      labels: {app: web}\n    spec:\n      containers:\n"
        "      - name: web\n        image: {{ .Values.image }}:1.0\n");
    put_encrypted_secret(f, "templates/secret.yaml");
    struct json_object *values = json_tokener_parse("{\"replicas\": 3}");
    struct json_object *subs = json_tokener_parse("{\"WHO\": \"world\"}");
    struct json_object *pb =
        json_tokener_parse("{\"images\": [{\"name\": \"nginx\", \"newTag\": \"2.0\"}]}");
    co_render_input in = {
        .dir = f->dir,
        .namespace = "ns2",
        .name = "rel",
        .revision = 1,
        .values = values,
        .keys = f->keys,
        .post_build = pb,
        .substitutions = subs,
    };
    struct json_object *objs = NULL;
    assert_co_pass(co_render(&objs, &in));
    assert_int_equal(json_object_array_length(objs), 3);
    struct json_object *cm = find(objs, "ConfigMap", "rel-cm");
    assert_non_null(cm);
    assert_string_equal(str_at(cm, "metadata", "namespace"), "ns2");
    assert_string_equal(str_at(cm, "data", "replicas"), "3");
    assert_string_equal(str_at(cm, "data", "who"), "world");
    struct json_object *secret = find(objs, "Secret", "age");
    assert_non_null(secret);
    assert_string_equal(str_at(secret, "stringData", "key"), "value");
    struct json_object *deploy = find(objs, "Deployment", "web");
    assert_non_null(deploy);
    struct json_object *c0 = json_object_array_get_idx(
        co_json_get(deploy, "spec", "template", "spec", "containers", NULL), 0);
    assert_string_equal(json_object_get_string(co_json_get(c0, "image", NULL)), "nginx:2.0");
    json_object_put(objs);

    /* the same chart without keys: the encrypted template is refused */
    in.keys = NULL;
    assert_co_fail_with(CO_EINVALID, co_render(&objs, &in));
    assert_non_null(strstr(co_error_last(), "templates/secret.yaml"));
    json_object_put(values);
    json_object_put(subs);
    json_object_put(pb);
}

/* A lookup hook that finds Secret "db" with a password, and nothing else. */
static int found_db(void *ctx,
                    struct json_object **out,
                    co_kzgen_cluster_kind cluster,
                    const char *kubeconfig,
                    const char *api_version,
                    const char *kind,
                    const char *ns,
                    const char *name)
{
    (void)kubeconfig;
    (*(int *)ctx)++;
    *out = cluster == CO_KZGEN_TARGET && strcmp(api_version, "v1") == 0 &&
                   strcmp(kind, "Secret") == 0 && strcmp(ns, "ns3") == 0 && strcmp(name, "db") == 0
               ? json_tokener_parse("{\"data\":{\"password\":\"c2VjcmV0\"}}")
               : NULL;
    return 0;
}

/* Charts get the same lookup hooks as kustomizations, and the operator's .Release.Service. */
static void test_render__helm_chart_gets_lookups_and_the_operators_service(void **state)
{
    fixture *f = *state;
    put(f, "Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n");
    put(f, "templates/secret.yaml",
        "{{- $s := lookup \"v1\" \"Secret\" .Release.Namespace \"db\" }}\n"
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  labels:\n"
        "    app.kubernetes.io/managed-by: {{ .Release.Service }}\n"
        "data:\n  password: {{ if $s }}{{ $s.data.password }}{{ else }}"
        "{{ randAlphaNum 16 | b64enc }}{{ end }}\n");
    int calls = 0;
    co_render_input in = {
        .dir = f->dir,
        .namespace = "ns3",
        .name = "rel",
        .lookup = found_db,
        .cluster_ctx = &calls,
    };
    struct json_object *objs = NULL;
    assert_co_pass(co_render(&objs, &in));
    struct json_object *secret = find(objs, "Secret", "db");
    assert_non_null(secret);
    assert_string_equal(str_at(secret, "data", "password"), "c2VjcmV0");
    assert_string_equal(json_object_get_string(co_json_get(secret, "metadata", "labels",
                                                           "app.kubernetes.io/managed-by", NULL)),
                        "component-operator.cs.sap.com");
    assert_int_equal(calls, 1);
    json_object_put(objs);

    /* helm template's name on request; without hooks the idiom generates */
    in.release_service = "Helm";
    in.lookup = NULL;
    assert_co_pass(co_render(&objs, &in));
    secret = find(objs, "Secret", "db");
    assert_string_equal(json_object_get_string(co_json_get(secret, "metadata", "labels",
                                                           "app.kubernetes.io/managed-by", NULL)),
                        "Helm");
    assert_string_not_equal(str_at(secret, "data", "password"), "c2VjcmV0");
    assert_int_equal(calls, 1);
    json_object_put(objs);
}

static void test_render__errors_name_the_problem(void **state)
{
    fixture *f = *state;
    struct json_object *objs = NULL;
    char *missing = co_xasprintf("%s/nope", f->dir);
    co_render_input in = {.dir = missing};
    assert_true(co_render(&objs, &in) < 0);
    assert_null(objs);
    free(missing);

    put(f, "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n"
        "data:\n  x: ${UNCLOSED\n");
    struct json_object *subs = json_tokener_parse("{\"A\": \"b\"}");
    in = (co_render_input){.dir = f->dir, .substitutions = subs};
    assert_co_fail_with(CO_EINVALID, co_render(&objs, &in));
    assert_non_null(strstr(co_error_last(), "postBuild.substitute"));
    assert_non_null(strstr(co_error_last(), "bad"));

    /* strict mode: an undefined variable is an error; without substitutions nothing runs */
    put(f, "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
        "data:\n  x: ${NOT_SET}\n");
    in.flags = CO_RENDER_STRICT_SUBST;
    assert_co_fail_with(CO_EINVALID, co_render(&objs, &in));
    assert_non_null(strstr(co_error_last(), "NOT_SET"));
    in.substitutions = NULL;
    assert_co_pass(co_render(&objs, &in));
    assert_string_equal(str_at(json_object_array_get_idx(objs, 0), "data", "x"), "${NOT_SET}");
    json_object_put(objs);

    struct json_object *bad = json_tokener_parse("{\"A\": 1}");
    in.substitutions = bad;
    assert_co_fail_with(CO_EINVALID, co_render(&objs, &in));
    assert_non_null(strstr(co_error_last(), "postBuild.substitute.A"));
    json_object_put(bad);
    json_object_put(subs);
}

/* A template that doubles a list until the memory budget stops it, in a kustomization and in a
 * chart; the message names the budget, and a render within it passes. */
static void test_render__memory_budget_stops_a_doubling_list(void **state)
{
    fixture *f = *state;
    static const char doubling[] = "{{ $l := list 1 }}{{ range until 40 }}{{ $l = concat $l $l }}"
                                   "{{ end }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                   "  name: c\ndata:\n  count: \"{{ len $l }}\"\n";
    put(f, "cm.yaml", doubling);
    co_render_input in = {.dir = f->dir, .namespace = "ns", .name = "c"};
    in.budget.memory = 8 * CO_MIB;
    struct json_object *objs = NULL;
    assert_co_fail_with(CO_ETOOBIG, co_render(&objs, &in));
    assert_null(objs);
    assert_contains(co_error_last(), "error calling concat: render budget exceeded: more than 8 "
                                     "MiB of memory for template values, rendered output and "
                                     "decoded documents");

    char *chart = co_xasprintf("%s/chart", f->dir);
    assert_int_equal(mkdir(chart, 0700), 0);
    put(f, "chart/Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n");
    put(f, "chart/templates/cm.yaml", doubling);
    in.dir = chart;
    assert_co_fail_with(CO_ETOOBIG, co_render(&objs, &in));
    assert_contains(co_error_last(), "render budget exceeded: more than 8 MiB of memory");

    /* ten doublings fit */
    put(f, "chart/templates/cm.yaml",
        "{{ $l := list 1 }}{{ range until 10 }}{{ $l = concat $l $l }}{{ end }}"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  count: \"{{ len $l "
        "}}\"\n");
    assert_co_pass(co_render(&objs, &in));
    assert_string_equal(str_at(json_object_array_get_idx(objs, 0), "data", "count"), "1024");
    json_object_put(objs);
    free(chart);
}

/* A template that loops without end (within the step cap: each step is slow) fails on the CPU
 * budget; so does a chart whose values schema references itself twice at every level. */
static void test_render__cpu_budget_stops_an_endless_loop(void **state)
{
    fixture *f = *state;
    put(f, "cm.yaml",
        "{{ $s := repeat 100000 \"x\" }}{{ range until 100000 }}{{ $_ := sha256sum $s }}{{ end }}"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n");
    co_render_input in = {.dir = f->dir, .namespace = "ns", .name = "c"};
    in.budget.cpu_ns = 200 * CO_MILLISECOND;
    struct json_object *objs = NULL;
    assert_co_fail_with(CO_ETIMEOUT, co_render(&objs, &in));
    assert_null(objs);
    assert_contains(co_error_last(), "render budget exceeded: more than 200ms of CPU time");

    char *chart = co_xasprintf("%s/chart", f->dir);
    assert_int_equal(mkdir(chart, 0700), 0);
    put(f, "chart/Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n");
    put(f, "chart/values.yaml", "a: 1\n");
    put(f, "chart/values.schema.json",
        "{\"$defs\": {\"x\": {\"anyOf\": [{\"$ref\": \"#/$defs/x\"}, {\"$ref\": \"#/$defs/x\"}]}},"
        " \"$ref\": \"#/$defs/x\"}");
    put(f, "chart/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n");
    in.dir = chart;
    assert_co_fail_with(CO_ETIMEOUT, co_render(&objs, &in));
    assert_contains(co_error_last(), "render budget exceeded: more than 200ms of CPU time");
    free(chart);
}

/* The process default applies to renders that set no budget of their own. */
static void test_render__default_budget_applies(void **state)
{
    fixture *f = *state;
    put(f, "cm.yaml",
        "{{ $l := list 1 }}{{ range until 18 }}{{ $l = concat $l $l }}{{ end }}"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n");
    co_budget_limits small = {.memory = 4 * CO_MIB};
    co_budget_set_default(&small);
    co_render_input in = {.dir = f->dir, .namespace = "ns", .name = "c"};
    struct json_object *objs = NULL;
    int rc = co_render(&objs, &in);
    co_budget_set_default(NULL);
    assert_int_equal(rc, CO_ETOOBIG);
    assert_contains(co_error_last(), "more than 4 MiB of memory");
    /* with the built-in default (64 MiB) the same render passes */
    assert_co_pass(co_render(&objs, &in));
    json_object_put(objs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_render__kustomization_decrypts_and_substitutes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_render__encrypted_file_without_keys_fails, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_render__helm_chart_with_encrypted_template, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_render__helm_chart_gets_lookups_and_the_operators_service, setup, teardown),
        cmocka_unit_test_setup_teardown(test_render__errors_name_the_problem, setup, teardown),
        cmocka_unit_test_setup_teardown(test_render__memory_budget_stops_a_doubling_list, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_render__cpu_budget_stops_an_endless_loop, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_render__default_budget_applies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_render__overlay_reads_its_base_below_the_root, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("render", tests, group_setup, group_teardown);
}
