"""``openapi.yaml``, written from the app's own OpenAPI document (``registry/http/openapi.py``).

python -m registry.http.openapi_file            # rewrite openapi.yaml (make openapi)
python -m registry.http.openapi_file --check    # exit 1 when openapi.yaml differs from the app's document
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from registry.http.api import build_api

SPEC_PATH = Path(__file__).resolve().parents[2] / "openapi.yaml"


def to_yaml(doc: dict[str, Any]) -> str:
    import yaml  # a test/dev dependency: the server itself serves the document as JSON

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True  # write shared parts out in full: no &anchors in a file people read

    def text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)

    Dumper.add_representer(str, text)
    return yaml.dump(doc, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=120)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m registry.http.openapi_file", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare with the committed file")
    ap.add_argument("--path", type=Path, default=SPEC_PATH)
    args = ap.parse_args(argv)
    text = to_yaml(build_api().openapi())
    if args.check:
        if args.path.read_text() != text:
            print(f"{args.path} differs from the app's document: run `make openapi`", file=sys.stderr)
            return 1
        return 0
    args.path.write_text(text)
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
