"""adk-web at /dev-ui/: its files from the google-adk wheel, its config pointing at our /api,
and a Content-Security-Policy of its own there, while every other page keeps the strict one."""
from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from runtime_app.dev_ui import BUNDLE

pytestmark = pytest.mark.django_db


def directives(header: str) -> dict[str, set[str]]:
    return {name: set(values.split()) for name, _, values in (p.strip().partition(" ") for p in header.split(";"))}


def test_the_page_is_adk_webs_own_index_with_a_policy_of_its_own(client: Client) -> None:
    response = client.get("/dev-ui/")
    # The wheel's index, with only a style element and a link added: none of its own lines changed.
    added = re.compile(r'<style>\n@font-face\{font-family:\'Material Icons\'.*?</style>\n|<a id="adkui-back"[^>]*>[^<]*</a>\n', re.S)
    assert response.status_code == 200 and added.sub("", response.content.decode()) == (BUNDLE / "index.html").read_text()
    assert "<app-root>" in response.content.decode() and response["Cache-Control"] == "no-store"
    policy = directives(response["Content-Security-Policy"])
    # Its inline onload handler is allowed by its hash alone: no inline script otherwise, no eval.
    assert {"'self'", "'wasm-unsafe-eval'", "'unsafe-hashes'"} <= policy["script-src"]
    assert not policy["script-src"] & {"'unsafe-inline'", "'unsafe-eval'"}
    assert any(v.startswith("'sha256-") for v in policy["script-src"])
    assert "'unsafe-inline'" in policy["style-src"] and not any("nonce" in v for v in policy["style-src"])
    assert policy["frame-ancestors"] == {"'none'"} and policy["connect-src"] == {"'self'"}


def test_our_own_pages_keep_the_strict_policy(client: Client) -> None:
    for url in ("/", "/evals/", "/api/list-apps"):
        policy = directives(client.get(url)["Content-Security-Policy"])
        assert policy["script-src"] == {"'self'"} and policy["style-src"] == {"'self'"}, url


def test_without_the_slash_it_redirects_as_adks_server_does(client: Client) -> None:
    response = client.get("/dev-ui")
    assert response.status_code in (301, 302) and response["Location"] == "/dev-ui/"


def test_the_runtime_config_points_adk_web_at_our_api(client: Client) -> None:
    response = client.get("/dev-ui/assets/config/runtime-config.json")
    assert response.json() == {"backendUrl": "http://testserver/api", "telemetry": False}
    assert response["Cache-Control"] == "no-store"
    assert client.get("/api/list-apps").status_code == 200  # what backendUrl + "/list-apps" reaches


def test_the_bundles_files_are_served_with_debug_off(client: Client, settings: Any) -> None:
    settings.DEBUG = False
    main = next(BUNDLE.glob("main-*.js")).name
    response = client.get(f"/dev-ui/{main}")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/javascript")
    assert b"".join(response.streaming_content) == (BUNDLE / main).read_bytes()
    assert "immutable" in response["Cache-Control"]  # Angular's names carry their content's hash
    assert client.get("/dev-ui/assets/audio-processor.js").status_code == 200
    assert client.get("/dev-ui/no-such-file.js").status_code == 404
    assert client.get("/dev-ui/../settings.py").status_code == 404


def test_every_file_the_index_names_is_served(client: Client) -> None:
    html = (BUNDLE / "index.html").read_text()
    names = set(re.findall(r'(?:src|href)="\./([^"]+)"', html))
    assert names and all(client.get(f"/dev-ui/{name}").status_code == 200 for name in names), names


def test_with_logins_on_the_page_needs_one_and_the_files_do_not(client: Client, settings: Any) -> None:
    settings.ADKUI_LOCAL_DEV = False
    response = client.get("/dev-ui/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert client.get("/dev-ui/assets/config/runtime-config.json").status_code == 302
    assert client.get("/dev-ui/adk_favicon.svg").status_code == 200


def test_the_header_links_to_it(client: Client) -> None:
    assert 'href="/dev-ui/"' in client.get("/").content.decode()


def test_what_adk_web_asks_for_beyond_the_wheel_is_served_from_here(client: Client) -> None:
    # The Prism theme its theme switch links (light and dark): real stylesheets, not 404s.
    for theme in ("light", "dark"):
        response = client.get(f"/dev-ui/prism-{theme}.css")
        assert response.status_code == 200 and response["Content-Type"].startswith("text/css")
        assert b'pre[class*="language-"]' in b"".join(response.streaming_content)
    # Its icon fonts, from here: the index's last @font-face for each family names our file.
    html = client.get("/dev-ui/").content.decode()
    for family in ("Material Icons", "Material Symbols Outlined"):
        faces = re.findall(rf"@font-face\{{font-family:'{family}';[^}}]*?src:url\(([^)]+)\)", html)
        assert faces[-1].startswith("./fonts/"), faces
        font = client.get("/dev-ui/" + faces[-1].removeprefix("./"))
        assert font.status_code == 200 and b"".join(font.streaming_content)[:4] == b"wOF2"
    # And the way back to adkui.
    assert re.search(r'<a id="adkui-back" href="/"[^>]*>← adkui</a>', html)
