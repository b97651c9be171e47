/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flux sources against a real kube-apiserver with the Flux source CRDs installed (the
 * repository's own from tests/fixtures/flux-crds; the conformance lane runs this suite again
 * with the published ones, see ctl_test_install_flux_crds()), source status written by the
 * test the way source-controller would, and artifacts served by a loopback HTTP server: a
 * ready source is fetched once and then served from the cache, a non-ready or missing source
 * is a retriable error, a new artifact makes Components re-queue and changes the source
 * digest, a digest mismatch or a truncated download fails clearly and leaves nothing behind. A
 * private control plane without the CRDs shows that the kinds then fail retriably, and that a
 * cluster serving only v1beta2 is read through that version.
 *
 * The cluster seam is filled by `kubectl get -o json` here; the controller fills it from its
 * informer cache.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/evp.h>

#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/source/source.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_archive_builder.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_kubectl.h"
#include "tests/support/test_support.h"

#define GROUP "source.toolkit.fluxcd.io"

typedef struct suite {
    char *dir;
    char *ns;
    tkc k;
    test_httpd *srv;
    co_sources *s;
    int n;
} suite;

static int suite_setup(void **state)
{
    const char *kubeconfig = getenv("CO_TEST_KUBECONFIG"); // NOLINT(concurrency-mt-unsafe)
    if (!kubeconfig || !*kubeconfig) {
        fail_msg("CO_TEST_KUBECONFIG is not set (run through tests/run.sh)");
    }
    suite *s = calloc(1, sizeof(*s));
    s->dir = co_test_tmpdir();
    tkc_init(&s->k, kubeconfig, s->dir);
    s->ns = co_xasprintf("co-src-%d", (int)getpid());
    tkc_ok(&s->k, NULL, "create", "namespace", s->ns, NULL);
    co_kube_client *admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_flux_crds(admin);
    co_kube_client_free(admin);
    s->srv = test_httpd_start();
    co_source_config cfg = {0};
    char *cache = co_xasprintf("%s/cache", s->dir);
    cfg.cache_dir = cache;
    cfg.fetch.backoff_ms = 10;
    cfg.fetch.retries = 1;
    cfg.get = tkc_get;
    cfg.get_ctx = &s->k;
    assert_co_pass(co_sources_new(&s->s, &cfg));
    free(cache);
    *state = s;
    return 0;
}

static int suite_teardown(void **state)
{
    suite *s = *state;
    if (!s) {
        return 0;
    }
    tkc_run(&s->k, NULL, NULL, NULL, "delete", "namespace", s->ns, "--wait=false", NULL);
    co_sources_free(s->s);
    test_httpd_stop(s->srv);
    tkc_dispose(&s->k);
    co_test_rmtree(s->dir);
    free(s->dir);
    free(s->ns);
    free(s);
    return 0;
}

static char *sha256_digest(const void *data, size_t len)
{
    unsigned char md[32];
    unsigned n = 32;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    char hex[65];
    for (size_t i = 0; i < 32; i++) {
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    }
    return co_xasprintf("sha256:%s", hex);
}

/* An artifact served at @p path with one file app/cm.yaml holding @p text. */
typedef struct served {
    char *url;
    char *digest;
    void *data;
    size_t len;
} served;

static served serve(suite *s, const char *path, const char *text)
{
    tab_entry e[] = {{TAB_FILE, 0, "app/cm.yaml", text, 0}, {TAB_FILE, 0, "README", "r", 0}};
    served a;
    a.data = tab_build(TAB_TAR_GZ, e, 2, &a.len);
    test_httpd_route(s->srv, path, 200, a.data, a.len, NULL);
    a.url = co_xasprintf("%s%s", test_httpd_url(s->srv), path);
    a.digest = sha256_digest(a.data, a.len);
    return a;
}

static void served_dispose(served *a)
{
    free(a->url);
    free(a->digest);
    free(a->data);
}

static char *resource(const char *plural, const char *version)
{
    return co_xasprintf("%s.%s.%s", plural, version, GROUP);
}

static void create_object(suite *s, const char *kind, const char *name, const char *spec)
{
    char *yaml = co_xasprintf("{\"apiVersion\":\"%s/v1\",\"kind\":\"%s\",\"metadata\":{"
                              "\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":%s}",
                              GROUP, kind, name, s->ns, spec);
    tkc_ok(&s->k, yaml, "create", "-f", "-", NULL);
    free(yaml);
}

static long long generation_of(suite *s, const char *res, const char *name)
{
    char *out = NULL;
    tkc_run(&s->k, NULL, &out, NULL, "get", "-n", s->ns, res, name, "-o",
            "jsonpath={.metadata.generation}", NULL);
    long long g = strtoll(out ? out : "0", NULL, 10);
    free(out);
    return g;
}

