/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the kustomize build engine, shared by its source files: resources with the
 * identity history kustomize keeps for them (previous names, namespaces and kinds, prefixes and
 * suffixes, which it stores in build annotations and we keep beside the object), the resource
 * list, field specs and the transformers' entry points.
 */
#ifndef CO_KZ_INT_H
#define CO_KZ_INT_H

#include <stddef.h>

#include <json-c/json.h>

#include "co/util/common.h"
#include "co/render/kustomize.h"
#include "co/render/vfs.h"

/* --- strings ------------------------------------------------------------------------------ */

typedef struct kz_strv {
    char **v;
    size_t n, cap;
} kz_strv;

void kz_strv_push(kz_strv *s, const char *str);
void kz_strv_dispose(kz_strv *s);
void kz_strv_copy(kz_strv *dst, const kz_strv *src);

/* --- identity ------------------------------------------------------------------------------ */

typedef struct kz_gvk {
    const char *group, *version, *kind; /* borrowed */
} kz_gvk;

typedef struct kz_id {
    char *group, *version, *kind, *name, *ns;
} kz_id;

/** Generator behaviour of a generated resource. */
enum { KZ_BEHAVIOR_NONE = 0, KZ_BEHAVIOR_CREATE, KZ_BEHAVIOR_MERGE, KZ_BEHAVIOR_REPLACE };

typedef struct kz_res {
    json_object *obj; /* owned */
    kz_strv prev_names, prev_nss, prev_kinds;
    kz_strv prefixes, suffixes;
    int needs_hash;
    int behavior;
    int generated; /* made by a generator (kustomize tags it with build annotations) */
} kz_res;

typedef struct kz_resmap {
    kz_res **v;
    size_t n, cap;
} kz_resmap;

kz_res *kz_res_new(json_object *obj); /* takes ownership */
void kz_res_free(kz_res *r);
kz_res *kz_res_clone(const kz_res *r);

const char *kz_get_str(json_object *obj, const char *a, const char *b);
const char *kz_res_kind(const kz_res *r);
const char *kz_res_name(const kz_res *r);
const char *kz_res_ns(const kz_res *r);
const char *kz_res_api_version(const kz_res *r);
/** Group and version of an apiVersion string, into caller buffers of @p cap bytes. */
void kz_split_api_version(const char *apiv, char *group, char *version, size_t cap);
void kz_res_set_name(kz_res *r, const char *name);
void kz_res_set_ns(kz_res *r, const char *ns);
void kz_res_store_prev_id(kz_res *r);

/** Whether @p kind is cluster-scoped (kustomize's built-in list). */
int kz_kind_is_cluster_scoped(const char *kind);
/** The namespace used to compare ids: "" for cluster-scoped kinds, "default" when empty. */
const char *kz_effective_ns(const char *kind, const char *ns);

/** Number of ids of the resource's history (previous ids; the original is index 0). */
size_t kz_res_nprev(const kz_res *r);
/** The original id (first previous id, else the current one) into @p out (borrowed strings
 * except group/version, which point into the caller's buffers). */
void kz_res_org(const kz_res *r, const char **kind, const char **name, const char **ns);

/** Whether a selector of group/version/kind (NULL or "" = any) matches. */
int kz_gvk_selected(const char *g,
                    const char *v,
                    const char *k,
                    const char *sg,
                    const char *sv,
                    const char *sk);

void kz_resmap_push(kz_resmap *m, kz_res *r);
void kz_resmap_dispose(kz_resmap *m);
void kz_resmap_remove_at(kz_resmap *m, size_t i);

/* --- decoding ------------------------------------------------------------------------------ */

/** Parses a stream of documents into a new array, skipping empty ones. Resources and patches
 * are read as kyaml reads them (YAML 1.2 booleans: `yes`, `on`, `y` stay strings). */
int kz_decode_stream(json_object **out, const char *data, size_t len, const char *what);

/** Like kz_decode_stream() for kustomization files, which kustomize reads with
 * sigs.k8s.io/yaml (YAML 1.1 booleans). */
int kz_decode_kustomization(json_object **out, const char *data, size_t len, const char *what);

/* --- field specs --------------------------------------------------------------------------- */

