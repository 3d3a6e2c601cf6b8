"""The dependency listing: the package itself passes its layer map, and the check catches what it
is for (an upward import, the read path importing the write path, a cycle) on a small tree."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from edgemem.tools import imports


def test_the_package_has_no_upward_imports_no_cycles_and_recall_does_not_import_ingest() -> None:
    out = subprocess.run([sys.executable, "-m", "edgemem.tools.imports"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    for line in ("recall -> ingest: none", "upward imports: none", "sideways imports: none", "import cycles: none",
                 "imports of missing modules: none", "packages not in the layer map: none"):
        assert line in out.stdout.splitlines(), out.stdout
    report = imports.check(Path(imports.__file__).resolve().parents[1])
    assert report.violations == 0
    # Function-level imports are read too: the daemon opens the engine inside a method.
    assert any(i.deferred for i in report.depends("daemon", "engine"))
    assert report.depends("recall", "ingest") == [] and report.depends("recall", "text")


def write(root: Path, files: dict[str, str]) -> Path:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body), encoding="utf-8")
    return root


def test_a_synthetic_tree_with_every_kind_of_violation_fails(tmp_path: Path) -> None:
    root = write(tmp_path / "edgemem", {
        "__init__.py": "",
        "errors.py": "",
        "store/__init__.py": "",
        "store/notes.py": """
            from edgemem.store import search   # a cycle with search
            def later():
                from edgemem.engine import Engine   # upward, even inside a function
        """,
        "store/search.py": "from . import notes\n",  # relative import, resolved
        "ingest/__init__.py": "",
        "ingest/keywords.py": "from edgemem.errors import *\n",
        "recall/__init__.py": "",
        "recall/router.py": """
            from edgemem.ingest.keywords import STOPWORDS   # sideways: read path -> write path
            from edgemem.store import notes
            from edgemem.recall.basic import ABSTAIN   # no such module (any more)
        """,
        "engine.py": "from edgemem.recall import router\n",
        "gadgets/__init__.py": "",  # not in the layer map
    })
    report = imports.check(root)
    assert [(i.src, i.dst, i.deferred) for i in report.upward] == [("edgemem.store.notes", "edgemem.engine", True)]
    assert [(i.src, i.dst) for i in report.sideways] == [("edgemem.recall.router", "edgemem.ingest.keywords")]
    # notes <-> search, and the upward import closes a longer loop: notes -> engine -> router -> notes.
    assert report.cycles == [["edgemem.engine", "edgemem.recall.router", "edgemem.store.notes", "edgemem.store.search"]]
    assert [(i.src, i.dst) for i in report.missing] == [("edgemem.recall.router", "edgemem.recall.basic")]
    assert report.unplaced == ["gadgets"]
    assert report.violations == 5

    text = imports.render(report)
    assert "recall -> ingest: 1" in text and "import cycles: 1" in text
    assert "edgemem.engine, edgemem.recall.router, edgemem.store.notes, edgemem.store.search (import each" in text
    assert imports.main([str(root)]) == 1


def test_a_clean_synthetic_tree_passes(tmp_path: Path, capsys) -> None:
    root = write(tmp_path / "edgemem", {
        "__init__.py": "",
        "text.py": "",
        "store/__init__.py": "",
        "store/db.py": "",
        "recall/__init__.py": "",
        "recall/router.py": "from edgemem.text import *\nfrom edgemem.store import db\n",
        "engine.py": "import edgemem.recall.router\n",
    })
    assert imports.main([str(root), "--modules"]) == 0
    listed = capsys.readouterr().out
    assert "edgemem.recall.router: edgemem.store.db, edgemem.text" in listed
    assert "0 violation(s)" in listed
