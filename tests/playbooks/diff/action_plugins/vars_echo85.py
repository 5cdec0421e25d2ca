"""Runs as `debug`: a custom action name that only re-exports a builtin action."""
from ansible.plugins.action.debug import ActionModule

__all__ = ["ActionModule"]
