/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Integration-test helpers (see kube_test.h).
 */
#include "tests/support/kube_test.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/kube/kube_config.h"
#include "co/util/error.h"
#include "tests/support/test_support.h"

const char *co_test_env(const char *name)
{
    const char *v = getenv(name); // NOLINT(concurrency-mt-unsafe): tests read it up front
    if (!v || !v[0]) {
        fail_msg("%s is not set: run integration tests through tests/run.sh", name);
    }
    return v;
}

co_kube_client *co_test_kube_client(const char *env)
{
    return co_test_kube_client_for(co_test_env(env));
}

co_kube_client *co_test_kube_client_for(const char *path)
{
    co_kube_config *cfg = NULL;
    co_kube_client *c = NULL;
    assert_co_pass(co_kube_config_load(&cfg, path, NULL));
    assert_co_pass(co_kube_client_new(&c, cfg, NULL));
    co_kube_config_free(cfg);
    return c;
}

co_kube_client *co_test_kube_client_gnutls(const char *path)
{
    co_kube_config *cfg = NULL;
    co_kube_transport *t = NULL;
    co_kube_client *c = NULL;
    assert_co_pass(co_kube_config_load(&cfg, path, NULL));
    assert_co_pass(co_kube_transport_gnutls_new(&t, cfg));
    assert_co_pass(co_kube_client_new_with_transport(&c, cfg, t, NULL));
    co_kube_config_free(cfg);
    return c;
}

char *co_test_random_name(const char *prefix, size_t n)
{
    char buf[64];
    if (n >= sizeof(buf)) {
        n = sizeof(buf) - 1;
    }
    unsigned char rnd[64];
    if (getrandom(rnd, n, 0) != (ssize_t)n) {
        fail_msg("getrandom failed");
    }
    for (size_t i = 0; i < n; i++) {
        buf[i] = (char)('a' + rnd[i] % 26);
    }
    buf[n] = '\0';
    return co_xasprintf("%s%s", prefix, buf);
}

char *co_test_kube_namespace(co_kube_client *c, const char *prefix)
{
    char *name = co_test_random_name(prefix, 6);
    struct json_object *ns = co_test_json(
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", name);
    assert_co_pass(co_kube_create(NULL, c, ns, NULL));
    json_object_put(ns);
    return name;
}

struct json_object *co_test_json(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = co_xvasprintf(fmt, ap);
    va_end(ap);
    struct json_object *obj = json_tokener_parse(text);
    if (!obj) {
        fail_msg("not JSON: %s", text);
    }
    free(text);
    return obj;
}

int co_test_poll(int (*check)(void *payload), void *payload, long timeout_ms)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        if (check(payload)) {
            return 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (elapsed >= timeout_ms) {
            return 0;
        }
        struct timespec ts = {0, 100L * 1000000};
        nanosleep(&ts, NULL);
    }
}

int co_test_run(const char *const *argv)
{
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        dup2(2, 1); /* keep the TAP output on stdout clean */
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        continue;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *script(void)
{
    return co_xasprintf("%s/tests/env/controlplane.sh", CO_SOURCE_ROOT);
}

void co_test_controlplane_start(co_test_controlplane *cp)
{
    char tmpl[] = "/tmp/co-cp-test-XXXXXX";
    if (!mkdtemp(tmpl)) {
        fail_msg("mkdtemp failed");
    }
    cp->dir = co_xstrdup(tmpl);
    cp->kubeconfig = co_xasprintf("%s/admin.kubeconfig", cp->dir);
    if (co_test_controlplane_cmd(cp, "start") != 0) {
        fail_msg("could not start a private control plane in %s", cp->dir);
    }
}

int co_test_controlplane_cmd(co_test_controlplane *cp, const char *cmd)
{
    char *sh = script();
    const char *argv[] = {sh, cmd, cp->dir, NULL};
    int rc = co_test_run(argv);
    free(sh);
    return rc;
}

void co_test_controlplane_stop(co_test_controlplane *cp)
{
    if (cp->dir) {
        (void)co_test_controlplane_cmd(cp, "stop");
    }
    free(cp->dir);
    free(cp->kubeconfig);
    cp->dir = NULL;
    cp->kubeconfig = NULL;
}

/* ---- a counting transport ------------------------------------------------------------------ */

static int
counting_send(co_kube_transport *self, const co_kube_request *req, co_kube_response *resp)
{
    co_test_counting *c = (co_test_counting *)self;
    char *line = co_xasprintf("%s %s", req->method, req->path);
    pthread_mutex_lock(&c->mu);
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->log = co_xrealloc(c->log, c->cap * sizeof(char *));
        c->bodies = co_xrealloc(c->bodies, c->cap * sizeof(char *));
    }
    c->bodies[c->n] = req->body ? co_xstrndup(req->body, req->body_len) : NULL;
    c->log[c->n++] = line;
    pthread_mutex_unlock(&c->mu);
    return c->inner->send(c->inner, req, resp);
}

void co_test_counting_reset(co_test_counting *c)
{
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n; i++) {
        free(c->log[i]);
        free(c->bodies[i]);
    }
    c->n = 0;
    pthread_mutex_unlock(&c->mu);
}

static void counting_free(co_kube_transport *self)
{
    co_test_counting *c = (co_test_counting *)self;
    co_test_counting_reset(c);
    free(c->log);
    free(c->bodies);
    c->inner->free(c->inner);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

co_test_counting *co_test_counting_new(const co_kube_config *cfg)
{
    co_test_counting *c = co_xcalloc(1, sizeof(*c));
    c->base.send = counting_send;
    c->base.free = counting_free;
    pthread_mutex_init(&c->mu, NULL);
    if (co_kube_transport_curl_new(&c->inner, cfg) < 0) {
        fprintf(stderr, "curl transport: %s\n", co_error_last());
        abort();
    }
    return c;
}

/* Whether log line @p line ("METHOD path") is of @p method (NULL: any) and its path holds
 * @p needle (NULL: any). */
static bool counting_matches(const char *line, const char *method, const char *needle)
{
    const char *sp = strchr(line, ' ');
    bool m = !method ||
             ((size_t)(sp - line) == strlen(method) && strncmp(line, method, strlen(method)) == 0);
    return m && (!needle || strstr(sp + 1, needle));
}

size_t co_test_counting_count(co_test_counting *c, const char *method, const char *needle)
{
    size_t k = 0;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n; i++) {
        k += counting_matches(c->log[i], method, needle);
    }
    pthread_mutex_unlock(&c->mu);
    return k;
}

char *co_test_counting_last_body(co_test_counting *c, const char *method, const char *needle)
{
    char *body = NULL;
    pthread_mutex_lock(&c->mu);
    for (size_t i = c->n; i-- > 0;) {
        if (counting_matches(c->log[i], method, needle)) {
            body = c->bodies[i] ? co_xstrdup(c->bodies[i]) : NULL;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return body;
}

void co_test_counting_print(co_test_counting *c, const char *title)
{
    pthread_mutex_lock(&c->mu);
    printf("# %s (%zu requests):\n", title, c->n);
    for (size_t i = 0; i < c->n; i++) {
        printf("#   %s\n", c->log[i]);
    }
    pthread_mutex_unlock(&c->mu);
}
