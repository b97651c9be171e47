/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Benchmark of the controller (issue 7): N Components (BENCH_CONTROLLER_COMPONENTS, default
 * 1,000), each rendering one ConfigMap from its own directory of a local source, reconciled by
 * the manager in-process with the real apply engine against a kube-apiserver
 * (CO_TEST_KUBECONFIG, else a private control plane). Prints the time until all are Ready,
 * API requests per Component, the process's peak resident memory, and then, over one requeue
 * interval with nothing changed, the writes performed (status, events, everything else).
 * Events are written asynchronously by one sender: the first pass's backlog is sent (and
 * counted apart) before the second pass starts, whose event writes are then only Component
 * events repeated after their 5-minute de-duplication window (docs/behaviour.md, "Events"),
 * which the recorder turns into count patches of the existing Event.
 * The client is not rate limited unless BENCH_CONTROLLER_QPS is set. Never fails on a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_event.h"
#include "co/util/metrics.h"
#include "co/util/time.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_manager.h"
#include "tests/support/ctl_test.h"

static int run(const char *const *argv)
{
    pid_t pid = fork();
    if (pid == 0) {
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) {
        return -1;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static long count_ready(co_kube_client *c, const char *ns)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, NULL};
    struct json_object *list = NULL;
    if (co_kube_list_all(&list, c, &ref, NULL) < 0) {
        return -1;
    }
    struct json_object *items = co_json_get(list, "items", NULL);
    long ready = 0;
    size_t n = items ? json_object_array_length(items) : 0;
    for (size_t i = 0; i < n; i++) {
        if (ctl_state_component_ready(json_object_array_get_idx(items, i))) {
            ready++;
        }
    }
    json_object_put(list);
    return ready;
}

