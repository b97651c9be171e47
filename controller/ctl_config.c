/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's flag table and what its flags set (see ctl_config.h). Everything here runs on
 * the main thread before any other exists: the denied address ranges, the log setup and the
 * default render budget are read by the workers without locks.
 */
#include "controller/ctl_config.h"

#include <stdlib.h>
#include <string.h>

#include "co/util/budget.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "co/util/net.h"
#include "controller/ctl_cli.h"

static void usage(FILE *out, const co_flag *flags, size_t n)
{
    fprintf(out, "Usage: component-controller [flags]\n"
                 "       component-controller SUBCOMMAND [flags] ARGS...\n\n"
                 "Reconciles Component objects (core.cs.sap.com) in a Kubernetes cluster.\n\n");
    ctl_cli_usage(out);
    fprintf(out, "Flags:\n");
    co_flags_usage(out, flags, n);
}

/* The flags whose values need more than a type check. */
static int check(const ctl_config *c, FILE *err)
{
    if (c->max_concurrent_reconciles < 1 || c->max_concurrent_reconciles > 1000) {
        fprintf(err, "component-controller: --max-concurrent-reconciles must be 1..1000\n");
        return CO_FLAGS_EXIT_USAGE;
    }
    if (c->kube_api_qps < 0 || c->kube_api_qps > 100000 || c->kube_api_burst < 0 ||
        c->kube_api_burst > 1000000) {
        fprintf(err, "component-controller: --kube-api-qps must be 0..100000 and "
                     "--kube-api-burst 0..1000000\n");
        return CO_FLAGS_EXIT_USAGE;
    }
    if (c->target_client_ttl_s < 1 || c->target_client_ttl_s > 86400) {
        fprintf(err, "component-controller: --target-client-ttl must be 1..86400 seconds\n");
        return CO_FLAGS_EXIT_USAGE;
    }
    return -1;
}

/* Denied address ranges, logging and the render budget, before any thread exists and before
 * any connection is made. */
static int apply(ctl_config *c, FILE *err)
{
    if (co_duration_parse(&c->policy_audit_interval_ns, c->policy_audit_interval) < 0 ||
        c->policy_audit_interval_ns < 0) {
        fprintf(err, "component-controller: --policy-audit-interval: not a duration: %s\n",
                c->policy_audit_interval);
        co_error_clear();
        return CO_FLAGS_EXIT_USAGE;
    }
    int deny_rc = co_net_deny_set(c->deny_cidrs.items, c->deny_cidrs.len);
    co_flag_list_dispose(&c->deny_cidrs);
    if (deny_rc < 0) {
        fprintf(err, "component-controller: --deny-cidr: %s\n", co_error_last());
        return CO_FLAGS_EXIT_USAGE;
    }
    co_budget_limits budget;
    if (co_budget_limits_parse(&budget, c->render_cpu_budget, c->render_memory_budget) < 0 ||
        co_flags_logging_setup(&c->logging, "controller") < 0) {
        fprintf(err, "component-controller: %s\n", co_error_last());
        co_flags_logging_dispose(&c->logging);
        return CO_FLAGS_EXIT_USAGE;
    }
    co_budget_set_default(&budget);
    return -1;
}

