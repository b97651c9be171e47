/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Component state machine (see ctl_reconcile.h). One `pass` holds everything of one
 * reconcile: the fresh object and its parse, the status being built (in the typed model, with
 * the inventory as the apply engine's JSON array beside it), the references loaded, and the
 * outcome. The steps follow docs/behaviour.md, "Reconcile steps", in order; each step either
 * continues, or ends the pass by setting the outcome and jumping to the "finally" part, which
 * maps errors to states ("States and reasons", "Retriable errors"), derives the requeue
 * ("Intervals and requeue"), reports the outcome and writes the status.
 *
 * Two things stay JSON on purpose: the component digest (docs/behaviour.md, "Component digest") is
 * defined over the stored document, and validation and the policy check are the webhook's
 * functions, which take it.
 */
#include "controller/ctl_reconcile.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <json-c/json.h>

#include "co/api/depgraph.h"
#include "co/api/lifecycle.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "co/json/json.h"
#include "co/util/time.h"
#include "co/json/yaml.h"
#include "controller/ctl_health.h"
#include "controller/ctl_inventory.h"
#include "controller/ctl_pending.h"
#include "controller/ctl_render.h"
#include "controller/ctl_targets.h"

#define MAX_MESSAGE 4096

void ctl_artifact_dispose(ctl_artifact *a)
{
    if (!a) {
        return;
    }
    free(a->url);
    free(a->digest);
    free(a->revision);
    free(a->source_digest);
    memset(a, 0, sizeof(*a));
}

char *ctl_owner_id(const char *cluster_id, const char *ns, const char *name)
{
    return co_xasprintf("%s/%s/%s", cluster_id, ns, name);
}

char *ctl_owner_label(const char *owner_id)
{
    unsigned char sum[CO_SHA256_LEN];
    co_sha256(sum, owner_id, strlen(owner_id));
    return co_base32_lower(sum, sizeof(sum));
}

int ctl_values_merge(struct json_object **out,
                     struct json_object *const *docs,
                     size_t ndocs,
                     const struct json_object *spec_values)
{
    struct json_object *v = json_object_new_object();
    for (size_t i = 0; i < ndocs; i++) {
        if (!docs[i]) {
            continue;
        }
        if (!json_object_is_type(docs[i], json_type_object)) {
            json_object_put(v);
            return co_error_set(CO_EINVALID, "valuesFrom[%zu]: values must be a mapping, not %s", i,
                                co_json_type_name(docs[i]));
        }
        co_json_merge(v, docs[i]);
    }
    if (spec_values) {
        if (!json_object_is_type(spec_values, json_type_object)) {
            json_object_put(v);
            return co_error_set(CO_EINVALID, "spec.values: must be a mapping, not %s",
                                co_json_type_name(spec_values));
        }
        co_json_merge(v, spec_values);
    }
    *out = v;
    return 0;
}

/* ---- the pass ---------------------------------------------------------------------------- */

typedef struct pass {
    ctl_env *env;
    const char *ns, *name;
    char *key;
    struct json_object *obj; /* the fresh Component (owned) */
    co_component *c;         /* the same, parsed once (owned); NULL when it does not parse */
    /* the status being built: c->status, but for the inventory, which is this array (owned;
     * NULL while the Component has none and no step asked for one) */
    co_component_status *st;
    struct json_object *inventory;
    int64_t now;
    bool deleting;
    int64_t requeue_ns, retry_ns, timeout_ns;

    /* outcome */
    const char *state, *reason;
    char *message;
    int err;                /* 0 or the error code */
    bool retriable;         /* err is one of docs/behaviour.md, "Retriable errors" */
    int64_t err_delay;      /* retriable: own delay (0: retry interval) */
    const char *err_reason; /* ours: DependencyCycle, PolicyViolation (requeue after retry) */
    int64_t requeue_after;
    bool skip_status;
    bool gone;
    bool wrote; /* the Component was patched or its status written */
    /* its status was held back for the next pass (ctl_pending.h) */
    bool held;
    /* the pass started from a status held back (ctl_pending.h), not the stored one, which must
     * then be written whatever the pass finds */
    bool from_pending;
    /* while obj carries the held status (take_held()), the status as stored (owned; NULL when
     * there was none): what the status write patches from */
    bool obj_status_held;
    struct json_object *stored_status;

    /* references */
    char *digest;
    ctl_artifact art;
    bool have_art;
    struct json_object *values;
    char *kubeconfig;
    size_t kubeconfig_len;
    co_kube_client *target;
    void *target_hold;
    /* the Component's identity: "system:serviceaccount:<ns>:<sa>", or NULL for the controller's
     * own (no serviceAccountName and no default) */
    char *user;
    /* the local cluster as that identity, for localLookup when the target is remote */
    co_kube_client *local_lookups;
    void *local_lookups_hold;
    co_policy_permissions perm; /* what the applying ComponentPolicies grant */

    /* lifecycle controls (docs/lifecycle.md) */
    char *read_digest;    /* status.processingDigest as read */
    bool was_ready;       /* the status as read: Ready or Warning, or within a grace period */
    bool health_seen;     /* this pass judged the dependents: the Degraded condition is its own */
    bool degraded;        /* ... and found them Degraded or Down past the grace period */
    co_kube_keys aux;     /* the auxiliary rendered objects (object_key()) */
    char *policy_warning; /* the ComponentPolicy rules of action Warn that matched */
    char *operation;      /* status.lastOperation, when a step said what it did */

    /* drift detection (docs/drift.md, "Reporting") */
    size_t drifted;     /* dependents kept drifted (drift policy Warn) */
    char *drift_change; /* the Drifted condition's new message when it changed, "" when it
                         * went away; NULL: as before */
} pass;

static int64_t now_ns(ctl_env *env)
{
    return env->now ? env->now() : co_time_now();
}

static uint64_t rnd(ctl_env *env)
{
    if (env->random) {
        return env->random();
    }
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
        v = (uint64_t)co_time_monotonic();
    }
    return v;
}

/* A text field of the status: replaced by a copy of @p value (NULL: unset). */
static void set_text(char **field, const char *value)
{
    char *v = co_xstrdup(value);
    free(*field);
    *field = v;
}

static void set_time(char **field, int64_t t)
{
    char buf[CO_TIME_STR_MAX];
    co_time_format(buf, t);
    set_text(field, buf);
}

/* Ends the pass with an error. The message is the capitalised, wrapped error text. */
static void fail(pass *p, int code, bool retriable, int64_t delay, const char *fmt, ...)
    CO_PRINTF(5, 6);
static void fail(pass *p, int code, bool retriable, int64_t delay, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = co_xvasprintf(fmt, ap);
    va_end(ap);
    free(p->message);
    p->message = ctl_capitalise(msg);
    free(msg);
    if (strlen(p->message) > MAX_MESSAGE) {
        p->message[MAX_MESSAGE] = '\0';
    }
    p->err = code < 0 ? code : CO_ERROR;
    p->retriable = retriable;
    p->err_delay = delay;
}

static void outcome(pass *p, const char *state, const char *reason, const char *message)
{
    p->state = state;
    p->reason = reason;
    free(p->message);
    p->message = co_xstrdup(message);
}

static bool processing_timed_out(pass *p)
{
    int64_t t = 0;
    if (!p->st->processing_since || co_time_parse(&t, p->st->processing_since) < 0) {
        return false;
    }
    return p->now - t >= p->timeout_ns;
}

/* ---- references -------------------------------------------------------------------------- */

/* Reads a Secret of the Component's namespace (uncached, never impersonated). */
static int get_secret(pass *p, const char *name, struct json_object **out)
{
    co_kube_ref ref = {"v1", "Secret", p->ns, name};
    return co_kube_get(out, p->env->client, &ref, NULL);
}

/* The decoded bytes of key @p key of Secret @p secret; CO_ENOTFOUND when absent. */
static int secret_value(co_buf *out, const struct json_object *secret, const char *key)
{
    const char *b64 = NULL;
    if (co_json_get_string(&b64, secret, "data", key, NULL) < 0) {
        co_error_clear();
        return CO_ENOTFOUND;
    }
    return co_base64_decode(out, b64, strlen(b64), 0);
}

/* Loads a Secret key reference with fallbacks. *missing is set (and nothing else) when the
 * Secret or the key is absent, which is retriable — or ignored during deletion. */
static int load_secret_key(pass *p,
                           const char *what,
                           const char *secret,
                           const char *key,
                           const char *const *fallbacks,
                           co_buf *value,
                           bool ignore_on_deletion,
                           bool *missing)
{
    struct json_object *s = NULL;
    *missing = false;
    int rc = get_secret(p, secret, &s);
    if (rc == CO_ENOTFOUND) {
        *missing = true;
        if (!(ignore_on_deletion && p->deleting)) {
            fail(p, rc, true, CTL_RETRY_REFERENCE_NS,
                 "error resolving references: %s: secret %s/%s not found", what, p->ns, secret);
        }
        return rc;
    }
    if (rc < 0) {
        fail(p, rc, false, 0, "error resolving references: %s: %s", what, co_error_last());
        return rc;
    }
    rc = CO_ENOTFOUND;
    const char *used = key;
    if (key) {
        rc = secret_value(value, s, key);
    } else {
        for (size_t i = 0; fallbacks[i] && rc == CO_ENOTFOUND; i++) {
            used = fallbacks[i];
            rc = secret_value(value, s, fallbacks[i]);
        }
    }
    json_object_put(s);
    if (rc == CO_ENOTFOUND) {
        *missing = true;
        if (!(ignore_on_deletion && p->deleting)) {
            if (key) {
                fail(p, rc, true, CTL_RETRY_REFERENCE_NS,
                     "error resolving references: %s: key %s not found in secret %s/%s", what, key,
                     p->ns, secret);
            } else {
                fail(p, rc, true, CTL_RETRY_REFERENCE_NS,
                     "error resolving references: %s: none of the keys %s, %s, %s found in "
                     "secret %s/%s",
                     what, fallbacks[0], fallbacks[1], fallbacks[2], p->ns, secret);
            }
        }
        return rc;
    }
    if (rc < 0) {
        fail(p, rc, false, 0, "error resolving references: %s: key %s of secret %s/%s: %s", what,
             used, p->ns, secret, co_error_last());
    }
    return rc;
}

/* A whole Secret's digest: sha256 of the JSON of its data map. */
static int secret_digest(pass *p, const char *what, const char *secret, char out[65])
{
    struct json_object *s = NULL;
    out[0] = '\0';
    int rc = get_secret(p, secret, &s);
    if (rc == CO_ENOTFOUND) {
        if (p->deleting) {
            return 0;
        }
        fail(p, rc, true, CTL_RETRY_REFERENCE_NS,
             "error resolving references: %s: secret %s/%s not found", what, p->ns, secret);
        return rc;
    }
    if (rc < 0) {
        fail(p, rc, false, 0, "error resolving references: %s: %s", what, co_error_last());
        return rc;
    }
    co_buf b = CO_BUF_INIT(CO_MAX_API_RESPONSE);
    struct json_object *data = co_json_get(s, "data", NULL);
    rc = data ? co_json_encode(&b, data, CO_JSON_CANONICAL) : co_buf_puts(&b, "null");
    if (rc == 0) {
        co_sha256_hex_buf(out, &b);
    } else {
        fail(p, rc, false, 0, "error resolving references: %s: %s", what, co_error_last());
    }
    co_buf_dispose(&b);
    json_object_put(s);
    return rc;
}

static const char *const VALUES_KEYS[] = {"values", "values.yaml", "values.yml", NULL};
static const char *const KUBECONFIG_KEYS[] = {"value", "value.yaml", "value.yml", NULL};

/* The kubeConfig Secret, when there is one; its digest goes to @p refs unless NULL. Not
 * ignored on deletion: the target is needed to delete. */
