#!/usr/bin/env python3
"""A WinRS (WinRM remote shell) test server for kinit's tests.

No real WinRM server runs on Linux, so kinit's WinRM transport is tested against this one. It
speaks the wire protocol the way Windows does (shapes copied from recorded Windows traffic):

* POST /wsman: WS-Management Create / Command / Send / Receive / Signal / Delete on the
  `windows/shell/cmd` resource. Receive long-polls until output, exit or `OperationTimeout`,
  then answers the real `w:TimedOut` fault (WSManFault Code 2150858793) on HTTP 500.
* Auth: Basic, and NTLM (pyspnego acceptor, one security context per TCP connection, as
  HTTP.sys binds auth to the connection). Over HTTP, NTLM bodies must be MS-WSMV 2.2.9.1
  `multipart/encrypted` (sealed in both directions, strict framing: the payload is followed
  directly by `--Encrypted Boundary--`, anything else gets HTTP 400). Plaintext SOAP bodies
  over HTTP get an empty HTTP 500 unless `--allow-unencrypted` (Windows' AllowUnencrypted).
* HTTPS (`--https`) with a freshly generated throwaway CA (written to `STATE_DIR/cert.pem`,
  the file clients trust) and a leaf for 127.0.0.1/localhost; NTLM checks channel bindings.
  Or a given certificate: `--cert-chain PEM --key PEM` (leaf first), or `--pfx FILE` with its
  password in the environment variable `KINIT_WINRM_PFX_PASSWORD` (what kinit puts on a
  Windows guest's config ISO, read here by an independent PKCS#12 implementation).
* Real faults: `w:InvalidSelectors` 2150858843 for an unknown shell, `w:InternalError`
  2150859174 once a user holds `--max-shells` shells (Windows' MaxShellsPerUser, 30).
* GET /_stats: JSON counters (shells created/deleted/open, handshakes, sealed and plaintext
  bodies, rejected bodies, timeouts, signals) so tests can assert "no shell leaked" and
  "no plaintext body". POST /_control with JSON `{"fail_next": N, "delay_ms": M}`: answer the
  next N /wsman requests with a bare HTTP 500, delay every /wsman response by M ms;
  `{"drop_nth": N}`: carry out the Nth WS-Management operation from now, then close the
  connection without sending its response (a reply lost on the network).
* Network blips: `{"blip_ms": N}` (or `Server.blip` from the Windows stand-in) plays the
  management NIC going away for N ms, as when Windows creates its first Hyper-V switch: every
  open TCP connection is closed (a request in flight loses its response), the listening
  socket is closed so new connections are refused, and after N ms it listens again. Shells
  and their running commands are kept. With `"between_requests": true` the blip waits (at
  most 10 s) until no request is in flight or arriving on any connection and no command's
  end is still to be received, so the client meets it between two commands (idle
  connection closed, then refused) and never in the middle of one.
* Reboots: kinit's `win_reboot` script (a `# kinit:reboot` line) schedules one; after its
  `/t` delay the server is down for `--reboot-down-ms` (every /wsman connection is closed
  unanswered, every shell is gone) and comes back with a new boot time, which kinit's
  boot-time script (`# kinit:boot-time`) prints.

Execution convention (documented in the README): the command line is joined as Windows does;
`powershell ... -EncodedCommand B64` is decoded from UTF-16LE and the *script text runs with
`sh -c`*, so tests send portable sh "scripts" through kinit's PowerShell path. Two PowerShell
snippets cannot run under sh and are emulated: kinit's upload script (first line `# kinit:put`)
and download script (`# kinit:get`), recognised by that marker and replaced by the sh
pipeline with the same protocol (base64 lines in, SHA-256 hex out / base64 lines and a
`sha256:` line out); likewise `# kinit:discard` (remove a cancelled upload's temp file).
With `--windows-root DIR` (recording mode) the decoded scripts go to `windows_standin.py` instead, which acts out kinit's Windows module scripts and start.ps1 on
a fake C: drive in DIR and records every action in DIR/calls.log.

Usage: server.py --state-dir DIR [--port 0] [--https [--cert-chain PEM --key PEM | --pfx FILE]]
       [--auth basic,ntlm]
       [--allow-unencrypted] [--max-shells 30] [--user 'DOMAIN\\user:password']...
       [--windows-root DIR]
Prints `READY <port>` on stdout once listening.
"""

import argparse
import base64
import datetime
import hashlib
import json
import os
import re
import select
import shlex
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NS = {
    "s": "http://www.w3.org/2003/05/soap-envelope",
    "a": "http://schemas.xmlsoap.org/ws/2004/08/addressing",
    "w": "http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd",
    "rsp": "http://schemas.microsoft.com/wbem/wsman/1/windows/shell",
    "x": "http://schemas.xmlsoap.org/ws/2004/09/transfer",
}
SHELL_URI = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/cmd"
ACT_CREATE = "http://schemas.xmlsoap.org/ws/2004/09/transfer/Create"
ACT_DELETE = "http://schemas.xmlsoap.org/ws/2004/09/transfer/Delete"
ACT_SHELL = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/"
STATE_DONE = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/CommandState/Done"
STATE_RUNNING = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell/CommandState/Running"
BOUNDARY = b"--Encrypted Boundary"
ENC_PROTOCOL = "application/HTTP-SPNEGO-session-encrypted"
CHUNK = 64 * 1024

