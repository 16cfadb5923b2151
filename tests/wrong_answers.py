"""Plausible wrong answers to every TODO: each must be stopped by its hard-stop checkpoint with a
message (an AssertionError raised in the checkpoint cell, never a traceback from inside
``helpers/``). Keyed by (notebook number, TODO number); each entry is (what is wrong, the whole
TODO cell as a learner might write it)."""

from __future__ import annotations

WRONG_ANSWERS: dict[tuple[str, int], list[tuple[str, str]]] = {
    ("01", 1): [
        (
            "empty arguments not read as no arguments (json.loads(''))",
            """def handle_tool_calls(messages, message, registry):
    messages.append({"role": "assistant", "content": message.content, "tool_calls": [
        {"id": c.id, "type": "function",
         "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in message.tool_calls]})
    for call in message.tool_calls:
        try:
            content = registry.get(call.function.name).call(json.loads(call.function.arguments))
        except Exception as exc:
            content = json.dumps({"error": str(exc)})
        messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
""",
        ),
        (
            "the whole model_dump() echoed (refusal, audio, annotations: fields providers refuse)",
            """def handle_tool_calls(messages, message, registry):
    messages.append(message.model_dump())
    for call in message.tool_calls:
        try:
            arguments = json.loads(call.function.arguments or "{}")
            content = registry.get(call.function.name).call(arguments)
        except Exception as exc:
            content = json.dumps({"error": str(exc)})
        messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
""",
        ),
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
            "lines split on \\n and \\r\\n only (not every line end splitlines knows)",
            """import re


def grep(value, pattern, window):
    lines = re.split(r"\\r?\\n", value)
    if lines and lines[-1] == "":
        lines.pop()
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
        f"Lines {s + 1}-{e + 1}:\\n" + "\\n".join(f"{n + 1}: {lines[n]}" for n in range(s, e + 1))
        for s, e in ranges
    )
""",
        ),
        (
            "trailing whitespace stripped from each line",
            """import re


def grep(value, pattern, window):
    lines = [line.rstrip() for line in value.splitlines()]
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
        f"Lines {s + 1}-{e + 1}:\\n" + "\\n".join(f"{n + 1}: {lines[n]}" for n in range(s, e + 1))
        for s, e in ranges
    )
""",
        ),
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
            "fewer calls than keep_last: a negative slice start protects only some of them",
            """def fold_indices(messages, keep_last):
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    owners = [i for i, m in enumerate(messages) for _ in m.get("tool_calls") or []]
    protected = owners[len(owners) - keep_last :] if keep_last else []
    return set(range(users[0] + 1, min([users[-1], *protected])))
""",
        ),
        (
            "the first request folded too",
            """def fold_indices(messages, keep_last):
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    owners = [i for i, m in enumerate(messages) for _ in m.get("tool_calls") or []]
    protected = owners[-keep_last:] if keep_last else []
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
            "any object with a content field read as content parts (not only a list)",
            """def summarize(result, max_chars=300):
    try:
        data = json.loads(result)
    except ValueError:
        data = None
    if isinstance(data, dict) and "content" in data:
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
        shown = [f"{k}=" + (f"[{len(v)} items]" if isinstance(v, list) else str(v)[:40])
                 for k, v in fields]
        return ("Result: " + ", ".join(shown))[:max_chars]
    return result[:max_chars]
""",
        ),
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
    ("08", 1): [
        (
            "the output let through however long (no bound)",
            """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r}"
    try:
        arguments = json.loads(arguments_json)
        if not isinstance(arguments, dict):
            return False, f"{name} takes an object"
        return True, tools.get(name).call(arguments)
    except Exception as exc:
        return False, f"{name} failed: {exc}"
""",
        ),
        (
            "the bound off by one (an output of exactly the limit refused)",
            """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r}"
    try:
        arguments = json.loads(arguments_json)
        if not isinstance(arguments, dict):
            return False, f"{name} takes an object"
        output = tools.get(name).call(arguments)
    except Exception as exc:
        return False, f"{name} failed: {exc}"
    if len(output) >= max_output_chars:
        return False, f"{name}: {len(output)} characters, limit {max_output_chars}"
    return True, output
""",
        ),
        (
            "a long output cut to the limit and passed on as if whole",
            """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r}"
    try:
        arguments = json.loads(arguments_json)
        if not isinstance(arguments, dict):
            return False, f"{name} takes an object"
        return True, tools.get(name).call(arguments)[:max_output_chars]
    except Exception as exc:
        return False, f"{name} failed: {exc}"
""",
        ),
        (
            "the tool's exception lets through (no try around the call)",
            """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r}"
    try:
        arguments = json.loads(arguments_json)
    except ValueError:
        return False, f"{name}: bad JSON"
    if not isinstance(arguments, dict):
        return False, f"{name} takes an object"
    output = tools.get(name).call(arguments)
    if len(output) > max_output_chars:
        return False, f"{name}: {len(output)} characters, limit {max_output_chars}"
    return True, output
""",
        ),
        (
            "arguments not checked to be an object (a list reaches the tool)",
            """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r}"
    try:
        output = tools.get(name).fn(*json.loads(arguments_json))
    except Exception as exc:
        return False, f"{name} failed: {exc}"
    if len(output) > max_output_chars:
        return False, f"{name}: {len(output)} characters, limit {max_output_chars}"
    return True, output
""",
        ),
        (
            "the error message does not say which tool",
            """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, "unknown tool"
    try:
        arguments = json.loads(arguments_json)
        if not isinstance(arguments, dict):
            return False, "arguments must be an object"
        output = tools.get(name).call(arguments)
    except Exception as exc:
        return False, f"failed: {exc}"
    if len(output) > max_output_chars:
        return False, f"{name}: {len(output)} characters, limit {max_output_chars}"
    return True, output
""",
        ),
    ],
    ("08", 2): [
        (
            "the whole page returned",
            """def error_report_program(url):
    return f"return await tools.get_page({{url: {json.dumps(url)}}});"
""",
        ),
        (
            "every matching line returned, not only the first",
            """def error_report_program(url):
    return (
        f"const page = await tools.get_page({{url: {json.dumps(url)}}});"
        "const hits = page.split('\\\\n').filter((l) => l.includes('ERROR'));"
        "return {count: hits.length, first: hits.length ? hits[0] : null, lines: hits};"
    )
""",
        ),
        (
            "case ignored (error and Error counted)",
            """def error_report_program(url):
    return (
        f"const page = await tools.get_page({{url: {json.dumps(url)}}});"
        "const hits = page.split('\\\\n').filter((l) => /error/i.test(l));"
        "return {count: hits.length, first: hits.length ? hits[0] : null};"
    )
""",
        ),
        (
            "first left undefined when there is no match (the key disappears)",
            """def error_report_program(url):
    return (
        f"const page = await tools.get_page({{url: {json.dumps(url)}}});"
        "const hits = page.split('\\\\n').filter((l) => l.includes('ERROR'));"
        "return {count: hits.length, first: hits[0]};"
    )
""",
        ),
        (
            "the URL pasted between quotes",
            """def error_report_program(url):
    return (
        f"const page = await tools.get_page({{url: '{url}'}});"
        "const hits = page.split('\\\\n').filter((l) => l.includes('ERROR'));"
        "return {count: hits.length, first: hits.length ? hits[0] : null};"
    )
""",
        ),
        (
            "occurrences counted, not lines",
            """def error_report_program(url):
    return (
        f"const page = await tools.get_page({{url: {json.dumps(url)}}});"
        "const first = page.split('\\\\n').find((l) => l.includes('ERROR'));"
        "return {count: page.split('ERROR').length - 1, first: first === undefined ? null : first};"
    )
""",
        ),
        (
            "no await: the page is a promise",
            """def error_report_program(url):
    return (
        f"const page = tools.get_page({{url: {json.dumps(url)}}});"
        "const hits = String(page).split('\\\\n').filter((l) => l.includes('ERROR'));"
        "return {count: hits.length, first: hits.length ? hits[0] : null};"
    )
