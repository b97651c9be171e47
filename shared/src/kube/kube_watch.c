/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch streams. The API server writes one JSON event per line; chunks from the transport are
 * cut into lines without copying where possible (a line wholly inside a chunk is decoded in
 * place; only a line split across chunks is assembled in the framer's capped buffer), and
 * every byte is scanned for a newline exactly once.
 */
#include "co/json/json.h"
#include "co/kube/kube_watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "kube_int.h"

#define DEFAULT_TIMEOUT_S 300
/* grace beyond the server-side timeout before a silent stream counts as stalled */
#define STALL_GRACE_S 60

/* --- framing ------------------------------------------------------------------------------ */

int co_kube_framer_feed(co_kube_framer *fr,
                        const char *data,
                        size_t len,
                        co_kube_line_cb cb,
                        void *payload)
{
    int rc;
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        if (!nl) {
            /* an unfinished line: keep it (the cap bounds one line) */
            return co_buf_put(&fr->partial, data, len);
        }
        size_t part = (size_t)(nl - data);
        if (fr->partial.len > 0) {
            if ((rc = co_buf_put(&fr->partial, data, part)) < 0) {
                return rc;
            }
            rc = cb(fr->partial.ptr, fr->partial.len, payload);
            co_buf_reset(&fr->partial);
        } else {
            if (part > fr->partial.max) {
                co_buf_dispose(&fr->partial);
                return co_error_set(CO_ETOOBIG, "watch line of %zu bytes exceeds %zu", part,
                                    fr->partial.max);
            }
            rc = cb(data, part, payload);
        }
        if (rc != 0) {
            return rc;
        }
        data = nl + 1;
        len -= part + 1;
    }
    return 0;
}

void co_kube_framer_dispose(co_kube_framer *fr)
{
    co_buf_dispose(&fr->partial);
}

/* --- events ------------------------------------------------------------------------------- */

const char *co_kube_event_type_name(co_kube_event_type type)
{
    switch (type) {
    case CO_KUBE_ADDED:
        return "ADDED";
    case CO_KUBE_MODIFIED:
        return "MODIFIED";
    case CO_KUBE_DELETED:
        return "DELETED";
    case CO_KUBE_BOOKMARK:
        return "BOOKMARK";
    default:
        return "UNKNOWN";
    }
}

typedef struct watch_state {
    co_kube_framer framer;
    co_kube_watch_cb cb;
    void *payload;
    const char *path;
    int stopped;             /* the callback asked to stop with a positive value */
    int skip_managed_fields; /* leave object.metadata.managedFields out of the parse */
} watch_state;

static int on_line(const char *line, size_t len, void *payload)
{
    watch_state *ws = payload;
    struct json_object *ev = NULL;
    int rc = 0;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\r' || line[i] == '\t')) {
        i++;
    }
    if (i == len) {
        return 0; /* blank line */
    }
    if (co_kube__parse_json_skip(&ev, line, len,
                                 ws->skip_managed_fields ? co_kube__skip_event_managed_fields
                                                         : NULL) < 0) {
        return co_error_wrap("watch %s: event", ws->path);
    }
    const char *type = co_json_str(ev, "type", NULL);
    struct json_object *obj = co_kube__obj(ev, "object");
    if (!type || !obj) {
        rc = co_error_set(CO_EINVALID, "watch %s: event without type or object", ws->path);
        goto done;
    }
    co_kube_event_type t;
    if (strcmp(type, "ADDED") == 0) {
        t = CO_KUBE_ADDED;
    } else if (strcmp(type, "MODIFIED") == 0) {
        t = CO_KUBE_MODIFIED;
    } else if (strcmp(type, "DELETED") == 0) {
        t = CO_KUBE_DELETED;
    } else if (strcmp(type, "BOOKMARK") == 0) {
        t = CO_KUBE_BOOKMARK;
    } else if (strcmp(type, "ERROR") == 0) {
        char ctx[512];
        snprintf(ctx, sizeof(ctx), "watch %s", ws->path);
        rc = co_kube__fail_from_status(ctx, obj);
        goto done;
    } else {
        rc = co_error_set(CO_EINVALID, "watch %s: unknown event type \"%s\"", ws->path, type);
        goto done;
    }
    rc = ws->cb(t, obj, ws->payload);
    if (rc > 0) {
        ws->stopped = 1;
        rc = CO_ECANCELED; /* stops the transfer; turned into 0 below */
        co_error_clear();
    }
