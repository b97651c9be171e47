/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the Helm module: chart loading (directories, .helmignore, packaged subcharts,
 * Chart.yaml errors), values coalescing and dependency processing, and the pattern matchers.
 * Whole-chart behaviour is compared with a real `helm template` in test_helm_diff.
 */
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/render/helm.h"
#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/json/json.h"
#include "co/render/vfs.h"
#include "co/json/yaml.h"
#include "shared/src/render/helm/helm_int.h"
#include "tests/support/test_support.h"

/* Builds an in-memory tree from alternating path/content strings (NULL-terminated). */
static co_vfs *mem_tree(const char *first, ...)
{
    co_vfs *fs = co_vfs_new_mem();
    va_list ap;
    va_start(ap, first);
    for (const char *path = first; path; path = va_arg(ap, const char *)) {
        const char *data = va_arg(ap, const char *);
        assert_co_pass(co_vfs_mem_put(fs, path, data, strlen(data)));
    }
    va_end(ap);
    return fs;
}

static struct json_object *yaml(const char *text)
{
    struct json_object *o = NULL;
    assert_co_pass(co_yaml_parse(&o, text, strlen(text), 0));
    return o;
}

/* Asserts that @p got equals the YAML @p want. */
static void assert_json_eq(struct json_object *got, const char *want)
{
    struct json_object *w = yaml(want);
    if (!co_json_equal(got, w)) {
        fail_msg("got %s\nwant %s", json_object_to_json_string(got), json_object_to_json_string(w));
    }
    json_object_put(w);
}

static bool has_file(const helm_file *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i].name, name) == 0) {
            return true;
        }
    }
    return false;
}

/* ---- loading ------------------------------------------------------------------------------ */

static void test_helm__load_sorts_files_like_helm(void **state)
{
    (void)state;
    co_vfs *fs = mem_tree("c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n",
                          "c/values.yaml", "a: 1\n", "c/values.schema.json", "{}",
                          "c/templates/a.yaml", "x", "c/templates/_h.tpl", "y",
                          "c/templates/.hidden", "z", "c/crds/crd.yaml", "crd", "c/files/conf.txt",
                          "conf", "c/README.md", "readme", "c/Chart.lock", "lock", "c/build.log",
                          "log", "c/tmp/x", "x", "c/.helmignore", "# comment\n*.log\ntmp/\n", NULL);
    co_helm_chart *c = NULL;
    assert_co_pass(co_helm_chart_load(&c, fs, "c"));
    assert_string_equal(co_helm_chart_name(c), "c");
    assert_string_equal(co_helm_chart_version(c), "0.1.0");
    assert_int_equal(c->ntemplates, 2);
    assert_true(has_file(c->templates, c->ntemplates, "templates/a.yaml"));
    assert_true(has_file(c->templates, c->ntemplates, "templates/_h.tpl"));
    assert_true(has_file(c->files, c->nfiles, "crds/crd.yaml"));
    assert_true(has_file(c->files, c->nfiles, "files/conf.txt"));
    assert_true(has_file(c->files, c->nfiles, "README.md"));
    assert_true(has_file(c->files, c->nfiles, ".helmignore"));
    assert_false(has_file(c->files, c->nfiles, "build.log"));
    assert_false(has_file(c->files, c->nfiles, "tmp/x"));
    assert_false(has_file(c->files, c->nfiles, "Chart.lock"));
    assert_false(has_file(c->files, c->nfiles, "values.yaml"));
    assert_non_null(c->schema);
    assert_json_eq(c->values, "a: 1");
    co_helm_chart_free(c);
    co_vfs_free(fs);
}

/* sigs.k8s.io/yaml turns scalars into text for string fields: 1.10 is the float 1.1. */
static void test_helm__load_numeric_strings_like_go(void **state)
{
    (void)state;
    co_vfs *fs = mem_tree("Chart.yaml",
                          "apiVersion: v2\nname: n\nversion: 1.0\nappVersion: 1.10\n"
                          "keywords: [1, true, 2.5e7, 1234567]\nannotations: {a: 0x10}\n",
                          NULL);
    co_helm_chart *c = NULL;
    assert_co_pass(co_helm_chart_load(&c, fs, ""));
    assert_string_equal(c->meta.version, "1");
    assert_string_equal(c->meta.app_version, "1.1");
    assert_string_equal(c->meta.keywords[0], "1");
    assert_string_equal(c->meta.keywords[1], "true");
    assert_string_equal(c->meta.keywords[2], "2.5e+07");
    assert_string_equal(c->meta.keywords[3], "1234567");
    assert_json_eq(c->meta.annotations, "{a: '16'}");
    co_helm_chart_free(c);
    co_vfs_free(fs);
}

static void test_helm__load_v1_requirements(void **state)
{
    (void)state;
    co_vfs *fs = mem_tree("Chart.yaml", "name: old\nversion: 1.0.0\n", "requirements.yaml",
                          "dependencies:\n- name: sub\n  version: 1.x\n  alias: other\n",
                          "charts/sub/Chart.yaml", "name: sub\nversion: 1.2.0\n", NULL);
    co_helm_chart *c = NULL;
    assert_co_pass(co_helm_chart_load(&c, fs, ""));
    assert_string_equal(c->meta.api_version, "v1");
    assert_int_equal(c->meta.ndeps, 1);
    assert_string_equal(c->meta.deps[0].alias, "other");
    assert_true(has_file(c->files, c->nfiles, "requirements.yaml"));
    assert_int_equal(c->ndeps, 1);
    assert_string_equal(c->deps[0]->meta.name, "sub");
    co_helm_chart_free(c);
    co_vfs_free(fs);
}

static void test_helm__load_packaged_subchart(void **state)
{
    (void)state;
    char *dir = co_test_fixture_path("helm/deps/chart");
    co_vfs *fs = NULL;
    assert_co_pass(co_vfs_new_disk(&fs, dir));
    co_helm_chart *c = NULL;
    assert_co_pass(co_helm_chart_load(&c, fs, ""));
    bool found = false;
    for (size_t i = 0; i < c->ndeps; i++) {
        if (strcmp(c->deps[i]->meta.name, "metrics") == 0) {
            found = true;
            assert_int_equal(c->deps[i]->ntemplates, 1);
            assert_json_eq(c->deps[i]->values,
                           "{interval: 30s, global: {labels: {team: metrics-team}}}");
        }
        assert_string_not_equal(c->deps[i]->meta.name, "_skipped");
    }
    assert_true(found);
    assert_int_equal(c->ndeps, 3);
    co_helm_chart_free(c);
    co_vfs_free(fs);
    free(dir);
}

