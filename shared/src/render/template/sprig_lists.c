/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sprig's list, dict, default and reflection functions (list.go, dict.go, defaults.go,
 * reflect.go), with mergo 0.3's merge rules and copystructure's deep copy, and the
 * reflect-level failures (nil lists, wrong kinds) worded as Go reports them.
 */
#include <math.h>
#include <string.h>

#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "sprig.h"

/* reflect.TypeOf(list).Kind() on a list argument: nil panics, other kinds fail with @what. */
static int need_list(tpl_x *x, const tv *v, const char *what)
{
    if (sp_is_nil(v)) {
        return sp_panic_nil(x);
    }
    if (!sp_is_list(v)) {
        return tpl_fail(x, "%s %s", what, sp_kind_name(v));
    }
    return 0;
}

static tv any_list(tpl_x *x, size_t n)
{
    return tv_list_new(x, &T_LIST_ANY, n);
}

/* A value stored in an interface{} slot: a nil interface stays one. */
static tv boxed(const tv *v)
{
    if (!v->t) {
        return tv_nil(&T_IFACE);
    }
    return *v;
}

static int fn_list(tpl_x *x, tv *ret, tv *a, size_t n)
{
    tv l = any_list(x, n);
    for (size_t i = 0; i < n; i++) {
        l.u.l->items[i] = boxed(&a[i]);
    }
    *ret = l;
    return 0;
}

static int fn_push(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_list(x, &a[0], "Cannot push on type") < 0) {
        return -1;
    }
    size_t len = (size_t)tv_len(&a[0]);
    tv l = any_list(x, len + 1);
    for (size_t i = 0; i < len; i++) {
        l.u.l->items[i] = sp_list_item(&a[0], i);
    }
    l.u.l->items[len] = boxed(&a[1]);
    *ret = l;
    return 0;
}

static int fn_prepend(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_list(x, &a[0], "Cannot prepend on type") < 0) {
        return -1;
    }
    size_t len = (size_t)tv_len(&a[0]);
    tv l = any_list(x, len + 1);
    l.u.l->items[0] = boxed(&a[1]);
    for (size_t i = 0; i < len; i++) {
        l.u.l->items[i + 1] = sp_list_item(&a[0], i);
    }
    *ret = l;
    return 0;
}

static int fn_first(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_list(x, &a[0], "Cannot find first on type") < 0) {
        return -1;
    }
    *ret = tv_len(&a[0]) == 0 ? tv_nil(&T_IFACE) : sp_list_item(&a[0], 0);
    return 0;
}

static int fn_last(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_list(x, &a[0], "Cannot find last on type") < 0) {
        return -1;
    }
    int64_t len = tv_len(&a[0]);
    *ret = len == 0 ? tv_nil(&T_IFACE) : sp_list_item(&a[0], (size_t)len - 1);
    return 0;
}

static int sub_list(tpl_x *x, tv *ret, const tv *v, size_t from)
{
    size_t len = (size_t)tv_len(v);
    if (len == 0) {
        *ret = tv_nil(&T_LIST_ANY);
        return 0;
    }
    tv l = any_list(x, len - 1);
    for (size_t i = 0; i + 1 < len; i++) {
        l.u.l->items[i] = sp_list_item(v, i + from);
    }
    *ret = l;
    return 0;
}

static int fn_rest(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_list(x, &a[0], "Cannot find rest on type") < 0) {
        return -1;
    }
    return sub_list(x, ret, &a[0], 1);
}

static int fn_initial(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_list(x, &a[0], "Cannot find initial on type") < 0) {
        return -1;
    }
    return sub_list(x, ret, &a[0], 0);
}

static int fn_reverse(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_list(x, &a[0], "Cannot find reverse on type") < 0) {
        return -1;
    }
    size_t len = (size_t)tv_len(&a[0]);
    tv l = any_list(x, len);
    for (size_t i = 0; i < len; i++) {
        l.u.l->items[len - 1 - i] = sp_list_item(&a[0], i);
    }
    *ret = l;
    return 0;
}

