/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rendering pipeline (see co/render/render.h). A chart tree is copied into memory with every
 * file decrypted on the way, so the source tree on disk is never written; kustomizations get
 * the generator's decrypt hook. The whole render runs under one budget (co/util/budget.h), which
 * the engines below charge and check.
 */
#include "co/render/render.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/budget.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/render/envsubst.h"
#include "co/util/error.h"
#include "co/render/helm.h"
#include "co/json/json.h"
#include "co/render/kustomize.h"
#include "co/render/vfs.h"
#include "co/json/yaml.h"

/* Decrypts one file; with no keys an encrypted file is refused. *out NULL = keep the bytes. */
static int decrypt_bytes(char **out,
                         size_t *out_len,
                         co_sops_keys *keys,
                         const char *path,
                         const char *data,
                         size_t len)
{
    *out = NULL;
    *out_len = 0;
    if (co_sops_detect(data, len) == CO_SOPS_FORMAT_NONE) {
        return 0;
    }
    if (keys == NULL) {
        return co_error_set(CO_EINVALID,
                            "%s: file is encrypted (sops) but no decryption keys "
                            "are configured (spec.decryption)",
                            path);
    }
    co_buf plain = CO_BUF_INIT(CO_MAX_SOURCE_FILE);
    int rc = co_sops_decrypt_file(&plain, keys, path, data, len);
    if (rc < 0) {
        co_buf_dispose(&plain);
        return rc;
    }
    if (plain.ptr == NULL) {
        *out = co_xstrdup("");
        return 0;
    }
    *out = co_buf_take(&plain, out_len);
    return 0;
}

static int kzgen_decrypt(void *ctx,
                         char **out,
                         size_t *out_len,
                         const char *path,
                         const char *data,
                         size_t len)
{
    return decrypt_bytes(out, out_len, ctx, path, data, len);
}

/* Copies the disk tree into memory, decrypting every file. */
static int decrypted_copy(co_vfs **out, const co_vfs *disk, co_sops_keys *keys)
{
    char **files = NULL;
    size_t n = 0;
    co_vfs *mem = co_vfs_new_mem();
    int rc = co_vfs_walk(&files, &n, disk, "");
    if (rc == 0 && n > CO_MAX_SOURCE_FILES) {
        rc = co_error_set(CO_ETOOBIG, "source tree: more than %d files", CO_MAX_SOURCE_FILES);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *data = NULL, *plain = NULL;
        size_t len = 0, plain_len = 0;
        rc = co_budget_tick();
        if (rc == 0) {
            rc = co_vfs_read(&data, &len, disk, files[i]);
        }
        /* the copy lives for the whole render */
        if (rc == 0 && (rc = co_budget_charge(len)) < 0) {
            co_error_wrap("%s", files[i]);
        }
        if (rc == 0) {
            rc = decrypt_bytes(&plain, &plain_len, keys, files[i], data, len);
        }
        if (rc == 0) {
            rc = plain ? co_vfs_mem_put(mem, files[i], plain, plain_len)
                       : co_vfs_mem_put(mem, files[i], data, len);
        }
        free(plain);
        free(data);
    }
    co_vfs_strv_free(files);
    if (rc < 0) {
        co_vfs_free(mem);
        return rc;
    }
    *out = mem;
    return 0;
}

/* What the render knows of the target cluster: asked through in->discover, or given. */
static int cluster_facts(co_render_discovery *out, const co_render_input *in)
{
    if (in->discover) {
        memset(out, 0, sizeof(*out));
        return in->discover(in->discover_ctx, out);
    }
    out->kube_version = in->kube_version;
    out->api_versions = in->api_versions;
    out->n_api_versions = in->n_api_versions;
    out->server_version = in->server_version;
    out->api_resources = in->api_resources;
    return 0;
}

