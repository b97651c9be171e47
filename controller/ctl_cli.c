/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Offline subcommands of component-controller (see ctl_cli.h): the dispatch, and what several
 * subcommands share. Each subcommand parses its own flags with co/flags, reads local files
 * only, and prints objects in generator order.
 */
#include "controller/ctl_cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/render/render.h"
#include "co/json/yaml.h"
#include "controller/ctl_cli_int.h"

/* --- output ---------------------------------------------------------------------------------- */

int ctl_cli__parse_format(output_format *fmt, const char *name)
{
    if (strcmp(name, "yaml") == 0) {
        *fmt = FORMAT_YAML;
    } else if (strcmp(name, "json") == 0) {
        *fmt = FORMAT_JSON;
    } else {
        return co_error_set(CO_EINVALID, "-o: unsupported output format \"%s\": use yaml or json",
                            name);
    }
    return 0;
}

/*
 * Writes @p objects (a json-c array): YAML as a stream of documents separated by "---" lines,
 * as kubectl kustomize prints it; JSON as a v1 List, as kubectl get -o json prints several
 * objects.
 */
int ctl_cli__print_objects(FILE *out, struct json_object *objects, output_format fmt)
{
    if (fmt == FORMAT_JSON) {
        struct json_object *list = json_object_new_object();
        json_object_object_add(list, "apiVersion", json_object_new_string("v1"));
        json_object_object_add(list, "kind", json_object_new_string("List"));
        json_object_object_add(list, "items", json_object_get(objects));
        char *text = co_json_dumps(list, 0);
        json_object_put(list);
        if (!text) {
            return co_error_last_code();
        }
        fprintf(out, "%s\n", text);
        free(text);
        return 0;
    }
    size_t n = json_object_array_length(objects);
    for (size_t i = 0; i < n; i++) {
        char *doc = co_yaml_dumps(json_object_array_get_idx(objects, i), 0);
        if (!doc) {
            return co_error_wrap("object %zu", i);
        }
        fprintf(out, "%s%s", i > 0 ? "---\n" : "", doc);
        free(doc);
    }
    return 0;
}

/* --- input ----------------------------------------------------------------------------------- */

/* Reads the whole file @p path (at most CO_MAX_DOCUMENT bytes), NUL-terminated. */
int ctl_cli__read_file(char **out, size_t *len_out, const char *path)
{
    FILE *f = fopen(path, "rbe");
    if (!f) {
        return co_error_set_os(CO_ENOTFOUND, "%s", path);
    }
    co_buf b = CO_BUF_INIT(CO_MAX_DOCUMENT);
    char chunk[16384];
    size_t got = 0;
    int rc = 0;
    while (rc == 0 && (got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        rc = co_buf_put(&b, chunk, got);
    }
    bool failed = ferror(f) != 0;
    (void)fclose(f);
    if (rc < 0) {
        return co_error_set(CO_ETOOBIG, "%s: larger than %zu bytes", path, CO_MAX_DOCUMENT);
    }
    if (failed) {
        co_buf_dispose(&b);
        return co_error_set(CO_ERROR, "%s: read error", path);
    }
    if (co_buf_putc(&b, '\0') < 0) {
        return co_error_set(CO_ETOOBIG, "%s: larger than %zu bytes", path, CO_MAX_DOCUMENT);
    }
    size_t len = 0;
    *out = co_buf_take(&b, &len);
    *len_out = len - 1;
    return 0;
}

/* Reads one YAML or JSON document from @p path; errors name the file (and line). */
int ctl_cli__read_document(struct json_object **out, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    int rc = ctl_cli__read_file(&text, &len, path);
    if (rc < 0) {
        return rc;
    }
    size_t plen = strlen(path);
    if (plen > 5 && strcmp(path + plen - 5, ".json") == 0) {
        rc = co_json_parse(out, text, len);
    } else {
        rc = co_yaml_parse(out, text, len, 0);
    }
    free(text);
    if (rc < 0) {
        return co_error_wrap("%s", path);
    }
    return 0;
}

/*
 * A --set value typed as Helm types it: true/false, null, decimal integers; anything else is
 * a string.
 */
static struct json_object *typed_value(const char *v)
{
    if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
        return json_object_new_boolean(v[0] == 't');
    }
    if (strcmp(v, "null") == 0) {
        return NULL;
    }
    const char *digits = v[0] == '-' ? v + 1 : v;
    if (digits[0] >= '1' && digits[0] <= '9' && strspn(digits, "0123456789") == strlen(digits)) {
        errno = 0;
        char *end = NULL;
        long long n = strtoll(v, &end, 10);
        if (errno == 0 && *end == '\0') {
            return json_object_new_int64(n);
        }
    } else if (strcmp(v, "0") == 0) {
        return json_object_new_int64(0);
    }
    return json_object_new_string(v);
}

/*
 * Applies one --set PATH=VALUE to the object @p root: PATH is a dot-separated list of keys
 * ("\\." is a literal dot), missing objects on the way are created.
 */
