/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the Component API model: table-driven over the fixture files in
 * tests/fixtures/component/ (valid corpus, one file per validation rule, defaults, conversion
 * pairs, unconvertible inputs), plus the parts that are easier to state in code (durations,
 * caps, field-error rendering, schema/CRD/model agreement).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <stdint.h>
#include <zlib.h>

#include "co/util/caps.h"
#include "co/api/component.h"
#include "co/util/digest.h"
#include "co/util/duration.h"
#include "co/api/field_error.h"
#include "co/json/json.h"
#include "shared/src/api/schema_lib.h"
#include "tests/support/test_support.h"

/* ---------------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------------- */

/* Canonical encoding: keys sorted, no whitespace. Compared byte for byte. */
static void canonical_into(co_buf *b, json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_object: {
        size_t n = (size_t)json_object_object_length(v);
        char **keys = co_xcalloc(n ? n : 1, sizeof(char *));
        size_t k = 0;
        json_object_object_foreach (v, key, val) {
            (void)val;
            keys[k++] = key;
        }
        qsort(keys, n, sizeof(char *), co_test_strcmp_ptr);
        assert_int_equal(co_buf_putc(b, '{'), 0);
        for (size_t i = 0; i < n; i++) {
            json_object *ks = json_object_new_string(keys[i]);
            assert_int_equal(
                co_buf_printf(b, "%s%s:", i ? "," : "",
                              json_object_to_json_string_ext(ks, JSON_C_TO_STRING_PLAIN)),
                0);
            json_object_put(ks);
            canonical_into(b, co_json_get(v, keys[i], NULL));
        }
        assert_int_equal(co_buf_putc(b, '}'), 0);
        free(keys);
        break;
    }
    case json_type_array: {
        size_t n = json_object_array_length(v);
        assert_int_equal(co_buf_putc(b, '['), 0);
        for (size_t i = 0; i < n; i++) {
            if (i) {
                assert_int_equal(co_buf_putc(b, ','), 0);
            }
            canonical_into(b, json_object_array_get_idx(v, i));
        }
        assert_int_equal(co_buf_putc(b, ']'), 0);
        break;
    }
    case json_type_null:
    case json_type_boolean:
    case json_type_double:
    case json_type_int:
    case json_type_string:
    default:
        assert_int_equal(
            co_buf_puts(b, v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "null"),
            0);
    }
}

static char *canonical(json_object *v)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    canonical_into(&b, v);
    return co_buf_take(&b, NULL);
}

static void assert_json_equal(const char *what, json_object *got, json_object *want)
{
    char *g = canonical(got);
    char *w = canonical(want);
    if (strcmp(g, w) != 0) {
        fail_msg("%s:\n got: %s\nwant: %s", what, g, w);
    }
    free(g);
    free(w);
}

/* Formats every error; sorted when @p sort. */
static co_test_names error_strings(const co_field_errors *errs, int sort)
{
    co_test_names n = {co_xcalloc(errs->len + 1, sizeof(char *)), errs->len};
    for (size_t i = 0; i < errs->len; i++) {
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        assert_int_equal(co_field_error_format(&b, &errs->items[i]), 0);
        n.items[i] = co_buf_take(&b, NULL);
    }
    if (sort) {
        qsort(n.items, n.len, sizeof(char *), co_test_strcmp_ptr);
    }
    return n;
}

static void assert_errors(const char *what, const co_field_errors *errs, json_object *want_arr)
{
    co_test_names got = error_strings(errs, 1);
    size_t nwant = json_object_array_length(want_arr);
    co_test_names want = {co_xcalloc(nwant + 1, sizeof(char *)), nwant};
    for (size_t i = 0; i < nwant; i++) {
        want.items[i] = co_xstrdup(json_object_get_string(json_object_array_get_idx(want_arr, i)));
    }
    qsort(want.items, want.len, sizeof(char *), co_test_strcmp_ptr);
    int same = got.len == want.len && errs->dropped == 0;
    for (size_t i = 0; same && i < got.len; i++) {
        same = strcmp(got.items[i], want.items[i]) == 0;
    }
    if (!same) {
        co_buf m = CO_BUF_INIT(SIZE_MAX);
        assert_int_equal(co_buf_printf(&m, "%s\n got:", what), 0);
        for (size_t i = 0; i < got.len; i++) {
            assert_int_equal(co_buf_printf(&m, "\n    %s", got.items[i]), 0);
        }
        assert_int_equal(co_buf_puts(&m, "\nwant:"), 0);
        for (size_t i = 0; i < want.len; i++) {
            assert_int_equal(co_buf_printf(&m, "\n    %s", want.items[i]), 0);
        }
        fail_msg("%s", co_buf_cstr(&m));
    }
    co_test_names_free(&got);
    co_test_names_free(&want);
}

static json_object *convert(json_object *o, const char *to)
{
    json_object *out = NULL;
    assert_co_pass(co_component_convert(&out, o, to));
    return out;
}

static const char *other_version(json_object *o)
{
    return co_component_version(o) == CO_API_V1ALPHA1 ? CO_COMPONENT_V1BETA1
                                                      : CO_COMPONENT_V1ALPHA1;
}

/* ---------------------------------------------------------------------------------------------
 * Validation
 * ------------------------------------------------------------------------------------------- */

static void assert_valid(const char *what, json_object *o)
{
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    int rc = co_component_validate(&errs, o, NULL, 0);
    if (rc != 0 || !co_field_errors_empty(&errs)) {
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        assert_int_equal(co_field_errors_format(&b, &errs), 0);
        fail_msg("%s: unexpected errors: %s", what, co_buf_cstr(&b));
    }
    co_field_errors_dispose(&errs);
}

static void test_component__valid_corpus_validates(void **state)
{
    (void)state;
    co_test_names files = co_test_fixture_files("component/valid", ".json");
    assert_true(files.len >= 20);
    for (size_t i = 0; i < files.len; i++) {
        json_object *o = co_test_fixture_json(files.items[i]);
        assert_int_equal(co_component_version(o), CO_API_V1ALPHA1);
        assert_valid(files.items[i], o);
        /* the same Component as v1beta1, and both defaulted, are valid too */
        json_object *beta = convert(o, CO_COMPONENT_V1BETA1);
        assert_valid(files.items[i], beta);
        json_object *d = NULL;
        assert_co_pass(co_component_default(&d, o, NULL, NULL));
        assert_valid(files.items[i], d);
        json_object *db = NULL;
        assert_co_pass(co_component_default(&db, beta, NULL, NULL));
        assert_valid(files.items[i], db);
        json_object_put(d);
        json_object_put(db);
        json_object_put(beta);
        json_object_put(o);
    }
    co_test_names_free(&files);
    json_object *full = co_test_fixture_json("component/full.json");
    assert_valid("full.json", full);
    json_object_put(full);
}

static void test_component__invalid_fixtures(void **state)
{
    (void)state;
    co_test_names files = co_test_fixture_files("component/invalid", ".json");
    assert_true(files.len >= 40);
    for (size_t i = 0; i < files.len; i++) {
        json_object *c = co_test_fixture_json(files.items[i]);
        json_object *o = co_json_get(c, "object", NULL);
        co_field_errors errs = CO_FIELD_ERRORS_INIT;
        assert_int_equal(co_component_validate(&errs, o, NULL, 0), CO_EINVALID);
        assert_errors(files.items[i], &errs, co_json_get(c, "errors", NULL));
        co_field_errors_dispose(&errs);

        /* the same object written as v1beta1 reports the same problems at v1beta1 paths */
        json_object *beta_want = co_json_get(c, "errors_v1beta1", NULL);
        if (beta_want && json_object_is_type(beta_want, json_type_string)) {
            json_object_put(c);
            continue; /* "skip": not expressible as v1beta1 */
        }
        json_object *beta = convert(o, CO_COMPONENT_V1BETA1);
        json_object *derived = NULL;
        if (!beta_want) {
            json_object *want = co_json_get(c, "errors", NULL);
            derived = json_object_new_array();
            for (size_t k = 0; k < json_object_array_length(want); k++) {
                const char *e = json_object_get_string(json_object_array_get_idx(want, k));
                size_t plen = strcspn(e, ":");
                char *path = co_xstrndup(e, plen);
                char *mapped = co_component_path_to_v1beta1(path);
                char *line = co_xasprintf("%s%s", mapped, e + plen);
                json_object_array_add(derived, json_object_new_string(line));
                free(line);
                free(mapped);
                free(path);
            }
            beta_want = derived;
        }
        char *what = co_xasprintf("%s (as v1beta1)", files.items[i]);
        assert_int_equal(co_component_validate(&errs, beta, NULL, 0), CO_EINVALID);
        assert_errors(what, &errs, beta_want);
        co_field_errors_dispose(&errs);
        free(what);
        json_object_put(derived);
        json_object_put(beta);
        json_object_put(c);
    }
    co_test_names_free(&files);
}

static void test_component__invalid_v1beta1_fixtures(void **state)
{
    (void)state;
    co_test_names files = co_test_fixture_files("component/invalid-v1beta1", ".json");
    for (size_t i = 0; i < files.len; i++) {
        json_object *c = co_test_fixture_json(files.items[i]);
        json_object *o = co_json_get(c, "object", NULL);
        assert_int_equal(co_component_version(o), CO_API_V1BETA1);
        co_field_errors errs = CO_FIELD_ERRORS_INIT;
        assert_int_equal(co_component_validate(&errs, o, NULL, 0), CO_EINVALID);
        assert_errors(files.items[i], &errs, co_json_get(c, "errors", NULL));
        co_field_errors_dispose(&errs);
        json_object_put(c);
    }
    co_test_names_free(&files);
}

static void test_component__unknown_fields_can_be_allowed(void **state)
{
    (void)state;
    json_object *c = co_test_fixture_json("component/invalid/unknown-fields.json");
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    assert_int_equal(co_component_validate(&errs, co_json_get(c, "object", NULL), NULL,
                                           CO_COMPONENT_ALLOW_UNKNOWN_FIELDS),
                     0);
    assert_true(co_field_errors_empty(&errs));
    json_object_put(c);
}

