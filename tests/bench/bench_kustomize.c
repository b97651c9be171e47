/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Benchmark: our kustomize build against `kubectl kustomize` on the differential corpus
 * (tests/fixtures/kustomize/corpus, error cases skipped). Each case is built in-process until
 * at least 50 ms have passed and the mean is taken; kubectl is run three times per case and the
 * fastest run counts, which favours the reference. Since kubectl's figure includes starting a
 * process, `component-controller kustomize DIR` (the release build) is timed the same way, so
 * that there is also a process-to-process ratio. Prints per-build means and both ratios.
 *
 * Then a replacement with a delimiter into a field of 800000 characters (400000 parts), against
 * the same replacement without the delimiter: the split and the join must stay linear.
 */
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/common.h"
#include "co/util/error.h"
#include "co/render/kustomize.h"
#include "co/render/vfs.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds one `PROG kustomize DIR` takes (output discarded), or -1. */
static double time_process(const char *prog, const char *dir)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *k = co_xstrdup(prog), *d = co_xstrdup(dir);
    char sub[] = "kustomize";
    char *argv[] = {k, sub, d, NULL};
    double t0 = now();
    pid_t pid;
    int rc = posix_spawnp(&pid, k, &fa, NULL, argv, environ);
    int status = 0;
    if (rc == 0) {
        waitpid(pid, &status, 0);
    }
    double t = now() - t0;
    posix_spawn_file_actions_destroy(&fa);
    free(k);
    free(d);
    return rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? t : -1;
}

/* The fastest of three runs of `PROG kustomize DIR`, or -1 when one fails. */
static double best_of_3(const char *prog, const char *dir)
{
    double best = -1;
    for (int r = 0; r < 3; r++) {
        double t = time_process(prog, dir);
        if (t < 0) {
            return -1;
        }
        if (best < 0 || t < best) {
            best = t;
        }
    }
    return best;
}

/* Mean seconds per in-process build, or -1 when the build fails. */
static double time_ours(const char *dir)
{
    co_vfs *fs = NULL;
    if (co_vfs_new_disk(&fs, dir) < 0) {
        return -1;
    }
    int n = 0;
    double t0 = now(), t = 0;
    do {
        json_object *out = NULL;
        if (co_kustomize_build(&out, fs, "", NULL) < 0) {
            co_vfs_free(fs);
            return -1;
        }
        json_object_put(out);
        n++;
        t = now() - t0;
    } while (t < 0.05);
    co_vfs_free(fs);
    return t / n;
}

/* A kustomization whose replacement copies a ConfigMap's value into part 0 of a target field of
 * @p parts comma-separated parts (with @p delimiter) or into the whole field (without). */
static co_vfs *replacement_tree(size_t parts, int delimiter)
{
    co_vfs *fs = co_vfs_new_mem();
    char *list = co_xmalloc(parts * 2 + 1);
    for (size_t i = 0; i < parts; i++) {
        list[2 * i] = 'a';
        list[2 * i + 1] = ',';
    }
    list[parts * 2 - 1] = '\0';
    char *res = co_xasprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: src\n"
                             "data:\n  value: b\n---\n"
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dst\n"
                             "data:\n  list: \"%s\"\n",
                             list);
    char *kust = co_xasprintf("resources: [res.yaml]\n"
                              "replacements:\n"
                              "- source: {kind: ConfigMap, name: src, fieldPath: data.value}\n"
                              "  targets:\n"
                              "  - select: {name: dst}\n"
                              "    fieldPaths: [data.list]\n"
                              "%s",
                              delimiter ? "    options: {delimiter: \",\", index: 0}\n" : "");
    if (co_vfs_mem_put(fs, "res.yaml", res, strlen(res)) < 0 ||
        co_vfs_mem_put(fs, "kustomization.yaml", kust, strlen(kust)) < 0) {
        co_vfs_free(fs);
        fs = NULL;
    }
    free(kust);
    free(res);
    free(list);
    return fs;
}

