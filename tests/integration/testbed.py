# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fake block devices for iotunectl, built with umockdev.

umockdev makes libudev (and plain file access under /sys) see a testbed of
devices with sysfs attributes and udev properties. Attribute files are plain
files: a write lands verbatim, without the kernel's clamping or formatting, so
these fixtures test discovery, matching, planning and the apply/verify/restore
bookkeeping. Kernel semantics (read-back clamping, managed IRQs) are tested in
the VM suite (tests/vm/).

Must run under `umockdev-wrapper` with Debian's /usr/bin/python3 (python3-gi).
"""
import gi

gi.require_version("UMockdev", "1.0")
from gi.repository import UMockdev  # noqa: E402

from fake_nvme import FakeNvme  # noqa: E402

_diskseq = [100]


def _next_diskseq():
    _diskseq[0] += 1
    return str(_diskseq[0])


def queue_attrs(scheduler="[none] mq-deadline", nr_requests=1023, rotational=0, wbt=2000,
                read_ahead=128, max_hw_sectors=512, queues=2, nr_tags=1023, mq=True):
    """Attributes of a whole disk's queue as a 6.1 kernel shows them."""
    a = {
        "queue/scheduler": scheduler,
        "queue/nr_requests": str(nr_requests),
        "queue/rq_affinity": "1",
        "queue/nomerges": "0",
        "queue/read_ahead_kb": str(read_ahead),
        "queue/add_random": "0",
        "queue/iostats": "1",
        "queue/max_sectors_kb": str(min(max_hw_sectors, 1280)),
        "queue/max_hw_sectors_kb": str(max_hw_sectors),
        "queue/rotational": str(rotational),
        "size": str(2 * 1024 * 1024 * 2),  # 2 GiB in 512-byte sectors
        "diskseq": _next_diskseq(),
    }
    if wbt is not None:
        a["queue/wbt_lat_usec"] = str(wbt)
    if mq:
        a["queue/io_timeout"] = "30000"  # blk-mq queues only; the nvme and sd default
        for q in range(queues):
            a[f"mq/{q}/cpu_list"] = str(q)
            a[f"mq/{q}/nr_tags"] = str(nr_tags)
    return a


def _flat(d):
    out = []
    for k, v in d.items():
        out += [k, v]
    return out


