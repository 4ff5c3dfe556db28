"""What pyproject.toml cannot say: the teaching notebooks live in notebooks/ (where binder, the tests
and build_notebooks.py find them) and ship inside the package as tileworkbench/notebooks/, which
`tileworkbench lab` copies to a folder of the user's."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["tileworkbench", "tileworkbench.*"])
    + ["tileworkbench.notebooks"],
    package_dir={"tileworkbench.notebooks": "notebooks"},
    package_data={"tileworkbench.notebooks": [
        "*.ipynb", "data/*.json", "images/*.png",
        # the puzzles, in subfolders too (`**` matches no folder as well)
        "puzzles/**/*.ipynb", "puzzles/**/*.json", "puzzles/**/*.png", "puzzles/**/*.py",
    ]},
)
