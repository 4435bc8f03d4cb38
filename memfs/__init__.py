"""memfs: memory for LLM agents, as Markdown files in a git-versioned folder.

>>> import memfs
>>> vault = memfs.Vault.open(path)                       # doctest: +SKIP
>>> alice = vault.memories("users/alice")               # doctest: +SKIP
>>> alice.add("Alice prefers window seats.", title="Window seats")  # doctest: +SKIP
"""

from __future__ import annotations

from .conversation import (
    ContextWindowOverflowError,
    MessageWindow,
    NullConversationManager,
    SlidingWindowConversationManager,
    SummarizingConversationManager,
    TokenWindowConversationManager,
)
from .documents import Document
from .errors import (
    AlreadyExistsError,
    ConflictError,
    ContentError,
    DocumentError,
    GitLockError,
    HistoryError,
    LockTimeout,
    MemfsError,
    MemoryNotFound,
    NotFoundError,
    PathError,
    RevisionNotFound,
    SearchIndexError,
    ToolCallError,
)
from .extract import ModelExtractor, Operation, RuleExtractor
from .history import Identity, Revision
from .index import Hit, MessageHit, Problem, SyncReport
from .manager import MemoryManager, Scope
from .models import Model, Reply, ScriptedModel, ToolCall, run_agent
from .sessions import MarkdownSession, SessionInfo
from .store import Memory, MemoryStore
from .tools import MemoryTools, ToolResult
from .vault import Finding, Vault

__version__ = "0.1.0"

__all__ = [
    "AlreadyExistsError",
    "ConflictError",
    "ContentError",
    "ContextWindowOverflowError",
    "Document",
    "DocumentError",
    "Finding",
    "GitLockError",
    "HistoryError",
    "Hit",
    "Identity",
    "LockTimeout",
    "MarkdownSession",
    "MemfsError",
    "Memory",
    "MemoryManager",
    "MemoryNotFound",
    "MemoryStore",
    "MemoryTools",
    "MessageHit",
    "MessageWindow",
    "Model",
    "ModelExtractor",
    "NotFoundError",
    "NullConversationManager",
    "Operation",
    "PathError",
    "Problem",
    "Reply",
    "Revision",
    "RevisionNotFound",
    "RuleExtractor",
    "Scope",
    "ScriptedModel",
    "SearchIndexError",
    "SessionInfo",
    "SlidingWindowConversationManager",
    "SummarizingConversationManager",
    "SyncReport",
    "TokenWindowConversationManager",
    "ToolCall",
    "ToolCallError",
    "ToolResult",
    "Vault",
    "run_agent",
]
