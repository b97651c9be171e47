/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Offline subcommands of component-controller. Each subcommand parses its own flags with
 * co/flags, reads local files only, and prints objects in generator order.
 */
#include "controller/ctl_cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "co/util/budget.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/util/flags.h"
#include "co/json/json.h"
#include "co/api/component.h"
#include "co/util/digest.h"
#include "co/api/depgraph.h"
#include "co/api/field_error.h"
#include "co/render/helm.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/render/kustomize.h"
#include "co/api/policy.h"
#include "co/render/render.h"
#include "co/util/semver.h"
#include "co/render/sops.h"
#include "co/render/template.h"
#include "co/render/vfs.h"
#include "co/json/yaml.h"

enum { EXIT_BAD_INPUT = 1, EXIT_USAGE = 2 };

typedef struct subcommand {
    const char *name;
    const char *args;
    const char *summary;
    int (*run)(int argc, char **argv, FILE *out, FILE *err);
} subcommand;

/* --- output ---------------------------------------------------------------------------------- */

typedef enum { FORMAT_YAML, FORMAT_JSON } output_format;

static int parse_format(output_format *fmt, const char *name)
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
static int print_objects(FILE *out, struct json_object *objects, output_format fmt)
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
static int read_file(char **out, size_t *len_out, const char *path)
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
static int read_document(struct json_object **out, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    int rc = read_file(&text, &len, path);
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
static int apply_set(struct json_object *root, const char *assignment)
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

/* Parses the flags of a subcommand and prints help or a usage error. Returns the exit status
 * to return at once, or -1 to go on with the positional arguments from *next. */
static int parse_flags(int *next,
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
static int apply_budget(const subcommand *cmd, const char *cpu, const char *memory, FILE *err)
{
    co_budget_limits l;
    if (co_budget_limits_parse(&l, cpu, memory) < 0) {
        fprintf(err, "component-controller %s: %s\n", cmd->name, co_error_last());
        return EXIT_USAGE;
    }
    co_budget_set_default(&l);
    return -1;
}

/* --- kustomize ------------------------------------------------------------------------------- */

static const subcommand *find(const char *name);

static int run_kustomize(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = find("kustomize");
    const char *format_name = NULL;
    int help = 0;
    const co_flag flags[] = {
        {"o", CO_FLAG_STRING, &format_name, "FORMAT", "output format: yaml (default) or json"},
        {"output", CO_FLAG_STRING, &format_name, "FORMAT", "same as -o"},
        {"help", CO_FLAG_BOOL, &help, NULL, "print this help and exit"},
    };
    int next = 0;
    int status = parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
    if (status >= 0) {
        return status;
    }
    output_format fmt = FORMAT_YAML;
    if (format_name && parse_format(&fmt, format_name) < 0) {
        fprintf(err, "component-controller kustomize: %s\n", co_error_last());
        return EXIT_USAGE;
    }
    if (argc - next != 1) {
        fprintf(err, "component-controller kustomize: expected one directory, got %d arguments\n",
                argc - next);
        return EXIT_USAGE;
    }
    const char *dir = argv[next];

    co_vfs *fs = NULL;
    if (co_vfs_new_disk(&fs, dir) < 0) {
        fprintf(err, "component-controller kustomize: %s: not a directory\n", dir);
        return EXIT_BAD_INPUT;
    }
    struct json_object *objects = NULL;
    int rc = co_kustomize_build(&objects, fs, "", NULL);
    co_vfs_free(fs);
    if (rc < 0) {
        fprintf(err, "component-controller kustomize: %s: %s\n", dir, co_error_last());
        return EXIT_BAD_INPUT;
    }
    rc = print_objects(out, objects, fmt);
    json_object_put(objects);
    if (rc < 0) {
        fprintf(err, "component-controller kustomize: %s\n", co_error_last());
        return EXIT_BAD_INPUT;
    }
    return 0;
}

/* --- template -------------------------------------------------------------------------------- */

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Parses every file into one set named after the first and executes the first. */
static int render_template_files(char **text,
                                 size_t *len,
                                 char **files,
                                 size_t nfiles,
                                 struct json_object *data,
                                 unsigned groups,
                                 FILE *err)
{
    co_template_funcs *funcs = NULL;
    co_template_funcs_new(&funcs, groups);
    co_template_options opts;
    memset(&opts, 0, sizeof(opts));
    opts.name = base_name(files[0]);
    co_template_set *set = NULL;
    co_template_set_new(&set, funcs, &opts);
    int rc = 0;
    for (size_t i = 0; i < nfiles && rc == 0; i++) {
        char *src = NULL;
        size_t srclen = 0;
        rc = read_file(&src, &srclen, files[i]);
        if (rc == 0 && srclen > CO_MAX_TEMPLATE_SOURCE) {
            rc = co_error_set(CO_ETOOBIG, "%s: larger than %zu bytes", files[i],
                              CO_MAX_TEMPLATE_SOURCE);
        }
        if (rc == 0) {
            rc = co_template_set_parse(set, base_name(files[i]), src, srclen);
            if (rc < 0) {
                rc = co_error_wrap("%s", files[i]);
            }
        }
        free(src);
    }
    if (rc == 0) {
        rc = co_template_render(set, base_name(files[0]), data, CO_TEMPLATE_NUMBERS_FLOAT64, NULL,
                                text, len);
        if (rc < 0) {
            rc = co_error_wrap("%s", files[0]);
        }
    }
    if (rc < 0) {
        fprintf(err, "component-controller template: %s\n", co_error_last());
    }
    co_template_set_free(set);
    co_template_funcs_free(funcs);
    return rc;
}

static int run_template(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = find("template");
    const char *data_file = NULL;
    co_flag_list sets = {NULL, 0};
    int help = 0;
    int allow_env = 0;
    const char *cpu_budget = NULL;
    const char *memory_budget = NULL;
    const co_flag flags[] = {
        {"data", CO_FLAG_STRING, &data_file, "FILE",
         "YAML or JSON document that becomes the data root (. and $); none: an empty object"},
        {"set", CO_FLAG_LIST, &sets, "PATH=VALUE",
         "set a value in the data (repeatable, applied after --data; a.b\\.c for a key with a "
         "dot; true/false/null/integers are typed as helm --set types them)"},
        {"env", CO_FLAG_BOOL, &allow_env, NULL,
         "let env and expandenv read the process environment (default: every variable unset, "
         "as in the controller)"},
        {"render-cpu-budget", CO_FLAG_STRING, &cpu_budget, "DURATION",
         "CPU time the render may take, as in the controller (default 30s)"},
        {"render-memory-budget", CO_FLAG_STRING, &memory_budget, "BYTES",
         "memory the render may take, as in the controller (default 64Mi)"},
        {"help", CO_FLAG_BOOL, &help, NULL, "print this help and exit"},
    };
    int next = 0;
    int status = parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
    if (status < 0) {
        status = apply_budget(cmd, cpu_budget, memory_budget, err);
    }
    if (status >= 0) {
        co_flag_list_dispose(&sets);
        return status;
    }
    if (next >= argc) {
        fprintf(err, "component-controller template: expected at least one template file\n");
        co_flag_list_dispose(&sets);
        return EXIT_USAGE;
    }
    for (int i = next; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(err, "component-controller template: flags must come before the files: %s\n",
                    argv[i]);
            co_flag_list_dispose(&sets);
            return EXIT_USAGE;
        }
    }
    struct json_object *data = NULL;
    int rc = 0;
    if (data_file) {
        rc = read_document(&data, data_file);
        if (rc == 0 && data && !json_object_is_type(data, json_type_object) && sets.len > 0) {
            rc = co_error_set(CO_EINVALID, "%s: --set needs an object as data, not %s", data_file,
                              co_json_type_name(data));
        }
    }
    if (rc == 0 && (!data_file || (!data && sets.len > 0))) {
        data = json_object_new_object();
    }
    for (size_t i = 0; rc == 0 && i < sets.len; i++) {
        rc = apply_set(data, sets.items[i]);
    }
    co_flag_list_dispose(&sets);
    if (rc < 0) {
        fprintf(err, "component-controller template: %s\n", co_error_last());
        json_object_put(data);
        return EXIT_BAD_INPUT;
    }
    unsigned groups = CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_RUNTIME |
                      (allow_env ? CO_TEMPLATE_FUNCS_ENV : 0u);
    char *text = NULL;
    size_t len = 0;
    rc = render_template_files(&text, &len, argv + next, (size_t)(argc - next), data, groups, err);
    json_object_put(data);
    if (rc < 0) {
        return EXIT_BAD_INPUT;
    }
    (void)fwrite(text, 1, len, out);
    free(text);
    return 0;
}

/* --- manifests ------------------------------------------------------------------------------- */

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

static void manifests_dispose(manifest_list *l)
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
    if (json_object_is_type(m.obj, json_type_object) &&
        json_object_is_type(co_json_get(m.obj, "kind", NULL), json_type_string) &&
        strcmp(json_object_get_string(co_json_get(m.obj, "kind", NULL)), "List") == 0 &&
        co_json_get_array(&items, m.obj, "items", NULL) == 0) {
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
static int read_manifests(manifest_list *l, const char *path, bool from_policy_flag)
{
    char *text = NULL;
    size_t len = 0;
    int rc = read_file(&text, &len, path);
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

static const char *str_member(const struct json_object *obj, const char *a, const char *b)
{
    struct json_object *v = b ? co_json_get(obj, a, b, NULL) : co_json_get(obj, a, NULL);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* "FILE:LINE: " — the place of a manifest in messages. */
static void print_place(FILE *err, const manifest *m)
{
    if (m->line > 0) {
        fprintf(err, "%s:%d: ", m->file, m->line);
    } else {
        fprintf(err, "%s: ", m->file);
    }
}

/* Prints one line per field error: FILE:LINE: KIND "NAME": FIELD: TYPE: VALUE: DETAIL. */
static int
print_field_errors(FILE *err, const manifest *m, const char *what, const co_field_errors *errs)
{
    for (size_t i = 0; i < errs->len; i++) {
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        int rc = co_field_error_format(&b, &errs->items[i]);
        if (rc < 0) {
            return rc;
        }
        print_place(err, m);
        fprintf(err, "error: %s: %s\n", what, co_buf_cstr(&b));
        co_buf_dispose(&b);
    }
    if (errs->dropped > 0) {
        print_place(err, m);
        fprintf(err, "error: %s: %zu more errors\n", what, errs->dropped);
    }
    return 0;
}

/* --- validate -------------------------------------------------------------------------------- */

/* Who the offline admission is made for (ComponentPolicy exemptions and selectors). */
typedef struct validate_ctx {
    const char *default_ns;
    co_policy_request req;   /* ns filled per Component */
    co_policy_set *policies; /* from --policy */
    co_depgraph *graph;      /* every Component of the given set */
    unsigned warnings;
    unsigned errors;
} validate_ctx;

static void
describe(char *buf, size_t size, const char *kind, const struct json_object *obj, const char *ns)
{
    const char *name = str_member(obj, "metadata", "name");
    if (ns) {
        (void)snprintf(buf, size, "%s \"%s/%s\"", kind, ns, name ? name : "");
    } else {
        (void)snprintf(buf, size, "%s \"%s\"", kind, name ? name : "");
    }
}

static int report_violations(validate_ctx *vc,
                             FILE *err,
                             const manifest *m,
                             const char *what,
                             const co_policy_result *res)
{
    for (size_t i = 0; i < res->len; i++) {
        const co_policy_violation *pv = &res->items[i];
        if (pv->action == CO_POLICY_NONE) {
            continue;
        }
        co_buf msg = CO_BUF_INIT(SIZE_MAX);
        int rc = co_policy_violation_format(&msg, pv);
        if (rc < 0) {
            return rc;
        }
        const char *level = pv->action == CO_POLICY_DENY   ? "error"
                            : pv->action == CO_POLICY_WARN ? "warning"
                                                           : "audit";
        vc->errors += pv->action == CO_POLICY_DENY;
        vc->warnings += pv->action == CO_POLICY_WARN;
        print_place(err, m);
        fprintf(err, "%s: %s: %s\n", level, what, co_buf_cstr(&msg));
        co_buf_dispose(&msg);
    }
    return 0;
}

/*
 * Admits one Component as the API server would with both webhooks: the mutating webhook's
 * defaults (built-in and ComponentPolicy), then the validating webhook's field validation,
 * policy rules and the dependency rules against every other Component of the set.
 */
static int validate_component(validate_ctx *vc, FILE *err, const manifest *m)
{
    const char *ns = str_member(m->obj, "metadata", "namespace");
    if (!ns || !ns[0]) {
        ns = vc->default_ns;
    }
    char what[512];
    describe(what, sizeof(what), "Component", m->obj, ns);
    vc->req.ns = ns;

    co_policy_defaults pd;
    int rc = co_policy_defaults_merge(&pd, vc->policies, &vc->req);
    if (rc < 0) {
        return rc;
    }
    for (size_t i = 0; i < pd.nwarnings; i++) {
        print_place(err, m);
        fprintf(err, "warning: %s: %s\n", what, pd.warnings[i]);
        vc->warnings++;
    }
    struct json_object *obj = NULL;
    if (co_component_default(&obj, m->obj, ns, &pd.defaults) < 0) {
        /* Not something the mutating webhook can default: validation explains. */
        co_error_clear();
        obj = json_object_get(m->obj);
    }
    co_policy_defaults_dispose(&pd);

    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    if (co_component_validate(&errs, obj, ns, 0) < 0) {
        vc->errors++;
        rc = print_field_errors(err, m, what, &errs);
        co_field_errors_dispose(&errs);
        json_object_put(obj);
        return rc;
    }
    co_field_errors_dispose(&errs);

    /* The graph holds this Component too; judge its edges as new ones, as at admission. */
    char *key = NULL;
    co_depgraph_list deps = {NULL, 0};
    if (co_depgraph_object_deps(&deps, &key, obj, ns) == 0) {
        co_depgraph_remove(vc->graph, key);
    } else {
        co_error_clear();
    }
    co_component *comp = NULL;
    co_policy_result res = {NULL, 0, CO_POLICY_NONE};
    rc = co_component_parse(&comp, obj);
    if (rc == 0) {
        vc->req.graph = vc->graph;
        rc = co_policy_evaluate(&res, vc->policies, comp, &vc->req);
    }
    if (rc == 0) {
        rc = report_violations(vc, err, m, what, &res);
    }
    if (key && co_depgraph_set(vc->graph, key, (const char *const *)deps.items, deps.len) < 0) {
        rc = co_error_last_code();
    }
    co_policy_result_dispose(&res);
    co_component_free(comp);
    co_depgraph_list_dispose(&deps);
    free(key);
    json_object_put(obj);
    return rc;
}

static int validate_policy(validate_ctx *vc, FILE *err, const manifest *m)
{
    char what[512];
    describe(what, sizeof(what), "ComponentPolicy", m->obj, NULL);
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    int rc = 0;
    if (co_policy_validate(&errs, m->obj, 0) < 0) {
        vc->errors++;
        rc = print_field_errors(err, m, what, &errs);
    }
    co_field_errors_dispose(&errs);
    return rc;
}

typedef enum { OBJ_OTHER, OBJ_COMPONENT, OBJ_POLICY } object_class;

/*
 * What an object is meant to be: kind Component or ComponentPolicy, or any other kind of the
 * core.cs.sap.com group (then a ComponentPolicy when the kind names a policy), so that a wrong
 * kind or version is reported by the validation as the webhook reports it.
 */
static object_class classify(const struct json_object *obj)
{
    const char *k = str_member(obj, "kind", NULL);
    const char *api = str_member(obj, "apiVersion", NULL);
    if (k && strcmp(k, "Component") == 0) {
        return OBJ_COMPONENT;
    }
    if (k && strcmp(k, "ComponentPolicy") == 0) {
        return OBJ_POLICY;
    }
    if (api && strncmp(api, "core.cs.sap.com/", 16) == 0) {
        return k && strstr(k, "Policy") ? OBJ_POLICY : OBJ_COMPONENT;
    }
    return OBJ_OTHER;
}

/* Adds a name=value (or name) label to the object @p labels. */
static int add_label(struct json_object *labels, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        return co_error_set(CO_EINVALID, "--namespace-label %s: expected KEY=VALUE", kv);
    }
    char *key = strndup(kv, (size_t)(eq - kv));
    json_object_object_add(labels, key, json_object_new_string(eq + 1));
    free(key);
    return 0;
}

static int run_validate(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = find("validate");
    co_flag_list policy_files = {NULL, 0};
    co_flag_list groups = {NULL, 0};
    co_flag_list labels = {NULL, 0};
    const char *ns = "default";
    const char *user = "";
    int help = 0;
    const co_flag flags[] = {
        {"policy", CO_FLAG_LIST, &policy_files, "FILE",
         "ComponentPolicy manifests to validate and apply to the Components (repeatable)"},
        {"namespace", CO_FLAG_STRING, &ns, "NS",
         "namespace of Components without metadata.namespace (default \"default\")"},
        {"namespace-label", CO_FLAG_LIST, &labels, "KEY=VALUE",
         "a label of the Components' namespaces, for policy namespaceSelectors (repeatable)"},
        {"user", CO_FLAG_STRING, &user, "NAME",
         "the requesting user, for policy exemptions (default: anonymous)"},
        {"group", CO_FLAG_LIST, &groups, "NAME", "a group of the requesting user (repeatable)"},
        {"help", CO_FLAG_BOOL, &help, NULL, "print this help and exit"},
    };
    int next = 0;
    int status = parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
    if (status < 0 && next >= argc) {
        fprintf(err, "component-controller validate: expected at least one manifest file\n");
        status = EXIT_USAGE;
    }
    for (int i = next; status < 0 && i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(err, "component-controller validate: flags must come before the files: %s\n",
                    argv[i]);
            status = EXIT_USAGE;
        }
    }
    struct json_object *label_obj = json_object_new_object();
    for (size_t i = 0; status < 0 && i < labels.len; i++) {
        if (add_label(label_obj, labels.items[i]) < 0) {
            fprintf(err, "component-controller validate: %s\n", co_error_last());
            status = EXIT_USAGE;
        }
    }
    if (status >= 0) {
        json_object_put(label_obj);
        co_flag_list_dispose(&policy_files);
        co_flag_list_dispose(&groups);
        co_flag_list_dispose(&labels);
        return status;
    }

    validate_ctx vc;
    memset(&vc, 0, sizeof(vc));
    vc.default_ns = ns;
    vc.req.username = user;
    vc.req.groups = groups.items;
    vc.req.ngroups = groups.len;
    vc.req.namespace_labels = label_obj;
    CO_ASSERT(co_policy_set_new(&vc.policies) == 0);
    CO_ASSERT(co_depgraph_new(&vc.graph) == 0);

    manifest_list all = {NULL, 0, 0};
    for (size_t i = 0; i < policy_files.len; i++) {
        if (read_manifests(&all, policy_files.items[i], true) < 0) {
            fprintf(err, "%s\n", co_error_last());
            vc.errors++;
        }
    }
    for (int i = next; i < argc; i++) {
        if (read_manifests(&all, argv[i], false) < 0) {
            fprintf(err, "%s\n", co_error_last());
            vc.errors++;
        }
    }

    /* Policies first (they apply to every Component), then the graph of all Components. */
    int rc = 0;
    size_t ncomponents = 0;
    for (size_t i = 0; rc == 0 && i < all.len; i++) {
        manifest *m = &all.items[i];
        object_class cls = classify(m->obj);
        if (cls == OBJ_POLICY) {
            unsigned before = vc.errors;
            rc = validate_policy(&vc, err, m);
            if (rc == 0 && vc.errors == before && m->from_policy_flag &&
                co_policy_set_put(vc.policies, m->obj) < 0) {
                print_place(err, m);
                fprintf(err, "error: %s\n", co_error_last());
                vc.errors++;
            }
        } else if (cls == OBJ_COMPONENT) {
            const char *cns = str_member(m->obj, "metadata", "namespace");
            if (co_depgraph_set_object(vc.graph, m->obj, cns && cns[0] ? cns : ns) < 0) {
                co_error_clear(); /* no name: validation reports it */
            }
            ncomponents++;
        } else {
            print_place(err, m);
            const char *kind = str_member(m->obj, "kind", NULL);
            const char *api = str_member(m->obj, "apiVersion", NULL);
            fprintf(err, "error: not a Component or ComponentPolicy (apiVersion %s, kind %s)\n",
                    api ? api : "missing", kind ? kind : "missing");
            vc.errors++;
        }
    }
    for (size_t i = 0; rc == 0 && i < all.len; i++) {
        if (classify(all.items[i].obj) == OBJ_COMPONENT) {
            rc = validate_component(&vc, err, &all.items[i]);
        }
    }
    if (rc < 0) {
        fprintf(err, "component-controller validate: %s\n", co_error_last());
        vc.errors++;
    }
    if (vc.errors == 0) {
        fprintf(out, "%zu objects valid (%zu Components), %u warnings\n", all.len, ncomponents,
                vc.warnings);
    }
    manifests_dispose(&all);
    co_policy_set_free(vc.policies);
    co_depgraph_free(vc.graph);
    json_object_put(label_obj);
    co_flag_list_dispose(&policy_files);
    co_flag_list_dispose(&groups);
    co_flag_list_dispose(&labels);
    return vc.errors ? EXIT_BAD_INPUT : 0;
}

/* --- graph ----------------------------------------------------------------------------------- */

/* One node of the drawing: a Component, or a dependency target no Component occupies. */
typedef struct graph_node {
    char *key;
    const char *state; /* status.state, borrowed from the object; NULL = unknown */
    co_depgraph_list deps;
    bool present;
    bool in_cycle;
} graph_node;

typedef struct graph_nodes {
    graph_node *items;
    size_t len;
    size_t cap;
    struct json_object *objects; /* keeps the states alive */
} graph_nodes;

static graph_node *graph_find(graph_nodes *g, const char *key)
{
    for (size_t i = 0; i < g->len; i++) {
        if (strcmp(g->items[i].key, key) == 0) {
            return &g->items[i];
        }
    }
    return NULL;
}

static graph_node *graph_add(graph_nodes *g, const char *key)
{
    graph_node *n = graph_find(g, key);
    if (n) {
        return n;
    }
    if (g->len == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 16;
        g->items = co_xrealloc(g->items, g->cap * sizeof(*g->items));
    }
    n = &g->items[g->len++];
    memset(n, 0, sizeof(*n));
    n->key = strdup(key);
    return n;
}

static void graph_dispose(graph_nodes *g)
{
    for (size_t i = 0; i < g->len; i++) {
        free(g->items[i].key);
        co_depgraph_list_dispose(&g->items[i].deps);
    }
    free(g->items);
    json_object_put(g->objects);
    memset(g, 0, sizeof(*g));
}

/* Adds the Component @p obj (kept alive by g->objects). */
static int graph_add_component(graph_nodes *g, struct json_object *obj, const char *default_ns)
{
    const char *ns = str_member(obj, "metadata", "namespace");
    co_depgraph_list deps = {NULL, 0};
    char *key = NULL;
    int rc = co_depgraph_object_deps(&deps, &key, obj, ns && ns[0] ? ns : default_ns);
    if (rc < 0) {
        return rc;
    }
    graph_node *n = graph_add(g, key);
    free(key);
    if (n->present) {
        co_depgraph_list_dispose(&deps);
        return co_error_set(CO_EINVALID, "Component \"%s\" is given twice", n->key);
    }
    n->present = true;
    n->deps = deps;
    n->state = str_member(obj, "status", "state");
    json_object_array_add(g->objects, json_object_get(obj));
    return 0;
}

/* Writes @p s escaped for a DOT string (no newlines: they become spaces). */
static void dot_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            fputc('\\', out);
        }
        fputc(*s == '\n' ? ' ' : *s, out);
    }
}

