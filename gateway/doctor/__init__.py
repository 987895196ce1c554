"""``chrome-ssh-gateway doctor``: each target checked step by step, with a fix per failure."""
