/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The network deny-list: CIDR parsing and its errors, IPv4 and IPv6 matching at the edges of
 * a range, IPv4 reached through IPv6 (mapped and NAT64), and host checks by literal and name.
 */
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "co/util/error.h"
#include "co/util/net.h"
#include "tests/support/test_support.h"

static int teardown(void **state)
{
    (void)state;
    co_net_deny_clear();
    return 0;
}

static void deny(const char *cidrs)
{
    assert_co_pass(co_net_deny_set(&cidrs, 1));
}

/* co_net_deny_check() on the address @p ip (IPv4 or IPv6 text) as a socket address. */
static int check(const char *ip)
{
    struct sockaddr_in in = {.sin_family = AF_INET};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
    if (inet_pton(AF_INET, ip, &in.sin_addr) == 1) {
        return co_net_deny_check((const struct sockaddr *)&in, sizeof(in));
    }
    if (inet_pton(AF_INET6, ip, &in6.sin6_addr) != 1) {
        fail_msg("%s is not an address", ip);
    }
    return co_net_deny_check((const struct sockaddr *)&in6, sizeof(in6));
}

static void assert_denied(const char *ip, const char *range)
{
    assert_co_fail_with(CO_EAUTH, check(ip));
    char *want = co_xasprintf("connection to %s refused: address in denied range %s", ip, range);
    assert_string_equal(co_error_last(), want);
    free(want);
}

static void test_net__ipv4_ranges(void **state)
{
    (void)state;
    deny("169.254.0.0/16, 100.100.100.200/32,10.1.2.3");
    assert_true(co_net_deny_active());
    assert_denied("169.254.169.254", "169.254.0.0/16");
    assert_denied("169.254.0.0", "169.254.0.0/16");
    assert_denied("169.254.255.255", "169.254.0.0/16");
    assert_co_pass(check("169.253.255.255"));
    assert_co_pass(check("169.255.0.0"));
    assert_denied("100.100.100.200", "100.100.100.200/32");
    assert_co_pass(check("100.100.100.201"));
    assert_denied("10.1.2.3", "10.1.2.3/32");
    assert_co_pass(check("10.1.2.4"));
    /* IPv6 addresses are not IPv4 ranges, unless they reach IPv4 */
    assert_co_pass(check("::a9fe:a9fe"));
    assert_co_pass(check("fe80::1"));
}

static void test_net__ipv6_ranges(void **state)
{
    (void)state;
    deny("fe80::/10,fd00:ec2::254/128");
    assert_denied("fe80::1", "fe80::/10");
    assert_denied("febf:ffff::1", "fe80::/10");
    assert_co_pass(check("fec0::1"));
    assert_co_pass(check("fe7f:ffff::1"));
    assert_denied("fd00:ec2::254", "fd00:ec2::254/128");
    assert_co_pass(check("fd00:ec2::253"));
    assert_co_pass(check("169.254.169.254"));
}

static void test_net__ipv4_through_ipv6(void **state)
{
    (void)state;
    deny("169.254.0.0/16");
    /* a mapped address on an AF_INET6 socket reaches the IPv4 host */
    assert_denied("::ffff:169.254.169.254", "169.254.0.0/16");
    /* so does the well-known NAT64 prefix, through a NAT64 gateway */
    assert_denied("64:ff9b::a9fe:a9fe", "169.254.0.0/16");
    assert_co_pass(check("::ffff:169.253.0.1"));
    assert_co_pass(check("64:ff9c::a9fe:a9fe"));
    /* a range written in mapped form is the IPv4 range it covers */
    deny("::ffff:100.100.100.200/128,::ffff:192.0.2.0/120");
    char text[128];
    co_net_deny_describe(text, sizeof(text));
    assert_string_equal(text, "100.100.100.200/32,192.0.2.0/24");
    assert_denied("100.100.100.200", "100.100.100.200/32");
    assert_denied("192.0.2.77", "192.0.2.0/24");
    assert_denied("::ffff:192.0.2.1", "192.0.2.0/24");
}

