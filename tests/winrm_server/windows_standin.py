"""A recording stand-in for the Windows side of kinit's Windows worker join.

No Windows host and no PowerShell can exist on the build machine, so when the WinRM test
server runs with `--windows-root DIR` it hands each decoded PowerShell script to this module
instead of running it with sh. It recognises the scripts of kinit's Windows modules by the
lines their module bodies always contain (src/modules/win_*.rs), acts them out on a fake
`C:` drive under DIR/fs, and appends one line per action to DIR/calls.log, in order:

    Install-WindowsFeature Containers      win_feature (the feature then needs a reboot)
    shutdown.exe /r /t 2                   win_reboot (a new boot; pending reboots done)
    mkdir C:\\k                             win_file state=directory, win_copy parents
    put C:\\k\\start.ps1                     an upload (win_copy, kinit's `# kinit:put`)
    remove C:\\k\\kubeadm-join.yaml          win_file state=absent
    schedule kinit-start                   the role's scheduled task for start.ps1 started
    start.ps1 -ManagementIP 10.0.0.2 ...   the script's parameters as given
    containerd --register-service          what start.ps1 does, see `start_ps1`:
    service kubelet / flanneld / kube-proxy  a service registered (not running yet)
    start containerd / flanneld / ...      a registered service started by the script
    firewall kubelet TCP 10250             an inbound firewall rule made
    hns network External                   an HNS network start.ps1 creates (Add-HnsNetwork)
    mtu 1442                               start.ps1 set the management interface's MTU
    kubeadm join --config C:\\k\\kubeadm-join.yaml   (starts the kubelet service itself)

The host's state (state.json) can be written before the server starts, e.g. a Containers
feature that Windows Setup's first logon installed without the reboot it needs
(`"features": ["Containers"], "reboot_pending": true`: Get-WindowsFeature reports it
InstallPending, with `Installed` true). Further knobs:

    "blip_ms": N             the first HNS network (it creates the Hyper-V switch) drops the
                             management NIC for N ms: the server closes every connection and
                             refuses new ones (server.py `blip`), between two requests of
                             kinit's when start.ps1 runs detached, in the middle of the
                             command when it runs inside it;
    "blip_at_flanneld": true  flanneld's start blips the network too (as it does when its
                             network is the first);
    "join_fails": "text"     `kubeadm join` fails with this output.

start.ps1 runs either inside the WinRM command (`& 'C:\k\start.ps1' ...` as the script) or,
as kinit_windows_node runs it, detached in a scheduled task (the script that registers the
task, `Register-ScheduledTask -TaskName $taskName`): then it runs in a thread of the server
and writes its output to C:\k\logs\start.log and `KINIT_RC=`/`KINIT_CHANGED=` to
C:\k\start.result, which the role's polling script (`# kinit: start.ps1 result`) reads; a
task still running is not started again.

Read-only probes (win_stat, win_copy's hash probe, the boot time kinit polls after a reboot:
`# kinit:boot-time`) answer from the fake drive without a log line. Any other script still runs with sh (the server's usual convention), which is what
`win_reboot`'s `whoami` and the reconnection probe need.
"""

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import threading
import time

FEATURES = {"Containers", "Hyper-V", "Hyper-V-PowerShell"}


