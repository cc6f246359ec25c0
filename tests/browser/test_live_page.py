"""The session page's live behaviour and its address, in a real headless chromium.

Each test opens the page the way a user does and waits on what they would
see: artifacts and rewind marks arriving in every open tab, a call paired
with its response as it happens (and exactly as a reload renders it), "load
older" one page at a time without losing the reader's place, the view in the
address, and Enter sending a chat message.
"""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from playwright.sync_api import expect

from adkui.adk import DjangoArtifactService, DjangoSessionService
from sessions_app import services, timeline
from sessions_app import views as session_views
from sessions_app.keys import SessionKey
from sessions_app.models import Event as EventRow
from sessions_app.models import Session as SessionRow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
APP = "live_page_app"

# The rows of the timeline as markup, without what htmx adds while it swaps
# (its classes, and the empty class attribute it leaves behind) or the
# reader's own marks (selection, a folded invocation).
ROWS_HTML = """() => [...document.querySelectorAll('#timeline > article, #timeline > .inv-header')].map(el => {
  const copy = el.cloneNode(true);
  [copy, ...copy.querySelectorAll('*')].forEach(node => {
    [...node.classList].filter(c => c.startsWith('htmx-') || c === 'selected').forEach(c => node.classList.remove(c));
    if (node.getAttribute('class') === '') node.removeAttribute('class');
    node.removeAttribute('hidden');
  });
  return copy.outerHTML;
})"""
SETTLED = "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
# Two animation frames: an IntersectionObserver has reported by then, so a
# load that was going to cascade has started.
FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))"


def said(author: str, text: str, invocation_id: str, delta: dict | None = None) -> Event:
    return Event(author=author, invocation_id=invocation_id,
                 content=types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)]),
                 actions=EventActions(state_delta=delta or {}))


def settled(page) -> None:
    # A function, not an expression: Playwright polls an expression with eval, which the CSP forbids.
    page.wait_for_function(SETTLED)


def open_live(page, url: str):
    page.goto(url)
    expect(page.locator("#live-label")).to_have_text("live")
    settled(page)
    return page


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def make_session(live_server, app: str, session_id: str, events: list[Event], state: dict | None = None):
    service = DjangoSessionService()

    def make():
        session = service.create_session_sync(app_name=app, user_id="ann", session_id=session_id, state=state or {})
        for event in events:
            service.append_event_sync(session, event)
        return session

    adk = live_server.call(make)
    return adk, SessionRow.objects.get(app__name=app, session_id=session_id).pk


# ---- 1. artifacts saved during a chat appear in every tab -------------------


def test_saved_artifacts_appear_live_in_every_open_tab(page, live_server):
    _, pk = make_session(live_server, "memory_demo", "notes-live", [])
    url = f"{live_server.url}/sessions/{pk}/"
    tabs = [open_live(page, url), open_live(page.context.new_page(), url)]
    for tab in tabs:
        expect(tab.locator("#artifacts-panel")).to_contain_text("No artifacts yet")

    page.fill("#chat-form textarea[name=message]", "note buy oat milk")
    page.click("#chat-send")
    for tab in tabs:
        expect(tab.locator("#artifacts-panel .artifact-list")).to_contain_text("notes/buy-oat-milk.md")
        expect(tab.locator("#artifacts-panel .artifact-preview")).to_contain_text("buy oat milk")
    expect(page.locator("#timeline .event", has_text="Saved notes/buy-oat-milk.md")).to_be_visible()

    # A new version saved by another writer reaches both tabs too, the version picker included.
    live_server.call(DjangoArtifactService().save_artifact_sync, app_name="memory_demo", user_id="ann",
                     session_id="notes-live", filename="notes/buy-oat-milk.md", artifact=types.Part(text="# v2"))
    for tab in tabs:
        expect(tab.locator("#artifacts-panel .artifact-list")).to_contain_text("2 versions")
        expect(tab.locator("#artifacts-panel select[name=version] option")).to_have_count(2)
        expect(tab.locator("#artifacts-panel .artifact-preview")).to_contain_text("v2")
    assert not page.js_errors


