"""The library's public surface, pinned: what users may import from `forensics`."""

from __future__ import annotations

import subprocess
import sys

import forensics


def test_the_public_names_are_exactly_these():
    assert sorted(forensics.__all__) == sorted(
        ["FileReport", "ForensicsError", "IngestResult", "Report", "__version__", "analyze", "ingest", "schema"]
    )


def test_every_public_name_resolves_to_what_it_says():
    from forensics import FileReport, ForensicsError, IngestResult, Report, analyze, ingest, schema

    assert callable(ingest) and callable(analyze)
    assert issubclass(ForensicsError, Exception)
    assert {FileReport.__name__, IngestResult.__name__, Report.__name__} == {"FileReport", "IngestResult", "Report"}
    assert schema.TS == "ts" and "root_cause" in schema.ROLES


def test_ingest_stays_the_function_once_the_ingestion_package_is_loaded():
    # The stage packages are nouns (`forensics.ingestion`), never the public verbs: a subpackage
    # `forensics.ingest` would replace the function on the package the moment it was imported.
    code = "import forensics.ingestion.run, forensics.diagnosis, forensics; print(callable(forensics.ingest), callable(forensics.analyze))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_importing_forensics_does_not_load_polars():
    # `forensics --help` and `import forensics` stay fast: the heavy modules load on first use.
    code = "import sys, forensics; print('polars' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