static void dot_quote(FILE *out, const char *s)
{
    fputc('"', out);
    dot_escaped(out, s);
    fputc('"', out);
}

/* The fill colour of a state (Component status.state). */
static const char *state_colour(const char *state)
{
    static const struct {
        const char *state;
        const char *colour;
    } colours[] = {
        {"Ready", "palegreen"},        {"Pending", "lightyellow"}, {"Processing", "lightblue"},
        {"DeletionPending", "orange"}, {"Deleting", "lightgrey"},  {"Error", "salmon"},
    };
    for (size_t i = 0; state && i < CO_ARRAY_SIZE(colours); i++) {
        if (strcmp(colours[i].state, state) == 0) {
            return colours[i].colour;
        }
    }
    return "white";
}

/* An edge lies on a cycle when its target reaches its source again. */
static bool edge_in_cycle(const co_depgraph *dg, const char *from, const char *to)
{
    return co_depgraph_reaches(dg, to, from);
}

static int print_dot(FILE *out, graph_nodes *g)
{
    co_depgraph *dg = NULL;
    CO_ASSERT(co_depgraph_new(&dg) == 0);
    int rc = 0;
    size_t ncomponents = g->len;
    for (size_t i = 0; rc == 0 && i < ncomponents; i++) {
        rc = co_depgraph_set(dg, g->items[i].key, (const char *const *)g->items[i].deps.items,
                             g->items[i].deps.len);
    }
    co_depgraph_list cycles = {NULL, 0};
    if (rc == 0) {
        rc = co_depgraph_find_cycles(&cycles, dg);
    }
    if (rc < 0) {
        co_depgraph_free(dg);
        return rc;
    }
    for (size_t i = 0; i < ncomponents; i++) {
        for (size_t k = 0; k < g->items[i].deps.len; k++) {
            (void)graph_add(g, g->items[i].deps.items[k]); /* may move g->items */
        }
    }
    for (size_t i = 0; i < ncomponents; i++) {
        graph_node *n = &g->items[i];
        for (size_t k = 0; k < n->deps.len && !n->in_cycle; k++) {
            n->in_cycle = edge_in_cycle(dg, n->key, n->deps.items[k]);
        }
    }

    fprintf(out, "digraph components {\n"
                 "  rankdir=LR;\n"
                 "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
                 "fontname=\"Helvetica\"];\n"
                 "  edge [fontname=\"Helvetica\"];\n");
    for (size_t i = 0; i < cycles.len; i++) {
        fprintf(out, "  // cycle: ");
        dot_escaped(out, cycles.items[i]);
        fprintf(out, "\n");
    }
    for (size_t i = 0; i < g->len; i++) {
        const graph_node *n = &g->items[i];
        fprintf(out, "  ");
        dot_quote(out, n->key);
        fprintf(out, " [label=");
        if (!n->present) {
            dot_quote(out, n->key);
            fprintf(out, ", style=\"rounded,dashed\", tooltip=\"no such Component\"");
        } else {
            fputc('"', out);
            dot_escaped(out, n->key);
            if (n->state) {
                fprintf(out, "\\n");
                dot_escaped(out, n->state);
            }
            fputc('"', out);
            fprintf(out, ", fillcolor=%s", state_colour(n->state));
        }
        if (n->in_cycle) {
            fprintf(out, ", color=red, penwidth=2");
        }
        fprintf(out, "];\n");
    }
    for (size_t i = 0; i < ncomponents; i++) {
        const graph_node *n = &g->items[i];
        for (size_t k = 0; k < n->deps.len; k++) {
            fprintf(out, "  ");
            dot_quote(out, n->key);
            fprintf(out, " -> ");
            dot_quote(out, n->deps.items[k]);
            if (edge_in_cycle(dg, n->key, n->deps.items[k])) {
                fprintf(out, " [color=red, penwidth=2, label=\"cycle\"]");
            }
            fprintf(out, ";\n");
        }
    }
    fprintf(out, "}\n");
    co_depgraph_list_dispose(&cycles);
    co_depgraph_free(dg);
    return 0;
}

