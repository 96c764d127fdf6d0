"""Kueue's part: each TrainJob's Workload, the queues' status, and the scheduler that admits."""
