"""gateway.config.policy and the scheme rules of gateway.config.urls: what each per-target
switch lets through, and that every refusal names the setting to change."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config import OPT_IN_SCHEMES, TargetConfig
from gateway.config.policy import JS_METHODS, check_cdp_command, check_evaluate
from gateway.config.urls import check_url
from gateway.errors import InvalidArgument, NotAllowed


def target(**policy: Any) -> TargetConfig:
    return TargetConfig(name="t", ssh=None, cdp=None, **policy)


def test_defaults_allow_any_cdp_method_and_evaluate() -> None:
    config = target()
    for method in ("Browser.getVersion", "Network.getCookies", *sorted(JS_METHODS)):
        check_cdp_command(config, method, {})
    check_evaluate(config)


def test_allow_cdp_false_refuses_every_method() -> None:
    with pytest.raises(NotAllowed, match=r"cdp_command is turned off for target 't' "
                                         r"\(allow_cdp = false"):
        check_cdp_command(target(allow_cdp=False), "Browser.getVersion", None)


@pytest.mark.parametrize(("method", "allowed"), [
    ("Runtime.evaluate", True),
    ("Runtime.getProperties", True),
    ("Page.reload", True),
    ("Page.navigate", False),            # only Page.reload is listed for Page
    ("Network.getCookies", False),
    ("RuntimeX.evaluate", False),        # a prefix of a domain is not the domain
])
def test_cdp_allow_matches_whole_domains_or_exact_methods(method: str, allowed: bool) -> None:
    config = target(cdp_allow=("Runtime.*", "Page.reload"))
    if allowed:
        check_cdp_command(config, method, {})
    else:
        with pytest.raises(NotAllowed, match=f"{method} is not allowed on target 't'; its "
                                             r"cdp_allow permits only Runtime\.\*, Page\.reload"):
            check_cdp_command(config, method, {})


@pytest.mark.parametrize("method", sorted(JS_METHODS))
def test_allow_evaluate_false_covers_cdp_methods_that_run_javascript(method: str) -> None:
    config = target(allow_evaluate=False)
    with pytest.raises(NotAllowed, match=r"running JavaScript is turned off.*allow_evaluate"):
        check_cdp_command(config, method, {})
    with pytest.raises(NotAllowed, match="browse_act"):
        check_evaluate(config)
    check_cdp_command(config, "Page.reload", {})  # the rest of CDP is unaffected


@pytest.mark.parametrize("method", ["Page.navigate", "Target.createTarget"])
def test_cdp_navigation_follows_the_scheme_rules(method: str) -> None:
    with pytest.raises(NotAllowed, match="url scheme 'file' is not allowed"):
        check_cdp_command(target(), method, {"url": "file:///etc/passwd"})
    with pytest.raises(InvalidArgument, match="javascript: URLs are not navigated to"):
        check_cdp_command(target(), method, {"url": "javascript:alert(1)"})
    check_cdp_command(target(allow_schemes=frozenset({"file"})), method,
                      {"url": "file:///etc/passwd"})
    check_cdp_command(target(), method, {"url": "https://example.test/"})


def test_cdp_navigation_with_odd_params_is_left_to_chrome() -> None:
    # No url, or not a string: Chrome answers with its own parameter error.
    check_cdp_command(target(), "Page.navigate", {})
    check_cdp_command(target(), "Page.navigate", {"url": 5})
    check_cdp_command(target(), "Page.navigate", None)


@pytest.mark.parametrize("scheme", sorted(OPT_IN_SCHEMES))
def test_opt_in_schemes_are_refused_by_default_and_allowed_one_by_one(scheme: str) -> None:
    url = f"{scheme}://something/x"
    with pytest.raises(NotAllowed, match=f'allow_schemes = \\["{scheme}"\\]'):
        check_url(url)
    assert check_url(url, frozenset({scheme})) == url
    others = OPT_IN_SCHEMES - {scheme}
    for other in others:
        with pytest.raises(NotAllowed):
            check_url(f"{other}://x", frozenset({scheme}))


def test_javascript_stays_refused_whatever_is_allowed() -> None:
    with pytest.raises(InvalidArgument, match="evaluate"):
        check_url("javascript:alert(1)", OPT_IN_SCHEMES)
