"""``webdriver`` and hosted ``cdp = "ws(s)://…"`` targets in the targets file (pure).

Secrets come from ``${VAR}`` (a missing one is a start-up error naming it) and
never show: the config's own repr, and every URL or header built from it, have
the token redacted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import CdpAddress, ConfigError, TargetConfig
from gateway.config.file import read_targets_file
from gateway.config.remote import (
    HostedUrl,
    expand_env,
    is_hosted_url,
    parse_hosted_url,
    parse_webdriver_url,
    redact_url,
)
from gateway.config.text import BadValue

TOKEN = "s3cr3t-token-value"


def _read(tmp_path: Path, text: str,
          env: dict[str, str] | None = None) -> tuple[TargetConfig, ...]:
    path = tmp_path / "targets.toml"
    path.write_text(text)
    return read_targets_file(str(path), env or {}).target_configs()


def test_hosted_url_with_env_token_and_headers(tmp_path: Path) -> None:
    [pool] = _read(tmp_path, '[targets.pool]\n'
                   'cdp = "wss://pool.example.com/chromium?token=${POOL_TOKEN}&region=eu"\n'
                   'headers = { Authorization = "Bearer ${POOL_TOKEN}" }\n',
                   {"POOL_TOKEN": TOKEN})
    assert isinstance(pool.cdp, HostedUrl)
    assert pool.cdp.url == f"wss://pool.example.com:443/chromium?token={TOKEN}&region=eu"
    assert dict(pool.headers) == {"Authorization": f"Bearer {TOKEN}"}
    shown = repr(pool) + str(pool) + str(pool.cdp)
    assert TOKEN not in shown
    assert "token=[redacted]" in shown and "'Authorization': '[redacted]'" in shown


def test_missing_variable_is_a_start_up_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="POOL_TOKEN is not set") as err:
        _read(tmp_path, '[targets.pool]\ncdp = "wss://p.example/x"\n'
              'headers = { Authorization = "Bearer ${POOL_TOKEN}" }\n')
    assert "targets.pool.headers.Authorization" in str(err.value)


@pytest.mark.parametrize("line", [
    'cdp = "127.0.0.1:9222/?token=${POOL_TOKEN}"',           # a query on a plain address
    'cdp = "wss://pool.example.com/x?token=${POOL_TOKEN}"\nca_file = 3',
    'cdp = "ws://user:${POOL_TOKEN}@127.0.0.1:9222/x"',
    'webdriver = "http://127.0.0.1:4444/?key=${POOL_TOKEN}"',
    'cdp = "127.0.0.1:9222/' + "p" * 49 + '?token=${POOL_TOKEN}"',  # cut off mid-token
])
def test_a_refused_value_never_shows_the_secret_it_was_given(tmp_path: Path, line: str) -> None:
    """A ${VAR} value is a secret: a typo around it printed it whole in the start-up
    error (stderr, the daemon's log)."""
    with pytest.raises(ConfigError) as err:
        _read(tmp_path, f"[targets.pool]\n{line}\n", {"POOL_TOKEN": TOKEN})
    assert TOKEN not in str(err.value) and "targets.pool" in str(err.value), err.value
    assert TOKEN[:8] not in str(err.value), err.value


def test_a_secret_quoted_escaped_is_hidden_too(tmp_path: Path) -> None:
    secret = "s3cr3t\x01value"
    with pytest.raises(ConfigError, match="control character") as err:
        _read(tmp_path, '[targets.pool]\ncdp = "127.0.0.1:9222/${POOL_TOKEN}"\n',
              {"POOL_TOKEN": secret})
    assert "s3cr3t" not in str(err.value), err.value


def test_webdriver_target(tmp_path: Path) -> None:
    [grid] = _read(tmp_path, '[targets.grid]\nwebdriver = "http://grid.internal:4444"\n'
                   'ssh = "ci-bastion"\nsessions = 2\ncapabilities = { browserName = "chrome", '
                   '"goog:chromeOptions" = { args = ["--headless=new"] } }\n')
    assert grid.webdriver is not None and str(grid.webdriver) == "http://grid.internal:4444"
    assert grid.sessions == 2
    assert grid.capabilities == {"browserName": "chrome",
                                 "goog:chromeOptions": {"args": ["--headless=new"]}}
    [plain] = _read(tmp_path, '[targets.wd]\nwebdriver = "http://127.0.0.1:9515"\n')
    assert plain.capabilities == {"browserName": "chrome"} and plain.sessions == 1


@pytest.mark.parametrize(("table", "key", "reason"), [
    ('webdriver = "http://g:4444"\ncdp = "127.0.0.1:9222"', "cdp", "drop 'cdp'"),
    ('webdriver = "http://g:4444"\nlaunch = true', "launch", "drop 'launch'"),
    ('sessions = 2', "sessions", "only applies with webdriver"),
    ('capabilities = {}', "capabilities", "only applies with webdriver"),
    ('cdp = "127.0.0.1:9222"\nheaders = { A = "b" }', "headers", "only applies with cdp"),
    ('ca_file = "/etc/ca.pem"', "ca_file", "only applies with cdp"),
    ('webdriver = "http://g:4444"\nsessions = 0', "sessions", "out of range"),
    ('cdp = "wss://p.example/x"\nheaders = { "Bad Name" = "v" }', "headers",
     "not a valid HTTP header name"),
    ('cdp = "wss://p.example/x"\nlaunch = true', "launch", "hosted"),
    # No TLS to check a certificate on: the file would be silently ignored.
    ('cdp = "ws://p.example/x"\nca_file = "/etc/ca.pem"', "ca_file", "only applies with cdp"),
])
def test_refused_combinations(tmp_path: Path, table: str, key: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason) as err:
        _read(tmp_path, f"[targets.t]\n{table}\n")
    assert err.value.key == f"targets.t.{key}"


def test_session_names_must_be_free(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'grid-2' is another target's name") as err:
        _read(tmp_path, '[targets.grid]\nwebdriver = "http://g:4444"\nsessions = 3\n'
              '[targets.grid-2]\nssh = "h"\n')
    assert err.value.key == "targets.grid.sessions"
    long = "g" * 30  # "-9" fits in 32 characters, "-10" does not
    with pytest.raises(ConfigError, match="longer than 32 characters"):
        _read(tmp_path, f'[targets.{long}]\nwebdriver = "http://g:4444"\nsessions = 10\n')
    assert len(_read(tmp_path, f'[targets.{long}]\nwebdriver = "http://g:4444"\n'
                     'sessions = 9\n')) == 1


@pytest.mark.parametrize(("text", "hosted"), [
    ("wss://pool.example.com/chromium", True),
    ("ws://10.0.0.2:3000/?token=x", True),
    ("ws://browserless:3000", True),            # a host name: no Chrome Host check applies
    ("ws://127.0.0.1:3000/playwright", True),
    ("ws://127.0.0.1:9222/devtools/browser/abc", False),
    ("ws://[::1]:9222", False),
    ("ws://localhost:9222/", False),
    ("http://127.0.0.1:9222", False),
    ("127.0.0.1:9222", False),
])
def test_which_cdp_values_are_hosted(text: str, hosted: bool) -> None:
    assert is_hosted_url(text) is hosted
    config = TargetConfig.model_validate({"name": "t", "cdp": text})
    assert isinstance(config.cdp, HostedUrl if hosted else CdpAddress)


def test_redact_url() -> None:
    assert redact_url("wss://h:1/p?token=abc&x=&y=2") == \
        "wss://h:1/p?token=[redacted]&x=[redacted]&y=[redacted]"
    assert redact_url("wss://user:pw@h/p") == "wss://h/p"
    assert redact_url("ws://h:2/devtools/browser/x") == "ws://h:2/devtools/browser/x"


def test_expand_env_leaves_text_without_variables() -> None:
    assert expand_env("Bearer ${A}-${B}", source="s", key="k", env={"A": "1", "B": "2"}) \
        == "Bearer 1-2"
    assert expand_env("$A ${not a var}", source="s", key="k", env={}) == "$A ${not a var}"


@pytest.mark.parametrize(("url", "shown"), [
    ("wss://h/p?s3cr3t", "wss://h/p?[redacted]"),          # a bare key (?apikey style)
    ("wss://h/p?a=1&s3cr3t&b", "wss://h/p?a=[redacted]&[redacted]&[redacted]"),
    ("wss://h/p?token%3Ds3cr3t", "wss://h/p?[redacted]"),  # an escaped '=' is no '='
])
def test_redact_url_hides_query_items_without_a_value(url: str, shown: str) -> None:
    """A query item with no ``=`` is all value: it was shown as a key."""
    assert redact_url(url) == shown
    assert "s3cr3t" not in repr(parse_hosted_url(url))


@pytest.mark.parametrize("url", ["wss://a..b/x?token=s", "wss://.pool.example/x",
                                 "ws://" + "a" * 64 + ".example/x", "http://a..b:4444"])
def test_a_host_name_with_an_empty_or_overlong_label_is_a_start_up_error(url: str) -> None:
    """It passed the character check, then failed each connect with a bare UnicodeError
    (the IDNA codec) outside the GatewayError tree."""
    with pytest.raises(BadValue, match="not a host name"):
        if url.startswith("http"):
            parse_webdriver_url(url)
        else:
            parse_hosted_url(url)
