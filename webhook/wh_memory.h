/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a request may cost in memory, and a process-wide budget that requests reserve from
 * before they spend it. The webhook answers unauthenticated clients, so the body caps alone do
 * not bound its memory: a body is buffered, copied into a document of 24-byte nodes, and on the
 * mutating, conversion and policy-judging paths built again as json-c trees, which cost up to
 * 800 bytes for an empty object ("{}", three bytes of input). Each stage is estimated from the
 * shape of what it is about to build (node counts, string bytes: see wh_memory.c for the
 * measured figures) and reserved first; a request whose reservation does not fit now is answered
 * 429, one that could never fit 413. The estimates are upper bounds, so the sum of what requests
 * in flight hold stays under the budget whatever the bodies look like.
 */
#ifndef WH_MEMORY_H
#define WH_MEMORY_H

#include <stdatomic.h>
#include <stddef.h>

#include "co/util/common.h"
#include "co/json/jdoc.h"

/** Bytes every request reserves when its headers arrive, beside its body (bookkeeping, the
 * answer of an admission review, field paths of a denial). */
#define WH_MEMORY_REQUEST_OVERHEAD ((size_t)64 * 1024)

/** A budget shared by the requests in flight. */
typedef struct wh_budget {
    size_t total;
    atomic_size_t used;
} wh_budget;

/** Starts @p b empty with room for @p total bytes. */
void wh_budget_init(wh_budget *b, size_t total);

/**
 * Takes @p n bytes from @p b.
 * @return 0; CO_EUNAVAILABLE when they do not fit now (others hold the rest: retry later);
 * CO_ETOOBIG when @p n alone is more than the whole budget.
 */
CO_MUST_CHECK int wh_budget_take(wh_budget *b, size_t n);

/** Gives back @p n bytes taken earlier. */
void wh_budget_give(wh_budget *b, size_t n);

/** Bytes taken now. */
size_t wh_budget_used(const wh_budget *b);

/**
 * Upper bound of what parsing @p len bytes of JSON into a co_jdoc takes: the document's copy of
 * the text, the arena of decoded strings and one node per value. Short bodies are charged their
 * worst case unread; longer ones are scanned once for their structural characters.
 */
size_t wh_memory_parse_cost(const char *body, size_t len);

/** Upper bound of the json-c tree co_jv_to_json() builds from @p v (0 for NULL). */
size_t wh_memory_tree_cost(const co_jv *v);

/**
 * Upper bound of the text json-c writes for @p v when the input it was parsed from took
 * @p text_len bytes: strings are never longer than their input form, numbers at most 24
 * characters.
 */
size_t wh_memory_text_cost(const co_jv *v, size_t text_len);

#endif
