#!/usr/bin/python
# A custom module for diff playbook 77: argument checking, run_command, no_log, check mode.
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True, aliases=['who']),
            count=dict(type='int', default=1),
            loud=dict(type='bool', default=False),
            tags=dict(type='list', elements='str', default=[]),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            token=dict(type='str', no_log=True),
            path=dict(type='path'),
            fail_with=dict(type='int'),
        ),
        mutually_exclusive=[['token', 'path']],
        supports_check_mode=True,
    )
    p = module.params
    if p['fail_with'] is not None:
        module.run_command(['sh', '-c', 'echo out; echo err >&2; exit %d' % p['fail_with']], check_rc=True)
    rc, out, err = module.run_command(['echo', 'hello', p['name']])
    text = to_text(out).strip() * p['count']
    if p['loud']:
        text = text.upper()
    if p['token']:
        module.warn('the token is ' + p['token'])
    module.exit_json(changed=not module.check_mode, msg=text, tags=p['tags'], state=p['state'],
                     rc=rc, token_seen=p['token'], in_text='<' + (p['token'] or '') + '>',
                     sh=module.get_bin_path('sh') is not None, check=module.check_mode)


if __name__ == '__main__':
    main()
