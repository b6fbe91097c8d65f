"""The trajectory graph: paths, what each path trains, and where paths fork.

Mirrors skycap's `graph.py` and the `all` path rule: one path per leaf in leaf-id order; a
model node is a training target in the first path that contains it and is context
(`sampled-elsewhere`) on every later one.
"""

from dataclasses import dataclass, field


@dataclass
class PathInfo:
    index: int
    nodes: list[int]
    targets: list[int]
    sampled_elsewhere: dict[int, int]  # model node -> index of the path that trains it
    shared_nodes: int  # leading nodes already on an earlier path
    diverges_at: int | None  # first node no earlier path has (None for path 0)
    fork_from: int | None  # the node before it (None for path 0 or a new root)

    @property
    def leaf(self) -> int:
        return self.nodes[-1]


@dataclass
class Graph:
    nodes: list[dict]
    children: list[list[int]] = field(init=False)
    roots: list[int] = field(init=False)
    leaves: list[int] = field(init=False)
    paths: list[PathInfo] = field(init=False)
    trained_in: dict[int, int] = field(init=False)

    def __post_init__(self):
        self.children = [[] for _ in self.nodes]
        self.roots = []
        for node in self.nodes:
            parent = node.get("parent")
            (self.roots if parent is None else self.children[parent]).append(node["id"])
        self.leaves = [n["id"] for n in self.nodes if not self.children[n["id"]]]
        self.trained_in = {}
        self.paths = []
        seen: set[int] = set()
        for leaf in self.leaves:
            self.paths.append(self._path(len(self.paths), self.path_to(leaf), seen))

    def path_to(self, leaf: int) -> list[int]:
        nodes = []
        current = leaf
        while current is not None:
            nodes.append(current)
            current = self.nodes[current].get("parent")
        return nodes[::-1]

    def _path(self, index: int, nodes: list[int], seen: set[int]) -> PathInfo:
        targets, elsewhere = [], {}
        for node_id in nodes:
            if self.nodes[node_id]["author"] != "model":
                continue
            if node_id in self.trained_in:
                elsewhere[node_id] = self.trained_in[node_id]
            else:
                self.trained_in[node_id] = index
                targets.append(node_id)
        shared = 0
        while shared < len(nodes) and nodes[shared] in seen:
            shared += 1
        seen.update(nodes)
        first = index > 0 and shared < len(nodes)
        return PathInfo(
            index=index,
            nodes=nodes,
            targets=targets,
            sampled_elsewhere=elsewhere,
            shared_nodes=shared,
            diverges_at=nodes[shared] if first else None,
            fork_from=nodes[shared - 1] if first and shared else None,
        )

    @property
    def branch_points(self) -> list[int]:
        """Parents with more than one child, by node id."""
        return [n["id"] for n in self.nodes if len(self.children[n["id"]]) > 1]

    def is_model(self, node_id: int) -> bool:
        return self.nodes[node_id]["author"] == "model"
