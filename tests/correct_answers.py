"""Correct answers to every TODO in unusual styles: each must pass its hard-stop checkpoint.

Written from the attendee notebooks alone, by a fresh pair of eyes (issue 35's review): a
loop where the solution has a comprehension, a helper function, recursion, another
SQLAlchemy construct. A checkpoint that refuses one of them checks a style, not the lesson.
Keyed by (notebook number, TODO number); each entry is (its style, the whole TODO cell)."""

from __future__ import annotations

CORRECT_ANSWERS: dict[tuple[str, int], list[tuple[str, str]]] = {
    ("01", 1): [
        (
            "helper functions, index loop, tool messages built first then extended",
            """def _echo(call):
    fn = call.function
    return {"id": call.id, "type": "function", "function": {"name": fn.name, "arguments": fn.arguments}}


def _run_one(call, registry):
    raw = call.function.arguments
    try:
        parsed = json.loads(raw if raw else "{}")
    except ValueError as exc:
        return json.dumps({"error": f"malformed JSON arguments: {exc}"})
    try:
        tool = registry.get(call.function.name)
    except Exception as exc:
        return json.dumps({"error": f"unknown tool {call.function.name!r}: {exc}"})
    try:
        return tool.call(parsed)
    except Exception as exc:
        return json.dumps({"error": f"{call.function.name} failed: {type(exc).__name__}: {exc}"})


def handle_tool_calls(messages, message, registry):
    calls = list(message.tool_calls or [])
    answers = []
    i = 0
    while i < len(calls):
        answers.append({"role": "tool", "tool_call_id": calls[i].id, "content": _run_one(calls[i], registry)})
        i += 1
    messages.append({"role": "assistant", "content": message.content, "tool_calls": list(map(_echo, calls))})
    messages.extend(answers)
""",
        ),
        (
            "generator of tool messages, messages += ...",
            """def handle_tool_calls(messages, message, registry):
    calls = message.tool_calls or []

    def answers():
        for call in calls:
            try:
                result = registry.get(call.function.name).call(json.loads(call.function.arguments or "{}"))
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                result = json.dumps({"error": repr(exc)})
            yield {"role": "tool", "tool_call_id": call.id, "content": result}

    messages += [{
        "role": "assistant",
        "content": message.content,
        "tool_calls": [dict(id=c.id, type="function", function=dict(name=c.function.name, arguments=c.function.arguments)) for c in calls],
    }]
    messages += list(answers())
""",
        ),
    ],
    ("02", 1): [
        (
            "Session.begin() block, fields from a dict, flush for the id",
            """def _columns(thread_id, tool_call_id, tool_name, tool_args, tool_output):
    raw = bytes(tool_output, "utf-8")
    digest = hashlib.new("sha256")
    digest.update(raw)
    return {
        "ref_id": secrets.token_urlsafe(12),
        "thread_id": thread_id,
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
        "tool_args": json.dumps(tool_args),
        "content": tool_output,
        "n_chars": len(tool_output),
        "n_bytes": len(raw),
        "sha256": digest.hexdigest(),
        "kind": "tool_output",
        "created_at": datetime.now(tz=UTC),
    }


def log_tool(engine, thread_id, tool_call_id, tool_name, tool_args, tool_output):
    row = ToolOutput(**_columns(thread_id, tool_call_id, tool_name, tool_args, tool_output))
    with Session(engine) as session, session.begin():
        session.add(row)
        session.flush()
        new_id = row.id
    return int(new_id)
""",
        ),
        (
            "Core insert(ToolOutput) in a Session, inserted_primary_key",
            """def log_tool(engine, thread_id, tool_call_id, tool_name, tool_args, tool_output):
    from sqlalchemy import insert
    encoded = tool_output.encode("utf-8")
    values = dict(ref_id=secrets.token_urlsafe(12), thread_id=thread_id, tool_call_id=tool_call_id,
                  tool_name=tool_name, tool_args=json.dumps(tool_args), content=tool_output,
                  n_chars=len(tool_output), n_bytes=len(encoded),
                  sha256=hashlib.sha256(encoded).hexdigest(), kind="tool_output",
                  created_at=datetime.now(UTC))
    with Session(engine) as session:
        result = session.execute(insert(ToolOutput).values(**values))
        session.commit()
        return result.inserted_primary_key[0]
""",
        ),
    ],
    ("02", 2): [
        (
            "Core, engine.begin(), and_(*conditions)",
            """def prune(engine, older_than=None, thread_id=None):
    from sqlalchemy import and_
    conditions = []
    if older_than is not None:
        naive_cut = datetime.now(UTC).replace(tzinfo=None) - older_than
        conditions.append(ToolOutput.__table__.c.created_at < naive_cut)
    if thread_id is not None:
        conditions.append(ToolOutput.__table__.c.thread_id == thread_id)
    if not conditions:
        raise ValueError("prune needs older_than or thread_id: refusing to delete everything")
    with engine.begin() as connection:
        result = connection.execute(ToolOutput.__table__.delete().where(and_(*conditions)))
    return result.rowcount
""",
        ),
        (
            "ORM query().filter().delete() on thread_key",
            """def prune(engine, older_than=None, thread_id=None):
    if (older_than, thread_id) == (None, None):
        raise ValueError("no filter given")
    with Session(engine) as session:
        query = session.query(ToolOutput)
        if thread_id is not None:
            query = query.filter(ToolOutput.thread_key == hashlib.sha256(thread_id.encode("utf-8")).hexdigest())
        if older_than is not None:
            query = query.filter(ToolOutput.created_at < (datetime.now(UTC) - older_than).replace(tzinfo=None))
        gone = query.delete(synchronize_session=False)
        session.commit()
    return gone
""",
        ),
    ],
    ("03", 1): [
        (
            "head/tail split, the tail decides",
            """def make_preview(output, tool_call_id, limit=600):
    head, tail = output[:limit], output[limit:]
    if not tail:
        return output
    return "".join([head, " ...[+", str(len(tail)), " chars. full output: fetch_tool_output(tool_call_id='", tool_call_id, "')]"])
""",
        ),
        (
            "string.Template, conditional expression",
            """def make_preview(output, tool_call_id, limit=600):
    from string import Template
    marker = Template(" ...[+$n chars. full output: fetch_tool_output(tool_call_id='$id')]")
    return output if len(output) <= limit else output[:limit] + marker.safe_substitute(n=len(output) - limit, id=tool_call_id)
""",
        ),
    ],
    ("03", 2): [
        (
            "row.args property and walrus",
            """def fetch_tool_output(store, thread_id, tool_call_id):
    if (row := store.get(thread_id, tool_call_id, with_content=True)) is not None:
        payload = {"tool_name": row.tool_name, "tool_args": row.args, "tool_output": row.content}
    else:
        payload = {"error": "no tool call with id " + repr(tool_call_id) + " in this conversation"}
    return json.dumps(payload, ensure_ascii=False)
""",
        ),
        (
            "dict(zip(...)) and a JSONEncoder",
            """def fetch_tool_output(store, thread_id, tool_call_id):
    encoder = json.JSONEncoder()
    found = store.get(thread_id, tool_call_id, with_content=True)
    if found is None:
        return encoder.encode({"error": "no tool call with id %s" % tool_call_id})
    keys = ("tool_name", "tool_args", "tool_output")
    return encoder.encode(dict(zip(keys, (found.tool_name, json.loads(found.tool_args), found.content))))
""",
        ),
    ],
    ("04", 1): [
        (
            "match statement, link keys in another order",
            """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    if not len(output) > threshold:
        return output
    uri = "internal://" + ref_id
    match boxing:
        case "opaque":
            return uri
        case "json":
            link = {}
            link["size"] = len(bytes(output, encoding="utf-8"))
            link["mimeType"] = guess_mime_type(output)
            link["name"] = "%s result" % tool_name
            link["uri"] = uri
            link["type"] = "resource_link"
            return json.dumps(link)
        case _:
            raise ValueError("boxing must be 'opaque' or 'json'")
""",
        ),
        (
            "a table of builders",
            """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    builders = {
        "opaque": lambda: make_reference(ref_id),
        "json": lambda: json.dumps(dict(type="resource_link", uri=make_reference(ref_id),
                                        name=tool_name + " result", mimeType=guess_mime_type(output),
                                        size=len(output.encode()))),
    }
    return output if len(output) <= threshold else builders[boxing]()
""",
        ),
    ],
    ("04", 2): [
        (
            "deepcopy, then resolve in place on the copy",
            """def _value_of(store, thread_id, ref_id):
    row = store.get_by_ref(ref_id)
    if row is None:
        raise ReferenceRefused(f"unknown reference internal://{ref_id}")
    if row.thread_id != thread_id:
        raise ReferenceRefused(f"reference internal://{ref_id} belongs to another thread")
    return store.read_all(row.id)


def _mine(store, thread_id, ref_id):
    row = store.get_by_ref(ref_id)
    return row is not None and row.thread_id == thread_id

def _resolve_string(text, store, thread_id):
    whole = reference_id(text)
    if whole is not None:
        return _value_of(store, thread_id, whole)
    for embedded in embedded_reference_ids(text):
        if _mine(store, thread_id, embedded):
            raise ReferenceRefused(
                f"internal://{embedded} is inside longer text: pass the reference alone, as the whole value")
    return text


def _fill(node, store, thread_id):
    pairs = node.items() if isinstance(node, dict) else enumerate(node)
    for slot, item in list(pairs):
        if isinstance(item, str):
            node[slot] = _resolve_string(item, store, thread_id)
        elif isinstance(item, (dict, list)):
            _fill(item, store, thread_id)


def unbox(arguments, store, thread_id):
    import copy
    if isinstance(arguments, str):
        return _resolve_string(arguments, store, thread_id)
    duplicate = copy.deepcopy(arguments)
    if isinstance(duplicate, (dict, list)):
        _fill(duplicate, store, thread_id)
    return duplicate
""",
        ),
        (
            "singledispatch walker",
            """def unbox(arguments, store, thread_id):
    from functools import singledispatch

    def stored(ref_id):
        row = store.get_by_ref(ref_id)
        if row is None or row.thread_id != thread_id:
            raise ReferenceRefused(
                f"internal://{ref_id}: " + ("unknown reference" if row is None else "from another thread"))
        return store.read_all(row.id)

    @singledispatch
    def walk(value):
        return value

    @walk.register
    def _(value: dict):
        return {key: walk(item) for key, item in value.items()}

    @walk.register
    def _(value: list):
        return [walk(item) for item in value]

    @walk.register
    def _(value: str):
        ref = reference_id(value)
        if ref is not None:
            return stored(ref)
        for candidate in embedded_reference_ids(value):
            row = store.get_by_ref(candidate)
            if row is not None and row.thread_id == thread_id:
                raise ReferenceRefused("a reference inside text is refused: pass it alone")
        return value

    return walk(arguments)
""",
        ),
    ],
    ("04", 3): [
        (
            "slice.indices normalises the start",
            """def read_slice(value, start_index, length):
    if length < 0:
        raise ValueError(f"length must be >= 0, got {length}")
    begin, _, _ = slice(start_index, None).indices(len(value))
    return value[begin:begin + length]
""",
        ),
        (
            "itertools.islice over the characters",
            """def read_slice(value, start_index, length):
    from itertools import islice
    if length < 0:
        raise ValueError("negative length")
    n = len(value)
    first = start_index if start_index >= 0 else max(n + start_index, 0)
    return "".join(islice(value, first, first + length)) if first < n else ""
""",
        ),
    ],
    ("04", 4): [
        (
            "a keep mask grouped with itertools.groupby",
            r"""def grep(value, pattern, window):
    import re
    from itertools import groupby
    regex = re.compile(pattern)
    lines = value.splitlines()
    keep = [False] * len(lines)
    for index, line in enumerate(lines):
        if regex.search(line):
            for j in range(max(0, index - window), min(len(lines), index + window + 1)):
                keep[j] = True
    blocks = []
    for kept, run in groupby(range(len(lines)), key=lambda j: keep[j]):
        if kept:
            run = list(run)
            text = f"Lines {run[0] + 1}-{run[-1] + 1}:"
            for j in run:
                text += f"\n{j + 1}: {lines[j]}"
            blocks.append(text)
    return "\n\n".join(blocks) if blocks else "No matches found."
""",
        ),
        (
            "recursive merge of sorted intervals",
            r"""def _merge(intervals):
    if len(intervals) < 2:
        return intervals
    (a, b), (c, d) = intervals[0], intervals[1]
    if c <= b + 1:
        return _merge([(a, max(b, d))] + intervals[2:])
    return [(a, b)] + _merge(intervals[1:])


def grep(value, pattern, window):
    import re
    rows = value.splitlines()
    last = len(rows) - 1
    spans = [(max(0, i - window), min(last, i + window)) for i, r in enumerate(rows) if re.search(pattern, r) is not None]
    if not spans:
        return "No matches found."
    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(spans) + 100))
    try:
        merged = _merge(spans)
    finally:
        sys.setrecursionlimit(limit)
    return "\n\n".join(
        "\n".join([f"Lines {a + 1}-{b + 1}:", *(f"{k + 1}: {rows[k]}" for k in range(a, b + 1))])
        for a, b in merged
    )
""",
        ),
    ],
    ("06", 1): [
        (
            "match statement",
            """def categorize(tool_name):
    match tool_name:
        case "get_page" | "yt_transcribe" | "internal_resource_read" | "fetch_tool_output":
            return "read"
        case "google_drive_write_file":
            return "write"
        case ("run_sql" | "internal_resource_grep" | "internal_resource_read_slice"
              | "internal_resource_read_lines" | "internal_resource_length"
              | "internal_resource"):
            return "query"
        case _:
            return "execution"
""",
        ),
        (
            "loop over category sets",
            """def categorize(tool_name):
    groups = (
        ("read", "get_page yt_transcribe internal_resource_read fetch_tool_output"),
        ("write", "google_drive_write_file"),
        ("query", "run_sql internal_resource_grep internal_resource_read_slice internal_resource_read_lines internal_resource_length internal_resource"),
    )
    for category, names in groups:
        if tool_name in names.split(" "):
            return category
    return "execution"
""",
        ),
    ],
    ("06", 2): [
        (
            "line builder helper and a generator",
            r"""def _line(e):
    head = "  - " + quoted(e.arguments["file_name"]) + ": "
    return head + ("FAILED: " + quoted(e.error) if e.error is not None else quoted(e.result))


def summarize_writes(writes):
    writes = list(writes)
    ok = len([w for w in writes if w.error is None])
    noun = {1: "file"}.get(ok, "files")
    return "\n".join(["- Wrote %d %s:" % (ok, noun), *(_line(w) for w in writes)])
""",
        ),
        (
            "functools.reduce over the calls",
            r"""def summarize_writes(writes):
    from functools import reduce

    def step(acc, e):
        count, lines = acc
        failed = e.error is not None
        detail = f"FAILED: {quoted(e.error)}" if failed else quoted(e.result)
        return count + (0 if failed else 1), lines + [f"  - {quoted(e.arguments['file_name'])}: {detail}"]

    count, lines = reduce(step, writes, (0, []))
    header = "- Wrote 1 file:" if count == 1 else f"- Wrote {count} files:"
    return "\n".join([header] + lines)
""",
        ),
    ],
    ("06", 3): [
        (
            "one owner index per call, then a slice",
            """def fold_indices(messages, keep_last):
    first_user = next(i for i, m in enumerate(messages) if m.get("role") == "user")
    current = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    owner_of_call = [i for i, m in enumerate(messages) if m.get("role") == "assistant" for _ in (m.get("tool_calls") or ())]
    protected = owner_of_call[-keep_last:] if keep_last > 0 else []
    start = min([current] + protected)
    return {i for i in range(len(messages)) if first_user < i < start}
""",
        ),
        (
            "recursive walk back from the end",
            """def _tail_start(messages, i, still, best):
    if i < 0 or still <= 0:
        return best
    m = messages[i]
    calls = m.get("tool_calls") or [] if m.get("role") == "assistant" else []
    if calls:
        return _tail_start(messages, i - 1, still - len(calls), min(best, i))
    return _tail_start(messages, i - 1, still, best)


def fold_indices(messages, keep_last):
    import sys
    roles = [m.get("role") for m in messages]
    first = roles.index("user")
    last = len(roles) - 1 - roles[::-1].index("user")
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 2 * len(messages) + 100))
    try:
        start = _tail_start(messages, len(messages) - 1, keep_last, last)
    finally:
        sys.setrecursionlimit(old)
    return set(range(first + 1, start))
""",
        ),
    ],
    ("07", 1): [
        (
            "filter registry.schemas() by function name",
            """def schemas_for_mode(registry, mode):
    if mode not in MODES:
        return []
    whitelist = MODES[mode]
    keep = (lambda name: True) if whitelist is None else whitelist.__contains__
    return list(filter(lambda schema: keep(schema["function"]["name"]), registry.schemas()))
""",
        ),
        (
            "explicit loop, KeyError for an unknown mode",
            """def schemas_for_mode(registry, mode):
    try:
        allowed = MODES[mode]
    except KeyError:
        raise KeyError(f"unknown mode {mode!r}") from None
    offered = []
    for tool in registry:
        if allowed is not None and tool.name not in allowed:
            continue
        offered.append(tool.schema())
    return offered
""",
        ),
    ],
    ("07", 2): [
        (
            "a refusal helper, unknown mode answered as a JSON error",
            """def _refusal(name, mode, why):
    return json.dumps({"error": f"{why}: the tool {name} was not run in mode {mode}"})


def guarded_call(registry, mode, name, arguments):
    if mode not in MODES:
        return _refusal(name, mode, "unknown mode")
    whitelist = MODES[mode]
    permitted = whitelist is None or name in whitelist
    if not permitted:
        return _refusal(name, mode, f"{name} is outside the whitelist of mode {mode}")
    tool = registry.get(name)
    return tool.call(arguments)
""",
        ),
        (
            "unknown mode raises KeyError via MODES[mode]",
            """def guarded_call(registry, mode, name, arguments):
    whitelist = MODES[mode]
    if whitelist is not None:
        if not any(name == allowed for allowed in whitelist):
            return json.dumps({"error": "mode %s does not allow the tool %s" % (mode, name)})
    return registry.get(name).call(arguments)
""",
        ),
    ],
    ("07", 3): [
        (
            "helpers per rule, single exit with the cap",
            r"""def _part_text(part):
    if part.get("type") == "text":
        return str(part.get("text", ""))
    label = part["mimeType"] if part.get("mimeType") is not None else part.get("type")
    return "[%s, %d bytes]" % (label, len(base64.b64decode(part.get("data", ""))))


def _field(key, value):
    shown = "[%d items]" % len(value) if isinstance(value, list) else str(value)[:40]
    return "%s=%s" % (key, shown)


def summarize(result, max_chars=300):
    text = result
    try:
        parsed = json.loads(result)
    except (ValueError, TypeError):
        parsed = None
    if isinstance(parsed, dict):
        if isinstance(parsed.get("content"), list):
            text = "\n".join(map(_part_text, parsed["content"]))
        else:
            from itertools import islice
            text = "Result: " + ", ".join(_field(k, v) for k, v in islice(parsed.items(), 4))
    return text[:max_chars]
""",
        ),
    ],
    ("08", 1): [
        (
            "a lookup with try/except UnknownToolError, early returns, f-string with commas",
            """def bridge(tools, name, arguments_json, max_output_chars):
    try:
        tool = tools.get(name)
    except Exception:
        return (False, f"{name!r} is not a tool this program may call")
    try:
        args = json.loads(arguments_json)
    except json.JSONDecodeError as exc:
        return (False, f"bad arguments for {name}: {exc}")
    if type(args) is not dict:
        return (False, f"bad arguments for {name}: not an object")
    try:
        out = tool.call(args)
    except BaseException as exc:  # noqa: BLE001
        return (False, f"{name} raised {type(exc).__name__}: {' '.join(str(exc).split())}")
    n = len(out)
    return (True, out) if n <= max_output_chars else (False, f"{name}: {n:,} chars > limit {max_output_chars:,}")
""",
        ),
    ],
    ("08", 2): [
        (
            "a regular expression, a loop, the URL through JSON.parse of a JSON text",
            """def error_report_program(url):
    literal = json.dumps(json.dumps(url))
    return "\\n".join([
        f"const target = JSON.parse({literal});",
        "const text = await tools.get_page({url: target});",
        "let count = 0, first = null;",
        "for (const line of text.split(/\\\\n/)) {",
        "  if (/ERROR/.test(line)) { count += 1; if (first === null) first = line; }",
        "}",
        "return {first, count};",
    ])
""",
        ),
    ],
}

CORRECT_ANSWERS[("09", 1)] = [
    (
        "match on the block's type field, a dispatch of its own for resource contents",
        """def _resource_text(contents):
    match contents.model_dump(mode="json", by_alias=True, exclude_none=True):
        case {"text": str(text)}:
            return text
        case dumped:
            return json.dumps(dumped)


def mcp_result_text(result, read):
    texts = [b.text for b in result.content if b.type == "text"]
    if result.is_error:
        raise McpToolError("\\n".join(texts).strip() or "failed")
    out = []
    for block in result.content:
        match block.type:
            case "text":
                out.append(block.text)
            case "resource_link":
                for contents in read(block.uri).contents:
                    out.append(_resource_text(contents))
            case "resource":
                out.append(_resource_text(block.resource))
            case _:
                out.append(json.dumps(block.model_dump(mode="json", by_alias=True, exclude_none=True)))
    if out or result.structured_content is None:
        return "\\n".join(out)
    return json.dumps(result.structured_content, ensure_ascii=False)
""",
    ),
]
