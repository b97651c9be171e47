/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --events-address against the real kube-apiserver: the manager runs in-process with the test
 * source and applier and an events address on a loopback receiver, and a Component's
 * reconciles arrive there as Flux events carrying the Go operator's annotations:
 * core.cs.sap.com/revision (status.lastAttemptedRevision) and core.cs.sap.com/token
 * (<uid>:<component digest>, the digest empty for reconciles that end before computing it).
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <unistd.h>

#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_notify.h"
#include "tests/support/ctl_test.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_support.h"

#define WAIT_MS 90000L
#define HOOK    "/hook/component-operator"

static co_kube_client *admin;
static char *ns;
static ctl_manager *mgr;
static char *srcdir;
static ctl_source_ops src_ops;
static ctl_apply_ops app_ops;
static test_httpd *receiver;

#define SRC "\"sourceRef\":{\"httpRepository\":{\"url\":\"http://example.invalid/x.tar.gz\"}}"

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ctl_test_install_crd(admin);
    ns = co_test_kube_namespace(admin, "ctl-notify-");
    srcdir = co_test_tmpdir();
    snprintf(ctl_test_source_dir, sizeof(ctl_test_source_dir), "%s", srcdir);
    char *path = co_xasprintf("%s/app/cm.yaml", srcdir);
    const char *cm = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                     "\"notify-cm\"},\"data\":{\"k\":\"v\"}}\n";
    co_test_write_file(path, cm, strlen(cm));
    free(path);
    receiver = test_httpd_start();
    test_httpd_route(receiver, HOOK, 202, NULL, 0, NULL);
    char *address = co_xasprintf("%s%s", test_httpd_url(receiver), HOOK);
    src_ops = ctl_test_source_ops();
    app_ops = ctl_test_apply_ops();
    ctl_manager_options o = {0};
    o.kubeconfig = co_test_env("CO_TEST_KUBECONFIG");
    o.metrics_addr = "127.0.0.1:0";
    o.probe_addr = "127.0.0.1:0";
    o.workers = 2;
    const char *nspace = ns;
    o.namespaces = &nspace;
    o.nnamespaces = 1;
    o.source = &src_ops;
    o.apply = &app_ops;
    o.events_address = address;
    assert_co_pass(ctl_manager_new(&mgr, &o));
    free(address);
    assert_co_pass(ctl_manager_start(mgr));
    assert_non_null(ctl_manager_notify(mgr));
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ctl_manager_free(mgr);
    test_httpd_stop(receiver);
    co_kube_client_free(admin);
    co_test_rmtree(srcdir);
    free(srcdir);
    free(ns);
    curl_global_cleanup();
    return 0;
}

static const char *str(const struct json_object *obj, const char *a, const char *b)
{
    struct json_object *v = b ? co_json_get(obj, a, b, NULL) : co_json_get(obj, a, NULL);
    return v ? json_object_get_string(v) : NULL;
}

typedef struct wanted {
    const char *name;     /* involvedObject.name */
    const char *reason;   /* reason */
    const char *revision; /* metadata revision, or NULL for any */
    int from;             /* first body to look at */
} wanted;

/* The first forwarded event matching @p w (a new reference), or NULL. */
static struct json_object *find_event(const wanted *w, int *index_out)
{
    for (int i = w->from;; i++) {
        char *body = test_httpd_body(receiver, HOOK, i, NULL);
        if (!body) {
            return NULL;
        }
        struct json_object *ev = NULL;
        assert_co_pass(co_json_parse(&ev, body, strlen(body)));
        free(body);
        const char *name = str(ev, "involvedObject", "name");
        const char *reason = str(ev, "reason", NULL);
        const char *rev = str(co_json_get(ev, "metadata", NULL), "core.cs.sap.com/revision", NULL);
        if (name && strcmp(name, w->name) == 0 && reason && w->reason &&
            strcmp(reason, w->reason) == 0 &&
            (!w->revision || (rev && strcmp(rev, w->revision) == 0))) {
            if (index_out) {
                *index_out = i;
            }
            return ev;
        }
        json_object_put(ev);
    }
}

static struct json_object *wait_event(const wanted *w, int *index_out)
{
    for (int i = 0; i < 900; i++) {
        if (ctl_notify_flush(ctl_manager_notify(mgr), 10000) < 0) {
            co_error_clear();
        }
        struct json_object *ev = find_event(w, index_out);
        if (ev) {
            return ev;
        }
        usleep(100 * 1000);
    }
    fail_msg("no forwarded event for %s with reason %s%s%s", w->name, w->reason,
             w->revision ? " and revision " : "", w->revision ? w->revision : "");
    return NULL;
}

