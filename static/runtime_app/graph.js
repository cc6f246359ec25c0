/* The agent graph (templates/runtime_app/partials/agent_graph.html), live.
   Each timeline row names the graph nodes that produced its event
   (data-node, a JSON list of keys) and, when it is a node's work, the seconds
   it took (data-took); each graph node carries its key (data-node) and counts
   (data-calls, data-seconds), as the server counted them up to event
   #data-stats-seq of the graph. A row newer than that, arriving over the
   websocket, lights its nodes up for a moment and adds to their counts; the
   selected row's nodes are marked. No build step, no inline script (CSP). */
(function () {
  "use strict";

  const LIT_MS = 1600;
  const timers = new WeakMap();

  function graph() { return document.querySelector("[data-agent-graph]"); }

  function keysOf(row) {
    try {
      const keys = JSON.parse(row.dataset.node || "[]");
      return Array.isArray(keys) ? keys.map(String) : [];
    } catch (e) {
      return [];
    }
  }

  function nodesOf(root, keys) {
    return Array.prototype.filter.call(root.querySelectorAll(".graph-node[data-node]"), function (node) {
      return keys.indexOf(node.dataset.node) !== -1;
    });
  }

  // As runtime_app.graph.stats_text says it.
  function statsText(calls, seconds) {
    if (!calls) return "not called";
    const took = seconds < 0.9995 ? (seconds * 1000).toFixed(0) + " ms" : seconds.toFixed(1) + " s";
    return calls + (calls === 1 ? " call" : " calls") + " · " + took;
  }

  function count(node, took) {
    const calls = (parseInt(node.dataset.calls, 10) || 0) + 1;
    const seconds = (parseFloat(node.dataset.seconds) || 0) + took;
    node.dataset.calls = String(calls);
    node.dataset.seconds = seconds.toFixed(6);
    const line = node.querySelector(".graph-stats");
    if (line) line.textContent = statsText(calls, seconds);
  }

  function light(node) {
    if (node.classList.contains("lit")) {  // still flashing: start the flash again
      node.classList.remove("lit");
      void node.getBoundingClientRect();
    }
    node.classList.add("lit");
    clearTimeout(timers.get(node));
    timers.set(node, setTimeout(function () { node.classList.remove("lit"); }, LIT_MS));
  }

  // Rows newer than what the graph has counted: live pushes, a reconnect's catch-up.
  function takeNewRows() {
    const root = graph();
    if (!root || !root.hasAttribute("data-stats-seq")) return;
    let counted = parseInt(root.dataset.statsSeq, 10) || 0;
    const rows = Array.prototype.filter.call(document.querySelectorAll("#timeline .event[data-seq]"), function (row) {
      return parseInt(row.dataset.seq, 10) > counted;
    });
    rows.sort(function (a, b) { return parseInt(a.dataset.seq, 10) - parseInt(b.dataset.seq, 10); });
    rows.forEach(function (row) {
      nodesOf(root, keysOf(row)).forEach(function (node) {
        light(node);
        if ("took" in row.dataset) count(node, parseFloat(row.dataset.took) || 0);
      });
      counted = Math.max(counted, parseInt(row.dataset.seq, 10));
    });
    root.dataset.statsSeq = String(counted);
  }

  function markSelected(row) {
    const root = graph();
    if (!root) return;
    const keys = row ? keysOf(row) : [];
    root.querySelectorAll(".graph-node[data-node]").forEach(function (node) {
      node.classList.toggle("selected", keys.indexOf(node.dataset.node) !== -1);
    });
  }

  document.addEventListener("htmx:wsAfterMessage", takeNewRows);
  document.addEventListener("htmx:afterSettle", takeNewRows);
  // adkui.js announces every selection (a click, ?at= in the address, back/forward).
  document.addEventListener("adkui:select", function (e) { markSelected(e.detail && e.detail.row); });
  document.addEventListener("DOMContentLoaded", function () {
    markSelected(document.querySelector("#timeline .event.selected"));
  });
})();
