#!/usr/bin/env python3
"""Prints a TCP port on 127.0.0.1 that nothing listens on, for a server a
script is about to start.

The port comes from below the kernel's ephemeral range: a port the kernel
hands out for a bind to port 0 or an outgoing connection can then never be
the one a script chose for a listener that starts a moment later.
"""
import random
import socket


def ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def main():
    low = ephemeral_low()
    candidates = range(20000, low) if low > 21000 else range(0)
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.choice(candidates) if candidates else 0
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            print(s.getsockname()[1])
            return
        except OSError:
            continue
        finally:
            s.close()
    raise SystemExit("free-port: no free port on 127.0.0.1")


main()
