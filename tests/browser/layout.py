"""Layout checks where the layout carries meaning: a table's rows each on one line with every cell under
its header, and a pair view's two sides side by side. Each returns the problems found (empty: none), so
a failure lists every misplaced cell, not the first."""

TABLE_PROBLEMS = """([table, rowSelector]) => {
  const heads = [...table.querySelectorAll("thead tr:last-child th")];
  const spans = [];
  for (const head of heads) {
    const box = head.getBoundingClientRect();
    for (let i = 0; i < head.colSpan; i++) spans.push({left: box.left, right: box.right, name: head.textContent});
  }
  const problems = [];
  for (const row of table.querySelectorAll(rowSelector)) {
    const cells = [...row.children];
    const top = cells[0].getBoundingClientRect().top;
    let column = 0;
    for (const cell of cells) {
      const box = cell.getBoundingClientRect();
      const head = spans[column];
      const middle = (box.left + box.right) / 2;
      const label = `row ${row.dataset.key || row.dataset.traj || row.rowIndex}, cell ${column}`;
      if (Math.abs(box.top - top) > 1) problems.push(`${label}: top ${box.top}, the row's ${top}`);
      if (!head) problems.push(`${label}: no header above it`);
      else if (middle < head.left || middle > head.right) {
        problems.push(`${label}: centre ${middle} outside its header "${head.name}" (${head.left}-${head.right})`);
      }
      column += cell.colSpan;
    }
  }
  return problems;
}"""

SIDE_BY_SIDE_PROBLEMS = """(pairs) => pairs.flatMap((pair, n) => {
  const [a, b] = [...pair.children].map((side) => side.getBoundingClientRect());
  if (!a || !b) return [`pair ${n}: ${pair.children.length} sides`];
  const problems = [];
  if (Math.abs(a.top - b.top) > 1) problems.push(`pair ${n}: sides at tops ${a.top} and ${b.top}`);
  if (b.left < a.right) problems.push(`pair ${n}: side b starts at ${b.left}, inside side a (ends ${a.right})`);
  return problems;
})"""


def table_problems(tab, table: str, rows: str) -> list[str]:
    """Rows matching `rows` in the first `table` whose cells are not on one line or not under their headers."""
    return tab.locator(table).first.evaluate(f"(table, rows) => ({TABLE_PROBLEMS})([table, rows])", rows)


def side_by_side_problems(tab, pairs: str) -> list[str]:
    """Elements matching `pairs` whose two children are not side by side, a left of b on one line."""
    return tab.locator(pairs).evaluate_all(SIDE_BY_SIDE_PROBLEMS)
