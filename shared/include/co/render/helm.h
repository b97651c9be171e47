/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file helm.h
 * Helm charts rendered as `helm template` (Helm v3.17) renders them, without Helm.
 *
 * A chart is loaded once (co_helm_chart_load*) from a directory of a co_vfs tree or from a
 * packaged .tgz, and is immutable afterwards: any number of renders, with different values,
 * may use it, from several threads at once.
 *
 * Loading follows Helm's loader: Chart.yaml (apiVersion v1 or v2, application or library),
 * requirements.yaml for v1 charts, values.yaml, values.schema.json, every file under
 * templates/ (partials are those whose base name starts with `_`), crds/, the other files
 * (reachable through .Files), `.helmignore` with Helm's rules for directory charts, and
 * subcharts under charts/ both as directories and as packaged `charts/ *.tgz`, recursively.
 * Errors name the chart, the file and the field.
 *
 * Rendering follows Helm's install path: dependencies enabled or disabled by tags and
 * conditions, aliases, import-values (both forms), values coalesced with Helm's rules (a null
 * deletes a chart default, globals flow down to subcharts, each subchart sees its own
 * section), values.schema.json validation (JSON Schema draft 7 as gojsonschema applies it,
 * with the known `format`s asserted), the kubeVersion constraint,
 * every template parsed
 * into one set in Helm's order and executed with the builtins .Values, .Release, .Chart,
 * .Capabilities, .Template, .Files, .Subcharts and the functions include, tpl, required and
 * fail. Output is split into manifests and ordered as `helm template --include-crds` prints
 * them.
 *
 * Charts see the Go operator's function set (docs/behaviour.md, "Helm generator"): besides sprig
 * and Helm's, the runtime's and its lookup family (lookup, mustLookup, lookupList, localLookup,
 * mustLocalLookup, localLookupList, lookupWithKubeConfig, mustLookupWithKubeConfig,
 * lookupListWithKubeConfig), which go through the caller's hooks (co_helm_options.lookup, with the
 * kzgen generator's callback types). Without hooks, `lookup` finds nothing, as in `helm template`,
 * and the others fail with "no cluster access". `lookup` with an empty name lists, as Helm's does.
 *
 * co_helm_render() then applies the operator's mapping of Helm hooks to apply waves and
 * policies (docs/behaviour.md, "Helm hooks") and of `helm.sh/resource-policy: keep`.
 */
#ifndef CO_HELM_H
#define CO_HELM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"
#include "co/render/kzgen.h"

struct json_object;
typedef struct co_vfs co_vfs;

typedef struct co_helm_chart co_helm_chart;

/** .Release.Service of the operator's renders (its reconciler name; the Go original's too):
 * charts put it into `app.kubernetes.io/managed-by` labels, often part of selectors. */
#define CO_HELM_OPERATOR_SERVICE "component-operator.cs.sap.com"

/** The Component annotation whose value "allow" sets CO_HELM_ALLOW_OPERATOR_ANNOTATIONS. */
#define CO_HELM_OPT_IN_ANNOTATION "component-operator.cs.sap.com/chart-annotations"

/** Flags of co_helm_options. */
enum {
    /** Let templates set `component-operator.cs.sap.com/` annotations on their objects (the
     * Component opts in with the annotation CO_HELM_OPT_IN_ANNOTATION: "allow"; README.md);
     * where a hook mapping would set the same annotation, the chart's value wins. Without it
     * such an annotation fails the render, as in the Go original. */
    CO_HELM_ALLOW_OPERATOR_ANNOTATIONS = 1u << 0,
    /** Skip values.schema.json validation (`helm template --skip-schema-validation`). */
    CO_HELM_SKIP_SCHEMA_VALIDATION = 1u << 1,
    /** Leave out the files of crds/ directories (`helm template` without --include-crds). */
    CO_HELM_SKIP_CRDS = 1u << 2,
    /** .Capabilities.APIVersions starts with co_helm_default_api_versions, then every entry of
     * co_helm_options.api_versions, as `helm template` builds it without a cluster. Without
     * it: "v1" and those entries. */
    CO_HELM_DEFAULT_API_VERSIONS = 1u << 3,
    /** Leave out every hook (`helm template --no-hooks`). */
    CO_HELM_NO_HOOKS = 1u << 4,
    /** Leave out test hooks: `helm.sh/hook` naming `test` or `test-success` (`helm template
     * --skip-tests`). */
    CO_HELM_SKIP_TESTS = 1u << 5,
};

/** Helm v3.17's default .Capabilities.APIVersions (chartutil.DefaultVersionSet: the group
 * versions of client-go v0.32's scheme and of apiextensions), in its order. */
extern const char *const co_helm_default_api_versions[];
/** How many entries co_helm_default_api_versions has. */
extern const size_t co_helm_n_default_api_versions;

