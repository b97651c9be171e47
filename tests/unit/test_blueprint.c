/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for Blueprint and BlueprintVersion: the digest against Go's encoding/json, names
 * and labels, validation with field errors (paths, size cap, name and digest agreement,
 * immutability), parsing, and the generated CRDs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/api/blueprint.h"
#include "co/json/json.h"
#include "tests/support/test_support.h"

static json_object *parse(const char *text)
{
    json_object *o = NULL;
    assert_co_pass(co_json_parse(&o, text, strlen(text)));
    return o;
}

/* The rendered field errors of @p errs, one per line. */
static char *render(const co_field_errors *errs)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    for (size_t i = 0; i < errs->len; i++) {
        assert_int_equal(co_field_error_format(&b, &errs->items[i]), 0);
        assert_int_equal(co_buf_putc(&b, '\n'), 0);
    }
    return co_buf_take(&b, NULL);
}

/* Validates @p text as a Blueprint or BlueprintVersion (by its kind) and compares the errors. */
static void expect_errors(const char *text, const char *want)
{
    json_object *o = parse(text);
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    int rc = co_blueprint_type_of(o) == CO_BLUEPRINT_TYPE_VERSION
                 ? co_blueprint_version_validate(&errs, o, 0)
                 : co_blueprint_validate(&errs, o, 0);
    char *got = render(&errs);
    assert_string_equal(got, want);
    assert_int_equal(rc, want[0] ? CO_EINVALID : 0);
    free(got);
    co_field_errors_dispose(&errs);
    json_object_put(o);
}

#define SUBDOMAIN_MSG                                                                              \
    "must be a lowercase RFC 1123 subdomain: at most 253 characters, dot-separated labels of "     \
    "a-z, 0-9 and '-', each starting and ending with a letter or digit"

/* --- digest ---------------------------------------------------------------------------------- */

/*
 * Expected digests printed by Go 1.19's encoding/json (sha256 hex of json.Marshal of
 * []any{BlueprintSpec{Files: m}}, with `Files map[string]string json:"files,omitempty"`), for
 * the maps m written as JSON in the first column.
 */
static const struct {
    const char *files;
    const char *digest;
} go_vectors[] = {
    /* nil and empty maps: [{}] */
    {NULL, "e10808d43975dc400731053386849f864f297e6c4f7519c380f3dbaf7067a840"},
    {"{}", "e10808d43975dc400731053386849f864f297e6c4f7519c380f3dbaf7067a840"},
    {"{\"kustomization.yaml\":\"resources:\\n- configmap.yaml\\n\","
     "\"configmap.yaml\":\"apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: web\\ndata:\\n"
     "  a: \\\"1\\\"\\n\"}",
     "543fd3db37ca503cffe5060bcf3466d0dc6a54d997a701fc24a30954151c721f"},
    /* HTML escaping, U+2028/9, a control character, NUL, DEL, non-ASCII, byte order of keys
     * (upper case first), escaping in keys */
    {"{\"b/x.txt\":\"<a href=\\\"x\\\">&amp;</a>\\u2028\\u2029\\t\\u0000\\u007f \\u00e9\","
     "\"a.txt\":\"\",\"B.txt\":\"\\\\\",\"k<&>\\u2028\":\"v\"}",
     "284d89b615d2874268417e3db447af597fa98fadaa272c70eed78387b4f6b26c"},
};

static void test_blueprint__digest_matches_go(void **state)
{
    (void)state;
    for (size_t i = 0; i < CO_ARRAY_SIZE(go_vectors); i++) {
        json_object *files = go_vectors[i].files ? parse(go_vectors[i].files) : NULL;
        char got[CO_SHA256_HEX_LEN + 1];
        assert_co_pass(co_blueprint_digest(got, files));
        assert_string_equal(got, go_vectors[i].digest);
        json_object_put(files);
    }
}

