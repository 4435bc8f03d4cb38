"""A tool call through `memfs mcp` over stdio beside the same call made directly on MemoryTools.

    python bench/mcp_calls.py                 # 10,000 memories, 200 calls of each kind
    python bench/mcp_calls.py --size 2000 --calls 50
    python bench/mcp_calls.py --polling       # the server finds changes by polling every file
    python bench/mcp_calls.py --compare ../main   # also that checkout's server (mcp_main), same run

The server is a real `memfs mcp` process driven by the MCP SDK's own client (the handshake era,
as desktop clients speak it); the baseline is `MemoryTools.call`, timed inside a process of its
own, so the client's process, like a real client's, does nothing but speak MCP. How the sides are
kept alike:

- Same vault state: each side has its own copy of one vault, made after the vault was committed
  and indexed, so no process's writes make another reopen its index; every process signs
  indexes with the same key (the same state folder), so none rebuilds its copy's index.
- Equally warm: before anything is timed, each side runs the whole sequence (view, search,
  str_replace) ten times, so index readers, git helpers and imports are loaded on both.
- Same calls, same load: each round makes every call once each way, in an order that changes
  from round to round (each way first as often as last); the str_replace edits run the same
  chain on every copy.

The overhead is the difference of the p50s, and the median of each MCP call's time minus the
direct call's of the same round (paired, so load that comes and goes cancels). On Linux, CPU
time is given too (it moves much less with load): the direct process's during the direct call, the
server process's during the MCP call, each over all its threads. A view of a small file shows the
protocol's cost alone. JSON on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio  # noqa: E402
import corpus  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from run import machine, say  # noqa: E402

import memfs  # noqa: E402

NS = "users/bench"
REPO = Path(__file__).resolve().parents[1]
KINDS = ("view", "search", "str_replace")
WARM_ROUNDS = 10


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2), "n": len(ordered)}


def server_pid(vault: Path) -> int | None:
    """The pid of the `memfs mcp` process serving ``vault`` (Linux; None elsewhere)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    wanted = f"--vault\0{vault}\0".encode()
    for entry in proc.iterdir():
        try:
            if entry.name.isdigit() and wanted in (entry / "cmdline").read_bytes():
                return int(entry.name)
        except OSError:
            continue
    return None


def process_cpu_ms(pid: int | None) -> float:
    """CPU time of every thread of ``pid`` so far, in ms (nanosecond counters of the scheduler)."""
    if pid is None:
        return 0.0
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a worker thread that just ended
    return total / 1e6


def direct_calls(root: str, calls: Connection) -> None:
    """MemoryTools on ``root`` in a process of its own: each call timed here; time, CPU and answer sent back.

    Not in the benchmark's process, which runs the MCP client: sharing it, the direct side often came
    out slower than the server itself (docs/benchmarks.md, "MCP").
    """
    with memfs.Vault.open(root, durable=True) as vault:
        tools = memfs.MemoryTools(vault, NS)
        while (arguments := calls.recv()) is not None:
            start, cpu = time.perf_counter(), time.process_time()  # all threads: a write fsyncs in several
            result = tools.call(arguments)
            took, used = (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000
            calls.send((took, used, result.text, result.is_error))


class Side:
    """One way of calling: MemoryTools in a process of its own, or a `memfs mcp` process over stdio."""

    def __init__(self, name: str, direct: Connection | None = None, client: Client | None = None,
                 pid: int | None = None) -> None:  # fmt: skip
        self.name, self.direct, self.client, self.pid = name, direct, client, pid
        self.ms: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}

    async def call(self, kind: str, arguments: dict[str, Any], keep: bool) -> str:
        if self.direct is not None:
            self.direct.send({"command": kind, **arguments})
            took, used, text, is_error = self.direct.recv()
            assert not is_error, text
        else:
            assert self.client is not None
            before = process_cpu_ms(self.pid)
            start = time.perf_counter()
            answer = await self.client.call_tool(f"memory_{kind}", arguments)
            took = (time.perf_counter() - start) * 1000
            used = process_cpu_ms(self.pid) - before
            assert not answer.is_error, answer.content
            text = answer.content[0].text  # type: ignore[union-attr]
        if keep:
            self.ms[kind].append(took)
            self.cpu[kind].append(used)
        return text


def server(vault: Path, checkout: Path, server_args: tuple[str, ...]) -> StdioServerParameters:
    keys = {k: os.environ[k] for k in ("HOME", "XDG_STATE_HOME") if k in os.environ}  # one index key for all
    # cwd too: `python -c` puts the current folder first on sys.path, before PYTHONPATH
    return StdioServerParameters(command=sys.executable, env={"PYTHONPATH": str(checkout), **keys}, cwd=str(checkout),
                                 args=["-c", "from memfs.cli import main; main()", "mcp", "--vault", str(vault),
                                       "-n", NS, "--author", "bench", *server_args])  # fmt: skip


