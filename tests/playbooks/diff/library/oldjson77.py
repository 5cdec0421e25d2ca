#!/usr/bin/python
# WANT_JSON
# A custom module for diff playbook 77 that reads its arguments from the JSON file in argv[1].
import json
import sys

with open(sys.argv[1]) as f:
    args = json.load(f)
print(json.dumps({'changed': False, 'got': args.get('word'), 'n': args.get('n')}))
