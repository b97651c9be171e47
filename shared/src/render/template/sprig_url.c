/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sprig's urlParse and urlJoin: Go's net/url parsing (url.Parse) and printing (URL.String)
 * with its escaping rules, error texts and quirks (a lone trailing "?" forces an empty query,
 * rootless paths after a scheme are opaque, a colon in the first segment of a relative path
 * is refused), between a URL and sprig's dictionary of its parts.
 */
#include <stdio.h>
#include <string.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "sprig.h"

#define OUT_INIT CO_BUF_INIT(tpl_out_cap())

/* net/url's encoding modes */
enum mode {
    ENC_PATH = 1,
    ENC_PATH_SEGMENT,
    ENC_HOST,
    ENC_ZONE,
    ENC_USER_PASSWORD,
    ENC_QUERY_COMPONENT,
    ENC_FRAGMENT,
};

typedef struct span {
    const char *s;
    size_t n;
} span;

static span sp(const char *s, size_t n)
{
    span r = {s, n};
    return r;
}

static bool is_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static unsigned char unhex(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return (unsigned char)(c - '0');
    }
    if (c >= 'a' && c <= 'f') {
        return (unsigned char)(c - 'a' + 10);
    }
    if (c >= 'A' && c <= 'F') {
        return (unsigned char)(c - 'A' + 10);
    }
    return 0;
}

static bool should_escape(unsigned char c, int mode)
{
    if (is_alnum(c)) {
        return false;
    }
    if ((mode == ENC_HOST || mode == ENC_ZONE) && c != 0 && strchr("!$&'()*+,;=:[]<>\"", c)) {
        return false;
    }
    switch (c) {
    case '-':
    case '_':
    case '.':
    case '~':
        return false;
    case '$':
    case '&':
    case '+':
    case ',':
    case '/':
    case ':':
    case ';':
    case '=':
    case '?':
    case '@':
        switch (mode) {
        case ENC_PATH:
            return c == '?';
        case ENC_PATH_SEGMENT:
            return c == '/' || c == ';' || c == ',' || c == '?';
        case ENC_USER_PASSWORD:
            return c == '@' || c == '/' || c == '?' || c == ':';
        case ENC_QUERY_COMPONENT:
            return true;
        case ENC_FRAGMENT:
            return false;
        default:
            break;
        }
        break;
    default:
        break;
    }
    if (mode == ENC_FRAGMENT && (c == '!' || c == '(' || c == ')' || c == '*')) {
        return false;
    }
    return true;
}

/* Records Go's error text for a failed step in x->err; returns -1. */
static int quoted_fail(tpl_x *x, const char *before, span s, const char *after)
{
    co_buf b = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    int rc = co_buf_puts(&b, before);
    rc = rc < 0 ? rc : tpl_quote(&b, s.s, s.n, false);
    rc = rc < 0 ? rc : co_buf_puts(&b, after);
    (void)rc;
    tpl_fail(x, "%s", co_buf_cstr(&b));
    co_buf_dispose(&b);
    return -1;
}

/* Go's unescape(s, mode) into @out (appended). */
static int unescape(tpl_x *x, co_buf *out, span s, int mode)
{
    for (size_t i = 0; i < s.n;) {
        unsigned char c = (unsigned char)s.s[i];
        if (c == '%') {
            if (i + 2 >= s.n || !is_hex((unsigned char)s.s[i + 1]) ||
                !is_hex((unsigned char)s.s[i + 2])) {
                size_t k = s.n - i > 3 ? 3 : s.n - i;
                return quoted_fail(x, "invalid URL escape ", sp(s.s + i, k), "");
            }
            bool pct25 = memcmp(s.s + i, "%25", 3) == 0;
            unsigned char v = (unsigned char)(unhex((unsigned char)s.s[i + 1]) << 4 |
                                              unhex((unsigned char)s.s[i + 2]));
            if (mode == ENC_HOST && unhex((unsigned char)s.s[i + 1]) < 8 && !pct25) {
                return quoted_fail(x, "invalid URL escape ", sp(s.s + i, 3), "");
            }
            if (mode == ENC_ZONE && !pct25 && v != ' ' && should_escape(v, ENC_HOST)) {
                return quoted_fail(x, "invalid URL escape ", sp(s.s + i, 3), "");
            }
            i += 3;
            continue;
        }
        if ((mode == ENC_HOST || mode == ENC_ZONE) && c < 0x80 && should_escape(c, mode)) {
            return quoted_fail(x, "invalid character ", sp(s.s + i, 1), " in host name");
        }
        i++;
    }
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.s[i];
        int rc;
        if (c == '%') {
            rc = co_buf_putc(out, (char)(unhex((unsigned char)s.s[i + 1]) << 4 |
                                         unhex((unsigned char)s.s[i + 2])));
            i += 2;
        } else if (c == '+' && mode == ENC_QUERY_COMPONENT) {
            rc = co_buf_putc(out, ' ');
        } else {
            rc = co_buf_putc(out, (char)c);
        }
        if (rc < 0) {
            return tpl_fail_code(x, CO_ETOOBIG, "output too large");
        }
    }
    return 0;
}

