/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private interface of the template engine: the value model (Go's reflect view of the data a
 * template sees), parse trees, the execution state and the function registry. Nothing here is
 * part of the public API (co/template.h).
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
 * render budget (co/budget.h); buffers of text that become values are capped by what the
 * budget has left (tpl_out_cap()).
 */
#ifndef CO_TEMPLATE_TPL_H
#define CO_TEMPLATE_TPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/buf.h"
#include "co/caps.h"
#include "co/error.h"
#include "co/template.h"

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

/* ------------------------------------------------------------------------------------------ */
/* Parse trees                                                                                */
/* ------------------------------------------------------------------------------------------ */

typedef enum node_type {
    N_TEXT,
    N_ACTION,
    N_BOOL,
    N_CHAIN,
    N_COMMAND,
    N_DOT,
    N_ELSE, /* parse-time only */
    N_END,  /* parse-time only */
    N_FIELD,
    N_IDENTIFIER,
    N_IF,
    N_LIST,
    N_NIL,
    N_NUMBER,
    N_PIPE,
    N_RANGE,
    N_STRING,
    N_TEMPLATE,
    N_VARIABLE,
    N_WITH,
    N_COMMENT,
    N_BREAK,
    N_CONTINUE,
} node_type;

typedef struct tpl_tree tpl_tree;
typedef struct node node;

typedef struct node_list {
    node **items;
    size_t n;
    size_t cap;
} node_list;

/* One node. Fields are used according to the type (see parse.c). */
struct node {
    uint8_t type;
    bool is_assign;                             /* N_PIPE: "=" instead of ":=" */
    bool is_int, is_uint, is_float, is_complex; /* N_NUMBER */
    bool truth;                                 /* N_BOOL */
    size_t pos;                                 /* byte offset in the source */
    int line;
    tpl_tree *tree;
    const char *text; /* N_TEXT: text; N_STRING: unquoted; N_NUMBER: literal; N_IDENTIFIER;
                         N_TEMPLATE: template name; N_COMMENT */
    size_t text_len;
    const char *quoted; /* N_STRING: original with quotes */
    const char **ident; /* N_FIELD, N_VARIABLE, N_CHAIN fields */
    size_t nident;
    node *pipe;     /* N_ACTION, N_IF, N_RANGE, N_WITH, N_TEMPLATE; N_CHAIN: the node */
    node_list list; /* N_LIST items; N_PIPE commands; N_COMMAND args */
    node *body;     /* N_IF/N_RANGE/N_WITH list */
    node *else_body;
    node_list decl; /* N_PIPE declarations (N_VARIABLE) */
    int64_t i64;
    uint64_t u64;
    double f64;
    double c128[2];
    tv literal; /* N_STRING: the string value, ready to use */
};

/* One parsed template: a name and its body, plus the source it was parsed from (for error
 * positions). */
struct tpl_tree {
    const char *name;
    const char *parse_name; /* name of the top-level template being parsed */
    const char *text;       /* the whole source */
    size_t text_len;
    node *root; /* N_LIST; NULL for an incomplete template */
};

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

/* Find a template by name. */
const tpl_tree *tpl_set_lookup(const co_template_set *set, const char *name, size_t len);

/* Find a function by name (NULL when absent). */
const tpl_func *tpl_funcs_lookup(const co_template_funcs *f, const char *name, size_t len);

/* Node printing for error contexts (Go's Node.String()). */
void tpl_node_string(co_buf *b, const node *n);

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

/* The maps, lists and structs on the way down a recursive walk over a value: the walk goes no
 * deeper than CO_MAX_TEMPLATE_VALUE_DEPTH, and when it would, the path tells a value that
 * contains itself from one that is merely deep. */
typedef struct tv_path {
    const void *nodes[CO_MAX_TEMPLATE_VALUE_DEPTH];
    size_t n;
} tv_path;

/* Enters @p v: 0 for a value that holds no others (nothing to leave), 1 for a container (leave
 * it with tv_path_leave()), -1 when the walk would go too deep (see tv_path_fail()). */
