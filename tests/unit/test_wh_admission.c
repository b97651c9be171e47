/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The webhook's real decisions, fed through the protocol layer as the API server would: fixture
 * AdmissionReviews for every validation outcome and for the requests that must never be
 * blocked, the defaulting patch, ComponentPolicy rules (Deny, Warn, Audit, exemptions,
 * selectors, defaults), dependency cycles against the cluster graph with tentative edges, and
 * conversion through the API model.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/common.h"
#include "co/util/digest.h"
#include "co/api/component.h"
#include "co/json/json.h"
#include "tests/support/hash_flood.h"
#include "tests/support/test_support.h"
#include "webhook/wh_admission.h"
#include "webhook/wh_http.h"
#include "webhook/wh_state.h"

/* --- plumbing ------------------------------------------------------------------------------- */

typedef struct answer {
    int status;                   /* HTTP status */
    struct json_object *json;     /* the whole response body */
    struct json_object *response; /* its "response" member (borrowed) */
    int allowed;                  /* response.allowed */
    int code;                     /* response.status.code, 0 when absent */
    const char *message;          /* response.status.message, "" when absent */
    struct json_object *patch;    /* the decoded patch, NULL when absent */
    struct json_object *warnings; /* borrowed, NULL when absent */
    struct json_object *audit;    /* borrowed, NULL when absent */
} answer;

static wh_state *state;
static uint64_t fake_now;

static uint64_t fake_clock(void)
{
    return fake_now;
}

static int setup(void **ctx)
{
    (void)ctx;
    wh_state_new(&state, 10000);
    fake_now = 1000;
    wh_state_set_clock(state, fake_clock);
    return 0;
}

static int teardown(void **ctx)
{
    (void)ctx;
    wh_state_free(state);
    state = NULL;
    return 0;
}

