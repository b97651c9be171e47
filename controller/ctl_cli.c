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

#include <json-c/json.h>

#include "co/buf.h"
#include "co/caps.h"
#include "co/error.h"
#include "co/flags.h"
#include "co/json.h"
#include "co/kustomize.h"
#include "co/template.h"
#include "co/vfs.h"
#include "co/yaml.h"

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
    const co_flag flags[] = {
        {"data", CO_FLAG_STRING, &data_file, "FILE",
         "YAML or JSON document that becomes the data root (. and $); none: an empty object"},
        {"set", CO_FLAG_LIST, &sets, "PATH=VALUE",
         "set a value in the data (repeatable, applied after --data; a.b\\.c for a key with a "
         "dot; true/false/null/integers are typed as helm --set types them)"},
        {"env", CO_FLAG_BOOL, &allow_env, NULL,
         "let env and expandenv read the process environment (default: every variable unset, "
         "as in the controller)"},
        {"help", CO_FLAG_BOOL, &help, NULL, "print this help and exit"},
    };
    int next = 0;
    int status = parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
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

/* --- dispatch -------------------------------------------------------------------------------- */

static const subcommand subcommands[] = {
    {"kustomize", "[flags] DIR",
     "Builds the kustomization in DIR without templating, as kubectl kustomize DIR does",
     run_kustomize},
    {"template", "[flags] TEMPLATE_FILE...",
     "Renders Go templates with the full function set; the files form one template set and the "
     "first is executed",
     run_template},
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
