/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Git sources over libgit2 (git.h). Resolution is an ls-remote on a detached remote; checkout
 * fetches into a bare repository per URL (named by the sha256 of the URL without credentials)
 * only when the commit is missing, then walks the commit's tree into the confined tree writer
 * of archive_writer.c, which also computes the canonical digest. Host keys of ssh remotes are
 * checked here against the caller's known_hosts; TLS certificates are left to libgit2.
 *
 * URLs come from Components. Only https, http and ssh reach libgit2 (its local transport would
 * read any repository on this machine, other tenants' cached ones included); redirects to
 * another host are refused, so credentials stay with the URL's host; and libgit2's TCP
 * connections, whatever the transport, go through a socket stream registered here that checks
 * each address against the network deny-list (net.h) before connecting.
 */
#include "co/util/digest.h"
#include "co/source/git.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <git2.h>
#include <git2/sys/stream.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "archive_lib.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/util/net.h"
#include "co/util/semver.h"

#define DEFAULT_TIMEOUT_MS 600000L
#define DEFAULT_BRANCH     "master"
/* A TCP connect that takes longer than this is given up (libgit2's own waits forever). */
#define CONNECT_TIMEOUT_MS 30000L

struct co_git {
    char *dir;
    long timeout_ms;
    const volatile int *cancel;
    int file_urls; /* co_git_options.test_only_file_urls */
};

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the socket stream ------------------------------------------------------------------- */

/*
 * libgit2 runs an operation's network I/O on the calling thread, so the operation's deadline
 * and a refusal by the deny-list travel between it and the stream in thread-locals.
 */
static _Thread_local long op_deadline_ms;
static _Thread_local int op_denied;
static _Thread_local char op_denied_msg[256];

/*
 * libgit2's ssh transport hands the socket of the stream it connected through to libssh2,
 * reading it as a git_socket_stream (libgit2's src/libgit2/streams/socket.h, unchanged from
 * 1.5 to 1.9): these first members must stay as they are, in this order.
 */
_Static_assert(LIBGIT2_VER_MAJOR == 1 && LIBGIT2_VER_MINOR >= 5 && LIBGIT2_VER_MINOR <= 9,
               "check that libgit2's git_socket_stream still starts like deny_stream");
typedef struct deny_stream {
    git_stream parent;
    char *host;
    char *port;
    int s;
} deny_stream;

/* Connects @p fd to @p a within @p timeout_ms. @return 0 or an errno value. */
static int connect_within(int fd, const struct addrinfo *a, long timeout_ms)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        return errno;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
        if (errno != EINPROGRESS) {
            return errno;
        }
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int n;
        do {
            n = poll(&p, 1, (int)timeout_ms);
        } while (n < 0 && errno == EINTR);
        if (n == 0) {
            return ETIMEDOUT;
        }
        int err = 0;
        socklen_t len = sizeof(err);
        if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
            return errno;
        }
        if (err) {
            return err;
        }
    }
    return fcntl(fd, F_SETFL, flags) < 0 ? errno : 0;
}

static int stream_connect(git_stream *stream)
{
    deny_stream *st = (deny_stream *)stream;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    char msg[512];
    int gai = getaddrinfo(st->host, st->port, &hints, &res);
    if (gai != 0) {
        snprintf(msg, sizeof(msg), "failed to resolve address for %s: %s", st->host,
                 gai_strerror(gai));
        git_error_set_str(GIT_ERROR_NET, msg);
        return -1;
    }
    long timeout = CONNECT_TIMEOUT_MS;
    if (op_deadline_ms > 0 && op_deadline_ms - now_ms() < timeout) {
        timeout = op_deadline_ms - now_ms() > 0 ? op_deadline_ms - now_ms() : 1;
    }
    int err = 0, denied = 0, tried = 0;
    for (const struct addrinfo *a = res; a && st->s < 0; a = a->ai_next) {
        if (co_net_deny_check(a->ai_addr, a->ai_addrlen) < 0) {
            if (!denied) {
                snprintf(op_denied_msg, sizeof(op_denied_msg), "%s", co_error_last());
            }
            denied = 1;
            co_error_clear();
            continue;
        }
        tried = 1;
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        err = connect_within(fd, a, timeout);
        if (err == 0) {
            st->s = fd;
        } else {
            close(fd);
        }
    }
    freeaddrinfo(res);
    if (st->s >= 0) {
        return 0;
    }
    if (denied && !tried) {
        op_denied = 1;
        git_error_set_str(GIT_ERROR_NET, op_denied_msg);
        return -1;
    }
    char ebuf[128];
    snprintf(msg, sizeof(msg), "failed to connect to %s: %s", st->host,
             co_errno_text(err ? err : ECONNREFUSED, ebuf, sizeof(ebuf)));
    git_error_set_str(GIT_ERROR_OS, msg);
    return -1;
}

