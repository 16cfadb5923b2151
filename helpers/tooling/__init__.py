"""Tools: the tool registry (schemas from functions), the real tools and their offline data, the sandboxes (run_sql's workers, code mode's V8 isolates) and the drive outbox."""
