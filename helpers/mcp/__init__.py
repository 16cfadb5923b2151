"""Real MCP, with the official ``mcp`` Python SDK on both ends.

- :mod:`helpers.mcp.server`: ``workbook mcp-server``, the workbook's tool registry served over
  MCP on stdio. A long result goes back as a resource link (``internal://<id>``) under
  ``box-json``'s threshold rule, ``resources/read`` returns it byte for byte within the session
  that made it, and the resolve tools look inside.
- :mod:`helpers.mcp.client`: the agent as an MCP client. The servers ``.env`` names
  (``MCP_SERVERS``) are started over stdio, their tools join the registry, and their results go
  through the turn's policy like any tool's: a resource link is read through ``resources/read``
  and boxed, previewed or inlined by the client's own rule.
- :mod:`helpers.mcp.settings`: those ``.env`` settings, read and checked.
- :mod:`helpers.mcp.content`: an MCP tool result as the one text a tool returns.
- :mod:`helpers.mcp.stdio_guard`: what stands between the client and a server's process, so a
  server's output is bounded in memory.

The layer sits above the models and the loop (the server dispatches each call as the turn does)
and below the evaluation, the course and the CLI, which start servers and serve them.
"""
