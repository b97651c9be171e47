/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the Component module shared between its files: the schemas of both versions,
 * the field moves between them, and the spec-level conversion.
 */
#ifndef CO_COMPONENT_INT_H
#define CO_COMPONENT_INT_H

#include "co/api/component.h"
#include "shared/src/api/schema_lib.h"

struct json_object;

/* A spec field that v1beta1 keeps in a group: spec.<alpha> <-> spec.<group>.<beta>. */
typedef struct co_component_move {
    const char *alpha; /* v1alpha1 field of spec */
    const char *group; /* v1beta1 group: source, target, policies, intervals */
    const char *beta;  /* field inside the group */
} co_component_move;

/* The moves (spec.sourceRef's own members go to spec.source, httpRepository renamed http). */
extern const co_component_move co_component__moves[];
extern const size_t co_component__nmoves;
/* The v1beta1 groups, NULL-terminated. */
extern const char *const co_component__groups[];

/* The whole-object schema of @p v (CO_API_V1ALPHA1 or CO_API_V1BETA1). */
const co_schema *co_component__schema(co_api_version v);

/*
 * Converts the value of `spec` between the versions (from != to). @p spec may be of any JSON
 * type; non-objects are copied. On failure returns CO_EINVALID with a message naming the field
 * (in the source version's terms) and, when @p errpath is not NULL, that field's path.
 */
int co_component__convert_spec(struct json_object **out,
                               const struct json_object *spec,
                               co_api_version from,
                               co_api_version to,
                               char **errpath);

/* Applies the built-in and policy defaults to a v1alpha1 spec object in place. */
void co_component__default_spec(struct json_object *spec,
                                const char *ns,
                                const co_component_defaults *defaults);

/* Type checks of the metadata fields the model reads. */
void co_component__check_metadata(co_field_errors *errs, const struct json_object *meta);

/* The same, of a metadata value in a co_jdoc document. */
void co_component__check_metadata_jv(co_field_errors *errs, const struct co_jv *meta);

/* The semantic checks on a v1alpha1 object (paths in v1alpha1 terms). */
void co_component__validate_semantics_jv(co_field_errors *errs,
                                         const struct co_jv *obj,
                                         const char *ns);

#endif
