/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client's request pipeline: every API call passes through co_kube__do(), which waits for
 * the token bucket, adds authentication, identity and impersonation headers, sends through the
 * transport, re-reads a token file after a 401, retries what may safely be retried with
 * backoff and jitter, and turns a failed answer into a typed error and a decoded Status.
 */
#include "co/json/json.h"
#include "co/kube/kube_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "kube_int.h"

#define DEFAULT_QPS                20.0
#define DEFAULT_BURST              30
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define DEFAULT_REQUEST_TIMEOUT_MS 60000L
#define DEFAULT_MAX_RETRIES        5
#define DEFAULT_TOKEN_RELOAD_MS    60000L
#define RETRY_BASE_MS              200
#define RETRY_CAP_MS               10000
#define RETRY_AFTER_CAP_S          30

void co_kube__discovery_dispose(co_kube_core *core);

/* --- the thread's Status slot ------------------------------------------------------------- */

static _Thread_local co_kube_status last_status;

const co_kube_status *co_kube_status_last(void)
{
    return &last_status;
}

void co_kube__status_clear(void)
{
    last_status.code = 0;
    last_status.reason[0] = '\0';
    last_status.message[0] = '\0';
    last_status.details[0] = '\0';
}

static int code_for(int http, const char *reason)
{
    static const struct {
        const char *reason;
        int code;
    } by_reason[] = {
        {"NotFound", CO_ENOTFOUND},
        {"AlreadyExists", CO_EEXISTS},
        {"Conflict", CO_ECONFLICT},
        {"Gone", CO_EGONE},
        {"Expired", CO_EGONE},
        {"Invalid", CO_EINVALID},
        {"BadRequest", CO_EINVALID},
        {"MethodNotAllowed", CO_EINVALID},
        {"NotAcceptable", CO_EINVALID},
        {"UnsupportedMediaType", CO_EINVALID},
        {"Unauthorized", CO_EAUTH},
        {"Forbidden", CO_EAUTH},
        {"Timeout", CO_ETIMEOUT},
        {"ServerTimeout", CO_ETIMEOUT},
        {"RequestEntityTooLarge", CO_ETOOBIG},
        {"TooManyRequests", CO_EUNAVAILABLE},
        {"ServiceUnavailable", CO_EUNAVAILABLE},
        {"InternalError", CO_EUNAVAILABLE},
    };
    if (reason && reason[0]) {
        for (size_t i = 0; i < CO_ARRAY_SIZE(by_reason); i++) {
            if (strcmp(reason, by_reason[i].reason) == 0) {
                return by_reason[i].code;
            }
        }
    }
    switch (http) {
    case 404:
        return CO_ENOTFOUND;
    case 409:
        return CO_ECONFLICT;
    case 410:
        return CO_EGONE;
    case 400:
    case 405:
    case 406:
    case 415:
    case 422:
        return CO_EINVALID;
    case 401:
    case 403:
        return CO_EAUTH;
    case 408:
    case 504:
        return CO_ETIMEOUT;
    case 413:
        return CO_ETOOBIG;
    case 429:
    case 500:
    case 502:
    case 503:
        return CO_EUNAVAILABLE;
    default:
        return CO_ERROR;
    }
}

/*
 * A 5xx answer that retrying cannot fix. Either its Status names a reason that is no server
 * trouble at all (NotFound, Invalid, Conflict ... sent with a 5xx code), or it is a patch the
 * server could not process: kube-apiserver up to 1.21 reports a server-side apply (or merge
 * patch) whose body does not fit the type's schema — duplicate list keys, a missing merge key,
 * a value of the wrong type — as a 500 with no reason or InternalError. Those messages come
 * from the structured merge of the field manager and never go away by themselves.
 */
