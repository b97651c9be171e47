/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leader election between separate processes against the real kube-apiserver. The test binary
 * starts copies of itself as candidates (argv[1] == "--candidate"); each one logs when it
 * starts and stops leading to a shared file. The test checks that exactly one candidate leads
 * at any time (from the log and from the Lease itself), that a killed leader is replaced once
 * its lease expires, and that a leader stopped gracefully releases the Lease so that the next
 * candidate takes over at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_lease.h"
#include "shared/src/kube/kube_int.h"
#include "tests/support/kube_test.h"
#include "tests/support/test_support.h"

#define LEASE_MS 3000
#define RENEW_MS 2000
#define RETRY_MS 300

/* --- the candidate process ------------------------------------------------------------------ */

static int log_fd = -1;
static const char *candidate_id;
static volatile sig_atomic_t terminate;

static void log_line(const char *what)
{
    char line[128];
    int n = snprintf(line, sizeof(line), "%s %s %lld\n", what, candidate_id,
                     (long long)co_kube__wall_us());
    if (write(log_fd, line, (size_t)n) != n) {
        _exit(3);
    }
}

static void on_start(void *payload)
{
    (void)payload;
    log_line("start");
}

static void on_stop(void *payload)
{
    (void)payload;
    log_line("stop");
}

static void on_term(int sig)
{
    (void)sig;
    terminate = 1;
}

/* argv: --candidate ID LOGFILE KUBECONFIG NAMESPACE */
static int candidate(char **argv)
{
    candidate_id = argv[2];
    log_fd = open(argv[3], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (log_fd < 0) {
        return 2;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    co_kube_config *cfg = NULL;
    co_kube_client *c = NULL;
    co_kube_leader *le = NULL;
    if (co_kube_config_load(&cfg, argv[4], NULL) < 0 || co_kube_client_new(&c, cfg, NULL) < 0) {
        fprintf(stderr, "candidate %s: %s\n", candidate_id, co_error_last());
        return 2;
    }
    co_kube_leader_options o = {.namespace = argv[5],
                                .name = "co-test-lock",
                                .identity = candidate_id,
                                .lease_duration_ms = LEASE_MS,
                                .renew_deadline_ms = RENEW_MS,
                                .retry_period_ms = RETRY_MS,
                                .on_started_leading = on_start,
                                .on_stopped_leading = on_stop};
    if (co_kube_leader_new(&le, c, &o) < 0 || co_kube_leader_start(le) < 0) {
        fprintf(stderr, "candidate %s: %s\n", candidate_id, co_error_last());
        return 2;
    }
    log_line("ready");
    while (!terminate && !co_kube_leader_lost(le)) {
        co_kube__sleep_ms(50, NULL);
    }
    co_kube_leader_free(le); /* releases the Lease when leading */
    co_kube_client_free(c);
    co_kube_config_free(cfg);
    close(log_fd);
    return 0;
}

/* --- the test -----------------------------------------------------------------------------------
 */

static co_kube_client *admin;
static char *ns;
static char *log_path;
static char *dir;

static int group_setup(void **state)
{
    (void)state;
    admin = co_test_kube_client("CO_TEST_KUBECONFIG");
    ns = co_test_kube_namespace(admin, "co-lease-");
    dir = co_test_tmpdir();
    log_path = co_xasprintf("%s/leaders.log", dir);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (co_kube_delete(NULL, admin, &(co_kube_ref){"v1", "Namespace", NULL, ns}, NULL) < 0) {
        co_error_clear();
    }
    co_test_rmtree(dir);
    free(dir);
    free(log_path);
    free(ns);
    co_kube_client_free(admin);
    return 0;
}

static pid_t spawn(const char *id)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const char *argv[] = {"/proc/self/exe",
                              "--candidate",
                              id,
                              log_path,
                              co_test_env("CO_TEST_KUBECONFIG"),
                              ns,
                              NULL};
        execv("/proc/self/exe", (char *const *)argv);
        _exit(127);
    }
    return pid;
}

typedef struct entry {
    char what[16];
    char id[16];
    long long us;
} entry;

/* Reads the log; returns the number of entries. */
static size_t read_log(entry *out, size_t max)
{
    char *text = co_test_read_file(log_path, NULL);
    size_t n = 0;
    if (!text) {
        return 0;
    }
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line && n < max;
         line = strtok_r(NULL, "\n", &save)) {
        /* "what id microseconds" */
        char *sp1 = strchr(line, ' ');
        char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (!sp2 || sp1 - line >= 16 || sp2 - sp1 - 1 >= 16) {
            continue;
        }
        snprintf(out[n].what, sizeof(out[n].what), "%.*s", (int)(sp1 - line), line);
        snprintf(out[n].id, sizeof(out[n].id), "%.*s", (int)(sp2 - sp1 - 1), sp1 + 1);
        char *end = NULL;
        out[n].us = strtoll(sp2 + 1, &end, 10);
        if (end != sp2 + 1 && *end == '\0') {
            n++;
        }
    }
    free(text);
    return n;
}

