#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""QMP for the guest, through the host.

QEMU's QMP listens only on the host, and one client at a time per socket. The
runner gives QEMU a QMP socket reserved for this relay and a virtio-serial port
(org.iotuned.qmp) whose host end is a second unix socket:

  host:  qmp.py relay --qmp QMP_SOCK --guest PORT_SOCK --events FILE
         negotiates capabilities once, then forwards each JSON line the guest
         writes to QMP and each reply back; asynchronous events are not
         forwarded (a guest that is not reading would fill the port) but logged
         to FILE with their timestamps.
  guest: qmp.py call '{"execute": "device_add", "arguments": {...}}'
         adds a unique "id", writes one line to /dev/virtio-ports/org.iotuned.qmp,
         reads lines until the reply with that id (stale replies of an earlier,
         timed-out call are skipped), prints "return" as JSON, or the error on
         stderr with exit status 1.

Standard library only: it runs with Debian's /usr/bin/python3 on both sides.
"""

import argparse
import errno
import json
import os
import select
import socket
import sys
import time

PORT = "/dev/virtio-ports/org.iotuned.qmp"


def connect_unix(path, timeout):
    deadline = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class LineReader:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def lines(self):
        """Read what is available; return complete lines, or None on EOF."""
        data = self.sock.recv(65536)
        if not data:
            return None
        self.buf += data
        *done, self.buf = self.buf.split(b"\n")
        return [l for l in done if l.strip()]


def relay(args):
    qmp = connect_unix(args.qmp, args.connect_timeout)
    qr = LineReader(qmp)
    events = open(args.events, "a", buffering=1)

    def qmp_lines_until(pred):
        while True:
            lines = qr.lines()
            if lines is None:
                raise SystemExit("qmp relay: QEMU closed QMP during negotiation")
            for l in lines:
                if pred(json.loads(l)):
                    return

    qmp_lines_until(lambda m: "QMP" in m)  # greeting
    qmp.sendall(b'{"execute": "qmp_capabilities"}\n')
    qmp_lines_until(lambda m: "return" in m or "error" in m)

    guest = connect_unix(args.guest, args.connect_timeout)
    gr = LineReader(guest)
    print("qmp relay: connected", file=sys.stderr, flush=True)

    while True:
        ready, _, _ = select.select([qmp, guest], [], [])
        if guest in ready:
            lines = gr.lines()
            if lines is None:
                return 0  # QEMU went away
            for l in lines:
                try:
                    json.loads(l)
                except ValueError as e:
                    reply = {"error": {"class": "RelayError",
                                       "desc": "invalid JSON from guest: %s" % e}}
                    guest.sendall(json.dumps(reply).encode() + b"\n")
                    continue
                events.write("%.6f guest> %s\n" % (time.time(), l.decode(errors="replace")))
                qmp.sendall(l + b"\n")
        if qmp in ready:
            lines = qr.lines()
            if lines is None:
                return 0
            for l in lines:
                msg = json.loads(l)
                if "event" in msg:
                    events.write("%.6f event %s\n" % (time.time(), l.decode(errors="replace")))
                    continue
                events.write("%.6f reply %s\n" % (time.time(), l.decode(errors="replace")))
                guest.sendall(l + b"\n")


def call(args):
    try:
        cmd = json.loads(args.json)
    except ValueError as e:
        print("qmp: not JSON: %s: %s" % (e, args.json), file=sys.stderr)
        return 2
    if not isinstance(cmd, dict) or "execute" not in cmd:
        print('qmp: expected {"execute": ...}, got: %s' % args.json, file=sys.stderr)
        return 2
    cmd["id"] = "g%d-%d" % (os.getpid(), time.monotonic_ns())

    deadline = time.monotonic() + args.timeout
    while True:
        try:
            fd = os.open(args.port, os.O_RDWR | os.O_NOCTTY)
            break
        except OSError as e:
            # The port admits one opener at a time (EBUSY); it may also not be
            # there yet early in boot (ENOENT until udev made the link).
            if e.errno not in (errno.EBUSY, errno.ENOENT) or time.monotonic() > deadline:
                print("qmp: cannot open %s: %s" % (args.port, e), file=sys.stderr)
                return 1
            time.sleep(0.1)
    try:
        os.write(fd, json.dumps(cmd).encode() + b"\n")
        buf = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                print("qmp: no reply within %ss to %s (is the host relay running?)"
                      % (args.timeout, args.json), file=sys.stderr)
                return 1
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                continue
            buf += os.read(fd, 65536)
            *lines, buf = buf.split(b"\n")
            for l in lines:
                if not l.strip():
                    continue
                try:
                    msg = json.loads(l)
                except ValueError:
                    continue
                if msg.get("id") not in (cmd["id"], None):
                    continue  # reply to an earlier call that gave up
                if "error" in msg:
                    err = msg["error"]
                    print("qmp: %s: %s" % (err.get("class"), err.get("desc")), file=sys.stderr)
                    return 1
                if "return" in msg:
                    print(json.dumps(msg["return"]))
                    return 0
    finally:
        os.close(fd)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("relay", help="host side")
    r.add_argument("--qmp", required=True)
    r.add_argument("--guest", required=True)
    r.add_argument("--events", required=True)
    r.add_argument("--connect-timeout", type=float, default=30)
    c = sub.add_parser("call", help="guest side")
    c.add_argument("json")
    c.add_argument("--port", default=PORT)
    c.add_argument("--timeout", type=float, default=30)
    args = p.parse_args()
    if args.cmd == "call":
        return call(args)
    try:
        return relay(args)
    except (OSError, ValueError) as e:
        # QEMU exiting (or never starting) ends the relay; say so in one line.
        print("qmp relay: stopped: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
