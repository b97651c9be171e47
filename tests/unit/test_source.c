/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the source layer with a fake cluster: sourceRef parsing, the Flux readiness
 * and artifact rules with their retriable errors, the v1beta2 fallback, source digests (checked
 * against Go's encoding/json by a differential oracle), pins, re-queue filters, fetching through
 * the cache from a loopback HTTP server (verification, truncation, nothing half-extracted),
 * spec.path, HTTP and git sources, and the poller.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/evp.h>

#include "co/util/buf.h"
#include "co/api/component.h"
#include "co/json/json.h"
#include "co/source/source.h"
#include "tests/support/test_archive_builder.h"
#include "tests/support/test_git_repo.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_support.h"

/* ---- a fake cluster ---------------------------------------------------------------------- */

typedef struct fake_cluster {
    struct json_object *objects; /* "apiVersion|kind|ns|name" -> object */
    int serve_v1;                /* Flux kinds served in v1 */
    int serve_v1beta2;           /* ... and in v1beta2 */
    int fail_with;               /* non-zero: every get fails with this code */
    int gets;
} fake_cluster;

static int fake_get(void *ctx,
                    const char *api_version,
                    const char *kind,
                    const char *ns,
                    const char *name,
                    struct json_object **out)
{
    fake_cluster *c = ctx;
    c->gets++;
    if (c->fail_with) {
        return co_error_set(c->fail_with, "the API server said no");
    }
    if (strncmp(api_version, "source.toolkit.fluxcd.io/", 25) == 0) {
        int v1 = strcmp(api_version + 25, "v1") == 0;
        if ((v1 && !c->serve_v1) || (!v1 && !c->serve_v1beta2)) {
            return co_error_set(CO_ENOMATCH, "no match");
        }
    }
    char key[512];
    snprintf(key, sizeof(key), "%s|%s|%s|%s", api_version, kind, ns, name);
    struct json_object *o = NULL;
    if (!json_object_object_get_ex(c->objects, key, &o)) {
        return co_error_set(CO_ENOTFOUND, "not found");
    }
    *out = json_object_get(o);
    return 0;
}

static void fake_put(fake_cluster *c,
                     const char *api_version,
                     const char *kind,
                     const char *ns,
                     const char *name,
                     const char *json)
{
    char key[512];
    snprintf(key, sizeof(key), "%s|%s|%s|%s", api_version, kind, ns, name);
    struct json_object *o = json_tokener_parse(json);
    assert_non_null(o);
    json_object_object_add(c->objects, key, o);
}

typedef struct fixture {
    char *dir;
    fake_cluster cluster;
    co_sources *s;
    test_httpd *srv;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->dir = co_test_tmpdir();
    f->cluster.objects = json_object_new_object();
    f->cluster.serve_v1 = 1;
    f->srv = test_httpd_start();
    co_source_config cfg = {0};
    char *cache = co_xasprintf("%s/cache", f->dir);
    cfg.cache_dir = cache;
    cfg.fetch.backoff_ms = 10;
    cfg.fetch.retries = 1;
    cfg.git.test_only_file_urls = 1; /* the git tests use local repositories */
    cfg.get = fake_get;
    cfg.get_ctx = &f->cluster;
    assert_co_pass(co_sources_new(&f->s, &cfg));
    free(cache);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    co_sources_free(f->s);
    test_httpd_stop(f->srv);
    json_object_put(f->cluster.objects);
    co_test_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static co_source_spec parse_ok(struct json_object **holder, const char *json)
{
    *holder = json_tokener_parse(json);
    assert_non_null(*holder);
    co_source_spec r;
    assert_co_pass(co_source_spec_parse(&r, *holder));
    return r;
}

static void parse_fails(const char *json, const char *needle)
{
    struct json_object *o = json_tokener_parse(json);
    assert_non_null(o);
    co_source_spec r;
    assert_co_fail_with(CO_EINVALID, co_source_spec_parse(&r, o));
    assert_contains(co_error_last(), needle);
    json_object_put(o);
}

/* ---- parsing ----------------------------------------------------------------------------- */

static void test_source__parses_every_variant(void **state)
{
    (void)state;
    struct json_object *h = NULL;
    co_source_spec r = parse_ok(&h, "{\"fluxGitRepository\":{\"name\":\"app\"}}");
    assert_int_equal(r.kind, CO_SOURCE_FLUX_GIT_REPOSITORY);
    assert_string_equal(r.name, "app");
    assert_null(r.ns);
    char *key = co_source_index_key(&r, "team");
    assert_string_equal(key, "GitRepository/team/app");
    free(key);
    json_object_put(h);
    r = parse_ok(&h, "{\"fluxHelmChart\":{\"namespace\":\"flux\",\"name\":\"c\"}}");
    assert_int_equal(r.kind, CO_SOURCE_FLUX_HELM_CHART);
    key = co_source_index_key(&r, "team");
    assert_string_equal(key, "HelmChart/flux/c");
    free(key);
    json_object_put(h);
    r = parse_ok(&h, "{\"fluxOciRepository\":{\"name\":\"o\"}}");
    assert_int_equal(r.kind, CO_SOURCE_FLUX_OCI_REPOSITORY);
    json_object_put(h);
    r = parse_ok(&h, "{\"fluxBucket\":{\"name\":\"b\"}}");
    assert_string_equal(co_source_flux_kind(r.kind), "Bucket");
    json_object_put(h);
    r = parse_ok(&h, "{\"httpRepository\":{\"url\":\"https://x/a.tgz\",\"digestHeader\":"
                     "\"X-Digest\"}}");
    assert_int_equal(r.kind, CO_SOURCE_HTTP_REPOSITORY);
    assert_string_equal(r.digest_header, "X-Digest");
    assert_null(r.revision_header);
    assert_null(co_source_index_key(&r, "team"));
    json_object_put(h);
    r = parse_ok(&h, "{\"git\":{\"url\":\"https://example.com/r.git\",\"ref\":{\"semver\":"
                     "\">=1.0\"},\"secretRef\":{\"name\":\"creds\"},\"interval\":\"1m30s\"}}");
    assert_int_equal(r.kind, CO_SOURCE_GIT);
    assert_string_equal(r.git.semver, ">=1.0");
    assert_string_equal(r.secret_name, "creds");
    assert_int_equal(r.interval_ms, 90000);
    json_object_put(h);
    r = parse_ok(&h, "{\"git\":{\"url\":\"ssh://git@example.com/r.git\",\"ref\":{\"branch\":"
                     "\"main\",\"commit\":\"0123456789abcdef0123456789abcdef01234567\"}}}");
    assert_string_equal(r.git.branch, "main");
    json_object_put(h);
}

static void test_source__parse_errors_name_the_field(void **state)
{
    (void)state;
    parse_fails("{}", "exactly one of");
    parse_fails("{\"fluxBucket\":{\"name\":\"b\"},\"git\":{\"url\":\"https://x\"}}",
                "exactly one of");
    parse_fails("{\"fluxBucket\":{}}", "sourceRef.fluxBucket.name: required");
    parse_fails("{\"fluxBucket\":{\"name\":7}}", "sourceRef.fluxBucket.name: must be a string");
    parse_fails("{\"httpRepository\":{}}", "sourceRef.httpRepository.url: required");
    parse_fails("{\"git\":{\"ref\":{\"branch\":\"main\"}}}", "sourceRef.git.url: required");
    parse_fails("{\"git\":{\"url\":\"ftp://x/y\"}}", "sourceRef.git: git url");
    parse_fails("{\"git\":{\"url\":\"https://x/y\",\"ref\":{\"tag\":\"a\",\"branch\":\"b\"}}}",
                "sourceRef.git.ref: set one of");
    parse_fails("{\"git\":{\"url\":\"https://x/y\",\"ref\":{\"commit\":\"abc\"}}}",
                "git ref.commit");
    parse_fails("{\"git\":{\"url\":\"https://x/y\",\"interval\":\"soon\"}}",
                "sourceRef.git.interval");
    parse_fails("{\"git\":{\"url\":\"https://x/y\",\"interval\":\"10ms\"}}", "between 1s");
    /* Go durations only: no NaN, hex or exponents, no missing unit */
    parse_fails("{\"git\":{\"url\":\"https://x/y\",\"interval\":\"nans\"}}",
                "sourceRef.git.interval: 'nans' is not a duration");
    parse_fails("{\"git\":{\"url\":\"https://x/y\",\"interval\":\"0x10s\"}}", "is not a duration");
    parse_fails("{\"git\":{\"url\":\"https://x/y\",\"interval\":\"1e3s\"}}", "is not a duration");
    parse_fails("{\"git\":{\"url\":\"https://x/y\",\"interval\":\"60\"}}", "is not a duration");
    parse_fails("{\"git\":{\"url\":\"https://x/y\",\"interval\":\"169h\"}}", "between 1s");
    parse_fails("{\"git\":{\"url\":\"https://x/y\",\"secretRef\":{}}}",
                "sourceRef.git.secretRef.name: required");
    co_source_spec r;
    assert_co_fail_with(CO_EINVALID, co_source_spec_parse(&r, NULL));
}

/* ---- digests ----------------------------------------------------------------------------- */

static char *go_json(const char *s)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_json_go_quote(&b, s, strlen(s), 0));
    return co_buf_take(&b, NULL);
}

