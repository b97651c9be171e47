/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the dependency graph: cycle checks on new edges, missing targets, every-cycle
 * listing, reverse edges, clean-up, and a randomised comparison with a brute-force search. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/api/component.h"
#include "co/api/depgraph.h"
#include "tests/support/hash_flood.h"
#include "tests/support/test_support.h"

#define SET(g, key, ...)                                                                           \
    do {                                                                                           \
        const char *deps_[] = {__VA_ARGS__};                                                       \
        assert_co_pass(co_depgraph_set((g), (key), deps_, CO_ARRAY_SIZE(deps_)));                  \
    } while (0)

static co_depgraph *graph(void)
{
    co_depgraph *g = co_depgraph_new();
    assert_non_null(g);
    return g;
}

static void expect_cycle(const co_depgraph *g,
                         const char *key,
                         const char *const *deps,
                         size_t n,
                         const char *want)
{
    char *cycle = NULL;
    int rc = co_depgraph_check(&cycle, g, key, deps, n);
    if (!want) {
        if (rc != 0) {
            fail_msg("unexpected cycle for %s: %s", key, cycle ? cycle : co_error_last());
        }
        assert_null(cycle);
        return;
    }
    assert_int_equal(rc, CO_ECONFLICT);
    assert_string_equal(cycle, want);
    assert_contains(co_error_last(), want);
    free(cycle);
}

static void test_depgraph__two_node_cycle(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    SET(g, "ns/a", "ns/b");
    const char *back[] = {"ns/a"};
    expect_cycle(g, "ns/b", back, 1, "ns/b -> ns/a -> ns/b");
    /* the graph is unchanged by a check */
    assert_false(co_depgraph_contains(g, "ns/b"));
    assert_int_equal(co_depgraph_size(g), 1);
    co_depgraph_free(g);
}

static void test_depgraph__self_dependency(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    const char *self[] = {"ns/a"};
    expect_cycle(g, "ns/a", self, 1, "ns/a -> ns/a");
    SET(g, "ns/a");
    expect_cycle(g, "ns/a", self, 1, "ns/a -> ns/a");
    co_depgraph_free(g);
}

static void test_depgraph__cross_namespace_path(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    SET(g, "team-a/frontend", "team-b/api");
    SET(g, "team-b/api", "infra/db", "infra/cache");
    SET(g, "infra/cache");
    const char *deps[] = {"infra/cache", "team-a/frontend"};
    expect_cycle(g, "infra/db", deps, 2, "infra/db -> team-a/frontend -> team-b/api -> infra/db");
    co_depgraph_free(g);
}

static void test_depgraph__missing_targets_are_not_cycles(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    SET(g, "ns/a", "ns/x", "other/y");
    const char *deps[] = {"ns/x", "ns/z", "ns/a"};
    co_depgraph_list missing = {NULL, 0};
    assert_co_pass(co_depgraph_missing(&missing, g, deps, 3));
    assert_int_equal(missing.len, 2);
    assert_string_equal(missing.items[0], "ns/x");
    assert_string_equal(missing.items[1], "ns/z");
    co_depgraph_list_dispose(&missing);
    /* a new Component that is only a missing target so far: nothing closes */
    const char *none[] = {"ns/q"};
    expect_cycle(g, "ns/x", none, 1, NULL);
    /* once it depends on the Component pointing at it, the cycle is found */
    const char *back[] = {"ns/q", "ns/a"};
    expect_cycle(g, "ns/x", back, 2, "ns/x -> ns/a -> ns/x");
    co_depgraph_free(g);
}

static void test_depgraph__only_new_edges_count(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    /* built behind admission's back (e.g. while the webhook was down) */
    SET(g, "ns/a", "ns/b");
    SET(g, "ns/b", "ns/a");
    /* an update of a that keeps its edge and adds an unrelated one is not blamed */
    const char *keep[] = {"ns/b", "ns/c"};
    expect_cycle(g, "ns/a", keep, 2, NULL);
    /* but a new edge that closes another cycle is */
    SET(g, "ns/c", "ns/a");
    expect_cycle(g, "ns/a", keep, 2, "ns/a -> ns/c -> ns/a");
    /* and the backstop sees the old one */
    char *cycle = NULL;
    assert_co_pass(co_depgraph_cycle_of(&cycle, g, "ns/b"));
    assert_string_equal(cycle, "ns/b -> ns/a -> ns/b");
    free(cycle);
    co_depgraph_free(g);
}

