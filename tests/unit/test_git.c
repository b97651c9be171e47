/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Git sources against real repositories made with git, over file:// URLs (the handle allows them
 * with its test-only option): branch, tag, semver and commit references with Flux's revision
 * format, checkout contents and the canonical tree digest, new commits picked up, the cache,
 * hostile trees and clear errors; without the option, file:// URLs, local paths and other
 * transports refused before libgit2 sees them; the deny-list on the address connected to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "co/source/archive.h"
#include "co/source/git.h"
#include "co/util/net.h"
#include "tests/support/test_git_repo.h"
#include "tests/support/test_httpd.h"
#include "tests/support/test_support.h"

typedef struct fixture {
    char *dir;
    char *src;
    char *url;
    co_git *git;
    char *c1, *c2, *c3;
    int n; /* destinations handed out */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->dir = co_test_tmpdir();
    f->src = co_xasprintf("%s/src", f->dir);
    f->url = co_xasprintf("file://%s", f->src);
    tgr_init(f->src);
    tgr_write(f->src, "chart/Chart.yaml", "name: demo\nversion: 1.0.0\n");
    tgr_write(f->src, "run.sh", "#!/bin/sh\necho hi\n");
    tgr_chmod_x(f->src, "run.sh");
    tgr_symlink(f->src, "link.yaml", "chart/Chart.yaml");
    f->c1 = tgr_commit(f->src, "first");
    tgr_tag(f->src, "v1.0.0", 0);
    tgr_write(f->src, "chart/Chart.yaml", "name: demo\nversion: 1.2.0\n");
    f->c2 = tgr_commit(f->src, "second");
    tgr_tag(f->src, "v1.2.0", 1);
    tgr_tag(f->src, "not-a-version", 0);
    tgr_tag(f->src, "v2.0.0-rc.1", 0);
    tgr_tag(f->src, "1.1", 0); /* not strict semver: ignored by ranges */
    tgr_switch(f->src, "feature/x");
    tgr_write(f->src, "feature.txt", "x\n");
    f->c3 = tgr_commit(f->src, "feature");
    tgr_switch(f->src, "main");
    char *cache = co_xasprintf("%s/cache", f->dir);
    co_git_options o = {.timeout_ms = 60000, .test_only_file_urls = 1};
    assert_co_pass(co_git_new(&f->git, cache, &o));
    free(cache);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    co_net_deny_clear();
    co_git_free(f->git);
    co_test_rmtree(f->dir);
    free(f->dir);
    free(f->src);
    free(f->url);
    free(f->c1);
    free(f->c2);
    free(f->c3);
    free(f);
    return 0;
}

static char *next_dest(fixture *f)
{
    return co_xasprintf("%s/out%d", f->dir, ++f->n);
}

static void resolve_ok(fixture *f, co_git_ref ref, const char *commit, const char *revision)
{
    co_git_resolved r = {0};
    assert_co_pass(co_git_resolve(f->git, f->url, &ref, NULL, &r));
    assert_string_equal(r.commit, commit);
    assert_string_equal(r.revision, revision);
    co_git_resolved_dispose(&r);
    co_git_resolved_dispose(&r);
}

static void test_git__branch_refs(void **state)
{
    fixture *f = *state;
    char *want = co_xasprintf("main@sha1:%s", f->c2);
    resolve_ok(f, (co_git_ref){.branch = "main"}, f->c2, want);
    free(want);
    want = co_xasprintf("feature/x@sha1:%s", f->c3);
    resolve_ok(f, (co_git_ref){.branch = "feature/x"}, f->c3, want);
    free(want);
    co_git_resolved r = {0};
    assert_co_fail_with(CO_ENOTFOUND,
                        co_git_resolve(f->git, f->url, &(co_git_ref){.branch = "nope"}, NULL, &r));
    assert_contains(co_error_last(), "branch 'nope' not found in git repository file://");
    /* no ref at all means Flux's default branch, master */
    assert_co_fail_with(CO_ENOTFOUND, co_git_resolve(f->git, f->url, &(co_git_ref){0}, NULL, &r));
    assert_contains(co_error_last(), "branch 'master' not found");
}