static int fn_compact(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_list(x, &a[0], "Cannot compact on type") < 0) {
        return -1;
    }
    size_t len = (size_t)tv_len(&a[0]);
    tv l = any_list(x, len);
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        tv it = sp_list_item(&a[0], i);
        if (!sp_empty(&it)) {
            l.u.l->items[k++] = it;
        }
    }
    l.u.l->n = k;
    *ret = l;
    return 0;
}

/* Whether @p needle is among @p items (reflect.DeepEqual), into @p found. */
static int in_items(tpl_x *x, const tv *items, size_t n, const tv *needle, bool *found)
{
    *found = false;
    for (size_t i = 0; i < n && !*found; i++) {
        int rc = co_budget_tick();
        if (rc < 0) {
            return tpl_fail_budget(x, rc);
        }
        if (tv_deep_equal(x, needle, &items[i], found) < 0) {
            return -1;
        }
    }
    return 0;
}

static int fn_uniq(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_list(x, &a[0], "Cannot find uniq on type") < 0) {
        return -1;
    }
    size_t len = (size_t)tv_len(&a[0]);
    tv l = any_list(x, len);
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        tv it = sp_list_item(&a[0], i);
        bool found = false;
        if (in_items(x, l.u.l->items, k, &it, &found) < 0) {
            return -1;
        }
        if (!found) {
            l.u.l->items[k++] = it;
        }
    }
    l.u.l->n = k;
    *ret = l;
    return 0;
}

static int fn_without(tpl_x *x, tv *ret, tv *a, size_t n)
{
    if (need_list(x, &a[0], "Cannot find without on type") < 0) {
        return -1;
    }
    size_t len = (size_t)tv_len(&a[0]);
    tv l = any_list(x, len);
    size_t k = 0;
    tv *omit = tpl_alloc(x, (n ? n : 1) * sizeof(tv));
    for (size_t i = 1; i < n; i++) {
        omit[i - 1] = boxed(&a[i]);
    }
    for (size_t i = 0; i < len; i++) {
        tv it = sp_list_item(&a[0], i);
        bool found = false;
        if (in_items(x, omit, n - 1, &it, &found) < 0) {
            return -1;
        }
        if (!found) {
            l.u.l->items[k++] = it;
        }
    }
    l.u.l->n = k;
    *ret = l;
    return 0;
}

static int fn_has(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (sp_is_nil(&a[1])) {
        *ret = tv_bool(false);
        return 0;
    }
    if (need_list(x, &a[1], "Cannot find has on type") < 0) {
        return -1;
    }
    size_t len = (size_t)tv_len(&a[1]);
    tv needle = boxed(&a[0]);
    for (size_t i = 0; i < len; i++) {
        tv it = sp_list_item(&a[1], i);
        bool eq = false;
        if (tv_deep_equal(x, &needle, &it, &eq) < 0) {
            return -1;
        }
        if (eq) {
            *ret = tv_bool(true);
            return 0;
        }
    }
    *ret = tv_bool(false);
    return 0;
}

/* cast.ToInt */
static int64_t to_int(const tv *v)
{
    int64_t i = 0;
    if (!sp_to_int64(v, &i)) {
        return 0;
    }
    return i;
}

static int fn_slice(tpl_x *x, tv *ret, tv *a, size_t n)
{
    if (need_list(x, &a[0], "list should be type of slice or array but") < 0) {
        return -1;
    }
    int64_t len = tv_len(&a[0]);
    if (len == 0) {
        *ret = tv_nil(&T_IFACE);
        return 0;
    }
    int64_t start = n > 1 ? to_int(&a[1]) : 0;
    int64_t end = n > 2 ? to_int(&a[2]) : len;
    if (start < 0 || end < start || end > len) {
        return tpl_fail(x, "reflect.Value.Slice: slice index out of bounds");
    }
    if (a[0].t == &T_BYTES) {
        *ret = tv_bytes(x, a[0].u.s->s + start, (size_t)(end - start));
        return 0;
    }
    tv l = tv_list_new(x, a[0].t, (size_t)(end - start));
    for (int64_t i = start; i < end; i++) {
        l.u.l->items[i - start] = a[0].u.l->items[i];
    }
    *ret = l;
    return 0;
}

