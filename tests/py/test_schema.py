#!/usr/bin/env python3
"""docs/schema/*.schema.json cannot drift from the loaders.

(a) scripts/gen-schema.py, which takes every object's property names from
the loaders' own accepted-key arrays (src/machine/topology.c,
src/kernel/policy.c, src/workload/workload.c), reproduces the committed
schemas byte for byte; (b) every bundled topology, workload and policy (and
bench/topologies/) validates against its schema and names it in "$schema".
The validator below covers the subset of JSON Schema the files use (type,
properties, additionalProperties: false, required, items, oneOf, $ref to
$defs, pattern), so the test needs no package beyond the standard library.
"""
import glob
import importlib.util
import json
import os
import re
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FOLDERS = {"topology": ["topologies", "bench/topologies"], "workload": ["workloads"],
           "policy": ["policies"]}

spec = importlib.util.spec_from_file_location("gen_schema",
                                              os.path.join(ROOT, "scripts", "gen-schema.py"))
gen_schema = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen_schema)

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def is_type(value, name):
    if name in ("number", "integer"):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return ok and (name == "number" or float(value).is_integer())
    return isinstance(value, TYPES[name])


def errors(value, schema, root, path="$"):
    """The places where VALUE breaks SCHEMA, as "PATH: reason" strings."""
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return errors(value, root["$defs"][name], root, path)
    if "oneOf" in schema:
        n = sum(not errors(value, s, root, path) for s in schema["oneOf"])
        return [] if n == 1 else ["%s: matches %d of oneOf, not 1" % (path, n)]
    out = []
    if "type" in schema and not is_type(value, schema["type"]):
        return ["%s: expected %s" % (path, schema["type"])]
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        return ["%s: does not match %s" % (path, schema["pattern"])]
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                out.append("%s: missing %s" % (path, key))
        for key, item in value.items():
            if key in props:
                out += errors(item, props[key], root, "%s.%s" % (path, key))
            elif schema.get("additionalProperties") is False:
                out.append("%s: unknown key %s" % (path, key))
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += errors(item, schema["items"], root, "%s[%d]" % (path, i))
    return out


class SchemaTest(unittest.TestCase):
    def test_schemas_are_generated_from_the_loaders_key_lists(self):
        for kind, text in gen_schema.schemas().items():
            path = os.path.join(ROOT, "docs", "schema", kind + ".schema.json")
            with open(path) as f:
                self.assertEqual(f.read(), text,
                                 "%s is stale: run scripts/gen-schema.py" % path)

    def test_key_lists_are_found(self):
        # A renamed array would make gen-schema.py exit; a shrunk one shows here.
        self.assertIn("cores_per_socket", gen_schema.keys("topology", "$"))
        self.assertIn("ways", gen_schema.keys("topology", "tlb"))
        self.assertIn("sched", gen_schema.keys("policy", "$"))
        self.assertIn("program", gen_schema.keys("workload", "task"))
        plain, dist = gen_schema.cost_keys()
        self.assertIn("invlpg", plain)
        self.assertEqual([k for k, _ in dist], ["ipi_latency", "line_transfer"])

    def test_validator_refuses_what_the_loaders_refuse(self):
        schema = json.loads(gen_schema.schemas()["topology"])
        self.assertTrue(errors({"socketz": 1}, schema, schema))
        self.assertTrue(errors({"sockets": "1"}, schema, schema))
        self.assertTrue(errors({"sockets": {"value": 1, "src": "x"}}, schema, schema))
        self.assertFalse(errors({"sockets": {"value": 1, "source": "x"}}, schema, schema))
        self.assertTrue(errors({"costs": {"ipi_latency": {"self": 1}}}, schema, schema))
        # Times in cycles take a unit (config_time.c's grammar); other numbers do not.
        for good in ("350ns", "1.5 us", "2000cycles", {"value": "2ms", "source": "x"}, 7):
            self.assertFalse(errors({"costs": {"ipi_latency": {"socket": good}},
                                     "caches": {"memory_cycles": good}}, schema, schema), good)
        for bad in ("350xs", "-1ns", "1e3ns", "350  ns", "350"):
            self.assertTrue(errors({"costs": {"invlpg": bad}}, schema, schema), bad)
        self.assertTrue(errors({"sockets": "2ns"}, schema, schema))

    def test_bundled_files_validate_and_name_their_schema(self):
        count = 0
        for kind, folders in FOLDERS.items():
            schema = json.loads(gen_schema.schemas()[kind])
            for folder in folders:
                for path in sorted(glob.glob(os.path.join(ROOT, folder, "*.json"))):
                    with open(path) as f:
                        data = json.load(f)
                    self.assertEqual(errors(data, schema, schema), [], path)
                    want = os.path.relpath(
                        os.path.join(ROOT, "docs", "schema", kind + ".schema.json"),
                        os.path.dirname(path))
                    self.assertEqual(data.get("$schema"), want, path)
                    count += 1
        self.assertGreater(count, 30)


if __name__ == "__main__":
    unittest.main()
