/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file blueprint.h
 * The Blueprint and BlueprintVersion kinds (`core.cs.sap.com/v1alpha1`, docs/blueprints.md): a
 * Blueprint holds a small source tree in the cluster (`spec.files`, relative path to content);
 * a BlueprintVersion is the immutable snapshot of one content, named `<blueprint>--<digest>`.
 *
 * - co_blueprint_validate() and co_blueprint_version_validate() report every problem as
 *   Kubernetes-style field errors (co/api/field_error.h): the checks the CRD schema makes, then
 *   file paths (relative and clean), the total size (CO_MAX_BLUEPRINT_FILES), name lengths, and
 *   for a version that its name and digest agree with its files.
 * - co_blueprint_version_validate_update() refuses any change to a version's spec.
 * - co_blueprint_digest() is the digest the Go operator computes: sha256 hex of Go's
 *   json.Marshal of the one-element array `[spec]`, byte for byte.
 * - co_blueprint_parse() and co_blueprint_version_parse() decode a valid object into C structs.
 *
 * Ownership follows shared/README.md; every function is thread-safe (no shared state).
 */
#ifndef CO_BLUEPRINT_H
#define CO_BLUEPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "co/util/buf.h"
#include "co/util/common.h"
#include "co/util/digest.h"
#include "co/api/field_error.h"

struct json_object;

#define CO_BLUEPRINT_API_VERSION      "core.cs.sap.com/v1alpha1"
#define CO_BLUEPRINT_KIND             "Blueprint"
#define CO_BLUEPRINT_VERSION_KIND     "BlueprintVersion"
#define CO_BLUEPRINT_CRD_NAME         "blueprints.core.cs.sap.com"
#define CO_BLUEPRINT_VERSION_CRD_NAME "blueprintversions.core.cs.sap.com"

/**
 * The label a BlueprintVersion carries with co_blueprint_label_value() of spec.blueprint, so
 * that the versions of one Blueprint are listed with a label selector (upstream selects on the
 * field .spec.blueprint, which kube-apiserver 1.20 cannot do).
 */
#define CO_BLUEPRINT_NAME_LABEL "blueprint.core.cs.sap.com/name"

/** The separator of a version's name: `<blueprint>--<digest>`. */
#define CO_BLUEPRINT_VERSION_SEPARATOR "--"

/**
 * The longest Blueprint name: its versions' names add "--" and 64 hex digits and must stay
 * within the 253 characters of a Kubernetes object name.
 */
#define CO_BLUEPRINT_NAME_MAX (253 - 2 - CO_SHA256_HEX_LEN)

/** The longest segment of a file path (NAME_MAX of the file systems the tree is written to). */
#define CO_BLUEPRINT_SEGMENT_MAX 255

/** Which of the two kinds. */
typedef enum co_blueprint_type {
    CO_BLUEPRINT_TYPE_UNKNOWN = 0,   /**< neither */
    CO_BLUEPRINT_TYPE_BLUEPRINT = 1, /**< Blueprint */
    CO_BLUEPRINT_TYPE_VERSION = 2,   /**< BlueprintVersion */
} co_blueprint_type;

/** One entry of spec.files. */
typedef struct co_blueprint_file {
    char *path;    /**< relative path, clean */
    char *content; /**< content, NUL-terminated (it may hold NUL bytes: see len) */
    size_t len;    /**< bytes of content */
} co_blueprint_file;

/** A parsed Blueprint. */
typedef struct co_blueprint {
    char *ns;                           /**< metadata.namespace (NULL when absent) */
    char *name;                         /**< metadata.name */
    int64_t generation;                 /**< metadata.generation (0 when absent) */
    co_blueprint_file *files;           /**< spec.files in byte order of their paths */
    size_t nfiles;                      /**< how many */
    char digest[CO_SHA256_HEX_LEN + 1]; /**< co_blueprint_digest() of spec.files */
    char *revision;                     /**< "generation:<metadata.generation>" */
} co_blueprint;

/** A parsed BlueprintVersion. */
typedef struct co_blueprint_version {
    char *ns;                 /**< metadata.namespace (NULL when absent) */
    char *name;               /**< metadata.name */
    char *blueprint;          /**< spec.blueprint */
    char *digest;             /**< spec.digest */
    char *revision;           /**< spec.revision */
    co_blueprint_file *files; /**< spec.files in byte order of their paths */
    size_t nfiles;            /**< how many */
} co_blueprint_version;

/** co_blueprint_validate() flag: do not report unknown fields (what the controller reads). */
#define CO_BLUEPRINT_ALLOW_UNKNOWN_FIELDS 1u

/** The kind of @p obj by its apiVersion and kind; CO_BLUEPRINT_TYPE_UNKNOWN for anything else. */
co_blueprint_type co_blueprint_type_of(const struct json_object *obj);

