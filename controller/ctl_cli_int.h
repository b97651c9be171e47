/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the offline subcommands (ctl_cli.h) shared by their files: ctl_cli.c holds the
 * dispatch and what several subcommands use (output, input, flags, the render budget, manifest
 * files); each subcommand has a file of its own (ctl_cli_<name>.c).
 */
#ifndef CTL_CLI_INT_H
#define CTL_CLI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "co/api/component.h"
#include "co/api/field_error.h"
#include "co/util/flags.h"
#include "controller/ctl_inventory.h"

struct json_object;

enum { EXIT_BAD_INPUT = 1, EXIT_USAGE = 2 };

typedef struct subcommand {
    const char *name;
    const char *args;
    const char *summary;
    int (*run)(int argc, char **argv, FILE *out, FILE *err);
} subcommand;

/* The subcommand named @p name, or NULL. */
const subcommand *ctl_cli__find(const char *name);

/* The subcommands (argv[0] is the subcommand's name); each returns the exit status. */
int ctl_cli__run_kustomize(int argc, char **argv, FILE *out, FILE *err);
int ctl_cli__run_template(int argc, char **argv, FILE *out, FILE *err);
int ctl_cli__run_validate(int argc, char **argv, FILE *out, FILE *err);
int ctl_cli__run_graph(int argc, char **argv, FILE *out, FILE *err);
int ctl_cli__run_render(int argc, char **argv, FILE *out, FILE *err);
int ctl_cli__run_diff(int argc, char **argv, FILE *out, FILE *err);
int ctl_cli__run_plan(int argc, char **argv, FILE *out, FILE *err);

/* ---- output ---------------------------------------------------------------------------- */

typedef enum { FORMAT_YAML, FORMAT_JSON } output_format;

/* -o yaml|json (NULL: yaml). */
int ctl_cli__parse_format(output_format *fmt, const char *name);
/* Prints the objects of the array @p objects as a YAML stream or a JSON list. */
int ctl_cli__print_objects(FILE *out, struct json_object *objects, output_format fmt);

/* ---- input ----------------------------------------------------------------------------- */

/* The contents of file @p path ("-": stdin), capped (free()). */
int ctl_cli__read_file(char **out, size_t *len_out, const char *path);
/* The single YAML or JSON document of file @p path. */
int ctl_cli__read_document(struct json_object **out, const char *path);
/* Applies a --set PATH=VALUE assignment to @p root. */
int ctl_cli__apply_set(struct json_object *root, const char *assignment);
/* Parses the flags of a subcommand and prints help or a usage error. Returns the exit status
 * to return at once, or -1 to go on with the positional arguments from *next. */
int ctl_cli__parse_flags(int *next,
                         const co_flag *flags,
                         size_t nflags,
                         int argc,
                         char **argv,
                         const subcommand *cmd,
                         const int *help,
                         FILE *out,
                         FILE *err);
/* Applies the budget flags as the process default, as the controller does with its flags of
 * the same names. Returns EXIT_USAGE for a bad value, else -1. */
int ctl_cli__apply_budget(const subcommand *cmd, const char *cpu, const char *memory, FILE *err);
/* The last component of @p path. */
const char *ctl_cli__base_name(const char *path);

/* ---- manifest files -------------------------------------------------------------------- */

/* One object of a manifest file, with where it came from. */
typedef struct manifest {
    const char *file;        /* borrowed from argv */
    int line;                /* where its document starts (0 = unknown) */
    struct json_object *obj; /* owned */
    bool from_policy_flag;   /* read from --policy */
} manifest;

typedef struct manifest_list {
    manifest *items;
    size_t len;
    size_t cap;
} manifest_list;

typedef enum { OBJ_OTHER, OBJ_COMPONENT, OBJ_POLICY, OBJ_BLUEPRINT } object_class;

void ctl_cli__manifests_dispose(manifest_list *l);
/* Reads every document of the YAML or JSON stream in @p path (null documents are skipped).
 * @return 0, or an error naming the file (and line for a syntax error). */
int ctl_cli__read_manifests(manifest_list *l, const char *path, bool from_policy_flag);
/* "FILE:LINE: " of a manifest. */
void ctl_cli__print_place(FILE *err, const manifest *m);
/* Prints one line per field error: FILE:LINE: KIND "NAME": FIELD: TYPE: VALUE: DETAIL. */
int ctl_cli__print_field_errors(FILE *err,
                                const manifest *m,
                                const char *what,
                                const co_field_errors *errs);
/* What an object is meant to be: a Component, a ComponentPolicy, a Blueprint or BlueprintVersion,
 * or something else. */
object_class ctl_cli__classify(const struct json_object *obj);

/* ---- policy tests (ctl_cli_expect.c) ------------------------------------------------------ */

struct co_policy_result;
/* The expectations of `validate --expect FILE`: admission results per example Component. */
typedef struct expect_set expect_set;
/* Reads and checks @p path; Components named without a namespace are in @p default_ns. Every
 * problem is printed to @p err naming the file and field. @return 0 or CO_EINVALID. */
int ctl_cli__expect_load(expect_set **out, const char *path, const char *default_ns, FILE *err);
/* What admission answered for the Component @p key ("namespace/name"). */
void ctl_cli__expect_record(expect_set *s, const char *key, const struct co_policy_result *res);
/* Prints the table of cases to @p out. @return the number of failed cases; CO_EINVALID (printed
 * to @p err) when a case names a Component none of the files holds. */
int ctl_cli__expect_report(expect_set *s, FILE *out, FILE *err);
void ctl_cli__expect_free(expect_set *s);

/* ---- diff and plan (ctl_cli_diff.c; docs/preview.md) ------------------------------------- */

/* Leaves out of an object what the API server sets (metadata.managedFields, resourceVersion,
 * uid, generation, creationTimestamp, deletionTimestamp, selfLink) and its status; a Secret's
 * data and stringData values and kubectl's last-applied annotation become "sha256:<hex>" of
 * their bytes. NULL is a no-op. */
void ctl_cli__preview_clean(struct json_object *obj);
/* The object as YAML with sorted keys ("" for NULL; free()). */
char *ctl_cli__preview_text(const struct json_object *obj);
/* A unified diff (3 lines of context) of two texts under the labels given, coloured with ANSI
 * escapes when @p colour; *out NULL when the texts are equal (else free()). */
int ctl_cli__unified_diff(char **out,
                          const char *old_text,
                          const char *new_text,
                          const char *old_label,
                          const char *new_label,
                          bool colour);
/* Prints the apply waves of @p set (sorted by ctl_objset_sort_for_apply()) as ctl_apply() walks
 * them: per apply order the regular objects, then APIServices, then instances of the types
 * @p inv and @p c's additionalManagedTypes define, then the objects purged at the end of the
 * wave. @p marks and @p words (NULL: "-" and "planned") say per object what happens to it. */
void ctl_cli__plan_waves(FILE *out,
                         const ctl_objset *set,
                         const ctl_inventory *inv,
                         const co_component *c,
                         const char *const *marks,
                         const char *const *words);
/* Prints the items of @p inv (sorted for delete) grouped by delete order as ctl_apply()'s
 * deletion waves take them: per delete order the managed instances (of the types @p inv and
 * @p c's additionalManagedTypes define) first; with @p obsolete_only only those scheduled for
 * deletion. */
void ctl_cli__plan_deletions(FILE *out,
                             const ctl_inventory *inv,
                             const co_component *c,
                             bool obsolete_only);

#endif
