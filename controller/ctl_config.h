/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_config.h
 * The daemon's configuration: its controller-runtime-style flags, their checks, and the
 * process-wide settings they make (denied address ranges, logging, the render budget) before
 * any thread exists. controller/main.c starts the daemon from it.
 */
#ifndef CTL_CONFIG_H
#define CTL_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "co/util/flags.h"
#include "controller/ctl_manager.h"

/** What the command line says. Strings are borrowed from argv; the lists are owned. */
typedef struct ctl_config {
    const char *kubeconfig;
    const char *metrics_addr;
    const char *probe_addr;
    int leader_elect;
    int dependent_events;
    int cache_dependents;
    long long kube_api_qps;   /**< 0: no client-side limit */
    long long kube_api_burst; /**< 0: 1.5 x qps */
    co_flags_logging logging;
    const char *default_service_account;
    long long max_concurrent_reconciles;
    co_flag_list namespaces;
    const char *label_selector;
    const char *leader_namespace;
    const char *cache_dir;
    long long target_client_ttl_s; /**< seconds */
    co_flag_list deny_cidrs;
    const char *render_cpu_budget;
    const char *render_memory_budget;
    const char *events_address;
    const char *policy_audit_interval; /**< Go duration; "0" disables the audit */
    int64_t policy_audit_interval_ns;  /**< parsed by ctl_config_load() */
    int help;
    int version;
} ctl_config;

/**
 * Parses the daemon's flags into @p c (dispose it whatever the result), checks them, and makes
 * the process-wide settings: denied address ranges, logging, the default render budget. Help,
 * the version and usage errors are printed here.
 * @param out where --help and --version go
 * @param err where usage errors go
 * @return -1 to go on and start the daemon; else the exit status (0 after --help or
 *         --version, 2 for a bad flag).
 */
int ctl_config_load(ctl_config *c, int argc, char **argv, FILE *out, FILE *err);

/** Frees the lists of @p c. */
void ctl_config_dispose(ctl_config *c);

/** The manager's options for @p c (borrowing from @p c; source and apply left unset). */
ctl_manager_options ctl_config_manager_options(const ctl_config *c);

/** The directory of the source artifact cache: --source-cache-dir, else
 * $TMPDIR/component-controller (free()). */
char *ctl_config_cache_dir(const ctl_config *c);

#endif