/* Loads a one-file chart and expects failure with @p code and @p msg in the message. */
static void expect_load_error(const char *chart_yaml, int code, const char *msg)
{
    co_vfs *fs = mem_tree("Chart.yaml", chart_yaml, NULL);
    co_helm_chart *c = NULL;
    assert_co_fail_with(code, co_helm_chart_load(&c, fs, ""));
    assert_contains(co_error_last(), msg);
    assert_null(c);
    co_vfs_free(fs);
}

static void test_helm__load_rejects_bad_chart_yaml(void **state)
{
    (void)state;
    expect_load_error("name: x\nversion: {a: 1}\napiVersion: v2\n", CO_EINVALID,
                      "Chart.yaml: field version: expected a string, got object");
    expect_load_error("apiVersion: v2\nversion: 1.0.0\n", CO_EINVALID,
                      "chart.metadata.name is required");
    expect_load_error("apiVersion: v2\nname: x\nversion: one\n", CO_EINVALID,
                      "chart.metadata.version \"one\" is invalid");
    expect_load_error("apiVersion: v2\nname: x\nversion: 1.0.0\ntype: plugin\n", CO_EINVALID,
                      "type must be application or library");
    expect_load_error("apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- name: a\n"
                      "  alias: b.c\n",
                      CO_EINVALID, "disallowed characters in the alias");
    expect_load_error("apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- name: a\n"
                      "- name: b\n  alias: a\n",
                      CO_EINVALID, "more than one dependency with name or alias \"a\"");
    expect_load_error("apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- name: a\n"
                      "  tags: [[1]]\n",
                      CO_EINVALID, "dependencies[0].tags[0]: expected a string, got array");
    expect_load_error("apiVersion: v2\nname: x\nversion: 1.0.0\nmaintainers: [~]\n", CO_EINVALID,
                      "maintainers must not contain empty or null nodes");
    expect_load_error("a: [", CO_EINVALID, "Chart.yaml");
}

static void test_helm__load_missing_chart_yaml(void **state)
{
    (void)state;
    co_vfs *fs = mem_tree("values.yaml", "a: 1\n", NULL);
    co_helm_chart *c = NULL;
    assert_co_fail_with(CO_ENOTFOUND, co_helm_chart_load(&c, fs, ""));
    co_vfs_free(fs);
    fs = mem_tree("Chart.yaml", "apiVersion: v2\nname: p\nversion: 1.0.0\n",
                  "charts/broken/values.yaml", "a: 1\n", NULL);
    assert_co_fail_with(CO_EINVALID, co_helm_chart_load(&c, fs, ""));
    assert_contains(co_error_last(), "p/charts/broken: Chart.yaml file is missing");
    co_vfs_free(fs);
}

static void test_helm__load_rejects_bad_archive(void **state)
{
    (void)state;
    co_helm_chart *c = NULL;
    assert_co_fail_with(CO_EINVALID, co_helm_chart_load_archive(&c, "not gzip", 8));
    assert_null(c);
}

static void test_helm__helmignore_errors_name_the_line(void **state)
{
    (void)state;
    co_vfs *fs = mem_tree("Chart.yaml", "apiVersion: v2\nname: p\nversion: 1.0.0\n", ".helmignore",
                          "ok\nfoo/**/bar\n", NULL);
    co_helm_chart *c = NULL;
    assert_co_fail_with(CO_EINVALID, co_helm_chart_load(&c, fs, ""));
    assert_contains(co_error_last(), ".helmignore:2: double-star");
    co_vfs_free(fs);
}

/* ---- values -------------------------------------------------------------------------------- */

static struct json_object *values_of(const char *fixture, const char *user_yaml)
{
    char *dir = co_test_fixture_path(fixture);
    co_vfs *fs = NULL;
    assert_co_pass(co_vfs_new_disk(&fs, dir));
    co_helm_chart *c = NULL;
    assert_co_pass(co_helm_chart_load(&c, fs, ""));
    struct json_object *user = user_yaml ? yaml(user_yaml) : NULL;
    struct json_object *out = NULL;
    assert_co_pass(co_helm_values(&out, c, user));
    json_object_put(user);
    co_helm_chart_free(c);
    co_vfs_free(fs);
    free(dir);
    return out;
}

static void test_helm__values_defaults_imports_and_globals(void **state)
{
    (void)state;
    struct json_object *v = values_of("helm/deps/chart", NULL);
    /* import-values: the string form lifts exports.data, the map form nests settings under
     * the parent path, and the parent's own value wins. */
    assert_json_eq(co_json_get(v, "imported", NULL),
                   "settings: {local: parent-wins, poolSize: 10}");
    assert_json_eq(co_json_get(v, "exportedFromDb", NULL), "true");
    /* Globals flow down; the subchart's own global keys stay below the parent's. */
    assert_json_eq(co_json_get(v, "db", "global", NULL),
                   "{region: eu-1, labels: {team: platform, component: db}, db: {enabled: true}}");
    /* replica (condition false) is disabled: its section keeps only the user/parent values. */
    assert_json_eq(co_json_get(v, "replica", NULL), "{enabled: false, port: 7000}");
    /* The packaged subchart sees the parent's global labels over its own. */
    assert_json_eq(co_json_get(v, "metrics", "global", "labels", NULL), "{team: platform}");
    json_object_put(v);
}

static void test_helm__values_null_deletes_and_tags(void **state)
{
    (void)state;
    struct json_object *v =
        values_of("helm/deps/chart", "toBeDeleted: null\nnested: {drop: null, list: [9]}\n"
                                     "cache: {nullable: set}\n");
    assert_false(json_object_object_get_ex(v, "toBeDeleted", NULL));
    assert_json_eq(co_json_get(v, "nested", NULL), "{keep: 1, list: [9]}");
    assert_json_eq(co_json_get(v, "cache", "nullable", NULL), "set");
    json_object_put(v);

    v = values_of("helm/deps/chart",
                  "tags: {frontend: false, backend: false}\nmetrics: {enabled: false}\n");
    /* Both tags false: cache is disabled, so its defaults are gone. */
    assert_false(json_object_object_get_ex(v, "cache", NULL));
    assert_json_eq(co_json_get(v, "metrics", NULL), "{enabled: false}");
    json_object_put(v);
}

