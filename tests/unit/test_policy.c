/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for ComponentPolicy: validation fixtures, evaluation fixtures (selection,
 * exemptions, every rule, strictest action, built-in cycle and missing-target rules), the
 * defaults merge, set maintenance, and the generated CRD.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/duration.h"
#include "co/api/component.h"
#include "co/api/depgraph.h"
#include "co/json/json.h"
#include "co/api/policy.h"
#include "tests/support/test_support.h"

static const char *str_member(json_object *o, const char *key)
{
    json_object *v = co_json_get(o, key, NULL);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* --- validation ------------------------------------------------------------------------------ */

static void test_policy__valid_fixtures(void **state)
{
    (void)state;
    co_test_names files = co_test_fixture_files("policy/valid", ".json");
    for (size_t i = 0; i < files.len; i++) {
        json_object *o = co_test_fixture_json(files.items[i]);
        co_field_errors errs = CO_FIELD_ERRORS_INIT;
        if (co_policy_validate(&errs, o, 0) != 0) {
            co_buf b = CO_BUF_INIT(SIZE_MAX);
            assert_int_equal(co_field_errors_format(&b, &errs), 0);
            fail_msg("%s: %s", files.items[i], co_buf_cstr(&b));
        }
        co_policy *p = NULL;
        assert_co_pass(co_policy_parse(&p, o));
        assert_string_equal(co_policy_name(p),
                            str_member(co_json_get(o, "metadata", NULL), "name"));
        co_policy_free(p);
        json_object_put(o);
    }
    co_test_names_free(&files);
    co_policy_free(NULL);
}

static void test_policy__invalid_fixtures(void **state)
{
    (void)state;
    co_test_names files = co_test_fixture_files("policy/invalid", ".json");
    for (size_t i = 0; i < files.len; i++) {
        json_object *c = co_test_fixture_json(files.items[i]);
        co_field_errors errs = CO_FIELD_ERRORS_INIT;
        assert_int_equal(co_policy_validate(&errs, co_json_get(c, "object", NULL), 0), CO_EINVALID);
        json_object *want = co_json_get(c, "errors", NULL);
        co_test_names got = {co_xcalloc(errs.len + 1, sizeof(char *)), errs.len};
        for (size_t k = 0; k < errs.len; k++) {
            co_buf b = CO_BUF_INIT(SIZE_MAX);
            assert_int_equal(co_field_error_format(&b, &errs.items[k]), 0);
            got.items[k] = co_buf_take(&b, NULL);
        }
        size_t nwant = json_object_array_length(want);
        co_test_names w = {co_xcalloc(nwant + 1, sizeof(char *)), nwant};
        for (size_t k = 0; k < nwant; k++) {
            w.items[k] = co_xstrdup(json_object_get_string(json_object_array_get_idx(want, k)));
        }
        qsort(got.items, got.len, sizeof(char *), co_test_strcmp_ptr);
        qsort(w.items, w.len, sizeof(char *), co_test_strcmp_ptr);
        int same = got.len == w.len;
        for (size_t k = 0; same && k < got.len; k++) {
            same = strcmp(got.items[k], w.items[k]) == 0;
        }
        if (!same) {
            co_buf m = CO_BUF_INIT(SIZE_MAX);
            for (size_t k = 0; k < got.len; k++) {
                assert_int_equal(co_buf_printf(&m, "\n got: %s", got.items[k]), 0);
            }
            for (size_t k = 0; k < w.len; k++) {
                assert_int_equal(co_buf_printf(&m, "\nwant: %s", w.items[k]), 0);
            }
            fail_msg("%s:%s", files.items[i], co_buf_cstr(&m));
        }
        /* an invalid policy never enters a set */
        co_policy_set *set = NULL;
        set = co_policy_set_new();
        assert_co_fail_with(CO_EINVALID, co_policy_set_put(set, co_json_get(c, "object", NULL)));
        assert_contains(co_error_last(), "invalid ComponentPolicy");
        assert_int_equal(co_policy_set_size(set), 0);
        co_policy_set_free(set);
        co_test_names_free(&got);
        co_test_names_free(&w);
        co_field_errors_dispose(&errs);
        json_object_put(c);
    }
    co_test_names_free(&files);
}

/* --- evaluation ------------------------------------------------------------------------------ */

typedef struct request_holder {
    co_policy_request req;
    const char *groups[8];
    co_depgraph *graph;
    co_policy_requester recorded; /* a reconcile's requester, from "record" */
} request_holder;

/*
 * The request of a fixture: an admission's (username, default "tester", and groups), or with
 * "reconcile": true the controller's, whose requester is only what the exemption record
 * "record" (the annotation's value, absent = none) says.
 */
static void build_request(request_holder *h, json_object *c)
{
    json_object *r = co_json_get(c, "request", NULL);
    memset(h, 0, sizeof(*h));
    h->req.ns = str_member(r, "namespace");
    h->req.namespace_labels = co_json_get(r, "namespaceLabels", NULL);
    json_object *reconcile = co_json_get(r, "reconcile", NULL);
    if (reconcile && json_object_get_boolean(reconcile)) {
        const char *record = str_member(r, "record");
        if (record) {
            assert_co_pass(co_policy_requester_parse(&h->recorded, record));
        }
        co_policy_request_set_requester(&h->req, &h->recorded);
    } else {
        h->req.username = str_member(r, "username");
        if (!h->req.username) {
            h->req.username = "tester";
        }
        json_object *groups = co_json_get(r, "groups", NULL);
        for (size_t i = 0; groups && i < json_object_array_length(groups) && i < 8; i++) {
            h->groups[h->req.ngroups++] =
                json_object_get_string(json_object_array_get_idx(groups, i));
        }
        h->req.groups = h->groups;
    }
    json_object *graph = co_json_get(c, "graph", NULL);
    if (graph) {
        h->graph = co_depgraph_new();
        for (size_t i = 0; i < json_object_array_length(graph); i++) {
            json_object *n = json_object_array_get_idx(graph, i);
            json_object *deps = co_json_get(n, "deps", NULL);
            const char *d[16];
            size_t nd = 0;
            for (size_t k = 0; k < json_object_array_length(deps) && k < 16; k++) {
                d[nd++] = json_object_get_string(json_object_array_get_idx(deps, k));
            }
            assert_co_pass(co_depgraph_set(h->graph, str_member(n, "key"), d, nd));
        }
        h->req.graph = h->graph;
    }
}

static co_policy_set *build_set(json_object *policies)
{
    co_policy_set *set = NULL;
    set = co_policy_set_new();
    for (size_t i = 0; policies && i < json_object_array_length(policies); i++) {
        assert_co_pass(co_policy_set_put(set, json_object_array_get_idx(policies, i)));
    }
    return set;
}

/*
 * Where no policy of the set applies, co_policy_evaluate_graph() on the Component's place in
 * the graph (its key and dependency keys taken from its JSON, as the webhook does without
 * parsing it) must report exactly what co_policy_evaluate() reported. Returns 1 when the case
 * was compared.
 */
static int same_without_parsing(json_object *c,
                                const co_policy_set *set,
                                const co_policy_request *req,
                                const co_policy_result *want)
{
    json_object *obj = co_json_get(c, "component", NULL);
    co_policy_request greq = *req;
    if (!greq.ns) {
        greq.ns = str_member(co_json_get(obj, "metadata", NULL), "namespace");
    }
    if (!greq.ns || co_policy_set_applies(set, &greq)) {
        return 0;
    }
    for (size_t k = 0; k < want->len; k++) {
        assert_null(want->items[k].policy); /* nothing came from a policy */
    }
    co_depgraph_list deps = {NULL, 0};
    char *key = NULL;
    assert_co_pass(co_depgraph_object_deps(&deps, &key, obj, greq.ns));
    co_policy_result got;
    assert_co_pass(
        co_policy_evaluate_graph(&got, &greq, key, (const char *const *)deps.items, deps.len));
    assert_int_equal(got.len, want->len);
    assert_int_equal(got.verdict, want->verdict);
    for (size_t k = 0; k < got.len; k++) {
        assert_int_equal(got.items[k].rule, want->items[k].rule);
        assert_int_equal(got.items[k].action, want->items[k].action);
        assert_null(got.items[k].policy);
        assert_string_equal(got.items[k].message, want->items[k].message);
    }
    co_policy_result_dispose(&got);
    co_depgraph_list_dispose(&deps);
    free(key);
    return 1;
}

static void test_policy__evaluate_fixtures(void **state)
{
    (void)state;
    int compared = 0;
    co_test_names files = co_test_fixture_files("policy/evaluate", ".json");
    assert_true(files.len >= 20);
    for (size_t i = 0; i < files.len; i++) {
        json_object *c = co_test_fixture_json(files.items[i]);
        co_policy_set *set = build_set(co_json_get(c, "policies", NULL));
        request_holder h;
        build_request(&h, c);
        co_component *comp = NULL;
        assert_co_pass(co_component_parse(&comp, co_json_get(c, "component", NULL)));
        co_policy_result res;
        assert_co_pass(co_policy_evaluate(&res, set, comp, &h.req));

        json_object *expect = co_json_get(c, "expect", NULL);
        json_object *want = co_json_get(expect, "violations", NULL);
        const char *verdict = str_member(expect, "verdict");
        const char *got_verdict = co_policy_action_name(res.verdict);
        if (strcmp(verdict, got_verdict ? got_verdict : "None") != 0 ||
            res.len != json_object_array_length(want)) {
            co_buf m = CO_BUF_INIT(SIZE_MAX);
            for (size_t k = 0; k < res.len; k++) {
                assert_int_equal(co_policy_violation_format(&m, &res.items[k]), 0);
                assert_int_equal(
                    co_buf_printf(&m, " [%s]\n", co_policy_action_name(res.items[k].action)), 0);
            }
            fail_msg("%s: verdict %s, %zu violations:\n%s", files.items[i],
                     got_verdict ? got_verdict : "None", res.len, co_buf_cstr(&m));
        }
        for (size_t k = 0; k < res.len; k++) {
            json_object *w = json_object_array_get_idx(want, k);
            const co_policy_violation *v = &res.items[k];
            assert_string_equal(co_policy_rule_name(v->rule), str_member(w, "rule"));
            assert_string_equal(co_policy_action_name(v->action), str_member(w, "action"));
            const char *wp = str_member(w, "policy");
            if (wp) {
                assert_non_null(v->policy);
                assert_string_equal(v->policy, wp);
            } else {
                assert_null(v->policy);
            }
            assert_string_equal(v->message, str_member(w, "message"));
        }
        compared += same_without_parsing(c, set, &h.req, &res);
        co_policy_result_dispose(&res);
        co_component_free(comp);
        co_depgraph_free(h.graph);
        co_policy_requester_dispose(&h.recorded);
        co_policy_set_free(set);
        json_object_put(c);
    }
    /* every fixture with a graph and no applying policy, and the ones without a graph */
    assert_true(compared >= 6);
    co_test_names_free(&files);
}

static void test_policy__violation_format(void **state)
{
    (void)state;
    char policy[] = "restrict";
    char message[] = "no";
    co_policy_violation v = {CO_RULE_SOURCE_KINDS, CO_POLICY_DENY, policy, message};
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_policy_violation_format(&b, &v));
    assert_string_equal(co_buf_cstr(&b), "ComponentPolicy \"restrict\": sourceKinds: no");
    co_buf_reset(&b);
    v.policy = NULL;
    v.rule = CO_RULE_DEPENDENCY_CYCLES;
    assert_co_pass(co_policy_violation_format(&b, &v));
    assert_string_equal(co_buf_cstr(&b), "dependencies.cycles: no");
    co_buf_dispose(&b);
    assert_null(co_policy_action_name(CO_POLICY_NONE));
    assert_string_equal(co_policy_action_name(CO_POLICY_AUDIT), "Audit");
}

