# Custom Jinja tests for diff playbook 80 (run by ansible-playbook and by kinit alike).
from __future__ import annotations


def divisible80(value, by=2):
    return value % by == 0


class TestModule(object):
    def tests(self):
        return {"divisible80": divisible80}
