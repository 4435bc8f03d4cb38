"""One turn of a LangGraph graph whose node keeps memories in a MemfsStore, in a process of its own.

    python tests/langgraph_turn.py VAULT USER MESSAGE

The node stores what the user says under ("users", USER, "facts") and answers with what it
finds for the message. Prints the answer, as JSON.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

import memfs
from memfs.integrations.langgraph import MemfsStore


class State(TypedDict):
    user: str
    message: str
    answer: str


def respond(state: State, *, store: BaseStore) -> dict[str, str]:
    namespace = ("users", state["user"], "facts")
    found = store.search(namespace, query=state["message"], limit=3)
    if state["message"].startswith("remember "):
        store.put(namespace, uuid.uuid4().hex[:8], {"text": state["message"].removeprefix("remember ")})
    return {"answer": " | ".join(item.value["text"] for item in found) or "nothing yet"}


def main(vault_dir: str, user: str, message: str) -> None:
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        graph = StateGraph(State)
        graph.add_node("respond", respond)
        graph.add_edge(START, "respond")
        graph.add_edge("respond", END)
        app = graph.compile(store=MemfsStore(vault))
        result = app.invoke({"user": user, "message": message, "answer": ""})
        sys.stdout.write(json.dumps({"answer": result["answer"]}) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
