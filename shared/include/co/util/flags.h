/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file flags.h
 * Table-driven command-line flags in the Go/controller-runtime style.
 *
 * Accepted forms, as Go's flag package accepts them: one or two dashes alike (`--name=value`,
 * `--name value`, `-name=value`, `-name value`), and for booleans `--name` and `--name=V` with
 * V one of strconv.ParseBool's spellings (1, t, T, true, TRUE, True and the false ones). Parsing
 * stops at `--` or at the first non-flag argument (the index is returned), so subcommands can
 * parse the rest with their own table. Unknown flags, missing values and malformed numbers are
 * reported with the flag's name. String targets point into argv (borrowed). Not thread-safe;
 * call from main().
 *
 * An entry whose name ends in `*` ("zap-*") stands for a family of flags: it takes every flag
 * that begins with the text before the `*` and that no other entry names. Its target is a
 * co_flag_list that receives each such argument whole, as written ("--zap-foo=bar"); without
 * `=value` the next argument is taken as its value unless it begins with `-`. This lets a
 * daemon accept, and report, the flags of a family it only partly supports.
 *
 * Both daemons take the same logging flags (CO_FLAGS_LOGGING): `--log-level` and `--log-format`,
 * and as aliases the zap flags controller-runtime registers, which the Go operator's Deployment
 * may pass (`--zap-devel`, `--zap-encoder`, `--zap-log-level`, `--zap-stacktrace-level`,
 * `--zap-time-encoding`).
 */
#ifndef CO_FLAGS_H
#define CO_FLAGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "co/util/common.h"
#include "co/util/log.h"

typedef enum co_flag_type {
    CO_FLAG_BOOL,   /**< target: int *, set to 0 or 1 */
    CO_FLAG_STRING, /**< target: const char **, borrowed from argv */
    CO_FLAG_INT,    /**< target: long long *, decimal */
    CO_FLAG_LIST,   /**< target: co_flag_list *, repeatable; each occurrence appends */
} co_flag_type;

/** Values of a repeatable flag, borrowed from argv; free items with co_flag_list_dispose(). */
typedef struct co_flag_list {
    const char **items;
    size_t len;
} co_flag_list;

typedef struct co_flag {
    const char *name;    /**< without leading dashes */
    co_flag_type type;   /**< kind of value */
    void *target;        /**< where the value goes (see co_flag_type) */
    const char *metavar; /**< value placeholder for the usage text, e.g. "ADDR" */
    const char *help;    /**< one-line description, including the default */
} co_flag;

/**
 * Parses flags from argv[1..argc).
 * @param[out] next_out index of the first argument that is not a flag (argc if none)
 * @return 0, or CO_EINVALID with a message naming the flag.
 */
CO_MUST_CHECK int
co_flags_parse(int *next_out, const co_flag *flags, size_t nflags, int argc, char **argv);

/** Writes the flag table as help text, one flag per line group. */
void co_flags_usage(FILE *out, const co_flag *flags, size_t nflags);

/** Exit status of a daemon whose command line is wrong. */
#define CO_FLAGS_EXIT_USAGE 2

/** A daemon's command line: how to parse it and what to print. */
typedef struct co_flags_command {
    const char *program;  /**< in messages and the version line: "component-webhook" */
    const co_flag *flags; /**< the table, including --help and --version */
    size_t nflags;
    const int *help;    /**< the target of --help */
    const int *version; /**< the target of --version */
    /** Writes the help text: a synopsis, then co_flags_usage() of the table. */
    void (*usage)(FILE *out, const co_flag *flags, size_t nflags);
} co_flags_command;

/**
 * Parses a daemon's command line, in the manner every daemon of the project shares: a wrong
 * flag prints its error and the help text to @p err; --help prints the help text to @p out;
 * --version prints "PROGRAM VERSION" to @p out; an argument that is not a flag is refused.
 * @return -1 when the daemon should go on; else the exit status to end with (0 after --help
 *         or --version, CO_FLAGS_EXIT_USAGE after an error).
 */
