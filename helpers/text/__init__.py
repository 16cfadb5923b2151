"""Text, whoever wrote it: escaped for each sink, secrets redacted, counted in o200k_base tokens, kept encodable as UTF-8, searched on RE2."""
