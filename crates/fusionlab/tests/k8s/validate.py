"""Validate Kubernetes objects offline (crates/fusionlab/tests/k8s.rs runs it).

    python validate.py --kubernetes-version 1.32.0 --crds DIR FILE...

Every YAML document of every FILE (a `kubectl kustomize` output, or a
manifest) is checked: a core kind against the Kubernetes API schemas of
kubernetes-validate, strictly (an unknown field is an error, as `kubectl
apply` with its default strict field validation says); a Chaos Mesh kind
against the openAPIV3Schema of its CRD in DIR, strictly too (object schemas
that list their properties accept no other). One line per object; exit 1
if any is invalid or of a kind nothing here knows.
"""

import argparse
import copy
import glob
import os
import sys

import jsonschema
import kubernetes_validate
import yaml


def strict(schema):
    """The CRD's structural schema as JSON Schema with unknown fields refused."""
    s = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if node.get("nullable"):
                t = node.get("type")
                if isinstance(t, str):
                    node["type"] = [t, "null"]
            if node.get("x-kubernetes-int-or-string"):
                node.pop("type", None)
                node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
            if (
                "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(s)
    return s


def load_crds(directory):
    """(group/version, kind) -> a validator of that CRD version's schema."""
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.yaml"))):
        with open(path) as f:
            crd = yaml.safe_load(f)
        group = crd["spec"]["group"]
        kind = crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            if not v.get("served"):
                continue
            schema = strict(v["schema"]["openAPIV3Schema"])
            # metadata is the API server's ObjectMeta: a name is required.
            schema.setdefault("properties", {})["metadata"] = {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "namespace": {"type": "string"},
                    "labels": {"type": "object"},
                    "annotations": {"type": "object"},
                },
                "additionalProperties": False,
            }
            schema["required"] = sorted(set(schema.get("required", [])) | {"spec"})
            out[(f"{group}/{v['name']}", kind)] = jsonschema.Draft7Validator(schema)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubernetes-version", required=True)
    ap.add_argument("--crds", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    crds = load_crds(a.crds)
    bad = 0
    count = 0
    for path in a.files:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for doc in docs:
            count += 1
            key = (doc.get("apiVersion"), doc.get("kind"))
            name = f"{path}: {key[1]} {doc.get('metadata', {}).get('name')}"
            if key in crds:
                errors = sorted(crds[key].iter_errors(doc), key=lambda e: list(e.path))
                if errors:
                    bad += 1
                    for e in errors:
                        where = "/".join(str(p) for p in e.path)
                        print(f"INVALID {name}: {where}: {e.message}")
                else:
                    print(f"valid {name} (CRD {key[0]})")
            elif str(key[0]).endswith("chaos-mesh.org/v1alpha1"):
                bad += 1
                print(f"INVALID {name}: no CRD for {key} in {a.crds}")
            else:
                try:
                    kubernetes_validate.validate(doc, a.kubernetes_version, strict=True)
                    print(f"valid {name} (Kubernetes {a.kubernetes_version})")
                except kubernetes_validate.ValidationError as e:
                    bad += 1
                    where = "/".join(str(p) for p in e.path)
                    print(f"INVALID {name}: {where}: {e.message}")
                except Exception as e:  # an unknown kind or version
                    bad += 1
                    print(f"INVALID {name}: {type(e).__name__}: {e}")
    print(f"{count} objects, {bad} invalid")
    return 1 if bad or count == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
