# kinit's runner for a Python module (a module in a `library/` folder or in an installed
# collection), sent on the host's Python's stdin by src/modules/pymodule.rs with values put in
# front of it: _KINIT_NAME (the module's name), _KINIT_ARGS (its arguments as JSON, Ansible's
# `_ansible_*` keys included), _KINIT_SOURCE (the module's text), _KINIT_FQN (its dotted name,
# as Ansible imports it), _KINIT_FILES (the `module_utils` files it imports, zlib-compressed
# JSON: dotted name -> [is a package, text], see src/modules/pybundle.rs) and _KINIT_REAL
# (whether those include ansible-core's own `module_utils`).
#
# With ansible-core's files the module runs as AnsiballZ runs it: through
# `ansible.module_utils._internal._ansiballz._loader.run_module`.
#
# A new-style module imports `ansible.module_utils`; kinit ships no Ansible, so this file is
# the part of that package such modules use: `basic.AnsibleModule` (argument checking as
# Ansible documents it for `argument_spec`, exit_json/fail_json, run_command, get_bin_path,
# check mode...), the `_text`/`common.text.converters` text helpers and `six`. A module that
# imports anything else fails with a message naming the import. A module with `WANT_JSON`
# gets its arguments as a JSON file named in argv[1], an old-style module (no
# `ansible.module_utils` import) as a `key=value` file, as Ansible hands them over.
import base64
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import types

PROVIDED = (
    "ansible.module_utils.basic",
    "ansible.module_utils._text",
    "ansible.module_utils.common.text.converters",
    "ansible.module_utils.six",
)

BOOLEANS_TRUE = frozenset(("y", "yes", "on", "1", "true", "t", 1, 1.0, True))
BOOLEANS_FALSE = frozenset(("n", "no", "off", "0", "false", "f", 0, 0.0, False))


def _errors(errors):
    """Ansible's `surrogate_or_*` error handlers are `surrogateescape` on Python 3."""
    return "surrogateescape" if errors is None or errors.startswith("surrogate_") else errors


def _nonstring(obj, nonstring):
    """What `to_bytes`/`to_text` make of a value that is neither text nor bytes: the value
    (`passthru`), nothing (`empty`, as None), an error (`strict`), else its `str()`."""
    if nonstring == "passthru":
        return obj
    if nonstring == "empty":
        return None
    if nonstring == "strict":
        raise TypeError("obj must be a string type")
    return str(obj)


def to_bytes(obj, encoding="utf-8", errors=None, nonstring="simplerepr"):
    if isinstance(obj, bytes):
        return obj
    if not isinstance(obj, str):
        obj = _nonstring(obj, nonstring)
        if obj is None:
            return b""
        if not isinstance(obj, str):
            return obj
    return obj.encode(encoding, _errors(errors))


def to_text(obj, encoding="utf-8", errors=None, nonstring="simplerepr"):
    if isinstance(obj, str):
        return obj
    if isinstance(obj, bytes):
        return obj.decode(encoding, _errors(errors))
    text = _nonstring(obj, nonstring)
    return "" if text is None else text


to_native = to_text


def boolean(value, strict=True):
    # ansible-core lists the valid words in set order, which varies with Python's hash seed;
    # kinit lists them sorted.
    if isinstance(value, bool):
        return value
    normalized = value.lower().strip() if isinstance(value, str) else value
    if normalized in BOOLEANS_TRUE:
        return True
    if normalized in BOOLEANS_FALSE or (normalized is None and not strict):
        return False
    raise TypeError("The value '%s' is not a valid boolean. Valid booleans include: %s"
                    % (to_text(value), ", ".join(repr(i) for i in sorted(BOOLEANS_TRUE | BOOLEANS_FALSE, key=str))))


def env_fallback(*args, **kwargs):
    for name in args:
        if name in os.environ:
            return os.environ[name]
    raise AnsibleFallbackNotFound


class AnsibleFallbackNotFound(Exception):
    pass


