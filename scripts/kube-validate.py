#!/usr/bin/env python3
"""Validates Kubernetes objects offline: the Helm chart's rendered output (test/deploy/helm-chart.test.ts).

    python kube-validate.py --kube-version 1.37.0 [--crd CRD.yaml]... FILE|-

Built-in kinds are checked against the Kubernetes OpenAPI schemas that the PyPI package
kubernetes-validate ships, strictly (a field the API does not know is an error, as the API server
rejects or drops it). Custom resources (KEDA's ScaledObject, prometheus-operator's ServiceMonitor)
are checked against the openAPIV3Schema of their CustomResourceDefinition, made strict the same way:
an object without x-kubernetes-preserve-unknown-fields takes no property its schema does not name
(the API server would prune it silently). A kind with no schema is an error, not a pass.

Prints one JSON document: {"objects": [{apiVersion, kind, name, schema}], "errors": [{apiVersion,
kind, name, path, message}]}; exits 1 when there are errors. Needs kubernetes-validate (and its
jsonschema and PyYAML), which the tests install into a venv under ~/.cache/veil.
"""
import argparse
import copy
import json
import sys

import jsonschema
import kubernetes_validate
import yaml


def strict(schema):
    """The schema with additionalProperties: false wherever the API server would prune unknown fields."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if ('properties' in node and 'additionalProperties' not in node
                    and not node.get('x-kubernetes-preserve-unknown-fields')):
                node['additionalProperties'] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


def crd_schemas(paths):
    """{(apiVersion, kind): (schema, source)} from CustomResourceDefinition files."""
    found = {}
    for path in paths:
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if not doc or doc.get('kind') != 'CustomResourceDefinition':
                    continue
                spec = doc['spec']
                for version in spec['versions']:
                    if not version.get('served', True):
                        continue
                    schema = version['schema']['openAPIV3Schema']
                    key = ('%s/%s' % (spec['group'], version['name']), spec['names']['kind'])
                    found[key] = (strict(schema), '%s (%s)' % (doc['metadata']['name'], version['name']))
    return found


def pointer(path):
    return '/' + '/'.join(str(p) for p in path) if path else '/'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--kube-version', required=True)
    parser.add_argument('--crd', action='append', default=[])
    parser.add_argument('file')
    args = parser.parse_args()
    text = sys.stdin.read() if args.file == '-' else open(args.file).read()
    crds = crd_schemas(args.crd)
    objects, errors = [], []
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        api_version, kind = doc.get('apiVersion', ''), doc.get('kind', '')
        name = (doc.get('metadata') or {}).get('name', '')
        where = {'apiVersion': api_version, 'kind': kind, 'name': name}
        if (api_version, kind) in crds:
            schema, source = crds[(api_version, kind)]
            validator = jsonschema.Draft7Validator(schema)
            found = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
            errors += [dict(where, path=pointer(e.absolute_path), message=e.message) for e in found]
            objects.append(dict(where, schema='crd ' + source))
            continue
        try:
            version = kubernetes_validate.validate(doc, args.kube_version, strict=True)
            objects.append(dict(where, schema='kubernetes %s (strict)' % version))
        except kubernetes_validate.ValidationError as e:
            objects.append(dict(where, schema='kubernetes %s (strict)' % e.version))
            errors.append(dict(where, path=pointer(e.absolute_path), message=e.message))
        except kubernetes_validate.SchemaNotFoundError as e:
            errors.append(dict(where, path='/', message=e.message))
    json.dump({'objects': objects, 'errors': errors}, sys.stdout, indent=1)
    sys.stdout.write('\n')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
