/* SPDX-License-Identifier: Apache-2.0 */
/*
 * component-webhook: entry point. Parses the controller-runtime-style flags, loads the serving
 * certificate, starts the watches behind cycle detection and policies, serves the webhook over
 * TLS and the probes and metrics over plain HTTP, and drains gracefully on SIGTERM or SIGINT.
 * Signals are blocked in every thread and taken synchronously here with sigwait(), so no work
 * ever happens in a signal handler.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/error.h"
#include "co/flags.h"
#include "co/kube_client.h"
#include "co/kube_config.h"
#include "co/log.h"
#include "webhook/wh_admission.h"
#include "webhook/wh_cache.h"
#include "webhook/wh_certwatch.h"
#include "webhook/wh_server.h"
#include "webhook/wh_state.h"
#include "webhook/wh_tls.h"

typedef struct options {
    const char *kubeconfig;
    const char *metrics_addr;
    const char *probe_addr;
    const char *webhook_addr;
    const char *cert_dir;
    const char *cert_file;
    const char *key_file;
    const char *tls_min_version;
    long long cert_poll_seconds;
    long long threads;
    long long max_connections;
    long long connection_timeout;
    long long shutdown_timeout;
    int watch_cluster;
    int leader_elect;
    const char *log_level;
    const char *log_format;
    int help;
    int version;
} options;

static void usage(FILE *out, const co_flag *flags, size_t n)
{
    fprintf(out,
            "Usage: component-webhook [flags]\n\n"
            "Validates, defaults and converts Component objects for the Kubernetes API server.\n\n"
            "Flags:\n");
    co_flags_usage(out, flags, n);
}

static int fail(const char *what)
{
    co_log(CO_LOG_ERROR, what, "error", co_error_last(), NULL);
    return 1;
}

/* The serving certificate: explicit files, or tls.crt/tls.key in the certificate directory. */
static void cert_paths(char **cert, char **key, const options *o)
{
    *cert = o->cert_file ? co_xstrdup(o->cert_file) : co_xasprintf("%s/tls.crt", o->cert_dir);
    *key = o->key_file ? co_xstrdup(o->key_file) : co_xasprintf("%s/tls.key", o->cert_dir);
}

static int check_ranges(const options *o)
{
    if (o->threads < 1 || o->threads > 256) {
        return co_error_set(CO_EINVALID, "--webhook-threads must be between 1 and 256");
    }
    if (o->max_connections < 1 || o->max_connections > 1000000) {
        return co_error_set(CO_EINVALID, "--max-connections must be between 1 and 1000000");
    }
    if (o->connection_timeout < 1 || o->connection_timeout > 86400) {
        return co_error_set(CO_EINVALID,
                            "--connection-timeout-seconds must be between 1 and 86400");
    }
    if (o->shutdown_timeout < 0 || o->shutdown_timeout > 3600) {
        return co_error_set(CO_EINVALID, "--shutdown-timeout-seconds must be between 0 and 3600");
    }
    if (o->cert_poll_seconds < 1 || o->cert_poll_seconds > 86400) {
        return co_error_set(CO_EINVALID,
                            "--cert-poll-interval-seconds must be between 1 and 86400");
    }
    if (!o->cert_file != !o->key_file) {
        return co_error_set(CO_EINVALID, "--tls-cert-file and --tls-key-file go together");
    }
    return 0;
}

