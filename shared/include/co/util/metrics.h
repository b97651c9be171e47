/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file metrics.h
 * A small Prometheus metrics registry: counters, gauges and histograms with labels, rendered in
 * the text exposition format (version 0.0.4) that /metrics serves.
 *
 * A family is registered once with its label names; a series is addressed by an array of label
 * values in the same order (NULL for a family without labels). Families are rendered sorted by
 * name and series sorted by label values, so the output is deterministic. Label-less gauges and
 * counters may also be computed at scrape time by a callback. Everything is thread-safe; updates
 * take a per-family lock. Families are owned by the registry and borrowed by callers until
 * co_metrics_free().
 */
#ifndef CO_METRICS_H
#define CO_METRICS_H

#include <stddef.h>

#include "co/util/buf.h"
#include "co/util/common.h"

typedef struct co_metrics co_metrics;
typedef struct co_metric co_metric;
/** One labelled series of a metric (see co_metric_series()). */
typedef struct co_series co_series;

/** Default histogram buckets of the Prometheus Go client (seconds). */
#define CO_METRICS_DEFAULT_BUCKETS                                                                 \
    {                                                                                              \
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10                                    \
    }

/** Creates an empty registry. */
co_metrics *co_metrics_new(void);

/** Frees the registry and every family in it. NULL is a no-op. */
void co_metrics_free(co_metrics *reg);

/**
 * Registers a counter family. @p labels holds @p nlabels label names (copied).
 * @return the family (borrowed from @p reg). Registering a name twice returns the first family.
 */
co_metric *co_metrics_counter(co_metrics *reg,
                              const char *name,
                              const char *help,
                              const char *const *labels,
                              size_t nlabels);

/** Registers a gauge family; see co_metrics_counter(). */
co_metric *co_metrics_gauge(co_metrics *reg,
                            const char *name,
                            const char *help,
                            const char *const *labels,
                            size_t nlabels);

/** Registers a histogram family with @p nbuckets ascending upper bounds (copied; +Inf is
 * implicit). */
co_metric *co_metrics_histogram(co_metrics *reg,
                                const char *name,
                                const char *help,
                                const char *const *labels,
                                size_t nlabels,
                                const double *buckets,
                                size_t nbuckets);

/**
 * Registers a gauge of the state something is in, one series per thing: @p labels end with the
 * state's label, and a series is named by the values of the others. A series renders one
 * sample per state of @p states (copied), in the order of the states' names, 1 for its
 * current state and 0 for the others, as a gauge with a series per state would; the states
 * from index @p nalways on render only while current. One series instead of one per state.
 */
co_metric *co_metrics_state_gauge(co_metrics *reg,
                                  const char *name,
                                  const char *help,
                                  const char *const *labels,
                                  size_t nlabels,
                                  const char *const *states,
                                  size_t nstates,
                                  size_t nalways);

/**
 * Registers a label-less gauge whose value is computed by @p fn at every render. @p fn runs
 * with no registry lock held and must be thread-safe.
 */
void co_metrics_gauge_func(co_metrics *reg,
                           const char *name,
                           const char *help,
                           double (*fn)(void *payload),
                           void *payload);

/** Registers a label-less counter whose value, a total kept elsewhere that never decreases, is
 * read by @p fn at every render; as co_metrics_gauge_func(). */
void co_metrics_counter_func(co_metrics *reg,
                             const char *name,
                             const char *help,
                             double (*fn)(void *payload),
                             void *payload);

/**
 * Registers the metrics of the Prometheus Go client's process collector, read from /proc at
 * every render: process_cpu_seconds_total (a counter), process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_start_time_seconds, process_open_fds and
 * process_max_fds (gauges).
 */
void co_metrics_process(co_metrics *reg);

/** Adds 1 to a counter or gauge series. */
void co_metric_inc(co_metric *m, const char *const *values);

/** Adds @p v to a counter or gauge series; a counter ignores a @p v that is not positive. */
void co_metric_add(co_metric *m, const char *const *values, double v);

/**
 * Sets a gauge series to @p v. On a counter series it copies a total counted elsewhere: the
 * series is raised to @p v, and a smaller @p v is ignored, because a counter never decreases.
 */
void co_metric_set(co_metric *m, const char *const *values, double v);

/** Sets the state of a state gauge's series (@p values: every label but the state's); a
 * state not among the family's makes every sample 0. */
void co_metric_set_state(co_metric *m, const char *const *values, const char *state);

/** Records one observation in a histogram series. */
void co_metric_observe(co_metric *m, const char *const *values, double v);

/**
 * A series of @p m, created when new, for updates that need no lookup: the label values are
 * searched once here instead of at every update. Valid until the series is removed
 * or the registry freed.
 */
co_series *co_metric_series(co_metric *m, const char *const *values);

/** Adds @p v to a counter or gauge series, as co_metric_add(). */
void co_series_add(co_series *s, double v);

/** Records one observation in a histogram series, as co_metric_observe(). */
void co_series_observe(co_series *s, double v);

/** Removes a series (e.g. a deleted object's state gauge; its values are those of
 * co_metric_set_state()). No-op if absent. */
void co_metric_remove(co_metric *m, const char *const *values);

/** The current value of a counter or gauge series (0 if absent); of a state gauge's series,
 * the index of its state in the family's states (-1: none of them). For tests. */
double co_metric_value(co_metric *m, const char *const *values);

/**
 * Appends the whole registry in the Prometheus text format to @p out.
 * @return 0 or CO_ETOOBIG when @p out's cap is exceeded.
 */
CO_MUST_CHECK int co_metrics_render(co_buf *out, co_metrics *reg);

#endif