static void test_ctl_notify__reconciles_forward_events_with_revision_and_token(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "fwd", "{" SRC ",\"path\":\"app\"}");
    ctl_test_wait_state(admin, ns, "fwd", "Ready", "Ready", WAIT_MS);
    struct json_object *c = ctl_test_get_component(admin, ns, "fwd");
    assert_non_null(str(co_json_get(c, "metadata", NULL), "uid", NULL));
    assert_non_null(str(co_json_get(c, "status", NULL), "processingDigest", NULL));
    char *uid = co_xstrdup(str(co_json_get(c, "metadata", NULL), "uid", NULL));
    char *digest = co_xstrdup(str(co_json_get(c, "status", NULL), "processingDigest", NULL));
    assert_int_equal(strlen(digest), 64);
    assert_string_equal(str(co_json_get(c, "status", NULL), "lastAttemptedRevision", NULL),
                        ctl_test_source_revision);

    wanted ready = {"fwd", "Ready", ctl_test_source_revision, 0};
    int at = 0;
    struct json_object *ev = wait_event(&ready, &at);
    struct json_object *ref = co_json_get(ev, "involvedObject", NULL);
    assert_string_equal(str(ref, "kind", NULL), "Component");
    assert_string_equal(str(ref, "apiVersion", NULL), "core.cs.sap.com/v1alpha1");
    assert_string_equal(str(ref, "namespace", NULL), ns);
    assert_string_equal(str(ref, "uid", NULL), uid);
    assert_string_equal(str(ev, "severity", NULL), "info");
    assert_string_equal(str(ev, "reportingController", NULL), "component-operator.cs.sap.com");
    struct json_object *meta = co_json_get(ev, "metadata", NULL);
    char *token = co_xasprintf("%s:%s", uid, digest);
    assert_string_equal(str(meta, "core.cs.sap.com/token", NULL), token);
    free(token);
    json_object_put(ev);

    /* the first reconcile went to Ready at once: no event before it */
    wanted first = {"fwd", "Processing", NULL, 0};
    assert_null(find_event(&first, NULL));

    /* a pass that ends before the digest is computed (suspended) has an empty digest in its
     * token */
    ctl_test_create_component(admin, ns, "fwd-suspended",
                              "{" SRC ",\"path\":\"app\","
                              "\"suspend\":true}");
    wanted suspended = {"fwd-suspended", "Suspended", NULL, 0};
    ev = wait_event(&suspended, NULL);
    struct json_object *sc = ctl_test_get_component(admin, ns, "fwd-suspended");
    token = co_xasprintf("%s:", str(co_json_get(sc, "metadata", NULL), "uid", NULL));
    json_object_put(sc);
    assert_string_equal(str(co_json_get(ev, "metadata", NULL), "core.cs.sap.com/token", NULL),
                        token);
    free(token);
    json_object_put(ev);

    /* a new source revision is a new event, even where reason and message are the same */
    snprintf(ctl_test_source_revision, sizeof(ctl_test_source_revision), "main@sha1:1111");
    snprintf(ctl_test_source_digest, sizeof(ctl_test_source_digest), "sha256:1111");
    ctl_manager_enqueue(mgr, ns, "fwd");
    wanted again = {"fwd", "Ready", "main@sha1:1111", at + 1};
    ev = wait_event(&again, NULL);
    json_object_put(c);
    c = ctl_test_get_component(admin, ns, "fwd");
    const char *digest2 = str(co_json_get(c, "status", NULL), "processingDigest", NULL);
    assert_string_not_equal(digest2, digest);
    token = co_xasprintf("%s:%s", uid, digest2);
    assert_string_equal(str(co_json_get(ev, "metadata", NULL), "core.cs.sap.com/token", NULL),
                        token);
    free(token);
    json_object_put(ev);
    json_object_put(c);
    free(digest);

    /* the core/v1 Events carry the same annotations, as client-go's AnnotatedEventf writes */
    int found = 0;
    for (int i = 0; i < 300 && !found; i++) {
        co_kube_ref ref2 = {"v1", "Event", ns, NULL};
        co_kube_list_options lo = {0};
        lo.field_selector = "involvedObject.name=fwd,reason=Ready";
        struct json_object *list = NULL;
        assert_co_pass(co_kube_list(&list, admin, &ref2, &lo));
        struct json_object *items = co_json_get(list, "items", NULL);
        if (json_object_array_length(items) > 0) {
            found = 1;
            struct json_object *ann =
                co_json_get(json_object_array_get_idx(items, 0), "metadata", "annotations", NULL);
            assert_non_null(str(ann, "core.cs.sap.com/revision", NULL));
            const char *tok = str(ann, "core.cs.sap.com/token", NULL);
            assert_non_null(tok);
            assert_int_equal(strlen(tok), strlen(uid) + 1 + 64);
            assert_true(strncmp(tok, uid, strlen(uid)) == 0);
        }
        json_object_put(list);
        if (!found) {
            usleep(100 * 1000);
        }
    }
    assert_true(found);
    free(uid);
    co_kube_ref cref = {"core.cs.sap.com/v1alpha1", "Component", ns, "fwd"};
    assert_co_pass(co_kube_delete(NULL, admin, &cref, NULL));
    ctl_test_wait_gone(admin, ns, "fwd", WAIT_MS);
}

/* An Error state is a Warning event, forwarded with severity error. */
static void test_ctl_notify__errors_are_forwarded_with_severity_error(void **state)
{
    (void)state;
    ctl_test_create_component(admin, ns, "broken", "{" SRC ",\"path\":\"no-such-dir\"}");
    ctl_test_wait_state(admin, ns, "broken", "Error", NULL, WAIT_MS);
    struct json_object *c = ctl_test_get_component(admin, ns, "broken");
    struct json_object *conds = co_json_get(c, "status", "conditions", NULL);
    assert_non_null(conds);
    const char *why = str(json_object_array_get_idx(conds, 0), "reason", NULL);
    assert_non_null(why);
    wanted w = {"broken", why, NULL, 0};
    struct json_object *ev = wait_event(&w, NULL);
    assert_string_equal(str(ev, "severity", NULL), "error");
    assert_string_equal(str(ev, "message", NULL),
                        str(json_object_array_get_idx(conds, 0), "message", NULL));
    json_object_put(ev);
    json_object_put(c);
    co_kube_ref cref = {"core.cs.sap.com/v1alpha1", "Component", ns, "broken"};
    assert_co_pass(co_kube_delete(NULL, admin, &cref, NULL));
    ctl_test_wait_gone(admin, ns, "broken", WAIT_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_notify__reconciles_forward_events_with_revision_and_token),
        cmocka_unit_test(test_ctl_notify__errors_are_forwarded_with_severity_error),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
