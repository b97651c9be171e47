/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Library-internal interface of the template engine, for function providers outside
 * template/ (helm's engine functions: include, tpl, required, lookup, the .Files and
 * .Capabilities objects): the value model (Go's reflect view of the data a template sees), the
 * execution state, template sets and the function registry. The engine's own internals (parse
 * trees, fmt, Unicode, deep walks) are in tpl.h. Nothing here is part of the public API
 * (co/render/template.h).
 *
 * Values. A template sees Go values, and much of text/template's and sprig's behaviour hangs
 * on their exact Go types: a float64 prints as 1e+06, an int does not; an int64 is not
 * assignable to an int parameter; a map[string]interface{} yields a nil interface for a missing
 * key under missingkey=zero, which then fails with "nil pointer evaluating interface {}.x".
 * So every value carries a type descriptor (tv_type) naming its Go type and reflect kind, and
 * the engine applies Go's assignability and conversion rules to them. Non-nil interfaces are
 * always unwrapped to their dynamic value; a nil interface is a value of type interface{}.
 *
 * Memory. Everything created while rendering lives in a per-session arena and is released at
 * once; values are never freed individually, so a map that contains itself (sprig's set can
 * make one) is no problem for memory, only for walks over it: every recursive walk over values
 * keeps a tv_path and stops at CO_MAX_TEMPLATE_VALUE_DEPTH. Maps are the only mutable values
 * (sprig's set, unset, merge mutate in place, as in Go). The arena charges its chunks to the
 * render budget (co/util/budget.h); buffers of text that become values are capped by what the
 * budget has left (tpl_out_cap()).
 */
#ifndef CO_TEMPLATE_LIB_H
#define CO_TEMPLATE_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/render/template.h"

/* ------------------------------------------------------------------------------------------ */
/* Types                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* reflect.Kind, in the order of reflect's constants (kindOf prints their names). */
typedef enum tk {
    TK_INVALID,
    TK_BOOL,
    TK_INT,
    TK_INT8,
    TK_INT16,
    TK_INT32,
    TK_INT64,
    TK_UINT,
    TK_UINT8,
    TK_UINT16,
    TK_UINT32,
    TK_UINT64,
    TK_UINTPTR,
    TK_FLOAT32,
    TK_FLOAT64,
    TK_COMPLEX64,
    TK_COMPLEX128,
    TK_ARRAY,
    TK_CHAN,
    TK_FUNC,
    TK_IFACE,
    TK_MAP,
    TK_PTR,
    TK_SLICE,
    TK_STRING,
    TK_STRUCT,
} tk;

typedef struct tv tv;
typedef struct tpl_x tpl_x;
typedef struct tv_type tv_type;
typedef struct tpl_func tpl_func;

/* A function or method implementation. args[0..n) are already converted to the declared
 * parameter types (a method gets its receiver as args[0]). On failure it returns -1 after
 * tpl_fail(); the engine adds "error calling NAME: ". */
typedef int (*tpl_fn)(tpl_x *x, tv *ret, tv *args, size_t n);

/* One function or method with its Go signature. */
struct tpl_func {
    const char *name;
    tpl_fn fn;
    const tv_type *const *in; /* parameter types; for a variadic function the last is the
                                 element type of the ... parameter */
    const tv_type *out;
    uint8_t nin;
    bool variadic;
    bool has_err;    /* returns (T, error) */
    uint8_t special; /* TPL_SPECIAL_* */
};

/* A function table entry: name, implementation, parameter types, count, variadic, whether it
 * returns an error, result type. */
#define TPL_FUNC(nm, f, params, n, var, err, ret)                                                  \
    {                                                                                              \
        .name = (nm), .fn = (f), .in = (params), .out = (ret), .nin = (n), .variadic = (var),      \
        .has_err = (err)                                                                           \
    }

enum {
    TPL_SPECIAL_NONE,
    TPL_SPECIAL_AND,
    TPL_SPECIAL_OR,
    TPL_SPECIAL_CALL,
};

typedef struct tv_field {
    const char *name;    /* Go field name */
    const char *json;    /* JSON key ("-" = never encoded) */
    const tv_type *type; /* declared type */
    uint8_t flags;       /* TV_FIELD_* */
} tv_field;

enum {
    TV_FIELD_EMBEDDED = 1,  /* anonymous: its fields are promoted */
    TV_FIELD_OMITEMPTY = 2, /* json:",omitempty" */
    TV_FIELD_INLINE = 4,    /* json:",inline": encoded as part of the parent */
};

struct tv_type {
    uint8_t kind;           /* tk */
    const char *name;       /* Go's type string, e.g. "map[string]interface {}" */
    const tv_type *elem;    /* slice/array/pointer element, map value */
    const tv_field *fields; /* struct fields */
    size_t nfields;
    const tpl_func *methods; /* method set of this type (sorted by nothing; searched) */
    size_t nmethods;
    /* Go-side encoders for types with custom marshalling (time, semver, ...); NULL = default */
    int (*marshal_json)(tpl_x *x, co_buf *out, const tv *v);
};

/* Built-in type descriptors. */
extern const tv_type T_BOOL, T_INT, T_INT8, T_INT16, T_INT32, T_INT64, T_UINT, T_UINT8, T_UINT16,
    T_UINT32, T_UINT64, T_UINTPTR, T_FLOAT32, T_FLOAT64, T_COMPLEX128, T_STRING, T_IFACE, T_VALUE,
    T_BYTES, T_LIST_ANY, T_LIST_STRING, T_LIST_INT, T_LIST_FLOAT64, T_LIST_BOOL, T_LIST_LIST_ANY,
    T_LIST_MAP, T_MAP_ANY, T_MAP_STRING, T_ERROR;

/* ------------------------------------------------------------------------------------------ */
/* Values                                                                                     */
/* ------------------------------------------------------------------------------------------ */

typedef struct tv_str {
    size_t len;
    char s[]; /* NUL-terminated */
} tv_str;

typedef struct tv_list tv_list;
typedef struct tv_map tv_map;
typedef struct tv_obj tv_obj;
typedef struct tv_time tv_time;
typedef struct tpl_zone tpl_zone; /* a location (sprig_date.c) */

struct tv {
    const tv_type *t; /* NULL: invalid (no value) */
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double f;
        const double *c; /* complex: two doubles */
        const tv_str *s; /* string, []byte */
        tv_list *l;      /* slice (NULL: nil slice) */
        tv_map *m;       /* map (NULL: nil map) */
        tv_obj *o;       /* struct / pointer to struct (NULL: nil pointer) */
        const tv_time *tm;
        const tpl_func *fn; /* func value */
    } u;
};

