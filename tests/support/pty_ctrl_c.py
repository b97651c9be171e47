#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# Runs a command on a pseudo-terminal, as a shell window would (the command leads a new
# session whose controlling terminal is the pty, and is its foreground process group), waits
# until its output shows a text, then types Ctrl-C and lets the terminal driver deliver SIGINT
# to whatever process group holds the terminal then.
#
#   pty_ctrl_c.py LOG READY_TEXT WAIT_READY WAIT_STOP -- CMD...
#
# Everything the terminal shows goes to LOG. The exit status of CMD (the shell's convention:
# 128+N for signal N) is printed on stdout as "exit N"; "ready-timeout" when READY_TEXT did not
# appear within WAIT_READY seconds, "stop-timeout" when CMD had not exited WAIT_STOP seconds
# after Ctrl-C. In both cases the session is killed. Both waits are bounds against a hang.
import os
import pty
import select
import signal
import sys
import time


def main():
    log_path, ready, wait_ready, wait_stop = sys.argv[1:5]
    if sys.argv[5] != "--":
        sys.exit("usage: pty_ctrl_c.py LOG READY_TEXT WAIT_READY WAIT_STOP -- CMD...")
    argv = sys.argv[6:]
    pid, fd = pty.fork()
    if pid == 0:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        os.execvp(argv[0], argv)
    log = open(log_path, "wb")
    seen = bytearray()

    def pump(seconds, until=None):
        """Copies the terminal's output to LOG for up to SECONDS; True once UNTIL was seen or
        (without UNTIL) once the terminal closed."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if not select.select([fd], [], [], 0.2)[0]:
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:
                return until is None
            if not data:
                return until is None
            log.write(data)
            log.flush()
            seen.extend(data)
            if until is not None and until in seen:
                return True
        return False

    def reap(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.1)
        return None

    def kill_session():
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)

    if not pump(float(wait_ready), ready.encode()):
        kill_session()
        print("ready-timeout")
        return
    os.write(fd, b"\x03")
    start = time.monotonic()
    pump(float(wait_stop))
    status = reap(max(1.0, float(wait_stop) - (time.monotonic() - start)))
    if status is None:
        kill_session()
        print("stop-timeout")
        return
    log.write(b"\n[exited %.1f s after Ctrl-C]\n" % (time.monotonic() - start))
    print("exit %d" % (status if status >= 0 else 128 - status))


main()
