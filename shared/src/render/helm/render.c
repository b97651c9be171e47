/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rendering, as Helm's engine and install action do it: every template of every enabled chart
 * is parsed into one template set in Helm's order (deeper paths first, so that a parent's
 * definitions win), each non-partial template is executed with its chart's builtins, the
 * output is split into manifests, sorted into plain manifests and hooks, and ordered by kind.
 *
 * The builtins must have Helm's Go types, because templates call their methods
 * (.Files.Get, .Capabilities.APIVersions.Has) and print them (.Capabilities.KubeVersion prints
 * as its Version). That needs the template engine's value model, so this file uses the
 * engine's library-internal interface (template/template_lib.h): it builds typed values, registers
 * Helm's engine functions (include, tpl, required, fail, lookup) and runs nested executions.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "co/util/budget.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/render/helm.h"
#include "co/json/json.h"
#include "co/util/semver.h"
#include "co/render/template.h"
#include "co/json/yaml.h"
#include "helm_int.h"
#include "shared/src/render/template/template_lib.h"

#define WARN_START "HELM_ERR_START"
#define WARN_END   "HELM_ERR_END"

/* ------------------------------------------------------------------------------------------ */
/* Go types of the builtins                                                                   */
/* ------------------------------------------------------------------------------------------ */

static const tv_type T_VALUES = {.kind = TK_MAP, .name = "chartutil.Values", .elem = &T_IFACE};

static const tv_field maint_fields[] = {
    {"Name", "name", &T_STRING, TV_FIELD_OMITEMPTY},
    {"Email", "email", &T_STRING, TV_FIELD_OMITEMPTY},
    {"URL", "url", &T_STRING, TV_FIELD_OMITEMPTY},
};
static const tv_type T_MAINT = {.kind = TK_STRUCT,
                                .name = "chart.Maintainer",
                                .fields = maint_fields,
                                .nfields = 3};
static const tv_type T_MAINT_PTR = {.kind = TK_PTR, .name = "*chart.Maintainer", .elem = &T_MAINT};
static const tv_type T_MAINT_LIST = {.kind = TK_SLICE,
                                     .name = "[]*chart.Maintainer",
                                     .elem = &T_MAINT_PTR};

static const tv_field dep_fields[] = {
    {"Name", "name", &T_STRING, 0},
    {"Version", "version", &T_STRING, TV_FIELD_OMITEMPTY},
    {"Repository", "repository", &T_STRING, 0},
    {"Condition", "condition", &T_STRING, TV_FIELD_OMITEMPTY},
    {"Tags", "tags", &T_LIST_STRING, TV_FIELD_OMITEMPTY},
    {"Enabled", "enabled", &T_BOOL, TV_FIELD_OMITEMPTY},
    {"ImportValues", "import-values", &T_LIST_ANY, TV_FIELD_OMITEMPTY},
    {"Alias", "alias", &T_STRING, TV_FIELD_OMITEMPTY},
};
static const tv_type T_DEP = {.kind = TK_STRUCT,
                              .name = "chart.Dependency",
                              .fields = dep_fields,
                              .nfields = 8};
static const tv_type T_DEP_PTR = {.kind = TK_PTR, .name = "*chart.Dependency", .elem = &T_DEP};
static const tv_type T_DEP_LIST = {.kind = TK_SLICE,
                                   .name = "[]*chart.Dependency",
                                   .elem = &T_DEP_PTR};

static const tv_field meta_fields[] = {
    {"Name", "name", &T_STRING, TV_FIELD_OMITEMPTY},
    {"Home", "home", &T_STRING, TV_FIELD_OMITEMPTY},
    {"Sources", "sources", &T_LIST_STRING, TV_FIELD_OMITEMPTY},
    {"Version", "version", &T_STRING, TV_FIELD_OMITEMPTY},
    {"Description", "description", &T_STRING, TV_FIELD_OMITEMPTY},
    {"Keywords", "keywords", &T_LIST_STRING, TV_FIELD_OMITEMPTY},
    {"Maintainers", "maintainers", &T_MAINT_LIST, TV_FIELD_OMITEMPTY},
    {"Icon", "icon", &T_STRING, TV_FIELD_OMITEMPTY},
    {"APIVersion", "apiVersion", &T_STRING, TV_FIELD_OMITEMPTY},
    {"Condition", "condition", &T_STRING, TV_FIELD_OMITEMPTY},
    {"Tags", "tags", &T_STRING, TV_FIELD_OMITEMPTY},
    {"AppVersion", "appVersion", &T_STRING, TV_FIELD_OMITEMPTY},
    {"Deprecated", "deprecated", &T_BOOL, TV_FIELD_OMITEMPTY},
    {"Annotations", "annotations", &T_MAP_STRING, TV_FIELD_OMITEMPTY},
    {"KubeVersion", "kubeVersion", &T_STRING, TV_FIELD_OMITEMPTY},
    {"Dependencies", "dependencies", &T_DEP_LIST, TV_FIELD_OMITEMPTY},
    {"Type", "type", &T_STRING, TV_FIELD_OMITEMPTY},
};
static const tv_type T_META = {.kind = TK_STRUCT,
                               .name = "chart.Metadata",
                               .fields = meta_fields,
                               .nfields = 17};

/* .Chart is Go's struct { chart.Metadata; IsRoot bool }. */
static const tv_field chart_fields[] = {
    {"Metadata", "Metadata", &T_META, TV_FIELD_EMBEDDED},
    {"IsRoot", "IsRoot", &T_BOOL, 0},
};
static const tv_type T_CHART = {.kind = TK_STRUCT,
                                .name = "struct { chart.Metadata; IsRoot bool }",
                                .fields = chart_fields,
                                .nfields = 2};

static int kv_string(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)x;
    (void)n;
    *ret = args[0].u.o->fields[0];
    return 0;
}

static const tpl_func kv_methods[] = {
    TPL_FUNC("GitVersion", kv_string, NULL, 0, false, false, &T_STRING),
    TPL_FUNC("String", kv_string, NULL, 0, false, false, &T_STRING),
};
static const tv_field kv_fields[] = {
    {"Version", "Version", &T_STRING, 0},
    {"Major", "Major", &T_STRING, 0},
    {"Minor", "Minor", &T_STRING, 0},
};
static const tv_type T_KUBEVERSION = {.kind = TK_STRUCT,
                                      .name = "chartutil.KubeVersion",
                                      .fields = kv_fields,
                                      .nfields = 3,
                                      .methods = kv_methods,
                                      .nmethods = 2};

static const tv_type *const P_STRING[] = {&T_STRING, &T_IFACE};

static int vs_has(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)x;
    (void)n;
    const tv_list *l = args[0].u.l;
    const tv_str *want = args[1].u.s;
    *ret = tv_bool(false);
    for (size_t i = 0; l && i < l->n; i++) {
        const tv_str *s = l->items[i].u.s;
        if (s->len == want->len && memcmp(s->s, want->s, s->len) == 0) {
            *ret = tv_bool(true);
            break;
        }
    }
    return 0;
}

static const tpl_func vs_methods[] = {
    TPL_FUNC("Has", vs_has, P_STRING, 1, false, false, &T_BOOL),
};
static const tv_type T_VERSIONSET = {.kind = TK_SLICE,
                                     .name = "chartutil.VersionSet",
                                     .elem = &T_STRING,
                                     .methods = vs_methods,
                                     .nmethods = 1};

static const tv_field bi_fields[] = {
    {"Version", "version", &T_STRING, TV_FIELD_OMITEMPTY},
    {"GitCommit", "git_commit", &T_STRING, TV_FIELD_OMITEMPTY},
    {"GitTreeState", "git_tree_state", &T_STRING, TV_FIELD_OMITEMPTY},
    {"GoVersion", "go_version", &T_STRING, TV_FIELD_OMITEMPTY},
};
static const tv_type T_BUILDINFO = {.kind = TK_STRUCT,
                                    .name = "version.BuildInfo",
                                    .fields = bi_fields,
                                    .nfields = 4};

