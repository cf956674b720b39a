# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Unit tests for plugins/module_utils/certify/nccl_results.py (nccl-tests log parser) and the files it parses with: nccl_collectives,
nccl_result_model, nccl_log_reader, nccl_verdict."""
from __future__ import annotations

import json
import os
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nccl_log_corpus
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_collectives import (
    COLLECTIVES, busbw_factor, canonical_collective, expected_busbw, legacy_busbw_factor)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_result_model import NcclResult
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_results import parse_nccl_file, parse_nccl_output, parse_nccl_runs, split_nccl_runs
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_verdict import MAX_LISTED
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


# --- the corpus: every format era, every collective, every launcher ------------------------------------------------

CORPUS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "nccl_logs")


def _check_expected(result: NcclResult, expected: dict) -> None:
    assert not [r for r in result.reasons if "inconsistent" in r], result.reasons
    assert result.collective == expected["collective"]
    assert result.ranks == expected["ranks"]
    assert result.hosts == expected["hosts"]
    assert len(result.rows) == expected["rows"]
    assert result.ok == expected["ok"], result.reasons
    for want in expected["reasons"]:
        assert [r for r in result.reasons if want in r], (want, result.reasons)
    if expected["ok"]:
        assert result.max_busbw == expected["max_busbw"]
        assert result.avg_busbw == expected["avg_busbw"]
        assert result.reasons == []
    else:
        assert result.reasons
    legacy_notes = [w for w in result.warnings if "old nccl-tests bandwidth convention" in w]
    assert bool(legacy_notes) == (expected["legacy"] and expected["rows"] > 0)


def test_committed_corpus_samples_are_what_the_generator_writes(tmp_path):
    written = nccl_log_corpus.write_samples(str(tmp_path))
    committed = sorted(n for n in os.listdir(CORPUS_DIR) if n.endswith(".log"))
    assert written == committed and len(committed) == len(nccl_log_corpus.SAMPLE_NAMES)
    for name in committed + ["expected.json"]:
        with open(os.path.join(CORPUS_DIR, name), encoding="utf-8") as mine, open(str(tmp_path / name), encoding="utf-8") as fresh:
            assert mine.read() == fresh.read(), name


def test_committed_corpus_samples_parse_as_expected():
    with open(os.path.join(CORPUS_DIR, "expected.json"), encoding="utf-8") as handle:
        expected = json.load(handle)
    assert len(expected) == len(nccl_log_corpus.SAMPLE_NAMES)
    for name, exp in sorted(expected.items()):
        _check_expected(parse_nccl_file(os.path.join(CORPUS_DIR, name)), exp)


@pytest.mark.parametrize("era", nccl_log_corpus.ERAS)
def test_whole_corpus_of_an_era(era):
    count = 0
    for name, text, exp in nccl_log_corpus.corpus():
        if exp["era"] != era:
            continue
        count += 1
        result = parse_nccl_output(text, file_hint=name + ".log")
        try:
            _check_expected(result, exp)
        except AssertionError as exc:
            raise AssertionError("%s: %s" % (name, exc)) from exc
    # collectives x 2 topologies x 4 outcomes x every launcher
    assert count == len(nccl_log_corpus.ERA_COLLECTIVES[era]) * 2 * 4 * len(nccl_log_corpus.LAUNCHERS)


# --- the bandwidth convention of old nccl-tests ------------------------------------------------------------------

@pytest.mark.parametrize("collective, ranks, factor", [
    ("all_gather", 8, 1.0), ("reduce_scatter", 16, 1.0), ("gather", 4, 1.0), ("scatter", 2, 1.0),
    ("alltoall", 8, 8 / 7), ("all_reduce", 8, None), ("broadcast", 8, None), ("sendrecv", 2, None),
])
def test_legacy_busbw_factor(collective, ranks, factor):
    assert legacy_busbw_factor(collective, ranks) == factor


@pytest.mark.parametrize("collective", ["all_gather", "reduce_scatter", "alltoall"])
def test_old_log_uses_its_own_convention_and_a_new_one_does_not(collective):
    lines, expected = nccl_log_corpus.generate("2019", collective, 1, "success")
    text, _exp = nccl_log_corpus.wrap(lines, expected, "plain", "success")
    old = parse_nccl_output(text, collective=collective)
    assert old.ok, old.reasons
    assert any("old nccl-tests bandwidth convention" in w and "issue #45" in w for w in old.warnings)
    # the busbw of an old all_gather is the busbw of today's: algbw = busbw
    if collective != "alltoall":
        assert all(r.oop_algbw == r.oop_busbw for r in old.rows)
    # the same numbers under a version line of today's nccl-tests are an inconsistent log
    relabelled = parse_nccl_output("# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703\n" + text,
                                   collective=collective)
    assert not relabelled.ok and has_reason(relabelled, r"^inconsistent log: reported busbw does not match algbw x 0\.8750")


def test_edited_old_log_is_still_inconsistent():
    lines, expected = nccl_log_corpus.generate("2019", "all_gather", 1, "success")
    text, _exp = nccl_log_corpus.wrap(lines, expected, "plain", "success")
    row = next(line for line in text.splitlines() if line.strip().startswith("1073741824"))
    busbw = row.split()[5]
    edited = text.replace(row, row.replace(" %s " % busbw, " %6.2f " % (float(busbw) * 1.2), 1))
    result = parse_nccl_output(edited, collective="all_gather")
    assert not result.ok and has_reason(result, r"inconsistent log: .* in 1 place, e\.g\. 1 GiB out-of-place")


# --- launcher prefixes of any shape -----------------------------------------------------------------------------

@pytest.mark.parametrize("prefix", [
    "[1,0]<stdout>:", " 0: ", "[pod/nccl-test-launcher-7xk2p/mpi-launcher] ", "2026-02-03T04:05:06.123+01:00 ",
    "gpu-node-01: ", "(head, rank=0, pid=3808) [1,0]<stdout>:", "[pod/a/b] 2026-02-03T04:05:06Z 12: ",
    "\x1b[36m(worker pid=77)\x1b[0m ",
])
def test_any_launcher_prefix_keeps_rows_and_trailer(prefix):
    plain = parse_nccl_file(fixture("all_reduce_8gpu_h100.log"))
    text = "\n".join(prefix + line for line in read("all_reduce_8gpu_h100.log").splitlines()) + "\n"
    result = parse_nccl_output(text)
    assert result.ok, result.reasons
    assert [r.to_dict() for r in result.rows] == [r.to_dict() for r in plain.rows]
    assert (result.avg_busbw, result.max_busbw, result.hosts) == (plain.avg_busbw, plain.max_busbw, plain.hosts)


def test_trailer_without_readable_rows_is_explained():
    text = "\n".join(line if line.startswith("#") else "ROW? " + line.replace(" ", "|")
                     for line in read("all_reduce_8gpu_h100.log").splitlines())
    result = parse_nccl_output(text)
    assert not result.ok and result.rows == [] and result.avg_busbw == pytest.approx(168.078)
    assert has_reason(result, r"no result rows could be read although the log reports 'Avg bus bandwidth : 168.078'")
    assert not has_reason(result, "stopped before the first message size")


# --- launcher messages wrapped over two lines ---------------------------------------------------------------------

@pytest.mark.parametrize("lines, pattern", [
    (["mpirun noticed that process rank 3 with PID 0 on node gpu-node-02 exited on", "signal 6 (Aborted)."],
     r"^MPI run aborted: rank 3 on gpu-node-02 exited on signal 6 \(Aborted\)$"),
    (["[1,0]<stderr>:mpirun noticed that process rank 3 with PID 0 on node gpu-node-02 exited on signal 6",
      "[1,0]<stderr>:(Aborted)."], r"^MPI run aborted: rank 3 on gpu-node-02 exited on signal 6 \(Aborted\)$"),
    (["Primary job  terminated normally, but", "1 process returned", "a non-zero exit code."],
     r"^MPI run aborted: 1 process\(es\) returned a non-zero exit code$"),
    (["srun: error: gpu-node-03: task 3: Aborted"], r"^Slurm step failed on gpu-node-03 \(task 3\): Aborted$"),
    (["2026-01-01T00:00:00Z srun: error: gpu-node-03:", "2026-01-01T00:00:01Z task 3: Aborted"],
     r"^Slurm step failed on gpu-node-03 \(task 3\): Aborted$"),
])
def test_wrapped_launcher_messages_are_rejoined(lines, pattern):
    header = read("all_reduce_8gpu_h100.log").splitlines()[:40]
    result = parse_nccl_output("\n".join(header + lines) + "\n")
    assert not result.ok
    assert [r for r in result.reasons if re.search(pattern, r)], result.reasons
    assert len([r for r in result.reasons if r.startswith(("MPI run aborted: rank", "Slurm step"))]) <= 1
    assert not has_reason(result, "no nccl-tests output recognised")


def test_abort_alone_is_the_reason():
    result = parse_nccl_output("mpirun noticed that process rank 0 with PID 0 on node n1 exited on\nsignal 9 (Killed).\n")
    assert result.reasons[0] == "MPI run aborted: rank 0 on n1 exited on signal 9 (Killed)"
    assert not has_reason(result, "no nccl-tests output recognised")


# --- every capped list says how many it left out -------------------------------------------------------------------

def test_many_test_failures_are_grouped_and_counted():
    lines = read("all_reduce_8gpu_h100.log").splitlines()[:30]
    hosts = ["gpu-node-%02d" % i for i in range(37)] + ["gpu-node-00", "gpu-node-01"]
    lines += ["%s: Test NCCL failure common.cu:1075 'unhandled system error'" % h for h in hosts]
    lines += ["gpu-node-%02d: Test CUDA failure common.cu:%d 'out of memory'" % (i, 900 + i) for i in range(12)]
    result = parse_nccl_output("\n".join(lines))
    assert has_reason(result, r"^nccl-tests failed on 37 hosts \(gpu-node-00, gpu-node-01, gpu-node-02, gpu-node-03 and 33 "
                              r"more\), 39 lines: Test NCCL failure common.cu:1075 'unhandled system error'$")
    listed = [r for r in result.reasons if r.startswith("nccl-tests failed")]
    assert len(listed) == MAX_LISTED
    assert has_reason(result, r"^\.\.\. and 3 more distinct nccl-tests failure messages$")


def test_warn_hosts_and_corrupt_sizes_are_counted():
    lines = read("all_reduce_8gpu_h100.log").splitlines()
    lines = [re.sub(r"(\s)0(\s+\S+\s+\S+\s+\S+\s+)0$", r"\g<1>7\g<2>0", line) if re.match(r"^\s+\d+\s+\d+\s+float", line) else line
             for line in lines]
    lines += ["gpu-node-%02d:1:2 [0] NCCL WARN NET/IB : Got async event : port error" % i for i in range(6)]
    result = parse_nccl_output("\n".join(lines))
    assert has_reason(result, r"^NCCL WARN on gpu-node-00, gpu-node-01, gpu-node-02, gpu-node-03 and 2 more hosts \(6 lines\)")
    assert has_reason(result, r"^data corruption: #wrong > 0 at 31 sizes: 8 B \(7\), .* and 21 more$")


# --- property: launcher wrapping and truncation never change what a log says ---------------------------------------

_PREFIXES = {
    "mpirun": lambda rank, i: "[1,%d]<stdout>:" % max(rank, 0),
    "srun": lambda rank, i: "%2d: " % max(rank, 0),
    "kubectl_prefix": lambda rank, i: "[pod/nccl-%d/main] " % (i % 3),
    "timestamp": lambda rank, i: "2025-11-0%dT10:%02d:%02d.%03dZ " % (1 + i % 9, i % 60, (i * 7) % 60, i % 1000),
    "pdsh": lambda rank, i: "node%02d: " % (max(rank, 0) // 8),
    "cluster_tool": lambda rank, i: "(head, rank=%d, pid=38%02d) " % (max(rank, 0), i % 100),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(era=st.sampled_from(nccl_log_corpus.ERAS), data=st.data(), hosts=st.sampled_from([1, 2]),
       outcome=st.sampled_from(["success", "abort"]),
       nesting=st.lists(st.sampled_from(sorted(_PREFIXES)), min_size=0, max_size=3),
       split_at=st.integers(min_value=0, max_value=40), cut=st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0)))
def test_wrapping_and_truncation_properties(era, data, hosts, outcome, nesting, split_at, cut):
    collective = data.draw(st.sampled_from(nccl_log_corpus.ERA_COLLECTIVES[era]))
    lines, expected = nccl_log_corpus.generate(era, collective, hosts, outcome)
    plain_text, exp = nccl_log_corpus.wrap(lines, expected, "plain", outcome, split_at=split_at)
    plain = parse_nccl_output(plain_text, collective=collective)
    if outcome == "abort":
        messages = [m for m in plain_text.splitlines() if not m.startswith((" ", "#"))]
    else:
        messages = []
    wrapped_lines = []
    for index, line in enumerate(plain_text.splitlines()):
        prefix = "".join(_PREFIXES[kind](0, index) for kind in nesting)
        wrapped_lines.append(prefix + line)
    text = "\n".join(wrapped_lines) + "\n"
    if cut is not None:
        text = text[:int(len(text) * cut)]
    result = parse_nccl_output(text, collective=collective)  # never raises

    # a result never contradicts itself
    if result.ok:
        assert result.rows and result.avg_busbw is not None and not result.reasons
    if result.rows and result.avg_busbw is None:
        assert has_reason(result, "truncated") or not result.ok
    if not result.rows and result.avg_busbw is not None:
        assert has_reason(result, "no result rows could be read although")
    assert not result.ok or not has_reason(result, "no result rows")
    full_rows = [(r.size, r.best_busbw) for r in plain.rows]
    rows = [(r.size, r.best_busbw) for r in result.rows]
    if cut is None:
        # the same measurement as the unwrapped log, and the same verdict
        assert rows == full_rows
        assert (result.ok, result.max_busbw, result.avg_busbw, result.ranks) == (plain.ok, plain.max_busbw, plain.avg_busbw, plain.ranks)
        assert not has_reason(result, "inconsistent")
        for reason in exp["reasons"]:
            assert [r for r in result.reasons if reason in r], (reason, result.reasons, messages)
        assert not has_reason(result, "no nccl-tests output recognised")
    else:
        # a cut log: fewer rows and a reason, or the whole measurement
        assert rows == full_rows[:len(rows)]
        if len(rows) < len(full_rows):
            assert not result.ok and result.reasons
        else:
            assert result.max_busbw == plain.max_busbw
