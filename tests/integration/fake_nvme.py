# SPDX-License-Identifier: LGPL-2.1-or-later
"""An NVMe controller's admin command set, as far as iotuned uses it, behind a
umockdev-emulated /dev/nvmeX: Identify Controller, Get Features and Set Features
arrive as the NVME_IOCTL_ADMIN(64)_CMD ioctls libnvme sends, and are answered the
way the NVMe Base Specification 2.0 says. Every command is logged with its
command words, so tests check exactly what iotuned sent (the reason this exists:
libnvme 1.3's own coalescing and APST helpers encode them wrongly).
"""
import struct
import threading

import gi

gi.require_version("UMockdev", "1.0")
from gi.repository import UMockdev  # noqa: E402

# <linux/nvme_ioctl.h>: _IOWR('N', 0x41, struct nvme_passthru_cmd) and the 64-bit-result variant.
NVME_IOCTL_ADMIN_CMD = 0xC0484E41
NVME_IOCTL_ADMIN64_CMD = 0xC0504E47
OPC_SET_FEATURES, OPC_GET_FEATURES, OPC_IDENTIFY = 0x09, 0x0A, 0x06
FID_NUM_QUEUES, FID_IRQ_COALESCE, FID_APST = 0x07, 0x08, 0x0C
# Status field as the kernel returns it from the ioctl: DNR (bit 14) | SCT 0 | SC 0x02
# Invalid Field in Command, which is how a controller rejects a feature it lacks.
STATUS_INVALID_FIELD = 0x4002
# DNR | SCT 1 (command specific) | SC 0x0E Feature Not Changeable: QEMU 7.2's answer
# to Set Features 0x08.
STATUS_FEATURE_NOT_CHANGEABLE = 0x410E
SEL_CURRENT, SEL_SUPPORTED_CAPS = 0, 3
CAP_CHANGEABLE = 1 << 2
ENOTTY = 25


class FakeNvme:
    def __init__(self, model="QEMU NVMe Ctrl", serial="SER0", firmware="8.0.0", apsta=False, npss=0,
                 io_queues=2, coalescing="changeable", subnqn="nqn.2019-08.org.qemu:SER0"):
        """coalescing: "changeable", "fixed" (readable, Set Features refused with
        Feature Not Changeable, as QEMU 7.2 does) or None (not implemented)."""
        self.model, self.serial, self.firmware, self.subnqn = model, serial, firmware, subnqn
        self.apsta, self.npss, self.coalescing = apsta, npss, coalescing
        # Current feature values; 0x07 holds what was granted (0's based NSQA/NCQA).
        self.features = {FID_NUM_QUEUES: ((io_queues - 1) << 16) | (io_queues - 1), FID_IRQ_COALESCE: 0,
                         FID_APST: 0}
        self.commands = []  # (opcode, cdw10, cdw11, data_len)
        self.lock = threading.Lock()
        self.handler = UMockdev.IoctlBase()
        self.handler.connect("handle-ioctl", self._handle)

    def sets(self, fid):
        """The cdw11 of every Set Features for `fid`, in order."""
        with self.lock:
            return [c[2] for c in self.commands if c[0] == OPC_SET_FEATURES and c[1] & 0xFF == fid]

    def reset(self):
        """A controller reset: features go back to their defaults (SV was 0)."""
        with self.lock:
            self.features[FID_IRQ_COALESCE] = 0

    def _identify(self):
        d = bytearray(4096)
        d[4:24] = self.serial.encode().ljust(20)     # SN
        d[24:64] = self.model.encode().ljust(40)     # MN
        d[64:72] = self.firmware.encode().ljust(8)   # FR
        d[263] = self.npss                           # NPSS
        d[265] = 1 if self.apsta else 0              # APSTA
        d[520] = 1 << 4                              # ONCS bit 4: Get Features has a SEL field
        d[768:768 + len(self.subnqn)] = self.subnqn.encode()
        return d

    def _supported(self, fid):
        return fid == FID_NUM_QUEUES or (fid == FID_IRQ_COALESCE and self.coalescing is not None) or \
            (fid == FID_APST and self.apsta)

    def _changeable(self, fid):
        return (fid == FID_IRQ_COALESCE and self.coalescing == "changeable") or (fid == FID_APST and self.apsta)

    def _handle(self, handler, client):
        req = client.get_request()
        if req not in (NVME_IOCTL_ADMIN_CMD, NVME_IOCTL_ADMIN64_CMD):
            client.complete(-1, ENOTTY)
            return True
        cmd = client.get_arg().resolve(0, 72 if req == NVME_IOCTL_ADMIN_CMD else 80)
        raw = bytes(cmd.retrieve())
        opcode = raw[0]
        data_len, = struct.unpack_from("<I", raw, 36)
        cdw10, cdw11 = struct.unpack_from("<II", raw, 40)
        with self.lock:
            self.commands.append((opcode, cdw10, cdw11, data_len))
        fid = cdw10 & 0xFF
        status, result = 0, 0
        if opcode == OPC_IDENTIFY and cdw10 & 0xFF == 0x01 and data_len >= 4096:
            cmd.resolve(24, data_len).update(0, list(self._identify()))
        elif opcode == OPC_GET_FEATURES and self._supported(fid) and (cdw10 >> 8) & 0x7 == SEL_SUPPORTED_CAPS:
            result = CAP_CHANGEABLE if self._changeable(fid) else 0
        elif opcode == OPC_GET_FEATURES and self._supported(fid) and (cdw10 >> 8) & 0x7 == SEL_CURRENT:
            with self.lock:
                result = self.features[fid]
        elif opcode == OPC_SET_FEATURES and self._supported(fid) and not self._changeable(fid):
            status = STATUS_FEATURE_NOT_CHANGEABLE
        elif opcode == OPC_SET_FEATURES and self._changeable(fid):
            with self.lock:
                self.features[fid] = cdw11 & (0xFFFF if fid == FID_IRQ_COALESCE else 0x1)
        else:
            status = STATUS_INVALID_FIELD
        if req == NVME_IOCTL_ADMIN_CMD:
            cmd.update(68, list(struct.pack("<I", result)))
        else:
            cmd.update(72, list(struct.pack("<Q", result)))
        client.complete(status, 0)
        return True
