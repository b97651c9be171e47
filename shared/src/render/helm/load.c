/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Chart loading, as Helm's chart/loader does it: a directory (walked with .helmignore rules)
 * or a packaged .tgz becomes a list of files, which is then sorted into Chart.yaml, values,
 * schema, templates, subcharts (directories and .tgz under charts/) and plain files. Chart.yaml
 * is decoded the way encoding/json decodes it into chart.Metadata (case-insensitive keys,
 * strict types), and validated with Helm's rules. Unlike Helm, every error names the chart and
 * the field, and subcharts load in a deterministic (sorted) order.
 */
#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "co/util/path.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/render/helm.h"
#include "co/json/json.h"
#include "co/util/semver.h"
#include "co/render/vfs.h"
#include "co/json/yaml.h"
#include "helm_int.h"

/* One file of the list a chart is built from (Helm's BufferedFile). */
typedef struct bfile {
    char *name;
    char *data;
    size_t len;
} bfile;

typedef struct bfiles {
    bfile *items;
    size_t n;
    size_t cap;
} bfiles;

static void bfiles_add(bfiles *l, char *name, char *data, size_t len)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 32;
        l->items = co_xreallocarray(l->items, l->cap, sizeof(*l->items));
    }
    l->items[l->n++] = (bfile){name, data, len};
}

static void bfiles_dispose(bfiles *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].name);
        free(l->items[i].data);
    }
    free(l->items);
    *l = (bfiles){0};
}

/* Drops a leading UTF-8 byte order mark, as Helm does for every file. */
static void trim_bom(char *data, size_t *len)
{
    if (*len >= 3 && (unsigned char)data[0] == 0xEF && (unsigned char)data[1] == 0xBB &&
        (unsigned char)data[2] == 0xBF) {
        memmove(data, data + 3, *len - 3 + 1);
        *len -= 3;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Chart.yaml decoding                                                                        */
/* ------------------------------------------------------------------------------------------ */

/* Where decoding is, for messages: "Chart.yaml: dependencies[1].alias". */
typedef struct dctx {
    const char *file;
} dctx;

static int type_error(const dctx *d, const char *field, const char *want, struct json_object *v)
{
    return co_error_set(CO_EINVALID, "%s: field %s: expected %s, got %s", d->file, field, want,
                        co_json_type_name(v));
}

/* Go's strconv.FormatFloat(f, 'g', -1, 32): the shortest digits that read back as the same
 * float32, in %e form when the exponent is below -4 or at least 6 (the threshold Go uses for
 * the shortest form). */
static char *go_float32(double d)
{
    float f = (float)d;
    if (f != f) {
        return co_xstrdup("NaN");
    }
    if (f > 3.4028235e38f || f < -3.4028235e38f) {
        return co_xstrdup(f > 0 ? "+Inf" : "-Inf");
    }
    if (f == 0) {
        return co_xstrdup(signbit(f) ? "-0" : "0");
    }
    char digits[64];
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(digits, sizeof(digits), "%.*e", prec - 1, (double)f);
        if (strtof(digits, NULL) == f) {
            break;
        }
    }
    char mant[32];
    size_t nm = 0;
    bool neg = digits[0] == '-';
    const char *p = digits + (neg ? 1 : 0);
    for (; *p && *p != 'e'; p++) {
        if (*p != '.') {
            mant[nm++] = *p;
        }
    }
    mant[nm] = '\0';
    int exp = (int)strtol(p + 1, NULL, 10);
    while (nm > 1 && mant[nm - 1] == '0') {
        mant[--nm] = '\0';
    }
    char out[80];
    size_t o = 0;
    if (neg) {
        out[o++] = '-';
    }
    if (exp < -4 || exp >= 6) {
        out[o++] = mant[0];
        if (nm > 1) {
            out[o++] = '.';
            memcpy(out + o, mant + 1, nm - 1);
            o += nm - 1;
        }
        snprintf(out + o, sizeof(out) - o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        return co_xstrdup(out);
    }
    if (exp < 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = -1; i > exp; i--) {
            out[o++] = '0';
        }
        memcpy(out + o, mant, nm);
        o += nm;
    } else {
        for (int i = 0; i <= exp || i < (int)nm; i++) {
            if (i == exp + 1) {
                out[o++] = '.';
            }
            out[o++] = i < (int)nm ? mant[i] : '0';
        }
    }
    out[o] = '\0';
    return co_xstrdup(out);
}

char *co_helm__scalar_string(const struct json_object *v)
{
    if (json_object_is_type(v, json_type_string)) {
        return co_xstrdup(json_object_get_string((struct json_object *)v));
    }
    if (json_object_is_type(v, json_type_boolean)) {
        return co_xstrdup(json_object_get_boolean(v) ? "true" : "false");
    }
    if (json_object_is_type(v, json_type_int)) {
        if (json_object_get_int64(v) == INT64_MAX) {
            return co_xasprintf("%llu", (unsigned long long)json_object_get_uint64(v));
        }
        return co_xasprintf("%lld", (long long)json_object_get_int64(v));
    }
    if (json_object_is_type(v, json_type_double)) {
        return go_float32(json_object_get_double(v));
    }
    return NULL;
}

/* A string field; null leaves it as it is (Go's decoder does). A number or a boolean becomes
 * its text, as sigs.k8s.io/yaml converts scalars for string targets (so `version: 1.10`
 * reads as "1.1", as in Helm). */
static int dec_str(const dctx *d, char **dst, const char *field, struct json_object *v)
{
    if (!v) {
        return 0;
    }
    char *s = co_helm__scalar_string(v);
    if (!s) {
        return type_error(d, field, "a string", v);
    }
    free(*dst);
    *dst = s;
    return 0;
}

static int dec_bool(const dctx *d, bool *dst, const char *field, struct json_object *v)
{
    if (!v) {
        return 0;
    }
    if (!json_object_is_type(v, json_type_boolean)) {
        return type_error(d, field, "a boolean", v);
    }
    *dst = json_object_get_boolean(v);
    return 0;
}

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i]);
    }
    free(v);
}

