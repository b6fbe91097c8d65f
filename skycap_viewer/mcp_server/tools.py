"""The tools: each one read-only question to the Python API's `Viewer`, the answer the HTTP API's.

A tool is its name, what it answers (the description an agent reads), its input schema (the
listing's names, as `/v1/trajectories` takes them) and its answer. Arguments are checked against the
schema first: an unknown name or a wrong type is the agent's mistake, said in one line. Every answer
stays under `bounds.ANSWER_CHARS`; a cursor gives the rest. No argument is ever a path: runs and
rollouts are named by their ids, found in the directories the server was given.
"""

from dataclasses import dataclass, field

from skycap_viewer.catalog.rows import SORT_KEYS
from skycap_viewer.mcp_server.bounds import TooLong, fitted, offset, offset_page
from skycap_viewer.python_api.asking import ask
from skycap_viewer.views.record.trajectory import PartLimit

LISTED = 20  # rollouts, groups, hits or runs an answer holds unless the agent asks for another number
NODES = 40  # nodes or chat cards of a path
PARTS = PartLimit(items=200, bytes=48 * 2**10, item_bytes=48 * 2**10)  # an answer in parts, a part an answer
PATH_LISTS = ("node_ids", "targets", "messages", "blocks")  # a path's lists: `read_path` has them, not its summary


def prop(kind: str, why: str, **more) -> dict:
    return {"type": kind, "description": why, **more}


def strings(why: str) -> dict:
    return prop("array", why, items={"type": "string"})


RUN = {"run": prop("string", "a run id, as list_runs gives it (may be left out when only one run is served)")}
ROLLOUT = {"id": prop("string", "a rollout's trajectory id, as list_rollouts gives it"), **RUN}
FILTERS = {
    "step": prop("number", "only this training step"),
    "task_id": prop("string", "only this task"),
    "status": prop("string", "only this status (finished, failed, ...)"),
    "flag": strings("only rollouts carrying every one of these flags (truncated, failed-calls, forked, ...)"),
    "exclude_flag": strings("only rollouts carrying none of these flags"),
    "annotation": strings("only rollouts with these annotations: key=value, or key (present)"),
    "q": prop("string", "text in the id, meta or annotations"),
    "reward_min": prop("number", "reward at least this (inclusive)"),
    "reward_max": prop("number", "reward at most this (inclusive)"),
    "trained": prop("string", "what the trainer's run index says", enum=["true", "false", "null"]),
    "sort": prop("string", "the order", enum=list(SORT_KEYS)),
    "order": prop("string", "ascending or descending", enum=["asc", "desc"]),
}


def paging(items: str, default: int, most: int) -> dict:
    return {"limit": prop("integer", f"{items} per answer (default {default}, at most {most}; fewer when "
                                     "they would not fit)", minimum=1, maximum=most),
            "cursor": prop("string", "the next_cursor of the previous answer, for the next page")}


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    answer: object  # answer(viewer, arguments) -> dict
    properties: dict = field(default_factory=dict)
    required: tuple = ()

    def listed(self) -> dict:
        """The tool as `tools/list` describes it."""
        return {"name": self.name, "description": self.description,
                "inputSchema": {"type": "object", "properties": self.properties, "required": list(self.required),
                                "additionalProperties": False},
                "annotations": {"readOnlyHint": True, "openWorldHint": False}}

    def checked(self, arguments: dict) -> dict:
        """`arguments` as the schema takes them; `ValueError` saying the first thing wrong."""
        if not isinstance(arguments, dict):
            raise ValueError("arguments must be an object")
        unknown = sorted(set(arguments) - set(self.properties))
        if unknown:
            raise ValueError(f"{self.name} takes no argument {', '.join(unknown)} "
                             f"(it takes {', '.join(self.properties) or 'none'})")
        missing = [name for name in self.required if arguments.get(name) is None]
        if missing:
            raise ValueError(f"{self.name} needs {', '.join(missing)}")
        for name, value in arguments.items():
            if value is not None:
                check_value(name, value, self.properties[name])
        return {name: value for name, value in arguments.items() if value is not None}


KINDS = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "array": (list,)}


def check_value(name: str, value, schema: dict):
    kind = schema["type"]
    if isinstance(value, bool) != (kind == "boolean") or not isinstance(value, KINDS[kind]):
        raise ValueError(f"{name} must be {'an' if kind[0] in 'aei' else 'a'} {kind}, not {value!r}")
    if kind == "array" and not all(isinstance(item, str) for item in value):
        raise ValueError(f"{name} must be a list of strings")
    if "enum" in schema and value not in schema["enum"]:
        raise ValueError(f"{name} must be one of {', '.join(schema['enum'])}, not {value!r}")
    if kind == "integer" and not schema.get("minimum", value) <= value <= schema.get("maximum", value):
        raise ValueError(f"{name} must be in {schema['minimum']}..{schema['maximum']}, not {value}")