int main(void)
{
    /* single-threaded start-up: reading the environment is safe here */
    const char *env_n = getenv("BENCH_CONTROLLER_COMPONENTS"); // NOLINT(concurrency-mt-unsafe)
    const char *env_qps = getenv("BENCH_CONTROLLER_QPS");      // NOLINT(concurrency-mt-unsafe)
    const char *env_rq = getenv("BENCH_CONTROLLER_REQUEUE_S"); // NOLINT(concurrency-mt-unsafe)
    const char *kubeconfig = getenv("CO_TEST_KUBECONFIG");     // NOLINT(concurrency-mt-unsafe)
    long n = env_n ? strtol(env_n, NULL, 10) : 1000;
    long requeue_s = env_rq ? strtol(env_rq, NULL, 10) : 30;
    if (n <= 0 || n > 100000 || requeue_s <= 0) {
        fprintf(stderr, "bench_controller: bad BENCH_CONTROLLER_COMPONENTS or _REQUEUE_S\n");
        return 2;
    }
    char tmpl[] = "/tmp/co-bench-ctl-XXXXXX";
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        return 1;
    }
    char *script = co_xasprintf("%s/tests/env/controlplane.sh", CO_SOURCE_ROOT);
    char *cp_dir = NULL, *cp_kubeconfig = NULL;
    if (!kubeconfig || !*kubeconfig) {
        cp_dir = co_xasprintf("%s/cp", tmpl);
        const char *argv[] = {script, "start", cp_dir, NULL};
        if (run(argv) != 0) {
            fprintf(stderr, "bench_controller: could not start a control plane\n");
            return 1;
        }
        cp_kubeconfig = co_xasprintf("%s/admin.kubeconfig", cp_dir);
        kubeconfig = cp_kubeconfig;
    }
    co_kube_config *cfg = NULL;
    co_kube_client *admin = NULL;
    co_kube_client_options ao = CO_KUBE_CLIENT_OPTIONS_INIT;
    ao.qps = -1;
    if (co_kube_config_load(&cfg, kubeconfig, NULL) < 0 ||
        co_kube_client_new(&admin, cfg, &ao) < 0) {
        fprintf(stderr, "bench_controller: client: %s\n", co_error_last());
        return 1;
    }
    ctl_test_install_crd(admin);

    /* one directory with one ConfigMap per Component */
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s/src", tmpl);
    for (long i = 0; i < n; i++) {
        char dir[4200], file[4300];
        snprintf(dir, sizeof(dir), "%s/c%ld", ctl_test_source_dir, i);
        snprintf(file, sizeof(file), "%s/cm.yaml", dir);
        if (mkdir(dir, 0755) < 0 && i == 0) {
            const char *argv[] = {"/bin/mkdir", "-p", dir, NULL};
            if (run(argv) != 0) {
                return 1;
            }
        }
        FILE *f = fopen(file, "w");
        if (!f) {
            perror(file);
            return 1;
        }
        fprintf(
            f,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bench-%ld\ndata:\n  i: \"%ld\"\n",
            i, i);
        fclose(f);
    }
    char ns[64];
    snprintf(ns, sizeof(ns), "co-bench-ctl-%ld", (long)(co_time_now() / 1000000) % 100000000);
    char *nsjson = co_xasprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    struct json_object *nsobj = NULL;
    if (co_json_parse(&nsobj, nsjson, strlen(nsjson)) < 0 ||
        co_kube_create(NULL, admin, nsobj, NULL) < 0) {
        fprintf(stderr, "bench_controller: namespace: %s\n", co_error_last());
        return 1;
    }
    json_object_put(nsobj);
    free(nsjson);

    ctl_source_ops src = ctl_test_source_ops();
    ctl_apply_ops app = ctl_apply_engine_ops();
    ctl_manager_options o = {0};
    const char *nss[] = {ns};
    o.kubeconfig = kubeconfig;
    o.metrics_addr = "0";
    o.probe_addr = "0";
    o.namespaces = nss;
    o.nnamespaces = 1;
    o.source = &src;
    o.apply = &app;
    o.qps = env_qps ? strtod(env_qps, NULL) : -1;
    o.burst = env_qps ? (int)(o.qps * 1.5) + 1 : 0;
    ctl_manager *m = NULL;
    if (ctl_manager_new(&m, &o) < 0 || ctl_manager_start(m) < 0) {
        fprintf(stderr, "bench_controller: manager: %s\n", co_error_last());
        return 1;
    }

    int64_t t0 = co_time_monotonic();
    for (long i = 0; i < n; i++) {
        char *obj = co_xasprintf(
            "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":"
            "{\"namespace\":\"%s\",\"name\":\"c%ld\"},\"spec\":{\"sourceRef\":{\"httpRepository\":"
            "{\"url\":\"http://example.invalid/x.tar.gz\"}},\"path\":\"c%ld\","
            "\"requeueInterval\":\"%lds\"}}",
            ns, i, i, requeue_s);
        struct json_object *c = NULL;
        if (co_json_parse(&c, obj, strlen(obj)) < 0 || co_kube_create(NULL, admin, c, NULL) < 0) {
            fprintf(stderr, "bench_controller: create: %s\n", co_error_last());
            return 1;
        }
        json_object_put(c);
        free(obj);
    }
    double create_s = (double)(co_time_monotonic() - t0) / 1e9;
    long ready = 0;
    while ((ready = count_ready(admin, ns)) < n) {
        if ((double)(co_time_monotonic() - t0) / 1e9 > 3600) {
            fprintf(stderr, "bench_controller: only %ld of %ld Ready after an hour\n", ready, n);
            break;
        }
        usleep(500 * 1000);
    }
    double ready_s = (double)(co_time_monotonic() - t0) / 1e9;
    ctl_manager_stats s1;
    ctl_manager_stats_get(m, &s1);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("components                     %ld\n", n);
    printf("time to create (client)        %.1f s\n", create_s);
    printf("time until all Ready           %.1f s (%.1f Components/s)\n", ready_s,
           (double)n / ready_s);
    printf("API requests per Component     %.1f (writes %.1f, status writes %.1f, events %.1f)\n",
           (double)s1.requests / (double)n, (double)s1.writes / (double)n,
           (double)s1.status_writes / (double)n, (double)s1.event_writes / (double)n);
    printf("reconciles per Component       %.1f\n", (double)s1.reconciles / (double)n);
    printf("peak resident memory           %.1f MiB (whole process: controller, client, bench)\n",
           (double)ru.ru_maxrss / 1024.0);

    /* Events are sent asynchronously by one sender: those of the first pass still queued when
     * the last Component turned Ready are sent first, so that the second pass counts only its
     * own writes. */
    co_kube_recorder *rec = ctl_manager_recorder(m);
    int64_t tf = co_time_monotonic();
    if (co_kube_recorder_flush(rec, 600000) < 0) {
        fprintf(stderr, "bench_controller: events not sent within 10 minutes\n");
    }
    usleep(3000 * 1000);
    ctl_manager_stats s0 = s1;
    ctl_manager_stats_get(m, &s1);
    printf("first-pass events sent after all were Ready %lu (in %.1f s)\n",
           s1.event_writes - s0.event_writes, (double)(co_time_monotonic() - tf) / 1e9);
    co_kube_recorder_stats r1, r2;
    co_kube_recorder_stats_get(&r1, rec);
    printf("first pass recorder: created %lu, repeats counted %lu, dropped %lu, failed %lu; "
           "Component events suppressed %lu\n",
           r1.created, r1.counted, r1.dropped, r1.failed, s1.events_suppressed);

    /* second pass: nothing changes for one requeue interval (+ jitter + settling) */
    usleep((useconds_t)(requeue_s * 1000 + requeue_s * 60 + 2000) * 1000);
    if (co_kube_recorder_flush(rec, 600000) < 0) {
        fprintf(stderr, "bench_controller: events not sent within 10 minutes\n");
    }
    ctl_manager_stats s2;
    ctl_manager_stats_get(m, &s2);
    co_kube_recorder_stats_get(&r2, rec);
    unsigned long writes = s2.writes - s1.writes;
    unsigned long status = s2.status_writes - s1.status_writes;
    unsigned long events = s2.event_writes - s1.event_writes;
    printf("second pass over %lds (requeueInterval): reconciles %lu, requests %lu\n", requeue_s,
           s2.reconciles - s1.reconciles, s2.requests - s1.requests);
    printf("  status writes %lu (%.2f per Component), event writes %lu, other writes "
           "(dependents, finalizers) %lu\n",
           status, (double)status / (double)n, events, writes - status - events);
    printf("  Component events suppressed as repeats within 5 minutes %lu; recorder: created %lu, "
           "repeats counted %lu, dropped %lu, failed %lu\n",
           s2.events_suppressed - s1.events_suppressed, r2.created - r1.created,
           r2.counted - r1.counted, r2.dropped - r1.dropped, r2.failed - r1.failed);

    ctl_manager_free(m);
    co_kube_client_free(admin);
    co_kube_config_free(cfg);
    if (cp_dir) {
        const char *argv[] = {script, "stop", cp_dir, NULL};
        (void)run(argv);
    }
    const char *rm[] = {"/bin/rm", "-rf", tmpl, NULL};
    (void)run(rm);
    free(script);
    free(cp_dir);
    free(cp_kubeconfig);
    return 0;
}
