(function () {
  var all = document.querySelectorAll("details.sc");
  function set(open) { for (var i = 0; i < all.length; i++) { all[i].open = open; } }
  var e = document.getElementById("expand-all"), c = document.getElementById("collapse-all");
  e.hidden = false; c.hidden = false;
  e.addEventListener("click", function () { set(true); });
  c.addEventListener("click", function () { set(false); });
})();
