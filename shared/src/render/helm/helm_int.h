/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private interface of the Helm module: the loaded chart (immutable), the per-render copy of
 * the dependency tree that Helm's dependency processing rewrites, values coalescing, and the
 * glob matchers Helm uses.
 */
#ifndef CO_HELM_INT_H
#define CO_HELM_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "co/render/helm.h"

struct json_object;

/* One file of a chart: a path relative to the chart's root and its bytes (NUL-terminated). */
typedef struct helm_file {
    char *name;
    char *data;
    size_t len;
} helm_file;

/* A maintainer of Chart.yaml. */
typedef struct helm_maintainer {
    char *name;
    char *email;
    char *url;
} helm_maintainer;

/* A dependency of Chart.yaml (or requirements.yaml). */
typedef struct helm_dep {
    char *name;
    char *version;
    char *repository;
    char *condition;
    char **tags; /* NULL-terminated; NULL when absent */
    size_t ntags;
    struct json_object *import_values; /* array or NULL */
    char *alias;
    bool enabled;
} helm_dep;

/* Chart.yaml as Go's chart.Metadata holds it. */
typedef struct helm_meta {
    char *name;
    char *home;
    char **sources;
    size_t nsources;
    char *version;
    char *description;
    char **keywords;
    size_t nkeywords;
    helm_maintainer *maintainers;
    size_t nmaintainers;
    char *icon;
    char *api_version;
    char *condition;
    char *tags;
    char *app_version;
    struct json_object *annotations; /* object of strings, or NULL */
    char *kube_version;
    helm_dep *deps;
    size_t ndeps;
    char *type;
    bool deprecated;
    bool has_sources;
    bool has_keywords;
    bool has_maintainers;
    bool has_deps; /* the list was present (Go: non-nil slice) */
} helm_meta;

struct co_helm_chart {
    char *path; /* where it was loaded from, for messages */
    helm_meta meta;
    helm_file *templates;
    size_t ntemplates;
    helm_file *files; /* .Files: everything else, including crds/ */
    size_t nfiles;
    struct json_object *values; /* values.yaml; an object, never NULL */
    char *schema;               /* values.schema.json or NULL */
    size_t schema_len;
    co_helm_chart **deps; /* subcharts found under charts/, in load order */
    size_t ndeps;
};

/* ---- The per-render dependency tree ---------------------------------------------------------
 * Helm's dependency processing edits the chart (aliases rename subcharts, disabled ones are
 * removed, import-values replace the chart's values). We do that on a tree of nodes that
 * borrow the immutable chart. */
typedef struct helm_node helm_node;
struct helm_node {
    const co_helm_chart *chart;
    helm_node *parent;
    helm_meta meta;             /* a copy (name possibly replaced by an alias) */
    struct json_object *values; /* the chart's values as processing leaves them */
    helm_node **deps;
    size_t ndeps;
};

/* Builds the node tree for @p c (deep copies of metadata and values). */
helm_node *co_helm__node_new(const co_helm_chart *c, helm_node *parent);
void co_helm__node_free(helm_node *n);

/* Helm's ProcessDependenciesWithMerge: tags/conditions/aliases, then import-values.
 * @p vals is the user values (borrowed). */
int co_helm__process_dependencies(helm_node *root, struct json_object *vals);

/* Helm's CoalesceValues (merge false) / MergeValues (merge true) of @p n with @p vals
 * (borrowed, deep-copied first). Returns a new reference through @p out. */
int co_helm__coalesce(struct json_object **out,
                      helm_node *n,
                      const struct json_object *vals,
                      bool merge);

/* values.schema.json of every chart in the tree against its section of @p values (Helm's
 * ValidateAgainstSchema). CO_EINVALID lists every violation. */
int co_helm__validate_schema(const helm_node *root, struct json_object *values);

/* ChartFullPath: "top/charts/sub/charts/subsub". Free with free(). */
char *co_helm__full_path(const helm_node *n);

/* Metadata helpers. */
void co_helm__meta_dispose(helm_meta *m);
void co_helm__meta_copy(helm_meta *dst, const helm_meta *src);

/* A YAML scalar as sigs.k8s.io/yaml hands it to a Go string field: strings as they are,
 * numbers and booleans as text (floats at float32 precision). NULL for null, maps and lists.
 * Free with free(). */
char *co_helm__scalar_string(const struct json_object *v);

/* Go's semver constraint check used for dependency versions and kubeVersion
 * (chartutil.IsCompatibleRange): false when either side does not parse. */
bool co_helm__compatible_range(const char *constraint, const char *version);

/* Go's filepath.Match (with '/' as separator); false for a malformed pattern. */
bool co_helm__path_match(const char *pattern, const char *name);
/* Whether @p pattern is a valid filepath.Match pattern. */
bool co_helm__path_pattern_ok(const char *pattern);
/* gobwas/glob with '/' as separator, as .Files.Glob compiles it; *ok is false when the
 * pattern does not compile. */
bool co_helm__glob_match(const char *pattern, const char *name, bool *ok);

/* The `format` keyword (format.c): 1 when string @p s has @p format, 0 when it has not, -1
 * when the format is unknown (and so not asserted, as in gojsonschema). */
int co_helm__format_check(const char *format, const char *s);

#endif