/* Writes the status source-controller would write: Ready for the generation, an artifact. */
static void set_status(suite *s,
                       const char *res,
                       const char *name,
                       const char *ready,
                       const char *url,
                       const char *digest,
                       const char *revision)
{
    long long gen = generation_of(s, res, name);
    char *artifact = url ? co_xasprintf(",\"artifact\":{\"url\":\"%s\",\"digest\":\"%s\","
                                        "\"revision\":\"%s\",\"path\":\"x\","
                                        "\"lastUpdateTime\":\"2026-01-01T00:00:00Z\"}",
                                        url, digest, revision)
                         : co_xstrdup("");
    char *patch = co_xasprintf("{\"status\":{\"observedGeneration\":%lld,\"conditions\":[{"
                               "\"type\":\"Ready\",\"status\":\"%s\",\"reason\":\"Succeeded\","
                               "\"message\":\"stored artifact\",\"observedGeneration\":%lld,"
                               "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]%s}}",
                               gen, ready, gen, artifact);
    tkc_ok(&s->k, NULL, "patch", "-n", s->ns, res, name, "--subresource=status", "--type=merge",
           "-p", patch, NULL);
    free(patch);
    free(artifact);
}

static co_source_spec flux_ref(co_source_kind kind, const char *name)
{
    co_source_spec r;
    memset(&r, 0, sizeof(r));
    r.kind = kind;
    r.name = name;
    return r;
}

static const char *git_spec = "{\"url\":\"https://example.com/app.git\",\"interval\":\"1m\"}";

static void test_source_flux__ready_source_is_fetched_and_cached(void **state)
{
    suite *s = *state;
    char *res = resource("gitrepositories", "v1");
    create_object(s, "GitRepository", "app", git_spec);
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_GIT_REPOSITORY, "app");
    co_source_artifact a = {0};
    long retry = 0;
    /* created, but source-controller has not reported yet */
    assert_co_fail_with(CO_EUNAVAILABLE, co_source_resolve(s->s, &r, s->ns, &a, &retry));
    assert_string_equal(co_error_last(), "source not ready");
    assert_int_equal(retry, CO_SOURCE_RETRY_MS);
    set_status(s, res, "app", "False", NULL, NULL, NULL);
    assert_co_fail_with(CO_EUNAVAILABLE, co_source_resolve(s->s, &r, s->ns, &a, &retry));
    assert_int_equal(retry, CO_SOURCE_RETRY_MS);

    served v1 = serve(s, "/gitrepository/team/app/v1.tar.gz", "kind: ConfigMap\n");
    set_status(s, res, "app", "True", v1.url, v1.digest, "main@sha1:1111");
    assert_co_pass(co_source_resolve(s->s, &r, s->ns, &a, &retry));
    assert_int_equal(retry, 0);
    assert_string_equal(a.url, v1.url);
    assert_string_equal(a.digest, v1.digest);
    assert_string_equal(a.revision, "main@sha1:1111");
    assert_int_equal(strlen(a.source_digest), 64);

    co_source_tree *t = NULL;
    int downloaded = -1;
    assert_co_pass(co_source_fetch(s->s, &r, s->ns, &a, &t, &downloaded));
    assert_int_equal(downloaded, 1);
    char *dir = NULL;
    assert_co_pass(co_source_tree_path(t, "app", &dir));
    char *p = co_xasprintf("%s/cm.yaml", dir);
    char *text = co_test_read_file(p, NULL);
    assert_string_equal(text, "kind: ConfigMap\n");
    free(text);
    free(p);
    free(dir);
    co_source_tree_release(t);
    /* the unchanged source is served from the cache */
    co_source_artifact again = {0};
    assert_co_pass(co_source_resolve(s->s, &r, s->ns, &again, &retry));
    assert_string_equal(again.source_digest, a.source_digest);
    assert_co_pass(co_source_fetch(s->s, &r, s->ns, &again, &t, &downloaded));
    assert_int_equal(downloaded, 0);
    co_source_tree_release(t);
    assert_int_equal(test_httpd_hits(s->srv, "/gitrepository/team/app/v1.tar.gz"), 1);
    co_source_artifact_dispose(&again);
    co_source_artifact_dispose(&a);
    served_dispose(&v1);
    free(res);
}