static const tv_field caps_fields[] = {
    {"KubeVersion", "KubeVersion", &T_KUBEVERSION, 0},
    {"APIVersions", "APIVersions", &T_VERSIONSET, 0},
    {"HelmVersion", "HelmVersion", &T_BUILDINFO, 0},
};
static const tv_type T_CAPS = {.kind = TK_STRUCT,
                               .name = "chartutil.Capabilities",
                               .fields = caps_fields,
                               .nfields = 3};
static const tv_type T_CAPS_PTR = {.kind = TK_PTR,
                                   .name = "*chartutil.Capabilities",
                                   .elem = &T_CAPS};

/* .Files: Go's engine.files, a map[string][]byte with methods. */
static const tv_type T_FILES;

static tv files_get_bytes(const tv *files, const tv_str *name)
{
    tv *v = files->u.m ? tv_map_get(files->u.m, name->s, name->len) : NULL;
    return v ? *v : (tv){&T_BYTES, {.s = &tv_empty_str}};
}

static int files_GetBytes(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)x;
    (void)n;
    *ret = files_get_bytes(&args[0], args[1].u.s);
    return 0;
}

static int files_Get(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    tv b = files_get_bytes(&args[0], args[1].u.s);
    *ret = tv_string(x, b.u.s->s, b.u.s->len);
    return 0;
}

static int files_Glob(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    tv out = tv_map_new(x, &T_FILES, 8);
    tv_map *m = args[0].u.m;
    for (size_t i = 0; m && i < m->n; i++) {
        bool ok;
        if (co_helm__glob_match(args[1].u.s->s, m->keys[i]->s, &ok)) {
            tv_map_set(x, out.u.m, m->keys[i], m->vals[i]);
        }
    }
    *ret = out;
    return 0;
}

/* toYAML of a map[string]string, through the engine's own toYaml when it has one. */
static int files_yaml(tpl_x *x, tv *ret, tv *args, bool secrets)
{
    tv_map *m = args[0].u.m;
    if (!m) {
        *ret = tv_cstring(x, "");
        return 0;
    }
    tv data = tv_map_new(x, &T_MAP_STRING, m->n);
    for (size_t i = 0; i < m->n; i++) {
        const char *k = m->keys[i]->s;
        const char *slash = strrchr(k, '/');
        const char *base = slash ? slash + 1 : k;
        const tv_str *content = m->vals[i].u.s;
        tv val;
        if (secrets) {
            char *enc = co_base64_encode(content->s, content->len, CO_BASE64_STD);
            val = tv_cstring(x, enc);
            free(enc);
        } else {
            val = tv_string(x, content->s, content->len);
        }
        tv_map_set(x, data.u.m, tv_str_new(x, base, strlen(base)), val);
    }
    const tpl_func *to_yaml = tpl_funcs_lookup(x->set->funcs, "toYaml", 6);
    if (to_yaml) {
        return tpl_call(x, to_yaml, ret, &data, 1);
    }
    /* Without the engine's toYaml: the shared YAML writer, keys sorted as Go sorts them. */
    struct json_object *obj = json_object_new_object();
    for (size_t i = 0; i < data.u.m->n; i++) {
        const tv_str *v = data.u.m->vals[i].u.s;
        json_object_object_add(obj, data.u.m->keys[i]->s,
                               json_object_new_string_len(v->s, (int)v->len));
    }
    co_buf y = CO_BUF_INIT(tpl_out_cap());
    int rc = co_yaml_emit(&y, obj, CO_YAML_SORTED);
    json_object_put(obj);
    if (rc < 0) {
        co_buf_dispose(&y);
        return tpl_fail(x, "%s", co_error_last());
    }
    size_t len = y.len;
    while (len > 0 && co_buf_cstr(&y)[len - 1] == '\n') {
        len--;
    }
    *ret = tv_string(x, co_buf_cstr(&y), len);
    co_buf_dispose(&y);
    return 0;
}

static int files_AsConfig(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    return files_yaml(x, ret, args, false);
}

static int files_AsSecrets(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    return files_yaml(x, ret, args, true);
}

static int files_Lines(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    tv *v = args[0].u.m ? tv_map_get(args[0].u.m, args[1].u.s->s, args[1].u.s->len) : NULL;
    if (!v || !v->u.s || v->u.s->len == 0) {
        *ret = tv_list_new(x, &T_LIST_STRING, 0);
        return 0;
    }
    const char *s = v->u.s->s;
    size_t len = v->u.s->len;
    if (s[len - 1] == '\n') {
        len--;
    }
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) {
        lines += s[i] == '\n';
    }
    tv out = tv_list_new(x, &T_LIST_STRING, lines);
    size_t k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '\n') {
            out.u.l->items[k++] = tv_string(x, s + start, i - start);
            start = i + 1;
        }
    }
    *ret = out;
    return 0;
}

static const tpl_func files_methods[] = {
    TPL_FUNC("AsConfig", files_AsConfig, NULL, 0, false, false, &T_STRING),
    TPL_FUNC("AsSecrets", files_AsSecrets, NULL, 0, false, false, &T_STRING),
    TPL_FUNC("Get", files_Get, P_STRING, 1, false, false, &T_STRING),
    TPL_FUNC("GetBytes", files_GetBytes, P_STRING, 1, false, false, &T_BYTES),
    TPL_FUNC("Glob", files_Glob, P_STRING, 1, false, false, &T_FILES),
    TPL_FUNC("Lines", files_Lines, P_STRING, 1, false, false, &T_LIST_STRING),
};
static const tv_type T_FILES = {.kind = TK_MAP,
                                .name = "engine.files",
                                .elem = &T_BYTES,
                                .methods = files_methods,
                                .nmethods = 6};

/* ------------------------------------------------------------------------------------------ */
/* Helm's engine functions                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Per-render state reachable from the functions (session env ctx). */
typedef struct render_ctx {
    struct {
        char *name;
        int count;
    } * included;
    size_t nincluded;
    const co_helm_options *opts; /* the lookup hooks */
} render_ctx;

static int *include_counter(render_ctx *rc, const char *name)
{
    for (size_t i = 0; i < rc->nincluded; i++) {
        if (strcmp(rc->included[i].name, name) == 0) {
            return &rc->included[i].count;
        }
    }
    rc->included = co_xreallocarray(rc->included, rc->nincluded + 1, sizeof(*rc->included));
    rc->included[rc->nincluded].name = co_xstrdup(name);
    rc->included[rc->nincluded].count = 0;
    return &rc->included[rc->nincluded++].count;
}

static const tv_type *const P_STRING_ANY[] = {&T_STRING, &T_IFACE};

static int fn_include(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    render_ctx *rc = x->sess->env.ctx;
    const char *name = args[0].u.s->s;
    int *count = include_counter(rc, name);
    if (*count > 1000) {
        return tpl_fail(x,
                        "rendering template has a nested reference name: %s: unable to execute "
                        "template",
                        name);
    }
    (*count)++;
    co_buf out = CO_BUF_INIT(tpl_out_cap());
    int r = tpl_execute(x, x->set, name, args[1], &out);
    count = include_counter(rc, name);
    (*count)--;
    if (r < 0) {
        co_buf_dispose(&out);
        return -1;
    }
    *ret = tv_string_take(x, &out);
    return 0;
}

