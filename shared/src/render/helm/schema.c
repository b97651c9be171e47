/* SPDX-License-Identifier: Apache-2.0 */
/*
 * values.schema.json validation as Helm applies it: every chart with a schema validates its
 * section of the coalesced values (the top chart the whole values, a subchart its own table),
 * with JSON Schema draft 7 (gojsonschema also accepts draft 4 and 6 documents; the keywords
 * are read the same way, and draft 4's boolean exclusiveMaximum/exclusiveMinimum are
 * understood). All violations are collected and reported together, one line each, naming the
 * field ("(root)" for the values themselves), as Helm lists them.
 */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "co/util/utf8.h"
#include "co/util/budget.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "helm_int.h"

typedef struct vctx {
    struct json_object *root; /* the schema document, for $ref */
    co_buf *errs;
    size_t nerrs;
    int depth;
    int budget; /* the render budget's error once spent: validation stops */
} vctx;

static void report(vctx *v, const char *path, const char *fmt, ...) CO_PRINTF(3, 4);

static void report(vctx *v, const char *path, const char *fmt, ...)
{
    if (v->nerrs >= 100) {
        return;
    }
    v->nerrs++;
    va_list ap;
    va_start(ap, fmt);
    char *msg = co_xvasprintf(fmt, ap);
    va_end(ap);
    if (co_buf_printf(v->errs, "- %s: %s\n", *path ? path : "(root)", msg) < 0) {
        v->nerrs = 100;
    }
    free(msg);
}

static struct json_object *kw(struct json_object *schema, const char *key)
{
    struct json_object *v = NULL;
    return json_object_object_get_ex(schema, key, &v) ? v : NULL;
}

static bool is_number(struct json_object *j)
{
    return j && (json_object_is_type(j, json_type_int) || json_object_is_type(j, json_type_double));
}

static double num(struct json_object *j)
{
    return json_object_get_double(j);
}

static bool is_integer(struct json_object *j)
{
    if (!is_number(j)) {
        return false;
    }
    if (json_object_is_type(j, json_type_int)) {
        return true;
    }
    double d = json_object_get_double(j);
    return isfinite(d) && floor(d) == d;
}

/* gojsonschema's names of JSON types. */
static const char *type_of(struct json_object *j)
{
    if (!j) {
        return "null";
    }
    switch (json_object_get_type(j)) {
    case json_type_boolean:
        return "boolean";
    case json_type_int:
        return "integer";
    case json_type_double:
        return is_integer(j) ? "integer" : "number";
    case json_type_string:
        return "string";
    case json_type_array:
        return "array";
    case json_type_object:
        return "object";
    default:
        return "null";
    }
}

static bool has_type(struct json_object *j, const char *t)
{
    const char *actual = type_of(j);
    if (strcmp(t, actual) == 0) {
        return true;
    }
    return strcmp(t, "number") == 0 && strcmp(actual, "integer") == 0;
}

/* Equality with numbers compared by value (1 equals 1.0). */
static bool json_eq(struct json_object *a, struct json_object *b)
{
    if (is_number(a) && is_number(b)) {
        return num(a) == num(b);
    }
    if (!a || !b || json_object_get_type(a) != json_object_get_type(b)) {
        return a == b;
    }
    if (json_object_is_type(a, json_type_array)) {
        size_t n = json_object_array_length(a);
        if (n != json_object_array_length(b)) {
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            if (!json_eq(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i))) {
                return false;
            }
        }
        return true;
    }
    if (json_object_is_type(a, json_type_object)) {
        if (json_object_object_length(a) != json_object_object_length(b)) {
            return false;
        }
        json_object_object_foreach (a, k, va) {
            struct json_object *vb = NULL;
            if (!json_object_object_get_ex(b, k, &vb) || !json_eq(va, vb)) {
                return false;
            }
        }
        return true;
    }
    return co_json_equal(a, b);
}

