/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Field specs: where kustomize's built-in transformers look in each kind of object (the
 * commonLabels, commonAnnotations, images, replicas, namespace and nameReference tables of
 * kustomize v5), and the walker that visits the nodes a field spec names. The tables are data
 * taken over from kustomize's built-in configuration.
 */
#include "kz_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/budget.h"
#include "co/util/error.h"

static const kz_fieldspec kz_fs_common_labels_v[] = {
    {NULL, "v1", "Service", "spec/selector", 1},
    {NULL, "v1", "ReplicationController", "spec/selector", 1},
    {NULL, NULL, "Deployment", "spec/selector/matchLabels", 1},
    {"apps", NULL, "Deployment",
     "spec/template/spec/affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution/"
     "podAffinityTerm/labelSelector/matchLabels",
     0},
    {"apps", NULL, "Deployment",
     "spec/template/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
     "labelSelector/matchLabels",
     0},
    {"apps", NULL, "Deployment",
     "spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/"
     "podAffinityTerm/labelSelector/matchLabels",
     0},
    {"apps", NULL, "Deployment",
     "spec/template/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
     "labelSelector/matchLabels",
     0},
    {"apps", NULL, "Deployment",
     "spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels", 0},
    {NULL, NULL, "ReplicaSet", "spec/selector/matchLabels", 1},
    {NULL, NULL, "DaemonSet", "spec/selector/matchLabels", 1},
    {"apps", NULL, "StatefulSet", "spec/selector/matchLabels", 1},
    {"apps", NULL, "StatefulSet",
     "spec/template/spec/affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution/"
     "podAffinityTerm/labelSelector/matchLabels",
     0},
    {"apps", NULL, "StatefulSet",
     "spec/template/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
     "labelSelector/matchLabels",
     0},
    {"apps", NULL, "StatefulSet",
     "spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/"
     "podAffinityTerm/labelSelector/matchLabels",
     0},
    {"apps", NULL, "StatefulSet",
     "spec/template/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
     "labelSelector/matchLabels",
     0},
    {"apps", NULL, "StatefulSet",
     "spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels", 0},
    {"batch", NULL, "Job", "spec/selector/matchLabels", 0},
    {"batch", NULL, "CronJob", "spec/jobTemplate/spec/selector/matchLabels", 0},
    {"policy", NULL, "PodDisruptionBudget", "spec/selector/matchLabels", 0},
    {"networking.k8s.io", NULL, "NetworkPolicy", "spec/podSelector/matchLabels", 0},
    {"networking.k8s.io", NULL, "NetworkPolicy", "spec/ingress/from/podSelector/matchLabels", 0},
    {"networking.k8s.io", NULL, "NetworkPolicy", "spec/egress/to/podSelector/matchLabels", 0},
    {NULL, NULL, NULL, "metadata/labels", 1},
    {NULL, "v1", "ReplicationController", "spec/template/metadata/labels", 1},
    {NULL, NULL, "Deployment", "spec/template/metadata/labels", 1},
    {NULL, NULL, "ReplicaSet", "spec/template/metadata/labels", 1},
    {NULL, NULL, "DaemonSet", "spec/template/metadata/labels", 1},
    {"apps", NULL, "StatefulSet", "spec/template/metadata/labels", 1},
    {"apps", NULL, "StatefulSet", "spec/volumeClaimTemplates[]/metadata/labels", 1},
    {"batch", NULL, "Job", "spec/template/metadata/labels", 1},
    {"batch", NULL, "CronJob", "spec/jobTemplate/metadata/labels", 1},
    {"batch", NULL, "CronJob", "spec/jobTemplate/spec/template/metadata/labels", 1},
};
const kz_fsset kz_fs_common_labels = {kz_fs_common_labels_v, CO_ARRAY_SIZE(kz_fs_common_labels_v)};

static const kz_fieldspec kz_fs_metadata_labels_v[] = {
    {NULL, NULL, NULL, "metadata/labels", 1},
    {NULL, "v1", "ReplicationController", "spec/template/metadata/labels", 1},
    {NULL, NULL, "Deployment", "spec/template/metadata/labels", 1},
    {NULL, NULL, "ReplicaSet", "spec/template/metadata/labels", 1},
    {NULL, NULL, "DaemonSet", "spec/template/metadata/labels", 1},
    {"apps", NULL, "StatefulSet", "spec/template/metadata/labels", 1},
    {"apps", NULL, "StatefulSet", "spec/volumeClaimTemplates[]/metadata/labels", 1},
    {"batch", NULL, "Job", "spec/template/metadata/labels", 1},
    {"batch", NULL, "CronJob", "spec/jobTemplate/metadata/labels", 1},
    {"batch", NULL, "CronJob", "spec/jobTemplate/spec/template/metadata/labels", 1},
};
const kz_fsset kz_fs_metadata_labels = {kz_fs_metadata_labels_v,
                                        CO_ARRAY_SIZE(kz_fs_metadata_labels_v)};

