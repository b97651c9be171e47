/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON Patch (RFC 6902) application and generation, and JSON merge patch (RFC 7386).
 *
 * Application works on a deep copy so that a patch applies completely or not at all; the
 * webhook and the controller never see a half-patched object. Generation is a recursive
 * structural diff: objects member by member, arrays of equal length element by element, and
 * arrays of different length by trimming the common head and tail first, so that inserting or
 * removing one element in a long list costs one operation.
 */
#include "co/json/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "json_int.h"

/* ============================================================================================
 * Pointer resolution for patch operations
 * ========================================================================================== */

/* A location inside a document: the container holding it and the token naming it. */
typedef struct location {
    struct json_object *parent; /* NULL for the root */
    co_buf token;               /* last reference token, unescaped */
} location;

/*
 * Resolves every token of @p pointer but the last in *root; the parent must exist and be an
 * object or array. An empty pointer designates the root itself (parent NULL).
 */
static int locate(location *loc, struct json_object *root, const char *pointer)
{
    co_buf tok = CO_BUF_INIT(SIZE_MAX);
    int rc = 0;
    loc->parent = NULL;
    co_buf_init(&loc->token, SIZE_MAX);
    if (pointer[0] == '\0') {
        return 0;
    }
    if (pointer[0] != '/') {
        return co_error_set(CO_EINVALID, "path \"%s\" is not a JSON pointer (must start with '/')",
                            pointer);
    }
    const char *p = pointer;
    struct json_object *cur = root;
    for (;;) {
        if ((rc = co_json__pointer_next(&p, &tok)) < 0) {
            goto done;
        }
        if (*p == '\0') {
            break;
        }
        struct json_object *next = NULL;
        const char *key = co_buf_cstr(&tok);
        int found = 0;
        if (json_object_is_type(cur, json_type_object)) {
            found = json_object_object_get_ex(cur, key, &next);
        } else if (json_object_is_type(cur, json_type_array)) {
            char *end = NULL;
            unsigned long long idx = strtoull(key, &end, 10);
            found = key[0] >= '0' && key[0] <= '9' && !(key[0] == '0' && key[1]) && end &&
                    *end == '\0' && idx < json_object_array_length(cur);
            if (found) {
                next = json_object_array_get_idx(cur, (size_t)idx);
            }
        }
        if (!found) {
            rc = co_error_set(CO_EINVALID, "path \"%s\" does not exist", pointer);
            goto done;
        }
        cur = next;
    }
    if (!json_object_is_type(cur, json_type_object) && !json_object_is_type(cur, json_type_array)) {
        rc = co_error_set(CO_EINVALID, "path \"%s\": parent is %s, not an object or array", pointer,
                          co_json_type_name(cur));
        goto done;
    }
    loc->parent = cur;
    rc = co_buf_put(&loc->token, co_buf_cstr(&tok), tok.len);
done:
    co_buf_dispose(&tok);
    return rc;
}

/* Parses an array index token for an array of length @p len; "-" yields len when allowed. */
static int array_index(size_t *out, const char *tok, size_t len, int allow_end, const char *path)
{
    if (allow_end && strcmp(tok, "-") == 0) {
        *out = len;
        return 0;
    }
    size_t v = 0;
    if (co_json__array_index(tok, &v) < 0) {
        return co_error_set(CO_EINVALID, "path \"%s\": \"%s\" is not an array index", path, tok);
    }
    if (v > len || (!allow_end && v == len)) {
        return co_error_set(CO_EINVALID, "path \"%s\": index %zu is out of range (length %zu)",
                            path, v, len);
    }
    *out = v;
    return 0;
}

/* Inserts @p value (ownership taken) at @p idx of @p arr, shifting later elements. */
static void array_insert(struct json_object *arr, size_t idx, struct json_object *value)
{
    size_t len = json_object_array_length(arr);
    json_object_array_add(arr, NULL);
    for (size_t j = len; j > idx; j--) {
        json_object_array_put_idx(arr, j, json_object_get(json_object_array_get_idx(arr, j - 1)));
    }
    json_object_array_put_idx(arr, idx, value);
}

