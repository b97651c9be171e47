/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keeps the served key pair in step with two PEM files (--tls-cert-file, --tls-key-file or a
 * --cert-dir). The files are read at start (a missing or broken pair is a start-up error), then
 * re-read when inotify reports a change in their directories (Secret volumes replace a
 * `..data` symlink, so directories are watched rather than files) and on a poll interval as a
 * safety net. A pair that fails to parse, or whose key does not match, is not served; the
 * previous pair stays until the files are consistent again.
 */
#ifndef WH_CERTWATCH_H
#define WH_CERTWATCH_H

#include "co/util/common.h"
#include "webhook/wh_tls.h"

typedef struct wh_certwatch wh_certwatch;

/**
 * Loads the pair into @p tls and starts the watching thread. @p tls is borrowed and must
 * outlive the watcher.
 * @param interval_ms poll interval (10000 in production)
 * @return 0, CO_ENOTFOUND/CO_EINVALID/CO_ETOOBIG for an unusable pair, CO_ERROR otherwise.
 */
CO_MUST_CHECK int wh_certwatch_start(wh_certwatch **out,
                                     wh_tls *tls,
                                     const char *cert_path,
                                     const char *key_path,
                                     int interval_ms);

/** Re-reads both files now. @return 0 (also when nothing changed) or the load error. */
CO_MUST_CHECK int wh_certwatch_reload(wh_certwatch *w);

/** Stops the thread and frees the watcher. NULL is a no-op. */
void wh_certwatch_stop(wh_certwatch *w);

#endif
