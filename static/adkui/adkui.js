/* adkui: the few behaviours htmx attributes do not cover. No build step.
   The Content-Security-Policy allows no inline script, on*="" handler, style=""
   or eval (so no hx-on, and no hx-trigger filter), so what templates used to
   say inline is said here, by data attributes:
   data-row-click (a row triggers "row-click" for its hx-trigger, unless a link
   or control inside it was clicked), data-close="selector, ..." (removes the
   nearest ancestor matching the first selector that matches), data-confirm="..."
   (a plain form asks first), data-autosubmit (a select submits its form). */
(function () {
  "use strict";

  const INTERACTIVE = "a,button,summary,input,select,textarea,pre";

  document.addEventListener("click", function (e) {
    const row = e.target.closest("[data-row-click]");
    const inner = e.target.closest(INTERACTIVE);
    if (row && !(inner && row.contains(inner)) && window.htmx) htmx.trigger(row, "row-click");
  });

  document.addEventListener("click", function (e) {
    const closer = e.target.closest("[data-close]");
    if (!closer) return;
    const selectors = closer.dataset.close.split(",");
    for (let i = 0; i < selectors.length; i++) {
      const box = closer.closest(selectors[i].trim());
      if (box) { box.remove(); return; }
    }
  });

  document.addEventListener("submit", function (e) {
    const message = e.target.dataset && e.target.dataset.confirm;
    if (message && !window.confirm(message)) e.preventDefault();
  });

  document.addEventListener("change", function (e) {
    if (e.target.matches("select[data-autosubmit]") && e.target.form) e.target.form.requestSubmit();
  });

  // A refused htmx request (403: the user's role does not allow it) would
  // otherwise do nothing visible.
  document.addEventListener("htmx:responseError", function (e) {
    if (e.detail.xhr.status !== 403) return;
    const main = document.getElementById("main");
    if (!main) return;
    let note = document.getElementById("refused");
    if (!note) {
      note = document.createElement("p");
      note.id = "refused";
      note.className = "card is-error";
      note.setAttribute("role", "alert");
      main.prepend(note);
    }
    note.textContent = "Not allowed: your role does not allow this.";
  });

  // The newest event this page holds: a reconnecting websocket resumes after it.
  function lastSeq() {
    let max = -1;
    document.querySelectorAll("#timeline [data-seq]").forEach(function (el) {
      const n = parseInt(el.dataset.seq, 10);
      if (n > max) max = n;
    });
    return max;
  }

  // htmx's ws extension keeps the URL it first connected with; rewrite `after=`
  // on every (re)connect so the server sends exactly what this page missed.
  document.addEventListener("DOMContentLoaded", function () {
    if (!window.htmx) return;
    const create = htmx.createWebSocket;
    htmx.createWebSocket = function (url) {
      const seq = lastSeq();
      if (seq >= 0 && url.indexOf("after=") !== -1) url = url.replace(/after=\d+/, "after=" + seq);
      return create ? create(url) : new WebSocket(url);
    };
  });

  // The timeline scrolls by itself, newest at the bottom like a chat: open at
  // the newest event (or the one asked for with ?at=), and follow new events
  // while the reader is at the bottom.
  function timeline() { return document.getElementById("timeline"); }
  function nearBottom(el) { return el.scrollHeight - el.scrollTop - el.clientHeight < 80; }
  let follow = true;
  document.addEventListener("DOMContentLoaded", function () {
    const el = timeline();
    if (!el) return;
    const at = new URLSearchParams(location.search).get("at");
    const target = at !== null && document.getElementById("event-" + at);
    if (target) { target.classList.add("selected"); target.scrollIntoView({block: "center"}); }
    else el.scrollTop = el.scrollHeight;
  });
  document.addEventListener("htmx:wsBeforeMessage", function () {
    const el = timeline();
    follow = !!el && nearBottom(el);
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    const el = timeline();
    if (el && follow) el.scrollTop = el.scrollHeight;
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    // A new filter or page of the timeline: start at its newest event again.
    if (e.detail.target && e.detail.target.id === "timeline-section") {
      const el = timeline();
      if (el) el.scrollTop = el.scrollHeight;
    }
  });

  function setLive(on, text) {
    const dot = document.getElementById("live-dot");
    const label = document.getElementById("live-label");
    if (dot) dot.classList.toggle("live", on);
    if (label) label.textContent = text;
  }
  document.addEventListener("htmx:wsOpen", function () { setLive(true, "live"); });
  document.addEventListener("htmx:wsClose", function () { setLive(false, "reconnecting…"); });
  document.addEventListener("htmx:wsAfterMessage", function () {
    const count = document.getElementById("event-count");
    const seq = lastSeq();
    if (count && seq > parseInt(count.textContent, 10)) count.textContent = seq;
  });

  function setInvocationHidden(invocation, hidden) {
    document.querySelectorAll("#timeline .event[data-invocation]").forEach(function (el) {
      if (el.dataset.invocation === invocation) el.hidden = hidden;
    });
    document.querySelectorAll("#timeline .inv-toggle").forEach(function (b) {
      if (b.dataset.invocation === invocation) {
        b.setAttribute("aria-expanded", String(!hidden));
        b.textContent = hidden ? "▸" : "▾";
      }
    });
  }

  document.addEventListener("click", function (e) {
    const toggle = e.target.closest(".inv-toggle");
    if (toggle) {
      setInvocationHidden(toggle.dataset.invocation, toggle.getAttribute("aria-expanded") === "true");
      return;
    }
    if (e.target.closest("[data-collapse-all]")) {
      const seen = new Set();
      document.querySelectorAll("#timeline .inv-toggle").forEach(function (b) { seen.add(b.dataset.invocation); });
      seen.forEach(function (inv) { setInvocationHidden(inv, true); });
      return;
    }
    const tab = e.target.closest("[data-scope-tab]");
    if (tab) {
      const panel = tab.closest(".state-panel");
      panel.querySelectorAll("[data-scope-tab]").forEach(function (b) { b.setAttribute("aria-selected", String(b === tab)); });
      panel.querySelectorAll("tr.scope-row").forEach(function (row) {
        row.hidden = tab.dataset.scopeTab !== "" && row.dataset.scope !== tab.dataset.scopeTab;
      });
      return;
    }
    const row = e.target.closest("#timeline .event");
    if (row && !e.target.closest("a,button,summary,input,select,textarea,pre")) {
      document.querySelectorAll("#timeline .event.selected").forEach(function (el) { el.classList.remove("selected"); });
      row.classList.add("selected");
    }
  });
})();