/* The API model's parse and the source layer's agree on every variant (one definition). */
static void test_source__model_ref_matches_json_parse(void **state)
{
    (void)state;
    static const char *const refs[] = {
        "{\"fluxGitRepository\":{\"name\":\"app\",\"namespace\":\"flux\"}}",
        "{\"fluxBucket\":{\"name\":\"b\"}}",
        "{\"httpRepository\":{\"url\":\"https://x/a.tgz\",\"digestHeader\":\"D\"}}",
        "{\"git\":{\"url\":\"https://x/r.git\",\"ref\":{\"tag\":\"v1\"},"
        "\"secretRef\":{\"name\":\"s\"},\"interval\":\"2m\"}}",
    };
    for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
        char *doc = NULL;
        assert_true(asprintf(&doc,
                             "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
                             "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"},"
                             "\"spec\":{\"sourceRef\":%s}}",
                             refs[i]) > 0);
        struct json_object *obj = json_tokener_parse(doc);
        assert_non_null(obj);
        co_component *c = NULL;
        assert_co_pass(co_component_parse(&c, obj));
        co_source_spec a;
        co_source_spec b;
        assert_co_pass(co_source_spec_from_ref(&a, &c->spec.source));
        assert_co_pass(co_source_spec_parse(&b, co_json_get(obj, "spec", "sourceRef", NULL)));
        assert_int_equal(a.kind, b.kind);
        assert_int_equal(a.interval_ms, b.interval_ms);
        const char *const *sa[] = {
            &a.ns,         &a.name,    &a.url,        &a.digest_header, &a.revision_header,
            &a.git.branch, &a.git.tag, &a.secret_name};
        const char *const *sb[] = {
            &b.ns,         &b.name,    &b.url,        &b.digest_header, &b.revision_header,
            &b.git.branch, &b.git.tag, &b.secret_name};
        for (size_t k = 0; k < sizeof(sa) / sizeof(sa[0]); k++) {
            if (*sb[k]) {
                assert_non_null(*sa[k]);
                assert_string_equal(*sa[k], *sb[k]);
            } else {
                assert_null(*sa[k]);
            }
        }
        co_component_free(c);
        json_object_put(obj);
        free(doc);
    }
    co_source_ref none;
    memset(&none, 0, sizeof(none));
    co_source_spec r;
    assert_co_fail_with(CO_EINVALID, co_source_spec_from_ref(&r, &none));
    assert_contains(co_error_last(), "exactly one of");
}

/* A Flux object with uid "u", generation 7 and annotations @p ann (taken), as the digest reads. */
static struct json_object *flux_object(struct json_object *ann)
{
    struct json_object *obj = json_object_new_object();
    struct json_object *meta = json_object_new_object();
    json_object_object_add(obj, "metadata", meta);
    json_object_object_add(meta, "uid", json_object_new_string("u"));
    json_object_object_add(meta, "generation", json_object_new_int(7));
    json_object_object_add(meta, "annotations", ann);
    return obj;
}

/* Pinned digests over tricky strings: the bytes hashed are spelled out beside each. A missing
 * string is "", and so is an annotation that is not a string. */
static void test_source__digests_of_tricky_strings_are_pinned(void **state)
{
    (void)state;
    char *d = NULL;
    /* ["\u003ca\u0026b\u003e\u2028\ufffd<DEL>\u0001","\b\f",""] */
    co_source_plain_digest(&d, "<a&b>\xe2\x80\xa8\xff\x7f\x01", "\b\f", NULL);
    assert_string_equal(d, "bf0871b01fb9d5140e6bffd9fe8e34d7ca121179359428e9a46128f6a7af159e");
    free(d);
    struct json_object *ann = json_object_new_object();
    json_object_object_add(ann, "k", json_object_new_int(5));
    json_object_object_add(ann, "<k>", json_object_new_string("a"));
    struct json_object *obj = flux_object(ann);
    /* ["u",7,{"\u003ck\u003e":"a","k":""},"x","y","z"] */
    assert_co_pass(co_source_flux_digest(&d, obj, "x", "y", "z"));
    assert_string_equal(d, "4d10a64948dcc8d3f0f984d7ff47a1805b0266d09a7c7c0a016395f785177e82");
    free(d);
    json_object_put(obj);
}

/* An annotation value is written whole, NUL bytes and all, as Go writes it; it used to end at
 * its first NUL, which gave the digest above. */
static void test_source__digest_writes_annotation_values_past_a_nul(void **state)
{
    (void)state;
    struct json_object *ann = json_object_new_object();
    json_object_object_add(ann, "k", json_object_new_int(5));
    json_object_object_add(ann, "<k>", json_object_new_string_len("a\0b", 3));
    struct json_object *obj = flux_object(ann);
    char *d = NULL;
    /* ["u",7,{"\u003ck\u003e":"a\u0000b","k":""},"x","y","z"] */
    assert_co_pass(co_source_flux_digest(&d, obj, "x", "y", "z"));
    assert_string_equal(d, "fc8c26c74495764fe1fdbdb3adf90513e4dffd7bdcb905164d70373d00e3cf4b");
    free(d);
    json_object_put(obj);
}

static char *hexs(const char *s)
{
    if (!*s) {
        return co_xstrdup("-");
    }
    size_t n = strlen(s);
    char *out = co_xmalloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        snprintf(out + 2 * i, 3, "%02x", (unsigned char)s[i]);
    }
    return out;
}

/* A random string over bytes that exercise the encoder (no \b or \f, which the oracle's Go 1.19
 * writes as \u0008 and \u000c, Go 1.22 and later briefly). */
static char *random_string(unsigned *seed)
{
    static const char *const atoms[] = {
        "a",
        "Z",
        "0",
        " ",
        "<",
        ">",
        "&",
        "\"",
        "\\",
        "/",
        "\n",
        "\r",
        "\t",
        "\x01",
        "\x1e",
        "\x7f",
        "\xc3\xa9",
        "\xe2\x82\xac",
        "\xf0\x9f\x98\x80",
        "\xe2\x80\xa8",
        "\xe2\x80\xa9",
        "\xff",
        "\xc0",
        "\x80",
        "\xed\xa0\x80",
        "\xf4\x90\x80\x80",
        "\xe2\x82",
        "sha256:",
        "@",
        ":",
    };
    size_t n = (size_t)(rand_r(seed) % 12);
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    for (size_t i = 0; i < n; i++) {
        assert_co_pass(co_buf_puts(&b, atoms[rand_r(seed) % (int)CO_ARRAY_SIZE(atoms)]));
    }
    return co_buf_take(&b, NULL);
}

/* Runs the Go oracle on @p requests; returns its output (free()) or NULL when unavailable. */
static char *run_oracle(const char *dir, const char *requests)
{
    char *build = co_xasprintf("%s/tests/oracle/build.sh", CO_SOURCE_ROOT);
    char *pathf = co_xasprintf("%s/oracle-path", dir), *req = co_xasprintf("%s/req", dir);
    char *resp = co_xasprintf("%s/resp", dir);
    char *out = NULL;
    pid_t pid;
    int status = 0;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, pathf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char *bargv[] = {build, (char *)"sourcedigest", NULL};
    int ok = posix_spawn(&pid, build, &fa, NULL, bargv, environ) == 0 &&
             waitpid(pid, &status, 0) >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    posix_spawn_file_actions_destroy(&fa);
    if (ok) {
        char *oracle = co_test_read_file(pathf, NULL);
        oracle[strcspn(oracle, "\n")] = '\0';
        co_test_write_file(req, requests, strlen(requests));
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, req, O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, resp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char *oargv[] = {oracle, NULL};
        if (posix_spawn(&pid, oracle, &fa, NULL, oargv, environ) != 0 ||
            waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fail_msg("the sourcedigest oracle failed");
        }
        posix_spawn_file_actions_destroy(&fa);
        out = co_test_read_file(resp, NULL);
        free(oracle);
    }
    free(build);
    free(pathf);
    free(req);
    free(resp);
    return out;
}

