/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The templated-kustomization generator (docs/behaviour.md, "Templated kustomization"). A generator
 * is a flat list of kustomizations: the main one first, then the included ones in depth-first
 * order, which is the order the Go original renders them in. Each holds its readable files (for
 * readFile, existsFile, listFiles), the files copied verbatim, and one template set with its
 * templates.
 */
#include "co/render/kzgen.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "co/util/budget.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/util/glob.h"
#include "co/json/json.h"
#include "co/render/kustomize.h"
#include "co/render/template.h"
#include "co/json/yaml.h"

#define CONFIG_FILE ".component-config.yaml"
#define IGNORE_FILE ".component-ignore"

typedef struct kg_file {
    char *name; /* the key templates use: relative to the kustomization (or as included) */
    char *data;
    size_t len;
} kg_file;

typedef struct kg_tpl {
    char *name; /* the template's name in the set (relative path, suffix included) */
    char *out;  /* the output file, relative to the kustomization (suffix stripped) */
} kg_tpl;

typedef struct kg_kust {
    char *path; /* tree path of the directory */
    kg_file *files;
    size_t nfiles;
    kg_file **sorted; /* files by name, for lookups */
    size_t *verbatim; /* indices into files */
    size_t nverbatim;
    kg_tpl *tpls;
    size_t ntpls;
    co_template_set *set;
    json_object *defaults; /* config `values`, or NULL */
} kg_kust;

struct co_kzgen {
    co_template_funcs *funcs;
    kg_kust **ks;
    size_t nks;
    /* the source tree (borrowed from co_kzgen_parse()): the bases and components the rendered
     * kustomizations refer to outside their own directories are read from it */
    const co_vfs *fs;
    co_kzgen_decrypt_fn decrypt;
    void *decrypt_ctx;
};

/* The options as the config file may change them. */
typedef struct kg_opts {
    char *suffix;
    char *left;
    char *right;
    json_object *included_files;
    json_object *included_kusts;
    json_object *values;
} kg_opts;

/* --- small helpers ------------------------------------------------------------------------- */

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static char *tree_join(const char *dir, const char *rel)
{
    return dir[0] ? co_xasprintf("%s/%s", dir, rel) : co_xstrdup(rel);
}

static int cmp_file_ptr(const void *a, const void *b)
{
    const kg_file *x = *(kg_file *const *)a;
    const kg_file *y = *(kg_file *const *)b;
    return strcmp(x->name, y->name);
}