static void test_depgraph__setting_the_same_edges_again_keeps_missing_targets(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    /* x depends on y, which does not exist yet; x is written twice with the same edge (as an
     * admitted object is first remembered, then delivered by the watch) */
    SET(g, "ns1/x", "ns2/y");
    SET(g, "ns1/x", "ns2/y");
    const char *back[] = {"ns1/x"};
    expect_cycle(g, "ns2/y", back, 1, "ns2/y -> ns1/x -> ns2/y");
    co_depgraph_list missing = {0};
    const char *deps[] = {"ns2/y"};
    assert_co_pass(co_depgraph_missing(&missing, g, deps, 1));
    assert_int_equal(missing.len, 1);
    assert_string_equal(missing.items[0], "ns2/y");
    co_depgraph_list_dispose(&missing);
    co_depgraph_free(g);
}

static void test_depgraph__shortest_cycle_is_reported(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    SET(g, "n/b", "n/c", "n/x");
    SET(g, "n/c", "n/d");
    SET(g, "n/d", "n/a");
    SET(g, "n/x", "n/a");
    const char *deps[] = {"n/b"};
    expect_cycle(g, "n/a", deps, 1, "n/a -> n/b -> n/x -> n/a");
    co_depgraph_free(g);
}

static void test_depgraph__find_all_cycles(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    SET(g, "z/b", "z/a");
    SET(g, "z/a", "z/b");
    SET(g, "m/self", "m/self");
    SET(g, "x/3", "x/1");
    SET(g, "x/1", "x/2", "m/self");
    SET(g, "x/2", "x/3");
    SET(g, "ok/1", "ok/2");
    SET(g, "ok/2", "missing/3");
    co_depgraph_list cycles = {NULL, 0};
    assert_co_pass(co_depgraph_find_cycles(&cycles, g));
    assert_int_equal(cycles.len, 3);
    assert_string_equal(cycles.items[0], "m/self -> m/self");
    assert_string_equal(cycles.items[1], "x/1 -> x/2 -> x/3 -> x/1");
    assert_string_equal(cycles.items[2], "z/a -> z/b -> z/a");
    co_depgraph_list_dispose(&cycles);
    char *cycle = NULL;
    assert_co_fail_with(CO_ENOTFOUND, co_depgraph_cycle_of(&cycle, g, "ok/1"));
    assert_co_fail_with(CO_ENOTFOUND, co_depgraph_cycle_of(&cycle, g, "nobody/here"));
    assert_co_pass(co_depgraph_cycle_of(&cycle, g, "x/2"));
    assert_string_equal(cycle, "x/2 -> x/3 -> x/1 -> x/2");
    free(cycle);
    /* breaking one cycle removes it from the list */
    SET(g, "x/2");
    assert_co_pass(co_depgraph_find_cycles(&cycles, g));
    assert_int_equal(cycles.len, 2);
    co_depgraph_list_dispose(&cycles);
    co_depgraph_free(g);
}

static void test_depgraph__reachability(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    SET(g, "ns/a", "ns/b");
    SET(g, "ns/b", "ns/c", "ns/gone");
    SET(g, "ns/c", "ns/a");
    SET(g, "ns/d", "ns/a");
    assert_true(co_depgraph_reaches(g, "ns/a", "ns/c"));
    assert_true(co_depgraph_reaches(g, "ns/c", "ns/b"));
    assert_true(co_depgraph_reaches(g, "ns/d", "ns/gone"));
    assert_true(co_depgraph_reaches(g, "ns/d", "ns/d"));
    /* d -> a is no cycle edge: a does not reach d; b -> c is one */
    assert_false(co_depgraph_reaches(g, "ns/a", "ns/d"));
    assert_true(co_depgraph_reaches(g, "ns/c", "ns/b"));
    /* a missing target reaches nothing; unknown keys neither */
    assert_false(co_depgraph_reaches(g, "ns/gone", "ns/a"));
    assert_false(co_depgraph_reaches(g, "ns/nope", "ns/nope"));
    assert_false(co_depgraph_reaches(g, NULL, "ns/a"));
    co_depgraph_free(g);
}

