/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the Component API model: arbitrary bytes are parsed as JSON and fed to
 * validation, defaulting, parsing into the model and back, conversion, the dependency-graph
 * helpers and ComponentPolicy validation. Besides "no crash, no leak" it checks two properties
 * and aborts when they fail:
 *  - every conversion that succeeds round-trips: convert(convert(x)) is byte-identical to x
 *    after canonical encoding (keys sorted);
 *  - every object that validates also converts (refusals are reserved for invalid input), and
 *    so does its defaulted form.
 * The first input byte picks helpers: when the JSON lacks apiVersion or kind, a Component
 * identity of the chosen version is filled in so that mutations reach the spec code.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/api/component.h"
#include "co/api/depgraph.h"
#include "co/util/error.h"
#include "co/api/field_error.h"
#include "co/api/policy.h"
#include "co/json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void canonical_into(co_buf *b, json_object *v)
{
    if (json_object_is_type(v, json_type_object)) {
        size_t n = (size_t)json_object_object_length(v);
        char **keys = co_xcalloc(n + 1, sizeof(char *));
        size_t k = 0;
        json_object_object_foreach (v, key, val) {
            (void)val;
            keys[k++] = key;
        }
        if (n > 1) {
            qsort(keys, n, sizeof(char *), cmp_str);
        }
        CO_ASSERT(co_buf_putc(b, '{') == 0);
        for (size_t i = 0; i < n; i++) {
            json_object *ks = json_object_new_string(keys[i]);
            json_object *member = NULL;
            CO_ASSERT(co_buf_printf(b, "%s%s:", i ? "," : "",
                                    json_object_to_json_string_ext(ks, JSON_C_TO_STRING_PLAIN)) ==
                      0);
            json_object_put(ks);
            json_object_object_get_ex(v, keys[i], &member);
            canonical_into(b, member);
        }
        CO_ASSERT(co_buf_putc(b, '}') == 0);
        free(keys);
    } else if (json_object_is_type(v, json_type_array)) {
        size_t n = json_object_array_length(v);
        CO_ASSERT(co_buf_putc(b, '[') == 0);
        for (size_t i = 0; i < n; i++) {
            if (i) {
                CO_ASSERT(co_buf_putc(b, ',') == 0);
            }
            canonical_into(b, json_object_array_get_idx(v, i));
        }
        CO_ASSERT(co_buf_putc(b, ']') == 0);
    } else {
        CO_ASSERT(co_buf_puts(b, v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN)
                                   : "null") == 0);
    }
}

static char *canonical(json_object *v)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    canonical_into(&b, v);
    return co_buf_take(&b, NULL);
}

static const char *other(json_object *o)
{
    return co_component_version(o) == CO_API_V1ALPHA1 ? CO_COMPONENT_V1BETA1
                                                      : CO_COMPONENT_V1ALPHA1;
}

/* Converts there and back; aborts if a successful round trip changes anything. Returns whether
 * the first conversion succeeded. */
static int round_trip(json_object *o)
{
    json_object *there = NULL;
    json_object *back = NULL;
    if (co_component_convert(&there, o, other(o)) != 0) {
        return 0;
    }
    if (co_component_convert(&back, there, other(there)) != 0) {
        fprintf(stderr, "converted object does not convert back: %s\n", co_error_last());
        abort();
    }
    char *a = canonical(o);
    char *b = canonical(back);
    if (strcmp(a, b) != 0) {
        fprintf(stderr, "round trip changed the object:\n  in: %s\n out: %s\n", a, b);
        abort();
    }
    free(a);
    free(b);
    json_object_put(there);
    json_object_put(back);
    return 1;
}

