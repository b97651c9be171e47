/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file thread.h
 * Timed waits on condition variables that wall-clock changes do not disturb: the condition
 * variable measures time on CLOCK_MONOTONIC and the deadline is taken from the same clock.
 * These read the system clock, not co/util/time.h's test clocks. Thread-safe.
 */
#ifndef CO_THREAD_H
#define CO_THREAD_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/** Initialises @p cond with its timed waits measured on CLOCK_MONOTONIC. */
void co_cond_init_monotonic(pthread_cond_t *cond);

/** The CLOCK_MONOTONIC time @p ns nanoseconds from now (0 or negative: now), the deadline for
 * pthread_cond_timedwait() on a condition variable from co_cond_init_monotonic(). */
struct timespec co_monotonic_deadline_ns(int64_t ns);

#endif