/* Mean seconds per build of @p fs (at least 3 builds and 50 ms), or -1 when the build fails. */
static double time_tree(co_vfs *fs)
{
    int n = 0;
    double t0 = now(), t = 0;
    do {
        json_object *out = NULL;
        if (co_kustomize_build(&out, fs, "", NULL) < 0) {
            return -1;
        }
        json_object_put(out);
        n++;
        t = now() - t0;
    } while (t < 0.05 || n < 3);
    return t / n;
}

static int bench_replacement(void)
{
    co_vfs *with = replacement_tree(400000, 1);
    co_vfs *without = replacement_tree(400000, 0);
    double tw = with ? time_tree(with) : -1;
    double to = without ? time_tree(without) : -1;
    co_vfs_free(with);
    co_vfs_free(without);
    if (tw < 0 || to < 0) {
        printf("replacement: the build failed: %s\n", co_error_last());
        return 1;
    }
    printf("replacement into 800000 characters (400000 parts):\n");
    printf("  with delimiter:   %10.3f ms per build\n", tw * 1e3);
    printf("  whole field:      %10.3f ms per build\n", to * 1e3);
    printf("  ratio:            %10.1fx (delimiter against whole field)\n", tw / to);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    const char *kubectl = getenv("CO_KUBECTL"); /* NOLINT(concurrency-mt-unsafe): start-up */
    const char *corpus = CO_TEST_FIXTURES "/kustomize/corpus";
    DIR *d = opendir(corpus);
    if (!d) {
        fprintf(stderr, "no corpus at %s\n", corpus);
        return 1;
    }
    char *names[1024] = {0};
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 1024) { /* NOLINT(concurrency-mt-unsafe) */
        if (e->d_name[0] != '.' && strncmp(e->d_name, "err-", 4) != 0) {
            names[n++] = co_xstrdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof(char *), cmp);
    const char *cli = CO_SOURCE_ROOT "/build/release/component-controller";
    int have_cli = access(cli, X_OK) == 0;
    double ours = 0, ours_proc = 0, theirs = 0;
    size_t counted = 0;
    for (size_t i = 0; i < n; i++) {
        char *dir = co_xasprintf("%s/%s", corpus, names[i]);
        double o = time_ours(dir);
        double best = kubectl ? best_of_3(kubectl, dir) : -1;
        double proc = have_cli ? best_of_3(cli, dir) : -1;
        if (o >= 0 && (best >= 0 || !kubectl) && (proc >= 0 || !have_cli)) {
            ours += o;
            ours_proc += proc > 0 ? proc : 0;
            theirs += best > 0 ? best : 0;
            counted++;
        } else {
            printf("  skipped %s (%s)\n", names[i],
                   o < 0      ? co_error_last()
                   : best < 0 ? "kubectl failed"
                              : "component-controller kustomize failed");
        }
        free(dir);
        free(names[i]);
    }
    if (!counted) {
        printf("no case could be timed\n");
        return 1;
    }
    printf("kustomize corpus: %zu builds\n", counted);
    printf("  ours:             %10.3f ms per build (in-process)\n", ours / counted * 1e3);
    if (have_cli) {
        printf("  ours as a process: %9.3f ms per build (component-controller kustomize, best "
               "of 3)\n",
               ours_proc / counted * 1e3);
    }
    if (kubectl) {
        printf("  kubectl kustomize: %9.3f ms per build (best of 3, process included)\n",
               theirs / counted * 1e3);
        printf("  ratio:            %10.1fx faster (in-process build against kubectl)\n",
               theirs / ours);
        if (have_cli) {
            printf("  ratio:            %10.1fx faster (process against process)\n",
                   theirs / ours_proc);
        }
    } else {
        printf("  kubectl with kustomize v5 not found: no ratio\n");
    }
    return bench_replacement();
}
