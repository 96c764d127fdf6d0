"""The API layer: the Kubernetes, Trainer and Kueue objects as data, with no I/O.

`Obj` is how every layer holds an object: the JSON dict the server stores and serves, never a model.
"""

from typing import Any

Obj = dict[str, Any]
