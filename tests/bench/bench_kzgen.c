/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Benchmark: the templated-kustomization generator on the fixture trees of tests/fixtures/kzgen
 * (error cases skipped). For each case: parse + render + build in-process (the uncached path),
 * render + build of an already parsed generator (the cached path, every reconcile), and, as
 * the reference, `kubectl kustomize --load-restrictor=LoadRestrictionsNone` on the rendered
 * tree written to disk, best of three. The reference does no templating at all, which favours
 * it. Prints per-case means and the ratios.
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
#include "co/render/kzgen.h"
#include "co/render/vfs.h"
#include "co/json/yaml.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double time_kubectl(const char *kubectl, const char *dir)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *k = co_xstrdup(kubectl), *d = co_xstrdup(dir);
    char sub[] = "kustomize";
    char flag[] = "--load-restrictor=LoadRestrictionsNone";
    char *argv[] = {k, sub, flag, d, NULL};
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

/* Writes the rendered tree below @p dir; 0 or -1. */
static int write_tree(const co_vfs *tree, const char *dir)
{
    char **all = NULL;
    size_t n = 0;
    if (co_vfs_walk(&all, &n, tree, "") < 0) {
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *path = co_xasprintf("%s/%s", dir, all[i]);
        for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
            *s = '\0';
            mkdir(path, 0700);
            *s = '/';
        }
        char *data = NULL;
        size_t len = 0;
        FILE *f = NULL;
        if (co_vfs_read(&data, &len, tree, all[i]) < 0 || !(f = fopen(path, "w")) ||
            fwrite(data, 1, len, f) != len) {
            rc = -1;
        }
        if (f && fclose(f) != 0) {
            rc = -1;
        }
        free(data);
        free(path);
    }
    co_vfs_strv_free(all);
    return rc;
}

static json_object *read_values(const char *dir)
{
    char *path = co_xasprintf("%s/values.yaml", dir);
    FILE *f = fopen(path, "r");
    free(path);
    if (!f) {
        return NULL;
    }
    char buf[65536];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    json_object *v = NULL;
    if (co_yaml_parse(&v, buf, len, 0) < 0) {
        return NULL;
    }
    return v;
}

typedef struct timing {
    double full;   /* parse + render + build */
    double cached; /* render + build */
} timing;

static int time_ours(timing *t, const char *dir, const json_object *values, const char *tmp)
{
    co_vfs *fs = NULL;
    if (co_vfs_new_disk(&fs, dir) < 0) {
        return -1;
    }
    co_kzgen_context ctx = {0};
    ctx.namespace = "ns1";
    ctx.name = "comp1";
    int n = 0, rc = 0;
    double t0 = now(), el = 0;
    do {
        json_object *out = NULL;
        if ((rc = co_kzgen_generate(&out, fs, "src", values, &ctx, NULL)) < 0) {
            break;
        }
        json_object_put(out);
        n++;
        el = now() - t0;
    } while (el < 0.05);
    t->full = rc == 0 ? el / n : -1;
    co_kzgen *g = NULL;
    if (rc == 0 && (rc = co_kzgen_parse(&g, fs, "src", NULL)) == 0) {
        n = 0;
        t0 = now();
        do {
            json_object *out = NULL;
            if ((rc = co_kzgen_render(&out, g, values, &ctx)) < 0) {
                break;
            }
            json_object_put(out);
            n++;
            el = now() - t0;
        } while (el < 0.05);
        t->cached = el / n;
        co_vfs *tree = NULL;
        char *root = NULL;
        if (rc == 0 && (rc = co_kzgen_render_tree(&tree, &root, g, values, &ctx)) == 0) {
            rc = write_tree(tree, tmp);
            co_vfs_free(tree);
            free(root);
        }
    }
    co_kzgen_free(g);
    co_vfs_free(fs);
    return rc < 0 ? -1 : 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void rm_rf(const char *path)
{
    /* the rendered trees are small; remove them with nftw-free recursion */
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) { /* NOLINT(concurrency-mt-unsafe) */
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                char *p = co_xasprintf("%s/%s", path, e->d_name);
                rm_rf(p);
                free(p);
            }
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

int main(void)
{
    const char *kubectl = getenv("CO_KUBECTL"); /* NOLINT(concurrency-mt-unsafe): start-up */
    const char *base = CO_TEST_FIXTURES "/kzgen";
    DIR *d = opendir(base);
    if (!d) {
        fprintf(stderr, "no fixtures at %s\n", base);
        return 1;
    }
    char *names[256] = {0};
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 256) { /* NOLINT(concurrency-mt-unsafe) */
        if (e->d_name[0] != '.' && strncmp(e->d_name, "err-", 4) != 0) {
            names[n++] = co_xstrdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof(char *), cmp);
    double full = 0, cached = 0, theirs = 0;
    size_t counted = 0;
    for (size_t i = 0; i < n; i++) {
        char *dir = co_xasprintf("%s/%s", base, names[i]);
        char tmpl[] = "/tmp/co-bench-kzgen-XXXXXX";
        char *tmp = mkdtemp(tmpl);
        json_object *values = read_values(dir);
        timing t = {-1, -1};
        int ok = tmp && time_ours(&t, dir, values, tmp) == 0;
        double best = -1;
        char *at = co_xasprintf("%s/src", tmp ? tmp : "");
        for (int r = 0; ok && kubectl && r < 3; r++) {
            double k = time_kubectl(kubectl, at);
            if (k >= 0 && (best < 0 || k < best)) {
                best = k;
            }
        }
        if (ok && (best >= 0 || !kubectl)) {
            full += t.full;
            cached += t.cached;
            theirs += best > 0 ? best : 0;
            counted++;
        } else {
            printf("  skipped %s (%s)\n", names[i], !ok ? co_error_last() : "kubectl failed");
        }
        if (tmp) {
            rm_rf(tmp);
        }
        free(at);
        json_object_put(values);
        free(dir);
        free(names[i]);
    }
    if (!counted) {
        printf("no case could be timed\n");
        return 1;
    }
    printf("kzgen fixtures: %zu components\n", counted);
    printf("  ours, parse+render+build: %9.3f ms per component (in-process)\n",
           full / counted * 1e3);
    printf("  ours, render+build:       %9.3f ms per component (parsed generator, cached)\n",
           cached / counted * 1e3);
    if (kubectl) {
        printf("  kubectl kustomize:        %9.3f ms per component (rendered tree, no templating,"
               " best of 3)\n",
               theirs / counted * 1e3);
        printf("  ratio:                    %9.1fx faster (uncached), %.1fx (cached)\n",
               theirs / full, theirs / cached);
    } else {
        printf("  kubectl with kustomize v5 not found: no ratio\n");
    }
    return 0;
}
