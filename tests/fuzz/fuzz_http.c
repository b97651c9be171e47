/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target over the webhook's HTTP request layer from raw bytes: the input is what a
 * client sends on one connection (request line, headers, body, further pipelined requests),
 * written into one end of a socketpair whose other end is served by a local webhook server
 * (wh_server_local_new(): libmicrohttpd's parser and the TLS listener's access handler, which
 * decides from the headers, streams the body into the route's capped buffer under the memory
 * budget and hands it to wh_http_handle() with the real admission and conversion handlers).
 * The body caps and the memory budget are small, so that 413 and 429 are reachable.
 * Invariants beyond "no crash, no leak, no hang":
 * - the connection ends once the input is in, and every reservation of the memory budget has
 *   been given back by then;
 * - the first answer is a well-framed HTTP/1.x response; one in JSON (the webhook's own) has a
 *   status of the protocol layer, a body of exactly Content-Length bytes that is a JSON object,
 *   and with HTTP 200 a review response echoing a non-empty uid.
 * With CO_FUZZ_HTTP_PRINT set in the environment, the answers are written to stderr (to look
 * at what an input gets: build/fuzz/fuzz_http FILE).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/log.h"
#include "webhook/wh_admission.h"
#include "webhook/wh_server.h"
#include "webhook/wh_state.h"

/* Rounds of write, serve, read before a connection that has not ended counts as a hang. */
#define MAX_ROUNDS 20000

static wh_state *state;
static wh_handlers handlers;
static wh_server *server;

static void feed(const char *text)
{
    struct json_object *obj = json_tokener_parse(text);
    if (!obj) {
        __builtin_trap();
    }
    wh_state_component_put(state, obj);
    if (wh_state_policy_put(state, obj) < 0) {
        /* not a policy */
    }
    wh_state_namespace_put(state, obj);
    json_object_put(obj);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    co_log_setup("fuzz", CO_LOG_ERROR, CO_LOG_FORMAT_TEXT);
    /* tentative entries expire at once, so that admitted inputs do not pile up */
    wh_state_new(&state, 0);
    feed("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":{"
         "\"name\":\"a\",\"namespace\":\"ns\"},\"spec\":{\"dependencies\":[{\"name\":\"b\"}]}}");
    feed("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ns\","
         "\"labels\":{\"t\":\"x\"}}}");
    handlers = wh_admission_handlers(state);
    wh_server_config cfg = {0};
    cfg.handlers = &handlers;
    cfg.max_connections = 4;
    cfg.limits.admission_body = 16 * 1024;
    cfg.limits.conversion_body = 16 * 1024;
    cfg.memory_budget = 192 * 1024;
    if (wh_server_local_new(&server, &cfg) < 0) {
        __builtin_trap();
    }
    return 0;
}

/* The value of header @p name in the head [p, end), or NULL; its length in *len. */
static const char *header(const char *p, const char *end, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) {
            eol = end;
        }
        if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (v < eol && *v == ' ') {
                v++;
            }
            const char *ve = eol;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ')) {
                ve--;
            }
            *len = (size_t)(ve - v);
            return v;
        }
        p = eol + 1;
    }
    return NULL;
}

static void check_json_body(int status, const char *body, size_t len)
{
    int known = status == 200 || status == 400 || status == 404 || status == 405 || status == 413 ||
                status == 415 || status == 429;
    if (!known) {
        __builtin_trap();
    }
    struct json_object *obj = NULL;
    struct json_tokener *tok = json_tokener_new();
    obj = json_tokener_parse_ex(tok, body, (int)len);
    int complete = json_tokener_get_error(tok) == json_tokener_success &&
                   json_tokener_get_parse_end(tok) == len;
    json_tokener_free(tok);
    if (!obj || !complete || !json_object_is_type(obj, json_type_object)) {
        __builtin_trap();
    }
    if (status == 200) {
        struct json_object *resp = NULL, *uid = NULL;
        if (!json_object_object_get_ex(obj, "response", &resp) ||
            !json_object_object_get_ex(resp, "uid", &uid) ||
            !json_object_is_type(uid, json_type_string) || json_object_get_string_len(uid) == 0) {
            __builtin_trap();
        }
    }
    json_object_put(obj);
}