def missing_required_lib(library, reason=None, url=None):
    host = os.uname()[1]
    msg = "Failed to import the required Python library (%s) on %s's Python %s." % (library, host, sys.executable)
    if reason:
        msg += " This is required %s." % reason
    if url:
        msg += " See %s for more info." % url
    return msg + " Please read the module documentation and install it in the appropriate location."


class _Invalid(Exception):
    pass


def _convert(value, kind, name):
    """One value to the type `kind` names, as Ansible's argument spec types convert."""
    if value is None or kind in (None, "raw"):
        return value
    if callable(kind):
        return kind(value)
    try:
        if kind == "str":
            return value if isinstance(value, str) else to_text(value)
        if kind == "bool":
            return boolean(value)
        if kind == "int":
            # Whole numbers only: a bool or a float with a fraction is refused, as
            # ansible-core's check_type_int refuses it (int(3.5) would silently give 3).
            if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "list":
            if isinstance(value, list):
                return value
            if isinstance(value, str):
                return value.split(",")
            if isinstance(value, (int, float)):
                return [str(value)]
            raise ValueError
        if kind == "dict":
            if isinstance(value, dict):
                return value
            if isinstance(value, str):
                if value.startswith("{"):
                    return json.loads(value)
                if "=" not in value:
                    raise ValueError
                pairs = {}
                for field in shlex.split(value.replace(",", " ")):
                    k, _, v = field.partition("=")
                    pairs[k.strip()] = v.strip()
                return pairs
            raise ValueError
        if kind == "path":
            return os.path.expanduser(os.path.expandvars(to_text(value)))
        if kind in ("json", "jsonarg"):
            return value if isinstance(value, str) else json.dumps(value)
        if kind == "bytes":
            return _human_to_bytes(value)
        if kind == "bits":
            return _human_to_bytes(value, isbits=True)
    except (TypeError, ValueError) as e:
        # The reason in ansible-core's words (module_utils/common/validation.py).
        if kind == "int":
            reason = '"%r" cannot be converted to an int' % (value,)
        elif kind == "bool" and isinstance(value, str):
            reason = str(e)
        elif kind == "dict" and isinstance(value, str):
            reason = "dictionary requested, could not parse JSON or key=value"
        else:
            article = "an" if kind[:1] in "aeiou" else "a"
            reason = "%s cannot be converted to %s %s" % (type(value), article, kind)
    raise _Invalid("argument '%s' is of type %s and we were unable to convert to %s: %s"
                   % (name, type(value).__name__, kind, reason))


def _human_to_bytes(value, isbits=False):
    text = to_text(value).strip()
    units = "BKMGTPEZY"
    num = text.rstrip("bBiI")
    unit = num[-1:].upper() if num[-1:].isalpha() else "B"
    num = num[:-1] if num[-1:].isalpha() else num
    return int(float(num) * (1024 ** units.index(unit)))


