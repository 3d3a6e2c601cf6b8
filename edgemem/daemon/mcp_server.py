"""``edgemem mcp``: the memory as a Model Context Protocol server over stdio (issue 14).

An assistant that speaks MCP starts ``edgemem mcp`` and sends JSON-RPC on its stdin. Every tool is one
daemon method sent over the Unix socket (:mod:`edgemem.daemon.client`), so the model and the store stay
in the daemon's one process; ``--local`` serves an :class:`~edgemem.engine.Engine` in this process
instead, for a machine without a daemon. Built on the official SDK's low-level ``Server`` (``mcp`` 2.x)
rather than its decorator layer, so each tool's JSON schema is written out below and its arguments
are checked here, in edgemem's one-line wording, the same way in both modes.

Errors: an :class:`EdgememError` (a bad argument, a missing note, no daemon) comes back as a tool
result with ``isError`` and that one line; an unknown tool or resource is a JSON-RPC error. Neither
ends the server. Only protocol frames reach stdout: the SDK's stdio transport points fd 1 at stderr
while it serves, and edgemem logs to stderr, never memory content above DEBUG. The only sockets
opened are Unix sockets to the daemon.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from edgemem import __version__
from edgemem.config import Settings
from edgemem.daemon import protocol
from edgemem.daemon.client import call
from edgemem.engine import MAX_K, SEARCH_K
from edgemem.errors import BadInput, EdgememError, StoreError

log = logging.getLogger(__name__)

RECENT = 20  # notes in the recent-notes resource
PROBE_TIMEOUT = 10.0

INSTRUCTIONS = (
    "edgemem is the user's private long-term memory, kept on this machine. Use `search` to look things up "
    "(fast, no generation), `ask` for an answer written from the notes with citations, `remember` to keep "
    "something the user wants remembered, `profile` for their stable preferences, facts and rules. `forget` "
    "only previews unless called with confirm: true; confirm only when the user asked for the deletion."
)


# -- tools ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tool:
    """One MCP tool: its schema (checked by :func:`check_arguments`) and the daemon method it calls."""

    name: str
    method: str
    description: str
    properties: dict[str, dict] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    one_of: tuple[str, ...] = ()  # exactly one of these arguments
    times: tuple[str, ...] = ()  # string arguments that must be ISO 8601 times
    fixed: dict[str, Any] = field(default_factory=dict)  # params always sent to the method
    read_only: bool = True
    destructive: bool = False

    def schema(self) -> dict:
        return {"type": "object", "properties": self.properties, "required": list(self.required),
                "additionalProperties": False}

    def describe(self) -> types.Tool:
        hints = types.ToolAnnotations(read_only_hint=self.read_only, destructive_hint=self.destructive,
                                      open_world_hint=False)
        return types.Tool(name=self.name, description=self.description, input_schema=self.schema(), annotations=hints)


TOOLS = [
    Tool("remember", "remember",
         "Keep a piece of text in the user's memory, verbatim, with the time it was said. It is organised into "
         "notes in the background (usually within seconds); `search` finds it after that. Returns the raw turn ids.",
         {"text": {"type": "string", "description": "What to remember, in the user's words."},
          "when": {"type": "string", "description": "When it was said or happened, ISO 8601 (2024-05-08 or "
                                                    "2024-05-08T14:30:00); default now. Relative dates in the text "
                                                    "('yesterday') are resolved against it."},
          "speaker": {"type": "string", "description": "Who said it (a name); default the user."}},
         ("text",), times=("when",), read_only=False),
    Tool("search", "search",
         "Find the notes most relevant to a question or keywords, best first, without generating an answer "
         "(retrieval only: fast, no model call). Returns notes with id, date, speaker and content.",
         {"query": {"type": "string", "description": "A question or keywords."},
          "k": {"type": "integer", "minimum": 1, "maximum": MAX_K, "default": SEARCH_K,
                "description": f"How many notes at most (default {SEARCH_K})."}},
         ("query",)),
    Tool("ask", "ask",
         "Answer a question from the user's memory with the local model: routes the question, retrieves and "
         "checks the evidence, and abstains ('I could not find reliable information.') rather than guess. "
         "Returns the answer, the notes it cites (id, date, speaker, content) and a query_id for `why`.",
         {"question": {"type": "string", "description": "The question, in plain language."}},
         ("question",), fixed={"stream": False}),
    Tool("why", "trace",
         "Show how an answer was produced: route and deciding layer, tier, retrieved and packed notes, tokens "
         "and milliseconds per stage, the validator's verdict and any escalation.",
         {"query_id": {"type": "string", "description": "The query_id an `ask` returned."}},
         ("query_id",)),
    Tool("profile", "profile",
         "The compiled profile: preferences, identity facts and rules stated in the notes, keyed "
         "subject/kind/attribute (subject 'user' is the owner of the memory), each with the dates it held "
         "(valid_from, valid_to; current facts have no valid_to) and the notes that stated it.",
         {}),
    Tool("forget", "forget",
         "Delete notes for good: one note by id, or every note matching some words (with the raw text they "
         "came from and the profile facts they stated). Without confirm it deletes nothing and returns a "
         "preview of what would go; call again with confirm: true only when the user asked for the deletion.",
         {"note_id": {"type": "integer", "description": "The id of one note (as search and ask return it)."},
          "query": {"type": "string", "description": "Words: every note matching all of them."},
          "confirm": {"type": "boolean", "default": False,
                      "description": "true deletes; false (the default) only previews."}},
         one_of=("note_id", "query"), read_only=False, destructive=True),
]
TOOLS_BY_NAME = {t.name: t for t in TOOLS}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    for name, kinds in (("boolean", (bool,)), ("integer", (int,)), ("number", (float,)), ("string", (str,)),
                        ("array", (list,)), ("object", (dict,))):
        if isinstance(value, kinds):
            return name
    return type(value).__name__


def check_arguments(tool: Tool, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """The arguments, checked against the tool's schema; a null optional argument counts as absent."""
    args = {k: v for k, v in (arguments or {}).items() if v is not None}
    unknown = sorted(set(args) - set(tool.properties))
    if unknown:
        takes = ", ".join(tool.properties) or "none"
        raise BadInput(f"{tool.name}: unknown argument(s) {', '.join(unknown)}; it takes {takes}")
    for name in tool.required:
        if name not in args:
            raise BadInput(f"{tool.name}: argument {name!r} is required")
    for name, value in args.items():
        spec = tool.properties[name]
        # bool is an int in Python; a note id of `true` is a caller's mistake, not note 1
        if _json_type(value) != spec["type"]:
            raise BadInput(f"{tool.name}: argument {name!r} must be {spec['type']}, got {_json_type(value)}")
        if spec["type"] == "integer" and not spec.get("minimum", value) <= value <= spec.get("maximum", value):
            raise BadInput(f"{tool.name}: argument {name!r} must be from {spec['minimum']} to {spec['maximum']}, got {value}")
    for name in tool.times:
        if name in args:
            try:
                protocol.parse_time(args[name])
            except ValueError:
                raise BadInput(f"{tool.name}: {name!r} must be an ISO 8601 date or time, got {args[name]!r:.60}") from None
    if tool.one_of and sum(name in args for name in tool.one_of) != 1:
        raise BadInput(f"{tool.name}: give exactly one of {' or '.join(tool.one_of)}")
    return args