static ssize_t stream_read(git_stream *stream, void *data, size_t len)
{
    deny_stream *st = (deny_stream *)stream;
    ssize_t n;
    do {
        n = recv(st->s, data, len, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        char ebuf[128], msg[192];
        snprintf(msg, sizeof(msg), "error receiving socket data: %s",
                 co_errno_text(errno, ebuf, sizeof(ebuf)));
        git_error_set_str(GIT_ERROR_NET, msg);
    }
    return n;
}

static ssize_t stream_write(git_stream *stream, const char *data, size_t len, int flags)
{
    deny_stream *st = (deny_stream *)stream;
    ssize_t n;
    do {
        n = send(st->s, data, len, flags | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        char ebuf[128], msg[192];
        snprintf(msg, sizeof(msg), "error sending data: %s",
                 co_errno_text(errno, ebuf, sizeof(ebuf)));
        git_error_set_str(GIT_ERROR_NET, msg);
    }
    return n;
}

static int stream_close(git_stream *stream)
{
    deny_stream *st = (deny_stream *)stream;
    int rc = st->s >= 0 ? close(st->s) : 0;
    st->s = -1;
    return rc;
}

static void stream_free(git_stream *stream)
{
    deny_stream *st = (deny_stream *)stream;
    if (st->s >= 0) {
        close(st->s);
    }
    free(st->host);
    free(st->port);
    free(st);
}

static int stream_new(git_stream **out, const char *host, const char *port)
{
    deny_stream *st = co_xcalloc(1, sizeof(*st));
    st->parent.version = GIT_STREAM_VERSION;
    st->parent.connect = stream_connect;
    st->parent.read = stream_read;
    st->parent.write = stream_write;
    st->parent.close = stream_close;
    st->parent.free = stream_free;
    st->host = co_xstrdup(host);
    st->port = co_xstrdup(port);
    st->s = -1;
    *out = &st->parent;
    return 0;
}

static pthread_once_t git_once = PTHREAD_ONCE_INIT;
static int git_init_rc;

static void git_init(void)
{
    git_init_rc = git_libgit2_init();
    if (git_init_rc >= 0) {
        git_stream_registration reg = {GIT_STREAM_VERSION, stream_new, NULL};
        git_init_rc = git_stream_register(GIT_STREAM_STANDARD, &reg);
    }
}

static int ensure_git(void)
{
    pthread_once(&git_once, git_init);
    if (git_init_rc < 0) {
        return co_error_set(CO_ERROR, "initialising libgit2");
    }
    return 0;
}

/* ---- names, URLs, revisions -------------------------------------------------------------- */

void co_git_revision(char **out, const char *refname, const char *commit)
{
    /* Flux keeps what follows the second '/' of the reference name */
    const char *short_name = NULL;
    if (refname) {
        const char *a = strchr(refname, '/');
        const char *b = a ? strchr(a + 1, '/') : NULL;
        short_name = b ? b + 1 : NULL;
    }
    *out = short_name ? co_xasprintf("%s@sha1:%s", short_name, commit)
                      : co_xasprintf("sha1:%s", commit);
}

char *co_git_redact_url(const char *url)
{
    const char *scheme = strstr(url, "://");
    if (!scheme) {
        return co_xstrdup(url);
    }
    /* the authority ends at the path, query or fragment; user-info ends at its last '@', so a
     * password with a literal '@' is removed whole */
    const char *auth_start = scheme + 3;
    const char *auth_end = auth_start + strcspn(auth_start, "/?#");
    const char *at = NULL;
    for (const char *q = auth_start; q < auth_end; q++) {
        if (*q == '@') {
            at = q;
        }
    }
    if (!at) {
        return co_xstrdup(url);
    }
    const char *colon = memchr(auth_start, ':', (size_t)(at - auth_start));
    if (!colon) {
        return co_xstrdup(url);
    }
    return co_xasprintf("%.*s:redacted%s", (int)(colon - url), url, at);
}

typedef enum url_kind { URL_HTTP, URL_SSH, URL_FILE } url_kind;

/*
 * Sorts @p url by transport. file:// is accepted only with @p file_urls (tests); every other
 * form libgit2 would take (file://, git://, ssh+git://, a local path) is refused here, so that
 * its local transport never reads this machine's repositories for a Component.
 */
static int classify_url(const char *url, url_kind *kind, int file_urls)
{
    if (!url || !*url) {
        return co_error_set(CO_EINVALID, "git url: must not be empty");
    }
    if (strlen(url) > CO_MAX_SOURCE_STRING) {
        return co_error_set(CO_EINVALID, "git url: longer than %zu bytes", CO_MAX_SOURCE_STRING);
    }
    for (const char *p = url; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            return co_error_set(CO_EINVALID, "git url: contains control characters");
        }
    }
    if (strncmp(url, "https://", 8) == 0 || strncmp(url, "http://", 7) == 0) {
        *kind = URL_HTTP;
    } else if (strncmp(url, "ssh://", 6) == 0) {
        *kind = URL_SSH;
    } else if (file_urls && strncmp(url, "file://", 7) == 0) {
        *kind = URL_FILE;
    } else {
        /* scp-style user@host:path: a ':' before any '/', and no scheme */
        const char *colon = strchr(url, ':');
        const char *slash = strchr(url, '/');
        if (!colon || colon == url || (slash && slash < colon) || strstr(url, "://")) {
            char *safe = co_git_redact_url(url);
            int rc = co_error_set(CO_EINVALID,
                                  "git url '%s' (spec.sourceRef.git.url): the scheme must be "
                                  "https, http or ssh, or user@host:path; file:// URLs and "
                                  "local paths are not allowed",
                                  safe);
            free(safe);
            return rc;
        }
        *kind = URL_SSH;
    }
    return 0;
}

/* The host of an http(s) URL, brackets kept for IPv6 (free with free()). */
static char *http_host(const char *url)
{
    const char *host = strstr(url, "://") + 3;
    size_t len = strcspn(host, "/?#");
    for (size_t i = len; i > 0; i--) {
        if (host[i - 1] == '@') {
            host += i;
            len -= i;
            break;
        }
    }
    if (host[0] == '[') {
        const char *close = memchr(host, ']', len);
        return co_xstrndup(host, close ? (size_t)(close - host) + 1 : len);
    }
    const char *colon = memchr(host, ':', len);
    return co_xstrndup(host, colon ? (size_t)(colon - host) : len);
}

/*
 * Through a proxy (libgit2 takes one from http_proxy, https_proxy and their upper-case forms)
 * the socket stream sees only the proxy's address, so the URL's host is checked by name.
 */
static int check_proxied_host(const char *url, url_kind kind)
{
    static const char *const names[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"};
    if (kind != URL_HTTP || !co_net_deny_active()) {
        return 0;
    }
    int proxied = 0;
    for (size_t i = 0; i < CO_ARRAY_SIZE(names) && !proxied; i++) {
        const char *v = getenv(names[i]); // NOLINT(concurrency-mt-unsafe): set before start-up
        proxied = v && *v;
    }
    if (!proxied) {
        return 0;
    }
    char *host = http_host(url);
    int rc = co_net_deny_check_host(host);
    free(host);
    if (rc < 0) {
        char *safe = co_git_redact_url(url);
        rc = co_error_wrap("git repository %s", safe);
        free(safe);
    }
    return rc;
}

/* The known_hosts name of an ssh URL's host: "host", or "[host]:port" for another port. */
static char *known_hosts_name(const char *url)
{
    const char *host;
    if (strncmp(url, "ssh://", 6) == 0) {
        host = url + 6;
    } else {
        host = url;
    }
    const char *end = host + strcspn(host, "/");
    const char *at = memchr(host, '@', (size_t)(end - host));
    if (at) {
        host = at + 1;
    }
    if (strncmp(url, "ssh://", 6) != 0) {
        /* scp style: host ends at ':' */
        return co_xstrndup(host, strcspn(host, ":"));
    }
    size_t hostlen;
    const char *port = NULL;
    if (*host == '[') {
        const char *close = memchr(host, ']', (size_t)(end - host));
        hostlen = (size_t)((close ? close : end) - host - 1);
        host++;
        if (close && close[1] == ':') {
            port = close + 2;
        }
    } else {
        const char *colon = memchr(host, ':', (size_t)(end - host));
        hostlen = colon ? (size_t)(colon - host) : (size_t)(end - host);
        port = colon ? colon + 1 : NULL;
    }
    size_t portlen = port ? (size_t)(end - port) : 0;
    if (!port || portlen == 0 || (portlen == 2 && strncmp(port, "22", 2) == 0)) {
        return co_xstrndup(host, hostlen);
    }
    return co_xasprintf("[%.*s]:%.*s", (int)hostlen, host, (int)portlen, port);
}

static int is_hex40(const char *s)
{
    if (!s || strlen(s) != 40) {
        return 0;
    }
    for (int i = 0; i < 40; i++) {
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) {
            return 0;
        }
    }
    return 1;
}

static int set(const char *s)
{
    return s && *s;
}

static int check_refname_part(const char *what, const char *name)
{
    if (strlen(name) > 1024) {
        return co_error_set(CO_EINVALID, "git ref.%s: longer than 1024 bytes", what);
    }
    char *full = co_xasprintf("refs/heads/%s", name);
    int ok = 0;
    git_reference_name_is_valid(&ok, full);
    free(full);
    if (!ok) {
        return co_error_set(CO_EINVALID, "git ref.%s: '%.200s' is not a valid reference name", what,
                            name);
    }
    return 0;
}

static int validate(const char *url, const co_git_ref *ref, int file_urls, url_kind *kind)
{
    int rc = ensure_git();
    if (rc < 0 || (rc = classify_url(url, kind, file_urls)) < 0) {
        return rc;
    }
    if (set(ref->commit) && !is_hex40(ref->commit)) {
        return co_error_set(CO_EINVALID,
                            "git ref.commit: '%.64s' is not a full 40-digit lowercase hex id",
                            ref->commit);
    }
    if (set(ref->semver)) {
        co_semver_constraints *c = NULL;
        if (co_semver_constraints_parse(&c, ref->semver) < 0) {
            return co_error_wrap("git ref.semver");
        }
        co_semver_constraints_free(c);
    }
    if (set(ref->branch) && (rc = check_refname_part("branch", ref->branch)) < 0) {
        return rc;
    }
    if (set(ref->tag) && (rc = check_refname_part("tag", ref->tag)) < 0) {
        return rc;
    }
    return 0;
}

int co_git_validate(const char *url, const co_git_ref *ref)
{
    url_kind kind = URL_HTTP;
    return validate(url, ref, 0, &kind);
}

/* ---- callbacks --------------------------------------------------------------------------- */

typedef struct cb_ctx {
    const co_git_auth *auth;
    char *kh_name; /* known_hosts name of the host */
    int cred_given;
    int preemptive; /* credentials went out in an Authorization header already */
    int no_creds;
    int auth_failed;
    int hostkey_failed;
    char hostkey_msg[256];
    long deadline;
    const volatile int *cancel;
    int canceled;
    int timed_out;
} cb_ctx;

static int on_credentials(git_credential **out,
                          const char *url,
                          const char *user_from_url,
                          unsigned int allowed,
                          void *payload)
{
    (void)url;
    cb_ctx *c = payload;
    const co_git_auth *a = c->auth;
    const char *user = user_from_url && *user_from_url ? user_from_url : "git";
    if ((allowed & GIT_CREDENTIAL_USERNAME) && !(allowed & GIT_CREDENTIAL_SSH_KEY)) {
        return git_credential_username_new(out, user);
    }
    if (c->cred_given || c->preemptive) {
        /* asked again: the remote refused what we gave */
        c->auth_failed = 1;
        git_error_set_str(GIT_ERROR_NET, "the remote refused the credentials");
        return GIT_EAUTH;
    }
    if ((allowed & GIT_CREDENTIAL_SSH_KEY) && a && set(a->identity)) {
        c->cred_given = 1;
        return git_credential_ssh_key_memory_new(
            out, user, set(a->identity_pub) ? a->identity_pub : NULL, a->identity,
            set(a->password) ? a->password : NULL);
    }
    if ((allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT) && a && set(a->username) && a->password) {
        c->cred_given = 1;
        return git_credential_userpass_plaintext_new(out, a->username, a->password);
    }
    c->no_creds = 1;
    git_error_set_str(GIT_ERROR_NET, "the remote requires credentials and none were given");
    return GIT_EAUTH;
}

/*
 * Matches @p name against an OpenSSH host pattern with '*' and '?', case-insensitively. Greedy
 * with one backtrack point (the last '*'), so the time is O(plen * strlen(name)) whatever the
 * pattern: a known_hosts line full of stars cannot stall a worker.
 */
static int glob_match(const char *pat, size_t plen, const char *name)
{
    size_t p = 0, star = SIZE_MAX;
    const char *n = name, *resume = NULL;
    while (*n) {
        if (p < plen && pat[p] == '*') {
            star = p++;
            resume = n;
        } else if (p < plen && (pat[p] == '?' ||
                                tolower((unsigned char)pat[p]) == tolower((unsigned char)*n))) {
            p++;
            n++;
        } else if (star != SIZE_MAX) {
            p = star + 1;
            n = ++resume;
        } else {
            return 0;
        }
    }
    while (p < plen && pat[p] == '*') {
        p++;
    }
    return p == plen;
}

static int b64_decode(const char *in, size_t inlen, unsigned char **out, size_t *outlen)
{
    if (inlen == 0 || inlen > CO_MAX_GIT_CREDENTIAL) {
        return -1;
    }
    if (co_base64_decode_alloc(out, outlen, in, inlen, CO_BASE64_STD) < 0) {
        co_error_clear();
        return -1;
    }
    return 0;
}

/* Whether the hashed host entry "|1|salt|hash" names @p name. */
static int hashed_match(const char *entry, size_t len, const char *name)
{
    if (len < 4 || strncmp(entry, "|1|", 3) != 0) {
        return 0;
    }
    const char *salt = entry + 3;
    const char *bar = memchr(salt, '|', len - 3);
    if (!bar) {
        return 0;
    }
    unsigned char *s = NULL, *h = NULL;
    size_t slen = 0, hlen = 0;
    int match = 0;
    if (b64_decode(salt, (size_t)(bar - salt), &s, &slen) == 0 &&
        b64_decode(bar + 1, (size_t)(entry + len - bar - 1), &h, &hlen) == 0 && hlen == 20) {
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned maclen = 0;
        HMAC(EVP_sha1(), s, (int)slen, (const unsigned char *)name, strlen(name), mac, &maclen);
        match = maclen == 20 && memcmp(mac, h, 20) == 0;
    }
    free(s);
    free(h);
    return match;
}

/* Whether the comma-separated host list @p hosts names @p name (negations win). */
static int hosts_match(const char *hosts, size_t len, const char *name)
{
    int matched = 0;
    const char *p = hosts, *end = hosts + len;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);
        int negate = n > 0 && *p == '!';
        const char *pat = negate ? p + 1 : p;
        size_t plen = negate ? n - 1 : n;
        int m = (plen >= 3 && strncmp(pat, "|1|", 3) == 0) ? hashed_match(pat, plen, name)
                                                           : glob_match(pat, plen, name);
        if (m && negate) {
            return 0;
        }
        matched |= m;
        p += n + 1;
    }
    return matched;
}