static int validates(json_object *o)
{
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    int rc = co_component_validate(&errs, o, NULL, 0);
    co_buf b = CO_BUF_INIT(1 << 20);
    (void)co_field_errors_format(&b, &errs);
    co_buf_dispose(&b);
    co_field_errors_dispose(&errs);
    return rc == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 64 * 1024) {
        return 0;
    }
    unsigned mode = data[0];
    json_tokener *tok = json_tokener_new_ex(64);
    json_object *o = json_tokener_parse_ex(tok, (const char *)data + 1, (int)(size - 1));
    json_tokener_free(tok);
    if (!o) {
        return 0;
    }
    if (json_object_is_type(o, json_type_object) && (mode & 1)) {
        if (!json_object_object_get_ex(o, "apiVersion", NULL)) {
            json_object_object_add(
                o, "apiVersion",
                json_object_new_string((mode & 2) ? CO_COMPONENT_V1BETA1 : CO_COMPONENT_V1ALPHA1));
        }
        if (!json_object_object_get_ex(o, "kind", NULL)) {
            json_object_object_add(o, "kind", json_object_new_string(CO_COMPONENT_KIND));
        }
    }

    int valid = validates(o);
    int converts = round_trip(o);
    if (valid && !converts) {
        fprintf(stderr, "a valid object does not convert: %s\n", co_error_last());
        abort();
    }

    json_object *d = NULL;
    if (co_component_default(&d, o, (mode & 4) ? "fuzz" : NULL, NULL) == 0) {
        /* (validity itself may change: the namespace given here can make a dependency a
         * duplicate or a self-reference) */
        (void)validates(d);
        if (round_trip(d) == 0 && valid) {
            fprintf(stderr, "a defaulted valid object does not convert: %s\n", co_error_last());
            abort();
        }
        json_object_put(d);
    }

    /* an inventory that reads packs and reads back to the same list: to the list as the
     * encoder writes it (which turns the invalid UTF-8 only this lenient parse lets in into
     * U+FFFD) */
    json_object *inv = NULL;
    if (co_component_inventory_get(&inv, co_json_get(o, "status", NULL)) == 0 && inv) {
        json_object *st = json_object_new_object();
        json_object *back = NULL, *as_written = NULL;
        co_buf text = CO_BUF_INIT(SIZE_MAX);
        co_component_inventory_put(st, inv, 0);
        if (co_json_encode(&text, inv, 0) == 0 &&
            co_json_parse_max(&as_written, co_buf_cstr(&text), text.len, SIZE_MAX) == 0 &&
            (co_component_inventory_get(&back, st) < 0 || !co_json_equal(back, as_written))) {
            fprintf(stderr, "a packed inventory does not read back: %s\n", co_error_last());
            abort();
        }
        co_buf_dispose(&text);
        json_object_put(as_written);
        json_object_put(back);
        json_object_put(st);
    }
    json_object_put(inv);

    co_component *c = NULL;
    if (co_component_parse(&c, o) == 0) {
        json_object *j = NULL;
        if (co_component_to_json(&j, c) == 0) {
            (void)validates(j);
            json_object_put(j);
        }
        (void)co_component_requeue_ns(c);
        (void)co_component_target_namespace(c);
        co_policy_request req = {.ns = (mode & 8) ? "fuzz" : NULL, .username = "fuzzer"};
        co_policy_result res;
        co_depgraph *g = co_depgraph_new();
        (void)co_depgraph_set_object(g, o, "fuzz");
        req.graph = g;
        if (co_policy_evaluate(&res, NULL, c, &req) == 0) {
            co_policy_result_dispose(&res);
        }
        co_depgraph_list cycles = {NULL, 0};
        if (co_depgraph_find_cycles(&cycles, g) == 0) {
            co_depgraph_list_dispose(&cycles);
        }
        co_depgraph_free(g);
        co_component_free(c);
    }

    co_field_errors perrs = CO_FIELD_ERRORS_INIT;
    (void)co_policy_validate(&perrs, o, 0);
    co_field_errors_dispose(&perrs);
    co_policy *p = NULL;
    if (co_policy_parse(&p, o) == 0) {
        co_policy_free(p);
    }
    co_error_clear();
    json_object_put(o);
    return 0;
}