static int load_kubeconfig(pass *p, struct json_object *refs)
{
    const co_component_spec *spec = &p->c->spec;
    if (!spec->has_kube_config || !spec->kube_config.name) {
        return 0;
    }
    co_buf val = CO_BUF_INIT(CO_MAX_CONFIG_FILE);
    bool missing = false;
    int rc = load_secret_key(p, "spec.kubeConfig", spec->kube_config.name, spec->kube_config.key,
                             KUBECONFIG_KEYS, &val, false, &missing);
    if (rc < 0) {
        co_buf_dispose(&val);
        return rc;
    }
    if (refs) {
        char hex[CO_SHA256_HEX_LEN + 1];
        co_sha256_hex_buf(hex, &val);
        json_object_object_add(refs, "refs:[\"spec\",\"kubeConfig\"]", json_object_new_string(hex));
    }
    p->kubeconfig = co_buf_take(&val, &p->kubeconfig_len);
    return 0;
}

/* Loads valuesFrom, kubeConfig, decryption and substituteFrom Secrets and the source; adds
 * their digests to @p refs. */
static int load_references(pass *p, struct json_object *refs)
{
    const co_component_spec *spec = &p->c->spec;
    int rc = 0;
    size_t nvf = spec->n_values_from;
    struct json_object **docs = co_xcalloc(nvf + 1, sizeof(struct json_object *));
    for (size_t i = 0; i < nvf && rc == 0; i++) {
        const co_secret_key_ref *e = &spec->values_from[i];
        char what[64];
        snprintf(what, sizeof(what), "spec.valuesFrom[%zu]", i);
        if (!e->name || !*e->name) {
            fail(p, CO_EINVALID, false, 0, "%s.name: required", what);
            rc = CO_EINVALID;
            break;
        }
        co_buf val = CO_BUF_INIT(CO_MAX_DOCUMENT);
        bool missing = false;
        rc = load_secret_key(p, what, e->name, e->key, VALUES_KEYS, &val, true, &missing);
        char pathkey[96];
        snprintf(pathkey, sizeof(pathkey), "refs:[\"spec\",\"valuesFrom\",%zu]", i);
        if (rc == CO_ENOTFOUND && missing && p->deleting) {
            json_object_object_add(refs, pathkey, json_object_new_string(""));
            rc = 0;
        } else if (rc == 0) {
            char hex[CO_SHA256_HEX_LEN + 1];
            co_sha256_hex_buf(hex, &val);
            json_object_object_add(refs, pathkey, json_object_new_string(hex));
            rc = co_yaml_parse(&docs[i], co_buf_cstr(&val), val.len, 0);
            if (rc < 0) {
                fail(p, rc, false, 0, "error resolving references: %s: %s", what, co_error_last());
            }
        }
        co_buf_dispose(&val);
    }
    if (rc == 0) {
        rc = ctl_values_merge(&p->values, docs, nvf, spec->values);
        if (rc < 0) {
            fail(p, rc, false, 0, "error resolving references: %s", co_error_last());
        }
    }
    for (size_t i = 0; i < nvf; i++) {
        json_object_put(docs[i]);
    }
    free(docs);
    if (rc < 0) {
        return rc;
    }

    if ((rc = load_kubeconfig(p, refs)) < 0) {
        return rc;
    }

    if (spec->decryption_secret_name) {
        char hex[CO_SHA256_HEX_LEN + 1];
        rc = secret_digest(p, "spec.decryption.secretRef", spec->decryption_secret_name, hex);
        if (rc < 0) {
            return rc;
        }
        json_object_object_add(refs, "refs:[\"spec\",\"decryption\",\"secretRef\"]",
                               json_object_new_string(hex));
    }
    for (size_t i = 0; i < spec->n_substitute_from; i++) {
        const char *sname = spec->substitute_from[i];
        char what[64], pathkey[96], hex[CO_SHA256_HEX_LEN + 1];
        snprintf(what, sizeof(what), "spec.postBuild.substituteFrom[%zu]", i);
        rc = secret_digest(p, what, sname ? sname : "", hex);
        if (rc < 0) {
            return rc;
        }
        snprintf(pathkey, sizeof(pathkey), "refs:[\"spec\",\"postBuild\",\"substituteFrom\",%zu]",
                 i);
        json_object_object_add(refs, pathkey, json_object_new_string(hex));
    }

    /* the source (docs/behaviour.md, "Sources"), skipped in deletion */
    if (p->deleting) {
        json_object_object_add(refs, "refs:[\"spec\",\"sourceRef\"]", json_object_new_string(""));
        return 0;
    }
    co_component_status *st = p->st;
    int64_t ts = 0;
    if (spec->sticky && st->has_source_ref && st->processing_since &&
        co_time_parse(&ts, st->processing_since) == 0 && p->now - ts < p->timeout_ns &&
        st->artifact_digest && st->source_digest) {
        p->art.url = co_xstrdup(st->artifact_url ? st->artifact_url : "");
        p->art.digest = co_xstrdup(st->artifact_digest);
        p->art.revision = co_xstrdup(st->artifact_revision ? st->artifact_revision : "");
        p->art.source_digest = co_xstrdup(st->source_digest);
        p->have_art = true;
    } else if (!p->env->source.resolve) {
        fail(p, CO_EUNSUPPORTED, false, 0,
             "error resolving references: spec.sourceRef: no source layer in this build");
        return CO_EUNSUPPORTED;
    } else {
        int64_t retry = 0;
        co_error_clear();
        rc = p->env->source.resolve(p->env->source.ctx, p->c, &p->art, &retry);
        if (rc < 0) {
            fail(p, rc, retry > 0, retry, "error resolving references: spec.sourceRef: %s",
                 co_error_last());
            return rc;
        }
        p->have_art = true;
        st->has_source_ref = 1;
        set_text(&st->artifact_url, p->art.url);
        set_text(&st->artifact_digest, p->art.digest);
        set_text(&st->artifact_revision, p->art.revision);
        set_text(&st->source_digest, p->art.source_digest);
    }
    json_object_object_add(
        refs, "refs:[\"spec\",\"sourceRef\"]",
        json_object_new_string(p->art.source_digest ? p->art.source_digest : ""));
    return 0;
}

/* docs/behaviour.md, "Component digest": sha256 hex of the JSON of {generation, annotations,
 * spec, refs:...}, over the document as stored (the digest must not move when the model learns
 * a field). */
static int component_digest(pass *p, struct json_object *refs)
{
    struct json_object *m = json_object_get(refs);
    json_object_object_add(m, "generation", json_object_new_int64(p->c->generation));
    struct json_object *ann = co_json_get(p->obj, "metadata", "annotations", NULL);
    json_object_object_add(m, "annotations", ann ? json_object_get(ann) : NULL);
    struct json_object *spec = co_json_get(p->obj, "spec", NULL);
    json_object_object_add(m, "spec", spec ? json_object_get(spec) : NULL);
    co_buf b = CO_BUF_INIT(CO_MAX_API_RESPONSE);
    int rc = co_json_encode(&b, m, CO_JSON_CANONICAL);
    json_object_put(m);
    if (rc < 0) {
        fail(p, rc, false, 0, "error computing component digest: %s", co_error_last());
        return rc;
    }
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex_buf(hex, &b);
    co_buf_dispose(&b);
    p->digest = co_xstrdup(hex);
    return 0;
}

/* ---- writes ------------------------------------------------------------------------------ */

/* Whether a finalizer other than ours holds the Component. */
static bool has_foreign_finalizer(const co_component *c)
{
    for (size_t i = 0; i < c->n_finalizers; i++) {
        if (strcmp(c->finalizers[i], CTL_RECONCILER_NAME) != 0) {
            return true;
        }
    }
    return false;
}

/* Makes @p obj, an answer of the API server, the pass's Component: its status is the stored
 * one again. */
static void replace_obj(pass *p, struct json_object *obj)
{
    json_object_put(p->obj);
    p->obj = obj;
    json_object_put(p->stored_status);
    p->stored_status = NULL;
    p->obj_status_held = false;
}

/* A merge patch of the Component bound to the resourceVersion of p->obj, the object as this
 * pass last read or wrote it (so a write after another write of the same pass is not refused
 * as a conflict); *meta, when asked for, is its metadata object, to add fields to. */
static struct json_object *guarded_patch(const pass *p, struct json_object **meta)
{
    struct json_object *patch = json_object_new_object();
    struct json_object *m = json_object_new_object();
    const char *rv = co_json_str(p->obj, "metadata", "resourceVersion", NULL);
    if (rv && *rv) {
        json_object_object_add(m, "resourceVersion", json_object_new_string(rv));
    }
    json_object_object_add(patch, "metadata", m);
    if (meta) {
        *meta = m;
    }
    return patch;
}

/* Adds or removes our finalizer with a JSON merge patch guarded by the resourceVersion read.
 * On success p->obj becomes the patched object (the status write carries its resourceVersion).
 */
static int patch_finalizer(pass *p, bool add)
{
    const co_component *c = p->c;
    struct json_object *list = json_object_new_array();
    for (size_t i = 0; i < c->n_finalizers; i++) {
        if (strcmp(c->finalizers[i], CTL_RECONCILER_NAME) != 0) {
            json_object_array_add(list, json_object_new_string(c->finalizers[i]));
        }
    }
    if (add) {
        json_object_array_add(list, json_object_new_string(CTL_RECONCILER_NAME));
    }
    struct json_object *meta = NULL;
    struct json_object *patch = guarded_patch(p, &meta);
    json_object_object_add(meta, "finalizers", list);
    co_kube_ref ref = {CO_COMPONENT_V1ALPHA1, CO_COMPONENT_KIND, p->ns, p->name};
    co_kube_write_options wo = {0};
    wo.field_manager = CTL_RECONCILER_NAME;
    struct json_object *res = NULL;
    int rc = co_kube_patch(&res, p->env->client, &ref, CO_KUBE_PATCH_MERGE, patch, &wo);
    json_object_put(patch);
    if (rc == 0 && res) {
        replace_obj(p, res);
        p->wrote = true;
    } else {
        json_object_put(res);
    }
    return rc;
}

/* The status to write: the typed status built by the pass, with the apply engine's inventory. */
static struct json_object *status_json(pass *p)
{
    struct json_object *status = NULL;
    CO_ASSERT(co_component_status_to_json(&status, p->st) == 0);
    co_component_inventory_put(status, p->inventory,
                               p->env->inventory_plain_max ? p->env->inventory_plain_max
                                                           : CO_INVENTORY_PLAIN_MAX);
    return status;
}

/* Whether status @p built equals the one stored but for lastObservedAt: then it is not
 * written (a pass that changed nothing writes nothing). */
static bool status_unchanged(const pass *p, struct json_object *built)
{
    struct json_object *stored = co_json_get(p->obj, "status", NULL);
    if (!stored || !json_object_is_type(stored, json_type_object)) {
        return false;
    }
    size_t n = 0;
    json_object_object_foreach (built, key, val) {
        if (strcmp(key, "lastObservedAt") == 0) {
            continue;
        }
        struct json_object *old = NULL;
        if (!json_object_object_get_ex(stored, key, &old) || !co_json_equal(val, old)) {
            return false;
        }
        n++;
    }
    size_t m = (size_t)json_object_object_length(stored);
    return m - (json_object_object_get_ex(stored, "lastObservedAt", NULL) ? 1 : 0) == n;
}

/* The status write: a merge patch of the status subresource from the stored status to
 * @p status, guarded by the resourceVersion read (docs/controller-performance.md, "Status
 * writes as merge patches"). */
static struct json_object *status_patch(const pass *p, struct json_object *status)
{
    struct json_object *patch = guarded_patch(p, NULL);
    struct json_object *stored =
        p->obj_status_held ? p->stored_status : co_json_get(p->obj, "status", NULL);
    json_object_object_add(patch, "status", co_json_merge_patch_diff(stored, status));
    return patch;
}

