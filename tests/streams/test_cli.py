"""``python -m streams run module:app`` (what ``schemakit streams run`` calls): progress logging, and a
graceful SIGTERM that commits offsets, flushes the aggregates and writes the checkpoints."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from streams.log import TopicPartition, open_log
from streams.record_serdes import INT
from tests.streams.topologies import make_lines, reference_word_count
from tests.support.topics import create_topics, last_values, produce, read_to_end

REPO = Path(__file__).resolve().parents[2]

APP = """
from streams.app import StreamsApp
from tests.streams.topologies import word_count

app = StreamsApp(word_count("text", "counts"), "cli-wc", "sqlite:///{log}", state_dir="{state}",
                 commit_interval_ms=600_000, progress_interval_s=0.2)
"""


def test_run_until_sigterm_commits_and_closes(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    lg = open_log(f"sqlite:///{log_dir}")
    create_topics(lg, 2, "text", "counts")
    lines = make_lines(300)
    produce(lg, "text", [(f"l{i}", line) for i, line in enumerate(lines)], value=str.encode)
    total = len(lines) + sum(len(line.split()) for line in lines)  # source records + repartitioned words
    (tmp_path / "wcapp.py").write_text(APP.format(log=log_dir, state=tmp_path / "state"))
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streams", "run", "wcapp:app"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            output.append(line)
            m = re.search(r"(\d+) records processed", line)
            if m and int(m.group(1)) >= total:
                break
        else:
            raise AssertionError("no progress line reported all records processed:\n" + "".join(output))
        # Nothing committed yet: the commit interval is ten minutes.
        inputs = [TopicPartition("text", p) for p in range(2)]
        assert lg.committed("cli-wc", inputs) == {tp: None for tp in inputs}
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=30)
        output.append(rest)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log_text = "".join(output)
    assert proc.returncode == 0, log_text
    assert "active ['0_0', '0_1', '1_0', '1_1'], replicas []" in log_text
    assert "RUNNING -> PENDING_SHUTDOWN" in log_text and "PENDING_SHUTDOWN -> NOT_RUNNING" in log_text
    ends = lg.end_offsets("text")
    assert lg.committed("cli-wc", inputs) == {tp: ends[tp.partition] for tp in inputs}
    assert last_values(read_to_end(lg, "counts", quiet=0.3), value=INT.deserialize) == reference_word_count(lines)
    assert (tmp_path / "state" / "cli-wc" / "1_0" / ".checkpoint").is_file()
    lg.close()


def test_bad_app_spec_is_reported(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "streams", "run", "os:path"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "os:path is a module, not a StreamsApp" in result.stderr
