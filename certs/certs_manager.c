/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The certificate manager's thread. Each pass: if this replica may write, read the Secret with
 * a quorum read, apply the rules, write what changed (create, or update at the resourceVersion
 * read), inject the bundle where it differs, and record the publication; then, on every
 * replica, serve the pair the watch last delivered and update metrics and readiness. Passes run
 * on a timer, when a rule is due, when the Secret changes and when leadership is gained.
 */
#include "certs/certs_manager.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/kube/kube_informer.h"
#include "co/kube/kube_lease.h"
#include "co/util/log.h"
#include "co/util/time.h"
#include "co/util/thread.h"

/* Retry delay after a failed pass or while a target is missing. */
#define RETRY_MS 2000

static const char *const data_keys[] = {"ca.crt", "ca.key", "ca-previous.crt", "tls.crt",
                                        "tls.key"};

struct co_certs_manager {
    co_certs_manager_options o;
    /* copies of the option strings */
    char *ns, *secret, *vwc, *mwc, *crd, *lease, *identity, *ca_name, *cn;
    char **dns, **ips;

    co_kube_informer *inf;
    co_kube_leader *leader;
    pthread_t thread;
    int started;

    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
    int kicked;
    const char *not_ready; /* under lock */

    char *served_cert; /* thread-private: the pair last handed to serve() */
    int waiting;       /* thread-private: a rotation waits for the bundle to settle */
    co_metric *expiry, *rotations, *inject_errors;
};

/* --- small helpers ---------------------------------------------------------------------------- */

static char *opt_dup(const char *s)
{
    return s ? co_xstrdup(s) : NULL;
}

static time_t wall_now(void)
{
    return (time_t)(co_time_now() / 1000000000);
}

static const char *data_field(const co_certs_data *d, size_t i)
{
    const char *const v[] = {d->ca_crt, d->ca_key, d->ca_previous, d->tls_crt, d->tls_key};
    return v[i];
}

static char **data_slot(co_certs_data *d, size_t i)
{
    char **v[] = {&d->ca_crt, &d->ca_key, &d->ca_previous, &d->tls_crt, &d->tls_key};
    return v[i];
}

/* Reads the PEM values of a Secret object (missing or undecodable values stay NULL). */
static void read_secret_data(co_certs_data *out, const struct json_object *secret)
{
    memset(out, 0, sizeof(*out));
    struct json_object *data = co_json_get(secret, "data", NULL);
    for (size_t i = 0; data && i < CO_ARRAY_SIZE(data_keys); i++) {
        struct json_object *v = NULL;
        if (!json_object_object_get_ex(data, data_keys[i], &v) ||
            !json_object_is_type(v, json_type_string)) {
            continue;
        }
        co_buf raw = CO_BUF_INIT(CO_MAX_PEM_FILE);
        if (co_base64_decode(&raw, json_object_get_string(v), (size_t)json_object_get_string_len(v),
                             CO_BASE64_STD) == 0 &&
            raw.len > 0) {
            *data_slot(out, i) = co_buf_take(&raw, NULL);
        } else {
            co_error_clear();
        }
        co_buf_dispose(&raw);
    }
}

static void read_published(co_certs_published *pub, const struct json_object *secret)
{
    memset(pub, 0, sizeof(*pub));
    if (!secret) {
        return;
    }
    pub->bundle_sha256 = co_json_meta_annotation(secret, CO_CERTS_ANN_BUNDLE);
    const char *at = co_json_meta_annotation(secret, CO_CERTS_ANN_PUBLISHED_AT);
    int64_t ns = 0;
    if (at && co_time_parse(&ns, at) == 0) {
        pub->since = (time_t)(ns / 1000000000);
    }
    co_error_clear();
}

static int managed(const struct json_object *secret)
{
    const char *v = co_json_meta_label(secret, CO_CERTS_MANAGED_BY_LABEL);
    return v && !strcmp(v, CO_CERTS_MANAGED_BY);
}

static void set_data(struct json_object *secret, const co_certs_data *d)
{
    struct json_object *data = json_object_new_object();
    for (size_t i = 0; i < CO_ARRAY_SIZE(data_keys); i++) {
        const char *v = data_field(d, i);
        if (v) {
            char *b64 = co_base64_encode(v, strlen(v), CO_BASE64_STD);
            json_object_object_add(data, data_keys[i], json_object_new_string(b64));
            co_free_secret(b64, strlen(b64));
        }
    }
    json_object_object_add(secret, "data", data);
}

