/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rotation rules, as a pure function from "what the Secret holds, what is configured, what
 * time it is" to "what the Secret must hold next". The manager (certs_manager.h) reads and
 * writes the Secret and injects the bundle; all the judgement is here, so that it can be tested
 * at any point of a certificate's life.
 *
 * The Secret holds the current CA (`ca.crt`, `ca.key`), every earlier CA that is still valid
 * (`ca-previous.crt`), and the serving pair every replica serves (`tls.crt`, `tls.key`). The CA
 * bundle published to the API server is `ca.crt` followed by `ca-previous.crt`.
 *
 * Rules, in order:
 * - the CA is replaced when it is missing, broken, not a CA, its key does not match, or two
 *   thirds of its lifetime have passed; the CA it replaces joins `ca-previous.crt` while it is
 *   valid, and CAs drop out of `ca-previous.crt` once they expire;
 * - the serving certificate is replaced at once when it is missing, broken, expired, does not
 *   verify against the bundle or lacks a wanted name;
 * - it is replaced when two thirds of its lifetime have passed or when it was not signed by the
 *   current CA, but only once the bundle holding the current CA has been published for the
 *   settle delay, so that the API server trusts a new CA before anything signed by it is served.
 */
#ifndef CERTS_CERTS_PLAN_H
#define CERTS_CERTS_PLAN_H

#include <stddef.h>
#include <time.h>

#include "certs/certs.h"
#include "co/util/common.h"

/** The Secret's certificate data (PEM texts; NULL = absent). Strings are owned. */
typedef struct co_certs_data {
    char *ca_crt;      /**< ca.crt: the current CA */
    char *ca_key;      /**< ca.key: its private key */
    char *ca_previous; /**< ca-previous.crt: earlier CAs still trusted */
    char *tls_crt;     /**< tls.crt: the serving certificate */
    char *tls_key;     /**< tls.key: its private key */
} co_certs_data;

/** Frees the strings (wiping the keys) and empties @p d. NULL is a no-op. */
void co_certs_data_dispose(co_certs_data *d);

/** Deep copy. */
void co_certs_data_copy(co_certs_data *out, const co_certs_data *in);

/** What certificates to make. Strings are borrowed. */
typedef struct co_certs_config {
    const char *ca_name;          /**< CN of the CA */
    const char *common_name;      /**< CN of the serving certificate */
    const char *const *dns_names; /**< DNS SANs of the serving certificate */
    size_t ndns;                  /**< number of DNS names */
    const char *const *ip_addrs;  /**< IP SANs */
    size_t nips;                  /**< number of IP addresses */
    co_certs_key_type key_type;   /**< key algorithm for both */
    long long ca_validity_s;      /**< CA lifetime */
    long long cert_validity_s;    /**< serving certificate lifetime */
    long long backdate_s;         /**< notBefore backdating */
    long long settle_s;           /**< how long a bundle must be published before use */
} co_certs_config;

/** Publication state of the bundle (from the Secret's annotations). */
typedef struct co_certs_published {
    const char *bundle_sha256; /**< SHA-256 hex of the bundle last published everywhere */
    time_t since;              /**< when it was, 0 = unknown */
} co_certs_published;

/** What changed. */
enum {
    CO_CERTS_NEW_CA = 1u,           /**< a CA was created (none usable before) */
    CO_CERTS_ROTATED_CA = 2u,       /**< the CA was replaced; the old one stays trusted */
    CO_CERTS_DROPPED_CA = 4u,       /**< expired CAs left the bundle */
    CO_CERTS_NEW_SERVING = 8u,      /**< a serving certificate was issued (none usable before) */
    CO_CERTS_ROTATED_SERVING = 16u, /**< the serving certificate was replaced */
    CO_CERTS_WAITING = 32u,         /**< a serving rotation waits for the bundle to settle */
};

/** The outcome of co_certs_plan(). */
typedef struct co_certs_outcome {
    co_certs_data next; /**< the Secret's data from now on (a copy when unchanged) */
    unsigned changes;   /**< CO_CERTS_* bits */
    char reason[256];   /**< why, for the log ("" when nothing changed) */
} co_certs_outcome;

/** Frees the outcome's data. */
void co_certs_outcome_dispose(co_certs_outcome *o);

/**
 * Applies the rules to @p cur at time @p now.
 * @param cur what the Secret holds (all NULL when there is no Secret)
 * @param pub what has been published
 * @return 0; CO_EINVALID for an unusable configuration; CO_ERROR when GnuTLS fails.
 */
CO_MUST_CHECK int co_certs_plan(co_certs_outcome *out,
                                const co_certs_data *cur,
                                const co_certs_config *cfg,
                                const co_certs_published *pub,
                                time_t now);

/**
 * The bundle to publish for @p d at @p now: ca.crt then ca-previous.crt, valid certificates
 * only, each once. @param[out] out a new string (free()). @return the number of CAs in it
 * (0 when none is valid).
 */
int co_certs_data_bundle(char **out, const co_certs_data *d, time_t now);

/** SHA-256 hex of @p text, into @p out (65 bytes). */
void co_certs_sha256_hex(char out[65], const char *text);

/**
 * When the next rule fires for @p d if nothing else happens (the earliest of: 2/3 of the CA's
 * lifetime, 2/3 of the serving certificate's, the expiry of a previous CA), or 0 when none is
 * known. The manager sleeps until then at most.
 */
time_t co_certs_next_event(const co_certs_data *d);

#endif
