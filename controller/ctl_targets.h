/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_targets.h
 * Clients of the clusters Components deploy to (docs/behaviour.md, "Targets and impersonation"),
 * cached per (kubeconfig content, impersonated user) and expired after a time unused (15 minutes in
 * the daemon). The local cluster without impersonation is the controller's own client.
 *
 * Impersonation: a local target acts as the user given (the Component's serviceAccountName or
 * the --default-service-account flag, as `system:serviceaccount:<ns>:<name>`). Unlike the Go
 * original, a kubeconfig target is impersonated too when a user is given, so that a service
 * account named on the Component is honoured wherever the objects go.
 *
 * Thread-safe. A client handed out stays valid until its hold is released.
 */
#ifndef CTL_TARGETS_H
#define CTL_TARGETS_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_event.h"

typedef struct ctl_targets ctl_targets;

/**
 * Creates a cache.
 * @param local the controller's own client (borrowed; must outlive the cache)
 * @param ttl_ns how long an unused client is kept
 */
ctl_targets *ctl_targets_new(co_kube_client *local, int64_t ttl_ns);

/** Frees every client (none may be held). NULL is a no-op. */
void ctl_targets_free(ctl_targets *t);

/** ctl_targets_acquire() flag: the kubeconfig may name an http:// server (a ComponentPolicy
 * grants insecureKubeConfigServers). */
#define CTL_TARGET_ALLOW_HTTP 0x1u

/**
 * A client for @p kubeconfig (YAML or JSON text; NULL: the local cluster) acting as @p user
 * (NULL: no impersonation). A kubeconfig comes from a tenant's Secret and is read as untrusted
 * (co_kube_config_from_untrusted_json()): inline credentials only, https servers unless
 * @p flags has CTL_TARGET_ALLOW_HTTP, and connections through the network deny-list.
 * @param[out] out the client, valid until ctl_targets_release(@p hold_out)
 * @param[out] hold_out NULL for the local client, else a hold to release
 * @return 0; CO_EINVALID for an unusable kubeconfig (the message names the problem: a file
 *         reference, an http:// server); CO_EUNSUPPORTED for exec or auth-provider users.
 */
CO_MUST_CHECK int ctl_targets_acquire(ctl_targets *t,
                                      const char *kubeconfig,
                                      size_t kubeconfig_len,
                                      const char *user,
                                      unsigned flags,
                                      co_kube_client **out,
                                      void **hold_out);

/** Releases a hold (NULL is a no-op) and frees clients unused for longer than the TTL. */
void ctl_targets_release(ctl_targets *t, void *hold);

/**
 * The event recorder writing through the held client (created on first use with @p ro, freed
 * with the client), so that events about objects in a remote cluster land in that cluster.
 * @return the recorder, or NULL when it cannot be created (events are then dropped).
 */
co_kube_recorder *
ctl_targets_recorder(ctl_targets *t, void *hold, const co_kube_recorder_options *ro);

/** Frees clients unused for longer than the TTL. Called by acquire and release and on every
 * metrics scrape; callable any time. */
void ctl_targets_sweep(ctl_targets *t);

/** Number of cached clients. */
size_t ctl_targets_active(ctl_targets *t);

/** Number of clients built so far. */
unsigned long ctl_targets_created(ctl_targets *t);

/** Test seam: the monotonic clock (ns) used for expiry; NULL restores the default. */
void ctl_targets_set_clock(ctl_targets *t, int64_t (*now)(void));

#endif
