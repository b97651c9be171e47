/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for drift detection (co/api/drift.h, docs/drift.md): the annotation parsers, the
 * subset comparison of a manifest with its live object and its bounds, and the ignored fields
 * a re-apply keeps at their live values. */
#include <stdio.h>

#include <json-c/json.h>

#include "co/api/drift.h"
#include "co/json/json.h"
#include "co/util/buf.h"
#include "co/util/error.h"
#include "tests/support/test_support.h"

/* JSON with ' for " (test readability). */
static struct json_object *J(const char *text)
{
    char *t = strdup(text);
    for (char *p = t; *p; p++) {
        if (*p == '\'') {
            *p = '"';
        }
    }
    struct json_object *o = NULL;
    if (co_json_parse(&o, t, strlen(t)) < 0) {
        fail_msg("bad test JSON %s: %s", t, co_error_last());
    }
    free(t);
    return o;
}

/* The drifted fields of @p desired against @p live, joined by spaces ("" when none). */
static char *drift_of(const char *desired, const char *live, const char *ignore, const char *owned)
{
    struct json_object *d = J(desired), *l = J(live), *o = owned ? J(owned) : NULL;
    co_drift_ignore ig = {NULL, 0};
    if (ignore) {
        char *t = strdup(ignore);
        for (char *p = t; *p; p++) {
            *p = *p == '\'' ? '"' : *p;
        }
        assert_co_pass(co_drift_ignore_parse(&ig, t));
        free(t);
    }
    co_drift_result r;
    assert_co_pass(co_drift_compare(&r, d, l, &ig, o));
    char *out = strdup("");
    for (size_t i = 0; i < r.nfields; i++) {
        char *joined = co_xasprintf("%s%s%s", out, i ? " " : "", r.fields[i]);
        free(out);
        out = joined;
    }
    assert_true(r.total >= r.nfields);
    co_drift_result_dispose(&r);
    co_drift_ignore_dispose(&ig);
    json_object_put(d);
    json_object_put(l);
    json_object_put(o);
    return out;
}

static void
expect_drift(const char *desired, const char *live, const char *ignore, const char *want)
{
    char *got = drift_of(desired, live, ignore, NULL);
    assert_string_equal(got, want);
    free(got);
}

static void test_drift__policy_parse(void **state)
{
    (void)state;
    co_drift_policy p = CO_DRIFT_IGNORE;
    assert_co_pass(co_drift_policy_parse(&p, "Correct"));
    assert_int_equal(p, CO_DRIFT_CORRECT);
    assert_co_pass(co_drift_policy_parse(&p, "warn"));
    assert_int_equal(p, CO_DRIFT_WARN);
    assert_co_pass(co_drift_policy_parse(&p, "IGNORE"));
    assert_int_equal(p, CO_DRIFT_IGNORE);
    assert_string_equal(co_drift_policy_name(CO_DRIFT_WARN), "Warn");
    p = CO_DRIFT_WARN;
    assert_co_fail_with(CO_EINVALID, co_drift_policy_parse(&p, "Fix"));
    assert_contains(co_error_last(), "Fix: must be Correct, Warn or Ignore");
    assert_int_equal(p, CO_DRIFT_WARN); /* untouched on failure */
    assert_co_fail_with(CO_EINVALID, co_drift_policy_parse(&p, ""));
}

