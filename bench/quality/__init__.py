"""The public recommendation-quality benchmark: traces, peers, scorer, runner."""
