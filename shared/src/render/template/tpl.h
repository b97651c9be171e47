/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private interface of the template engine, used only by the files of template/: parse trees,
 * deep walks over values, fmt and the Unicode tables' helpers. The value model, the execution
 * state and the function registry, which helm's engine functions use too, are in
 * template_lib.h.
 */
#ifndef CO_TEMPLATE_TPL_H
#define CO_TEMPLATE_TPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/utf8.h"
#include "co/util/buf.h"
#include "co/util/caps.h"

#include "template_lib.h"

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

/* Find a template by name. */
const tpl_tree *tpl_set_lookup(const co_template_set *set, const char *name, size_t len);

/* Node printing for error contexts (Go's Node.String()). */
void tpl_node_string(co_buf *b, const node *n);

/* ------------------------------------------------------------------------------------------ */
/* Walks over values                                                                          */
/* ------------------------------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------------------------------ */
/* Function groups                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* The built-in functions of text/template (builtins.c). */
void tpl_register_builtins(co_template_funcs *f);

#endif
