"""Credentials in text: found by their shape, redacted with a typed placeholder.

Memory is kept forever and injected into prompts, so a key pasted into a chat must not reach a
memory file, a transcript, a commit or the index. :func:`find_secrets` recognises the credentials
whose values have a shape of their own (a vendor prefix, a fixed length, a character set), so it
rarely fires on prose: ``sk-learn``, a UUID or a git hash do not match. It does not guess at
passwords or other values without such a shape; that would flag half the vault.

:func:`redact` replaces each one with ``[REDACTED:<kind>]`` (``[REDACTED:github-token]``), a text
that no pattern matches, that JSON and YAML carry as it is, and that tells a reader what was there.

A person may keep a credential in a file on purpose: a line holding ``memfs:allow-secret`` (in a
Markdown comment, say) is skipped when ``allow_marked`` is true. Only people's edits honour it;
what an agent or an extractor writes is always redacted, marker or not.

A text that names something (a session id, a context key, a namespace, a commit's author) cannot
be redacted without naming something else: :func:`check_clean` refuses it. Every redaction of
what someone writes is told to the operator by :func:`report` (a warning on the
``memfs.credentials`` logger: the kinds, where, who wrote it; never the value).
"""

from __future__ import annotations

import bisect
import itertools
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import SecretError

log = logging.getLogger(__name__)

ALLOW_MARKER = "memfs:allow-secret"
PLACEHOLDER = "[REDACTED:{kind}]"