static void test_component__too_many_items(void **state)
{
    (void)state;
    json_object *o = co_test_fixture_json("component/valid/minimal.json");
    json_object *spec = co_json_get(o, "spec", NULL);
    json_object *deps = json_object_new_array();
    for (int i = 0; i < (int)CO_MAX_SPEC_LIST_ITEMS + 1; i++) {
        json_object *d = json_object_new_object();
        char name[32];
        snprintf(name, sizeof(name), "dep-%d", i);
        json_object_object_add(d, "name", json_object_new_string(name));
        json_object_array_add(deps, d);
    }
    json_object_object_add(spec, "dependencies", deps);
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    assert_int_equal(co_component_validate(&errs, o, NULL, 0), CO_EINVALID);
    co_test_names got = error_strings(&errs, 0);
    assert_int_equal(got.len, 1);
    assert_string_equal(got.items[0], "spec.dependencies: Too many: 1001: must have at most 1000 "
                                      "items");
    co_test_names_free(&got);
    co_field_errors_dispose(&errs);
    json_object_put(o);
}

static void test_component__error_flood_is_capped(void **state)
{
    (void)state;
    json_object *o = co_test_fixture_json("component/valid/minimal.json");
    json_object *deps = json_object_new_array();
    for (int i = 0; i < 500; i++) {
        json_object *d = json_object_new_object();
        json_object_object_add(d, "name", json_object_new_string("Bad_Name"));
        json_object_object_add(d, "namespace", json_object_new_int(i));
        json_object_array_add(deps, d);
    }
    json_object_object_add(co_json_get(o, "spec", NULL), "dependencies", deps);
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    assert_int_equal(co_component_validate(&errs, o, NULL, 0), CO_EINVALID);
    assert_int_equal(errs.len, CO_MAX_FIELD_ERRORS);
    assert_true(errs.dropped > 0);
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_int_equal(co_field_errors_format(&b, &errs), 0);
    char *tail = co_xasprintf(", and %zu more]", errs.dropped);
    assert_contains(co_buf_cstr(&b), tail);
    free(tail);
    co_buf_dispose(&b);
    co_field_errors_dispose(&errs);
    json_object_put(o);
}

static void test_component__validate_rejects_non_objects(void **state)
{
    (void)state;
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    json_object *arr = json_object_new_array();
    assert_int_equal(co_component_validate(&errs, arr, NULL, 0), CO_EINVALID);
    assert_int_equal(errs.len, 1);
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_int_equal(co_field_errors_format(&b, &errs), 0);
    assert_string_equal(co_buf_cstr(&b), "<root>: Invalid value: []: must be a JSON object");
    co_buf_dispose(&b);
    co_field_errors_dispose(&errs);
    json_object_put(arr);
}

/* ---------------------------------------------------------------------------------------------
 * Defaulting
 * ------------------------------------------------------------------------------------------- */

static co_opt_bool opt_bool_of(json_object *v)
{
    return !v ? CO_OPT_UNSET : json_object_get_boolean(v) ? CO_OPT_TRUE : CO_OPT_FALSE;
}

static void test_component__defaults_fixtures(void **state)
{
    (void)state;
    co_test_names files = co_test_fixture_files("component/defaults", ".json");
    for (size_t i = 0; i < files.len; i++) {
        json_object *c = co_test_fixture_json(files.items[i]);
        json_object *pd = co_json_get(c, "policyDefaults", NULL);
        json_object *nsv = co_json_get(c, "namespace", NULL);
        co_component_defaults d = {0};
        d.requeue_interval = json_object_get_string(co_json_get(pd, "requeueInterval", NULL));
        d.retry_interval = json_object_get_string(co_json_get(pd, "retryInterval", NULL));
        d.timeout = json_object_get_string(co_json_get(pd, "timeout", NULL));
        d.reapply_interval = json_object_get_string(co_json_get(pd, "reapplyInterval", NULL));
        d.adoption_policy = co_adoption_policy_parse(
            json_object_get_string(co_json_get(pd, "adoptionPolicy", NULL)));
        d.update_policy =
            co_update_policy_parse(json_object_get_string(co_json_get(pd, "updatePolicy", NULL)));
        d.delete_policy =
            co_delete_policy_parse(json_object_get_string(co_json_get(pd, "deletePolicy", NULL)));
        d.missing_namespaces_policy = co_missing_namespaces_policy_parse(
            json_object_get_string(co_json_get(pd, "missingNamespacesPolicy", NULL)));
        d.service_account_name =
            json_object_get_string(co_json_get(pd, "serviceAccountName", NULL));
        d.enabled = opt_bool_of(co_json_get(pd, "enabled", NULL));
        d.managed = opt_bool_of(co_json_get(pd, "managed", NULL));
        d.grace_period = json_object_get_string(co_json_get(pd, "gracePeriod", NULL));
        d.suspend_mode =
            co_suspend_mode_parse(json_object_get_string(co_json_get(pd, "suspendMode", NULL)));
        const char *ns = nsv ? json_object_get_string(nsv) : NULL;

        json_object *out = NULL;
        assert_co_pass(
            co_component_default(&out, co_json_get(c, "object", NULL), ns, pd ? &d : NULL));
        assert_json_equal(files.items[i], out, co_json_get(c, "expected", NULL));
        /* idempotent: defaulting the result changes nothing */
        json_object *again = NULL;
        assert_co_pass(co_component_default(&again, out, ns, pd ? &d : NULL));
        assert_json_equal(files.items[i], again, out);
        /* the input was not modified */
        json_object *fresh = co_test_fixture_json(files.items[i]);
        assert_json_equal(files.items[i], co_json_get(c, "object", NULL),
                          co_json_get(fresh, "object", NULL));
        json_object_put(fresh);
        json_object_put(again);
        json_object_put(out);
        json_object_put(c);
    }
    co_test_names_free(&files);
}

/* Parses @p obj and checks its effective retry interval and timeout against @p want_ns. */
static void assert_retry_and_timeout(const json_object *obj, int64_t want_ns)
{
    co_component *c = NULL;
    assert_co_pass(co_component_parse(&c, obj));
    assert_int_equal(co_component_retry_ns(c), want_ns);
    assert_int_equal(co_component_timeout_ns(c), want_ns);
    co_component_free(c);
}

/*
 * Defaulting writes no retryInterval or timeout, in either version, so that a stored Component
 * whose requeueInterval is changed later (a merge patch touching only that field) retries and
 * times out at the new interval, as the Go operator derives them.
 */
static void test_component__defaulted_retry_and_timeout_follow_requeue(void **state)
{
    (void)state;
    static const char *const objects[] = {
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
        "\"metadata\":{\"namespace\":\"apps\",\"name\":\"app\"},"
        "\"spec\":{\"sourceRef\":{\"fluxGitRepository\":{\"name\":\"r\"}},"
        "\"requeueInterval\":\"5m\"}}",
        "{\"apiVersion\":\"core.cs.sap.com/v1beta1\",\"kind\":\"Component\","
        "\"metadata\":{\"namespace\":\"apps\",\"name\":\"app\"},"
        "\"spec\":{\"source\":{\"fluxGitRepository\":{\"name\":\"r\"}},"
        "\"intervals\":{\"requeue\":\"5m\"}}}",
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(objects); i++) {
        json_object *o = json_tokener_parse(objects[i]);
        json_object *stored = NULL;
        assert_co_pass(co_component_default(&stored, o, NULL, NULL));
        json_object *alpha = NULL;
        assert_co_pass(co_component_convert(&alpha, stored, CO_COMPONENT_V1ALPHA1));
        json_object *spec = co_json_get(alpha, "spec", NULL);
        assert_null(co_json_get(spec, "retryInterval", NULL));
        assert_null(co_json_get(spec, "timeout", NULL));
        assert_string_equal(json_object_get_string(co_json_get(spec, "requeueInterval", NULL)),
                            "5m");
        assert_retry_and_timeout(alpha, 5 * CO_MINUTE);
        /* a later merge patch of requeueInterval alone, defaulted again as the webhook does */
        json_object_object_add(spec, "requeueInterval", json_object_new_string("7m"));
        json_object *again = NULL;
        assert_co_pass(co_component_default(&again, alpha, NULL, NULL));
        assert_retry_and_timeout(again, 7 * CO_MINUTE);
        /* without any interval the built-in requeue interval is written and both follow it */
        json_object_object_del(co_json_get(again, "spec", NULL), "requeueInterval");
        json_object *bare = NULL;
        assert_co_pass(co_component_default(&bare, again, NULL, NULL));
        assert_string_equal(
            json_object_get_string(co_json_get(bare, "spec", "requeueInterval", NULL)), "10m");
        assert_retry_and_timeout(bare, 10 * CO_MINUTE);
        json_object_put(bare);
        json_object_put(again);
        json_object_put(alpha);
        json_object_put(stored);
        json_object_put(o);
    }

    /* explicit policy defaults for them are the admins' choice and are written */
    co_component_defaults d = {0};
    d.retry_interval = "1m";
    d.timeout = "30m";
    json_object *o = json_tokener_parse(objects[0]);
    json_object *out = NULL;
    assert_co_pass(co_component_default(&out, o, NULL, &d));
    assert_string_equal(json_object_get_string(co_json_get(out, "spec", "retryInterval", NULL)),
                        "1m");
    assert_string_equal(json_object_get_string(co_json_get(out, "spec", "timeout", NULL)), "30m");
    json_object_put(out);
    json_object_put(o);
}

static void test_component__default_rejects_foreign_objects(void **state)
{
    (void)state;
    json_object *o = json_tokener_parse("{\"apiVersion\":\"v1\",\"kind\":\"Secret\"}");
    json_object *out = NULL;
    assert_co_fail_with(CO_EINVALID, co_component_default(&out, o, "ns", NULL));
    assert_null(out);
    json_object_put(o);
    o = json_tokener_parse("{\"apiVersion\":\"core.cs.sap.com/v1beta1\",\"kind\":\"Component\","
                           "\"spec\":{\"policies\":{}}}");
    assert_co_fail_with(CO_EINVALID, co_component_default(&out, o, "ns", NULL));
    assert_contains(co_error_last(), "spec.policies");
    json_object_put(o);
}

