"""The Content-Security-Policy header, and templates that need nothing it forbids.
(tests/browser/test_csp.py loads the pages in chromium and watches for violations.)"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import World

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
POLICY = {
    "default-src": "'self'", "script-src": "'self'", "style-src": "'self'", "img-src": "'self' data:",
    "connect-src": "'self'", "object-src": "'none'", "base-uri": "'self'", "form-action": "'self'",
    "frame-ancestors": "'none'",
}
# What the policy forbids in markup: inline scripts (without this response's nonce), <style>,
# style="" and on*="" attributes, htmx's hx-on and hx-trigger filters (both evaluated with eval).
FORBIDDEN = {
    "inline script": re.compile(r"<script(?![^>]*\b(src|nonce)=)[^>]*>"),
    "style element": re.compile(r"<style\b"),
    "style attribute": re.compile(r"\sstyle\s*="),
    "event handler attribute": re.compile(r"\son[a-z]+\s*=", re.IGNORECASE),
    "hx-on": re.compile(r"\shx-on"),
    "hx-trigger filter": re.compile(r"hx-trigger=\"[^\"]*\["),
    "javascript: URL": re.compile(r"javascript:", re.IGNORECASE),
}


def directives(header: str) -> dict[str, str]:
    return dict(part.strip().split(" ", 1) for part in header.split(";"))


def test_no_template_holds_what_the_policy_forbids():
    found = [f"{path.relative_to(TEMPLATES)}: {what}"
             for path in sorted(TEMPLATES.rglob("*.html"))
             for what, pattern in FORBIDDEN.items() if pattern.search(path.read_text())]
    assert found == []


@pytest.mark.parametrize("url", ["/", "/evals/", "/accounts/login/", "/apps/trip_planner/"])
def test_pages_get_the_strict_policy_with_no_nonce(client, world: World, url):
    response = client.get(url)
    assert response.status_code == 200 and directives(response["Content-Security-Policy"]) == POLICY


def test_a_refusal_page_gets_it_too(client_as, production, world: World):
    response = client_as("viewer").post(f"/sessions/{world.pk}/delete/")
    assert response.status_code == 403 and directives(response["Content-Security-Policy"]) == POLICY


def test_the_api_docs_start_swagger_ui_with_this_responses_nonce(client, db):
    response = client.get("/api/docs/")
    policy = response["Content-Security-Policy"]
    nonce = re.search(r"script-src 'self' 'nonce-([^']+)'", policy).group(1)
    html = response.content.decode()
    assert f'<script nonce="{nonce}">' in html and "<style" not in html
    assert client.get("/api/docs/")["Content-Security-Policy"] != policy  # a new nonce each time


def test_an_artifact_download_keeps_its_own_sandbox_policy(client, world: World):
    response = client.get(f"/memory/sessions/{world.pk}/artifacts/download/?name=report.txt")
    assert response["Content-Security-Policy"] == "sandbox; default-src 'none'; img-src 'self'"
