/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file kzgen.h
 * The kustomize generator of a Component (docs/behaviour.md, "Templated kustomization" and
 * "Template functions"): every file of the source directory is a Go template (or those ending in
 * the template suffix), rendered with the component's values as the data root `.`, then the
 * rendered tree is built with the kustomize engine (co/render/kustomize.h) into the list of objects
 * the apply engine receives.
 *
 * Parsing (co_kzgen_parse, once per source artifact) reads the tree: `.component-config.yaml`
 * (templateSuffix, leftTemplateDelimiter, rightTemplateDelimiter, includedFiles,
 * includedKustomizations, values), `.component-ignore` (gitignore syntax), every regular file
 * (decrypted through the caller's hook), and parses the templates. Rendering (co_kzgen_render,
 * every reconcile) executes them with the values merged over the config's default values,
 * drops every "<no value>", writes the result into an in-memory tree, generates a
 * kustomization.yaml listing the .yaml/.yml files where none exists, and builds it over the
 * source tree (no plugins, no remote bases): bases and components the rendered kustomizations
 * refer to elsewhere in the tree are read from it as they are (decrypted, not templated), their
 * files under kustomize's LoadRestrictionsRootOnly; files in the rendered directories are not
 * restricted.
 *
 * Template functions: the engine's sprig and runtime sets, plus listFiles, existsFile,
 * readFile, component, componentDigest, componentRevision, namespace, name, kubernetesVersion,
 * apiResources and the lookup family, which go through the caller's cluster hooks.
 *
 * Errors name the file: template errors read like Go's ("template: resources/app.yaml:3:7:
 * executing ..."), kustomize errors name the kustomization file and field.
 *
 * Thread-safety: a parsed generator is immutable; any number of threads may render it at once.
 */
#ifndef CO_KZGEN_H
#define CO_KZGEN_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"
#include "co/render/vfs.h"

struct json_object;

typedef struct co_kzgen co_kzgen;

/**
 * Decrypts one file as it is read (docs/behaviour.md, "SOPS decryption"). Return 0 with *out ==
 * NULL to keep the bytes as they are, 0 with a malloc'ed *out (NUL-terminated, length in *out_len)
 * to replace them, or a negative co_error_code with the message set.
 * @param path the tree path of the file (its extension selects the format)
 */
typedef int (*co_kzgen_decrypt_fn)(void *ctx,
                                   char **out,
                                   size_t *out_len,
                                   const char *path,
                                   const char *data,
                                   size_t len);

/** Options of co_kzgen_parse(); `.component-config.yaml` overrides the first three. */
typedef struct co_kzgen_options {
    const char *template_suffix; /**< NULL or "": every file is a template */
    const char *left_delim;      /**< NULL or "": "{{" */
    const char *right_delim;     /**< NULL or "": "}}" */
    co_kzgen_decrypt_fn decrypt; /**< NULL: files are used as they are */
    void *decrypt_ctx;
    /** Extra CO_TEMPLATE_FUNCS_ENV / CO_TEMPLATE_FUNCS_DNS groups: templates may read the
     * environment / resolve names only when the operator allows it. */
    unsigned extra_func_groups;
} co_kzgen_options;

/** Which cluster a lookup addresses. */
typedef enum co_kzgen_cluster_kind {
    CO_KZGEN_TARGET = 0,     /**< the target cluster (lookup, mustLookup, lookupList) */
    CO_KZGEN_LOCAL = 1,      /**< the operator's cluster (localLookup, ...) */
    CO_KZGEN_KUBECONFIG = 2, /**< a client built from a kubeconfig (lookupWithKubeConfig...) */
} co_kzgen_cluster_kind;

/**
 * Reads one object (GET). Set *out to the object (a new reference), or to NULL when it does
 * not exist (404). Return 0 or a negative co_error_code with the message set.
 * @param kubeconfig the kubeconfig text for CO_KZGEN_KUBECONFIG, else NULL
 * @param ns "" for cluster-scoped objects
 */
typedef int (*co_kzgen_lookup_fn)(void *ctx,
                                  struct json_object **out,
                                  co_kzgen_cluster_kind cluster,
                                  const char *kubeconfig,
                                  const char *api_version,
                                  const char *kind,
                                  const char *ns,
                                  const char *name);

