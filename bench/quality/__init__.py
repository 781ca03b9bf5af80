"""The public recommendation-quality benchmark (issue 14): traces, peers, scorer, runner."""
