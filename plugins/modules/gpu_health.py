#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_health
short_description: Check the health of a host's NVIDIA GPUs (NVML, XID events, optional DCGM diagnostic)
version_added: "0.1.0"
description:
  - Runs on each GPU host. Reads every GPU through NVML (Python package C(nvidia-ml-py), module C(pynvml)) - name, UUID,
    serial, driver and CUDA version, temperature, power, clocks and throttle reasons, ECC mode and volatile/aggregate
    single- and double-bit error counts, retired pages, remapped rows (pending, failure), PCIe link generation and width
    (current against maximum), NVLink link state and error counters - and listens for XID events for O(xid_window_s) seconds.
  - XIDs logged before that window are read from the kernel log (O(kernel_log)) with their time stamps and mapped to the GPU by
    its PCI bus id.
  - Evaluates one check per topic and GPU plus host checks (GPU count against O(expected_gpu_count)). Each check has a status
    C(ok), C(warn) or C(fail), a reason naming the GPU (index, UUID, serial, PCI bus id) and a recommended action
    (C(none), C(check_application), C(reset_gpu), C(reboot), C(contact_support), C(replace)) from the collection's fault catalog.
  - Application-class XIDs (for example 13, 31, 43, 45) never fail a host.
  - With O(dcgm_level) 1-4 it also runs C(dcgmi diag -r <level> -j) (without a shell, under coreutils C(timeout)) and adds one
    check per failed or warning DCGM test. DCGM 3.x and 4.x JSON are understood.
  - With O(recorded_readings) it evaluates a recorded reading file instead of live NVML (tests, offline triage); the file is
    replayed through the same NVML reading code. O(return_readings=true) returns a reading that can be saved as such a file.
  - Without an NVIDIA driver the task fails with C(NVML library not found on <host> (no NVIDIA driver?)).
  - Never changes anything (C(changed) is always false). Active DCGM diagnostics load the GPUs; run them on drained nodes.
author:
  - dsxos.cluster contributors (@dsxos)
requirements:
  - nvidia-ml-py (pynvml) on the managed host, unless O(recorded_readings) is given
  - DCGM (C(dcgmi) and a running C(nv-hostengine)) when O(dcgm_level) is not 0