static void test_helm__values_subchart_section_must_be_a_map(void **state)
{
    (void)state;
    char *dir = co_test_fixture_path("helm/deps/chart");
    co_vfs *fs = NULL;
    assert_co_pass(co_vfs_new_disk(&fs, dir));
    co_helm_chart *c = NULL;
    assert_co_pass(co_helm_chart_load(&c, fs, ""));
    struct json_object *user = yaml("cache: 3\n");
    struct json_object *out = NULL;
    assert_co_fail_with(CO_EINVALID, co_helm_values(&out, c, user));
    assert_contains(co_error_last(), "type mismatch on cache");
    json_object_put(user);
    user = yaml("[1]");
    assert_co_fail_with(CO_EINVALID, co_helm_values(&out, c, user));
    json_object_put(user);
    co_helm_chart_free(c);
    co_vfs_free(fs);
    free(dir);
}

/* ---- patterns ------------------------------------------------------------------------------ */

/* The chart at the root of @p fs, loaded into *@p c, and its values without user values. */
static struct json_object *chart_values(co_helm_chart **c, co_vfs *fs)
{
    *c = NULL;
    assert_co_pass(co_helm_chart_load(c, fs, ""));
    struct json_object *out = NULL;
    assert_co_pass(co_helm_values(&out, *c, NULL));
    return out;
}

static void test_helm__values_disabled_dependency_without_name(void **state)
{
    (void)state;
    /* a dependency with no name, switched off by its condition: dropped, not looped over */
    co_vfs *fs = mem_tree("Chart.yaml",
                          "apiVersion: v2\nname: top\nversion: 1.0.0\ndependencies:\n"
                          "- version: 1.0.0\n  condition: sub.enabled\n"
                          "- name: kept\n  version: 1.0.0\n",
                          "values.yaml", "sub: {enabled: false}\nx: 1\n", "charts/kept/Chart.yaml",
                          "apiVersion: v2\nname: kept\nversion: 1.0.0\n", "charts/kept/values.yaml",
                          "k: v\n", NULL);
    co_helm_chart *c = NULL;
    struct json_object *out = chart_values(&c, fs);
    assert_json_eq(co_json_get(out, "x", NULL), "1");
    assert_json_eq(co_json_get(out, "kept", NULL), "{global: {}, k: v}");
    json_object_put(out);
    co_helm_chart_free(c);
    co_vfs_free(fs);
}

static void test_helm__import_values_never_nest_a_table_in_itself(void **state)
{
    (void)state;
    /* The first import puts deep.section at imported.x, the second merges deep over it, and
     * deep's "section" is the very table already there. Merged by reference, that table would
     * hold itself (a cycle: leaked, and endless for every later walk); it gets a copy. The
     * tables stay shared otherwise, as Helm's are, so the import changes the subchart's own
     * section too. */
    co_vfs *fs = mem_tree("Chart.yaml",
                          "apiVersion: v2\nname: top\nversion: 1.0.0\ndependencies:\n"
                          "- name: lib1\n  version: 1.0.0\n  import-values:\n"
                          "  - {child: deep.section, parent: imported.x}\n"
                          "  - {child: deep, parent: imported.x}\n"
                          "  - {child: deep, parent: .}\n",
                          "values.yaml", "own: 1\n", "charts/lib1/Chart.yaml",
                          "apiVersion: v2\nname: lib1\nversion: 1.0.0\n", "charts/lib1/values.yaml",
                          "deep: {section: {two: 2}}\n", NULL);
    co_helm_chart *c = NULL;
    struct json_object *out = chart_values(&c, fs);
    assert_json_eq(co_json_get(out, "imported", NULL), "{x: {two: 2, section: {two: 2}}}");
    assert_json_eq(co_json_get(out, "section", NULL), "{two: 2, section: {two: 2}}");
    assert_json_eq(co_json_get(out, "lib1", "deep", NULL),
                   "{section: {two: 2, section: {two: 2}}}");
    /* the values again, over themselves as user values: a walk of every table */
    struct json_object *again = NULL;
    assert_co_pass(co_helm_values(&again, c, out));
    assert_json_eq(co_json_get(again, "imported", NULL), "{x: {two: 2, section: {two: 2}}}");
    json_object_put(again);
    json_object_put(out);
    co_helm_chart_free(c);
    co_vfs_free(fs);
}

static void test_helm__import_values_share_tables_as_helm(void **state)
{
    (void)state;
    /* Two imports under one parent: Helm merges the second into the first's table, which is
     * the subchart's own table a, so the parent's view of the subchart's values shows it. */
    co_vfs *fs = mem_tree("Chart.yaml",
                          "apiVersion: v2\nname: top\nversion: 1.0.0\ndependencies:\n"
                          "- name: lib1\n  version: 1.0.0\n  import-values:\n"
                          "  - {child: a, parent: x}\n  - {child: b, parent: x}\n",
                          "values.yaml", "own: 1\n", "charts/lib1/Chart.yaml",
                          "apiVersion: v2\nname: lib1\nversion: 1.0.0\n", "charts/lib1/values.yaml",
                          "a: {one: 1}\nb: {two: 2}\n", NULL);
    co_helm_chart *c = NULL;
    struct json_object *out = chart_values(&c, fs);
    assert_json_eq(co_json_get(out, "x", NULL), "{one: 1, two: 2}");
    assert_json_eq(co_json_get(out, "lib1", "a", NULL), "{one: 1, two: 2}");
    assert_json_eq(co_json_get(out, "lib1", "b", NULL), "{two: 2}");
    json_object_put(out);
    co_helm_chart_free(c);
    co_vfs_free(fs);
}

static void test_helm__path_match_is_go_filepath_match(void **state)
{
    (void)state;
    assert_true(co_helm__path_match("*.log", "a.log"));
    assert_false(co_helm__path_match("*.log", "d/a.log"));
    assert_true(co_helm__path_match("templates/.?*", "templates/.x"));
    assert_false(co_helm__path_match("templates/.?*", "templates/."));
    assert_true(co_helm__path_match("[a-c]?", "bz"));
    assert_false(co_helm__path_match("[^a-c]?", "bz"));
    assert_true(co_helm__path_match("a\\*b", "a*b"));
    assert_false(co_helm__path_pattern_ok("[a-"));
    assert_false(co_helm__path_pattern_ok("a\\"));
    assert_true(co_helm__path_pattern_ok("*.txt"));
}

