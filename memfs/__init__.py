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
from .exchange import ImportReport
from .extract import ModelExtractor, Operation, RuleExtractor
from .history import Identity, Revision
from .longterm import LongTermMemory
from .models import Model, Reply, ScriptedModel, ToolCall, run_agent
from .proposals import Proposal
from .purge import PurgeReport
from .results import Hit, MessageHit, Problem, SyncReport
from .scopes import Scope
from .semantic import E5Embedder, Embedder, FastEmbedEmbedder, SentenceTransformerEmbedder, VectorStore
from .sessions import MarkdownSession, SessionInfo
from .settings import ReviewPolicy, Settings
from .store import Memory, MemoryStore, Similar
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
    "Proposal",
    "ProposalError",
    "PurgeError",
    "PurgeReport",
    "QueryTooLongError",
    "ReadOnlyError",
    "Reply",
    "RepositoryStateError",
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
    "ValidityError",
    "Vault",
    "VaultNotFoundError",
    "VectorStore",
    "View",
    "WriteEngine",
    "find_secrets",
    "redact",
    "run_agent",
]