/* Go's escape(s, mode), appended to @out. */
static int escape(co_buf *out, span s, int mode)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = 0;
    for (size_t i = 0; i < s.n && rc == 0; i++) {
        unsigned char c = (unsigned char)s.s[i];
        if (c == ' ' && mode == ENC_QUERY_COMPONENT) {
            rc = co_buf_putc(out, '+');
        } else if (should_escape(c, mode)) {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            rc = co_buf_put(out, e, 3);
        } else {
            rc = co_buf_putc(out, (char)c);
        }
    }
    return rc;
}

/* The parts of a URL as sprig's dictionary holds them. */
typedef struct url_parts {
    co_buf scheme, opaque, user, host, path, raw_query, fragment;
    bool has_user;
    bool omit_host;
    bool force_query;
} url_parts;

static void parts_init(url_parts *u)
{
    memset(u, 0, sizeof(*u));
    co_buf *all[] = {&u->scheme, &u->opaque,    &u->user,    &u->host,
                     &u->path,   &u->raw_query, &u->fragment};
    for (size_t i = 0; i < CO_ARRAY_SIZE(all); i++) {
        co_buf_init(all[i], CO_MAX_TEMPLATE_OUTPUT);
    }
}

static void parts_dispose(url_parts *u)
{
    co_buf *all[] = {&u->scheme, &u->opaque,    &u->user,    &u->host,
                     &u->path,   &u->raw_query, &u->fragment};
    for (size_t i = 0; i < CO_ARRAY_SIZE(all); i++) {
        co_buf_dispose(all[i]);
    }
}

static bool valid_port(span p)
{
    if (p.n == 0) {
        return true;
    }
    if (p.s[0] != ':') {
        return false;
    }
    for (size_t i = 1; i < p.n; i++) {
        if (p.s[i] < '0' || p.s[i] > '9') {
            return false;
        }
    }
    return true;
}

static const char *mem_last(span s, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = s.n; i >= k && i > 0; i--) {
        if (memcmp(s.s + i - k, needle, k) == 0) {
            return s.s + i - k;
        }
    }
    return NULL;
}

static const char *mem_first(span s, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= s.n; i++) {
        if (memcmp(s.s + i, needle, k) == 0) {
            return s.s + i;
        }
    }
    return NULL;
}

static int port_fail(tpl_x *x, span port)
{
    return quoted_fail(x, "invalid port ", port, " after host");
}

/* Go's parseHost, the unescaped host appended to @out. */
static int parse_host(tpl_x *x, co_buf *out, span h)
{
    if (h.n > 0 && h.s[0] == '[') {
        const char *close = mem_last(h, "]");
        if (!close) {
            return tpl_fail(x, "missing ']' in host");
        }
        size_t i = (size_t)(close - h.s);
        span colon_port = sp(close + 1, h.n - i - 1);
        if (!valid_port(colon_port)) {
            return port_fail(x, colon_port);
        }
        const char *zone = mem_first(sp(h.s, i), "%25");
        if (zone) {
            size_t z = (size_t)(zone - h.s);
            if (unescape(x, out, sp(h.s, z), ENC_HOST) < 0 ||
                unescape(x, out, sp(zone, i - z), ENC_ZONE) < 0 ||
                unescape(x, out, sp(close, h.n - i), ENC_HOST) < 0) {
                return -1;
            }
            return 0;
        }
    } else {
        const char *colon = mem_last(h, ":");
        if (colon) {
            span colon_port = sp(colon, h.n - (size_t)(colon - h.s));
            if (!valid_port(colon_port)) {
                return port_fail(x, colon_port);
            }
        }
    }
    return unescape(x, out, h, ENC_HOST);
}

static bool valid_userinfo(span s)
{
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.s[i];
        if (is_alnum(c) || (c != 0 && strchr("-._:~!$&'()*+,;=%@", c))) {
            continue;
        }
        return false;
    }
    return true;
}