/* Writes the status; on a conflict reads the object again and patches its status to ours.
 * The answer becomes p->obj, so that a later write of the same pass carries the new
 * resourceVersion. */
static int write_status_json(pass *p, struct json_object *status)
{
    int attempts = p->env->status_retries > 0 ? p->env->status_retries : 5;
    int rc = 0;
    co_kube_ref ref = {CO_COMPONENT_V1ALPHA1, CO_COMPONENT_KIND, p->ns, p->name};
    for (int i = 0; i < attempts; i++) {
        struct json_object *patch = status_patch(p, status);
        co_kube_write_options wo = {0};
        wo.field_manager = CTL_RECONCILER_NAME;
        wo.subresource = "status";
        struct json_object *res = NULL;
        rc = co_kube_patch(&res, p->env->client, &ref, CO_KUBE_PATCH_MERGE, patch, &wo);
        json_object_put(patch);
        if (rc == 0 && res) {
            replace_obj(p, res);
            p->wrote = true;
            break;
        }
        json_object_put(res);
        if (rc != CO_ECONFLICT) {
            break;
        }
        struct json_object *fresh = NULL;
        rc = co_kube_get(&fresh, p->env->client, &ref, NULL);
        if (rc == CO_ENOTFOUND) {
            rc = 0;
            break;
        }
        if (rc < 0) {
            break;
        }
        replace_obj(p, fresh);
        rc = CO_ECONFLICT;
    }
    return rc;
}

static int write_status(pass *p)
{
    struct json_object *status = status_json(p);
    int rc = write_status_json(p, status);
    json_object_put(status);
    return rc;
}

/* ---- steps ------------------------------------------------------------------------------- */

/* The identity the Component acts with: its service account, else the default one, else none
 * (the controller's own rights). The name was validated with the spec; it is checked again
 * here because deletion does not validate, and it becomes an HTTP header. */
static int component_user(pass *p)
{
    const char *sa = p->c->spec.service_account_name;
    if (!sa || !*sa) {
        sa = p->env->default_service_account;
    }
    if (!sa || !*sa) {
        return 0;
    }
    if (!co_component_is_service_account_name(sa)) {
        fail(p, CO_EINVALID, false, 0,
             "error building target client: spec.serviceAccountName: invalid name \"%.64s\"", sa);
        return CO_EINVALID;
    }
    p->user = co_xasprintf("system:serviceaccount:%s:%s", p->ns, sa);
    return 0;
}

static int acquire_target(pass *p)
{
    int rc = component_user(p);
    if (rc < 0) {
        return rc;
    }
    if (!p->env->targets.acquire) {
        if (p->kubeconfig || p->user) {
            rc = co_error_set(CO_EUNSUPPORTED, "no target client factory");
        } else {
            p->target = p->env->client;
        }
    } else {
        co_error_clear();
        unsigned flags =
            (p->perm.grants & CO_GRANT_INSECURE_KUBECONFIG_SERVERS) ? CTL_TARGET_ALLOW_HTTP : 0;
        rc = p->env->targets.acquire(p->env->targets.ctx, p->kubeconfig, p->kubeconfig_len, p->user,
                                     flags, &p->target, &p->target_hold);
        /* templates' localLookup reads the local cluster as the Component, not as the
         * controller, when the objects go elsewhere */
        if (rc == 0 && p->kubeconfig && p->user) {
            rc = p->env->targets.acquire(p->env->targets.ctx, NULL, 0, p->user, 0,
                                         &p->local_lookups, &p->local_lookups_hold);
        }
    }
    if (rc < 0) {
        fail(p, rc, false, 0, "error building target client: %s", co_error_last());
    }
    return rc;
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Whether dependency @p dep, which shares our source, has attempted the same version of it. */
static bool dependency_synced(const co_component_status *mine, const co_component_status *dep)
{
    const char *dd = dep->last_attempted_digest, *dr = dep->last_attempted_revision;
    const char *md = mine->last_attempted_digest, *mr = mine->last_attempted_revision;
    return dd && *dd && dr && *dr && md && mr && strcmp(dd, md) == 0 && strcmp(dr, mr) == 0;
}

/* Whether a dependency reports Ready only because it is disabled (docs/lifecycle.md,
 * "Disabled"): its objects are not there. */
static bool dependency_disabled(const co_component *dep)
{
    const co_component_status *st = &dep->status;
    for (size_t i = 0; i < st->n_conditions; i++) {
        const co_condition *cd = &st->conditions[i];
        if (cd->type && strcmp(cd->type, "Ready") == 0) {
            return cd->reason && strcmp(cd->reason, CTL_REASON_DISABLED) == 0;
        }
    }
    return false;
}

/* The dependency gate (docs/behaviour.md, "Dependencies"). */
static int check_dependencies(pass *p)
{
    const co_component *c = p->c;
    if (c->spec.n_dependencies == 0 || !p->env->cache.get_component) {
        return 0;
    }
    for (size_t i = 0; i < c->spec.n_dependencies; i++) {
        const co_object_ref *d = &c->spec.dependencies[i];
        if (!d->name) {
            continue;
        }
        const char *dns = co_component_ref_namespace(c, d);
        co_component *dep = NULL;
        int rc = p->env->cache.get_component(p->env->cache.ctx, dns, d->name, &dep);
        if (rc == CO_ENOTFOUND) {
            fail(p, rc, true, 0,
                 "error running pre-reconcile hook (0): dependent component %s/%s not found", dns,
                 d->name);
            return rc;
        }
        if (rc < 0) {
            fail(p, rc, false, 0, "error running pre-reconcile hook (0): %s", co_error_last());
            return rc;
        }
        if (c->spec.source.kind != CO_SOURCE_NONE && dep->spec.source.kind != CO_SOURCE_NONE &&
            co_source_ref_equal(&c->spec.source, &dep->spec.source) &&
            !dependency_synced(p->st, &dep->status)) {
            co_component_free(dep);
            fail(p, CO_ECONFLICT, true, 0,
                 "error running pre-reconcile hook (0): dependent component %s/%s not synced", dns,
                 d->name);
            return CO_ECONFLICT;
        }
        bool ready = ctl_state_ready(dep);
        bool disabled = ready && dependency_disabled(dep);
        co_component_free(dep);
        if (disabled) {
            fail(p, CO_ECONFLICT, true, 0,
                 "error running pre-reconcile hook (0): dependent component %s/%s is disabled", dns,
                 d->name);
            return CO_ECONFLICT;
        }
        if (!ready) {
            fail(p, CO_ECONFLICT, true, 0,
                 "error running pre-reconcile hook (0): dependent component %s/%s not ready", dns,
                 d->name);
            return CO_ECONFLICT;
        }
    }
    return 0;
}

static int claimed_elsewhere(void *ctx,
                             char **owner_out,
                             const char *group,
                             const char *kind,
                             const char *ns,
                             const char *name)
{
    pass *p = ctx;
    return p->env->cache.claimed_by(p->env->cache.ctx, p->key, group, kind, ns, name, owner_out);
}

/* Sets what the status says at the end of every pass that is not gone (docs/behaviour.md,
 * "Reconcile steps", step 11). */
static void observed(pass *p)
{
    p->st->observed_generation = p->c->generation;
    set_time(&p->st->last_observed_at, p->now);
    p->c->has_status = 1;
}

/* The apply engine's persist hook: the inventory naming the objects about to be created is
 * written before they are. The state stays what it was (a Component failing on every retry
 * must not flap between its error and Processing); a new Component shows Processing, and since
 * when: this write may be the last of the pass that gets stored (its final status held back
 * and the controller stopped), and the processing timeout counts from it. */
static int persist_inventory(void *ctx, struct json_object *inventory)
{
    pass *p = ctx;
    CO_ASSERT(inventory == p->inventory);
    co_component_status *st = p->st;
    if (!st->state || !*st->state) {
        ctl_state_set(st, CTL_STATE_PROCESSING, CTL_REASON_PROCESSING, CTL_MSG_PROCESSING, p->now);
        if (!st->processing_since) {
            set_time(&st->processing_since, p->now);
        }
    }
    observed(p);
    if (write_status(p) < 0) {
        return co_error_wrap("error persisting the inventory");
    }
    return 0;
}

/* The apply engine's settings for this pass; @p stats and @p changed receive what it did. */
static void fill_apply_opts(pass *p,
                            ctl_apply_opts *o,
                            const char *owner_id,
                            ctl_apply_stats *stats,
                            bool *changed)
{
    const co_component *c = p->c;
    memset(o, 0, sizeof(*o));
    o->target = p->target;
    bool remote = p->kubeconfig != NULL;
    if (!p->env->dependent_events || ctl_apply_events_disabled(c)) {
        o->events = NULL;
    } else if (!remote) {
        o->events = p->env->events;
    } else if (p->target_hold && p->env->targets.recorder) {
        o->events = p->env->targets.recorder(p->env->targets.ctx, p->target_hold);
    }
    o->owner_id = owner_id;
    o->component_digest = p->digest;
    o->namespace = co_component_target_namespace(c);
    o->adoption_policy = co_component_adoption_policy(c);
    o->update_policy = co_component_update_policy(c);
    o->delete_policy = co_component_delete_policy(c);
    o->missing_namespaces_policy = co_component_missing_namespaces_policy(c);
    o->reapply_interval_ns = co_component_reapply_ns(c);
    o->additional_managed_types = c->spec.additional_managed_types;
    o->n_additional_managed_types = c->spec.n_additional_managed_types;
    /* inventories name objects without their cluster: only local targets are compared */
    if (!remote && p->env->cache.claimed_by) {
        o->claimed = claimed_elsewhere;
        o->claimed_ctx = p;
    }
    o->persist = persist_inventory;
    o->persist_ctx = p;
    o->cache = remote ? NULL : p->env->dependents;
    o->proceed = p->env->proceed;
    o->stats = stats;
    o->inventory_changed = changed;
    *changed = false;
}

/* Hands what one call into the apply engine did to the observer. */
static void report_operations(pass *p, const ctl_apply_stats *stats)
{
    if (p->env->observer.operations) {
        p->env->observer.operations(p->env->observer.ctx, stats);
    }
}

/* Components and ComponentPolicies among the rendered objects would let one Component's source
 * rewrite another Component (its source, identity and values) or the admins' rules: refused
 * unless a ComponentPolicy grants nestedComponents (docs/security.md). */
static int refuse_nested(pass *p, struct json_object *objects)
{
    if (p->perm.grants & CO_GRANT_NESTED_COMPONENTS) {
        return 0;
    }
    size_t n = json_object_array_length(objects);
    size_t glen = strlen(CO_COMPONENT_GROUP);
    for (size_t i = 0; i < n; i++) {
        struct json_object *o = json_object_array_get_idx(objects, i);
        const char *av = NULL, *kind = NULL;
        if (co_json_get_string(&av, o, "apiVersion", NULL) < 0 ||
            co_json_get_string(&kind, o, "kind", NULL) < 0 ||
            strncmp(av, CO_COMPONENT_GROUP, glen) != 0 || av[glen] != '/' ||
            (strcmp(kind, CO_COMPONENT_KIND) != 0 && strcmp(kind, CO_POLICY_KIND) != 0)) {
            co_error_clear();
            continue;
        }
        const char *ons = NULL, *oname = "";
        if (co_json_get_string(&ons, o, "metadata", "namespace", NULL) < 0) {
            co_error_clear();
        }
        if (co_json_get_string(&oname, o, "metadata", "name", NULL) < 0) {
            co_error_clear();
        }
        fail(p, CO_EAUTH, false, 0,
             "error generating manifests: object %s %s %s%s%s: a Component may deploy Components "
             "or ComponentPolicies only where a ComponentPolicy grants grants.nestedComponents",
             av, kind, ons ? ons : "", ons ? "/" : "", oname);
        return CO_EAUTH;
    }
    return 0;
}

/* ---- lifecycle controls (docs/lifecycle.md) ---------------------------------------------- */

/* How many dependents a message names before it says "and N more". */
#define NAMED_DEPENDENTS 3

/* Readiness of the dependents, from the inventory the apply engine wrote: gating items ready
 * and unready, unready auxiliary ones, and the first few unready of each, named. */
typedef struct readiness {
    size_t ready, unready, aux_unready;
    char *names, *aux_names; /* "apps/v1 Deployment ns/web, ..." (owned; NULL when none) */
} readiness;

static void readiness_dispose(readiness *r)
{
    free(r->names);
    free(r->aux_names);
}

static const char *item_str(struct json_object *item, const char *key)
{
    const char *v = co_json_str(item, key, NULL);
    return v ? v : "";
}

/* "group/Kind/namespace/name" of an inventory item or a rendered object (namespace "" for
 * cluster-scoped ones), the key auxiliary objects are remembered by. */
static char *object_key(const char *group, const char *kind, const char *ns, const char *name)
{
    return co_xasprintf("%s/%s/%s/%s", group, kind, ns, name);
}

/* Remembers which of the rendered (and by now normalised) objects are auxiliary
 * (`participation: auxiliary`): their readiness never counts for Degraded or Down. */
static void note_auxiliary(pass *p, struct json_object *objects)
{
    size_t n = json_object_array_length(objects);
    for (size_t i = 0; i < n; i++) {
        struct json_object *o = json_object_array_get_idx(objects, i);
        const char *v = co_json_meta_annotation(o, CTL_ANN_PARTICIPATION);
        if (!v) {
            continue;
        }
        bool aux = false;
        if (ctl_participation_parse(&aux, v) < 0) {
            co_error_clear();
        }
        const char *av = co_json_str(o, "apiVersion", NULL), *kind = co_json_str(o, "kind", NULL);
        const char *name = co_json_meta_name(o), *ns = co_json_meta_namespace(o);
        if (!aux || !av || !kind || !name) {
            continue;
        }
        const char *slash = strchr(av, '/');
        char *group = slash ? co_xstrndup(av, (size_t)(slash - av)) : co_xstrdup("");
        char *key = object_key(group, kind, ns ? ns : "", name);
        co_kube_keys_add(&p->aux, key);
        free(key);
        free(group);
    }
}

static bool is_auxiliary(const pass *p, const char *key)
{
    for (size_t i = 0; i < p->aux.len; i++) {
        if (strcmp(p->aux.items[i], key) == 0) {
            return true;
        }
    }
    return false;
}

/* Appends the name of an inventory item to the list @p names (at most NAMED_DEPENDENTS). */
static void name_item(char **names, size_t count, struct json_object *item)
{
    if (count > NAMED_DEPENDENTS) {
        return;
    }
    const char *group = item_str(item, "group"), *ns = item_str(item, "namespace");
    char *one =
        co_xasprintf("%s%s%s %s %s%s%s", group, *group ? "/" : "", item_str(item, "version"),
                     item_str(item, "kind"), ns, *ns ? "/" : "", item_str(item, "name"));
    char *joined = *names ? co_xasprintf("%s, %s", *names, one) : co_xstrdup(one);
    free(one);
    free(*names);
    *names = joined;
}

/* Ends a list of names with "and N more" when it names fewer than @p count. */
static void name_rest(char **names, size_t count)
{
    if (*names && count > NAMED_DEPENDENTS) {
        char *joined = co_xasprintf("%s and %zu more", *names, count - NAMED_DEPENDENTS);
        free(*names);
        *names = joined;
    }
}

/* The Drifted condition (docs/drift.md, "Reporting") from the items the engine found drifted
 * and kept so: "ConfigMap ns/a: /data/x; Deployment ns/web: /spec/replicas" naming at most
 * CTL_DRIFT_MAX_OBJECTS, absent when there are none. A change of it is an event. */
static void drift_step(pass *p)
{
    co_buf msg = CO_BUF_INIT(32768);
    size_t n = p->inventory ? json_object_array_length(p->inventory) : 0;
    p->drifted = 0;
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        struct json_object *item = json_object_array_get_idx(p->inventory, i);
        const char *drift = item_str(item, "drift");
        if (!*drift) {
            continue;
        }
        if (++p->drifted > CTL_DRIFT_MAX_OBJECTS) {
            continue;
        }
        const char *ns = item_str(item, "namespace");
        ok = ok && co_buf_printf(&msg, "%s%s %s%s%s: %s", p->drifted > 1 ? "; " : "",
                                 item_str(item, "kind"), ns, *ns ? "/" : "", item_str(item, "name"),
                                 drift) == 0;
    }
    if (p->drifted > CTL_DRIFT_MAX_OBJECTS) {
        ok = ok &&
             co_buf_printf(&msg, "; and %zu more objects", p->drifted - CTL_DRIFT_MAX_OBJECTS) == 0;
    }
    const co_condition *old = ctl_condition_find(p->st, CTL_CONDITION_DRIFTED);
    if (!ok) {
        co_error_clear();
    } else if (p->drifted) {
        const char *text = co_buf_cstr(&msg);
        if (!old || !same_str(old->message, text)) {
            set_text(&p->drift_change, text);
        }
        ctl_condition_put(p->st, CTL_CONDITION_DRIFTED, "True", CTL_REASON_DRIFTED, text, p->now);
    } else if (old) {
        set_text(&p->drift_change, "");
        ctl_condition_remove(p->st, CTL_CONDITION_DRIFTED);
    }
    co_buf_dispose(&msg);
}