/*
 * Checks a host key against known_hosts data. @return 0 when a line for @p name carries the
 * key; -1 (with @p msg) otherwise, including a revoked key.
 */
static int check_known_hosts(const char *known_hosts,
                             const char *name,
                             const unsigned char *key,
                             size_t keylen,
                             char *msg,
                             size_t msglen)
{
    if (!set(known_hosts)) {
        snprintf(msg, msglen, "no known_hosts were given for ssh host %s", name);
        return -1;
    }
    int host_seen = 0;
    const char *line = known_hosts;
    while (*line) {
        const char *eol = line + strcspn(line, "\n");
        char fields[3][2048];
        size_t nf = 0;
        const char *p = line;
        while (p < eol && nf < 3) {
            while (p < eol && (*p == ' ' || *p == '\t' || *p == '\r')) {
                p++;
            }
            const char *start = p;
            while (p < eol && *p != ' ' && *p != '\t' && *p != '\r') {
                p++;
            }
            size_t n = (size_t)(p - start);
            if (n == 0) {
                break;
            }
            if (n >= sizeof(fields[0])) {
                nf = 0; /* an overlong field: the line is skipped, never half-matched */
                break;
            }
            memcpy(fields[nf], start, n);
            fields[nf][n] = '\0';
            nf++;
            /* a marker shifts the fields: keep reading one more */
            if (nf == 1 && fields[0][0] == '@') {
                continue;
            }
        }
        int revoked = 0;
        size_t base = 0;
        if (nf >= 1 && fields[0][0] == '@') {
            revoked = strcmp(fields[0], "@revoked") == 0;
            if (!revoked || nf < 3) {
                line = *eol ? eol + 1 : eol; /* @cert-authority: not supported */
                continue;
            }
            base = 1;
        }
        if (nf >= base + 2 && fields[base][0] != '#' &&
            hosts_match(fields[base], strlen(fields[base]), name)) {
            /* the key is the field after the key type */
            const char *k = NULL;
            char keyfield[2048] = "";
            /* re-scan the line for the key field (index base + 2) */
            const char *q = line;
            for (size_t i = 0; i <= base + 2 && q < eol; i++) {
                while (q < eol && (*q == ' ' || *q == '\t')) {
                    q++;
                }
                const char *start = q;
                while (q < eol && *q != ' ' && *q != '\t' && *q != '\r') {
                    q++;
                }
                if (i == base + 2 && q > start && (size_t)(q - start) < sizeof(keyfield)) {
                    memcpy(keyfield, start, (size_t)(q - start));
                    keyfield[q - start] = '\0';
                    k = keyfield;
                }
            }
            unsigned char *blob = NULL;
            size_t bloblen = 0;
            if (k && b64_decode(k, strlen(k), &blob, &bloblen) == 0) {
                int same = bloblen == keylen && memcmp(blob, key, keylen) == 0;
                free(blob);
                if (same && revoked) {
                    snprintf(msg, msglen, "the host key of %s is revoked in known_hosts", name);
                    return -1;
                }
                if (same) {
                    return 0;
                }
            }
            host_seen |= !revoked;
        }
        line = *eol ? eol + 1 : eol;
    }
    snprintf(msg, msglen,
             host_seen ? "the host key of %s does not match known_hosts"
                       : "ssh host %s is not in known_hosts",
             name);
    return -1;
}