FAULT_TIMEDOUT = ("w:TimedOut", 2150858793,
                  "The WS-Management service cannot complete the operation within the time "
                  "specified in OperationTimeout.  ")
FAULT_SELECTORS = ("w:InvalidSelectors", 2150858843,
                   "The request for the Windows Remote Shell with ShellId {} failed because "
                   "the shell was not found on the server. Possible causes are: the specified "
                   "ShellId is incorrect or the shell no longer exists on the server. Provide "
                   "the correct ShellId or create a new shell and retry the operation. ")
FAULT_QUOTA = ("w:InternalError", 2150859174,
               "The WS-Management service cannot process the request. This user is allowed a "
               "maximum number of {} concurrent shells, which has been exceeded. Close existing "
               "shells or raise the quota for this user. ")
FAULT_PARAM = ("w:InvalidParameter", 2150858882, "The parameter is incorrect. ")
FAULT_BUSY = ("w:InternalError", 2150859193,
              "The WS-Management service cannot process the request because it is busy. ")
FAULT_URI = ("w:DestinationUnreachable", 2150858770,
             "The WS-Management service cannot process the request because the resource URI "
             "is not supported. ")
FAULT_ACTION = ("a:ActionNotSupported", 2150858771,
                "The action is not supported by the service. ")


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = {k: 0 for k in (
            "requests", "shells_created", "shells_deleted", "deletes_failed", "commands", "ntlm_handshakes",
            "basic_auths", "auth_failures", "sealed_requests", "plaintext_requests",
            "tls_requests", "rejected_plaintext", "rejected_frames", "timeouts", "signals",
            "sends", "injected_500", "quota_faults", "operations", "dropped_responses",
            "dropped_creates", "blips", "blip_closed_connections", "blip_lost_responses")}

    def inc(self, key, n=1):
        with self.lock:
            self.c[key] += n


class Command:
    """One process started by a Command request, with its buffered output."""

    def __init__(self, script):
        self.proc = subprocess.Popen(
            ["sh", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True)
        self.cond = threading.Condition()
        self.out = {"stdout": bytearray(), "stderr": bytearray()}
        self.done = False
        self.exit_code = None
        # Set once a Receive has told the client the command is done.
        self.delivered = False
        readers = [threading.Thread(target=self._read, args=(n, f), daemon=True)
                   for n, f in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr))]
        for r in readers:
            r.start()
        threading.Thread(target=self._wait, args=(readers,), daemon=True).start()

    def _read(self, name, f):
        while True:
            data = os.read(f.fileno(), CHUNK)
            if not data:
                return
            with self.cond:
                self.out[name] += data
                self.cond.notify_all()

    def _wait(self, readers):
        code = self.proc.wait()
        for r in readers:
            r.join()
        with self.cond:
            self.exit_code = code if code >= 0 else 128 - code
            self.done = True
            self.cond.notify_all()

    def send(self, data, end):
        try:
            if data:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            if end:
                self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    def kill(self, sig=signal.SIGKILL):
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass


class Shell:
    def __init__(self, owner):
        self.id = str(uuid.uuid4()).upper()
        self.owner = owner
        self.commands = {}


def join_command_line(cmd, args):
    # WinRS joins Command and Arguments with spaces into one command line.
    return " ".join([cmd] + args)


def ps_quoted(script, var):
    m = re.search(r"^\$" + var + r" = '((?:[^']|'')*)'", script, re.M)
    if not m:
        raise ValueError("no $%s in script" % var)
    return m.group(1).replace("''", "'")


def schedule_reboot(delay):
    """Play a host restart: after `delay` s the server is `down` (no request answered, no
    shell kept) for the --reboot-down-ms time, then comes back with a new boot time. Returns
    the boot time before the reboot."""
    state = os.environ["KINIT_WINRM_STATE"]
    down_for = float(os.environ["KINIT_WINRM_REBOOT_DOWN"])
    with open(os.path.join(state, "boot_time")) as f:
        previous = f.read().strip()

    def reboot():
        down = os.path.join(state, "down")
        time.sleep(delay)
        open(down, "w").close()
        time.sleep(down_for)
        now = datetime.datetime.now(datetime.timezone.utc)
        tmp = os.path.join(state, "boot_time.tmp")
        with open(tmp, "w") as f:
            f.write(now.strftime("%Y-%m-%dT%H:%M:%S.%fZ") + "\n")
        os.replace(tmp, os.path.join(state, "boot_time"))
        os.remove(down)

    threading.Thread(target=reboot, daemon=True).start()
    return previous


