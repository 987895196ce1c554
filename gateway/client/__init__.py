"""The shell's client of ``call``: one tool call sent to the gateway daemon over its
socket (``call``, standard library only: it runs on every ``call``) and its result
printed for a terminal or a script (``output``)."""
