"""REST transcoding checked from outside with httpx: every `google.api.http` binding of
`transcoding.v1.Echo` (proto/transcoding/v1/echo.proto) served by examples/transcoding_server,
over HTTP/1.1 and over HTTP/2 with prior knowledge (h2c), each case on one client that goes on
after failures: answers, reply streams as NDJSON and as Server-Sent Events, failures as
`google.rpc.Status`, refusals of bad input, and the OpenAPI document at /openapi.json holding
every binding the proto declares.

    python check.py BASE_URL PROTO      e.g. http://127.0.0.1:50051 proto/transcoding/v1/echo.proto

Prints one line per case and `N passed, N failed`; exits 1 if any failed. Every request has a
timeout.
"""

import json
import re
import sys

import httpx

TIMEOUT = httpx.Timeout(10.0)
BOOK = "/v1/shelves/1/books/2"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


class Failed(Exception):
    pass


def expect(condition, what):
    if not condition:
        raise Failed(what)


def json_of(response, status=200):
    expect(
        response.status_code == status,
        f"HTTP {response.status_code}, not {status}: {response.text[:300]}",
    )
    kind = response.headers.get("content-type", "")
    expect(kind == "application/json", f"content-type {kind!r}")
    return response.json()


def equal(got, want):
    expect(got == want, f"got {got!r}, want {want!r}")


def status_of(response, http_status, code):
    """The `google.rpc.Status` of a failure, checked to have `http_status` and `code`."""
    status = json_of(response, http_status)
    expect(status.get("code") == code, f"code {status.get('code')!r}, not {code}: {status}")
    expect(isinstance(status.get("message"), str), f"no message: {status}")
    return status


# --- The cases: each takes a client and raises Failed (or any error) when it does not hold.


def get_path_and_query(client):
    reply = json_of(client.get(f"{BOOK}?page.size=10&verbose=true"))
    equal(reply, {"name": "shelves/1/books/2", "page": {"size": 10}, "verbose": True})


def get_rest_of_path(client):
    equal(json_of(client.get("/v1/files/a/b/c.txt")), {"path": "a/b/c.txt"})


def post_body_field(client):
    reply = json_of(client.post("/v1/shelves/1/books", json={"title": "Dune", "pages": 412}))
    equal(reply, {"parent": "shelves/1", "book": {"title": "Dune", "pages": "412"}})


def patch_with_update_mask(client):
    reply = json_of(client.patch(f"{BOOK}?update_mask=title", json={"title": "T"}))
    equal(reply, {"book": {"name": "shelves/1/books/2", "title": "T"}, "updateMask": "title"})


def put_body_star(client):
    body = {"name": "ignored", "ids": [7], "verbose": True}
    reply = json_of(client.put(BOOK, json=body))
    equal(reply, {"name": "shelves/1/books/2", "ids": [7], "verbose": True})


def delete_is_empty(client):
    equal(json_of(client.delete(BOOK)), {})


def post_custom_verb(client):
    reply = json_of(client.post(f"{BOOK}:archive", json={"verbose": True}))
    equal(reply, {"name": "shelves/1/books/2", "verbose": True})


def search_additional_bindings(client):
    equal(
        json_of(client.get("/v1/search?parent=p&page.size=2")),
        {"parent": "p", "page": {"size": 2}},
    )
    equal(json_of(client.get("/v1/shelves/3/search")), {"parent": "shelves/3"})
    equal(json_of(client.post("/v1/search:query", json={"count": 2})), {"count": 2})


def get_book_response_body(client):
    equal(json_of(client.get(f"{BOOK}/book?book.title=T&verbose=true")), {"title": "T"})


def fail_is_a_google_rpc_status(client):
    status = status_of(client.get("/v1/fail/7?message=no"), 403, 7)
    equal(
        status,
        {
            "code": 7,
            "message": "no",
            "details": [{"@type": ERROR_INFO, "reason": "ECHO", "domain": "transcoding.v1"}],
        },
    )
    status_of(client.get("/v1/fail/5?message=gone"), 404, 5)