static void test_helm__glob_is_gobwas(void **state)
{
    (void)state;
    bool ok;
    assert_true(co_helm__glob_match("files/*", "files/a.txt", &ok));
    assert_true(ok);
    assert_false(co_helm__glob_match("files/*", "files/d/a.txt", &ok));
    assert_true(co_helm__glob_match("files/**", "files/d/a.txt", &ok));
    assert_true(co_helm__glob_match("**.yaml", "a/b/c.yaml", &ok));
    assert_true(co_helm__glob_match("files/{a,b}.txt", "files/b.txt", &ok));
    assert_false(co_helm__glob_match("files/{a,b}.txt", "files/c.txt", &ok));
    assert_true(co_helm__glob_match("f?les/[!x]*", "files/y", &ok));
    assert_false(co_helm__glob_match("f?les/[!x]*", "files/x", &ok));
    /* A pattern that does not compile matches everything, as Helm falls back to "**". */
    assert_true(co_helm__glob_match("files/[", "other/thing", &ok));
    assert_false(ok);
}

/* ---- hook mapping ------------------------------------------------------------------------- */

/* Maps the object @p yaml_obj at @p revision; returns it (or NULL when dropped). */
static struct json_object *mapped(const char *yaml_obj, int64_t revision, unsigned flags, int code)
{
    struct json_object *o = yaml(yaml_obj);
    bool keep = true;
    if (code != 0) {
        assert_co_fail_with(code, co_helm_map_object(&keep, o, revision, flags));
        json_object_put(o);
        return NULL;
    }
    assert_co_pass(co_helm_map_object(&keep, o, revision, flags));
    if (!keep) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

static const char *ann(struct json_object *o, const char *key)
{
    char *full = co_xasprintf("component-operator.cs.sap.com/%s", key);
    struct json_object *v = co_json_get(o, "metadata", "annotations", full, NULL);
    free(full);
    return v ? json_object_get_string(v) : NULL;
}

static void test_helm__map_install_and_upgrade_hooks(void **state)
{
    (void)state;
    const char *pre = "kind: Job\nmetadata:\n  name: j\n  annotations:\n"
                      "    helm.sh/hook: pre-install,post-install\n"
                      "    helm.sh/hook-weight: \"5\"\n"
                      "    helm.sh/hook-delete-policy: hook-succeeded\n";
    struct json_object *o = mapped(pre, 1, 0, 0);
    assert_non_null(o);
    assert_string_equal(ann(o, "reconcile-policy"), "once");
    assert_string_equal(ann(o, "apply-order"), "-96");
    assert_string_equal(ann(o, "purge-order"), "201");
    assert_null(ann(o, "update-policy"));
    json_object_put(o);
    /* On upgrade an install-only hook keeps the install mapping. */
    o = mapped(pre, 3, 0, 0);
    assert_string_equal(ann(o, "apply-order"), "-96");
    assert_string_equal(ann(o, "reconcile-policy"), "once");
    json_object_put(o);

    const char *up = "kind: Job\nmetadata:\n  name: u\n  annotations:\n"
                     "    helm.sh/hook: post-upgrade\n";
    assert_null(mapped(up, 1, 0, 0));
    o = mapped(up, 2, 0, 0);
    assert_string_equal(ann(o, "reconcile-policy"), "on-object-or-component-change");
    assert_string_equal(ann(o, "apply-order"), "101");
    assert_string_equal(ann(o, "update-policy"), "recreate");
    assert_null(ann(o, "purge-order"));
    json_object_put(o);

    const char *both = "kind: Job\nmetadata:\n  name: b\n  annotations:\n"
                       "    helm.sh/hook: post-install, PRE-UPGRADE\n"
                       "    helm.sh/hook-weight: \"-100\"\n"
                       "    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded\n";
    o = mapped(both, 1, 0, 0);
    assert_string_equal(ann(o, "apply-order"), "1");
    json_object_put(o);
    o = mapped(both, 2, 0, 0);
    assert_string_equal(ann(o, "apply-order"), "-201");
    assert_string_equal(ann(o, "update-policy"), "recreate");
    json_object_put(o);

    const char *preonly = "kind: Job\nmetadata:\n  name: p\n  annotations:\n"
                          "    helm.sh/hook: pre-install\n"
                          "    helm.sh/hook-delete-policy: hook-succeeded\n";
    o = mapped(preonly, 1, 0, 0);
    assert_string_equal(ann(o, "purge-order"), "-1");
    json_object_put(o);
}

static void test_helm__map_drops_and_rejects(void **state)
{
    (void)state;
    assert_null(mapped("kind: Pod\nmetadata:\n  name: t\n  annotations:\n"
                       "    helm.sh/hook: test\n",
                       1, 0, 0));
    assert_null(mapped("kind: Pod\nmetadata:\n  name: t\n  annotations:\n"
                       "    helm.sh/hook: pre-rollback,test-success\n",
                       2, 0, 0));
    mapped("kind: Job\nmetadata:\n  name: d\n  annotations:\n"
           "    helm.sh/hook: pre-install,pre-delete\n",
           1, 0, CO_EINVALID);
    assert_contains(co_error_last(), "Job d: delete hooks");
    mapped("kind: Job\nmetadata:\n  name: w\n  annotations:\n"
           "    helm.sh/hook: pre-install\n    helm.sh/hook-weight: \"101\"\n",
           1, 0, CO_EINVALID);
    assert_contains(co_error_last(), "hook-weight");
    mapped("kind: Job\nmetadata:\n  name: f\n  annotations:\n"
           "    helm.sh/hook: pre-install\n    helm.sh/hook-delete-policy: hook-failed\n",
           1, 0, CO_EINVALID);
    assert_contains(co_error_last(), "hook-failed");
}

static void test_helm__map_resource_policy_and_operator_annotations(void **state)
{
    (void)state;
    struct json_object *o = mapped("kind: ConfigMap\nmetadata:\n  name: k\n  namespace: ns\n"
                                   "  annotations:\n    helm.sh/resource-policy: keep\n",
                                   1, 0, 0);
    assert_string_equal(ann(o, "delete-policy"), "orphan");
    json_object_put(o);
    mapped("kind: ConfigMap\nmetadata:\n  name: k\n  annotations:\n"
           "    helm.sh/resource-policy: delete\n",
           1, 0, CO_EINVALID);
    const char *own = "kind: ConfigMap\nmetadata:\n  name: k\n  namespace: ns\n  annotations:\n"
                      "    component-operator.cs.sap.com/apply-order: \"7\"\n"
                      "    helm.sh/hook: post-install\n";
    mapped(own, 1, 0, CO_EINVALID);
    assert_contains(co_error_last(),
                    "ConfigMap ns/k: annotation component-operator.cs.sap.com/apply-order must "
                    "not be set");
    /* With the opt-in the chart's own annotation wins over the mapping. */
    o = mapped(own, 1, CO_HELM_ALLOW_OPERATOR_ANNOTATIONS, 0);
    assert_string_equal(ann(o, "apply-order"), "7");
    assert_string_equal(ann(o, "reconcile-policy"), "once");
    json_object_put(o);
}

/* ---- rendering ----------------------------------------------------------------------------- */

/* Renders the in-memory chart @p fs with @p values_yaml; returns the objects or NULL (then the
 * error is in co_error_last() and its code in *code). */
static struct json_object *render_tree(co_vfs *fs,
                                       const char *values_yaml,
                                       const co_helm_options *opts,
                                       bool mapped,
                                       int *code)
{
    co_helm_chart *c = NULL;
    assert_co_pass(co_helm_chart_load(&c, fs, ""));
    struct json_object *values = values_yaml ? yaml(values_yaml) : NULL;
    struct json_object *out = NULL;
    co_error_clear();
    int rc =
        mapped ? co_helm_render(&out, c, values, opts) : co_helm_template(&out, c, values, opts);
    if (code) {
        *code = rc;
    }
    json_object_put(values);
    co_helm_chart_free(c);
    return rc == 0 ? out : NULL;
}

static void test_helm__render_errors_name_template_and_line(void **state)
{
    (void)state;
    co_vfs *fs =
        mem_tree("Chart.yaml", "apiVersion: v2\nname: e\nversion: 1.0.0\n", "templates/a.yaml",
                 "a: 1\nb: {{ required \"need x\" .Values.x }}\n", NULL);
    int rc = 0;
    assert_null(render_tree(fs, NULL, NULL, false, &rc));
    assert_int_equal(rc, CO_EINVALID);
    assert_string_equal(co_error_last(), "execution error at (e/templates/a.yaml:2:6): need x");
    struct json_object *out = render_tree(fs, "x: hi", NULL, false, &rc);
    assert_json_eq(out, "[{a: 1, b: hi}]");
    json_object_put(out);
    co_vfs_free(fs);

    fs = mem_tree("Chart.yaml", "apiVersion: v2\nname: e\nversion: 1.0.0\n", "templates/b.yaml",
                  "x: {{ .Values.a\n", NULL);
    assert_null(render_tree(fs, NULL, NULL, false, &rc));
    assert_contains(co_error_last(), "parse error at (e/templates/b.yaml:");
    co_vfs_free(fs);

    fs = mem_tree("Chart.yaml", "apiVersion: v2\nname: e\nversion: 1.0.0\nkubeVersion: '<1.20'\n",
                  NULL);
    assert_null(render_tree(fs, NULL, NULL, false, &rc));
    assert_contains(
        co_error_last(),
        "chart requires kubeVersion: <1.20 which is incompatible with Kubernetes v1.32.0");
    co_vfs_free(fs);

    fs = mem_tree("Chart.yaml", "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n", NULL);
    assert_null(render_tree(fs, NULL, NULL, false, &rc));
    assert_string_equal(co_error_last(), "library charts are not installable");
    co_vfs_free(fs);
}

static void test_helm__render_maps_hooks_and_keeps_order(void **state)
{
    (void)state;
    co_vfs *fs =
        mem_tree("Chart.yaml", "apiVersion: v2\nname: h\nversion: 1.0.0\n", "templates/a.yaml",
                 "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\n"
                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
                 "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n"
                 "    helm.sh/hook: pre-install\n---\n"
                 "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n"
                 "    helm.sh/hook: test\n",
                 NULL);
    co_helm_options opts = {.revision = 1};
    struct json_object *all = render_tree(fs, NULL, &opts, false, NULL);
    assert_non_null(all);
    /* helm template order: ConfigMap before Service (kind order), then hooks, Pod before Job. */
    assert_int_equal(json_object_array_length(all), 4);
    assert_string_equal(
        json_object_get_string(co_json_get(json_object_array_get_idx(all, 0), "kind", NULL)),
        "ConfigMap");
    assert_string_equal(
        json_object_get_string(co_json_get(json_object_array_get_idx(all, 3), "kind", NULL)),
        "Job");
    json_object_put(all);
    struct json_object *mapped = render_tree(fs, NULL, &opts, true, NULL);
    assert_int_equal(json_object_array_length(mapped), 3); /* the test hook is dropped */
    struct json_object *job = json_object_array_get_idx(mapped, 2);
    assert_string_equal(ann(job, "apply-order"), "-101");
    assert_string_equal(ann(job, "reconcile-policy"), "once");
    json_object_put(mapped);
    co_vfs_free(fs);
}

static void test_helm__render_builtins_and_helm_functions(void **state)
{
    (void)state;
    co_vfs *fs = mem_tree("Chart.yaml", "apiVersion: v2\nname: b\nversion: 1.0.0\n", "files/a.txt",
                          "A\nB\n", "templates/_h.tpl",
                          "{{ define \"h.x\" }}x-{{ .Release.Name }}{{ end }}", "templates/c.yaml",
                          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n"
                          "  inc: {{ include \"h.x\" . }}\n"
                          "  tpl: {{ tpl \"{{ .Values.v }}-{{ .Release.Namespace }}\" . }}\n"
                          "  rev: \"{{ .Release.Revision }}/{{ .Release.IsUpgrade }}\"\n"
                          "  has: '{{ .Capabilities.APIVersions.Has \"x.io/v1\" }}'\n"
                          "  kube: \"{{ .Capabilities.KubeVersion }}\"\n"
                          "  file: '{{ range .Files.Lines \"files/a.txt\" }}{{ . }}{{ end }}'\n"
                          "  tmpl: {{ .Template.Name }}\n"
                          "  gone: \"{{ .Values.none }}\"\n",
                          NULL);
    const char *apis[] = {"x.io/v1"};
    co_helm_options opts = {.release_name = "r",
                            .release_namespace = "n1",
                            .revision = 4,
                            .kube_version = "1.30.2",
                            .api_versions = apis,
                            .n_api_versions = 1};
    struct json_object *out = render_tree(fs, "v: val", &opts, false, NULL);
    if (!out) {
        fail_msg("render failed: %s", co_error_last());
    }
    assert_json_eq(co_json_get(json_object_array_get_idx(out, 0), "data", NULL),
                   "{inc: x-r, tpl: val-n1, rev: 4/true, has: 'true', kube: v1.30.2, file: AB, "
                   "tmpl: b/templates/c.yaml, gone: ''}");
    json_object_put(out);
    co_vfs_free(fs);
}

/* ---- the lookup family, .Release.Service, .Capabilities.APIVersions ------------------------ */

/* Hooks that record their calls and answer from a tiny cluster: Secret "x" exists in every
 * namespace, "boom" fails, anything else is not found. */
typedef struct hook_log {
    char calls[16][256];
    size_t n;
} hook_log;

static void record(hook_log *l, const char *fmt, ...) CO_PRINTF(2, 3);
static void record(hook_log *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->calls[l->n % 16], sizeof(l->calls[0]), fmt, ap);
    va_end(ap);
    l->n++;
}

