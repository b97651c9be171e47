/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Offline subcommands of component-controller. Each subcommand parses its own flags with
 * co/flags, reads local files only, and prints objects in generator order.
 */
#include "controller/ctl_cli.h"

#include <string.h>

#include <json-c/json.h>

#include "co/error.h"
#include "co/flags.h"
#include "co/json.h"
#include "co/kustomize.h"
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

/* --- dispatch -------------------------------------------------------------------------------- */

static const subcommand subcommands[] = {
    {"kustomize", "[flags] DIR",
     "Builds the kustomization in DIR without templating, as kubectl kustomize DIR does",
     run_kustomize},
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