def test_the_tab_that_uploads_keeps_its_notice(page, live_server):
    _, pk = make_session(live_server, APP, "upload-live", [])
    page = open_live(page, f"{live_server.url}/sessions/{pk}/")
    panel = page.locator("#artifacts-panel")
    expect(panel).to_contain_text("No artifacts yet")
    panel.locator("input[name=file]").set_input_files({"name": "todo.txt", "mimeType": "text/plain", "buffer": b"walk"})
    panel.get_by_role("button", name="Upload", exact=True).click()
    expect(panel.locator(".mem-notice")).to_have_text("Saved todo.txt version 0.")
    page.wait_for_function("() => document.querySelector('#artifacts-live[data-artifact]')")  # the push arrived
    settled(page)
    expect(panel.locator(".mem-notice")).to_have_text("Saved todo.txt version 0.")


# ---- 2. a rewind marks the rows it undid, in every tab ----------------------


def test_a_rewind_marks_the_undone_rows_live_in_every_tab(page, live_server):
    events = [said("user", "hi", "inv-1"), said("planner", "hello", "inv-1", {"destination": "Oslo"}),
              said("user", "again", "inv-2"), said("planner", "once more", "inv-2", {"destination": "Rome"})]
    _, pk = make_session(live_server, "trip_planner", "rewind-live", events)
    url = f"{live_server.url}/sessions/{pk}/"
    tabs = [open_live(page, url), open_live(page.context.new_page(), url)]

    page.locator("#event-3 button", has_text="rewind").click()
    page.click("#rewind-confirm")
    for tab in tabs:
        expect(tab.locator("#event-5")).to_contain_text("rewind before inv-2")
        for seq in (3, 4):
            expect(tab.locator(f"#event-{seq} .badge", has_text="rewound")).to_be_visible()
            expect(tab.locator(f"#event-{seq}")).to_have_css("opacity", "0.6")
        expect(tab.locator("#event-2 .badge", has_text="rewound")).to_have_count(0)
    settled(tabs[1])
    live = tabs[1].evaluate(ROWS_HTML)
    tabs[1].reload()
    settled(tabs[1])
    assert tabs[1].evaluate(ROWS_HTML) == live


# ---- 3. a call row gets its response as it arrives --------------------------


def test_a_call_row_is_paired_with_its_response_live_as_on_reload(page, live_server):
    adk, pk = make_session(live_server, APP, "pairing-live", [said("user", "weather?", "inv-1")])
    page = open_live(page, f"{live_server.url}/sessions/{pk}/")
    call = types.Part(function_call=types.FunctionCall(id="call-1", name="weather", args={"city": "Oslo"}))
    reply = types.Part(function_response=types.FunctionResponse(id="call-1", name="weather", response={"sky": "snow"}))
    append = DjangoSessionService().append_event_sync
    live_server.call(append, adk, Event(author="bot", invocation_id="inv-1", content=types.Content(role="model", parts=[call])))
    expect(page.locator("#event-2 .call")).to_contain_text("weather")
    live_server.call(append, adk, Event(author="bot", invocation_id="inv-1", content=types.Content(role="user", parts=[reply])))
    expect(page.locator("#event-3 .response .paired")).to_contain_text("to call weather")
    expect(page.locator("#event-2 .call .paired")).to_contain_text("response:")
    expect(page.locator("#event-2 .call .paired")).to_contain_text("snow")
    settled(page)
    live = page.evaluate(ROWS_HTML)
    page.reload()
    settled(page)
    assert page.evaluate(ROWS_HTML) == live
    assert not page.js_errors


def test_a_call_on_an_older_page_is_paired_with_its_response_on_a_newer_one(page, live_server):
    call = types.Part(function_call=types.FunctionCall(id="call-1", name="weather", args={"city": "Oslo"}))
    reply = types.Part(function_response=types.FunctionResponse(id="call-1", name="weather", response={"sky": "snow"}))
    events = [Event(author="bot", invocation_id="inv-1", content=types.Content(role="model", parts=[call])),
              Event(author="bot", invocation_id="inv-1", content=types.Content(role="user", parts=[reply]))]
    events += [said("bot", f"chat {i}", "inv-2") for i in range(timeline.FIRST_PAGE - 1)]  # #1 on the older page
    _, pk = make_session(live_server, APP, "pairing-pages", events)
    page.goto(f"{live_server.url}/sessions/{pk}/")
    expect(page.locator("#event-2 .response .paired")).to_contain_text("to call weather")
    page.evaluate("() => { document.getElementById('timeline').scrollTop = 0; }")  # "load older"
    expect(page.locator("#event-1 .call .paired")).to_contain_text("response:")