def _spec_check(spec, params, where, no_log_values, mutually_exclusive=None, required_together=None,
                required_one_of=None, required_if=None, required_by=None):
    """Check and fill `params` in place from `spec`; an error message on failure."""
    aliases = {}
    for name, opts in spec.items():
        for alias in opts.get("aliases") or ():
            aliases[alias] = name
    # The values to hide are known before anything is checked, so a failure message that
    # quotes one is masked too (as ansible-core's validator does).
    for key, value in params.items():
        opts = spec.get(aliases.get(key, key)) or {}
        if opts.get("no_log") and value not in (None, ""):
            no_log_values.add(to_text(value))
    for alias, name in aliases.items():
        if alias in params:
            if name not in params:
                params[name] = params[alias]
            del params[alias]
    unknown = sorted(k for k in params if k not in spec)
    if unknown:
        # As ansible-core words it: the names, then every alias in one parenthesis.
        supported = ", ".join(sorted(spec))
        if aliases:
            supported += " (%s)" % ", ".join(sorted(aliases))
        return "Unsupported parameters for (%s) module: %s. Supported parameters include: %s." % (
            where, ", ".join(unknown), supported)
    for group in mutually_exclusive or ():
        given = [k for k in group if params.get(k) is not None]
        if len(given) > 1:
            return "parameters are mutually exclusive: %s" % "|".join(group)
    for name, opts in spec.items():
        if params.get(name) is None and opts.get("fallback"):
            strategy, *rest = opts["fallback"]
            args = rest[0] if rest else []
            kwargs = rest[1] if len(rest) > 1 else {}
            try:
                params[name] = strategy(*args, **kwargs)
            except AnsibleFallbackNotFound:
                pass
    missing = [n for n, o in spec.items() if o.get("required") and params.get(n) is None]
    if missing:
        return "missing required arguments: %s" % ", ".join(sorted(missing))
    for group in required_together or ():
        given = [k for k in group if params.get(k) is not None]
        if given and len(given) != len(group):
            return "parameters are required together: %s" % ", ".join(group)
    for group in required_one_of or ():
        if not any(params.get(k) is not None for k in group):
            return "one of the following is required: %s" % ", ".join(group)
    for rule in required_if or ():
        key, val, reqs = rule[0], rule[1], rule[2]
        need_any = len(rule) > 3 and rule[3]
        if key in params and params[key] == val:
            lacking = [r for r in reqs if params.get(r) is None]
            if lacking and (not need_any or len(lacking) == len(reqs)):
                return "%s is %s but %s of the following are missing: %s" % (
                    key, val, "any" if need_any else "all", ", ".join(lacking))
    for key, reqs in (required_by or {}).items():
        reqs = [reqs] if isinstance(reqs, str) else reqs
        if params.get(key) is not None:
            lacking = [r for r in reqs if params.get(r) is None]
            if lacking:
                return "missing parameter(s) required by '%s': %s" % (key, ", ".join(lacking))
    for name, opts in spec.items():
        if name not in params or params[name] is None:
            params[name] = opts.get("default")
            if params[name] is None:
                continue
        kind = opts.get("type", "str")
        try:
            params[name] = _convert(params[name], kind, name)
            if kind == "list" and opts.get("elements"):
                params[name] = [_convert(v, opts["elements"], name) for v in params[name]]
        except _Invalid as e:
            return str(e)
        if opts.get("no_log") and params[name] not in (None, ""):
            no_log_values.add(to_text(params[name]))
        choices = opts.get("choices")
        if choices is not None:
            values = params[name] if isinstance(params[name], list) else [params[name]]
            bad = [v for v in values if v not in choices]
            if bad:
                if isinstance(params[name], list):
                    return "value of %s must be one or more of: %s. Got no match for: %s" % (
                        name, ", ".join(map(to_text, choices)), ", ".join(map(to_text, bad)))
                return "value of %s must be one of: %s, got: %s" % (
                    name, ", ".join(map(to_text, choices)), to_text(params[name]))
        sub = opts.get("options")
        if sub and params[name] is not None:
            items = params[name] if isinstance(params[name], list) else [params[name]]
            for item in items:
                if not isinstance(item, dict):
                    return "Elements value for option '%s' is of type %s and we were unable to convert to dict" % (name, type(item).__name__)
                err = _spec_check(sub, item, "%s -> %s" % (where, name), no_log_values,
                                  opts.get("mutually_exclusive"), opts.get("required_together"),
                                  opts.get("required_one_of"), opts.get("required_if"), opts.get("required_by"))
                if err:
                    return err
    return None


