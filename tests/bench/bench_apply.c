/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Benchmark of the apply engine against a real kube-apiserver: one Component with N dependents
 * (1,000 ConfigMaps by default, BENCH_APPLY_OBJECTS to change) is applied until done; printed are
 * the passes and the time to all-applied, API requests per object (counted at the transport),
 * then the cost of one more pass when nothing changed (reads only is the target), and the time
 * to delete everything again. Uses CO_TEST_KUBECONFIG when set, else starts a private control
 * plane with tests/env/controlplane.sh. The client has no client-side rate limit unless
 * BENCH_APPLY_QPS is set, so the figures are the engine's and the API server's, not the
 * limiter's. The reference, measured in the same run against the same API server: `kubectl apply
 * --server-side` of the same objects into a second namespace, once to create them and once more
 * with nothing changed (kubectl from CO_KUBECTL, else PATH; it does not wait for readiness, the
 * engine does). Prints figures and ratios; never fails on a time.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_transport.h"
#include "co/util/time.h"
#include "controller/ctl_apply.h"

typedef struct counting {
    co_kube_transport base;
    co_kube_transport *inner;
    atomic_ulong requests;
    atomic_ulong writes;
} counting;

static int
counting_send(co_kube_transport *self, const co_kube_request *req, co_kube_response *resp)
{
    counting *c = (counting *)self;
    atomic_fetch_add(&c->requests, 1);
    if (strcmp(req->method, "GET") != 0) {
        atomic_fetch_add(&c->writes, 1);
    }
    return c->inner->send(c->inner, req, resp);
}

static void counting_free(co_kube_transport *self)
{
    counting *c = (counting *)self;
    c->inner->free(c->inner);
    free(c);
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

/* Seconds `KUBECTL --kubeconfig K apply --server-side -f FILE` takes (output discarded), or -1. */
static double time_kubectl_apply(const char *kubectl, const char *kubeconfig, const char *file)
{
    const char *argv[] = {
        kubectl,           "--kubeconfig",    kubeconfig, "apply", "--server-side",
        "--field-manager", "bench-reference", "-f",       file,    NULL};
    int64_t t0 = co_time_monotonic();
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        continue;
    }
    int64_t t = co_time_monotonic() - t0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? (double)t / 1e9 : -1;
}

static double secs(int64_t ns)
{
    return (double)ns / 1e9;
}

static int die(const char *what)
{
    fprintf(stderr, "bench_apply: %s: %s\n", what, co_error_last());
    return 1;
}

/* Appends the bench's @p n ConfigMaps, comma-separated, in namespace @p ns (NULL: none). */
static int put_configmaps(co_buf *b, long n, const char *ns)
{
    int rc = 0;
    for (long i = 0; i < n && rc == 0; i++) {
        rc = co_buf_printf(b,
                           "%s{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                           "\"name\":\"cm-%05ld\",%s%s%s\"labels\":{\"app\":\"bench\"}},"
                           "\"data\":{\"index\":\"%ld\",\"payload\":\"%064ld\"}}",
                           i ? "," : "", i, ns ? "\"namespace\":\"" : "", ns ? ns : "",
                           ns ? "\"," : "", i, i);
    }
    return rc;
}

/* The same ConfigMaps as a v1 List in namespace @p ns, for kubectl. */
static char *reference_manifest(const char *ns, long n)
{
    co_buf b;
    co_buf_init(&b, (size_t)64 * 1024 * 1024);
    if (co_buf_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[") < 0 ||
        put_configmaps(&b, n, ns) < 0 || co_buf_puts(&b, "]}") < 0) {
        co_buf_dispose(&b);
        return NULL;
    }
    return co_buf_take(&b, NULL);
}

/* Times kubectl on the same objects in a namespace of its own and prints the ratios. */
static void reference(co_kube_client *client,
                      const char *kubeconfig,
                      const char *ns,
                      long n,
                      double ours_first,
                      double ours_second)
{
    const char *kubectl = getenv("CO_KUBECTL"); // NOLINT(concurrency-mt-unsafe): one thread
    if (!kubectl || !*kubectl) {
        kubectl = "kubectl";
    }
    char ref_ns[80];
    snprintf(ref_ns, sizeof(ref_ns), "%s-kubectl", ns);
    char *nsjson = co_xasprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ref_ns);
    struct json_object *nsobj = NULL;
    char path[] = "/tmp/co-bench-apply-ref-XXXXXX";
    int fd = -1;
    char *text = reference_manifest(ref_ns, n);
    if (!text || co_json_parse(&nsobj, nsjson, strlen(nsjson)) < 0 ||
        co_kube_create(NULL, client, nsobj, NULL) < 0 || (fd = mkstemp(path)) < 0) {
        printf("reference: not measured (%s)\n", co_error_last());
        co_error_clear();
        goto done;
    }
    size_t len = strlen(text);
    if (write(fd, text, len) != (ssize_t)len) {
        printf("reference: not measured (cannot write %s)\n", path);
        goto done;
    }
    double first = time_kubectl_apply(kubectl, kubeconfig, path);
    double second = first >= 0 ? time_kubectl_apply(kubectl, kubeconfig, path) : -1;
    if (first < 0 || second < 0) {
        printf("reference: not measured (%s apply failed)\n", kubectl);
        goto done;
    }
    printf("kubectl apply --server-side:  %.3f s to create, %.3f s with nothing changed\n", first,
           second);
    /* above 1: the engine is faster; its first figure also covers waiting for readiness */
    printf("ratio (kubectl time / ours):  %.2f to all-applied, %.2f with nothing changed\n",
           first / ours_first, second / ours_second);
done:
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    co_kube_delete_options d = CO_KUBE_DELETE_OPTIONS_INIT;
    if (nsobj &&
        co_kube_delete(NULL, client, &(co_kube_ref){"v1", "Namespace", NULL, ref_ns}, &d) < 0) {
        co_error_clear();
    }
    json_object_put(nsobj);
    free(nsjson);
    free(text);
}

int main(void)
{
    /* single-threaded start-up: reading the environment is safe here */
    const char *env_n = getenv("BENCH_APPLY_OBJECTS"); // NOLINT(concurrency-mt-unsafe)
    const char *env_qps = getenv("BENCH_APPLY_QPS");   // NOLINT(concurrency-mt-unsafe)
    long n = env_n ? strtol(env_n, NULL, 10) : 1000;
    const char *kubeconfig = getenv("CO_TEST_KUBECONFIG"); // NOLINT(concurrency-mt-unsafe)
    char *cp_dir = NULL, *cp_kubeconfig = NULL;
    char *script = co_xasprintf("%s/tests/env/controlplane.sh", CO_SOURCE_ROOT);
    int rc = 0;

    if (n <= 0 || n > 100000) {
        fprintf(stderr, "bench_apply: BENCH_APPLY_OBJECTS must be in 1..100000\n");
        return 2;
    }
    if (!kubeconfig || !*kubeconfig) {
        char tmpl[] = "/tmp/co-bench-apply-XXXXXX";
        if (!mkdtemp(tmpl)) {
            perror("mkdtemp");
            return 1;
        }
        cp_dir = co_xasprintf("%s/cp", tmpl);
        const char *argv[] = {script, "start", cp_dir, NULL};
        if (run(argv) != 0) {
            fprintf(stderr, "bench_apply: could not start a control plane\n");
            return 1;
        }
        cp_kubeconfig = co_xasprintf("%s/admin.kubeconfig", cp_dir);
        kubeconfig = cp_kubeconfig;
    }

    co_kube_config *cfg = NULL;
    co_kube_transport *curl = NULL;
    co_kube_client *client = NULL;
    if (co_kube_config_load(&cfg, kubeconfig, NULL) < 0) {
        return die("loading kubeconfig");
    }
    if (co_kube_transport_curl_new(&curl, cfg) < 0) {
        return die("transport");
    }
    counting *cnt = co_xcalloc(1, sizeof(*cnt));
    cnt->base.send = counting_send;
    cnt->base.free = counting_free;
    cnt->inner = curl;
    co_kube_client_options copts = CO_KUBE_CLIENT_OPTIONS_INIT;
    copts.qps = env_qps ? strtod(env_qps, NULL) : -1;
    copts.burst = env_qps ? (int)(copts.qps * 1.5) + 1 : 0;
    if (co_kube_client_new_with_transport(&client, cfg, &cnt->base, &copts) < 0) {
        return die("client");
    }

    char ns[64];
    snprintf(ns, sizeof(ns), "co-bench-apply-%ld", (long)(co_time_now() / 1000000) % 100000000);
    struct json_object *nsobj = NULL;
    char *nsjson = co_xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{"
                                "\"name\":\"%s\"}}",
                                ns);
    if (co_json_parse(&nsobj, nsjson, strlen(nsjson)) < 0 ||
        co_kube_create(NULL, client, nsobj, NULL) < 0) {
        return die("creating namespace");
    }
    json_object_put(nsobj);
    free(nsjson);

    char *owner = co_xasprintf("bench-cluster/%s/bench", ns);
    ctl_apply_stats stats = {0};
    ctl_apply_opts o = {0};
    o.target = client;
    o.owner_id = owner;
    o.namespace = ns;
    o.component_digest = "bench";
    o.stats = &stats;
    struct json_object *inventory = json_object_new_array();

    /* the rendered objects, rebuilt for every pass as a reconcile would */
    co_buf text;
    co_buf_init(&text, (size_t)64 * 1024 * 1024);
    int brc = co_buf_puts(&text, "[");
    if (brc == 0) {
        brc = put_configmaps(&text, n, NULL);
    }
    if (brc < 0 || co_buf_puts(&text, "]") < 0) {
        return die("building objects");
    }

    printf("# apply engine: one component, %ld ConfigMaps, client qps %s\n", n,
           env_qps ? env_qps : "unlimited");
    int64_t t0 = co_time_monotonic();
    bool done = false;
    int passes = 0;
    while (!done && passes < 100) {
        struct json_object *objs = NULL;
        if (co_json_parse(&objs, co_buf_cstr(&text), text.len) < 0) {
            return die("parsing objects");
        }
        if (ctl_apply(&o, inventory, objs, &done) < 0) {
            return die("apply");
        }
        json_object_put(objs);
        passes++;
    }
    int64_t t_apply = co_time_monotonic() - t0;
    unsigned long req_apply = atomic_load(&cnt->requests);
    unsigned long wr_apply = atomic_load(&cnt->writes);
    printf("passes to all-applied:        %d\n", passes);
    printf("time to all-applied:          %.3f s (%.0f objects/s)\n", secs(t_apply),
           (double)n / secs(t_apply));
    printf("API requests per object:      %.2f (%lu requests, %lu writes)\n",
           (double)req_apply / (double)n, req_apply, wr_apply);
    printf("engine operations:            %lu reads, %lu creates, %lu updates, %lu deletes\n",
           stats.reads, stats.creates, stats.updates, stats.deletes);

    atomic_store(&cnt->requests, 0);
    atomic_store(&cnt->writes, 0);
    ctl_apply_stats before = stats;
    struct json_object *objs = NULL;
    if (co_json_parse(&objs, co_buf_cstr(&text), text.len) < 0) {
        return die("parsing objects");
    }
    t0 = co_time_monotonic();
    if (ctl_apply(&o, inventory, objs, &done) < 0) {
        return die("second pass");
    }
    int64_t t_second = co_time_monotonic() - t0;
    json_object_put(objs);
    printf("second pass (nothing changed): %.3f s, %lu requests (%.2f per object), %lu writes, "
           "done=%s\n",
           secs(t_second), atomic_load(&cnt->requests),
           (double)atomic_load(&cnt->requests) / (double)n, atomic_load(&cnt->writes),
           done ? "true" : "false");
    printf("second pass engine writes:    %lu (target 0)\n", (stats.creates - before.creates) +
                                                                 (stats.updates - before.updates) +
                                                                 (stats.deletes - before.deletes));
    reference(client, kubeconfig, ns, n, secs(t_apply), secs(t_second));

    atomic_store(&cnt->requests, 0);
    t0 = co_time_monotonic();
    done = false;
    passes = 0;
    while (!done && passes < 100) {
        if (ctl_apply_delete(&o, inventory, &done) < 0) {
            return die("delete");
        }
        passes++;
    }
    printf("component deletion:           %.3f s in %d passes, %lu requests\n",
           secs(co_time_monotonic() - t0), passes, atomic_load(&cnt->requests));

    co_kube_delete_options d = CO_KUBE_DELETE_OPTIONS_INIT;
    if (co_kube_delete(NULL, client, &(co_kube_ref){"v1", "Namespace", NULL, ns}, &d) < 0) {
        co_error_clear();
    }
    json_object_put(inventory);
    co_buf_dispose(&text);
    free(owner);
    co_kube_client_free(client);
    co_kube_config_free(cfg);
    if (cp_dir) {
        const char *argv[] = {script, "stop", cp_dir, NULL};
        rc = run(argv) == 0 ? 0 : 1;
        free(cp_dir);
        free(cp_kubeconfig);
    }
    free(script);
    return rc;
}
