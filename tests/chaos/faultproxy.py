#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A TCP proxy on loopback that injects network faults (docs/chaos.md, "Slow and failing
network"). Bytes are forwarded untouched (TLS passes through), but every PERIOD seconds the
proxy picks a fault at random:

  ok       forward as is (half of the periods)
  latency  hold every chunk 50-800 ms before forwarding it
  reset    close every open connection with an RST (SO_LINGER 0), then forward as is
  stall    forward nothing, in either direction, for the whole period (connections stay open,
           new ones are accepted and wait)

  faultproxy.py LISTEN-PORT TARGET-HOST TARGET-PORT PERIOD-SECONDS STATS-FILE

SIGUSR1 ends the faults (everything is forwarded as is from then on); SIGTERM stops the proxy.
The counts of each fault, and of connections, are written to STATS-FILE as KEY=VALUE lines
every period and at exit.
"""
import asyncio
import random
import signal
import socket
import struct
import sys

LISTEN, HOST, PORT, PERIOD, STATS = (int(sys.argv[1]), sys.argv[2], int(sys.argv[3]),
                                     float(sys.argv[4]), sys.argv[5])

mode = "ok"
faults_on = True
counts = {"ok": 0, "latency": 0, "reset": 0, "stall": 0, "connections": 0, "resets_sent": 0}
conns = set()
resume = None  # an asyncio.Event set when a stall ends


def write_stats():
    with open(STATS + ".tmp", "w") as f:
        for k, v in counts.items():
            f.write("%s=%d\n" % (k, v))
    import os
    os.replace(STATS + ".tmp", STATS)


def rst(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            while mode == "stall":
                await resume.wait()
            if mode == "latency":
                await asyncio.sleep(random.uniform(0.05, 0.8))
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def handle(creader, cwriter):
    counts["connections"] += 1
    while mode == "stall":
        await resume.wait()
    try:
        sreader, swriter = await asyncio.open_connection(HOST, PORT)
    except OSError:
        rst(cwriter)
        return
    pair = (cwriter, swriter)
    conns.add(pair)
    try:
        await asyncio.gather(pipe(creader, swriter), pipe(sreader, cwriter))
    finally:
        conns.discard(pair)


async def scheduler():
    global mode
    while True:
        if faults_on:
            r = random.random()
            mode = "ok" if r < 0.5 else "latency" if r < 0.7 else "reset" if r < 0.85 else "stall"
        else:
            mode = "ok"
        counts[mode] += 1
        if mode == "stall":
            resume.clear()
        else:
            resume.set()
        if mode == "reset":
            for c, s in list(conns):
                rst(c)
                rst(s)
                counts["resets_sent"] += 1
            mode = "ok"
        write_stats()
        await asyncio.sleep(PERIOD)


def stop_faults():
    global faults_on, mode
    faults_on = False
    mode = "ok"
    resume.set()


async def main():
    global resume
    resume = asyncio.Event()
    resume.set()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, stop_faults)
    done = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, done.set)
    server = await asyncio.start_server(handle, "127.0.0.1", LISTEN)
    task = asyncio.create_task(scheduler())
    await done.wait()
    task.cancel()
    server.close()
    write_stats()


if __name__ == "__main__":
    asyncio.run(main())