int co_flags_parse_command(const co_flags_command *cmd,
                           int argc,
                           char **argv,
                           FILE *out,
                           FILE *err);

/** Frees the array of a list flag (not the strings, which belong to argv). */
void co_flag_list_dispose(co_flag_list *list);

/** Targets of the logging flags (CO_FLAGS_LOGGING); zero-initialise, then parse. */
typedef struct co_flags_logging {
    const char *log_level;            /**< --log-level, NULL when not given */
    const char *log_format;           /**< --log-format, NULL when not given */
    const char *zap_log_level;        /**< --zap-log-level */
    int zap_devel;                    /**< --zap-devel */
    const char *zap_encoder;          /**< --zap-encoder */
    const char *zap_stacktrace_level; /**< --zap-stacktrace-level */
    const char *zap_time_encoding;    /**< --zap-time-encoding */
    co_flag_list zap_other;           /**< every other --zap-* flag, as written */
} co_flags_logging;

/** The entries of the logging flags, for a flag table, with @p lf a co_flags_logging *. */
// clang-format off
#define CO_FLAGS_LOGGING(lf)                                                                       \
    {"log-level", CO_FLAG_STRING, &(lf)->log_level, "LEVEL",                                       \
     "error, warn, info, debug or trace (default \"info\")"},                                      \
    {"log-format", CO_FLAG_STRING, &(lf)->log_format, "FORMAT",                                    \
     "text or json (default \"text\")"},                                                           \
    {"zap-log-level", CO_FLAG_STRING, &(lf)->zap_log_level, "LEVEL",                               \
     "controller-runtime's name for --log-level: debug, info, error, panic, or N > 0 for more "    \
     "detail (1: debug, 2 and more: trace)"},                                                      \
    {"zap-devel", CO_FLAG_BOOL, &(lf)->zap_devel, NULL,                                            \
     "development defaults: text format and level debug, unless set otherwise"},                   \
    {"zap-encoder", CO_FLAG_STRING, &(lf)->zap_encoder, "ENCODER",                                 \
     "controller-runtime's name for --log-format: console (text) or json"},                        \
    {"zap-stacktrace-level", CO_FLAG_STRING, &(lf)->zap_stacktrace_level, "LEVEL",                 \
     "accepted for compatibility (info, error or panic); no stack traces are logged"},             \
    {"zap-time-encoding", CO_FLAG_STRING, &(lf)->zap_time_encoding, "ENCODING",                    \
     "accepted for compatibility (epoch, millis, nanos, iso8601, rfc3339, rfc3339nano); times "    \
     "are always RFC 3339 in UTC"},                                                                \
    {"zap-*", CO_FLAG_LIST, &(lf)->zap_other, "VALUE",                                             \
     "other zap flags are accepted and ignored, with a warning"}
// clang-format on

/**
 * Works out the log level and format from the logging flags: --log-level and --log-format win;
 * else --zap-log-level and --zap-encoder; else --zap-devel's defaults (debug, text); else info
 * and text. Values of the zap flags are checked as controller-runtime checks them.
 * @param[out] warnings_out NULL-terminated messages about flags accepted without effect, for the
 *             daemon to log once logging is set up (free with co_flags_strv_free()); NULL
 *             when there are none
 * @return 0, or CO_EINVALID naming the flag and the value. Outputs are written only on success.
 */
CO_MUST_CHECK int co_flags_logging_resolve(co_log_level *level_out,
                                           co_log_format *format_out,
                                           char ***warnings_out,
                                           const co_flags_logging *lf);

/**
 * co_flags_logging_resolve(), then co_log_setup() for @p component, then each warning logged
 * once; @p lf is disposed in every case.
 * @return 0, or CO_EINVALID naming the flag and the value (logging left as it was).
 */
CO_MUST_CHECK int co_flags_logging_setup(co_flags_logging *lf, const char *component);

/** Frees what parsing stored in @p lf (the list of other zap flags). */
void co_flags_logging_dispose(co_flags_logging *lf);

/** Frees a NULL-terminated array of strings and the strings. NULL is a no-op. */
void co_flags_strv_free(char **v);

#endif
