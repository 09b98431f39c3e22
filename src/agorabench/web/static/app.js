// Polls the participant's state while the other player moves, and counts down a turn's time.
(function () {
  var body = document.body;
  var url = body.dataset.state;
  if (url && body.dataset.poll === "yes") {
    var version = body.dataset.version, stage = body.dataset.stage;
    setInterval(function () {
      fetch(url, {credentials: "same-origin"}).then(function (r) { return r.json(); }).then(function (s) {
        if (String(s.version) !== version || s.stage !== stage) { location.reload(); }
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
      if (n === 0) { setTimeout(function () { location.reload(); }, 1200); }
    }, 1000);
  }
  var elapsed = document.getElementById("elapsed");
  if (elapsed) {
    var since = Date.now() / 1000 - (parseFloat(elapsed.dataset.start) || 0);  // seconds waited when the page was made
    var tick = function () { elapsed.textContent = String(Math.max(0, Math.round(Date.now() / 1000 - since))); };
    tick();
    setInterval(tick, 1000);
  }
})();
