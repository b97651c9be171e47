/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Resources of a kustomize build: the object, plus the identity history kustomize records while
 * transforming it (previous ids, name prefixes and suffixes) that name-reference fixing needs at
 * the end. Also the document decoder and kustomize's notion of cluster-scoped kinds.
 */
#include "kz_int.h"
#include "shared/src/json/json_lib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/json/yaml.h"

void kz_strv_push(kz_strv *s, const char *str)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4;
        s->v = co_xreallocarray(s->v, s->cap, sizeof(char *));
    }
    s->v[s->n++] = str ? co_xmemdup(str, strlen(str)) : co_xmemdup("", 0);
}

void kz_strv_dispose(kz_strv *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i]);
    }
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

void kz_strv_copy(kz_strv *dst, const kz_strv *src)
{
    kz_strv_dispose(dst);
    for (size_t i = 0; i < src->n; i++) {
        kz_strv_push(dst, src->v[i]);
    }
}

kz_res *kz_res_new(json_object *obj)
{
    kz_res *r = co_xcalloc(1, sizeof(*r));
    r->obj = obj;
    return r;
}

void kz_res_free(kz_res *r)
{
    if (!r) {
        return;
    }
    json_object_put(r->obj);
    kz_strv_dispose(&r->prev_names);
    kz_strv_dispose(&r->prev_nss);
    kz_strv_dispose(&r->prev_kinds);
    kz_strv_dispose(&r->prefixes);
    kz_strv_dispose(&r->suffixes);
    free(r);
}

kz_res *kz_res_clone(const kz_res *r)
{
    json_object *copy = NULL;
    json_object_deep_copy(r->obj, &copy, NULL);
    kz_res *c = kz_res_new(copy);
    kz_strv_copy(&c->prev_names, &r->prev_names);
    kz_strv_copy(&c->prev_nss, &r->prev_nss);
    kz_strv_copy(&c->prev_kinds, &r->prev_kinds);
    kz_strv_copy(&c->prefixes, &r->prefixes);
    kz_strv_copy(&c->suffixes, &r->suffixes);
    c->needs_hash = r->needs_hash;
    c->behavior = r->behavior;
    c->generated = r->generated;
    return c;
}

const char *kz_get_str(json_object *obj, const char *a, const char *b)
{
    const char *s = co_json_str(obj, a, b, NULL);
    return s ? s : "";
}

const char *kz_res_kind(const kz_res *r)
{
    return kz_get_str(r->obj, "kind", NULL);
}

const char *kz_res_name(const kz_res *r)
{
    return kz_get_str(r->obj, "metadata", "name");
}

const char *kz_res_ns(const kz_res *r)
{
    return kz_get_str(r->obj, "metadata", "namespace");
}

const char *kz_res_api_version(const kz_res *r)
{
    return kz_get_str(r->obj, "apiVersion", NULL);
}

void kz_split_api_version(const char *apiv, char *group, char *version, size_t cap)
{
    const char *slash = strchr(apiv, '/');
    if (slash) {
        size_t n = (size_t)(slash - apiv);
        if (n >= cap) {
            n = cap - 1;
        }
        memcpy(group, apiv, n);
        group[n] = '\0';
        snprintf(version, cap, "%s", slash + 1);
    } else {
        group[0] = '\0';
        snprintf(version, cap, "%s", apiv);
    }
}

static json_object *metadata(kz_res *r)
{
    json_object *md = NULL;
    if (!json_object_object_get_ex(r->obj, "metadata", &md) ||
        !json_object_is_type(md, json_type_object)) {
        md = json_object_new_object();
        json_object_object_add(r->obj, "metadata", md);
    }
    return md;
}

void kz_res_set_name(kz_res *r, const char *name)
{
    json_object_object_add(metadata(r), "name", json_object_new_string(name));
}

void kz_res_set_ns(kz_res *r, const char *ns)
{
    if (!ns[0]) {
        json_object_object_del(metadata(r), "namespace");
        return;
    }
    json_object_object_add(metadata(r), "namespace", json_object_new_string(ns));
}

void kz_res_store_prev_id(kz_res *r)
{
    kz_strv_push(&r->prev_names, kz_res_name(r));
    kz_strv_push(&r->prev_nss, kz_effective_ns(kz_res_kind(r), kz_res_ns(r)));
    kz_strv_push(&r->prev_kinds, kz_res_kind(r));
}

size_t kz_res_nprev(const kz_res *r)
{
    return r->prev_names.n;
}

void kz_res_org(const kz_res *r, const char **kind, const char **name, const char **ns)
{
    if (r->prev_names.n) {
        *kind = r->prev_kinds.v[0];
        *name = r->prev_names.v[0];
        *ns = r->prev_nss.v[0];
        return;
    }
    *kind = kz_res_kind(r);
    *name = kz_res_name(r);
    *ns = kz_res_ns(r);
}

