/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Git sources over the network, against real servers on loopback: `git http-backend` behind a
 * small HTTP server with basic and bearer authentication, and an OpenSSH sshd with public-key
 * authentication. Checks references, new commits picked up, credentials passed in memory,
 * host-key verification against known_hosts, and the errors for bad credentials; credentials
 * never following a redirect to another host (a second server on 127.0.0.2 logs what reaches
 * it), while a redirect within the host is still followed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "co/source/git.h"
#include "tests/support/test_git_repo.h"
#include "tests/support/test_support.h"

/*
 * libgit2 1.5.1's ssh transport leaks a libssh2 known-hosts handle and the auth-method list on
 * every connection (a few dozen bytes; not ours to free), and git_remote_fetch() leaks its copy
 * of the custom headers when it cannot connect (it returns before disposing of them). Keep
 * LeakSanitizer quiet about exactly those.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libssh2_knownhost_init\nleak:libssh2_userauth_list\n"
           "leak:git_remote_connect_ext\nleak:git_remote_fetch\n";
}

/* Full stack traces for allocations, so that the suppressions above can see through libgit2. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

typedef struct fixture {
    char *dir;
    char *root; /* dir/repos: what the servers export */
    char *src;  /* root/app.git: a non-bare repository */
    co_git *git;
    char *c1;
    pid_t http_pid, https_auth_pid, sshd_pid;
    int http_port, auth_port, ssh_port;
    char *client_key, *client_pub, *known_hosts, *other_known_hosts, *stranger_key;
    int n;
} fixture;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static pid_t spawn(const char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log, "a", stderr);
        (void)f;
        if (!freopen("/dev/null", "w", stdout)) {
            _exit(126);
        }
        execvp(argv[0], (char *const *)argv); // NOLINT: execvp does not modify them
        _exit(127);
    }
    return pid;
}

static void stop(pid_t pid)
{
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
}

static int wait_port_file(const char *path)
{
    for (int i = 0; i < 600; i++) {
        char *s = co_test_read_file(path, NULL);
        if (s && *s) {
            int port = atoi(s); // NOLINT(cert-err34-c): written by our own helper
            free(s);
            return port;
        }
        free(s);
        sleep_ms(50);
    }
    fail_msg("server did not write %s", path);
    return 0;
}

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t len = sizeof(a);
    bind(s, (struct sockaddr *)&a, sizeof(a));
    getsockname(s, (struct sockaddr *)&a, &len);
    close(s);
    return ntohs(a.sin_port);
}

static int port_accepts(int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(0x7f000001),
                            .sin_port = htons((uint16_t)port)};
    int ok = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(s);
    return ok;
}

static void run(const char *cmd)
{
    if (system(cmd) != 0) { // NOLINT(concurrency-mt-unsafe): test set-up
        fail_msg("command failed: %s", cmd);
    }
}

static pid_t start_http(fixture *f, const char *extra, int *port)
{
    char *script = co_xasprintf("%s/tests/support/git_http_server.py", CO_SOURCE_ROOT);
    char *port_file = co_xasprintf("%s/port.%d", f->dir, ++f->n);
    char *log = co_xasprintf("%s/http.log", f->dir);
    const char *args[16] = {"python3", script, "--root", f->root, "--port-file", port_file};
    int n = 6;
    char *copy = extra ? co_xstrdup(extra) : NULL;
    char *save = NULL;
    for (char *w = copy ? strtok_r(copy, " ", &save) : NULL; w && n < 15;
         w = strtok_r(NULL, " ", &save)) {
        args[n++] = w;
    }
    args[n] = NULL;
    pid_t pid = spawn(args, log);
    *port = wait_port_file(port_file);
    free(copy);
    free(script);
    free(port_file);
    free(log);
    return pid;
}

static int have_sshd(void)
{
    return access("/usr/sbin/sshd", X_OK) == 0;
}

