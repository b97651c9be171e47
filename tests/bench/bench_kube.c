/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes client benchmark against a real kube-apiserver (a private control plane started
 * with tests/env/controlplane.sh, or the one CO_TEST_KUBECONFIG names). Prints:
 *   - create throughput (objects/s, several writer threads);
 *   - list throughput (objects/s, paged, decoded);
 *   - watch throughput: the initial ADDED burst of a watch, and changes flowing to an
 *     informer while writers update objects (events/s);
 *   - informer sync throughput and memory per 1,000 cached objects (store text and heap),
 *     with and without managedFields, next to what json-c trees of the same objects take.
 * It never fails on a time; it fails only when it cannot run.
 *
 *   build/release/tests/bench/bench_kube [objects]     (default 2000)
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_informer.h"
#include "co/kube/kube_watch.h"

#define WRITERS 4

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap_used(void)
{
    malloc_trim(0);
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static int die(const char *what)
{
    fprintf(stderr, "bench_kube: %s: %s\n", what, co_error_last());
    return 1;
}

static int run(const char *const *argv)
{
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        dup2(2, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        continue;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* --- writers ------------------------------------------------------------------------------- */

typedef struct job {
    co_kube_client *c;
    const char *ns;
    int from, to;
    int round; /* 0: create; >0: update with this value */
    int failures;
    char first_error[256]; /* the first failure's message */
} job;

static struct json_object *configmap(const char *ns, int i, int round)
{
    char name[32];
    snprintf(name, sizeof(name), "bench-%05d", i);
    struct json_object *cm = json_object_new_object();
    json_object_object_add(cm, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(cm, "kind", json_object_new_string("ConfigMap"));
    struct json_object *meta = json_object_new_object();
    json_object_object_add(meta, "name", json_object_new_string(name));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    struct json_object *labels = json_object_new_object();
    json_object_object_add(labels, "app.kubernetes.io/name", json_object_new_string("bench"));
    char shard[8];
    snprintf(shard, sizeof(shard), "%d", i % 16);
    json_object_object_add(labels, "bench/shard", json_object_new_string(shard));
    json_object_object_add(meta, "labels", labels);
    json_object_object_add(cm, "metadata", meta);
    struct json_object *data = json_object_new_object();
    char value[64];
    for (int k = 0; k < 8; k++) {
        char key[16];
        snprintf(key, sizeof(key), "key-%d", k);
        snprintf(value, sizeof(value), "value %d of object %d, round %d, padding......", k, i,
                 round);
        json_object_object_add(data, key, json_object_new_string(value));
    }
    json_object_object_add(cm, "data", data);
    return cm;
}

static void *writer(void *arg)
{
    job *j = arg;
    co_kube_write_options wo = {.field_manager = "bench", .force = 1};
    for (int i = j->from; i < j->to; i++) {
        struct json_object *cm = configmap(j->ns, i, j->round);
        int rc = j->round == 0 ? co_kube_create(NULL, j->c, cm, NULL)
                               : co_kube_apply(NULL, j->c, cm, &wo);
        if (rc < 0 && j->failures++ == 0) {
            snprintf(j->first_error, sizeof(j->first_error), "%s", co_error_last());
        }
        json_object_put(cm);
    }
    return NULL;
}

static double write_all(co_kube_client *c, const char *ns, int n, int round, int *failures)
{
    pthread_t th[WRITERS];
    job jobs[WRITERS];
    double t0 = now_s();
    for (int w = 0; w < WRITERS; w++) {
        jobs[w] = (job){c, ns, n * w / WRITERS, n * (w + 1) / WRITERS, round, 0, ""};
        pthread_create(&th[w], NULL, writer, &jobs[w]);
    }
    *failures = 0;
    for (int w = 0; w < WRITERS; w++) {
        pthread_join(th[w], NULL);
        *failures += jobs[w].failures;
        if (jobs[w].failures && *failures == jobs[w].failures) {
            fprintf(stderr, "bench_kube: a write failed: %s\n", jobs[w].first_error);
        }
    }
    return now_s() - t0;
}

/* --- readers ------------------------------------------------------------------------------- */

static int count_item(struct json_object *item, void *payload)
{
    (void)item;
    (*(long *)payload)++;
    return 0;
}

typedef struct burst {
    long events;
    long want;
} burst;

static int count_event(co_kube_event_type type, struct json_object *obj, void *payload)
{
    (void)obj;
    burst *b = payload;
    if (type != CO_KUBE_BOOKMARK) {
        b->events++;
    }
    return b->events >= b->want ? 1 : 0;
}

typedef struct counter {
    pthread_mutex_t lock;
    long updates;
} counter;

static void on_update(const struct json_object *o, const struct json_object *n, void *payload)
{
    (void)o;
    (void)n;
    counter *c = payload;
    pthread_mutex_lock(&c->lock);
    c->updates++;
    pthread_mutex_unlock(&c->lock);
}

static long updates_seen(counter *c)
{
    pthread_mutex_lock(&c->lock);
    long n = c->updates;
    pthread_mutex_unlock(&c->lock);
    return n;
}

static int informer_memory(co_kube_client *c, const char *ns, int n, int strip)
{
    size_t before = heap_used();
    co_kube_informer *inf = NULL;
    co_kube_informer_options o = {.api_version = "v1",
                                  .kind = "ConfigMap",
                                  .namespace = ns,
                                  .strip_managed_fields = strip};
    if (co_kube_informer_new(&inf, c, &o) < 0 || co_kube_informer_start(inf) < 0) {
        return die("informer");
    }
    double t0 = now_s();
    if (co_kube_informer_wait_synced(inf, 600000) < 0) {
        return die("informer sync");
    }
    double secs = now_s() - t0;
    co_kube_informer_stats st;
    co_kube_informer_stats_get(&st, inf);
    size_t after = heap_used();
    printf("informer sync%s: %zu objects in %.2f s = %.0f objects/s\n",
           strip ? " (managedFields dropped)" : "", st.objects, secs, (double)st.objects / secs);
    printf("memory per 1,000 cached objects%s: %.1f KiB of stored JSON, %.1f KiB of heap\n",
           strip ? " (managedFields dropped)" : "", (double)st.bytes * 1000 / n / 1024,
           (double)(after > before ? after - before : 0) * 1000 / n / 1024);
    co_kube_informer_free(inf);
    return 0;
}

static int bench(co_kube_client *c, int n)
{
    char ns[64];
    snprintf(ns, sizeof(ns), "bench-%ld", (long)getpid());
    struct json_object *nso = json_object_new_object();
    json_object_object_add(nso, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(nso, "kind", json_object_new_string("Namespace"));
    struct json_object *meta = json_object_new_object();
    json_object_object_add(meta, "name", json_object_new_string(ns));
    json_object_object_add(nso, "metadata", meta);
    if (co_kube_create(NULL, c, nso, NULL) < 0) {
        return die("namespace");
    }
    json_object_put(nso);

    int failures = 0;
    double secs = write_all(c, ns, n, 0, &failures);
    printf("create: %d objects, %d writer threads, %.2f s = %.0f objects/s (%d failed)\n", n,
           WRITERS, secs, n / secs, failures);

    co_kube_ref coll = {"v1", "ConfigMap", ns, NULL};
    double best = 0;
    long existing = 0;
    for (int r = 0; r < 3; r++) {
        long seen = 0;
        co_kube_list_options lo = {.limit = 500};
        double t0 = now_s();
        if (co_kube_list_each(NULL, c, &coll, &lo, count_item, &seen) < 0) {
            return die("list");
        }
        double rate = seen / (now_s() - t0);
        best = rate > best ? rate : best;
        existing = seen;
    }
    printf("list (pages of 500, decoded): best of 3 = %.0f objects/s\n", best);

    /* a watch without resourceVersion starts with an ADDED event per existing object */
    if (existing == 0) {
        return die("no object was created");
    }
    burst b = {0, existing};
    double t0 = now_s();
    co_kube_watch_options wo = {.timeout_s = 600};
    if (co_kube_watch(c, &coll, &wo, count_event, &b) < 0) {
        return die("watch");
    }
    secs = now_s() - t0;
    printf("watch initial burst: %ld events in %.2f s = %.0f events/s\n", b.events, secs,
           b.events / secs);

    /* changes flowing to an informer while writers update every object */
    counter cnt = {PTHREAD_MUTEX_INITIALIZER, 0};
    co_kube_informer *inf = NULL;
    co_kube_informer_options io = {.api_version = "v1",
                                   .kind = "ConfigMap",
                                   .namespace = ns,
                                   .strip_managed_fields = 1};
    co_kube_handlers h = {NULL, on_update, NULL, &cnt};
    if (co_kube_informer_new(&inf, c, &io) < 0 || co_kube_informer_add_handlers(inf, &h) < 0 ||
        co_kube_informer_start(inf) < 0 || co_kube_informer_wait_synced(inf, 600000) < 0) {
        return die("informer");
    }
    t0 = now_s();
    double wsecs = write_all(c, ns, n, 1, &failures);
    while (updates_seen(&cnt) < n - failures && now_s() - t0 < 600) {
        usleep(1000);
    }
    secs = now_s() - t0;
    printf("watch steady state: %d updates written at %.0f/s, %ld events delivered to the "
           "informer at %.0f events/s\n",
           n, n / wsecs, updates_seen(&cnt), updates_seen(&cnt) / secs);
    co_kube_informer_free(inf);

    if (informer_memory(c, ns, n, 0) != 0 || informer_memory(c, ns, n, 1) != 0) {
        return 1;
    }

    /* for comparison: the same objects as json-c trees */
    size_t before = heap_used();
    struct json_object *all = NULL;
    if (co_kube_list_all(&all, c, &coll, NULL) < 0) {
        return die("list all");
    }
    size_t after = heap_used();
    printf("for comparison, json-c trees of the same %d objects: %.1f KiB per 1,000\n", n,
           (double)(after - before) * 1000 / n / 1024);
    json_object_put(all);
    co_kube_ref nsref = {"v1", "Namespace", NULL, ns};
    if (co_kube_delete(NULL, c, &nsref, NULL) < 0) {
        co_error_clear();
    }
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);        /* progress shows as it happens, also in a log file */
    int n = argc > 1 ? atoi(argv[1]) : 2000; // NOLINT(cert-err34-c): a benchmark argument
    if (n <= 0) {
        n = 2000;
    }
    const char *kubeconfig = getenv("CO_TEST_KUBECONFIG"); // NOLINT(concurrency-mt-unsafe)
    char dir[] = "/tmp/co-bench-kube-XXXXXX";
    char *script = NULL, *own = NULL;
    int rc = 1;
    if (!kubeconfig || !kubeconfig[0]) {
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
        script = co_xasprintf("%s/tests/env/controlplane.sh", CO_SOURCE_ROOT);
        const char *start[] = {script, "start", dir, NULL};
        if (run(start) != 0) {
            fprintf(stderr, "bench_kube: could not start a control plane\n");
            goto done;
        }
        own = co_xasprintf("%s/admin.kubeconfig", dir);
        kubeconfig = own;
    }
    co_kube_config *cfg = NULL;
    co_kube_client *c = NULL;
    co_kube_client_options opts = {.qps = -1};
    if (co_kube_config_load(&cfg, kubeconfig, NULL) < 0 || co_kube_client_new(&c, cfg, &opts) < 0) {
        rc = die("client");
        goto done;
    }
    printf("objects: %d ConfigMaps of about 1 KiB; client rate limit off\n", n);
    rc = bench(c, n);
    co_kube_client_free(c);
    co_kube_config_free(cfg);
done:
    if (script && own) {
        const char *stop[] = {script, "stop", dir, NULL};
        (void)run(stop);
    }
    free(script);
    free(own);
    return rc;
}