class Windows:
    def __init__(self, root):
        self.root = root
        self.fs = os.path.join(root, "fs")
        os.makedirs(os.path.join(self.fs, "C"), exist_ok=True)
        self.state_file = os.path.join(root, "state.json")
        if not os.path.exists(self.state_file):
            self.save({"features": [], "boots": 1, "reboot_pending": False, "services": {},
                       "firewall": []})
        # The server's network blip (server.py sets it); the detached start.ps1 run.
        self.blip = None
        self.task = None
        self.lock = threading.Lock()

    # ---- bookkeeping ---------------------------------------------------------------------

    def load(self):
        with open(self.state_file) as f:
            return json.load(f)

    def save(self, st):
        with open(self.state_file, "w") as f:
            json.dump(st, f)

    def log(self, line):
        with open(os.path.join(self.root, "calls.log"), "a") as f:
            f.write(line + "\n")

    def local(self, winpath):
        """The file under DIR/fs that a Windows path names (`C:\\k\\x` -> fs/C/k/x)."""
        m = re.match(r"^([A-Za-z]):[\\/]?(.*)$", winpath)
        if not m:
            raise ValueError("not an absolute Windows path: %r" % winpath)
        parts = [p for p in re.split(r"[\\/]+", m.group(2)) if p]
        return os.path.join(self.fs, m.group(1).upper(), *parts)

    # ---- dispatch ------------------------------------------------------------------------

    def to_sh(self, script):
        """The sh script the server runs for this PowerShell `script`."""
        first = script.lstrip().split("\n", 1)[0].strip()
        if first == "# kinit:put":
            path = ps_var(script, "path")
            self.log("put " + path)
            dest = shlex.quote(self.local(path))
            tmp = shlex.quote(self.local(path) + ".kinit-tmp")
            return ("set -e; tr -d '\\r' | base64 -d > %s; mv -f %s %s; "
                    "sha256sum %s | cut -d' ' -f1" % (tmp, tmp, dest, dest))
        if first == "# kinit:get":
            path = shlex.quote(self.local(ps_var(script, "path")))
            return ("set -e; base64 -w 65536 %s; printf 'sha256:%%s\\n' \"$(sha256sum %s | "
                    "cut -d' ' -f1)\"" % (path, path))
        if first == "# kinit:boot-time":
            return "printf 'boot-%%d\\n' %d" % self.load()["boots"]
        check = "$check = $true" in script
        for marker, handler in (
                ("Get-WindowsFeature -Name $names", self.feature),
                ("& shutdown.exe /r", self.reboot),
                ("$r.stat = $st", self.stat),
                ("$r.hashes = $h", self.copy_probe),
                ("foreach ($d in @(", self.mkdirs),
                ("$i = Get-Item -LiteralPath $p -Force", self.file),
        ):
            if marker in script:
                result = handler(script, check)
                return "printf '%%s\\n' %s" % shlex.quote("kinit-json:" + json.dumps(result))
        if "Register-ScheduledTask -TaskName $taskName" in script:
            out, rc = self.schedule_start(script)
            return "printf '%%s' %s; exit %d" % (shlex.quote(out), rc)
        if re.search(r"^\s*# kinit: start\.ps1 result\r?$", script, re.M):
            return "printf '%%s' %s" % shlex.quote(self.start_result(script))
        if re.search(r"^\s*# kinit: service account token expiry\r?$", script, re.M):
            return "printf '%%s' %s" % shlex.quote(self.token_expiry(script))
        if re.search(r"^\s*# kinit: restart a service for its renewed token\r?$", script, re.M):
            return "printf '%%s' %s" % shlex.quote(self.restart_service(script))
        m = re.match(r"^\s*&\s+'([^']*start\.ps1)'\s+(.*?)\n", script, re.S)
        if m:
            out, rc = self.start_ps1(m.group(1), m.group(2), detached=False)
            return "printf '%%s' %s; exit %d" % (shlex.quote(out), rc)
        return script

    # ---- kinit's Windows modules ---------------------------------------------------------

    def feature(self, script, check):
        """win_feature. A feature installed since the last boot is InstallPending: Windows
        reports its `Installed` property as true all the same (inspec/inspec#2774), so only a
        script that looks at `InstallState` sees that it still needs the reboot."""
        names = ps_list(re.search(r"^\$names = (@\(.*\))$", script, re.M).group(1))
        unknown = [n for n in names if n not in FEATURES]
        r = {"changed": False, "reboot_required": False}
        if unknown:
            return dict(r, failed=True, msg="unknown feature(s): " + ", ".join(unknown))
        st = self.load()
        install = "Install-WindowsFeature" in script
        pending_state = "InstallPending" if install else "UninstallPending"
        if st["reboot_pending"] and "InstallState -eq '%s'" % pending_state in script:
            pending = [n for n in names if (n in st["features"]) == install]
            r["reboot_required"] = bool(pending)
        todo = [n for n in names if (n in st["features"]) != install]
        if todo:
            r["changed"] = True
            if not check:
                verb = "Install-WindowsFeature" if install else "Uninstall-WindowsFeature"
                self.log("%s %s" % (verb, " ".join(todo)))
                if install:
                    st["features"] += todo
                else:
                    st["features"] = [f for f in st["features"] if f not in todo]
                st["reboot_pending"] = True
                self.save(st)
                r.update(success=True, exitcode="SuccessRestartRequired", reboot_required=True)
        return r

    def reboot(self, script, check):
        st = self.load()
        r = {"changed": True, "reboot_requested": not check,
             "previous_boot_time": "boot-%d" % st["boots"]}
        if not check:
            self.log(re.search(r"& (shutdown\.exe /r /t \d+)", script).group(1))
            st["boots"] += 1
            st["reboot_pending"] = False
            self.save(st)
        return r

    def stat(self, script, check):
        path = ps_var(script, "p")
        local = self.local(path)
        st = {"exists": os.path.exists(local)}
        if st["exists"]:
            st.update(path=path, isdir=os.path.isdir(local), isreg=os.path.isfile(local))
        return {"changed": False, "stat": st}

    def copy_probe(self, script, check):
        root = ps_var(script, "root")
        leaf = re.search(r"\$root = Join-Path \$root ('(?:[^']|'')*')", script)
        if leaf and (os.path.isdir(self.local(root)) or root.endswith(("\\", "/"))):
            root = root.rstrip("\\/") + "\\" + ps_list("@(%s)" % leaf.group(1))[0]
        rels = ps_list(re.search(r"foreach \(\$rel in (@\(.*?\))\)", script).group(1))
        hashes = {}
        for rel in rels:
            p = self.local(root if rel == "" else root + "\\" + rel)
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    hashes[rel] = hashlib.sha256(f.read()).hexdigest()
            elif os.path.isdir(p):
                hashes[rel] = "directory"
        parent = os.path.dirname(self.local(root))
        return {"changed": False, "dest": root, "hashes": hashes,
                "parent_exists": os.path.isdir(parent)}

    def mkdirs(self, script, check):
        for d in ps_list(re.search(r"foreach \(\$d in (@\(.*?\))\)", script).group(1)):
            self.log("mkdir " + d)
            os.makedirs(self.local(d), exist_ok=True)
        return {"changed": False}

    def file(self, script, check):
        path = ps_var(script, "p")
        local = self.local(path)
        r = {"changed": False, "path": path}
        if "-ItemType Directory" in script:
            if os.path.exists(local) and not os.path.isdir(local):
                return dict(r, failed=True, msg="path %s exists but is not a directory" % path)
            if not os.path.exists(local):
                r["changed"] = True
                if not check:
                    self.log("mkdir " + path)
                    os.makedirs(local)
        elif "Remove-Item" in script:
            if os.path.exists(local):
                r["changed"] = True
                if not check:
                    self.log("remove " + path)
                    if os.path.isdir(local):
                        shutil.rmtree(local)
                    else:
                        os.remove(local)
        else:
            return dict(r, failed=True, msg="win_file state not acted out by the stand-in")
        return r

    # ---- start.ps1 in a scheduled task ---------------------------------------------------

    def schedule_start(self, script):
        """The role's scheduling script: unless the task is still running, remove the last
        result and log, and run start.ps1 (the invocation line of the runner script it
        writes) detached."""
        kube_dir = ps_var(script, "kubeDir")
        with self.lock:
            if self.task is not None and self.task.is_alive():
                return ("KINIT_START=running\n", 0)
            m = re.search(r"^\s*&\s+'([^']*start\.ps1)'\s+(.*?)\s+\*>&1", script, re.M)
            if not m:
                return ("no start.ps1 invocation in the runner script\n", 1)
            result = self.local(kube_dir + "\\start.result")
            log = self.local(kube_dir + "\\logs\\start.log")
            for f in (result, log):
                if os.path.exists(f):
                    os.remove(f)
            self.log("schedule kinit-start")

            def run():
                out, rc = self.start_ps1(m.group(1), m.group(2), detached=True)
                os.makedirs(os.path.dirname(log), exist_ok=True)
                with open(log, "w") as f:
                    f.write(out)
                changed = "KINIT_CHANGED=True" in out.splitlines()
                with open(result + ".tmp", "w") as f:
                    f.write("KINIT_RC=%d\nKINIT_CHANGED=%s\n" % (rc, changed))
                os.replace(result + ".tmp", result)

            self.task = threading.Thread(target=run, daemon=True)
            self.task.start()
        return ("KINIT_START=started\n", 0)

    def start_result(self, script):
        """The role's polling script: the result file and, unless it says RC 0, the log's
        last lines; `running` while the task runs."""
        kube_dir = ps_var(script, "kubeDir")
        result = self.local(kube_dir + "\\start.result")
        log = self.local(kube_dir + "\\logs\\start.log")
        if os.path.exists(result):
            with open(result) as f:
                text = f.read()
            if "KINIT_RC=0" not in text.splitlines() and os.path.exists(log):
                with open(log) as f:
                    text += "--- last lines of the log ---\n" + "".join(f.readlines()[-40:])
            return text
        with self.lock:
            running = self.task is not None and self.task.is_alive()
        return "KINIT_START=running\n" if running else "KINIT_RC=lost\n"

    # ---- service account tokens ----------------------------------------------------------

    def token_expiry(self, script):
        """The role's token check: for each kubeconfig, the days its token (a JWT) has left
        by its `exp` claim; `renew=` under `$renewDays` or when there is no readable token."""
        kube_dir = ps_var(script, "kubeDir")
        renew_days = int(re.search(r"^\$renewDays = (\d+)$", script, re.M).group(1))
        lines = []
        for name in ps_list(re.search(r"foreach \(\$name in (@\(.*?\))\)", script).group(1)):
            path = self.local("%s\\%s.kubeconfig" % (kube_dir, name))
            left = None
            if os.path.isfile(path):
                with open(path) as f:
                    m = re.search(r'^\s*token:\s*"?([^"\s]+)"?', f.read(), re.M)
                try:
                    payload = m.group(1).split(".")[1]
                    payload += "=" * (-len(payload) % 4)
                    exp = json.loads(base64.urlsafe_b64decode(payload))["exp"]
                    left = (exp - time.time()) / 86400
                except (AttributeError, IndexError, ValueError, KeyError):
                    left = None
            if left is None:
                lines.append("renew=%s (no readable token)" % name)
            elif left < renew_days:
                lines.append("renew=%s (%d days left)" % (name, left))
            else:
                lines.append("valid=%s (%d days left)" % (name, left))
        return "\n".join(lines) + "\n"

    def restart_service(self, script):
        name = ps_var(script, "name")
        if self.load()["services"].get(name) == "running":
            self.log("restart " + name)
            return "restarted\n"
        return ""

    def network_blip(self, st, detached):
        """The management NIC goes away for a moment (see the module doc)."""
        ms = st.get("blip_ms")
        if ms and self.blip is not None:
            self.blip(ms, between_requests=True)

    # ---- start.ps1 -----------------------------------------------------------------------

    def start_ps1(self, script_path, arg_text, detached):
        """Act out kinit's start.ps1 (files/start.ps1, as uploaded): returns (output, rc).

        The parameters are checked against the param block of the uploaded script the way
        PowerShell binds them (unknown name, missing mandatory, ValidateSet); the script's
        own preconditions are checked (Containers installed and rebooted, net-conf.json and
        the CNI configuration agree with -NetworkMode and -ClusterCIDR); then the script's
        node steps are taken in the order the uploaded script has them (comments and function
        bodies left out): the containerd service, firewall rules (`New-NetFirewallRule`),
        `Set-NssmService` services (registered, and started unless `-NoStart`),
        `Start-ServiceIfStopped`, and `kubeadm join` (once: only while
        C:\\etc\\kubernetes\\kubelet.conf is absent, with the -JoinConfig file, which is kept
        as DIR/joined-with.yaml; the join starts the registered kubelet service, as kubeadm's
        kubelet-start phase does). The last line is KINIT_CHANGED=True/False, as the script's.
        """
        local = self.local(script_path)
        if not os.path.isfile(local):
            return ("The term '%s' is not recognized\n" % script_path, 1)
        with open(local) as f:
            source = f.read()
        args = ps_args(arg_text)
        self.log("start.ps1 " + " ".join("-%s %s" % kv for kv in args))
        given = dict(args)
        params = re.search(r"^param\((.*?)^\)", source, re.S | re.M).group(1)
        declared = re.findall(r"\]\s*\$(\w+)", params)
        for name in given:
            if name not in declared:
                return ("A parameter cannot be found that matches parameter name '%s'.\n"
                        % name, 1)
        for name in re.findall(r"Mandatory = \$true\)\]\[\w+\]\$(\w+)", params):
            if name not in given:
                return ("missing mandatory parameter -%s\n" % name, 1)
        for values, name in re.findall(r"\[ValidateSet\(([^)]*)\)\]\[\w+\]\$(\w+)", params):
            allowed = re.findall(r'"([^"]*)"', values)
            if name in given and given[name] not in allowed:
                return ("Cannot validate argument on parameter '%s'.\n" % name, 1)
        defaults = dict(re.findall(r"\$(\w+) = \"([^\"]*)\"", params))
        p = dict(defaults, **given)
        st = self.load()
        if "Containers" not in st["features"] or st["reboot_pending"]:
            return ("the Containers feature is not installed (kinit installs it and reboots "
                    "before start.ps1)\n", 1)
        with open(self.local(r"C:\etc\kube-flannel\net-conf.json")) as f:
            net_conf = json.load(f)
        backend = {"l2bridge": "host-gw", "overlay": "vxlan"}[p["NetworkMode"]]
        if net_conf["Backend"]["Type"] != backend or net_conf["Network"] != p["ClusterCIDR"]:
            return ("net-conf.json does not match -NetworkMode/-ClusterCIDR\n", 1)
        network = "flannel.%s" % net_conf["Backend"].get("VNI") if backend == "vxlan" else "cbr0"
        with open(self.local(r"C:\etc\cni\net.d\10-flannel.conf")) as f:
            if json.load(f)["name"] != network:
                return ("CNI configuration names another network than %s\n" % network, 1)
        kube_dir = p.get("KubeDir", "C:\\k")
        join_config = p.get("JoinConfig") or kube_dir + "\\kubeadm-join.yaml"
        kubelet_conf = self.local(r"C:\etc\kubernetes\kubelet.conf")
        out, changed = [], False
        services = st["services"]
        step = re.compile(
            r'(?P<containerd>--register-service)'
            r'|New-NetFirewallRule -Name "(?P<rule>[^"]+)"[^\n]*?-Protocol (?P<proto>\w+)'
            r'[^\n]*?-LocalPort (?P<port>\d+)'
            r'|Set-NssmService -Name "(?P<service>[^"]+)"(?P<options>(?:[^\n]*`\n)*[^\n]*)'
            r'|Start-ServiceIfStopped "(?P<start>[^"]+)"'
            r'|Add-HnsNetwork -Name "(?P<hns>[^"]+)"'
            r'|(?P<mtu>Set-NetIPInterface -InterfaceIndex)'
            r'|(?P<join>"kubeadm\.exe"\) -ArgumentList @\("join")')
        networks = st.setdefault("networks", [])

        def add_network(name):
            # The first HNS network creates the Hyper-V switch: the NIC blips.
            if not networks:
                self.network_blip(st, detached)
            networks.append(name)
        code = "\n".join(l for l in strip_functions(source).split("\n")
                         if not l.lstrip().startswith("#"))
        for m in step.finditer(code):
            if m.group("containerd"):
                if "containerd" not in services:
                    self.log("containerd --register-service")
                    services["containerd"] = "registered"
                    changed = True
            elif m.group("rule"):
                line_start = code.rfind("\n", 0, m.start())
                previous = code[code.rfind("\n", 0, max(line_start, 0)) + 1:line_start]
                if '$NetworkMode -eq "overlay"' in previous and p["NetworkMode"] != "overlay":
                    continue
                if m.group("rule") not in st["firewall"]:
                    self.log("firewall %s %s %s" % (m.group("rule"), m.group("proto"),
                                                    m.group("port")))
                    st["firewall"].append(m.group("rule"))
                    changed = True
            elif m.group("service") or m.group("start"):
                name = m.group("service") or m.group("start")
                if m.group("service") and name not in services:
                    self.log("service " + name)
                    services[name] = "registered"
                    out.append("kinit: registering service " + name)
                    changed = True
                if m.group("service") and "-NoStart" in m.group("options"):
                    continue
                if name not in services:
                    return ("Cannot find any service with service name '%s'.\n" % name, 1)
                if services[name] != "running":
                    self.log("start " + name)
                    services[name] = "running"
                    changed = True
                    if name == "flanneld" and network not in networks:
                        add_network(network)
                        if st.get("blip_at_flanneld"):
                            self.network_blip(st, detached)
            elif m.group("hns"):
                if m.group("hns") not in networks:
                    self.log("hns network " + m.group("hns"))
                    add_network(m.group("hns"))
                    changed = True
            elif m.group("mtu"):
                mtu = int(p.get("Mtu", "0"))
                if mtu > 0 and st.get("mtu") != mtu:
                    self.log("mtu %d" % mtu)
                    st["mtu"] = mtu
                    changed = True
            else:
                if os.path.exists(kubelet_conf):
                    continue
                jc = self.local(join_config)
                if not os.path.isfile(jc):
                    return ("the node has not joined and there is no join configuration at %s\n"
                            % join_config, 1)
                self.log("kubeadm join --config " + join_config)
                if st.get("join_fails"):
                    self.save(st)
                    return ("\n".join(out + [st["join_fails"]]) + "\n", 1)
                with open(jc) as src, open(os.path.join(self.root, "joined-with.yaml"), "w") as dst:
                    dst.write(src.read())
                os.makedirs(os.path.dirname(kubelet_conf), exist_ok=True)
                with open(kubelet_conf, "w") as f:
                    f.write("apiVersion: v1\nkind: Config\n")
                # kubeadm's kubelet-start phase (re)starts the registered kubelet service.
                if "kubelet" in services:
                    services["kubelet"] = "running"
                out.append("kinit: kubeadm join as %s" % p.get("NodeName"))
                changed = True
        self.save(st)
        out.append("KINIT_CHANGED=%s" % changed)
        return ("\n".join(out) + "\n", 0)


