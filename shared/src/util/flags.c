/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command-line flag parsing shared by both daemons and the offline CLI. Kept deliberately small:
 * four value types, Go-style single or double dashes, flag families for accepting what Go
 * daemons are commonly started with, and precise error messages. The logging flags map
 * controller-runtime's zap flags onto co_log's level and format.
 */
#include "co/util/flags.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "co/util/error.h"

static const co_flag *find(const co_flag *flags, size_t n, const char *name, size_t len)
{
    const co_flag *family = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t flen = strlen(flags[i].name);
        if (flen == len && strncmp(flags[i].name, name, len) == 0) {
            return &flags[i];
        }
        if (!family && flen > 1 && flags[i].name[flen - 1] == '*' && len >= flen &&
            strncmp(flags[i].name, name, flen - 1) == 0) {
            family = &flags[i];
        }
    }
    return family;
}

static int is_family(const co_flag *f)
{
    size_t n = strlen(f->name);
    return n > 1 && f->name[n - 1] == '*';
}

/* strconv.ParseBool's spellings, which Go's flag package accepts for boolean flags. */
static int parse_bool(int *out, const char *v)
{
    static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
    static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(yes); i++) {
        if (strcmp(v, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcmp(v, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

static int set_value(const co_flag *f, const char *value)
{
    switch (f->type) {
    case CO_FLAG_BOOL:
        if (parse_bool(f->target, value) < 0) {
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
        if (is_family(f)) {
            co_flag_list *l = f->target;
            l->items = co_xreallocarray(l->items, l->len + 1, sizeof(*l->items));
            l->items[l->len++] = arg;
            /* a separate value cannot be told from a bool's next argument: take what looks
             * like one, which for a daemon (no positional arguments) is never wrong */
            i += !eq && i + 1 < argc && argv[i + 1][0] != '-' ? 2 : 1;
            continue;
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

/* ---- logging flags ----------------------------------------------------------------------- */

typedef struct strv {
    char **items;
    size_t len;
} strv;

static void strv_add(strv *v, char *s)
{
    v->items = co_xreallocarray(v->items, v->len + 2, sizeof(char *));
    v->items[v->len++] = s;
    v->items[v->len] = NULL;
}

void co_flags_strv_free(char **v)
{
    if (!v) {
        return;
    }
    for (char **p = v; *p; p++) {
        free(*p);
    }
    free(v);
}

/* controller-runtime's levelFlag: debug, info, error, panic, or an integer > 0 that logr turns
 * into zap level -N (1 is debug; more is finer than anything but our trace). */
static int zap_level(co_log_level *out, const char *v)
{
    static const struct {
        const char *name;
        co_log_level level;
    } names[] = {{"debug", CO_LOG_DEBUG},
                 {"info", CO_LOG_INFO},
                 {"warn", CO_LOG_WARN},
                 {"error", CO_LOG_ERROR},
                 {"panic", CO_LOG_ERROR}};
    for (size_t i = 0; i < CO_ARRAY_SIZE(names); i++) {
        if (strcasecmp(v, names[i].name) == 0) {
            *out = names[i].level;
            return 0;
        }
    }
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n <= 0) {
        return co_error_set(CO_EINVALID,
                            "flag --zap-log-level: invalid log level \"%s\": expected debug, info, "
                            "error, panic or an integer > 0",
                            v);
    }
    *out = n == 1 ? CO_LOG_DEBUG : CO_LOG_TRACE;
    return 0;
}

int co_flags_logging_resolve(co_log_level *level_out,
                             co_log_format *format_out,
                             char ***warnings_out,
                             const co_flags_logging *lf)
{
    co_log_level level = lf->zap_devel ? CO_LOG_DEBUG : CO_LOG_INFO;
    co_log_format format = CO_LOG_FORMAT_TEXT;
    strv w = {0};
    int rc = 0;
    if (lf->zap_log_level && (rc = zap_level(&level, lf->zap_log_level)) < 0) {
        goto done;
    }
    if (lf->zap_encoder) {
        if (strcasecmp(lf->zap_encoder, "json") == 0) {
            format = CO_LOG_FORMAT_JSON;
        } else if (strcasecmp(lf->zap_encoder, "console") != 0) {
            rc = co_error_set(CO_EINVALID,
                              "flag --zap-encoder: invalid encoder value \"%s\": expected json or "
                              "console",
                              lf->zap_encoder);
            goto done;
        }
    }
    if (lf->log_level && (rc = co_log_level_parse(&level, lf->log_level)) < 0) {
        rc = co_error_wrap("flag --log-level");
        goto done;
    }
    if (lf->log_format && (rc = co_log_format_parse(&format, lf->log_format)) < 0) {
        rc = co_error_wrap("flag --log-format");
        goto done;
    }
    if (lf->zap_stacktrace_level) {
        const char *v = lf->zap_stacktrace_level;
        if (strcasecmp(v, "info") != 0 && strcasecmp(v, "error") != 0 &&
            strcasecmp(v, "panic") != 0) {
            rc = co_error_set(CO_EINVALID,
                              "flag --zap-stacktrace-level: invalid stacktrace level \"%s\": "
                              "expected info, error or panic",
                              v);
            goto done;
        }
        strv_add(&w, co_xasprintf("flag --zap-stacktrace-level=%s has no effect: no stack traces "
                                  "are logged",
                                  v));
    }
    if (lf->zap_time_encoding) {
        static const char *const encodings[] = {"epoch",   "millis",  "nanos",
                                                "iso8601", "rfc3339", "rfc3339nano"};
        const char *v = lf->zap_time_encoding;
        size_t i = 0;
        while (i < CO_ARRAY_SIZE(encodings) && strcasecmp(v, encodings[i]) != 0) {
            i++;
        }
        if (i == CO_ARRAY_SIZE(encodings)) {
            rc = co_error_set(CO_EINVALID,
                              "flag --zap-time-encoding: invalid time-encoding value \"%s\": "
                              "expected epoch, millis, nanos, iso8601, rfc3339 or rfc3339nano",
                              v);
            goto done;
        }
        /* our timestamps (2006-01-02T15:04:05.000Z) are RFC 3339 and ISO 8601 alike */
        if (i < 3) {
            strv_add(&w, co_xasprintf("flag --zap-time-encoding=%s has no effect: times are "
                                      "logged as RFC 3339 in UTC",
                                      v));
        }
    }
    for (size_t i = 0; i < lf->zap_other.len; i++) {
        strv_add(&w, co_xasprintf("unknown flag %s ignored", lf->zap_other.items[i]));
    }
    *level_out = level;
    *format_out = format;
    *warnings_out = w.items;
    w.items = NULL;
done:
    co_flags_strv_free(w.items);
    return rc;
}

int co_flags_logging_setup(co_flags_logging *lf, const char *component)
{
    co_log_level level = CO_LOG_INFO;
    co_log_format format = CO_LOG_FORMAT_TEXT;
    char **warnings = NULL;
    int rc = co_flags_logging_resolve(&level, &format, &warnings, lf);
    co_flags_logging_dispose(lf);
    if (rc < 0) {
        return rc;
    }
    co_log_setup(component, level, format);
    for (char **w = warnings; w && *w; w++) {
        co_log(CO_LOG_WARN, *w, NULL);
    }
    co_flags_strv_free(warnings);
    return 0;
}

int co_flags_parse_command(const co_flags_command *cmd, int argc, char **argv, FILE *out, FILE *err)
{
    int next = 0;
    if (co_flags_parse(&next, cmd->flags, cmd->nflags, argc, argv) < 0) {
        fprintf(err, "%s: %s\n", cmd->program, co_error_last());
        cmd->usage(err, cmd->flags, cmd->nflags);
        return CO_FLAGS_EXIT_USAGE;
    }
    if (*cmd->help) {
        cmd->usage(out, cmd->flags, cmd->nflags);
        return 0;
    }
    if (*cmd->version) {
        fprintf(out, "%s %s\n", cmd->program, CO_VERSION);
        return 0;
    }
    if (next < argc) {
        fprintf(err, "%s: unexpected argument \"%s\"\n", cmd->program, argv[next]);
        return CO_FLAGS_EXIT_USAGE;
    }
    return -1;
}

void co_flags_logging_dispose(co_flags_logging *lf)
{
    co_flag_list_dispose(&lf->zap_other);
}
