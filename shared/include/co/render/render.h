/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file render.h
 * The one rendering pipeline of a Component (docs/behaviour.md, "Rendering pipeline"), shared
 * by the controller's reconcile and `component-controller render`:
 *
 * 1. generator choice: a Helm chart when `<dir>/Chart.yaml` exists, else the templated
 *    kustomization generator (co/render/kzgen.h);
 * 2. SOPS decryption as files are read (every file of a chart tree; for kustomizations each
 *    file the generator reads, included files too);
 * 3. postBuild: substitution (objects annotated
 *    `component-operator.cs.sap.com/disableSubstitution: "true"` are skipped), then the
 *    kustomize patches and images.
 *
 * No cluster access happens here: what the cluster provides comes in through the input (values
 * already merged, keys already loaded, substitution variables already resolved) or through
 * the lookup callbacks.
 *
 * Every render runs under a budget of CPU time and memory (co/util/budget.h): the input's limits,
 * or the process default (co_budget_set_default(), the controller's --render-cpu-budget and
 * --render-memory-budget) for zero fields. A render that exceeds it fails with CO_ETIMEOUT or
 * CO_ETOOBIG and "render budget exceeded: more than ...".
 */
#ifndef CO_RENDER_H
#define CO_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/budget.h"
#include "co/util/common.h"
#include "co/render/kzgen.h"
#include "co/render/sops.h"

struct json_object;

/** The annotation that exempts an object from postBuild substitution ("true"). */
#define CO_RENDER_DISABLE_SUBST_ANNOTATION "component-operator.cs.sap.com/disableSubstitution"

/** Flags of co_render_input. */
enum {
    /** Helm: leave hooks unmapped (`helm template` output instead of the operator's mapping). */
    CO_RENDER_NO_HOOK_MAPPING = 1u << 0,
    /** Substitution: an undefined variable is an error (the original expands it to ""). */
    CO_RENDER_STRICT_SUBST = 1u << 1,
    /** Helm: objects may carry the operator's own annotations (co_helm_map_object()). */
    CO_RENDER_ALLOW_OPERATOR_ANNOTATIONS = 1u << 2,
};

/** What a render may ask of the target cluster (co_render_input.discover). */
typedef struct co_render_discovery {
    const char *kube_version;                 /**< as co_render_input.kube_version */
    const char *const *api_versions;          /**< as co_render_input.api_versions */
    size_t n_api_versions;                    /**< entries of @ref api_versions */
    const struct json_object *server_version; /**< as co_render_input.server_version */
    const struct json_object *api_resources;  /**< as co_render_input.api_resources */
} co_render_discovery;

/**
 * Asks the target cluster what co_render_discovery holds. Fills @p out with data borrowed until
 * the render ends, and returns 0; or a negative co_error_code with the message set.
 */
typedef int (*co_render_discover_fn)(void *ctx, co_render_discovery *out);

/** Everything a render needs; borrowed for the duration of the call. Zero-initialise. */
typedef struct co_render_input {
    const char *dir; /**< source root with spec.path already applied */
    /** The source artifact's root, @ref dir in or below it, or NULL (= @ref dir). A templated
     * kustomization may refer to bases and components anywhere below it (`../base`), never
     * outside it; a Helm chart reads only @ref dir. */
    const char *root;
    const char *namespace; /**< placement namespace (Release.Namespace / `namespace`) */
    const char *name;      /**< placement name (Release.Name / `name`) */
    const struct json_object *component; /**< the Component object, or NULL */
    const char *component_digest;        /**< `componentDigest`, or NULL */
    int64_t revision;                    /**< status.revision; 1 = install (0 is taken as 1) */
    const struct json_object *values;    /**< merged values object, or NULL */
    const char *kube_version;            /**< Helm: "1.20.2" etc; NULL = engine default */
    const char *const *api_versions;     /**< Helm: .Capabilities.APIVersions, or NULL */
    size_t n_api_versions;
    /** Helm: .Release.Service; NULL = CO_HELM_OPERATOR_SERVICE, as the controller renders */
    const char *release_service;
    const struct json_object *server_version; /**< kzgen: version.Info, or NULL */
    const struct json_object *api_resources;  /**< kzgen: APIResourceList array, or NULL */
    /** When set, the five fields above are ignored and asked through it when needed: before a
     * Helm chart renders, when a template of a kustomization calls `kubernetesVersion` or
     * `apiResources`, never for plain manifests. Each need calls it again: it caches. */
    co_render_discover_fn discover;
    void *discover_ctx;
    /** The lookup family of both generators (kzgen's and Helm charts'); NULL = no cluster
     * access (co/render/kzgen.h, co/render/helm.h say what each function then does) */
    co_kzgen_lookup_fn lookup;
    co_kzgen_lookup_list_fn lookup_list;
    void *cluster_ctx;
    co_sops_keys *keys; /**< decryption keys; NULL = none (an encrypted file is an error) */
    const struct json_object *post_build;    /**< spec.postBuild (patches, images), or NULL */
    const struct json_object *substitutions; /**< resolved variables (object of strings) or
                                                  NULL; substitution runs when non-empty */
    unsigned flags;                          /**< CO_RENDER_* */
    /** Helm: more CO_HELM_* flags (co/render/helm.h) for a chart, such as `helm template`'s
     * options in the CLI; the controller passes none. */
    unsigned helm_flags;
    co_budget_limits budget; /**< CPU time and memory of this render; zero fields: the process
                                  default */
} co_render_input;

/**
 * Renders a Component's objects (see the file comment).
 * @param[out] out a new json-c array of objects in generator order (postBuild patches/images
 *             reorder as kustomize does); release with json_object_put()
 * @return 0; CO_ENOTFOUND (no such directory); CO_EINVALID (a template, chart, encrypted file
 *         without keys, substitution or patch failed: the message names the file or field);
 *         CO_EAUTH (decryption failed); CO_ETOOBIG (a cap, or the memory budget);
 *         CO_ETIMEOUT (the CPU time budget).
 */
CO_MUST_CHECK int co_render(struct json_object **out, const co_render_input *in);

#endif
