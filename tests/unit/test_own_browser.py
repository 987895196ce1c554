"""A person's own Chrome, pure parts: what its user-data directory says (``Local State``
and ``Last Version`` as Chromium 156 wrote them, fixtures/devtools), discovery telling it
apart (and never opening it where nobody is to be asked), the share manifest carrying it,
the refusal said as such, and doctor's texts for each state it can be in."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError
from websockets.datastructures import Headers
from websockets.exceptions import InvalidStatus
from websockets.http11 import Response

from gateway.cdp.connection import websocket_errors
from gateway.cdp.endpoint import (
    DEFAULT_PROFILE_DIRS,
    Endpoint,
    ProfileDir,
    read_profiles,
    remote_debugging_on,
)
from gateway.config import CdpAddress, TargetConfig
from gateway.discovery.scan import Candidate
from gateway.discovery.strategy import (
    ActivePortFiles,
    PersonalBrowser,
    Search,
    attach_at,
    find_browser,
)
from gateway.doctor.browser_steps import BrowserSteps
from gateway.doctor.fixes import (
    PERSONAL_NOTE,
    endpoint_failure,
    ignored_port_failure,
    personal_found,
)
from gateway.doctor.report import Recorder, StopCheck, TargetReport
from gateway.errors import ConsentNotGiven, DiscoveryError, NothingListens, map_exceptions
from gateway.hosts.base import FileText
from gateway.hosts.http import HttpResponse
from gateway.hosts.local import LocalHost
from gateway.hosts.shell import parse_read_files, read_files_command
from gateway.share.manifest import ShareManifest

FIXTURES = Path(__file__).parents[2] / "fixtures" / "devtools"
LOCAL_STATE = (FIXTURES / "chromium-156-user-enabled.LocalState").read_text()
LAST_VERSION = (FIXTURES / "chromium-156.LastVersion").read_text()
ACTIVE_PORT = "9222\n/devtools/browser/debb9b23-fb5f-4393-9a62-eab535be3aaf"
pytestmark = pytest.mark.anyio


def _without_setting(text: str) -> str:
    state = json.loads(text)
    del state["devtools"]
    return json.dumps(state)


def test_the_setting_is_read_from_local_state_as_chromium_wrote_it() -> None:
    assert remote_debugging_on(LOCAL_STATE)
    assert not remote_debugging_on(_without_setting(LOCAL_STATE))
    for text in ("", "{", "[]", '{"devtools": {"remote_debugging": {"user-enabled": "true"}}}',
                 '{"devtools": {"remote_debugging": true}}'):
        assert not remote_debugging_on(text), text


def test_profiles_are_read_from_their_three_files() -> None:
    profiles = read_profiles({
        "/h/.config/google-chrome/DevToolsActivePort": ACTIVE_PORT,
        "/h/.config/google-chrome/Local State": LOCAL_STATE,
        "/h/.config/google-chrome/Last Version": LAST_VERSION,
        "/h/.config/chromium/Local State": _without_setting(LOCAL_STATE),
        "/h/.config/chromium/Last Version": "120.0.6099.71",
        "/h/other/Preferences": "{}"})
    assert profiles == [
        ProfileDir("/h/.config/google-chrome", (9222, ACTIVE_PORT.split("\n")[1]), True,
                   "156.0.8078.114", True),
        ProfileDir("/h/.config/chromium", None, False, "120.0.6099.71", True)]
    assert [p.major for p in profiles] == [156, 120]


def test_windows_chrome_under_wsl_is_a_usual_profile_read_by_pattern(tmp_path: Path) -> None:
    """``/*/`` in a profile path matches each Windows user, through a real /bin/sh (as
    over SSH) and locally; every other character stays quoted."""
    pattern = next(d for d in DEFAULT_PROFILE_DIRS if "/*/" in d)
    assert pattern == "/mnt/c/Users/*/AppData/Local/Google/Chrome/User Data"
    base = f"{tmp_path}/Users"
    for user in ("Ann Lee", "bob"):
        (Path(base) / user / "Chrome Data").mkdir(parents=True)
    (Path(base) / "bob" / "Chrome Data" / "Local State").write_text(LOCAL_STATE)
    asked = [f"{base}/*/Chrome Data/Local State", f"{base}/*/Chrome Data/DevToolsActivePort"]
    (Path(base) / "Ann Lee" / "Chrome Data" / "DevToolsActivePort").write_text(ACTIVE_PORT)
    marker = "#csgw-file-0123456789abcdef"
    out = subprocess.run(["/bin/sh", "-c", read_files_command(asked, marker)], check=True,
                         capture_output=True, text=True).stdout
    over_sh = {k: v[1] for k, v in parse_read_files(out, marker, asked).items()}
    here = {k: v.text for k, v in anyio.run(LocalHost().read_files, asked, 5).items()}
    expected = {f"{base}/bob/Chrome Data/Local State": LOCAL_STATE,
                f"{base}/Ann Lee/Chrome Data/DevToolsActivePort": ACTIVE_PORT}
    assert over_sh == expected and here == expected