def filters_of(arguments: dict) -> dict:
    return {name: arguments[name] for name in FILTERS if name in arguments}


# -- the answers ------------------------------------------------------------------------------


def list_runs(viewer, arguments: dict) -> dict:
    return offset_page(viewer.runs(), "runs", offset(arguments.get("cursor")), arguments.get("limit", LISTED),
                       "one run's entry")


def list_rollouts(viewer, arguments: dict) -> dict:
    return fitted(lambda n: viewer.listing(arguments.get("run"), arguments.get("cursor"), limit=n,
                                           **filters_of(arguments)),
                  arguments.get("limit", LISTED), "one rollout's listing row")


def list_groups(viewer, arguments: dict) -> dict:
    return fitted(lambda n: viewer.groups_listing(arguments.get("run"), arguments.get("cursor"), limit=n,
                                                  **filters_of(arguments)),
                  arguments.get("limit", LISTED), "one group's row")


def get_rollout(viewer, arguments: dict) -> dict:
    rollout = viewer.rollout(arguments["id"], arguments.get("run"))
    summaries = [{key: value for key, value in path.items() if key not in PATH_LISTS + ("part",)}
                 for path in rollout.paths()]
    page = offset_page(summaries, "paths", offset(arguments.get("cursor")), arguments.get("limit", LISTED),
                       "one path's summary")
    return {"header": rollout.header, **page}


def read_path(viewer, arguments: dict) -> dict:
    """A path's nodes from `cursor` (a node position): their shown text, or the Chat tab's cards."""
    rollout = viewer.rollout(arguments["id"], arguments.get("run"))
    number, start = arguments.get("path", 0), offset(arguments.get("cursor"))
    if arguments.get("as", "text") == "chat":
        def cards(n):
            part = ask(viewer.api.path_chat, rollout.id, str(number), params={**rollout.scope, "from": [str(start)]})
            return with_next({**part, "cards": part["cards"][:n]}, start, n, part["part"])
        return fitted(cards, arguments.get("limit", NODES), "one chat card")

    def texts(n):
        params = {**rollout.scope, "path": [str(number)], "from": [str(start)]}
        part = ask(viewer.api.paths, rollout.id, params=params)
        trained = {block["node_id"] for block in part["blocks"] if block["trainable"]}
        nodes = [{"position": start + i, "node_id": node_id, "role": part["nodes"][node_id]["role"],
                  "author": part["nodes"][node_id]["author"], "trained": node_id in trained,
                  "text": part["nodes"][node_id]["text"]} for i, node_id in enumerate(part["node_ids"][:n])]
        return with_next({"trajectory_id": rollout.id, "path": number, "nodes": nodes}, start, n, part["part"])
    return fitted(texts, arguments.get("limit", NODES), "one node's text")


def with_next(answer: dict, start: int, taken: int, part: dict) -> dict:
    """`answer` (items from `start`, at most `taken` of its part's) with the cursor where the rest starts."""
    answer.pop("part", None)
    end = min(start + taken, part["to"])
    answer["node_count"] = part["total"]
    answer["next_cursor"] = str(end) if end < part["total"] else None
    return answer


def search(viewer, arguments: dict) -> dict:
    options = {name: arguments[name] for name in ("case", "kind", "role", "in", *FILTERS) if name in arguments}
    options.pop("sort", None)
    options.pop("order", None)
    return fitted(lambda n: viewer.search_page(arguments["text"], arguments.get("run"), arguments.get("regex", False),
                                               arguments.get("cursor"), limit=n, **options),
                  arguments.get("limit", LISTED), "one search hit")


def check(viewer, arguments: dict) -> dict:
    return viewer.rollout(arguments["id"], arguments.get("run")).check()


def diff(viewer, arguments: dict) -> dict:
    answer = viewer.compare(arguments["a"], arguments["b"], arguments.get("run_a"), arguments.get("run_b"),
                            arguments.get("path_a", 0), arguments.get("path_b", 0), offset(arguments.get("cursor")))
    part = answer.pop("part", {})
    answer["next_cursor"] = str(part["next"]) if part.get("next") is not None else None
    return fitted(lambda n: answer, 1, "this part of the comparison")


def export_rows(viewer, arguments: dict) -> dict:
    def rows(n):
        page = viewer.listing(viewer.only_run(arguments.get("run")), arguments.get("cursor"), limit=n,
                              **filters_of(arguments))
        return {"rollouts": list(viewer.trainer_rows(page["data"])), "total": page["total"],
                "next_cursor": page["next_cursor"]}
    return fitted(rows, arguments.get("limit", 5), "one rollout's trainer rows")