def to_sh(command_line, windows=None):
    """The sh script a WinRS command line runs (see the module doc for the convention)."""
    m = re.match(r"^\s*powershell(?:\.exe)?\s.*?-(?:EncodedCommand|enc|e)\s+(\S+)\s*$",
                 command_line, re.I | re.S)
    if not m:
        return command_line
    script = base64.b64decode(m.group(1)).decode("utf-16-le")
    if windows is not None:
        return windows.to_sh(script)
    first = script.lstrip().split("\n", 1)[0].strip()
    if first == "# kinit:put":
        path = shlex.quote(ps_quoted(script, "path"))
        tmp = shlex.quote(ps_quoted(script, "path") + ".kinit-tmp")
        return ("set -e; tr -d '\\r' | base64 -d > %s; mv -f %s %s; "
                "sha256sum %s | cut -d' ' -f1" % (tmp, tmp, path, path))
    if first == "# kinit:discard":
        return "rm -f %s" % shlex.quote(ps_quoted(script, "path") + ".kinit-tmp")
    if first == "# kinit:boot-time":
        return 'cat "$KINIT_WINRM_STATE/boot_time"'
    if re.search(r"^# kinit:reboot$", script, re.M):
        # What the module prints (previous boot time, reboot requested); the reboot itself is
        # played by the server (see schedule_reboot), not by a process of the shell, which
        # dies with the shell when kinit deletes it right after the output.
        m = re.search(r"/t (\d+)", script)
        previous = schedule_reboot(int(m.group(1)) if m else 0)
        return ("printf 'kinit-json:{\"changed\":true,\"reboot_requested\":true,"
                "\"previous_boot_time\":\"%s\"}\\n'" % previous)
    if first == "# kinit:get":
        path = shlex.quote(ps_quoted(script, "path"))
        return ("set -e; test -f %s || { echo \"file not found: %s\" >&2; exit 2; }; "
                "base64 -w 65536 %s; printf 'sha256:%%s\\n' \"$(sha256sum %s | cut -d' ' -f1)\""
                % (path, path, path, path))
    return script


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, opts):
        super().__init__(addr, Handler)
        self.opts = opts
        self.stats = Stats()
        self.lock = threading.Lock()
        self.shells = {}
        self.fail_next = 0
        self.delay_ms = 0
        self.drop_in = 0
        # Network blips (see `blip`): open connections (socket -> the thread ident serving a
        # request on it, or None when idle), a generation counter a request compares to know
        # whether a blip happened while it ran, and the event the serve loop waits on.
        self.conn_lock = threading.Lock()
        self.blip_lock = threading.Lock()
        self.conns = {}
        self.blip_generation = 0
        self.refusing = False
        self.resume = threading.Event()
        self.listener_closed = threading.Event()
        self.ssl_ctx = None
        self.users = {}
        for spec in opts.user:
            name, _, pw = spec.partition(":")
            domain, _, user = name.rpartition("\\")
            self.users[user.lower()] = (domain, user, pw)

    def handle_error(self, request, client_address):
        # Clients that drop a connection mid-request (cancellation tests) are normal here.
        pass

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().server_bind()

    def blip(self, ms, between_requests=False):
        """Close every connection and refuse new ones for `ms` ms; returns when the server
        listens again. With `between_requests`, first wait (at most 10 s) until no request is
        in flight or arriving, other than the calling thread's own."""
        me = threading.get_ident()
        with self.blip_lock:
            deadline = time.monotonic() + 10
            while True:
                with self.conn_lock:
                    busy = [s for s, t in self.conns.items() if t is not None and t != me]
                    # A command whose end the client has not received yet: it is in the
                    # middle of running one (between its Command and last Receive). The
                    # shells' lock may be held by the caller (a script run inside a
                    # command): then wait for the deadline.
                    if self.lock.acquire(blocking=False):
                        try:
                            busy += [c for sh in self.shells.values()
                                     for c in sh.commands.values() if not c.delivered]
                        finally:
                            self.lock.release()
                    else:
                        busy.append(None)
                    idle = [s for s, t in self.conns.items() if t is None]
                    try:
                        arriving = select.select(idle, [], [], 0)[0] if idle else []
                    except (OSError, ValueError):
                        arriving = []
                    if not between_requests or not (busy or arriving) \
                            or time.monotonic() > deadline:
                        self.refusing = True
                        self.blip_generation += 1
                        closing = list(self.conns)
                        break
                time.sleep(0.005)
            self.stats.inc("blips")
            for s in closing:
                try:
                    # socket.socket's own shutdown: an SSLSocket's would drop its SSL object
                    # under the thread still reading from it.
                    socket.socket.shutdown(s, socket.SHUT_RDWR)
                    self.stats.inc("blip_closed_connections")
                except OSError:
                    pass
            # Stop accepting: the serve loop (main) closes the listener, so connects are
            # refused, and listens again once told to.
            self.listener_closed.clear()
            self.shutdown()
            self.listener_closed.wait()
            time.sleep(ms / 1000.0)
            with self.conn_lock:
                self.refusing = False
            self.resume.set()

    def listen_again(self):
        sock = socket.socket(self.address_family, self.socket_type)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(self.server_address)
        sock.listen(self.request_queue_size)
        if self.ssl_ctx is not None:
            sock = self.ssl_ctx.wrap_socket(sock, server_side=True)
        self.socket = sock


