/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file daemon.h
 * The start-up both daemons share. They take SIGTERM and SIGINT synchronously on the main
 * thread (sigwait() or sigtimedwait()), so no work ever happens in a signal handler, and a
 * write to a socket its peer has closed is an error return, never the end of the process.
 */
#ifndef CO_DAEMON_H
#define CO_DAEMON_H

#include <signal.h>

/**
 * Blocks SIGTERM and SIGINT in the calling thread, so that every thread started after it
 * inherits the mask and the signals wait for the main thread, and ignores SIGPIPE. Call on the
 * main thread before any other thread exists. Cannot fail.
 * @param[out] stop_out SIGTERM and SIGINT, the set to wait for
 */
void co_daemon_block_signals(sigset_t *stop_out);

#endif
