#!/usr/bin/env python3
"""Prints every field path of the JSON files given, one "PATH TYPE" line each
(sorted, no repeats), as docs/stats-json.md names them: METHOD for a method's
name, DEVICE for a device, [] for the elements of an array (an element
that is an object has no line of its own: its fields do). An object whose
keys are data, not field names, is listed in MAPS; add a new one there."""
import json
import sys

MAPS = {"methods": "METHOD",
        "methods.METHOD.planned_bytes": "DEVICE",
        "methods.METHOD.planned_lower_bound_bytes": "DEVICE",
        "provenance.pipeline.options": "OPTION",
        "provenance.pipeline.options.OPTION": "METHOD",
        "provenance.pipeline.passes[].options": "OPTION"}


def type_name(v):
    if isinstance(v, bool):   # before int: a bool is an int in Python
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if v is None:
        return "null"
    return "object" if isinstance(v, dict) else "array"


def walk(v, path, out):
    if path and not (path.endswith("[]") and isinstance(v, dict)):
        out.add((path, type_name(v)))   # an array of objects: its fields say it
    if isinstance(v, dict):
        for k, x in v.items():
            name = MAPS.get(path, k)
            walk(x, f"{path}.{name}" if path else name, out)
    elif isinstance(v, list):
        for x in v:
            walk(x, path + "[]", out)


found = set()
for f in sys.argv[1:]:
    with open(f, encoding="utf-8") as fh:
        walk(json.load(fh), "", found)
for path, t in sorted(found):
    print(path, t)
