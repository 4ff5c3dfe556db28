"""Source-line linking that lands: the small JavaScript that scrolls every code panel to the chosen
kernel line and turns a click on an IR/PTX/SASS line into choosing its source line.

The static HTML works without it (CSS radios highlight the lines); the script is progressive
enhancement there, and in the widget view it runs as an anywidget (`Linker`) when anywidget is installed.
Lines carry `sN` classes (highlight.py), so the script only looks classes up; it renders nothing.
"""

from __future__ import annotations

import functools

# scrollAll(root, line): bring the first `.sN` of every visible code panel into view, a quarter down.
# sourceOf(event): the kernel line of the clicked code line (its first `sN` class), or null.
_SHARED_JS = r"""
function twScrollAll(root, line) {
  if (line === null || line === undefined) return 0;
  let moved = 0;
  root.querySelectorAll("pre.twhl").forEach((pre) => {
    if (!pre.offsetParent) return;
    const hit = pre.querySelector(".s" + line);
    if (!hit) return;
    const offset = hit.getBoundingClientRect().top - pre.getBoundingClientRect().top;
    pre.scrollTop += offset - pre.clientHeight / 4;
    moved += 1;
  });
  return moved;
}
function twSourceOf(event) {
  const row = event.target.closest ? event.target.closest("pre.twhl .twl") : null;
  if (!row) return null;
  const cls = Array.from(row.classList).find((c) => /^s\d+$/.test(c));
  return cls ? Number(cls.slice(1)) : null;
}
"""

_STATIC_JS = r"""
(function () {
  const uid = "%(uid)s";
  const root = document.getElementById(uid);
  if (!root || root.dataset.twlinked) return;
  root.dataset.twlinked = "1";
  const current = () => {
    const radio = root.querySelector('input[name="' + uid + '-src"]:checked');
    return radio ? radio.id.split("-src-")[1] : null;
  };
  const scroll = () => setTimeout(() => twScrollAll(root, current()), 0);
  root.addEventListener("change", scroll);
  root.addEventListener("toggle", scroll, true);  // a section opened (toggle does not bubble)
  root.addEventListener("click", (event) => {
    const line = twSourceOf(event);
    const radio = line === null ? null : document.getElementById(uid + "-src-" + line);
    if (radio) {
      radio.checked = true;
      setTimeout(() => twScrollAll(root, line), 0);
    }
  });
})();
"""

_WIDGET_ESM = r"""
function render({ model, el }) {
  const find = () => el.closest("." + model.get("root_class"));
  const scrollSoon = () => {
    for (const wait of [20, 150, 500]) {
      setTimeout(() => {
        const root = find();
        if (root) twScrollAll(root, model.get("line"));
      }, wait);
    }
  };
  const attach = () => {
    const root = find();
    if (!root) return false;
    if (root.dataset.twlinked) return true;
    root.dataset.twlinked = "1";
    root.addEventListener("click", (event) => {
      if (event.target.closest && event.target.closest(".lm-TabBar-tab")) {
        scrollSoon();  // a tab shown: scroll its panel to the chosen line
        return;
      }
      const line = twSourceOf(event);
      if (line !== null) {
        model.set("line", line);
        model.save_changes();
        scrollSoon();
      }
    });
    return true;
  };
  if (!attach()) {
    const timer = setInterval(() => { if (attach()) clearInterval(timer); }, 200);
  }
  model.on("change:line", scrollSoon);
  model.on("change:tick", scrollSoon);
}
export default { render };
"""


def static_script(uid: str) -> str:
    """The `<script>` of one static report (JupyterLab runs it in trusted output; GitHub drops it)."""
    return "<script>" + _SHARED_JS + _STATIC_JS % {"uid": uid} + "</script>"


def make_linker(root_class: str):
    """A `Linker` anywidget for the widget view whose root VBox has CSS class `root_class`, or None
    where anywidget is not installed (the view then highlights without scrolling)."""
    linker = _linker_class()
    return None if linker is None else linker(root_class=root_class)


@functools.cache
def _linker_class():
    try:
        import anywidget
        import traitlets
    except ImportError:
        return None

    class Linker(anywidget.AnyWidget):
        """Synchronizes the chosen kernel line with the browser, which scrolls the panels to it."""

        _esm = _SHARED_JS + _WIDGET_ESM
        line = traitlets.Int(None, allow_none=True).tag(sync=True)
        tick = traitlets.Int(0).tag(sync=True)
        root_class = traitlets.Unicode("").tag(sync=True)

    return Linker
