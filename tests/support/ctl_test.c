/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Controller test helpers (see ctl_test.h).
 */
#include "tests/support/ctl_test.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/json/yaml.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define OWNER_LABEL "component-operator.cs.sap.com/owner-id"

char ctl_test_source_dir[4096];
char ctl_test_source_digest[128] = "sha256:0000";
char ctl_test_source_revision[128] = "main@sha1:0000";
int ctl_test_source_unready;
static atomic_ulong apply_writes;

static const char *const MINIMAL_CRD =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"components.core.cs.sap.com\"},\"spec\":{\"group\":"
    "\"core.cs.sap.com\",\"scope\":\"Namespaced\",\"names\":{\"plural\":\"components\","
    "\"singular\":\"component\",\"kind\":\"Component\",\"listKind\":\"ComponentList\","
    "\"shortNames\":[\"comp\"]},\"versions\":[{\"name\":\"v1alpha1\",\"served\":true,"
    "\"storage\":true,\"subresources\":{\"status\":{}},\"schema\":{\"openAPIV3Schema\":"
    "{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}]}}";

void ctl_test_install_crd(co_kube_client *c)
{
    struct json_object *crd = NULL;
    char path[4096];
    const char *root = getenv("CO_SOURCE_ROOT"); // NOLINT(concurrency-mt-unsafe)
    snprintf(path, sizeof(path), "%s/crds/core.cs.sap.com_components.yaml",
             root ? root : CO_SOURCE_ROOT);
    size_t len = 0;
    char *text = co_test_read_file(path, &len);
    if (text) {
        assert_co_pass(co_yaml_parse(&crd, text, len, 0));
        free(text);
    } else {
        assert_co_pass(co_json_parse(&crd, MINIMAL_CRD, strlen(MINIMAL_CRD)));
    }
    int rc = co_kube_create(NULL, c, crd, NULL);
    if (rc != 0 && rc != CO_EEXISTS) {
        fail_msg("creating the Component CRD: %s", co_error_last());
    }
    json_object_put(crd);
    for (int i = 0; i < 600; i++) {
        co_kube_mapping m;
        if (co_kube_client_mapping(&m, c, "core.cs.sap.com/v1alpha1", "Component") == 0) {
            co_kube_mapping_dispose(&m);
            /* the resource may be discoverable a moment before it accepts writes */
            usleep(500 * 1000);
            return;
        }
        usleep(100 * 1000);
    }
    fail_msg("the Component CRD was not served in time");
}

/* ---- Flux source CRDs -------------------------------------------------------------------- */

static const struct {
    const char *plural;
    const char *kind;
} flux_kinds[] = {{"gitrepositories", "GitRepository"},
                  {"ocirepositories", "OCIRepository"},
                  {"buckets", "Bucket"},
                  {"helmcharts", "HelmChart"}};

char *ctl_test_flux_crds_dir(void)
{
    const char *dir = getenv("CO_FLUX_CRDS_DIR"); // NOLINT(concurrency-mt-unsafe): set-up
    if (dir && *dir) {
        return co_xstrdup(dir);
    }
    return co_test_fixture_path("flux-crds");
}

struct json_object *ctl_test_flux_crd(const char *plural)
{
    char *dir = ctl_test_flux_crds_dir();
    char *path = co_xasprintf("%s/source.toolkit.fluxcd.io_%s.yaml", dir, plural);
    size_t len = 0;
    char *text = co_test_read_file(path, &len);
    if (!text) {
        fail_msg("cannot read the Flux CRD %s", path);
    }
    struct json_object *crd = NULL;
    if (co_yaml_parse(&crd, text, len, 0) < 0) {
        fail_msg("%s: %s", path, co_error_last());
    }
    free(text);
    free(path);
    free(dir);
    return crd;
}

