/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Benchmark: the webhook's pure request handler (wh_http_handle with the real admission and
 * conversion handlers over an empty cluster state, as the daemon runs with
 * --watch-cluster=false) on the AdmissionReview fixtures, bytes in, bytes out, no sockets.
 * Prints ns/request per fixture and route and, as references measured in the same run, the
 * same handler building every member of the review (wh_handlers.unread unset) and the bare
 * strict JSON parse and release of the same body (the ratio is handler over full handler).
 *
 * Then reviews of a Component whose spec.values has 49,152 keys: keys chosen to start probing
 * at one slot of the unkeyed (FNV-1a) duplicate-key table json.c once had, and ordinary keys of
 * the same length; it prints the fastest of several requests of each, taken in turns, and the
 * ratio, colliding over ordinary (near 1 when no one can choose keys that collide).
 *
 * With -n N it runs one case exactly N times instead (the first, or the one named by
 * -c FIXTURE:ROUTE), for instruction counts; every request goes through handle_one(), so
 *   valgrind --tool=callgrind --toggle-collect=handle_one bench_admission -n 2000
 * collects exactly the requests, and the total Ir divided by N is the cost of one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "co/util/common.h"
#include "co/json/json.h"
#include "co/util/log.h"
#include "tests/support/hash_flood.h"
#include "tests/support/test_support.h"
#include "webhook/wh_admission.h"
#include "webhook/wh_http.h"
#include "webhook/wh_state.h"

typedef struct bench_case {
    const char *name;    /* short name for the output and -c */
    const char *fixture; /* under tests/fixtures */
    const char *path;    /* route */
} bench_case;

static const bench_case cases[] = {
    {"create:validate", "webhook/admission-create-v1alpha1.json", "/validate/v1alpha1/components"},
    {"create:mutate", "webhook/admission-create-v1alpha1.json", "/mutate/v1alpha1/components"},
    {"update:validate", "webhook/admission-update-v1alpha1.json", "/validate/v1alpha1/components"},
    {"update:mutate", "webhook/admission-update-v1alpha1.json", "/mutate/v1alpha1/components"},
    {"convert", "webhook/conversion-v1alpha1-to-v1beta1.json", "/convert"},
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One request, start to end; kept out of line so that callgrind can collect exactly it. */
__attribute__((noinline)) static size_t handle_one(const wh_handlers *h, const wh_http_request *req)
{
    wh_http_response r;
    wh_http_handle(&r, h, req);
    size_t len = r.body_len;
    if (r.status != 200) {
        len = 0;
    }
    wh_http_response_dispose(&r);
    return len;
}

__attribute__((noinline)) static size_t parse_one(const char *body, size_t len)
{
    struct json_object *v = NULL;
    if (co_json_parse(&v, body, len) < 0) {
        return 0;
    }
    json_object_put(v);
    return len;
}

/* Mean seconds per call of @p what (0 handler, 1 parse) over at least @p min_seconds. */
static double time_case(const wh_handlers *h, const wh_http_request *req, int what, double min_s)
{
    size_t sink = 0;
    long n = 0;
    double t0 = now(), el = 0;
    do {
        for (int i = 0; i < 64; i++) {
            sink += what == 0 ? handle_one(h, req) : parse_one(req->body, req->body_len);
        }
        n += 64;
        el = now() - t0;
    } while (el < min_s);
    if (sink == 0) {
        fprintf(stderr, "bench_admission: %s was refused\n", req->path);
    }
    return el / (double)n;
}

/* ---- hash flooding ------------------------------------------------------------------------ */

#define FLOOD_KEYS 49152

/* A review of a Component with @p values as spec.values: a CREATE, or an UPDATE that leaves
 * spec as it was. */
static char *values_review(int update, const char *values)
{
    const char *obj = "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
                      "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"},\"spec\":{\"sourceRef\":"
                      "{\"httpRepository\":{\"url\":\"https://example.com/a.tgz\"}},\"values\":";
    char *old = update ? co_xasprintf(",\"oldObject\":%s%s}}", obj, values) : co_xstrdup("");
    char *review = co_xasprintf(
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"u\",\"operation\":\"%s\",\"namespace\":\"ns\",\"name\":\"c\","
        "\"kind\":{\"group\":\"core.cs.sap.com\",\"version\":\"v1alpha1\",\"kind\":\"Component\"},"
        "\"userInfo\":{\"username\":\"alice\"},\"object\":%s%s}}%s}}",
        update ? "UPDATE" : "CREATE", obj, values, old);
    free(old);
    return review;
}

/*
 * The fastest of at least five requests of each of @p req[0] and @p req[1], and of as many as
 * fit in a second, in seconds, after one of each to warm up. The two alternate, so that a
 * machine busy with other work slows both alike.
 */
