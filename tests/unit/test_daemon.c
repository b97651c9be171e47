/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the daemons' shared start-up (co/util/daemon.h). */
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "co/util/daemon.h"
#include "tests/support/test_support.h"

/* The mask of a thread started after the call, as every thread of a daemon is. */
static void *read_mask(void *arg)
{
    pthread_sigmask(SIG_BLOCK, NULL, arg);
    return NULL;
}

/* The stop signals are blocked in the caller and in the threads it starts, pending until the
 * main thread takes them; SIGPIPE is ignored; nothing else changes. */
static void test_daemon__block_signals_masks_stop_signals_in_every_thread(void **state)
{
    (void)state;
    sigset_t before;
    pthread_sigmask(SIG_BLOCK, NULL, &before);
    assert_int_equal(sigismember(&before, SIGTERM), 0);

    sigset_t stop;
    co_daemon_block_signals(&stop);
    assert_int_equal(sigismember(&stop, SIGTERM), 1);
    assert_int_equal(sigismember(&stop, SIGINT), 1);
    assert_int_equal(sigismember(&stop, SIGHUP), 0);
    assert_int_equal(sigismember(&stop, SIGPIPE), 0);

    sigset_t mine;
    pthread_sigmask(SIG_BLOCK, NULL, &mine);
    sigset_t child;
    sigemptyset(&child);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, read_mask, &child), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    for (int sig = 1; sig < 32; sig++) {
        int want = sig == SIGTERM || sig == SIGINT ? 1 : sigismember(&before, sig);
        assert_int_equal(sigismember(&mine, sig), want);
        assert_int_equal(sigismember(&child, sig), want);
    }

    struct sigaction pipe_action;
    assert_int_equal(sigaction(SIGPIPE, NULL, &pipe_action), 0);
    assert_ptr_equal(pipe_action.sa_handler, SIG_IGN);

    /* a stop signal sent now waits for sigwait() instead of ending the process */
    assert_int_equal(raise(SIGTERM), 0);
    int sig = 0;
    assert_int_equal(sigwait(&stop, &sig), 0);
    assert_int_equal(sig, SIGTERM);

    pthread_sigmask(SIG_SETMASK, &before, NULL);
    signal(SIGPIPE, SIG_DFL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_daemon__block_signals_masks_stop_signals_in_every_thread),
    };
    return cmocka_run_group_tests_name("daemon", tests, NULL, NULL);
}
