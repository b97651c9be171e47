/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `format` keyword of values.schema.json as Helm 3.17 applies it (gojsonschema v1.2.0): a
 * known format is asserted, an unknown one (int32, duration, idn-hostname, ...) is ignored. A
 * string is checked with the Go function gojsonschema calls (time.Parse, net/mail.ParseAddress,
 * net.ParseIP, net/url.Parse, regexp.Compile, or a regular expression); a number never matches
 * a known format; other types are not checked. Each checker below transcribes the Go rules.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "co/util/utf8.h"
#include "helm_int.h"

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* --- time.Parse ----------------------------------------------------------------------------- */

/* A number of exactly @p n digits. */
static bool fixed_num(const char **p, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit((*p)[i])) {
            return false;
        }
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

static int days_in(int month, int year)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month == 2 && year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) {
        return 29;
    }
    return days[month - 1];
}

/* "2006-01-02": the year, month and day are fixed-width; the day must exist. */
static bool go_date(const char **p)
{
    int y = 0, m = 0, d = 0;
    if (!fixed_num(p, 4, &y) || **p != '-') {
        return false;
    }
    (*p)++;
    if (!fixed_num(p, 2, &m) || m < 1 || m > 12 || **p != '-') {
        return false;
    }
    (*p)++;
    return fixed_num(p, 2, &d) && d >= 1 && d <= days_in(m, y);
}

/* "15:04:05": the hour has one or two digits, minutes and seconds two; a fraction of any
 * length after '.' or ',' is accepted even though the layout has none. */
static bool go_clock(const char **p)
{
    int h = 0, mi = 0, s = 0;
    if (!is_digit(**p)) {
        return false;
    }
    h = **p - '0';
    (*p)++;
    if (is_digit(**p)) {
        h = h * 10 + (**p - '0');
        (*p)++;
    }
    if (h >= 24 || **p != ':') {
        return false;
    }
    (*p)++;
    if (!fixed_num(p, 2, &mi) || mi >= 60 || **p != ':') {
        return false;
    }
    (*p)++;
    if (!fixed_num(p, 2, &s) || s >= 60) {
        return false;
    }
    if (((*p)[0] == '.' || (*p)[0] == ',') && is_digit((*p)[1])) {
        (*p)++;
        while (is_digit(**p)) {
            (*p)++;
        }
    }
    return true;
}

/* "Z07:00": Z, or a sign, two-digit hours (at most 24), ':' and two-digit minutes (at most
 * 60). */
static bool go_zone(const char **p)
{
    if (**p == 'Z') {
        (*p)++;
        return true;
    }
    const char *s = *p;
    if (strlen(s) < 6 || s[3] != ':' || (s[0] != '+' && s[0] != '-')) {
        return false;
    }
    const char *q = s + 1;
    int h = 0, m = 0;
    if (!fixed_num(&q, 2, &h)) {
        return false;
    }
    q = s + 4;
    if (!fixed_num(&q, 2, &m) || h > 24 || m > 60) {
        return false;
    }
    *p = s + 6;
    return true;
}

static bool fmt_date(const char *s)
{
    return go_date(&s) && !*s;
}

static bool fmt_time(const char *s)
{
    const char *p = s;
    if (go_clock(&p) && go_zone(&p) && !*p) {
        return true;
    }
    p = s;
    return go_clock(&p) && !*p;
}

static bool fmt_date_time(const char *s)
{
    if (fmt_date(s) || fmt_time(s)) {
        return true;
    }
    const char *p = s;
    if (!go_date(&p) || *p != 'T') {
        return false;
    }
    p++;
    return go_clock(&p) && go_zone(&p) && !*p;
}

/* --- net/mail.ParseAddress ------------------------------------------------------------------ */

typedef struct mp {
    const char *s;
} mp;

static bool m_vchar(unsigned char c)
{
    return (c >= '!' && c <= '~') || c >= 0x80;
}

static bool m_atext(unsigned char c, bool dot)
{
    if (c == '.') {
        return dot;
    }
    return m_vchar(c) && !strchr("()<>[]:;@\\,\"", c);
}

static void m_space(mp *p)
{
    while (*p->s == ' ' || *p->s == '\t') {
        p->s++;
    }
}

static bool m_consume(mp *p, char c)
{
    if (*p->s != c) {
        return false;
    }
    p->s++;
    return true;
}

