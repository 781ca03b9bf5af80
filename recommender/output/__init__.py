"""Recommender outputs: the Recommendation stores and the reports a person reads."""
