"""Every relative link in README.md, docs/ and the plugins' READMEs reaches a file, and every
`#anchor` a heading of that file (as GitHub makes a heading's anchor)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "plugins").glob("*/README.md")])
LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s#]*)(?:#([^)\s]+))?\)")


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation dropped (hyphens and
    underscores kept), spaces made hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text("utf-8"), flags=re.S)
    return {github_anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.+)$", text, re.M)}


def links(page: Path) -> list[tuple[str, str | None]]:
    text = re.sub(r"```.*?```", "", page.read_text("utf-8"), flags=re.S)
    return [(m.group(1), m.group(2)) for m in LINK.finditer(text)]


def test_github_anchor_follows_githubs_rule():
    assert github_anchor("9. The registry and plugins") == "9-the-registry-and-plugins"
    assert github_anchor("What `compare` prints") == "what-compare-prints"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_reaches_its_file_and_heading(page: Path):
    broken = []
    for target, anchor in links(page):
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}#{anchor}: no such heading in {path.relative_to(REPO)}")
    assert not broken, broken
