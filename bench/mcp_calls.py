"""A tool call through `memfs mcp` over stdio beside the same call made directly on MemoryTools.

    python bench/mcp_calls.py                 # 10,000 memories, 200 calls of each kind
    python bench/mcp_calls.py --size 2000 --calls 50
    python bench/mcp_calls.py --polling       # the server finds changes by polling every file

The server is a real `memfs mcp` process driven by the MCP SDK's own client (the handshake era,
as desktop clients speak it); the baseline is `MemoryTools.call` in this process on the same
vault's twin (a copy, so that neither process's writes make the other reopen its index). Direct
and MCP calls alternate, so both see the same machine load; the overhead is also given as the
median of each MCP call's time minus the direct call's just before it. A view of a small file
shows the protocol's cost alone. JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
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


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2), "n": len(ordered)}


async def measure(root: Path, twin: Path, calls: int, server_args: tuple[str, ...] = ()) -> dict[str, Any]:
    """Direct calls on ``root``, MCP calls on ``twin`` (a copy): neither process invalidates the other's index."""
    questions = corpus.questions(calls)
    vault = memfs.Vault.open(root, durable=True)
    tools = memfs.MemoryTools(vault, NS)
    params = StdioServerParameters(command=sys.executable, env={"PYTHONPATH": str(REPO)},
                                   args=["-c", "from memfs.cli import main; main()", "mcp", "--vault", str(twin),
                                         "-n", NS, "--author", "bench", *server_args])  # fmt: skip
    kinds = ("view", "search", "str_replace")
    lat: dict[str, list[float]] = {f"{way}_{kind}": [] for kind in kinds for way in ("direct", "mcp")}
    async with Client(params, mode="legacy", read_timeout_seconds=300) as client:
        for q in questions[:10]:  # warm both sides up: index readers, imports, the server's first scan
            tools.call({"command": "search", "query": q})
            await client.call_tool("memory_search", {"query": q})
        for i, q in enumerate(questions):
            view = {"path": "/memories/edited.md"}  # a small file: the call costs little but the protocol
            start = time.perf_counter()
            tools.call({"command": "view", **view})
            lat["direct_view"].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            await client.call_tool("memory_view", view)
            lat["mcp_view"].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            direct = tools.call({"command": "search", "query": q})
            lat["direct_search"].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            served = await client.call_tool("memory_search", {"query": q})
            lat["mcp_search"].append((time.perf_counter() - start) * 1000)
            assert served.content[0].text.split("\n")[0] == direct.text.split("\n")[0]  # the same answer
            edit = {"old_str": f" v{i}\n", "new_str": f" v{i + 1}\n"}
            start = time.perf_counter()
            result = tools.call({"command": "str_replace", "path": "/memories/edited.md", **edit})
            lat["direct_str_replace"].append((time.perf_counter() - start) * 1000)
            assert not result.is_error, result.text
            start = time.perf_counter()
            answer = await client.call_tool("memory_str_replace", {"path": "/memories/edited.md", **edit})
            lat["mcp_str_replace"].append((time.perf_counter() - start) * 1000)
            assert not answer.is_error, answer.content
    vault.close()
    out: dict[str, Any] = {key: stats(values) for key, values in lat.items()}
    for kind in kinds:  # each MCP call against the direct call made just before it: paired, so load cancels
        paired = [m - d for m, d in zip(lat[f"mcp_{kind}"], lat[f"direct_{kind}"], strict=True)]
        out[f"{kind}_overhead_p50_ms"] = round(out[f"mcp_{kind}"]["p50_ms"] - out[f"direct_{kind}"]["p50_ms"], 2)
        out[f"{kind}_overhead_paired_median_ms"] = round(statistics.median(paired), 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000, help="memories in the served namespace")
    parser.add_argument("--calls", type=int, default=200, help="calls of each kind, each way")
    parser.add_argument("--polling", action="store_true", help="serve with --polling (no file events)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="memfs-mcp-bench-"))
    try:
        items = [{**m, "namespace": NS} for m in corpus.memories(args.size)]
        say(f"mcp: writing {args.size} memories into {NS}")
        corpus.write_vault(folder / "vault", items)
        say("mcp: first open (commits the files and builds the index)")
        with memfs.Vault.open(folder / "vault") as vault:
            memfs.MemoryTools(vault, NS).run("create", path="/memories/edited.md", file_text="Window seats. v0\n")
        shutil.copytree(folder / "vault", folder / "twin", symlinks=True)
        say(f"mcp: {args.calls} searches and {args.calls} str_replace calls, directly and over stdio")
        server_args = ("--polling",) if args.polling else ()
        result = anyio.run(measure, folder / "vault", folder / "twin", args.calls, server_args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(),
                      "load_average": [round(x, 1) for x in os.getloadavg()], "memories": args.size,
                      "server": "polling" if args.polling else "file events", "mcp": result}, indent=2))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