struct tv_list {
    size_t n;
    tv *items;
};

typedef struct tv_entry {
    const tv_str *key;
    tv *val; /* points into vals so that entries can be re-ordered */
} tv_entry;

/* A map with string keys (the only kind a template data model or sprig creates). */
struct tv_map {
    size_t n;
    size_t cap;
    const tv_str **keys;
    tv *vals;
    uint32_t *index;   /* open addressing over keys, size 2*cap (0 = empty, else i+1) */
    uint32_t *sorted;  /* cached permutation in key order; NULL when stale */
    uint32_t *natsort; /* same in yaml.v2 natural key order; NULL when stale */
};

/* A struct or pointer-to-struct payload. native carries extra C data for types with methods
 * implemented in C (semver, time). */
struct tv_obj {
    const void *native;
    tv fields[];
};

struct tv_time {
    int64_t sec;         /* seconds since 1970 UTC */
    int32_t nsec;        /* 0..999999999 */
    int32_t off;         /* zone offset east of UTC in seconds */
    const char *zone;    /* zone abbreviation, "UTC" ... */
    int64_t mono;        /* monotonic reading in ns (Go prints m=+...), or INT64_MIN when absent */
    const tpl_zone *loc; /* the location (NULL: UTC), kept for arithmetic across transitions */
};

/* Parse trees (tpl.h). */
typedef struct tpl_tree tpl_tree;
typedef struct node node;

/* ------------------------------------------------------------------------------------------ */
/* Function registry and template set                                                         */
/* ------------------------------------------------------------------------------------------ */