/**
 * Validates a Blueprint object and appends every problem to @p errs.
 * @return 0 when nothing was found, CO_EINVALID when errors were appended.
 */
int co_blueprint_validate(co_field_errors *errs, const struct json_object *obj, unsigned flags);

/**
 * Validates a BlueprintVersion object (as co_blueprint_validate(), and that metadata.name is
 * `<spec.blueprint>--<spec.digest>` and spec.digest the digest of spec.files).
 * @return 0 when nothing was found, CO_EINVALID when errors were appended.
 */
int co_blueprint_version_validate(co_field_errors *errs,
                                  const struct json_object *obj,
                                  unsigned flags);

/**
 * Appends an error for each field of spec that differs between @p old_obj and @p new_obj (a
 * BlueprintVersion is immutable; metadata may change).
 * @return 0 when spec is unchanged, CO_EINVALID when errors were appended.
 */
int co_blueprint_version_validate_update(co_field_errors *errs,
                                         const struct json_object *new_obj,
                                         const struct json_object *old_obj);

/**
 * The digest of a Blueprint's spec: sha256 hex of Go's json.Marshal of `[{"files":{...}}]`
 * (keys in byte order, Go's string escaping), `[{}]` when @p files is NULL or empty.
 * @param files spec.files (borrowed): an object whose members are strings, or NULL
 * @return 0; CO_EINVALID when @p files is not such an object; CO_ETOOBIG past CO_MAX_DOCUMENT.
 */
CO_MUST_CHECK int co_blueprint_digest(char out[CO_SHA256_HEX_LEN + 1],
                                      const struct json_object *files);

/** The revision of a Blueprint at @p generation: "generation:<n>". Free with free(). */
char *co_blueprint_revision(int64_t generation);

/** The name of the version of Blueprint @p blueprint with @p digest. Free with free(). */
char *co_blueprint_version_name(const char *blueprint, const char *digest);

/**
 * The value of CO_BLUEPRINT_NAME_LABEL for Blueprint @p name: the name itself when it has at
 * most 63 characters (a label value's limit), else the first 63 hex digits of its sha256.
 * Free with free().
 */
char *co_blueprint_label_value(const char *name);

/**
 * Parses a Blueprint (unknown fields ignored).
 * @param[out] out free with co_blueprint_free()
 * @return 0; CO_EINVALID when it does not validate (the message lists the field errors).
 */
CO_MUST_CHECK int co_blueprint_parse(co_blueprint **out, const struct json_object *obj);

/** Frees a Blueprint. NULL is a no-op. */
void co_blueprint_free(co_blueprint *b);

/**
 * Parses a BlueprintVersion (unknown fields ignored).
 * @param[out] out free with co_blueprint_version_free()
 * @return 0; CO_EINVALID when it does not validate (the message lists the field errors).
 */
CO_MUST_CHECK int co_blueprint_version_parse(co_blueprint_version **out,
                                             const struct json_object *obj);

/** Frees a BlueprintVersion. NULL is a no-op. */
void co_blueprint_version_free(co_blueprint_version *v);

/** Bytes counted for each file written by co_blueprint_write_files(), besides its content. */
#define CO_BLUEPRINT_ENTRY_OVERHEAD 4096

/**
 * Writes @p files as a tree into the directory @p dir, which it creates (it must not exist).
 * Every path is checked first as validation does (relative, clean, no "." or ".." segment); a
 * path that is not is refused before anything is written. Symlinks are never followed, and a
 * path that collides with another (a file where a directory is needed) is refused.
 * @param[out] bytes (may be NULL) the bytes the tree occupies, content plus
 *             CO_BLUEPRINT_ENTRY_OVERHEAD per file
 * @return 0; CO_EINVALID for a refused path; CO_ERROR for a file system failure. On failure
 *         what was written stays for the caller to remove.
 */
CO_MUST_CHECK int co_blueprint_write_files(const char *dir,
                                           const co_blueprint_file *files,
                                           size_t nfiles,
                                           uint64_t *bytes);

/**
 * The CRD of @p type (crds/core.cs.sap.com_blueprints.yaml, ..._blueprintversions.yaml),
 * generated from the same schema as validation.
 * @param[out] out a new reference
 * @return 0; CO_EINVALID for CO_BLUEPRINT_TYPE_UNKNOWN.
 */
CO_MUST_CHECK int co_blueprint_crd(struct json_object **out, co_blueprint_type type);

/** Appends the YAML of co_blueprint_crd(). @return 0, CO_EINVALID or CO_ETOOBIG. */
CO_MUST_CHECK int co_blueprint_crd_yaml(co_buf *out, co_blueprint_type type);

#endif
