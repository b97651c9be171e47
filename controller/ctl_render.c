/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Component's render (see ctl_render.h) gathers what co_render() takes from the cluster: Secrets
 * through the local client, discovery and lookups through the target client. Helm charts and
 * templated kustomizations get the same lookup hooks, so the same identity and confinement rules.
 */
#include "controller/ctl_render.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/render/helm.h"
#include "co/json/json.h"
#include "co/kube/kube_config.h"
#include "co/api/policy.h"
#include "co/render/render.h"
#include "co/render/sops.h"
#include "co/json/yaml.h"

/* How long the target's version and discovery listing are reused without a request: a CRD
 * installed by someone else reaches .Capabilities and apiResources within this time (one this
 * controller writes at once: the apply engine expires the listing), and a busy controller
 * reads the whole listing of a cluster at most this often, where every render used to cost
 * three requests. */
#define DISCOVERY_MAX_AGE_MS 30000

static const char *non_empty(const char *s, const char *dflt)
{
    return s && *s ? s : dflt;
}

/* The keys of spec.decryption; *out stays NULL without a decryption section. */
static int load_keys(co_sops_keys **out, const ctl_render_request *req, const char *ns)
{
    const co_component_spec *spec = &req->component->spec;
    *out = NULL;
    if (!spec->has_decryption) {
        return 0;
    }
    const char *provider = spec->decryption_provider;
    if (provider && *provider && strcmp(provider, "sops") != 0) {
        return co_error_set(CO_EINVALID,
                            "spec.decryption.provider: invalid decryption provider \"%s\" "
                            "(only sops is supported)",
                            provider);
    }
    const char *secret = spec->decryption_secret_name;
    if (!secret || !*secret) {
        return co_error_set(CO_EINVALID, "spec.decryption.secretRef.name: required");
    }
    co_kube_ref ref = {"v1", "Secret", ns, secret};
    struct json_object *obj = NULL;
    int rc = co_kube_get(&obj, req->local, &ref, NULL);
    if (rc < 0) {
        return co_error_wrap("spec.decryption.secretRef: secret %s/%s", ns, secret);
    }
    co_sops_keys *keys = co_sops_keys_new();
    rc = co_sops_keys_add_secret(keys, obj);
    if (rc < 0) {
        rc = co_error_wrap("spec.decryption.secretRef: secret %s/%s", ns, secret);
    }
    json_object_put(obj);
    if (rc < 0) {
        co_sops_keys_free(keys);
        return rc;
    }
    *out = keys;
    return 0;
}

/* Adds every key of substituteFrom Secret @p name to @p vars (later Secrets win). */
static int add_variables(struct json_object *vars,
                         const ctl_render_request *req,
                         const char *ns,
                         size_t i,
                         const char *name)
{
    if (!name || !*name) {
        return co_error_set(CO_EINVALID, "spec.postBuild.substituteFrom[%zu].name: required", i);
    }
    co_kube_ref ref = {"v1", "Secret", ns, name};
    struct json_object *obj = NULL;
    int rc = co_kube_get(&obj, req->local, &ref, NULL);
    if (rc < 0) {
        return co_error_wrap("spec.postBuild.substituteFrom[%zu]: secret %s/%s", i, ns, name);
    }
    struct json_object *data = co_json_get(obj, "data", NULL);
    if (data && json_object_is_type(data, json_type_object)) {
        json_object_object_foreach (data, key, v) {
            const char *text =
                json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
            co_buf b = CO_BUF_INIT(CO_MAX_DOCUMENT);
            rc = co_base64_decode(&b, text, strlen(text), 0);
            if (rc < 0) {
                co_buf_dispose(&b);
                rc = co_error_wrap("spec.postBuild.substituteFrom[%zu]: key %s of secret %s/%s", i,
                                   key, ns, name);
                break;
            }
            json_object_object_add(vars, key,
                                   json_object_new_string_len(b.ptr ? b.ptr : "", (int)b.len));
            co_buf_dispose(&b);
        }
    }
    json_object_put(obj);
    return rc;
}

