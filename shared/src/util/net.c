/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The network deny-list (net.h): a small array of ranges under a read-write lock. IPv4 ranges
 * are kept as IPv4 (an IPv6 range inside ::ffff:0:0/96 is turned into the IPv4 range it
 * covers), and an IPv6 address that reaches an IPv4 host (mapped, or through the well-known
 * NAT64 prefix) is checked against the IPv4 ranges too.
 */
#include "co/util/net.h"

#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "co/util/error.h"

/* Enough for any normalised range ("ffff:...:ffff/128"). */
#define RANGE_TEXT 64
/* Entries of one deny-list; far more than any real configuration. */
#define MAX_RANGES 1024

typedef struct range {
    int family; /* AF_INET or AF_INET6 */
    unsigned char addr[16];
    unsigned prefix;
    char text[RANGE_TEXT];
} range;

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static range *ranges;
static size_t nranges;

static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};

/* Whether the first @p prefix bits of @p a and @p b agree. */
static int prefix_equal(const unsigned char *a, const unsigned char *b, unsigned prefix)
{
    unsigned full = prefix / 8, rest = prefix % 8;
    if (memcmp(a, b, full) != 0) {
        return 0;
    }
    if (rest == 0) {
        return 1;
    }
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (a[full] & mask) == (b[full] & mask);
}

static void mask_bits(unsigned char *a, size_t len, unsigned prefix)
{
    for (size_t i = 0; i < len; i++) {
        unsigned bit = (unsigned)i * 8;
        if (bit >= prefix) {
            a[i] = 0;
        } else if (prefix - bit < 8) {
            a[i] &= (unsigned char)(0xff << (8 - (prefix - bit)));
        }
    }
}

/* Parses one entry (no blanks around it) into @p out. */
static int parse_range(range *out, const char *entry)
{
    char text[RANGE_TEXT];
    size_t len = strlen(entry);
    if (len >= sizeof(text)) {
        return co_error_set(CO_EINVALID, "\"%.80s...\" is not a CIDR", entry);
    }
    memcpy(text, entry, len + 1);
    char *slash = strchr(text, '/');
    long prefix = -1;
    if (slash) {
        *slash = '\0';
        const char *p = slash + 1;
        char *end = NULL;
        if (*p < '0' || *p > '9' || strlen(p) > 3) {
            return co_error_set(CO_EINVALID, "\"%s\" is not a CIDR: bad prefix length", entry);
        }
        prefix = strtol(p, &end, 10);
        if (*end) {
            return co_error_set(CO_EINVALID, "\"%s\" is not a CIDR: bad prefix length", entry);
        }
    }
    memset(out, 0, sizeof(*out));
    unsigned max;
    if (inet_pton(AF_INET, text, out->addr) == 1) {
        out->family = AF_INET;
        max = 32;
    } else if (inet_pton(AF_INET6, text, out->addr) == 1) {
        out->family = AF_INET6;
        max = 128;
    } else {
        return co_error_set(CO_EINVALID, "\"%s\" is not a CIDR: \"%s\" is not an IP address", entry,
                            text);
    }
    if (prefix > (long)max) {
        return co_error_set(CO_EINVALID, "\"%s\" is not a CIDR: the prefix length is over %u",
                            entry, max);
    }
    out->prefix = prefix < 0 ? max : (unsigned)prefix;
    if (out->family == AF_INET6 && out->prefix >= 96 && memcmp(out->addr, v4_mapped, 12) == 0) {
        memmove(out->addr, out->addr + 12, 4);
        memset(out->addr + 4, 0, 12);
        out->family = AF_INET;
        out->prefix -= 96;
    }
    mask_bits(out->addr, out->family == AF_INET ? 4 : 16, out->prefix);
    char ip[INET6_ADDRSTRLEN];
    inet_ntop(out->family, out->addr, ip, sizeof(ip));
    snprintf(out->text, sizeof(out->text), "%s/%u", ip, out->prefix);
    return 0;
}

