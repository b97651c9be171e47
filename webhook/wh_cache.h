/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The watches that keep wh_state current: every Component (cluster-wide, for the dependency
 * graph), every ComponentPolicy and every Namespace (for the policies' namespace selectors).
 * Readiness waits until each has listed once.
 */
#ifndef WH_CACHE_H
#define WH_CACHE_H

#include <stddef.h>

#include "co/util/common.h"
#include "co/kube/kube_client.h"
#include "webhook/wh_http.h"
#include "webhook/wh_state.h"

typedef struct wh_cache wh_cache;

/**
 * Starts the three watches feeding @p state. @p client and @p state are borrowed and must
 * outlive the cache.
 * @return 0 or the informer's error.
 */
CO_MUST_CHECK int wh_cache_start(wh_cache **out, co_kube_client *client, wh_state *state);

/** Stops the watches and frees the cache. NULL is a no-op. */
void wh_cache_stop(wh_cache *c);

/**
 * The readiness check "caches" (a wh_ready_fn with the cache as @p ctx): failing, with the
 * kinds still loading, until every watch has listed once.
 */
size_t wh_cache_ready(void *ctx, wh_probe_check *out, size_t max);

#endif