def fault_xml(relates, fault, *fmt):
    sub, code, msg = fault
    msg = msg.format(*fmt)
    return (
        '<s:Envelope xml:lang="en-US" xmlns:s="%(s)s" xmlns:a="%(a)s" xmlns:w="%(w)s">'
        "<s:Header><a:Action>http://schemas.dmtf.org/wbem/wsman/1/wsman/fault</a:Action>"
        "<a:MessageID>uuid:%(mid)s</a:MessageID>"
        "<a:To>http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous</a:To>"
        "<a:RelatesTo>%(rel)s</a:RelatesTo></s:Header>"
        "<s:Body><s:Fault><s:Code><s:Value>s:Receiver</s:Value><s:Subcode><s:Value>%(sub)s"
        "</s:Value></s:Subcode></s:Code><s:Reason><s:Text xml:lang=\"en-US\">%(msg)s</s:Text>"
        "</s:Reason><s:Detail><f:WSManFault xmlns:f=\"http://schemas.microsoft.com/wbem/wsman/1/"
        "wsmanfault\" Code=\"%(code)d\" Machine=\"kinit-test\"><f:Message>%(msg)s</f:Message>"
        "</f:WSManFault></s:Detail></s:Fault></s:Body></s:Envelope>"
        % dict(NS, mid=str(uuid.uuid4()).upper(), rel=relates, sub=sub, msg=msg, code=code))


def envelope(action, relates, body):
    return (
        '<s:Envelope xml:lang="en-US" xmlns:s="%(s)s" xmlns:a="%(a)s" xmlns:w="%(w)s" '
        'xmlns:rsp="%(rsp)s" xmlns:x="%(x)s"><s:Header><a:Action>%(act)s</a:Action>'
        "<a:MessageID>uuid:%(mid)s</a:MessageID>"
        "<a:To>http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous</a:To>"
        "<a:RelatesTo>%(rel)s</a:RelatesTo></s:Header><s:Body>%(body)s</s:Body></s:Envelope>"
        % dict(NS, act=action, mid=str(uuid.uuid4()).upper(), rel=relates, body=body))


class Fault(Exception):
    def __init__(self, fault, *fmt):
        self.fault, self.fmt = fault, fmt


