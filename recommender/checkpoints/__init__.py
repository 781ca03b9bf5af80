"""Where the incremental recommender's usage checkpoints live: a file standalone, custom resources in-cluster.

base.CheckpointStore is the interface; filestore.FileCheckpointStore and crdstore.CrdCheckpointStore
are the stores.
"""