int co_git_known_hosts_check(const char *known_hosts,
                             const char *url,
                             const void *key,
                             size_t keylen)
{
    char msg[512];
    char *name = known_hosts_name(url);
    int rc = check_known_hosts(known_hosts, name, key, keylen, msg, sizeof(msg));
    free(name);
    if (rc < 0) {
        return co_error_set(CO_EAUTH, "%s", msg);
    }
    return 0;
}

static int on_certificate(git_cert *cert, int valid, const char *host, void *payload)
{
    (void)valid;
    (void)host;
    cb_ctx *c = payload;
    if (cert->cert_type != GIT_CERT_HOSTKEY_LIBSSH2) {
        return GIT_PASSTHROUGH; /* TLS: libgit2's own verification decides */
    }
    const git_cert_hostkey *hk = (const git_cert_hostkey *)cert;
    if (!(hk->type & GIT_CERT_SSH_RAW) || !hk->hostkey) {
        snprintf(c->hostkey_msg, sizeof(c->hostkey_msg), "the ssh host key of %s is unavailable",
                 c->kh_name);
        c->hostkey_failed = 1;
        return GIT_ECERTIFICATE;
    }
    const char *kh = c->auth ? c->auth->known_hosts : NULL;
    if (check_known_hosts(kh, c->kh_name, (const unsigned char *)hk->hostkey, hk->hostkey_len,
                          c->hostkey_msg, sizeof(c->hostkey_msg)) < 0) {
        c->hostkey_failed = 1;
        git_error_set_str(GIT_ERROR_SSH, c->hostkey_msg);
        return GIT_ECERTIFICATE;
    }
    return 0;
}

