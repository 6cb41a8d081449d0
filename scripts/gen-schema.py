#!/usr/bin/env python3
"""Writes docs/schema/{topology,workload,policy}.schema.json (JSON Schema 2020-12).

The property names of every object come from the loaders' own lists of
accepted keys (the C arrays their unknown-key checks use), so the schema
names exactly the keys the loaders take; tests/py/test_schema.py regenerates
the schemas in memory and fails if the committed files differ, then
validates every bundled file against them.  Types are stated here, for the
editor: a number may be plain or {"value": N, "source": "..."} ($defs.num); a
time in cycles may also be a string with a unit, "350ns" ($defs.cycles).

Usage: scripts/gen-schema.py [--check]   (--check: compare, write nothing)
"""
import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BASE = "https://github.com/tlbsim/tlbsim/docs/schema/"

# Object -> (C file, array name) of the keys its loader accepts.
KEY_LISTS = {
    "topology": {
        "$": ("src/machine/topology.c", "top_keys"),
        "cpuid": ("src/machine/topology.c", "cpuid_keys"),
        "flush_hw": ("src/machine/topology.c", "flush_hw_keys"),
        "tlb": ("src/machine/topology.c", "tlb_keys"),
        "caches": ("src/machine/topology.c", "caches_keys"),
        "cache_level": ("src/machine/topology.c", "cache_level_keys"),
    },
    "policy": {
        "$": ("src/kernel/policy.c", "policy_keys"),
        "sched": ("src/kernel/policy.c", "sched_keys"),
    },
    "workload": {
        "$": ("src/workload/workload.c", "workload_keys"),
        "region": ("src/workload/workload.c", "region_keys"),
        "task": ("src/workload/workload.c", "task_keys"),
        "report": ("src/workload/workload.c", "report_keys"),
    },
}


def c_array(path, name):
    """The strings of `static const char *const NAME[...] = {...};` in PATH."""
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    m = re.search(r"static const char \*const %s\[[^\]]*\] = \{(.*?)\};" % re.escape(name),
                  text, re.S)
    if not m:
        sys.exit("%s: no array %s" % (path, name))
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    return re.findall(r'"((?:[^"\\]|\\.)*)"', body)


def cost_keys():
    """The members of "costs": its two field tables, then "comment"."""
    with open(os.path.join(ROOT, "src/machine/topology.c")) as f:
        text = f.read()
    plain = re.findall(r'\{"(\w+)", offsetof\(struct topology_costs, \w+\)\}', text)
    dist = re.findall(r'\{"(\w+)", offsetof\(struct topology_costs, \w+\), (DIST_\w+)\}', text)
    return plain, dist


def keys(kind, obj):
    path, name = KEY_LISTS[kind][obj]
    return c_array(path, name)


NUM = {"$ref": "#/$defs/num"}
CYCLES = {"$ref": "#/$defs/cycles"}
# config_time.c's grammar: digits, an optional fraction, one optional space, a unit.
TIME = {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)? ?(cycles|ns|us|ms)$"}
TEXT = {"type": "string"}
COMMENT = {"$ref": "#/$defs/comment"}
BOOL = {"type": "boolean"}
# Types of the keys that have one here; any other key takes any value.
TYPES = {
    "name": TEXT, "description": TEXT, "imitates": TEXT, "simplified": TEXT,
    "comment": COMMENT, "$schema": TEXT,
    "extends": {"type": "string",
                "description": "A bundled name or a path relative to this file: "
                               "this file gives only what differs (docs/inputs.md)."},
}


def defs(kind):
    out = {
        "num": {"oneOf": [
            {"type": "number"},
            {"type": "object", "properties": {"value": {"type": "number"}, "source": TEXT},
             "required": ["value"], "additionalProperties": False}]},
        "comment": {"oneOf": [TEXT, {"type": "array", "items": TEXT}]},
    }
    if kind == "topology":
        out["cycles"] = {
            "description": "Cycles, or a time with a unit converted at clock_ghz "
                           "(docs/inputs.md)",
            "oneOf": [
                {"type": "number"}, TIME,
                {"type": "object", "properties": {"value": {"oneOf": [{"type": "number"}, TIME]},
                                                  "source": TEXT},
                 "required": ["value"], "additionalProperties": False}]}
    return out


