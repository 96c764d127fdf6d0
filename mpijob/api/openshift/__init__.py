"""OpenShift's SecurityContextConstraints, pure: the built-in ones, the stored ones, and their CRD."""
