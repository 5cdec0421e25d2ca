#!/usr/bin/python
# A custom module for diff playbook 77 without check mode support, that may raise.
from ansible.module_utils.basic import AnsibleModule

module = AnsibleModule(argument_spec=dict(crash=dict(type='bool', default=False)))
if module.params['crash']:
    raise RuntimeError('crashed on purpose')
module.exit_json(changed=True, ran=True)