options:
  expected_gpu_count:
    description: Number of GPUs the host must have. Fewer usable GPUs fail the host; unset skips the count check.
    type: int
  xid_window_s:
    description: Seconds to listen for XID events through NVML. V(0) does not listen.
    type: float
    default: 5.0
  thresholds:
    description:
      - Overrides of the evaluation policy, by key. Temperatures C(temperature_warn_c) (85) and C(temperature_fail_c) (92, or the
        GPU's slowdown temperature when lower); C(power_over_limit_pct) (5); C(ecc_disabled) (V(warn)); C(ecc_volatile_sbe_warn)
        (1000); C(ecc_aggregate_sbe_warn) (10000); C(ecc_aggregate_dbe_warn) (1); C(retired_pages_fail) (60);
        C(pcie_gen_downgrade) (V(warn)); C(pcie_width_downgrade) (V(fail)); C(pcie_replay_warn) (100); C(nvlink_expected_active)
        (unset - every reported link must be active); C(nvlink_crc_warn) (100); C(nvlink_replay_warn) (100);
        C(nvlink_recovery_warn) (1); C(throttle_fail) (hardware slowdown reasons); C(throttle_warn) (C(sw_thermal_slowdown));
        C(application_xid_status) (V(warn)); C(expected_gpu_model) (unset, for example C(H100)); C(gpu_count_above_expected) (V(warn)).
      - Status-valued keys take V(ok), V(warn) or V(fail). Unknown keys are an error.
    type: dict
    default: {}
  recorded_readings:
    description: Path (on the managed host) of a recorded reading file (JSON, format C(dsxos.cluster/gpu-readings/v1)) to evaluate
      instead of reading NVML.
    type: path
  return_readings:
    description: Also return the raw reading (for recording).
    type: bool
    default: false
  dcgm_level:
    description: DCGM diagnostic level to run (C(dcgmi diag -r N -j)); V(0) skips DCGM.
    type: int
    default: 0
    choices: [0, 1, 2, 3, 4]
  dcgm_timeout_s:
    description: Wall-clock limit of the DCGM diagnostic in seconds. Default per level - 300, 1200, 3600, 10800.
    type: int
  dcgmi_path:
    description: Path of C(dcgmi); default is C(dcgmi) found on the PATH.
    type: path
  dcgm_recorded_output:
    description: Path of saved C(dcgmi diag -j) output to evaluate instead of running C(dcgmi) (needs O(dcgm_level) not 0).
    type: path
  fail_on:
    description: Fail the task when the host verdict is at least this bad. V(never) only reports.
    type: str
    default: never
    choices: [never, warn, fail]
  kernel_log:
    description:
      - Where to read XIDs the NVIDIA driver logged before the listening window (the driver's C(NVRM Xid) lines). V(journal)
        runs C(journalctl -k -o short-iso) (kernel messages of this boot), V(dmesg) runs C(dmesg --time-format iso), V(auto) tries
        the journal, then dmesg, and V(off) does not read the kernel log.
      - With O(recorded_readings) and without O(kernel_log_file), V(auto) means V(off) (this host's log is not the recorded host's).
      - A log that cannot be read (no permission, for example C(kernel.dmesg_restrict)) is not an error; the result says why in a
        C(kernel_log) check and in C(warnings).
    type: str
    default: auto
    choices: [auto, dmesg, journal, "off"]
  kernel_log_since:
    description: Oldest kernel log XID that counts - a duration (V(90m), V(24h), V(7d)), C(@<epoch seconds>), an ISO 8601 time stamp
      (no offset means UTC) or V(boot) (everything since the last boot).
    type: str
    default: 24h
  kernel_log_file:
    description: Path (on the managed host) of a saved kernel log (C(journalctl -k -o short-iso), C(journalctl -k -o json) or
      C(dmesg --time-format iso) output) to read instead of this host's kernel log.
    type: path
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Check every GPU host (8 GPUs each), listening 10 s for XID events
  dsxos.cluster.gpu_health:
    expected_gpu_count: 8
    xid_window_s: 10
    thresholds:
      expected_gpu_model: H100
  register: gpu

- name: Show what to do
  ansible.builtin.debug:
    msg: "{{ gpu.verdict }} -> {{ gpu.recommended_action }}: {{ gpu.reasons }}"

- name: Certify a drained node with a medium DCGM diagnostic; fail on any failed check
  dsxos.cluster.gpu_health:
    expected_gpu_count: 8
    dcgm_level: 2
    fail_on: fail

- name: Triage a reading recorded earlier (no GPU needed)
  dsxos.cluster.gpu_health:
    recorded_readings: /var/tmp/gpu-node-17-readings.json
    expected_gpu_count: 8
"""

RETURN = r"""
verdict:
  description: Worst status of all checks (C(ok), C(warn) or C(fail)).
  returned: success
  type: str
  sample: fail
recommended_action:
  description: Strongest action among the failing checks (else among the warnings).
  returned: success
  type: str
  sample: reset_gpu
reasons:
  description: Reasons of the non-ok checks, failures first.
  returned: success
  type: list
  elements: str
checks:
  description: Every check with C(check), C(scope) (C(gpu) or C(host)), C(gpu_index), C(status), C(reason), C(action), C(hint)
    and, where relevant, C(value), C(uuid) and C(fault) (the fault catalog entry of an XID).
  returned: success
  type: list
  elements: dict
gpus:
  description: Per GPU C(index), C(name), C(uuid), C(serial), C(pci_bus_id), C(status), C(reasons), C(recommended_action).
  returned: success
  type: list
  elements: dict
host:
  description: Host name the reading belongs to.
  returned: success
  type: str
driver_version:
  description: NVIDIA driver version.
  returned: success
  type: str
  sample: 550.90.07
cuda_driver_version:
  description: CUDA version supported by the driver.
  returned: success
  type: str
  sample: "12.4"
measurements:
  description: Snapshot measurements (C(GPU.smi.driver), C(GPU.smi.cuda-version), C(GPU.smi.gpu-count), C(GPU.smi.gpu.model))
    for dsxos.cluster.constraint_check.
  returned: success
  type: dict
dcgm:
  description: Parsed DCGM diagnostic (C(format), C(version), C(status), C(runtime_error), C(tests) with C(test), C(category),
    C(status), C(gpu_ids), C(failed_gpu_ids), C(error_codes), C(messages)); null when O(dcgm_level=0).
  returned: success
  type: dict
readings:
  description: The raw reading (format C(dsxos.cluster/gpu-readings/v1)), when O(return_readings=true).
  returned: when requested
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.entry import GPU_HEALTH


def main() -> None:
    module = AnsibleModule(argument_spec=GPU_HEALTH.spec, supports_check_mode=True, **GPU_HEALTH.module_options)
    finish(module, call_entry(GPU_HEALTH, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