static int fn_tpl(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    const tv_str *text = args[0].u.s;
    co_template_set *child = co_xcalloc(1, sizeof(*child));
    child->funcs = x->set->funcs;
    child->opts = x->set->opts;
    child->name = "gotpl";
    child->opts.name = "gotpl";
    child->trees = co_xreallocarray(NULL, x->set->ntrees + 1, sizeof(void *));
    memcpy(child->trees, x->set->trees, x->set->ntrees * sizeof(void *));
    child->ntrees = x->set->ntrees;
    child->cap = x->set->ntrees + 1;
    int r = tpl_parse(child, "gotpl", text->s, text->len);
    co_buf q = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    (void)tpl_quote(&q, text->s, text->len, false);
    if (r < 0) {
        r = tpl_fail_code(x, tpl_error_code(co_error_last_code()), "cannot parse template %s: %s",
                          co_buf_cstr(&q), co_error_last());
        goto done;
    }
    co_buf out = CO_BUF_INIT(tpl_out_cap());
    r = tpl_execute(x, child, "gotpl", args[1], &out);
    if (r < 0) {
        char *msg = co_buf_take(x->err, NULL);
        int code = x->code;
        r = tpl_fail_code(x, code, "error during tpl function execution for %s: %s",
                          co_buf_cstr(&q), msg);
        free(msg);
        co_buf_dispose(&out);
        goto done;
    }
    size_t len = 0;
    char *s = co_buf_take(&out, &len);
    len = co_template_strip_no_value(s, len);
    *ret = tv_string(x, s, len);
    free(s);
done:
    co_buf_dispose(&q);
    tpl_arena_dispose(&child->arena);
    free(child->trees);
    free(child);
    return r;
}

static int fn_required(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)n;
    const tv *val = &args[1];
    if (tv_is_nil(val) && tv_kind(val) != TK_MAP && tv_kind(val) != TK_SLICE &&
        tv_kind(val) != TK_PTR) {
        return tpl_fail(x, WARN_START "%s" WARN_END, args[0].u.s->s);
    }
    if (tv_kind(val) == TK_STRING && val->u.s->len == 0) {
        return tpl_fail(x, WARN_START "%s" WARN_END, args[0].u.s->s);
    }
    *ret = *val;
    return 0;
}

static int fn_fail(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)ret;
    (void)n;
    return tpl_fail(x, WARN_START "%s" WARN_END, args[0].u.s->s);
}

/* ---- the lookup family (docs/behaviour.md, "Lookups"), through the caller's hooks --------- */

typedef struct lookup_kind {
    const char *fn;
    co_kzgen_cluster_kind cluster;
    bool must;
    bool list;
} lookup_kind;

static int lookup_arg(const char **out, struct json_object *const *args, size_t i, const char *fn)
{
    if (!args[i] || !json_object_is_type(args[i], json_type_string)) {
        return co_error_set(CO_EINVALID, "%s: argument %zu must be a string, not %s", fn, i + 1,
                            args[i] ? co_json_type_name(args[i]) : "nil");
    }
    *out = json_object_get_string(args[i]);
    return 0;
}

static int do_lookup(const render_ctx *rc,
                     lookup_kind kind,
                     struct json_object **out,
                     struct json_object *const *args,
                     size_t nargs)
{
    const char *s[5] = {NULL, NULL, NULL, NULL, NULL};
    for (size_t i = 0; i < nargs && i < 5; i++) {
        int r = lookup_arg(&s[i], args, i, kind.fn);
        if (r < 0) {
            return r;
        }
    }
    const co_helm_options *o = rc->opts;
    const char *kubeconfig = kind.cluster == CO_KZGEN_KUBECONFIG ? s[4] : NULL;
    /* Helm's lookup lists when the name is empty */
    bool list = kind.list || (!kind.must && kind.cluster == CO_KZGEN_TARGET && s[3][0] == '\0');
    bool hooked = list ? o->lookup_list != NULL : o->lookup != NULL;
    if (!hooked) {
        if (kind.cluster == CO_KZGEN_TARGET && !kind.must && !kind.list) {
            *out = json_object_new_object(); /* helm template's answer */
            return 0;
        }
        return co_error_set(CO_EUNSUPPORTED, "%s: no cluster access", kind.fn);
    }
    struct json_object *res = NULL;
    int r = list
                ? o->lookup_list(o->cluster_ctx, &res, kind.cluster, kubeconfig, s[0], s[1], s[2],
                                 kind.list ? s[3] : "")
                : o->lookup(o->cluster_ctx, &res, kind.cluster, kubeconfig, s[0], s[1], s[2], s[3]);
    if (r < 0) {
        return co_error_wrap("%s", kind.fn);
    }
    if (!res) {
        if (kind.must) {
            return co_error_set(CO_ENOTFOUND, "%s: %s %s %s%s%s not found", kind.fn, s[0], s[1],
                                s[2][0] ? s[2] : "", s[2][0] ? "/" : "", s[3]);
        }
        res = json_object_new_object();
    }
    *out = res;
    return 0;
}

#define HELM_LOOKUP(fname, gname, cl, must_, list_)                                                \
    static int fname(void *ctx, struct json_object **out, struct json_object *const *args,         \
                     size_t nargs)                                                                 \
    {                                                                                              \
        lookup_kind kind = {gname, cl, must_, list_};                                              \
        return do_lookup(ctx, kind, out, args, nargs);                                             \
    }

HELM_LOOKUP(fn_lookup, "lookup", CO_KZGEN_TARGET, false, false)
HELM_LOOKUP(fn_must_lookup, "mustLookup", CO_KZGEN_TARGET, true, false)
HELM_LOOKUP(fn_lookup_list, "lookupList", CO_KZGEN_TARGET, false, true)
HELM_LOOKUP(fn_local_lookup, "localLookup", CO_KZGEN_LOCAL, false, false)
HELM_LOOKUP(fn_must_local_lookup, "mustLocalLookup", CO_KZGEN_LOCAL, true, false)
HELM_LOOKUP(fn_local_lookup_list, "localLookupList", CO_KZGEN_LOCAL, false, true)
HELM_LOOKUP(fn_lookup_kc, "lookupWithKubeConfig", CO_KZGEN_KUBECONFIG, false, false)
HELM_LOOKUP(fn_must_lookup_kc, "mustLookupWithKubeConfig", CO_KZGEN_KUBECONFIG, true, false)
HELM_LOOKUP(fn_lookup_list_kc, "lookupListWithKubeConfig", CO_KZGEN_KUBECONFIG, false, true)

static const struct {
    const char *name;
    int nargs;
    co_template_func_cb cb;
} lookup_funcs[] = {
    {"lookup", 4, fn_lookup},
    {"mustLookup", 4, fn_must_lookup},
    {"lookupList", 4, fn_lookup_list},
    {"localLookup", 4, fn_local_lookup},
    {"mustLocalLookup", 4, fn_must_local_lookup},
    {"localLookupList", 4, fn_local_lookup_list},
    {"lookupWithKubeConfig", 5, fn_lookup_kc},
    {"mustLookupWithKubeConfig", 5, fn_must_lookup_kc},
    {"lookupListWithKubeConfig", 5, fn_lookup_list_kc},
};

static int fn_host(tpl_x *x, tv *ret, tv *args, size_t n)
{
    (void)args;
    (void)n;
    *ret = tv_cstring(x, "");
    return 0;
}

static const tpl_func helm_funcs[] = {
    TPL_FUNC("fail", fn_fail, P_STRING, 1, false, true, &T_STRING),
    TPL_FUNC("getHostByName", fn_host, P_STRING, 1, false, false, &T_STRING),
    TPL_FUNC("include", fn_include, P_STRING_ANY, 2, false, true, &T_STRING),
    TPL_FUNC("required", fn_required, P_STRING_ANY, 2, false, true, &T_IFACE),
    TPL_FUNC("tpl", fn_tpl, P_STRING_ANY, 2, false, true, &T_STRING),
};

