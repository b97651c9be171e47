/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Benchmark: rendering a realistic chart (tests/oracle/gotemplate/cases/chart.txt: helpers
 * with include, toYaml, nindent, default, printf, range over maps and lists) many times
 * in-process, with our engine and with Go's text/template + sprig (the differential oracle's
 * -bench mode, measured in the same run). The template set is parsed once; each of our
 * renders also converts the values from json-c (Go decodes them once), which favours Go.
 * Prints wall-clock and CPU microseconds per render for both (CPU time counts every thread of
 * the process, Go's garbage collector included, and is the steadier figure on a busy
 * machine), the ratios, and whether the outputs are identical.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "co/util/buf.h"
#include "co/util/common.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/render/template.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    co_buf b = CO_BUF_INIT(64 << 20);
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (co_buf_put(&b, chunk, n) < 0) {
            break;
        }
    }
    fclose(f);
    return co_buf_take(&b, len);
}

/* The sections of the first case of a case file (format: tests/oracle/gotemplate/README.md). */
typedef struct bcase {
    co_buf define;
    co_buf data;
    co_buf tmpl;
} bcase;

static bool parse_case(bcase *c, const char *text)
{
    co_buf *cur = NULL;
    const char *p = text;
    for (;;) {
        /* the pieces between newlines; the newline that ends the file ends the last piece (as
         * the oracle splits them) */
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n >= 4 && strncmp(p, "### ", 4) == 0) {
            if (cur) {
                break; /* only the first case */
            }
        } else if (n >= 4 && strncmp(p, "--- ", 4) == 0) {
            cur = strncmp(p + 4, "define", 6) == 0     ? &c->define
                  : strncmp(p + 4, "data", 4) == 0     ? &c->data
                  : strncmp(p + 4, "template", 8) == 0 ? &c->tmpl
                                                       : NULL;
        } else if (cur) {
            if ((cur->len > 0 && co_buf_putc(cur, '\n') < 0) || co_buf_put(cur, p, n) < 0) {
                return false;
            }
        }
        if (!nl || nl[1] == '\0') {
            break;
        }
        p = nl + 1;
    }
    return true;
}

/* Runs @cmd and returns its standard output (NULL when it fails). */
static char *run(const char *cmd)
{
    FILE *f = popen(cmd, "r");
    if (!f) {
        return NULL;
    }
    co_buf b = CO_BUF_INIT(64 << 20);
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (co_buf_put(&b, chunk, n) < 0) {
            break;
        }
    }
    int st = pclose(f);
    if (st != 0) {
        co_buf_dispose(&b);
        return NULL;
    }
    size_t len;
    char *s = co_buf_take(&b, &len);
    return s ? s : co_xstrdup("");
}

int main(void)
{
    const char *file = "tests/oracle/gotemplate/cases/chart.txt";
    size_t len;
    char *text = read_all(file, &len);
    if (!text) {
        fprintf(stderr, "bench_template: cannot read %s (run from the repository root)\n", file);
        return 1;
    }
    bcase c = {CO_BUF_INIT(1 << 20), CO_BUF_INIT(1 << 20), CO_BUF_INIT(1 << 20)};
    if (!parse_case(&c, text)) {
        fprintf(stderr, "bench_template: %s is too large\n", file);
        return 1;
    }
    struct json_object *data = NULL;
    if (co_json_parse(&data, c.data.ptr, c.data.len) < 0) {
        fprintf(stderr, "bench_template: bad data: %s\n", co_error_last());
        return 1;
    }

    co_template_funcs *funcs = NULL;
    co_template_funcs_new(&funcs, CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_RUNTIME);
    co_template_options opts = {.name = "chart"};
    co_template_set *set = NULL;
    co_template_set_new(&set, funcs, &opts);
    if (co_template_set_parse(set, "define1", c.define.ptr ? c.define.ptr : "", c.define.len) < 0 ||
        co_template_set_parse(set, "chart", c.tmpl.ptr ? c.tmpl.ptr : "", c.tmpl.len) < 0) {
        fprintf(stderr, "bench_template: parse: %s\n", co_error_last());
        return 1;
    }

    /* ours: at least 0.5 s of renders */
    char *ours = NULL;
    size_t ours_len = 0;
    int n = 0;
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    double t0 = now();
    double t = 0;
    do {
        free(ours);
        ours = NULL;
        if (co_template_render(set, "chart", data, CO_TEMPLATE_NUMBERS_FLOAT64, NULL, &ours,
                               &ours_len) < 0) {
            fprintf(stderr, "bench_template: render: %s\n", co_error_last());
            return 1;
        }
        n++;
        t = now() - t0;
    } while (t < 0.5);
    double ours_us = t / n * 1e6;
    double ours_cpu_us = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / n * 1e6;
    printf("template chart: ours %.1f us/render wall, %.1f us/render cpu (%d renders, %zu bytes)\n",
           ours_us, ours_cpu_us, n, ours_len);

    /* Go, the same number of renders in its own process */
    char *oracle = run("tests/oracle/gotemplate/build.sh 2>/dev/null");
    double go_us = -1;
    double go_cpu_us = -1;
    bool same = false;
    if (oracle && oracle[0]) {
        oracle[strcspn(oracle, "\n")] = '\0';
        char cmd[4096];
        snprintf(cmd, sizeof(cmd), "%s -bench %d '%s'", oracle, n, file);
        char *res = run(cmd);
        /* "BENCH chart WALL-NS CPU-NS BYTES" */
        if (res && strncmp(res, "BENCH chart ", 12) == 0) {
            char *end = NULL;
            long long ns = strtoll(res + 12, &end, 10);
            long long cpu_ns = strtoll(end, NULL, 10);
            go_us = (double)ns / 1e3;
            go_cpu_us = (double)cpu_ns / 1e3;
        }
        free(res);
        snprintf(cmd, sizeof(cmd), "%s '%s'", oracle, file);
        char *out = run(cmd);
        /* "### chart\nOK <len>\n<output>\n" */
        const char *ok = out ? strstr(out, "\nOK ") : NULL;
        if (ok) {
            const char *body = strchr(ok + 1, '\n');
            size_t olen = (size_t)strtoull(ok + 4, NULL, 10);
            same = body && olen == ours_len && memcmp(body + 1, ours, olen) == 0;
        }
        free(out);
    }
    free(oracle);
    if (go_us > 0) {
        printf("template chart: go   %.1f us/render wall, %.1f us/render cpu (%d renders)\n", go_us,
               go_cpu_us, n);
        printf("template chart: ratio go/ours = %.2fx wall, %.2fx cpu; outputs %s\n",
               go_us / ours_us, go_cpu_us / ours_cpu_us, same ? "identical" : "DIFFER");
    } else {
        printf(
            "template chart: the Go oracle is not available (tests/oracle/gotemplate/build.sh)\n");
    }

    free(ours);
    json_object_put(data);
    co_template_set_free(set);
    co_template_funcs_free(funcs);
    co_buf_dispose(&c.define);
    co_buf_dispose(&c.data);
    co_buf_dispose(&c.tmpl);
    free(text);
    return 0;
}
