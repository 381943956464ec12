"""notebooks/01_tour.ipynb runs top to bottom."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ORACLES_REQUIRED

NOTEBOOK = Path(__file__).parent.parent / "notebooks" / "01_tour.ipynb"


def test_tour_notebook_executes(toolchain, torch, tmp_path):
    try:
        import nbclient
        import nbformat
    except ImportError:
        if ORACLES_REQUIRED:
            pytest.fail("the notebook extra is required in CI (pip install '.[notebook]')")
        pytest.skip("nbclient is not installed")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    outputs = "".join(o.get("text", "") for cell in notebook.cells
                      for o in cell.get("outputs", []))
    assert "error: operator '&' does not accept float32" in outputs
    assert "hivm" in outputs and "refused:" in outputs
    errors = [o for cell in notebook.cells for o in cell.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
