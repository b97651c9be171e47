/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the pre-processing of rendered objects by the apply engine
 * (controller/ctl_inventory.h): arbitrary bytes are parsed as JSON (one object or an array) and
 * go through validation and normalisation — annotations of policies, waves (apply, purge and
 * delete order), reapply interval, participation; Secret stringData; owner marks; scope fix-up,
 * also through a CRD or APIService of the same set; the port defaults of built-in kinds — then
 * into an empty inventory, which is written, read back and sorted; every object is also handed
 * to the readiness rules as if it were live (status-hint annotation included), and compared
 * with itself for drift (drift-policy and ignore-fields annotations included).
 *
 * Besides "no crash, no leak, no hang" it checks and aborts when these fail:
 *  - pre-processing is idempotent: the normalised objects prepared again succeed and yield the
 *    same manifests, keys, policies, orders and digests;
 *  - an inventory written to JSON and read back is written again byte-identically;
 *  - an object compared with itself, before and after its ignored fields are carried over from
 *    itself, has no drift.
 * The first input byte picks the component-level defaults (policies, reapply interval).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/api/drift.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "controller/ctl_health.h"
#include "controller/ctl_inventory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Scopes a small fixed API server would report; everything else is not served (so that CRDs
 * and APIServices of the set are consulted). */