class ProfileHost:
    """A host with files to read and one answer for HTTP (a person's Chrome: 404)."""

    label = "alice@laptop"

    def __init__(self, files: dict[str, str], answer: int | None = 404) -> None:
        self.files = files
        self.answer = answer
        self.requests: list[str] = []

    async def read_files(self, paths: Sequence[str], timeout_s: float) -> dict[str, FileText]:
        return {p: FileText(p, self.files[p]) for p in paths if p in self.files}

    async def http_request(self, host: str, port: int, path: str, timeout_s: float, *,
                           socket: str | None = None) -> HttpResponse:
        self.requests.append(f"{host}:{port}{path}")
        if self.answer is None:
            raise NothingListens("connection refused")
        return HttpResponse(self.answer, b"")

    async def route(self, host: str, port: int, *, socket: str | None = None) -> object:
        raise AssertionError("a person's own Chrome must not be opened without ask_person")

    async def run(self, command: str, timeout_s: float) -> str:
        return ""  # the host scan: no browser process


def _search(host: ProfileHost) -> Search:
    return Search(host, "own", 5, ask_person=False)  # type: ignore[arg-type]


async def test_a_person_s_chrome_is_found_by_its_setting_and_not_opened() -> None:
    host = ProfileHost({"/p/DevToolsActivePort": ACTIVE_PORT, "/p/Local State": LOCAL_STATE})
    with pytest.raises(PersonalBrowser) as found:
        await find_browser([ActivePortFiles(("/p",), configured=True)], _search(host))
    endpoint = found.value.endpoint
    assert endpoint.personal and endpoint.port == 9222
    assert endpoint.browser_path == ACTIVE_PORT.split("\n")[1]
    assert host.requests == ["127.0.0.1:9222/json/version"]  # it answers: not stale


async def test_a_stale_file_of_a_person_s_chrome_is_no_browser() -> None:
    host = ProfileHost({"/p/DevToolsActivePort": ACTIVE_PORT, "/p/Local State": LOCAL_STATE},
                       answer=None)
    search = _search(host)
    with pytest.raises(DiscoveryError):
        await find_browser([ActivePortFiles(("/p",), configured=True)], search)
    assert "says port 9222 but nothing answers at 127.0.0.1:9222" in search.tried[0]


async def test_an_explicit_websocket_path_that_serves_no_json_is_a_person_s_chrome() -> None:
    address = CdpAddress(host="127.0.0.1", port=9222, browser_path="/devtools/browser/abc")
    with pytest.raises(PersonalBrowser) as found:
        await attach_at(_search(ProfileHost({})), address)
    assert found.value.endpoint.personal
    assert found.value.endpoint.browser_path == "/devtools/browser/abc"


def test_a_refusal_and_no_answer_are_said_as_the_person_s() -> None:
    errors = websocket_errors("own", "127.0.0.1:9222/devtools/browser/x", 600, "alice@laptop")
    with pytest.raises(ConsentNotGiven) as declined, map_exceptions(errors):
        raise InvalidStatus(Response(403, "Forbidden", Headers()))
    assert declined.value.cause.startswith(
        "the person declined remote debugging (Cancel in \"Allow remote debugging?\" in their "
        "Chrome on alice@laptop); nothing is retried by itself; the next call on this target "
        "asks once more")
    with pytest.raises(ConsentNotGiven) as unanswered, map_exceptions(errors):
        raise TimeoutError
    assert unanswered.value.cause.startswith(
        "nobody answered \"Allow remote debugging?\" in their Chrome on alice@laptop within "
        "600 s")
    with pytest.raises(DiscoveryError) as other, map_exceptions(
            websocket_errors("own", "h:1/x", 10)):
        raise InvalidStatus(Response(403, "Forbidden", Headers()))
    assert not isinstance(other.value, ConsentNotGiven)


def test_the_manifest_carries_the_path_of_a_person_s_chrome() -> None:
    manifest = ShareManifest(name="laptop", share_id="0123456789abcdef", sharer="laptop",
                             shared_at="2026-12-04T19:00:00+00:00", tabs="agent",
                             path="/devtools/browser/debb9b23-fb5f", personal=True)
    again = ShareManifest.model_validate_json(manifest.to_text())
    assert again == manifest and again.path == "/devtools/browser/debb9b23-fb5f"
    for path in ("/devtools/page/x", "/devtools/browser/x?token=1", "/devtools/browser/a b"):
        with pytest.raises(ValidationError):
            ShareManifest.model_validate({**manifest.model_dump(), "path": path})


DEFAULT = TargetConfig(name="t", ssh=None, cdp=None)


def _failure(profiles: Sequence[ProfileDir] = (), running: Sequence[Candidate] = (),
             stale: Sequence[tuple[Endpoint, str]] = ()) -> tuple[str, str]:
    return endpoint_failure(DEFAULT, "alice@laptop", "why", listed=True, stale=stale,
                            unanswered=[], profiles=profiles, running=running)


