// The owner's console: the tap delay, countdowns and live updates. The
// pages work without it (the server checks the tap delay too).
(function () {
  'use strict';
  var root = document.getElementById('pending');
  var tap = root ? parseInt(root.dataset.tapMs, 10) || 400 : 400;
  var t0 = performance.now();

  // A tap on a card counts only once the card was on screen for the
  // delay: earlier submits (a click, Enter on the focused Deny) are dropped.
  document.querySelectorAll('form.answer').forEach(function (f) {
    f.addEventListener('submit', function (e) {
      if (performance.now() - t0 < tap) {
        e.preventDefault();
        f.dataset.early = String((parseInt(f.dataset.early, 10) || 0) + 1);
      }
    });
    setTimeout(function () { f.dataset.armed = '1'; }, tap);
  });

  var lefts = document.querySelectorAll('.countdown .left');
  if (lefts.length) {
    setInterval(function () {
      var gone = performance.now() - t0;
      lefts.forEach(function (s) {
        var ms = parseInt(s.dataset.msLeft, 10) - gone;
        s.textContent = String(Math.max(0, Math.ceil(ms / 1000)));
      });
    }, 250);
  }

  // New or answered cards: reload (the server renders them).
  if (root) {
    setInterval(function () {
      fetch('/live.json', { credentials: 'same-origin', cache: 'no-store' })
        .then(function (r) { return r.json(); })
        .then(function (j) { if (j.v !== root.dataset.version) { location.reload(); } })
        .catch(function () {});
    }, 1000);
  }
})();