/* --- defaults -------------------------------------------------------------------------------- */

static void expect_default(json_object *want, const char *key, const char *got)
{
    const char *w = str_member(want, key);
    if (!w) {
        if (got) {
            fail_msg("unexpected default %s = %s", key, got);
        }
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, w);
}

static const char *opt_bool_name(co_opt_bool v)
{
    return v == CO_OPT_TRUE ? "true" : v == CO_OPT_FALSE ? "false" : NULL;
}

static void test_policy__defaults_fixtures(void **state)
{
    (void)state;
    co_test_names files = co_test_fixture_files("policy/defaults", ".json");
    for (size_t i = 0; i < files.len; i++) {
        json_object *c = co_test_fixture_json(files.items[i]);
        co_policy_set *set = build_set(co_json_get(c, "policies", NULL));
        request_holder h;
        build_request(&h, c);
        co_policy_defaults d;
        assert_co_pass(co_policy_defaults_merge(&d, set, &h.req));
        json_object *want = co_json_get(c, "expect", "defaults", NULL);
        expect_default(want, "requeueInterval", d.defaults.requeue_interval);
        expect_default(want, "retryInterval", d.defaults.retry_interval);
        expect_default(want, "timeout", d.defaults.timeout);
        expect_default(want, "reapplyInterval", d.defaults.reapply_interval);
        expect_default(want, "serviceAccountName", d.defaults.service_account_name);
        expect_default(want, "adoptionPolicy", co_adoption_policy_name(d.defaults.adoption_policy));
        expect_default(want, "updatePolicy", co_update_policy_name(d.defaults.update_policy));
        expect_default(want, "deletePolicy", co_delete_policy_name(d.defaults.delete_policy));
        expect_default(want, "missingNamespacesPolicy",
                       co_missing_namespaces_policy_name(d.defaults.missing_namespaces_policy));
        expect_default(want, "enabled", opt_bool_name(d.defaults.enabled));
        expect_default(want, "managed", opt_bool_name(d.defaults.managed));
        expect_default(want, "gracePeriod", d.defaults.grace_period);
        expect_default(want, "suspendMode", co_suspend_mode_name(d.defaults.suspend_mode));
        json_object *warnings = co_json_get(c, "expect", "warnings", NULL);
        assert_int_equal(d.nwarnings, json_object_array_length(warnings));
        for (size_t k = 0; k < d.nwarnings; k++) {
            assert_string_equal(d.warnings[k],
                                json_object_get_string(json_object_array_get_idx(warnings, k)));
        }
        co_policy_defaults_dispose(&d);
        co_depgraph_free(h.graph);
        co_policy_set_free(set);
        json_object_put(c);
    }
    co_test_names_free(&files);
}