static int fn_concat(tpl_x *x, tv *ret, tv *a, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (sp_is_nil(&a[i])) {
            return sp_panic_nil(x);
        }
        if (!sp_is_list(&a[i])) {
            return tpl_fail(x, "Cannot concat type %s as list", sp_kind_name(&a[i]));
        }
        total += (size_t)tv_len(&a[i]);
    }
    if (total == 0) {
        *ret = tv_nil(&T_LIST_ANY);
        return 0;
    }
    /* doubling a list in a loop is how a template would take all memory */
    if (tpl_reserve(x, total, sizeof(tv)) < 0) {
        return -1;
    }
    tv l = any_list(x, total);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = (size_t)tv_len(&a[i]);
        for (size_t j = 0; j < len; j++) {
            l.u.l->items[k++] = sp_list_item(&a[i], j);
        }
    }
    *ret = l;
    return 0;
}

static int fn_chunk(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (need_list(x, &a[1], "Cannot chunk type") < 0) {
        return -1;
    }
    int64_t size = a[0].u.i;
    int64_t len = tv_len(&a[1]);
    int64_t cs = sp_f2i(floor((double)(len - 1) / (double)size) + 1);
    if (cs < 0 || cs > (int64_t)CO_MAX_TEMPLATE_OUTPUT) {
        return tpl_fail(x, "runtime error: makeslice: len out of range");
    }
    /* the chunks, their headers and the items again */
    if (tpl_reserve(x, (size_t)cs + (size_t)len, 3 * sizeof(tv)) < 0) {
        return -1;
    }
    tv out = tv_list_new(x, &T_LIST_LIST_ANY, (size_t)cs);
    for (int64_t i = 0; i < cs; i++) {
        int64_t clen = size;
        if (i == cs - 1) {
            clen = sp_f2i(floor(fmod((double)len, (double)size)));
            if (clen == 0) {
                clen = size;
            }
        }
        if (clen < 0 || clen > (int64_t)CO_MAX_TEMPLATE_OUTPUT) {
            return tpl_fail(x, "runtime error: makeslice: len out of range");
        }
        tv c = any_list(x, (size_t)clen);
        for (int64_t j = 0; j < clen; j++) {
            int64_t ix = i * size + j;
            if (ix < 0 || ix >= len) {
                return tpl_fail(x, "reflect: slice index out of range");
            }
            c.u.l->items[j] = sp_list_item(&a[1], (size_t)ix);
        }
        out.u.l->items[i] = c;
    }
    *ret = out;
    return 0;
}

/* ---- dicts -------------------------------------------------------------------------------- */

static int fn_dict(tpl_x *x, tv *ret, tv *a, size_t n)
{
    tv m = tv_map_new(x, &T_MAP_ANY, (n + 1) / 2);
    for (size_t i = 0; i < n; i += 2) {
        tv k;
        if (sp_strval_tv(x, &a[i], &k) < 0) {
            return -1;
        }
        tv v = i + 1 < n ? boxed(&a[i + 1]) : tv_string(x, "", 0);
        tv_map_set(x, m.u.m, k.u.s, v);
    }
    *ret = m;
    return 0;
}

static int fn_get(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    tv *v = a[0].u.m ? tv_map_get(a[0].u.m, a[1].u.s->s, a[1].u.s->len) : NULL;
    *ret = v ? *v : tv_string(x, "", 0);
    return 0;
}

static int fn_set(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (!a[0].u.m) {
        return tpl_fail(x, "assignment to entry in nil map");
    }
    tv_map_set(x, a[0].u.m, a[1].u.s, boxed(&a[2]));
    *ret = a[0];
    return 0;
}

static int fn_unset(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    if (a[0].u.m) {
        tpl_ignore(tv_map_del(a[0].u.m, a[1].u.s->s, a[1].u.s->len));
    }
    *ret = a[0];
    return 0;
}

static int fn_has_key(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = tv_bool(a[0].u.m && tv_map_get(a[0].u.m, a[1].u.s->s, a[1].u.s->len) != NULL);
    return 0;
}

