"""The live view: a person watches a remote tab, and steps in.

A loopback web page served by the gateway shows a tab's screencast and the agent's
recent calls on it, and with control forwards the person's input; ``handoff`` holds
a tab for the person until they press Done. Above ``page`` (screencast, input
mapping), below ``tools`` (``live_view``, ``handoff``) and the server, which mounts
its page at ``/live`` in HTTP mode.
"""

__all__: list[str] = []
