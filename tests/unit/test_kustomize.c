/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the kustomize engine and the vfs module: in-memory trees, load restrictions,
 * unsupported features, the content hash, and errors that name the file and field. The
 * behaviour against real kustomize is covered by test_kustomize_corpus.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/json/json.h"
#include "co/render/kustomize.h"
#include "co/render/vfs.h"
#include "tests/support/test_support.h"

static void put(co_vfs *fs, const char *path, const char *text)
{
    assert_co_pass(co_vfs_mem_put(fs, path, text, strlen(text)));
}

static json_object *build_ok(co_vfs *fs, const char *root, const co_kustomize_options *o)
{
    json_object *out = NULL;
    assert_co_pass(co_kustomize_build(&out, fs, root, o));
    return out;
}

static const char *name_of(json_object *arr, size_t i)
{
    json_object *md = json_object_object_get(json_object_array_get_idx(arr, i), "metadata");
    return json_object_get_string(json_object_object_get(md, "name"));
}

static void test_vfs__join_rejects_escape(void **state)
{
    (void)state;
    char *p = NULL;
    assert_co_pass(co_vfs_join(&p, "a/b", "../c/./d"));
    assert_string_equal(p, "a/c/d");
    free(p);
    assert_co_fail_with(CO_EINVALID, co_vfs_join(&p, "a", "../../x"));
    assert_co_fail_with(CO_EINVALID, co_vfs_join(&p, "a", "/etc/passwd"));
    assert_true(co_vfs_is_within("a/b", "a"));
    assert_false(co_vfs_is_within("ab", "a"));
    assert_true(co_vfs_is_within("x", ""));
}

static void test_vfs__memory_tree_lists_and_reads(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    put(fs, "d/b.txt", "B");
    put(fs, "d/a.txt", "A");
    put(fs, "d/sub/c.txt", "C");
    assert_int_equal(co_vfs_stat(fs, "d"), CO_VFS_DIR);
    assert_int_equal(co_vfs_stat(fs, "d/a.txt"), CO_VFS_FILE);
    assert_int_equal(co_vfs_stat(fs, "d/zz"), CO_VFS_NONE);
    char **names = NULL;
    size_t n = 0;
    assert_co_pass(co_vfs_list(&names, &n, fs, "d"));
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "a.txt");
    assert_string_equal(names[2], "sub");
    co_vfs_strv_free(names);
    assert_co_pass(co_vfs_walk(&names, &n, fs, ""));
    assert_int_equal(n, 3);
    assert_string_equal(names[2], "d/sub/c.txt");
    co_vfs_strv_free(names);
    char *data = NULL;
    size_t len = 0;
    assert_co_pass(co_vfs_read(&data, &len, fs, "d/sub/c.txt"));
    assert_int_equal(len, 1);
    assert_string_equal(data, "C");
    free(data);
    assert_co_fail_with(CO_ENOTFOUND, co_vfs_read(&data, &len, fs, "nope"));
    assert_co_fail_with(CO_EINVALID, co_vfs_mem_put(fs, "../x", "y", 1));
    co_vfs_free(fs);
}

static void test_vfs__memory_tree_over_a_lower_tree(void **state)
{
    (void)state;
    co_vfs *lower = co_vfs_new_mem();
    put(lower, "base/a.yaml", "lower-a");
    put(lower, "app/x.yaml", "lower-x");
    put(lower, "app/hidden.yaml", "hidden");
    co_vfs *fs = co_vfs_new_mem();
    put(fs, "app/x.yaml", "upper-x");
    const char *own[] = {"app"};
    co_vfs_mem_set_lower(fs, lower, own, 1, NULL, NULL);
    char *data = NULL;
    assert_co_pass(co_vfs_read(&data, NULL, fs, "base/a.yaml"));
    assert_string_equal(data, "lower-a");
    free(data);
    assert_co_pass(co_vfs_read(&data, NULL, fs, "app/x.yaml"));
    assert_string_equal(data, "upper-x");
    free(data);
    /* below an own directory only the memory tree counts */
    assert_int_equal(co_vfs_stat(fs, "app/hidden.yaml"), CO_VFS_NONE);
    assert_int_equal(co_vfs_stat(fs, "base"), CO_VFS_DIR);
    assert_int_equal(co_vfs_stat(fs, "app"), CO_VFS_DIR);
    char **names = NULL;
    size_t n = 0;
    assert_co_pass(co_vfs_list(&names, &n, fs, ""));
    assert_int_equal(n, 2);
    assert_string_equal(names[0], "app");
    assert_string_equal(names[1], "base");
    co_vfs_strv_free(names);
    co_vfs_free(fs);
    co_vfs_free(lower);
}