static void fastest_pair(double best[2], const wh_handlers *h, const wh_http_request req[2])
{
    for (int k = 0; k < 2; k++) {
        if (!handle_one(h, &req[k])) {
            fprintf(stderr, "bench_admission: a review of many values was refused\n");
        }
    }
    double start = now();
    for (int i = 0; i < 5 || now() - start < 1.0; i++) {
        for (int k = 0; k < 2; k++) {
            double t0 = now();
            (void)handle_one(h, &req[k]);
            double el = now() - t0;
            if (i == 0 || el < best[k]) {
                best[k] = el;
            }
        }
    }
}

static void bench_flood(const wh_handlers *h)
{
    static const struct {
        const char *name, *path;
        int update;
    } routes[] = {
        {"create:validate", "/validate/v1alpha1/components", 0},
        {"create:mutate", "/mutate/v1alpha1/components", 0},
        {"update:validate", "/validate/v1alpha1/components", 1},
    };
    co_test_names keys[2] = {co_test_ordinary_keys(FLOOD_KEYS, ""),
                             co_test_flood_keys(CO_TEST_FNV_BASIS, FLOOD_KEYS,
                                                co_test_old_dedupe_slots(FLOOD_KEYS), "")};
    char *values[2] = {co_test_object_of(&keys[0]), co_test_object_of(&keys[1])};
    double sum[2] = {0, 0};
    for (size_t r = 0; r < CO_ARRAY_SIZE(routes); r++) {
        double t[2];
        char *body[2];
        wh_http_request req[2];
        for (int k = 0; k < 2; k++) {
            body[k] = values_review(routes[r].update, values[k]);
            req[k] = (wh_http_request){"POST", routes[r].path, "application/json", body[k],
                                       strlen(body[k])};
        }
        fastest_pair(t, h, req);
        size_t len = req[0].body_len;
        free(body[0]);
        free(body[1]);
        printf("%-16s %zu values, %7zu bytes  ordinary keys %8.2f ms  colliding keys %8.2f ms  "
               "(%.2fx)\n",
               routes[r].name, (size_t)FLOOD_KEYS, len, t[0] * 1e3, t[1] * 1e3, t[1] / t[0]);
        sum[0] += t[0];
        sum[1] += t[1];
    }
    printf("ratio: colliding/ordinary keys %.2f (all routes)\n", sum[1] / sum[0]);
    for (int k = 0; k < 2; k++) {
        free(values[k]);
        co_test_names_free(&keys[k]);
    }
}

static const bench_case *find_case(const char *name)
{
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        if (!strcmp(cases[i].name, name)) {
            return &cases[i];
        }
    }
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_admission [-n N [-c CASE]]\ncases:");
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        fprintf(stderr, " %s", cases[i].name);
    }
    fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
    long fixed = 0;
    const bench_case *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            fixed = strtol(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "-c") && i + 1 < argc && (only = find_case(argv[++i]))) {
            continue;
        } else {
            usage();
            return 2;
        }
    }
    co_log_setup("bench", CO_LOG_ERROR, CO_LOG_FORMAT_TEXT);
    wh_state *state = NULL;
    wh_state_new(&state, 10000);
    wh_handlers h = wh_admission_handlers(state);

    if (fixed > 0) {
        const bench_case *c = only ? only : &cases[0];
        size_t len = 0;
        char *body = co_test_fixture(c->fixture, &len);
        wh_http_request req = {"POST", c->path, "application/json", body, len};
        size_t sink = 0;
        double t0 = now();
        for (long i = 0; i < fixed; i++) {
            sink += handle_one(&h, &req);
        }
        double el = now() - t0;
        printf("%s (%s, %zu bytes): %ld requests, %.0f ns/request%s\n", c->name, c->fixture, len,
               fixed, el * 1e9 / (double)fixed, sink ? "" : " (refused)");
        free(body);
        wh_state_free(state);
        return 0;
    }

    wh_handlers full = h;
    full.unread = NULL;
    double sum_handler = 0, sum_full = 0;
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        const bench_case *c = &cases[i];
        size_t len = 0;
        char *body = co_test_fixture(c->fixture, &len);
        wh_http_request req = {"POST", c->path, "application/json", body, len};
        (void)time_case(&h, &req, 0, 0.02); /* warm up */
        double th = time_case(&h, &req, 0, 0.2);
        double tf = time_case(&full, &req, 0, 0.2);
        double tp = time_case(&h, &req, 1, 0.1);
        sum_handler += th;
        sum_full += tf;
        printf("%-16s %6zu bytes  handler %8.0f ns/request  full tree %8.0f ns  parse %8.0f ns\n",
               c->name, len, th * 1e9, tf * 1e9, tp * 1e9);
        free(body);
    }
    printf("ratio: handler/full-tree handler %.2f (all cases)\n", sum_handler / sum_full);
    bench_flood(&h);
    wh_state_free(state);
    return 0;
}