static void test_depgraph__dependents_and_removal(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    SET(g, "ns/web", "ns/db", "ns/cache");
    SET(g, "ns/api", "ns/db");
    SET(g, "ns/db");
    co_depgraph_list l = {NULL, 0};
    assert_co_pass(co_depgraph_dependents(&l, g, "ns/db"));
    assert_int_equal(l.len, 2);
    assert_string_equal(l.items[0], "ns/api");
    assert_string_equal(l.items[1], "ns/web");
    co_depgraph_list_dispose(&l);
    assert_int_equal(co_depgraph_size(g), 3);
    /* removing db keeps the edges to it: it is a missing target now */
    co_depgraph_remove(g, "ns/db");
    assert_false(co_depgraph_contains(g, "ns/db"));
    assert_int_equal(co_depgraph_size(g), 2);
    assert_co_pass(co_depgraph_dependents(&l, g, "ns/db"));
    assert_int_equal(l.len, 2);
    co_depgraph_list_dispose(&l);
    /* replacing web's dependencies drops its reverse edges */
    SET(g, "ns/web", "ns/api");
    assert_co_pass(co_depgraph_dependents(&l, g, "ns/db"));
    assert_int_equal(l.len, 1);
    co_depgraph_list_dispose(&l);
    assert_co_pass(co_depgraph_dependents(&l, g, "ns/cache"));
    assert_int_equal(l.len, 0);
    co_depgraph_list_dispose(&l);
    co_depgraph_remove(g, "ns/unknown");
    co_depgraph_remove(g, NULL);
    co_depgraph_free(g);
    co_depgraph_free(NULL);
}

static void test_depgraph__deps_of_a_component(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    SET(g, "ns/web", "ns/db", "other/cache", "ns/db");
    SET(g, "ns/db");
    co_depgraph_list l = {NULL, 0};
    assert_co_pass(co_depgraph_deps(&l, g, "ns/web"));
    assert_int_equal(l.len, 2);
    assert_string_equal(l.items[0], "ns/db");
    assert_string_equal(l.items[1], "other/cache");
    co_depgraph_list_dispose(&l);
    assert_co_pass(co_depgraph_deps(&l, g, "ns/db"));
    assert_int_equal(l.len, 0);
    co_depgraph_list_dispose(&l);
    /* a missing target and an unknown key are no Components */
    assert_co_fail_with(CO_ENOTFOUND, co_depgraph_deps(&l, g, "other/cache"));
    assert_co_fail_with(CO_ENOTFOUND, co_depgraph_deps(&l, g, "ns/nope"));
    assert_null(l.items);
    co_depgraph_remove(g, "ns/web");
    assert_co_fail_with(CO_ENOTFOUND, co_depgraph_deps(&l, g, "ns/web"));
    co_depgraph_free(g);
}

static void test_depgraph__churn_does_not_grow(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    char key[64];
    char dep[64];
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 200; i++) {
            snprintf(key, sizeof(key), "ns/c-%d-%d", round, i);
            snprintf(dep, sizeof(dep), "ns/d-%d-%d", round, i);
            const char *deps[] = {dep};
            assert_co_pass(co_depgraph_set(g, key, deps, 1));
        }
        for (int i = 0; i < 200; i++) {
            snprintf(key, sizeof(key), "ns/c-%d-%d", round, i);
            co_depgraph_remove(g, key);
        }
        assert_int_equal(co_depgraph_size(g), 0);
    }
    co_depgraph_list cycles = {NULL, 0};
    assert_co_pass(co_depgraph_find_cycles(&cycles, g));
    assert_int_equal(cycles.len, 0);
    co_depgraph_list_dispose(&cycles);
    co_depgraph_free(g);
}

