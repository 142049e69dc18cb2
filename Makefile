# Everything a fresh machine needs: `make run` and `make test` create .venv and install on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test lint typecheck format openapi docs bench bench-instructions bench-spark charts spark-jar wheel browser diagram-tools fault-tools soak clean

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -U pip wheel setuptools
	$(PY) -m pip install -q -e '.[test,streams,spark,auth,docs]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/schemakit serve

# ruff (lint and format), and the layering contracts of docs/architecture.md (pyproject.toml, [tool.importlinter]).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

# The packages checked are listed in pyproject.toml ([tool.mypy] files).
typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The Spark JVM engine is a small Java UDF compiled against pyspark's jars (javac from a JDK 17).
spark-jar: $(STAMP)
	@if command -v javac >/dev/null; then $(PY) -m serdes.spark.build_jar; \
	else echo "javac not found: Spark JVM engine not built, its tests skip. Install: apt-get install openjdk-17-jdk-headless"; fi

# A wheel carrying the Spark JVM engine's jar (setup.py compiles it during the build; needs javac and this venv's
# pyspark, hence no build isolation), so that its users need no JDK.
wheel: $(STAMP)
	SCHEMAKIT_SPARK_JAR=require $(PY) -m pip wheel --no-build-isolation --no-deps -w dist .

# The UI tests (tests/ui) drive Debian's headless Chromium with Selenium; they skip, naming this target, where
# it cannot be installed (not root, no apt).
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
		|| echo "chromium could not be installed: the UI tests skip"; \
	else echo "chromium not found: the UI tests skip. Install: make browser (as root), or apt-get install chromium chromium-driver"; fi

# The topology diagrams' checks (tests/streams/test_topology_render.py): Graphviz's dot parses the dot text, and
# Mermaid's own parser (npm's mermaid under jsdom, installed in .tools/mermaid) the flowcharts. Each test skips,
# naming this target, where its tool cannot be installed.
MERMAID_TOOLS := .tools/mermaid
diagram-tools:
	@if command -v dot >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null) \
		|| echo "graphviz could not be installed: the dot parse test skips"; \
	else echo "dot not found: the dot parse test skips. Install: make diagram-tools (as root), or apt-get install graphviz"; fi
	@if [ -f $(MERMAID_TOOLS)/node_modules/mermaid/package.json ]; then :; \
	elif command -v npm >/dev/null; then \
		npm install --prefix $(MERMAID_TOOLS) --no-audit --no-fund --silent mermaid@11.17.2 jsdom@24.1.3 >/dev/null \
		|| echo "mermaid could not be installed: the Mermaid parse test skips"; \
	else echo "npm not found: the Mermaid parse test skips. Install node and npm, then: make diagram-tools"; fi

# The network fault tests (tests/support/faults.py) put processes in network namespaces (iproute2's ip and tc)
# and inject resets and blackholes with iptables; they skip, naming this target, where it cannot be installed.
fault-tools:
	@if command -v iptables >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables iproute2 >/dev/null) \
		|| echo "iptables could not be installed: the network fault tests skip"; \
	else echo "iptables not found: the network fault tests skip. Install: make fault-tools (as root), or apt-get install iptables"; fi

# Three pytest workers (pytest-xdist), one test file at a time each, on 2 cores: most end-to-end tests wait on
# brokers and processes, so the machine has room for a third file. A fresh clone on 2 cores, the same tests:
# 2 workers 792.8 s, 3 workers 514.2 s of pytest; 3 workers with two more sessions' work on the machine (load 5-8)
# 766.3 s, every test passing.
# Each worker starts its own test broker and registry. PYTEST_WORKERS=0 runs everything in one process.
# Bytecode is written even where the environment sets PYTHONDONTWRITEBYTECODE: each worker would otherwise
# compile again, at every run, the ~700 modules pytest rewrites (tests, plugins, our packages): ~10 s more.
PYTEST_WORKERS ?= 3
test: $(STAMP) spark-jar browser diagram-tools fault-tools lint typecheck docs
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=15 $(PYTEST_ARGS)