/* The substitution variables: substituteFrom in order, then substitute; *out NULL when the
 * Component asks for no substitution. */
static int load_variables(struct json_object **out, const ctl_render_request *req, const char *ns)
{
    const co_component_spec *spec = &req->component->spec;
    *out = NULL;
    if (spec->n_substitute_from == 0 && spec->substitute.len == 0) {
        return 0;
    }
    struct json_object *vars = json_object_new_object();
    int rc = 0;
    for (size_t i = 0; i < spec->n_substitute_from && rc == 0; i++) {
        rc = add_variables(vars, req, ns, i, spec->substitute_from[i]);
    }
    if (rc < 0) {
        json_object_put(vars);
        return rc;
    }
    for (size_t i = 0; i < spec->substitute.len; i++) {
        json_object_object_add(vars, spec->substitute.keys[i],
                               json_object_new_string(spec->substitute.values[i]));
    }
    *out = vars;
    return 0;
}

typedef struct lookup_ctx {
    const ctl_render_request *req;
    const char *ns; /* the Component's namespace */
} lookup_ctx;

/* The client a lookup goes to; *owned is set when the caller must free it, *confined when it
 * acts with the controller's own rights and must stay in the Component's namespace. */
static int lookup_client(co_kube_client **out,
                         bool *owned,
                         bool *confined,
                         const lookup_ctx *lc,
                         co_kzgen_cluster_kind cluster,
                         const char *kubeconfig)
{
    const ctl_render_request *req = lc->req;
    bool unconfined = (req->grants & CO_GRANT_LOOKUPS_OUTSIDE_NAMESPACE) != 0;
    *owned = false;
    *confined = false;
    co_kube_client *target = req->target ? req->target : req->local;
    if (cluster == CO_KZGEN_TARGET) {
        *out = target;
        *confined = req->confine_target && !unconfined;
        return 0;
    }
    if (cluster == CO_KZGEN_LOCAL) {
        /* the local cluster with the Component's identity */
        if (req->local_lookups) {
            *out = req->local_lookups;
        } else {
            *out = req->remote ? req->local : target;
        }
        *confined = req->confine_local && !unconfined;
        return 0;
    }
    if (req->kubeconfig_denied_by) {
        return co_error_set(CO_EAUTH,
                            "lookup with a kubeconfig: remote kubeconfigs are denied by "
                            "ComponentPolicy \"%s\" (rules.remoteKubeConfig)",
                            req->kubeconfig_denied_by);
    }
    if (!kubeconfig || !*kubeconfig) {
        return co_error_set(CO_EINVALID, "lookup: empty kubeconfig");
    }
    if (strlen(kubeconfig) > CO_MAX_CONFIG_FILE) {
        return co_error_set(CO_ETOOBIG, "lookup: kubeconfig larger than %zu bytes",
                            CO_MAX_CONFIG_FILE);
    }
    struct json_object *doc = NULL;
    co_kube_config *cfg = NULL;
    int rc = co_yaml_parse(&doc, kubeconfig, strlen(kubeconfig), 0);
    if (rc == 0) {
        unsigned flags =
            (req->grants & CO_GRANT_INSECURE_KUBECONFIG_SERVERS) ? CO_KUBE_CONFIG_ALLOW_HTTP : 0;
        rc = co_kube_config_from_untrusted_json(&cfg, doc, NULL, flags);
    }
    if (rc == 0) {
        rc = co_kube_client_new(out, cfg, NULL);
    }
    co_kube_config_free(cfg);
    json_object_put(doc);
    if (rc < 0) {
        return co_error_wrap("lookup: kubeconfig");
    }
    *owned = true;
    return 0;
}

/* A lookup with the controller's own rights reads namespaced objects of the Component's own
 * namespace only: the Go original's lookups, with no way to reach another tenant's Secrets
 * through the controller (docs/security.md). */