static void test_blueprint__digest_refuses_non_string_values(void **state)
{
    (void)state;
    char got[CO_SHA256_HEX_LEN + 1] = "unchanged";
    json_object *files = parse("{\"a\":1}");
    assert_int_equal(co_blueprint_digest(got, files), CO_EINVALID);
    assert_string_equal(got, "unchanged");
    json_object_put(files);
    json_object *arr = parse("[]");
    assert_int_equal(co_blueprint_digest(got, arr), CO_EINVALID);
    json_object_put(arr);
    co_error_clear();
}

static void test_blueprint__names_and_labels(void **state)
{
    (void)state;
    char *rev = co_blueprint_revision(7);
    assert_string_equal(rev, "generation:7");
    free(rev);
    char *name = co_blueprint_version_name("web", go_vectors[0].digest);
    assert_string_equal(name,
                        "web--e10808d43975dc400731053386849f864f297e6c4f7519c380f3dbaf7067a840");
    free(name);
    char *label = co_blueprint_label_value("web");
    assert_string_equal(label, "web");
    free(label);
    char long_name[CO_BLUEPRINT_NAME_MAX + 1];
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    label = co_blueprint_label_value(long_name);
    assert_int_equal(strlen(label), 63);
    assert_true(strspn(label, "0123456789abcdef") == 63);
    char *again = co_blueprint_label_value(long_name);
    assert_string_equal(label, again);
    free(again);
    long_name[0] = 'b';
    again = co_blueprint_label_value(long_name);
    assert_string_not_equal(label, again);
    free(again);
    free(label);
    /* the longest Blueprint name still gives a version name within 253 characters */
    name = co_blueprint_version_name(long_name, go_vectors[0].digest);
    assert_int_equal(strlen(name), 253);
    free(name);
}

/* --- Blueprint validation -------------------------------------------------------------------- */

#define BP_HEAD                                                                                    \
    "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Blueprint\","                         \
    "\"metadata\":{\"namespace\":\"apps\",\"name\":\"web\"},"

static void test_blueprint__valid(void **state)
{
    (void)state;
    expect_errors(BP_HEAD "\"spec\":{}}", "");
    expect_errors(BP_HEAD "\"spec\":{\"files\":{\"kustomization.yaml\":\"resources: []\\n\","
                          "\"charts/web/templates/a.yaml\":\"\",\"..x/.y/z..\":\"\"}}}",
                  "");
}

static void test_blueprint__file_paths_must_be_relative_and_clean(void **state)
{
    (void)state;
    expect_errors(BP_HEAD "\"spec\":{\"files\":{\"/etc/passwd\":\"\",\"a//b\":\"\","
                          "\"../x\":\"\",\"a/./b\":\"\",\"a/..\":\"\",\"dir/\":\"\","
                          "\"a\\\\b\":\"\",\"\":\"\"}}}",
                  "spec.files[/etc/passwd]: Invalid value: \"/etc/passwd\": must be a relative "
                  "path\n"
                  "spec.files[a//b]: Invalid value: \"a//b\": must not contain an empty segment "
                  "(//)\n"
                  "spec.files[../x]: Invalid value: \"../x\": must not contain . or .. segments\n"
                  "spec.files[a/./b]: Invalid value: \"a/./b\": must not contain . or .. "
                  "segments\n"
                  "spec.files[a/..]: Invalid value: \"a/..\": must not contain . or .. segments\n"
                  "spec.files[dir/]: Invalid value: \"dir/\": must not end with /\n"
                  "spec.files[a\\b]: Invalid value: \"a\\\\b\": must not contain a backslash\n"
                  "spec.files[]: Invalid value: \"\": must not be empty\n");
}

/* A path with a NUL byte never reaches validation: the parser refuses such a key. */
static void test_blueprint__nul_in_path_refused_by_the_parser(void **state)
{
    (void)state;
    static const char text[] = BP_HEAD "\"spec\":{\"files\":{\"a\\u0000b\":\"\"}}}";
    json_object *o = NULL;
    assert_int_equal(co_json_parse(&o, text, strlen(text)), CO_EINVALID);
    assert_null(o);
    assert_non_null(strstr(co_error_last(), "NUL"));
    co_error_clear();
}