static const kz_fieldspec kz_fs_common_annotations_v[] = {
    {NULL, NULL, NULL, "metadata/annotations", 1},
    {NULL, "v1", "ReplicationController", "spec/template/metadata/annotations", 1},
    {NULL, NULL, "Deployment", "spec/template/metadata/annotations", 1},
    {NULL, NULL, "ReplicaSet", "spec/template/metadata/annotations", 1},
    {NULL, NULL, "DaemonSet", "spec/template/metadata/annotations", 1},
    {NULL, NULL, "StatefulSet", "spec/template/metadata/annotations", 1},
    {"batch", NULL, "Job", "spec/template/metadata/annotations", 1},
    {"batch", NULL, "CronJob", "spec/jobTemplate/metadata/annotations", 1},
    {"batch", NULL, "CronJob", "spec/jobTemplate/spec/template/metadata/annotations", 1},
};
const kz_fsset kz_fs_common_annotations = {kz_fs_common_annotations_v,
                                           CO_ARRAY_SIZE(kz_fs_common_annotations_v)};

static const kz_fieldspec kz_fs_images_v[] = {
    {NULL, NULL, NULL, "spec/containers[]/image", 1},
    {NULL, NULL, NULL, "spec/initContainers[]/image", 1},
    {NULL, NULL, NULL, "spec/template/spec/containers[]/image", 1},
    {NULL, NULL, NULL, "spec/template/spec/initContainers[]/image", 1},
};
const kz_fsset kz_fs_images = {kz_fs_images_v, CO_ARRAY_SIZE(kz_fs_images_v)};

static const kz_fieldspec kz_fs_replicas_v[] = {
    {NULL, NULL, "Deployment", "spec/replicas", 1},
    {NULL, NULL, "ReplicationController", "spec/replicas", 1},
    {NULL, NULL, "ReplicaSet", "spec/replicas", 1},
    {NULL, NULL, "StatefulSet", "spec/replicas", 1},
};
const kz_fsset kz_fs_replicas = {kz_fs_replicas_v, CO_ARRAY_SIZE(kz_fs_replicas_v)};

static const kz_fieldspec kz_fs_namespace_v[] = {
    {NULL, NULL, "Namespace", "metadata/name", 1},
    {"apiregistration.k8s.io", NULL, "APIService", "spec/service/namespace", 1},
    {"apiextensions.k8s.io", NULL, "CustomResourceDefinition",
     "spec/conversion/webhook/clientConfig/service/namespace", 0},
};
const kz_fsset kz_fs_namespace = {kz_fs_namespace_v, CO_ARRAY_SIZE(kz_fs_namespace_v)};

