"""The package's dependency listing, checked against its layer map: ``python -m edgemem.tools.imports``.

DESIGN.md's layout is a stack: the store at the bottom, the write path (``ingest``) and the read
path (``recall``) on it, the engine wiring both, the daemon and the evaluation harness in front of
the engine, the CLI on top. The stack only holds if imports go down it, so this reads every module
with :mod:`ast` (nothing is imported or run), collects every ``import`` of an edgemem module — at
module level and inside functions alike, because a deferred import is still a dependency — and
reports three kinds of violation:

- **upward**: a module imports from a package of a higher rank (``store`` importing ``engine``);
- **sideways**: two different packages of the same rank (``recall`` importing ``ingest``: the read
  path must not depend on the write path; shared text code lives in :mod:`edgemem.text`);
- **cycle**: modules that import each other, directly or round a longer loop;

plus a module that imports an edgemem module that does not exist, and a package missing from the
layer map (a new package must be placed before it can pass). The exit status is 1 when there is any
violation, so a test (and CI) fails on the first upward import.

:data:`LAYERS` is the layer map. A "package" is the first name under ``edgemem``: ``edgemem.store.db``
belongs to ``store``, ``edgemem.engine`` to ``engine``; ``edgemem`` itself (``__version__``) is the
root. A module may import from its own package and from any package of a lower rank.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "edgemem"
ROOT = "(root)"  # the package's own __init__: __version__

# rank: packages of one rank never import each other; a lower rank never imports a higher one.
LAYERS: dict[str, int] = {
    # base layers: no edgemem imports beyond errors; every layer may use them
    ROOT: 0, "errors": 0, "display": 0,
    "config": 1, "text": 1, "prompts": 1, "linear": 1,
    "runtime": 2,  # the models (LLM, embedder, scheduler): config and errors only
    # the stack of DESIGN.md
    "store": 3,
    "ingest": 4, "recall": 4, "admin": 4,  # write path, read path, the user's control over the file
    "engine": 5,
    "daemon": 6, "eval": 6, "mcp": 6,
    "cli": 7,
    "__main__": 8, "tools": 8,  # ``python -m edgemem`` runs the CLI; developer tools import nothing
}


@dataclass(frozen=True)
class Import:
    src: str  # importing module, dotted
    dst: str  # imported edgemem module, dotted (a package's __init__ is the package name)
    line: int
    deferred: bool  # inside a function: runs when called, not at import


@dataclass
class Report:
    modules: dict[str, Path]
    imports: list[Import]
    missing: list[Import] = field(default_factory=list)  # imports of edgemem modules that do not exist
    unplaced: list[str] = field(default_factory=list)  # packages not in the layer map
    upward: list[Import] = field(default_factory=list)
    sideways: list[Import] = field(default_factory=list)
    cycles: list[list[str]] = field(default_factory=list)

    @property
    def violations(self) -> int:
        return (len(self.missing) + len(self.unplaced) + len(self.upward) + len(self.sideways)
                + len(self.cycles))

    def depends(self, src: str, dst: str) -> list[Import]:
        """The imports by which package ``src`` uses package ``dst``."""
        return [i for i in self.imports if package_of(i.src) == src and package_of(i.dst) == dst]


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def find_modules(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Every module under the package folder ``root``, by dotted name."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("").parts
        if any(not part.isidentifier() for part in rel if part != "__init__"):
            continue  # editor temp files and the like are not importable
        parts = [package, *rel]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, known: Mapping[str, Path], package: str) -> None:
        self.module = module
        self.is_package = is_package
        self.known = known
        self.package = package
        self.depth = 0
        self.found: list[Import] = []

    def _deeper(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _deeper

    def _ours(self, name: str) -> bool:
        return name == self.package or name.startswith(self.package + ".")

    def _add(self, dst: str, node: ast.stmt) -> None:
        self.found.append(Import(self.module, dst, node.lineno, self.depth > 0))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if self._ours(alias.name):
                self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:  # relative: resolved against this module's package
            anchor = self.module.split(".")
            anchor = anchor if self.is_package else anchor[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        if not self._ours(base):
            return
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            self._add(sub if sub in self.known else base, node)  # a submodule, or a name from ``base``


def collect(modules: Mapping[str, Path], package: str = PACKAGE) -> list[Import]:
    found: list[Import] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        collector = _Collector(name, path.name == "__init__.py", modules, package)
        collector.visit(tree)
        found += collector.found
    return found


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one module, and modules that import themselves
    (Tarjan's algorithm, iterative so a deep chain cannot hit the recursion limit)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    out.append(sorted(component))
    return sorted(out)


def check(root: Path, package: str = PACKAGE, layers: Mapping[str, int] = LAYERS) -> Report:
    """Read every module under ``root`` (the package folder) and check its imports against ``layers``."""
    modules = find_modules(root, package)
    report = Report(modules, collect(modules, package))
    report.unplaced = sorted({package_of(m) for m in modules} - set(layers))
    for imp in report.imports:
        if imp.dst not in modules:
            report.missing.append(imp)
            continue
        a, b = package_of(imp.src), package_of(imp.dst)
        if a == b or a not in layers or b not in layers:
            continue
        if layers[b] > layers[a]:
            report.upward.append(imp)
        elif layers[b] == layers[a]:
            report.sideways.append(imp)
    report.cycles = cycles((i.src, i.dst) for i in report.imports if i.dst in modules)
    return report


def _where(report: Report, imp: Import) -> str:
    path = report.modules.get(imp.src)
    how = " (in a function)" if imp.deferred else ""
    return f"{path}:{imp.line}: {imp.src} imports {imp.dst}{how}"


def render(report: Report, layers: Mapping[str, int] = LAYERS, *, modules: bool = False) -> str:
    lines = ["layers (a package imports only its own modules and packages of a lower rank):"]
    by_rank: dict[int, list[str]] = {}
    for name, rank in layers.items():
        by_rank.setdefault(rank, []).append(name)
    lines += [f"  {rank}  {', '.join(names)}" for rank, names in sorted(by_rank.items())]
    lines += ["", "package    rank  imports from (packages, with the number of import statements)"]
    present = sorted({package_of(m) for m in report.modules}, key=lambda p: (layers.get(p, 99), p))
    for pkg in present:
        used: dict[str, int] = {}
        for imp in report.imports:
            if package_of(imp.src) == pkg and imp.dst in report.modules and package_of(imp.dst) != pkg:
                used[package_of(imp.dst)] = used.get(package_of(imp.dst), 0) + 1
        shown = ", ".join(f"{p} ({n})" for p, n in sorted(used.items(), key=lambda kv: (layers.get(kv[0], 99), kv[0])))
        rank = layers.get(pkg)
        lines.append(f"{pkg:<10} {'?' if rank is None else rank:<5} {shown or '-'}")
        if modules:
            for name in sorted(m for m in report.modules if package_of(m) == pkg):
                deps = sorted({i.dst + ("*" if i.deferred else "") for i in report.imports if i.src == name})
                lines.append(f"    {name}: {', '.join(deps) or '-'}")
    if modules:
        lines.append("    (* imported inside a function)")
    lines.append("")
    recall_ingest = report.depends("recall", "ingest")
    lines.append(f"recall -> ingest: {len(recall_ingest) or 'none'}")
    sections = (
        ("upward imports", [_where(report, i) for i in report.upward]),
        ("sideways imports", [_where(report, i) for i in report.sideways]),
        ("import cycles", [f"{', '.join(c)} (import each other, directly or round a loop)" for c in report.cycles]),
        ("imports of missing modules", [_where(report, i) for i in report.missing]),
        ("packages not in the layer map", report.unplaced),
    )
    for title, items in sections:
        lines.append(f"{title}: {len(items) or 'none'}")
        lines += [f"  {item}" for item in items]
    lines.append(f"{len(report.modules)} modules, {len(report.imports)} edgemem imports, "
                 f"{report.violations} violation(s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edgemem.tools.imports", description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the package folder to check (default: the installed edgemem)")
    parser.add_argument("--modules", action="store_true", help="also list every module's edgemem imports")
    args = parser.parse_args(argv)
    report = check(args.root)
    print(render(report, modules=args.modules))
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