/* The "add" operation; takes ownership of @p value in every case. */
static int op_add(struct json_object **root, const char *path, struct json_object *value)
{
    location loc;
    int rc = locate(&loc, *root, path);
    if (rc < 0) {
        json_object_put(value);
        goto done;
    }
    if (!loc.parent) {
        json_object_put(*root);
        *root = value;
        goto done;
    }
    if (json_object_is_type(loc.parent, json_type_object)) {
        json_object_object_add(loc.parent, co_buf_cstr(&loc.token), value);
        goto done;
    }
    size_t idx = 0;
    rc = array_index(&idx, co_buf_cstr(&loc.token), json_object_array_length(loc.parent), 1, path);
    if (rc < 0) {
        json_object_put(value);
        goto done;
    }
    array_insert(loc.parent, idx, value);
done:
    co_buf_dispose(&loc.token);
    return rc;
}

/*
 * Detaches the value at @p path. With @p out the value is handed to the caller (a new
 * reference); without, it is released.
 */
static int op_remove(struct json_object **root, const char *path, struct json_object **out)
{
    location loc;
    int rc = locate(&loc, *root, path);
    if (rc < 0) {
        goto done;
    }
    if (!loc.parent) {
        rc = co_error_set(CO_EINVALID, "path \"\": cannot remove the whole document");
        goto done;
    }
    const char *tok = co_buf_cstr(&loc.token);
    if (json_object_is_type(loc.parent, json_type_object)) {
        struct json_object *v = NULL;
        if (!json_object_object_get_ex(loc.parent, tok, &v)) {
            rc = co_error_set(CO_EINVALID, "path \"%s\" does not exist", path);
            goto done;
        }
        if (out) {
            *out = json_object_get(v);
        }
        json_object_object_del(loc.parent, tok);
        goto done;
    }
    size_t idx = 0;
    if ((rc = array_index(&idx, tok, json_object_array_length(loc.parent), 0, path)) < 0) {
        goto done;
    }
    if (out) {
        *out = json_object_get(json_object_array_get_idx(loc.parent, idx));
    }
    json_object_array_del_idx(loc.parent, idx, 1);
done:
    co_buf_dispose(&loc.token);
    return rc;
}

/* The value at @p path, borrowed; the path must exist. */
static int op_get(struct json_object **out, struct json_object *root, const char *path)
{
    int rc = co_json_pointer_get(out, root, path);
    if (rc == CO_ENOTFOUND) {
        rc = co_error_set(CO_EINVALID, "path \"%s\" does not exist", path);
    }
    return rc;
}

/* Reads a string member of a patch operation; NULL (error set, CO_EINVALID) when it is not one. */
static const char *op_string(struct json_object *op, const char *name)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(op, name, &v)) {
        co_error_set(CO_EINVALID, "missing \"%s\"", name);
        return NULL;
    }
    if (!json_object_is_type(v, json_type_string)) {
        co_error_set(CO_EINVALID, "\"%s\" must be a string, got %s", name, co_json_type_name(v));
        return NULL;
    }
    return json_object_get_string(v);
}

static int apply_one(struct json_object **doc, struct json_object *op)
{
    const char *name = NULL, *path = NULL, *from = NULL;
    struct json_object *value = NULL, *tmp = NULL;
    int rc = 0;
    if (!json_object_is_type(op, json_type_object)) {
        return co_error_set(CO_EINVALID, "operation must be an object, got %s",
                            co_json_type_name(op));
    }
    if (!(name = op_string(op, "op")) || !(path = op_string(op, "path"))) {
        return CO_EINVALID;
    }
    int has_value = json_object_object_get_ex(op, "value", &value);
    int is_add = strcmp(name, "add") == 0, is_remove = strcmp(name, "remove") == 0;
    int is_replace = strcmp(name, "replace") == 0, is_test = strcmp(name, "test") == 0;
    int is_move = strcmp(name, "move") == 0, is_copy = strcmp(name, "copy") == 0;

    if (!(is_add || is_remove || is_replace || is_test || is_move || is_copy)) {
        return co_error_set(CO_EINVALID, "unknown operation \"%s\"", name);
    }
    if ((is_add || is_replace || is_test) && !has_value) {
        rc = co_error_set(CO_EINVALID, "missing \"value\"");
    } else if ((is_move || is_copy) && !(from = op_string(op, "from"))) {
        rc = CO_EINVALID;
    }
    if (rc < 0) {
        goto done;
    }

    if (is_add) {
        rc = op_add(doc, path, co_json_copy(value));
    } else if (is_remove) {
        rc = op_remove(doc, path, NULL);
    } else if (is_replace) {
        if ((rc = op_get(&tmp, *doc, path)) == 0) {
            if (path[0] == '\0') {
                json_object_put(*doc);
                *doc = co_json_copy(value);
            } else if ((rc = op_remove(doc, path, NULL)) == 0) {
                rc = op_add(doc, path, co_json_copy(value));
            }
        }
    } else if (is_test) {
        if ((rc = op_get(&tmp, *doc, path)) == 0 && !co_json_equal(tmp, value)) {
            rc = co_error_set(CO_ECONFLICT, "value differs");
        }
    } else if (is_copy) {
        if ((rc = op_get(&tmp, *doc, from)) == 0) {
            rc = op_add(doc, path, co_json_copy(tmp));
        }
    } else { /* move */
        size_t fl = strlen(from);
        if (strcmp(path, from) == 0) {
            rc = op_get(&tmp, *doc, from);
        } else if (strncmp(path, from, fl) == 0 && path[fl] == '/') {
            rc = co_error_set(CO_EINVALID, "cannot move \"%s\" into itself", from);
        } else if ((rc = op_remove(doc, from, &tmp)) == 0) {
            rc = op_add(doc, path, tmp);
        }
    }
done:
    if (rc < 0) {
        co_error_wrap("%s %s", name, path);
    }
    return rc;
}

