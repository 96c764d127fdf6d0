"""The tree and its two descriptions agree: every package of `mpijob/` appears in the README's layout
block (at its place in the indented tree) and in docs/architecture.md, and neither names a folder that
does not exist. A package added, moved or removed without its description fails here."""

from __future__ import annotations

import re

from support import REPO

PACKAGE = REPO / "mpijob"
FOLDER = re.compile(r"^( *)([\w.-]+)/(?:\s|$)")  # "  api/   pure: ..." in the README's tree


def packages() -> set[str]:
    """Every package under mpijob/, as its path there with a trailing slash: "api/", "api/kueue/"."""
    return {f"{p.parent.relative_to(PACKAGE).as_posix()}/" for p in PACKAGE.rglob("__init__.py")
            if p.parent != PACKAGE}


def readme_tree() -> set[str]:
    """The folders under `mpijob/` in the README's layout block, nesting read from the indentation."""
    text = (REPO / "README.md").read_text()
    block = text.split("## Repository layout", 1)[1].split("```", 2)[1]
    stack: list[tuple[int, str]] = []  # (indent, folder) of the folders enclosing the current line
    found = set()
    for line in block.splitlines():
        m = FOLDER.match(line)
        if m is None:
            continue
        indent = len(m[1])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m[2]))
        path = "/".join(name for _, name in stack)
        if path.startswith("mpijob/"):
            found.add(path.removeprefix("mpijob/") + "/")
    return found


def test_the_readme_layout_lists_every_package_and_only_packages() -> None:
    documented, real = readme_tree(), packages()
    assert not real - documented, f"packages missing from the README's layout: {sorted(real - documented)}"
    assert not documented - real, f"the README's layout names folders that are not packages: {sorted(documented - real)}"


def test_the_architecture_doc_names_every_package() -> None:
    text = (REPO / "docs" / "architecture.md").read_text()
    missing = sorted(p for p in packages() if f"{p}" not in text.replace("mpijob/", ""))
    assert not missing, f"docs/architecture.md does not mention: {missing}"