static void test_git__tag_refs(void **state)
{
    fixture *f = *state;
    char *want = co_xasprintf("v1.0.0@sha1:%s", f->c1);
    resolve_ok(f, (co_git_ref){.tag = "v1.0.0"}, f->c1, want);
    free(want);
    /* an annotated tag resolves to its commit, not the tag object */
    want = co_xasprintf("v1.2.0@sha1:%s", f->c2);
    resolve_ok(f, (co_git_ref){.tag = "v1.2.0"}, f->c2, want);
    free(want);
    co_git_resolved r = {0};
    assert_co_fail_with(CO_ENOTFOUND,
                        co_git_resolve(f->git, f->url, &(co_git_ref){.tag = "v9"}, NULL, &r));
    assert_contains(co_error_last(), "tag 'v9' not found");
}

static void test_git__semver_refs(void **state)
{
    fixture *f = *state;
    char *v12 = co_xasprintf("v1.2.0@sha1:%s", f->c2);
    char *v10 = co_xasprintf("v1.0.0@sha1:%s", f->c1);
    char *rc1 = co_xasprintf("v2.0.0-rc.1@sha1:%s", f->c2);
    resolve_ok(f, (co_git_ref){.semver = ">=1.0.0 <2.0.0"}, f->c2, v12);
    resolve_ok(f, (co_git_ref){.semver = "^1.0"}, f->c2, v12);
    resolve_ok(f, (co_git_ref){.semver = "~1.0.0"}, f->c1, v10);
    resolve_ok(f, (co_git_ref){.semver = "*"}, f->c2, v12); /* prereleases need opting in */
    resolve_ok(f, (co_git_ref){.semver = ">=2.0.0-0"}, f->c2, rc1);
    co_git_resolved r = {0};
    assert_co_fail_with(CO_ENOTFOUND,
                        co_git_resolve(f->git, f->url, &(co_git_ref){.semver = "5.x"}, NULL, &r));
    assert_string_equal(co_error_last(), "no match found for semver: 5.x");
    assert_co_fail_with(CO_EINVALID,
                        co_git_resolve(f->git, f->url, &(co_git_ref){.semver = ">=x.y"}, NULL, &r));
    assert_contains(co_error_last(), "git ref.semver");
    free(v12);
    free(v10);
    free(rc1);
}

static void test_git__commit_refs(void **state)
{
    fixture *f = *state;
    char *want = co_xasprintf("sha1:%s", f->c1);
    resolve_ok(f, (co_git_ref){.commit = f->c1}, f->c1, want);
    free(want);
    want = co_xasprintf("main@sha1:%s", f->c1);
    resolve_ok(f, (co_git_ref){.commit = f->c1, .branch = "main"}, f->c1, want);
    free(want);
    /* commit wins over tag and branch, as in Flux */
    want = co_xasprintf("sha1:%s", f->c3);
    resolve_ok(f, (co_git_ref){.commit = f->c3, .tag = "v1.0.0"}, f->c3, want);
    free(want);
    co_git_resolved r = {0};
    assert_co_fail_with(
        CO_EINVALID, co_git_resolve(f->git, f->url, &(co_git_ref){.commit = "abc123"}, NULL, &r));
    assert_contains(co_error_last(), "git ref.commit");
}

static char *read_in(const char *dir, const char *rel)
{
    char *p = co_xasprintf("%s/%s", dir, rel);
    char *s = co_test_read_file(p, NULL);
    free(p);
    return s;
}

static char *checkout(fixture *f, const co_git_ref *ref, char **dest_out)
{
    co_git_resolved r = {0};
    assert_co_pass(co_git_resolve(f->git, f->url, ref, NULL, &r));
    char *dest = next_dest(f);
    char *digest = NULL;
    co_archive_stats st = {0};
    assert_co_pass(co_git_checkout(f->git, f->url, NULL, &r, dest, NULL, &digest, &st));
    assert_true(st.entries >= 1);
    co_git_resolved_dispose(&r);
    *dest_out = dest;
    return digest;
}

