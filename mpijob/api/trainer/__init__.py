"""Kubeflow Trainer's TrainJob and runtimes, and how MPI runs under them, pure: plan, pods, output, failures."""