static void test_source__digests_match_go(void **state)
{
    fixture *f = *state;
    unsigned seed = 20260901;
    enum { N = 300 };
    co_buf req = CO_BUF_INIT(SIZE_MAX);
    char *expect[3 * N];
    size_t ne = 0;
    for (int i = 0; i < N; i++) {
        /* a string */
        char *s = random_string(&seed);
        char *hs = hexs(s);
        assert_co_pass(co_buf_printf(&req, "S %s\n", hs));
        char *js = go_json(s);
        expect[ne++] = hexs(js);
        free(js);
        free(hs);
        /* a Flux digest over an object with random fields */
        char *uid = random_string(&seed), *url = random_string(&seed);
        char *dg = random_string(&seed), *rev = random_string(&seed);
        long long gen = (long long)rand_r(&seed) * (i % 3 == 0 ? -1 : 1);
        int nann = i % 4 == 0 ? -1 : rand_r(&seed) % 4;
        struct json_object *obj = json_object_new_object();
        struct json_object *meta = json_object_new_object();
        json_object_object_add(obj, "metadata", meta);
        json_object_object_add(meta, "uid", json_object_new_string(uid));
        json_object_object_add(meta, "generation", json_object_new_int64(gen));
        struct json_object *ann = NULL;
        if (nann >= 0) {
            ann = json_object_new_object();
            json_object_object_add(meta, "annotations", ann);
            for (int k = 0; k < nann; k++) {
                char *key = random_string(&seed), *val = random_string(&seed);
                /* a repeated key replaces the value, on both sides */
                json_object_object_add(ann, key, json_object_new_string(val));
                free(key);
                free(val);
            }
        }
        char *h1 = hexs(uid);
        assert_co_pass(co_buf_printf(&req, "D %s %lld %d", h1, gen,
                                     ann ? json_object_object_length(ann) : -1));
        free(h1);
        if (ann) {
            json_object_object_foreach (ann, k2, v2) {
                char *hk = hexs(k2), *hv = hexs(json_object_get_string(v2));
                assert_co_pass(co_buf_printf(&req, " %s %s", hk, hv));
                free(hk);
                free(hv);
            }
        }
        char *hu = hexs(url), *hd = hexs(dg), *hr = hexs(rev);
        assert_co_pass(co_buf_printf(&req, " %s %s %s\n", hu, hd, hr));
        char *d = NULL;
        assert_co_pass(co_source_flux_digest(&d, obj, url, dg, rev));
        expect[ne++] = d;
        /* a plain digest */
        assert_co_pass(co_buf_printf(&req, "P %s %s %s\n", hu, hd, hr));
        co_source_plain_digest(&d, url, dg, rev);
        expect[ne++] = d;
        free(hu);
        free(hd);
        free(hr);
        json_object_put(obj);
        free(uid);
        free(url);
        free(dg);
        free(rev);
        free(s);
    }
    char *answers = run_oracle(f->dir, co_buf_cstr(&req));
    assert_non_null(answers); /* Go comes with tests/env/deps.sh */
    char *save = NULL;
    char *line = strtok_r(answers, "\n", &save);
    for (size_t i = 0; i < ne; i++) {
        assert_non_null(line);
        if (strcmp(line, expect[i]) != 0) {
            fail_msg("request %zu: Go says %s, we say %s", i, line, expect[i]);
        }
        line = strtok_r(NULL, "\n", &save);
        free(expect[i]);
    }
    free(answers);
    co_buf_dispose(&req);
}

/* ---- Flux resolution --------------------------------------------------------------------- */

static const char *ready_repo =
    "{\"apiVersion\":\"source.toolkit.fluxcd.io/v1\",\"kind\":\"GitRepository\","
    "\"metadata\":{\"name\":\"app\",\"namespace\":\"team\",\"uid\":\"u-1\",\"generation\":3,"
    "\"annotations\":{\"reconcile.fluxcd.io/requestedAt\":\"now\"}},"
    "\"status\":{\"conditions\":[{\"type\":\"Reconciling\",\"status\":\"False\"},"
    "{\"type\":\"Ready\",\"status\":\"True\",\"observedGeneration\":3}],"
    "\"artifact\":{\"url\":\"http://source-controller/a.tgz\",\"digest\":\"sha256:abc\","
    "\"revision\":\"main@sha1:0123\"}}}";

static co_source_spec flux_ref(co_source_kind kind, const char *ns, const char *name)
{
    co_source_spec r;
    memset(&r, 0, sizeof(r));
    r.kind = kind;
    r.ns = ns;
    r.name = name;
    return r;
}

static void test_source__flux_ready_source_resolves(void **state)
{
    fixture *f = *state;
    fake_put(&f->cluster, "source.toolkit.fluxcd.io/v1", "GitRepository", "team", "app",
             ready_repo);
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_GIT_REPOSITORY, NULL, "app");
    co_source_artifact a = {0};
    long retry = -1;
    assert_co_pass(co_source_resolve(f->s, &r, "team", &a, &retry));
    assert_int_equal(retry, 0);
    assert_string_equal(a.url, "http://source-controller/a.tgz");
    assert_string_equal(a.digest, "sha256:abc");
    assert_string_equal(a.revision, "main@sha1:0123");
    /* the source digest covers uid, generation, annotations and the artifact */
    struct json_object *obj = json_tokener_parse(ready_repo);
    char *want = NULL;
    assert_co_pass(co_source_flux_digest(&want, obj, a.url, a.digest, a.revision));
    assert_string_equal(a.source_digest, want);
    free(want);
    json_object_object_del(json_object_object_get(obj, "metadata"), "annotations");
    assert_co_pass(co_source_flux_digest(&want, obj, a.url, a.digest, a.revision));
    assert_string_not_equal(a.source_digest, want);
    free(want);
    json_object_put(obj);
    co_source_artifact_dispose(&a);
    co_source_artifact_dispose(&a);
}

static void
expect_retriable(fixture *f, const co_source_spec *r, const char *ns, int code, const char *message)
{
    co_source_artifact a = {0};
    long retry = 0;
    assert_co_fail_with(code, co_source_resolve(f->s, r, ns, &a, &retry));
    assert_string_equal(co_error_last(), message);
    assert_int_equal(retry, CO_SOURCE_RETRY_MS);
    assert_null(a.url);
}

/* A blueprint reference parses, and is refused by this layer's resolution rather than taken for
 * a Flux object (the controller resolves Blueprints itself: docs/behaviour.md, "Blueprint
 * sources"). */
static void test_source__blueprint_is_parsed_and_refused(void **state)
{
    fixture *f = *state;
    json_object *ref = json_tokener_parse("{\"blueprint\":{\"name\":\"web\"}}");
    co_source_spec r;
    assert_co_pass(co_source_spec_parse(&r, ref));
    assert_int_equal(r.kind, CO_SOURCE_BLUEPRINT);
    assert_string_equal(r.name, "web");
    assert_null(co_source_index_key(&r, "team"));
    co_source_artifact a = {0};
    long retry = 1;
    assert_co_fail_with(CO_EINVALID, co_source_resolve(f->s, &r, "team", &a, &retry));
    assert_int_equal(retry, 0);
    assert_null(a.url);
    assert_string_equal(co_source_kind_name(CO_SOURCE_BLUEPRINT), "blueprint");
    assert_int_equal(co_source_kind_parse("blueprint"), CO_SOURCE_BLUEPRINT);
    json_object_put(ref);
}

static void test_source__flux_retriable_conditions(void **state)
{
    fixture *f = *state;
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_OCI_REPOSITORY, "flux", "missing");
    expect_retriable(f, &r, "team", CO_ENOTFOUND,
                     "ocirepositories.source.toolkit.fluxcd.io \"missing\" not found");
    const char *v1 = "source.toolkit.fluxcd.io/v1";
    /* not ready: Ready for an older generation, or False, or no conditions */
    fake_put(&f->cluster, v1, "Bucket", "team", "stale",
             "{\"metadata\":{\"generation\":4},\"status\":{\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"True\",\"observedGeneration\":3}],\"artifact\":{\"url\":\"u\","
             "\"digest\":\"d\",\"revision\":\"r\"}}}");
    fake_put(&f->cluster, v1, "Bucket", "team", "false",
             "{\"metadata\":{\"generation\":1},\"status\":{\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"False\",\"observedGeneration\":1}]}}");
    fake_put(&f->cluster, v1, "Bucket", "team", "new", "{\"metadata\":{\"generation\":1}}");
    const char *names[] = {"stale", "false", "new"};
    for (size_t i = 0; i < 3; i++) {
        r = flux_ref(CO_SOURCE_FLUX_BUCKET, NULL, names[i]);
        expect_retriable(f, &r, "team", CO_EUNAVAILABLE, "source not ready");
    }
    static const struct {
        const char *artifact, *message;
    } partial[] = {
        {"", "missing artifact on ready source"},
        {",\"artifact\":{\"digest\":\"d\",\"revision\":\"r\"}", "source not ready (missing URL)"},
        {",\"artifact\":{\"url\":\"u\",\"revision\":\"r\"}", "source not ready (missing digest)"},
        {",\"artifact\":{\"url\":\"u\",\"digest\":\"d\",\"revision\":\"\"}",
         "source not ready (missing revision)"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(partial); i++) {
        char *json = co_xasprintf("{\"metadata\":{\"generation\":2},\"status\":{\"conditions\":"
                                  "[{\"type\":\"Ready\",\"status\":\"True\","
                                  "\"observedGeneration\":2}]%s}}",
                                  partial[i].artifact);
        fake_put(&f->cluster, v1, "HelmChart", "team", "c", json);
        free(json);
        r = flux_ref(CO_SOURCE_FLUX_HELM_CHART, NULL, "c");
        expect_retriable(f, &r, "team", CO_EUNAVAILABLE, partial[i].message);
    }
}