# The chaos soak (tests/ha/test_soak.py) for 10 minutes (SOAK_SECONDS): random network faults, kill -9 and
# SIGSTOP under a registry and streams workload, then the invariants; it prints its figures and, on failure, the
# seed that replays it (SCHEMAKIT_SOAK_SEED=...). make test runs it for 60 s.
SOAK_SECONDS ?= 600
soak: $(STAMP) fault-tools
	SCHEMAKIT_SOAK_SECONDS=$(SOAK_SECONDS) $(PY) -m pytest -q -s -n 0 tests/ha/test_soak.py

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The documentation site (mkdocs.yml): --strict fails on a broken link or anchor and on a page left out of the
# navigation. Written to site/ (git-ignored); `$(VENV)/bin/mkdocs serve` previews it. The variable silences the
# theme's banner about its end of life.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# openapi.yaml is the app's own OpenAPI document; tests/registry/test_openapi.py fails when it is stale.
openapi: $(STAMP)
	$(PY) -m registry.http.openapi_file

bench: $(STAMP)
	command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)
	$(PY) benchmarks/registry_bench.py --json benchmarks/results/registry_bench.json
	$(PY) benchmarks/registry_memory.py --json benchmarks/results/registry_memory.json
	$(PY) benchmarks/serdes_bench.py --json benchmarks/results/serdes_bench.json
	$(PY) benchmarks/console_consume.py --json benchmarks/results/console_consume.json
	$(MAKE) $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python benchmarks/streams_bench.py --json benchmarks/results/streams_bench.json
	$(BENCH_VENV)/bin/python benchmarks/streams_windows_bench.py --json benchmarks/results/streams_windows_bench.json
	$(BENCH_VENV)/bin/python benchmarks/streams_joins_bench.py --json benchmarks/results/streams_joins_bench.json

# Instructions per operation under valgrind's callgrind (benchmarks/instructions.py): steady on a busy machine
# where timings are not. Installs valgrind from Debian when missing (as root); OPS picks operations (default all).
OPS ?=
bench-instructions: $(STAMP)
	@command -v valgrind >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null)
	$(PY) benchmarks/instructions.py $(OPS) --json benchmarks/results/instructions.json

bench-spark: $(STAMP) spark-jar
	$(PY) benchmarks/spark_decode.py --json benchmarks/results/spark_decode.json
	$(PY) benchmarks/spark_source.py --json benchmarks/results/spark_source.json

# One PNG per side-by-side comparison, from every benchmarks/results/*.json, into benchmarks/charts/; the chart
# lines of benchmarks/README.md are rewritten to show them. matplotlib is the `bench` extra.
charts: $(STAMP)
	$(PY) -c 'import matplotlib' 2>/dev/null || $(PY) -m pip install -q -e '.[bench]'
	$(PY) benchmarks/charts.py

# The streams benchmark runs Quix Streams side by side. quixstreams pins an older confluent-kafka, so it gets
# a venv of its own with the newer client put back (it works with it), leaving .venv untouched.
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed
# Quix Streams is pinned to the release the comparisons name: unpinned, pip picked 0.5.7 (pandas 1.5, broken on numpy 2).
$(BENCH_STAMP): pyproject.toml
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q -U pip wheel setuptools
	$(BENCH_VENV)/bin/python -m pip install -q -e '.[test,streams,auth]' 'quixstreams>=3.28,<4'
	$(BENCH_VENV)/bin/python -m pip install -q --no-deps --force-reinstall 'confluent-kafka>=2.16'
	touch $(BENCH_STAMP)

clean:
	rm -rf $(VENV) $(BENCH_VENV) build site *.egg-info serdes/spark/schemakit-spark.jar .tools