/* Go's parseAuthority: the escaped userinfo (as Userinfo.String() prints it) and the host. */
static int parse_authority(tpl_x *x, url_parts *u, span a)
{
    const char *at = mem_last(a, "@");
    span host = at ? sp(at + 1, a.n - (size_t)(at + 1 - a.s)) : a;
    if (parse_host(x, &u->host, host) < 0) {
        return -1;
    }
    if (!at) {
        return 0;
    }
    span info = sp(a.s, (size_t)(at - a.s));
    if (!valid_userinfo(info)) {
        return tpl_fail(x, "net/url: invalid userinfo");
    }
    const char *colon = memchr(info.s, ':', info.n);
    co_buf name = CO_BUF_INIT(tpl_out_cap());
    co_buf pass = CO_BUF_INIT(tpl_out_cap());
    int rc;
    if (!colon) {
        rc = unescape(x, &name, info, ENC_USER_PASSWORD);
    } else {
        rc = unescape(x, &name, sp(info.s, (size_t)(colon - info.s)), ENC_USER_PASSWORD);
        rc = rc < 0 ? rc
                    : unescape(x, &pass, sp(colon + 1, info.n - (size_t)(colon + 1 - info.s)),
                               ENC_USER_PASSWORD);
    }
    if (rc == 0) {
        u->has_user = true;
        rc = escape(&u->user, sp(name.ptr ? name.ptr : "", name.len), ENC_USER_PASSWORD);
        if (rc == 0 && colon) {
            rc = co_buf_putc(&u->user, ':');
            rc = rc < 0
                     ? rc
                     : escape(&u->user, sp(pass.ptr ? pass.ptr : "", pass.len), ENC_USER_PASSWORD);
        }
    }
    co_buf_dispose(&name);
    co_buf_dispose(&pass);
    return rc;
}

/* Go's parse(rawURL, false) without the fragment. */
static int parse_url(tpl_x *x, url_parts *u, span raw)
{
    for (size_t i = 0; i < raw.n; i++) {
        unsigned char c = (unsigned char)raw.s[i];
        if (c < ' ' || c == 0x7f) {
            return tpl_fail(x, "net/url: invalid control character in URL");
        }
    }
    if (raw.n == 1 && raw.s[0] == '*') {
        return co_buf_putc(&u->path, '*');
    }
    span rest = raw;
    for (size_t i = 0; i < raw.n; i++) {
        unsigned char c = (unsigned char)raw.s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            continue;
        }
        if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.') {
            if (i == 0) {
                break;
            }
            continue;
        }
        if (c == ':') {
            if (i == 0) {
                return tpl_fail(x, "missing protocol scheme");
            }
            for (size_t k = 0; k < i; k++) {
                char l = raw.s[k];
                if (co_buf_putc(&u->scheme, (char)(l >= 'A' && l <= 'Z' ? l + 32 : l)) < 0) {
                    return -1;
                }
            }
            rest = sp(raw.s + i + 1, raw.n - i - 1);
        }
        break;
    }
    size_t nq = 0;
    for (size_t i = 0; i < rest.n; i++) {
        nq += rest.s[i] == '?';
    }
    if (rest.n > 0 && rest.s[rest.n - 1] == '?' && nq == 1) {
        u->force_query = true;
        rest.n--;
    } else {
        const char *q = memchr(rest.s, '?', rest.n);
        if (q) {
            size_t k = (size_t)(q - rest.s);
            if (co_buf_put(&u->raw_query, q + 1, rest.n - k - 1) < 0) {
                return -1;
            }
            rest.n = k;
        }
    }
    bool has_scheme = u->scheme.len > 0;
    if (rest.n == 0 || rest.s[0] != '/') {
        if (has_scheme) {
            return co_buf_put(&u->opaque, rest.s, rest.n);
        }
        const char *slash = memchr(rest.s, '/', rest.n);
        size_t seg = slash ? (size_t)(slash - rest.s) : rest.n;
        if (memchr(rest.s, ':', seg)) {
            return tpl_fail(x, "first path segment in URL cannot contain colon");
        }
    }
    bool slashes = rest.n >= 2 && rest.s[0] == '/' && rest.s[1] == '/';
    bool triple = rest.n >= 3 && slashes && rest.s[2] == '/';
    if ((has_scheme || !triple) && slashes) {
        span auth = sp(rest.s + 2, rest.n - 2);
        const char *slash = memchr(auth.s, '/', auth.n);
        span path = sp("", 0);
        if (slash) {
            path = sp(slash, auth.n - (size_t)(slash - auth.s));
            auth.n = (size_t)(slash - auth.s);
        }
        if (parse_authority(x, u, auth) < 0) {
            return -1;
        }
        rest = path;
    } else if (has_scheme && rest.n > 0 && rest.s[0] == '/') {
        u->omit_host = true;
    }
    return unescape(x, &u->path, rest, ENC_PATH);
}