static void test_source__works_without_flux_crds(void **state)
{
    fixture *f = *state;
    f->cluster.serve_v1 = 0;
    f->cluster.serve_v1beta2 = 0;
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_GIT_REPOSITORY, NULL, "app");
    expect_retriable(f, &r, "team", CO_ENOMATCH,
                     "no matches for kind \"GitRepository\" in version "
                     "\"source.toolkit.fluxcd.io/v1\" (are the Flux source CRDs installed?)");
    r = flux_ref(CO_SOURCE_FLUX_HELM_CHART, NULL, "c");
    expect_retriable(f, &r, "team", CO_ENOMATCH,
                     "no matches for kind \"HelmChart\" in version "
                     "\"source.toolkit.fluxcd.io/v1\" (are the Flux source CRDs installed?)");
}

static void test_source__falls_back_to_v1beta2(void **state)
{
    fixture *f = *state;
    f->cluster.serve_v1 = 0;
    f->cluster.serve_v1beta2 = 1;
    /* an older source-controller: only the sha256 checksum */
    fake_put(&f->cluster, "source.toolkit.fluxcd.io/v1beta2", "OCIRepository", "team", "o",
             "{\"metadata\":{\"uid\":\"u\",\"generation\":1},\"status\":{\"conditions\":[{"
             "\"type\":\"Ready\",\"status\":\"True\",\"observedGeneration\":1}],\"artifact\":{"
             "\"url\":\"http://x/o.tgz\",\"checksum\":"
             "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\","
             "\"revision\":\"latest@sha256:1\"}}}");
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_OCI_REPOSITORY, NULL, "o");
    co_source_artifact a = {0};
    long retry = -1;
    assert_co_pass(co_source_resolve(f->s, &r, "team", &a, &retry));
    assert_string_equal(a.digest,
                        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    co_source_artifact_dispose(&a);
}

static void test_source__other_cluster_errors_are_not_retriable(void **state)
{
    fixture *f = *state;
    f->cluster.fail_with = CO_EAUTH;
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_GIT_REPOSITORY, NULL, "app");
    co_source_artifact a = {0};
    long retry = -1;
    assert_co_fail_with(CO_EAUTH, co_source_resolve(f->s, &r, "team", &a, &retry));
    assert_int_equal(retry, 0);
    assert_contains(co_error_last(), "getting GitRepository team/app: the API server said no");
}

static void test_source__pins(void **state)
{
    (void)state;
    co_source_artifact a = {.url = (char *)"u",
                            .digest = (char *)"sha256:1",
                            .revision = (char *)"v1"};
    long retry = -1;
    assert_co_pass(co_source_check_pins(&a, NULL, "", &retry));
    assert_int_equal(retry, 0);
    assert_co_pass(co_source_check_pins(&a, "sha256:1", "v1", &retry));
    assert_co_fail_with(CO_ECONFLICT, co_source_check_pins(&a, "sha256:2", NULL, &retry));
    assert_string_equal(co_error_last(),
                        "source digest (sha256:1) does not match specified digest (sha256:2)");
    assert_int_equal(retry, CO_SOURCE_RETRY_MS);
    assert_co_fail_with(CO_ECONFLICT, co_source_check_pins(&a, NULL, "v2", &retry));
    assert_string_equal(co_error_last(),
                        "source revision (v1) does not match specified revision (v2)");
}

static void test_source__requeue_filter(void **state)
{
    (void)state;
    struct json_object *src = json_tokener_parse(ready_repo);
    const char *d = NULL, *r = NULL;
    assert_true(co_source_flux_has_artifact(src, &d, &r));
    assert_string_equal(d, "sha256:abc");
    assert_string_equal(r, "main@sha1:0123");
    /* a Ready component on the same artifact: nothing to do */
    struct json_object *same = json_tokener_parse(
        "{\"metadata\":{\"generation\":2},\"status\":{\"observedGeneration\":2,\"state\":"
        "\"Ready\",\"lastAttemptedDigest\":\"sha256:abc\",\"lastAttemptedRevision\":"
        "\"main@sha1:0123\"}}");
    assert_false(co_source_should_requeue(src, same));
    /* an older artifact, a not-ready component, a stale generation: requeue */
    struct json_object *older = json_tokener_parse(
        "{\"metadata\":{\"generation\":2},\"status\":{\"observedGeneration\":2,\"state\":"
        "\"Ready\",\"lastAttemptedDigest\":\"sha256:old\",\"lastAttemptedRevision\":"
        "\"main@sha1:0123\"}}");
    assert_true(co_source_should_requeue(src, older));
    struct json_object *pending = json_tokener_parse(
        "{\"metadata\":{\"generation\":2},\"status\":{\"observedGeneration\":2,\"state\":"
        "\"Pending\",\"lastAttemptedDigest\":\"sha256:abc\",\"lastAttemptedRevision\":"
        "\"main@sha1:0123\"}}");
    assert_true(co_source_should_requeue(src, pending));
    struct json_object *stale = json_tokener_parse(
        "{\"metadata\":{\"generation\":3},\"status\":{\"observedGeneration\":2,\"state\":"
        "\"Ready\",\"lastAttemptedDigest\":\"sha256:abc\",\"lastAttemptedRevision\":"
        "\"main@sha1:0123\"}}");
    assert_true(co_source_should_requeue(src, stale));
    /* a source that is not ready never requeues */
    struct json_object *notready = json_tokener_parse("{\"metadata\":{\"generation\":1}}");
    assert_false(co_source_flux_has_artifact(notready, NULL, NULL));
    assert_false(co_source_should_requeue(notready, older));
    json_object_put(src);
    json_object_put(same);
    json_object_put(older);
    json_object_put(pending);
    json_object_put(stale);
    json_object_put(notready);
}

/* ---- fetching ---------------------------------------------------------------------------- */

static const tab_entry chart[] = {
    {TAB_FILE, 0, "app/kustomization.yaml", "resources: [cm.yaml]\n", 0},
    {TAB_FILE, 0, "app/cm.yaml", "kind: ConfigMap\n", 0},
    {TAB_FILE, 0, "README", "x\n", 0},
};

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

/* Serves a tar.gz at @p path and returns an artifact pointing at it. */
static co_source_artifact serve(fixture *f, const char *path, void **data, size_t *len)
{
    *data = tab_build(TAB_TAR_GZ, chart, CO_ARRAY_SIZE(chart), len);
    test_httpd_route(f->srv, path, 200, *data, *len, NULL);
    co_source_artifact a = {0};
    a.url = co_xasprintf("%s%s", test_httpd_url(f->srv), path);
    a.digest = sha256_digest(*data, *len);
    a.revision = co_xstrdup("main@sha1:1");
    return a;
}

static void test_source__fetch_downloads_once_and_resolves_paths(void **state)
{
    fixture *f = *state;
    void *data;
    size_t len;
    co_source_artifact a = serve(f, "/a.tgz", &data, &len);
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_GIT_REPOSITORY, NULL, "app");
    co_source_tree *t = NULL;
    int downloaded = -1;
    assert_co_pass(co_source_fetch(f->s, &r, "team", &a, &t, &downloaded));
    assert_int_equal(downloaded, 1);
    char *dir = NULL;
    assert_co_pass(co_source_tree_path(t, "app", &dir));
    char *p = co_xasprintf("%s/cm.yaml", dir);
    char *s = co_test_read_file(p, NULL);
    assert_string_equal(s, "kind: ConfigMap\n");
    free(s);
    free(p);
    free(dir);
    assert_co_pass(co_source_tree_path(t, "", &dir));
    assert_string_equal(dir, co_source_tree_dir(t));
    free(dir);
    assert_co_fail_with(CO_ENOTFOUND, co_source_tree_path(t, "nope", &dir));
    assert_string_equal(co_error_last(), "no such file or directory: nope");
    assert_co_fail_with(CO_EINVALID, co_source_tree_path(t, "README", &dir));
    assert_string_equal(co_error_last(), "not a directory: README");
    assert_co_fail_with(CO_EINVALID, co_source_tree_path(t, "../..", &dir));
    assert_contains(co_error_last(), "leaves the artifact");
    co_source_tree_release(t);
    /* an unchanged source is never downloaded twice; another Component shares it */
    co_source_spec other = flux_ref(CO_SOURCE_FLUX_BUCKET, "x", "y");
    assert_co_pass(co_source_fetch(f->s, &other, "team2", &a, &t, &downloaded));
    assert_int_equal(downloaded, 0);
    co_source_tree_release(t);
    assert_int_equal(test_httpd_hits(f->srv, "/a.tgz"), 1);
    co_source_artifact_dispose(&a);
    free(data);
}

