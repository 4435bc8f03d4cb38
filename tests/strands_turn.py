"""One turn of a Strands agent over a memfs transcript, in a process of its own (a restart).

    python tests/strands_turn.py VAULT MODE PROMPT [SESSIONS_DIR]

MODE: ``plain`` (memfs alone), ``seed`` (``Agent(messages=seed)`` on every start), ``file`` (beside
Strands' ``FileSessionManager`` in SESSIONS_DIR), ``repository`` (memfs as the session manager:
``RepositorySessionManager`` over ``MemfsSessionRepository``, no memfs conversation manager) or
``both`` (the repository and the memfs conversation manager). Prints what the model was sent, as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from sdk_strands import Scripted  # noqa: E402
from strands import Agent  # noqa: E402

import memfs  # noqa: E402
from memfs.integrations.strands import MemfsConversationManager  # noqa: E402

SEED = [{"role": "user", "content": [{"text": "I am Alice."}]},
        {"role": "assistant", "content": [{"text": "Hello Alice."}]}]  # fmt: skip


def main(vault_dir: str, mode: str, prompt: str, sessions_dir: str = "") -> None:
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        model = Scripted([f"Answer to {prompt}"])
        options: dict[str, object] = {}
        if mode in ("plain", "seed", "file", "both"):
            options["conversation_manager"] = MemfsConversationManager(vault.session("chat"))
        if mode == "seed":
            options["messages"] = [dict(m) for m in SEED]
        if mode == "file":
            from strands.session.file_session_manager import FileSessionManager

            options["session_manager"] = FileSessionManager(session_id="chat", storage_dir=sessions_dir)
        if mode in ("repository", "both"):
            from strands.session.repository_session_manager import RepositorySessionManager

            from memfs.integrations.strands import MemfsSessionRepository

            options["session_manager"] = RepositorySessionManager("chat", MemfsSessionRepository(vault))
        agent = Agent(model=model, callback_handler=None, **options)
        agent(prompt)
        sys.stdout.write(json.dumps({"seen": model.seen[0], "messages": len(agent.messages)}) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
