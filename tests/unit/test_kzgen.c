/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the templated-kustomization generator with the fixture trees under
 * tests/fixtures/kzgen/<case>/: src/ is the component's directory (siblings hold included
 * files and kustomizations), values.yaml the component's values, component.yaml the Component.
 * A case expects either expected.yaml (the objects, order included) or error.txt (a text the
 * error message must contain); expect-tree/ holds rendered files that must exist with exactly
 * that content, absent.txt paths the rendered tree must not hold. Every rendered tree that
 * builds is also built by `kubectl kustomize` (load restrictions off, as the Go original
 * builds), which must produce the same objects.
 */
#include <dirent.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/common.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/render/kustomize.h"
#include "co/render/kzgen.h"
#include "co/render/vfs.h"
#include "co/json/yaml.h"
#include "tests/support/test_support.h"

/* --- a fake cluster ------------------------------------------------------------------------ */

static int fake_lookup(void *ctx,
                       json_object **out,
                       co_kzgen_cluster_kind cluster,
                       const char *kubeconfig,
                       const char *api_version,
                       const char *kind,
                       const char *ns,
                       const char *name)
{
    (void)ctx;
    *out = NULL;
    if (strcmp(api_version, "v1") == 0 && strcmp(kind, "Namespace") == 0 && ns[0] == '\0' &&
        strcmp(name, "kube-system") == 0) {
        const char *uid = cluster == CO_KZGEN_LOCAL        ? "local-uid"
                          : cluster == CO_KZGEN_KUBECONFIG ? "kubeconfig-uid"
                                                           : "target-uid";
        if (cluster == CO_KZGEN_KUBECONFIG && strcmp(kubeconfig, "kubeconfig-of-other") != 0) {
            return co_error_set(CO_EINVALID, "unexpected kubeconfig");
        }
        char *text = co_xasprintf("{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", "
                                  "\"metadata\": {\"name\": \"kube-system\", \"uid\": \"%s\"}}",
                                  uid);
        *out = json_tokener_parse(text);
        free(text);
    }
    return 0;
}

static int fake_lookup_list(void *ctx,
                            json_object **out,
                            co_kzgen_cluster_kind cluster,
                            const char *kubeconfig,
                            const char *api_version,
                            const char *kind,
                            const char *ns,
                            const char *selector)
{
    (void)ctx;
    (void)cluster;
    (void)kubeconfig;
    (void)api_version;
    (void)kind;
    (void)ns;
    (void)selector;
    *out = json_tokener_parse("{\"kind\": \"ConfigMapList\", \"items\": [{\"metadata\": "
                              "{\"name\": \"a\"}}, {\"metadata\": {\"name\": \"b\"}}]}");
    return 0;
}

static const char *const API_RESOURCES =
    "[{\"groupVersion\": \"v1\", \"resources\": [{\"name\": \"pods\", \"verbs\": [\"get\"]}]},"
    " {\"groupVersion\": \"apps/v1\", \"resources\": ["
    "  {\"name\": \"statefulsets\", \"verbs\": [\"get\"]},"
    "  {\"name\": \"deployments\", \"verbs\": [\"list\", \"get\", \"create\"]}]}]";

/* --- the reference kustomize --------------------------------------------------------------- */