""",
        ),
    ],
}

# -- the families a fresh pair of eyes found (issue 18): fail-open guards, OR for AND, chunked
# outputs read from one column, mutation, case folding, guessable ids, time zones, counting per
# message, a history without a system message, successes answered before errors --------------

_LOG_TOOL = """def log_tool(engine, thread_id, tool_call_id, tool_name, tool_args, tool_output):
    row = ToolOutput(ref_id={ref_id}, thread_id=thread_id,
                     tool_call_id=tool_call_id, tool_name=tool_name,
                     tool_args=json.dumps(tool_args), content=tool_output,
                     n_chars=len(tool_output), n_bytes=len(tool_output.encode("utf-8")),
                     sha256=hashlib.sha256(tool_output.encode()).hexdigest(),
                     kind="tool_output", created_at=datetime.now(UTC))
    with Session(engine) as session:
        session.add(row)
        session.commit()
        return {returned}
"""
_PRUNE = """def prune(engine, older_than=None, thread_id=None):
    if older_than is None and thread_id is None:
        raise ValueError("a filter, please")
    stmt = delete(ToolOutput)
{filters}
    with Session(engine) as session:
        result = session.execute(stmt)
        session.commit()
        return result.rowcount
"""
_MORE: dict[tuple[str, int], list[tuple[str, str]]] = {
    ("01", 1): [
        (
            "successes answered first, errors after",
            """def handle_tool_calls(messages, message, registry):
    messages.append({"role": "assistant", "content": message.content, "tool_calls": [
        {"id": c.id, "type": "function",
         "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in message.tool_calls]})
    good, bad = [], []
    for call in message.tool_calls:
        try:
            out = registry.get(call.function.name).call(json.loads(call.function.arguments))
            good.append({"role": "tool", "tool_call_id": call.id, "content": out})
        except Exception as exc:
            bad.append({"role": "tool", "tool_call_id": call.id,
                        "content": json.dumps({"error": str(exc)})})
    messages.extend(good + bad)
""",
        ),
        (
            "the history replaced, not appended to",
            """def handle_tool_calls(messages, message, registry):
    new = [{"role": "assistant", "content": message.content, "tool_calls": [
        {"id": c.id, "type": "function",
         "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in message.tool_calls]}]
    for call in message.tool_calls:
        try:
            content = registry.get(call.function.name).call(json.loads(call.function.arguments))
        except Exception as exc:
            content = json.dumps({"error": str(exc)})
        new.append({"role": "tool", "tool_call_id": call.id, "content": content})
    messages[:] = new
""",
        ),
    ],
    ("02", 1): [
        (
            "a ref_id made from the call (guessable)",
            _LOG_TOOL.format(
                ref_id="hashlib.sha256(tool_call_id.encode()).hexdigest()[:16]", returned="row.id"
            ),
        ),
        (
            "the ref_id returned instead of the row's id",
            _LOG_TOOL.format(ref_id="secrets.token_urlsafe(12)", returned="row.ref_id"),
        ),
    ],
    ("02", 2): [
        (
            "if/elif: the age ignored when a thread is given",
            _PRUNE.format(
                filters="""    if thread_id is not None:
        stmt = stmt.where(ToolOutput.thread_id == thread_id)
    elif older_than is not None:
        stmt = stmt.where(ToolOutput.created_at < (datetime.now(UTC) - older_than).replace(tzinfo=None))"""
            ),
        ),
        (
            "a naive local cut-off (wrong far from UTC)",
            _PRUNE.format(
                filters="""    if older_than is not None:
        stmt = stmt.where(ToolOutput.created_at < datetime.now() - older_than)
    if thread_id is not None:
        stmt = stmt.where(ToolOutput.thread_id == thread_id)"""
            ),
        ),
        (
            "ages counted in whole days",
            _PRUNE.format(
                filters="""    if older_than is not None:
        cutoff = (datetime.now(UTC) - timedelta(days=older_than.days)).replace(tzinfo=None)
        stmt = stmt.where(ToolOutput.created_at < cutoff)
    if thread_id is not None:
        stmt = stmt.where(ToolOutput.thread_id == thread_id)"""
            ),
        ),
    ],
    ("03", 1): [
        (
            "the marker without its leading space",
            """def make_preview(output, tool_call_id, limit=600):
    if len(output) <= limit:
        return output
    return output[:limit] + (f"...[+{len(output) - limit} chars. full output: "
                             f"fetch_tool_output(tool_call_id='{tool_call_id}')]")
""",
        ),
        (
            "the head cut to make room for the marker",
            """def make_preview(output, tool_call_id, limit=600):
    if len(output) <= limit:
        return output
    marker = (f" ...[+{len(output) - limit} chars. full output: "
              f"fetch_tool_output(tool_call_id='{tool_call_id}')]")
    return output[: max(0, limit - len(marker))] + marker
""",
        ),
    ],
    ("03", 2): [
        (
            "the content column read directly (empty for chunked outputs)",
            """def fetch_tool_output(store, thread_id, tool_call_id):
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from helpers import ToolOutput

    with Session(store.engine) as session:
        row = session.scalars(select(ToolOutput).where(
            ToolOutput.thread_id == thread_id, ToolOutput.tool_call_id == tool_call_id)).first()
        if row is None:
            return json.dumps({"error": f"no tool call with id {tool_call_id!r}"})
        return json.dumps({"tool_name": row.tool_name, "tool_args": json.loads(row.tool_args),
                           "tool_output": row.content})
""",
        ),
        (
            "the first row with that id, in any thread",
            """def fetch_tool_output(store, thread_id, tool_call_id):
    rows = store.list_by_call_id(tool_call_id, with_content=True)
    if not rows:
        return json.dumps({"error": f"no tool call with id {tool_call_id!r}"})
    row = rows[0]
    return json.dumps({"tool_name": row.tool_name, "tool_args": json.loads(row.tool_args),
                       "tool_output": row.content})
""",
        ),
    ],
    ("04", 1): [
        (
            "the boxing mode ignored: always opaque",
            """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    return output if len(output) <= threshold else make_reference(ref_id)
""",
        ),
        (
            "the threshold compared with bytes",
            """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    size = len(output.encode("utf-8"))
    if size <= threshold:
        return output
    if boxing == "opaque":
        return make_reference(ref_id)
    return json.dumps({"type": "resource_link", "uri": make_reference(ref_id),
                       "name": f"{tool_name} result", "mimeType": guess_mime_type(output),
                       "size": size})
""",
        ),
    ],
    ("04", 2): [
        (
            "the caller's arguments changed in place",
            """def unbox(arguments, store, thread_id):
    def one(value):
        if isinstance(value, dict):
            for key in value:
                value[key] = one(value[key])
            return value
        if isinstance(value, list):
            for i, item in enumerate(value):
                value[i] = one(item)
            return value
        ref = reference_id(value)
        if ref is not None:
            row = store.get_by_ref(ref)
            if row is None or row.thread_id != thread_id:
                raise ReferenceRefused("not a reference of this thread")
            return store.read_all(row.id)
        if isinstance(value, str):
            for inside in embedded_reference_ids(value):
                row = store.get_by_ref(inside)
                if row is not None and row.thread_id == thread_id:
                    raise ReferenceRefused("pass the reference alone")
        return value
    return one(arguments)
""",
        ),
        (
            "only exact 'internal://' strings (wrapped references missed, top level only)",
            """def unbox(arguments, store, thread_id):
    out = {}
    for key, value in arguments.items():
        if isinstance(value, str) and value.startswith("internal://"):
            row = store.get_by_ref(value[len("internal://"):])
            if row is None or row.thread_id != thread_id:
                raise ReferenceRefused("unknown reference")
            value = store.read_all(row.id)
        out[key] = value
    return out
""",
        ),
    ],
    ("04", 3): [
        (
            "a negative length read as zero",
            """def read_slice(value, start_index, length):
    start = max(len(value) + start_index, 0) if start_index < 0 else start_index
    return value[start:start + max(length, 0)]
""",
        ),
        (
            "bytes, not characters",
            """def read_slice(value, start_index, length):
    if length < 0:
        raise ValueError("length must be >= 0")
    data = value.encode("utf-8")
    start = max(len(data) + start_index, 0) if start_index < 0 else start_index
    return data[start:start + length].decode("utf-8", "ignore")
""",
        ),
        (
            "the end index taken for a length",
            """def read_slice(value, start_index, length):
    if length < 0:
        raise ValueError("length must be >= 0")
    start = max(len(value) + start_index, 0) if start_index < 0 else start_index
    return value[start:length]
""",
        ),
    ],
    ("04", 4): [
        (
            "lines split on LF only (CR kept, a trailing empty line)",
            """def grep(value, pattern, window):
    import re
    lines = value.split("\\n")
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
    return "\\n\\n".join(f"Lines {s + 1}-{e + 1}:\\n" + "\\n".join(f"{n + 1}: {lines[n]}"
                        for n in range(s, e + 1)) for s, e in ranges)
""",
        ),
        (
            "case-insensitive matching",
            """def grep(value, pattern, window):
    import re
    lines = value.splitlines()
    ranges = []
    for i, line in enumerate(lines):
        if re.search(pattern, line, re.IGNORECASE):
            start, end = max(0, i - window), min(len(lines) - 1, i + window)
            if ranges and start <= ranges[-1][1] + 1:
                ranges[-1][1] = max(ranges[-1][1], end)
            else:
                ranges.append([start, end])
    if not ranges:
        return "No matches found."
    return "\\n\\n".join(f"Lines {s + 1}-{e + 1}:\\n" + "\\n".join(f"{n + 1}: {lines[n]}"
                        for n in range(s, e + 1)) for s, e in ranges)
""",
        ),
    ],
    ("06", 1): [
        (
            "every internal_resource_ tool a query (a prefix, not the table)",
            """def categorize(tool_name):
    if tool_name in {"get_page", "yt_transcribe", "internal_resource_read", "fetch_tool_output"}:
        return "read"
    if tool_name == "google_drive_write_file":
        return "write"
    if tool_name == "run_sql" or tool_name.startswith("internal_resource_"):
        return "query"
    return "execution"
""",
        ),
        (
            "names matched case-insensitively",
            """def categorize(tool_name):
    name = tool_name.lower()
    table = {"get_page": "read", "yt_transcribe": "read", "internal_resource_read": "read",
             "fetch_tool_output": "read", "google_drive_write_file": "write", "run_sql": "query",
             "internal_resource_grep": "query", "internal_resource_read_slice": "query",
             "internal_resource_read_lines": "query", "internal_resource_length": "query"}
    return table.get(name, "execution")
""",
        ),
        (
            "the table off by one tool (read_lines left out)",
            """def categorize(tool_name):
    table = {"get_page": "read", "yt_transcribe": "read", "internal_resource_read": "read",
             "fetch_tool_output": "read", "google_drive_write_file": "write", "run_sql": "query",
             "internal_resource_grep": "query", "internal_resource_read_slice": "query",
             "internal_resource_length": "query"}
    return table.get(tool_name, "execution")
""",
        ),
    ],
    ("06", 2): [
        (
            "always 'files', even for one",
            """def summarize_writes(writes):
    ok = [e for e in writes if e.error is None]
    lines = [f"- Wrote {len(ok)} files:"]
    for e in writes:
        name = e.arguments.get("file_name", "?")
        if e.error:
            lines.append(f"  - {quoted(name)}: FAILED: {quoted(e.error)}")
        else:
            lines.append(f"  - {quoted(name)}: {quoted(e.result)}")
    return "\\n".join(lines)
""",
        ),
    ],
    ("06", 3): [
        (
            "keep_last counted in messages, not calls",
            """def fold_indices(messages, keep_last):
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    owners = [i for i, m in enumerate(messages) if m.get("tool_calls")]
    protected = owners[-keep_last:] if keep_last else []
    return set(range(users[0] + 1, min([users[-1], *protected])))
""",
        ),
        (
            "a system message assumed at index 0",
            """def fold_indices(messages, keep_last):
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    owners = [i for i, m in enumerate(messages) for _ in m.get("tool_calls") or []]
    protected = owners[-keep_last:] if keep_last else []
    return set(range(2, min([last_user, *protected])))
""",
        ),
    ],
    ("07", 1): [
        (
            "MODES.get(mode): an unknown mode offers every tool (fails open)",
            """def schemas_for_mode(registry, mode):
    allowed = MODES.get(mode)
    return [tool.schema() for tool in registry if allowed is None or tool.name in allowed]
""",
        ),
        (
            "the mode's case folded",
            """def schemas_for_mode(registry, mode):
    allowed = MODES[mode.strip().lower()]
    return [tool.schema() for tool in registry if allowed is None or tool.name in allowed]
""",
        ),
        (
            "the whitelist's order, not the registry's",
            """def schemas_for_mode(registry, mode):
    allowed = MODES[mode]
    if allowed is None:
        return [tool.schema() for tool in registry]
    return [registry.get(name).schema() for name in sorted(allowed) if name in registry]
""",
        ),
    ],
    ("07", 2): [
        (
            "MODES.get(mode): an unknown mode runs everything (fails open)",
            """def guarded_call(registry, mode, name, arguments):
    allowed = MODES.get(mode)
    if allowed is not None and name not in allowed:
        return json.dumps({"error": f"tool {name!r} is not available in mode {mode!r}"})
    return registry.get(name).call(arguments)
""",
        ),
        (
            "a blacklist of the one write tool",
            """def guarded_call(registry, mode, name, arguments):
    if mode != "operate" and name == "google_drive_write_file":
        return json.dumps({"error": f"tool {name!r} is not available in mode {mode!r}"})
    return registry.get(name).call(arguments)
""",
        ),
        (
            "the mode's case folded",
            """def guarded_call(registry, mode, name, arguments):
    allowed = MODES[mode.lower()]
    if allowed is not None and name not in allowed:
        return json.dumps({"error": f"tool {name!r} is not available in mode {mode!r}"})
    return registry.get(name).call(arguments)
""",
        ),
    ],
    ("07", 3): [
        (
            "no cap on the content parts",
            """def summarize(result, max_chars=300):
    try:
        data = json.loads(result)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        lines = []
        for part in data["content"]:
            if part.get("type") == "text":
                lines.append(part["text"])
            else:
                size = len(base64.b64decode(part.get("data", "")))
                lines.append(f"[{part.get('mimeType', part.get('type'))}, {size} bytes]")
        return "\\n".join(lines)
    if isinstance(data, dict):
        def short(v):
            return f"[{len(v)} items]" if isinstance(v, list) else str(v)[:40]
        return ("Result: " + ", ".join(f"{k}={short(v)}" for k, v in list(data.items())[:4]))[:max_chars]
    return result[:max_chars]
""",
        ),
        (
            "the base64 length taken for the size",
            """def summarize(result, max_chars=300):
    try:
        data = json.loads(result)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        lines = []
        for part in data["content"]:
            if part.get("type") == "text":
                lines.append(part["text"])
            else:
                lines.append(f"[{part.get('mimeType', part.get('type'))}, {len(part.get('data', ''))} bytes]")
        return "\\n".join(lines)[:max_chars]
    if isinstance(data, dict):
        def short(v):
            return f"[{len(v)} items]" if isinstance(v, list) else str(v)[:40]
        return ("Result: " + ", ".join(f"{k}={short(v)}" for k, v in list(data.items())[:4]))[:max_chars]
    return result[:max_chars]
""",
        ),
        (
            "a JSON list summarised as an object",
            """def summarize(result, max_chars=300):
    try:
        data = json.loads(result)
    except ValueError:
        return result[:max_chars]
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        lines = []
        for part in data["content"]:
            if part.get("type") == "text":
                lines.append(part["text"])
            else:
                size = len(base64.b64decode(part.get("data", "")))
                lines.append(f"[{part.get('mimeType', part.get('type'))}, {size} bytes]")
        return "\\n".join(lines)[:max_chars]
    if isinstance(data, list):
        return f"Result: [{len(data)} items]"[:max_chars]
    if isinstance(data, dict):
        def short(v):
            return f"[{len(v)} items]" if isinstance(v, list) else str(v)[:40]
        return ("Result: " + ", ".join(f"{k}={short(v)}" for k, v in list(data.items())[:4]))[:max_chars]
    return result[:max_chars]
""",
        ),
    ],
}
for _key, _answers in _MORE.items():
    WRONG_ANSWERS[_key] = WRONG_ANSWERS[_key] + _answers

#: Found by a second fresh pair of eyes (a reviewer who had not read this file).
_FRESH: dict[tuple[str, int], list[tuple[str, str]]] = {
    ("03", 1): [
        (
            "CRLF line ends normalised to LF first",
            """def make_preview(output, tool_call_id, limit=600):
    output = output.replace("\\r\\n", "\\n")
    if len(output) <= limit:
        return output
    return output[:limit] + (f" ...[+{len(output) - limit} chars. full output: "
                             f"fetch_tool_output(tool_call_id='{tool_call_id}')]")
""",
        ),
    ],
    ("04", 1): [
        (
            "the resource link named after the tool alone",
            """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    if len(output) <= threshold:
        return output
    if boxing == "opaque":
        return make_reference(ref_id)
    return json.dumps({"type": "resource_link", "uri": make_reference(ref_id),
                       "name": tool_name, "mimeType": guess_mime_type(output),
                       "size": len(output.encode("utf-8"))})
""",
        ),
    ],
    ("06", 1): [
        (
            "the name stripped of spaces before the lookup",
            """def categorize(tool_name):
    table = {"get_page": "read", "yt_transcribe": "read", "internal_resource_read": "read",
             "fetch_tool_output": "read", "google_drive_write_file": "write", "run_sql": "query",
             "internal_resource_grep": "query", "internal_resource_read_slice": "query",
             "internal_resource_read_lines": "query", "internal_resource_length": "query"}
    return table.get(tool_name.strip(), "execution")
""",
        ),
        (
            "any name with 'write' in it a write",
            """def categorize(tool_name):
    if "write" in tool_name:
        return "write"
    table = {"get_page": "read", "yt_transcribe": "read", "internal_resource_read": "read",
             "fetch_tool_output": "read", "run_sql": "query",
             "internal_resource_grep": "query", "internal_resource_read_slice": "query",
             "internal_resource_read_lines": "query", "internal_resource_length": "query"}
    return table.get(tool_name, "execution")
""",
        ),
    ],
    ("06", 2): [
        (
            "a failure found by the text '{\"error\"' instead of e.error",
            """def summarize_writes(writes):
    bad = [e for e in writes if e.result.startswith('{"error"')]
    ok = len(writes) - len(bad)
    lines = [f"- Wrote {ok} file{'s' * (ok != 1)}:"]
    for e in writes:
        name = e.arguments.get("file_name", "?")
        if e in bad:
            lines.append(f"  - {quoted(name)}: FAILED: {quoted(e.error)}")
        else:
            lines.append(f"  - {quoted(name)}: {quoted(e.result)}")
    return "\\n".join(lines)
""",
        ),
    ],
}
for _key, _answers in _FRESH.items():
    WRONG_ANSWERS[_key] = WRONG_ANSWERS[_key] + _answers

# -- the second fresh round (01·1, 02, 04·2–4, 07·1–3): 5 of 78 wrong answers passed, each by
# an input the generators did not draw; each is now drawn ------------------------------------

_UNBOX = """def unbox(arguments, store, thread_id):
    ref = reference_id(arguments)
    if ref is not None:
        row = store.get_by_ref(ref)
        if row is None or row.thread_id != thread_id:
            raise ReferenceRefused("refused")
        return store.read_all(row.id)
    if isinstance(arguments, dict):
        return {dict_values} for k, v in arguments.items()}}
    if isinstance(arguments, list):
        return [unbox(v, store, thread_id) for v in arguments]
    if isinstance(arguments, str):
        for inside in {inside}:
            row = store.get_by_ref(inside)
            if row is not None and row.thread_id == thread_id:
                raise ReferenceRefused("pass the reference alone")
    return arguments
"""
_ROUND_TWO: dict[tuple[str, int], list[tuple[str, str]]] = {
    ("01", 1): [
        (
            "one tool message per distinct id: a call lost when a provider repeats an id",
            """def handle_tool_calls(messages, message, registry):
    messages.append({"role": "assistant", "content": message.content, "tool_calls": [
        {"id": c.id, "type": "function",
         "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in message.tool_calls]})
    results = {}
    for call in message.tool_calls:
        try:
            results[call.id] = registry.get(call.function.name).call(
                json.loads(call.function.arguments))
        except Exception as exc:
            results[call.id] = json.dumps({"error": str(exc)})
    for call_id, content in results.items():
        messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
""",
        ),
    ],
    ("04", 2): [
        (
            "dict keys unboxed too",
            _UNBOX.format(
                dict_values="{unbox(k, store, thread_id): unbox(v, store, thread_id)",
                inside="embedded_reference_ids(arguments)",
            ),
        ),
        (
            "only the first id inside a text checked",
            _UNBOX.format(
                dict_values="{k: unbox(v, store, thread_id)",
                inside="embedded_reference_ids(arguments)[:1]",
            ),
        ),
    ],
    ("07", 1): [
        (
            "a tool offered when its name is part of an allowed name",
            """def schemas_for_mode(registry, mode):
    allowed = MODES[mode]
    return [tool.schema() for tool in registry
            if allowed is None or any(tool.name in name for name in allowed)]
""",
        ),
    ],
    ("07", 2): [
        (
            "tool names compared without case: a forged GET_PAGE runs get_page",
            """def guarded_call(registry, mode, name, arguments):
    allowed = MODES[mode]
    if allowed is not None and name.lower() not in {a.lower() for a in allowed}:
        return json.dumps({"error": f"tool {name!r} is not available in mode {mode!r}"})
    real = name.lower() if name.lower() in registry else name
    return registry.get(real).call(arguments)
""",
        ),
    ],
}
for _key, _answers in _ROUND_TWO.items():
    WRONG_ANSWERS[_key] = WRONG_ANSWERS[_key] + _answers

# -- the third fresh round (issue 35): 7 of 121 wrong answers passed, all of one family: an empty
# value taken for a missing one, or a rule the check never exercised; each is now drawn ---------

_PRUNE_ANY = """def prune(engine, older_than=None, thread_id=None):
{guard}
    stmt = delete(ToolOutput)
    if {older_test}:
        stmt = stmt.where(ToolOutput.created_at < (datetime.now(UTC) - older_than).replace(tzinfo=None))
    if {thread_test}:
        stmt = stmt.where(ToolOutput.thread_id == thread_id)
    with Session(engine) as session:
        result = session.execute(stmt)
        session.commit()
        return result.rowcount
"""
_REFUSE = (
    '    if older_than is None and thread_id is None:\n        raise ValueError("a filter, please")'
)
_SUMMARIZE_WRITES = """def summarize_writes(writes):
    ok = [e for e in writes if {ok_test}]
    lines = [f"- Wrote {{len(ok)}} file{{'' if len(ok) == 1 else 's'}}:"]
    for e in writes:
        name = e.arguments.get("file_name", "?")
        if {failed_test}:
            lines.append(f"  - {{quoted(name)}}: FAILED: {{quoted(e.error)}}")
        else:
            lines.append(f"  - {{quoted(name)}}: {{quoted(e.result)}}")
    return "\\n".join(lines)
"""
_ROUND_THREE: dict[tuple[str, int], list[tuple[str, str]]] = {
    ("01", 1): [
        (
            "an empty output taken for a failure",
            """def handle_tool_calls(messages, message, registry):
    messages.append({"role": "assistant", "content": message.content, "tool_calls": [
        {"id": c.id, "type": "function",
         "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in message.tool_calls]})
    for call in message.tool_calls:
        try:
            out = registry.get(call.function.name).call(json.loads(call.function.arguments or "{}"))
            content = out or json.dumps({"error": "the tool returned nothing"})
        except Exception as exc:
            content = json.dumps({"error": str(exc)})
        messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
""",
        ),
    ],
    ("02", 1): [
        (
            "a ref_id made from the thread and the call: the same in every store",
            _LOG_TOOL.format(
                ref_id='hashlib.sha256(f"{thread_id}/{tool_call_id}".encode()).hexdigest()[:16]',
                returned="row.id",
            ),
        ),
        (
            "a ref_id made from the call and its output",
            _LOG_TOOL.format(
                ref_id="hashlib.md5((tool_call_id + tool_output).encode()).hexdigest()[:16]",
                returned="row.id",
            ),
        ),
    ],
    ("02", 2): [
        (
            "the thread filter tested by truth: thread '' taken for no filter",
            _PRUNE_ANY.format(
                guard=_REFUSE, older_test="older_than is not None", thread_test="thread_id"
            ),
        ),
        (
            "the age filter tested by truth: timedelta(0) taken for no filter",
            _PRUNE_ANY.format(
                guard='    if not older_than and not thread_id:\n        raise ValueError("a filter")',
                older_test="older_than",
                thread_test="thread_id is not None",
            ),
        ),
        (
            "no filter returns 0 instead of raising ValueError",
            _PRUNE_ANY.format(
                guard="    if older_than is None and thread_id is None:\n        return 0",
                older_test="older_than is not None",
                thread_test="thread_id is not None",
            ),
        ),
        (
            "rows loaded, then deleted one at a time",
            """def prune(engine, older_than=None, thread_id=None):
    from sqlalchemy import select

    if older_than is None and thread_id is None:
        raise ValueError("a filter, please")
    query = select(ToolOutput)
    if older_than is not None:
        query = query.where(ToolOutput.created_at < (datetime.now(UTC) - older_than).replace(tzinfo=None))
    if thread_id is not None:
        query = query.where(ToolOutput.thread_id == thread_id)
    with Session(engine) as session:
        rows = session.scalars(query).all()
        for row in rows:
            session.delete(row)
        session.commit()
        return len(rows)
""",
        ),
        (
            "a DELETE per row, by id",
            """def prune(engine, older_than=None, thread_id=None):
    from sqlalchemy import select

    if older_than is None and thread_id is None:
        raise ValueError("a filter, please")
    query = select(ToolOutput.id)
    if older_than is not None:
        query = query.where(ToolOutput.created_at < (datetime.now(UTC) - older_than).replace(tzinfo=None))
    if thread_id is not None:
        query = query.where(ToolOutput.thread_id == thread_id)
    with Session(engine) as session:
        ids = list(session.scalars(query))
        for row_id in ids:
            session.execute(delete(ToolOutput).where(ToolOutput.id == row_id))
        session.commit()
        return len(ids)
""",
        ),
    ],
    ("04", 1): [
        (
            "the resource link returned as a dict, not JSON text",
            """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    if len(output) <= threshold:
        return output
    uri = make_reference(ref_id)
    if boxing == "opaque":
        return uri
    return {"type": "resource_link", "uri": uri, "name": f"{tool_name} result",
            "mimeType": guess_mime_type(output), "size": len(output.encode("utf-8"))}
""",
        ),
    ],
    ("06", 2): [
        (
            "an error result with an empty message counted as written",
            _SUMMARIZE_WRITES.format(ok_test="not e.error", failed_test="e.error"),
        ),
        (
            "the count right, but an empty error message listed as a success",
            _SUMMARIZE_WRITES.format(ok_test="e.error is None", failed_test="e.error"),
        ),
        (
            "the empty file name replaced by a placeholder",
            """def summarize_writes(writes):
    ok = [e for e in writes if e.error is None]
    lines = [f"- Wrote {len(ok)} file{'' if len(ok) == 1 else 's'}:"]
    for e in writes:
        name = e.arguments.get("file_name") or "?"
        if e.error is not None:
            lines.append(f"  - {quoted(name)}: FAILED: {quoted(e.error)}")
        else:
            lines.append(f"  - {quoted(name)}: {quoted(e.result)}")
    return "\\n".join(lines)
""",
        ),
    ],
    ("07", 1): [
        (
            "an empty whitelist taken for every tool (if not allowed)",
            """def schemas_for_mode(registry, mode):
    allowed = MODES[mode]
    if not allowed:
        return [tool.schema() for tool in registry]
    return [tool.schema() for tool in registry if tool.name in allowed]
""",
        ),
    ],
    ("07", 2): [
        (
            "an empty whitelist lets every tool run (if not allowed)",
            """def guarded_call(registry, mode, name, arguments):
    allowed = MODES[mode]
    if not allowed:
        return registry.get(name).call(arguments)
    if name not in allowed:
        return json.dumps({"error": f"tool {name!r} is not available in mode {mode!r}"})
    return registry.get(name).call(arguments)
""",
        ),
        (
            "refused only when the whitelist has names (if allowed and …)",
            """def guarded_call(registry, mode, name, arguments):
    allowed = MODES[mode]
    if allowed and name not in allowed:
        return json.dumps({"error": f"{name!r} is not allowed in mode {mode!r}"})
    return registry.get(name).call(arguments)
""",
        ),
    ],
    ("07", 3): [
        (
            "no cap on the content parts' summary",
            """def summarize(result, max_chars=300):
    try:
        data = json.loads(result)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        lines = []
        for part in data["content"]:
            if part.get("type") == "text":
                lines.append(part["text"])
            else:
                size = len(base64.b64decode(part.get("data", "")))
                lines.append(f"[{part.get('mimeType', part.get('type'))}, {size} bytes]")
        return "\\n".join(lines)
    if isinstance(data, dict):
        def short(value):
            return f"[{len(value)} items]" if isinstance(value, list) else str(value)[:40]
        fields = list(data.items())[:4]
        return ("Result: " + ", ".join(f"{k}={short(v)}" for k, v in fields))[:max_chars]
    return result[:max_chars]
""",
        ),
    ],
}
for _key, _answers in _ROUND_THREE.items():
    WRONG_ANSWERS[_key] = WRONG_ANSWERS[_key] + _answers


# -- the fourth round (issue 35's review, written from the attendee notebooks alone): 3 of 116
# passed (a hidden count of four digits, plain text past the cap, a JSON string decoded); 6
# more were stopped under another rule's name. Each is now drawn, or checked every time ----------

_ROUND_FOUR: dict[tuple[str, int], list[tuple[str, str]]] = {}
for _key, _label, _answer in [
    (
        ("02", 1),
        "created_at naive local time (page: 'now, as an aware time in UTC, datetime.now(UTC)')",
        """def log_tool(engine, thread_id, tool_call_id, tool_name, tool_args, tool_output):
    data = tool_output.encode("utf-8")
    row = ToolOutput(
        ref_id=secrets.token_urlsafe(12),
        thread_id=thread_id,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        tool_args=json.dumps(tool_args),
        content=tool_output,
        n_chars=len(tool_output),
        n_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        kind="tool_output",
        created_at=datetime.now(),
    )
    with Session(engine) as session:
        session.add(row)
        session.commit()
        return row.id
""",
    ),
    (
        ("02", 1),
        "tool_call_id treated as globally unique (page: 'in another thread it is a new row')",
        """def log_tool(engine, thread_id, tool_call_id, tool_name, tool_args, tool_output):
    from sqlalchemy import select
    from sqlalchemy.exc import IntegrityError
    data = tool_output.encode("utf-8")
    with Session(engine) as session:
        if session.scalars(select(ToolOutput.id).where(ToolOutput.tool_call_id == tool_call_id)).first() is not None:
            raise IntegrityError("INSERT INTO tool_outputs", {"tool_call_id": tool_call_id}, Exception("duplicate tool_call_id"))
        row = ToolOutput(ref_id=secrets.token_urlsafe(12), thread_id=thread_id, tool_call_id=tool_call_id,
                         tool_name=tool_name, tool_args=json.dumps(tool_args), content=tool_output,
                         n_chars=len(tool_output), n_bytes=len(data), sha256=hashlib.sha256(data).hexdigest(),
                         kind="tool_output", created_at=datetime.now(UTC))
        session.add(row)
        session.commit()
        return row.id
""",
    ),
    (
        ("03", 1),
        "N written with a thousands separator (page: marker '...[+N chars.' with N = len(output) - limit)",
        """def make_preview(output, tool_call_id, limit=600):
    if len(output) <= limit:
        return output
    return output[:limit] + f" ...[+{len(output) - limit:,} chars. full output: fetch_tool_output(tool_call_id='{tool_call_id}')]"
""",
    ),
    (
        ("03", 2),
        "tool_args left as JSON text (page: 'the arguments parsed back from JSON text (json.loads(row.tool_args))')",
        """def fetch_tool_output(store, thread_id, tool_call_id):
    row = store.get(thread_id, tool_call_id, with_content=True)
    if row is None:
        return json.dumps({"error": f"no tool call with id {tool_call_id}"})
    return json.dumps({"tool_name": row.tool_name, "tool_args": row.tool_args, "tool_output": row.content})
""",
    ),
    (
        ("03", 2),
        "returns a dict, not JSON text (page: 'return JSON text')",
        """def fetch_tool_output(store, thread_id, tool_call_id):
    row = store.get(thread_id, tool_call_id, with_content=True)
    if row is None:
        return {"error": f"no tool call with id {tool_call_id}"}
    return {"tool_name": row.tool_name, "tool_args": json.loads(row.tool_args), "tool_output": row.content}
""",
    ),
    (
        ("04", 1),
        "threshold compared in bytes (page: 'in characters, len(output) <= threshold')",
        """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    if len(output.encode("utf-8")) <= threshold:
        return output
    if boxing == "opaque":
        return make_reference(ref_id)
    if boxing == "json":
        return json.dumps({"type": "resource_link", "uri": make_reference(ref_id), "name": f"{tool_name} result", "mimeType": guess_mime_type(output), "size": len(output.encode("utf-8"))})
    raise ValueError(f"unknown boxing {boxing!r}")
""",
    ),
    (
        ("04", 2),
        "dict keys unboxed too (page: 'dict keys (even a key that is a reference: keys are names) ... are left as they are')",
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

def unbox(arguments, store, thread_id):
    def walk(value):
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            ref_id = reference_id(value)
            if ref_id is not None:
                return _value_of(store, thread_id, ref_id)
            if any(_mine(store, thread_id, i) for i in embedded_reference_ids(value)):
                raise ReferenceRefused("pass the reference alone")
        return value
    return walk(arguments)
""",
    ),
    (
        ("07", 3),
        "plain text not capped (page: 'Every summary is cut to its first max_chars characters')",
        r"""def summarize(result, max_chars=300):
    try:
        data = json.loads(result)
    except ValueError:
        return result
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        pieces = []
        for part in data["content"]:
            if part.get("type") == "text":
                pieces.append(str(part.get("text", "")))
            else:
                kind = part.get("mimeType") if part.get("mimeType") is not None else part.get("type")
                size = len(base64.b64decode(part.get("data", "")))
                pieces.append(f"[{kind}, {size} bytes]")
        return "\n".join(pieces)[:max_chars]
    if isinstance(data, dict):
        shown = []
        for key, value in list(data.items())[:4]:
            shown.append(f"{key}={f'[{len(value)} items]' if isinstance(value, list) else str(value)[:40]}")
        return ("Result: " + ", ".join(shown))[:max_chars]
    return result
""",
    ),
    (
        ("07", 3),
        "a JSON string answered by its decoded value (page: 'anything else ...: the text itself')",
        r"""def summarize(result, max_chars=300):
    try:
        data = json.loads(result)
    except ValueError:
        return result[:max_chars]
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        pieces = []
        for part in data["content"]:
            if part.get("type") == "text":
                pieces.append(str(part.get("text", "")))
            else:
                kind = part.get("mimeType") if part.get("mimeType") is not None else part.get("type")
                size = len(base64.b64decode(part.get("data", "")))
                pieces.append(f"[{kind}, {size} bytes]")
        return "\n".join(pieces)[:max_chars]
    if isinstance(data, dict):
        shown = []
        for key, value in list(data.items())[:4]:
            shown.append(f"{key}={f'[{len(value)} items]' if isinstance(value, list) else str(value)[:40]}")
        return ("Result: " + ", ".join(shown))[:max_chars]
    return (data if isinstance(data, str) else result)[:max_chars]
""",
    ),
]:
    _ROUND_FOUR.setdefault(_key, []).append((_label, _answer))
for _key, _answers in _ROUND_FOUR.items():
    WRONG_ANSWERS[_key] = WRONG_ANSWERS[_key] + _answers

# Round five: a fresh set written from the attendee notebooks alone (119 of 120 stopped before
# these checks): a whitelist matched by substring, either way, and a text part cut like a field.
_ROUND_FIVE: dict[tuple[str, int], list[tuple[str, str]]] = {}
for _key, _label, _answer in [
    (
        ("07", 1),
        "a whitelisted name inside a tool's name offers it (page: 'exactly ... not a part')",
        """def schemas_for_mode(registry, mode):
    allowed = MODES[mode]
    return [tool.schema() for tool in registry
            if allowed is None or any(name in tool.name for name in allowed)]
""",
    ),
    (
        ("07", 2),
        "a whitelisted name inside the called name runs it (page: 'exactly as written')",
        """def guarded_call(registry, mode, name, arguments):
    if mode not in MODES:
        return json.dumps({"error": f"unknown mode {mode!r}: tool {name!r} was not run"})
    allowed = MODES[mode]
    if allowed is not None and not any(a in name for a in allowed):
        return json.dumps({"error": f"tool {name!r} is not allowed in mode {mode!r}"})
    return registry.get(name).call(arguments)
""",
    ),
    (
        ("07", 2),
        "the called name inside a whitelisted name runs it ('check' in 'deep_check')",
        """def guarded_call(registry, mode, name, arguments):
    if mode not in MODES:
        return json.dumps({"error": f"unknown mode {mode!r}: tool {name!r} was not run"})
    allowed = MODES[mode]
    if allowed is not None and not any(name in a for a in allowed):
        return json.dumps({"error": f"tool {name!r} is not allowed in mode {mode!r}"})
    return registry.get(name).call(arguments)
""",
    ),
    (
        ("07", 3),
        "a text part cut to 40 characters like a field (page: 'each text part gives its text')",
        r"""def summarize(result, max_chars=300):
    try:
        data = json.loads(result)
    except ValueError:
        return result[:max_chars]
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        pieces = []
        for part in data["content"]:
            if part.get("type") == "text":
                pieces.append(str(part.get("text", ""))[:40])
            else:
                kind = part.get("mimeType") if part.get("mimeType") is not None else part.get("type")
                size = len(base64.b64decode(part.get("data", "")))
                pieces.append(f"[{kind}, {size} bytes]")
        return "\n".join(pieces)[:max_chars]
    if isinstance(data, dict):
        shown = []
        for key, value in list(data.items())[:4]:
            shown.append(f"{key}={f'[{len(value)} items]' if isinstance(value, list) else str(value)[:40]}")
        return ("Result: " + ", ".join(shown))[:max_chars]
    return result[:max_chars]
""",
    ),
]:
    _ROUND_FIVE.setdefault(_key, []).append((_label, _answer))
for _key, _answers in _ROUND_FIVE.items():
    WRONG_ANSWERS[_key] = WRONG_ANSWERS[_key] + _answers
_ROUND_SIX: dict[tuple[str, int], list[tuple[str, str]]] = {
    ("08", 1): [
        (
            "only ValueError caught (a tool's own exception escapes)",
            """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r}"
    try:
        arguments = json.loads(arguments_json)
    except ValueError:
        return False, f"{name}: bad JSON"
    if not isinstance(arguments, dict):
        return False, f"{name} takes an object"
    try:
        output = tools.get(name).call(arguments)
    except ValueError as exc:
        return False, f"{name} failed: {exc}"
    if len(output) > max_output_chars:
        return False, f"{name} returned {len(output)} characters, over the limit of {max_output_chars}"
    return True, output
""",
        ),
        (
            "the output carried in the refusal",
            """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r}"
    try:
        arguments = json.loads(arguments_json)
        if not isinstance(arguments, dict):
            return False, f"{name} takes an object"
        output = tools.get(name).call(arguments)
    except Exception as exc:
        return False, f"{name} failed: {exc}"
    if len(output) > max_output_chars:
        return False, f"{name} returned {len(output)} characters, over the limit of {max_output_chars}: {output[:max_output_chars]}…"
    return True, output
""",
        ),
        (
            "the tool run twice on success",
            """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r}"
    try:
        arguments = json.loads(arguments_json)
        if not isinstance(arguments, dict):
            return False, f"{name} takes an object"
        output = tools.get(name).call(arguments)
        if len(output) > max_output_chars:
            return False, f"{name} returned {len(output)} characters, over the limit of {max_output_chars}"
        return True, tools.get(name).call(arguments)
    except Exception as exc:
        return False, f"{name} failed: {exc}"
""",
        ),
        (
            "the function called directly (no argument check, no JSON text)",
            """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r}"
    try:
        arguments = json.loads(arguments_json)
        if not isinstance(arguments, dict):
            return False, f"{name} takes an object"
        output = tools.get(name).fn(**arguments)
    except Exception as exc:
        return False, f"{name} failed: {exc}"
    if len(output) > max_output_chars:
        return False, f"{name} returned {len(output)} characters, over the limit of {max_output_chars}"
    return True, output
""",
        ),
        (
            "a traceback as the message",
            """import traceback


def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r}"
    try:
        arguments = json.loads(arguments_json)
        if not isinstance(arguments, dict):
            return False, f"{name} takes an object"
        output = tools.get(name).call(arguments)
    except Exception:
        return False, f"{name} failed:\\n{traceback.format_exc()}"
    if len(output) > max_output_chars:
        return False, f"{name} returned {len(output)} characters, over the limit of {max_output_chars}"
    return True, output
""",
        ),
    ],
    ("08", 2): [
        (
            "the URL escaped by hand (a line break breaks it)",
            """def error_report_program(url):
    quoted = '"' + url.replace("\\\\", "\\\\\\\\").replace('"', '\\\\"') + '"'
    return (
        f"const page = await tools.get_page({{url: {quoted}}});"
        "const hits = page.split('\\\\n').filter((l) => l.includes('ERROR'));"
        "return {count: hits.length, first: hits.length ? hits[0] : null};"
    )
""",
        ),
        (
            "the URL cleaned up first",
            """def error_report_program(url):
    return (
        f"const page = await tools.get_page({{url: {json.dumps(url.strip())}}});"
        "const hits = page.split('\\\\n').filter((l) => l.includes('ERROR'));"
        "return {count: hits.length, first: hits.length ? hits[0] : null};"
    )
""",
        ),
        (
            "the first line trimmed",
            """def error_report_program(url):
    return (
        f"const page = await tools.get_page({{url: {json.dumps(url)}}});"
        "const hits = page.split('\\\\n').filter((l) => l.includes('ERROR'));"
        "return {count: hits.length, first: hits.length ? hits[0].trim() : null};"
    )
""",
        ),
        (
            "lines split on every kind of line break",
            """def error_report_program(url):
    return (
        f"const page = await tools.get_page({{url: {json.dumps(url)}}});"
        "const hits = page.split(/\\\\r\\\\n|\\\\r|\\\\n|\\\\u2028|\\\\u2029/).filter((l) => l.includes('ERROR'));"
        "return {count: hits.length, first: hits.length ? hits[0] : null};"
    )
""",
        ),
        (
            "repeated lines counted once",
            """def error_report_program(url):
    return (
        f"const page = await tools.get_page({{url: {json.dumps(url)}}});"
        "const hits = [...new Set(page.split('\\\\n'))].filter((l) => l.includes('ERROR'));"
        "return {count: hits.length, first: hits.length ? hits[0] : null};"
    )
""",
        ),
        (
            "the first line cut to 200 characters",
            """def error_report_program(url):
    return (
        f"const page = await tools.get_page({{url: {json.dumps(url)}}});"
        "const hits = page.split('\\\\n').filter((l) => l.includes('ERROR'));"
        "return {count: hits.length, first: hits.length ? hits[0].slice(0, 200) : null};"
    )
""",
        ),
    ],
}
for _key, _answers in _ROUND_SIX.items():
    WRONG_ANSWERS[_key] = WRONG_ANSWERS[_key] + _answers

#: Notebook 09: an MCP tool result as one text. The right answer's pieces, for the wrong ones
#: below to change one thing each.
_MCP_RIGHT = {
    "head": """def mcp_result_text(result, read):
    def as_json(value):
        return json.dumps(value.model_dump(mode="json", by_alias=True, exclude_none=True))

    def contents_text(contents):
        if isinstance(contents, mcp_types.TextResourceContents):
            return contents.text
        return as_json(contents)

""",
    "error": """    if result.is_error:
        said = "\\n".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))
        raise McpToolError(said.strip() or "the server reported an error")
""",
    "blocks": """    parts = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ResourceLink):
            parts.extend(contents_text(c) for c in read(block.uri).contents)
        elif isinstance(block, mcp_types.EmbeddedResource):
            parts.append(contents_text(block.resource))
        else:
            parts.append(as_json(block))
""",
    "tail": """    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\\n".join(parts)
""",
}


def _mcp_answer(**changed: str) -> str:
    """The right answer with the pieces ``changed`` names replaced."""
    pieces = {**_MCP_RIGHT, **changed}
    return pieces["head"] + pieces["error"] + pieces["blocks"] + pieces["tail"]


WRONG_ANSWERS[("09", 1)] = [
    (
        "a resource link passed on as its uri, never read",
        _mcp_answer(
            blocks=_MCP_RIGHT["blocks"].replace(
                "parts.extend(contents_text(c) for c in read(block.uri).contents)",
                "parts.append(block.uri)",
            )
        ),
    ),
    (
        "blocks joined with nothing between them",
        _mcp_answer(
            tail=_MCP_RIGHT["tail"].replace('return "\\n".join(parts)', 'return "".join(parts)')
        ),
    ),
    (
        "each text stripped of its spaces and line ends",
        _mcp_answer(
            blocks=_MCP_RIGHT["blocks"].replace(
                "parts.append(block.text)", "parts.append(block.text.strip())"
            )
        ),
    ),
    (
        "binary content dropped (images and audio are not text)",
        _mcp_answer(blocks=_MCP_RIGHT["blocks"].replace("parts.append(as_json(block))", "pass")),
    ),
    (
        "an error result returned as text (isError not looked at)",
        _mcp_answer(error=""),
    ),
    (
        "structuredContent left out: a result without blocks is empty",
        _mcp_answer(
            tail="""    return "\\n".join(parts)
"""
        ),
    ),
    (
        "every link read twice (once to see that it exists)",
        _mcp_answer(
            blocks=_MCP_RIGHT["blocks"].replace(
                "parts.extend(contents_text(c) for c in read(block.uri).contents)",
                "read(block.uri)\n            parts.extend(contents_text(c) for c in read(block.uri).contents)",
            )
        ),
    ),
    (
        "binary JSON with Python's field names (mime_type, not mimeType)",
        _mcp_answer(head=_MCP_RIGHT["head"].replace("by_alias=True, ", "")),
    ),
    (
        "only the first block",
        """def mcp_result_text(result, read):
    if result.is_error:
        raise McpToolError(result.content[0].text if result.content else "error")
    if not result.content:
        return ""
    block = result.content[0]
    return getattr(block, "text", "")
""",
    ),
    (
        "an embedded resource shown as its whole block's JSON, not its text",
        _mcp_answer(
            blocks=_MCP_RIGHT["blocks"].replace(
                "parts.append(contents_text(block.resource))", "parts.append(as_json(block))"
            )
        ),
    ),
]

# found by a fresh pair of eyes: structured content with blocks, a link's several contents
WRONG_ANSWERS[("09", 1)] += [
    (
        "structuredContent whenever it is there, blocks or not",
        _mcp_answer(
            tail="""    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\\n".join(parts)
"""
        ),
    ),
    (
        "structuredContent added after the blocks",
        _mcp_answer(
            tail="""    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\\n".join(parts)
"""
        ),
    ),
    (
        "only the first of a link's contents",
        _mcp_answer(
            blocks=_MCP_RIGHT["blocks"].replace(
                "parts.extend(contents_text(c) for c in read(block.uri).contents)",
                "parts.append(contents_text(read(block.uri).contents[0]))",
            )
        ),
    ),
    (
        "a link's contents run together with nothing between them",
        _mcp_answer(
            blocks=_MCP_RIGHT["blocks"].replace(
                "parts.extend(contents_text(c) for c in read(block.uri).contents)",
                'parts.append("".join(contents_text(c) for c in read(block.uri).contents))',
            )
        ),
    ),
]

# found by a second pair of eyes: a read that fails, and binary contents behind a link
WRONG_ANSWERS[("09", 1)] += [
    (
        "a link that cannot be read turned into text (its error swallowed)",
        _mcp_answer(
            blocks=_MCP_RIGHT["blocks"].replace(
                "parts.extend(contents_text(c) for c in read(block.uri).contents)",
                """try:
                parts.extend(contents_text(c) for c in read(block.uri).contents)
            except Exception as exc:
                parts.append(f"[could not read {block.uri}: {exc}]")""",
            )
        ),
    ),
    (
        "a blob behind a link as its raw base64",
        _mcp_answer(
            blocks=_MCP_RIGHT["blocks"].replace(
                "parts.extend(contents_text(c) for c in read(block.uri).contents)",
                'parts.extend(getattr(c, "text", None) or getattr(c, "blob", "") '
                "for c in read(block.uri).contents)",
            )
        ),
    ),
    (
        "a link's contents that are not text left out",
        _mcp_answer(
            blocks=_MCP_RIGHT["blocks"].replace(
                "parts.extend(contents_text(c) for c in read(block.uri).contents)",
                "parts.extend(c.text for c in read(block.uri).contents "
                "if isinstance(c, mcp_types.TextResourceContents))",
            )
        ),
    ),
    (
        "one text per link, so a link with no contents adds an empty line",
        _mcp_answer(
            blocks=_MCP_RIGHT["blocks"].replace(
                "parts.extend(contents_text(c) for c in read(block.uri).contents)",
                'parts.append("\\n".join(contents_text(c) for c in read(block.uri).contents))',
            )
        ),
    ),
]

# found by a review: zero read as "not given", empty JSON read as no arguments, a tool's message
# of several lines passed on whole, a link's resource read once per uri, not once per link
WRONG_ANSWERS[("04", 1)] += [
    (
        "threshold 0 read as the default (threshold or 256)",
        """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    if len(output) <= (threshold or 256):
        return output
    uri = make_reference(ref_id)
    if boxing == "opaque":
        return uri
    return json.dumps({"type": "resource_link", "uri": uri, "name": f"{tool_name} result",
                       "mimeType": guess_mime_type(output), "size": len(output.encode("utf-8"))})
""",
    ),
]
WRONG_ANSWERS[("08", 1)] += [
    (
        'empty JSON read as no arguments ([], null, 0 or "" run a tool without parameters)',
        """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r} is in this program's reach"
    try:
        arguments = json.loads(arguments_json) or {}
    except ValueError as exc:
        return False, f"{name}: the arguments are not JSON ({exc})"
    if not isinstance(arguments, dict):
        return False, f"{name} takes a JSON object of arguments"
    try:
        output = tools.get(name).call(arguments)
    except Exception as exc:
        return False, f"{name} failed: {' '.join(str(exc).split())}"
    if len(output) > max_output_chars:
        return False, f"{name} returned {len(output)} characters, over the limit of {max_output_chars}"
    return True, output
""",
    ),
    (
        "the tool's message whole, however many lines it has",
        """def bridge(tools, name, arguments_json, max_output_chars):
    if name not in tools:
        return False, f"no tool {name!r} is in this program's reach"
    try:
        arguments = json.loads(arguments_json)
    except ValueError:
        return False, f"{name}: the arguments are not JSON"
    if not isinstance(arguments, dict):
        return False, f"{name} takes a JSON object of arguments"
    try:
        output = tools.get(name).call(arguments)
    except Exception as exc:
        return False, f"{name} failed: {str(exc)}"
    if len(output) > max_output_chars:
        return False, f"{name} returned {len(output)} characters, over the limit of {max_output_chars}"
    return True, output
""",
    ),
]
WRONG_ANSWERS[("09", 1)] += [
    (
        "a link's resource read once per uri (a cache), not once per link",
        _mcp_answer(
            head=_MCP_RIGHT["head"] + "    cache = {}\n\n",
            blocks=_MCP_RIGHT["blocks"].replace(
                "parts.extend(contents_text(c) for c in read(block.uri).contents)",
                """if block.uri not in cache:
                cache[block.uri] = [contents_text(c) for c in read(block.uri).contents]
            parts.extend(cache[block.uri])""",
            ),
        ),
    ),
]

# found by a fresh attack: earlier tool messages wiped, whitespace stripped before the length is
# compared, the MIME type guessed from a prefix, a padded tool name stripped onto the whitelist,
# the tool messages appended before the assistant message
WRONG_ANSWERS[("01", 1)] += [
    (
        "the list rebuilt without the earlier tool messages",
        """def handle_tool_calls(messages, message, registry):
    new = [{"role": "assistant", "content": message.content, "tool_calls": [
        {"id": c.id, "type": "function",
         "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in message.tool_calls]}]
    for call in message.tool_calls:
        try:
            arguments = json.loads(call.function.arguments or "{}")
            content = registry.get(call.function.name).call(arguments)
        except Exception as exc:
            content = json.dumps({"error": str(exc)})
        new.append({"role": "tool", "tool_call_id": call.id, "content": content})
    messages[:] = [m for m in messages if m.get("role") != "tool"] + new
""",
    ),
    (
        "the tool messages appended before the assistant message",
        """def handle_tool_calls(messages, message, registry):
    for call in message.tool_calls:
        try:
            arguments = json.loads(call.function.arguments or "{}")
            content = registry.get(call.function.name).call(arguments)
        except Exception as exc:
            content = json.dumps({"error": str(exc)})
        messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    messages.append({"role": "assistant", "content": message.content, "tool_calls": [
        {"id": c.id, "type": "function",
         "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in message.tool_calls]})
""",
    ),
]
WRONG_ANSWERS[("03", 1)] += [
    (
        "an output of white space only passed on whole, however long",
        """def make_preview(output, tool_call_id, limit=600):
    if not output.strip() or len(output) <= limit:
        return output
    return output[:limit] + (f" ...[+{len(output) - limit} chars. full output: "
                             f"fetch_tool_output(tool_call_id='{tool_call_id}')]")
""",
    ),
    (
        "the length compared without the white space around the text",
        """def make_preview(output, tool_call_id, limit=600):
    if len(output.strip()) <= limit:
        return output
    return output[:limit] + (f" ...[+{len(output) - limit} chars. full output: "
                             f"fetch_tool_output(tool_call_id='{tool_call_id}')]")
""",
    ),
]
WRONG_ANSWERS[("04", 1)] += [
    (
        "the length compared without the white space around the text",
        """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    if len(output.strip()) <= threshold:
        return output
    uri = make_reference(ref_id)
    if boxing == "opaque":
        return uri
    return json.dumps({"type": "resource_link", "uri": uri, "name": f"{tool_name} result",
                       "mimeType": guess_mime_type(output), "size": len(output.encode("utf-8"))})
""",
    ),
    (
        "the MIME type guessed from the first 64 characters (long JSON is not JSON then)",
        """def box_result(output, ref_id, tool_name, threshold=256, boxing="opaque"):
    if len(output) <= threshold:
        return output
    uri = make_reference(ref_id)
    if boxing == "opaque":
        return uri
    return json.dumps({"type": "resource_link", "uri": uri, "name": f"{tool_name} result",
                       "mimeType": guess_mime_type(output[:64]),
                       "size": len(output.encode("utf-8"))})
""",
    ),
]
WRONG_ANSWERS[("07", 2)] += [
    (
        "the name stripped of white space before the whitelist is read",
        """def guarded_call(registry, mode, name, arguments):
    allowed = MODES[mode]
    if allowed is not None and name.strip() not in allowed:
        return json.dumps({"error": f"tool {name!r} is not available in mode {mode!r}"})
    return registry.get(name.strip()).call(arguments)
""",
    ),
]
