"""MPI Operator's controller, as the local cluster carries it out: an MPIJob runs through its TrainJob form."""
