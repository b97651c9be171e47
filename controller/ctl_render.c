/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Directory rendering (see ctl_render.h). With a kustomization present the disk tree is built
 * as it is; otherwise the files are copied into an in-memory tree next to a generated
 * kustomization.yaml, so the disk is never written.
 */
#include "controller/ctl_render.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/buf.h"
#include "co/caps.h"
#include "co/error.h"
#include "co/json.h"
#include "co/kustomize.h"
#include "co/vfs.h"

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_control_file(const char *name)
{
    return strcmp(name, ".component-config.yaml") == 0 || strcmp(name, ".component-ignore") == 0;
}

static int is_manifest(const char *path)
{
    const char *name = base_name(path);
    return name[0] != '.' && (has_suffix(name, ".yaml") || has_suffix(name, ".yml"));
}

static int generated_tree(co_vfs **out, const co_vfs *disk)
{
    char **files = NULL;
    size_t n = 0;
    co_buf k = CO_BUF_INIT(CO_MAX_SOURCE_FILE);
    co_vfs *mem = co_vfs_new_mem();
    int rc = co_vfs_walk(&files, &n, disk, "");
    if (rc < 0) {
        goto done;
    }
    if (n > CO_MAX_SOURCE_FILES) {
        rc = co_error_set(CO_ETOOBIG, "source tree: more than %d files", CO_MAX_SOURCE_FILES);
        goto done;
    }
    /* written as JSON (a subset of YAML) so that no quoting rules apply to file names */
    struct json_object *kust = json_object_new_object();
    struct json_object *res = json_object_new_array();
    json_object_object_add(kust, "apiVersion",
                           json_object_new_string("kustomize.config.k8s.io/v1beta1"));
    json_object_object_add(kust, "kind", json_object_new_string("Kustomization"));
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (is_control_file(base_name(files[i]))) {
            continue;
        }
        char *data = NULL;
        size_t len = 0;
        rc = co_vfs_read(&data, &len, disk, files[i]);
        if (rc == 0) {
            rc = co_vfs_mem_put(mem, files[i], data, len);
        }
        free(data);
        if (rc == 0 && is_manifest(files[i])) {
            json_object_array_add(res, json_object_new_string(files[i]));
        }
    }
    if (json_object_array_length(res) > 0) {
        json_object_object_add(kust, "resources", json_object_get(res));
    } else {
        /* kustomize refuses an empty kustomization; the Go generator adds this too */
        json_object_object_add(kust, "namespace", json_object_new_string("_dummy"));
    }
    json_object_put(res);
    if (rc == 0) {
        rc = co_json_encode(&k, kust, 0);
    }
    json_object_put(kust);
    if (rc == 0) {
        rc = co_vfs_mem_put(mem, "kustomization.yaml", co_buf_cstr(&k), k.len);
    }
    if (rc == 0) {
        *out = mem;
        mem = NULL;
    }
done:
    co_vfs_free(mem);
    co_vfs_strv_free(files);
    co_buf_dispose(&k);
    return rc;
}

int ctl_render_dir(struct json_object **out, const char *dir)
{
    co_vfs *disk = NULL, *tree = NULL;
    int rc = co_vfs_new_disk(&disk, dir);
    if (rc < 0) {
        return co_error_set(rc, "no such directory: %s", dir);
    }
    const co_vfs *fs = disk;
    if (co_vfs_stat(disk, "kustomization.yaml") != CO_VFS_FILE &&
        co_vfs_stat(disk, "kustomization.yml") != CO_VFS_FILE &&
        co_vfs_stat(disk, "Kustomization") != CO_VFS_FILE) {
        rc = generated_tree(&tree, disk);
        if (rc < 0) {
            goto done;
        }
        fs = tree;
    }
    co_kustomize_options opts = CO_KUSTOMIZE_OPTIONS_INIT;
    opts.unrestricted = 1;
    rc = co_kustomize_build(out, fs, "", &opts);
done:
    co_vfs_free(tree);
    co_vfs_free(disk);
    return rc;
}
