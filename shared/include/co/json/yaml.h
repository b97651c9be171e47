/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file yaml.h
 * YAML to JSON and back, with the scalar rules Kubernetes tooling applies.
 *
 * Reading (libyaml's parser, then json-c trees) resolves plain scalars exactly as
 * sigs.k8s.io/yaml's YAMLToJSON (go-yaml v2) does, which is what kubectl, Helm and the Go
 * operator see:
 * - null: empty, `~`, `null`, `Null`, `NULL`;
 * - booleans: y Y yes Yes YES on On ON true True TRUE and n N no No NO off Off OFF false
 *   False FALSE;
 * - integers as Go's strconv.ParseInt(s, 0, 64) after removing every '_': decimal, 0x/0o/0b
 *   prefixes, leading-zero octal (`012` is 10), a sign; larger than int64 but within uint64
 *   stays exact; `0b` followed by a signed binary number is accepted as go-yaml does;
 * - floats: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` (so `1e3` and `08` are
 *   floats), `.inf`, `-.inf`, `.nan` in three spellings each; a float beyond the double range
 *   stays a string;
 * - timestamps (`2024-01-01`, ...) stay strings; quoted scalars are always strings;
 * - tags: `!!str`, `!!int`, `!!float`, `!!bool`, `!!null` force a type (an impossible one is an
 *   error), `!!binary` decodes base64, other tags are ignored;
 * - anchors and aliases are expanded (copies, at most CO_MAX_YAML_ALIAS_NODES nodes per
 *   stream), merge keys `<<` take a mapping or a sequence of mappings and are applied where
 *   they appear: later keys override earlier ones, and within a sequence the first mapping
 *   wins (go-yaml v2's behaviour, which kubectl shows);
 * - mapping keys become strings as YAMLToJSON converts them: integers in decimal, floats in
 *   Go's %g at float32 precision, booleans as true/false; a null, list or map key is an error;
 * - duplicate keys: the last one wins, as in YAMLToJSON (CO_YAML_UNIQUE_KEYS refuses them).
 * JSON null is the NULL pointer (as in json-c). Errors read "line L, column C: problem".
 *
 * Writing (libyaml's emitter) produces block-style YAML that reads back to an equal value:
 * strings that would resolve to something else (`"yes"`, `"1"`, `"null"`, `""`, `"1e3"`,
 * `"2024-01-01"`) are double-quoted, as go-yaml does; multi-line strings use the literal
 * style `|` where libyaml can represent them exactly; strings that are not valid UTF-8 are
 * written as `!!binary`; floats as Go's %g (`1e+06`), integral ones without a fraction.
 *
 * Ownership follows shared/README.md: trees returned through `out` are new references
 * (json_object_put()); a co_yaml_docs owns its documents until co_yaml_docs_dispose().
 * Thread-safe (no global state).
 */
#ifndef CO_YAML_H
#define CO_YAML_H

#include <stddef.h>

#include "co/util/buf.h"
#include "co/util/common.h"

struct json_object;

/** Options for reading. */
typedef enum co_yaml_parse_flags {
    /** Drop documents that are empty or null (only comments, `---` alone, `~`), as kubectl
     * does with manifest streams. */
    CO_YAML_SKIP_NULL = 1 << 0,
    /** Refuse a mapping that repeats a key (YAMLToJSONStrict) instead of keeping the last. */
    CO_YAML_UNIQUE_KEYS = 1 << 1,
    /** Plain y/Y/yes/on/n/no/off (every spelling but true/false) stay strings, as kustomize's
     * kyaml (go-yaml v3, YAML 1.2) reads them; everything else resolves as above. */
    CO_YAML_CORE_BOOLS = 1 << 2,
    /** Read as sigs.k8s.io/yaml's Unmarshal reads (go-yaml v2): co_yaml_parse() keeps the
     * first document and drops the others instead of refusing them (they must still parse),
     * and syntax errors are worded as go-yaml words them ("line N: problem", N counted as
     * go-yaml counts it, or no position at all). */
    CO_YAML_GO_UNMARSHAL = 1 << 3,
} co_yaml_parse_flags;

/** Options for writing. */
typedef enum co_yaml_emit_flags {
    /** Mapping keys in byte order instead of the order of the json-c object. */
    CO_YAML_SORTED = 1 << 0,
} co_yaml_emit_flags;

/** One document of a stream. */
typedef struct co_yaml_doc {
    struct json_object *value; /**< the document, owned by the list (NULL for null) */
    int line;                  /**< 1-based line on which the document starts (its `---`,
                                    or its first content for an implicit start) */
} co_yaml_doc;

/** The documents of a stream; caller-embedded, see CO_YAML_DOCS_INIT. */
typedef struct co_yaml_docs {
    co_yaml_doc *items;
    size_t len;
} co_yaml_docs;

#define CO_YAML_DOCS_INIT                                                                          \
    {                                                                                              \
        NULL, 0                                                                                    \
    }

/**
 * Parses a stream that must hold at most one non-null document (a trailing `---` or empty
 * documents are fine). An empty stream yields null.
 * @param[out] out the document, a new reference (NULL for null)
 * @param flags co_yaml_parse_flags (CO_YAML_SKIP_NULL has no effect here)
 * @return 0; CO_EINVALID with "line L, column C: ..." for a syntax error, an impossible tag,
 * an unsupported key, a second document or nesting deeper than CO_MAX_NESTING; CO_ETOOBIG for
 * input over CO_MAX_DOCUMENT or alias expansion over CO_MAX_YAML_ALIAS_NODES.
 */
CO_MUST_CHECK int
co_yaml_parse(struct json_object **out, const char *data, size_t len, unsigned flags);

/**
 * Parses every document of a stream (`---` separators, `...` ends, comments, directives).
 * @param[out] out filled on success (dispose with co_yaml_docs_dispose()); untouched on failure
 * @param flags co_yaml_parse_flags
 * @return as co_yaml_parse(); the message of a failure names the line in the whole stream.
 */
CO_MUST_CHECK int
co_yaml_parse_stream(co_yaml_docs *out, const char *data, size_t len, unsigned flags);

/** Releases the documents of @p docs and leaves it empty; NULL is a no-op. */
void co_yaml_docs_dispose(co_yaml_docs *docs);

/**
 * Appends @p obj as one YAML document (no `---` line, a final newline) to @p out.
 * @param flags co_yaml_emit_flags
 * @return 0; CO_EINVALID when libyaml refuses the value; CO_ETOOBIG when @p out's cap is
 * exceeded (the buffer is disposed).
 */
CO_MUST_CHECK int co_yaml_emit(co_buf *out, const struct json_object *obj, unsigned flags);

/**
 * Appends @p n documents separated by `---` lines to @p out (nothing for n == 0).
 * @return as co_yaml_emit().
 */
CO_MUST_CHECK int
co_yaml_emit_stream(co_buf *out, struct json_object *const *docs, size_t n, unsigned flags);

/** @p obj as a YAML document; free with free(). NULL (last error set) when emission fails. */
char *co_yaml_dumps(const struct json_object *obj, unsigned flags);

#endif