/*
 * Component names chosen so that FNV-1a, the table's old unkeyed hash, sent all of them to one
 * slot at every table size up to 32,768: each insertion walked past all the earlier names.
 * They are ordinary names now; the graph holds and finds every one.
 */
static void test_depgraph__names_colliding_under_fnv(void **state)
{
    (void)state;
    const size_t n = 20000;
    co_test_names names = co_test_flood_keys(CO_TEST_FNV_BASIS_SHORT, n, 32768, "ns/");
    for (size_t i = 0; i < n; i++) {
        const char *s = names.items[i];
        assert_true((co_test_fnv1a64(CO_TEST_FNV_BASIS_SHORT, s, strlen(s)) & 32767) == 0);
    }
    co_depgraph *g = graph();
    for (size_t i = 0; i < n; i++) {
        /* a chain: each depends on the one before */
        const char *dep[] = {names.items[i ? i - 1 : 0]};
        assert_co_pass(co_depgraph_set(g, names.items[i], dep, i ? 1 : 0));
    }
    assert_int_equal(co_depgraph_size(g), n);
    for (size_t i = 0; i < n; i++) {
        assert_true(co_depgraph_contains(g, names.items[i]));
    }
    co_depgraph_list l = {NULL, 0};
    assert_co_pass(co_depgraph_dependents(&l, g, names.items[n / 2]));
    assert_int_equal(l.len, 1);
    assert_string_equal(l.items[0], names.items[n / 2 + 1]);
    co_depgraph_list_dispose(&l);
    const char *back[] = {names.items[n - 1]};
    char *cycle = NULL;
    assert_int_equal(co_depgraph_check(&cycle, g, names.items[0], back, 1), CO_ECONFLICT);
    free(cycle);
    for (size_t i = 0; i < n; i += 2) {
        co_depgraph_remove(g, names.items[i]);
    }
    assert_int_equal(co_depgraph_size(g), n / 2);
    assert_false(co_depgraph_contains(g, names.items[0]));
    assert_true(co_depgraph_contains(g, names.items[1]));
    co_depgraph_free(g);
    co_test_names_free(&names);
}

static void test_depgraph__long_chain(void **state)
{
    (void)state;
    enum { N = 20000 };
    co_depgraph *g = graph();
    char key[32];
    char dep[32];
    for (int i = 0; i < N - 1; i++) {
        snprintf(key, sizeof(key), "ns/n%d", i);
        snprintf(dep, sizeof(dep), "ns/n%d", i + 1);
        const char *deps[] = {dep};
        assert_co_pass(co_depgraph_set(g, key, deps, 1));
    }
    snprintf(key, sizeof(key), "ns/n%d", N - 1);
    const char *back[] = {"ns/n0"};
    char *cycle = NULL;
    assert_int_equal(co_depgraph_check(&cycle, g, key, back, 1), CO_ECONFLICT);
    size_t arrows = 0;
    for (const char *p = cycle; (p = strstr(p, " -> ")) != NULL; p += 4) {
        arrows++;
    }
    assert_int_equal(arrows, N);
    free(cycle);
    assert_co_pass(co_depgraph_set(g, key, back, 1));
    co_depgraph_list cycles = {NULL, 0};
    assert_co_pass(co_depgraph_find_cycles(&cycles, g));
    assert_int_equal(cycles.len, 1);
    co_depgraph_list_dispose(&cycles);
    co_depgraph_free(g);
}

