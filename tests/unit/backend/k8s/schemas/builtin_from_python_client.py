#!/usr/bin/env python3
"""Writes builtin.json: OpenAPI v3 schemas (the subset schema_test.cc's validator reads) of the built-in
kinds the k8s backend plans (Pod, Secret, Service, NetworkPolicy), made from the models of Kubernetes'
Python client, whose field names, types and required fields are generated from Kubernetes' own OpenAPI
document. Kubernetes' OpenAPI JSON itself is on no Debian package; the client's models are:
    apt-get download python3-kubernetes && dpkg-deb -x python3-kubernetes_*.deb /tmp/pyk8s
    python3 builtin_from_python_client.py /tmp/pyk8s/usr/lib/python3/dist-packages/kubernetes/client/models
Debian bookworm's python3-kubernetes 22.6.0 (Apache-2.0) describes Kubernetes 1.22's API; fields
added since are unknown to it. Enums are not in the models, so they are not checked."""
import ast
import json
import os
import re
import sys

KINDS = {"Pod": "V1Pod", "Secret": "V1Secret", "Service": "V1Service", "NetworkPolicy": "V1NetworkPolicy"}
REQUIRED = re.compile(r"Invalid value for `(\w+)`, must not be `None`")


def file_of(model):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", model).lower() + ".py"


def class_dicts(path):
    tree = ast.parse(open(path).read())
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("openapi_types", "attribute_map"):
                found[node.targets[0].id] = ast.literal_eval(node.value)
    return found["openapi_types"], found["attribute_map"]


def schema_of(type_name, models, definitions):
    if type_name == "str":
        return {"type": "string"}
    if type_name == "int":
        return {"type": "integer"}
    if type_name == "bool":
        return {"type": "boolean"}
    if type_name == "float":
        return {"type": "number"}
    if type_name == "datetime":
        return {"type": "string", "format": "date-time"}
    if type_name == "object":  # IntOrString and the like: any value
        return {"x-kubernetes-preserve-unknown-fields": True}
    match = re.fullmatch(r"dict\(str, (.+)\)", type_name)
    if match:
        return {"type": "object", "additionalProperties": schema_of(match.group(1), models, definitions)}
    match = re.fullmatch(r"list\[(.+)\]", type_name)
    if match:
        return {"type": "array", "items": schema_of(match.group(1), models, definitions)}
    define(type_name, models, definitions)
    return {"$ref": "#/definitions/" + type_name}


def define(model, models, definitions):
    if model in definitions:
        return
    definitions[model] = {}  # taken, for recursive models
    path = os.path.join(models, file_of(model))
    types, names = class_dicts(path)
    required = [names[field] for field in REQUIRED.findall(open(path).read()) if field in names]
    properties = {names[field]: schema_of(kind, models, definitions) for field, kind in types.items()}
    definitions[model] = {"type": "object", "properties": properties}
    if required:
        definitions[model]["required"] = sorted(set(required))


def main():
    models = sys.argv[1]
    definitions = {}
    for model in KINDS.values():
        define(model, models, definitions)
    out = {
        "source": "Debian python3-kubernetes 22.6.0 (Kubernetes 1.22), by builtin_from_python_client.py",
        "kinds": {kind: {"$ref": "#/definitions/" + model} for kind, model in KINDS.items()},
        "definitions": dict(sorted(definitions.items())),
    }
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "builtin.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
        f.write("\n")


if __name__ == "__main__":
    main()
