# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Unit tests for plugins/module_utils/certify/nccl_results.py (nccl-tests log parser)."""
from __future__ import annotations

import os
import random
import re

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_results import (
    COLLECTIVES, NcclResult, busbw_factor, canonical_collective, expected_busbw, parse_nccl_file,
    parse_nccl_output, parse_nccl_runs, split_nccl_runs)
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import dump_yaml, load_yaml_text

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "nccl")
GIB = 1 << 30


def fixture(name: str) -> str:
    return os.path.join(FIXTURES, name)


def read(name: str) -> str:
    with open(fixture(name), encoding="utf-8") as handle:
        return handle.read()


def has_reason(result: NcclResult, pattern: str) -> bool:
    return any(re.search(pattern, reason) for reason in result.reasons)


# --- every collective ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, collective, ranks, nrows, hosts", [
    ("all_reduce_8gpu_h100.log", "all_reduce", 8, 31, ["dgx-h100-01"]),
    ("all_gather_16rank_2host.log", "all_gather", 16, 14, ["gpu-node-01", "gpu-node-02"]),
    ("alltoall_16rank_novalidation.log", "alltoall", 16, 11, ["gpu-node-01", "gpu-node-02"]),
    ("sendrecv_8gpu.log", "sendrecv", 8, 13, ["dgx-h100-01"]),
    ("reduce_scatter_8gpu.log", "reduce_scatter", 8, 11, ["dgx-h100-02"]),
    ("broadcast_8gpu.log", "broadcast", 8, 11, ["dgx-h100-02"]),
    ("reduce_8gpu.log", "reduce", 8, 11, ["dgx-h100-02"]),
    ("gather_8gpu.log", "gather", 8, 11, ["dgx-h100-02"]),
    ("scatter_8gpu.log", "scatter", 8, 11, ["dgx-h100-02"]),
    ("hypercube_8gpu.log", "hypercube", 8, 11, ["dgx-h100-02"]),
])
def test_parses_every_collective(name, collective, ranks, nrows, hosts):
    result = parse_nccl_file(fixture(name))
    assert result.ok, result.reasons
    assert result.reasons == []
    assert result.collective == collective
    assert result.ranks == ranks
    assert result.hosts == hosts
    assert len(result.rows) == nrows
    assert [d.rank for d in result.devices] == list(range(ranks))
    assert result.device_names == ["NVIDIA H100 80GB HBM3"]
    # the summary numbers are the maxima of the rows, recomputed here independently
    best = [max(v for v in (r.oop_busbw, r.ip_busbw) if v is not None) for r in result.rows]
    assert result.max_busbw == max(best)
    large = [b for r, b in zip(result.rows, best) if r.size >= GIB]
    assert result.large_message_busbw == (max(large) if large else best[-1])
    # every reported busbw agrees with algbw x factor within 2 % + printing precision
    factor = busbw_factor(collective, ranks)
    for row in result.rows:
        for alg, bus in ((row.oop_algbw, row.oop_busbw), (row.ip_algbw, row.ip_busbw)):
            if alg is not None and bus is not None:
                assert abs(bus - alg * factor) <= 0.02 * alg * factor + 0.015 * (1 + factor)


def test_all_reduce_single_node_details():
    result = parse_nccl_file(fixture("all_reduce_8gpu_h100.log"))
    assert result.parameters == {"nthread": 1, "ngpus": 8, "min_bytes": 8, "max_bytes": 8 * GIB, "step": 2,
                                 "step_kind": "factor", "warmup_iters": 5, "iters": 20, "agg_iters": 1,
                                 "validation": 1, "graph": 0}
    assert result.tests_version == "2.17.6"
    assert result.nccl_version == "2.21.5+cuda12.4"
    assert result.avg_busbw == pytest.approx(168.078)
    assert result.out_of_bounds == 0
    first, last = result.rows[0], result.rows[-1]
    assert (first.size, first.count, first.dtype, first.redop, first.root) == (8, 2, "float", "sum", -1)
    assert (last.size, last.count) == (8 * GIB, 2 * GIB)
    assert (last.oop_time_us, last.oop_algbw, last.oop_busbw, last.oop_wrong) == (30970.0, 277.37, 485.39, 0)
    assert (last.ip_time_us, last.ip_algbw, last.ip_busbw, last.ip_wrong) == (31322.0, 274.24, 479.93, 0)
    assert result.large_message_size == GIB
    assert result.large_message_busbw == 486.32  # the 2 GiB out-of-place row is the best large-message row
    assert result.devices[3].pci_bus == "0000:5d:00" and result.devices[3].pid == 41237
    assert result.warnings == []