/**
 * Lists objects (LIST) into *out, a new reference to the list object ({"items": [...], ...}).
 * @param label_selector "" for all
 */
typedef int (*co_kzgen_lookup_list_fn)(void *ctx,
                                       struct json_object **out,
                                       co_kzgen_cluster_kind cluster,
                                       const char *kubeconfig,
                                       const char *api_version,
                                       const char *kind,
                                       const char *ns,
                                       const char *label_selector);

/** What a render knows about its Component and the clusters. Borrowed for the call. */
typedef struct co_kzgen_context {
    const char *namespace; /**< placement namespace (`namespace`) */
    const char *name;      /**< placement name (`name`) */
    /** The Component as the API server returns it; `component` gives it with Go field names
     * (`.Spec.Path`, `.Status.State`, `.Name`, ...). NULL: `component` is nil. */
    const struct json_object *component;
    const char *component_digest; /**< `componentDigest` */
    int64_t component_revision;   /**< `componentRevision` (status.revision) */
    /** `kubernetesVersion`: a version.Info object (major, minor, gitVersion, ...); NULL = nil. */
    const struct json_object *server_version;
    /** `apiResources`: a list of APIResourceList objects; NULL = empty. Sorted on output. */
    const struct json_object *api_resources;
    /** When set, @ref server_version and @ref api_resources are ignored and asked through this
     * instead, at most once per templated kustomization rendered and only when one of its
     * templates calls `kubernetesVersion` or `apiResources`: a render that uses neither asks
     * the cluster nothing. It returns 0 (its
     * answers are borrowed until the render ends; NULL as above) or a negative co_error_code
     * with the message set, which fails the template call. */
    int (*discover)(void *ctx,
                    const struct json_object **server_version,
                    const struct json_object **api_resources);
    void *discover_ctx;
    co_kzgen_lookup_fn lookup;           /**< NULL: lookups fail with "no cluster access" */
    co_kzgen_lookup_list_fn lookup_list; /**< NULL: list lookups fail likewise */
    void *cluster_ctx;
} co_kzgen_context;

/**
 * Parses the templated kustomization in directory @p path of @p fs (its included files and
 * kustomizations may lie elsewhere in @p fs, never outside it). @p fs and the decryption
 * context are borrowed: they must outlive the generator, whose renders read bases from @p fs.
 * @param[out] out free with co_kzgen_free()
 * @param opts NULL for the defaults
 * @return 0, CO_ENOTFOUND (no such directory or included path), CO_EINVALID (a bad config
 *         file or template: the message names the file and line), CO_ETOOBIG (caps).
 */
CO_MUST_CHECK int
co_kzgen_parse(co_kzgen **out, const co_vfs *fs, const char *path, const co_kzgen_options *opts);

/** Frees a generator. NULL is a no-op. */
void co_kzgen_free(co_kzgen *g);

/**
 * Renders the templates into a new in-memory tree (the tree kustomize then builds; it holds
 * the generated kustomization.yaml where none existed).
 * @param[out] out free with co_vfs_free()
 * @param[out] root the tree path of the kustomization to build; free with free()
 * @param values the component's values (a json-c object or NULL; borrowed)
 * @return 0, CO_EINVALID (a template failed: the message names file, line and column),
 *         CO_ETOOBIG, or an error of a lookup hook.
 */
CO_MUST_CHECK int co_kzgen_render_tree(co_vfs **out,
                                       char **root,
                                       const co_kzgen *g,
                                       const struct json_object *values,
                                       const co_kzgen_context *ctx);

/**
 * Renders and builds: the objects the Component consists of, in kustomize's output order.
 * @param[out] out a new json-c array; release with json_object_put()
 * @return as co_kzgen_render_tree() and co_kustomize_build().
 */
CO_MUST_CHECK int co_kzgen_render(struct json_object **out,
                                  const co_kzgen *g,
                                  const struct json_object *values,
                                  const co_kzgen_context *ctx);

/** One-shot: co_kzgen_parse() and co_kzgen_render() of the directory @p path of @p fs. */
CO_MUST_CHECK int co_kzgen_generate(struct json_object **out,
                                    const co_vfs *fs,
                                    const char *path,
                                    const struct json_object *values,
                                    const co_kzgen_context *ctx,
                                    const co_kzgen_options *opts);

#endif
