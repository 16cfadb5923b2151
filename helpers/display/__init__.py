"""What the notebooks draw: the colours of every JupyterLab theme, the verdict marks, charts in light and dark."""
