/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubeconfig and in-cluster configuration. Files are parsed into json-c trees, merged by name
 * as client-go merges KUBECONFIG lists, and the selected context is resolved into one flat
 * co_kube_config holding every credential in memory (certificates are read from their files
 * here, once; only token files are read again later, by the client). A kubeconfig from a
 * Component's Secret is walked for file references and plugins before anything is resolved,
 * so the process's own files (its service-account token above all) never become its
 * credentials.
 */
#include "co/json/json.h"
#include "co/kube/kube_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/json/yaml.h"
#include "kube_int.h"

/* --- files ------------------------------------------------------------------------------ */

static atomic_ulong files_opened;

unsigned long co_kube__files_opened(void)
{
    return atomic_load(&files_opened);
}

int co_kube__read_file(co_buf *out, const char *path, size_t cap)
{
    atomic_fetch_add(&files_opened, 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return co_error_set_os(errno == ENOENT ? CO_ENOTFOUND : CO_ERROR, "cannot open %s", path);
    }
    co_buf buf = CO_BUF_INIT(cap);
    int rc = 0;
    for (;;) {
        if (co_buf_reserve(&buf, 4096) < 0) {
            rc = co_error_wrap("reading %s", path);
            goto done;
        }
        ssize_t n = read(fd, buf.ptr + buf.len, buf.cap - buf.len - 1);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            rc = co_error_set_os(CO_ERROR, "cannot read %s", path);
            goto done;
        }
        if (n == 0) {
            break;
        }
        buf.len += (size_t)n;
        buf.ptr[buf.len] = '\0';
    }
    rc = co_buf_put(out, buf.ptr ? buf.ptr : "", buf.len);
done:
    if (buf.ptr) {
        co_memzero(buf.ptr, buf.cap);
    }
    co_buf_dispose(&buf);
    close(fd);
    return rc;
}

/* Parses a kubeconfig document (YAML, JSON being a part of it). */
static int parse_document(struct json_object **out, const char *data, size_t len, const char *path)
{
    if (co_yaml_parse(out, data, len, 0) < 0) {
        return co_error_wrap("%s", path);
    }
    if (*out && !json_object_is_type(*out, json_type_object)) {
        json_object_put(*out);
        *out = NULL;
        return co_error_set(CO_EINVALID, "%s: a kubeconfig must be a mapping", path);
    }
    return 0;
}

/* --- blobs and strings -------------------------------------------------------------------- */

#define UNTRUSTED_FILE "file references are not allowed in an untrusted kubeconfig"

static void blob_dispose(co_kube_blob *b)
{
    if (b->data) {
        co_free_secret(b->data, b->len + 1);
    }
    b->data = NULL;
    b->len = 0;
}

static void blob_dup(co_kube_blob *dst, const co_kube_blob *src)
{
    dst->data = src->data ? co_xmemdup(src->data, src->len) : NULL;
    dst->len = src->len;
}

static void free_secret_str(char *s)
{
    if (s) {
        co_free_secret(s, strlen(s) + 1);
    }
}

/*
 * Decodes standard base64 (line breaks allowed, as Go's decoder of []byte fields allows them)
 * into a blob. The buffer is sized for the whole result up front, so that no reallocation
 * leaves a copy of key material behind.
 */
static int base64_blob(co_kube_blob *out, const char *b64, const char *field)
{
    size_t len = strlen(b64);
    if (len > CO_MAX_CONFIG_FILE) {
        return co_error_set(CO_ETOOBIG, "%s exceeds %zu bytes", field, CO_MAX_CONFIG_FILE);
    }
    unsigned char *data = NULL;
    if (co_base64_decode_alloc(&data, &out->len, b64, len, CO_BASE64_STD) < 0) {
        co_error_clear();
        return co_error_set(CO_EINVALID, "%s is not valid base64", field);
    }
    out->data = (char *)data;
    return 0;
}

/* Joins @p path to @p base unless it is absolute. */
static char *resolve_path(const char *base, const char *path)
{
    if (path[0] == '/' || !base || !base[0]) {
        return co_xstrdup(path);
    }
    return co_xasprintf("%s/%s", base, path);
}

