/* SPDX-License-Identifier: Apache-2.0 */
/*
 * component-controller: entry point. Runs a subcommand (ctl_cli.h), or loads the configuration
 * (ctl_config.h), starts the manager (ctl_manager.h) and runs until SIGTERM or SIGINT, or until
 * leadership is lost. Signals are blocked in every thread and taken synchronously here with
 * sigtimedwait(), so no work ever happens in a signal handler.
 */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "co/util/daemon.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "co/util/net.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_cli.h"
#include "controller/ctl_config.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_sources.h"

/* glibc's malloc gives each thread that allocates concurrently an arena of its own (up to eight
 * per core); every worker's arena then keeps its own free, fragmented memory. One is enough for
 * a daemon whose threads mostly wait on the network: measured with make bench BENCH=controller,
 * a second arena cost 2 MiB of resident memory at 1,000 Components and gained no speed. */
#define MALLOC_ARENAS 1
/* Blocks this large or larger are mapped on their own and unmapped when freed. Without a fixed
 * threshold glibc raises it to the largest block freed so far, and the buffers of a metrics
 * scrape or a large render (megabytes at 1,000 Components) then come from the heap and keep it
 * resident after they are freed. */
#define MALLOC_MMAP_THRESHOLD (256 * 1024)
/* ticks of the main loop (200 ms) without a reconcile after which a burst is over */
#define QUIET_TICKS 5
/* ticks between trims while reconciles never stop (a thousand Components requeued every ten
 * seconds leave no quiet tick): a trim of some 50 MiB takes a few milliseconds */
#define TRIM_TICKS 50

int main(int argc, char **argv)
{
    if (argc > 1 && ctl_cli_is_subcommand(argv[1])) {
        return ctl_cli_main(argc - 1, argv + 1, stdout, stderr);
    }
    ctl_config cfg;
    int status = ctl_config_load(&cfg, argc, argv, stdout, stderr);
    if (status >= 0) {
        ctl_config_dispose(&cfg);
        return status;
    }

    sigset_t set;
    co_daemon_block_signals(&set);
    mallopt(M_ARENA_MAX, MALLOC_ARENAS); // NOLINT(concurrency-mt-unsafe): no thread started yet
    mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD); // NOLINT(concurrency-mt-unsafe): as above

    char denied[1024];
    co_net_deny_describe(denied, sizeof(denied));
    co_log(CO_LOG_INFO, "starting", "version", CO_VERSION, "leader-elect",
           cfg.leader_elect ? "true" : "false", "deny-cidr", denied, NULL);

    char *cache_dir = ctl_config_cache_dir(&cfg);
    ctl_sources *sources = NULL;
    if (ctl_sources_new(&sources, cache_dir) < 0) {
        co_log(CO_LOG_ERROR, "cannot open the source cache", "dir", cache_dir, "error",
               co_error_last(), NULL);
        free(cache_dir);
        ctl_config_dispose(&cfg);
        return 1;
    }
    free(cache_dir);
    ctl_source_ops source_ops = ctl_sources_ops(sources);
    ctl_apply_ops apply_ops = ctl_apply_engine_ops();

    ctl_manager_options mo = ctl_config_manager_options(&cfg);
    mo.source = &source_ops;
    mo.apply = &apply_ops;
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
        ctl_config_dispose(&cfg);
        return 1;
    }
    co_log(CO_LOG_INFO, "started", "cluster-id", ctl_manager_cluster_id(m), NULL);

    int exit_code = 0;
    unsigned long trimmed_at = 0, last_reconciles = 0;
    int quiet = 0, since_trim = 0;
    for (;;) {
        struct timespec tick = {0, 200L * 1000 * 1000};
        int sig = sigtimedwait(&set, NULL, &tick);
        if (sig == SIGTERM || sig == SIGINT) {
            co_log(CO_LOG_INFO, "shutting down", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT",
                   NULL);
            break;
        }
        ctl_sources_set_leader(sources, ctl_manager_leading(m));
        /* the memory a burst of reconciles freed goes back to the system once it is over,
         * instead of staying with the arenas until the next one */
        ctl_manager_stats st;
        ctl_manager_stats_get(m, &st);
        quiet = st.reconciles == last_reconciles ? quiet + 1 : 0;
        last_reconciles = st.reconciles;
        since_trim++;
        if (st.reconciles != trimmed_at && (quiet >= QUIET_TICKS || since_trim >= TRIM_TICKS)) {
            malloc_trim(0);
            trimmed_at = st.reconciles;
            since_trim = 0;
        }
        if (ctl_manager_lost(m)) {
            co_log(CO_LOG_ERROR, "leadership lost; exiting", NULL);
            exit_code = 1;
            break;
        }
    }
    ctl_manager_free(m);
    ctl_sources_free(sources);
    ctl_config_dispose(&cfg);
    return exit_code;
}
