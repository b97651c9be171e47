/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for kubeconfig and in-cluster configuration: merging of several files, context
 * selection, inline and file credentials, relative paths, refused plugins, errors that name
 * the field, and the credentials reaching requests (through the fake transport). Untrusted
 * kubeconfigs (from a Component's Secret): every file reference refused before any file is
 * opened (counted through the loader's one open path), plain http only with the flag, and
 * their clients held to the network deny-list, checked against loopback servers that count
 * the connections they accept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/util/net.h"
#include "co/json/yaml.h"
#include "shared/src/kube/kube_int.h"
#include "tests/support/fake_kube.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_support.h"

typedef struct fixture {
    char *dir;
} fixture;

static int setup(void **state)
{
    fixture *fx = co_xcalloc(1, sizeof(*fx));
    fx->dir = co_test_tmpdir();
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    co_net_deny_clear();
    co_test_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

static char *write_in(fixture *fx, const char *name, const char *text)
{
    char *path = co_xasprintf("%s/%s", fx->dir, name);
    co_test_write_file(path, text, strlen(text));
    return path;
}

static const char file_a[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Config\",\"current-context\":\"a\","
    "\"clusters\":[{\"name\":\"c1\",\"cluster\":{\"server\":\"https://one.example:6443//\","
    "\"insecure-skip-tls-verify\":true,\"proxy-url\":\"http://proxy:3128\","
    "\"tls-server-name\":\"kubernetes\"}}],"
    "\"users\":[{\"name\":\"u1\",\"user\":{\"token\":\"tok-a\",\"as\":\"someone\","
    "\"as-groups\":[\"g1\",\"g2\"]}}],"
    "\"contexts\":[{\"name\":\"a\",\"context\":{\"cluster\":\"c1\",\"user\":\"u1\","
    "\"namespace\":\"ns-a\"}}]}";

static const char file_b[] =
    "{\"current-context\":\"b\","
    "\"clusters\":[{\"name\":\"c1\",\"cluster\":{\"server\":\"https://shadowed:1\"}},"
    "{\"name\":\"c2\",\"cluster\":{\"server\":\"https://two.example\"}}],"
    "\"users\":[{\"name\":\"u2\",\"user\":{\"username\":\"u\",\"password\":\"p\"}}],"
    "\"contexts\":[{\"name\":\"b\",\"context\":{\"cluster\":\"c2\",\"user\":\"u2\"}},"
    "{\"name\":\"a\",\"context\":{\"cluster\":\"c2\",\"user\":\"u2\"}}]}";

static void test_kube_config__merge_first_definition_wins(void **state)
{
    fixture *fx = *state;
    char *a = write_in(fx, "a.json", file_a);
    char *b = write_in(fx, "b.json", file_b);
    co_kube_config *cfg = NULL;

    const char *ab[] = {a, "", b};
    assert_co_pass(co_kube_config_from_files(&cfg, ab, 3, NULL));
    assert_string_equal(co_kube_config_context(cfg), "a");
    assert_string_equal(co_kube_config_server(cfg), "https://one.example:6443");
    assert_string_equal(co_kube_config_namespace(cfg), "ns-a");
    assert_string_equal(cfg->token, "tok-a");
    assert_true(cfg->insecure);
    assert_string_equal(cfg->proxy_url, "http://proxy:3128");
    assert_string_equal(cfg->tls_server_name, "kubernetes");
    assert_string_equal(cfg->impersonate_user, "someone");
    assert_int_equal(cfg->nimpersonate_groups, 2);
    assert_false(co_kube_config_is_in_cluster(cfg));
    co_kube_config_free(cfg);

    /* the other order: b's current-context and b's definition of context "a" win */
    const char *ba[] = {b, a};
    assert_co_pass(co_kube_config_from_files(&cfg, ba, 2, NULL));
    assert_string_equal(co_kube_config_context(cfg), "b");
    assert_string_equal(co_kube_config_server(cfg), "https://two.example");
    assert_string_equal(co_kube_config_namespace(cfg), "default");
    assert_string_equal(cfg->username, "u");
    co_kube_config_free(cfg);
    assert_co_pass(co_kube_config_from_files(&cfg, ba, 2, "a"));
    assert_string_equal(co_kube_config_server(cfg), "https://two.example");
    co_kube_config_free(cfg);

    /* an explicit context of the first file */
    assert_co_pass(co_kube_config_from_files(&cfg, ab, 3, "b"));
    assert_string_equal(co_kube_config_server(cfg), "https://two.example");
    co_kube_config_free(cfg);

    assert_co_fail_with(CO_EINVALID, co_kube_config_from_files(&cfg, ab, 3, "nope"));
    assert_contains(co_error_last(), "context \"nope\" is not defined");
    free(a);
    free(b);
}

static void test_kube_config__kubeconfig_env_skips_missing_files(void **state)
{
    fixture *fx = *state;
    char *a = write_in(fx, "a.json", file_a);
    char *env = co_xasprintf("%s/missing.json:%s", fx->dir, a);
    setenv("KUBECONFIG", env, 1); // NOLINT(concurrency-mt-unsafe): single-threaded test
    co_kube_config *cfg = NULL;
    assert_co_pass(co_kube_config_load(&cfg, NULL, NULL));
    assert_string_equal(co_kube_config_context(cfg), "a");
    co_kube_config_free(cfg);
    /* an explicit path wins over the environment and must exist */
    char *missing = co_xasprintf("%s/missing.json", fx->dir);
    assert_co_fail_with(CO_ENOTFOUND, co_kube_config_load(&cfg, missing, NULL));
    assert_contains(co_error_last(), "missing.json");
    unsetenv("KUBECONFIG"); // NOLINT(concurrency-mt-unsafe): single-threaded test
    free(missing);
    free(env);
    free(a);
}

static void test_kube_config__credentials_from_files_and_inline(void **state)
{
    fixture *fx = *state;
    char *ca = write_in(fx, "pki/ca.pem", "-----CA-----\n");
    char *key = write_in(fx, "pki/client.key", "-----KEY-----\n");
    char *tok = write_in(fx, "pki/token", "file-token\n");
    /* relative paths are relative to the kubeconfig's directory; "Y2VydA==" is "cert" */
    char *kc =
        write_in(fx, "kubeconfig",
                 "{\"current-context\":\"x\","
                 "\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://h:1\","
                 "\"certificate-authority\":\"pki/ca.pem\"}}],"
                 "\"users\":[{\"name\":\"u\",\"user\":{\"client-certificate-data\":\"Y2Vy\\ndA==\","
                 "\"client-key\":\"pki/client.key\",\"tokenFile\":\"pki/token\"}}],"
                 "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\",\"user\":\"u\"}}]}");
    co_kube_config *cfg = NULL;
    assert_co_pass(co_kube_config_load(&cfg, kc, NULL));
    assert_string_equal(cfg->ca.data, "-----CA-----\n");
    assert_int_equal(cfg->ca.len, 13);
    assert_string_equal(cfg->client_cert.data, "cert");
    assert_int_equal(cfg->client_cert.len, 4);
    assert_string_equal(cfg->client_key.data, "-----KEY-----\n");
    assert_non_null(strstr(cfg->token_file, "pki/token"));
    assert_null(cfg->token);

    /* the token file reaches the request, trimmed */
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_json(f, "GET", "/version", 200, "{}");
    co_kube_client *c = NULL;
    co_kube_client_options o = {.qps = -1};
    assert_co_pass(co_kube_client_new_with_transport(&c, cfg, co_fake_kube_transport(f), &o));
    assert_co_pass(co_kube_request_raw(NULL, c, "GET", "/version", NULL, NULL, 0));
    co_fake_call call = co_fake_kube_call(f, 0);
    assert_contains(call.headers, "Authorization: Bearer file-token\n");
    co_fake_call_dispose(&call);
    co_kube_client_free(c);
    co_fake_kube_free(f);
    co_kube_config_free(cfg);
    free(ca);
    free(key);
    free(tok);
    free(kc);
}

/* A user with a name and password authenticates with HTTP basic auth ("u:p:w" in base64). */
static void test_kube_config__basic_auth_header(void **state)
{
    fixture *fx = *state;
    char *kc = write_in(fx, "kubeconfig",
                        "{\"current-context\":\"x\","
                        "\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://h:1\"}}],"
                        "\"users\":[{\"name\":\"u\",\"user\":{\"username\":\"u\","
                        "\"password\":\"p:w\"}}],"
                        "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\","
                        "\"user\":\"u\"}}]}");
    co_kube_config *cfg = NULL;
    assert_co_pass(co_kube_config_load(&cfg, kc, NULL));
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_json(f, "GET", "/version", 200, "{}");
    co_kube_client *c = NULL;
    co_kube_client_options o = {.qps = -1};
    assert_co_pass(co_kube_client_new_with_transport(&c, cfg, co_fake_kube_transport(f), &o));
    assert_co_pass(co_kube_request_raw(NULL, c, "GET", "/version", NULL, NULL, 0));
    co_fake_call call = co_fake_kube_call(f, 0);
    assert_contains(call.headers, "Authorization: Basic dTpwOnc=\n");
    co_fake_call_dispose(&call);
    co_kube_client_free(c);
    co_fake_kube_free(f);
    co_kube_config_free(cfg);
    free(kc);
}

/* Loads a one-user kubeconfig whose user section is @p user_json and returns the code. */
static int load_user(fixture *fx, const char *user_json, co_kube_config **out)
{
    char *text = co_xasprintf(
        "{\"current-context\":\"x\","
        "\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://h:1\"}}],"
        "\"users\":[{\"name\":\"me\",\"user\":%s}],"
        "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\",\"user\":\"me\"}}]}",
        user_json);
    char *path = write_in(fx, "user.json", text);
    co_kube_config *cfg = NULL;
    int rc = co_kube_config_load(&cfg, path, NULL);
    if (rc == 0 && out) {
        *out = cfg;
    } else {
        co_kube_config_free(cfg);
    }
    free(path);
    free(text);
    return rc;
}

static void test_kube_config__plugins_are_refused(void **state)
{
    fixture *fx = *state;
    assert_co_fail_with(CO_EUNSUPPORTED, load_user(fx,
                                                   "{\"exec\":{\"command\":\"aws\",\"apiVersion\":"
                                                   "\"client.authentication.k8s.io/v1\"}}",
                                                   NULL));
    assert_contains(co_error_last(), "user \"me\" uses an exec credential plugin");
    assert_contains(co_error_last(), "not supported");
    assert_co_fail_with(CO_EUNSUPPORTED,
                        load_user(fx, "{\"auth-provider\":{\"name\":\"gcp\"}}", NULL));
    assert_contains(co_error_last(), "auth-provider");
}

static void test_kube_config__bad_credentials_name_the_field(void **state)
{
    fixture *fx = *state;
    assert_co_fail_with(CO_EINVALID, load_user(fx, "{\"client-certificate-data\":\"!!!\"}", NULL));
    assert_contains(co_error_last(), "user \"me\".client-certificate-data is not valid base64");
    assert_co_fail_with(CO_EINVALID,
                        load_user(fx, "{\"client-certificate-data\":\"Y2VydA==\"}", NULL));
    assert_contains(co_error_last(), "client certificate but no client key");
    assert_co_fail_with(CO_ENOTFOUND, load_user(fx, "{\"tokenFile\":\"/nonexistent/t\"}", NULL));
    assert_contains(co_error_last(), "tokenFile");
    assert_co_fail_with(CO_ENOTFOUND, load_user(fx, "{\"client-key\":\"nope.key\"}", NULL));
    assert_contains(co_error_last(), "client-key");
}

static void test_kube_config__structure_errors(void **state)
{
    fixture *fx = *state;
    static const struct {
        const char *doc;
        const char *message;
    } cases[] = {
        {"{\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\"}}]}", "no current-context"},
        {"{\"current-context\":\"x\",\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":"
         "\"c\"}}]}",
         "cluster \"c\" is not defined"},
        {"{\"current-context\":\"x\",\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":"
         "\"https://h\"}}],\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\","
         "\"user\":\"u\"}}]}",
         "user \"u\" is not defined"},
        {"{\"current-context\":\"x\",\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":"
         "\"ftp://h\"}}],\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\"}}]}",
         "cluster \"c\".server \"ftp://h\" is not an http(s) URL"},
        {"{\"current-context\":\"x\",\"clusters\":[{\"name\":\"c\",\"cluster\":{}}],"
         "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\"}}]}",
         "cluster \"c\".server is missing"},
        {"{\"clusters\":{\"name\":\"c\"}}", "clusters must be a list"},
        {"{\"clusters\":[{\"cluster\":{}}]}", "clusters[0].name is missing"},
        {"[1,2]", "a kubeconfig must be a mapping"},
        {"{\"clusters\":[", "did not find expected node content"},
        {"{\"clusters\":[{\"name\":true,\"cluster\":{}}]}", "clusters[0].name must be a string"},
        {"{\"current-context\":1}", "current-context must be a string"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        char *path = write_in(fx, "bad.json", cases[i].doc);
        co_kube_config *cfg = NULL;
        co_error_clear();
        int rc = co_kube_config_load(&cfg, path, NULL);
        if (rc != CO_EINVALID || !strstr(co_error_last(), cases[i].message)) {
            fail_msg("case %zu: got %s \"%s\", want \"%s\"", i, co_error_name(rc), co_error_last(),
                     cases[i].message);
        }
        assert_null(cfg);
        free(path);
    }
}

static void test_kube_config__basic_auth_and_impersonation_reach_requests(void **state)
{
    fixture *fx = *state;
    co_kube_config *cfg = NULL;
    assert_co_pass(load_user(fx,
                             "{\"username\":\"u\",\"password\":\"p\",\"as\":\"alice\","
                             "\"as-groups\":[\"devs\"]}",
                             &cfg));
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_json(f, "GET", "/version", 200, "{}");
    co_kube_client *c = NULL;
    co_kube_client_options o = {.qps = -1, .user_agent = "test-agent/1"};
    assert_co_pass(co_kube_client_new_with_transport(&c, cfg, co_fake_kube_transport(f), &o));
    assert_co_pass(co_kube_request_raw(NULL, c, "GET", "/version", NULL, NULL, 0));
    co_fake_call call = co_fake_kube_call(f, 0);
    assert_contains(call.headers, "Authorization: Basic dTpw\n");
    assert_contains(call.headers, "Impersonate-User: alice\n");
    assert_contains(call.headers, "Impersonate-Group: devs\n");
    assert_contains(call.headers, "User-Agent: test-agent/1\n");
    co_fake_call_dispose(&call);
    co_kube_client_free(c);
    co_fake_kube_free(f);
    co_kube_config_free(cfg);
}

static void test_kube_config__in_cluster(void **state)
{
    fixture *fx = *state;
    char *sa = co_xasprintf("%s/sa", fx->dir);
    free(write_in(fx, "sa/token", "sa-token-1"));
    free(write_in(fx, "sa/ca.crt", "-----SA CA-----\n"));
    free(write_in(fx, "sa/namespace", "kube-system\n"));
    co_kube_config *cfg = NULL;
    assert_co_pass(co_kube_config_in_cluster(&cfg, sa, "10.0.0.1", "443"));
    assert_string_equal(co_kube_config_server(cfg), "https://10.0.0.1:443");
    assert_string_equal(co_kube_config_namespace(cfg), "kube-system");
    assert_true(co_kube_config_is_in_cluster(cfg));
    assert_null(co_kube_config_context(cfg));
    assert_string_equal(cfg->ca.data, "-----SA CA-----\n");
    co_kube_config_free(cfg);

    assert_co_pass(co_kube_config_in_cluster(&cfg, sa, "fd00::1", "6443"));
    assert_string_equal(co_kube_config_server(cfg), "https://[fd00::1]:6443");

    /* the token is read again when its period has passed */
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_json(f, "GET", "/version", 200, "{}");
    co_kube_client *c = NULL;
    co_kube_client_options o = {.qps = -1, .token_reload_ms = 1};
    assert_co_pass(co_kube_client_new_with_transport(&c, cfg, co_fake_kube_transport(f), &o));
    assert_co_pass(co_kube_request_raw(NULL, c, "GET", "/version", NULL, NULL, 0));
    free(write_in(fx, "sa/token", "sa-token-2"));
    co_kube__sleep_ms(5, NULL);
    assert_co_pass(co_kube_request_raw(NULL, c, "GET", "/version", NULL, NULL, 0));
    co_fake_call c0 = co_fake_kube_call(f, 0), c1 = co_fake_kube_call(f, 1);
    assert_contains(c0.headers, "Authorization: Bearer sa-token-1\n");
    assert_contains(c1.headers, "Authorization: Bearer sa-token-2\n");
    co_fake_call_dispose(&c0);
    co_fake_call_dispose(&c1);
    co_kube_client_free(c);
    co_fake_kube_free(f);
    co_kube_config_free(cfg);

    assert_co_fail_with(CO_EINVALID, co_kube_config_in_cluster(&cfg, sa, "h", "http"));
    char *empty = co_xasprintf("%s/empty", fx->dir);
    assert_co_fail_with(CO_ENOTFOUND, co_kube_config_in_cluster(&cfg, empty, "h", "443"));
    assert_contains(co_error_last(), "service-account token");
    free(empty);
    free(sa);
}

static void test_kube_config__yaml_kubeconfig(void **state)
{
    fixture *fx = *state;
    char *path = write_in(fx, "config.yaml",
                          "apiVersion: v1\n"
                          "kind: Config\n"
                          "current-context: yc\n"
                          "clusters:\n"
                          "- name: c\n"
                          "  cluster:\n"
                          "    server: https://yaml.example:443\n"
                          "users:\n"
                          "- name: u\n"
                          "  user:\n"
                          "    token: yaml-token\n"
                          "contexts:\n"
                          "- name: yc\n"
                          "  context: {cluster: c, user: u, namespace: yns}\n");
    co_kube_config *cfg = NULL;
    assert_co_pass(co_kube_config_load(&cfg, path, NULL));
    assert_string_equal(co_kube_config_server(cfg), "https://yaml.example:443");
    assert_string_equal(co_kube_config_namespace(cfg), "yns");
    assert_string_equal(cfg->token, "yaml-token");
    assert_false(cfg->insecure);
    co_kube_config_free(cfg);
    free(path);
    /* YAML scalars follow the Kubernetes rules: "yes" is a boolean, quoted "yes" a string */
    path = write_in(fx, "config2.yaml",
                    "current-context: yc\n"
                    "clusters: [{name: c, cluster: {server: 'https://h:1', "
                    "insecure-skip-tls-verify: yes}}]\n"
                    "users: [{name: u, user: {token: \"yes\"}}]\n"
                    "contexts: [{name: yc, context: {cluster: c, user: u}}]\n");
    assert_co_pass(co_kube_config_load(&cfg, path, NULL));
    assert_true(cfg->insecure);
    assert_string_equal(cfg->token, "yes");
    co_kube_config_free(cfg);
    free(path);
    /* a YAML syntax error names the file and the line */
    path = write_in(fx, "broken.yaml", "clusters:\n  - name: c\n   bad: [\n");
    assert_co_fail_with(CO_EINVALID, co_kube_config_load(&cfg, path, NULL));
    assert_contains(co_error_last(), "broken.yaml");
    assert_contains(co_error_last(), "line");
    free(path);
}

/* ---- untrusted kubeconfigs --------------------------------------------------------------- */

/* A kubeconfig with clusters and users given as JSON arrays; the context "x" selects the
 * cluster and user named "sel". */
static struct json_object *untrusted_doc(const char *clusters, const char *users)
{
    char *text = co_xasprintf("{\"current-context\":\"x\",\"clusters\":%s,\"users\":%s,"
                              "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"sel\","
                              "\"user\":\"sel\"}}]}",
                              clusters, users);
    struct json_object *doc = NULL;
    assert_co_pass(co_yaml_parse(&doc, text, strlen(text), 0));
    free(text);
    return doc;
}

/* Loads an untrusted kubeconfig that must fail with @p code and exactly @p message, opening no
 * file on the way. */
static void assert_untrusted_refused(const char *clusters,
                                     const char *users,
                                     unsigned flags,
                                     int code,
                                     const char *message)
{
    struct json_object *doc = untrusted_doc(clusters, users);
    co_kube_config *cfg = NULL;
    unsigned long opened = co_kube__files_opened();
    assert_co_fail_with(code, co_kube_config_from_untrusted_json(&cfg, doc, NULL, flags));
    assert_string_equal(co_error_last(), message);
    assert_null(cfg);
    assert_int_equal(co_kube__files_opened(), opened);
    json_object_put(doc);
}

#define HTTPS_CLUSTER "[{\"name\":\"sel\",\"cluster\":{\"server\":\"https://h:1\"}}]"
#define TOKEN_USER    "[{\"name\":\"sel\",\"user\":{\"token\":\"t\"}}]"
#define NO_FILES      "file references are not allowed in an untrusted kubeconfig"

static void test_kube_config__untrusted_refuses_every_file_reference(void **state)
{
    fixture *fx = *state;
    /* every path names a readable file, so a loader that opened one would succeed */
    char *tok = write_in(fx, "token", "controller-token\n");
    char *pem = write_in(fx, "pem", "-----PEM-----\n");
    char *users = NULL, *clusters = NULL;

    users = co_xasprintf("[{\"name\":\"sel\",\"user\":{\"tokenFile\":\"%s\"}}]", tok);
    assert_untrusted_refused(HTTPS_CLUSTER, users, 0, CO_EINVALID,
                             "users[0].user.tokenFile: " NO_FILES);
    free(users);
    /* relative, or next to an inline token that would win: still refused */
    assert_untrusted_refused(
        HTTPS_CLUSTER, "[{\"name\":\"sel\",\"user\":{\"token\":\"t\",\"tokenFile\":\"token\"}}]", 0,
        CO_EINVALID, "users[0].user.tokenFile: " NO_FILES);
    users = co_xasprintf("[{\"name\":\"sel\",\"user\":{\"client-certificate\":\"%s\","
                         "\"client-key-data\":\"a2V5\"}}]",
                         pem);
    assert_untrusted_refused(HTTPS_CLUSTER, users, 0, CO_EINVALID,
                             "users[0].user.client-certificate: " NO_FILES);
    free(users);
    users = co_xasprintf("[{\"name\":\"sel\",\"user\":{\"client-certificate-data\":\"Y2VydA==\","
                         "\"client-key\":\"%s\"}}]",
                         pem);
    assert_untrusted_refused(HTTPS_CLUSTER, users, 0, CO_EINVALID,
                             "users[0].user.client-key: " NO_FILES);
    free(users);
    clusters = co_xasprintf("[{\"name\":\"sel\",\"cluster\":{\"server\":\"https://h:1\","
                            "\"certificate-authority-data\":\"Y2E=\","
                            "\"certificate-authority\":\"%s\"}}]",
                            pem);
    assert_untrusted_refused(clusters, TOKEN_USER, 0, CO_EINVALID,
                             "clusters[0].cluster.certificate-authority: " NO_FILES);
    free(clusters);
    /* entries the context does not select count too, and a value of any type */
    users = co_xasprintf("[{\"name\":\"sel\",\"user\":{\"token\":\"t\"}},"
                         "{\"name\":\"other\",\"user\":{\"tokenFile\":\"%s\"}}]",
                         tok);
    assert_untrusted_refused(HTTPS_CLUSTER, users, 0, CO_EINVALID,
                             "users[1].user.tokenFile: " NO_FILES);
    free(users);
    assert_untrusted_refused("[{\"name\":\"other\",\"cluster\":{\"server\":\"https://o:1\","
                             "\"certificate-authority\":{\"path\":\"/etc/shadow\"}}},"
                             "{\"name\":\"sel\",\"cluster\":{\"server\":\"https://h:1\"}}]",
                             TOKEN_USER, 0, CO_EINVALID,
                             "clusters[0].cluster.certificate-authority: " NO_FILES);
    /* the plugins stay refused, wherever they are */
    assert_untrusted_refused(HTTPS_CLUSTER,
                             "[{\"name\":\"sel\",\"user\":{\"exec\":{\"command\":\"sh\"}}}]", 0,
                             CO_EUNSUPPORTED,
                             "users[0].user.exec: exec credential plugins are not supported; use "
                             "a token or a client certificate");
    assert_untrusted_refused(HTTPS_CLUSTER,
                             "[{\"name\":\"sel\",\"user\":{\"token\":\"t\"}},"
                             "{\"name\":\"o\",\"user\":{\"auth-provider\":{\"name\":\"gcp\"}}}]",
                             0, CO_EUNSUPPORTED,
                             "users[1].user.auth-provider: auth-provider plugins are not "
                             "supported; use a token or a client certificate");

    /* the same token file through the trusted loader is read: the counter sees opens */
    users = co_xasprintf("[{\"name\":\"sel\",\"user\":{\"tokenFile\":\"%s\"}}]", tok);
    struct json_object *doc = untrusted_doc(HTTPS_CLUSTER, users);
    co_kube_config *cfg = NULL;
    unsigned long opened = co_kube__files_opened();
    assert_co_pass(co_kube_config_from_json(&cfg, doc, NULL, NULL));
    assert_true(co_kube__files_opened() > opened);
    assert_false(co_kube_config_is_untrusted(cfg));
    co_kube_config_free(cfg);
    json_object_put(doc);
    free(users);
    /* null and "" are no references */
    doc = untrusted_doc("[{\"name\":\"sel\",\"cluster\":{\"server\":\"https://h:1\","
                        "\"certificate-authority\":null}}]",
                        "[{\"name\":\"sel\",\"user\":{\"token\":\"t\",\"tokenFile\":\"\"}}]");
    opened = co_kube__files_opened();
    assert_co_pass(co_kube_config_from_untrusted_json(&cfg, doc, NULL, 0));
    assert_int_equal(co_kube__files_opened(), opened);
    assert_true(co_kube_config_is_untrusted(cfg));
    assert_string_equal(cfg->token, "t");
    assert_null(cfg->token_file);
    co_kube_config_free(cfg);
    json_object_put(doc);
    free(tok);
    free(pem);
}

static void test_kube_config__untrusted_servers_and_proxies(void **state)
{
    (void)state;
    static const char http_second[] =
        "[{\"name\":\"first\",\"cluster\":{\"server\":\"https://h:1\"}},"
        "{\"name\":\"sel\",\"cluster\":{\"server\":\"http://10.0.0.1:8080\"}}]";
    assert_untrusted_refused(http_second, TOKEN_USER, 0, CO_EINVALID,
                             "clusters[1].cluster.server: \"http://10.0.0.1:8080\": plain http is "
                             "not allowed in an untrusted kubeconfig; use https");
    struct json_object *doc = untrusted_doc(http_second, TOKEN_USER);
    co_kube_config *cfg = NULL;
    assert_co_pass(co_kube_config_from_untrusted_json(&cfg, doc, NULL, CO_KUBE_CONFIG_ALLOW_HTTP));
    assert_string_equal(co_kube_config_server(cfg), "http://10.0.0.1:8080");
    co_kube_config_free(cfg);
    json_object_put(doc);
    /* proxies of client-go's schemes only; skipping TLS verification stays the tenant's choice */
    assert_untrusted_refused("[{\"name\":\"sel\",\"cluster\":{\"server\":\"https://h:1\","
                             "\"proxy-url\":\"socks4://p:1080\"}}]",
                             TOKEN_USER, 0, CO_EINVALID,
                             "clusters[0].cluster.proxy-url: \"socks4://p:1080\": the scheme must "
                             "be http, https, socks5 or socks5h");
    doc = untrusted_doc("[{\"name\":\"sel\",\"cluster\":{\"server\":\"https://h:1\","
                        "\"proxy-url\":\"socks5h://p:1080\",\"insecure-skip-tls-verify\":true,"
                        "\"tls-server-name\":\"k\"}}]",
                        TOKEN_USER);
    assert_co_pass(co_kube_config_from_untrusted_json(&cfg, doc, NULL, 0));
    assert_string_equal(cfg->proxy_url, "socks5h://p:1080");
    assert_true(cfg->insecure);
    co_kube_config_free(cfg);
    json_object_put(doc);
}

static void test_kube_config__untrusted_inline_credentials_and_impersonation(void **state)
{
    (void)state;
    /* "Y2VydA==" is "cert", "a2V5" is "key" */
    struct json_object *doc =
        untrusted_doc("[{\"name\":\"sel\",\"cluster\":{\"server\":\"https://h:1\","
                      "\"certificate-authority-data\":\"Y2E=\"}}]",
                      "[{\"name\":\"sel\",\"user\":{\"client-certificate-data\":\"Y2VydA==\","
                      "\"client-key-data\":\"a2V5\",\"token\":\"inline\",\"as\":\"tenant-admin\","
                      "\"as-groups\":[\"system:masters\"],\"as-uid\":\"0\"}}]");
    co_kube_config *cfg = NULL;
    assert_co_pass(co_kube_config_from_untrusted_json(&cfg, doc, NULL, 0));
    assert_string_equal(cfg->ca.data, "ca");
    assert_string_equal(cfg->client_cert.data, "cert");
    assert_string_equal(cfg->client_key.data, "key");
    /* without an impersonation option the kubeconfig's own applies, to the tenant's server */
    co_fake_kube *f = co_fake_kube_new();
    co_fake_kube_json(f, "GET", "/version", 200, "{}");
    co_kube_client *c = NULL;
    co_kube_client_options o = {.qps = -1};
    assert_co_pass(co_kube_client_new_with_transport(&c, cfg, co_fake_kube_transport(f), &o));
    assert_co_pass(co_kube_request_raw(NULL, c, "GET", "/version", NULL, NULL, 0));
    co_fake_call call = co_fake_kube_call(f, 0);
    assert_contains(call.headers, "Authorization: Bearer inline\n");
    assert_contains(call.headers, "Impersonate-User: tenant-admin\n");
    assert_contains(call.headers, "Impersonate-Group: system:masters\n");
    assert_null(strstr(call.headers, "Impersonate-Uid"));
    co_fake_call_dispose(&call);
    co_kube_client_free(c);
    co_fake_kube_free(f);
    /* the controller's service account on top replaces the user and drops the groups */
    f = co_fake_kube_new();
    co_fake_kube_json(f, "GET", "/version", 200, "{}");
    o.impersonate_user = "system:serviceaccount:team:deployer";
    assert_co_pass(co_kube_client_new_with_transport(&c, cfg, co_fake_kube_transport(f), &o));
    assert_co_pass(co_kube_request_raw(NULL, c, "GET", "/version", NULL, NULL, 0));
    call = co_fake_kube_call(f, 0);
    assert_contains(call.headers, "Impersonate-User: system:serviceaccount:team:deployer\n");
    assert_null(strstr(call.headers, "Impersonate-Group"));
    assert_null(strstr(call.headers, "tenant-admin"));
    co_fake_call_dispose(&call);
    co_kube_client_free(c);
    co_fake_kube_free(f);
    co_kube_config_free(cfg);
    json_object_put(doc);
}

/* Builds a config the way the controller does for a target, and when that succeeds a client,
 * and sends one request; returns the config's code, or the request's. */
static int controller_uses(const struct json_object *doc, int untrusted, unsigned flags)
{
    co_kube_config *cfg = NULL;
    int rc = untrusted ? co_kube_config_from_untrusted_json(&cfg, doc, NULL, flags)
                       : co_kube_config_from_json(&cfg, doc, NULL, NULL);
    if (rc < 0) {
        return rc;
    }
    co_kube_client *c = NULL;
    co_kube_client_options o = {.qps = -1, .max_retries = -1, .connect_timeout_ms = 5000};
    rc = co_kube_client_new(&c, cfg, &o);
    if (rc == 0) {
        rc = co_kube_request_raw(NULL, c, "GET", "/version", NULL, NULL, 0);
    }
    co_kube_client_free(c);
    co_kube_config_free(cfg);
    return rc;
}

/* The finding: a kubeconfig Secret naming the controller's token file as tokenFile and a
 * server of the tenant's choosing made the controller send that token there. */
static void test_kube_config__untrusted_token_file_never_leaves(void **state)
{
    fixture *fx = *state;
    test_httpd *tenant = test_httpd_start();
    test_httpd_route(tenant, "/version", 200, "{}", 2, "Content-Type: application/json");
    char *sa_token = write_in(fx, "serviceaccount-token", "controller-token\n");
    char *clusters = co_xasprintf("[{\"name\":\"sel\",\"cluster\":{\"server\":\"%s\"}}]",
                                  test_httpd_url(tenant));
    char *users = co_xasprintf("[{\"name\":\"sel\",\"user\":{\"tokenFile\":\"%s\"}}]", sa_token);
    struct json_object *doc = untrusted_doc(clusters, users);
    unsigned long opened = co_kube__files_opened();
    assert_co_fail_with(CO_EINVALID, controller_uses(doc, 1, CO_KUBE_CONFIG_ALLOW_HTTP));
    assert_string_equal(co_error_last(), "users[0].user.tokenFile: " NO_FILES);
    assert_int_equal(co_kube__files_opened(), opened);
    assert_int_equal(test_httpd_connections(tenant), 0);
    json_object_put(doc);
    /* the same kubeconfig with an inline token reaches the server: the listener does count */
    doc = untrusted_doc(clusters, TOKEN_USER);
    assert_co_pass(controller_uses(doc, 1, CO_KUBE_CONFIG_ALLOW_HTTP));
    assert_int_equal(test_httpd_connections(tenant), 1);
    assert_int_equal(test_httpd_hits(tenant, "/version"), 1);
    json_object_put(doc);
    test_httpd_stop(tenant);
    free(users);
    free(clusters);
    free(sa_token);
}

static void test_kube_config__untrusted_clients_pass_the_deny_list(void **state)
{
    (void)state;
    test_httpd *meta = test_httpd_start_at("127.0.0.2");
    test_httpd_route(meta, "/version", 200, "{}", 2, "Content-Type: application/json");
    const char *cidr = "127.0.0.2/32";
    assert_co_pass(co_net_deny_set(&cidr, 1));
    char *clusters =
        co_xasprintf("[{\"name\":\"sel\",\"cluster\":{\"server\":\"%s\"}}]", test_httpd_url(meta));
    struct json_object *doc = untrusted_doc(clusters, TOKEN_USER);
    assert_co_fail_with(CO_EAUTH, controller_uses(doc, 1, CO_KUBE_CONFIG_ALLOW_HTTP));
    assert_contains(co_error_last(),
                    "connection to 127.0.0.2 refused: address in denied range 127.0.0.2/32");
    /* behind a proxy the server's host is checked by name: the proxy is never asked */
    test_httpd *proxy = test_httpd_start();
    char *proxied = co_xasprintf("[{\"name\":\"sel\",\"cluster\":{\"server\":\"%s\","
                                 "\"proxy-url\":\"%s\"}}]",
                                 test_httpd_url(meta), test_httpd_url(proxy));
    struct json_object *pdoc = untrusted_doc(proxied, TOKEN_USER);
    assert_co_fail_with(CO_EAUTH, controller_uses(pdoc, 1, CO_KUBE_CONFIG_ALLOW_HTTP));
    assert_contains(co_error_last(), "address in denied range 127.0.0.2/32");
    assert_int_equal(test_httpd_connections(proxy), 0);
    assert_int_equal(test_httpd_connections(meta), 0);
    /* the controller's own configurations are not subject to the list */
    assert_co_pass(controller_uses(doc, 0, 0));
    assert_int_equal(test_httpd_connections(meta), 1);
    json_object_put(pdoc);
    json_object_put(doc);
    test_httpd_stop(proxy);
    test_httpd_stop(meta);
    free(proxied);
    free(clusters);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kube_config__merge_first_definition_wins, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__kubeconfig_env_skips_missing_files, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__basic_auth_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__credentials_from_files_and_inline, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__plugins_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__bad_credentials_name_the_field, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__structure_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_kube_config__basic_auth_and_impersonation_reach_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__in_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__yaml_kubeconfig, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__untrusted_refuses_every_file_reference,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__untrusted_servers_and_proxies, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_kube_config__untrusted_inline_credentials_and_impersonation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__untrusted_token_file_never_leaves, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_kube_config__untrusted_clients_pass_the_deny_list,
                                        setup, teardown),
    };
    return cmocka_run_group_tests_name("kube_config", tests, NULL, NULL);
}