/* An item is ready when it completed, or was judged ready and is still judged so (the engine
 * keeps the phase Ready of an object that became unready and says so in its status). */
static bool item_ready(struct json_object *item)
{
    const char *phase = item_str(item, "phase"), *status = item_str(item, "status");
    if (strcmp(phase, "Completed") == 0) {
        return true;
    }
    return strcmp(phase, "Ready") == 0 && (!*status || strcmp(status, "Current") == 0);
}

static void judge_dependents(const pass *p, readiness *r)
{
    memset(r, 0, sizeof(*r));
    size_t n = p->inventory ? json_object_array_length(p->inventory) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *item = json_object_array_get_idx(p->inventory, i);
        if (strcmp(item_str(item, "mode"), "delete-only") == 0) {
            continue;
        }
        char *key = object_key(item_str(item, "group"), item_str(item, "kind"),
                               item_str(item, "namespace"), item_str(item, "name"));
        bool aux = is_auxiliary(p, key);
        free(key);
        if (item_ready(item)) {
            r->ready += aux ? 0 : 1;
        } else if (aux) {
            name_item(&r->aux_names, ++r->aux_unready, item);
        } else {
            name_item(&r->names, ++r->unready, item);
        }
    }
    name_rest(&r->names, r->unready);
    name_rest(&r->aux_names, r->aux_unready);
}

/* status.unreadySince, set to now when unset. */
static int64_t unready_since(pass *p)
{
    int64_t t = 0;
    if (!p->st->unready_since || co_time_parse(&t, p->st->unready_since) < 0 || t > p->now) {
        set_time(&p->st->unready_since, p->now);
        t = p->now;
    }
    return t;
}

static void set_operation(pass *p, const char *fmt, ...) CO_PRINTF(2, 3);
static void set_operation(pass *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *op = co_xvasprintf(fmt, ap);
    va_end(ap);
    free(p->operation);
    p->operation = op;
}

/* The requeue while a grace period runs: at its end, or after the requeue interval if sooner. */
static void requeue_within(pass *p, int64_t left)
{
    p->requeue_after = left < p->requeue_ns ? left : p->requeue_ns;
}

/* docs/lifecycle.md, "Grace period and Degraded": a Component that was Ready for this very digest
 * and whose gating dependents became unready stays Ready within the grace period; after it, it
 * is Degraded (Warning) when some gating dependents are ready and Down (Error) when none is.
 * Returns whether it set the outcome (else the pass goes on as without a grace period). */
static bool grace_step(pass *p)
{
    int64_t grace = co_component_grace_ns(p->c);
    if (grace <= 0 || !p->was_ready || !p->read_digest || !p->digest ||
        strcmp(p->read_digest, p->digest) != 0) {
        return false;
    }
    readiness r;
    judge_dependents(p, &r);
    if (r.unready == 0) {
        /* not done for another reason (purges, a stop): as without a grace period */
        readiness_dispose(&r);
        return false;
    }
    int64_t left = unready_since(p) + grace - p->now;
    char gs[CO_DURATION_STR_MAX];
    co_duration_format(gs, grace);
    char *msg = NULL;
    if (left > 0) {
        msg = co_xasprintf("%s; %zu dependent%s unready within the grace period (%s): %s",
                           CTL_MSG_READY, r.unready, r.unready == 1 ? "" : "s", gs, r.names);
        outcome(p, CTL_STATE_READY, CTL_REASON_READY, msg);
        requeue_within(p, left);
    } else {
        bool down = r.ready == 0;
        msg =
            co_xasprintf("%zu of %zu dependents unready for longer than the grace period (%s): %s",
                         r.unready, r.unready + r.ready, gs, r.names);
        outcome(p, down ? CTL_STATE_ERROR : CTL_STATE_WARNING,
                down ? CTL_REASON_DOWN : CTL_REASON_DEGRADED, msg);
        p->degraded = true;
        p->requeue_after = p->requeue_ns;
    }
    free(msg);
    set_operation(p, "waiting for %zu dependent%s to become ready", r.unready,
                  r.unready == 1 ? "" : "s");
    readiness_dispose(&r);
    return true;
}

/* Every gating dependent is ready: the grace period ends; auxiliary dependents unready for
 * longer than the grace period make the Component Warning (docs/lifecycle.md, "Warning state"). */
static void all_ready_step(pass *p)
{
    int64_t grace = co_component_grace_ns(p->c);
    readiness r = {0};
    if (grace > 0) {
        judge_dependents(p, &r);
    }
    if (r.aux_unready == 0) {
        set_text(&p->st->unready_since, NULL);
        readiness_dispose(&r);
        return;
    }
    int64_t left = unready_since(p) + grace - p->now;
    if (left > 0) {
        requeue_within(p, left);
    } else {
        char gs[CO_DURATION_STR_MAX];
        co_duration_format(gs, grace);
        char *msg = co_xasprintf(
            "%s; %zu auxiliary dependent%s unready for longer than the grace period (%s): %s",
            CTL_MSG_READY, r.aux_unready, r.aux_unready == 1 ? "" : "s", gs, r.aux_names);
        outcome(p, CTL_STATE_WARNING, CTL_REASON_AUXILIARY_UNREADY, msg);
        free(msg);
    }
    readiness_dispose(&r);
}

/* docs/lifecycle.md, "Prerequisites": the barrier stands until the Component first proceeds
 * past initialization. A pass that failed before it got that far (no inventory, nothing ever
 * applied) has not proceeded either. */
static bool prerequisites_pending(const pass *p)
{
    const co_condition *ready = ctl_condition_find(p->st, "Ready");
    const char *r = ready && ready->reason ? ready->reason : "";
    if (!*r || strcmp(r, CTL_REASON_FIRST_SEEN) == 0 ||
        strcmp(r, CTL_REASON_PREREQUISITE_NOT_MET) == 0 || strcmp(r, CTL_REASON_DISABLED) == 0) {
        return true;
    }
    return !p->st->last_applied_at &&
           (!p->inventory || json_object_array_length(p->inventory) == 0);
}

