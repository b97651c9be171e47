/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Source resolution and materialisation (source.h), tying together the Flux object rules, HTTP
 * repositories (fetch.c), git (git.c), extraction (archive.c) and the artifact cache
 * (srccache.c). Cache keys:
 * - Flux artifacts: the artifact digest (content-addressed; the download is verified);
 * - HTTP repositories: the artifact URL and the server's digest together, because that digest
 *   is whatever the server says and must not open another source's cache entry;
 * - git: the repository URL and the commit ("g-<url hash>-<commit>"); the tree digest is kept
 *   in the alias "d-<key>", written before the entry is published.
 */
#include "co/json/json.h"
#include "co/util/digest.h"
#include "co/source/source.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/source/archive.h"
#include "co/util/caps.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/source/srccache.h"
#include "co/util/strmap.h"
#include "co/util/thread.h"

#define FLUX_GROUP   "source.toolkit.fluxcd.io"
#define FLUX_V1      FLUX_GROUP "/v1"
#define FLUX_V1BETA2 FLUX_GROUP "/v1beta2"
/* disk blocks an extracted entry occupies at least, for the cache's size accounting */
#define ENTRY_OVERHEAD 4096

struct co_sources {
    co_srccache *cache;
    co_git *git;
    co_fetch_options fetch;
    co_source_get_fn get;
    void *get_ctx;
    co_archive_limits limits;
};

struct co_source_tree {
    co_srccache_entry *entry;
};

/* ---- JSON helpers ------------------------------------------------------------------------ */

static struct json_object *jget(const struct json_object *o, const char *key)
{
    struct json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v)) {
        return NULL;
    }
    return v;
}

static int64_t jint(const struct json_object *o, const char *key)
{
    struct json_object *v = jget(o, key);
    return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
}

static int nonempty(const char *s)
{
    return s && *s;
}

/* ---- sourceRef --------------------------------------------------------------------------- */

/* The field names of the kinds in v1alpha1, in co_source_kind order from 1. */
static const char *const variant_names[CO_SOURCE_KIND_COUNT - 1] = {
    "fluxGitRepository", "fluxOciRepository", "fluxBucket",
    "fluxHelmChart",     "httpRepository",    "git",
    "blueprint",
};

const char *co_source_kind_name(co_source_kind kind)
{
    if (kind <= CO_SOURCE_NONE || kind >= CO_SOURCE_KIND_COUNT) {
        return NULL;
    }
    return variant_names[kind - 1];
}

co_source_kind co_source_kind_parse(const char *s)
{
    for (size_t i = 0; s && i < CO_ARRAY_SIZE(variant_names); i++) {
        if (strcmp(variant_names[i], s) == 0) {
            return (co_source_kind)(i + 1);
        }
    }
    return CO_SOURCE_NONE;
}

const char *co_source_flux_kind(co_source_kind kind)
{
    switch (kind) {
    case CO_SOURCE_FLUX_GIT_REPOSITORY:
        return "GitRepository";
    case CO_SOURCE_FLUX_OCI_REPOSITORY:
        return "OCIRepository";
    case CO_SOURCE_FLUX_BUCKET:
        return "Bucket";
    case CO_SOURCE_FLUX_HELM_CHART:
        return "HelmChart";
    default:
        return NULL;
    }
}

static const char *flux_plural(co_source_kind kind)
{
    switch (kind) {
    case CO_SOURCE_FLUX_GIT_REPOSITORY:
        return "gitrepositories";
    case CO_SOURCE_FLUX_OCI_REPOSITORY:
        return "ocirepositories";
    case CO_SOURCE_FLUX_BUCKET:
        return "buckets";
    default:
        return "helmcharts";
    }
}

/* An optional string field: NULL when absent, CO_EINVALID when not a string. */
static int
opt_string(const struct json_object *o, const char *key, const char *where, const char **out)
{
    struct json_object *v = jget(o, key);
    *out = NULL;
    if (!v || json_object_is_type(v, json_type_null)) {
        return 0;
    }
    if (!json_object_is_type(v, json_type_string)) {
        return co_error_set(CO_EINVALID, "%s.%s: must be a string", where, key);
    }
    *out = json_object_get_string(v);
    if (strlen(*out) > CO_MAX_SOURCE_STRING) {
        return co_error_set(CO_EINVALID, "%s.%s: longer than %zu bytes", where, key,
                            CO_MAX_SOURCE_STRING);
    }
    return 0;
}

static int parse_git(co_source_spec *out, const struct json_object *g)
{
    int rc;
    if ((rc = opt_string(g, "url", "sourceRef.git", &out->url)) < 0) {
        return rc;
    }
    if (!nonempty(out->url)) {
        return co_error_set(CO_EINVALID, "sourceRef.git.url: required");
    }
    struct json_object *ref = jget(g, "ref");
    if (ref && !json_object_is_type(ref, json_type_object)) {
        return co_error_set(CO_EINVALID, "sourceRef.git.ref: must be an object");
    }
    if ((rc = opt_string(ref, "branch", "sourceRef.git.ref", &out->git.branch)) < 0 ||
        (rc = opt_string(ref, "tag", "sourceRef.git.ref", &out->git.tag)) < 0 ||
        (rc = opt_string(ref, "semver", "sourceRef.git.ref", &out->git.semver)) < 0 ||
        (rc = opt_string(ref, "commit", "sourceRef.git.ref", &out->git.commit)) < 0) {
        return rc;
    }
    int n = nonempty(out->git.tag) + nonempty(out->git.semver) + nonempty(out->git.commit) +
            (nonempty(out->git.branch) && !nonempty(out->git.commit));
    if (n > 1) {
        return co_error_set(CO_EINVALID, "sourceRef.git.ref: set one of branch, tag, semver or "
                                         "commit (a commit may name its branch)");
    }
    struct json_object *secret = jget(g, "secretRef");
    if (secret) {
        if ((rc = opt_string(secret, "name", "sourceRef.git.secretRef", &out->secret_name)) < 0) {
            return rc;
        }
        if (!nonempty(out->secret_name)) {
            return co_error_set(CO_EINVALID, "sourceRef.git.secretRef.name: required");
        }
    }
    const char *interval = NULL;
    if ((rc = opt_string(g, "interval", "sourceRef.git", &interval)) < 0) {
        return rc;
    }
    if (interval) {
        int64_t ns = 0;
        if (co_duration_parse(&ns, interval) < 0) {
            return co_error_set(CO_EINVALID, "sourceRef.git.interval: '%s' is not a duration",
                                interval);
        }
        if (ns < CO_SECOND || ns > 168 * CO_HOUR) {
            return co_error_set(
                CO_EINVALID, "sourceRef.git.interval: '%s' must be between 1s and 168h", interval);
        }
        out->interval_ms = (long)(ns / CO_MILLISECOND);
    }
    co_git_ref r = out->git;
    if (co_git_validate(out->url, &r) < 0) {
        return co_error_wrap("sourceRef.git");
    }
    return 0;
}