PATH_ARGUMENTS = {
    "path": prop("integer", "the path's number (0 first; get_rollout lists them)", minimum=0, maximum=2**31),
    "as": prop("string", "text: each node's text as the Path tab shows it (chat template and special tokens "
                         "included), and whether it trains; chat: the Chat tab's cards (messages, calls, what "
                         "trained)", enum=["text", "chat"]),
}
SEARCH_ARGUMENTS = {
    "text": prop("string", "what to find"),
    "regex": prop("boolean", "text is a regular expression (Python's syntax)"),
    "case": prop("boolean", "match case (default: case-insensitive)"),
    "kind": prop("string", "sampled: what the model wrote; given: the rest; replayed: replayed assistant turns",
                 enum=["all", "sampled", "given", "replayed"]),
    "role": prop("string", "only nodes of this role (system, user, assistant, tool, ...)"),
    "in": prop("string", "shown: the text as the Path tab shows it (default); message: the message text only",
               enum=["shown", "message"]),
}
SIDES = {
    "a": prop("string", "the first rollout's trajectory id"),
    "b": prop("string", "the second rollout's trajectory id"),
    "run_a": prop("string", "the first rollout's run (when its id is in several)"),
    "run_b": prop("string", "the second rollout's run"),
    "path_a": prop("integer", "the first rollout's path (default 0)", minimum=0, maximum=2**31),
    "path_b": prop("integer", "the second rollout's path (default 0)", minimum=0, maximum=2**31),
    "cursor": prop("string", "the next_cursor of the previous answer: the comparison's next turns"),
}

TOOLS = (
    Tool("list_runs", "The runs served (record directories): each run's id, rollout count, steps, statuses, "
         "tasks, annotation values with counts, and how it groups (GRPO groups).", list_runs,
         paging("runs", LISTED, 100)),
    Tool("list_rollouts", "The rollouts a run's filters keep, as the viewer's listing gives them: each row's id, "
         "task, step, status, reward annotations, flags (truncated, failed-calls, forked, ...), sizes and "
         "record problems; with the total, the flag counts of the filtered set (health) and the reward range.",
         list_rollouts, {**RUN, **FILTERS, **paging("rollouts", LISTED, 100)}),
    Tool("list_groups", "The GRPO groups (one prompt at one step) the filters keep: each group's key, its "
         "members' rewards and flags, and their counts.", list_groups,
         {**RUN, **FILTERS, **paging("groups", LISTED, 100)}),
    Tool("get_rollout", "One rollout: its header (meta, annotations, capture, flags with record problems, sizes) "
         "and its paths' summaries (where each forks, its stop reason, whether it trains, token and trainable "
         "counts).", get_rollout, {**ROLLOUT, **paging("paths", LISTED, 100)}, ("id",)),
    Tool("read_path", "One path of a rollout, node by node from a position: each node's text as the trainer "
         "saw it and whether it trains (as=text), or the conversation's cards (as=chat).", read_path,
         {**ROLLOUT, **PATH_ARGUMENTS, **paging("nodes", NODES, 200)}, ("id",)),
    Tool("search", "Find text in one run's records (inside the listing's filters): each hit's rollout, node, "
         "role, kind and a snippet. A search runs on while it is read: pass next_cursor for more hits; done says "
         "it has read every record.", search, {**RUN, **SEARCH_ARGUMENTS, **FILTERS, **paging("hits", LISTED, 100)},
         ("text",)),
    Tool("check", "Validate one record against skycap format v1, its sidecars read: its problems, what the "
         "sampling masks found (findings), and its forks named as skycap's check names them.", check, ROLLOUT,
         ("id",)),
    Tool("diff", "Two rollouts' paths compared: what they share, where they part, then both sides turn by turn "
         "with the units that differ.", diff, SIDES, ("a", "b")),
    Tool("export_rows", "The trainer's rows of the rollouts the filters keep (input_ids, loss_mask, logprobs per "
         "path: what trained), a few rollouts per answer, each with its listing row.", export_rows,
         {**RUN, **FILTERS, **paging("rollouts", 5, 20)}),
)
TOOL_BY_NAME = {tool.name: tool for tool in TOOLS}


def answer(viewer, name: str, arguments: dict) -> dict:
    """The answer of tool `name`; `ValueError`, `ApiError`, `RecordError` or `TooLong` when it has none."""
    tool = TOOL_BY_NAME[name]
    try:
        return tool.answer(viewer, tool.checked(arguments or {}))
    except TooLong as error:
        raise TooLong(f"{error}: ask for a narrower answer, or read it with the Python API "
                      "(skycap_viewer.open) or the page") from None