typedef struct kz_fieldspec {
    const char *group, *version, *kind, *path;
    int create;
} kz_fieldspec;

typedef struct kz_fsset {
    const kz_fieldspec *v;
    size_t n;
} kz_fsset;

extern const kz_fsset kz_fs_common_labels;   /* commonLabels (selectors included) */
extern const kz_fsset kz_fs_metadata_labels; /* metadata and template labels */
extern const kz_fsset kz_fs_common_annotations;
extern const kz_fsset kz_fs_images;
extern const kz_fsset kz_fs_replicas;
extern const kz_fsset kz_fs_namespace;

/** A name reference: objects of @p target may be named by these referrer fields. */
typedef struct kz_nameref {
    const char *group, *version, *kind;
    kz_fsset referrers;
} kz_nameref;
extern const kz_nameref kz_namerefs[];
extern const size_t kz_nnamerefs;

/** Called for each node a field spec reaches; @p parent/@p key locate it for replacement. */
typedef int (*kz_fs_visit)(json_object *parent, const char *key, json_object *node, void *ctx);

/**
 * Walks @p spec over @p obj (checking the spec's gvk against the object) and calls @p visit on
 * every node at its path; with spec->create, missing intermediate maps are created and the
 * last field is created as @p create_type (json_type_object or json_type_string).
 */
int kz_fs_apply(json_object *obj,
                const kz_fieldspec *spec,
                json_type create_type,
                kz_fs_visit visit,
                void *ctx);

/* --- patches ------------------------------------------------------------------------------- */

/** Strategic-merge @p patch into @p target (in place); *deleted set when the result is empty.
 * The patch is not modified. */
int kz_smp_apply(json_object *target, json_object *patch, int *deleted);

/** Applies a JSON 6902 operation array to @p *doc (may replace the root). */
int kz_json6902_apply(json_object **doc, json_object *ops);

/* --- generators ---------------------------------------------------------------------------- */

/** Computes kustomize's content hash of a ConfigMap or Secret (10 characters + NUL). */
int kz_hash_res(char out[11], json_object *obj);

/* --- the build (build.c) ------------------------------------------------------------------ */

/** One kustomization being built. */
typedef struct kz_dir kz_dir;

/** Reads a file named relative to the kustomization (load restriction checked). */
int kz_dir_load(char **data, size_t *len, kz_dir *d, const char *rel);
/** Tree path of the kustomization file, for messages. */
const char *kz_dir_file(const kz_dir *d);
/** The parsed kustomization (borrowed). */
json_object *kz_dir_kustomization(const kz_dir *d);
int kz_res_matches_any_id(const kz_res *r,
                          const char *g,
                          const char *v,
                          const char *k,
                          const char *n,
                          const char *ns);
int kz_same_cur_id(const kz_res *a, const kz_res *b);
/** "Kind.version.group/name.namespace" for messages; free with free(). */
char *kz_res_id_string(const kz_res *r);
/** Appends decoded documents (List kinds flattened) as resources. */
int kz_append_docs(kz_resmap *ra, json_object *docs, const char *what);

/* --- generators (generate.c) ----------------------------------------------------------------- */

/** Runs one configMapGenerator/secretGenerator entry. */
int kz_generate(kz_res **out, kz_dir *d, json_object *args, const char *kind, json_object *global);
/** Adds a generated resource, honouring its behavior (create, merge, replace). Consumes r. */
int kz_absorb(kz_resmap *ra, kz_res *r);

/* --- transformers (transform.c) -------------------------------------------------------------- */

/** Runs the built-in transformers of a kustomization in kustomize's order. */
int kz_transform_all(kz_dir *d, kz_resmap *ra);
/** Updates references to renamed objects (kustomize's nameReference step). */
int kz_fix_name_references(kz_resmap *ra);
/** Whether the labelSelector and annotationSelector of @p sel match @p r. */
int kz_selector_labels_match(const kz_res *r, json_object *sel, int *err);
/** Runs the kustomization's replacements. */
int kz_replacements(kz_dir *d, kz_resmap *ra);
/** Orders the output (sortOptions, legacy by default). */
int kz_sort(kz_resmap *ra, json_object *sort_options, const char *file);

#endif
