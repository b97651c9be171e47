/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The postBuild kustomize step of a Component (docs/behaviour.md, "postBuild patches and images"):
 * the generated objects go into an in-memory objects.yaml, a kustomization with the Component's
 * patches and images is built over it (no load restriction, no plugins), and the result replaces
 * the objects. Unlike the Go original, which dereferences a missing patch target and panics, a
 * patch without a target applies to every object (an empty selector).
 */
#include "kz_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"

static int check_patches(json_object *patches)
{
    if (!json_object_is_type(patches, json_type_array)) {
        return co_error_set(CO_EINVALID, "postBuild.patches must be a list");
    }
    for (size_t i = 0; i < json_object_array_length(patches); i++) {
        json_object *p = json_object_array_get_idx(patches, i);
        json_object *text = NULL, *target = NULL;
        if (!json_object_is_type(p, json_type_object)) {
            return co_error_set(CO_EINVALID, "postBuild.patches[%zu] must be a mapping", i);
        }
        if (!json_object_object_get_ex(p, "patch", &text) ||
            !json_object_is_type(text, json_type_string) || !json_object_get_string_len(text)) {
            return co_error_set(CO_EINVALID,
                                "postBuild.patches[%zu].patch must be a non-empty string", i);
        }
        if (json_object_object_get_ex(p, "target", &target) && target != NULL &&
            !json_object_is_type(target, json_type_object)) {
            return co_error_set(CO_EINVALID, "postBuild.patches[%zu].target must be a mapping", i);
        }
        json_object_object_foreach (p, k, v) {
            (void)v;
            if (strcmp(k, "patch") != 0 && strcmp(k, "target") != 0) {
                return co_error_set(CO_EINVALID, "postBuild.patches[%zu]: unknown field \"%s\"", i,
                                    k);
            }
        }
    }
    return 0;
}

static int check_images(json_object *images)
{
    static const char *const fields[] = {"name", "newName", "newTag", "digest", "tagSuffix"};
    if (!json_object_is_type(images, json_type_array)) {
        return co_error_set(CO_EINVALID, "postBuild.images must be a list");
    }
    for (size_t i = 0; i < json_object_array_length(images); i++) {
        json_object *im = json_object_array_get_idx(images, i);
        json_object *name = NULL;
        if (!json_object_is_type(im, json_type_object)) {
            return co_error_set(CO_EINVALID, "postBuild.images[%zu] must be a mapping", i);
        }
        if (!json_object_object_get_ex(im, "name", &name) ||
            !json_object_is_type(name, json_type_string) || !json_object_get_string_len(name)) {
            return co_error_set(CO_EINVALID,
                                "postBuild.images[%zu].name must be a non-empty string", i);
        }
        json_object_object_foreach (im, k, v) {
            int known = 0;
            for (size_t f = 0; f < CO_ARRAY_SIZE(fields); f++) {
                known |= strcmp(k, fields[f]) == 0;
            }
            if (!known) {
                return co_error_set(CO_EINVALID, "postBuild.images[%zu]: unknown field \"%s\"", i,
                                    k);
            }
            if (v && !json_object_is_type(v, json_type_string) &&
                !(strcmp(k, "newTag") == 0 && (json_object_is_type(v, json_type_int) ||
                                               json_object_is_type(v, json_type_double)))) {
                return co_error_set(CO_EINVALID, "postBuild.images[%zu].%s must be a string", i, k);
            }
        }
    }
    return 0;
}

int co_kustomize_post_build(struct json_object **out,
                            const struct json_object *objects,
                            const struct json_object *patches,
                            const struct json_object *images)
{
    json_object *objs = (json_object *)objects;
    json_object *pl = (json_object *)patches;
    json_object *il = (json_object *)images;
    if (!json_object_is_type(objs, json_type_array)) {
        return co_error_set(CO_EINVALID, "post-build input must be a list of objects");
    }
    int rc = 0;
    if (pl && (rc = check_patches(pl)) < 0) {
        return rc;
    }
    if (il && (rc = check_images(il)) < 0) {
        return rc;
    }
    co_buf b = CO_BUF_INIT(CO_MAX_DOCUMENT);
    for (size_t i = 0; i < json_object_array_length(objs) && rc == 0; i++) {
        json_object *o = json_object_array_get_idx(objs, i);
        if (!json_object_is_type(o, json_type_object)) {
            return co_error_set(CO_EINVALID, "post-build input: item %zu is not an object", i);
        }
        if ((i && co_buf_puts(&b, "\n---\n") < 0) ||
            co_buf_puts(&b, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) < 0) {
            rc = co_error_set(CO_ETOOBIG, "post-build input is larger than %zu bytes",
                              (size_t)CO_MAX_DOCUMENT);
        }
    }
    json_object *k = json_object_new_object();
    json_object *res = json_object_new_array();
    json_object_array_add(res, json_object_new_string("objects.yaml"));
    json_object_object_add(k, "resources", res);
    if (pl && json_object_array_length(pl)) {
        json_object *np = json_object_new_array();
        for (size_t i = 0; i < json_object_array_length(pl); i++) {
            json_object *p = json_object_array_get_idx(pl, i);
            json_object *e = json_object_new_object();
            json_object_object_add(e, "patch", json_object_get(json_object_object_get(p, "patch")));
            json_object *t = json_object_object_get(p, "target");
            json_object_object_add(e, "target", t ? json_object_get(t) : json_object_new_object());
            json_object_array_add(np, e);
        }
        json_object_object_add(k, "patches", np);
    }
    if (il && json_object_array_length(il)) {
        json_object_object_add(k, "images", json_object_get(il));
    }
    co_vfs *fs = co_vfs_new_mem();
    const char *kt = json_object_to_json_string_ext(k, JSON_C_TO_STRING_PLAIN);
    if (rc == 0) {
        rc = co_vfs_mem_put(fs, "kustomization.yaml", kt, strlen(kt));
    }
    if (rc == 0) {
        rc = co_vfs_mem_put(fs, "objects.yaml", co_buf_cstr(&b), b.len);
    }
    json_object *built = NULL;
    if (rc == 0) {
        rc = co_kustomize_build(&built, fs, "", NULL);
        if (rc < 0) {
            co_error_wrap("postBuild");
        }
    }
    co_vfs_free(fs);
    json_object_put(k);
    co_buf_dispose(&b);
    if (rc < 0) {
        return rc;
    }
    *out = built;
    return 0;
}
