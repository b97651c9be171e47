/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `component-controller template`: renders Go templates with the full function set (the files
 * form one template set; the first is executed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/render/template.h"
#include "controller/ctl_cli_int.h"

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
    opts.name = ctl_cli__base_name(files[0]);
    co_template_set *set = NULL;
    co_template_set_new(&set, funcs, &opts);
    int rc = 0;
    for (size_t i = 0; i < nfiles && rc == 0; i++) {
        char *src = NULL;
        size_t srclen = 0;
        rc = ctl_cli__read_file(&src, &srclen, files[i]);
        if (rc == 0 && srclen > CO_MAX_TEMPLATE_SOURCE) {
            rc = co_error_set(CO_ETOOBIG, "%s: larger than %zu bytes", files[i],
                              CO_MAX_TEMPLATE_SOURCE);
        }
        if (rc == 0) {
            rc = co_template_set_parse(set, ctl_cli__base_name(files[i]), src, srclen);
            if (rc < 0) {
                rc = co_error_wrap("%s", files[i]);
            }
        }
        free(src);
    }
    if (rc == 0) {
        rc = co_template_render(set, ctl_cli__base_name(files[0]), data,
                                CO_TEMPLATE_NUMBERS_FLOAT64, NULL, text, len);
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

int ctl_cli__run_template(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = ctl_cli__find("template");
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
    int status =
        ctl_cli__parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
    if (status < 0) {
        status = ctl_cli__apply_budget(cmd, cpu_budget, memory_budget, err);
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
        rc = ctl_cli__read_document(&data, data_file);
        if (rc == 0 && data && !json_object_is_type(data, json_type_object) && sets.len > 0) {
            rc = co_error_set(CO_EINVALID, "%s: --set needs an object as data, not %s", data_file,
                              co_json_type_name(data));
        }
    }
    if (rc == 0 && (!data_file || (!data && sets.len > 0))) {
        data = json_object_new_object();
    }
    for (size_t i = 0; rc == 0 && i < sets.len; i++) {
        rc = ctl_cli__apply_set(data, sets.items[i]);
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
