"""Kueue semantics on one machine: pure scheduling decisions over a snapshot (this package), applied to
the store by `mpijob.controllers.queueing`."""