/* Reads the object of prerequisite @p pr in the target, as the Component; *ns_out is the
 * namespace meant (NULL for cluster-scoped kinds; borrowed). */
static int
read_prerequisite(pass *p, const co_prerequisite *pr, struct json_object **out, const char **ns_out)
{
    const char *ns = pr->ns && *pr->ns ? pr->ns : p->ns;
    *ns_out = ns;
    co_kube_mapping mp;
    memset(&mp, 0, sizeof(mp));
    co_error_clear();
    int rc = co_kube_client_mapping(&mp, p->target, pr->api_version, pr->kind);
    if (rc < 0) {
        return rc;
    }
    if (!mp.namespaced) {
        *ns_out = ns = NULL;
    }
    co_kube_mapping_dispose(&mp);
    co_kube_ref ref = {pr->api_version, pr->kind, ns, pr->name};
    return co_kube_get(out, p->target, &ref, NULL);
}

/* The prerequisites, in order; the first unmet one ends the pass Pending (PrerequisiteNotMet).
 * Returns 1 when the pass ends here. */
static int prerequisites_step(pass *p)
{
    const co_component_spec *spec = &p->c->spec;
    if (spec->n_prerequisites == 0 || !prerequisites_pending(p)) {
        return 0;
    }
    for (size_t i = 0; i < spec->n_prerequisites; i++) {
        const co_prerequisite *pr = &spec->prerequisites[i];
        const char *type = pr->condition_type && *pr->condition_type
                               ? pr->condition_type
                               : CO_LIFECYCLE_DEFAULT_CONDITION;
        struct json_object *obj = NULL;
        const char *ns = NULL;
        int rc = read_prerequisite(p, pr, &obj, &ns);
        bool met = false;
        char *currently = NULL;
        if (rc == 0 || rc == CO_ENOTFOUND) {
            ctl_condition_met(&met, &currently, obj, type, CTL_ANN_STATUS_HINT, p->now / CO_SECOND);
        } else if (rc == CO_ENOMATCH) {
            currently = co_xstrdup("kind not served");
        } else if (rc != CO_EAUTH) {
            currently = co_xasprintf("unreadable: %s", co_error_last());
        }
        json_object_put(obj);
        co_error_clear();
        if (met) {
            continue;
        }
        co_prerequisite at = {pr->api_version, pr->kind, ns ? co_xstrdup(ns) : NULL, pr->name,
                              NULL};
        char *what = co_prerequisite_describe(&at);
        free(at.ns);
        char *msg = NULL;
        if (rc == CO_EAUTH && p->user) {
            msg = co_xasprintf("Prerequisite not met: %s cannot be read with the identity of the "
                               "Component (%s): forbidden",
                               what, p->user);
        } else if (rc == CO_EAUTH) {
            msg = co_xasprintf("Prerequisite not met: %s cannot be read with the controller's "
                               "identity: forbidden",
                               what);
        } else {
            msg = co_xasprintf("Prerequisite not met: waiting for condition \"%s\" of %s to become "
                               "True (currently %s)",
                               type, what, currently ? currently : "unknown");
        }
        if (strlen(msg) > MAX_MESSAGE) {
            msg[MAX_MESSAGE] = '\0';
        }
        outcome(p, CTL_STATE_PENDING, CTL_REASON_PREREQUISITE_NOT_MET, msg);
        set_operation(p, "waiting for prerequisite %s (condition %s)", what, type);
        p->requeue_after = ctl_backoff_next(p->env->backoff, p->key, "PrerequisiteNotMet");
        free(msg);
        free(what);
        free(currently);
        return 1;
    }
    return 0;
}

/* The inventory the apply engine reads and rewrites (an empty one when there is none yet). */
static struct json_object *inventory_of(pass *p)
{
    if (!p->inventory) {
        p->inventory = json_object_new_array();
    }
    return p->inventory;
}

/* Render and apply (docs/behaviour.md, "Reconcile steps", step 9, items 4–6). */
static void apply_step(pass *p, const char *owner_id)
{
    if (!p->env->apply.apply) {
        fail(p, CO_EUNSUPPORTED, false, 0,
             "error reconciling dependent resources: no apply engine in this build");
        return;
    }
    if (!p->have_art || !p->env->source.fetch) {
        fail(p, CO_EUNSUPPORTED, false, 0, "error generating manifests: no source available");
        return;
    }
    char *dir = NULL;
    void *hold = NULL;
    co_error_clear();
    int rc = p->env->source.fetch(p->env->source.ctx, p->c, &p->art, &dir, &hold);
    if (rc < 0) {
        fail(p, rc, false, 0, "error generating manifests: %s", co_error_last());
        return;
    }
    struct json_object *objects = NULL;
    co_error_clear();
    char *root = NULL;
    if (p->env->source.root && p->env->source.root(p->env->source.ctx, hold, &root) < 0) {
        co_error_clear();
        root = NULL;
    }
    ctl_render_request rq = {0};
    rq.dir = dir;
    rq.root = root;
    rq.component = p->c;
    rq.object = p->obj;
    rq.values = p->values;
    rq.component_digest = p->digest;
    rq.revision = p->st->revision;
    rq.local = p->env->client;
    rq.target = p->target;
    rq.remote = p->kubeconfig != NULL;
    rq.local_lookups = p->local_lookups;
    rq.confine_local = p->user == NULL;
    rq.confine_target = p->user == NULL && p->kubeconfig == NULL;
    rq.grants = p->perm.grants;
    rq.kubeconfig_denied_by = p->perm.kubeconfig_denied_by;
    rc = ctl_render_component(&objects, &rq);
    if (p->env->source.release) {
        p->env->source.release(p->env->source.ctx, hold);
    }
    free(dir);
    free(root);
    if (rc < 0) {
        fail(p, rc, false, 0, "error generating manifests: %s", co_error_last());
        return;
    }
    if (refuse_nested(p, objects) < 0) {
        json_object_put(objects);
        return;
    }
    ctl_apply_opts o;
    ctl_apply_stats stats = {0};
    bool done = false, changed = false;
    char *blocked = NULL;
    fill_apply_opts(p, &o, owner_id, &stats, &changed);
    o.blocked = &blocked;
    co_error_clear();
    rc = p->env->apply.apply(p->env->apply.ctx, &o, inventory_of(p), objects, &done);
    report_operations(p, &stats);
    drift_step(p);
    note_auxiliary(p, objects);
    json_object_put(objects);
    if (rc < 0) {
        free(blocked);
        fail(p, rc, false, 0, "error reconciling dependent resources: %s", co_error_last());
        return;
    }
    co_component_status *st = p->st;
    if (done) {
        /* lastAppliedAt moves when something was applied: a pass that finds everything as
         * it was leaves the status as it was, and so writes none */
        bool wrote = stats.creates + stats.updates + stats.deletes > 0;
        bool same = st->last_applied_at && st->applied_generation == p->c->generation &&
                    same_str(st->last_applied_digest, st->last_attempted_digest) &&
                    same_str(st->last_applied_revision, st->last_attempted_revision);
        if (wrote || changed || !same) {
            set_time(&st->last_applied_at, p->now);
        }
        set_text(&st->last_applied_digest, st->last_attempted_digest);
        set_text(&st->last_applied_revision, st->last_attempted_revision);
        st->applied_generation = p->c->generation;
        outcome(p, CTL_STATE_READY, CTL_REASON_READY, CTL_MSG_READY);
        p->requeue_after = p->requeue_ns;
        size_t n = json_object_array_length(p->inventory);
        set_operation(p, "applied revision %lld (%zu object%s)", (long long)st->revision, n,
                      n == 1 ? "" : "s");
        p->health_seen = true;
        all_ready_step(p);
    } else {
        p->health_seen = true;
        if (grace_step(p)) {
            return;
        }
        /* a new digest, or never Ready yet: processing, as without a grace period */
        set_text(&st->unready_since, NULL);
        if (changed) {
            ctl_backoff_forget(p->env->backoff, p->key);
        }
        if (!st->processing_since) {
            set_time(&st->processing_since, p->now);
        }
        if (blocked) {
            /* a guard holds the rest back (docs/lifecycle.md, "Guards") */
            char *msg = ctl_capitalise(blocked);
            outcome(p, CTL_STATE_PROCESSING, CTL_REASON_BLOCKED, msg);
            free(msg);
        } else {
            outcome(p, CTL_STATE_PROCESSING, CTL_REASON_PROCESSING, CTL_MSG_PROCESSING);
        }
        p->requeue_after = ctl_backoff_next(p->env->backoff, p->key, "Processing");
    }
    free(blocked);
}

/* The dependants gate: Components that list this one as a dependency keep its objects (its
 * deletion, its disabling wait for them). *blocker names them ("depending component ns/x", "...
 * (and 2 others)"; free()) or stays NULL; an error means they cannot be known, which must not
 * take anything away from under one of them either. */
static int blocking_dependants(pass *p, char **blocker)
{
    *blocker = NULL;
    if (!p->env->cache.dependants) {
        return 0;
    }
    co_kube_keys keys = {0};
    co_error_clear();
    int rc = p->env->cache.dependants(p->env->cache.ctx, p->key, &keys);
    if (rc == 0 && keys.len == 1) {
        *blocker = co_xasprintf("depending component %s", keys.items[0]);
    } else if (rc == 0 && keys.len > 1) {
        *blocker =
            co_xasprintf("depending component %s (and %zu others)", keys.items[0], keys.len - 1);
    }
    co_kube_keys_dispose(&keys);
    return rc;
}

/* docs/behaviour.md, "Reconcile steps", step 10: the dependants gate, then "Component deletion". */
static void delete_step(pass *p, const char *owner_id)
{
    char *blocker = NULL;
    int grc = blocking_dependants(p, &blocker);
    if (grc < 0) {
        fail(p, grc, true, 0, "error running pre-delete hook (0): %s", co_error_last());
        return;
    }
    if (blocker) {
        fail(p, CO_ECONFLICT, true, 0, "error running pre-delete hook (0): deletion blocked by %s",
             blocker);
        free(blocker);
        return;
    }
    if (!p->env->apply.delete_all || !p->env->apply.deletion_allowed) {
        fail(p, CO_EUNSUPPORTED, false, 0,
             "error deleting dependent resources: no apply engine in this build");
        return;
    }
    ctl_apply_opts o;
    ctl_apply_stats stats = {0};
    bool done = false, changed = false;
    fill_apply_opts(p, &o, owner_id, &stats, &changed);
    struct json_object *inv = inventory_of(p);
    bool allowed = false;
    char *why = NULL;
    co_error_clear();
    int rc = p->env->apply.deletion_allowed(p->env->apply.ctx, &o, inv, &allowed, &why);
    report_operations(p, &stats);
    stats = (ctl_apply_stats){0};
    if (rc < 0) {
        free(why);
        fail(p, rc, false, 0, "error checking whether deletion is possible: %s", co_error_last());
        return;
    }
    if (!allowed) {
        char *msg = co_xasprintf("Deletion blocked: %s", why ? why : "");
        outcome(p, CTL_STATE_DELETING, CTL_REASON_DELETION_BLOCKED, msg);
        free(msg);
        free(why);
        p->requeue_after = CO_SECOND + ctl_backoff_next(p->env->backoff, p->key, "DeletionBlocked");
        return;
    }
    free(why);
    bool ours = co_component_has_finalizer(p->c, CTL_RECONCILER_NAME);
    if (has_foreign_finalizer(p->c)) {
        outcome(p, CTL_STATE_DELETING, CTL_REASON_DELETION_BLOCKED, CTL_MSG_FOREIGN_FIN);
        p->requeue_after = CO_SECOND + ctl_backoff_next(p->env->backoff, p->key, "DeletionBlocked");
        return;
    }
    co_error_clear();
    rc = p->env->apply.delete_all(p->env->apply.ctx, &o, inv, &done);
    report_operations(p, &stats);
    if (rc < 0) {
        fail(p, rc, false, 0, "error deleting dependent resources: %s", co_error_last());
        return;
    }
    if (done) {
        if (ours) {
            rc = patch_finalizer(p, false);
            if (rc < 0 && rc != CO_ENOTFOUND) {
                fail(p, rc, false, 0, "error removing finalizer: %s", co_error_last());
                return;
            }
        }
        p->skip_status = true;
        p->gone = true;
        return;
    }
    if (changed) {
        ctl_backoff_forget(p->env->backoff, p->key);
    }
    outcome(p, CTL_STATE_DELETING, CTL_REASON_DELETION_PROCESSING, CTL_MSG_DELETION_PROCESSING);
    p->requeue_after = ctl_backoff_next(p->env->backoff, p->key, "DeletionProcessing");
}

