/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The measuring instrument of bench_controller: the component-controller daemon as a child
 * process (its metrics and probe endpoints, its resident memory), request counts from the
 * daemon's /metrics and from the API server's own (which tell status, event and dependent
 * writes apart), a stand-in kubelet that marks Deployments available, and a tracker that
 * counts the Components of a namespace that are Ready. Nothing here knows the workloads.
 */
#ifndef CO_CTLBENCH_H
#define CO_CTLBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"

/* ---- processes --------------------------------------------------------------------------- */

/** Runs @p argv (argv[0] a path) with stdout on stderr and waits: its exit status, or -1. */
int ctlbench_run(const char *const *argv);

/**
 * On SIGINT, SIGTERM and SIGHUP (then exiting with 128 + signal) and at exit: kills the daemon
 * that runs, stops the control plane in @p cp_dir and removes @p work_dir. Call again with
 * NULLs once the bench has done so itself.
 * @param script tests/env/controlplane.sh
 * @param cp_dir the control plane's directory, or NULL when there is none to stop
 * @param work_dir removed, or NULL to keep it (all three borrowed until the next call)
 */
void ctlbench_guard(const char *script, const char *cp_dir, const char *work_dir);

/** The daemon's command line beyond the binary; strings are borrowed. */
typedef struct ctlbench_daemon_options {
    const char *binary;     /**< build/release/component-controller */
    const char *kubeconfig; /**< --kubeconfig */
    const char *namespace;  /**< --namespace */
    const char *cache_dir;  /**< --source-cache-dir */
    const char *log_path;   /**< stdout and stderr go here */
    int workers;            /**< --max-concurrent-reconciles; 0: the daemon's default */
} ctlbench_daemon_options;

typedef struct ctlbench_daemon ctlbench_daemon;

/**
 * Starts the daemon on free loopback ports for metrics and probes. It is killed when the bench
 * dies.
 * @return 0, or -1 with a message on stderr.
 */
int ctlbench_daemon_start(ctlbench_daemon **out, const ctlbench_daemon_options *opts);

/** Waits until /readyz answers 200: 0; -1 when the daemon exited or @p timeout_ms passed. */
int ctlbench_daemon_wait_ready(ctlbench_daemon *d, long timeout_ms);

/** Whether the process still runs (reaps it when it exited). */
bool ctlbench_daemon_alive(ctlbench_daemon *d);

/** The body of GET /metrics into @p out (a fresh co_buf): 0, or -1. */
int ctlbench_daemon_metrics(ctlbench_daemon *d, co_buf *out);

/** VmRSS and VmHWM of the daemon in KiB (0 when unknown). */
void ctlbench_daemon_memory(ctlbench_daemon *d, long *rss_kib, long *hwm_kib);

/** User plus system CPU seconds the daemon has used so far (-1 when unknown). */
double ctlbench_daemon_cpu_s(ctlbench_daemon *d);

/** User plus system CPU seconds process @p pid has used so far, from /proc/<pid>/stat; 0 for
 * this process. -1 when unknown (no such process). */
double ctlbench_cpu_s(pid_t pid);

/** Prints the last @p lines lines of the daemon's log to stderr. */
void ctlbench_daemon_log_tail(ctlbench_daemon *d, int lines);

/** SIGTERM, up to 10 s of grace, then SIGKILL; frees @p d. NULL is a no-op. */
void ctlbench_daemon_stop(ctlbench_daemon *d);

/* ---- request counts ---------------------------------------------------------------------- */

#define CTLBENCH_TALLY_MAX 32

/** Counts by name ("configmaps APPLY", "404 GET"); the first CTLBENCH_TALLY_MAX names. */
typedef struct ctlbench_tally {
    struct {
        char name[96];
        double n;
    } items[CTLBENCH_TALLY_MAX];
    size_t len;
} ctlbench_tally;

