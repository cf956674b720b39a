#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster training-goodput workload: one rank of a tiny, real data-parallel training job.

Every host runs one process of this script with its own ``--rank`` (the collection's
``dsxos.cluster.training_goodput`` module, ``mode: run``, does that and restarts it after the injected
interruption).  The ranks meet through PyTorch's TCP store at ``--master-addr:--master-port`` and
train a small MLP on synthetic data with ``DistributedDataParallel`` over the ``gloo`` backend (CPU;
with ``--backend nccl`` and a GPU the same script runs on the GPU).  Rank 0 writes a checkpoint every
``--checkpoint-every`` steps (temp file, fsync, rename) while the other ranks wait at a barrier.
With ``--interrupt-after S`` the first attempt stops every rank right after step S (exit status 75);
the next attempt (``--attempt 2``) resumes from the newest checkpoint: rank 0 loads it and
``DistributedDataParallel`` broadcasts the weights, so the checkpoint needs no shared file system.
The optimizer is plain SGD (no state besides the weights), and the batch of step k depends only on k,
the rank and the seed, so a resumed run recomputes exactly the lost steps.

Every event is one line on the log file (and stdout)::

    <ISO-8601 UTC time> dsxos-goodput rank=<r> attempt=<a> event=<name> key=value ...

with events ``start``, ``resume_begin``, ``resume_end step=``, ``step step= samples= step_time= loss=``,
``checkpoint_begin step=``, ``checkpoint_end step= bytes=``, ``interrupt step=``, ``save_begin step=``,
``save_end step= bytes=``, ``end steps=`` and ``error message=``.  The ``dsxos`` regex profile
(``plugins/module_utils/certify/goodput_profiles.py``) parses them (docs/certify-goodput.md).

