"""The course plumbing: each notebook's lessons, the views, hints and budget, the checkpoints and their properties, the student notebooks, the room."""
