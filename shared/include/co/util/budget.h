/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file budget.h
 * The resource budget of one render: CPU time of the rendering thread and memory, so that no
 * source (a template that loops forever, a kustomization that multiplies its resources, a
 * template that doubles a list until the process runs out of memory) can take more than its
 * share of the process, whatever caps its single inputs stay under.
 *
 * A budget is in force on one thread between co_budget_begin() and co_budget_end(). The render
 * pipeline (co/render/render.h) begins one per render; a template session (co/render/template.h)
 * begins one when none is in force, so every template execution is bounded. Budgets nest: an inner
 * begin only counts, the outermost budget stays in force.
 *
 * The long-running loops of the engines (template steps, kustomize transformers, chart
 * rendering, YAML decoding, substitution, decryption) call co_budget_tick(), which reads the
 * thread's CPU clock (CLOCK_THREAD_CPUTIME_ID) once every CO_BUDGET_TICKS calls, so the check
 * costs a counter increment. Memory is charged by what a render builds from its input: template
 * values (the template arena), rendered text, decoded documents and the copies of source files
 * held in memory. Charges are approximate (what the engines allocate, not what the allocator
 * keeps) and mostly not given back before the render ends.
 *
 * Once exceeded, a budget stays exceeded: every later check fails with the same error
 * (CO_ETIMEOUT for CPU time, CO_ETOOBIG for memory) and the message "render budget exceeded:
 * more than 30s of CPU time" / "render budget exceeded: more than 64 MiB of memory ...".
 *
 * The process-wide default (co_budget_set_default()) is set once at start-up, before threads
 * start; everything else works on the calling thread's budget and is thread-safe.
 */
#ifndef CO_BUDGET_H
#define CO_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"

struct json_object;

/** co_budget_tick() reads the CPU clock once per this many calls. */
#define CO_BUDGET_TICKS 1024u

/** The limits of one budget; a zero field means the process default. */
typedef struct co_budget_limits {
    int64_t cpu_ns; /**< CPU time of the rendering thread, nanoseconds */
    size_t memory;  /**< bytes charged by the render */
} co_budget_limits;

/**
 * Sets the process-wide default limits (zero fields keep the built-in defaults,
 * CO_DEFAULT_RENDER_CPU and CO_DEFAULT_RENDER_MEMORY of co/util/caps.h). Call once at start-up,
 * before any thread renders.
 */
void co_budget_set_default(const co_budget_limits *limits);

/** The process-wide default limits. */
co_budget_limits co_budget_default(void);

/**
 * Puts a budget in force on the calling thread, unless one already is (then only the nesting
 * is counted). Pair with co_budget_end() on the same thread.
 * @param limits NULL or zero fields: the process default
 */
void co_budget_begin(const co_budget_limits *limits);

/** Ends the budget begun by the matching co_budget_begin(). */
void co_budget_end(void);

/** Whether a budget is in force on the calling thread. */
bool co_budget_active(void);

/**
 * Reads the CPU clock and checks both limits.
 * @return 0 (also without a budget); CO_ETIMEOUT or CO_ETOOBIG with the message set.
 */
CO_MUST_CHECK int co_budget_check(void);

/**
 * co_budget_check() on every CO_BUDGET_TICKS-th call; otherwise only the sticky state.
 * @return 0, CO_ETIMEOUT or CO_ETOOBIG (message set).
 */
CO_MUST_CHECK int co_budget_tick(void);

/**
 * Charges @p bytes of memory to the budget in force (nothing without one).
 * @return 0, or CO_ETOOBIG (message set) when the budget is, or now is, exceeded.
 */
CO_MUST_CHECK int co_budget_charge(size_t bytes);

/**
 * Charges an estimate of the memory json-c holds for @p obj (and everything in it).
 * @param[out] charged the bytes charged (for co_budget_release()), or NULL
 * @return as co_budget_charge()
 */
CO_MUST_CHECK int co_budget_charge_json(const struct json_object *obj, size_t *charged);

/**
 * Gives back @p bytes charged while the budget @p id (co_budget_id()) was in force; nothing
 * happens when another budget, or none, is in force now.
 */
void co_budget_release(uint64_t id, size_t bytes);

/** An identifier of the budget in force on this thread, unique in the process; 0 for none. */
uint64_t co_budget_id(void);

/** Bytes charged to the budget in force so far (0 without one). */
size_t co_budget_used(void);

/** Bytes still free in the budget in force (SIZE_MAX without one). */
size_t co_budget_memory_left(void);

/** The memory limit of the budget in force (SIZE_MAX without one). */
size_t co_budget_memory_limit(void);

/**
 * Marks the memory budget as exceeded: for a request of @p bytes that was refused before it was
 * allocated (a list or a string that would not fit).
 * @return CO_ETOOBIG with the budget's message set
 */
int co_budget_refuse(size_t bytes);

/** The sticky state: 0, or CO_ETIMEOUT / CO_ETOOBIG with the message set again. */
CO_MUST_CHECK int co_budget_status(void);

/**
 * Parses a size like Kubernetes quantities: plain bytes ("1048576"), binary suffixes ("64Ki",
 * "64Mi", "1Gi", "1Ti") or decimal ones ("500k", "64M", "1G", "1T").
 * @param what names the value in the error message (e.g. "--render-memory-budget")
 * @return 0 or CO_EINVALID.
 */
CO_MUST_CHECK int co_budget_parse_bytes(uint64_t *out, const char *what, const char *str);

/**
 * Limits from the values of the flags --render-cpu-budget (@p cpu, a Go duration such as "30s")
 * and --render-memory-budget (@p memory, a size such as "64Mi"); NULL leaves a field zero (the
 * default). Both must be positive.
 * @return 0 or CO_EINVALID with a message naming the flag.
 */
CO_MUST_CHECK int
co_budget_limits_parse(co_budget_limits *out, const char *cpu, const char *memory);

#endif