async def measure(copies: dict[str, Path], calls: int, server_args: tuple[str, ...],
                  checkouts: dict[str, Path]) -> dict[str, Any]:  # fmt: skip
    """Direct calls on ``copies["direct"]``, each server's on its own copy, alternating round by round."""
    questions = corpus.questions(calls + WARM_ROUNDS)
    here, there = multiprocessing.get_context("spawn").Pipe()
    worker = multiprocessing.get_context("spawn").Process(target=direct_calls, args=(str(copies["direct"]), there))
    worker.start()
    sides = [Side("direct", direct=here)]
    async with contextlib.AsyncExitStack() as stack:
        for name, checkout in checkouts.items():
            client = await stack.enter_async_context(
                Client(server(copies[name], checkout, server_args), mode="legacy", read_timeout_seconds=300)
            )
            sides.append(Side(name, client=client, pid=server_pid(copies[name])))
        orders = list(itertools.permutations(sides))  # each side in each place equally often
        for i, question in enumerate(questions):
            keep = i >= WARM_ROUNDS
            order = orders[i % len(orders)]
            edit = {"path": "/memories/edited.md", "old_str": f" v{i}\n", "new_str": f" v{i + 1}\n"}
            rounds = {"view": {"path": "/memories/edited.md"}, "search": {"query": question}, "str_replace": edit}
            for kind, arguments in rounds.items():
                answers = [await side.call(kind, arguments, keep) for side in order]
                if kind == "search":  # the same first hit on every side
                    assert len({a.split("\n")[0] for a in answers}) == 1, answers
    here.send(None)
    worker.join()
    direct = sides[0]
    out: dict[str, Any] = {}
    for side in sides:
        for kind in KINDS:
            entry: dict[str, Any] = {**stats(side.ms[kind])}
            if side.pid is not None or side is direct:
                entry["cpu_ms_median"] = round(statistics.median(side.cpu[kind]), 2)
            if side is not direct:
                paired = [m - d for m, d in zip(side.ms[kind], direct.ms[kind], strict=True)]
                entry["overhead_p50_ms"] = round(entry["p50_ms"] - stats(direct.ms[kind])["p50_ms"], 2)
                entry["overhead_paired_median_ms"] = round(statistics.median(paired), 2)
                if "cpu_ms_median" in entry:  # the server's CPU beyond the call's own, paired the same way
                    extra = [m - d for m, d in zip(side.cpu[kind], direct.cpu[kind], strict=True)]
                    entry["server_cpu_beyond_direct_ms_median"] = round(statistics.median(extra), 2)
            out.setdefault(side.name, {})[kind] = entry
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000, help="memories in the served namespace")
    parser.add_argument("--calls", type=int, default=200, help="calls of each kind, each way")
    parser.add_argument("--polling", action="store_true", help="serve with --polling (no file events)")
    parser.add_argument("--compare", type=Path, metavar="CHECKOUT", action="append", default=[],
                        help="another checkout's server too, in the same run (repeatable)")  # fmt: skip
    args = parser.parse_args()
    checkouts = {"mcp": REPO}
    for checkout in args.compare:
        checkouts[f"mcp_{checkout.resolve().name}"] = checkout.resolve()
    folder = Path(tempfile.mkdtemp(prefix="memfs-mcp-bench-"))
    try:
        items = [{**m, "namespace": NS} for m in corpus.memories(args.size)]
        say(f"mcp: writing {args.size} memories into {NS}")
        corpus.write_vault(folder / "direct", items)
        say("mcp: first open (commits the files and builds the index)")
        with memfs.Vault.open(folder / "direct") as vault:
            memfs.MemoryTools(vault, NS).run("create", path="/memories/edited.md", file_text="Window seats. v0\n")
        copies = {"direct": folder / "direct"}
        for name in checkouts:
            copies[name] = folder / name
            shutil.copytree(folder / "direct", copies[name], symlinks=True)
        say(f"mcp: {WARM_ROUNDS} warm-up rounds, then {args.calls} rounds of view, search and str_replace, "
            f"each {' and '.join(['direct', *checkouts])}")  # fmt: skip
        server_args = ("--polling",) if args.polling else ()
        load_before = [round(x, 1) for x in os.getloadavg()]
        result = anyio.run(measure, copies, args.calls, server_args, checkouts)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(),
                      "load_average_before": load_before, "load_average_after": [round(x, 1) for x in os.getloadavg()],
                      "memories": args.size, "server": "polling" if args.polling else "file events",
                      "checkouts": {k: str(v) for k, v in checkouts.items()}, **result}, indent=2))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