WATCH = f"{BOOK}:watch?count=3&interval=0.05s&fail_code=5"


def watch_as_ndjson(client):
    with client.stream("GET", WATCH) as response:
        equal(response.status_code, 200)
        equal(response.headers.get("content-type"), "application/x-ndjson")
        lines = [json.loads(line) for line in response.iter_lines() if line]
    expect(len(lines) == 4, f"{len(lines)} lines, not 3 and an error: {lines}")
    for line in lines[:3]:
        equal(line.get("name"), "shelves/1/books/2")
        equal(line.get("count"), 3)
    error = lines[3].get("error", {})
    equal(error.get("code"), 5)
    equal(error.get("details", [{}])[0].get("reason"), "ECHO")


def watch_as_events(client):
    headers = {"accept": "text/event-stream"}
    with client.stream("GET", WATCH, headers=headers) as response:
        equal(response.status_code, 200)
        equal(response.headers.get("content-type"), "text/event-stream")
        text = "".join(response.iter_text())
    events = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        event = {"event": "message", "data": ""}
        for line in block.split("\n"):
            name, _, value = line.partition(": ")
            event[name] = value
        events.append(event)
    expect(len(events) == 4, f"{len(events)} events, not 3 and an error: {text!r}")
    for event in events[:3]:
        equal(event["event"], "message")
        equal(json.loads(event["data"]).get("name"), "shelves/1/books/2")
    equal(events[3]["event"], "error")
    equal(json.loads(events[3]["data"])["error"]["code"], 5)


def download_text_plain(client):
    response = client.get(f"{BOOK}/raw")
    equal(response.status_code, 200)
    equal(response.headers.get("content-type"), "text/plain")
    equal(response.content, b"shelves/1/books/2")


def download_pieces_as_bytes(client):
    # A stream of google.api.HttpBody: the pieces' bytes one after another, no delimiter, with
    # the first piece's content type.
    response = client.get(f"{BOOK}/pieces", params={"count": "3"})
    equal(response.status_code, 200)
    equal(response.headers.get("content-type"), "text/plain")
    pieces = b"".join(f"piece {i} of shelves/1/books/2;".encode() for i in range(3))
    equal(response.content, pieces)


def upload_raw_bytes(client):
    body = bytes(range(256)) * 12
    headers = {"content-type": "application/octet-stream"}
    reply = json_of(client.post("/v1/upload", content=body, headers=headers))
    equal(reply, {"title": "application/octet-stream", "pages": str(len(body))})


def hidden_is_not_reachable(client):
    # No binding: no REST path reaches it, its gRPC path answers no GET, and the document
    # does not list it.
    status_of(client.post("/v1/hidden", json={}), 404, 5)
    status_of(client.get("/v1/shelves/1/hidden"), 404, 5)
    response = client.get("/transcoding.v1.Echo/Hidden")
    expect(response.status_code >= 400, f"HTTP {response.status_code}")
    document = client.get("/openapi.json").json()
    ids = [
        operation.get("operationId", "")
        for item in document["paths"].values()
        for operation in item.values()
        if isinstance(operation, dict)
    ]
    expect(not any("Hidden" in id for id in ids), f"Hidden in the document: {ids}")


def bad_inputs_are_4xx_with_a_status(client):
    for query, message in [
        ("ids=x", "ids"),
        ("genre=NOPE", "transcoding.v1.Genre"),
        ("since=yesterday", "since"),
    ]:
        status = status_of(client.get(f"{BOOK}?{query}"), 400, 3)
        expect(message in status["message"], f"{query}: {status}")
    headers = {"content-type": "application/json"}
    status = status_of(client.put(BOOK, content=b"{", headers=headers), 400, 3)
    expect("JSON" in status["message"], f"invalid JSON: {status}")
    status_of(client.get("/v1/nothing/here"), 404, 5)
    response = client.post(BOOK, json={})
    status_of(response, 405, 12)
    equal(response.headers.get("allow"), "DELETE, GET, PATCH, PUT")