static int run_oracle(char **out, const char *dir)
{
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
    char *script = co_xasprintf("%s/tests/support/kustomize_oracle.py", CO_SOURCE_ROOT);
    char *dircopy = co_xstrdup(dir);
    char py[] = "python3";
    char flag[] = "--load-restrictor=LoadRestrictionsNone";
    char *argv[] = {py, script, dircopy, flag, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "python3", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    free(script);
    free(dircopy);
    if (rc != 0) {
        close(pipefd[0]);
        return -1;
    }
    size_t cap = 65536, len = 0;
    char *buf = co_xmalloc(cap);
    for (;;) {
        if (len + 4096 > cap) {
            cap *= 2;
            buf = co_xrealloc(buf, cap);
        }
        ssize_t n = read(pipefd[0], buf + len, cap - len - 1);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Writes every file of @p tree below @p dir on disk. */
static void write_tree(const co_vfs *tree, const char *dir)
{
    char **all = NULL;
    size_t n = 0;
    assert_co_pass(co_vfs_walk(&all, &n, tree, ""));
    for (size_t i = 0; i < n; i++) {
        char *path = co_xasprintf("%s/%s", dir, all[i]);
        for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
            *s = '\0';
            mkdir(path, 0700);
            *s = '/';
        }
        char *data = NULL;
        size_t len = 0;
        assert_co_pass(co_vfs_read(&data, &len, tree, all[i]));
        co_test_write_file(path, data, len);
        free(data);
        free(path);
    }
    co_vfs_strv_free(all);
}

/* --- the fixture driver -------------------------------------------------------------------- */

static json_object *read_yaml(const char *dir, const char *name, int stream)
{
    char *path = co_xasprintf("%s/%s", dir, name);
    size_t len = 0;
    char *text = NULL;
    if (access(path, R_OK) == 0) {
        text = co_test_read_file(path, &len);
    }
    free(path);
    if (!text) {
        return NULL;
    }
    json_object *res = NULL;
    if (stream) {
        co_yaml_docs docs = CO_YAML_DOCS_INIT;
        assert_co_pass(co_yaml_parse_stream(&docs, text, len, CO_YAML_SKIP_NULL));
        res = json_object_new_array();
        for (size_t i = 0; i < docs.len; i++) {
            json_object_array_add(res, json_object_get(docs.items[i].value));
        }
        co_yaml_docs_dispose(&docs);
    } else {
        assert_co_pass(co_yaml_parse(&res, text, len, 0));
    }
    free(text);
    return res;
}

static char *read_text(const char *dir, const char *name)
{
    char *path = co_xasprintf("%s/%s", dir, name);
    char *text = access(path, R_OK) == 0 ? co_test_read_file(path, NULL) : NULL;
    free(path);
    return text;
}

/* Checks expect-tree/ and absent.txt against the rendered tree; returns the failures. */
static size_t check_tree(const char *name, const char *dir, const co_vfs *tree, const char *root)
{
    size_t failed = 0;
    char *expect_dir = co_xasprintf("%s/expect-tree", dir);
    co_vfs *want = NULL;
    if (co_vfs_new_disk(&want, expect_dir) == 0) {
        char **all = NULL;
        size_t n = 0;
        assert_co_pass(co_vfs_walk(&all, &n, want, ""));
        for (size_t i = 0; i < n; i++) {
            char *w = NULL, *g = NULL, *p = co_xasprintf("%s/%s", root, all[i]);
            size_t wl = 0, gl = 0;
            assert_co_pass(co_vfs_read(&w, &wl, want, all[i]));
            if (co_vfs_read(&g, &gl, tree, p) < 0 || wl != gl || memcmp(w, g, wl) != 0) {
                print_message("[%s] rendered %s: want \"%s\", got \"%s\"\n", name, p, w,
                              g ? g : "(none)");
                failed++;
            }
            free(w);
            free(g);
            free(p);
        }
        co_vfs_strv_free(all);
        co_vfs_free(want);
    }
    co_error_clear();
    free(expect_dir);
    char *absent = read_text(dir, "absent.txt");
    char *save = NULL;
    for (char *line = absent ? strtok_r(absent, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        char *p = co_xasprintf("%s/%s", root, line);
        if (co_vfs_stat(tree, p) != CO_VFS_NONE) {
            print_message("[%s] %s must not be in the rendered tree\n", name, p);
            failed++;
        }
        free(p);
    }
    free(absent);
    return failed;
}

static size_t run_case(const char *name, const char *dir, size_t *compared)
{
    json_object *values = read_yaml(dir, "values.yaml", 0);
    json_object *component = read_yaml(dir, "component.yaml", 0);
    json_object *expected = read_yaml(dir, "expected.yaml", 1);
    char *want_error = read_text(dir, "error.txt");
    json_object *version =
        json_tokener_parse("{\"major\": \"1\", \"minor\": \"20\", \"gitVersion\": \"v1.20.2\"}");
    json_object *resources = json_tokener_parse(API_RESOURCES);
    co_kzgen_context ctx = {0};
    ctx.namespace = "ns1";
    ctx.name = "comp1";
    ctx.component = component;
    ctx.component_digest = "digest-123";
    ctx.component_revision = 42;
    ctx.server_version = version;
    ctx.api_resources = resources;
    ctx.lookup = fake_lookup;
    ctx.lookup_list = fake_lookup_list;

    size_t failed = 0;
    co_vfs *fs = NULL;
    assert_co_pass(co_vfs_new_disk(&fs, dir));
    co_kzgen *g = NULL;
    co_vfs *tree = NULL;
    char *root = NULL;
    json_object *got = NULL;
    co_error_clear();
    int rc = co_kzgen_parse(&g, fs, "src", NULL);
    if (rc == 0) {
        rc = co_kzgen_render_tree(&tree, &root, g, values, &ctx);
    }
    if (rc == 0) {
        co_kustomize_options ko = CO_KUSTOMIZE_OPTIONS_INIT;
        ko.load_restrictor = CO_KUSTOMIZE_LOAD_NONE;
        rc = co_kustomize_build(&got, tree, root, &ko);
    }
    if (want_error) {
        if (rc == 0) {
            print_message("[%s] succeeded, expected an error containing \"%s\"\n", name,
                          want_error);
            failed++;
        } else if (strstr(co_error_last(), want_error)) {
            print_message("[%s] fails as expected: %s\n", name, co_error_last());
        } else {
            print_message("[%s] error \"%s\" does not contain \"%s\"\n", name, co_error_last(),
                          want_error);
            failed++;
        }
    } else if (rc < 0) {
        print_message("[%s] failed: %s\n", name, co_error_last());
        failed++;
    } else {
        if (expected && !co_json_equal(expected, got)) {
            print_message("[%s] output differs\n--- want:\n%s\n--- got:\n%s\n", name,
                          json_object_to_json_string_ext(expected, JSON_C_TO_STRING_PRETTY),
                          json_object_to_json_string_ext(got, JSON_C_TO_STRING_PRETTY));
            failed++;
        }
        failed += check_tree(name, dir, tree, root);
        /* the same rendered tree through the reference kustomize */
        char *tmp = co_test_tmpdir();
        write_tree(tree, tmp);
        char *at = co_xasprintf("%s/%s", tmp, root);
        char *ref_text = NULL;
        int orc = run_oracle(&ref_text, at);
        if (orc == 2 || orc < 0) {
            fail_msg("the reference kustomize is not available (run tests/env/deps.sh)");
        }
        json_object *ref = orc == 0 ? json_tokener_parse(ref_text) : NULL;
        if (!ref || !co_json_equal(ref, got)) {
            print_message("[%s] kubectl kustomize differs on the rendered tree (status %d)\n"
                          "--- kustomize:\n%s\n--- ours:\n%s\n",
                          name, orc, ref_text,
                          json_object_to_json_string_ext(got, JSON_C_TO_STRING_PRETTY));
            failed++;
        }
        (*compared)++;
        json_object_put(ref);
        free(ref_text);
        free(at);
        co_test_rmtree(tmp);
        free(tmp);
    }
    json_object_put(got);
    free(root);
    co_vfs_free(tree);
    co_kzgen_free(g);
    co_vfs_free(fs);
    json_object_put(values);
    json_object_put(component);
    json_object_put(expected);
    json_object_put(version);
    json_object_put(resources);
    free(want_error);
    return failed;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_kzgen__fixtures(void **state)
{
    (void)state;
    char *base = co_test_fixture_path("kzgen");
    DIR *d = opendir(base);
    assert_non_null(d);
    char *names[256] = {0};
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 256) { /* NOLINT(concurrency-mt-unsafe) */
        if (e->d_name[0] != '.') {
            names[n++] = co_xstrdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof(char *), cmp_names);
    size_t failed = 0, compared = 0;
    for (size_t i = 0; i < n; i++) {
        char *dir = co_xasprintf("%s/%s", base, names[i]);
        size_t f = run_case(names[i], dir, &compared);
        failed += f != 0;
        free(dir);
        free(names[i]);
    }
    free(base);
    print_message("kzgen fixtures: %zu cases, %zu compared with kubectl kustomize, %zu failed\n", n,
                  compared, failed);
    assert_true(n >= 10);
    assert_int_equal(failed, 0);
}

/* A parsed generator renders again with other values, and concurrently-safe state is not
 * kept between renders (sprig-style mutations of the data stay within one render). */
static void test_kzgen__render_twice_with_other_values(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    const char *cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .n }}\n";
    assert_co_pass(co_vfs_mem_put(fs, "app/cm.yaml", cm, strlen(cm)));
    co_kzgen *g = NULL;
    assert_co_pass(co_kzgen_parse(&g, fs, "app", NULL));
    for (int i = 0; i < 2; i++) {
        json_object *v = json_object_new_object();
        json_object_object_add(v, "n", json_object_new_string(i ? "second" : "first"));
        json_object *out = NULL;
        assert_co_pass(co_kzgen_render(&out, g, v, NULL));
        assert_int_equal(json_object_array_length(out), 1);
        assert_contains(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN),
                        i ? "second" : "first");
        json_object_put(out);
        json_object_put(v);
    }
    co_kzgen_free(g);
    co_vfs_free(fs);
}

/* Without values the data root is an empty map: missing keys render as nothing. */
static void test_kzgen__no_values_is_an_empty_map(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    const char *cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a{{ .x }}\n"
                     "data:\n  n: \"{{ len . }}\"\n";
    assert_co_pass(co_vfs_mem_put(fs, "cm.yaml", cm, strlen(cm)));
    json_object *out = NULL;
    assert_co_pass(co_kzgen_generate(&out, fs, "", NULL, NULL, NULL));
    assert_contains(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN),
                    "\"name\":\"a\"},\"data\":{\"n\":\"0\"}");
    json_object_put(out);
    co_vfs_free(fs);
}

