// Times on Fusebox's pages are written in UTC (ISO 8601) in the title of
// what shows them ("12 min ago"). This shows them on hover in the
// viewer's own time zone too, with UTC beside it. Without JavaScript the
// title stays UTC.
(function () {
  var iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
  var local = new Intl.DateTimeFormat(undefined, {
    weekday: "short", year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZoneName: "short"
  });
  function localize(root) {
    var els = root.querySelectorAll("[title]");
    for (var i = 0; i < els.length; i++) {
      var t = els[i].getAttribute("title");
      if (!iso.test(t)) continue;
      var d = new Date(t);
      if (isNaN(d)) continue;
      els[i].setAttribute("title", local.format(d) + " · " + t.replace("T", " ").replace("Z", " UTC"));
      els[i].setAttribute("data-local-time", "");
    }
  }
  document.addEventListener("DOMContentLoaded", function () { localize(document); });
  document.addEventListener("htmx:afterSwap", function (e) { localize(e.target); });
})();
