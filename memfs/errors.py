"""Every error memfs raises, under one root.

::

    MemfsError
    ├── DocumentError            a memory file that cannot be parsed (names the file)
    ├── PathError (ValueError)   a path or namespace from outside that is unsafe or malformed
    ├── NotFoundError (KeyError)
    │   ├── MemoryNotFound       no memory with that id or path
    │   └── RevisionNotFound     no such git revision, or the file did not exist there
    ├── AlreadyExistsError       a create or move would overwrite an existing file
    ├── ConflictError            the file changed since it was read
    ├── ContentError (ValueError)  content too large, binary, or not valid text
    ├── LockTimeout              the vault lock could not be taken in time
    ├── HistoryError             git failed
    │   └── GitLockError         a git lock file is in the way (stale or held)
    ├── SearchIndexError         the search index is unusable (it is rebuilt from the files)
    └── ToolCallError            a memory-tool call that cannot be carried out (text for the model)
"""

from __future__ import annotations


class MemfsError(Exception):
    """The root of every error memfs raises."""


class DocumentError(MemfsError):
    """A memory file is malformed: bad YAML, non-mapping front matter, invalid UTF-8, ..."""

    def __init__(self, path: str | None, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path else reason)


class PathError(MemfsError, ValueError):
    """A path or namespace given from outside is unsafe or malformed."""


class NotFoundError(MemfsError, KeyError):
    """Something looked up does not exist."""

    def __str__(self) -> str:
        # KeyError quotes its message; a lookup error should read as a sentence.
        return str(self.args[0]) if self.args else ""


class MemoryNotFound(NotFoundError):
    """No memory with that id or path."""


class RevisionNotFound(NotFoundError):
    """No such git revision, or the file did not exist at it."""


class AlreadyExistsError(MemfsError):
    """A create or move would overwrite an existing file."""


class ConflictError(MemfsError):
    """The file changed since it was read; read it again before writing."""


class ContentError(MemfsError, ValueError):
    """Content that memfs refuses to store: too large, binary, or not valid text."""


class LockTimeout(MemfsError):
    """The vault lock could not be taken within the timeout."""


class HistoryError(MemfsError):
    """A git operation failed."""


class GitLockError(HistoryError):
    """A git lock file (such as ``.git/index.lock``) is in the way."""


class SearchIndexError(MemfsError):
    """The search index is unusable; memfs rebuilds it from the files."""


class ToolCallError(MemfsError):
    """A memory-tool call that cannot be carried out; the message is written for the model."""
