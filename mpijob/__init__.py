"""mpijob: MPI TrainJobs on Kubeflow Trainer V2, and a real local cluster that runs them."""

__version__ = "0.1.0"