static void start_sshd(fixture *f)
{
    char *cmd = co_xasprintf("cd '%s' && ssh-keygen -q -t ed25519 -N '' -f hostkey && "
                             "ssh-keygen -q -t ed25519 -N '' -f otherhost && "
                             "ssh-keygen -q -t ed25519 -N '' -C co-test -f client && "
                             "ssh-keygen -q -t ed25519 -N '' -f stranger && "
                             "cp client.pub authorized_keys && chmod 600 authorized_keys",
                             f->dir);
    run(cmd);
    free(cmd);
    f->ssh_port = free_port();
    char *cfg = co_xasprintf("%s/sshd_config", f->dir);
    char *text = co_xasprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s/hostkey\n"
                              "AuthorizedKeysFile %s/authorized_keys\nPasswordAuthentication no\n"
                              "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                              "PidFile %s/sshd.pid\nPermitRootLogin prohibit-password\n"
                              "LogLevel ERROR\n",
                              f->ssh_port, f->dir, f->dir, f->dir);
    co_test_write_file(cfg, text, strlen(text));
    free(text);
    if (getuid() == 0) {
        mkdir("/run/sshd", 0755); /* sshd's privilege-separation directory */
    }
    char *log = co_xasprintf("%s/sshd.log", f->dir);
    const char *args[] = {"/usr/sbin/sshd", "-D", "-e", "-f", cfg, NULL};
    f->sshd_pid = spawn(args, log);
    for (int i = 0; i < 200 && !port_accepts(f->ssh_port); i++) {
        sleep_ms(50);
    }
    free(log);
    free(cfg);
    /* known_hosts lines for [127.0.0.1]:port: the right key, and a wrong one */
    char *hostpub = co_xasprintf("%s/hostkey.pub", f->dir);
    char *otherpub = co_xasprintf("%s/otherhost.pub", f->dir);
    char *hk = co_test_read_file(hostpub, NULL);
    char *ok = co_test_read_file(otherpub, NULL);
    f->known_hosts =
        co_xasprintf("# comment\nexample.com %s[127.0.0.1]:%d %s", ok, f->ssh_port, hk);
    f->other_known_hosts = co_xasprintf("[127.0.0.1]:%d %s", f->ssh_port, ok);
    free(hk);
    free(ok);
    free(hostpub);
    free(otherpub);
    char *p = co_xasprintf("%s/client", f->dir);
    f->client_key = co_test_read_file(p, NULL);
    free(p);
    p = co_xasprintf("%s/client.pub", f->dir);
    f->client_pub = co_test_read_file(p, NULL);
    free(p);
    p = co_xasprintf("%s/stranger", f->dir);
    f->stranger_key = co_test_read_file(p, NULL);
    free(p);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->dir = co_test_tmpdir();
    f->root = co_xasprintf("%s/repos", f->dir);
    mkdir(f->root, 0755);
    f->src = co_xasprintf("%s/app", f->root);
    tgr_init(f->src);
    tgr_git(f->src, "config http.receivepack false");
    tgr_write(f->src, "manifests/cm.yaml", "kind: ConfigMap\n");
    f->c1 = tgr_commit(f->src, "first");
    tgr_tag(f->src, "v1.0.0", 1);
    char *cache = co_xasprintf("%s/cache", f->dir);
    co_git_options o = {.timeout_ms = 120000};
    assert_co_pass(co_git_new(&f->git, cache, &o));
    free(cache);
    f->http_pid = start_http(f, NULL, &f->http_port);
    f->https_auth_pid =
        start_http(f, "--user alice --password wonderland --token t0ken", &f->auth_port);
    if (have_sshd()) {
        start_sshd(f);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    stop(f->http_pid);
    stop(f->https_auth_pid);
    stop(f->sshd_pid);
    co_git_free(f->git);
    co_test_rmtree(f->dir);
    free(f->dir);
    free(f->root);
    free(f->src);
    free(f->c1);
    free(f->client_key);
    free(f->client_pub);
    free(f->stranger_key);
    free(f->known_hosts);
    free(f->other_known_hosts);
    free(f);
    return 0;
}

