# kinit's host for custom Jinja filters, tests and lookups written in Python
# (`filter_plugins/*.py` with a `FilterModule` class whose `filters()` maps names to functions,
# `test_plugins/*.py` with a `TestModule` whose `tests()` does, `lookup_plugins/<name>.py` with
# a `LookupModule` whose `run(terms, variables, **kwargs)` gives a list), run on the controller
# as ansible-core runs them. One process serves a whole run: a request is one JSON line on
# stdin, the answer one JSON line on stdout.
#
#   {"op": "load", "filters": [path, ...], "tests": [path, ...], "lookups": [path, ...]}
#       ->  {"filters": {name: path}, "tests": {name: path}, "lookups": {name: path},
#            "errors": [text]}
#   {"op": "call", "kind": "filter" | "test", "name": n, "value": v, "args": [...], "kwargs": {...}}
#       ->  {"ok": result} or {"error": text}
#   {"op": "lookup", "name": n, "terms": [...], "kwargs": {...}}
#       ->  any number of {"need": variable} (each answered on stdin with {"value": v} or
#           {"missing": true}: the lookup's `variables` are read lazily, one at a time), then
#           {"ok": [...]} or {"error": text}
#
# A plugin imports Ansible's own modules when the controller's Python has ansible-core;
# otherwise it gets kinit's stand-ins for what filters commonly import (`ansible.errors`,
# `ansible.module_utils.six`, the text converters), and any other `ansible` import fails
# naming the module.
import importlib.util
import json
import sys
import types
from collections.abc import Mapping


def _stand_ins():
    try:
        import ansible.errors  # noqa: F401 - the real thing, when the controller has it
        return
    except ImportError:
        pass

    def to_text(obj, encoding="utf-8", errors=None, nonstring="simplerepr"):
        if isinstance(obj, str):
            return obj
        if isinstance(obj, bytes):
            return obj.decode(encoding, errors or "surrogateescape")
        return str(obj)

    def to_bytes(obj, encoding="utf-8", errors=None, nonstring="simplerepr"):
        if isinstance(obj, bytes):
            return obj
        return to_text(obj).encode(encoding, errors or "surrogateescape")

    def package(name, **attrs):
        mod = types.ModuleType(name)
        mod.__path__ = []
        mod.__dict__.update(attrs)
        sys.modules[name] = mod
        return mod

    class AnsibleError(Exception):
        def __init__(self, message="", *args, **kwargs):
            super().__init__(message)
            self.message = message

    errors = dict(AnsibleError=AnsibleError)
    for name in ("AnsibleFilterError", "AnsibleFilterTypeError", "AnsibleTemplateError",
                 "AnsibleUndefinedVariable", "AnsibleOptionsError", "AnsibleRuntimeError",
                 "AnsibleLookupError", "AnsibleTypeError"):
        errors[name] = type(name, (AnsibleError,), {})
    text = dict(to_text=to_text, to_bytes=to_bytes, to_native=to_text)
    package("ansible")
    package("ansible.errors", **errors)
    utils = package("ansible.module_utils")
    try:
        import six
    except ImportError:
        six = package("ansible.module_utils.six", PY2=False, PY3=True, string_types=(str,),
                      text_type=str, binary_type=bytes, integer_types=(int,),
                      iteritems=lambda d, **kw: iter(d.items(**kw)))
    sys.modules["ansible.module_utils.six"] = six
    utils.six = six
    utils._text = package("ansible.module_utils._text", **text)
    package("ansible.module_utils.common")
    package("ansible.module_utils.common.text")
    package("ansible.module_utils.common.text.converters", **text)

    class LookupBase(object):
        """What lookups use of ansible-core's base: options given as keywords."""

        def __init__(self, loader=None, templar=None, **kwargs):
            self._loader, self._templar, self._options = loader, templar, {}

        def set_options(self, var_options=None, direct=None):
            self._options.update(direct or {})

        def get_option(self, name, hostvars=None):
            return self._options.get(name)

        def get_options(self, hostvars=None):
            return dict(self._options)

    package("ansible.plugins")
    package("ansible.plugins.lookup", LookupBase=LookupBase)

    class Refuse(object):
        def find_spec(self, fullname, path=None, target=None):
            if (fullname == "ansible" or fullname.startswith("ansible.")) and fullname not in sys.modules:
                raise ImportError("kinit runs filter plugins without ansible-core installed on "
                                  "this machine and does not provide `%s`" % fullname)
            return None

    sys.meta_path.insert(0, Refuse())


