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
from .errors import (
    AlreadyExistsError,
    ConflictError,
    ConflictMarkersError,
    ContentError,
    ContextWindowOverflowError,
    DocumentError,
    DuplicateMemoryError,
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
    ProposalError,
    PurgeError,
    QueryTooLongError,
    ReadOnlyError,
    RepositoryStateError,
    RevisionNotFound,
    RevisionNotFoundError,
    ScriptExhaustedError,
    SearchIndexError,
    SecretError,
    SemanticSearchError,
    SessionError,
    SettingsError,
    ShallowHistoryError,
    SyncError,
    ToolCallError,
    UnsafeRepositoryError,
    ValidityError,
    VaultNotFoundError,
)
from .exchange import Imported, ImportReport
from .extract import ModelExtractor, Operation, RuleExtractor
from .history import Identity, Revision
from .lifecycle import Validity
from .links import Resolved
from .longterm import Injected, LongTermMemory
from .models import Model, Reply, ScriptedModel, ToolCall, run_agent
from .proposals import Proposal
from .purge import PurgeReport
from .results import Hit, MessageHit
from .scopes import Scope
from .semantic import E5Embedder, Embedder, FastEmbedEmbedder, SentenceTransformerEmbedder, VectorStore
from .sessions import MarkdownSession, SessionInfo
from .settings import ReviewPolicy, Settings
from .sources import Skipped
from .store import Memory, MemoryStore, Similar
from .sync import ConflictCopy, SyncResult
from .tools import MemoryTools, ToolResult
from .usage import UsageLog
from .vault import Pruned, Vault
from .watch import Watcher

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
    "DuplicateMemoryError",
    "E5Embedder",
    "Embedder",
    "FastEmbedEmbedder",
    "FileTooLargeError",
    "Finding",
    "GitLockError",
    "HistoryError",
    "Hit",
    "Identity",
    "ImportReport",
    "ImportSourceError",
    "Imported",
    "Injected",
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
    "Proposal",
    "ProposalError",
    "Pruned",
    "PurgeError",
    "PurgeReport",
    "QueryTooLongError",
    "ReadOnlyError",
    "Reply",
    "RepositoryStateError",
    "Resolved",
    "ReviewPolicy",
    "Revision",
    "RevisionNotFound",
    "RevisionNotFoundError",
    "RuleExtractor",
    "Scope",
    "ScriptExhaustedError",
    "ScriptedModel",
    "SearchIndexError",
    "SecretError",
    "SemanticSearchError",
    "SentenceTransformerEmbedder",
    "SessionError",
    "SessionInfo",
    "Settings",
    "SettingsError",
    "ShallowHistoryError",
    "Similar",
    "Skipped",
    "SlidingWindowConversationManager",
    "SummarizingConversationManager",
    "SyncError",
    "SyncResult",
    "TokenWindowConversationManager",
    "ToolCall",
    "ToolCallError",
    "ToolResult",
    "UnsafeRepositoryError",
    "UsageLog",
    "Validity",
    "ValidityError",
    "Vault",
    "VaultNotFoundError",
    "VectorStore",
    "View",
    "Watcher",
    "find_secrets",
    "redact",
    "run_agent",
]
