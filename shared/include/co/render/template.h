/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file template.h
 * Go text/template with the sprig function library and the Helm/runtime functions, rendering
 * byte for byte what the Go original renders.
 *
 * Three objects:
 * - a function set (co_template_funcs): which functions templates may call. Function names are
 *   checked when a template is parsed, as Go does, so the set is fixed before parsing;
 * - a template set (co_template_set): named parse trees sharing one function set and options.
 *   Parsing adds templates (and their {{define}}s); once parsing is done the set is immutable
 *   and may be rendered by any number of threads at once;
 * - a session (co_template_session): one render of a set with one data root. Sprig's dict
 *   functions mutate maps in place, and in Go those mutations are visible to every template
 *   executed with the same data, so a session keeps the converted data and lets the caller
 *   execute several templates against it. A session is used by one thread at a time.
 *
 * Data is handed over as json-c objects and converted the way the Go original decodes it: with
 * CO_TEMPLATE_NUMBERS_FLOAT64 every JSON number becomes a float64 (encoding/json into
 * interface{}, which is how component values and Helm values reach templates: `{{ 1000000 }}`
 * from values prints 1e+06), with CO_TEMPLATE_NUMBERS_INT64 integral numbers become int64 (the
 * Kubernetes unstructured decoding used for objects from the API server).
 *
 * Errors read like Go's: "template: NAME:LINE:COL: executing \"NAME\" at <.x.y>: ...". Every
 * resource a template can consume is capped (caps.h): source size, nesting depth, template
 * call depth, output size, memory and execution steps; exceeding one fails with CO_ETOOBIG.
 */
#ifndef CO_TEMPLATE_H
#define CO_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"

struct json_object;

typedef struct co_template_funcs co_template_funcs;
typedef struct co_template_set co_template_set;
typedef struct co_template_session co_template_session;

/** What a missing map key evaluates to (Go's Option("missingkey=...")). */
typedef enum co_template_missingkey {
    CO_TEMPLATE_MISSINGKEY_DEFAULT = 0, /**< "no value" (prints <no value>) */
    CO_TEMPLATE_MISSINGKEY_ZERO,        /**< the zero value of the map's element type */
    CO_TEMPLATE_MISSINGKEY_ERROR,       /**< execution stops with an error */
} co_template_missingkey;

/** How JSON numbers become Go numbers. */
typedef enum co_template_numbers {
    CO_TEMPLATE_NUMBERS_FLOAT64 = 0, /**< every number is a float64 (encoding/json) */
    CO_TEMPLATE_NUMBERS_INT64,       /**< integral numbers are int64 (Kubernetes objects) */
} co_template_numbers;

/** Function groups of a function set (the builtins of text/template are always present). */
enum {
    /** sprig v3's TxtFuncMap. */
    CO_TEMPLATE_FUNCS_SPRIG = 1u << 0,
    /** The runtime's overrides and additions: toYaml/fromYaml/toJson/... with errors,
     * required, include, tpl, bitwise and IPv4 helpers. The functions that need the cluster
     * or the source tree (lookup, localLookup, lookupList, listFiles, existsFile, readFile,
     * component, namespace, name, kubernetesVersion, apiResources) are not part of the group:
     * the caller registers them with co_template_funcs_add() and reaches its own state through
     * co_template_env.ctx. */
    CO_TEMPLATE_FUNCS_RUNTIME = 1u << 1,
    /** `env` and `expandenv` read the process environment. Without it they behave as if every
     * variable were unset: templates must not read the operator's environment (credentials,
     * service account paths) unless the operator is configured to allow it. */
    CO_TEMPLATE_FUNCS_ENV = 1u << 2,
    /** `getHostByName` resolves names. Without it the function fails: a template could
     * otherwise probe the cluster network from inside the operator (and DNS answers make
     * rendering non-deterministic). */
    CO_TEMPLATE_FUNCS_DNS = 1u << 3,
    /** Helm's additions that neither sprig nor the runtime have: `toToml` (BurntSushi/toml's
     * encoding; an encoding error is the result text, as in Helm). */
    CO_TEMPLATE_FUNCS_HELM = 1u << 4,
};

/**
 * A caller-provided template function. Arguments are converted to JSON (borrowed; NULL for a
 * nil value); the result is a new json-c reference (NULL means nil) that is converted with
 * the numbers mode given at registration. Return 0, or a negative co_error_code after setting
 * the message with co_error_set(); the template error then reads "error calling NAME: MSG".
 * @param ctx the session's co_template_env.ctx
 */
