"""The incremental recommender: a usage model kept between cycles, each cycle reading only new samples."""
