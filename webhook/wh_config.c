/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The webhook's flag table and what its flags set (see wh_config.h). wh_config_load runs on
 * the main thread before any other exists: the log setup it makes is read by every thread
 * without locks.
 */
#include "webhook/wh_config.h"

#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "co/util/caps.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "webhook/wh_memory.h"
#include "webhook/wh_server.h"

static void usage(FILE *out, const co_flag *flags, size_t n)
{
    fprintf(out,
            "Usage: component-webhook [flags]\n"
            "       component-webhook certs create-ca|create-serving|inspect|verify ...\n\n"
            "Validates, defaults and converts Component objects for the Kubernetes API server.\n\n"
            "Flags:\n");
    co_flags_usage(out, flags, n);
}

/* The flags whose values need more than a type check. */
static int check_ranges(const wh_config *c)
{
    if (c->threads < 1 || c->threads > 256) {
        return co_error_set(CO_EINVALID, "--webhook-threads must be between 1 and 256");
    }
    if (c->max_connections < 1 || c->max_connections > 1000000) {
        return co_error_set(CO_EINVALID, "--max-connections must be between 1 and 1000000");
    }
    if (c->connection_timeout_s < 1 || c->connection_timeout_s > 86400) {
        return co_error_set(CO_EINVALID,
                            "--connection-timeout-seconds must be between 1 and 86400");
    }
    if (c->max_per_peer < 1 || c->max_per_peer > 1000000) {
        return co_error_set(CO_EINVALID,
                            "--max-connections-per-peer must be between 1 and 1000000");
    }
    if (c->header_timeout_s < 1 || c->header_timeout_s > 3600 || c->body_timeout_s < 1 ||
        c->body_timeout_s > 3600) {
        return co_error_set(CO_EINVALID, "--header-timeout-seconds and --body-timeout-seconds "
                                         "must be between 1 and 3600");
    }
    if (c->request_memory < (long long)(4 * CO_MIB) ||
        c->request_memory > (long long)(64 * CO_MIB * 1024)) {
        return co_error_set(CO_EINVALID,
                            "--max-request-memory-bytes must be between 4 MiB and 64 GiB");
    }
    /* a body at the cap must be able to get its buffer, or the cap is a lie */
    long long room = c->request_memory - (long long)WH_MEMORY_REQUEST_OVERHEAD;
    if (c->admission_body < 1024 || c->admission_body > room) {
        return co_error_set(CO_EINVALID,
                            "--max-admission-body-bytes must be between 1024 and "
                            "--max-request-memory-bytes less 64 KiB (%lld)",
                            room);
    }
    if (c->conversion_body < 1024 || c->conversion_body > room) {
        return co_error_set(CO_EINVALID,
                            "--max-conversion-body-bytes must be between 1024 and "
                            "--max-request-memory-bytes less 64 KiB (%lld)",
                            room);
    }
    if (c->shutdown_timeout_s < 0 || c->shutdown_timeout_s > 3600) {
        return co_error_set(CO_EINVALID, "--shutdown-timeout-seconds must be between 0 and 3600");
    }
    if (c->cert_poll_seconds < 1 || c->cert_poll_seconds > 86400) {
        return co_error_set(CO_EINVALID,
                            "--cert-poll-interval-seconds must be between 1 and 86400");
    }
    if (!c->cert_file != !c->key_file) {
        return co_error_set(CO_EINVALID, "--tls-cert-file and --tls-key-file go together");
    }
    if (c->cert_mode && strcmp(c->cert_mode, "self-managed") && strcmp(c->cert_mode, "files")) {
        return co_error_set(CO_EINVALID, "--cert-mode must be self-managed or files");
    }
    if (!wh_config_file_mode(c) && !c->watch_cluster) {
        return co_error_set(CO_EINVALID,
                            "self-managed certificates need the cluster: use --cert-mode=files "
                            "with --watch-cluster=false");
    }
    return 0;
}

/* Logging, the TLS version and the ranges, then the log setup, before any thread exists. The
 * log warnings wait until logging is set up, and are dropped with a usage error. */
