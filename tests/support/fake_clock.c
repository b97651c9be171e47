/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fake clock behind tests/support/fake_clock.h: two counters the test moves by hand.
 */
#include "tests/support/fake_clock.h"

#include "co/util/time.h"

static int64_t fake_wall;
static int64_t fake_mono;
static unsigned long fake_reads;

static int64_t read_wall(void *payload)
{
    (void)payload;
    fake_reads++;
    return fake_wall;
}

static int64_t read_mono(void *payload)
{
    (void)payload;
    fake_reads++;
    return fake_mono;
}

void co_fake_clock_install(int64_t wall_ns)
{
    fake_wall = wall_ns;
    fake_mono = 1000000000;
    fake_reads = 0;
    co_time_set_clock(read_wall, read_mono, NULL);
}

void co_fake_clock_advance(int64_t ns)
{
    fake_wall += ns;
    fake_mono += ns;
}

void co_fake_clock_set_wall(int64_t wall_ns)
{
    fake_wall = wall_ns;
}

unsigned long co_fake_clock_reads(void)
{
    return fake_reads;
}

void co_fake_clock_uninstall(void)
{
    co_time_set_clock(NULL, NULL, NULL);
}
