// Keeps a deployment's page current while its status changes: polls the page's live part and swaps it
// in when its version changed (no reload, no build step). Stops once the deployment is final.
(function () {
  "use strict";
  var region = document.querySelector("[data-live-url]");
  if (!region) { return; }
  var interval = parseInt(region.getAttribute("data-live-interval") || "3000", 10);
  function typing() {
    var active = document.activeElement;
    return active && region.contains(active) && active.tagName === "TEXTAREA" && active.value !== "";
  }
  function poll() {
    if (region.getAttribute("data-final") === "true") { return; }
    if (typing()) { window.setTimeout(poll, interval); return; }
    fetch(region.getAttribute("data-live-url"), { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (live) {
        if (live && live.version !== region.getAttribute("data-version")) {
          region.innerHTML = live.html;
          region.setAttribute("data-version", live.version);
          region.setAttribute("data-final", live.final ? "true" : "false");
        }
      })
      .catch(function () { /* the next poll tries again */ })
      .then(function () { window.setTimeout(poll, interval); });
  }
  window.setTimeout(poll, interval);
}());
