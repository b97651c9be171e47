/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_sources.h
 * The daemon's binding of the reconciler's source seam (ctl_source_ops) to the source layer
 * (co/source.h): spec.sourceRef is resolved to an artifact, materialised from the artifact
 * cache and narrowed to spec.path; Flux objects are read from the manager's informer caches;
 * HTTP and git sources are handed to the leader-only poller, whose findings queue the
 * Component again. A Component leaves the poller when its deletion begins, when it is deleted
 * (or leaves the watched set) and when its source turns into one that is not polled.
 */
#ifndef CTL_SOURCES_H
#define CTL_SOURCES_H

#include "co/util/common.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_reconcile.h"

typedef struct ctl_sources ctl_sources;

/**
 * Creates the binding with its artifact cache in @p cache_dir. Call ctl_sources_attach()
 * once the manager exists.
 * @return 0 or the source layer's error (cache directory unusable).
 */
CO_MUST_CHECK int ctl_sources_new(ctl_sources **out, const char *cache_dir);

/**
 * Sets how often HTTP repositories are polled (0: CO_SOURCE_HTTP_POLL_MS). Call before
 * ctl_sources_attach(); git sources keep their own spec.sourceRef.git.interval.
 */
void ctl_sources_set_http_interval(ctl_sources *s, long interval_ms);

/**
 * Connects cluster reads, re-queues and releases to @p m, adds the poller's gauge to its
 * metrics and starts the poller. Call before ctl_manager_start().
 * @return 0 or CO_ERROR (no thread).
 */
CO_MUST_CHECK int ctl_sources_attach(ctl_sources *s, ctl_manager *m);

/** Number of Components whose source the poller watches (0 before ctl_sources_attach()). */
size_t ctl_sources_polled(ctl_sources *s);

/** Polls only while @p leader is non-zero. */
void ctl_sources_set_leader(ctl_sources *s, int leader);

/** The seam (valid while @p s lives). */
ctl_source_ops ctl_sources_ops(ctl_sources *s);

/** Stops the poller and frees. NULL is a no-op. */
void ctl_sources_free(ctl_sources *s);

#endif