def parse_timeout(text):
    m = re.match(r"PT([0-9.]+)S", text or "")
    return float(m.group(1)) if m else 60.0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    ntlm = None
    ntlm_user = None

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        srv = self.server
        with srv.conn_lock:
            refuse = srv.refusing
            if not refuse:
                srv.conns[self.connection] = None
        if refuse:
            # Accepted just as a blip began: gone with the others.
            self.close_connection = True
            try:
                socket.socket.shutdown(self.connection, socket.SHUT_RDWR)
            except OSError:
                pass

    def finish(self):
        with self.server.conn_lock:
            self.server.conns.pop(self.connection, None)
        try:
            super().finish()
        except OSError:
            pass

    def _busy(self, on):
        with self.server.conn_lock:
            if self.connection in self.server.conns:
                self.server.conns[self.connection] = threading.get_ident() if on else None
            return self.server.blip_generation

    # ---- HTTP plumbing -------------------------------------------------------------------

    def reply(self, code, body=b"", ctype="application/soap+xml;charset=UTF-8", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        if body:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def challenge(self, token=None):
        hdrs = []
        if token is not None:
            hdrs.append(("WWW-Authenticate", "Negotiate " + base64.b64encode(token).decode()))
        else:
            if "ntlm" in self.server.opts.auth:
                hdrs.append(("WWW-Authenticate", "Negotiate"))
            if "basic" in self.server.opts.auth:
                hdrs.append(("WWW-Authenticate", 'Basic realm="WSMAN"'))
        self.reply(401, headers=hdrs)

    def do_GET(self):
        if self.path == "/_stats":
            srv = self.server
            with srv.stats.lock:
                data = dict(srv.stats.c)
            with srv.lock:
                data["shells_open"] = len(srv.shells)
            self.reply(200, json.dumps(data).encode(), "application/json")
        else:
            self.reply(404)

    def do_POST(self):
        generation = self._busy(True)
        try:
            self._post(generation)
        finally:
            self._busy(False)

    def _post(self, generation):
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length) if length else b""
        if self.path == "/_control":
            ctl = json.loads(body or b"{}")
            with self.server.lock:
                self.server.fail_next = ctl.get("fail_next", self.server.fail_next)
                self.server.delay_ms = ctl.get("delay_ms", self.server.delay_ms)
                if "drop_nth" in ctl:
                    self.server.drop_in = ctl["drop_nth"]
            if "blip_ms" in ctl:
                # Shortly after this reply has gone out.
                threading.Timer(0.05, self.server.blip, args=(
                    ctl["blip_ms"], ctl.get("between_requests", False))).start()
            return self.reply(200, b"{}", "application/json")
        if self.path != "/wsman":
            return self.reply(404)
        srv = self.server
        if os.path.exists(os.path.join(srv.opts.state_dir, "down")):
            # Rebooting: nothing answers, and no shell survives. (Their processes are left
            # alone: the reboot itself runs as one of them.)
            with srv.lock:
                srv.shells.clear()
            self.close_connection = True
            return
        srv.stats.inc("requests")
        with srv.lock:
            delay, fail = srv.delay_ms, srv.fail_next > 0
            if fail:
                srv.fail_next -= 1
        if delay:
            time.sleep(delay / 1000.0)
        if fail:
            srv.stats.inc("injected_500")
            return self.reply(500)
        user = self.authenticate()
        if user is None:
            return
        ctype = self.headers.get("Content-Type", "")
        sealed = ctype.startswith("multipart/encrypted")
        if sealed:
            if self.ntlm is None or not self.ntlm.complete:
                return self.reply(401)
            try:
                body = self.unseal(body)
            except ValueError:
                srv.stats.inc("rejected_frames")
                return self.reply(400)
            srv.stats.inc("sealed_requests")
        elif body:
            if srv.opts.https:
                srv.stats.inc("tls_requests")
            else:
                srv.stats.inc("plaintext_requests")
                if not srv.opts.allow_unencrypted:
                    srv.stats.inc("rejected_plaintext")
                    return self.reply(500)
        if not body:
            # The empty request clients send to finish an auth handshake.
            return self.reply(200)
        code, xml = self.dispatch(body, user)
        srv.stats.inc("operations")
        with srv.conn_lock:
            blipped = srv.blip_generation != generation
        if blipped:
            # The network went away while this request ran: its response is lost.
            srv.stats.inc("blip_lost_responses")
            self.close_connection = True
            return
        with srv.lock:
            drop = srv.drop_in == 1
            if srv.drop_in > 0:
                srv.drop_in -= 1
        if drop:
            # The operation happened; its response is lost with the connection.
            srv.stats.inc("dropped_responses")
            if ACT_CREATE.encode() in body:
                # The client cannot know this shell's id: it stays open (Windows reclaims
                # it after its idle timeout).
                srv.stats.inc("dropped_creates")
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        out = xml.encode("utf-8")
        if sealed:
            return self.reply(code, self.seal(out),
                              'multipart/encrypted;protocol="%s";boundary="Encrypted Boundary"'
                              % ENC_PROTOCOL)
        self.reply(code, out)

    # ---- auth ----------------------------------------------------------------------------

    def authenticate(self):
        """The authenticated user name, or None once a 401 has been sent."""
        srv = self.server
        auth = self.headers.get("Authorization", "")
        scheme, _, value = auth.partition(" ")
        scheme = scheme.lower()
        if scheme == "basic" and "basic" in srv.opts.auth:
            if not srv.opts.https and not srv.opts.allow_unencrypted:
                srv.stats.inc("rejected_plaintext")
                self.reply(500)
                return None
            try:
                name, _, pw = base64.b64decode(value).decode("utf-8").partition(":")
            except (ValueError, UnicodeDecodeError):
                name, pw = "", None
            known = srv.users.get(name.rpartition("\\")[2].lower())
            if known is None or known[2] != pw:
                srv.stats.inc("auth_failures")
                self.challenge()
                return None
            srv.stats.inc("basic_auths")
            return known[1]
        if scheme in ("negotiate", "ntlm") and "ntlm" in srv.opts.auth and value:
            import spnego
            from spnego.channel_bindings import GssChannelBindings
            token = base64.b64decode(value)
            if self.ntlm is None or self.ntlm.complete:
                cbt = None
                if srv.opts.https:
                    der = srv.cert_der
                    cbt = GssChannelBindings(application_data=b"tls-server-end-point:"
                                             + hashlib.sha256(der).digest())
                self.ntlm = spnego.server(protocol="ntlm", channel_bindings=cbt)
            try:
                out = self.ntlm.step(token)
            except Exception:  # pyspnego raises several types for a bad credential
                self.ntlm = None
                srv.stats.inc("auth_failures")
                self.challenge()
                return None
            if not self.ntlm.complete:
                self.challenge(out)
                return None
            srv.stats.inc("ntlm_handshakes")
            self.ntlm_user = self.ntlm.client_principal
            return self.ntlm_user
        if not auth and self.ntlm is not None and self.ntlm.complete:
            return self.ntlm_user
        self.challenge()
        return None

    def unseal(self, body):
        parts = body.split(BOUNDARY + b"\r\n")
        # ['', header part, octet-stream part ending in the closing boundary]
        if len(parts) != 3 or parts[0] != b"":
            raise ValueError("bad multipart")
        m = re.search(rb"Length=(\d+)", parts[1])
        if not m or ENC_PROTOCOL.encode() not in parts[1]:
            raise ValueError("bad header part")
        head = b"\tContent-Type: application/octet-stream\r\n"
        tail = BOUNDARY + b"--\r\n"
        if not parts[2].startswith(head) or not parts[2].endswith(tail):
            raise ValueError("bad octet-stream part")
        payload = parts[2][len(head):-len(tail)]
        if len(payload) < 4:
            raise ValueError("short payload")
        hlen = struct.unpack("<I", payload[:4])[0]
        try:
            plain = self.ntlm.unwrap_winrm(payload[4:4 + hlen], payload[4 + hlen:])
        except Exception as e:
            raise ValueError(str(e))
        if len(plain) != int(m.group(1)):
            raise ValueError("length mismatch")
        return plain

    def seal(self, data):
        res = self.ntlm.wrap_winrm(data)
        return (BOUNDARY + b"\r\n\tContent-Type: " + ENC_PROTOCOL.encode() + b"\r\n"
                + b"\tOriginalContent: type=application/soap+xml;charset=UTF-8;Length="
                + str(len(data)).encode() + b"\r\n" + BOUNDARY + b"\r\n"
                + b"\tContent-Type: application/octet-stream\r\n"
                + struct.pack("<I", len(res.header)) + res.header + res.data
                + BOUNDARY + b"--\r\n")

    # ---- WS-Management -------------------------------------------------------------------

    def dispatch(self, body, user):
        root = ET.fromstring(body)
        hdr = root.find("s:Header", NS)
        action = hdr.findtext("a:Action", "", NS)
        mid = hdr.findtext("a:MessageID", "", NS)
        uri = hdr.findtext("w:ResourceURI", "", NS)
        sel = hdr.find("w:SelectorSet/w:Selector[@Name='ShellId']", NS)
        shell_id = sel.text if sel is not None else None
        timeout = parse_timeout(hdr.findtext("w:OperationTimeout", "", NS))
        bdy = root.find("s:Body", NS)
        try:
            if uri != SHELL_URI:
                raise Fault(FAULT_URI)
            if action == ACT_CREATE:
                return 200, self.op_create(mid, user)
            with self.server.lock:
                shell = self.server.shells.get(shell_id)
            if shell is None:
                raise Fault(FAULT_SELECTORS, shell_id)
            if action == ACT_DELETE:
                with self.server.lock:
                    failing = self.server.opts.fail_deletes > 0
                    if failing:
                        self.server.opts.fail_deletes -= 1
                if failing:
                    self.server.stats.inc("deletes_failed")
                    raise Fault(FAULT_BUSY)
                return 200, self.op_delete(mid, shell)
            if action == ACT_SHELL + "Command":
                return 200, self.op_command(mid, shell, bdy)
            if action == ACT_SHELL + "Send":
                return 200, self.op_send(mid, shell, bdy)
            if action == ACT_SHELL + "Receive":
                return 200, self.op_receive(mid, shell, bdy, timeout)
            if action == ACT_SHELL + "Signal":
                return 200, self.op_signal(mid, shell, bdy)
            raise Fault(FAULT_ACTION)
        except Fault as f:
            if f.fault is FAULT_TIMEDOUT:
                self.server.stats.inc("timeouts")
            return 500, fault_xml(mid, f.fault, *f.fmt)

    def op_create(self, mid, user):
        srv = self.server
        with srv.lock:
            mine = sum(1 for s in srv.shells.values() if s.owner == user)
            if mine >= srv.opts.max_shells:
                srv.stats.inc("quota_faults")
                raise Fault(FAULT_QUOTA, srv.opts.max_shells)
            shell = Shell(user)
            srv.shells[shell.id] = shell
        srv.stats.inc("shells_created")
        return envelope(
            "http://schemas.xmlsoap.org/ws/2004/09/transfer/CreateResponse", mid,
            "<x:ResourceCreated><a:Address>http://127.0.0.1/wsman</a:Address>"
            "<a:ReferenceParameters><w:ResourceURI>%s</w:ResourceURI><w:SelectorSet>"
            '<w:Selector Name="ShellId">%s</w:Selector></w:SelectorSet></a:ReferenceParameters>'
            "</x:ResourceCreated><rsp:Shell><rsp:ShellId>%s</rsp:ShellId>"
            "<rsp:ResourceUri>%s</rsp:ResourceUri><rsp:Owner>%s</rsp:Owner>"
            "<rsp:InputStreams>stdin</rsp:InputStreams><rsp:OutputStreams>stdout stderr"
            "</rsp:OutputStreams></rsp:Shell>" % (SHELL_URI, shell.id, shell.id, SHELL_URI, user))

    def op_delete(self, mid, shell):
        with self.server.lock:
            self.server.shells.pop(shell.id, None)
        for cmd in shell.commands.values():
            cmd.kill()
        self.server.stats.inc("shells_deleted")
        return envelope("http://schemas.xmlsoap.org/ws/2004/09/transfer/DeleteResponse", mid, "")

    def op_command(self, mid, shell, bdy):
        line = bdy.find("rsp:CommandLine", NS)
        cmd = line.findtext("rsp:Command", "", NS).strip()
        args = [a.text or "" for a in line.findall("rsp:Arguments", NS)]
        cid = line.get("CommandId") or str(uuid.uuid4()).upper()
        if cid not in shell.commands:
            with self.server.lock:
                script = to_sh(join_command_line(cmd, args), self.server.windows)
            shell.commands[cid] = Command(script)
            self.server.stats.inc("commands")
        return envelope(ACT_SHELL + "CommandResponse", mid,
                        "<rsp:CommandResponse><rsp:CommandId>%s</rsp:CommandId>"
                        "</rsp:CommandResponse>" % cid)

    def find_command(self, shell, el):
        cmd = shell.commands.get(el.get("CommandId") if el is not None else None)
        if cmd is None:
            raise Fault(FAULT_PARAM)
        return cmd

    def op_send(self, mid, shell, bdy):
        for st in bdy.findall("rsp:Send/rsp:Stream", NS):
            cmd = self.find_command(shell, st)
            cmd.send(base64.b64decode(st.text or ""), st.get("End") == "true")
        self.server.stats.inc("sends")
        return envelope(ACT_SHELL + "SendResponse", mid, "<rsp:SendResponse/>")

    def op_signal(self, mid, shell, bdy):
        el = bdy.find("rsp:Signal", NS)
        cid = el.get("CommandId")
        code = el.findtext("rsp:Code", "", NS)
        cmd = shell.commands.get(cid)
        if cmd is None:
            raise Fault(FAULT_PARAM)
        if code.endswith("/ctrl_c"):
            cmd.kill(signal.SIGINT)
        else:
            cmd.kill()
            shell.commands.pop(cid, None)
        self.server.stats.inc("signals")
        return envelope(ACT_SHELL + "SignalResponse", mid, "<rsp:SignalResponse/>")

    def op_receive(self, mid, shell, bdy, timeout):
        el = bdy.find("rsp:Receive/rsp:DesiredStream", NS)
        cmd = self.find_command(shell, el)
        cid = el.get("CommandId")
        deadline = time.monotonic() + timeout
        with cmd.cond:
            while not (cmd.out["stdout"] or cmd.out["stderr"] or cmd.done):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Fault(FAULT_TIMEDOUT)
                cmd.cond.wait(left)
            parts = []
            for name in ("stdout", "stderr"):
                data = bytes(cmd.out[name][:CHUNK])
                del cmd.out[name][:CHUNK]
                if data:
                    parts.append('<rsp:Stream Name="%s" CommandId="%s">%s</rsp:Stream>'
                                 % (name, cid, base64.b64encode(data).decode()))
            finished = cmd.done and not cmd.out["stdout"] and not cmd.out["stderr"]
            if finished:
                cmd.delivered = True
                for name in ("stdout", "stderr"):
                    parts.append('<rsp:Stream Name="%s" CommandId="%s" End="true"></rsp:Stream>'
                                 % (name, cid))
                parts.append('<rsp:CommandState CommandId="%s" State="%s"><rsp:ExitCode>%d'
                             "</rsp:ExitCode></rsp:CommandState>" % (cid, STATE_DONE,
                                                                      cmd.exit_code))
            else:
                parts.append('<rsp:CommandState CommandId="%s" State="%s"/>'
                             % (cid, STATE_RUNNING))
        return envelope(ACT_SHELL + "ReceiveResponse", mid,
                        '<rsp:ReceiveResponse SequenceID="0">%s</rsp:ReceiveResponse>'
                        % "".join(parts))


