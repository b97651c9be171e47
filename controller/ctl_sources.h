/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_sources.h
 * The daemon's binding of the reconciler's source seam (ctl_source_ops) to the source layer
 * (co/source.h): spec.sourceRef is resolved to an artifact, materialised from the artifact
 * cache and narrowed to spec.path; Flux objects are read from the manager's informer caches;
 * HTTP and git sources are handed to the leader-only poller, whose findings queue the
 * Component again.
 */
#ifndef CTL_SOURCES_H
#define CTL_SOURCES_H

#include "co/common.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_reconcile.h"

typedef struct ctl_sources ctl_sources;

/**
 * Creates the binding with its artifact cache in @p cache_dir. Call ctl_sources_attach()
 * once the manager exists.
 * @return 0 or the source layer's error (cache directory unusable).
 */
CO_MUST_CHECK int ctl_sources_new(ctl_sources **out, const char *cache_dir);

/** Connects cluster reads and re-queues to @p m and starts the poller. */
CO_MUST_CHECK int ctl_sources_attach(ctl_sources *s, ctl_manager *m);

/** Polls only while @p leader is non-zero. */
void ctl_sources_set_leader(ctl_sources *s, int leader);

/** The seam (valid while @p s lives). */
ctl_source_ops ctl_sources_ops(ctl_sources *s);

/** Stops the poller and frees. NULL is a no-op. */
void ctl_sources_free(ctl_sources *s);

#endif
