/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lifecycle annotations and labels (docs/lifecycle.md): object modes, the guard text form,
 * skip-reconciliation.
 */
#include "co/api/lifecycle.h"

#include <stdlib.h>
#include <string.h>

#include "co/util/error.h"
#include "schema_lib.h"

const char *co_object_mode_name(co_object_mode m)
{
    switch (m) {
    case CO_MODE_READ_ONLY:
        return "read-only";
    case CO_MODE_DELETE_ONLY:
        return "delete-only";
    case CO_MODE_MANAGED:
    default:
        return NULL;
    }
}

int co_object_mode_parse(co_object_mode *out, const char *value)
{
    *out = CO_MODE_MANAGED;
    if (value && strcmp(value, "read-only") == 0) {
        *out = CO_MODE_READ_ONLY;
        return 0;
    }
    if (value && strcmp(value, "delete-only") == 0) {
        *out = CO_MODE_DELETE_ONLY;
        return 0;
    }
    return co_error_set(CO_EINVALID, "unsupported value \"%.64s\" (read-only or delete-only)",
                        value ? value : "");
}

void co_prerequisite_dispose(co_prerequisite *p)
{
    free(p->api_version);
    free(p->kind);
    free(p->ns);
    free(p->name);
    free(p->condition_type);
    memset(p, 0, sizeof(*p));
}

/* `v1` or `group/version`: a DNS subdomain, a slash, a DNS label; or a DNS label alone. */
bool co_lifecycle_is_api_version(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash) {
        return co_name__is_dns_label(s);
    }
    if (strchr(slash + 1, '/')) {
        return false;
    }
    char *group = strndup(s, (size_t)(slash - s));
    bool ok = group && co_name__is_dns_subdomain(group) && co_name__is_dns_label(slash + 1);
    free(group);
    return ok;
}

/* A kind: a letter, then letters and digits (Go identifiers as the API server accepts them). */
bool co_lifecycle_is_kind(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))) {
        return false;
    }
    size_t n = 0;
    for (; *s; s++, n++) {
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9'))) {
            return false;
        }
    }
    return n <= 63;
}

/* A condition type: a qualified name as metav1.Condition allows (prefix/name or name). */
bool co_lifecycle_is_condition_type(const char *s)
{
    const char *name = strrchr(s, '/');
    if (name) {
        char *prefix = strndup(s, (size_t)(name - s));
        bool ok = prefix && co_name__is_dns_subdomain(prefix);
        free(prefix);
        if (!ok) {
            return false;
        }
        name++;
    } else {
        name = s;
    }
    size_t n = strlen(name);
    if (n == 0 || n > 316) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !((c == '-' || c == '_' || c == '.') && i > 0 && i + 1 < n)) {
            return false;
        }
    }
    return true;
}

int co_guard_parse(co_prerequisite *out, const char *text)
{
    memset(out, 0, sizeof(*out));
    if (!text) {
        return co_error_set(CO_EINVALID, "empty guard");
    }
    if (strlen(text) > CO_LIFECYCLE_GUARD_MAX) {
        return co_error_set(CO_EINVALID, "guard longer than %d bytes", CO_LIFECYCLE_GUARD_MAX);
    }
    char *copy = co_xstrdup(text);
    char *fields[5] = {NULL};
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (n == CO_ARRAY_SIZE(fields)) {
            n++;
            break;
        }
        fields[n++] = tok;
    }
    int rc = 0;
    if (n < 3 || n > 4) {
        rc = co_error_set(CO_EINVALID,
                          "guard \"%.128s\": expected \"<apiVersion> <Kind> [<namespace>/]<name> "
                          "[<conditionType>]\"",
                          text);
    } else if (!co_lifecycle_is_api_version(fields[0])) {
        rc = co_error_set(CO_EINVALID, "guard: apiVersion \"%.128s\" is not v1 or group/version",
                          fields[0]);
    } else if (!co_lifecycle_is_kind(fields[1])) {
        rc = co_error_set(CO_EINVALID, "guard: kind \"%.128s\" is not a kind name", fields[1]);
    } else if (n == 4 && !co_lifecycle_is_condition_type(fields[3])) {
        rc = co_error_set(CO_EINVALID, "guard: condition type \"%.128s\" is not a qualified name",
                          fields[3]);
    }
    const char *name = n >= 3 ? fields[2] : "";
    char *ns = NULL;
    if (rc == 0) {
        const char *slash = strchr(name, '/');
        if (slash) {
            ns = strndup(name, (size_t)(slash - name));
            name = slash + 1;
            if (!ns || !co_name__is_dns_label(ns)) {
                rc = co_error_set(CO_EINVALID, "guard: namespace \"%.64s\" is not a DNS label",
                                  ns ? ns : "");
            }
        }
    }
    if (rc == 0 && (strchr(name, '/') || !co_name__is_dns_subdomain(name))) {
        rc = co_error_set(CO_EINVALID, "guard: name \"%.128s\" is not a DNS subdomain", name);
    }
    if (rc == 0) {
        out->api_version = co_xstrdup(fields[0]);
        out->kind = co_xstrdup(fields[1]);
        out->ns = ns;
        ns = NULL;
        out->name = co_xstrdup(name);
        out->condition_type = co_xstrdup(n == 4 ? fields[3] : CO_LIFECYCLE_DEFAULT_CONDITION);
    }
    free(ns);
    free(copy);
    return rc;
}

char *co_prerequisite_describe(const co_prerequisite *p)
{
    const char *ns = p->ns && *p->ns ? p->ns : NULL;
    return co_xasprintf("%s %s %s%s%s", p->api_version ? p->api_version : "",
                        p->kind ? p->kind : "", ns ? ns : "", ns ? "/" : "",
                        p->name ? p->name : "");
}

static bool label_true(const co_component *c, const char *key)
{
    for (size_t i = 0; i < c->labels.len; i++) {
        if (strcmp(c->labels.keys[i], key) == 0) {
            return c->labels.values[i] && strcmp(c->labels.values[i], "true") == 0;
        }
    }
    return false;
}

const char *co_component_skip_label(const co_component *c)
{
    static const char *const keys[] = {CO_LIFECYCLE_SKIP_LABEL, CO_LIFECYCLE_SKIP_LABEL_KYMA};
    for (size_t k = 0; k < CO_ARRAY_SIZE(keys); k++) {
        if (label_true(c, keys[k])) {
            return keys[k];
        }
    }
    return NULL;
}

bool co_component_skip_reconciliation(const co_component *c)
{
    return co_component_skip_label(c) != NULL;
}
