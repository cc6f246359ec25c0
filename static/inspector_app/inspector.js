/* inspector_app: the inspector's page of its own (no side panel to close it from).
   Its close buttons (data-close, which adkui.js answers by removing the
   inspector) would leave a blank page there: on that page they go back to
   where the inspector belongs, the page's data-back (the session page). This
   listens in the capture phase, so adkui.js never sees those clicks. */
(function () {
  "use strict";
  document.addEventListener("click", function (e) {
    const closer = e.target.closest("[data-close]");
    const page = closer && closer.closest(".inspector-page[data-back]");
    if (!page) return;
    e.stopPropagation();
    e.preventDefault();
    window.location.assign(page.dataset.back);
  }, true);
})();
