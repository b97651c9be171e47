/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The controller with its real source binding (ctl_sources) against the real kube-apiserver with
 * the Flux source CRDs installed (ctl_test_install_flux_crds(): the repository's own, or the
 * published ones in the conformance lane): source objects are created by the test, their status is
 * written the way source-controller would, and artifacts are served by a loopback HTTP server.
 * Shown here (docs/behaviour.md, "Source-change triggers", "Pinning" and "Sticky sources"): a new
 * artifact re-queues and re-renders every Component referencing the source; pinning by
 * spec.revision / spec.digest; sticky mode; HTTP sources leave the poller when their Component
 * goes or turns to a Flux source. Objects are applied by the minimal test applier.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/util/time.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_sources.h"
#include "controller/ctl_state.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_archive_builder.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_kubectl.h"
#include "tests/support/test_support.h"

#define WAIT_MS           120000L
#define GROUP             "source.toolkit.fluxcd.io"
#define STICKY_TIMEOUT_NS (40LL * 1000 * 1000 * 1000)
#define HTTP_POLL_MS      200L /* short, so that a few polling rounds pass quickly */
#define NPOLLED           100

static co_kube_client *admin;
static char *ns;
static char *dir;
static tkc k;
static test_httpd *srv;
static ctl_sources *sources;
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;
static ctl_manager *mgr;
static int nserved;

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    dir = co_test_tmpdir();
    tkc_init(&k, co_test_env("CO_TEST_KUBECONFIG"), dir);
    ctl_test_install_flux_crds(admin);
    ns = co_test_kube_namespace(admin, "ctl-src-");
    srv = test_httpd_start();
    char *cache = co_xasprintf("%s/cache", dir);
    assert_co_pass(ctl_sources_new(&sources, cache));
    ctl_sources_set_http_interval(sources, HTTP_POLL_MS);
    free(cache);
    src_ops = ctl_sources_ops(sources);
    app_ops = ctl_test_apply_ops();

    /* the Flux kinds are served before the manager starts, so it watches them */
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.workers = 3;
    const char *nss[] = {ns};
    o.namespaces = nss;
    o.nnamespaces = 1;
    o.source = &src_ops;
    o.apply = &app_ops;
    assert_co_pass(ctl_manager_new(&mgr, &o));
    assert_co_pass(ctl_sources_attach(sources, mgr));
    assert_co_pass(ctl_manager_start(mgr));
    /* no leader election here: this instance polls, as the daemon's leader does */
    ctl_sources_set_leader(sources, 1);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_manager_free(mgr);
    ctl_sources_free(sources);
    test_httpd_stop(srv);
    tkc_run(&k, NULL, NULL, NULL, "delete", "namespace", ns, "--wait=false", NULL);
    tkc_dispose(&k);
    co_kube_client_free(admin);
    co_test_rmtree(dir);
    free(dir);
    free(ns);
    curl_global_cleanup();
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

/* An artifact: app/cm.yaml is ConfigMap @p cm with data.v = @p value, never ready when
 * @p never_ready. */
typedef struct served {
    char *url;
    char *digest;
} served;

static served serve(const char *cm, const char *value, bool never_ready)
{
    char *text = co_xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                              "\"name\":\"%s\",\"annotations\":{\"test.co/never-ready\":\"%s\"}},"
                              "\"data\":{\"v\":\"%s\"}}\n",
                              cm, never_ready ? "true" : "false", value);
    tab_entry e[] = {{TAB_FILE, 0, "app/cm.yaml", text, 0}};
    size_t len = 0;
    void *data = tab_build(TAB_TAR_GZ, e, 1, &len);
    char path[64];
    snprintf(path, sizeof(path), "/artifact-%d.tar.gz", ++nserved);
    test_httpd_route(srv, path, 200, data, len, NULL);
    served a;
    a.url = co_xasprintf("%s%s", test_httpd_url(srv), path);
    a.digest = sha256_digest(data, len);
    free(data);
    free(text);
    return a;
}

static void served_dispose(served *a)
{
    free(a->url);
    free(a->digest);
}