def _mask(value, secrets):
    """A `no_log` value in the result: a string that is one is replaced by Ansible's
    placeholder, one inside a longer string by `********`."""
    if not secrets:
        return value
    if isinstance(value, str):
        if value in secrets:
            return "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
        for s in secrets:
            value = value.replace(s, "********")
        return value
    if isinstance(value, dict):
        return dict((k, _mask(v, secrets)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_mask(v, secrets) for v in value]
    return value


FILE_COMMON_ARGS = dict(
    mode=dict(type="raw"), owner=dict(type="str"), group=dict(type="str"),
    seuser=dict(type="str"), serole=dict(type="str"), selevel=dict(type="str"),
    setype=dict(type="str"), attributes=dict(type="str", aliases=["attr"]),
    unsafe_writes=dict(type="bool", default=False),
)


class AnsibleModule(object):
    def __init__(self, argument_spec=None, bypass_checks=False, no_log=False, mutually_exclusive=None,
                 required_together=None, required_one_of=None, add_file_common_args=False,
                 supports_check_mode=False, required_if=None, required_by=None):
        self.argument_spec = dict(argument_spec or {})
        if add_file_common_args:
            for k, v in FILE_COMMON_ARGS.items():
                self.argument_spec.setdefault(k, v)
        self.supports_check_mode = supports_check_mode
        self.no_log = no_log
        self._name = _KINIT_NAME
        self._warnings = []
        self._deprecations = []
        self._cleanup_files = []
        self._tmpdir = None
        self.aliases = {}
        raw = dict(_KINIT_PARAMS)
        internal = dict((k, raw.pop(k)) for k in list(raw) if k.startswith("_ansible_"))
        self.check_mode = bool(internal.get("_ansible_check_mode"))
        self._diff = bool(internal.get("_ansible_diff"))
        self._verbosity = internal.get("_ansible_verbosity", 0)
        self._debug = False
        self.no_log_values = set()
        self.params = raw
        if not bypass_checks:
            err = _spec_check(self.argument_spec, self.params, self._name, self.no_log_values,
                              mutually_exclusive, required_together, required_one_of, required_if,
                              required_by)
            if err:
                self.fail_json(msg=err)
        if self.check_mode and not supports_check_mode:
            self._finish({"changed": False, "skipped": True,
                          "msg": "remote module (%s) does not support check mode" % self._name},
                         0, invocation=False)

    @property
    def tmpdir(self):
        if self._tmpdir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="ansible-moduletmp-")
        return self._tmpdir

    def warn(self, warning):
        self._warnings.append(to_text(warning))

    def deprecate(self, msg, version=None, date=None, collection_name=None):
        entry = {"msg": msg}
        if version is not None:
            entry["version"] = version
        if date is not None:
            entry["date"] = date
        if collection_name is not None:
            entry["collection_name"] = collection_name
        self._deprecations.append(entry)

    def debug(self, msg):
        pass

    def log(self, msg, log_args=None):
        pass

    def boolean(self, arg):
        try:
            return boolean(arg)
        except TypeError as e:
            self.fail_json(msg=to_text(e))

    def jsonify(self, data):
        return json.dumps(data, default=_json_default)

    def from_json(self, data):
        return json.loads(data)

    def add_cleanup_file(self, path):
        if path not in self._cleanup_files:
            self._cleanup_files.append(path)

    def do_cleanup_files(self):
        for path in self._cleanup_files:
            if os.path.exists(path):
                os.remove(path)

    def _finish(self, result, rc, invocation=True):
        self.do_cleanup_files()
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        if invocation:
            result.setdefault("invocation", {"module_args": self.params})
        # Warnings are masked too (ansible-core passes them on as written): kinit shows no
        # `no_log` value anywhere.
        if self._warnings:
            result["warnings"] = list(result.get("warnings", [])) + self._warnings
        if self._deprecations:
            result["deprecations"] = self._deprecations
        print("\n" + json.dumps(_mask(result, self.no_log_values), default=_json_default))
        sys.stdout.flush()
        sys.exit(rc)

    def exit_json(self, **kwargs):
        kwargs.setdefault("changed", False)
        self._finish(kwargs, 0)

    def fail_json(self, msg=None, **kwargs):
        kwargs["failed"] = True
        kwargs["msg"] = msg if msg is not None else "Unknown error"
        self._finish(kwargs, 1)

    def get_bin_path(self, arg, required=False, opt_dirs=None):
        paths = list(opt_dirs or []) + os.environ.get("PATH", "").split(os.pathsep)
        for extra in ("/sbin", "/usr/sbin", "/usr/local/sbin"):
            if extra not in paths:
                paths.append(extra)
        for d in paths:
            candidate = os.path.join(d, arg)
            if d and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        if required:
            self.fail_json(msg='Failed to find required executable "%s" in paths: %s'
                           % (arg, os.pathsep.join(p for p in paths if p)))
        return None

    def run_command(self, args, check_rc=False, close_fds=True, executable=None, data=None,
                    binary_data=False, path_prefix=None, cwd=None, use_unsafe_shell=False,
                    prompt_regex=None, environ_update=None, umask=None, encoding="utf-8",
                    errors="surrogate_or_strict", expand_user_and_vars=True, pass_fds=None,
                    before_communicate_callback=None, ignore_invalid_cwd=True,
                    handle_exceptions=True):
        if isinstance(args, (list, tuple)):
            argv = [to_text(a) for a in args]
            if expand_user_and_vars:
                argv = [os.path.expanduser(os.path.expandvars(a)) for a in argv]
            if use_unsafe_shell:
                argv = " ".join(shlex.quote(a) for a in argv)
        else:
            argv = to_text(args)
            if not use_unsafe_shell:
                argv = shlex.split(argv)
                if expand_user_and_vars:
                    argv = [os.path.expanduser(os.path.expandvars(a)) for a in argv]
        env = dict(os.environ)
        env.update(environ_update or {})
        if path_prefix:
            env["PATH"] = path_prefix + os.pathsep + env.get("PATH", "")
        if cwd and not os.path.isdir(cwd):
            cwd = None if ignore_invalid_cwd else cwd
        stdin = None
        if data is not None:
            stdin = to_bytes(data)
            if not binary_data:
                stdin += b"\n"
        shell_exe = executable or ("/bin/sh" if use_unsafe_shell else None)
        try:
            proc = subprocess.Popen(argv, shell=bool(use_unsafe_shell), executable=shell_exe,
                                    stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
                                    close_fds=close_fds, pass_fds=pass_fds or ())
            if before_communicate_callback:
                before_communicate_callback(proc)
            out, err = proc.communicate(stdin)
            rc = proc.returncode
        except (OSError, IOError) as e:
            if not handle_exceptions:
                raise
            self.fail_json(rc=e.errno, stdout="", stderr="", msg=to_text(e),
                           cmd=argv if isinstance(argv, str) else " ".join(argv))
        if encoding is not None:
            out = out.decode(encoding, "surrogateescape")
            err = err.decode(encoding, "surrogateescape")
        if rc != 0 and check_rc:
            msg = to_text(err).rstrip() or "Command failed rc=%d" % rc
            self.fail_json(cmd=argv if isinstance(argv, str) else " ".join(argv), rc=rc,
                           stdout=out, stderr=err, msg=msg)
        return rc, out, err

    def digest_from_file(self, filename, algorithm):
        import hashlib
        if not os.path.exists(filename):
            return None
        h = hashlib.new(algorithm) if isinstance(algorithm, str) else algorithm()
        with open(filename, "rb") as f:
            for block in iter(lambda: f.read(65536), b""):
                h.update(block)
        return h.hexdigest()

    def md5(self, filename):
        return self.digest_from_file(filename, "md5")

    def sha1(self, filename):
        return self.digest_from_file(filename, "sha1")

    def sha256(self, filename):
        return self.digest_from_file(filename, "sha256")

    def backup_local(self, fn):
        if not os.path.exists(fn):
            return ""
        ext = time.strftime("%Y-%m-%d@%H:%M:%S~", time.localtime(time.time()))
        backup = "%s.%s.%s" % (fn, os.getpid(), ext)
        shutil.copy2(fn, backup)
        return backup

    def atomic_move(self, src, dest, unsafe_writes=False, keep_dest_attrs=True):
        if keep_dest_attrs and os.path.exists(dest):
            st = os.stat(dest)
            os.chmod(src, st.st_mode & 0o7777)
            try:
                os.chown(src, st.st_uid, st.st_gid)
            except OSError:
                pass
        try:
            os.rename(src, dest)
        except OSError:
            shutil.move(src, dest)

    def load_file_common_arguments(self, params, path=None):
        return dict(path=path or params.get("path") or params.get("dest"), mode=params.get("mode"),
                    owner=params.get("owner"), group=params.get("group"),
                    attributes=params.get("attributes"))

    def set_mode_if_different(self, path, mode, changed, diff=None, expand=True):
        if mode is None:
            return changed
        path = os.path.expanduser(path)
        current = os.lstat(path).st_mode & 0o7777
        if isinstance(mode, int):
            wanted = mode
        elif str(mode).isdigit():
            wanted = int(str(mode), 8)
        else:
            if not self.check_mode:
                subprocess.check_call(["chmod", str(mode), path])
            return changed or (os.lstat(path).st_mode & 0o7777) != current
        if wanted != current:
            if not self.check_mode:
                os.chmod(path, wanted)
            return True
        return changed

    def _chown_if_different(self, path, uid, gid, changed):
        st = os.lstat(path)
        if (uid != -1 and uid != st.st_uid) or (gid != -1 and gid != st.st_gid):
            if not self.check_mode:
                os.lchown(path, uid, gid)
            return True
        return changed

    def set_owner_if_different(self, path, owner, changed, diff=None, expand=True):
        if owner is None:
            return changed
        import pwd
        uid = int(owner) if str(owner).isdigit() else pwd.getpwnam(owner).pw_uid
        return self._chown_if_different(os.path.expanduser(path), uid, -1, changed)

    def set_group_if_different(self, path, group, changed, diff=None, expand=True):
        if group is None:
            return changed
        import grp
        gid = int(group) if str(group).isdigit() else grp.getgrnam(group).gr_gid
        return self._chown_if_different(os.path.expanduser(path), -1, gid, changed)

    def set_fs_attributes_if_different(self, file_args, changed, diff=None, expand=True):
        path = file_args["path"]
        changed = self.set_mode_if_different(path, file_args.get("mode"), changed, diff, expand)
        changed = self.set_owner_if_different(path, file_args.get("owner"), changed, diff, expand)
        return self.set_group_if_different(path, file_args.get("group"), changed, diff, expand)

    set_file_attributes_if_different = set_fs_attributes_if_different
    set_directory_attributes_if_different = set_fs_attributes_if_different