int ctl_config_load(ctl_config *c, int argc, char **argv, FILE *out, FILE *err)
{
    memset(c, 0, sizeof(*c));
    c->metrics_addr = ":8080";
    c->probe_addr = ":8081";
    c->max_concurrent_reconciles = 5;
    c->cache_dependents = 1;
    c->target_client_ttl_s = 900;
    c->policy_audit_interval = "1h";
    const co_flag flags[] = {
        {"kubeconfig", CO_FLAG_STRING, &c->kubeconfig, "PATH",
         "kubeconfig file (default: $KUBECONFIG, then in-cluster configuration)"},
        {"metrics-bind-address", CO_FLAG_STRING, &c->metrics_addr, "ADDR",
         "address of the Prometheus metrics endpoint (default \":8080\"; \"0\" disables it)"},
        {"health-probe-bind-address", CO_FLAG_STRING, &c->probe_addr, "ADDR",
         "address of the /healthz and /readyz endpoints (default \":8081\")"},
        {"leader-elect", CO_FLAG_BOOL, &c->leader_elect, NULL,
         "run only while holding the leader Lease (for several replicas)"},
        {"kube-api-qps", CO_FLAG_INT, &c->kube_api_qps, "N",
         "requests per second to the local API server (default 0: no client-side limit; the "
         "server's API Priority and Fairness queues the controller's requests)"},
        {"kube-api-burst", CO_FLAG_INT, &c->kube_api_burst, "N",
         "requests above --kube-api-qps allowed in a burst (default 1.5 x the QPS)"},
        {"dependent-events", CO_FLAG_BOOL, &c->dependent_events, NULL,
         "also record an Event on every dependent object created, updated or deleted, as the Go "
         "operator does (one more API write per object change)"},
        {"cache-dependents", CO_FLAG_BOOL, &c->cache_dependents, NULL,
         "watch the types of this cluster's dependents (where the controller may list them), "
         "read unchanged dependents from memory and reconcile a Component when one of them "
         "changes (default true; false reads every dependent from the API server)"},
        {"default-service-account", CO_FLAG_STRING, &c->default_service_account, "NAME",
         "service account to impersonate for Components that name none"},
        {"max-concurrent-reconciles", CO_FLAG_INT, &c->max_concurrent_reconciles, "N",
         "number of Components reconciled in parallel (default 5)"},
        {"namespace", CO_FLAG_LIST, &c->namespaces, "NS",
         "watch Components only in this namespace (repeatable; default: all namespaces)"},
        {"label-selector", CO_FLAG_STRING, &c->label_selector, "SELECTOR",
         "watch only Components matching this label selector (to shard a cluster)"},
        {"leader-election-namespace", CO_FLAG_STRING, &c->leader_namespace, "NS",
         "namespace of the leader Lease (default: the configuration's namespace)"},
        {"source-cache-dir", CO_FLAG_STRING, &c->cache_dir, "DIR",
         "where downloaded source artifacts are kept (default: $TMPDIR/component-controller)"},
        {"target-client-ttl", CO_FLAG_INT, &c->target_client_ttl_s, "SECONDS",
         "clients of remote or impersonated targets unused this long are dropped (default 900)"},
        {"deny-cidr", CO_FLAG_LIST, &c->deny_cidrs, "CIDR[,CIDR...]",
         "addresses that source downloads, git remotes and kubeconfigs from Secrets must never "
         "reach, e.g. cloud metadata (repeatable; default: none)"},
        {"render-cpu-budget", CO_FLAG_STRING, &c->render_cpu_budget, "DURATION",
         "CPU time one render of a Component may take; beyond it the Component fails (default "
         "30s)"},
        {"render-memory-budget", CO_FLAG_STRING, &c->render_memory_budget, "BYTES",
         "memory one render may take for template values, rendered output and decoded documents, "
         "e.g. 64Mi or 1Gi; beyond it the Component fails (default 64Mi)"},
        {"events-address", CO_FLAG_STRING, &c->events_address, "URL",
         "also POST every Component event to this address as a Flux event (the "
         "notification-controller's, e.g. "
         "http://notification-controller.flux-system.svc.cluster.local./)"},
        {"policy-audit-interval", CO_FLAG_STRING, &c->policy_audit_interval, "DURATION",
         "how often every ComponentPolicy is evaluated against every watched Component, its "
         "report written to the policy's status; a policy change audits within seconds (default "
         "1h; 0 disables audit reports)"},
        CO_FLAGS_LOGGING(&c->logging),
        {"version", CO_FLAG_BOOL, &c->version, NULL, "print the version and exit"},
        {"help", CO_FLAG_BOOL, &c->help, NULL, "print this help and exit"},
    };
    size_t nflags = CO_ARRAY_SIZE(flags);

    co_flags_command cmd = {"component-controller", flags, nflags, &c->help, &c->version, usage};
    int status = co_flags_parse_command(&cmd, argc, argv, out, err);
    if (status >= 0) {
        return status;
    }
    status = check(c, err);
    return status >= 0 ? status : apply(c, err);
}

void ctl_config_dispose(ctl_config *c)
{
    co_flag_list_dispose(&c->namespaces);
    co_flag_list_dispose(&c->deny_cidrs);
    co_flags_logging_dispose(&c->logging);
}

ctl_manager_options ctl_config_manager_options(const ctl_config *c)
{
    ctl_manager_options mo = {0};
    mo.kubeconfig = c->kubeconfig;
    mo.metrics_addr = c->metrics_addr;
    mo.probe_addr = c->probe_addr;
    mo.leader_elect = c->leader_elect != 0;
    mo.dependent_events = c->dependent_events != 0;
    mo.cache_dependents = c->cache_dependents != 0;
    if (c->kube_api_qps > 0) {
        mo.qps = (double)c->kube_api_qps;
        mo.burst = c->kube_api_burst > 0 ? (int)c->kube_api_burst
                                         : (int)(c->kube_api_qps + (c->kube_api_qps + 1) / 2);
    } else {
        mo.qps = -1;
    }
    mo.leader_namespace = c->leader_namespace;
    mo.default_service_account = c->default_service_account;
    mo.workers = (int)c->max_concurrent_reconciles;
    mo.namespaces = (const char *const *)c->namespaces.items;
    mo.nnamespaces = c->namespaces.len;
    mo.label_selector = c->label_selector;
    mo.target_ttl_ns = c->target_client_ttl_s * 1000000000LL;
    mo.events_address = c->events_address;
    mo.policy_audit_interval_ns = c->policy_audit_interval_ns;
    return mo;
}

char *ctl_config_cache_dir(const ctl_config *c)
{
    if (c->cache_dir) {
        return co_xstrdup(c->cache_dir);
    }
    const char *tmp = getenv("TMPDIR"); // NOLINT(concurrency-mt-unsafe): single-threaded here
    return co_xasprintf("%s/component-controller", tmp && *tmp ? tmp : "/tmp");
}