static void test_source__fetch_verifies_and_never_caches_bad_downloads(void **state)
{
    fixture *f = *state;
    void *data;
    size_t len;
    co_source_artifact a = serve(f, "/a.tgz", &data, &len);
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_GIT_REPOSITORY, NULL, "app");
    co_source_tree *t = NULL;
    /* the server now has other bytes than the artifact digest says */
    test_httpd_route(f->srv, "/a.tgz", 200, "tampered", 8, NULL);
    assert_co_fail_with(CO_EINVALID, co_source_fetch(f->s, &r, "team", &a, &t, NULL));
    assert_contains(co_error_last(), "digest mismatch: expected ");
    assert_contains(co_error_last(), a.digest);
    /* a truncated transfer */
    test_httpd_route_truncated(f->srv, "/a.tgz", data, len, len / 2);
    assert_co_fail_with(CO_EUNAVAILABLE, co_source_fetch(f->s, &r, "team", &a, &t, NULL));
    assert_contains(co_error_last(), "truncated");
    /* an artifact that is not an archive at all, but has the right digest */
    test_httpd_route(f->srv, "/junk", 200, "junk", 4, NULL);
    co_source_artifact junk = {.url = co_xasprintf("%s/junk", test_httpd_url(f->srv)),
                               .digest = sha256_digest("junk", 4),
                               .revision = co_xstrdup("r")};
    assert_co_fail_with(CO_EINVALID, co_source_fetch(f->s, &r, "team", &junk, &t, NULL));
    assert_contains(co_error_last(), "extracting the artifact of");
    /* nothing of the failures was cached or left behind */
    char *tmp = co_xasprintf("%s/cache/artifacts/tmp", f->dir);
    char *entries = co_xasprintf("%s/cache/artifacts/entries", f->dir);
    char *cmd =
        co_xasprintf("test -z \"$(ls -A '%s' '%s' | grep -v '^/\\|:$\\|^$')\"", tmp, entries);
    assert_int_equal(system(cmd), 0); // NOLINT(concurrency-mt-unsafe)
    /* once the server is right again, the fetch succeeds */
    test_httpd_route(f->srv, "/a.tgz", 200, data, len, NULL);
    assert_co_pass(co_source_fetch(f->s, &r, "team", &a, &t, NULL));
    co_source_tree_release(t);
    free(cmd);
    free(tmp);
    free(entries);
    co_source_artifact_dispose(&junk);
    co_source_artifact_dispose(&a);
    free(data);
}

static void test_source__http_repository(void **state)
{
    fixture *f = *state;
    void *data;
    size_t len;
    co_source_artifact served = serve(f, "/store/v1.tgz", &data, &len);
    test_httpd_route(f->srv, "/store/v1.tgz", 200, data, len, "ETag: \"v1\"");
    char *loc = co_xasprintf("Location: %s", served.url);
    test_httpd_route(f->srv, "/latest", 302, NULL, 0, loc);
    char *url = co_xasprintf("%s/latest", test_httpd_url(f->srv));
    co_source_spec r;
    memset(&r, 0, sizeof(r));
    r.kind = CO_SOURCE_HTTP_REPOSITORY;
    r.url = url;
    co_source_artifact a = {0};
    long retry = -1;
    assert_co_pass(co_source_resolve(f->s, &r, "team", &a, &retry));
    assert_string_equal(a.url, served.url);
    assert_string_equal(a.digest, "\"v1\"");
    assert_string_equal(a.revision, "\"v1\"");
    char *sd = NULL;
    co_source_plain_digest(&sd, a.url, a.digest, a.revision);
    assert_string_equal(a.source_digest, sd);
    free(sd);
    co_source_tree *t = NULL;
    int downloaded = 0;
    assert_co_pass(co_source_fetch(f->s, &r, "team", &a, &t, &downloaded));
    assert_int_equal(downloaded, 1);
    co_source_tree_release(t);
    assert_co_pass(co_source_fetch(f->s, &r, "team", &a, &t, &downloaded));
    assert_int_equal(downloaded, 0);
    co_source_tree_release(t);
    /* a server claiming another artifact's content digest gets no cache hit from it */
    co_source_artifact liar = {.url = co_xasprintf("%s/other", test_httpd_url(f->srv)),
                               .digest = co_xstrdup(served.digest),
                               .revision = co_xstrdup("x")};
    test_httpd_route(f->srv, "/other", 200, "evil", 4, NULL);
    assert_co_fail_with(CO_EINVALID, co_source_fetch(f->s, &r, "team", &liar, &t, NULL));
    assert_contains(co_error_last(), "digest mismatch");
    /* HEAD failures are not retriable */
    r.url = "http://127.0.0.1:1/nothing";
    assert_int_not_equal(co_source_resolve(f->s, &r, "team", &a, &retry), 0);
    assert_int_equal(retry, 0);
    co_source_artifact_dispose(&liar);
    co_source_artifact_dispose(&a);
    co_source_artifact_dispose(&served);
    free(url);
    free(loc);
    free(data);
}

/* Fetches the HTTP repository at @p path of the test server and returns the tree's file
 * @p rel (NULL when the fetch fails; the error is then the last one). */
static char *fetch_http_file(fixture *f, const char *path, const char *rel)
{
    char *url = co_xasprintf("%s%s", test_httpd_url(f->srv), path);
    co_source_spec r;
    memset(&r, 0, sizeof(r));
    r.kind = CO_SOURCE_HTTP_REPOSITORY;
    r.url = url;
    co_source_artifact a = {0};
    long retry = -1;
    assert_co_pass(co_source_resolve(f->s, &r, "team", &a, &retry));
    co_source_tree *t = NULL;
    char *text = NULL;
    if (co_source_fetch(f->s, &r, "team", &a, &t, NULL) == 0) {
        char *file = co_xasprintf("%s/%s", co_source_tree_dir(t), rel);
        text = co_test_read_file(file, NULL);
        assert_non_null(text);
        free(file);
        co_source_tree_release(t);
    }
    co_source_artifact_dispose(&a);
    free(url);
    return text;
}

/* Upstream's HTTP downloads choose zip, bzip2 and plain YAML by Content-Type or URL suffix; the
 * same artifacts work here, each in the format it was declared as. */
