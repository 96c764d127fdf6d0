"""Docstrings and the README cite documents that exist in the repository, by path."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CITED = re.compile(r"\bdocs/[\w.-]+\.md\b")
UPSTREAM_ONLY = re.compile(r"\b(PARITY|ARCHITECTURE) ?§")  # the shared design notes, not in the repository


def test_every_cited_document_exists_and_none_outside_the_repository_is_cited() -> None:
    sources = [*sorted((REPO / "mpijob").rglob("*.py")), REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    assert len(sources) > 50
    missing, dangling = [], []
    for path in sources:
        text = path.read_text()
        missing += [f"{path.relative_to(REPO)}: {doc}" for doc in sorted(set(CITED.findall(text)))
                    if not (REPO / doc).is_file()]
        dangling += [f"{path.relative_to(REPO)}: {m.group(0)}" for m in UPSTREAM_ONLY.finditer(text)]
    assert not missing, f"cites a document the repository does not have: {missing}"
    assert not dangling, f"cites a section of a document outside the repository: {dangling}"