int ctl_cli__apply_set(struct json_object *root, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment) {
        return co_error_set(CO_EINVALID, "--set %s: expected PATH=VALUE", assignment);
    }
    size_t plen = (size_t)(eq - assignment);
    char *path = strndup(assignment, plen);
    char *keys[CO_MAX_NESTING + 1];
    size_t n = 0;
    char *w = path;
    keys[n++] = path;
    for (const char *r = path; *r; r++) {
        if (r[0] == '\\' && r[1] == '.') {
            *w++ = '.';
            r++;
        } else if (*r == '.') {
            *w++ = '\0';
            if (n == CO_MAX_NESTING) {
                free(path);
                return co_error_set(CO_EINVALID, "--set %s: path nested too deeply", assignment);
            }
            keys[n++] = w;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    keys[n] = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!keys[i][0]) {
            free(path);
            return co_error_set(CO_EINVALID, "--set %s: empty key in path", assignment);
        }
    }
    int rc = co_json_setv(root, typed_value(eq + 1), (const char *const *)keys);
    free(path);
    if (rc < 0) {
        return co_error_set(CO_EINVALID, "--set %s: a value on the path is not an object",
                            assignment);
    }
    return 0;
}

int ctl_cli__parse_flags(int *next,
                         const co_flag *flags,
                         size_t nflags,
                         int argc,
                         char **argv,
                         const subcommand *cmd,
                         const int *help,
                         FILE *out,
                         FILE *err)
{
    if (co_flags_parse(next, flags, nflags, argc, argv) < 0) {
        fprintf(err, "component-controller %s: %s\n", cmd->name, co_error_last());
        return EXIT_USAGE;
    }
    if (*help) {
        fprintf(out, "Usage: component-controller %s %s\n\n%s.\n\nFlags:\n", cmd->name, cmd->args,
                cmd->summary);
        co_flags_usage(out, flags, nflags);
        return 0;
    }
    return -1;
}

/* --- render budget ------------------------------------------------------------------------- */

/* Applies the budget flags as the process default, as the controller does with its flags of
 * the same names. Returns EXIT_USAGE for a bad value, else -1. */
int ctl_cli__apply_budget(const subcommand *cmd, const char *cpu, const char *memory, FILE *err)
{
    co_budget_limits l;
    if (co_budget_limits_parse(&l, cpu, memory) < 0) {
        fprintf(err, "component-controller %s: %s\n", cmd->name, co_error_last());
        return EXIT_USAGE;
    }
    co_budget_set_default(&l);
    return -1;
}

/* --- manifests ------------------------------------------------------------------------------- */

void ctl_cli__manifests_dispose(manifest_list *l)
{
    for (size_t i = 0; i < l->len; i++) {
        json_object_put(l->items[i].obj);
    }
    free(l->items);
    l->items = NULL;
    l->len = l->cap = 0;
}

static void manifests_push(manifest_list *l, manifest m)
{
    if (l->len == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->items = co_xrealloc(l->items, l->cap * sizeof(*l->items));
    }
    l->items[l->len++] = m;
}

/* Adds the object @p obj (a new reference), flattening a `kind: List` into its items. */
static void manifests_add(manifest_list *l, manifest m)
{
    struct json_object *items = NULL;
    const char *kind = co_json_str(m.obj, "kind", NULL);
    if (kind && strcmp(kind, "List") == 0 && co_json_get_array(&items, m.obj, "items", NULL) == 0) {
        for (size_t i = 0; i < json_object_array_length(items); i++) {
            manifest item = m;
            item.obj = json_object_get(json_object_array_get_idx(items, i));
            manifests_push(l, item);
        }
        json_object_put(m.obj);
        return;
    }
    manifests_push(l, m);
}

/*
 * Reads every document of the YAML or JSON stream in @p path (null documents are skipped).
 * @return 0, or an error naming the file (and line for a syntax error).
 */
int ctl_cli__read_manifests(manifest_list *l, const char *path, bool from_policy_flag)
{
    char *text = NULL;
    size_t len = 0;
    int rc = ctl_cli__read_file(&text, &len, path);
    if (rc < 0) {
        return rc;
    }
    co_yaml_docs docs = CO_YAML_DOCS_INIT;
    rc = co_yaml_parse_stream(&docs, text, len, 0);
    free(text);
    if (rc < 0) {
        return co_error_wrap("%s", path);
    }
    for (size_t i = 0; i < docs.len; i++) {
        if (!docs.items[i].value) {
            continue;
        }
        manifest m = {path, docs.items[i].line, json_object_get(docs.items[i].value),
                      from_policy_flag};
        manifests_add(l, m);
    }
    co_yaml_docs_dispose(&docs);
    return 0;
}

/* "FILE:LINE: " — the place of a manifest in messages. */
void ctl_cli__print_place(FILE *err, const manifest *m)
{
    if (m->line > 0) {
        fprintf(err, "%s:%d: ", m->file, m->line);
    } else {
        fprintf(err, "%s: ", m->file);
    }
}

