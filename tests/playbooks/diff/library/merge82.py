#!/usr/bin/python
# A library module for differential playbook 82 that imports more of ansible-core's
# module_utils than `basic`, and a collection's module_utils by full name.
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.dict_transformations import recursive_diff, camel_dict_to_snake_dict
from ansible_collections.kinit_test.demo.plugins.module_utils.words import greeting


def main():
    module = AnsibleModule(argument_spec=dict(left=dict(type='dict'), right=dict(type='dict')))
    p = module.params
    module.exit_json(changed=False, diff_found=list(recursive_diff(p['left'], p['right']) or []),
                     snake=camel_dict_to_snake_dict({'HelloThere': 1, 'HTTPEndpoint': 'x'}),
                     greeting=greeting('merge'))


if __name__ == '__main__':
    main()