typedef int (*co_template_func_cb)(void *ctx,
                                   struct json_object **out,
                                   struct json_object *const *args,
                                   size_t nargs);

/** Options of a template set. Zero-initialise and set what you need. */
typedef struct co_template_options {
    const char *name;        /**< the set's own name in Go's messages; NULL = first parsed */
    const char *left_delim;  /**< NULL or "" = "{{" */
    const char *right_delim; /**< NULL or "" = "}}" */
    co_template_missingkey missingkey;
    uint64_t max_steps; /**< execution steps per session; 0 = CO_MAX_TEMPLATE_STEPS */
} co_template_options;

/** Per-session context: values and callbacks the runtime functions use. */
typedef struct co_template_env {
    void *ctx; /**< passed to caller-registered functions */
} co_template_env;

/**
 * Creates a function set with the given CO_TEMPLATE_FUNCS_* groups.
 * @param[out] out free with co_template_funcs_free()
 */
void co_template_funcs_new(co_template_funcs **out, unsigned groups);

/**
 * Adds (or replaces) a function taking @p nargs arguments (-1: any number).
 * Must happen before the set is used for parsing.
 * @return 0 or CO_EINVALID (bad name, set already in use).
 */
CO_MUST_CHECK int co_template_funcs_add(co_template_funcs *f,
                                        const char *name,
                                        int nargs,
                                        co_template_numbers numbers,
                                        co_template_func_cb cb);

/** Whether @p name is a function of the set. */
bool co_template_funcs_has(const co_template_funcs *f, const char *name);

/** Frees a function set; every template set using it must be freed first. NULL is a no-op. */
void co_template_funcs_free(co_template_funcs *f);

/**
 * Creates an empty template set.
 * @param funcs borrowed; must outlive the set
 * @param opts NULL for defaults; copied (delimiter strings too)
 */
void co_template_set_new(co_template_set **out,
                         const co_template_funcs *funcs,
                         const co_template_options *opts);

/**
 * Parses @p text as the template @p name and adds it and its definitions to the set. A later
 * definition of a name replaces an earlier one unless it is empty, as in Go.
 * @return 0, CO_EINVALID with Go's parse error ("template: NAME:LINE: ..."), CO_ETOOBIG.
 */
CO_MUST_CHECK int
co_template_set_parse(co_template_set *set, const char *name, const char *text, size_t len);

/** Whether the set has a template called @p name. */
bool co_template_set_has(const co_template_set *set, const char *name);

/** Frees a template set; no session may still use it. NULL is a no-op. */
void co_template_set_free(co_template_set *set);

/**
 * Starts a render session over a (completely parsed) set.
 * @param env NULL for none; copied
 */
void co_template_session_new(co_template_session **out,
                             const co_template_set *set,
                             const co_template_env *env);

/**
 * Sets the data root (`.` and `$`) from @p data (borrowed; NULL = nil). The data is copied into
 * the session, so @p data may change afterwards.
 * @return 0 or CO_ETOOBIG (nesting or memory caps).
 */
CO_MUST_CHECK int co_template_session_set_data(co_template_session *s,
                                               struct json_object *data,
                                               co_template_numbers numbers);

/**
 * Executes the template @p name with the session's data.
 * @param[out] out the output (free with free()), NUL-terminated
 * @param[out] len_out its length, if not NULL
 * @return 0, CO_ENOTFOUND (no such template), CO_EINVALID (template error), CO_ETOOBIG.
 */
CO_MUST_CHECK int
co_template_session_execute(co_template_session *s, const char *name, char **out, size_t *len_out);

/** Frees a session. NULL is a no-op. */
void co_template_session_free(co_template_session *s);

/** One-shot: a session with @p data, one execution of @p name, freed again. */
CO_MUST_CHECK int co_template_render(const co_template_set *set,
                                     const char *name,
                                     struct json_object *data,
                                     co_template_numbers numbers,
                                     const co_template_env *env,
                                     char **out,
                                     size_t *len_out);

/**
 * Removes every "<no value>" from @p s in place (the Helm and runtime clean-up of rendered
 * output) and returns the new length.
 */
size_t co_template_strip_no_value(char *s, size_t len);

#endif
