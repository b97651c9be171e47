/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_render.h
 * Rendering a source directory into the list of objects to apply (reference/behaviour.md §6.1,
 * without templating): a directory holding a kustomization is built with the kustomize engine;
 * a directory without one gets the kustomization the Go generator would write — every `.yaml`
 * and `.yml` file below it whose name does not start with a dot — so that plain manifests work
 * unchanged. The generator's control files (`.component-config.yaml`, `.component-ignore`) are
 * never treated as manifests. Thread-safe.
 */
#ifndef CTL_RENDER_H
#define CTL_RENDER_H

#include "co/common.h"

struct json_object;

/**
 * Renders directory @p dir.
 * @param[out] out a new JSON array of objects (json_object_put())
 * @return 0; CO_ENOTFOUND when @p dir is not a directory; the kustomize engine's errors
 *         (CO_EINVALID naming the file, CO_EUNSUPPORTED, CO_ETOOBIG).
 */
CO_MUST_CHECK int ctl_render_dir(struct json_object **out, const char *dir);

#endif