static void test_kzgen__options_and_config(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    const char *a = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: <<.n>>\n";
    const char *cfg = "leftTemplateDelimiter: '[['\n";
    const char *b = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [[.n>>-b\n";
    assert_co_pass(co_vfs_mem_put(fs, "a/cm.yaml.t", a, strlen(a)));
    assert_co_pass(co_vfs_mem_put(fs, "b/cm.yaml.t", b, strlen(b)));
    assert_co_pass(co_vfs_mem_put(fs, "b/.component-config.yaml", cfg, strlen(cfg)));
    co_kzgen_options o = {0};
    o.template_suffix = ".t";
    o.left_delim = "<<";
    o.right_delim = ">>";
    json_object *v = json_tokener_parse("{\"n\": \"x\"}");
    json_object *out = NULL;
    /* caller's options */
    assert_co_pass(co_kzgen_generate(&out, fs, "a", v, NULL, &o));
    assert_contains(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN), "\"name\":\"x\"");
    json_object_put(out);
    /* the config file overrides one delimiter, the other comes from the caller */
    assert_co_pass(co_kzgen_generate(&out, fs, "b", v, NULL, &o));
    assert_contains(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN),
                    "\"name\":\"x-b\"");
    json_object_put(out);
    json_object_put(v);
    co_vfs_free(fs);
}