/* An ECMA-262 pattern, unanchored, checked with PCRE2 (which agrees for the patterns charts
 * use: classes, quantifiers, anchors, groups). -1 for a pattern that does not compile. */
static int regex_match(const char *pattern, const char *subject)
{
    int err;
    PCRE2_SIZE off;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &off, NULL);
    if (!re) {
        return -1;
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int rc = pcre2_match(re, (PCRE2_SPTR)subject, strlen(subject), 0, 0, md, NULL);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return rc >= 0 ? 1 : 0;
}

static char *child_path(const char *path, const char *key)
{
    return *path ? co_xasprintf("%s.%s", path, key) : co_xstrdup(key);
}

static char *index_path(const char *path, size_t i)
{
    return *path ? co_xasprintf("%s.%zu", path, i) : co_xasprintf("%zu", i);
}

static void
validate(vctx *v, struct json_object *schema, struct json_object *inst, const char *path);

/* Validates against a subschema into a scratch context: whether it passed. */
static bool passes(vctx *v, struct json_object *schema, struct json_object *inst, const char *path)
{
    co_buf scratch = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    vctx sub = {v->root, &scratch, 0, v->depth};
    validate(&sub, schema, inst, path);
    co_buf_dispose(&scratch);
    return sub.nerrs == 0;
}

static void
validate_number(vctx *v, struct json_object *s, struct json_object *inst, const char *path)
{
    double x = num(inst);
    struct json_object *k;
    if ((k = kw(s, "multipleOf")) && is_number(k) && num(k) > 0) {
        double q = x / num(k);
        if (!isfinite(q) || fabs(q - nearbyint(q)) > 1e-9 * fmax(1.0, fabs(q))) {
            report(v, path, "Must be a multiple of %g", num(k));
        }
    }
    struct json_object *emax = kw(s, "exclusiveMaximum");
    struct json_object *emin = kw(s, "exclusiveMinimum");
    if ((k = kw(s, "maximum")) && is_number(k)) {
        bool excl =
            emax && json_object_is_type(emax, json_type_boolean) && json_object_get_boolean(emax);
        if (excl ? x >= num(k) : x > num(k)) {
            report(v, path, "Must be less than %s%g", excl ? "" : "or equal to ", num(k));
        }
    }
    if ((k = kw(s, "minimum")) && is_number(k)) {
        bool excl =
            emin && json_object_is_type(emin, json_type_boolean) && json_object_get_boolean(emin);
        if (excl ? x <= num(k) : x < num(k)) {
            report(v, path, "Must be greater than %s%g", excl ? "" : "or equal to ", num(k));
        }
    }
    if (is_number(emax) && x >= num(emax)) {
        report(v, path, "Must be less than %g", num(emax));
    }
    if (is_number(emin) && x <= num(emin)) {
        report(v, path, "Must be greater than %g", num(emin));
    }
}

static void
validate_string(vctx *v, struct json_object *s, struct json_object *inst, const char *path)
{
    const char *str = json_object_get_string(inst);
    size_t len = co_utf8_count(str, strlen(str));
    struct json_object *k;
    if ((k = kw(s, "maxLength")) && is_number(k) && (double)len > num(k)) {
        report(v, path, "String length must be less than or equal to %g", num(k));
    }
    if ((k = kw(s, "minLength")) && is_number(k) && (double)len < num(k)) {
        report(v, path, "String length must be greater than or equal to %g", num(k));
    }
    if ((k = kw(s, "pattern")) && json_object_is_type(k, json_type_string)) {
        int m = regex_match(json_object_get_string(k), str);
        if (m == 0) {
            report(v, path, "Does not match pattern '%s'", json_object_get_string(k));
        } else if (m < 0) {
            report(v, path, "invalid pattern '%s' in the schema", json_object_get_string(k));
        }
    }
}

