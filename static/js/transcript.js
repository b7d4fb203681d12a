// The transcript: an address naming an event (#event-5, as evidence links do) opens that
// tool call, so the reader lands on its arguments and result, not on a closed summary.
(function () {
  "use strict";
  function openNamedEvent() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    if (!/^event-\d+$/.test(id)) return;
    var event = document.getElementById(id);
    var details = event && event.querySelector(":scope > details");
    if (details) details.open = true;
  }
  window.addEventListener("hashchange", openNamedEvent);
  document.addEventListener("DOMContentLoaded", openNamedEvent);
})();
