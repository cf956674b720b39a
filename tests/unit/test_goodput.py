# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Goodput log profiles, parsing and computation (plugins/module_utils/certify/goodput_profiles.py, goodput_parse.py, goodput_stats.py) on generated logs."""
from __future__ import annotations

import datetime
import importlib.util
import os
import sys
import time

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.goodput_parse import parse_goodput_log, parse_timestamp
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.goodput_profiles import (
    BUILTIN_PROFILES, GoodputError, GoodputProfileError, validate_profile,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.goodput_stats import compute_goodput, evaluate_logs
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.goodput_launcher import GoodputLaunchError, LaunchConfig, launch_rank

T0 = datetime.datetime(2026, 11, 1, 12, 0, 0, tzinfo=datetime.timezone.utc).timestamp()
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOAD = os.path.join(REPO, "roles", "certify", "files", "goodput_train.py")


def _stamp(offset):
    return datetime.datetime.fromtimestamp(T0 + offset, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class DsxosLog:
    """Writes lines in the workload's format with chosen times (seconds after T0)."""

    def __init__(self, rank=0, attempt=1):
        self.rank = rank
        self.attempt = attempt
        self.lines = []

    def event(self, offset, name, **fields):
        text = " ".join("%s=%s" % item for item in fields.items())
        self.lines.append("%s dsxos-goodput rank=%d attempt=%d event=%s%s" % (
            _stamp(offset), self.rank, self.attempt, name, (" " + text) if text else ""))
        return self

    def step(self, offset, step, step_time, samples=32):
        return self.event(offset, "step", step=step, samples=samples, step_time="%.6f" % step_time, loss="0.5")

    def text(self):
        return "\n".join(self.lines) + "\n"


def scripted_run(rank=0, steps=10, every=4, interrupt=6, restart_gap=5.0, ckpt=0.5, save=1.0, step_time=1.0, startup=2.0):
    """A run with known times: startup, 1 s steps, 0.5 s checkpoints, interruption after ``interrupt``, resume, save."""
    log = DsxosLog(rank)
    now = 0.0
    log.event(now, "start", world_size=2)
    now += startup
    last_ckpt = 0
    for step in range(1, steps + 1):
        now += step_time
        log.step(now, step, step_time)
        if every and step % every == 0 and step < steps:
            log.event(now, "checkpoint_begin", step=step)
            now += ckpt
            log.event(now, "checkpoint_end", step=step, bytes=100)
            last_ckpt = step
        if interrupt and step == interrupt and log.attempt == 1:
            log.event(now, "interrupt", step=step)
            now += restart_gap
            log.attempt = 2
            log.event(now, "start", world_size=2)
            log.event(now + 1.0, "resume_begin")
            now += 2.0
            log.event(now, "resume_end", step=last_ckpt)
            return _finish(log, now, last_ckpt, steps, every, ckpt, save, step_time)
    return _finish(log, now, steps, steps, every, ckpt, save, step_time)


def _finish(log, now, from_step, steps, every, ckpt, save, step_time):
    for step in range(from_step + 1, steps + 1):
        now += step_time
        log.step(now, step, step_time)
        if every and step % every == 0 and step < steps:
            log.event(now, "checkpoint_begin", step=step)
            now += ckpt
            log.event(now, "checkpoint_end", step=step, bytes=100)
    log.event(now, "save_begin", step=steps)
    now += save
    log.event(now, "save_end", step=steps, bytes=100)
    log.event(now, "end", steps=steps)
    return log


def test_goodput_formula_on_a_scripted_run():
    logs = [parse_goodput_log(scripted_run(rank).text(), "dsxos") for rank in (0, 1)]
    result = compute_goodput(logs, world_size=2, expected_steps=10, min_goodput=0.5)
    # Timeline: start 0, startup 2 s, steps 1-6 (6 s) with a checkpoint after step 4 (0.5 s), interruption at 8.5,
    # restart gap 5 s + 2 s resume (back at 15.5, resumed from step 4), steps 5-10 (6 s) with a checkpoint after
    # step 8 (0.5 s), final save 1 s: ends at 23.0.
    assert result["t_total"] == pytest.approx(23.0)
    assert result["t_checkpoint"] == pytest.approx(1.0)  # two checkpoints (4, 8); the one at 4 is counted once
    assert result["t_resume"] == pytest.approx(7.0)
    assert result["t_save"] == pytest.approx(1.0)
    assert result["goodput"] == pytest.approx((23.0 - 1.0 - 7.0 - 1.0) / (23.0 - 7.0))
    assert result["steps_completed"] == 10
    assert result["steps_recomputed"] == 2  # steps 5 and 6 were lost and computed again
    assert result["t_lost"] == pytest.approx(2.0)
    assert result["samples"] == 2 * 10 * 32
    assert result["gpu_seconds"] == pytest.approx(2 * 10 * 1.0)
    assert result["t_startup"] == pytest.approx(2.0)
    assert result["productive_fraction"] == pytest.approx(10.0 / 23.0)
    assert result["attempts"] == 2 and result["interruptions"] == 1 and result["checkpoints"] == 2
    assert result["passed"] is True and result["verdict"] == "pass" and result["reasons"] == []
    assert [r["rank"] for r in result["ranks"]] == [0, 1]
    assert all(r["complete"] and r["steps_completed"] == 10 for r in result["ranks"])


def test_run_without_interruption_has_no_resume_time():
    log = scripted_run(interrupt=0)
    result = compute_goodput([parse_goodput_log(log.text())], world_size=1)
    assert result["t_resume"] == 0.0 and result["steps_recomputed"] == 0 and result["attempts"] == 1
    # 2 s startup + 10 s steps + 2 checkpoints (4, 8) + 1 s save
    assert result["t_total"] == pytest.approx(14.0)
    assert result["goodput"] == pytest.approx((14.0 - 1.0 - 1.0) / 14.0)


def test_gpu_seconds_take_the_slowest_rank_per_step():
    fast = parse_goodput_log(scripted_run(0, interrupt=0, step_time=1.0).text(), rank=0)
    slow = parse_goodput_log(scripted_run(1, interrupt=0, step_time=1.5).text(), rank=1)
    result = compute_goodput([fast, slow], world_size=2)
    assert result["t_step"] == pytest.approx(15.0)
    assert result["gpu_seconds"] == pytest.approx(30.0)
    assert result["ranks"][1]["step_time_mean"] == pytest.approx(1.5)


def test_crash_without_resume_lines_counts_restart_until_the_next_step():
    log = DsxosLog()
    log.event(0, "start").step(1, 1, 1.0).step(2, 2, 1.0).step(3, 3, 1.0)
    log.attempt = 2
    log.event(10, "start").step(14, 1, 1.0).step(15, 2, 1.0).step(16, 3, 1.0).step(17, 4, 1.0).event(17, "end")
    result = compute_goodput([parse_goodput_log(log.text())], world_size=1)
    # down from the last line of attempt 1 (t=3) until step 1 of attempt 2 began (t=13)
    assert result["t_resume"] == pytest.approx(10.0)
    assert result["steps_completed"] == 4 and result["steps_recomputed"] == 3


def test_missing_rank_unreachable_host_and_timeout_are_reasons():
    result = evaluate_logs([
        {"rank": 0, "host": "h0", "text": scripted_run(0).text()},
        {"rank": 2, "host": "h2", "missing": "unreachable: ssh timed out"},
        {"rank": 3, "host": "h3", "text": scripted_run(3).text(), "timed_out": True, "timeout_s": 30},
    ], world_size=4)
    assert result["passed"] is False
    text = " | ".join(result["reasons"])
    assert "rank 2 (host h2) excluded: unreachable: ssh timed out" in text
    assert "rank 3 (host h3): killed at its timeout of 30 s" in text
    assert "no log for rank(s) 1, 2 of world size 4" in text
    assert result["steps_completed"] == 10  # the ranks that ran still count


def test_error_line_and_incomplete_log_are_reasons():
    log = DsxosLog(1)
    log.event(0, "start").step(1, 1, 1.0).step(2, 2, 1.0)
    log.event(3, "error", message="RuntimeError: Connection closed by peer [10.0.0.2]:29500")
    stopped = DsxosLog(0).event(0, "start").step(1, 1, 1.0).step(2, 2, 1.0)
    result = compute_goodput([parse_goodput_log(stopped.text()), parse_goodput_log(log.text())], world_size=2, expected_steps=5)
    reasons = " | ".join(result["reasons"])
    assert "rank 1: the workload reported an error: RuntimeError: Connection closed by peer" in reasons
    assert "rank 0: the log stops at step 2 without an 'end' line" in reasons
    assert "completed 2 of 5 expected steps" in reasons


@pytest.mark.parametrize("garbage", [
    "",
    "\x00\x01\x02\xff binary junk\n" * 20,
    "Traceback (most recent call last):\n  File 'x'\nValueError: boom\n",
    "2026-11-01T12:00:00Z dsxos-goodput rank=0 attempt=1 event=step step=x samples=? step_time=fast\n" * 3,
])
def test_garbage_logs_give_a_reason_not_a_traceback(garbage):
    result = evaluate_logs([{"rank": 0, "host": "h0", "text": garbage}], world_size=1)
    assert result["passed"] is False
    assert result["goodput"] is None
    assert "rank 0 (host h0): no training step found" in result["reasons"][0]


def test_malformed_marker_lines_are_counted_with_examples():
    text = scripted_run(interrupt=0).text()
    lines = text.splitlines()
    lines.insert(5, "2026-11-01T12:00:03Z dsxos-goodput rank=0 attempt=1 event=step step=4 samples=32 step_time=nan loss=1")
    lines.insert(6, "2026-11-01T12:00:03Z dsxos-goodput rank=0 attempt=1 event=teleport")
    lines.insert(7, "2026-11-01T12:00:03Z dsxos-goodput rank=0 attempt=1 event=step step=4 samples=32 step_time=-1.0 loss=1")
    lines.insert(8, "ordinary output that is not an event")
    log = parse_goodput_log(bytes("\n".join(lines), "utf-8") + b"\n\xff\xfe truncated", "dsxos")
    assert log.malformed == 3
    assert "step_time is not finite" in log.malformed_examples[0]
    assert "no dsxos event matches" in log.malformed_examples[1]
    assert "step_time is negative" in log.malformed_examples[2]
    result = compute_goodput([log], world_size=1)
    assert result["passed"] is True  # a few unreadable lines warn, they do not fail the job
    assert any("3 unreadable dsxos line(s)" in warning for warning in result["warnings"])


def test_ranks_disagreeing_on_steps():
    short = DsxosLog(1).event(0, "start").step(1, 1, 1.0).event(1, "end")
    result = compute_goodput([parse_goodput_log(scripted_run(0, interrupt=0).text()), parse_goodput_log(short.text())], world_size=2)
    assert result["steps_completed"] == 1
    assert any("ranks disagree on completed steps" in reason for reason in result["reasons"])


def test_min_goodput_and_inconsistent_timing():
    log = parse_goodput_log(scripted_run(interrupt=0, ckpt=3.0).text())
    low = compute_goodput([log], world_size=1, min_goodput=0.9)
    assert any(reason.startswith("goodput 0.") and "below the minimum 0.900" in reason for reason in low["reasons"])
    profile = {"prefix": r"^(?P<ts>\S+) ", "events": {"step": r"step=(?P<step>\d+)", "checkpoint": r"ckpt took (?P<duration>\S+)"}}
    text = "2026-11-01T12:00:00Z step=1\n2026-11-01T12:00:01Z ckpt took 100\n2026-11-01T12:00:02Z step=2\n"
    result = evaluate_logs([{"rank": 0, "text": text}], profile=profile, world_size=1)
    assert result["passed"] is False and result["goodput"] < 0
    assert result["reasons"][0].startswith("inconsistent timing: goodput -49.000 outside [0, 1]")


def test_bad_arguments_name_field_and_value():
    log = parse_goodput_log(scripted_run().text())
    with pytest.raises(GoodputError, match=r"field world_size, value 0"):
        compute_goodput([log], world_size=0)
    with pytest.raises(GoodputError, match=r"field min_goodput, value 1.5"):
        compute_goodput([log], min_goodput=1.5)
    with pytest.raises(GoodputError, match=r"field logs\[0\].rank, value -1"):
        evaluate_logs([{"rank": -1, "text": ""}])
    with pytest.raises(GoodputError, match=r"field logs\[0\]"):
        evaluate_logs(["just a string"])


def test_megatron_profile():
    text = "\n".join([
        "2026-11-01 12:00:00,000 using world size: 2, data-parallel size: 2, context-parallel size: 1, tensor-model-parallel size: 1",
        "2026-11-01 12:00:00,100 > initializing torch distributed ...",
        " [2026-11-01 12:00:10] iteration        1/       4 | consumed samples:           16 | elapsed time per iteration (ms): 2000.0"
        " | learning rate: 1.0E-04 | global batch size:    16 | lm loss: 1.0E+01 | loss scale: 1.0 |",
        " [2026-11-01 12:00:12] iteration        2/       4 | consumed samples:           32 | elapsed time per iteration (ms): 2000.0"
        " | learning rate: 1.0E-04 | global batch size:    16 | lm loss: 9.0E+00 | loss scale: 1.0 |",
        "2026-11-01 12:00:12,500 saving checkpoint at iteration       2 to /ckpt in torch_dist format",
        "2026-11-01 12:00:15,500   successfully saved checkpoint from iteration       2 to /ckpt [ t 1/1, p 1/1 ]",
        " [2026-11-01 12:00:17] iteration        3/       4 | consumed samples:           48 | elapsed time per iteration (ms): 1500.0"
        " | learning rate: 1.0E-04 | global batch size:    16 | lm loss: 8.0E+00 | loss scale: 1.0 |",
        " [2026-11-01 12:00:19] iteration        4/       4 | consumed samples:           64 | elapsed time per iteration (ms): 2000.0"
        " | learning rate: 1.0E-04 | global batch size:    16 | lm loss: 7.0E+00 | loss scale: 1.0 |",
        "[after training is done] datetime: 2026-11-01 12:00:20 ",
    ])
    result = evaluate_logs([{"rank": 0, "text": text}], profile="megatron", world_size=1, expected_steps=4)
    assert result["passed"] is True, result["reasons"]
    assert result["steps_completed"] == 4
    assert result["samples"] == 64  # global batch size per step, not per rank
    assert result["t_step"] == pytest.approx(7.5)  # milliseconds converted
    assert result["t_checkpoint"] == pytest.approx(3.0)
    assert result["t_total"] == pytest.approx(20.0)
    assert result["goodput"] == pytest.approx(17.0 / 20.0)


def test_megatron_resume_after_a_crash():
    text = "\n".join([
        " [2026-11-01 12:00:01] iteration        1/       3 | consumed samples: 8 | elapsed time per iteration (ms): 1000.0 |",
        "2026-11-01 12:00:01,000 saving checkpoint at iteration       1 to /ckpt in torch_dist format",
        "2026-11-01 12:00:02,000   successfully saved checkpoint from iteration       1 to /ckpt [ t 1/1, p 1/1 ]",
        " [2026-11-01 12:00:03] iteration        2/       3 | consumed samples: 16 | elapsed time per iteration (ms): 1000.0 |",
        "RuntimeError: NCCL communicator was aborted on rank 0.",
        "2026-11-01 12:01:00,000  loading checkpoint from /ckpt at iteration 1",
        "2026-11-01 12:01:04,000   successfully loaded checkpoint from /ckpt [ t 1/1, p 1/1 ] at iteration 1",
        " [2026-11-01 12:01:05] iteration        2/       3 | consumed samples: 16 | elapsed time per iteration (ms): 1000.0 |",
        " [2026-11-01 12:01:06] iteration        3/       3 | consumed samples: 24 | elapsed time per iteration (ms): 1000.0 |",
    ])
    result = evaluate_logs([{"rank": 0, "text": text}], profile="megatron", world_size=1)
    assert result["steps_completed"] == 3 and result["steps_recomputed"] == 1
    assert result["t_resume"] == pytest.approx(61.0)  # from the crash (12:00:03) to the loaded checkpoint (12:01:04)
    assert any("NCCL communicator was aborted" in reason for reason in result["reasons"])


def test_nemo_profile_with_durations_and_untimestamped_steps():
    text = "\n".join([
        "[NeMo I 2026-11-01 12:00:00 nemo_logging:393] Experiments will be logged at /results",
        "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2",
        "Training epoch 0, iteration 0/3 | lr: 1e-06 | global_batch_size: 8 | global_step: 0 | reduced_train_loss: 1.3 | "
        "train_step_timing in s: 2.5",
        "Training epoch 0, iteration 1/3 | lr: 2e-06 | global_batch_size: 8 | global_step: 1 | reduced_train_loss: 1.2 | "
        "train_step_timing in s: 2.0 | consumed_samples: 16",
        "[NeMo I 2026-11-01 12:00:10 nemo_logging:393] Global Checkpoint Save : Rank: 0 : Iteration: 1 : Start time: 1793534409.000s"
        " : Save duration: 1.250s",
        "Training epoch 0, iteration 2/3 | lr: 3e-06 | global_batch_size: 8 | global_step: 2 | reduced_train_loss: 1.1 | "
        "train_step_timing in s: 2.0 | consumed_samples: 24",
        "Training epoch 0, iteration 3/3 | lr: 4e-06 | global_batch_size: 8 | global_step: 3 | reduced_train_loss: 1.0 | "
        "train_step_timing in s: 2.0 | consumed_samples: 32",
        "[NeMo I 2026-11-01 12:00:20 nemo_logging:393] `Trainer.fit` stopped: `max_steps=4` reached.",
    ])
    result = evaluate_logs([{"host": "gpu-a", "text": text}], profile="nemo", world_size=1)
    assert result["passed"] is True, result["reasons"]
    assert result["ranks"][0]["rank"] == 0  # from "GLOBAL_RANK: 0"
    assert result["steps_completed"] == 4 and result["samples"] == 32
    assert result["t_checkpoint"] == pytest.approx(1.25)
    assert result["t_total"] == pytest.approx(20.0)
    assert result["t_step"] == pytest.approx(8.5)
    assert result["goodput"] == pytest.approx((20.0 - 1.25) / 20.0)


def test_user_profile_from_scratch_and_extending_a_builtin():
    profile = {
        "prefix": r"^(?P<ts>\d+\.\d+) ",
        "timestamp_format": "epoch",
        "step_time_unit": "ms",
        "events": {"step": r"step (?P<step>\d+) took (?P<step_time>\d+)ms", "end": r"\bdone\b"},
    }
    text = "100.0 step 1 took 500ms\n101.0 step 2 took 1000ms\n101.0 done\n"
    result = evaluate_logs([{"rank": 0, "text": text}], profile=profile, world_size=1)
    assert result["profile"] == "custom" and result["steps_completed"] == 2
    assert result["t_step"] == pytest.approx(1.5) and result["t_total"] == pytest.approx(1.0)
    extended = validate_profile({"base": "megatron", "events": {"start": "^> initializing torch distributed", "error": None}})
    assert extended.name == "custom(megatron)" and "error" not in extended.kinds() and "step" in extended.kinds()


def test_step_time_from_timestamps_when_the_profile_has_none():
    profile = {"prefix": r"^(?P<ts>\S+) ", "events": {"start": r"\bbegin\b", "step": r"\bstep=(?P<step>\d+)"}}
    text = "2026-11-01T12:00:00Z begin\n2026-11-01T12:00:02Z step=1\n2026-11-01T12:00:05Z step=2\n"
    result = evaluate_logs([{"rank": 0, "text": text}], profile=profile, world_size=1)
    assert result["t_step"] == pytest.approx(5.0)
    assert result["samples"] is None


@pytest.mark.parametrize("profile, field, message", [
    ("llama", "profile", "unknown goodput log profile"),
    ({"events": {"step": "(?P<step>\\d+"}}, "profile.events.step", "invalid regular expression"),
    ({"events": {"step": "step (?P<stepp>\\d+)"}}, "profile.events.step", "unknown capture group(s) stepp"),
    ({"events": {"step": "step \\d+"}}, "profile.events.step", "needs a (?P<step>...) group"),
    ({"events": {"end": "done"}}, "profile.events.step", "needs a 'step' pattern"),
    ({"events": {"step": "(?P<step>\\d+)", "teleport": "x"}}, "profile.events", "unknown event kind(s) teleport"),
    ({"events": {"step": "(?P<step>\\d+)"}, "colour": "red"}, "profile", "unknown profile key(s) colour"),
    ({"events": {"step": "(?P<step>\\d+)"}, "step_time_unit": "fortnight"}, "profile.step_time_unit", "must be one of"),
    ({"events": {"step": "(?P<step>\\d+)"}, "samples_scope": "node"}, "profile.samples_scope", "must be rank"),
    ({"events": {"step": "(?P<step>\\d+)"}, "timestamp_format": "yyyy"}, "profile.timestamp_format", "strptime"),
    ({"events": {"step": "(?P<step>\\d+)", "checkpoint": "saved"}}, "profile.events.checkpoint", "(?P<duration>...)"),
    ({"events": {"step": 42}}, "profile.events.step", "non-empty regular expression"),
    ({"events": []}, "profile.events", "non-empty mapping"),
    ({"base": "deepspeed", "events": {}}, "profile.base", "unknown base profile"),
    ({"events": {"step": "(?P<step>\\d+)"}, "prefix": "(?P<step>\\d+)"}, "profile.prefix", "unknown capture group"),
    (42, "profile", "must be a built-in profile name or a dict"),
])
def test_bad_profiles_are_refused_with_field(profile, field, message):
    with pytest.raises(GoodputProfileError) as caught:
        validate_profile(profile)
    assert message in str(caught.value)
    assert caught.value.field == field


def test_builtin_profiles_validate():
    for name in BUILTIN_PROFILES:
        assert validate_profile(name).name == name


def test_timestamps():
    assert parse_timestamp("2026-11-01T12:00:00Z") == T0
    assert parse_timestamp("2026-11-01 12:00:00,500") == T0 + 0.5
    assert parse_timestamp("2026-11-01T14:00:00+02:00") == T0
    assert parse_timestamp(str(T0)) == T0
    assert parse_timestamp("01/11/2026 12:00", "%d/%m/%Y %H:%M") == T0
    with pytest.raises(ValueError):
        parse_timestamp("yesterday")


def test_workload_script_arguments_are_validated():
    spec = importlib.util.spec_from_file_location("goodput_train", WORKLOAD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = module.parse_args(["--rank", "1", "--world-size", "2", "--checkpoint-dir", "/tmp/x"])
    assert args.rank == 1 and args.steps == 40
    with pytest.raises(SystemExit):
        module.parse_args(["--rank", "2", "--world-size", "2", "--checkpoint-dir", "/tmp/x"])
    assert module.interface_for("127.0.0.1") == "lo"


FAKE_WORKLOAD = r'''
import argparse, os, sys, time
parser = argparse.ArgumentParser()
for name in ("--rank", "--world-size", "--master-port", "--attempt", "--steps", "--interrupt-after"):
    parser.add_argument(name, type=int)
parser.add_argument("--log-file")
args, _rest = parser.parse_known_args()
mode = os.environ.get("FAKE_MODE", "interrupt")
with open(args.log_file, "a") as log:
    log.write("2026-11-01T12:00:0%dZ dsxos-goodput rank=%d attempt=%d event=start port=%d env_port=%s\n"
              % (args.attempt, args.rank, args.attempt, args.master_port, os.environ["MASTER_PORT"]))
if mode == "interrupt" and args.attempt == 1:
    sys.exit(75)
if mode == "hang":
    time.sleep(60)
if mode == "crash":
    sys.stderr.write("Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'\n")
    sys.exit(3)
'''


def _fake_config(tmp_path, **overrides):
    script = tmp_path / "fake_train.py"
    script.write_text(FAKE_WORKLOAD, encoding="utf-8")
    values = dict(script=str(script), python=sys.executable, host="h0", rank=0, world_size=1, master_addr="127.0.0.1",
                  workdir=str(tmp_path / "work"), master_port=29700, steps=10, timeout_s=20)
    values.update(overrides)
    return LaunchConfig(**values)


def test_launcher_restarts_after_the_interruption_on_the_next_port(tmp_path):
    config = _fake_config(tmp_path)
    os.makedirs(config.checkpoint_dir)
    stale = os.path.join(config.checkpoint_dir, "checkpoint-00000005.pt")
    keep = os.path.join(config.checkpoint_dir, "notes.txt")
    for path in (stale, keep):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("old")
    result = launch_rank(config, env={"PATH": os.environ.get("PATH", ""), "FAKE_MODE": "interrupt"})
    assert [(a["attempt"], a["rc"], a["port"]) for a in result["attempt_results"]] == [(1, 75, 29700), (2, 0, 29701)]
    assert result["workload_failed"] is False and result["reason"] is None and result["interrupt_after"] == 6
    assert "attempt=1 event=start port=29700 env_port=29700" in result["log"]
    assert "attempt=2 event=start port=29701 env_port=29701" in result["log"]
    assert not os.path.exists(stale) and os.path.exists(keep)  # only what the workload writes is cleaned


def test_launcher_kills_a_hung_workload_at_its_timeout(tmp_path):
    began = time.monotonic()
    result = launch_rank(_fake_config(tmp_path, timeout_s=1.0), env={"PATH": os.environ.get("PATH", ""), "FAKE_MODE": "hang"})
    assert time.monotonic() - began < 10
    assert result["timed_out"] is True and result["workload_failed"] is True
    assert result["reason"] == "rank 0 on h0 killed at its timeout of 1.0 s (attempt 1)"
    assert result["attempt_results"][0]["rc"] == -15  # SIGTERM


def test_launcher_reports_a_crash_and_refuses_bad_setup(tmp_path):
    result = launch_rank(_fake_config(tmp_path), env={"PATH": os.environ.get("PATH", ""), "FAKE_MODE": "crash"})
    assert result["reason"] == "rank 0 on h0: workload exited with status 3: ModuleNotFoundError: No module named 'torch'"
    with pytest.raises(GoodputLaunchError, match="workload script not found on h0"):
        launch_rank(_fake_config(tmp_path, script=str(tmp_path / "nope.py")))
    with pytest.raises(GoodputLaunchError, match=r"rank 2 must be in \[0, world_size 2\); interrupt_after must be in \[0, steps 10\)"):
        launch_rank(_fake_config(tmp_path, rank=2, world_size=2, interrupt_after=10))