Exit status: 0 done, 75 interrupted on purpose, 2 bad arguments, 3 rendezvous or training failure.
"""
from __future__ import annotations

import argparse
import datetime
import os
import socket
import struct
import sys
import time
import warnings

EXIT_INTERRUPTED = 75
EXIT_FAILED = 3
MARKER = "dsxos-goodput"


class EventLog:
    """Writes one flushed line per event to a file (append) and to stdout."""

    def __init__(self, path, rank, attempt):
        self.rank = rank
        self.attempt = attempt
        self.handle = open(path, "a", encoding="utf-8") if path else None  # pylint: disable=consider-using-with

    def event(self, name, **fields):
        """Record ``name`` with ``fields`` (``message`` goes last, unquoted, to the end of the line)."""
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        message = fields.pop("message", None)
        parts = ["%s %s rank=%d attempt=%d event=%s" % (stamp, MARKER, self.rank, self.attempt, name)]
        parts.extend("%s=%s" % (key, value) for key, value in fields.items())
        if message is not None:
            parts.append("message=%s" % " ".join(str(message).split()))
        line = " ".join(parts) + "\n"
        if self.handle:
            self.handle.write(line)
            self.handle.flush()
            os.fsync(self.handle.fileno())
        sys.stdout.write(line)
        sys.stdout.flush()


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rank", type=int, default=int(os.environ.get("RANK", "0")))
    parser.add_argument("--world-size", type=int, default=int(os.environ.get("WORLD_SIZE", "1")))
    parser.add_argument("--master-addr", default=os.environ.get("MASTER_ADDR", "127.0.0.1"))
    parser.add_argument("--master-port", type=int, default=int(os.environ.get("MASTER_PORT", "29500")))
    parser.add_argument("--ifname", default=os.environ.get("GLOO_SOCKET_IFNAME"),
                        help="network interface for gloo (default: the one that routes to --master-addr)")
    parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    parser.add_argument("--attempt", type=int, default=1)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32, help="samples per rank and step")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--checkpoint-every", type=int, default=10)
    parser.add_argument("--checkpoint-dir", required=True)
    parser.add_argument("--interrupt-after", type=int, default=0, help="first attempt stops after this step (0: never)")
    parser.add_argument("--log-file", default="")
    parser.add_argument("--comm-timeout-s", type=float, default=60.0, help="rendezvous and collective timeout")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--step-delay-s", type=float, default=0.0, help="fault injection: extra seconds per step on this rank")
    parser.add_argument("--hang-at-step", type=int, default=0, help="fault injection: this rank stops responding at this step")
    args = parser.parse_args(argv)
    problems = []
    if not 0 <= args.rank < args.world_size:
        problems.append("--rank %d is not in [0, --world-size %d)" % (args.rank, args.world_size))
    for name in ("steps", "batch_size", "hidden", "layers", "features", "attempt", "threads"):
        if getattr(args, name) < 1:
            problems.append("--%s must be at least 1 (got %r)" % (name.replace("_", "-"), getattr(args, name)))
    if args.checkpoint_every < 0 or args.interrupt_after < 0 or args.hang_at_step < 0 or args.step_delay_s < 0:
        problems.append("--checkpoint-every, --interrupt-after, --hang-at-step and --step-delay-s must not be negative")
    if not 1 <= args.master_port <= 65535:
        problems.append("--master-port %d is not a TCP port" % args.master_port)
    if problems:
        parser.error("; ".join(problems))
    return args


def interface_for(address):
    """Name of the local interface whose IPv4 address routes to ``address`` (no packet is sent)."""
    import fcntl  # pylint: disable=import-outside-toplevel
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((address, 9))
        local = probe.getsockname()[0]
        for _index, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
            except OSError:
                continue
            if socket.inet_ntoa(packed[20:24]) == local:
                return name
    finally:
        probe.close()
    return None


def checkpoint_path(directory, step):
    return os.path.join(directory, "checkpoint-%08d.pt" % step)


def latest_checkpoint(directory):
    """(step, path) of the newest complete checkpoint in ``directory``, or (0, None)."""
    best = (0, None)
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            if name.startswith("checkpoint-") and name.endswith(".pt"):
                try:
                    step = int(name[len("checkpoint-"):-len(".pt")])
                except ValueError:
                    continue
                if step > best[0]:
                    best = (step, os.path.join(directory, name))
    return best


def atomic_save(torch, state, path):
    """torch.save to a temp file in the same directory, fsync, rename; returns the size in bytes."""
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "wb") as handle:
        torch.save(state, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return os.path.getsize(path)


def build_model(torch, args):
    layers = []
    width = args.features
    for _layer in range(args.layers):
        layers += [torch.nn.Linear(width, args.hidden), torch.nn.Tanh()]
        width = args.hidden
    layers.append(torch.nn.Linear(width, 1))
    return torch.nn.Sequential(*layers)


def batch_for(torch, args, step, teacher):
    """Synthetic regression batch of ``step`` for this rank: depends only on (seed, step, rank)."""
    gen = torch.Generator().manual_seed(args.seed * 1000003 + step * 4099 + args.rank)
    inputs = torch.randn(args.batch_size, args.features, generator=gen)
    targets = torch.sin(inputs @ teacher).sum(dim=1, keepdim=True)
    return inputs, targets


def train(args, log):  # pylint: disable=too-many-locals,too-many-statements
    warnings.filterwarnings("ignore", message=".*NumPy.*")
    import torch  # pylint: disable=import-outside-toplevel
    import torch.distributed as dist  # pylint: disable=import-outside-toplevel
    from torch.nn.parallel import DistributedDataParallel  # pylint: disable=import-outside-toplevel

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device("cpu")
    if args.backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    if args.rank == 0:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
    resuming = args.attempt > 1
    if resuming:
        log.event("resume_begin")
    init_method = "tcp://%s:%d" % (args.master_addr, args.master_port)
    try:
        dist.init_process_group(args.backend, init_method=init_method, rank=args.rank, world_size=args.world_size,
                                timeout=datetime.timedelta(seconds=args.comm_timeout_s))
    except Exception as err:  # pylint: disable=broad-except
        log.event("error", message="rendezvous at %s failed: %s: %s" % (init_method, type(err).__name__, err))
        return EXIT_FAILED
    model = build_model(torch, args).to(device)
    teacher = torch.randn(args.features, 4, generator=torch.Generator().manual_seed(args.seed))
    loss_fn = torch.nn.MSELoss()
    start_step = 0
    if resuming:
        found_step, found_path = latest_checkpoint(args.checkpoint_dir) if args.rank == 0 else (0, None)
        if found_path:
            state = torch.load(found_path, map_location=device, weights_only=True)
            model.load_state_dict(state["model"])
            found_step = int(state["step"])
        shared = torch.tensor([found_step], dtype=torch.int64, device=device)
        dist.broadcast(shared, src=0)
        start_step = int(shared.item())
    ddp = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)  # broadcasts rank 0's (loaded) weights to every rank
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    if resuming:
        log.event("resume_end", step=start_step)
    for step in range(start_step + 1, args.steps + 1):
        began = time.monotonic()
        if args.hang_at_step and step == args.hang_at_step:
            log.event("error", message="fault injection: rank %d hangs at step %d" % (args.rank, step))
            while True:
                time.sleep(3600)
        inputs, targets = (tensor.to(device) for tensor in batch_for(torch, args, step, teacher))
        optimizer.zero_grad()
        loss = loss_fn(ddp(inputs), targets)
        loss.backward()  # gradients are all-reduced across the ranks here
        optimizer.step()
        if args.step_delay_s:
            time.sleep(args.step_delay_s)
        log.event("step", step=step, samples=args.batch_size, step_time="%.6f" % (time.monotonic() - began),
                  loss="%.6f" % loss.item())
        if args.checkpoint_every and step % args.checkpoint_every == 0 and step < args.steps:
            log.event("checkpoint_begin", step=step)
            size = 0
            if args.rank == 0:
                size = atomic_save(torch, {"model": model.state_dict(), "step": step}, checkpoint_path(args.checkpoint_dir, step))
            dist.barrier()
            log.event("checkpoint_end", step=step, bytes=size)
        if args.attempt == 1 and args.interrupt_after and step == args.interrupt_after and step < args.steps:
            log.event("interrupt", step=step)
            return EXIT_INTERRUPTED
    log.event("save_begin", step=args.steps)
    size = 0
    if args.rank == 0:
        size = atomic_save(torch, {"model": model.state_dict(), "step": args.steps}, os.path.join(args.checkpoint_dir, "final.pt"))
    dist.barrier()
    log.event("save_end", step=args.steps, bytes=size)
    dist.destroy_process_group()
    log.event("end", steps=args.steps)
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    log = EventLog(args.log_file, args.rank, args.attempt)
    log.event("start", world_size=args.world_size, master="%s:%d" % (args.master_addr, args.master_port), pid=os.getpid(),
              host=socket.gethostname())
    if args.backend == "gloo" and not args.ifname:
        try:
            args.ifname = interface_for(args.master_addr)
        except OSError as err:
            log.event("error", message="no route to master %s: %s" % (args.master_addr, err))
            return EXIT_FAILED
    if args.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = args.ifname
    try:
        code = train(args, log)
    except Exception as err:  # pylint: disable=broad-except
        log.event("error", message="%s: %s" % (type(err).__name__, err))
        code = EXIT_FAILED
    sys.stdout.flush()
    # Interrupted on purpose (as a crash would) or failed: leave at once, without tearing the process group
    # down: destroying a gloo group whose peer is gone can wait forever.
    if code != 0:
        os._exit(code)  # pylint: disable=protected-access
    return code


if __name__ == "__main__":
    sys.exit(main())
