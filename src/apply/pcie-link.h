/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The ASPM row's back end: the per-link files of drivers/pci/pcie/aspm.c (5.5+),
 * below <PCI function>/link/. The directory is on the downstream function (the
 * NVMe controller, the AHCI controller) and acts on the link to the port above it,
 * which the function's siblings share. A file exists only for a state the link
 * supports; none exists when ASPM is off (pcie_aspm=off, the firmware kept
 * control: aspm_disabled) or the function has no PCIe link (a PCI or an
 * integrated device). */

/* The states whose files exist in `link_dir`, as a mask of aspm_link_files[]. */
unsigned pcie_link_states(const char *link_dir);

/* The link's enabled states as the ASPM row's normalize() takes them ("off",
 * "l1,l1_1"). -EOPNOTSUPP when `link_dir` is NULL or has no ASPM files (*ret_why,
 * which may be NULL, says why); other -errno when a file cannot be read. */
int pcie_link_read(const char *link_dir, char **ret_raw, char **ret_why);

/* 0 and *ret_why when the link lacks a state `canonical` enables, 1 otherwise. */
int pcie_link_changeable(const char *link_dir, const char *canonical, char **ret_why);

/* Make exactly the states of `canonical` enabled: 0 to every other file, then 1 to
 * those (L1 before its substates). The first failing write's -errno, with *ret_why. */
int pcie_link_write(const char *link_dir, const char *canonical, char **ret_why);
