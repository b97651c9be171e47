/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kube_config.h
 * Where the API server is and how to authenticate to it: kubeconfig files and in-cluster
 * service-account configuration, resolved into one immutable co_kube_config.
 *
 * Kubeconfig: clusters (server, certificate-authority[-data], insecure-skip-tls-verify,
 * tls-server-name, proxy-url), users (client-certificate[-data], client-key[-data], token,
 * tokenFile, username/password, as/as-groups impersonation) and contexts (cluster, user,
 * namespace) as kubectl reads them. Several files (KUBECONFIG=a:b) merge as in client-go: the
 * first file that defines a cluster, user or context name wins, and the first non-empty
 * current-context wins. Relative paths inside a file are relative to that file's directory.
 * exec and auth-provider credential plugins are refused with CO_EUNSUPPORTED.
 *
 * Credentials are read into memory once, at load time (certificates, keys, static tokens) and
 * never written anywhere; a tokenFile (and the in-cluster service-account token) is re-read by
 * the client periodically and after a 401. Everything here is thread-safe once loaded: a
 * config is immutable. Ownership follows shared/README.md.
 *
 * Kubeconfigs written by tenants (a Component's spec.kubeConfig Secret, a template's
 * lookupWithKubeConfig) go through co_kube_config_from_untrusted_json() instead, which accepts
 * inline credentials only: a file reference would make the controller read its own files (its
 * service-account token) and send them wherever the tenant's server points.
 */
#ifndef CO_KUBE_CONFIG_H
#define CO_KUBE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "co/util/common.h"

struct json_object;

typedef struct co_kube_config co_kube_config;

/** Default location of the in-cluster service-account files. */
#define CO_KUBE_SERVICEACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/**
 * Loads the configuration the way controller-runtime does: @p kubeconfig if given (the
 * --kubeconfig flag), else the files in $KUBECONFIG, else the in-cluster configuration when
 * $KUBERNETES_SERVICE_HOST is set, else $HOME/.kube/config.
 * Reads the environment: call at start-up, before other threads exist.
 * @param[out] out the configuration (free with co_kube_config_free())
 * @param kubeconfig path of a kubeconfig file, or NULL
 * @param context context to use instead of current-context, or NULL
 * @return 0; CO_ENOTFOUND when no configuration exists at all; CO_EINVALID for a malformed
 * file or a missing field (the message names the file and the field); CO_EUNSUPPORTED for
 * exec/auth-provider users; CO_ETOOBIG for a file over CO_MAX_CONFIG_FILE.
 */
CO_MUST_CHECK int
co_kube_config_load(co_kube_config **out, const char *kubeconfig, const char *context);

/**
 * Loads and merges kubeconfig files (first definition of a name wins).
 * @param paths @p npaths file paths; empty strings are skipped, missing files are an error
 * @return as co_kube_config_load().
 */
CO_MUST_CHECK int co_kube_config_from_files(co_kube_config **out,
                                            const char *const *paths,
                                            size_t npaths,
                                            const char *context);

/**
 * Builds a configuration from an already parsed kubeconfig document.
 * @param doc the kubeconfig (borrowed, not modified)
 * @param base_dir directory that relative paths in @p doc are relative to (NULL: the current
 * directory)
 * @return as co_kube_config_load().
 */
CO_MUST_CHECK int co_kube_config_from_json(co_kube_config **out,
                                           const struct json_object *doc,
                                           const char *base_dir,
                                           const char *context);

/** co_kube_config_from_untrusted_json() flag: accept http:// servers (a ComponentPolicy allows
 * them). */
#define CO_KUBE_CONFIG_ALLOW_HTTP 0x1u

/**
 * Builds a configuration from a kubeconfig written by an untrusted party, for a target cluster.
 * Before anything is resolved, every cluster and user entry (not only the selected ones) is
 * checked: a file reference (`certificate-authority`, `client-certificate`, `client-key`,
 * `tokenFile`: any value but null or "") is refused, and so are the exec and auth-provider
 * plugins, so no file is ever opened. Credentials come from `certificate-authority-data`,
 * `client-certificate-data`, `client-key-data`, `token`, `username`/`password`.
 *
 * The selected cluster's server must be https:// unless @p flags has
 * CO_KUBE_CONFIG_ALLOW_HTTP. `insecure-skip-tls-verify` and `tls-server-name` are kept: they
 * weaken or redirect only the check of the tenant's own server, whose credentials are the
 * tenant's. `proxy-url` is kept with the schemes client-go knows (http, https, socks5,
 * socks5h). `as`/`as-groups` are kept as the kubeconfig's own impersonation; a client option
 * co_kube_client_options.impersonate_user replaces both (user and groups), so a caller that
 * impersonates on top never carries the tenant's groups. `as-uid` and `as-user-extra` are not
 * read, here or in any kubeconfig.
 *
 * The configuration remembers where it came from (co_kube_config_is_untrusted()): clients built
 * from it with co_kube_client_new() check every connection, and through a proxy the server's
 * host, against the network deny-list (co/util/net.h).
 * @param doc the kubeconfig (borrowed, not modified)
 * @param context context to use instead of current-context, or NULL
 * @param flags 0 or CO_KUBE_CONFIG_ALLOW_HTTP
 * @return 0; CO_EINVALID for a file reference ("users[0].user.tokenFile: file references are
 * not allowed in an untrusted kubeconfig"), an http:// server without the flag
 * ("clusters[0].cluster.server: ..."), a proxy-url of another scheme, and what
 * co_kube_config_from_json() refuses; CO_EUNSUPPORTED for exec and auth-provider
 * ("users[0].user.exec: ...").
 */
CO_MUST_CHECK int co_kube_config_from_untrusted_json(co_kube_config **out,
                                                     const struct json_object *doc,
                                                     const char *context,
                                                     unsigned flags);

/**
 * In-cluster configuration: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6
 * addresses bracketed), the CA, token and namespace files of @p sa_dir.
 * @param sa_dir service-account directory, NULL for CO_KUBE_SERVICEACCOUNT_DIR
 * @param host API server host, NULL to read $KUBERNETES_SERVICE_HOST
 * @param port API server port, NULL to read $KUBERNETES_SERVICE_PORT
 * @return 0; CO_ENOTFOUND when not running in a cluster (no host/port or no token file);
 * CO_EINVALID for unreadable files.
 */
CO_MUST_CHECK int co_kube_config_in_cluster(co_kube_config **out,
                                            const char *sa_dir,
                                            const char *host,
                                            const char *port);

/** Frees a configuration and wipes the credentials it holds. NULL is a no-op. */
void co_kube_config_free(co_kube_config *cfg);

/** The API server URL without a trailing slash ("https://10.0.0.1:443"). Borrowed. */
const char *co_kube_config_server(const co_kube_config *cfg);

/** The default namespace of the context ("default" when it names none). Borrowed. */
const char *co_kube_config_namespace(const co_kube_config *cfg);

/** The name of the selected context, or NULL for an in-cluster configuration. Borrowed. */
const char *co_kube_config_context(const co_kube_config *cfg);

/** Whether the configuration came from the in-cluster service account. */
bool co_kube_config_is_in_cluster(const co_kube_config *cfg);

/** Whether the configuration came from co_kube_config_from_untrusted_json(). */
bool co_kube_config_is_untrusted(const co_kube_config *cfg);

#endif