static int
graph_from_cluster(graph_nodes *g, const char *kubeconfig, const char *context, const char *ns)
{
    co_kube_config *cfg = NULL;
    int rc = co_kube_config_load(&cfg, kubeconfig, context);
    if (rc < 0) {
        return rc;
    }
    co_kube_client *client = NULL;
    co_kube_client_options opts = CO_KUBE_CLIENT_OPTIONS_INIT;
    opts.max_retries = 2;
    rc = co_kube_client_new(&client, cfg, &opts);
    co_kube_config_free(cfg);
    if (rc < 0) {
        return rc;
    }
    struct json_object *list = NULL;
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, NULL};
    co_kube_list_options lo;
    memset(&lo, 0, sizeof(lo));
    rc = co_kube_list_all(&list, client, &ref, &lo);
    co_kube_client_free(client);
    if (rc < 0) {
        return rc;
    }
    struct json_object *items = NULL;
    if (co_json_get_array(&items, list, "items", NULL) == 0) {
        for (size_t i = 0; rc == 0 && i < json_object_array_length(items); i++) {
            rc = graph_add_component(g, json_object_array_get_idx(items, i), NULL);
        }
    }
    json_object_put(list);
    return rc;
}

static int run_graph(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = find("graph");
    const char *kubeconfig = NULL;
    const char *context = NULL;
    const char *ns = NULL;
    int help = 0;
    const co_flag flags[] = {
        {"kubeconfig", CO_FLAG_STRING, &kubeconfig, "PATH",
         "read the Components (and their states) from this cluster instead of files"},
        {"context", CO_FLAG_STRING, &context, "NAME",
         "kubeconfig context (default: its current-context)"},
        {"namespace", CO_FLAG_STRING, &ns, "NS",
         "with --kubeconfig: only this namespace (default: all); with files: the namespace of "
         "Components without one (default \"default\")"},
        {"help", CO_FLAG_BOOL, &help, NULL, "print this help and exit"},
    };
    int next = 0;
    int status = parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
    if (status >= 0) {
        return status;
    }
    if (kubeconfig && next < argc) {
        fprintf(err, "component-controller graph: give manifest files or --kubeconfig, not both\n");
        return EXIT_USAGE;
    }
    if (!kubeconfig && next >= argc) {
        fprintf(err, "component-controller graph: expected manifest files or --kubeconfig\n");
        return EXIT_USAGE;
    }
    for (int i = next; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(err, "component-controller graph: flags must come before the files: %s\n",
                    argv[i]);
            return EXIT_USAGE;
        }
    }
    graph_nodes g;
    memset(&g, 0, sizeof(g));
    g.objects = json_object_new_array();
    int rc = 0;
    if (kubeconfig) {
        rc = graph_from_cluster(&g, kubeconfig, context, ns);
        if (rc < 0) {
            fprintf(err, "component-controller graph: %s: %s\n", kubeconfig, co_error_last());
        }
    } else {
        manifest_list all = {NULL, 0, 0};
        for (int i = next; rc == 0 && i < argc; i++) {
            rc = read_manifests(&all, argv[i], false);
            if (rc < 0) {
                fprintf(err, "component-controller graph: %s\n", co_error_last());
            }
        }
        for (size_t i = 0; rc == 0 && i < all.len; i++) {
            if (classify(all.items[i].obj) != OBJ_COMPONENT) {
                continue; /* other objects have no place in the graph */
            }
            rc = graph_add_component(&g, all.items[i].obj, ns ? ns : "default");
            if (rc < 0) {
                print_place(err, &all.items[i]);
                fprintf(err, "error: %s\n", co_error_last());
            }
        }
        manifests_dispose(&all);
    }
    if (rc == 0) {
        rc = print_dot(out, &g);
        if (rc < 0) {
            fprintf(err, "component-controller graph: %s\n", co_error_last());
        }
    }
    graph_dispose(&g);
    return rc < 0 ? EXIT_BAD_INPUT : 0;
}

