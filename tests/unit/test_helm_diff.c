/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Differential test of the Helm renderer against a real Helm v3 (`helm template`, installed by
 * tests/env/deps.sh; $CO_HELM overrides the path). Every directory under
 * tests/fixtures/helm/<case>/ holds a chart in chart/ and value sets values-*.yaml; each chart
 * is rendered once without values and once per value set, by Helm and by us, with the same
 * release, namespace, Kubernetes version and extra API versions; without values also with
 * --skip-tests, with --no-hooks and without --include-crds. The object lists must be equal
 * after parsing (order included), and where Helm fails we must fail too. We render with
 * CO_HELM_DEFAULT_API_VERSIONS and the extra API versions, as `helm template` builds its
 * .Capabilities.APIVersions; that our table of Helm's defaults is Helm's own is checked against
 * the set Helm itself prints for a probe chart.
 */
#include <dirent.h>
#include <json-c/json.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "co/util/common.h"
#include "co/render/helm.h"
#include "co/json/json.h"
#include "co/render/vfs.h"
#include "co/json/yaml.h"
#include "tests/support/test_support.h"

#define RELEASE      "rel"
#define NAMESPACE    "ns1"
#define KUBE_VERSION "v1.29.4"

static const char *const extra_api_versions[] = {"monitoring.coreos.com/v1",
                                                 "example.com/v1alpha1/Widget"};

static char *helm_bin;
static char **api_versions; /* Helm's defaults, as Helm prints them for a probe chart */
static size_t n_api_versions;

/* The start of the last command's stderr. */
static char last_stderr[65536];
static size_t last_stderr_len;

/* Runs @p argv, collecting stdout into *out and the start of stderr into last_stderr; returns
 * the exit status (-1 if it cannot run). */
