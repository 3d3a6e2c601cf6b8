"""The user's control over the one SQLite file: forget, export, import, backup, restore.

Forgetting is a hard delete (DESIGN Principle 7): the raw turns, the notes derived from them, their
FTS5 and vec0 rows, links, keywords, traces and profile facts that drew on them, then an FTS5
``optimize`` and a ``wal_checkpoint(TRUNCATE)`` so that, with ``secure_delete`` on, no page of the
database or its WAL keeps the text. Nothing is deleted without ``confirm``: without it :func:`forget`
returns the preview.

Export writes everything needed to rebuild the store (JSON) or to read it (Markdown); import puts a
JSON export into an empty store. Backup uses SQLite's online backup API, so it runs while the daemon
serves; restore replaces the database file atomically and only while no daemon holds its lock.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgemem import __version__
from edgemem.errors import BadInput, NotFound, StoreError
from edgemem.store import archive, notes, watches
from edgemem.store import forget as forget_store
from edgemem.store import lock as store_lock
from edgemem.store import raw as raw_store
from edgemem.store.db import _SQLITE_MAGIC, APPLICATION_ID, DatabaseError, Store, connect_driver, now

log = logging.getLogger(__name__)

EXPORT_FORMAT = "edgemem-export"
EXPORT_VERSION = 1
PREVIEW_CHARS = 200


# -- forget ---------------------------------------------------------------------------------------
@dataclass
class ForgetPlan:
    """What a forget would remove; ``notes`` is the preview shown before the user confirms."""

    note_ids: list[int] = field(default_factory=list)
    raw_ids: list[int] = field(default_factory=list)
    source_ids: list[int] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _one_selector(note_ids: list[int] | None, source: str | int | None, query: str | None) -> None:
    given = sum(x is not None and x != [] for x in (note_ids, source, query))
    if given != 1:
        raise BadInput("forget takes exactly one of: note ids, a source (uri or id), a query")


def _resolve_sources(conn: Any, source: str | int) -> list[int]:
    text = str(source).strip()
    if text.isdigit():
        found = raw_store.source_by_id(conn, int(text))
        ids = [found.id] if found else []
    else:
        ids = forget_store.sources_by_uri(conn, text)
        resolved = str(Path(text).expanduser().resolve())
        if resolved != text:
            ids += forget_store.sources_by_uri(conn, resolved)
    if not ids:
        raise NotFound(f"no source {text!r}; sources are named by id or by uri (a file's full path)")
    return sorted(set(ids))


def forget_preview(store: Store, *, note_ids: list[int] | None = None, source: str | int | None = None,
                   query: str | None = None) -> ForgetPlan:
    """The notes and raw turns a forget with the same arguments would remove; deletes nothing."""
    _one_selector(note_ids, source, query)
    conn = store.conn
    plan = ForgetPlan()
    with archive.snapshot(conn):
        if note_ids is not None:
            wanted = sorted(set(int(i) for i in note_ids))
            missing = sorted(set(wanted) - {n.id for n in notes.get_many(conn, wanted)})
            if missing:
                raise NotFound(f"no note {missing[0]}")
            plan.note_ids, plan.raw_ids = forget_store.closure(conn, wanted)
        elif source is not None:
            plan.source_ids = _resolve_sources(conn, source)
            turns = [t.id for sid in plan.source_ids for t in raw_store.turns_of_source(conn, sid)]
            plan.note_ids, plan.raw_ids = forget_store.closure(conn, [], turns)
        else:
            if not forget_store.query_words(query or ""):
                raise BadInput("the forget query has no words to match")
            matched_notes, matched_raw = forget_store.match_query(conn, query or "")
            plan.note_ids, plan.raw_ids = forget_store.closure(conn, matched_notes, matched_raw)
        plan.notes = [_preview_row(conn, n) for n in notes.get_many(conn, plan.note_ids)]
    return plan


def _preview_row(conn: Any, note: notes.Note) -> dict:
    source = None
    if note.source_turns:
        turn = raw_store.get_turn(conn, note.source_turns[0])
        found = raw_store.source_by_id(conn, turn.source_id) if turn else None
        source = found.uri if found else None
    text = note.content if len(note.content) <= PREVIEW_CHARS else note.content[:PREVIEW_CHARS] + "…"
    return {"id": note.id, "status": note.status, "event_time": note.event_time, "speaker": note.speaker,
            "content": text, "source": source}


def forget(store: Store, *, note_ids: list[int] | None = None, source: str | int | None = None,
           query: str | None = None, confirm: bool = False) -> dict:
    """Hard-delete what :func:`forget_preview` shows; without ``confirm`` only return that preview.

    Affected clusters lose their summary and get a "cluster_profile" job; the FTS index is optimised
    and the WAL truncated so the text is gone from the file's bytes (``purged`` false: a reader kept
    the checkpoint from finishing; the next checkpoint completes it).
    """
    plan = forget_preview(store, note_ids=note_ids, source=source, query=query)
    if not confirm:
        return {"deleted": False, "preview": plan.as_dict()}
    totals: dict[str, Any] = {"notes": 0, "raw_turns": 0, "profile": 0, "clusters": [], "sources": 0}
    with store.transaction() as conn:
        watched = [w["path"] for w in watches.all_watches(conn)]
        for sid in plan.source_ids:
            found = raw_store.source_by_id(conn, sid)
            # A file in a watched folder keeps its source row (uri and hash, no text) so the watcher
            # does not ingest it again; it comes back only when the file changes.
            tombstone = bool(found and found.kind == "file" and any(_under(found.uri, w) for w in watched))
            _add(totals, forget_store.forget_source(conn, sid, keep_source=tombstone))
            totals["sources"] += 0 if tombstone else 1
        if not plan.source_ids:
            _add(totals, forget_store.forget_turns(conn, plan.raw_ids))
            _add(totals, forget_store.forget_notes(conn, plan.note_ids))  # notes without raw turns, if any
        totals["clusters"] = sorted(set(totals["clusters"]))
        forget_store.record(conn, {**totals, "note_ids": plan.note_ids, "source_ids": plan.source_ids})
    totals["purged"] = forget_store.purge(store.conn)
    totals["deleted"] = True
    log.info("forgot %d notes, %d raw turns", totals["notes"], totals["raw_turns"])
    return totals


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _add(totals: dict[str, Any], counts: dict[str, Any]) -> None:
    for key, value in counts.items():
        if key == "clusters":
            totals["clusters"] += list(value)
        else:
            totals[key] = totals.get(key, 0) + value


# -- export / import ----------------------------------------------------------------------------------
def export_data(store: Store, *, vectors: bool = True) -> dict:
    """Everything a store holds, as JSON-ready data, read in one snapshot while writers carry on."""
    conn = store.conn
    with archive.snapshot(conn):
        data: dict[str, Any] = {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "edgemem": __version__,
            "exported_at": now(),
            "embed_model": store.embed_model,
            "dim": store.dim,
            "tables": {t: list(archive.dump_rows(conn, t)) for t in archive.TABLES},
        }
        if vectors:
            data["vectors"] = {t: {str(k): v for k, v in archive.dump_vectors(conn, t).items()} for t in archive.VECTOR_TABLES}
    return data


def export_json(store: Store, target: Path, *, vectors: bool = True) -> dict:
    """Write the JSON export (owner-only file); returns the path and row counts per table."""
    data = export_data(store, vectors=vectors)
    size = _write_private(Path(target), json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return {"path": str(target), "bytes": size, "tables": {t: len(rows) for t, rows in data["tables"].items()}}


def markdown(store: Store) -> str:
    """A readable export: per source, its turns in order with their times; then the current profile."""
    conn = store.conn
    lines = [f"# edgemem memory ({now()})", ""]
    with archive.snapshot(conn):
        for source, turns in archive.turns_by_source(conn):
            if not turns:
                continue
            lines += [f"## {source['title'] or source['uri']}", "", f"*{source['kind']}: {source['uri']}*", ""]
            for turn in turns:
                who = f"**{turn['speaker']}**: " if turn["speaker"] else ""
                body = turn["text"].strip().replace("\n", "\n  ")
                lines.append(f"- {turn['event_time'].replace('T', ' ')} — {who}{body}")
            lines.append("")
        profile = archive.current_profile(conn)
    if profile:
        lines += ["## Profile", ""]
        lines += [f"- {p['kind']}: {p['key']} = {p['value']} (since {p['valid_from'][:10]})" for p in profile]
        lines.append("")
    return "\n".join(lines)


def export_markdown(store: Store, target: Path) -> dict:
    size = _write_private(Path(target), markdown(store).encode("utf-8"))
    return {"path": str(target), "bytes": size}


def read_export(source: Path | dict) -> dict:
    if isinstance(source, dict):
        data = source
    else:
        try:
            data = json.loads(Path(source).read_bytes())
        except OSError as exc:
            raise BadInput(f"{source}: {exc.strerror}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadInput(f"{source} is not a JSON export ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT or not isinstance(data.get("tables"), dict):
        raise BadInput(f"{source if not isinstance(source, dict) else 'data'} is not an edgemem JSON export")
    if data.get("version") != EXPORT_VERSION:
        raise BadInput(f"export version {data.get('version')!r} is not supported (this edgemem reads {EXPORT_VERSION})")
    unknown = set(data["tables"]) - set(archive.TABLES)
    if unknown:
        raise BadInput(f"export has a table this edgemem does not know: {sorted(unknown)[0]}")
    return data


def import_json(store: Store, source: Path | dict, *, embed: Callable[[list[str]], Any] | None = None) -> dict:
    """Load a JSON export into an empty store, keeping every id.

    Vectors are taken from the export when it was made with this store's embedder, otherwise
    recomputed with ``embed`` (cluster and topic centroids as the mean of their notes' vectors).
    """
    data = read_export(source)
    tables: dict[str, list[dict]] = data["tables"]
    same_embedder = data.get("embed_model") == store.embed_model and data.get("dim") == store.dim
    vectors = data.get("vectors") if same_embedder else None
    if vectors is None:
        if embed is None:
            raise BadInput(f"the export's vectors come from {data.get('embed_model')} (dim {data.get('dim')}); "
                           "importing needs the embedder to recompute them")
        vectors = _recompute_vectors(tables, embed, store.dim)
    with store.transaction() as conn:
        if not archive.is_empty(conn):
            raise BadInput(f"{store.path} already holds memories; import into an empty store (--db NEW.db)")
        counts = {}
        for table in archive.TABLES:
            rows = tables.get(table, [])
            if table == "jobs":  # a job caught running when exported runs again here
                rows = [{**r, "status": "pending" if r.get("status") == "running" else r.get("status")} for r in rows]
            counts[table] = archive.load_rows(conn, table, rows)
        for table in archive.VECTOR_TABLES:
            archive.load_vectors(conn, table, vectors.get(table, {}))
        if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
            raise BadInput("the export is inconsistent (a row refers to a missing row); nothing was imported")
        counts["notes_fts"] = archive.rebuild_fts(conn)
    return {"imported": counts, "vectors": "exported" if same_embedder and data.get("vectors") else "recomputed"}


def _recompute_vectors(tables: dict[str, list[dict]], embed: Callable[[list[str]], Any], dim: int) -> dict[str, dict]:
    active = [n for n in tables.get("notes", []) if n.get("status") == "active"]
    texts = [f"{n['speaker']}: {n['content']}" if n.get("speaker") else n["content"] for n in active]
    note_vecs: dict[int, np.ndarray] = {}
    for start in range(0, len(texts), 64):
        batch = np.asarray(embed(texts[start:start + 64]), dtype=np.float32)
        if batch.ndim != 2 or batch.shape[1] != dim:
            raise StoreError(f"the embedder returned vectors of shape {batch.shape}; the store needs dim {dim}")
        for note, vec in zip(active[start:start + 64], batch, strict=True):
            note_vecs[note["id"]] = vec
    clusters: dict[int, list[int]] = {}
    for n in active:
        if n.get("cluster_id") is not None:
            clusters.setdefault(n["cluster_id"], []).append(n["id"])
    terms = {k["id"]: k.get("topic_id") for k in tables.get("keywords", [])}
    topics: dict[int, set[int]] = {}
    for nk in tables.get("note_keywords", []):
        topic = terms.get(nk["keyword_id"])
        if topic is not None and nk["note_id"] in note_vecs:
            topics.setdefault(topic, set()).add(nk["note_id"])
    return {
        "note_vec": note_vecs,
        "cluster_vec": {c: _centroid([note_vecs[i] for i in ids]) for c, ids in clusters.items()},
        "topic_vec": {t: _centroid([note_vecs[i] for i in ids]) for t, ids in topics.items()},
    }


def _centroid(vectors: list[np.ndarray]) -> np.ndarray:
    mean = np.mean(np.stack(vectors), axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else mean


# -- backup / restore -----------------------------------------------------------------------------------
def backup(store: Store, target: Path, *, overwrite: bool = False) -> dict:
    """Copy the live store to ``target`` with SQLite's online backup API.

    One backup step copies every page inside a single read transaction: a consistent snapshot that,
    in WAL mode, never blocks the daemon's writers. The copy is checked, fsynced, then renamed into
    place, so ``target`` is either the old file or a complete backup.
    """
    target = Path(target).expanduser().absolute()
    if target.resolve() == store.path.resolve():
        raise BadInput("the backup target is the live store itself")
    if target.exists() and not overwrite:
        raise BadInput(f"{target} exists; choose another name or pass overwrite")
    if not target.parent.is_dir():
        raise BadInput(f"{target.parent} is not a folder")
    with _temp_beside(target) as tmp:
        dst = connect_driver(tmp)
        try:
            store.conn.backup(dst)
            _check_copy(dst, target)
            counts = _counts(dst)
        finally:
            dst.close()
        _fsync(tmp)
        os.replace(tmp, target)
    _fsync_dir(target.parent)
    log.info("backed up the store to %s", target)
    return {"path": str(target), "bytes": target.stat().st_size, **counts}


def restore(database: Path, source: Path) -> dict:
    """Replace the store at ``database`` with the backup ``source``, atomically.

    Refused while a daemon holds ``<database>.lock``, and for a file that is not a sound edgemem
    store. The backup is copied to a temp file in the same folder, checked, fsynced and renamed over
    the database; the replaced store is kept beside it as ``<database>.pre-restore``.
    """
    database = Path(database).expanduser().absolute()
    source = Path(source).expanduser().absolute()
    if not source.is_file():
        raise BadInput(f"{source} is not a file")
    if source.resolve() == database.resolve():
        raise BadInput("the backup to restore is the store itself")
    with open(source, "rb") as fh:
        if fh.read(16) != _SQLITE_MAGIC:
            raise StoreError(f"{source} is not a SQLite database; nothing was restored")
    database.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with store_lock.exclusive(database):
        try:
            src = connect_driver(source)
        except DatabaseError as exc:
            raise StoreError(f"{source} cannot be read as a store ({exc}); nothing was changed") from None
        try:
            with _temp_beside(database) as tmp:
                dst = connect_driver(tmp)
                try:
                    _check_copy(src, source)  # refuse before copying a foreign or damaged file
                    src.backup(dst)
                    _check_copy(dst, source)
                    counts = _counts(dst)
                finally:
                    dst.close()
                _fsync(tmp)
                previous = _keep_previous(database)
                os.replace(tmp, database)
        finally:
            src.close()
        for suffix in ("-wal", "-shm"):  # an old WAL replayed onto the new file would corrupt it
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{database}{suffix}")
        _fsync_dir(database.parent)
    log.info("restored the store from %s", source)
    return {"restored": str(database), "from": str(source), "previous": str(previous) if previous else None, **counts}


def _keep_previous(database: Path) -> Path | None:
    """Fold the current store's WAL into it and keep the file as ``<database>.pre-restore``."""
    if not database.exists():
        return None
    previous = Path(f"{database}.pre-restore")
    wal = Path(f"{database}-wal")
    try:
        conn = connect_driver(database)
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        finally:
            conn.close()
    except DatabaseError:
        busy = 1  # a damaged store (the usual reason to restore): keep its WAL beside the copy
    if busy and wal.exists() and wal.stat().st_size:
        os.replace(wal, f"{previous}-wal")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(previous)
    os.link(database, previous)
    return previous


def _check_copy(conn: Any, origin: Path) -> None:
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        if app_id != APPLICATION_ID:
            raise StoreError(f"{origin} is a SQLite database but not an edgemem store; nothing was changed")
        result = conn.execute("PRAGMA integrity_check").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except DatabaseError as exc:
        raise StoreError(f"{origin} cannot be read as a store ({exc}); nothing was changed") from None
    if result != "ok":
        raise StoreError(f"{origin} fails SQLite's integrity check ({result}); nothing was changed")
    if not {"meta", "migrations", "notes", "raw_turns"} <= tables:
        raise StoreError(f"{origin} is not a complete edgemem store; nothing was changed")


def _counts(conn: Any) -> dict[str, int]:
    return {
        "notes": conn.execute("SELECT count(*) FROM notes WHERE status = 'active'").fetchone()[0],
        "raw_turns": conn.execute("SELECT count(*) FROM raw_turns").fetchone()[0],
    }


# -- files ------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _temp_beside(target: Path) -> Iterator[Path]:
    """An owner-only temp file in ``target``'s folder (so the final rename is atomic); removed on error."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    for leftover in (tmp, Path(f"{tmp}-journal")):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    try:
        yield tmp
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            Path(f"{tmp}-journal").unlink()


def _write_private(target: Path, payload: bytes) -> int:
    target = target.expanduser().absolute()
    if not target.parent.is_dir():
        raise BadInput(f"{target.parent} is not a folder")
    with _temp_beside(target) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    _fsync_dir(target.parent)
    return len(payload)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
