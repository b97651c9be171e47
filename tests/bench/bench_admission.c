/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Benchmark: the webhook's pure request handler (wh_http_handle with the real admission and
 * conversion handlers over an empty cluster state, as the daemon runs with
 * --watch-cluster=false) on the AdmissionReview fixtures, bytes in, bytes out, no sockets.
 * Prints ns/request per fixture and route and, as references measured in the same run, the
 * same handler building every member of the review (wh_handlers.unread unset) and the bare
 * strict JSON parse and release of the same body (the ratio is handler over full handler).
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

#include "co/common.h"
#include "co/json.h"
#include "co/log.h"
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
    wh_state_free(state);
    return 0;
}