int co_source_spec_parse(co_source_spec *out, const struct json_object *source_ref)
{
    co_source_spec r;
    memset(&r, 0, sizeof(r));
    if (!source_ref || !json_object_is_type(source_ref, json_type_object)) {
        return co_error_set(CO_EINVALID, "sourceRef: must be an object");
    }
    int found = -1;
    for (size_t i = 0; i < CO_ARRAY_SIZE(variant_names); i++) {
        struct json_object *v = jget(source_ref, variant_names[i]);
        if (!v || json_object_is_type(v, json_type_null)) {
            continue;
        }
        if (found >= 0) {
            return co_error_set(CO_EINVALID,
                                "sourceRef: exactly one of fluxGitRepository, fluxOciRepository, "
                                "fluxBucket, fluxHelmChart, httpRepository, git or blueprint must "
                                "be set");
        }
        found = (int)i;
    }
    if (found < 0) {
        return co_error_set(CO_EINVALID,
                            "sourceRef: exactly one of fluxGitRepository, fluxOciRepository, "
                            "fluxBucket, fluxHelmChart, httpRepository, git or blueprint must "
                            "be set");
    }
    const struct json_object *v = jget(source_ref, variant_names[found]);
    char where[64];
    snprintf(where, sizeof(where), "sourceRef.%s", variant_names[found]);
    if (!json_object_is_type(v, json_type_object)) {
        return co_error_set(CO_EINVALID, "%s: must be an object", where);
    }
    r.kind = (co_source_kind)(found + 1);
    int rc;
    switch (r.kind) {
    case CO_SOURCE_HTTP_REPOSITORY:
        if ((rc = opt_string(v, "url", where, &r.url)) < 0 ||
            (rc = opt_string(v, "digestHeader", where, &r.digest_header)) < 0 ||
            (rc = opt_string(v, "revisionHeader", where, &r.revision_header)) < 0) {
            return rc;
        }
        if (!nonempty(r.url)) {
            return co_error_set(CO_EINVALID, "%s.url: required", where);
        }
        break;
    case CO_SOURCE_GIT:
        if ((rc = parse_git(&r, v)) < 0) {
            return rc;
        }
        break;
    default:
        if ((rc = opt_string(v, "namespace", where, &r.ns)) < 0 ||
            (rc = opt_string(v, "name", where, &r.name)) < 0) {
            return rc;
        }
        if (!nonempty(r.name)) {
            return co_error_set(CO_EINVALID, "%s.name: required", where);
        }
        if (r.ns && !*r.ns) {
            r.ns = NULL;
        }
        break;
    }
    *out = r;
    return 0;
}

char *co_source_index_key(const co_source_spec *ref, const char *component_ns)
{
    const char *kind = co_source_flux_kind(ref->kind);
    if (!kind) {
        return NULL;
    }
    return co_xasprintf("%s/%s/%s", kind, ref->ns ? ref->ns : component_ns, ref->name);
}

/* ---- digests ----------------------------------------------------------------------------- */

/* Go's JSON of a string field of the digest: a C string here, so it ends at its first NUL, and
 * an absent one is "" (Go's zero value). */
static int go_string(co_buf *out, const char *s)
{
    if (!s) {
        s = "";
    }
    return co_json_go_quote(out, s, strlen(s), 0);
}

static char *sha256_hex(const void *data, size_t len)
{
    char *out = co_xmalloc(CO_SHA256_HEX_LEN + 1);
    co_sha256_hex(out, data, len);
    return out;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Go's JSON of a map[string]string (keys in byte order), or null for a nil map. */
static int go_json_string_map(co_buf *out, const struct json_object *m)
{
    if (!m || !json_object_is_type(m, json_type_object)) {
        return co_buf_puts(out, "null") < 0 ? CO_ETOOBIG : 0;
    }
    size_t n = (size_t)json_object_object_length(m);
    const char **keys = co_xcalloc(n ? n : 1, sizeof(*keys));
    size_t i = 0;
    json_object_object_foreach ((struct json_object *)m, k, v) {
        (void)v;
        keys[i++] = k;
    }
    qsort(keys, i, sizeof(*keys), cmp_str);
    int rc = co_buf_putc(out, '{') < 0 ? CO_ETOOBIG : 0;
    for (size_t j = 0; j < i && rc == 0; j++) {
        struct json_object *jv = jget(m, keys[j]);
        /* a value is a Go string, NUL bytes and all (the API server stores "\u0000") */
        int str = jv && json_object_is_type(jv, json_type_string);
        const char *val = str ? json_object_get_string(jv) : "";
        size_t len = str ? (size_t)json_object_get_string_len(jv) : 0;
        if ((j && co_buf_putc(out, ',') < 0) || go_string(out, keys[j]) < 0 ||
            co_buf_putc(out, ':') < 0 || co_json_go_quote(out, val, len, 0) < 0) {
            rc = CO_ETOOBIG;
        }
    }
    if (rc == 0 && co_buf_putc(out, '}') < 0) {
        rc = CO_ETOOBIG;
    }
    free(keys);
    return rc;
}

int co_source_flux_digest(char **out,
                          const struct json_object *obj,
                          const char *url,
                          const char *digest,
                          const char *revision)
{
    const struct json_object *meta = jget(obj, "metadata");
    if (!meta) {
        return co_error_set(CO_EINVALID, "source object without metadata");
    }
    const char *uid = co_json_str(meta, "uid", NULL);
    co_buf b = CO_BUF_INIT(CO_MAX_DOCUMENT);
    int rc = 0;
    if (co_buf_putc(&b, '[') < 0 || go_string(&b, uid ? uid : "") < 0 ||
        co_buf_printf(&b, ",%lld,", (long long)jint(meta, "generation")) < 0 ||
        go_json_string_map(&b, jget(meta, "annotations")) < 0 || co_buf_putc(&b, ',') < 0 ||
        go_string(&b, url) < 0 || co_buf_putc(&b, ',') < 0 || go_string(&b, digest) < 0 ||
        co_buf_putc(&b, ',') < 0 || go_string(&b, revision) < 0 || co_buf_putc(&b, ']') < 0) {
        rc = co_error_set(CO_ETOOBIG, "source object too large for its digest");
    } else {
        *out = sha256_hex(b.ptr, b.len);
    }
    co_buf_dispose(&b);
    return rc;
}

void co_source_plain_digest(char **out, const char *url, const char *digest, const char *revision)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    CO_ASSERT(co_buf_putc(&b, '[') == 0 && go_string(&b, url) == 0 && co_buf_putc(&b, ',') == 0 &&
              go_string(&b, digest) == 0 && co_buf_putc(&b, ',') == 0 &&
              go_string(&b, revision) == 0 && co_buf_putc(&b, ']') == 0);
    *out = sha256_hex(b.ptr, b.len);
    co_buf_dispose(&b);
}

