"""A check beside schemathesis' own, loaded by scripts/schemathesis.sh (SCHEMATHESIS_HOOKS).

schemathesis.toml lets a schema-valid POST /transform be refused with 400 or 422, because the
catalog refuses schema-valid calls for reasons JSON Schema cannot express. This check makes that
allowance exact: such a refusal must carry one of those codes. A code that the OpenAPI document
rules out for schema-valid data - a shape problem, a guid that is not a UUID, a call-size limit -
means the document and the service disagree, and fails the run.
"""

import json

import schemathesis

# docs/errors.md, "How a call fails", stages 2-6: what a schema-valid body can still run into
SEMANTIC = {
    "GUID_DUPLICATE",
    "REFERENCE_UNRESOLVED",
    "EVIDENCE_UNKNOWN",
    "PROCESSING_CONTEXT_UNMATCHED",
    "PROCESSING_CONTEXT_AMBIGUOUS",
    "FIELD_UNKNOWN",
    "ACTION_NOT_CONFIGURED",
    "VALUE_TOO_SHORT",
    "VALUE_TOO_LONG",
    "VALUE_NOT_IN_ALPHABET",
    "PROTECTED_VALUE_INVALID",
    "KEY_VERSION_UNKNOWN",
}


@schemathesis.check
def schema_valid_refusals_are_semantic(ctx, response, case):
    """A schema-valid transform call refused with 400/413/422 names a code the schema cannot rule out."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    if case.operation.path != "/transform" or case.method.upper() != "POST":
        return None
    if response.status_code not in (400, 413, 422):
        return None
    try:
        problem = json.loads(response.content)
    except ValueError:
        raise AssertionError(f"{response.status_code} without a JSON problem body")
    code = problem.get("code")
    errors = problem.get("errors") or []
    # VALUE_TOO_LONG is also the value-length limit, which the schema states (maxLength); a
    # transformer's carries the field, the limit's does not
    if code == "VALUE_TOO_LONG" and not all("className" in e for e in errors):
        raise AssertionError("schema-valid value refused by the value-length limit (maxLength disagrees)")
    if code not in SEMANTIC:
        raise AssertionError(f"schema-valid body refused with {code}, which the schema should rule out")
    return None
