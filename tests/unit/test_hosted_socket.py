"""A hosted ``wss://`` endpoint's ``ca_file`` problems are the target's failure, said clearly.

The TLS context was built outside the handled region of ``open_websocket``: a missing
or non-PEM file raised a bare ``FileNotFoundError``/``SSLError`` past ``Search.connect``
(whose route was then never released) instead of a ``DiscoveryError``.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from gateway.cdp.connection import open_websocket
from gateway.cdp.endpoint import Endpoint
from gateway.config.remote import SecretHeaders
from gateway.errors import DiscoveryError


def _open(ca_file: str) -> None:
    async def main() -> None:
        await open_websocket("wss://127.0.0.1:9/x?token=s3cr3t", unix_path=None, target="pool",
                             timeout_s=5, ca_file=ca_file, shown="127.0.0.1:9/x?token=[redacted]")

    anyio.run(main)


def test_a_missing_ca_file_is_a_discovery_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    with pytest.raises(DiscoveryError, match=f"ca_file {missing}.*No such file") as caught:
        _open(str(missing))
    assert "s3cr3t" not in str(caught.value)


def test_a_ca_file_that_is_not_pem_is_a_discovery_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(DiscoveryError, match=r"ca_file .* PEM"):
        _open(str(junk))


def test_a_home_relative_ca_file_is_read_from_home(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(DiscoveryError, match=f"ca_file ~/ca.pem .*{tmp_path}/ca.pem"):
        _open("~/ca.pem")


def test_an_endpoint_repr_shows_no_token() -> None:
    """An ``Endpoint`` (in a trace, an assertion, a debug line) is printable: its path may
    carry a hosted pool's ``?token=``, which ``repr`` showed whole."""
    endpoint = Endpoint("pool.example", 443, "/chromium?token=s3cr3t", "configured", "wss",
                        SecretHeaders([("Authorization", "Bearer s3cr3t")]))
    assert "s3cr3t" not in repr(endpoint) and "s3cr3t" not in str(endpoint)
    assert "token=[redacted]" in repr(endpoint)
    assert endpoint.url.endswith("?token=s3cr3t")  # still there to connect with