static void test_git__checkout_writes_the_tree(void **state)
{
    fixture *f = *state;
    char *dest = NULL;
    char *digest = checkout(f, &(co_git_ref){.tag = "v1.0.0"}, &dest);
    assert_int_equal(strlen(digest), 7 + 64);
    assert_int_equal(strncmp(digest, "sha256:", 7), 0);
    char *s = read_in(dest, "chart/Chart.yaml");
    assert_string_equal(s, "name: demo\nversion: 1.0.0\n");
    free(s);
    s = read_in(dest, "link.yaml");
    assert_string_equal(s, "name: demo\nversion: 1.0.0\n");
    free(s);
    struct stat st;
    char *p = co_xasprintf("%s/run.sh", dest);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0755);
    free(p);
    p = co_xasprintf("%s/link.yaml", dest);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    free(p);
    p = co_xasprintf("%s/.git", dest);
    assert_int_equal(lstat(p, &st), -1); /* a tree, not a work tree */
    free(p);
    free(dest);
    free(digest);
}

static void test_git__digest_follows_the_tree_only(void **state)
{
    fixture *f = *state;
    char *d1 = NULL, *d2 = NULL, *d3 = NULL, *dest = NULL;
    d1 = checkout(f, &(co_git_ref){.tag = "v1.2.0"}, &dest);
    free(dest);
    /* an empty commit: new commit, same tree, same digest */
    free(tgr_commit(f->src, "nothing changed"));
    d2 = checkout(f, &(co_git_ref){.branch = "main"}, &dest);
    free(dest);
    assert_string_equal(d1, d2);
    /* a mode change alone changes it */
    tgr_chmod_x(f->src, "chart/Chart.yaml");
    free(tgr_commit(f->src, "exec"));
    d3 = checkout(f, &(co_git_ref){.branch = "main"}, &dest);
    free(dest);
    assert_string_not_equal(d2, d3);
    free(d1);
    free(d2);
    free(d3);
}

static void hex256(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    unsigned n = 32;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    for (size_t i = 0; i < 32; i++) {
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    }
}

static void test_git__digest_matches_its_definition(void **state)
{
    fixture *f = *state;
    /* a fresh repository with one file, one executable and one symlink */
    char *src = co_xasprintf("%s/tiny", f->dir);
    tgr_init(src);
    tgr_write(src, "b/x.sh", "run");
    tgr_chmod_x(src, "b/x.sh");
    tgr_write(src, "a", "x");
    tgr_symlink(src, "c", "a");
    free(tgr_commit(src, "tiny"));
    char *url = co_xasprintf("file://%s", src);
    co_git_resolved r = {0};
    assert_co_pass(co_git_resolve(f->git, url, &(co_git_ref){.branch = "main"}, NULL, &r));
    char *dest = next_dest(f);
    char *digest = NULL;
    assert_co_pass(co_git_checkout(f->git, url, NULL, &r, dest, NULL, &digest, NULL));
    char ha[65], hx[65], hc[65], total[65];
    hex256("x", 1, ha);
    hex256("run", 3, hx);
    hex256("a", 1, hc);
    char buf[512];
    /* bytewise path order: "a" < "b/x.sh" < "c" */
    int n = snprintf(buf, sizeof(buf), "f %s a%cx %s b/x.sh%cl %s c%c", ha, 0, hx, 0, hc, 0);
    hex256(buf, (size_t)n, total);
    char *want = co_xasprintf("sha256:%s", total);
    assert_string_equal(digest, want);
    free(want);
    free(digest);
    free(dest);
    co_git_resolved_dispose(&r);
    free(url);
    free(src);
}

static void test_git__new_commit_is_picked_up(void **state)
{
    fixture *f = *state;
    char *dest = NULL;
    char *d1 = checkout(f, &(co_git_ref){.branch = "main"}, &dest);
    free(dest);
    tgr_write(f->src, "chart/Chart.yaml", "name: demo\nversion: 1.3.0\n");
    char *c4 = tgr_commit(f->src, "third");
    co_git_resolved r = {0};
    assert_co_pass(co_git_resolve(f->git, f->url, &(co_git_ref){.branch = "main"}, NULL, &r));
    assert_string_equal(r.commit, c4);
    dest = next_dest(f);
    char *d2 = NULL;
    assert_co_pass(co_git_checkout(f->git, f->url, NULL, &r, dest, NULL, &d2, NULL));
    char *s = read_in(dest, "chart/Chart.yaml");
    assert_string_equal(s, "name: demo\nversion: 1.3.0\n");
    assert_string_not_equal(d1, d2);
    free(s);
    free(dest);
    free(d1);
    free(d2);
    free(c4);
    co_git_resolved_dispose(&r);
}

