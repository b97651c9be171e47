/* SPDX-License-Identifier: Apache-2.0 */
#include "co/util/thread.h"

void co_cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
}

struct timespec co_monotonic_deadline_ns(int64_t ns)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (ns > 0) {
        t.tv_sec += (time_t)(ns / 1000000000);
        t.tv_nsec += (long)(ns % 1000000000);
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
    }
    return t;
}
