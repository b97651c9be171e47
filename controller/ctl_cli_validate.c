/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `component-controller validate`: checks Component, ComponentPolicy, Blueprint and
 * BlueprintVersion manifests with the admission webhooks' rules, dependency cycles over the given
 * set included.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "co/json/json.h"
#include "co/api/blueprint.h"
#include "co/api/policy.h"
#include "controller/ctl_cli_int.h"

/* Who the offline admission is made for (ComponentPolicy exemptions and selectors). */
typedef struct validate_ctx {
    const char *default_ns;
    co_policy_request req;   /* ns filled per Component */
    co_policy_set *policies; /* from --policy */
    co_depgraph *graph;      /* every Component of the given set */
    unsigned warnings;
    unsigned errors;
    expect_set *expect; /* --expect: results are recorded, not reported */
} validate_ctx;

static void
describe(char *buf, size_t size, const char *kind, const struct json_object *obj, const char *ns)
{
    const char *name = co_json_meta_name(obj);
    if (ns) {
        (void)snprintf(buf, size, "%s \"%s/%s\"", kind, ns, name ? name : "");
    } else {
        (void)snprintf(buf, size, "%s \"%s\"", kind, name ? name : "");
    }
}

static int report_violations(validate_ctx *vc,
                             FILE *err,
                             const manifest *m,
                             const char *what,
                             const co_policy_result *res)
{
    for (size_t i = 0; i < res->len; i++) {
        const co_policy_violation *pv = &res->items[i];
        if (pv->action == CO_POLICY_NONE) {
            continue;
        }
        co_buf msg = CO_BUF_INIT(SIZE_MAX);
        int rc = co_policy_violation_format(&msg, pv);
        if (rc < 0) {
            return rc;
        }
        const char *level = pv->action == CO_POLICY_DENY   ? "error"
                            : pv->action == CO_POLICY_WARN ? "warning"
                                                           : "audit";
        vc->errors += pv->action == CO_POLICY_DENY;
        vc->warnings += pv->action == CO_POLICY_WARN;
        ctl_cli__print_place(err, m);
        fprintf(err, "%s: %s: %s\n", level, what, co_buf_cstr(&msg));
        co_buf_dispose(&msg);
    }
    return 0;
}

/*
 * Admits one Component as the API server would with both webhooks: the mutating webhook's
 * defaults (built-in and ComponentPolicy), then the validating webhook's field validation,
 * policy rules and the dependency rules against every other Component of the set.
 */
static int validate_component(validate_ctx *vc, FILE *err, const manifest *m)
{
    const char *ns = co_json_meta_namespace(m->obj);
    if (!ns || !ns[0]) {
        ns = vc->default_ns;
    }
    char what[512];
    describe(what, sizeof(what), "Component", m->obj, ns);
    vc->req.ns = ns;

    co_policy_defaults pd;
    int rc = co_policy_defaults_merge(&pd, vc->policies, &vc->req);
    if (rc < 0) {
        return rc;
    }
    for (size_t i = 0; i < pd.nwarnings; i++) {
        ctl_cli__print_place(err, m);
        fprintf(err, "warning: %s: %s\n", what, pd.warnings[i]);
        vc->warnings++;
    }
    struct json_object *obj = NULL;
    if (co_component_default(&obj, m->obj, ns, &pd.defaults) < 0) {
        /* Not something the mutating webhook can default: validation explains. */
        co_error_clear();
        obj = json_object_get(m->obj);
    }
    co_policy_defaults_dispose(&pd);

    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    if (co_component_validate(&errs, obj, ns, 0) < 0) {
        vc->errors++;
        rc = ctl_cli__print_field_errors(err, m, what, &errs);
        co_field_errors_dispose(&errs);
        json_object_put(obj);
        return rc;
    }
    co_field_errors_dispose(&errs);

    /* The graph holds this Component too; judge its edges as new ones, as at admission. */
    char *key = NULL;
    co_depgraph_list deps = {NULL, 0};
    if (co_depgraph_object_deps(&deps, &key, obj, ns) == 0) {
        co_depgraph_remove(vc->graph, key);
    } else {
        co_error_clear();
    }
    co_component *comp = NULL;
    co_policy_result res = {NULL, 0, CO_POLICY_NONE};
    rc = co_component_parse(&comp, obj);
    if (rc == 0) {
        vc->req.graph = vc->graph;
        rc = co_policy_evaluate(&res, vc->policies, comp, &vc->req);
    }
    if (rc == 0 && vc->expect) {
        char *k = co_xasprintf("%s/%s", ns, co_json_meta_name(obj));
        ctl_cli__expect_record(vc->expect, k, &res);
        free(k);
    } else if (rc == 0) {
        rc = report_violations(vc, err, m, what, &res);
    }
    if (key && co_depgraph_set(vc->graph, key, (const char *const *)deps.items, deps.len) < 0) {
        rc = co_error_last_code();
    }
    co_policy_result_dispose(&res);
    co_component_free(comp);
    co_depgraph_list_dispose(&deps);
    free(key);
    json_object_put(obj);
    return rc;
}

