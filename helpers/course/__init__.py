"""The course plumbing: the workbook CLI, the notebooks' views, hints and budget, the student notebooks, generated figures and guide, the benchmark."""
