/* SPDX-License-Identifier: Apache-2.0 */
/*
 * component-webhook: entry point. Parses the controller-runtime-style flags, gets the serving
 * certificate (self-managed through a Secret, or from files), starts the watches behind cycle
 * detection and policies, serves the webhook over TLS and the probes and metrics over plain
 * HTTP, and drains gracefully on SIGTERM or SIGINT. `component-webhook certs ...` is the
 * certificate command line (certs/certs_cli.h).
 * Signals are blocked in every thread and taken synchronously here with sigwait(), so no work
 * ever happens in a signal handler.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <mimalloc.h>

#include "certs/certs_cli.h"
#include "certs/certs_manager.h"
#include "co/util/duration.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/util/flags.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_transport.h"
#include "co/kube/kube_config.h"
#include "co/util/log.h"
#include "webhook/wh_admission.h"
#include "webhook/wh_cache.h"
#include "webhook/wh_certwatch.h"
#include "webhook/wh_memory.h"
#include "webhook/wh_metrics.h"
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
    const char *cert_mode;
    const char *namespace_;
    const char *service_name;
    const char *secret_name;
    const char *validating_name;
    const char *mutating_name;
    const char *crd_name;
    co_flag_list extra_names;
    const char *ca_validity;
    const char *cert_validity;
    const char *cert_backdate;
    const char *publish_delay;
    const char *cert_check_interval;
    const char *key_type;
    long long cert_poll_seconds;
    long long threads;
    long long max_connections;
    long long connection_timeout;
    long long max_per_peer;
    long long header_timeout;
    long long body_timeout;
    long long admission_body;
    long long conversion_body;
    long long request_memory;
    long long shutdown_timeout;
    int watch_cluster;
    int leader_elect;
    co_flags_logging logging;
    int help;
    int version;
} options;

static void usage(FILE *out, const co_flag *flags, size_t n)
{
    fprintf(out,
            "Usage: component-webhook [flags]\n"
            "       component-webhook certs create-ca|create-serving|inspect|verify ...\n\n"
            "Validates, defaults and converts Component objects for the Kubernetes API server.\n\n"
            "Flags:\n");
    co_flags_usage(out, flags, n);
}

static int fail(const char *what)
{
    co_log(CO_LOG_ERROR, what, "error", co_error_last(), NULL);
    return 1;
}

#define DEFAULT_CERT_DIR "/tmp/k8s-webhook-server/serving-certs"

/* The serving certificate: explicit files, or tls.crt/tls.key in the certificate directory. */
static void cert_paths(char **cert, char **key, const options *o)
{
    const char *dir = o->cert_dir ? o->cert_dir : DEFAULT_CERT_DIR;
    *cert = o->cert_file ? co_xstrdup(o->cert_file) : co_xasprintf("%s/tls.crt", dir);
    *key = o->key_file ? co_xstrdup(o->key_file) : co_xasprintf("%s/tls.key", dir);
}

/* Files are used when asked for, or when a file flag is given without a mode. */
static int file_mode(const options *o)
{
    if (o->cert_mode) {
        return !strcmp(o->cert_mode, "files");
    }
    return o->cert_file || o->cert_dir;
}

static int seconds_flag(long long *out, const char *flag, const char *text, long long min_s)
{
    int64_t ns = 0;
    if (co_duration_parse(&ns, text) < 0 || ns / 1000000000LL < min_s) {
        co_error_clear();
        return co_error_set(CO_EINVALID, "--%s: \"%s\" is not a duration of at least %llds", flag,
                            text, min_s);
    }
    *out = ns / 1000000000LL;
    return 0;
}

/* What self-managed certificates are made of, from the flags. */
typedef struct cert_settings {
    co_certs_config certs;
    char *dns[4];
    const char **all_dns;
    const char **ips;
    long long check_interval_s;
} cert_settings;

static void cert_settings_dispose(cert_settings *c)
{
    for (size_t i = 0; i < 4; i++) {
        free(c->dns[i]);
    }
    free(c->all_dns);
    free(c->ips);
}

