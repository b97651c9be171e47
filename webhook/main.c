/* SPDX-License-Identifier: Apache-2.0 */
/*
 * component-webhook: entry point. Loads the configuration (wh_config.h), gets the serving
 * certificate (self-managed through a Secret, or from files), starts the watches behind cycle
 * detection and policies, serves the webhook over TLS and the probes and metrics over plain
 * HTTP, and drains gracefully on SIGTERM or SIGINT. `component-webhook certs ...` is the
 * certificate command line (certs/certs_cli.h).
 * Signals are blocked in every thread and taken synchronously here with sigwait(), so no work
 * ever happens in a signal handler.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mimalloc.h>

#include "certs/certs_cli.h"
#include "certs/certs_manager.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_transport.h"
#include "co/util/daemon.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "webhook/wh_admission.h"
#include "webhook/wh_cache.h"
#include "webhook/wh_certwatch.h"
#include "webhook/wh_config.h"
#include "webhook/wh_metrics.h"
#include "webhook/wh_server.h"
#include "webhook/wh_state.h"
#include "webhook/wh_tls.h"

static int fail(const char *what)
{
    co_log(CO_LOG_ERROR, what, "error", co_error_last(), NULL);
    return 1;
}

static int serve_pem(const char *cert_pem, const char *key_pem, void *payload)
{
    int changed = 0;
    int rc =
        wh_tls_set_pem(payload, &changed, cert_pem, strlen(cert_pem), key_pem, strlen(key_pem));
    if (rc == 0 && changed) {
        co_log(CO_LOG_INFO, "serving certificate swapped; new connections get it", NULL);
    }
    return rc;
}

/* Readiness: the watches have listed, and (self-managed) the certificate is served and its CA
 * published. */
typedef struct readiness {
    wh_cache *cache;
    co_certs_manager *certs;
} readiness;

static size_t ready_checks(void *ctx, wh_probe_check *out, size_t max)
{
    readiness *r = ctx;
    size_t n = 0;
    if (r->cache) {
        n += wh_cache_ready(r->cache, out, max);
    }
    if (r->certs && n < max) {
        out[n].name = "certificates";
        out[n].failure = co_certs_manager_not_ready(r->certs);
        n++;
    }
    return n;
}

static char *identity(void)
{
    char host[256] = "component-webhook";
    gethostname(host, sizeof(host) - 1);
    return co_xasprintf("%s_%ld", host, (long)getpid());
}

