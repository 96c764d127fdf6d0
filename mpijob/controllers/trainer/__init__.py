"""Trainer's and JobSet's part: a TrainJob's objects, its run (nodes, then the launcher) and its conditions."""
