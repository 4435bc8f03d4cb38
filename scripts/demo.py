"""`make demo`: memfs on a scratch copy of example_vault (the tracked folder is never touched)."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

import memfs

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "example_vault"
SCRATCH = Path(os.environ.get("MEMFS_DEMO_DIR") or REPO / ".demo") / "vault"  # the suite runs it elsewhere
out = Console(highlight=False, soft_wrap=True)


def step(title: str) -> None:
    out.print(f"\n[bold cyan]== {title}[/]")


def show_hits(hits: list[memfs.Hit]) -> None:
    for hit in hits:
        snippet = escape(hit.snippet).replace("**", "")
        out.print(f"  [bold]{escape(hit.title)}[/] [dim]{hit.path} ({hit.score:.2f})[/]\n    {snippet}")


def shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def main() -> int:
    logging.basicConfig(level=logging.ERROR)  # the demo prints what memfs reports itself
    shutil.rmtree(SCRATCH.parent, ignore_errors=True)
    shutil.copytree(SOURCE, SCRATCH, ignore=shutil.ignore_patterns(".git", ".memfs", "README.md"))

    step(f"Open a copy of example_vault at {shown(SCRATCH)}")
    vault = memfs.Vault.open(SCRATCH, author="Support agent <support-agent@example.com>",
                             person="Demo Person <person@example.com>")  # fmt: skip
    files = sorted((SCRATCH / "memories").rglob("*.md"))
    out.print(f"{len(files)} memory files; the hand-written files were committed as the person:")
    for rev in vault.log(limit=2):
        out.print(f"  {rev.short} {escape(str(rev.author))}: {escape(rev.subject)}")

    step("Search the whole vault")
    for query in ("seat preference on flights", "which database did we choose", "refund escalation"):
        out.print(f"[yellow]? {query}[/]")
        show_hits(vault.search(query, k=2))

    step("An agent remembers something new about Alice")
    alice = vault.memories("users/alice")
    m = alice.add("Alice switched to an oat-milk flat white in November.", title="Flat white",
                  tags=["food"], type="preference")  # fmt: skip
    out.print(f"created {m.path} with id {m.id}")
    out.print((SCRATCH / m.path).read_text(), markup=False)
    show_hits(alice.search("what coffee does alice drink now, a flat white?", k=2))

    step("Update it, look at its history, roll it back")
    alice.update(m.id or "", body="Alice now drinks black filter coffee; no milk.\n")
    history = alice.history(m.id or "")
    for rev in history:
        out.print(f"  {rev.short} {escape(rev.author.name)}: {escape(rev.subject)} {rev.trailers}")
    restored = alice.restore(m.id or "", history[-1].sha)
    out.print(f"restored body: {restored.body.strip()}")

    step("Many writes, one commit")
    with vault.batch("import: travel notes from the Lisbon trip"):
        for city, note in (("Lisbon", "Alice liked the tram 28 route."), ("Porto", "Too rainy in March.")):
            alice.add(note, title=f"Trip note {city}", tags=["travel"], type="event")
    out.print(f"  {vault.log(limit=1)[0].subject}")

    step("A scripted agent edits its memory through the file-style tools")
    tools = memfs.MemoryTools(vault, "users/alice", session="demo-chat")
    model = memfs.ScriptedModel(
        [
            memfs.Reply("", (memfs.ToolCall("c1", "memory", {"command": "view", "path": "/memories"}),)),
            memfs.Reply(
                "",
                (
                    memfs.ToolCall(
                        "c2",
                        "memory",
                        {
                            "command": "create",
                            "path": "/memories/hotel.md",
                            "file_text": "Alice likes quiet hotel rooms away from the lift.\n",
                        },
                    ),
                ),
            ),  # fmt: skip
            memfs.Reply(
                "",
                (
                    memfs.ToolCall(
                        "c3",
                        "memory",
                        {
                            "command": "str_replace",
                            "path": "/memories/hotel.md",
                            "old_str": "quiet",
                            "new_str": "quiet, high-floor",
                        },
                    ),
                ),
            ),  # fmt: skip
            memfs.Reply(
                "",
                (
                    memfs.ToolCall("c4", "memory", {"command": "search", "query": "hotel room"}),
                    memfs.ToolCall("c5", "memory", {"command": "view", "path": "/memories/../../etc/passwd"}),
                ),
            ),
            memfs.Reply("I noted that Alice likes quiet, high-floor rooms."),
        ]
    )
    conversation = memfs.run_agent(model, [{"role": "user", "content": "I want a quiet room, high up."}],
                                   dispatch=tools.dispatch, tools=tools.anthropic_tools())  # fmt: skip
    for turn in conversation[1:]:
        if turn["role"] == "tool":
            first = turn["content"].splitlines()[0]
            out.print(f"  [dim]tool ->[/] {'[red]' if turn['is_error'] else ''}{escape(first)}")
        elif turn.get("tool_calls"):
            for c in turn["tool_calls"]:
                args = c["arguments"]
                target = args.get("path") or args.get("query") or ""
                out.print(f"  [green]agent[/] {args['command']} {escape(str(target))}")
        else:
            out.print(f"  [green]agent[/] {escape(turn['content'])}")
    for rev in vault.log(limit=2):
        out.print(f"  {rev.short} {escape(rev.subject)}  [dim]{rev.trailers}[/]")

    step("A conversation kept as a Markdown transcript (an OpenAI Agents Session), found again by search")
    chat = vault.session(keys={"user_id": "alice", "channel": "telegram"})
    chat.append([
        {"role": "user", "content": "Can you find me a ryokan in Kyoto for the March trip?"},
        {"type": "function_call", "call_id": "call_1", "name": "search_hotels", "arguments": '{"city": "Kyoto"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "Hiiragiya (Gion), Tawaraya (Nakagyo)"},
        {"role": "assistant", "content": "Two options: **Hiiragiya** near Gion, or **Tawaraya**."},
    ])  # fmt: skip
    chat.append([{"role": "user", "content": "Hiiragiya, please. Quiet room."},
                 {"role": "assistant", "content": "Booked Hiiragiya, quiet garden-side room."}])  # fmt: skip
    out.print(f"  {chat.path}:")
    for line in chat.file.read_text().splitlines()[:12]:
        out.print(f"  [dim]|[/] {escape(line)}")
    for hit in vault.search_messages("which ryokan did we book in kyoto", k=3):
        out.print(f"  found #{hit.position} ({hit.role}): {escape(hit.snippet).replace('**', '')}")
    out.print(f"  {vault.log(limit=1)[0].subject}")

    step("A long conversation summarized by a conversation manager; the summary is in the transcript")
    summarizer = memfs.ScriptedModel(
        [
            "- Alice is planning Kyoto in March and prefers quiet ryokans.\n"
            "- Tools: search_hotels found Hiiragiya and Tawaraya; Hiiragiya was booked."
        ]
    )
    manager = memfs.SummarizingConversationManager(summarizer, max_messages=8, preserve_recent_messages=4)
    long_chat = vault.session("kyoto-planning", manager=manager)
    for n in range(5):
        long_chat.append([{"role": "user", "content": f"Question {n} about the Kyoto trip"},
                          {"role": "assistant", "content": f"Answer {n} about the Kyoto trip"}])  # fmt: skip
    out.print(f"  the model now sees {len(long_chat.items())} messages; the file keeps {len(long_chat.history())}")
    summary = long_chat.file.read_text().split("## summary", 1)[1].split("\n\n## ", 1)[0]
    for line in ("## summary" + summary).splitlines()[:6]:
        out.print(f"  [dim]|[/] {escape(line[:110])}")

    step("Memories extracted from a conversation, injected into the next one, edited by a person")
    longterm = memfs.LongTermMemory(vault, stores=["users/alice", memfs.Scope("agents/support", writable=False)],
                                    extractor=memfs.RuleExtractor())  # fmt: skip
    talk = vault.session("demo-extraction")
    for said in ("My gym is the Fitness Hut in Alvalade.", "Remember that I take the 7:40 train on Mondays."):
        items = [{"role": "user", "content": said}, {"role": "assistant", "content": "Noted."}]
        talk.append(items)
        longterm.observe(items, session=talk)
    extracted = [m for m in alice.list() if m.source and m.source.startswith(talk.path)]
    for memory in extracted:
        out.print(f"  extracted {memory.path} (source {memory.source}): {memory.body.strip()}")
    question = [{"role": "user", "content": "Which gym and which Monday train?"}]
    for line in longterm.context_for(question).splitlines():
        out.print(f"  [dim]|[/] {escape(line[:110])}")
    [gym] = [SCRATCH / m.path for m in extracted if "Alvalade" in m.body]
    gym.write_text(gym.read_text().replace("Alvalade", "Saldanha"))  # a person corrects it by hand
    vault.reconcile()
    out.print(f"  after a hand edit, injected: {'Saldanha' in longterm.context_for(question)}")

    step("A person edits a memory in their editor while `memfs watch` runs")
    seats = SCRATCH / "memories/users/alice/window-seats.md"
    with vault.watch(commit_delay=0.5, on_change=lambda kind, paths: out.print(f"  [cyan]watcher[/] {kind} {paths}")):
        text = seats.read_text()
        tmp = seats.with_name(".window-seats.md.tmp")  # saved as most editors do: a temp file renamed over
        tmp.write_text(text.replace("usually an aisle", "usually an aisle, never next to the galley"))
        os.replace(tmp, seats)
        deadline = time.monotonic() + 10
        while not vault.search("galley") and time.monotonic() < deadline:
            time.sleep(0.05)
        out.print(f"  searchable at once: {[h.path for h in vault.search('galley', k=1)]}")
        while vault.log(limit=1)[0].trailers.get("Memfs-Op") != "reconcile" and time.monotonic() < deadline:
            time.sleep(0.05)
    rev = vault.log(limit=1)[0]
    out.print(f"  committed as the person: {rev.short} {escape(str(rev.author))}: {escape(rev.subject)}")

    step("Undo the agent's last change in that chat session")
    undone = vault.undo(session="demo-chat")
    out.print(f"  undid {undone.short} {escape(undone.subject)}")
    out.print(f"  hotel.md now reads: {alice.get('hotel.md').body.strip()!r}")

    step("A person saves a broken file by hand: reported and skipped, never rewritten")
    broken = SCRATCH / "memories/users/alice/broken.md"
    broken.write_text("---\ntitle: [unclosed\n---\nOops\n")
    vault.reconcile()
    for problem in vault.problems():
        out.print(f"  [red]{problem.path}[/]: {escape(problem.reason)}")
    out.print(f"  file left as written: {broken.read_text()!r}")

    step("memfs doctor")
    for finding in vault.doctor():
        out.print(f"  {finding.severity:7} {finding.check:6} {escape(finding.message)}")

    step("git log --oneline (newest 8)")
    for rev in vault.log(limit=8):
        out.print(f"  {rev.short} {escape(rev.subject)}")
    vault.close()
    out.print(f"\nTry the CLI on it:  .venv/bin/memfs search --vault {shown(SCRATCH)} 'meeting hours'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
