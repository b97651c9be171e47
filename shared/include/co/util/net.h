/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file net.h
 * The network deny-list: address ranges that connections to destinations chosen by untrusted
 * input must never reach (cloud metadata services, link-local addresses, whatever the operator
 * names). Those connections are artifact downloads and every redirect they follow
 * (co/source/fetch.h), git remotes (co/source/git.h), and API servers of kubeconfigs from Secrets
 * (co_kube_config_from_untrusted_json()); the controller's own API client is never subject to it.
 *
 * The list is process-wide and set once at start-up (the controller's --deny-cidr flag); it is
 * empty until then, so nothing is denied. Callers check the address a socket is about to
 * connect to, so a name that resolves to a denied address is refused however it was reached
 * (redirects, DNS answers that change between two lookups). IPv4 addresses mapped into IPv6
 * (::ffff:a.b.c.d) and the well-known NAT64 prefix (64:ff9b::a.b.c.d) are also checked as the
 * IPv4 address they reach.
 *
 * Thread-safe: checks take a read lock; co_net_deny_set() is meant for start-up.
 */
#ifndef CO_NET_H
#define CO_NET_H

#include <stdbool.h>
#include <stddef.h>

#include "co/util/common.h"

struct sockaddr;

/**
 * Replaces the deny-list. Each of the @p nspecs strings holds CIDRs separated by commas
 * ("169.254.0.0/16,fe80::/10"); an address without a prefix length stands for itself alone
 * (/32, /128); host bits below the prefix are ignored, as Go's net.ParseCIDR does; blanks
 * around entries and empty entries are skipped, so "" denies nothing.
 * @return 0; CO_EINVALID naming the entry that is not a CIDR (the list is then unchanged).
 */
CO_MUST_CHECK int co_net_deny_set(const char *const *specs, size_t nspecs);

/** Empties the deny-list (tests). */
void co_net_deny_clear(void);

/** Whether anything is denied. */
bool co_net_deny_active(void);

/**
 * Checks the address a socket is about to connect to (AF_INET or AF_INET6; other families are
 * allowed).
 * @return 0 when allowed; CO_EAUTH with "connection to 169.254.169.254 refused: address in
 * denied range 169.254.0.0/16" when denied.
 */
CO_MUST_CHECK int co_net_deny_check(const struct sockaddr *addr, size_t addrlen);

/**
 * Checks every address @p host resolves to: an IP literal (IPv6 with or without brackets) or a
 * name looked up with getaddrinfo(). For destinations reached through a proxy, where the
 * address connected to is the proxy's: the proxy resolves the name again, so this check is as
 * good as the two lookups agree.
 * @return 0 when no address is denied, or the name does not resolve (there is then nothing to
 * connect to); CO_EAUTH as co_net_deny_check().
 */
CO_MUST_CHECK int co_net_deny_check_host(const char *host);

/**
 * Writes the deny-list, normalised ("169.254.0.0/16,fe80::/10"), into @p buf (always
 * NUL-terminated when @p len > 0; cut when too small). For start-up logs.
 */
void co_net_deny_describe(char *buf, size_t len);

#endif
