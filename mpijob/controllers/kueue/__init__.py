"""Kueue's part: each TrainJob's Workload, the queues' status, and the cycles of the scheduler that admits
(pure: `mpijob.api.kueue.scheduler`) run over the store."""