static bool recorded(const hook_log *l, const char *call)
{
    for (size_t i = 0; i < l->n && i < 16; i++) {
        if (strcmp(l->calls[i], call) == 0) {
            return true;
        }
    }
    return false;
}

static int fake_lookup(void *ctx,
                       struct json_object **out,
                       co_kzgen_cluster_kind cluster,
                       const char *kubeconfig,
                       const char *api_version,
                       const char *kind,
                       const char *ns,
                       const char *name)
{
    record(ctx, "get %d %s %s %s %s %s", (int)cluster, kubeconfig ? kubeconfig : "-", api_version,
           kind, ns, name);
    if (strcmp(name, "boom") == 0) {
        return co_error_set(CO_EAUTH, "secrets \"boom\" is forbidden");
    }
    *out = strcmp(name, "x") == 0 ? yaml("{apiVersion: v1, kind: Secret, metadata: {name: x}, "
                                         "data: {password: c2VjcmV0}, count: 3}")
                                  : NULL;
    return 0;
}

static int fake_lookup_list(void *ctx,
                            struct json_object **out,
                            co_kzgen_cluster_kind cluster,
                            const char *kubeconfig,
                            const char *api_version,
                            const char *kind,
                            const char *ns,
                            const char *selector)
{
    record(ctx, "list %d %s %s %s %s [%s]", (int)cluster, kubeconfig ? kubeconfig : "-",
           api_version, kind, ns, selector);
    *out = yaml("{kind: SecretList, items: [{metadata: {name: a}}, {metadata: {name: b}}]}");
    return 0;
}