/* ---------------------------------------------------------------------------------------------
 * Conversion
 * ------------------------------------------------------------------------------------------- */

static void test_component__conversion_fixtures(void **state)
{
    (void)state;
    co_test_names files = co_test_fixture_files("component/conversion", ".json");
    for (size_t i = 0; i < files.len; i++) {
        json_object *c = co_test_fixture_json(files.items[i]);
        json_object *alpha = co_json_get(c, "v1alpha1", NULL);
        json_object *beta = co_json_get(c, "v1beta1", NULL);
        json_object *got = convert(alpha, CO_COMPONENT_V1BETA1);
        assert_json_equal(files.items[i], got, beta);
        json_object_put(got);
        got = convert(beta, CO_COMPONENT_V1ALPHA1);
        assert_json_equal(files.items[i], got, alpha);
        json_object_put(got);
        /* converting to the object's own version copies it */
        got = convert(alpha, CO_COMPONENT_V1ALPHA1);
        assert_json_equal(files.items[i], got, alpha);
        json_object_put(got);
        json_object_put(c);
    }
    co_test_names_free(&files);
}

/* convert(convert(x)) is byte-identical to x after canonical encoding, both ways round, over
 * every Component in the fixture tree. */
static void round_trip(const char *what, json_object *o)
{
    json_object *there = convert(o, other_version(o));
    json_object *back = convert(there, other_version(there));
    char *a = canonical(o);
    char *b = canonical(back);
    if (strcmp(a, b) != 0) {
        fail_msg("%s: round trip changed the object:\n  in: %s\n out: %s", what, a, b);
    }
    free(a);
    free(b);
    json_object_put(there);
    json_object_put(back);
}

static void test_component__round_trips(void **state)
{
    (void)state;
    static const char *const dirs[] = {"component/valid", "component/conversion",
                                       "component/defaults"};
    size_t count = 0;
    for (size_t d = 0; d < CO_ARRAY_SIZE(dirs); d++) {
        co_test_names files = co_test_fixture_files(dirs[d], ".json");
        for (size_t i = 0; i < files.len; i++) {
            json_object *c = co_test_fixture_json(files.items[i]);
            static const char *const keys[] = {"v1alpha1", "v1beta1", "object", "expected"};
            int any = 0;
            for (size_t k = 0; k < CO_ARRAY_SIZE(keys); k++) {
                json_object *o = co_json_get(c, keys[k], NULL);
                if (o) {
                    round_trip(files.items[i], o);
                    any = 1;
                    count++;
                }
            }
            if (!any) {
                round_trip(files.items[i], c);
                count++;
            }
            json_object_put(c);
        }
        co_test_names_free(&files);
    }
    json_object *full = co_test_fixture_json("component/full.json");
    round_trip("full.json", full);
    json_object_put(full);
    assert_true(count >= 50);
}

static void test_component__unconvertible_fixtures(void **state)
{
    (void)state;
    co_test_names files = co_test_fixture_files("component/unconvertible", ".json");
    for (size_t i = 0; i < files.len; i++) {
        json_object *c = co_test_fixture_json(files.items[i]);
        json_object *o = co_json_get(c, "object", NULL);
        json_object *out = NULL;
        assert_co_fail_with(CO_EINVALID, co_component_convert(&out, o, other_version(o)));
        assert_null(out);
        assert_contains(co_error_last(), json_object_get_string(co_json_get(c, "error", NULL)));
        json_object_put(c);
    }
    co_test_names_free(&files);
}

static void test_component__convert_rejects_unknown_versions(void **state)
{
    (void)state;
    json_object *o = co_test_fixture_json("component/valid/minimal.json");
    json_object *out = NULL;
    assert_co_fail_with(CO_EINVALID, co_component_convert(&out, o, "core.cs.sap.com/v1"));
    assert_contains(co_error_last(), "cannot convert to \"core.cs.sap.com/v1\"");
    assert_co_fail_with(CO_EINVALID, co_component_convert(&out, o, NULL));
    json_object_object_add(o, "apiVersion", json_object_new_string("core.cs.sap.com/v2"));
    assert_co_fail_with(CO_EINVALID, co_component_convert(&out, o, CO_COMPONENT_V1BETA1));
    assert_null(out);
    json_object_put(o);
}

