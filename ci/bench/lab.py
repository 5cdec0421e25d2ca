"""Benchmark targets: one sshd on 127.0.0.1..127.0.0.N, a plain-/bin/sh user, a delay proxy.

Owns everything the runners connect to. The sshd listens on one high port on N loopback
addresses so every host has its own address (own ControlPath for ansible, own connection
for kinit and pyinfra). It logs at VERBOSE to its own file so the driver can count logins
per run. Needs root (useradd, sshd as root so it can switch to the bench user).
"""

import os
import pwd
import shutil
import subprocess
import sys
import time

USER = "kbench"
PORT = 22022
PROXY_BASE = 23000


def ensure_user(home):
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-d", home, "-s", "/bin/sh", USER], check=True)
        # Unlocked but without a password: key logins only.
        subprocess.run(["usermod", "-p", "*", USER], check=True)
    os.makedirs(home, exist_ok=True)
    pw = pwd.getpwnam(USER)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    # No rc files: the login shell's start-up is not what is measured.
    for rc in (".profile", ".bashrc", ".shrc"):
        p = os.path.join(home, rc)
        if os.path.exists(p):
            os.remove(p)


class Lab:
    def __init__(self, work, n_max, rtt_ms=0, port=PORT):
        self.port = port
        self.proxy_base = PROXY_BASE + (port - PORT) * 100
        self.work = work
        self.n_max = n_max
        self.rtt_ms = rtt_ms
        self.home = "/tmp/kbench-home"  # shared by concurrent labs: only rc files removed
        self.key = os.path.join(work, "id_ed25519")
        self.log = os.path.join(work, "sshd.log")
        self.sshd = []
        self.proxy = None

    def start(self):
        os.makedirs(self.work, exist_ok=True)
        os.chmod(self.work, 0o755)
        ensure_user(self.home)
        if not os.path.exists(self.key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.key], check=True)
        hostkey = os.path.join(self.work, "ssh_host_ed25519_key")
        if not os.path.exists(hostkey):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostkey], check=True)
        auth = os.path.join(self.work, "authorized_keys")
        shutil.copy(self.key + ".pub", auth)
        os.chmod(auth, 0o644)
        os.makedirs("/run/sshd", exist_ok=True)
        open(self.log, "w").close()
        # sshd takes at most 16 listen addresses (MAX_LISTEN_SOCKS): one sshd per 16 hosts,
        # all logging into the same file.
        self.sshd = []
        for first in range(1, self.n_max + 1, 16):
            last = min(first + 15, self.n_max)
            listen = "".join(f"ListenAddress 127.0.0.{i}\n" for i in range(first, last + 1))
            cfg = os.path.join(self.work, f"sshd_config_{first}")
            with open(cfg, "w") as f:
                f.write(
                    f"Port {self.port}\n{listen}HostKey {hostkey}\nAuthorizedKeysFile {auth}\n"
                    f"PidFile {self.work}/sshd_{first}.pid\nUsePAM no\nStrictModes no\n"
                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                    "MaxSessions 1000\nMaxStartups 1000:30:2000\nLogLevel VERBOSE\n"
                    "UseDNS no\nSubsystem sftp internal-sftp\n"
                )
            self.sshd.append(
                subprocess.Popen(["/usr/sbin/sshd", "-D", "-f", cfg, "-E", self.log])
            )
        for i in range(1, self.n_max + 1):
            self._wait_port(f"127.0.0.{i}", self.port)
        if self.rtt_ms:
            here = os.path.dirname(os.path.abspath(__file__))
            self.proxy = subprocess.Popen(
                [sys.executable, os.path.join(here, "delay_proxy.py"), str(self.rtt_ms / 2000.0),
                 str(self.n_max), str(self.proxy_base), str(self.port)]
            )
            self._wait_port("127.0.0.1", self.proxy_base + self.n_max)

    def address(self, i):
        """(host, port) the controller connects to for host number i (1-based)."""
        if self.rtt_ms:
            return "127.0.0.1", self.proxy_base + i
        return f"127.0.0.{i}", self.port

    def log_offset(self):
        return os.path.getsize(self.log)

    def logins_since(self, offset):
        with open(self.log, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
        return text.count("Accepted publickey")

    @staticmethod
    def _wait_port(host, port):
        import socket

        for _ in range(200):
            try:
                socket.create_connection((host, port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"nothing listening on {host}:{port}")

    def stop(self):
        for p in [self.proxy] + (self.sshd or []):
            if p:
                p.terminate()
                p.wait()