static void create_source(const char *kind, const char *name, const char *spec)
{
    char *yaml = co_xasprintf("{\"apiVersion\":\"%s/v1\",\"kind\":\"%s\",\"metadata\":{"
                              "\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":%s}",
                              GROUP, kind, name, ns, spec);
    tkc_ok(&k, yaml, "create", "-f", "-", NULL);
    free(yaml);
}

static void create_repo(const char *name)
{
    create_source("GitRepository", name,
                  "{\"url\":\"https://example.com/app.git\",\"interval\":\"1m\"}");
}

/* Writes the status source-controller would: Ready for the generation, artifact @p a. */
static void
publish_source(const char *plural, const char *name, const served *a, const char *revision)
{
    char *out = NULL;
    char *res = co_xasprintf("%s.v1.%s", plural, GROUP);
    tkc_run(&k, NULL, &out, NULL, "get", "-n", ns, res, name, "-o",
            "jsonpath={.metadata.generation}", NULL);
    long long gen = strtoll(out ? out : "0", NULL, 10);
    free(out);
    char *patch = co_xasprintf(
        "{\"status\":{\"observedGeneration\":%lld,\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"True\",\"reason\":\"Succeeded\",\"message\":\"stored artifact\","
        "\"observedGeneration\":%lld,\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}],"
        "\"artifact\":{\"url\":\"%s\",\"digest\":\"%s\",\"revision\":\"%s\",\"path\":\"x\","
        "\"lastUpdateTime\":\"2026-01-01T00:00:00Z\"}}}",
        gen, gen, a->url, a->digest, revision);
    tkc_ok(&k, NULL, "patch", "-n", ns, res, name, "--subresource=status", "--type=merge", "-p",
           patch, NULL);
    free(patch);
    free(res);
}

static void publish(const char *repo, const served *a, const char *revision)
{
    publish_source("gitrepositories", repo, a, revision);
}

static const char *status_str(struct json_object *obj, const char *key)
{
    struct json_object *v = co_json_get(obj, "status", key, NULL);
    return v ? json_object_get_string(v) : "";
}

static const char *artifact_str(struct json_object *obj, const char *key)
{
    struct json_object *v = co_json_get(obj, "status", "sourceRef", "artifact", key, NULL);
    return v ? json_object_get_string(v) : "";
}

/* data.v of ConfigMap @p name ("" when absent); a new string. */
static char *cm_value(const char *name)
{
    co_kube_ref ref = {"v1", "ConfigMap", ns, name};
    struct json_object *obj = NULL;
    if (co_kube_get(&obj, admin, &ref, NULL) < 0) {
        return co_xstrdup("");
    }
    struct json_object *v = co_json_get(obj, "data", "v", NULL);
    char *s = co_xstrdup(v ? json_object_get_string(v) : "");
    json_object_put(obj);
    return s;
}

/* Waits until the Component is Ready with lastAppliedRevision @p rev. */
static void wait_applied(const char *name, const char *rev)
{
    char last[512] = "";
    for (long waited = 0; waited < WAIT_MS; waited += 100) {
        struct json_object *c = ctl_test_get_component(admin, ns, name);
        bool ok = c && ctl_state_component_ready(c) &&
                  strcmp(status_str(c, "lastAppliedRevision"), rev) == 0;
        snprintf(
            last, sizeof(last), "%s/%s applied %s", ctl_state_get(co_json_get(c, "status", NULL)),
            ctl_state_reason(co_json_get(c, "status", NULL)), status_str(c, "lastAppliedRevision"));
        json_object_put(c);
        if (ok) {
            return;
        }
        usleep(100 * 1000);
    }
    fail_msg("%s/%s: not Ready at %s in time (last: %s)", ns, name, rev, last);
}

static void delete_component(const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    ctl_test_wait_gone(admin, ns, name, WAIT_MS);
}

static void patch_component(const char *name, const char *patch_text)
{
    struct json_object *patch = co_test_json("%s", patch_text);
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
}

static const char *condition_message(struct json_object *c)
{
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    struct json_object *m =
        conds ? co_json_get(json_object_array_get_idx(conds, 0), "message", NULL) : NULL;
    return m ? json_object_get_string(m) : "";
}