static int
fake_decrypt(void *ctx, char **out, size_t *out_len, const char *path, const char *data, size_t len)
{
    int *calls = ctx;
    (*calls)++;
    if (len < 4 || memcmp(data, "ENC:", 4) != 0) {
        return 0;
    }
    if (strcmp(path, "app/cm.yaml") != 0) {
        return co_error_set(CO_EINVALID, "unexpected path %s", path);
    }
    const char *plain = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain-{{ .n }}\n";
    *out = co_xstrdup(plain);
    *out_len = strlen(plain);
    return 0;
}

static void test_kzgen__decrypt_hook_runs_before_templating(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    const char *enc = "ENC:opaque";
    const char *other = "# nothing\n";
    assert_co_pass(co_vfs_mem_put(fs, "app/cm.yaml", enc, strlen(enc)));
    assert_co_pass(co_vfs_mem_put(fs, "app/notes.txt", other, strlen(other)));
    int calls = 0;
    co_kzgen_options o = {0};
    o.decrypt = fake_decrypt;
    o.decrypt_ctx = &calls;
    json_object *v = json_tokener_parse("{\"n\": \"x\"}");
    json_object *out = NULL;
    assert_co_pass(co_kzgen_generate(&out, fs, "app", v, NULL, &o));
    assert_int_equal(calls, 2);
    assert_contains(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN),
                    "\"name\":\"plain-x\"");
    json_object_put(out);
    json_object_put(v);
    co_vfs_free(fs);
}