def _chrome(program: str = "google-chrome", profile: str = "~/.config/google-chrome",
            port: int | None = None) -> Candidate:
    """A browser the host scan saw (its profile as the scan names a default one)."""
    return Candidate(4242, None, program, profile, port, None, None, None, None)


OFF = ProfileDir("/home/alice/.config/google-chrome", None, False, "156.0.1", True)


def test_doctor_says_how_to_turn_the_setting_on() -> None:
    detail, fix = _failure([OFF], [_chrome()])
    assert detail == ("Chrome runs in /home/alice/.config/google-chrome on alice@laptop with "
                      "remote debugging turned off")
    assert fix.startswith("the person opens chrome://inspect/#remote-debugging in their Chrome "
                          "and turns on \"Allow remote debugging for this browser instance\"")


def test_doctor_says_nothing_of_the_setting_of_a_chrome_not_running() -> None:
    detail, fix = _failure([OFF], [_chrome(profile="/tmp/other")])
    assert detail.startswith("no DevToolsActivePort in the usual profile directories")
    assert "for the person's own Chrome (144+), the person opens chrome://inspect" in fix


def test_doctor_says_a_chrome_older_than_144_has_no_setting() -> None:
    old = ProfileDir(".config/google-chrome", None, False, "139.0.7258.5", True)
    detail, fix = _failure([old], [_chrome()])
    assert detail == ("Chrome 139.0.7258.5 runs in ~/.config/google-chrome on alice@laptop: "
                      "older than 144, which has no remote-debugging setting")
    assert fix.startswith("update Chrome to 144 or later, then the person opens chrome://")


def test_doctor_says_the_setting_is_on_but_chrome_is_not_running() -> None:
    detail, fix = _failure([ProfileDir(".config/chromium", None, True, "156.0.1", True)])
    assert detail == ("remote debugging is on in ~/.config/chromium on alice@laptop, but that "
                      "Chrome is not running")
    assert fix == "start Chrome there: the gateway finds it by itself"


def test_doctor_says_the_default_profile_ignores_the_port_flag() -> None:
    detail, fix = _failure([OFF], [_chrome(port=9222)])
    assert (detail, fix) == ignored_port_failure([4242], "alice@laptop")
    # Chromium honours it (it is how the test hosts run): not said of it.
    assert _failure([OFF], [_chrome("chromium", "~/.config/chromium", 9222)])[0] != detail
    assert detail == ("Chrome (pid 4242) on alice@laptop was started with "
                      "--remote-debugging-port on its default profile, which Chrome ignores "
                      "since 136")
    assert fix.startswith("turn on remote debugging instead: the person opens chrome://")


def test_doctor_says_windows_chrome_is_out_of_reach_from_wsl() -> None:
    directory = "/mnt/c/Users/ann/AppData/Local/Google/Chrome/User Data"
    stale = Endpoint("127.0.0.1", 9222, "/devtools/browser/x",
                     f"DevToolsActivePort in {directory}", personal=True)
    _, fix = _failure(stale=[(stale, "connection refused")])
    assert fix.startswith(f"that is Windows' Chrome (in {directory}), and from WSL 2 Windows' "
                          "127.0.0.1 is reachable only with networkingMode=mirrored")
    assert "`chrome-ssh-gateway share <this machine>` on Windows" in fix


def test_doctor_names_a_person_s_chrome_it_found() -> None:
    endpoint = Endpoint("127.0.0.1", 9222, "/devtools/browser/x",
                        "DevToolsActivePort in .config/google-chrome", personal=True)
    assert personal_found(endpoint) == (
        "DevToolsActivePort in .config/google-chrome: port 9222 — the person's own Chrome, "
        "its remote debugging turned on (chrome://inspect/#remote-debugging)")



async def _doctor(files: dict[str, str]) -> TargetReport:
    report = TargetReport("own", "local")
    with pytest.raises(StopCheck):
        await BrowserSteps(DEFAULT, Recorder(report)).run(ProfileHost(files))  # type: ignore[arg-type]
    return report


async def test_doctor_finds_a_person_s_chrome_without_asking_them() -> None:
    report = await _doctor({".config/google-chrome/DevToolsActivePort": ACTIVE_PORT,
                            ".config/google-chrome/Local State": LOCAL_STATE})
    endpoint, websocket = report.step("endpoint"), report.step("websocket")
    assert (endpoint.status, websocket.status) == ("ok", "skipped")
    assert endpoint.detail.startswith("DevToolsActivePort in .config/google-chrome: port "
                                      "9222 — the person's own Chrome")
    assert websocket.detail == PERSONAL_NOTE and report.up


async def test_doctor_says_the_setting_is_on_in_a_chrome_not_running() -> None:
    report = await _doctor({".config/google-chrome/Local State": LOCAL_STATE,
                            ".config/google-chrome/Last Version": LAST_VERSION})
    endpoint = report.step("endpoint")
    assert endpoint.status == "failed" and not report.up
    assert endpoint.detail == ("remote debugging is on in ~/.config/google-chrome on "
                               "alice@laptop, but that Chrome is not running")
