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
  if (left !== "" && timer) {
    var n = parseInt(left, 10);
    setInterval(function () {
      n = Math.max(0, n - 1);
      timer.textContent = String(n);
      if (n === 0) { setTimeout(function () { location.reload(); }, 1200); }
    }, 1000);
  }
})();