static int fn_pluck(tpl_x *x, tv *ret, tv *a, size_t n)
{
    tv l = any_list(x, n);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        tv *v = a[i].u.m ? tv_map_get(a[i].u.m, a[0].u.s->s, a[0].u.s->len) : NULL;
        if (v) {
            l.u.l->items[k++] = *v;
        }
    }
    l.u.l->n = k;
    *ret = l;
    return 0;
}

static int fn_keys(tpl_x *x, tv *ret, tv *a, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += a[i].u.m ? a[i].u.m->n : 0;
    }
    if (tpl_reserve(x, total, sizeof(tv)) < 0) {
        return -1;
    }
    tv l = tv_list_new(x, &T_LIST_STRING, total);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; a[i].u.m && j < a[i].u.m->n; j++) {
            tv s = {&T_STRING, {.s = a[i].u.m->keys[j]}};
            l.u.l->items[k++] = s;
        }
    }
    *ret = l;
    return 0;
}

static int fn_values(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    size_t len = a[0].u.m ? a[0].u.m->n : 0;
    tv l = any_list(x, len);
    for (size_t j = 0; j < len; j++) {
        l.u.l->items[j] = a[0].u.m->vals[j];
    }
    *ret = l;
    return 0;
}

static int fn_pick(tpl_x *x, tv *ret, tv *a, size_t n)
{
    tv m = tv_map_new(x, &T_MAP_ANY, n);
    for (size_t i = 1; i < n; i++) {
        tv *v = a[0].u.m ? tv_map_get(a[0].u.m, a[i].u.s->s, a[i].u.s->len) : NULL;
        if (v) {
            tv_map_set(x, m.u.m, a[i].u.s, *v);
        }
    }
    *ret = m;
    return 0;
}

static int fn_omit(tpl_x *x, tv *ret, tv *a, size_t n)
{
    size_t len = a[0].u.m ? a[0].u.m->n : 0;
    tv m = tv_map_new(x, &T_MAP_ANY, len);
    for (size_t j = 0; j < len; j++) {
        const tv_str *k = a[0].u.m->keys[j];
        bool drop = false;
        for (size_t i = 1; i < n && !drop; i++) {
            drop = a[i].u.s->len == k->len && memcmp(a[i].u.s->s, k->s, k->len) == 0;
        }
        if (!drop) {
            tv_map_set(x, m.u.m, k, a[0].u.m->vals[j]);
        }
    }
    *ret = m;
    return 0;
}

/* mergo 0.3's isEmptyValue */
static bool merge_empty(const tv *v)
{
    if (tv_kind(v) == TK_STRUCT) {
        return false;
    }
    return sp_empty(v);
}

/* mergo.Merge / MergeWithOverwrite of two map[string]interface{} (see the rules in
 * mergo's deepMerge for map elements). @p path holds the maps of @p dst being merged into. */
static int merge_maps(tpl_x *x, tv_path *path, tv *dstv, const tv_map *src, bool overwrite)
{
    int rc = co_budget_tick();
    if (rc < 0) {
        return tpl_fail_budget(x, rc);
    }
    int in = tv_path_enter(path, dstv);
    if (in < 0) {
        return tv_path_fail(x, path, dstv);
    }
    tv_map *dst = dstv->u.m;
    for (size_t i = 0; src && i < src->n && rc == 0; i++) {
        const tv_str *key = src->keys[i];
        tv sv = src->vals[i];
        tv *dp = tv_map_get(dst, key->s, key->len);
        if (sp_is_nil(&sv)) {
            if (overwrite) {
                tv_map_set(x, dst, key, tv_nil(&T_IFACE));
            }
            continue;
        }
        tk sk = tv_kind(&sv);
        if (sk == TK_MAP && dp && tv_kind(dp) == TK_MAP && dp->u.m && sv.u.m && dp->t == sv.t) {
            tv sub = *dp;
            if ((rc = merge_maps(x, path, &sub, sv.u.m, overwrite)) < 0) {
                break;
            }
        }
        /* the element may have moved while merging into the same map */
        dp = tv_map_get(dst, key->s, key->len);
        if (dp && !merge_empty(dp) && (sk == TK_MAP || sk == TK_SLICE)) {
            if (sk == TK_SLICE && overwrite) {
                tv_map_set(x, dst, key, sv);
            }
            continue;
        }
        if (overwrite || !dp || merge_empty(dp)) {
            tv_map_set(x, dst, key, sv);
        }
    }
    if (in > 0) {
        tv_path_leave(path);
    }
    return rc;
}

