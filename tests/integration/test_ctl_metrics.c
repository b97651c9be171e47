/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The controller's /metrics against the real kube-apiserver, read as Prometheus reads it: the
 * manager runs in-process with the test source and applier, and its scrapes, taken before and
 * between reconciles, are parsed with the rules of the text exposition format 0.0.4: one TYPE
 * line per family, before its samples; a family's samples together; valid names, labels and
 * values; histograms with cumulative _bucket series ending in le="+Inf", _sum and _count;
 * counters never negative and never decreasing from one scrape to the next; names ending in
 * _total are counters. The families and types of component-operator-runtime
 * (internal/metrics/metrics.go) and controller-runtime are checked one by one.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "co/util/buf.h"
#include "co/kube/kube_client.h"
#include "controller/ctl_manager.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define WAIT_MS 90000L

static co_kube_client *admin;
static char *ns;
static ctl_manager *mgr;
static char *srcdir;
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;

#define SRC "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    ns = co_test_kube_namespace(admin, "ctl-metrics-");
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    for (int i = 0; i < 2; i++) {
        char *path = co_xasprintf("%s/m%d/cm.yaml", srcdir, i);
        char *cm = co_xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                                "{\"name\":\"metrics-%d\"},\"data\":{\"k\":\"v\"}}\n",
                                i);
        co_test_write_file(path, cm, strlen(cm));
        free(cm);
        free(path);
    }
    src_ops = ctl_test_source_ops();
    app_ops = ctl_test_apply_ops();
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.metrics_addr = "127.0.0.1:0";
    o.probe_addr = "127.0.0.1:0";
    o.workers = 2;
    const char *nspace = ns;
    o.namespaces = &nspace;
    o.nnamespaces = 1;
    o.source = &src_ops;
    o.apply = &app_ops;
    assert_co_pass(ctl_manager_new(&mgr, &o));
    assert_co_pass(ctl_manager_start(mgr));
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_manager_free(mgr);
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    free(ns);
    curl_global_cleanup();
    return 0;
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    return co_buf_put(ud, p, sz * n) == 0 ? sz * n : 0;
}

static char *scrape(void)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", ctl_manager_metrics_port(mgr));
    co_buf body = CO_BUF_INIT(64 << 20);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    long code = 0;
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    assert_int_equal(code, 200);
    return co_buf_take(&body, NULL);
}

/* ---- a text-format reader ------------------------------------------------------------------ */

typedef struct family {
    char name[200];
    char type[16]; /* "" until its TYPE line */
    int help_lines, type_lines, samples;
    int closed; /* another family's line came after its samples */
} family;

typedef struct sample {
    char key[1024]; /* name{labels as written} */
    char family[200];
    char type[16];
    double value;
} sample;

typedef struct scrape_t {
    family fams[256];
    size_t nfams;
    sample *samples;
    size_t nsamples;
} scrape_t;

static family *find_fam(scrape_t *s, const char *name)
{
    for (size_t i = 0; i < s->nfams; i++) {
        if (strcmp(s->fams[i].name, name) == 0) {
            return &s->fams[i];
        }
    }
    return NULL;
}

static family *fam(scrape_t *s, const char *name)
{
    family *f = find_fam(s, name);
    if (f) {
        return f;
    }
    if (s->nfams == CO_ARRAY_SIZE(s->fams)) {
        fail_msg("too many metric families");
    }
    f = &s->fams[s->nfams++];
    memset(f, 0, sizeof(*f));
    snprintf(f->name, sizeof(f->name), "%s", name);
    return f;
}

static int name_ok(const char *p, size_t n, int colon)
{
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        int alpha =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) {
            return 0;
        }
    }
    return n > 0;
}

static int strip_suffix(char *dst, size_t cap, const char *name, const char *suffix)
{
    size_t n = strlen(name), k = strlen(suffix);
    if (n <= k || strcmp(name + n - k, suffix) != 0) {
        return 0;
    }
    snprintf(dst, cap, "%.*s", (int)(n - k), name);
    return 1;
}

/* Checks the labels at @p p ("{...}"): names, quoting and escapes. @return the end or NULL. */
static const char *labels_end(const char *p, const char *line, char *le, size_t lecap)
{
    if (*p != '{') {
        return p;
    }
    p++;
    while (*p != '}') {
        const char *n = p;
        while (*p && *p != '=') {
            p++;
        }
        if (!name_ok(n, (size_t)(p - n), 0) || p[0] != '=' || p[1] != '"') {
            fail_msg("bad label in: %s", line);
        }
        int is_le = p - n == 2 && strncmp(n, "le", 2) == 0;
        p += 2;
        const char *v = p;
        while (*p && *p != '"') {
            if (*p == '\\') {
                if (p[1] != '\\' && p[1] != '"' && p[1] != 'n') {
                    fail_msg("bad escape in: %s", line);
                }
                p++;
            }
            p++;
        }
        if (*p != '"') {
            fail_msg("unterminated label value in: %s", line);
        }
        if (is_le && le) {
            snprintf(le, lecap, "%.*s", (int)(p - v), v);
        }
        p++;
        if (*p == ',') {
            p++;
        } else if (*p != '}') {
            fail_msg("bad label list in: %s", line);
        }
    }
    return p + 1;
}

