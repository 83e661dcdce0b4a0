#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""iotuned on umockdev fixture devices: start, hotplug through synthesized uevents,
drift correction, back-off, reload (good and bad) and restore on SIGTERM.

The real-kernel version of these claims runs in the VM suite (tests/vm/); this one
checks the daemon's logic quickly and deterministically.

Run as: umockdev-wrapper /usr/bin/python3 tests/integration/test_daemon.py IOTUNED IOTUNECTL
"""
import json
import os
import shutil
import signal
import select
import socket
import struct
import threading
import time
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testbed import FakeNvme, Testbed  # noqa: E402

IOTUNED = IOTUNECTL = None
INTERVAL = 0.2  # reassert.interval in these tests


def wait_for(pred, timeout=10.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class FakeIrqbalance(threading.Thread):
    """irqbalance's control socket as 1.9 implements it: one command per
    connection, SCM_CREDENTIALS required (uid 0), "setup" answers the ban list,
    "settings ban irqs ..." replaces it (NONE empties it)."""

    def __init__(self, root, banned, hold=False):
        super().__init__(daemon=True)
        # hold: the first "setup" is answered only once release() is called, as a
        # busy irqbalance answers from its rebalancing loop seconds later
        self.hold = threading.Event() if hold else None
        self.held = None  # the connection whose answer is held
        d = os.path.join(root, "run/irqbalance")
        os.makedirs(d, exist_ok=True)
        # The daemon checks /proc/<pid> exists: use our own, live PID.
        self.path = os.path.join(d, f"irqbalance{os.getpid()}.sock")
        self.banned = list(banned)
        self.commands = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(self.path)
        self.sock.listen(8)

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                msg, anc, _, _ = conn.recvmsg(4096, socket.CMSG_SPACE(12))
                if self.hold and not self.hold.is_set() and msg == b"setup":
                    self.held = conn
                    self.hold.wait()
                creds = [struct.unpack("3i", data[:12]) for lvl, typ, data in anc
                         if lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS]
                if not creds or creds[0][1] != 0:
                    continue  # irqbalance drops senders that are not root
                cmd = msg.decode()
                self.commands.append(cmd)
                if cmd == "setup":
                    irqs = "".join(f"IRQ {i} LOAD 0 DIFF 0 CLASS 0 " for i in self.banned)
                    try:
                        conn.sendall(f"SLEEP 10 {irqs}BANNED 00000000".encode())
                    except OSError:
                        pass  # the asker gave up and closed, as irqbalance finds out
                elif cmd.startswith("settings ban irqs "):
                    rest = cmd[len("settings ban irqs "):].split()
                    self.banned = [] if rest == ["NONE"] else [int(x) for x in rest]

    def held_open(self):
        """Whether the asker still waits on the held connection (has not closed it)."""
        r, _, _ = select.select([self.held], [], [], 0)
        return not r or self.held.recv(1, socket.MSG_PEEK) != b""

    def release(self):
        self.hold.set()

    def stop(self):
        if self.hold:
            self.hold.set()
        self.sock.close()


class DaemonTest(unittest.TestCase):
    def setUp(self):
        self.bed = Testbed()
        self.root = tempfile.mkdtemp(prefix="iotuned-root-")
        self.conf("iotuned.yaml.d/00-test.yaml", f"reassert: {{ interval: {int(INTERVAL * 1000)}ms }}\n")
        self.proc = None
        self.log = open(os.path.join(self.root, "daemon.log"), "w+")

    def tearDown(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)
        del self.bed

    def conf(self, rel, text):
        path = os.path.join(self.root, "etc/iotuned", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # explicit modes whatever the umask: the loader refuses configuration
        # that group or others can write
        d = os.path.dirname(path)
        while d.startswith(self.root) and d != self.root:
            os.chmod(d, 0o755)
            d = os.path.dirname(d)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o644)
        return path

    def start(self, *args):
        # No env= here: umockdev's testbed variables live in the C environment,
        # which a copy of os.environ would miss. Log to stderr, not the journal.
        for var in ("JOURNAL_STREAM", "INVOCATION_ID", "NOTIFY_SOCKET"):
            os.environ.pop(var, None)
        self.proc = subprocess.Popen([IOTUNED, "--root", self.root, *args], stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(lambda: os.path.exists(self.status_path()) or self.proc.poll() is not None, what="status.json")
        self.assertIsNone(self.proc.poll(), f"iotuned exited early:\n{self.daemon_log()}")

    def daemon_log(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def status_path(self):
        return os.path.join(self.root, "run/iotuned/status.json")

    def status(self):
        with open(self.status_path()) as f:
            return json.load(f)

    def ctl(self, *args, expect=0):
        p = subprocess.run([IOTUNECTL, "--root", self.root, *args], capture_output=True, text=True)
        self.assertEqual(p.returncode, expect, f"iotunectl {args}: {p.stdout}{p.stderr}")
        return p

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.proc.wait(timeout=10), 0, self.daemon_log())

    def test_start_tune_drift_restore(self):
        self.bed.nvme(0)
        self.bed.sata("sda")
        self.start()
        st = self.status()
        self.assertEqual({d["device"]: d["profile"] for d in st["devices"]}, {"nvme0n1": "latency", "sda": "throughput"})
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "2")
        self.assertIn("nvme0n1 tuned with profile latency (rule nvme)", self.daemon_log())
        out = self.ctl("status").stdout
        self.assertIn(f"iotuned is running (pid {self.proc.pid}): 2 devices, 0 drifts corrected", out)
        self.assertRegex(out, r"nvme0n1\s+latency\s+nvme\s+4 ok, 4 changed, 1 unsupported\s+0")  # as in --json: "changed" (written, holding) apart from "ok"
        self.assertIn("NVMe controllers:\n  nvme0    0000:01:00.0, QEMU NVMe Ctrl, firmware 8.0.0; "
                      "queues 2 default, 0 read, 0 poll; APST not supported\n", out)

        # someone switches the scheduler back: corrected within an interval or two
        self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
        wait_for(lambda: self.bed.read("nvme0n1", "queue/scheduler") == "none", timeout=5 * INTERVAL + 2,
                 what="scheduler drift corrected")
        # the log line follows the write: wait for it too (slow under ASan on a busy box)
        wait_for(lambda: "nvme0n1: scheduler drifted to mq-deadline (desired none); put back" in self.daemon_log(),
                 what="drift logged")
        wait_for(lambda: self.status()["daemon"]["drifts_corrected"] >= 1, what="drift counted in status")
        sched = [s for d in self.status()["devices"] if d["device"] == "nvme0n1"
                 for s in d["settings"] if s["knob"] == "scheduler"][0]
        self.assertEqual(sched["drifts"], 1)

        self.stop()
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "1")
        self.assertEqual(self.bed.read("sda", "queue/nr_requests"), "64")
        self.assertFalse(os.path.exists(self.status_path()))

    def test_timing_lines_without_debug_output(self):
        """--timing: one line per trigger at info level (the start, each drift
        check, the stop), without the debug messages of -v; with neither, no
        timing line at all."""
        self.bed.nvme(0)  # the root has no proc/interrupts: a debug message says so
        debug = "Cannot read " + os.path.join(self.root, "proc/interrupts")
        runs = {}
        for flags in ((), ("--timing",), ("-v",)):
            self.log.truncate(0)
            self.log.seek(0)
            self.start(*flags)
            wait_for(lambda: "timing: drift check: " in self.daemon_log() if flags else True,
                     timeout=5 * INTERVAL + 2, what="drift check line")
            time.sleep(2 * INTERVAL)
            self.stop()
            runs[flags] = self.daemon_log()
        self.assertNotIn("timing:", runs[()])
        self.assertNotIn(debug, runs[()])
        log = runs[("--timing",)]
        self.assertRegex(log, r"timing: start: [0-9.]+ ms wall, [0-9.]+ ms CPU, 1 disk; config [0-9.]+")
        self.assertRegex(log, r"timing: drift check: [0-9.]+ ms wall, [0-9.]+ ms CPU, 1 disk")
        self.assertRegex(log, r"timing: stop: [0-9.]+ ms wall")
        self.assertNotIn(debug, log)
        self.assertIn(debug, runs[("-v",)])
        self.assertIn("timing: start: ", runs[("-v",)])

    def test_a_held_disk_is_left_alone_until_its_hold_ends(self):
        self.bed.nvme(0)
        self.bed.sata("sda")
        self.start()
        hold_dir = os.path.join(self.root, "run/iotuned/hold")
        hold = os.path.join(hold_dir, "nvme0n1")
        os.makedirs(hold_dir, exist_ok=True)
        # what `iotunectl tune` writes (src/apply/hold.c): this process holds it for two minutes
        with open(hold, "w") as f:
            f.write(f"pid={os.getpid()}\nuntil_usec={int(time.time() * 1e6) + 120 * 10**6}\n")
        wait_for(lambda: f"nvme0n1: held by iotunectl tune (pid {os.getpid()})" in self.daemon_log(),
                 timeout=5 * INTERVAL + 2, what="the hold logged")
        # a measurement's value: not corrected while held (the hold is what keeps it).
        # sda, not held, drifts after it: once sda is put back, a drift check has run
        # since nvme0n1 changed, however slow this machine is.
        self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
        self.bed.write("sda", "queue/scheduler", "[none] mq-deadline")
        wait_for(lambda: "sda: scheduler drifted to none (desired mq-deadline); put back" in self.daemon_log(),
                 timeout=5 * INTERVAL + 2, what="a drift check after the change (sda corrected)")
        self.assertEqual(self.bed.read("nvme0n1", "queue/scheduler"), "none [mq-deadline]", self.daemon_log())
        # released: tuned afresh, which is not drift
        os.unlink(hold)
        wait_for(lambda: "nvme0n1: the hold of iotunectl tune has ended; tuning it again." in self.daemon_log(),
                 timeout=5 * INTERVAL + 2, what="the end of the hold logged")
        wait_for(lambda: self.bed.read("nvme0n1", "queue/scheduler") == "none", what="tuned after the hold")
        self.assertNotIn("nvme0n1: scheduler drifted", self.daemon_log())
        # a hold file that cannot be trusted (a FIFO: reading it would block) is not
        # honoured, and said once
        os.mkfifo(hold)
        self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
        wait_for(lambda: "nvme0n1: scheduler drifted to mq-deadline (desired none); put back" in self.daemon_log(),
                 timeout=5 * INTERVAL + 2, what="drift corrected despite the FIFO")
        time.sleep(2 * INTERVAL)
        self.assertEqual(self.daemon_log().count("nvme0n1: ignoring its hold file"), 1, self.daemon_log())
        self.stop()

    def test_nvme_controller_reset_is_drift_and_stop_restores(self):
        self.bed.nvme(0)
        fake = self.bed.controllers["nvme0"]
        self.conf("profiles/batch.yaml", "extends: latency\nnvme:\n  coalescing: { threshold: 4, time_us: 100 }\n")
        self.conf("iotuned.yaml.d/50-batch.yaml", "default_profile: batch\nrules: []\n")
        self.start()
        self.assertEqual(fake.sets(0x08), [0x0103])
        # A controller reset brings the feature back to its default (Set Features had
        # SV=0): the next drift check sends it again.
        fake.reset()
        wait_for(lambda: fake.sets(0x08) == [0x0103, 0x0103], timeout=5 * INTERVAL + 2,
                 what="coalescing re-asserted after the controller reset")
        wait_for(lambda: "nvme0n1: nvme0 coalescing drifted to off (desired threshold=4,time_us=100); put back"
                 in self.daemon_log(), what="drift logged")
        self.stop()
        self.assertEqual(fake.sets(0x08)[-1], 0x0000, "stop restores the original (off)")

    def test_a_controller_without_controller_rows_is_never_asked(self):
        """The daemon sends an admin command (and loads libnvme) only for a row that
        needs the controller's answer; `iotunectl plan` still reports its facts."""
        self.bed.nvme(0)
        fake = self.bed.controllers["nvme0"]
        self.conf("profiles/queues.yaml", "queue: { scheduler: mq-deadline, rq_affinity: 2 }\n")
        self.conf("iotuned.yaml.d/50-queues.yaml", "default_profile: queues\nrules: []\n")
        self.start()
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "2")
        # a drift check, which reads every row, asks nothing either
        self.bed.write("nvme0n1", "queue/rq_affinity", "1")
        wait_for(lambda: "nvme0n1: rq_affinity drifted to 1 (desired 2); put back" in self.daemon_log(),
                 timeout=5 * INTERVAL + 2, what="a drift check put rq_affinity back")
        self.assertEqual(fake.commands, [], "admin commands sent for a profile without controller rows")
        with open(f"/proc/{self.proc.pid}/maps") as f:
            self.assertNotIn("libnvme", f.read())
        nv = [d for d in self.status()["devices"] if d["device"] == "nvme0n1"][0]["facts"]["nvme"]
        self.assertFalse(nv["identified"])
        self.assertIsNone(nv["identify_error"])
        plan = json.loads(self.ctl("--json", "plan").stdout)
        nv = [d for d in plan["devices"] if d["device"] == "nvme0n1"][0]["facts"]["nvme"]
        self.assertTrue(nv["identified"])
        self.assertEqual(nv["granted_io_sq"], 2)
        self.assertTrue(fake.commands, "iotunectl plan identifies the controller")
        self.stop()

    def test_metrics_textfile(self):
        self.bed.nvme(0)
        self.bed.sata("sda")
        self.conf("iotuned.yaml.d/20-metrics.yaml", "metrics:\n  textfile: /var/lib/node-exporter/iotuned.prom\n")
        prom = os.path.join(self.root, "var/lib/node-exporter/iotuned.prom")
        self.start()
        with open(prom) as f:
            text = f.read()
        self.assertIn('iotuned_devices{profile="latency"} 1\n', text)
        self.assertIn('iotuned_devices{profile="throughput"} 1\n', text)
        self.assertIn('iotuned_devices{profile="mixed"} 0\n', text)
        self.assertIn('iotuned_settings{state="ok"} 14\n', text)
        self.assertIn('iotuned_settings{state="unsupported"} 1\n', text)  # APST on a controller without it
        self.assertIn('iotuned_settings{state="failed"} 0\n', text)
        self.assertIn("# TYPE iotuned_drifts_corrected_total counter\niotuned_drifts_corrected_total 0\n", text)
        self.assertRegex(text, r"iotuned_last_reconcile_timestamp_seconds \d+\.\d{6}\n")
        # a drift shows up in the counter (the file is rewritten atomically on change)
        self.bed.write("nvme0n1", "queue/nomerges", "0")
        wait_for(lambda: "iotuned_drifts_corrected_total 1\n" in open(prom).read(), what="metrics updated")
        self.stop()
        self.assertFalse(os.path.exists(prom), "stale metrics must not outlive the daemon")

    def test_conflict_backs_off_and_reports_once(self):
        self.bed.nvme(0)
        self.start()
        # A fighter that reverts the value every time iotuned fixes it.
        deadline = time.monotonic() + 12 * INTERVAL + 3
        reverts = 0
        while time.monotonic() < deadline and "keeps being changed back" not in self.daemon_log():
            if self.bed.read("nvme0n1", "queue/nomerges") == "2":
                self.bed.write("nvme0n1", "queue/nomerges", "0")
                reverts += 1
            time.sleep(INTERVAL / 4)
        self.assertIn("nvme0n1: nomerges keeps being changed back to 0", self.daemon_log())
        self.assertGreaterEqual(reverts, 5)
        # held back: the fighter's next revert stays, and is reported as drifted
        self.bed.write("nvme0n1", "queue/nomerges", "0")
        time.sleep(4 * INTERVAL)
        self.assertEqual(self.bed.read("nvme0n1", "queue/nomerges"), "0")
        nm = [s for s in self.status()["devices"][0]["settings"] if s["knob"] == "nomerges"][0]
        self.assertEqual(nm["state"], "drifted")
        self.assertTrue(nm["conflict"])
        self.assertEqual(self.status()["daemon"]["conflicts"], 1)
        self.assertEqual(self.daemon_log().count("keeps being changed back"), 1)
        out = self.ctl("status", expect=1).stdout
        self.assertIn("nvme0n1 nomerges: drifted (desired 2, observed 0): held back", out)
        self.assertEqual(self.ctl("status", "--json", expect=1).returncode, 1)
        self.stop()
        self.ctl("status", expect=5)

    def test_a_hand_change_of_the_scheduler_is_one_drift(self):
        """The kernel resets nr_requests when the scheduler changes: putting the
        scheduler back makes iotuned write nr_requests again, which is not drift."""
        self.bed.nvme(0)
        self.start()
        wait_for(lambda: self.status()["daemon"]["drifts_corrected"] == 0, what="status")
        # what `echo mq-deadline > queue/scheduler` does on 6.1, at once: the daemon
        # is stopped meanwhile so no drift check sees half of it
        self.proc.send_signal(signal.SIGSTOP)
        self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
        self.bed.write("nvme0n1", "queue/nr_requests", "256")
        self.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: self.bed.read("nvme0n1", "queue/nr_requests") == "1023", what="both put back")
        wait_for(lambda: self.status()["daemon"]["drifts_corrected"] >= 1, what="drift counted")
        time.sleep(3 * INTERVAL)
        st = self.status()
        self.assertEqual(st["daemon"]["drifts_corrected"], 1, self.daemon_log())
        knobs = {s["knob"]: s for s in st["devices"][0]["settings"]}
        self.assertEqual(knobs["scheduler"]["drifts"], 1)
        self.assertEqual(knobs["nr_requests"].get("drifts", 0), 0)
        self.assertIn("nvme0n1: scheduler drifted to mq-deadline (desired none); put back", self.daemon_log())
        self.assertNotIn("nr_requests drifted", self.daemon_log())
        self.stop()

    def test_a_udev_rule_fighting_on_change_events_is_a_conflict_naming_the_rule(self):
        """Seed 002: a legacy rule puts mq-deadline back on every change event."""
        self.bed.nvme(0)
        rules = os.path.join(self.root, "etc/udev/rules.d")
        os.makedirs(rules)
        with open(os.path.join(rules, "60-legacy-sched.rules"), "w") as f:
            f.write("# from the old image\n"
                    'ACTION=="add|change", KERNEL=="nvme[0-9]*n[0-9]*", ATTR{queue/scheduler}="mq-deadline"\n')
        # no drift check during the test: only the change events can see the rule's writes
        self.conf("iotuned.yaml.d/10-slow.yaml", "reassert: { interval: 1h }\n")
        self.start()
        path = self.bed.paths["nvme0n1"]
        for i in range(5):
            # what udev does on "change": the rule runs, then the event reaches iotuned
            self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
            self.bed.tb.uevent(path, "change")
            wait_for(lambda: self.bed.read("nvme0n1", "queue/scheduler") == "none", what=f"change {i + 1} corrected")
        wait_for(lambda: "keeps being changed back" in self.daemon_log(), what="conflict")
        log = self.daemon_log()
        self.assertEqual(log.count("nvme0n1: scheduler drifted to mq-deadline (desired none) after a udev change "
                                   "event; put back"), 5, log)
        self.assertIn("It is written by udev rule /etc/udev/rules.d/60-legacy-sched.rules:2 writing mq-deadline", log)
        # held now: the sixth change event leaves the rule's value, reported as drifted
        self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
        self.bed.tb.uevent(path, "change")
        wait_for(lambda: [s for s in self.status()["devices"][0]["settings"] if s["knob"] == "scheduler"][0]["state"]
                 == "drifted", what="held after the conflict")
        self.assertEqual(self.bed.read("nvme0n1", "queue/scheduler"), "none [mq-deadline]")
        sched = [s for s in self.status()["devices"][0]["settings"] if s["knob"] == "scheduler"][0]
        self.assertTrue(sched["conflict"])
        self.assertEqual(sched["drifts"], 5)
        self.assertEqual(sched["writer"], "udev rule /etc/udev/rules.d/60-legacy-sched.rules:2 writing mq-deadline")
        out = self.ctl("status", expect=1).stdout
        self.assertIn("nvme0n1 scheduler: in conflict (5 drifts); written by udev rule "
                      "/etc/udev/rules.d/60-legacy-sched.rules:2 writing mq-deadline", out)
        self.stop()

    def test_a_new_disk_under_an_old_name_is_not_drift(self):
        """A disk whose diskseq changed (new media, a remove and an add in one batch)
        is tuned afresh: what it comes with is not somebody's change."""
        self.bed.nvme(0)
        self.conf("iotuned.yaml.d/10-slow.yaml", "reassert: { interval: 1h }\n")
        self.start()
        path = self.bed.paths["nvme0n1"]
        seq = self.bed.read("nvme0n1", "diskseq")
        self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
        self.bed.write("nvme0n1", "diskseq", str(int(seq) + 1000))
        self.bed.tb.uevent(path, "change")
        wait_for(lambda: self.bed.read("nvme0n1", "queue/scheduler") == "none", what="the new disk tuned")
        wait_for(lambda: self.status()["daemon"]["drifts_corrected"] == 0 and
                 "nvme0n1 tuned with profile" in self.daemon_log(), what="status")
        self.assertNotIn("drifted", self.daemon_log())
        # the same disk again: now a change of it is drift
        self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
        self.bed.tb.uevent(path, "change")
        wait_for(lambda: self.status()["daemon"]["drifts_corrected"] == 1, what="drift counted")
        self.assertIn("scheduler drifted to mq-deadline (desired none) after a udev change event", self.daemon_log())
        self.stop()

    def test_stop_restores_known_disks_without_probing_them_again(self):
        """The stop takes the disks it has probed from its own plan (only their
        diskseq is read again); a disk that sysfs now shows as another one (its
        diskseq changed, no event yet) is probed afresh, and its record, of the
        disk that was, is dropped instead of being written into the new one."""
        self.bed.nvme(0)
        self.bed.sata("sda")
        self.conf("iotuned.yaml.d/10-slow.yaml", "reassert: { interval: 1h }\n")
        self.start("-v")
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "2")
        self.assertEqual(self.bed.read("sda", "queue/nr_requests"), "1024")
        seq = self.bed.read("sda", "diskseq")
        self.bed.write("sda", "diskseq", str(int(seq) + 1000))
        self.stop()
        log = self.daemon_log()
        self.assertIn("Restoring 2 recorded disks: 1 as already probed, 1 probed again.", log)
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "1")
        self.assertIn("nvme0n1: rq_affinity restored to 1", log)
        # not the disk that was recorded: left as it is, its record gone
        self.assertEqual(self.bed.read("sda", "queue/nr_requests"), "1024")
        self.assertNotIn("sda: nr_requests restored", log)
        self.assertFalse(os.path.exists(os.path.join(self.root, "run/iotuned/originals/sda.json")))

    def test_hotplug_add_and_remove(self):
        self.bed.nvme(0)
        self.start()
        path = self.bed.sata("sdb", rotational=1)
        self.bed.tb.uevent(path, "add")
        wait_for(lambda: self.bed.read("sdb", "queue/nr_requests") == "1024", what="hot-added sdb tuned")
        wait_for(lambda: "sdb" in [d["device"] for d in self.status()["devices"]], what="sdb in status")
        self.assertTrue(os.path.exists(os.path.join(self.root, "run/iotuned/originals/sdb.json")))
        self.bed.tb.uevent(path, "remove")
        wait_for(lambda: "sdb" not in [d["device"] for d in self.status()["devices"]], what="sdb forgotten")
        self.assertFalse(os.path.exists(os.path.join(self.root, "run/iotuned/originals/sdb.json")))
        self.stop()

    def test_multipath_path_tuned_without_its_own_uevent(self):
        # A hidden path disk sends no uevent (block/genhd.c): the daemon hears its
        # controller and lists the paths itself. umockdev announces every device it
        # adds, so the second path is made on the filesystem, silently.
        self.bed.nvme(0)
        self.bed.multipath(subsys=1, ctrl=1)
        self.start()
        root = self.bed.tb.get_root_dir()
        ctrl = self.bed.controller("nvme2", None, {"model": "Linux", "serial": "abc", "firmware_rev": "6.1",
                                                   "transport": "tcp", "subsysnqn": "nqn.test", "state": "live"},
                                   FakeNvme(model="Linux", serial="abc", subnqn="nqn.test"))
        # its "add" event came and went: the path is not there yet
        time.sleep(0.3)
        path = ctrl + "/nvme1c2n1"
        shutil.copytree(root + self.bed.paths["nvme1c1n1"], root + path, symlinks=True)
        for attr, value in (("queue/rq_affinity", "1"), ("queue/nomerges", "0"), ("diskseq", "77")):
            with open(root + path + "/" + attr, "w") as f:
                f.write(value + "\n")
        os.symlink("../../devices/nvme2/nvme1c2n1", root + "/sys/class/block/nvme1c2n1")
        wait_for(lambda: open(root + path + "/queue/rq_affinity").read().strip() == "2", what="silent path tuned")
        wait_for(lambda: "nvme1c2n1" in [d["device"] for d in self.status()["devices"]], what="path in status")
        dev = [d for d in self.status()["devices"] if d["device"] == "nvme1c2n1"][0]
        self.assertEqual(dev["facts"]["multipath_path"],
                         {"head": "nvme1n1", "controller": "nvme2", "state": "live", "ana_state": None})
        out = self.ctl("status").stdout
        self.assertRegex(out, r"NVMe multipath paths:\n  nvme1n1\s+nvme1c1n1\s+via nvme1 .*\n"
                              r"  nvme1n1\s+nvme1c2n1\s+via nvme2\s+live\n")
        # the controller is deleted and its path with it, silently: lost, not failed
        os.unlink(root + "/sys/class/block/nvme1c2n1")
        shutil.rmtree(root + path)
        self.bed.tb.uevent(ctrl, "remove")
        wait_for(lambda: "nvme1c2n1" not in [d["device"] for d in self.status()["devices"]], what="path forgotten")
        # The controller's "remove", or the path watch (polling the subsystem for a few
        # seconds after the controller's "add") if it looked in between: lost either way.
        self.assertRegex(self.daemon_log(),
                         r"nvme1c2n1: multipath path lost \((controller nvme2 removed|its disk is gone)\)")
        self.assertNotIn("Cannot tune", self.daemon_log())
        self.assertFalse(os.path.exists(os.path.join(self.root, "run/iotuned/originals/nvme1c2n1.json")))
        self.assertIn("nvme1c1n1", [d["device"] for d in self.status()["devices"]])
        self.stop()

    def test_path_watch_of_a_plain_subsystem_ends_at_once(self):
        # A hot-added controller's subsystem announces itself too; when every
        # controller of it has a plain disk (no native multipath), there are no hidden
        # paths to wait for: the watch (every 50 ms, then every second, for 15 s)
        # ends at its next look instead of waking the daemon ~110 times for nothing.
        self.bed.nvme(0)
        self.start("-v")
        root = self.bed.tb.get_root_dir()
        sub = self.bed.add("nvme-subsystem", "nvme-subsys0", None, {"subsysnqn": "nqn.2019-08.org.qemu:SER0"}, {})
        os.symlink(os.path.relpath(root + self.bed.paths["nvme0"], root + sub), root + sub + "/nvme0")
        wait_for(lambda: f"Path watch of {sub} ends: every controller's disks are plain ones, no paths."
                 in self.daemon_log(), what="the subsystem's path watch ended")
        self.stop()

    def test_path_not_live_is_not_written(self):
        # Writing a queue knob of a path whose controller is reconnecting would freeze
        # the queue behind the I/O the fabric holds (up to ctrl_loss_tmo): the drift
        # check leaves the path alone until its controller is live again.
        self.bed.multipath(subsys=1, ctrl=1)
        self.bed.tb.set_attribute(self.bed.paths["nvme1"], "state", "live")
        self.start()
        self.assertEqual(self.bed.read("nvme1c1n1", "queue/rq_affinity"), "2")
        self.bed.tb.set_attribute(self.bed.paths["nvme1"], "state", "connecting")
        self.bed.write("nvme1c1n1", "queue/rq_affinity", "1")
        time.sleep(INTERVAL * 10)
        self.assertEqual(self.bed.read("nvme1c1n1", "queue/rq_affinity"), "1")
        self.bed.tb.set_attribute(self.bed.paths["nvme1"], "state", "live")
        wait_for(lambda: self.bed.read("nvme1c1n1", "queue/rq_affinity") == "2", what="path corrected once live")
        self.stop()

    def test_reload_bad_config_keeps_running_good_config_replans(self):
        self.bed.nvme(0)
        self.bed.write("nvme0n1", "queue/add_random", "1")  # the original; latency sets 0
        self.start()
        self.assertEqual(self.bed.read("nvme0n1", "queue/add_random"), "0")
        bad = self.conf("iotuned.yaml.d/50-site.yaml", "rules:\n  - match: {}\n    profile: nonesuch\n")
        self.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload refused" in self.daemon_log(), what="reload refusal")
        self.assertIn(f"{bad}:3:14: rule '{bad}:2' uses unknown profile 'nonesuch'", self.daemon_log())
        self.assertIsNone(self.proc.poll())
        self.assertEqual(self.status()["devices"][0]["profile"], "latency")

        # a good config moves nvme0n1 to throughput; knobs throughput does not set
        # (add_random) go back to their originals
        self.conf("iotuned.yaml.d/50-site.yaml", "rules:\n  - match: {}\n    profile: throughput\n")
        self.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: self.status()["devices"][0]["profile"] == "throughput", what="re-planned")
        # with mq-deadline the limit is MAX_SCHED_RQ (2048), not the 1023 tags
        self.assertEqual(self.bed.read("nvme0n1", "queue/nr_requests"), "1024")
        self.assertEqual(self.bed.read("nvme0n1", "queue/read_ahead_kb"), "4096")
        self.assertEqual(self.bed.read("nvme0n1", "queue/add_random"), "1")
        self.assertIn("nvme0n1: add_random no longer tuned by the new configuration; restored 1", self.daemon_log())
        self.stop()

    def test_change_event_replans_and_restores_dropped_knobs(self):
        self.bed.nvme(0)
        self.bed.write("nvme0n1", "queue/add_random", "1")  # original; latency sets 0
        self.start()
        self.assertEqual(self.bed.read("nvme0n1", "queue/add_random"), "0")
        # an admin's udev rule pins the disk to throughput, then udev sends "change"
        self.bed.tb.set_property(self.bed.paths["nvme0n1"], "IOTUNED_PROFILE", "throughput")
        self.bed.tb.uevent(self.bed.paths["nvme0n1"], "change")
        wait_for(lambda: self.status()["devices"][0]["rule"] == "IOTUNED_PROFILE", what="re-planned on change")
        self.assertEqual(self.bed.read("nvme0n1", "queue/read_ahead_kb"), "4096")
        self.assertEqual(self.bed.read("nvme0n1", "queue/add_random"), "1")
        self.stop()

    def test_load_and_interrupt_findings_in_journal_status_and_metrics(self):
        """The daemon samples each disk's stat and /proc/interrupts at every drift
        check: a structural finding (every hardware queue on one CPU) and the
        software-queue signature are reported once, in status and metrics."""
        self.bed.nvme(0, irqs=[40, 41, 42])
        self.bed.write("nvme0n1", "mq/1/cpu_list", "0")  # both queues on CPU 0
        self.bed.write("nvme0n1", "stat", "100 0 800 40 0 0 0 0 0 50 40 0 0 0 0 0 0")
        self.bed.write("nvme0n1", "inflight", "0 0")
        os.makedirs(os.path.join(self.root, "proc"), exist_ok=True)
        with open(os.path.join(self.root, "proc/interrupts"), "w") as f:
            f.write("           CPU0       CPU1\n"
                    " 40:  0  0  PCI-MSIX-0000:01:00.0   0-edge      nvme0q0\n"
                    " 41:  500  0  PCI-MSIX-0000:01:00.0   1-edge      nvme0q1\n"
                    " 42:  500  0  PCI-MSIX-0000:01:00.0   2-edge      nvme0q2\n")
        for irq in (40, 41, 42):
            d = os.path.join(self.root, f"proc/irq/{irq}")
            os.makedirs(d)
            for name in ("smp_affinity_list", "effective_affinity_list"):
                with open(os.path.join(d, name), "w") as f:
                    f.write("0-1\n")
        self.conf("iotuned.yaml.d/20-metrics.yaml", "metrics:\n  textfile: /var/lib/node-exporter/iotuned.prom\n")
        prom = os.path.join(self.root, "var/lib/node-exporter/iotuned.prom")
        self.start()

        def kinds():
            return [f["kind"] for f in self.status()["devices"][0].get("findings", [])]
        wait_for(lambda: "queue-map-one-cpu" in kinds(), what="queue-map-one-cpu in status.json")
        # mq-deadline, and 2000 reads that took 20 s in all within the next interval:
        # a deep queue with the device not busy (io_ticks barely moved)
        self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
        self.conf("profiles/deadline.yaml", "extends: latency\nqueue: { scheduler: mq-deadline }\n")
        self.conf("iotuned.yaml.d/30-deadline.yaml", "rules:\n  - { match: { kernel: nvme0n1 }, profile: deadline }\n")
        self.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: self.status()["devices"][0]["profile"] == "deadline", what="reloaded")
        self.bed.write("nvme0n1", "stat", "2100 0 16800 20040 0 0 0 0 0 60 20040 0 0 0 0 0 0")
        wait_for(lambda: "software-queue" in kinds(), what="software-queue in status.json")
        log = self.daemon_log()
        self.assertEqual(log.count("nvme0n1: all 2 hardware queues map to CPU 0 alone"), 1, log)
        self.assertEqual(log.count("requests wait in the mq-deadline scheduler"), 1, log)
        out = self.ctl("status").stdout
        self.assertIn("nvme0n1 queue-map-one-cpu:", out)
        self.assertIn("nvme0n1 software-queue:", out)
        def metrics():
            with open(prom) as f:
                return f.read()
        wait_for(lambda: 'iotuned_device_findings{device="nvme0n1",kind="software-queue",severity="warning"} 1'
                 in metrics(), what="metrics")
        self.assertIn('iotuned_device_findings{device="nvme0n1",kind="queue-map-one-cpu",severity="warning"} 1',
                      metrics())
        self.stop()

    def test_software_queue_takes_the_requests_at_the_device_from_inflight(self):
        """On 6.12 the in_flight column of a disk's stat also counts the requests
        waiting in the scheduler; the requests at the device are the inflight
        file's (src/daemon/load.c). A stat that says 100000 in flight beside an
        inflight of 4 is the software-queue signature, with 4 at the device."""
        self.bed.nvme(0)
        self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
        self.bed.write("nvme0n1", "inflight", "4 0")
        self.conf("profiles/deadline.yaml", "extends: latency\nqueue: { scheduler: mq-deadline }\n")
        self.conf("iotuned.yaml.d/30-deadline.yaml", "rules:\n  - { match: { kernel: nvme0n1 }, profile: deadline }\n")
        step = [0]

        def stat():
            # Each step: 2000 reads of 1 s each, 200 s of queue time, the device
            # always busy; in flight per the stat: 100000 (scheduler included).
            n = step[0]
            step[0] += 1
            self.bed.write("nvme0n1", "stat", f"{100 + 2000 * n} 0 {800 + 16000 * n} {40 + 2000000 * n} 0 0 0 0 "
                                              f"100000 {50 + 10000000 * n} {40 + 200000 * n} 0 0 0 0 0 0")
        stat()
        self.start()

        def found():
            stat()  # the counters move between the daemon's samples
            time.sleep(0.5)
            return [f for f in self.status()["devices"][0].get("findings", []) if f["kind"] == "software-queue"]
        wait_for(lambda: found(), what="software-queue in status.json")
        f = found()[0]
        self.assertEqual(f["values"]["device_inflight"], 4, f)
        self.assertIn("4.0 at the device", f["summary"], f)
        self.stop()

    def nvme_with_admin_and_io_vector(self):
        """nvme0 with IRQ 40 (its admin queue: not managed, pinned by the latency
        profile) and 41 (an I/O queue), in a fake /proc/interrupts and /proc/irq."""
        self.bed.nvme(0, irqs=[40, 41])
        os.makedirs(os.path.join(self.root, "proc"), exist_ok=True)
        with open(os.path.join(self.root, "proc/interrupts"), "w") as f:
            f.write("           CPU0       CPU1\n"
                    " 40:  0  0  PCI-MSIX-0000:01:00.0   0-edge      nvme0q0\n"
                    " 41:  0  0  PCI-MSIX-0000:01:00.0   1-edge      nvme0q1\n")
        for irq in (40, 41):
            d = os.path.join(self.root, f"proc/irq/{irq}")
            os.makedirs(d)
            for name in ("smp_affinity_list", "effective_affinity_list"):
                with open(os.path.join(d, name), "w") as f:
                    f.write("0-1\n")

    def test_irqbalance_bans_merged_and_withdrawn(self):
        self.nvme_with_admin_and_io_vector()
        fake = FakeIrqbalance(self.root, banned=[99])  # an admin's --banirq=99
        fake.start()
        try:
            self.start()
            # only the pinned, unmanaged admin vector is ours to ban; 99 is kept
            wait_for(lambda: sorted(fake.banned) == [40, 99], what="ban list merged")
            # status.json follows right after (irqbalance is asked after READY=1)
            wait_for(lambda: (self.status()["daemon"].get("irqbalance") or {}).get("banned_by_iotuned") == [40],
                     what="bans in status.json")
            ib = self.status()["daemon"]["irqbalance"]
            self.assertEqual((ib["pid"], ib["banned_by_iotuned"]), (os.getpid(), [40]))
            self.assertIn(f"irqbalance: pid {os.getpid()}: 1 IRQ banned by iotuned", self.ctl("status").stdout)
            # Forgetting the bans with the same pid is not looked at every interval
            # (irqbalance is asked again after 30 s, or when something changes)...
            fake.banned = [99]
            time.sleep(3 * INTERVAL)
            self.assertEqual(fake.banned, [99])
            # ...but a restart (a new pid: its runtime bans are gone) is, at once.
            other = subprocess.Popen(["sleep", "60"])
            try:
                new_path = os.path.join(os.path.dirname(fake.path), f"irqbalance{other.pid}.sock")
                os.rename(fake.path, new_path)
                fake.path = new_path
                wait_for(lambda: sorted(fake.banned) == [40, 99], what="bans re-sent")
                wait_for(lambda: self.status()["daemon"]["irqbalance"]["pid"] == other.pid, what="new pid in status")
                self.assertIn(f"irqbalance restarted (pid {os.getpid()} -> {other.pid})", self.daemon_log())
                self.stop()
            finally:
                other.kill()
                other.wait()
            self.assertEqual(fake.banned, [99])
            self.assertTrue(all(c == "setup" or c.startswith("settings ban irqs ") for c in fake.commands))
        finally:
            fake.stop()

    def test_a_slow_irqbalance_holds_nothing_up(self):
        """irqbalance answers from the loop that rebalances, seconds later on a busy
        machine: the daemon does not wait for it. A drift is corrected while the
        answer is outstanding, the daemon still waiting for it (its connection
        open), and the bans follow the answer."""
        self.nvme_with_admin_and_io_vector()
        fake = FakeIrqbalance(self.root, banned=[99], hold=True)
        fake.start()
        try:
            self.start()
            wait_for(lambda: fake.held is not None, what="the daemon's setup request")
            self.proc.send_signal(signal.SIGSTOP)
            self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
            self.bed.write("nvme0n1", "queue/nr_requests", "256")
            self.proc.send_signal(signal.SIGCONT)
            wait_for(lambda: self.bed.read("nvme0n1", "queue/nr_requests") == "1023", what="drift put back")
            self.assertTrue(fake.held_open(), "the daemon gave up on irqbalance before it corrected the drift:\n"
                            + self.daemon_log())
            self.assertEqual(fake.banned, [99])
            fake.release()
            wait_for(lambda: sorted(fake.banned) == [40, 99], what="ban list merged after the answer")
            wait_for(lambda: (self.status()["daemon"].get("irqbalance") or {}).get("banned_by_iotuned") == [40],
                     what="bans in status.json")
            self.assertNotIn("unusable", self.daemon_log())
            self.stop()
            self.assertEqual(fake.banned, [99])
        finally:
            fake.stop()

    def test_a_stuck_irqbalance_is_reported_and_holds_nothing_up(self):
        """An irqbalance that takes no connection at all (stopped, its listen
        backlog full): the daemon tries again with a growing pause, corrects
        drift meanwhile, and after the exchange's 10 s reports the socket."""
        self.bed.nvme(0)
        d = os.path.join(self.root, "run/irqbalance")
        os.makedirs(d)
        path = os.path.join(d, f"irqbalance{os.getpid()}.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(0)
        held = []
        try:
            while True:  # fill the backlog, as a stopped irqbalance's fills
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                c.setblocking(False)
                try:
                    c.connect(path)
                except BlockingIOError:
                    c.close()
                    break
                held.append(c)
            self.start()
            self.proc.send_signal(signal.SIGSTOP)
            self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
            self.bed.write("nvme0n1", "queue/nr_requests", "256")
            self.proc.send_signal(signal.SIGCONT)
            wait_for(lambda: self.bed.read("nvme0n1", "queue/nr_requests") == "1023", what="drift put back")
            self.assertNotIn("unusable", (self.status()["daemon"].get("irqbalance") or {}).get("state") or "")
            wait_for(lambda: "unusable" in ((self.status()["daemon"].get("irqbalance") or {}).get("state") or ""),
                     timeout=30, what="irqbalance reported unusable")
            self.assertRegex(self.status()["daemon"]["irqbalance"]["state"],
                             r"unusable \(Connection timed out\): IRQs are verified and re-asserted only")
            self.stop()
        finally:
            for c in held:
                c.close()
            listener.close()

    def test_irqbalance_socket_unusable_is_reported(self):
        self.bed.nvme(0)
        d = os.path.join(self.root, "run/irqbalance")
        os.makedirs(d)
        # a socket file nobody listens on
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(os.path.join(d, f"irqbalance{os.getpid()}.sock"))
        s.close()
        self.start()
        # irqbalance is asked right after READY=1, and status.json rewritten then
        wait_for(lambda: "unusable" in ((self.status()["daemon"].get("irqbalance") or {}).get("state") or ""),
                 what="irqbalance state in status.json")
        st = self.status()["daemon"]["irqbalance"]["state"]
        self.assertRegex(st, r"unusable .*: IRQs are verified and re-asserted only")
        self.stop()

    def test_invalid_config_refuses_to_start(self):
        self.bed.nvme(0)
        self.conf("profiles/fast.yaml", "queue:\n  rq_affinity: 3\n")
        p = subprocess.run([IOTUNED, "--root", self.root], capture_output=True, text=True, timeout=10)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("profiles/fast.yaml:2:16: value '3' for rq_affinity is out of range", p.stderr)
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "1")

    def test_restart_after_kill_keeps_first_originals(self):
        self.bed.nvme(0)
        self.start()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "2")
        os.unlink(self.status_path())
        self.start()
        self.stop()
        # the originals from before the first start, not the tuned values
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "1")
        self.assertEqual(self.bed.read("nvme0n1", "queue/nomerges"), "0")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: test_daemon.py IOTUNED IOTUNECTL [unittest args]")
    IOTUNED = os.path.abspath(sys.argv.pop(1))
    IOTUNECTL = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
