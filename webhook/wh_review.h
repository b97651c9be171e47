/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The wire formats of the webhook: AdmissionReview and ConversionReview envelopes, the admission
 * decision a handler fills in, and the rendering of responses exactly as the API server checks
 * them (docs/webhook-and-certs.md, "Wire rules"). No I/O: bytes in, bytes out.
 */
#ifndef WH_REVIEW_H
#define WH_REVIEW_H

#include <stddef.h>

#include "co/util/common.h"

struct co_jdoc;
struct co_jv;
struct json_object;

/** Envelope versions the webhook understands (the response always repeats the request's). */
#define WH_ADMISSION_V1       "admission.k8s.io/v1"
#define WH_ADMISSION_V1BETA1  "admission.k8s.io/v1beta1"
#define WH_CONVERSION_V1      "apiextensions.k8s.io/v1"
#define WH_CONVERSION_V1BETA1 "apiextensions.k8s.io/v1beta1"

/**
 * What an admission handler decided. Starts allowed with nothing attached; every member is owned
 * by the decision and released by wh_decision_dispose().
 */
typedef struct wh_decision {
    int allowed;                  /**< 1 admitted, 0 denied */
    int code;                     /**< status code of a denial (403 policy, 400 bad request) */
    char *reason;                 /**< metav1.StatusReason of a denial ("Forbidden", ...) */
    char *message;                /**< the human message of a denial */
    struct json_object *causes;   /**< array of {reason, message, field} or NULL */
    struct json_object *warnings; /**< array of strings or NULL */
    struct json_object *audit;    /**< object of string values or NULL */
    struct json_object *patch;    /**< JSON Patch operations (array) or NULL */
} wh_decision;

/** Initialises @p d as "allowed, nothing attached". */
void wh_decision_init(wh_decision *d);

/** Releases everything attached; @p d is left initialised. NULL is a no-op. */
void wh_decision_dispose(wh_decision *d);

/**
 * Denies with @p code and @p reason and a formatted message. A second denial keeps the first
 * code and reason and appends its message after "; ".
 */
void wh_decision_deny(wh_decision *d, int code, const char *reason, const char *fmt, ...)
    CO_PRINTF(4, 5);

/** wh_decision_deny() with @p text as the message, as it is (no formatting). */
void wh_decision_deny_text(wh_decision *d, int code, const char *reason, const char *text);

/** Adds a field cause ({reason, message, field}) to the denial details. */
void wh_decision_cause(wh_decision *d, const char *reason, const char *field, const char *message);

/** Appends a warning (shown by kubectl as "Warning: ..."). Duplicates are dropped. */
void wh_decision_warn(wh_decision *d, const char *fmt, ...) CO_PRINTF(2, 3);

/** wh_decision_warn() with @p text as the warning, as it is (no formatting). */
void wh_decision_warn_text(wh_decision *d, const char *text);

/** Sets audit annotation @p key (the API server prefixes it with the webhook name). */
void wh_decision_audit(wh_decision *d, const char *key, const char *value);

/** Takes ownership of @p ops (a JSON array); an empty array is dropped. */
void wh_decision_set_patch(wh_decision *d, struct json_object *ops);

/** The parts of an AdmissionReview request the handlers use; all borrowed from the review. */
typedef struct wh_admission_request {
    const char *uid;                /**< never NULL or empty */
    const char *operation;          /**< CREATE, UPDATE, DELETE, CONNECT; "" when absent */
    const char *sub_resource;       /**< "" for the main resource */
    const char *namespace_;         /**< "" for cluster-scoped objects */
    const char *name;               /**< "" on CREATE with generateName */
    const char *kind_group;         /**< request.kind.group, "" when absent */
    const char *kind_version;       /**< request.kind.version */
    const char *kind;               /**< request.kind.kind */
    int dry_run;                    /**< request.dryRun */
    const struct co_jv *object;     /**< NULL when absent, null or no object */
    const struct co_jv *old_object; /**< NULL when absent, null or no object */
    const struct co_jv *user_info;  /**< NULL when absent or no object */
} wh_admission_request;

/** The parts of a ConversionReview request; all borrowed from the review. */
typedef struct wh_conversion_request {
    const char *uid;                 /**< never NULL or empty */
    const char *desired_api_version; /**< NULL when absent or not a string */
    const struct co_jv *objects;     /**< the array, NULL when absent or null */
    int objects_invalid;             /**< "objects" is present but not an array */
} wh_conversion_request;

/**
 * Parses @p body as JSON (strict, UTF-8 validated, nesting capped) into a co_jdoc document,
 * leaving out the members named by @p skip (co_json_parse_skip(); NULL builds everything). A
 * left-out member is still checked, so the answer to malformed JSON does not depend on @p skip.
 * @param[out] out the document, whose root is an object (free with co_jdoc_free())
 * @return 0, or CO_EINVALID with a message naming the line and column of the problem.
 */
CO_MUST_CHECK int
wh_review_parse(struct co_jdoc **out, const char *body, size_t len, const char *const *const *skip);

/**
 * Checks an AdmissionReview envelope and fills @p out from it.
 * @param[out] api_version_out the envelope's apiVersion, borrowed from @p review
 * @return 0, or CO_EINVALID naming the envelope field at fault (apiVersion, kind, request,
 * request.uid).
 */
CO_MUST_CHECK int wh_review_admission_request(wh_admission_request *out,
                                              const char **api_version_out,
                                              const struct co_jv *review);

/**
 * Checks a ConversionReview envelope and fills @p out from it.
 * @param[out] api_version_out the envelope's apiVersion, borrowed from @p review
 * @return 0, or CO_EINVALID naming the envelope field at fault.
 */
CO_MUST_CHECK int wh_review_conversion_request(wh_conversion_request *out,
                                               const char **api_version_out,
                                               const struct co_jv *review);

/**
 * Renders the AdmissionReview response for @p d. @p mutating selects whether a patch may be
 * sent (a validating response never carries patch or patchType).
 * @param[out] out the JSON text (free with free())
 * @param[out] len_out its length
 */
void wh_review_admission_response(char **out,
                                  size_t *len_out,
                                  const char *api_version,
                                  const char *uid,
                                  const wh_decision *d,
                                  int mutating);

/**
 * Renders a metav1.Status (kind Status, status Failure) used as the body of HTTP 4xx/5xx
 * answers. @p reason is a metav1.StatusReason ("BadRequest", ...).
 */
void wh_review_status_body(char **out,
                           size_t *len_out,
                           int code,
                           const char *reason,
                           const char *message);

/** Renders a ConversionReview response carrying @p converted (an array; borrowed). */
void wh_review_conversion_success(char **out,
                                  size_t *len_out,
                                  const char *api_version,
                                  const char *uid,
                                  struct json_object *converted);

/** Renders a ConversionReview response with result.status Failure and @p message. */
void wh_review_conversion_failure(char **out,
                                  size_t *len_out,
                                  const char *api_version,
                                  const char *uid,
                                  const char *message);

#endif
