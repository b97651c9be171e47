/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubectl driven with posix_spawn and pipes (test_kubectl.h). The resource names it needs for
 * `kubectl get` are "<plural>.<version>.<group>" so that the exact API version is asked for.
 */
#include "tests/support/test_kubectl.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/common.h"
#include "co/util/error.h"
#include "tests/support/test_support.h"

#define MAX_ARGS 64

void tkc_init(tkc *k, const char *kubeconfig, const char *dir)
{
    k->kubeconfig = co_xstrdup(kubeconfig);
    k->cache_dir = co_xasprintf("%s/kubectl-cache", dir);
    k->gets = 0;
}

void tkc_dispose(tkc *k)
{
    free(k->kubeconfig);
    free(k->cache_dir);
    k->kubeconfig = k->cache_dir = NULL;
}

static const char *kubectl_path(void)
{
    const char *env = getenv("KUBECTL"); // NOLINT(concurrency-mt-unsafe): test set-up
    if (env && *env) {
        return env;
    }
    return access("/usr/bin/kubectl", X_OK) == 0 ? "/usr/bin/kubectl" : "kubectl";
}

static int vrun(const tkc *k, const char *input, char **out, char **err, va_list ap)
{
    const char *argv[MAX_ARGS];
    size_t n = 0;
    char *kc = co_xasprintf("--kubeconfig=%s", k->kubeconfig);
    char *cd = co_xasprintf("--cache-dir=%s", k->cache_dir);
    argv[n++] = kubectl_path();
    argv[n++] = kc;
    argv[n++] = cd;
    argv[n++] = "--request-timeout=60s";
    for (const char *a = va_arg(ap, const char *); a && n < MAX_ARGS - 1;
         a = va_arg(ap, const char *)) {
        argv[n++] = a;
    }
    argv[n] = NULL;
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
    if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
        fail_msg("pipe: %d", errno);
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
    posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
    posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ); // NOLINT
    posix_spawn_file_actions_destroy(&fa);
    close(pin[0]);
    close(pout[1]);
    close(perr[1]);
    if (rc != 0) {
        fail_msg("cannot run %s", argv[0]);
    }
    size_t off = 0, ilen = input ? strlen(input) : 0;
    if (ilen == 0) {
        close(pin[1]);
        pin[1] = -1;
    }
    co_buf bo = CO_BUF_INIT(SIZE_MAX), be = CO_BUF_INIT(SIZE_MAX);
    int open_out = 1, open_err = 1;
    while (open_out || open_err) {
        struct pollfd fds[3] = {{pout[0], POLLIN, 0}, {perr[0], POLLIN, 0}, {pin[1], POLLOUT, 0}};
        nfds_t nf = pin[1] >= 0 ? 3 : 2;
        if (!open_out) {
            fds[0].fd = -1;
        }
        if (!open_err) {
            fds[1].fd = -1;
        }
        if (poll(fds, nf, -1) < 0) {
            continue;
        }
        char buf[8192];
        for (int i = 0; i < 2; i++) {
            if (fds[i].revents) {
                ssize_t r = read(fds[i].fd, buf, sizeof(buf));
                if (r <= 0) {
                    *(i == 0 ? &open_out : &open_err) = 0;
                } else if (co_buf_put(i == 0 ? &bo : &be, buf, (size_t)r) < 0) {
                    fail_msg("kubectl output too large");
                }
            }
        }
        if (nf == 3 && fds[2].revents) {
            ssize_t w = write(pin[1], input + off, ilen - off);
            if (w > 0) {
                off += (size_t)w;
            }
            if (w <= 0 || off == ilen) {
                close(pin[1]);
                pin[1] = -1;
            }
        }
    }
    if (pin[1] >= 0) {
        close(pin[1]);
    }
    close(pout[0]);
    close(perr[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (out) {
        *out = co_buf_take(&bo, NULL);
    }
    if (err) {
        *err = co_buf_take(&be, NULL);
    }
    co_buf_dispose(&bo);
    co_buf_dispose(&be);
    free(kc);
    free(cd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

int tkc_run(const tkc *k, const char *input, char **out, char **err, ...)
{
    va_list ap;
    va_start(ap, err);
    int rc = vrun(k, input, out, err, ap);
    va_end(ap);
    return rc;
}

void tkc_ok(const tkc *k, const char *input, ...)
{
    va_list ap;
    va_start(ap, input);
    char *out = NULL, *err = NULL;
    int rc = vrun(k, input, &out, &err, ap);
    va_end(ap);
    if (rc != 0) {
        fprintf(stderr, "kubectl failed (%d): %s%s\n", rc, err, out);
    }
    free(out);
    free(err);
    if (rc != 0) {
        fail_msg("kubectl failed (%d)", rc);
    }
}

/* "GitRepository" -> "gitrepositories" (the kinds the source layer reads). */
static char *plural(const char *kind)
{
    size_t n = strlen(kind);
    char *lower = co_xmalloc(n + 3);
    for (size_t i = 0; i < n; i++) {
        lower[i] = (char)tolower((unsigned char)kind[i]);
    }
    lower[n] = '\0';
    if (n > 1 && lower[n - 1] == 'y') {
        lower[n - 1] = '\0';
        char *p = co_xasprintf("%sies", lower);
        free(lower);
        return p;
    }
    lower[n] = 's';
    lower[n + 1] = '\0';
    return lower;
}

int tkc_get(void *ctx,
            const char *api_version,
            const char *kind,
            const char *ns,
            const char *name,
            struct json_object **out)
{
    tkc *k = ctx;
    k->gets++;
    char *resource;
    const char *slash = strchr(api_version, '/');
    char *pl = plural(kind);
    if (slash) {
        resource =
            co_xasprintf("%s.%s.%.*s", pl, slash + 1, (int)(slash - api_version), api_version);
    } else {
        resource = co_xasprintf("%s.%s", pl, api_version);
    }
    free(pl);
    char *sout = NULL, *serr = NULL;
    int rc = tkc_run(k, NULL, &sout, &serr, "get", "-n", ns, resource, name, "-o", "json", NULL);
    int result = 0;
    if (rc == 0) {
        *out = json_tokener_parse(sout);
        if (!*out) {
            result = co_error_set(CO_ERROR, "kubectl printed no JSON");
        }
    } else if (strstr(serr, "(NotFound)")) {
        result = co_error_set(CO_ENOTFOUND, "%s", serr);
    } else if (strstr(serr, "doesn't have a resource type")) {
        result = co_error_set(CO_ENOMATCH, "%s", serr);
    } else {
        result = co_error_set(CO_ERROR, "kubectl get %s: %s", resource, serr);
    }
    free(resource);
    free(sout);
    free(serr);
    return result;
}