# -- resources ------------------------------------------------------------------------------------
RESOURCES = {
    "edgemem://profile": ("profile", {}, "profile",
                          "The user's compiled profile: preferences, identity facts and rules with validity dates."),
    "edgemem://notes/recent": ("recent", {"limit": RECENT}, "recent notes",
                               f"The {RECENT} newest notes by event time, newest first."),
}


# -- where the calls go ---------------------------------------------------------------------------------
class DaemonBackend:
    """The running daemon, one connection per call (a restarted daemon is picked up at the next call)."""

    def __init__(self, socket_path: Any) -> None:
        self.socket_path = socket_path

    def check(self) -> None:
        """Raise :class:`DaemonUnavailable` (naming `edgemem serve` and --local) if no daemon answers."""
        call(self.socket_path, "status", timeout=PROBE_TIMEOUT)

    def call(self, method: str, params: dict[str, Any]) -> Any:
        return call(self.socket_path, method, params)

    def close(self) -> None:
        return None


class LocalBackend:
    """An engine in this process (``--local``), answering the daemon's methods with the daemon's results.

    There is no write-path worker here: ``remember`` organises its note before it returns, and calls run
    one at a time.
    """

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        e = engine
        self._methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            "remember": lambda p: e.remember(p["text"], speaker=p.get("speaker"), when=p.get("when"), process=True),
            "search": lambda p: protocol.notes_result(e.search(p["query"], k=p.get("k")), query=p["query"]),
            "ask": lambda p: protocol.answer_result(e.ask(p["question"])),
            "trace": lambda p: e.why(p["query_id"]),
            "profile": lambda p: e.profile(),
            "forget": lambda p: e.forget(note_id=p.get("note_id"), query=p.get("query"), confirm=p.get("confirm", False)),
            "recent": lambda p: protocol.notes_result(e.recent(p["limit"])),
        }

    def call(self, method: str, params: dict[str, Any]) -> Any:
        with self._lock:
            return self._methods[method](params)

    def close(self) -> None:
        self.engine.close()