static void test_blueprint__long_segment_refused(void **state)
{
    (void)state;
    char seg[CO_BLUEPRINT_SEGMENT_MAX + 2];
    memset(seg, 'x', sizeof(seg) - 1);
    seg[sizeof(seg) - 1] = '\0';
    /* one byte too many in d/, exactly the limit in e/ */
    char *text =
        co_xasprintf(BP_HEAD "\"spec\":{\"files\":{\"d/%s\":\"\",\"e/%s\":\"\"}}}", seg, seg + 1);
    json_object *o = parse(text);
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    assert_int_equal(co_blueprint_validate(&errs, o, 0), CO_EINVALID);
    assert_int_equal(errs.len, 1);
    char *field = co_xasprintf("spec.files[d/%s]", seg);
    assert_string_equal(errs.items[0].field, field);
    assert_string_equal(errs.items[0].detail, "must not contain a segment longer than 255 bytes");
    free(field);
    co_field_errors_dispose(&errs);
    json_object_put(o);
    free(text);
}

/* A Blueprint whose files take @p total bytes, paths and contents together. */
static char *blueprint_of_size(size_t total)
{
    size_t content = total - strlen("a") - strlen("b");
    char *big = co_xmalloc(content + 1);
    memset(big, 'x', content);
    big[content] = '\0';
    char *text = co_xasprintf(BP_HEAD "\"spec\":{\"files\":{\"a\":\"%.*s\",\"b\":\"%s\"}}}",
                              (int)(content / 2), big, big + content / 2);
    free(big);
    return text;
}

static void test_blueprint__size_capped(void **state)
{
    (void)state;
    char *text = blueprint_of_size(CO_MAX_BLUEPRINT_FILES);
    expect_errors(text, "");
    free(text);
    text = blueprint_of_size(CO_MAX_BLUEPRINT_FILES + 1);
    char *want = co_xasprintf("spec.files: Too long: paths and contents may have at most %d "
                              "bytes together, found %d\n",
                              (int)CO_MAX_BLUEPRINT_FILES, (int)CO_MAX_BLUEPRINT_FILES + 1);
    expect_errors(text, want);
    free(want);
    free(text);
}

static void test_blueprint__schema_errors(void **state)
{
    (void)state;
    expect_errors("{\"apiVersion\":\"core.cs.sap.com/v1beta1\",\"kind\":\"Blueprint\","
                  "\"metadata\":{\"name\":\"Web\"},\"spec\":{\"files\":{\"a\":1},\"x\":2},"
                  "\"extra\":true}",
                  "apiVersion: Unsupported value: \"core.cs.sap.com/v1beta1\": supported values: "
                  "\"core.cs.sap.com/v1alpha1\"\n"
                  "spec.files.a: Invalid value: 1: must be of type string\n"
                  "spec.x: Forbidden: unknown field\n"
                  "extra: Forbidden: unknown field\n"
                  "metadata.name: Invalid value: \"Web\": " SUBDOMAIN_MSG "\n");
    expect_errors("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Blueprint\","
                  "\"metadata\":{}}",
                  "spec: Required value\nmetadata.name: Required value\n");
}