static int check_confined(const lookup_ctx *lc,
                          co_kube_client *client,
                          const char *fn,
                          const char *api_version,
                          const char *kind,
                          const char *ns)
{
    if (ns && *ns && strcmp(ns, lc->ns) == 0) {
        co_kube_mapping mp;
        int rc = co_kube_client_mapping(&mp, client, api_version, kind);
        if (rc < 0) {
            return co_error_wrap("%s %s %s", fn, api_version, kind);
        }
        int namespaced = mp.namespaced;
        co_kube_mapping_dispose(&mp);
        if (namespaced) {
            return 0;
        }
    }
    return co_error_set(CO_EAUTH,
                        "%s %s %s %s%s: a Component without spec.serviceAccountName may only look "
                        "up objects in its own namespace (%s) unless a ComponentPolicy grants "
                        "grants.lookupsOutsideNamespace",
                        fn, api_version, kind, ns && *ns ? "in namespace " : "cluster-wide",
                        ns && *ns ? ns : "", lc->ns);
}

static const char *lookup_name(co_kzgen_cluster_kind cluster, bool list)
{
    switch (cluster) {
    case CO_KZGEN_LOCAL:
        return list ? "localLookupList" : "localLookup";
    case CO_KZGEN_KUBECONFIG:
        return list ? "lookupListWithKubeConfig" : "lookupWithKubeConfig";
    case CO_KZGEN_TARGET:
    default:
        return list ? "lookupList" : "lookup";
    }
}

static int render_lookup(void *ctx,
                         struct json_object **out,
                         co_kzgen_cluster_kind cluster,
                         const char *kubeconfig,
                         const char *api_version,
                         const char *kind,
                         const char *ns,
                         const char *name)
{
    co_kube_client *client = NULL;
    bool owned = false, confined = false;
    *out = NULL;
    int rc = lookup_client(&client, &owned, &confined, ctx, cluster, kubeconfig);
    if (rc < 0) {
        return rc;
    }
    if (confined) {
        rc = check_confined(ctx, client, lookup_name(cluster, false), api_version, kind, ns);
    }
    if (rc == 0) {
        co_kube_ref ref = {api_version, kind, ns && *ns ? ns : NULL, name};
        rc = co_kube_get(out, client, &ref, NULL);
        if (rc == CO_ENOTFOUND) {
            *out = NULL;
            rc = 0;
        } else if (rc < 0) {
            rc = co_error_wrap("lookup %s %s %s/%s", api_version, kind, ns ? ns : "", name);
        }
    }
    if (owned) {
        co_kube_client_free(client);
    }
    return rc;
}

static int render_lookup_list(void *ctx,
                              struct json_object **out,
                              co_kzgen_cluster_kind cluster,
                              const char *kubeconfig,
                              const char *api_version,
                              const char *kind,
                              const char *ns,
                              const char *label_selector)
{
    co_kube_client *client = NULL;
    bool owned = false, confined = false;
    *out = NULL;
    int rc = lookup_client(&client, &owned, &confined, ctx, cluster, kubeconfig);
    if (rc < 0) {
        return rc;
    }
    if (confined) {
        rc = check_confined(ctx, client, lookup_name(cluster, true), api_version, kind, ns);
    }
    if (rc == 0) {
        co_kube_ref ref = {api_version, kind, ns && *ns ? ns : NULL, NULL};
        co_kube_list_options lo = {0};
        lo.label_selector = label_selector && *label_selector ? label_selector : NULL;
        rc = co_kube_list(out, client, &ref, &lo);
        if (rc < 0) {
            rc = co_error_wrap("lookupList %s %s %s", api_version, kind, ns ? ns : "");
        }
    }
    if (owned) {
        co_kube_client_free(client);
    }
    return rc;
}

/* Helm's .Capabilities.APIVersions of one discovery listing, derived once per listing and
 * shared by every render that reads it (co_kube_api_listing_memo()). */
typedef struct helm_versions {
    char **v;
    size_t n;
} helm_versions;

static void *helm_versions_make(const struct json_object *lists)
{
    helm_versions *hv = co_xcalloc(1, sizeof(*hv));
    co_helm_api_versions(&hv->v, &hv->n, lists);
    return hv;
}

static void helm_versions_dispose(void *p)
{
    helm_versions *hv = p;
    co_helm_strv_free(hv->v);
    free(hv);
}