/* After '(': up to the matching ')', with backslash escapes. */
static bool m_comment(mp *p)
{
    int depth = 1;
    while (*p->s && depth > 0) {
        if (*p->s == '\\' && p->s[1]) {
            p->s++;
        } else if (*p->s == '(') {
            depth++;
        } else if (*p->s == ')') {
            depth--;
        }
        p->s++;
    }
    return depth == 0;
}

static bool m_cfws(mp *p)
{
    m_space(p);
    while (m_consume(p, '(')) {
        if (!m_comment(p)) {
            return false;
        }
        m_space(p);
    }
    return true;
}

/* An atom (with dots when @p dot); strict rejects leading, trailing and double dots. */
static bool m_atom(mp *p, bool dot, bool strict)
{
    size_t i = 0;
    while (p->s[i] && m_atext((unsigned char)p->s[i], dot)) {
        i++;
    }
    if (i == 0) {
        return false;
    }
    if (strict) {
        if (p->s[0] == '.' || p->s[i - 1] == '.') {
            return false;
        }
        for (size_t j = 0; j + 1 < i; j++) {
            if (p->s[j] == '.' && p->s[j + 1] == '.') {
                return false;
            }
        }
    }
    p->s += i;
    return true;
}

/* A quoted string at '"'; *empty tells whether it held nothing. */
static bool m_quoted(mp *p, bool *empty)
{
    const char *s = p->s + 1;
    bool esc = false;
    *empty = true;
    for (;; s++) {
        unsigned char c = (unsigned char)*s;
        if (!c) {
            return false;
        }
        if (esc) {
            if (!m_vchar(c) && c != ' ' && c != '\t') {
                return false;
            }
            *empty = false;
            esc = false;
        } else if (c == '"') {
            break;
        } else if (c == '\\') {
            esc = true;
        } else if (m_vchar(c) || c == ' ' || c == '\t') {
            *empty = false;
        } else {
            return false;
        }
    }
    p->s = s + 1;
    return true;
}

/* "[...]" holding an IP address (net.ParseIP). */
static bool m_domain_literal(mp *p)
{
    const char *s = p->s + 1;
    const char *end = strchr(s, ']');
    if (!end) {
        return false;
    }
    for (const char *q = s; q < end; q++) {
        if (*q == '[' || *q == '\\' || !m_vchar((unsigned char)*q)) {
            return false;
        }
    }
    char ip[64];
    size_t n = (size_t)(end - s);
    if (n >= sizeof ip) {
        return false;
    }
    memcpy(ip, s, n);
    ip[n] = '\0';
    unsigned char buf[16];
    if (inet_pton(AF_INET, ip, buf) != 1 && inet_pton(AF_INET6, ip, buf) != 1) {
        return false;
    }
    p->s = end + 1;
    return true;
}

static bool m_addr_spec(mp *p)
{
    mp orig = *p;
    bool ok = false;
    m_space(p);
    if (*p->s == '"') {
        bool empty = true;
        ok = m_quoted(p, &empty) && !empty;
    } else if (*p->s) {
        ok = m_atom(p, true, true);
    }
    if (ok && m_consume(p, '@')) {
        m_space(p);
        ok = *p->s == '[' ? m_domain_literal(p) : (*p->s && m_atom(p, true, true));
    } else {
        ok = false;
    }
    if (!ok) {
        *p = orig;
    }
    return ok;
}

/* phrase = 1*word (atoms with dots, or quoted strings); comments may follow a word. */
static bool m_phrase(mp *p)
{
    size_t words = 0;
    for (;;) {
        if (words > 0 && !m_cfws(p)) {
            return false;
        }
        m_space(p);
        if (!*p->s) {
            break;
        }
        bool ok;
        if (*p->s == '"') {
            bool empty = true;
            ok = m_quoted(p, &empty);
        } else {
            ok = m_atom(p, true, false);
        }
        if (!ok) {
            break;
        }
        words++;
    }
    return words > 0;
}

static int m_address(mp *p, bool group);

/* After "phrase:": addresses separated by ',' up to ';'. Returns the count or -1. */
static int m_group(mp *p)
{
    int n = 0;
    m_space(p);
    if (m_consume(p, ';')) {
        return m_cfws(p) ? 0 : -1;
    }
    for (;;) {
        m_space(p);
        int k = m_address(p, false);
        if (k < 0) {
            return -1;
        }
        n += k;
        if (!m_cfws(p)) {
            return -1;
        }
        if (m_consume(p, ';')) {
            return m_cfws(p) ? n : -1;
        }
        if (!m_consume(p, ',')) {
            return -1;
        }
    }
}

