"""The window's files: sessions (new, open, save, autosave, recovery), receipts, benchmark
records and the recent-files menu.

What a session holds is the state's business (``InspectionState.to_session`` /
``restore_session``); this module asks for paths, reads and writes, and says what happened in
the window's status line, check log and verdict. Every dialog goes through
``widgets.dialogs`` (tests patch it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, QSettings, QTimer
from PySide6.QtWidgets import QMenu, QWidget

from inspector.model.bench_rows import bench_from_record
from inspector.model.state import DEMO_FIXTURE, InspectionState, recent_with
from inspector.qt.widgets import dialogs

AUTOSAVE_MS = 60_000


@dataclass(frozen=True)
class FileSurfaces:
    """What the file actions touch besides the state: the dialogs' parent, the status line,
    the check log and verdict they add to, the settings and recent-files menu, the input panel
    a session fills, and the window's answers to "busy?" and "closed?"."""

    parent: QWidget
    status: Callable[[str], None]
    log: Callable[[str], None]
    add_to_verdict: Callable[[str], None]
    settings: QSettings
    recent_menu: QMenu
    input_panel: Any
    show_bench: Callable[[], None]
    load_kernel: Callable[[str], Any]
    busy: Callable[[], bool]
    closed: Callable[[], bool]


def check_bench_rows(meta: dict[str, Any] | None) -> None:
    """Each benchmark row a session holds, checked as a record's rows are
    (:func:`kernels.bench.report.check_row`): the views read their fields as such.

    Raises:
        ValueError: the first wrong field, named ``bench meta rows[i].field``.
    """
    rows = (meta or {}).get("rows") or []
    if not rows:
        return
    from kernels.bench.report import check_row

    for index, row in enumerate(rows):
        check_row(row, f"bench meta rows[{index}]")