static void test_depgraph__invalid_keys(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    const char *bad[] = {"no-slash"};
    const char *good[] = {"ns/x"};
    assert_co_fail_with(CO_EINVALID, co_depgraph_set(g, "a/b/c", good, 1));
    assert_co_fail_with(CO_EINVALID, co_depgraph_set(g, "/name", good, 1));
    assert_co_fail_with(CO_EINVALID, co_depgraph_set(g, "ns/", good, 1));
    assert_co_fail_with(CO_EINVALID, co_depgraph_set(g, "ns/a", bad, 1));
    assert_contains(co_error_last(), "no-slash");
    char *cycle = NULL;
    assert_co_fail_with(CO_EINVALID, co_depgraph_check(&cycle, g, NULL, good, 1));
    assert_int_equal(co_depgraph_size(g), 0);
    co_depgraph_free(g);
}

/* The keys of a parsed Component are those of its JSON (the reconciler reads the former). */
static void test_depgraph__parsed_component_deps(void **state)
{
    (void)state;
    json_object *a = json_tokener_parse(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
        "\"metadata\":{\"namespace\":\"one\",\"name\":\"a\"},\"spec\":{\"dependencies\":["
        "{\"name\":\"b\"},{\"namespace\":\"two\",\"name\":\"c\"},{\"namespace\":\"one\","
        "\"name\":\"b\"},{\"namespace\":\"\",\"name\":\"d\"},{\"name\":\"\"},"
        "{\"name\":\"x/y\"}]}}");
    co_component *c = NULL;
    assert_co_pass(co_component_parse(&c, a));
    co_depgraph_list typed = {NULL, 0}, json = {NULL, 0};
    assert_co_pass(co_depgraph_component_deps(&typed, c));
    assert_co_pass(co_depgraph_object_deps(&json, NULL, a, NULL));
    assert_int_equal(typed.len, 3);
    assert_int_equal(json.len, typed.len);
    for (size_t i = 0; i < typed.len; i++) {
        assert_string_equal(typed.items[i], json.items[i]);
    }
    co_depgraph_list_dispose(&typed);
    co_depgraph_list_dispose(&json);
    free(c->ns);
    c->ns = NULL;
    assert_co_fail_with(CO_EINVALID, co_depgraph_component_deps(&typed, c));
    co_component_free(c);
    json_object_put(a);
}

static void test_depgraph__objects(void **state)
{
    (void)state;
    co_depgraph *g = graph();
    json_object *a = json_tokener_parse(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\","
        "\"metadata\":{\"namespace\":\"one\",\"name\":\"a\"},\"spec\":{\"dependencies\":["
        "{\"name\":\"b\"},{\"namespace\":\"two\",\"name\":\"c\"},{\"namespace\":\"one\","
        "\"name\":\"b\"},{\"namespace\":\"\",\"name\":\"d\"},{\"name\":\"\"},{\"name\":7}]}}");
    co_depgraph_list deps = {NULL, 0};
    char *key = NULL;
    assert_co_pass(co_depgraph_object_deps(&deps, &key, a, NULL));
    assert_string_equal(key, "one/a");
    assert_int_equal(deps.len, 3);
    assert_string_equal(deps.items[0], "one/b");
    assert_string_equal(deps.items[1], "two/c");
    assert_string_equal(deps.items[2], "one/d");
    co_depgraph_list_dispose(&deps);
    free(key);
    assert_co_pass(co_depgraph_set_object(g, a, NULL));
    /* the v1beta1 layout keeps dependencies in the same place; the request namespace wins */
    json_object *c = json_tokener_parse(
        "{\"apiVersion\":\"core.cs.sap.com/v1beta1\",\"kind\":\"Component\","
        "\"metadata\":{\"name\":\"c\"},\"spec\":{\"dependencies\":[{\"namespace\":\"one\","
        "\"name\":\"a\"}]}}");
    char *cycle = NULL;
    assert_int_equal(co_depgraph_check_object(&cycle, g, c, "two"), CO_ECONFLICT);
    assert_string_equal(cycle, "two/c -> one/a -> two/c");
    free(cycle);
    assert_co_fail_with(CO_EINVALID, co_depgraph_check_object(&cycle, g, c, NULL));
    json_object *secret = json_tokener_parse("{\"apiVersion\":\"v1\",\"kind\":\"Secret\"}");
    assert_co_fail_with(CO_EINVALID, co_depgraph_set_object(g, secret, "x"));
    json_object_put(secret);
    json_object_put(c);
    json_object_put(a);
    co_depgraph_free(g);
}