/* ---- handle ------------------------------------------------------------------------------ */

int co_sources_new(co_sources **out, const co_source_config *cfg)
{
    if (!cfg || !nonempty(cfg->cache_dir)) {
        return co_error_set(CO_EINVALID, "source cache directory not configured");
    }
    if (mkdir(cfg->cache_dir, 0755) < 0 && errno != EEXIST) {
        return co_error_set_os(CO_ERROR, "creating %s", cfg->cache_dir);
    }
    co_sources *s = co_xcalloc(1, sizeof(*s));
    char *artifacts = co_xasprintf("%s/artifacts", cfg->cache_dir);
    char *git = co_xasprintf("%s/git", cfg->cache_dir);
    int rc = co_srccache_open(&s->cache, artifacts, cfg->cache_max_bytes);
    if (rc == 0) {
        rc = co_git_new(&s->git, git, &cfg->git);
    }
    free(artifacts);
    free(git);
    if (rc < 0) {
        co_sources_free(s);
        return rc;
    }
    s->fetch = cfg->fetch;
    s->get = cfg->get;
    s->get_ctx = cfg->get_ctx;
    s->limits = cfg->limits;
    *out = s;
    return 0;
}

void co_sources_free(co_sources *s)
{
    if (s) {
        co_srccache_free(s->cache);
        co_git_free(s->git);
        free(s);
    }
}

void co_source_artifact_dispose(co_source_artifact *a)
{
    if (a) {
        free(a->url);
        free(a->digest);
        free(a->revision);
        free(a->source_digest);
        memset(a, 0, sizeof(*a));
    }
}

/* ---- Flux -------------------------------------------------------------------------------- */

/* The Ready test of the Go original: condition Ready, True, for the current generation. */
static int flux_ready(const struct json_object *obj)
{
    int64_t generation = jint(jget(obj, "metadata"), "generation");
    struct json_object *conds = jget(jget(obj, "status"), "conditions");
    if (!conds || !json_object_is_type(conds, json_type_array)) {
        return 0;
    }
    size_t n = json_object_array_length(conds);
    for (size_t i = 0; i < n; i++) {
        struct json_object *c = json_object_array_get_idx(conds, i);
        const char *type = co_json_str(c, "type", NULL);
        if (!type || strcmp(type, "Ready") != 0) {
            continue;
        }
        if (jint(c, "observedGeneration") != generation) {
            return 0;
        }
        const char *status = co_json_str(c, "status", NULL);
        return status && strcmp(status, "True") == 0;
    }
    return 0;
}

/*
 * The artifact digest; v1beta2 objects written by older source-controllers have only the
 * sha256 `checksum`, which names the same thing.
 */
static char *artifact_digest(const struct json_object *artifact)
{
    const char *digest = co_json_str(artifact, "digest", NULL);
    if (nonempty(digest)) {
        return co_xstrdup(digest);
    }
    const char *checksum = co_json_str(artifact, "checksum", NULL);
    if (checksum && strlen(checksum) == 64) {
        return co_xasprintf("sha256:%s", checksum);
    }
    return NULL;
}

bool co_source_flux_has_artifact(const struct json_object *obj,
                                 const char **digest,
                                 const char **revision)
{
    if (!flux_ready(obj)) {
        return false;
    }
    const struct json_object *a = jget(jget(obj, "status"), "artifact");
    const char *d = co_json_str(a, "digest", NULL);
    if (!nonempty(d)) {
        d = co_json_str(a, "checksum", NULL);
    }
    const char *r = co_json_str(a, "revision", NULL);
    if (!nonempty(d) || !nonempty(r)) {
        return false;
    }
    if (digest) {
        *digest = d;
    }
    if (revision) {
        *revision = r;
    }
    return true;
}

bool co_source_should_requeue(const struct json_object *source, const struct json_object *component)
{
    const char *digest = NULL, *revision = NULL;
    if (!co_source_flux_has_artifact(source, &digest, &revision)) {
        return false;
    }
    const struct json_object *status = jget(component, "status");
    const char *state = co_json_str(status, "state", NULL);
    int ready =
        jint(status, "observedGeneration") == jint(jget(component, "metadata"), "generation") &&
        state && strcmp(state, "Ready") == 0;
    const char *ld = co_json_str(status, "lastAttemptedDigest", NULL);
    const char *lr = co_json_str(status, "lastAttemptedRevision", NULL);
    /* the comparison uses the digest as the artifact reports it */
    const struct json_object *a = jget(jget(source, "status"), "artifact");
    char *full = artifact_digest(a);
    int same = ld && lr && full && strcmp(ld, full) == 0 && strcmp(lr, revision) == 0;
    free(full);
    return !(ready && same);
}

