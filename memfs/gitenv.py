"""The one safe environment every git command runs in: nothing the repository names runs.

:class:`GitEnvironment` works out, from ``git config --list`` (which runs nothing), the settings
that neutralise a repository's hooks, filters, drivers and remote programs, and keeps them while
git's config files are unchanged; :mod:`memfs.gitrun` starts every command with them. Also here:
what a repository memfs made is set to (private), the git it needs, git's ownership check, and
how a push to a folder on this machine is received.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import gitrun
from .errors import HistoryError, UnsafeRepositoryError

# -- git that runs nothing it was not asked to ---------------------------------------------
# A vault can come from someone else: an archive, a shared folder, a clone. Its repository's own
# files (`.git/config` and every file it includes, `.git/hooks/`, `.git/info/attributes`,
# `.gitattributes`) can name programs that git runs as a side effect of ordinary commands, so
# even `memfs ls` would run the sender's code. Every git command memfs runs (all start in
# memfs.gitrun) gets the environment of `GitEnvironment.overrides()`, which neutralises them:
#
#   hooks (.git/hooks/*, core.hooksPath)       core.hooksPath=/dev/null: no hook is ever found
#   core.fsmonitor                             false (it names a program git asks what changed)
#   filter.<d>.clean/smudge/process            emptied, with required=false, for every driver any
#     (attributes name the driver)               config defines: files are stored as their exact bytes
#   diff.<d>.textconv                          cat; and --no-textconv on diff and log
#   diff.external, diff.<d>.command,           --no-ext-diff on diff and log (an empty value would
#     GIT_EXTERNAL_DIFF                          not switch them off)
#   merge.<d>.driver                           git merge-file: git's own text merge
#   core.pager, pager.*, GIT_PAGER             GIT_PAGER=cat (memfs reads git's output; never a tty)
#   core.editor, sequence.editor               GIT_EDITOR=: and GIT_SEQUENCE_EDITOR=: (git's no-op)
#   a password prompt on the terminal          GIT_TERMINAL_PROMPT=0 (memfs has nobody to ask)
#   log.showSignature (runs gpg.program)       false, and --no-show-signature on log; memfs's commits
#                                                are made with --no-gpg-sign
#   a submodule's own config and hooks         --ignore-submodules=all on status and diff
#   remote.<name>.uploadpack/.receivepack      --upload-pack=git-upload-pack, --receive-pack=
#     (run here for a remote that is a path;     git-receive-pack on fetch, ls-remote and push (git
#     later config cannot replace them)          takes the first value it reads, so -c cannot)
#
# Remote operations (purge --rewrite-remotes, a sync) run with the person's own settings, never
# the repository's: when the repository's config (scope local or worktree, includes too) sets one
# of these, it is replaced by the value of the global or system config, else by git's default:
# core.sshCommand, core.askPass, credential helpers (credential.helper and
# credential.<url>.helper: the list is emptied, then the global helpers are given again),
# core.alternateRefsCommand, protocol.allow and protocol.<name>.allow (a received repository
# must not allow `ext::` commands); core.gitProxy, where git takes the first value it reads, is
# switched off with an empty GIT_PROXY_COMMAND (unless the person's environment sets one).
# url.<base>.insteadOf cannot be undone by later config; it can only rewrite a URL into one the
# protocol policy above allows. A remote that is a folder on this machine is a repository of its
# own: a push into it runs its hooks, as any git push there would (git clears the config
# variables for the other side).
#
# Drivers are neutralised by name rather than by hiding the attributes files: git's
# --attr-source (2.40) and GIT_ATTR_SOURCE (2.42) are newer than the git memfs supports, and
# neither would hide `.git/info/attributes`. A driver no config defines runs nothing anyway.
#
# The settings travel as GIT_CONFIG_COUNT/KEY_n/VALUE_n: read after every config file (so they
# win over the repository's), and inherited by every git process git itself starts. They are
# worked out from `git config --list` (which runs nothing) and read again when any config file
# git read changes. git's ownership check (safe.directory) is kept as git applies it: a
# repository owned by another user is refused unless the person's global config trusts it.
# The flags of the table (--no-ext-diff, --upload-pack=...) are put on every command by the
# runner: memfs.gitrun.FLAGS.

_HOOKS_OFF = "/dev/null"
_FIXED_CONFIG = (("core.hooksPath", _HOOKS_OFF), ("core.fsmonitor", "false"), ("log.showSignature", "false"))
_FIXED_ENV = {"GIT_PAGER": "cat", "GIT_EDITOR": ":", "GIT_SEQUENCE_EDITOR": ":", "GIT_TERMINAL_PROMPT": "0"}
_DRIVER_KEYS = {  # the keys of a driver that name a program, and what they become
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "diff": (("textconv", "cat"),),
    "merge": (("driver", "git merge-file --marker-size=%L %A %O %B"),),
}
_REPOSITORY_SCOPES = ("local", "worktree")
_PERSON_SCOPES = ("system", "global", "command")
# git's protocol policy when nothing is configured (transport.c): known safe, ext never, others the user's.
_PROTOCOL_DEFAULTS = {"http": "always", "https": "always", "git": "always", "ssh": "always", "ext": "never"}
_DUBIOUS = "dubious ownership"
# GIT_CONFIG_COUNT arrived in git 2.31: an older git would ignore every setting above, silently.
OLDEST_GIT = (2, 31)


@dataclass(frozen=True)
class ConfigEntry:
    """One value of git's config as git reads it: where from (scope and origin), key and value."""

    scope: str
    origin: str
    key: str  # section and name lower-case, a subsection as written
    value: str