static void test_vfs__disk_does_not_follow_links(void **state)
{
    (void)state;
    char *dir = co_test_tmpdir();
    char *f = co_xasprintf("%s/root/a.txt", dir);
    co_test_write_file(f, "hello", 5);
    char *outside = co_xasprintf("%s/secret.txt", dir);
    co_test_write_file(outside, "secret", 6);
    char *link = co_xasprintf("%s/root/link.txt", dir);
    assert_int_equal(symlink(outside, link), 0);
    char *root = co_xasprintf("%s/root", dir);
    co_vfs *fs = NULL;
    assert_co_pass(co_vfs_new_disk(&fs, root));
    char *data = NULL;
    assert_co_pass(co_vfs_read(&data, NULL, fs, "a.txt"));
    assert_string_equal(data, "hello");
    free(data);
    assert_int_not_equal(co_vfs_read(&data, NULL, fs, "link.txt"), 0);
    assert_int_equal(co_vfs_stat(fs, "link.txt"), CO_VFS_NONE);
    co_vfs_free(fs);
    co_test_rmtree(dir);
    free(f);
    free(outside);
    free(link);
    free(root);
    free(dir);
}

static void test_kustomize__builds_from_memory(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    put(fs, "app/kustomization.yaml",
        "{\"resources\": [\"cm.yaml\"], \"namePrefix\": \"p-\", "
        "\"configMapGenerator\": [{\"name\": \"g\", \"literals\": [\"a=b\"]}]}");
    put(fs, "app/cm.yaml",
        "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"x\"}}");
    json_object *out = build_ok(fs, "app", NULL);
    assert_int_equal(json_object_array_length(out), 2);
    /* the name kubectl kustomize prints for the same kustomization */
    assert_string_equal(name_of(out, 0), "p-g-4h2mbtbbt6");
    assert_string_equal(name_of(out, 1), "p-x");
    json_object_put(out);
    co_vfs_free(fs);
}

static void test_kustomize__targeted_patch_without_resources(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    /* a patch whose target selects from an empty set: nothing to patch, an empty list */
    put(fs, "app/kustomization.yaml",
        "{\"patches\": [{\"target\": {\"kind\": \"Deployment\"}, \"patch\": "
        "\"apiVersion: apps/v1\\nkind: Deployment\\nmetadata:\\n  name: x\\n\"}]}");
    json_object *out = build_ok(fs, "app", NULL);
    assert_int_equal(json_object_array_length(out), 0);
    json_object_put(out);
    co_vfs_free(fs);
}

/* kustomize's LoadRestrictionsRootOnly: a file must lie in or below the directory of the
 * kustomization that reads it; a directory (a base) may lie anywhere in the tree. */