static void test_source__http_repository_formats(void **state)
{
    fixture *f = *state;
    static const char yaml[] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n";
    test_httpd_route(f->srv, "/app.yaml", 200, yaml, sizeof(yaml) - 1,
                     "ETag: \"y1\"\nContent-Type: text/plain; charset=utf-8");
    char *text = fetch_http_file(f, "/app.yaml", "resources.yaml");
    assert_non_null(text);
    assert_string_equal(text, yaml);
    free(text);
    size_t len;
    void *gz = tab_compress(TAB_GZIP, yaml, sizeof(yaml) - 1, 0, &len);
    test_httpd_route(f->srv, "/download", 200, gz, len,
                     "ETag: \"y2\"\nContent-Type: application/yaml+gzip");
    text = fetch_http_file(f, "/download", "resources.yaml");
    assert_string_equal(text, yaml);
    free(text);
    free(gz);

    const tab_entry tree[] = {{TAB_FILE, 0, "deploy/cm.yaml", yaml, 0}};
    const struct {
        const char *path;
        int tab;
        const char *headers;
    } archives[] = {
        {"/app.zip", TAB_ZIP, "ETag: \"z\""},
        {"/bz", TAB_TAR_BZ2, "ETag: \"b\"\nContent-Type: application/x-bzip2"},
        {"/app.tar.zst", TAB_TAR_ZST, "ETag: \"s\"\nContent-Type: application/octet-stream"},
        {"/app.tar", TAB_TAR, "ETag: \"t\""},
        {"/app.tgz", TAB_TAR_GZ, "ETag: \"g\"\nContent-Type: application/x-gzip"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(archives); i++) {
        void *data = tab_build(archives[i].tab, tree, 1, &len);
        test_httpd_route(f->srv, archives[i].path, 200, data, len, archives[i].headers);
        text = fetch_http_file(f, archives[i].path, "deploy/cm.yaml");
        if (!text) {
            fail_msg("%s: %s", archives[i].path, co_error_last());
        }
        assert_string_equal(text, yaml);
        free(text);
        free(data);
    }

    /* a tar's compression comes from its content: a .tar.gz or .tar.bz2 labelled
     * application/x-tar, as uploaders that guess from the file name store them, is read */
    const struct {
        const char *path;
        int tab;
    } labelled_tar[] = {{"/s3/app.tar.gz", TAB_TAR_GZ},
                        {"/s3/app.tar.bz2", TAB_TAR_BZ2},
                        {"/s3/app.tgz", TAB_TAR}};
    for (size_t i = 0; i < CO_ARRAY_SIZE(labelled_tar); i++) {
        void *data = tab_build(labelled_tar[i].tab, tree, 1, &len);
        char *headers = co_xasprintf("ETag: \"x%zu\"\nContent-Type: application/x-tar", i);
        test_httpd_route(f->srv, labelled_tar[i].path, 200, data, len, headers);
        text = fetch_http_file(f, labelled_tar[i].path, "deploy/cm.yaml");
        if (!text) {
            fail_msg("%s: %s", labelled_tar[i].path, co_error_last());
        }
        assert_string_equal(text, yaml);
        free(text);
        free(headers);
        free(data);
    }

    /* a declared zip is read as nothing else: a tar.gz served as zip is refused, naming both */
    void *data = tab_build(TAB_TAR_GZ, tree, 1, &len);
    test_httpd_route(f->srv, "/lie", 200, data, len, "ETag: \"l\"\nContent-Type: application/zip");
    assert_null(fetch_http_file(f, "/lie", "deploy/cm.yaml"));
    assert_contains(co_error_last(), "as zip");
    assert_contains(co_error_last(), "not a valid zip archive");
    free(data);
}

/* ---- git --------------------------------------------------------------------------------- */

static void test_source__git_source(void **state)
{
    fixture *f = *state;
    char *src = co_xasprintf("%s/repo", f->dir);
    tgr_init(src);
    tgr_write(src, "deploy/cm.yaml", "kind: ConfigMap\n");
    char *c1 = tgr_commit(src, "one");
    char *url = co_xasprintf("file://%s", src);
    co_source_spec r;
    memset(&r, 0, sizeof(r));
    r.kind = CO_SOURCE_GIT;
    r.url = url;
    r.git.branch = "main";
    co_source_artifact a = {0};
    long retry = -1;
    assert_co_pass(co_source_resolve(f->s, &r, "team", &a, &retry));
    char *rev = co_xasprintf("main@sha1:%s", c1);
    assert_string_equal(a.revision, rev);
    assert_string_equal(a.url, url);
    assert_int_equal(strncmp(a.digest, "sha256:", 7), 0);
    co_source_tree *t = NULL;
    int downloaded = -1;
    assert_co_pass(co_source_fetch(f->s, &r, "team", &a, &t, &downloaded));
    assert_int_equal(downloaded, 0); /* resolve already checked it out */
    char *dir = NULL;
    assert_co_pass(co_source_tree_path(t, "deploy", &dir));
    free(dir);
    co_source_tree_release(t);
    /* resolving again gives the same artifact */
    co_source_artifact b = {0};
    assert_co_pass(co_source_resolve(f->s, &r, "team", &b, &retry));
    assert_string_equal(a.digest, b.digest);
    assert_string_equal(a.source_digest, b.source_digest);
    co_source_artifact_dispose(&b);
    /* a missing credentials Secret is retriable */
    r.secret_name = "creds";
    expect_retriable(f, &r, "team", CO_ENOTFOUND, "secrets \"creds\" not found");
    /* a Secret with bad base64 is not */
    fake_put(&f->cluster, "v1", "Secret", "team", "creds",
             "{\"data\":{\"username\":\"!!!\",\"password\":\"cGFzcw==\"}}");
    assert_co_fail_with(CO_EINVALID, co_source_resolve(f->s, &r, "team", &b, &retry));
    assert_contains(co_error_last(), "secret creds: key username is not valid base64");
    free(rev);
    co_source_artifact_dispose(&a);
    free(url);
    free(c1);
    free(src);
}

/* ---- poller ------------------------------------------------------------------------------ */

typedef struct seen {
    pthread_mutex_t mu;
    int changes;
    int errors;
    char last_key[64];
    char last_revision[128];
    int digest_null;
} seen;

static void on_changed(void *ctx, const char *key, const char *digest, const char *revision)
{
    seen *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->changes++;
    snprintf(s->last_key, sizeof(s->last_key), "%s", key);
    snprintf(s->last_revision, sizeof(s->last_revision), "%s", revision ? revision : "");
    s->digest_null = digest == NULL;
    pthread_mutex_unlock(&s->mu);
}

static void on_failed(void *ctx, const char *key, int code, const char *message)
{
    (void)key;
    (void)code;
    (void)message;
    seen *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->errors++;
    pthread_mutex_unlock(&s->mu);
}

/* Forces a round and waits for it. */
static void poll_round(co_source_poller *p)
{
    unsigned long before = co_source_poller_rounds(p);
    co_source_poller_poll_now(p);
    for (int i = 0; i < 3000 && co_source_poller_rounds(p) == before; i++) {
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(co_source_poller_rounds(p) > before);
}

static int changes(seen *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->changes;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void test_source__poller_http_leader_only(void **state)
{
    fixture *f = *state;
    test_httpd_route(f->srv, "/repo.tgz", 200, NULL, 0, "ETag: v1");
    char *url = co_xasprintf("%s/repo.tgz", test_httpd_url(f->srv));
    co_source_spec r;
    memset(&r, 0, sizeof(r));
    r.kind = CO_SOURCE_HTTP_REPOSITORY;
    r.url = url;
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    co_source_poller *p = NULL;
    assert_co_pass(co_source_poller_new(&p, f->s, 3600000, on_changed, on_failed, &s));
    assert_co_pass(co_source_poller_watch(p, "team/a", &r, "team", "v1", "v1"));
    co_source_spec flux = flux_ref(CO_SOURCE_FLUX_BUCKET, NULL, "b");
    assert_co_fail_with(CO_EINVALID, co_source_poller_watch(p, "team/b", &flux, "team", "", ""));
    assert_int_equal(co_source_poller_len(p), 1);
    /* not the leader: nothing is polled */
    test_httpd_route(f->srv, "/repo.tgz", 200, NULL, 0, "ETag: v2");
    poll_round(p);
    assert_int_equal(test_httpd_hits(f->srv, "/repo.tgz"), 0);
    assert_int_equal(changes(&s), 0);
    co_source_poller_set_leader(p, 1);
    poll_round(p);
    assert_int_equal(changes(&s), 1);
    assert_string_equal(s.last_key, "team/a");
    assert_string_equal(s.last_revision, "v2");
    /* the Component attempted v2: no more triggers */
    assert_co_pass(co_source_poller_watch(p, "team/a", &r, "team", "v2", "v2"));
    poll_round(p);
    assert_int_equal(changes(&s), 1);
    /* errors are reported, not triggers */
    test_httpd_route(f->srv, "/repo.tgz", 500, NULL, 0, NULL);
    poll_round(p);
    assert_int_equal(changes(&s), 1);
    assert_true(s.errors >= 1);
    co_source_poller_unwatch(p, "unknown");
    assert_int_equal(co_source_poller_len(p), 1);
    co_source_poller_unwatch(p, "team/a");
    assert_int_equal(co_source_poller_len(p), 0);
    /* watched again after the array was released */
    assert_co_pass(co_source_poller_watch(p, "team/a", &r, "team", "v2", "v2"));
    assert_int_equal(co_source_poller_len(p), 1);
    co_source_poller_unwatch(p, "team/a");
    int hits = test_httpd_hits(f->srv, "/repo.tgz");
    poll_round(p);
    assert_int_equal(test_httpd_hits(f->srv, "/repo.tgz"), hits);
    co_source_poller_free(p);
    co_source_poller_free(NULL);
    free(url);
}

/* Components sharing a source (and namespace) share its poll; another namespace polls on its
 * own; each Component is told of the change. */
static void test_source__poller_shares_a_poll_per_source(void **state)
{
    fixture *f = *state;
    test_httpd_route(f->srv, "/shared.tgz", 200, NULL, 0, "ETag: v1");
    char *url = co_xasprintf("%s/shared.tgz", test_httpd_url(f->srv));
    co_source_spec r;
    memset(&r, 0, sizeof(r));
    r.kind = CO_SOURCE_HTTP_REPOSITORY;
    r.url = url;
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    co_source_poller *p = NULL;
    assert_co_pass(co_source_poller_new(&p, f->s, 3600000, on_changed, on_failed, &s));
    co_source_poller_set_leader(p, 1);
    for (int i = 0; i < 50; i++) {
        char key[32];
        snprintf(key, sizeof(key), "team/c%d", i);
        assert_co_pass(co_source_poller_watch(p, key, &r, "team", "v1", "v1"));
    }
    assert_co_pass(co_source_poller_watch(p, "other/c0", &r, "other", "v1", "v1"));
    assert_int_equal(co_source_poller_len(p), 51);
    test_httpd_route(f->srv, "/shared.tgz", 200, NULL, 0, "ETag: v2");
    int hits = test_httpd_hits(f->srv, "/shared.tgz");
    poll_round(p);
    assert_int_equal(test_httpd_hits(f->srv, "/shared.tgz") - hits, 2);
    assert_int_equal(changes(&s), 51);
    /* the index follows removals: every key can still be updated and removed */
    for (int i = 0; i < 50; i += 2) {
        char key[32];
        snprintf(key, sizeof(key), "team/c%d", i);
        co_source_poller_unwatch(p, key);
    }
    assert_int_equal(co_source_poller_len(p), 26);
    for (int i = 1; i < 50; i += 2) {
        char key[32];
        snprintf(key, sizeof(key), "team/c%d", i);
        assert_co_pass(co_source_poller_watch(p, key, &r, "team", "v2", "v2"));
    }
    assert_int_equal(co_source_poller_len(p), 26);
    poll_round(p);
    assert_int_equal(changes(&s), 52); /* only other/c0 still attempted v1 */
    assert_string_equal(s.last_key, "other/c0");
    co_source_poller_free(p);
    free(url);
}

static void test_source__poller_git_interval_and_new_commits(void **state)
{
    fixture *f = *state;
    char *src = co_xasprintf("%s/repo", f->dir);
    tgr_init(src);
    tgr_write(src, "a", "1");
    char *c1 = tgr_commit(src, "one");
    char *url = co_xasprintf("file://%s", src);
    co_source_spec r;
    memset(&r, 0, sizeof(r));
    r.kind = CO_SOURCE_GIT;
    r.url = url;
    r.git.branch = "main";
    r.interval_ms = 1000;
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    co_source_poller *p = NULL;
    assert_co_pass(co_source_poller_new(&p, f->s, 0, on_changed, on_failed, &s));
    co_source_poller_set_leader(p, 1);
    char *rev1 = co_xasprintf("main@sha1:%s", c1);
    assert_co_pass(co_source_poller_watch(p, "team/g", &r, "team", "sha256:x", rev1));
    poll_round(p);
    assert_int_equal(changes(&s), 0);
    tgr_write(src, "a", "2");
    char *c2 = tgr_commit(src, "two");
    /* no forced round: the 1 s interval alone picks the new commit up */
    for (int i = 0; i < 1500 && changes(&s) == 0; i++) {
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(changes(&s), 1);
    char *rev2 = co_xasprintf("main@sha1:%s", c2);
    assert_string_equal(s.last_revision, rev2);
    assert_true(s.digest_null);
    co_source_poller_free(p);
    free(rev1);
    free(rev2);
    free(c1);
    free(c2);
    free(url);
    free(src);
}

/* ---- hostile artifacts, concurrency, eviction --------------------------------------------- */

/* A second handle on the fixture's cluster with its own cache, size and extraction caps. */
static co_sources *
sources_with(fixture *f, const char *name, uint64_t max_bytes, const co_archive_limits *limits)
{
    co_source_config cfg = {0};
    char *cache = co_xasprintf("%s/%s", f->dir, name);
    cfg.cache_dir = cache;
    cfg.cache_max_bytes = max_bytes;
    cfg.fetch.backoff_ms = 10;
    cfg.fetch.retries = 1;
    cfg.git.test_only_file_urls = 1; /* the git tests use local repositories */
    cfg.get = fake_get;
    cfg.get_ctx = &f->cluster;
    if (limits) {
        cfg.limits = *limits;
    }
    co_sources *s = NULL;
    assert_co_pass(co_sources_new(&s, &cfg));
    free(cache);
    return s;
}

/* Serves @p data at @p path and returns an artifact with its true digest. */
static co_source_artifact serve_bytes(fixture *f, const char *path, const void *data, size_t len)
{
    test_httpd_route(f->srv, path, 200, data, len, NULL);
    co_source_artifact a = {0};
    a.url = co_xasprintf("%s%s", test_httpd_url(f->srv), path);
    a.digest = sha256_digest(data, len);
    a.revision = co_xstrdup("main@sha1:2");
    return a;
}

static int pwned_found;

static int find_pwned(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    if (strstr(path + ftw->base, "pwned")) {
        pwned_found++;
    }
    return 0;
}

/* Names in @p dir other than "." and ".." (0 when it does not exist). */
static int count_names(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) {
        return 0;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) { // NOLINT(concurrency-mt-unsafe): own DIR
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            n++;
        }
    }
    closedir(d);
    return n;
}

static void test_source__hostile_artifacts_leave_nothing(void **state)
{
    fixture *f = *state;
    co_archive_limits lim = {.max_total = 4u << 20, .max_file = 1u << 20, .max_entries = 1000};
    co_sources *s = sources_with(f, "hostile", 0, &lim);
    char *abs_file = co_xasprintf("%s/pwned-absolute", f->dir);
    char *abs_link = co_xasprintf("%s", f->dir);
    const tab_entry traversal[] = {{TAB_FILE, 0, "ok.yaml", "x", 0},
                                   {TAB_FILE, 0, "../../../../pwned-traversal", "pwned", 0}};
    const tab_entry absolute[] = {{TAB_FILE, 0, abs_file, "pwned", 0}};
    const tab_entry link_up[] = {{TAB_SYMLINK, 0, "pwned-up", "../../../../..", 0}};
    const tab_entry link_abs[] = {{TAB_SYMLINK, 0, "pwned-abs", abs_link, 0},
                                  {TAB_FILE, 0, "pwned-abs/pwned-through", "pwned", 0}};
    const tab_entry through[] = {{TAB_DIR, 0, "real/", NULL, 0},
                                 {TAB_SYMLINK, 0, "alias", "real", 0},
                                 {TAB_FILE, 0, "alias/pwned-via-link", "pwned", 0}};
    const tab_entry device[] = {{TAB_CHARDEV, 0, "pwned-null", NULL, 0}};
    const tab_entry bomb[] = {{TAB_FILE, 0, "pwned-bomb", NULL, 64u << 20}};
    const tab_entry wide[] = {{TAB_FILE, 0, "a", NULL, 900u << 10},
                              {TAB_FILE, 0, "b", NULL, 900u << 10},
                              {TAB_FILE, 0, "c", NULL, 900u << 10},
                              {TAB_FILE, 0, "d", NULL, 900u << 10},
                              {TAB_FILE, 0, "e", NULL, 900u << 10}};
    static const struct {
        int code;
        const char *needle;
    } want[] = {
        {CO_EINVALID, "contains '..'"},
        {CO_EINVALID, "absolute paths are not allowed"},
        {CO_EINVALID, "points outside the archive"},
        {CO_EINVALID, "is an absolute path"},
        {CO_EINVALID, "is a symlink or not a directory"},
        {CO_EINVALID, "device files are not allowed"},
        {CO_ETOOBIG, "entry pwned-bomb: file larger than the limit of 1048576 bytes"},
        {CO_ETOOBIG, "archive expands to more than the limit"},
        {CO_ETOOBIG, "archive has more than 1000 entries"},
    };
    struct {
        const tab_entry *e;
        size_t n;
        int format;
    } cases[] = {
        {traversal, CO_ARRAY_SIZE(traversal), TAB_TAR_GZ},
        {absolute, 1, TAB_TAR},
        {link_up, 1, TAB_TAR_GZ},
        {link_abs, 2, TAB_TAR_GZ},
        {through, 3, TAB_TAR_GZ},
        {device, 1, TAB_TAR},
        {bomb, 1, TAB_TAR_GZ},
        {wide, 5, TAB_ZIP},
        {NULL, 0, TAB_TAR_GZ},
    };
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_GIT_REPOSITORY, NULL, "app");
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        size_t len = 0;
        /* the last case: a million empty files in a small tar.gz */
        void *data = cases[i].e ? tab_build(cases[i].format, cases[i].e, cases[i].n, &len)
                                : tab_build_many(1000000, &len);
        /* the URL's suffix names the format, as it would for a real artifact */
        const char *ext = cases[i].format == TAB_TAR   ? "tar"
                          : cases[i].format == TAB_ZIP ? "zip"
                                                       : "tgz";
        char *path = co_xasprintf("/hostile/%zu.%s", i, ext);
        co_source_artifact a = serve_bytes(f, path, data, len);
        co_source_tree *t = NULL;
        int rc = co_source_fetch(s, &r, "team", &a, &t, NULL);
        if (rc != want[i].code || !strstr(co_error_last(), want[i].needle)) {
            fail_msg("case %zu: got %d \"%s\", want %d \"%s\"", i, rc, co_error_last(),
                     want[i].code, want[i].needle);
        }
        assert_contains(co_error_last(), "extracting the artifact of ");
        assert_null(t);
        /* a refused artifact is not remembered as good: asking again downloads again */
        assert_co_fail_with(want[i].code, co_source_fetch(s, &r, "team", &a, &t, NULL));
        assert_int_equal(test_httpd_hits(f->srv, path), 2);
        co_source_artifact_dispose(&a);
        free(path);
        free(data);
    }
    /* nothing was published, nothing is left in the cache's work area, nothing got out */
    char *entries = co_xasprintf("%s/hostile/artifacts/entries", f->dir);
    char *tmp = co_xasprintf("%s/hostile/artifacts/tmp", f->dir);
    assert_int_equal(count_names(entries), 0);
    assert_int_equal(count_names(tmp), 0);
    pwned_found = 0;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): the test runs one thread here
    assert_int_equal(nftw(f->dir, find_pwned, 16, FTW_PHYS), 0);
    assert_int_equal(pwned_found, 0);
    char *up = co_xstrdup(tmp), *slash;
    while ((slash = strrchr(up, '/')) && slash != up) {
        *slash = '\0';
        char *p = co_xasprintf("%s/pwned-traversal", up);
        assert_int_equal(access(p, F_OK), -1);
        free(p);
    }
    free(up);
    /* a good artifact still works with the same handle */
    void *good;
    size_t glen;
    co_source_artifact a = serve(f, "/good.tgz", &good, &glen);
    co_source_tree *t = NULL;
    assert_co_pass(co_source_fetch(s, &r, "team", &a, &t, NULL));
    assert_int_equal(count_names(entries), 2); /* the tree and its .meta */
    co_source_tree_release(t);
    co_source_artifact_dispose(&a);
    free(good);
    free(entries);
    free(tmp);
    free(abs_file);
    free(abs_link);
    co_sources_free(s);
}