static void put_field(tpl_x *x, tv_map *m, const char *key, const co_buf *b)
{
    tv_map_set(x, m, tv_str_new(x, key, strlen(key)), tv_string(x, b->ptr ? b->ptr : "", b->len));
}

/* Go's Hostname(): the host without a valid port and without IPv6 brackets. */
static span hostname(const co_buf *host)
{
    span h = sp(host->ptr ? host->ptr : "", host->len);
    const char *colon = mem_last(h, ":");
    if (colon && valid_port(sp(colon, h.n - (size_t)(colon - h.s)))) {
        h.n = (size_t)(colon - h.s);
    }
    if (h.n >= 2 && h.s[0] == '[' && h.s[h.n - 1] == ']') {
        h.s++;
        h.n -= 2;
    }
    return h;
}

static int url_fail(tpl_x *x, const char *prefix, span url)
{
    co_buf b = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    int rc = co_buf_puts(&b, prefix);
    rc = rc < 0 ? rc : co_buf_puts(&b, "parse ");
    rc = rc < 0 ? rc : tpl_quote(&b, url.s, url.n, false);
    rc = rc < 0 ? rc : co_buf_puts(&b, ": ");
    rc = rc < 0 ? rc : co_buf_puts(&b, co_buf_cstr(x->err));
    (void)rc;
    co_buf_reset(x->err);
    tpl_fail(x, "%s", co_buf_cstr(&b));
    co_buf_dispose(&b);
    return -1;
}

/* Go's url.Parse: the fragment is split off first and unescaped after the rest parsed. */
static int url_parse(tpl_x *x, url_parts *u, span raw, const char *fail_prefix)
{
    const char *hash = memchr(raw.s, '#', raw.n);
    span main = hash ? sp(raw.s, (size_t)(hash - raw.s)) : raw;
    if (parse_url(x, u, main) < 0) {
        return x->code == CO_ETOOBIG ? -1 : url_fail(x, fail_prefix, main);
    }
    if (hash && unescape(x, &u->fragment, sp(hash + 1, raw.n - main.n - 1), ENC_FRAGMENT) < 0) {
        return x->code == CO_ETOOBIG ? -1 : url_fail(x, fail_prefix, raw);
    }
    return 0;
}

static int fn_url_parse(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *s = a[0].u.s;
    url_parts u;
    parts_init(&u);
    int rc = url_parse(x, &u, sp(s->s, s->len), "unable to parse url: ");
    if (rc == 0) {
        tv m = tv_map_new(x, &T_MAP_ANY, 8);
        put_field(x, m.u.m, "scheme", &u.scheme);
        put_field(x, m.u.m, "host", &u.host);
        span h = hostname(&u.host);
        tv_map_set(x, m.u.m, tv_str_new(x, "hostname", 8), tv_string(x, h.s, h.n));
        put_field(x, m.u.m, "path", &u.path);
        put_field(x, m.u.m, "query", &u.raw_query);
        put_field(x, m.u.m, "opaque", &u.opaque);
        put_field(x, m.u.m, "fragment", &u.fragment);
        put_field(x, m.u.m, "userinfo", &u.user);
        *ret = m;
    }
    parts_dispose(&u);
    return rc;
}

/* sprig's dictGetOrEmpty: a missing key is "", a value of another kind panics. */
static int dict_string(tpl_x *x, const tv_map *m, const char *key, span *out)
{
    tv *v = tv_map_get(m, key, strlen(key));
    if (!v) {
        *out = sp("", 0);
        return 0;
    }
    if (!v->t) {
        return sp_panic_nil(x);
    }
    if (tv_kind(v) != TK_STRING) {
        return tpl_fail(x, "unable to parse %s key, must be of type string, but %s found", key,
                        sp_kind_name(v));
    }
    *out = sp(v->u.s->s, v->u.s->len);
    return 0;
}

