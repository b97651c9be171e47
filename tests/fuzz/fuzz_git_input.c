/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the git inputs parsed without network access: repository URLs and
 * references (co_git_validate()), URL redaction, and known_hosts data from a credentials Secret
 * checked against a host key (co_git_known_hosts_check()).
 *
 * Input layout: lines; the first is the URL, the second the key blob, the next four the branch,
 * tag, semver and commit (an empty line: unset), the rest is the known_hosts text.
 * Invariants beyond "no crash, no leak, no hang": redaction replaces exactly the password of the
 * user-info and nothing else; the host-key check returns 0 or CO_EAUTH with a message; a
 * key listed for a literal host name on its own line is accepted for that host.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "co/util/error.h"
#include "co/source/git.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next line of [*p, end) as a new string; advances *p. */
static char *next_line(const char **p, const char *end)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *stop = nl ? nl : end;
    size_t n = (size_t)(stop - *p);
    char *s = malloc(n + 1);
    memcpy(s, *p, n);
    s[n] = '\0';
    *p = nl ? nl + 1 : end;
    return s;
}

static const char *opt(const char *s)
{
    return *s ? s : NULL;
}

/*
 * What redaction must give for a URL with a password in its user-info (the authority runs to
 * the first '/', '?' or '#'; the user-info to the authority's last '@'; the password from the
 * user-info's first ':'), or NULL when the URL carries none.
 */
static char *expected_redaction(const char *url)
{
    const char *scheme = strstr(url, "://");
    if (!scheme) {
        return NULL;
    }
    const char *host = scheme + 3;
    const char *stop = host + strcspn(host, "/?#");
    const char *at = NULL;
    for (const char *q = host; q < stop; q++) {
        if (*q == '@') {
            at = q;
        }
    }
    const char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
    if (!colon) {
        return NULL;
    }
    size_t head = (size_t)(colon - url) + 1;
    char *out = malloc(head + strlen("redacted") + strlen(at) + 1);
    memcpy(out, url, head);
    strcpy(out + head, "redacted");
    strcat(out, at);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    if (memchr(data, '\0', size)) {
        return 0; /* Secrets and specs are strings */
    }
    char *url = next_line(&p, end);
    char *key = next_line(&p, end);
    char *fields[4];
    for (size_t i = 0; i < 4; i++) {
        fields[i] = next_line(&p, end);
    }
    size_t khlen = (size_t)(end - p);
    char *kh = malloc(khlen + 1);
    memcpy(kh, p, khlen);
    kh[khlen] = '\0';

    co_git_ref ref = {opt(fields[0]), opt(fields[1]), opt(fields[2]), opt(fields[3])};
    (void)co_git_validate(url, &ref);

    char *redacted = co_git_redact_url(url);
    char *want = expected_redaction(url);
    if (!redacted || strcmp(redacted, want ? want : url) != 0) {
        abort();
    }
    free(want);
    free(redacted);

    int rc = co_git_known_hosts_check(kh, url, key, strlen(key));
    if (rc != 0 && (rc != CO_EAUTH || !co_error_last() || !*co_error_last())) {
        abort();
    }

    /* a literal entry for the URL's host with this key must be accepted */
    if (strncmp(url, "ssh://", 6) == 0 && *key) {
        const char *host = url + 6;
        size_t hl = strcspn(host, "/:@[]*?!,|# \t\r\n");
        if (hl > 0 && host[hl] == '/' && hl < 200 && strlen(key) < 1000) {
            size_t klen = strlen(key);
            char *b64 = malloc(klen / 3 * 4 + 8);
            EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)key, (int)klen);
            size_t len = hl + strlen(b64) + 32;
            char *line = malloc(len);
            memcpy(line, host, hl);
            line[hl] = '\0';
            strcat(line, " ssh-ed25519 ");
            strcat(line, b64);
            strcat(line, "\n");
            if (co_git_known_hosts_check(line, url, key, klen) != 0) {
                abort();
            }
            free(line);
            free(b64);
        }
    }
    free(kh);
    for (size_t i = 0; i < 4; i++) {
        free(fields[i]);
    }
    free(key);
    free(url);
    return 0;
}