typedef struct racer {
    co_sources *s;
    const co_source_artifact *a;
    pthread_barrier_t *go;
    int rc;
    int downloaded;
    char *dir;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    co_source_spec ref = flux_ref(CO_SOURCE_FLUX_OCI_REPOSITORY, NULL, "app");
    co_source_tree *t = NULL;
    pthread_barrier_wait(r->go);
    r->rc = co_source_fetch(r->s, &ref, "team", r->a, &t, &r->downloaded);
    if (r->rc == 0) {
        r->dir = co_xstrdup(co_source_tree_dir(t));
        char *p = co_xasprintf("%s/app/cm.yaml", r->dir);
        /* the tree is complete for every caller, not only for the one that filled it */
        r->rc = access(p, R_OK) == 0 ? 0 : -1;
        free(p);
        co_source_tree_release(t);
    }
    return NULL;
}

static void test_source__concurrent_fetches_download_once(void **state)
{
    fixture *f = *state;
    void *data;
    size_t len;
    co_source_artifact a = serve(f, "/shared.tgz", &data, &len);
    enum { N = 6 };
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N);
    racer r[N];
    pthread_t t[N];
    for (size_t i = 0; i < N; i++) {
        r[i] = (racer){.s = f->s, .a = &a, .go = &go, .rc = -1, .downloaded = -1};
        assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    int downloads = 0;
    for (size_t i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(r[i].rc, 0);
        downloads += r[i].downloaded;
        assert_string_equal(r[i].dir, r[0].dir);
    }
    assert_int_equal(downloads, 1);
    assert_int_equal(test_httpd_hits(f->srv, "/shared.tgz"), 1);
    for (size_t i = 0; i < N; i++) {
        free(r[i].dir);
    }
    pthread_barrier_destroy(&go);
    co_source_artifact_dispose(&a);
    free(data);
}

