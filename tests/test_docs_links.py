"""Every relative link and image in the README, CONTRIBUTING, the guides and the benchmarks page resolves.

A link's file must exist, relative to the page, and its ``#anchor``, where it has one, must be a heading of the
target page (as GitHub makes anchors: lower case, punctuation dropped, spaces as hyphens, ``-1``, ``-2``... for
repeats) or an ``<a id>``. Links with a scheme (``https:``, ``mailto:``) are left alone, and so is anything in a
code block or a code span. ``make docs`` checks the same links once more as the site sees them.

Chart images need no exception: ``benchmarks/charts.py`` writes a chart's line into the benchmarks page only
once it has written the chart.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").glob("*.md")]
)

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target "title") and ![alt](target), text allowing one level of nested brackets (an image in a link)
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML = re.compile(r"<(?:a|img)\s[^>]*?(?:href|src)=\"([^\"]+)\"", re.IGNORECASE)
HTML_ANCHOR = re.compile(r"<a\s[^>]*?(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def prose_lines(text: str, *, code_spans: bool = False) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with code spans blanked out unless ``code_spans``."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line if code_spans else CODE_SPAN.sub("", line)))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text as rendered, lower case, without punctuation, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link or an image shows its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    text = page.read_text(encoding="utf-8")
    seen: Counter[str] = Counter()
    found = set()
    for _, line in prose_lines(text, code_spans=True):  # a heading's code span is part of its anchor
        found.update(HTML_ANCHOR.findall(CODE_SPAN.sub("", line)))
        if m := HEADING.match(line):
            base = slug(m[2])
            found.add(base if not seen[base] else f"{base}-{seen[base]}")
            seen[base] += 1
    return frozenset(found)


def links(page: Path) -> list[tuple[int, str]]:
    out = []
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        targets = INLINE.findall(line) + HTML.findall(line)
        if m := REFERENCE.match(line):
            targets.append(m[1])
        out += [(number, target) for target in targets]
    return out


def problem(page: Path, target: str) -> str | None:
    """What is wrong with ``target`` as a link from ``page``, or None."""
    if SCHEME.match(target):
        return None
    path, _, anchor = target.partition("#")
    resolved = (ROOT / path.lstrip("/")) if path.startswith("/") else (page.parent / path) if path else page
    if not resolved.exists():
        return f"{resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved} does not exist"
    if not anchor:
        return None
    if resolved.is_dir() or resolved.suffix != ".md":
        return None if re.fullmatch(r"L\d+(-L\d+)?", anchor) else f"#{anchor}: only Markdown pages have anchors"
    if anchor not in anchors(resolved):
        return f"no heading of {resolved.relative_to(ROOT)} makes the anchor #{anchor}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    broken = [
        f"{page.relative_to(ROOT)}:{number}: ({target}): {why}"
        for number, target in links(page)
        if (why := problem(page, target)) is not None
    ]
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_checker_finds_what_it_checks() -> None:
    """The pages hold links and anchors, so a checker that found none would pass for the wrong reason."""
    assert sum(len(links(page)) for page in PAGES) > 50
    assert {"export-import-copy", "schemakit-serve"} <= anchors(ROOT / "docs" / "cli.md")
    assert slug("The schema browser: `http://127.0.0.1:8081/ui/`") == "the-schema-browser-http1270018081ui"
    assert problem(ROOT / "README.md", "docs/cli.md#no-such-heading") is not None
    assert problem(ROOT / "README.md", "docs/no-such-page.md") is not None
