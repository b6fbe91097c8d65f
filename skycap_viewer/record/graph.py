"""The trajectory graph: paths, what each path trains, and where paths fork.

Mirrors skycap's `graph.py`: one path per leaf in leaf-id order. What trains is what the record
says (format §7): when the document has `samples`, its rows name each sample's leaf and targets,
whatever rule `finish` ran (`all`, `final`, a custom one); a path that is no row trains nothing.
Without `samples` (an open, abandoned or graph-API record) the viewer applies the `all` rule: a model
node is a target in the first path that contains it and context (`sampled-elsewhere`) on later ones.
"""

from array import array
from dataclasses import dataclass, field
from itertools import accumulate

from skycap_viewer.record.lazy import lazy


@dataclass
class PathInfo:
    index: int
    nodes: list[int]
    targets: list[int]
    sampled_elsewhere: dict[int, int]  # model node -> index of the path that trains it
    shared_nodes: int  # leading nodes already on an earlier path
    diverges_at: int | None  # first node no earlier path has (None for path 0)
    fork_from: int | None  # the node before it (None for path 0 or a new root)
    trains: bool = True  # the trainer gets this path as a sample (a row of the rule)

    @property
    def leaf(self) -> int:
        return self.nodes[-1]

    @lazy
    def target_set(self) -> frozenset[int]:
        """`targets` to look a node up in: a long path's list holds half its nodes, walked per node it was quadratic."""
        return frozenset(self.targets)


@dataclass(frozen=True)
class SampleRow:
    """One row of the document's `samples` as it lands on the graph: the path that carries it (the
    first holding its leaf), its leaf and the targets kept. A path can carry several rows, and a row
    can end before the path's leaf (a custom rule's); the trainer got one sample per row."""

    number: int  # its index in `samples.rows`
    path: int
    leaf: int
    targets: list[int]


class Children:
    """Each node's children by node id, in creation order, from two flat arrays: a list a node took ~96
    bytes a node (a million-node chain's ~96 MB), these take 16."""

    def __init__(self, parents: list):
        """`parents`: each node's parent id by node id (None for a root); a child's id is its position."""
        counts = [0] * (len(parents) + 1)
        for parent in parents:
            if parent is not None:
                counts[parent + 1] += 1
        self.starts = array("q", accumulate(counts))  # node n's children are ids[starts[n] : starts[n + 1]]
        del counts
        self.ids = array("q", bytes(8 * self.starts[-1]))
        placed = array("q", self.starts)
        for child, parent in enumerate(parents):
            if parent is not None:
                self.ids[placed[parent]] = child
                placed[parent] += 1

    def __getitem__(self, node_id: int) -> list[int]:
        return self.ids[self.starts[node_id] : self.starts[node_id + 1]].tolist()

    def count(self, node_id: int) -> int:
        return self.starts[node_id + 1] - self.starts[node_id]