static void test_ctl_sources__new_artifact_requeues_every_referencing_component(void **state)
{
    (void)state;
    create_repo("shared");
    served v1 = serve("rq-one", "v1", false);
    publish("shared", &v1, "main@sha1:1111");
    /* the default requeue interval (10 minutes) rules out a periodic pass doing the work */
    ctl_test_create_component(admin, ns, "rq-a",
                              "{\"sourceRef\":{\"fluxGitRepository\":{\"name\":\"shared\"}},"
                              "\"path\":\"app\",\"namespace\":\"%s\"}",
                              ns);
    ctl_test_create_component(admin, ns, "rq-b",
                              "{\"sourceRef\":{\"fluxGitRepository\":{\"name\":\"shared\","
                              "\"namespace\":\"%s\"}},\"path\":\"app\"}",
                              ns);
    wait_applied("rq-a", "main@sha1:1111");
    wait_applied("rq-b", "main@sha1:1111");
    char *v = cm_value("rq-one");
    assert_string_equal(v, "v1");
    free(v);
    struct json_object *c = ctl_test_get_component(admin, ns, "rq-a");
    assert_string_equal(status_str(c, "lastAttemptedDigest"), v1.digest);
    int64_t rev1 = 0;
    assert_co_pass(co_json_get_int64(&rev1, c, "status", "revision", NULL));
    json_object_put(c);

    /* source-controller publishes a new artifact: both are re-rendered from it */
    served v2 = serve("rq-one", "v2", false);
    publish("shared", &v2, "main@sha1:2222");
    wait_applied("rq-a", "main@sha1:2222");
    wait_applied("rq-b", "main@sha1:2222");
    v = cm_value("rq-one");
    assert_string_equal(v, "v2");
    free(v);
    c = ctl_test_get_component(admin, ns, "rq-b");
    assert_string_equal(status_str(c, "lastAttemptedDigest"), v2.digest);
    assert_string_equal(artifact_str(c, "url"), v2.url);
    int64_t rev2 = 0;
    assert_co_pass(co_json_get_int64(&rev2, c, "status", "revision", NULL));
    assert_int_equal(rev2, rev1 + 1);
    json_object_put(c);

    delete_component("rq-a");
    delete_component("rq-b");
    served_dispose(&v1);
    served_dispose(&v2);
}

/* The other three Flux kinds re-queue their Components the same way. */
static void test_ctl_sources__every_flux_kind_requeues_on_a_new_artifact(void **state)
{
    (void)state;
    static const char *const kinds[] = {"OCIRepository", "Bucket", "HelmChart"};
    static const char *const plurals[] = {"ocirepositories", "buckets", "helmcharts"};
    static const char *const fields[] = {"fluxOciRepository", "fluxBucket", "fluxHelmChart"};
    static const char *const specs[] = {
        "{\"url\":\"oci://registry.example.com/app\",\"interval\":\"5m\"}",
        "{\"bucketName\":\"b\",\"endpoint\":\"minio:9000\",\"interval\":\"1m\"}",
        "{\"chart\":\"app\",\"interval\":\"1m\",\"sourceRef\":{\"kind\":\"HelmRepository\","
        "\"name\":\"repo\"}}"};
    static const char *const cms[] = {"kind-oci", "kind-bucket", "kind-chart"};
    served v1[3], v2[3];
    for (size_t i = 0; i < 3; i++) {
        create_source(kinds[i], "src", specs[i]);
        v1[i] = serve(cms[i], "v1", false);
        publish_source(plurals[i], "src", &v1[i], "1.0.0");
        ctl_test_create_component(admin, ns, cms[i],
                                  "{\"sourceRef\":{\"%s\":{\"name\":\"src\"}},\"path\":\"app\"}",
                                  fields[i]);
    }
    for (size_t i = 0; i < 3; i++) {
        wait_applied(cms[i], "1.0.0");
    }
    for (size_t i = 0; i < 3; i++) {
        v2[i] = serve(cms[i], "v2", false);
        publish_source(plurals[i], "src", &v2[i], "2.0.0");
    }
    for (size_t i = 0; i < 3; i++) {
        wait_applied(cms[i], "2.0.0");
        char *v = cm_value(cms[i]);
        assert_string_equal(v, "v2");
        free(v);
        delete_component(cms[i]);
        served_dispose(&v1[i]);
        served_dispose(&v2[i]);
    }
}