/* Brute force: does key reach itself through deps (replacing its current edges)? */
enum { RN = 12 };
static int reach(int adj[RN][RN], int from, int to, int *seen)
{
    if (from == to) {
        return 1;
    }
    if (seen[from]) {
        return 0;
    }
    seen[from] = 1;
    for (int k = 0; k < RN; k++) {
        if (adj[from][k] && reach(adj, k, to, seen)) {
            return 1;
        }
    }
    return 0;
}

static void test_depgraph__matches_brute_force(void **state)
{
    (void)state;
    unsigned seed = 12345;
    char names[RN][8];
    for (int i = 0; i < RN; i++) {
        snprintf(names[i], sizeof(names[i]), "n/%c", 'a' + i);
    }
    for (int round = 0; round < 300; round++) {
        int adj[RN][RN] = {{0}};
        co_depgraph *g = graph();
        for (int i = 0; i < RN; i++) {
            const char *deps[RN];
            size_t n = 0;
            for (int j = 0; j < RN; j++) {
                seed = seed * 1103515245u + 12345u;
                if (i != j && (seed >> 16) % 7 == 0) {
                    adj[i][j] = 1;
                    deps[n++] = names[j];
                }
            }
            assert_co_pass(co_depgraph_set(g, names[i], deps, n));
        }
        seed = seed * 1103515245u + 12345u;
        int key = (int)((seed >> 16) % RN);
        seed = seed * 1103515245u + 12345u;
        int target = (int)((seed >> 16) % RN);
        const char *deps[] = {names[target]};
        int want = 0;
        if (!adj[key][target]) {
            int seen[RN] = {0};
            want = reach(adj, target, key, seen);
        }
        char *cycle = NULL;
        int rc = co_depgraph_check(&cycle, g, names[key], deps, 1);
        assert_int_equal(rc == CO_ECONFLICT, want);
        if (want) {
            /* the path starts and ends at key and follows real edges */
            char *copy = co_xstrdup(cycle);
            int prev = -1;
            int hops = 0;
            char *save = NULL;
            for (char *tok = strtok_r(copy, " ->", &save); tok;
                 tok = strtok_r(NULL, " ->", &save)) {
                int cur = tok[2] - 'a';
                if (prev >= 0 && !(prev == key && cur == target)) {
                    assert_true(adj[prev][cur]);
                }
                prev = cur;
                hops++;
            }
            assert_int_equal(prev, key);
            assert_true(hops >= 2);
            free(copy);
            free(cycle);
        }
        co_depgraph_free(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_depgraph__two_node_cycle),
        cmocka_unit_test(test_depgraph__self_dependency),
        cmocka_unit_test(test_depgraph__cross_namespace_path),
        cmocka_unit_test(test_depgraph__missing_targets_are_not_cycles),
        cmocka_unit_test(test_depgraph__only_new_edges_count),
        cmocka_unit_test(test_depgraph__setting_the_same_edges_again_keeps_missing_targets),
        cmocka_unit_test(test_depgraph__shortest_cycle_is_reported),
        cmocka_unit_test(test_depgraph__find_all_cycles),
        cmocka_unit_test(test_depgraph__reachability),
        cmocka_unit_test(test_depgraph__dependents_and_removal),
        cmocka_unit_test(test_depgraph__deps_of_a_component),
        cmocka_unit_test(test_depgraph__churn_does_not_grow),
        cmocka_unit_test(test_depgraph__names_colliding_under_fnv),
        cmocka_unit_test(test_depgraph__long_chain),
        cmocka_unit_test(test_depgraph__invalid_keys),
        cmocka_unit_test(test_depgraph__objects),
        cmocka_unit_test(test_depgraph__parsed_component_deps),
        cmocka_unit_test(test_depgraph__matches_brute_force),
    };
    return cmocka_run_group_tests_name("depgraph", tests, NULL, NULL);
}