class Testbed:
    def __init__(self):
        self.tb = UMockdev.Testbed.new()
        self.paths = {}
        self.controllers = {}  # "nvme0" -> FakeNvme answering /dev/nvme0

    def controller(self, name, parent, attrs, fake):
        """An NVMe controller with a character device whose admin commands `fake`
        answers (add_device makes no /dev node; a record with N: does)."""
        record = [f"P: {(parent or '/sys/devices')[len('/sys'):]}/{name}", f"N: {name}", f"E: DEVNAME=/dev/{name}",
                  "E: SUBSYSTEM=nvme", "A: dev=242:0"] + [f"A: {k}={v}" for k, v in attrs.items()]
        self.tb.add_from_string("\n".join(record) + "\n")
        path = (parent or "/sys/devices") + "/" + name
        self.paths[name] = path
        if fake is not None:
            self.tb.attach_ioctl(f"/dev/{name}", fake.handler)
            self.controllers[name] = fake
        return path

    def add(self, subsystem, name, parent, attrs, props):
        path = self.tb.add_device(subsystem, name, parent, _flat(attrs), _flat(props))
        self.paths[name] = path
        return path

    def disk(self, name, parent, attrs, props=None):
        p = {"DEVTYPE": "disk", "DEVNAME": f"/dev/{name}"}
        p.update(props or {})
        return self.add("block", name, parent, attrs, p)

    def nvme(self, ctrl_index, namespaces=1, numa_node="-1", model="QEMU NVMe Ctrl", transport="pcie",
             props=None, irqs=None, fake=True, pm_qos=None, mqes=0x7FF, aspm=None, **queue):
        pci_attrs = {"numa_node": numa_node, "local_cpulist": "0-1"}
        for irq in irqs or []:
            pci_attrs[f"msi_irqs/{irq}"] = "msix"
        # The function's link/ files (drivers/pci/pcie/aspm.c), one per state the
        # link supports: {"l1_aspm": "1", ...}; None: no link/ directory at all.
        for f, v in (aspm or {}).items():
            pci_attrs[f"link/{f}"] = v
        pci = self.add("pci", f"0000:0{ctrl_index + 1}:00.0", None, pci_attrs, {})
        if mqes is not None:
            # BAR 0 as resource0 shows it: CAP at offset 0, little-endian; MQES (bits
            # 15:0, zero-based; QEMU's default 0x7ff), CQR (bit 16), TO (bits 31:24).
            cap = mqes | 1 << 16 | 0x0F << 24 | 1 << 37
            self.tb.set_attribute_binary(pci, "resource0", list(cap.to_bytes(8, "little")) + [0] * (4096 - 8))
        if fake is True:
            fake = FakeNvme(model=model, serial=f"SER{ctrl_index}", apsta=pm_qos is not None)
        attrs = {"model": model + "   ", "serial": f"SER{ctrl_index}", "firmware_rev": "8.0.0 ",
                 "transport": transport, "subsysnqn": f"nqn.2019-08.org.qemu:SER{ctrl_index}",
                 "address": f"0000:0{ctrl_index + 1}:00.0", "state": "live", "queue_count": "3", "sqsize": "1023"}
        if pm_qos is not None:
            # Present when the kernel drives APST (drivers/nvme/host/core.c)
            attrs["power/pm_qos_latency_tolerance_us"] = pm_qos
        ctrl = self.controller(f"nvme{ctrl_index}", pci, attrs, fake or None)
        for ns in range(1, namespaces + 1):
            self.disk(f"nvme{ctrl_index}n{ns}", ctrl, {**queue_attrs(**queue), "wwid": f"eui.{ctrl_index:04d}{ns:04d}"},
                      props)
        return ctrl

    def sata(self, name="sda", rotational=1, **queue):
        host = self.add("scsi", "host0", None, {}, {"DEVTYPE": "scsi_host"})
        sdev = self.add("scsi", "0:0:0:0", host, {"model": "QEMU HARDDISK   ", "rev": "2.5+", "vendor": "ATA"},
                        {"DEVTYPE": "scsi_device"})
        return self.disk(name, sdev,
                         queue_attrs(scheduler="none [mq-deadline]", nr_requests=64, rotational=rotational,
                                     wbt=75000 if rotational else 2000, queues=1, nr_tags=32, **queue),
                         {"ID_BUS": "ata", "ID_MODEL": "QEMU_HARDDISK", "ID_SERIAL_SHORT": "QM00001"})

    def virtio(self, name="vda"):
        vdev = self.add("virtio", "virtio2", None, {}, {})
        return self.disk(name, vdev, queue_attrs(scheduler="[none] mq-deadline", nr_requests=256, rotational=1,
                                                 wbt=75000, queues=1, nr_tags=256))

    def multipath(self, subsys=1, ctrl=1, ns=1):
        """A native-multipath NVMe subsystem: a bio-based head and one hidden path."""
        sub = self.add("nvme-subsystem", f"nvme-subsys{subsys}", None, {"subsysnqn": "nqn.test"}, {})
        self.disk(f"nvme{subsys}n{ns}", sub,
                  {"queue/scheduler": "none", "queue/read_ahead_kb": "128", "queue/rotational": "0",
                   "size": "4096", "diskseq": _next_diskseq()})
        c = self.controller(f"nvme{ctrl}", None, {"model": "Linux", "serial": "abc", "firmware_rev": "6.1",
                                                  "transport": "tcp", "subsysnqn": "nqn.test"},
                            FakeNvme(model="Linux", serial="abc", subnqn="nqn.test"))
        self.disk(f"nvme{subsys}c{ctrl}n{ns}", c, queue_attrs(nr_requests=128, nr_tags=128), {"DEVNAME": ""})

    def loop(self, name="loop0"):
        return self.disk(name, None, queue_attrs(queues=1, nr_tags=128))

    def partition(self, disk, name):
        return self.add("block", name, self.paths[disk], {"partition": "1", "size": "2048"},
                        {"DEVTYPE": "partition"})

    def attr_path(self, disk, attr):
        # umockdev keeps attribute files under $UMOCKDEV_DIR + the device path
        return self.tb.get_root_dir() + self.paths[disk] + "/" + attr

    def read(self, disk, attr):
        with open(self.attr_path(disk, attr)) as f:
            return f.read().strip()

    def write(self, disk, attr, value):
        self.tb.set_attribute(self.paths[disk], attr, value)