def test_average_is_reported_but_not_the_gate():
    result = parse_nccl_file(fixture("all_reduce_8gpu_h100.log"))
    # a sweep from 8 B drags the average far below what the fabric delivers at large sizes
    assert result.avg_busbw < 0.5 * result.large_message_busbw


def test_mpirun_tagged_output_with_nccl_info_noise():
    result = parse_nccl_file(fixture("all_gather_16rank_2host.log"))
    assert result.ok
    # the collective comes from the shell-traced command line; INFO lines are not failures
    assert result.collective == "all_gather"
    assert [d.host for d in result.devices] == ["gpu-node-01"] * 8 + ["gpu-node-02"] * 8
    assert result.rows[0].redop == "none"
    # all_gather prints the total size and the per-rank count
    assert result.rows[0].size == 1 << 20 and result.rows[0].count == (1 << 20) // 4 // 16


def test_alltoall_na_columns():
    result = parse_nccl_file(fixture("alltoall_16rank_novalidation.log"))
    assert result.ok
    assert all(r.oop_wrong is None and r.ip_wrong is None for r in result.rows)
    assert all(r.redop == "none" and r.root == -1 for r in result.rows)
    assert result.parameters["validation"] == 0
    assert any("validation was off" in w for w in result.warnings)


def test_sendrecv_in_place_not_validated():
    result = parse_nccl_file(fixture("sendrecv_8gpu.log"))
    assert result.ok
    assert all(r.oop_wrong == 0 and r.ip_wrong is None for r in result.rows)
    assert busbw_factor("sendrecv", 8) == 1.0


def test_blank_redop_of_older_versions():
    result = parse_nccl_file(fixture("gather_8gpu.log"))
    assert all(r.redop == "none" and r.root == 0 for r in result.rows)
    assert any("taken from the file name" in w for w in result.warnings)
    # the same text without a file name: collective unknown, no cross-check, but still parsed
    anonymous = parse_nccl_output(read("gather_8gpu.log"))
    assert anonymous.collective is None and len(anonymous.rows) == 11
    assert any("not cross-checked" in w for w in anonymous.warnings)


# --- failures become reasons ------------------------------------------------------------------------

def test_data_corruption():
    result = parse_nccl_file(fixture("all_reduce_wrong.log"))
    assert not result.ok
    assert has_reason(result, r"data corruption: #wrong > 0 at 2 sizes: 256 MiB \(1048576\), 1 GiB \(12\)")
    assert has_reason(result, r"2 out-of-bounds")
    assert result.out_of_bounds == 2
    assert [r.wrong for r in result.rows if r.wrong] == [1048576, 12]


def test_nccl_warn_test_failure_and_mpi_abort():
    result = parse_nccl_file(fixture("all_reduce_nccl_warn.log"))
    assert not result.ok
    assert has_reason(result, r"^NCCL WARN on gpu-node-02 \(2 lines\): NET/IB : Got completion from peer")
    assert has_reason(result, r"^NCCL WARN on gpu-node-01 \(1 line\): NET/IB : Got async event : port error")
    assert has_reason(result, r"nccl-tests failed: gpu-node-02: Test NCCL failure common.cu:1075")
    assert has_reason(result, r"MPI_ABORT was invoked on rank 11")
    assert has_reason(result, r"truncated log: no 'Avg bus bandwidth' line after 9 rows \(last size 256 MiB\)")
    assert len(result.rows) == 9


def test_ignored_warn_patterns_become_warnings():
    result = parse_nccl_file(fixture("all_reduce_nccl_warn.log"), ignore_warn_patterns=[r"async event"])
    assert not has_reason(result, "async event")
    assert any("ignored NCCL WARN (1 line): NET/IB : Got async event" in w for w in result.warnings)
    assert has_reason(result, "Got completion from peer")
    bad = parse_nccl_output(read("all_reduce_8gpu_h100.log"), ignore_warn_patterns=["("])
    assert bad.ok and any("not a valid regular expression" in w for w in bad.warnings)


