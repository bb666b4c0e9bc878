"""tests/e2e/e2e_common.py: what the end-to-end tests share: running the ladder
binary, reading a JSON file, a run's summary rows, checking a report or run
summary against its JSON Schema (reports/*.schema.json), and running one named
case in a temporary directory."""
import json
import os
import pathlib
import subprocess
import tempfile

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parents[2]
# A few short steps of the tiny preset on one CPU thread.
TINY = ["--device", "cpu", "--preset", "tiny", "--steps", "3", "--warmup", "1", "--threads", "1"]


def load(path):
    return json.loads(pathlib.Path(path).read_text())


def validate(path):
    """Validates a rung report or run summary against the schema its `kind` names; returns it."""
    data = load(path)
    schema_file = {"ladder.rung_report": "rung_report", "ladder.run_summary": "run_summary"}[data["kind"]]
    schema = load(ROOT / "reports" / f"{schema_file}.schema.json")
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(data)
    return data


def run_ladder(ladder, args, env=None, check_code=None):
    """Runs `ladder args...` with `env` added to the environment; with
    check_code, asserts the exit code (showing stdout and stderr if not)."""
    p = subprocess.run([ladder, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check_code is not None:
        assert p.returncode == check_code, f"exit {p.returncode} != {check_code}\n{p.stdout}\n{p.stderr}"
    return p


def summary_rows(run_dir):
    """A run's summary.json rows by cell id."""
    return {r["cell"]: r for r in load(pathlib.Path(run_dir) / "summary.json")["rows"]}


def run_case(cases, name, prefix="ladder_"):
    """Runs cases[name](tmp) in a new temporary directory (removed after), then prints '<name>: ok'."""
    case = cases[name]
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{case.__name__}_") as tmp:
        case(pathlib.Path(tmp))
    print(f"{case.__name__}: ok")