static int check_deadline(cb_ctx *c)
{
    if (c->cancel && *c->cancel) {
        c->canceled = 1;
        return -1;
    }
    if (now_ms() > c->deadline) {
        c->timed_out = 1;
        return -1;
    }
    return 0;
}

static int on_transfer(const git_indexer_progress *stats, void *payload)
{
    (void)stats;
    return check_deadline(payload);
}

static int on_sideband(const char *str, int len, void *payload)
{
    (void)str;
    (void)len;
    return check_deadline(payload);
}

static void callbacks_init(git_remote_callbacks *cbs, cb_ctx *c)
{
    git_remote_init_callbacks(cbs, GIT_REMOTE_CALLBACKS_VERSION);
    cbs->credentials = on_credentials;
    cbs->certificate_check = on_certificate;
    cbs->transfer_progress = on_transfer;
    cbs->sideband_progress = on_sideband;
    cbs->payload = c;
}

static void ctx_init(cb_ctx *c, const co_git *g, const char *url, const co_git_auth *auth)
{
    memset(c, 0, sizeof(*c));
    c->auth = auth;
    c->kh_name = known_hosts_name(url);
    c->deadline = now_ms() + g->timeout_ms;
    c->cancel = g->cancel;
    op_deadline_ms = c->deadline;
    op_denied = 0;
    op_denied_msg[0] = '\0';
}

/*
 * Extra HTTP headers: a bearer token (libgit2 has no credential type for one), or basic
 * credentials, sent with every request rather than in answer to the server's challenge: after
 * a 401 whose body arrives with its headers, libgit2 1.5 parses that body as the start of the
 * next response on the new connection ("http parser error: invalid constant string"), so
 * answering challenges fails at random. Headers sent up front would follow a redirect to
 * another host: REDIRECTS refuses those, so they reach the URL's host only.
 * @p hdr must outlive the operation.
 */
static void headers_init(git_strarray *arr, char **hdr, const co_git_auth *auth)
{
    arr->strings = NULL;
    arr->count = 0;
    *hdr = NULL;
    if (auth && set(auth->bearer_token)) {
        *hdr = co_xasprintf("Authorization: Bearer %s", auth->bearer_token);
    } else if (auth && set(auth->username) && auth->password && !set(auth->identity)) {
        char *plain = co_xasprintf("%s:%s", auth->username, auth->password);
        size_t len = strlen(plain);
        char *b64 = co_base64_encode(plain, len, CO_BASE64_STD);
        *hdr = co_xasprintf("Authorization: Basic %s", b64);
        co_free_secret(b64, strlen(b64));
        co_free_secret(plain, len);
    }
    if (*hdr) {
        arr->strings = hdr;
        arr->count = 1;
    }
}

/*
 * libgit2's default follows a redirect to another host on the first request, custom headers
 * and all; its "none" still follows one within the host (a path, or http to https), which is
 * what a renamed repository needs.
 */
#define REDIRECTS GIT_REMOTE_REDIRECT_NONE

static void headers_dispose(char **hdr)
{
    if (*hdr) {
        co_free_secret(*hdr, strlen(*hdr));
        *hdr = NULL;
    }
}