def test_mpi_abort_by_signal():
    result = parse_nccl_file(fixture("all_reduce_mpi_abort.log"))
    assert not result.ok
    assert has_reason(result, r"rank 9 on gpu-node-02 exited on signal 9 \(Killed\)")
    assert has_reason(result, r"1 process\(es\) returned a non-zero exit code")
    assert has_reason(result, r"truncated log")


def test_truncated_log():
    result = parse_nccl_file(fixture("all_reduce_truncated.log"))
    assert not result.ok
    assert has_reason(result, r"truncated log: no 'Avg bus bandwidth' line after 25 rows \(last size 128 MiB\)")
    assert has_reason(result, r"truncated or malformed result row: '268435456")
    assert result.avg_busbw is None
    assert result.large_message_size == 128 << 20
    assert any("no row reaches the large-message cutoff" in w for w in result.warnings)


def test_header_only_run():
    text = "\n".join(read("all_reduce_8gpu_h100.log").splitlines()[:16]) + "\n"
    result = parse_nccl_output(text)
    assert not result.ok and result.ranks == 8
    assert has_reason(result, "no result rows")


@pytest.mark.parametrize("data", [b"", "", "   \n\n", b"\n"])
def test_empty(data):
    result = parse_nccl_output(data)
    assert not result.ok
    assert result.reasons == ["empty log: no nccl-tests output at all"]


def test_empty_file_and_missing_file(tmp_path):
    assert parse_nccl_file(fixture("empty.log")).reasons == ["empty log: no nccl-tests output at all"]
    missing = parse_nccl_file(str(tmp_path / "nope.log"))
    assert not missing.ok and has_reason(missing, r"cannot read log file .*nope.log")
    big = tmp_path / "big.log"
    big.write_text("x" * 100)
    assert has_reason(parse_nccl_file(str(big), max_bytes=10), "over the 10 byte limit")


def test_garbage_bytes():
    result = parse_nccl_file(fixture("garbage.bin"))
    assert not result.ok
    assert has_reason(result, r"binary or garbage")
    assert result.rows == []


def test_text_without_nccl_content():
    result = parse_nccl_output("hello\nthis is not\na benchmark log\n")
    assert not result.ok
    assert has_reason(result, r"no nccl-tests output recognised \(3 lines")


def test_garbage_never_raises():
    base = read("all_reduce_nccl_warn.log")
    rnd = random.Random(1234)
    for _round in range(150):
        chars = list(base)
        for _edit in range(rnd.randrange(1, 40)):
            pos = rnd.randrange(len(chars))
            chars[pos] = rnd.choice(["\x00", "#", " ", "-", "N/A", "9", "e", "\n", "\ufffd", "nan", ":"])
        text = "".join(chars)[: rnd.randrange(1, len(base))]
        result = parse_nccl_output(text.encode("utf-8", errors="replace") if rnd.random() < 0.5 else text)
        assert isinstance(result, NcclResult)
        # the source log has failures and no 'Avg bus bandwidth' line: no mutation can make it pass
        assert result.ok is False and result.reasons


# --- busbw recomputation ------------------------------------------------------------------------------

@pytest.mark.parametrize("collective, ranks, factor", [
    ("all_reduce", 8, 1.75), ("all_reduce", 16, 1.875), ("all_reduce", 1, 0.0),
    ("all_gather", 8, 0.875), ("reduce_scatter", 4, 0.75), ("alltoall", 16, 0.9375),
    ("gather", 8, 0.875), ("scatter", 2, 0.5),
    ("broadcast", 8, 1.0), ("reduce", 8, 1.0), ("sendrecv", 8, 1.0), ("hypercube", 8, 1.0),
])
def test_busbw_factor(collective, ranks, factor):
    assert busbw_factor(collective, ranks) == pytest.approx(factor)
    assert expected_busbw(collective, 100.0, ranks) == pytest.approx(100.0 * factor)


def test_busbw_factor_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown collective 'allsum'"):
        busbw_factor("allsum", 8)
    with pytest.raises(ValueError, match="ranks must be an integer >= 1"):
        busbw_factor("all_reduce", 0)


def test_inconsistent_busbw_is_a_reason():
    result = parse_nccl_file(fixture("all_reduce_busbw_inconsistent.log"))
    assert not result.ok
    assert has_reason(result, r"inconsistent log: reported busbw does not match algbw x 1.7500 \(all_reduce, 8 ranks\) "
                              r"in 22 places")