int tv_path_enter(tv_path *p, const tv *v);
static inline void tv_path_leave(tv_path *p)
{
    p->n--;
}
/* Whether @p v, which tv_path_enter() refused, is one of the containers on the path. */
bool tv_path_cycle(const tv_path *p, const tv *v);
/* tpl_fail() with "value contains itself" or "value nested deeper than 1000 levels". */
int tv_path_fail(tpl_x *x, const tv_path *p, const tv *v);

/* Go's reflect.DeepEqual into @p eq; -1 (after tpl_fail) for values too deep to compare or a
 * spent budget. */
int tv_deep_equal(tpl_x *x, const tv *a, const tv *b, bool *eq);
/* time.Time (sprig_date.c) and == on two of its values. */
extern const tv_type T_TIME;
bool tpl_time_equal(const tv *a, const tv *b);

/* Deep copy (copystructure): maps and slices are duplicated; -1 (after tpl_fail) for values
 * too deep to copy or a spent budget. */
int tv_deep_copy(tpl_x *x, const tv *v, tv *out);

/* Method lookup on a value's type (NULL when none). */
const tpl_func *tv_method(const tv *v, const char *name, size_t len);

/* Calls a function or method with already-converted arguments; on error the message is in
 * x->err. */
int tpl_call(tpl_x *x, const tpl_func *f, tv *ret, tv *args, size_t n);

/* ------------------------------------------------------------------------------------------ */
/* fmt                                                                                        */
/* ------------------------------------------------------------------------------------------ */

/* fmt.Sprint / Sprintln / Sprintf over template values. On failure (-1) the message is set
 * with tpl_fail: output over @p b's cap, a value too deep to print, a spent budget. */
int tpl_sprint(tpl_x *x, co_buf *b, const tv *args, size_t n);
int tpl_sprintln(tpl_x *x, co_buf *b, const tv *args, size_t n);
int tpl_sprintf(tpl_x *x, co_buf *b, const char *f, size_t end, const tv *a, size_t n);
/* fmt.Sprint of a single value (%v). */
int tpl_print_value(tpl_x *x, co_buf *b, const tv *v);
/* strconv.Quote / QuoteToASCII. */
int tpl_quote(co_buf *b, const char *s, size_t len, bool ascii_only);
/* strconv.FormatFloat(f, fmt, prec, 64). */
int tpl_format_float(co_buf *b, double f, char fmt, int prec);
/* strconv.Unquote into @out (reset first); returns false on syntax error. */
bool tpl_unquote(co_buf *out, const char *s, size_t len);
/* strconv.UnquoteChar: decodes one character of s[0..len) quoted with @quote; returns the
 * bytes consumed (0 on syntax error). */
size_t tpl_unquote_char(const char *s, size_t len, char quote, int32_t *r, bool *multibyte);
/* Go's %T name of a value ("<nil>" for invalid). */
const char *tv_type_name(const tv *v);

/* Unicode helpers (C.UTF-8 locale tables). */
int32_t tpl_utf8_decode(const char *s, size_t len, size_t *width);
size_t tpl_utf8_encode(char *out, int32_t r);
bool tpl_is_letter(int32_t r);
bool tpl_is_digit(int32_t r);
bool tpl_is_space(int32_t r);
bool tpl_is_print(int32_t r);
bool tpl_is_graphic(int32_t r);
bool tpl_is_upper(int32_t r);
bool tpl_is_lower(int32_t r);
bool tpl_is_punct(int32_t r);
int32_t tpl_to_upper(int32_t r);
int32_t tpl_to_lower(int32_t r);
int32_t tpl_to_title(int32_t r);
bool tpl_utf8_valid(const char *s, size_t len);

/* ------------------------------------------------------------------------------------------ */
/* Function groups                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* Each group registers its functions (builtins.c, sprig_*.c, helm.c). */
void tpl_register_builtins(co_template_funcs *f);
void tpl_register(co_template_funcs *f, const tpl_func *fn);
void tpl_register_all(co_template_funcs *f, const tpl_func *fns, size_t n);

#endif
