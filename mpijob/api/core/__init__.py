"""Kubernetes core and apimachinery, pure: errors, labels, selectors, quantities, RBAC, quota, admission."""