static int render_helm(struct json_object **out, const co_vfs *disk, const co_render_input *in)
{
    co_vfs *mem = NULL;
    co_helm_chart *chart = NULL;
    co_render_discovery d;
    int rc = cluster_facts(&d, in);
    if (rc == 0) {
        rc = decrypted_copy(&mem, disk, in->keys);
    }
    if (rc == 0) {
        rc = co_helm_chart_load(&chart, mem, "");
    }
    if (rc == 0) {
        co_helm_options opts = {
            .release_name = in->name,
            .release_namespace = in->namespace,
            .revision = in->revision > 0 ? in->revision : 1,
            .kube_version = d.kube_version,
            .api_versions = d.api_versions,
            .n_api_versions = d.n_api_versions,
            .flags = ((in->flags & CO_RENDER_ALLOW_OPERATOR_ANNOTATIONS)
                          ? (unsigned)CO_HELM_ALLOW_OPERATOR_ANNOTATIONS
                          : 0u) |
                     in->helm_flags,
            .release_service = in->release_service ? in->release_service : CO_HELM_OPERATOR_SERVICE,
            .lookup = in->lookup,
            .lookup_list = in->lookup_list,
            .cluster_ctx = in->cluster_ctx,
        };
        rc = (in->flags & CO_RENDER_NO_HOOK_MAPPING)
                 ? co_helm_template(out, chart, in->values, &opts)
                 : co_helm_render(out, chart, in->values, &opts);
    }
    co_helm_chart_free(chart);
    co_vfs_free(mem);
    return rc;
}

/* The part of @p dir below @p root ("" when equal), or NULL when @p dir is not below it. */
static const char *below(const char *dir, const char *root)
{
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/') {
        n--;
    }
    if (strncmp(dir, root, n) != 0 || (dir[n] != '\0' && dir[n] != '/')) {
        return NULL;
    }
    const char *rest = dir + n;
    while (*rest == '/') {
        rest++;
    }
    return rest;
}

/* co_kzgen_context.discover over co_render_input.discover. */
static int kzgen_discover(void *ctx,
                          const struct json_object **server_version,
                          const struct json_object **api_resources)
{
    co_render_discovery d;
    int rc = cluster_facts(&d, ctx);
    *server_version = rc == 0 ? d.server_version : NULL;
    *api_resources = rc == 0 ? d.api_resources : NULL;
    return rc;
}

static int render_kustomization(struct json_object **out, const co_render_input *in)
{
    /* the generator sees the whole artifact, its kustomization at spec.path in it */
    const char *path = in->root ? below(in->dir, in->root) : NULL;
    co_vfs *disk = NULL;
    int rc = co_vfs_new_disk(&disk, path ? in->root : in->dir);
    if (rc < 0) {
        return rc;
    }
    co_kzgen_options opts = {
        .decrypt = kzgen_decrypt,
        .decrypt_ctx = in->keys,
    };
    co_kzgen_context ctx = {
        .namespace = in->namespace,
        .name = in->name,
        .component = in->component,
        .component_digest = in->component_digest,
        .component_revision = in->revision,
        .server_version = in->server_version,
        .api_resources = in->api_resources,
        .discover = in->discover ? kzgen_discover : NULL,
        .discover_ctx = (void *)in,
        .lookup = in->lookup,
        .lookup_list = in->lookup_list,
        .cluster_ctx = in->cluster_ctx,
    };
    rc = co_kzgen_generate(out, disk, path ? path : "", in->values, &ctx, &opts);
    co_vfs_free(disk);
    return rc;
}

static bool substitution_disabled(const struct json_object *obj)
{
    struct json_object *v =
        co_json_get(obj, "metadata", "annotations", CO_RENDER_DISABLE_SUBST_ANNOTATION, NULL);
    return v && json_object_is_type(v, json_type_string) &&
           strcmp(json_object_get_string(v), "true") == 0;
}