static int merge(tpl_x *x, tv *ret, tv *a, size_t n, bool overwrite)
{
    tv dst = a[0];
    tv_path path;
    path.n = 0;
    for (size_t i = 1; i < n; i++) {
        if (!dst.u.m && a[i].u.m) {
            dst = tv_map_new(x, &T_MAP_ANY, a[i].u.m->n);
        }
        if (dst.u.m && merge_maps(x, &path, &dst, a[i].u.m, overwrite) < 0) {
            return -1;
        }
    }
    *ret = dst;
    return 0;
}

static int fn_merge(tpl_x *x, tv *ret, tv *a, size_t n)
{
    return merge(x, ret, a, n, false);
}

static int fn_merge_overwrite(tpl_x *x, tv *ret, tv *a, size_t n)
{
    return merge(x, ret, a, n, true);
}

static int fn_deep_copy(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    if (sp_is_nil(&a[0])) {
        return tpl_fail(x, "reflect: call of reflect.Value.Type on zero Value");
    }
    return tv_deep_copy(x, &a[0], ret);
}

static int assert_fail(tpl_x *x, const tv *v, const char *want)
{
    return tpl_fail(x, "interface conversion: interface {} is %s, not %s",
                    sp_is_nil(v) ? "nil" : tv_type_name(v), want);
}

static int fn_dig(tpl_x *x, tv *ret, tv *a, size_t n)
{
    if (n < 3) {
        return tpl_fail(x, "dig needs at least three arguments");
    }
    tv d = a[n - 1];
    if (d.t != &T_MAP_ANY) {
        return assert_fail(x, &d, "map[string]interface {}");
    }
    tv def = boxed(&a[n - 2]);
    size_t nk = n - 2;
    for (size_t i = 0; i < nk; i++) {
        if (a[i].t != &T_STRING) {
            return assert_fail(x, &a[i], "string");
        }
    }
    for (size_t i = 0; i < nk; i++) {
        tv *step = d.u.m ? tv_map_get(d.u.m, a[i].u.s->s, a[i].u.s->len) : NULL;
        if (!step) {
            *ret = def;
            return 0;
        }
        if (i == nk - 1) {
            *ret = *step;
            return 0;
        }
        if (step->t != &T_MAP_ANY) {
            return assert_fail(x, step, "map[string]interface {}");
        }
        d = *step;
    }
    *ret = def;
    return 0;
}

/* ---- defaults ----------------------------------------------------------------------------- */

static int fn_default(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    if (n < 2 || sp_empty(&a[1])) {
        *ret = boxed(&a[0]);
    } else {
        *ret = a[1];
    }
    return 0;
}

static int fn_empty(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = tv_bool(sp_empty(&a[0]));
    return 0;
}

static int fn_coalesce(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    for (size_t i = 0; i < n; i++) {
        if (!sp_empty(&a[i])) {
            *ret = a[i];
            return 0;
        }
    }
    *ret = tv_nil(&T_IFACE);
    return 0;
}

static int fn_all(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    for (size_t i = 0; i < n; i++) {
        if (sp_empty(&a[i])) {
            *ret = tv_bool(false);
            return 0;
        }
    }
    *ret = tv_bool(true);
    return 0;
}

static int fn_any(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    for (size_t i = 0; i < n; i++) {
        if (!sp_empty(&a[i])) {
            *ret = tv_bool(true);
            return 0;
        }
    }
    *ret = tv_bool(false);
    return 0;
}

static int fn_ternary(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    *ret = a[2].u.b ? boxed(&a[0]) : boxed(&a[1]);
    return 0;
}

/* ---- reflection --------------------------------------------------------------------------- */

static int fn_type_of(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    *ret = tv_cstring(x, sp_is_nil(&a[0]) ? "<nil>" : tv_type_name(&a[0]));
    return 0;
}

static int fn_type_is(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    const char *t = sp_is_nil(&a[1]) ? "<nil>" : tv_type_name(&a[1]);
    *ret = tv_bool(strlen(t) == a[0].u.s->len && memcmp(t, a[0].u.s->s, a[0].u.s->len) == 0);
    return 0;
}

