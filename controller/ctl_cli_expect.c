/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `component-controller validate --expect RESULTS`: policy tests (docs/policy-audit.md,
 * "Testing policies"). The expectation file lists, per example Component, what admission must
 * answer (allow, audit, warn or deny) and optionally the rule and the policy that decide it;
 * validate judges the Components as it always does and this file compares, prints a table of
 * the cases and counts the mismatches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/api/policy.h"
#include "co/json/json.h"
#include "co/util/error.h"
#include "co/util/strmap.h"
#include "controller/ctl_cli_int.h"

/* Bounds of an expectation file, whatever it holds. */
#define EXPECT_MAX_CASES 10000
#define EXPECT_MAX_FIELD 512

typedef struct expect_case {
    char *component;         /* "namespace/name" */
    co_policy_action result; /* CO_POLICY_NONE: allow */
    int rule;                /* a co_policy_rule; -1: any */
    char *policy;            /* NULL: any */
} expect_case;

/* What admission answered for one Component: its violations (strings owned). */
typedef struct outcome {
    co_policy_action verdict;
    co_policy_violation *items;
    size_t len;
} outcome;

struct expect_set {
    const char *path;
    expect_case *cases;
    size_t n;
    co_strmap outcomes; /* "namespace/name" -> outcome * */
};

static const char *const result_names[] = {"allow", "audit", "warn", "deny"};

static int fail_field(FILE *err, const char *path, size_t i, const char *field, const char *what)
{
    fprintf(err, "component-controller validate: %s: results[%zu].%s: %s\n", path, i, field, what);
    return 1;
}

/* Parses case @p i of @p path; prints each problem and returns how many there were. */
static int parse_case(expect_case *c,
                      const struct json_object *item,
                      const char *path,
                      size_t i,
                      const char *default_ns,
                      FILE *err)
{
    memset(c, 0, sizeof(*c));
    c->rule = -1;
    if (!json_object_is_type(item, json_type_object)) {
        fprintf(err, "component-controller validate: %s: results[%zu]: expected a mapping\n", path,
                i);
        return 1;
    }
    int bad = 0;
    json_object_object_foreach ((struct json_object *)item, key, val) {
        bool known = strcmp(key, "component") == 0 || strcmp(key, "result") == 0 ||
                     strcmp(key, "rule") == 0 || strcmp(key, "policy") == 0;
        if (!known) {
            bad += fail_field(err, path, i, key,
                              "unknown field (expected component, result, rule, policy)");
            continue;
        }
        if (!json_object_is_type(val, json_type_string) || json_object_get_string_len(val) == 0 ||
            json_object_get_string_len(val) > EXPECT_MAX_FIELD) {
            bad +=
                fail_field(err, path, i, key, "expected a non-empty string of at most 512 bytes");
            continue;
        }
        const char *s = json_object_get_string(val);
        if (strcmp(key, "component") == 0) {
            const char *slash = strchr(s, '/');
            if (slash && (slash == s || slash[1] == '\0' || strchr(slash + 1, '/'))) {
                bad += fail_field(err, path, i, key, "expected NAME or NAMESPACE/NAME");
                continue;
            }
            c->component = slash ? co_xstrdup(s) : co_xasprintf("%s/%s", default_ns, s);
        } else if (strcmp(key, "result") == 0) {
            size_t r = 0;
            while (r < CO_ARRAY_SIZE(result_names) && strcmp(s, result_names[r]) != 0) {
                r++;
            }
            if (r == CO_ARRAY_SIZE(result_names)) {
                char *msg = co_xasprintf(
                    "unsupported value \"%s\" (expected allow, audit, warn or deny)", s);
                bad += fail_field(err, path, i, key, msg);
                free(msg);
                continue;
            }
            /* result_names is in the order of co_policy_action */
            c->result = (co_policy_action)r;
        } else if (strcmp(key, "rule") == 0) {
            for (int r = 0; r < CO_POLICY_RULE_COUNT && c->rule < 0; r++) {
                if (strcmp(s, co_policy_rule_name((co_policy_rule)r)) == 0) {
                    c->rule = r;
                }
            }
            if (c->rule < 0) {
                char *msg = co_xasprintf("unknown rule \"%s\"", s);
                bad += fail_field(err, path, i, key, msg);
                free(msg);
            }
        } else {
            c->policy = co_xstrdup(s);
        }
    }
    if (!co_json_get(item, "component", NULL)) {
        bad += fail_field(err, path, i, "component", "required");
    }
    if (!co_json_get(item, "result", NULL)) {
        bad += fail_field(err, path, i, "result", "required");
    } else if (c->result == CO_POLICY_NONE && (c->rule >= 0 || c->policy) && bad == 0) {
        bad += fail_field(err, path, i, c->rule >= 0 ? "rule" : "policy",
                          "only for a result of audit, warn or deny");
    }
    return bad;
}

