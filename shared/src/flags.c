/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command-line flag parsing shared by both daemons and the offline CLI. Kept deliberately small:
 * four value types, Go-style single or double dashes, and precise error messages.
 */
#include "co/flags.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "co/error.h"

static const co_flag *find(const co_flag *flags, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0) {
            return &flags[i];
        }
    }
    return NULL;
}

static int set_value(const co_flag *f, const char *value)
{
    switch (f->type) {
    case CO_FLAG_BOOL:
        if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0) {
            *(int *)f->target = 1;
        } else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0) {
            *(int *)f->target = 0;
        } else {
            return co_error_set(CO_EINVALID, "flag --%s: invalid boolean \"%s\"", f->name, value);
        }
        return 0;
    case CO_FLAG_STRING:
        *(const char **)f->target = value;
        return 0;
    case CO_FLAG_INT: {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end) {
            return co_error_set(CO_EINVALID, "flag --%s: invalid integer \"%s\"", f->name, value);
        }
        *(long long *)f->target = v;
        return 0;
    }
    case CO_FLAG_LIST: {
        co_flag_list *l = f->target;
        l->items = co_xreallocarray(l->items, l->len + 1, sizeof(*l->items));
        l->items[l->len++] = value;
        return 0;
    }
    }
    return co_error_set(CO_EINVALID, "flag --%s: unknown type", f->name);
}

int co_flags_parse(int *next_out, const co_flag *flags, size_t nflags, int argc, char **argv)
{
    int i = 1;
    while (i < argc) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-' || arg[1] == '\0') {
            break;
        }
        const char *name = arg + (arg[1] == '-' ? 2 : 1);
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const co_flag *f = find(flags, nflags, name, len);
        if (!f) {
            return co_error_set(CO_EINVALID, "unknown flag: --%.*s", (int)len, name);
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (f->type == CO_FLAG_BOOL) {
                value = "true";
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                return co_error_set(CO_EINVALID, "flag --%s needs a value", f->name);
            }
        }
        int rc = set_value(f, value);
        if (rc < 0) {
            return rc;
        }
        i++;
    }
    *next_out = i;
    return 0;
}

void co_flags_usage(FILE *out, const co_flag *flags, size_t nflags)
{
    for (size_t i = 0; i < nflags; i++) {
        const co_flag *f = &flags[i];
        /* both forms are accepted; usage shows the usual one: -o, --output */
        const char *dash = f->name[0] && !f->name[1] ? "-" : "--";
        if (f->type == CO_FLAG_BOOL) {
            fprintf(out, "  %s%s\n", dash, f->name);
        } else {
            fprintf(out, "  %s%s %s\n", dash, f->name, f->metavar ? f->metavar : "VALUE");
        }
        fprintf(out, "        %s\n", f->help);
    }
}

void co_flag_list_dispose(co_flag_list *list)
{
    free(list->items);
    list->items = NULL;
    list->len = 0;
}
