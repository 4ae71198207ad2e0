"""Reads a MariaDB general log and fails when an UPDATE, DELETE or INSERT … VALUES payrecon
sent reads the table it writes in a subquery that MySQL would merge into the statement: MySQL
8.0 refuses those with error 1093, which MariaDB accepts (docs/design/backends.md, "MariaDB/MySQL"). A read of the
target through a derived table that cannot be merged (DISTINCT, GROUP BY or LIMIT in it) is
what MySQL documents as the way past it, and passes. `.ci/run` turns the general log on
around the tests and runs this on it.

Usage: python3 .ci/own_table_audit.py GENERAL_LOG"""
import re
import sys

import sqlglot
from sqlglot import exp

ENTRY = re.compile(
    r"^(?:\d{6}\s+\d{1,2}:\d{2}:\d{2})?\s+\d+\s+"
    r"(Query|Execute|Prepare|Connect|Quit|Init DB|Close stmt|Reset stmt|Field List)\t(.*)$"
)


def entries(path):
    """(command, text) of each entry; a statement may span several lines."""
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            m = ENTRY.match(line.rstrip("\n"))
            if m:
                if cur:
                    yield cur
                cur = [m.group(1), m.group(2)]
            elif cur is not None:
                cur[1] += "\n" + line.rstrip("\n")
    if cur:
        yield cur


def materialized(node):
    """A derived table (in FROM or JOIN) that MySQL cannot merge into its query."""
    if not isinstance(node, exp.Subquery) or not isinstance(node.parent, (exp.From, exp.Join)):
        return False
    q = node.this
    return isinstance(q, exp.Select) and bool(
        q.args.get("distinct") or q.args.get("group") or q.args.get("limit")
    )


def targets(tree):
    if isinstance(tree, exp.Insert):
        table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        return {table.name.lower()} if isinstance(table, exp.Table) else set()
    if isinstance(tree, exp.Update):
        tables = [tree.this] + [j.this for j in (tree.args.get("joins") or [])]
    else:
        tables = [tree.this]
    return {t.name.lower() for t in tables if isinstance(t, exp.Table)}


def own_table_reads(tree):
    """The target tables read in a subquery of `tree` that MySQL would merge."""
    found = set()
    own = targets(tree)
    # INSERT … SELECT may read its target anywhere in the SELECT (MySQL copies the rows to a
    # temporary table first); INSERT … VALUES and ON DUPLICATE KEY UPDATE may not.
    source = tree.expression if isinstance(tree, exp.Insert) else None
    if not isinstance(source, (exp.Select, exp.Union)):
        source = None
    for table in tree.find_all(exp.Table):
        if table.name.lower() not in own:
            continue
        node, inside = table.parent, False
        while node is not None and node is not tree:
            if node is source:
                inside = False
                break
            if materialized(node):
                inside = False
                break
            if isinstance(node, (exp.Subquery, exp.Exists, exp.Select)):
                inside = True
            node = node.parent
        if inside:
            found.add(table.name)
    return found


def without_json_tables(sql):
    """`JSON_TABLE(…)` (beyond sqlglot's MySQL dialect) as a plain table `json_list`: a list
    bound as JSON, never the table the statement writes."""
    out, i = [], 0
    while True:
        j = sql.upper().find("JSON_TABLE(", i)
        if j < 0:
            return "".join(out) + sql[i:]
        out.append(sql[i:j] + "json_list")
        depth, k, quoted = 0, j + len("JSON_TABLE"), False
        while k < len(sql):
            c = sql[k]
            if quoted:
                if c == "\\":
                    k += 1
                elif c == "'":
                    quoted = False
            elif c == "'":
                quoted = True
            else:
                depth += {"(": 1, ")": -1}.get(c, 0)
            k += 1
            if depth == 0 and not quoted:
                break
        i = k


def shape(sql):
    sql = re.sub(r"'(?:[^'\\]|\\.)*'", "?", sql)
    sql = re.sub(r"\b\d+\b", "?", sql)
    return re.sub(r"\s+", " ", sql).strip()


def main(path):
    shapes, unparsed, bad = set(), 0, []
    for command, sql in entries(path):
        head = sql.lstrip(" (").upper()
        if command not in ("Query", "Execute") or not head.startswith(
            ("UPDATE", "DELETE", "INSERT", "REPLACE")
        ):
            continue
        s = shape(sql)
        if s in shapes:
            continue
        shapes.add(s)
        try:
            tree = sqlglot.parse_one(without_json_tables(sql), read="mysql")
        except sqlglot.errors.SqlglotError as e:
            unparsed += 1
            print(f"  not parsed ({e.__class__.__name__}): {s[:300]}")
            continue
        if isinstance(tree, (exp.Update, exp.Delete, exp.Insert)):
            for table in own_table_reads(tree):
                bad.append((table, s))
    print(
        f"own-table audit: {len(shapes)} distinct UPDATE/DELETE/INSERT shapes, "
        f"{len(shapes) - unparsed} checked, {unparsed} not parsed, "
        f"{len(bad)} reading their own table"
    )
    for table, s in bad:
        print(f"  reads {table} in a subquery MySQL would merge (error 1093): {s[:500]}")
    return 1 if bad or unparsed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
