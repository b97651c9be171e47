/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file field_error.h
 * Kubernetes-style field errors: a list of (type, field path, bad value, detail) collected by
 * validation and rendered exactly the way the API server renders them.
 *
 * One error renders as `<field>: <Type>[: <value>][: <detail>]`, for example
 * `spec.updatePolicy: Unsupported value: "Foo": supported values: "Recreate", "Replace"`.
 * The value is left out for Required, Forbidden and Too long (as the API server does) and when
 * none was recorded. Strings are quoted like Go's %q; numbers, booleans and null are written
 * plainly; objects and arrays as compact JSON. A list of several errors renders as
 * `[e1, e2, ...]` (the API server's aggregate form); a single error renders alone.
 *
 * A co_field_errors is caller-embedded (co_field_errors_init()/co_field_errors_dispose()).
 * Adding never fails: identical errors are recorded once, and past CO_MAX_FIELD_ERRORS further
 * errors are only counted (`dropped`), so hostile input cannot grow the list without bound.
 * Not thread-safe.
 */
#ifndef CO_FIELD_ERROR_H
#define CO_FIELD_ERROR_H

#include <stdbool.h>
#include <stddef.h>

#include "co/util/buf.h"
#include "co/util/common.h"

struct co_jv;

struct json_object;

/** The kinds of field error, with the exact words the API server prints. */
typedef enum co_field_error_type {
    CO_FIELD_REQUIRED = 0,    /**< "Required value" (value never printed) */
    CO_FIELD_INVALID = 1,     /**< "Invalid value" */
    CO_FIELD_UNSUPPORTED = 2, /**< "Unsupported value" (detail lists the supported values) */
    CO_FIELD_FORBIDDEN = 3,   /**< "Forbidden" (value never printed) */
    CO_FIELD_DUPLICATE = 4,   /**< "Duplicate value" */
    CO_FIELD_TOO_MANY = 5,    /**< "Too many" (value = actual count) */
    CO_FIELD_TOO_LONG = 6,    /**< "Too long" (value never printed) */
    CO_FIELD_NOT_FOUND = 7,   /**< "Not found" */
} co_field_error_type;

/** One field error. All strings are owned by the containing list. */
typedef struct co_field_error {
    co_field_error_type type; /**< kind of error */
    char *field;              /**< dotted path with [i] indexes, e.g. "spec.dependencies[1].name" */
    char *value;              /**< the bad value already rendered ("\"Foo\"", "5"); NULL = none */
    char *detail;             /**< explanation; NULL = none */
} co_field_error;

/** A list of field errors (caller-embedded). */
typedef struct co_field_errors {
    co_field_error *items; /**< the recorded errors, in the order found */
    size_t len;            /**< number of recorded errors */
    size_t cap;            /**< allocated slots */
    size_t dropped;        /**< errors not recorded because the list was full */
} co_field_errors;

/** Static initialiser for an empty list. */
#define CO_FIELD_ERRORS_INIT                                                                       \
    {                                                                                              \
        NULL, 0, 0, 0                                                                              \
    }

/** Initialises @p errs as empty. */
void co_field_errors_init(co_field_errors *errs);

/** Frees every error; the list is empty and reusable afterwards. NULL is a no-op. */
void co_field_errors_dispose(co_field_errors *errs);

/** Whether the list holds no error (recorded or dropped). */
bool co_field_errors_empty(const co_field_errors *errs);

/** The words the API server prints for @p type ("Required value", ...). */
const char *co_field_error_type_name(co_field_error_type type);

/**
 * Records an error whose bad value is a JSON value (rendered as described in the file comment).
 * @param value the bad value (borrowed; NULL records JSON null; use co_field_errors_add_novalue()
 *        to record none)
 * @param detail_fmt printf format of the detail, or NULL for none
 */
void co_field_errors_add(co_field_errors *errs,
                         co_field_error_type type,
                         const char *field,
                         const struct json_object *value,
                         const char *detail_fmt,
                         ...) CO_PRINTF(5, 6);

/** co_field_errors_add() with the bad value in a co_jdoc document (NULL records JSON null). */
void co_field_errors_add_jv(co_field_errors *errs,
                            co_field_error_type type,
                            const char *field,
                            const struct co_jv *value,
                            const char *detail_fmt,
                            ...) CO_PRINTF(5, 6);

/** Records an error whose bad value is the string @p value (printed quoted). */
void co_field_errors_add_str(co_field_errors *errs,
                             co_field_error_type type,
                             const char *field,
                             const char *value,
                             const char *detail_fmt,
                             ...) CO_PRINTF(5, 6);

/** Records an error without a bad value. */
void co_field_errors_add_novalue(co_field_errors *errs,
                                 co_field_error_type type,
                                 const char *field,
                                 const char *detail_fmt,
                                 ...) CO_PRINTF(4, 5);

/** Records an error whose bad value is an integer (printed plainly, e.g. Too many: 12). */
void co_field_errors_add_int(co_field_errors *errs,
                             co_field_error_type type,
                             const char *field,
                             long long value,
                             const char *detail_fmt,
                             ...) CO_PRINTF(5, 6);

/**
 * Records `Unsupported value: "<value>": supported values: "A", "B", ...` for a string value
 * outside the @p n entries of @p supported.
 */
void co_field_errors_unsupported(co_field_errors *errs,
                                 const char *field,
                                 const char *value,
                                 const char *const *supported,
                                 size_t n);

/** Moves every error of @p from to the end of @p to (applying the dedup and cap rules); @p from
 * is left empty. */
void co_field_errors_move(co_field_errors *to, co_field_errors *from);

/** Replaces the field path of error @p i (used to translate paths between API versions). */
void co_field_errors_set_field(co_field_errors *errs, size_t i, const char *field);

/**
 * Appends the rendering of one error to @p out.
 * @return 0 or CO_ETOOBIG (from the buffer's cap; the buffer is disposed).
 */
CO_MUST_CHECK int co_field_error_format(co_buf *out, const co_field_error *err);

/**
 * Appends the rendering of the whole list to @p out: nothing for an empty list, the error alone
 * for one, `[e1, e2]` for several, with `, and N more` inside the brackets when errors were
 * dropped.
 * @return 0 or CO_ETOOBIG (the buffer is disposed).
 */
CO_MUST_CHECK int co_field_errors_format(co_buf *out, const co_field_errors *errs);

/**
 * Quotes @p s the way Go's %q does (printable UTF-8 kept, control bytes and invalid UTF-8
 * escaped) and appends it to @p out. @return 0 or CO_ETOOBIG (the buffer is disposed).
 */
CO_MUST_CHECK int co_field_quote(co_buf *out, const char *s);

#endif