/* One address (or a group); returns how many addresses, or -1. */
static int m_address(mp *p, bool group)
{
    m_space(p);
    if (!*p->s) {
        return -1;
    }
    if (m_addr_spec(p)) {
        m_space(p);
        if (m_consume(p, '(') && !m_comment(p)) {
            return -1;
        }
        return 1;
    }
    if (*p->s != '<' && !m_phrase(p)) {
        return -1;
    }
    m_space(p);
    if (group && m_consume(p, ':')) {
        return m_group(p);
    }
    if (!m_consume(p, '<') || !m_addr_spec(p) || !m_consume(p, '>')) {
        return -1;
    }
    return 1;
}

static bool fmt_email(const char *s)
{
    if (!co_utf8_valid(s, strlen(s))) {
        return false;
    }
    mp p = {s};
    return m_address(&p, true) == 1 && m_cfws(&p) && !*p.s;
}

/* --- net.ParseIP ---------------------------------------------------------------------------- */

static bool parse_ip(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* --- net/url.Parse -------------------------------------------------------------------------- */

typedef enum { U_PATH, U_HOST, U_ZONE, U_USER, U_FRAGMENT } umode;

/* Go's shouldEscape(c, encodeHost) for an ASCII byte: what a host may not hold literally. */
static bool host_bad(unsigned char c)
{
    if (is_alpha((char)c) || is_digit((char)c)) {
        return false;
    }
    return !strchr("!$&'()*+,;=:[]<>\"-_.~", c);
}

static int unhex(char c)
{
    return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* Go's unescape(): every '%' starts a valid escape; hosts escape only non-ASCII bytes. */
static bool url_unescape_ok(const char *s, size_t n, umode mode)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n) {
                return false;
            }
            if (!is_hex(s[i + 1]) || !is_hex(s[i + 2])) {
                return false;
            }
            bool pct25 = s[i + 1] == '2' && s[i + 2] == '5';
            if (mode == U_HOST && unhex(s[i + 1]) < 8 && !pct25) {
                return false;
            }
            if (mode == U_ZONE) {
                int v = unhex(s[i + 1]) << 4 | unhex(s[i + 2]);
                if (!pct25 && v != ' ' && v < 0x80 && host_bad((unsigned char)v)) {
                    return false;
                }
            }
            i += 2;
        } else if ((mode == U_HOST || mode == U_ZONE) && c < 0x80 && host_bad(c)) {
            return false;
        }
    }
    return true;
}

static bool valid_port(const char *s, size_t n)
{
    if (n == 0) {
        return true;
    }
    if (s[0] != ':') {
        return false;
    }
    for (size_t i = 1; i < n; i++) {
        if (!is_digit(s[i])) {
            return false;
        }
    }
    return true;
}

static bool url_host_ok(const char *h, size_t n)
{
    if (n > 0 && h[0] == '[') {
        const char *close = NULL;
        for (size_t i = 0; i < n; i++) {
            if (h[i] == ']') {
                close = h + i;
            }
        }
        if (!close) {
            return false;
        }
        size_t ci = (size_t)(close - h);
        if (!valid_port(close + 1, n - ci - 1)) {
            return false;
        }
        const char *zone = NULL;
        for (size_t i = 0; i + 2 < ci; i++) {
            if (h[i] == '%' && h[i + 1] == '2' && h[i + 2] == '5') {
                zone = h + i;
                break;
            }
        }
        if (zone) {
            size_t zi = (size_t)(zone - h);
            return url_unescape_ok(h, zi, U_HOST) && url_unescape_ok(zone, ci - zi, U_ZONE) &&
                   url_unescape_ok(close, n - ci, U_HOST);
        }
    } else {
        for (size_t i = n; i-- > 0;) {
            if (h[i] == ':') {
                if (!valid_port(h + i, n - i)) {
                    return false;
                }
                break;
            }
        }
    }
    return url_unescape_ok(h, n, U_HOST);
}

static bool url_userinfo_ok(const char *u, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = u[i];
        if (!is_alpha(c) && !is_digit(c) && !strchr("-._:~!$&'()*+,;=%@", c)) {
            return false;
        }
    }
    return url_unescape_ok(u, n, U_USER);
}

