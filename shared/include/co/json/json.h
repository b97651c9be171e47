/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file json.h
 * JSON documents as json-c trees: strict parsing, encoding (compact, pretty and canonical),
 * lookup by key list and by JSON Pointer, typed getters with field-path errors, editing, deep
 * copy, equality and merge, JSON Patch (RFC 6902) and JSON merge patch (RFC 7386).
 *
 * Values are json-c's `struct json_object` (forward-declared here; include <json-c/json.h> in
 * the .c file that walks them). JSON null is the NULL pointer, as in json-c: a parse that
 * yields `null` succeeds with `*out == NULL`.
 *
 * Ownership follows shared/README.md with json-c's reference counting:
 * - an object returned through `out`, or as the value of a function documented as returning
 *   "a new reference", belongs to the caller, who releases it with json_object_put();
 * - an object returned as a "borrowed" reference belongs to the tree it was found in and stays
 *   valid until that tree is modified or released (like json_object_object_get_ex()); call
 *   json_object_get() to keep it longer;
 * - co_json_set() takes ownership of the value it stores, also when it fails.
 *
 * Numbers: an integer literal that fits int64 becomes a json-c int64; one in
 * (INT64_MAX, UINT64_MAX] a json-c uint64 (exact, as go-yaml and json-c do); anything larger,
 * and every literal with a fraction or exponent, a double. A literal whose magnitude
 * overflows a double is refused. json-c's own json_object_get_int64() clamps uint64 values;
 * co_json_get_int64() reports them as out of range instead.
 *
 * Key lists: functions taking `...` take object keys (any bytes, including '.' and '/', as in
 * `component-operator.cs.sap.com/owner-id`) ending with NULL. When the value reached so far is
 * an array, a key made of decimal digits indexes it. Error messages print the path as keys
 * joined with '.' and indices as "[i]": `spec.dependencies[2].name: expected string, got
 * number`.
 *
 * Thread-safety: functions without a tree are thread-safe; a tree is used by one thread at a
 * time (json-c's reference counts are not atomic).
 */
#ifndef CO_JSON_H
#define CO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/buf.h"
#include "co/util/common.h"

struct json_object;

/** Options for encoding. */
typedef enum co_json_flags {
    /** Indent with two spaces and a newline per member, like Go's json.MarshalIndent(v, "",
     * "  "); otherwise compact without any space. */
    CO_JSON_PRETTY = 1 << 0,
    /** Object members in byte order of their keys, like Go's encoding of a map. */
    CO_JSON_SORTED = 1 << 1,
    /** Write '<', '>' and '&' as themselves (for human-facing output) instead of \u003c,
     * \u003e and \u0026. */
    CO_JSON_NO_HTML_ESCAPE = 1 << 2,
} co_json_flags;

/**
 * The canonical encoding, used for digests: compact, sorted keys, and exactly the bytes Go's
 * json.Marshal writes for the same value read into interface{} (map[string]interface{} keys
 * sorted; '<', '>', '&', U+2028 and U+2029 escaped as \u003c, \u003e, \u0026, \u2028, \u2029;
 * other control characters as \n, \r, \t or \u00XX; invalid UTF-8 as \ufffd; doubles in Go's
 * shortest form: 1e+21, 1e-7, 0.5, 100). The Go operator hashes json.Marshal output, so
 * digests computed over this encoding match its digests.
 */
#define CO_JSON_CANONICAL CO_JSON_SORTED

/* ---- Parsing ------------------------------------------------------------------------------ */

/**
 * Parses one JSON value from @p len bytes (strict RFC 8259: no comments, single quotes,
 * trailing commas, NaN, leading zeros, raw control characters in strings or invalid UTF-8;
 * duplicate keys: the last wins, like Go). Input larger than CO_MAX_DOCUMENT or nested deeper
 * than CO_MAX_NESTING is refused. Whitespace may surround the value; anything else may not.
 * @param[out] out the value, a new reference (NULL for `null`)
 * @return 0; CO_EINVALID with "line L, column C: <problem>"; CO_ETOOBIG over the size cap.
 */
CO_MUST_CHECK int co_json_parse(struct json_object **out, const char *data, size_t len);

/** Like co_json_parse() with a size cap @p max instead of CO_MAX_DOCUMENT. */
CO_MUST_CHECK int
co_json_parse_max(struct json_object **out, const char *data, size_t len, size_t max);

/** In a co_json_parse_skip() key list: every element of an array. */
#define CO_JSON_EVERY_ELEMENT "[]"

/**
 * Like co_json_parse_max(), leaving out of the tree the members a caller never reads.
 * @p skip lists up to 32 key lists (each NULL-terminated, from the root; the set ends with
 * NULL): `{"request", "object", "status", NULL}` leaves out the member "status" of the object
 * at root.request.object. CO_JSON_EVERY_ELEMENT in a list stands for every element of an
 * array there: `{"items", CO_JSON_EVERY_ELEMENT, "metadata", "managedFields", NULL}` leaves
 * out managedFields of every item of a list; a list must end with a member name. Anything
 * else inside an array matches nothing. A left-out value is read exactly as any other (a malformed
 * one is refused with the same error at the same place, numbers out of range included) but nothing
 * is built for it.
 * @p skip NULL parses everything.
 * @param[out] out the value, a new reference (NULL for `null`)
 * @return as co_json_parse_max().
 */
CO_MUST_CHECK int co_json_parse_skip(struct json_object **out,
                                     const char *data,
                                     size_t len,
                                     size_t max,
                                     const char *const *const *skip);

/**
 * Called by co_json_parse_each() with each element of the streamed array, borrowed for the call
 * (take a reference to keep it). Nonzero stops the parse, and co_json_parse_each() returns it.
 */
typedef int (*co_json_element_cb)(struct json_object *element, void *payload);

/**
 * Like co_json_parse_skip(), but when the document is an object whose member @p key is an array,
 * that array is never built: each element is built in turn, handed to @p cb and freed, so a long
 * list (a Kubernetes List's "items") costs one element's tree at a time. @p out receives the
 * rest: the object without that member. Elements are handed over as they are read, so a document
 * found malformed after some of them still fails: a caller must not keep what it was given before
 * the call returned 0. The skip lists apply as in co_json_parse_skip(), from the root.
 * @return as co_json_parse_skip(), or @p cb's nonzero result (then @p out is not set).
 */
CO_MUST_CHECK int co_json_parse_each(struct json_object **out,
                                     const char *data,
                                     size_t len,
                                     size_t max,
                                     const char *const *const *skip,
                                     const char *key,
                                     co_json_element_cb cb,
                                     void *payload);

/* ---- Encoding ----------------------------------------------------------------------------- */

/**
 * Appends the JSON encoding of @p obj to @p out (see co_json_flags and CO_JSON_CANONICAL).
 * @return 0; CO_EINVALID for a NaN or infinite double (as Go: "json: unsupported value: +Inf";
 * @p out is left as it was); CO_ETOOBIG when @p out's cap is exceeded (buffer disposed).
 */
CO_MUST_CHECK int co_json_encode(co_buf *out, const struct json_object *obj, unsigned flags);

/**
 * Appends the @p len bytes at @p s to @p out as one JSON string, byte for byte what Go's
 * encoding/json writes for a Go string (the one encoder of that form in the library: the
 * canonical encoding, digests and toJson all write through it). In quotes: '"' and '\\' after a
 * backslash; \n, \r, \t, \b and \f in short form (as Go 1.22 and later); the other bytes
 * below 0x20 as \u00XX, NUL included (a byte like any other: the string ends at @p len only);
 * '<', '>' and '&' as \u003c, \u003e and \u0026 unless @p flags has CO_JSON_NO_HTML_ESCAPE
 * (the other co_json_flags are ignored); U+2028 and U+2029 as \u2028 and \u2029; each byte that
 * does not start a valid UTF-8 sequence (co/util/utf8.h: overlong forms, surrogates, truncated
 * sequences) as one \ufffd, as Go does; everything else, DEL and valid non-ASCII, as itself.
 * @return 0, or CO_ETOOBIG when @p out's cap is exceeded (buffer disposed).
 */
CO_MUST_CHECK int co_json_go_quote(co_buf *out, const char *s, size_t len, unsigned flags);

/**
 * The JSON encoding of @p obj as a string; free with free().
 * @return the string, or NULL (with the last error set) for a NaN or infinite double.
 */
char *co_json_dumps(const struct json_object *obj, unsigned flags);

/** JSON's name of the type of @p obj: "null", "boolean", "number", "string", "object",
 * "array". */
const char *co_json_type_name(const struct json_object *obj);

/* ---- Lookup ------------------------------------------------------------------------------- */

/**
 * Follows the NULL-terminated key list from @p obj.
 * @return the value found (borrowed from @p obj), or NULL when a key is missing, a value on
 * the way is not an object/array, or the value is null.
 */
struct json_object *co_json_get(const struct json_object *obj, ...) CO_SENTINEL;

/** Like co_json_get() with the keys as a NULL-terminated array. */
struct json_object *co_json_getv(const struct json_object *obj, const char *const *keys);

/**
 * Resolves the JSON Pointer (RFC 6901) @p pointer in @p obj ("" is the whole document; "~1"
 * stands for '/', "~0" for '~'; array indices are decimal without leading zeros).
 * @param[out] out the value (borrowed from @p obj; NULL when it is null)
 * @return 0; CO_ENOTFOUND when the path does not exist; CO_EINVALID for a malformed pointer.
 */
CO_MUST_CHECK int
co_json_pointer_get(struct json_object **out, const struct json_object *obj, const char *pointer);

/* ---- String accessors --------------------------------------------------------------------
 * For reading fields whose absence is not an error to report: no message is set. */

/**
 * The string at the NULL-terminated key list under @p obj, following object members only.
 * @return the string (borrowed from @p obj), or NULL when a key is missing, a value on the way
 * is not an object, or the value is not a string (null included).
 */
const char *co_json_str(const struct json_object *obj, ...) CO_SENTINEL;

/** metadata.name of the object @p obj, as co_json_str(); NULL when absent or not a string. */
const char *co_json_meta_name(const struct json_object *obj);

/** metadata.namespace of the object @p obj, as co_json_str(). */
const char *co_json_meta_namespace(const struct json_object *obj);

/** metadata.labels[@p key] of the object @p obj, as co_json_str(). */
const char *co_json_meta_label(const struct json_object *obj, const char *key);

/** metadata.annotations[@p key] of the object @p obj, as co_json_str(). */
const char *co_json_meta_annotation(const struct json_object *obj, const char *key);

/* ---- Typed getters -----------------------------------------------------------------------
 * Each follows the key list like co_json_get() and checks the type of the value found.
 * @return 0; CO_ENOTFOUND when the value is missing or null ("spec.timeout: not found");
 * CO_EINVALID when it, or a value on the way, has another type
 * ("spec.requeueInterval: expected string, got number"). */

/** A string; @p out is borrowed from @p obj (NUL-terminated; see co_json_get_string_len()). */
CO_MUST_CHECK int
co_json_get_string(const char **out, const struct json_object *obj, ...) CO_SENTINEL;

/** An integer that fits int64 (an integral double in range is accepted). */
CO_MUST_CHECK int co_json_get_int64(int64_t *out, const struct json_object *obj, ...) CO_SENTINEL;

/** Any number, as a double. */
CO_MUST_CHECK int co_json_get_double(double *out, const struct json_object *obj, ...) CO_SENTINEL;

/** A boolean. */
CO_MUST_CHECK int co_json_get_bool(bool *out, const struct json_object *obj, ...) CO_SENTINEL;

/** An object; @p out is borrowed from @p obj. */
CO_MUST_CHECK int
co_json_get_object(struct json_object **out, const struct json_object *obj, ...) CO_SENTINEL;

/** An array; @p out is borrowed from @p obj. */
CO_MUST_CHECK int
co_json_get_array(struct json_object **out, const struct json_object *obj, ...) CO_SENTINEL;

/** The length in bytes of the string @p obj (which may contain NUL bytes); 0 if not a string. */
size_t co_json_string_len(const struct json_object *obj);

/* ---- Editing ------------------------------------------------------------------------------ */

/**
 * Stores @p value (takes ownership; NULL stores null) at the key list under the object
 * @p root, creating missing or null intermediate objects. An existing array on the way may be
 * indexed by a decimal key (the element must exist).
 * @return 0; CO_EINVALID when @p root or a value on the way is neither an object nor null (the
 * value is released).
 */
CO_MUST_CHECK int co_json_set(struct json_object *root, struct json_object *value, ...) CO_SENTINEL;

/** Like co_json_set() with the keys as a NULL-terminated array. */
CO_MUST_CHECK int
co_json_setv(struct json_object *root, struct json_object *value, const char *const *keys);

/**
 * Removes the member at the key list (an array element when the last key indexes an array).
 * @return 0 when something was removed; CO_ENOTFOUND when there was nothing to remove.
 */
CO_MUST_CHECK int co_json_delete(struct json_object *root, ...) CO_SENTINEL;

/** A deep copy of @p obj: a new reference (NULL for null). */
struct json_object *co_json_copy(const struct json_object *obj);

/**
 * Deep equality: objects compare member-wise regardless of order, arrays element-wise,
 * strings byte-wise, numbers by exact value whatever their kind (the integer 1 equals the
 * double 1.0; the integer 2^63-1 does not equal the double 2^63). NaN equals nothing.
 */
bool co_json_equal(const struct json_object *a, const struct json_object *b);

/**
 * Deep-merges @p src into the object @p dst: where both hold an object under a key, the merge
 * recurses; otherwise the value of @p src replaces that of @p dst (a deep copy; null
 * included). Unlike the Go original, an object replaced by a scalar becomes that scalar, not
 * null. @p src is not modified. Both must be objects (asserted).
 */
void co_json_merge(struct json_object *dst, const struct json_object *src);

/* ---- JSON Patch (RFC 6902) ---------------------------------------------------------------- */

/**
 * Applies the JSON Patch @p patch (an array of operations: add, remove, replace, move, copy,
 * test; paths are JSON Pointers, "-" appends to an array) to a copy of @p doc. All or
 * nothing: @p doc is never modified.
 * @param[out] out the patched document, a new reference (NULL when it is null)
 * @return 0; CO_EINVALID for a malformed patch or a path that does not exist (the message
 * names the operation index and path); CO_ECONFLICT when a "test" operation fails.
 */
CO_MUST_CHECK int co_json_patch_apply(struct json_object **out,
                                      const struct json_object *doc,
                                      const struct json_object *patch);

/**
 * Computes a JSON Patch that turns @p from into @p to: removed members become "remove", new
 * ones "add", changed scalars "replace"; objects and same-length arrays are compared
 * recursively; arrays of different length keep their common head and tail and add or remove
 * only the elements in between. Applying the result to @p from yields a document equal to
 * @p to (co_json_equal()).
 * @return the patch, a new reference to an array (empty when the documents are equal).
 */
struct json_object *co_json_patch_diff(const struct json_object *from,
                                       const struct json_object *to);

/* ---- JSON merge patch (RFC 7386) ---------------------------------------------------------- */

/**
 * Applies the merge patch @p patch to @p doc: an object patch merges member-wise, a null
 * member deletes, anything else replaces the whole value.
 * @return the result, a new reference (@p doc is not modified).
 */
struct json_object *co_json_merge_patch_apply(const struct json_object *doc,
                                              const struct json_object *patch);

/**
 * Computes a merge patch that turns @p from into @p to (members missing from @p to become
 * null). A merge patch cannot set a member to null; such members of @p to are deleted by the
 * patch instead.
 * @return the patch, a new reference (an empty object when nothing changed).
 */
struct json_object *co_json_merge_patch_diff(const struct json_object *from,
                                             const struct json_object *to);

#endif
