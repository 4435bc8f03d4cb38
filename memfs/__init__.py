"""memfs: memory for LLM agents, as Markdown files in a git-versioned folder.

>>> import memfs
>>> vault = memfs.Vault.open(path, create=True)          # doctest: +SKIP
>>> alice = vault.memories("users/alice")               # doctest: +SKIP
>>> alice.add("Alice prefers window seats.", title="Window seats")  # doctest: +SKIP
"""

from __future__ import annotations

from .changes import Change, Changes
from .conversation import (
    ConversationManager,
    Decision,
    MessageWindow,
    NullConversationManager,
    SlidingWindowConversationManager,
    SummarizingConversationManager,
    TokenWindowConversationManager,
    View,
)
from .credentials import find_secrets, redact
from .doctor import Finding
from .documents import Document
from .engine import WriteEngine
from .errors import (
    AlreadyExistsError,
    ConflictError,
    ConflictMarkersError,
    ContentError,
    ContextWindowOverflowError,
    DocumentError,
    FileTooLargeError,
    GitLockError,
    HistoryError,
    ImportSourceError,
    InvalidArgumentError,
    InvalidExtractionError,
    LinkError,
    LockTimeout,
    LockTimeoutError,
    MemfsError,
    MemoryNotFound,
    MemoryNotFoundError,
    ModelError,
    NotFoundError,
    PathError,
    PurgeError,
    QueryTooLongError,
    ReadOnlyError,
    RepositoryStateError,
    RevisionNotFound,
    RevisionNotFoundError,
    ScriptExhaustedError,
    SearchIndexError,
    SecretError,
    SessionError,
    ShallowHistoryError,
    SyncError,
    ToolCallError,
    UnsafeRepositoryError,
    VaultNotFoundError,
)
from .exchange import ImportReport
from .extract import ModelExtractor, Operation, RuleExtractor
from .history import Identity, Revision
from .index import Hit, MessageHit, Problem, SyncReport
from .longterm import LongTermMemory
from .models import Model, Reply, ScriptedModel, ToolCall, run_agent
from .purge import PurgeReport
from .scopes import Scope
from .sessions import MarkdownSession, SessionInfo
from .store import Memory, MemoryStore
from .sync import ConflictCopy, SyncResult
from .tools import MemoryTools, ToolResult
from .vault import Vault

__version__ = "0.1.0"

__all__ = [
    "AlreadyExistsError",
    "Change",
    "Changes",
    "ConflictCopy",
    "ConflictError",
    "ConflictMarkersError",
    "ContentError",
    "ContextWindowOverflowError",
    "ConversationManager",
    "Decision",
    "Document",
    "DocumentError",
    "FileTooLargeError",
    "Finding",
    "GitLockError",
    "HistoryError",
    "Hit",
    "Identity",
    "ImportReport",
    "ImportSourceError",
    "InvalidArgumentError",
    "InvalidExtractionError",
    "LinkError",
    "LockTimeout",
    "LockTimeoutError",
    "LongTermMemory",
    "MarkdownSession",
    "MemfsError",
    "Memory",
    "MemoryNotFound",
    "MemoryNotFoundError",
    "MemoryStore",
    "MemoryTools",
    "MessageHit",
    "MessageWindow",
    "Model",
    "ModelError",
    "ModelExtractor",
    "NotFoundError",
    "NullConversationManager",
    "Operation",
    "PathError",
    "Problem",
    "PurgeError",
    "PurgeReport",
    "QueryTooLongError",
    "ReadOnlyError",
    "Reply",
    "RepositoryStateError",
    "Revision",
    "RevisionNotFound",
    "RevisionNotFoundError",
    "RuleExtractor",
    "Scope",
    "ScriptExhaustedError",
    "ScriptedModel",
    "SearchIndexError",
    "SecretError",
    "SessionError",
    "SessionInfo",
    "ShallowHistoryError",
    "SlidingWindowConversationManager",
    "SummarizingConversationManager",
    "SyncError",
    "SyncReport",
    "SyncResult",
    "TokenWindowConversationManager",
    "ToolCall",
    "ToolCallError",
    "ToolResult",
    "UnsafeRepositoryError",
    "Vault",
    "VaultNotFoundError",
    "View",
    "WriteEngine",
    "find_secrets",
    "redact",
    "run_agent",
]