static void
validate_array(vctx *v, struct json_object *s, struct json_object *inst, const char *path)
{
    size_t n = json_object_array_length(inst);
    struct json_object *k;
    if ((k = kw(s, "maxItems")) && is_number(k) && (double)n > num(k)) {
        report(v, path, "Array must have at most %g items", num(k));
    }
    if ((k = kw(s, "minItems")) && is_number(k) && (double)n < num(k)) {
        report(v, path, "Array must have at least %g items", num(k));
    }
    if ((k = kw(s, "uniqueItems")) && json_object_is_type(k, json_type_boolean) &&
        json_object_get_boolean(k)) {
        for (size_t i = 0; i < n; i++) {
            for (size_t j = i + 1; j < n; j++) {
                if (json_eq(json_object_array_get_idx(inst, i),
                            json_object_array_get_idx(inst, j))) {
                    report(v, path, "array items[%zu,%zu] must be unique", i, j);
                    i = n;
                    break;
                }
            }
        }
    }
    struct json_object *items = kw(s, "items");
    if (items && json_object_is_type(items, json_type_array)) {
        size_t ni = json_object_array_length(items);
        struct json_object *add = kw(s, "additionalItems");
        for (size_t i = 0; i < n; i++) {
            char *p = index_path(path, i);
            if (i < ni) {
                validate(v, json_object_array_get_idx(items, i), json_object_array_get_idx(inst, i),
                         p);
            } else if (add) {
                if (json_object_is_type(add, json_type_boolean) && !json_object_get_boolean(add)) {
                    report(v, path, "No additional items allowed on array");
                    free(p);
                    break;
                }
                validate(v, add, json_object_array_get_idx(inst, i), p);
            }
            free(p);
        }
    } else if (items) {
        for (size_t i = 0; i < n; i++) {
            char *p = index_path(path, i);
            validate(v, items, json_object_array_get_idx(inst, i), p);
            free(p);
        }
    }
    if ((k = kw(s, "contains"))) {
        bool any = false;
        for (size_t i = 0; i < n && !any; i++) {
            any = passes(v, k, json_object_array_get_idx(inst, i), path);
        }
        if (!any) {
            report(v, path, "At least one of the items must match");
        }
    }
}

static void
validate_object(vctx *v, struct json_object *s, struct json_object *inst, const char *path)
{
    size_t n = (size_t)json_object_object_length(inst);
    struct json_object *k;
    if ((k = kw(s, "maxProperties")) && is_number(k) && (double)n > num(k)) {
        report(v, path, "Must have at most %g properties", num(k));
    }
    if ((k = kw(s, "minProperties")) && is_number(k) && (double)n < num(k)) {
        report(v, path, "Must have at least %g properties", num(k));
    }
    if ((k = kw(s, "required")) && json_object_is_type(k, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(k); i++) {
            const char *name = json_object_get_string(json_object_array_get_idx(k, i));
            if (name && !json_object_object_get_ex(inst, name, NULL)) {
                report(v, path, "%s is required", name);
            }
        }
    }
    struct json_object *props = kw(s, "properties");
    struct json_object *pprops = kw(s, "patternProperties");
    struct json_object *add = kw(s, "additionalProperties");
    struct json_object *names = kw(s, "propertyNames");
    struct json_object *deps = kw(s, "dependencies");
    json_object_object_foreach (inst, key, val) {
        char *p = child_path(path, key);
        bool matched = false;
        struct json_object *ps = NULL;
        if (props && json_object_object_get_ex(props, key, &ps)) {
            matched = true;
            validate(v, ps, val, p);
        }
        if (pprops && json_object_is_type(pprops, json_type_object)) {
            json_object_object_foreach (pprops, pat, psch) {
                if (regex_match(pat, key) == 1) {
                    matched = true;
                    validate(v, psch, val, p);
                }
            }
        }
        if (!matched && add) {
            if (json_object_is_type(add, json_type_boolean)) {
                if (!json_object_get_boolean(add)) {
                    report(v, path, "Additional property %s is not allowed", key);
                }
            } else {
                validate(v, add, val, p);
            }
        }
        if (names) {
            struct json_object *ks = json_object_new_string(key);
            if (!passes(v, names, ks, p)) {
                report(v, path, "property name %s does not match the schema", key);
            }
            json_object_put(ks);
        }
        if (deps && json_object_is_type(deps, json_type_object)) {
            struct json_object *d = NULL;
            if (json_object_object_get_ex(deps, key, &d) && d) {
                if (json_object_is_type(d, json_type_array)) {
                    for (size_t i = 0; i < json_object_array_length(d); i++) {
                        const char *need = json_object_get_string(json_object_array_get_idx(d, i));
                        if (need && !json_object_object_get_ex(inst, need, NULL)) {
                            report(v, path, "%s is required by %s", need, key);
                        }
                    }
                } else {
                    validate(v, d, inst, path);
                }
            }
        }
        free(p);
    }
}

