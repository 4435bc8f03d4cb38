"""The one registry of memory commands: each command's parameters, schema, description and handler, declared together.

A :class:`~memfs.tools.MemoryTools` method becomes a command with :func:`command`; the JSON
schemas every face offers (Anthropic, OpenAI, the Agents SDK, MCP) and the check of a call's
arguments come from the same definition. An answer quotes at most a short prefix of any argument
(:func:`echo`): a megabyte query never comes back into the model's context.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ToolCallError

ECHO_CHARS = 80  # an answer quotes at most this many characters of any argument

_STR = {"type": "string"}
_INT = {"type": "integer"}
_BOOL = {"type": "boolean"}


@dataclass(frozen=True)
class Parameter:
    """One parameter of a command: its JSON schema, whether it is required, and what the model reads."""

    schema: dict[str, Any]
    required: bool
    description: str


@dataclass(frozen=True)
class Command:
    """One memory command: what it takes, what the model reads about it, and what it does.

    Attributes:
        name: The command's name (the ``command`` field of a call).
        description: What the model reads about it.
        parameters: Its parameters, in order.
        writes: True when it changes memory (refused in read-only parts and modes).
        native: True for the six commands of Anthropic's built-in memory tool.
        handler: The :class:`~memfs.tools.MemoryTools` method that carries it out: the text for
            the model, or a :class:`ToolResult` when the command also answers as data.
    """

    name: str
    description: str
    parameters: dict[str, Parameter]
    writes: bool
    native: bool
    handler: Callable[..., str | ToolResult]


Handler = Callable[..., "str | ToolResult"]


def command(
    name: str, description: str, *, writes: bool, native: bool, **parameters: tuple[dict[str, Any], bool, str]
) -> Callable[[Handler], Handler]:
    """Register a :class:`~memfs.tools.MemoryTools` method as a command (one definition per command)."""

    def register(handler: Handler) -> Handler:
        params = {key: Parameter(*spec) for key, spec in parameters.items()}
        REGISTRY[name] = Command(name, description, params, writes, native, handler)
        return handler

    return register


REGISTRY: dict[str, Command] = {}


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returns to the model: the text, whether it is an error, and the answer as data.

    ``data`` is the structured content of a command that has one (search: the query and its hits,
    from the same search as the text), else None.
    """

    text: str
    is_error: bool = False
    data: dict[str, Any] | None = None


def schema(commands: Sequence[Command], *, with_command: bool = False) -> dict[str, Any]:
    """The JSON schema of ``commands``' parameters; ``with_command``: one tool, with a ``command`` field."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for command in commands:
        for name, param in command.parameters.items():
            properties.setdefault(name, {**param.schema, "description": param.description})
            if param.required and not with_command:
                required.append(name)
    if with_command:
        properties = {
            "command": {"type": "string", "enum": [c.name for c in commands], "description": "The command to run."},
            **properties,
        }
        required = ["command"]
    return {"type": "object", "properties": properties, "required": required}


def check_arguments(command: Command, args: dict[str, Any]) -> None:
    """Check a call's arguments against ``command``'s parameters (ToolCallError); drops the ones given as None."""
    spec = command.parameters
    unknown = sorted(set(args) - set(spec))
    if unknown:
        raise ToolCallError(
            f"Unknown parameter '{echo(unknown[0])}' for the {command.name} command; "
            f"its parameters are: {', '.join(spec)}."
        )
    for name, param in spec.items():
        if name not in args or args[name] is None:
            if param.required:
                raise ToolCallError(f"Missing required parameter `{name}` for the {command.name} command.")
            args.pop(name, None)
            continue
        value, kind = args[name], param.schema["type"]
        if kind == "string" and not isinstance(value, str):
            raise ToolCallError(f"Parameter `{name}` must be a string, got {type(value).__name__}.")
        if kind == "boolean" and not isinstance(value, bool):
            raise ToolCallError(f"Parameter `{name}` must be true or false, got {_SHORT_REPR.repr(value)}.")
        if kind == "integer" and (not isinstance(value, int) or isinstance(value, bool)):
            raise ToolCallError(f"Parameter `{name}` must be an integer, got {_SHORT_REPR.repr(value)}.")
        if kind == "array" and (
            not isinstance(value, (list, tuple))
            or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        ):
            raise ToolCallError(f"Parameter `{name}` must be a list of two integers, got {_SHORT_REPR.repr(value)}.")


def echo(value: Any, limit: int = ECHO_CHARS) -> str:
    """A short quote of an argument for an answer: at most ``limit`` characters of it, as given.

    An agent's query or ``old_str`` may be a megabyte; quoting it whole would put it into the
    model's context a second time. A string comes without quotes (the caller quotes it), other
    values as Python writes them, shortened (a huge integer by its size: Python refuses to write one).
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length():,} bits"
    text = value[: limit + 1] if isinstance(value, str) else _SHORT_REPR.repr(value)
    if len(text) > limit:
        size = f" ({len(value):,} characters)" if isinstance(value, str) else ""
        text = text[:limit] + "…" + size
    return text


class _ShortRepr(reprlib.Repr):
    """``reprlib`` with huge integers told by their size (``repr`` raises on those past 4,300 digits)."""

    def repr_int(self, x: int, level: int) -> str:
        return f"<an integer of {x.bit_length():,} bits>" if x.bit_length() > 64 else repr(x)


_SHORT_REPR = _ShortRepr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = ECHO_CHARS
_SHORT_REPR.maxlist = _SHORT_REPR.maxtuple = 4