static void test_git__cached_objects_serve_a_known_commit(void **state)
{
    fixture *f = *state;
    co_git_resolved r = {0};
    assert_co_pass(co_git_resolve(f->git, f->url, &(co_git_ref){.tag = "v1.0.0"}, NULL, &r));
    char *dest = next_dest(f), *digest = NULL;
    assert_co_pass(co_git_checkout(f->git, f->url, NULL, &r, dest, NULL, &digest, NULL));
    free(dest);
    free(digest);
    /* the source disappears; the cached repository still has the commit */
    co_test_rmtree(f->src);
    dest = next_dest(f);
    assert_co_pass(co_git_checkout(f->git, f->url, NULL, &r, dest, NULL, &digest, NULL));
    char *s = read_in(dest, "chart/Chart.yaml");
    assert_string_equal(s, "name: demo\nversion: 1.0.0\n");
    free(s);
    free(dest);
    free(digest);
    /* but resolving needs the remote */
    co_git_resolved r2 = {0};
    assert_int_not_equal(co_git_resolve(f->git, f->url, &(co_git_ref){.tag = "v1.0.0"}, NULL, &r2),
                         0);
    co_git_resolved_dispose(&r);
}

static void test_git__unknown_commit_is_not_found(void **state)
{
    fixture *f = *state;
    co_git_resolved r = {.commit = co_xstrdup("0123456789abcdef0123456789abcdef01234567")};
    char *dest = next_dest(f), *digest = NULL;
    assert_co_fail_with(CO_ENOTFOUND,
                        co_git_checkout(f->git, f->url, NULL, &r, dest, NULL, &digest, NULL));
    assert_contains(co_error_last(), "commit 0123456789abcdef0123456789abcdef01234567 not found");
    struct stat st;
    assert_int_equal(lstat(dest, &st), -1);
    free(dest);
    co_git_resolved_dispose(&r);
}

static void test_git__hostile_symlink_is_rejected(void **state)
{
    fixture *f = *state;
    tgr_symlink(f->src, "escape", "../../../../etc");
    free(tgr_commit(f->src, "evil"));
    co_git_resolved r = {0};
    assert_co_pass(co_git_resolve(f->git, f->url, &(co_git_ref){.branch = "main"}, NULL, &r));
    char *dest = next_dest(f), *digest = NULL;
    assert_co_fail_with(CO_EINVALID,
                        co_git_checkout(f->git, f->url, NULL, &r, dest, NULL, &digest, NULL));
    assert_contains(co_error_last(), "entry escape: symlink target '../../../../etc' points "
                                     "outside the archive");
    struct stat st;
    assert_int_equal(lstat(dest, &st), -1);
    free(dest);
    co_git_resolved_dispose(&r);
}

static void test_git__limits_apply(void **state)
{
    fixture *f = *state;
    co_git_resolved r = {0};
    assert_co_pass(co_git_resolve(f->git, f->url, &(co_git_ref){.branch = "main"}, NULL, &r));
    char *dest = next_dest(f), *digest = NULL;
    co_archive_limits lim = {.max_file = 8};
    assert_co_fail_with(CO_ETOOBIG,
                        co_git_checkout(f->git, f->url, NULL, &r, dest, &lim, &digest, NULL));
    assert_contains(co_error_last(), "file larger than the limit of 8 bytes");
    free(dest);
    co_git_resolved_dispose(&r);
}