static int retriable(long *retry_after_ms, int code)
{
    *retry_after_ms = CO_SOURCE_RETRY_MS;
    return code;
}

static int resolve_flux(co_sources *s,
                        const co_source_spec *ref,
                        const char *component_ns,
                        co_source_artifact *out,
                        long *retry)
{
    const char *kind = co_source_flux_kind(ref->kind);
    const char *ns = ref->ns ? ref->ns : component_ns;
    struct json_object *obj = NULL;
    char *digest = NULL;
    int rc;
    if (!s->get) {
        return co_error_set(CO_ERROR, "no cluster access configured for %s sources", kind);
    }
    rc = s->get(s->get_ctx, FLUX_V1, kind, ns, ref->name, &obj);
    if (rc == CO_ENOMATCH) {
        rc = s->get(s->get_ctx, FLUX_V1BETA2, kind, ns, ref->name, &obj);
    }
    if (rc == CO_ENOMATCH) {
        co_error_set(CO_ENOMATCH,
                     "no matches for kind \"%s\" in version \"%s\" (are the Flux source "
                     "CRDs installed?)",
                     kind, FLUX_V1);
        return retriable(retry, CO_ENOMATCH);
    }
    if (rc == CO_ENOTFOUND) {
        co_error_set(CO_ENOTFOUND, "%s.%s \"%s\" not found", flux_plural(ref->kind), FLUX_GROUP,
                     ref->name);
        return retriable(retry, CO_ENOTFOUND);
    }
    if (rc < 0) {
        return co_error_wrap("getting %s %s/%s", kind, ns, ref->name);
    }
    if (!flux_ready(obj)) {
        rc = retriable(retry, co_error_set(CO_EUNAVAILABLE, "source not ready"));
        goto done;
    }
    const struct json_object *artifact = jget(jget(obj, "status"), "artifact");
    if (!artifact || !json_object_is_type(artifact, json_type_object)) {
        rc = retriable(retry, co_error_set(CO_EUNAVAILABLE, "missing artifact on ready source"));
        goto done;
    }
    const char *url = co_json_str(artifact, "url", NULL);
    const char *revision = co_json_str(artifact, "revision", NULL);
    digest = artifact_digest(artifact);
    if (!nonempty(url)) {
        rc = retriable(retry, co_error_set(CO_EUNAVAILABLE, "source not ready (missing URL)"));
        goto done;
    }
    if (!nonempty(digest)) {
        rc = retriable(retry, co_error_set(CO_EUNAVAILABLE, "source not ready (missing digest)"));
        goto done;
    }
    if (!nonempty(revision)) {
        rc = retriable(retry, co_error_set(CO_EUNAVAILABLE, "source not ready (missing revision)"));
        goto done;
    }
    char *sd = NULL;
    if ((rc = co_source_flux_digest(&sd, obj, url, digest, revision)) < 0) {
        goto done;
    }
    out->url = co_xstrdup(url);
    out->digest = digest;
    out->revision = co_xstrdup(revision);
    out->source_digest = sd;
    digest = NULL;
    rc = 0;
done:
    free(digest);
    json_object_put(obj);
    return rc;
}

/* ---- HTTP -------------------------------------------------------------------------------- */

static int resolve_http(co_sources *s, const co_source_spec *ref, co_source_artifact *out)
{
    co_fetch_head_result h = {0};
    int rc = co_fetch_head(ref->url, ref->digest_header, ref->revision_header, &s->fetch, &h);
    if (rc < 0) {
        return rc;
    }
    out->url = h.url;
    out->digest = h.digest;
    out->revision = h.revision;
    co_source_plain_digest(&out->source_digest, out->url, out->digest, out->revision);
    return 0;
}

/* ---- git --------------------------------------------------------------------------------- */

typedef struct git_secret {
    char *vals[6];
    size_t lens[6];
} git_secret;

static const char *const secret_keys[] = {"username", "password",     "bearerToken",
                                          "identity", "identity.pub", "known_hosts"};

static void git_secret_dispose(git_secret *g)
{
    for (size_t i = 0; i < CO_ARRAY_SIZE(g->vals); i++) {
        if (g->vals[i]) {
            co_free_secret(g->vals[i], g->lens[i]);
            g->vals[i] = NULL;
        }
    }
}

/* Reads the credentials Secret into @p sec and points @p auth at it. */
static int load_git_secret(co_sources *s,
                           const co_source_spec *ref,
                           const char *ns,
                           git_secret *sec,
                           co_git_auth *auth,
                           long *retry)
{
    memset(auth, 0, sizeof(*auth));
    memset(sec, 0, sizeof(*sec));
    if (!ref->secret_name) {
        return 0;
    }
    if (!s->get) {
        return co_error_set(CO_ERROR, "no cluster access configured to read secret %s",
                            ref->secret_name);
    }
    struct json_object *obj = NULL;
    int rc = s->get(s->get_ctx, "v1", "Secret", ns, ref->secret_name, &obj);
    if (rc == CO_ENOTFOUND) {
        co_error_set(CO_ENOTFOUND, "secrets \"%s\" not found", ref->secret_name);
        return retriable(retry, CO_ENOTFOUND);
    }
    if (rc < 0) {
        return co_error_wrap("getting secret %s/%s", ns, ref->secret_name);
    }
    const struct json_object *data = jget(obj, "data");
    for (size_t i = 0; i < CO_ARRAY_SIZE(secret_keys) && rc == 0; i++) {
        const char *b64 = co_json_str(data, secret_keys[i], NULL);
        if (!b64) {
            continue;
        }
        size_t len = strlen(b64);
        if (len > CO_MAX_GIT_CREDENTIAL * 4 / 3 + 4) {
            rc = co_error_set(CO_ETOOBIG, "secret %s: key %s larger than %zu bytes",
                              ref->secret_name, secret_keys[i], CO_MAX_GIT_CREDENTIAL);
            break;
        }
        unsigned char *raw = NULL;
        size_t rawlen = 0;
        if (co_base64_decode_alloc(&raw, &rawlen, b64, len, CO_BASE64_STD) < 0) {
            rc = co_error_set(CO_EINVALID, "secret %s: key %s is not valid base64",
                              ref->secret_name, secret_keys[i]);
            break;
        }
        sec->vals[i] = (char *)raw;
        sec->lens[i] = rawlen;
    }
    json_object_put(obj);
    if (rc < 0) {
        git_secret_dispose(sec);
        return rc;
    }
    auth->username = sec->vals[0];
    auth->password = sec->vals[1];
    auth->bearer_token = sec->vals[2];
    auth->identity = sec->vals[3];
    auth->identity_pub = sec->vals[4];
    auth->known_hosts = sec->vals[5];
    return 0;
}

