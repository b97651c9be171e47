/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory estimates and the request budget (wh_memory.h). The per-value figures are resident
 * bytes measured with the webhook's allocator (mimalloc) on four-megabyte documents made of one
 * shape each, rounded up with room to spare:
 *
 *   shape (input per value)      co_jdoc   json-c tree
 *   [0,0,...]        2 bytes      13x       36x   (about 73 bytes a number)
 *   ["","",...]      3 bytes      13x       24x   (about 73 bytes a string)
 *   [[],[],...]      3 bytes      13x       32x   (about 97 bytes an array)
 *   [{},{},...]      3 bytes      13x      257x   (about 770 bytes an object: a hash table of
 *                                                   sixteen slots each)
 *   {"k":0,...}      9 bytes       7x       18x   (about 90 bytes a member beyond its value)
 *   ["aaa...a"]      one string    1x        1x
 *
 * A document is its input copied once, decoded strings in an arena (never longer than their
 * input form), a scratch buffer for one string, and one 24-byte node per value in an array that
 * doubles as it grows; hence 3 bytes per input byte and 48 per node. A node is a value, a
 * member key, or an element: at most one per ',' and ':' and container plus one, which a scan
 * that skips strings counts without building anything.
 */
#include "webhook/wh_memory.h"

#include <string.h>

#include "co/util/error.h"

/* Below this the worst case (one node per two bytes) is charged without a scan: a few MiB at
 * most, and the scan would cost as much as a small review's parse. */
#define SCAN_MIN ((size_t)64 * 1024)

#define PARSE_PER_BYTE 3
#define PARSE_PER_NODE 48

#define TREE_OBJECT 1024 /* json_object + lh_table of 16 entries, grown with its members */
#define TREE_ARRAY  160  /* json_object + array_list of 32 slots */
#define TREE_SCALAR 96   /* json_object of a number, boolean or null */
/* json_object of a string, or for a member key its lh_entry (twice, for the table's growth);
 * the bytes come on top */
#define TREE_STRING 112

/* Longest text json-c writes for a number ("%.17g" and a sign) or literal. */
#define TEXT_SCALAR 24

void wh_budget_init(wh_budget *b, size_t total)
{
    b->total = total;
    atomic_init(&b->used, 0);
}

int wh_budget_take(wh_budget *b, size_t n)
{
    if (n > b->total) {
        return co_error_set(CO_ETOOBIG,
                            "needs an estimated %zu bytes, more than the %zu "
                            "bytes the webhook gives requests in flight",
                            n, b->total);
    }
    size_t used = atomic_load_explicit(&b->used, memory_order_relaxed);
    do {
        if (used > b->total - n) {
            return co_error_set(CO_EUNAVAILABLE,
                                "needs an estimated %zu bytes while requests in flight hold %zu "
                                "of %zu",
                                n, used, b->total);
        }
    } while (!atomic_compare_exchange_weak_explicit(&b->used, &used, used + n, memory_order_relaxed,
                                                    memory_order_relaxed));
    return 0;
}

void wh_budget_give(wh_budget *b, size_t n)
{
    atomic_fetch_sub_explicit(&b->used, n, memory_order_relaxed);
}

size_t wh_budget_used(const wh_budget *b)
{
    return atomic_load_explicit(&b->used, memory_order_relaxed);
}

/* Nodes a document of @p body can have at most: structural characters outside strings. */
static size_t max_nodes(const char *body, size_t len)
{
    size_t n = 1;
    const char *p = body, *end = body + len;
    while (p < end) {
        char c = *p++;
        switch (c) {
        case ',':
        case ':':
        case '[':
        case '{':
            n++;
            break;
        case '"':
            /* to the closing quote; an escaped character is skipped with its backslash */
            while (p < end && *p != '"') {
                p += *p == '\\' ? 2 : 1;
            }
            p++;
            break;
        default:
            break;
        }
    }
    return n;
}

size_t wh_memory_parse_cost(const char *body, size_t len)
{
    size_t nodes = len < SCAN_MIN ? len / 2 + 1 : max_nodes(body, len);
    return PARSE_PER_BYTE * len + PARSE_PER_NODE * nodes;
}

size_t wh_memory_tree_cost(const co_jv *v)
{
    if (!v) {
        return 0;
    }
    /* a value's nodes are contiguous: itself and everything inside it */
    size_t cost = 0;
    for (uint32_t i = 0; i < v->size; i++) {
        const co_jv *n = v + i;
        switch (n->type) {
        case CO_JV_OBJECT:
            cost += TREE_OBJECT;
            break;
        case CO_JV_ARRAY:
            cost += TREE_ARRAY;
            break;
        case CO_JV_STRING:
            /* a string value, or a member key and its slot in the table; its bytes in a block
             * of the allocator's next size class (at most an eighth more) */
            cost += TREE_STRING + n->len + n->len / 8 + 1;
            break;
        default:
            cost += TREE_SCALAR;
            break;
        }
    }
    return cost;
}

size_t wh_memory_text_cost(const co_jv *v, size_t text_len)
{
    return v ? text_len + TEXT_SCALAR * (size_t)v->size : 0;
}
