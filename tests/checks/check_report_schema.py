#!/usr/bin/env python3
"""tests/checks/check_report_schema.py: a real report validates against
reports/rung_report.schema.json, and reports broken in the ways a careless
change would break them are rejected (so the schema cannot silently pass
everything).

usage: check_report_schema.py REPORT.json
"""
import copy
import json
import pathlib
import sys

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parents[2]
schema = json.loads((ROOT / "reports" / "rung_report.schema.json").read_text())
validator = jsonschema.Draft202012Validator(
    schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
jsonschema.Draft202012Validator.check_schema(schema)

report = json.loads(pathlib.Path(sys.argv[1]).read_text())
errors = list(validator.iter_errors(report))
for e in errors:
    print("real report:", "/".join(map(str, e.absolute_path)), e.message)
assert not errors, f"{sys.argv[1]} does not validate"


def broken(mutate):
    r = copy.deepcopy(report)
    mutate(r)
    return r


mutations = {
    "missing per-step dt_ms": lambda r: r["steps"].pop("dt_ms"),
    "metric key without unit": lambda r: r["mfu"]["measured_roofline"].update(mfu=r["mfu"]["measured_roofline"].pop("mfu_pct")),
    "string where a number belongs": lambda r: r["summary"]["dt_ms"].update(median="fast"),
    "negative step time": lambda r: r["steps"]["dt_ms"].__setitem__(0, -1.0),
    "unknown top-level key": lambda r: r.update(extra=1),
    "wrong schema_version": lambda r: r.update(schema_version=99),
    "missing environment": lambda r: r.pop("environment"),
    "bad timestamp": lambda r: r.update(started_at="yesterday"),
    "negative data time": lambda r: r["steps"]["data_ms"].__setitem__(0, -1.0),
    "data without tokens consumed": lambda r: r["data"].pop("tokens_consumed"),
    "token shards without a shard list": lambda r: r["data"].update(kind="token_shards"),
    "unknown data format": lambda r: r["config"]["data"].update(format="u32"),
    "a switch's effect not an object": lambda r: r["switches"].update({"fused-ln": True}),
    "a switch flag not a boolean": lambda r: r["config"]["switches"].update({"fused-ln": "yes"}),
}
for name, mutate in mutations.items():
    assert list(validator.iter_errors(broken(mutate))), f"schema accepted a report with {name}"

print(f"{sys.argv[1]}: valid; {len(mutations)} broken variants rejected")
