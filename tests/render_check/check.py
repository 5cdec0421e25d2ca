#!/usr/bin/env python3
"""Checks every file of a `kinit plan --render` folder with tools kinit did not write.

    check.py DIR        prints one JSON object: {"checked": {kind: count}, "failures": [...]}
                        and exits 1 when a file fails, 2 when a tool is missing.

- libvirt domain and network XML: `virt-xml-validate FILE domain|network` (libvirt's RelaxNG).
- The Windows answer file: `xmllint --noout` (well-formed), root element `unattend` in
  Microsoft's `urn:schemas-microsoft-com:unattend` namespace. Microsoft publishes no schema
  file for it (Windows SIM reads it from the ADK), so there is none to validate against.
- PowerShell (`*.ps1`): the tree-sitter-pwsh grammar (PyPI `tree-sitter-pwsh`); any ERROR or
  MISSING node fails.
- Kubernetes objects (YAML or JSON with apiVersion and kind): kubernetes-validate's bundled
  OpenAPI schemas for the cluster's release, strict (no unknown fields). A patch file
  (`*-patch.*`) is checked against the schema of the object it patches with `required` left
  out (a merge patch carries only what it changes).
- kubeadm, kubelet and kubeconfig documents, which are not in the Kubernetes OpenAPI: every
  key must be a field of its upstream Go type (`config-fields.json`, which cites its source).
- The service node's DNS and load balancer: `named-checkconf -z` (bind9-utils) with the
  machine's `files/` as root, so the rendered zone files load too; `haproxy -c`.
- Other JSON (flannel net-conf, the CNI config): must parse. cloud-init seed files: YAML
  mappings, `user-data` a `#cloud-config`.
"""

import json
import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
K8S_VERSION = os.environ.get("KINIT_K8S_VERSION", "1.37.0")


def fail(failures, path, msg):
    failures.append(f"{path}: {msg}")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip()


def check_virt(path, kind, failures):
    rc, out = run(["virt-xml-validate", path, kind])
    if rc != 0:
        fail(failures, path, f"virt-xml-validate {kind}: {out}")


def check_unattend(path, failures):
    rc, out = run(["xmllint", "--noout", path])
    if rc != 0:
        fail(failures, path, f"xmllint: {out}")
        return
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    if root.tag != "{urn:schemas-microsoft-com:unattend}unattend":
        fail(failures, path, f"root element is `{root.tag}`, not unattend")


def pwsh_parser():
    import tree_sitter
    import tree_sitter_pwsh

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_pwsh.language()))


def check_ps1(path, parser, failures):
    source = open(path, "rb").read()
    tree = parser.parse(source)
    bad = []

    def walk(node):
        if node.is_error or node.is_missing:
            row, col = node.start_point
            text = source[node.start_byte : node.end_byte][:60].decode(errors="replace")
            bad.append(f"{row + 1}:{col + 1}: {node.type} `{text}`")
        for c in node.children:
            walk(c)

    walk(tree.root_node)
    if bad:
        fail(failures, path, "PowerShell syntax errors: " + "; ".join(bad[:5]))


FIELDS = json.load(open(os.path.join(HERE, "config-fields.json")))


def check_fields(value, type_name, where, errors):
    types = FIELDS["types"]
    if type_name.startswith("[]"):
        if not isinstance(value, list):
            errors.append(f"{where}: expected a list")
            return
        for i, v in enumerate(value):
            check_fields(v, type_name[2:], f"{where}[{i}]", errors)
        return
    if type_name in ("string", "duration"):
        if not isinstance(value, str):
            errors.append(f"{where}: expected a string, got {value!r}")
        return
    if type_name == "bool":
        if not isinstance(value, bool):
            errors.append(f"{where}: expected true or false, got {value!r}")
        return
    if type_name == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append(f"{where}: expected a whole number, got {value!r}")
        return
    if type_name == "map":
        if not isinstance(value, dict):
            errors.append(f"{where}: expected a mapping")
        return
    if not isinstance(value, dict):
        errors.append(f"{where}: expected a mapping ({type_name})")
        return
    fields = {}

    def collect(t):
        for k, v in types[t].items():
            if k == "_inline":
                for inner in v:
                    collect(inner)
            else:
                fields[k] = v

    collect(type_name)
    for k, v in value.items():
        if k not in fields:
            errors.append(f"{where}.{k}: not a field of {type_name}")
        else:
            check_fields(v, fields[k], f"{where}.{k}", errors)


