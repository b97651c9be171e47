/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for controller tests against the test control plane: installing the Component CRD,
 * a local-directory source and a minimal applier for driving the state machine in-process
 * (tests only; the daemon links the real apply engine), Component creation and polling on
 * status.
 */
#ifndef CO_TEST_CTL_TEST_H
#define CO_TEST_CTL_TEST_H

#include <stdbool.h>

#include "co/kube/kube_client.h"
#include "controller/ctl_reconcile.h"

struct json_object;

/** Creates the Component CRD (crds/core.cs.sap.com_components.yaml when present, else a
 * schemaless one) unless it exists, and waits until it is served. */
void ctl_test_install_crd(co_kube_client *c);

/** The directory of the Flux source CRDs the tests install (free with free()):
 * $CO_FLUX_CRDS_DIR when set (the conformance lane names the published CRDs there), else
 * tests/fixtures/flux-crds, the repository's own with the fields the controller and the tests
 * use. Files are named source.toolkit.fluxcd.io_<plural>.yaml. */
char *ctl_test_flux_crds_dir(void);

/** The Flux source CRD of @p plural (gitrepositories, ocirepositories, buckets, helmcharts)
 * from ctl_test_flux_crds_dir(), parsed (json_object_put()); fails the test when it cannot be
 * read. For tests that change it before installing it, e.g. to serve another version. */
struct json_object *ctl_test_flux_crd(const char *plural);

/** Creates the Flux source CRDs of GitRepository, OCIRepository, Bucket and HelmChart
 * (source.toolkit.fluxcd.io/v1) from ctl_test_flux_crds_dir() unless they exist, and waits until
 * each kind is served. Every suite that needs Flux sources calls this, so that the conformance
 * lane runs them all against the published CRDs. */
void ctl_test_install_flux_crds(co_kube_client *c);

/** The test source: every Component's artifact is directory ctl_test_source_dir with the
 * digest and revision below; change them to simulate a new source version. */
extern char ctl_test_source_dir[4096];
extern char ctl_test_source_digest[128];
extern char ctl_test_source_revision[128];
/** When non-zero, resolve fails with a retriable error "source not ready". */
extern int ctl_test_source_unready;

/** The source ops of the test source. */
ctl_source_ops ctl_test_source_ops(void);

/**
 * A minimal applier (tests only): persists new inventory items first (returning not done),
 * then server-side applies every object with the owner label and reports done when each exists
 * and none carries annotation "test.co/never-ready". Deletion removes everything.
 */
ctl_apply_ops ctl_test_apply_ops(void);

/** Number of objects the test applier wrote (create or apply) so far. */
unsigned long ctl_test_apply_writes(void);

/** Creates a Component in @p ns from a JSON spec text (format string). */
void ctl_test_create_component(co_kube_client *c,
                               const char *ns,
                               const char *name,
                               const char *spec_fmt,
                               ...) CO_PRINTF(4, 5);

/** Reads a Component (NULL when gone). */
struct json_object *ctl_test_get_component(co_kube_client *c, const char *ns, const char *name);

/** Waits until the Component has state @p state and Ready reason @p reason (NULL: any); fails
 * the test after @p timeout_ms with the last status seen. */
void ctl_test_wait_state(co_kube_client *c,
                         const char *ns,
                         const char *name,
                         const char *state,
                         const char *reason,
                         long timeout_ms);

/** Waits until the Component is gone. */
void ctl_test_wait_gone(co_kube_client *c, const char *ns, const char *name, long timeout_ms);

/** status.state and reason of a Component ("" when unset); copied into the buffers. */
void ctl_test_state(co_kube_client *c,
                    const char *ns,
                    const char *name,
                    char *state,
                    size_t state_len,
                    char *reason,
                    size_t reason_len);

#endif