static int permanent_5xx(const char *method, int http, const char *reason, const char *message)
{
    static const char *const transient[] = {"InternalError", "ServiceUnavailable",
                                            "TooManyRequests", "Timeout", "ServerTimeout"};
    static const char *const patch_failures[] = {
        "failed to create typed patch object",
        "failed to create typed live object",
        "to smd typed",
        "failed to merge",
        "failed to prune fields",
        "duplicate entries for key",
        "failed to decode",
        "unable to decode",
        "resourceVersion should not be set on objects to be created",
    };
    if (http < 500 || http > 599) {
        return 0;
    }
    int known_transient = !reason || !reason[0];
    for (size_t i = 0; i < CO_ARRAY_SIZE(transient) && !known_transient; i++) {
        known_transient = strcmp(reason, transient[i]) == 0;
    }
    if (!known_transient) {
        return 1;
    }
    if (strcmp(method, "PATCH") != 0 || !message ||
        (reason && reason[0] && strcmp(reason, "InternalError") != 0)) {
        return 0;
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(patch_failures); i++) {
        if (strstr(message, patch_failures[i])) {
            return 1;
        }
    }
    return 0;
}

/* Whether the 5xx response @p resp to @p method is permanent (see permanent_5xx()). */
static int permanent_response(const char *method, const co_kube_response *resp)
{
    struct json_object *st = NULL;
    if (!resp->body.ptr || resp->body.len == 0 ||
        co_kube__parse_json(&st, resp->body.ptr, resp->body.len) < 0) {
        co_error_clear();
        return 0;
    }
    const char *kind = co_json_str(st, "kind", NULL);
    int permanent = kind && strcmp(kind, "Status") == 0 &&
                    permanent_5xx(method, resp->status, co_json_str(st, "reason", NULL),
                                  co_json_str(st, "message", NULL));
    json_object_put(st);
    return permanent;
}