/* --- render ---------------------------------------------------------------------------------- */

/* Everything `render` hands to co_render, gathered from flags, a Component and its Secrets. */
typedef struct render_args {
    char *dir; /* DIR joined with spec.path */
    char *ns;  /* placement from the Component, or NULL */
    char *name;
    struct json_object *component; /* from --component, or NULL */
    struct json_object *values;    /* merged */
    struct json_object *post_build;
    struct json_object *substitutions; /* object of strings */
    co_sops_keys *keys;
    int64_t revision;
    unsigned flags;
} render_args;

static void render_args_dispose(render_args *a)
{
    free(a->dir);
    free(a->ns);
    free(a->name);
    json_object_put(a->component);
    json_object_put(a->values);
    json_object_put(a->post_build);
    json_object_put(a->substitutions);
    co_sops_keys_free(a->keys);
    memset(a, 0, sizeof(*a));
}

/* The Secret @p name among the --secret manifests, or NULL. */
static const manifest *find_secret(const manifest_list *secrets, const char *name)
{
    for (size_t i = 0; i < secrets->len; i++) {
        const struct json_object *o = secrets->items[i].obj;
        const char *kind = str_member(o, "kind", NULL);
        const char *n = str_member(o, "metadata", "name");
        if (kind && n && strcmp(kind, "Secret") == 0 && strcmp(n, name) == 0) {
            return &secrets->items[i];
        }
    }
    return NULL;
}

