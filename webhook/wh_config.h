/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file wh_config.h
 * The webhook's configuration: its controller-runtime-style flags, their checks, the
 * process-wide setting they make before any thread exists (logging), and what the serving
 * certificate is read from or made of. webhook/main.c starts the webhook from it.
 */
#ifndef WH_CONFIG_H
#define WH_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "certs/certs_plan.h"
#include "co/util/flags.h"
#include "webhook/wh_tls.h"

/** The certificate directory of files mode when --cert-dir is not given. */
#define WH_DEFAULT_CERT_DIR "/tmp/k8s-webhook-server/serving-certs"

/** What the command line says. Strings are borrowed from argv or the environment; the list is
 * owned. */
typedef struct wh_config {
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
    long long connection_timeout_s;
    long long max_per_peer;
    long long header_timeout_s;
    long long body_timeout_s;
    long long admission_body;
    long long conversion_body;
    long long request_memory;
    long long shutdown_timeout_s;
    int watch_cluster;
    int leader_elect;
    co_flags_logging logging;
    int help;
    int version;
    wh_tls_min_version tls_min; /**< --tls-min-version, parsed */
} wh_config;

/**
 * Parses the webhook's flags into @p c (dispose it whatever the result; $POD_NAMESPACE is the
 * default of --namespace), checks them, and sets up logging. Help, the version and usage
 * errors are printed here.
 * @param out where --help and --version go
 * @param err where usage errors go
 * @return -1 to go on and start the webhook; else the exit status (0 after --help or
 *         --version, 2 for a bad flag).
 */
int wh_config_load(wh_config *c, int argc, char **argv, FILE *out, FILE *err);

/** Frees the lists of @p c. */
void wh_config_dispose(wh_config *c);

/** Whether the serving certificate comes from files: --cert-mode=files, or a file flag given
 * without a mode. Otherwise it is self-managed. */
bool wh_config_file_mode(const wh_config *c);

/** Files mode: the certificate and key files, the explicit ones or tls.crt and tls.key in the
 * certificate directory (both free()). */
void wh_config_cert_paths(char **cert_out, char **key_out, const wh_config *c);

/** Self-managed mode: what the certificates are made of. */
typedef struct wh_cert_settings {
    co_certs_config certs; /**< borrows from the settings and from the configuration */
    char *dns[4];          /**< the Service's DNS names */
    const char **all_dns;
    const char **ips;
    long long check_interval_s; /**< --cert-check-interval */
} wh_cert_settings;

/**
 * Fills @p s from the certificate flags of @p c: the key type, the durations, and the names of
 * the serving certificate (the Service's, and --cert-extra-name split into DNS names and IP
 * addresses). Dispose @p s whatever the result.
 * @return 0, or CO_EINVALID naming the flag and the value.
 */
CO_MUST_CHECK int wh_cert_settings_init(wh_cert_settings *s, const wh_config *c);

/** Frees what @p s holds. */
void wh_cert_settings_dispose(wh_cert_settings *s);

#endif
