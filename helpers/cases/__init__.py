"""The prompt cases: Markdown files with YAML frontmatter (the prompt, the expected tool calls) and the offline model's plan language."""