/*
 * The value of @p key of a Secret (stringData wins over data, as the API server merges them).
 * @return 0, CO_ENOTFOUND (no such key), CO_EINVALID (bad base64).
 */
static int secret_value(co_buf *out, const manifest *secret, const char *key)
{
    const char *s = str_member(secret->obj, "stringData", key);
    if (s) {
        return co_buf_puts(out, s);
    }
    s = str_member(secret->obj, "data", key);
    if (!s) {
        return CO_ENOTFOUND;
    }
    if (co_base64_decode(out, s, strlen(s), CO_BASE64_STD) < 0) {
        return co_error_wrap("%s:%d: Secret data.%s", secret->file, secret->line, key);
    }
    return 0;
}

/* valuesFrom: each referenced Secret key (or values, values.yaml, values.yml) merged in. */
static int
merge_values_from(struct json_object *values, const co_component *c, const manifest_list *secrets)
{
    for (size_t i = 0; i < c->spec.n_values_from; i++) {
        const co_secret_key_ref *ref = &c->spec.values_from[i];
        const manifest *secret = find_secret(secrets, ref->name);
        if (!secret) {
            return co_error_set(CO_ENOTFOUND,
                                "spec.valuesFrom[%zu]: Secret \"%s\" not given (--secret FILE)", i,
                                ref->name);
        }
        const char *fallbacks[] = {"values", "values.yaml", "values.yml"};
        co_buf b = CO_BUF_INIT(CO_MAX_DOCUMENT);
        int rc = CO_ENOTFOUND;
        if (ref->key) {
            rc = secret_value(&b, secret, ref->key);
        }
        for (size_t k = 0; !ref->key && rc == CO_ENOTFOUND && k < CO_ARRAY_SIZE(fallbacks); k++) {
            rc = secret_value(&b, secret, fallbacks[k]);
        }
        if (rc == CO_ENOTFOUND) {
            co_buf_dispose(&b);
            return co_error_set(CO_ENOTFOUND, "spec.valuesFrom[%zu]: Secret \"%s\" has no key %s",
                                i, ref->name, ref->key ? ref->key : "values(.yaml|.yml)");
        }
        if (rc < 0) {
            co_buf_dispose(&b);
            return rc;
        }
        struct json_object *v = NULL;
        rc = co_yaml_parse(&v, co_buf_cstr(&b), b.len, 0);
        co_buf_dispose(&b);
        if (rc < 0) {
            return co_error_wrap("spec.valuesFrom[%zu]: Secret \"%s\"", i, ref->name);
        }
        if (v && !json_object_is_type(v, json_type_object)) {
            json_object_put(v);
            return co_error_set(CO_EINVALID,
                                "spec.valuesFrom[%zu]: Secret \"%s\": values are not a mapping", i,
                                ref->name);
        }
        if (v) {
            co_json_merge(values, v);
        }
        json_object_put(v);
    }
    return 0;
}