static void test_kustomize__load_restriction(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    put(fs, "shared/cm.yaml",
        "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"x\"}}");
    put(fs, "shared/kustomization.yaml", "{\"resources\": [\"cm.yaml\"]}");
    put(fs, "app/kustomization.yaml", "{\"resources\": [\"../shared/cm.yaml\"]}");
    put(fs, "base/kustomization.yaml", "{\"resources\": [\"../shared\"], \"namePrefix\": \"b-\"}");
    put(fs, "overlays/prod/kustomization.yaml",
        "{\"resources\": [\"../../base\"], \"nameSuffix\": \"-p\"}");
    put(fs, "patched/kustomization.yaml",
        "{\"resources\": [\"../shared\"], \"patches\": [{\"path\": \"../p.yaml\"}]}");
    put(fs, "p.yaml",
        "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": "
        "\"x\"}, \"data\": {\"a\": \"1\"}}");
    json_object *out = NULL;
    assert_co_fail_with(CO_EINVALID, co_kustomize_build(&out, fs, "app", NULL));
    assert_contains(co_error_last(), "security; file 'shared/cm.yaml' is not in or below 'app'");
    assert_contains(co_error_last(), "app/kustomization.yaml");
    assert_co_fail_with(CO_EINVALID, co_kustomize_build(&out, fs, "patched", NULL));
    assert_contains(co_error_last(), "security; file 'p.yaml' is not in or below 'patched'");
    co_kustomize_options o = CO_KUSTOMIZE_OPTIONS_INIT;
    o.shown_prefix = "/";
    assert_co_fail_with(CO_EINVALID, co_kustomize_build(&out, fs, "app", &o));
    assert_contains(co_error_last(), "security; file '/shared/cm.yaml' is not in or below '/app'");
    /* bases two levels up */
    out = build_ok(fs, "overlays/prod", NULL);
    assert_int_equal(json_object_array_length(out), 1);
    assert_string_equal(name_of(out, 0), "b-x-p");
    json_object_put(out);
    co_kustomize_options u = CO_KUSTOMIZE_OPTIONS_INIT;
    u.load_restrictor = CO_KUSTOMIZE_LOAD_NONE;
    out = build_ok(fs, "app", &u);
    assert_int_equal(json_object_array_length(out), 1);
    json_object_put(out);
    out = build_ok(fs, "patched", &u);
    assert_string_equal(co_json_str(json_object_array_get_idx(out, 0), "data", "a", NULL), "1");
    json_object_put(out);
    co_vfs_free(fs);
}

static void test_kustomize__remote_and_plugins_unsupported(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    put(fs, "a/kustomization.yaml",
        "{\"resources\": [\"https://github.com/org/repo//base?ref=v1\"]}");
    put(fs, "b/kustomization.yaml", "{\"transformers\": [\"t.yaml\"]}");
    put(fs, "c/kustomization.yaml", "{\"helmCharts\": [{\"name\": \"x\"}]}");
    put(fs, "d/kustomization.yaml", "{\"resources\": [\"github.com/org/repo/base\"]}");
    json_object *out = NULL;
    assert_co_fail_with(CO_EUNSUPPORTED, co_kustomize_build(&out, fs, "a", NULL));
    assert_contains(co_error_last(), "remote");
    assert_co_fail_with(CO_EUNSUPPORTED, co_kustomize_build(&out, fs, "b", NULL));
    assert_contains(co_error_last(), "transformers");
    assert_co_fail_with(CO_EUNSUPPORTED, co_kustomize_build(&out, fs, "c", NULL));
    assert_co_fail_with(CO_EUNSUPPORTED, co_kustomize_build(&out, fs, "d", NULL));
    co_vfs_free(fs);
}