/* Fills the Status slot from a Status object; @p http is the fallback code. */
static void record_status(const struct json_object *st, int http)
{
    co_kube__status_clear();
    last_status.code = http;
    struct json_object *v = NULL;
    if (st && json_object_object_get_ex(st, "code", &v) && json_object_get_int(v) > 0) {
        last_status.code = json_object_get_int(v);
    }
    const char *reason = co_json_str(st, "reason", NULL);
    const char *message = co_json_str(st, "message", NULL);
    snprintf(last_status.reason, sizeof(last_status.reason), "%s", reason ? reason : "");
    snprintf(last_status.message, sizeof(last_status.message), "%s", message ? message : "");
    struct json_object *details = co_kube__obj(st, "details");
    if (details) {
        const char *text = json_object_to_json_string_ext(
            details, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        size_t len = strlen(text);
        /* a cut JSON text is useless to a parser: drop it instead */
        if (len < sizeof(last_status.details)) {
            memcpy(last_status.details, text, len + 1);
        }
    }
}

int co_kube__fail_from_status(const char *context, const struct json_object *status)
{
    record_status(status, 0);
    int code = code_for(last_status.code, last_status.reason);
    return co_error_set(code, "%s: %d %s: %s", context, last_status.code,
                        last_status.reason[0] ? last_status.reason : "Failure",
                        last_status.message[0] ? last_status.message : "(no message)");
}

int co_kube__fail_from_response(const char *method,
                                const char *path,
                                int http_status,
                                const char *body,
                                size_t body_len)
{
    struct json_object *st = NULL;
    if (body_len > 0 && co_kube__parse_json(&st, body, body_len) < 0) {
        st = NULL;
    }
    const char *kind = co_json_str(st, "kind", NULL);
    if (st && kind && strcmp(kind, "Status") == 0) {
        record_status(st, http_status);
    } else {
        co_kube__status_clear();
        last_status.code = http_status;
        /* not a Status: keep a printable prefix of the body as the message */
        size_t n = body_len < 200 ? body_len : 200;
        size_t j = 0;
        for (size_t i = 0; i < n && j + 1 < sizeof(last_status.message); i++) {
            char c = body[i];
            last_status.message[j++] = (c >= 32 && c < 127) ? c : ' ';
        }
        last_status.message[j] = '\0';
    }
    json_object_put(st);
    int code = code_for(http_status, last_status.reason);
    if (code == CO_EUNAVAILABLE &&
        permanent_5xx(method, http_status, last_status.reason, last_status.message)) {
        code = CO_EINVALID;
    }
    return co_error_set(code, "%s %s: %d %s: %s", method, path, http_status,
                        last_status.reason[0] ? last_status.reason : "Failure",
                        last_status.message[0] ? last_status.message : "(no message)");
}

/* --- lifecycle ---------------------------------------------------------------------------- */

static void core_free(co_kube_core *core)
{
    if (!core) {
        return;
    }
    co_kube__discovery_dispose(core);
    if (core->transport) {
        core->transport->free(core->transport);
    }
    co_kube_config_free(core->cfg);
    co_kube_bucket_dispose(&core->bucket);
    if (core->token) {
        co_free_secret(core->token, strlen(core->token) + 1);
    }
    free(core->user_agent);
    pthread_mutex_destroy(&core->lock);
    pthread_mutex_destroy(&core->token_lock);
    pthread_mutex_destroy(&core->disc_lock);
    pthread_mutex_destroy(&core->disc_fetch_lock);
    pthread_cond_destroy(&core->listing_rechecked);
    free(core);
}

static void
set_impersonation(co_kube_client *c, const char *user, const char *const *groups, size_t ngroups)
{
    c->impersonate_user = co_xstrdup(user);
    if (ngroups) {
        c->impersonate_groups = co_xcalloc(ngroups, sizeof(char *));
        for (size_t i = 0; i < ngroups; i++) {
            c->impersonate_groups[i] = co_xstrdup(groups[i]);
        }
        c->nimpersonate_groups = ngroups;
    }
}

int co_kube_client_new_with_transport(co_kube_client **out,
                                      const co_kube_config *cfg,
                                      co_kube_transport *transport,
                                      const co_kube_client_options *opts)
{
    co_kube_client_options defaults = CO_KUBE_CLIENT_OPTIONS_INIT;
    if (!opts) {
        opts = &defaults;
    }
    if (opts->burst < 0 || opts->connect_timeout_ms < 0 || opts->request_timeout_ms < 0 ||
        opts->token_reload_ms < 0 || opts->retry_base_ms < 0) {
        transport->free(transport);
        return co_error_set(CO_EINVALID, "client options: burst and timeouts must not be "
                                         "negative");
    }
    co_kube_core *core = co_xcalloc(1, sizeof(*core));
    core->refs = 1;
    pthread_mutex_init(&core->lock, NULL);
    pthread_mutex_init(&core->token_lock, NULL);
    pthread_mutex_init(&core->disc_lock, NULL);
    pthread_mutex_init(&core->disc_fetch_lock, NULL);
    pthread_cond_init(&core->listing_rechecked, NULL);
    core->cfg = co_kube_config__dup(cfg);
    core->transport = transport;
    double qps = opts->qps == 0 ? DEFAULT_QPS : opts->qps;
    co_kube_bucket_init(&core->bucket, qps, opts->burst ? opts->burst : DEFAULT_BURST,
                        co_kube__now_ms());
    if (cfg->token) {
        core->token = co_xstrdup(cfg->token);
    }
    core->token_read_ms = -1;
    core->token_reload_ms = opts->token_reload_ms ? opts->token_reload_ms : DEFAULT_TOKEN_RELOAD_MS;
    core->user_agent = opts->user_agent ? co_xstrdup(opts->user_agent)
                                        : co_xstrdup("component-operator/" CO_VERSION);
    core->connect_timeout_ms =
        opts->connect_timeout_ms ? opts->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
    core->request_timeout_ms =
        opts->request_timeout_ms ? opts->request_timeout_ms : DEFAULT_REQUEST_TIMEOUT_MS;
    core->max_retries = opts->max_retries == 0  ? DEFAULT_MAX_RETRIES
                        : opts->max_retries < 0 ? 0
                                                : opts->max_retries;
    core->retry_base_ms = opts->retry_base_ms ? opts->retry_base_ms : RETRY_BASE_MS;

    co_kube_client *c = co_xcalloc(1, sizeof(*c));
    c->core = core;
    if (opts->impersonate_user) {
        set_impersonation(c, opts->impersonate_user, opts->impersonate_groups,
                          opts->nimpersonate_groups);
    } else if (cfg->impersonate_user) {
        set_impersonation(c, cfg->impersonate_user, (const char *const *)cfg->impersonate_groups,
                          cfg->nimpersonate_groups);
    }
    *out = c;
    return 0;
}

int co_kube_client_new_impersonating(co_kube_client **out,
                                     co_kube_client *parent,
                                     const char *user,
                                     const char *const *groups,
                                     size_t ngroups)
{
    if (!user || !user[0]) {
        return co_error_set(CO_EINVALID, "impersonation needs a user name");
    }
    co_kube_client *c = co_xcalloc(1, sizeof(*c));
    c->core = parent->core;
    c->parent = parent;
    pthread_mutex_lock(&c->core->lock);
    c->core->refs++;
    pthread_mutex_unlock(&c->core->lock);
    set_impersonation(c, user, groups, ngroups);
    *out = c;
    return 0;
}

void co_kube_client_free(co_kube_client *client)
{
    if (!client) {
        return;
    }
    co_kube_core *core = client->core;
    pthread_mutex_lock(&core->lock);
    int last = --core->refs == 0;
    pthread_mutex_unlock(&core->lock);
    if (last) {
        core_free(core);
    }
    free(client->impersonate_user);
    for (size_t i = 0; i < client->nimpersonate_groups; i++) {
        free(client->impersonate_groups[i]);
    }
    free(client->impersonate_groups);
    free(client);
}

const char *co_kube_client_namespace(const co_kube_client *client)
{
    return client->core->cfg->namespace;
}

/* --- authentication ----------------------------------------------------------------------- */

/* Re-reads the token file into core->token (caller holds token_lock). A failed read keeps
 * the previous token: the file may be in the middle of an atomic replacement. */
static void reload_token_locked(co_kube_core *core)
{
    co_buf buf = CO_BUF_INIT(CO_MAX_CONFIG_FILE);
    co_error_clear();
    if (co_kube__read_file(&buf, core->cfg->token_file, CO_MAX_CONFIG_FILE) == 0) {
        size_t len = buf.len;
        while (len > 0 &&
               (buf.ptr[len - 1] == '\n' || buf.ptr[len - 1] == '\r' || buf.ptr[len - 1] == ' ')) {
            len--;
        }
        if (len > 0) {
            if (core->token) {
                co_free_secret(core->token, strlen(core->token) + 1);
            }
            core->token = co_xstrndup(buf.ptr, len);
        }
    }
    co_error_clear();
    if (buf.ptr) {
        co_memzero(buf.ptr, buf.cap);
    }
    co_buf_dispose(&buf);
    core->token_read_ms = co_kube__now_ms();
}

/* Builds the Authorization header line (a secret; wipe and free it), or NULL. */
static char *auth_header(co_kube_core *core, int force_reload)
{
    char *line = NULL;
    const co_kube_config *cfg = core->cfg;
    if (cfg->token_file) {
        pthread_mutex_lock(&core->token_lock);
        if (force_reload || core->token_read_ms < 0 ||
            co_kube__now_ms() - core->token_read_ms >= core->token_reload_ms) {
            reload_token_locked(core);
        }
        if (core->token) {
            line = co_xasprintf("Authorization: Bearer %s", core->token);
        }
        pthread_mutex_unlock(&core->token_lock);
    } else if (core->token) {
        line = co_xasprintf("Authorization: Bearer %s", core->token);
    } else if (cfg->username) {
        char *plain = co_xasprintf("%s:%s", cfg->username, cfg->password ? cfg->password : "");
        size_t plen = strlen(plain);
        char *b64 = co_base64_encode(plain, plen, CO_BASE64_STD);
        line = co_xasprintf("Authorization: Basic %s", b64);
        co_free_secret(b64, strlen(b64) + 1);
        co_free_secret(plain, plen + 1);
    }
    return line;
}

static void free_secret_line(char *s)
{
    if (s) {
        co_free_secret(s, strlen(s) + 1);
    }
}

/* --- the pipeline ------------------------------------------------------------------------- */

typedef struct header_set {
    char *lines[64];
    size_t n;
    int auth_index; /* index of the Authorization line, or -1 */
} header_set;

static void headers_add(header_set *h, char *line)
{
    CO_ASSERT(h->n < CO_ARRAY_SIZE(h->lines));
    h->lines[h->n++] = line;
}

static void headers_dispose(header_set *h)
{
    for (size_t i = 0; i < h->n; i++) {
        if ((int)i == h->auth_index) {
            free_secret_line(h->lines[i]);
        } else {
            free(h->lines[i]);
        }
    }
    h->n = 0;
    h->auth_index = -1;
}

static void build_headers(header_set *h, co_kube_client *c, const co_kube_call *call, int reload)
{
    co_kube_core *core = c->core;
    h->n = 0;
    h->auth_index = -1;
    headers_add(h, co_xasprintf("Accept: %s", call->accept ? call->accept : "application/json"));
    headers_add(h, co_xasprintf("User-Agent: %s", core->user_agent));
    if (call->content_type) {
        headers_add(h, co_xasprintf("Content-Type: %s", call->content_type));
    }
    char *auth = auth_header(core, reload);
    if (auth) {
        h->auth_index = (int)h->n;
        headers_add(h, auth);
    }
    if (c->impersonate_user) {
        headers_add(h, co_xasprintf("Impersonate-User: %s", c->impersonate_user));
        size_t max = CO_ARRAY_SIZE(h->lines) - h->n;
        for (size_t i = 0; i < c->nimpersonate_groups && i < max; i++) {
            headers_add(h, co_xasprintf("Impersonate-Group: %s", c->impersonate_groups[i]));
        }
    }
}

void (*co_kube__delay_observer)(int64_t ms);

static int wait_ms(int64_t ms, const co_kube_call *call)
{
    if (co_kube__delay_observer) {
        co_kube__delay_observer(ms);
    }
    int64_t deadline = co_kube__now_ms() + ms;
    for (;;) {
        if (call->cancelled && call->cancelled(call->cancel_payload)) {
            return co_error_set(CO_ECANCELED, "%s %s: cancelled", call->method, call->path);
        }
        int64_t left = deadline - co_kube__now_ms();
        if (left <= 0) {
            return 0;
        }
        co_kube__sleep_ms(left > 100 ? 100 : left, NULL);
    }
}

int co_kube__do(co_kube_client *client, const co_kube_call *call, co_kube_response *resp)
{
    co_kube_core *core = client->core;
    header_set hs = {.auth_index = -1};
    int rc = 0;
    int reloaded = 0;
    int max_retries = call->watch ? 0 : core->max_retries;
    size_t cap = resp->body.max;

    co_kube__status_clear();
    if (call->body_len > CO_MAX_API_REQUEST) {
        return co_error_set(CO_ETOOBIG, "%s %s: request body of %zu bytes exceeds %zu",
                            call->method, call->path, call->body_len, CO_MAX_API_REQUEST);
    }
    for (int attempt = 0;; attempt++) {
        int64_t wait = co_kube_bucket_reserve(&core->bucket, co_kube__now_ms());
        if (wait > 0 && (rc = wait_ms(wait, call)) < 0) {
            goto done;
        }
        headers_dispose(&hs);
        build_headers(&hs, client, call, 0);
        if (reloaded == 1) {
            reloaded = 2;
        }
        co_kube_request req = {
            .method = call->method,
            .path = call->path,
            .headers = (const char *const *)hs.lines,
            .nheaders = hs.n,
            .body = call->body,
            .body_len = call->body_len,
            .connect_timeout_ms = core->connect_timeout_ms,
            .timeout_ms = call->watch ? 0 : core->request_timeout_ms,
            .low_speed_time_s = call->watch ? call->low_speed_time_s : 0,
            .max_response = cap,
            .stream = call->stream,
            .stream_payload = call->stream_payload,
            .cancelled = call->cancelled,
            .cancel_payload = call->cancel_payload,
        };
        co_kube_response_dispose(resp);
        co_kube_response_init(resp, cap);
        co_error_clear();
        rc = core->transport->send(core->transport, &req, resp);
        int64_t delay = -1;
        if (rc == 0) {
            if (resp->status >= 200 && resp->status < 300) {
                goto done;
            }
            if (resp->status == 401 && core->cfg->token_file && !reloaded) {
                /* the token may have been rotated: read it again and retry once */
                pthread_mutex_lock(&core->token_lock);
                reload_token_locked(core);
                pthread_mutex_unlock(&core->token_lock);
                reloaded = 1;
                attempt--;
                continue;
            }
            int retryable = resp->status == 429 ||
                            (call->idempotent && (resp->status == 500 || resp->status == 502 ||
                                                  resp->status == 503 || resp->status == 504));
            if (retryable && resp->status >= 500 && permanent_response(call->method, resp)) {
                retryable = 0;
            }
            if (retryable && attempt < max_retries) {
                if (resp->retry_after_s >= 0) {
                    long s = resp->retry_after_s < RETRY_AFTER_CAP_S ? resp->retry_after_s
                                                                     : RETRY_AFTER_CAP_S;
                    delay = (int64_t)s * 1000;
                }
            } else {
                rc = co_kube__fail_from_response(call->method, call->path, resp->status,
                                                 resp->body.ptr ? resp->body.ptr : "",
                                                 resp->body.len);
                goto done;
            }
        } else {
            int retryable = (rc == CO_EUNAVAILABLE && (resp->not_sent || call->idempotent)) ||
                            (rc == CO_ETIMEOUT && call->idempotent);
            if (!retryable || attempt >= max_retries) {
                goto done;
            }
        }
        if (delay < 0) {
            delay =
                co_kube_backoff_ms(attempt, core->retry_base_ms, RETRY_CAP_MS, co_kube__random());
        }
        if ((rc = wait_ms(delay, call)) < 0) {
            goto done;
        }
    }
done:
    headers_dispose(&hs);
    return rc;
}

/* --- raw requests ------------------------------------------------------------------------- */

static int is_idempotent(const char *method, const char *content_type)
{
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 || strcmp(method, "PUT") == 0) {
        return 1;
    }
    return strcmp(method, "PATCH") == 0 && content_type &&
           strcmp(content_type, "application/apply-patch+yaml") == 0;
}