static struct json_object *member(struct json_object *o, const char *key)
{
    struct json_object *v = NULL;
    return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static struct json_object *decode_patch(const char *b64)
{
    co_buf raw = CO_BUF_INIT(CO_MIB);
    assert_co_pass(co_base64_decode(&raw, b64, strlen(b64), CO_BASE64_STD));
    struct json_object *p = NULL;
    assert_co_pass(co_json_parse(&p, co_buf_cstr(&raw), raw.len));
    co_buf_dispose(&raw);
    return p;
}

static void ask(answer *a, const char *path, const char *body, size_t len)
{
    memset(a, 0, sizeof(*a));
    wh_handlers h = wh_admission_handlers(state);
    wh_http_request req = {"POST", path, "application/json", body, len};
    wh_http_response r;
    wh_http_handle(&r, &h, &req);
    a->status = r.status;
    assert_co_pass(co_json_parse(&a->json, r.body, r.body_len));
    wh_http_response_dispose(&r);
    a->response = member(a->json, "response");
    a->allowed = json_object_get_boolean(member(a->response, "allowed"));
    struct json_object *st = member(a->response, "status");
    a->code = json_object_get_int(member(st, "code"));
    a->message = st ? json_object_get_string(member(st, "message")) : "";
    struct json_object *p = member(a->response, "patch");
    if (p) {
        assert_string_equal(json_object_get_string(member(a->response, "patchType")), "JSONPatch");
        a->patch = decode_patch(json_object_get_string(p));
    }
    a->warnings = member(a->response, "warnings");
    a->audit = member(a->response, "auditAnnotations");
}

static void ask_fixture(answer *a, const char *path, const char *fixture)
{
    char *rel = co_xasprintf("webhook/admission/%s", fixture);
    size_t len = 0;
    char *body = co_test_fixture(rel, &len);
    ask(a, path, body, len);
    free(body);
    free(rel);
}

static void done(answer *a)
{
    json_object_put(a->json);
    json_object_put(a->patch);
}

static int has_warning(const answer *a, const char *needle)
{
    size_t n = a->warnings ? json_object_array_length(a->warnings) : 0;
    for (size_t i = 0; i < n; i++) {
        if (strstr(json_object_get_string(json_object_array_get_idx(a->warnings, i)), needle)) {
            return 1;
        }
    }
    return 0;
}

/* An AdmissionReview for a v1alpha1 Component; @p spec is JSON text. */
static char *review(const char *op,
                    const char *ns,
                    const char *name,
                    const char *spec,
                    const char *user,
                    int dry_run)
{
    return co_xasprintf(
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"uid-%s-%s\",\"operation\":\"%s\",\"namespace\":\"%s\",\"name\":\"%s\","
        "\"kind\":{\"group\":\"core.cs.sap.com\",\"version\":\"v1alpha1\",\"kind\":\"Component\"},"
        "\"userInfo\":{\"username\":\"%s\",\"groups\":[\"developers\",\"system:authenticated\"]},"
        "\"dryRun\":%s,\"object\":{\"apiVersion\":\"core.cs.sap.com/v1alpha1\","
        "\"kind\":\"Component\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
        "\"spec\":%s}}}",
        ns, name, op, ns, name, user, dry_run ? "true" : "false", name, ns, spec);
}

static void
ask_component(answer *a, const char *path, const char *ns, const char *name, const char *spec)
{
    char *body = review("CREATE", ns, name, spec, "alice", 0);
    ask(a, path, body, strlen(body));
    free(body);
}

static struct json_object *parse(const char *text)
{
    struct json_object *o = NULL;
    assert_co_pass(co_json_parse(&o, text, strlen(text)));
    return o;
}

/* A Component as the watch would deliver it. */
static void cluster_has(const char *ns, const char *name, const char *spec)
{
    char *text = co_xasprintf("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                              "\"Component\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
                              "\"spec\":%s}",
                              name, ns, spec);
    struct json_object *o = parse(text);
    wh_state_component_put(state, o);
    json_object_put(o);
    free(text);
}

static void policy_exists(const char *text)
{
    struct json_object *o = parse(text);
    assert_co_pass(wh_state_policy_put(state, o));
    json_object_put(o);
}

static void namespace_exists(const char *name, const char *labels)
{
    char *text = co_xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{"
                              "\"name\":\"%s\",\"labels\":%s}}",
                              name, labels);
    struct json_object *o = parse(text);
    wh_state_namespace_put(state, o);
    json_object_put(o);
    free(text);
}

#define VALIDATE "/validate/v1alpha1/components"
#define MUTATE   "/mutate/v1alpha1/components"
#define GIT_SRC  "{\"fluxGitRepository\":{\"name\":\"repo\"}}"

/* --- fixtures: every validation outcome ----------------------------------------------------- */

static void test_wh_admission__fixture_reviews(void **ctx)
{
    (void)ctx;
    static const struct {
        const char *file;
        const char *path;
        int allowed;
        int code;
        const char *message;
    } cases[] = {
        {"create-bad-enum.json", VALIDATE, 0, 403,
         "spec.updatePolicy: Unsupported value: \"Foo\": supported values: \"Recreate\", "
         "\"Replace\", \"SsaMerge\", \"SsaOverride\""},
        {"create-two-sources.json", VALIDATE, 0, 403,
         "spec.sourceRef: Forbidden: exactly one of \"fluxGitRepository\", "
         "\"fluxOciRepository\", \"fluxBucket\", \"fluxHelmChart\", \"httpRepository\", \"git\", "
         "\"blueprint\" may be set, found \"fluxGitRepository\", \"httpRepository\""},
        {"create-bad-duration.json", VALIDATE, 0, 403,
         "spec.requeueInterval: Invalid value: \"10 minutes\": must be a duration"},
        {"create-no-source.json", VALIDATE, 0, 403, "spec.sourceRef: Required value"},
        {"create-self-dependency.json", VALIDATE, 0, 403,
         "spec.dependencies[0]: Invalid value: \"team-a/web\": a Component cannot depend on "
         "itself"},
        {"create-unknown-field.json", VALIDATE, 0, 403,
         "spec.requeueIntervall: Forbidden: unknown field"},
        {"create-several-errors.json", VALIDATE, 0, 403,
         "[spec.timeout: Invalid value: \"soon\": must be a duration such as \"90s\", \"10m\" or "
         "\"1h30m\" (units ns, us, µs, ms, s, m, h), spec.adoptionPolicy: Unsupported value: "
         "\"Sometimes\": supported values: \"Never\", \"IfUnowned\", \"Always\"]"},
        {"create-valid-v1beta1.json", "/validate/v1beta1/components", 1, 0, ""},
        {"create-bad-enum-v1beta1.json", "/validate/v1beta1/components", 0, 403,
         "spec.policies.delete: Unsupported value: \"Keep\""},
        /* lifecycle fields, with the paths of the object's own version */
        {"create-bad-lifecycle.json", VALIDATE, 0, 403,
         "[spec.gracePeriod: Invalid value: \"0s\": must be a positive duration, "
         "spec.prerequisites[0].kind: Invalid value: \"Deploy_ment\": must be a kind (letters "
         "and digits, starting with a letter), spec.prerequisites[1].conditionType: Invalid "
         "value: \"example.com/\": must be a condition type"},
        {"create-bad-lifecycle.json", VALIDATE, 0, 403,
         "spec.prerequisites[1].namespace: Invalid value: \"Db\": must be a lowercase RFC 1123 "
         "label"},
        {"create-bad-lifecycle-v1beta1.json", "/validate/v1beta1/components", 0, 403,
         "[spec.suspendMode: Unsupported value: \"Hibernate\": supported values: \"Pause\", "
         "\"ScaleDown\", spec.intervals.grace: Invalid value: \"0s\": must be a positive "
         "duration, spec.prerequisites[1]: Duplicate value: \"apps/v1 Deployment db/postgres "
         "Ready\"]"},
        {"update-spec-changed.json", VALIDATE, 0, 403, "spec.updatePolicy: Unsupported value"},
        /* Never blocked: metadata-only updates, objects being deleted, subresources, DELETE. */
        {"update-finalizer-only.json", VALIDATE, 1, 0, ""},
        {"update-being-deleted.json", VALIDATE, 1, 0, ""},
        {"update-status-subresource.json", VALIDATE, 1, 0, ""},
        {"delete.json", VALIDATE, 1, 0, ""},
        {"update-finalizer-only.json", MUTATE, 1, 0, ""},
        {"create-without-object.json", VALIDATE, 0, 400, "request.object: Required value"},
        /* dryRun gets the same decision. */
        {"create-dry-run.json", VALIDATE, 0, 403, "spec.retryInterval: Invalid value: \"-1s\""},
        {"policy-valid.json", "/validate/v1alpha1/componentpolicies", 1, 0, ""},
        {"policy-invalid.json", "/validate/v1alpha1/componentpolicies", 0, 403,
         "spec.rules.sourceKinds.action: Unsupported value: \"Block\""},
        {"blueprint-valid.json", "/validate/v1alpha1/blueprints", 1, 0, ""},
        {"blueprint-invalid.json", "/validate/v1alpha1/blueprints", 0, 403,
         "spec.files[../escape.yaml]: Invalid value: \"../escape.yaml\": must not contain . or "
         ".. segments"},
        /* a Blueprint that predates the webhook can still lose its finalizer */
        {"blueprint-update-metadata-only.json", "/validate/v1alpha1/blueprints", 1, 0, ""},
        {"blueprintversion-valid.json", "/validate/v1alpha1/blueprintversions", 1, 0, ""},
        {"blueprintversion-wrong-name.json", "/validate/v1alpha1/blueprintversions", 0, 403,
         "metadata.name: Invalid value: \"web-v1\": must be "
         "web--de59bf695203f6e7662e0965afdf1b5a210d4d33cc5490cc197f7531fa66b75f "
         "(<spec.blueprint>--<spec.digest>)"},
        {"blueprintversion-update-spec.json", "/validate/v1alpha1/blueprintversions", 0, 403,
         "[spec.revision: Forbidden: field is immutable: a BlueprintVersion never changes, "
         "spec.files: Forbidden: field is immutable: a BlueprintVersion never changes, "
         "spec.digest: Invalid value: "
         "\"de59bf695203f6e7662e0965afdf1b5a210d4d33cc5490cc197f7531fa66b75f\": must be the "
         "digest of spec.files, "},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        answer a;
        ask_fixture(&a, cases[i].path, cases[i].file);
        if (a.allowed != cases[i].allowed || a.code != cases[i].code ||
            !strstr(a.message, cases[i].message)) {
            fail_msg("%s on %s: allowed=%d code=%d message=\"%s\"", cases[i].file, cases[i].path,
                     a.allowed, a.code, a.message);
        }
        assert_int_equal(a.status, 200);
        assert_null(a.patch);
        done(&a);
    }
}

static void test_wh_admission__denial_lists_causes_per_field(void **ctx)
{
    (void)ctx;
    answer a;
    ask_fixture(&a, VALIDATE, "create-several-errors.json");
    struct json_object *st = member(a.response, "status");
    assert_string_equal(json_object_get_string(member(st, "reason")), "Forbidden");
    struct json_object *causes = member(member(st, "details"), "causes");
    assert_int_equal(json_object_array_length(causes), 2);
    struct json_object *c0 = json_object_array_get_idx(causes, 0);
    assert_string_equal(json_object_get_string(member(c0, "field")), "spec.timeout");
    assert_string_equal(json_object_get_string(member(c0, "reason")), "FieldValueInvalid");
    assert_contains(json_object_get_string(member(c0, "message")), "Invalid value: \"soon\": must");
    assert_null(strstr(json_object_get_string(member(c0, "message")), "spec.timeout"));
    struct json_object *c1 = json_object_array_get_idx(causes, 1);
    assert_string_equal(json_object_get_string(member(c1, "field")), "spec.adoptionPolicy");
    assert_string_equal(json_object_get_string(member(c1, "reason")), "FieldValueNotSupported");
    done(&a);
}

/* --- defaulting ----------------------------------------------------------------------------- */

static void test_wh_admission__mutating_patch_applies_defaults(void **ctx)
{
    (void)ctx;
    size_t len = 0;
    char *body = co_test_fixture("webhook/admission-create-v1alpha1.json", &len);
    answer a;
    ask(&a, MUTATE, body, len);
    assert_true(a.allowed);
    assert_non_null(a.patch);
    /* The patch turns the object into exactly the API model's defaulted copy. */
    struct json_object *review_obj = parse(body);
    struct json_object *obj = member(member(review_obj, "request"), "object");
    struct json_object *patched = NULL, *expected = NULL;
    assert_co_pass(co_json_patch_apply(&patched, obj, a.patch));
    assert_co_pass(co_component_default(&expected, obj, "team-a", NULL));
    assert_true(co_json_equal(patched, expected));
    assert_string_equal(
        json_object_get_string(co_json_get(patched, "spec", "missingNamespacesPolicy", NULL)),
        "Create");
    struct json_object *dep0 =
        json_object_array_get_idx(co_json_get(patched, "spec", "dependencies", NULL), 0);
    assert_string_equal(json_object_get_string(member(dep0, "namespace")), "team-a");
    /* Idempotent: the defaulted object needs no further patch (reinvocation is safe). */
    json_object_object_add(member(review_obj, "request"), "object", json_object_get(patched));
    const char *again = json_object_to_json_string(review_obj);
    answer b;
    ask(&b, MUTATE, again, strlen(again));
    assert_true(b.allowed);
    assert_null(b.patch);
    assert_null(member(b.response, "patchType"));
    done(&b);
    json_object_put(patched);
    json_object_put(expected);
    json_object_put(review_obj);
    done(&a);
    free(body);
}

static void test_wh_admission__mutating_v1beta1_uses_its_own_paths(void **ctx)
{
    (void)ctx;
    answer a;
    char *rel = co_xstrdup("webhook/admission/create-valid-v1beta1.json");
    size_t len = 0;
    char *body = co_test_fixture(rel, &len);
    ask(&a, "/mutate/v1beta1/components", body, len);
    assert_true(a.allowed);
    assert_non_null(a.patch);
    const char *text = json_object_to_json_string_ext(a.patch, JSON_C_TO_STRING_PLAIN |
                                                                   JSON_C_TO_STRING_NOSLASHESCAPE);
    assert_contains(text, "\"/spec/policies/adoption\"");
    /* retry and timeout are left to follow the requeue interval */
    assert_null(strstr(text, "/spec/intervals/retry"));
    assert_null(strstr(text, "/spec/intervals/timeout"));
    assert_null(strstr(text, "/spec/adoptionPolicy"));
    /* The v1beta1 spec already says "update": that stays. */
    assert_null(strstr(text, "/spec/policies/update"));
    done(&a);
    free(body);
    free(rel);
}

/* The JSON Patch of @p a as compact text ("" when there is none), for substring checks. */
static const char *patch_text(const answer *a)
{
    return a->patch ? json_object_to_json_string_ext(a->patch, JSON_C_TO_STRING_PLAIN |
                                                                   JSON_C_TO_STRING_NOSLASHESCAPE)
                    : "";
}

/*
 * An AdmissionReview of a Component in @p version ("v1alpha1", "v1beta1") in namespace "ns" by
 * @p user in @p groups (a JSON array). @p meta and @p old_meta are the members of metadata
 * besides name and namespace (JSON text without braces, may be empty); @p old_spec NULL makes it
 * a CREATE.
 */
static char *review_of(const char *version,
                       const char *user,
                       const char *groups,
                       const char *meta,
                       const char *spec,
                       const char *old_meta,
                       const char *old_spec)
{
    char *obj = co_xasprintf("{\"apiVersion\":\"core.cs.sap.com/%s\",\"kind\":\"Component\","
                             "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"%s%s},\"spec\":%s}",
                             version, *meta ? "," : "", meta, spec);
    char *old = old_spec ? co_xasprintf("{\"apiVersion\":\"core.cs.sap.com/%s\",\"kind\":"
                                        "\"Component\",\"metadata\":{\"name\":\"c\",\"namespace\":"
                                        "\"ns\"%s%s},\"spec\":%s}",
                                        version, *old_meta ? "," : "", old_meta, old_spec)
                         : NULL;
    char *body = co_xasprintf(
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"u\",\"operation\":\"%s\",\"namespace\":\"ns\",\"name\":\"c\","
        "\"kind\":{\"group\":\"core.cs.sap.com\",\"version\":\"%s\",\"kind\":\"Component\"},"
        "\"userInfo\":{\"username\":\"%s\",\"groups\":%s},\"object\":%s%s%s}}",
        old ? "UPDATE" : "CREATE", version, user, groups, obj, old ? ",\"oldObject\":" : "",
        old ? old : "");
    free(obj);
    free(old);
    return body;
}