static void test_git__bad_urls_and_missing_repositories(void **state)
{
    fixture *f = *state;
    co_git_resolved r = {0};
    co_git_ref main_ref = {.branch = "main"};
    assert_co_fail_with(CO_EINVALID, co_git_resolve(f->git, "ftp://x/y", &main_ref, NULL, &r));
    assert_contains(co_error_last(), "the scheme must be https, http or ssh");
    assert_co_fail_with(CO_EINVALID, co_git_resolve(f->git, "", &main_ref, NULL, &r));
    assert_co_fail_with(
        CO_EINVALID, co_git_validate("https://example.com/r.git", &(co_git_ref){.branch = "a..b"}));
    assert_contains(co_error_last(), "git ref.branch");
    char *missing = co_xasprintf("file://%s/nope", f->dir);
    assert_co_fail_with(CO_ENOTFOUND, co_git_resolve(f->git, missing, &main_ref, NULL, &r));
    free(missing);
}

static void test_git__revision_and_redaction_helpers(void **state)
{
    (void)state;
    char *s = NULL;
    co_git_revision(&s, "refs/heads/main", "abc");
    assert_string_equal(s, "main@sha1:abc");
    free(s);
    co_git_revision(&s, "refs/tags/release/1.0", "abc");
    assert_string_equal(s, "release/1.0@sha1:abc");
    free(s);
    co_git_revision(&s, NULL, "abc");
    assert_string_equal(s, "sha1:abc");
    free(s);
    s = co_git_redact_url("https://user:s3cret@example.com/repo.git");
    assert_string_equal(s, "https://user:redacted@example.com/repo.git");
    free(s);
    s = co_git_redact_url("https://user:p@ss:w@rd@example.com/a@b");
    assert_string_equal(s, "https://user:redacted@example.com/a@b");
    free(s);
    s = co_git_redact_url("https://example.com/path:x@y");
    assert_string_equal(s, "https://example.com/path:x@y");
    free(s);
    s = co_git_redact_url("https://tok:secret@example.com?q=1");
    assert_string_equal(s, "https://tok:redacted@example.com?q=1");
    free(s);
    s = co_git_redact_url("ssh://git@example.com:2222/repo.git");
    assert_string_equal(s, "ssh://git@example.com:2222/repo.git");
    free(s);
}

