/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conversion between v1alpha1 and v1beta1 (docs/webhook-and-certs.md, "Conversion"): a 1:1 move of
 * spec fields into and out of the v1beta1 groups. Values are deep-copied, never interpreted;
 * everything outside spec (metadata, status, unknown top-level fields) is copied as it is. Inputs
 * that cannot make the round trip unchanged are refused instead of being altered:
 * - v1alpha1: an empty sourceRef, a sourceRef member that would land on a v1beta1 source field
 *   (path, revision, digest, sticky, http), or an unknown spec field named like a v1beta1 group;
 * - v1beta1: a group that is not an object or is empty, an unknown member of target, policies
 *   or intervals, a source member named httpRepository, or an unknown spec field named like a
 *   moved v1alpha1 field.
 * Unknown fields elsewhere travel unchanged at the same place.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "component_int.h"

static const co_component_move *move_by_alpha(const char *alpha)
{
    for (size_t i = 0; i < co_component__nmoves; i++) {
        if (strcmp(co_component__moves[i].alpha, alpha) == 0) {
            return &co_component__moves[i];
        }
    }
    return NULL;
}

static const co_component_move *move_by_beta(const char *group, const char *beta)
{
    for (size_t i = 0; i < co_component__nmoves; i++) {
        if (strcmp(co_component__moves[i].group, group) == 0 &&
            strcmp(co_component__moves[i].beta, beta) == 0) {
            return &co_component__moves[i];
        }
    }
    return NULL;
}

