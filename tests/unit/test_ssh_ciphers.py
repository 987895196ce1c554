"""The cipher order the gateway asks asyncssh for (see gateway/hosts/ssh.py)."""

from __future__ import annotations

from asyncssh.encryption import get_default_encryption_algs

from gateway.hosts.ssh import cipher_preference


def test_aes_gcm_goes_first_when_nothing_was_configured() -> None:
    defaults = get_default_encryption_algs()
    assert defaults[0] == b"chacha20-poly1305@openssh.com"  # asyncssh's own first choice

    order = cipher_preference(defaults)

    assert order is not None
    assert order[:2] == ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com"]
    assert sorted(order) == sorted(alg.decode() for alg in defaults)  # none added or lost


def test_ciphers_from_ssh_config_are_left_alone() -> None:
    assert cipher_preference([b"aes256-ctr"]) is None
    assert cipher_preference([b"chacha20-poly1305@openssh.com"]) is None
