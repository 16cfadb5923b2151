"""Plausible wrong answers to every TODO: each must be stopped by its hard-stop checkpoint with a
message (an AssertionError raised in the checkpoint cell, never a traceback from inside
``helpers/``). Keyed by (notebook number, TODO number); each entry is (what is wrong, the whole
TODO cell as a learner might write it)."""

from __future__ import annotations

WRONG_ANSWERS: dict[tuple[str, int], list[tuple[str, str]]] = {
    ("01", 1): [
        (
            "a partial echo: only the call ids",
            """def handle_tool_calls(messages, message, registry):
    messages.append({"role": "assistant", "content": message.content,
                     "tool_calls": [{"id": call.id} for call in message.tool_calls]})
    for call in message.tool_calls:
        try:
            content = registry.get(call.function.name).call(json.loads(call.function.arguments))
        except Exception as exc:
            content = json.dumps({"error": str(exc)})
        messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
""",
        ),
        (
            "no error handling: a bad call raises",
            """def handle_tool_calls(messages, message, registry):
    messages.append({"role": "assistant", "content": message.content, "tool_calls": [
        {"id": c.id, "type": "function",
         "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in message.tool_calls]})
    for call in message.tool_calls:
        content = registry.get(call.function.name).call(json.loads(call.function.arguments))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
""",
        ),
        (
            "errors as plain text, not JSON",
            """def handle_tool_calls(messages, message, registry):
    messages.append({"role": "assistant", "content": message.content, "tool_calls": [
        {"id": c.id, "type": "function",
         "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in message.tool_calls]})
    for call in message.tool_calls:
        try:
            content = registry.get(call.function.name).call(json.loads(call.function.arguments))
        except Exception as exc:
            content = f"error: {exc}"
        messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
""",
        ),
    ],
    ("02", 1): [
        (
            "a naive local time",
            """def log_tool(engine, thread_id, tool_call_id, tool_name, tool_args, tool_output):
    row = ToolOutput(ref_id=secrets.token_urlsafe(12), thread_id=thread_id,
                     tool_call_id=tool_call_id, tool_name=tool_name,
                     tool_args=json.dumps(tool_args), content=tool_output,
                     n_chars=len(tool_output),
                     sha256=hashlib.sha256(tool_output.encode()).hexdigest(),
                     kind="tool_output", created_at=datetime.now())
    with Session(engine) as session:
        session.add(row)
        session.commit()
        return row.id
""",
        ),
        (
            "arguments stored with str(), not JSON",
            """def log_tool(engine, thread_id, tool_call_id, tool_name, tool_args, tool_output):
    row = ToolOutput(ref_id=secrets.token_urlsafe(12), thread_id=thread_id,
                     tool_call_id=tool_call_id, tool_name=tool_name,
                     tool_args=str(tool_args), content=tool_output,
                     n_chars=len(tool_output),
                     sha256=hashlib.sha256(tool_output.encode()).hexdigest(),
                     kind="tool_output", created_at=datetime.now(UTC))
    with Session(engine) as session:
        session.add(row)
        session.commit()
        return row.id
""",
        ),
        (
            "bytes counted as characters",
            """def log_tool(engine, thread_id, tool_call_id, tool_name, tool_args, tool_output):
    row = ToolOutput(ref_id=secrets.token_urlsafe(12), thread_id=thread_id,
                     tool_call_id=tool_call_id, tool_name=tool_name,
                     tool_args=json.dumps(tool_args), content=tool_output,
                     n_chars=len(tool_output.encode()),
                     sha256=hashlib.sha256(tool_output.encode()).hexdigest(),
                     kind="tool_output", created_at=datetime.now(UTC))
    with Session(engine) as session:
        session.add(row)
        session.commit()
        return row.id
""",
        ),
    ],
    ("02", 2): [
        (
            "the filters joined with OR",
            """from sqlalchemy import or_


def prune(engine, older_than=None, thread_id=None):
    if older_than is None and thread_id is None:
        raise ValueError("prune needs a filter")
    conditions = []
    if older_than is not None:
        cutoff = (datetime.now(UTC) - older_than).replace(tzinfo=None)
        conditions.append(ToolOutput.created_at < cutoff)
    if thread_id is not None:
        conditions.append(ToolOutput.thread_id == thread_id)
    with Session(engine) as session:
        result = session.execute(delete(ToolOutput).where(or_(*conditions)))
        session.commit()
        return result.rowcount
""",
        ),
        (
            "the age test the wrong way round",
            """def prune(engine, older_than=None, thread_id=None):
    if older_than is None and thread_id is None:
        raise ValueError("prune needs a filter")
    stmt = delete(ToolOutput)
    if older_than is not None:
        cutoff = (datetime.now(UTC) - older_than).replace(tzinfo=None)
        stmt = stmt.where(ToolOutput.created_at > cutoff)
    if thread_id is not None:
        stmt = stmt.where(ToolOutput.thread_id == thread_id)
    with Session(engine) as session:
        result = session.execute(stmt)
        session.commit()
        return result.rowcount
""",
        ),
        (
            "no filter deletes everything",
            """def prune(engine, older_than=None, thread_id=None):
    stmt = delete(ToolOutput)
    if older_than is not None:
        cutoff = (datetime.now(UTC) - older_than).replace(tzinfo=None)
        stmt = stmt.where(ToolOutput.created_at < cutoff)
    if thread_id is not None:
        stmt = stmt.where(ToolOutput.thread_id == thread_id)
    with Session(engine) as session:
        result = session.execute(stmt)
        session.commit()
        return result.rowcount
""",
        ),
    ],
    ("03", 1): [
        (
            "the hidden count off by one",
            """def make_preview(output, tool_call_id, limit=600):
    if len(output) <= limit:
        return output
    hidden = len(output) - limit + 1
    return output[:limit] + f" ...[+{hidden} chars. full output: fetch_tool_output(tool_call_id='{tool_call_id}')]"
""",
        ),
        (
            "bytes, not characters",
            """def make_preview(output, tool_call_id, limit=600):
    data = output.encode()
    if len(data) <= limit:
        return output
    hidden = len(data) - limit
    return data[:limit].decode(errors="ignore") + f" ...[+{hidden} chars. full output: fetch_tool_output(tool_call_id='{tool_call_id}')]"
""",
        ),
        (
            "an output of exactly limit characters is cut",
            """def make_preview(output, tool_call_id, limit=600):
    if len(output) < limit:
        return output
    hidden = len(output) - limit
    return output[:limit] + f" ...[+{hidden} chars. full output: fetch_tool_output(tool_call_id='{tool_call_id}')]"
""",
        ),
    ],
    ("03", 2): [
        (
            "found in any thread",
            """def fetch_tool_output(store, thread_id, tool_call_id):
    rows = store.list_by_call_id(tool_call_id, with_content=True)
    if not rows:
        return json.dumps({"error": f"no tool call with id {tool_call_id!r}"})
    row = rows[0]
    return json.dumps({"tool_name": row.tool_name, "tool_args": json.loads(row.tool_args),
                       "tool_output": row.content})
""",
        ),
        (
            "an unknown id raises",
            """def fetch_tool_output(store, thread_id, tool_call_id):
    row = store.get(thread_id, tool_call_id, with_content=True)
    return json.dumps({"tool_name": row.tool_name, "tool_args": json.loads(row.tool_args),
                       "tool_output": row.content})
""",
        ),
        (
            "the arguments left as JSON text",
            """def fetch_tool_output(store, thread_id, tool_call_id):
    row = store.get(thread_id, tool_call_id, with_content=True)
    if row is None:
        return json.dumps({"error": f"no tool call with id {tool_call_id!r}"})
    return json.dumps({"tool_name": row.tool_name, "tool_args": row.tool_args,
                       "tool_output": row.content})
""",
        ),
    ],
    ("04", 1): [
        (
            "exactly threshold characters boxed",
            """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    if len(output) < threshold:
        return output
    uri = make_reference(ref_id)
    if boxing == "opaque":
        return uri
    return json.dumps({"type": "resource_link", "uri": uri, "name": f"{tool_name} result",
                       "mimeType": guess_mime_type(output), "size": len(output.encode("utf-8"))})
""",
        ),
        (
            "size in characters",
            """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    if len(output) <= threshold:
        return output
    uri = make_reference(ref_id)
    if boxing == "opaque":
        return uri
    return json.dumps({"type": "resource_link", "uri": uri, "name": f"{tool_name} result",
                       "mimeType": guess_mime_type(output), "size": len(output)})
""",
        ),
        (
            "a resource link without a name",
            """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    if len(output) <= threshold:
        return output
    uri = make_reference(ref_id)
    if boxing == "opaque":
        return uri
    return json.dumps({"type": "resource_link", "uri": uri,
                       "mimeType": guess_mime_type(output), "size": len(output.encode("utf-8"))})
""",
        ),
    ],
    ("04", 2): [
        (
            "no thread check",
            """def unbox(arguments, store, thread_id):
    ref = reference_id(arguments)
    if ref is not None:
        row = store.get_by_ref(ref)
        if row is None:
            raise ReferenceRefused(f"unknown opaque reference {make_reference(ref)}")
        return store.read_all(row.id)
    if isinstance(arguments, dict):
        return {k: unbox(v, store, thread_id) for k, v in arguments.items()}
    if isinstance(arguments, list):
        return [unbox(v, store, thread_id) for v in arguments]
    if isinstance(arguments, str):
        for inside in embedded_reference_ids(arguments):
            row = store.get_by_ref(inside)
            if row is not None and row.thread_id == thread_id:
                raise ReferenceRefused("inside text")
    return arguments
""",
        ),
        (
            "a reference inside text resolved in place",
            """def unbox(arguments, store, thread_id):
    ref = reference_id(arguments)
    if ref is not None:
        row = store.get_by_ref(ref)
        if row is None or row.thread_id != thread_id:
            raise ReferenceRefused(f"refused {make_reference(ref)}")
        return store.read_all(row.id)
    if isinstance(arguments, dict):
        return {k: unbox(v, store, thread_id) for k, v in arguments.items()}
    if isinstance(arguments, list):
        return [unbox(v, store, thread_id) for v in arguments]
    if isinstance(arguments, str):
        for inside in embedded_reference_ids(arguments):
            row = store.get_by_ref(inside)
            if row is not None and row.thread_id == thread_id:
                arguments = arguments.replace(make_reference(inside), store.read_all(row.id))
    return arguments
""",
        ),
        (
            "every look-alike refused, even unknown ones",
            """def unbox(arguments, store, thread_id):
    ref = reference_id(arguments)
    if ref is not None:
        row = store.get_by_ref(ref)
        if row is None or row.thread_id != thread_id:
            raise ReferenceRefused(f"refused {make_reference(ref)}")
        return store.read_all(row.id)
    if isinstance(arguments, dict):
        return {k: unbox(v, store, thread_id) for k, v in arguments.items()}
    if isinstance(arguments, list):
        return [unbox(v, store, thread_id) for v in arguments]
    if isinstance(arguments, str) and embedded_reference_ids(arguments):
        raise ReferenceRefused("a reference inside text")
    return arguments
""",
        ),
    ],
    ("04", 3): [
        (
            "no clamp at the start",
            """def read_slice(value, start_index, length):
    start = len(value) + start_index if start_index < 0 else start_index
    return value[start : start + length]
""",
        ),
        (
            "a negative start read as 0",
            """def read_slice(value, start_index, length):
    start = max(start_index, 0)
    return value[start : start + length]
""",
        ),
    ],
    ("04", 4): [
        (
            "lines numbered from 0",
            """import re


def grep(value, pattern, window):
    lines = value.splitlines()
    ranges = []
    for i, line in enumerate(lines):
        if re.search(pattern, line):
            start, end = max(0, i - window), min(len(lines) - 1, i + window)
            if ranges and start <= ranges[-1][1] + 1:
                ranges[-1][1] = max(ranges[-1][1], end)
            else:
                ranges.append([start, end])
    if not ranges:
        return "No matches found."
    return "\\n\\n".join(
        f"Lines {s}-{e}:\\n" + "\\n".join(f"{n}: {lines[n]}" for n in range(s, e + 1))
        for s, e in ranges
    )
""",
        ),
        (
            "touching ranges kept apart",
            """import re


def grep(value, pattern, window):
    lines = value.splitlines()
    ranges = []
    for i, line in enumerate(lines):
        if re.search(pattern, line):
            start, end = max(0, i - window), min(len(lines) - 1, i + window)
            if ranges and start <= ranges[-1][1]:
                ranges[-1][1] = max(ranges[-1][1], end)
            else:
                ranges.append([start, end])
    if not ranges:
        return "No matches found."
    return "\\n\\n".join(
        f"Lines {s + 1}-{e + 1}:\\n" + "\\n".join(f"{n + 1}: {lines[n]}" for n in range(s, e + 1))
        for s, e in ranges
    )
""",
        ),
        (
            "the window ignored",
            """import re


def grep(value, pattern, window):
    lines = value.splitlines()
    hits = [i for i, line in enumerate(lines) if re.search(pattern, line)]
    if not hits:
        return "No matches found."
    return "\\n\\n".join(f"Lines {i + 1}-{i + 1}:\\n{i + 1}: {lines[i]}" for i in hits)
""",
        ),
    ],
    ("06", 1): [
        (
            "an unknown tool counted as a read",
            """def categorize(tool_name):
    if tool_name == "google_drive_write_file":
        return "write"
    if tool_name == "deep_check":
        return "execution"
    if tool_name == "run_sql" or tool_name.startswith("internal_resource_"):
        return "query"
    return "read"
""",
        ),
        (
            "a full read taken for a query",
            """def categorize(tool_name):
    if tool_name == "run_sql" or tool_name.startswith("internal_resource_"):
        return "query"
    if tool_name in {"get_page", "yt_transcribe", "fetch_tool_output"}:
        return "read"
    if tool_name == "google_drive_write_file":
        return "write"
    return "execution"
""",
        ),
    ],
    ("06", 2): [
        (
            "every call counted as written",
            """def summarize_writes(writes):
    lines = [f"- Wrote {len(writes)} files:"]
    for e in writes:
        name = e.arguments.get("file_name", "?")
        lines.append(f"  - {name}: FAILED: {e.error}" if e.error else f"  - {name}: {e.result}")
    return "\\n".join(lines)
""",
        ),
        (
            "failures left out",
            """def summarize_writes(writes):
    ok = [e for e in writes if e.error is None]
    lines = [f"- Wrote {len(ok)} files:"]
    for e in ok:
        lines.append(f"  - {e.arguments.get('file_name', '?')}: {e.result}")
    return "\\n".join(lines)
""",
        ),
        (
            "the model's text written unquoted (a file name can start a line of its own)",
            """def summarize_writes(writes):
    ok = [e for e in writes if e.error is None]
    lines = [f"- Wrote {len(ok)} files:"]
    for e in writes:
        name = e.arguments.get("file_name", "?")
        lines.append(f"  - {name}: FAILED: {e.error}" if e.error else f"  - {name}: {e.result}")
    return "\\n".join(lines)
""",
        ),
        (
            "quoted with repr() instead of quoted(): not the summary's JSON strings, no length cap",
            """def summarize_writes(writes):
    ok = [e for e in writes if e.error is None]
    lines = [f"- Wrote {len(ok)} files:"]
    for e in writes:
        name = repr(e.arguments.get("file_name", "?"))
        lines.append(f"  - {name}: FAILED: {e.error!r}" if e.error else f"  - {name}: {e.result!r}")
    return "\\n".join(lines)
""",
        ),
    ],
    ("06", 3): [
        ("fold nothing", "def fold_indices(messages, keep_last):\n    return set()\n"),
        (
            "the first request folded too",
            """def fold_indices(messages, keep_last):
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    owners = [i for i, m in enumerate(messages) for _ in m.get("tool_calls") or []]
    protected = owners[len(owners) - keep_last :] if keep_last else []
    return set(range(users[0], min([users[-1], *protected])))
""",
        ),
        (
            "keep_last ignored",
            """def fold_indices(messages, keep_last):
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    return set(range(users[0] + 1, users[-1]))
""",
        ),
    ],
    ("07", 1): [
        (
            "no whitelist read as no tools",
            """def schemas_for_mode(registry, mode):
    allowed = MODES[mode] or ()
    return [tool.schema() for tool in registry if tool.name in allowed]
""",
        ),
        (
            "names instead of schemas",
            """def schemas_for_mode(registry, mode):
    allowed = MODES[mode]
    return [tool.name for tool in registry if allowed is None or tool.name in allowed]
""",
        ),
    ],
    ("07", 2): [
        (
            "checked after running",
            """def guarded_call(registry, mode, name, arguments):
    result = registry.get(name).call(arguments)
    allowed = MODES[mode]
    if allowed is not None and name not in allowed:
        return json.dumps({"error": f"tool {name!r} is not available in mode {mode!r}"})
    return result
""",
        ),
        (
            "refused without saying why",
            """def guarded_call(registry, mode, name, arguments):
    allowed = MODES[mode]
    if allowed is not None and name not in allowed:
        return json.dumps({"error": "refused"})
    return registry.get(name).call(arguments)
""",
        ),
    ],
    ("07", 3): [
        (
            "no cap on the JSON summary",
            """def summarize(result, max_chars=300):
    try:
        data = json.loads(result)
    except ValueError:
        return result[:max_chars]
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        parts = []
        for part in data["content"]:
            if part.get("type") == "text":
                parts.append(part["text"])
            else:
                size = len(base64.b64decode(part.get("data", "")))
                parts.append(f"[{part.get('mimeType', part.get('type'))}, {size} bytes]")
        return "\\n".join(parts)[:max_chars]
    if isinstance(data, dict):
        fields = list(data.items())[:4]
        return "Result: " + ", ".join(
            f"{k}=" + (f"[{len(v)} items]" if isinstance(v, list) else str(v)) for k, v in fields
        )
    return result[:max_chars]
""",
        ),
        (
            "every field, not the first four",
            """def summarize(result, max_chars=300):
    try:
        data = json.loads(result)
    except ValueError:
        return result[:max_chars]
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        parts = []
        for part in data["content"]:
            if part.get("type") == "text":
                parts.append(part["text"])
            else:
                size = len(base64.b64decode(part.get("data", "")))
                parts.append(f"[{part.get('mimeType', part.get('type'))}, {size} bytes]")
        return "\\n".join(parts)[:max_chars]
    if isinstance(data, dict):
        return ("Result: " + ", ".join(
            f"{k}=" + (f"[{len(v)} items]" if isinstance(v, list) else str(v)[:40])
            for k, v in data.items()
        ))[:max_chars]
    return result[:max_chars]
""",
        ),
    ],
}