def test_one_edited_busbw_value_is_caught():
    lines = read("all_reduce_8gpu_h100.log").splitlines()
    index = next(i for i, line in enumerate(lines) if line.strip().startswith("1073741824"))
    assert "477.99" in lines[index]
    lines[index] = lines[index].replace("477.99", "501.89")  # +5 %
    result = parse_nccl_output("\n".join(lines))
    assert has_reason(result, r"in 1 place, e.g. 1 GiB out-of-place: busbw 501.89, algbw 273.14 x 1.7500 = 478.00")
    lines[index] = lines[index].replace("501.89", "479.00")  # within 2 %: rounding and timing noise
    assert parse_nccl_output("\n".join(lines)).ok


def test_wrong_rank_count_makes_busbw_inconsistent():
    # the same log claimed to come from 16 ranks: the all-reduce factor changes from 1.75 to 1.875
    result = parse_nccl_output(read("all_reduce_8gpu_h100.log"), ranks=16)
    assert result.ranks == 16
    assert any("ranks=16 was given but the log lists 8" in w for w in result.warnings)
    assert has_reason(result, r"x 1.8750 \(all_reduce, 16 ranks\)")


def test_ranks_inferred_without_rank_lines():
    # the format some wrappers print: no '#' before header lines and no '#  Rank' lines
    text = "\n".join(line.lstrip("#") for line in read("all_reduce_8gpu_h100.log").splitlines()
                     if "Rank" not in line)
    result = parse_nccl_output(text)
    assert result.ok, result.reasons
    assert result.ranks == 8 and result.devices == [] and result.hosts == []
    assert any("8 ranks inferred from busbw/algbw" in w for w in result.warnings)
    assert len(result.rows) == 31


# --- options, multiple runs, serialisation ----------------------------------------------------------

def test_large_message_cutoff_option():
    result = parse_nccl_file(fixture("all_reduce_8gpu_h100.log"), large_message_bytes=8 * GIB)
    assert result.large_message_size == 8 * GIB
    assert result.large_message_busbw == 485.39
    assert result.large_message_cutoff == 8 * GIB


def test_given_collective_overrides_log():
    result = parse_nccl_output(read("broadcast_8gpu.log"), collective="reduce_perf")
    assert result.collective == "reduce"
    assert any("collective reduce was given but the log says broadcast" in w for w in result.warnings)
    unknown = parse_nccl_output(read("broadcast_8gpu.log"), collective="allsum")
    assert unknown.collective is None and any("unknown collective 'allsum'" in w for w in unknown.warnings)


def test_two_runs_in_one_log():
    text = read("two_runs.log")
    chunks = split_nccl_runs(text)
    assert len(chunks) == 2
    assert "all_gather_perf -b 256M" in chunks[1] and "all_gather" not in chunks[0]
    runs = parse_nccl_runs(text)
    assert [(r.collective, len(r.rows), r.ok) for r in runs] == [("all_reduce", 3, True), ("all_gather", 3, True)]
    single = parse_nccl_output(text)
    assert not single.ok and has_reason(single, "log holds 2 nccl-tests runs")
    assert single.collective == "all_reduce" and len(single.rows) == 3


def test_round_trip_dict_and_yaml():
    for name in ("all_reduce_8gpu_h100.log", "alltoall_16rank_novalidation.log", "all_reduce_nccl_warn.log"):
        result = parse_nccl_file(fixture(name))
        again = NcclResult.from_dict(result.to_dict())
        assert again == result
        assert NcclResult.from_dict(load_yaml_text(dump_yaml(result.to_dict()))) == result


@pytest.mark.parametrize("name, canon", [
    ("all_reduce_perf", "all_reduce"), ("all_reduce_perf_mpi", "all_reduce"), ("AllReduce", "all_reduce"),
    ("/opt/nccl-tests/build/alltoall_perf", "alltoall"), ("reduce-scatter", "reduce_scatter"),
    ("sendrecv", "sendrecv"), ("allsum", None), ("", None), (None, None),
])
def test_canonical_collective(name, canon):
    assert canonical_collective(name) == canon


def test_collectives_list_is_canonical():
    assert all(canonical_collective(c) == c for c in COLLECTIVES)


