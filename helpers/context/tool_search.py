"""Tool search: offer a model only the tools a task's words name, and let it find the rest.

Every tool schema offered is sent, and paid for, with every model call of a turn, whether the
task needs the tool or not. A box run of the shipped cases spends most of its tokens above the
floor on the schemas of tools the task never calls. Tool search keeps the list short: before
the first call, the client matches the user's prompt against each tool's name, the first line
of its description and its parameter names (a URL in the prompt matches a ``url`` parameter),
and offers the tools that match; one more tool, :data:`TOOL_SEARCH_NAME`, names the others and
loads one when the model asks for it, from the next call on. The tool list stays the same from
call to call unless the model loads a tool, so a provider's prompt cache keeps working.

The same idea as Anthropic's "tool search tool" (tools marked ``defer_loading`` found by
regex or BM25 search; Anthropic docs, "Tool search tool") and LangGraph's ``langgraph-bigtool``
(tools retrieved by the model from a store), done by the client so it works with any provider.

Matching is on words (lower case, letters and digits, at least three characters, a plural
``s`` dropped, :data:`STOPWORDS` left out): a deliberately plain rule, so what is offered can be
explained from the prompt alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from helpers.tooling.effects import CallEffects, Reported
from helpers.tooling.registry import Tool, tool_from_function

#: The name of the tool that finds and loads the tools not offered yet.
TOOL_SEARCH_NAME = "tool_search"
#: Words too common in prompts and tool descriptions to say which tool a task needs.
STOPWORDS = frozenset(
    [
        "the",
        "and",
        "then",
        "with",
        "for",
        "from",
        "that",
        "this",
        "into",
        "your",
        "you",
        "are",
        "was",
        "were",
        "all",
        "any",
        "its",
        "get",
        "got",
        "use",
        "using",
        "used",
        "named",
        "name",
        "pass",
        "tell",
        "what",
        "which",
        "each",
        "one",
        "two",
        "run",
        "ran",
        "return",
        "returns",
        "report",
        "let",
        "know",
        "make",
        "please",
        "also",
        "after",
        "before",
        "about",
        "them",
        "their",
        "there",
        "here",
        "when",
        "where",
        "how",
        "who",
        "why",
        "can",
        "may",
        "must",
        "should",
        "will",
        "would",
        "been",
        "being",
        "have",
        "has",
        "had",
        "not",
        "but",
        "some",
        "more",
        "most",
        "other",
        "than",
        "only",
        "just",
        "even",
        "both",
        "same",
        "full",
        "whole",
        "part",
        "does",
        "done",
    ]
)
_WORD_RE = re.compile(r"[a-z0-9]+")
_URL_RE = re.compile(r"\bhttps?://\S+", re.IGNORECASE)


def words(text: str) -> set[str]:
    """The matching words of ``text``: a URL counts as the word ``url`` (its own words do not),
    then lower-case runs of letters and digits of three characters or more, a final ``s`` of a
    word over four characters dropped, :data:`STOPWORDS` left out."""
    text, urls = _URL_RE.subn(" ", text)
    found = {"url"} if urls else set()
    for word in _WORD_RE.findall(text.lower()):
        if len(word) > 4 and word.endswith("s"):
            word = word[:-1]
        if len(word) >= 3 and word not in STOPWORDS:
            found.add(word)
    return found


def tool_words(tool: Tool) -> set[str]:
    """What a tool answers to: the words of its name, of the first line of its description
    and of its parameter names."""
    parameters = " ".join(tool.parameters.get("properties", {}))
    first_line = tool.description.strip().split("\n", 1)[0]
    return words(f"{tool.name.replace('_', ' ')} {first_line} {parameters.replace('_', ' ')}")


def matching_tools(text: str, tools: Iterable[Tool]) -> list[str]:
    """The names of ``tools`` that share a word with ``text``, most shared words first (ties in
    the order given)."""
    asked = words(text)
    scored = [(len(asked & tool_words(t)), i, t.name) for i, t in enumerate(tools)]
    return [name for score, _, name in sorted(scored, key=lambda s: (-s[0], s[1])) if score]


def tool_search_tool(tools: list[Tool]) -> Tool:
    """The ``tool_search`` tool over ``tools`` (the ones not offered yet): its description names
    them; a call loads those that match its query (every one of them when the query names a tool
    exactly; its effects' ``loaded_tools``, which the loop records for the policy's next offer)
    and says what was loaded, or which tools there are."""
    names = ", ".join(t.name for t in tools)

    def tool_search(query: str) -> Reported:
        exact = [t.name for t in tools if t.name == query.strip()]
        found = exact or matching_tools(query, tools)
        if not found:
            return Reported(f"No tool matches {query!r}. Tools you can load: {names}.")
        loaded = "; ".join(
            f"{t.name}: {t.description.strip().split(chr(10), 1)[0]}"
            for t in tools
            if t.name in found
        )
        return Reported(
            f"Loaded (offered from your next call): {loaded}",
            CallEffects(loaded_tools=frozenset(found)),
        )

    # its schema is sent with every call: one short sentence, the parameter's name says the rest
    tool_search.__doc__ = f"Load any of these tools: {names}."
    return tool_from_function(tool_search, internal=True)
