"""Kubernetes' rules for label keys, label values and qualified names, written once.

apimachinery's `IsQualifiedName` (a label key, an annotation key, a resource name such as
`nvidia.com/gpu`) and `IsValidLabelValue`. The API server's admission, Kueue's rules, the client's
builder and the capacity parser all ask these two functions; each words its own message, in the
terms of the field it checks. Pure and cheap to import.
"""

from __future__ import annotations

import re

from mpijob.api.names import DNS1123_SUBDOMAIN

NAME_MAX = 63  # the name part of a qualified name, and a label value
PREFIX_MAX = 253  # the DNS-1123 subdomain before the '/'
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def is_qualified_name(key: object) -> bool:
    """An optional DNS-1123 subdomain prefix of at most 253 characters and '/', then a name of 1 to 63
    letters, digits, '-', '_' or '.', starting and ending with a letter or digit."""
    if not isinstance(key, str):
        return False
    prefix, slash, name = key.rpartition("/")
    if slash and not (0 < len(prefix) <= PREFIX_MAX and DNS1123_SUBDOMAIN.match(prefix)):
        return False
    return len(name) <= NAME_MAX and bool(_NAME.match(name))


def is_label_value(value: object) -> bool:
    """Empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit."""
    return isinstance(value, str) and (value == "" or (len(value) <= NAME_MAX and bool(_NAME.match(value))))
