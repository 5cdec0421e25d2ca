#!/usr/bin/env python3
"""Fidelity guard: pywinrm (an independent, mature WinRM client) against the test server.

Starts server.py in two modes and checks what kinit's tests rely on: Basic over HTTP
(AllowUnencrypted), NTLM with MS-WSMV message encryption over HTTP (AllowUnencrypted=false,
every body sealed), NTLM over HTTPS with channel binding, PowerShell exit codes, stdin,
a silent command riding through w:TimedOut faults, and the InvalidSelectors fault on a
second Delete. Exits non-zero with a message on the first failure.
"""

import json
import os
import subprocess
import sys
import tempfile
import urllib.request

import winrm
from winrm.exceptions import WSManFaultError

HERE = os.path.dirname(os.path.abspath(__file__))


def start(*args):
    state = tempfile.mkdtemp(prefix="winrm-srv-")
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "server.py"),
                             "--state-dir", state] + list(args),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = proc.stdout.readline().decode()
    assert line.startswith("READY "), line
    return proc, int(line.split()[1]), state


def stats(port, scheme="http"):
    import ssl
    ctx = ssl._create_unverified_context()
    with urllib.request.urlopen("%s://127.0.0.1:%d/_stats" % (scheme, port), context=ctx) as r:
        return json.load(r)


def check(name, cond, detail=""):
    if not cond:
        print("FAIL %s %s" % (name, detail))
        sys.exit(1)
    print("ok   %s" % name)


def exercise(session, proto, label):
    r = session.run_cmd("echo", ["hello", "from", "cmd"])
    check(label + " run_cmd", r.status_code == 0 and r.std_out.strip() == b"hello from cmd",
          repr(r.std_out))
    r = session.run_ps("echo ps-out; echo ps-err >&2; exit 4")
    check(label + " run_ps exit code", r.status_code == 4 and b"ps-out" in r.std_out,
          repr((r.status_code, r.std_out)))
    shell = proto.open_shell()
    cid = proto.run_command(shell, "tr", ["a-z", "A-Z"])
    proto.send_command_input(shell, cid, b"upper me\n", end=True)
    out, _, code = proto.get_command_output(shell, cid)
    check(label + " stdin", code == 0 and out.strip() == b"UPPER ME", repr(out))
    cid = proto.run_command(shell, "sleep 3; echo woke")
    out, _, code = proto.get_command_output(shell, cid)
    check(label + " silent command through TimedOut", code == 0 and out.strip() == b"woke")
    proto.cleanup_command(shell, cid)
    proto.close_shell(shell)
    try:
        proto.close_shell(shell)
        check(label + " second delete faults", False, "no fault")
    except WSManFaultError as e:
        check(label + " second delete faults",
              e.wsman_fault_code == 2150858843 and e.fault_subcode == "w:InvalidSelectors", str(e))


def main():
    proc, port, _ = start("--allow-unencrypted")
    try:
        url = "http://127.0.0.1:%d/wsman" % port
        s = winrm.Session(url, auth=("vagrant", "vagrant"), transport="basic",
                          operation_timeout_sec=1, read_timeout_sec=2)
        p = winrm.Protocol(url, transport="basic", username="vagrant", password="vagrant",
                           operation_timeout_sec=1, read_timeout_sec=2)
        exercise(s, p, "basic/http")
        st = stats(port)
        check("basic/http timeouts seen", st["timeouts"] >= 1, st)
        check("basic/http no shell leaked", st["shells_open"] == 0, st)
    finally:
        proc.kill()

    proc, port, _ = start()
    try:
        url = "http://127.0.0.1:%d/wsman" % port
        kw = dict(transport="ntlm", message_encryption="always", operation_timeout_sec=1,
                  read_timeout_sec=2)
        s = winrm.Session(url, auth=("KINIT\\vagrant", "vagrant"), **kw)
        p = winrm.Protocol(url, username="KINIT\\vagrant", password="vagrant", **kw)
        exercise(s, p, "ntlm/http sealed")
        st = stats(port)
        check("ntlm/http every body sealed",
              st["plaintext_requests"] == 0 and st["sealed_requests"] > 10, st)
        check("ntlm/http no shell leaked", st["shells_open"] == 0, st)
    finally:
        proc.kill()

    proc, port, state = start("--https")
    try:
        url = "https://127.0.0.1:%d/wsman" % port
        p = winrm.Protocol(url, transport="ntlm", username="vagrant", password="vagrant",
                           server_cert_validation="validate",
                           ca_trust_path=os.path.join(state, "cert.pem"))
        shell = p.open_shell()
        cid = p.run_command(shell, "echo", ["over", "tls"])
        out, _, code = p.get_command_output(shell, cid)
        check("ntlm/https with CBT", code == 0 and out.strip() == b"over tls", repr(out))
        p.close_shell(shell)
    finally:
        proc.kill()
    print("pywinrm: all checks passed")


if __name__ == "__main__":
    main()