static void test_source_flux__missing_source_is_retriable(void **state)
{
    suite *s = *state;
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_HELM_CHART, "nope");
    co_source_artifact a = {0};
    long retry = 0;
    assert_co_fail_with(CO_ENOTFOUND, co_source_resolve(s->s, &r, s->ns, &a, &retry));
    assert_string_equal(co_error_last(), "helmcharts.source.toolkit.fluxcd.io \"nope\" not found");
    assert_int_equal(retry, CO_SOURCE_RETRY_MS);
}

static void test_source_flux__new_artifact_triggers_and_changes_the_digest(void **state)
{
    suite *s = *state;
    char *res = resource("ocirepositories", "v1");
    create_object(s, "OCIRepository", "oci",
                  "{\"url\":\"oci://registry.example.com/app\",\"interval\":\"5m\"}");
    served v1 = serve(s, "/oci/v1.tgz", "v: 1\n");
    set_status(s, res, "oci", "True", v1.url, v1.digest, "1.0.0@sha256:aa");
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_OCI_REPOSITORY, "oci");
    co_source_artifact a1 = {0}, a2 = {0}, a3 = {0};
    long retry = 0;
    assert_co_pass(co_source_resolve(s->s, &r, s->ns, &a1, &retry));
    /* a Component that is Ready on this artifact */
    char *cjson = co_xasprintf("{\"metadata\":{\"generation\":1},\"status\":{"
                               "\"observedGeneration\":1,\"state\":\"Ready\","
                               "\"lastAttemptedDigest\":\"%s\",\"lastAttemptedRevision\":"
                               "\"1.0.0@sha256:aa\"}}",
                               a1.digest);
    struct json_object *component = json_tokener_parse(cjson);
    struct json_object *obj = NULL;
    assert_co_pass(tkc_get(&s->k, GROUP "/v1", "OCIRepository", s->ns, "oci", &obj));
    assert_false(co_source_should_requeue(obj, component));
    json_object_put(obj);
    /* source-controller stores a new artifact: the Component must be re-queued */
    served v2 = serve(s, "/oci/v2.tgz", "v: 2\n");
    set_status(s, res, "oci", "True", v2.url, v2.digest, "1.1.0@sha256:bb");
    assert_co_pass(tkc_get(&s->k, GROUP "/v1", "OCIRepository", s->ns, "oci", &obj));
    assert_true(co_source_should_requeue(obj, component));
    json_object_put(obj);
    assert_co_pass(co_source_resolve(s->s, &r, s->ns, &a2, &retry));
    assert_string_equal(a2.digest, v2.digest);
    assert_string_not_equal(a2.source_digest, a1.source_digest);
    /* annotating the source (flux reconcile --requested-at) changes the source digest only */
    tkc_ok(&s->k, NULL, "annotate", "-n", s->ns, res, "oci",
           "reconcile.fluxcd.io/requestedAt=2026-01-01T00:00:00Z", NULL);
    assert_co_pass(co_source_resolve(s->s, &r, s->ns, &a3, &retry));
    assert_string_equal(a3.digest, a2.digest);
    assert_string_not_equal(a3.source_digest, a2.source_digest);
    co_source_tree *t = NULL;
    assert_co_pass(co_source_fetch(s->s, &r, s->ns, &a3, &t, NULL));
    char *p = co_xasprintf("%s/app/cm.yaml", co_source_tree_dir(t));
    char *text = co_test_read_file(p, NULL);
    assert_string_equal(text, "v: 2\n");
    free(text);
    free(p);
    co_source_tree_release(t);
    json_object_put(component);
    free(cjson);
    co_source_artifact_dispose(&a1);
    co_source_artifact_dispose(&a2);
    co_source_artifact_dispose(&a3);
    served_dispose(&v1);
    served_dispose(&v2);
    free(res);
}