static void test_kustomize__errors_name_file_and_field(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    put(fs, "a/kustomization.yaml", "{\"resources\": \"notalist\"}");
    put(fs, "b/kustomization.yaml", "{\"resources\": [\"missing.yaml\"]}");
    put(fs, "c/kustomization.yaml", "{\"patches\": [{\"path\": \"p.yaml\", \"patch\": \"x: 1\"}]}");
    put(fs, "d/kustomization.yaml", "{\"resources\": [\"bad.yaml\"]}");
    put(fs, "d/bad.yaml", "{\"apiVersion\": ");
    put(fs, "e/kustomization.yaml", "{\"resources\": [\"..\"]}");
    json_object *out = NULL;
    assert_co_fail_with(CO_EINVALID, co_kustomize_build(&out, fs, "a", NULL));
    assert_contains(co_error_last(), "'resources' must be a list");
    assert_co_fail_with(CO_ENOTFOUND, co_kustomize_build(&out, fs, "b", NULL));
    assert_contains(co_error_last(), "missing.yaml");
    assert_co_fail_with(CO_EINVALID, co_kustomize_build(&out, fs, "c", NULL));
    assert_contains(co_error_last(), "patches[0]");
    assert_co_fail_with(CO_EINVALID, co_kustomize_build(&out, fs, "d", NULL));
    assert_contains(co_error_last(), "d/bad.yaml");
    assert_co_fail_with(CO_EINVALID, co_kustomize_build(&out, fs, "e", NULL));
    assert_co_fail_with(CO_ENOTFOUND, co_kustomize_build(&out, fs, "nothing", NULL));
    co_vfs_free(fs);
}

static void test_kustomize__cycle_detected(void **state)
{
    (void)state;
    co_vfs *fs = co_vfs_new_mem();
    put(fs, "a/kustomization.yaml", "{\"resources\": [\"../b\"]}");
    put(fs, "b/kustomization.yaml", "{\"resources\": [\"../a\"]}");
    put(fs, "x/y/kustomization.yaml", "{\"resources\": [\"..\"]}");
    put(fs, "x/kustomization.yaml", "{\"namespace\": \"n\"}");
    json_object *out = NULL;
    assert_co_fail_with(CO_EINVALID, co_kustomize_build(&out, fs, "a", NULL));
    assert_contains(co_error_last(),
                    "cycle detected: candidate root 'a' contains visited root 'a'");
    /* a parent directory contains the kustomization being built */
    assert_co_fail_with(CO_EINVALID, co_kustomize_build(&out, fs, "x/y", NULL));
    assert_contains(co_error_last(),
                    "cycle detected: candidate root 'x' contains visited root 'x/y'");
    co_vfs_free(fs);
}

static void test_kustomize__hash_matches_kustomize(void **state)
{
    (void)state;
    /* the value kustomize prints for a ConfigMap with data {A: "1", B: two, C: quoted} */
    json_object *cm =
        json_tokener_parse("{\"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"whatever\"}, "
                           "\"data\": {\"A\": \"1\", \"B\": \"two\", \"C\": \"quoted\"}}");
    char h[11];
    assert_co_pass(co_kustomize_hash(h, cm));
    assert_string_equal(h, "tgf252bf64");
    json_object_put(cm);
    json_object *dep = json_tokener_parse("{\"kind\": \"Deployment\"}");
    assert_co_fail_with(CO_EINVALID, co_kustomize_hash(h, dep));
    json_object_put(dep);
}

/* The hash of a ConfigMap whose data (and, when not NULL, binaryData) is @p data. */
static void expect_hash(const char *kind, json_object *data, json_object *extra, const char *want)
{
    json_object *obj = json_object_new_object();
    json_object_object_add(obj, "kind", json_object_new_string(kind));
    json_object_object_add(obj, "data", data);
    if (extra) {
        json_object_object_add(obj, strcmp(kind, "Secret") == 0 ? "stringData" : "binaryData",
                               extra);
    }
    char h[11];
    assert_co_pass(co_kustomize_hash(h, obj));
    assert_string_equal(h, want);
    json_object_put(obj);
}

/* The hash writes \b and \f briefly, as Go 1.22 and later do, not as \u0008 and \u000c (which
 * gave 6m7h86622c): kubectl kustomize v5.5.0 names a configMapGenerator with a file f.txt of
 * these bytes cm-tfg9227f88. */
static void test_kustomize__hash_writes_backspace_and_form_feed_as_go_1_22(void **state)
{
    (void)state;
    json_object *data = json_object_new_object();
    json_object_object_add(data, "f.txt", json_object_new_string("a\bb\fc"));
    expect_hash("ConfigMap", data, NULL, "tfg9227f88");
}

