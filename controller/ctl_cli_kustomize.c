/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `component-controller kustomize`: builds the kustomization in a directory without templating,
 * as `kubectl kustomize` does. The file tree is the whole file system, so bases and components
 * anywhere (`../base`, `../../components/x`) load as kustomize loads them; files obey
 * `--load-restrictor`.
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "co/render/kustomize.h"
#include "controller/ctl_cli_int.h"

int ctl_cli__run_kustomize(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = ctl_cli__find("kustomize");
    const char *format_name = NULL;
    const char *restrictor = NULL;
    int help = 0;
    const co_flag flags[] = {
        {"o", CO_FLAG_STRING, &format_name, "FORMAT", "output format: yaml (default) or json"},
        {"output", CO_FLAG_STRING, &format_name, "FORMAT", "same as -o"},
        {"load-restrictor", CO_FLAG_STRING, &restrictor, "RULE",
         "LoadRestrictionsRootOnly (default: files in or below each kustomization's directory) "
         "or LoadRestrictionsNone"},
        {"help", CO_FLAG_BOOL, &help, NULL, "print this help and exit"},
    };
    int next = 0;
    int status =
        ctl_cli__parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
    if (status >= 0) {
        return status;
    }
    output_format fmt = FORMAT_YAML;
    if (format_name && ctl_cli__parse_format(&fmt, format_name) < 0) {
        fprintf(err, "component-controller kustomize: %s\n", co_error_last());
        return EXIT_USAGE;
    }
    co_kustomize_options opts = CO_KUSTOMIZE_OPTIONS_INIT;
    opts.shown_prefix = "/";
    if (restrictor && strcmp(restrictor, "LoadRestrictionsNone") == 0) {
        opts.load_restrictor = CO_KUSTOMIZE_LOAD_NONE;
    } else if (restrictor && strcmp(restrictor, "LoadRestrictionsRootOnly") != 0) {
        fprintf(err,
                "component-controller kustomize: illegal flag value --load-restrictor %s; legal "
                "values: [LoadRestrictionsRootOnly LoadRestrictionsNone]\n",
                restrictor);
        return EXIT_USAGE;
    }
    if (argc - next != 1) {
        fprintf(err, "component-controller kustomize: expected one directory, got %d arguments\n",
                argc - next);
        return EXIT_USAGE;
    }
    const char *dir = argv[next];

    co_vfs *fs = NULL;
    char abs[PATH_MAX];
    if (!realpath(dir, abs) || co_vfs_new_disk(&fs, "/") < 0 ||
        co_vfs_stat(fs, abs + 1) != CO_VFS_DIR) {
        co_vfs_free(fs);
        fprintf(err, "component-controller kustomize: %s: not a directory\n", dir);
        return EXIT_BAD_INPUT;
    }
    struct json_object *objects = NULL;
    int rc = co_kustomize_build(&objects, fs, abs + 1, &opts);
    co_vfs_free(fs);
    if (rc < 0) {
        fprintf(err, "component-controller kustomize: %s: %s\n", dir, co_error_last());
        return EXIT_BAD_INPUT;
    }
    rc = ctl_cli__print_objects(out, objects, fmt);
    json_object_put(objects);
    if (rc < 0) {
        fprintf(err, "component-controller kustomize: %s\n", co_error_last());
        return EXIT_BAD_INPUT;
    }
    return 0;
}
