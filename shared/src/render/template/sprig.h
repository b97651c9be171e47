/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private helpers shared by the sprig function groups (sprig_*.c): the conversions of
 * spf13/cast that sprig applies to interface{} arguments, sprig's strval, Go's panics as
 * errors, and result buffers under the output cap.
 */
#ifndef CO_TEMPLATE_SPRIG_H
#define CO_TEMPLATE_SPRIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/buf.h"
#include "tpl.h"

/* Parameter type lists used by the function tables. */
extern const tv_type *const SP_A[];   /* interface{} ... */
extern const tv_type *const SP_S[];   /* string ... */
extern const tv_type *const SP_I[];   /* int ... */
extern const tv_type *const SP_IS[];  /* int, string */
extern const tv_type *const SP_IIS[]; /* int, int, string */
extern const tv_type *const SP_ISS[]; /* int, string, string */
extern const tv_type *const SP_SIS[]; /* string, int, string */
extern const tv_type *const SP_SSI[]; /* string, string, int */
extern const tv_type *const SP_SA[];  /* string, interface{} */
extern const tv_type *const SP_AAB[]; /* interface{}, interface{}, bool */
extern const tv_type *const SP_M[];   /* map[string]interface{} ... */
extern const tv_type *const SP_MS[];  /* map[string]interface{}, string ... */
extern const tv_type *const SP_MSA[]; /* map[string]interface{}, string, interface{} */
extern const tv_type *const SP_SM[];  /* string, map[string]interface{} ... */
extern const tv_type *const SP_IA[];  /* int, interface{} */
extern const tv_type *const SP_AIF[]; /* interface{}, int, float64 ... */

/* The text of a string value as a C string (the shared empty string has no storage). */
const char *sp_cstr(const tv_str *s);

/* A nil interface (or no value). */
bool sp_is_nil(const tv *v);

/* sprig's strval: strings and []byte as they are, values with Error()/String() through them,
 * anything else as fmt's %v. -1 after tpl_fail (output cap, a value too deep to print). */
int sp_strval(tpl_x *x, co_buf *b, const tv *v);
int sp_strval_tv(tpl_x *x, const tv *v, tv *out);

/* cast.ToInt64E / ToFloat64E / ToUint64E: false when the value cannot be converted (the
 * non-E forms then use 0). */
bool sp_to_int64(const tv *v, int64_t *out);
bool sp_to_float64(const tv *v, double *out);
bool sp_to_uint64(const tv *v, uint64_t *out);
/* cast's error text: "unable to cast %#v of type %T to TYPE". */
int sp_cast_fail(tpl_x *x, const tv *v, const char *type);

/* Go's conversion of a float64 to int64 on amd64 (out of range and NaN: INT64_MIN). */
int64_t sp_f2i(double f);

/* strconv.ParseFloat(s, 64); false on a syntax or range error. (Integers: co/util/strconv.h.) */
bool sp_parse_float(const char *s, size_t len, double *out);

/* A new string result from a buffer (disposed). @p rc: 0, the error of a failed append (the
 * output cap: fails with its message), or -1 from a function that failed with tpl_fail (its
 * message stays). */
int sp_ret_buf(tpl_x *x, tv *ret, co_buf *b, int rc);

/* Go's runtime panics as text/template reports them. */
int sp_panic_nil(tpl_x *x);
/* s[lo:hi] bounds failure of a string or slice of length/capacity n (lo < 0: [:hi]). */
int sp_panic_slice(tpl_x *x, int64_t lo, int64_t hi, int64_t n, bool has_lo, bool is_string);

/* reflect.ValueOf(v).Kind().String(). */
const char *sp_kind_name(const tv *v);

/* sprig's empty(). */
bool sp_empty(const tv *v);

/* A list value: a slice, array or []byte viewed as items (bytes become uint8 values). */
bool sp_is_list(const tv *v);
tv sp_list_item(const tv *v, size_t i);

/* Go's encoding/json Marshal of a template value (escape_html: Marshal's default; indent:
 * MarshalIndent with "" and the given indent, NULL for none). */
int sp_json_encode(tpl_x *x, co_buf *b, const tv *v, bool escape_html, const char *indent);

/* Registration of the groups (each in its own file). */
void tpl_register_sprig_strings(co_template_funcs *f);
void tpl_register_sprig_lists(co_template_funcs *f);
void tpl_register_sprig_math(co_template_funcs *f);
void tpl_register_sprig_misc(co_template_funcs *f);
void tpl_register_sprig_decimal(co_template_funcs *f);
void tpl_register_sprig_crypto(co_template_funcs *f);
void tpl_register_sprig_date(co_template_funcs *f);
void tpl_register_sprig_url(co_template_funcs *f);
/* Helm's additions (helm_funcs.c). */
void tpl_register_helm(co_template_funcs *f);

/* A time.Time or *time.Time value (sprig_date.c). */
bool tpl_is_time(const tv *v);
/* The runtime's functions (runtime.c), replacing sprig's of the same names. */
void tpl_register_runtime(co_template_funcs *f);

#endif