/** What a render needs besides the chart and the values. Zero-initialise, then set. */
typedef struct co_helm_options {
    const char *release_name;      /**< .Release.Name; NULL = "release-name" */
    const char *release_namespace; /**< .Release.Namespace; NULL = "default" */
    int64_t revision;              /**< .Release.Revision; 0 = 1. IsInstall = (revision == 1) */
    /** .Capabilities.KubeVersion as "v1.30.2" (a leading v is optional); NULL = the default
     * of Helm v3.17, v1.32.0. */
    const char *kube_version;
    /** .Capabilities.APIVersions: "group/version" and "group/version/Kind" entries; NULL =
     * none besides "v1". Borrowed for the duration of the call. */
    const char *const *api_versions;
    size_t n_api_versions;
    unsigned flags; /**< CO_HELM_* */
    /** .Release.Service; NULL = "Helm", as `helm template` (the operator: CO_HELM_OPERATOR_SERVICE)
     */
    const char *release_service;
    /** The lookup family's hooks (co/render/kzgen.h): `lookup` and friends call them with @ref
     * cluster_ctx. NULL: `lookup` finds nothing (`helm template`), the others fail with "no
     * cluster access". */
    co_kzgen_lookup_fn lookup;
    co_kzgen_lookup_list_fn lookup_list; /**< lookupList, and lookup with an empty name */
    void *cluster_ctx;
} co_helm_options;

/**
 * Loads the chart in directory @p dir ("" for the root) of @p fs.
 * @param[out] out the chart; free with co_helm_chart_free()
 * @return 0; CO_ENOTFOUND when @p dir holds no Chart.yaml; CO_EINVALID for a malformed chart
 *         (the message names chart, file and field); CO_ETOOBIG over a cap.
 */
CO_MUST_CHECK int co_helm_chart_load(co_helm_chart **out, const co_vfs *fs, const char *dir);

/**
 * Loads a packaged chart (a gzip-compressed tar whose entries sit in one top directory).
 * @return 0; CO_EINVALID for a corrupt archive, an unsafe entry or a malformed chart;
 *         CO_ETOOBIG over a cap.
 */
CO_MUST_CHECK int co_helm_chart_load_archive(co_helm_chart **out, const void *data, size_t len);

/** Frees a chart. NULL is a no-op. */
void co_helm_chart_free(co_helm_chart *c);

/** The chart's name (borrowed from @p c). */
const char *co_helm_chart_name(const co_helm_chart *c);

/** The chart's version (borrowed from @p c). */
const char *co_helm_chart_version(const co_helm_chart *c);

/**
 * The values templates of the top chart see as .Values: dependencies processed (tags,
 * conditions, aliases, import-values) and @p values coalesced over the chart defaults.
 * @param values an object or NULL; not modified
 * @param[out] out a new reference
 * @return 0; CO_EINVALID (a value of a subchart's section is not a map, a bad import-values
 *         entry, ...).
 */
CO_MUST_CHECK int
co_helm_values(struct json_object **out, const co_helm_chart *c, const struct json_object *values);

/**
 * Renders the chart as `helm template --include-crds` does and returns its objects, parsed, in
 * Helm's output order: CRDs of crds/ directories, then the manifests sorted by kind, then
 * hooks (unchanged, still carrying their `helm.sh/hook` annotations).
 * @param values the user values (an object or NULL); not modified
 * @param[out] out a new JSON array of objects
 * @return 0; CO_EINVALID with the template name and line of the failure
 *         ("execution error at (chart/templates/x.yaml:3:4): ...") or the violated schema or
 *         constraint; CO_ETOOBIG over a cap.
 */
CO_MUST_CHECK int co_helm_template(struct json_object **out,
                                   const co_helm_chart *c,
                                   const struct json_object *values,
                                   const co_helm_options *opts);

/**
 * The generator: co_helm_template() followed by the operator's mapping of every object
 * (co_helm_map_object()); dropped hooks are left out.
 * @param[out] out a new JSON array of objects
 * @return as co_helm_template(), and CO_EINVALID for an object the mapping rejects.
 */
CO_MUST_CHECK int co_helm_render(struct json_object **out,
                                 const co_helm_chart *c,
                                 const struct json_object *values,
                                 const co_helm_options *opts);

/**
 * .Capabilities.APIVersions as the Go operator builds them from discovery: every
 * `groupVersion` of @p lists and every `groupVersion/Kind` of their resources (subresources
 * included), in that order, each once.
 * @param lists an array of APIResourceList objects (co_kube_client_api_resources()), or NULL
 * @param[out] out a NULL-terminated array of new strings; free with co_helm_strv_free()
 * @param[out] n_out the number of strings
 */
void co_helm_api_versions(char ***out, size_t *n_out, const struct json_object *lists);

/** Frees a NULL-terminated string array of this module. NULL is a no-op. */
void co_helm_strv_free(char **v);

/**
 * Maps one rendered object in place as docs/behaviour.md, "Helm hooks", describes: hook
 * annotations become apply-order, purge-order, reconcile-policy and update-policy annotations
 * of the operator; `helm.sh/resource-policy: keep` becomes delete-policy orphan; annotations
 * of the operator's own prefix are refused unless @p flags has
 * CO_HELM_ALLOW_OPERATOR_ANNOTATIONS.
 * @param[out] keep false when the object is to be dropped (test and rollback hooks, upgrade
 *             hooks on install)
 * @param revision the component revision (1 = install)
 * @return 0; CO_EINVALID naming the object and the annotation.
 */
CO_MUST_CHECK int
co_helm_map_object(bool *keep, struct json_object *obj, int64_t revision, unsigned flags);

#endif
