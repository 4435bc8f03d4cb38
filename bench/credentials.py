"""The credential scanner: its cost per write beside the write itself, and its precision.

    python bench/credentials.py                      # memfs's scanner, and a write's p50, in one run
    python bench/credentials.py --detect-secrets DIR # also detect-secrets, installed with pip --target DIR

Three measurements, JSON on stdout:

- **corpus**: every Markdown file of example_vault/ and every LoCoMo turn (shared/data/locomo-dev),
  none of which holds a credential, so every finding is a false positive; and the same LoCoMo turns
  with a synthetic credential of each kind put into one turn in ten (recall). Time per scan.
- **writes**: ``MemoryStore.add`` and ``update`` of a 2 KB memory in one vault (p50, the scanner
  included, as it runs on every write), and the scanner alone on the same texts.
- **detect-secrets** (optional): the same corpora through its default plugins, line by line.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import string
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import memfs  # noqa: E402
from memfs.credentials import find_secrets, redact  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
_ALNUM = string.ascii_letters + string.digits


def say(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def p50(samples: list[float]) -> float:
    return round(statistics.median(samples), 4)


def fake_credentials(rng: random.Random) -> dict[str, str]:
    """One synthetic value of each kind memfs recognises (random, so no real key)."""

    def r(n: int, chars: str = _ALNUM) -> str:
        return "".join(rng.choice(chars) for _ in range(n))

    return {
        "openai-key": "sk-proj-" + r(40) + r(40, _ALNUM + "_-") + "Aa1",
        "anthropic-key": "sk-ant-api03-" + r(90, _ALNUM + "_-") + "Aa1-AA",
        "aws-access-key-id": "AKIA" + r(16, string.ascii_uppercase + "234567"),
        "github-token": "ghp_" + r(36),
        "slack-token": f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**12, 10**13)}-{r(24)}",
        "google-api-key": "AIza" + r(35, _ALNUM + "_-"),
        "stripe-key": "sk_live_" + r(21) + "Aa1",
        "private-key": "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(r(64, _ALNUM + "+/") for _ in range(4))
        + "\n-----END OPENSSH PRIVATE KEY-----",
        "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJ" + r(40, _ALNUM + "_-") + "." + r(43, _ALNUM + "_-"),
    }  # fmt: skip


def corpora() -> dict[str, list[str]]:
    vault = [p.read_text("utf-8") for p in sorted((ROOT / "example_vault").rglob("*.md"))]
    turns, _ = corpus.turns_and_questions()
    return {"example_vault": vault, "locomo_turns": turns}


def seeded(turns: list[str]) -> tuple[list[str], Counter[str]]:
    """LoCoMo turns, one in ten carrying a credential after "my key is"; what was planted, by kind."""
    rng = random.Random(7)
    planted: Counter[str] = Counter()
    out = []
    for i, turn in enumerate(turns):
        if i % 10 == 0:
            kind, value = rng.choice(sorted(fake_credentials(rng).items()))
            turn = f"{turn} By the way, my key is {value} for the deploy."
            planted[kind] += 1
        out.append(turn)
    return out, planted


def run_memfs(texts: list[str]) -> dict[str, object]:
    start = time.perf_counter()
    kinds: Counter[str] = Counter()
    for text in texts:
        kinds.update(f.kind for f in find_secrets(text))
    elapsed = time.perf_counter() - start
    kb = sum(len(t.encode()) for t in texts) / 1024
    return {"texts": len(texts), "kb": round(kb), "findings": dict(kinds), "total_ms": round(elapsed * 1000, 1),
            "us_per_kb": round(elapsed * 1e6 / max(1, kb), 2)}  # fmt: skip


def run_detect_secrets(texts: list[str]) -> dict[str, object]:
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    kinds: Counter[str] = Counter()
    with default_settings():
        start = time.perf_counter()
        for text in texts:
            for line in text.splitlines():
                kinds.update(s.type for s in scan_line(line))
        elapsed = time.perf_counter() - start
    size = sum(len(t.encode()) for t in texts)
    return {"texts": len(texts), "findings": dict(kinds), "total_ms": round(elapsed * 1000, 1),
            "us_per_kb": round(elapsed * 1e6 / max(1, size / 1024), 2)}  # fmt: skip


def write_bench(writes: int) -> dict[str, object]:
    """A write's p50 with the scanner (it runs inside every store write) and the scanner alone."""
    folder = Path(tempfile.mkdtemp(prefix="memfs-secrets-"))
    try:
        vault = memfs.Vault.open(folder / "vault", create=True)
        store = vault.memories("users/alice")
        two_kb = ("Alice prefers window seats on long flights and aisle seats on short ones. " * 28)[:2000]
        first = store.add(two_kb, title="seats")
        adds, updates, scans = [], [], []
        for i in range(writes):
            body = f"new memory {i} {two_kb}\n"
            start = time.perf_counter()
            store.add(body, title=f"bench add {i}")
            adds.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            store.update(first.id or first.name, body=f"{two_kb} v{i}\n")
            updates.append((time.perf_counter() - start) * 1000)
            text = (folder / "vault" / first.path).read_text("utf-8")
            start = time.perf_counter()
            redact(text)
            scans.append((time.perf_counter() - start) * 1000)
        token = fake_credentials(random.Random(1))["github-token"]
        redacted = []
        for i in range(max(5, writes // 5)):
            start = time.perf_counter()
            store.add(f"my deploy token is {token} ({i}) {two_kb}\n", title=f"token {i}")
            redacted.append((time.perf_counter() - start) * 1000)
        vault.close()
        return {"writes": writes, "add_p50_ms": p50(adds), "update_p50_ms": p50(updates),
                "add_with_a_token_p50_ms": p50(redacted), "scan_2kb_p50_ms": p50(scans),
                "scan_share_of_update_p50": f"{100 * p50(scans) / p50(updates):.3f}%"}  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--detect-secrets", metavar="DIR", help="a folder where detect-secrets was installed")
    args = parser.parse_args()
    texts = corpora()
    with_tokens, planted = seeded(texts["locomo_turns"])
    result: dict[str, object] = {"planted": dict(planted)}
    say("memfs scanner over the corpora")
    result["memfs"] = {name: run_memfs(t) for name, t in {**texts, "locomo_seeded": with_tokens}.items()}
    if args.detect_secrets:
        sys.path.insert(0, args.detect_secrets)
        say("detect-secrets over the corpora")
        result["detect_secrets"] = {name: run_detect_secrets(t) for name, t in
                                    {**texts, "locomo_seeded": with_tokens}.items()}  # fmt: skip
    say(f"{args.writes} writes")
    result["writes"] = write_bench(args.writes)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