/* The target's version and API listing, asked on a render's first need of them
 * (co_render_input.discover) and kept for the rest of it. */
typedef struct render_discovery {
    co_kube_client *target;
    bool asked;
    int rc;
    char *error;
    struct json_object *version;
    co_kube_api_listing *listing; /* shared: read only */
    helm_versions own_versions;   /* when the listing keeps another derivation */
    co_render_discovery answer;
} render_discovery;

static int render_discover(void *ctx, co_render_discovery *out)
{
    render_discovery *d = ctx;
    if (!d->asked) {
        d->asked = true;
        d->rc = co_kube_client_server_version(&d->version, d->target, DISCOVERY_MAX_AGE_MS);
        if (d->rc < 0) {
            d->rc = co_error_wrap("reading the target's version");
        }
        if (d->rc == 0) {
            d->rc = co_kube_client_api_listing(&d->listing, d->target, DISCOVERY_MAX_AGE_MS);
            if (d->rc < 0) {
                d->rc = co_error_wrap("discovery of the target's API resources");
            }
        }
        if (d->rc == 0) {
            const helm_versions *hv =
                co_kube_api_listing_memo(d->listing, helm_versions_make, helm_versions_dispose);
            if (!hv) {
                co_helm_api_versions(&d->own_versions.v, &d->own_versions.n,
                                     co_kube_api_listing_lists(d->listing));
                hv = &d->own_versions;
            }
            d->answer.api_versions = (const char *const *)hv->v;
            d->answer.n_api_versions = hv->n;
            d->answer.server_version = d->version;
            d->answer.api_resources = co_kube_api_listing_lists(d->listing);
            if (co_json_get_string(&d->answer.kube_version, d->version, "gitVersion", NULL) < 0) {
                co_error_clear();
            }
        } else {
            d->error = co_xstrdup(co_error_last());
        }
    }
    if (d->rc < 0) {
        return co_error_set(d->rc, "%s", d->error);
    }
    *out = d->answer;
    return 0;
}

static void render_discovery_dispose(render_discovery *d)
{
    co_helm_strv_free(d->own_versions.v);
    co_kube_api_listing_release(d->listing);
    json_object_put(d->version);
    free(d->error);
}

int ctl_render_component(struct json_object **out, const ctl_render_request *req)
{
    const co_component *c = req->component;
    const char *cns = non_empty(c->ns, "default");
    co_sops_keys *keys = NULL;
    struct json_object *vars = NULL;
    /* asked only if the render needs it: plain manifests and templates that read neither
     * kubernetesVersion nor apiResources cost the target no discovery request */
    render_discovery disc = {0};
    disc.target = req->target ? req->target : req->local;
    int rc = load_keys(&keys, req, cns);
    if (rc == 0) {
        rc = load_variables(&vars, req, cns);
    }
    if (rc == 0) {
        lookup_ctx lc = {req, cns};
        co_render_input in = {0};
        in.dir = req->dir;
        in.root = req->root;
        in.namespace = non_empty(c->spec.ns, cns);
        in.name = non_empty(co_component_target_name(c), "");
        in.component = req->object;
        in.component_digest = req->component_digest;
        in.revision = req->revision > 0 ? req->revision : 1;
        in.values = req->values;
        in.discover = render_discover;
        in.discover_ctx = &disc;
        in.lookup = render_lookup;
        in.lookup_list = render_lookup_list;
        in.cluster_ctx = &lc;
        in.keys = keys;
        in.post_build = co_json_get(req->object, "spec", "postBuild", NULL);
        in.substitutions = vars;
        const char *opt_in = co_component_annotation(c, CO_HELM_OPT_IN_ANNOTATION);
        if (opt_in && strcmp(opt_in, "allow") == 0) {
            in.flags |= CO_RENDER_ALLOW_OPERATOR_ANNOTATIONS;
        }
        rc = co_render(out, &in);
    }
    render_discovery_dispose(&disc);
    json_object_put(vars);
    co_sops_keys_free(keys);
    return rc;
}