static struct json_object *new_secret(co_certs_manager *m)
{
    struct json_object *s = json_object_new_object();
    json_object_object_add(s, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(s, "kind", json_object_new_string("Secret"));
    struct json_object *meta = json_object_new_object();
    json_object_object_add(meta, "name", json_object_new_string(m->secret));
    json_object_object_add(meta, "namespace", json_object_new_string(m->ns));
    struct json_object *labels = json_object_new_object();
    json_object_object_add(labels, CO_CERTS_MANAGED_BY_LABEL,
                           json_object_new_string(CO_CERTS_MANAGED_BY));
    json_object_object_add(meta, "labels", labels);
    json_object_object_add(s, "metadata", meta);
    json_object_object_add(s, "type", json_object_new_string("kubernetes.io/tls"));
    return s;
}

static void set_annotation(struct json_object *obj, const char *key, const char *value)
{
    struct json_object *meta = co_json_get(obj, "metadata", NULL);
    struct json_object *ann = NULL;
    if (!json_object_object_get_ex(meta, "annotations", &ann) ||
        !json_object_is_type(ann, json_type_object)) {
        ann = json_object_new_object();
        json_object_object_add(meta, "annotations", ann);
    }
    json_object_object_add(ann, key, json_object_new_string(value));
}

static void log_changes(co_certs_manager *m, const co_certs_outcome *o)
{
    co_certs_info ca, leaf;
    char ca_end[CO_TIME_STR_MAX] = "", leaf_end[CO_TIME_STR_MAX] = "";
    if (o->next.ca_crt && co_certs_inspect(&ca, o->next.ca_crt, strlen(o->next.ca_crt)) == 0) {
        co_time_format(ca_end, (int64_t)ca.not_after * 1000000000);
    }
    if (o->next.tls_crt && co_certs_inspect(&leaf, o->next.tls_crt, strlen(o->next.tls_crt)) == 0) {
        co_time_format(leaf_end, (int64_t)leaf.not_after * 1000000000);
    }
    co_error_clear();
    co_log(CO_LOG_INFO, "certificates rotated", "secret", m->secret, "namespace", m->ns, "reason",
           o->reason, "caNotAfter", ca_end, "servingNotAfter", leaf_end, NULL);
    if (m->rotations) {
        if (o->changes & (CO_CERTS_NEW_CA | CO_CERTS_ROTATED_CA)) {
            co_metric_inc(m->rotations, (const char *const[]){"ca"});
        }
        if (o->changes & (CO_CERTS_NEW_SERVING | CO_CERTS_ROTATED_SERVING)) {
            co_metric_inc(m->rotations, (const char *const[]){"serving"});
        }
    }
}

/* --- injection ---------------------------------------------------------------------------- */

typedef struct target {
    const char *api_version;
    const char *kind;
    const char *name;
} target;

static void inject_error(co_certs_manager *m, const target *t)
{
    if (m->inject_errors) {
        co_metric_inc(m->inject_errors, NULL);
    }
    co_log(CO_LOG_WARN, "cannot inject the CA bundle", "kind", t->kind, "name", t->name, "error",
           co_error_last(), NULL);
}

/* Makes @p t carry @p b64 wherever a caBundle belongs. *missing is set when @p t does not
 * exist. @return 0 (also when already in place) or the API error. */
static int inject_one(co_certs_manager *m, const target *t, const char *b64, int *missing)
{
    co_kube_ref ref = {t->api_version, t->kind, NULL, t->name};
    struct json_object *obj = NULL;
    int rc = co_kube_get(&obj, m->o.client, &ref, NULL);
    if (rc == CO_ENOTFOUND) {
        co_error_clear();
        *missing = 1;
        return 0;
    }
    if (rc < 0) {
        return rc;
    }
    struct json_object *patch = json_object_new_array();
    struct json_object *test = json_object_new_object();
    json_object_object_add(test, "op", json_object_new_string("test"));
    json_object_object_add(test, "path", json_object_new_string("/metadata/resourceVersion"));
    json_object_object_add(test, "value",
                           json_object_get(co_json_get(obj, "metadata", "resourceVersion", NULL)));
    json_object_array_add(patch, test);
    size_t nops = 0;
    if (!strcmp(t->kind, "CustomResourceDefinition")) {
        struct json_object *strategy = co_json_get(obj, "spec", "conversion", "strategy", NULL);
        if (strategy && !strcmp(json_object_get_string(strategy), "Webhook")) {
            struct json_object *cur =
                co_json_get(obj, "spec", "conversion", "webhook", "clientConfig", "caBundle", NULL);
            if (!cur || strcmp(json_object_get_string(cur), b64)) {
                struct json_object *op = json_object_new_object();
                json_object_object_add(op, "op", json_object_new_string("add"));
                json_object_object_add(
                    op, "path",
                    json_object_new_string("/spec/conversion/webhook/clientConfig/caBundle"));
                json_object_object_add(op, "value", json_object_new_string(b64));
                json_object_array_add(patch, op);
                nops++;
            }
        }
    } else {
        struct json_object *hooks = co_json_get(obj, "webhooks", NULL);
        size_t n = hooks && json_object_is_type(hooks, json_type_array)
                       ? json_object_array_length(hooks)
                       : 0;
        for (size_t i = 0; i < n; i++) {
            struct json_object *cur =
                co_json_get(json_object_array_get_idx(hooks, i), "clientConfig", "caBundle", NULL);
            if (cur && !strcmp(json_object_get_string(cur), b64)) {
                continue;
            }
            char path[64];
            snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig/caBundle", i);
            struct json_object *op = json_object_new_object();
            json_object_object_add(op, "op", json_object_new_string("add"));
            json_object_object_add(op, "path", json_object_new_string(path));
            json_object_object_add(op, "value", json_object_new_string(b64));
            json_object_array_add(patch, op);
            nops++;
        }
    }
    if (nops > 0) {
        rc = co_kube_patch(NULL, m->o.client, &ref, CO_KUBE_PATCH_JSON, patch, NULL);
        if (rc == 0) {
            co_log(CO_LOG_INFO, "CA bundle injected", "kind", t->kind, "name", t->name, NULL);
        }
    }
    json_object_put(patch);
    json_object_put(obj);
    return rc;
}

/* Injects @p bundle everywhere. @return 1 when every existing target carries it, 0 when a
 * target is missing or failed. */
static int inject_all(co_certs_manager *m, const char *bundle)
{
    const target targets[] = {
        {"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", m->vwc},
        {"admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", m->mwc},
        {"apiextensions.k8s.io/v1", "CustomResourceDefinition", m->crd},
    };
    char *b64 = co_base64_encode(bundle, strlen(bundle), CO_BASE64_STD);
    int complete = 1;
    for (size_t i = 0; i < CO_ARRAY_SIZE(targets); i++) {
        if (!targets[i].name) {
            continue;
        }
        int missing = 0;
        if (inject_one(m, &targets[i], b64, &missing) < 0) {
            inject_error(m, &targets[i]);
            complete = 0;
        } else if (missing) {
            co_log(CO_LOG_DEBUG, "injection target does not exist (yet)", "kind", targets[i].kind,
                   "name", targets[i].name, NULL);
            complete = 0;
        }
    }
    free(b64);
    return complete;
}

/* --- the writer's pass ----------------------------------------------------------------------- */

static int write_secret(co_certs_manager *m,
                        struct json_object *cur,
                        const co_certs_outcome *o,
                        struct json_object **stored)
{
    struct json_object *obj = cur ? json_object_get(cur) : new_secret(m);
    set_data(obj, &o->next);
    int rc = cur ? co_kube_update(stored, m->o.client, obj, NULL)
                 : co_kube_create(stored, m->o.client, obj, NULL);
    json_object_put(obj);
    if (rc == CO_ECONFLICT || rc == CO_EEXISTS) {
        co_log(CO_LOG_INFO, "another writer changed the certificate Secret first; reading it again",
               "secret", m->secret, NULL);
        return CO_ECONFLICT;
    }
    return rc;
}

int co_certs_manager_reconcile(co_certs_manager *m)
{
    co_kube_ref ref = {"v1", "Secret", m->ns, m->secret};
    struct json_object *secret = NULL;
    co_certs_data cur = {0};
    co_certs_outcome o = {0};
    char *bundle = NULL;
    time_t now = wall_now();
    int rc = co_kube_get(&secret, m->o.client, &ref, NULL);
    if (rc == CO_ENOTFOUND) {
        co_error_clear();
        secret = NULL;
    } else if (rc < 0) {
        co_error_wrap("reading Secret %s/%s", m->ns, m->secret);
        goto done;
    } else if (!managed(secret)) {
        rc = co_error_set(CO_EINVALID,
                          "Secret %s/%s exists but was not created by component-webhook (label "
                          "%s=%s missing); refusing to change it",
                          m->ns, m->secret, CO_CERTS_MANAGED_BY_LABEL, CO_CERTS_MANAGED_BY);
        goto done;
    }
    if (secret) {
        read_secret_data(&cur, secret);
    }
    co_certs_published pub;
    read_published(&pub, secret);
    if ((rc = co_certs_plan(&o, &cur, &m->o.certs, &pub, now)) < 0) {
        goto done;
    }
    m->waiting = (o.changes & CO_CERTS_WAITING) != 0;
    if (o.changes & ~(unsigned)CO_CERTS_WAITING) {
        struct json_object *stored = NULL;
        if ((rc = write_secret(m, secret, &o, &stored)) < 0) {
            goto done;
        }
        log_changes(m, &o);
        json_object_put(secret);
        secret = stored;
    }
    /* Publish the bundle; record it once every target carries it. */
    co_certs_data_bundle(&bundle, &o.next, now);
    if (inject_all(m, bundle)) {
        char hash[65];
        co_certs_sha256_hex(hash, bundle);
        const char *have = co_json_meta_annotation(secret, CO_CERTS_ANN_BUNDLE);
        if (!have || strcmp(have, hash)) {
            char at[CO_TIME_STR_MAX];
            co_time_format(at, (int64_t)now * 1000000000);
            set_annotation(secret, CO_CERTS_ANN_BUNDLE, hash);
            set_annotation(secret, CO_CERTS_ANN_PUBLISHED_AT, at);
            rc = co_kube_update(NULL, m->o.client, secret, NULL);
            if (rc == CO_ECONFLICT) {
                goto done;
            }
            if (rc < 0) {
                co_error_wrap("recording the published CA bundle in Secret %s/%s", m->ns,
                              m->secret);
                goto done;
            }
            co_log(CO_LOG_INFO, "CA bundle published", "secret", m->secret, "sha256", hash, NULL);
        }
    } else {
        rc = co_error_set(CO_EUNAVAILABLE, "the CA bundle is not published everywhere yet");
    }
done:
    free(bundle);
    co_certs_outcome_dispose(&o);
    co_certs_data_dispose(&cur);
    json_object_put(secret);
    return rc;
}

/* --- every replica: serve what the Secret holds -------------------------------------------- */

static void set_not_ready(co_certs_manager *m, const char *why)
{
    pthread_mutex_lock(&m->lock);
    m->not_ready = why;
    pthread_mutex_unlock(&m->lock);
}

static void serve_from_cache(co_certs_manager *m)
{
    struct json_object *secret = NULL;
    if (co_kube_informer_get(&secret, m->inf, m->ns, m->secret) < 0) {
        co_error_clear();
        set_not_ready(m, "no certificate Secret yet");
        return;
    }
    co_certs_data d;
    read_secret_data(&d, secret);
    time_t now = wall_now();
    const char *why = NULL;
    if (!d.tls_crt || !d.tls_key) {
        why = "no serving certificate in the Secret yet";
    } else if (!m->served_cert || strcmp(m->served_cert, d.tls_crt)) {
        if (m->o.serve(d.tls_crt, d.tls_key, m->o.payload) == 0) {
            free(m->served_cert);
            m->served_cert = co_xstrdup(d.tls_crt);
            co_log(CO_LOG_INFO, "serving certificate loaded from the Secret", "secret", m->secret,
                   NULL);
        } else {
            co_log(CO_LOG_WARN, "serving certificate in the Secret is unusable", "secret",
                   m->secret, "error", co_error_last(), NULL);
        }
    }
    co_certs_info info;
    if (m->expiry && m->served_cert &&
        co_certs_inspect(&info, m->served_cert, strlen(m->served_cert)) == 0) {
        co_metric_set(m->expiry, (const char *const[]){"serving"}, (double)(info.not_after - now));
    }
    if (m->expiry && d.ca_crt && co_certs_inspect(&info, d.ca_crt, strlen(d.ca_crt)) == 0) {
        co_metric_set(m->expiry, (const char *const[]){"ca"}, (double)(info.not_after - now));
    }
    co_error_clear();
    if (!why && !m->served_cert) {
        why = "no usable serving certificate";
    }
    if (!why) {
        char *bundle = NULL;
        co_certs_data_bundle(&bundle, &d, now);
        char hash[65];
        co_certs_sha256_hex(hash, bundle);
        const char *have = co_json_meta_annotation(secret, CO_CERTS_ANN_BUNDLE);
        if (!have || strcmp(have, hash)) {
            why = "the CA bundle is not published yet";
        } else if (co_certs_verify(m->served_cert, bundle, NULL, now) < 0) {
            co_error_clear();
            why = "the served certificate is not trusted by the published bundle";
        }
        free(bundle);
    }
    set_not_ready(m, why);
    co_certs_data_dispose(&d);
    json_object_put(secret);
}

/* --- the thread ---------------------------------------------------------------------------- */

static void *run(void *arg)
{
    co_certs_manager *m = arg;
    long interval = m->o.check_interval_ms > 0 ? m->o.check_interval_ms : 60000;
    for (;;) {
        long wait_ms = interval;
        int may_write = !m->leader || co_kube_leader_is_leader(m->leader);
        if (may_write) {
            int rc = co_certs_manager_reconcile(m);
            if (rc == CO_ECONFLICT) {
                co_error_clear();
                wait_ms = 100;
            } else if (rc < 0) {
                co_log(rc == CO_EUNAVAILABLE ? CO_LOG_DEBUG : CO_LOG_WARN,
                       "certificate management pass failed", "error", co_error_last(), NULL);
                wait_ms = RETRY_MS;
            }
        }
        serve_from_cache(m);
        if ((m->waiting || co_certs_manager_not_ready(m)) && wait_ms > RETRY_MS) {
            wait_ms = RETRY_MS;
        }
        /* come back when the next rule is due */
        struct json_object *secret = NULL;
        if (co_kube_informer_get(&secret, m->inf, m->ns, m->secret) == 0) {
            co_certs_data d;
            read_secret_data(&d, secret);
            time_t next = co_certs_next_event(&d);
            time_t now = wall_now();
            if (next > 0 && (next - now) * 1000 < wait_ms) {
                wait_ms = next > now ? (long)(next - now) * 1000 + 50 : 50;
            }
            co_certs_data_dispose(&d);
            json_object_put(secret);
        }
        co_error_clear();

        pthread_mutex_lock(&m->lock);
        struct timespec until = co_monotonic_deadline_ns((int64_t)wait_ms * 1000000);
        while (!m->stop && !m->kicked) {
            if (pthread_cond_timedwait(&m->cond, &m->lock, &until) != 0) {
                break;
            }
        }
        m->kicked = 0;
        int stop = m->stop;
        pthread_mutex_unlock(&m->lock);
        if (stop) {
            break;
        }
    }
    return NULL;
}

void co_certs_manager_kick(co_certs_manager *m)
{
    pthread_mutex_lock(&m->lock);
    m->kicked = 1;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->lock);
}