void ctl_test_install_flux_crds(co_kube_client *c)
{
    for (size_t i = 0; i < CO_ARRAY_SIZE(flux_kinds); i++) {
        struct json_object *crd = ctl_test_flux_crd(flux_kinds[i].plural);
        /* A plain create: kube-apiserver 1.20 drops the schema fields it does not know (the
         * published CRDs' x-kubernetes-validations). Another suite may have created it. */
        int rc = co_kube_create(NULL, c, crd, NULL);
        if (rc != 0 && rc != CO_EEXISTS) {
            fail_msg("creating the %s CRD: %s", flux_kinds[i].kind, co_error_last());
        }
        json_object_put(crd);
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(flux_kinds); i++) {
        int served = 0;
        for (int t = 0; t < 1200 && !served; t++) {
            co_kube_mapping m;
            if (co_kube_client_mapping(&m, c, "source.toolkit.fluxcd.io/v1", flux_kinds[i].kind) ==
                0) {
                co_kube_mapping_dispose(&m);
                served = 1;
            } else {
                usleep(100 * 1000);
            }
        }
        if (!served) {
            fail_msg("the %s CRD was not served in time", flux_kinds[i].kind);
        }
    }
    /* the resources may be discoverable a moment before they accept writes */
    usleep(500 * 1000);
}

/* ---- source ------------------------------------------------------------------------------ */

static int
src_resolve(void *ctx, const co_component *component, ctl_artifact *out, int64_t *retry_ns)
{
    (void)ctx;
    (void)component;
    if (ctl_test_source_unready) {
        *retry_ns = CTL_RETRY_REFERENCE_NS;
        return co_error_set(CO_EUNAVAILABLE, "source not ready");
    }
    out->url = co_xasprintf("file://%s", ctl_test_source_dir);
    out->digest = co_xstrdup(ctl_test_source_digest);
    out->revision = co_xstrdup(ctl_test_source_revision);
    char *text = co_xasprintf("[\"%s\",\"%s\",\"%s\"]", out->url, out->digest, out->revision);
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, text, strlen(text));
    free(text);
    out->source_digest = co_xstrdup(hex);
    return 0;
}

static int src_fetch(void *ctx,
                     const co_component *component,
                     const ctl_artifact *a,
                     char **dir_out,
                     void **hold_out)
{
    (void)ctx;
    (void)a;
    const char *path = component->spec.path ? component->spec.path : "";
    *dir_out = co_xasprintf("%s/%s", ctl_test_source_dir, path);
    *hold_out = NULL;
    return 0;
}

static void src_release(void *ctx, void *hold)
{
    (void)ctx;
    (void)hold;
}

/* The artifact is the whole source directory; spec.path names a directory in it. */
static int src_root(void *ctx, void *hold, char **root_out)
{
    (void)ctx;
    (void)hold;
    *root_out = co_xstrdup(ctl_test_source_dir);
    return 0;
}

ctl_source_ops ctl_test_source_ops(void)
{
    ctl_source_ops o = {src_resolve, src_fetch, src_release, NULL, src_root};
    return o;
}

/* ---- applier ----------------------------------------------------------------------------- */

static const char *s_at(const struct json_object *o, const char *k)
{
    struct json_object *v = NULL;
    if (!o || !json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string)) {
        return "";
    }
    return json_object_get_string(v);
}

static void split_api(const char *api, char *group, size_t glen, char *version, size_t vlen)
{
    const char *slash = strchr(api, '/');
    if (slash) {
        snprintf(group, glen, "%.*s", (int)(slash - api), api);
        snprintf(version, vlen, "%s", slash + 1);
    } else {
        snprintf(group, glen, "%s", "");
        snprintf(version, vlen, "%s", api);
    }
}

