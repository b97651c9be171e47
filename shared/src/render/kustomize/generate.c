/* SPDX-License-Identifier: Apache-2.0 */
/*
 * configMapGenerator and secretGenerator: key/value pairs from env files, literals and files
 * (in that order, duplicates rejected), generatorOptions merged under the entry's own options,
 * non-UTF-8 file content moved to binaryData, Secret values base64-encoded, and the behaviors
 * create/merge/replace against a resource of the same id accumulated earlier.
 */
#include "kz_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/utf8.h"
#include "co/util/buf.h"
#include "co/util/digest.h"
#include "co/util/error.h"

typedef struct kv {
    char *key;
    char *value;
    size_t len;
} kv;

typedef struct kvs {
    kv *v;
    size_t n, cap;
} kvs;

static void kvs_push(kvs *s, const char *k, size_t klen, const char *v, size_t vlen)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->v = co_xreallocarray(s->v, s->cap, sizeof(kv));
    }
    s->v[s->n].key = co_xstrndup(k, klen);
    s->v[s->n].value = co_xmemdup(v, vlen);
    s->v[s->n].len = vlen;
    s->n++;
}

static void kvs_dispose(kvs *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].key);
        free(s->v[i].value);
    }
    free(s->v);
}

static int env_pairs(kvs *out, const char *data, size_t len, const char *file)
{
    size_t line = 0;
    for (size_t i = 0; i < len; line++) {
        const char *s = data + i;
        const char *nl = memchr(s, '\n', len - i);
        size_t n = nl ? (size_t)(nl - s) : len - i;
        i += n + (nl ? 1 : 0);
        if (n && s[n - 1] == '\r') {
            n--;
        }
        if (!co_utf8_valid(s, n)) {
            return co_error_set(CO_EINVALID, "%s: line %zu has invalid utf8 bytes", file, line + 1);
        }
        if (line == 0 && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
            s += 3;
            n -= 3;
        }
        while (n && (*s == ' ' || *s == '\t' || *s == '\v' || *s == '\f' || *s == '\r')) {
            s++;
            n--;
        }
        if (n == 0 || s[0] == '#') {
            continue;
        }
        /* kubectl's kustomize validates neither env names nor data keys */
        const char *eq = memchr(s, '=', n);
        size_t klen = eq ? (size_t)(eq - s) : n;
        const char *v = eq ? eq + 1 : "";
        size_t vlen = eq ? n - klen - 1 : 0;
        kvs_push(out, s, klen, v, vlen);
    }
    return 0;
}

static int bool_of(json_object *o, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

static int string_list(json_object **out, json_object *args, const char *key)
{
    json_object *v = NULL;
    *out = NULL;
    if (!json_object_object_get_ex(args, key, &v) || v == NULL) {
        return 0;
    }
    if (!json_object_is_type(v, json_type_array)) {
        return co_error_set(CO_EINVALID, "'%s' must be a list", key);
    }
    for (size_t i = 0; i < json_object_array_length(v); i++) {
        if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_string)) {
            return co_error_set(CO_EINVALID, "%s[%zu] must be a string", key, i);
        }
    }
    *out = v;
    return 0;
}