static void test_blueprint__name_length(void **state)
{
    (void)state;
    char name[CO_BLUEPRINT_NAME_MAX + 2];
    memset(name, 'a', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    char *text = co_xasprintf("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                              "\"Blueprint\",\"metadata\":{\"name\":\"%s\"},\"spec\":{}}",
                              name);
    expect_errors(text, "metadata.name: Too long: may not be more than 187 bytes\n");
    free(text);
    text = co_xasprintf("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":"
                        "\"Blueprint\",\"metadata\":{\"name\":\"%s\"},\"spec\":{}}",
                        name + 1);
    expect_errors(text, "");
    free(text);
}

/* --- BlueprintVersion validation ------------------------------------------------------------- */

#define D0     "e10808d43975dc400731053386849f864f297e6c4f7519c380f3dbaf7067a840"
#define D2     "543fd3db37ca503cffe5060bcf3466d0dc6a54d997a701fc24a30954151c721f"
#define V_HEAD "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"BlueprintVersion\","

static void test_blueprint__version_valid(void **state)
{
    (void)state;
    expect_errors(V_HEAD "\"metadata\":{\"namespace\":\"apps\",\"name\":\"web--" D0 "\"},"
                         "\"spec\":{\"blueprint\":\"web\",\"digest\":\"" D0 "\","
                         "\"revision\":\"generation:1\"}}",
                  "");
    expect_errors(V_HEAD "\"metadata\":{\"name\":\"web--" D2 "\"},\"spec\":{\"blueprint\":\"web\","
                         "\"digest\":\"" D2 "\",\"revision\":\"generation:12\",\"files\":{"
                         "\"configmap.yaml\":\"apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  "
                         "name: web\\ndata:\\n  a: \\\"1\\\"\\n\",\"kustomization.yaml\":"
                         "\"resources:\\n- configmap.yaml\\n\"}}}",
                  "");
}

static void test_blueprint__version_name_and_digest_must_agree(void **state)
{
    (void)state;
    /* the digest is that of other files */
    expect_errors(V_HEAD "\"metadata\":{\"name\":\"web--" D2 "\"},\"spec\":{\"blueprint\":\"web\","
                         "\"digest\":\"" D2 "\",\"revision\":\"generation:1\"}}",
                  "spec.digest: Invalid value: \"" D2 "\": must be the digest of spec.files, " D0
                  "\n");
    /* the name is not <blueprint>--<digest> */
    expect_errors(V_HEAD "\"metadata\":{\"name\":\"web-" D0 "\"},\"spec\":{\"blueprint\":\"web\","
                         "\"digest\":\"" D0 "\",\"revision\":\"generation:1\"}}",
                  "metadata.name: Invalid value: \"web-" D0 "\": must be web--" D0
                  " (<spec.blueprint>--<spec.digest>)\n");
    expect_errors(V_HEAD "\"metadata\":{\"name\":\"app--" D0 "\"},\"spec\":{\"blueprint\":\"web\","
                         "\"digest\":\"" D0 "\",\"revision\":\"generation:1\"}}",
                  "metadata.name: Invalid value: \"app--" D0 "\": must be web--" D0
                  " (<spec.blueprint>--<spec.digest>)\n");
}

static void test_blueprint__version_fields(void **state)
{
    (void)state;
    expect_errors(V_HEAD "\"metadata\":{\"name\":\"x\"},\"spec\":{\"blueprint\":\"Web\","
                         "\"digest\":\"" D0 "0\",\"revision\":\"generation:01\","
                         "\"files\":{\"/a\":\"\"}}}",
                  "spec.blueprint: Invalid value: \"Web\": " SUBDOMAIN_MSG "\n"
                  "spec.revision: Invalid value: \"generation:01\": must be generation:<n> with n "
                  "a positive integer\n"
                  "spec.digest: Invalid value: \"" D0 "0\": must be 64 lowercase hexadecimal "
                  "digits (sha256)\n"
                  "spec.files[/a]: Invalid value: \"/a\": must be a relative path\n");
    expect_errors(V_HEAD "\"metadata\":{\"name\":\"x\"},\"spec\":{}}",
                  "spec.blueprint: Required value\nspec.digest: Required value\n"
                  "spec.revision: Required value\n");
}

static void test_blueprint__version_spec_is_immutable(void **state)
{
    (void)state;
    json_object *old = parse(V_HEAD "\"metadata\":{\"name\":\"web--" D0 "\"},"
                                    "\"spec\":{\"blueprint\":\"web\",\"digest\":\"" D0 "\","
                                    "\"revision\":\"generation:1\"}}");
    json_object *same = parse(V_HEAD "\"metadata\":{\"name\":\"web--" D0 "\",\"labels\":{"
                                     "\"a\":\"b\"}},\"spec\":{\"revision\":\"generation:1\","
                                     "\"blueprint\":\"web\",\"digest\":\"" D0 "\"}}");
    json_object *changed = parse(V_HEAD "\"metadata\":{\"name\":\"web--" D0 "\"},"
                                        "\"spec\":{\"blueprint\":\"web\",\"digest\":\"" D0 "\","
                                        "\"revision\":\"generation:2\",\"files\":{}}}");
    json_object *other = parse(V_HEAD "\"metadata\":{\"name\":\"web--" D0 "\"},"
                                      "\"spec\":{\"blueprint\":\"web\",\"digest\":\"" D0 "\","
                                      "\"revision\":\"generation:1\",\"note\":\"x\"}}");
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    assert_int_equal(co_blueprint_version_validate_update(&errs, same, old), 0);
    assert_true(co_field_errors_empty(&errs));
    assert_int_equal(co_blueprint_version_validate_update(&errs, changed, old), CO_EINVALID);
    char *got = render(&errs);
    assert_string_equal(got, "spec.revision: Forbidden: field is immutable: a BlueprintVersion "
                             "never changes\n"
                             "spec.files: Forbidden: field is immutable: a BlueprintVersion "
                             "never changes\n");
    free(got);
    co_field_errors_dispose(&errs);
    assert_int_equal(co_blueprint_version_validate_update(&errs, other, old), CO_EINVALID);
    got = render(&errs);
    assert_string_equal(got,
                        "spec: Forbidden: field is immutable: a BlueprintVersion never changes\n");
    free(got);
    co_field_errors_dispose(&errs);
    json_object_put(old);
    json_object_put(same);
    json_object_put(changed);
    json_object_put(other);
}

/* --- parsing --------------------------------------------------------------------------------- */

static void test_blueprint__parse(void **state)
{
    (void)state;
    json_object *o = parse("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Blueprint\","
                           "\"metadata\":{\"namespace\":\"apps\",\"name\":\"web\","
                           "\"generation\":3},\"spec\":{\"files\":{\"kustomization.yaml\":"
                           "\"resources:\\n- configmap.yaml\\n\",\"configmap.yaml\":"
                           "\"apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: web\\n"
                           "data:\\n  a: \\\"1\\\"\\n\"}},\"status\":{\"x\":1}}");
    co_blueprint *b = NULL;
    assert_co_pass(co_blueprint_parse(&b, o));
    assert_string_equal(b->ns, "apps");
    assert_string_equal(b->name, "web");
    assert_int_equal(b->generation, 3);
    assert_string_equal(b->revision, "generation:3");
    assert_string_equal(b->digest, D2);
    assert_int_equal(b->nfiles, 2);
    assert_string_equal(b->files[0].path, "configmap.yaml");
    assert_string_equal(b->files[1].path, "kustomization.yaml");
    assert_int_equal(b->files[1].len, strlen("resources:\n- configmap.yaml\n"));
    co_blueprint_free(b);
    co_blueprint_free(NULL);
    json_object_put(o);

    o = parse(BP_HEAD "\"spec\":{\"files\":{\"../x\":\"\"}}}");
    b = NULL;
    assert_int_equal(co_blueprint_parse(&b, o), CO_EINVALID);
    assert_null(b);
    assert_non_null(strstr(co_error_last(), "spec.files[../x]"));
    co_error_clear();
    json_object_put(o);
}

static void test_blueprint__version_parse(void **state)
{
    (void)state;
    json_object *o = parse(V_HEAD "\"metadata\":{\"namespace\":\"apps\",\"name\":\"web--" D0
                                  "\"},\"spec\":{\"blueprint\":\"web\",\"digest\":\"" D0 "\","
                                  "\"revision\":\"generation:1\",\"files\":{}}}");
    co_blueprint_version *v = NULL;
    assert_co_pass(co_blueprint_version_parse(&v, o));
    assert_string_equal(v->name, "web--" D0);
    assert_string_equal(v->blueprint, "web");
    assert_string_equal(v->digest, D0);
    assert_string_equal(v->revision, "generation:1");
    assert_int_equal(v->nfiles, 0);
    co_blueprint_version_free(v);
    co_blueprint_version_free(NULL);
    json_object_put(o);

    o = parse(V_HEAD "\"metadata\":{\"name\":\"x\"},\"spec\":{\"blueprint\":\"web\","
                     "\"digest\":\"" D0 "\",\"revision\":\"generation:1\"}}");
    v = NULL;
    assert_int_equal(co_blueprint_version_parse(&v, o), CO_EINVALID);
    assert_null(v);
    assert_non_null(strstr(co_error_last(), "metadata.name"));
    co_error_clear();
    json_object_put(o);
}

static void test_blueprint__type_of(void **state)
{
    (void)state;
    json_object *o = parse(BP_HEAD "\"spec\":{}}");
    assert_int_equal(co_blueprint_type_of(o), CO_BLUEPRINT_TYPE_BLUEPRINT);
    json_object_put(o);
    o = parse(V_HEAD "\"spec\":{}}");
    assert_int_equal(co_blueprint_type_of(o), CO_BLUEPRINT_TYPE_VERSION);
    json_object_put(o);
    o = parse("{\"apiVersion\":\"core.cs.sap.com/v1beta1\",\"kind\":\"Blueprint\"}");
    assert_int_equal(co_blueprint_type_of(o), CO_BLUEPRINT_TYPE_UNKNOWN);
    json_object_put(o);
    assert_int_equal(co_blueprint_type_of(NULL), CO_BLUEPRINT_TYPE_UNKNOWN);
}

/* --- the CRDs -------------------------------------------------------------------------------- */

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

static void check_committed(co_blueprint_type type, const char *file)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    assert_co_pass(co_blueprint_crd_yaml(&b, type));
    char *path = crd_file(file);
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
}