@pytest.mark.parametrize("line, pattern", [
    ("dgx-h100-01: Test timeout (60s) common.cu:402", r"nccl-tests failed: dgx-h100-01: Test timeout \(60s\)"),
    ("dgx-h100-01: Test CUDA failure common.cu:891 'out of memory'", r"Test CUDA failure common.cu:891 'out of memory'"),
    ("srun: error: dgx-h100-01: task 3: Exited with exit code 1", r"Slurm step failed on dgx-h100-01 \(task 3\)"),
    ("slurmstepd: error: *** STEP 1234.0 ON dgx-h100-01 CANCELLED AT 2026-01-01T00:00:00 ***", r"Slurm job or step was cancelled"),
    ("[dgx-h100-01] NCCL WARN Cuda failure 'out of memory'", r"^NCCL WARN on dgx-h100-01 \(1 line\): Cuda failure"),
    ("NCCL ERROR ncclInternalError: internal error", r"^NCCL ERROR \(1 line\): ncclInternalError"),
    ("nRanks 6 is not a power of 2, skipping", r"hypercube_perf skipped the test: 6 ranks"),
])
def test_failure_lines_in_an_otherwise_complete_run(line, pattern):
    lines = read("all_reduce_8gpu_h100.log").splitlines()
    lines.insert(20, line)
    result = parse_nccl_output("\n".join(lines))
    assert not result.ok
    assert [r for r in result.reasons if re.search(pattern, r)], result.reasons
    assert len(result.rows) == 31  # the measurement itself is still parsed


def test_launcher_prefixes_are_stripped():
    lines = read("all_reduce_8gpu_h100.log").splitlines()
    labelled = "\n".join("0: " + line for line in lines)
    stamped = "\n".join("2026-02-03T04:05:06.123456789Z " + line for line in lines)
    coloured = "\n".join("\x1b[32m" + line + "\x1b[0m" for line in lines)
    for text in (labelled, stamped, coloured):
        result = parse_nccl_output(text)
        assert result.ok, result.reasons
        assert (result.collective, result.ranks, len(result.rows)) == ("all_reduce", 8, 31)


def test_old_format_error_column():
    text = "\n".join([
        "# nThread 1 nGpus 2 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 validation: 1",
        "#  Rank  0 Pid  100 on node01 device  0 [0x07] Tesla V100-SXM2-16GB",
        "#  Rank  1 Pid  100 on node01 device  1 [0x08] Tesla V100-SXM2-16GB",
        "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
        "     1048576        262144   float     sum    45.12   23.24   23.24  0e+00    44.90   23.35   23.35  0e+00",
        "     2097152        524288   float     sum    81.20   25.83   25.83  1e-06    80.90   25.92   25.92  0e+00",
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 24.59",
    ])
    result = parse_nccl_output(text, collective="all_reduce")
    assert result.ok, result.reasons
    assert result.ranks == 2 and [d.group for d in result.devices] == [0, 0]
    assert [(r.size, r.redop, r.root, r.oop_wrong) for r in result.rows] == [(1048576, "sum", -1, None), (2097152, "sum", -1, None)]
    assert any("'error' column is a maximum error" in w for w in result.warnings)


def test_row_with_only_the_in_place_variant():
    lines = read("all_reduce_8gpu_h100.log").splitlines()
    index = next(i for i, line in enumerate(lines) if line.strip().startswith("1073741824"))
    row = lines[index]
    preamble, values = row[:52], row.split()[5:]
    assert preamble.split()[-1] == "-1"
    lines[index] = preamble + " " * 32 + "  %7s  %6s  %6s  %5s" % tuple(values[4:8])
    result = parse_nccl_output("\n".join(lines))
    parsed = next(r for r in result.rows if r.size == 1 << 30)
    assert parsed.oop_busbw is None and parsed.ip_busbw == float(values[6])
    assert any("only one of out-of-place/in-place" in w for w in result.warnings)
    assert result.ok


def test_launcher_could_not_start():
    text = "\n".join([
        "ssh: connect to host gpu-node-05 port 22: No route to host",
        "--------------------------------------------------------------------------",
        "ORTE was unable to reliably start one or more daemons.",
        "This usually is caused by a remote host being unreachable (gpu-node-05).",
        "--------------------------------------------------------------------------",
        "mpirun noticed that the job aborted, but has no info as to the process that caused that situation.",
    ])
    result = parse_nccl_output(text)
    assert not result.ok
    assert result.reasons[:3] == ["cannot reach host gpu-node-05 over ssh: No route to host",
                                  "MPI launcher could not start its daemons on every host",
                                  "MPI run aborted (the launcher does not know which process)"]
    assert result.reasons[-1] == "no nccl-tests result in the log"