/* Adds every key of the Secret @p secret to @p vars (later calls win). */
static int add_secret_variables(struct json_object *vars, const manifest *secret)
{
    const char *maps[] = {"data", "stringData"};
    for (size_t m = 0; m < CO_ARRAY_SIZE(maps); m++) {
        struct json_object *map = co_json_get(secret->obj, maps[m], NULL);
        if (!json_object_is_type(map, json_type_object)) {
            continue;
        }
        json_object_object_foreach (map, key, val) {
            (void)val;
            co_buf b = CO_BUF_INIT(CO_MAX_DOCUMENT);
            int rc = secret_value(&b, secret, key);
            if (rc < 0) {
                co_buf_dispose(&b);
                return rc;
            }
            json_object_object_add(vars, key,
                                   json_object_new_string_len(co_buf_cstr(&b), (int)b.len));
            co_buf_dispose(&b);
        }
    }
    return 0;
}

/* Takes path, placement, values, postBuild and decryption keys from the Component @p c. */
static int gather_component(render_args *a, const co_component *c, const manifest_list *secrets)
{
    if (c->spec.path && c->spec.path[0]) {
        char *joined = co_xasprintf("%s/%s", a->dir, c->spec.path);
        free(a->dir);
        a->dir = joined;
    }
    const char *ns = c->spec.ns ? c->spec.ns : c->ns;
    const char *name = c->spec.name ? c->spec.name : c->name;
    a->ns = ns ? strdup(ns) : NULL;
    a->name = name ? strdup(name) : NULL;
    int rc = merge_values_from(a->values, c, secrets);
    if (rc == 0 && c->spec.values && json_object_is_type(c->spec.values, json_type_object)) {
        co_json_merge(a->values, c->spec.values);
    }
    if (rc == 0 && c->spec.has_decryption) {
        const manifest *secret = find_secret(secrets, c->spec.decryption_secret_name);
        if (!secret) {
            return co_error_set(
                CO_ENOTFOUND, "spec.decryption.secretRef: Secret \"%s\" not given (--secret FILE)",
                c->spec.decryption_secret_name);
        }
        rc = co_sops_keys_add_secret(a->keys, secret->obj);
        if (rc < 0) {
            return co_error_wrap("%s:%d: Secret \"%s\"", secret->file, secret->line,
                                 c->spec.decryption_secret_name);
        }
    }
    for (size_t i = 0; rc == 0 && i < c->spec.n_substitute_from; i++) {
        const manifest *secret = find_secret(secrets, c->spec.substitute_from[i]);
        if (!secret) {
            return co_error_set(CO_ENOTFOUND,
                                "spec.postBuild.substituteFrom[%zu]: Secret \"%s\" not given "
                                "(--secret FILE)",
                                i, c->spec.substitute_from[i]);
        }
        rc = add_secret_variables(a->substitutions, secret);
    }
    for (size_t i = 0; rc == 0 && i < c->spec.substitute.len; i++) {
        json_object_object_add(a->substitutions, c->spec.substitute.keys[i],
                               json_object_new_string(c->spec.substitute.values[i]));
    }
    return rc;
}

/* Reads the Component of --component: exactly one, valid as the webhook would admit it. */
static int read_component(struct json_object **out, co_component **parsed, const char *path)
{
    manifest_list l = {NULL, 0, 0};
    int rc = read_manifests(&l, path, false);
    if (rc < 0) {
        return rc;
    }
    if (l.len != 1 || classify(l.items[0].obj) != OBJ_COMPONENT) {
        manifests_dispose(&l);
        return co_error_set(CO_EINVALID, "%s: expected exactly one Component", path);
    }
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    if (co_component_validate(&errs, l.items[0].obj, NULL, 0) < 0) {
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        rc = co_field_errors_format(&b, &errs);
        rc = co_error_set(CO_EINVALID, "%s:%d: %s", path, l.items[0].line,
                          rc == 0 ? co_buf_cstr(&b) : "invalid Component");
        co_buf_dispose(&b);
        co_field_errors_dispose(&errs);
        manifests_dispose(&l);
        return rc;
    }
    co_field_errors_dispose(&errs);
    rc = co_component_parse(parsed, l.items[0].obj);
    if (rc < 0 || *parsed == NULL) {
        manifests_dispose(&l);
        return rc < 0 ? co_error_wrap("%s", path)
                      : co_error_set(CO_EINVALID, "%s: not a Component", path);
    }
    *out = json_object_get(l.items[0].obj);
    manifests_dispose(&l);
    return 0;
}

/* --decryption-keys DIR: every *.agekey and *.asc file, as the entries of a decryption Secret. */
static int read_key_dir(co_sops_keys *keys, const char *dir)
{
    co_vfs *fs = NULL;
    if (co_vfs_new_disk(&fs, dir) < 0) {
        return co_error_set(CO_ENOTFOUND, "--decryption-keys %s: not a directory", dir);
    }
    char **names = NULL;
    size_t n = 0;
    int rc = co_vfs_list(&names, &n, fs, "");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        size_t len = strlen(names[i]);
        bool age = len > 7 && strcmp(names[i] + len - 7, ".agekey") == 0;
        bool pgp = len > 4 && strcmp(names[i] + len - 4, ".asc") == 0;
        if (!age && !pgp) {
            continue;
        }
        char *data = NULL;
        size_t dlen = 0;
        rc = co_vfs_read(&data, &dlen, fs, names[i]);
        if (rc == 0) {
            rc = co_sops_keys_add(keys, names[i], data, dlen);
        }
        if (data) {
            memset(data, 0, dlen);
        }
        free(data);
        if (rc < 0) {
            rc = co_error_wrap("%s/%s", dir, names[i]);
        }
    }
    co_vfs_strv_free(names);
    co_vfs_free(fs);
    return rc;
}

/* --substitute-from FILE: a mapping of strings, or a Secret or ConfigMap manifest. */
static int read_substitute_file(struct json_object *vars, const char *path)
{
    manifest_list l = {NULL, 0, 0};
    int rc = read_manifests(&l, path, false);
    for (size_t i = 0; rc == 0 && i < l.len; i++) {
        const manifest *m = &l.items[i];
        const char *kind = str_member(m->obj, "kind", NULL);
        if (kind && strcmp(kind, "Secret") == 0) {
            rc = add_secret_variables(vars, m);
            continue;
        }
        struct json_object *map = m->obj;
        if (kind && strcmp(kind, "ConfigMap") == 0) {
            map = co_json_get(m->obj, "data", NULL);
        }
        if (!json_object_is_type(map, json_type_object)) {
            rc = co_error_set(CO_EINVALID,
                              "%s:%d: expected a mapping of variables, a ConfigMap or a Secret",
                              path, m->line);
            break;
        }
        json_object_object_foreach (map, key, val) {
            if (!json_object_is_type(val, json_type_string)) {
                rc = co_error_set(CO_EINVALID, "%s:%d: variable %s: not a string", path, m->line,
                                  key);
                break;
            }
            json_object_object_add(vars, key, json_object_get(val));
        }
    }
    manifests_dispose(&l);
    return rc;
}

