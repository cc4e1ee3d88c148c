// While a batch in view runs, the server marks <body data-refresh="SECONDS">: fetch this page
// again and swap its <main>, so counts move without a reload (and scrolling stays put).
// Once nothing in view runs, the fetched page has no data-refresh and polling stops.
"use strict";
(function () {
  function seconds() { return Number(document.body.dataset.refresh || 0); }
  function schedule() { if (seconds() > 0) { window.setTimeout(refresh, seconds() * 1000); } }
  async function refresh() {
    try {
      const response = await fetch(window.location.href, { cache: "no-store" });
      if (response.ok) {
        const page = new DOMParser().parseFromString(await response.text(), "text/html");
        const now = document.querySelector("main"), next = page.querySelector("main");
        if (now.innerHTML !== next.innerHTML) { now.replaceWith(next); }  // unchanged: leave it be
        document.body.dataset.refresh = page.body.dataset.refresh || "";
      }
    } catch (error) {
      // The server may be restarting: keep the page and try again.
    }
    schedule();
  }
  schedule();
})();