int co_kube_request_raw(co_buf *out,
                        co_kube_client *client,
                        const char *method,
                        const char *path,
                        const char *content_type,
                        const char *body,
                        size_t body_len)
{
    co_kube_response resp;
    co_kube_response_init(&resp, out ? out->max : CO_MAX_API_RESPONSE);
    co_kube_call call = {
        .method = method,
        .path = path,
        .content_type = content_type,
        .body = body,
        .body_len = body_len,
        .idempotent = is_idempotent(method, content_type),
    };
    int rc = co_kube__do(client, &call, &resp);
    if (rc == 0 && out && resp.body.len) {
        rc = co_buf_put(out, resp.body.ptr, resp.body.len);
    }
    co_kube_response_dispose(&resp);
    return rc;
}

int co_kube_request_json(struct json_object **out,
                         co_kube_client *client,
                         const char *method,
                         const char *path,
                         const struct json_object *body)
{
    const char *text = NULL;
    size_t len = 0;
    struct json_object *copy = NULL;
    if (body) {
        /* serialising writes json-c's internal buffer, so work on a private copy */
        if (json_object_deep_copy((struct json_object *)body, &copy, NULL) != 0) {
            return co_error_set(CO_ERROR, "cannot copy the request body");
        }
        text = json_object_to_json_string_length(
            copy, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    }
    co_buf buf = CO_BUF_INIT(CO_MAX_API_RESPONSE);
    int rc = co_kube_request_raw(&buf, client, method, path, body ? "application/json" : NULL, text,
                                 len);
    json_object_put(copy);
    if (rc == 0 && out) {
        rc = co_kube__parse_json(out, co_buf_cstr(&buf), buf.len);
        if (rc < 0) {
            rc = co_error_wrap("%s %s: answer", method, path);
        }
    }
    co_buf_dispose(&buf);
    return rc;
}
