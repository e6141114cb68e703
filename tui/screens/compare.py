"""The revisions of one answer side by side (ctrl+k): the settings that differ and what each run cost.

Left / Right pick a revision, Enter shows it in the transcript, Esc closes. The table is built from the
saved revisions by `tui.revision_compare`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from ..revision_compare import compare
from ..records import Revision


class CompareScreen(ModalScreen[int | None]):
    """Dismisses with the number of the revision to show, or None."""

    BINDINGS = [Binding("escape,ctrl+k", "dismiss(None)", "Close")]

    DEFAULT_CSS = """
    CompareScreen DataTable {
        height: auto;
        max-height: 24;
    }
    CompareScreen #compare DataTable {
        max-height: 60vh;   /* the title and the keys' line stay on a 24-row terminal */
    }
    """


    def __init__(self, revisions: Sequence[Revision], shown: int | None, defaults: Mapping[str, Any]):
        super().__init__(classes="dialog-screen")
        self.revisions = list(revisions)
        self.shown = shown
        self.table = compare(self.revisions, shown, defaults)

    def compose(self) -> ComposeResult:
        with VerticalScroll(can_focus=False, classes="dialog", id="compare"):
            count = len(self.revisions)
            yield Static(f"Revisions of this answer ({count})", classes="dialog-title", markup=False)
            table = DataTable(cursor_type="column", zebra_stripes=True, id="compare-table")
            table.fixed_columns = 1  # the row names stay when many revisions scroll sideways
            table.add_column("", key="what")
            for revision, title in zip(self.revisions, self.table.columns):
                table.add_column(title, key=str(revision.number))
            for what, cells in self.table.rows:
                table.add_row(what, *cells, key=what)
            yield table
            yield Static("← → pick a revision · Enter shows it · Esc closes · "
                         "change a setting in the sampler panel (ctrl+b), then ctrl+g adds a revision",
                         classes="dialog-hint", markup=False)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        numbers = [r.number for r in self.revisions]
        table.move_cursor(column=1 + (numbers.index(self.shown) if self.shown in numbers else len(numbers) - 1))
        table.focus()

    def action_show(self) -> None:
        column = self.query_one(DataTable).cursor_column
        self.dismiss(self.revisions[column - 1].number if column >= 1 else None)

    def on_data_table_column_selected(self, event: DataTable.ColumnSelected) -> None:
        event.stop()
        self.action_show()