static co_vfs *chart_with(const char *template_text)
{
    return mem_tree("Chart.yaml", "apiVersion: v2\nname: l\nversion: 1.0.0\n", "templates/t.yaml",
                    template_text, NULL);
}

/* The chart idiom that keeps a generated password: reuse the live Secret's, else generate. */
#define REUSE_LOOKUP "{{- $s := lookup \"v1\" \"Secret\" .Release.Namespace \"x\" }}\n"
#define REUSE_VALUE                                                                                \
    "{{ if $s }}{{ $s.data.password }}{{ else }}{{ randAlphaNum 16 | b64enc }}{{ end }}"

static void test_helm__lookup_family_goes_through_the_hooks(void **state)
{
    (void)state;
    co_vfs *fs = chart_with(
        REUSE_LOOKUP
        "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\ndata:\n"
        "  password: " REUSE_VALUE "\n"
        "  missing: '{{ len (lookup \"v1\" \"Secret\" .Release.Namespace \"y\") }}'\n"
        "  int: '{{ printf \"%T\" (lookup \"v1\" \"Secret\" \"n1\" \"x\").count }}'\n"
        "  listed: '{{ range (lookupList \"v1\" \"Secret\" \"n1\" \"a=b\").items }}"
        "{{ .metadata.name }}{{ end }}'\n"
        "  all: '{{ len (lookup \"v1\" \"Secret\" \"n1\" \"\").items }}'\n"
        "  local: '{{ (localLookup \"v1\" \"Secret\" \"n1\" \"x\").metadata.name }}'\n"
        "  mustlocal: '{{ (mustLocalLookup \"v1\" \"Secret\" \"n1\" \"x\").metadata.name }}'\n"
        "  locallist: '{{ len (localLookupList \"v1\" \"Secret\" \"n1\" \"\").items }}'\n"
        "  kc: '{{ (lookupWithKubeConfig \"v1\" \"Secret\" \"n1\" \"x\" \"KC\").metadata.name }}'\n"
        "  mustkc: '{{ (mustLookupWithKubeConfig \"v1\" \"Secret\" \"n1\" \"x\" \"KC\").kind }}'\n"
        "  kclist: '{{ len (lookupListWithKubeConfig \"v1\" \"Secret\" \"n1\" \"\" \"KC\").items "
        "}}'\n");
    hook_log log = {0};
    co_helm_options opts = {.release_namespace = "n1",
                            .lookup = fake_lookup,
                            .lookup_list = fake_lookup_list,
                            .cluster_ctx = &log};
    struct json_object *out = render_tree(fs, NULL, &opts, true, NULL);
    if (!out) {
        fail_msg("render failed: %s", co_error_last());
    }
    assert_json_eq(co_json_get(json_object_array_get_idx(out, 0), "data", NULL),
                   "{password: c2VjcmV0, missing: '0', int: int64, listed: ab, all: '2', "
                   "local: x, mustlocal: x, locallist: '2', kc: x, mustkc: Secret, kclist: '2'}");
    json_object_put(out);
    assert_true(recorded(&log, "get 0 - v1 Secret n1 x"));
    assert_true(recorded(&log, "get 0 - v1 Secret n1 y"));
    assert_true(recorded(&log, "list 0 - v1 Secret n1 [a=b]"));
    assert_true(recorded(&log, "list 0 - v1 Secret n1 []")); /* lookup with an empty name */
    assert_true(recorded(&log, "get 1 - v1 Secret n1 x"));
    assert_true(recorded(&log, "list 1 - v1 Secret n1 []"));
    assert_true(recorded(&log, "get 2 KC v1 Secret n1 x"));
    assert_true(recorded(&log, "list 2 KC v1 Secret n1 []"));
    co_vfs_free(fs);

    /* mustLookup: not found is an error; a hook's error fails the render and is named */
    fs = chart_with("a: {{ mustLookup \"v1\" \"Secret\" \"n1\" \"y\" }}\n");
    int rc = 0;
    assert_null(render_tree(fs, NULL, &opts, true, &rc));
    assert_int_equal(rc, CO_EINVALID);
    assert_contains(co_error_last(), "mustLookup: v1 Secret n1/y not found");
    co_vfs_free(fs);
    fs = chart_with("a: {{ lookup \"v1\" \"Secret\" \"n1\" \"boom\" }}\n");
    assert_null(render_tree(fs, NULL, &opts, true, &rc));
    assert_contains(co_error_last(), "error calling lookup: lookup: secrets \"boom\" is forbidden");
    co_vfs_free(fs);
    fs = chart_with("a: {{ lookup \"v1\" \"Secret\" \"n1\" 3 }}\n");
    assert_null(render_tree(fs, NULL, &opts, true, &rc));
    assert_contains(co_error_last(), "lookup: argument 4 must be a string");
    co_vfs_free(fs);
}