static void test_blueprint__committed_crds_are_generated(void **state)
{
    (void)state;
    check_committed(CO_BLUEPRINT_TYPE_BLUEPRINT, "core.cs.sap.com_blueprints.yaml");
    check_committed(CO_BLUEPRINT_TYPE_VERSION, "core.cs.sap.com_blueprintversions.yaml");
}

static void test_blueprint__crd_shape(void **state)
{
    (void)state;
    json_object *crd = NULL;
    assert_co_pass(co_blueprint_crd(&crd, CO_BLUEPRINT_TYPE_VERSION));
    json_object *spec = co_json_get(crd, "spec", NULL);
    assert_string_equal(co_json_str(spec, "scope", NULL), "Namespaced");
    assert_string_equal(co_json_str(spec, "names", "plural", NULL), "blueprintversions");
    json_object *v = json_object_array_get_idx(co_json_get(spec, "versions", NULL), 0);
    assert_null(co_json_get(v, "subresources", NULL));
    json_object *vspec = co_json_get(v, "schema", "openAPIV3Schema", "properties", "spec", NULL);
    json_object *req = co_json_get(vspec, "required", NULL);
    assert_int_equal(json_object_array_length(req), 3);
    assert_string_equal(
        co_json_str(vspec, "properties", "files", "additionalProperties", "type", NULL), "string");
    json_object_put(crd);
    assert_co_pass(co_blueprint_crd(&crd, CO_BLUEPRINT_TYPE_BLUEPRINT));
    assert_string_equal(co_json_str(crd, "metadata", "name", NULL), CO_BLUEPRINT_CRD_NAME);
    json_object_put(crd);
    assert_int_equal(co_blueprint_crd(&crd, CO_BLUEPRINT_TYPE_UNKNOWN), CO_EINVALID);
    co_error_clear();
}

