/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Defaulting and validation of Components. Validation runs in two layers: the schema walk,
 * which reports exactly what the CRD also enforces (so the messages agree whether or not the
 * webhook is up), and the semantic checks below, which the CRD cannot express. Both layers work
 * on the JSON, so an object with a wrong type somewhere still gets every other problem
 * reported. v1beta1 objects are checked against their own schema, converted, checked
 * semantically in v1alpha1 terms, and the paths translated back.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/api/lifecycle.h"
#include "co/json/json.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"
#include "component_int.h"

/* ---------------------------------------------------------------------------------------------
 * Defaulting
 * ------------------------------------------------------------------------------------------- */

static int unset(json_object *obj, const char *key)
{
    json_object *v = NULL;
    return !json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null);
}

static void default_str(json_object *obj, const char *key, const char *value)
{
    if (value && unset(obj, key)) {
        json_object_object_add(obj, key, json_object_new_string(value));
    }
}

static void default_bool(json_object *obj, const char *key, co_opt_bool value)
{
    if (value != CO_OPT_UNSET && unset(obj, key)) {
        json_object_object_add(obj, key, json_object_new_boolean(value == CO_OPT_TRUE));
    }
}

/* prerequisites[].conditionType: "Ready". The namespace stays as written: absent means the
 * Component's namespace for namespaced kinds and nothing for cluster-scoped ones, which only
 * the target cluster knows. */
static void default_prerequisites(json_object *spec)
{
    json_object *pre = co_json__member(spec, "prerequisites");
    if (!pre || !json_object_is_type(pre, json_type_array)) {
        return;
    }
    size_t n = json_object_array_length(pre);
    for (size_t i = 0; i < n; i++) {
        json_object *item = json_object_array_get_idx(pre, i);
        if (json_object_is_type(item, json_type_object)) {
            default_str(item, "conditionType", CO_LIFECYCLE_DEFAULT_CONDITION);
        }
    }
}

void co_component__default_spec(struct json_object *spec,
                                const char *ns,
                                const co_component_defaults *d)
{
    if (!json_object_is_type(spec, json_type_object)) {
        return;
    }
    if (d) {
        default_str(spec, "requeueInterval", d->requeue_interval);
        default_str(spec, "retryInterval", d->retry_interval);
        default_str(spec, "timeout", d->timeout);
        default_str(spec, "reapplyInterval", d->reapply_interval);
        default_str(spec, "adoptionPolicy", co_adoption_policy_name(d->adoption_policy));
        default_str(spec, "updatePolicy", co_update_policy_name(d->update_policy));
        default_str(spec, "deletePolicy", co_delete_policy_name(d->delete_policy));
        default_str(spec, "missingNamespacesPolicy",
                    co_missing_namespaces_policy_name(d->missing_namespaces_policy));
        default_str(spec, "serviceAccountName", d->service_account_name);
        default_bool(spec, "enabled", d->enabled);
        default_bool(spec, "managed", d->managed);
        default_str(spec, "gracePeriod", d->grace_period);
        default_str(spec, "suspendMode", co_suspend_mode_name(d->suspend_mode));
    }
    /* Only constants are written. retryInterval and timeout derive from the effective
     * requeueInterval when they are read (co_component_retry_ns()); written here they would
     * stop following a later change of requeueInterval. */
    default_str(spec, "requeueInterval", CO_COMPONENT_DEFAULT_REQUEUE_INTERVAL);
    default_str(spec, "adoptionPolicy", co_adoption_policy_name(CO_COMPONENT_DEFAULT_ADOPTION));
    default_str(spec, "updatePolicy", co_update_policy_name(CO_COMPONENT_DEFAULT_UPDATE));
    default_str(spec, "deletePolicy", co_delete_policy_name(CO_COMPONENT_DEFAULT_DELETE));
    default_str(spec, "missingNamespacesPolicy",
                co_missing_namespaces_policy_name(CO_COMPONENT_DEFAULT_MISSING_NAMESPACES));

    default_prerequisites(spec);

    json_object *deps = co_json__member(spec, "dependencies");
    if (ns && ns[0] && deps && json_object_is_type(deps, json_type_array)) {
        size_t n = json_object_array_length(deps);
        for (size_t i = 0; i < n; i++) {
            json_object *dep = json_object_array_get_idx(deps, i);
            if (!json_object_is_type(dep, json_type_object)) {
                continue;
            }
            json_object *dns = co_json__member(dep, "namespace");
            if (!dns || (json_object_is_type(dns, json_type_string) &&
                         json_object_get_string_len(dns) == 0)) {
                json_object_object_add(dep, "namespace", json_object_new_string(ns));
            }
        }
    }
}