static void test_helm__lookups_without_hooks_act_as_helm_template(void **state)
{
    (void)state;
    /* helm template's lookup finds nothing: the idiom generates */
    co_vfs *fs = chart_with(REUSE_LOOKUP "a: '{{ len (lookup \"v1\" \"Secret\" \"n1\" \"x\") }}'\n"
                                         "b: '{{ len (lookup \"v1\" \"Secret\" \"n1\" \"\") }}'\n"
                                         "c: " REUSE_VALUE "\n");
    struct json_object *out = render_tree(fs, NULL, NULL, false, NULL);
    if (!out) {
        fail_msg("render failed: %s", co_error_last());
    }
    struct json_object *o = json_object_array_get_idx(out, 0);
    assert_string_equal(json_object_get_string(co_json_get(o, "a", NULL)), "0");
    assert_string_equal(json_object_get_string(co_json_get(o, "b", NULL)), "0");
    assert_int_equal(json_object_get_string_len(co_json_get(o, "c", NULL)), 24);
    json_object_put(out);
    co_vfs_free(fs);
    /* the operator's additions need a cluster */
    static const char *const calls[] = {
        "mustLookup \"v1\" \"Secret\" \"n1\" \"x\"",
        "lookupList \"v1\" \"Secret\" \"n1\" \"\"",
        "localLookup \"v1\" \"Secret\" \"n1\" \"x\"",
        "mustLocalLookup \"v1\" \"Secret\" \"n1\" \"x\"",
        "localLookupList \"v1\" \"Secret\" \"n1\" \"\"",
        "lookupWithKubeConfig \"v1\" \"Secret\" \"n1\" \"x\" \"KC\"",
        "mustLookupWithKubeConfig \"v1\" \"Secret\" \"n1\" \"x\" \"KC\"",
        "lookupListWithKubeConfig \"v1\" \"Secret\" \"n1\" \"\" \"KC\"",
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(calls); i++) {
        char *text = co_xasprintf("a: {{ %s }}\n", calls[i]);
        fs = chart_with(text);
        int rc = 0;
        assert_null(render_tree(fs, NULL, NULL, false, &rc));
        assert_int_not_equal(rc, 0);
        char *want = co_xasprintf("%.*s: no cluster access", (int)strcspn(calls[i], " "), calls[i]);
        assert_contains(co_error_last(), want);
        free(want);
        free(text);
        co_vfs_free(fs);
    }
}

static void test_helm__release_service_defaults_to_helm_and_takes_the_operators_name(void **state)
{
    (void)state;
    co_vfs *fs = chart_with("service: {{ .Release.Service }}\n");
    struct json_object *out = render_tree(fs, NULL, NULL, false, NULL);
    assert_json_eq(out, "[{service: Helm}]");
    json_object_put(out);
    co_helm_options opts = {.release_service = CO_HELM_OPERATOR_SERVICE};
    out = render_tree(fs, NULL, &opts, true, NULL);
    assert_json_eq(out, "[{service: component-operator.cs.sap.com}]");
    json_object_put(out);
    co_vfs_free(fs);
}

static void test_helm__api_versions_from_discovery_list_kinds_once(void **state)
{
    (void)state;
    struct json_object *lists =
        yaml("[{groupVersion: v1, resources: [{name: pods, kind: Pod}, "
             "{name: pods/status, kind: Pod}, {name: pods/eviction, kind: Eviction}]},"
             " {groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment},"
             " {name: deployments/scale, kind: Scale}]},"
             " {groupVersion: monitoring.coreos.com/v1, resources: [{name: servicemonitors, "
             "kind: ServiceMonitor}]}, {groupVersion: apps/v1, resources: []},"
             " {resources: [{kind: Orphan}]}]");
    char **v = NULL;
    size_t n = 0;
    co_helm_api_versions(&v, &n, lists);
    json_object_put(lists);
    static const char *const want[] = {
        "v1",
        "v1/Pod",
        "v1/Eviction",
        "apps/v1",
        "apps/v1/Deployment",
        "apps/v1/Scale",
        "monitoring.coreos.com/v1",
        "monitoring.coreos.com/v1/ServiceMonitor",
    };
    assert_int_equal(n, CO_ARRAY_SIZE(want));
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(v[i], want[i]);
    }
    assert_null(v[n]);

    /* what a chart sees of them */
    co_vfs *fs = chart_with(
        "kind: '{{ .Capabilities.APIVersions.Has \"monitoring.coreos.com/v1/ServiceMonitor\" }}'\n"
        "gv: '{{ .Capabilities.APIVersions.Has \"monitoring.coreos.com/v1\" }}'\n"
        "no: '{{ .Capabilities.APIVersions.Has \"monitoring.coreos.com/v1/PodMonitor\" }}'\n");
    co_helm_options opts = {.api_versions = (const char *const *)v, .n_api_versions = n};
    struct json_object *out = render_tree(fs, NULL, &opts, false, NULL);
    assert_json_eq(out, "[{kind: 'true', gv: 'true', no: 'false'}]");
    json_object_put(out);
    co_vfs_free(fs);
    co_helm_strv_free(v);

    co_helm_api_versions(&v, &n, NULL);
    assert_int_equal(n, 0);
    assert_null(v[0]);
    co_helm_strv_free(v);
    co_helm_strv_free(NULL);
}

/* ---- co_helm_template's steps ------------------------------------------------------------- */