static void test_component__path_to_v1beta1(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"spec.updatePolicy", "spec.policies.update"},
        {"spec.missingNamespacesPolicy", "spec.policies.missingNamespaces"},
        {"spec.requeueInterval", "spec.intervals.requeue"},
        {"spec.kubeConfig.secretRef.name", "spec.target.kubeConfig.secretRef.name"},
        {"spec.sourceRef", "spec.source"},
        {"spec.sourceRef.httpRepository.url", "spec.source.http.url"},
        {"spec.sourceRef.httpRepositoryX", "spec.source.httpRepositoryX"},
        {"spec.sourceRef.git.ref", "spec.source.git.ref"},
        {"spec.path", "spec.source.path"},
        {"spec.dependencies[2].name", "spec.dependencies[2].name"},
        {"spec.pathology", "spec.pathology"},
        {"metadata.name", "metadata.name"},
        {"spec", "spec"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        char *got = co_component_path_to_v1beta1(cases[i][0]);
        assert_string_equal(got, cases[i][1]);
        free(got);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Parsing and the model
 * ------------------------------------------------------------------------------------------- */

static void test_component__parse_encode_round_trip(void **state)
{
    (void)state;
    co_test_names files = co_test_fixture_files("component/valid", ".json");
    files.items = co_xreallocarray(files.items, files.len + 1, sizeof(char *));
    files.items[files.len++] = co_xstrdup("component/full.json");
    for (size_t i = 0; i < files.len; i++) {
        json_object *o = co_test_fixture_json(files.items[i]);
        co_component *c = NULL;
        assert_co_pass(co_component_parse(&c, o));
        json_object *back = NULL;
        assert_co_pass(co_component_to_json(&back, c));
        assert_json_equal(files.items[i], back, o);
        json_object_put(back);
        co_component_free(c);
        /* parsing the v1beta1 form yields the same model */
        json_object *beta = convert(o, CO_COMPONENT_V1BETA1);
        assert_co_pass(co_component_parse(&c, beta));
        assert_int_equal(c->version, CO_API_V1BETA1);
        assert_co_pass(co_component_to_json(&back, c));
        assert_json_equal(files.items[i], back, o);
        json_object_put(back);
        co_component_free(c);
        json_object_put(beta);
        json_object_put(o);
    }
    co_test_names_free(&files);
    co_component_free(NULL);
}

static void test_component__parse_reads_every_field(void **state)
{
    (void)state;
    json_object *o = co_test_fixture_json("component/full.json");
    co_component *c = NULL;
    assert_co_pass(co_component_parse(&c, o));
    assert_string_equal(c->ns, "apps");
    assert_string_equal(c->name, "full");
    assert_int_equal(c->generation, 3);
    assert_string_equal(c->deletion_timestamp, "2026-01-02T04:00:00Z");
    assert_int_equal(c->n_finalizers, 1);
    const co_component_spec *s = &c->spec;
    assert_string_equal(s->ns, "target");
    assert_string_equal(s->kube_config.key, "value");
    assert_true(s->suspend);
    assert_int_equal(s->requeue_interval.ns, 600000000000LL);
    assert_int_equal(s->reapply_interval.ns, 3600000000000LL);
    assert_int_equal(s->update_policy, CO_UPDATE_SSA_OVERRIDE);
    assert_int_equal(s->source.kind, CO_SOURCE_GIT);
    assert_int_equal(s->source.nkinds, 1);
    assert_int_equal(s->source.git.ref_kind, CO_GIT_REF_BRANCH);
    assert_string_equal(s->source.git.secret_name, "git-auth");
    assert_int_equal(s->source.git.interval.ns, 60000000000LL);
    assert_true(s->sticky);
    assert_non_null(s->values);
    assert_int_equal(s->n_values_from, 1);
    assert_string_equal(s->decryption_secret_name, "keys");
    assert_int_equal(s->substitute.len, 1);
    assert_string_equal(s->patches[0].target.label_selector, "app=web");
    assert_string_equal(s->images[0].new_tag, "1.0");
    assert_string_equal(s->dependencies[0].ns, "infra");
    const co_component_status *st = &c->status;
    assert_true(c->has_status);
    assert_int_equal(st->observed_generation, 3);
    assert_int_equal(st->revision, 7);
    assert_string_equal(st->conditions[0].reason, "Ready");
    assert_int_equal(st->inventory[0].apply_order, -1);
    assert_string_equal(st->inventory[0].managed_types[0].version, "*");
    assert_string_equal(st->artifact_revision, "main@sha1:abc");
    assert_string_equal(st->last_applied_revision, "r0");
    co_component_free(c);
    json_object_put(o);
}

static void test_component__parse_rejects_wrong_types(void **state)
{
    (void)state;
    json_object *c = co_test_fixture_json("component/invalid/wrong-types.json");
    co_component *comp = NULL;
    assert_co_fail_with(CO_EINVALID, co_component_parse(&comp, co_json_get(c, "object", NULL)));
    assert_null(comp);
    assert_contains(co_error_last(), "spec.suspend: Invalid value: \"yes\": must be of type "
                                     "boolean");
    json_object_put(c);
    /* semantic problems and unknown fields do not stop parsing */
    c = co_test_fixture_json("component/invalid/dependencies.json");
    assert_co_pass(co_component_parse(&comp, co_json_get(c, "object", NULL)));
    assert_int_equal(comp->spec.n_dependencies, 5);
    assert_null(comp->spec.dependencies[4].name);
    co_component_free(comp);
    json_object_put(c);
    c = co_test_fixture_json("component/invalid/source-two-set.json");
    assert_co_pass(co_component_parse(&comp, co_json_get(c, "object", NULL)));
    assert_int_equal(comp->spec.source.nkinds, 2);
    assert_int_equal(comp->spec.source.kind, CO_SOURCE_FLUX_BUCKET);
    co_component_free(comp);
    json_object_put(c);
    json_object *status = json_tokener_parse(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"spec\":{},"
        "\"status\":{\"observedGeneration\":\"1\"}}");
    assert_co_fail_with(CO_EINVALID, co_component_parse(&comp, status));
    assert_contains(co_error_last(), "status.observedGeneration");
    json_object_put(status);
}

static void test_component__effective_values(void **state)
{
    (void)state;
    json_object *o = co_test_fixture_json("component/valid/minimal.json");
    co_component *c = NULL;
    assert_co_pass(co_component_parse(&c, o));
    assert_int_equal(co_component_requeue_ns(c), 600000000000LL);
    assert_int_equal(co_component_retry_ns(c), 600000000000LL);
    assert_int_equal(co_component_timeout_ns(c), 600000000000LL);
    assert_int_equal(co_component_reapply_ns(c), 3600000000000LL);
    assert_int_equal(co_component_adoption_policy(c), CO_ADOPTION_IF_UNOWNED);
    assert_int_equal(co_component_update_policy(c), CO_UPDATE_SSA_OVERRIDE);
    assert_int_equal(co_component_delete_policy(c), CO_DELETE_DELETE);
    assert_int_equal(co_component_missing_namespaces_policy(c), CO_MISSING_NAMESPACES_CREATE);
    assert_string_equal(co_component_target_namespace(c), "apps");
    assert_string_equal(co_component_target_name(c), "minimal");
    assert_string_equal(co_component_ref_namespace(c, &c->spec.source.flux), "apps");
    assert_false(c->has_status);
    assert_int_equal(c->status.observed_generation, -1);
    co_component_free(c);
    json_object_put(o);

    o = co_test_fixture_json("component/valid/intervals.json");
    assert_co_pass(co_component_parse(&c, o));
    assert_int_equal(co_component_requeue_ns(c), 5400000000000LL);
    assert_int_equal(co_component_retry_ns(c), 45000000000LL);
    assert_int_equal(co_component_timeout_ns(c), 150500000000LL);
    assert_int_equal(co_component_reapply_ns(c), 86400000000000LL);
    co_component_free(c);
    json_object_put(o);

    o = co_test_fixture_json("component/valid/readme-sample.json");
    assert_co_pass(co_component_parse(&c, o));
    assert_string_equal(co_component_target_namespace(c), "target-ns");
    assert_string_equal(co_component_target_name(c), "target-name");
    assert_int_equal(co_component_requeue_ns(c), 600000000000LL);
    assert_int_equal(co_component_retry_ns(c), 180000000000LL);
    assert_int_equal(co_component_timeout_ns(c), 300000000000LL);
    assert_string_equal(co_component_ref_namespace(c, &c->spec.dependencies[1]), "comp-ns");
    assert_string_equal(co_component_ref_namespace(c, &c->spec.dependencies[0]), "other-namespace");
    co_component_free(c);
    json_object_put(o);

    /* a requeue of zero means the default, and retry/timeout follow the effective value */
    o = co_test_fixture_json("component/valid/minimal.json");
    json_object_object_add(co_json_get(o, "spec", NULL), "requeueInterval",
                           json_object_new_string("0s"));
    assert_co_pass(co_component_parse(&c, o));
    assert_int_equal(co_component_retry_ns(c), 600000000000LL);
    co_component_free(c);
    json_object_put(o);
}

static void test_component__source_equality_and_status_json(void **state)
{
    (void)state;
    json_object *o = co_test_fixture_json("component/valid/readme-sample.json");
    co_component *a = NULL, *b = NULL;
    assert_co_pass(co_component_parse(&a, o));
    assert_co_pass(co_component_parse(&b, o));
    assert_true(co_source_ref_equal(&a->spec.source, &b->spec.source));
    free(b->spec.source.flux.name);
    b->spec.source.flux.name = co_xstrdup("other");
    assert_false(co_source_ref_equal(&a->spec.source, &b->spec.source));
    b->spec.source.kind = CO_SOURCE_NONE;
    assert_false(co_source_ref_equal(&a->spec.source, &b->spec.source));
    /* the status alone encodes as it does within the object */
    a->has_status = 1;
    a->status.revision = 3;
    a->status.state = co_xstrdup("Ready");
    json_object *whole = NULL, *status = NULL;
    assert_co_pass(co_component_to_json(&whole, a));
    assert_co_pass(co_component_status_to_json(&status, &a->status));
    assert_true(co_json_equal(co_json_get(whole, "status", NULL), status));
    json_object_put(status);
    json_object_put(whole);
    co_component_free(a);
    co_component_free(b);
    json_object_put(o);
}

static void test_component__annotations_and_finalizers(void **state)
{
    (void)state;
    json_object *o = co_test_fixture_json("component/valid/minimal.json");
    json_object *meta = co_json_get(o, "metadata", NULL);
    json_object *ann = json_object_new_object();
    json_object_object_add(ann, "a.io/x", json_object_new_string("1"));
    json_object_object_add(meta, "annotations", ann);
    json_object *fin = json_object_new_array();
    json_object_array_add(fin, json_object_new_string("other.io/keep"));
    json_object_array_add(fin, json_object_new_string("component-operator.cs.sap.com"));
    json_object_object_add(meta, "finalizers", fin);
    co_component *c = NULL;
    assert_co_pass(co_component_parse(&c, o));
    assert_string_equal(co_component_annotation(c, "a.io/x"), "1");
    assert_null(co_component_annotation(c, "a.io/y"));
    assert_true(co_component_has_finalizer(c, "component-operator.cs.sap.com"));
    assert_true(co_component_has_finalizer(c, "other.io/keep"));
    assert_false(co_component_has_finalizer(c, "component-operator"));
    co_component_free(c);
    json_object_put(o);
}

static void test_component__enum_names(void **state)
{
    (void)state;
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(co_adoption_policy_parse(co_adoption_policy_name(i)), i);
    }
    for (int i = 1; i <= 4; i++) {
        assert_int_equal(co_update_policy_parse(co_update_policy_name(i)), i);
    }
    for (int i = 1; i <= 2; i++) {
        assert_int_equal(co_delete_policy_parse(co_delete_policy_name(i)), i);
        assert_int_equal(co_missing_namespaces_policy_parse(co_missing_namespaces_policy_name(i)),
                         i);
    }
    for (int i = 1; i < CO_SOURCE_KIND_COUNT; i++) {
        assert_int_equal(co_source_kind_parse(co_source_kind_name(i)), i);
    }
    assert_null(co_update_policy_name(CO_UPDATE_UNSET));
    /* the annotation-only delete policies have names but are no spec values */
    assert_string_equal(co_delete_policy_name(CO_DELETE_ORPHAN_ON_APPLY), "OrphanOnApply");
    assert_string_equal(co_delete_policy_name(CO_DELETE_ORPHAN_ON_DELETE), "OrphanOnDelete");
    assert_null(co_delete_policy_name((co_delete_policy)5));
    assert_int_equal(co_delete_policy_parse("OrphanOnApply"), CO_DELETE_UNSET);
    assert_int_equal(co_delete_policy_parse("OrphanOnDelete"), CO_DELETE_UNSET);
    assert_null(co_source_kind_name(CO_SOURCE_NONE));
    assert_int_equal(co_update_policy_parse("ssaOverride"), CO_UPDATE_UNSET);
    assert_int_equal(co_update_policy_parse(NULL), CO_UPDATE_UNSET);
    assert_string_equal(co_api_version_string(CO_API_V1BETA1), CO_COMPONENT_V1BETA1);
    assert_null(co_api_version_string(CO_API_UNKNOWN));
}

/* ---------------------------------------------------------------------------------------------
 * Durations (Go semantics at the CRD pattern's syntax)
 * ------------------------------------------------------------------------------------------- */

static int64_t duration_of(const char *text)
{
    json_object *o = co_test_fixture_json("component/valid/minimal.json");
    json_object_object_add(co_json_get(o, "spec", NULL), "timeout", json_object_new_string(text));
    co_component *c = NULL;
    assert_co_pass(co_component_parse(&c, o));
    int64_t ns = c->spec.timeout.ns;
    co_component_free(c);
    json_object_put(o);
    return ns;
}

static void test_component__durations(void **state)
{
    (void)state;
    assert_int_equal(duration_of("1h30m"), 5400000000000LL);
    assert_int_equal(duration_of("1.5h"), 5400000000000LL);
    assert_int_equal(duration_of("2m30.5s"), 150500000000LL);
    assert_int_equal(duration_of("1h2m3s4ms5\xc2\xb5s6ns"), 3723004005006LL);
    assert_int_equal(duration_of("250000us"), 250000000LL);
    assert_int_equal(duration_of("0.000000001s"), 1);
    assert_int_equal(duration_of("9223372036854775807ns"), 9223372036854775807LL);
    assert_int_equal(duration_of("2562047h47m16.854775807s"), 9223372036854775807LL);
    /* overflow parses as unusable (0) and validation reports it */
    assert_int_equal(duration_of("9223372036854775808ns"), 0);
    assert_int_equal(duration_of("2562048h"), 0);
    json_object *o = co_test_fixture_json("component/valid/minimal.json");
    static const char *const bad[] = {"",    "0",   "1",   ".5s",    "5.s",        "1d",
                                      "-1s", "+1s", "1 s", "1h 30m", "1\xce\xbcs", "1hh",
                                      "s",   "1n",  "1u",  "1ns2",   "1\xc2\xb5",  "1\xc2s"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        json_object_object_add(co_json_get(o, "spec", NULL), "timeout",
                               json_object_new_string(bad[i]));
        co_field_errors errs = CO_FIELD_ERRORS_INIT;
        assert_int_equal(co_component_validate(&errs, o, NULL, 0), CO_EINVALID);
        assert_int_equal(errs.len, 1);
        assert_string_equal(errs.items[0].field, "spec.timeout");
        co_field_errors_dispose(&errs);
    }
    json_object_put(o);
}