static int run(const wh_config *o, const sigset_t *stop)
{
    int status = 1;
    wh_tls *tls = NULL;
    wh_certwatch *watch = NULL;
    wh_state *state = NULL;
    co_kube_config *kcfg = NULL;
    co_kube_client *client = NULL;
    wh_cache *cache = NULL;
    wh_server *server = NULL;
    co_certs_manager *certs = NULL;
    wh_cert_settings cs;
    char *cert = NULL, *key = NULL, *me = NULL;
    readiness ready = {0};
    bool files = wh_config_file_mode(o);

    memset(&cs, 0, sizeof(cs));
    wh_tls_new(&tls);
    if (files) {
        wh_config_cert_paths(&cert, &key, o);
        if (wh_certwatch_start(&watch, tls, cert, key, (int)o->cert_poll_seconds * 1000) < 0) {
            status = fail("cannot load the serving certificate");
            goto done;
        }
    } else if (wh_cert_settings_init(&cs, o) < 0) {
        status = fail("invalid certificate settings");
        goto done;
    }
    wh_state_new(&state, WH_STATE_PENDING_TTL_MS);
    if (o->watch_cluster) {
        co_kube_client_options copts = CO_KUBE_CLIENT_OPTIONS_INIT;
        copts.user_agent = "component-webhook/" CO_VERSION;
        /* HTTP/1.1 over GnuTLS, the TLS library libmicrohttpd already brings: no libcurl and
         * no OpenSSL in this process */
        co_kube_transport *transport = NULL;
        if (co_kube_config_load(&kcfg, o->kubeconfig, NULL) < 0 ||
            co_kube_transport_gnutls_new(&transport, kcfg) < 0 ||
            co_kube_client_new_with_transport(&client, kcfg, transport, &copts) < 0) {
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
        .connection_timeout_s = (unsigned)o->connection_timeout_s,
        .max_per_peer = (unsigned)o->max_per_peer,
        .header_timeout_s = (unsigned)o->header_timeout_s,
        .body_timeout_s = (unsigned)o->body_timeout_s,
        .memory_budget = (size_t)o->request_memory,
        .limits = {(size_t)o->admission_body, (size_t)o->conversion_body},
        .tls_min = o->tls_min,
        .handlers = &handlers,
        .tls = tls,
    };
    if (wh_server_start(&server, &scfg) < 0) {
        status = fail("cannot start serving");
        goto done;
    }
    co_log(CO_LOG_INFO, "serving", "webhook", o->webhook_addr, "probes", o->probe_addr, "metrics",
           o->metrics_addr, NULL);
    if (!files) {
        me = identity();
        co_certs_manager_options mo = {
            .client = client,
            .namespace_ = o->namespace_,
            .secret_name = o->secret_name,
            .certs = cs.certs,
            .validating_webhook = *o->validating_name ? o->validating_name : NULL,
            .mutating_webhook = *o->mutating_name ? o->mutating_name : NULL,
            .crd = *o->crd_name ? o->crd_name : NULL,
            .leader_elect = o->leader_elect,
            .lease_name = "component-webhook-certificates",
            .identity = me,
            .check_interval_ms = (long)cs.check_interval_s * 1000,
            .metrics = wh_metrics_registry(),
            .serve = serve_pem,
            .payload = tls,
        };
        if (co_certs_manager_start(&certs, &mo) < 0) {
            status = fail("cannot start certificate management");
            goto done;
        }
        co_log(CO_LOG_INFO, "certificates are self-managed", "secret", o->secret_name, "namespace",
               o->namespace_, NULL);
    }
    if (client) {
        if (wh_cache_start(&cache, client, state) < 0) {
            status = fail("cannot watch the cluster");
            goto done;
        }
    }
    /* The server reads the checks on every probe; it answers "not ready" until the first lists
     * have arrived and, self-managed, the certificate is served and its CA published. */
    ready.cache = cache;
    ready.certs = certs;
    wh_server_set_ready(server, ready_checks, &ready);

    int sig = 0;
    sigwait(stop, &sig);
    co_log(CO_LOG_INFO, "shutting down: draining requests in flight", "signal",
           sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
    int left = wh_server_drain(server, (int)o->shutdown_timeout_s * 1000);
    if (left > 0) {
        char n[16];
        snprintf(n, sizeof(n), "%d", left);
        co_log(CO_LOG_WARN, "shutdown timeout reached; cutting requests", "inFlight", n, NULL);
    }
    status = 0;
done:
    wh_server_free(server);
    co_certs_manager_stop(certs);
    wh_cache_stop(cache);
    co_kube_client_free(client);
    co_kube_config_free(kcfg);
    wh_certwatch_stop(watch);
    wh_state_free(state);
    wh_tls_free(tls);
    free(cert);
    free(key);
    free(me);
    wh_cert_settings_dispose(&cs);
    if (status == 0) {
        co_log(CO_LOG_INFO, "stopped", NULL);
    }
    return status;
}

/*
 * mimalloc keeps the pages a thread has freed for that thread's next allocations; with a dozen
 * threads (workers, informers, probes) that is megabytes resident for nothing. Free pages go
 * back to the system at once instead (the MIMALLOC_ environment variables still override).
 */
static void allocator_setup(void)
{
    mi_option_set_default(mi_option_page_reset, 1);
    mi_option_set_default(mi_option_decommit_delay, 0);
}

int main(int argc, char **argv)
{
    allocator_setup();
    if (argc > 1 && !strcmp(argv[1], "certs")) {
        return co_certs_cli(argc - 1, argv + 1);
    }
    wh_config cfg;
    int status = wh_config_load(&cfg, argc, argv, stdout, stderr);
    if (status >= 0) {
        wh_config_dispose(&cfg);
        return status;
    }

    /* Block the signals before any thread exists, so that every thread inherits the mask. */
    sigset_t stop;
    co_daemon_block_signals(&stop);

    co_log(CO_LOG_INFO, "starting", "version", CO_VERSION, "leader-elect",
           cfg.leader_elect ? "true" : "false", NULL);
    status = run(&cfg, &stop);
    wh_config_dispose(&cfg);
    return status;
}