@dataclass(frozen=True)
class SecretFinding:
    """One credential found in a text: its kind and where it is (never its value).

    Attributes:
        kind: ``openai-key``, ``anthropic-key``, ``aws-access-key-id``, ``github-token``,
            ``slack-token``, ``google-api-key``, ``stripe-key``, ``private-key`` or ``jwt``.
        start: Offset of its first character in the text.
        end: Offset just after its last character.
    """

    kind: str
    start: int
    end: int

    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)``, as ``re.Match.span()`` gives it."""
        return self.start, self.end

    def line(self, text: str) -> int:
        """The 1-based line of ``text`` it starts on."""
        return text.count("\n", 0, self.start) + 1


def _mixed(value: str) -> bool:
    """A random-looking value: upper and lower case letters and a digit (prose and slugs lack one of them)."""
    return any(c.isdigit() for c in value) and any(c.isupper() for c in value) and any(c.islower() for c in value)


def _always(value: str) -> bool:
    return True


# Each kind: the substrings one of its values must contain (a quick test before any regex), the
# pattern, and a check of the matched value. Anthropic comes before OpenAI: both start with "sk-".
_KINDS: list[tuple[str, tuple[str, ...], re.Pattern[str], Callable[[str], bool]]] = [
    (
        "private-key",
        ("PRIVATE KEY-----",),
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            # base64 lines and PEM headers ("Proc-Type: 4,ENCRYPTED"), however the key was pasted:
            # lines quoted (> ) or commented (//, #, ;, *), indented, CRLF, or escaped once or more
            # inside a string (\n, \r\n, \\n, \/, %2B, <br>): up to the END line, or as far as the body goes
            r"(?:[A-Za-z0-9+/=\s:,<>#;*|%&\\]|-(?!----))*"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?"
        ),
        _always,
    ),
    ("anthropic-key", ("sk-ant-",), re.compile(r"(?<![\w-])sk-ant-[A-Za-z0-9_-]{32,}"), _mixed),
    ("openai-key", ("sk-",), re.compile(r"(?<![\w-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"), _mixed),
    (
        "aws-access-key-id",
        ("AKIA", "ASIA"),
        re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        _always,
    ),
    (
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(
            r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{60,240})(?![A-Za-z0-9_])"
        ),
        _always,
    ),
    (
        "slack-token",
        ("xox",),
        re.compile(r"(?<![A-Za-z0-9])xox[abposr]-[0-9]{6,}-[A-Za-z0-9-]{8,}(?![A-Za-z0-9-])"),
        _always,
    ),
    ("google-api-key", ("AIza",), re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"), _always),
    (
        "stripe-key",
        ("_live_", "_test_"),
        re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,}(?![A-Za-z0-9_])"),
        _mixed,
    ),
    (
        "jwt",
        ("eyJ",),
        re.compile(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])"
        ),
        _always,
    ),
]

KINDS = tuple(kind for kind, _, _, _ in _KINDS)


def find_secrets(text: str, *, allow_marked: bool = False) -> list[SecretFinding]:
    """The credentials in ``text``, in order, none overlapping another.

    Costs one substring test per prefix on text that holds none (the common case); a pattern runs
    only where its prefix occurs.

    Args:
        text: Any text: a memory, a message, a file name, a commit message.
        allow_marked: Skip findings on a line that holds :data:`ALLOW_MARKER` (a person's
            deliberate choice; never set for what an agent or extractor writes).
    """
    found: list[SecretFinding] = []
    for kind, prefixes, pattern, check in _KINDS:
        if not any(prefix in text for prefix in prefixes):
            continue
        for match in pattern.finditer(text):
            if check(match.group()):
                found.append(SecretFinding(kind, match.start(), match.end()))
    if not found:
        return found
    found.sort(key=lambda f: (f.start, -f.end))
    kept: list[SecretFinding] = []
    for finding in found:  # a JWT inside a private key block, say: the outer one is enough
        if not kept or finding.start >= kept[-1].end:
            kept.append(finding)
    if allow_marked and ALLOW_MARKER in text:
        kept = [f for f in kept if not _marked(text, f)]
    return kept


def redact(text: str) -> tuple[str, list[SecretFinding]]:
    """``text`` with every credential replaced by ``[REDACTED:<kind>]``, and what was replaced."""
    findings = find_secrets(text)
    return _replaced(text, findings), findings


def _replaced(text: str, findings: list[SecretFinding]) -> str:
    """``text`` with each of ``findings`` (in order, none overlapping) replaced by its placeholder."""
    if not findings:
        return text
    parts: list[str] = []
    position = 0
    for finding in findings:
        parts += [text[position : finding.start], PLACEHOLDER.format(kind=finding.kind)]
        position = finding.end
    parts.append(text[position:])
    return "".join(parts)


def redact_value(value: Any) -> Any:
    """A JSON-like value (strings, lists, dicts, numbers) with the credentials in its strings redacted.

    Keys are kept; values are new only where something was redacted (the rest is shared).
    """
    if isinstance(value, str):
        return redact(value)[0]
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    return value


def redact_values(values: Sequence[Any]) -> tuple[list[Any], list[SecretFinding]]:
    """Each of ``values`` as :func:`redact_value` gives it, and the credentials found: their text scanned once.

    Every string of ``values`` (dictionary keys too: found, reported, kept) is scanned as one text,
    each ended by a NUL. No credential's pattern matches a NUL, and to the look-arounds at its ends
    a NUL is what the start or end of a string is, so each finding lies inside one string exactly
    as a scan of that string alone finds it. The findings' offsets are in the joined text.
    """
    strings: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, list):
            for item in value:
                collect(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    strings.append(key)
                collect(item)

    for value in values:
        collect(value)
    findings = find_secrets("\0".join(strings))
    if not findings:
        return list(values), findings  # nothing to redact: each value as it is
    starts = list(itertools.accumulate((len(s) + 1 for s in strings[:-1]), initial=0))
    inside: dict[int, list[SecretFinding]] = {}
    for finding in findings:
        at = bisect.bisect_right(starts, finding.start) - 1
        inside.setdefault(at, []).append(
            SecretFinding(finding.kind, finding.start - starts[at], finding.end - starts[at])
        )
    position = itertools.count()

    def rebuild(value: Any) -> Any:
        if isinstance(value, str):
            return _replaced(value, inside.get(next(position), []))
        if isinstance(value, list):
            return [rebuild(item) for item in value]
        if isinstance(value, dict):
            rebuilt = {}
            for key, item in value.items():
                if isinstance(key, str):
                    next(position)  # a key is kept as it is
                rebuilt[key] = rebuild(item)
            return rebuilt
        return value

    return [rebuild(value) for value in values], findings


def check_clean(what: str, text: str) -> str:
    """``text`` unless it holds a credential; then SecretError naming ``what`` and the kinds, never the value.

    For a text that names something and would name something else once redacted: a session id,
    a context key, a namespace or folder, a commit's author, a person's commit message.
    """
    findings = find_secrets(text) if isinstance(text, str) else []
    if findings:
        kinds = tuple(f.kind for f in findings)
        raise SecretError(
            f"{what} holds a credential ({describe(findings)}); memfs never writes one into a file name, "
            "a commit or front matter: choose one without it",
            kinds,
        )
    return text


def report(findings: list[SecretFinding], *, where: str, who: str) -> None:
    """Tell the operator that credentials were redacted from what ``who`` wrote to ``where`` (never the value)."""
    if findings:  # where and who are redacted too: an author's name may be the very token
        log.warning("redacted %s from %s, written by %s", describe(findings), redact(where)[0], redact(who)[0])


_URL_USERINFO = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^/\s@'\"<>]*@")


def hide_url_credentials(text: str) -> str:
    """``text`` with the user and password of every URL in it shown as ``***`` and credentials redacted.

    ``http://alice:s3cret@host/x.git`` becomes ``http://***@host/x.git``: what a person typed into
    a clone URL, or what git repeats of it in an error, is never printed or logged.
    """
    return redact(_URL_USERINFO.sub(r"\1***@", text))[0]


def describe(findings: list[SecretFinding], text: str | None = None) -> str:
    """The kinds found (and their lines when ``text`` is given), for a message: never the values."""
    if text is None:
        kinds = sorted({f.kind for f in findings})
        return ", ".join(kinds)
    return ", ".join(f"{f.kind} on line {f.line(text)}" for f in findings)


def secret_advice(rel: str, found: list[tuple[str, int]]) -> str:
    """Why a person's edit of ``rel`` is not committed, and how to keep it deliberately (never the value).

    ``found``: (kind, line) of each credential; line 0 is the file's name.
    """
    where = ", ".join(f"{kind} on line {line}" if line else f"{kind} in the file name" for kind, line in found)
    return (
        f"it holds a credential ({where}), and git would keep it for good; remove it (memfs then commits "
        f"the edit), or keep it deliberately: add {ALLOW_MARKER} to that line, or run "
        f"`memfs commit --allow-secret {rel}`"
    )


def _marked(text: str, finding: SecretFinding) -> bool:
    start = text.rfind("\n", 0, finding.start) + 1
    end = text.find("\n", finding.end)
    return ALLOW_MARKER in text[start : end if end != -1 else len(text)]