static double parse_value(const char *v, const char *line)
{
    if (strcmp(v, "+Inf") == 0) {
        return INFINITY;
    }
    if (strcmp(v, "-Inf") == 0) {
        return -INFINITY;
    }
    if (strcmp(v, "NaN") == 0) {
        return NAN;
    }
    char *end = NULL;
    double d = strtod(v, &end);
    if (end == v || (*end && *end != ' ')) {
        fail_msg("bad sample value in: %s", line);
    }
    return d;
}

static family *current;

/* Reads one exposition and checks every rule that holds within one scrape. */
static void parse(scrape_t *s, char *text)
{
    memset(s, 0, sizeof(*s));
    current = NULL;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') {
            char kw[8] = "", name[200] = "", rest[16] = "";
            if (sscanf(line, "# %7s %199s %15s", kw, name, rest) < 2 ||
                (strcmp(kw, "HELP") != 0 && strcmp(kw, "TYPE") != 0)) {
                continue; /* a comment */
            }
            family *f = fam(s, name);
            if (f->closed || (current && current != f && f->samples)) {
                fail_msg("family %s is not together: %s", name, line);
            }
            if (current && current != f) {
                current->closed = 1;
            }
            current = f;
            if (strcmp(kw, "HELP") == 0) {
                f->help_lines++;
                assert_int_equal(f->help_lines, 1);
                continue;
            }
            f->type_lines++;
            if (f->type_lines != 1 || f->samples) {
                fail_msg("family %s: TYPE repeated or after samples", name);
            }
            if (strcmp(rest, "counter") && strcmp(rest, "gauge") && strcmp(rest, "histogram") &&
                strcmp(rest, "summary") && strcmp(rest, "untyped")) {
                fail_msg("family %s: unknown type %s", name, rest);
            }
            snprintf(f->type, sizeof(f->type), "%s", rest);
            continue;
        }
        const char *p = line;
        while (*p && *p != '{' && *p != ' ') {
            p++;
        }
        char name[200];
        snprintf(name, sizeof(name), "%.*s", (int)(p - line), line);
        if (!name_ok(name, strlen(name), 1)) {
            fail_msg("bad metric name in: %s", line);
        }
        char le[64] = "";
        const char *end = labels_end(p, line, le, sizeof(le));
        if (*end != ' ') {
            fail_msg("no value in: %s", line);
        }
        double v = parse_value(end + 1, line);
        /* the family a sample belongs to: itself, or a histogram's base name */
        char base[200];
        family *f = find_fam(s, name);
        if (!f && (strip_suffix(base, sizeof(base), name, "_bucket") ||
                   strip_suffix(base, sizeof(base), name, "_sum") ||
                   strip_suffix(base, sizeof(base), name, "_count"))) {
            family *h = find_fam(s, base);
            if (h && (strcmp(h->type, "histogram") == 0 || strcmp(h->type, "summary") == 0)) {
                f = h;
            }
        }
        if (!f || !f->type[0]) {
            fail_msg("sample before (or without) a TYPE line: %s", line);
            return;
        }
        if (f != current || f->closed) {
            fail_msg("family %s is not together: %s", f->name, line);
        }
        f->samples++;
        if (strcmp(f->type, "histogram") == 0 && strcmp(name, f->name) == 0) {
            fail_msg("histogram %s has a bare sample: %s", f->name, line);
        }
        if (strcmp(f->type, "counter") == 0 && (isnan(v) || v < 0)) {
            fail_msg("counter below zero: %s", line);
        }
        s->samples = co_xreallocarray(s->samples, s->nsamples + 1, sizeof(sample));
        sample *sm = &s->samples[s->nsamples++];
        snprintf(sm->key, sizeof(sm->key), "%.*s", (int)(end - line), line);
        snprintf(sm->family, sizeof(sm->family), "%s", f->name);
        snprintf(sm->type, sizeof(sm->type), "%s", f->type);
        sm->value = v;
    }
}

static const sample *find_sample(const scrape_t *s, const char *key)
{
    for (size_t i = 0; i < s->nsamples; i++) {
        if (strcmp(s->samples[i].key, key) == 0) {
            return &s->samples[i];
        }
    }
    return NULL;
}

