"""Satchel's own schemathesis check, loaded with SCHEMATHESIS_HOOKS=satchel_checks by OpenAPIContractTests.

Every error of `satchel serve` is an RFC 9457 problem document: Content-Type application/problem+json and a JSON
object with `type` (under https://satchel.dev/problems/), `title`, `status` (the response's status) and `detail`.
The only exception is a browser's: a request that asks for text/html may get an HTML page instead.
"""
import json

import schemathesis

PROBLEM_TYPE_BASE = "https://satchel.dev/problems/"


@schemathesis.check
def errors_are_problem_json(ctx, response, case):
    """A 4xx or 5xx answer is problem+json (or a page, for a client that asked for HTML)."""
    if response.status_code < 400:
        return
    content_type = (response.headers.get("content-type") or [""])[0].split(";")[0].strip().lower()
    accept = (response.request.headers.get("Accept") or "").lower()
    if content_type == "text/html" and "text/html" in accept:
        return
    if content_type != "application/problem+json":
        raise AssertionError(f"{response.status_code} answered as {content_type or 'no Content-Type'}, not application/problem+json")
    if response.request.method == "HEAD":
        return  # the headers say it; a HEAD answer has no body
    try:
        problem = json.loads(response.content)
    except ValueError as error:
        raise AssertionError(f"the problem document is not JSON: {error}") from None
    if not isinstance(problem, dict):
        raise AssertionError("the problem document is not a JSON object")
    missing = [member for member in ("type", "title", "status", "detail") if member not in problem]
    if missing:
        raise AssertionError(f"the problem document lacks {', '.join(missing)}")
    if problem["status"] != response.status_code:
        raise AssertionError(f"the problem says status {problem['status']}, the response is {response.status_code}")
    if not str(problem["type"]).startswith(PROBLEM_TYPE_BASE):
        raise AssertionError(f"the problem type {problem['type']!r} is not under {PROBLEM_TYPE_BASE}")
