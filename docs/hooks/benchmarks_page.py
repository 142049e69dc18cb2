"""mkdocs hook: the site's benchmarks page is ``benchmarks/README.md`` itself, so the figures have one copy.

That file and its charts (``benchmarks/charts/*.png``) join the site at the paths they have in the repository,
``benchmarks/README.md`` (served at ``benchmarks/``) and ``benchmarks/charts/``, so the page's relative links hold
in both places. The guides link to it as ``../benchmarks/README.md``, which is right in the repository; in the
site they sit one level higher (``docs/`` is the site's root), so that prefix becomes ``benchmarks/`` there.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

FROM_GUIDE = re.compile(r"\]\(\.\./benchmarks/")


def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    benchmarks = Path(config.config_file_path).parent / "benchmarks"
    files.append(File.generated(config, "benchmarks/README.md", abs_src_path=str(benchmarks / "README.md")))
    for chart in sorted((benchmarks / "charts").glob("*.png")):
        files.append(File.generated(config, f"benchmarks/charts/{chart.name}", abs_src_path=str(chart)))
    return files


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    if page.file.src_uri.startswith("benchmarks/"):
        return markdown
    return FROM_GUIDE.sub("](benchmarks/", markdown)