static int file_blob(co_kube_blob *out, const char *base, const char *path, const char *field)
{
    char *full = resolve_path(base, path);
    co_buf buf = CO_BUF_INIT(CO_MAX_CONFIG_FILE);
    int rc = co_kube__read_file(&buf, full, CO_MAX_CONFIG_FILE);
    if (rc < 0) {
        rc = co_error_wrap("%s", field);
        goto done;
    }
    out->len = buf.len;
    out->data = co_buf_take(&buf, NULL);
done:
    free(full);
    co_buf_dispose(&buf);
    return rc;
}

/* Fills @p out from "<name>-data" (inline base64) or "<name>" (a file, unless @p untrusted). */
static int data_or_file(co_kube_blob *out,
                        const struct json_object *section,
                        const char *name,
                        const char *base,
                        const char *where,
                        int untrusted)
{
    char key[64];
    snprintf(key, sizeof(key), "%s-data", name);
    const char *inline_data = co_json_str(section, key, NULL);
    char field[256];
    if (inline_data && inline_data[0]) {
        snprintf(field, sizeof(field), "%s.%s", where, key);
        return base64_blob(out, inline_data, field);
    }
    const char *path = co_json_str(section, name, NULL);
    if (path && path[0]) {
        snprintf(field, sizeof(field), "%s.%s", where, name);
        if (untrusted) {
            /* refuse_file_references() has refused it already; this only keeps it so */
            return co_error_set(CO_EINVALID, "%s: %s", field, UNTRUSTED_FILE);
        }
        return file_blob(out, base, path, field);
    }
    return 0;
}

/* --- the configuration object -------------------------------------------------------------- */

static co_kube_config *config_new(void)
{
    return co_xcalloc(1, sizeof(co_kube_config));
}

void co_kube_config_free(co_kube_config *cfg)
{
    if (!cfg) {
        return;
    }
    free(cfg->server);
    free(cfg->tls_server_name);
    free(cfg->context);
    free(cfg->namespace);
    free(cfg->proxy_url);
    blob_dispose(&cfg->ca);
    blob_dispose(&cfg->client_cert);
    blob_dispose(&cfg->client_key);
    free_secret_str(cfg->token);
    free(cfg->token_file);
    free(cfg->username);
    free_secret_str(cfg->password);
    free(cfg->impersonate_user);
    for (size_t i = 0; i < cfg->nimpersonate_groups; i++) {
        free(cfg->impersonate_groups[i]);
    }
    free(cfg->impersonate_groups);
    free(cfg);
}

co_kube_config *co_kube_config__dup(const co_kube_config *src)
{
    co_kube_config *c = config_new();
    c->server = co_xstrdup(src->server);
    c->tls_server_name = co_xstrdup(src->tls_server_name);
    c->context = co_xstrdup(src->context);
    c->namespace = co_xstrdup(src->namespace);
    c->proxy_url = co_xstrdup(src->proxy_url);
    c->insecure = src->insecure;
    c->in_cluster = src->in_cluster;
    c->untrusted = src->untrusted;
    blob_dup(&c->ca, &src->ca);
    blob_dup(&c->client_cert, &src->client_cert);
    blob_dup(&c->client_key, &src->client_key);
    c->token = co_xstrdup(src->token);
    c->token_file = co_xstrdup(src->token_file);
    c->username = co_xstrdup(src->username);
    c->password = co_xstrdup(src->password);
    c->impersonate_user = co_xstrdup(src->impersonate_user);
    if (src->nimpersonate_groups) {
        c->impersonate_groups = co_xcalloc(src->nimpersonate_groups, sizeof(char *));
        for (size_t i = 0; i < src->nimpersonate_groups; i++) {
            c->impersonate_groups[i] = co_xstrdup(src->impersonate_groups[i]);
        }
        c->nimpersonate_groups = src->nimpersonate_groups;
    }
    return c;
}

const char *co_kube_config_server(const co_kube_config *cfg)
{
    return cfg->server;
}

const char *co_kube_config_namespace(const co_kube_config *cfg)
{
    return cfg->namespace;
}

const char *co_kube_config_context(const co_kube_config *cfg)
{
    return cfg->context;
}

bool co_kube_config_is_in_cluster(const co_kube_config *cfg)
{
    return cfg->in_cluster;
}

bool co_kube_config_is_untrusted(const co_kube_config *cfg)
{
    return cfg->untrusted;
}