/* ---------------------------------------------------------------------------------------------
 * Field errors
 * ------------------------------------------------------------------------------------------- */

static void test_component__field_error_format(void **state)
{
    (void)state;
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    static const char *const sup[] = {"Recreate", "Replace"};
    co_field_errors_unsupported(&errs, "spec.updatePolicy", "Foo", sup, 2);
    co_field_errors_add_novalue(&errs, CO_FIELD_REQUIRED, "spec.sourceRef", "exactly one of %s",
                                "x");
    co_field_errors_add_str(&errs, CO_FIELD_FORBIDDEN, "spec.x", "hidden", "not allowed");
    co_field_errors_add_int(&errs, CO_FIELD_TOO_MANY, "spec.y", 7, "must have at most %d items", 3);
    json_object *v = json_tokener_parse("{\"a\":[1,true,null]}");
    co_field_errors_add(&errs, CO_FIELD_INVALID, "spec.z", v, NULL);
    co_field_errors_add(&errs, CO_FIELD_INVALID, "spec.n", NULL, "null");
    co_field_errors_add_str(&errs, CO_FIELD_DUPLICATE, "spec.d", "q\"u\\o\te\n\x01\xff\xc3\xa9",
                            NULL);
    /* a second identical error is recorded once */
    co_field_errors_add_str(&errs, CO_FIELD_DUPLICATE, "spec.d", "q\"u\\o\te\n\x01\xff\xc3\xa9",
                            NULL);
    json_object_put(v);
    co_test_names got = error_strings(&errs, 0);
    assert_int_equal(got.len, 7);
    assert_string_equal(got.items[0], "spec.updatePolicy: Unsupported value: \"Foo\": supported "
                                      "values: \"Recreate\", \"Replace\"");
    assert_string_equal(got.items[1], "spec.sourceRef: Required value: exactly one of x");
    assert_string_equal(got.items[2], "spec.x: Forbidden: not allowed");
    assert_string_equal(got.items[3], "spec.y: Too many: 7: must have at most 3 items");
    assert_string_equal(got.items[4], "spec.z: Invalid value: {\"a\":[1,true,null]}");
    assert_string_equal(got.items[5], "spec.n: Invalid value: null: null");
    assert_string_equal(got.items[6],
                        "spec.d: Duplicate value: \"q\\\"u\\\\o\\te\\n\\x01\\xff\xc3\xa9\"");
    co_test_names_free(&got);

    co_buf b = CO_BUF_INIT(SIZE_MAX);
    co_field_errors one = CO_FIELD_ERRORS_INIT;
    assert_int_equal(co_field_errors_format(&b, &one), 0);
    assert_string_equal(co_buf_cstr(&b), "");
    co_field_errors_add_novalue(&one, CO_FIELD_REQUIRED, "spec", NULL);
    assert_int_equal(co_field_errors_format(&b, &one), 0);
    assert_string_equal(co_buf_cstr(&b), "spec: Required value");
    co_buf_reset(&b);
    co_field_errors_add_novalue(&one, CO_FIELD_NOT_FOUND, "spec.a", NULL);
    assert_int_equal(co_field_errors_format(&b, &one), 0);
    assert_string_equal(co_buf_cstr(&b), "[spec: Required value, spec.a: Not found]");
    co_buf_dispose(&b);

    /* moving keeps order and dedups */
    co_field_errors_move(&errs, &one);
    assert_int_equal(errs.len, 9);
    assert_true(co_field_errors_empty(&one));
    co_field_errors_set_field(&errs, 0, "spec.policies.update");
    assert_string_equal(errs.items[0].field, "spec.policies.update");

    /* long values are cut, never inside a UTF-8 sequence */
    char longv[600];
    memset(longv, 'a', sizeof(longv) - 1);
    longv[sizeof(longv) - 1] = '\0';
    memcpy(longv + 255, "\xc3\xa9", 2);
    co_field_errors_add_str(&errs, CO_FIELD_INVALID, "spec.long", longv, NULL);
    assert_int_equal(strlen(errs.items[9].value), 2 + 255 + 3);
    co_field_errors_dispose(&errs);
    co_field_errors_dispose(NULL);
    assert_string_equal(co_field_error_type_name(CO_FIELD_TOO_LONG), "Too long");
}

/* ---------------------------------------------------------------------------------------------
 * Schema, CRD and model agree
 * ------------------------------------------------------------------------------------------- */

/* Leaf paths of a JSON document ("spec.sourceRef.git.ref.branch"), arrays as "[]", not
 * descending into spec.values or metadata. */
static void json_leaves(co_test_names *out, json_object *v, const char *path)
{
    if (strcmp(path, "spec.values") == 0 || strcmp(path, "metadata") == 0) {
        out->items = co_xreallocarray(out->items, out->len + 1, sizeof(char *));
        out->items[out->len++] = co_xstrdup(path);
        return;
    }
    if (json_object_is_type(v, json_type_object) && json_object_object_length(v) > 0 &&
        strcmp(path, "spec.postBuild.substitute") != 0) {
        json_object_object_foreach (v, key, val) {
            char *p = path[0] ? co_xasprintf("%s.%s", path, key) : co_xstrdup(key);
            json_leaves(out, val, p);
            free(p);
        }
        return;
    }
    if (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0) {
        char *p = co_xasprintf("%s[]", path);
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_leaves(out, json_object_array_get_idx(v, i), p);
        }
        free(p);
        return;
    }
    out->items = co_xreallocarray(out->items, out->len + 1, sizeof(char *));
    out->items[out->len++] = co_xstrdup(path);
}

/* Leaf paths of an OpenAPI schema, with the same conventions. */
static void schema_leaves(co_test_names *out, json_object *s, const char *path)
{
    json_object *props = co_json_get(s, "properties", NULL);
    json_object *items = co_json_get(s, "items", NULL);
    if (props && strcmp(path, "metadata") != 0) {
        json_object_object_foreach (props, key, val) {
            char *p = path[0] ? co_xasprintf("%s.%s", path, key) : co_xstrdup(key);
            schema_leaves(out, val, p);
            free(p);
        }
        return;
    }
    if (items) {
        char *p = co_xasprintf("%s[]", path);
        schema_leaves(out, items, p);
        free(p);
        return;
    }
    out->items = co_xreallocarray(out->items, out->len + 1, sizeof(char *));
    out->items[out->len++] = co_xstrdup(path);
}

/* Sorts and removes duplicates, into a fresh list. */
static co_test_names unique_sorted(const co_test_names *n)
{
    co_test_names u = {co_xcalloc(n->len + 1, sizeof(char *)), 0};
    char **sorted = co_xcalloc(n->len + 1, sizeof(char *));
    memcpy(sorted, n->items, n->len * sizeof(char *));
    if (n->len > 1) {
        qsort(sorted, n->len, sizeof(char *), co_test_strcmp_ptr);
    }
    for (size_t i = 0; i < n->len; i++) {
        if (u.len == 0 || strcmp(u.items[u.len - 1], sorted[i]) != 0) {
            u.items[u.len++] = co_xstrdup(sorted[i]);
        }
    }
    free(sorted);
    return u;
}

static void
assert_same_fields(const char *what, const co_test_names *all_a, const co_test_names *all_b)
{
    co_test_names ua = unique_sorted(all_a);
    co_test_names ub = unique_sorted(all_b);
    const co_test_names *a = &ua;
    const co_test_names *b = &ub;
    size_t i = 0;
    size_t j = 0;
    while (i < a->len || j < b->len) {
        int c = i == a->len ? 1 : j == b->len ? -1 : strcmp(a->items[i], b->items[j]);
        if (c < 0) {
            fail_msg("%s: field %s is in the CRD schema but not in the model", what, a->items[i]);
        } else if (c > 0) {
            fail_msg("%s: field %s is in the model but not in the CRD schema", what, b->items[j]);
        }
        i++;
        j++;
    }
    co_test_names_free(&ua);
    co_test_names_free(&ub);
}

/* The model holds one source variant at a time; these give full.json each of them in turn. */
static const char *const source_variants[] = {
    "{\"fluxGitRepository\":{\"namespace\":\"n\",\"name\":\"a\"}}",
    "{\"fluxOciRepository\":{\"namespace\":\"n\",\"name\":\"a\"}}",
    "{\"fluxBucket\":{\"namespace\":\"n\",\"name\":\"a\"}}",
    "{\"fluxHelmChart\":{\"namespace\":\"n\",\"name\":\"a\"}}",
    "{\"httpRepository\":{\"url\":\"https://h/a.tar.gz\",\"digestHeader\":\"ETag\","
    "\"revisionHeader\":\"X-Rev\"}}",
    "{\"git\":{\"url\":\"https://h/r.git\",\"ref\":{\"branch\":\"main\",\"tag\":\"v1\","
    "\"semver\":\"1.x\",\"commit\":\"0123456789abcdef0123456789abcdef01234567\"},"
    "\"secretRef\":{\"name\":\"s\"},\"interval\":\"1m\"}}",
    "{\"blueprint\":{\"namespace\":\"n\",\"name\":\"a\"}}",
};

