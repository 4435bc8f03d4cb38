"""Import and export: their cost beside the plain write path, in one run.

    python bench/portability.py [--memories N]

JSON on stdout:

- **export**: ``vault.export()`` of a vault of N memories (100-400 words each, ``corpus.py``).
- **import**: ``memfs import`` of that export into a new vault (every record read, checked against
  the store's rules and the vault, then written in one commit), and the round trip checked.
- **baseline**: the same N memories written through ``MemoryStore.add`` inside one ``vault.batch``
  (the store's write path and one commit, without import's reading and checking), in the same run.
- **folder**: importing the N files as a folder of Markdown notes (each stamped ``provenance: import``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import memfs  # noqa: E402


def say(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    args = parser.parse_args()
    n = args.memories
    items = corpus.memories(n)
    work = Path(tempfile.mkdtemp(prefix="memfs-bench-portability-"))
    os.environ.setdefault("XDG_STATE_HOME", str(work / "state"))
    result: dict[str, object] = {"memories": n, "python": sys.version.split()[0], "cpus": os.cpu_count()}
    try:
        source = work / "source"
        source.mkdir()
        corpus.write_vault(source, items)
        with memfs.Vault.open(source, create=True) as vault:
            start = time.perf_counter()
            lines, skipped = vault.export()
            result["export_s"] = round(time.perf_counter() - start, 3)
        assert not skipped and len(lines) == n
        export = work / "export.jsonl"
        export.write_text("".join(lines))
        result["export_bytes"] = export.stat().st_size
        say(f"exported {n} in {result['export_s']} s")

        with memfs.Vault.open(work / "imported", create=True) as vault:
            start = time.perf_counter()
            report = vault.import_from(export)
            result["import_s"] = round(time.perf_counter() - start, 3)
            assert len(report.imported) == n and not report.skipped
            result["round_trip_exact"] = "".join(vault.export()[0]) == "".join(lines)
            result["import_commits"] = len(vault.log()) - 1
        say(f"imported in {result['import_s']} s")

        with memfs.Vault.open(work / "baseline", create=True) as vault:
            start = time.perf_counter()
            with vault.batch("baseline"):
                for item in items:
                    vault.memories(str(item["namespace"])).add(
                        str(item["body"]), title=str(item["title"]), type=str(item["type"]),
                        tags=list(item["tags"]),  # type: ignore[call-overload]
                    )  # fmt: skip
            result["baseline_add_in_one_batch_s"] = round(time.perf_counter() - start, 3)
        say(f"baseline in {result['baseline_add_in_one_batch_s']} s")

        with memfs.Vault.open(work / "folder", create=True) as vault:
            start = time.perf_counter()
            report = vault.import_from(source / "memories", namespace="notes", format="markdown")
            result["folder_import_s"] = round(time.perf_counter() - start, 3)
            assert len(report.imported) == n, report.skipped[:3]
        say(f"folder import in {result['folder_import_s']} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
