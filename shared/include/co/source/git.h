/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file git.h
 * Git sources with libgit2: resolving a reference on a remote, fetching into a cache of bare
 * repositories, and writing a commit's tree out as an artifact directory.
 *
 * URLs: `https://`, `http://`, `ssh://[user@]host[:port]/path` (and scp-style
 * `user@host:path`). URLs come from Components, so `file://`, `git://`, local paths and every
 * other transport libgit2 knows are refused (CO_EINVALID naming spec.sourceRef.git.url): its
 * local transport would read any repository on this machine, another tenant's cached one
 * included. Tests that need local repositories set co_git_options.test_only_file_urls.
 *
 * Credentials are passed in memory, never written to disk: username and password, or a bearer
 * token, for http(s), sent as an `Authorization` header with every request (libgit2 1.5 cannot
 * answer a challenge reliably, nor at all with a bearer token); a private key (with optional
 * passphrase) and known_hosts data for ssh, where the host key is always checked against
 * known_hosts (no known_hosts: the connection is refused). Redirects are followed within the
 * URL's host only (another path or port, or http to https): one to another host fails with
 * CO_EINVALID, so credentials never follow a redirect elsewhere.
 *
 * Every TCP connection libgit2 opens (http, https, ssh, and to a proxy) is checked against the
 * network deny-list (co/util/net.h) on the address it is about to connect to; a refused one fails
 * with CO_EAUTH ("connection to 169.254.169.254 refused: address in denied range
 * 169.254.0.0/16"). Through a proxy from the environment, the URL's host is checked by name
 * first, the proxy then resolving it again.
 *
 * Revisions follow Flux's format: `<branch>@sha1:<commit>` for a branch,
 * `<tag>@sha1:<commit>` for a tag or a semver range (the tag chosen), `sha1:<commit>` for a
 * commit alone, `<branch>@sha1:<commit>` for a commit with a branch.
 *
 * Semver ranges use Masterminds/semver v3 constraints (co/util/semver.h) over the tags that parse
 * as strict semantic versions after an optional leading `v` (Flux's rule); the highest match wins.
 * Flux breaks ties between equal versions (differing only in build metadata) by commit time; we
 * break them by tag name, so no fetch is needed to resolve.
 *
 * The canonical tree digest (the artifact digest of a git source) is `sha256:` + the sha256 of
 * the concatenation, over every file and symlink of the tree in bytewise order of their
 * slash-separated paths, of: a kind letter (`f` regular file, `x` executable file, `l`
 * symlink), a space, the 64 lowercase hex digits of the sha256 of the content (the link target
 * for a symlink), a space, the path, and a NUL byte. Directories contribute nothing and
 * submodules (gitlinks) become empty directories. It depends only on the tree's content, so
 * the same tree reached through different commits has the same digest.
 *
 * Every resolve contacts the remote (ls-remote), so a cached commit is only ever served to a
 * caller whose credentials the remote accepted.
 *
 * A co_git handle may be used by several threads; operations on the same repository URL are
 * serialised with a file lock, which also covers other processes sharing the cache directory.
 */
#ifndef CO_GIT_H
#define CO_GIT_H

#include <stddef.h>

#include "co/source/archive.h"
#include "co/util/common.h"

typedef struct co_git co_git;

/** Which commit to use. Precedence as in Flux: commit, then semver, then tag, then branch. */
typedef struct co_git_ref {
    const char *branch; /**< branch name (with a commit: the branch to fetch it from) */
    const char *tag;    /**< tag name */
    const char *semver; /**< semver constraint over the tags */
    const char *commit; /**< full 40-hex commit id */
} co_git_ref;

/** Credentials, all optional; the strings are borrowed for the duration of a call. */
typedef struct co_git_auth {
    const char *username;     /**< http(s) basic auth user */
    const char *password;     /**< http(s) basic auth password; ssh: the key's passphrase */
    const char *bearer_token; /**< http(s) bearer token */
    const char *identity;     /**< ssh private key (PEM or OpenSSH format) */
    const char *identity_pub; /**< ssh public key (optional) */
    const char *known_hosts;  /**< ssh known_hosts lines */
} co_git_auth;

/** Options; zero fields take the defaults in brackets. */
typedef struct co_git_options {
    long timeout_ms;            /**< an operation's deadline, checked on progress [10 min] */
    const volatile int *cancel; /**< when non-zero, operations stop with CO_ECANCELED */
    /** TESTS ONLY: accept `file://` URLs in co_git_resolve() and co_git_checkout() (never
     * co_git_validate()). A daemon must never set it: Component URLs would then read this
     * machine's files. */
    int test_only_file_urls;
} co_git_options;

/** A resolved reference. */
typedef struct co_git_resolved {
    char *commit;   /**< 40 lowercase hex digits */
    char *refname;  /**< "refs/heads/<b>", "refs/tags/<t>", or NULL for a bare commit */
    char *revision; /**< Flux-style revision (see above) */
} co_git_resolved;

/** Frees the strings of @p r and zeroes it. NULL is a no-op. */
void co_git_resolved_dispose(co_git_resolved *r);

/**
 * Creates a handle whose bare repositories live below @p cache_dir (created if missing).
 * @return 0 or CO_ERROR.
 */
CO_MUST_CHECK int co_git_new(co_git **out, const char *cache_dir, const co_git_options *opts);

/** Frees the handle. NULL is a no-op. */
void co_git_free(co_git *g);

/**
 * Checks @p url and @p ref without network access: the URL scheme (https, http, ssh, scp-style;
 * never file://), exactly what the ref selects, a well-formed commit id and semver constraint.
 * @return 0 or CO_EINVALID (naming the field).
 */
CO_MUST_CHECK int co_git_validate(const char *url, const co_git_ref *ref);

/**
 * Resolves @p ref on the remote (ls-remote; no objects are fetched).
 * @return 0; CO_EINVALID (bad URL or ref, a redirect to another host); CO_ENOTFOUND (no such
 *         branch or tag, no tag matches the range, or no such repository); CO_EAUTH
 *         (credentials refused or missing, host key unknown or different, an address the
 *         deny-list refuses); CO_EUNAVAILABLE (network); CO_ETIMEOUT; CO_ECANCELED; CO_ERROR.
 */
CO_MUST_CHECK int co_git_resolve(co_git *g,
                                 const char *url,
                                 const co_git_ref *ref,
                                 const co_git_auth *auth,
                                 co_git_resolved *out);

/**
 * Makes sure the commit @p res is in the cache repository of @p url (fetching incrementally
 * when it is not) and writes its tree to @p dest (which must not exist), confined and capped
 * like an archive extraction (co/source/archive.h).
 * @param[out] digest the canonical tree digest "sha256:<hex>" (free with free())
 * @param[out] stats what was written (may be NULL)
 * @return 0; the errors of co_git_resolve(); CO_ENOTFOUND when the remote does not have the
 *         commit; the extraction errors of co/source/archive.h.
 */
CO_MUST_CHECK int co_git_checkout(co_git *g,
                                  const char *url,
                                  const co_git_auth *auth,
                                  const co_git_resolved *res,
                                  const char *dest,
                                  const co_archive_limits *limits,
                                  char **digest,
                                  co_archive_stats *stats);

/**
 * The revision string Flux derives from a reference name and a commit:
 * "refs/heads/main" -> "main@sha1:<commit>", NULL -> "sha1:<commit>".
 * @param[out] out free with free()
 */
void co_git_revision(char **out, const char *refname, const char *commit);

/**
 * Checks the ssh host key @p key (the raw key blob, as in the base64 field of a known_hosts
 * line) of the host of the ssh URL @p url against @p known_hosts, as connections do: lines
 * `[@revoked] hosts keytype base64-key [comment]`, host lists with `*`/`?` patterns, `!`
 * negations and hashed `|1|salt|hash` names; `[host]:port` for ports other than 22;
 * `@cert-authority` lines are ignored.
 * @return 0 when a line for the host carries the key; CO_EAUTH otherwise (no known_hosts, host
 *         not listed, a different key, or a revoked key), the message saying which.
 */
CO_MUST_CHECK int
co_git_known_hosts_check(const char *known_hosts, const char *url, const void *key, size_t keylen);

/**
 * @p url with any password removed from its user-info part, for messages (free with free()).
 */
char *co_git_redact_url(const char *url);

#endif
