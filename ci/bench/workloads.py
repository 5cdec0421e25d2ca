"""Playbooks (one file shared by kinit and ansible-playbook), inventories and pyinfra deploys.

Workloads, all `gather_facts: false`:
  cmd   M x `command: /bin/true`
  file  one `file: state=directory`, then copy / lineinfile / template in turn (M tasks)
  loop  one `command: /bin/true` task looping over M items
Remote paths carry the host name: all hosts share one filesystem here.
"""

import os

DEST = "/tmp/kbench/{{ inventory_hostname }}"


def playbook(kind, m):
    head = "- hosts: bench\n  gather_facts: false\n  tasks:\n"
    if kind == "cmd":
        body = "".join(f"    - name: true {i}\n      command: /bin/true\n" for i in range(m))
    elif kind == "loop":
        body = (
            "    - name: loop\n      command: /bin/true\n"
            f"      loop: \"{{{{ range({m}) | list }}}}\"\n"
        )
    elif kind == "file":
        body = f"    - name: dir\n      file:\n        path: \"{DEST}\"\n        state: directory\n"
        for i in range(1, m):
            op = i % 3
            if op == 0:
                body += (
                    f"    - name: copy {i}\n      copy:\n        src: files/one_kib.txt\n"
                    f"        dest: \"{DEST}/copy{i}\"\n"
                )
            elif op == 1:
                body += (
                    f"    - name: lineinfile {i}\n      lineinfile:\n"
                    f"        path: \"{DEST}/lines\"\n        line: \"line {i}\"\n"
                    "        create: true\n"
                )
            else:
                body += (
                    f"    - name: template {i}\n      template:\n        src: templates/t.j2\n"
                    f"        dest: \"{DEST}/tpl{i}\"\n      vars:\n        i: {i}\n"
                )
    else:
        raise ValueError(kind)
    return head + body


def deploy_py(kind, m):
    """pyinfra equivalent of `playbook(kind, m)` (a Python loop stands in for `loop`)."""
    lines = [
        "from pyinfra import host",
        "from pyinfra.operations import files, server",
        "D = '/tmp/kbench/' + host.name",
    ]
    if kind in ("cmd", "loop"):
        lines.append(f"for i in range({m}):")
        lines.append("    server.shell(name=f'true {i}', commands=['/bin/true'])")
    elif kind == "file":
        lines.append("files.directory(name='dir', path=D)")
        lines.append(f"for i in range(1, {m}):")
        lines.append("    if i % 3 == 0:")
        lines.append("        files.put(name=f'copy {i}', src='files/one_kib.txt', dest=f'{D}/copy{i}')")
        lines.append("    elif i % 3 == 1:")
        lines.append("        files.line(name=f'line {i}', path=f'{D}/lines', line=f'line {i}')")
        lines.append("    else:")
        lines.append(
            "        files.template(name=f'tpl {i}', src='templates/t.j2', dest=f'{D}/tpl{i}',"
            " inventory_hostname=host.name, i=i)"
        )
    return "\n".join(lines) + "\n"


def write_all(work, lab, n, kind, m):
    """Write the inputs for one cell; returns (playbook, ini, pyinfra inventory, deploy)."""
    d = os.path.join(work, f"{kind}_{m}")
    os.makedirs(os.path.join(d, "files"), exist_ok=True)
    os.makedirs(os.path.join(d, "templates"), exist_ok=True)
    with open(os.path.join(d, "files", "one_kib.txt"), "w") as f:
        f.write(("x" * 63 + "\n") * 16)
    with open(os.path.join(d, "templates", "t.j2"), "w") as f:
        f.write("host {{ inventory_hostname }} item {{ i }}\n")
    pb = os.path.join(d, "site.yml")
    with open(pb, "w") as f:
        f.write(playbook(kind, m))
    dep = os.path.join(d, "deploy.py")
    with open(dep, "w") as f:
        f.write(deploy_py(kind, m))
    ini = os.path.join(work, f"hosts_{n}.ini")
    pyinv = os.path.join(work, f"inventory_{n}.py")
    with open(ini, "w") as f:
        f.write("[bench]\n")
        for i in range(1, n + 1):
            addr, port = lab.address(i)
            f.write(f"h{i} ansible_host={addr} ansible_port={port}\n")
        f.write(
            "[bench:vars]\n"
            f"ansible_user=kbench\nansible_ssh_private_key_file={lab.key}\n"
            "ansible_host_key_checking=false\nansible_python_interpreter=/usr/bin/python3\n"
        )
    with open(pyinv, "w") as f:
        f.write("bench = [\n")
        for i in range(1, n + 1):
            addr, port = lab.address(i)
            f.write(
                f"    ('h{i}', {{'ssh_hostname': '{addr}', 'ssh_port': {port}, 'ssh_user': 'kbench',"
                f" 'ssh_key': '{lab.key}', 'ssh_strict_host_key_checking': 'off',"
                f" 'ssh_known_hosts_file': '/dev/null'}}),\n"
            )
        f.write("]\n")
    return d, pb, ini, pyinv, dep
