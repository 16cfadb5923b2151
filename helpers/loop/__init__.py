"""The loop: one agent turn (the chat-completions tool loop, in phases) and threads that continue."""