static int substitute_one(struct json_object **out,
                          const struct json_object *obj,
                          const co_envsubst_vars *vars,
                          unsigned flags,
                          size_t index)
{
    co_buf yaml = CO_BUF_INIT(CO_MAX_SOURCE_FILE);
    co_buf expanded = CO_BUF_INIT(CO_MAX_SOURCE_FILE);
    int rc = co_budget_tick();
    if (rc == 0) {
        rc = co_yaml_emit(&yaml, obj, 0);
    }
    if (rc == 0) {
        rc = co_envsubst_eval(&expanded, yaml.ptr ? yaml.ptr : "", yaml.len, vars,
                              (flags & CO_RENDER_STRICT_SUBST) ? CO_ENVSUBST_STRICT : 0u);
    }
    if (rc == 0) {
        rc = co_yaml_parse(out, expanded.ptr ? expanded.ptr : "", expanded.len, 0);
    }
    if (rc < 0) {
        const char *kind = json_object_get_string(co_json_get(obj, "kind", NULL));
        const char *name = json_object_get_string(co_json_get(obj, "metadata", "name", NULL));
        rc = co_error_wrap("postBuild.substitute: object %zu (%s %s)", index, kind ? kind : "?",
                           name ? name : "?");
    }
    co_buf_dispose(&yaml);
    co_buf_dispose(&expanded);
    return rc;
}

static int substitute(struct json_object *objects, const co_render_input *in)
{
    const struct json_object *subs = in->substitutions;
    if (subs == NULL || !json_object_is_type(subs, json_type_object) ||
        json_object_object_length(subs) == 0) {
        return 0;
    }
    co_envsubst_vars *vars = co_envsubst_vars_new();
    int rc = 0;
    json_object_object_foreach ((struct json_object *)subs, key, val) {
        if (rc < 0) {
            break;
        }
        if (!json_object_is_type(val, json_type_string)) {
            rc = co_error_set(CO_EINVALID, "postBuild.substitute.%s: not a string", key);
            break;
        }
        rc = co_envsubst_vars_set(vars, key, json_object_get_string(val),
                                  (size_t)json_object_get_string_len(val));
    }
    size_t n = json_object_array_length(objects);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct json_object *obj = json_object_array_get_idx(objects, i);
        if (substitution_disabled(obj)) {
            continue;
        }
        struct json_object *next = NULL;
        rc = substitute_one(&next, obj, vars, in->flags, i);
        if (rc == 0) {
            json_object_array_put_idx(objects, i, next);
        }
    }
    co_envsubst_vars_free(vars);
    return rc;
}

static const struct json_object *non_empty_array(const struct json_object *pb, const char *key)
{
    struct json_object *v = pb ? co_json_get(pb, key, NULL) : NULL;
    return v && json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0 ? v
                                                                                           : NULL;
}

static int render(struct json_object **out, const co_render_input *in)
{
    co_vfs *disk = NULL;
    struct json_object *objects = NULL;
    int rc = co_vfs_new_disk(&disk, in->dir);
    if (rc == 0) {
        bool chart = co_vfs_stat(disk, "Chart.yaml") == CO_VFS_FILE;
        rc = chart ? render_helm(&objects, disk, in) : 0;
        co_vfs_free(disk);
        if (!chart) {
            rc = render_kustomization(&objects, in);
        }
    }
    if (rc == 0) {
        rc = substitute(objects, in);
    }
    const struct json_object *patches = non_empty_array(in->post_build, "patches");
    const struct json_object *images = non_empty_array(in->post_build, "images");
    if (rc == 0 && (patches || images)) {
        struct json_object *built = NULL;
        rc = co_kustomize_post_build(&built, objects, patches, images);
        if (rc == 0) {
            json_object_put(objects);
            objects = built;
        }
    }
    /* a charge that could not fail where it was made (the template arena) fails the render */
    if (rc == 0) {
        rc = co_budget_status();
    }
    if (rc < 0) {
        json_object_put(objects);
        return rc;
    }
    *out = objects;
    return 0;
}

int co_render(struct json_object **out, const co_render_input *in)
{
    *out = NULL;
    if (in == NULL || in->dir == NULL) {
        return co_error_set(CO_EINVALID, "render: no source directory");
    }
    co_budget_begin(&in->budget);
    int rc = render(out, in);
    co_budget_end();
    return rc;
}
