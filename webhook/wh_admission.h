/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The decisions behind the routes, on top of the API model (co/component.h, co/policy.h):
 * validating and defaulting Components of both versions, validating ComponentPolicies, and
 * converting Components between versions. Plugged into the protocol layer as wh_handlers with
 * a wh_state as context.
 *
 * Only CREATE and UPDATE of the main resource are judged; an UPDATE that leaves spec as it was
 * (finalizers, labels, annotations: what the controller itself writes) is always admitted, so a
 * Component that a newer policy would refuse can still be finalized and deleted, and is never
 * mutated unless it writes the ComponentPolicy exemption record (co/policy.h), which the
 * mutating routes set from the requester. dryRun requests get the same decision and leave no
 * trace.
 */
#ifndef WH_ADMISSION_H
#define WH_ADMISSION_H

#include "webhook/wh_http.h"
#include "webhook/wh_state.h"

/** wh_handlers.admit with a wh_state * as @p ctx. */
int wh_admission_admit(wh_decision *d, void *ctx, wh_route route, const wh_admission_request *req);

/** wh_handlers.convert (context unused). */
int wh_admission_convert(struct json_object **out,
                         void *ctx,
                         struct json_object *obj,
                         const char *desired_api_version);

/** wh_handlers.unread: the members of a review on @p route that the decisions never read. */
const char *const *const *wh_admission_unread(wh_route route);

/** Handlers for @p state (borrowed; must outlive the returned value's use). */
wh_handlers wh_admission_handlers(wh_state *state);

#endif