/* base64 of @p len bytes at @p data (free with free()). */
static char *b64(const void *data, size_t len)
{
    char *out = calloc(1, len / 3 * 4 + 8);
    EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

/* A hashed known_hosts name "|1|salt|hash" for @p host, as `ssh-keygen -H` writes it. */
static char *hashed_host(const char *host)
{
    static const unsigned char salt[20] = "0123456789abcdefghij";
    unsigned char mac[20];
    unsigned maclen = sizeof(mac);
    HMAC(EVP_sha1(), salt, sizeof(salt), (const unsigned char *)host, strlen(host), mac, &maclen);
    char *s = b64(salt, sizeof(salt)), *h = b64(mac, maclen);
    char *out = co_xasprintf("|1|%s|%s", s, h);
    free(s);
    free(h);
    return out;
}

static void kh_ok(const char *kh, const char *url, const char *key)
{
    if (co_git_known_hosts_check(kh, url, key, strlen(key)) != 0) {
        fail_msg("known_hosts refused %s: %s", url, co_error_last());
    }
}

static void kh_fails(const char *kh, const char *url, const char *key, const char *needle)
{
    assert_co_fail_with(CO_EAUTH, co_git_known_hosts_check(kh, url, key, strlen(key)));
    assert_contains(co_error_last(), needle);
}

static void test_git__known_hosts_rules(void **state)
{
    (void)state;
    const char *k1 = "host-key-one", *k2 = "host-key-two";
    char *b1 = b64(k1, strlen(k1)), *b2 = b64(k2, strlen(k2));
    char *hashed = hashed_host("[hashed.example]:2222");
    char *kh = co_xasprintf("# a comment line\n"
                            "\n"
                            "git.example,10.0.0.1 ssh-ed25519 %s comment\n"
                            "[git.example]:2222 ssh-ed25519 %s\n"
                            "*.wild.example,!bad.wild.example ssh-ed25519 %s\n"
                            "%s ssh-ed25519 %s\n"
                            "@cert-authority *.example ssh-ed25519 %s\n"
                            "@revoked old.example ssh-ed25519 %s\n"
                            "old.example ssh-ed25519 %s\n",
                            b1, b2, b1, hashed, b1, b2, b1, b1);
    kh_ok(kh, "ssh://git@git.example/repo.git", k1);
    kh_ok(kh, "ssh://git@git.example:22/repo.git", k1);
    kh_ok(kh, "git@git.example:team/repo.git", k1);
    kh_ok(kh, "ssh://GIT.EXAMPLE/repo.git", k1); /* host names match case-insensitively */
    kh_ok(kh, "ssh://git@git.example:2222/repo.git", k2);
    kh_ok(kh, "ssh://a.wild.example/r", k1);
    kh_ok(kh, "ssh://x@[hashed.example]:2222/r", k1);
    kh_fails(kh, "ssh://git@git.example/repo.git", k2, "does not match known_hosts");
    kh_fails(kh, "ssh://git@git.example:2222/repo.git", k1, "does not match known_hosts");
    kh_fails(kh, "ssh://bad.wild.example/r", k1, "is not in known_hosts");
    kh_fails(kh, "ssh://hashed.example/r", k1, "is not in known_hosts"); /* port 22 differs */
    kh_fails(kh, "ssh://other.example/r", k2, "is not in known_hosts");  /* not a CA match */
    /* a host pattern too long to hold is never half-matched */
    char *lng = co_xasprintf("git.example,%03000d ssh-ed25519 %s\n", 0, b1);
    kh_fails(lng, "ssh://git.example/r", k1, "is not in known_hosts");
    free(lng);
    kh_fails(kh, "ssh://old.example/r", k1, "the host key of old.example is revoked");
    kh_fails(NULL, "ssh://git.example/r", k1, "no known_hosts were given");
    kh_fails("", "ssh://git.example/r", k1, "no known_hosts were given");
    kh_fails("git.example ssh-ed25519 !!!notbase64\n", "ssh://git.example/r", k1, "does not match");
    /* star-heavy patterns take linear time per line, not exponential */
    char stars[2000];
    memset(stars, '*', sizeof(stars) - 2);
    stars[sizeof(stars) - 2] = 'q';
    stars[sizeof(stars) - 1] = '\0';
    char *many = co_xasprintf("%s ssh-ed25519 %s\n%s ssh-ed25519 %s\n", stars, b1, stars, b1);
    kh_fails(many, "ssh://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/r",
             k1, "is not in known_hosts");
    stars[sizeof(stars) - 2] = 'a';
    free(many);
    many = co_xasprintf("%s ssh-ed25519 %s\n", stars, b1);
    kh_ok(many,
          "ssh://bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbba/r",
          k1);
    free(many);
    free(kh);
    free(hashed);
    free(b1);
    free(b2);
}

/* With the webhook bypassed, a file:// URL read another tenant's cached repository. */
static void test_git__local_urls_are_refused(void **state)
{
    fixture *f = *state;
    char *cache = co_xasprintf("%s/cache2", f->dir);
    co_git *g = NULL;
    co_git_options o = {.timeout_ms = 60000};
    assert_co_pass(co_git_new(&g, cache, &o));
    char *bare = co_xasprintf("%s/cache/x.git", f->dir); /* what a cache entry looks like */
    const char *urls[] = {
        f->url,          "FILE:///etc", "git://example.com/r.git", "ssh+git://h/r",
        "git+ssh://h/r", f->src,        "relative/path/repo",      bare};
    co_git_ref main_ref = {.branch = "main"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(urls); i++) {
        co_git_resolved r = {0};
        assert_co_fail_with(CO_EINVALID, co_git_resolve(g, urls[i], &main_ref, NULL, &r));
        assert_contains(co_error_last(), "(spec.sourceRef.git.url): the scheme must be https, "
                                         "http or ssh, or user@host:path; file:// URLs and "
                                         "local paths are not allowed");
        assert_co_fail_with(CO_EINVALID, co_git_validate(urls[i], &main_ref));
        char refname[] = "refs/heads/main";
        co_git_resolved fake = {.commit = f->c1, .refname = refname};
        char *dest = next_dest(f), *digest = NULL;
        assert_co_fail_with(CO_EINVALID,
                            co_git_checkout(g, urls[i], NULL, &fake, dest, NULL, &digest, NULL));
        assert_int_not_equal(access(dest, F_OK), 0);
        free(dest);
    }
    /* the test-only option opens file:// to co_git_resolve() alone, never to validation */
    assert_co_fail_with(CO_EINVALID, co_git_validate(f->url, &main_ref));
    co_git_resolved r = {0};
    assert_co_pass(co_git_resolve(f->git, f->url, &main_ref, NULL, &r));
    co_git_resolved_dispose(&r);
    /* the transports that remain still validate */
    assert_co_pass(co_git_validate("https://example.com/r.git", &main_ref));
    assert_co_pass(co_git_validate("ssh://git@example.com:2222/r.git", &main_ref));
    assert_co_pass(co_git_validate("git@example.com:team/r.git", &main_ref));
    co_git_free(g);
    free(bare);
    free(cache);
}

/* libgit2's connections pass the deny-list on the address they are about to connect to. */
static void test_git__denied_address_is_never_contacted(void **state)
{
    fixture *f = *state;
    test_httpd *denied = test_httpd_start_at("127.0.0.2");
    const char *cidr = "127.0.0.0/30";
    assert_co_pass(co_net_deny_set(&cidr, 1));
    co_git_ref main_ref = {.branch = "main"};
    co_git_resolved r = {0};
    char *url = co_xasprintf("%s/repo.git", test_httpd_url(denied));
    assert_co_fail_with(CO_EAUTH, co_git_resolve(f->git, url, &main_ref, NULL, &r));
    assert_contains(co_error_last(),
                    "connection to 127.0.0.2 refused: address in denied range 127.0.0.0/30");
    assert_contains(co_error_last(), url);
    char refname[] = "refs/heads/main";
    co_git_resolved fake = {.commit = f->c1, .refname = refname};
    char *dest = next_dest(f), *digest = NULL;
    assert_co_fail_with(CO_EAUTH,
                        co_git_checkout(f->git, url, NULL, &fake, dest, NULL, &digest, NULL));
    assert_contains(co_error_last(), "address in denied range 127.0.0.0/30");
    /* ssh goes through the same stream */
    const char *port = strrchr(test_httpd_url(denied), ':') + 1;
    char *ssh_url = co_xasprintf("ssh://git@127.0.0.2:%s/r.git", port);
    assert_co_fail_with(CO_EAUTH, co_git_resolve(f->git, ssh_url, &main_ref, NULL, &r));
    assert_contains(co_error_last(), "connection to 127.0.0.2 refused");
    assert_int_equal(test_httpd_connections(denied), 0);
    /* through a proxy, the URL's host is checked by name before the proxy is asked */
    assert_co_pass(co_net_deny_set((const char *[]){"169.254.0.0/16"}, 1));
    setenv("http_proxy", "http://127.0.0.1:1", 1); // NOLINT(concurrency-mt-unsafe)
    assert_co_fail_with(
        CO_EAUTH, co_git_resolve(f->git, "http://169.254.169.254/r.git", &main_ref, NULL, &r));
    assert_contains(co_error_last(), "git repository http://169.254.169.254/r.git: connection to "
                                     "169.254.169.254 refused: address in denied range "
                                     "169.254.0.0/16");
    unsetenv("http_proxy"); // NOLINT(concurrency-mt-unsafe)
    /* once allowed, the server is reached (and answers 404: it is no git server) */
    co_net_deny_clear();
    assert_int_not_equal(co_git_resolve(f->git, url, &main_ref, NULL, &r), 0);
    assert_true(test_httpd_connections(denied) >= 1);
    test_httpd_stop(denied);
    free(ssh_url);
    free(dest);
    free(url);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_git__branch_refs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__tag_refs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__semver_refs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__commit_refs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__checkout_writes_the_tree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__digest_follows_the_tree_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__digest_matches_its_definition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__new_commit_is_picked_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__cached_objects_serve_a_known_commit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_git__unknown_commit_is_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__hostile_symlink_is_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__limits_apply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__bad_urls_and_missing_repositories, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_git__local_urls_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_git__denied_address_is_never_contacted, setup,
                                        teardown),
        cmocka_unit_test(test_git__revision_and_redaction_helpers),
        cmocka_unit_test(test_git__known_hosts_rules),
    };
    return cmocka_run_group_tests_name("git", tests, NULL, NULL);
}