/* Histograms: per series, cumulative buckets ending in le="+Inf", which equals _count. */
static void check_histograms(const scrape_t *s)
{
    for (size_t i = 0; i < s->nsamples; i++) {
        const sample *sm = &s->samples[i];
        if (strcmp(sm->type, "histogram") != 0) {
            continue;
        }
        char count_name[256];
        snprintf(count_name, sizeof(count_name), "%s_count", sm->family);
        if (strncmp(sm->key, count_name, strlen(count_name)) != 0) {
            continue;
        }
        const char *labels = sm->key + strlen(count_name); /* "" or "{...}" */
        char key[1200];
        snprintf(key, sizeof(key), "%s_sum%s", sm->family, labels);
        assert_non_null(find_sample(s, key));
        if (labels[0]) {
            snprintf(key, sizeof(key), "%s_bucket%.*s,le=\"+Inf\"}", sm->family,
                     (int)strlen(labels) - 1, labels);
        } else {
            snprintf(key, sizeof(key), "%s_bucket{le=\"+Inf\"}", sm->family);
        }
        const sample *inf = find_sample(s, key);
        if (!inf || inf->value != sm->value) {
            fail_msg("%s: no le=\"+Inf\" bucket equal to _count", sm->key);
        }
        /* the buckets of the series, in order, never decrease */
        double last = 0;
        char prefix[1200];
        snprintf(prefix, sizeof(prefix), "%s_bucket%.*s", sm->family,
                 labels[0] ? (int)strlen(labels) - 1 : 0, labels);
        for (size_t j = 0; j < s->nsamples; j++) {
            if (strncmp(s->samples[j].key, prefix, strlen(prefix)) == 0 &&
                strstr(s->samples[j].key, "le=\"")) {
                assert_true(s->samples[j].value >= last);
                last = s->samples[j].value;
            }
        }
    }
}

/* component-operator-runtime's gauges whose names end in _total (internal/metrics/metrics.go);
 * everything else named _total must be a counter. */
static int upstream_total_gauge(const char *name)
{
    return strcmp(name, "component_operator_runtime_active_clients_total") == 0 ||
           strcmp(name, "component_operator_runtime_dependents_total") == 0 ||
           strcmp(name, "component_operator_runtime_unready_dependents_total") == 0;
}