/* Checks and normalises the server URL (scheme, host, no trailing slash). */
static int set_server(co_kube_config *cfg, const char *server, const char *where)
{
    if (!server || !server[0]) {
        return co_error_set(CO_EINVALID, "%s.server is missing", where);
    }
    if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0) {
        return co_error_set(CO_EINVALID, "%s.server \"%s\" is not an http(s) URL", where, server);
    }
    const char *host = strstr(server, "://") + 3;
    if (!host[0] || host[0] == '/') {
        return co_error_set(CO_EINVALID, "%s.server \"%s\" has no host", where, server);
    }
    size_t len = strlen(server);
    while (len > 0 && server[len - 1] == '/') {
        len--;
    }
    cfg->server = co_xstrndup(server, len);
    return 0;
}

/* --- kubeconfig ------------------------------------------------------------------------------ */

/* One named entry of a merged kubeconfig, with the directory its file is in. */
typedef struct named {
    const char *name;
    struct json_object *body; /* borrowed from the parsed documents */
    const char *base;
    size_t index; /* in its section of its document, for messages */
} named;

/* How the selected context is turned into a configuration. */
typedef struct load_mode {
    int untrusted;  /* from a Component's Secret: inline credentials only */
    unsigned flags; /* CO_KUBE_CONFIG_ALLOW_* */
} load_mode;

static const load_mode trusted_mode = {0, 0};

typedef struct merged {
    named *clusters, *users, *contexts;
    size_t nclusters, nusers, ncontexts;
    const char *current_context;
} merged;

static void merged_dispose(merged *m)
{
    free(m->clusters);
    free(m->users);
    free(m->contexts);
}

static const named *find_named(const named *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(list[i].name, name) == 0) {
            return &list[i];
        }
    }
    return NULL;
}

/* Adds the entries of doc[section] ([{name, <body_key>: {...}}]) that are not yet defined. */
static int merge_section(named **list,
                         size_t *n,
                         const struct json_object *doc,
                         const char *section,
                         const char *body_key,
                         const char *base,
                         const char *path)
{
    struct json_object *arr = NULL;
    if (!json_object_object_get_ex(doc, section, &arr) || !arr) {
        return 0;
    }
    if (!json_object_is_type(arr, json_type_array)) {
        return co_error_set(CO_EINVALID, "%s: %s must be a list", path, section);
    }
    size_t len = json_object_array_length(arr);
    for (size_t i = 0; i < len; i++) {
        struct json_object *item = json_object_array_get_idx(arr, i);
        const char *name = co_json_str(item, "name", NULL);
        if (!name && json_object_object_get(item, "name")) {
            return co_error_set(CO_EINVALID, "%s: %s[%zu].name must be a string", path, section, i);
        }
        if (!name || !name[0]) {
            return co_error_set(CO_EINVALID, "%s: %s[%zu].name is missing", path, section, i);
        }
        struct json_object *body = co_kube__obj(item, body_key);
        if (!body) {
            return co_error_set(CO_EINVALID, "%s: %s[%zu] (%s) has no %s mapping", path, section, i,
                                name, body_key);
        }
        if (find_named(*list, *n, name)) {
            continue; /* the first definition wins */
        }
        *list = co_xreallocarray(*list, *n + 1, sizeof(named));
        (*list)[*n] = (named){name, body, base, i};
        (*n)++;
    }
    return 0;
}

static int merge_doc(merged *m, const struct json_object *doc, const char *base, const char *path)
{
    int rc;
    if ((rc = merge_section(&m->clusters, &m->nclusters, doc, "clusters", "cluster", base, path)) <
            0 ||
        (rc = merge_section(&m->users, &m->nusers, doc, "users", "user", base, path)) < 0 ||
        (rc = merge_section(&m->contexts, &m->ncontexts, doc, "contexts", "context", base, path)) <
            0) {
        return rc;
    }
    const char *cur = co_json_str(doc, "current-context", NULL);
    struct json_object *cur_obj = NULL;
    if (!cur && json_object_object_get_ex(doc, "current-context", &cur_obj) && cur_obj) {
        return co_error_set(CO_EINVALID, "%s: current-context must be a string", path);
    }
    if (!m->current_context && cur && cur[0]) {
        m->current_context = cur;
    }
    return 0;
}