static void test_kzgen__missing_path_and_no_cluster(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    const char *t = "a: {{ lookup \"v1\" \"Secret\" \"x\" \"y\" }}\n";
    assert_co_pass(co_vfs_mem_put(fs, "app/x.yaml", t, strlen(t)));
    co_kzgen *g = NULL;
    assert_co_fail_with(CO_ENOTFOUND, co_kzgen_parse(&g, fs, "nope", NULL));
    assert_contains(co_error_last(), "nope");
    assert_co_fail_with(CO_EINVALID, co_kzgen_parse(&g, fs, "app/x.yaml", NULL));
    assert_co_pass(co_kzgen_parse(&g, fs, "app", NULL));
    json_object *out = NULL;
    assert_int_not_equal(co_kzgen_render(&out, g, NULL, NULL), 0);
    assert_contains(co_error_last(), "no cluster access");
    co_kzgen_free(g);
    co_vfs_free(fs);
}

/* --- a directory without a kustomization (what the controller renders) ------------------- */

/* Manifests are written as JSON, which every YAML reader accepts. */
#define CM(name)                                                                                   \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name "\"}}\n"

static void put_file(const char *dir, const char *rel, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    co_test_write_file(path, text, strlen(text));
}

/* co_kzgen_generate() of directory @p dir on disk, as the controller's render runs it. */
static int generate_dir(json_object **out, const char *dir)
{
    co_vfs *fs = NULL;
    int rc = co_vfs_new_disk(&fs, dir);
    if (rc == 0) {
        rc = co_kzgen_generate(out, fs, "", NULL, NULL, NULL);
    }
    co_vfs_free(fs);
    return rc;
}

static const char *name_of(json_object *objs, size_t i)
{
    json_object *v = co_json_get(json_object_array_get_idx(objs, i), "metadata", "name", NULL);
    return v ? json_object_get_string(v) : "";
}

/* --- bases outside spec.path ------------------------------------------------------------ */

static int
decrypt_base(void *ctx, char **out, size_t *out_len, const char *path, const char *data, size_t len)
{
    int *calls = ctx;
    if (len < 4 || memcmp(data, "ENC:", 4) != 0) {
        return 0;
    }
    (*calls)++;
    const char *plain = "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":"
                        "\"s\"},\"stringData\":{\"k\":\"{{ .n }}\"}}\n";
    (void)path;
    *out = co_xstrdup(plain);
    *out_len = strlen(plain);
    return 0;
}