static void test_component__crd_schema_matches_model(void **state)
{
    (void)state;
    json_object *crd = NULL;
    assert_co_pass(co_component_crd(&crd, CO_COMPONENT_CRD_V1BETA1));
    json_object *versions = co_json_get(crd, "spec", "versions", NULL);
    assert_int_equal(json_object_array_length(versions), 2);
    for (size_t v = 0; v < 2; v++) {
        json_object *ver = json_object_array_get_idx(versions, v);
        const char *name = json_object_get_string(co_json_get(ver, "name", NULL));
        json_object *schema = co_json_get(ver, "schema", "openAPIV3Schema", NULL);
        co_test_names from_schema = {NULL, 0};
        co_test_names from_model = {NULL, 0};
        schema_leaves(&from_schema, schema, "");
        for (size_t k = 0; k < CO_ARRAY_SIZE(source_variants); k++) {
            /* the model's view of the fields: what parse + encode keep of the complete
             * fixture; git's ref fields are exclusive, the model still carries all four */
            json_object *full = co_test_fixture_json("component/full.json");
            json_object_object_add(co_json_get(full, "spec", NULL), "sourceRef",
                                   json_tokener_parse(source_variants[k]));
            co_component *c = NULL;
            assert_co_pass(co_component_parse(&c, full));
            json_object *model = NULL;
            assert_co_pass(co_component_to_json(&model, c));
            co_component_free(c);
            json_object *doc =
                convert(model, v == 0 ? CO_COMPONENT_V1ALPHA1 : CO_COMPONENT_V1BETA1);
            json_leaves(&from_model, doc, "");
            if (k == 0) {
                /* the inventory's other encoding: the same list, packed */
                json_object *inv = NULL;
                assert_co_pass(co_component_inventory_get(&inv, co_json_get(doc, "status", NULL)));
                assert_non_null(inv);
                json_object *wrap = json_object_new_object();
                json_object *packed = json_object_new_object();
                json_object_object_add(wrap, "status", packed);
                co_component_inventory_put(packed, inv, 0);
                json_leaves(&from_model, wrap, "");
                json_object_put(wrap);
                json_object_put(inv);
            }
            json_object_put(doc);
            json_object_put(model);
            json_object_put(full);
        }
        assert_true(from_schema.len > 80);
        assert_same_fields(name, &from_schema, &from_model);
        co_test_names_free(&from_schema);
        co_test_names_free(&from_model);
    }
    json_object_put(crd);
}

/* Where the CRD files are: $CO_CRDS_DIR when set (`make crds CRDS_OUT=DIR` sets it), else the
 * repository's crds/. */
static char *crd_file(const char *file)
{
    const char *dir = getenv("CO_CRDS_DIR"); // NOLINT(concurrency-mt-unsafe): one thread
    if (dir && dir[0]) {
        return co_xasprintf("%s/%s", dir, file);
    }
    return co_xasprintf("%s/crds/%s", CO_SOURCE_ROOT, file);
}

/* Where the generated files of deploy/ are: $CO_DEPLOY_DIR when set (`make crds DEPLOY_OUT=DIR`
 * sets it), else the repository's deploy/. */
static char *deploy_file(const char *file)
{
    const char *dir = getenv("CO_DEPLOY_DIR"); // NOLINT(concurrency-mt-unsafe): one thread
    if (dir && dir[0]) {
        return co_xasprintf("%s/%s", dir, file);
    }
    return co_xasprintf("%s/deploy/%s", CO_SOURCE_ROOT, file);
}

/* Takes @p path (freed here). */
static void check_committed(char *path, const char *generated)
{
    const char *update = getenv("CO_UPDATE_CRDS"); // NOLINT(concurrency-mt-unsafe): one thread
    if (update && strcmp(update, "1") == 0) {
        co_test_write_file(path, generated, strlen(generated));
    }
    char *committed = co_test_read_file(path, NULL);
    if (!committed || strcmp(committed, generated) != 0) {
        fail_msg("%s differs from the schema in the code; regenerate it with `make crds`", path);
    }
    free(committed);
    free(path);
}

static void test_component__committed_crd_is_generated(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_component_crd_yaml(&b, 0));
    assert_contains(co_buf_cstr(&b), "name: components.core.cs.sap.com");
    check_committed(crd_file("core.cs.sap.com_components.yaml"), co_buf_cstr(&b));
    co_buf_dispose(&b);
}

static void test_component__committed_v1beta1_crd_is_generated(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_component_crd_yaml(&b, CO_COMPONENT_CRD_V1BETA1));
    assert_contains(co_buf_cstr(&b), "name: v1beta1");
    check_committed(crd_file("v1beta1/core.cs.sap.com_components.yaml"), co_buf_cstr(&b));
    co_buf_dispose(&b);
}

static void test_component__committed_chart_template_is_generated(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_component_crd_chart_template(&b));
    check_committed(deploy_file("chart/templates/crd-components.yaml"), co_buf_cstr(&b));
    co_buf_dispose(&b);
}

/* The template's text around the schema: what Helm reads (rendered and compared with crds/ in
 * tests/unit/test_deploy_chart.c). */
static void test_component__chart_template_shape(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_component_crd_chart_template(&b));
    const char *t = co_buf_cstr(&b);
    assert_contains(t, "metadata:\n  annotations:\n    helm.sh/resource-policy: keep\n"
                       "  name: components.core.cs.sap.com\n");
    assert_contains(t, "spec:\n  conversion:\n{{- if .Values.crds.v1beta1 }}\n"
                       "    strategy: Webhook\n");
    assert_contains(t, "          namespace: \"{{ .Release.Namespace }}\"\n");
    assert_contains(t, "      - v1\n{{- else }}\n    strategy: None\n    webhook: null\n"
                       "{{- end }}\n  group: core.cs.sap.com\n");
    assert_contains(t, "  versions:\n  - additionalPrinterColumns:\n");
    assert_contains(t, "\n{{- if .Values.crds.v1beta1 }}\n  - additionalPrinterColumns:\n");
    assert_contains(t, "    name: v1beta1\n");
    /* two conditions, each closed; no other action anywhere */
    size_t actions = 0;
    for (const char *p = strstr(t, "{{"); p; p = strstr(p + 2, "{{")) {
        actions++;
    }
    assert_int_equal(actions, 6);
    assert_true(strlen(t) > (size_t)2 * 20000);
    co_buf_dispose(&b);
}

static void test_component__crd_shape(void **state)
{
    (void)state;
    for (unsigned flags = 0; flags <= CO_COMPONENT_CRD_V1BETA1; flags++) {
        json_object *crd = NULL;
        assert_co_pass(co_component_crd(&crd, flags));
        json_object *spec = co_json_get(crd, "spec", NULL);
        assert_string_equal(json_object_get_string(co_json_get(spec, "scope", NULL)), "Namespaced");
        json_object *names_o = co_json_get(spec, "names", NULL);
        assert_string_equal(json_object_get_string(json_object_array_get_idx(
                                co_json_get(names_o, "shortNames", NULL), 0)),
                            "comp");
        assert_null(co_json_get(names_o, "categories", NULL));
        assert_null(co_json_get(crd, "metadata", "annotations", NULL));
        json_object *conv = co_json_get(spec, "conversion", NULL);
        json_object *versions = co_json_get(spec, "versions", NULL);
        if (flags == 0) {
            /* v1alpha1 alone: nothing to convert, no webhook to depend on */
            assert_string_equal(json_object_get_string(co_json_get(conv, "strategy", NULL)),
                                "None");
            /* webhook: null, so that an apply over the opt-in's CRD removes the stanza */
            json_object *wh = (json_object *)1;
            assert_true(json_object_object_get_ex(conv, "webhook", &wh));
            assert_null(wh);
            assert_int_equal(json_object_object_length(conv), 2);
            assert_int_equal(json_object_array_length(versions), 1);
        } else {
            assert_string_equal(json_object_get_string(co_json_get(conv, "strategy", NULL)),
                                "Webhook");
            json_object *svc = co_json_get(conv, "webhook", "clientConfig", "service", NULL);
            assert_string_equal(json_object_get_string(co_json_get(svc, "path", NULL)), "/convert");
            assert_string_equal(json_object_get_string(co_json_get(svc, "name", NULL)),
                                "component-webhook");
            assert_string_equal(json_object_get_string(co_json_get(svc, "namespace", NULL)),
                                "component-operator");
            assert_string_equal(json_object_to_json_string_ext(
                                    co_json_get(conv, "webhook", "conversionReviewVersions", NULL),
                                    JSON_C_TO_STRING_PLAIN),
                                "[\"v1\"]");
            assert_int_equal(json_object_array_length(versions), 2);
        }
        for (size_t v = 0; v < json_object_array_length(versions); v++) {
            json_object *ver = json_object_array_get_idx(versions, v);
            assert_string_equal(json_object_get_string(co_json_get(ver, "name", NULL)),
                                v == 0 ? "v1alpha1" : "v1beta1");
            assert_true(json_object_get_boolean(co_json_get(ver, "served", NULL)));
            assert_int_equal(json_object_get_boolean(co_json_get(ver, "storage", NULL)), v == 0);
            assert_non_null(co_json_get(ver, "subresources", "status", NULL));
            json_object *cols = co_json_get(ver, "additionalPrinterColumns", NULL);
            assert_int_equal(json_object_array_length(cols), 3);
            assert_string_equal(json_object_get_string(co_json_get(
                                    json_object_array_get_idx(cols, 1), "jsonPath", NULL)),
                                ".status.conditions[?(@.type=='Ready')].reason");
            json_object *root = co_json_get(ver, "schema", "openAPIV3Schema", NULL);
            json_object *props = co_json_get(root, "properties", NULL);
            json_object *status = co_json_get(props, "status", NULL);
            assert_int_equal(
                json_object_get_int(co_json_get(status, "default", "observedGeneration", NULL)),
                -1);
            /* preserve-unknown-fields only on values */
            char *text = co_xstrdup(json_object_to_json_string(root));
            const char *p = strstr(text, "x-kubernetes-preserve-unknown-fields");
            assert_non_null(p);
            assert_null(strstr(p + 1, "x-kubernetes-preserve-unknown-fields"));
            free(text);
            json_object *spec_props = co_json_get(props, "spec", "properties", NULL);
            assert_true(
                json_object_get_boolean(co_json_get(co_json_get(spec_props, "values", NULL),
                                                    "x-kubernetes-preserve-unknown-fields", NULL)));
            json_object *src = co_json_get(spec_props, v == 0 ? "sourceRef" : "source", NULL);
            assert_int_equal(json_object_array_length(co_json_get(src, "oneOf", NULL)), 7);
        }
        json_object_put(crd);
    }
}

/* The v1alpha1 version is the same with and without v1beta1, so that adding or removing the
 * option changes nothing for v1alpha1's clients. */