/* Policy defaults flow through co_component_default(). */
static void test_policy__defaults_reach_the_component(void **state)
{
    (void)state;
    json_object *c = co_test_fixture_json("policy/defaults/merge.json");
    co_policy_set *set = build_set(co_json_get(c, "policies", NULL));
    co_policy_request req = {.ns = "apps", .username = "u"};
    co_policy_defaults d;
    assert_co_pass(co_policy_defaults_merge(&d, set, &req));
    json_object *comp = json_tokener_parse(
        "{\"apiVersion\":\"core.cs.sap.com/v1beta1\",\"kind\":\"Component\",\"metadata\":"
        "{\"namespace\":\"apps\",\"name\":\"x\"},\"spec\":{\"source\":{\"git\":{\"url\":"
        "\"https://h/r.git\",\"ref\":{\"tag\":\"v1\"}}}}}");
    json_object *out = NULL;
    assert_co_pass(co_component_default(&out, comp, NULL, &d.defaults));
    json_object *spec = co_json_get(out, "spec", NULL);
    assert_string_equal(str_member(co_json_get(spec, "intervals", NULL), "requeue"), "30m");
    /* the policy sets no retry interval, so none is derived: it follows requeue when read */
    assert_null(co_json_get(spec, "intervals", "retry", NULL));
    assert_string_equal(str_member(co_json_get(spec, "intervals", NULL), "timeout"), "1h");
    assert_string_equal(str_member(co_json_get(spec, "policies", NULL), "delete"), "Orphan");
    assert_string_equal(str_member(co_json_get(spec, "target", NULL), "serviceAccountName"),
                        "team");
    json_object_put(out);
    json_object_put(comp);
    co_policy_defaults_dispose(&d);
    co_policy_set_free(set);
    json_object_put(c);
}