static void test_drift__ignore_fields_parse(void **state)
{
    (void)state;
    co_drift_ignore ig = {NULL, 0};
    assert_co_pass(co_drift_ignore_parse(
        &ig, "[\"/spec/replicas\", \"/metadata/annotations/a~1b\", \"/data/x~0y\", \"/a/\"]"));
    assert_int_equal(ig.n, 4);
    assert_int_equal(ig.ptrs[0].n, 2);
    assert_string_equal(ig.ptrs[0].tokens[0], "spec");
    assert_string_equal(ig.ptrs[0].tokens[1], "replicas");
    assert_int_equal(ig.ptrs[1].n, 3);
    assert_string_equal(ig.ptrs[1].tokens[2], "a/b");
    assert_string_equal(ig.ptrs[2].tokens[1], "x~y");
    /* "~01" is "~1" unescaped once, not "/" */
    co_drift_ignore_dispose(&ig);
    assert_co_pass(co_drift_ignore_parse(&ig, "[\"/data/a~01\"]"));
    assert_string_equal(ig.ptrs[0].tokens[1], "a~1");
    co_drift_ignore_dispose(&ig);
    /* an empty token is a key too */
    assert_co_pass(co_drift_ignore_parse(&ig, "[\"/a/\"]"));
    assert_int_equal(ig.ptrs[0].n, 2);
    assert_string_equal(ig.ptrs[0].tokens[1], "");
    co_drift_ignore_dispose(&ig);
    assert_co_pass(co_drift_ignore_parse(&ig, "[]"));
    assert_int_equal(ig.n, 0);
    co_drift_ignore_dispose(&ig);

    static const struct {
        const char *text;
        int code;
        const char *msg;
    } bad[] = {
        {"/spec/replicas", CO_EINVALID, ""},
        {"{\"a\":1}", CO_EINVALID, "not a JSON list of JSON pointers"},
        {"[1]", CO_EINVALID, "element 0: not a string"},
        {"[\"spec/replicas\"]", CO_EINVALID, "a JSON pointer starts with '/'"},
        {"[\"\"]", CO_EINVALID, "a JSON pointer starts with '/'"},
        {"[\"/a~2\"]", CO_EINVALID, "'~' must be followed by 0 or 1"},
        {"[\"/a~\"]", CO_EINVALID, "'~' must be followed by 0 or 1"},
        {"[\"/kind\"]", CO_EINVALID, "cannot be ignored"},
        {"[\"/metadata\"]", CO_EINVALID, "cannot be ignored"},
        {"[\"/metadata/name\"]", CO_EINVALID, "cannot be ignored"},
        {"[\"/metadata/labels\"]", CO_EINVALID, "cannot be ignored"},
        {"[\"/metadata/annotations/component-operator.cs.sap.com~1digest\"]", CO_EINVALID,
         "cannot be ignored"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        ig.n = 99; /* written only on success */
        assert_co_fail_with(bad[i].code, co_drift_ignore_parse(&ig, bad[i].text));
        assert_contains(co_error_last(), bad[i].msg);
        assert_int_equal(ig.n, 99);
    }
    ig.n = 0;

    /* bounds */
    co_buf many = CO_BUF_INIT(4096);
    assert_co_pass(co_buf_puts(&many, "["));
    for (int i = 0; i <= CO_DRIFT_MAX_POINTERS; i++) {
        assert_co_pass(co_buf_puts(&many, i ? ",\"/a\"" : "\"/a\""));
    }
    assert_co_pass(co_buf_puts(&many, "]"));
    assert_co_fail_with(CO_ETOOBIG, co_drift_ignore_parse(&ig, co_buf_cstr(&many)));
    co_buf_dispose(&many);
    char *long_text = co_xmalloc(CO_DRIFT_IGNORE_MAX + 16);
    memset(long_text, ' ', CO_DRIFT_IGNORE_MAX + 8);
    long_text[0] = '[';
    long_text[CO_DRIFT_IGNORE_MAX + 7] = ']';
    long_text[CO_DRIFT_IGNORE_MAX + 8] = '\0';
    assert_co_fail_with(CO_ETOOBIG, co_drift_ignore_parse(&ig, long_text));
    free(long_text);
}

static void test_drift__maps_compare_as_subsets(void **state)
{
    (void)state;
    const char *cm = "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c','labels':"
                     "{'app':'x'}},'data':{'greeting':'hello','other':'1'}}";
    /* the server's additions are no drift */
    expect_drift(cm,
                 "{'metadata':{'name':'c','uid':'u','labels':{'app':'x','more':'y'},"
                 "'managedFields':[]},'data':{'greeting':'hello','other':'1','extra':'z'}}",
                 NULL, "");
    /* a changed, a removed value and a removed label */
    expect_drift(cm, "{'metadata':{'name':'c','labels':{}},'data':{'greeting':'hi'}}", NULL,
                 "/metadata/labels/app /data/greeting /data/other");
    /* a map gone as a whole */
    expect_drift(cm, "{'metadata':{'name':'c'},'data':{'greeting':'hello','other':'1'}}", NULL,
                 "/metadata/labels");
    /* a map turned into something else */
    expect_drift(cm, "{'metadata':{'name':'c','labels':{'app':'x'}},'data':'x'}", NULL, "/data");
    /* apiVersion, kind, status and metadata other than labels and annotations are not
     * compared; nor the operator's own marks */
    expect_drift("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c','namespace':'n',"
                 "'finalizers':['a'],'annotations':{'component-operator.cs.sap.com/digest':'d',"
                 "'component-operator.cs.sap.com/drift-policy':'Warn','keep':'k'}},"
                 "'status':{'phase':'x'}}",
                 "{'apiVersion':'v2','kind':'Other','metadata':{'name':'c','annotations':{"
                 "'keep':'k'}},'status':{'phase':'y'}}",
                 NULL, "");
    /* a desired null asks nothing */
    expect_drift("{'spec':{'a':null}}", "{'spec':{'a':5}}", NULL, "");
}

static void test_drift__lists_element_wise(void **state)
{
    (void)state;
    const char *svc = "{'spec':{'ports':[{'port':80,'protocol':'TCP'},{'port':81,'protocol':"
                      "'TCP'}]}}";
    /* element by element, each a subset */
    expect_drift(svc,
                 "{'spec':{'ports':[{'port':80,'protocol':'TCP','targetPort':80},{'port':81,"
                 "'protocol':'TCP','targetPort':81}]}}",
                 NULL, "");
    expect_drift(svc,
                 "{'spec':{'ports':[{'port':80,'protocol':'TCP'},{'port':82,'protocol':'TCP'}]}}",
                 NULL, "/spec/ports/1/port");
    /* another length: the list drifted as a whole */
    expect_drift(svc, "{'spec':{'ports':[{'port':80,'protocol':'TCP'}]}}", NULL, "/spec/ports");
    expect_drift("{'spec':{'args':['a','b']}}", "{'spec':{'args':['b','a']}}", NULL,
                 "/spec/args/0 /spec/args/1");
    /* lists of named maps match by name, others may add elements */
    const char *dep = "{'spec':{'template':{'spec':{'containers':[{'name':'app','image':'a:1'},"
                      "{'name':'side','image':'s:1'}]}}}}";
    expect_drift(dep,
                 "{'spec':{'template':{'spec':{'containers':[{'name':'injected','image':'i'},"
                 "{'name':'side','image':'s:1','imagePullPolicy':'IfNotPresent'},{'name':'app',"
                 "'image':'a:1','terminationMessagePath':'/dev/termination-log'}]}}}}",
                 NULL, "");
    expect_drift(dep,
                 "{'spec':{'template':{'spec':{'containers':[{'name':'app','image':'a:2'}]}}}}",
                 NULL, "/spec/template/spec/containers/0/image /spec/template/spec/containers/1");
}

static void test_drift__server_normalisation_is_no_drift(void **state)
{
    (void)state;
    /* quantities in resource maps */
    expect_drift("{'spec':{'resources':{'limits':{'cpu':'1000m','memory':'1Gi'},'requests':"
                 "{'cpu':0.5,'memory':'512Mi','ephemeral-storage':'1e3'}}}}",
                 "{'spec':{'resources':{'limits':{'cpu':'1','memory':'1073741824'},'requests':"
                 "{'cpu':'500m','memory':'536870912','ephemeral-storage':'1k'}}}}",
                 NULL, "");
    expect_drift("{'spec':{'resources':{'limits':{'cpu':'1'}}}}",
                 "{'spec':{'resources':{'limits':{'cpu':'2'}}}}", NULL,
                 "/spec/resources/limits/cpu");
    /* elsewhere a quantity-looking string is just a string */
    expect_drift("{'data':{'size':'1k'}}", "{'data':{'size':'1000'}}", NULL, "/data/size");
    /* int-or-string and integral doubles */
    expect_drift("{'spec':{'port':'8080','n':1,'f':2.0}}", "{'spec':{'port':8080,'n':1.0,'f':2}}",
                 NULL, "");
    expect_drift("{'spec':{'port':'http'}}", "{'spec':{'port':8080}}", NULL, "/spec/port");
    expect_drift("{'spec':{'b':true}}", "{'spec':{'b':'true'}}", NULL, "/spec/b");
    /* zero values the API server drops */
    expect_drift("{'spec':{'hostNetwork':false,'n':0,'s':'','m':{},'l':[]}}", "{'spec':{}}", NULL,
                 "");
    expect_drift("{'spec':{'hostNetwork':true,'n':1}}", "{'spec':{}}", NULL,
                 "/spec/hostNetwork /spec/n");
}

static void test_drift__ignored_fields_left_out(void **state)
{
    (void)state;
    const char *d =
        "{'metadata':{'annotations':{'a/b':'1','x~y':'2','c':'3'}},'spec':{"
        "'replicas':1,'template':{'spec':{'containers':[{'name':'app','image':'a'}]}}}}";
    const char *l =
        "{'metadata':{'annotations':{'a/b':'9','x~y':'9','c':'9'}},'spec':{"
        "'replicas':5,'template':{'spec':{'containers':[{'name':'app','image':'b'}]}}}}";
    expect_drift(d, l, NULL,
                 "/metadata/annotations/a~1b /metadata/annotations/x~0y /metadata/annotations/c "
                 "/spec/replicas /spec/template/spec/containers/0/image");
    expect_drift(d, l,
                 "['/spec/replicas','/metadata/annotations/a~1b','/metadata/annotations/x~0y',"
                 "'/spec/template/spec/containers/0']",
                 "/metadata/annotations/c");
    /* a pointer covers what is under it; one that names nothing changes nothing */
    expect_drift(d, l, "['/spec','/metadata/annotations/nope']",
                 "/metadata/annotations/a~1b /metadata/annotations/x~0y /metadata/annotations/c");
}

static void test_drift__fields_taken_by_another_manager(void **state)
{
    (void)state;
    const char *d = "{'data':{'a':'1','b':'2'},'spec':{'l':[{'k':1}]}}";
    const char *l = "{'data':{'a':'1','b':'2'},'spec':{'l':[{'k':1}]}}";
    /* b is not in our fields: someone else applied or edited it (to the same value) */
    char *got = drift_of(d, l, NULL, "{'f:data':{'f:a':{}},'f:spec':{'f:l':{}}}");
    assert_string_equal(got, "/data/b");
    free(got);
    got = drift_of(d, l, NULL, "{'f:data':{'f:a':{},'f:b':{}},'f:spec':{'f:l':{}}}");
    assert_string_equal(got, "");
    free(got);
    /* an atomic map is owned as a whole: its fields list no children */
    got = drift_of("{'spec':{'selector':{'matchLabels':{'app':'web'}}}}",
                   "{'spec':{'selector':{'matchLabels':{'app':'web'}}}}", NULL,
                   "{'f:spec':{'f:selector':{}}}");
    assert_string_equal(got, "");
    free(got);
    got = drift_of("{'spec':{'selector':{'matchLabels':{'app':'web'}}}}",
                   "{'spec':{'selector':{'matchLabels':{'app':'web'}}}}", NULL,
                   "{'f:spec':{'f:replicas':{}}}");
    assert_string_equal(got, "/spec/selector/matchLabels/app");
    free(got);
    /* without managed fields, values alone count */
    got = drift_of(d, l, NULL, NULL);
    assert_string_equal(got, "");
    free(got);
}

static void test_drift__bounded(void **state)
{
    (void)state;
    /* nesting past the bound: nothing is known */
    co_buf b = CO_BUF_INIT(1 << 20);
    for (int i = 0; i < CO_DRIFT_MAX_DEPTH + 2; i++) {
        assert_co_pass(co_buf_puts(&b, "{\"a\":"));
    }
    assert_co_pass(co_buf_puts(&b, "1"));
    for (int i = 0; i < CO_DRIFT_MAX_DEPTH + 2; i++) {
        assert_co_pass(co_buf_putc(&b, '}'));
    }
    struct json_object *deep = NULL;
    assert_co_pass(co_json_parse(&deep, co_buf_cstr(&b), b.len));
    co_drift_result r;
    struct json_object *empty = J("{}");
    struct json_object *same = co_json_copy(deep);
    assert_co_fail_with(CO_ETOOBIG, co_drift_compare(&r, deep, same, NULL, NULL));
    co_drift_result_dispose(&r);
    json_object_put(same);
    /* just within it, the comparison works */
    json_object_put(deep);
    co_buf_dispose(&b);
    for (int i = 0; i < CO_DRIFT_MAX_DEPTH - 1; i++) {
        assert_co_pass(co_buf_puts(&b, "{\"a\":"));
    }
    assert_co_pass(co_buf_puts(&b, "1"));
    for (int i = 0; i < CO_DRIFT_MAX_DEPTH - 1; i++) {
        assert_co_pass(co_buf_putc(&b, '}'));
    }
    assert_co_pass(co_json_parse(&deep, co_buf_cstr(&b), b.len));
    same = co_json_copy(deep);
    struct json_object *leaf = same;
    while (json_object_is_type(co_json_get(leaf, "a", NULL), json_type_object)) {
        leaf = co_json_get(leaf, "a", NULL);
    }
    json_object_object_add(leaf, "a", json_object_new_int(2));
    assert_co_pass(co_drift_compare(&r, deep, same, NULL, NULL));
    assert_int_equal(r.total, 1);
    json_object_put(same);
    co_drift_result_dispose(&r);
    json_object_put(deep);
    co_buf_dispose(&b);

    /* too many values */
    struct json_object *big = json_object_new_object();
    struct json_object *arr = json_object_new_array();
    for (int i = 0; i <= CO_DRIFT_MAX_NODES; i++) {
        json_object_array_add(arr, json_object_new_int(i));
    }
    json_object_object_add(big, "data", arr);
    struct json_object *live = co_json_copy(big);
    assert_co_fail_with(CO_ETOOBIG, co_drift_compare(&r, big, live, NULL, NULL));
    co_drift_result_dispose(&r);
    json_object_put(big);
    json_object_put(live);

    /* at most CO_DRIFT_MAX_FIELDS named, every one counted */
    struct json_object *many = json_object_new_object();
    struct json_object *data = json_object_new_object();
    for (int i = 0; i < CO_DRIFT_MAX_FIELDS + 5; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k%02d", i);
        json_object_object_add(data, k, json_object_new_string("v"));
    }
    json_object_object_add(many, "data", data);
    struct json_object *no_data = J("{'data':{}}");
    assert_co_pass(co_drift_compare(&r, many, no_data, NULL, NULL));
    json_object_put(no_data);
    assert_int_equal(r.nfields, CO_DRIFT_MAX_FIELDS);
    assert_int_equal(r.total, CO_DRIFT_MAX_FIELDS + 5);
    assert_string_equal(r.fields[0], "/data/k00");
    co_drift_result_dispose(&r);
    json_object_put(many);
    json_object_put(empty);
}

static void test_drift__ignored_fields_keep_live_values(void **state)
{
    (void)state;
    co_drift_ignore ig = {NULL, 0};
    assert_co_pass(co_drift_ignore_parse(
        &ig, "[\"/spec/replicas\", \"/spec/strategy/type\", \"/metadata/annotations/a~1b\", "
             "\"/spec/list/1\", \"/spec/list/7\", \"/spec/gone\"]"));
    struct json_object *applied =
        J("{'metadata':{'name':'d'},'spec':{'replicas':1,'list':['a','b'],'gone':'x'}}");
    struct json_object *live =
        J("{'metadata':{'name':'d','annotations':{'a/b':'kept'}},'spec':{'replicas':5,"
          "'strategy':{'type':'Recreate'},'list':['a','z','q']}}");
    co_drift_carry_ignored(applied, live, &ig);
    struct json_object *want =
        J("{'metadata':{'name':'d','annotations':{'a/b':'kept'}},'spec':{'replicas':5,"
          "'list':['a','z'],'strategy':{'type':'Recreate'}}}");
    if (!co_json_equal(applied, want)) {
        fail_msg("got %s", json_object_to_json_string(applied));
    }
    json_object_put(want);
    json_object_put(applied);
    json_object_put(live);
    co_drift_ignore_dispose(&ig);
}

static void test_drift__pointer_format(void **state)
{
    (void)state;
    const char *t[] = {"metadata", "annotations", "a/b~c"};
    char *p = co_drift_pointer_format(t, 3);
    assert_string_equal(p, "/metadata/annotations/a~1b~0c");
    free(p);
    p = co_drift_pointer_format(t, 0);
    assert_string_equal(p, "");
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drift__policy_parse),
        cmocka_unit_test(test_drift__ignore_fields_parse),
        cmocka_unit_test(test_drift__maps_compare_as_subsets),
        cmocka_unit_test(test_drift__lists_element_wise),
        cmocka_unit_test(test_drift__server_normalisation_is_no_drift),
        cmocka_unit_test(test_drift__ignored_fields_left_out),
        cmocka_unit_test(test_drift__fields_taken_by_another_manager),
        cmocka_unit_test(test_drift__bounded),
        cmocka_unit_test(test_drift__ignored_fields_keep_live_values),
        cmocka_unit_test(test_drift__pointer_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
