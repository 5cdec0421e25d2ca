#!/usr/bin/python
# A module of the kinit_test.demo collection (differential playbook 82): argument checking,
# its collection's module_utils, ansible-core's dict_transformations, check mode and diff.
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.dict_transformations import dict_merge

from ..module_utils.words import greeting


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            loud=dict(type='bool', default=False),
            extra=dict(type='dict', default={}),
            path=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    merged = dict_merge({'a': 1, 'nested': {'x': 1}}, p['extra'])
    changed = False
    diff = {}
    if p['path']:
        text = greeting(p['name'], p['loud']) + '\n'
        try:
            with open(p['path']) as f:
                before = f.read()
        except IOError:
            before = ''
        changed = before != text
        diff = {'before': before, 'after': text}
        if changed and not module.check_mode:
            with open(p['path'], 'w') as f:
                f.write(text)
    module.exit_json(changed=changed, greeting=greeting(p['name'], p['loud']), merged=merged,
                     module_file=__name__, diff=diff)


if __name__ == '__main__':
    main()
