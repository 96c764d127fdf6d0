"""Cluster access for the CLI and the SDK: which cluster (`config`, `kubeconfig`), the I/O-free core
of every request, answer, wait and Kueue lookup (`core`, `wait`, `kueue`, `logs`, `phase`), the one
HTTP transport that runs it sync or async (`connection`), and the one error table (`errors`).

Speaks only the Kubernetes API, so it works the same against the local cluster and a real one; it
never imports `mpijob.server` or `mpijob.controllers` (docs/architecture.md).
"""
