/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_render.h
 * Rendering a Component's source directory into the list of objects to apply: what the cluster
 * contributes (Secrets, discovery, lookups) is gathered here and handed to co_render()
 * (co/render/render.h), whose generators own the rest — including the kustomization a
 * directory without one gets (co/render/kzgen.h). Thread-safe.
 */
#ifndef CTL_RENDER_H
#define CTL_RENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "co/api/component.h"
#include "co/util/common.h"
#include "co/kube/kube_client.h"

struct json_object;

/** What the controller knows when it renders one Component. Borrowed for the call. */
typedef struct ctl_render_request {
    const char *dir; /**< the source directory spec.path names */
    /** the source artifact's root, @ref dir in or below it, or NULL (co_render_input.root) */
    const char *root;
    const co_component *component; /**< the fresh Component, parsed */
    /** the same as read, for what co_render() takes as JSON: the templates' `component` and
     * spec.postBuild's patches and images */
    const struct json_object *object;
    const struct json_object *values; /**< merged values (ctl_values_merge()), or NULL */
    const char *component_digest;     /**< docs/behaviour.md, "Component digest", or NULL */
    int64_t revision;                 /**< status.revision (1 = install) */
    /** Reads the Component's decryption and substituteFrom Secrets (of its own namespace
     * only); never impersonated. */
    co_kube_client *local;
    /** The target: kube version, discovery and `lookup`; NULL = @ref local */
    co_kube_client *target;
    bool remote; /**< the target is another cluster (a kubeconfig) */
    /** `localLookup` and friends: the local cluster with the Component's identity. NULL: the
     * target when it is the local cluster, else @ref local. */
    co_kube_client *local_lookups;
    /** Lookups through `lookup` (target) and `localLookup` (local) that run with the
     * controller's own rights, because the Component has no service account: they are
     * confined to the Component's namespace unless the grant CO_GRANT_LOOKUPS_OUTSIDE_NAMESPACE
     * holds. docs/security.md. */
    bool confine_target, confine_local;
    unsigned grants; /**< co_policy_grant bits of the policies applying to the Component */
    /** a ComponentPolicy that denies remote kubeconfigs, so lookupWithKubeConfig is refused;
     * NULL: allowed */
    const char *kubeconfig_denied_by;
} ctl_render_request;

/**
 * Renders a Component through the one pipeline co_render() (co/render.h): a Helm chart when
 * the directory holds Chart.yaml, else the templated kustomization generator. Gathered here:
 * the placement (spec.namespace/spec.name or the Component's own), the decryption keys of
 * spec.decryption.secretRef (provider `sops` or empty), the substitution variables (every key
 * of each spec.postBuild.substituteFrom Secret in order, then spec.postBuild.substitute), the
 * target's version (/version) and discovery listing (co_kube_client_api_listing(), shared and
 * reused for up to 30 s) for `.Capabilities` (KubeVersion; APIVersions with every group/version and
 * group/version/Kind) and `kubernetesVersion` and `apiResources`, template lookups of both
 * generators through the target, local and kubeconfig clients, and the chart opt-in annotation
 * CO_HELM_OPT_IN_ANNOTATION ("allow") of the Component. Charts see `.Release.Service` as
 * CO_HELM_OPERATOR_SERVICE, as in the Go original.
 * @param[out] out a new JSON array of objects (json_object_put())
 * @return 0; CO_ENOTFOUND (a referenced Secret or the directory is missing); CO_EINVALID (a
 *         bad decryption provider or key, a template, chart, encrypted file without keys,
 *         substitution or patch failed: the message names the field or file); CO_EAUTH
 *         (decryption failed); API errors of the discovery requests.
 */
CO_MUST_CHECK int ctl_render_component(struct json_object **out, const ctl_render_request *req);

#endif