static void test_ctl_sources__pinned_component_moves_only_with_its_pin(void **state)
{
    (void)state;
    create_repo("pinned");
    served v1 = serve("pin-cm", "v1", false);
    served v2 = serve("pin-cm", "v2", false);
    served v3 = serve("pin-cm", "v3", false);
    publish("pinned", &v1, "main@sha1:aaaa");
    /* pinned to a revision the source does not offer yet: Pending, nothing applied */
    ctl_test_create_component(admin, ns, "pin",
                              "{\"sourceRef\":{\"fluxGitRepository\":{\"name\":\"pinned\"}},"
                              "\"path\":\"app\",\"revision\":\"main@sha1:bbbb\"}");
    ctl_test_wait_state(admin, ns, "pin", "Pending", "Retrying", WAIT_MS);
    struct json_object *c = ctl_test_get_component(admin, ns, "pin");
    assert_contains(condition_message(c), "source revision (main@sha1:aaaa) does not match "
                                          "specified revision (main@sha1:bbbb)");
    json_object_put(c);
    char *v = cm_value("pin-cm");
    assert_string_equal(v, "");
    free(v);

    /* the source reaches the pin: applied */
    publish("pinned", &v2, "main@sha1:bbbb");
    wait_applied("pin", "main@sha1:bbbb");
    v = cm_value("pin-cm");
    assert_string_equal(v, "v2");
    free(v);

    /* the source moves on: the Component does not follow */
    publish("pinned", &v3, "main@sha1:cccc");
    ctl_test_wait_state(admin, ns, "pin", "Pending", "Retrying", WAIT_MS);
    c = ctl_test_get_component(admin, ns, "pin");
    assert_contains(condition_message(c), "source revision (main@sha1:cccc) does not match");
    assert_string_equal(status_str(c, "lastAppliedRevision"), "main@sha1:bbbb");
    json_object_put(c);
    v = cm_value("pin-cm");
    assert_string_equal(v, "v2");
    free(v);

    /* the pin moves: so does the Component; then a digest pin that matches keeps it there */
    patch_component("pin", "{\"spec\":{\"revision\":\"main@sha1:cccc\"}}");
    wait_applied("pin", "main@sha1:cccc");
    v = cm_value("pin-cm");
    assert_string_equal(v, "v3");
    free(v);

    /* a digest pin behaves the same */
    char *patch = co_xasprintf("{\"spec\":{\"revision\":null,\"digest\":\"%s\"}}", v1.digest);
    patch_component("pin", patch);
    free(patch);
    ctl_test_wait_state(admin, ns, "pin", "Pending", "Retrying", WAIT_MS);
    c = ctl_test_get_component(admin, ns, "pin");
    assert_contains(condition_message(c), "does not match specified digest");
    json_object_put(c);
    publish("pinned", &v1, "main@sha1:aaaa");
    wait_applied("pin", "main@sha1:aaaa");
    v = cm_value("pin-cm");
    assert_string_equal(v, "v1");
    free(v);

    delete_component("pin");
    served_dispose(&v1);
    served_dispose(&v2);
    served_dispose(&v3);
}

/* Whether the Component is still inside its processing cycle (docs/behaviour.md, "Sticky
 * sources"): every pass up to now was. */
static bool within_cycle(struct json_object *c, int64_t timeout_ns)
{
    int64_t since = 0;
    return co_time_parse(&since, status_str(c, "processingSince")) == 0 &&
           co_time_now() - since < timeout_ns;
}

