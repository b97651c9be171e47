#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints a loopback TCP port for a test daemon to listen on.

Asking the kernel for port 0 and closing the socket is not enough when suites run side by
side: the kernel hands out ports from the ephemeral range, which is also where every outgoing
connection (kubectl, the API server's clients) takes its local port, and two suites can be
given the same port before either listens. So the port is taken below the ephemeral range,
and every port handed out is written to a registry shared by the suites of a test run
($CO_TEST_PORT_REGISTRY, guarded by a lock), so no two suites get the same one while the
registry lasts. A port is handed out only if it can be bound on 127.0.0.1 now.
"""
import fcntl
import os
import random
import socket
import sys

# tests/run.sh names the registry for the suites of one run; without it (a script run on its
# own) the range alone keeps clear of outgoing connections.
REGISTRY = os.environ.get("CO_TEST_PORT_REGISTRY", "")
SPAN = 12000  # ports in the range; the registry is emptied once half of them are taken


def port_range():
    lo = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    if lo - SPAN >= 1024:
        return lo - SPAN, lo
    return 1024, 1024 + SPAN  # an unusual ephemeral range: any unprivileged ports


def bindable(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def main():
    lo, hi = port_range()
    if not REGISTRY:
        for _ in range(1000):
            port = random.randrange(lo, hi)
            if bindable(port):
                print(port)
                return 0
        print("no free port in %d-%d" % (lo, hi), file=sys.stderr)
        return 1
    with open(REGISTRY, "a+") as reg:
        fcntl.flock(reg, fcntl.LOCK_EX)
        reg.seek(0)
        taken = {int(w) for w in reg.read().split() if w.isdigit()}
        if len(taken) > SPAN // 2:
            reg.truncate(0)
            taken = set()
        for _ in range(1000):
            port = random.randrange(lo, hi)
            if port not in taken and bindable(port):
                reg.write("%d\n" % port)
                reg.flush()
                print(port)
                return 0
    print("no free port in %d-%d" % (lo, hi), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