# ---- 4. "load older": one page per reach of the top, the reader's place kept --


def _long_session() -> int:
    key = SessionKey(APP, "ann", "long-live")
    session = services.session_create(app_name=key.app_name, user_id=key.user_id, session_id=key.session_id,
                                      state={"topic": "cats"})
    for i in range(1, 667):
        services.event_append(key=key, event=said("agent", f"message {i}", f"inv-{i // 20}"))
    return session.pk


OFFSET = """seq => document.getElementById('event-' + seq).getBoundingClientRect().top
  - document.getElementById('timeline').getBoundingClientRect().top"""
# Scrolls to the top and measures where the reader's row is, in one go: no swap can come in between.
TO_TOP = f"seq => {{ document.getElementById('timeline').scrollTop = 0; return ({OFFSET})(seq); }}"
COUNT_LOADS = """() => { window.olderLoads = 0; document.body.addEventListener('htmx:beforeRequest', e => {
  if (e.detail.elt.closest('#load-older')) window.olderLoads++; }); }"""


def test_reaching_the_top_loads_one_older_page_and_keeps_the_readers_place(page, live_server):
    pk = live_server.call(_long_session)
    assert EventRow.objects.filter(session_id=pk).count() == 666
    page = open_live(page, f"{live_server.url}/sessions/{pk}/")
    page.evaluate(COUNT_LOADS)
    rows = page.locator("#timeline article.event")
    first = timeline.FIRST_PAGE
    expect(rows).to_have_count(first)  # the first screen; older pages are of PAGE_SIZE

    for loads in (1, 2):
        loaded, reading = first + loads * timeline.PAGE_SIZE, 666 - rows.count() + 1  # the top row before the load
        before = page.evaluate(TO_TOP, reading)
        expect(rows).to_have_count(loaded)
        settled(page)
        page.wait_for_function(FRAMES)
        settled(page)
        assert page.evaluate("window.olderLoads") == loads, "loading older pages cascaded"
        assert rows.count() == loaded
        assert abs(page.evaluate(OFFSET, reading) - before) <= 1, "the reader lost their place"
        assert page.evaluate("document.getElementById('timeline').scrollTop") > 0
    assert not page.js_errors


# ---- 5. the view lives in the address -----------------------------------------


def test_the_selected_event_key_history_and_filters_are_in_the_address(page, live_server):
    events = [said("user", "hello", "inv-1"),
              said("agent", "welcome", "inv-1", {"user:tier": "gold", "topic": "cats"}),
              said("user", "more", "inv-2"),
              said("agent", "upgraded", "inv-2", {"user:tier": "platinum"})]
    _, pk = make_session(live_server, APP, "address-live", events)
    page = open_live(page, f"{live_server.url}/sessions/{pk}/")

    page.locator("#event-2 .head").click()
    expect(page.locator("#state-panel")).to_contain_text("State as of #2")
    expect(page).to_have_url(f"{live_server.url}/sessions/{pk}/?at=2")
    settled(page)
    page.locator("#state-panel").get_by_role("link", name="user:tier").click()
    expect(page.locator("#key-history")).to_contain_text("History of user:tier")
    assert query(page) == {"at": ["2"], "key": ["user:tier"]}
    settled(page)
    page.select_option("#timeline-filters select[name=author]", "agent")
    expect(page.locator("#timeline article.event[data-seq='1']")).to_have_count(0)
    settled(page)
    assert query(page) == {"at": ["2"], "key": ["user:tier"], "author": ["agent"]}
    expect(page.locator("#event-2")).to_have_class("event selected")  # still selected after the filter

    # Opening the address restores exactly that view.
    shared = page.context.new_page()
    shared.goto(page.url)
    settled(shared)
    expect(shared.locator("#event-2")).to_have_class("event selected")
    expect(shared.locator("#event-2")).to_be_in_viewport()
    expect(shared.locator("#state-panel")).to_contain_text("State as of #2")
    expect(shared.locator("#state-panel tr.hl[data-key='user:tier']")).to_contain_text("gold")
    expect(shared.locator("#key-history")).to_contain_text("History of user:tier")
    expect(shared.locator("#timeline-filters select[name=author]")).to_have_value("agent")
    expect(shared.locator("#timeline article.event[data-seq='1']")).to_have_count(0)
    expect(shared.locator("#live-label")).to_have_text("live")  # the newest page: still live

    # Back and forward walk the same steps.
    page.go_back()
    expect(page.locator("#timeline-filters select[name=author]")).to_have_value("")
    expect(page.locator("#event-1")).to_be_visible()
    expect(page.locator("#event-2")).to_have_class("event selected")
    page.go_back()
    expect(page.locator("#key-history")).not_to_contain_text("History of")
    expect(page.locator("#state-panel")).to_contain_text("State as of #2")
    page.go_back()
    expect(page.locator("#state-panel")).to_contain_text("State now")
    expect(page.locator("#timeline .event.selected")).to_have_count(0)
    page.go_forward()
    expect(page.locator("#state-panel")).to_contain_text("State as of #2")
    expect(page.locator("#event-2")).to_have_class("event selected")
    assert query(page) == {"at": ["2"]}
    assert not page.js_errors