/* An admin switches a tenant's optional Components off with defaults.enabled: false; a
 * Component that says enabled: true itself stays on, and a v1beta1 one gets the grace period
 * under intervals. */
static void test_policy__lifecycle_defaults_reach_the_component(void **state)
{
    (void)state;
    json_object *pol = json_tokener_parse(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\","
        "\"metadata\":{\"name\":\"optional-off\"},\"spec\":{\"namespaceSelector\":"
        "{\"matchLabels\":{\"tenant\":\"true\"}},\"defaults\":{\"enabled\":false,"
        "\"gracePeriod\":\"3m\",\"suspendMode\":\"ScaleDown\"}}}");
    co_policy_set *set = co_policy_set_new();
    assert_co_pass(co_policy_set_put(set, pol));
    json_object *labels = json_tokener_parse("{\"tenant\":\"true\"}");
    co_policy_request req = {.ns = "t1", .namespace_labels = labels, .username = "u"};
    co_policy_defaults d;
    assert_co_pass(co_policy_defaults_merge(&d, set, &req));
    assert_int_equal(d.defaults.enabled, CO_OPT_FALSE);
    assert_int_equal(d.defaults.managed, CO_OPT_UNSET);
    static const char *const objects[] = {
        "{\"apiVersion\":\"core.cs.sap.com/v1beta1\",\"kind\":\"Component\",\"metadata\":"
        "{\"namespace\":\"t1\",\"name\":\"x\"},\"spec\":{\"source\":{\"fluxGitRepository\":"
        "{\"name\":\"r\"}}}}",
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":"
        "{\"namespace\":\"t1\",\"name\":\"y\"},\"spec\":{\"sourceRef\":{\"fluxGitRepository\":"
        "{\"name\":\"r\"}},\"enabled\":true}}",
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(objects); i++) {
        json_object *comp = json_tokener_parse(objects[i]);
        json_object *out = NULL;
        assert_co_pass(co_component_default(&out, comp, NULL, &d.defaults));
        co_component *c = NULL;
        assert_co_pass(co_component_parse(&c, out));
        assert_int_equal(co_component_enabled(c), i == 1);
        assert_int_equal(co_component_grace_ns(c), 3 * CO_MINUTE);
        assert_int_equal(co_component_suspend_mode(c), CO_SUSPEND_MODE_SCALE_DOWN);
        if (i == 0) {
            assert_string_equal(str_member(co_json_get(out, "spec", "intervals", NULL), "grace"),
                                "3m");
        }
        co_component_free(c);
        json_object_put(out);
        json_object_put(comp);
    }
    co_policy_defaults_dispose(&d);
    /* outside the selected namespaces nothing is defaulted */
    json_object_object_del(labels, "tenant");
    assert_co_pass(co_policy_defaults_merge(&d, set, &req));
    assert_int_equal(d.defaults.enabled, CO_OPT_UNSET);
    assert_null(d.defaults.grace_period);
    co_policy_defaults_dispose(&d);
    json_object_put(labels);
    co_policy_set_free(set);
    json_object_put(pol);
}

/* --- sets ------------------------------------------------------------------------------------ */

static void test_policy__set_keeps_name_order_and_replaces(void **state)
{
    (void)state;
    co_policy_set *set = NULL;
    set = co_policy_set_new();
    static const char *const order[] = {"m", "b", "z", "a"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(order); i++) {
        char *text = co_xasprintf("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                                  "\"ComponentPolicy\",\"metadata\":{\"name\":\"%s\"},"
                                  "\"spec\":{\"defaults\":{\"timeout\":\"%zum\"}}}",
                                  order[i], i + 1);
        json_object *o = json_tokener_parse(text);
        assert_co_pass(co_policy_set_put(set, o));
        json_object_put(o);
        free(text);
    }
    assert_int_equal(co_policy_set_size(set), 4);
    co_policy_request req = {.ns = "x", .username = "u"};
    co_policy_defaults d;
    assert_co_pass(co_policy_defaults_merge(&d, set, &req));
    /* "a" sorts first and was added with 4m */
    assert_string_equal(d.defaults.timeout, "4m");
    assert_int_equal(d.nwarnings, 3);
    co_policy_defaults_dispose(&d);
    /* replacing "a" keeps one entry; removing it hands the default to "b" */
    json_object *o = json_tokener_parse("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                                        "\"ComponentPolicy\",\"metadata\":{\"name\":\"a\"},"
                                        "\"spec\":{}}");
    assert_co_pass(co_policy_set_put(set, o));
    json_object_put(o);
    assert_int_equal(co_policy_set_size(set), 4);
    assert_co_pass(co_policy_defaults_merge(&d, set, &req));
    assert_string_equal(d.defaults.timeout, "2m");
    co_policy_defaults_dispose(&d);
    co_policy_set_remove(set, "b");
    co_policy_set_remove(set, "nope");
    assert_int_equal(co_policy_set_size(set), 3);
    assert_co_pass(co_policy_defaults_merge(&d, set, &req));
    assert_string_equal(d.defaults.timeout, "1m");
    co_policy_defaults_dispose(&d);
    co_policy_set_free(set);
    co_policy_set_free(NULL);
    co_policy_defaults_dispose(NULL);
    co_policy_result_dispose(NULL);
}