static void test_net__parsing(void **state)
{
    (void)state;
    /* host bits are dropped, as Go's net.ParseCIDR does; blanks and empty entries are skipped */
    const char *specs[] = {" 169.254.1.1/16 , ,fe80::1/10", "", "0.0.0.0/0"};
    assert_co_pass(co_net_deny_set(specs, 3));
    char text[128];
    co_net_deny_describe(text, sizeof(text));
    assert_string_equal(text, "169.254.0.0/16,fe80::/10,0.0.0.0/0");
    assert_denied("8.8.8.8", "0.0.0.0/0");
    /* a text that does not fit is cut, never overrun */
    char small[8];
    co_net_deny_describe(small, sizeof(small));
    assert_string_equal(small, "169.254");
    /* "" denies nothing */
    deny("");
    assert_false(co_net_deny_active());
    assert_co_pass(check("169.254.169.254"));
}

static void test_net__bad_entries_are_named(void **state)
{
    (void)state;
    deny("10.0.0.0/8");
    static const struct {
        const char *spec, *message;
    } bad[] = {
        {"169.254.0.0/33", "\"169.254.0.0/33\" is not a CIDR: the prefix length is over 32"},
        {"::/129", "\"::/129\" is not a CIDR: the prefix length is over 128"},
        {"1.2.3.4/", "\"1.2.3.4/\" is not a CIDR: bad prefix length"},
        {"1.2.3.4/-1", "\"1.2.3.4/-1\" is not a CIDR: bad prefix length"},
        {"1.2.3.4/8x", "\"1.2.3.4/8x\" is not a CIDR: bad prefix length"},
        {"fe80::/10,metadata.internal",
         "\"metadata.internal\" is not a CIDR: \"metadata.internal\" is not an IP address"},
        {"1.2.3/24", "\"1.2.3/24\" is not a CIDR: \"1.2.3\" is not an IP address"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(bad); i++) {
        assert_co_fail_with(CO_EINVALID, co_net_deny_set(&bad[i].spec, 1));
        assert_string_equal(co_error_last(), bad[i].message);
    }
    /* a failed set leaves the list as it was */
    char text[64];
    co_net_deny_describe(text, sizeof(text));
    assert_string_equal(text, "10.0.0.0/8");
}

static void test_net__hosts(void **state)
{
    (void)state;
    deny("127.0.0.0/8,::1/128");
    assert_co_fail_with(CO_EAUTH, co_net_deny_check_host("127.0.0.2"));
    assert_string_equal(co_error_last(),
                        "connection to 127.0.0.2 refused: address in denied range 127.0.0.0/8");
    assert_co_fail_with(CO_EAUTH, co_net_deny_check_host("[::1]"));
    assert_contains(co_error_last(), "connection to ::1 refused");
    assert_co_fail_with(CO_EAUTH, co_net_deny_check_host("localhost"));
    /* a name that does not resolve leaves nothing to connect to */
    assert_co_pass(co_net_deny_check_host("nothing.invalid"));
    assert_co_pass(co_net_deny_check_host("192.0.2.1"));
    /* other families are not the list's business */
    struct sockaddr sa = {.sa_family = AF_UNIX};
    assert_co_pass(co_net_deny_check(&sa, sizeof(sa)));
    co_net_deny_clear();
    assert_co_pass(co_net_deny_check_host("127.0.0.2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_net__ipv4_ranges, teardown),
        cmocka_unit_test_teardown(test_net__ipv6_ranges, teardown),
        cmocka_unit_test_teardown(test_net__ipv4_through_ipv6, teardown),
        cmocka_unit_test_teardown(test_net__parsing, teardown),
        cmocka_unit_test_teardown(test_net__bad_entries_are_named, teardown),
        cmocka_unit_test_teardown(test_net__hosts, teardown),
    };
    return cmocka_run_group_tests_name("net", tests, NULL, NULL);
}
