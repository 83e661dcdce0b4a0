#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""iotunectl end to end on umockdev fixture devices.

Run as: umockdev-wrapper /usr/bin/python3 tests/integration/test_cli.py IOTUNECTL
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_nvme import FakeNvme  # noqa: E402
from testbed import Testbed  # noqa: E402

IOTUNECTL = None


class CliTest(unittest.TestCase):
    def setUp(self):
        self.bed = Testbed()
        self.root = tempfile.mkdtemp(prefix="iotuned-root-")

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)
        del self.bed

    def run_cli(self, *args, expect=0):
        # Inherit the environment as is: the umockdev testbed lives in it.
        p = subprocess.run([IOTUNECTL, "--root", self.root, *args], capture_output=True, text=True)
        if p.returncode != expect:
            self.fail(f"iotunectl {' '.join(args)}: exit {p.returncode}, expected {expect}\n"
                      f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p

    def json_of(self, *args, expect=0):
        return json.loads(self.run_cli("--json", *args, expect=expect).stdout)

    def write_conf(self, rel, text, mode=0o644):
        path = os.path.join(self.root, "etc/iotuned", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # explicit modes whatever the umask: the loader refuses group/other-writable
        # configuration files and directories
        d = os.path.dirname(path)
        while d.startswith(self.root) and d != self.root:
            os.chmod(d, 0o755)
            d = os.path.dirname(d)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    @staticmethod
    def by_device(doc):
        return {d["device"]: d for d in doc["devices"]}

    @staticmethod
    def settings(dev):
        return {s["knob"]: s for s in dev["settings"]}

    def standard_set(self):
        self.bed.nvme(0)
        self.bed.nvme(2, namespaces=2)
        self.bed.sata("sda", rotational=1)
        self.bed.virtio("vda")

    # -- plan -------------------------------------------------------------
    def test_plan_maps_devices_to_profiles_and_writes_nothing(self):
        self.standard_set()
        self.bed.multipath(subsys=1, ctrl=1)
        self.bed.loop("loop0")
        doc = self.json_of("plan")
        self.assertEqual(doc["version"], 1)
        self.assertTrue(doc["dry_run"])
        devs = self.by_device(doc)
        self.assertEqual(sorted(devs), ["nvme0n1", "nvme1c1n1", "nvme1n1", "nvme2n1", "nvme2n2", "sda", "vda"])
        self.assertNotIn("loop0", devs, "loop devices are off by default")
        self.assertEqual(devs["nvme0n1"]["profile"], "latency")
        self.assertEqual(devs["nvme0n1"]["facts"]["transport"], "pcie")
        self.assertEqual(devs["nvme0n1"]["facts"]["model"], "QEMU NVMe Ctrl")
        self.assertEqual(devs["sda"]["profile"], "throughput")
        self.assertEqual(devs["sda"]["facts"]["transport"], "sata")
        self.assertEqual(devs["vda"]["facts"]["transport"], "virtio")
        self.assertEqual(devs["vda"]["profile"], "throughput")  # virtio reports rotational=1
        s = self.settings(devs["nvme0n1"])
        self.assertEqual(s["scheduler"]["state"], "ok")
        self.assertEqual(s["nr_requests"]["effective"], "1023")  # max = mq/0/nr_tags
        self.assertEqual(s["rq_affinity"]["state"], "changed")
        self.assertEqual(s["rq_affinity"]["origin"]["file"], "<builtin>/profiles/latency.yaml")
        # the multipath head is bio-based: queue knobs are unsupported, read-ahead applies
        head = self.settings(devs["nvme1n1"])
        self.assertEqual(head["scheduler"]["state"], "unsupported")
        self.assertIn("multipath head", head["scheduler"]["note"])
        self.assertEqual(head["read_ahead_kb"]["state"], "changed")
        self.assertEqual(devs["nvme1c1n1"]["facts"]["transport"], "tcp")
        self.assertEqual(self.settings(devs["nvme1c1n1"])["nr_requests"]["effective"], "128")
        # a dry run writes nothing and records nothing
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "1")
        self.assertFalse(os.path.exists(os.path.join(self.root, "run/iotuned/originals")))

    def test_plan_table_is_readable(self):
        self.standard_set()
        out = self.run_cli("plan").stdout
        self.assertRegex(out, r"DEVICE\s+KNOB\s+CURRENT\s+DESIRED\s+STATE\s+PROFILE\s+NOTE")
        self.assertRegex(out, r"nvme0n1\s+rq_affinity\s+1\s+2\s+would-change\s+latency")
        self.assertIn("plan: 5 devices; 18 ok, 17 would change, 2 unsupported", out)

    # -- apply / verify / restore ----------------------------------------
    def test_apply_verify_drift_restore(self):
        self.standard_set()
        before = {a: self.bed.read("nvme0n1", a) for a in
                  ("queue/scheduler", "queue/rq_affinity", "queue/nomerges", "queue/wbt_lat_usec",
                   "queue/read_ahead_kb")}
        out = self.run_cli("apply").stdout
        self.assertRegex(out, r"nvme0n1\s+rq_affinity\s+2\s+2\s+changed\s+latency\s+was 1\n")
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "2")
        self.assertEqual(self.bed.read("nvme0n1", "queue/nomerges"), "2")
        self.assertEqual(self.bed.read("nvme0n1", "queue/wbt_lat_usec"), "0")
        self.assertEqual(self.bed.read("nvme0n1", "queue/read_ahead_kb"), "0")
        self.assertEqual(self.bed.read("sda", "queue/nr_requests"), "1024")
        self.assertEqual(self.bed.read("sda", "queue/read_ahead_kb"), "4096")
        rec = os.path.join(self.root, "run/iotuned/originals/nvme0n1.json")
        with open(rec) as f:
            orig = json.load(f)
        self.assertEqual(orig["values"]["rq_affinity"], "1")
        self.assertEqual(orig["values"]["scheduler"], "none")
        self.assertIsNotNone(orig["diskseq"])

        self.run_cli("verify")
        # a second apply changes nothing
        doc = self.json_of("apply")
        self.assertEqual(doc["summary"]["settings"]["changed"], 0)

        # drift: someone puts mq-deadline back
        self.bed.write("nvme0n1", "queue/scheduler", "none [mq-deadline]")
        doc = self.json_of("verify", expect=1)
        drifted = [(d["device"], s["knob"]) for d in doc["devices"] for s in d["settings"] if s["state"] == "drifted"]
        self.assertEqual(drifted, [("nvme0n1", "scheduler")])
        self.run_cli("apply", "nvme0n1")
        self.run_cli("verify")

        # the original record survives re-applies: it still holds the first values
        with open(rec) as f:
            self.assertEqual(json.load(f)["values"]["scheduler"], "none")

        self.run_cli("restore")
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), before["queue/rq_affinity"])
        self.assertEqual(self.bed.read("nvme0n1", "queue/nomerges"), before["queue/nomerges"])
        self.assertEqual(self.bed.read("nvme0n1", "queue/wbt_lat_usec"), before["queue/wbt_lat_usec"])
        self.assertEqual(self.bed.read("nvme0n1", "queue/read_ahead_kb"), before["queue/read_ahead_kb"])
        self.assertEqual(self.bed.read("sda", "queue/nr_requests"), "64")
        self.assertEqual(os.listdir(os.path.join(self.root, "run/iotuned/originals")), [])

    def test_restore_one_device_only(self):
        self.standard_set()
        self.run_cli("apply")
        self.run_cli("restore", "sda")
        self.assertEqual(self.bed.read("sda", "queue/nr_requests"), "64")
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "2")
        self.assertEqual(sorted(os.listdir(os.path.join(self.root, "run/iotuned/originals"))),
                         ["nvme0n1.json", "nvme2n1.json", "nvme2n2.json", "vda.json"])
        p = self.run_cli("restore", "sdz", expect=4)
        self.assertIn("No recorded original values for sdz", p.stderr)

    def test_missing_attribute_is_unsupported_not_an_error(self):
        self.bed.nvme(0, wbt=None)
        doc = self.json_of("apply")
        s = self.settings(self.by_device(doc)["nvme0n1"])
        self.assertEqual(s["wbt_lat_usec"]["state"], "unsupported")
        self.assertEqual(s["rq_affinity"]["state"], "changed")
        self.run_cli("verify")

    # -- IRQ placement -----------------------------------------------------
    def fake_proc(self, vectors):
        """A /proc under --root: /proc/interrupts naming each vector, and its
        /proc/irq/N/{smp,effective}_affinity_list files."""
        lines = ["           CPU0       CPU1       "]
        for irq, name in vectors.items():
            lines.append(f" {irq}:          0          0   PCI-MSIX-0000:01:00.0   0-edge      {name}")
            d = os.path.join(self.root, "proc/irq", str(irq))
            os.makedirs(d, exist_ok=True)
            for f in ("smp_affinity_list", "effective_affinity_list"):
                with open(os.path.join(d, f), "w") as fh:
                    fh.write("0-1\n")
        with open(os.path.join(self.root, "proc/interrupts"), "w") as fh:
            fh.write("\n".join(lines) + "\n")

    def irq_file(self, irq):
        with open(os.path.join(self.root, "proc/irq", str(irq), "smp_affinity_list")) as fh:
            return fh.read().strip()

    def test_irq_queue_local_plan_apply_restore(self):
        self.bed.nvme(0, irqs=[40, 41, 42])
        self.fake_proc({40: "nvme0q0", 41: "nvme0q1", 42: "nvme0q2"})
        doc = self.json_of("plan")
        vec = {s["irq"]: s for s in doc["devices"][0]["settings"] if s["knob"] == "irq_affinity"}
        self.assertEqual(sorted(vec), [40, 41, 42])
        self.assertEqual(vec[40]["object"], "irq 40 (nvme0q0)")
        # admin vector: no queue, the device's node (none here: every allowed CPU)
        self.assertEqual(vec[40]["state"], "ok")
        # I/O vectors are kernel-managed: a state, never a change, in a dry run
        self.assertEqual((vec[41]["effective"], vec[41]["state"]), ("0", "managed"))
        self.assertEqual((vec[42]["effective"], vec[42]["state"]), ("1", "managed"))
        self.assertIn("isolcpus=managed_irq", vec[41]["note"])
        self.assertEqual(vec[41]["origin"]["file"], "<builtin>/profiles/latency.yaml")

        # fixture files accept writes, so apply pins them; verify then reports managed, not drift
        self.run_cli("apply")
        self.assertEqual([self.irq_file(i) for i in (40, 41, 42)], ["0-1", "0", "1"])
        self.run_cli("verify")
        with open(os.path.join(self.root, "run/iotuned/originals/nvme0n1.json")) as fh:
            self.assertEqual(json.load(fh)["irqs"], {"40": "0-1", "41": "0-1", "42": "0-1"})
        self.run_cli("restore")
        self.assertEqual([self.irq_file(i) for i in (40, 41, 42)], ["0-1", "0-1", "0-1"])

    def test_irq_explicit_cpus_and_shared_vectors(self):
        self.bed.nvme(0, namespaces=2, irqs=[50, 51])
        self.fake_proc({50: "nvme0q0", 51: "nvme0q1"})
        self.write_conf("profiles/pinned.yaml", "extends: latency\nirq:\n  cpus: \"1\"\n")
        self.write_conf("iotuned.yaml.d/50-pin.yaml", "rules:\n  - match: { kernel: 'nvme0*' }\n    profile: pinned\n")
        doc = self.json_of("plan")
        devs = self.by_device(doc)
        first = [s for s in devs["nvme0n1"]["settings"] if s["knob"] == "irq_affinity"]
        second = [s for s in devs["nvme0n2"]["settings"] if s["knob"] == "irq_affinity"]
        # both namespaces share the controller's vectors: planned once, with nvme0n1
        self.assertEqual([(s["irq"], s["effective"]) for s in first], [(50, "1"), (51, "1")])
        self.assertEqual(second, [])
        self.run_cli("apply")
        self.assertEqual(self.irq_file(50), "1")
        out = self.run_cli("explain", "nvme0n2").stdout
        self.assertIn("IRQ placement: cpus, irqbalance kept away from pinned vectors; its interrupt vectors are "
                      "shared with nvme0n1 and planned there", out)

    def test_no_irqs_known_is_not_an_error(self):
        self.bed.nvme(0)  # no msi_irqs at all
        doc = self.json_of("plan")
        self.assertEqual([s for s in doc["devices"][0]["settings"] if s["knob"] == "irq_affinity"], [])
        self.assertIn("IRQ placement: queue-local, irqbalance kept away from pinned vectors; no IRQs known for nvme0n1",
                      self.run_cli("explain", "nvme0n1").stdout)

    # -- configuration -----------------------------------------------------
    def test_invalid_config_applies_nothing(self):
        self.standard_set()
        path = self.write_conf("iotuned.yaml.d/50-site.yaml",
                               "rules:\n  - match: { kernel: 'sd*' }\n    profile: turbo\n")
        p = self.run_cli("apply", expect=3)
        self.assertIn(f"{path}:3:14: rule '{path}:2' uses unknown profile 'turbo'", p.stderr)
        self.assertIn("nothing was applied", p.stderr)
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "1")
        self.assertFalse(os.path.exists(os.path.join(self.root, "run/iotuned/originals")))
        doc = self.json_of("check-config", expect=3)
        self.assertFalse(doc["valid"])
        self.assertEqual(doc["errors"], [{"file": path, "line": 3, "column": 14,
                                          "message": f"rule '{path}:2' uses unknown profile 'turbo'"}])

    def test_fifo_config_files_are_refused_not_waited_on(self):
        self.standard_set()
        for rel in ("iotuned.yaml", "iotuned.yaml.d/50-fifo.yaml", "profiles/fifo.yaml"):
            path = self.write_conf(rel, "")
            os.unlink(path)
            os.mkfifo(path, 0o644)
            for verb in ("check-config", "plan"):
                # used to block forever in fopen()
                p = subprocess.run([IOTUNECTL, "--root", self.root, verb], capture_output=True, text=True,
                                   timeout=30)
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assertIn(f"{path}: not a regular file\n", p.stderr)
            os.unlink(path)

    def test_writable_config_is_refused(self):
        self.standard_set()
        path = self.write_conf("iotuned.yaml.d/50-site.yaml", "rules: []\n", mode=0o666)
        p = self.run_cli("plan", expect=3)
        self.assertIn(f"{path}: writable by group/others (mode 0666), refusing it\n", p.stderr)
        self.assertIn("nothing was applied", p.stderr)
        os.chmod(path, 0o644)
        os.chmod(os.path.dirname(path), 0o775)
        p = self.run_cli("check-config", expect=3)
        self.assertIn(f"{os.path.dirname(path)}: writable by group (mode 0775), refusing it\n", p.stderr)
        os.chmod(os.path.dirname(path), 0o755)
        self.run_cli("check-config")

    def test_check_config_as_checks_a_candidate_without_installing_it(self):
        # What Ansible's `validate: 'iotunectl check-config --as PATH %s'` runs: the
        # candidate in a temporary file, checked in the place it is meant for.
        installed = self.write_conf("iotuned.yaml.d/50-site.yaml",
                                    "rules:\n  - match: { kernel: 'sd*' }\n    profile: latency\n")
        with open(installed) as f:
            before = f.read()
        cand_dir = tempfile.mkdtemp(prefix="iotuned-candidate-")
        self.addCleanup(shutil.rmtree, cand_dir, ignore_errors=True)

        def candidate(name, text):
            path = os.path.join(cand_dir, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o600)  # as Ansible's temporary file
            return path
        bad = candidate("tmpXYZ.bad", "rules:\n  - match: { kernel: 'sd*' }\n    profile: turbo\n")
        good = candidate("tmpXYZ.good", "rules:\n  - match: { kernel: 'nvme*' }\n    profile: db\n")
        as_path = "/etc/iotuned/iotuned.yaml.d/50-site.yaml"

        # The bad candidate: refused, its error names it (not PATH), exit 3.
        p = self.run_cli("check-config", "--as", as_path, bad, expect=3)
        self.assertIn(f"{bad}:3:14: rule '{bad}:2' uses unknown profile 'turbo'", p.stderr)
        self.assertNotIn(installed, p.stderr)
        doc = self.json_of("check-config", "--as", as_path, bad, expect=3)
        self.assertFalse(doc["valid"])
        self.assertEqual(doc["candidate"], {"file": bad, "as": as_path})
        self.assertEqual(doc["errors"], [{"file": bad, "line": 3, "column": 14,
                                          "message": f"rule '{bad}:2' uses unknown profile 'turbo'"}])
        # A drop-in that needs a profile not installed yet is invalid ...
        self.run_cli("check-config", "--as", as_path, good, expect=3)
        # ... until the profile is there; and a candidate profile is checked the same
        # way, under the name its PATH gives it, with the installed drop-ins.
        prof = candidate("db.candidate", "extends: latency\nqueue:\n  nr_requests: 64\n")
        self.write_conf("iotuned.yaml.d/60-db.yaml", "rules:\n  - match: { kernel: 'vd*' }\n    profile: db\n")
        self.run_cli("check-config", expect=3)
        p = self.run_cli("check-config", "--as", "/etc/iotuned/profiles/db.yaml", prof)
        self.assertIn(f"With {prof} as /etc/iotuned/profiles/db.yaml:\n", p.stdout)
        self.assertIn(f"  {prof}\n", p.stdout)
        os.unlink(os.path.join(self.root, "etc/iotuned/iotuned.yaml.d/60-db.yaml"))
        self.write_conf("profiles/db.yaml", "extends: latency\n")
        doc = self.json_of("check-config", "--as", as_path, good)
        self.assertTrue(doc["valid"])
        self.assertIn(good, doc["files"])
        self.assertNotIn(installed, doc["files"])  # the candidate took its place
        # A drop-in that does not exist yet is added, in its name's order.
        doc = self.json_of("check-config", "--as", "/etc/iotuned/iotuned.yaml.d/40-new.yaml", good)
        self.assertTrue(doc["valid"])
        self.assertLess(doc["files"].index(good), doc["files"].index(installed))
        # PATH was never touched, nothing else was written.
        with open(installed) as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(sorted(os.listdir(os.path.dirname(installed))), ["50-site.yaml"])
        self.assertFalse(os.path.exists(os.path.join(self.root, "run/iotuned")))

        # Usage errors: exit 64, naming what is wrong.
        for path, why in (("/etc/iotuned/other/50-site.yaml", "not a place configuration is read from"),
                          ("/etc/iotuned/iotuned.yaml.d/50-site.yml", "not a *.yaml file name"),
                          ("/etc/iotuned/iotuned.yaml.d/.50-site.yaml", "not a *.yaml file name"),
                          ("/etc/iotuned/iotuned.yaml.d/../profiles/x.yaml", "a path with a '..' component"),
                          ("/tmp/iotuned.yaml", "not a place configuration is read from")):
            p = self.run_cli("check-config", "--as", path, good, expect=64)
            self.assertIn(f"--as {path}: {why}", p.stderr)
        p = self.run_cli("check-config", "--as", as_path, expect=64)
        self.assertIn("takes one FILE", p.stderr)
        p = self.run_cli("plan", "--as", as_path, expect=64)
        self.assertIn("--as belongs to 'check-config'", p.stderr)
        # A candidate that cannot be read is an invalid configuration, named.
        p = self.run_cli("check-config", "--as", as_path, os.path.join(cand_dir, "missing.yaml"), expect=3)
        self.assertIn(f"{cand_dir}/missing.yaml: cannot open: No such file or directory", p.stderr)
        # ... and one that is a FIFO is refused, not waited on.
        fifo = os.path.join(cand_dir, "fifo.yaml")
        os.mkfifo(fifo, 0o600)
        p = subprocess.run([IOTUNECTL, "--root", self.root, "check-config", "--as", as_path, fifo],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn(f"{fifo}: not a regular file\n", p.stderr)
        # The usage error lists where configuration is read from here.
        p = self.run_cli("check-config", "--as", "/tmp/iotuned.yaml", good, expect=64)
        self.assertIn(f"read from {self.root}/etc/iotuned, {self.root}/run/iotuned, ", p.stderr)

    def test_unnamed_rule_is_named_by_place(self):
        path = self.write_conf("iotuned.yaml.d/50-site.yaml",
                               "rules:\n  - match: { kernel: 'sd*' }\n    exclude: true\n    profile: turbo\n"
                               "    set: { queue: { nr_requests: 64 } }\n")
        p = self.run_cli("check-config", expect=3)
        self.assertNotIn("(null)", p.stderr)
        self.assertIn(f"{path}:4:14: rule '{path}:2' uses unknown profile 'turbo'", p.stderr)

    def test_dropin_rule_and_admin_profile(self):
        self.standard_set()
        self.write_conf("profiles/db.yaml", "description: database\nextends: latency\nqueue:\n  nr_requests: 64\n"
                                            "pcie:\n  aspm: 'off'\n")
        self.write_conf("iotuned.yaml.d/50-db.yaml",
                        "rules:\n  - name: db-disks\n    match: { model: 'QEMU HARD*' }\n    profile: db\n")
        doc = self.json_of("plan", "sda")
        sda = doc["devices"][0]
        self.assertEqual((sda["profile"], sda["rule"]), ("db", "db-disks"))
        s = self.settings(sda)
        self.assertEqual(s["nr_requests"]["desired"], "64")
        self.assertTrue(s["nr_requests"]["origin"]["file"].endswith("/etc/iotuned/profiles/db.yaml"))
        self.assertEqual(s["scheduler"]["desired"], "none")
        profiles = {p["name"]: p for p in self.json_of("profiles")["profiles"]}
        self.assertEqual(profiles["db"]["extends"], "latency")
        self.assertEqual(sorted(profiles), ["db", "latency", "mixed", "throughput"])
        out = self.run_cli("profiles", "show", "db").stdout
        self.assertRegex(out, r"nr_requests\s+64\s+# .*/etc/iotuned/profiles/db.yaml:4:16")
        # the nvme: section, inherited from latency, under its own heading
        self.assertRegex(out, r"\nnvme:\n  apst\s+off\s+# <builtin>/profiles/latency.yaml:\d+:\d+\n")
        shown = self.json_of("profiles", "show", "db")["profile"]
        self.assertEqual(shown["nvme"]["coalescing"]["value"], "off")
        self.assertNotIn("apst", shown["queue"])
        # the pcie: section too, in the text and in JSON
        self.assertRegex(out, r"\npcie:\n  aspm\s+off\s+# .*/etc/iotuned/profiles/db.yaml:6:9\n")
        self.assertEqual(shown["pcie"]["aspm"]["value"], "off")
        self.assertNotIn("aspm", shown["queue"])

    def test_udev_property_pins_profile(self):
        self.bed.nvme(0, props={"IOTUNED_PROFILE": "throughput"})
        dev = self.json_of("plan")["devices"][0]
        self.assertEqual((dev["profile"], dev["rule"]), ("throughput", "IOTUNED_PROFILE"))

    def test_exclude_rule(self):
        self.standard_set()
        self.write_conf("iotuned.yaml.d/10-skip.yaml",
                        "rules:\n  - name: leave-vda\n    match: { transport: virtio }\n    exclude: true\n")
        self.run_cli("apply")
        self.assertEqual(self.bed.read("vda", "queue/nr_requests"), "256")
        self.assertFalse(os.path.exists(os.path.join(self.root, "run/iotuned/originals/vda.json")))

    # -- explain and errors -----------------------------------------------
    def test_explain(self):
        self.standard_set()
        out = self.run_cli("explain", "sda").stdout
        self.assertIn("no    nvme (<builtin>/iotuned.yaml:", out)
        self.assertIn("kernel name 'sda' does not match 'nvme*'", out)
        self.assertIn("MATCH rotational", out)
        self.assertIn("Result: profile throughput (rule rotational: rotational is true)", out)
        self.assertRegex(out, r"read_ahead_kb\s+4096\s+128\s+would-change\s+<builtin>/profiles/throughput.yaml:\d+:\d+")
        doc = self.json_of("explain", "nvme0n1")
        self.assertEqual(doc["rules"][0], {"rule": "nvme", "matched": True,
                                           "why": "kernel name 'nvme0n1' matches 'nvme*'",
                                           "origin": doc["rules"][0]["origin"]})

    def test_usage_and_device_errors(self):
        self.standard_set()
        self.bed.partition("sda", "sda1")
        p = self.run_cli("plan", "nvme9n9", expect=4)
        self.assertIn("No such block disk: nvme9n9", p.stderr)
        p = self.run_cli("apply", "sda1", expect=4)
        self.assertIn("sda1 is a partition", p.stderr)
        self.run_cli("frobnicate", expect=64)
        self.run_cli("--no-such-flag", "plan", expect=64)
        self.run_cli("explain", expect=64)
        self.run_cli("profiles", "show", "nonesuch", expect=4)
        self.assertIn("plan [DEVICE...]", self.run_cli("--help").stdout)

    def test_tune_options_are_checked_before_anything_is_measured(self):
        self.standard_set()
        self.assertIn("tune takes one or more DEVICEs", self.run_cli("tune", expect=64).stderr)
        self.assertIn("belong to 'tune'", self.run_cli("plan", "--write", expect=64).stderr)
        for args, text in ((["--rounds", "2"], "--rounds '2': expected 3 to 32 rounds"),
                           (["--knobs", "scheduler,read_ahead_kb"], "--knobs 'read_ahead_kb': not a measured knob"),
                           (["--depths", "0"], "--depths '0': expected queue depths from 1 to 1024"),
                           (["--depths", "1,2,4,8,16"], "at most 4 queue depths"),
                           (["--block-size", "1000"], "--block-size '1000': expected a multiple of 512"),
                           (["--runtime", "10ms"], "--runtime '10ms': expected a duration from 100 ms"),
                           (["--range", "4096"], "--range '4096': expected OFFSET:LENGTH"),
                           (["--min-effect", "five"], "--min-effect 'five': expected a percentage"),
                           (["--busy", "101"], "--busy '101': expected a percentage from 0 to 100"),
                           (["--alpha", "0.5"], "--alpha '0.5': expected a significance level"),
                           (["--rounds", "5", "--alpha", "0.01"], "--rounds 5 cannot reach --alpha 0.01")):
            err = self.run_cli("tune", "sda", *args, expect=64).stderr
            self.assertIn(text, err)
        self.assertIn("No such block disk: nvme9n9", self.run_cli("tune", "nvme9n9", expect=4).stderr)
        out = self.run_cli("tune", "--help").stdout
        self.assertTrue(out.startswith("Usage: iotunectl [OPTIONS] tune DEVICE..."), out)
        self.assertIn("sign test", out)
        self.assertIn("--alpha", out)

    def test_diagnose_names_the_udev_rule_and_checks_its_options(self):
        self.bed.nvme(0)
        self.bed.sata("sda", rotational=1)
        rules = os.path.join(self.root, "etc/udev/rules.d")
        os.makedirs(rules)
        with open(os.path.join(rules, "60-legacy.rules"), "w") as f:
            f.write('ACTION=="add|change", KERNEL=="nvme[0-9]*n[0-9]*", ATTR{queue/scheduler}="mq-deadline"\n')
        # An idle disk's counters (the 17 fields of 6.1): sampled twice, no I/O between.
        self.bed.write("nvme0n1", "stat", "100 0 800 40 0 0 0 0 0 50 40 0 0 0 0 0 0")
        self.bed.write("nvme0n1", "inflight", "0 0")
        doc = self.json_of("diagnose", "--interval", "100ms", expect=1)  # warnings
        self.assertEqual(doc["command"], "diagnose")
        self.assertFalse(doc["daemon_status"])
        self.assertGreaterEqual(doc["seconds"], 0.1)
        devs = self.by_device(doc)
        self.assertEqual(sorted(devs), ["nvme0n1", "sda"])
        nv = {(f["kind"], f["knob"]): f for f in devs["nvme0n1"]["findings"]}
        rule = nv[("udev-rule-writer", "scheduler")]
        self.assertEqual(rule["severity"], "warning")
        self.assertEqual(rule["source"], "/etc/udev/rules.d/60-legacy.rules:1")
        self.assertIn("sets scheduler=mq-deadline on add|change events", rule["summary"])
        fight = nv[("fights-iotuned", "scheduler")]
        self.assertIn("profile latency wants none", fight["summary"])
        self.assertIn("idle: no I/O completed", nv[("io-load", None)]["summary"])
        # most severe first
        sev = ["critical", "warning", "notice", "info"]
        order = [sev.index(f["severity"]) for f in devs["nvme0n1"]["findings"]]
        self.assertEqual(order, sorted(order))
        # the rule does not match sda: no writer finding there
        self.assertNotIn("udev-rule-writer", [f["kind"] for f in devs["sda"]["findings"]])
        text = self.run_cli("diagnose", "nvme0n1", "--interval", "100ms", expect=1).stdout
        self.assertRegex(text, r"warning\s+udev-rule-writer\s+scheduler\s+/etc/udev/rules.d/60-legacy.rules:1 sets")
        self.assertNotIn("io-load", text)
        self.assertIn("io-load", self.run_cli("diagnose", "nvme0n1", "--interval", "100ms", "--all", expect=1).stdout)
        # options and devices
        self.assertIn("Invalid --interval '5ms'", self.run_cli("diagnose", "--interval", "5ms", expect=64).stderr)
        self.assertIn("belongs to 'diagnose'", self.run_cli("plan", "--interval", "1s", expect=64).stderr)
        self.assertIn("No such block disk: nvme9n9", self.run_cli("diagnose", "nvme9n9", expect=4).stderr)
        out = self.run_cli("diagnose", "--help").stdout
        self.assertTrue(out.startswith("Usage: iotunectl [OPTIONS] diagnose [DEVICE...]"), out)
        self.assertIn("software-queue", out)

    def test_cli_conventions(self):
        self.standard_set()
        # per-command help, in both spellings, and help for an unknown command
        for args in (["plan", "--help"], ["--help", "plan"], ["help", "plan"], ["plan", "-h"]):
            out = self.run_cli(*args).stdout
            self.assertTrue(out.startswith("Usage: iotunectl [OPTIONS] plan [DEVICE...]"), out)
            self.assertIn("Options for plan:", out)
            self.assertNotIn("Commands:", out)
        for verb in ("apply", "verify", "restore", "status", "explain", "profiles", "check-config", "tune", "diagnose"):
            self.assertIn(f"Usage: iotunectl [OPTIONS] {verb}", self.run_cli(verb, "--help").stdout)
        self.assertIn("Commands:", self.run_cli("help").stdout)
        self.assertIn("Unknown command 'nope'", self.run_cli("help", "nope", expect=64).stderr)
        # -V and --version; --no-pager accepted; errors name the program, not argv[0]
        self.assertRegex(self.run_cli("-V").stdout, r"^iotunectl \d")
        self.assertEqual(self.run_cli("-V").stdout, self.run_cli("--version").stdout)
        self.run_cli("--no-pager", "plan")
        for args, text in ((["--bogus"], "Unknown option '--bogus'"), (["-x"], "Unknown option '-x'"),
                           (["plan", "--config"], "Option '--config' needs an argument")):
            err = self.run_cli(*args, expect=64).stderr
            self.assertTrue(err.startswith(f"iotunectl: {text}"), err)
            self.assertNotIn(IOTUNECTL + ":", err)

    def test_tables_have_no_trailing_blanks_and_colour_follows_the_environment(self):
        self.standard_set()
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "SYSTEMD_COLORS")}

        def plan(extra_env):
            # exit 2: the fixture NVMe controllers refuse some admin commands (a failed row)
            p = subprocess.run([IOTUNECTL, "--root", self.root, "plan", "--all"], capture_output=True,
                               text=True, env={**env, **extra_env})
            self.assertIn(p.returncode, (0, 2), p.stderr)
            return p.stdout

        out = plan({})
        self.assertNotIn("\x1b", out, "not a terminal: no colour")
        for line in out.splitlines():
            self.assertEqual(line, line.rstrip(), f"trailing blanks: {line!r}")
        out = plan({"SYSTEMD_COLORS": "1"})
        self.assertIn("\x1b[0;32mok\x1b[0m", out)
        self.assertIn("\x1b[0;36mwould-change\x1b[0m", out)
        # the columns after a coloured state still line up with the header
        plain = plan({}).splitlines()
        coloured = [re.sub(r"\x1b\[[0-9;]*m", "", l) for l in out.splitlines()]
        self.assertEqual(plain, coloured)
        self.assertNotIn("\x1b", plan({"SYSTEMD_COLORS": "1", "NO_COLOR": "1"}))
        self.assertNotIn("\x1b", plan({"SYSTEMD_COLORS": "0"}))
        doc = subprocess.run([IOTUNECTL, "--root", self.root, "--json", "plan"], capture_output=True, text=True,
                             env={**env, "SYSTEMD_COLORS": "1"}).stdout
        self.assertNotIn("\x1b", doc, "JSON is never coloured")

    def test_status_text_keeps_changed_apart_from_ok(self):
        path = os.path.join(self.root, "run/iotuned/status.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"daemon": {"pid": os.getpid()},
                       "devices": [{"device": "sda", "profile": "throughput", "rule": "rotational",
                                    "settings": [{"knob": "scheduler", "state": "ok"},
                                                 {"knob": "nr_requests", "state": "changed"},
                                                 {"knob": "read_ahead_kb", "state": "changed"}]}]}, f)
        out = self.run_cli("status").stdout
        self.assertRegex(out, r"sda +throughput +rotational +1 ok, 2 changed +0")
        for line in out.splitlines():
            self.assertEqual(line, line.rstrip(), f"trailing blanks: {line!r}")

    # -- NVMe controller settings (the admin commands go to fake_nvme) -----
    def test_nvme_coalescing_command_words_and_restore(self):
        self.bed.nvme(0)
        fake = self.bed.controllers["nvme0"]
        self.write_conf("profiles/batch.yaml",
                        "extends: latency\nnvme:\n  coalescing: { threshold: 8, time_us: 200 }\n")
        self.write_conf("iotuned.yaml.d/50-batch.yaml", "default_profile: batch\nrules: []\n")
        doc = self.json_of("plan")
        s = self.settings(self.by_device(doc)["nvme0n1"])
        self.assertEqual(s["coalescing"]["object"], "nvme0 coalescing")
        self.assertEqual(s["coalescing"]["observed"], "off")
        self.assertEqual(s["coalescing"]["effective"], "threshold=8,time_us=200")
        self.assertEqual(s["coalescing"]["state"], "changed")
        self.assertEqual(fake.sets(0x08), [], "a dry run sends no Set Features")

        self.run_cli("apply")
        # cdw10 FID 0x08 (SV=0), cdw11 TIME=2 (x100 us) in bits 15:8, THR=7 (0's based) in bits 7:0
        self.assertEqual(fake.sets(0x08), [0x0207])
        sets = [c for c in fake.commands if c[0] == 0x09]
        self.assertEqual(sets[0][1], 0x08, "cdw10: FID 0x08, save bit clear")
        self.assertEqual(self.settings(self.by_device(self.json_of("verify"))["nvme0n1"])["coalescing"]["state"], "ok")

        # A controller reset brings back the default: verify calls that drift.
        fake.reset()
        doc = self.json_of("verify", expect=1)
        self.assertEqual(self.settings(self.by_device(doc)["nvme0n1"])["coalescing"]["state"], "drifted")

        # The original (off) was recorded before the first Set Features and comes back.
        fake.features[0x08] = 0x0207
        self.run_cli("restore")
        self.assertEqual(fake.sets(0x08), [0x0207, 0x0000])

    def test_nvme_coalescing_not_changeable_is_unsupported_not_drift(self):
        self.bed.nvme(0, fake=FakeNvme(coalescing="fixed"))
        fake = self.bed.controllers["nvme0"]
        self.write_conf("profiles/batch.yaml", "extends: latency\nnvme: { coalescing: 'threshold=8,time_us=200' }\n")
        self.write_conf("iotuned.yaml.d/50-batch.yaml", "default_profile: batch\nrules: []\n")
        for verb, code in (("plan", 0), ("apply", 0), ("verify", 0)):
            s = self.settings(self.by_device(self.json_of(verb, expect=code))["nvme0n1"])["coalescing"]
            self.assertEqual(s["state"], "unsupported", verb)
            self.assertIn("not changeable", s["note"])
        self.assertEqual(fake.sets(0x08), [], "nothing is sent to a feature the controller cannot change")
        # the capability was asked with SEL=11b (supported capabilities) in cdw10 bits 10:8
        self.assertIn(0x0308, [c[1] for c in fake.commands if c[0] == 0x0A])

    def test_nvme_apst_through_pm_qos_and_unsupported(self):
        self.bed.nvme(0, pm_qos="auto")  # the kernel drives APST on this one
        self.bed.nvme(2)                  # APSTA = 0
        out = self.run_cli("apply").stdout
        self.assertRegex(out, r"nvme0n1\s+nvme0 apst\s+off\s+off\s+changed\s+latency\s+was auto")
        self.assertEqual(self.bed.read("nvme0", "power/pm_qos_latency_tolerance_us"), "0")
        self.assertRegex(out, r"nvme2n1\s+nvme2 apst\s+-\s+off\s+unsupported\s+latency\s+"
                              r"the controller does not support APST \(Identify Controller APSTA is 0\)")
        for fake in self.bed.controllers.values():
            self.assertEqual(fake.sets(0x0C), [], "APST goes through the kernel's pm_qos file, never Set Features")
        self.run_cli("restore")
        self.assertEqual(self.bed.read("nvme0", "power/pm_qos_latency_tolerance_us"), "auto")

    # -- PCIe links ----------------------------------------------------------
    def aspm_files(self, pci="0000:01:00.0"):
        d = self.bed.tb.get_root_dir() + self.bed.paths[pci] + "/link"
        out = {}
        for f in sorted(os.listdir(d)):
            with open(os.path.join(d, f)) as fh:
                out[f] = fh.read().strip()
        return out

    def test_pcie_aspm_plan_apply_verify_drift_restore(self):
        before = {"l0s_aspm": "1", "l1_aspm": "1", "l1_1_aspm": "1", "l1_2_aspm": "0"}
        self.bed.nvme(0, namespaces=2, aspm=before)
        self.bed.nvme(2)  # no link/ directory: a link the kernel does not control
        self.write_conf("profiles/awake.yaml", "extends: latency\npcie:\n  aspm: off\n")
        self.write_conf("iotuned.yaml.d/50-awake.yaml", "default_profile: awake\nrules: []\n")

        doc = self.json_of("plan")
        devs = self.by_device(doc)
        s = self.settings(devs["nvme0n1"])["aspm"]
        self.assertEqual((s["object"], s["observed"], s["effective"], s["state"]),
                         ("0000:01:00.0 aspm", "l0s,l1,l1_1", "off", "changed"))
        self.assertNotIn("aspm", self.settings(devs["nvme0n2"]), "the function's link is planned once")
        s = self.settings(devs["nvme2n1"])["aspm"]
        self.assertEqual(s["state"], "unsupported")
        self.assertIn("has no ASPM files", s["note"])
        self.assertEqual(self.aspm_files(), before, "a dry run writes nothing")

        out = self.run_cli("apply").stdout
        self.assertRegex(out, r"nvme0n1\s+0000:01:00.0 aspm\s+off\s+off\s+changed\s+awake\s+was l0s,l1,l1_1")
        self.assertEqual(self.aspm_files(), {f: "0" for f in before})
        with open(os.path.join(self.root, "run/iotuned/originals/nvme0n1.json")) as f:
            self.assertEqual(json.load(f)["values"]["aspm"], "l0s,l1,l1_1")
        self.run_cli("verify")

        # Someone turns L1 back on: drift, and apply puts it off again.
        self.bed.write("0000:01:00.0", "link/l1_aspm", "1")
        doc = self.json_of("verify", expect=1)
        drifted = [(d["device"], s["knob"]) for d in doc["devices"] for s in d["settings"] if s["state"] == "drifted"]
        self.assertEqual(drifted, [("nvme0n1", "aspm")])
        self.run_cli("apply")
        self.assertEqual(self.aspm_files()["l1_aspm"], "0")
        self.run_cli("verify")

        self.run_cli("restore")
        self.assertEqual(self.aspm_files(), before)

    def test_pcie_aspm_state_the_link_lacks_is_unsupported(self):
        self.bed.nvme(0, aspm={"l1_aspm": "0"})
        self.write_conf("iotuned.yaml.d/50-rule.yaml",
                        "rules:\n  - name: nvme\n    match: { kernel: 'nvme*' }\n    profile: latency\n"
                        "    set: { pcie: { aspm: 'l0s,l1' } }\n")
        for verb in ("plan", "apply", "verify"):
            s = self.settings(self.by_device(self.json_of(verb))["nvme0n1"])["aspm"]
            self.assertEqual(s["state"], "unsupported", verb)
            self.assertIn("does not support l0s", s["note"])
        self.assertEqual(self.aspm_files(), {"l1_aspm": "0"})

    def test_nvme_identity_in_explain_and_rules(self):
        self.bed.nvme(0, model="ACME Fast 2000")
        self.bed.nvme(2)
        self.write_conf("iotuned.yaml.d/50-nqn.yaml",
                        "rules:\n  - name: acme\n    match: { nqn: 'nqn.2019-08.org.qemu:SER0', model: 'ACME*' }\n"
                        "    profile: mixed\n")
        devs = self.by_device(self.json_of("plan"))
        self.assertEqual(devs["nvme0n1"]["rule"], "acme")
        self.assertIn("subsystem NQN 'nqn.2019-08.org.qemu:SER0' matches", devs["nvme0n1"]["reason"])
        self.assertEqual(devs["nvme2n1"]["rule"], "nvme")
        nv = devs["nvme0n1"]["facts"]["nvme"]
        self.assertEqual(nv["controller"], "nvme0")
        self.assertEqual(nv["model"], "ACME Fast 2000")
        self.assertEqual(nv["subsysnqn"], "nqn.2019-08.org.qemu:SER0")
        self.assertTrue(nv["identified"])
        self.assertFalse(nv["apst_supported"])
        self.assertEqual(nv["granted_io_sq"], 2)   # Get Features 0x07 reply, 0's based 1
        self.assertEqual(nv["io_queue_depth"], 1024)
        self.assertEqual(nv["max_queue_entries"], 2048)  # CAP.MQES 0x7ff + 1, from resource0
        self.assertEqual(nv["queue_maps"], {"default": 2, "read": 0, "poll": 0})
        out = self.run_cli("explain", "nvme0n1").stdout
        self.assertIn("NQN:         nqn.2019-08.org.qemu:SER0", out)
        self.assertRegex(out, r"controller:\s+nvme0 \(pcie 0000:01:00.0, live\)")
        self.assertIn("APST:      not supported", out)
        self.assertIn("2 I/O submission / 2 completion queues granted", out)
        self.assertIn("maps:      2 default, 0 read, 0 poll queues", out)

    def test_nvme_io_queue_depth_capped_by_mqes_pending_reboot(self):
        self.bed.nvme(0)                # MQES 0x7ff: 2048 entries
        self.bed.nvme(2, mqes=0x3FF)    # 1024 entries: it has them already
        self.bed.nvme(3, mqes=None)     # no BAR to read: MQES unknown
        self.write_conf("profiles/deep.yaml",
                        "extends: latency\nqueue: { nr_requests: 4096 }\nnvme: { io_queue_depth: 4095 }\n")
        self.write_conf("iotuned.yaml.d/50-deep.yaml", "rules:\n  - { match: { kernel: 'nvme*' }, profile: deep }\n")
        dropin = os.path.join(self.root, "etc/modprobe.d/iotuned-nvme.conf")
        devs = self.by_device(self.json_of("plan"))
        self.assertIsNone(devs["nvme3n1"]["facts"]["nvme"]["max_queue_entries"])
        s = self.settings(devs["nvme0n1"])["io_queue_depth"]
        self.assertEqual((s["observed"], s["effective"], s["state"]), ("1024", "2048", "changed"))
        self.assertIn("would write nvme.io_queue_depth=4095", s["note"])
        self.assertIn("tag depth 1023", s["detail"])
        n = self.settings(devs["nvme0n1"])["nr_requests"]
        self.assertEqual(n["effective"], "1023")
        self.assertIn("2047 once the pending nvme.io_queue_depth takes effect", n["note"])
        s = self.settings(devs["nvme2n1"])["io_queue_depth"]
        self.assertEqual((s["observed"], s["effective"], s["state"]), ("1024", "1024", "ok"))
        self.assertIn("CAP.MQES + 1", s["note"])
        s = self.settings(devs["nvme3n1"])["io_queue_depth"]
        self.assertEqual((s["effective"], s["state"]), ("4095", "changed"))
        self.assertFalse(os.path.exists(dropin))

        out = self.run_cli("apply").stdout
        self.assertRegex(out, r"nvme0n1\s+nvme0 io_queue_depth\s+1024\s+2048\s+pending-reboot")
        self.assertNotIn("nvme2 io_queue_depth", out)  # ok rows are not listed
        with open(dropin) as f:
            self.assertIn("\noptions nvme io_queue_depth=4095\n", f.read())
        self.assertIn("pending-reboot", self.run_cli("verify", "nvme0n1").stdout)  # not drift: exit 0
        self.run_cli("restore")
        self.assertFalse(os.path.exists(dropin), "restore removes the drop-in it owns")

    def test_nvme_poll_queues_pending_reboot_writes_dropin(self):
        self.bed.nvme(0)
        self.bed.nvme(2)
        self.write_conf("profiles/poll.yaml", "extends: latency\nnvme: { poll_queues: 1 }\n")
        self.write_conf("profiles/poll2.yaml", "extends: latency\nnvme: { poll_queues: 2 }\n")
        self.write_conf("iotuned.yaml.d/50-poll.yaml",
                        "rules:\n  - { match: { kernel: nvme0n1 }, profile: poll }\n"
                        "  - { match: { kernel: nvme2n1 }, profile: poll2 }\n")
        dropin = os.path.join(self.root, "etc/modprobe.d/iotuned-nvme.conf")
        devs = self.by_device(self.json_of("plan", "nvme0n1"))
        s = self.settings(devs["nvme0n1"])["poll_queues"]
        self.assertEqual((s["observed"], s["effective"], s["state"]), ("0", "1", "changed"))
        # module-wide: the drop-in takes the largest any profile wants, even for a named disk
        self.assertIn("would write nvme.poll_queues=2", s["note"])
        self.assertFalse(os.path.exists(dropin))

        out = self.run_cli("apply").stdout
        self.assertRegex(out, r"nvme0n1\s+nvme0 poll_queues\s+0\s+1\s+pending-reboot")
        self.assertRegex(out, r"nvme2n1\s+nvme2 poll_queues\s+0\s+2\s+pending-reboot")
        with open(dropin) as f:
            self.assertIn("\noptions nvme poll_queues=2\n", f.read())
        self.assertIn("1 pending-reboot", self.run_cli("verify", "nvme0n1").stdout)  # not drift: exit 0
        self.run_cli("restore")
        self.assertFalse(os.path.exists(dropin), "restore removes the drop-in it owns")

    # -- hostile runtime input ---------------------------------------------
    def run_cli_quick(self, *args, expect=0, timeout=20):
        """run_cli, but a hang (a FIFO read) fails the test instead of the suite."""
        try:
            p = subprocess.run([IOTUNECTL, "--root", self.root, *args], capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail(f"iotunectl {' '.join(args)} did not return within {timeout} s")
        if p.returncode != expect:
            self.fail(f"iotunectl {' '.join(args)}: exit {p.returncode}, expected {expect}\n"
                      f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p

    def write_status(self, doc):
        path = os.path.join(self.root, "run/iotuned/status.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def test_status_malformed_exits_2_naming_the_member(self):
        me = os.getpid()  # a live pid, so the file is not taken for a leftover
        good_setting = {"knob": "scheduler", "state": "ok"}
        cases = [
            ({"daemon": {"pid": me}, "devices": [{"device": "sda", "settings": [{"knob": "x", "state": None}]}]},
             "devices[0].settings[0].state: expected a string, not null"),
            ({"daemon": {"pid": me}, "devices": {"sda": {}}}, "devices: expected an array"),
            ({"daemon": {"pid": me}, "devices": [{"device": "sda", "settings": "ok"}]},
             "devices[0].settings: expected an array"),
            ({"daemon": {"pid": me}, "devices": [{"device": "sda", "settings": [good_setting]},
                                                 {"device": "sdb", "settings": [good_setting, 7]}]},
             "devices[1].settings[1]: expected an object"),
            ({"daemon": {"pid": str(me)}, "devices": []}, "daemon.pid: expected an integer"),
            ({"daemon": {"pid": me, "irqbalance": {"state": 5}}, "devices": []},
             "daemon.irqbalance.state: expected a string"),
            ("[1, 2", "(document): not JSON"),
            ("", "(document): empty"),
        ]
        for doc, message in cases:
            path = self.write_status(doc)
            for extra in ([], ["--json"]):
                p = self.run_cli_quick(*extra, "status", expect=2)
                self.assertIn(f"{path}: {message}", p.stderr)
                self.assertEqual(p.stdout, "")

    def test_status_escapes_what_the_file_says(self):
        self.write_status({"daemon": {"pid": os.getpid(), "irqbalance": {"state": "up\x1b]0;pwned\x07"}},
                           "devices": [{"device": "sd\x1b[2Ja", "profile": "p\nq", "rule": None,
                                        "settings": [{"knob": "scheduler", "state": "drifted",
                                                      "effective": "none", "observed": "\x9b31m",
                                                      "note": "bad\rnote"}]}]})
        out = self.run_cli_quick("status", expect=1).stdout
        self.assertNotIn("\x1b", out)
        self.assertNotIn("\r", out)
        self.assertNotIn("\x9b", out)
        self.assertIn("irqbalance: up\\e]0;pwned\\a", out)
        self.assertIn("sd\\e[2Ja scheduler: drifted (desired none, observed \\xc2\\x9b31m): bad\\rnote", out)
        self.assertIn("p\\nq", out)

    def test_status_file_that_is_a_fifo_or_link(self):
        path = os.path.join(self.root, "run/iotuned/status.json")
        os.makedirs(os.path.dirname(path))
        os.mkfifo(path)
        p = self.run_cli_quick("status", expect=2)
        self.assertIn("not a regular file", p.stderr)
        os.unlink(path)
        os.symlink("/etc/passwd", path)
        p = self.run_cli_quick("status", expect=2)
        self.assertIn("Too many levels of symbolic links", p.stderr)

    def test_fifos_are_refused_not_waited_on(self):
        self.bed.nvme(0, irqs=[40, 41])
        self.fake_proc({40: "nvme0q0", 41: "nvme0q1"})
        os.unlink(os.path.join(self.root, "proc/interrupts"))
        os.mkfifo(os.path.join(self.root, "proc/interrupts"))
        os.unlink(os.path.join(self.root, "proc/irq/40/smp_affinity_list"))
        os.mkfifo(os.path.join(self.root, "proc/irq/40/smp_affinity_list"))
        for a in ("queue/nomerges", "wwid"):  # read by iotunectl, and by what libudev would read
            attr = self.bed.attr_path("nvme0n1", a)
            os.unlink(attr)
            os.mkfifo(attr)
        for verb, code in (("plan", 2), ("verify", 2), ("explain nvme0n1", 0)):
            p = self.run_cli_quick(*verb.split(), expect=code)
            self.assertIn("/proc/interrupts: not a regular file; vectors are not named", p.stderr)
            self.assertRegex(p.stdout, r"nomerges\s+.*not a regular file")
            self.assertRegex(p.stdout, r"irq 40\s+.*not a regular file")
        doc = json.loads(self.run_cli_quick("--json", "plan", expect=2).stdout)
        s = self.settings(doc["devices"][0])
        self.assertEqual(s["nomerges"]["state"], "failed")
        # diagnose reads more: the disk's stat and inflight, rules, debugfs
        for a in ("stat", "inflight"):
            attr = self.bed.attr_path("nvme0n1", a)
            if os.path.exists(attr):
                os.unlink(attr)
            os.mkfifo(attr)
        rules = os.path.join(self.root, "etc/udev/rules.d")
        os.makedirs(rules)
        os.mkfifo(os.path.join(rules, "60-fifo.rules"))
        doc = json.loads(self.run_cli_quick("--json", "diagnose", "--interval", "100ms", expect=1).stdout)
        kinds = [f["kind"] for f in doc["devices"][0]["findings"]]
        self.assertIn("setting-failed", kinds)
        self.assertNotIn("io-load", kinds)  # no stat to sample

    def test_root_links_never_lead_out_of_the_root(self):
        outside = tempfile.mkdtemp(prefix="iotuned-outside-")
        self.addCleanup(shutil.rmtree, outside, ignore_errors=True)
        canary = os.path.join(outside, "interrupts")
        with open(canary, "w") as f:
            f.write("           CPU0       CPU1\n 40:  0  0  PCI-MSIX-0000:01:00.0   0-edge      CANARY\n")
        cpus = os.path.join(outside, "cpus")
        with open(cpus, "w") as f:
            f.write("7\n")
        self.bed.nvme(0, irqs=[40])
        self.fake_proc({40: "nvme0q0"})
        for target in (canary, "../" * 12 + canary.lstrip("/")):
            os.unlink(os.path.join(self.root, "proc/interrupts"))
            os.symlink(target, os.path.join(self.root, "proc/interrupts"))
            aff = os.path.join(self.root, "proc/irq/40/smp_affinity_list")
            os.unlink(aff)
            os.symlink(target.replace("interrupts", "cpus"), aff)
            p = self.run_cli_quick("--json", "plan", expect=2)
            self.assertNotIn("CANARY", p.stdout + p.stderr)
            vec = [s for s in json.loads(p.stdout)["devices"][0]["settings"] if s["irq"] == 40][0]
            self.assertEqual(vec["object"], "irq 40")
            self.assertNotEqual(vec["observed"], "7")
            self.assertEqual(vec["state"], "failed")
            # apply writes nothing outside either
            self.run_cli_quick("apply", expect=2)
            with open(cpus) as f:
                self.assertEqual(f.read(), "7\n")
        # a record directory that is a link out of the root: the record lands inside
        shutil.rmtree(os.path.join(self.root, "proc"))
        self.fake_proc({40: "nvme0q0"})
        shutil.rmtree(os.path.join(self.root, "run"), ignore_errors=True)
        os.symlink(outside, os.path.join(self.root, "run"))
        self.bed.write("nvme0n1", "queue/rq_affinity", "1")  # something to write, so a record first
        self.run_cli_quick("apply")
        self.assertFalse(os.path.exists(os.path.join(outside, "iotuned")))
        self.assertTrue(os.path.exists(os.path.join(self.root, outside.lstrip("/"), "iotuned/originals/nvme0n1.json")))

    def test_corrupt_originals_record_is_reported_not_replaced(self):
        self.bed.nvme(0)
        rec = os.path.join(self.root, "run/iotuned/originals/nvme0n1.json")
        os.makedirs(os.path.dirname(rec))
        bad = '{"version": 1, "device": "nvme0n1", "values": {"rq_affinity": 2}}'
        with open(rec, "w") as f:
            f.write(bad)
        p = self.run_cli_quick("apply", expect=2)
        self.assertIn(f"Cannot record the original values of nvme0n1 in {rec}: not a valid originals record", p.stderr)
        self.assertEqual(self.bed.read("nvme0n1", "queue/rq_affinity"), "1", "nothing written")
        with open(rec) as f:
            self.assertEqual(f.read(), bad)
        p = self.run_cli_quick("restore", expect=2)
        self.assertIn("not a valid originals record", p.stdout)
        self.assertTrue(os.path.exists(rec), "kept for a person to look at")

    def test_escaped_sysfs_text_and_huge_size(self):
        self.bed.nvme(0)
        self.bed.write("nvme0n1", "wwid", "eui.\x1b[31mred\x7f")
        self.bed.write("nvme0n1", "size", str(2**55))  # 2^64 bytes: does not fit
        out = self.run_cli_quick("explain", "nvme0n1").stdout
        self.assertNotIn("\x1b", out)
        self.assertIn("wwn: eui.\\e[31mred\\x7f", out)
        self.assertIn("size: 0 bytes", out)
        doc = self.json_of("plan")
        self.assertEqual(doc["devices"][0]["facts"]["wwn"], "eui.\x1b[31mred\x7f")  # JSON escapes it itself
        self.assertEqual(doc["devices"][0]["facts"]["size_bytes"], 0)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_cli.py IOTUNECTL [unittest args]")
    IOTUNECTL = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