static void test_component__crd_v1alpha1_same_with_v1beta1(void **state)
{
    (void)state;
    json_object *alone = NULL;
    json_object *both = NULL;
    assert_co_pass(co_component_crd(&alone, 0));
    assert_co_pass(co_component_crd(&both, CO_COMPONENT_CRD_V1BETA1));
    assert_true(
        co_json_equal(json_object_array_get_idx(co_json_get(alone, "spec", "versions", NULL), 0),
                      json_object_array_get_idx(co_json_get(both, "spec", "versions", NULL), 0)));
    assert_true(co_json_equal(co_json_get(alone, "spec", "names", NULL),
                              co_json_get(both, "spec", "names", NULL)));
    json_object_put(alone);
    json_object_put(both);
}

/* Every field of the schema carries a description (kubectl explain shows them), except
 * metadata: the API server accepts nothing but `type: object` there. */
static void assert_described(json_object *s, const char *path)
{
    if (strcmp(path, "<root>.metadata") == 0) {
        assert_string_equal(json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN),
                            "{\"type\":\"object\"}");
        return;
    }
    if (!co_json_get(s, "description", NULL)) {
        fail_msg("%s has no description", path);
    }
    json_object *props = co_json_get(s, "properties", NULL);
    if (props) {
        json_object_object_foreach (props, key, val) {
            char *p = co_xasprintf("%s.%s", path, key);
            assert_described(val, p);
            free(p);
        }
    }
    json_object *items = co_json_get(s, "items", NULL);
    if (items) {
        char *p = co_xasprintf("%s[]", path);
        assert_described(items, p);
        free(p);
    }
}

/* ---------------------------------------------------------------------------------------------
 * status.inventory and status.packedInventory
 * ------------------------------------------------------------------------------------------- */

/* An inventory of @p n ConfigMaps as the controller writes it. */
static json_object *inventory_of(size_t n)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        char name[32], digest[65];
        snprintf(name, sizeof(name), "cm-%05zu", i);
        co_sha256_hex(digest, name, strlen(name));
        json_object *it = json_object_new_object();
        json_object_object_add(it, "group", json_object_new_string(""));
        json_object_object_add(it, "version", json_object_new_string("v1"));
        json_object_object_add(it, "kind", json_object_new_string("ConfigMap"));
        json_object_object_add(it, "namespace", json_object_new_string("big"));
        json_object_object_add(it, "name", json_object_new_string(name));
        json_object_object_add(it, "adoptionPolicy", json_object_new_string("IfUnowned"));
        json_object_object_add(it, "reconcilePolicy", json_object_new_string("OnObjectChange"));
        json_object_object_add(it, "updatePolicy", json_object_new_string("Replace"));
        json_object_object_add(it, "deletePolicy", json_object_new_string("Delete"));
        json_object_object_add(it, "applyOrder", json_object_new_int64(0));
        json_object_object_add(it, "deleteOrder", json_object_new_int64(0));
        json_object_object_add(it, "digest", json_object_new_string(digest));
        json_object_object_add(it, "phase", json_object_new_string("Ready"));
        json_object_object_add(it, "status", json_object_new_string("Current"));
        json_object_array_add(a, it);
    }
    return a;
}