/* Whether @p url starts with one of the @p n schemes (each with its "://"). */
static int has_scheme(const char *url, const char *const *schemes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strncmp(url, schemes[i], strlen(schemes[i])) == 0) {
            return 1;
        }
    }
    return 0;
}

static int load_cluster(co_kube_config *cfg, const named *cl, const load_mode *mode)
{
    char where[320];
    snprintf(where, sizeof(where), "cluster \"%s\"", cl->name);
    int rc;
    if ((rc = set_server(cfg, co_json_str(cl->body, "server", NULL), where)) < 0) {
        return rc;
    }
    if (mode->untrusted && strncmp(cfg->server, "http://", 7) == 0 &&
        !(mode->flags & CO_KUBE_CONFIG_ALLOW_HTTP)) {
        return co_error_set(CO_EINVALID,
                            "clusters[%zu].cluster.server: \"%.200s\": plain http is not allowed "
                            "in an untrusted kubeconfig; use https",
                            cl->index, cfg->server);
    }
    struct json_object *v = NULL;
    if (json_object_object_get_ex(cl->body, "insecure-skip-tls-verify", &v)) {
        cfg->insecure = json_object_get_boolean(v);
    }
    const char *sni = co_json_str(cl->body, "tls-server-name", NULL);
    if (sni && sni[0]) {
        cfg->tls_server_name = co_xstrdup(sni);
    }
    const char *proxy = co_json_str(cl->body, "proxy-url", NULL);
    if (proxy && proxy[0]) {
        /* client-go's proxy schemes; libcurl would also take others (socks4, its own
         * defaults for a bare host) that a tenant has no business choosing */
        static const char *const schemes[] = {"http://", "https://", "socks5://", "socks5h://"};
        if (mode->untrusted && !has_scheme(proxy, schemes, CO_ARRAY_SIZE(schemes))) {
            return co_error_set(CO_EINVALID,
                                "clusters[%zu].cluster.proxy-url: \"%.200s\": the scheme must be "
                                "http, https, socks5 or socks5h",
                                cl->index, proxy);
        }
        cfg->proxy_url = co_xstrdup(proxy);
    }
    return data_or_file(&cfg->ca, cl->body, "certificate-authority", cl->base, where,
                        mode->untrusted);
}

static int load_user(co_kube_config *cfg, const named *u, const load_mode *mode)
{
    char where[320];
    snprintf(where, sizeof(where), "user \"%s\"", u->name);
    if (co_kube__obj(u->body, "exec")) {
        return co_error_set(CO_EUNSUPPORTED,
                            "%s uses an exec credential plugin, which is not supported; use a "
                            "token, token file or client certificate",
                            where);
    }
    if (co_kube__obj(u->body, "auth-provider")) {
        return co_error_set(CO_EUNSUPPORTED,
                            "%s uses an auth-provider plugin, which is not supported; use a "
                            "token, token file or client certificate",
                            where);
    }
    int rc;
    if ((rc = data_or_file(&cfg->client_cert, u->body, "client-certificate", u->base, where,
                           mode->untrusted)) < 0 ||
        (rc = data_or_file(&cfg->client_key, u->body, "client-key", u->base, where,
                           mode->untrusted)) < 0) {
        return rc;
    }
    if (!cfg->client_cert.data != !cfg->client_key.data) {
        return co_error_set(CO_EINVALID, "%s has a client %s but no client %s", where,
                            cfg->client_cert.data ? "certificate" : "key",
                            cfg->client_cert.data ? "key" : "certificate");
    }
    const char *token = co_json_str(u->body, "token", NULL);
    const char *token_file = co_json_str(u->body, "tokenFile", NULL);
    if (token && token[0]) {
        cfg->token = co_xstrdup(token);
    } else if (token_file && token_file[0]) {
        if (mode->untrusted) {
            return co_error_set(CO_EINVALID, "%s.tokenFile: %s", where, UNTRUSTED_FILE);
        }
        cfg->token_file = resolve_path(u->base, token_file);
        co_buf probe = CO_BUF_INIT(CO_MAX_CONFIG_FILE);
        rc = co_kube__read_file(&probe, cfg->token_file, CO_MAX_CONFIG_FILE);
        if (probe.ptr) {
            co_memzero(probe.ptr, probe.len);
        }
        co_buf_dispose(&probe);
        if (rc < 0) {
            return co_error_wrap("%s.tokenFile", where);
        }
    }
    const char *user = co_json_str(u->body, "username", NULL);
    const char *pass = co_json_str(u->body, "password", NULL);
    if (user && user[0]) {
        cfg->username = co_xstrdup(user);
        cfg->password = co_xstrdup(pass ? pass : "");
    }
    const char *as = co_json_str(u->body, "as", NULL);
    if (as && as[0]) {
        cfg->impersonate_user = co_xstrdup(as);
    }
    struct json_object *groups = NULL;
    if (json_object_object_get_ex(u->body, "as-groups", &groups) &&
        json_object_is_type(groups, json_type_array)) {
        size_t n = json_object_array_length(groups);
        cfg->impersonate_groups = co_xcalloc(n ? n : 1, sizeof(char *));
        for (size_t i = 0; i < n; i++) {
            const char *g = json_object_get_string(json_object_array_get_idx(groups, i));
            cfg->impersonate_groups[cfg->nimpersonate_groups++] = co_xstrdup(g ? g : "");
        }
    }
    return 0;
}