static void put_mem(co_vfs *fs, const char *path, const char *text)
{
    assert_co_pass(co_vfs_mem_put(fs, path, text, strlen(text)));
}

/* The controller's superset of the Go original: a kustomization at spec.path may refer to bases
 * and components elsewhere in the source artifact; they are read as they are (decrypted, not
 * templated), their files under kustomize's load restriction; nothing outside the artifact. */
static void test_kzgen__overlay_reads_base_inside_the_artifact(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    put_mem(fs, "base/kustomization.yaml", "resources: [cm.yaml, secret.yaml]\n");
    put_mem(fs, "base/cm.yaml",
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\"},"
            "\"data\":{\"t\":\"{{ .n }}\"}}\n");
    put_mem(fs, "base/secret.yaml", "ENC:opaque");
    put_mem(fs, "components/label/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
            "commonLabels: {team: a}\n");
    put_mem(fs, "overlays/prod/kustomization.yaml",
            "resources: [../../base]\ncomponents: [../../components/label]\n"
            "namePrefix: \"{{ .p }}-\"\n");
    put_mem(fs, "overlays/file/kustomization.yaml", "resources: [../../base/cm.yaml]\n");
    put_mem(fs, "overlays/leaves/kustomization.yaml", "resources: [../../../elsewhere]\n");
    put_mem(fs, "patched/kustomization.yaml",
            "resources: [../base]\npatches:\n- path: ../p.yaml\n");
    put_mem(fs, "p.yaml", CM("cm"));
    put_mem(fs, "referrer/kustomization.yaml", "resources: [../patched]\n");
    int calls = 0;
    co_kzgen_options o = {0};
    o.decrypt = decrypt_base;
    o.decrypt_ctx = &calls;
    json_object *v = json_tokener_parse("{\"p\": \"prod\", \"n\": \"1\"}");
    json_object *out = NULL;
    assert_co_pass(co_kzgen_generate(&out, fs, "overlays/prod", v, NULL, &o));
    assert_int_equal(json_object_array_length(out), 2);
    assert_string_equal(name_of(out, 0), "prod-cm");
    assert_string_equal(name_of(out, 1), "prod-s");
    assert_int_equal(calls, 1);
    /* the base is not templated; the component applied */
    json_object *cm = json_object_array_get_idx(out, 0);
    assert_string_equal(co_json_str(cm, "data", "t", NULL), "{{ .n }}");
    assert_string_equal(co_json_str(cm, "metadata", "labels", "team", NULL), "a");
    json_object_put(out);
    out = NULL;
    /* a file outside the kustomization's directory is refused, as kustomize refuses it */
    assert_co_fail_with(CO_EINVALID, co_kzgen_generate(&out, fs, "overlays/file", v, NULL, &o));
    assert_contains(co_error_last(),
                    "security; file 'base/cm.yaml' is not in or below 'overlays/file'");
    assert_co_fail_with(CO_EINVALID, co_kzgen_generate(&out, fs, "referrer", v, NULL, &o));
    assert_contains(co_error_last(), "security; file 'p.yaml' is not in or below 'patched'");
    /* nothing outside the artifact */
    assert_co_fail_with(CO_EINVALID, co_kzgen_generate(&out, fs, "overlays/leaves", v, NULL, &o));
    assert_contains(co_error_last(), "leaves the root");
    json_object_put(v);
    co_vfs_free(fs);
}

/* Within the rendered directory files stay unrestricted, as in the Go original. */
static void test_kzgen__files_inside_the_rendered_tree_stay_unrestricted(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    put_mem(fs, "app/kustomization.yaml", "resources: [sub]\n");
    put_mem(fs, "app/sub/kustomization.yaml", "resources: [../cm.yaml]\n");
    put_mem(fs, "app/cm.yaml", CM("{{ .n }}"));
    json_object *v = json_tokener_parse("{\"n\": \"x\"}");
    json_object *out = NULL;
    assert_co_pass(co_kzgen_generate(&out, fs, "app", v, NULL, NULL));
    assert_int_equal(json_object_array_length(out), 1);
    assert_string_equal(name_of(out, 0), "x");
    json_object_put(out);
    json_object_put(v);
    co_vfs_free(fs);
}