static int run(char **out, char *const *argv)
{
    last_stderr_len = 0;
    last_stderr[0] = '\0';
    int pipefd[2];
    int errfd[2];
    if (pipe(pipefd) != 0 || pipe(errfd) != 0) {
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errfd[1], 2);
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
    posix_spawn_file_actions_addclose(&fa, errfd[0]);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    close(errfd[1]);
    if (rc != 0) {
        close(pipefd[0]);
        close(errfd[0]);
        return -1;
    }
    size_t cap = 65536;
    size_t len = 0;
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
    char ebuf[4096];
    ssize_t en;
    while ((en = read(errfd[0], ebuf, sizeof(ebuf))) > 0) {
        if (last_stderr_len + (size_t)en < sizeof(last_stderr)) {
            memcpy(last_stderr + last_stderr_len, ebuf, (size_t)en);
            last_stderr_len += (size_t)en;
        }
    }
    last_stderr[last_stderr_len] = '\0';
    close(pipefd[0]);
    close(errfd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A way of rendering: the helm template flags and ours for it. */
typedef struct variant {
    const char *suffix; /* added to the case name */
    const char *flag;   /* helm template's flag, or NULL */
    bool crds;          /* --include-crds */
    unsigned our_flags; /* co_helm_options.flags besides CO_HELM_DEFAULT_API_VERSIONS */
} variant;

static const variant variants[] = {
    {"", NULL, true, 0},
    {" --skip-tests", "--skip-tests", true, CO_HELM_SKIP_TESTS},
    {" --no-hooks", "--no-hooks", true, CO_HELM_NO_HOOKS},
    {" (no --include-crds)", NULL, false, CO_HELM_SKIP_CRDS},
};

/* helm template for @p chart with @p values (NULL for none), rendered as @p var says. */
static int helm_template(char **out, const char *chart, const char *values, const variant *var)
{
    char *argv[32];
    size_t n = 0;
    argv[n++] = helm_bin;
    argv[n++] = (char *)"template";
    argv[n++] = (char *)RELEASE;
    argv[n++] = (char *)chart;
    argv[n++] = (char *)"--namespace";
    argv[n++] = (char *)NAMESPACE;
    argv[n++] = (char *)"--kube-version";
    argv[n++] = (char *)KUBE_VERSION;
    if (var->crds) {
        argv[n++] = (char *)"--include-crds";
    }
    if (var->flag) {
        argv[n++] = (char *)var->flag;
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(extra_api_versions); i++) {
        argv[n++] = (char *)"--api-versions";
        argv[n++] = (char *)extra_api_versions[i];
    }
    if (values) {
        argv[n++] = (char *)"-f";
        argv[n++] = (char *)values;
    }
    argv[n] = NULL;
    return run(out, argv);
}

static int group_setup(void **state)
{
    (void)state;
    const char *env = getenv("CO_HELM"); /* NOLINT(concurrency-mt-unsafe) */
    if (env && *env) {
        helm_bin = co_xstrdup(env);
    } else {
        const char *cache = getenv("XDG_CACHE_HOME"); /* NOLINT(concurrency-mt-unsafe) */
        const char *home = getenv("HOME");            /* NOLINT(concurrency-mt-unsafe) */
        helm_bin = cache && *cache ? co_xasprintf("%s/component-operator/bin/helm", cache)
                                   : co_xasprintf("%s/.cache/component-operator/bin/helm",
                                                  home ? home : "/root");
    }
    if (access(helm_bin, X_OK) != 0) {
        fprintf(stderr, "helm not found at %s (run tests/env/deps.sh)\n", helm_bin);
        return -1;
    }
    /* Ask Helm for its default API versions with a probe chart. */
    char *dir = co_test_tmpdir();
    char *p = co_xasprintf("%s/probe/Chart.yaml", dir);
    const char *chart_yaml = "apiVersion: v2\nname: probe\nversion: 0.1.0\n";
    co_test_write_file(p, chart_yaml, strlen(chart_yaml));
    free(p);
    p = co_xasprintf("%s/probe/templates/v.yaml", dir);
    const char *tmpl = "kind: Probe\nversions:\n{{- range .Capabilities.APIVersions }}\n"
                       "  - {{ printf \"%q\" . }}\n{{- end }}\n";
    co_test_write_file(p, tmpl, strlen(tmpl));
    free(p);
    p = co_xasprintf("%s/probe", dir);
    char *out = NULL;
    char *argv[] = {helm_bin, (char *)"template", p, NULL};
    int rc = run(&out, argv);
    free(p);
    co_test_rmtree(dir);
    free(dir);
    if (rc != 0) {
        fprintf(stderr, "helm template of the probe chart failed\n");
        free(out);
        return -1;
    }
    struct json_object *probe = NULL;
    if (co_yaml_parse(&probe, out, strlen(out), 0) < 0) {
        fprintf(stderr, "cannot read the probe chart's output: %s\n", co_error_last());
        free(out);
        return -1;
    }
    struct json_object *list = co_json_get(probe, "versions", NULL);
    size_t nl = list ? json_object_array_length(list) : 0;
    api_versions = co_xcalloc(nl + 1, sizeof(char *));
    for (size_t i = 0; i < nl; i++) {
        api_versions[n_api_versions++] =
            co_xstrdup(json_object_get_string(json_object_array_get_idx(list, i)));
    }
    json_object_put(probe);
    free(out);
    return n_api_versions > 2 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < n_api_versions; i++) {
        free(api_versions[i]);
    }
    free(api_versions);
    free(helm_bin);
    return 0;
}

static int cmp_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of @p text reporting a `format` violation ("- FIELD: Does not match format 'F'"),
 * sorted (Helm lists a schema's violations in no fixed order), joined by newlines. */
static char *format_violations(const char *text)
{
    char *copy = co_xstrdup(text);
    char *lines[512] = {0};
    size_t n = 0;
    char *save = NULL;
    for (char *l = strtok_r(copy, "\n", &save); l && n < 512; l = strtok_r(NULL, "\n", &save)) {
        if (strncmp(l, "- ", 2) == 0 && strstr(l, ": Does not match format '")) {
            lines[n++] = l;
        }
    }
    qsort(lines, n, sizeof(char *), cmp_lines);
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        total += strlen(lines[i]) + 1;
    }
    char *out = co_xmalloc(total);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strcat(out, lines[i]); /* NOLINT(clang-analyzer-security.insecureAPI.strcpy) */
        strcat(out, "\n");     /* NOLINT(clang-analyzer-security.insecureAPI.strcpy) */
    }
    free(copy);
    return out;
}

/* Compares one case; returns true when equal, printing the difference otherwise. Where both
 * fail, the `format` violations both list must be the same. */
