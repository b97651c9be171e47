/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake clock for tests, installed through co_time_set_clock(): both clocks stand still until
 * the test moves them, so timeouts, intervals and timestamps are deterministic.
 */
#ifndef CO_TEST_FAKE_CLOCK_H
#define CO_TEST_FAKE_CLOCK_H

#include <stdint.h>

/** Installs the fake clock with the wall clock at @p wall_ns (the monotonic one starts at 1 s). */
void co_fake_clock_install(int64_t wall_ns);

/** Moves both clocks forward by @p ns. */
void co_fake_clock_advance(int64_t ns);

/** Sets the wall clock alone (a clock step: NTP, a suspended VM); monotonic time is unchanged. */
void co_fake_clock_set_wall(int64_t wall_ns);

/** How many times either clock has been read since the fake clock was installed. */
unsigned long co_fake_clock_reads(void);

/** Restores the system clocks. */
void co_fake_clock_uninstall(void);

#endif