typedef struct tpl_ext_func tpl_ext_func; /* a caller-registered function (api.c) */

struct co_template_funcs {
    const tpl_func **items; /* sorted by name; later registrations override */
    size_t n;
    size_t cap;
    tpl_ext_func **ext; /* caller-registered, owned */
    size_t next;
    bool frozen;
    unsigned flags;
};

/* An arena of fixed chunks; allocations never fail (abort on OOM like co_xmalloc). */
typedef struct tpl_arena {
    struct arena_chunk *head;
    size_t used; /* bytes handed out */
    char *cur;
    size_t left;
    uint64_t budget; /* the render budget its chunks are charged to (co_budget_id()) */
    size_t charged;  /* bytes charged to it, given back when the arena is disposed */
} tpl_arena;

void *tpl_arena_alloc(tpl_arena *a, size_t n);
void tpl_arena_dispose(tpl_arena *a);

struct co_template_set {
    const co_template_funcs *funcs;
    const char *name; /* the set's own name (first template parsed) for Go's messages */
    co_template_options opts;
    tpl_arena arena;  /* parse trees */
    tpl_tree **trees; /* sorted by name after each parse */
    size_t ntrees;
    size_t cap;
};

/* Parse one template source into the set (parse.c). */
int tpl_parse(co_template_set *set, const char *name, const char *text, size_t len);

/* Find a function by name (NULL when absent). */
const tpl_func *tpl_funcs_lookup(const co_template_funcs *f, const char *name, size_t len);

/* ------------------------------------------------------------------------------------------ */
/* Execution                                                                                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct tpl_var {
    const char *name;
    size_t len;
    tv val;
    bool iface; /* the value sits in an interface{} slot (a range element) */
} tpl_var;

struct co_template_session {
    const co_template_set *set;
    co_template_env env;
    tpl_arena arena;
    tv root;
    uint64_t steps;
    unsigned nesting; /* walks and pipelines active, against CO_MAX_TEMPLATE_EXEC_NESTING */
    const tpl_zone *local_zone; /* time.Local, loaded on first use (sprig_date.c) */
};

/* The state of one execution (Go's state), plus the resources shared by nested ones. */
struct tpl_x {
    co_template_session *sess;
    const co_template_set *set;
    const tpl_tree *tmpl; /* template being executed */
    co_buf *out;
    const node *at; /* current node, for errors */
    tpl_var *vars;
    size_t nvars;
    size_t capvars;
    int depth;           /* nesting of template/include/tpl calls */
    uint64_t *steps;     /* shared operation counter */
    co_buf *err;         /* message of a failing function (tpl_fail) */
    int code;            /* error code for the final error (CO_EINVALID, CO_ETOOBIG) */
    const tpl_func *cur; /* function being called (for caller-registered functions) */
    bool dot_iface;      /* dot sits in an interface{} slot (a range element): Go then
                            names the receiver type "interface {}" in errors */
};

/* Executes template @name of @set with @dot, appending to @out; on failure the message is in
 * x->err and the code in x->code. */
int tpl_execute(tpl_x *parent, const co_template_set *set, const char *name, tv dot, co_buf *out);

/* The code a template error keeps from a failure below it: caps and the render budget are
 * reported as such (CO_ETOOBIG, CO_ETIMEOUT), everything else is an invalid template. */
static inline int tpl_error_code(int rc)
{
    return rc == CO_ETOOBIG || rc == CO_ETIMEOUT ? rc : CO_EINVALID;
}

/* Drops a result that cannot matter (best-effort text into an error message). */
static inline void tpl_ignore(int rc)
{
    (void)rc;
}

/* Records a function failure message (Go's error text); returns -1. */
int tpl_fail(tpl_x *x, const char *fmt, ...) CO_PRINTF(2, 3);
/* Like tpl_fail with an explicit error code (CO_ETOOBIG, ...). */
int tpl_fail_code(tpl_x *x, int code, const char *fmt, ...) CO_PRINTF(3, 4);

