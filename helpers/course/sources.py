"""What the workbook cites, with where to find it: the documents it was designed from and the
projects its pages name.

The README's *Sources* block is written from :data:`DESIGN_SOURCES` (``make figures``), and a
test checks that every page naming a project of :data:`CITED_PROJECTS` links it, so a reader can
always follow a citation.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cited:
    """A cited work: ``name`` as the pages write it (the text a test looks for), ``url`` where
    to read it, and ``used_for``, what the workbook takes from it (one line)."""

    name: str
    url: str
    used_for: str = ""


#: The documents the workbook was designed from, by their public names.
DESIGN_SOURCES: tuple[Cited, ...] = (
    Cited(
        "tool-context-relay",
        "https://github.com/grzegorz-aniol/tool-context-relay",
        "by grzegorz-aniol (Apache-2.0): opaque-reference boxing, `internal://` references, "
        "resolve tools, prompt cases with YAML frontmatter; the `box-tcr` strategy",
    ),
    Cited(
        "Oracle AI Developer Hub agent workshop",
        "https://oracle-devrel.github.io/oracle-ai-developer-hub/workshops/"
        "enterprise-data-agent-harness-workshop/docs/part-11-tool-output-offload.html",
        'Part 11, "Tool-Output Offload": `log_tool`, the 600-character truncation marker, '
        "`fetch_tool_output`, TODO cells with hard-stop checks",
    ),
    Cited(
        "RitoSwap",
        "https://docs.ritoswap.com/ai-systems/context-management/tool-context",
        "its tool context (`tool-bridge.ts`): per-mode tool whitelists and the dual stream "
        "(a summary to the model, the full result to the interface)",
    ),
    Cited(
        "RFC 013: Tool Call Truncation for OpenResponses",
        "https://github.com/wycats/SferaDev/blob/189f9d1e33aca299f813a4b1392724ce19e95dc0/"
        "docs/rfcs/stage-0/013-tool-call-truncation.md",
        "history tiers, tool categories and heuristic summaries: tool-history compaction",
    ),
)

#: Other projects the pages name, each to be linked wherever it is named.
CITED_PROJECTS: tuple[Cited, ...] = (
    *DESIGN_SOURCES,
    Cited("simonw/llm", "https://github.com/simonw/llm"),
    Cited("nbgrader", "https://github.com/jupyter/nbgrader"),
    Cited("nbstripout", "https://github.com/kynan/nbstripout"),
    Cited("shtab", "https://github.com/iterative/shtab"),
    Cited("Hypothesis", "https://hypothesis.readthedocs.io/"),
    Cited("Codex CLI", "https://github.com/openai/codex"),
    Cited("deepagents", "https://github.com/langchain-ai/deepagents"),
    Cited("Claude Code", "https://github.com/anthropics/claude-code"),
    Cited("OpenAI Agents SDK", "https://github.com/openai/openai-agents-python"),
)


def sources_markdown() -> str:
    """The README's list of design sources: one linked line each, with what it gave."""
    return "\n".join(f"- [{s.name}]({s.url}): {s.used_for}" for s in DESIGN_SOURCES)