/* Turns a libgit2 failure into our error code and message. */
static int git_failure(int grc, const cb_ctx *c, const char *what, const char *url)
{
    char *safe = co_git_redact_url(url);
    const git_error *e = git_error_last();
    const char *msg = e && e->message ? e->message : "unknown error";
    int rc;
    if (op_denied) {
        rc = co_error_set(CO_EAUTH, "%s %s: %s", what, safe, op_denied_msg);
    } else if (c && c->canceled) {
        rc = co_error_set(CO_ECANCELED, "%s %s: canceled", what, safe);
    } else if (c && c->timed_out) {
        rc = co_error_set(CO_ETIMEOUT, "%s %s: timed out", what, safe);
    } else if (c && c->hostkey_failed) {
        rc = co_error_set(CO_EAUTH, "%s %s: %s", what, safe, c->hostkey_msg);
    } else if (c && c->no_creds) {
        rc = co_error_set(CO_EAUTH,
                          "%s %s: authentication required, but no credentials were "
                          "given (set secretRef)",
                          what, safe);
    } else if ((c && c->auth_failed) || grc == GIT_EAUTH) {
        rc = co_error_set(CO_EAUTH, "%s %s: authentication failed: %s", what, safe, msg);
    } else if (grc == GIT_ECERTIFICATE) {
        rc = co_error_set(CO_EAUTH, "%s %s: certificate verification failed: %s", what, safe, msg);
    } else if (strncmp(msg, "cannot redirect from", 20) == 0) {
        rc = co_error_set(CO_EINVALID,
                          "%s %s: %s; redirects to another host are not followed (point the URL "
                          "at the repository's own host)",
                          what, safe, msg);
    } else if (grc == GIT_ENOTFOUND || strstr(msg, "404") || strstr(msg, "not found") ||
               strstr(msg, "does not appear to be a git repository") ||
               strstr(msg, "No such file or directory") ||
               strstr(msg, "could not find repository")) {
        rc = co_error_set(CO_ENOTFOUND, "%s %s: repository not found: %s", what, safe, msg);
    } else if (strstr(msg, "401") || strstr(msg, "403")) {
        rc = co_error_set(CO_EAUTH, "%s %s: access denied: %s", what, safe, msg);
    } else if (e && (e->klass == GIT_ERROR_NET || e->klass == GIT_ERROR_SSH ||
                     e->klass == GIT_ERROR_HTTP || e->klass == GIT_ERROR_SSL ||
                     e->klass == GIT_ERROR_OS)) {
        rc = co_error_set(CO_EUNAVAILABLE, "%s %s: %s", what, safe, msg);
    } else {
        rc = co_error_set(CO_ERROR, "%s %s: %s", what, safe, msg);
    }
    free(safe);
    return rc;
}

/* ---- handle ------------------------------------------------------------------------------ */

int co_git_new(co_git **out, const char *cache_dir, const co_git_options *opts)
{
    int rc = ensure_git();
    if (rc < 0) {
        return rc;
    }
    if (mkdir(cache_dir, 0755) < 0 && errno != EEXIST) {
        return co_error_set_os(CO_ERROR, "creating %s", cache_dir);
    }
    co_git *g = co_xcalloc(1, sizeof(*g));
    g->dir = co_xstrdup(cache_dir);
    g->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
    g->cancel = opts ? opts->cancel : NULL;
    g->file_urls = opts && opts->test_only_file_urls;
    *out = g;
    return 0;
}

void co_git_free(co_git *g)
{
    if (g) {
        free(g->dir);
        free(g);
    }
}

void co_git_resolved_dispose(co_git_resolved *r)
{
    if (r) {
        free(r->commit);
        free(r->refname);
        free(r->revision);
        r->commit = r->refname = r->revision = NULL;
    }
}

/* ---- resolve ----------------------------------------------------------------------------- */

/* The oid a listed reference stands for, peeled ("<name>^{}") when advertised. */
static const git_oid *find_ref(const git_remote_head **heads, size_t n, const char *name)
{
    size_t len = strlen(name);
    const git_oid *direct = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *h = heads[i]->name;
        if (strncmp(h, name, len) != 0) {
            continue;
        }
        if (h[len] == '\0') {
            direct = &heads[i]->oid;
        } else if (strcmp(h + len, "^{}") == 0) {
            return &heads[i]->oid;
        }
    }
    return direct;
}

/* Picks the highest tag matching the constraint; @p tag_out gets its name. */
static int pick_semver(const git_remote_head **heads, size_t n, const char *range, char **tag_out)
{
    co_semver_constraints *c = NULL;
    if (co_semver_constraints_parse(&c, range) < 0) {
        return co_error_wrap("git ref.semver");
    }
    co_semver best = {0};
    char *best_tag = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *h = heads[i]->name;
        if (strncmp(h, "refs/tags/", 10) != 0 || strstr(h, "^{}")) {
            continue;
        }
        const char *tag = h + 10;
        co_semver strict = {0}, v = {0};
        if (co_semver_parse_strict(&strict, tag[0] == 'v' ? tag + 1 : tag) < 0) {
            continue;
        }
        co_semver_dispose(&strict);
        if (co_semver_parse(&v, tag) < 0) {
            continue;
        }
        if (co_semver_constraints_check(c, &v)) {
            int cmp = best_tag ? co_semver_compare(&v, &best) : 1;
            if (cmp > 0 || (cmp == 0 && strcmp(tag, best_tag) > 0)) {
                co_semver_dispose(&best);
                free(best_tag);
                best = v;
                best_tag = co_xstrdup(tag);
                continue;
            }
        }
        co_semver_dispose(&v);
    }
    co_error_clear();
    co_semver_constraints_free(c);
    co_semver_dispose(&best);
    if (!best_tag) {
        return co_error_set(CO_ENOTFOUND, "no match found for semver: %s", range);
    }
    *tag_out = best_tag;
    return 0;
}