int co_json_patch_apply(struct json_object **out,
                        const struct json_object *doc,
                        const struct json_object *patch)
{
    if (!json_object_is_type(patch, json_type_array)) {
        return co_error_set(CO_EINVALID, "JSON patch must be an array, got %s",
                            co_json_type_name(patch));
    }
    struct json_object *work = co_json_copy(doc);
    size_t n = json_object_array_length(patch);
    for (size_t i = 0; i < n; i++) {
        int rc = apply_one(&work, json_object_array_get_idx(patch, i));
        if (rc < 0) {
            json_object_put(work);
            return co_error_wrap("JSON patch operation %zu", i);
        }
    }
    *out = work;
    return 0;
}

/* ============================================================================================
 * Patch generation
 * ========================================================================================== */

/* Appends the escaped reference token @p key to the pointer in @p path. */
static void path_push(co_buf *path, const char *key)
{
    int rc = co_buf_putc(path, '/');
    for (const char *p = key; rc == 0 && *p; p++) {
        if (*p == '~') {
            rc = co_buf_puts(path, "~0");
        } else if (*p == '/') {
            rc = co_buf_puts(path, "~1");
        } else {
            rc = co_buf_putc(path, *p);
        }
    }
    CO_ASSERT(rc == 0);
}

static void emit(struct json_object *patch,
                 const char *op,
                 const char *path,
                 const struct json_object *value,
                 int with_value)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "op", json_object_new_string(op));
    json_object_object_add(o, "path", json_object_new_string(path));
    if (with_value) {
        json_object_object_add(o, "value", co_json_copy(value));
    }
    json_object_array_add(patch, o);
}

static int same_kind(const struct json_object *a, const struct json_object *b, json_type t)
{
    return json_object_is_type(a, t) && json_object_is_type(b, t);
}

static void diff(struct json_object *patch,
                 co_buf *path,
                 const struct json_object *a,
                 const struct json_object *b);

static void diff_object(struct json_object *patch,
                        co_buf *path,
                        const struct json_object *a,
                        const struct json_object *b)
{
    size_t mark = path->len;
    json_object_object_foreach ((struct json_object *)a, ka, va) {
        struct json_object *vb = NULL;
        path_push(path, ka);
        if (!json_object_object_get_ex(b, ka, &vb)) {
            emit(patch, "remove", co_buf_cstr(path), NULL, 0);
        } else {
            diff(patch, path, va, vb);
        }
        co_buf_truncate(path, mark);
    }
    json_object_object_foreach ((struct json_object *)b, kb, vb) {
        if (!json_object_object_get_ex(a, kb, NULL)) {
            path_push(path, kb);
            emit(patch, "add", co_buf_cstr(path), vb, 1);
            co_buf_truncate(path, mark);
        }
    }
}