static void test_kzgen__plain_manifests_get_a_kustomization(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    put_file(dir, "a.yaml", CM("a"));
    put_file(dir, "sub/b.yml",
             CM("b") "\n---\n{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                     "\"metadata\":{\"name\":\"n1\"}}\n");
    put_file(dir, ".hidden.yaml", CM("hidden"));
    put_file(dir, ".component-config.yaml", "templateSuffix: .tpl\n");
    put_file(dir, "README.md", "not a manifest\n");
    json_object *objs = NULL;
    assert_co_pass(generate_dir(&objs, dir));
    assert_int_equal(json_object_array_length(objs), 3);
    /* kustomize's legacy order: Namespace first */
    assert_string_equal(name_of(objs, 0), "n1");
    int seen_a = 0, seen_b = 0;
    for (size_t i = 0; i < 3; i++) {
        seen_a |= strcmp(name_of(objs, i), "a") == 0;
        seen_b |= strcmp(name_of(objs, i), "b") == 0;
    }
    assert_true(seen_a && seen_b);
    json_object_put(objs);
    co_test_rmtree(dir);
    free(dir);
}

static void test_kzgen__existing_kustomization_is_used(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    put_file(dir, "kustomization.yaml", "{\"namePrefix\":\"p-\",\"resources\":[\"a.yaml\"]}\n");
    put_file(dir, "a.yaml", CM("a"));
    put_file(dir, "b.yaml", CM("b"));
    json_object *objs = NULL;
    assert_co_pass(generate_dir(&objs, dir));
    assert_int_equal(json_object_array_length(objs), 1);
    assert_string_equal(name_of(objs, 0), "p-a");
    json_object_put(objs);
    co_test_rmtree(dir);
    free(dir);
}

static void test_kzgen__empty_directory_renders_nothing(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    json_object *objs = NULL;
    assert_co_pass(generate_dir(&objs, dir));
    assert_int_equal(json_object_array_length(objs), 0);
    json_object_put(objs);
    co_test_rmtree(dir);
    free(dir);
}

static void test_kzgen__bad_manifest_names_the_file(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    put_file(dir, "broken.yaml", "{\"apiVersion\": [\n");
    json_object *objs = NULL;
    int rc = generate_dir(&objs, dir);
    assert_true(rc < 0);
    assert_contains(co_error_last(), "broken.yaml");
    assert_null(objs);
    assert_true(generate_dir(&objs, "/nonexistent/dir/for/test") == CO_ENOTFOUND);
    co_test_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kzgen__fixtures),
        cmocka_unit_test(test_kzgen__render_twice_with_other_values),
        cmocka_unit_test(test_kzgen__no_values_is_an_empty_map),
        cmocka_unit_test(test_kzgen__options_and_config),
        cmocka_unit_test(test_kzgen__decrypt_hook_runs_before_templating),
        cmocka_unit_test(test_kzgen__missing_path_and_no_cluster),
        cmocka_unit_test(test_kzgen__plain_manifests_get_a_kustomization),
        cmocka_unit_test(test_kzgen__existing_kustomization_is_used),
        cmocka_unit_test(test_kzgen__empty_directory_renders_nothing),
        cmocka_unit_test(test_kzgen__bad_manifest_names_the_file),
        cmocka_unit_test(test_kzgen__overlay_reads_base_inside_the_artifact),
        cmocka_unit_test(test_kzgen__files_inside_the_rendered_tree_stay_unrestricted),
    };
    return cmocka_run_group_tests_name("kzgen", tests, NULL, NULL);
}