static co_blueprint_file mkfile(const char *path, const char *content, size_t len)
{
    co_blueprint_file f = {co_xstrdup(path), co_xmemdup(content, len + 1), len};
    return f;
}

static void free_files(co_blueprint_file *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(f[i].path);
        free(f[i].content);
    }
}

/* A tree is written as its files say; nested directories are made. */
static void test_blueprint__write_files_writes_the_tree(void **state)
{
    (void)state;
    char *tmp = co_test_tmpdir();
    char *dir = co_xasprintf("%s/tree", tmp);
    co_blueprint_file files[] = {
        mkfile("a/b/c.yaml", "kind: A\n", 8),
        mkfile("a/d.yaml", "x\0y", 3),
        mkfile("top.yaml", "", 0),
    };
    uint64_t bytes = 0;
    assert_co_pass(co_blueprint_write_files(dir, files, 3, &bytes));
    assert_int_equal(bytes, 11 + 3 * CO_BLUEPRINT_ENTRY_OVERHEAD);
    char *p = co_xasprintf("%s/a/b/c.yaml", dir);
    size_t len = 0;
    char *text = co_test_read_file(p, &len);
    assert_non_null(text);
    assert_int_equal(len, 8);
    assert_memory_equal(text, "kind: A\n", 8);
    free(text);
    free(p);
    p = co_xasprintf("%s/a/d.yaml", dir);
    text = co_test_read_file(p, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(text, "x\0y", 3);
    free(text);
    free(p);
    /* the directory must be new */
    assert_int_equal(co_blueprint_write_files(dir, files, 1, NULL), CO_ERROR);
    co_error_clear();
    free_files(files, 3);
    co_test_rmtree(tmp);
    free(dir);
    free(tmp);
}

/* A hostile path is refused before anything is written, and nothing lands outside the tree. */
static void test_blueprint__write_files_refuses_hostile_paths(void **state)
{
    (void)state;
    const char *bad[] = {"../escape.yaml",
                         "a/../../escape.yaml",
                         "/etc/escape.yaml",
                         "a/./b.yaml",
                         "a//b.yaml",
                         "a/",
                         "",
                         "a\\..\\b.yaml"};
    char *tmp = co_test_tmpdir();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *dir = co_xasprintf("%s/t%zu", tmp, i);
        co_blueprint_file files[] = {mkfile("ok.yaml", "x", 1), mkfile(bad[i], "y", 1)};
        assert_int_equal(co_blueprint_write_files(dir, files, 2, NULL), CO_EINVALID);
        free_files(files, 2);
        assert_contains(co_error_last(), "file path");
        co_error_clear();
        char *ok = co_xasprintf("%s/ok.yaml", dir);
        assert_int_equal(access(ok, F_OK), -1);
        free(ok);
        free(dir);
    }
    char *escaped = co_xasprintf("%s/escape.yaml", tmp);
    assert_int_equal(access(escaped, F_OK), -1);
    free(escaped);
    /* a file where a directory is needed */
    char *dir = co_xasprintf("%s/clash", tmp);
    co_blueprint_file clash[] = {mkfile("a", "x", 1), mkfile("a/b.yaml", "y", 1)};
    assert_true(co_blueprint_write_files(dir, clash, 2, NULL) < 0);
    free_files(clash, 2);
    co_error_clear();
    free(dir);
    co_test_rmtree(tmp);
    free(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blueprint__digest_matches_go),
        cmocka_unit_test(test_blueprint__digest_refuses_non_string_values),
        cmocka_unit_test(test_blueprint__names_and_labels),
        cmocka_unit_test(test_blueprint__valid),
        cmocka_unit_test(test_blueprint__file_paths_must_be_relative_and_clean),
        cmocka_unit_test(test_blueprint__nul_in_path_refused_by_the_parser),
        cmocka_unit_test(test_blueprint__long_segment_refused),
        cmocka_unit_test(test_blueprint__size_capped),
        cmocka_unit_test(test_blueprint__schema_errors),
        cmocka_unit_test(test_blueprint__name_length),
        cmocka_unit_test(test_blueprint__version_valid),
        cmocka_unit_test(test_blueprint__version_name_and_digest_must_agree),
        cmocka_unit_test(test_blueprint__version_fields),
        cmocka_unit_test(test_blueprint__version_spec_is_immutable),
        cmocka_unit_test(test_blueprint__parse),
        cmocka_unit_test(test_blueprint__version_parse),
        cmocka_unit_test(test_blueprint__type_of),
        cmocka_unit_test(test_blueprint__committed_crds_are_generated),
        cmocka_unit_test(test_blueprint__crd_shape),
        cmocka_unit_test(test_blueprint__write_files_writes_the_tree),
        cmocka_unit_test(test_blueprint__write_files_refuses_hostile_paths),
    };
    return cmocka_run_group_tests_name("blueprint", tests, NULL, NULL);
}