@dataclass
class Graph:
    nodes: list[dict]
    samples: object = None  # the document's `samples` field, as written
    children: Children = field(init=False)
    roots: list[int] = field(init=False)
    leaves: list[int] = field(init=False)
    paths: list[PathInfo] = field(init=False)
    trained_in: dict[int, int] = field(init=False)  # model node -> index of the path that trains it
    rule: str | None = field(init=False)  # the rule the record's samples name; None: no samples, `all` applied
    sample_rows: list[SampleRow] = field(init=False)  # the record's samples rows placed ([] without samples)
    problems: list[str] = field(init=False)  # samples rows that do not fit the graph

    def __post_init__(self):
        parents = [node.get("parent") for node in self.nodes]
        self.children = Children(parents)
        self.roots = [node_id for node_id, parent in enumerate(parents) if parent is None]
        del parents
        self.leaves = [node_id for node_id in range(len(self.nodes)) if not self.children.count(node_id)]
        leaf_paths = [self.path_to(leaf) for leaf in self.leaves]
        recorded, self.rule, self.problems = recorded_rows(self, leaf_paths)
        self.sample_rows = recorded or []
        if recorded is None:
            rows = all_rule_rows(self, leaf_paths)
        else:
            rows = [(row.path, row.targets) for row in recorded]
        self.trained_in = {}
        targets_of: dict[int, set[int]] = {}
        for path_index, targets in rows:
            targets_of.setdefault(path_index, set()).update(targets)
            for target in targets:
                self.trained_in[target] = path_index
        self.paths = []
        seen = bytearray(len(self.nodes))  # node id -> on an earlier path: 1 MB a million nodes, a set took 32
        for index, nodes in enumerate(leaf_paths):
            self.paths.append(self._path(index, nodes, seen, targets_of))

    @property
    def samples_recorded(self) -> bool:
        """Whether the record's own `samples` rows say what trained (else the viewer applied `all`)."""
        return self.rule is not None

    def path_to(self, leaf: int) -> list[int]:
        nodes = []
        current = leaf
        while current is not None:
            nodes.append(current)
            current = self.nodes[current].get("parent")
        return nodes[::-1]

    def _path(self, index: int, nodes: list[int], seen: bytearray, targets_of: dict) -> PathInfo:
        own = targets_of.get(index, set())
        elsewhere = {n: self.trained_in[n] for n in nodes if n not in own and n in self.trained_in}
        shared = 0
        while shared < len(nodes) and seen[nodes[shared]]:
            shared += 1
        for node_id in nodes[shared:]:
            seen[node_id] = 1
        first = index > 0 and shared < len(nodes)
        return PathInfo(
            index=index,
            nodes=nodes,
            targets=[n for n in nodes if n in own],
            sampled_elsewhere=elsewhere,
            shared_nodes=shared,
            diverges_at=nodes[shared] if first else None,
            fork_from=nodes[shared - 1] if first and shared else None,
            trains=index in targets_of,
        )

    @property
    def branch_points(self) -> list[int]:
        """Parents with more than one child, by node id."""
        return [node_id for node_id in range(len(self.nodes)) if self.children.count(node_id) > 1]

    def is_model(self, node_id: int) -> bool:
        return self.nodes[node_id]["author"] == "model"


def all_rule_rows(graph: Graph, leaf_paths: list[list[int]]) -> list[tuple[int, list[int]]]:
    """skycap's `all` rule: every path is a row; a model node trains in the first path holding it."""
    trained: set[int] = set()
    rows = []
    for index, nodes in enumerate(leaf_paths):
        targets = [n for n in nodes if graph.is_model(n) and n not in trained]
        trained.update(targets)
        rows.append((index, targets))
    return rows


def recorded_rows(graph: Graph, leaf_paths: list[list[int]]):
    """(rows as `SampleRow`s, rule name, problems) from the document's `samples`.

    Rows are None when there is no `samples` to follow (the `all` rule applies). A row whose leaf
    is inside the graph (a custom rule may end a sample before a leaf) trains on the first path
    that holds it. Targets that skycap's own row validation would refuse are left out and named."""
    samples = graph.samples
    if samples is None:
        return None, None, []
    if not isinstance(samples, dict) or not isinstance(samples.get("rows"), list):
        return None, None, ["`samples` is not an object with a list of `rows`: the all rule is shown instead"]
    rule = samples["paths"] if isinstance(samples.get("paths"), str) else "(unnamed)"
    first_path = {}
    for index, nodes in enumerate(leaf_paths):
        for node_id in nodes:
            first_path.setdefault(node_id, index)
    rows, trained, problems = [], set(), []
    for number, row in enumerate(samples["rows"]):
        where = f"samples row {number}"
        leaf = row.get("leaf") if isinstance(row, dict) else None
        targets = row.get("targets") if isinstance(row, dict) else None
        if type(leaf) is not int or not 0 <= leaf < len(graph.nodes):
            problems.append(f"{where}: leaf {leaf!r} names a node the graph doesn't have")
            continue
        if not isinstance(targets, list):
            problems.append(f"{where}: targets {targets!r} is not a list of node ids")
            continue
        holding = leaf_paths[first_path[leaf]]  # the path to `leaf` is a prefix of it: no walk up the parents
        on_path = set(holding[: holding.index(leaf) + 1])
        kept = []
        for target in targets:
            if type(target) is not int or target not in on_path:
                problems.append(f"{where}: target {target!r} is not on the path to node {leaf}")
            elif not graph.is_model(target):
                problems.append(f"{where}: target {target} is not model-authored")
            elif target in trained:
                problems.append(f"{where}: target {target} is already trained by this or an earlier row")
            else:
                kept.append(target)
                trained.add(target)
        rows.append(SampleRow(number, first_path[leaf], leaf, kept))
    return rows, rule, problems