static int entries_in(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) { // NOLINT(concurrency-mt-unsafe)
        n += e->d_name[0] != '.';
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static void test_source_flux__bad_downloads_fail_clearly_and_leave_nothing(void **state)
{
    suite *s = *state;
    char *res = resource("buckets", "v1");
    create_object(s, "Bucket", "bkt",
                  "{\"bucketName\":\"b\",\"endpoint\":\"minio:9000\",\"interval\":\"1m\"}");
    served good = serve(s, "/bucket/good.tgz", "ok: true\n");
    char *entries = co_xasprintf("%s/cache/artifacts/entries", s->dir);
    char *tmp = co_xasprintf("%s/cache/artifacts/tmp", s->dir);
    int before = entries_in(entries);
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_BUCKET, "bkt");
    co_source_artifact a = {0};
    co_source_tree *t = NULL;
    long retry = 0;
    /* the status claims a digest the served bytes do not have */
    const char *wrong = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    set_status(s, res, "bkt", "True", good.url, wrong, "sha256:1111");
    assert_co_pass(co_source_resolve(s->s, &r, s->ns, &a, &retry));
    assert_co_fail_with(CO_EINVALID, co_source_fetch(s->s, &r, s->ns, &a, &t, NULL));
    assert_contains(co_error_last(), "digest mismatch: expected sha256:1111");
    assert_contains(co_error_last(), good.digest);
    assert_int_equal(entries_in(entries), before);
    assert_int_equal(entries_in(tmp), 0);
    co_source_artifact_dispose(&a);
    /* the download is cut short */
    test_httpd_route_truncated(s->srv, "/bucket/cut.tgz", good.data, good.len, good.len / 3);
    char *cut = co_xasprintf("%s/bucket/cut.tgz", test_httpd_url(s->srv));
    set_status(s, res, "bkt", "True", cut, good.digest, "sha256:2222");
    assert_co_pass(co_source_resolve(s->s, &r, s->ns, &a, &retry));
    assert_co_fail_with(CO_EUNAVAILABLE, co_source_fetch(s->s, &r, s->ns, &a, &t, NULL));
    assert_contains(co_error_last(), "truncated");
    assert_int_equal(entries_in(entries), before);
    assert_int_equal(entries_in(tmp), 0);
    co_source_artifact_dispose(&a);
    /* corrected: fetched */
    set_status(s, res, "bkt", "True", good.url, good.digest, "sha256:3333");
    assert_co_pass(co_source_resolve(s->s, &r, s->ns, &a, &retry));
    assert_co_pass(co_source_fetch(s->s, &r, s->ns, &a, &t, NULL));
    co_source_tree_release(t);
    assert_int_equal(entries_in(entries), before + 2); /* the tree and its .meta */
    co_source_artifact_dispose(&a);
    free(cut);
    free(entries);
    free(tmp);
    served_dispose(&good);
    free(res);
}

static void test_source_flux__helm_chart_cross_namespace(void **state)
{
    suite *s = *state;
    char *res = resource("helmcharts", "v1");
    create_object(s, "HelmChart", "chart",
                  "{\"chart\":\"app\",\"interval\":\"1m\",\"sourceRef\":{\"kind\":"
                  "\"HelmRepository\",\"name\":\"repo\"}}");
    served v = serve(s, "/helmchart/app-1.0.0.tgz", "chart: 1\n");
    set_status(s, res, "chart", "True", v.url, v.digest, "1.0.0");
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_HELM_CHART, "chart");
    r.ns = s->ns; /* the Component lives elsewhere */
    co_source_artifact a = {0};
    long retry = 0;
    assert_co_pass(co_source_resolve(s->s, &r, "another-namespace", &a, &retry));
    assert_string_equal(a.revision, "1.0.0");
    co_source_artifact_dispose(&a);
    served_dispose(&v);
    free(res);
}

/* ---- a private control plane without the CRDs -------------------------------------------- */