/* What is refused before any template runs, each error naming what is wrong. */
static void test_helm__template_refuses_bad_input_before_rendering(void **state)
{
    (void)state;
    co_vfs *fs = chart_with("a: 1\n");
    int rc = 0;
    assert_null(render_tree(fs, "[1, 2]", NULL, false, &rc));
    assert_int_equal(rc, CO_EINVALID);
    assert_string_equal(co_error_last(), "values: expected a map, got array");
    co_helm_options opts = {.kube_version = "one.two"};
    assert_null(render_tree(fs, NULL, &opts, false, &rc));
    assert_int_equal(rc, CO_EINVALID);
    assert_string_equal(co_error_last(), "kube version \"one.two\": not a semantic version");
    co_vfs_free(fs);

    /* the values of the tree: a subchart's section that is not a map */
    char *dir = co_test_fixture_path("helm/deps/chart");
    assert_co_pass(co_vfs_new_disk(&fs, dir));
    assert_null(render_tree(fs, "cache: 3", NULL, false, &rc));
    assert_int_equal(rc, CO_EINVALID);
    assert_contains(co_error_last(), "type mismatch on cache");
    co_vfs_free(fs);
    free(dir);
}

/* CO_HELM_SKIP_SCHEMA_VALIDATION and CO_HELM_SKIP_CRDS each skip their step alone; CRDs come
 * first, printed as they are, and one that is not YAML names its file. */
static void test_helm__template_skip_flags_and_crds(void **state)
{
    (void)state;
    co_vfs *fs =
        mem_tree("Chart.yaml", "apiVersion: v2\nname: s\nversion: 1.0.0\n", "values.schema.json",
                 "{\"properties\": {\"count\": {\"type\": \"integer\"}}}", "crds/c.yaml",
                 "kind: CustomResourceDefinition\nmetadata: {name: c}\n", "templates/t.yaml",
                 "kind: ConfigMap\ncount: {{ .Values.count }}\n", NULL);
    int rc = 0;
    assert_null(render_tree(fs, "count: x", NULL, false, &rc));
    assert_int_equal(rc, CO_EINVALID);
    assert_contains(co_error_last(), "count: Invalid type. Expected: integer, given: string");
    co_helm_options opts = {.flags = CO_HELM_SKIP_SCHEMA_VALIDATION};
    struct json_object *out = render_tree(fs, "count: x", &opts, false, NULL);
    assert_json_eq(out, "[{kind: CustomResourceDefinition, metadata: {name: c}},"
                        " {kind: ConfigMap, count: x}]");
    json_object_put(out);
    opts.flags = CO_HELM_SKIP_CRDS;
    out = render_tree(fs, "count: 1", &opts, false, NULL);
    assert_json_eq(out, "[{kind: ConfigMap, count: 1}]");
    json_object_put(out);
    co_vfs_free(fs);

    fs = mem_tree("Chart.yaml", "apiVersion: v2\nname: s\nversion: 1.0.0\n", "crds/bad.yaml",
                  "a: [\n", NULL);
    assert_null(render_tree(fs, NULL, NULL, false, &rc));
    assert_int_equal(rc, CO_EINVALID);
    assert_contains(co_error_last(), "s/crds/bad.yaml");
    co_vfs_free(fs);
}

/* The templates' output stays until it is parsed: it is charged to the render's budget, and a
 * template whose output does not fit is named. */
static void test_helm__template_output_is_charged_to_the_budget(void **state)
{
    (void)state;
    co_vfs *fs = chart_with("{{ $s := repeat 500000 \"x\" }}a: {{ $s }}\n"
                            "b: {{ substr 0 100000 $s }}\n");
    co_budget_limits limits = {.memory = CO_MIB};
    co_budget_begin(&limits);
    int rc = 0;
    assert_null(render_tree(fs, NULL, NULL, false, &rc));
    co_budget_end();
    assert_int_equal(rc, CO_ETOOBIG);
    assert_contains(co_error_last(), "l/templates/t.yaml: render budget exceeded");
    struct json_object *out = render_tree(fs, NULL, NULL, false, &rc);
    assert_non_null(out);
    assert_int_equal(json_object_array_length(out), 1);
    json_object_put(out);
    co_vfs_free(fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helm__load_sorts_files_like_helm),
        cmocka_unit_test(test_helm__load_numeric_strings_like_go),
        cmocka_unit_test(test_helm__load_v1_requirements),
        cmocka_unit_test(test_helm__load_packaged_subchart),
        cmocka_unit_test(test_helm__load_rejects_bad_chart_yaml),
        cmocka_unit_test(test_helm__load_missing_chart_yaml),
        cmocka_unit_test(test_helm__load_rejects_bad_archive),
        cmocka_unit_test(test_helm__helmignore_errors_name_the_line),
        cmocka_unit_test(test_helm__values_defaults_imports_and_globals),
        cmocka_unit_test(test_helm__values_null_deletes_and_tags),
        cmocka_unit_test(test_helm__values_subchart_section_must_be_a_map),
        cmocka_unit_test(test_helm__values_disabled_dependency_without_name),
        cmocka_unit_test(test_helm__import_values_never_nest_a_table_in_itself),
        cmocka_unit_test(test_helm__import_values_share_tables_as_helm),
        cmocka_unit_test(test_helm__path_match_is_go_filepath_match),
        cmocka_unit_test(test_helm__glob_is_gobwas),
        cmocka_unit_test(test_helm__map_install_and_upgrade_hooks),
        cmocka_unit_test(test_helm__map_drops_and_rejects),
        cmocka_unit_test(test_helm__map_resource_policy_and_operator_annotations),
        cmocka_unit_test(test_helm__render_errors_name_template_and_line),
        cmocka_unit_test(test_helm__render_maps_hooks_and_keeps_order),
        cmocka_unit_test(test_helm__render_builtins_and_helm_functions),
        cmocka_unit_test(test_helm__lookup_family_goes_through_the_hooks),
        cmocka_unit_test(test_helm__lookups_without_hooks_act_as_helm_template),
        cmocka_unit_test(test_helm__release_service_defaults_to_helm_and_takes_the_operators_name),
        cmocka_unit_test(test_helm__api_versions_from_discovery_list_kinds_once),
        cmocka_unit_test(test_helm__template_refuses_bad_input_before_rendering),
        cmocka_unit_test(test_helm__template_skip_flags_and_crds),
        cmocka_unit_test(test_helm__template_output_is_charged_to_the_budget),
    };
    return cmocka_run_group_tests_name("helm", tests, NULL, NULL);
}