static void test_policy__applies(void **state)
{
    (void)state;
    json_object *o = co_test_fixture_json("policy/valid/everything.json");
    co_policy *p = NULL;
    assert_co_pass(co_policy_parse(&p, o));
    json_object *labels = json_tokener_parse("{\"tenant\":\"true\",\"env\":\"prod\"}");
    co_policy_request req = {.ns = "apps", .namespace_labels = labels, .username = "alice"};
    assert_true(co_policy_applies(p, &req));
    req.ns = "kube-system";
    assert_false(co_policy_applies(p, &req));
    req.ns = "apps";
    req.username = "system:serviceaccount:ops:robot";
    assert_false(co_policy_applies(p, &req));
    /* no requester (a reconcile without an exemption record): no user exemption holds */
    req.username = NULL;
    assert_true(co_policy_applies(p, &req));
    /* a recorded group alone is enough */
    const char *const groups[] = {"platform-admins"};
    req.groups = groups;
    req.ngroups = 1;
    assert_false(co_policy_applies(p, &req));
    req.ngroups = 0;
    json_object_object_add(labels, "example.com/legacy", json_object_new_string("x"));
    req.username = "alice";
    assert_false(co_policy_applies(p, &req));
    json_object_put(labels);
    co_policy_free(p);
    json_object_put(o);
}

/* --- grants --------------------------------------------------------------------------------- */

static void put_policy(co_policy_set *set, const char *name, const char *spec)
{
    char *text = co_xasprintf("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                              "\"ComponentPolicy\",\"metadata\":{\"name\":\"%s\"},"
                              "\"spec\":%s}",
                              name, spec);
    json_object *o = json_tokener_parse(text);
    assert_non_null(o);
    assert_co_pass(co_policy_set_put(set, o));
    json_object_put(o);
    free(text);
}

static void test_policy__grants_need_one_true_and_no_false(void **state)
{
    (void)state;
    co_policy_set *set = NULL;
    set = co_policy_set_new();
    co_policy_request req = {.ns = "apps"};
    co_policy_permissions perm;
    /* nothing is granted without a policy */
    assert_co_pass(co_policy_permissions_of(&perm, NULL, &req));
    assert_int_equal(perm.grants, 0);
    assert_null(perm.kubeconfig_denied_by);
    co_policy_permissions_dispose(&perm);

    put_policy(set, "b-grant",
               "{\"grants\":{\"lookupsOutsideNamespace\":true,\"nestedComponents\":true}}");
    assert_co_pass(co_policy_permissions_of(&perm, set, &req));
    assert_int_equal(perm.grants, CO_GRANT_LOOKUPS_OUTSIDE_NAMESPACE | CO_GRANT_NESTED_COMPONENTS);
    co_policy_permissions_dispose(&perm);

    /* an explicit false in another applying policy takes the grant away */
    put_policy(set, "a-refuse", "{\"grants\":{\"nestedComponents\":false}}");
    assert_co_pass(co_policy_permissions_of(&perm, set, &req));
    assert_int_equal(perm.grants, CO_GRANT_LOOKUPS_OUTSIDE_NAMESPACE);
    co_policy_permissions_dispose(&perm);

    /* ... unless that policy does not apply to the namespace */
    put_policy(set, "a-refuse",
               "{\"exemptNamespaces\":[\"apps\"],\"grants\":{\"nestedComponents\":false}}");
    assert_co_pass(co_policy_permissions_of(&perm, set, &req));
    assert_int_equal(perm.grants, CO_GRANT_LOOKUPS_OUTSIDE_NAMESPACE | CO_GRANT_NESTED_COMPONENTS);
    co_policy_permissions_dispose(&perm);

    /* a grant in a policy selecting other namespaces does not hold here */
    co_policy_set_remove(set, "b-grant");
    put_policy(set, "c-grant",
               "{\"namespaceSelector\":{\"matchLabels\":{\"tier\":\"platform\"}},"
               "\"grants\":{\"insecureKubeConfigServers\":true}}");
    assert_co_pass(co_policy_permissions_of(&perm, set, &req));
    assert_int_equal(perm.grants, 0);
    co_policy_permissions_dispose(&perm);
    json_object *labels = json_tokener_parse("{\"tier\":\"platform\"}");
    req.namespace_labels = labels;
    assert_co_pass(co_policy_permissions_of(&perm, set, &req));
    assert_int_equal(perm.grants, CO_GRANT_INSECURE_KUBECONFIG_SERVERS);
    co_policy_permissions_dispose(&perm);
    json_object_put(labels);
    assert_string_equal(co_policy_grant_name(CO_GRANT_NESTED_COMPONENTS),
                        "grants.nestedComponents");
    co_policy_set_free(set);
    co_policy_permissions_dispose(NULL);
}