static int scope(int *namespaced, const char *api_version, const char *kind, void *payload)
{
    (void)payload;
    static const char *const ns_kinds[] = {"ConfigMap",      "Secret", "Service", "Deployment",
                                           "StatefulSet",    "Job",    "CronJob", "Pod",
                                           "ServiceAccount", "Role"};
    static const char *const cl_kinds[] = {"Namespace", "ClusterRole", "CustomResourceDefinition",
                                           "APIService"};
    if (strchr(api_version, '.') && strncmp(api_version, "apps/", 5) &&
        strncmp(api_version, "batch/", 6) && !strstr(api_version, ".k8s.io/")) {
        return co_error_set(CO_ENOMATCH, "no matches for kind \"%s\" in version \"%s\"", kind,
                            api_version);
    }
    for (size_t i = 0; i < sizeof(ns_kinds) / sizeof(ns_kinds[0]); i++) {
        if (!strcmp(kind, ns_kinds[i])) {
            *namespaced = 1;
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof(cl_kinds) / sizeof(cl_kinds[0]); i++) {
        if (!strcmp(kind, cl_kinds[i])) {
            *namespaced = 0;
            return 0;
        }
    }
    return co_error_set(CO_ENOMATCH, "no matches for kind \"%s\" in version \"%s\"", kind,
                        api_version);
}

static int no_live(struct json_object **out, const ctl_obj *o, void *payload)
{
    (void)o;
    (void)payload;
    *out = NULL;
    return 0;
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static void check_same(const ctl_objset *a, const ctl_objset *b)
{
    CO_ASSERT(a->len == b->len);
    for (size_t i = 0; i < a->len; i++) {
        const ctl_obj *x = &a->objs[i], *y = &b->objs[i];
        CO_ASSERT(same_str(x->group, y->group) && same_str(x->version, y->version) &&
                  same_str(x->kind, y->kind) && same_str(x->namespace, y->namespace) &&
                  same_str(x->name, y->name) && same_str(x->digest, y->digest));
        CO_ASSERT(x->adoption == y->adoption && x->reconcile == y->reconcile &&
                  x->update == y->update && x->delete_policy == y->delete_policy &&
                  x->apply_order == y->apply_order && x->delete_order == y->delete_order &&
                  x->purge_order == y->purge_order && x->reapply_ns == y->reapply_ns &&
                  x->auxiliary == y->auxiliary && x->nmanaged_types == y->nmanaged_types);
        CO_ASSERT(json_object_equal(x->manifest, y->manifest));
    }
}

static void inventory_round_trip(const ctl_objset *set)
{
    ctl_inventory inv = {0};
    size_t added = 0;
    if (ctl_inventory_update(&added, &inv, set, "hashed", no_live, NULL, NULL) == 0) {
        CO_ASSERT(added == set->len);
        struct json_object *a1 = json_object_new_array();
        ctl_inventory_write(&inv, a1);
        ctl_inventory back = {0};
        CO_ASSERT(ctl_inventory_read(&back, a1) == 0);
        struct json_object *a2 = json_object_new_array();
        ctl_inventory_write(&back, a2);
        CO_ASSERT(!strcmp(json_object_to_json_string_ext(a1, JSON_C_TO_STRING_PLAIN),
                          json_object_to_json_string_ext(a2, JSON_C_TO_STRING_PLAIN)));
        ctl_inventory_sort_for_delete(&back);
        json_object_put(a2);
        json_object_put(a1);
        ctl_inventory_dispose(&back);
    }
    co_error_clear();
    ctl_inventory_dispose(&inv);
}

/* docs/drift.md: an object compared with itself never drifts (unless past the bounds), also
 * once its ignored fields were carried over from itself. */
static void drift_of_self(const ctl_objset *set)
{
    for (size_t i = 0; i < set->len; i++) {
        const ctl_obj *o = &set->objs[i];
        struct json_object *live = co_json_copy(o->manifest);
        co_drift_result r;
        int rc = co_drift_compare(&r, o->manifest, live, &o->ignore, NULL);
        CO_ASSERT(rc == CO_ETOOBIG || (rc == 0 && r.total == 0));
        co_drift_result_dispose(&r);
        struct json_object *applied = co_json_copy(o->manifest);
        co_drift_carry_ignored(applied, live, &o->ignore);
        rc = co_drift_compare(&r, applied, live, &o->ignore, NULL);
        CO_ASSERT(rc == CO_ETOOBIG || (rc == 0 && r.total == 0));
        co_drift_result_dispose(&r);
        co_error_clear();
        json_object_put(applied);
        json_object_put(live);
    }
}

static void readiness(const struct json_object *objects)
{
    for (size_t i = 0; i < json_object_array_length(objects); i++) {
        struct json_object *o = json_object_array_get_idx(objects, i);
        if (!o || !json_object_is_type(o, json_type_object)) {
            continue;
        }
        ctl_health h = CTL_HEALTH_UNKNOWN;
        const char *msg = NULL;
        if (ctl_health_compute(&h, &msg, o, CTL_ANN_STATUS_HINT, 1700000000) == 0) {
            CO_ASSERT(ctl_health_name(h) != NULL);
        }
        co_error_clear();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const co_adoption_policy adoption[] = {CO_ADOPTION_IF_UNOWNED, CO_ADOPTION_NEVER,
                                                  CO_ADOPTION_IF_UNOWNED, CO_ADOPTION_ALWAYS};
    static const co_update_policy update[] = {CO_UPDATE_SSA_OVERRIDE, CO_UPDATE_REPLACE,
                                              CO_UPDATE_SSA_MERGE, CO_UPDATE_SSA_OVERRIDE};
    static const co_delete_policy deletion[] = {
        CO_DELETE_DELETE, CO_DELETE_ORPHAN, CO_DELETE_ORPHAN_ON_APPLY, CO_DELETE_ORPHAN_ON_DELETE};
    if (size < 1) {
        return 0;
    }
    uint8_t sel = data[0];
    struct json_object *parsed = NULL;
    if (co_json_parse(&parsed, (const char *)data + 1, size - 1) < 0) {
        co_error_clear();
        return 0;
    }
    struct json_object *objects = parsed;
    if (!json_object_is_type(parsed, json_type_array)) {
        objects = json_object_new_array();
        json_object_array_add(objects, parsed);
    }
    ctl_defaults d = {adoption[sel & 3],
                      update[(sel >> 2) & 3],
                      deletion[(sel >> 4) & 3],
                      (sel & 0x40) ? (int64_t)1000 * 1000000 : CO_COMPONENT_DEFAULT_REAPPLY_NS,
                      "place",
                      NULL};
    d.component_digest = (sel & 0x80) ? "c2" : "c1";

    /* readiness sees the objects as they were rendered */
    readiness(objects);

    ctl_objset set = {0};
    if (ctl_objset_prepare(&set, objects, &d, scope, NULL) == 0) {
        struct json_object *again = co_json_copy(objects);
        ctl_objset set2 = {0};
        CO_ASSERT(ctl_objset_prepare(&set2, again, &d, scope, NULL) == 0);
        check_same(&set, &set2);
        ctl_objset_dispose(&set2);
        json_object_put(again);
        inventory_round_trip(&set);
        drift_of_self(&set);
        ctl_objset_sort_for_apply(&set);
        ctl_objset_dispose(&set);
    }
    co_error_clear();
    json_object_put(objects);
    return 0;
}