/* Drops a function from the set (Helm removes env and expandenv from sprig's map). */
static void funcs_remove(co_template_funcs *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->items[i]->name, name) == 0) {
            memmove(&f->items[i], &f->items[i + 1], (f->n - i - 1) * sizeof(const tpl_func *));
            f->n--;
            return;
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Building the builtins                                                                      */
/* ------------------------------------------------------------------------------------------ */

static tv str_or_empty(tpl_x *x, const char *s)
{
    return tv_cstring(x, s ? s : "");
}

static tv strv_value(tpl_x *x, char *const *v, size_t n)
{
    if (!v) {
        return tv_nil(&T_LIST_STRING);
    }
    tv l = tv_list_new(x, &T_LIST_STRING, n);
    for (size_t i = 0; i < n; i++) {
        l.u.l->items[i] = tv_cstring(x, v[i]);
    }
    return l;
}

static tv_obj *new_obj(tpl_x *x, size_t nfields)
{
    tv_obj *o = tpl_alloc(x, sizeof(tv_obj) + nfields * sizeof(tv));
    o->native = NULL;
    return o;
}

static void map_put(tpl_x *x, tv *m, const char *key, tv val)
{
    tv_map_set(x, m->u.m, tv_str_new(x, key, strlen(key)), val);
}

static tv chart_value(tpl_x *x, const helm_meta *m, bool is_root)
{
    tv_obj *mo = new_obj(x, 17);
    mo->fields[0] = str_or_empty(x, m->name);
    mo->fields[1] = str_or_empty(x, m->home);
    mo->fields[2] = strv_value(x, m->sources, m->nsources);
    mo->fields[3] = str_or_empty(x, m->version);
    mo->fields[4] = str_or_empty(x, m->description);
    mo->fields[5] = strv_value(x, m->keywords, m->nkeywords);
    if (m->maintainers) {
        tv l = tv_list_new(x, &T_MAINT_LIST, m->nmaintainers);
        for (size_t i = 0; i < m->nmaintainers; i++) {
            tv_obj *o = new_obj(x, 3);
            o->fields[0] = str_or_empty(x, m->maintainers[i].name);
            o->fields[1] = str_or_empty(x, m->maintainers[i].email);
            o->fields[2] = str_or_empty(x, m->maintainers[i].url);
            l.u.l->items[i] = (tv){&T_MAINT_PTR, {.o = o}};
        }
        mo->fields[6] = l;
    } else {
        mo->fields[6] = tv_nil(&T_MAINT_LIST);
    }
    mo->fields[7] = str_or_empty(x, m->icon);
    mo->fields[8] = str_or_empty(x, m->api_version);
    mo->fields[9] = str_or_empty(x, m->condition);
    mo->fields[10] = str_or_empty(x, m->tags);
    mo->fields[11] = str_or_empty(x, m->app_version);
    mo->fields[12] = tv_bool(m->deprecated);
    if (m->annotations) {
        tv a = tv_map_new(x, &T_MAP_STRING, 8);
        json_object_object_foreach (m->annotations, k, v) {
            map_put(x, &a, k, tv_cstring(x, json_object_get_string(v)));
        }
        mo->fields[13] = a;
    } else {
        mo->fields[13] = tv_nil(&T_MAP_STRING);
    }
    mo->fields[14] = str_or_empty(x, m->kube_version);
    if (m->deps) {
        tv l = tv_list_new(x, &T_DEP_LIST, m->ndeps);
        for (size_t i = 0; i < m->ndeps; i++) {
            const helm_dep *d = &m->deps[i];
            tv_obj *o = new_obj(x, 8);
            o->fields[0] = str_or_empty(x, d->name);
            o->fields[1] = str_or_empty(x, d->version);
            o->fields[2] = str_or_empty(x, d->repository);
            o->fields[3] = str_or_empty(x, d->condition);
            o->fields[4] = strv_value(x, d->tags, d->ntags);
            o->fields[5] = tv_bool(d->enabled);
            o->fields[6] = d->import_values
                               ? tv_from_json(x, d->import_values, CO_TEMPLATE_NUMBERS_FLOAT64)
                               : tv_nil(&T_LIST_ANY);
            o->fields[7] = str_or_empty(x, d->alias);
            l.u.l->items[i] = (tv){&T_DEP_PTR, {.o = o}};
        }
        mo->fields[15] = l;
    } else {
        mo->fields[15] = tv_nil(&T_DEP_LIST);
    }
    mo->fields[16] = str_or_empty(x, m->type);
    tv_obj *co = new_obj(x, 2);
    co->fields[0] = (tv){&T_META, {.o = mo}};
    co->fields[1] = tv_bool(is_root);
    return (tv){&T_CHART, {.o = co}};
}

/* Parses "v1.30.2" / "1.30" into .Capabilities.KubeVersion (Helm's ParseKubeVersion). */
static int kube_version(char **version, char **major, char **minor, const char *text)
{
    co_semver v;
    if (co_semver_parse(&v, text) < 0) {
        return co_error_set(CO_EINVALID, "kube version \"%s\": not a semantic version", text);
    }
    char *s = co_semver_string(&v);
    *version = co_xasprintf("v%s", s);
    *major = co_xasprintf("%llu", (unsigned long long)v.major);
    *minor = co_xasprintf("%llu", (unsigned long long)v.minor);
    free(s);
    co_semver_dispose(&v);
    return 0;
}

const char *const co_helm_default_api_versions[] = {
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "autoscaling/v2beta1",
    "autoscaling/v2beta2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1alpha1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha1",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1alpha1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
};
const size_t co_helm_n_default_api_versions = CO_ARRAY_SIZE(co_helm_default_api_versions);

static tv caps_value(tpl_x *x,
                     const char *kv,
                     const char *kmaj,
                     const char *kmin,
                     const co_helm_options *opts)
{
    tv_obj *k = new_obj(x, 3);
    k->fields[0] = tv_cstring(x, kv);
    k->fields[1] = tv_cstring(x, kmaj);
    k->fields[2] = tv_cstring(x, kmin);
    size_t n = opts->n_api_versions;
    bool defaults = (opts->flags & CO_HELM_DEFAULT_API_VERSIONS) != 0;
    bool has_v1 = defaults;
    for (size_t i = 0; i < n; i++) {
        has_v1 |= strcmp(opts->api_versions[i], "v1") == 0;
    }
    size_t nd = defaults ? co_helm_n_default_api_versions : 0;
    tv l = tv_list_new(x, &T_VERSIONSET, nd + n + (has_v1 ? 0 : 1));
    size_t j = 0;
    if (!has_v1) {
        l.u.l->items[j++] = tv_cstring(x, "v1");
    }
    for (size_t i = 0; i < nd; i++) {
        l.u.l->items[j++] = tv_cstring(x, co_helm_default_api_versions[i]);
    }
    for (size_t i = 0; i < n; i++) {
        l.u.l->items[j++] = tv_cstring(x, opts->api_versions[i]);
    }
    tv_obj *b = new_obj(x, 4);
    b->fields[0] = tv_cstring(x, "v3.17.2");
    b->fields[1] = tv_cstring(x, "");
    b->fields[2] = tv_cstring(x, "");
    b->fields[3] = tv_cstring(x, "");
    tv_obj *c = new_obj(x, 3);
    c->fields[0] = (tv){&T_KUBEVERSION, {.o = k}};
    c->fields[1] = l;
    c->fields[2] = (tv){&T_BUILDINFO, {.o = b}};
    return (tv){&T_CAPS_PTR, {.o = c}};
}

/* ---- .Capabilities.APIVersions from discovery ------------------------------------------- */

typedef struct version_entry {
    char *s;
    size_t at; /* position of first appearance */
} version_entry;

static int version_by_text(const void *a, const void *b)
{
    const version_entry *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

static int version_by_position(const void *a, const void *b)
{
    const version_entry *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

void co_helm_api_versions(char ***out, size_t *n_out, const struct json_object *lists)
{
    size_t nlists =
        lists && json_object_is_type(lists, json_type_array) ? json_object_array_length(lists) : 0;
    version_entry *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < nlists; i++) {
        const struct json_object *l = json_object_array_get_idx(lists, i);
        const char *gv = co_json_str(l, "groupVersion", NULL);
        if (!gv || !*gv) {
            continue;
        }
        struct json_object *res = NULL;
        size_t nres = json_object_object_get_ex(l, "resources", &res) &&
                              json_object_is_type(res, json_type_array)
                          ? json_object_array_length(res)
                          : 0;
        if (!v || n + nres + 1 > cap) {
            cap = (n + nres + 1) * 2;
            v = co_xreallocarray(v, cap, sizeof(*v));
        }
        v[n] = (version_entry){co_xstrdup(gv), n};
        n++;
        for (size_t j = 0; j < nres; j++) {
            const char *kind = co_json_str(json_object_array_get_idx(res, j), "kind", NULL);
            if (kind && *kind) {
                v[n] = (version_entry){co_xasprintf("%s/%s", gv, kind), n};
                n++;
            }
        }
    }
    /* each once, where it first appears: sorted by text to find repeats, then back */
    size_t kept = 0;
    if (n > 0) {
        qsort(v, n, sizeof(*v), version_by_text);
        for (size_t i = 0; i < n; i++) {
            if (kept > 0 && strcmp(v[kept - 1].s, v[i].s) == 0) {
                free(v[i].s);
                continue;
            }
            v[kept++] = v[i];
        }
        qsort(v, kept, sizeof(*v), version_by_position);
    }
    char **res = co_xcalloc(kept + 1, sizeof(char *));
    for (size_t i = 0; i < kept; i++) {
        res[i] = v[i].s;
    }
    free(v);
    *out = res;
    *n_out = kept;
}

void co_helm_strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++) {
        free(v[i]);
    }
    free(v);
}