def _read_config(top: Path, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Every config value git reads in ``top`` (includes followed), in git's order; [] if git cannot say."""
    try:
        proc = gitrun.run(
            ["config", "--list", "--show-scope", "--show-origin", "-z"], cwd=top, overrides=overrides, timeout=30
        )
    except gitrun.NOT_RUN:
        return []
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    entries = []
    for i in range(0, len(fields) - 2, 3):
        key, _, value = fields[i + 2].partition("\n")
        entries.append(ConfigEntry(fields[i], fields[i + 1], key, value))
    return entries


def _split_key(key: str) -> tuple[str, str | None, str]:
    """``section.sub.section.name`` -> (section, subsection or None, name), as git splits keys."""
    section, _, rest = key.partition(".")
    sub, dot, name = rest.rpartition(".")
    return section.lower(), (sub if dot else None), name.lower()


def neutralising_config(entries: Sequence[ConfigEntry], environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """The ``(key, value)`` settings that keep git from running a program the repository names.

    ``entries`` is git's config as :func:`_read_config` lists it; ``environ`` the person's
    environment (``GIT_SSH``, ``SSH_ASKPASS`` count as theirs). See the table above.
    """
    settings: list[tuple[str, str]] = list(_FIXED_CONFIG)
    drivers: dict[tuple[str, str], None] = {}
    for entry in entries:
        section, sub, _ = _split_key(entry.key)
        if section in _DRIVER_KEYS and sub is not None:
            drivers[(section, sub)] = None
    for section, sub in drivers:
        settings += [(f"{section}.{sub}.{name}", value) for name, value in _DRIVER_KEYS[section]]
    return settings + _remote_settings(entries, environ)


def _remote_settings(entries: Sequence[ConfigEntry], environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """Settings replacing what the repository's own config says about reaching remotes (see above)."""
    own = [e for e in entries if e.scope in _REPOSITORY_SCOPES]
    person = [e for e in entries if e.scope in _PERSON_SCOPES]

    def theirs(key: str) -> str | None:  # the person's last value of a single-valued key
        values = [e.value for e in person if e.key.lower() == key.lower()]
        return values[-1] if values else None

    settings: list[tuple[str, str]] = []
    own_keys = {e.key.lower(): e.key for e in own}
    if "core.sshcommand" in own_keys:
        ssh = environ.get("GIT_SSH")
        settings.append(("core.sshCommand", theirs("core.sshCommand") or (shlex.quote(ssh) if ssh else "ssh")))
    if "core.askpass" in own_keys:  # empty: no askpass program (SSH_ASKPASS is read only when unset)
        settings.append(("core.askPass", theirs("core.askPass") or environ.get("SSH_ASKPASS", "")))
    if "core.alternaterefscommand" in own_keys:  # ":" lists no alternate refs; fetching still works
        settings.append(("core.alternateRefsCommand", theirs("core.alternateRefsCommand") or ":"))
    helpers = [e for e in entries if _split_key(e.key)[0] == "credential" and _split_key(e.key)[2] == "helper"]
    if any(e.scope in _REPOSITORY_SCOPES for e in helpers):  # an empty helper empties the list
        settings += [("credential.helper", "")] + [(e.key, e.value) for e in helpers if e.scope in _PERSON_SCOPES]
    for key in own_keys:
        section, sub, name = _split_key(key)
        if section == "protocol" and name == "allow":
            settings += _protocol_settings(sub, theirs)
    return settings


def _protocol_settings(protocol: str | None, theirs: Callable[[str], str | None]) -> list[tuple[str, str]]:
    """The person's protocol policy, for a protocol (or, None, all of them) the repository set one for."""
    if protocol is not None:
        value = theirs(f"protocol.{protocol}.allow") or theirs("protocol.allow")
        return [(f"protocol.{protocol}.allow", value or _PROTOCOL_DEFAULTS.get(protocol.lower(), "user"))]
    # protocol.allow is what a protocol without a policy of its own gets: put the person's back,
    # and git's defaults for the protocols that have one (so `ext::` stays forbidden).
    every = theirs("protocol.allow")
    settings = [("protocol.allow", every or "user")]
    for name, default in _PROTOCOL_DEFAULTS.items():
        settings.append((f"protocol.{name}.allow", theirs(f"protocol.{name}.allow") or every or default))
    return settings


def _config_env(settings: Sequence[tuple[str, str]], environ: Mapping[str, str]) -> dict[str, str]:
    """``settings`` as GIT_CONFIG_COUNT/KEY/VALUE variables, after any the person's environment holds."""
    try:
        start = int(environ.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        start = 0
    env = {"GIT_CONFIG_COUNT": str(start + len(settings))}
    for i, (key, value) in enumerate(settings, start):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


# How a push to a folder on this machine is received: the checked-out branch moves with its files
# (when they hold no uncommitted edit), and no hook of that repository runs.
LOCAL_RECEIVE = f"git -c core.hooksPath={_HOOKS_OFF} -c receive.denyCurrentBranch=updateInstead receive-pack"
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def local_folder(url: str) -> Path | None:
    """The folder a remote URL names on this machine (a path or ``file://``), else None."""
    if url.startswith("file://"):
        return Path(url[len("file://") :])
    if not url or _URL_SCHEME.match(url) or (":" in url.split("/", 1)[0]):  # a URL, or scp-like host:path
        return None
    return Path(url).expanduser()


# git's refusals a person can act on, each as a sentence with the fix: (what git says, the sentence)
_REFUSALS = (
    (
        ("refusing to update checked out branch", "is currently checked out"),
        "{where} has {branch} checked out and refuses pushes to it; make it a bare repository "
        "(`git clone --bare`), or run `git config receive.denyCurrentBranch updateInstead` in it, then sync again",
    ),
    (
        ("Working directory has unstaged changes", "Up-to-date check failed", "would be overwritten"),
        "{where} holds edits not committed yet, so its files cannot take what this sync sends; commit them "
        "there (`memfs commit --vault {where}`), then sync again",
    ),
    (
        ("does not appear to be a git repository", "not a git repository"),
        "{where} is not a git repository: check the remote's URL (`git remote -v`), or `git remote set-url` it",
    ),
    (
        (
            "Could not read from remote repository",
            "Permission denied",
            "Authentication failed",
            "could not read Username",
        ),
        "{where} refused access: check the URL and that your ssh key or credential helper works for it "
        "(`git ls-remote {where}` says more)",
    ),
    (
        ("Could not resolve host", "Connection refused", "Connection timed out", "unable to access"),
        "{where} cannot be reached: check the URL and the network, then sync again",
    ),
)


def git_refusal(err: str, where: str, branch: str) -> str | None:
    """The refusal ``err`` of git (a push or fetch to ``where``) as a sentence with its fix, or None if unknown."""
    for signs, sentence in _REFUSALS:
        if any(sign in err for sign in signs):
            return sentence.format(where=where, branch=branch)
    return None


def _safe_overrides(settings: Sequence[tuple[str, str]]) -> dict[str, str]:
    """The variables to add to the person's environment for ``settings`` and the fixed variables."""
    return {**_FIXED_ENV, **_config_env(settings, os.environ)}


def fixed_overrides() -> dict[str, str]:
    """The overrides of a git command that reads no repository's programs: the fixed part only."""
    return _safe_overrides(_FIXED_CONFIG)


_STATE_VARIABLES = (
    "HOME",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_SSH",
    "SSH_ASKPASS",
    "GIT_PROXY_COMMAND",
)


def _signature(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


class GitEnvironment:
    """The environment every git command in one repository runs with (the table above).

    Worked out once and kept while the config files git reads (and those it would read if they
    appeared) and the variables naming them are unchanged: a few ``stat`` calls per command.
    """

    def __init__(self, top: Path, git_dir: Path) -> None:
        self.top = top
        self._git_dir = git_dir
        self._key: tuple[object, ...] | None = None
        self._variables: tuple[str | None, ...] | None = None
        self._candidates: list[str] = []
        self._files: list[str] = []
        self._settings: list[tuple[str, str]] = list(_FIXED_CONFIG)
        self._overrides: dict[str, str] = {}
        self._values: dict[str, str] = {}
        self._lock = threading.Lock()

    def settings(self) -> list[tuple[str, str]]:
        """The config settings in force now, read again when a config file changed."""
        with self._lock:
            self._refresh()
            return self._settings

    def overrides(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """What one git command gets on top of the person's environment: the settings, then ``extra``."""
        with self._lock:
            self._refresh()
            return {**self._overrides, **(extra or {})}

    def value(self, key: str) -> str | None:
        """The value git reads for ``key`` (``section.name``, the last one set wins), or None."""
        with self._lock:
            self._refresh()
            return self._values.get(key.lower())

    def _refresh(self) -> None:
        variables = tuple(os.environ.get(name) for name in _STATE_VARIABLES)
        if variables != self._variables:
            self._variables, self._candidates = variables, self._config_files()
        key = (variables, tuple(_signature(path) for path in [*self._candidates, *self._files]))
        if key == self._key:
            return
        entries = _read_config(self.top, fixed_overrides())
        # The files read beyond the candidates (includes): those the key did not cover, so while
        # there are none the key keeps its shape and the next command does not read again.
        candidates = {os.path.realpath(path) for path in self._candidates}
        files = {str(self.top / e.origin[5:]) for e in entries if e.origin.startswith("file:")}
        self._files = sorted(file for file in files if os.path.realpath(file) not in candidates)
        self._settings = neutralising_config(entries, os.environ)
        self._values = {e.key.lower(): e.value for e in entries if e.key.count(".") == 1}
        own_proxy = any(e.key.lower() == "core.gitproxy" for e in entries if e.scope in _REPOSITORY_SCOPES)
        proxy = {"GIT_PROXY_COMMAND": ""} if own_proxy and "GIT_PROXY_COMMAND" not in os.environ else {}
        self._overrides = {**_safe_overrides(self._settings), **proxy}
        self._key = key  # as it was before reading: a change meanwhile is read next time

    def _config_files(self) -> list[str]:
        """Where git looks for config, whether or not the files exist yet."""
        home = Path(os.environ.get("HOME", "~")).expanduser()
        xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
        files = [
            self._git_dir / "config",
            self._git_dir / "config.worktree",
            home / ".gitconfig",
            xdg / "git" / "config",
            Path(os.environ.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig"),
            Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"),
        ]
        return [str(file) for file in files]


PRIVATE_REPOSITORY = "0600"  # core.sharedRepository: every file git writes is 0600, every folder 0700


def make_git_private(git_dir: Path) -> None:
    """Make a repository memfs created (init, clone) private: git's files 0600 from now on, and those it has now.

    ``core.sharedRepository=0600`` makes git write its index, objects, refs and logs for the
    owner alone whatever the umask; what ``git init`` already wrote is narrowed the same way.
    """
    gitrun.run(
        ["--git-dir", str(git_dir), "config", "core.sharedRepository", PRIVATE_REPOSITORY],
        cwd=None,
        overrides=fixed_overrides(),
    )
    os.chmod(git_dir, 0o700)
    for folder, dirs, files in os.walk(git_dir):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(folder, name), 0o700, follow_symlinks=False)
        for name in files:
            path = os.path.join(folder, name)
            with contextlib.suppress(OSError):
                if not os.path.islink(path):
                    os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) & 0o700)


def check_git_version(version: tuple[int, ...]) -> None:
    """Raise HistoryError for a git older than :data:`OLDEST_GIT`, which would not take the settings."""
    if tuple(version[:2]) < OLDEST_GIT:
        found = ".".join(str(part) for part in version)
        raise HistoryError(
            f"memfs needs git {OLDEST_GIT[0]}.{OLDEST_GIT[1]} or newer (found {found}): an older git cannot be "
            f"told to ignore a repository's hooks, filters and other programs"
        )


def check_ownership(folder: Path) -> None:
    """Raise UnsafeRepositoryError if git refuses the repository at ``folder`` as another user's.

    git's own rule (``safe.directory``): a repository whose folders belong to another user is
    used only if the person's global (or system) config lists it; its config and hooks would
    otherwise be that user's to choose.
    """
    try:
        proc = gitrun.run(["rev-parse", "--git-dir"], cwd=folder, overrides=fixed_overrides(), timeout=30)
    except gitrun.NOT_RUN:
        return
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode and _DUBIOUS in err:
        where = re.search(r"dubious ownership in repository at '([^']*)'", err)
        place = where.group(1) if where else str(folder)
        raise UnsafeRepositoryError(
            f"{place} belongs to another user, and git refuses to work in a repository another user "
            f"owns (its config and hooks would be theirs to choose). If you trust it, add it to your "
            f"global git config: git config --global --add safe.directory {shlex.quote(place)}",
            place,
        )