static int
resolve_merged(co_kube_config **out, const merged *m, const char *context, const load_mode *mode)
{
    co_kube_config *cfg = NULL;
    int rc = 0;
    const char *ctx_name = context && context[0] ? context : m->current_context;
    if (!ctx_name) {
        return co_error_set(CO_EINVALID, "no current-context is set and no context was given");
    }
    const named *ctx = find_named(m->contexts, m->ncontexts, ctx_name);
    if (!ctx) {
        return co_error_set(CO_EINVALID, "context \"%s\" is not defined", ctx_name);
    }
    const char *cluster_name = co_json_str(ctx->body, "cluster", NULL);
    const char *user_name = co_json_str(ctx->body, "user", NULL);
    if (!cluster_name || !cluster_name[0]) {
        return co_error_set(CO_EINVALID, "context \"%s\" names no cluster", ctx_name);
    }
    const named *cl = find_named(m->clusters, m->nclusters, cluster_name);
    if (!cl) {
        return co_error_set(CO_EINVALID, "context \"%s\": cluster \"%s\" is not defined", ctx_name,
                            cluster_name);
    }
    const named *u = NULL;
    if (user_name && user_name[0]) {
        u = find_named(m->users, m->nusers, user_name);
        if (!u) {
            return co_error_set(CO_EINVALID, "context \"%s\": user \"%s\" is not defined", ctx_name,
                                user_name);
        }
    }
    cfg = config_new();
    cfg->untrusted = mode->untrusted;
    cfg->context = co_xstrdup(ctx_name);
    const char *ns = co_json_str(ctx->body, "namespace", NULL);
    cfg->namespace = co_xstrdup(ns && ns[0] ? ns : "default");
    if ((rc = load_cluster(cfg, cl, mode)) < 0) {
        goto done;
    }
    if (u && (rc = load_user(cfg, u, mode)) < 0) {
        goto done;
    }
    *out = cfg;
    cfg = NULL;
done:
    co_kube_config_free(cfg);
    return rc;
}

int co_kube_config_from_json(co_kube_config **out,
                             const struct json_object *doc,
                             const char *base_dir,
                             const char *context)
{
    merged m = {0};
    int rc = merge_doc(&m, doc, base_dir, "kubeconfig");
    if (rc == 0) {
        rc = resolve_merged(out, &m, context, &trusted_mode);
    }
    merged_dispose(&m);
    return rc;
}

/* Whether @p body has member @p key with a value other than null or "". */
static int has_value(const struct json_object *body, const char *key)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(body, key, &v) || !v) {
        return 0;
    }
    return !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) > 0;
}

/*
 * Refuses, in every entry and not only the selected one, each member that makes the loader
 * read a file, and the credential plugins (which would run a program or talk to another
 * service in the controller's name). Runs before anything is resolved, so nothing is opened.
 */