/* One template to parse and (unless a partial) execute. */
typedef struct tmpl {
    char *name;
    const helm_file *file;
    tv *data; /* the chart's top-level map */
    char *base_path;
} tmpl;

typedef struct tmpls {
    tmpl *items;
    size_t n;
} tmpls;

typedef struct build {
    tpl_x *x;
    tv release;
    tv caps;
    tmpls t;
} build;

static bool is_library(const helm_node *n)
{
    return n->meta.type && strcasecmp(n->meta.type, "library") == 0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* recAllTpls: the chart's builtins map (returned), its subcharts' maps, its templates. */
static tv all_templates(build *b, const helm_node *n, const tv *parent_values)
{
    tpl_x *x = b->x;
    tv next = tv_map_new(x, &T_MAP_ANY, 8);
    tv subcharts = tv_map_new(x, &T_MAP_ANY, n->ndeps);
    map_put(x, &next, "Chart", chart_value(x, &n->meta, n->parent == NULL));
    tv files = tv_map_new(x, &T_FILES, n->chart->nfiles);
    for (size_t i = 0; i < n->chart->nfiles; i++) {
        const helm_file *f = &n->chart->files[i];
        map_put(x, &files, f->name, tv_bytes(x, f->data, f->len));
    }
    map_put(x, &next, "Files", files);
    map_put(x, &next, "Release", b->release);
    map_put(x, &next, "Capabilities", b->caps);
    tv values = {&T_VALUES, {.m = NULL}};
    if (n->parent == NULL) {
        values = *parent_values;
    } else {
        tv *v = parent_values->u.m
                    ? tv_map_get(parent_values->u.m, n->meta.name, strlen(n->meta.name))
                    : NULL;
        if (v && tv_kind(v) == TK_MAP && v->t->elem == &T_IFACE) {
            values = (tv){&T_VALUES, {.m = v->u.m}};
        } else {
            values = tv_map_new(x, &T_VALUES, 0);
        }
    }
    map_put(x, &next, "Values", values);
    map_put(x, &next, "Subcharts", subcharts);
    for (size_t i = 0; i < n->ndeps; i++) {
        tv child = all_templates(b, n->deps[i], &values);
        map_put(x, &subcharts, n->deps[i]->meta.name, child);
    }
    tv *stored = tpl_alloc(x, sizeof(tv));
    *stored = next;
    char *full = co_helm__full_path(n);
    for (size_t i = 0; i < n->chart->ntemplates; i++) {
        const helm_file *f = &n->chart->templates[i];
        if (is_library(n) && base_name(f->name)[0] != '_') {
            continue;
        }
        b->t.items = co_xreallocarray(b->t.items, b->t.n + 1, sizeof(tmpl));
        b->t.items[b->t.n++] = (tmpl){co_xasprintf("%s/%s", full, f->name), f, stored,
                                      co_xasprintf("%s/templates", full)};
    }
    free(full);
    return next;
}

static size_t count_slashes(const char *s)
{
    size_t n = 0;
    for (; *s; s++) {
        n += *s == '/';
    }
    return n;
}

/* Helm's parse and render order: sort.Reverse(byPathLen). */
static int tmpl_cmp(const void *a, const void *b)
{
    const tmpl *ta = a;
    const tmpl *tb = b;
    size_t ca = count_slashes(ta->name);
    size_t cb = count_slashes(tb->name);
    if (ca != cb) {
        return ca > cb ? -1 : 1;
    }
    return -strcmp(ta->name, tb->name);
}

/* ------------------------------------------------------------------------------------------ */
/* Error messages as Helm rewrites them                                                       */
/* ------------------------------------------------------------------------------------------ */

/* cleanupParseError: "parse error at (NAME:LINE): MESSAGE". */
static int parse_error_msg(int code, const char *msg);
static int parse_error(int code, const char *last)
{
    char *msg = co_xstrdup(last);
    int rc = parse_error_msg(code, msg);
    free(msg);
    return rc;
}

static int parse_error_msg(int code, const char *msg)
{
    const char *first = strstr(msg, ": ");
    if (!first) {
        return co_error_set(code, "parse error: %s", msg);
    }
    const char *loc = first + 2;
    const char *loc_end = strstr(loc, ": ");
    const char *last = msg;
    for (const char *p = strstr(msg, ": "); p; p = strstr(p + 2, ": ")) {
        last = p + 2;
    }
    if (!loc_end) {
        return co_error_set(code, "parse error: %s", msg);
    }
    return co_error_set(code, "parse error at (%.*s): %s", (int)(loc_end - loc), loc, last);
}

/* cleanupExecError: "execution error at (NAME:LINE:COL): MESSAGE" for required/fail, the
 * engine's message otherwise. */
static int exec_error(int code, const char *msg)
{
    const char *first = strstr(msg, ": ");
    const char *second = first ? strstr(first + 2, ": ") : NULL;
    if (!second) {
        return co_error_set(code, "%s", msg);
    }
    const char *start = strstr(second + 2, WARN_START);
    const char *end = NULL;
    for (const char *p = start ? strstr(start, WARN_END) : NULL; p; p = strstr(p + 1, WARN_END)) {
        end = p;
    }
    if (start && end) {
        start += strlen(WARN_START);
        return co_error_set(code, "execution error at (%.*s): %.*s", (int)(second - first - 2),
                            first + 2, (int)(end - start), start);
    }
    return co_error_set(code, "%s", msg);
}

/* ------------------------------------------------------------------------------------------ */
/* Manifests                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static const char *const install_order[] = {
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
};

static int kind_rank(const char *kind)
{
    for (size_t i = 0; i < CO_ARRAY_SIZE(install_order); i++) {
        if (strcmp(install_order[i], kind) == 0) {
            return (int)i;
        }
    }
    return -1;
}

typedef struct manifest {
    char *kind;
    struct json_object **docs; /* parsed, non-null documents */
    size_t ndocs;
    size_t seq; /* for a stable sort */
} manifest;

typedef struct manifests {
    manifest *items;
    size_t n;
} manifests;

static void manifests_dispose(manifests *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->items[i].kind);
        for (size_t j = 0; j < m->items[i].ndocs; j++) {
            json_object_put(m->items[i].docs[j]);
        }
        free(m->items[i].docs);
    }
    free(m->items);
}

/* lessByKind, made a total order with the input position (sort.SliceStable). */
static int manifest_cmp(const void *a, const void *b)
{
    const manifest *ma = a;
    const manifest *mb = b;
    int ra = kind_rank(ma->kind);
    int rb = kind_rank(mb->kind);
    int c = 0;
    if (ra < 0 && rb < 0) {
        c = strcmp(ma->kind, mb->kind);
    } else if (ra < 0) {
        c = 1;
    } else if (rb < 0) {
        c = -1;
    } else {
        c = ra - rb;
    }
    if (c != 0) {
        return c;
    }
    return ma->seq < mb->seq ? -1 : ma->seq > mb->seq ? 1 : 0;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* A string field of the manifest head: absent and null are fine, other types are not. */
static int head_string(const char **out,
                       struct json_object *obj,
                       const char *key,
                       const char *file,
                       const char *field)
{
    struct json_object *v = NULL;
    *out = "";
    if (!obj || !json_object_object_get_ex(obj, key, &v) || !v) {
        return 0;
    }
    if (json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_array)) {
        return co_error_set(CO_EINVALID, "YAML parse error on %s: %s: expected a string, got %s",
                            file, field, co_json_type_name(v));
    }
    *out = json_object_get_string(v);
    return 0;
}

