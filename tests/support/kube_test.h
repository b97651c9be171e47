/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for integration tests against the test control plane (tests/env/controlplane.sh):
 * clients from the kubeconfigs it exports, unique namespaces, JSON built from format strings,
 * and polling.
 */
#ifndef CO_TEST_KUBE_TEST_H
#define CO_TEST_KUBE_TEST_H

#include <pthread.h>
#include <stddef.h>

#include "co/util/common.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_transport.h"

struct json_object;

/** A client for the kubeconfig named by environment variable @p env (CO_TEST_KUBECONFIG,
 * CO_TEST_RESTRICTED_KUBECONFIG, CO_TEST_CERT_KUBECONFIG); fails the test when unset. */
co_kube_client *co_test_kube_client(const char *env);

/** Environment variable @p name, failing the test when unset. Borrowed from the environment. */
const char *co_test_env(const char *name);

/** Creates a namespace named @p prefix-<random> and returns its name (free()). */
char *co_test_kube_namespace(co_kube_client *c, const char *prefix);

/** A random lowercase suffix of @p n letters (free()). */
char *co_test_random_name(const char *prefix, size_t n);

/** Parses printf-formatted JSON; fails the test when it is not JSON. */
struct json_object *co_test_json(const char *fmt, ...) CO_PRINTF(1, 2);

/** Calls @p check every 100 ms until it returns nonzero or @p timeout_ms passes.
 * @return 1 when @p check succeeded, 0 on timeout. */
int co_test_poll(int (*check)(void *payload), void *payload, long timeout_ms);

/** A private control plane started by a test (tests/env/controlplane.sh start DIR). */
typedef struct co_test_controlplane {
    char *dir;        /**< its directory */
    char *kubeconfig; /**< admin kubeconfig */
} co_test_controlplane;

/** Starts a private control plane in a new temporary directory; fails the test on error. */
void co_test_controlplane_start(co_test_controlplane *cp);

/** Runs `controlplane.sh CMD DIR` (restart, apiserver-stop, apiserver-start, compact);
 * @return its exit status. */
int co_test_controlplane_cmd(co_test_controlplane *cp, const char *cmd);

/** Stops the control plane and frees the strings. */
void co_test_controlplane_stop(co_test_controlplane *cp);

/** A client for the kubeconfig at @p path (e.g. a private control plane's admin.kubeconfig);
 * fails the test on error. */
co_kube_client *co_test_kube_client_for(const char *path);

/** A client for the kubeconfig at @p path over the GnuTLS transport instead of libcurl; fails
 * the test on error. */
co_kube_client *co_test_kube_client_gnutls(const char *path);

/** Runs @p argv (no shell) and waits. @return its exit status, or -1. */
int co_test_run(const char *const *argv);

/**
 * A transport that logs "METHOD path" of every request and hands it to a curl transport, so
 * that a test can count what a pass asked of the API server. Give `&t->base` to
 * co_kube_client_new_with_transport(), which then owns it. Thread-safe.
 */
typedef struct co_test_counting {
    co_kube_transport base;
    co_kube_transport *inner;
    pthread_mutex_t mu;
    char **log;
    char **bodies; /* of each request logged, NULL-terminated copies, NULL without one */
    size_t n, cap;
} co_test_counting;

/** A counting transport over a curl transport for @p cfg (asserts on failure). */
co_test_counting *co_test_counting_new(const co_kube_config *cfg);

/** Forgets what was logged. */
void co_test_counting_reset(co_test_counting *c);

/** Requests logged whose method is @p method (NULL: any) and whose path contains @p needle
 * (NULL: any). */
size_t co_test_counting_count(co_test_counting *c, const char *method, const char *needle);

/** A copy of the body of the last request logged whose method is @p method (NULL: any) and whose
 * path contains @p needle (NULL: any), or NULL when none matched or it had no body (free()). */
char *co_test_counting_last_body(co_test_counting *c, const char *method, const char *needle);

/** Prints the log as test diagnostics, under @p title. */
void co_test_counting_print(co_test_counting *c, const char *title);

#endif
