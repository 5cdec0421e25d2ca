# Custom filters for diff playbook 80 (run by ansible-playbook and by kinit alike).
from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types


def shout80(value, suffix="!", times=1):
    if not isinstance(value, string_types):
        raise AnsibleFilterError("shout80 needs text, got %s" % type(value).__name__)
    return value.upper() + suffix * times


def typed80(value):
    """The plain type a value is an instance of (Ansible passes its own subclasses)."""
    for kind in (bool, str, int, float, list, dict, type(None)):
        if isinstance(value, kind):
            return kind.__name__
    return "other"


def pairs80(mapping):
    return sorted((k, v) for k, v in mapping.items())


class FilterModule(object):
    def filters(self):
        return {
            "shout80": shout80,
            "pairs80": pairs80,
            "set80": lambda items: set(items),
            "typed80": typed80,
        }