/* @p t without leading and trailing spaces (cut in place). */
static char *trimmed(char *t)
{
    while (is_space(*t)) {
        t++;
    }
    size_t n = strlen(t);
    while (n > 0 && is_space(t[n - 1])) {
        t[--n] = '\0';
    }
    return t;
}

/* Whether the hook list names only event types Helm knows. */
static bool known_hooks(const char *list)
{
    static const char *const known[] = {
        "pre-install",  "post-install", "pre-delete",    "post-delete", "pre-upgrade",
        "post-upgrade", "pre-rollback", "post-rollback", "test",        "test-success"};
    char *copy = co_xstrdup(list);
    bool ok = true;
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        t = trimmed(t);
        bool found = false;
        for (size_t i = 0; i < CO_ARRAY_SIZE(known); i++) {
            found |= strcasecmp(known[i], t) == 0;
        }
        if (!found) {
            ok = false;
            break;
        }
    }
    free(copy);
    return ok;
}

/* Splits one rendered file as SplitManifests does and sorts each part into @p generic or
 * @p hooks (manifestFile.sort). */
static int sort_file(manifests *generic,
                     manifests *hooks,
                     const char *path,
                     const char *content,
                     size_t len,
                     size_t *seq)
{
    const char *s = content;
    const char *end = content + len;
    while (s < end && is_space(*s)) {
        s++;
    }
    while (end > s && is_space(end[-1])) {
        end--;
    }
    /* separators: (?:^|\s*\n)---\s* */
    const char *doc = s;
    const char *p = s;
    for (;;) {
        const char *sep_start = NULL;
        const char *sep_end = NULL;
        for (const char *q = p; q + 3 <= end; q++) {
            if (memcmp(q, "---", 3) != 0) {
                continue;
            }
            if (q == s) {
                sep_start = q;
            } else if (q > doc && q[-1] == '\n') {
                sep_start = q - 1;
                while (sep_start > doc && is_space(sep_start[-1])) {
                    sep_start--;
                }
            } else {
                continue;
            }
            sep_end = q + 3;
            while (sep_end < end && is_space(*sep_end)) {
                sep_end++;
            }
            break;
        }
        const char *dend = sep_start ? sep_start : end;
        const char *a = doc;
        const char *z = dend;
        while (a < z && is_space(*a)) {
            a++;
        }
        while (z > a && is_space(z[-1])) {
            z--;
        }
        if (z > a || (sep_start == NULL && doc < dend)) {
            if (z > a) {
                /* Helm prints each trimmed document followed by a newline, which a block
                 * scalar at its end keeps. */
                size_t dl = (size_t)(z - a);
                char *text = co_xmalloc(dl + 2);
                memcpy(text, a, dl);
                text[dl] = '\n';
                text[dl + 1] = '\0';
                co_yaml_docs docs = CO_YAML_DOCS_INIT;
                int rc = co_yaml_parse_stream(&docs, text, dl + 1, CO_YAML_SKIP_NULL);
                free(text);
                if (rc < 0) {
                    return co_error_wrap("YAML parse error on %s", path);
                }
                struct json_object *head = docs.len ? docs.items[0].value : NULL;
                if (head && !json_object_is_type(head, json_type_object)) {
                    co_yaml_docs_dispose(&docs);
                    return co_error_set(CO_EINVALID,
                                        "YAML parse error on %s: a manifest must be a map, not "
                                        "%s",
                                        path, co_json_type_name(head));
                }
                const char *kind = "";
                const char *api = "";
                const char *name = "";
                struct json_object *meta = head ? co_json_get(head, "metadata", NULL) : NULL;
                struct json_object *ann = NULL;
                rc = head_string(&api, head, "apiVersion", path, "apiVersion");
                if (rc == 0) {
                    rc = head_string(&kind, head, "kind", path, "kind");
                }
                if (rc == 0 && meta && !json_object_is_type(meta, json_type_object)) {
                    rc = co_error_set(CO_EINVALID,
                                      "YAML parse error on %s: metadata: expected "
                                      "a map",
                                      path);
                }
                if (rc == 0 && meta) {
                    rc = head_string(&name, meta, "name", path, "metadata.name");
                    if (json_object_object_get_ex(meta, "annotations", &ann) && ann) {
                        if (!json_object_is_type(ann, json_type_object)) {
                            rc = co_error_set(CO_EINVALID,
                                              "YAML parse error on %s: metadata.annotations: "
                                              "expected a map",
                                              path);
                        } else {
                            json_object_object_foreach (ann, k, v) {
                                if (v && (json_object_is_type(v, json_type_object) ||
                                          json_object_is_type(v, json_type_array))) {
                                    rc = co_error_set(CO_EINVALID,
                                                      "YAML parse error on %s: annotation %s: "
                                                      "expected a string, got %s",
                                                      path, k, co_json_type_name(v));
                                    break;
                                }
                            }
                        }
                    }
                }
                if (rc < 0) {
                    co_yaml_docs_dispose(&docs);
                    return rc;
                }
                (void)name;
                (void)api;
                manifests *dst = generic;
                struct json_object *hook = NULL;
                if (ann && json_object_object_length(ann) > 0 &&
                    json_object_object_get_ex(ann, "helm.sh/hook", &hook)) {
                    if (!known_hooks(hook ? json_object_get_string(hook) : "")) {
                        co_yaml_docs_dispose(&docs);
                        goto next; /* Helm skips objects with unknown hooks */
                    }
                    dst = hooks;
                }
                dst->items = co_xreallocarray(dst->items, dst->n + 1, sizeof(manifest));
                manifest *m = &dst->items[dst->n++];
                m->kind = co_xstrdup(kind);
                m->seq = (*seq)++;
                m->ndocs = docs.len;
                m->docs = co_xcalloc(docs.len + 1, sizeof(void *));
                for (size_t i = 0; i < docs.len; i++) {
                    m->docs[i] = docs.items[i].value;
                    docs.items[i].value = NULL;
                }
                co_yaml_docs_dispose(&docs);
            }
        }
    next:
        if (!sep_start) {
            break;
        }
        doc = sep_end;
        p = sep_end;
    }
    return 0;
}

static bool manifest_ext(const char *name)
{
    const char *dot = strrchr(base_name(name), '.');
    return dot && (strcasecmp(dot, ".yaml") == 0 || strcasecmp(dot, ".yml") == 0 ||
                   strcasecmp(dot, ".json") == 0);
}

