/* SPDX-License-Identifier: Apache-2.0 */
/*
 * component-controller: entry point. Parses the controller-runtime-style flags, configures
 * logging, starts the manager (ctl_manager.h) and runs until SIGTERM or SIGINT, or until
 * leadership is lost. Signals are blocked in every thread and taken synchronously here with
 * sigtimedwait(), so no work ever happens in a signal handler.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "co/util/budget.h"
#include "co/util/error.h"
#include "co/util/flags.h"
#include "co/util/log.h"
#include "co/util/net.h"
#include "controller/ctl_cli.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_sources.h"

typedef struct options {
    const char *kubeconfig;
    const char *metrics_addr;
    const char *probe_addr;
    int leader_elect;
    co_flags_logging logging;
    const char *default_service_account;
    long long max_concurrent_reconciles;
    co_flag_list namespaces;
    const char *label_selector;
    const char *leader_namespace;
    const char *cache_dir;
    long long target_client_ttl;
    co_flag_list deny_cidrs;
    const char *render_cpu_budget;
    const char *render_memory_budget;
    const char *events_address;
    int help;
    int version;
} options;

static void usage(FILE *out, const co_flag *flags, size_t n)
{
    fprintf(out, "Usage: component-controller [flags]\n"
                 "       component-controller SUBCOMMAND [flags] ARGS...\n\n"
                 "Reconciles Component objects (core.cs.sap.com) in a Kubernetes cluster.\n\n");
    ctl_cli_usage(out);
    fprintf(out, "Flags:\n");
    co_flags_usage(out, flags, n);
}

int main(int argc, char **argv)
{
    if (argc > 1 && ctl_cli_is_subcommand(argv[1])) {
        return ctl_cli_main(argc - 1, argv + 1, stdout, stderr);
    }
    options o = {
        .metrics_addr = ":8080",
        .probe_addr = ":8081",
        .max_concurrent_reconciles = 5,
        .target_client_ttl = 900,
    };
    const co_flag flags[] = {
        {"kubeconfig", CO_FLAG_STRING, &o.kubeconfig, "PATH",
         "kubeconfig file (default: $KUBECONFIG, then in-cluster configuration)"},
        {"metrics-bind-address", CO_FLAG_STRING, &o.metrics_addr, "ADDR",
         "address of the Prometheus metrics endpoint (default \":8080\"; \"0\" disables it)"},
        {"health-probe-bind-address", CO_FLAG_STRING, &o.probe_addr, "ADDR",
         "address of the /healthz and /readyz endpoints (default \":8081\")"},
        {"leader-elect", CO_FLAG_BOOL, &o.leader_elect, NULL,
         "run only while holding the leader Lease (for several replicas)"},
        {"default-service-account", CO_FLAG_STRING, &o.default_service_account, "NAME",
         "service account to impersonate for Components that name none"},
        {"max-concurrent-reconciles", CO_FLAG_INT, &o.max_concurrent_reconciles, "N",
         "number of Components reconciled in parallel (default 5)"},
        {"namespace", CO_FLAG_LIST, &o.namespaces, "NS",
         "watch Components only in this namespace (repeatable; default: all namespaces)"},
        {"label-selector", CO_FLAG_STRING, &o.label_selector, "SELECTOR",
         "watch only Components matching this label selector (to shard a cluster)"},
        {"leader-election-namespace", CO_FLAG_STRING, &o.leader_namespace, "NS",
         "namespace of the leader Lease (default: the configuration's namespace)"},
        {"source-cache-dir", CO_FLAG_STRING, &o.cache_dir, "DIR",
         "where downloaded source artifacts are kept (default: $TMPDIR/component-controller)"},
        {"target-client-ttl", CO_FLAG_INT, &o.target_client_ttl, "SECONDS",
         "clients of remote or impersonated targets unused this long are dropped (default 900)"},
        {"deny-cidr", CO_FLAG_LIST, &o.deny_cidrs, "CIDR[,CIDR...]",
         "addresses that source downloads, git remotes and kubeconfigs from Secrets must never "
         "reach, e.g. cloud metadata (repeatable; default: none)"},
        {"render-cpu-budget", CO_FLAG_STRING, &o.render_cpu_budget, "DURATION",
         "CPU time one render of a Component may take; beyond it the Component fails (default "
         "30s)"},
        {"render-memory-budget", CO_FLAG_STRING, &o.render_memory_budget, "BYTES",
         "memory one render may take for template values, rendered output and decoded documents, "
         "e.g. 64Mi or 1Gi; beyond it the Component fails (default 64Mi)"},
        {"events-address", CO_FLAG_STRING, &o.events_address, "URL",
         "also POST every Component event to this address as a Flux event (the "
         "notification-controller's, e.g. "
         "http://notification-controller.flux-system.svc.cluster.local./)"},
        CO_FLAGS_LOGGING(&o.logging),
        {"version", CO_FLAG_BOOL, &o.version, NULL, "print the version and exit"},
        {"help", CO_FLAG_BOOL, &o.help, NULL, "print this help and exit"},
    };
    size_t nflags = CO_ARRAY_SIZE(flags);

    int next = 0;
    if (co_flags_parse(&next, flags, nflags, argc, argv) < 0) {
        fprintf(stderr, "component-controller: %s\n", co_error_last());
        usage(stderr, flags, nflags);
        return 2;
    }
    if (o.help) {
        usage(stdout, flags, nflags);
        return 0;
    }
    if (o.version) {
        printf("component-controller %s\n", CO_VERSION);
        return 0;
    }
    if (next < argc) {
        fprintf(stderr, "component-controller: unexpected argument \"%s\"\n", argv[next]);
        return 2;
    }
    if (o.max_concurrent_reconciles < 1 || o.max_concurrent_reconciles > 1000) {
        fprintf(stderr, "component-controller: --max-concurrent-reconciles must be 1..1000\n");
        return 2;
    }
    if (o.target_client_ttl < 1 || o.target_client_ttl > 86400) {
        fprintf(stderr, "component-controller: --target-client-ttl must be 1..86400 seconds\n");
        return 2;
    }
    /* before any thread exists and before any connection is made */
    int deny_rc = co_net_deny_set(o.deny_cidrs.items, o.deny_cidrs.len);
    co_flag_list_dispose(&o.deny_cidrs);
    if (deny_rc < 0) {
        fprintf(stderr, "component-controller: --deny-cidr: %s\n", co_error_last());
        co_flag_list_dispose(&o.namespaces);
        co_flags_logging_dispose(&o.logging);
        return 2;
    }
    co_log_level level;
    co_log_format format;
    char **log_warnings = NULL;
    int log_rc = co_flags_logging_resolve(&level, &format, &log_warnings, &o.logging);
    co_flags_logging_dispose(&o.logging);
    if (log_rc < 0) {
        fprintf(stderr, "component-controller: %s\n", co_error_last());
        co_flag_list_dispose(&o.namespaces);
        return 2;
    }
    co_budget_limits budget;
    if (co_budget_limits_parse(&budget, o.render_cpu_budget, o.render_memory_budget) < 0) {
        fprintf(stderr, "component-controller: %s\n", co_error_last());
        co_flag_list_dispose(&o.namespaces);
        co_flags_strv_free(log_warnings);
        return 2;
    }
    /* before any worker starts: they read it without locking */
    co_budget_set_default(&budget);
    co_log_setup("controller", level, format);
    for (char **w = log_warnings; w && *w; w++) {
        co_log(CO_LOG_WARN, *w, NULL);
    }
    co_flags_strv_free(log_warnings);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    char denied[1024];
    co_net_deny_describe(denied, sizeof(denied));
    co_log(CO_LOG_INFO, "starting", "version", CO_VERSION, "leader-elect",
           o.leader_elect ? "true" : "false", "deny-cidr", denied, NULL);

    char *cache_dir = o.cache_dir ? co_xstrdup(o.cache_dir) : NULL;
    if (!cache_dir) {
        const char *tmp = getenv("TMPDIR"); // NOLINT(concurrency-mt-unsafe): single-threaded here
        cache_dir = co_xasprintf("%s/component-controller", tmp && *tmp ? tmp : "/tmp");
    }
    ctl_sources *sources = NULL;
    if (ctl_sources_new(&sources, cache_dir) < 0) {
        co_log(CO_LOG_ERROR, "cannot open the source cache", "dir", cache_dir, "error",
               co_error_last(), NULL);
        free(cache_dir);
        co_flag_list_dispose(&o.namespaces);
        return 1;
    }
    free(cache_dir);
    ctl_source_ops source_ops = ctl_sources_ops(sources);
    ctl_apply_ops apply_ops = ctl_apply_engine_ops();

    ctl_manager_options mo = {0};
    mo.source = &source_ops;
    mo.apply = &apply_ops;
    mo.kubeconfig = o.kubeconfig;
    mo.metrics_addr = o.metrics_addr;
    mo.probe_addr = o.probe_addr;
    mo.leader_elect = o.leader_elect != 0;
    mo.leader_namespace = o.leader_namespace;
    mo.default_service_account = o.default_service_account;
    mo.workers = (int)o.max_concurrent_reconciles;
    mo.namespaces = o.namespaces.items;
    mo.nnamespaces = o.namespaces.len;
    mo.label_selector = o.label_selector;
    mo.target_ttl_ns = o.target_client_ttl * 1000000000LL;
    mo.events_address = o.events_address;
    ctl_manager *m = NULL;
    int rc = ctl_manager_new(&m, &mo);
    if (rc == 0) {
        rc = ctl_sources_attach(sources, m);
    }
    if (rc == 0) {
        rc = ctl_manager_start(m);
    }
    if (rc < 0) {
        co_log(CO_LOG_ERROR, "cannot start", "error", co_error_last(), NULL);
        ctl_manager_free(m);
        ctl_sources_free(sources);
        co_flag_list_dispose(&o.namespaces);
        return 1;
    }
    co_log(CO_LOG_INFO, "started", "cluster-id", ctl_manager_cluster_id(m), NULL);

    int exit_code = 0;
    for (;;) {
        struct timespec tick = {0, 200L * 1000 * 1000};
        int sig = sigtimedwait(&set, NULL, &tick);
        if (sig == SIGTERM || sig == SIGINT) {
            co_log(CO_LOG_INFO, "shutting down", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT",
                   NULL);
            break;
        }
        ctl_sources_set_leader(sources, ctl_manager_leading(m));
        if (ctl_manager_lost(m)) {
            co_log(CO_LOG_ERROR, "leadership lost; exiting", NULL);
            exit_code = 1;
            break;
        }
    }
    ctl_manager_free(m);
    ctl_sources_free(sources);
    co_flag_list_dispose(&o.namespaces);
    return exit_code;
}
