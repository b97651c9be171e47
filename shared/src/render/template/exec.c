/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Template execution: text/template's state machine (walk, evalPipeline, evalCommand,
 * evalField, evalCall, evalArg, validateType) over the value model of template_lib.h. Go unwinds
 * errors with panics; here every evaluation returns 0 or -1 and the first error is formatted once,
 * with Go's location and context ("template: NAME:LINE:COL: executing \"NAME\" at <CTX>: ...").
 * break and continue travel up as positive return codes of walk().
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/budget.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "tpl.h"

enum { WALK_OK = 0, WALK_BREAK = 1, WALK_CONTINUE = 2 };

/* Go's missingVal: "no final argument from a previous pipeline stage". */
static const tv_type T_MISSING = {.kind = TK_STRUCT, .name = "template.missingValType"};

static tv missing(void)
{
    tv v = {&T_MISSING, {0}};
    return v;
}

static bool is_missing(const tv *v)
{
    return v->t == &T_MISSING;
}

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static void at(tpl_x *x, const node *n)
{
    x->at = n;
}

/* Location "ParseName:line:col" of a node, as Tree.ErrorContext computes it. */
static void location(co_buf *b, const node *n)
{
    const tpl_tree *t = n->tree;
    size_t pos = n->pos <= t->text_len ? n->pos : t->text_len;
    int line = 1;
    size_t last_nl = SIZE_MAX;
    for (size_t i = 0; i < pos; i++) {
        if (t->text[i] == '\n') {
            line++;
            last_nl = i;
        }
    }
    size_t col = last_nl == SIZE_MAX ? pos : pos - (last_nl + 1);
    if (co_buf_printf(b, "%s:%d:%zu", t->parse_name, line, col) < 0) {
        co_buf_init(b, CO_MAX_ERROR_MESSAGE);
    }
}

static void verrorf(tpl_x *x, int code, const char *fmt, va_list ap)
{
    co_buf *e = x->err;
    co_buf_reset(e);
    int rc;
    if (!x->at) {
        rc = co_buf_printf(e, "template: %s: ", x->tmpl->name);
    } else {
        rc = co_buf_puts(e, "template: ");
        if (rc == 0) {
            location(e, x->at);
            rc = co_buf_printf(e, ": executing \"%s\" at <", x->tmpl->name);
        }
        if (rc == 0) {
            tpl_node_string(e, x->at);
            rc = co_buf_puts(e, ">: ");
        }
    }
    if (rc == 0) {
        rc = co_buf_vprintf(e, fmt, ap);
    }
    if (rc < 0) {
        co_buf_init(e, CO_MAX_ERROR_MESSAGE);
        tpl_ignore(co_buf_puts(e, "template: error message too long"));
    }
    x->code = code;
}

CO_PRINTF(2, 3) static int errorf(tpl_x *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrorf(x, CO_EINVALID, fmt, ap);
    va_end(ap);
    return -1;
}

CO_PRINTF(3, 4) static int errorf_code(tpl_x *x, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrorf(x, code, fmt, ap);
    va_end(ap);
    return -1;
}

/* The message of a failing function lives in fnerr until evalCall wraps it. */
static co_buf *fn_err(tpl_x *x)
{
    return x->err;
}

int tpl_fail(tpl_x *x, const char *fmt, ...)
{
    co_buf *e = fn_err(x);
    co_buf_reset(e);
    va_list ap;
    va_start(ap, fmt);
    if (co_buf_vprintf(e, fmt, ap) < 0) {
        co_buf_init(e, CO_MAX_ERROR_MESSAGE);
        tpl_ignore(co_buf_puts(e, "error message too long"));
    }
    va_end(ap);
    x->code = CO_EINVALID;
    return -1;
}

int tpl_fail_code(tpl_x *x, int code, const char *fmt, ...)
{
    co_buf *e = fn_err(x);
    co_buf_reset(e);
    va_list ap;
    va_start(ap, fmt);
    if (co_buf_vprintf(e, fmt, ap) < 0) {
        co_buf_init(e, CO_MAX_ERROR_MESSAGE);
        tpl_ignore(co_buf_puts(e, "error message too long"));
    }
    va_end(ap);
    x->code = code;
    return -1;
}

/* %v of a value into a small buffer for error messages. */
static const char *vstr(tpl_x *x, const tv *v)
{
    co_buf b = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE / 4);
    co_buf *saved = x->err;
    co_buf scratch = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    x->err = &scratch;
    if (tpl_print_value(x, &b, v) < 0) {
        co_buf_dispose(&b);
    }
    x->err = saved;
    co_buf_dispose(&scratch);
    tv s = tv_string(x, co_buf_cstr(&b), b.len);
    co_buf_dispose(&b);
    return s.u.s->s;
}

static const char *nstr(tpl_x *x, const node *n)
{
    co_buf b = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE / 4);
    tpl_node_string(&b, n);
    tv s = tv_string(x, co_buf_cstr(&b), b.len);
    co_buf_dispose(&b);
    return s.u.s->s;
}

