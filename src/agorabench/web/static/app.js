// Polls the participant's state while the other player moves, and counts down a turn's time.
// Once a form is being sent the page never reloads itself: the reload would cut the form's
// navigation short (the answer's page replaced by a reload racing it, or the request dropped).
(function () {
  var body = document.body;
  var url = body.dataset.state;
  var sending = false;
  document.addEventListener("submit", function () { sending = true; });
  if (url && body.dataset.poll === "yes") {
    var version = body.dataset.version, stage = body.dataset.stage;
    setInterval(function () {
      if (sending) { return; }
      fetch(url, {credentials: "same-origin"}).then(function (r) { return r.json(); }).then(function (s) {
        if (!sending && (String(s.version) !== version || s.stage !== stage)) { location.reload(); }
      }).catch(function () {});
    }, 700);
  }
  var left = body.dataset.remaining;
  var timer = document.getElementById("timer");
  var alert = document.getElementById("timer-alert");
  if (left !== "" && timer) {
    var n = parseInt(left, 10);
    setInterval(function () {
      n = Math.max(0, n - 1);
      timer.textContent = String(n);
      if (n <= 10) { document.getElementById("timer-box").classList.add("low"); }
      // screen readers hear the time only when it matters: at 30 and 10 seconds left
      if (alert && (n === 30 || n === 10)) { alert.textContent = n + " seconds left to answer."; }
      if (n === 0) { setTimeout(function () { if (!sending) { location.reload(); } }, 1200); }
    }, 1000);
  }
  // when the computer will answer for a member who keeps the group waiting, in the person's own
  // clock (counted from the seconds left when the page was made, so a device whose clock is off
  // still shows the right moment; without scripts the page says it in UTC), the time left counted down
  var at = document.getElementById("takeover-at");
  var takeLeft = document.getElementById("takeover-left");
  if (at) {
    var end = Date.now() + (parseFloat(at.dataset.left) || 0) * 1000;
    at.textContent = new Date(end).toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", second: "2-digit"});
    var count = function () {
      var n = Math.round((end - Date.now()) / 1000);
      var m = Math.floor(n / 60), s = n % 60;
      if (takeLeft) { takeLeft.textContent = n <= 0 ? "any moment now" : (n >= 60 ? "in " + m + " min" + (s ? " " + s + " s" : "") : "in " + n + " s"); }
    };
    count();
    setInterval(count, 1000);
  }
  var elapsed = document.getElementById("elapsed");
  if (elapsed) {
    var since = Date.now() / 1000 - (parseFloat(elapsed.dataset.start) || 0);  // seconds waited when the page was made
    var tick = function () { elapsed.textContent = String(Math.max(0, Math.round(Date.now() / 1000 - since))); };
    tick();
    setInterval(tick, 1000);
  }
})();
// The researcher's desk (dashboard pages with a .desk[data-refresh] block): every few seconds it
// fetches the page again and swaps in only its live parts ([data-live] blocks: the tables), so a
// filter or search being typed is never wiped; the participant search filters the table as the
// researcher types and keeps the text in the address (?q=), so the next refresh keeps it too.
(function () {
  var desk = document.querySelector(".desk[data-refresh]");
  if (!desk) { return; }
  var filter = document.getElementById("participant-filter");
  var applyFilter = function () {
    if (!filter) { return; }
    var q = filter.value.trim().toLowerCase();
    document.querySelectorAll("#participants tr.participant").forEach(function (tr) {
      tr.hidden = q !== "" && (tr.dataset.search || "").indexOf(q) < 0;
    });
  };
  if (filter) {
    filter.addEventListener("input", function () {
      applyFilter();
      var url = new URL(location.href);
      var q = filter.value.trim();
      if (q) { url.searchParams.set("q", q); } else { url.searchParams.delete("q"); }
      history.replaceState(null, "", url.pathname + url.search);
    });
  }
  var seconds = parseInt(desk.dataset.refresh, 10) || 0;
  if (seconds <= 0) { return; }
  var busy = false;
  setInterval(function () {
    if (busy || document.hidden) { return; }
    var active = document.activeElement;
    if (active && active.closest && active.closest("[data-live]")) { return; }  // a button in a table has focus
    busy = true;
    fetch(location.href, {credentials: "same-origin"}).then(function (r) {
      if (!r.ok) { throw new Error("HTTP " + r.status); }
      return r.text();
    }).then(function (html) {
      var fresh = new DOMParser().parseFromString(html, "text/html");
      document.querySelectorAll("[data-live][id]").forEach(function (el) {
        var next = fresh.getElementById(el.id);
        if (next) { el.replaceWith(document.adoptNode(next)); }
      });
      applyFilter();
      desk.dataset.refreshed = String((parseInt(desk.dataset.refreshed, 10) || 0) + 1);
    }).catch(function () {}).then(function () { busy = false; });
  }, seconds * 1000);
})();