def _json_default(value):
    """What ansible-core's module JSON encoder makes of values JSON lacks: text for bytes
    (undecodable bytes kept as surrogates), lists for sets, ISO text for dates."""
    if isinstance(value, bytes):
        return to_text(value, errors="surrogate_or_strict")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)


def _package(name, **attrs):
    mod = types.ModuleType(name)
    mod.__path__ = []
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


class _RefuseOtherUtils(object):
    """Turns an import of a part of `ansible` kinit does not provide into a clear failure."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "ansible" or fullname.startswith("ansible."):
            if fullname not in sys.modules:
                _fail_json("custom module `%s` imports `%s`, which kinit's Python module runner "
                           "does not provide (it provides %s)" % (_KINIT_NAME, fullname, ", ".join(PROVIDED)))
        return None


class _Memory(object):
    """Serves the shipped files from memory, as AnsiballZ's zip serves them. Each module's
    `__file__` is the path it would have inside AnsiballZ's payload zip, as ansible-core's
    own code reads it (`_deprecator`, `basic.get_module_path`)."""

    def __init__(self, files):
        self.files = files
        import tempfile as _t
        self.base = os.path.join(_t.gettempdir(), "ansible_%s_payload.zip" % _KINIT_NAME.rpartition(".")[2])

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.files:
            return None
        import importlib.util
        package = self.files[fullname][0]
        rel = fullname.replace(".", "/") + ("/__init__.py" if package else ".py")
        spec = importlib.util.spec_from_loader(fullname, _MemoryLoader(self.files), origin=os.path.join(self.base, rel),
                                               is_package=package)
        spec.has_location = True
        return spec


try:
    import importlib.abc as _abc
    _InspectLoader = _abc.InspectLoader
except ImportError:  # pragma: no cover
    _InspectLoader = object


class _MemoryLoader(_InspectLoader):
    def __init__(self, files):
        self.files = files

    def is_package(self, fullname):
        return self.files[fullname][0]

    def get_source(self, fullname):
        return self.files[fullname][1]

    def get_code(self, fullname):
        path = fullname.replace(".", "/") + ("/__init__.py" if self.is_package(fullname) else ".py")
        return compile(self.get_source(fullname), path, "exec", dont_inherit=True)

    def exec_module(self, module):
        exec(self.get_code(module.__name__), module.__dict__)


def _files():
    import zlib
    if not _KINIT_FILES:
        return {}
    return json.loads(zlib.decompress(base64.b64decode(_KINIT_FILES)).decode("utf-8"))


def _fail_json(msg):
    print("\n" + json.dumps({"failed": True, "msg": msg}))
    sys.stdout.flush()
    os._exit(1)


def _install():
    text = dict(to_bytes=to_bytes, to_text=to_text, to_native=to_native)
    _package("ansible")
    utils = _package("ansible.module_utils")
    try:
        import six as real_six
        six = real_six
    except ImportError:
        six = types.ModuleType("ansible.module_utils.six")
        six.__dict__.update(PY2=False, PY3=True, string_types=(str,), text_type=str,
                            binary_type=bytes, integer_types=(int,), class_types=(type,),
                            iteritems=lambda d, **kw: iter(d.items(**kw)),
                            itervalues=lambda d, **kw: iter(d.values(**kw)),
                            iterkeys=lambda d, **kw: iter(d.keys(**kw)),
                            b=lambda s: s.encode("latin-1"), u=lambda s: s)
    sys.modules["ansible.module_utils.six"] = six
    utils.six = six
    utils._text = _package("ansible.module_utils._text", **text)
    common = _package("ansible.module_utils.common")
    common.text = _package("ansible.module_utils.common.text")
    common.text.converters = _package("ansible.module_utils.common.text.converters", **text)
    utils.basic = _package(
        "ansible.module_utils.basic", AnsibleModule=AnsibleModule, env_fallback=env_fallback,
        AnsibleFallbackNotFound=AnsibleFallbackNotFound, missing_required_lib=missing_required_lib,
        boolean=boolean, BOOLEANS_TRUE=BOOLEANS_TRUE, BOOLEANS_FALSE=BOOLEANS_FALSE,
        json=json, os=os, sys=sys, **text)
    sys.meta_path.insert(0, _RefuseOtherUtils())


def _run_real(files, source):
    """The module with ansible-core's own `module_utils`, run as AnsiballZ runs it."""
    files[_KINIT_FQN] = [False, source.decode("utf-8")]
    sys.meta_path.insert(0, _Memory(files))
    from ansible.module_utils._internal._ansiballz import _loader
    params = json.dumps({"ANSIBLE_MODULE_ARGS": _KINIT_PARAMS}).encode("utf-8")
    _loader.run_module(json_params=params, profile="legacy", module_fqn=_KINIT_FQN, modlib_path="",
                       extensions={})