/* A list of strings; null makes it nil, a null element is "". */
static int dec_strv(const dctx *d,
                    char ***dst,
                    size_t *n,
                    bool *present,
                    const char *field,
                    struct json_object *v)
{
    strv_free(*dst, *n);
    *dst = NULL;
    *n = 0;
    if (present) {
        *present = false;
    }
    if (!v) {
        return 0;
    }
    if (!json_object_is_type(v, json_type_array)) {
        return type_error(d, field, "a list of strings", v);
    }
    size_t len = json_object_array_length(v);
    char **out = co_xcalloc(len + 1, sizeof(char *));
    for (size_t i = 0; i < len; i++) {
        struct json_object *e = json_object_array_get_idx(v, i);
        char *str = e ? co_helm__scalar_string(e) : co_xstrdup("");
        if (!str) {
            strv_free(out, i);
            char *f = co_xasprintf("%s[%zu]", field, i);
            int rc = type_error(d, f, "a string", e);
            free(f);
            return rc;
        }
        out[i] = str;
    }
    *dst = out;
    *n = len;
    if (present) {
        *present = true;
    }
    return 0;
}

/* Finds the struct field a JSON key sets: exact match first, then ASCII case-insensitive,
 * as encoding/json does. Returns the index or -1. */
static int field_index(const char *const *names, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], key) == 0) {
            return (int)i;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (strcasecmp(names[i], key) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static const char *const maint_fields[] = {"name", "email", "url"};

static int dec_maintainer(const dctx *d, helm_maintainer *m, const char *at, struct json_object *v)
{
    if (!json_object_is_type(v, json_type_object)) {
        return type_error(d, at, "an object", v);
    }
    json_object_object_foreach (v, key, val) {
        char *f = co_xasprintf("%s.%s", at, key);
        int rc = 0;
        switch (field_index(maint_fields, CO_ARRAY_SIZE(maint_fields), key)) {
        case 0:
            rc = dec_str(d, &m->name, f, val);
            break;
        case 1:
            rc = dec_str(d, &m->email, f, val);
            break;
        case 2:
            rc = dec_str(d, &m->url, f, val);
            break;
        default:
            break;
        }
        free(f);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

static const char *const dep_fields[] = {"name", "version", "repository",    "condition",
                                         "tags", "enabled", "import-values", "alias"};

static void dep_dispose(helm_dep *dep)
{
    free(dep->name);
    free(dep->version);
    free(dep->repository);
    free(dep->condition);
    strv_free(dep->tags, dep->ntags);
    json_object_put(dep->import_values);
    free(dep->alias);
    *dep = (helm_dep){0};
}

static int dec_dep(const dctx *d, helm_dep *dep, const char *at, struct json_object *v)
{
    if (!json_object_is_type(v, json_type_object)) {
        return type_error(d, at, "an object", v);
    }
    json_object_object_foreach (v, key, val) {
        char *f = co_xasprintf("%s.%s", at, key);
        int rc = 0;
        switch (field_index(dep_fields, CO_ARRAY_SIZE(dep_fields), key)) {
        case 0:
            rc = dec_str(d, &dep->name, f, val);
            break;
        case 1:
            rc = dec_str(d, &dep->version, f, val);
            break;
        case 2:
            rc = dec_str(d, &dep->repository, f, val);
            break;
        case 3:
            rc = dec_str(d, &dep->condition, f, val);
            break;
        case 4:
            rc = dec_strv(d, &dep->tags, &dep->ntags, NULL, f, val);
            break;
        case 5:
            rc = dec_bool(d, &dep->enabled, f, val);
            break;
        case 6:
            if (val && !json_object_is_type(val, json_type_array)) {
                rc = type_error(d, f, "a list", val);
                break;
            }
            json_object_put(dep->import_values);
            dep->import_values = json_object_get(val);
            break;
        case 7:
            rc = dec_str(d, &dep->alias, f, val);
            break;
        default:
            break;
        }
        free(f);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

static const char *const meta_fields[] = {
    "name",        "home",        "sources",     "version",      "description", "keywords",
    "maintainers", "icon",        "apiVersion",  "condition",    "tags",        "appVersion",
    "deprecated",  "annotations", "kubeVersion", "dependencies", "type"};

/* Decodes the list fields of Metadata that hold structs (null elements are remembered as
 * NULL entries, which validation rejects as Helm does). */
static int dec_maintainers(const dctx *d, helm_meta *m, struct json_object *v)
{
    for (size_t i = 0; i < m->nmaintainers; i++) {
        free(m->maintainers[i].name);
        free(m->maintainers[i].email);
        free(m->maintainers[i].url);
    }
    free(m->maintainers);
    m->maintainers = NULL;
    m->nmaintainers = 0;
    m->has_maintainers = false;
    if (!v) {
        return 0;
    }
    if (!json_object_is_type(v, json_type_array)) {
        return type_error(d, "maintainers", "a list", v);
    }
    size_t n = json_object_array_length(v);
    m->maintainers = co_xcalloc(n + 1, sizeof(*m->maintainers));
    m->nmaintainers = n;
    m->has_maintainers = true;
    for (size_t i = 0; i < n; i++) {
        struct json_object *e = json_object_array_get_idx(v, i);
        if (!e) {
            return co_error_set(CO_EINVALID,
                                "validation: maintainers must not contain empty or null nodes");
        }
        char *at = co_xasprintf("maintainers[%zu]", i);
        int rc = dec_maintainer(d, &m->maintainers[i], at, e);
        free(at);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

static int dec_deps(const dctx *d, helm_meta *m, struct json_object *v)
{
    for (size_t i = 0; i < m->ndeps; i++) {
        dep_dispose(&m->deps[i]);
    }
    free(m->deps);
    m->deps = NULL;
    m->ndeps = 0;
    m->has_deps = false;
    if (!v) {
        return 0;
    }
    if (!json_object_is_type(v, json_type_array)) {
        return type_error(d, "dependencies", "a list", v);
    }
    size_t n = json_object_array_length(v);
    m->deps = co_xcalloc(n + 1, sizeof(*m->deps));
    m->ndeps = n;
    m->has_deps = true;
    for (size_t i = 0; i < n; i++) {
        struct json_object *e = json_object_array_get_idx(v, i);
        if (!e) {
            return co_error_set(CO_EINVALID,
                                "validation: dependencies must not contain empty or null nodes");
        }
        char *at = co_xasprintf("dependencies[%zu]", i);
        int rc = dec_dep(d, &m->deps[i], at, e);
        free(at);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

static int dec_annotations(const dctx *d, helm_meta *m, struct json_object *v)
{
    json_object_put(m->annotations);
    m->annotations = NULL;
    if (!v) {
        return 0;
    }
    if (!json_object_is_type(v, json_type_object)) {
        return type_error(d, "annotations", "a map of strings", v);
    }
    struct json_object *a = json_object_new_object();
    json_object_object_foreach (v, key, val) {
        char *str = val ? co_helm__scalar_string(val) : co_xstrdup("");
        if (!str) {
            json_object_put(a);
            char *f = co_xasprintf("annotations.%s", key);
            int rc = type_error(d, f, "a string", val);
            free(f);
            return rc;
        }
        json_object_object_add(a, key, json_object_new_string(str));
        free(str);
    }
    m->annotations = a;
    return 0;
}

/* Decodes a YAML document into @p m over whatever it holds (requirements.yaml is decoded
 * into the same Metadata as Chart.yaml, as Helm does). */
static int decode_meta(helm_meta *m, const char *file, const char *data, size_t len)
{
    struct json_object *doc = NULL;
    int rc = co_yaml_parse(&doc, data, len, 0);
    if (rc < 0) {
        return co_error_wrap("%s", file);
    }
    dctx d = {file};
    if (!doc) {
        return 0;
    }
    if (!json_object_is_type(doc, json_type_object)) {
        rc = co_error_set(CO_EINVALID, "%s: expected a map, got %s", file, co_json_type_name(doc));
        goto done;
    }
    json_object_object_foreach (doc, key, v) {
        switch (field_index(meta_fields, CO_ARRAY_SIZE(meta_fields), key)) {
        case 0:
            rc = dec_str(&d, &m->name, key, v);
            break;
        case 1:
            rc = dec_str(&d, &m->home, key, v);
            break;
        case 2:
            rc = dec_strv(&d, &m->sources, &m->nsources, &m->has_sources, key, v);
            break;
        case 3:
            rc = dec_str(&d, &m->version, key, v);
            break;
        case 4:
            rc = dec_str(&d, &m->description, key, v);
            break;
        case 5:
            rc = dec_strv(&d, &m->keywords, &m->nkeywords, &m->has_keywords, key, v);
            break;
        case 6:
            rc = dec_maintainers(&d, m, v);
            break;
        case 7:
            rc = dec_str(&d, &m->icon, key, v);
            break;
        case 8:
            rc = dec_str(&d, &m->api_version, key, v);
            break;
        case 9:
            rc = dec_str(&d, &m->condition, key, v);
            break;
        case 10:
            rc = dec_str(&d, &m->tags, key, v);
            break;
        case 11:
            rc = dec_str(&d, &m->app_version, key, v);
            break;
        case 12:
            rc = dec_bool(&d, &m->deprecated, key, v);
            break;
        case 13:
            rc = dec_annotations(&d, m, v);
            break;
        case 14:
            rc = dec_str(&d, &m->kube_version, key, v);
            break;
        case 15:
            rc = dec_deps(&d, m, v);
            break;
        case 16:
            rc = dec_str(&d, &m->type, key, v);
            break;
        default:
            break;
        }
        if (rc < 0) {
            goto done;
        }
    }
done:
    json_object_put(doc);
    return rc;
}

/* Go's sanitizeString for ASCII: white space becomes ' ', other control characters go.
 * (Non-ASCII characters are kept.) */
static void sanitize(char *s)
{
    if (!s) {
        return;
    }
    char *w = s;
    for (const char *r = s; *r; r++) {
        unsigned char c = (unsigned char)*r;
        if (c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || c == ' ') {
            *w++ = ' ';
        } else if (c < 0x20 || c == 0x7f) {
            continue;
        } else {
            *w++ = (char)c;
        }
    }
    *w = '\0';
}

static bool empty(const char *s)
{
    return !s || !*s;
}

/* chart.Metadata.Validate. */
static int validate_meta(helm_meta *m)
{
    sanitize(m->name);
    sanitize(m->description);
    sanitize(m->home);
    sanitize(m->icon);
    sanitize(m->condition);
    sanitize(m->tags);
    sanitize(m->app_version);
    sanitize(m->kube_version);
    for (size_t i = 0; i < m->nsources; i++) {
        sanitize(m->sources[i]);
    }
    for (size_t i = 0; i < m->nkeywords; i++) {
        sanitize(m->keywords[i]);
    }
    if (empty(m->api_version)) {
        return co_error_set(CO_EINVALID, "validation: chart.metadata.apiVersion is required");
    }
    if (empty(m->name)) {
        return co_error_set(CO_EINVALID, "validation: chart.metadata.name is required");
    }
    if (strchr(m->name, '/') || strcmp(m->name, ".") == 0 || strcmp(m->name, "..") == 0) {
        return co_error_set(CO_EINVALID, "validation: chart.metadata.name \"%s\" is invalid",
                            m->name);
    }
    if (empty(m->version)) {
        return co_error_set(CO_EINVALID, "validation: chart.metadata.version is required");
    }
    co_semver v;
    if (co_semver_parse(&v, m->version) < 0) {
        return co_error_set(CO_EINVALID, "validation: chart.metadata.version \"%s\" is invalid",
                            m->version);
    }
    co_semver_dispose(&v);
    if (!empty(m->type) && strcmp(m->type, "application") != 0 && strcmp(m->type, "library") != 0) {
        return co_error_set(CO_EINVALID,
                            "validation: chart.metadata.type must be application or library");
    }
    for (size_t i = 0; i < m->nmaintainers; i++) {
        sanitize(m->maintainers[i].name);
        sanitize(m->maintainers[i].email);
        sanitize(m->maintainers[i].url);
    }
    for (size_t i = 0; i < m->ndeps; i++) {
        helm_dep *d = &m->deps[i];
        sanitize(d->name);
        sanitize(d->version);
        sanitize(d->repository);
        sanitize(d->condition);
        for (size_t t = 0; t < d->ntags; t++) {
            sanitize(d->tags[t]);
        }
        if (!empty(d->alias)) {
            for (const char *p = d->alias; *p; p++) {
                if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-') {
                    return co_error_set(CO_EINVALID,
                                        "validation: dependency \"%s\" has disallowed characters "
                                        "in the alias",
                                        d->name ? d->name : "");
                }
            }
        }
        const char *key = !empty(d->alias) ? d->alias : (d->name ? d->name : "");
        for (size_t j = 0; j < i; j++) {
            const helm_dep *o = &m->deps[j];
            const char *k2 = !empty(o->alias) ? o->alias : (o->name ? o->name : "");
            if (strcmp(key, k2) == 0) {
                return co_error_set(CO_EINVALID,
                                    "validation: more than one dependency with name or alias "
                                    "\"%s\"",
                                    key);
            }
        }
    }
    return 0;
}

void co_helm__meta_dispose(helm_meta *m)
{
    free(m->name);
    free(m->home);
    strv_free(m->sources, m->nsources);
    free(m->version);
    free(m->description);
    strv_free(m->keywords, m->nkeywords);
    for (size_t i = 0; i < m->nmaintainers; i++) {
        free(m->maintainers[i].name);
        free(m->maintainers[i].email);
        free(m->maintainers[i].url);
    }
    free(m->maintainers);
    free(m->icon);
    free(m->api_version);
    free(m->condition);
    free(m->tags);
    free(m->app_version);
    json_object_put(m->annotations);
    free(m->kube_version);
    for (size_t i = 0; i < m->ndeps; i++) {
        dep_dispose(&m->deps[i]);
    }
    free(m->deps);
    free(m->type);
    *m = (helm_meta){0};
}

static char **strv_copy(char *const *v, size_t n)
{
    if (!v) {
        return NULL;
    }
    char **out = co_xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        out[i] = co_xstrdup(v[i]);
    }
    return out;
}

void co_helm__meta_copy(helm_meta *dst, const helm_meta *src)
{
    *dst = *src;
    dst->name = co_xstrdup(src->name);
    dst->home = co_xstrdup(src->home);
    dst->sources = strv_copy(src->sources, src->nsources);
    dst->version = co_xstrdup(src->version);
    dst->description = co_xstrdup(src->description);
    dst->keywords = strv_copy(src->keywords, src->nkeywords);
    if (src->maintainers) {
        dst->maintainers = co_xcalloc(src->nmaintainers + 1, sizeof(*dst->maintainers));
        for (size_t i = 0; i < src->nmaintainers; i++) {
            dst->maintainers[i].name = co_xstrdup(src->maintainers[i].name);
            dst->maintainers[i].email = co_xstrdup(src->maintainers[i].email);
            dst->maintainers[i].url = co_xstrdup(src->maintainers[i].url);
        }
    }
    dst->icon = co_xstrdup(src->icon);
    dst->api_version = co_xstrdup(src->api_version);
    dst->condition = co_xstrdup(src->condition);
    dst->tags = co_xstrdup(src->tags);
    dst->app_version = co_xstrdup(src->app_version);
    dst->annotations = co_json_copy(src->annotations);
    dst->kube_version = co_xstrdup(src->kube_version);
    if (src->deps) {
        dst->deps = co_xcalloc(src->ndeps + 1, sizeof(*dst->deps));
        for (size_t i = 0; i < src->ndeps; i++) {
            const helm_dep *s = &src->deps[i];
            helm_dep *d = &dst->deps[i];
            d->name = co_xstrdup(s->name);
            d->version = co_xstrdup(s->version);
            d->repository = co_xstrdup(s->repository);
            d->condition = co_xstrdup(s->condition);
            d->tags = strv_copy(s->tags, s->ntags);
            d->ntags = s->ntags;
            d->enabled = s->enabled;
            d->import_values = co_json_copy(s->import_values);
            d->alias = co_xstrdup(s->alias);
        }
    }
    dst->type = co_xstrdup(src->type);
}

/* ------------------------------------------------------------------------------------------ */
/* From a file list to a chart (Helm's LoadFiles)                                             */
/* ------------------------------------------------------------------------------------------ */

static void chart_add_file(helm_file **v, size_t *n, const bfile *f)
{
    *v = co_xreallocarray(*v, *n + 1, sizeof(**v));
    (*v)[*n] = (helm_file){co_xstrdup(f->name), co_xmemdup(f->data, f->len + 1), f->len};
    (*n)++;
}

static void files_free(helm_file *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].data);
    }
    free(v);
}

void co_helm_chart_free(co_helm_chart *c)
{
    if (!c) {
        return;
    }
    free(c->path);
    co_helm__meta_dispose(&c->meta);
    files_free(c->templates, c->ntemplates);
    files_free(c->files, c->nfiles);
    json_object_put(c->values);
    free(c->schema);
    for (size_t i = 0; i < c->ndeps; i++) {
        co_helm_chart_free(c->deps[i]);
    }
    free(c->deps);
    free(c);
}

static int
load_archive(co_helm_chart **out, const void *data, size_t len, const char *path, int depth);

static int load_files(co_helm_chart **out, bfiles *files, const char *path, int depth);

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static const char *extension(const char *name)
{
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    const char *dot = strrchr(base, '.');
    return dot ? dot : "";
}

/* Subchart file lists, grouped by the first path component below charts/. */
typedef struct subgroup {
    char *name;
    bfiles files;
} subgroup;

static int load_files(co_helm_chart **out, bfiles *files, const char *path, int depth)
{
    int rc = 0;
    subgroup *groups = NULL;
    size_t ngroups = 0;
    if (depth > CO_MAX_HELM_CHART_DEPTH) {
        return co_error_set(CO_ETOOBIG, "chart %s: subcharts nest deeper than %d levels", path,
                            CO_MAX_HELM_CHART_DEPTH);
    }
    co_helm_chart *c = co_xcalloc(1, sizeof(*c));
    c->path = co_xstrdup(path);
    bool have_meta = false;

    for (size_t i = 0; i < files->n; i++) {
        const bfile *f = &files->items[i];
        if (strcmp(f->name, "Chart.yaml") == 0) {
            have_meta = true;
            rc = decode_meta(&c->meta, "Chart.yaml", f->data, f->len);
            if (rc < 0) {
                goto fail;
            }
            if (empty(c->meta.api_version)) {
                free(c->meta.api_version);
                c->meta.api_version = co_xstrdup("v1");
            }
        }
    }
    for (size_t i = 0; i < files->n; i++) {
        bfile *f = &files->items[i];
        bool v1 = have_meta && strcmp(c->meta.api_version, "v1") == 0;
        if (strcmp(f->name, "Chart.yaml") == 0 || strcmp(f->name, "Chart.lock") == 0 ||
            strcmp(f->name, "requirements.lock") == 0) {
            /* Lock files only matter to `helm dependency`; v1 charts still see theirs. */
            if (strcmp(f->name, "requirements.lock") == 0 && v1) {
                chart_add_file(&c->files, &c->nfiles, f);
            }
            continue;
        }
        if (strcmp(f->name, "values.yaml") == 0) {
            json_object_put(c->values);
            c->values = NULL;
            rc = co_yaml_parse(&c->values, f->data, f->len, 0);
            if (rc < 0) {
                co_error_wrap("values.yaml");
                goto fail;
            }
            if (c->values && !json_object_is_type(c->values, json_type_object)) {
                rc = co_error_set(CO_EINVALID, "values.yaml: expected a map, got %s",
                                  co_json_type_name(c->values));
                goto fail;
            }
        } else if (strcmp(f->name, "values.schema.json") == 0) {
            free(c->schema);
            c->schema = co_xmemdup(f->data, f->len + 1);
            c->schema_len = f->len;
        } else if (strcmp(f->name, "requirements.yaml") == 0) {
            rc = decode_meta(&c->meta, "requirements.yaml", f->data, f->len);
            if (rc < 0) {
                goto fail;
            }
            if (v1) {
                chart_add_file(&c->files, &c->nfiles, f);
            }
        } else if (has_prefix(f->name, "templates/")) {
            chart_add_file(&c->templates, &c->ntemplates, f);
        } else if (has_prefix(f->name, "charts/")) {
            if (strcmp(extension(f->name), ".prov") == 0) {
                chart_add_file(&c->files, &c->nfiles, f);
                continue;
            }
            const char *rest = f->name + strlen("charts/");
            const char *slash = strchr(rest, '/');
            size_t nl = slash ? (size_t)(slash - rest) : strlen(rest);
            size_t g = 0;
            while (g < ngroups &&
                   (strlen(groups[g].name) != nl || strncmp(groups[g].name, rest, nl) != 0)) {
                g++;
            }
            if (g == ngroups) {
                groups = co_xreallocarray(groups, ngroups + 1, sizeof(*groups));
                groups[ngroups] = (subgroup){co_xstrndup(rest, nl), {0}};
                ngroups++;
            }
            bfiles_add(&groups[g].files, co_xstrdup(rest), co_xmemdup(f->data, f->len + 1), f->len);
        } else {
            chart_add_file(&c->files, &c->nfiles, f);
        }
    }
    if (!have_meta) {
        rc = co_error_set(CO_EINVALID, "chart %s: Chart.yaml file is missing", path);
        goto fail;
    }
    if (!c->values) {
        c->values = json_object_new_object();
    }
    rc = validate_meta(&c->meta);
    if (rc < 0) {
        co_error_wrap("chart %s: Chart.yaml", path);
        goto fail;
    }
    if (depth == 0) {
        free(c->path);
        c->path = co_xstrdup(c->meta.name);
    }

    for (size_t g = 0; g < ngroups; g++) {
        subgroup *sg = &groups[g];
        co_helm_chart *sc = NULL;
        char *subpath = co_xasprintf("%s/charts/%s", c->path, sg->name);
        if (sg->name[0] == '_' || sg->name[0] == '.') {
            free(subpath);
            continue;
        }
        if (strcmp(extension(sg->name), ".tgz") == 0) {
            const bfile *f = &sg->files.items[0];
            if (strcmp(f->name, sg->name) != 0) {
                rc = co_error_set(CO_EINVALID,
                                  "chart %s: error unpacking subchart tar: expected %s, got %s",
                                  path, sg->name, f->name);
            } else {
                rc = load_archive(&sc, f->data, f->len, subpath, depth + 1);
            }
        } else {
            bfiles sub = {0};
            for (size_t i = 0; i < sg->files.n; i++) {
                bfile *f = &sg->files.items[i];
                const char *slash = strchr(f->name, '/');
                if (!slash) {
                    continue;
                }
                bfiles_add(&sub, co_xstrdup(slash + 1), f->data, f->len);
                f->data = NULL;
            }
            rc = load_files(&sc, &sub, subpath, depth + 1);
            bfiles_dispose(&sub);
        }
        free(subpath);
        if (rc < 0) {
            goto fail;
        }
        c->deps = co_xreallocarray(c->deps, c->ndeps + 1, sizeof(co_helm_chart *));
        c->deps[c->ndeps++] = sc;
    }
    for (size_t g = 0; g < ngroups; g++) {
        free(groups[g].name);
        bfiles_dispose(&groups[g].files);
    }
    free(groups);
    *out = c;
    return 0;

fail:
    for (size_t g = 0; g < ngroups; g++) {
        free(groups[g].name);
        bfiles_dispose(&groups[g].files);
    }
    free(groups);
    co_helm_chart_free(c);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Packaged charts                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* Reads every file of a gzip-compressed tar into @p files with Helm's path rules: the first
 * component is dropped, absolute paths and escapes are refused. */
static int read_tgz(bfiles *files, const void *data, size_t len, const char *path)
{
    int rc = 0;
    struct archive *a = archive_read_new();
    archive_read_support_filter_gzip(a);
    archive_read_support_format_tar(a);
    uint64_t total = 0;
    size_t entries = 0;
    if (archive_read_open_memory(a, data, len) != ARCHIVE_OK) {
        rc = co_error_set(CO_EINVALID, "chart %s: not a gzip-compressed tar: %s", path,
                          archive_error_string(a));
        goto done;
    }
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF) {
            break;
        }
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            rc = co_error_set(CO_EINVALID, "chart %s: corrupt archive: %s", path,
                              archive_error_string(a));
            goto done;
        }
        if (++entries > CO_MAX_EXTRACT_ENTRIES) {
            rc = co_error_set(CO_ETOOBIG, "chart %s: more than %d archive entries", path,
                              CO_MAX_EXTRACT_ENTRIES);
            goto done;
        }
        if (archive_entry_filetype(e) == AE_IFDIR) {
            continue;
        }
        const char *name = archive_entry_pathname(e);
        if (!name) {
            rc = co_error_set(CO_EINVALID, "chart %s: archive entry without a name", path);
            goto done;
        }
        if (strlen(name) > CO_MAX_EXTRACT_PATH) {
            rc = co_error_set(CO_ETOOBIG, "chart %s: archive entry name too long", path);
            goto done;
        }
        char delim = strchr(name, '\\') ? '\\' : '/';
        const char *first = strchr(name, delim);
        if (first == NULL && strcmp(name, "Chart.yaml") == 0) {
            rc = co_error_set(CO_EINVALID, "chart %s: chart yaml not in base directory", path);
            goto done;
        }
        char *rel = co_xstrdup(first ? first + 1 : "");
        for (char *p = rel; *p; p++) {
            if (*p == '\\') {
                *p = '/';
            }
        }
        if (rel[0] == '/') {
            free(rel);
            rc = co_error_set(CO_EINVALID, "chart %s: chart illegally contains absolute paths",
                              path);
            goto done;
        }
        char *clean = co_path_clean(rel);
        free(rel);
        if (strcmp(clean, ".") == 0) {
            free(clean);
            rc = co_error_set(CO_EINVALID,
                              "chart %s: chart illegally contains content outside the base "
                              "directory: \"%s\"",
                              path, name);
            goto done;
        }
        if (has_prefix(clean, "..")) {
            free(clean);
            rc = co_error_set(CO_EINVALID, "chart %s: chart illegally references parent directory",
                              path);
            goto done;
        }
        if (isalpha((unsigned char)clean[0]) && clean[1] == ':' && clean[2] == '/') {
            free(clean);
            rc = co_error_set(CO_EINVALID, "chart %s: chart contains illegally named files", path);
            goto done;
        }
        int64_t size = archive_entry_size(e);
        if (size < 0 || (uint64_t)size > CO_MAX_EXTRACT_FILE ||
            total + (uint64_t)size > CO_MAX_EXTRACT_TOTAL) {
            free(clean);
            rc = co_error_set(CO_ETOOBIG, "chart %s: archive entry %s is too large", path, name);
            goto done;
        }
        char *buf = co_xmalloc((size_t)size + 1);
        size_t got = 0;
        if (archive_entry_filetype(e) == AE_IFREG) {
            while (got < (size_t)size) {
                la_ssize_t k = archive_read_data(a, buf + got, (size_t)size - got);
                if (k < 0) {
                    free(buf);
                    free(clean);
                    rc = co_error_set(CO_EINVALID, "chart %s: corrupt archive entry %s: %s", path,
                                      name, archive_error_string(a));
                    goto done;
                }
                if (k == 0) {
                    break;
                }
                got += (size_t)k;
            }
        }
        total += got;
        buf[got] = '\0';
        trim_bom(buf, &got);
        bfiles_add(files, clean, buf, got);
    }
    if (files->n == 0) {
        rc = co_error_set(CO_EINVALID, "chart %s: no files in chart archive", path);
    }
done:
    archive_read_free(a);
    return rc;
}

static int
load_archive(co_helm_chart **out, const void *data, size_t len, const char *path, int depth)
{
    bfiles files = {0};
    int rc = read_tgz(&files, data, len, path);
    if (rc == 0) {
        rc = load_files(out, &files, path, depth);
    }
    bfiles_dispose(&files);
    return rc;
}

int co_helm_chart_load_archive(co_helm_chart **out, const void *data, size_t len)
{
    return load_archive(out, data, len, "(archive)", 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Directories and .helmignore                                                                */
/* ------------------------------------------------------------------------------------------ */

typedef struct ignore_rule {
    char *pattern;
    bool negate;
    bool must_dir;
    int kind; /* 0: base name, 1: path, 2: anchored path */
} ignore_rule;

typedef struct ignore_rules {
    ignore_rule *items;
    size_t n;
} ignore_rules;

static void rules_dispose(ignore_rules *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->items[i].pattern);
    }
    free(r->items);
    *r = (ignore_rules){0};
}

/* Helm's ignore.Rules.parseRule. */
static int rules_add(ignore_rules *r, const char *line, size_t len, int lineno)
{
    while (len > 0 && isspace((unsigned char)line[0])) {
        line++;
        len--;
    }
    while (len > 0 && isspace((unsigned char)line[len - 1])) {
        len--;
    }
    if (len == 0 || line[0] == '#') {
        return 0;
    }
    char *rule = co_xstrndup(line, len);
    if (strstr(rule, "**")) {
        int rc = co_error_set(CO_EINVALID,
                              ".helmignore:%d: double-star (**) syntax is not supported", lineno);
        free(rule);
        return rc;
    }
    if (!co_helm__path_pattern_ok(rule)) {
        int rc = co_error_set(CO_EINVALID, ".helmignore:%d: syntax error in pattern \"%s\"", lineno,
                              rule);
        free(rule);
        return rc;
    }
    ignore_rule ir = {0};
    char *p = rule;
    if (*p == '!') {
        ir.negate = true;
        p++;
    }
    size_t pl = strlen(p);
    if (pl > 0 && p[pl - 1] == '/') {
        ir.must_dir = true;
        p[pl - 1] = '\0';
    }
    if (*p == '/') {
        ir.kind = 2;
        p++;
    } else if (strchr(p, '/')) {
        ir.kind = 1;
    }
    ir.pattern = co_xstrdup(p);
    free(rule);
    r->items = co_xreallocarray(r->items, r->n + 1, sizeof(*r->items));
    r->items[r->n++] = ir;
    return 0;
}

static bool rule_match(const ignore_rule *ir, const char *path)
{
    if (ir->kind == 0) {
        const char *slash = strrchr(path, '/');
        return co_helm__path_match(ir->pattern, slash ? slash + 1 : path);
    }
    return co_helm__path_match(ir->pattern, path);
}

/* Helm's ignore.Rules.Ignore, including its treatment of negated rules. */
static bool rules_ignore(const ignore_rules *r, const char *path, bool is_dir)
{
    if (!*path || strcmp(path, ".") == 0 || strcmp(path, "./") == 0) {
        return false;
    }
    for (size_t i = 0; i < r->n; i++) {
        const ignore_rule *ir = &r->items[i];
        if (ir->negate) {
            if (ir->must_dir && !is_dir) {
                return true;
            }
            if (!rule_match(ir, path)) {
                return true;
            }
            continue;
        }
        if (ir->must_dir && !is_dir) {
            continue;
        }
        if (rule_match(ir, path)) {
            return true;
        }
    }
    return false;
}

/* Whether a file is ignored: each directory on its way is checked first (the walk would
 * skip the whole directory), then the file. */
static bool ignored(const ignore_rules *r, const char *rel)
{
    char *tmp = co_xstrdup(rel);
    bool res = false;
    for (char *p = strchr(tmp, '/'); p; p = strchr(p + 1, '/')) {
        *p = '\0';
        bool ig = rules_ignore(r, tmp, true);
        *p = '/';
        if (ig) {
            res = true;
            break;
        }
    }
    if (!res) {
        res = rules_ignore(r, tmp, false);
    }
    free(tmp);
    return res;
}

/* Orders paths as a directory walk visits them: component by component, each directory's
 * entries by name (so "a/x" comes before "a-b/y", unlike a plain byte order). */
static int walk_order(const void *pa, const void *pb)
{
    const char *a = *(const char *const *)pa;
    const char *b = *(const char *const *)pb;
    for (;;) {
        size_t la = strcspn(a, "/");
        size_t lb = strcspn(b, "/");
        size_t m = la < lb ? la : lb;
        int c = memcmp(a, b, m);
        if (c != 0) {
            return c;
        }
        if (la != lb) {
            return la < lb ? -1 : 1;
        }
        if (!a[la] || !b[lb]) {
            return a[la] ? 1 : b[lb] ? -1 : 0;
        }
        a += la + 1;
        b += lb + 1;
    }
}

int co_helm_chart_load(co_helm_chart **out, const co_vfs *fs, const char *dir)
{
    int rc = 0;
    char **paths = NULL;
    size_t npaths = 0;
    bfiles files = {0};
    ignore_rules rules = {0};
    char *chart_yaml = NULL;
    char *ign = NULL;
    char *ign_data = NULL;
    size_t ign_len = 0;

    rc = co_vfs_join(&chart_yaml, dir, "Chart.yaml");
    if (rc < 0) {
        goto done;
    }
    if (co_vfs_stat(fs, chart_yaml) != CO_VFS_FILE) {
        rc = co_error_set(CO_ENOTFOUND, "%s: no Chart.yaml: not a Helm chart",
                          *dir ? dir : "(root)");
        goto done;
    }
    rc = co_vfs_join(&ign, dir, ".helmignore");
    if (rc < 0) {
        goto done;
    }
    if (co_vfs_stat(fs, ign) == CO_VFS_FILE) {
        rc = co_vfs_read(&ign_data, &ign_len, fs, ign);
        if (rc < 0) {
            goto done;
        }
        trim_bom(ign_data, &ign_len);
        int lineno = 0;
        for (const char *p = ign_data; p < ign_data + ign_len;) {
            const char *e = memchr(p, '\n', (size_t)(ign_data + ign_len - p));
            size_t l = e ? (size_t)(e - p) : (size_t)(ign_data + ign_len - p);
            rc = rules_add(&rules, p, l, ++lineno);
            if (rc < 0) {
                goto done;
            }
            p += l + 1;
        }
    }
    rc = rules_add(&rules, "templates/.?*", strlen("templates/.?*"), 0);
    if (rc < 0) {
        goto done;
    }
    rc = co_vfs_walk(&paths, &npaths, fs, dir);
    if (rc < 0) {
        goto done;
    }
    if (npaths > CO_MAX_SOURCE_FILES) {
        rc = co_error_set(CO_ETOOBIG, "%s: more than %d files", dir, CO_MAX_SOURCE_FILES);
        goto done;
    }
    qsort(paths, npaths, sizeof(char *), walk_order);
    size_t skip = *dir ? strlen(dir) + 1 : 0;
    for (size_t i = 0; i < npaths; i++) {
        const char *rel = paths[i] + skip;
        if (ignored(&rules, rel)) {
            continue;
        }
        char *data = NULL;
        size_t len = 0;
        rc = co_vfs_read(&data, &len, fs, paths[i]);
        if (rc < 0) {
            goto done;
        }
        trim_bom(data, &len);
        bfiles_add(&files, co_xstrdup(rel), data, len);
    }
    const char *slash = strrchr(dir, '/');
    rc = load_files(out, &files, *dir ? (slash ? slash + 1 : dir) : ".", 0);
done:
    co_vfs_strv_free(paths);
    bfiles_dispose(&files);
    rules_dispose(&rules);
    free(chart_yaml);
    free(ign);
    free(ign_data);
    return rc;
}

const char *co_helm_chart_name(const co_helm_chart *c)
{
    return c->meta.name;
}

const char *co_helm_chart_version(const co_helm_chart *c)
{
    return c->meta.version;
}