static void test_policy__kubeconfig_denial_reaches_templates(void **state)
{
    (void)state;
    co_policy_set *set = NULL;
    set = co_policy_set_new();
    co_policy_request req = {.ns = "apps"};
    co_policy_permissions perm;
    /* Warn does not stop a template; allowed: true does not deny */
    put_policy(set, "warn", "{\"rules\":{\"remoteKubeConfig\":{\"action\":\"Warn\"}}}");
    put_policy(set, "allow", "{\"rules\":{\"remoteKubeConfig\":{\"allowed\":true}}}");
    assert_co_pass(co_policy_permissions_of(&perm, set, &req));
    assert_null(perm.kubeconfig_denied_by);
    co_policy_permissions_dispose(&perm);
    put_policy(set, "deny", "{\"rules\":{\"remoteKubeConfig\":{\"allowed\":false}}}");
    assert_co_pass(co_policy_permissions_of(&perm, set, &req));
    assert_non_null(perm.kubeconfig_denied_by);
    assert_string_equal(perm.kubeconfig_denied_by, "deny");
    co_policy_permissions_dispose(&perm);
    assert_null(perm.kubeconfig_denied_by);
    co_policy_set_free(set);
}

/* Grants follow the same rule as rules: a user or group exemption needs the requester. */
static void test_policy__grants_follow_the_exemption_rule(void **state)
{
    (void)state;
    co_policy_set *set = NULL;
    set = co_policy_set_new();
    put_policy(set, "admins-exempt",
               "{\"exemptGroups\":[\"admins\"],\"grants\":{\"nestedComponents\":true},"
               "\"rules\":{\"remoteKubeConfig\":{}}}");
    put_policy(set, "ci-exempt",
               "{\"exemptUsers\":[\"ci-*\"],\"grants\":{\"lookupsOutsideNamespace\":false}}");
    put_policy(set, "plain", "{\"grants\":{\"lookupsOutsideNamespace\":true}}");
    co_policy_request req = {.ns = "apps"};
    co_policy_permissions perm;
    /* no requester: both exempting policies apply, with their grant, refusal and denial */
    assert_co_pass(co_policy_permissions_of(&perm, set, &req));
    assert_int_equal(perm.grants, CO_GRANT_NESTED_COMPONENTS);
    assert_string_equal(perm.kubeconfig_denied_by, "admins-exempt");
    co_policy_permissions_dispose(&perm);
    /* a recorded admin: "admins-exempt" is out, with its grant and its denial */
    co_policy_requester who;
    assert_co_pass(co_policy_requester_parse(&who, "{\"groups\":[\"admins\"]}"));
    co_policy_request_set_requester(&req, &who);
    assert_co_pass(co_policy_permissions_of(&perm, set, &req));
    assert_int_equal(perm.grants, 0);
    assert_null(perm.kubeconfig_denied_by);
    co_policy_permissions_dispose(&perm);
    co_policy_requester_dispose(&who);
    /* a recorded CI user: "ci-exempt" no longer refuses the lookup grant */
    assert_co_pass(co_policy_requester_parse(&who, "{\"user\":\"ci-robot\"}"));
    co_policy_request_set_requester(&req, &who);
    assert_co_pass(co_policy_permissions_of(&perm, set, &req));
    assert_int_equal(perm.grants, CO_GRANT_NESTED_COMPONENTS | CO_GRANT_LOOKUPS_OUTSIDE_NAMESPACE);
    co_policy_permissions_dispose(&perm);
    co_policy_requester_dispose(&who);
    co_policy_set_free(set);
}

/* --- exemption records ----------------------------------------------------------------------- */

/* Whether a policy with spec @p spec (JSON text) applies to @p req. */
static int policy_applies(const char *spec, const co_policy_request *req)
{
    char *text = co_xasprintf("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                              "\"ComponentPolicy\",\"metadata\":{\"name\":\"p\"},\"spec\":%s}",
                              spec);
    json_object *o = json_tokener_parse(text);
    co_policy *p = NULL;
    assert_co_pass(co_policy_parse(&p, o));
    int r = co_policy_applies(p, req);
    co_policy_free(p);
    json_object_put(o);
    free(text);
    return r;
}

