/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The thread-local last-error slot. A fixed per-thread array keeps the slot allocation-free, so
 * it works in any thread (libmicrohttpd's pool, libcurl callbacks) without a destructor; messages
 * longer than the cap are cut with an ellipsis.
 */
#include "co/util/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "co/util/caps.h"

static _Thread_local char last_msg[CO_MAX_ERROR_MESSAGE];
static _Thread_local int last_code;

static void mark_truncated(int n)
{
    if (n >= (int)sizeof(last_msg)) {
        memcpy(last_msg + sizeof(last_msg) - 4, "...", 4);
    }
}

int co_error_vset(int code, const char *fmt, va_list ap)
{
    int n = vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
    mark_truncated(n);
    last_code = code < 0 ? code : CO_ERROR;
    return last_code;
}

int co_error_set(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = co_error_vset(code, fmt, ap);
    va_end(ap);
    return rc;
}

const char *co_errno_text(int err, char *buf, size_t size)
{
    /* The build defines _GNU_SOURCE, so this is the GNU strerror_r returning the text. */
    return strerror_r(err, buf, size);
}

int co_error_set_os(int code, const char *fmt, ...)
{
    int saved = errno;
    char os[256];
    const char *text = co_errno_text(saved, os, sizeof(os));
    va_list ap;
    va_start(ap, fmt);
    int rc = co_error_vset(code, fmt, ap);
    va_end(ap);
    size_t len = strlen(last_msg);
    int n = snprintf(last_msg + len, sizeof(last_msg) - len, ": %s", text);
    mark_truncated((int)len + n);
    return rc;
}

int co_error_wrap(const char *fmt, ...)
{
    char prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);

    char old[sizeof(last_msg)];
    memcpy(old, last_msg, sizeof(old));
    int n;
    if (old[0]) {
        n = snprintf(last_msg, sizeof(last_msg), "%s: %s", prefix, old);
    } else {
        n = snprintf(last_msg, sizeof(last_msg), "%s", prefix);
    }
    mark_truncated(n);
    if (last_code == CO_OK) {
        last_code = CO_ERROR;
    }
    return last_code;
}

const char *co_error_last(void)
{
    return last_msg;
}

int co_error_last_code(void)
{
    return last_code;
}

void co_error_clear(void)
{
    last_msg[0] = '\0';
    last_code = CO_OK;
}

const char *co_error_name(int code)
{
    switch (code) {
    case CO_OK:
        return "OK";
    case CO_ENOTFOUND:
        return "ENOTFOUND";
    case CO_EEXISTS:
        return "EEXISTS";
    case CO_ECONFLICT:
        return "ECONFLICT";
    case CO_EGONE:
        return "EGONE";
    case CO_EINVALID:
        return "EINVALID";
    case CO_EAUTH:
        return "EAUTH";
    case CO_ETIMEOUT:
        return "ETIMEOUT";
    case CO_ETOOBIG:
        return "ETOOBIG";
    case CO_EUNAVAILABLE:
        return "EUNAVAILABLE";
    case CO_ENOMATCH:
        return "ENOMATCH";
    case CO_EUNSUPPORTED:
        return "EUNSUPPORTED";
    case CO_ECANCELED:
        return "ECANCELED";
    default:
        return "ERROR";
    }
}