static char *http_url(int port)
{
    return co_xasprintf("http://127.0.0.1:%d/app", port);
}

static char *ssh_url(const fixture *f)
{
    const struct passwd *pw = getpwuid(getuid()); // NOLINT(concurrency-mt-unsafe)
    return co_xasprintf("ssh://%s@127.0.0.1:%d%s", pw->pw_name, f->ssh_port, f->src);
}

static void checkout_ok(fixture *f,
                        const char *url,
                        const co_git_auth *auth,
                        co_git_ref ref,
                        const char *file,
                        const char *content)
{
    co_git_resolved r = {0};
    assert_co_pass(co_git_resolve(f->git, url, &ref, auth, &r));
    char *dest = co_xasprintf("%s/out%d", f->dir, ++f->n);
    char *digest = NULL;
    assert_co_pass(co_git_checkout(f->git, url, auth, &r, dest, NULL, &digest, NULL));
    char *p = co_xasprintf("%s/%s", dest, file);
    char *s = co_test_read_file(p, NULL);
    assert_non_null(s);
    assert_string_equal(s, content);
    free(s);
    free(p);
    free(dest);
    free(digest);
    co_git_resolved_dispose(&r);
}

static void test_git_remote__http_branch_tag_and_new_commits(void **state)
{
    fixture *f = *state;
    char *url = http_url(f->http_port);
    co_git_resolved r = {0};
    assert_co_pass(co_git_resolve(f->git, url, &(co_git_ref){.branch = "main"}, NULL, &r));
    char *want = co_xasprintf("main@sha1:%s", f->c1);
    assert_string_equal(r.revision, want);
    free(want);
    co_git_resolved_dispose(&r);
    checkout_ok(f, url, NULL, (co_git_ref){.tag = "v1.0.0"}, "manifests/cm.yaml",
                "kind: ConfigMap\n");
    checkout_ok(f, url, NULL, (co_git_ref){.semver = "1.x"}, "manifests/cm.yaml",
                "kind: ConfigMap\n");
    checkout_ok(f, url, NULL, (co_git_ref){.commit = f->c1}, "manifests/cm.yaml",
                "kind: ConfigMap\n");
    /* a new commit shows up on the next resolve, and is fetched incrementally */
    tgr_write(f->src, "manifests/cm.yaml", "kind: ConfigMap\ndata: {}\n");
    char *c2 = tgr_commit(f->src, "second");
    assert_co_pass(co_git_resolve(f->git, url, &(co_git_ref){.branch = "main"}, NULL, &r));
    assert_string_equal(r.commit, c2);
    co_git_resolved_dispose(&r);
    checkout_ok(f, url, NULL, (co_git_ref){.branch = "main"}, "manifests/cm.yaml",
                "kind: ConfigMap\ndata: {}\n");
    free(c2);
    free(url);
}

static void test_git_remote__http_credentials(void **state)
{
    fixture *f = *state;
    char *url = http_url(f->auth_port);
    co_git_auth good = {.username = "alice", .password = "wonderland"};
    checkout_ok(f, url, &good, (co_git_ref){.branch = "main"}, "manifests/cm.yaml",
                "kind: ConfigMap\n");
    co_git_auth token = {.bearer_token = "t0ken"};
    checkout_ok(f, url, &token, (co_git_ref){.tag = "v1.0.0"}, "manifests/cm.yaml",
                "kind: ConfigMap\n");

    co_git_resolved r = {0};
    co_git_auth bad = {.username = "alice", .password = "wrong"};
    assert_co_fail_with(CO_EAUTH,
                        co_git_resolve(f->git, url, &(co_git_ref){.branch = "main"}, &bad, &r));
    assert_contains(co_error_last(), "authentication failed");
    assert_true(strstr(co_error_last(), "wrong") == NULL); /* the password is not echoed */
    assert_co_fail_with(CO_EAUTH,
                        co_git_resolve(f->git, url, &(co_git_ref){.branch = "main"}, NULL, &r));
    assert_contains(co_error_last(), "no credentials were given");
    co_git_auth bad_token = {.bearer_token = "nope"};
    assert_co_fail_with(
        CO_EAUTH, co_git_resolve(f->git, url, &(co_git_ref){.branch = "main"}, &bad_token, &r));
    /* a commit already cached is not served to a caller the remote refuses */
    assert_co_fail_with(CO_EAUTH,
                        co_git_resolve(f->git, url, &(co_git_ref){.commit = f->c1}, &bad, &r));
    free(url);
}