static void
validate(vctx *v, struct json_object *schema, struct json_object *inst, const char *path)
{
    /* references that branch (anyOf: [$ref: A, $ref: A]) multiply the work with each level */
    if (!schema || v->budget < 0 || (v->budget = co_budget_tick()) < 0) {
        return;
    }
    if (json_object_is_type(schema, json_type_boolean)) {
        if (!json_object_get_boolean(schema)) {
            report(v, path, "False always fails validation");
        }
        return;
    }
    if (!json_object_is_type(schema, json_type_object)) {
        return;
    }
    if (++v->depth > CO_MAX_NESTING) {
        report(v, path, "schema nests too deeply (or $ref loops)");
        v->depth--;
        return;
    }
    struct json_object *k;
    if ((k = kw(schema, "$ref")) && json_object_is_type(k, json_type_string)) {
        const char *ref = json_object_get_string(k);
        struct json_object *target = NULL;
        if (ref[0] == '#' && co_json_pointer_get(&target, v->root, ref + 1) == 0) {
            validate(v, target, inst, path);
        } else {
            co_error_clear();
            report(v, path, "unsupported or unresolvable $ref %s", ref);
        }
        v->depth--;
        return;
    }
    if ((k = kw(schema, "type"))) {
        bool ok = false;
        if (json_object_is_type(k, json_type_string)) {
            ok = has_type(inst, json_object_get_string(k));
        } else if (json_object_is_type(k, json_type_array)) {
            for (size_t i = 0; i < json_object_array_length(k) && !ok; i++) {
                const char *t = json_object_get_string(json_object_array_get_idx(k, i));
                ok = t && has_type(inst, t);
            }
        } else {
            ok = true;
        }
        if (!ok) {
            const char *want = json_object_is_type(k, json_type_string)
                                   ? json_object_get_string(k)
                                   : json_object_to_json_string_ext(k, JSON_C_TO_STRING_PLAIN);
            report(v, path, "Invalid type. Expected: %s, given: %s", want, type_of(inst));
            v->depth--;
            return;
        }
    }
    if ((k = kw(schema, "enum")) && json_object_is_type(k, json_type_array)) {
        bool ok = false;
        for (size_t i = 0; i < json_object_array_length(k) && !ok; i++) {
            ok = json_eq(json_object_array_get_idx(k, i), inst);
        }
        if (!ok) {
            report(v, path, "%s must be one of the following: %s", *path ? path : "(root)",
                   json_object_to_json_string_ext(k, JSON_C_TO_STRING_PLAIN));
        }
    }
    if (json_object_object_get_ex(schema, "const", &k) && !json_eq(k, inst)) {
        report(v, path, "%s does not match: %s", *path ? path : "(root)",
               k ? json_object_to_json_string_ext(k, JSON_C_TO_STRING_PLAIN) : "null");
    }
    /* format: a string is checked, a number never has a known format, others pass */
    if ((k = kw(schema, "format")) && json_object_is_type(k, json_type_string) &&
        (is_number(inst) || (inst && json_object_is_type(inst, json_type_string)))) {
        const char *f = json_object_get_string(k);
        int ok = co_helm__format_check(f, is_number(inst) ? "" : json_object_get_string(inst));
        if (ok == 0 || (ok > 0 && is_number(inst))) {
            report(v, path, "Does not match format '%s'", f);
        }
    }
    if (is_number(inst)) {
        validate_number(v, schema, inst, path);
    } else if (inst && json_object_is_type(inst, json_type_string)) {
        validate_string(v, schema, inst, path);
    } else if (inst && json_object_is_type(inst, json_type_array)) {
        validate_array(v, schema, inst, path);
    } else if (inst && json_object_is_type(inst, json_type_object)) {
        validate_object(v, schema, inst, path);
    }
    if ((k = kw(schema, "allOf")) && json_object_is_type(k, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(k); i++) {
            validate(v, json_object_array_get_idx(k, i), inst, path);
        }
    }
    if ((k = kw(schema, "anyOf")) && json_object_is_type(k, json_type_array)) {
        bool any = false;
        for (size_t i = 0; i < json_object_array_length(k) && !any; i++) {
            any = passes(v, json_object_array_get_idx(k, i), inst, path);
        }
        if (!any) {
            report(v, path, "Must validate at least one schema (anyOf)");
        }
    }
    if ((k = kw(schema, "oneOf")) && json_object_is_type(k, json_type_array)) {
        size_t count = 0;
        for (size_t i = 0; i < json_object_array_length(k); i++) {
            count += passes(v, json_object_array_get_idx(k, i), inst, path);
        }
        if (count != 1) {
            report(v, path, "Must validate one and only one schema (oneOf)");
        }
    }
    if ((k = kw(schema, "not")) && passes(v, k, inst, path)) {
        report(v, path, "Must not validate the schema (not)");
    }
    if ((k = kw(schema, "if"))) {
        struct json_object *branch =
            passes(v, k, inst, path) ? kw(schema, "then") : kw(schema, "else");
        if (branch) {
            validate(v, branch, inst, path);
        }
    }
    v->depth--;
}

