/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemons' shared start-up (daemon.h): the signal mask set once on the main thread, which
 * every thread created later inherits.
 */
#include "co/util/daemon.h"

#include <pthread.h>
#include <stddef.h>

void co_daemon_block_signals(sigset_t *stop_out)
{
    sigemptyset(stop_out);
    sigaddset(stop_out, SIGTERM);
    sigaddset(stop_out, SIGINT);
    pthread_sigmask(SIG_BLOCK, stop_out, NULL);
    signal(SIGPIPE, SIG_IGN);
}