static int step(tpl_x *x)
{
    uint64_t max = x->set->opts.max_steps ? x->set->opts.max_steps : CO_MAX_TEMPLATE_STEPS;
    if (++*x->steps > max) {
        return errorf_code(x, CO_ETOOBIG, "execution exceeds the limit of %llu steps",
                           (unsigned long long)max);
    }
    int rc = co_budget_tick();
    if (rc < 0) {
        return errorf_code(x, rc, "%s", co_error_last());
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Variables                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static void push_var(tpl_x *x, const char *name, tv v)
{
    if (x->nvars == x->capvars) {
        size_t cap = x->capvars ? x->capvars * 2 : 16;
        tpl_var *nv = tpl_alloc(x, cap * sizeof(*nv));
        if (x->nvars) {
            memcpy(nv, x->vars, x->nvars * sizeof(*nv));
        }
        x->vars = nv;
        x->capvars = cap;
    }
    x->vars[x->nvars].name = name;
    x->vars[x->nvars].len = strlen(name);
    x->vars[x->nvars].val = v;
    x->vars[x->nvars].iface = false;
    x->nvars++;
}

static int set_var(tpl_x *x, const char *name, tv v)
{
    for (size_t i = x->nvars; i-- > 0;) {
        if (strcmp(x->vars[i].name, name) == 0) {
            x->vars[i].val = v;
            x->vars[i].iface = false;
            return 0;
        }
    }
    return errorf(x, "undefined variable: %s", name);
}

static int var_value(tpl_x *x, const char *name, tv *out, bool *iface)
{
    for (size_t i = x->nvars; i-- > 0;) {
        if (strcmp(x->vars[i].name, name) == 0) {
            *out = x->vars[i].val;
            *iface = x->vars[i].iface;
            return 0;
        }
    }
    return errorf(x, "undefined variable: %s", name);
}

/* ------------------------------------------------------------------------------------------ */
/* reflect helpers                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* indirect: follows pointers (and nil interfaces); *is_nil is set when stopping at a nil. */
static tv indirect(const tv *v, bool *is_nil)
{
    tv r = *v;
    *is_nil = false;
    while (r.t && (r.t->kind == TK_PTR || r.t->kind == TK_IFACE)) {
        if (tv_is_nil(&r)) {
            *is_nil = true;
            return r;
        }
        if (r.t->kind == TK_PTR && r.t->elem && r.t->elem->kind == TK_STRUCT) {
            /* a pointer to struct: the struct shares the payload */
            tv s = {r.t->elem, {.o = r.u.o}};
            r = s;
        } else {
            break;
        }
    }
    return r;
}

/* indirectInterface: a nil interface becomes no value. */
static tv indirect_iface(const tv *v)
{
    if (v->t && v->t->kind == TK_IFACE) {
        return tv_invalid();
    }
    return *v;
}

static bool same_type(const tv_type *a, const tv_type *b)
{
    return a == b || (a && b && strcmp(a->name, b->name) == 0);
}

static bool can_be_nil(const tv_type *t)
{
    switch (t->kind) {
    case TK_CHAN:
    case TK_FUNC:
    case TK_IFACE:
    case TK_MAP:
    case TK_PTR:
    case TK_SLICE:
        return true;
    case TK_STRUCT:
        return t == &T_VALUE;
    default:
        return false;
    }
}

static bool implements_error(const tv_type *t)
{
    for (const tv_type *s = t; s; s = s->kind == TK_PTR ? s->elem : NULL) {
        for (size_t i = 0; i < s->nmethods; i++) {
            if (strcmp(s->methods[i].name, "Error") == 0) {
                return true;
            }
        }
        if (s->kind != TK_PTR) {
            break;
        }
    }
    return false;
}

static bool assignable(const tv_type *v, const tv_type *t)
{
    if (same_type(v, t)) {
        return true;
    }
    if (t->kind == TK_IFACE) {
        return t == &T_IFACE || strcmp(t->name, "interface {}") == 0 ||
               (t == &T_ERROR && implements_error(v));
    }
    return false;
}

/* validateType */
static int validate_type(tpl_x *x, tv *value, const tv_type *typ)
{
    if (!value->t) {
        if (!typ) {
            return 0;
        }
        if (can_be_nil(typ)) {
            *value = typ == &T_VALUE ? tv_invalid() : tv_nil(typ);
            return 0;
        }
        return errorf(x, "invalid value; expected %s", typ->name);
    }
    if (!typ || typ == &T_VALUE) {
        return 0;
    }
    if (!assignable(value->t, typ)) {
        if (value->t->kind == TK_PTR && value->t->elem && assignable(value->t->elem, typ)) {
            if (!value->u.o) {
                return errorf(x, "dereference of nil pointer of type %s", typ->name);
            }
            tv s = {value->t->elem, {.o = value->u.o}};
            *value = s;
            return 0;
        }
        return errorf(x, "wrong type for value; expected %s; got %s", typ->name, value->t->name);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Evaluation                                                                                 */
/* ------------------------------------------------------------------------------------------ */

static int eval_pipeline(tpl_x *x, tv dot, const node *pipe, tv *out);
static int eval_arg(tpl_x *x, tv dot, const tv_type *typ, const node *n, tv *out);
static int walk(tpl_x *x, tv dot, const node *n);

static int not_a_function(tpl_x *x, const node_list *args, const tv *final)
{
    if (args->n > 1 || !is_missing(final)) {
        return errorf(x, "can't give argument to non-function %s", nstr(x, args->items[0]));
    }
    return 0;
}

static bool is_hex_int(const char *s)
{
    size_t n = strlen(s);
    return n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && !strpbrk(s, "pP");
}

static int ideal_constant(tpl_x *x, const node *n, tv *out)
{
    at(x, n);
    if (n->is_complex) {
        double *c = tpl_alloc(x, 2 * sizeof(double));
        c[0] = n->c128[0];
        c[1] = n->c128[1];
        out->t = &T_COMPLEX128;
        out->u.c = c;
        return 0;
    }
    if (n->is_float && !is_hex_int(n->text) && n->text[0] != '\'' && strpbrk(n->text, ".eEpP")) {
        *out = tv_float(n->f64);
        return 0;
    }
    if (n->is_int) {
        *out = tv_int(&T_INT, n->i64);
        return 0;
    }
    if (n->is_uint) {
        return errorf(x, "%s overflows int", n->text);
    }
    *out = tv_invalid();
    return 0;
}

/* Finds a struct field by name, following embedded structs. */
static const tv *struct_field(const tv *sv, const char *name, const tv_field **fd)
{
    const tv_type *st = sv->t;
    if (!sv->u.o) {
        return NULL;
    }
    for (size_t i = 0; i < st->nfields; i++) {
        if (strcmp(st->fields[i].name, name) == 0) {
            *fd = &st->fields[i];
            return &sv->u.o->fields[i];
        }
    }
    for (size_t i = 0; i < st->nfields; i++) {
        if (st->fields[i].flags & TV_FIELD_EMBEDDED) {
            bool nil;
            tv inner = indirect(&sv->u.o->fields[i], &nil);
            if (!nil && inner.t && inner.t->kind == TK_STRUCT) {
                const tv *f = struct_field(&inner, name, fd);
                if (f) {
                    return f;
                }
            }
        }
    }
    return NULL;
}

static int eval_call(tpl_x *x,
                     tv dot,
                     const tpl_func *fn,
                     const tv *receiver,
                     const node *cnode,
                     const char *name,
                     const node_list *args,
                     size_t skip,
                     tv final,
                     tv *out);

static int eval_field(tpl_x *x,
                      tv dot,
                      const char *field,
                      const node *n,
                      const node_list *args,
                      tv final,
                      tv receiver,
                      bool recv_iface,
                      tv *out,
                      bool *out_iface)
{
    *out_iface = false;
    if (!receiver.t) {
        if (x->set->opts.missingkey == CO_TEMPLATE_MISSINGKEY_ERROR) {
            return errorf(x, "nil data; no entry for key \"%s\"", field);
        }
        *out = tv_invalid();
        return 0;
    }
    const tv_type *typ = recv_iface ? &T_IFACE : receiver.t;
    bool is_nil;
    tv r = indirect(&receiver, &is_nil);
    if (r.t->kind == TK_IFACE && is_nil) {
        return errorf(x, "nil pointer evaluating %s.%s", typ->name, field);
    }
    const tpl_func *m = tv_method(&receiver, field, strlen(field));
    if (!m && r.t != receiver.t) {
        m = tv_method(&r, field, strlen(field));
    }
    if (m) {
        return eval_call(x, dot, m, &receiver, n, field, args, 1, final, out);
    }
    bool has_args = (args && args->n > 1) || !is_missing(&final);
    switch (r.t->kind) {
    case TK_STRUCT: {
        const tv_field *fd = NULL;
        const tv *f = struct_field(&r, field, &fd);
        if (f) {
            if (has_args) {
                return errorf(x, "%s has arguments but cannot be invoked as function", field);
            }
            *out = *f;
            *out_iface = fd->type && fd->type->kind == TK_IFACE;
            return 0;
        }
        break;
    }
    case TK_MAP: {
        if (r.t->elem == NULL) {
            break;
        }
        if (has_args) {
            return errorf(x, "%s is not a method but has arguments", field);
        }
        tv *v = tv_map_get(r.u.m, field, strlen(field));
        if (v) {
            *out = *v;
            *out_iface = r.t->elem->kind == TK_IFACE;
            return 0;
        }
        switch (x->set->opts.missingkey) {
        case CO_TEMPLATE_MISSINGKEY_ZERO:
            if (r.t->elem->kind == TK_STRING) {
                *out = tv_string(x, "", 0);
            } else if (r.t->elem->kind == TK_IFACE || can_be_nil(r.t->elem)) {
                *out = tv_nil(r.t->elem);
            } else {
                *out = tv_int(r.t->elem, 0);
            }
            return 0;
        case CO_TEMPLATE_MISSINGKEY_ERROR:
            return errorf(x, "map has no entry for key \"%s\"", field);
        default:
            *out = tv_invalid();
            return 0;
        }
    }
    case TK_PTR: {
        const tv_type *et = r.t->elem;
        if (et && et->kind == TK_STRUCT) {
            bool found = false;
            for (size_t i = 0; i < et->nfields; i++) {
                found |= strcmp(et->fields[i].name, field) == 0;
            }
            if (!found) {
                break;
            }
        }
        if (is_nil) {
            return errorf(x, "nil pointer evaluating %s.%s", typ->name, field);
        }
        break;
    }
    default:
        break;
    }
    return errorf(x, "can't evaluate field %s in type %s", field, typ->name);
}

static int eval_field_chain(tpl_x *x,
                            tv dot,
                            tv receiver,
                            bool recv_iface,
                            const node *n,
                            const char **ident,
                            size_t nident,
                            const node_list *args,
                            tv final,
                            tv *out)
{
    for (size_t i = 0; i + 1 < nident; i++) {
        tv next = tv_invalid();
        bool next_iface;
        if (eval_field(x, dot, ident[i], n, NULL, missing(), receiver, recv_iface, &next,
                       &next_iface) < 0) {
            return -1;
        }
        receiver = next;
        recv_iface = next_iface;
    }
    bool last_iface;
    return eval_field(x, dot, ident[nident - 1], n, args, final, receiver, recv_iface, out,
                      &last_iface);
}

static int
eval_field_node(tpl_x *x, tv dot, const node *field, const node_list *args, tv final, tv *out)
{
    at(x, field);
    return eval_field_chain(x, dot, dot, x->dot_iface, field, field->ident, field->nident, args,
                            final, out);
}

static int
eval_chain_node(tpl_x *x, tv dot, const node *chain, const node_list *args, tv final, tv *out)
{
    at(x, chain);
    if (chain->nident == 0) {
        return errorf(x, "internal error: no fields in evalChainNode");
    }
    if (chain->pipe->type == N_NIL) {
        return errorf(x, "indirection through explicit nil in %s", nstr(x, chain));
    }
    tv pipe = tv_invalid();
    if (eval_arg(x, dot, NULL, chain->pipe, &pipe) < 0) {
        return -1;
    }
    return eval_field_chain(x, dot, pipe, false, chain, chain->ident, chain->nident, args, final,
                            out);
}

static int
eval_variable_node(tpl_x *x, tv dot, const node *var, const node_list *args, tv final, tv *out)
{
    at(x, var);
    tv value = tv_invalid();
    bool iface = false;
    if (var_value(x, var->ident[0], &value, &iface) < 0) {
        return -1;
    }
    if (var->nident == 1) {
        static const node_list none = {NULL, 0, 0};
        if (not_a_function(x, args ? args : &none, &final) < 0) {
            return -1;
        }
        *out = value;
        return 0;
    }
    return eval_field_chain(x, dot, value, iface, var, var->ident + 1, var->nident - 1, args, final,
                            out);
}

static int eval_function(tpl_x *x,
                         tv dot,
                         const node *ident,
                         const node *cmd,
                         const node_list *args,
                         tv final,
                         tv *out)
{
    at(x, ident);
    const tpl_func *fn = tpl_funcs_lookup(x->set->funcs, ident->text, ident->text_len);
    if (!fn) {
        return errorf(x, "\"%s\" is not a defined function", ident->text);
    }
    return eval_call(x, dot, fn, NULL, cmd, ident->text, args, 1, final, out);
}

static int eval_bool(tpl_x *x, const tv_type *typ, const node *n, tv *out)
{
    at(x, n);
    if (n->type == N_BOOL) {
        out->t = typ;
        out->u.b = n->truth;
        return 0;
    }
    return errorf(x, "expected bool; found %s", nstr(x, n));
}

static int eval_string(tpl_x *x, const tv_type *typ, const node *n, tv *out)
{
    at(x, n);
    if (n->type == N_STRING) {
        *out = n->literal;
        out->t = typ;
        return 0;
    }
    return errorf(x, "expected string; found %s", nstr(x, n));
}

/* reflect's SetInt/SetUint truncate to the width of the kind. */
static int64_t trunc_int(tk k, int64_t v)
{
    switch (k) {
    case TK_INT8:
        return (int8_t)v;
    case TK_INT16:
        return (int16_t)v;
    case TK_INT32:
        return (int32_t)v;
    default:
        return v;
    }
}

static uint64_t trunc_uint(tk k, uint64_t v)
{
    switch (k) {
    case TK_UINT8:
        return (uint8_t)v;
    case TK_UINT16:
        return (uint16_t)v;
    case TK_UINT32:
        return (uint32_t)v;
    default:
        return v;
    }
}

static int eval_integer(tpl_x *x, const tv_type *typ, const node *n, tv *out)
{
    at(x, n);
    if (n->type == N_NUMBER && n->is_int) {
        *out = tv_int(typ, trunc_int((tk)typ->kind, n->i64));
        return 0;
    }
    return errorf(x, "expected integer; found %s", nstr(x, n));
}

static int eval_unsigned(tpl_x *x, const tv_type *typ, const node *n, tv *out)
{
    at(x, n);
    if (n->type == N_NUMBER && n->is_uint) {
        *out = tv_uint(typ, trunc_uint((tk)typ->kind, n->u64));
        return 0;
    }
    return errorf(x, "expected unsigned integer; found %s", nstr(x, n));
}

static int eval_float(tpl_x *x, const tv_type *typ, const node *n, tv *out)
{
    at(x, n);
    if (n->type == N_NUMBER && n->is_float) {
        out->t = typ;
        out->u.f = typ->kind == TK_FLOAT32 ? (double)(float)n->f64 : n->f64;
        return 0;
    }
    return errorf(x, "expected float; found %s", nstr(x, n));
}

static int eval_complex(tpl_x *x, const tv_type *typ, const node *n, tv *out)
{
    if (n->type == N_NUMBER && n->is_complex) {
        double *c = tpl_alloc(x, 2 * sizeof(double));
        c[0] = n->c128[0];
        c[1] = n->c128[1];
        out->t = typ;
        out->u.c = c;
        return 0;
    }
    return errorf(x, "expected complex; found %s", nstr(x, n));
}

static int eval_empty_interface(tpl_x *x, tv dot, const node *n, tv *out)
{
    at(x, n);
    switch (n->type) {
    case N_BOOL:
        *out = tv_bool(n->truth);
        return 0;
    case N_DOT:
        *out = dot;
        return 0;
    case N_FIELD:
        return eval_field_node(x, dot, n, NULL, missing(), out);
    case N_IDENTIFIER:
        return eval_function(x, dot, n, n, NULL, missing(), out);
    case N_NIL:
        return errorf(x, "evalEmptyInterface: nil (can't happen)");
    case N_NUMBER:
        return ideal_constant(x, n, out);
    case N_STRING:
        *out = n->literal;
        return 0;
    case N_VARIABLE:
        return eval_variable_node(x, dot, n, NULL, missing(), out);
    case N_PIPE:
        return eval_pipeline(x, dot, n, out);
    default:
        return errorf(x, "can't handle assignment of %s to empty interface argument", nstr(x, n));
    }
}

static int eval_arg(tpl_x *x, tv dot, const tv_type *typ, const node *n, tv *out)
{
    at(x, n);
    int rc;
    switch (n->type) {
    case N_DOT:
        *out = dot;
        return validate_type(x, out, typ);
    case N_NIL:
        if (typ && can_be_nil(typ)) {
            *out = typ == &T_VALUE ? tv_invalid() : tv_nil(typ);
            return 0;
        }
        return errorf(x, "cannot assign nil to %s", typ ? typ->name : "<nil>");
    case N_FIELD: {
        node_list self = {(node **)&n, 1, 1};
        rc = eval_field_node(x, dot, n, &self, missing(), out);
        return rc < 0 ? rc : validate_type(x, out, typ);
    }
    case N_VARIABLE:
        rc = eval_variable_node(x, dot, n, NULL, missing(), out);
        return rc < 0 ? rc : validate_type(x, out, typ);
    case N_PIPE:
        rc = eval_pipeline(x, dot, n, out);
        return rc < 0 ? rc : validate_type(x, out, typ);
    case N_IDENTIFIER:
        rc = eval_function(x, dot, n, n, NULL, missing(), out);
        return rc < 0 ? rc : validate_type(x, out, typ);
    case N_CHAIN:
        rc = eval_chain_node(x, dot, n, NULL, missing(), out);
        return rc < 0 ? rc : validate_type(x, out, typ);
    default:
        break;
    }
    if (!typ) {
        return errorf(x, "can't handle %s for arg of type <nil>", nstr(x, n));
    }
    switch ((tk)typ->kind) {
    case TK_BOOL:
        return eval_bool(x, typ, n, out);
    case TK_COMPLEX64:
    case TK_COMPLEX128:
        return eval_complex(x, typ, n, out);
    case TK_FLOAT32:
    case TK_FLOAT64:
        return eval_float(x, typ, n, out);
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
        return eval_integer(x, typ, n, out);
    case TK_IFACE:
        if (typ == &T_IFACE || strcmp(typ->name, "interface {}") == 0) {
            return eval_empty_interface(x, dot, n, out);
        }
        break;
    case TK_STRUCT:
        if (typ == &T_VALUE) {
            return eval_empty_interface(x, dot, n, out);
        }
        break;
    case TK_STRING:
        return eval_string(x, typ, n, out);
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR:
        return eval_unsigned(x, typ, n, out);
    default:
        break;
    }
    return errorf(x, "can't handle %s for arg of type %s", nstr(x, n), typ->name);
}

/* Calls f (a function or, with receiver, a method). args->items[skip..] are the argument
 * nodes; final is the previous pipeline stage's value or missing. */
static int eval_call(tpl_x *x,
                     tv dot,
                     const tpl_func *fn,
                     const tv *receiver,
                     const node *cnode,
                     const char *name,
                     const node_list *args,
                     size_t skip,
                     tv final,
                     tv *out)
{
    size_t nargs = args && args->n > skip ? args->n - skip : 0;
    node *const *argn = nargs ? args->items + skip : NULL;
    size_t num_in = nargs + (is_missing(&final) ? 0 : 1);
    size_t num_fixed = nargs;
    if (fn->variadic) {
        num_fixed = (size_t)fn->nin - 1;
        if (num_in < num_fixed) {
            return errorf(x, "wrong number of args for %s: want at least %d got %zu", name,
                          fn->nin - 1, nargs);
        }
    } else if (num_in != fn->nin) {
        return errorf(x, "wrong number of args for %s: want %d got %zu", name, fn->nin, num_in);
    }

    if (fn->special == TPL_SPECIAL_AND || fn->special == TPL_SPECIAL_OR) {
        bool want = fn->special == TPL_SPECIAL_OR;
        tv v = tv_invalid();
        for (size_t i = 0; i < nargs; i++) {
            if (eval_arg(x, dot, &T_VALUE, argn[i], &v) < 0) {
                return -1;
            }
            bool ok;
            tv iv = indirect_iface(&v);
            if (tv_truth(&iv, &ok) == want) {
                *out = v;
                return 0;
            }
        }
        if (!is_missing(&final)) {
            v = final;
            if (validate_type(x, &v, &T_VALUE) < 0) {
                return -1;
            }
        }
        *out = v;
        return 0;
    }

    size_t extra = receiver ? 1 : 0;
    size_t total = num_in + extra + (fn->special == TPL_SPECIAL_CALL ? 1 : 0);
    tv *argv = tpl_alloc(x, (total ? total : 1) * sizeof(tv));
    size_t k = 0;
    if (fn->special == TPL_SPECIAL_CALL) {
        /* the callee's name is passed first, as modern Go does */
        const char *callee = nargs ? nstr(x, argn[0]) : vstr(x, &final);
        argv[k++] = tv_cstring(x, callee);
    }
    if (receiver) {
        argv[k++] = *receiver;
    }
    size_t i = 0;
    for (; i < num_fixed && i < nargs; i++) {
        if (eval_arg(x, dot, fn->in[i], argn[i], &argv[k++]) < 0) {
            return -1;
        }
    }
    if (fn->variadic) {
        const tv_type *et = fn->in[fn->nin - 1];
        for (; i < nargs; i++) {
            if (eval_arg(x, dot, et, argn[i], &argv[k++]) < 0) {
                return -1;
            }
        }
    }
    if (!is_missing(&final)) {
        const tv_type *t = fn->in[fn->nin - 1];
        if (fn->variadic && num_in - 1 < num_fixed) {
            t = fn->in[num_in - 1];
        }
        tv v = final;
        if (validate_type(x, &v, t) < 0) {
            return -1;
        }
        argv[k++] = v;
    }
    tv ret = tv_invalid();
    if (tpl_call(x, fn, &ret, argv, k) < 0) {
        at(x, cnode);
        char *msg = co_buf_take(x->err, NULL);
        int code = x->code;
        errorf_code(x, code, "error calling %s: %s", name, msg);
        free(msg);
        return -1;
    }
    *out = ret;
    return 0;
}

int tpl_call(tpl_x *x, const tpl_func *f, tv *ret, tv *args, size_t n)
{
    co_buf_reset(x->err);
    const tpl_func *saved = x->cur;
    int saved_code = x->code;
    x->cur = f;
    x->code = 0;
    int rc = f->fn(x, ret, args, n);
    x->cur = saved;
    /* the arena cannot refuse an allocation, so a function may have gone over the budget */
    int brc;
    if (rc >= 0 && (brc = co_budget_status()) < 0) {
        rc = tpl_fail_budget(x, brc);
    }
    if (rc >= 0) {
        x->code = saved_code;
    }
    if (rc < 0) {
        /* an empty message is legitimate (fail "", required "" ...) when it was set */
        if (x->err->len == 0 && x->code == 0) {
            x->code = CO_EINVALID;
            tpl_ignore(co_buf_puts(x->err, "unknown error"));
        }
        return -1;
    }
    /* a function declared to return interface{} yields a nil interface for nothing */
    if (!ret->t && f->out && f->out->kind == TK_IFACE) {
        *ret = tv_nil(&T_IFACE);
    }
    return 0;
}

static int eval_command(tpl_x *x, tv dot, const node *cmd, tv final, tv *out)
{
    const node *first = cmd->list.items[0];
    switch (first->type) {
    case N_FIELD:
        return eval_field_node(x, dot, first, &cmd->list, final, out);
    case N_CHAIN:
        return eval_chain_node(x, dot, first, &cmd->list, final, out);
    case N_IDENTIFIER:
        return eval_function(x, dot, first, cmd, &cmd->list, final, out);
    case N_PIPE:
        if (not_a_function(x, &cmd->list, &final) < 0) {
            return -1;
        }
        return eval_pipeline(x, dot, first, out);
    case N_VARIABLE:
        return eval_variable_node(x, dot, first, &cmd->list, final, out);
    default:
        break;
    }
    at(x, first);
    if (not_a_function(x, &cmd->list, &final) < 0) {
        return -1;
    }
    switch (first->type) {
    case N_BOOL:
        *out = tv_bool(first->truth);
        return 0;
    case N_DOT:
        *out = dot;
        return 0;
    case N_NIL:
        return errorf(x, "nil is not a command");
    case N_NUMBER:
        return ideal_constant(x, first, out);
    case N_STRING:
        *out = first->literal;
        return 0;
    default:
        break;
    }
    co_buf q = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    const char *s = nstr(x, first);
    (void)tpl_quote(&q, s, strlen(s), false);
    errorf(x, "can't evaluate command %s", co_buf_cstr(&q));
    co_buf_dispose(&q);
    return -1;
}

/* What one level of walk() and of eval_pipeline() weighs against CO_MAX_TEMPLATE_EXEC_NESTING:
 * a pipeline goes through five functions (command, function, call, argument) before the next
 * one, about three times the stack of a walk (about 240 bytes a walk in a release build). */
enum { NEST_WALK = 1, NEST_PIPELINE = 3 };

/* Counts one more level of walks and pipelines; the recursion of execution is on the C stack,
 * which the nesting of one template and the depth of template calls each bound, but not
 * together. */
static int nest(tpl_x *x, unsigned weight)
{
    if (x->sess->nesting + weight > CO_MAX_TEMPLATE_EXEC_NESTING) {
        return errorf_code(x, CO_ETOOBIG,
                           "execution nested deeper than %d levels (control structures, "
                           "pipelines and template calls together)",
                           CO_MAX_TEMPLATE_EXEC_NESTING);
    }
    x->sess->nesting += weight;
    return 0;
}

static int eval_pipeline_nested(tpl_x *x, tv dot, const node *pipe, tv *out);

static int eval_pipeline(tpl_x *x, tv dot, const node *pipe, tv *out)
{
    if (!pipe) {
        *out = tv_invalid();
        return 0;
    }
    at(x, pipe);
    if (nest(x, NEST_PIPELINE) < 0) {
        return -1;
    }
    int rc = eval_pipeline_nested(x, dot, pipe, out);
    x->sess->nesting -= NEST_PIPELINE;
    return rc;
}

static int eval_pipeline_nested(tpl_x *x, tv dot, const node *pipe, tv *out)
{
    tv value = missing();
    for (size_t i = 0; i < pipe->list.n; i++) {
        tv next = tv_invalid();
        if (eval_command(x, dot, pipe->list.items[i], value, &next) < 0) {
            return -1;
        }
        if (next.t && next.t->kind == TK_IFACE) {
            next = tv_invalid(); /* a nil interface{} digs down to no value */
        }
        value = next;
    }
    for (size_t i = 0; i < pipe->decl.n; i++) {
        const char *name = pipe->decl.items[i]->ident[0];
        if (pipe->is_assign) {
            if (set_var(x, name, value) < 0) {
                return -1;
            }
        } else {
            push_var(x, name, value);
        }
    }
    *out = value;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Walking                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* The error of output that did not fit in x->out (the output cap, or the budget's). */
static int out_failed(tpl_x *x)
{
    size_t max = x->out->max;
    co_buf_init(x->out, max);
    if (max < CO_MAX_TEMPLATE_OUTPUT && co_budget_memory_left() <= max) {
        int rc = co_budget_refuse(max + 1);
        return errorf_code(x, rc, "%s", co_error_last());
    }
    return errorf_code(x, CO_ETOOBIG, "output exceeds the limit of %zu bytes", max);
}

static int write_out(tpl_x *x, const char *s, size_t n)
{
    if (co_buf_put(x->out, s, n) < 0) {
        return out_failed(x);
    }
    return 0;
}

static int print_value(tpl_x *x, const node *n, tv v)
{
    at(x, n);
    /* printableValue: a pointer is printed as what it points to */
    if (v.t && v.t->kind == TK_PTR && v.u.o && v.t->elem && v.t->elem->kind == TK_STRUCT) {
        tv s = {v.t->elem, {.o = v.u.o}};
        v = s;
    }
    if (!v.t) {
        return write_out(x, "<no value>", 10);
    }
    if ((v.t->kind == TK_FUNC || v.t->kind == TK_CHAN) && !implements_error(v.t)) {
        return errorf(x, "can't print %s of type %s", nstr(x, n), v.t->name);
    }
    co_buf_reset(x->err);
    if (tpl_print_value(x, x->out, &v) < 0) {
        if (!x->out->ptr) {
            return out_failed(x);
        }
        /* a value too deep to print, or the budget: the message is in x->err */
        char *msg = co_buf_take(x->err, NULL);
        int code = x->code;
        at(x, n);
        errorf_code(x, code, "%s", msg ? msg : "");
        free(msg);
        return -1;
    }
    return 0;
}

static int walk_if_or_with(tpl_x *x, bool with, tv dot, const node *n)
{
    size_t mark = x->nvars;
    tv val = tv_invalid();
    int rc = eval_pipeline(x, dot, n->pipe, &val);
    if (rc < 0) {
        return rc;
    }
    bool ok;
    tv iv = indirect_iface(&val);
    bool truth = tv_truth(&iv, &ok);
    if (!ok) {
        return errorf(x, "if/with can't use %s", vstr(x, &val));
    }
    if (truth) {
        bool saved = x->dot_iface;
        if (with) {
            x->dot_iface = false;
        }
        rc = walk(x, with ? val : dot, n->body);
        x->dot_iface = saved;
    } else if (n->else_body) {
        rc = walk(x, dot, n->else_body);
    }
    x->nvars = mark;
    return rc;
}

typedef struct range_ctx {
    const node *r;
    size_t mark;
} range_ctx;

/* One iteration; returns WALK_OK, WALK_BREAK or -1. */
static int one_iteration(tpl_x *x, const range_ctx *c, tv index, tv elem, bool elem_iface)
{
    const node *pipe = c->r->pipe;
    if (pipe->decl.n > 0) {
        if (pipe->is_assign) {
            if (set_var(x, pipe->decl.items[0]->ident[0], pipe->decl.n > 1 ? index : elem) < 0) {
                return -1;
            }
        } else {
            x->vars[x->nvars - 1].val = elem;
            x->vars[x->nvars - 1].iface = elem_iface;
        }
    }
    if (pipe->decl.n > 1) {
        if (pipe->is_assign) {
            if (set_var(x, pipe->decl.items[1]->ident[0], elem) < 0) {
                return -1;
            }
        } else {
            x->vars[x->nvars - 2].val = index;
        }
    }
    if (step(x) < 0) {
        return -1;
    }
    bool saved = x->dot_iface;
    x->dot_iface = elem_iface;
    int rc = walk(x, elem, c->r->body);
    x->dot_iface = saved;
    x->nvars = c->mark;
    if (rc == WALK_CONTINUE) {
        rc = WALK_OK;
    }
    return rc;
}

static int walk_range(tpl_x *x, tv dot, const node *r)
{
    at(x, r);
    size_t mark0 = x->nvars;
    tv pv = tv_invalid();
    if (eval_pipeline(x, dot, r->pipe, &pv) < 0) {
        return -1;
    }
    bool is_nil;
    tv val = indirect(&pv, &is_nil);
    range_ctx c = {r, x->nvars};
    int rc = WALK_OK;
    bool ran = false;
    switch (tv_kind(&val)) {
    case TK_INT:
    case TK_INT8:
    case TK_INT16:
    case TK_INT32:
    case TK_INT64:
    case TK_UINT:
    case TK_UINT8:
    case TK_UINT16:
    case TK_UINT32:
    case TK_UINT64:
    case TK_UINTPTR: {
        if (r->pipe->decl.n > 1) {
            return errorf(x, "can't use %s to iterate over more than one variable", vstr(x, &val));
        }
        bool is_u = tk_is_uint((tk)val.t->kind);
        uint64_t n = is_u ? val.u.u : (val.u.i > 0 ? (uint64_t)val.u.i : 0);
        for (uint64_t i = 0; i < n && rc == WALK_OK; i++) {
            ran = true;
            tv e = is_u ? tv_uint(val.t, i) : tv_int(val.t, (int64_t)i);
            rc = one_iteration(x, &c, tv_invalid(), e, false);
        }
        break;
    }
    case TK_ARRAY:
    case TK_SLICE: {
        int64_t n = tv_len(&val);
        for (int64_t i = 0; i < n && rc == WALK_OK; i++) {
            ran = true;
            tv e;
            if (val.t == &T_BYTES) {
                e = tv_uint(&T_UINT8, (unsigned char)val.u.s->s[i]);
            } else {
                e = val.u.l->items[i];
            }
            rc = one_iteration(x, &c, tv_int(&T_INT, i), e,
                               val.t->elem && val.t->elem->kind == TK_IFACE);
        }
        break;
    }
    case TK_MAP: {
        if (!val.u.m || val.u.m->n == 0) {
            break;
        }
        /* iterate over a snapshot of the sorted keys, as fmtsort does */
        size_t n = val.u.m->n;
        const uint32_t *order = tv_map_sorted(x, val.u.m);
        const tv_str **keys = tpl_alloc(x, n * sizeof(void *));
        tv *vals = tpl_alloc(x, n * sizeof(*vals));
        for (size_t i = 0; i < n; i++) {
            keys[i] = val.u.m->keys[order[i]];
            vals[i] = val.u.m->vals[order[i]];
        }
        for (size_t i = 0; i < n && rc == WALK_OK; i++) {
            ran = true;
            tv k = {&T_STRING, {.s = keys[i]}};
            rc = one_iteration(x, &c, k, vals[i], val.t->elem && val.t->elem->kind == TK_IFACE);
        }
        break;
    }
    case TK_INVALID:
        break;
    default:
        return errorf(x, "range can't iterate over %s", vstr(x, &val));
    }
    if (rc < 0) {
        return rc;
    }
    if (!ran && r->else_body) {
        rc = walk(x, dot, r->else_body);
        if (rc < 0) {
            return rc;
        }
    }
    x->nvars = mark0;
    return rc == WALK_BREAK ? WALK_OK : rc;
}

static int execute_tree(tpl_x *parent, const tpl_tree *t, tv dot, co_buf *out);

static int walk_template(tpl_x *x, tv dot, const node *n)
{
    at(x, n);
    const tpl_tree *t = tpl_set_lookup(x->set, n->text, n->text_len);
    if (!t) {
        co_buf q = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
        (void)tpl_quote(&q, n->text, n->text_len, false);
        errorf(x, "template %s not defined", co_buf_cstr(&q));
        co_buf_dispose(&q);
        return -1;
    }
    if (x->depth >= CO_MAX_TEMPLATE_CALL_DEPTH) {
        return errorf_code(x, CO_ETOOBIG, "exceeded maximum template depth (%d)",
                           CO_MAX_TEMPLATE_CALL_DEPTH);
    }
    tv ndot = tv_invalid();
    if (eval_pipeline(x, dot, n->pipe, &ndot) < 0) {
        return -1;
    }
    return execute_tree(x, t, ndot, x->out);
}

static int walk_node(tpl_x *x, tv dot, const node *n);

static int walk(tpl_x *x, tv dot, const node *n)
{
    at(x, n);
    if (nest(x, NEST_WALK) < 0) {
        return -1;
    }
    int rc = walk_node(x, dot, n);
    x->sess->nesting -= NEST_WALK;
    return rc;
}

static int walk_node(tpl_x *x, tv dot, const node *n)
{
    if (step(x) < 0) {
        return -1;
    }
    switch (n->type) {
    case N_ACTION: {
        tv val = tv_invalid();
        if (eval_pipeline(x, dot, n->pipe, &val) < 0) {
            return -1;
        }
        if (n->pipe->decl.n == 0) {
            return print_value(x, n, val);
        }
        return WALK_OK;
    }
    case N_BREAK:
        return WALK_BREAK;
    case N_CONTINUE:
        return WALK_CONTINUE;
    case N_COMMENT:
        return WALK_OK;
    case N_IF:
        return walk_if_or_with(x, false, dot, n);
    case N_WITH:
        return walk_if_or_with(x, true, dot, n);
    case N_LIST:
        for (size_t i = 0; i < n->list.n; i++) {
            int rc = walk(x, dot, n->list.items[i]);
            if (rc != WALK_OK) {
                return rc;
            }
        }
        return WALK_OK;
    case N_RANGE:
        return walk_range(x, dot, n);
    case N_TEMPLATE:
        return walk_template(x, dot, n);
    case N_TEXT:
        return write_out(x, n->text, n->text_len);
    default:
        return errorf(x, "unknown node: %s", nstr(x, n));
    }
}

/* A nested execution (template call, include, tpl) sharing the session and counters. */
static int execute_tree(tpl_x *parent, const tpl_tree *t, tv dot, co_buf *out)
{
    tpl_x x = *parent;
    x.tmpl = t;
    x.out = out;
    x.at = NULL;
    x.depth = parent->depth + 1;
    x.vars = NULL;
    x.nvars = 0;
    x.capvars = 0;
    x.dot_iface = false;
    push_var(&x, "$", dot);
    if (!t->root) {
        co_buf q = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
        (void)tpl_quote(&q, t->name, strlen(t->name), false);
        errorf(&x, "%s is an incomplete or empty template", co_buf_cstr(&q));
        co_buf_dispose(&q);
        parent->code = x.code;
        return -1;
    }
    int rc = walk(&x, dot, t->root);
    parent->code = x.code;
    return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Entry points                                                                               */
/* ------------------------------------------------------------------------------------------ */

/* Executes the template @p name of @p set with @p dot into @p out (appending). On failure
 * the formatted message is in x->err. Used by the public API and by include/tpl. */
int tpl_execute(tpl_x *parent, const co_template_set *set, const char *name, tv dot, co_buf *out)
{
    const tpl_tree *t = tpl_set_lookup(set, name, strlen(name));
    if (!t) {
        co_buf_reset(parent->err);
        co_buf q = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
        (void)tpl_quote(&q, name, strlen(name), false);
        co_buf q2 = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
        const char *own = set->name ? set->name : name;
        (void)tpl_quote(&q2, own, strlen(own), false);
        tpl_ignore(co_buf_printf(parent->err,
                                 "template: no template %s associated with template %s",
                                 co_buf_cstr(&q), co_buf_cstr(&q2)));
        co_buf_dispose(&q2);
        co_buf_dispose(&q);
        parent->code = CO_ENOTFOUND;
        return -1;
    }
    if (parent->depth >= CO_MAX_TEMPLATE_CALL_DEPTH) {
        co_buf_reset(parent->err);
        tpl_ignore(co_buf_printf(parent->err, "template: %s: exceeded maximum template depth (%d)",
                                 name, CO_MAX_TEMPLATE_CALL_DEPTH));
        parent->code = CO_ETOOBIG;
        return -1;
    }
    tpl_x x = *parent;
    x.set = set;
    x.tmpl = t;
    int rc = execute_tree(&x, t, dot, out);
    parent->code = x.code;
    return rc;
}