static int validate_policy(validate_ctx *vc, FILE *err, const manifest *m)
{
    char what[512];
    describe(what, sizeof(what), "ComponentPolicy", m->obj, NULL);
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    int rc = 0;
    if (co_policy_validate(&errs, m->obj, 0) < 0) {
        vc->errors++;
        rc = ctl_cli__print_field_errors(err, m, what, &errs);
    }
    co_field_errors_dispose(&errs);
    return rc;
}

/* A Blueprint or BlueprintVersion, as /validate/v1alpha1/blueprints(versions) judges it at CREATE.
 */
static int validate_blueprint(validate_ctx *vc, FILE *err, const manifest *m)
{
    const char *kind = co_json_str(m->obj, "kind", NULL);
    int version = kind && strcmp(kind, CO_BLUEPRINT_VERSION_KIND) == 0;
    char what[512];
    describe(what, sizeof(what), version ? CO_BLUEPRINT_VERSION_KIND : CO_BLUEPRINT_KIND, m->obj,
             co_json_meta_namespace(m->obj));
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    int rc = 0;
    int bad = version ? co_blueprint_version_validate(&errs, m->obj, 0)
                      : co_blueprint_validate(&errs, m->obj, 0);
    if (bad < 0) {
        vc->errors++;
        rc = ctl_cli__print_field_errors(err, m, what, &errs);
    }
    co_field_errors_dispose(&errs);
    return rc;
}

/* Adds a name=value (or name) label to the object @p labels. */
static int add_label(struct json_object *labels, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        return co_error_set(CO_EINVALID, "--namespace-label %s: expected KEY=VALUE", kv);
    }
    char *key = strndup(kv, (size_t)(eq - kv));
    json_object_object_add(labels, key, json_object_new_string(eq + 1));
    free(key);
    return 0;
}