/* Kinds kustomize's built-in schema knows to be cluster-scoped. */
static const char *const cluster_scoped[] = {
    "APIService",
    "CertificateSigningRequest",
    "ClusterRole",
    "ClusterRoleBinding",
    "ComponentStatus",
    "CSIDriver",
    "CSINode",
    "CustomResourceDefinition",
    "FlowSchema",
    "IngressClass",
    "MutatingWebhookConfiguration",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PodSecurityPolicy",
    "PriorityClass",
    "PriorityLevelConfiguration",
    "RuntimeClass",
    "SelfSubjectAccessReview",
    "SelfSubjectRulesReview",
    "StorageClass",
    "SubjectAccessReview",
    "TokenReview",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration",
    "VolumeAttachment",
};

int kz_kind_is_cluster_scoped(const char *kind)
{
    for (size_t i = 0; i < CO_ARRAY_SIZE(cluster_scoped); i++) {
        if (strcmp(kind, cluster_scoped[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

const char *kz_effective_ns(const char *kind, const char *ns)
{
    if (kz_kind_is_cluster_scoped(kind)) {
        return "";
    }
    return ns[0] ? ns : "default";
}

int kz_gvk_selected(const char *g,
                    const char *v,
                    const char *k,
                    const char *sg,
                    const char *sv,
                    const char *sk)
{
    if (sg && sg[0] && strcmp(g, sg) != 0) {
        return 0;
    }
    if (sv && sv[0] && strcmp(v, sv) != 0) {
        return 0;
    }
    if (sk && sk[0] && strcmp(k, sk) != 0) {
        return 0;
    }
    return 1;
}

void kz_resmap_push(kz_resmap *m, kz_res *r)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 16;
        m->v = co_xreallocarray(m->v, m->cap, sizeof(kz_res *));
    }
    m->v[m->n++] = r;
}

void kz_resmap_dispose(kz_resmap *m)
{
    for (size_t i = 0; i < m->n; i++) {
        kz_res_free(m->v[i]);
    }
    free(m->v);
    m->v = NULL;
    m->n = m->cap = 0;
}

void kz_resmap_remove_at(kz_resmap *m, size_t i)
{
    kz_res_free(m->v[i]);
    memmove(m->v + i, m->v + i + 1, (m->n - i - 1) * sizeof(kz_res *));
    m->n--;
}

/* --- decoding ------------------------------------------------------------------------------ */

/* A float that Go's json.Marshal writes without a fraction or exponent (integral, below 1e21)
 * comes out of kustomize as an integer: it passes every document through JSON, so `1e3`, `1.0`
 * and `-0.0` are printed as 1000, 1 and 0, while 0.001 and 1e+30 stay floats. The result is
 * what the Go operator (and co_json) reads from those digits: int64, else uint64, else (beyond
 * 64 bits) a double. NULL when the value stays as it is. */
static json_object *go_json_number(json_object *v)
{
    double d = json_object_get_double(v);
    if (!isfinite(d) || floor(d) != d || fabs(d) >= 1e21) {
        return NULL;
    }
    if (d == 0) {
        return json_object_new_int64(0);
    }
    char text[CO_JSON__NUMBER_MAX];
    size_t n = co_json__format_double(text, d, 'j', 64);
    json_object *out = NULL;
    if (strpbrk(text, ".eE") || co_json_parse(&out, text, n) < 0) {
        co_error_clear();
        return NULL;
    }
    return out;
}

static void go_json_numbers(json_object *v)
{
    if (json_object_is_type(v, json_type_object)) {
        json_object_object_foreach (v, key, val) {
            json_object *n =
                json_object_is_type(val, json_type_double) ? go_json_number(val) : NULL;
            if (n) {
                json_object_object_add(v, key, n);
            } else {
                go_json_numbers(val);
            }
        }
    } else if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_object *val = json_object_array_get_idx(v, i);
            json_object *n =
                json_object_is_type(val, json_type_double) ? go_json_number(val) : NULL;
            if (n) {
                json_object_array_put_idx(v, i, n);
            } else {
                go_json_numbers(val);
            }
        }
    }
}

static int decode(json_object **out, const char *data, size_t len, const char *what, unsigned flags)
{
    co_yaml_docs docs = CO_YAML_DOCS_INIT;
    int rc = co_yaml_parse_stream(&docs, data, len, CO_YAML_SKIP_NULL | flags);
    if (rc < 0) {
        return co_error_wrap("%s", what);
    }
    json_object *arr = json_object_new_array_ext((int)docs.len);
    for (size_t i = 0; i < docs.len; i++) {
        go_json_numbers(docs.items[i].value);
        json_object_array_add(arr, json_object_get(docs.items[i].value));
    }
    co_yaml_docs_dispose(&docs);
    *out = arr;
    return 0;
}

int kz_decode_stream(json_object **out, const char *data, size_t len, const char *what)
{
    return decode(out, data, len, what, CO_YAML_CORE_BOOLS);
}

int kz_decode_kustomization(json_object **out, const char *data, size_t len, const char *what)
{
    return decode(out, data, len, what, 0);
}