/* Arena allocation for the current session (aborts on OOM; the render budget is charged here
 * and checked by the engine between steps and after each function call, so functions that size
 * an allocation from their arguments check tpl_reserve() first). */
void *tpl_alloc(tpl_x *x, size_t n);

/* Fails (CO_ETOOBIG, the budget's message) when @p n items of @p size bytes would not fit in
 * what the render's memory budget has left. */
int tpl_reserve(tpl_x *x, size_t n, size_t size);

/* The cap for a buffer of text that becomes a value or output: CO_MAX_TEMPLATE_OUTPUT, or what
 * the render's memory budget has left when that is less. */
size_t tpl_out_cap(void);

/* The failure of a buffer capped with tpl_out_cap() (@p b keeps its cap after the failure):
 * the budget's error when the budget set the cap, else "output too large". */
int tpl_fail_out(tpl_x *x, const co_buf *b);

/* A failure of the render budget (co_budget_tick() and friends returned @p rc). */
int tpl_fail_budget(tpl_x *x, int rc);

/* Value constructors. */
tv tv_invalid(void);
tv tv_nil(const tv_type *t);
tv tv_bool(bool b);
tv tv_int(const tv_type *t, int64_t i);
tv tv_uint(const tv_type *t, uint64_t u);
tv tv_float(double f);
tv tv_string(tpl_x *x, const char *s, size_t len);
tv tv_cstring(tpl_x *x, const char *s);
tv tv_string_take(tpl_x *x, co_buf *b); /* copies the buffer content; disposes b */
tv tv_bytes(tpl_x *x, const char *s, size_t len);
tv tv_list_new(tpl_x *x, const tv_type *t, size_t n); /* items zeroed (invalid) */
tv tv_map_new(tpl_x *x, const tv_type *t, size_t hint);
const tv_str *tv_str_new(tpl_x *x, const char *s, size_t len);
extern const tv_str tv_empty_str;

/* Maps. */
tv *tv_map_get(const tv_map *m, const char *key, size_t len);
void tv_map_set(tpl_x *x, tv_map *m, const tv_str *key, tv val);
bool tv_map_del(tv_map *m, const char *key, size_t len);
const uint32_t *tv_map_sorted(tpl_x *x, tv_map *m); /* byte order of keys */
tv tv_map_copy(tpl_x *x, const tv *src);

/* Arena allocation usable without a tpl_x. */
void *tpl_session_alloc(co_template_session *s, size_t n);

/* Conversions from json-c and from co_jdoc documents (both at most CO_MAX_NESTING deep). */
tv tv_from_json(tpl_x *x, struct json_object *j, co_template_numbers mode);
struct co_jv;
tv tv_from_jv(tpl_x *x, const struct co_jv *j, co_template_numbers mode);
/* json.Unmarshal into interface{} (numbers are float64): the value (no value for null) and the
 * root's co_jv_type; -1 after tpl_fail with the parser's message, or over the budget. */
int tpl_json_decode(tpl_x *x, const char *s, size_t len, tv *out, int *type);

/* Kind helpers. */
static inline tk tv_kind(const tv *v)
{
    return v->t ? (tk)v->t->kind : TK_INVALID;
}
bool tk_is_int(tk k);
bool tk_is_uint(tk k);
bool tk_is_float(tk k);
bool tv_is_nil(const tv *v);
bool tv_truth(const tv *v, bool *ok);
/* Length of array, slice, map, string; -1 for other kinds. */
int64_t tv_len(const tv *v);

/* Calls a function or method with already-converted arguments; on error the message is in
 * x->err. */
int tpl_call(tpl_x *x, const tpl_func *f, tv *ret, tv *args, size_t n);

/* strconv.Quote / QuoteToASCII (fmt.c). */
int tpl_quote(co_buf *b, const char *s, size_t len, bool ascii_only);

/* ------------------------------------------------------------------------------------------ */
/* Function groups                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* Each group registers its functions (builtins.c, sprig_*.c, helm.c). */
void tpl_register(co_template_funcs *f, const tpl_func *fn);
void tpl_register_all(co_template_funcs *f, const tpl_func *fns, size_t n);

#endif
