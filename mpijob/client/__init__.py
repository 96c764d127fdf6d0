"""Cluster access for the CLI and SDK: kubeconfig resolution, typed calls, waiting, manifests.

Speaks only the Kubernetes API, so it works the same against the local cluster and a real one.
"""