/* ValidateAgainstSchema: this chart's schema, then each subchart's on its table. */
static int validate_node(co_buf *out, const helm_node *n, struct json_object *values)
{
    if (n->chart->schema) {
        struct json_object *schema = NULL;
        if (co_json_parse(&schema, n->chart->schema, n->chart->schema_len) < 0) {
            return co_error_wrap("%s: values.schema.json", n->meta.name);
        }
        co_buf errs = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
        vctx v = {schema, &errs, 0, 0, 0};
        struct json_object *inst = values ? values : NULL;
        struct json_object *empty = NULL;
        if (!inst) {
            inst = empty = json_object_new_object();
        }
        validate(&v, schema, inst, "");
        json_object_put(empty);
        if (v.budget < 0) {
            co_buf_dispose(&errs);
            json_object_put(schema);
            return co_budget_status();
        }
        if (v.nerrs > 0) {
            if (co_buf_printf(out, "%s:\n%s", n->meta.name, co_buf_cstr(&errs)) < 0) {
                co_error_clear();
            }
        }
        co_buf_dispose(&errs);
        json_object_put(schema);
    }
    for (size_t i = 0; i < n->ndeps; i++) {
        struct json_object *sub = co_json_get(values, n->deps[i]->meta.name, NULL);
        int rc = validate_node(out, n->deps[i], sub);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

int co_helm__validate_schema(const helm_node *root, struct json_object *values)
{
    co_buf out = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    int rc = validate_node(&out, root, values);
    if (rc == 0 && out.len > 0) {
        rc = co_error_set(CO_EINVALID,
                          "values don't meet the specifications of the schema(s) in the "
                          "following chart(s):\n%s",
                          co_buf_cstr(&out));
    }
    co_buf_dispose(&out);
    return rc;
}