PLUGINS = {"filter": {}, "test": {}, "lookup": {}}


def _stem(path):
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _lookup_options(name, mod):
    """Register the lookup's documented options, as ansible-core's plugin loader does, so
    its `set_options`/`get_option` work (only where the controller has ansible-core)."""
    doc = getattr(mod, "DOCUMENTATION", None)
    if not doc:
        return
    try:
        import yaml
        from ansible import constants as C
    except ImportError:
        return
    options = (yaml.safe_load(doc) or {}).get("options") or {}
    C.config.initialize_plugin_configuration_definitions("lookup", name, options)


def _load(files, kind, errors):
    found = {}
    registry = PLUGINS[kind]
    for i, path in enumerate(files):
        try:
            # The module names ansible-core's loader gives (`ansible.plugins.lookup.<name>`;
            # filters and tests get a number after the file's name).
            if kind == "lookup":
                modname = "ansible.plugins.lookup.%s" % _stem(path)
            else:
                modname = "ansible.plugins.%s.%s_%d" % (kind, _stem(path), i)
            spec = importlib.util.spec_from_file_location(modname, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            if kind == "lookup":
                name = _stem(path)
                if name not in registry:
                    _lookup_options(name, mod)
                    registry[name] = mod.LookupModule
                    found[name] = path
                continue
            if kind == "filter":
                functions = mod.FilterModule().filters()
            else:
                functions = mod.TestModule().tests()
            for name, func in functions.items():
                if name not in registry:
                    registry[name] = func
                    found[name] = path
        except Exception as e:
            errors.append("%s: %s: %s" % (path, type(e).__name__, e))
    return found


def _plain(value):
    """A result as JSON holds it: tuples, sets and generators become lists, other objects
    their text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)) or type(value).__name__ == "generator":
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def _call(req):
    name, kind = req["name"], req["kind"]
    try:
        result = PLUGINS[kind][name](req["value"], *req["args"], **req["kwargs"])
        return {"ok": _plain(result)}
    except Exception as e:
        return {"error": "The %s plugin '%s' failed: %s" % (kind, name, e)}


class _Variables(Mapping):
    """A lookup's `variables`: each one asked of kinit when the plugin reads it."""

    def __init__(self, out):
        self._out = out
        self._seen = {}

    def __getitem__(self, name):
        if name not in self._seen:
            self._out.write(json.dumps({"need": name}) + "\n")
            self._out.flush()
            answer = json.loads(sys.stdin.readline())
            self._seen[name] = answer.get("value") if "value" in answer else KeyError
        if self._seen[name] is KeyError:
            raise KeyError(name)
        return self._seen[name]

    def __iter__(self):
        return iter([k for k, v in self._seen.items() if v is not KeyError])

    def __len__(self):
        return len(list(iter(self)))


def _lookup(req, out):
    name = req["name"]
    try:
        try:
            plugin = PLUGINS["lookup"][name](loader=None, templar=None)
        except TypeError:
            plugin = PLUGINS["lookup"][name]()
        result = plugin.run(req["terms"], variables=_Variables(out), **req["kwargs"])
        return {"ok": _plain(result)}
    except Exception as e:
        return {"error": str(getattr(e, "message", None) or e)}


def _serve():
    # What a plugin prints goes to stderr; stdout carries only the answers.
    out, sys.stdout = sys.stdout, sys.stderr
    _stand_ins()
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "load":
            errors = []
            answer = {"filters": _load(req["filters"], "filter", errors),
                      "tests": _load(req["tests"], "test", errors),
                      "lookups": _load(req.get("lookups", []), "lookup", errors), "errors": errors}
        elif req["op"] == "lookup":
            answer = _lookup(req, out)
        else:
            answer = _call(req)
        out.write(json.dumps(answer) + "\n")
        out.flush()


_serve()