def test_an_address_with_an_older_event_opens_the_page_that_holds_it(page, live_server):
    pk = live_server.call(_long_session)
    page.goto(f"{live_server.url}/sessions/{pk}/?at=5&key=topic")
    settled(page)
    expect(page.locator("#event-5")).to_have_class("event selected")
    expect(page.locator("#event-5")).to_be_in_viewport()
    expect(page.locator("#state-panel")).to_contain_text("State as of #5")
    expect(page.locator("#key-history")).to_contain_text("History of topic")
    expect(page.locator("#snapshot-note")).to_contain_text("ends at #5")


@pytest.mark.parametrize("at", ["999", "-1", "x"])
def test_an_address_naming_no_event_is_a_404(client, live_server, at):
    _, pk = make_session(live_server, APP, f"missing-{at}", [said("user", "hi", "inv-1")])
    assert client.get(f"/sessions/{pk}/", {"at": at}).status_code == 404


# ---- 6. Enter sends, Shift+Enter makes a new line -----------------------------


def test_enter_sends_the_message_and_shift_enter_adds_a_line(page, live_server):
    _, pk = make_session(live_server, "trip_planner", "enter-live", [])
    page = open_live(page, f"{live_server.url}/sessions/{pk}/")
    box = page.locator("#chat-form textarea[name=message]")
    box.click()
    box.type("Hi there!")
    box.press("Shift+Enter")
    box.type("second line")
    expect(box).to_have_value("Hi there!\nsecond line")
    assert EventRow.objects.filter(session_id=pk).count() == 0

    box.press("Enter")
    expect(page.locator("#timeline .event", has_text="second line")).to_be_visible()
    expect(page.locator("#chat-form textarea[name=message]")).to_have_value("")
    assert EventRow.objects.filter(session_id=pk, author="user").count() == 1
    assert not page.js_errors


def test_a_long_key_history_shows_its_older_changes_on_request(page, live_server, monkeypatch):
    monkeypatch.setattr(session_views, "KEY_HISTORY_PAGE", 2)  # the live server runs in this process
    key = SessionKey(APP, "ann", "many-changes")

    def make() -> int:
        session = services.session_create(app_name=APP, user_id="ann", session_id=key.session_id, state={})
        for n in range(5):
            services.event_append(key=key, event=Event(author="agent", invocation_id=f"inv-{n}",
                                                       actions=EventActions(state_delta={"count": n})))
        return session.pk
    pk = live_server.call(make)
    page.goto(f"{live_server.url}/sessions/{pk}/?key=count")
    rows = page.locator("#key-history tr")
    expect(rows.first).to_contain_text("#5")
    expect(rows).to_have_count(3)  # two changes and the button
    page.get_by_role("button", name="older changes").click()
    expect(rows).to_have_count(5)
    page.get_by_role("button", name="older changes").click()
    expect(rows).to_have_count(5)
    expect(rows.last).to_contain_text("#1")
    expect(page.get_by_role("button", name="older changes")).to_have_count(0)
    assert not page.js_errors