int co_git_resolve(co_git *g,
                   const char *url,
                   const co_git_ref *ref,
                   const co_git_auth *auth,
                   co_git_resolved *out)
{
    url_kind kind = URL_HTTP;
    int rc = validate(url, ref, g->file_urls, &kind);
    if (rc < 0 || (rc = check_proxied_host(url, kind)) < 0) {
        return rc;
    }
    cb_ctx c;
    ctx_init(&c, g, url, auth);
    git_remote *remote = NULL;
    git_remote_connect_options co;
    git_remote_connect_options_init(&co, GIT_REMOTE_CONNECT_OPTIONS_VERSION);
    callbacks_init(&co.callbacks, &c);
    co.proxy_opts.type = GIT_PROXY_AUTO;
    co.follow_redirects = REDIRECTS;
    char *hdr = NULL;
    headers_init(&co.custom_headers, &hdr, auth);
    c.preemptive = hdr != NULL;
    char *refname = NULL, *tag = NULL;
    const git_oid *oid = NULL;
    git_oid commit_oid;
    const git_remote_head **heads = NULL;
    size_t nheads = 0;
    char *safe = co_git_redact_url(url);
    int grc = git_remote_create_detached(&remote, url);
    if (grc < 0) {
        rc = git_failure(grc, &c, "opening git repository", url);
        goto done;
    }
    grc = git_remote_connect_ext(remote, GIT_DIRECTION_FETCH, &co);
    if (grc < 0) {
        rc = git_failure(grc, &c, "listing git repository", url);
        goto done;
    }
    if ((grc = git_remote_ls(&heads, &nheads, remote)) < 0) {
        rc = git_failure(grc, &c, "listing git repository", url);
        goto done;
    }
    if (nheads > CO_MAX_GIT_REFS) {
        rc = co_error_set(CO_ETOOBIG, "git repository %s advertises more than %d references", safe,
                          CO_MAX_GIT_REFS);
        goto done;
    }
    if (set(ref->commit)) {
        git_oid_fromstr(&commit_oid, ref->commit);
        oid = &commit_oid;
        refname = set(ref->branch) ? co_xasprintf("refs/heads/%s", ref->branch) : NULL;
    } else if (set(ref->semver)) {
        if ((rc = pick_semver(heads, nheads, ref->semver, &tag)) < 0) {
            goto done;
        }
        refname = co_xasprintf("refs/tags/%s", tag);
        oid = find_ref(heads, nheads, refname);
    } else if (set(ref->tag)) {
        refname = co_xasprintf("refs/tags/%s", ref->tag);
        oid = find_ref(heads, nheads, refname);
        if (!oid) {
            rc = co_error_set(CO_ENOTFOUND, "tag '%s' not found in git repository %s", ref->tag,
                              safe);
            goto done;
        }
    } else {
        const char *branch = set(ref->branch) ? ref->branch : DEFAULT_BRANCH;
        refname = co_xasprintf("refs/heads/%s", branch);
        oid = find_ref(heads, nheads, refname);
        if (!oid) {
            rc = co_error_set(CO_ENOTFOUND, "branch '%s' not found in git repository %s", branch,
                              safe);
            goto done;
        }
    }
    char hex[GIT_OID_HEXSZ + 1];
    git_oid_tostr(hex, sizeof(hex), oid);
    out->commit = co_xstrdup(hex);
    out->refname = refname;
    co_git_revision(&out->revision, refname, hex);
    refname = NULL;
    rc = 0;
done:
    git_remote_free(remote);
    headers_dispose(&hdr);
    free(c.kh_name);
    free(refname);
    free(tag);
    free(safe);
    return rc;
}

/* ---- checkout ---------------------------------------------------------------------------- */

static char *repo_path(const co_git *g, const char *url)
{
    char *safe = co_git_redact_url(url);
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, safe, strlen(safe));
    free(safe);
    return co_xasprintf("%s/%s.git", g->dir, hex);
}

static int lock_repo(const char *path)
{
    char *lock = co_xasprintf("%s.lock", path);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    int rc = fd;
    if (fd < 0) {
        rc = co_error_set_os(CO_ERROR, "opening %s", lock);
    } else if (flock(fd, LOCK_EX) < 0) {
        rc = co_error_set_os(CO_ERROR, "locking %s", lock);
        close(fd);
    }
    free(lock);
    return rc;
}

static int open_cache_repo(git_repository **repo, const char *path)
{
    int grc = git_repository_open_bare(repo, path);
    if (grc == GIT_ENOTFOUND) {
        grc = git_repository_init(repo, path, 1);
    }
    if (grc < 0) {
        const git_error *e = git_error_last();
        return co_error_set(CO_ERROR, "opening the git cache %s: %s", path,
                            e ? e->message : "unknown error");
    }
    return 0;
}

static int has_commit(git_repository *repo, const git_oid *oid)
{
    git_commit *commit = NULL;
    if (git_commit_lookup(&commit, repo, oid) < 0) {
        git_error_clear();
        return 0;
    }
    git_commit_free(commit);
    return 1;
}

static int fetch_refspecs(git_repository *repo,
                          const char *url,
                          const co_git_auth *auth,
                          cb_ctx *c,
                          char **specs,
                          size_t nspecs)
{
    git_remote *remote = NULL;
    git_fetch_options fo = GIT_FETCH_OPTIONS_INIT;
    callbacks_init(&fo.callbacks, c);
    fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
    fo.prune = GIT_FETCH_NO_PRUNE;
    fo.update_fetchhead = 0;
    fo.proxy_opts.type = GIT_PROXY_AUTO;
    fo.follow_redirects = REDIRECTS;
    char *hdr = NULL;
    headers_init(&fo.custom_headers, &hdr, auth);
    c->preemptive = hdr != NULL;
    git_strarray refspecs = {specs, nspecs};
    int rc = 0;
    /* anonymous, and without url.*.insteadOf lookups: nothing from the cache repository's
     * config may redirect the URL (and libgit2 1.5 leaks in that lookup) */
    git_remote_create_options ro = GIT_REMOTE_CREATE_OPTIONS_INIT;
    ro.repository = repo;
    ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
    int grc = git_remote_create_with_opts(&remote, url, &ro);
    if (grc == 0) {
        grc = git_remote_fetch(remote, &refspecs, &fo, NULL);
    }
    if (grc < 0) {
        rc = git_failure(grc, c, "fetching", url);
    }
    git_remote_free(remote);
    headers_dispose(&hdr);
    return rc;
}