static void test_ctl_sources__sticky_keeps_its_artifact_until_the_cycle_ends(void **state)
{
    (void)state;
    create_repo("sticky");
    create_repo("unsticky");
    served v1 = serve("st-cm", "v1", true);
    served v1x = serve("stx-cm", "v1", true);
    publish("sticky", &v1, "main@sha1:s111");
    publish("unsticky", &v1x, "main@sha1:s111");
    /* both never become ready on v1; "st" is sticky, "stx" is not. The cycle (timeout) is
     * long enough for several passes on a slow machine. */
    ctl_test_create_component(admin, ns, "st",
                              "{\"sourceRef\":{\"fluxGitRepository\":{\"name\":\"sticky\"}},"
                              "\"path\":\"app\",\"sticky\":true,\"timeout\":\"40s\"}");
    ctl_test_create_component(admin, ns, "stx",
                              "{\"sourceRef\":{\"fluxGitRepository\":{\"name\":\"unsticky\"}},"
                              "\"path\":\"app\",\"timeout\":\"40s\"}");
    ctl_test_wait_state(admin, ns, "st", "Processing", "Processing", WAIT_MS);
    ctl_test_wait_state(admin, ns, "stx", "Processing", "Processing", WAIT_MS);
    struct json_object *c = ctl_test_get_component(admin, ns, "st");
    char *since = co_xstrdup(status_str(c, "processingSince"));
    json_object_put(c);

    /* v2 would be ready at once */
    served v2 = serve("st-cm", "v2", false);
    served v2x = serve("stx-cm", "v2", false);
    publish("sticky", &v2, "main@sha1:s222");
    publish("unsticky", &v2x, "main@sha1:s222");
    /* the non-sticky one restarts on v2 and gets Ready */
    wait_applied("stx", "main@sha1:s222");
    char *v = cm_value("stx-cm");
    assert_string_equal(v, "v2");
    free(v);
    /* the sticky one keeps v1 for every pass inside its cycle (a pass that changes nothing
     * writes no status: passes are counted by the manager) */
    ctl_manager_stats st0;
    ctl_manager_stats_get(mgr, &st0);
    int inside = 0;
    for (int i = 0; i < 600; i++) {
        c = ctl_test_get_component(admin, ns, "st");
        ctl_manager_stats st1;
        ctl_manager_stats_get(mgr, &st1);
        if (st1.reconciles != st0.reconciles &&
            strcmp(status_str(c, "processingSince"), since) == 0 &&
            within_cycle(c, STICKY_TIMEOUT_NS)) {
            assert_string_equal(status_str(c, "lastAttemptedRevision"), "main@sha1:s111");
            assert_string_equal(artifact_str(c, "revision"), "main@sha1:s111");
            char *now = cm_value("st-cm");
            assert_string_equal(now, "v1");
            free(now);
            inside++;
        }
        st0 = st1;
        bool done = !within_cycle(c, STICKY_TIMEOUT_NS) || inside >= 3;
        json_object_put(c);
        if (done) {
            break;
        }
        usleep(200 * 1000);
    }
    assert_true(inside >= 1);
    v = cm_value("st-cm");
    assert_string_equal(v, "v1");
    free(v);

    /* once the cycle has timed out, the source is read again: it moves to v2 and gets Ready */
    wait_applied("st", "main@sha1:s222");
    v = cm_value("st-cm");
    assert_string_equal(v, "v2");
    free(v);

    free(since);
    delete_component("st");
    delete_component("stx");
    served_dispose(&v1);
    served_dispose(&v1x);
    served_dispose(&v2);
    served_dispose(&v2x);
}

/* ---- the HTTP poller ------------------------------------------------------------------- */

/* An artifact with nothing to deploy (the Components get Ready at once), served at @p path with
 * its digest as ETag, the header an httpRepository source reads by default. */
static char *serve_http(const char *path)
{
    tab_entry e[] = {{TAB_FILE, 0, "app/notes.txt", "nothing to deploy\n", 0}};
    size_t len = 0;
    void *data = tab_build(TAB_TAR_GZ, e, 1, &len);
    char *digest = sha256_digest(data, len);
    char *etag = co_xasprintf("ETag: %s", digest);
    test_httpd_route(srv, path, 200, data, len, etag);
    free(etag);
    free(digest);
    free(data);
    return co_xasprintf("%s%s", test_httpd_url(srv), path);
}

typedef struct polled_wait {
    size_t want;
} polled_wait;

