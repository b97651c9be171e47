/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deploy/ renders the same objects three ways: the Helm chart deploy/chart through our own
 * renderer (co_helm) and through a real `helm template` (installed by tests/env/deps.sh;
 * $CO_HELM overrides the path), and the kustomize base deploy/base through `kubectl kustomize`
 * ($CO_KUBECTL overrides it). The chart's values change what they promise (replicas and the
 * PodDisruptionBudget, failurePolicy and timeout of every webhook, the opt-in cluster-admin
 * binding and with it the default service account, the NetworkPolicies, the shipped
 * ComponentPolicy), every container runs non-root with a read-only root filesystem and probes,
 * and the CRDs are the ones of crds/: the Component CRD serves v1alpha1 only, and the opt-in
 * (the kustomize Component deploy/v1beta1, the chart's crds.v1beta1) changes that CRD into the
 * one of crds/v1beta1/ and nothing else. The shipped ComponentPolicy passes
 * `component-controller validate` (build/test, $CO_CONTROLLER overrides it) and refuses what it
 * is meant to refuse.
 */
#include <json-c/json.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "co/util/common.h"
#include "co/render/helm.h"
#include "co/json/json.h"
#include "co/render/vfs.h"
#include "co/json/yaml.h"
#include "tests/support/test_support.h"

#define NAMESPACE "component-operator"
#define CHART     CO_SOURCE_ROOT "/deploy/chart"

#define DEFAULT_SA_ARG "--default-service-account=component-default"
#define COMP_CRD_KEY   "apiextensions.k8s.io/v1/CustomResourceDefinition//components.core.cs.sap.com"
#define POLICY_KEY     "core.cs.sap.com/v1alpha1/ComponentPolicy//restrict-cross-namespace-references"

static char *helm_bin;
static char *kubectl_bin;
static char *controller_bin;

static char *cache_bin(const char *name)
{
    const char *cache = getenv("XDG_CACHE_HOME"); /* NOLINT(concurrency-mt-unsafe) */
    const char *home = getenv("HOME");            /* NOLINT(concurrency-mt-unsafe) */
    return cache && *cache
               ? co_xasprintf("%s/component-operator/bin/%s", cache, name)
               : co_xasprintf("%s/.cache/component-operator/bin/%s", home ? home : "/root", name);
}

/* Runs @p argv (looked up in $PATH), collecting stdout, and with @p with_stderr stderr too,
 * into *out (else stderr goes to ours).
 * @return the exit status, -1 if it cannot run. */
static int run_argv(char **out, char *const *argv, bool with_stderr)
{
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    if (with_stderr) {
        posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
    }
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    if (rc != 0) {
        close(pipefd[0]);
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
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run(char **out, char *const *argv)
{
    return run_argv(out, argv, false);
}

/* The objects of a YAML stream, as a JSON array. */
static struct json_object *parse_stream(const char *text)
{
    if (!text) {
        fail_msg("no output");
        return json_object_new_array();
    }
    co_yaml_docs docs = CO_YAML_DOCS_INIT;
    assert_co_pass(co_yaml_parse_stream(&docs, text, strlen(text), CO_YAML_SKIP_NULL));
    struct json_object *list = json_object_new_array();
    for (size_t i = 0; i < docs.len; i++) {
        json_object_array_add(list, docs.items[i].value);
        docs.items[i].value = NULL;
    }
    co_yaml_docs_dispose(&docs);
    return list;
}

static struct json_object *kustomize(const char *dir)
{
    char *path = co_xasprintf("%s/deploy/%s", CO_SOURCE_ROOT, dir);
    char *argv[] = {kubectl_bin, (char *)"kustomize", path, NULL};
    char *out = NULL;
    int rc = run(&out, argv);
    free(path);
    if (rc != 0) {
        fail_msg("kubectl kustomize deploy/%s failed (%d)", dir, rc);
    }
    struct json_object *list = parse_stream(out);
    free(out);
    return list;
}

/* `kubectl kustomize` of an overlay of deploy/@p resource with the kustomize Component
 * deploy/@p component, written to a scratch directory. Kustomize takes neither absolute paths
 * nor files outside the overlay, so the overlay names both directories relative to itself. */
static struct json_object *kustomize_with(const char *resource, const char *component)
{
    char *dir = co_test_tmpdir();
    co_buf up = CO_BUF_INIT(SIZE_MAX);
    for (const char *p = dir; *p; p++) {
        if (*p == '/') {
            assert_co_pass(co_buf_puts(&up, "../"));
        }
    }
    char *kz = co_xasprintf("apiVersion: kustomize.config.k8s.io/v1beta1\n"
                            "kind: Kustomization\n"
                            "resources: [\"%s%s/deploy/%s\"]\n"
                            "components: [\"%s%s/deploy/%s\"]\n",
                            co_buf_cstr(&up), CO_SOURCE_ROOT + 1, resource, co_buf_cstr(&up),
                            CO_SOURCE_ROOT + 1, component);
    char *file = co_xasprintf("%s/kustomization.yaml", dir);
    co_test_write_file(file, kz, strlen(kz));
    char *argv[] = {kubectl_bin, (char *)"kustomize", dir, NULL};
    char *out = NULL;
    int rc = run(&out, argv);
    if (rc != 0) {
        fail_msg("kubectl kustomize of deploy/%s with deploy/%s failed (%d)", resource, component,
                 rc);
    }
    struct json_object *list = parse_stream(out);
    free(out);
    co_test_rmtree(dir);
    free(file);
    free(kz);
    co_buf_dispose(&up);
    free(dir);
    return list;
}

/* helm template with the values of @p values_yaml (written to a file), namespace @p ns. */
static struct json_object *helm(const char *values_yaml, const char *ns)
{
    char *dir = co_test_tmpdir();
    char *vf = co_xasprintf("%s/values.yaml", dir);
    co_test_write_file(vf, values_yaml, strlen(values_yaml));
    char *argv[] = {helm_bin,
                    (char *)"template",
                    (char *)"component-operator",
                    (char *)CHART,
                    (char *)"--namespace",
                    (char *)ns,
                    (char *)"--include-crds",
                    (char *)"-f",
                    vf,
                    NULL};
    char *out = NULL;
    int rc = run(&out, argv);
    co_test_rmtree(dir);
    free(dir);
    free(vf);
    if (rc != 0) {
        fail_msg("helm template deploy/chart failed (%d)", rc);
    }
    struct json_object *list = parse_stream(out);
    free(out);
    return list;
}

/* Our renderer, as `helm template --include-crds` would. */
static struct json_object *ours(const char *values_yaml, const char *ns)
{
    co_vfs *fs = NULL;
    assert_co_pass(co_vfs_new_disk(&fs, CHART));
    co_helm_chart *chart = NULL;
    assert_co_pass(co_helm_chart_load(&chart, fs, ""));
    struct json_object *values = NULL;
    assert_co_pass(co_yaml_parse(&values, values_yaml, strlen(values_yaml), 0));
    co_helm_options opts = {.release_name = "component-operator", .release_namespace = ns};
    struct json_object *got = NULL;
    int rc = co_helm_template(&got, chart, values, &opts);
    if (rc < 0) {
        fail_msg("co_helm_template: %s", co_error_last());
    }
    json_object_put(values);
    co_helm_chart_free(chart);
    co_vfs_free(fs);
    return got;
}

/* The value at a dotted path ("spec.template.spec"), or NULL. */
static struct json_object *at(struct json_object *obj, const char *path)
{
    char *copy = co_xstrdup(path);
    char *save = NULL;
    struct json_object *cur = obj;
    for (char *k = strtok_r(copy, ".", &save); k && cur; k = strtok_r(NULL, ".", &save)) {
        struct json_object *next = NULL;
        cur = json_object_is_type(cur, json_type_object) && json_object_object_get_ex(cur, k, &next)
                  ? next
                  : NULL;
    }
    free(copy);
    return cur;
}

static const char *str_at(struct json_object *obj, const char *path)
{
    struct json_object *v = at(obj, path);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static int64_t int_at(struct json_object *obj, const char *path)
{
    struct json_object *v = at(obj, path);
    return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
}

/* 1 for true, 0 for false, -1 when missing or not a boolean. */
static int bool_at(struct json_object *obj, const char *path)
{
    struct json_object *v = at(obj, path);
    return v && json_object_is_type(v, json_type_boolean) ? json_object_get_boolean(v) : -1;
}

static char *key_of(struct json_object *o)
{
    return co_xasprintf("%s/%s/%s/%s", str_at(o, "apiVersion"), str_at(o, "kind"),
                        str_at(o, "metadata.namespace") ? str_at(o, "metadata.namespace") : "",
                        str_at(o, "metadata.name"));
}

static struct json_object *find(struct json_object *list, const char *key)
{
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        struct json_object *o = json_object_array_get_idx(list, i);
        char *k = key_of(o);
        int same = strcmp(k, key) == 0;
        free(k);
        if (same) {
            return o;
        }
    }
    return NULL;
}

/* The same objects, in any order; prints the first difference. */
static void assert_same_objects(const char *what, struct json_object *a, struct json_object *b)
{
    size_t na = json_object_array_length(a);
    size_t nb = json_object_array_length(b);
    for (size_t i = 0; i < na; i++) {
        struct json_object *o = json_object_array_get_idx(a, i);
        char *k = key_of(o);
        struct json_object *other = find(b, k);
        if (!other) {
            fail_msg("%s: %s only on the left", what, k);
        }
        if (!co_json_equal(o, other)) {
            fail_msg("%s: %s differs:\n  %s\n  %s", what, k, json_object_to_json_string(o),
                     json_object_to_json_string(other));
        }
        free(k);
    }
    if (na != nb) {
        fail_msg("%s: %zu objects against %zu", what, na, nb);
    }
}

static size_t count_kind(struct json_object *list, const char *kind)
{
    size_t n = 0;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        const char *k = str_at(json_object_array_get_idx(list, i), "kind");
        n += k && strcmp(k, kind) == 0;
    }
    return n;
}

/* Whether the first container of @p deploy has an argument starting with @p prefix (the whole
 * argument when @p whole). */
static bool arg_in(struct json_object *deploy, const char *prefix, bool whole)
{
    struct json_object *c =
        json_object_array_get_idx(at(deploy, "spec.template.spec.containers"), 0);
    struct json_object *args = at(c, "args");
    for (size_t i = 0; args && i < json_object_array_length(args); i++) {
        const char *a = json_object_get_string(json_object_array_get_idx(args, i));
        if (whole ? strcmp(a, prefix) == 0 : strncmp(a, prefix, strlen(prefix)) == 0) {
            return true;
        }
    }
    return false;
}

static bool has_arg(struct json_object *deploy, const char *arg)
{
    return arg_in(deploy, arg, true);
}

/* Whether the controller Deployment in @p ns has a --default-service-account argument. */
static bool has_default_sa(struct json_object *list, const char *ns)
{
    char *key = co_xasprintf("apps/v1/Deployment/%s/component-controller", ns);
    struct json_object *ctl = find(list, key);
    free(key);
    assert_non_null(ctl);
    return arg_in(ctl, "--default-service-account", false);
}

/* The chart's Component CRD carries helm.sh/resource-policy: keep (without it `helm uninstall`
 * deletes the CRD and every Component with it), which the kustomize base has no use for:
 * checks that it does and removes it, so that the rest compares with the base. */
static void strip_keep(struct json_object *list)
{
    struct json_object *crd = find(list, COMP_CRD_KEY);
    assert_non_null(crd);
    struct json_object *meta = at(crd, "metadata");
    struct json_object *ann = at(meta, "annotations");
    assert_non_null(ann);
    struct json_object *keep = NULL;
    assert_true(json_object_object_get_ex(ann, "helm.sh/resource-policy", &keep));
    assert_string_equal(json_object_get_string(keep), "keep");
    assert_int_equal(json_object_object_length(ann), 1);
    json_object_object_del(meta, "annotations");
}

/* The document of crds/@p file, parsed. */
static struct json_object *crd_file(const char *file)
{
    char *path = co_xasprintf("%s/crds/%s", CO_SOURCE_ROOT, file);
    char *text = co_test_read_file(path, NULL);
    if (!text) {
        fail_msg("cannot read %s", path);
    }
    struct json_object *list = parse_stream(text);
    assert_int_equal(json_object_array_length(list), 1);
    struct json_object *doc = json_object_get(json_object_array_get_idx(list, 0));
    json_object_put(list);
    free(text);
    free(path);
    return doc;
}

/* The names of the versions the Component CRD in @p list serves, space-separated. */
static char *served(struct json_object *list)
{
    struct json_object *versions = at(find(list, COMP_CRD_KEY), "spec.versions");
    assert_non_null(versions);
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    for (size_t i = 0; i < json_object_array_length(versions); i++) {
        struct json_object *v = json_object_array_get_idx(versions, i);
        if (bool_at(v, "served") == 1) {
            assert_co_pass(co_buf_printf(&b, "%s%s", i ? " " : "", str_at(v, "name")));
        }
    }
    return co_buf_take(&b, NULL);
}

static int group_setup(void **state)
{
    (void)state;
    const char *h = getenv("CO_HELM");       /* NOLINT(concurrency-mt-unsafe) */
    const char *k = getenv("CO_KUBECTL");    /* NOLINT(concurrency-mt-unsafe) */
    const char *c = getenv("CO_CONTROLLER"); /* NOLINT(concurrency-mt-unsafe) */
    helm_bin = h && *h ? co_xstrdup(h) : cache_bin("helm");
    kubectl_bin = k && *k ? co_xstrdup(k) : cache_bin("kubectl-v32");
    controller_bin =
        c && *c ? co_xstrdup(c) : co_xstrdup(CO_SOURCE_ROOT "/build/test/component-controller");
    if (access(kubectl_bin, X_OK) != 0) {
        free(kubectl_bin);
        kubectl_bin = co_xstrdup("kubectl"); /* from $PATH */
    }
    if (access(helm_bin, X_OK) != 0) {
        fprintf(stderr, "helm not found at %s (run tests/env/deps.sh)\n", helm_bin);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    free(helm_bin);
    free(kubectl_bin);
    free(controller_bin);
    return 0;
}

static void test_deploy_chart__defaults_equal_kustomize_base(void **state)
{
    (void)state;
    const char *values = "namespace: {create: true}\n";
    struct json_object *base = kustomize("base");
    struct json_object *h = helm(values, NAMESPACE);
    struct json_object *o = ours(values, NAMESPACE);
    assert_true(json_object_array_length(base) >= 20);
    assert_same_objects("helm vs ours", h, o);
    assert_true(co_json_equal(h, o)); /* helm's own order too */
    strip_keep(h);
    assert_same_objects("kustomize vs helm", base, h);
    /* the Component CRD is that of crds/: v1alpha1 alone, no conversion webhook to depend on */
    struct json_object *crd = crd_file("core.cs.sap.com_components.yaml");
    assert_true(co_json_equal(find(base, COMP_CRD_KEY), crd));
    char *versions = served(base);
    assert_string_equal(versions, "v1alpha1");
    free(versions);
    assert_string_equal(str_at(find(base, COMP_CRD_KEY), "spec.conversion.strategy"), "None");
    json_object_put(crd);
    /* the base has what the issue lists */
    assert_int_equal(count_kind(base, "Namespace"), 1);
    assert_int_equal(count_kind(base, "ServiceAccount"), 2);
    assert_int_equal(count_kind(base, "Deployment"), 2);
    assert_int_equal(count_kind(base, "CustomResourceDefinition"), 4);
    assert_int_equal(count_kind(base, "ValidatingWebhookConfiguration"), 1);
    assert_int_equal(count_kind(base, "MutatingWebhookConfiguration"), 1);
    assert_int_equal(count_kind(base, "PodDisruptionBudget"), 1); /* webhook: 2 replicas */
    assert_int_equal(count_kind(base, "Service"), 3);
    assert_int_equal(count_kind(base, "NetworkPolicy"), 2);
    assert_int_equal(count_kind(base, "ComponentPolicy"), 1);
    assert_null(find(base, "rbac.authorization.k8s.io/v1/ClusterRoleBinding//"
                           "component-operator:controller-cluster-admin"));
    /* Components without a service account are applied as one nothing grants any right */
    struct json_object *ctl = find(base, "apps/v1/Deployment/" NAMESPACE "/component-controller");
    assert_non_null(ctl);
    assert_true(has_arg(ctl, DEFAULT_SA_ARG));
    json_object_put(base);
    json_object_put(h);
    json_object_put(o);
}

static void test_deploy_chart__cluster_admin_equals_overlay(void **state)
{
    (void)state;
    const char *values = "namespace: {create: true}\ncontroller: {clusterAdmin: true}\n";
    struct json_object *overlay = kustomize("cluster-admin");
    struct json_object *h = helm(values, NAMESPACE);
    struct json_object *o = ours(values, NAMESPACE);
    assert_true(co_json_equal(h, o));
    strip_keep(h);
    assert_same_objects("kustomize vs helm", overlay, h);
    struct json_object *crb = find(o, "rbac.authorization.k8s.io/v1/ClusterRoleBinding//"
                                      "component-operator:controller-cluster-admin");
    assert_non_null(crb);
    assert_string_equal(str_at(crb, "roleRef.name"), "cluster-admin");
    /* as the Go original: no default account, the controller's own rights */
    assert_false(has_default_sa(overlay, NAMESPACE));
    assert_false(has_default_sa(o, NAMESPACE));
    /* the cross-namespace policy stays */
    assert_non_null(find(overlay, POLICY_KEY));
    json_object_put(overlay);
    json_object_put(h);
    json_object_put(o);
}

/* The opt-in v1beta1: the kustomize Component over the base (and over the cluster-admin
 * overlay) and the chart's crds.v1beta1 render the Component CRD of crds/v1beta1/ (v1beta1
 * served, converted by the webhook) and otherwise the same objects as without it. */
static void test_deploy_chart__v1beta1_option_equals_component(void **state)
{
    (void)state;
    const char *values = "namespace: {create: true}\ncrds: {v1beta1: true}\n";
    struct json_object *overlay = kustomize_with("base", "v1beta1");
    struct json_object *h = helm(values, NAMESPACE);
    struct json_object *o = ours(values, NAMESPACE);
    assert_true(co_json_equal(h, o));
    strip_keep(h);
    assert_same_objects("kustomize vs helm", overlay, h);
    struct json_object *crd = crd_file("v1beta1/core.cs.sap.com_components.yaml");
    assert_true(co_json_equal(find(overlay, COMP_CRD_KEY), crd));
    char *versions = served(overlay);
    assert_string_equal(versions, "v1alpha1 v1beta1");
    free(versions);
    struct json_object *conv = at(find(overlay, COMP_CRD_KEY), "spec.conversion");
    assert_string_equal(str_at(conv, "strategy"), "Webhook");
    assert_string_equal(str_at(conv, "webhook.clientConfig.service.namespace"), NAMESPACE);
    assert_string_equal(str_at(conv, "webhook.clientConfig.service.name"), "component-webhook");
    assert_string_equal(str_at(conv, "webhook.clientConfig.service.path"), "/convert");
    /* everything else as without the option */
    struct json_object *base = kustomize("base");
    assert_int_equal(json_object_array_length(base), json_object_array_length(overlay));
    for (size_t i = 0; i < json_object_array_length(base); i++) {
        struct json_object *b = json_object_array_get_idx(base, i);
        char *k = key_of(b);
        if (strcmp(k, COMP_CRD_KEY) != 0) {
            assert_true(co_json_equal(b, find(overlay, k)));
        }
        free(k);
    }
    json_object_put(base);
    json_object_put(crd);
    json_object_put(overlay);
    json_object_put(h);
    json_object_put(o);

    /* over the cluster-admin overlay too */
    overlay = kustomize_with("cluster-admin", "v1beta1");
    values = "namespace: {create: true}\ncrds: {v1beta1: true}\ncontroller: {clusterAdmin: true}\n";
    h = helm(values, NAMESPACE);
    strip_keep(h);
    assert_same_objects("kustomize vs helm", overlay, h);
    json_object_put(overlay);
    json_object_put(h);

    /* the chart names its own namespace in the conversion stanza */
    h = helm("crds: {v1beta1: true}\n", "ops");
    o = ours("crds: {v1beta1: true}\n", "ops");
    assert_true(co_json_equal(h, o));
    assert_string_equal(
        str_at(find(o, COMP_CRD_KEY), "spec.conversion.webhook.clientConfig.service.namespace"),
        "ops");
    json_object_put(h);
    json_object_put(o);
}

static void test_deploy_chart__values_take_effect(void **state)
{
    (void)state;
    const char *values = "webhook: {replicas: 1, failurePolicy: Ignore, timeoutSeconds: 12}\n"
                         "controller: {replicas: 3, defaultServiceAccount: deployer}\n"
                         "image: {repository: registry.example/co, tag: v9}\n";
    struct json_object *h = helm(values, "ops");
    struct json_object *o = ours(values, "ops");
    assert_true(co_json_equal(h, o));
    assert_int_equal(count_kind(o, "Namespace"), 0);
    /* a PodDisruptionBudget only for the Deployment with 3 replicas */
    assert_null(find(o, "policy/v1/PodDisruptionBudget/ops/component-webhook"));
    assert_non_null(find(o, "policy/v1/PodDisruptionBudget/ops/component-controller"));
    struct json_object *ctl = find(o, "apps/v1/Deployment/ops/component-controller");
    assert_non_null(ctl);
    assert_true(has_arg(ctl, "--default-service-account=deployer"));
    assert_int_equal(int_at(ctl, "spec.replicas"), 3);
    struct json_object *c = json_object_array_get_idx(at(ctl, "spec.template.spec.containers"), 0);
    assert_string_equal(str_at(c, "image"), "registry.example/co:v9");
    /* every webhook of both configurations */
    const char *cfgs[] = {
        "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration//component-webhook",
        "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration//component-webhook"};
    size_t nhooks = 0;
    for (size_t i = 0; i < CO_ARRAY_SIZE(cfgs); i++) {
        struct json_object *cfg = find(o, cfgs[i]);
        assert_non_null(cfg);
        struct json_object *hooks = at(cfg, "webhooks");
        for (size_t j = 0; j < json_object_array_length(hooks); j++, nhooks++) {
            struct json_object *wh = json_object_array_get_idx(hooks, j);
            assert_string_equal(str_at(wh, "failurePolicy"), "Ignore");
            assert_int_equal(int_at(wh, "timeoutSeconds"), 12);
            assert_string_equal(str_at(wh, "clientConfig.service.namespace"), "ops");
            struct json_object *sel = at(wh, "namespaceSelector");
            if (sel) {
                const char *s = json_object_to_json_string(sel);
                assert_non_null(strstr(s, "\"ops\""));
                assert_non_null(strstr(s, "\"kube-system\""));
            }
        }
    }
    assert_int_equal(nhooks, 7);
    json_object_put(h);
    json_object_put(o);
}

/* clusterAdmin drops the default account only while the value is unset. */
static void test_deploy_chart__default_service_account_values(void **state)
{
    (void)state;
    static const struct {
        const char *values;
        const char *arg; /* NULL: no --default-service-account */
    } cases[] = {
        {"controller: {clusterAdmin: true, defaultServiceAccount: deployer}\n",
         "--default-service-account=deployer"},
        {"controller: {clusterAdmin: true, defaultServiceAccount: component-default}\n",
         DEFAULT_SA_ARG},
        {"controller: {defaultServiceAccount: \"\"}\n", NULL},
        {"controller: {defaultServiceAccount: tenant-deployer}\n",
         "--default-service-account=tenant-deployer"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        struct json_object *h = helm(cases[i].values, NAMESPACE);
        struct json_object *o = ours(cases[i].values, NAMESPACE);
        assert_true(co_json_equal(h, o));
        struct json_object *ctl = find(o, "apps/v1/Deployment/" NAMESPACE "/component-controller");
        assert_non_null(ctl);
        if (cases[i].arg) {
            assert_true(has_arg(ctl, cases[i].arg));
        } else {
            assert_false(has_default_sa(o, NAMESPACE));
        }
        json_object_put(h);
        json_object_put(o);
    }
}

/* The ingress rules of NetworkPolicy @p name in @p list that open @p port: how many, and
 * whether the last one names peers (*from). */
static size_t rules_for_port(struct json_object *list, const char *name, int port, bool *from)
{
    char *key = co_xasprintf("networking.k8s.io/v1/NetworkPolicy/" NAMESPACE "/%s", name);
    struct json_object *np = find(list, key);
    free(key);
    assert_non_null(np);
    struct json_object *types = at(np, "spec.policyTypes");
    assert_non_null(types);
    /* ingress only: egress (API server, git hosts, artifact URLs) stays open */
    assert_int_equal(json_object_array_length(types), 1);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(types, 0)), "Ingress");
    struct json_object *rules = at(np, "spec.ingress");
    size_t n = 0;
    for (size_t i = 0; rules && i < json_object_array_length(rules); i++) {
        struct json_object *rule = json_object_array_get_idx(rules, i);
        struct json_object *ports = at(rule, "ports");
        for (size_t j = 0; ports && j < json_object_array_length(ports); j++) {
            if (int_at(json_object_array_get_idx(ports, j), "port") == port) {
                struct json_object *peers = at(rule, "from");
                *from = peers && json_object_array_length(peers) > 0;
                n++;
            }
        }
    }
    return n;
}

static void test_deploy_chart__network_policies(void **state)
{
    (void)state;
    bool from = false;
    /* defaults (equal to the base): the webhook port from anywhere, metrics from the labelled
     * namespaces, no rule for the probes (the node is always let in), nothing else */
    struct json_object *o = ours("namespace: {create: true}\n", NAMESPACE);
    assert_int_equal(rules_for_port(o, "component-webhook", 9443, &from), 1);
    assert_false(from);
    assert_int_equal(rules_for_port(o, "component-webhook", 8080, &from), 1);
    assert_true(from);
    assert_int_equal(rules_for_port(o, "component-controller", 8080, &from), 1);
    assert_true(from);
    assert_non_null(
        strstr(json_object_to_json_string(find(o, "networking.k8s.io/v1/NetworkPolicy/" NAMESPACE
                                                  "/component-controller")),
               "component-operator.cs.sap.com\\/metrics-scraper"));
    assert_int_equal(rules_for_port(o, "component-webhook", 8081, &from), 0);
    assert_int_equal(rules_for_port(o, "component-controller", 8081, &from), 0);
    assert_int_equal(rules_for_port(o, "component-controller", 9443, &from), 0);
    json_object_put(o);

    /* no metrics peers: no metrics rule (an empty `from` would admit everyone) */
    const char *v = "networkPolicy: {metricsFrom: []}\n";
    struct json_object *h = helm(v, NAMESPACE);
    o = ours(v, NAMESPACE);
    assert_true(co_json_equal(h, o));
    assert_int_equal(rules_for_port(o, "component-webhook", 8080, &from), 0);
    assert_int_equal(rules_for_port(o, "component-webhook", 9443, &from), 1);
    assert_int_equal(rules_for_port(o, "component-controller", 8080, &from), 0);
    struct json_object *ctl_rules =
        at(find(o, "networking.k8s.io/v1/NetworkPolicy/" NAMESPACE "/component-controller"),
           "spec.ingress");
    assert_non_null(ctl_rules); /* present and empty: all ingress refused */
    assert_int_equal(json_object_array_length(ctl_rules), 0);
    json_object_put(h);
    json_object_put(o);

    /* probe peers for a CNI that filters node traffic */
    v = "networkPolicy: {probesFrom: [{ipBlock: {cidr: 10.0.0.0/16}}]}\n";
    h = helm(v, NAMESPACE);
    o = ours(v, NAMESPACE);
    assert_true(co_json_equal(h, o));
    assert_int_equal(rules_for_port(o, "component-webhook", 8081, &from), 1);
    assert_true(from);
    assert_int_equal(rules_for_port(o, "component-controller", 8081, &from), 1);
    assert_true(from);
    assert_int_equal(rules_for_port(o, "component-controller", 8080, &from), 1);
    json_object_put(h);
    json_object_put(o);

    v = "networkPolicy: {enabled: false}\n";
    h = helm(v, NAMESPACE);
    o = ours(v, NAMESPACE);
    assert_true(co_json_equal(h, o));
    assert_int_equal(count_kind(o, "NetworkPolicy"), 0);
    json_object_put(h);
    json_object_put(o);
}

static void test_deploy_chart__component_policy_values(void **state)
{
    (void)state;
    const char *v = "policies: {restrictCrossNamespaceReferences: false}\n";
    struct json_object *h = helm(v, NAMESPACE);
    struct json_object *o = ours(v, NAMESPACE);
    assert_true(co_json_equal(h, o));
    assert_int_equal(count_kind(o, "ComponentPolicy"), 0);
    json_object_put(h);
    json_object_put(o);

    v = "policies:\n"
        "  crossNamespaceReferences:\n"
        "    action: Warn\n"
        "    allowTargetNamespace: true\n"
        "    exemptNamespaces: [platform, kube-system]\n";
    h = helm(v, "ops");
    o = ours(v, "ops");
    assert_true(co_json_equal(h, o));
    struct json_object *p = find(o, POLICY_KEY);
    assert_non_null(p);
    assert_string_equal(
        json_object_to_json_string_ext(at(p, "spec.exemptNamespaces"), JSON_C_TO_STRING_PLAIN),
        "[\"ops\",\"kube-system\",\"platform\"]");
    struct json_object *r = at(p, "spec.rules.crossNamespaceReferences");
    assert_string_equal(str_at(r, "action"), "Warn");
    assert_int_equal(bool_at(r, "allowSources"), 0);
    assert_int_equal(bool_at(r, "allowDependencies"), 0);
    assert_int_equal(bool_at(r, "allowTargetNamespace"), 1);
    json_object_put(h);
    json_object_put(o);
}

/* `component-controller validate [--policy POLICY] FILE` on @p policy written to a file, and
 * on @p components when given; the output (stdout and stderr) in *out. */
static int validate(char **out, struct json_object *policy, const char *components)
{
    if (access(controller_bin, X_OK) != 0) {
        fail_msg("no component-controller at %s (make test-build)", controller_bin);
    }
    char *dir = co_test_tmpdir();
    char *pf = co_xasprintf("%s/policy.json", dir);
    char *cf = co_xasprintf("%s/components.yaml", dir);
    const char *text = json_object_to_json_string_ext(policy, JSON_C_TO_STRING_PRETTY);
    co_test_write_file(pf, text, strlen(text));
    int rc;
    if (components) {
        co_test_write_file(cf, components, strlen(components));
        char *argv[] = {controller_bin, (char *)"validate", (char *)"--policy", pf, cf, NULL};
        rc = run_argv(out, argv, true);
    } else {
        char *argv[] = {controller_bin, (char *)"validate", pf, NULL};
        rc = run_argv(out, argv, true);
    }
    co_test_rmtree(dir);
    free(dir);
    free(pf);
    free(cf);
    return rc;
}

/* The policy of the base, of the chart's defaults and of a chart variant is a valid
 * ComponentPolicy (schema, unknown fields, values) as the webhook would admit it. */
static void test_deploy_chart__shipped_policy_passes_validate(void **state)
{
    (void)state;
    struct json_object *lists[] = {
        kustomize("base"),
        kustomize("cluster-admin"),
        ours("namespace: {create: true}\n", NAMESPACE),
        ours("policies: {crossNamespaceReferences: {action: Audit, allowSources: true, "
             "exemptNamespaces: [platform-*]}}\n",
             "ops"),
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(lists); i++) {
        struct json_object *p = find(lists[i], POLICY_KEY);
        assert_non_null(p);
        char *out = NULL;
        int rc = validate(&out, p, NULL);
        if (rc != 0) {
            fail_msg("shipped policy %zu: validate exited %d: %s", i, rc, out ? out : "");
        }
        assert_non_null(strstr(out, "1 objects valid"));
        free(out);
        json_object_put(lists[i]);
    }
}

static const char cross_ns_components[] =
    "apiVersion: core.cs.sap.com/v1alpha1\n"
    "kind: Component\n"
    "metadata: {name: local, namespace: team-a}\n"
    "spec:\n"
    "  sourceRef: {fluxGitRepository: {name: repo, namespace: team-a}}\n"
    "  namespace: team-a\n"
    "  dependencies: [{name: db}]\n"
    "---\n"
    "apiVersion: core.cs.sap.com/v1alpha1\n"
    "kind: Component\n"
    "metadata: {name: db, namespace: team-a}\n"
    "spec:\n"
    "  sourceRef: {fluxGitRepository: {name: repo}}\n"
    "---\n"
    "apiVersion: core.cs.sap.com/v1alpha1\n"
    "kind: Component\n"
    "metadata: {name: reaching-out, namespace: team-a}\n"
    "spec:\n"
    "  sourceRef: {fluxGitRepository: {name: repo, namespace: team-b}}\n"
    "  namespace: team-b\n"
    "  dependencies: [{name: db, namespace: team-b}]\n"
    "---\n"
    "apiVersion: core.cs.sap.com/v1alpha1\n"
    "kind: Component\n"
    "metadata: {name: db, namespace: team-b}\n"
    "spec:\n"
    "  sourceRef: {fluxGitRepository: {name: repo}}\n"
    "---\n"
    "apiVersion: core.cs.sap.com/v1alpha1\n"
    "kind: Component\n"
    "metadata: {name: platform, namespace: kube-system}\n"
    "spec:\n"
    "  sourceRef: {fluxGitRepository: {name: repo, namespace: flux-system}}\n"
    "  dependencies: [{name: db, namespace: team-b}]\n";

/* The base's policy refuses a source, a dependency and a target namespace outside the
 * Component's namespace, and nothing else; kube-system is exempt. */
static void test_deploy_chart__shipped_policy_refuses_cross_namespace_references(void **state)
{
    (void)state;
    struct json_object *base = kustomize("base");
    struct json_object *p = find(base, POLICY_KEY);
    assert_non_null(p);
    char *out = NULL;
    assert_int_equal(validate(&out, p, cross_ns_components), 1);
    static const char *const refused[] = {
        "Component \"team-a/reaching-out\": ComponentPolicy "
        "\"restrict-cross-namespace-references\": crossNamespaceReferences:",
        "the source in namespace \"team-b\" is outside the Component's namespace",
        "the dependency \"team-b/db\" is outside the Component's namespace",
        "the target namespace \"team-b\" differs from the Component's namespace",
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(refused); i++) {
        if (!strstr(out, refused[i])) {
            fail_msg("validate did not say \"%s\":\n%s", refused[i], out);
        }
    }
    assert_null(strstr(out, "team-a/local"));
    assert_null(strstr(out, "kube-system/platform"));
    free(out);

    /* the same policy as Warn admits with warnings */
    struct json_object *warn =
        ours("policies: {crossNamespaceReferences: {action: Warn}}\n", NAMESPACE);
    assert_int_equal(validate(&out, find(warn, POLICY_KEY), cross_ns_components), 0);
    assert_non_null(strstr(out, "warning: Component \"team-a/reaching-out\""));
    free(out);
    json_object_put(warn);
    json_object_put(base);
}

static void test_deploy_chart__pods_are_locked_down(void **state)
{
    (void)state;
    struct json_object *base = kustomize("base");
    size_t ndeploy = 0;
    for (size_t i = 0; i < json_object_array_length(base); i++) {
        struct json_object *d = json_object_array_get_idx(base, i);
        if (strcmp(str_at(d, "kind"), "Deployment") != 0) {
            continue;
        }
        ndeploy++;
        struct json_object *pod = at(d, "spec.template.spec");
        assert_int_equal(bool_at(pod, "securityContext.runAsNonRoot"), 1);
        assert_true(int_at(pod, "securityContext.runAsUser") > 0);
        struct json_object *c = json_object_array_get_idx(at(pod, "containers"), 0);
        assert_int_equal(bool_at(c, "securityContext.readOnlyRootFilesystem"), 1);
        assert_int_equal(bool_at(c, "securityContext.allowPrivilegeEscalation"), 0);
        assert_string_equal(str_at(c, "livenessProbe.httpGet.path"), "/healthz");
        assert_string_equal(str_at(c, "readinessProbe.httpGet.path"), "/readyz");
        assert_non_null(at(c, "resources.requests.memory"));
        assert_non_null(at(c, "resources.limits.memory"));
        const char *sa = str_at(pod, "serviceAccountName");
        assert_non_null(sa);
        char *key = co_xasprintf("v1/ServiceAccount/" NAMESPACE "/%s", sa);
        assert_non_null(find(base, key));
        free(key);
    }
    assert_int_equal(ndeploy, 2);
    json_object_put(base);
}

/* The copies in deploy/ are those of crds/ (`make crds` writes both): deploy/crds for the
 * kustomize base, deploy/v1beta1 for its opt-in, and in the chart's crds/ (which Helm installs
 * before the templates, and never templates) only the ComponentPolicy CRD: the Component CRD is
 * a template of the chart, and a copy in crds/ would be installed next to it. */
static void test_deploy_chart__crds_are_those_of_crds_dir(void **state)
{
    (void)state;
    static const struct {
        const char *copy;
        const char *of;
    } copies[] = {
        {"crds/core.cs.sap.com_components.yaml", "core.cs.sap.com_components.yaml"},
        {"crds/core.cs.sap.com_componentpolicies.yaml", "core.cs.sap.com_componentpolicies.yaml"},
        {"v1beta1/core.cs.sap.com_components.yaml", "v1beta1/core.cs.sap.com_components.yaml"},
        {"chart/crds/core.cs.sap.com_componentpolicies.yaml",
         "core.cs.sap.com_componentpolicies.yaml"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(copies); i++) {
        char *a = co_xasprintf("%s/crds/%s", CO_SOURCE_ROOT, copies[i].of);
        char *b = co_xasprintf("%s/deploy/%s", CO_SOURCE_ROOT, copies[i].copy);
        size_t la = 0;
        size_t lb = 0;
        char *ta = co_test_read_file(a, &la);
        char *tb = co_test_read_file(b, &lb);
        assert_non_null(ta);
        if (!tb) {
            fail_msg("%s is missing: run `make crds`", b);
        } else if (la != lb || memcmp(ta, tb, la) != 0) {
            fail_msg("%s differs from %s: run `make crds`", b, a);
        }
        free(ta);
        free(tb);
        free(a);
        free(b);
    }
    char *stale = co_test_read_file(CHART "/crds/core.cs.sap.com_components.yaml", NULL);
    if (stale) {
        free(stale);
        fail_msg("deploy/chart/crds holds the Component CRD, which templates/ renders");
    }
    /* helm template without --include-crds: the Component CRD is a template */
    char *argv[] = {helm_bin,      (char *)"template",    (char *)"component-operator",
                    (char *)CHART, (char *)"--namespace", (char *)NAMESPACE,
                    NULL};
    char *out = NULL;
    assert_int_equal(run(&out, argv), 0);
    struct json_object *list = parse_stream(out);
    assert_non_null(find(list, COMP_CRD_KEY));
    assert_null(find(list, "apiextensions.k8s.io/v1/CustomResourceDefinition//"
                           "componentpolicies.core.cs.sap.com"));
    json_object_put(list);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deploy_chart__defaults_equal_kustomize_base),
        cmocka_unit_test(test_deploy_chart__cluster_admin_equals_overlay),
        cmocka_unit_test(test_deploy_chart__v1beta1_option_equals_component),
        cmocka_unit_test(test_deploy_chart__values_take_effect),
        cmocka_unit_test(test_deploy_chart__default_service_account_values),
        cmocka_unit_test(test_deploy_chart__network_policies),
        cmocka_unit_test(test_deploy_chart__component_policy_values),
        cmocka_unit_test(test_deploy_chart__shipped_policy_passes_validate),
        cmocka_unit_test(test_deploy_chart__shipped_policy_refuses_cross_namespace_references),
        cmocka_unit_test(test_deploy_chart__pods_are_locked_down),
        cmocka_unit_test(test_deploy_chart__crds_are_those_of_crds_dir),
    };
    return cmocka_run_group_tests_name("deploy_chart", tests, group_setup, group_teardown);
}
