"""Build tiny pure-Python wheels offline, for the `pip` differential playbook.

Usage: make_wheels.py DIR NAME-VERSION...  (a wheel is a zip with the package and its
dist-info: METADATA, WHEEL and RECORD with sha256 digests).
"""
import base64
import hashlib
import os
import sys
import zipfile


def digest(data):
    d = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + d.decode()


def build(folder, name, version):
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: kinit-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    path = os.path.join(folder, f"{name}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for arc, text in files.items():
            data = text.encode()
            z.writestr(arc, data)
            record += f"{arc},{digest(data)},{len(data)}\n"
        record += f"{info}/RECORD,,\n"
        z.writestr(f"{info}/RECORD", record)


os.makedirs(sys.argv[1], exist_ok=True)
for spec in sys.argv[2:]:
    build(sys.argv[1], *spec.split("-"))