static size_t compact_len(json_object *v)
{
    return strlen(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
}

static void test_component__inventory_plain_up_to_the_limit_then_packed(void **state)
{
    (void)state;
    json_object *inv = inventory_of(5000);
    size_t plain_len = compact_len(inv);
    json_object *status = json_object_new_object();

    /* at the limit: the plain list, as the Go operator writes it */
    co_component_inventory_put(status, inv, plain_len);
    assert_ptr_equal(co_json_get(status, "inventory", NULL), inv);
    assert_null(co_json_get(status, "packedInventory", NULL));

    /* one byte less: packed, and the plain form gone */
    co_component_inventory_put(status, inv, plain_len - 1);
    assert_null(co_json_get(status, "inventory", NULL));
    json_object *packed = co_json_get(status, "packedInventory", NULL);
    assert_non_null(packed);
    assert_string_equal(co_json_str(packed, "encoding", NULL), CO_INVENTORY_ENCODING);
    int64_t items = 0;
    assert_co_pass(co_json_get_int64(&items, packed, "items", NULL));
    assert_int_equal(items, 5000);
    /* 5,000 dependents: ~1.8 MB plain, which etcd refuses; packed, a fraction of its limit */
    size_t packed_len = compact_len(status);
    print_message("# 5000 items: plain %zu bytes, packed %zu bytes\n", plain_len, packed_len);
    assert_true(plain_len > 3 * CO_MIB / 2);
    assert_true(packed_len < CO_MIB / 2);

    /* read back: the same list */
    json_object *back = NULL;
    assert_co_pass(co_component_inventory_get(&back, status));
    assert_true(co_json_equal(back, inv));
    json_object_put(back);

    /* the same list packs to the same bytes (an unchanged status compares equal) */
    json_object *again = json_object_new_object();
    json_object *copy = co_json_copy(inv);
    co_component_inventory_put(again, copy, 0);
    json_object_put(copy);
    assert_string_equal(co_json_str(again, "packedInventory", "data", NULL),
                        co_json_str(packed, "data", NULL));
    json_object_put(again);

    /* NULL removes both forms; an empty list is written as it is */
    co_component_inventory_put(status, NULL, 0);
    assert_int_equal(json_object_object_length(status), 0);
    json_object *empty = json_object_new_array();
    co_component_inventory_put(status, empty, CO_INVENTORY_PLAIN_MAX);
    assert_ptr_equal(co_json_get(status, "inventory", NULL), empty);
    assert_null(co_json_get(status, "packedInventory", NULL));
    json_object_put(empty);
    json_object_put(status);
    json_object_put(inv);
}

/* Parsing a Component reads either form into the same model. */
static void test_component__parse_reads_packed_inventory(void **state)
{
    (void)state;
    json_object *full = co_test_fixture_json("component/full.json");
    json_object *status = co_json_get(full, "status", NULL);
    co_component *plain = NULL;
    assert_co_pass(co_component_parse(&plain, full));
    assert_true(plain->status.n_inventory > 0);
    json_object *inv = co_json_copy(co_json_get(status, "inventory", NULL));
    co_component_inventory_put(status, inv, 0);
    json_object_put(inv);
    assert_null(co_json_get(status, "inventory", NULL));
    co_component *packed = NULL;
    assert_co_pass(co_component_parse(&packed, full));
    json_object *a = NULL, *b = NULL;
    assert_co_pass(co_component_to_json(&a, plain));
    assert_co_pass(co_component_to_json(&b, packed));
    assert_true(co_json_equal(a, b));
    json_object_put(a);
    json_object_put(b);
    co_component_free(plain);
    co_component_free(packed);
    json_object_put(full);
}

/* Base64 of the gzip of @p len bytes of @p text (the test's own encoder, built on zlib). */
static char *packed_data(const void *text, size_t len)
{
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    assert_int_equal(
        deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&zs, (uLong)len);
    unsigned char *out = co_xmalloc(cap);
    zs.next_in = (Bytef *)(uintptr_t)text;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    char *b64 = co_base64_encode(out, zs.total_out, CO_BASE64_STD);
    deflateEnd(&zs);
    free(out);
    return b64;
}

/* A status whose packedInventory has the given members (NULL: left out). */
static json_object *packed_status(const char *encoding, int64_t items, const char *data)
{
    json_object *status = json_object_new_object();
    json_object *p = json_object_new_object();
    if (encoding) {
        json_object_object_add(p, "encoding", json_object_new_string(encoding));
    }
    if (items >= 0) {
        json_object_object_add(p, "items", json_object_new_int64(items));
    }
    if (data) {
        json_object_object_add(p, "data", json_object_new_string(data));
    }
    json_object_object_add(status, "packedInventory", p);
    return status;
}

static void expect_refused(int code, json_object *status, const char *needle)
{
    json_object *out = NULL;
    assert_co_fail_with(code, co_component_inventory_get(&out, status));
    assert_null(out);
    if (!strstr(co_error_last(), needle)) {
        fail_msg("error \"%s\" does not name \"%s\"", co_error_last(), needle);
    }
    json_object_put(status);
}

/* A packed inventory is read under bounds, and what cannot be read is named. */
static void test_component__packed_inventory_bad_input_named(void **state)
{
    (void)state;
    char *two = packed_data("[{},{}]", 7);
    char *obj = packed_data("{}", 2);
    char *bad_json = packed_data("[{]", 3);
    json_object *ok = packed_status("gzip", 2, two);
    json_object *got = NULL;
    assert_co_pass(co_component_inventory_get(&got, ok));
    assert_int_equal(json_object_array_length(got), 2);
    json_object_put(got);
    json_object_put(ok);

    json_object *both = packed_status("gzip", 2, two);
    json_object_object_add(both, "inventory", json_object_new_array());
    expect_refused(CO_EINVALID, both, "both set");
    json_object *plain = json_object_new_object();
    json_object_object_add(plain, "inventory", json_object_new_string("x"));
    expect_refused(CO_EINVALID, plain, "status.inventory: expected array");
    json_object *notobj = json_object_new_object();
    json_object_object_add(notobj, "packedInventory", json_object_new_string("x"));
    expect_refused(CO_EINVALID, notobj, "status.packedInventory: expected object");
    expect_refused(CO_EINVALID, packed_status("zstd", 2, two), "packedInventory.encoding");
    expect_refused(CO_EINVALID, packed_status(NULL, 2, two), "packedInventory.encoding");
    expect_refused(CO_EINVALID, packed_status("gzip", -1, two), "packedInventory.items");
    expect_refused(CO_EINVALID, packed_status("gzip", 3, two), "packedInventory.items: 3");
    expect_refused(CO_EINVALID, packed_status("gzip", 2, NULL), "packedInventory.data");
    expect_refused(CO_EINVALID, packed_status("gzip", 2, "%%%"), "packedInventory.data");
    /* valid base64, not gzip */
    expect_refused(CO_EINVALID, packed_status("gzip", 2, "aGVsbG8gd29ybGQ="), "invalid gzip");
    /* the stream cut short */
    char *cut = co_xstrdup(two);
    cut[strlen(cut) / 2 & ~(size_t)3] = '\0';
    expect_refused(CO_EINVALID, packed_status("gzip", 2, cut), "truncated");
    expect_refused(CO_EINVALID, packed_status("gzip", 0, obj), "expected a JSON array");
    expect_refused(CO_EINVALID, packed_status("gzip", 1, bad_json), "packedInventory.data");

    /* bytes after the stream */
    unsigned char *raw = NULL;
    size_t rawlen = 0;
    assert_co_pass(co_base64_decode_alloc(&raw, &rawlen, two, strlen(two), CO_BASE64_STD));
    raw = co_xrealloc(raw, rawlen + 3);
    raw[rawlen] = 'a';
    raw[rawlen + 1] = 'b';
    raw[rawlen + 2] = 'c';
    char *trailing = co_base64_encode(raw, rawlen + 3, CO_BASE64_STD);
    expect_refused(CO_EINVALID, packed_status("gzip", 2, trailing), "after the gzip stream");

    /* too large, packed or unpacked */
    char *huge = co_xmalloc(CO_INVENTORY_PACKED_MAX + 5);
    memset(huge, 'A', CO_INVENTORY_PACKED_MAX + 4);
    huge[CO_INVENTORY_PACKED_MAX + 4] = '\0';
    expect_refused(CO_ETOOBIG, packed_status("gzip", 2, huge), "packedInventory.data");
    size_t bomb_len = CO_INVENTORY_UNPACKED_MAX + 1;
    char *spaces = co_xmalloc(bomb_len);
    memset(spaces, ' ', bomb_len);
    spaces[0] = '[';
    spaces[bomb_len - 1] = ']';
    char *bomb = packed_data(spaces, bomb_len);
    assert_true(strlen(bomb) < CO_INVENTORY_PACKED_MAX);
    expect_refused(CO_ETOOBIG, packed_status("gzip", 0, bomb), "decompressed");

    free(spaces);
    free(bomb);
    free(huge);
    free(trailing);
    free(raw);
    free(cut);
    free(bad_json);
    free(obj);
    free(two);
}

static void test_component__crd_fields_are_described(void **state)
{
    (void)state;
    json_object *crd = NULL;
    assert_co_pass(co_component_crd(&crd, CO_COMPONENT_CRD_V1BETA1));
    json_object *versions = co_json_get(crd, "spec", "versions", NULL);
    for (size_t v = 0; v < 2; v++) {
        json_object *ver = json_object_array_get_idx(versions, v);
        assert_described(co_json_get(ver, "schema", "openAPIV3Schema", NULL), "<root>");
    }
    json_object_put(crd);
}

/* co_component_parse_validated() must give what co_component_parse() gives for any object
 * co_component_validate() accepts. Returns whether @p o was valid (and so compared). */
static int parses_alike(const char *what, const json_object *o)
{
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    int valid = co_component_validate(&errs, o, NULL, 0) == 0;
    co_field_errors_dispose(&errs);
    if (!valid) {
        return 0;
    }
    co_component *a = NULL, *b = NULL;
    co_error_clear();
    int ra = co_component_parse(&a, o);
    char *ma = co_xstrdup(co_error_last());
    co_error_clear();
    int rb = co_component_parse_validated(&b, o);
    if (ra != rb || strcmp(ma, co_error_last()) != 0) {
        fail_msg("%s: parse %d \"%s\", parse_validated %d \"%s\"", what, ra, ma, rb,
                 co_error_last());
    }
    free(ma);
    if (ra == 0) {
        json_object *ja = NULL, *jb = NULL;
        assert_co_pass(co_component_to_json(&ja, a));
        assert_co_pass(co_component_to_json(&jb, b));
        char *ta = co_json_dumps(ja, CO_JSON_CANONICAL);
        char *tb = co_json_dumps(jb, CO_JSON_CANONICAL);
        assert_string_equal(ta, tb);
        free(ta);
        free(tb);
        json_object_put(ja);
        json_object_put(jb);
    }
    co_component_free(a);
    co_component_free(b);
    return 1;
}

static void test_component__parse_validated_is_parse_of_a_valid_object(void **state)
{
    (void)state;
    size_t compared = 0;
    co_test_names files = co_test_fixture_files("component/valid", ".json");
    for (size_t i = 0; i < files.len; i++) {
        json_object *o = co_test_fixture_json(files.items[i]);
        json_object *beta = convert(o, CO_COMPONENT_V1BETA1);
        compared += (size_t)parses_alike(files.items[i], o);
        compared += (size_t)parses_alike(files.items[i], beta);
        json_object_put(beta);
        json_object_put(o);
    }
    assert_int_equal(compared, 2 * files.len);
    co_test_names_free(&files);
    /* status is not validated, so a malformed one reaches the parse: refused alike */
    static const char *const statuses[] = {
        "\"x\"",
        "{\"inventory\":[{\"applyOrder\":\"first\",\"name\":5}]}",
        "{\"conditions\":5,\"observedGeneration\":\"1\"}",
        "{\"sourceRef\":{\"artifact\":[]},\"state\":7}",
        "{\"observedGeneration\":3,\"unknownToUs\":{\"a\":1}}",
        "null",
    };
    json_object *full = co_test_fixture_json("component/full.json");
    for (size_t i = 0; i < CO_ARRAY_SIZE(statuses); i++) {
        json_object *st = NULL;
        assert_co_pass(co_json_parse(&st, statuses[i], strlen(statuses[i])));
        json_object *o = co_json_copy(full);
        json_object_object_add(o, "status", st);
        json_object *beta = convert(o, CO_COMPONENT_V1BETA1);
        assert_true(parses_alike(statuses[i], o));
        assert_true(parses_alike(statuses[i], beta));
        json_object_put(beta);
        json_object_put(o);
    }
    assert_true(parses_alike("full.json", full));
    json_object_put(full);
}

/*
 * Member lookups compare the first keys one by one and ask the hash table past them: the same
 * answers either way, null counting as absent.
 */
static void test_component__member_lookup_small_and_large_objects(void **state)
{
    (void)state;
    for (int size = 1; size <= 40; size += 13) {
        struct json_object *o = json_object_new_object();
        for (int i = 0; i < size; i++) {
            char key[16];
            snprintf(key, sizeof(key), "k%d", i);
            json_object_object_add(o, key, i % 5 == 4 ? NULL : json_object_new_int(i));
        }
        for (int i = 0; i < size; i++) {
            char key[16];
            snprintf(key, sizeof(key), "k%d", i);
            struct json_object *v = co_json__member(o, key);
            if (i % 5 == 4) {
                assert_null(v);
            } else {
                assert_non_null(v);
                assert_int_equal(json_object_get_int(v), i);
            }
        }
        assert_null(co_json__member(o, "k"));
        assert_null(co_json__member(o, "k999"));
        assert_null(co_json__member(o, ""));
        json_object_put(o);
    }
    struct json_object *o = json_tokener_parse("{\"\":1,\"a\":\"x\",\"ab\":2}");
    assert_non_null(o);
    assert_int_equal(json_object_get_int(co_json__member(o, "")), 1);
    assert_string_equal(co_json_str(o, "a", NULL), "x");
    assert_null(co_json_str(o, "ab", NULL));
    assert_null(co_json__member(json_object_object_get(o, "a"), "a")); /* not an object */
    assert_null(co_json__member(NULL, "a"));
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_component__valid_corpus_validates),
        cmocka_unit_test(test_component__member_lookup_small_and_large_objects),
        cmocka_unit_test(test_component__parse_validated_is_parse_of_a_valid_object),
        cmocka_unit_test(test_component__invalid_fixtures),
        cmocka_unit_test(test_component__invalid_v1beta1_fixtures),
        cmocka_unit_test(test_component__unknown_fields_can_be_allowed),
        cmocka_unit_test(test_component__too_many_items),
        cmocka_unit_test(test_component__error_flood_is_capped),
        cmocka_unit_test(test_component__validate_rejects_non_objects),
        cmocka_unit_test(test_component__defaults_fixtures),
        cmocka_unit_test(test_component__defaulted_retry_and_timeout_follow_requeue),
        cmocka_unit_test(test_component__default_rejects_foreign_objects),
        cmocka_unit_test(test_component__conversion_fixtures),
        cmocka_unit_test(test_component__round_trips),
        cmocka_unit_test(test_component__unconvertible_fixtures),
        cmocka_unit_test(test_component__convert_rejects_unknown_versions),
        cmocka_unit_test(test_component__path_to_v1beta1),
        cmocka_unit_test(test_component__parse_encode_round_trip),
        cmocka_unit_test(test_component__parse_reads_every_field),
        cmocka_unit_test(test_component__parse_rejects_wrong_types),
        cmocka_unit_test(test_component__effective_values),
        cmocka_unit_test(test_component__annotations_and_finalizers),
        cmocka_unit_test(test_component__source_equality_and_status_json),
        cmocka_unit_test(test_component__enum_names),
        cmocka_unit_test(test_component__durations),
        cmocka_unit_test(test_component__field_error_format),
        cmocka_unit_test(test_component__crd_schema_matches_model),
        cmocka_unit_test(test_component__committed_crd_is_generated),
        cmocka_unit_test(test_component__committed_v1beta1_crd_is_generated),
        cmocka_unit_test(test_component__committed_chart_template_is_generated),
        cmocka_unit_test(test_component__chart_template_shape),
        cmocka_unit_test(test_component__crd_shape),
        cmocka_unit_test(test_component__crd_v1alpha1_same_with_v1beta1),
        cmocka_unit_test(test_component__crd_fields_are_described),
        cmocka_unit_test(test_component__inventory_plain_up_to_the_limit_then_packed),
        cmocka_unit_test(test_component__parse_reads_packed_inventory),
        cmocka_unit_test(test_component__packed_inventory_bad_input_named),
    };
    return cmocka_run_group_tests_name("component", tests, NULL, NULL);
}