static int gather_render_args(render_args *a,
                              const char *dir,
                              const char *component_file,
                              const co_flag_list *secret_files,
                              const co_flag_list *values_files,
                              const co_flag_list *sets,
                              const char *key_dir,
                              const co_flag_list *subst_files,
                              const co_flag_list *substs)
{
    a->dir = strdup(dir);
    a->values = json_object_new_object();
    a->substitutions = json_object_new_object();
    CO_ASSERT(co_sops_keys_new(&a->keys) == 0);
    int rc = 0;
    if (component_file) {
        manifest_list secrets = {NULL, 0, 0};
        for (size_t i = 0; rc == 0 && i < secret_files->len; i++) {
            rc = read_manifests(&secrets, secret_files->items[i], false);
        }
        co_component *c = NULL;
        if (rc == 0) {
            rc = read_component(&a->component, &c, component_file);
        }
        if (rc == 0 && c) { /* read_component() sets c when it succeeds */
            rc = gather_component(a, c, &secrets);
            if (rc < 0) {
                rc = co_error_wrap("%s", component_file);
            }
        }
        if (rc == 0) {
            a->post_build = json_object_get(co_json_get(a->component, "spec", "postBuild", NULL));
        }
        co_component_free(c);
        manifests_dispose(&secrets);
    } else if (secret_files->len > 0) {
        return co_error_set(CO_EINVALID, "--secret is only used with --component");
    }
    for (size_t i = 0; rc == 0 && i < values_files->len; i++) {
        struct json_object *v = NULL;
        rc = read_document(&v, values_files->items[i]);
        if (rc == 0 && v && !json_object_is_type(v, json_type_object)) {
            rc = co_error_set(CO_EINVALID, "%s: values must be a mapping, not %s",
                              values_files->items[i], co_json_type_name(v));
        }
        if (rc == 0 && v) {
            co_json_merge(a->values, v);
        }
        json_object_put(v);
    }
    for (size_t i = 0; rc == 0 && i < sets->len; i++) {
        rc = apply_set(a->values, sets->items[i]);
    }
    if (rc == 0 && key_dir) {
        rc = read_key_dir(a->keys, key_dir);
    }
    for (size_t i = 0; rc == 0 && i < subst_files->len; i++) {
        rc = read_substitute_file(a->substitutions, subst_files->items[i]);
    }
    for (size_t i = 0; rc == 0 && i < substs->len; i++) {
        const char *eq = strchr(substs->items[i], '=');
        if (!eq || eq == substs->items[i]) {
            rc =
                co_error_set(CO_EINVALID, "--substitute %s: expected NAME=VALUE", substs->items[i]);
            break;
        }
        char *key = strndup(substs->items[i], (size_t)(eq - substs->items[i]));
        json_object_object_add(a->substitutions, key, json_object_new_string(eq + 1));
        free(key);
    }
    return rc;
}

/*
 * --kube-version X.Y[.Z] (a leading `v` allowed): the version.Info the templated kustomization
 * sees as kubernetesVersion, as discovery would report that server.
 */
static int kube_version_info(struct json_object **out, const char *text)
{
    co_semver v;
    if (co_semver_parse(&v, text) < 0) {
        return co_error_set(CO_EINVALID, "--kube-version %s: expected X.Y or X.Y.Z", text);
    }
    char *major = co_xasprintf("%llu", (unsigned long long)v.major);
    char *minor = co_xasprintf("%llu", (unsigned long long)v.minor);
    char *git = co_xasprintf("v%llu.%llu.%llu", (unsigned long long)v.major,
                             (unsigned long long)v.minor, (unsigned long long)v.patch);
    co_semver_dispose(&v);
    struct json_object *info = json_object_new_object();
    json_object_object_add(info, "major", json_object_new_string(major));
    json_object_object_add(info, "minor", json_object_new_string(minor));
    json_object_object_add(info, "gitVersion", json_object_new_string(git));
    free(major);
    free(minor);
    free(git);
    *out = info;
    return 0;
}

/*
 * --api-versions G/V[/K] (or V for the core group): checked, and gathered into the
 * APIResourceList array the templated kustomization sees as apiResources (one list per
 * group/version, one resource per kind given).
 */
static int api_resource_lists(struct json_object **out, const co_flag_list *versions)
{
    struct json_object *lists = json_object_new_array();
    for (size_t i = 0; i < versions->len; i++) {
        const char *text = versions->items[i];
        const char *s1 = strchr(text, '/');
        const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
        bool bad = text[0] == '\0' || text[0] == '/' || (s1 && s1[1] == '\0') ||
                   (s1 && s1[1] == '/') || (s2 && (s2[1] == '\0' || strchr(s2 + 1, '/')));
        if (bad) {
            json_object_put(lists);
            return co_error_set(CO_EINVALID, "--api-versions %s: expected GROUP/VERSION[/KIND]",
                                text);
        }
        char *gv = s2 ? strndup(text, (size_t)(s2 - text)) : strdup(text);
        CO_ASSERT(gv != NULL);
        struct json_object *list = NULL;
        for (size_t k = 0; k < json_object_array_length(lists) && !list; k++) {
            struct json_object *l = json_object_array_get_idx(lists, k);
            if (strcmp(json_object_get_string(co_json_get(l, "groupVersion", NULL)), gv) == 0) {
                list = l;
            }
        }
        if (!list) {
            list = json_object_new_object();
            json_object_object_add(list, "kind", json_object_new_string("APIResourceList"));
            json_object_object_add(list, "groupVersion", json_object_new_string(gv));
            json_object_object_add(list, "resources", json_object_new_array());
            json_object_array_add(lists, list);
        }
        free(gv);
        if (s2) {
            struct json_object *res = json_object_new_object();
            json_object_object_add(res, "kind", json_object_new_string(s2 + 1));
            json_object_array_add(co_json_get(list, "resources", NULL), res);
        }
    }
    *out = lists;
    return 0;
}