static int count(const char *what, const char *id)
{
    entry e[256];
    size_t n = read_log(e, 256);
    int c = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(e[i].what, what) == 0 && (!id || strcmp(e[i].id, id) == 0)) {
            c++;
        }
    }
    return c;
}

/* The current leader according to the log ("" when none). */
static void leader_of_log(char *out, size_t len)
{
    entry e[256];
    size_t n = read_log(e, 256);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (strcmp(e[i].what, "start") == 0) {
            snprintf(out, len, "%s", e[i].id);
        } else if (strcmp(e[i].what, "stop") == 0 && strcmp(out, e[i].id) == 0) {
            out[0] = '\0';
        }
    }
}

static char *lease_holder(void)
{
    struct json_object *lease = NULL;
    co_error_clear();
    if (co_kube_get(&lease, admin,
                    &(co_kube_ref){"coordination.k8s.io/v1", "Lease", ns, "co-test-lock"},
                    NULL) < 0) {
        return co_xstrdup("");
    }
    const char *h = co_json_str(lease, "spec", "holderIdentity", NULL);
    char *copy = co_xstrdup(h ? h : "");
    json_object_put(lease);
    return copy;
}

typedef struct wait_start {
    int starts;
} wait_start;

static int starts_reached(void *payload)
{
    return count("start", NULL) >= ((wait_start *)payload)->starts;
}

/* Checks that leadership intervals in the log never overlap; @p killed_id's open interval is
 * closed at @p killed_us. */
static void check_one_leader_at_a_time(const char *killed_id, long long killed_us)
{
    entry e[256];
    size_t n = read_log(e, 256);
    char current[16] = "";
    long long since = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(e[i].what, "start") == 0) {
            if (current[0]) {
                /* only legitimate if the previous leader was the killed one, already dead */
                assert_string_equal(current, killed_id);
                assert_true(e[i].us > killed_us);
            }
            snprintf(current, sizeof(current), "%s", e[i].id);
            since = e[i].us;
        } else if (strcmp(e[i].what, "stop") == 0 && strcmp(current, e[i].id) == 0) {
            assert_true(e[i].us >= since);
            current[0] = '\0';
        }
    }
}

static void test_kube_lease__one_leader_across_processes(void **state)
{
    (void)state;
    pid_t a = spawn("cand-a");
    pid_t b = spawn("cand-b");
    wait_start one = {1};
    assert_true(co_test_poll(starts_reached, &one, 120000));
    /* both campaign for a while: still exactly one leader, and the Lease names it */
    for (int i = 0; i < 30; i++) {
        co_kube__sleep_ms(200, NULL);
        assert_int_equal(count("start", NULL), 1);
        char leader[16];
        leader_of_log(leader, sizeof(leader));
        char *holder = lease_holder();
        assert_string_equal(holder, leader);
        free(holder);
    }
    assert_int_equal(count("ready", NULL), 2);
    char first[16];
    leader_of_log(first, sizeof(first));
    pid_t first_pid = strcmp(first, "cand-a") == 0 ? a : b;
    pid_t second_pid = first_pid == a ? b : a;
    const char *second = first_pid == a ? "cand-b" : "cand-a";

    /* kill the leader without a chance to release: the other takes over after expiry */
    long long killed_us = co_kube__wall_us();
    assert_int_equal(kill(first_pid, SIGKILL), 0);
    waitpid(first_pid, NULL, 0);
    wait_start two = {2};
    assert_true(co_test_poll(starts_reached, &two, 120000));
    assert_int_equal(count("start", second), 1);
    check_one_leader_at_a_time(first, killed_us);
    char *holder = lease_holder();
    assert_string_equal(holder, second);
    free(holder);

    /* a new candidate waits while the second leads */
    pid_t c = spawn("cand-c");
    co_kube__sleep_ms(LEASE_MS + 1000, NULL);
    assert_int_equal(count("start", "cand-c"), 0);

    /* stop the second gracefully: it releases the Lease and cand-c takes over */
    assert_int_equal(kill(second_pid, SIGTERM), 0);
    int status = 0;
    waitpid(second_pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(count("stop", second), 1);
    wait_start three = {3};
    assert_true(co_test_poll(starts_reached, &three, 120000));
    assert_int_equal(count("start", "cand-c"), 1);
    check_one_leader_at_a_time(first, killed_us);

    assert_int_equal(kill(c, SIGTERM), 0);
    waitpid(c, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    holder = lease_holder();
    assert_string_equal(holder, "");
    free(holder);
    struct json_object *lease = NULL;
    assert_co_pass(
        co_kube_get(&lease, admin,
                    &(co_kube_ref){"coordination.k8s.io/v1", "Lease", ns, "co-test-lock"}, NULL));
    struct json_object *t = NULL;
    assert_true(json_object_object_get_ex(co_kube__obj(lease, "spec"), "leaseTransitions", &t));
    assert_int_equal(json_object_get_int(t), 2);
    json_object_put(lease);
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "--candidate") == 0) {
        return candidate(argv);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_lease__one_leader_across_processes),
    };
    return cmocka_run_group_tests_name("kube_lease_integration", tests, group_setup,
                                       group_teardown);
}