int co_net_deny_set(const char *const *specs, size_t nspecs)
{
    range *list = NULL;
    size_t n = 0;
    int rc = 0;
    for (size_t i = 0; i < nspecs && rc == 0; i++) {
        char *copy = co_xstrdup(specs[i] ? specs[i] : "");
        char *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0;
             tok = strtok_r(NULL, ",", &save)) {
            while (*tok == ' ' || *tok == '\t') {
                tok++;
            }
            size_t len = strlen(tok);
            while (len > 0 && (tok[len - 1] == ' ' || tok[len - 1] == '\t')) {
                tok[--len] = '\0';
            }
            if (len == 0) {
                continue;
            }
            if (n == MAX_RANGES) {
                rc = co_error_set(CO_EINVALID, "more than %d denied ranges", MAX_RANGES);
                break;
            }
            list = co_xreallocarray(list, n + 1, sizeof(*list));
            rc = parse_range(&list[n], tok);
            n += rc == 0;
        }
        free(copy);
    }
    if (rc < 0) {
        free(list);
        return rc;
    }
    pthread_rwlock_wrlock(&lock);
    free(ranges);
    ranges = list;
    nranges = n;
    pthread_rwlock_unlock(&lock);
    return 0;
}

void co_net_deny_clear(void)
{
    pthread_rwlock_wrlock(&lock);
    free(ranges);
    ranges = NULL;
    nranges = 0;
    pthread_rwlock_unlock(&lock);
}

bool co_net_deny_active(void)
{
    pthread_rwlock_rdlock(&lock);
    int active = nranges > 0;
    pthread_rwlock_unlock(&lock);
    return active;
}

/* The range of family @p family holding @p addr, or NULL (caller holds the lock). */
static const range *find_locked(int family, const unsigned char *addr)
{
    for (size_t i = 0; i < nranges; i++) {
        if (ranges[i].family == family && prefix_equal(ranges[i].addr, addr, ranges[i].prefix)) {
            return &ranges[i];
        }
    }
    return NULL;
}

int co_net_deny_check(const struct sockaddr *addr, size_t addrlen)
{
    int family;
    unsigned char ip[16];
    if (addr->sa_family == AF_INET && addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)addr;
        family = AF_INET;
        memcpy(ip, &in->sin_addr, 4);
    } else if (addr->sa_family == AF_INET6 && addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)addr;
        family = AF_INET6;
        memcpy(ip, &in6->sin6_addr, 16);
    } else {
        return 0;
    }
    char denied[RANGE_TEXT] = "";
    pthread_rwlock_rdlock(&lock);
    const range *r = find_locked(family, ip);
    if (!r && family == AF_INET6 &&
        (memcmp(ip, v4_mapped, 12) == 0 || memcmp(ip, nat64, 12) == 0)) {
        r = find_locked(AF_INET, ip + 12);
    }
    if (r) {
        memcpy(denied, r->text, sizeof(denied));
    }
    pthread_rwlock_unlock(&lock);
    if (!denied[0]) {
        return 0;
    }
    char text[INET6_ADDRSTRLEN];
    inet_ntop(family, ip, text, sizeof(text));
    return co_error_set(CO_EAUTH, "connection to %s refused: address in denied range %s", text,
                        denied);
}

int co_net_deny_check_host(const char *host)
{
    if (!co_net_deny_active() || !host || !*host) {
        return 0;
    }
    char name[256];
    size_t len = strlen(host);
    if (host[0] == '[' && len >= 2 && host[len - 1] == ']') {
        host++;
        len -= 2;
    }
    if (len >= sizeof(name)) {
        return 0; /* no DNS name is this long: it cannot resolve */
    }
    memcpy(name, host, len);
    name[len] = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(name, NULL, &hints, &res) != 0) {
        return 0;
    }
    int rc = 0;
    for (const struct addrinfo *a = res; a && rc == 0; a = a->ai_next) {
        rc = co_net_deny_check(a->ai_addr, a->ai_addrlen);
    }
    freeaddrinfo(res);
    return rc;
}

void co_net_deny_describe(char *buf, size_t len)
{
    if (len == 0) {
        return;
    }
    buf[0] = '\0';
    size_t used = 0;
    pthread_rwlock_rdlock(&lock);
    for (size_t i = 0; i < nranges && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? "," : "", ranges[i].text);
        if (n < 0) {
            break;
        }
        used += (size_t)n;
    }
    pthread_rwlock_unlock(&lock);
}