static int run_render(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = find("render");
    co_flag_list values_files = {NULL, 0};
    co_flag_list sets = {NULL, 0};
    co_flag_list api_versions = {NULL, 0};
    co_flag_list substs = {NULL, 0};
    co_flag_list subst_files = {NULL, 0};
    co_flag_list secret_files = {NULL, 0};
    const char *ns = NULL;
    const char *name = NULL;
    const char *kube_version = NULL;
    const char *key_dir = NULL;
    const char *component_file = NULL;
    const char *format_name = NULL;
    const char *release_service = NULL;
    long long revision = 1;
    int no_hook_mapping = 0;
    int help = 0;
    const char *cpu_budget = NULL;
    const char *memory_budget = NULL;
    const co_flag flags[] = {
        {"values", CO_FLAG_LIST, &values_files, "FILE",
         "values (YAML or JSON mapping), deep-merged in order over the Component's (repeatable)"},
        {"set", CO_FLAG_LIST, &sets, "PATH=VALUE",
         "set a value after all --values (repeatable; typed as helm --set types it)"},
        {"namespace", CO_FLAG_STRING, &ns, "NS",
         "placement namespace (default: the Component's, else \"default\")"},
        {"name", CO_FLAG_STRING, &name, "NAME",
         "placement name (default: the Component's, else the directory's base name)"},
        {"kube-version", CO_FLAG_STRING, &kube_version, "X.Y[.Z]",
         "Kubernetes version for .Capabilities.KubeVersion and kubernetesVersion"},
        {"api-versions", CO_FLAG_LIST, &api_versions, "G/V[/K]",
         "an API version the cluster serves: .Capabilities.APIVersions, apiResources (repeatable)"},
        {"revision", CO_FLAG_INT, &revision, "N",
         "component revision: 1 renders an install, more an upgrade (default 1)"},
        {"decryption-keys", CO_FLAG_STRING, &key_dir, "DIR",
         "SOPS keys: the *.agekey and *.asc files of DIR, as in a decryption Secret"},
        {"substitute", CO_FLAG_LIST, &substs, "NAME=VALUE",
         "a postBuild variable; wins over every other source (repeatable)"},
        {"substitute-from", CO_FLAG_LIST, &subst_files, "FILE",
         "postBuild variables: a mapping of strings, a ConfigMap or a Secret (repeatable)"},
        {"component", CO_FLAG_STRING, &component_file, "FILE",
         "take path, values, valuesFrom, decryption, postBuild and placement from a Component"},
        {"secret", CO_FLAG_LIST, &secret_files, "FILE",
         "Secrets the --component references (valuesFrom, decryption, substituteFrom)"},
        {"no-hook-mapping", CO_FLAG_BOOL, &no_hook_mapping, NULL,
         "leave Helm hooks as Helm renders them (comparable with helm template)"},
        {"release-service", CO_FLAG_STRING, &release_service, "NAME",
         "Helm's .Release.Service (default: " CO_HELM_OPERATOR_SERVICE
         ", as the controller; helm template: Helm)"},
        {"o", CO_FLAG_STRING, &format_name, "FORMAT", "output format: yaml (default) or json"},
        {"output", CO_FLAG_STRING, &format_name, "FORMAT", "same as -o"},
        {"render-cpu-budget", CO_FLAG_STRING, &cpu_budget, "DURATION",
         "CPU time the render may take, as in the controller (default 30s)"},
        {"render-memory-budget", CO_FLAG_STRING, &memory_budget, "BYTES",
         "memory the render may take, as in the controller (default 64Mi)"},
        {"help", CO_FLAG_BOOL, &help, NULL, "print this help and exit"},
    };
    co_flag_list *lists[] = {&values_files, &sets,        &api_versions,
                             &substs,       &subst_files, &secret_files};
    int next = 0;
    int status = parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
    output_format fmt = FORMAT_YAML;
    if (status < 0 && format_name && parse_format(&fmt, format_name) < 0) {
        fprintf(err, "component-controller render: %s\n", co_error_last());
        status = EXIT_USAGE;
    }
    if (status < 0 && argc - next != 1) {
        fprintf(err, "component-controller render: expected one directory, got %d arguments\n",
                argc - next);
        status = EXIT_USAGE;
    }
    if (status < 0 && revision < 1) {
        fprintf(err, "component-controller render: --revision must be at least 1\n");
        status = EXIT_USAGE;
    }
    if (status < 0) {
        status = apply_budget(cmd, cpu_budget, memory_budget, err);
    }
    if (status >= 0) {
        for (size_t i = 0; i < CO_ARRAY_SIZE(lists); i++) {
            co_flag_list_dispose(lists[i]);
        }
        return status;
    }
    const char *dir = argv[next];
    render_args a;
    memset(&a, 0, sizeof(a));
    int rc = gather_render_args(&a, dir, component_file, &secret_files, &values_files, &sets,
                                key_dir, &subst_files, &substs);
    struct json_object *server_version = NULL;
    struct json_object *api_resources = NULL;
    if (rc == 0 && kube_version) {
        rc = kube_version_info(&server_version, kube_version);
    }
    if (rc == 0 && api_versions.len > 0) {
        rc = api_resource_lists(&api_resources, &api_versions);
    }
    struct stat st;
    if (rc == 0 && (stat(a.dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        rc = co_error_set(CO_ENOTFOUND, "%s: not a directory", a.dir);
    }
    struct json_object *objects = NULL;
    if (rc == 0) {
        const char *base = base_name(dir);
        co_render_input in;
        memset(&in, 0, sizeof(in));
        in.dir = a.dir;
        in.namespace = ns ? ns : a.ns ? a.ns : "default";
        in.name = name ? name : a.name ? a.name : base;
        in.component = a.component;
        in.revision = revision;
        in.values = a.values;
        in.kube_version = kube_version;
        in.api_versions = api_versions.items;
        in.n_api_versions = api_versions.len;
        in.server_version = server_version;
        in.api_resources = api_resources;
        in.release_service = release_service;
        in.keys = co_sops_keys_count(a.keys) > 0 ? a.keys : NULL;
        in.post_build = a.post_build;
        in.substitutions = json_object_object_length(a.substitutions) > 0 ? a.substitutions : NULL;
        in.flags = no_hook_mapping ? CO_RENDER_NO_HOOK_MAPPING : 0u;
        rc = co_render(&objects, &in);
        if (rc < 0) {
            rc = co_error_wrap("%s", dir);
        }
    }
    if (rc == 0) {
        rc = print_objects(out, objects, fmt);
    }
    if (rc < 0) {
        fprintf(err, "component-controller render: %s\n", co_error_last());
    }
    json_object_put(objects);
    json_object_put(server_version);
    json_object_put(api_resources);
    render_args_dispose(&a);
    for (size_t i = 0; i < CO_ARRAY_SIZE(lists); i++) {
        co_flag_list_dispose(lists[i]);
    }
    return rc < 0 ? EXIT_BAD_INPUT : 0;
}

/* --- dispatch -------------------------------------------------------------------------------- */

static const subcommand subcommands[] = {
    {"kustomize", "[flags] DIR",
     "Builds the kustomization in DIR without templating, as kubectl kustomize DIR does",
     run_kustomize},
    {"template", "[flags] TEMPLATE_FILE...",
     "Renders Go templates with the full function set; the files form one template set and the "
     "first is executed",
     run_template},
    {"validate", "[flags] FILE...",
     "Validates Component and ComponentPolicy manifests with the admission webhooks' rules, "
     "dependency cycles over the given set included",
     run_validate},
    {"graph", "[flags] FILE... | --kubeconfig PATH",
     "Prints the dependency graph of Components as Graphviz DOT: states as colours, cycles in "
     "red",
     run_graph},
    {"render", "[flags] DIR",
     "Renders DIR as the controller renders a Component's source (Helm chart if DIR/Chart.yaml "
     "exists, else the templated kustomization) and prints the objects in generator order",
     run_render},
};

static const subcommand *find(const char *name)
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
    return arg && find(arg) != NULL;
}

void ctl_cli_usage(FILE *out)
{
    fprintf(out, "Subcommands (offline; see component-controller SUBCOMMAND --help):\n");
    for (size_t i = 0; i < CO_ARRAY_SIZE(subcommands); i++) {
        fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    }
    fprintf(out, "\n");
}

int ctl_cli_main(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = argc > 0 ? find(argv[0]) : NULL;
    if (!cmd) {
        fprintf(err, "component-controller: unknown subcommand \"%s\"\n", argc > 0 ? argv[0] : "");
        ctl_cli_usage(err);
        return EXIT_USAGE;
    }
    int status = cmd->run(argc, argv, out, err);
    fflush(out);
    return status;
}