static char *git_key(const char *url, const char *commit)
{
    char *safe = co_git_redact_url(url);
    char *h = sha256_hex(safe, strlen(safe));
    char *key = co_xasprintf("g-%.16s-%s", h, commit);
    free(h);
    free(safe);
    return key;
}

typedef struct git_fill {
    co_sources *s;
    const char *url;
    const co_git_auth *auth;
    const co_git_resolved *res;
    const char *key;
    char *digest;
} git_fill;

static int fill_git(void *ctx, const char *dir, uint64_t *bytes)
{
    git_fill *g = ctx;
    co_archive_stats st = {0};
    char *digest = NULL;
    int rc = co_git_checkout(g->s->git, g->url, g->auth, g->res, dir, &g->s->limits, &digest, &st);
    if (rc < 0) {
        return rc;
    }
    /* the digest is recorded before the entry is published (see the file comment) */
    char *dkey = NULL, *alias = co_xasprintf("d-%s", g->key);
    co_srccache_key(&dkey, digest);
    rc = co_srccache_alias_set(g->s->cache, alias, dkey);
    free(alias);
    free(dkey);
    if (rc < 0) {
        free(digest);
        return rc;
    }
    g->digest = digest;
    *bytes = st.bytes + st.entries * ENTRY_OVERHEAD;
    return 0;
}

/* The digest recorded for a published git entry. */
static int git_entry_digest(co_sources *s, const char *key, char **digest)
{
    char *alias = co_xasprintf("d-%s", key), *dkey = NULL;
    int rc = co_srccache_alias_get(s->cache, alias, &dkey);
    free(alias);
    if (rc < 0) {
        return co_error_set(CO_ERROR, "cache entry %s has no recorded digest", key);
    }
    if (strncmp(dkey, "sha256-", 7) != 0) {
        free(dkey);
        return co_error_set(CO_ERROR, "cache entry %s has a malformed digest", key);
    }
    *digest = co_xasprintf("sha256:%s", dkey + 7);
    free(dkey);
    return 0;
}

/* Holds the git entry for @p res, checking it out when missing. */
static int git_materialise(co_sources *s,
                           const char *url,
                           const co_git_auth *auth,
                           const co_git_resolved *res,
                           co_srccache_entry **entry,
                           char **digest,
                           int *filled)
{
    char *key = git_key(url, res->commit);
    git_fill g = {s, url, auth, res, key, NULL};
    int rc = co_srccache_get(s->cache, key, fill_git, &g, entry, filled);
    if (rc == 0 && digest) {
        if (g.digest) {
            *digest = g.digest;
            g.digest = NULL;
        } else if ((rc = git_entry_digest(s, key, digest)) < 0) {
            co_srccache_release(*entry);
            *entry = NULL;
        }
    }
    free(g.digest);
    free(key);
    return rc;
}

static int resolve_git(co_sources *s,
                       const co_source_spec *ref,
                       const char *component_ns,
                       co_source_artifact *out,
                       long *retry)
{
    git_secret sec;
    co_git_auth auth;
    co_git_resolved res = {0};
    co_srccache_entry *entry = NULL;
    char *digest = NULL;
    int rc = load_git_secret(s, ref, component_ns, &sec, &auth, retry);
    if (rc < 0) {
        return rc;
    }
    if ((rc = co_git_resolve(s->git, ref->url, &ref->git, &auth, &res)) < 0) {
        goto done;
    }
    if ((rc = git_materialise(s, ref->url, &auth, &res, &entry, &digest, NULL)) < 0) {
        goto done;
    }
    out->url = co_git_redact_url(ref->url);
    out->digest = digest;
    out->revision = res.revision;
    res.revision = NULL;
    co_source_plain_digest(&out->source_digest, out->url, out->digest, out->revision);
    rc = 0;
done:
    co_srccache_release(entry);
    co_git_resolved_dispose(&res);
    git_secret_dispose(&sec);
    return rc;
}

/* ---- resolve, pins ----------------------------------------------------------------------- */

int co_source_resolve(co_sources *s,
                      const co_source_spec *ref,
                      const char *component_ns,
                      co_source_artifact *out,
                      long *retry_after_ms)
{
    co_source_artifact a;
    memset(&a, 0, sizeof(a));
    *retry_after_ms = 0;
    int rc;
    switch (ref->kind) {
    case CO_SOURCE_HTTP_REPOSITORY:
        rc = resolve_http(s, ref, &a);
        break;
    case CO_SOURCE_GIT:
        rc = resolve_git(s, ref, component_ns, &a, retry_after_ms);
        break;
    case CO_SOURCE_BLUEPRINT:
        /* Blueprints live in the cluster and are resolved by the controller, which reads them
         * and writes their versions (docs/behaviour.md, "Blueprint sources"); this layer only
         * materialises their trees (co_source_materialise()) */
        rc = co_error_set(CO_EINVALID, "sourceRef.blueprint: blueprint sources are resolved "
                                       "by the controller, not by the source layer");
        break;
    default:
        rc = resolve_flux(s, ref, component_ns, &a, retry_after_ms);
        break;
    }
    if (rc < 0) {
        co_source_artifact_dispose(&a);
        return rc;
    }
    *out = a;
    return 0;
}

int co_source_check_pins(const co_source_artifact *a,
                         const char *spec_digest,
                         const char *spec_revision,
                         long *retry_after_ms)
{
    *retry_after_ms = 0;
    if (nonempty(spec_digest) && strcmp(spec_digest, a->digest) != 0) {
        co_error_set(CO_ECONFLICT, "source digest (%s) does not match specified digest (%s)",
                     a->digest, spec_digest);
        return retriable(retry_after_ms, CO_ECONFLICT);
    }
    if (nonempty(spec_revision) && strcmp(spec_revision, a->revision) != 0) {
        co_error_set(CO_ECONFLICT, "source revision (%s) does not match specified revision (%s)",
                     a->revision, spec_revision);
        return retriable(retry_after_ms, CO_ECONFLICT);
    }
    return 0;
}