/* ---- the reconcile ----------------------------------------------------------------------- */

/* A Component being deleted is not judged by the policies, but what they grant (an http://
 * kubeconfig server) still reaches its target; without the policies nothing is granted. */
static void deletion_grants(pass *p)
{
    char *deny = NULL;
    if (p->env->cache.policy_check &&
        p->env->cache.policy_check(p->env->cache.ctx, p->obj, &deny, &p->perm) < 0) {
        co_error_clear();
    }
    free(deny);
}

/* The webhook's validation, again: a Component that reached the store without it (failurePolicy
 * Ignore, a namespace the webhook configuration excludes, a webhook that was down) is refused
 * here with the same messages. Unknown fields are left to the API server's pruning. */
static int validate_spec(pass *p)
{
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    if (co_component_validate(&errs, p->obj, p->ns, CO_COMPONENT_ALLOW_UNKNOWN_FIELDS) == 0) {
        co_field_errors_dispose(&errs);
        return 0;
    }
    co_buf msg = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    if (co_field_errors_format(&msg, &errs) < 0) {
        co_buf_reset(&msg);
        (void)!co_buf_puts(&msg, "too many errors");
    }
    fail(p, CO_EINVALID, false, 0, "invalid component: %s", co_buf_cstr(&msg));
    p->err_reason = CTL_REASON_INVALID_SPEC;
    co_buf_dispose(&msg);
    co_field_errors_dispose(&errs);
    return CO_EINVALID;
}

/* docs/webhook-and-certs.md, "ComponentPolicy": the rules again, and what they grant. A policy
 * that cannot be evaluated fails the pass; it never admits. */
static int check_policies(pass *p)
{
    ctl_env *env = p->env;
    if (!env->cache.policy_check) {
        return 0;
    }
    char *deny = NULL;
    co_error_clear();
    int rc = env->cache.policy_check(env->cache.ctx, p->obj, &deny, &p->perm);
    if (rc == 0 && deny) {
        p->policy_warning = deny;
        deny = NULL;
    } else if (rc == CO_EINVALID) {
        fail(p, CO_EINVALID, false, 0, "policy violation: %s", deny ? deny : "denied");
        p->err_reason = CTL_REASON_POLICY_VIOLATION;
    } else if (rc < 0) {
        fail(p, rc, false, 0, "error evaluating ComponentPolicies: %s", co_error_last());
    }
    free(deny);
    return rc;
}

/* DependencyCycle: the cycle as the Component's owner may read it (the status is read by
 * whoever may read the Component, not the cycle's namespaces). */
static void fail_cycle(pass *p, const char *cycle)
{
    co_depgraph_list deps = {NULL, 0};
    if (co_depgraph_component_deps(&deps, p->c) < 0) {
        co_error_clear();
    }
    char *shown = co_depgraph_redact_path(cycle, p->key, (const char *const *)deps.items, deps.len);
    co_depgraph_list_dispose(&deps);
    fail(p, CO_ECONFLICT, false, 0, "dependency cycle: %s", shown);
    p->err_reason = CTL_REASON_DEPENDENCY_CYCLE;
    free(shown);
}

/* The digest of the references (docs/behaviour.md, "Component digest") and what follows from
 * it: a changed digest restarts the processing, a pinned digest or revision must match the
 * artifact (docs/behaviour.md, "Pinning"). */
static int digest_step(pass *p)
{
    co_component_status *st = p->st;
    struct json_object *refs = json_object_new_object();
    int rc = load_references(p, refs);
    if (rc == 0) {
        rc = component_digest(p, refs);
    }
    json_object_put(refs);
    if (rc < 0) {
        return rc;
    }
    if (p->deleting) {
        set_text(&st->processing_since, NULL);
        set_text(&st->processing_digest, NULL);
        return 0;
    }
    if (!st->processing_digest || !*st->processing_digest) {
        set_text(&st->processing_digest, p->digest);
    } else if (strcmp(st->processing_digest, p->digest) != 0) {
        /* a new processing cycle, in this same pass */
        set_text(&st->processing_digest, p->digest);
        set_text(&st->processing_since, NULL);
        ctl_backoff_forget(p->env->backoff, p->key);
    }
    /* post-read hook: pinning (docs/behaviour.md, "Pinning") */
    const char *pin_d = p->c->spec.digest;
    const char *pin_r = p->c->spec.revision;
    if (pin_d && *pin_d && p->art.digest && strcmp(pin_d, p->art.digest) != 0) {
        fail(p, CO_ECONFLICT, true, CTL_RETRY_REFERENCE_NS,
             "error running post-read hook (0): source digest (%s) does not match specified "
             "digest (%s)",
             p->art.digest, pin_d);
        return CO_ECONFLICT;
    }
    if (pin_r && *pin_r && p->art.revision && strcmp(pin_r, p->art.revision) != 0) {
        fail(p, CO_ECONFLICT, true, CTL_RETRY_REFERENCE_NS,
             "error running post-read hook (0): source revision (%s) does not match "
             "specified revision (%s)",
             p->art.revision, pin_r);
        return CO_ECONFLICT;
    }
    return 0;
}

/* The revision counter (status.revision, 1 = install) and the attempt of this pass. */
static void record_attempt(pass *p)
{
    co_component_status *st = p->st;
    if (st->revision == 0 && st->last_applied_at) {
        st->revision = 1;
    }
    if (!st->last_processing_digest ||
        strcmp(st->processing_digest, st->last_processing_digest) != 0) {
        st->revision++;
        set_text(&st->last_processing_digest, st->processing_digest);
    }
    if (p->have_art) {
        set_text(&st->last_attempted_digest, p->art.digest);
        set_text(&st->last_attempted_revision, p->art.revision);
    }
}

/* A ScaleDown suspension (docs/lifecycle.md, "Suspension that scales down"): the workloads of
 * the inventory are scaled down in the target cluster; nothing is rendered or applied. */
static void suspend_step(pass *p)
{
    if (!p->env->apply.suspend) {
        fail(p, CO_EUNSUPPORTED, false, 0,
             "error suspending dependent resources: no apply engine in this build");
        return;
    }
    if (load_kubeconfig(p, NULL) < 0 || acquire_target(p) < 0) {
        return;
    }
    char *owner_id = ctl_owner_id(p->env->cluster_id, p->ns, p->name);
    ctl_apply_opts o;
    ctl_apply_stats stats = {0};
    bool changed = false;
    fill_apply_opts(p, &o, owner_id, &stats, &changed);
    ctl_suspension phase = CTL_SUSPENSION_PENDING;
    char *left = NULL;
    co_error_clear();
    int rc = p->env->apply.suspend(p->env->apply.ctx, &o, inventory_of(p), &phase, &left);
    report_operations(p, &stats);
    free(owner_id);
    if (rc < 0) {
        fail(p, rc, false, 0, "error suspending dependent resources: %s", co_error_last());
        return;
    }
    if (phase == CTL_SUSPENSION_SUSPENDED) {
        outcome(p, CTL_STATE_PENDING, CTL_REASON_SUSPENDED,
                "Reconciliation is suspended; workloads are scaled down");
    } else {
        char *msg = ctl_capitalise(left ? left : "");
        outcome(p, CTL_STATE_PENDING,
                phase == CTL_SUSPENSION_SUSPENDING ? CTL_REASON_SUSPENDING
                                                   : CTL_REASON_PENDING_SUSPENSION,
                msg);
        free(msg);
    }
    free(left);
    /* down: checked again after the requeue interval, as a Ready Component is */
    p->requeue_after = phase == CTL_SUSPENSION_SUSPENDED
                           ? p->requeue_ns
                           : ctl_backoff_next(p->env->backoff, p->key, p->reason);
}

/* ---- lifecycle switches (docs/lifecycle.md, "Disabled", "Unmanaged", "Skip reconciliation") */

#define MSG_DISABLED  "Component is disabled"
#define MSG_DISABLING "Component is disabled; waiting until dependent resources are deleted"
#define MSG_UNMANAGED "Component is not managed; its dependent resources were released"
#define MSG_RELEASING "Component is not managed; releasing dependent resources"

/* Whether the Component has dependents recorded (an absent inventory stays absent). */
static bool has_dependents(const pass *p)
{
    return p->inventory && json_object_array_length(p->inventory) > 0;
}

/* What a Component that renders nothing still needs to reach its dependents: the kubeConfig
 * Secret and its identity; neither the source nor the values, whose absence is then no error.
 * Nothing is being processed. */
static int target_only(pass *p)
{
    set_text(&p->st->processing_since, NULL);
    set_text(&p->st->processing_digest, NULL);
    int rc = load_kubeconfig(p, NULL);
    return rc < 0 ? rc : acquire_target(p);
}

/* spec.enabled: false — the dependents go as on deletion (dependants gate, deletion guard,
 * delete policies and waves), the Component and its finalizer stay. Reason Disabled
 * throughout: Pending while dependants block, Processing while objects go, Ready once none is
 * left. */
static void disable_step(pass *p)
{
    if (validate_spec(p) < 0 || check_policies(p) < 0) {
        return;
    }
    if (!has_dependents(p)) {
        set_text(&p->st->processing_since, NULL);
        set_text(&p->st->processing_digest, NULL);
        outcome(p, CTL_STATE_READY, CTL_REASON_DISABLED, MSG_DISABLED);
        p->requeue_after = p->requeue_ns;
        return;
    }
    char *blocker = NULL;
    int rc = blocking_dependants(p, &blocker);
    if (rc < 0) {
        fail(p, rc, true, 0, "error running pre-disable hook: %s", co_error_last());
        return;
    }
    if (blocker) {
        char *msg = co_xasprintf("Disabling blocked by %s", blocker);
        outcome(p, CTL_STATE_PENDING, CTL_REASON_DISABLED, msg);
        free(msg);
        free(blocker);
        p->requeue_after = p->retry_ns;
        return;
    }
    if (!p->env->apply.delete_all || !p->env->apply.deletion_allowed) {
        fail(p, CO_EUNSUPPORTED, false, 0,
             "error deleting dependent resources: no apply engine in this build");
        return;
    }
    if (target_only(p) < 0) {
        return;
    }
    char *owner_id = ctl_owner_id(p->env->cluster_id, p->ns, p->name);
    ctl_apply_opts o;
    ctl_apply_stats stats = {0};
    bool done = false, changed = false, allowed = false;
    fill_apply_opts(p, &o, owner_id, &stats, &changed);
    char *why = NULL;
    co_error_clear();
    rc = p->env->apply.deletion_allowed(p->env->apply.ctx, &o, p->inventory, &allowed, &why);
    if (rc == 0 && allowed) {
        co_error_clear();
        rc = p->env->apply.delete_all(p->env->apply.ctx, &o, p->inventory, &done);
    }
    report_operations(p, &stats);
    free(owner_id);
    if (rc < 0) {
        fail(p, rc, false, 0, "error deleting dependent resources: %s", co_error_last());
    } else if (!allowed) {
        char *msg = co_xasprintf("Disabling blocked: %s", why ? why : "");
        outcome(p, CTL_STATE_PROCESSING, CTL_REASON_DISABLED, msg);
        free(msg);
        p->requeue_after = CO_SECOND + ctl_backoff_next(p->env->backoff, p->key, "Disabling");
    } else if (done) {
        outcome(p, CTL_STATE_READY, CTL_REASON_DISABLED, MSG_DISABLED);
        p->requeue_after = p->requeue_ns;
    } else {
        if (changed) {
            ctl_backoff_forget(p->env->backoff, p->key);
        }
        outcome(p, CTL_STATE_PROCESSING, CTL_REASON_DISABLED, MSG_DISABLING);
        p->requeue_after = ctl_backoff_next(p->env->backoff, p->key, "Disabling");
    }
    free(why);
}

