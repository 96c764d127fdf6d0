"""examples/notebooks/loss.ipynb in a real Jupyter kernel (nbclient + ipykernel) against the session's
local cluster: ≤ 10 lines submit a 4-node job, show a live progress bar, print the merged log and plot
the loss (issue 32 item 3; the spec's SC-001). Asserted on what the executed notebook holds, and on the
display messages the kernel sent while the job ran (nbclient keeps only the last state of an updated
display)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from mpijob.store.server_process import ServerInfo
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

from support import REPO, scaled

NOTEBOOKS = REPO / "examples" / "notebooks"
NOTEBOOK = NOTEBOOKS / "loss.ipynb"
NODES, STEPS = 4, 20  # the notebook's num_nodes, train.py's default STEPS
BAR = "mpijob-progress"  # the class of the SDK's HTML progress element (mpijob/sdk/progress_bar.py)
PERCENT = re.compile(r"(\d+)%")


class RecordingClient(NotebookClient):
    """nbclient, also keeping every version of the progress display the kernel sent, in order."""

    bars: list[str]

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        if msg["msg_type"] in ("display_data", "update_display_data"):
            html = msg["content"].get("data", {}).get("text/html", "")
            if BAR in html:
                self.bars.append(html)
        return super().process_message(msg, cell, cell_index)


def code_lines(nb: Any) -> list[str]:
    """The notebook's lines of code: code cells other than its clean-up, blank lines and comments left out."""
    return [line for cell in nb.cells if cell.cell_type == "code" and "cleanup" not in cell.metadata.get("tags", [])
            for line in cell.source.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def outputs(cell: Any, kind: str) -> list[Any]:
    return [o for o in cell.outputs if o.output_type == kind]


def stdout(cell: Any) -> str:
    return "".join(o.text for o in outputs(cell, "stream") if o.name == "stdout")


def cell_with(nb: Any, text: str) -> Any:
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and text in c.source]
    return cell


@pytest.fixture()
def executed(server: ServerInfo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Any, list[str]]:
    """The notebook run top to bottom in a fresh kernel whose `Client()` finds the session's server (the
    kernel inherits this environment; its IPython profile and history go to a temporary folder), with one
    cell added before the clean-up: it prints the loss values the notebook parsed, so they can be compared
    with the log it printed."""
    monkeypatch.setenv("MPIJOB_HOME", str(server.home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert "cleanup" in nb.cells[-1].metadata.get("tags", []), "the notebook's last cell deletes its job"
    nb.cells.insert(len(nb.cells) - 1, new_code_cell('import json\nprint("LOSSES", json.dumps(losses))'))
    client = RecordingClient(nb, timeout=int(scaled(300)), startup_timeout=int(scaled(120)), kernel_name="python3",
                             resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.bars = []
    client.execute()  # a cell that raises fails here (CellExecutionError, with its traceback)
    return nb, client.bars


def test_the_notebook_submits_follows_logs_and_plots_a_4_node_job(executed: tuple[Any, list[str]]) -> None:
    nb, bars = executed
    assert len(code_lines(nbformat.read(NOTEBOOK, as_version=4))) <= 10, "SC-001: ≤ 10 lines of code"

    # The live bar: one HTML output updated in place, seen mid-run with the program's own report, ending at 100%
    wait_cell = cell_with(nb, "show_progress=True")
    (shown,) = outputs(wait_cell, "display_data")
    final = shown.data["text/html"]
    assert BAR in final and 'value="100"' in final and "100%" in final and "Succeeded" in final, final
    assert "100%" in shown.data["text/plain"] and "Succeeded" in shown.data["text/plain"]
    percentages = [int(m[1]) for html in bars if (m := PERCENT.search(html))]
    running = [html for html in bars if "Running" in html and (m := PERCENT.search(html)) and 0 < int(m[1]) < 100]
    assert running, f"no update showed the running job part-way (percentages seen: {percentages})"
    assert any("loss=" in html for html in running), running[-1]  # the program's metrics, from trainerStatus
    assert percentages == sorted(percentages), f"the bar went backwards: {percentages}"
    assert bars[-1] == final

    # The merged log: every rank's own line, and rank 0's loss at every step
    log = stdout(cell_with(nb, "client.logs("))
    for rank in range(NODES):
        assert re.search(rf"^rank {rank}/{NODES}: \d+ samples$", log, re.M), f"rank {rank} missing from:\n{log}"
    printed = [float(v) for v in re.findall(rf"^step \d+/{STEPS} loss (\S+)$", log, re.M)]
    assert len(printed) == STEPS, log

    # The loss the notebook parsed is the log's, it fell, and the plot is a PNG image
    (parsed,) = [json.loads(line.removeprefix("LOSSES ")) for line in stdout(nb.cells[-2]).splitlines()
                 if line.startswith("LOSSES ")]
    assert parsed == printed
    assert parsed[-1] < parsed[0] / 10, parsed
    images = [o.data["image/png"] for o in outputs(cell_with(nb, "plt.axes"), "display_data") if "image/png" in o.data]
    assert len(images) == 1 and base64.b64decode(images[0]).startswith(b"\x89PNG\r\n\x1a\n")


def test_docs_show_the_notebooks_code_as_it_is() -> None:
    """docs/notebooks.md quotes the notebook's code cells (all but the clean-up), in order, word for word."""
    quoted = re.findall(r"```python\n(.*?)\n```", (REPO / "docs" / "notebooks.md").read_text(), re.S)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code" and "cleanup" not in c.metadata.get("tags", [])]
    assert quoted[:len(cells)] == cells