/* url.Parse(s) without error; *has_scheme and *path (the path part, for uri-template). */
static bool url_parse(const char *s, bool *has_scheme, const char **path, size_t *path_len)
{
    const char *hash = strchr(s, '#');
    size_t n = hash ? (size_t)(hash - s) : strlen(s);
    *has_scheme = false;
    *path = s;
    *path_len = 0;
    for (const char *q = s; *q; q++) {
        unsigned char c = (unsigned char)*q;
        if (c < 0x20 || c == 0x7f) {
            return false;
        }
    }
    if (hash && !url_unescape_ok(hash + 1, strlen(hash + 1), U_FRAGMENT)) {
        return false;
    }
    if (n == 1 && s[0] == '*') {
        *path_len = 1;
        return true;
    }
    const char *rest = s;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (is_alpha(c)) {
            continue;
        }
        if (is_digit(c) || c == '+' || c == '-' || c == '.') {
            if (i == 0) {
                break;
            }
            continue;
        }
        if (c == ':') {
            if (i == 0) {
                return false; /* missing protocol scheme */
            }
            *has_scheme = true;
            rest = s + i + 1;
        }
        break;
    }
    size_t rn = n - (size_t)(rest - s);
    /* the query is cut off and not checked */
    const char *qm = memchr(rest, '?', rn);
    if (qm) {
        rn = (size_t)(qm - rest);
    }
    if (rn == 0 || rest[0] != '/') {
        if (*has_scheme) {
            return true; /* opaque */
        }
        const char *slash = memchr(rest, '/', rn);
        size_t seg = slash ? (size_t)(slash - rest) : rn;
        if (memchr(rest, ':', seg)) {
            return false; /* first path segment in URL cannot contain colon */
        }
    }
    if (rn >= 2 && rest[0] == '/' && rest[1] == '/' && (*has_scheme || rn < 3 || rest[2] != '/')) {
        const char *auth = rest + 2;
        const char *end = rest + rn;
        const char *slash = memchr(auth, '/', (size_t)(end - auth));
        const char *aend = slash ? slash : end;
        const char *at = NULL;
        for (const char *q = auth; q < aend; q++) {
            if (*q == '@') {
                at = q;
            }
        }
        const char *host = at ? at + 1 : auth;
        if (!url_host_ok(host, (size_t)(aend - host))) {
            return false;
        }
        if (at && !url_userinfo_ok(auth, (size_t)(at - auth))) {
            return false;
        }
        rn = (size_t)(end - aend);
        rest = aend;
    }
    *path = rest;
    *path_len = rn;
    return url_unescape_ok(rest, rn, U_PATH);
}

static bool fmt_uri(const char *s, bool need_scheme)
{
    bool scheme = false;
    const char *path = NULL;
    size_t plen = 0;
    return url_parse(s, &scheme, &path, &plen) && (scheme || !need_scheme) && !strchr(s, '\\');
}

/* ^([^{]*({[^}]*})?)*$ over the (unescaped) path: every '{' outside a pair has a '}' after
 * it; a '}' outside and a '{' inside a pair are plain characters. */
static bool fmt_uri_template(const char *s)
{
    bool scheme = false;
    const char *path = NULL;
    size_t plen = 0;
    if (!url_parse(s, &scheme, &path, &plen) || strchr(s, '\\')) {
        return false;
    }
    bool open = false;
    for (size_t i = 0; i < plen; i++) {
        char c = path[i];
        if (c == '%') { /* url_parse checked the escape */
            c = (char)(unhex(path[i + 1]) << 4 | unhex(path[i + 2]));
            i += 2;
        }
        if (c == '{') {
            open = true;
        } else if (c == '}') {
            open = false;
        }
    }
    return !open;
}

/* --- regular expressions -------------------------------------------------------------------- */

static bool fmt_hostname(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= 256) {
        return false;
    }
    size_t label = 0;
    for (size_t i = 0; i <= n; i++) {
        char c = s[i];
        if (c == '.' || c == '\0') {
            if (label == 0 || label > 63 || s[i - 1] == '-' || s[i - label] == '-') {
                return false;
            }
            label = 0;
        } else if (is_alpha(c) || is_digit(c) || c == '-') {
            label++;
        } else {
            return false;
        }
    }
    return true;
}

static bool fmt_uuid(const char *s)
{
    static const char shape[] = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
    if (strlen(s) != sizeof shape - 1) {
        return false;
    }
    for (size_t i = 0; shape[i]; i++) {
        bool ok = shape[i] == '-' ? s[i] == '-' : (is_digit(s[i]) || (s[i] >= 'a' && s[i] <= 'f'));
        if (!ok) {
            return false;
        }
    }
    return true;
}

/* (/([^~/]|~0|~1)*)* from @p s to the end. */
static bool json_pointer_tail(const char *s)
{
    if (!co_utf8_valid(s, strlen(s))) {
        return false;
    }
    if (*s && *s != '/') {
        return false;
    }
    for (; *s; s++) {
        if (*s == '~' && s[1] != '0' && s[1] != '1') {
            return false;
        }
    }
    return true;
}