def obj(names, types=None, required=()):
    types = dict(TYPES, **(types or {}))
    props = {k: types.get(k, {}) for k in names}
    out = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


def with_extends(o):
    """A file's top level: its loader's keys plus "extends" (merged away before it)."""
    o["properties"]["extends"] = TYPES["extends"]
    return o


def topology():
    plain, dist = cost_keys()
    distances = ["self", "smt", "socket", "remote"]
    costs = {k: CYCLES for k in plain}
    for k, first in dist:
        names = distances[distances.index(first.split("_")[1].lower()):] + ["comment"]
        costs[k] = {"oneOf": [CYCLES, obj(names, {d: CYCLES for d in names if d != "comment"})]}
    cost_names = plain + [k for k, _ in dist] + ["comment"]
    num_keys = {"sockets", "cores_per_socket", "threads_per_core", "clock_ghz", "hw_asids",
                "page_walkers", "tlb_lld_4k", "tlb_lli_4k", "tlb_flushall_shift",
                "invlpgb_count_max", "pwc_entries", "level", "entries", "ways",
                "line_bytes", "size_kib"}
    n = {k: NUM for k in num_keys}
    n.update({k: CYCLES for k in ("hit_cycles", "memory_cycles", "resident_cycles")})
    tlb = obj(keys("topology", "tlb"), dict(n, page_sizes={"type": "array", "items": TEXT},
                                              per_core=BOOL, replacement=TEXT))
    level = obj(keys("topology", "cache_level"), dict(n, shared_by=TEXT))
    caches = obj(keys("topology", "caches"),
                 dict(n, levels={"type": "array", "items": level}))
    top = obj(keys("topology", "$"), dict(
        n, smt_invalidation=TEXT,
        cpuid=obj(keys("topology", "cpuid"), n),
        flush_hw=obj(keys("topology", "flush_hw"),
                     dict(n, arch=TEXT, remote=TEXT, full_flush_only=BOOL)),
        tlbs={"type": "array", "items": tlb}, caches=caches,
        costs=obj(cost_names, costs)))
    return with_extends(top)


def policy():
    sched = obj(keys("policy", "sched"), {k: BOOL if k == "load_balance" else NUM
                                          for k in keys("policy", "sched") if k != "comment"})
    return with_extends(obj(keys("policy", "$"), {"sched": sched, "arch": TEXT}))


def workload():
    return with_extends(obj(keys("workload", "$"), {
        "params": {"type": "object"},
        "regions": {"type": "array", "items": obj(keys("workload", "region"))},
        "tasks": {"type": "array", "items": obj(keys("workload", "task"))},
        "report": obj(keys("workload", "report")),
    }))


def schemas():
    out = {}
    for kind, build in (("topology", topology), ("workload", workload), ("policy", policy)):
        s = {"$schema": "https://json-schema.org/draft/2020-12/schema",
             "$id": BASE + kind + ".schema.json",
             "title": "tlbsim %s (docs/inputs.md); generated by scripts/gen-schema.py" % kind}
        s.update(build())
        s["$defs"] = defs(kind)
        out[kind] = json.dumps(s, indent=2) + "\n"
    return out


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for kind, text in schemas().items():
        path = os.path.join(ROOT, "docs", "schema", kind + ".schema.json")
        old = None
        if os.path.exists(path):
            with open(path) as f:
                old = f.read()
        if old == text:
            continue
        stale.append(path)
        if not check:
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
    if check and stale:
        sys.exit("out of date (run scripts/gen-schema.py): " + ", ".join(stale))


if __name__ == "__main__":
    main()