/* Collects the pairs: env files, then literals, then files. */
static int collect(kvs *pairs, kz_dir *d, json_object *args)
{
    json_object *envs = NULL, *lits = NULL, *files = NULL;
    json_object *env1 = NULL;
    int rc = string_list(&envs, args, "envs");
    if (rc == 0) {
        rc = string_list(&lits, args, "literals");
    }
    if (rc == 0) {
        rc = string_list(&files, args, "files");
    }
    if (rc < 0) {
        return rc;
    }
    /* the deprecated single "env" comes first */
    if (json_object_object_get_ex(args, "env", &env1) &&
        json_object_is_type(env1, json_type_string) && json_object_get_string_len(env1)) {
        char *data = NULL;
        size_t len = 0;
        if ((rc = kz_dir_load(&data, &len, d, json_object_get_string(env1))) < 0) {
            return rc;
        }
        rc = env_pairs(pairs, data, len, json_object_get_string(env1));
        free(data);
        if (rc < 0) {
            return rc;
        }
    }
    for (size_t i = 0; envs && i < json_object_array_length(envs); i++) {
        const char *f = json_object_get_string(json_object_array_get_idx(envs, i));
        char *data = NULL;
        size_t len = 0;
        if ((rc = kz_dir_load(&data, &len, d, f)) < 0) {
            return rc;
        }
        rc = env_pairs(pairs, data, len, f);
        free(data);
        if (rc < 0) {
            return rc;
        }
    }
    for (size_t i = 0; lits && i < json_object_array_length(lits); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(lits, i));
        const char *eq = strchr(s, '=');
        if (!eq || eq == s) {
            return co_error_set(CO_EINVALID, "invalid literal source %s, expected key=value", s);
        }
        const char *v = eq + 1;
        size_t vlen = strlen(v);
        if (vlen >= 2 && v[0] == v[vlen - 1] && (v[0] == '"' || v[0] == '\'')) {
            v++;
            vlen -= 2;
        }
        kvs_push(pairs, s, (size_t)(eq - s), v, vlen);
    }
    for (size_t i = 0; files && i < json_object_array_length(files); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(files, i));
        const char *eq = strchr(s, '=');
        const char *path = s;
        char *key = NULL;
        if (eq) {
            if (strchr(eq + 1, '=')) {
                return co_error_set(CO_EINVALID, "source \"%s\" key name or file path contains '='",
                                    s);
            }
            if (eq == s) {
                return co_error_set(CO_EINVALID, "missing key name for file path in source \"%s\"",
                                    s);
            }
            if (!eq[1]) {
                return co_error_set(CO_EINVALID, "missing file path for key name in source \"%s\"",
                                    s);
            }
            key = co_xstrndup(s, (size_t)(eq - s));
            path = eq + 1;
        } else {
            const char *slash = strrchr(s, '/');
            key = co_xstrdup(slash ? slash + 1 : s);
        }
        char *data = NULL;
        size_t len = 0;
        rc = kz_dir_load(&data, &len, d, path);
        if (rc == 0) {
            kvs_push(pairs, key, strlen(key), data, len);
        }
        free(data);
        free(key);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

/* A value as kustomize encodes Secret data and binaryData: standard base64, and once the text
 * reaches 70 characters, cut into lines of 70, each ended by a newline (which the API server's
 * decoder skips). The name hash is taken over this text. */
static json_object *encoded(const char *value, size_t len)
{
    enum { LINE = 70 };
    char *b = co_base64_encode(value, len, CO_BASE64_STD);
    size_t n = strlen(b);
    json_object *v;
    if (n < LINE) {
        v = json_object_new_string_len(b, (int)n);
    } else {
        co_buf out = CO_BUF_INIT(n + n / LINE + 2);
        for (size_t i = 0; i < n; i += LINE) {
            size_t k = n - i < LINE ? n - i : LINE;
            int rc = co_buf_put(&out, b + i, k);
            CO_ASSERT(rc == 0 && co_buf_putc(&out, '\n') == 0);
        }
        v = json_object_new_string_len(co_buf_cstr(&out), (int)out.len);
        co_buf_dispose(&out);
    }
    free(b);
    return v;
}

/* Local options win over the kustomization's generatorOptions for each label/annotation key. */
static void merged_map(json_object *dst, json_object *local, json_object *global, const char *key)
{
    json_object *l = NULL, *g = NULL;
    json_object_object_get_ex(local, key, &l);
    json_object_object_get_ex(global, key, &g);
    if (!l && !g) {
        return;
    }
    json_object *md = NULL;
    json_object_object_get_ex(dst, "metadata", &md);
    json_object *m = json_object_new_object();
    if (json_object_is_type(g, json_type_object)) {
        json_object_object_foreach (g, k, v) {
            json_object_object_add(m, k,
                                   json_object_new_string(v ? json_object_get_string(v) : ""));
        }
    }
    if (json_object_is_type(l, json_type_object)) {
        json_object_object_foreach (l, k, v) {
            json_object_object_add(m, k,
                                   json_object_new_string(v ? json_object_get_string(v) : ""));
        }
    }
    if (json_object_object_length(m) == 0) {
        json_object_put(m);
        return;
    }
    json_object_object_add(md, key, m);
}

