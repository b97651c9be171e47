/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Structured logging. A line is assembled in a stack buffer and written with one write(2) so
 * that lines from concurrent threads never interleave. Values are quoted (text) or escaped
 * (JSON) so that a hostile value cannot forge fields or lines.
 */
#include "co/util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "co/util/caps.h"
#include "co/util/error.h"

volatile int co_log__level = CO_LOG_INFO;
static co_log_format log_format = CO_LOG_FORMAT_TEXT;
static char log_component[32] = "";
static int log_fd = 2;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void co_log_setup(const char *component, co_log_level level, co_log_format format)
{
    snprintf(log_component, sizeof(log_component), "%s", component ? component : "");
    co_log__level = (int)level;
    log_format = format;
}

void co_log_set_fd(int fd)
{
    log_fd = fd;
}

int co_log_level_parse(co_log_level *out, const char *str)
{
    for (size_t i = 0; i < CO_ARRAY_SIZE(level_names); i++) {
        if (strcasecmp(str, level_names[i]) == 0 || (str[0] == (char)('0' + i) && !str[1])) {
            *out = (co_log_level)i;
            return 0;
        }
    }
    if (strcasecmp(str, "warning") == 0) {
        *out = CO_LOG_WARN;
        return 0;
    }
    return co_error_set(
        CO_EINVALID, "invalid log level \"%s\": expected error, warn, info, debug or trace", str);
}

int co_log_format_parse(co_log_format *out, const char *str)
{
    if (strcmp(str, "text") == 0) {
        *out = CO_LOG_FORMAT_TEXT;
        return 0;
    }
    if (strcmp(str, "json") == 0) {
        *out = CO_LOG_FORMAT_JSON;
        return 0;
    }
    return co_error_set(CO_EINVALID, "invalid log format \"%s\": expected text or json", str);
}

bool co_log_key_is_sensitive(const char *key)
{
    static const char *const words[] = {"token",      "password",    "passwd",      "authorization",
                                        "privatekey", "private_key", "private-key", "bearer",
                                        "credential", "secretdata"};
    char lower[128];
    size_t n = 0;
    for (; key[n] && n + 1 < sizeof(lower); n++) {
        char c = key[n];
        lower[n] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    lower[n] = '\0';
    for (size_t i = 0; i < CO_ARRAY_SIZE(words); i++) {
        if (strstr(lower, words[i])) {
            return true;
        }
    }
    return false;
}

/* Longest value written as is; longer values are cut and end in "...". */
#define MAX_VALUE ((size_t)8 * 1024)
/* Room kept free at the end of a line for the truncation marker and the terminator. */
#define TAIL_ROOM 64

/*
 * A bounded line under construction. Fields that would not fit whole are dropped (and the line
 * marked truncated) rather than cut, so a JSON line always stays valid JSON.
 */
typedef struct line {
    char buf[CO_MAX_LOG_LINE];
    size_t len;
    int truncated;
} line;

static void add(line *l, const char *s, size_t n)
{
    CO_ASSERT(l->len + n <= sizeof(l->buf));
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void adds(line *l, const char *s)
{
    add(l, s, strlen(s));
}

static void add_json_string(line *l, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    add(l, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; p < (const unsigned char *)s + n; p++) {
        char esc[6];
        switch (*p) {
        case '"':
            add(l, "\\\"", 2);
            break;
        case '\\':
            add(l, "\\\\", 2);
            break;
        case '\n':
            add(l, "\\n", 2);
            break;
        case '\r':
            add(l, "\\r", 2);
            break;
        case '\t':
            add(l, "\\t", 2);
            break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                esc[0] = '\\';
                esc[1] = 'u';
                esc[2] = '0';
                esc[3] = '0';
                esc[4] = hex[*p >> 4];
                esc[5] = hex[*p & 15];
                add(l, esc, 6);
            } else {
                add(l, (const char *)p, 1);
            }
        }
    }
    add(l, "\"", 1);
}

/* logfmt: bare when safe, otherwise a JSON-style quoted string. */
static void add_text_value(line *l, const char *s, size_t n)
{
    int bare = n > 0;
    for (size_t i = 0; i < n && bare; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) {
            bare = 0;
        }
    }
    if (bare) {
        add(l, s, n);
    } else {
        add_json_string(l, s, n);
    }
}

static void add_timestamp(line *l)
{
    struct timespec ts;
    struct tm tm;
    char out[40];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, sizeof(out) - n, ".%03ldZ", ts.tv_nsec / 1000000);
    adds(l, out);
}

/*
 * Appends a separator and key=value (text) or ,"key":"value" (JSON). Values longer than
 * MAX_VALUE are cut and get "..." appended; a field that might not fit the line is dropped.
 */
static void field(line *l, const char *key, const char *value)
{
    size_t klen = strnlen(key, 256);
    size_t vlen = strlen(value);
    int cut = vlen > MAX_VALUE;
    if (cut) {
        vlen = MAX_VALUE;
    }
    /* worst case: every byte escaped as \u00XX (6 bytes) plus quotes and separators */
    size_t worst = (size_t)6 * (klen + vlen) + 16;
    if (l->truncated || l->len + worst > sizeof(l->buf) - TAIL_ROOM) {
        l->truncated = 1;
        return;
    }
    if (log_format == CO_LOG_FORMAT_JSON) {
        add(l, ",", 1);
        add_json_string(l, key, klen);
        add(l, ":", 1);
    } else {
        add(l, " ", 1);
        add(l, key, klen);
        add(l, "=", 1);
    }
    if (cut) {
        char *tmp = co_xasprintf("%.*s...", (int)vlen, value);
        if (log_format == CO_LOG_FORMAT_JSON) {
            add_json_string(l, tmp, vlen + 3);
        } else {
            add_text_value(l, tmp, vlen + 3);
        }
        free(tmp);
    } else if (log_format == CO_LOG_FORMAT_JSON) {
        add_json_string(l, value, vlen);
    } else {
        add_text_value(l, value, vlen);
    }
}

static void emit(co_log_level level, const char *msg, va_list fields)
{
    line *l = co_xmalloc(sizeof(*l));
    l->len = 0;
    l->truncated = 0;

    int lvl = level < 0 ? 0 : (level > CO_LOG_TRACE ? CO_LOG_TRACE : (int)level);
    if (log_format == CO_LOG_FORMAT_JSON) {
        adds(l, "{\"ts\":\"");
        add_timestamp(l);
        adds(l, "\"");
    } else {
        add_timestamp(l);
    }
    field(l, "level", level_names[lvl]);
    if (log_component[0]) {
        field(l, "component", log_component);
    }
    field(l, "msg", msg);
    for (;;) {
        const char *key = va_arg(fields, const char *);
        if (!key) {
            break;
        }
        const char *value = va_arg(fields, const char *);
        field(l, key, co_log_key_is_sensitive(key) ? "[redacted]" : (value ? value : ""));
    }
    if (l->truncated) {
        l->truncated = 0;
        field(l, "truncated", "true");
    }
    if (log_format == CO_LOG_FORMAT_JSON) {
        l->buf[l->len++] = '}';
    }
    l->buf[l->len++] = '\n';

    const char *p = l->buf;
    size_t left = l->len;
    while (left) {
        ssize_t w = write(log_fd, p, left);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        p += (size_t)w;
        left -= (size_t)w;
    }
    free(l);
}

static void emit_fields(co_log_level level, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    emit(level, msg, ap);
    va_end(ap);
}

void co_log__emit(co_log_level level, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    emit(level, msg, ap);
    va_end(ap);
}

void co_log__emitf(co_log_level level, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    emit_fields(level, msg, NULL);
}
