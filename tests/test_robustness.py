"""The whole pipeline on damaged logs: whatever the lines say, analysis and report never fail.

The parsers' property tests hold ingest alone; these hold what comes after it too (time
alignment, root cause, plots, the postmortem, alert rules), over the shipped incidents' logs
with lines cut, spliced, given junk and impossible times, as a mutation fuzz of this pipeline
found three failures in the report and ingest that no parser test could see.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from forensics import analyze
from forensics.errors import NoInputError
from forensics.report.postmortem import write_all
from tests.conftest import REPO

SAMPLE = REPO / "samples" / "cache-corruption"
FILES = sorted(
    p.relative_to(SAMPLE)
    for p in SAMPLE.rglob("*")
    if p.is_file() and p.suffix in (".log", ".journal", ".json") and p.name != "ground_truth.json"
)
JUNK = [
    "\x00",
    "\x1b[0;36m",
    "\r",
    "{",
    "]",
    "99999999999999999999",
    "9999-12-31T23:59:59.999999Z ",
    "0001-01-01T00:00:00Z ",
    "INFO 02-30 25:61:61 ",
    "(EngineCore_DP0 pid=1) ",
    "[rank0]:",
    "Traceback (most recent call last):",
    "stdout P ",
    "GPU KV cache usage: 1e309%",
    "Avg generation throughput: nan tokens/s, ",
    "Cache corruption detected in block 7",
    "\ud83d",
]
EDITS = st.tuples(
    st.sampled_from(["cut", "insert", "drop", "repeat", "year"]),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.sampled_from(JUNK),
)


def _edit(lines: list[str], edit: tuple[str, int, int, str]) -> None:
    kind, i, j, junk = edit
    if not lines:
        return
    i %= len(lines)
    line = lines[i]
    if kind == "cut":
        lines[i] = line[: j % (len(line) + 1)]
    elif kind == "insert":
        k = j % (len(line) + 1)
        lines[i] = line[:k] + junk + line[k:]
    elif kind == "drop":
        del lines[i]
    elif kind == "repeat":
        lines.insert(j % len(lines), line)
    else:
        lines[i] = line.replace("2025", ("9999", "0001", "1969", "2038")[j % 4])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(FILES), st.lists(EDITS, max_size=12)),
        min_size=1,
        max_size=4,
        unique_by=lambda f: f[0],
    )
)
# A clock at year 9999 on one line of a journal whose other lines have no year: its reference
# time, rounded past year 9999, failed the run (`schema.TS_RANGE`).
@example([(Path("nodes/gpu-node-1/kubelet.journal"), [("insert", 0, 0, "9999-12-31T23:59:59.999999Z ")])])
def test_analysis_and_report_are_written_whatever_the_lines_say(files):
    with tempfile.TemporaryDirectory() as d:
        logs = Path(d) / "logs"
        for rel, edits in files:
            lines = (SAMPLE / rel).read_text().split("\n")
            for edit in edits:
                _edit(lines, edit)
            out = logs / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("\n".join(lines), errors="surrogatepass")
        try:
            result = analyze(logs)
        except NoInputError:  # (every line edited away: said so, with what to do, not a failure)
            return
        for f in result.ingest.files:
            assert f.lines == f.parsed + f.folded + f.unparsed, f
        written = write_all(result, Path(d) / "report", fmt="html", command="forensics analyze logs")
        assert written["postmortem"].read_text().startswith("#")