# --- The OpenAPI document against the bindings the proto declares.

RULE = re.compile(r'\b(get|put|post|delete|patch)\s*:\s*"([^"]+)"')


def bindings(proto):
    """Every binding of the proto's rules, additional ones included: (method, template)."""
    with open(proto, encoding="utf-8") as file:
        text = file.read()
    return [(method.upper(), template) for method, template in RULE.findall(text)]


def request_path(template):
    """A path a request for `template` could have: each wildcard a segment `x`."""

    def variable(match):
        inner = match.group(1)
        pattern = inner.split("=", 1)[1] if "=" in inner else "*"
        return "/".join("x" if part in ("*", "**") else part for part in pattern.split("/"))

    path = re.sub(r"\{([^}]*)\}", variable, template)
    return "/".join("x" if part in ("*", "**") else part for part in path.split("/"))


def openapi_matches(pattern, path):
    """Whether `path` is one of the OpenAPI path `pattern`'s: `{p}` a run of characters
    that are neither `/` nor `:`."""
    regex = re.sub(r"\\\{[^}]*\\\}", "[^/:]+", re.escape(pattern))
    return re.fullmatch(regex, path) is not None


def openapi_has_every_route(client, proto):
    response = client.get("/openapi.json")
    document = json_of(response)
    equal(document.get("openapi"), "3.1.0")
    paths = document["paths"]
    declared = bindings(proto)
    expect(len(declared) >= 15, f"only {len(declared)} bindings read from {proto}")
    operations = sum(
        1 for item in paths.values() for key in item if key in
        ("get", "put", "post", "delete", "patch")
    )
    equal(operations, len(declared))
    for method, template in declared:
        path = request_path(template)
        found = [
            item[method.lower()]
            for pattern, item in paths.items()
            if openapi_matches(pattern, path) and method.lower() in item
        ]
        expect(len(found) == 1, f"{method} {template} ({path}): {len(found)} operations")
        # And the server answers it: no 404 or 405 for the route the document lists.
        answer = client.request(method, path, content=b"" if method in ("GET", "DELETE") else b"{}")
        expect(
            answer.status_code not in (404, 405),
            f"{method} {path}: HTTP {answer.status_code} {answer.text[:200]}",
        )
    response = client.post("/openapi.json", content=b"{}")
    status_of(response, 405, 12)
    equal(response.headers.get("allow"), "GET")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base, proto = sys.argv[1], sys.argv[2]
    cases = [
        get_path_and_query,
        get_rest_of_path,
        post_body_field,
        patch_with_update_mask,
        put_body_star,
        delete_is_empty,
        post_custom_verb,
        search_additional_bindings,
        get_book_response_body,
        fail_is_a_google_rpc_status,
        watch_as_ndjson,
        watch_as_events,
        download_text_plain,
        download_pieces_as_bytes,
        upload_raw_bytes,
        hidden_is_not_reachable,
        bad_inputs_are_4xx_with_a_status,
        lambda client: openapi_has_every_route(client, proto),
    ]
    names = [case.__name__ for case in cases[:-1]] + ["openapi_has_every_route"]
    passed = failed = 0
    # HTTP/1.1, then HTTP/2 with prior knowledge (http1=False: no upgrade, no TLS).
    for label, http1, http2 in [("http/1.1", True, False), ("http/2", False, True)]:
        with httpx.Client(base_url=base, http1=http1, http2=http2, timeout=TIMEOUT) as client:
            for name, case in zip(names, cases):
                try:
                    case(client)
                    version = client.get("/v1/search").http_version
                    expect(version.lower() == ("http/2" if http2 else "http/1.1"), version)
                except Exception as error:  # Any failure is the case's; the next one runs.
                    failed += 1
                    print(f"FAIL {label:8} {name}: {type(error).__name__}: {error}")
                else:
                    passed += 1
                    print(f"ok   {label:8} {name}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
