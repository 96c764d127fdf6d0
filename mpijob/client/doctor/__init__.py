"""`mpijob doctor`: pre-flight checks of a cluster and a job, through the Kubernetes API only (discovery,
OpenAPI v3, objects, SelfSubjectAccessReview), so they work against the local cluster and any real one.

Each check is an operation of the client core returning a `Check` (PASS, WARN, FAIL or SKIP, a one-line
finding and the fix); `diagnose` runs them in order. docs/doctor.md says what each prevents.
"""

from mpijob.client.doctor.model import Check, Facts, Status
from mpijob.client.doctor.run import NAMES, default_job, diagnose

__all__ = ["NAMES", "Check", "Facts", "Status", "default_job", "diagnose"]