static int
find_item(struct json_object *inv, const char *g, const char *k, const char *ns, const char *n)
{
    size_t len = json_object_array_length(inv);
    for (size_t i = 0; i < len; i++) {
        struct json_object *it = json_object_array_get_idx(inv, i);
        if (strcmp(s_at(it, "group"), g) == 0 && strcmp(s_at(it, "kind"), k) == 0 &&
            strcmp(s_at(it, "namespace"), ns) == 0 && strcmp(s_at(it, "name"), n) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static void set_changed(const ctl_apply_opts *c, bool changed)
{
    if (c->inventory_changed) {
        *c->inventory_changed = changed;
    }
}

static int app_apply(void *ctx,
                     const ctl_apply_opts *c,
                     struct json_object *inventory,
                     struct json_object *objects,
                     bool *done)
{
    (void)ctx;
    size_t n = json_object_array_length(objects);
    bool added = false;
    char *label = ctl_owner_label(c->owner_id);
    for (size_t i = 0; i < n; i++) {
        struct json_object *o = json_object_array_get_idx(objects, i);
        char g[256], v[64];
        split_api(s_at(o, "apiVersion"), g, sizeof(g), v, sizeof(v));
        struct json_object *meta = co_json_get(o, "metadata", NULL);
        const char *ns = s_at(meta, "namespace");
        if (!*ns) {
            ns = c->namespace;
            json_object_object_add(meta, "namespace", json_object_new_string(ns));
        }
        if (find_item(inventory, g, s_at(o, "kind"), ns, s_at(meta, "name")) < 0) {
            struct json_object *it = json_object_new_object();
            json_object_object_add(it, "group", json_object_new_string(g));
            json_object_object_add(it, "version", json_object_new_string(v));
            json_object_object_add(it, "kind", json_object_new_string(s_at(o, "kind")));
            json_object_object_add(it, "namespace", json_object_new_string(ns));
            json_object_object_add(it, "name", json_object_new_string(s_at(meta, "name")));
            json_object_object_add(it, "adoptionPolicy", json_object_new_string("IfUnowned"));
            json_object_object_add(it, "reconcilePolicy", json_object_new_string("OnObjectChange"));
            json_object_object_add(it, "updatePolicy", json_object_new_string("SsaOverride"));
            json_object_object_add(it, "deletePolicy", json_object_new_string("Delete"));
            json_object_object_add(it, "applyOrder", json_object_new_int(0));
            json_object_object_add(it, "deleteOrder", json_object_new_int(0));
            json_object_object_add(it, "digest", json_object_new_string("test"));
            json_object_object_add(it, "phase", json_object_new_string("ScheduledForApplication"));
            json_object_array_add(inventory, it);
            added = true;
        }
    }
    /* as the engine: the new keys are persisted before anything is created */
    if (added && !c->persist) {
        free(label);
        *done = false;
        set_changed(c, true);
        return 0;
    }
    if (added && c->persist(c->persist_ctx, inventory) < 0) {
        free(label);
        set_changed(c, true);
        return co_error_wrap("persisting the inventory");
    }
    bool all_ready = true;
    for (size_t i = 0; i < n; i++) {
        struct json_object *o = co_json_copy(json_object_array_get_idx(objects, i));
        struct json_object *meta = co_json_get(o, "metadata", NULL);
        struct json_object *labels = co_json_get(meta, "labels", NULL);
        if (!labels) {
            labels = json_object_new_object();
            json_object_object_add(meta, "labels", labels);
        }
        json_object_object_add(labels, OWNER_LABEL, json_object_new_string(label));
        co_kube_write_options wo = {0};
        wo.field_manager = CTL_RECONCILER_NAME;
        wo.force = 1;
        int rc = co_kube_apply(NULL, c->target, o, &wo);
        if (rc < 0) {
            json_object_put(o);
            free(label);
            return co_error_wrap("applying %s", s_at(meta, "name"));
        }
        atomic_fetch_add(&apply_writes, 1);
        struct json_object *ann = co_json_get(meta, "annotations", NULL);
        if (strcmp(s_at(ann, "test.co/never-ready"), "true") == 0) {
            all_ready = false;
        }
        char g[256], v[64];
        split_api(s_at(o, "apiVersion"), g, sizeof(g), v, sizeof(v));
        int idx =
            find_item(inventory, g, s_at(o, "kind"), s_at(meta, "namespace"), s_at(meta, "name"));
        if (idx >= 0) {
            json_object_object_add(json_object_array_get_idx(inventory, (size_t)idx), "phase",
                                   json_object_new_string("Ready"));
        }
        json_object_put(o);
    }
    free(label);
    *done = all_ready;
    set_changed(c, added);
    return 0;
}

static int app_allowed(void *ctx,
                       const ctl_apply_opts *c,
                       struct json_object *inventory,
                       bool *allowed,
                       char **msg)
{
    (void)ctx;
    (void)c;
    (void)inventory;
    *allowed = true;
    *msg = NULL;
    return 0;
}

static int app_delete(void *ctx, const ctl_apply_opts *c, struct json_object *inventory, bool *done)
{
    (void)ctx;
    size_t n = json_object_array_length(inventory);
    for (size_t i = 0; i < n; i++) {
        struct json_object *it = json_object_array_get_idx(inventory, i);
        char api[320];
        const char *g = s_at(it, "group");
        if (*g) {
            snprintf(api, sizeof(api), "%s/%s", g, s_at(it, "version"));
        } else {
            snprintf(api, sizeof(api), "%s", s_at(it, "version"));
        }
        co_kube_ref ref = {api, s_at(it, "kind"), s_at(it, "namespace"), s_at(it, "name")};
        int rc = co_kube_delete(NULL, c->target, &ref, NULL);
        if (rc < 0 && rc != CO_ENOTFOUND) {
            return rc;
        }
    }
    while (json_object_array_length(inventory) > 0) {
        json_object_array_del_idx(inventory, 0, 1);
    }
    *done = true;
    set_changed(c, n > 0);
    return 0;
}

ctl_apply_ops ctl_test_apply_ops(void)
{
    ctl_apply_ops o = {app_apply, app_allowed, app_delete, NULL};
    return o;
}

unsigned long ctl_test_apply_writes(void)
{
    return atomic_load(&apply_writes);
}

/* ---- Components -------------------------------------------------------------------------- */

void ctl_test_create_component(co_kube_client *c,
                               const char *ns,
                               const char *name,
                               const char *spec_fmt,
                               ...)
{
    va_list ap;
    va_start(ap, spec_fmt);
    char *spec = co_xvasprintf(spec_fmt, ap);
    va_end(ap);
    struct json_object *obj = co_test_json(
        "{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":"
        "{\"namespace\":\"%s\",\"name\":\"%s\"},\"spec\":%s}",
        ns, name, spec);
    free(spec);
    assert_co_pass(co_kube_create(NULL, c, obj, NULL));
    json_object_put(obj);
}

struct json_object *ctl_test_get_component(co_kube_client *c, const char *ns, const char *name)
{
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, name};
    struct json_object *obj = NULL;
    int rc = co_kube_get(&obj, c, &ref, NULL);
    if (rc == CO_ENOTFOUND) {
        return NULL;
    }
    if (rc < 0) {
        fail_msg("reading component %s/%s: %s", ns, name, co_error_last());
    }
    return obj;
}

void ctl_test_state(co_kube_client *c,
                    const char *ns,
                    const char *name,
                    char *state,
                    size_t state_len,
                    char *reason,
                    size_t reason_len)
{
    struct json_object *obj = ctl_test_get_component(c, ns, name);
    struct json_object *st = co_json_get(obj, "status", NULL);
    snprintf(state, state_len, "%s", ctl_state_get(st));
    snprintf(reason, reason_len, "%s", ctl_state_reason(st));
    json_object_put(obj);
}

void ctl_test_wait_state(co_kube_client *c,
                         const char *ns,
                         const char *name,
                         const char *state,
                         const char *reason,
                         long timeout_ms)
{
    char *last = NULL;
    for (long waited = 0; waited <= timeout_ms; waited += 100) {
        struct json_object *obj = ctl_test_get_component(c, ns, name);
        struct json_object *st = co_json_get(obj, "status", NULL);
        bool ok = obj && strcmp(ctl_state_get(st), state) == 0 &&
                  (!reason || strcmp(ctl_state_reason(st), reason) == 0);
        free(last);
        last = st ? co_json_dumps(st, 0) : co_xstrdup("(no status)");
        json_object_put(obj);
        if (ok) {
            free(last);
            return;
        }
        usleep(100 * 1000);
    }
    fail_msg("component %s/%s did not reach %s/%s; last status: %s", ns, name, state,
             reason ? reason : "*", last);
}

void ctl_test_wait_gone(co_kube_client *c, const char *ns, const char *name, long timeout_ms)
{
    for (long waited = 0; waited <= timeout_ms; waited += 100) {
        struct json_object *obj = ctl_test_get_component(c, ns, name);
        if (!obj) {
            return;
        }
        json_object_put(obj);
        usleep(100 * 1000);
    }
    fail_msg("component %s/%s was not deleted in time", ns, name);
}
