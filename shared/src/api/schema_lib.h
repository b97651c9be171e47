/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Declarative schemas of the API objects (Component, ComponentPolicy), shared by validation,
 * type-checking before parsing, and CRD generation, so the three cannot disagree. A schema is a
 * static tree of co_schema nodes; the walker reports what the API server's structural-schema
 * validation would report, in the same words, and the emitter writes the OpenAPI v3 schema and
 * the YAML of the CRD files.
 */
#ifndef CO_SCHEMA_LIB_H
#define CO_SCHEMA_LIB_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/buf.h"
#include "co/api/field_error.h"
#include "shared/src/json/json_lib.h"

struct json_object;
struct co_jv;

typedef enum co_schema_type {
    CO_SCHEMA_OBJECT = 0,     /* fields */
    CO_SCHEMA_STRING = 1,     /* enums, pattern, minLength, format */
    CO_SCHEMA_BOOLEAN = 2,    /* true/false */
    CO_SCHEMA_INTEGER = 3,    /* int64 */
    CO_SCHEMA_ARRAY = 4,      /* items, maxItems */
    CO_SCHEMA_STRING_MAP = 5, /* object of strings, maxProperties */
    CO_SCHEMA_ANY_OBJECT = 6, /* object with x-kubernetes-preserve-unknown-fields */
    CO_SCHEMA_METADATA = 7,   /* ObjectMeta: type object, validated by the API server */
} co_schema_type;

/* flags */
#define CO_SCHEMA_REQUIRED  1u /* must be present (listed in the parent's required) */
#define CO_SCHEMA_DURATION  2u /* string with the Go duration pattern */
#define CO_SCHEMA_DATE_TIME 4u /* string, format date-time */
#define CO_SCHEMA_INT64     8u /* integer, format int64 */

typedef struct co_schema co_schema;
struct co_schema {
    const char *name;          /* field name in the parent object (NULL ends a field list) */
    co_schema_type type;       /* JSON shape */
    unsigned flags;            /* CO_SCHEMA_* */
    const char *description;   /* shown by kubectl explain */
    const char *const *enums;  /* allowed values, NULL-terminated; NULL = any */
    const co_schema *fields;   /* OBJECT: the fields, terminated by a node with name NULL */
    const co_schema *items;    /* ARRAY: the item schema */
    const char *const *one_of; /* OBJECT: exactly one of these fields, NULL-terminated */
    const char *default_json;  /* schema default as JSON text, NULL = none */
    unsigned min_length;       /* STRING: minimum length in characters */
    unsigned min_properties;   /* OBJECT: minimum number of fields present */
    unsigned max_items;        /* ARRAY: maxItems; STRING_MAP: maxProperties; 0 = none */
};

/* Walker modes */
#define CO_SCHEMA_CHECK_ALL  0u /* everything the CRD expresses, and unknown fields */
#define CO_SCHEMA_TYPES_ONLY 1u /* only JSON types (parsing) */
#define CO_SCHEMA_NO_UNKNOWN 2u /* with CHECK_ALL: do not report unknown fields */

/* The Go duration pattern of the CRDs (the original's, kept for compatibility). */
#define CO_SCHEMA_DURATION_PATTERN "^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"

/*
 * Checks @p v (borrowed; NULL = absent) against @p s and appends errors under @p path.
 * JSON null counts as absent.
 */
void co_schema__check(co_field_errors *errs,
                      const struct json_object *v,
                      const co_schema *s,
                      const char *path,
                      unsigned mode);

/* co_schema__check() over a co_jdoc value (NULL or a null node = absent). */
void co_schema__check_jv(co_field_errors *errs,
                         const struct co_jv *v,
                         const co_schema *s,
                         const char *path,
                         unsigned mode);

/* Member @p key of @p obj, NULL when absent or JSON null (as co_json__member() treats it). */
const struct co_jv *co_jv__field(const struct co_jv *obj, const char *key);

/* The field node named @p name of an object schema, or NULL. */
const co_schema *co_schema__field(const co_schema *s, const char *name);

/*
 * Whether @p str matches CO_SCHEMA_DURATION_PATTERN. When it does, *ns_out receives its value
 * with Go's ParseDuration semantics, or -1 when it overflows int64 nanoseconds.
 */
int co_schema__duration(const char *str, int64_t *ns_out);

/* The OpenAPI v3 schema of @p s as a new JSON object (properties sorted by name). */
struct json_object *co_schema__openapi(const co_schema *s);

/*
 * Appends @p doc as block-style YAML (keys in object order, long strings folded) to @p out.
 * Prefixed with "---\n". @return 0 or CO_ETOOBIG.
 */
int co_schema__yaml(co_buf *out, const struct json_object *doc);

/* Joins a path and a field name ("spec" + "name" = "spec.name"). Free with free(). */
char *co_schema__join(const char *path, const char *name);
/* Appends an index ("spec.x" + 3 = "spec.x[3]"). Free with free(). */
char *co_schema__index(const char *path, size_t i);

/* Name rules (Kubernetes validation), used by component.c and policy.c. */
int co_name__is_dns_label(const char *s);
int co_name__is_dns_subdomain(const char *s);
int co_name__is_config_key(const char *s);
int co_name__is_qualified_name(const char *s); /* label keys: [prefix/]name */
int co_name__is_label_value(const char *s);
extern const char co_name__dns_label_msg[];
extern const char co_name__dns_subdomain_msg[];

#endif