static void free_cases(expect_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(cases[i].component);
        free(cases[i].policy);
    }
    free(cases);
}

int ctl_cli__expect_load(expect_set **out, const char *path, const char *default_ns, FILE *err)
{
    struct json_object *doc = NULL;
    if (ctl_cli__read_document(&doc, path) < 0) {
        fprintf(err, "component-controller validate: --expect: %s\n", co_error_last());
        return CO_EINVALID;
    }
    struct json_object *list = NULL;
    int bad = 0;
    if (!json_object_is_type(doc, json_type_object)) {
        fprintf(err, "component-controller validate: %s: expected a mapping with \"results\"\n",
                path);
        bad++;
    } else {
        json_object_object_foreach (doc, key, val) {
            (void)val;
            if (strcmp(key, "results") != 0) {
                fprintf(err,
                        "component-controller validate: %s: %s: unknown field (expected "
                        "results)\n",
                        path, key);
                bad++;
            }
        }
        list = co_json_get(doc, "results", NULL);
        if (!list || !json_object_is_type(list, json_type_array) ||
            json_object_array_length(list) == 0) {
            fprintf(err, "component-controller validate: %s: results: expected a non-empty list\n",
                    path);
            bad++;
            list = NULL;
        } else if (json_object_array_length(list) > EXPECT_MAX_CASES) {
            fprintf(err, "component-controller validate: %s: results: more than %d cases\n", path,
                    EXPECT_MAX_CASES);
            bad++;
            list = NULL;
        }
    }
    size_t n = list ? json_object_array_length(list) : 0;
    expect_case *cases = co_xcalloc(n ? n : 1, sizeof(*cases));
    for (size_t i = 0; i < n; i++) {
        bad += parse_case(&cases[i], json_object_array_get_idx(list, i), path, i, default_ns, err);
    }
    json_object_put(doc);
    if (bad) {
        free_cases(cases, n);
        return CO_EINVALID;
    }
    expect_set *s = co_xcalloc(1, sizeof(*s));
    s->path = path;
    s->cases = cases;
    s->n = n;
    s->outcomes = (co_strmap)CO_STRMAP_INIT;
    *out = s;
    return 0;
}

static void outcome_free(outcome *o)
{
    if (!o) {
        return;
    }
    for (size_t i = 0; i < o->len; i++) {
        free(o->items[i].policy);
        free(o->items[i].message);
    }
    free(o->items);
    free(o);
}

void ctl_cli__expect_record(expect_set *s, const char *key, const co_policy_result *res)
{
    outcome *o = co_xcalloc(1, sizeof(*o));
    o->verdict = res->verdict;
    o->items = co_xcalloc(res->len ? res->len : 1, sizeof(*o->items));
    for (size_t i = 0; i < res->len; i++) {
        if (res->items[i].action == CO_POLICY_NONE) {
            continue;
        }
        co_policy_violation *v = &o->items[o->len++];
        v->rule = res->items[i].rule;
        v->action = res->items[i].action;
        v->policy = res->items[i].policy ? co_xstrdup(res->items[i].policy) : NULL;
        v->message = co_xstrdup(res->items[i].message ? res->items[i].message : "");
    }
    /* a Component given twice: the last one counts, as the API server keeps the last write */
    outcome_free(co_strmap_put(&s->outcomes, key, o));
}