static void check_scrape(const scrape_t *s)
{
    for (size_t i = 0; i < s->nfams; i++) {
        const family *f = &s->fams[i];
        assert_int_equal(f->type_lines, 1);
        size_t n = strlen(f->name);
        if (n > 6 && strcmp(f->name + n - 6, "_total") == 0 && !upstream_total_gauge(f->name) &&
            strcmp(f->type, "counter") != 0) {
            fail_msg("%s ends in _total but is a %s", f->name, f->type);
        }
    }
    check_histograms(s);
    static const struct {
        const char *name, *type;
    } expected[] = {
        {"component_operator_runtime_reconcile_total", "counter"},
        {"component_operator_runtime_reconcile_errors_total", "counter"},
        {"component_operator_runtime_requests_total", "counter"},
        {"component_operator_runtime_created_clients_total", "counter"},
        {"component_operator_runtime_active_clients_total", "gauge"},
        {"component_operator_runtime_component_state", "gauge"},
        {"component_operator_runtime_dependents_total", "gauge"},
        {"component_operator_runtime_unready_dependents_total", "gauge"},
        {"controller_runtime_reconcile_total", "counter"},
        {"controller_runtime_reconcile_errors_total", "counter"},
        {"controller_runtime_reconcile_time_seconds", "histogram"},
        {"controller_runtime_max_concurrent_reconciles", "gauge"},
        {"controller_runtime_active_workers", "gauge"},
        {"workqueue_depth", "gauge"},
        {"workqueue_adds_total", "counter"},
        {"workqueue_retries_total", "counter"},
        {"workqueue_queue_duration_seconds", "histogram"},
        {"workqueue_work_duration_seconds", "histogram"},
        {"workqueue_unfinished_work_seconds", "gauge"},
        {"workqueue_longest_running_processor_seconds", "gauge"},
        {"rest_client_requests_total", "counter"},
        {"leader_election_master_status", "gauge"},
        {"process_cpu_seconds_total", "counter"},
        {"process_resident_memory_bytes", "gauge"},
        {"process_start_time_seconds", "gauge"},
        {"process_open_fds", "gauge"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(expected); i++) {
        const family *f = NULL;
        for (size_t j = 0; j < s->nfams && !f; j++) {
            if (strcmp(s->fams[j].name, expected[i].name) == 0) {
                f = &s->fams[j];
            }
        }
        if (!f || strcmp(f->type, expected[i].type) != 0) {
            fail_msg("%s: want a %s, got %s", expected[i].name, expected[i].type,
                     f ? f->type : "nothing");
        }
    }
}

/* Every counter series (histogram series too) of @p a is in @p b and did not decrease. */
static void check_monotonic(const scrape_t *a, const scrape_t *b)
{
    for (size_t i = 0; i < a->nsamples; i++) {
        const sample *x = &a->samples[i];
        if (strcmp(x->type, "counter") != 0 && strcmp(x->type, "histogram") != 0) {
            continue;
        }
        const sample *y = find_sample(b, x->key);
        if (!y) {
            fail_msg("counter series %s disappeared", x->key);
            return;
        }
        if (y->value < x->value) {
            fail_msg("counter %s went from %g to %g", x->key, x->value, y->value);
        }
    }
}

static double value_of(const scrape_t *s, const char *key)
{
    const sample *sm = find_sample(s, key);
    return sm ? sm->value : -1;
}

static void test_ctl_metrics__exposition_follows_the_text_format(void **state)
{
    (void)state;
    scrape_t *scrapes = co_xcalloc(3, sizeof(scrape_t));
    char *text = scrape();
    parse(&scrapes[0], text);
    free(text);
    check_scrape(&scrapes[0]);

    ctl_test_create_component(admin, ns, "m0", "{" SRC ",\"path\":\"m0\"}");
    ctl_test_create_component(admin, ns, "m1", "{" SRC ",\"path\":\"m1\"}");
    ctl_test_wait_state(admin, ns, "m0", "Ready", "Ready", WAIT_MS);
    ctl_test_wait_state(admin, ns, "m1", "Ready", "Ready", WAIT_MS);
    text = scrape();
    parse(&scrapes[1], text);
    free(text);
    check_scrape(&scrapes[1]);
    check_monotonic(&scrapes[0], &scrapes[1]);

    /* the reconciles between the scrapes show */
    const char *adds = "workqueue_adds_total{name=\"component\",controller=\"component\"}";
    assert_true(value_of(&scrapes[1], adds) > value_of(&scrapes[0], adds));
    assert_true(value_of(&scrapes[1], adds) >= 2); /* two Components, one pass each at least */
    const char *rec = "component_operator_runtime_reconcile_total{controller=\"component\"}";
    assert_true(value_of(&scrapes[1], rec) >= 2);
    /* client-go's request counter, by code, host and method */
    int gets = 0;
    for (size_t i = 0; i < scrapes[1].nsamples; i++) {
        const char *k = scrapes[1].samples[i].key;
        gets += strncmp(k, "rest_client_requests_total{code=\"200\",host=\"", 44) == 0 &&
                strstr(k, "method=\"GET\"}") != NULL;
    }
    assert_int_equal(gets, 1);
    char *state_key = co_xasprintf(
        "component_operator_runtime_component_state{controller=\"component\",group=\"core.cs."
        "sap.com\",kind=\"Component\",namespace=\"%s\",name=\"m0\",state=\"Ready\"}",
        ns);
    assert_true(value_of(&scrapes[1], state_key) == 1.0);
    free(state_key);
    assert_true(value_of(&scrapes[1], "workqueue_queue_duration_seconds_count{name=\"component\","
                                      "controller=\"component\"}") >= 2);

    /* more reconciles, then the third scrape */
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, "m1"};
    struct json_object *patch = co_test_json("{\"metadata\":{\"annotations\":{\"touch\":\"1\"}}}");
    assert_co_pass(co_kube_patch(NULL, admin, &ref, CO_KUBE_PATCH_MERGE, patch, NULL));
    json_object_put(patch);
    co_kube_ref ref0 = {"core.cs.sap.com/v1alpha1", "Component", ns, "m0"};
    assert_co_pass(co_kube_delete(NULL, admin, &ref0, NULL));
    ctl_test_wait_gone(admin, ns, "m0", WAIT_MS);
    ctl_test_wait_state(admin, ns, "m1", "Ready", "Ready", WAIT_MS);
    text = scrape();
    parse(&scrapes[2], text);
    free(text);
    check_scrape(&scrapes[2]);
    check_monotonic(&scrapes[1], &scrapes[2]);
    assert_true(value_of(&scrapes[2], rec) > value_of(&scrapes[1], rec));

    co_kube_ref ref1 = {"core.cs.sap.com/v1alpha1", "Component", ns, "m1"};
    assert_co_pass(co_kube_delete(NULL, admin, &ref1, NULL));
    ctl_test_wait_gone(admin, ns, "m1", WAIT_MS);
    for (int i = 0; i < 3; i++) {
        free(scrapes[i].samples);
    }
    free(scrapes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_metrics__exposition_follows_the_text_format),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