int co_component_default(struct json_object **out,
                         const struct json_object *obj,
                         const char *ns,
                         const co_component_defaults *defaults)
{
    co_api_version version = co_component_version(obj);
    json_object *alpha = NULL;
    json_object *spec = NULL;
    int rc;
    if (version == CO_API_UNKNOWN) {
        return co_error_set(CO_EINVALID, "not a %s or %s %s", CO_COMPONENT_V1ALPHA1,
                            CO_COMPONENT_V1BETA1, CO_COMPONENT_KIND);
    }
    if ((rc = co_component_convert(&alpha, obj, CO_COMPONENT_V1ALPHA1)) < 0) {
        return rc;
    }
    if (json_object_object_get_ex(alpha, "spec", &spec)) {
        co_component__default_spec(spec, ns ? ns : co_json_meta_namespace(obj), defaults);
    }
    if (version == CO_API_V1ALPHA1) {
        *out = alpha;
        return 0;
    }
    rc = co_component_convert(out, alpha, CO_COMPONENT_V1BETA1);
    json_object_put(alpha);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Semantic checks
 * ------------------------------------------------------------------------------------------- */

typedef struct vctx {
    co_field_errors *errs;
    const char *ns;   /* the Component's namespace, may be NULL */
    const char *name; /* the Component's name, may be NULL */
} vctx;

/* Where a string was found: its path is joined only if an error names it. */
typedef struct field_at {
    const char *path;
    const char *key;
    char *joined;
} field_at;

static void at_dispose(field_at *at)
{
    free(at->joined);
    at->joined = NULL;
}

/* The string at obj.key (NULL when absent or not a string); @p at remembers where. */
static const char *str_at(field_at *at, const co_jv *obj, const char *path, const char *key)
{
    at_dispose(at);
    at->path = path;
    at->key = key;
    return co_jv_str(obj, key);
}

/* The path of the string last found with @p at, joined on first use. */
static const char *at_path(field_at *at)
{
    if (!at->joined) {
        at->joined = co_schema__join(at->path, at->key);
    }
    return at->joined;
}

static void check_name(vctx *v, const co_jv *obj, const char *path, const char *key, int label)
{
    field_at p = {0};
    const char *s = str_at(&p, obj, path, key);
    if (s && s[0] && !(label ? co_name__is_dns_label(s) : co_name__is_dns_subdomain(s))) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s, "%s",
                                label ? co_name__dns_label_msg : co_name__dns_subdomain_msg);
    }
    at_dispose(&p);
}

static void check_secret_key(vctx *v, const co_jv *obj, const char *path)
{
    field_at p = {0};
    check_name(v, obj, path, "name", 0);
    const char *key = str_at(&p, obj, path, "key");
    if (key && key[0] && !co_name__is_config_key(key)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), key,
                                "must be a Secret key: at most 253 characters from a-z, A-Z, 0-9, "
                                "'-', '_' and '.', not \".\" or starting with \"..\"");
    }
    at_dispose(&p);
}

/* Each object item of the array at obj.key (at most CO_MAX_SPEC_LIST_ITEMS), with its path. */
#define EACH_ITEM(obj, path, key, fn, ...)                                                         \
    do {                                                                                           \
        const co_jv *arr_ = co_jv__field((obj), (key));                                            \
        if (co_jv_is(arr_, CO_JV_ARRAY)) {                                                         \
            char *apath_ = co_schema__join((path), (key));                                         \
            size_t i_ = 0;                                                                         \
            CO_JV_EACH (item_, arr_) {                                                             \
                if (i_ == CO_MAX_SPEC_LIST_ITEMS) {                                                \
                    break;                                                                         \
                }                                                                                  \
                if (item_->type == CO_JV_OBJECT) {                                                 \
                    char *ipath_ = co_schema__index(apath_, i_);                                   \
                    fn(__VA_ARGS__, item_, ipath_);                                                \
                    free(ipath_);                                                                  \
                }                                                                                  \
                i_++;                                                                              \
            }                                                                                      \
            free(apath_);                                                                          \
        }                                                                                          \
    } while (0)

static void check_secret_name_item(vctx *v, const co_jv *item, const char *path)
{
    check_name(v, item, path, "name", 0);
}

/* --- URLs ---------------------------------------------------------------------------------- */

static int has_space_or_control(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= 0x20 || c == 0x7F) {
            return 1;
        }
    }
    return 0;
}

typedef struct url_parts {
    char scheme[16];
    int has_userinfo;
    int has_password;
    int host_ok;
    int port_ok;
} url_parts;