/* Tricky strings and values in what the hash reads, pinned. */
static void test_kustomize__hash_of_tricky_content_is_pinned(void **state)
{
    (void)state;
    /* kubectl kustomize (v5.5.0) names a configMapGenerator with a file f.txt of these bytes
     * and a literal html=<a&b> cm-76th969hk2 */
    static const char f[] = "<a&b>\xe2\x80\xa8\xe2\x80\xa9\x01\x1f\x7f\t\n\r\"\\\xc3\xa9"
                            "\xf0\x9f\x98\x80\x00z";
    json_object *data = json_object_new_object();
    json_object_object_add(data, "f.txt", json_object_new_string_len(f, (int)sizeof(f) - 1));
    json_object_object_add(data, "html", json_object_new_string("<a&b>"));
    expect_hash("ConfigMap", data, NULL, "76th969hk2");
    /* invalid UTF-8 and HTML in keys and values, binaryData and stringData */
    data = json_object_new_object();
    json_object_object_add(data, "k<&>\xff",
                           json_object_new_string("\xed\xa0\x80\xc0\xaf\xe2\x82"));
    json_object *extra = json_object_new_object();
    json_object_object_add(extra, "b", json_object_new_string("\xe2\x80\xa9&"));
    expect_hash("ConfigMap", json_object_get(data), json_object_get(extra), "288bkmfkc9");
    expect_hash("Secret", data, extra, "cfftm8fb4g");
    /* values that are not strings */
    data = json_object_new_object();
    json_object_object_add(data, "i", json_object_new_int64(-12));
    json_object_object_add(data, "u", json_object_new_uint64(18446744073709551615ULL));
    json_object_object_add(data, "b", json_object_new_boolean(1));
    json_object_object_add(data, "n", NULL);
    json_object *list = json_object_new_array();
    json_object_array_add(list, json_object_new_string("<"));
    json_object_array_add(list, json_object_new_object());
    json_object_object_add(data, "l", list);
    expect_hash("ConfigMap", data, NULL, "926849f9tg");
}

/* Numbers in what the hash reads are written as Go writes the float64 kustomize has read them
 * into, {"d":1,"e":0.1,"f":1e+300}, not as json-c's %.17g ({"d":1.0,"e":0.10000000000000001,
 * "f":1.0000000000000001e+300}, which gave f985f7fhcg); one that JSON cannot hold is an error,
 * as Go's "json: unsupported value". */
static void test_kustomize__hash_writes_numbers_as_go(void **state)
{
    (void)state;
    json_object *data = json_object_new_object();
    json_object_object_add(data, "d", json_object_new_double(1.0));
    json_object_object_add(data, "e", json_object_new_double(0.1));
    json_object_object_add(data, "f", json_object_new_double(1e300));
    expect_hash("ConfigMap", data, NULL, "d8bt2dm64b");
    json_object *obj = json_object_new_object();
    json_object_object_add(obj, "kind", json_object_new_string("Secret"));
    json_object_object_add(obj, "metadata", json_object_new_object());
    json_object_object_add(json_object_object_get(obj, "metadata"), "name",
                           json_object_new_string("s"));
    data = json_object_new_object();
    json_object_object_add(data, "x", json_object_new_double(NAN));
    json_object_object_add(obj, "data", data);
    char h[11] = "unchanged!";
    assert_co_fail_with(CO_EINVALID, co_kustomize_hash(h, obj));
    assert_string_equal(co_error_last(),
                        "Secret s: name suffix hash: json: unsupported value: NaN");
    assert_string_equal(h, "unchanged!");
    json_object_put(obj);
}