static int add_crds(struct json_object *out, const helm_node *n)
{
    for (size_t i = 0; i < n->chart->nfiles; i++) {
        const helm_file *f = &n->chart->files[i];
        if (strncmp(f->name, "crds/", 5) != 0 || !manifest_ext(f->name)) {
            continue;
        }
        /* printed verbatim, followed by a newline */
        char *text = co_xmalloc(f->len + 2);
        memcpy(text, f->data, f->len);
        text[f->len] = '\n';
        text[f->len + 1] = '\0';
        co_yaml_docs docs = CO_YAML_DOCS_INIT;
        int prc = co_yaml_parse_stream(&docs, text, f->len + 1, CO_YAML_SKIP_NULL);
        free(text);
        if (prc < 0) {
            char *full = co_helm__full_path(n);
            int rc = co_error_wrap("%s/%s", full, f->name);
            free(full);
            return rc;
        }
        for (size_t j = 0; j < docs.len; j++) {
            json_object_array_add(out, docs.items[j].value);
            docs.items[j].value = NULL;
        }
        co_yaml_docs_dispose(&docs);
    }
    for (size_t i = 0; i < n->ndeps; i++) {
        int rc = add_crds(out, n->deps[i]);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The render                                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct rendered {
    char *name;
    char *text;
    size_t len;
} rendered;

static int rendered_cmp(const void *a, const void *b)
{
    return strcmp(((const rendered *)a)->name, ((const rendered *)b)->name);
}

/* One co_helm_template call: what its steps build, owned here and released by run_dispose
 * whichever step failed. The steps run in the order of Helm's install action, which decides
 * the error a chart with several problems reports. */
typedef struct helm_run {
    const co_helm_options *opts;
    char *kv; /* .Capabilities.KubeVersion: "v1.32.0", "1", "32" */
    char *kmaj;
    char *kmin;
    helm_node *root;           /* the chart tree, dependencies enabled or not */
    struct json_object *vals;  /* the caller's values, copied: processing edits them */
    struct json_object *final; /* the values of the whole tree, coalesced */
    co_template_funcs *funcs;
    co_template_set *set;
    co_template_session *sess;
    render_ctx rctx;
    tpl_x x;         /* the execution state every builtin value is made in */
    co_buf err;      /* the text of x's last error */
    build b;         /* the builtins and the templates to parse */
    rendered *files; /* the executed templates' output, by name */
    size_t nfiles;
    manifests generic;
    manifests hooks;
} helm_run;

static void run_init(helm_run *r, const co_helm_options *opts)
{
    memset(r, 0, sizeof(*r));
    r->opts = opts;
    co_buf_init(&r->err, CO_MAX_ERROR_MESSAGE);
}

static void run_dispose(helm_run *r)
{
    manifests_dispose(&r->generic);
    manifests_dispose(&r->hooks);
    for (size_t i = 0; i < r->nfiles; i++) {
        free(r->files[i].name);
        free(r->files[i].text);
    }
    free(r->files);
    for (size_t i = 0; i < r->b.t.n; i++) {
        free(r->b.t.items[i].name);
        free(r->b.t.items[i].base_path);
    }
    free(r->b.t.items);
    for (size_t i = 0; i < r->rctx.nincluded; i++) {
        free(r->rctx.included[i].name);
    }
    free(r->rctx.included);
    co_template_session_free(r->sess);
    co_template_set_free(r->set);
    co_template_funcs_free(r->funcs);
    co_buf_dispose(&r->err);
    json_object_put(r->final);
    json_object_put(r->vals);
    co_helm__node_free(r->root);
    free(r->kv);
    free(r->kmaj);
    free(r->kmin);
}

/* What the install action refuses before anything is rendered: values that are not a map, a
 * chart that is not an application (a library chart), and, as action.CheckDependencies, a
 * dependency of the top chart's Chart.yaml missing from its charts/ (all of them named). */
static int check_installable(const co_helm_chart *c, const struct json_object *values)
{
    if (values && !json_object_is_type(values, json_type_object)) {
        return co_error_set(CO_EINVALID, "values: expected a map, got %s",
                            co_json_type_name(values));
    }
    if (c->meta.type && *c->meta.type && strcmp(c->meta.type, "application") != 0) {
        return co_error_set(CO_EINVALID, "%s charts are not installable", c->meta.type);
    }
    if (!c->meta.has_deps) {
        return 0;
    }
    int rc = 0;
    co_buf missing = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    for (size_t i = 0; i < c->meta.ndeps; i++) {
        const char *want = c->meta.deps[i].name ? c->meta.deps[i].name : "";
        bool found = false;
        for (size_t j = 0; j < c->ndeps && !found; j++) {
            found = strcmp(c->deps[j]->meta.name, want) == 0;
        }
        if (!found && co_buf_printf(&missing, "%s%s", missing.len ? ", " : "", want) < 0) {
            break; /* the list is capped; what fits names enough */
        }
    }
    if (missing.len > 0) {
        rc = co_error_set(CO_EINVALID, "found in Chart.yaml, but missing in charts/ directory: %s",
                          co_buf_cstr(&missing));
    }
    co_buf_dispose(&missing);
    return rc;
}

/* The values of the whole chart tree, as the install action makes them: dependencies enabled
 * or disabled by conditions and tags and their values imported, then the charts' defaults
 * coalesced under the caller's values, then every chart's values.schema.json checked (unless
 * the caller skips it). The caller's values are copied, never edited. */
static int tree_values(helm_run *r, const co_helm_chart *c, const struct json_object *values)
{
    r->root = co_helm__node_new(c, NULL);
    r->vals = co_json_copy(values);
    int rc = co_helm__process_dependencies(r->root, r->vals);
    if (rc < 0) {
        return rc;
    }
    rc = co_helm__coalesce(&r->final, r->root, r->vals, false);
    if (rc < 0) {
        return rc;
    }
    if (!(r->opts->flags & CO_HELM_SKIP_SCHEMA_VALIDATION)) {
        return co_helm__validate_schema(r->root, r->final);
    }
    return 0;
}

/* The top chart's kubeVersion constraint against the Kubernetes version rendered for. */
static int check_kube_version(const helm_run *r)
{
    const char *want = r->root->meta.kube_version;
    if (want && *want && !co_helm__compatible_range(want, r->kv)) {
        return co_error_set(CO_EINVALID,
                            "chart requires kubeVersion: %s which is incompatible with Kubernetes "
                            "%s",
                            want, r->kv);
    }
    return 0;
}

/* The engine as Helm's: sprig without env and expandenv, Helm's functions, the lookup family
 * through the caller's hooks, missing keys printed as zero values; one session, and the
 * execution state that builds the builtins and runs the templates. */
static int engine_new(helm_run *r)
{
    co_template_funcs_new(&r->funcs, CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_RUNTIME |
                                         CO_TEMPLATE_FUNCS_HELM);
    funcs_remove(r->funcs, "env");
    funcs_remove(r->funcs, "expandenv");
    tpl_register_all(r->funcs, helm_funcs, CO_ARRAY_SIZE(helm_funcs));
    for (size_t i = 0; i < CO_ARRAY_SIZE(lookup_funcs); i++) {
        int rc = co_template_funcs_add(r->funcs, lookup_funcs[i].name, lookup_funcs[i].nargs,
                                       CO_TEMPLATE_NUMBERS_INT64, lookup_funcs[i].cb);
        if (rc < 0) {
            return rc;
        }
    }
    r->rctx.opts = r->opts;
    co_template_options topts = {.name = "gotpl", .missingkey = CO_TEMPLATE_MISSINGKEY_ZERO};
    co_template_set_new(&r->set, r->funcs, &topts);
    co_template_env env = {.ctx = &r->rctx};
    co_template_session_new(&r->sess, r->set, &env);

    memset(&r->x, 0, sizeof(r->x));
    r->x.sess = r->sess;
    r->x.set = r->set;
    r->x.err = &r->err;
    r->x.steps = &r->sess->steps;
    r->x.code = CO_EINVALID;
    r->b.x = &r->x;
    return 0;
}

/* The chart tree as the templates see it: the builtins of every chart (.Release and
 * .Capabilities shared; .Chart, .Files, .Values and .Subcharts its own, .Values being the
 * chart's section of the coalesced values) and the list of templates to parse, each with its
 * chart's builtins (a library chart contributes its partials only). */
static void chart_tree(helm_run *r)
{
    tpl_x *x = &r->x;
    const co_helm_options *opts = r->opts;
    int64_t revision = opts->revision > 0 ? opts->revision : 1;
    r->b.release = tv_map_new(x, &T_MAP_ANY, 6);
    map_put(x, &r->b.release, "Name",
            tv_cstring(x, opts->release_name ? opts->release_name : "release-name"));
    map_put(x, &r->b.release, "Namespace",
            tv_cstring(x, opts->release_namespace ? opts->release_namespace : "default"));
    map_put(x, &r->b.release, "IsUpgrade", tv_bool(revision > 1));
    map_put(x, &r->b.release, "IsInstall", tv_bool(revision == 1));
    map_put(x, &r->b.release, "Revision", tv_int(&T_INT, revision));
    map_put(x, &r->b.release, "Service",
            tv_cstring(x, opts->release_service ? opts->release_service : "Helm"));
    r->b.caps = caps_value(x, r->kv, r->kmaj, r->kmin, opts);
    tv root_values = tv_from_json(x, r->final, CO_TEMPLATE_NUMBERS_FLOAT64);
    root_values.t = &T_VALUES;
    (void)all_templates(&r->b, r->root, &root_values);
}

/* Every template of the tree parsed into one set in Helm's order: deeper paths first (so
 * that a parent's definitions win), then names in reverse. */
static int parse_templates(helm_run *r)
{
    if (r->b.t.n > 1) {
        qsort(r->b.t.items, r->b.t.n, sizeof(tmpl), tmpl_cmp);
    }
    for (size_t i = 0; i < r->b.t.n; i++) {
        const tmpl *t = &r->b.t.items[i];
        int rc = co_template_set_parse(r->set, t->name, t->file->data, t->file->len);
        if (rc < 0) {
            return parse_error(tpl_error_code(rc), co_error_last());
        }
    }
    return 0;
}

/* Executes every template but the partials (names starting with "_") with its builtins and
 * .Template, each output stripped of "<no value>". The outputs together are capped
 * (CO_MAX_HELM_OUTPUT) and charged to the render's budget, since they stay until parsed. */
static int execute_templates(helm_run *r)
{
    tpl_x *x = &r->x;
    size_t total = 0;
    r->files = co_xcalloc(r->b.t.n + 1, sizeof(*r->files));
    for (size_t i = 0; i < r->b.t.n; i++) {
        const tmpl *t = &r->b.t.items[i];
        if (base_name(t->name)[0] == '_') {
            continue;
        }
        tv tmap = tv_map_new(x, &T_VALUES, 2);
        map_put(x, &tmap, "Name", tv_cstring(x, t->name));
        map_put(x, &tmap, "BasePath", tv_cstring(x, t->base_path));
        map_put(x, t->data, "Template", tmap);
        co_buf buf = CO_BUF_INIT(tpl_out_cap());
        co_buf_reset(&r->err);
        x->code = CO_EINVALID;
        if (tpl_execute(x, r->set, t->name, *t->data, &buf) < 0) {
            co_buf_dispose(&buf);
            return exec_error(tpl_error_code(x->code), co_buf_cstr(&r->err));
        }
        size_t len = 0;
        char *text = co_buf_take(&buf, &len);
        len = co_template_strip_no_value(text, len);
        total += len;
        if (total > CO_MAX_HELM_OUTPUT) {
            free(text);
            return co_error_set(CO_ETOOBIG, "rendered output exceeds %zu bytes",
                                (size_t)CO_MAX_HELM_OUTPUT);
        }
        if (co_budget_charge(len) < 0) {
            free(text);
            return co_error_wrap("%s", t->name);
        }
        r->files[r->nfiles++] = (rendered){co_xstrdup(t->name), text, len};
    }
    return 0;
}

/* The outputs by file name (NOTES.txt left out), split into manifests, parted into plain
 * manifests and hooks, each part ordered by kind in Helm's install order (stable: equal kinds
 * keep the order of the files and of the documents in them). */
static int sort_manifests(helm_run *r)
{
    if (r->nfiles > 1) {
        qsort(r->files, r->nfiles, sizeof(*r->files), rendered_cmp);
    }
    size_t seq = 0;
    for (size_t i = 0; i < r->nfiles; i++) {
        const rendered *f = &r->files[i];
        size_t nl = strlen(f->name);
        if (nl >= 9 && strcmp(f->name + nl - 9, "NOTES.txt") == 0) {
            continue;
        }
        int rc = sort_file(&r->generic, &r->hooks, f->name, f->text, f->len, &seq);
        if (rc < 0) {
            return rc;
        }
    }
    if (r->generic.n > 1) {
        qsort(r->generic.items, r->generic.n, sizeof(manifest), manifest_cmp);
    }
    if (r->hooks.n > 1) {
        qsort(r->hooks.items, r->hooks.n, sizeof(manifest), manifest_cmp);
    }
    return 0;
}

/* Whether @p doc is a test hook: its helm.sh/hook list names `test` or `test-success` (both
 * Helm's test event), compared as Helm does, trimmed and in lower case. */
static bool test_hook(const struct json_object *doc)
{
    const char *list = co_json_str(doc, "metadata", "annotations", "helm.sh/hook", NULL);
    if (!list) {
        co_error_clear();
        return false;
    }
    char *copy = co_xstrdup(list);
    bool test = false;
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && !test;
         t = strtok_r(NULL, ",", &save)) {
        t = trimmed(t);
        test = strcasecmp(t, "test") == 0 || strcasecmp(t, "test-success") == 0;
    }
    free(copy);
    return test;
}

/* The objects as helm template prints them: the CRDs of every chart (unless skipped), then
 * the plain manifests, then the hooks (unless left out, or their tests). The documents move
 * out of the run into *out. */
static int collect_objects(helm_run *r, struct json_object **out)
{
    struct json_object *result = json_object_new_array();
    if (!(r->opts->flags & CO_HELM_SKIP_CRDS)) {
        int rc = add_crds(result, r->root);
        if (rc < 0) {
            json_object_put(result);
            return rc;
        }
    }
    manifests *parts[] = {&r->generic, &r->hooks};
    size_t nparts = (r->opts->flags & CO_HELM_NO_HOOKS) ? 1 : 2;
    for (size_t p = 0; p < nparts; p++) {
        for (size_t i = 0; i < parts[p]->n; i++) {
            manifest *m = &parts[p]->items[i];
            for (size_t j = 0; j < m->ndocs; j++) {
                if (p == 1 && (r->opts->flags & CO_HELM_SKIP_TESTS) && test_hook(m->docs[j])) {
                    continue; /* left for manifests_dispose() */
                }
                json_object_array_add(result, m->docs[j]);
                m->docs[j] = NULL;
            }
        }
    }
    *out = result;
    return 0;
}

/* The steps of Helm's install action (dry run), in its order. */
int co_helm_template(struct json_object **out,
                     const co_helm_chart *c,
                     const struct json_object *values,
                     const co_helm_options *opts)
{
    static const co_helm_options defaults = {0};
    int rc = check_installable(c, values);
    if (rc < 0) {
        return rc;
    }
    helm_run r;
    run_init(&r, opts ? opts : &defaults);
    const char *kube = r.opts->kube_version ? r.opts->kube_version : "v1.32.0";
    rc = kube_version(&r.kv, &r.kmaj, &r.kmin, kube);
    if (rc < 0) {
        goto done;
    }
    rc = tree_values(&r, c, values);
    if (rc < 0) {
        goto done;
    }
    rc = check_kube_version(&r);
    if (rc < 0) {
        goto done;
    }
    rc = engine_new(&r);
    if (rc < 0) {
        goto done;
    }
    chart_tree(&r);
    rc = parse_templates(&r);
    if (rc < 0) {
        goto done;
    }
    rc = execute_templates(&r);
    if (rc < 0) {
        goto done;
    }
    rc = sort_manifests(&r);
    if (rc < 0) {
        goto done;
    }
    rc = collect_objects(&r, out);
done:
    run_dispose(&r);
    return rc;
}

int co_helm_render(struct json_object **out,
                   const co_helm_chart *c,
                   const struct json_object *values,
                   const co_helm_options *opts)
{
    struct json_object *all = NULL;
    int rc = co_helm_template(&all, c, values, opts);
    if (rc < 0) {
        return rc;
    }
    int64_t revision = opts && opts->revision > 0 ? opts->revision : 1;
    unsigned flags = opts ? opts->flags : 0;
    struct json_object *res = json_object_new_array();
    size_t n = json_object_array_length(all);
    for (size_t i = 0; i < n; i++) {
        struct json_object *o = json_object_array_get_idx(all, i);
        bool keep = true;
        rc = co_helm_map_object(&keep, o, revision, flags);
        if (rc < 0) {
            json_object_put(res);
            json_object_put(all);
            return rc;
        }
        if (keep) {
            json_object_array_add(res, json_object_get(o));
        }
    }
    json_object_put(all);
    *out = res;
    return 0;
}