/* Splits scheme://[user[:password]@]host[:port][/...]; returns 0 when there is no "://". */
static int split_url(url_parts *u, const char *url)
{
    const char *sep = strstr(url, "://");
    memset(u, 0, sizeof(*u));
    if (!sep || sep == url || (size_t)(sep - url) >= sizeof(u->scheme)) {
        return 0;
    }
    for (const char *p = url; p < sep; p++) {
        if (!isalpha((unsigned char)*p) &&
            !(p > url && (isdigit((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.'))) {
            return 0;
        }
        u->scheme[p - url] = (char)tolower((unsigned char)*p);
    }
    const char *auth = sep + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *p = auth; p < auth + alen; p++) {
        if (*p == '@') {
            at = p;
        }
    }
    const char *host = auth;
    if (at) {
        u->has_userinfo = 1;
        u->has_password = memchr(auth, ':', (size_t)(at - auth)) != NULL;
        host = at + 1;
    }
    size_t hlen = (size_t)(auth + alen - host);
    const char *colon = NULL;
    if (hlen > 0 && host[0] == '[') {
        const char *close = memchr(host, ']', hlen);
        if (!close) {
            return 1;
        }
        u->host_ok = close > host + 1;
        colon = close + 1 < host + hlen && close[1] == ':' ? close + 1 : NULL;
        if (close + 1 < host + hlen && !colon) {
            u->host_ok = 0;
        }
    } else {
        colon = memchr(host, ':', hlen);
        size_t name_len = colon ? (size_t)(colon - host) : hlen;
        u->host_ok = name_len > 0;
        for (size_t i = 0; i < name_len; i++) {
            char c = host[i];
            if (!isalnum((unsigned char)c) && c != '-' && c != '.' && c != '_') {
                u->host_ok = 0;
            }
        }
    }
    u->port_ok = 1;
    if (colon) {
        const char *p = colon + 1;
        const char *end = host + hlen;
        long port = 0;
        if (p == end) {
            u->port_ok = 0;
        }
        for (; p < end; p++) {
            if (!isdigit((unsigned char)*p) || (port = port * 10 + (*p - '0')) > 65535) {
                u->port_ok = 0;
                break;
            }
        }
        if (u->port_ok && port == 0) {
            u->port_ok = 0;
        }
    }
    return 1;
}

static void check_http_url(vctx *v, const char *url, const char *path)
{
    url_parts u;
    if (has_space_or_control(url) || !split_url(&u, url)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, path, url,
                                "must be an absolute http or https URL");
        return;
    }
    if (strcmp(u.scheme, "http") != 0 && strcmp(u.scheme, "https") != 0) {
        static const char *const schemes[] = {"http", "https"};
        co_field_errors_unsupported(v->errs, path, u.scheme, schemes, 2);
        return;
    }
    if (u.has_userinfo) {
        co_field_errors_add_novalue(v->errs, CO_FIELD_FORBIDDEN, path,
                                    "credentials in the URL are not allowed");
    } else if (!u.host_ok || !u.port_ok) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, path, url,
                                "must have a valid host and port");
    }
}

static void check_git_url(vctx *v, const char *url, const char *path)
{
    url_parts u;
    if (has_space_or_control(url)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, path, url,
                                "must not contain spaces or control characters");
        return;
    }
    if (!split_url(&u, url)) {
        /* scp-like [user@]host:path */
        const char *colon = strchr(url, ':');
        const char *slash = strchr(url, '/');
        const char *at = strchr(url, '@');
        const char *host = at && at < colon ? at + 1 : url;
        if (!colon || (slash && slash < colon) || colon == host || colon[1] == '\0' ||
            (at && at < colon && memchr(url, ':', (size_t)(at - url)))) {
            co_field_errors_add_str(v->errs, CO_FIELD_INVALID, path, url,
                                    "must be an https, http or ssh URL, or user@host:path");
        }
        return;
    }
    static const char *const schemes[] = {"https", "http", "ssh"};
    int ok = 0;
    for (size_t i = 0; i < CO_ARRAY_SIZE(schemes); i++) {
        ok = ok || strcmp(u.scheme, schemes[i]) == 0;
    }
    if (!ok) {
        co_field_errors_unsupported(v->errs, path, u.scheme, schemes, CO_ARRAY_SIZE(schemes));
        return;
    }
    if (u.has_password || (u.has_userinfo && strcmp(u.scheme, "ssh") != 0)) {
        co_field_errors_add_novalue(v->errs, CO_FIELD_FORBIDDEN, path,
                                    "credentials in the URL are not allowed; use secretRef");
    } else if (!u.host_ok || !u.port_ok) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, path, url,
                                "must have a valid host and port");
    }
}

/* --- small syntaxes ------------------------------------------------------------------------ */

