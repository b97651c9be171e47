/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rotation rules of certs_plan.h. Every decision re-reads the PEM it is about, so a Secret
 * edited by hand (or half-written by an older version) is judged on what it holds, not on
 * what we remember writing.
 */
#include "certs/certs_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"

static char *dup_or_null(const char *s)
{
    return s ? co_xstrdup(s) : NULL;
}

static void free_secret_str(char *s)
{
    if (s) {
        co_free_secret(s, strlen(s));
    }
}

void co_certs_data_dispose(co_certs_data *d)
{
    if (!d) {
        return;
    }
    free(d->ca_crt);
    free_secret_str(d->ca_key);
    free(d->ca_previous);
    free(d->tls_crt);
    free_secret_str(d->tls_key);
    memset(d, 0, sizeof(*d));
}

void co_certs_data_copy(co_certs_data *out, const co_certs_data *in)
{
    out->ca_crt = dup_or_null(in->ca_crt);
    out->ca_key = dup_or_null(in->ca_key);
    out->ca_previous = dup_or_null(in->ca_previous);
    out->tls_crt = dup_or_null(in->tls_crt);
    out->tls_key = dup_or_null(in->tls_key);
}

void co_certs_outcome_dispose(co_certs_outcome *o)
{
    if (o) {
        co_certs_data_dispose(&o->next);
    }
}

void co_certs_sha256_hex(char out[65], const char *text)
{
    co_sha256_hex(out, text, strlen(text));
}

int co_certs_data_bundle(char **out, const co_certs_data *d, time_t now)
{
    co_buf b = CO_BUF_INIT(CO_MAX_PEM_FILE);
    const char *parts[2] = {d->ca_crt, d->ca_previous};
    int n = co_certs_bundle(&b, parts, 2, now);
    if (n < 0) {
        co_error_clear();
        n = 0;
        co_buf_reset(&b);
    }
    *out = co_buf_take(&b, NULL);
    return n;
}

/* Whether two thirds of [not_before, not_after] have passed at @p now. */
static int past_two_thirds(const co_certs_info *i, time_t now)
{
    long long life = (long long)i->not_after - (long long)i->not_before;
    return (long long)now >= (long long)i->not_before + (life * 2) / 3;
}

static time_t two_thirds(const co_certs_info *i)
{
    long long life = (long long)i->not_after - (long long)i->not_before;
    return (time_t)((long long)i->not_before + (life * 2) / 3);
}

/* A usable CA: parses, is a CA, the key matches, still valid. */
static int ca_usable(co_certs_info *info, const co_certs_data *d, time_t now)
{
    if (!d->ca_crt || !d->ca_key) {
        return 0;
    }
    if (co_certs_inspect(info, d->ca_crt, strlen(d->ca_crt)) < 0 || !info->is_ca ||
        co_certs_check_pair(d->ca_crt, d->ca_key) < 0 || info->not_after <= now) {
        co_error_clear();
        return 0;
    }
    return 1;
}

/* The SAN line co_certs_inspect() shows for a certificate issued with @p cfg's names. */
static void wanted_sans(char *out, size_t size, const co_certs_config *cfg)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < cfg->ndns + cfg->nips; i++) {
        int w = i < cfg->ndns ? snprintf(out + len, size - len, "%sDNS:%s", len ? ", " : "",
                                         cfg->dns_names[i])
                              : snprintf(out + len, size - len, "%sIP Address:%s", len ? ", " : "",
                                         cfg->ip_addrs[i - cfg->ndns]);
        if (w < 0 || (size_t)w >= size - len) {
            return;
        }
        len += (size_t)w;
    }
}

static void add_reason(co_certs_outcome *o, const char *text)
{
    size_t len = strlen(o->reason);
    snprintf(o->reason + len, sizeof(o->reason) - len, "%s%s", len ? "; " : "", text);
}

static int issue_serving(co_certs_outcome *o, const co_certs_config *cfg, time_t now)
{
    co_certs_pair ca = {o->next.ca_crt, o->next.ca_key};
    co_certs_request req = {
        .common_name = cfg->common_name,
        .dns_names = cfg->dns_names,
        .ndns = cfg->ndns,
        .ip_addrs = cfg->ip_addrs,
        .nips = cfg->nips,
        .key_type = cfg->key_type,
        .now = now,
        .validity_s = cfg->cert_validity_s,
        .backdate_s = cfg->backdate_s,
    };
    co_certs_pair leaf = {0};
    int rc = co_certs_create_serving(&leaf, &ca, &req);
    if (rc < 0) {
        return co_error_wrap("cannot issue the serving certificate");
    }
    free(o->next.tls_crt);
    free_secret_str(o->next.tls_key);
    o->next.tls_crt = leaf.cert_pem;
    o->next.tls_key = leaf.key_pem;
    return 0;
}