static int run(const options *o, wh_tls_min_version tls_min)
{
    int status = 1;
    wh_tls *tls = NULL;
    wh_certwatch *watch = NULL;
    wh_state *state = NULL;
    co_kube_config *kcfg = NULL;
    co_kube_client *client = NULL;
    wh_cache *cache = NULL;
    wh_server *server = NULL;
    char *cert = NULL, *key = NULL;

    cert_paths(&cert, &key, o);
    wh_tls_new(&tls);
    if (wh_certwatch_start(&watch, tls, cert, key, (int)o->cert_poll_seconds * 1000) < 0) {
        status = fail("cannot load the serving certificate");
        goto done;
    }
    wh_state_new(&state, WH_STATE_PENDING_TTL_MS);
    if (o->watch_cluster) {
        co_kube_client_options copts = CO_KUBE_CLIENT_OPTIONS_INIT;
        copts.user_agent = "component-webhook/" CO_VERSION;
        if (co_kube_config_load(&kcfg, o->kubeconfig, NULL) < 0 ||
            co_kube_client_new(&client, kcfg, &copts) < 0) {
            status = fail("cannot configure the Kubernetes client");
            goto done;
        }
        co_log(CO_LOG_INFO, "watching the cluster", "server", co_kube_config_server(kcfg), NULL);
    } else {
        co_log(CO_LOG_WARN,
               "not watching the cluster: no cycle detection against other Components and no "
               "ComponentPolicies",
               NULL);
    }
    /* Serve before watching: the API server must be able to reach us (conversion) before
     * anything else happens, and readiness waits for the caches anyway. */
    wh_handlers handlers = wh_admission_handlers(state);
    wh_server_config scfg = {
        .webhook_addr = o->webhook_addr,
        .probe_addr = o->probe_addr,
        .metrics_addr = o->metrics_addr,
        .threads = (unsigned)o->threads,
        .max_connections = (unsigned)o->max_connections,
        .connection_timeout = (unsigned)o->connection_timeout,
        .tls_min = tls_min,
        .handlers = &handlers,
        .tls = tls,
    };
    if (wh_server_start(&server, &scfg) < 0) {
        status = fail("cannot start serving");
        goto done;
    }
    co_log(CO_LOG_INFO, "serving", "webhook", o->webhook_addr, "probes", o->probe_addr, "metrics",
           o->metrics_addr, NULL);
    if (client) {
        if (wh_cache_start(&cache, client, state) < 0) {
            status = fail("cannot watch the cluster");
            goto done;
        }
        /* The server reads cfg.ready on every probe; it starts answering "not ready" until the
         * first lists have arrived. */
        wh_server_set_ready(server, wh_cache_ready, cache);
    }

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    int sig = 0;
    sigwait(&set, &sig);
    co_log(CO_LOG_INFO, "shutting down: draining requests in flight", "signal",
           sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
    int left = wh_server_drain(server, (int)o->shutdown_timeout * 1000);
    if (left > 0) {
        char n[16];
        snprintf(n, sizeof(n), "%d", left);
        co_log(CO_LOG_WARN, "shutdown timeout reached; cutting requests", "inFlight", n, NULL);
    }
    status = 0;
done:
    wh_server_free(server);
    wh_cache_stop(cache);
    co_kube_client_free(client);
    co_kube_config_free(kcfg);
    wh_certwatch_stop(watch);
    wh_state_free(state);
    wh_tls_free(tls);
    free(cert);
    free(key);
    if (status == 0) {
        co_log(CO_LOG_INFO, "stopped", NULL);
    }
    return status;
}

int main(int argc, char **argv)
{
    options o = {
        .metrics_addr = ":8080",
        .probe_addr = ":8081",
        .webhook_addr = ":9443",
        .cert_dir = "/tmp/k8s-webhook-server/serving-certs",
        .tls_min_version = "VersionTLS12",
        .cert_poll_seconds = 10,
        .threads = 2,
        .max_connections = 1024,
        .connection_timeout = 120,
        .shutdown_timeout = 25,
        .watch_cluster = 1,
        .log_level = "info",
        .log_format = "text",
    };
    const co_flag flags[] = {
        {"kubeconfig", CO_FLAG_STRING, &o.kubeconfig, "PATH",
         "kubeconfig file (default: $KUBECONFIG, then in-cluster configuration)"},
        {"metrics-bind-address", CO_FLAG_STRING, &o.metrics_addr, "ADDR",
         "address of the Prometheus metrics endpoint (default \":8080\"; \"0\" disables it)"},
        {"health-probe-bind-address", CO_FLAG_STRING, &o.probe_addr, "ADDR",
         "address of the /healthz and /readyz endpoints (default \":8081\")"},
        {"webhook-bind-address", CO_FLAG_STRING, &o.webhook_addr, "ADDR",
         "address of the TLS webhook server (default \":9443\")"},
        {"cert-dir", CO_FLAG_STRING, &o.cert_dir, "DIR",
         "directory holding tls.crt and tls.key (default "
         "\"/tmp/k8s-webhook-server/serving-certs\")"},
        {"tls-cert-file", CO_FLAG_STRING, &o.cert_file, "PATH",
         "serving certificate chain (PEM); overrides --cert-dir"},
        {"tls-key-file", CO_FLAG_STRING, &o.key_file, "PATH",
         "private key of the serving certificate (PEM); overrides --cert-dir"},
        {"cert-poll-interval-seconds", CO_FLAG_INT, &o.cert_poll_seconds, "N",
         "re-read the certificate files at least this often (default 10); changes are also "
         "picked up at once through inotify"},
        {"tls-min-version", CO_FLAG_STRING, &o.tls_min_version, "VERSION",
         "VersionTLS12 or VersionTLS13 (default \"VersionTLS12\")"},
        {"webhook-threads", CO_FLAG_INT, &o.threads, "N",
         "worker threads of the TLS server (default 2)"},
        {"max-connections", CO_FLAG_INT, &o.max_connections, "N",
         "concurrent TLS connections (default 1024)"},
        {"connection-timeout-seconds", CO_FLAG_INT, &o.connection_timeout, "N",
         "close a connection idle this long (default 120, above the API server's 90 s idle "
         "timeout so that it closes first)"},
        {"shutdown-timeout-seconds", CO_FLAG_INT, &o.shutdown_timeout, "N",
         "on SIGTERM, wait this long for requests in flight (default 25)"},
        {"watch-cluster", CO_FLAG_BOOL, &o.watch_cluster, NULL,
         "watch Components, ComponentPolicies and Namespaces (default true); false serves "
         "without cluster state, for benchmarks and offline use"},
        {"leader-elect", CO_FLAG_BOOL, &o.leader_elect, NULL,
         "only the Lease holder creates and rotates certificates"},
        {"log-level", CO_FLAG_STRING, &o.log_level, "LEVEL",
         "error, warn, info, debug or trace (default \"info\")"},
        {"log-format", CO_FLAG_STRING, &o.log_format, "FORMAT", "text or json (default \"text\")"},
        {"version", CO_FLAG_BOOL, &o.version, NULL, "print the version and exit"},
        {"help", CO_FLAG_BOOL, &o.help, NULL, "print this help and exit"},
    };
    size_t nflags = CO_ARRAY_SIZE(flags);

    int next = 0;
    if (co_flags_parse(&next, flags, nflags, argc, argv) < 0) {
        fprintf(stderr, "component-webhook: %s\n", co_error_last());
        usage(stderr, flags, nflags);
        return 2;
    }
    if (o.help) {
        usage(stdout, flags, nflags);
        return 0;
    }
    if (o.version) {
        printf("component-webhook %s\n", CO_VERSION);
        return 0;
    }
    if (next < argc) {
        fprintf(stderr, "component-webhook: unexpected argument \"%s\"\n", argv[next]);
        return 2;
    }
    co_log_level level;
    co_log_format format;
    wh_tls_min_version tls_min;
    if (co_log_level_parse(&level, o.log_level) < 0 ||
        co_log_format_parse(&format, o.log_format) < 0 ||
        wh_tls_min_version_parse(&tls_min, o.tls_min_version) < 0 || check_ranges(&o) < 0) {
        fprintf(stderr, "component-webhook: %s\n", co_error_last());
        return 2;
    }
    co_log_setup("webhook", level, format);

    /* Block the signals before any thread exists, so that every thread inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    co_log(CO_LOG_INFO, "starting", "version", CO_VERSION, "leader-elect",
           o.leader_elect ? "true" : "false", NULL);
    return run(&o, tls_min);
}