/* Prints one line per field error: FILE:LINE: KIND "NAME": FIELD: TYPE: VALUE: DETAIL. */
int ctl_cli__print_field_errors(FILE *err,
                                const manifest *m,
                                const char *what,
                                const co_field_errors *errs)
{
    for (size_t i = 0; i < errs->len; i++) {
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        int rc = co_field_error_format(&b, &errs->items[i]);
        if (rc < 0) {
            return rc;
        }
        ctl_cli__print_place(err, m);
        fprintf(err, "error: %s: %s\n", what, co_buf_cstr(&b));
        co_buf_dispose(&b);
    }
    if (errs->dropped > 0) {
        ctl_cli__print_place(err, m);
        fprintf(err, "error: %s: %zu more errors\n", what, errs->dropped);
    }
    return 0;
}

/*
 * What an object is meant to be: kind Component, ComponentPolicy, Blueprint or BlueprintVersion,
 * or any other kind of the
 * core.cs.sap.com group (then a ComponentPolicy when the kind names a policy), so that a wrong
 * kind or version is reported by the validation as the webhook reports it.
 */
object_class ctl_cli__classify(const struct json_object *obj)
{
    const char *k = co_json_str(obj, "kind", NULL);
    const char *api = co_json_str(obj, "apiVersion", NULL);
    if (k && strcmp(k, "Component") == 0) {
        return OBJ_COMPONENT;
    }
    if (k && strcmp(k, "ComponentPolicy") == 0) {
        return OBJ_POLICY;
    }
    if (k && (strcmp(k, "Blueprint") == 0 || strcmp(k, "BlueprintVersion") == 0)) {
        return OBJ_BLUEPRINT;
    }
    if (api && strncmp(api, "core.cs.sap.com/", 16) == 0) {
        return k && strstr(k, "Policy") ? OBJ_POLICY : OBJ_COMPONENT;
    }
    return OBJ_OTHER;
}

const char *ctl_cli__base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}
/* --- dispatch -------------------------------------------------------------------------------- */

static const subcommand subcommands[] = {
    {"kustomize", "[flags] DIR",
     "Builds the kustomization in DIR without templating, as kubectl kustomize DIR does",
     ctl_cli__run_kustomize},
    {"template", "[flags] TEMPLATE_FILE...",
     "Renders Go templates with the full function set; the files form one template set and the "
     "first is executed",
     ctl_cli__run_template},
    {"validate", "[flags] FILE...",
     "Validates Component, ComponentPolicy, Blueprint and BlueprintVersion manifests with the "
     "admission webhooks' rules, "
     "dependency cycles over the given set included",
     ctl_cli__run_validate},
    {"graph", "[flags] FILE... | --kubeconfig PATH",
     "Prints the dependency graph of Components as Graphviz DOT: states as colours, cycles in "
     "red, shared Blueprints as notes",
     ctl_cli__run_graph},
    {"render", "[flags] DIR | --blueprint FILE",
     "Renders DIR, or the files of a Blueprint manifest, as the controller renders a Component's "
     "source (Helm chart if Chart.yaml exists, else the templated kustomization) and prints the "
     "objects in generator order",
     ctl_cli__run_render},
    {"diff", "[flags] --kubeconfig PATH (-f COMPONENT.yaml [DIR] | NAMESPACE/NAME [DIR])",
     "Renders a Component as the controller would, server-side dry-runs every object as the "
     "controller writes it and prints a unified diff per object and the objects that would be "
     "deleted; exit status 0 = no change, 1 = changes, 2 = error",
     ctl_cli__run_diff},
    {"plan", "[flags] --kubeconfig PATH (-f COMPONENT.yaml [DIR] | NAMESPACE/NAME [DIR])",
     "Prints the waves the controller would apply a Component's objects in, with each object's "
     "policies and whether the dry run creates, updates or leaves it, then the delete waves; exit "
     "status as diff",
     ctl_cli__run_plan},
};

const subcommand *ctl_cli__find(const char *name)
{
    for (size_t i = 0; i < CO_ARRAY_SIZE(subcommands); i++) {
        if (strcmp(subcommands[i].name, name) == 0) {
            return &subcommands[i];
        }
    }
    return NULL;
}

bool ctl_cli_is_subcommand(const char *arg)
{
    return arg && ctl_cli__find(arg) != NULL;
}

void ctl_cli_usage(FILE *out)
{
    fprintf(out, "Subcommands (see component-controller SUBCOMMAND --help):\n");
    for (size_t i = 0; i < CO_ARRAY_SIZE(subcommands); i++) {
        fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    }
    fprintf(out, "\n");
}

int ctl_cli_main(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = argc > 0 ? ctl_cli__find(argv[0]) : NULL;
    if (!cmd) {
        fprintf(err, "component-controller: unknown subcommand \"%s\"\n", argc > 0 ? argv[0] : "");
        ctl_cli_usage(err);
        return EXIT_USAGE;
    }
    int status = cmd->run(argc, argv, out, err);
    fflush(out);
    return status;
}