static int is_group(const char *name)
{
    for (size_t i = 0; co_component__groups[i]; i++) {
        if (strcmp(co_component__groups[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Members of v1beta1 spec.source that are not source variants. */
static int is_source_field(const char *name)
{
    const co_component_move *m = move_by_alpha(name);
    return m && strcmp(m->group, "source") == 0;
}

static json_object *copy(json_object *v)
{
    json_object *c = NULL;
    if (!v) {
        return NULL;
    }
    CO_ASSERT(json_object_deep_copy(v, &c, NULL) == 0);
    return c;
}

static int refuse(char **errpath, const char *path, const char *why)
{
    if (errpath) {
        *errpath = co_xstrdup(path);
    }
    return co_error_set(CO_EINVALID, "%s: %s", path, why);
}

/* Adds a copy of v under key; the key cannot be present already (the callers' rules exclude
 * every collision, and json-c objects have unique keys). */
static void put(json_object *o, const char *key, json_object *v)
{
    CO_ASSERT(!json_object_object_get_ex(o, key, NULL));
    json_object_object_add(o, key, copy(v));
}

static json_object *group_of(json_object *spec, const char *group)
{
    json_object *g = NULL;
    if (!json_object_object_get_ex(spec, group, &g)) {
        g = json_object_new_object();
        json_object_object_add(spec, group, g);
    }
    return g;
}

static int alpha_to_beta(json_object **out, json_object *spec, char **errpath)
{
    json_object *res = json_object_new_object();
    int rc = 0;
    /* groups go after the plain fields, in a fixed order */
    json_object *groups = json_object_new_object();
    json_object_object_foreach (spec, key, val) {
        const co_component_move *m = move_by_alpha(key);
        if (strcmp(key, "sourceRef") == 0) {
            if (!json_object_is_type(val, json_type_object)) {
                rc = refuse(errpath, "spec.sourceRef", "must be an object to be converted");
                goto done;
            }
            if (json_object_object_length(val) == 0) {
                rc = refuse(errpath, "spec.sourceRef", "an empty object cannot be converted");
                goto done;
            }
            json_object *source = group_of(groups, "source");
            json_object_object_foreach (val, skey, sval) {
                int http = strcmp(skey, "httpRepository") == 0;
                if (!http && (is_source_field(skey) || strcmp(skey, "http") == 0)) {
                    char *p = co_xasprintf("spec.sourceRef.%s", skey);
                    rc = refuse(errpath, p, "unknown field that cannot be converted");
                    free(p);
                    goto done;
                }
                put(source, http ? "http" : skey, sval);
            }
        } else if (m) {
            put(group_of(groups, m->group), m->beta, val);
        } else if (is_group(key)) {
            char *p = co_xasprintf("spec.%s", key);
            rc = refuse(errpath, p, "unknown field that cannot be converted");
            free(p);
            goto done;
        } else {
            put(res, key, val);
        }
    }
    for (size_t i = 0; co_component__groups[i]; i++) {
        json_object *g = NULL;
        if (json_object_object_get_ex(groups, co_component__groups[i], &g)) {
            put(res, co_component__groups[i], g);
        }
    }
done:
    json_object_put(groups);
    if (rc < 0) {
        json_object_put(res);
        return rc;
    }
    *out = res;
    return 0;
}

static int beta_to_alpha(json_object **out, json_object *spec, char **errpath)
{
    json_object *res = json_object_new_object();
    json_object *source_ref = json_object_new_object();
    int rc = 0;
    json_object_object_foreach (spec, key, val) {
        if (is_group(key)) {
            char *gpath = co_xasprintf("spec.%s", key);
            if (!json_object_is_type(val, json_type_object)) {
                rc = refuse(errpath, gpath, "must be an object to be converted");
            } else if (json_object_object_length(val) == 0) {
                rc = refuse(errpath, gpath, "an empty object cannot be converted");
            }
            if (rc < 0) {
                free(gpath);
                goto done;
            }
            json_object_object_foreach (val, gkey, gval) {
                if (strcmp(key, "source") == 0) {
                    if (is_source_field(gkey)) {
                        put(res, gkey, gval);
                    } else if (strcmp(gkey, "httpRepository") == 0) {
                        char *p = co_xasprintf("%s.%s", gpath, gkey);
                        rc = refuse(errpath, p, "unknown field that cannot be converted");
                        free(p);
                        break;
                    } else {
                        put(source_ref, strcmp(gkey, "http") == 0 ? "httpRepository" : gkey, gval);
                    }
                } else {
                    const co_component_move *m = move_by_beta(key, gkey);
                    if (!m) {
                        char *p = co_xasprintf("%s.%s", gpath, gkey);
                        rc = refuse(errpath, p, "unknown field that cannot be converted");
                        free(p);
                        break;
                    }
                    put(res, m->alpha, gval);
                }
            }
            free(gpath);
            if (rc < 0) {
                goto done;
            }
        } else if (move_by_alpha(key) || strcmp(key, "sourceRef") == 0) {
            char *p = co_xasprintf("spec.%s", key);
            rc = refuse(errpath, p, "unknown field that cannot be converted");
            free(p);
            goto done;
        } else {
            put(res, key, val);
        }
    }
    if (json_object_object_length(source_ref) > 0) {
        put(res, "sourceRef", source_ref);
    }
done:
    json_object_put(source_ref);
    if (rc < 0) {
        json_object_put(res);
        return rc;
    }
    *out = res;
    return 0;
}

int co_component__convert_spec(struct json_object **out,
                               const struct json_object *spec,
                               co_api_version from,
                               co_api_version to,
                               char **errpath)
{
    json_object *s = (json_object *)spec;
    CO_ASSERT(from != to);
    if (!json_object_is_type(s, json_type_object)) {
        *out = copy(s);
        return 0;
    }
    if (from == CO_API_V1ALPHA1 && to == CO_API_V1BETA1) {
        return alpha_to_beta(out, s, errpath);
    }
    CO_ASSERT(from == CO_API_V1BETA1 && to == CO_API_V1ALPHA1);
    return beta_to_alpha(out, s, errpath);
}

int co_component_convert(struct json_object **out,
                         const struct json_object *obj,
                         const char *desired_api_version)
{
    co_api_version from = co_component_version(obj);
    co_api_version to = CO_API_UNKNOWN;
    json_object *res = NULL;
    if (from == CO_API_UNKNOWN) {
        return co_error_set(CO_EINVALID, "not a %s or %s %s", CO_COMPONENT_V1ALPHA1,
                            CO_COMPONENT_V1BETA1, CO_COMPONENT_KIND);
    }
    if (desired_api_version && strcmp(desired_api_version, CO_COMPONENT_V1ALPHA1) == 0) {
        to = CO_API_V1ALPHA1;
    } else if (desired_api_version && strcmp(desired_api_version, CO_COMPONENT_V1BETA1) == 0) {
        to = CO_API_V1BETA1;
    } else {
        return co_error_set(CO_EINVALID, "cannot convert to \"%s\": served versions are %s and %s",
                            desired_api_version ? desired_api_version : "", CO_COMPONENT_V1ALPHA1,
                            CO_COMPONENT_V1BETA1);
    }
    res = copy((json_object *)obj);
    if (from == to) {
        *out = res;
        return 0;
    }
    json_object *spec = NULL;
    if (json_object_object_get_ex(res, "spec", &spec)) {
        json_object *converted = NULL;
        int rc = co_component__convert_spec(&converted, spec, from, to, NULL);
        if (rc < 0) {
            json_object_put(res);
            return co_error_wrap("converting to %s", desired_api_version);
        }
        json_object_object_add(res, "spec", converted);
    }
    json_object_object_add(res, "apiVersion", json_object_new_string(desired_api_version));
    *out = res;
    return 0;
}

char *co_component_path_to_v1beta1(const char *path)
{
    static const char prefix[] = "spec.";
    if (strncmp(path, prefix, sizeof(prefix) - 1) != 0) {
        return co_xstrdup(path);
    }
    const char *rest = path + sizeof(prefix) - 1;
    size_t n = strcspn(rest, ".[");
    char *first = co_xstrndup(rest, n);
    const char *tail = rest + n;
    char *res = NULL;
    const co_component_move *m = move_by_alpha(first);
    if (m) {
        res = co_xasprintf("spec.%s.%s%s", m->group, m->beta, tail);
    } else if (strcmp(first, "sourceRef") == 0) {
        if (strncmp(tail, ".httpRepository", 15) == 0 &&
            (tail[15] == '\0' || tail[15] == '.' || tail[15] == '[')) {
            res = co_xasprintf("spec.source.http%s", tail + 15);
        } else {
            res = co_xasprintf("spec.source%s", tail);
        }
    } else {
        res = co_xstrdup(path);
    }
    free(first);
    return res;
}