class SessionFiles(QObject):
    """File actions of one window (``window.files``), on the state and its :class:`FileSurfaces`."""

    def __init__(
        self,
        state: InspectionState,
        surfaces: FileSurfaces,
        autosave_dir: str | None,
        autosave_ms: int = AUTOSAVE_MS,
    ) -> None:
        super().__init__(surfaces.parent)
        self.state = state
        self._surfaces = surfaces
        self._parent = surfaces.parent
        self.autosave_dir = autosave_dir
        # (mtime_ns, size) of each session file as this window last opened or saved it.
        self._stamps: dict[str, tuple[int, int]] = {}
        self._timer = QTimer(self)
        self._timer.setInterval(autosave_ms)
        self._timer.timeout.connect(self.autosave)
        if autosave_ms > 0:
            self._timer.start()
        self._refresh_recent_menu()

    def stop(self) -> None:
        """No more autosaves (the window is closing)."""
        self._timer.stop()

    def _status(self, text: str) -> None:
        self._surfaces.status(text)

    # ------------------------------------------------------------------ sessions

    def confirm_discard(self) -> bool:
        """True when nothing unsaved would be lost (saved, discarded, or nothing to lose)."""
        if not self.state.dirty:
            return True
        answer = dialogs.ask_unsaved(self._parent)
        if answer == "save":
            return self.save_session()
        if answer == "discard":
            self.discard_autosave(self.state.session_path)
            return True
        return False

    def new_session(self) -> None:
        """An untitled inspection of the demo input, without the old receipt history."""
        if not self.confirm_discard():
            return
        self.state.session_path = None
        self.state.set_session(None)
        self.state.set_mutant(None)
        self._surfaces.input_panel.load_fixture(DEMO_FIXTURE)
        self.state.dirty = False

    def open_session_dialog(self) -> None:
        """File → Open: ask (after unsaved work is dealt with), then open."""
        if not self.confirm_discard():
            return
        path = dialogs.choose_open_file(self._parent, "Open session", "Sessions (*.h5 *.hdf5)")
        if path:
            self.open_session(path)

    def open_session(
        self, path: str, *, interactive: bool = True, as_template: bool = False
    ) -> bool:
        """Load a session file; on any error say why and keep the current state.

        Args:
            path: the ``.h5`` file.
            interactive: False re-raises errors instead of showing them (scripted use).
            as_template: load it as an untitled inspection (the bundled demo), so Save never
                overwrites the original.

        Raises:
            Exception: only when ``interactive`` is False (the caller reports).
        """
        try:
            from inspector.records.sessions.session import load_session

            session = load_session(path)
            problem = session.problem()
            check_bench_rows(session.bench_meta)
        except Exception as exc:
            if not interactive:
                raise
            dialogs.show_error(self._parent, "Cannot open session", f"{path}: {exc}")
            self._status(f"open failed: {exc}")
            return False
        self.state.set_mutant(None)
        self._surfaces.input_panel.set_values(
            x=np.array(problem.x),
            weight=np.array(problem.weight),
            eps=repr(problem.eps),
            dtype=problem.dtype,
            row_stride=problem.row_stride,
            label=f"from {Path(path).name}",
            validated=problem,
        )
        try:
            self.state.restore_session(session, path, as_template=as_template)
        except Exception as exc:  # a part the reader let through that a view cannot show
            self.state.session_path = None
            if not interactive:
                raise
            dialogs.show_error(
                self._parent, "Cannot show session", f"{path}: {type(exc).__name__}: {exc}"
            )
            self._status(f"open failed: {exc}")
            return False
        if not as_template:
            self.add_recent(path)
            self._stamp(path)
        self._status(f"Opened {path}.")
        if interactive and not as_template:
            self._offer_receipt_kernel(session.receipt_json)
        return True

    def _offer_receipt_kernel(self, receipt_json: str | None) -> None:
        """The receipt is of a user kernel found unchanged here: offer to load it (never
        without asking: the path comes from the file); otherwise say why its verdict stays
        "receipt of another kernel"."""
        from inspector.model import kernel_choice

        what, text = kernel_choice.receipt_kernel(receipt_json, self.state.kernel)
        if what == "offer" and dialogs.ask_load_kernel(self._parent, text):
            self._surfaces.load_kernel(text)
        elif what in ("missing", "changed"):
            self._status(f"Opened the session; {text}.")

    def save_session(self) -> bool:
        """File → Save: the session file, or Save As for an untitled inspection."""
        if not self.state.session_path:
            return self.save_session_as()
        return self.write_session(self.state.session_path)

    def save_session_as(self) -> bool:
        """File → Save As: ask for a path (``.h5`` added when missing), then save."""
        path = dialogs.choose_save_file(self._parent, "Save session", "Sessions (*.h5)")
        if not path:
            return False
        if not path.endswith((".h5", ".hdf5")):
            path += ".h5"
        return self.write_session(path)

    def _stamp(self, path: str) -> None:
        try:
            info = Path(path).stat()
        except OSError:
            return
        self._stamps[str(Path(path).absolute())] = (info.st_mtime_ns, info.st_size)

    def _changed_on_disk(self, path: str) -> bool:
        """Whether ``path`` is no longer the file this window last opened or saved there."""
        known = self._stamps.get(str(Path(path).absolute()))
        try:
            info = Path(path).stat()
        except OSError:
            return known is not None  # it was there and is gone: written over or removed
        return known is not None and known != (info.st_mtime_ns, info.st_size)

    def write_session(self, path: str) -> bool:
        """Save the state to ``path`` (atomically); it becomes the session file.

        The save holds the session's lock (``check --session`` runs take it too) and asks
        before it writes over a file that changed on disk since this window opened or saved it
        (another window's save, a run's); refusing either keeps the file as it is.
        """
        from inspector.records.locks import held, session_lock_path

        try:
            from inspector.records.sessions.session import save_session

            with held(session_lock_path(Path(path))) as got:
                if not got:
                    raise OSError(f"another run is writing {path}; save again when it is done")
                if self._changed_on_disk(path) and not dialogs.ask_overwrite_changed(
                    self._parent, path
                ):
                    self._status(f"not saved: {path} changed on disk; it is kept as it is")
                    return False
                session = self.state.to_session()
                save_session(path, session)
                self._stamp(path)
        except Exception as exc:
            dialogs.show_error(self._parent, "Cannot save session", f"{path}: {exc}")
            self._status(f"save failed: {exc}")
            return False
        self.state.set_session(session)
        previous_path = self.state.session_path
        self.state.session_path = path
        self.state.dirty = False
        self.add_recent(path)
        self._status(f"Saved {path}.")
        self.discard_autosave(previous_path)
        self.discard_autosave(path)
        return True

    # ------------------------------------------------------------------ autosave & recovery

    def autosave(self) -> str | None:
        """Write unsaved work to the autosave file (never to the session file itself)."""
        if not self.state.dirty or self.state.problem is None or self._surfaces.closed():
            return None
        try:
            from inspector.records.sessions.autosave import write_autosave

            target = write_autosave(
                self.state.to_session(), self.state.session_path, self.autosave_dir
            )
        except Exception as exc:  # autosave must never disturb the user's work
            self._status(f"autosave failed: {exc}")
            return None
        self._status(f"Autosaved to {target}.")
        return str(target)

    def discard_autosave(self, path: str | None) -> None:
        """Remove the autosave of ``path`` (None: of the untitled inspection), if any."""
        try:
            from inspector.records.sessions.autosave import discard_autosave

            discard_autosave(path, self.autosave_dir)
        except Exception as exc:
            self._status(f"could not remove the autosave: {exc}")

    def offer_recovery(self) -> bool:
        """After a crash: offer the autosave of this (or the untitled) session; True if opened."""
        from inspector.records.sessions.autosave import recovery_candidate

        candidate = recovery_candidate(self.state.session_path, self.autosave_dir)
        if candidate is None:
            return False
        if not dialogs.ask_recover(self._parent, str(candidate)):
            self.discard_autosave(self.state.session_path)
            return False
        original = self.state.session_path
        if not self.open_session(str(candidate), as_template=True):
            from inspector.records.sessions.autosave import set_aside

            try:
                self._status(
                    f"The autosave could not be opened; set aside as {set_aside(candidate)}."
                )
            except OSError:
                self.discard_autosave(self.state.session_path)
            return False
        self.state.session_path = original  # saving writes the real file, not the autosave
        self.state.dirty = True
        self._status(f"Recovered unsaved work from {candidate}.")
        return True

    # ------------------------------------------------------------------ receipts

    def export_receipts(self) -> bool:
        """Write receipt.json + receipt.csv for the check on show and show the reparse result:
        a check of this input (of whichever kernel: its receipt names it), or the saved receipt
        of a reopened session's check, written byte for byte as the file holds it."""
        window, state = self._parent, self.state
        if not state.check_of_input:
            record = state.record()
            pair = record.receipt if record is not None and record.saved is not None else None
            if pair is not None and not record.stale.startswith("the input"):
                return self._export_saved(pair)
            dialogs.show_error(window, "Export receipts", "Run the check on this input first.")
            return False
        folder = dialogs.choose_directory(window, "Export receipts into folder")
        if not folder:
            return False
        try:
            from inspector.records.receipts import receipt

            written = receipt.write_receipts(state.check_result, folder)
        except Exception as exc:
            dialogs.show_error(window, "Export receipts", f"{folder}: {exc}")
            self._status(f"export failed: {exc}")
            return False
        check = written.get("export_check", {}) if isinstance(written, dict) else {}
        ok = isinstance(check, dict) and check.get("status") == "passed"
        problems = check.get("problems") if isinstance(check, dict) else None
        text = f"receipts written to {folder}; reparse of both files {'passed' if ok else 'FAILED'}"
        self._surfaces.log(text + (f": {'; '.join(map(str, problems))}" if problems else ""))
        self._surfaces.add_to_verdict(text)
        self._status(text)
        try:
            json_text = (Path(folder) / receipt.JSON_NAME).read_text(encoding="utf-8")
            csv_text = (Path(folder) / receipt.CSV_NAME).read_text(encoding="utf-8")
            state.exported = (state.check_result, (json_text, csv_text))
            session = state.session or state.to_session()
            if state.recorded_check is state.check_result:
                # History kept this check's receipt when it ended: the written pair (with its
                # export check) takes its place there, not a second entry.
                kept = state.check_result.receipt_texts
                for record in session.receipt_history:
                    if kept is not None and record.json_text == kept[0]:
                        record.json_text, record.csv_text = json_text, csv_text
                session.receipt_json, session.receipt_csv = json_text, csv_text
            else:
                session.record_receipts(json_text, csv_text, passed=state.check_result.passed)
            state.set_session(session)
            state.mark_dirty()
        except Exception as exc:  # the files are written; keeping them in the session is a bonus
            self._surfaces.log(f"(receipts not kept in the session: {exc})")
        return ok

    def _export_saved(self, pair: tuple[str, str]) -> bool:
        """Write a saved check's receipt pair as the session holds it, then verify it."""
        folder = dialogs.choose_directory(self._parent, "Export receipts into folder")
        if not folder:
            return False
        from inspector.model.record import write_receipt_pair

        try:
            verified = write_receipt_pair(pair, folder)
        except OSError as exc:
            dialogs.show_error(self._parent, "Export receipts", f"{folder}: {exc}")
            self._status(f"export failed: {exc}")
            return False
        text = (
            f"saved receipts written to {folder} as the session holds them; independent "
            f"verify {'passed' if verified.ok else 'FAILED'}"
        )
        problems = verified.problems
        self._surfaces.log(text + (f": {'; '.join(problems[:3])}" if problems else ""))
        self._surfaces.add_to_verdict(text)
        self._status(text)
        return verified.ok

    # ------------------------------------------------------------------ benchmark records

    def open_bench_record_dialog(self) -> None:
        """File → Open benchmark record: ask for a ``results.json``, then show it."""
        path = dialogs.choose_open_file(
            self._parent, "Open benchmark record", "Benchmark results (*.json)"
        )
        if path:
            self.open_bench_record(path)

    def open_bench_record(self, path: str) -> bool:
        """Show a ``results.json`` of ``python main.py bench`` (a record from a GPU machine).

        The file is read and checked by ``kernels.bench.read_json`` (schema, and every row's
        fields and numbers); on any error the view keeps what it showed and the error names the
        file and the field. The rows go into the session like a run of this machine, with the
        record's device, start time and file name as their source.
        """
        window = self._parent
        if self._surfaces.busy():
            return False
        try:
            from kernels.bench import read_json

            report = read_json(path)
        except Exception as exc:
            dialogs.show_error(window, "Cannot open benchmark record", str(exc))
            self._status(f"open record failed: {exc}")
            return False
        bench = bench_from_record(report, Path(path).name)
        self._surfaces.show_bench()
        self.state.set_bench(bench)
        self._status(f"bench record: {len(bench['rows'])} measurements on {bench['source']}.")
        self.state.mark_dirty()
        return True

    # ------------------------------------------------------------------ recent files

    def recent_files(self) -> list[str]:
        """The recent sessions, newest first, as the settings hold them."""
        value = self._surfaces.settings.value("recent", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def add_recent(self, path: str) -> None:
        """Put ``path`` first in the recent files (settings and menu)."""
        self._surfaces.settings.setValue("recent", recent_with(self.recent_files(), path))
        self._refresh_recent_menu()

    def _refresh_recent_menu(self) -> None:
        menu = self._surfaces.recent_menu
        menu.clear()
        recent = self.recent_files()
        for path in recent:
            action = menu.addAction(path)
            action.triggered.connect(lambda _=False, p=path: self._open_recent(p))
        menu.setEnabled(bool(recent))

    def _open_recent(self, path: str) -> None:
        if self.confirm_discard():
            self.open_session(path)
