"""One rollout, and one of its paths, as the API answers about them.

Each method is one route of `server.api.Api` (named in its docstring), asked for the rollout's run; an
answer that comes in parts (`/paths`, `/graph`, `/exchanges`, `/chat`) is asked part by part and its
items put together, so a method gives the whole answer however big the record.
"""

from functools import cached_property

from skycap_viewer.errors import ApiError
from skycap_viewer.python_api.asking import ask
from skycap_viewer.python_api.notebook import framed, refused
from skycap_viewer.python_api.rows import Rows


def whole(route, *captured, items: tuple, params: dict, merged: tuple = ()) -> dict:
    """The first part of an answer in parts, with the lists `items` of every later part after its own
    (and the mappings `merged` joined)."""
    answer = ask(route, *captured, params=params)
    part = answer.get("part") or {}
    while part.get("next") is not None:
        later = ask(route, *captured, params={**params, "from": [str(part["next"])]})
        for name in items:
            answer[name] += later[name]
        for name in merged:
            answer[name].update(later[name])
        part = later["part"]
    answer.pop("part", None)
    return answer


class Rollout:
    """A rollout of a run: `header`, `paths()`, `path(n)`, `graph()`, `calls()`, `check()`, `snapshot()`."""

    def __init__(self, viewer, trajectory_id: str, run: str | None = None):
        self.viewer = viewer
        self.id = trajectory_id
        self.header = ask(viewer.api.trajectory, trajectory_id, params=viewer.scope(run))  # `/v1/trajectories/{id}`
        self.run = self.header["run_id"]

    @property
    def scope(self) -> dict:
        return {"run_id": [self.run]}

    def __repr__(self):
        return f"<Rollout {self.id} of run {self.run}>"

    def paths(self) -> Rows:
        """Every path's summary, no text (`/paths?text=false`): with its lists (node ids, targets, messages,
        blocks) as far as the first part holds them (`part` says; `path(n)` has them whole)."""
        return Rows(ask(self.viewer.api.paths, self.id, params={**self.scope, "text": ["false"]})["paths"])

    def path(self, number: int) -> "Path":
        return Path(self, number)

    def graph(self) -> dict:
        """The tree: every node, roots, leaves, branch points, forks, the train-once check (`/graph`)."""
        return whole(self.viewer.api.graph, self.id, items=("nodes",), params=self.scope)

    def calls(self) -> dict:
        """Every model call and failed call in time order (`/exchanges`)."""
        return whole(self.viewer.api.exchanges, self.id, items=("data",), params=self.scope)

    def check(self) -> dict:
        """`check`'s verdict on this record, its sidecars read: `problems`, `findings` and `forks` (the
        record's entry in `skycap-viewer check --json --forks`)."""
        return self.viewer.checked(self.id, self.scope)

    def snapshot(self, path: int = 0, tab: str = "path") -> bytes:
        """The rollout as one self-contained HTML file (`/snapshot`), opening on `path` and `tab`."""
        return ask(self.viewer.api.snapshot, self.id, params={**self.scope, "path": [str(path)], "tab": [tab]})

    def _repr_html_(self) -> str:
        """Jupyter's view: the snapshot, framed; a record that has none (unreadable) says why instead."""
        try:
            return framed(self.snapshot(), f"rollout {self.id}")
        except ApiError as error:
            return refused(self.id, error.detail)


class Path:
    """Path `number` of a rollout: its shown text, its trainer row, its chat and its messages."""

    def __init__(self, rollout: Rollout, number: int):
        self.rollout = rollout
        self.number = number

    def __repr__(self):
        return f"<Path {self.number} of rollout {self.rollout.id}>"

    @cached_property
    def answer(self) -> dict:
        """`/paths?path=n`, every part: the path's lists (`node_ids`, `targets`, `messages`, `blocks`) and
        its nodes' texts (`nodes`, by id)."""
        rollout = self.rollout
        params = {**rollout.scope, "path": [str(self.number)]}
        return whole(rollout.viewer.api.paths, rollout.id, items=("node_ids", "targets", "messages", "blocks"),
                     params=params, merged=("nodes",))

    def nodes(self) -> Rows:
        """The path's nodes in order, each as `/paths` has it (text, token ids, logprobs, offsets)."""
        nodes = self.answer["nodes"]
        return Rows(nodes[node_id] for node_id in self.answer["node_ids"])

    def text(self) -> str:
        """The path's text as the Path tab shows it: its nodes' texts in order."""
        return "".join(node["text"] or "" for node in self.nodes())

    def row(self) -> dict:
        """The trainer's row: `input_ids`, `loss_mask`, `logprobs` and the rest (`/paths/{n}/row`)."""
        rollout = self.rollout
        return ask(rollout.viewer.api.path_row, rollout.id, str(self.number), params=rollout.scope)

    def messages(self) -> dict:
        """The path's messages as the document holds them, in chat format (`/paths/{n}/messages`)."""
        rollout = self.rollout
        return ask(rollout.viewer.api.path_messages, rollout.id, str(self.number), params=rollout.scope)

    def chat(self) -> dict:
        """The path as the Chat tab's cards, one per node (`/paths/{n}/chat`)."""
        rollout = self.rollout
        return whole(rollout.viewer.api.path_chat, rollout.id, str(self.number), items=("cards",),
                     params=rollout.scope)