def _main():
    global _KINIT_PARAMS
    _KINIT_PARAMS = json.loads(base64.b64decode(_KINIT_ARGS).decode("utf-8"))
    source = base64.b64decode(_KINIT_SOURCE)
    files = _files()
    if _KINIT_REAL:
        _run_real(files, source)
        return
    argv = [_KINIT_NAME]
    if b"WANT_JSON" in source or b"ansible.module_utils" not in source:
        fd, path = tempfile.mkstemp(prefix="kinit-args-")
        with os.fdopen(fd, "w") as f:
            if b"WANT_JSON" in source:
                json.dump(_KINIT_PARAMS, f)
            else:
                f.write(" ".join("%s=%s" % (k, shlex.quote(to_text(v))) for k, v in _KINIT_PARAMS.items()
                                 if not k.startswith("_ansible_")))
        argv.append(path)
    _install()
    if files:
        sys.meta_path.insert(0, _Memory(files))
    sys.argv = argv
    code = compile(source, _KINIT_NAME + ".py", "exec")
    package = _KINIT_FQN.rpartition(".")[0]
    scope = {"__name__": "__main__", "__file__": _KINIT_NAME + ".py", "__builtins__": __builtins__,
             "__package__": package or None}
    try:
        exec(code, scope)
    except Exception as e:
        # What ansible-core reports for a module that raised: its message, and the traceback
        # under `exception`.
        import traceback
        print("\n" + json.dumps({"failed": True, "msg": "Module failed: %s" % e,
                                 "exception": traceback.format_exc()}))
        sys.stdout.flush()
        sys.exit(1)
    finally:
        if len(argv) > 1:
            os.remove(argv[1])


_main()