static void test_source_flux__works_without_flux_crds(void **state)
{
    suite *s = *state;
    char *cpdir = co_xasprintf("%s/private-cp", s->dir);
    char *cp = co_xasprintf("%s/tests/env/controlplane.sh", CO_SOURCE_ROOT);
    char *cmd = co_xasprintf("'%s' start '%s' >'%s.log' 2>&1", cp, cpdir, cpdir);
    if (system(cmd) != 0) { // NOLINT(concurrency-mt-unsafe): test set-up
        char *log = co_xasprintf("%s.log", cpdir);
        char *text = co_test_read_file(log, NULL);
        fail_msg("private control plane did not start: %s", text ? text : "");
    }
    char *kc = co_xasprintf("%s/admin.kubeconfig", cpdir);
    tkc k;
    tkc_init(&k, kc, cpdir);
    co_sources *src = NULL;
    co_source_config cfg = {0};
    char *cache = co_xasprintf("%s/cache2", s->dir);
    cfg.cache_dir = cache;
    cfg.get = tkc_get;
    cfg.get_ctx = &k;
    assert_co_pass(co_sources_new(&src, &cfg));
    co_source_artifact a = {0};
    long retry = 0;
    static const struct {
        co_source_kind kind;
        const char *name;
    } kinds[] = {{CO_SOURCE_FLUX_GIT_REPOSITORY, "GitRepository"},
                 {CO_SOURCE_FLUX_OCI_REPOSITORY, "OCIRepository"},
                 {CO_SOURCE_FLUX_BUCKET, "Bucket"},
                 {CO_SOURCE_FLUX_HELM_CHART, "HelmChart"}};
    for (size_t i = 0; i < CO_ARRAY_SIZE(kinds); i++) {
        co_source_spec r = flux_ref(kinds[i].kind, "x");
        assert_co_fail_with(CO_ENOMATCH, co_source_resolve(src, &r, "default", &a, &retry));
        char *want = co_xasprintf("no matches for kind \"%s\" in version \"%s/v1\" (are the Flux "
                                  "source CRDs installed?)",
                                  kinds[i].name, GROUP);
        assert_string_equal(co_error_last(), want);
        assert_int_equal(retry, CO_SOURCE_RETRY_MS);
        free(want);
    }
    /* other sources keep working on such a cluster */
    served v = serve(s, "/plain.tgz", "plain: 1\n");
    char *etag = co_xasprintf("ETag: %s", v.digest);
    test_httpd_route(s->srv, "/plain.tgz", 200, v.data, v.len, etag);
    co_source_spec http;
    memset(&http, 0, sizeof(http));
    http.kind = CO_SOURCE_HTTP_REPOSITORY;
    http.url = v.url;
    assert_co_pass(co_source_resolve(src, &http, "default", &a, &retry));
    co_source_tree *t = NULL;
    assert_co_pass(co_source_fetch(src, &http, "default", &a, &t, NULL));
    co_source_tree_release(t);
    co_source_artifact_dispose(&a);

    /* a cluster that serves only v1beta2 (an older source-controller) is read through it */
    struct json_object *crd = ctl_test_flux_crd("ocirepositories");
    struct json_object *versions = co_json_get(crd, "spec", "versions", NULL);
    assert_int_equal(json_object_array_length(versions), 1);
    json_object_object_add(json_object_array_get_idx(versions, 0), "name",
                           json_object_new_string("v1beta2"));
    const char *beta = json_object_to_json_string(crd);
    tkc_ok(&k, beta, "create", "--validate=false", "-f", "-", NULL);
    tkc_ok(&k, NULL, "wait", "--for=condition=Established", "--timeout=120s",
           "crd/ocirepositories." GROUP, NULL);
    char *obj = co_xasprintf("{\"apiVersion\":\"%s/v1beta2\",\"kind\":\"OCIRepository\","
                             "\"metadata\":{\"name\":\"old\",\"namespace\":\"default\"},"
                             "\"spec\":{\"url\":\"oci://r/app\",\"interval\":\"1m\"}}",
                             GROUP);
    tkc_ok(&k, obj, "create", "-f", "-", NULL);
    char *patch = co_xasprintf("{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
                               "\"True\",\"reason\":\"Succeeded\",\"message\":\"m\","
                               "\"observedGeneration\":1,\"lastTransitionTime\":"
                               "\"2026-01-01T00:00:00Z\"}],\"artifact\":{\"url\":\"%s\","
                               "\"digest\":\"%s\",\"revision\":\"v1\",\"path\":\"p\","
                               "\"lastUpdateTime\":\"2026-01-01T00:00:00Z\"}}}",
                               v.url, v.digest);
    tkc_ok(&k, NULL, "patch", "-n", "default", "ocirepositories.v1beta2." GROUP, "old",
           "--subresource=status", "--type=merge", "-p", patch, NULL);
    co_source_spec old = flux_ref(CO_SOURCE_FLUX_OCI_REPOSITORY, "old");
    assert_co_pass(co_source_resolve(src, &old, "default", &a, &retry));
    assert_string_equal(a.digest, v.digest);
    assert_co_pass(co_source_fetch(src, &old, "default", &a, &t, NULL));
    co_source_tree_release(t);
    co_source_artifact_dispose(&a);

    co_sources_free(src);
    tkc_dispose(&k);
    free(cmd);
    cmd = co_xasprintf("'%s' stop '%s' >/dev/null 2>&1", cp, cpdir);
    (void)!system(cmd); // NOLINT(concurrency-mt-unsafe)
    free(patch);
    free(obj);
    json_object_put(crd);
    free(etag);
    served_dispose(&v);
    free(cache);
    free(kc);
    free(cmd);
    free(cp);
    free(cpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_source_flux__ready_source_is_fetched_and_cached),
        cmocka_unit_test(test_source_flux__missing_source_is_retriable),
        cmocka_unit_test(test_source_flux__new_artifact_triggers_and_changes_the_digest),
        cmocka_unit_test(test_source_flux__bad_downloads_fail_clearly_and_leave_nothing),
        cmocka_unit_test(test_source_flux__helm_chart_cross_namespace),
        cmocka_unit_test(test_source_flux__works_without_flux_crds),
    };
    return cmocka_run_group_tests_name("source_flux", tests, suite_setup, suite_teardown);
}
