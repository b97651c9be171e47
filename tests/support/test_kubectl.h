/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubectl for integration tests: running it (without a shell) against a test control plane,
 * and a co_source_get_fn over `kubectl get -o json` for the source layer's cluster seam.
 */
#ifndef CO_TEST_KUBECTL_H
#define CO_TEST_KUBECTL_H

struct json_object;

/** A kubectl target: a kubeconfig and a private discovery cache directory. */
typedef struct tkc {
    char *kubeconfig;
    char *cache_dir;
    int gets; /**< calls of tkc_get */
} tkc;

/** Sets up @p k for @p kubeconfig with a discovery cache below @p dir. */
void tkc_init(tkc *k, const char *kubeconfig, const char *dir);

/** Frees the strings of @p k. */
void tkc_dispose(tkc *k);

/**
 * Runs kubectl with the NULL-terminated arguments, feeding @p input (may be NULL) on stdin.
 * @param[out] out stdout (may be NULL; free with free())
 * @param[out] err stderr (may be NULL; free with free())
 * @return the exit status.
 */
int tkc_run(const tkc *k, const char *input, char **out, char **err, ...) __attribute__((sentinel));

/** Like tkc_run() but fails the test unless kubectl exits 0. */
void tkc_ok(const tkc *k, const char *input, ...) __attribute__((sentinel));

/**
 * co_source_get_fn over kubectl (@p ctx is a tkc): CO_ENOTFOUND for NotFound, CO_ENOMATCH when
 * the server does not serve the kind in that version, CO_ERROR otherwise.
 */
int tkc_get(void *ctx,
            const char *api_version,
            const char *kind,
            const char *ns,
            const char *name,
            struct json_object **out);

#endif
