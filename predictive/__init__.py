"""The engine: signals → predictions → tiered budget → rendered context; scoring and ranking.

Imports ``storage``; never ``server``, pygls or lsprotocol.
"""