int ctl_cli__run_validate(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = ctl_cli__find("validate");
    co_flag_list policy_files = {NULL, 0};
    co_flag_list groups = {NULL, 0};
    co_flag_list labels = {NULL, 0};
    const char *ns = "default";
    const char *user = "";
    const char *expect_file = NULL;
    int help = 0;
    const co_flag flags[] = {
        {"policy", CO_FLAG_LIST, &policy_files, "FILE",
         "ComponentPolicy manifests to validate and apply to the Components (repeatable)"},
        {"namespace", CO_FLAG_STRING, &ns, "NS",
         "namespace of Components without metadata.namespace (default \"default\")"},
        {"namespace-label", CO_FLAG_LIST, &labels, "KEY=VALUE",
         "a label of the Components' namespaces, for policy namespaceSelectors (repeatable)"},
        {"user", CO_FLAG_STRING, &user, "NAME",
         "the requesting user, for policy exemptions (default: anonymous)"},
        {"group", CO_FLAG_LIST, &groups, "NAME", "a group of the requesting user (repeatable)"},
        {"expect", CO_FLAG_STRING, &expect_file, "RESULTS",
         "test the policies: compare each Component's admission result with RESULTS (a list of "
         "{component, result: allow|audit|warn|deny, rule, policy}), print a table of the cases "
         "and exit 1 when one fails, 2 on bad input (docs/policy-audit.md)"},
        {"help", CO_FLAG_BOOL, &help, NULL, "print this help and exit"},
    };
    int next = 0;
    int status =
        ctl_cli__parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
    if (status < 0 && next >= argc) {
        fprintf(err, "component-controller validate: expected at least one manifest file\n");
        status = EXIT_USAGE;
    }
    for (int i = next; status < 0 && i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(err, "component-controller validate: flags must come before the files: %s\n",
                    argv[i]);
            status = EXIT_USAGE;
        }
    }
    struct json_object *label_obj = json_object_new_object();
    for (size_t i = 0; status < 0 && i < labels.len; i++) {
        if (add_label(label_obj, labels.items[i]) < 0) {
            fprintf(err, "component-controller validate: %s\n", co_error_last());
            status = EXIT_USAGE;
        }
    }
    if (status >= 0) {
        json_object_put(label_obj);
        co_flag_list_dispose(&policy_files);
        co_flag_list_dispose(&groups);
        co_flag_list_dispose(&labels);
        return status;
    }

    validate_ctx vc;
    memset(&vc, 0, sizeof(vc));
    if (expect_file && ctl_cli__expect_load(&vc.expect, expect_file, ns, err) < 0) {
        json_object_put(label_obj);
        co_flag_list_dispose(&policy_files);
        co_flag_list_dispose(&groups);
        co_flag_list_dispose(&labels);
        return EXIT_USAGE;
    }
    vc.default_ns = ns;
    vc.req.username = user;
    vc.req.groups = groups.items;
    vc.req.ngroups = groups.len;
    vc.req.namespace_labels = label_obj;
    vc.policies = co_policy_set_new();
    vc.graph = co_depgraph_new();

    manifest_list all = {NULL, 0, 0};
    for (size_t i = 0; i < policy_files.len; i++) {
        if (ctl_cli__read_manifests(&all, policy_files.items[i], true) < 0) {
            fprintf(err, "%s\n", co_error_last());
            vc.errors++;
        }
    }
    for (int i = next; i < argc; i++) {
        if (ctl_cli__read_manifests(&all, argv[i], false) < 0) {
            fprintf(err, "%s\n", co_error_last());
            vc.errors++;
        }
    }

    /* Policies first (they apply to every Component), then the graph of all Components. */
    int rc = 0;
    size_t ncomponents = 0;
    for (size_t i = 0; rc == 0 && i < all.len; i++) {
        manifest *m = &all.items[i];
        object_class cls = ctl_cli__classify(m->obj);
        if (cls == OBJ_POLICY) {
            unsigned before = vc.errors;
            rc = validate_policy(&vc, err, m);
            if (rc == 0 && vc.errors == before && m->from_policy_flag &&
                co_policy_set_put(vc.policies, m->obj) < 0) {
                ctl_cli__print_place(err, m);
                fprintf(err, "error: %s\n", co_error_last());
                vc.errors++;
            }
        } else if (cls == OBJ_BLUEPRINT) {
            rc = validate_blueprint(&vc, err, m);
        } else if (cls == OBJ_COMPONENT) {
            const char *cns = co_json_meta_namespace(m->obj);
            if (co_depgraph_set_object(vc.graph, m->obj, cns && cns[0] ? cns : ns) < 0) {
                co_error_clear(); /* no name: validation reports it */
            }
            ncomponents++;
        } else {
            ctl_cli__print_place(err, m);
            const char *kind = co_json_str(m->obj, "kind", NULL);
            const char *api = co_json_str(m->obj, "apiVersion", NULL);
            fprintf(err,
                    "error: not a Component, ComponentPolicy, Blueprint or BlueprintVersion "
                    "(apiVersion %s, kind %s)\n",
                    api ? api : "missing", kind ? kind : "missing");
            vc.errors++;
        }
    }
    for (size_t i = 0; rc == 0 && i < all.len; i++) {
        if (ctl_cli__classify(all.items[i].obj) == OBJ_COMPONENT) {
            rc = validate_component(&vc, err, &all.items[i]);
        }
    }
    if (rc < 0) {
        fprintf(err, "component-controller validate: %s\n", co_error_last());
        vc.errors++;
    }
    status = vc.errors ? EXIT_BAD_INPUT : 0;
    if (vc.expect) {
        /* a policy test: broken input is no result to compare */
        int failed = vc.errors ? CO_EINVALID : ctl_cli__expect_report(vc.expect, out, err);
        status = failed < 0 ? EXIT_USAGE : failed > 0 ? EXIT_BAD_INPUT : 0;
        ctl_cli__expect_free(vc.expect);
    } else if (vc.errors == 0) {
        fprintf(out, "%zu objects valid (%zu Components), %u warnings\n", all.len, ncomponents,
                vc.warnings);
    }
    ctl_cli__manifests_dispose(&all);
    co_policy_set_free(vc.policies);
    co_depgraph_free(vc.graph);
    json_object_put(label_obj);
    co_flag_list_dispose(&policy_files);
    co_flag_list_dispose(&groups);
    co_flag_list_dispose(&labels);
    return status;
}