static void ask_review(answer *a,
                       const char *version,
                       const char *user,
                       const char *groups,
                       const char *meta,
                       const char *spec,
                       const char *old_meta,
                       const char *old_spec)
{
    char *body = review_of(version, user, groups, meta, spec, old_meta, old_spec);
    char *path = co_xasprintf("/mutate/%s/components", version);
    ask(a, path, body, strlen(body));
    assert_int_equal(a->status, 200);
    assert_true(a->allowed);
    free(path);
    free(body);
}

#define ALPHA_SPEC "{\"sourceRef\":" GIT_SRC ",\"dependencies\":[{\"name\":\"base\"}]}"
#define BETA_SPEC  "{\"source\":" GIT_SRC ",\"dependencies\":[{\"name\":\"base\"}]}"
#define TENANT     "[\"developers\",\"system:authenticated\"]"
#define ADMINS     "[\"platform-admins\",\"system:authenticated\"]"
#define RECORD_KEY "component-operator.cs.sap.com/exempt-requester"
#define ADMINS_RECORD                                                                              \
    "\"annotations\":{\"" RECORD_KEY "\":\"{\\\"groups\\\":[\\\"platform-admins\\\"]}\"}"
#define FORGED_RECORD "\"annotations\":{\"" RECORD_KEY "\":\"{\\\"groups\\\":[\\\"root\\\"]}\"}"

/* retryInterval and timeout are not written: they follow requeueInterval when it changes. */
static void test_wh_admission__mutating_writes_no_retry_interval_or_timeout(void **ctx)
{
    (void)ctx;
    answer a;
    ask_review(&a, "v1alpha1", "alice", TENANT, "",
               "{\"sourceRef\":" GIT_SRC ",\"requeueInterval\":\"5m\"}", NULL, NULL);
    assert_contains(patch_text(&a), "/spec/adoptionPolicy");
    assert_null(strstr(patch_text(&a), "/spec/retryInterval"));
    assert_null(strstr(patch_text(&a), "/spec/timeout"));
    assert_null(strstr(patch_text(&a), "/spec/requeueInterval"));
    done(&a);
    /* a later change of requeueInterval alone adds neither */
    ask_review(&a, "v1alpha1", "alice", TENANT, "",
               "{\"sourceRef\":" GIT_SRC ",\"requeueInterval\":\"7m\",\"adoptionPolicy\":"
               "\"IfUnowned\",\"updatePolicy\":\"SsaOverride\",\"deletePolicy\":\"Delete\","
               "\"missingNamespacesPolicy\":\"Create\"}",
               "",
               "{\"sourceRef\":" GIT_SRC ",\"requeueInterval\":\"5m\",\"adoptionPolicy\":"
               "\"IfUnowned\",\"updatePolicy\":\"SsaOverride\",\"deletePolicy\":\"Delete\","
               "\"missingNamespacesPolicy\":\"Create\"}");
    assert_null(a.patch);
    done(&a);
    ask_review(&a, "v1beta1", "alice", TENANT, "",
               "{\"source\":" GIT_SRC ",\"intervals\":{\"requeue\":\"5m\"}}", NULL, NULL);
    assert_contains(patch_text(&a), "/spec/policies");
    assert_null(strstr(patch_text(&a), "/spec/intervals"));
    done(&a);
}

/*
 * A Component stored without defaults (as one created under the Go operator, which has no
 * webhook) gets no patch from an UPDATE that leaves its spec alone, whoever sends it and
 * whatever policies default or exempt: metadata.generation and the digest stay where they are.
 */