static int apply(wh_config *c, FILE *err)
{
    if (wh_tls_min_version_parse(&c->tls_min, c->tls_min_version) < 0 || check_ranges(c) < 0 ||
        co_flags_logging_setup(&c->logging, "webhook") < 0) {
        fprintf(err, "component-webhook: %s\n", co_error_last());
        co_flags_logging_dispose(&c->logging);
        return CO_FLAGS_EXIT_USAGE;
    }
    return -1;
}

int wh_config_load(wh_config *c, int argc, char **argv, FILE *out, FILE *err)
{
    *c = (wh_config){
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
        .connection_timeout_s = 120,
        .max_per_peer = WH_DEFAULT_MAX_PER_PEER,
        .header_timeout_s = WH_DEFAULT_HEADER_TIMEOUT,
        .body_timeout_s = WH_DEFAULT_BODY_TIMEOUT,
        .admission_body = (long long)CO_MAX_ADMISSION_BODY,
        .conversion_body = (long long)CO_MAX_CONVERSION_BODY,
        .request_memory = (long long)WH_DEFAULT_MEMORY_BUDGET,
        .shutdown_timeout_s = 25,
        .watch_cluster = 1,
    };
    const co_flag flags[] = {
        {"kubeconfig", CO_FLAG_STRING, &c->kubeconfig, "PATH",
         "kubeconfig file (default: $KUBECONFIG, then in-cluster configuration)"},
        {"metrics-bind-address", CO_FLAG_STRING, &c->metrics_addr, "ADDR",
         "address of the Prometheus metrics endpoint (default \":8080\"; \"0\" disables it)"},
        {"health-probe-bind-address", CO_FLAG_STRING, &c->probe_addr, "ADDR",
         "address of the /healthz and /readyz endpoints (default \":8081\")"},
        {"webhook-bind-address", CO_FLAG_STRING, &c->webhook_addr, "ADDR",
         "address of the TLS webhook server (default \":9443\")"},
        {"cert-mode", CO_FLAG_STRING, &c->cert_mode, "MODE",
         "self-managed (a CA and serving certificate in a Secret, injected and rotated) or "
         "files (cert-manager and the like); default self-managed, files when a file flag is "
         "given"},
        {"namespace", CO_FLAG_STRING, &c->namespace_, "NS",
         "the operator's namespace: the Secret, the Lease and the Service's DNS names (default "
         "$POD_NAMESPACE, else \"component-operator\")"},
        {"service-name", CO_FLAG_STRING, &c->service_name, "NAME",
         "the webhook's Service, for the certificate's names (default \"component-webhook\")"},
        {"cert-secret-name", CO_FLAG_STRING, &c->secret_name, "NAME",
         "Secret holding the CA and serving certificate (default \"component-webhook-certs\")"},
        {"validating-webhook-configuration", CO_FLAG_STRING, &c->validating_name, "NAME",
         "where to inject the CA bundle (default \"component-webhook\"; \"\" skips it)"},
        {"mutating-webhook-configuration", CO_FLAG_STRING, &c->mutating_name, "NAME",
         "where to inject the CA bundle (default \"component-webhook\"; \"\" skips it)"},
        {"conversion-crd", CO_FLAG_STRING, &c->crd_name, "NAME",
         "CRD whose conversion webhook gets the CA bundle (default "
         "\"components.core.cs.sap.com\"; \"\" skips it)"},
        {"cert-extra-name", CO_FLAG_LIST, &c->extra_names, "NAME",
         "another DNS name or IP address for the serving certificate (repeatable)"},
        {"ca-validity", CO_FLAG_STRING, &c->ca_validity, "DURATION",
         "lifetime of a new CA (default 8760h); rotated after two thirds"},
        {"cert-validity", CO_FLAG_STRING, &c->cert_validity, "DURATION",
         "lifetime of a serving certificate (default 2160h, at most the CA's); rotated after two "
         "thirds"},
        {"cert-backdate", CO_FLAG_STRING, &c->cert_backdate, "DURATION",
         "notBefore lies this far in the past, for clock skew (default 1h)"},
        {"ca-publish-delay", CO_FLAG_STRING, &c->publish_delay, "DURATION",
         "a new CA signs the served certificate only this long after the bundle holding it is "
         "injected everywhere (default 10s)"},
        {"cert-check-interval", CO_FLAG_STRING, &c->cert_check_interval, "DURATION",
         "how often the certificates and the injected bundles are checked (default 1m)"},
        {"cert-key-type", CO_FLAG_STRING, &c->key_type, "TYPE",
         "ecdsa-p256 (default), ecdsa-p384 or rsa-2048"},
        {"cert-dir", CO_FLAG_STRING, &c->cert_dir, "DIR",
         "files mode: directory holding tls.crt and tls.key (default "
         "\"" WH_DEFAULT_CERT_DIR "\")"},
        {"tls-cert-file", CO_FLAG_STRING, &c->cert_file, "PATH",
         "serving certificate chain (PEM); overrides --cert-dir"},
        {"tls-key-file", CO_FLAG_STRING, &c->key_file, "PATH",
         "private key of the serving certificate (PEM); overrides --cert-dir"},
        {"cert-poll-interval-seconds", CO_FLAG_INT, &c->cert_poll_seconds, "N",
         "re-read the certificate files at least this often (default 10); changes are also "
         "picked up at once through inotify"},
        {"tls-min-version", CO_FLAG_STRING, &c->tls_min_version, "VERSION",
         "VersionTLS12 or VersionTLS13 (default \"VersionTLS12\")"},
        {"webhook-threads", CO_FLAG_INT, &c->threads, "N",
         "worker threads of the TLS server (default 2)"},
        {"max-connections", CO_FLAG_INT, &c->max_connections, "N",
         "concurrent TLS connections (default 1024)"},
        {"connection-timeout-seconds", CO_FLAG_INT, &c->connection_timeout_s, "N",
         "close a connection idle this long (default 120, above the API server's 90 s idle "
         "timeout so that it closes first)"},
        {"max-connections-per-peer", CO_FLAG_INT, &c->max_per_peer, "N",
         "concurrent TLS connections from one address (default 256: an API server opens one per "
         "concurrent call)"},
        {"header-timeout-seconds", CO_FLAG_INT, &c->header_timeout_s, "N",
         "a connection's TLS handshake, and each request's headers from its first byte, must "
         "arrive within this (default 5); also the whole life of a probe connection"},
        {"body-timeout-seconds", CO_FLAG_INT, &c->body_timeout_s, "N",
         "a request's body must arrive within this once its headers are in, and its answer be "
         "taken within this again (default 10)"},
        {"max-admission-body-bytes", CO_FLAG_INT, &c->admission_body, "N",
         "largest AdmissionReview body (default 3.5 MiB: an object and an oldObject of at most "
         "etcd's 1.5 MiB each, or one object of the API server's 3 MiB, plus the envelope)"},
        {"max-conversion-body-bytes", CO_FLAG_INT, &c->conversion_body, "N",
         "largest ConversionReview body (default 16 MiB); a LIST is converted in one request"},
        {"max-request-memory-bytes", CO_FLAG_INT, &c->request_memory, "N",
         "memory that requests being read and handled may hold at once, estimated from their "
         "size and shape (default 48 MiB); past it 429, and 413 for a request that alone needs "
         "more"},
        {"shutdown-timeout-seconds", CO_FLAG_INT, &c->shutdown_timeout_s, "N",
         "on SIGTERM, wait this long for requests in flight (default 25)"},
        {"watch-cluster", CO_FLAG_BOOL, &c->watch_cluster, NULL,
         "watch Components, ComponentPolicies and Namespaces (default true); false serves "
         "without cluster state, for benchmarks and offline use"},
        {"leader-elect", CO_FLAG_BOOL, &c->leader_elect, NULL,
         "only the holder of the Lease component-webhook-certificates creates and rotates "
         "certificates"},
        CO_FLAGS_LOGGING(&c->logging),
        {"version", CO_FLAG_BOOL, &c->version, NULL, "print the version and exit"},
        {"help", CO_FLAG_BOOL, &c->help, NULL, "print this help and exit"},
    };
    size_t nflags = CO_ARRAY_SIZE(flags);

    const char *pod_ns = getenv("POD_NAMESPACE"); // NOLINT(concurrency-mt-unsafe): start-up only
    if (pod_ns && *pod_ns) {
        c->namespace_ = pod_ns;
    }
    co_flags_command cmd = {"component-webhook", flags, nflags, &c->help, &c->version, usage};
    int status = co_flags_parse_command(&cmd, argc, argv, out, err);
    return status >= 0 ? status : apply(c, err);
}

