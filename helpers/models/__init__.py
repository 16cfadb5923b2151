"""The models: .env profiles and the openai client, and the offline reference model (what it does, the model, and its loopback server)."""