static int cert_settings_init(cert_settings *c, const options *o)
{
    memset(c, 0, sizeof(*c));
    co_certs_config *k = &c->certs;
    int rc = co_certs_key_type_parse(&k->key_type, o->key_type);
    if (rc == 0) {
        rc = seconds_flag(&k->ca_validity_s, "ca-validity", o->ca_validity, 60);
    }
    if (rc == 0) {
        rc = seconds_flag(&k->cert_validity_s, "cert-validity", o->cert_validity, 30);
    }
    if (rc == 0) {
        rc = seconds_flag(&k->backdate_s, "cert-backdate", o->cert_backdate, 0);
    }
    if (rc == 0) {
        rc = seconds_flag(&k->settle_s, "ca-publish-delay", o->publish_delay, 0);
    }
    if (rc == 0) {
        rc = seconds_flag(&c->check_interval_s, "cert-check-interval", o->cert_check_interval, 1);
    }
    if (rc < 0) {
        return rc;
    }
    c->dns[0] = co_xasprintf("%s", o->service_name);
    c->dns[1] = co_xasprintf("%s.%s", o->service_name, o->namespace_);
    c->dns[2] = co_xasprintf("%s.%s.svc", o->service_name, o->namespace_);
    c->dns[3] = co_xasprintf("%s.%s.svc.cluster.local", o->service_name, o->namespace_);
    c->all_dns = co_xcalloc(4 + o->extra_names.len, sizeof(char *));
    c->ips = co_xcalloc(o->extra_names.len + 1, sizeof(char *));
    for (size_t i = 0; i < 4; i++) {
        c->all_dns[k->ndns++] = c->dns[i];
    }
    for (size_t i = 0; i < o->extra_names.len; i++) {
        unsigned char a[16];
        const char *n = o->extra_names.items[i];
        if (inet_pton(AF_INET, n, a) == 1 || inet_pton(AF_INET6, n, a) == 1) {
            c->ips[k->nips++] = n;
        } else {
            c->all_dns[k->ndns++] = n;
        }
    }
    k->dns_names = c->all_dns;
    k->ip_addrs = c->ips;
    k->ca_name = "component-webhook-ca";
    k->common_name = o->service_name;
    return 0;
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
    if (o->max_per_peer < 1 || o->max_per_peer > 1000000) {
        return co_error_set(CO_EINVALID,
                            "--max-connections-per-peer must be between 1 and 1000000");
    }
    if (o->header_timeout < 1 || o->header_timeout > 3600 || o->body_timeout < 1 ||
        o->body_timeout > 3600) {
        return co_error_set(CO_EINVALID, "--header-timeout-seconds and --body-timeout-seconds "
                                         "must be between 1 and 3600");
    }
    if (o->request_memory < (long long)(4 * CO_MIB) ||
        o->request_memory > (long long)(64 * CO_MIB * 1024)) {
        return co_error_set(CO_EINVALID,
                            "--max-request-memory-bytes must be between 4 MiB and 64 GiB");
    }
    /* a body at the cap must be able to get its buffer, or the cap is a lie */
    long long room = o->request_memory - (long long)WH_MEMORY_REQUEST_OVERHEAD;
    if (o->admission_body < 1024 || o->admission_body > room) {
        return co_error_set(CO_EINVALID,
                            "--max-admission-body-bytes must be between 1024 and "
                            "--max-request-memory-bytes less 64 KiB (%lld)",
                            room);
    }
    if (o->conversion_body < 1024 || o->conversion_body > room) {
        return co_error_set(CO_EINVALID,
                            "--max-conversion-body-bytes must be between 1024 and "
                            "--max-request-memory-bytes less 64 KiB (%lld)",
                            room);
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
    if (o->cert_mode && strcmp(o->cert_mode, "self-managed") && strcmp(o->cert_mode, "files")) {
        return co_error_set(CO_EINVALID, "--cert-mode must be self-managed or files");
    }
    if (!file_mode(o) && !o->watch_cluster) {
        return co_error_set(CO_EINVALID,
                            "self-managed certificates need the cluster: use --cert-mode=files "
                            "with --watch-cluster=false");
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
    co_certs_manager *certs = NULL;
    cert_settings cs;
    char *cert = NULL, *key = NULL, *me = NULL;
    readiness ready = {0};
    int files = file_mode(o);

    memset(&cs, 0, sizeof(cs));
    wh_tls_new(&tls);
    if (files) {
        cert_paths(&cert, &key, o);
        if (wh_certwatch_start(&watch, tls, cert, key, (int)o->cert_poll_seconds * 1000) < 0) {
            status = fail("cannot load the serving certificate");
            goto done;
        }
    } else if (cert_settings_init(&cs, o) < 0) {
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
        .connection_timeout = (unsigned)o->connection_timeout,
        .max_per_peer = (unsigned)o->max_per_peer,
        .header_timeout = (unsigned)o->header_timeout,
        .body_timeout = (unsigned)o->body_timeout,
        .memory_budget = (size_t)o->request_memory,
        .limits = {(size_t)o->admission_body, (size_t)o->conversion_body},
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
    cert_settings_dispose(&cs);
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
    options o = {
        .metrics_addr = ":8080",
        .probe_addr = ":8081",
        .webhook_addr = ":9443",
        .tls_min_version = "VersionTLS12",
        .namespace_ = "component-operator",
        .service_name = "component-webhook",
        .secret_name = "component-webhook-certs",
        .validating_name = "component-webhook",
        .mutating_name = "component-webhook",
        .crd_name = "components.core.cs.sap.com",
        .ca_validity = "8760h",
        .cert_validity = "2160h",
        .cert_backdate = "1h",
        .publish_delay = "10s",
        .cert_check_interval = "1m",
        .key_type = "ecdsa-p256",
        .cert_poll_seconds = 10,
        .threads = 2,
        .max_connections = 1024,
        .connection_timeout = 120,
        .max_per_peer = WH_DEFAULT_MAX_PER_PEER,
        .header_timeout = WH_DEFAULT_HEADER_TIMEOUT,
        .body_timeout = WH_DEFAULT_BODY_TIMEOUT,
        .admission_body = (long long)CO_MAX_ADMISSION_BODY,
        .conversion_body = (long long)CO_MAX_CONVERSION_BODY,
        .request_memory = (long long)WH_DEFAULT_MEMORY_BUDGET,
        .shutdown_timeout = 25,
        .watch_cluster = 1,
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
        {"cert-mode", CO_FLAG_STRING, &o.cert_mode, "MODE",
         "self-managed (a CA and serving certificate in a Secret, injected and rotated) or "
         "files (cert-manager and the like); default self-managed, files when a file flag is "
         "given"},
        {"namespace", CO_FLAG_STRING, &o.namespace_, "NS",
         "the operator's namespace: the Secret, the Lease and the Service's DNS names (default "
         "$POD_NAMESPACE, else \"component-operator\")"},
        {"service-name", CO_FLAG_STRING, &o.service_name, "NAME",
         "the webhook's Service, for the certificate's names (default \"component-webhook\")"},
        {"cert-secret-name", CO_FLAG_STRING, &o.secret_name, "NAME",
         "Secret holding the CA and serving certificate (default \"component-webhook-certs\")"},
        {"validating-webhook-configuration", CO_FLAG_STRING, &o.validating_name, "NAME",
         "where to inject the CA bundle (default \"component-webhook\"; \"\" skips it)"},
        {"mutating-webhook-configuration", CO_FLAG_STRING, &o.mutating_name, "NAME",
         "where to inject the CA bundle (default \"component-webhook\"; \"\" skips it)"},
        {"conversion-crd", CO_FLAG_STRING, &o.crd_name, "NAME",
         "CRD whose conversion webhook gets the CA bundle (default "
         "\"components.core.cs.sap.com\"; \"\" skips it)"},
        {"cert-extra-name", CO_FLAG_LIST, &o.extra_names, "NAME",
         "another DNS name or IP address for the serving certificate (repeatable)"},
        {"ca-validity", CO_FLAG_STRING, &o.ca_validity, "DURATION",
         "lifetime of a new CA (default 8760h); rotated after two thirds"},
        {"cert-validity", CO_FLAG_STRING, &o.cert_validity, "DURATION",
         "lifetime of a serving certificate (default 2160h, at most the CA's); rotated after two "
         "thirds"},
        {"cert-backdate", CO_FLAG_STRING, &o.cert_backdate, "DURATION",
         "notBefore lies this far in the past, for clock skew (default 1h)"},
        {"ca-publish-delay", CO_FLAG_STRING, &o.publish_delay, "DURATION",
         "a new CA signs the served certificate only this long after the bundle holding it is "
         "injected everywhere (default 10s)"},
        {"cert-check-interval", CO_FLAG_STRING, &o.cert_check_interval, "DURATION",
         "how often the certificates and the injected bundles are checked (default 1m)"},
        {"cert-key-type", CO_FLAG_STRING, &o.key_type, "TYPE",
         "ecdsa-p256 (default), ecdsa-p384 or rsa-2048"},
        {"cert-dir", CO_FLAG_STRING, &o.cert_dir, "DIR",
         "files mode: directory holding tls.crt and tls.key (default "
         "\"" DEFAULT_CERT_DIR "\")"},
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
        {"max-connections-per-peer", CO_FLAG_INT, &o.max_per_peer, "N",
         "concurrent TLS connections from one address (default 256: an API server opens one per "
         "concurrent call)"},
        {"header-timeout-seconds", CO_FLAG_INT, &o.header_timeout, "N",
         "a connection's TLS handshake, and each request's headers from its first byte, must "
         "arrive within this (default 5); also the whole life of a probe connection"},
        {"body-timeout-seconds", CO_FLAG_INT, &o.body_timeout, "N",
         "a request's body must arrive within this once its headers are in, and its answer be "
         "taken within this again (default 10)"},
        {"max-admission-body-bytes", CO_FLAG_INT, &o.admission_body, "N",
         "largest AdmissionReview body (default 3.5 MiB: an object and an oldObject of at most "
         "etcd's 1.5 MiB each, or one object of the API server's 3 MiB, plus the envelope)"},
        {"max-conversion-body-bytes", CO_FLAG_INT, &o.conversion_body, "N",
         "largest ConversionReview body (default 16 MiB); a LIST is converted in one request"},
        {"max-request-memory-bytes", CO_FLAG_INT, &o.request_memory, "N",
         "memory that requests being read and handled may hold at once, estimated from their "
         "size and shape (default 48 MiB); past it 429, and 413 for a request that alone needs "
         "more"},
        {"shutdown-timeout-seconds", CO_FLAG_INT, &o.shutdown_timeout, "N",
         "on SIGTERM, wait this long for requests in flight (default 25)"},
        {"watch-cluster", CO_FLAG_BOOL, &o.watch_cluster, NULL,
         "watch Components, ComponentPolicies and Namespaces (default true); false serves "
         "without cluster state, for benchmarks and offline use"},
        {"leader-elect", CO_FLAG_BOOL, &o.leader_elect, NULL,
         "only the holder of the Lease component-webhook-certificates creates and rotates "
         "certificates"},
        CO_FLAGS_LOGGING(&o.logging),
        {"version", CO_FLAG_BOOL, &o.version, NULL, "print the version and exit"},
        {"help", CO_FLAG_BOOL, &o.help, NULL, "print this help and exit"},
    };
    size_t nflags = CO_ARRAY_SIZE(flags);

    if (argc > 1 && !strcmp(argv[1], "certs")) {
        return co_certs_cli(argc - 1, argv + 1);
    }
    const char *pod_ns = getenv("POD_NAMESPACE"); // NOLINT(concurrency-mt-unsafe): start-up only
    if (pod_ns && *pod_ns) {
        o.namespace_ = pod_ns;
    }
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
    char **log_warnings = NULL;
    wh_tls_min_version tls_min;
    int rc = co_flags_logging_resolve(&level, &format, &log_warnings, &o.logging);
    co_flags_logging_dispose(&o.logging);
    if (rc < 0 || wh_tls_min_version_parse(&tls_min, o.tls_min_version) < 0 ||
        check_ranges(&o) < 0) {
        fprintf(stderr, "component-webhook: %s\n", co_error_last());
        co_flags_strv_free(log_warnings);
        return 2;
    }
    co_log_setup("webhook", level, format);
    for (char **w = log_warnings; w && *w; w++) {
        co_log(CO_LOG_WARN, *w, NULL);
    }
    co_flags_strv_free(log_warnings);

    /* Block the signals before any thread exists, so that every thread inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    co_log(CO_LOG_INFO, "starting", "version", CO_VERSION, "leader-elect",
           o.leader_elect ? "true" : "false", NULL);
    int status = run(&o, tls_min);
    co_flag_list_dispose(&o.extra_names);
    return status;
}