static void test_policy__requester_record_keeps_what_exemptions_match(void **state)
{
    (void)state;
    co_policy_set *set = NULL;
    set = co_policy_set_new();
    co_policy_request req = {.ns = "apps", .username = "ci-robot"};
    const char *const groups[] = {"devs", "platform-a", "admins", "platform-a", "system:masters"};
    req.groups = groups;
    req.ngroups = CO_ARRAY_SIZE(groups);
    /* nothing exempts anybody: no record */
    char unset[] = "unset";
    char *rec = unset;
    assert_co_pass(co_policy_requester_record(&rec, set, &req));
    assert_null(rec);
    put_policy(set, "a", "{\"exemptUsers\":[\"ci-*\"],\"exemptGroups\":[\"admins\"]}");
    /* a policy whose selector matches no namespace still counts: labels may change later */
    put_policy(set, "b",
               "{\"namespaceSelector\":{\"matchLabels\":{\"never\":\"x\"}},"
               "\"exemptGroups\":[\"platform-*\"],\"exemptNamespaces\":[\"apps\"]}");
    assert_co_pass(co_policy_requester_record(&rec, set, &req));
    assert_string_equal(rec, "{\"groups\":[\"platform-a\",\"admins\"],\"user\":\"ci-robot\"}");
    /* The record exempts from the policies that exempted the request; a group no policy
     * exempted then ("devs") was not recorded, so a policy exempting it later does not. */
    co_policy_requester who;
    assert_co_pass(co_policy_requester_parse(&who, rec));
    assert_string_equal(who.username, "ci-robot");
    assert_int_equal(who.ngroups, 2);
    co_policy_request later = {.ns = "other"};
    co_policy_request_set_requester(&later, &who);
    assert_false(policy_applies("{\"exemptUsers\":[\"ci-*\"]}", &later));
    assert_false(policy_applies("{\"exemptGroups\":[\"admins\"]}", &later));
    assert_false(policy_applies("{\"exemptGroups\":[\"platform-?\"]}", &later));
    assert_true(policy_applies("{\"exemptGroups\":[\"devs\"]}", &later));
    assert_true(policy_applies("{\"exemptUsers\":[\"nobody\"]}", &later));
    co_policy_requester_dispose(&who);
    free(rec);

    /* only the user */
    co_policy_request alone = {.ns = "apps", .username = "ci-1"};
    assert_co_pass(co_policy_requester_record(&rec, set, &alone));
    assert_string_equal(rec, "{\"user\":\"ci-1\"}");
    free(rec);
    /* an unexempt user with unexempt groups: nothing */
    const char *const plain[] = {"devs-2"};
    co_policy_request nobody = {.ns = "apps", .username = "alice", .groups = plain, .ngroups = 1};
    assert_co_pass(co_policy_requester_record(&rec, set, &nobody));
    assert_null(rec);
    co_policy_set_free(set);
}

static void test_policy__requester_parse_refuses_malformed_records(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        int code;
        const char *message;
    } bad[] = {
        {"", CO_EINVALID, "annotation component-operator.cs.sap.com/exempt-requester"},
        {"[]", CO_EINVALID, "not a JSON object"},
        {"\"admins\"", CO_EINVALID, "not a JSON object"},
        {"{\"user\":1}", CO_EINVALID, "unexpected member \"user\" (number)"},
        {"{\"groups\":\"admins\"}", CO_EINVALID, "unexpected member \"groups\" (string)"},
        {"{\"groups\":[\"a\",2]}", CO_EINVALID, "groups[1]: not a string"},
        {"{\"groups\":[],\"role\":\"admin\"}", CO_EINVALID, "unexpected member \"role\""},
        {"{\"user\":\"a\"} x", CO_EINVALID, "annotation"},
    };
    char untouched[] = "untouched";
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        co_policy_requester who = {untouched, NULL, 0};
        int rc = co_policy_requester_parse(&who, bad[i].value);
        if (rc != bad[i].code || !strstr(co_error_last(), bad[i].message)) {
            fail_msg("%s: %d %s", bad[i].value, rc, co_error_last());
        }
        assert_string_equal(who.username, "untouched");
    }
    /* caps: length and number of groups */
    co_buf big = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&big, "{\"user\":\""));
    for (size_t i = 0; i < CO_MAX_EXEMPTION_RECORD; i++) {
        assert_co_pass(co_buf_putc(&big, 'u'));
    }
    assert_co_pass(co_buf_puts(&big, "\"}"));
    co_policy_requester who;
    assert_co_fail_with(CO_ETOOBIG, co_policy_requester_parse(&who, co_buf_cstr(&big)));
    co_buf_dispose(&big);
    co_buf many = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_buf_puts(&many, "{\"groups\":["));
    for (int i = 0; i <= CO_MAX_EXEMPTION_RECORD_GROUPS; i++) {
        assert_co_pass(co_buf_printf(&many, "%s\"g\"", i ? "," : ""));
    }
    assert_co_pass(co_buf_puts(&many, "]}"));
    assert_co_fail_with(CO_ETOOBIG, co_policy_requester_parse(&who, co_buf_cstr(&many)));
    co_buf_dispose(&many);
    /* an empty record is a record of nobody */
    assert_co_pass(co_policy_requester_parse(&who, "{}"));
    assert_null(who.username);
    assert_int_equal(who.ngroups, 0);
    co_policy_requester_dispose(&who);
    co_policy_requester_dispose(NULL);
}

static void test_policy__requester_of_a_component(void **state)
{
    (void)state;
    json_object *c = json_tokener_parse(
        "{\"apiVersion\":\"core.cs.sap.com/v1beta1\",\"kind\":\"Component\",\"metadata\":{"
        "\"name\":\"x\",\"annotations\":{\"component-operator.cs.sap.com/exempt-requester\":"
        "\"{\\\"groups\\\":[\\\"admins\\\"]}\"}}}");
    assert_non_null(c);
    co_policy_requester who;
    assert_co_pass(co_policy_requester_of(&who, c));
    assert_null(who.username);
    assert_int_equal(who.ngroups, 1);
    assert_string_equal(who.groups[0], "admins");
    co_policy_requester_dispose(&who);
    json_object_object_del(co_json_get(c, "metadata", NULL), "annotations");
    char stale[] = "stale";
    who.username = stale;
    assert_co_pass(co_policy_requester_of(&who, c));
    assert_null(who.username);
    assert_null(who.groups);
    json_object_put(c);
}

/* --- the CRD --------------------------------------------------------------------------------- */

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