static int is_http_token(const char *s)
{
    if (!*s) {
        return 0;
    }
    for (; *s; s++) {
        if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+.^_`|~-", *s)) {
            return 0;
        }
    }
    return 1;
}

/* git check-ref-format, for branch and tag names */
static int is_git_ref_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || s[0] == '-' || s[0] == '/' || s[n - 1] == '/' || s[n - 1] == '.' ||
        strstr(s, "..") || strstr(s, "@{") || strstr(s, "//") || strcmp(s, "@") == 0 ||
        (n >= 5 && strcmp(s + n - 5, ".lock") == 0)) {
        return 0;
    }
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7F || strchr(" ~^:?*[\\", c)) {
            return 0;
        }
        if (*p == '.' && (p == s || p[-1] == '/')) {
            return 0;
        }
    }
    return 1;
}

static int is_hex_len(const char *s, size_t len)
{
    if (strlen(s) != len) {
        return 0;
    }
    for (; *s; s++) {
        if (!isxdigit((unsigned char)*s)) {
            return 0;
        }
    }
    return 1;
}

static int is_semver_constraint(const char *s)
{
    int digit = 0;
    for (const char *p = s; *p; p++) {
        if (!isalnum((unsigned char)*p) && !strchr(".*+-^~<>=!|, ", *p)) {
            return 0;
        }
        digit = digit || isdigit((unsigned char)*p) || *p == '*' || *p == 'x' || *p == 'X';
    }
    return digit;
}

static int is_env_name(const char *s)
{
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_')) {
        return 0;
    }
    for (const char *p = s; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_') {
            return 0;
        }
    }
    return 1;
}

static int is_kind_name(const char *s)
{
    if (!isalpha((unsigned char)s[0])) {
        return 0;
    }
    for (const char *p = s; *p; p++) {
        if (!isalnum((unsigned char)*p)) {
            return 0;
        }
    }
    return strlen(s) <= 63;
}

static int is_image_tag(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128 || !(isalnum((unsigned char)s[0]) || s[0] == '_')) {
        return 0;
    }
    for (const char *p = s; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-') {
            return 0;
        }
    }
    return 1;
}

static int is_image_digest(const char *s)
{
    const char *colon = strchr(s, ':');
    if (!colon || colon == s || !isalpha((unsigned char)s[0]) || strlen(colon + 1) < 32) {
        return 0;
    }
    for (const char *p = s; p < colon; p++) {
        if (!isalnum((unsigned char)*p) && !strchr("+._-", *p)) {
            return 0;
        }
    }
    return is_hex_len(colon + 1, strlen(colon + 1));
}

/* Label selector strings (kustomize targets): comma-separated terms of the forms key, !key,
 * key=value, key==value, key!=value, key in (v1,v2), key notin (v1,v2). */
static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    return p;
}

static int token_ok(const char *start, size_t n, int is_key)
{
    char *t = co_xstrndup(start, n);
    int ok = is_key ? co_name__is_qualified_name(t) : co_name__is_label_value(t);
    free(t);
    return ok;
}

static size_t token_len(const char *p)
{
    return strcspn(p, " \t,=!()");
}

static int selector_ok(const char *s)
{
    const char *p = skip_ws(s);
    if (!*p) {
        return 1;
    }
    for (;;) {
        p = skip_ws(p);
        int negated = *p == '!';
        if (negated) {
            p = skip_ws(p + 1);
        }
        size_t kl = token_len(p);
        if (kl == 0 || !token_ok(p, kl, 1)) {
            return 0;
        }
        p = skip_ws(p + kl);
        if (!negated && (*p == '=' || (*p == '!' && p[1] == '='))) {
            p += *p == '=' ? (p[1] == '=' ? 2 : 1) : 2;
            p = skip_ws(p);
            size_t vl = token_len(p);
            if (!token_ok(p, vl, 0)) {
                return 0;
            }
            p = skip_ws(p + vl);
        } else if (!negated && (strncmp(p, "in", 2) == 0 || strncmp(p, "notin", 5) == 0)) {
            p = skip_ws(p + (p[0] == 'i' ? 2 : 5));
            if (*p != '(') {
                return 0;
            }
            p++;
            for (;;) {
                p = skip_ws(p);
                size_t vl = token_len(p);
                if (!token_ok(p, vl, 0)) {
                    return 0;
                }
                p = skip_ws(p + vl);
                if (*p == ',') {
                    p++;
                    continue;
                }
                if (*p != ')') {
                    return 0;
                }
                p = skip_ws(p + 1);
                break;
            }
        }
        if (!*p) {
            return 1;
        }
        if (*p != ',') {
            return 0;
        }
        p++;
    }
}

/* --- the spec, field by field -------------------------------------------------------------- */

static void check_path(vctx *v, const char *s, const char *path)
{
    int dotdot = 0;
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, "/");
        dotdot = dotdot || (n == 2 && p[0] == '.' && p[1] == '.');
        p += n;
        while (*p == '/') {
            p++;
        }
    }
    if (s[0] == '/') {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, path, s,
                                "must be a relative path inside the artifact");
    } else if (dotdot) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, path, s,
                                "must not contain '..' elements");
    }
}

static void check_managed_type(vctx *v, const co_jv *item, const char *path)
{
    field_at p = {0};
    const char *group = str_at(&p, item, path, "group");
    if (group && group[0] && strcmp(group, "*") != 0) {
        const char *sub = strncmp(group, "*.", 2) == 0 ? group + 2 : group;
        if (!co_name__is_dns_subdomain(sub)) {
            co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), group,
                                    "must be an API group (a DNS subdomain, empty for the core "
                                    "group), *, or *.<suffix>");
        }
    }
    at_dispose(&p);
    const char *kind = str_at(&p, item, path, "kind");
    if (kind && strcmp(kind, "*") != 0 && !is_kind_name(kind)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), kind,
                                "must be a kind (letters and digits, starting with a letter) or *");
    }
    at_dispose(&p);
}

static void check_flux_ref(vctx *v, const co_jv *ref, const char *path)
{
    check_name(v, ref, path, "namespace", 1);
    check_name(v, ref, path, "name", 0);
}

static void check_http_repository(vctx *v, const co_jv *h, const char *path)
{
    field_at p = {0};
    const char *url = str_at(&p, h, path, "url");
    if (url && url[0]) {
        check_http_url(v, url, at_path(&p));
    }
    at_dispose(&p);
    static const char *const headers[] = {"digestHeader", "revisionHeader"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(headers); i++) {
        const char *hv = str_at(&p, h, path, headers[i]);
        if (hv && hv[0] && !is_http_token(hv)) {
            co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), hv,
                                    "must be an HTTP header name");
        }
        at_dispose(&p);
    }
}

static void check_git(vctx *v, const co_jv *g, const char *path)
{
    field_at p = {0};
    const char *url = str_at(&p, g, path, "url");
    if (url && url[0]) {
        check_git_url(v, url, at_path(&p));
    }
    at_dispose(&p);
    const co_jv *ref = co_jv__field(g, "ref");
    char *rpath = co_schema__join(path, "ref");
    const char *s;
    if ((s = str_at(&p, ref, rpath, "branch")) && s[0] && !is_git_ref_name(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                "must be a valid branch name");
    }
    at_dispose(&p);
    if ((s = str_at(&p, ref, rpath, "tag")) && s[0] && !is_git_ref_name(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                "must be a valid tag name");
    }
    at_dispose(&p);
    if ((s = str_at(&p, ref, rpath, "semver")) && s[0] && !is_semver_constraint(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                "must be a semantic version constraint such as >=1.2.0 <2.0.0");
    }
    at_dispose(&p);
    if ((s = str_at(&p, ref, rpath, "commit")) && s[0] && !is_hex_len(s, 40) &&
        !is_hex_len(s, 64)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                "must be a full commit id (40 or 64 hexadecimal digits)");
    }
    at_dispose(&p);
    free(rpath);
    const co_jv *sref = co_jv__field(g, "secretRef");
    if (sref) {
        char *spath = co_schema__join(path, "secretRef");
        check_name(v, sref, spath, "name", 0);
        free(spath);
    }
}

static void check_source_ref(vctx *v, const co_jv *ref, const char *path)
{
    for (int k = 1; k < CO_SOURCE_KIND_COUNT; k++) {
        const co_jv *var = co_jv__field(ref, co_source_kind_name((co_source_kind)k));
        if (!co_jv_is(var, CO_JV_OBJECT)) {
            continue;
        }
        char *kpath = co_schema__join(path, co_source_kind_name((co_source_kind)k));
        if (k == CO_SOURCE_HTTP_REPOSITORY) {
            check_http_repository(v, var, kpath);
        } else if (k == CO_SOURCE_GIT) {
            check_git(v, var, kpath);
        } else {
            check_flux_ref(v, var, kpath);
        }
        free(kpath);
    }
}

static void check_patch(vctx *v, const co_jv *item, const char *path)
{
    const co_jv *t = co_jv__field(item, "target");
    if (!co_jv_is(t, CO_JV_OBJECT)) {
        return;
    }
    char *tpath = co_schema__join(path, "target");
    field_at p = {0};
    const char *s;
    if ((s = str_at(&p, t, tpath, "group")) && s[0] && !co_name__is_dns_subdomain(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s, "must be an API group");
    }
    at_dispose(&p);
    if ((s = str_at(&p, t, tpath, "version")) && s[0] && !co_name__is_dns_label(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                "must be an API version");
    }
    at_dispose(&p);
    if ((s = str_at(&p, t, tpath, "kind")) && s[0] && !is_kind_name(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s, "must be a kind");
    }
    at_dispose(&p);
    static const char *const selectors[] = {"labelSelector", "annotationSelector"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(selectors); i++) {
        if ((s = str_at(&p, t, tpath, selectors[i])) && !selector_ok(s)) {
            co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                    "must be a label selector such as app=web,tier!=cache or "
                                    "env in (dev,test)");
        }
        at_dispose(&p);
    }
    free(tpath);
}

static void check_image(vctx *v, const co_jv *item, const char *path)
{
    field_at p = {0};
    const char *s;
    if ((s = str_at(&p, item, path, "name")) && s[0] && has_space_or_control(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s, "must be an image name");
    }
    at_dispose(&p);
    if ((s = str_at(&p, item, path, "newName")) && s[0] && has_space_or_control(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s, "must be an image name");
    }
    at_dispose(&p);
    if ((s = str_at(&p, item, path, "newTag")) && s[0] && !is_image_tag(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                "must be an image tag (at most 128 characters from a-z, A-Z, "
                                "0-9, '_', '.' and '-', not starting with '.' or '-')");
    }
    at_dispose(&p);
    if ((s = str_at(&p, item, path, "digest")) && s[0] && !is_image_digest(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                "must be an image digest such as sha256:<64 hexadecimal digits>");
    }
    at_dispose(&p);
}

static void check_post_build(vctx *v, const co_jv *pb, const char *path)
{
    const co_jv *sub = co_jv__field(pb, "substitute");
    if (co_jv_is(sub, CO_JV_OBJECT)) {
        char *spath = co_schema__join(path, "substitute");
        CO_JV_EACH (k, sub) {
            const char *key = k->as.s;
            if (!is_env_name(key)) {
                char *kp = co_schema__join(spath, key);
                co_field_errors_add_str(v->errs, CO_FIELD_INVALID, kp, key,
                                        "must be a variable name: letters, digits and '_', not "
                                        "starting with a digit");
                free(kp);
            }
        }
        free(spath);
    }
    EACH_ITEM(pb, path, "substituteFrom", check_secret_name_item, v);
    EACH_ITEM(pb, path, "patches", check_patch, v);
    EACH_ITEM(pb, path, "images", check_image, v);
}

typedef struct dep_seen {
    char **keys;
    size_t len;
} dep_seen;

static void check_dependency(vctx *v, dep_seen *seen, const co_jv *item, const char *path)
{
    check_name(v, item, path, "namespace", 1);
    check_name(v, item, path, "name", 0);
    const char *name = co_jv_str(item, "name");
    const char *dns = co_jv_str(item, "namespace");
    if (!name || !name[0]) {
        return;
    }
    if (!dns || !dns[0]) {
        dns = v->ns;
    }
    char *key = co_xjoin(dns ? dns : "", '/', name);
    if (v->name && v->ns && strcmp(name, v->name) == 0 && dns && strcmp(dns, v->ns) == 0) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, path, key,
                                "a Component cannot depend on itself");
    }
    for (size_t i = 0; i < seen->len; i++) {
        if (strcmp(seen->keys[i], key) == 0) {
            co_field_errors_add_str(v->errs, CO_FIELD_DUPLICATE, path, key, NULL);
            free(key);
            return;
        }
    }
    seen->keys = co_xreallocarray(seen->keys, seen->len + 1, sizeof(char *));
    seen->keys[seen->len++] = key;
}

/* spec.gracePeriod: the schema checks the form; zero would mean no grace period at all, which
 * leaving the field out says. */
static void check_grace_period(vctx *v, const co_jv *spec)
{
    field_at p = {0};
    const char *s = str_at(&p, spec, "spec", "gracePeriod");
    int64_t ns = 0;
    if (s && co_schema__duration(s, &ns) && ns == 0) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                "must be a positive duration");
    }
    at_dispose(&p);
}

/* How two prerequisites are told apart: the namespace resolved as the controller resolves it
 * for namespaced kinds, the condition type defaulted. */
static char *prerequisite_key(vctx *v, const co_jv *item)
{
    const char *ns = co_jv_str(item, "namespace");
    const char *ct = co_jv_str(item, "conditionType");
    const char *api = co_jv_str(item, "apiVersion");
    const char *kind = co_jv_str(item, "kind");
    const char *name = co_jv_str(item, "name");
    if (!ns || !ns[0]) {
        ns = v->ns;
    }
    return co_xasprintf("%s %s %s%s%s %s", api ? api : "", kind ? kind : "", ns ? ns : "",
                        ns ? "/" : "", name ? name : "", ct ? ct : CO_LIFECYCLE_DEFAULT_CONDITION);
}

static void check_prerequisite(vctx *v, dep_seen *seen, const co_jv *item, const char *path)
{
    field_at p = {0};
    const char *s;
    int bad = 0;
    if ((s = str_at(&p, item, path, "apiVersion")) && s[0] && !co_lifecycle_is_api_version(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                "must be v1 or <group>/<version>, such as apps/v1");
        bad = 1;
    }
    at_dispose(&p);
    if ((s = str_at(&p, item, path, "kind")) && s[0] && !co_lifecycle_is_kind(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                "must be a kind (letters and digits, starting with a letter)");
        bad = 1;
    }
    at_dispose(&p);
    if ((s = str_at(&p, item, path, "conditionType")) && s[0] &&
        !co_lifecycle_is_condition_type(s)) {
        co_field_errors_add_str(v->errs, CO_FIELD_INVALID, at_path(&p), s,
                                "must be a condition type: letters and digits with inner '-', "
                                "'_' and '.', optionally prefixed by a DNS subdomain and '/'");
        bad = 1;
    }
    at_dispose(&p);
    check_name(v, item, path, "namespace", 1);
    check_name(v, item, path, "name", 0);
    const char *name = co_jv_str(item, "name");
    if (bad || !name || !name[0] || !co_jv_str(item, "apiVersion") || !co_jv_str(item, "kind")) {
        return;
    }
    char *key = prerequisite_key(v, item);
    for (size_t i = 0; i < seen->len; i++) {
        if (strcmp(seen->keys[i], key) == 0) {
            co_field_errors_add_str(v->errs, CO_FIELD_DUPLICATE, path, key, NULL);
            free(key);
            return;
        }
    }
    seen->keys = co_xreallocarray(seen->keys, seen->len + 1, sizeof(char *));
    seen->keys[seen->len++] = key;
}

static void seen_dispose(dep_seen *seen)
{
    for (size_t i = 0; i < seen->len; i++) {
        free(seen->keys[i]);
    }
    free(seen->keys);
    seen->keys = NULL;
    seen->len = 0;
}

void co_component__validate_semantics_jv(co_field_errors *errs, const co_jv *obj, const char *ns)
{
    const co_jv *spec = co_jv__field(obj, "spec");
    const co_jv *meta = co_jv__field(obj, "metadata");
    vctx v = {errs, ns ? ns : co_jv_str(meta, "namespace"), co_jv_str(meta, "name")};
    field_at p = {0};
    const char *s;
    if (!co_jv_is(spec, CO_JV_OBJECT)) {
        return;
    }
    check_name(&v, spec, "spec", "namespace", 1);
    check_name(&v, spec, "spec", "name", 0);
    const co_jv *kc = co_jv__field(spec, "kubeConfig");
    const co_jv *sref = co_jv__field(kc, "secretRef");
    if (co_jv_is(sref, CO_JV_OBJECT)) {
        check_secret_key(&v, sref, "spec.kubeConfig.secretRef");
    }
    check_name(&v, spec, "spec", "serviceAccountName", 0);
    EACH_ITEM(spec, "spec", "additionalManagedTypes", check_managed_type, &v);
    const co_jv *src = co_jv__field(spec, "sourceRef");
    if (co_jv_is(src, CO_JV_OBJECT)) {
        check_source_ref(&v, src, "spec.sourceRef");
    }
    if ((s = str_at(&p, spec, "spec", "path")) && s[0]) {
        check_path(&v, s, at_path(&p));
    }
    at_dispose(&p);
    EACH_ITEM(spec, "spec", "valuesFrom", check_secret_key, &v);
    const co_jv *dec = co_jv__field(spec, "decryption");
    if (co_jv_is(dec, CO_JV_OBJECT)) {
        if ((s = str_at(&p, dec, "spec.decryption", "provider")) && s[0] &&
            strcmp(s, "sops") != 0) {
            static const char *const providers[] = {"sops"};
            co_field_errors_unsupported(errs, at_path(&p), s, providers, 1);
        }
        at_dispose(&p);
        const co_jv *dsr = co_jv__field(dec, "secretRef");
        if (co_jv_is(dsr, CO_JV_OBJECT)) {
            check_name(&v, dsr, "spec.decryption.secretRef", "name", 0);
        }
    }
    const co_jv *pb = co_jv__field(spec, "postBuild");
    if (co_jv_is(pb, CO_JV_OBJECT)) {
        check_post_build(&v, pb, "spec.postBuild");
    }
    dep_seen seen = {NULL, 0};
    EACH_ITEM(spec, "spec", "dependencies", check_dependency, &v, &seen);
    seen_dispose(&seen);
    check_grace_period(&v, spec);
    EACH_ITEM(spec, "spec", "prerequisites", check_prerequisite, &v, &seen);
    seen_dispose(&seen);
}

/* ---------------------------------------------------------------------------------------------
 * Validation entry point
 * ------------------------------------------------------------------------------------------- */

static void check_type_meta(co_field_errors *errs, const co_jv *obj)
{
    static const char *const kinds[] = {CO_COMPONENT_KIND};
    static const char *const versions[] = {CO_COMPONENT_V1ALPHA1, CO_COMPONENT_V1BETA1};
    const char *kind = co_jv_str(obj, "kind");
    const char *api = co_jv_str(obj, "apiVersion");
    if (!kind) {
        co_field_errors_add_novalue(errs, CO_FIELD_REQUIRED, "kind", NULL);
    } else if (strcmp(kind, CO_COMPONENT_KIND) != 0) {
        co_field_errors_unsupported(errs, "kind", kind, kinds, 1);
    }
    if (!api) {
        co_field_errors_add_novalue(errs, CO_FIELD_REQUIRED, "apiVersion", NULL);
    } else if (strcmp(api, CO_COMPONENT_V1ALPHA1) != 0 && strcmp(api, CO_COMPONENT_V1BETA1) != 0) {
        co_field_errors_unsupported(errs, "apiVersion", api, versions, 2);
    }
}

/* The schema walk over everything but status (which only the controller writes, through the
 * status subresource). */
static void
check_schema(co_field_errors *errs, const co_jv *obj, const co_schema *root, unsigned mode)
{
    for (const co_schema *f = root->fields; f->name; f++) {
        const co_jv *child = co_jv__field(obj, f->name);
        if (strcmp(f->name, "status") == 0) {
            continue;
        }
        if (!child && (f->flags & CO_SCHEMA_REQUIRED)) {
            co_field_errors_add_novalue(errs, CO_FIELD_REQUIRED, f->name, NULL);
        } else {
            co_schema__check_jv(errs, child, f, f->name, mode);
        }
    }
    if (!(mode & CO_SCHEMA_NO_UNKNOWN)) {
        CO_JV_EACH (k, obj) {
            if (k[1].type != CO_JV_NULL && !co_schema__field(root, k->as.s)) {
                char *p = co_schema__join("", k->as.s);
                co_field_errors_add_novalue(errs, CO_FIELD_FORBIDDEN, p, "unknown field");
                free(p);
            }
        }
    }
}

/* The semantic checks of a v1beta1 object: its spec converted to v1alpha1, checked there, and
 * the paths translated back. */
static void check_beta_semantics(co_field_errors *mine, const co_jv *obj, const char *ns)
{
    const co_jv *spec_jv = co_jv__field(obj, "spec");
    if (!spec_jv) {
        return;
    }
    json_object *spec = co_jv_to_json(spec_jv);
    json_object *alpha_spec = NULL;
    char *errpath = NULL;
    int structural = !co_field_errors_empty(mine);
    int rc =
        co_component__convert_spec(&alpha_spec, spec, CO_API_V1BETA1, CO_API_V1ALPHA1, &errpath);
    if (rc < 0 && !structural) {
        /* not reachable for objects that pass the schema walk, kept as a safety net */
        co_field_errors_add_novalue(mine, CO_FIELD_INVALID, errpath ? errpath : "spec", "%s",
                                    co_error_last());
    } else if (rc == 0) {
        json_object *alpha = json_object_new_object();
        const co_jv *meta = co_jv__field(obj, "metadata");
        co_field_errors sem = CO_FIELD_ERRORS_INIT;
        if (meta) {
            json_object_object_add(alpha, "metadata", co_jv_to_json(meta));
        }
        json_object_object_add(alpha, "spec", alpha_spec);
        co_jdoc *doc = co_jdoc_of_json(alpha);
        co_component__validate_semantics_jv(&sem, co_jdoc_root(doc), ns);
        co_jdoc_free(doc);
        for (size_t i = 0; i < sem.len; i++) {
            char *beta = co_component_path_to_v1beta1(sem.items[i].field);
            co_field_errors_set_field(&sem, i, beta);
            free(beta);
        }
        co_field_errors_move(mine, &sem);
        json_object_put(alpha);
    }
    json_object_put(spec);
    co_error_clear();
    free(errpath);
}

int co_component_validate_jv(co_field_errors *errs,
                             const co_jv *obj,
                             const char *ns,
                             unsigned flags)
{
    co_api_version version = co_component_version_jv(obj);
    unsigned mode = (flags & CO_COMPONENT_ALLOW_UNKNOWN_FIELDS) ? CO_SCHEMA_NO_UNKNOWN : 0;
    co_field_errors mine = CO_FIELD_ERRORS_INIT;
    if (!co_jv_is(obj, CO_JV_OBJECT)) {
        co_field_errors_add_jv(errs, CO_FIELD_INVALID, "<root>", obj, "must be a JSON object");
        return CO_EINVALID;
    }
    if (version == CO_API_UNKNOWN) {
        check_type_meta(errs, obj);
        return CO_EINVALID;
    }
    check_schema(&mine, obj, co_component__schema(version), mode);
    co_component__check_metadata_jv(&mine, co_jv__field(obj, "metadata"));
    if (version == CO_API_V1ALPHA1) {
        co_component__validate_semantics_jv(&mine, obj, ns);
    } else {
        check_beta_semantics(&mine, obj, ns);
    }
    int bad = !co_field_errors_empty(&mine);
    co_field_errors_move(errs, &mine);
    return bad ? CO_EINVALID : 0;
}

int co_component_validate(co_field_errors *errs,
                          const struct json_object *obj,
                          const char *ns,
                          unsigned flags)
{
    co_jdoc *doc = co_jdoc_of_json(obj);
    int rc = co_component_validate_jv(errs, co_jdoc_root(doc), ns, flags);
    co_jdoc_free(doc);
    return rc;
}