/**
 * What the daemon did, as counters since it started (from its /metrics) and writes by kind
 * (from the API server's apiserver_request_total, which counts every client: take them over a
 * window in which the bench itself writes nothing of that kind).
 */
typedef struct ctlbench_counts {
    double requests;   /**< component_operator_runtime_requests_total */
    double reads;      /**< of them, method GET */
    double writes;     /**< of them, any other method */
    double non2xx;     /**< rest_client_requests_total with a code other than 2xx */
    double reconciles; /**< component_operator_runtime_reconcile_total */
    double workers;    /**< controller_runtime_max_concurrent_reconciles */
    /* API server, writes only (CREATE, UPDATE, PATCH, APPLY, DELETE, ...) */
    double status_writes;    /**< components/status */
    double component_writes; /**< components (finalizers; the bench's creates and deletes) */
    double event_writes;     /**< events, core and events.k8s.io */
    double dependent_writes; /**< configmaps and deployments (the workloads' kinds) */
    double kubelet_writes;   /**< deployments/status: the bench's kubelet */
    double other_writes;     /**< any other (the API server's own endpoint writes among them) */
    ctlbench_tally writes_by_kind; /**< API server: the writes above by resource and verb */
    ctlbench_tally gets_by_kind;   /**< API server: GETs, LISTs and WATCHes by resource (every
                                        client's: the bench's kubelet reads Deployments too) */
    ctlbench_tally non2xx_by_code; /**< daemon: the non-2xx answers by code and method */
} ctlbench_counts;

/**
 * Reads both sources. @p d may be NULL (only the API server's counters are read).
 * @return 0, or -1 with a message on stderr.
 */
int ctlbench_counts_get(ctlbench_counts *out, ctlbench_daemon *d, co_kube_client *admin);

/** @p b - @p a, member by member (workers: @p b's; names counting 0 left out of tallies). */
ctlbench_counts ctlbench_counts_diff(const ctlbench_counts *a, const ctlbench_counts *b);

/** The value of metric @p name summed over the series of Prometheus text @p text. */
double ctlbench_metric_sum(const char *text, const char *name);

/* ---- kubelet ----------------------------------------------------------------------------- */

/**
 * A stand-in for the kubelet and the deployment controller: every Deployment carrying the
 * label @p selector is given, by a patch of its status, the status of one available replica
 * for its generation (kstatus Current), by a few threads of its own client.
 */
typedef struct ctlbench_kubelet ctlbench_kubelet;

/** @return 0, or -1 with a message on stderr. */
int ctlbench_kubelet_start(ctlbench_kubelet **out,
                           const co_kube_config *cfg,
                           const char *label_selector);

/**
 * Waits until the Deployment @p ns/@p name has been marked available.
 * @return 0; -1 after @p timeout_ms.
 */
int ctlbench_kubelet_wait(ctlbench_kubelet *k, const char *ns, const char *name, long timeout_ms);

/** Status patches sent so far. */
unsigned long ctlbench_kubelet_patches(ctlbench_kubelet *k);

/** Stops and frees. NULL is a no-op. */
void ctlbench_kubelet_stop(ctlbench_kubelet *k);

/* ---- Component tracker ------------------------------------------------------------------- */

/**
 * Watches the Components of one namespace: how many exist and how many are Ready (state
 * Ready for their current generation), and when the count of Ready ones last rose.
 */
typedef struct ctlbench_tracker ctlbench_tracker;

/** Starts and waits for the first list. @return 0, or -1 with a message on stderr. */
int ctlbench_tracker_start(ctlbench_tracker **out, co_kube_client *client, const char *ns);

/** Components present and Ready; @p last_ready_ns (may be NULL): co_time_monotonic() of the
 * last transition to Ready, 0 when none. */
void ctlbench_tracker_counts(ctlbench_tracker *t,
                             size_t *present,
                             size_t *ready,
                             int64_t *last_ready_ns);

/** Stops and frees. NULL is a no-op. */
void ctlbench_tracker_stop(ctlbench_tracker *t);

#endif