static void diff_array(struct json_object *patch,
                       co_buf *path,
                       const struct json_object *a,
                       const struct json_object *b)
{
    size_t na = json_object_array_length(a), nb = json_object_array_length(b);
    size_t mark = path->len;
    size_t head = 0, tail = 0;
    char idx[32];
    if (na != nb) {
        while (
            head < na && head < nb &&
            co_json_equal(json_object_array_get_idx(a, head), json_object_array_get_idx(b, head))) {
            head++;
        }
        while (tail < na - head && tail < nb - head &&
               co_json_equal(json_object_array_get_idx(a, na - 1 - tail),
                             json_object_array_get_idx(b, nb - 1 - tail))) {
            tail++;
        }
    }
    size_t ma = na - head - tail, mb = nb - head - tail; /* the differing middles */
    size_t common = ma < mb ? ma : mb;
    for (size_t i = 0; i < common; i++) {
        snprintf(idx, sizeof(idx), "%zu", head + i);
        path_push(path, idx);
        diff(patch, path, json_object_array_get_idx(a, head + i),
             json_object_array_get_idx(b, head + i));
        co_buf_truncate(path, mark);
    }
    /* surplus elements of a: removed from the last, so earlier indices stay valid */
    for (size_t i = ma; i > common; i--) {
        snprintf(idx, sizeof(idx), "%zu", head + i - 1);
        path_push(path, idx);
        emit(patch, "remove", co_buf_cstr(path), NULL, 0);
        co_buf_truncate(path, mark);
    }
    /* surplus elements of b: inserted in order before the common tail */
    for (size_t i = common; i < mb; i++) {
        if (tail == 0) {
            path_push(path, "-");
        } else {
            snprintf(idx, sizeof(idx), "%zu", head + i);
            path_push(path, idx);
        }
        emit(patch, "add", co_buf_cstr(path), json_object_array_get_idx(b, head + i), 1);
        co_buf_truncate(path, mark);
    }
}

static void diff(struct json_object *patch,
                 co_buf *path,
                 const struct json_object *a,
                 const struct json_object *b)
{
    if (same_kind(a, b, json_type_object)) {
        diff_object(patch, path, a, b);
    } else if (same_kind(a, b, json_type_array)) {
        diff_array(patch, path, a, b);
    } else if (!co_json_equal(a, b) || json_object_get_type(a) != json_object_get_type(b)) {
        emit(patch, "replace", co_buf_cstr(path), b, 1);
    }
}

struct json_object *co_json_patch_diff(const struct json_object *from, const struct json_object *to)
{
    struct json_object *patch = json_object_new_array();
    co_buf path = CO_BUF_INIT(SIZE_MAX);
    CO_ASSERT(co_buf_puts(&path, "") == 0);
    diff(patch, &path, from, to);
    co_buf_dispose(&path);
    return patch;
}

/* ============================================================================================
 * JSON merge patch (RFC 7386)
 * ========================================================================================== */

struct json_object *co_json_merge_patch_apply(const struct json_object *doc,
                                              const struct json_object *patch)
{
    if (!json_object_is_type(patch, json_type_object)) {
        return co_json_copy(patch);
    }
    struct json_object *res =
        json_object_is_type(doc, json_type_object) ? co_json_copy(doc) : json_object_new_object();
    json_object_object_foreach ((struct json_object *)patch, key, val) {
        if (val == NULL) {
            json_object_object_del(res, key);
            continue;
        }
        struct json_object *cur = NULL;
        json_object_object_get_ex(res, key, &cur);
        json_object_object_add(res, key, co_json_merge_patch_apply(cur, val));
    }
    return res;
}

struct json_object *co_json_merge_patch_diff(const struct json_object *from,
                                             const struct json_object *to)
{
    if (!json_object_is_type(from, json_type_object) ||
        !json_object_is_type(to, json_type_object)) {
        return co_json_copy(to);
    }
    struct json_object *patch = json_object_new_object();
    json_object_object_foreach ((struct json_object *)from, kf, vf) {
        struct json_object *vt = NULL;
        if (!json_object_object_get_ex(to, kf, &vt) || vt == NULL) {
            json_object_object_add(patch, kf, NULL);
        } else if (json_object_is_type(vf, json_type_object) &&
                   json_object_is_type(vt, json_type_object)) {
            struct json_object *sub = co_json_merge_patch_diff(vf, vt);
            if (json_object_object_length(sub) > 0) {
                json_object_object_add(patch, kf, sub);
            } else {
                json_object_put(sub);
            }
        } else if (!co_json_equal(vf, vt) || json_object_get_type(vf) != json_object_get_type(vt)) {
            json_object_object_add(patch, kf, co_json_merge_patch_diff(NULL, vt));
        }
    }
    json_object_object_foreach ((struct json_object *)to, kt, vt) {
        if (vt != NULL && !json_object_object_get_ex(from, kt, NULL)) {
            json_object_object_add(patch, kt, co_json_merge_patch_diff(NULL, vt));
        }
    }
    return patch;
}
