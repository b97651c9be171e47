/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The public face of the template engine: function sets, template sets, sessions, and the
 * bridge for caller-registered functions (arguments and results travel as json-c).
 */
#include <json-c/json.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/utf8.h"
#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/render/template.h"
#include "sprig.h"
#include "tpl.h"

/* ------------------------------------------------------------------------------------------ */
/* Function sets                                                                              */
/* ------------------------------------------------------------------------------------------ */

static int func_cmp_name(const char *a, const char *b, size_t blen)
{
    size_t alen = strlen(a);
    size_t m = alen < blen ? alen : blen;
    int c = memcmp(a, b, m);
    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

const tpl_func *tpl_funcs_lookup(const co_template_funcs *f, const char *name, size_t len)
{
    size_t lo = 0;
    size_t hi = f->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = func_cmp_name(f->items[mid]->name, name, len);
        if (c == 0) {
            return f->items[mid];
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

void tpl_register(co_template_funcs *f, const tpl_func *fn)
{
    size_t len = strlen(fn->name);
    size_t lo = 0;
    size_t hi = f->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = func_cmp_name(f->items[mid]->name, fn->name, len);
        if (c == 0) {
            f->items[mid] = fn;
            return;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 256;
        f->items = co_xreallocarray(f->items, f->cap, sizeof(void *));
    }
    memmove(f->items + lo + 1, f->items + lo, (f->n - lo) * sizeof(void *));
    f->items[lo] = fn;
    f->n++;
}

void tpl_register_all(co_template_funcs *f, const tpl_func *fns, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tpl_register(f, &fns[i]);
    }
}

/* Registers the functions of @p groups into @p f, in the order that decides which of two
 * functions of the same name wins. */
static void register_groups(co_template_funcs *f, unsigned groups)
{
    tpl_register_builtins(f);
    if (groups & CO_TEMPLATE_FUNCS_SPRIG) {
        tpl_register_sprig_strings(f);
        tpl_register_sprig_lists(f);
        tpl_register_sprig_math(f);
        tpl_register_sprig_misc(f);
        tpl_register_sprig_decimal(f);
        tpl_register_sprig_crypto(f);
        tpl_register_sprig_date(f);
        tpl_register_sprig_url(f);
    }
    if (groups & CO_TEMPLATE_FUNCS_RUNTIME) {
        tpl_register_runtime(f);
    }
    if (groups & CO_TEMPLATE_FUNCS_HELM) {
        tpl_register_helm(f);
    }
}

/* The groups that add functions; the others (ENV, DNS) only change how some behave. */
#define TABLE_GROUPS (CO_TEMPLATE_FUNCS_SPRIG | CO_TEMPLATE_FUNCS_RUNTIME | CO_TEMPLATE_FUNCS_HELM)

/* The sorted table of each combination of TABLE_GROUPS, built by the first set that needs it
 * and kept for the life of the process: a set starts as a copy of it, instead of inserting
 * several hundred functions one at a time (renderers make a set per parse). The tables point
 * at the static function descriptions only, and are never changed once built. */
static struct {
    pthread_mutex_t lock;
    const tpl_func **items[TABLE_GROUPS + 1];
    size_t n[TABLE_GROUPS + 1];
} tables = {.lock = PTHREAD_MUTEX_INITIALIZER};

void co_template_funcs_new(co_template_funcs **out, unsigned groups)
{
    unsigned key = groups & TABLE_GROUPS;
    co_template_funcs *f = co_xcalloc(1, sizeof(*f));
    f->flags = groups;
    pthread_mutex_lock(&tables.lock);
    if (!tables.items[key]) {
        co_template_funcs built = {0};
        register_groups(&built, key);
        tables.items[key] = built.items;
        tables.n[key] = built.n;
    }
    f->n = tables.n[key];
    f->cap = f->n < 256 ? 256 : f->n;
    f->items = co_xreallocarray(NULL, f->cap, sizeof(void *));
    memcpy((void *)f->items, (const void *)tables.items[key], f->n * sizeof(void *));
    pthread_mutex_unlock(&tables.lock);
    *out = f;
}

bool co_template_funcs_has(const co_template_funcs *f, const char *name)
{
    return tpl_funcs_lookup(f, name, strlen(name)) != NULL;
}

/* ---- caller-registered functions ---------------------------------------------------------- */

struct tpl_ext_func {
    tpl_func f; /* first: the engine sees a tpl_func */
    co_template_func_cb cb;
    co_template_numbers numbers;
    char *name;
};

static const tv_type *const P_ANY[] = {&T_IFACE, &T_IFACE, &T_IFACE, &T_IFACE, &T_IFACE,
                                       &T_IFACE, &T_IFACE, &T_IFACE, &T_IFACE, &T_IFACE};

/* A template value as json-c (*out: new reference; NULL for nil); -1 after tpl_fail for a value
 * too deep to hand over. */
static int to_json(tpl_x *x, tv_path *path, const tv *v, struct json_object **out);

static struct json_object *to_json_scalar(const tv *v)
{
    switch (tv_kind(v)) {
    case TK_INVALID:
    case TK_IFACE:
        return NULL;
    case TK_BOOL:
        return json_object_new_boolean(v->u.b);
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        return json_object_new_int64(v->u.i);
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        return json_object_new_uint64(v->u.u);
    case TK_FLOAT32:
    case TK_FLOAT64:
        return json_object_new_double(v->u.f);
    case TK_STRING:
        return json_object_new_string_len(v->u.s->s, (int)v->u.s->len);
    case TK_SLICE:
    case TK_ARRAY:
        if (v->t == &T_BYTES && v->u.s) {
            return json_object_new_string_len(v->u.s->s, (int)v->u.s->len);
        }
        return NULL;
    default:
        return NULL;
    }
}

static int to_json_container(tpl_x *x, tv_path *path, const tv *v, struct json_object **out)
{
    int rc = 0;
    if (tv_kind(v) == TK_MAP) {
        struct json_object *o = json_object_new_object();
        for (size_t i = 0; i < v->u.m->n && rc == 0; i++) {
            struct json_object *e = NULL;
            rc = to_json(x, path, &v->u.m->vals[i], &e);
            json_object_object_add(o, v->u.m->keys[i]->s, e);
        }
        *out = o;
    } else {
        struct json_object *a = json_object_new_array_ext((int)v->u.l->n);
        for (size_t i = 0; i < v->u.l->n && rc == 0; i++) {
            struct json_object *e = NULL;
            rc = to_json(x, path, &v->u.l->items[i], &e);
            json_object_array_add(a, e);
        }
        *out = a;
    }
    if (rc < 0) {
        json_object_put(*out);
        *out = NULL;
    }
    return rc;
}

static int to_json(tpl_x *x, tv_path *path, const tv *v, struct json_object **out)
{
    tk k = tv_kind(v);
    bool container =
        (k == TK_MAP && v->u.m) || ((k == TK_SLICE || k == TK_ARRAY) && v->t != &T_BYTES && v->u.l);
    if (!container) {
        *out = to_json_scalar(v);
        return 0;
    }
    int rc = co_budget_tick();
    if (rc < 0) {
        return tpl_fail_budget(x, rc);
    }
    int in = tv_path_enter(path, v);
    if (in < 0) {
        return tv_path_fail(x, path, v);
    }
    rc = to_json_container(x, path, v, out);
    tv_path_leave(path);
    return rc;
}

static int ext_trampoline(tpl_x *x, tv *ret, tv *args, size_t n)
{
    const tpl_ext_func *e = (const tpl_ext_func *)x->cur;
    struct json_object **jargs = tpl_alloc(x, (n ? n : 1) * sizeof(void *));
    tv_path path;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        path.n = 0;
        jargs[i] = NULL;
        if (rc == 0) {
            rc = to_json(x, &path, &args[i], &jargs[i]);
        }
    }
    if (rc < 0) {
        for (size_t i = 0; i < n; i++) {
            json_object_put(jargs[i]);
        }
        return -1;
    }
    struct json_object *res = NULL;
    co_error_clear();
    rc = e->cb(x->sess->env.ctx, &res, jargs, n);
    for (size_t i = 0; i < n; i++) {
        json_object_put(jargs[i]);
    }
    if (rc < 0) {
        json_object_put(res);
        return tpl_fail_code(x, tpl_error_code(rc), "%s", co_error_last());
    }
    *ret = res ? tv_from_json(x, res, e->numbers) : tv_nil(&T_IFACE);
    json_object_put(res);
    return 0;
}

static bool good_name(const char *name)
{
    if (!*name) {
        return false;
    }
    for (size_t i = 0; name[i];) {
        size_t w;
        int32_t r = co_utf8_decode_rune(name + i, strlen(name + i), &w);
        bool ok = r == '_' || tpl_is_letter(r) || (i > 0 && tpl_is_digit(r));
        if (!ok) {
            return false;
        }
        i += w;
    }
    return true;
}

int co_template_funcs_add(co_template_funcs *f,
                          const char *name,
                          int nargs,
                          co_template_numbers numbers,
                          co_template_func_cb cb)
{
    if (f->frozen) {
        return co_error_set(CO_EINVALID, "function set is in use; cannot add %s", name);
    }
    if (!good_name(name) || strcmp(name, "break") == 0 || strcmp(name, "continue") == 0) {
        return co_error_set(CO_EINVALID, "function name \"%s\" is not a valid identifier", name);
    }
    if (nargs < -1 || nargs > 10 || !cb) {
        return co_error_set(CO_EINVALID, "function %s: unsupported signature", name);
    }
    tpl_ext_func *e = co_xcalloc(1, sizeof(*e));
    e->name = co_xstrdup(name);
    e->cb = cb;
    e->numbers = numbers;
    e->f.name = e->name;
    e->f.fn = ext_trampoline;
    e->f.in = P_ANY;
    e->f.nin = nargs < 0 ? 1 : (uint8_t)nargs;
    e->f.variadic = nargs < 0;
    e->f.has_err = true;
    e->f.out = &T_IFACE;
    f->ext = co_xreallocarray(f->ext, f->next + 1, sizeof(void *));
    f->ext[f->next++] = e;
    tpl_register(f, &e->f);
    return 0;
}

void co_template_funcs_free(co_template_funcs *f)
{
    if (!f) {
        return;
    }
    for (size_t i = 0; i < f->next; i++) {
        free(f->ext[i]->name);
        free(f->ext[i]);
    }
    free(f->ext);
    free(f->items);
    free(f);
}

/* ------------------------------------------------------------------------------------------ */
/* Template sets                                                                              */
/* ------------------------------------------------------------------------------------------ */

static char *arena_strdup(tpl_arena *a, const char *s)
{
    size_t n = strlen(s);
    char *p = tpl_arena_alloc(a, n + 1);
    memcpy(p, s, n + 1);
    return p;
}

void co_template_set_new(co_template_set **out,
                         const co_template_funcs *funcs,
                         const co_template_options *opts)
{
    co_template_set *set = co_xcalloc(1, sizeof(*set));
    set->funcs = funcs;
    ((co_template_funcs *)funcs)->frozen = true;
    if (opts) {
        set->opts = *opts;
        if (opts->left_delim) {
            set->opts.left_delim = arena_strdup(&set->arena, opts->left_delim);
        }
        if (opts->right_delim) {
            set->opts.right_delim = arena_strdup(&set->arena, opts->right_delim);
        }
        if (opts->name) {
            set->name = arena_strdup(&set->arena, opts->name);
            set->opts.name = set->name;
        }
    }
    *out = set;
}

int co_template_set_parse(co_template_set *set, const char *name, const char *text, size_t len)
{
    if (!set->name) {
        set->name = arena_strdup(&set->arena, name);
    }
    return tpl_parse(set, name, text, len);
}

bool co_template_set_has(const co_template_set *set, const char *name)
{
    return tpl_set_lookup(set, name, strlen(name)) != NULL;
}

void co_template_set_free(co_template_set *set)
{
    if (!set) {
        return;
    }
    tpl_arena_dispose(&set->arena);
    free(set->trees);
    free(set);
}

/* ------------------------------------------------------------------------------------------ */
/* Sessions                                                                                   */
/* ------------------------------------------------------------------------------------------ */

void co_template_session_new(co_template_session **out,
                             const co_template_set *set,
                             const co_template_env *env)
{
    /* every execution is bounded: by the render's budget, or by one of its own */
    co_budget_begin(NULL);
    co_template_session *s = co_xcalloc(1, sizeof(*s));
    s->set = set;
    if (env) {
        s->env = *env;
    }
    *out = s;
}

static void x_init(tpl_x *x, co_template_session *s, co_buf *err)
{
    memset(x, 0, sizeof(*x));
    x->sess = s;
    x->set = s->set;
    x->err = err;
    x->steps = &s->steps;
    x->code = CO_EINVALID;
}

static int json_depth_ok(struct json_object *j, int depth)
{
    if (depth > CO_MAX_NESTING) {
        return 0;
    }
    if (json_object_is_type(j, json_type_array)) {
        size_t n = json_object_array_length(j);
        for (size_t i = 0; i < n; i++) {
            if (!json_depth_ok(json_object_array_get_idx(j, i), depth + 1)) {
                return 0;
            }
        }
    } else if (json_object_is_type(j, json_type_object)) {
        json_object_object_foreach (j, k, v) {
            (void)k;
            if (!json_depth_ok(v, depth + 1)) {
                return 0;
            }
        }
    }
    return 1;
}

int co_template_session_set_data(co_template_session *s,
                                 struct json_object *data,
                                 co_template_numbers numbers)
{
    if (data && !json_depth_ok(data, 0)) {
        return co_error_set(CO_ETOOBIG, "template data nests deeper than %d levels",
                            CO_MAX_NESTING);
    }
    co_buf err = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    tpl_x x;
    x_init(&x, s, &err);
    s->root = data ? tv_from_json(&x, data, numbers) : tv_invalid();
    co_buf_dispose(&err);
    return co_budget_status();
}

int co_template_session_execute(co_template_session *s,
                                const char *name,
                                char **out,
                                size_t *len_out)
{
    co_buf err = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    co_buf result = CO_BUF_INIT(tpl_out_cap());
    tpl_x x;
    x_init(&x, s, &err);
    int rc = tpl_execute(&x, s->set, name, s->root, &result);
    if (rc < 0) {
        rc = co_error_set(x.code ? x.code : CO_EINVALID, "%s", co_buf_cstr(&err));
        co_buf_dispose(&err);
        co_buf_dispose(&result);
        return rc;
    }
    co_buf_dispose(&err);
    /* the output leaves the session but stays with the render */
    rc = co_budget_charge(result.len);
    if (rc < 0) {
        co_buf_dispose(&result);
        return rc;
    }
    *out = co_buf_take(&result, len_out);
    return 0;
}

void co_template_session_free(co_template_session *s)
{
    if (!s) {
        return;
    }
    tpl_arena_dispose(&s->arena);
    free(s);
    co_budget_end();
}

int co_template_render(const co_template_set *set,
                       const char *name,
                       struct json_object *data,
                       co_template_numbers numbers,
                       const co_template_env *env,
                       char **out,
                       size_t *len_out)
{
    co_template_session *s;
    co_template_session_new(&s, set, env);
    int rc = co_template_session_set_data(s, data, numbers);
    if (rc == 0) {
        rc = co_template_session_execute(s, name, out, len_out);
    }
    co_template_session_free(s);
    return rc;
}

size_t co_template_strip_no_value(char *s, size_t len)
{
    static const char needle[] = "<no value>";
    const size_t nl = sizeof(needle) - 1;
    size_t r = 0;
    size_t w = 0;
    while (r < len) {
        if (len - r >= nl && memcmp(s + r, needle, nl) == 0) {
            r += nl;
            continue;
        }
        s[w++] = s[r++];
    }
    if (w < len) {
        s[w] = '\0';
    }
    return w;
}
