/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Self-managed certificates for the webhook: one Secret in the operator's namespace holds the
 * CA, the CAs still trusted and the serving pair (certs_plan.h); the CA bundle is injected into
 * the ValidatingWebhookConfiguration, the MutatingWebhookConfiguration and the Component CRD's
 * conversion stanza.
 *
 * Every replica watches the Secret and hands its serving pair to the server (hot swap, no
 * restart). Only the holder of a Lease (or the only replica, without leader election) writes:
 * it creates the Secret, applies the rotation rules on a timer and on Secret events, writes
 * with resourceVersion preconditions (a lost race is re-read, never overwritten), injects the
 * bundle wherever it differs, and records in the Secret's annotations which bundle is
 * published since when, which the rules need before a new CA may sign what is served.
 * A Secret it did not create (no managed-by label) is never touched.
 */
#ifndef CERTS_CERTS_MANAGER_H
#define CERTS_CERTS_MANAGER_H

#include "certs/certs_plan.h"
#include "co/util/common.h"
#include "co/kube/kube_client.h"
#include "co/util/metrics.h"

typedef struct co_certs_manager co_certs_manager;

/** Label every managed Secret carries. */
#define CO_CERTS_MANAGED_BY_LABEL "app.kubernetes.io/managed-by"
#define CO_CERTS_MANAGED_BY       "component-webhook"
/** Annotations recording the published bundle. */
#define CO_CERTS_ANN_BUNDLE       "component-operator.cs.sap.com/ca-bundle-sha256"
#define CO_CERTS_ANN_PUBLISHED_AT "component-operator.cs.sap.com/ca-bundle-published-at"

typedef struct co_certs_manager_options {
    co_kube_client *client;         /**< borrowed; must outlive the manager */
    const char *namespace_;         /**< the Secret's (and Lease's) namespace */
    const char *secret_name;        /**< the Secret */
    co_certs_config certs;          /**< what to issue (strings borrowed) */
    const char *validating_webhook; /**< ValidatingWebhookConfiguration name, or NULL */
    const char *mutating_webhook;   /**< MutatingWebhookConfiguration name, or NULL */
    const char *crd;                /**< CRD whose conversion webhook to inject, or NULL */
    int leader_elect;               /**< only the Lease holder writes */
    const char *lease_name;         /**< the Lease (with leader_elect) */
    const char *identity;           /**< this replica in the Lease */
    long check_interval_ms;         /**< timer; 0: 60 s */
    co_metrics *metrics;            /**< registry for the certificate metrics, or NULL */
    /** Called (on the manager's thread) with a new serving pair; returns 0 when installed. */
    int (*serve)(const char *cert_pem, const char *key_pem, void *payload);
    void *payload; /**< for @p serve */
} co_certs_manager_options;

/**
 * Starts the watch, the Lease and the manager's thread. Options are copied (strings too).
 * @return 0 or the error of the informer or the elector.
 */
CO_MUST_CHECK int co_certs_manager_start(co_certs_manager **out,
                                         const co_certs_manager_options *opts);

/** Stops everything (releasing the Lease) and frees. NULL is a no-op. */
void co_certs_manager_stop(co_certs_manager *m);

/**
 * NULL when a serving certificate is served and the bundle that trusts it is published, else
 * what is missing (a static string).
 */
const char *co_certs_manager_not_ready(co_certs_manager *m);

/** Wakes the manager now (tests, and the CLI's "rotate" request). */
void co_certs_manager_kick(co_certs_manager *m);

/**
 * One pass of the writer's work, as the thread does it when it leads: read the Secret, apply
 * the rules, write, inject, record the publication. @return 0, CO_ECONFLICT when another
 * writer won a race (try again), or the API error.
 */
CO_MUST_CHECK int co_certs_manager_reconcile(co_certs_manager *m);

#endif