void wh_config_dispose(wh_config *c)
{
    co_flag_list_dispose(&c->extra_names);
    co_flags_logging_dispose(&c->logging);
}

bool wh_config_file_mode(const wh_config *c)
{
    if (c->cert_mode) {
        return !strcmp(c->cert_mode, "files");
    }
    return c->cert_file || c->cert_dir;
}

void wh_config_cert_paths(char **cert_out, char **key_out, const wh_config *c)
{
    const char *dir = c->cert_dir ? c->cert_dir : WH_DEFAULT_CERT_DIR;
    *cert_out = c->cert_file ? co_xstrdup(c->cert_file) : co_xasprintf("%s/tls.crt", dir);
    *key_out = c->key_file ? co_xstrdup(c->key_file) : co_xasprintf("%s/tls.key", dir);
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

int wh_cert_settings_init(wh_cert_settings *s, const wh_config *c)
{
    memset(s, 0, sizeof(*s));
    co_certs_config *k = &s->certs;
    int rc = co_certs_key_type_parse(&k->key_type, c->key_type);
    if (rc == 0) {
        rc = seconds_flag(&k->ca_validity_s, "ca-validity", c->ca_validity, 60);
    }
    if (rc == 0) {
        rc = seconds_flag(&k->cert_validity_s, "cert-validity", c->cert_validity, 30);
    }
    if (rc == 0) {
        rc = seconds_flag(&k->backdate_s, "cert-backdate", c->cert_backdate, 0);
    }
    if (rc == 0) {
        rc = seconds_flag(&k->settle_s, "ca-publish-delay", c->publish_delay, 0);
    }
    if (rc == 0) {
        rc = seconds_flag(&s->check_interval_s, "cert-check-interval", c->cert_check_interval, 1);
    }
    if (rc < 0) {
        return rc;
    }
    s->dns[0] = co_xasprintf("%s", c->service_name);
    s->dns[1] = co_xasprintf("%s.%s", c->service_name, c->namespace_);
    s->dns[2] = co_xasprintf("%s.%s.svc", c->service_name, c->namespace_);
    s->dns[3] = co_xasprintf("%s.%s.svc.cluster.local", c->service_name, c->namespace_);
    s->all_dns = co_xcalloc(4 + c->extra_names.len, sizeof(char *));
    s->ips = co_xcalloc(c->extra_names.len + 1, sizeof(char *));
    for (size_t i = 0; i < 4; i++) {
        s->all_dns[k->ndns++] = s->dns[i];
    }
    for (size_t i = 0; i < c->extra_names.len; i++) {
        unsigned char a[16];
        const char *n = c->extra_names.items[i];
        if (inet_pton(AF_INET, n, a) == 1 || inet_pton(AF_INET6, n, a) == 1) {
            s->ips[k->nips++] = n;
        } else {
            s->all_dns[k->ndns++] = n;
        }
    }
    k->dns_names = s->all_dns;
    k->ip_addrs = s->ips;
    k->ca_name = "component-webhook-ca";
    k->common_name = c->service_name;
    return 0;
}

void wh_cert_settings_dispose(wh_cert_settings *s)
{
    for (size_t i = 0; i < 4; i++) {
        free(s->dns[i]);
    }
    free(s->all_dns);
    free(s->ips);
}
