"""MPI Operator's MPIJob (kubeflow.org/v2beta1) in Trainer's terms."""