def strip_functions(source):
    """The script without its `function Name { ... }` definitions (brace-balanced)."""
    out, i = [], 0
    for m in re.finditer(r"^function [\w-]+\([^)]*\) \{$|^function [\w-]+ \{$", source, re.M):
        if m.start() < i:
            continue
        out.append(source[i:m.start()])
        depth, j = 0, m.end() - 1
        while j < len(source):
            depth += {"{": 1, "}": -1}.get(source[j], 0)
            j += 1
            if depth == 0:
                break
        i = j
    out.append(source[i:])
    return "".join(out)


def ps_var(script, var):
    m = re.search(r"^\$" + var + r" = '((?:[^']|'')*)'", script, re.M)
    if not m:
        raise ValueError("no $%s in script" % var)
    return m.group(1).replace("''", "'")


def ps_list(text):
    """The strings of a PowerShell `@('a', 'b')` literal."""
    return [s.replace("''", "'") for s in re.findall(r"'((?:[^']|'')*)'", text)]


def ps_args(text):
    """`-Name value` pairs of a PowerShell command line (values bare or single-quoted)."""
    pairs = []
    for m in re.finditer(r"-(\w+)\s+('(?:[^']|'')*'|\S+)", text):
        v = m.group(2)
        if v.startswith("'"):
            v = v[1:-1].replace("''", "'")
        pairs.append((m.group(1), v))
    return pairs