static int fn_type_is_like(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    const char *t = sp_is_nil(&a[1]) ? "<nil>" : tv_type_name(&a[1]);
    const tv_str *want = a[0].u.s;
    size_t tl = strlen(t);
    bool eq = tl == want->len && memcmp(t, want->s, tl) == 0;
    bool ptr = tl == want->len + 1 && t[0] == '*' && memcmp(t + 1, want->s, want->len) == 0;
    *ret = tv_bool(eq || ptr);
    return 0;
}

static int fn_kind_of(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    *ret = tv_cstring(x, sp_kind_name(&a[0]));
    return 0;
}

static int fn_kind_is(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x;
    (void)n;
    const char *k = sp_kind_name(&a[1]);
    *ret = tv_bool(strlen(k) == a[0].u.s->len && memcmp(k, a[0].u.s->s, a[0].u.s->len) == 0);
    return 0;
}

static int fn_deep_equal(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    tv l = boxed(&a[0]);
    tv r = boxed(&a[1]);
    bool eq = false;
    if (tv_deep_equal(x, &l, &r, &eq) < 0) {
        return -1;
    }
    *ret = tv_bool(eq);
    return 0;
}

/* ---- table -------------------------------------------------------------------------------- */

static const tv_type *const P_MM[] = {&T_MAP_ANY, &T_MAP_ANY};
static const tv_type *const P_AA[] = {&T_IFACE, &T_IFACE};