static void test_policy__committed_crd_is_generated(void **state)
{
    (void)state;
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_policy_crd_yaml(&b));
    char *path = crd_file("core.cs.sap.com_componentpolicies.yaml");
    const char *update = getenv("CO_UPDATE_CRDS"); // NOLINT(concurrency-mt-unsafe): one thread
    if (update && strcmp(update, "1") == 0) {
        co_test_write_file(path, co_buf_cstr(&b), b.len);
    }
    char *committed = co_test_read_file(path, NULL);
    if (!committed || strcmp(committed, co_buf_cstr(&b)) != 0) {
        fail_msg("%s differs from the schema in the code; regenerate it with `make crds`", path);
    }
    free(committed);
    free(path);
    co_buf_dispose(&b);

    json_object *crd = NULL;
    assert_co_pass(co_policy_crd(&crd));
    json_object *spec = co_json_get(crd, "spec", NULL);
    assert_string_equal(str_member(spec, "scope"), "Cluster");
    json_object *v = json_object_array_get_idx(co_json_get(spec, "versions", NULL), 0);
    json_object *props = co_json_get(v, "schema", "openAPIV3Schema", "properties", NULL);
    json_object *action = co_json_get(props, "spec", "properties", "rules", "properties",
                                      "sourceKinds", "properties", "action", NULL);
    assert_string_equal(str_member(action, "default"), "Deny");
    json_object_put(crd);
}

/* Every field the policy schema has is used by the valid "everything" fixture (so nothing in
 * the CRD is left without parsing code exercising it). */
static void leaves(co_test_names *out, json_object *v, const char *path, int schema)
{
    json_object *next = schema ? co_json_get(v, "properties", NULL) : v;
    if (schema && !next && co_json_get(v, "items", NULL)) {
        char *p = co_xasprintf("%s[]", path);
        leaves(out, co_json_get(v, "items", NULL), p, schema);
        free(p);
        return;
    }
    if (!schema && json_object_is_type(v, json_type_array)) {
        char *p = co_xasprintf("%s[]", path);
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            leaves(out, json_object_array_get_idx(v, i), p, schema);
        }
        free(p);
        return;
    }
    if (next && json_object_is_type(next, json_type_object) &&
        strcmp(path, "spec.namespaceSelector.matchLabels") != 0 && strcmp(path, "metadata") != 0) {
        json_object_object_foreach (next, key, val) {
            char *p = path[0] ? co_xasprintf("%s.%s", path, key) : co_xstrdup(key);
            leaves(out, val, p, schema);
            free(p);
        }
        return;
    }
    out->items = co_xreallocarray(out->items, out->len + 1, sizeof(char *));
    out->items[out->len++] = co_xstrdup(path);
}

static void test_policy__fixture_covers_schema(void **state)
{
    (void)state;
    json_object *crd = NULL;
    assert_co_pass(co_policy_crd(&crd));
    json_object *v = json_object_array_get_idx(co_json_get(crd, "spec", "versions", NULL), 0);
    co_test_names a = {NULL, 0};
    co_test_names b = {NULL, 0};
    leaves(&a, co_json_get(v, "schema", "openAPIV3Schema", NULL), "", 1);
    /* the API server accepts nothing but a type for metadata */
    assert_string_equal(json_object_to_json_string_ext(co_json_get(v, "schema", "openAPIV3Schema",
                                                                   "properties", "metadata", NULL),
                                                       JSON_C_TO_STRING_PLAIN),
                        "{\"type\":\"object\"}");
    json_object *o = co_test_fixture_json("policy/valid/everything.json");
    leaves(&b, o, "", 0);
    for (size_t i = 0; i < a.len; i++) {
        int found = 0;
        for (size_t k = 0; k < b.len && !found; k++) {
            found = strcmp(a.items[i], b.items[k]) == 0;
        }
        if (!found) {
            fail_msg("schema field %s is not covered by policy/valid/everything.json", a.items[i]);
        }
    }
    assert_true(a.len > 30);
    co_test_names_free(&a);
    co_test_names_free(&b);
    json_object_put(o);
    json_object_put(crd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy__valid_fixtures),
        cmocka_unit_test(test_policy__invalid_fixtures),
        cmocka_unit_test(test_policy__evaluate_fixtures),
        cmocka_unit_test(test_policy__violation_format),
        cmocka_unit_test(test_policy__defaults_fixtures),
        cmocka_unit_test(test_policy__defaults_reach_the_component),
        cmocka_unit_test(test_policy__lifecycle_defaults_reach_the_component),
        cmocka_unit_test(test_policy__set_keeps_name_order_and_replaces),
        cmocka_unit_test(test_policy__applies),
        cmocka_unit_test(test_policy__grants_need_one_true_and_no_false),
        cmocka_unit_test(test_policy__kubeconfig_denial_reaches_templates),
        cmocka_unit_test(test_policy__grants_follow_the_exemption_rule),
        cmocka_unit_test(test_policy__requester_record_keeps_what_exemptions_match),
        cmocka_unit_test(test_policy__requester_parse_refuses_malformed_records),
        cmocka_unit_test(test_policy__requester_of_a_component),
        cmocka_unit_test(test_policy__committed_crd_is_generated),
        cmocka_unit_test(test_policy__fixture_covers_schema),
    };
    return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