static const kg_file *find_file(const kg_kust *k, const char *name)
{
    size_t lo = 0, hi = k->nfiles;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(k->sorted[mid]->name, name);
        if (c == 0) {
            return k->sorted[mid];
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* Adds (or replaces, as a Go map would) a readable file; takes @p data. */
static size_t add_file(kg_kust *k, const char *name, char *data, size_t len)
{
    for (size_t i = 0; i < k->nfiles; i++) {
        if (strcmp(k->files[i].name, name) == 0) {
            free(k->files[i].data);
            k->files[i].data = data;
            k->files[i].len = len;
            return i;
        }
    }
    k->files = co_xreallocarray(k->files, k->nfiles + 1, sizeof *k->files);
    k->files[k->nfiles] = (kg_file){co_xstrdup(name), data, len};
    return k->nfiles++;
}

static void kust_free(kg_kust *k)
{
    if (!k) {
        return;
    }
    for (size_t i = 0; i < k->nfiles; i++) {
        free(k->files[i].name);
        free(k->files[i].data);
    }
    for (size_t i = 0; i < k->ntpls; i++) {
        free(k->tpls[i].name);
        free(k->tpls[i].out);
    }
    free(k->files);
    free(k->sorted);
    free(k->verbatim);
    free(k->tpls);
    co_template_set_free(k->set);
    json_object_put(k->defaults);
    free(k->path);
    free(k);
}

void co_kzgen_free(co_kzgen *g)
{
    if (!g) {
        return;
    }
    for (size_t i = 0; i < g->nks; i++) {
        kust_free(g->ks[i]);
    }
    free(g->ks);
    co_template_funcs_free(g->funcs);
    free(g);
}

/* Reads one file of the source tree, decrypting it through the caller's hook. */
static int read_source(char **out,
                       size_t *len_out,
                       const co_vfs *fs,
                       const char *path,
                       const co_kzgen_options *o)
{
    char *data = NULL;
    size_t len = 0;
    int rc = co_vfs_read(&data, &len, fs, path);
    if (rc < 0) {
        return co_error_wrap("%s", path);
    }
    /* the file stays in memory for the whole render */
    if (co_budget_charge(len) < 0) {
        free(data);
        return co_error_wrap("%s", path);
    }
    if (o && o->decrypt) {
        char *plain = NULL;
        size_t plen = 0;
        rc = o->decrypt(o->decrypt_ctx, &plain, &plen, path, data, len);
        if (rc < 0) {
            free(data);
            return co_error_wrap("decrypting %s", path);
        }
        if (plain) {
            free(data);
            data = plain;
            len = plen;
        }
    }
    *out = data;
    *len_out = len;
    return 0;
}

/* --- .component-config.yaml ---------------------------------------------------------------- */

static void opts_dispose(kg_opts *o)
{
    free(o->suffix);
    free(o->left);
    free(o->right);
    json_object_put(o->included_files);
    json_object_put(o->included_kusts);
    json_object_put(o->values);
    memset(o, 0, sizeof *o);
}

/* The Go original decodes the file into a struct through encoding/json, whose field matching
 * ignores case; unknown fields are ignored. */
static int config_string(char **dst, json_object *v, const char *file, const char *key)
{
    if (v == NULL) {
        return 0; /* null leaves the option as it is */
    }
    if (!json_object_is_type(v, json_type_string)) {
        return co_error_set(CO_EINVALID, "%s: %s must be a string, not %s", file, key,
                            co_json_type_name(v));
    }
    free(*dst);
    *dst = co_xstrdup(json_object_get_string(v));
    return 0;
}

static int config_list(json_object **dst, json_object *v, const char *file, const char *key)
{
    if (v == NULL) {
        return 0;
    }
    if (!json_object_is_type(v, json_type_array)) {
        return co_error_set(CO_EINVALID, "%s: %s must be a list of paths, not %s", file, key,
                            co_json_type_name(v));
    }
    for (size_t i = 0; i < json_object_array_length(v); i++) {
        json_object *e = json_object_array_get_idx(v, i);
        if (!json_object_is_type(e, json_type_string) || !json_object_get_string_len(e)) {
            return co_error_set(CO_EINVALID, "%s: %s[%zu] must be a non-empty string", file, key,
                                i);
        }
    }
    json_object_put(*dst);
    *dst = json_object_get(v);
    return 0;
}

static int read_config(kg_opts *o, const co_vfs *fs, const char *dir)
{
    char *path = tree_join(dir, CONFIG_FILE);
    if (co_vfs_stat(fs, path) != CO_VFS_FILE) {
        free(path);
        return 0;
    }
    char *data = NULL;
    size_t len = 0;
    int rc = co_vfs_read(&data, &len, fs, path);
    if (rc == 0 && len > CO_MAX_CONFIG_FILE) {
        rc = co_error_set(CO_ETOOBIG, "%s is larger than %zu bytes", path,
                          (size_t)CO_MAX_CONFIG_FILE);
    }
    json_object *cfg = NULL;
    if (rc == 0 && (rc = co_yaml_parse(&cfg, data, len, 0)) < 0) {
        co_error_wrap("%s", path);
    }
    free(data);
    if (rc == 0 && cfg && !json_object_is_type(cfg, json_type_object)) {
        rc =
            co_error_set(CO_EINVALID, "%s must be a mapping, not %s", path, co_json_type_name(cfg));
    }
    if (rc == 0 && cfg) {
        json_object_object_foreach (cfg, key, v) {
            if (strcasecmp(key, "templateSuffix") == 0) {
                rc = config_string(&o->suffix, v, path, key);
            } else if (strcasecmp(key, "leftTemplateDelimiter") == 0) {
                rc = config_string(&o->left, v, path, key);
            } else if (strcasecmp(key, "rightTemplateDelimiter") == 0) {
                rc = config_string(&o->right, v, path, key);
            } else if (strcasecmp(key, "includedFiles") == 0) {
                rc = config_list(&o->included_files, v, path, key);
            } else if (strcasecmp(key, "includedKustomizations") == 0) {
                rc = config_list(&o->included_kusts, v, path, key);
            } else if (strcasecmp(key, "values") == 0) {
                if (v && !json_object_is_type(v, json_type_object)) {
                    rc = co_error_set(CO_EINVALID, "%s: %s must be a mapping, not %s", path, key,
                                      co_json_type_name(v));
                } else {
                    json_object_put(o->values);
                    o->values = json_object_get(v);
                }
            }
            if (rc < 0) {
                break;
            }
        }
    }
    json_object_put(cfg);
    free(path);
    return rc;
}

/* --- parsing ------------------------------------------------------------------------------- */

typedef struct kg_parse {
    co_kzgen *g;
    const co_vfs *fs;
    const co_kzgen_options *o;
    char **visited;
    size_t nvisited;
    size_t files; /* files read in total, against CO_MAX_SOURCE_FILES */
} kg_parse;

static int parse_kust(kg_parse *p, const char *path, const co_kzgen_options *base, int depth);

static int count_file(kg_parse *p)
{
    if (++p->files > CO_MAX_SOURCE_FILES) {
        return co_error_set(CO_ETOOBIG, "the source has more than %zu files",
                            (size_t)CO_MAX_SOURCE_FILES);
    }
    return 0;
}

static int include_files(kg_parse *p, kg_kust *k, json_object *list)
{
    for (size_t i = 0; list && i < json_object_array_length(list); i++) {
        const char *rel = json_object_get_string(json_object_array_get_idx(list, i));
        char *abs = NULL;
        if (rel[0] == '/') {
            return co_error_set(CO_EINVALID,
                                "includedFiles[%zu]: include path (%s) must be relative", i, rel);
        }
        if (co_vfs_join(&abs, k->path, rel) < 0) {
            return co_error_set(CO_EINVALID,
                                "includedFiles[%zu]: include path (%s) lies outside the source", i,
                                rel);
        }
        int rc = 0;
        co_vfs_type t = co_vfs_stat(p->fs, abs);
        if (co_vfs_is_within(abs, k->path)) {
            rc = co_error_set(CO_EINVALID,
                              "includedFiles[%zu]: include path (%s) must not be in the "
                              "kustomization path (%s)",
                              i, rel, k->path[0] ? k->path : ".");
        } else if (t == CO_VFS_FILE) {
            char *data = NULL;
            size_t len = 0;
            if ((rc = count_file(p)) == 0 &&
                (rc = read_source(&data, &len, p->fs, abs, p->o)) == 0) {
                add_file(k, rel, data, len);
            }
        } else if (t == CO_VFS_DIR) {
            char **all = NULL;
            size_t n = 0;
            rc = co_vfs_walk(&all, &n, p->fs, abs);
            size_t skip = strlen(abs) + (abs[0] ? 1 : 0);
            size_t rl = strlen(rel);
            while (rl > 1 && rel[rl - 1] == '/') {
                rl--;
            }
            for (size_t j = 0; rc == 0 && j < n; j++) {
                char *data = NULL;
                size_t len = 0;
                if ((rc = count_file(p)) < 0 ||
                    (rc = read_source(&data, &len, p->fs, all[j], p->o)) < 0) {
                    break;
                }
                char *key = co_xasprintf("%.*s/%s", (int)rl, rel, all[j] + skip);
                add_file(k, key, data, len);
                free(key);
            }
            co_vfs_strv_free(all);
        } else {
            rc = co_error_set(CO_ENOTFOUND, "includedFiles[%zu]: no such file or directory: %s", i,
                              rel);
        }
        free(abs);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

static int include_kusts(kg_parse *p, kg_kust *k, json_object *list, int depth)
{
    for (size_t i = 0; list && i < json_object_array_length(list); i++) {
        const char *rel = json_object_get_string(json_object_array_get_idx(list, i));
        char *abs = NULL;
        if (rel[0] == '/') {
            return co_error_set(CO_EINVALID,
                                "includedKustomizations[%zu]: include path (%s) must be relative",
                                i, rel);
        }
        if (co_vfs_join(&abs, k->path, rel) < 0) {
            return co_error_set(
                CO_EINVALID,
                "includedKustomizations[%zu]: include path (%s) lies outside the source", i, rel);
        }
        int rc = 0;
        if (co_vfs_is_within(abs, k->path)) {
            rc = co_error_set(CO_EINVALID,
                              "includedKustomizations[%zu]: include path (%s) must not be in the "
                              "kustomization path (%s)",
                              i, rel, k->path[0] ? k->path : ".");
        } else {
            /* an included kustomization has its own options; only the decryption carries over */
            co_kzgen_options inner = {0};
            inner.decrypt = p->o ? p->o->decrypt : NULL;
            inner.decrypt_ctx = p->o ? p->o->decrypt_ctx : NULL;
            rc = parse_kust(p, abs, &inner, depth + 1);
            if (rc < 0) {
                co_error_wrap("includedKustomizations[%zu] (%s)", i, rel);
            }
        }
        free(abs);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

static int parse_templates(kg_parse *p, kg_kust *k, const kg_opts *o)
{
    co_ignore *ig = NULL;
    char *igpath = tree_join(k->path, IGNORE_FILE);
    int rc = 0;
    if (co_vfs_stat(p->fs, igpath) == CO_VFS_FILE) {
        char *text = NULL;
        size_t len = 0;
        rc = co_vfs_read(&text, &len, p->fs, igpath);
        if (rc == 0) {
            rc = co_ignore_parse(&ig, text, len);
        }
        if (rc < 0) {
            co_error_wrap("%s", igpath);
        }
        free(text);
    }
    free(igpath);
    if (rc < 0) {
        return rc;
    }
    co_template_options topts = {0};
    topts.left_delim = o->left;
    topts.right_delim = o->right;
    topts.missingkey = CO_TEMPLATE_MISSINGKEY_ZERO;
    co_template_set_new(&k->set, p->g->funcs, &topts);

    char **all = NULL;
    size_t n = 0;
    rc = co_vfs_walk(&all, &n, p->fs, k->path);
    if (rc < 0) {
        co_ignore_free(ig);
        return co_error_wrap("%s", k->path[0] ? k->path : ".");
    }
    size_t skip = strlen(k->path) + (k->path[0] ? 1 : 0);
    const char *suffix = o->suffix ? o->suffix : "";
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *name = all[i] + skip;
        char *data = NULL;
        size_t len = 0;
        if ((rc = count_file(p)) < 0 || (rc = read_source(&data, &len, p->fs, all[i], p->o)) < 0) {
            break;
        }
        size_t idx = add_file(k, name, data, len);
        const char *base = base_name(name);
        if (strcmp(base, CONFIG_FILE) == 0 || strcmp(base, IGNORE_FILE) == 0 ||
            (ig && co_ignore_match(ig, name, 0))) {
            continue;
        }
        if (has_suffix(name, suffix)) {
            rc = co_template_set_parse(k->set, name, k->files[idx].data, k->files[idx].len);
            if (rc == 0) {
                k->tpls = co_xreallocarray(k->tpls, k->ntpls + 1, sizeof *k->tpls);
                k->tpls[k->ntpls].name = co_xstrdup(name);
                k->tpls[k->ntpls].out = co_xstrndup(name, strlen(name) - strlen(suffix));
                k->ntpls++;
            }
        } else {
            k->verbatim = co_xreallocarray(k->verbatim, k->nverbatim + 1, sizeof *k->verbatim);
            k->verbatim[k->nverbatim++] = idx;
        }
    }
    co_vfs_strv_free(all);
    co_ignore_free(ig);
    return rc;
}

static int parse_kust(kg_parse *p, const char *path, const co_kzgen_options *base, int depth)
{
    if (depth > CO_MAX_KUSTOMIZE_DEPTH) {
        return co_error_set(CO_ETOOBIG, "included kustomizations nest deeper than %d",
                            CO_MAX_KUSTOMIZE_DEPTH);
    }
    for (size_t i = 0; i < p->nvisited; i++) {
        if (co_vfs_is_within(path, p->visited[i])) {
            return co_error_set(CO_EINVALID, "path %s part of another referenced kustomization",
                                path[0] ? path : ".");
        }
    }
    co_vfs_type t = co_vfs_stat(p->fs, path);
    if (t == CO_VFS_NONE) {
        return co_error_set(CO_ENOTFOUND, "no such file or directory: %s", path[0] ? path : ".");
    }
    if (t != CO_VFS_DIR) {
        return co_error_set(CO_EINVALID, "path %s is not a directory", path);
    }
    p->visited = co_xreallocarray(p->visited, p->nvisited + 1, sizeof *p->visited);
    p->visited[p->nvisited++] = co_xstrdup(path);

    kg_opts o = {0};
    if (base) {
        o.suffix = co_xstrdup(base->template_suffix);
        o.left = co_xstrdup(base->left_delim);
        o.right = co_xstrdup(base->right_delim);
    }
    kg_kust *k = co_xcalloc(1, sizeof *k);
    k->path = co_xstrdup(path);
    co_kzgen *g = p->g;
    g->ks = co_xreallocarray(g->ks, g->nks + 1, sizeof(kg_kust *));
    g->ks[g->nks++] = k;

    int rc = read_config(&o, p->fs, path);
    if (rc == 0) {
        k->defaults = json_object_get(o.values);
        rc = parse_templates(p, k, &o);
    }
    if (rc == 0 && (rc = include_files(p, k, o.included_files)) < 0) {
        co_error_wrap("%s%s" CONFIG_FILE, path, path[0] ? "/" : "");
    }
    if (rc == 0) {
        k->sorted = co_xreallocarray(NULL, k->nfiles ? k->nfiles : 1, sizeof(kg_file *));
        for (size_t i = 0; i < k->nfiles; i++) {
            k->sorted[i] = &k->files[i];
        }
        qsort((void *)k->sorted, k->nfiles, sizeof(kg_file *), cmp_file_ptr);
        if ((rc = include_kusts(p, k, o.included_kusts, depth)) < 0) {
            co_error_wrap("%s%s" CONFIG_FILE, path, path[0] ? "/" : "");
        }
    }
    opts_dispose(&o);
    return rc;
}

/* --- template functions -------------------------------------------------------------------- */

typedef struct kg_render {
    const kg_kust *k;
    const co_kzgen_context *c;
    /* co_kzgen_context.discover's answers, asked on first use */
    bool asked;
    int asked_rc;
    char *asked_error;
    const json_object *server_version;
    const json_object *api_resources;
} kg_render;

/* The cluster's version.Info and APIResourceList array for template functions: the context's,
 * or asked through its discover once per render (its failure fails every call that needs it,
 * each with its message). */
static int cluster_facts(kg_render *r, const json_object **version, const json_object **resources)
{
    *version = NULL;
    *resources = NULL;
    if (!r->c) {
        return 0;
    }
    if (!r->c->discover) {
        *version = r->c->server_version;
        *resources = r->c->api_resources;
        return 0;
    }
    if (!r->asked) {
        r->asked = true;
        r->asked_rc = r->c->discover(r->c->discover_ctx, &r->server_version, &r->api_resources);
        if (r->asked_rc < 0) {
            r->asked_error = co_xstrdup(co_error_last());
        }
    }
    if (r->asked_rc < 0) {
        return co_error_set(r->asked_rc, "%s", r->asked_error);
    }
    *version = r->server_version;
    *resources = r->api_resources;
    return 0;
}

static int want_string(const char **out, json_object *const *args, size_t i, const char *fn)
{
    if (!args[i] || !json_object_is_type(args[i], json_type_string)) {
        return co_error_set(CO_EINVALID, "%s: argument %zu must be a string, not %s", fn, i + 1,
                            args[i] ? co_json_type_name(args[i]) : "nil");
    }
    *out = json_object_get_string(args[i]);
    CO_ASSERT(*out != NULL);
    return 0;
}

/* Translates a gobwas/glob pattern ('/' as separator) into a PCRE2 pattern: '*' is any run
 * without '/', '**' any run at all, '?' one character but '/', [..] / [!..] classes, {a,b}
 * alternatives, '\' escapes. */
static int glob_to_regex(co_buf *re, const char *pat)
{
    int depth = 0;
    int rc = co_buf_puts(re, "\\A(?:");
    for (const char *s = pat; *s && rc == 0; s++) {
        char c = *s;
        if (c == '*') {
            if (s[1] == '*') {
                rc = co_buf_puts(re, ".*");
                s++;
            } else {
                rc = co_buf_puts(re, "[^/]*");
            }
        } else if (c == '?') {
            rc = co_buf_puts(re, "[^/]");
        } else if (c == '[') {
            const char *e = strchr(s + 1, ']');
            if (!e || e == s + 1) {
                return co_error_set(CO_EINVALID, "unterminated character class in '%s'", pat);
            }
            rc = co_buf_puts(re, "[");
            s++;
            if (*s == '!') {
                rc = rc ? rc : co_buf_puts(re, "^");
                s++;
            }
            for (; s < e && rc == 0; s++) {
                if (*s == '\\' || *s == '[' || *s == '^') {
                    rc = co_buf_putc(re, '\\');
                }
                rc = rc ? rc : co_buf_putc(re, *s);
            }
            rc = rc ? rc : co_buf_puts(re, "]");
            s = e;
        } else if (c == '{') {
            depth++;
            rc = co_buf_puts(re, "(?:");
        } else if (c == '}' && depth > 0) {
            depth--;
            rc = co_buf_puts(re, ")");
        } else if (c == ',' && depth > 0) {
            rc = co_buf_puts(re, "|");
        } else {
            if (c == '\\') {
                if (!s[1]) {
                    return co_error_set(CO_EINVALID, "trailing escape in '%s'", pat);
                }
                c = *++s;
            }
            if (strchr("\\^$.|?*+()[]{}", c)) {
                rc = co_buf_putc(re, '\\');
            }
            rc = rc ? rc : co_buf_putc(re, c);
        }
    }
    if (depth) {
        return co_error_set(CO_EINVALID, "unterminated '{' in '%s'", pat);
    }
    rc = rc ? rc : co_buf_puts(re, ")\\z");
    return rc < 0 ? co_error_set(CO_ETOOBIG, "pattern too long") : 0;
}

static int fn_list_files(void *ctx, json_object **out, json_object *const *args, size_t nargs)
{
    (void)nargs;
    const kg_render *r = ctx;
    const char *pat = NULL;
    int rc = want_string(&pat, args, 0, "listFiles");
    if (rc < 0) {
        return rc;
    }
    co_buf re = CO_BUF_INIT(64 * CO_KIB);
    if ((rc = glob_to_regex(&re, pat)) < 0) {
        co_buf_dispose(&re);
        return rc;
    }
    int err = 0;
    PCRE2_SIZE off = 0;
    pcre2_code *code =
        pcre2_compile((PCRE2_SPTR)co_buf_cstr(&re), re.len, PCRE2_DOTALL, &err, &off, NULL);
    co_buf_dispose(&re);
    if (!code) {
        return co_error_set(CO_EINVALID, "listFiles: invalid pattern '%s'", pat);
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    pcre2_set_match_limit(mc, 1000000);
    json_object *res = json_object_new_array();
    for (size_t i = 0; i < r->k->nfiles && rc == 0; i++) {
        const char *name = r->k->sorted[i]->name;
        int m = pcre2_match(code, (PCRE2_SPTR)name, strlen(name), 0, 0, md, mc);
        if (m >= 0) {
            json_object_array_add(res, json_object_new_string(name));
        } else if (m != PCRE2_ERROR_NOMATCH) {
            rc = co_error_set(CO_ETOOBIG, "listFiles: pattern '%s' is too complex", pat);
        }
    }
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
    pcre2_code_free(code);
    if (rc < 0) {
        json_object_put(res);
        return rc;
    }
    *out = res;
    return 0;
}

static int fn_exists_file(void *ctx, json_object **out, json_object *const *args, size_t nargs)
{
    (void)nargs;
    const kg_render *r = ctx;
    const char *path = NULL;
    int rc = want_string(&path, args, 0, "existsFile");
    if (rc < 0) {
        return rc;
    }
    *out = json_object_new_boolean(find_file(r->k, path) != NULL);
    return 0;
}

static int fn_read_file(void *ctx, json_object **out, json_object *const *args, size_t nargs)
{
    (void)nargs;
    const kg_render *r = ctx;
    const char *path = NULL;
    int rc = want_string(&path, args, 0, "readFile");
    if (rc < 0) {
        return rc;
    }
    const kg_file *f = find_file(r->k, path);
    if (!f) {
        return co_error_set(CO_ENOTFOUND, "open %s: file does not exist", path);
    }
    *out = json_object_new_string_len(f->data, (int)f->len);
    return 0;
}

/* Copies a JSON object with Go field names: the first letter upper-cased (apiVersion →
 * APIVersion, uid → UID); maps with arbitrary keys keep theirs. `metadata` becomes ObjectMeta,
 * and its fields are promoted to the top level as Go's embedding does. */
static int is_map_field(const char *k)
{
    static const char *const maps[] = {"labels", "annotations", "values",     "substitute",
                                       "data",   "stringData",  "matchLabels"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(maps); i++) {
        if (strcmp(k, maps[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

static char *go_name(const char *k)
{
    if (strcmp(k, "apiVersion") == 0) {
        return co_xstrdup("APIVersion");
    }
    if (strcmp(k, "uid") == 0) {
        return co_xstrdup("UID");
    }
    char *s = co_xstrdup(k);
    if (s[0] >= 'a' && s[0] <= 'z') {
        s[0] = (char)(s[0] - 'a' + 'A');
    }
    return s;
}

static json_object *go_case(const json_object *v, int depth)
{
    json_object *o = (json_object *)v;
    if (depth > CO_MAX_NESTING) {
        return NULL;
    }
    if (json_object_is_type(o, json_type_array)) {
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < json_object_array_length(o); i++) {
            json_object_array_add(a, go_case(json_object_array_get_idx(o, i), depth + 1));
        }
        return a;
    }
    if (!json_object_is_type(o, json_type_object)) {
        return co_json_copy(o);
    }
    json_object *res = json_object_new_object();
    json_object_object_foreach (o, k, val) {
        char *gk = strcmp(k, "metadata") == 0 && depth == 0 ? co_xstrdup("ObjectMeta") : go_name(k);
        json_object *cv = is_map_field(k) ? co_json_copy(val) : go_case(val, depth + 1);
        if (depth == 0 && strcmp(k, "metadata") == 0 && json_object_is_type(cv, json_type_object)) {
            json_object_object_foreach (cv, mk, mv) {
                json_object_object_add(res, mk, json_object_get(mv));
            }
        }
        json_object_object_add(res, gk, cv);
        free(gk);
    }
    return res;
}

static int fn_component(void *ctx, json_object **out, json_object *const *args, size_t nargs)
{
    (void)args;
    (void)nargs;
    const kg_render *r = ctx;
    *out = r->c && r->c->component ? go_case(r->c->component, 0) : NULL;
    return 0;
}

static int fn_component_digest(void *ctx, json_object **out, json_object *const *a, size_t n)
{
    (void)a;
    (void)n;
    const kg_render *r = ctx;
    *out = json_object_new_string(r->c && r->c->component_digest ? r->c->component_digest : "");
    return 0;
}

static int fn_component_revision(void *ctx, json_object **out, json_object *const *a, size_t n)
{
    (void)a;
    (void)n;
    const kg_render *r = ctx;
    *out = json_object_new_int64(r->c ? r->c->component_revision : 0);
    return 0;
}

static int fn_namespace(void *ctx, json_object **out, json_object *const *a, size_t n)
{
    (void)a;
    (void)n;
    const kg_render *r = ctx;
    *out = json_object_new_string(r->c && r->c->namespace ? r->c->namespace : "");
    return 0;
}

static int fn_name(void *ctx, json_object **out, json_object *const *a, size_t n)
{
    (void)a;
    (void)n;
    const kg_render *r = ctx;
    *out = json_object_new_string(r->c && r->c->name ? r->c->name : "");
    return 0;
}

static int fn_kubernetes_version(void *ctx, json_object **out, json_object *const *a, size_t n)
{
    (void)a;
    (void)n;
    const json_object *version = NULL, *resources = NULL;
    int rc = cluster_facts(ctx, &version, &resources);
    if (rc < 0) {
        return rc;
    }
    *out = version ? go_case(version, 1) : NULL;
    return 0;
}

static const char *field_str(json_object *o, const char *k)
{
    const char *s = co_json_str(o, k, NULL);
    return s ? s : "";
}

static int cmp_group_version(const void *a, const void *b)
{
    return strcmp(field_str(*(json_object *const *)a, "GroupVersion"),
                  field_str(*(json_object *const *)b, "GroupVersion"));
}

static int cmp_resource_name(const void *a, const void *b)
{
    return strcmp(field_str(*(json_object *const *)a, "Name"),
                  field_str(*(json_object *const *)b, "Name"));
}

static int cmp_json_string(const void *a, const void *b)
{
    return strcmp(json_object_get_string(*(json_object *const *)a),
                  json_object_get_string(*(json_object *const *)b));
}

static void sort_strings(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_array)) {
        json_object_array_sort(v, cmp_json_string);
    }
}

static int fn_api_resources(void *ctx, json_object **out, json_object *const *a, size_t n)
{
    (void)a;
    (void)n;
    const json_object *version = NULL, *src = NULL;
    int rc = cluster_facts(ctx, &version, &src);
    if (rc < 0) {
        return rc;
    }
    json_object *lists = src && json_object_is_type((json_object *)src, json_type_array)
                             ? go_case(src, 1)
                             : json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(lists); i++) {
        json_object *l = json_object_array_get_idx(lists, i);
        json_object *res = NULL;
        /* APIResourceList.resources is the Go field APIResources */
        if (json_object_object_get_ex(l, "Resources", &res)) {
            json_object_object_add(l, "APIResources", json_object_get(res));
            json_object_object_del(l, "Resources");
        }
        if (json_object_object_get_ex(l, "APIResources", &res) &&
            json_object_is_type(res, json_type_array)) {
            json_object_array_sort(res, cmp_resource_name);
            for (size_t j = 0; j < json_object_array_length(res); j++) {
                json_object *e = json_object_array_get_idx(res, j);
                sort_strings(e, "Verbs");
                sort_strings(e, "ShortNames");
                sort_strings(e, "Categories");
            }
        }
    }
    json_object_array_sort(lists, cmp_group_version);
    *out = lists;
    return 0;
}

/* The lookup family: which cluster, whether 404 is an error, and whether it lists. */
typedef struct kg_lookup_kind {
    co_kzgen_cluster_kind cluster;
    int must;
    int list;
} kg_lookup_kind;

static int do_lookup(const kg_render *r,
                     const char *fn,
                     kg_lookup_kind kind,
                     json_object **out,
                     json_object *const *args,
                     size_t nargs)
{
    const char *s[5] = {NULL, NULL, NULL, NULL, NULL};
    for (size_t i = 0; i < nargs && i < 5; i++) {
        int rc = want_string(&s[i], args, i, fn);
        if (rc < 0) {
            return rc;
        }
    }
    const co_kzgen_context *c = r->c;
    const char *kubeconfig = kind.cluster == CO_KZGEN_KUBECONFIG ? s[4] : NULL;
    json_object *res = NULL;
    int rc = 0;
    if (kind.list) {
        if (!c || !c->lookup_list) {
            return co_error_set(CO_EUNSUPPORTED, "%s: no cluster access", fn);
        }
        rc = c->lookup_list(c->cluster_ctx, &res, kind.cluster, kubeconfig, s[0], s[1], s[2], s[3]);
    } else {
        if (!c || !c->lookup) {
            return co_error_set(CO_EUNSUPPORTED, "%s: no cluster access", fn);
        }
        rc = c->lookup(c->cluster_ctx, &res, kind.cluster, kubeconfig, s[0], s[1], s[2], s[3]);
    }
    if (rc < 0) {
        return co_error_wrap("%s", fn);
    }
    if (!res) {
        if (kind.must) {
            return co_error_set(CO_ENOTFOUND, "%s: %s %s %s%s%s not found", fn, s[0], s[1],
                                s[2] && s[2][0] ? s[2] : "", s[2] && s[2][0] ? "/" : "", s[3]);
        }
        res = json_object_new_object();
    }
    *out = res;
    return 0;
}

#define KG_LOOKUP(fname, gname, cl, must_, list_)                                                  \
    static int fname(void *ctx, json_object **out, json_object *const *args, size_t nargs)         \
    {                                                                                              \
        kg_lookup_kind kind = {cl, must_, list_};                                                  \
        return do_lookup(ctx, gname, kind, out, args, nargs);                                      \
    }

KG_LOOKUP(fn_lookup, "lookup", CO_KZGEN_TARGET, 0, 0)
KG_LOOKUP(fn_must_lookup, "mustLookup", CO_KZGEN_TARGET, 1, 0)
KG_LOOKUP(fn_lookup_list, "lookupList", CO_KZGEN_TARGET, 0, 1)
KG_LOOKUP(fn_local_lookup, "localLookup", CO_KZGEN_LOCAL, 0, 0)
KG_LOOKUP(fn_must_local_lookup, "mustLocalLookup", CO_KZGEN_LOCAL, 1, 0)
KG_LOOKUP(fn_local_lookup_list, "localLookupList", CO_KZGEN_LOCAL, 0, 1)
KG_LOOKUP(fn_lookup_kc, "lookupWithKubeConfig", CO_KZGEN_KUBECONFIG, 0, 0)
KG_LOOKUP(fn_must_lookup_kc, "mustLookupWithKubeConfig", CO_KZGEN_KUBECONFIG, 1, 0)
KG_LOOKUP(fn_lookup_list_kc, "lookupListWithKubeConfig", CO_KZGEN_KUBECONFIG, 0, 1)

static int make_funcs(co_template_funcs **out, unsigned extra)
{
    static const struct {
        const char *name;
        int nargs;
        co_template_func_cb cb;
    } fns[] = {
        {"listFiles", 1, fn_list_files},
        {"existsFile", 1, fn_exists_file},
        {"readFile", 1, fn_read_file},
        {"component", 0, fn_component},
        {"componentDigest", 0, fn_component_digest},
        {"componentRevision", 0, fn_component_revision},
        {"namespace", 0, fn_namespace},
        {"name", 0, fn_name},
        {"kubernetesVersion", 0, fn_kubernetes_version},
        {"apiResources", 0, fn_api_resources},
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
    co_template_funcs *f = NULL;
    co_template_funcs_new(&f, CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_RUNTIME |
                                  (extra & (CO_TEMPLATE_FUNCS_ENV | CO_TEMPLATE_FUNCS_DNS)));
    for (size_t i = 0; i < CO_ARRAY_SIZE(fns); i++) {
        int rc = co_template_funcs_add(f, fns[i].name, fns[i].nargs, CO_TEMPLATE_NUMBERS_INT64,
                                       fns[i].cb);
        if (rc < 0) {
            co_template_funcs_free(f);
            return rc;
        }
    }
    *out = f;
    return 0;
}

/* --- public API ---------------------------------------------------------------------------- */

int co_kzgen_parse(co_kzgen **out, const co_vfs *fs, const char *path, const co_kzgen_options *opts)
{
    char *clean = NULL;
    if (co_vfs_join(&clean, "", path && path[0] ? path : ".") < 0) {
        return co_error_set(CO_EINVALID, "path %s lies outside the source", path);
    }
    co_kzgen *g = co_xcalloc(1, sizeof *g);
    int rc = make_funcs(&g->funcs, opts ? opts->extra_func_groups : 0);
    g->fs = fs;
    g->decrypt = opts ? opts->decrypt : NULL;
    g->decrypt_ctx = opts ? opts->decrypt_ctx : NULL;
    kg_parse p = {g, fs, opts, NULL, 0, 0};
    if (rc == 0) {
        rc = parse_kust(&p, clean, opts, 0);
    }
    for (size_t i = 0; i < p.nvisited; i++) {
        free(p.visited[i]);
    }
    free(p.visited);
    free(clean);
    if (rc < 0) {
        co_kzgen_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

static int has_kustomization(const co_vfs *tree, const char *dir)
{
    static const char *const names[] = {"kustomization.yaml", "kustomization.yml", "Kustomization"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(names); i++) {
        char *p = tree_join(dir, names[i]);
        int ok = co_vfs_stat(tree, p) == CO_VFS_FILE;
        free(p);
        if (ok) {
            return 1;
        }
    }
    return 0;
}

/* Writes a kustomization.yaml listing every .yaml/.yml file whose name does not start with a
 * dot; with none, a dummy namespace keeps kustomize from refusing an empty kustomization. */
static int generate_kustomization(co_vfs *tree, const char *dir)
{
    char **all = NULL;
    size_t n = 0;
    json_object *res = json_object_new_array();
    if (co_vfs_walk(&all, &n, tree, dir) == 0) {
        size_t skip = strlen(dir) + (dir[0] ? 1 : 0);
        for (size_t i = 0; i < n; i++) {
            const char *rel = all[i] + skip;
            if (base_name(rel)[0] != '.' && (has_suffix(rel, ".yaml") || has_suffix(rel, ".yml"))) {
                json_object_array_add(res, json_object_new_string(rel));
            }
        }
        co_vfs_strv_free(all);
    }
    json_object *k = json_object_new_object();
    json_object_object_add(k, "apiVersion",
                           json_object_new_string("kustomize.config.k8s.io/v1beta1"));
    json_object_object_add(k, "kind", json_object_new_string("Kustomization"));
    if (json_object_array_length(res)) {
        json_object_object_add(k, "resources", res);
    } else {
        json_object_put(res);
        json_object_object_add(k, "namespace", json_object_new_string("_dummy"));
    }
    char *text = co_yaml_dumps(k, 0);
    int rc = text ? 0 : CO_EINVALID;
    if (rc == 0) {
        char *p = tree_join(dir, "kustomization.yaml");
        rc = co_vfs_mem_put(tree, p, text, strlen(text));
        free(p);
    }
    free(text);
    json_object_put(k);
    return rc;
}

/* Counts @p len more bytes of rendered output against CO_MAX_KZGEN_OUTPUT; @p copy: bytes the
 * render budget has not been charged for yet (a template's output already was). */
static int count_output(size_t *total, size_t len, bool copy)
{
    *total += len;
    if (*total > CO_MAX_KZGEN_OUTPUT) {
        return co_error_set(CO_ETOOBIG, "the rendered kustomization is larger than %zu bytes",
                            (size_t)CO_MAX_KZGEN_OUTPUT);
    }
    return copy ? co_budget_charge(len) : 0;
}

static int render_kust(co_vfs *tree,
                       size_t *total,
                       const kg_kust *k,
                       const json_object *values,
                       const co_kzgen_context *ctx)
{
    int rc = 0;
    for (size_t i = 0; i < k->nverbatim && rc == 0; i++) {
        const kg_file *f = &k->files[k->verbatim[i]];
        if ((rc = count_output(total, f->len, true)) < 0) {
            break;
        }
        char *p = tree_join(k->path, f->name);
        rc = co_vfs_mem_put(tree, p, f->data, f->len);
        free(p);
    }
    if (rc < 0 || k->ntpls == 0) {
        return rc;
    }
    json_object *data = NULL;
    if (k->defaults) {
        data = co_json_copy(k->defaults);
        if (values && json_object_is_type((json_object *)values, json_type_object)) {
            co_json_merge(data, values);
        }
    } else {
        /* no values are an empty map, as the Go original's parameters are */
        data = values ? json_object_get((json_object *)values) : json_object_new_object();
    }
    kg_render r = {k, ctx};
    co_template_env env = {&r};
    co_template_session *s = NULL;
    co_template_session_new(&s, k->set, &env);
    rc = co_template_session_set_data(s, data, CO_TEMPLATE_NUMBERS_FLOAT64);
    for (size_t i = 0; i < k->ntpls && rc == 0; i++) {
        char *text = NULL;
        size_t len = 0;
        rc = co_template_session_execute(s, k->tpls[i].name, &text, &len);
        if (rc == 0 && (rc = count_output(total, len, false)) == 0) {
            len = co_template_strip_no_value(text, len);
            char *p = tree_join(k->path, k->tpls[i].out);
            rc = co_vfs_mem_put(tree, p, text, len);
            if (rc < 0) {
                co_error_wrap("%s", p);
            }
            free(p);
        }
        free(text);
    }
    co_template_session_free(s);
    free(r.asked_error);
    json_object_put(data);
    return rc;
}

int co_kzgen_render_tree(co_vfs **out,
                         char **root,
                         const co_kzgen *g,
                         const struct json_object *values,
                         const co_kzgen_context *ctx)
{
    CO_ASSERT(g != NULL && g->nks > 0);
    co_vfs *tree = co_vfs_new_mem();
    size_t total = 0;
    int rc = 0;
    for (size_t i = 0; i < g->nks && rc == 0; i++) {
        rc = render_kust(tree, &total, g->ks[i], values, ctx);
        if (rc == 0 && !has_kustomization(tree, g->ks[i]->path)) {
            rc = generate_kustomization(tree, g->ks[i]->path);
        }
    }
    if (rc < 0) {
        co_vfs_free(tree);
        return rc;
    }
    *out = tree;
    *root = co_xstrdup(g->ks[0]->path);
    return 0;
}

/* A file of the source outside the generator's kustomizations, as the build reads it. */
typedef struct kg_lower {
    const co_kzgen *g;
} kg_lower;

static int
read_lower(void *ctx, char **out, size_t *out_len, const char *path, const char *data, size_t len)
{
    const kg_lower *l = ctx;
    *out = NULL;
    /* the file stays in memory for the whole build */
    int rc = co_budget_charge(len);
    if (rc == 0 && l->g->decrypt) {
        rc = l->g->decrypt(l->g->decrypt_ctx, out, out_len, path, data, len);
        if (rc < 0) {
            co_error_wrap("decrypting %s", path);
        }
    }
    return rc;
}

int co_kzgen_render(struct json_object **out,
                    const co_kzgen *g,
                    const struct json_object *values,
                    const co_kzgen_context *ctx)
{
    co_vfs *tree = NULL;
    char *root = NULL;
    int rc = co_kzgen_render_tree(&tree, &root, g, values, ctx);
    if (rc < 0) {
        return rc;
    }
    /* The rendered directories stay as free of load restrictions as the Go original's
     * in-memory tree; what they refer to elsewhere in the source (an overlay's ../base) is read
     * from the source as it is, decrypted, under kustomize's restriction. */
    const char **own = co_xcalloc(g->nks, sizeof(char *));
    for (size_t i = 0; i < g->nks; i++) {
        own[i] = g->ks[i]->path;
    }
    kg_lower lower = {g};
    if (g->fs) {
        co_vfs_mem_set_lower(tree, g->fs, own, g->nks, read_lower, &lower);
    }
    co_kustomize_options ko = CO_KUSTOMIZE_OPTIONS_INIT;
    ko.open_dirs = own;
    ko.nopen_dirs = g->nks;
    rc = co_kustomize_build(out, tree, root, &ko);
    co_vfs_free(tree);
    free(own);
    free(root);
    return rc;
}

int co_kzgen_generate(struct json_object **out,
                      const co_vfs *fs,
                      const char *path,
                      const struct json_object *values,
                      const co_kzgen_context *ctx,
                      const co_kzgen_options *opts)
{
    co_kzgen *g = NULL;
    int rc = co_kzgen_parse(&g, fs, path, opts);
    if (rc < 0) {
        return rc;
    }
    rc = co_kzgen_render(out, g, values, ctx);
    co_kzgen_free(g);
    return rc;
}
