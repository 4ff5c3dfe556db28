"""An nbconvert preprocessor that exports each report as its static HTML: an output that carries
both a widget view and `text/html` (a report run in a live kernel) keeps only the HTML, because
nbconvert prefers the widget view, whose JavaScript comes from a CDN and needs the widget state saved
in the notebook: offline, or without that state, the export would show no report at all.

`tileworkbench lab` writes `jupyter_nbconvert_config.json` and `jupyter_server_config.json` that turn
it on into `.jupyter/` of the notebooks' folder and puts that folder on JupyterLab's
`JUPYTER_CONFIG_PATH`: JupyterLab's "Save and Export Notebook As > HTML" and `jupyter nbconvert` in
its terminals use it. Elsewhere:

    jupyter nbconvert --to html \
        --HTMLExporter.preprocessors=tileworkbench.workbench.nbconvert_static.StaticReports NB.ipynb
"""

from __future__ import annotations

import json
from pathlib import Path

from nbconvert.preprocessors import Preprocessor

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
NAME = f"{__name__}.StaticReports"
# what the config files hold: the HTML exporters (lab, classic, and webpdf that renders through it)
CONFIG = {"HTMLExporter": {"preprocessors": [NAME]}}
CONFIG_FILES = ("jupyter_nbconvert_config.json", "jupyter_server_config.json")


class StaticReports(Preprocessor):
    """Drop the widget view of every output that has static HTML beside it."""

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data and "text/html" in data:
                del data[WIDGET_VIEW]
        return cell, resources


def write_config(folder: Path) -> list[str]:
    """Write the config files into `folder` where there are none (a file of the user's is kept as
    it is); the names of those written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in CONFIG_FILES:
        path = folder / name
        if not path.exists():
            path.write_text(json.dumps(CONFIG, indent=1) + "\n")
            written.append(name)
    return written