/* Walks @p tree into @p w below @p prefix. */
static int write_tree(git_repository *repo,
                      const git_tree *tree,
                      co_buf *prefix,
                      co_archive__writer *w,
                      int depth)
{
    if (depth > CO_MAX_EXTRACT_DEPTH) {
        return co_error_set(CO_EINVALID, "git tree deeper than %d directories",
                            CO_MAX_EXTRACT_DEPTH);
    }
    size_t n = git_tree_entrycount(tree);
    size_t keep = prefix->len;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const git_tree_entry *e = git_tree_entry_byindex(tree, i);
        const char *name = git_tree_entry_name(e);
        co_buf_truncate(prefix, keep);
        if ((prefix->len && co_buf_putc(prefix, '/') < 0) || co_buf_puts(prefix, name) < 0) {
            return co_error_set(CO_EINVALID, "git tree path longer than %d bytes",
                                CO_MAX_EXTRACT_PATH);
        }
        const char *path = prefix->ptr;
        if ((rc = co_archive__count_entry(w)) < 0) {
            return rc;
        }
        git_filemode_t mode = git_tree_entry_filemode(e);
        if (mode == GIT_FILEMODE_TREE) {
            git_tree *sub = NULL;
            if (git_tree_lookup(&sub, repo, git_tree_entry_id(e)) < 0) {
                return co_error_set(CO_ERROR, "git tree %s: missing object", path);
            }
            rc = co_archive__mkdir(w, path);
            if (rc == 0) {
                rc = write_tree(repo, sub, prefix, w, depth + 1);
            }
            git_tree_free(sub);
        } else if (mode == GIT_FILEMODE_COMMIT) {
            rc = co_archive__mkdir(w, path); /* a submodule: left empty, as git does */
        } else if (mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE ||
                   mode == GIT_FILEMODE_LINK) {
            git_blob *blob = NULL;
            if (git_blob_lookup(&blob, repo, git_tree_entry_id(e)) < 0) {
                return co_error_set(CO_ERROR, "git tree %s: missing object", path);
            }
            const void *data = git_blob_rawcontent(blob);
            git_object_size_t size = git_blob_rawsize(blob);
            if (mode == GIT_FILEMODE_LINK) {
                if (size > CO_MAX_EXTRACT_PATH || memchr(data, '\0', (size_t)size)) {
                    rc = co_error_set(CO_EINVALID, "entry %s: invalid symlink target", path);
                } else {
                    char *target = co_xmemdup(data, (size_t)size);
                    rc = co_archive__symlink(w, path, target);
                    free(target);
                }
            } else {
                rc = co_archive__file_begin(w, path, mode == GIT_FILEMODE_BLOB_EXECUTABLE);
                if (rc == 0) {
                    rc = co_archive__write(w, data, (size_t)size);
                    int rc2 = co_archive__file_end(w);
                    rc = rc < 0 ? rc : rc2;
                }
            }
            git_blob_free(blob);
        } else {
            rc = co_error_set(CO_EINVALID, "entry %s: unsupported git file mode 0%o", path,
                              (unsigned)mode);
        }
    }
    co_buf_truncate(prefix, keep);
    return rc;
}

int co_git_checkout(co_git *g,
                    const char *url,
                    const co_git_auth *auth,
                    const co_git_resolved *res,
                    const char *dest,
                    const co_archive_limits *limits,
                    char **digest,
                    co_archive_stats *stats)
{
    url_kind kind = URL_HTTP;
    int rc = ensure_git();
    if (rc < 0 || (rc = classify_url(url, &kind, g->file_urls)) < 0 ||
        (rc = check_proxied_host(url, kind)) < 0) {
        return rc;
    }
    git_oid oid;
    if (!is_hex40(res->commit) || git_oid_fromstr(&oid, res->commit) < 0) {
        return co_error_set(CO_EINVALID, "git commit '%.64s' is not a full hex id", res->commit);
    }
    char *path = repo_path(g, url);
    char *safe = co_git_redact_url(url);
    cb_ctx c;
    ctx_init(&c, g, url, auth);
    git_repository *repo = NULL;
    git_commit *commit = NULL;
    git_tree *tree = NULL;
    co_archive__writer *w = NULL;
    co_buf prefix = CO_BUF_INIT(CO_MAX_EXTRACT_PATH);
    int lockfd = lock_repo(path);
    if (lockfd < 0) {
        rc = lockfd;
        goto done;
    }
    if ((rc = open_cache_repo(&repo, path)) < 0) {
        goto done;
    }
    if (!has_commit(repo, &oid)) {
        if (res->refname) {
            char *spec = co_xasprintf("+%s:%s", res->refname, res->refname);
            rc = fetch_refspecs(repo, url, auth, &c, &spec, 1);
            free(spec);
        } else {
            char *specs[] = {co_xstrdup("+refs/heads/*:refs/heads/*"),
                             co_xstrdup("+refs/tags/*:refs/tags/*")};
            rc = fetch_refspecs(repo, url, auth, &c, specs, 2);
            free(specs[0]);
            free(specs[1]);
        }
        if (rc < 0) {
            goto done;
        }
        if (!has_commit(repo, &oid)) {
            /* not reachable from what was fetched: ask for the id itself */
            char *spec = co_xstrdup(res->commit);
            rc = fetch_refspecs(repo, url, auth, &c, &spec, 1);
            free(spec);
            if (rc < 0 || !has_commit(repo, &oid)) {
                rc = co_error_set(CO_ENOTFOUND, "commit %s not found in git repository %s",
                                  res->commit, safe);
                goto done;
            }
        }
    }
    if (git_commit_lookup(&commit, repo, &oid) < 0 || git_commit_tree(&tree, commit) < 0) {
        rc = git_failure(-1, NULL, "reading commit of", url);
        goto done;
    }
    if ((rc = co_archive__writer_new(&w, dest, limits, CO_ARCHIVE__DIGEST)) < 0) {
        goto done;
    }
    if ((rc = co_buf_puts(&prefix, "")) < 0 || (rc = write_tree(repo, tree, &prefix, w, 0)) < 0) {
        goto done;
    }
    char *d = NULL;
    if ((rc = co_archive__commit(w, &d)) < 0) {
        goto done;
    }
    if (stats) {
        *stats = *co_archive__stats(w);
    }
    *digest = d;
    rc = 0;
done:
    co_buf_dispose(&prefix);
    co_archive__writer_free(w);
    git_tree_free(tree);
    git_commit_free(commit);
    git_repository_free(repo);
    if (lockfd >= 0) {
        close(lockfd);
    }
    free(c.kh_name);
    free(path);
    free(safe);
    return rc;
}
