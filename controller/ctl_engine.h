/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_engine.h
 * The daemon's binding of the reconciler's apply seam (ctl_apply_ops) to the apply engine
 * (ctl_apply.h): events on dependents go through the controller's recorder for targets in the
 * local cluster and through the target client's own recorder for remote kubeconfig targets
 * (none when the Component carries `disable-events: "true"`), and operation counts feed
 * component_operator_runtime_operations_total.
 */
#ifndef CTL_ENGINE_H
#define CTL_ENGINE_H

#include "co/kube/kube_event.h"
#include "co/util/metrics.h"
#include "controller/ctl_reconcile.h"

/** Shared state of the binding; lives as long as the manager. */
typedef struct ctl_engine {
    co_kube_recorder *events; /**< recorder of the local cluster, or NULL */
    co_metric *operations;    /**< operations_total{controller,action}, or NULL */
} ctl_engine;

/** The seam filled with the apply engine; @p e must outlive every call. */
ctl_apply_ops ctl_engine_ops(ctl_engine *e);

#endif