static bool
compare_case(const char *name, const char *chart_dir, const char *values_file, const variant *var)
{
    char *helm_out = NULL;
    int hrc = helm_template(&helm_out, chart_dir, values_file, var);
    if (hrc < 0) {
        fail_msg("cannot run %s", helm_bin);
    }
    char *helm_stderr = co_xstrdup(last_stderr);
    co_vfs *fs = NULL;
    assert_co_pass(co_vfs_new_disk(&fs, chart_dir));
    struct json_object *values = NULL;
    if (values_file) {
        char *text = co_test_read_file(values_file, NULL);
        assert_non_null(text);
        assert_co_pass(co_yaml_parse(&values, text, strlen(text), 0));
        free(text);
    }
    co_helm_options opts = {.release_name = RELEASE,
                            .release_namespace = NAMESPACE,
                            .kube_version = KUBE_VERSION,
                            .api_versions = extra_api_versions,
                            .n_api_versions = CO_ARRAY_SIZE(extra_api_versions),
                            .flags = CO_HELM_DEFAULT_API_VERSIONS | var->our_flags};
    co_helm_chart *chart = NULL;
    struct json_object *got = NULL;
    co_error_clear();
    int rc = co_helm_chart_load(&chart, fs, "");
    if (rc == 0) {
        rc = co_helm_template(&got, chart, values, &opts);
    }
    bool ok = true;
    if (hrc != 0) {
        if (rc == 0) {
            print_message("[%s] helm fails but we rendered\n", name);
            ok = false;
        } else {
            char *theirs = format_violations(helm_stderr);
            char *ours = format_violations(co_error_last());
            if (strcmp(theirs, ours) != 0) {
                print_message("[%s] format violations differ\n--- helm:\n%s--- ours:\n%s", name,
                              theirs, ours);
                ok = false;
            }
            free(theirs);
            free(ours);
        }
    } else if (rc != 0) {
        print_message("[%s] we failed: %s\n", name, co_error_last());
        ok = false;
    } else {
        co_yaml_docs docs = CO_YAML_DOCS_INIT;
        assert_co_pass(co_yaml_parse_stream(&docs, helm_out, strlen(helm_out), CO_YAML_SKIP_NULL));
        struct json_object *want = json_object_new_array();
        for (size_t i = 0; i < docs.len; i++) {
            json_object_array_add(want, docs.items[i].value);
            docs.items[i].value = NULL;
        }
        co_yaml_docs_dispose(&docs);
        if (!co_json_equal(want, got)) {
            ok = false;
            size_t nw = json_object_array_length(want);
            size_t ng = json_object_array_length(got);
            print_message("[%s] output differs (helm %zu objects, ours %zu)\n", name, nw, ng);
            for (size_t i = 0; i < nw || i < ng; i++) {
                struct json_object *w = i < nw ? json_object_array_get_idx(want, i) : NULL;
                struct json_object *g = i < ng ? json_object_array_get_idx(got, i) : NULL;
                if (!co_json_equal(w, g)) {
                    print_message("  #%zu helm: %s\n  #%zu ours: %s\n", i,
                                  json_object_to_json_string(w), i, json_object_to_json_string(g));
                    break;
                }
            }
        }
        json_object_put(want);
    }
    json_object_put(got);
    co_helm_chart_free(chart);
    json_object_put(values);
    co_vfs_free(fs);
    free(helm_out);
    free(helm_stderr);
    return ok;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted entries of @p dir whose names start with @p prefix. */
static char **list_dir(const char *dir, const char *prefix, size_t *n)
{
    DIR *d = opendir(dir);
    char **names = co_xcalloc(1024, sizeof(char *));
    *n = 0;
    if (!d) {
        return names;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < 1023) { /* NOLINT(concurrency-mt-unsafe) */
        if (e->d_name[0] != '.' && strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            names[(*n)++] = co_xstrdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, *n, sizeof(char *), cmp_names);
    return names;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(names[i]);
    }
    free(names);
}

/* co_helm_default_api_versions is the set `helm template` starts from, in its order. */
static void test_helm_diff__default_api_versions_are_helms(void **state)
{
    (void)state;
    assert_int_equal(co_helm_n_default_api_versions, n_api_versions);
    for (size_t i = 0; i < n_api_versions; i++) {
        assert_string_equal(co_helm_default_api_versions[i], api_versions[i]);
    }
}

static void test_helm_diff__matches_helm_template(void **state)
{
    (void)state;
    char *root = co_test_fixture_path("helm");
    size_t ncases = 0;
    char **cases = list_dir(root, "", &ncases);
    size_t charts = 0;
    size_t compared = 0;
    size_t failed = 0;
    for (size_t i = 0; i < ncases; i++) {
        char *dir = co_xasprintf("%s/%s", root, cases[i]);
        char *chart = co_xasprintf("%s/chart", dir);
        struct stat st;
        if (stat(chart, &st) != 0 || !S_ISDIR(st.st_mode)) {
            free(chart);
            free(dir);
            continue;
        }
        charts++;
        size_t nv = 0;
        char **vals = list_dir(dir, "values-", &nv);
        for (size_t v = 0; v <= nv; v++) {
            char *vf = v == 0 ? NULL : co_xasprintf("%s/%s", dir, vals[v - 1]);
            /* the flag variants once per chart, without values */
            size_t nvar = v == 0 ? CO_ARRAY_SIZE(variants) : 1;
            for (size_t k = 0; k < nvar; k++) {
                char *name = co_xasprintf("%s%s%s%s", cases[i], vf ? "/" : "",
                                          vf ? vals[v - 1] : "", variants[k].suffix);
                compared++;
                if (!compare_case(name, chart, vf, &variants[k])) {
                    failed++;
                }
                free(name);
            }
            free(vf);
        }
        free_names(vals, nv);
        free(chart);
        free(dir);
    }
    free_names(cases, ncases);
    free(root);
    /* A chart that `helm create` writes: Helm's own starter, generated by the oracle. */
    char *tmp = co_test_tmpdir();
    char *created = co_xasprintf("%s/starter", tmp);
    char *out = NULL;
    char *argv[] = {helm_bin, (char *)"create", created, NULL};
    if (run(&out, argv) != 0) {
        fail_msg("helm create failed");
    }
    free(out);
    charts++;
    static const char *const starter_values[] = {
        NULL,
        "ingress:\n  enabled: true\n  className: nginx\n  hosts:\n  - host: a.example\n"
        "    paths:\n    - path: /\n      pathType: Prefix\n  tls:\n  - secretName: t\n"
        "    hosts: [a.example]\n",
        "autoscaling:\n  enabled: true\n  targetMemoryUtilizationPercentage: 70\n"
        "serviceAccount:\n  create: false\npodAnnotations: {a: b}\nfullnameOverride: x\n",
        "nameOverride: other\nimage: {tag: v9}\nresources: {limits: {cpu: 100m}}\n"
        "volumes: [{name: v, emptyDir: {}}]\nvolumeMounts: [{name: v, mountPath: /v}]\n"
        "nodeSelector: {disk: ssd}\ntolerations: [{key: k, operator: Exists}]\n",
    };
    for (size_t v = 0; v < CO_ARRAY_SIZE(starter_values); v++) {
        char *vf = NULL;
        if (starter_values[v]) {
            vf = co_xasprintf("%s/values-%zu.yaml", tmp, v);
            co_test_write_file(vf, starter_values[v], strlen(starter_values[v]));
        }
        size_t nvar = v == 0 ? CO_ARRAY_SIZE(variants) : 1;
        for (size_t k = 0; k < nvar; k++) {
            char *name =
                co_xasprintf("helm-create%s%zu%s", vf ? "/values-" : "", v, variants[k].suffix);
            compared++;
            if (!compare_case(name, created, vf, &variants[k])) {
                failed++;
            }
            free(name);
        }
        free(vf);
    }
    co_test_rmtree(tmp);
    free(tmp);
    free(created);
    print_message("helm differential: %zu charts, %zu cases, %zu passed, %zu failed\n", charts,
                  compared, compared - failed, failed);
    assert_true(compared >= 1);
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helm_diff__default_api_versions_are_helms),
        cmocka_unit_test(test_helm_diff__matches_helm_template),
    };
    return cmocka_run_group_tests_name("helm_diff", tests, group_setup, group_teardown);
}