/* ---- fetch ------------------------------------------------------------------------------- */

typedef struct download_fill {
    co_sources *s;
    const char *url;
    const char *verify; /* digest to verify against, or NULL */
} download_fill;

static int fill_download(void *ctx, const char *dir, uint64_t *bytes)
{
    download_fill *d = ctx;
    char *file = co_xasprintf("%s.download", dir);
    co_archive_stats st = {0};
    co_fetch_result fr = {0};
    int rc = co_fetch_download(d->url, d->verify, file, &d->s->fetch, &fr);
    if (rc == 0) {
        /* as the Go operator's downloads choose: Content-Type, then the URL's suffix */
        co_archive_format format = co_archive_format_for(fr.content_type, fr.url);
        /* A tar's compression is read from its content, not taken from the label: uploaders
         * that guess media types from file names, as Python's mimetypes does, store a .tar.gz
         * or .tar.bz2 as "application/x-tar" (the compression goes to a Content-Encoding that
         * is not undone here), and such artifacts were read before the label chose the
         * format. A declared zip or YAML file is read as nothing else. */
        co_archive_format read_as = format == CO_ARCHIVE_TAR || format == CO_ARCHIVE_TAR_GZ ||
                                            format == CO_ARCHIVE_TAR_BZ2 ||
                                            format == CO_ARCHIVE_TAR_ZST ||
                                            format == CO_ARCHIVE_TAR_XZ
                                        ? CO_ARCHIVE_TAR_ANY
                                        : format;
        rc = co_archive_extract_file(file, read_as, dir, &d->s->limits, CO_ARCHIVE_SYNC, &st);
        if (rc < 0) {
            co_error_wrap("extracting the artifact of %.300s as %s", d->url,
                          co_archive_format_name(format));
        }
    }
    co_fetch_result_dispose(&fr);
    unlink(file);
    free(file);
    if (rc == 0) {
        *bytes = st.bytes + st.entries * ENTRY_OVERHEAD;
    }
    return rc;
}

int co_source_fetch(co_sources *s,
                    const co_source_spec *ref,
                    const char *component_ns,
                    const co_source_artifact *a,
                    co_source_tree **out,
                    int *downloaded)
{
    co_srccache_entry *entry = NULL;
    int filled = 0;
    int rc;
    if (ref->kind == CO_SOURCE_GIT) {
        git_secret sec;
        co_git_auth auth;
        long retry = 0;
        const char *at = strrchr(a->revision, ':');
        co_git_resolved res = {0};
        if (!at || strlen(at + 1) != 40) {
            return co_error_set(CO_EINVALID, "git revision '%.100s' names no commit", a->revision);
        }
        if ((rc = load_git_secret(s, ref, component_ns, &sec, &auth, &retry)) < 0) {
            return rc;
        }
        res.commit = co_xstrdup(at + 1);
        if (ref->git.branch && !ref->git.commit) {
            res.refname = co_xasprintf("refs/heads/%s", ref->git.branch);
        } else if (ref->git.tag && !ref->git.commit) {
            res.refname = co_xasprintf("refs/tags/%s", ref->git.tag);
        }
        res.revision = co_xstrdup(a->revision);
        char *digest = NULL;
        rc = git_materialise(s, ref->url, &auth, &res, &entry, &digest, &filled);
        if (rc == 0 && (!digest || strcmp(digest, a->digest) != 0)) {
            rc = co_error_set(CO_EINVALID, "git tree digest %s does not match the artifact %s",
                              digest ? digest : "(none)", a->digest);
            co_srccache_release(entry);
            entry = NULL;
        }
        free(digest);
        co_git_resolved_dispose(&res);
        git_secret_dispose(&sec);
    } else {
        char *key = NULL;
        download_fill d = {s, a->url, NULL};
        if (ref->kind == CO_SOURCE_HTTP_REPOSITORY) {
            /* the server's digest keys the entry together with the URL; it is verified when it
             * has the form of a content digest */
            char *id = co_xasprintf("%s\n%s", a->url, a->digest);
            co_srccache_key(&key, id);
            free(id);
            d.verify = co_fetch_digest_check(a->digest) == 0 ? a->digest : NULL;
            co_error_clear();
        } else {
            if (co_fetch_digest_check(a->digest) < 0) {
                return co_error_wrap("artifact of %.300s", a->url);
            }
            co_srccache_key(&key, a->digest);
            d.verify = a->digest;
        }
        rc = co_srccache_get(s->cache, key, fill_download, &d, &entry, &filled);
        free(key);
    }
    if (rc < 0) {
        return rc;
    }
    co_source_tree *t = co_xcalloc(1, sizeof(*t));
    t->entry = entry;
    *out = t;
    if (downloaded) {
        *downloaded = filled;
    }
    return 0;
}

int co_source_materialise(co_sources *s,
                          const char *id,
                          co_source_fill_fn fill,
                          void *ctx,
                          co_source_tree **out,
                          int *filled)
{
    char *key = NULL;
    co_srccache_entry *entry = NULL;
    int did = 0;
    co_srccache_key(&key, id);
    int rc = co_srccache_get(s->cache, key, fill, ctx, &entry, &did);
    free(key);
    if (rc < 0) {
        return rc;
    }
    co_source_tree *t = co_xcalloc(1, sizeof(*t));
    t->entry = entry;
    *out = t;
    if (filled) {
        *filled = did;
    }
    return 0;
}

const char *co_source_tree_dir(const co_source_tree *t)
{
    return co_srccache_entry_dir(t->entry);
}

