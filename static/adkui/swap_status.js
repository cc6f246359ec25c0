/* htmx leaves error answers unswapped. An element with data-swap-status="400 413"
   has answers with those statuses swapped in all the same (a form that answers
   a refusal with itself and the error). htmx's hx-on would say this inline, but
   it needs eval, which the Content-Security-Policy forbids.
   A fragment may load this itself, so it works on any page: it runs once. */
(function () {
  "use strict";
  if (window.adkuiSwapStatus) return;
  window.adkuiSwapStatus = true;
  document.addEventListener("htmx:beforeSwap", function (e) {
    const holder = e.target.closest && e.target.closest("[data-swap-status]");
    if (holder && holder.dataset.swapStatus.split(/\s+/).indexOf(String(e.detail.xhr.status)) !== -1) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
})();