static void on_secret(const struct json_object *obj, void *payload)
{
    (void)obj;
    co_certs_manager_kick(payload);
}

static void on_secret_update(const struct json_object *a, const struct json_object *b, void *p)
{
    (void)a;
    (void)b;
    co_certs_manager_kick(p);
}

static void on_leading(void *payload)
{
    co_log(CO_LOG_INFO, "leading certificate management", NULL);
    co_certs_manager_kick(payload);
}

static void on_stopped(void *payload)
{
    (void)payload;
    co_log(CO_LOG_WARN, "no longer leading certificate management", NULL);
}

const char *co_certs_manager_not_ready(co_certs_manager *m)
{
    pthread_mutex_lock(&m->lock);
    const char *why = m->not_ready;
    pthread_mutex_unlock(&m->lock);
    return why;
}

static char **dup_list(const char *const *v, size_t n)
{
    char **out = co_xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        out[i] = co_xstrdup(v[i]);
    }
    return out;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i]);
    }
    free(v);
}

int co_certs_manager_start(co_certs_manager **out, const co_certs_manager_options *opts)
{
    if (!opts->client || !opts->namespace_ || !opts->secret_name || !opts->serve) {
        return co_error_set(CO_EINVALID, "certificate manager: client, namespace, Secret name "
                                         "and serve callback are required");
    }
    co_certs_manager *m = co_xcalloc(1, sizeof(*m));
    m->o = *opts;
    m->ns = co_xstrdup(opts->namespace_);
    m->secret = co_xstrdup(opts->secret_name);
    m->vwc = opt_dup(opts->validating_webhook);
    m->mwc = opt_dup(opts->mutating_webhook);
    m->crd = opt_dup(opts->crd);
    m->lease = opt_dup(opts->lease_name);
    m->identity = opt_dup(opts->identity);
    m->ca_name = opt_dup(opts->certs.ca_name);
    m->cn = opt_dup(opts->certs.common_name);
    m->dns = dup_list(opts->certs.dns_names, opts->certs.ndns);
    m->ips = dup_list(opts->certs.ip_addrs, opts->certs.nips);
    m->o.certs.ca_name = m->ca_name;
    m->o.certs.common_name = m->cn;
    m->o.certs.dns_names = (const char *const *)m->dns;
    m->o.certs.ip_addrs = (const char *const *)m->ips;
    m->not_ready = "certificates not loaded yet";
    pthread_mutex_init(&m->lock, NULL);
    co_cond_init_monotonic(&m->cond);
    if (opts->metrics) {
        static const char *const cert_label[] = {"certificate"};
        m->expiry = co_metrics_gauge(
            opts->metrics, "component_webhook_certificate_expiry_seconds",
            "Seconds until the certificate expires (serving: the one served; ca: the current CA).",
            cert_label, 1);
        m->rotations =
            co_metrics_counter(opts->metrics, "component_webhook_certificate_rotations_total",
                               "Certificates created or rotated by this replica.", cert_label, 1);
        m->inject_errors = co_metrics_counter(
            opts->metrics, "component_webhook_ca_injection_errors_total",
            "Failed attempts to inject the CA bundle into a webhook configuration or CRD.", NULL,
            0);
        /* Exported from the start (as 0), so that alerts on it see a series. */
        co_metric_add(m->inject_errors, NULL, 0);
    }

    char selector[320];
    snprintf(selector, sizeof(selector), "metadata.name=%s", m->secret);
    co_kube_informer_options io = {0};
    io.api_version = "v1";
    io.kind = "Secret";
    io.namespace = m->ns;
    io.field_selector = selector;
    co_kube_handlers h = {on_secret, on_secret_update, on_secret, m};
    int rc = co_kube_informer_new(&m->inf, opts->client, &io);
    if (rc == 0) {
        rc = co_kube_informer_add_handlers(m->inf, &h);
    }
    if (rc == 0) {
        rc = co_kube_informer_start(m->inf);
    }
    if (rc == 0 && opts->leader_elect) {
        co_kube_leader_options lo = {0};
        lo.namespace = m->ns;
        lo.name = m->lease ? m->lease : "component-webhook-certificates";
        lo.identity = m->identity;
        lo.on_started_leading = on_leading;
        lo.on_stopped_leading = on_stopped;
        lo.payload = m;
        rc = co_kube_leader_new(&m->leader, opts->client, &lo);
        if (rc == 0) {
            rc = co_kube_leader_start(m->leader);
        }
    }
    if (rc == 0 && pthread_create(&m->thread, NULL, run, m) != 0) {
        rc = co_error_set_os(CO_ERROR, "cannot start the certificate manager");
    }
    if (rc < 0) {
        co_certs_manager_stop(m);
        return rc;
    }
    m->started = 1;
    *out = m;
    return 0;
}

void co_certs_manager_stop(co_certs_manager *m)
{
    if (!m) {
        return;
    }
    if (m->started) {
        pthread_mutex_lock(&m->lock);
        m->stop = 1;
        pthread_cond_signal(&m->cond);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->thread, NULL);
    }
    co_kube_leader_free(m->leader);
    co_kube_informer_free(m->inf);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->lock);
    free(m->served_cert);
    free(m->ns);
    free(m->secret);
    free(m->vwc);
    free(m->mwc);
    free(m->crd);
    free(m->lease);
    free(m->identity);
    free(m->ca_name);
    free(m->cn);
    free_list(m->dns, m->o.certs.ndns);
    free_list(m->ips, m->o.certs.nips);
    free(m);
}