static void test_kustomize__post_build_patch_without_target_applies_to_all(void **state)
{
    (void)state;
    json_object *objs = json_tokener_parse(
        "[{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"b\"}},"
        " {\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": "
        "\"d\"}, \"spec\": {\"template\": {\"spec\": {\"containers\": [{\"name\": \"c\", "
        "\"image\": \"nginx:1\"}]}}}}]");
    json_object *patches = json_tokener_parse(
        "[{\"patch\": \"metadata:\\n  annotations:\\n    x: z\\n\"},"
        " {\"patch\": \"- op: add\\n  path: /metadata/labels\\n  value: {l: v}\\n\", "
        "\"target\": {\"kind\": \"ConfigMap\"}}]");
    json_object *images = json_tokener_parse("[{\"name\": \"nginx\", \"newTag\": \"2\"}]");
    json_object *out = NULL;
    assert_co_pass(co_kustomize_post_build(&out, objs, patches, images));
    assert_int_equal(json_object_array_length(out), 2);
    for (size_t i = 0; i < 2; i++) {
        json_object *md = json_object_object_get(json_object_array_get_idx(out, i), "metadata");
        json_object *ann = json_object_object_get(md, "annotations");
        assert_string_equal(json_object_get_string(json_object_object_get(ann, "x")), "z");
    }
    /* legacy order: the ConfigMap first; only it got the JSON patch's labels */
    json_object *cm = json_object_array_get_idx(out, 0);
    assert_non_null(json_object_object_get(json_object_object_get(cm, "metadata"), "labels"));
    assert_contains(json_object_to_json_string(json_object_array_get_idx(out, 1)), "nginx:2");
    json_object_put(out);
    json_object_put(objs);
    json_object_put(patches);
    json_object_put(images);
}

static void test_kustomize__post_build_rejects_malformed_entries(void **state)
{
    (void)state;
    json_object *objs = json_tokener_parse("[]");
    json_object *bad1 = json_tokener_parse("[{\"target\": {}}]");
    json_object *bad2 = json_tokener_parse("[{\"patch\": \"x: 1\", \"target\": \"all\"}]");
    json_object *bad3 = json_tokener_parse("[{\"newTag\": \"1\"}]");
    json_object *out = NULL;
    assert_co_fail_with(CO_EINVALID, co_kustomize_post_build(&out, objs, bad1, NULL));
    assert_contains(co_error_last(), "postBuild.patches[0].patch");
    assert_co_fail_with(CO_EINVALID, co_kustomize_post_build(&out, objs, bad2, NULL));
    assert_contains(co_error_last(), "postBuild.patches[0].target");
    assert_co_fail_with(CO_EINVALID, co_kustomize_post_build(&out, objs, NULL, bad3));
    assert_contains(co_error_last(), "postBuild.images[0].name");
    json_object_put(objs);
    json_object_put(bad1);
    json_object_put(bad2);
    json_object_put(bad3);
}

/* Appends printf-formatted text to @p b (the test's own growing buffer). */
CO_PRINTF(2, 3) static void add(co_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    assert_int_equal(co_buf_vprintf(b, fmt, ap), 0);
    va_end(ap);
}

static void put_buf(co_vfs *fs, const char *path, co_buf *b)
{
    assert_co_pass(co_vfs_mem_put(fs, path, b->ptr, b->len));
    co_buf_dispose(b);
}

static const char *kind_of(json_object *arr, size_t i)
{
    return json_object_get_string(
        json_object_object_get(json_object_array_get_idx(arr, i), "kind"));
}

/* Thousands of resources: the id check and the output order used to compare every resource
 * with every other (seconds for 5000); the result is the same. */