/* Whether @p o is what @p c expects. */
static bool matches(const expect_case *c, const outcome *o)
{
    if (o->verdict != c->result) {
        return false;
    }
    if (c->rule < 0 && !c->policy) {
        return true;
    }
    for (size_t i = 0; i < o->len; i++) {
        const co_policy_violation *v = &o->items[i];
        if (v->action == c->result && (c->rule < 0 || (int)v->rule == c->rule) &&
            (!c->policy || (v->policy && strcmp(v->policy, c->policy) == 0))) {
            return true;
        }
    }
    return false;
}

/* "deny sourceKinds (restrict-sources)": the expectation as written. */
static char *expected_text(const expect_case *c)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    int rc = co_buf_puts(&b, result_names[c->result]);
    if (rc == 0 && c->rule >= 0) {
        rc = co_buf_printf(&b, " %s", co_policy_rule_name((co_policy_rule)c->rule));
    }
    if (rc == 0 && c->policy) {
        rc = co_buf_printf(&b, " (%s)", c->policy);
    }
    (void)rc; /* uncapped */
    return co_buf_take(&b, NULL);
}

/* "warn intervals,policies": the verdict and the rules that gave it. */
static char *got_text(const outcome *o)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    int rc = co_buf_puts(&b, o ? result_names[o->verdict] : "(no such Component)");
    bool first = true;
    for (size_t i = 0; o && rc == 0 && i < o->len; i++) {
        if (o->items[i].action != o->verdict) {
            continue;
        }
        rc = co_buf_printf(&b, "%s%s", first ? " " : ",", co_policy_rule_name(o->items[i].rule));
        first = false;
    }
    (void)rc;
    return co_buf_take(&b, NULL);
}

int ctl_cli__expect_report(expect_set *s, FILE *out, FILE *err)
{
    size_t missing = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!co_strmap_get(&s->outcomes, s->cases[i].component)) {
            fprintf(err,
                    "component-controller validate: %s: results[%zu].component: Component \"%s\" "
                    "is in none of the files\n",
                    s->path, i, s->cases[i].component);
            missing++;
        }
    }
    if (missing) {
        return CO_EINVALID;
    }
    char **exp = co_xcalloc(s->n, sizeof(char *));
    char **got = co_xcalloc(s->n, sizeof(char *));
    bool *ok = co_xcalloc(s->n, sizeof(bool));
    int wc = (int)strlen("COMPONENT"), we = (int)strlen("EXPECTED");
    int failed = 0;
    for (size_t i = 0; i < s->n; i++) {
        const outcome *o = co_strmap_get(&s->outcomes, s->cases[i].component);
        ok[i] = matches(&s->cases[i], o);
        failed += !ok[i];
        exp[i] = expected_text(&s->cases[i]);
        got[i] = got_text(o);
        int l = (int)strlen(s->cases[i].component);
        wc = l > wc ? l : wc;
        l = (int)strlen(exp[i]);
        we = l > we ? l : we;
    }
    fprintf(out, "%-4s  %-*s  %-*s  %s\n", "PASS", wc, "COMPONENT", we, "EXPECTED", "GOT");
    for (size_t i = 0; i < s->n; i++) {
        fprintf(out, "%-4s  %-*s  %-*s  %s\n", ok[i] ? "ok" : "FAIL", wc, s->cases[i].component, we,
                exp[i], got[i]);
        free(exp[i]);
        free(got[i]);
    }
    fprintf(out, "%zu cases: %zu passed, %d failed\n", s->n, s->n - (size_t)failed, failed);
    free(exp);
    free(got);
    free(ok);
    return failed;
}

void ctl_cli__expect_free(expect_set *s)
{
    if (!s) {
        return;
    }
    size_t it = 0;
    const char *k = NULL;
    void *v = NULL;
    while (co_strmap_next(&s->outcomes, &it, &k, &v)) {
        outcome_free(v);
    }
    co_strmap_dispose(&s->outcomes);
    free_cases(s->cases, s->n);
    free(s);
}