def k8s_errors(doc, patch):
    """Schema errors of one Kubernetes object (kubernetes-validate's strict schemas)."""
    import jsonschema
    import kubernetes_validate
    from kubernetes_validate import utils
    from referencing import Registry, Resource

    if not patch:
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
            return []
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path)
            return [f"{path}: {e.message}"]
    # A patch: the object's schema without `required`.
    import re

    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", doc["apiVersion"])
    version = [
        v
        for v in utils.all_versions()
        if utils.major_minor(v) <= utils.major_minor(K8S_VERSION)
    ][-1]
    sdir = f"kubernetes-json-schema/v{version}-local-strict"
    schema = utils.schema_contents(
        f"{sdir}/{doc['kind'].lower()}-{api}.json", K8S_VERSION
    )
    defs = utils.schema_contents(f"{sdir}/_definitions.json", K8S_VERSION)
    registry = Resource.from_contents(defs) @ (Resource.from_contents(schema) @ Registry())
    v = jsonschema.validators.Draft202012Validator(schema, registry=registry)
    return [
        ".".join(str(p) for p in e.absolute_path) + ": " + e.message
        for e in v.iter_errors(doc)
        if e.validator != "required"
    ]


def check_objects(path, docs, failures, counts):
    patch = "-patch." in os.path.basename(path)
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        where = f"document {i + 1}"
        if not isinstance(doc, dict):
            fail(failures, path, f"{where}: not a mapping")
            continue
        api, kind = doc.get("apiVersion"), doc.get("kind")
        if patch and (api is None or kind is None):
            # A nodeSelector-style patch of a DaemonSet (the only kind kinit patches so).
            doc = {"apiVersion": "apps/v1", "kind": "DaemonSet", **doc}
            api, kind = doc["apiVersion"], doc["kind"]
        if api is None or kind is None:
            fail(failures, path, f"{where}: no apiVersion/kind")
            continue
        typed = FIELDS["kinds"].get(api, {}).get(kind)
        if typed:
            errors = []
            check_fields(doc, typed, kind, errors)
            counts["config-fields"] = counts.get("config-fields", 0) + 1
        else:
            try:
                errors = k8s_errors(doc, patch)
            except Exception as e:  # an unknown kind: no schema
                errors = [f"no schema for {api} {kind}: {e}"]
            counts["kubernetes-schema"] = counts.get("kubernetes-schema", 0) + 1
        for e in errors:
            fail(failures, path, f"{where} ({kind}): {e}")


def main():
    root = sys.argv[1]
    failures, counts = [], {}
    parser = pwsh_parser()
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            kind = None
            if name == "domain.xml":
                kind = "domain"
                check_virt(path, "domain", failures)
            elif name.startswith("network-") and name.endswith(".xml"):
                kind = "network"
                check_virt(path, "network", failures)
            elif name == "autounattend.xml":
                kind = "unattend"
                check_unattend(path, failures)
            elif name.startswith("named.conf") and rel.split(os.sep)[1:4] == ["files", "etc", "bind"]:
                # bind's own checker, with the machine's `files/` as its root, so the zone
                # files it names (/var/cache/bind/...) are the rendered ones and load too.
                kind = "bind"
                files_root = os.path.join(root, rel.split(os.sep)[0], "files")
                rc, out = run(["named-checkconf", "-z", "-t", files_root, f"/etc/bind/{name}"])
                if rc != 0:
                    fail(failures, path, f"named-checkconf: {out}")
            elif name == "haproxy.cfg":
                kind = "haproxy"
                rc, out = run(["haproxy", "-c", "-f", path])
                if rc != 0:
                    fail(failures, path, f"haproxy -c: {out}")
            elif os.path.basename(dirpath) == "seed":
                # cloud-init NoCloud seed: YAML mappings; user-data a #cloud-config.
                kind = "cloud-init"
                text = open(path).read()
                if name == "user-data" and not text.startswith("#cloud-config\n"):
                    fail(failures, path, "user-data does not start with #cloud-config")
                try:
                    if not isinstance(yaml.safe_load(text), dict):
                        fail(failures, path, "not a YAML mapping")
                except yaml.YAMLError as e:
                    fail(failures, path, f"does not parse: {e}")
            elif name.endswith(".ps1"):
                kind = "powershell"
                check_ps1(path, parser, failures)
            elif ("/files/" in f"/{rel}" or rel.split(os.sep)[1:2] == ["state"]) and (
                name.endswith((".yaml", ".yml", ".kubeconfig", ".json"))
                or name.endswith(".conf") and open(path).read().lstrip().startswith("{")
            ):
                text = open(path).read()
                is_json = not name.endswith((".yaml", ".yml", ".kubeconfig"))
                try:
                    docs = [json.loads(text)] if is_json else list(yaml.safe_load_all(text))
                except (ValueError, yaml.YAMLError) as e:
                    fail(failures, path, f"does not parse: {e}")
                    continue
                first = docs[0] if docs else None
                if isinstance(first, dict) and "apiVersion" in first or "-patch." in name:
                    kind = "kubernetes"
                    check_objects(path, docs, failures, counts)
                elif is_json:
                    kind = "json"
            if kind:
                counts[kind] = counts.get(kind, 0) + 1
    print(json.dumps({"checked": counts, "failures": failures}, indent=1))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
