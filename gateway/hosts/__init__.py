"""How to reach a machine: this one, or one over SSH (asyncssh, in process)."""
