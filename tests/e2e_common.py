"""tests/e2e_common.py: what the end-to-end tests share: reading a JSON file and
checking a report or run summary against its JSON Schema (reports/*.schema.json)."""
import json
import pathlib

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load(path):
    return json.loads(pathlib.Path(path).read_text())


def validate(path):
    """Validates a rung report or run summary against the schema its `kind` names; returns it."""
    data = load(path)
    schema_file = {"ladder.rung_report": "rung_report", "ladder.run_summary": "run_summary"}[data["kind"]]
    schema = load(ROOT / "reports" / f"{schema_file}.schema.json")
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(data)
    return data