int co_source_tree_path(const co_source_tree *t, const char *path, char **out)
{
    char *resolved = NULL;
    const char *p = path ? path : "";
    int rc = co_archive_resolve(&resolved, co_source_tree_dir(t), p);
    if (rc == CO_EINVALID) {
        return co_error_set(CO_EINVALID, "path %s leaves the artifact", p);
    }
    if (rc < 0) {
        return rc;
    }
    struct stat st;
    if (stat(resolved, &st) < 0) {
        free(resolved);
        return co_error_set(CO_ENOTFOUND, "no such file or directory: %s", p);
    }
    if (!S_ISDIR(st.st_mode)) {
        free(resolved);
        return co_error_set(CO_EINVALID, "not a directory: %s", p);
    }
    *out = resolved;
    return 0;
}

void co_source_tree_release(co_source_tree *t)
{
    if (t) {
        co_srccache_release(t->entry);
        free(t);
    }
}

/* ---- poller ------------------------------------------------------------------------------ */

#define REF_STRINGS 11

typedef struct watch {
    char *key;
    char *ns;
    co_source_spec ref;
    char *strs[REF_STRINGS]; /* owned copies behind ref's pointers */
    char *last_digest;
    char *last_revision;
    long interval_ms;
    long due; /* monotonic ms */
} watch;

struct co_source_poller {
    co_sources *s;
    long http_interval_ms;
    co_source_changed_fn changed;
    co_source_poll_error_fn failed;
    void *ctx;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int leader;
    int now;
    unsigned long rounds;
    watch *w;
    size_t n, cap;
    /* key -> position in w, plus one (a NULL value means absent) */
    co_strmap index;
};

static long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void watch_dispose(watch *w)
{
    free(w->key);
    free(w->ns);
    for (size_t i = 0; i < REF_STRINGS; i++) {
        free(w->strs[i]);
    }
    free(w->last_digest);
    free(w->last_revision);
    memset(w, 0, sizeof(*w));
}

/* Deep-copies @p src into @p w (key and due time left alone). */
static void watch_fill(watch *w,
                       const co_source_spec *src,
                       const char *ns,
                       const char *ld,
                       const char *lr,
                       long interval)
{
    for (size_t i = 0; i < REF_STRINGS; i++) {
        free(w->strs[i]);
        w->strs[i] = NULL;
    }
    free(w->ns);
    free(w->last_digest);
    free(w->last_revision);
    w->ref = *src;
    const char **fields[REF_STRINGS] = {
        &w->ref.ns,
        &w->ref.name,
        &w->ref.url,
        &w->ref.digest_header,
        &w->ref.revision_header,
        &w->ref.git.branch,
        &w->ref.git.tag,
        &w->ref.git.semver,
        &w->ref.git.commit,
        &w->ref.secret_name,
        NULL,
    };
    for (size_t i = 0; fields[i]; i++) {
        w->strs[i] = co_xstrdup(*fields[i]);
        *fields[i] = w->strs[i];
    }
    w->ns = co_xstrdup(ns);
    w->last_digest = co_xstrdup(ld ? ld : "");
    w->last_revision = co_xstrdup(lr ? lr : "");
    w->interval_ms = interval;
}

static int str_differs(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") != 0;
}

/* What polling one source found: a failure, or its digest (HTTP) and revision. */
typedef struct poll_result {
    int rc;
    char *message;
    char *digest;
    char *revision;
} poll_result;

static void poll_result_free(poll_result *r)
{
    if (r) {
        free(r->message);
        free(r->digest);
        free(r->revision);
        free(r);
    }
}

/* The source a watch polls, as a string: watches with equal identities get the same answer
 * from one poll. The Component's namespace is part of it, as the git credentials come from
 * there: one namespace never gets an answer polled with another's Secret. */
static char *poll_identity(const watch *w)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    CO_ASSERT(co_buf_printf(&b, "%d\x1f%ld\x1f%s", (int)w->ref.kind, w->interval_ms,
                            w->ns ? w->ns : "") == 0);
    for (size_t i = 0; i < REF_STRINGS; i++) {
        CO_ASSERT(co_buf_printf(&b, "\x1f%s", w->strs[i] ? w->strs[i] : "") == 0);
    }
    return co_buf_take(&b, NULL);
}

/* Polls one source (no lock held). */
static poll_result *poll_source(co_source_poller *p, const watch *w)
{
    poll_result *r = co_xcalloc(1, sizeof(*r));
    co_error_clear();
    if (w->ref.kind == CO_SOURCE_HTTP_REPOSITORY) {
        co_fetch_head_result h = {0};
        r->rc = co_fetch_head(w->ref.url, w->ref.digest_header, w->ref.revision_header,
                              &p->s->fetch, &h);
        if (r->rc == 0) {
            r->digest = co_xstrdup(h.digest ? h.digest : "");
            r->revision = co_xstrdup(h.revision ? h.revision : "");
        }
        co_fetch_head_result_dispose(&h);
    } else {
        git_secret sec;
        co_git_auth auth;
        co_git_resolved res = {0};
        long retry = 0;
        r->rc = load_git_secret(p->s, &w->ref, w->ns, &sec, &auth, &retry);
        if (r->rc == 0) {
            r->rc = co_git_resolve(p->s->git, w->ref.url, &w->ref.git, &auth, &res);
        }
        git_secret_dispose(&sec);
        if (r->rc == 0) {
            r->revision = co_xstrdup(res.revision ? res.revision : "");
        }
        co_git_resolved_dispose(&res);
    }
    if (r->rc < 0) {
        r->message = co_xstrdup(co_error_last());
    }
    return r;
}

/* Tells the watcher of @p w what its source's poll found. */
static void poll_report(co_source_poller *p, const watch *w, const poll_result *r)
{
    if (r->rc < 0) {
        if (p->failed) {
            p->failed(p->ctx, w->key, r->rc, r->message);
        }
        return;
    }
    if (w->ref.kind == CO_SOURCE_HTTP_REPOSITORY) {
        if (str_differs(r->digest, w->last_digest) || str_differs(r->revision, w->last_revision)) {
            p->changed(p->ctx, w->key, r->digest, r->revision);
        }
    } else if (str_differs(r->revision, w->last_revision)) {
        p->changed(p->ctx, w->key, NULL, r->revision);
    }
}