done:
    json_object_put(ev);
    return rc;
}

static int on_chunk(const char *data, size_t len, void *payload)
{
    watch_state *ws = payload;
    int rc = co_kube_framer_feed(&ws->framer, data, len, on_line, ws);
    if (rc == CO_ETOOBIG && co_error_last_code() == CO_ETOOBIG &&
        !strstr(co_error_last(), "watch")) {
        co_error_wrap("watch %s: event", ws->path);
    }
    return rc;
}

static int add_q(co_buf *path, const char *key, const char *value)
{
    int rc;
    if ((rc = co_buf_putc(path, strchr(co_buf_cstr(path), '?') ? '&' : '?')) < 0 ||
        (rc = co_buf_printf(path, "%s=", key)) < 0) {
        return rc;
    }
    return co_kube__escape(path, value);
}

int co_kube_watch(co_kube_client *client,
                  const co_kube_ref *ref,
                  const co_kube_watch_options *opts,
                  co_kube_watch_cb cb,
                  void *payload)
{
    co_kube_watch_options defaults = {0};
    co_buf path = CO_BUF_INIT(CO_MAX_API_REQUEST);
    co_kube_response resp;
    watch_state ws = {.framer = CO_KUBE_FRAMER_INIT(CO_MAX_WATCH_LINE),
                      .cb = cb,
                      .payload = payload,
                      .skip_managed_fields = opts && opts->skip_managed_fields};
    co_kube_ref coll = *ref;
    char num[32];
    int rc;
    if (!opts) {
        opts = &defaults;
    }
    long timeout_s = opts->timeout_s > 0 ? opts->timeout_s : DEFAULT_TIMEOUT_S;
    co_kube_response_init(&resp, CO_MAX_API_RESPONSE);
    coll.name = NULL;
    snprintf(num, sizeof(num), "%ld", timeout_s);
    if ((rc = co_kube__path(&path, client, &coll, NULL, 0)) < 0 ||
        (rc = add_q(&path, "watch", "1")) < 0 ||
        (opts->resource_version && opts->resource_version[0] &&
         (rc = add_q(&path, "resourceVersion", opts->resource_version)) < 0) ||
        (opts->allow_bookmarks && (rc = add_q(&path, "allowWatchBookmarks", "true")) < 0) ||
        (opts->label_selector && opts->label_selector[0] &&
         (rc = add_q(&path, "labelSelector", opts->label_selector)) < 0) ||
        (opts->field_selector && opts->field_selector[0] &&
         (rc = add_q(&path, "fieldSelector", opts->field_selector)) < 0) ||
        (rc = add_q(&path, "timeoutSeconds", num)) < 0) {
        goto done;
    }
    ws.path = co_buf_cstr(&path);
    co_kube_call call = {
        .method = "GET",
        .path = co_buf_cstr(&path),
        .idempotent = 1,
        .watch = 1,
        .accept = opts->metadata_only ? CO_KUBE__ACCEPT_METADATA : NULL,
        .low_speed_time_s = timeout_s + STALL_GRACE_S,
        .stream = on_chunk,
        .stream_payload = &ws,
        .cancelled = opts->cancelled,
        .cancel_payload = opts->cancel_payload,
    };
    rc = co_kube__do(client, &call, &resp);
    if (ws.stopped) {
        co_error_clear();
        rc = 0;
    } else if (rc == 0 && ws.framer.partial.len > 0) {
        /* the server never ends an event without its newline: the stream was cut */
        rc = co_error_set(CO_EUNAVAILABLE, "watch %s: stream ended inside an event",
                          co_buf_cstr(&path));
    }
done:
    co_kube_framer_dispose(&ws.framer);
    co_kube_response_dispose(&resp);
    co_buf_dispose(&path);
    return rc;
}
