/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kustomize.h
 * A kustomize build engine: turns a kustomization in a file tree into the ordered list of
 * objects `kubectl kustomize` (kustomize v5) would print.
 *
 * Supported: resources (files, directories, nested kustomizations), components, namespace,
 * namePrefix/nameSuffix with name-reference updates, labels/commonLabels/commonAnnotations,
 * images, replicas, patches (strategic merge and JSON 6902, with target selectors),
 * patchesStrategicMerge, patchesJson6902, configMapGenerator/secretGenerator with content-hash
 * suffixes, generatorOptions, replacements, sortOptions. Remote bases, helmCharts, plugins
 * (generators/transformers/validators entries) and vars fail with CO_EUNSUPPORTED.
 *
 * Load restriction, as kustomize's loader: each kustomization's directory is its root. A file it
 * reads (a resource file, a patch, a generator's files and envs, a replacement source) must lie
 * in or below that directory, unless the build runs with CO_KUSTOMIZE_LOAD_NONE. A directory it
 * refers to (a base or a component) may lie anywhere in the tree, but not at or above a
 * kustomization that is being built (a cycle). Objects are json-c objects (the caller owns the
 * result). Thread-safe: a build uses no global state.
 */
#ifndef CO_KUSTOMIZE_H
#define CO_KUSTOMIZE_H

#include <stddef.h>

#include "co/util/common.h"
#include "co/render/vfs.h"

struct json_object;

/** kustomize's --load-restrictor. */
typedef enum co_kustomize_load_restrictor {
    /** LoadRestrictionsRootOnly: files in or below the reading kustomization's directory */
    CO_KUSTOMIZE_LOAD_ROOT_ONLY = 0,
    /** LoadRestrictionsNone: any file of the tree */
    CO_KUSTOMIZE_LOAD_NONE = 1,
} co_kustomize_load_restrictor;

typedef struct co_kustomize_options {
    co_kustomize_load_restrictor load_restrictor;
    /** Put before tree paths in the load-restriction and cycle messages ("/" when the tree is
     * the file system's root, so they read as kustomize's absolute paths); NULL: nothing. */
    const char *shown_prefix;
    /** Tree directories inside which files are not restricted: a kustomization in one of them
     * may read any file in any of them (the templated generator's own rendered directories,
     * co/render/kzgen.h). Kustomizations elsewhere keep @ref load_restrictor. */
    const char *const *open_dirs;
    size_t nopen_dirs;
} co_kustomize_options;

#define CO_KUSTOMIZE_OPTIONS_INIT                                                                  \
    {                                                                                              \
        CO_KUSTOMIZE_LOAD_ROOT_ONLY, NULL, NULL, 0                                                 \
    }

/**
 * Builds the kustomization in directory @p root of @p fs.
 * @param[out] out a new json-c array of objects in kustomize's output order; release with
 *             json_object_put()
 * @param opts NULL for the defaults
 * @return 0, CO_ENOTFOUND (missing kustomization or file), CO_EINVALID (bad input: the
 *         message names the file and field), CO_EUNSUPPORTED (remote bases, plugins, ...),
 *         CO_ETOOBIG (a cap was exceeded).
 */
CO_MUST_CHECK int co_kustomize_build(struct json_object **out,
                                     const co_vfs *fs,
                                     const char *root,
                                     const co_kustomize_options *opts);

/**
 * The postBuild step of a Component: builds a kustomization whose only resource is @p objects,
 * with @p patches (entries {patch: text, target?: selector}; strategic merge or JSON 6902) and
 * @p images (kustomize image entries). A patch without a target applies to every object.
 * Output order is kustomize's default (legacy) order, as in the Go operator.
 * @param[out] out a new json-c array; release with json_object_put()
 * @param patches NULL or a json-c array; @param images NULL or a json-c array
 * @return 0, CO_EINVALID (a malformed entry: the message names postBuild.patches[i] or
 *         postBuild.images[i] and the field), CO_ETOOBIG.
 */
CO_MUST_CHECK int co_kustomize_post_build(struct json_object **out,
                                          const struct json_object *objects,
                                          const struct json_object *patches,
                                          const struct json_object *images);

/**
 * Computes kustomize's name-suffix hash of a ConfigMap or Secret object (10 characters).
 * @param[out] out the hash, NUL-terminated
 * @return 0 or CO_EINVALID (not a ConfigMap or Secret).
 */
CO_MUST_CHECK int co_kustomize_hash(char out[11], const struct json_object *obj);

#endif
