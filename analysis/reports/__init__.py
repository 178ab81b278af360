"""Reports of a run: Markdown, self-contained HTML and PNG plots."""