static bool fmt_relative_json_pointer(const char *s)
{
    if (!is_digit(*s)) {
        return false;
    }
    if (*s == '0') {
        s++;
    } else {
        while (is_digit(*s)) {
            s++;
        }
    }
    return strcmp(s, "#") == 0 || json_pointer_tail(s);
}

/* Go's regexp.Compile (RE2): PCRE2 compiles it, every escape is one RE2 knows (no
 * backreferences, \Z, \h, ...), no Perl-only group (lookaround, atomic, comment), no possessive
 * quantifier, and no repeat count above 1000. */
static bool re2_escape_ok(const char *p)
{
    char c = p[1];
    if (!c) {
        return false;
    }
    if ((unsigned char)c >= 0x80) {
        return false;
    }
    if (!is_alpha(c) && !is_digit(c)) {
        return true; /* escaped punctuation */
    }
    if (c == '0') {
        return true;
    }
    if (c >= '1' && c <= '7') {
        return p[2] >= '0' && p[2] <= '7'; /* octal; a lone \1 is a backreference */
    }
    return is_alpha(c) && strchr("afnrtvxAzbBdDsSwWpPQ", c);
}

static bool fmt_regex(const char *s)
{
    if (!*s) {
        return true;
    }
    if (!co_utf8_valid(s, strlen(s))) {
        return false;
    }
    bool quoted = false;
    for (const char *p = s; *p; p++) {
        if (quoted) {
            if (p[0] == '\\' && p[1] == 'E') {
                quoted = false;
                p++;
            }
            continue;
        }
        if (*p == '\\') {
            if (!re2_escape_ok(p)) {
                return false;
            }
            quoted = p[1] == 'Q';
            p++;
            continue;
        }
        if (*p == '(' && p[1] == '?' &&
            (p[2] == '=' || p[2] == '!' || p[2] == '>' || p[2] == '#' ||
             (p[2] == '<' && (p[3] == '=' || p[3] == '!')))) {
            return false;
        }
        if ((*p == '*' || *p == '+' || *p == '?' || *p == '}') && p[1] == '+' && p > s) {
            return false;
        }
        if (*p == '{' && is_digit(p[1])) {
            const char *q = p + 1;
            long lo = 0, hi = 0;
            while (is_digit(*q) && lo <= 100000) {
                lo = lo * 10 + (*q++ - '0');
            }
            if (*q == ',') {
                q++;
                while (is_digit(*q) && hi <= 100000) {
                    hi = hi * 10 + (*q++ - '0');
                }
            }
            if (*q == '}' && (lo > 1000 || hi > 1000)) {
                return false;
            }
        }
    }
    int err = 0;
    PCRE2_SIZE off = 0;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &off, NULL);
    if (!re) {
        return false;
    }
    pcre2_code_free(re);
    return true;
}

/* --- the table ------------------------------------------------------------------------------ */

int co_helm__format_check(const char *format, const char *s)
{
    if (!strcmp(format, "date")) {
        return fmt_date(s);
    }
    if (!strcmp(format, "time")) {
        return fmt_time(s);
    }
    if (!strcmp(format, "date-time")) {
        return fmt_date_time(s);
    }
    if (!strcmp(format, "hostname")) {
        return fmt_hostname(s);
    }
    if (!strcmp(format, "email") || !strcmp(format, "idn-email")) {
        return fmt_email(s);
    }
    if (!strcmp(format, "ipv4")) {
        return parse_ip(s) && strchr(s, '.');
    }
    if (!strcmp(format, "ipv6")) {
        return parse_ip(s) && strchr(s, ':');
    }
    if (!strcmp(format, "uri") || !strcmp(format, "iri")) {
        return fmt_uri(s, true);
    }
    if (!strcmp(format, "uri-reference") || !strcmp(format, "iri-reference")) {
        return fmt_uri(s, false);
    }
    if (!strcmp(format, "uri-template")) {
        return fmt_uri_template(s);
    }
    if (!strcmp(format, "uuid")) {
        return fmt_uuid(s);
    }
    if (!strcmp(format, "regex")) {
        return fmt_regex(s);
    }
    if (!strcmp(format, "json-pointer")) {
        return json_pointer_tail(s);
    }
    if (!strcmp(format, "relative-json-pointer")) {
        return fmt_relative_json_pointer(s);
    }
    return -1;
}
