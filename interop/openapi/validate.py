"""Validates OpenAPI documents against the OpenAPI 3.1 specification's schema and rules
(openapi-spec-validator), and checks first that the validator refuses a broken copy of each,
so that a validator that passes everything cannot pass them.

    python validate.py DOCUMENT.json...
"""

import copy
import json
import sys

from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError


def broken(document):
    """The document with one operation's path parameters taken away: its path then names
    parameters nothing declares, which OpenAPI forbids."""
    document = copy.deepcopy(document)
    for path, item in document["paths"].items():
        if "{" not in path:
            continue
        for operation in item.values():
            if isinstance(operation, dict) and "parameters" in operation:
                operation["parameters"] = [
                    parameter for parameter in operation["parameters"] if parameter["in"] != "path"
                ]
                return document
    raise SystemExit("no operation with path parameters to break")


def main(paths):
    if not paths:
        raise SystemExit(__doc__)
    for path in paths:
        with open(path, encoding="utf-8") as file:
            document = json.load(file)
        if document.get("openapi") != "3.1.0":
            raise SystemExit(f"{path}: not an OpenAPI 3.1.0 document")
        try:
            validate(broken(document))
        except OpenAPIValidationError:
            pass
        else:
            raise SystemExit(f"{path}: the validator passed a copy without path parameters")
        validate(document)
        operations = sum(
            1
            for item in document["paths"].values()
            for method in item
            if method in ("get", "put", "post", "delete", "patch", "head", "options", "trace")
        )
        schemas = len(document.get("components", {}).get("schemas", {}))
        print(f"{path}: valid OpenAPI 3.1 ({operations} operations, {schemas} schemas)")


if __name__ == "__main__":
    main(sys.argv[1:])