/* Go's URL.String() of sprig's URL{Scheme, Host, Path, RawQuery, Opaque, Fragment, User}. */
static int url_string(co_buf *b,
                      const url_parts *u,
                      span scheme,
                      span host,
                      span path,
                      span query,
                      span opaque,
                      span frag)
{
    int rc = 0;
    if (scheme.n) {
        rc = co_buf_put(b, scheme.s, scheme.n);
        rc = rc < 0 ? rc : co_buf_putc(b, ':');
    }
    if (opaque.n) {
        rc = rc < 0 ? rc : co_buf_put(b, opaque.s, opaque.n);
    } else {
        if (scheme.n || host.n || u->has_user) {
            if (host.n || path.n || u->has_user) {
                rc = rc < 0 ? rc : co_buf_puts(b, "//");
            }
            if (u->has_user) {
                rc = rc < 0 ? rc : co_buf_put(b, u->user.ptr ? u->user.ptr : "", u->user.len);
                rc = rc < 0 ? rc : co_buf_putc(b, '@');
            }
            if (host.n) {
                rc = rc < 0 ? rc : escape(b, host, ENC_HOST);
            }
        }
        co_buf ep = CO_BUF_INIT(tpl_out_cap());
        if (path.n == 1 && path.s[0] == '*') {
            rc = rc < 0 ? rc : co_buf_putc(&ep, '*');
        } else {
            rc = rc < 0 ? rc : escape(&ep, path, ENC_PATH);
        }
        span p = sp(ep.ptr ? ep.ptr : "", ep.len);
        if (p.n && p.s[0] != '/' && host.n) {
            rc = rc < 0 ? rc : co_buf_putc(b, '/');
        }
        if (b->len == 0) {
            const char *slash = memchr(p.s, '/', p.n);
            size_t seg = slash ? (size_t)(slash - p.s) : p.n;
            if (memchr(p.s, ':', seg)) {
                rc = rc < 0 ? rc : co_buf_puts(b, "./");
            }
        }
        rc = rc < 0 ? rc : co_buf_put(b, p.s, p.n);
        co_buf_dispose(&ep);
    }
    if (query.n) {
        rc = rc < 0 ? rc : co_buf_putc(b, '?');
        rc = rc < 0 ? rc : co_buf_put(b, query.s, query.n);
    }
    if (frag.n) {
        rc = rc < 0 ? rc : co_buf_putc(b, '#');
        rc = rc < 0 ? rc : escape(b, frag, ENC_FRAGMENT);
    }
    return rc;
}

static int fn_url_join(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    static const tv_map empty = {0};
    const tv_map *m = a[0].u.m ? a[0].u.m : &empty;
    span scheme = sp("", 0), host = scheme, path = scheme, query = scheme, opaque = scheme,
         frag = scheme, info = scheme;
    if (dict_string(x, m, "scheme", &scheme) < 0 || dict_string(x, m, "host", &host) < 0 ||
        dict_string(x, m, "path", &path) < 0 || dict_string(x, m, "query", &query) < 0 ||
        dict_string(x, m, "opaque", &opaque) < 0 || dict_string(x, m, "fragment", &frag) < 0 ||
        dict_string(x, m, "userinfo", &info) < 0) {
        return -1;
    }
    url_parts u;
    parts_init(&u);
    int rc = 0;
    if (info.n) {
        /* sprig re-parses the userinfo inside a made-up URL to unescape and check it */
        co_buf probe = CO_BUF_INIT(tpl_out_cap());
        rc = co_buf_puts(&probe, "proto://");
        rc = rc < 0 ? rc : co_buf_put(&probe, info.s, info.n);
        rc = rc < 0 ? rc : co_buf_puts(&probe, "@host");
        if (rc < 0) {
            rc = tpl_fail_code(x, CO_ETOOBIG, "output too large");
        } else {
            rc = url_parse(x, &u, sp(probe.ptr, probe.len), "unable to parse userinfo in dict: ");
        }
        co_buf_dispose(&probe);
    }
    co_buf b = OUT_INIT;
    if (rc == 0) {
        rc = sp_ret_buf(x, ret, &b, url_string(&b, &u, scheme, host, path, query, opaque, frag));
    } else {
        co_buf_dispose(&b);
    }
    parts_dispose(&u);
    return rc;
}

static const tpl_func funcs[] = {
    TPL_FUNC("urlJoin", fn_url_join, SP_M, 1, false, false, &T_STRING),
    TPL_FUNC("urlParse", fn_url_parse, SP_S, 1, false, false, &T_MAP_ANY),
};

void tpl_register_sprig_url(co_template_funcs *f)
{
    tpl_register_all(f, funcs, CO_ARRAY_SIZE(funcs));
}
