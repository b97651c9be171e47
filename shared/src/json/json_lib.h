/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Library-internal interface of the json module: what the rest of the library builds on
 * without going through json-c itself (yaml's scalars, kustomize's name hashes): Go-compatible
 * number formatting, integer reads, the fast member lookup and the member list in key order.
 * Not part of the public API.
 */
#ifndef CO_JSON_LIB_H
#define CO_JSON_LIB_H

#include <stddef.h>
#include <stdint.h>

struct json_object;

/** Buffer size that holds any number formatted by co_json__format_double(). */
#define CO_JSON__NUMBER_MAX 40

/**
 * Formats the finite double @p v like Go's strconv.FormatFloat(v, @p fmt, -1, @p bits) with
 * fmt 'e' or 'g' (shortest representation that reads back as the same float64, or float32
 * when @p bits is 32), or with fmt 'j' as encoding/json writes a float64. ('f' is used
 * internally for magnitudes between 1e-6 and 1e21 only.)
 * @return the length written to @p out (NUL-terminated).
 */
size_t co_json__format_double(char out[CO_JSON__NUMBER_MAX], double v, char fmt, int bits);

/** Whether @p obj is an integer (int64 or uint64) and its value. @p is_unsigned is set when
 * the value exceeds INT64_MAX (then @p u holds it, else @p i does). */
int co_json__integer(const struct json_object *obj, int64_t *i, uint64_t *u, int *is_unsigned);

/**
 * Member @p key of @p obj, borrowed; NULL when @p obj is not an object, the key is absent or its
 * value is JSON null. The first members are compared one by one before the hash table is asked,
 * which is faster for the few members of a Kubernetes object: the validators and the string
 * accessors (co_json_str()) ask for every field they know, present or not.
 */
struct json_object *co_json__member(const struct json_object *obj, const char *key);

/** A member of a json-c object: its key and value, both borrowed from the object. */
typedef struct co_json__kv {
    const char *key;
    struct json_object *val;
} co_json__kv;

/**
 * The members of object @p obj in a new array (free it with free(); never NULL) of @p n entries,
 * borrowed from @p obj: in the byte order of their keys when @p sorted (Go's order for a map,
 * the canonical JSON and the sorted YAML), else in insertion order.
 */
co_json__kv *co_json__members(const struct json_object *obj, int sorted, size_t *n);

#endif
