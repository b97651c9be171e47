/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Benchmark: our Helm renderer against `helm template` on the charts of the differential suite
 * (tests/fixtures/helm/<case>/chart, without values). Each chart is loaded and rendered
 * in-process until at least 50 ms have passed and the mean is taken (load + render, since the
 * `helm template` process does both); helm is run three times per chart and the fastest run
 * counts, which favours the reference. Charts we cannot render yet are listed and left out.
 * Prints per-chart means and the overall ratio; never fails on a time.
 */
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/common.h"
#include "co/util/error.h"
#include "co/render/helm.h"
#include "co/render/vfs.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds one `helm template rel dir` takes (output discarded), or -1. */
static double time_helm(const char *helm, const char *dir)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *h = co_xstrdup(helm);
    char *d = co_xstrdup(dir);
    char sub[] = "template";
    char rel[] = "rel";
    char crds[] = "--include-crds";
    char *argv[] = {h, sub, rel, d, crds, NULL};
    double t0 = now();
    pid_t pid;
    int rc = posix_spawn(&pid, h, &fa, NULL, argv, environ);
    int status = 0;
    if (rc == 0) {
        waitpid(pid, &status, 0);
    }
    double t = now() - t0;
    posix_spawn_file_actions_destroy(&fa);
    free(h);
    free(d);
    return rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? t : -1;
}

/* Mean seconds per in-process load and render, or -1 when rendering fails. */
static double time_ours(const char *dir)
{
    co_vfs *fs = NULL;
    if (co_vfs_new_disk(&fs, dir) < 0) {
        return -1;
    }
    co_helm_options opts = {.release_name = "rel"};
    int n = 0;
    double t0 = now();
    double t = 0;
    do {
        co_helm_chart *c = NULL;
        struct json_object *out = NULL;
        if (co_helm_chart_load(&c, fs, "") < 0 || co_helm_template(&out, c, NULL, &opts) < 0) {
            co_helm_chart_free(c);
            co_vfs_free(fs);
            return -1;
        }
        json_object_put(out);
        co_helm_chart_free(c);
        n++;
        t = now() - t0;
    } while (t < 0.05);
    co_vfs_free(fs);
    return t / n;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    const char *env = getenv("CO_HELM");          /* NOLINT(concurrency-mt-unsafe): start-up only */
    const char *home = getenv("HOME");            /* NOLINT(concurrency-mt-unsafe): start-up only */
    const char *cache = getenv("XDG_CACHE_HOME"); /* NOLINT(concurrency-mt-unsafe) */
    char *helm = env && *env ? co_xstrdup(env)
                 : cache && *cache
                     ? co_xasprintf("%s/component-operator/bin/helm", cache)
                     : co_xasprintf("%s/.cache/component-operator/bin/helm", home ? home : "/root");
    if (access(helm, X_OK) != 0) {
        printf("helm: reference helm not found at %s (run tests/env/deps.sh); skipped\n", helm);
        free(helm);
        return 0;
    }
    const char *root = CO_SOURCE_ROOT "/tests/fixtures/helm";
    DIR *d = opendir(root);
    if (!d) {
        printf("helm: no fixtures at %s\n", root);
        free(helm);
        return 0;
    }
    char *names[256] = {0};
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 256) { /* NOLINT(concurrency-mt-unsafe) */
        if (e->d_name[0] != '.') {
            names[n++] = co_xstrdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof(char *), cmp);
    double sum_ours = 0;
    double sum_helm = 0;
    size_t measured = 0;
    printf("%-14s %12s %12s %8s\n", "chart", "ours (ms)", "helm (ms)", "ratio");
    for (size_t i = 0; i < n; i++) {
        char *dir = co_xasprintf("%s/%s/chart", root, names[i]);
        struct stat st;
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
            double ours = time_ours(dir);
            double best = -1;
            for (int r = 0; r < 3; r++) {
                double t = time_helm(helm, dir);
                if (t >= 0 && (best < 0 || t < best)) {
                    best = t;
                }
            }
            if (ours < 0 || best < 0) {
                printf("%-14s %12s %12s %8s  (%s)\n", names[i], "-", "-", "-",
                       ours < 0 ? co_error_last() : "helm failed");
            } else {
                printf("%-14s %12.3f %12.3f %7.1fx\n", names[i], ours * 1e3, best * 1e3,
                       best / ours);
                sum_ours += ours;
                sum_helm += best;
                measured++;
            }
        }
        free(dir);
        free(names[i]);
    }
    if (measured > 0) {
        printf("helm: %zu charts, ours %.3f ms, helm template %.3f ms in total: %.1fx faster\n",
               measured, sum_ours * 1e3, sum_helm * 1e3, sum_helm / sum_ours);
    }
    free(helm);
    return 0;
}