static const tpl_func funcs[] = {
    TPL_FUNC("all", fn_all, SP_A, 1, true, false, &T_BOOL),
    TPL_FUNC("any", fn_any, SP_A, 1, true, false, &T_BOOL),
    TPL_FUNC("append", fn_push, P_AA, 2, false, false, &T_LIST_ANY),
    TPL_FUNC("chunk", fn_chunk, SP_IA, 2, false, false, &T_LIST_LIST_ANY),
    TPL_FUNC("coalesce", fn_coalesce, SP_A, 1, true, false, &T_IFACE),
    TPL_FUNC("compact", fn_compact, SP_A, 1, false, false, &T_LIST_ANY),
    TPL_FUNC("concat", fn_concat, SP_A, 1, true, false, &T_IFACE),
    TPL_FUNC("deepCopy", fn_deep_copy, SP_A, 1, false, false, &T_IFACE),
    TPL_FUNC("deepEqual", fn_deep_equal, P_AA, 2, false, false, &T_BOOL),
    TPL_FUNC("default", fn_default, SP_A, 2, true, false, &T_IFACE),
    TPL_FUNC("dict", fn_dict, SP_A, 1, true, false, &T_MAP_ANY),
    TPL_FUNC("dig", fn_dig, SP_A, 1, true, true, &T_IFACE),
    TPL_FUNC("empty", fn_empty, SP_A, 1, false, false, &T_BOOL),
    TPL_FUNC("first", fn_first, SP_A, 1, false, false, &T_IFACE),
    TPL_FUNC("get", fn_get, SP_MS, 2, false, false, &T_IFACE),
    TPL_FUNC("has", fn_has, P_AA, 2, false, false, &T_BOOL),
    TPL_FUNC("hasKey", fn_has_key, SP_MS, 2, false, false, &T_BOOL),
    TPL_FUNC("initial", fn_initial, SP_A, 1, false, false, &T_LIST_ANY),
    TPL_FUNC("keys", fn_keys, SP_M, 1, true, false, &T_LIST_STRING),
    TPL_FUNC("kindIs", fn_kind_is, SP_SA, 2, false, false, &T_BOOL),
    TPL_FUNC("kindOf", fn_kind_of, SP_A, 1, false, false, &T_STRING),
    TPL_FUNC("last", fn_last, SP_A, 1, false, false, &T_IFACE),
    TPL_FUNC("list", fn_list, SP_A, 1, true, false, &T_LIST_ANY),
    TPL_FUNC("merge", fn_merge, P_MM, 2, true, false, &T_IFACE),
    TPL_FUNC("mergeOverwrite", fn_merge_overwrite, P_MM, 2, true, false, &T_IFACE),
    TPL_FUNC("mustAppend", fn_push, P_AA, 2, false, true, &T_LIST_ANY),
    TPL_FUNC("mustChunk", fn_chunk, SP_IA, 2, false, true, &T_LIST_LIST_ANY),
    TPL_FUNC("mustCompact", fn_compact, SP_A, 1, false, true, &T_LIST_ANY),
    TPL_FUNC("mustDeepCopy", fn_deep_copy, SP_A, 1, false, true, &T_IFACE),
    TPL_FUNC("mustFirst", fn_first, SP_A, 1, false, true, &T_IFACE),
    TPL_FUNC("mustHas", fn_has, P_AA, 2, false, true, &T_BOOL),
    TPL_FUNC("mustInitial", fn_initial, SP_A, 1, false, true, &T_LIST_ANY),
    TPL_FUNC("mustLast", fn_last, SP_A, 1, false, true, &T_IFACE),
    TPL_FUNC("mustMerge", fn_merge, P_MM, 2, true, true, &T_IFACE),
    TPL_FUNC("mustMergeOverwrite", fn_merge_overwrite, P_MM, 2, true, true, &T_IFACE),
    TPL_FUNC("mustPrepend", fn_prepend, P_AA, 2, false, true, &T_LIST_ANY),
    TPL_FUNC("mustPush", fn_push, P_AA, 2, false, true, &T_LIST_ANY),
    TPL_FUNC("mustRest", fn_rest, SP_A, 1, false, true, &T_LIST_ANY),
    TPL_FUNC("mustReverse", fn_reverse, SP_A, 1, false, true, &T_LIST_ANY),
    TPL_FUNC("mustSlice", fn_slice, SP_A, 2, true, true, &T_IFACE),
    TPL_FUNC("mustUniq", fn_uniq, SP_A, 1, false, true, &T_LIST_ANY),
    TPL_FUNC("mustWithout", fn_without, SP_A, 2, true, true, &T_LIST_ANY),
    TPL_FUNC("omit", fn_omit, SP_MS, 2, true, false, &T_MAP_ANY),
    TPL_FUNC("pick", fn_pick, SP_MS, 2, true, false, &T_MAP_ANY),
    TPL_FUNC("pluck", fn_pluck, SP_SM, 2, true, false, &T_LIST_ANY),
    TPL_FUNC("prepend", fn_prepend, P_AA, 2, false, false, &T_LIST_ANY),
    TPL_FUNC("push", fn_push, P_AA, 2, false, false, &T_LIST_ANY),
    TPL_FUNC("rest", fn_rest, SP_A, 1, false, false, &T_LIST_ANY),
    TPL_FUNC("reverse", fn_reverse, SP_A, 1, false, false, &T_LIST_ANY),
    TPL_FUNC("set", fn_set, SP_MSA, 3, false, false, &T_MAP_ANY),
    TPL_FUNC("slice", fn_slice, SP_A, 2, true, false, &T_IFACE),
    TPL_FUNC("ternary", fn_ternary, SP_AAB, 3, false, false, &T_IFACE),
    TPL_FUNC("tuple", fn_list, SP_A, 1, true, false, &T_LIST_ANY),
    TPL_FUNC("typeIs", fn_type_is, SP_SA, 2, false, false, &T_BOOL),
    TPL_FUNC("typeIsLike", fn_type_is_like, SP_SA, 2, false, false, &T_BOOL),
    TPL_FUNC("typeOf", fn_type_of, SP_A, 1, false, false, &T_STRING),
    TPL_FUNC("uniq", fn_uniq, SP_A, 1, false, false, &T_LIST_ANY),
    TPL_FUNC("unset", fn_unset, SP_MS, 2, false, false, &T_MAP_ANY),
    TPL_FUNC("values", fn_values, SP_M, 1, false, false, &T_LIST_ANY),
    TPL_FUNC("without", fn_without, SP_A, 2, true, false, &T_LIST_ANY),
};

void tpl_register_sprig_lists(co_template_funcs *f)
{
    tpl_register_all(f, funcs, CO_ARRAY_SIZE(funcs));
}