/* Checks the first response in @p out; @p head_request: the first request was a HEAD. */
static void check_response(const co_buf *out, int head_request)
{
    const char *p = out->ptr, *end = out->ptr + out->len;
    if (out->len < 12 || (memcmp(p, "HTTP/1.1 ", 9) != 0 && memcmp(p, "HTTP/1.0 ", 9) != 0)) {
        __builtin_trap();
    }
    int status = 0;
    for (size_t i = 9; i < 12; i++) {
        if (p[i] < '0' || p[i] > '9') {
            __builtin_trap();
        }
        status = status * 10 + (p[i] - '0');
    }
    const char *sep = NULL;
    for (const char *q = p; q + 4 <= end; q++) {
        if (memcmp(q, "\r\n\r\n", 4) == 0) {
            sep = q;
            break;
        }
    }
    if (!sep) {
        __builtin_trap(); /* the head never ends */
    }
    size_t ctl = 0, cll = 0;
    const char *ct = header(p, sep, "Content-Type", &ctl);
    const char *cl = header(p, sep, "Content-Length", &cll);
    if (head_request || !ct || ctl < 16 || strncmp(ct, "application/json", 16) != 0) {
        return; /* libmicrohttpd's own answers, or no body to look at */
    }
    if (!cl) {
        __builtin_trap();
    }
    size_t want = 0;
    for (size_t i = 0; i < cll; i++) {
        if (cl[i] < '0' || cl[i] > '9' || want > SIZE_MAX / 10) {
            __builtin_trap();
        }
        want = want * 10 + (size_t)(cl[i] - '0');
    }
    const char *body = sep + 4;
    if ((size_t)(end - body) < want) {
        __builtin_trap(); /* the connection ended inside the body */
    }
    check_json_body(status, body, want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
        __builtin_trap();
    }
    if (wh_server_local_add(server, sv[1]) < 0) {
        __builtin_trap();
    }
    co_buf out = CO_BUF_INIT(4 * 1024 * 1024);
    size_t off = 0;
    int shut = 0, ended = 0;
    for (int round = 0; round < MAX_ROUNDS && !ended; round++) {
        if (off < size) {
            ssize_t n = send(sv[0], data + off, size - off, MSG_NOSIGNAL);
            if (n > 0) {
                off += (size_t)n;
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                off = size; /* the server closed the connection */
            }
        }
        if (off == size && !shut) {
            shutdown(sv[0], SHUT_WR);
            shut = 1;
        }
        wh_server_local_run(server);
        for (;;) {
            char buf[16384];
            ssize_t n = recv(sv[0], buf, sizeof(buf), 0);
            if (n > 0) {
                if (co_buf_put(&out, buf, (size_t)n) < 0) {
                    __builtin_trap(); /* more answer than a few requests can have */
                }
                continue;
            }
            if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                ended = 1;
            }
            break;
        }
    }
    close(sv[0]);
    if (!ended) {
        __builtin_trap(); /* the server holds a connection whose client has said everything */
    }
    if (wh_server_memory_used(server) != 0) {
        __builtin_trap(); /* a request's reservation outlived it */
    }
    if (getenv("CO_FUZZ_HTTP_PRINT")) {
        fprintf(stderr, "%.*s\n", (int)out.len, out.ptr ? out.ptr : "");
    }
    if (out.len > 0) {
        size_t skip = 0;
        while (skip < size && (data[skip] == '\r' || data[skip] == '\n')) {
            skip++;
        }
        check_response(&out, size - skip >= 5 && memcmp(data + skip, "HEAD ", 5) == 0);
    }
    co_buf_dispose(&out);
    return 0;
}