static void test_wh_admission__unchanged_spec_update_gets_no_patch(void **ctx)
{
    (void)ctx;
    policy_exists("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","
                  "\"metadata\":{\"name\":\"defaults-and-exemptions\"},\"spec\":{"
                  "\"exemptGroups\":[\"platform-admins\"],\"defaults\":{\"deletePolicy\":"
                  "\"Orphan\",\"serviceAccountName\":\"deployer\",\"retryInterval\":\"1m\"}}}");
    static const struct {
        const char *meta, *old_meta;
    } writes[] = {
        {"\"labels\":{\"team\":\"a\"}", ""},
        {"\"annotations\":{\"note\":\"x\"}", ""},
        {"\"finalizers\":[\"component-operator.cs.sap.com\"]", ""},
        {"", "\"finalizers\":[\"component-operator.cs.sap.com\"]"},
        {"\"labels\":{\"team\":\"b\"}," ADMINS_RECORD,
         "\"labels\":{\"team\":\"a\"}," ADMINS_RECORD},
        {"\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"", ""},
    };
    static const char *const users[][2] = {{"alice", TENANT},
                                           {"bob", ADMINS},
                                           {"system:serviceaccount:co:controller", "[]"}};
    for (size_t w = 0; w < CO_ARRAY_SIZE(writes); w++) {
        for (size_t u = 0; u < CO_ARRAY_SIZE(users); u++) {
            answer a;
            ask_review(&a, "v1alpha1", users[u][0], users[u][1], writes[w].meta, ALPHA_SPEC,
                       writes[w].old_meta, ALPHA_SPEC);
            if (a.patch) {
                fail_msg("v1alpha1 write %zu by %s: patch %s", w, users[u][0], patch_text(&a));
            }
            done(&a);
            ask_review(&a, "v1beta1", users[u][0], users[u][1], writes[w].meta, BETA_SPEC,
                       writes[w].old_meta, BETA_SPEC);
            if (a.patch) {
                fail_msg("v1beta1 write %zu by %s: patch %s", w, users[u][0], patch_text(&a));
            }
            done(&a);
        }
    }
}

/* --- dependency cycles ---------------------------------------------------------------------- */

static void test_wh_admission__cycle_across_namespaces_is_denied_with_path(void **ctx)
{
    (void)ctx;
    cluster_has("ns1", "a",
                "{\"sourceRef\":" GIT_SRC ",\"dependencies\":[{\"namespace\":"
                "\"ns2\",\"name\":\"b\"}]}");
    answer a;
    ask_component(&a, VALIDATE, "ns2", "b",
                  "{\"sourceRef\":" GIT_SRC
                  ",\"dependencies\":[{\"namespace\":\"ns1\",\"name\":\"a\"}]}");
    assert_false(a.allowed);
    assert_int_equal(a.code, 403);
    assert_contains(a.message, "ns2/b -> ns1/a -> ns2/b");
    done(&a);
    /* Without the edge back there is no cycle. */
    ask_component(&a, VALIDATE, "ns2", "b", "{\"sourceRef\":" GIT_SRC "}");
    assert_true(a.allowed);
    done(&a);
}

static void test_wh_admission__existing_cycle_is_not_blamed_on_others(void **ctx)
{
    (void)ctx;
    /* The cluster already holds a cycle (made before the webhook existed). */
    cluster_has("ns", "a", "{\"sourceRef\":" GIT_SRC ",\"dependencies\":[{\"name\":\"b\"}]}");
    cluster_has("ns", "b", "{\"sourceRef\":" GIT_SRC ",\"dependencies\":[{\"name\":\"a\"}]}");
    answer a;
    ask_component(&a, VALIDATE, "ns", "c",
                  "{\"sourceRef\":" GIT_SRC ",\"dependencies\":[{\"name\":\"a\"}]}");
    assert_true(a.allowed);
    done(&a);
    /* Updating a member without adding edges is fine too (only new edges are followed). */
    ask_component(&a, VALIDATE, "ns", "a",
                  "{\"sourceRef\":" GIT_SRC ",\"path\":\"x\",\"dependencies\":[{\"name\":\"b\"}]}");
    assert_true(a.allowed);
    done(&a);
}

static void test_wh_admission__admitted_edges_count_until_the_watch_confirms(void **ctx)
{
    (void)ctx;
    const char *x_to_y =
        "{\"sourceRef\":" GIT_SRC ",\"dependencies\":[{\"namespace\":\"ns2\",\"name\":\"y\"}]}";
    const char *y_to_x =
        "{\"sourceRef\":" GIT_SRC ",\"dependencies\":[{\"namespace\":\"ns1\",\"name\":\"x\"}]}";
    /* A dry run leaves no trace. */
    char *dry = review("CREATE", "ns1", "x", x_to_y, "alice", 1);
    answer a;
    ask(&a, VALIDATE, dry, strlen(dry));
    assert_true(a.allowed);
    done(&a);
    free(dry);
    ask_component(&a, VALIDATE, "ns2", "y", y_to_x);
    assert_true(a.allowed);
    done(&a);
    /* ns2/y was admitted but the watch has not delivered it: its edge still counts. */
    ask_component(&a, VALIDATE, "ns1", "x", x_to_y);
    assert_false(a.allowed);
    assert_contains(a.message, "ns1/x -> ns2/y -> ns1/x");
    done(&a);
    /* If the write never happened, the tentative edge expires. */
    fake_now += 10001;
    ask_component(&a, VALIDATE, "ns1", "x", x_to_y);
    assert_true(a.allowed);
    done(&a);
    /* Confirmed by the watch, an edge stays however long it takes. */
    cluster_has("ns1", "x", x_to_y);
    fake_now += 60000;
    ask_component(&a, VALIDATE, "ns2", "y", y_to_x);
    assert_false(a.allowed);
    assert_contains(a.message, "ns2/y -> ns1/x -> ns2/y");
    done(&a);
    /* A deleted Component's edges go. */
    struct json_object *x = parse("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                                  "\"Component\",\"metadata\":{\"name\":\"x\",\"namespace\":"
                                  "\"ns1\"},\"spec\":{}}");
    wh_state_component_delete(state, x);
    json_object_put(x);
    ask_component(&a, VALIDATE, "ns2", "y", y_to_x);
    assert_true(a.allowed);
    done(&a);
}

/* One side of the race below: asks for @c count Components, each depending on its twin. */
typedef struct racer {
    const char *ns, *other_ns, *prefix, *other_prefix;
    int count;
    int *allowed; /* per pair: 1 when admitted */
    pthread_barrier_t *start;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    wh_handlers h = wh_admission_handlers(state);
    pthread_barrier_wait(r->start);
    for (int i = 0; i < r->count; i++) {
        char name[32], spec[160];
        snprintf(name, sizeof(name), "%s%d", r->prefix, i);
        snprintf(spec, sizeof(spec),
                 "{\"sourceRef\":" GIT_SRC ",\"dependencies\":[{\"namespace\":\"%s\","
                 "\"name\":\"%s%d\"}]}",
                 r->other_ns, r->other_prefix, i);
        char *body = review("CREATE", r->ns, name, spec, "alice", 0);
        wh_http_request req = {"POST", VALIDATE, "application/json", body, strlen(body)};
        wh_http_response resp;
        wh_http_handle(&resp, &h, &req);
        r->allowed[i] =
            resp.status == 200 && resp.body && strstr(resp.body, "\"allowed\":true") != NULL;
        wh_http_response_dispose(&resp);
        free(body);
    }
    return NULL;
}

/*
 * Two threads ask at the same time for x<i> -> y<i> and y<i> -> x<i>: the cycle check and the
 * tentative insert are one critical section, so of every pair exactly one is admitted, however
 * the requests interleave (parsing and field validation run outside it, in parallel).
 */
static void test_wh_admission__concurrent_twins_never_both_admitted(void **ctx)
{
    (void)ctx;
    enum { PAIRS = 300 };
    static int allowed_x[PAIRS], allowed_y[PAIRS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    racer rx = {"ns1", "ns2", "x", "y", PAIRS, allowed_x, &start};
    racer ry = {"ns2", "ns1", "y", "x", PAIRS, allowed_y, &start};
    pthread_t tx, ty;
    assert_int_equal(pthread_create(&tx, NULL, race, &rx), 0);
    assert_int_equal(pthread_create(&ty, NULL, race, &ry), 0);
    pthread_join(tx, NULL);
    pthread_join(ty, NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < PAIRS; i++) {
        if (allowed_x[i] + allowed_y[i] != 1) {
            fail_msg("pair %d: x admitted %d, y admitted %d", i, allowed_x[i], allowed_y[i]);
        }
    }
}

static void test_wh_admission__missing_dependency_warns(void **ctx)
{
    (void)ctx;
    answer a;
    ask_component(&a, VALIDATE, "ns", "c",
                  "{\"sourceRef\":" GIT_SRC ",\"dependencies\":[{\"name\":\"later\"}]}");
    assert_true(a.allowed);
    assert_true(has_warning(&a, "ns/later"));
    done(&a);
}

/* --- ComponentPolicy -------------------------------------------------------------------------- */

#define SOURCES_POLICY                                                                             \
    "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","                   \
    "\"metadata\":{\"name\":\"only-git\"},\"spec\":{"                                              \
    "\"namespaceSelector\":{\"matchLabels\":{\"tier\":\"tenant\"}},"                               \
    "\"exemptNamespaces\":[\"tenant-exempt\"],\"exemptUsers\":[\"root\"],"                         \
    "\"exemptGroups\":[\"platform-admins\"],"                                                      \
    "\"rules\":{\"sourceKinds\":{\"action\":\"%s\",\"allowed\":[\"fluxGitRepository\"]}}}}"

#define HTTP_SPEC "{\"sourceRef\":{\"httpRepository\":{\"url\":\"https://example.com/a.tar.gz\"}}}"

static void with_sources_policy(const char *action)
{
    char *text = co_xasprintf(SOURCES_POLICY, action);
    policy_exists(text);
    free(text);
    namespace_exists("tenant-a", "{\"tier\":\"tenant\"}");
    namespace_exists("tenant-exempt", "{\"tier\":\"tenant\"}");
    namespace_exists("system", "{\"tier\":\"platform\"}");
}

static void test_wh_admission__policy_deny_rejects(void **ctx)
{
    (void)ctx;
    with_sources_policy("Deny");
    answer a;
    ask_component(&a, VALIDATE, "tenant-a", "c", HTTP_SPEC);
    assert_false(a.allowed);
    assert_int_equal(a.code, 403);
    assert_contains(a.message, "ComponentPolicy \"only-git\"");
    assert_contains(a.message, "sourceKinds");
    done(&a);
    ask_component(&a, VALIDATE, "tenant-a", "c", "{\"sourceRef\":" GIT_SRC "}");
    assert_true(a.allowed);
    done(&a);
}

static void test_wh_admission__policy_warn_and_audit_admit(void **ctx)
{
    (void)ctx;
    with_sources_policy("Warn");
    answer a;
    ask_component(&a, VALIDATE, "tenant-a", "c", HTTP_SPEC);
    assert_true(a.allowed);
    assert_true(has_warning(&a, "ComponentPolicy \"only-git\""));
    assert_null(a.audit);
    done(&a);
    with_sources_policy("Audit");
    ask_component(&a, VALIDATE, "tenant-a", "c", HTTP_SPEC);
    assert_true(a.allowed);
    assert_null(a.warnings);
    struct json_object *v = member(a.audit, "policy.sourceKinds");
    assert_non_null(v);
    assert_contains(json_object_get_string(v), "only-git");
    done(&a);
}

static void test_wh_admission__policy_selector_and_exemptions(void **ctx)
{
    (void)ctx;
    with_sources_policy("Deny");
    answer a;
    /* Namespace labels do not match the selector. */
    ask_component(&a, VALIDATE, "system", "c", HTTP_SPEC);
    assert_true(a.allowed);
    done(&a);
    /* Exempt namespace. */
    ask_component(&a, VALIDATE, "tenant-exempt", "c", HTTP_SPEC);
    assert_true(a.allowed);
    done(&a);
    /* Exempt user. */
    char *body = review("CREATE", "tenant-a", "c", HTTP_SPEC, "root", 0);
    ask(&a, VALIDATE, body, strlen(body));
    assert_true(a.allowed);
    done(&a);
    free(body);
    /* Exempt group. */
    const char *grp =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"g\",\"operation\":\"CREATE\",\"namespace\":\"tenant-a\",\"name\":\"c\","
        "\"kind\":{\"group\":\"core.cs.sap.com\",\"version\":\"v1alpha1\",\"kind\":\"Component\"},"
        "\"userInfo\":{\"username\":\"bob\",\"groups\":[\"platform-admins\"]},"
        "\"object\":{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
        "\"metadata\":{\"name\":\"c\",\"namespace\":\"tenant-a\"},\"spec\":" HTTP_SPEC "}}}";
    ask(&a, VALIDATE, grp, strlen(grp));
    assert_true(a.allowed);
    done(&a);
    /* Policies do not judge the controller's metadata-only updates. */
    const char *fin =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"f\",\"operation\":\"UPDATE\",\"namespace\":\"tenant-a\",\"name\":\"c\","
        "\"kind\":{\"group\":\"core.cs.sap.com\",\"version\":\"v1alpha1\",\"kind\":\"Component\"},"
        "\"userInfo\":{\"username\":\"system:serviceaccount:co:controller\"},"
        "\"object\":{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
        "\"metadata\":{\"name\":\"c\",\"namespace\":\"tenant-a\",\"finalizers\":[]},"
        "\"spec\":" HTTP_SPEC "},"
        "\"oldObject\":{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
        "\"metadata\":{\"name\":\"c\",\"namespace\":\"tenant-a\",\"finalizers\":["
        "\"component-operator.cs.sap.com\"]},\"spec\":" HTTP_SPEC "}}}";
    ask(&a, VALIDATE, fin, strlen(fin));
    assert_true(a.allowed);
    done(&a);
    /* Once deleted, the policy no longer applies. */
    wh_state_policy_delete(state, "only-git");
    ask_component(&a, VALIDATE, "tenant-a", "c", HTTP_SPEC);
    assert_true(a.allowed);
    done(&a);
}

/* Applies @p a's patch to the object of the review it answered and returns the record. */
static char *record_after(const answer *a, const char *body)
{
    struct json_object *r = parse(body);
    struct json_object *obj = member(member(r, "request"), "object");
    struct json_object *patched = NULL;
    if (a->patch) {
        assert_co_pass(co_json_patch_apply(&patched, obj, a->patch));
    } else {
        patched = json_object_get(obj);
    }
    struct json_object *v = co_json_get(patched, "metadata", "annotations", RECORD_KEY, NULL);
    char *out = v ? co_xstrdup(json_object_get_string(v)) : NULL;
    json_object_put(patched);
    json_object_put(r);
    return out;
}

/* Asks the mutating route and returns the exemption record the object is stored with. */
static char *stored_record(const char *version,
                           const char *user,
                           const char *groups,
                           const char *meta,
                           const char *spec,
                           const char *old_meta,
                           const char *old_spec)
{
    char *body = review_of(version, user, groups, meta, spec, old_meta, old_spec);
    char *path = co_xasprintf("/mutate/%s/components", version);
    answer a;
    ask(&a, path, body, strlen(body));
    assert_true(a.allowed);
    char *rec = record_after(&a, body);
    done(&a);
    free(path);
    free(body);
    return rec;
}

static void assert_record(char *got, const char *want)
{
    if (want) {
        assert_non_null(got);
        assert_string_equal(got, want);
    } else if (got) {
        fail_msg("record %s, expected none", got);
    }
    free(got);
}

/*
 * The exemption record is set from the authenticated requester whenever a request writes the
 * spec or the record; what the request itself says there never counts. Other writes keep it.
 */
static void test_wh_admission__exemption_record_comes_from_the_requester(void **ctx)
{
    (void)ctx;
    with_sources_policy("Deny");
    static const char *const want = "{\"groups\":[\"platform-admins\"]}";
    static const char *const versions[][2] = {{"v1alpha1", ALPHA_SPEC}, {"v1beta1", BETA_SPEC}};
    for (size_t i = 0; i < CO_ARRAY_SIZE(versions); i++) {
        const char *ver = versions[i][0], *spec = versions[i][1];
        char *changed = co_xasprintf("%.*s,\"path\":\"x\"}", (int)strlen(spec) - 1, spec);
        /* CREATE: an exempt group is recorded, a tenant's claim removed */
        assert_record(stored_record(ver, "bob", ADMINS, "", spec, "", NULL), want);
        assert_record(stored_record(ver, "alice", TENANT, FORGED_RECORD, spec, "", NULL), NULL);
        assert_record(stored_record(ver, "bob", ADMINS, FORGED_RECORD, spec, "", NULL), want);
        assert_record(stored_record(ver, "root", TENANT, "", spec, "", NULL),
                      "{\"user\":\"root\"}");
        /* a spec write by a tenant drops an admin's record; by an admin, sets it */
        assert_record(
            stored_record(ver, "alice", TENANT, ADMINS_RECORD, changed, ADMINS_RECORD, spec), NULL);
        assert_record(stored_record(ver, "bob", ADMINS, "", changed, "", spec), want);
        /* metadata writes keep what is stored, forged (the webhook was bypassed) or not */
        assert_record(stored_record(ver, "alice", TENANT, "\"labels\":{\"a\":\"b\"}," ADMINS_RECORD,
                                    spec, ADMINS_RECORD, spec),
                      want);
        assert_record(stored_record(ver, "alice", TENANT, FORGED_RECORD, spec, FORGED_RECORD, spec),
                      "{\"groups\":[\"root\"]}");
        /* writing the record itself: recorded from the requester, not from the request */
        assert_record(stored_record(ver, "alice", TENANT, FORGED_RECORD, spec, "", spec), NULL);
        assert_record(stored_record(ver, "alice", TENANT, FORGED_RECORD, spec, ADMINS_RECORD, spec),
                      NULL);
        assert_record(stored_record(ver, "alice", TENANT, "", spec, ADMINS_RECORD, spec), NULL);
        assert_record(stored_record(ver, "bob", ADMINS, FORGED_RECORD, spec, "", spec), want);
        /* also on an object being deleted, which gets no defaults */
        assert_record(stored_record(ver, "alice", TENANT,
                                    "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"," FORGED_RECORD,
                                    spec, "", spec),
                      NULL);
        free(changed);
    }
    /* the record is the only change a metadata-only write by an admin can get */
    answer a;
    ask_review(&a, "v1alpha1", "bob", ADMINS, FORGED_RECORD, ALPHA_SPEC, FORGED_RECORD, ALPHA_SPEC);
    assert_null(a.patch);
    done(&a);
    ask_review(&a, "v1alpha1", "bob", ADMINS, "\"annotations\":{\"" RECORD_KEY "\":\"x\"}",
               ALPHA_SPEC, "", ALPHA_SPEC);
    assert_non_null(a.patch);
    assert_int_equal(json_object_array_length(a.patch), 1);
    assert_contains(patch_text(&a), "/metadata/annotations/component-operator.cs.sap.com~1exempt");
    done(&a);
}

static void test_wh_admission__policy_defaults_in_the_mutating_path(void **ctx)
{
    (void)ctx;
    policy_exists("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","
                  "\"metadata\":{\"name\":\"a-defaults\"},\"spec\":{\"defaults\":{"
                  "\"deletePolicy\":\"Orphan\",\"serviceAccountName\":\"deployer\"}}}");
    policy_exists("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","
                  "\"metadata\":{\"name\":\"b-defaults\"},\"spec\":{\"defaults\":{"
                  "\"deletePolicy\":\"Delete\",\"requeueInterval\":\"30m\"}}}");
    answer a;
    ask_component(&a, MUTATE, "ns", "c", "{\"sourceRef\":" GIT_SRC "}");
    assert_true(a.allowed);
    assert_non_null(a.patch);
    struct json_object *obj = parse("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                                    "\"Component\",\"metadata\":{\"name\":\"c\",\"namespace\":"
                                    "\"ns\"},\"spec\":{\"sourceRef\":" GIT_SRC "}}");
    struct json_object *patched = NULL;
    assert_co_pass(co_json_patch_apply(&patched, obj, a.patch));
    struct json_object *spec = member(patched, "spec");
    /* The first policy by name wins a conflict, and a warning says so. */
    assert_string_equal(json_object_get_string(member(spec, "deletePolicy")), "Orphan");
    assert_string_equal(json_object_get_string(member(spec, "serviceAccountName")), "deployer");
    assert_string_equal(json_object_get_string(member(spec, "requeueInterval")), "30m");
    assert_null(member(spec, "retryInterval"));
    assert_null(member(spec, "timeout"));
    assert_true(has_warning(&a, "b-defaults"));
    /* A value the Component sets itself is kept. */
    done(&a);
    ask_component(&a, MUTATE, "ns", "c", "{\"sourceRef\":" GIT_SRC ",\"deletePolicy\":\"Delete\"}");
    assert_null(
        strstr(json_object_to_json_string_ext(a.patch, JSON_C_TO_STRING_PLAIN), "deletePolicy"));
    done(&a);
    json_object_put(patched);
    json_object_put(obj);
}

/* rules.lifecycle denies at admission, naming the field; defaults.enabled: false switches
 * the Components of the selected namespaces off where they say nothing themselves. */
static void test_wh_admission__lifecycle_policy(void **ctx)
{
    (void)ctx;
    namespace_exists("tenant-a", "{\"tenant\":\"true\"}");
    policy_exists("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","
                  "\"metadata\":{\"name\":\"tenants\"},\"spec\":{\"namespaceSelector\":{"
                  "\"matchLabels\":{\"tenant\":\"true\"}},\"rules\":{\"lifecycle\":{"
                  "\"allowUnmanaged\":false,\"maxGracePeriod\":\"10m\"}},\"defaults\":{"
                  "\"enabled\":false}}}");
    answer a;
    ask_component(&a, VALIDATE, "tenant-a", "c",
                  "{\"sourceRef\":" GIT_SRC ",\"managed\":false,\"gracePeriod\":\"1h\"}");
    assert_false(a.allowed);
    assert_int_equal(a.code, 403);
    assert_contains(a.message, "ComponentPolicy \"tenants\": lifecycle: spec.managed: false "
                               "(Unmanaged) is not allowed; spec.gracePeriod 1h0m0s is above the "
                               "maximum of 10m0s");
    done(&a);
    ask_component(&a, VALIDATE, "tenant-a", "c",
                  "{\"sourceRef\":" GIT_SRC ",\"gracePeriod\":\"5m\"}");
    assert_true(a.allowed);
    done(&a);
    ask_component(&a, MUTATE, "tenant-a", "c", "{\"sourceRef\":" GIT_SRC "}");
    assert_true(a.allowed);
    assert_non_null(a.patch);
    struct json_object *obj = parse("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                                    "\"Component\",\"metadata\":{\"name\":\"c\",\"namespace\":"
                                    "\"tenant-a\"},\"spec\":{\"sourceRef\":" GIT_SRC "}}");
    struct json_object *patched = NULL;
    assert_co_pass(co_json_patch_apply(&patched, obj, a.patch));
    struct json_object *enabled = member(member(patched, "spec"), "enabled");
    assert_non_null(enabled);
    assert_false(json_object_get_boolean(enabled));
    done(&a);
    /* a Component that says enabled: true keeps it; outside the tenant nothing is written */
    ask_component(&a, MUTATE, "tenant-a", "c", "{\"sourceRef\":" GIT_SRC ",\"enabled\":true}");
    assert_true(a.allowed);
    assert_null(
        strstr(json_object_to_json_string_ext(a.patch, JSON_C_TO_STRING_PLAIN), "\"enabled\""));
    done(&a);
    ask_component(&a, MUTATE, "other", "c", "{\"sourceRef\":" GIT_SRC "}");
    assert_true(a.allowed);
    assert_null(
        strstr(json_object_to_json_string_ext(a.patch, JSON_C_TO_STRING_PLAIN), "\"enabled\""));
    done(&a);
    json_object_put(patched);
    json_object_put(obj);
}

static void test_wh_admission__invalid_policy_from_the_watch_is_ignored(void **ctx)
{
    (void)ctx;
    struct json_object *bad =
        parse("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","
              "\"metadata\":{\"name\":\"bad\"},\"spec\":{\"rules\":{\"sourceKinds\":{"
              "\"action\":\"Block\"}}}}");
    assert_co_fail_with(CO_EINVALID, wh_state_policy_put(state, bad));
    json_object_put(bad);
    size_t comps, pols, nss, pend;
    wh_state_sizes(state, &comps, &pols, &nss, &pend);
    assert_int_equal(pols, 0);
}

/* --- conversion ----------------------------------------------------------------------------- */

static void test_wh_admission__conversion_round_trip(void **ctx)
{
    (void)ctx;
    size_t len = 0;
    char *body = co_test_fixture("webhook/conversion-v1alpha1-to-v1beta1.json", &len);
    wh_handlers h = wh_admission_handlers(state);
    wh_http_request req = {"POST", "/convert", "application/json", body, len};
    wh_http_response r;
    wh_http_handle(&r, &h, &req);
    assert_int_equal(r.status, 200);
    struct json_object *resp = NULL;
    assert_co_pass(co_json_parse(&resp, r.body, r.body_len));
    wh_http_response_dispose(&r);
    struct json_object *objs = co_json_get(resp, "response", "convertedObjects", NULL);
    assert_int_equal(json_object_array_length(objs), 3);
    struct json_object *first = json_object_array_get_idx(objs, 0);
    assert_string_equal(json_object_get_string(member(first, "apiVersion")),
                        "core.cs.sap.com/v1beta1");
    assert_string_equal(json_object_get_string(co_json_get(first, "metadata", "uid", NULL)), "u-1");
    assert_non_null(co_json_get(first, "spec", "source", "http", "url", NULL));
    assert_null(co_json_get(first, "spec", "sourceRef", NULL));
    /* And back: the original objects, exactly. */
    struct json_object *back_review = parse("{\"apiVersion\":\"apiextensions.k8s.io/v1\","
                                            "\"kind\":\"ConversionReview\",\"request\":{"
                                            "\"uid\":\"back\",\"desiredAPIVersion\":"
                                            "\"core.cs.sap.com/v1alpha1\"}}");
    json_object_object_add(member(back_review, "request"), "objects", json_object_get(objs));
    const char *text = json_object_to_json_string(back_review);
    wh_http_request back = {"POST", "/convert", "application/json", text, strlen(text)};
    wh_http_handle(&r, &h, &back);
    struct json_object *resp2 = NULL;
    assert_co_pass(co_json_parse(&resp2, r.body, r.body_len));
    wh_http_response_dispose(&r);
    struct json_object *orig = parse(body);
    assert_true(co_json_equal(co_json_get(resp2, "response", "convertedObjects", NULL),
                              co_json_get(orig, "request", "objects", NULL)));
    json_object_put(orig);
    json_object_put(resp2);
    json_object_put(back_review);
    json_object_put(resp);
    free(body);
}

static void test_wh_admission__conversion_of_a_stranger_fails(void **ctx)
{
    (void)ctx;
    const char *body =
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
        "\"request\":{\"uid\":\"s\",\"desiredAPIVersion\":\"core.cs.sap.com/v1beta1\","
        "\"objects\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
        "\"metadata\":{\"name\":\"cm\",\"namespace\":\"ns\"}}]}}";
    wh_handlers h = wh_admission_handlers(state);
    wh_http_request req = {"POST", "/convert", "application/json", body, strlen(body)};
    wh_http_response r;
    wh_http_handle(&r, &h, &req);
    assert_int_equal(r.status, 200);
    assert_contains(r.body, "\"status\":\"Failure\"");
    assert_contains(r.body, "objects[0] (ns/cm): ");
    assert_int_equal(r.internal_error, 0);
    wh_http_response_dispose(&r);
}

/* --- members the decisions never read are parsed without being built ------------------------ */

static const char *const all_paths[] = {
    "/validate/v1alpha1/components",
    "/validate/v1beta1/components",
    "/mutate/v1alpha1/components",
    "/mutate/v1beta1/components",
    "/convert",
    "/validate/v1alpha1/componentpolicies",
    "/validate/v1alpha1/blueprints",
    "/validate/v1alpha1/blueprintversions",
};

/* The same cluster in a fresh state: a policy that warns, audits and defaults in team-a. */
static wh_state *populated_state(void)
{
    wh_state *st = NULL;
    wh_state_new(&st, 10000);
    static const char *const texts[] = {
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team-a\","
        "\"labels\":{\"tier\":\"tenant\"}}}",
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\",\"metadata\":"
        "{\"name\":\"tenants\"},\"spec\":{\"namespaceSelector\":{\"matchLabels\":{\"tier\":"
        "\"tenant\"}},\"rules\":{\"sourceKinds\":{\"action\":\"Warn\",\"allowed\":[\"git\"]},"
        "\"intervals\":{\"action\":\"Audit\",\"minRequeueInterval\":\"1h\"}},"
        "\"defaults\":{\"deletePolicy\":\"Orphan\",\"retryInterval\":\"2m\"}}}",
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":{"
        "\"name\":\"database\",\"namespace\":\"team-a\"},\"spec\":{\"sourceRef\":"
        "{\"fluxGitRepository\":{\"name\":\"db\"}}}}",
    };
    struct json_object *o = parse(texts[0]);
    wh_state_namespace_put(st, o);
    json_object_put(o);
    o = parse(texts[1]);
    assert_co_pass(wh_state_policy_put(st, o));
    json_object_put(o);
    o = parse(texts[2]);
    wh_state_component_put(st, o);
    json_object_put(o);
    return st;
}

/* The raw answer to @p body on @p path with or without leaving out the unread members, each
 * from a fresh state, so that neither run sees the other's tentative edges. */
static void
raw_answer(wh_http_response *r, const char *path, const char *body, size_t len, int skip)
{
    wh_state *st = populated_state();
    wh_handlers h = wh_admission_handlers(st);
    if (!skip) {
        h.unread = NULL;
    }
    wh_http_request req = {"POST", path, "application/json", body, len};
    wh_http_handle(r, &h, &req);
    wh_state_free(st);
}

/* Asserts that @p body gets byte-identical answers on @p path either way; returns the status. */
static int same_answer(const char *what, const char *path, const char *body, size_t len)
{
    wh_http_response full, pruned;
    raw_answer(&full, path, body, len, 0);
    raw_answer(&pruned, path, body, len, 1);
    if (full.status != pruned.status || full.body_len != pruned.body_len ||
        memcmp(full.body, pruned.body, full.body_len) != 0 ||
        full.internal_error != pruned.internal_error ||
        strcmp(full.content_type, pruned.content_type) != 0) {
        fail_msg("%s on %s:\n full   %d %.*s\n pruned %d %.*s", what, path, full.status,
                 (int)full.body_len, full.body, pruned.status, (int)pruned.body_len, pruned.body);
    }
    int status = full.status;
    wh_http_response_dispose(&full);
    wh_http_response_dispose(&pruned);
    return status;
}

static void test_wh_admission__unread_members_change_no_answer_to_a_fixture(void **ctx)
{
    (void)ctx;
    static const char *const dirs[] = {"webhook", "webhook/admission"};
    size_t compared = 0;
    for (size_t d = 0; d < CO_ARRAY_SIZE(dirs); d++) {
        co_test_names files = co_test_fixture_files(dirs[d], ".json");
        for (size_t i = 0; i < files.len; i++) {
            size_t len = 0;
            char *body = co_test_fixture(files.items[i], &len);
            for (size_t p = 0; p < CO_ARRAY_SIZE(all_paths); p++) {
                (void)same_answer(files.items[i], all_paths[p], body, len);
                compared++;
            }
            free(body);
        }
        co_test_names_free(&files);
    }
    assert_true(compared >= 20 * CO_ARRAY_SIZE(all_paths));
}

/* The UPDATE fixture (managedFields and status on both objects) with the members of
 * @p member_json set in @p which ("object" or "oldObject"); managedFields and annotations go
 * into its metadata. */
static char *update_with(const char *which, const char *member_json)
{
    struct json_object *review = co_test_fixture_json("webhook/admission-update-v1alpha1.json");
    struct json_object *obj = member(member(review, "request"), which);
    assert_non_null(obj);
    struct json_object *v = parse(member_json);
    json_object_object_foreach (v, key, val) {
        if (!strcmp(key, "managedFields") || !strcmp(key, "annotations")) {
            json_object_object_add(member(obj, "metadata"), key, json_object_get(val));
        } else {
            json_object_object_add(obj, key, json_object_get(val));
        }
    }
    json_object_put(v);
    char *text = co_json_dumps(review, 0);
    json_object_put(review);
    return text;
}

/* Replaces the first occurrence of @p marker in @p text with @p bad (any bytes). */
static char *splice(const char *text, const char *marker, const char *bad)
{
    const char *at = strstr(text, marker);
    assert_non_null(at);
    return co_xasprintf("%.*s%s%s", (int)(at - text), text, bad, at + strlen(marker));
}

static void test_wh_admission__malformed_unread_members_are_refused_as_before(void **ctx)
{
    (void)ctx;
    /* Each is spliced in as the value of a left-out member, in place of a marker string. */
    static const char *const bad[] = {
        "[{\"a\":1,}]",             /* trailing comma */
        "{\"a\":\"\\x\"}",          /* invalid escape */
        "{\"a\":\"\xc3\x28\"}",     /* invalid UTF-8 */
        "{\"a\":\"tab\there\"}",    /* raw control character */
        "[01]",                     /* leading zero */
        "[1e999]",                  /* out of range */
        "[-]",                      /* no digit */
        "[1.]",                     /* no digit after the point */
        "{\"a\":tru}",              /* bad literal */
        "{\"a\\u0000b\":1}",        /* NUL in a key */
        "{\"a\" 1}",                /* no colon */
        "{1:2}",                    /* key not a string */
        "[\"\\ud800\", \"\\u12\"]", /* short \u escape after a lone surrogate */
        "{\"a\":[1 2]}",            /* no comma */
        "'single'",                 /* not a value */
        "\"open",                   /* closed by the next quote, then garbage */
    };
    static const char *const where[] = {"object", "oldObject"};
    static const char *const members[] = {"managedFields", "annotations", "status"};
    size_t refused = 0;
    for (size_t w = 0; w < CO_ARRAY_SIZE(where); w++) {
        for (size_t m = 0; m < CO_ARRAY_SIZE(members); m++) {
            char *marked = co_xasprintf("{\"%s\":\"MARKER\"}", members[m]);
            char *text = update_with(where[w], marked);
            free(marked);
            for (size_t b = 0; b < CO_ARRAY_SIZE(bad); b++) {
                char *body = splice(text, "\"MARKER\"", bad[b]);
                for (size_t p = 0; p < CO_ARRAY_SIZE(all_paths); p++) {
                    int status = same_answer(body, all_paths[p], body, strlen(body));
                    assert_int_equal(status, 400);
                    refused++;
                }
                free(body);
            }
            free(text);
        }
    }
    assert_int_equal(refused, CO_ARRAY_SIZE(where) * CO_ARRAY_SIZE(members) * CO_ARRAY_SIZE(bad) *
                                  CO_ARRAY_SIZE(all_paths));
}

/* Valid JSON of unexpected shape in the left-out members, and nesting at the cap inside them. */
static void test_wh_admission__odd_unread_members_change_no_answer(void **ctx)
{
    (void)ctx;
    static const char *const odd[] = {
        "{\"managedFields\":null,\"status\":null}",
        "{\"managedFields\":\"x\",\"status\":5}",
        "{\"managedFields\":{\"a\":[]},\"status\":[]}",
        "{\"status\":{\"inventory\":[{\"applyOrder\":\"first\"}],\"conditions\":7}}",
        "{\"status\":{\"state\":\"Nonsense\",\"observedGeneration\":1.5e300}}",
        "{\"managedFields\":[{\"manager\":\"\\u00e9\\ud83d\\ude00\"}],\"status\":{}}",
    };
    static const char *const where[] = {"object", "oldObject"};
    for (size_t w = 0; w < CO_ARRAY_SIZE(where); w++) {
        for (size_t o = 0; o < CO_ARRAY_SIZE(odd); o++) {
            char *body = update_with(where[w], odd[o]);
            for (size_t p = 0; p < CO_ARRAY_SIZE(all_paths); p++) {
                (void)same_answer(body, all_paths[p], body, strlen(body));
            }
            free(body);
        }
    }
    /* Nesting: one level over the cap inside status is refused either way, the cap is not.
     * The review, request and object hold status at depth 3. */
    for (int over = 0; over <= 1; over++) {
        co_buf deep = CO_BUF_INIT(SIZE_MAX);
        int levels = CO_MAX_NESTING - 3 + over;
        for (int i = 0; i < levels; i++) {
            assert_co_pass(co_buf_putc(&deep, '['));
        }
        for (int i = 0; i < levels; i++) {
            assert_co_pass(co_buf_putc(&deep, ']'));
        }
        char *text = update_with("object", "{\"status\":\"MARKER\"}");
        char *body = splice(text, "\"MARKER\"", co_buf_cstr(&deep));
        for (size_t p = 0; p < CO_ARRAY_SIZE(all_paths); p++) {
            int status = same_answer("deep status", all_paths[p], body, strlen(body));
            if (over) {
                assert_int_equal(status, 400);
            }
        }
        free(body);
        free(text);
        co_buf_dispose(&deep);
    }
}

/* --- hash flooding ---------------------------------------------------------------------------- */

/* An UPDATE review of a v1alpha1 Component from spec @p old_spec to spec @p spec (JSON text). */
static char *update_review(const char *spec, const char *old_spec)
{
    const char *meta = "\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
                       "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"}";
    return co_xasprintf(
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"uid-update\",\"operation\":\"UPDATE\",\"namespace\":\"ns\",\"name\":\"c\","
        "\"kind\":{\"group\":\"core.cs.sap.com\",\"version\":\"v1alpha1\",\"kind\":\"Component\"},"
        "\"userInfo\":{\"username\":\"alice\"},\"object\":{%s,\"spec\":%s},"
        "\"oldObject\":{%s,\"spec\":%s}}}",
        meta, spec, meta, old_spec);
}

/*
 * A Component whose spec.values has 49,152 keys that all started probing at one slot of the
 * old unkeyed duplicate-key table held a review for seconds (two of them, past the API
 * server's timeout). It is judged as any other: admitted on the validating and mutating
 * routes, on CREATE and on an UPDATE with or without a change, and refused for a bad field
 * elsewhere with that field's message.
 */
static void test_wh_admission__values_with_keys_colliding_under_fnv_are_judged(void **ctx)
{
    (void)ctx;
    const size_t n = 49152;
    co_test_names keys = co_test_flood_keys(CO_TEST_FNV_BASIS, n, co_test_old_dedupe_slots(n), "");
    char *values = co_test_object_of(&keys);
    const char *src = "\"sourceRef\":{\"httpRepository\":{\"url\":\"https://example.com/a.tgz\"}}";
    char *spec = co_xasprintf("{%s,\"values\":%s}", src, values);
    answer a;
    ask_component(&a, VALIDATE, "ns", "c", spec);
    assert_true(a.allowed);
    done(&a);
    ask_component(&a, MUTATE, "ns", "c", spec);
    assert_true(a.allowed);
    done(&a);

    char *body = update_review(spec, spec);
    ask(&a, VALIDATE, body, strlen(body));
    assert_true(a.allowed);
    done(&a);
    free(body);
    /* one value changed: spec is judged again */
    char *changed = co_xstrdup(spec);
    char *at = strstr(changed, "\":49151}");
    assert_non_null(at);
    at[2] = '7';
    body = update_review(changed, spec);
    ask(&a, VALIDATE, body, strlen(body));
    assert_true(a.allowed);
    done(&a);
    free(body);

    char *bad = co_xasprintf("{%s,\"timeout\":\"soon\",\"values\":%s}", src, values);
    ask_component(&a, VALIDATE, "ns", "c", bad);
    assert_false(a.allowed);
    assert_contains(a.message, "spec.timeout: Invalid value: \"soon\"");
    done(&a);
    free(bad);
    free(changed);
    free(spec);
    free(values);
    co_test_names_free(&keys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wh_admission__fixture_reviews, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__denial_lists_causes_per_field, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__mutating_patch_applies_defaults, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_wh_admission__mutating_writes_no_retry_interval_or_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__unchanged_spec_update_gets_no_patch,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wh_admission__exemption_record_comes_from_the_requester, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__mutating_v1beta1_uses_its_own_paths,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wh_admission__cycle_across_namespaces_is_denied_with_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__existing_cycle_is_not_blamed_on_others,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wh_admission__admitted_edges_count_until_the_watch_confirms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__concurrent_twins_never_both_admitted,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__missing_dependency_warns, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__policy_deny_rejects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__policy_warn_and_audit_admit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__policy_selector_and_exemptions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__policy_defaults_in_the_mutating_path,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__lifecycle_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__invalid_policy_from_the_watch_is_ignored,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__conversion_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__conversion_of_a_stranger_fails, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_wh_admission__unread_members_change_no_answer_to_a_fixture, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wh_admission__malformed_unread_members_are_refused_as_before, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wh_admission__odd_unread_members_change_no_answer,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_wh_admission__values_with_keys_colliding_under_fnv_are_judged, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
