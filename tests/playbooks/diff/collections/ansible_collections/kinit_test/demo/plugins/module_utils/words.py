# module_utils of the kinit_test.demo collection (differential playbook 82).
from ansible_collections.kinit_test.demo.plugins.module_utils.case import upper


def greeting(name, loud=False):
    text = "hello %s" % name
    return upper(text) if loud else text