def make_certs(state_dir):
    """A throwaway CA (written to cert.pem, what clients trust) and a leaf for 127.0.0.1."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress
    now = datetime.datetime.now(datetime.timezone.utc)

    def build(subject, issuer, pub, signer, ca):
        b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
             .public_key(pub).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(days=1))
             .not_valid_after(now + datetime.timedelta(days=30))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            b = b.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
        return b.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kinit-winrm-test-ca")])
    ca = build(ca_name, ca_name, ca_key.public_key(), ca_key, True)
    key = ec.generate_private_key(ec.SECP256R1())
    leaf_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    leaf = build(leaf_name, ca_name, key.public_key(), ca_key, False)
    pem = serialization.Encoding.PEM
    ca_path = os.path.join(state_dir, "cert.pem")
    chain_path = os.path.join(state_dir, "server-chain.pem")
    key_path = os.path.join(state_dir, "key.pem")
    with open(ca_path, "wb") as f:
        f.write(ca.public_bytes(pem))
    with open(chain_path, "wb") as f:
        f.write(leaf.public_bytes(pem) + ca.public_bytes(pem))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return chain_path, key_path, leaf.public_bytes(serialization.Encoding.DER)


def given_certs(state_dir, opts):
    """The chain and key the options name, as files `ssl` loads, and the leaf as DER."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    pem = serialization.Encoding.PEM
    if opts.pfx:
        from cryptography.hazmat.primitives.serialization import pkcs12
        password = os.environ.get("KINIT_WINRM_PFX_PASSWORD", "").encode()
        with open(opts.pfx, "rb") as f:
            key, leaf, extra = pkcs12.load_key_and_certificates(f.read(), password)
        chain_path = os.path.join(state_dir, "pfx-chain.pem")
        key_path = os.path.join(state_dir, "pfx-key.pem")
        with open(chain_path, "wb") as f:
            f.write(leaf.public_bytes(pem) + b"".join(c.public_bytes(pem) for c in extra))
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        return chain_path, key_path, leaf.public_bytes(serialization.Encoding.DER)
    with open(opts.cert_chain, "rb") as f:
        leaf = x509.load_pem_x509_certificates(f.read())[0]
    return opts.cert_chain, opts.key, leaf.public_bytes(serialization.Encoding.DER)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--https", action="store_true")
    p.add_argument("--cert-chain", help="PEM: the certificate to present, then its chain")
    p.add_argument("--key", help="PEM: the key of --cert-chain")
    p.add_argument("--pfx", help="PKCS#12 with the key and certificate to present "
                   "(password in KINIT_WINRM_PFX_PASSWORD)")
    p.add_argument("--auth", default="basic,ntlm")
    p.add_argument("--allow-unencrypted", action="store_true")
    p.add_argument("--max-shells", type=int, default=30)
    p.add_argument("--user", action="append", default=[])
    p.add_argument("--windows-root", help="act out kinit's Windows module scripts on a fake "
                   "C: drive in this folder, recording each action (windows_standin.py)")
    p.add_argument("--reboot-down-ms", type=int, default=2000)
    p.add_argument("--fail-deletes", type=int, default=0,
                   help="answer the first N shell Deletes with an internal-error fault (HTTP 500), "
                   "as a busy WinRM service does")
    opts = p.parse_args()
    if (opts.cert_chain is None) != (opts.key is None):
        p.error("--cert-chain and --key go together")
    if (opts.cert_chain or opts.pfx) and not opts.https:
        p.error("--cert-chain/--key and --pfx need --https")
    opts.auth = opts.auth.split(",")
    if not opts.user:
        opts.user = ["KINIT\\vagrant:vagrant"]
    os.makedirs(opts.state_dir, exist_ok=True)
    # pyspnego's NTLM acceptor reads users from NTLM_USER_FILE (`DOMAIN:user:password`); the
    # `:user:password` line serves clients that send no domain.
    user_file = os.path.join(opts.state_dir, "ntlm_users")
    with open(user_file, "w") as f:
        for spec in opts.user:
            name, _, pw = spec.partition(":")
            domain, _, user = name.rpartition("\\")
            f.write("%s:%s:%s\n:%s:%s\n" % (domain, user, pw, user, pw))
    os.environ["NTLM_USER_FILE"] = user_file
    # Boot time and reboot state, shared with the sh scripts of the reboot emulation.
    os.environ["KINIT_WINRM_STATE"] = opts.state_dir
    os.environ["KINIT_WINRM_REBOOT_DOWN"] = "%.3f" % (opts.reboot_down_ms / 1000.0)
    with open(os.path.join(opts.state_dir, "boot_time"), "w") as f:
        f.write(datetime.datetime.now(datetime.timezone.utc).isoformat() + "\n")

    srv = Server(("127.0.0.1", opts.port), opts)
    srv.cert_der = None
    srv.windows = None
    if opts.windows_root:
        from windows_standin import Windows
        srv.windows = Windows(opts.windows_root)
    if opts.https:
        if opts.cert_chain or opts.pfx:
            cert, key, der = given_certs(opts.state_dir, opts)
        else:
            cert, key, der = make_certs(opts.state_dir)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        srv.ssl_ctx = ctx
        srv.cert_der = der
    if srv.windows is not None:
        srv.windows.blip = srv.blip
    print("READY %d" % srv.server_address[1], flush=True)
    # Exit when the parent (the test) goes away: it holds our stdin open.
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    # The loop owns the listening socket; a blip (`Server.blip`) stops it, it closes the
    # listener, and listens and serves again when the blip is over.
    while True:
        srv.serve_forever(poll_interval=0.05)
        srv.socket.close()
        srv.listener_closed.set()
        srv.resume.wait()
        srv.resume.clear()
        srv.listen_again()


if __name__ == "__main__":
    main()