/* Releases what the inventory names (ctl_apply_release()); *done once it is empty. */
static int release_dependents(pass *p, bool *done)
{
    *done = !has_dependents(p);
    if (*done) {
        return 0;
    }
    if (!p->env->apply.release) {
        fail(p, CO_EUNSUPPORTED, false, 0,
             "error releasing dependent resources: no apply engine in this build");
        return CO_EUNSUPPORTED;
    }
    int rc = target_only(p);
    if (rc < 0) {
        return rc;
    }
    char *owner_id = ctl_owner_id(p->env->cluster_id, p->ns, p->name);
    ctl_apply_opts o;
    ctl_apply_stats stats = {0};
    bool changed = false;
    fill_apply_opts(p, &o, owner_id, &stats, &changed);
    co_error_clear();
    rc = p->env->apply.release(p->env->apply.ctx, &o, p->inventory, done);
    report_operations(p, &stats);
    free(owner_id);
    if (rc < 0) {
        fail(p, rc, false, 0, "error releasing dependent resources: %s", co_error_last());
    }
    return rc;
}

/* spec.managed: false — the dependents are released (they stay as they are, without our
 * marks) and the inventory is emptied; afterwards a pass renders and applies nothing and reads
 * nothing but the Component. */
static void unmanage_step(pass *p)
{
    if (validate_spec(p) < 0 || check_policies(p) < 0) {
        return;
    }
    set_text(&p->st->processing_since, NULL);
    set_text(&p->st->processing_digest, NULL);
    bool done = false;
    if (release_dependents(p, &done) < 0) {
        return;
    }
    if (!done) {
        /* the controller stops: the rest on the next pass */
        outcome(p, CTL_STATE_PROCESSING, CTL_REASON_UNMANAGED, MSG_RELEASING);
        p->requeue_after = ctl_backoff_next(p->env->backoff, p->key, "Releasing");
        return;
    }
    outcome(p, CTL_STATE_UNMANAGED, CTL_REASON_UNMANAGED, MSG_UNMANAGED);
    p->requeue_after = 0;
}

/* Deletion of an unmanaged Component deletes no dependent: whatever is still recorded is
 * released, then the finalizer goes. */
static void unmanaged_deletion(pass *p)
{
    deletion_grants(p);
    bool done = false;
    if (release_dependents(p, &done) < 0) {
        return;
    }
    if (!done) {
        outcome(p, CTL_STATE_DELETING, CTL_REASON_DELETION_PROCESSING, MSG_RELEASING);
        p->requeue_after = ctl_backoff_next(p->env->backoff, p->key, "Releasing");
        return;
    }
    if (co_component_has_finalizer(p->c, CTL_RECONCILER_NAME)) {
        int rc = patch_finalizer(p, false);
        if (rc < 0 && rc != CO_ENOTFOUND) {
            fail(p, rc, false, 0, "error removing finalizer: %s", co_error_last());
            return;
        }
    }
    p->skip_status = true;
    p->gone = true;
}

/* Disabled, then Unmanaged, take the pass over (before suspension, which they outrank); a
 * Component being deleted is deleted as always, unless it is unmanaged and not disabled.
 * Returns whether the pass was taken. */
static bool lifecycle_switches(pass *p)
{
    const co_component *c = p->c;
    bool enabled = co_component_enabled(c), managed = co_component_managed(c);
    if (p->deleting) {
        if (enabled && !managed) {
            unmanaged_deletion(p);
            return true;
        }
        return false;
    }
    if (!enabled) {
        disable_step(p);
        return true;
    }
    if (!managed) {
        unmanage_step(p);
        return true;
    }
    return false;
}

/* The skip-reconciliation label (docs/lifecycle.md, "Skip reconciliation"): a labelled
 * Component is left exactly as it is, its deletion included, until the label goes. Removing it
 * is an update the informer delivers, so nothing is requeued. The observer hears of every pass,
 * skipped or not (the metric, and the event sent once). */
static bool skip_reconciliation(pass *p, ctl_result *out)
{
    bool skip = co_component_skip_reconciliation(p->c);
    if (p->env->observer.skipped) {
        p->env->observer.skipped(p->env->observer.ctx, p->c, p->obj, skip);
    }
    if (!skip) {
        return false;
    }
    co_log(CO_LOG_DEBUG, "reconciliation skipped", "component", p->ns, "name", p->name, NULL);
    ctl_backoff_forget(p->env->backoff, p->key);
    out->forget = true;
    return true;
}

static void run(pass *p)
{
    ctl_env *env = p->env;
    const co_component *c = p->c;
    p->requeue_ns = co_component_requeue_ns(c);
    p->retry_ns = co_component_retry_ns(c);
    p->timeout_ns = co_component_timeout_ns(c);
    if (lifecycle_switches(p)) {
        return;
    }
    bool scale_down = !p->deleting && c->spec.suspend &&
                      co_component_suspend_mode(c) == CO_SUSPEND_MODE_SCALE_DOWN;
    if (!p->deleting && c->spec.suspend && !scale_down) {
        outcome(p, CTL_STATE_PENDING, CTL_REASON_SUSPENDED, CTL_MSG_SUSPENDED);
        p->requeue_after = ctl_backoff_next(env->backoff, p->key, "Suspended");
        return;
    }

    /* nothing the Component names is read, fetched or impersonated before it passed the
     * webhook's checks and the policies (a webhook can be bypassed) */
    if (!p->deleting && (validate_spec(p) < 0 || check_policies(p) < 0)) {
        return;
    }
    if (scale_down) {
        suspend_step(p);
        return;
    }
    if (p->deleting) {
        deletion_grants(p);
    }
    if (digest_step(p) < 0 || acquire_target(p) < 0) {
        return;
    }
    char *owner_id = ctl_owner_id(env->cluster_id, p->ns, p->name);
    if (p->deleting) {
        delete_step(p, owner_id);
        free(owner_id);
        return;
    }
    /* the pass goes on with the patched object: the finalizer is in place before anything
     * is created */
    if (!co_component_has_finalizer(c, CTL_RECONCILER_NAME)) {
        int rc = patch_finalizer(p, true);
        if (rc < 0) {
            fail(p, rc, false, 0, "error adding finalizer: %s", co_error_last());
            free(owner_id);
            return;
        }
    }
    /* one-time prerequisites, before the attempt is recorded and before any gate */
    if (prerequisites_step(p)) {
        free(owner_id);
        return;
    }
    /* pre-reconcile hooks: record the attempt, then the gates */
    record_attempt(p);
    char *cycle = NULL;
    if (env->cache.cycle_of && env->cache.cycle_of(env->cache.ctx, p->key, &cycle) == 0) {
        fail_cycle(p, cycle);
        free(cycle);
    } else if (check_dependencies(p) == 0) {
        apply_step(p, owner_id);
    }
    free(owner_id);
}

/* What the pass found before it changed anything (docs/lifecycle.md, "Grace period and
 * Degraded"): the digest last processed and whether the Component was Ready at it. */
static void lifecycle_begin(pass *p)
{
    const co_component_status *st = p->st;
    p->read_digest = st->processing_digest ? co_xstrdup(st->processing_digest) : NULL;
    const char *state = st->state ? st->state : "";
    p->was_ready = strcmp(state, CTL_STATE_READY) == 0 || strcmp(state, CTL_STATE_WARNING) == 0 ||
                   (st->unready_since && *st->unready_since);
}

/* A copy of @p msg with its first letter lower-cased ASCII-wise. */
static char *decapitalise(const char *msg)
{
    char *s = co_xstrdup(msg ? msg : "");
    if (s[0] >= 'A' && s[0] <= 'Z') {
        s[0] = (char)(s[0] - 'A' + 'a');
    }
    return s;
}

/* docs/lifecycle.md, "Last operation": what the pass did, in one line. It must read the same
 * on every pass that changes nothing, so that such a pass still writes no status. */
static void last_operation(pass *p)
{
    char *op = NULL;
    if (p->err) {
        op = co_xasprintf("error: %.512s", p->message ? p->message : "");
    } else if (p->operation) {
        op = co_xstrdup(p->operation);
    } else if (!p->state) {
        return;
    } else if (strcmp(p->reason, CTL_REASON_PROCESSING) == 0) {
        readiness r;
        judge_dependents(p, &r);
        /* none unready: obsolete objects are being removed, or the pass was stopped */
        op = r.unready ? co_xasprintf("waiting for %zu dependent%s to become ready", r.unready,
                                      r.unready == 1 ? "" : "s")
                       : co_xasprintf("processing revision %lld", (long long)p->st->revision);
        readiness_dispose(&r);
    } else if (strcmp(p->reason, CTL_REASON_DELETION_PROCESSING) == 0) {
        size_t n = p->inventory ? json_object_array_length(p->inventory) : 0;
        op = co_xasprintf("deleting %zu dependent%s", n, n == 1 ? "" : "s");
    } else {
        op = decapitalise(p->message);
    }
    co_component_status *st = p->st;
    if (!st->last_operation || strcmp(st->last_operation, op) != 0 || !st->last_operation_time) {
        free(st->last_operation);
        st->last_operation = op;
        set_time(&st->last_operation_time, p->now);
    } else {
        free(op);
    }
}

/* The end of the pass for the lifecycle controls: the Degraded condition, one Ready reason
 * chosen by priority among what applies at once (docs/lifecycle.md, "One reason, chosen by
 * priority"), and status.lastOperation. Runs after the errors were mapped to states. */
static void lifecycle_finally(pass *p, ctl_result *out)
{
    co_component_status *st = p->st;
    last_operation(p);
    /* deleted, disabled or released: no dependent is judged any more, so a Degraded found
     * before does not outlive it */
    if (p->deleting || !co_component_enabled(p->c) || !co_component_managed(p->c)) {
        set_text(&st->unready_since, NULL);
        ctl_condition_remove(st, CTL_CONDITION_DEGRADED);
        ctl_condition_remove(st, CTL_CONDITION_DRIFTED);
        return;
    }
    if (p->health_seen) {
        if (p->degraded) {
            ctl_condition_put(st, CTL_CONDITION_DEGRADED, "True", p->reason, p->message, p->now);
        } else {
            ctl_condition_remove(st, CTL_CONDITION_DEGRADED);
        }
    }
    if (!p->state) {
        return;
    }
    ctl_candidate cand[3];
    size_t n = 0;
    cand[n++] = (ctl_candidate){p->state, p->reason, p->message};
    /* a pass that did not look at the dependents (suspended, failed before) keeps what the
     * last one found */
    const co_condition *deg = ctl_condition_find(st, CTL_CONDITION_DEGRADED);
    if (!p->health_seen && deg && deg->status && strcmp(deg->status, "True") == 0 && deg->reason) {
        bool down = strcmp(deg->reason, CTL_REASON_DOWN) == 0;
        cand[n++] = (ctl_candidate){down ? CTL_STATE_ERROR : CTL_STATE_WARNING,
                                    down ? CTL_REASON_DOWN : CTL_REASON_DEGRADED, deg->message};
    }
    char *warned = NULL;
    if (p->policy_warning) {
        warned = co_xasprintf("%s, with a ComponentPolicy warning: %.2048s", CTL_MSG_READY,
                              p->policy_warning);
        cand[n++] = (ctl_candidate){CTL_STATE_WARNING, CTL_REASON_POLICY_WARNING, warned};
    }
    size_t k = ctl_candidate_pick(cand, n);
    if (k > 0) {
        outcome(p, cand[k].state, cand[k].reason, cand[k].message);
    }
    free(warned);
    /* working, needing attention, or down after having been Ready: no processing cycle runs */
    if (!p->err &&
        (strcmp(p->state, CTL_STATE_WARNING) == 0 || strcmp(p->reason, CTL_REASON_DOWN) == 0)) {
        ctl_backoff_forget(p->env->backoff, p->key);
        out->forget = true;
        set_text(&st->processing_since, NULL);
    }
}