static void test_kustomize__thousands_of_resources_are_accumulated_and_sorted(void **state)
{
    (void)state;
    enum { N = 6000 };
    co_vfs *fs = co_vfs_new_mem();
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    for (int i = N - 1; i >= 0; i--) {
        add(&b, "---\napiVersion: v1\nkind: %s\nmetadata:\n  name: r%d\n%s",
            i % 3 == 0 ? "Service" : "ConfigMap", i, i % 2 ? "  labels:\n    odd: \"true\"\n" : "");
    }
    add(&b, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n");
    put_buf(fs, "app/all.yaml", &b);
    /* every odd one is deleted by a patch: each selected resource is found after the last */
    put(fs, "app/kustomization.yaml",
        "resources: [all.yaml]\n"
        "patches:\n"
        "- target: {labelSelector: odd=true}\n"
        "  patch: |\n"
        "    $patch: delete\n"
        "    apiVersion: v1\n"
        "    kind: ConfigMap\n"
        "    metadata:\n"
        "      name: any\n");
    json_object *out = build_ok(fs, "app", NULL);
    assert_int_equal(json_object_array_length(out), 1 + N / 2);
    assert_string_equal(kind_of(out, 0), "Namespace");
    size_t cms = 0;
    for (size_t i = 1; i < json_object_array_length(out); i++) {
        const char *k = kind_of(out, i);
        const char *n = name_of(out, i);
        assert_int_equal(strtol(n + 1, NULL, 10) % 2, 0);
        if (strcmp(k, "ConfigMap") == 0) {
            cms++;
            assert_int_equal(cms, i); /* ConfigMaps before Services */
        }
        if (i > 1 && strcmp(k, kind_of(out, i - 1)) == 0) {
            assert_true(strcmp(name_of(out, i - 1), n) < 0);
        }
    }
    assert_int_equal(cms, N / 2 - N / 6);
    json_object_put(out);

    /* a second resource with an id already accumulated is still refused */
    put(fs, "app/dup.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r4\n");
    put(fs, "app/kustomization.yaml", "resources: [all.yaml, dup.yaml]\n");
    assert_co_fail_with(CO_EINVALID, co_kustomize_build(&out, fs, "app", NULL));
    assert_contains(co_error_last(), "may not add resource with an already registered id: "
                                     "ConfigMap.v1.[noGrp]/r4.[noNs]");
    co_vfs_free(fs);
}

/* A replacement with a delimiter into a field of 400000 parts: the parts were joined with
 * strcat, which looks for the end of the string from its start each time. */
static void test_kustomize__replacement_with_delimiter_into_a_long_field(void **state)
{
    (void)state;
    enum { PARTS = 400000 };
    co_vfs *fs = co_vfs_new_mem();
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    add(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: src\ndata:\n  v: b\n---\n"
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dst\ndata:\n  list: \"");
    for (int i = 0; i < PARTS; i++) {
        add(&b, i ? ",a" : "a");
    }
    add(&b, "\"\n");
    put_buf(fs, "app/res.yaml", &b);
    put(fs, "app/kustomization.yaml",
        "resources: [res.yaml]\n"
        "replacements:\n"
        "- source: {kind: ConfigMap, name: src, fieldPath: data.v}\n"
        "  targets:\n"
        "  - select: {name: dst}\n"
        "    fieldPaths: [data.list]\n"
        "    options: {delimiter: \",\", index: 1}\n");
    json_object *out = build_ok(fs, "app", NULL);
    assert_string_equal(name_of(out, 0), "dst");
    json_object *dst = json_object_array_get_idx(out, 0);
    json_object *data = json_object_object_get(dst, "data");
    const char *list = json_object_get_string(json_object_object_get(data, "list"));
    assert_int_equal(strlen(list), 2 * PARTS - 1);
    assert_memory_equal(list, "a,b,a,a", 7);
    assert_string_equal(list + (2 * (size_t)PARTS - 5), ",a,a");
    json_object_put(out);
    co_vfs_free(fs);
}

/* Strategic merges of lists of thousands of elements (env by name, finalizers as a set): each
 * element of the patch was compared with each of the target. */
static void test_kustomize__patches_merge_long_lists(void **state)
{
    (void)state;
    enum { N = 20000 };
    co_vfs *fs = co_vfs_new_mem();
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    add(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  finalizers:\n");
    for (int i = 0; i < N; i++) {
        add(&b, "  - f%d\n", i);
    }
    add(&b, "spec:\n  template:\n    spec:\n      containers:\n      - name: c\n        env:\n");
    for (int i = 0; i < N; i++) {
        add(&b, "        - {name: e%d, value: old}\n", i);
    }
    put_buf(fs, "app/d.yaml", &b);
    /* the patch: the upper half of the target's and as many new ones */
    add(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  finalizers:\n");
    for (int i = N / 2; i < N + N / 2; i++) {
        add(&b, "  - f%d\n", i);
    }
    add(&b, "spec:\n  template:\n    spec:\n      containers:\n      - name: c\n        env:\n");
    for (int i = N / 2; i < N + N / 2; i++) {
        add(&b, "        - {name: e%d, value: new}\n", i);
    }
    put_buf(fs, "app/patch.yaml", &b);
    put(fs, "app/kustomization.yaml", "resources: [d.yaml]\npatches:\n- path: patch.yaml\n");
    json_object *out = build_ok(fs, "app", NULL);
    json_object *d = json_object_array_get_idx(out, 0);
    json_object *fin = json_object_object_get(json_object_object_get(d, "metadata"), "finalizers");
    assert_int_equal(json_object_array_length(fin), N + N / 2);
    /* the patch's values first, then the target's others */
    char want[32];
    snprintf(want, sizeof(want), "f%d", N / 2);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(fin, 0)), want);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(fin, N)), "f0");
    json_object *c = json_object_array_get_idx(
        json_object_object_get(
            json_object_object_get(
                json_object_object_get(json_object_object_get(d, "spec"), "template"), "spec"),
            "containers"),
        0);
    json_object *env = json_object_object_get(c, "env");
    assert_int_equal(json_object_array_length(env), N + N / 2);
    for (size_t i = 0; i < json_object_array_length(env); i++) {
        json_object *e = json_object_array_get_idx(env, i);
        int n =
            (int)strtol(json_object_get_string(json_object_object_get(e, "name")) + 1, NULL, 10);
        const char *v = json_object_get_string(json_object_object_get(e, "value"));
        /* patched ones first, in the patch's order, then the rest of the target's */
        assert_int_equal(n, i < (size_t)N ? N / 2 + (int)i : (int)i - N);
        assert_string_equal(v, n >= N / 2 ? "new" : "old");
    }
    json_object_put(out);
    co_vfs_free(fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vfs__join_rejects_escape),
        cmocka_unit_test(test_vfs__memory_tree_lists_and_reads),
        cmocka_unit_test(test_vfs__disk_does_not_follow_links),
        cmocka_unit_test(test_vfs__memory_tree_over_a_lower_tree),
        cmocka_unit_test(test_kustomize__builds_from_memory),
        cmocka_unit_test(test_kustomize__targeted_patch_without_resources),
        cmocka_unit_test(test_kustomize__load_restriction),
        cmocka_unit_test(test_kustomize__remote_and_plugins_unsupported),
        cmocka_unit_test(test_kustomize__errors_name_file_and_field),
        cmocka_unit_test(test_kustomize__cycle_detected),
        cmocka_unit_test(test_kustomize__hash_matches_kustomize),
        cmocka_unit_test(test_kustomize__hash_of_tricky_content_is_pinned),
        cmocka_unit_test(test_kustomize__hash_writes_numbers_as_go),
        cmocka_unit_test(test_kustomize__hash_writes_backspace_and_form_feed_as_go_1_22),
        cmocka_unit_test(test_kustomize__post_build_patch_without_target_applies_to_all),
        cmocka_unit_test(test_kustomize__post_build_rejects_malformed_entries),
        cmocka_unit_test(test_kustomize__thousands_of_resources_are_accumulated_and_sorted),
        cmocka_unit_test(test_kustomize__replacement_with_delimiter_into_a_long_field),
        cmocka_unit_test(test_kustomize__patches_merge_long_lists),
    };
    return cmocka_run_group_tests_name("kustomize", tests, NULL, NULL);
}