# -- the server ----------------------------------------------------------------------------------------
def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def build_server(backend: Any) -> Server:
    """The MCP server for ``backend`` (a :class:`DaemonBackend` or :class:`LocalBackend`)."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[t.describe() for t in TOOLS])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = TOOLS_BY_NAME.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r:.60}; the tools are {', '.join(TOOLS_BY_NAME)}")
        try:
            args = check_arguments(tool, params.arguments)
            result = await anyio.to_thread.run_sync(backend.call, tool.method, {**args, **tool.fixed})
        except EdgememError as exc:
            log.info("tool %s failed: %s", tool.name, exc.code)
            return types.CallToolResult(content=[types.TextContent(text=exc.message)], is_error=True)
        except Exception as exc:  # a bug: this call fails, the server keeps serving
            log.error("tool %s failed: %s", tool.name, type(exc).__name__)
            log.debug("tool failure detail", exc_info=True)
            message = f"internal error ({type(exc).__name__}); see the edgemem mcp log"
            return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=_text(result))], structured_content=result)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=uri, name=name, description=description, mime_type="application/json")
            for uri, (_method, _params, name, description) in RESOURCES.items()
        ])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri not in RESOURCES:
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri!r:.80}; the resources are {', '.join(RESOURCES)}")
        method, method_params = RESOURCES[uri][:2]
        try:
            result = await anyio.to_thread.run_sync(backend.call, method, dict(method_params))
        except EdgememError as exc:
            raise MCPError(types.INTERNAL_ERROR, exc.message) from None
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, text=_text(result), mime_type="application/json")
        ])

    return Server("edgemem", version=__version__, title="edgemem memory", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource)


async def serve(backend: Any) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes stdin."""
    server = build_server(backend)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def run(settings: Settings, *, local: bool = False) -> int:
    """``edgemem mcp``: check the daemon is there (or open the store with ``local``), then serve."""
    if local:
        from edgemem.engine import Engine
        from edgemem.store import lock

        if lock.held(settings.database):
            raise StoreError(f"a daemon is serving {settings.database}; run `edgemem mcp` without --local to use it")
        backend: Any = LocalBackend(Engine.open(settings))
    else:
        backend = DaemonBackend(settings.socket)
        backend.check()
    log.info("edgemem mcp serving %s over stdio", "this process's store" if local else settings.socket)
    try:
        anyio.run(serve, backend)
    finally:
        backend.close()
    return 0