static int polled_is(void *payload)
{
    const polled_wait *w = payload;
    return ctl_sources_polled(sources) == w->want;
}

static void wait_polled(size_t want)
{
    polled_wait w = {want};
    if (!co_test_poll(polled_is, &w, WAIT_MS)) {
        fail_msg("the poller follows %zu sources, not %zu", ctl_sources_polled(sources), want);
    }
}

typedef struct hits_wait {
    const char *path;
    int above;
} hits_wait;

static int hits_above(void *payload)
{
    const hits_wait *w = payload;
    return test_httpd_hits_method(srv, w->path, "HEAD") > w->above;
}

/* The HEAD requests of @p path stay where they are over several polling rounds. */
static void assert_heads_stay_flat(const char *path)
{
    /* a round that began before the last release may still be under way */
    usleep((useconds_t)(5 * HTTP_POLL_MS * 1000));
    int settled = test_httpd_hits_method(srv, path, "HEAD");
    usleep((useconds_t)(10 * HTTP_POLL_MS * 1000));
    assert_int_equal(test_httpd_hits_method(srv, path, "HEAD"), settled);
}

static void test_ctl_sources__deleted_components_are_no_longer_polled(void **state)
{
    (void)state;
    const char *path = "/polled/app.tar.gz";
    char *url = serve_http(path);
    assert_int_equal(ctl_sources_polled(sources), 0);
    for (int i = 0; i < NPOLLED; i++) {
        char name[32];
        snprintf(name, sizeof(name), "polled-%03d", i);
        ctl_test_create_component(
            admin, ns, name,
            "{\"sourceRef\":{\"httpRepository\":{\"url\":\"%s\"}},\"path\":\"app\"}", url);
    }
    wait_polled(NPOLLED);
    /* the poller does poll them: a full round of HEADs beyond what the reconciles sent */
    hits_wait hw = {path, test_httpd_hits_method(srv, path, "HEAD") + NPOLLED};
    assert_true(co_test_poll(hits_above, &hw, WAIT_MS));

    for (int i = 0; i < NPOLLED; i++) {
        char name[32];
        snprintf(name, sizeof(name), "polled-%03d", i);
        co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
        assert_co_pass(co_kube_delete(NULL, admin, &ref, NULL));
    }
    for (int i = 0; i < NPOLLED; i++) {
        char name[32];
        snprintf(name, sizeof(name), "polled-%03d", i);
        ctl_test_wait_gone(admin, ns, name, WAIT_MS);
    }
    wait_polled(0);
    assert_heads_stay_flat(path);
    free(url);
}

static void test_ctl_sources__component_switched_to_flux_is_no_longer_polled(void **state)
{
    (void)state;
    const char *path = "/switched/app.tar.gz";
    char *url = serve_http(path);
    ctl_test_create_component(
        admin, ns, "switched",
        "{\"sourceRef\":{\"httpRepository\":{\"url\":\"%s\"}},\"path\":\"app\"}", url);
    ctl_test_wait_state(admin, ns, "switched", "Ready", NULL, WAIT_MS);
    wait_polled(1);

    create_repo("switched-to");
    served v1 = serve("switched-cm", "v1", false);
    publish("switched-to", &v1, "main@sha1:5555");
    patch_component("switched", "{\"spec\":{\"sourceRef\":{\"httpRepository\":null,"
                                "\"fluxGitRepository\":{\"name\":\"switched-to\"}}}}");
    wait_applied("switched", "main@sha1:5555");
    wait_polled(0);
    assert_heads_stay_flat(path);

    delete_component("switched");
    served_dispose(&v1);
    free(url);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_sources__new_artifact_requeues_every_referencing_component),
        cmocka_unit_test(test_ctl_sources__every_flux_kind_requeues_on_a_new_artifact),
        cmocka_unit_test(test_ctl_sources__pinned_component_moves_only_with_its_pin),
        cmocka_unit_test(test_ctl_sources__sticky_keeps_its_artifact_until_the_cycle_ends),
        cmocka_unit_test(test_ctl_sources__deleted_components_are_no_longer_polled),
        cmocka_unit_test(test_ctl_sources__component_switched_to_flux_is_no_longer_polled),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