static void test_git_remote__http_missing_repository(void **state)
{
    fixture *f = *state;
    char *url = co_xasprintf("http://127.0.0.1:%d/nope", f->http_port);
    co_git_resolved r = {0};
    int rc = co_git_resolve(f->git, url, &(co_git_ref){.branch = "main"}, NULL, &r);
    assert_int_equal(rc, CO_ENOTFOUND);
    assert_contains(co_error_last(), url);
    free(url);
}

/* Credentials went out as headers with every request, and libgit2 followed the first
 * request's redirect to any host: they reached whatever host the redirect named. */
static void test_git_remote__credentials_never_follow_a_redirect_to_another_host(void **state)
{
    fixture *f = *state;
    char *log = co_xasprintf("%s/elsewhere.log", f->dir);
    char *extra = co_xasprintf("--bind 127.0.0.2 --log-auth %s", log);
    int other_port = 0;
    pid_t other = start_http(f, extra, &other_port);
    free(extra);
    extra = co_xasprintf("--redirect-to http://127.0.0.2:%d", other_port);
    int redirect_port = 0;
    pid_t redirect = start_http(f, extra, &redirect_port);
    free(extra);
    char *url = http_url(redirect_port);
    co_git_ref main_ref = {.branch = "main"};
    co_git_auth basic = {.username = "alice", .password = "wonderland"};
    co_git_auth token = {.bearer_token = "t0ken"};
    const co_git_auth *auths[] = {&basic, &token, NULL};
    for (size_t i = 0; i < CO_ARRAY_SIZE(auths); i++) {
        co_git_resolved r = {0};
        assert_co_fail_with(CO_EINVALID, co_git_resolve(f->git, url, &main_ref, auths[i], &r));
        assert_contains(co_error_last(), "cannot redirect from '127.0.0.1' to '127.0.0.2'");
        assert_contains(co_error_last(), "redirects to another host are not followed");
        co_git_resolved res = {.commit = f->c1};
        char *dest = co_xasprintf("%s/out%d", f->dir, ++f->n);
        char *digest = NULL;
        assert_co_fail_with(
            CO_EINVALID, co_git_checkout(f->git, url, auths[i], &res, dest, NULL, &digest, NULL));
        free(dest);
    }
    /* the other host saw nothing at all, so no credentials either */
    char *seen = co_test_read_file(log, NULL);
    assert_true(seen == NULL || seen[0] == '\0');
    free(seen);
    /* directly, the same server is reachable and logs what it gets */
    char *direct = co_xasprintf("http://127.0.0.2:%d/app", other_port);
    checkout_ok(f, direct, &basic, main_ref, "manifests/cm.yaml", "kind: ConfigMap\n");
    seen = co_test_read_file(log, NULL);
    assert_non_null(seen);
    assert_contains(seen, "GET /app/info/refs?service=git-upload-pack authorization=yes");
    free(seen);
    free(direct);
    /* a redirect within the host is still followed */
    stop(redirect);
    free(url);
    extra = co_xasprintf("--redirect-to http://127.0.0.1:%d", f->http_port);
    redirect = start_http(f, extra, &redirect_port);
    free(extra);
    url = http_url(redirect_port);
    checkout_ok(f, url, NULL, main_ref, "manifests/cm.yaml", "kind: ConfigMap\n");
    stop(redirect);
    stop(other);
    free(url);
    free(log);
}