int kz_generate(kz_res **out, kz_dir *d, json_object *args, const char *kind, json_object *global)
{
    if (!json_object_is_type(args, json_type_object)) {
        return co_error_set(CO_EINVALID, "a generator entry must be a mapping");
    }
    const char *name = kz_get_str(args, "name", NULL);
    if (!name[0]) {
        return co_error_set(CO_EINVALID, "a %s generator must have a name",
                            strcmp(kind, "Secret") == 0 ? "secret" : "configmap");
    }
    const char *behavior = kz_get_str(args, "behavior", NULL);
    int beh = KZ_BEHAVIOR_CREATE;
    if (strcmp(behavior, "merge") == 0) {
        beh = KZ_BEHAVIOR_MERGE;
    } else if (strcmp(behavior, "replace") == 0) {
        beh = KZ_BEHAVIOR_REPLACE;
    } else if (behavior[0] && strcmp(behavior, "create") != 0) {
        return co_error_set(CO_EINVALID, "unknown generator behavior '%s'", behavior);
    }
    kvs pairs = {0};
    int rc = collect(&pairs, d, args);
    for (size_t i = 0; rc == 0 && i < pairs.n; i++) {
        for (size_t j = 0; rc == 0 && j < i; j++) {
            if (strcmp(pairs.v[i].key, pairs.v[j].key) == 0) {
                rc = co_error_set(CO_EINVALID, "configmap %s illegally repeats the key `%s`", name,
                                  pairs.v[i].key);
            }
        }
    }
    if (rc < 0) {
        kvs_dispose(&pairs);
        return rc;
    }
    json_object *obj = json_object_new_object();
    json_object_object_add(obj, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(obj, "kind", json_object_new_string(kind));
    json_object *md = json_object_new_object();
    json_object_object_add(md, "name", json_object_new_string(name));
    const char *ns = kz_get_str(args, "namespace", NULL);
    if (ns[0]) {
        json_object_object_add(md, "namespace", json_object_new_string(ns));
    }
    json_object_object_add(obj, "metadata", md);
    int secret = strcmp(kind, "Secret") == 0;
    if (secret) {
        const char *type = kz_get_str(args, "type", NULL);
        json_object_object_add(obj, "type", json_object_new_string(type[0] ? type : "Opaque"));
    }
    /* a Secret always gets a data map, a ConfigMap only when it has entries */
    json_object *data = secret ? json_object_new_object() : NULL, *bin = NULL;
    for (size_t i = 0; i < pairs.n; i++) {
        json_object *v;
        json_object **target = &data;
        if (secret) {
            v = encoded(pairs.v[i].value, pairs.v[i].len);
        } else if (co_utf8_valid(pairs.v[i].value, pairs.v[i].len)) {
            v = json_object_new_string_len(pairs.v[i].value, (int)pairs.v[i].len);
        } else {
            v = encoded(pairs.v[i].value, pairs.v[i].len);
            target = &bin;
        }
        if (!*target) {
            *target = json_object_new_object();
        }
        json_object_object_add(*target, pairs.v[i].key, v);
    }
    if (data) {
        json_object_object_add(obj, "data", data);
    }
    if (bin) {
        json_object_object_add(obj, "binaryData", bin);
    }
    kvs_dispose(&pairs);
    json_object *local = NULL;
    json_object_object_get_ex(args, "options", &local);
    merged_map(obj, local, global, "labels");
    merged_map(obj, local, global, "annotations");
    if (bool_of(local, "immutable") || bool_of(global, "immutable")) {
        json_object_object_add(obj, "immutable", json_object_new_boolean(1));
    }
    kz_res *r = kz_res_new(obj);
    r->behavior = beh;
    r->generated = 1;
    r->needs_hash =
        !(bool_of(local, "disableNameSuffixHash") || bool_of(global, "disableNameSuffixHash"));
    *out = r;
    return 0;
}

/* Copies the string map @p key of @p from under the entries of @p into (into wins). */
static void merge_string_map(json_object *into, json_object *from, const char *a, const char *b)
{
    json_object *src = from, *dst = into;
    if (b) {
        if (!json_object_object_get_ex(from, a, &src) || !json_object_object_get_ex(src, b, &src) ||
            !json_object_is_type(src, json_type_object)) {
            return;
        }
        json_object *md = NULL;
        if (!json_object_object_get_ex(into, a, &md) || !md) {
            md = json_object_new_object();
            json_object_object_add(into, a, md);
        }
        if (!json_object_object_get_ex(md, b, &dst) || !dst) {
            dst = json_object_new_object();
            json_object_object_add(md, b, dst);
        }
    } else {
        if (!json_object_object_get_ex(from, a, &src) ||
            !json_object_is_type(src, json_type_object)) {
            return;
        }
        if (!json_object_object_get_ex(into, a, &dst) || !dst) {
            dst = json_object_new_object();
            json_object_object_add(into, a, dst);
        }
    }
    json_object_object_foreach (src, k, v) {
        json_object *have = NULL;
        if (!json_object_object_get_ex(dst, k, &have)) {
            json_object_object_add(dst, k, json_object_get(v));
        }
    }
}

int kz_absorb(kz_resmap *ra, kz_res *r)
{
    char g[256], v[256];
    kz_split_api_version(kz_res_api_version(r), g, v, sizeof(g));
    size_t found = ra->n, count = 0;
    for (size_t i = 0; i < ra->n; i++) {
        if (kz_res_matches_any_id(ra->v[i], g, v, kz_res_kind(r), kz_res_name(r), kz_res_ns(r))) {
            found = i;
            count++;
        }
    }
    if (count == 0) {
        if (r->behavior == KZ_BEHAVIOR_MERGE || r->behavior == KZ_BEHAVIOR_REPLACE) {
            char *id = kz_res_id_string(r);
            co_error_set(CO_EINVALID, "id %s does not exist; cannot merge or replace", id);
            free(id);
            kz_res_free(r);
            return CO_EINVALID;
        }
        kz_resmap_push(ra, r);
        return 0;
    }
    if (count > 1) {
        char *id = kz_res_id_string(r);
        co_error_set(CO_EINVALID, "found multiple objects matching %s", id);
        free(id);
        kz_res_free(r);
        return CO_EINVALID;
    }
    kz_res *old = ra->v[found];
    if (r->behavior == KZ_BEHAVIOR_CREATE) {
        char *id = kz_res_id_string(r);
        co_error_set(CO_EINVALID, "id %s exists; behavior must be merge or replace", id);
        free(id);
        kz_res_free(r);
        return CO_EINVALID;
    }
    /* labels and annotations of the old object stay unless the new one sets them */
    merge_string_map(r->obj, old->obj, "metadata", "labels");
    merge_string_map(r->obj, old->obj, "metadata", "annotations");
    if (r->behavior == KZ_BEHAVIOR_MERGE) {
        merge_string_map(r->obj, old->obj, "data", NULL);
        merge_string_map(r->obj, old->obj, "binaryData", NULL);
        /* kustomize rewrites both maps and drops them when empty */
        const char *maps[2] = {"data", "binaryData"};
        for (int m = 0; m < 2; m++) {
            json_object *dd = NULL;
            if (json_object_object_get_ex(r->obj, maps[m], &dd) &&
                json_object_object_length(dd) == 0) {
                json_object_object_del(r->obj, maps[m]);
            }
        }
    }
    kz_res_set_name(r, kz_res_name(old));
    kz_res_set_ns(r, kz_res_ns(old));
    kz_strv_copy(&r->prev_names, &old->prev_names);
    kz_strv_copy(&r->prev_nss, &old->prev_nss);
    kz_strv_copy(&r->prev_kinds, &old->prev_kinds);
    kz_strv_copy(&r->prefixes, &old->prefixes);
    kz_strv_copy(&r->suffixes, &old->suffixes);
    r->behavior = KZ_BEHAVIOR_NONE;
    kz_res_free(old);
    ra->v[found] = r;
    return 0;
}
