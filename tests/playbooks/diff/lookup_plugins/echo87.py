# A custom lookup for diff playbook 87: what it was given, and variables it reads.
from ansible.plugins.lookup import LookupBase


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        return [{"terms": terms, "kwargs": kwargs, "var": variables.get("var87"),
                 "missing": variables.get("nope87", "none"), "module": __name__}]