static void test_git_remote__ssh_with_identity_and_known_hosts(void **state)
{
    fixture *f = *state;
    if (!have_sshd()) {
        skip(); /* tests/env/deps.sh installs openssh-server */
    }
    char *url = ssh_url(f);
    co_git_auth auth = {.identity = f->client_key, .known_hosts = f->known_hosts};
    checkout_ok(f, url, &auth, (co_git_ref){.branch = "main"}, "manifests/cm.yaml",
                "kind: ConfigMap\n");
    /* with the public key given too */
    co_git_auth with_pub = {.identity = f->client_key,
                            .identity_pub = f->client_pub,
                            .known_hosts = f->known_hosts};
    checkout_ok(f, url, &with_pub, (co_git_ref){.tag = "v1.0.0"}, "manifests/cm.yaml",
                "kind: ConfigMap\n");
    free(url);
}

static void test_git_remote__ssh_hashed_known_hosts(void **state)
{
    fixture *f = *state;
    if (!have_sshd()) {
        skip();
    }
    char *kh = co_xasprintf("%s/known_hosts", f->dir);
    co_test_write_file(kh, f->known_hosts, strlen(f->known_hosts));
    char *cmd = co_xasprintf("ssh-keygen -q -H -f '%s' >/dev/null 2>&1", kh);
    run(cmd);
    free(cmd);
    char *hashed = co_test_read_file(kh, NULL);
    assert_true(strstr(hashed, "|1|") != NULL);
    assert_true(strstr(hashed, "127.0.0.1") == NULL);
    char *url = ssh_url(f);
    co_git_auth auth = {.identity = f->client_key, .known_hosts = hashed};
    checkout_ok(f, url, &auth, (co_git_ref){.branch = "main"}, "manifests/cm.yaml",
                "kind: ConfigMap\n");
    free(url);
    free(hashed);
    free(kh);
}

static void test_git_remote__ssh_refuses_unknown_hosts_and_keys(void **state)
{
    fixture *f = *state;
    if (!have_sshd()) {
        skip();
    }
    char *url = ssh_url(f);
    co_git_resolved r = {0};
    co_git_ref main_ref = {.branch = "main"};
    co_git_auth wrong_host = {.identity = f->client_key, .known_hosts = f->other_known_hosts};
    assert_co_fail_with(CO_EAUTH, co_git_resolve(f->git, url, &main_ref, &wrong_host, &r));
    assert_contains(co_error_last(), "does not match known_hosts");
    co_git_auth no_hosts = {.identity = f->client_key};
    assert_co_fail_with(CO_EAUTH, co_git_resolve(f->git, url, &main_ref, &no_hosts, &r));
    assert_contains(co_error_last(), "no known_hosts were given");
    co_git_auth elsewhere = {.identity = f->client_key,
                             .known_hosts = "example.org ssh-ed25519 "
                                            "AAAAC3NzaC1lZDI1NTE5AAAAIB"
                                            "x\n"};
    assert_co_fail_with(CO_EAUTH, co_git_resolve(f->git, url, &main_ref, &elsewhere, &r));
    assert_contains(co_error_last(), "is not in known_hosts");
    co_git_auth stranger = {.identity = f->stranger_key, .known_hosts = f->known_hosts};
    assert_co_fail_with(CO_EAUTH, co_git_resolve(f->git, url, &main_ref, &stranger, &r));
    assert_contains(co_error_last(), "authentication failed");
    co_git_auth none = {.known_hosts = f->known_hosts};
    assert_co_fail_with(CO_EAUTH, co_git_resolve(f->git, url, &main_ref, &none, &r));
    free(url);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_git_remote__http_branch_tag_and_new_commits, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_git_remote__http_credentials, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git_remote__http_missing_repository, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_git_remote__credentials_never_follow_a_redirect_to_another_host, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git_remote__ssh_with_identity_and_known_hosts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_git_remote__ssh_hashed_known_hosts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git_remote__ssh_refuses_unknown_hosts_and_keys, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("git_remote", tests, NULL, NULL);
}