/* Ends a pass whose object does not parse (JSON types the schema should have refused): there
 * is no model to build a status in, so the outcome goes to the log only, and only an edit of
 * the object can change it. */
static void unparsable(pass *p, ctl_result *out)
{
    fail(p, CO_EINVALID, false, 0, "invalid component: %s", co_error_last());
    co_log(CO_LOG_WARN, "reconcile failed", "component", p->ns, "name", p->name, "reason",
           CTL_REASON_INVALID_SPEC, "message", p->message, NULL);
    out->forget = true;
}

/* How many inventory items there are, and how many of them are neither Ready nor Completed. */
static void count_dependents(const struct json_object *inventory, size_t *n, size_t *unready)
{
    *n = inventory ? json_object_array_length(inventory) : 0;
    *unready = 0;
    for (size_t i = 0; i < *n; i++) {
        const char *ph = NULL;
        if (co_json_get_string(&ph, json_object_array_get_idx(inventory, i), "phase", NULL) < 0) {
            co_error_clear();
        }
        if (!ph || (strcmp(ph, "Ready") != 0 && strcmp(ph, "Completed") != 0)) {
            (*unready)++;
        }
    }
}

/* How many inventory items carry a drift record (docs/drift.md, "Reporting"): also after a
 * pass that did not apply, so that the gauge follows the condition. */
static size_t count_drifted(const struct json_object *inventory)
{
    size_t n = inventory ? json_object_array_length(inventory) : 0, k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *d = co_json_str(json_object_array_get_idx(inventory, i), "drift", NULL);
        k += d && *d;
    }
    return k;
}

static void report_outcome(pass *p)
{
    if (!p->env->observer.outcome || !p->c) {
        return;
    }
    const co_condition *ready = p->st->n_conditions ? &p->st->conditions[0] : NULL;
    ctl_outcome o = {0};
    o.component = p->c;
    o.object = p->obj;
    o.component_digest = p->digest ? p->digest : "";
    o.state = p->st->state ? p->st->state : "";
    o.reason = ready && ready->reason ? ready->reason : "";
    o.message = p->message ? p->message : "";
    o.error_code = p->retriable ? 0 : p->err;
    count_dependents(p->inventory, &o.dependents, &o.unready);
    o.drifted = count_drifted(p->inventory);
    o.drift_change = p->drift_change;
    o.held = p->held;
    p->env->observer.outcome(p->env->observer.ctx, &o);
}

/* The Component: from the cache when it holds what this controller last wrote, else from the
 * API server. */
static int read_component(ctl_env *env, const char *ns, const char *name, struct json_object **out)
{
    if (env->cache.read) {
        int rc = env->cache.read(env->cache.ctx, ns, name, out);
        if (rc != CO_ENOTFOUND) {
            return rc;
        }
        co_error_clear();
    }
    co_kube_ref ref = {CO_COMPONENT_V1ALPHA1, CO_COMPONENT_KIND, ns, name};
    return co_kube_get(out, env->client, &ref, NULL);
}

/* Whether the status this pass built may be held back instead of written (ctl_pending.h): the
 * pass ends waiting for its objects (Processing, no error) in the very state and conditions
 * the stored status shows, so that neither a reader of the status nor the event of this pass
 * (one per state reached) is ahead of what is stored; and it did not start from a held status
 * itself, so a status is held for one pass at most. Never once the controller stops. */
static bool may_hold(const pass *p, struct json_object *built)
{
    if (!p->env->pending || p->from_pending || p->err || p->deleting || !p->state ||
        strcmp(p->state, CTL_STATE_PROCESSING) != 0 ||
        (p->env->proceed && !atomic_load(p->env->proceed))) {
        return false;
    }
    struct json_object *stored = co_json_get(p->obj, "status", NULL);
    struct json_object *a = co_json_get(stored, "state", NULL);
    struct json_object *b = co_json_get(built, "state", NULL);
    struct json_object *ca = co_json_get(stored, "conditions", NULL);
    struct json_object *cb = co_json_get(built, "conditions", NULL);
    return a && b && ca && cb && co_json_equal(a, b) && co_json_equal(ca, cb);
}

/* Starts the pass from the status held back for it, when one was held over the object as read
 * (its resourceVersion): the held status, not the stored one, says what the last pass did. */
static void take_held(pass *p)
{
    if (!p->env->pending) {
        return;
    }
    const char *rv = co_json_str(p->obj, "metadata", "resourceVersion", NULL);
    struct json_object *held = ctl_pending_take(p->env->pending, p->key, rv);
    if (held) {
        p->stored_status = json_object_get(co_json_get(p->obj, "status", NULL));
        p->obj_status_held = true;
        json_object_object_add(p->obj, "status", held);
        p->from_pending = true;
    }
}

/* Tells the cache what this pass wrote, or that the Component is gone. */
static void record_writes(pass *p)
{
    if (!p->env->cache.wrote) {
        return;
    }
    if (p->gone) {
        p->env->cache.wrote(p->env->cache.ctx, p->ns, p->name, NULL);
    } else if (p->wrote) {
        p->env->cache.wrote(p->env->cache.ctx, p->ns, p->name, p->obj);
    }
}

int ctl_reconcile(ctl_result *out, ctl_env *env, const char *ns, const char *name)
{
    memset(out, 0, sizeof(*out));
    pass pp = {0};
    pass *p = &pp;
    p->env = env;
    p->ns = ns;
    p->name = name;
    p->key = co_xasprintf("%s/%s", ns, name);
    int rc = read_component(env, ns, name, &p->obj);
    if (rc == CO_ENOTFOUND) {
        if (env->cache.wrote) {
            env->cache.wrote(env->cache.ctx, ns, name, NULL);
        }
        if (env->pending) {
            ctl_pending_drop(env->pending, p->key);
        }
        ctl_backoff_forget(env->backoff, p->key);
        if (env->observer.gone) {
            env->observer.gone(env->observer.ctx, ns, name);
        }
        out->forget = true;
        free(p->key);
        return 0;
    }
    if (rc < 0) {
        out->rate_limited = true;
        free(p->key);
        return co_error_wrap("reading component %s/%s", ns, name);
    }
    take_held(p);
    p->now = now_ns(env);
    if (co_component_parse(&p->c, p->obj) < 0) {
        unparsable(p, out);
        goto done;
    }
    p->st = &p->c->status;
    if (skip_reconciliation(p, out)) {
        goto done;
    }
    /* either form (parsing read it already, so it is readable); the engine rewrites its own
     * copy, never the stored object's list */
    struct json_object *inv = NULL;
    if (co_component_inventory_get(&inv, co_json_get(p->obj, "status", NULL)) == 0 && inv) {
        p->inventory = co_json_copy(inv);
    }
    json_object_put(inv);
    co_error_clear();
    p->deleting = p->c->deletion_timestamp != NULL;
    lifecycle_begin(p);

    run(p);

    if (env->targets.release) {
        if (p->target_hold) {
            env->targets.release(env->targets.ctx, p->target_hold);
        }
        if (p->local_lookups_hold) {
            env->targets.release(env->targets.ctx, p->local_lookups_hold);
        }
    }

    /* finally (docs/behaviour.md, "Reconcile steps", step 11) */
    if (p->gone) {
        ctl_backoff_forget(env->backoff, p->key);
        if (env->pending) {
            ctl_pending_drop(env->pending, p->key);
        }
        if (env->observer.gone) {
            env->observer.gone(env->observer.ctx, ns, name);
        }
        out->forget = true;
        goto done;
    }
    bool timed_out = processing_timed_out(p);
    if (p->err) {
        ctl_backoff_forget(env->backoff, p->key);
        if (p->retriable) {
            if (p->deleting) {
                p->state = CTL_STATE_DELETION_PENDING;
                p->reason = CTL_REASON_DELETION_RETRYING;
            } else {
                p->state = CTL_STATE_PENDING;
                p->reason = timed_out ? CTL_REASON_TIMEOUT : CTL_REASON_RETRYING;
            }
            p->requeue_after = p->err_delay > 0 ? p->err_delay : p->retry_ns;
        } else if (p->err_reason) {
            p->state = CTL_STATE_ERROR;
            p->reason = p->err_reason;
            p->requeue_after = p->retry_ns;
        } else {
            p->state = CTL_STATE_ERROR;
            p->reason = !p->deleting && timed_out ? CTL_REASON_TIMEOUT : CTL_REASON_ERROR;
            p->requeue_after = 0;
            out->rate_limited = true;
        }
    } else if (!p->deleting && p->state) {
        if (strcmp(p->state, CTL_STATE_READY) == 0) {
            ctl_backoff_forget(env->backoff, p->key);
            out->forget = true;
            set_text(&p->st->processing_since, NULL);
        } else if (strcmp(p->state, CTL_STATE_PROCESSING) == 0 &&
                   strcmp(p->reason, CTL_REASON_PROCESSING) == 0 && timed_out) {
            outcome(p, CTL_STATE_ERROR, CTL_REASON_TIMEOUT, CTL_MSG_TIMEOUT);
        }
    }
    if (!p->err) {
        out->forget = true;
    }
    lifecycle_finally(p, out);
    out->requeue_after_ns = ctl_jitter(p->requeue_after, rnd(env));
    if (p->state) {
        ctl_state_set(p->st, p->state, p->reason, p->message, p->now);
    }
    observed(p);
    /* the outcome is reported once the status says it: an event is never ahead of the status */
    struct json_object *status = p->skip_status ? NULL : status_json(p);
    if (status && !p->from_pending && status_unchanged(p, status)) {
        json_object_put(status);
        status = NULL;
    }
    if (status && may_hold(p, status) &&
        ctl_pending_put(env->pending, p->key,
                        co_json_str(p->obj, "metadata", "resourceVersion", NULL), status)) {
        p->held = true;
        if (out->requeue_after_ns <= 0 || out->requeue_after_ns > CTL_PENDING_MAX_NS) {
            out->requeue_after_ns = CTL_PENDING_MAX_NS;
        }
    } else if (status) {
        rc = write_status_json(p, status);
        if (rc < 0) {
            out->rate_limited = true;
            out->forget = false;
            rc = co_error_wrap("writing status of component %s/%s", ns, name);
        }
    }
    json_object_put(status);
    report_outcome(p);
done:
    record_writes(p);
    json_object_put(p->values);
    json_object_put(p->inventory);
    json_object_put(p->obj);
    json_object_put(p->stored_status);
    co_component_free(p->c);
    ctl_artifact_dispose(&p->art);
    free(p->kubeconfig);
    free(p->user);
    co_policy_permissions_dispose(&p->perm);
    free(p->message);
    free(p->digest);
    free(p->read_digest);
    co_kube_keys_dispose(&p->aux);
    free(p->policy_warning);
    free(p->operation);
    free(p->drift_change);
    free(p->key);
    return rc < 0 ? rc : 0;
}