static int refuse_file_references(const struct json_object *doc)
{
    static const struct {
        const char *section, *body;
        const char *files[3];
        size_t nfiles;
    } sections[] = {
        {"clusters", "cluster", {"certificate-authority"}, 1},
        {"users", "user", {"tokenFile", "client-certificate", "client-key"}, 3},
    };
    for (size_t s = 0; s < CO_ARRAY_SIZE(sections); s++) {
        struct json_object *arr = NULL;
        if (!json_object_object_get_ex(doc, sections[s].section, &arr) ||
            !json_object_is_type(arr, json_type_array)) {
            continue; /* merge_section() names what is wrong with it */
        }
        size_t n = json_object_array_length(arr);
        for (size_t i = 0; i < n; i++) {
            struct json_object *body =
                co_kube__obj(json_object_array_get_idx(arr, i), sections[s].body);
            if (!body) {
                continue;
            }
            for (size_t f = 0; f < sections[s].nfiles; f++) {
                if (has_value(body, sections[s].files[f])) {
                    return co_error_set(CO_EINVALID, "%s[%zu].%s.%s: %s", sections[s].section, i,
                                        sections[s].body, sections[s].files[f], UNTRUSTED_FILE);
                }
            }
            if (s == 1 && has_value(body, "exec")) {
                return co_error_set(CO_EUNSUPPORTED,
                                    "users[%zu].user.exec: exec credential plugins are not "
                                    "supported; use a token or a client certificate",
                                    i);
            }
            if (s == 1 && has_value(body, "auth-provider")) {
                return co_error_set(CO_EUNSUPPORTED,
                                    "users[%zu].user.auth-provider: auth-provider plugins are not "
                                    "supported; use a token or a client certificate",
                                    i);
            }
        }
    }
    return 0;
}

int co_kube_config_from_untrusted_json(co_kube_config **out,
                                       const struct json_object *doc,
                                       const char *context,
                                       unsigned flags)
{
    const load_mode mode = {1, flags};
    merged m = {0};
    int rc = refuse_file_references(doc);
    if (rc == 0) {
        rc = merge_doc(&m, doc, NULL, "kubeconfig");
    }
    if (rc == 0) {
        rc = resolve_merged(out, &m, context, &mode);
    }
    merged_dispose(&m);
    return rc;
}

int co_kube_config_from_files(co_kube_config **out,
                              const char *const *paths,
                              size_t npaths,
                              const char *context)
{
    struct json_object **docs = co_xcalloc(npaths ? npaths : 1, sizeof(struct json_object *));
    char **bases = co_xcalloc(npaths ? npaths : 1, sizeof(char *));
    merged m = {0};
    int rc = 0, any = 0;
    for (size_t i = 0; i < npaths; i++) {
        const char *path = paths[i];
        if (!path || !path[0]) {
            continue;
        }
        co_buf data = CO_BUF_INIT(CO_MAX_CONFIG_FILE);
        rc = co_kube__read_file(&data, path, CO_MAX_CONFIG_FILE);
        if (rc == 0) {
            rc = parse_document(&docs[i], co_buf_cstr(&data), data.len, path);
        }
        if (data.ptr) {
            co_memzero(data.ptr, data.len);
        }
        co_buf_dispose(&data);
        if (rc < 0) {
            goto done;
        }
        const char *slash = strrchr(path, '/');
        bases[i] = slash ? co_xstrndup(path, slash == path ? 1 : (size_t)(slash - path)) : NULL;
        if (docs[i] && (rc = merge_doc(&m, docs[i], bases[i], path)) < 0) {
            goto done;
        }
        any = 1;
    }
    if (!any) {
        rc = co_error_set(CO_ENOTFOUND, "no kubeconfig file was given");
        goto done;
    }
    rc = resolve_merged(out, &m, context, &trusted_mode);
done:
    merged_dispose(&m);
    for (size_t i = 0; i < npaths; i++) {
        json_object_put(docs[i]);
        free(bases[i]);
    }
    free(docs);
    free(bases);
    return rc;
}

/* --- in-cluster ------------------------------------------------------------------------------ */

