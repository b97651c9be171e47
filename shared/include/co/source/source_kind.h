/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file source_kind.h
 * The kinds of source a Component can name (spec.sourceRef, v1beta1: spec.source): the one
 * definition, in the source layer, which the API model (co/api/component.h) and the source
 * layer's own code (co/source/source.h) share.
 */
#ifndef CO_SOURCE_KIND_H
#define CO_SOURCE_KIND_H

#include "co/util/common.h"

/** The variants of spec.sourceRef (v1beta1: spec.source). */
typedef enum co_source_kind {
    CO_SOURCE_NONE = 0,                /**< none set */
    CO_SOURCE_FLUX_GIT_REPOSITORY = 1, /**< fluxGitRepository */
    CO_SOURCE_FLUX_OCI_REPOSITORY = 2, /**< fluxOciRepository */
    CO_SOURCE_FLUX_BUCKET = 3,         /**< fluxBucket */
    CO_SOURCE_FLUX_HELM_CHART = 4,     /**< fluxHelmChart */
    CO_SOURCE_HTTP_REPOSITORY = 5,     /**< httpRepository (v1beta1: http) */
    CO_SOURCE_GIT = 6,                 /**< git (fetched directly with libgit2) */
    CO_SOURCE_BLUEPRINT = 7, /**< blueprint (an in-cluster Blueprint, docs/blueprints.md) */
} co_source_kind;
#define CO_SOURCE_KIND_COUNT 8

/** The field name of a source kind in v1alpha1 ("fluxGitRepository", ..., "blueprint"); NULL for
 * CO_SOURCE_NONE and values out of range. */
const char *co_source_kind_name(co_source_kind kind);

/** The kind whose v1alpha1 field name is @p s; CO_SOURCE_NONE when @p s is NULL or no kind's. */
co_source_kind co_source_kind_parse(const char *s);

#endif