/* Polls the due watches: each distinct source once (see poll_identity()). */
static void poll_due(co_source_poller *p, watch *due, size_t ndue)
{
    co_strmap results = CO_STRMAP_INIT;
    for (size_t i = 0; i < ndue; i++) {
        char *id = poll_identity(&due[i]);
        poll_result *r = co_strmap_get(&results, id);
        if (!r) {
            r = poll_source(p, &due[i]);
            co_strmap_put(&results, id, r);
        }
        free(id);
        poll_report(p, &due[i], r);
    }
    size_t iter = 0;
    const char *k = NULL;
    void *v = NULL;
    while (co_strmap_next(&results, &iter, &k, &v)) {
        poll_result_free(v);
    }
    co_strmap_dispose(&results);
}

/* The first poll of a new watch: the next multiple of its interval on the monotonic clock, so
 * that all watches of an interval fall due in the same round and Components sharing a source
 * share its poll. */
static long aligned_due(long now, long interval)
{
    return interval > 0 ? (now / interval + 1) * interval : now;
}

static void *poller_main(void *arg)
{
    co_source_poller *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        long now = mono_ms();
        long next = now + 1000;
        watch *due = NULL;
        size_t ndue = 0;
        if (p->leader) {
            for (size_t i = 0; i < p->n; i++) {
                if (p->now || p->w[i].due <= now) {
                    due = co_xreallocarray(due, ndue + 1, sizeof(*due));
                    memset(&due[ndue], 0, sizeof(*due));
                    due[ndue].key = co_xstrdup(p->w[i].key);
                    watch_fill(&due[ndue], &p->w[i].ref, p->w[i].ns, p->w[i].last_digest,
                               p->w[i].last_revision, p->w[i].interval_ms);
                    ndue++;
                    p->w[i].due = now + p->w[i].interval_ms;
                }
                if (p->w[i].due < next) {
                    next = p->w[i].due;
                }
            }
        }
        int forced = p->now;
        p->now = 0;
        if (ndue > 0 || forced) {
            pthread_mutex_unlock(&p->mu);
            poll_due(p, due, ndue);
            for (size_t i = 0; i < ndue; i++) {
                watch_dispose(&due[i]);
            }
            free(due);
            pthread_mutex_lock(&p->mu);
            p->rounds++;
            pthread_cond_broadcast(&p->cv);
            continue;
        }
        long wait = next - now;
        if (wait < 10) {
            wait = 10;
        }
        struct timespec until = co_monotonic_deadline_ns((int64_t)wait * 1000000);
        pthread_cond_timedwait(&p->cv, &p->mu, &until);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int co_source_poller_new(co_source_poller **out,
                         co_sources *s,
                         long http_interval_ms,
                         co_source_changed_fn changed,
                         co_source_poll_error_fn failed,
                         void *ctx)
{
    co_source_poller *p = co_xcalloc(1, sizeof(*p));
    p->s = s;
    p->http_interval_ms = http_interval_ms > 0 ? http_interval_ms : CO_SOURCE_HTTP_POLL_MS;
    p->changed = changed;
    p->failed = failed;
    p->ctx = ctx;
    pthread_mutex_init(&p->mu, NULL);
    co_cond_init_monotonic(&p->cv);
    if (pthread_create(&p->thread, NULL, poller_main, p) != 0) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        free(p);
        return co_error_set(CO_ERROR, "starting the source poller thread");
    }
    *out = p;
    return 0;
}

void co_source_poller_free(co_source_poller *p)
{
    if (!p) {
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    for (size_t i = 0; i < p->n; i++) {
        watch_dispose(&p->w[i]);
    }
    free(p->w);
    co_strmap_dispose(&p->index);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

void co_source_poller_set_leader(co_source_poller *p, int leader)
{
    pthread_mutex_lock(&p->mu);
    p->leader = leader != 0;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int co_source_poller_watch(co_source_poller *p,
                           const char *key,
                           const co_source_spec *ref,
                           const char *component_ns,
                           const char *last_digest,
                           const char *last_revision)
{
    if (ref->kind != CO_SOURCE_HTTP_REPOSITORY && ref->kind != CO_SOURCE_GIT) {
        return co_error_set(CO_EINVALID, "only HTTP and git sources are polled");
    }
    long interval = ref->kind == CO_SOURCE_HTTP_REPOSITORY ? p->http_interval_ms
                    : ref->interval_ms > 0                 ? ref->interval_ms
                                                           : CO_SOURCE_GIT_POLL_MS;
    pthread_mutex_lock(&p->mu);
    uintptr_t at = (uintptr_t)co_strmap_get(&p->index, key);
    watch *w = at ? &p->w[at - 1] : NULL;
    if (!w) {
        if (p->n == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 16;
            p->w = co_xreallocarray(p->w, p->cap, sizeof(*p->w));
        }
        w = &p->w[p->n++];
        memset(w, 0, sizeof(*w));
        w->key = co_xstrdup(key);
        w->due = aligned_due(mono_ms(), interval);
        co_strmap_put(&p->index, key, (void *)(uintptr_t)p->n);
    }
    watch_fill(w, ref, component_ns, last_digest, last_revision, interval);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void co_source_poller_unwatch(co_source_poller *p, const char *key)
{
    pthread_mutex_lock(&p->mu);
    uintptr_t at = (uintptr_t)co_strmap_remove(&p->index, key);
    if (at) {
        size_t i = at - 1;
        watch_dispose(&p->w[i]);
        p->w[i] = p->w[--p->n];
        if (i < p->n) {
            co_strmap_put(&p->index, p->w[i].key, (void *)(uintptr_t)(i + 1));
        }
    }
    if (p->n == 0) {
        /* after a mass deletion the array would otherwise keep its peak size */
        free(p->w);
        p->w = NULL;
        p->cap = 0;
    }
    pthread_mutex_unlock(&p->mu);
}

void co_source_poller_poll_now(co_source_poller *p)
{
    pthread_mutex_lock(&p->mu);
    p->now = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

unsigned long co_source_poller_rounds(co_source_poller *p)
{
    pthread_mutex_lock(&p->mu);
    unsigned long r = p->rounds;
    pthread_mutex_unlock(&p->mu);
    return r;
}

size_t co_source_poller_len(co_source_poller *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->n;
    pthread_mutex_unlock(&p->mu);
    return n;
}
