"""podsizer recommender: usage metrics in, per-container Recommendations out."""