int co_kube_config_in_cluster(co_kube_config **out,
                              const char *sa_dir,
                              const char *host,
                              const char *port)
{
    co_kube_config *cfg = NULL;
    char *path = NULL;
    co_buf ns = CO_BUF_INIT(CO_MAX_CONFIG_FILE);
    int rc = 0;
    if (!sa_dir) {
        sa_dir = CO_KUBE_SERVICEACCOUNT_DIR;
    }
    if (!host) {
        host = getenv("KUBERNETES_SERVICE_HOST"); // NOLINT(concurrency-mt-unsafe): start-up
    }
    if (!port) {
        port = getenv("KUBERNETES_SERVICE_PORT"); // NOLINT(concurrency-mt-unsafe): start-up
    }
    if (!host || !host[0] || !port || !port[0]) {
        return co_error_set(CO_ENOTFOUND, "not running in a cluster: KUBERNETES_SERVICE_HOST "
                                          "and KUBERNETES_SERVICE_PORT are not set");
    }
    for (const char *p = port; *p; p++) {
        if (*p < '0' || *p > '9' || p - port > 5) {
            return co_error_set(CO_EINVALID, "KUBERNETES_SERVICE_PORT \"%s\" is not a port", port);
        }
    }
    cfg = config_new();
    cfg->in_cluster = 1;
    if (strchr(host, ':')) {
        cfg->server = co_xasprintf("https://[%s]:%s", host, port);
    } else {
        cfg->server = co_xasprintf("https://%s:%s", host, port);
    }
    cfg->token_file = co_xasprintf("%s/token", sa_dir);
    co_buf probe = CO_BUF_INIT(CO_MAX_CONFIG_FILE);
    rc = co_kube__read_file(&probe, cfg->token_file, CO_MAX_CONFIG_FILE);
    if (probe.ptr) {
        co_memzero(probe.ptr, probe.len);
    }
    co_buf_dispose(&probe);
    if (rc < 0) {
        rc = co_error_wrap("service-account token");
        goto done;
    }
    path = co_xasprintf("%s/ca.crt", sa_dir);
    if ((rc = file_blob(&cfg->ca, NULL, path, "service-account CA")) < 0) {
        goto done;
    }
    free(path);
    path = co_xasprintf("%s/namespace", sa_dir);
    rc = co_kube__read_file(&ns, path, CO_MAX_CONFIG_FILE);
    if (rc == CO_ENOTFOUND) {
        co_error_clear();
        rc = 0;
    } else if (rc < 0) {
        goto done;
    }
    size_t len = ns.len;
    while (len > 0 && (ns.ptr[len - 1] == '\n' || ns.ptr[len - 1] == ' ')) {
        len--;
    }
    cfg->namespace = len ? co_xstrndup(ns.ptr, len) : co_xstrdup("default");
    *out = cfg;
    cfg = NULL;
done:
    free(path);
    co_buf_dispose(&ns);
    co_kube_config_free(cfg);
    return rc;
}

/* --- the controller-runtime search order ------------------------------------------------------ */

int co_kube_config_load(co_kube_config **out, const char *kubeconfig, const char *context)
{
    if (kubeconfig && kubeconfig[0]) {
        return co_kube_config_from_files(out, &kubeconfig, 1, context);
    }
    const char *env = getenv("KUBECONFIG"); // NOLINT(concurrency-mt-unsafe): start-up only
    if (env && env[0]) {
        char *copy = co_xstrdup(env);
        const char **paths = NULL;
        size_t n = 0;
        char *save = NULL;
        for (char *tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
            if (access(tok, F_OK) != 0) {
                continue; /* client-go skips files of the list that do not exist */
            }
            paths = co_xreallocarray(paths, n + 1, sizeof(*paths));
            paths[n++] = tok;
        }
        int rc = co_kube_config_from_files(out, paths, n, context);
        free(paths);
        free(copy);
        return rc;
    }
    const char *host = getenv("KUBERNETES_SERVICE_HOST"); // NOLINT(concurrency-mt-unsafe)
    if (host && host[0]) {
        return co_kube_config_in_cluster(out, NULL, NULL, NULL);
    }
    const char *home = getenv("HOME"); // NOLINT(concurrency-mt-unsafe): start-up only
    if (home && home[0]) {
        char *path = co_xasprintf("%s/.kube/config", home);
        if (access(path, F_OK) == 0) {
            const char *p = path;
            int rc = co_kube_config_from_files(out, &p, 1, context);
            free(path);
            return rc;
        }
        free(path);
    }
    return co_error_set(CO_ENOTFOUND, "no Kubernetes configuration: give --kubeconfig, set "
                                      "KUBECONFIG, run in a cluster or create ~/.kube/config");
}