int co_certs_plan(co_certs_outcome *out,
                  const co_certs_data *cur,
                  const co_certs_config *cfg,
                  const co_certs_published *pub,
                  time_t now)
{
    co_certs_outcome o;
    memset(&o, 0, sizeof(o));
    co_certs_data_copy(&o.next, cur);
    int rc = 0;
    char *bundle = NULL;

    /* 1. the CA */
    co_certs_info ca;
    int had_ca = cur->ca_crt != NULL;
    if (!ca_usable(&ca, cur, now) || past_two_thirds(&ca, now)) {
        co_certs_request req = {
            .common_name = cfg->ca_name,
            .key_type = cfg->key_type,
            .now = now,
            .validity_s = cfg->ca_validity_s,
            .backdate_s = cfg->backdate_s,
        };
        co_certs_pair pair = {0};
        if ((rc = co_certs_create_ca(&pair, &req)) < 0) {
            co_error_wrap("cannot create the CA");
            goto done;
        }
        /* The CA being replaced stays trusted while it is valid. */
        co_buf prev = CO_BUF_INIT(CO_MAX_PEM_FILE);
        const char *parts[2] = {cur->ca_crt, cur->ca_previous};
        int nprev = co_certs_bundle(&prev, parts, 2, now);
        free(o.next.ca_crt);
        free_secret_str(o.next.ca_key);
        free(o.next.ca_previous);
        o.next.ca_crt = pair.cert_pem;
        o.next.ca_key = pair.key_pem;
        o.next.ca_previous = nprev > 0 ? co_buf_take(&prev, NULL) : NULL;
        co_buf_dispose(&prev);
        co_error_clear();
        if (had_ca && ca_usable(&ca, cur, now)) {
            o.changes |= CO_CERTS_ROTATED_CA;
            add_reason(&o, "CA rotated: two thirds of its lifetime passed");
        } else {
            o.changes |= CO_CERTS_NEW_CA;
            add_reason(&o, had_ca ? "CA replaced: the stored one is unusable" : "CA created");
        }
        if ((rc = co_certs_inspect(&ca, o.next.ca_crt, strlen(o.next.ca_crt))) < 0) {
            goto done;
        }
    } else if (cur->ca_previous) {
        /* 2. expired CAs leave */
        co_buf prev = CO_BUF_INIT(CO_MAX_PEM_FILE);
        const char *parts[1] = {cur->ca_previous};
        int nprev = co_certs_bundle(&prev, parts, 1, now);
        int before = co_certs_count(cur->ca_previous, strlen(cur->ca_previous));
        co_error_clear();
        if (nprev != before) {
            free(o.next.ca_previous);
            o.next.ca_previous = nprev > 0 ? co_buf_take(&prev, NULL) : NULL;
            o.changes |= CO_CERTS_DROPPED_CA;
            add_reason(&o, "expired CA removed from the bundle");
        }
        co_buf_dispose(&prev);
    }

    /* 3. the serving certificate */
    co_certs_data_bundle(&bundle, &o.next, now);
    char sans[sizeof(((co_certs_info *)0)->sans)];
    wanted_sans(sans, sizeof(sans), cfg);
    co_certs_info leaf;
    int usable = cur->tls_crt && cur->tls_key &&
                 co_certs_inspect(&leaf, cur->tls_crt, strlen(cur->tls_crt)) == 0 &&
                 co_certs_check_pair(cur->tls_crt, cur->tls_key) == 0 &&
                 co_certs_verify(cur->tls_crt, bundle, NULL, now) == 0 && !strcmp(leaf.sans, sans);
    co_error_clear();
    if (!usable) {
        if ((rc = issue_serving(&o, cfg, now)) < 0) {
            goto done;
        }
        o.changes |= CO_CERTS_NEW_SERVING;
        add_reason(&o, cur->tls_crt ? "serving certificate replaced: the stored one is unusable "
                                      "or lacks a wanted name"
                                    : "serving certificate issued");
    } else {
        int by_current = !strcmp(leaf.issuer, ca.subject) &&
                         co_certs_verify(cur->tls_crt, o.next.ca_crt, NULL, now) == 0;
        co_error_clear();
        int due = past_two_thirds(&leaf, now) || !by_current;
        char hash[65];
        co_certs_sha256_hex(hash, bundle);
        int settled = pub && pub->bundle_sha256 && !strcmp(pub->bundle_sha256, hash) &&
                      pub->since > 0 && (long long)now >= (long long)pub->since + cfg->settle_s;
        if (due && settled) {
            if ((rc = issue_serving(&o, cfg, now)) < 0) {
                goto done;
            }
            o.changes |= CO_CERTS_ROTATED_SERVING;
            add_reason(&o, by_current ? "serving certificate rotated: two thirds of its lifetime "
                                        "passed"
                                      : "serving certificate re-issued by the new CA");
        } else if (due) {
            o.changes |= CO_CERTS_WAITING;
        }
    }
    *out = o;
    memset(&o, 0, sizeof(o));
done:
    free(bundle);
    co_certs_outcome_dispose(&o);
    return rc;
}

time_t co_certs_next_event(const co_certs_data *d)
{
    time_t next = 0;
    co_certs_info i;
    if (d->ca_crt && co_certs_inspect(&i, d->ca_crt, strlen(d->ca_crt)) == 0) {
        next = two_thirds(&i);
    }
    if (d->tls_crt && co_certs_inspect(&i, d->tls_crt, strlen(d->tls_crt)) == 0) {
        time_t t = two_thirds(&i);
        next = next == 0 || t < next ? t : next;
    }
    if (d->ca_previous && co_certs_inspect(&i, d->ca_previous, strlen(d->ca_previous)) == 0) {
        /* the first one is enough: the manager comes back after each change anyway */
        next = next == 0 || i.not_after < next ? i.not_after : next;
    }
    co_error_clear();
    return next;
}
