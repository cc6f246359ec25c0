/* adkui: the few behaviours htmx attributes do not cover. No build step.
   The Content-Security-Policy allows no inline script, on*="" handler, style=""
   or eval (so no hx-on, and no hx-trigger filter), so what templates used to
   say inline is said here, by data attributes:
   data-row-click (a row triggers "row-click" for its hx-trigger, unless a link
   or control inside it was clicked), data-close="selector, ..." (removes the
   nearest ancestor matching the first selector that matches), data-confirm="..."
   (a plain form asks first), data-autosubmit (a select submits its form),
   data-enter-sends="field" (on a form: Enter in that field submits it, Shift+Enter
   makes a new line), data-address="at=5" / "key=" (a click also puts that into the
   address, an empty value takes it out: see "The view in the address" below). */
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

  // While an input method composes a word, Enter confirms the word, not the message.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Enter" || e.shiftKey || e.isComposing || e.keyCode === 229) return;
    const form = e.target.form;
    if (!form || !form.dataset.enterSends || e.target.name !== form.dataset.enterSends) return;
    e.preventDefault();
    form.requestSubmit();
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

  // The newest row a socket's page holds, for a reconnecting websocket to resume
  // after: the socket's element names its rows (data-resume, a selector) and the
  // data attribute that orders them (data-resume-by); -1 when it holds none.
  function newestRow(socket) {
    let max = -1;
    if (!socket) return max;
    const by = socket.dataset.resumeBy;
    document.querySelectorAll(socket.dataset.resume).forEach(function (el) {
      const n = parseInt(el.dataset[by], 10);
      if (n > max) max = n;
    });
    return max;
  }
  function lastSeq() { return newestRow(document.querySelector("[ws-connect][data-resume-by=seq]")); }

  // htmx's ws extension keeps the URL it first connected with; rewrite `after=`
  // on every (re)connect so the server sends exactly what this page missed.
  document.addEventListener("DOMContentLoaded", function () {
    if (!window.htmx) return;
    const create = htmx.createWebSocket;
    htmx.createWebSocket = function (url) {
      const socket = Array.prototype.find.call(document.querySelectorAll("[ws-connect][data-resume]"), function (el) {
        return url.indexOf(el.getAttribute("ws-connect").split("?")[0]) !== -1;
      });
      const newest = newestRow(socket);
      if (newest >= 0 && url.indexOf("after=") !== -1) url = url.replace(/after=\d+/, "after=" + newest);
      return create ? create(url) : new WebSocket(url);
    };
  });

  // The timeline scrolls by itself, newest at the bottom like a chat: open at
  // the newest event (or the one asked for with ?at=), and follow new events
  // while the reader is at the bottom.
  function timeline() { return document.getElementById("timeline"); }
  function nearBottom(el) { return el.scrollHeight - el.scrollTop - el.clientHeight < 80; }
  let follow = true;
  // Select (and show) the event the address names, else show the newest one.
  function showAddressed() {
    const el = timeline();
    if (!el) return;
    if (!selectRow(new URLSearchParams(location.search).get("at"), true)) el.scrollTop = el.scrollHeight;
  }
  document.addEventListener("DOMContentLoaded", showAddressed);
  document.addEventListener("htmx:wsBeforeMessage", function () {
    const el = timeline();
    follow = !!el && nearBottom(el);
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    const el = timeline();
    if (el && follow) el.scrollTop = el.scrollHeight;
  });
  document.addEventListener("htmx:afterSettle", function (e) {
    // New filters: put them in the address, and start at the selected event or the newest one.
    // (After settling: htmx resets the attributes of rows it kept until then, the selection too.)
    if (e.detail.target && e.detail.target.id === "timeline-section") {
      go(filtersOf(document.getElementById("timeline-filters")));
      showAddressed();
    }
  });

  // "Load older" puts a page above the rows the reader sees. Keep the row at the
  // top of the view where it was, so the reader keeps their place and the next
  // "load older" (at the top of the new page, far above) waits until they scroll
  // up to it: one page per reach of the top, never a cascade. The scroll is set
  // on swap, before htmx settles and starts watching the new button.
  let anchor = null;
  function topRow(el) {
    const top = el.getBoundingClientRect().top;
    const rows = el.querySelectorAll(":scope > article[data-seq], :scope > .inv-header");
    for (let i = 0; i < rows.length; i++) {
      if (rows[i].getBoundingClientRect().bottom > top) return rows[i];
    }
    return null;
  }
  document.addEventListener("htmx:beforeSwap", function (e) {
    const el = timeline();
    if (!el || !e.detail.target || e.detail.target.id !== "load-older") return;
    const row = topRow(el);
    anchor = row && {row: row, top: row.getBoundingClientRect().top};
  });
  document.addEventListener("htmx:afterSwap", function () {
    const el = timeline();
    if (!anchor || !el) return;
    if (anchor.row.isConnected) el.scrollTop += anchor.row.getBoundingClientRect().top - anchor.top;
    anchor = null;
  });

  function setLive(on, text) {
    const dot = document.getElementById("live-dot");
    const label = document.getElementById("live-label");
    if (dot) dot.classList.toggle("live", on);
    if (label) label.textContent = text;
  }
  let wasClosed = false;
  document.addEventListener("htmx:wsOpen", function () {
    setLive(true, "live");
    // Back after a gap: the rows catch up over the socket, the artifacts panel reloads.
    if (wasClosed) { artifactChange = {all: true}; checkArtifacts(); }
    wasClosed = false;
  });
  document.addEventListener("htmx:wsClose", function () { wasClosed = true; setLive(false, "reconnecting…"); });
  document.addEventListener("htmx:wsAfterMessage", function () {
    const count = document.getElementById("event-count");
    const seq = lastSeq();
    if (count && seq > parseInt(count.textContent, 10)) count.textContent = seq;
  });

  // The app's session list: a live row (or a deleted one) changes the count
  // under it. Rows are counted by id, so a row pushed twice counts once.
  function sessionRowIds() {
    return new Set(Array.prototype.map.call(document.querySelectorAll("#session-rows > .session-row[id]"),
                                            function (row) { return row.id; }));
  }
  let listedRows = null;
  function recountSessions() {
    const label = document.getElementById("session-count");
    if (!label) return;
    const now = sessionRowIds();
    if (listedRows === null) { listedRows = now; return; }
    let count = parseInt(label.dataset.count, 10);
    now.forEach(function (id) { if (!listedRows.has(id)) count++; });
    listedRows.forEach(function (id) { if (!now.has(id)) count--; });
    listedRows = now;
    label.dataset.count = String(count);
    label.textContent = count + " session" + (count === 1 ? "" : "s");
    const none = document.getElementById("no-sessions");
    if (none && now.size) none.remove();
  }
  // Watched, not hooked on htmx events: a deleted row takes its own link (where
  // htmx fires its events) out of the document.
  document.addEventListener("DOMContentLoaded", function () {
    const rows = document.getElementById("session-rows");
    if (!rows || !document.getElementById("session-count")) return;
    recountSessions();
    new MutationObserver(recountSessions).observe(rows, {childList: true});
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
    const row = e.target.closest("#timeline .event[data-seq]");
    if (row && !e.target.closest(INTERACTIVE)) {
      selectRow(row.dataset.seq, false);
      go({at: row.dataset.seq});
    }
  });

  function selectRow(seq, scroll) {
    document.querySelectorAll("#timeline .event.selected").forEach(function (el) { el.classList.remove("selected"); });
    const row = seq !== null && document.getElementById("event-" + seq);
    // Other panels follow the selection (static/runtime_app/graph.js marks the row's graph node).
    document.dispatchEvent(new CustomEvent("adkui:select", {detail: {row: row || null}}));
    if (!row) return false;
    row.classList.add("selected");
    if (scroll) row.scrollIntoView({block: "center"});
    return true;
  }

  // ---- The view in the address ---------------------------------------------
  // ?at=N (the selected event, whose state the panel shows), ?key=K (the open key
  // history) and the timeline filters are kept in the address, one history entry
  // per step, so a link opens this view (the server renders it) and back/forward
  // walk the steps (restored here, without reloading the live page).
  const FILTERS = ["author", "kind", "invocation", "final_only"];

  function sessionPage() { return document.querySelector("[data-session-page]"); }

  // Set (or, for "" and null, remove) parameters of the address: a new history entry.
  function go(changes) {
    if (!sessionPage()) return;
    const url = new URL(location.href);
    Object.keys(changes).forEach(function (name) {
      const value = changes[name];
      if (value === null || value === "") url.searchParams.delete(name);
      else url.searchParams.set(name, value);
    });
    if (url.href !== location.href) history.pushState({adkui: true}, "", url.href);
  }

  function filtersOf(form) {
    const values = {};
    FILTERS.forEach(function (name) {
      const field = form && form.elements[name];
      values[name] = !field ? "" : field.type === "checkbox" ? (field.checked ? field.value : "") : field.value.trim();
    });
    return values;
  }

  function sameFilters(form, params) {
    const shown = filtersOf(form);
    return FILTERS.every(function (name) { return shown[name] === (params.get(name) || ""); });
  }

  document.addEventListener("click", function (e) {
    const link = e.target.closest("[data-address]");
    if (!link) return;
    const changes = {};
    new URLSearchParams(link.dataset.address).forEach(function (value, name) { changes[name] = value; });
    go(changes);
    if ("at" in changes && !changes.at) selectRow(null, false);
  });

  window.addEventListener("popstate", function () {
    const page = sessionPage();
    if (!page || !window.htmx) return;
    const section = document.getElementById("timeline-section");
    // A page cut at an older event is not live: load the address afresh.
    if (section && section.hasAttribute("data-snapshot")) { location.reload(); return; }
    const params = new URLSearchParams(location.search);
    const form = document.getElementById("timeline-filters");
    if (form && !sameFilters(form, params)) {
      const query = new URLSearchParams();
      FILTERS.forEach(function (name) { if (params.get(name)) query.set(name, params.get(name)); });
      htmx.ajax("GET", location.pathname + "?" + query, {target: "#timeline-section", swap: "outerHTML"});
    } else {
      selectRow(params.get("at"), true);
    }
    restorePanels(page, params);
  });

  function restorePanels(page, params) {
    const at = params.get("at") || "";
    const state = document.getElementById("state-panel");
    if (state && state.dataset.stateSeq !== at) {
      htmx.ajax("GET", page.dataset.stateUrl + (at ? "?seq=" + encodeURIComponent(at) : ""), {target: state, swap: "outerHTML"});
    }
    const key = params.get("key") || "";
    const box = document.getElementById("key-history");
    const open = box && box.querySelector("[data-history-key]");
    if (!box || (open ? open.dataset.historyKey : "") === key) return;
    if (key) htmx.ajax("GET", page.dataset.keyHistoryUrl + "?key=" + encodeURIComponent(key), {target: box, swap: "innerHTML"});
    else box.replaceChildren();
  }

  // ---- Artifacts --------------------------------------------------------------
  // memory_app.broadcast pushes #artifacts-live when an artifact this session can
  // read gets a new version (or is deleted). Reload the artifacts panel, keeping
  // the artifact its reader has open (and the version, when they picked one),
  // unless it already shows the change: the tab that uploaded it keeps its notice.
  // While the panel has a request of its own on the way, look again once it settled.
  let artifactChange = null;

  function panelShows(panel, change) {
    const items = Array.prototype.slice.call(panel.querySelectorAll("li[data-artifact]"));
    const item = items.find(function (li) { return li.dataset.artifact === change.name; });
    return change.version === "" ? !item : !!item && item.dataset.latest === change.version;
  }

  function reloadArtifacts(panel) {
    const query = new URLSearchParams();
    const open = panel.querySelector("input[data-open-artifact]");
    const pinned = panel.querySelector("select[data-pinned]");
    if (open) query.set("name", open.value);
    if (open && pinned) query.set("version", pinned.value);
    htmx.ajax("GET", panel.dataset.url + (open ? "?" + query : ""), {target: panel, swap: "outerHTML"});
  }

  function checkArtifacts() {
    const panel = document.getElementById("artifacts-panel");
    if (!artifactChange || !panel || !panel.dataset.url || !window.htmx) return;
    if (panel.classList.contains("htmx-request") || panel.querySelector(".htmx-request")) return;
    const change = artifactChange;
    artifactChange = null;
    if (change.all || !panelShows(panel, change)) reloadArtifacts(panel);
  }

  document.addEventListener("htmx:oobAfterSwap", function (e) {
    const signal = e.target;
    if (!signal || signal.id !== "artifacts-live" || !signal.dataset.artifact) return;
    artifactChange = {name: signal.dataset.artifact, version: signal.dataset.version};
    checkArtifacts();
  });
  document.addEventListener("htmx:afterSettle", checkArtifacts);
})();