static const kz_fieldspec nr0[] = {
    {NULL, NULL, "HorizontalPodAutoscaler", "spec/scaleTargetRef/name", 0},
};
static const kz_fieldspec nr1[] = {
    {NULL, NULL, "HorizontalPodAutoscaler", "spec/scaleTargetRef/name", 0},
};
static const kz_fieldspec nr2[] = {
    {NULL, NULL, "HorizontalPodAutoscaler", "spec/scaleTargetRef/name", 0},
};
static const kz_fieldspec nr3[] = {
    {NULL, NULL, "HorizontalPodAutoscaler", "spec/scaleTargetRef/name", 0},
};
static const kz_fieldspec nr4[] = {
    {NULL, "v1", "Pod", "spec/volumes/configMap/name", 0},
    {NULL, "v1", "Pod", "spec/containers/env/valueFrom/configMapKeyRef/name", 0},
    {NULL, "v1", "Pod", "spec/initContainers/env/valueFrom/configMapKeyRef/name", 0},
    {NULL, "v1", "Pod", "spec/containers/envFrom/configMapRef/name", 0},
    {NULL, "v1", "Pod", "spec/initContainers/envFrom/configMapRef/name", 0},
    {NULL, "v1", "Pod", "spec/volumes/projected/sources/configMap/name", 0},
    {NULL, NULL, "PodTemplate", "template/spec/volumes/configMap/name", 0},
    {NULL, NULL, "PodTemplate", "template/spec/containers/env/valueFrom/configMapKeyRef/name", 0},
    {NULL, NULL, "PodTemplate", "template/spec/initContainers/env/valueFrom/configMapKeyRef/name",
     0},
    {NULL, NULL, "PodTemplate", "template/spec/containers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "PodTemplate", "template/spec/initContainers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "PodTemplate", "template/spec/volumes/projected/sources/configMap/name", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/volumes/configMap/name", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/containers/env/valueFrom/configMapKeyRef/name",
     0},
    {NULL, NULL, "Deployment",
     "spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/containers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/initContainers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/volumes/projected/sources/configMap/name", 0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/volumes/configMap/name", 0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/containers/env/valueFrom/configMapKeyRef/name",
     0},
    {NULL, NULL, "ReplicaSet",
     "spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name", 0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/containers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/initContainers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/volumes/projected/sources/configMap/name", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/volumes/configMap/name", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/containers/env/valueFrom/configMapKeyRef/name",
     0},
    {NULL, NULL, "DaemonSet",
     "spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/containers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/initContainers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/volumes/projected/sources/configMap/name", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/volumes/configMap/name", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/containers/env/valueFrom/configMapKeyRef/name",
     0},
    {NULL, NULL, "StatefulSet",
     "spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/containers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/initContainers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/volumes/projected/sources/configMap/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/volumes/configMap/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/containers/env/valueFrom/configMapKeyRef/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/containers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/initContainers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/volumes/projected/sources/configMap/name", 0},
    {NULL, NULL, "CronJob", "spec/jobTemplate/spec/template/spec/volumes/configMap/name", 0},
    {NULL, NULL, "CronJob",
     "spec/jobTemplate/spec/template/spec/volumes/projected/sources/configMap/name", 0},
    {NULL, NULL, "CronJob",
     "spec/jobTemplate/spec/template/spec/containers/env/valueFrom/configMapKeyRef/name", 0},
    {NULL, NULL, "CronJob",
     "spec/jobTemplate/spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name", 0},
    {NULL, NULL, "CronJob",
     "spec/jobTemplate/spec/template/spec/containers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "CronJob",
     "spec/jobTemplate/spec/template/spec/initContainers/envFrom/configMapRef/name", 0},
    {NULL, NULL, "Node", "spec/configSource/configMap", 0},
    {NULL, NULL, "Role", "rules/resourceNames", 0},
    {NULL, NULL, "ClusterRole", "rules/resourceNames", 0},
    {NULL, NULL, "Ingress",
     "metadata/annotations/nginx.ingress.kubernetes.io\\/fastcgi-params-configmap", 0},
};
static const kz_fieldspec nr5[] = {
    {NULL, "v1", "Pod", "spec/volumes/secret/secretName", 0},
    {NULL, "v1", "Pod", "spec/containers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, "v1", "Pod", "spec/initContainers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, "v1", "Pod", "spec/containers/envFrom/secretRef/name", 0},
    {NULL, "v1", "Pod", "spec/initContainers/envFrom/secretRef/name", 0},
    {NULL, "v1", "Pod", "spec/imagePullSecrets/name", 0},
    {NULL, "v1", "Pod", "spec/volumes/projected/sources/secret/name", 0},
    {NULL, NULL, "PodTemplate", "template/spec/volumes/secret/secretName", 0},
    {NULL, NULL, "PodTemplate", "template/spec/containers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, NULL, "PodTemplate", "template/spec/initContainers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, NULL, "PodTemplate", "template/spec/containers/envFrom/secretRef/name", 0},
    {NULL, NULL, "PodTemplate", "template/spec/initContainers/envFrom/secretRef/name", 0},
    {NULL, NULL, "PodTemplate", "template/spec/imagePullSecrets/name", 0},
    {NULL, NULL, "PodTemplate", "template/spec/volumes/projected/sources/secret/name", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/volumes/secret/secretName", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/containers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name",
     0},
    {NULL, NULL, "Deployment", "spec/template/spec/containers/envFrom/secretRef/name", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/initContainers/envFrom/secretRef/name", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/imagePullSecrets/name", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/volumes/projected/sources/secret/name", 0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/volumes/secret/secretName", 0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/containers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name",
     0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/containers/envFrom/secretRef/name", 0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/initContainers/envFrom/secretRef/name", 0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/imagePullSecrets/name", 0},
    {NULL, NULL, "ReplicaSet", "spec/template/spec/volumes/projected/sources/secret/name", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/volumes/secret/secretName", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/containers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name",
     0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/containers/envFrom/secretRef/name", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/initContainers/envFrom/secretRef/name", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/imagePullSecrets/name", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/volumes/projected/sources/secret/name", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/volumes/secret/secretName", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/containers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name",
     0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/containers/envFrom/secretRef/name", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/initContainers/envFrom/secretRef/name", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/imagePullSecrets/name", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/volumes/projected/sources/secret/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/volumes/secret/secretName", 0},
    {NULL, NULL, "Job", "spec/template/spec/containers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/containers/envFrom/secretRef/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/initContainers/envFrom/secretRef/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/imagePullSecrets/name", 0},
    {NULL, NULL, "Job", "spec/template/spec/volumes/projected/sources/secret/name", 0},
    {NULL, NULL, "CronJob", "spec/jobTemplate/spec/template/spec/volumes/secret/secretName", 0},
    {NULL, NULL, "CronJob",
     "spec/jobTemplate/spec/template/spec/volumes/projected/sources/secret/name", 0},
    {NULL, NULL, "CronJob",
     "spec/jobTemplate/spec/template/spec/containers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, NULL, "CronJob",
     "spec/jobTemplate/spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, NULL, "CronJob", "spec/jobTemplate/spec/template/spec/containers/envFrom/secretRef/name",
     0},
    {NULL, NULL, "CronJob",
     "spec/jobTemplate/spec/template/spec/initContainers/envFrom/secretRef/name", 0},
    {NULL, NULL, "CronJob", "spec/jobTemplate/spec/template/spec/imagePullSecrets/name", 0},
    {NULL, NULL, "Ingress", "spec/tls/secretName", 0},
    {NULL, NULL, "Ingress", "metadata/annotations/ingress.kubernetes.io\\/auth-secret", 0},
    {NULL, NULL, "Ingress", "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret", 0},
    {NULL, NULL, "Ingress", "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-tls-secret",
     0},
    {NULL, NULL, "Ingress", "spec/tls/secretName", 0},
    {NULL, NULL, "ServiceAccount", "imagePullSecrets/name", 0},
    {NULL, NULL, "StorageClass", "parameters/secretName", 0},
    {NULL, NULL, "StorageClass", "parameters/adminSecretName", 0},
    {NULL, NULL, "StorageClass", "parameters/userSecretName", 0},
    {NULL, NULL, "StorageClass", "parameters/secretRef", 0},
    {NULL, NULL, "Role", "rules/resourceNames", 0},
    {NULL, NULL, "ClusterRole", "rules/resourceNames", 0},
    {"serving.knative.dev", "v1", "Service",
     "spec/template/spec/containers/env/valueFrom/secretKeyRef/name", 0},
    {NULL, NULL, "PersistentVolume", "spec/azureFile/secretName", 0},
};
static const kz_fieldspec nr6[] = {
    {"apps", NULL, "StatefulSet", "spec/serviceName", 0},
    {NULL, NULL, "Ingress", "spec/rules/http/paths/backend/serviceName", 0},
    {NULL, NULL, "Ingress", "spec/backend/serviceName", 0},
    {NULL, NULL, "Ingress", "spec/rules/http/paths/backend/service/name", 0},
    {NULL, NULL, "Ingress", "spec/defaultBackend/service/name", 0},
    {"apiregistration.k8s.io", NULL, "APIService", "spec/service/name", 0},
    {"admissionregistration.k8s.io", NULL, "ValidatingWebhookConfiguration",
     "webhooks/clientConfig/service", 0},
    {"admissionregistration.k8s.io", NULL, "MutatingWebhookConfiguration",
     "webhooks/clientConfig/service", 0},
};
static const kz_fieldspec nr7[] = {
    {"rbac.authorization.k8s.io", NULL, "RoleBinding", "roleRef/name", 0},
};
static const kz_fieldspec nr8[] = {
    {"rbac.authorization.k8s.io", NULL, "RoleBinding", "roleRef/name", 0},
    {"rbac.authorization.k8s.io", NULL, "ClusterRoleBinding", "roleRef/name", 0},
};
static const kz_fieldspec nr9[] = {
    {"rbac.authorization.k8s.io", NULL, "RoleBinding", "subjects", 0},
    {"rbac.authorization.k8s.io", NULL, "ClusterRoleBinding", "subjects", 0},
    {NULL, NULL, "Pod", "spec/serviceAccountName", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/serviceAccountName", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/serviceAccountName", 0},
    {NULL, NULL, "ReplicationController", "spec/template/spec/serviceAccountName", 0},
    {NULL, NULL, "CronJob", "spec/jobTemplate/spec/template/spec/serviceAccountName", 0},
    {NULL, NULL, "Job", "spec/template/spec/serviceAccountName", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/serviceAccountName", 0},
};
static const kz_fieldspec nr10[] = {
    {NULL, NULL, "Pod", "spec/volumes/persistentVolumeClaim/claimName", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/volumes/persistentVolumeClaim/claimName", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/volumes/persistentVolumeClaim/claimName", 0},
    {NULL, NULL, "ReplicationController",
     "spec/template/spec/volumes/persistentVolumeClaim/claimName", 0},
    {NULL, NULL, "CronJob",
     "spec/jobTemplate/spec/template/spec/volumes/persistentVolumeClaim/claimName", 0},
    {NULL, NULL, "Job", "spec/template/spec/volumes/persistentVolumeClaim/claimName", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/volumes/persistentVolumeClaim/claimName", 0},
};
static const kz_fieldspec nr11[] = {
    {NULL, NULL, "PersistentVolumeClaim", "spec/volumeName", 0},
    {NULL, NULL, "ClusterRole", "rules/resourceNames", 0},
};
static const kz_fieldspec nr12[] = {
    {NULL, NULL, "PersistentVolume", "spec/storageClassName", 0},
    {NULL, NULL, "PersistentVolumeClaim", "spec/storageClassName", 0},
    {NULL, NULL, "StatefulSet", "spec/volumeClaimTemplates/spec/storageClassName", 0},
};
static const kz_fieldspec nr13[] = {
    {NULL, NULL, "Pod", "spec/priorityClassName", 0},
    {NULL, NULL, "StatefulSet", "spec/template/spec/priorityClassName", 0},
    {NULL, NULL, "Deployment", "spec/template/spec/priorityClassName", 0},
    {NULL, NULL, "ReplicationController", "spec/template/spec/priorityClassName", 0},
    {NULL, NULL, "CronJob", "spec/jobTemplate/spec/template/spec/priorityClassName", 0},
    {NULL, NULL, "Job", "spec/template/spec/priorityClassName", 0},
    {NULL, NULL, "DaemonSet", "spec/template/spec/priorityClassName", 0},
};
static const kz_fieldspec nr14[] = {
    {NULL, NULL, "Ingress", "spec/ingressClassName", 0},
};
static const kz_fieldspec nr15[] = {
    {"admissionregistration.k8s.io", NULL, "ValidatingAdmissionPolicyBinding", "spec/policyName",
     0},
};
const kz_nameref kz_namerefs[] = {
    {NULL, NULL, "Deployment", {nr0, CO_ARRAY_SIZE(nr0)}},
    {NULL, NULL, "ReplicationController", {nr1, CO_ARRAY_SIZE(nr1)}},
    {NULL, NULL, "ReplicaSet", {nr2, CO_ARRAY_SIZE(nr2)}},
    {NULL, NULL, "StatefulSet", {nr3, CO_ARRAY_SIZE(nr3)}},
    {NULL, "v1", "ConfigMap", {nr4, CO_ARRAY_SIZE(nr4)}},
    {NULL, "v1", "Secret", {nr5, CO_ARRAY_SIZE(nr5)}},
    {NULL, "v1", "Service", {nr6, CO_ARRAY_SIZE(nr6)}},
    {"rbac.authorization.k8s.io", NULL, "Role", {nr7, CO_ARRAY_SIZE(nr7)}},
    {"rbac.authorization.k8s.io", NULL, "ClusterRole", {nr8, CO_ARRAY_SIZE(nr8)}},
    {NULL, "v1", "ServiceAccount", {nr9, CO_ARRAY_SIZE(nr9)}},
    {NULL, "v1", "PersistentVolumeClaim", {nr10, CO_ARRAY_SIZE(nr10)}},
    {NULL, "v1", "PersistentVolume", {nr11, CO_ARRAY_SIZE(nr11)}},
    {"storage.k8s.io", "v1", "StorageClass", {nr12, CO_ARRAY_SIZE(nr12)}},
    {"scheduling.k8s.io", "v1", "PriorityClass", {nr13, CO_ARRAY_SIZE(nr13)}},
    {"networking.k8s.io/v1", "v1", "IngressClass", {nr14, CO_ARRAY_SIZE(nr14)}},
    {"admissionregistration.k8s.io",
     NULL,
     "ValidatingAdmissionPolicy",
     {nr15, CO_ARRAY_SIZE(nr15)}},
};
const size_t kz_nnamerefs = CO_ARRAY_SIZE(kz_namerefs);

/* Splits a field-spec path at '/', honouring "\/" as a literal slash. */
static size_t split_path(char **parts, size_t max, const char *path)
{
    size_t n = 0;
    const char *p = path;
    char *cur = co_xmalloc(strlen(path) + 1);
    size_t len = 0;
    for (;; p++) {
        if (*p == '\\' && p[1] == '/') {
            cur[len++] = '/';
            p++;
            continue;
        }
        if (*p == '/' || *p == '\0') {
            cur[len] = '\0';
            if (n < max) {
                parts[n++] = co_xstrdup(cur);
            }
            len = 0;
            if (*p == '\0') {
                break;
            }
            continue;
        }
        cur[len++] = *p;
    }
    free(cur);
    return n;
}

typedef struct fs_walk {
    char **parts;
    size_t nparts;
    int create;
    json_type create_type;
    kz_fs_visit visit;
    void *ctx;
} fs_walk;

static int walk_node(fs_walk *w, size_t i, json_object *parent, const char *key, json_object *node);

static int walk_map(fs_walk *w, size_t i, json_object *obj)
{
    char *name = w->parts[i];
    size_t nl = strlen(name);
    int is_seq = nl > 2 && strcmp(name + nl - 2, "[]") == 0;
    char *field = co_xstrndup(name, is_seq ? nl - 2 : nl);
    int rc = 0;
    json_object *v = NULL;
    int exists = json_object_object_get_ex(obj, field, &v);
    if (!w->create || is_seq) {
        if (!exists) {
            goto done;
        }
    } else if (!exists || v == NULL) {
        if (i + 1 >= w->nparts) {
            v = w->create_type == json_type_object ? json_object_new_object()
                                                   : json_object_new_string("");
        } else {
            v = json_object_new_object();
        }
        json_object_object_add(obj, field, v);
    }
    rc = walk_node(w, i + 1, obj, field, v);
done:
    free(field);
    return rc;
}

static int walk_node(fs_walk *w, size_t i, json_object *parent, const char *key, json_object *node)
{
    int rc = co_budget_tick();
    if (rc < 0) {
        return rc;
    }
    if (i >= w->nparts) {
        return w->visit(parent, key, node, w->ctx);
    }
    if (node == NULL) {
        return 0;
    }
    if (json_object_is_type(node, json_type_array)) {
        size_t n = json_object_array_length(node);
        for (size_t j = 0; j < n; j++) {
            json_object *e = json_object_array_get_idx(node, j);
            if (json_object_is_type(e, json_type_array)) {
                continue;
            }
            rc = walk_node(w, i, NULL, NULL, e);
            if (rc < 0) {
                return rc;
            }
        }
        return 0;
    }
    if (json_object_is_type(node, json_type_object)) {
        return walk_map(w, i, node);
    }
    return co_error_set(CO_EINVALID, "field '%s': expected sequence or mapping node",
                        key ? key : "");
}

int kz_fs_apply(json_object *obj,
                const kz_fieldspec *spec,
                json_type create_type,
                kz_fs_visit visit,
                void *ctx)
{
    char group[256], version[256];
    kz_split_api_version(kz_get_str(obj, "apiVersion", NULL), group, version, sizeof(group));
    if (!kz_gvk_selected(group, version, kz_get_str(obj, "kind", NULL), spec->group, spec->version,
                         spec->kind)) {
        return 0;
    }
    char *parts[32];
    fs_walk w = {parts,        split_path(parts, CO_ARRAY_SIZE(parts), spec->path),
                 spec->create, create_type,
                 visit,        ctx};
    int rc = walk_node(&w, 0, NULL, NULL, obj);
    for (size_t i = 0; i < w.nparts; i++) {
        free(parts[i]);
    }
    if (rc < 0) {
        co_error_wrap("considering field '%s' of %s %s", spec->path, kz_get_str(obj, "kind", NULL),
                      kz_get_str(obj, "metadata", "name"));
    }
    return rc;
}