/* A chart-like artifact whose README says @p text, served at @p path. */
static co_source_artifact serve_variant(fixture *f, const char *path, const char *text, void **data)
{
    const tab_entry e[] = {
        {TAB_FILE, 0, "app/kustomization.yaml", "resources: [cm.yaml]\n", 0},
        {TAB_FILE, 0, "app/cm.yaml", "kind: ConfigMap\n", 0},
        {TAB_FILE, 0, "README", text, 0},
    };
    size_t len;
    *data = tab_build(TAB_TAR_GZ, e, CO_ARRAY_SIZE(e), &len);
    return serve_bytes(f, path, *data, len);
}

typedef struct counted_fill {
    int calls;
    int fail;
} counted_fill;

static int fill_one_file(void *ctx, const char *dir, uint64_t *bytes)
{
    counted_fill *c = ctx;
    c->calls++;
    if (mkdir(dir, 0755) < 0) {
        return co_error_set(CO_ERROR, "mkdir");
    }
    if (c->fail) {
        return co_error_set(CO_EINVALID, "refused");
    }
    char *p = co_xasprintf("%s/f.yaml", dir);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs("x\n", fp);
    fclose(fp);
    free(p);
    *bytes = 2;
    return 0;
}

/* A tree written by the caller is cached under its id: filled once, then shared; a failed fill
 * leaves nothing behind and is tried again. */
static void test_source__materialise_fills_once_per_id(void **state)
{
    fixture *f = *state;
    counted_fill c = {0, 0};
    co_source_tree *t1 = NULL, *t2 = NULL, *t3 = NULL;
    int filled = -1;
    assert_co_pass(co_source_materialise(f->s, "blueprint\nabc", fill_one_file, &c, &t1, &filled));
    assert_int_equal(filled, 1);
    assert_co_pass(co_source_materialise(f->s, "blueprint\nabc", fill_one_file, &c, &t2, &filled));
    assert_int_equal(filled, 0);
    assert_int_equal(c.calls, 1);
    assert_string_equal(co_source_tree_dir(t1), co_source_tree_dir(t2));
    char *dir = NULL;
    assert_co_pass(co_source_tree_path(t1, "", &dir));
    char *file = co_xasprintf("%s/f.yaml", dir);
    assert_int_equal(access(file, F_OK), 0);
    free(file);
    free(dir);
    assert_co_fail_with(CO_EINVALID, co_source_tree_path(t1, "../..", &dir));
    co_source_tree_release(t1);
    co_source_tree_release(t2);

    counted_fill bad = {0, 1};
    assert_co_fail_with(
        CO_EINVALID, co_source_materialise(f->s, "blueprint\ndef", fill_one_file, &bad, &t3, NULL));
    bad.fail = 0;
    assert_co_pass(co_source_materialise(f->s, "blueprint\ndef", fill_one_file, &bad, &t3, NULL));
    assert_int_equal(bad.calls, 2);
    co_source_tree_release(t3);
}

static void test_source__cache_evicts_unused_artifacts(void **state)
{
    fixture *f = *state;
    /* one artifact (4 entries) fits, two do not */
    co_sources *s = sources_with(f, "small", 24u << 10, NULL);
    void *da, *db;
    co_source_artifact a = serve_variant(f, "/a.tgz", "a\n", &da);
    co_source_artifact b = serve_variant(f, "/b.tgz", "b\n", &db);
    co_source_spec r = flux_ref(CO_SOURCE_FLUX_BUCKET, NULL, "app");
    co_source_tree *ta = NULL, *tb = NULL;
    int dl = -1;
    assert_co_pass(co_source_fetch(s, &r, "team", &a, &ta, &dl));
    assert_int_equal(dl, 1);
    co_source_tree_release(ta);
    assert_co_pass(co_source_fetch(s, &r, "team", &b, &tb, &dl));
    assert_int_equal(dl, 1);
    co_source_tree_release(tb);
    /* a was least recently used and nobody held it: it is gone, and comes back by download */
    assert_co_pass(co_source_fetch(s, &r, "team", &a, &ta, &dl));
    assert_int_equal(dl, 1);
    assert_int_equal(test_httpd_hits(f->srv, "/a.tgz"), 2);
    /* while a is held, fetching b does not take a's tree away */
    char *readme = co_xasprintf("%s/README", co_source_tree_dir(ta));
    assert_co_pass(co_source_fetch(s, &r, "team", &b, &tb, &dl));
    assert_int_equal(dl, 1);
    char *text = co_test_read_file(readme, NULL);
    assert_string_equal(text, "a\n");
    free(text);
    co_source_tree *again = NULL;
    assert_co_pass(co_source_fetch(s, &r, "team", &a, &again, &dl));
    assert_int_equal(dl, 0);
    assert_int_equal(test_httpd_hits(f->srv, "/a.tgz"), 2);
    co_source_tree_release(again);
    co_source_tree_release(ta);
    co_source_tree_release(tb);
    free(readme);
    co_source_artifact_dispose(&a);
    co_source_artifact_dispose(&b);
    free(da);
    free(db);
    co_sources_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_source__parses_every_variant),
        cmocka_unit_test(test_source__parse_errors_name_the_field),
        cmocka_unit_test(test_source__model_ref_matches_json_parse),
        cmocka_unit_test(test_source__digests_of_tricky_strings_are_pinned),
        cmocka_unit_test(test_source__digest_writes_annotation_values_past_a_nul),
        cmocka_unit_test_setup_teardown(test_source__digests_match_go, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source__materialise_fills_once_per_id, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_source__flux_ready_source_resolves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source__flux_retriable_conditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source__works_without_flux_crds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source__blueprint_is_parsed_and_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_source__falls_back_to_v1beta2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source__other_cluster_errors_are_not_retriable, setup,
                                        teardown),
        cmocka_unit_test(test_source__pins),
        cmocka_unit_test(test_source__requeue_filter),
        cmocka_unit_test_setup_teardown(test_source__fetch_downloads_once_and_resolves_paths, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_source__fetch_verifies_and_never_caches_bad_downloads,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_source__hostile_artifacts_leave_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_source__concurrent_fetches_download_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_source__cache_evicts_unused_artifacts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_source__http_repository, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source__http_repository_formats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source__git_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source__poller_http_leader_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source__poller_shares_a_poll_per_source, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_source__poller_git_interval_and_new_commits, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("source", tests, NULL, NULL);
}
