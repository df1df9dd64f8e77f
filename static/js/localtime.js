// Times on Fusebox's pages are written in UTC (ISO 8601) in the title of
// what shows them ("12 min ago"). This shows them on hover in the
// viewer's own time zone too, with UTC beside it, and rewrites the
// instants written out as text in that zone. Without JavaScript both stay
// UTC.
(function () {
  var iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
  var local = new Intl.DateTimeFormat(undefined, {
    weekday: "short", year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZoneName: "short"
  });
  // Instants written as text (<time data-local>) are rewritten in the
  // viewer's zone: "Mon 2 Jan 17:48 GMT+9" (long), "Mon 17:48 GMT+9"
  // (short) or "17:48:05 GMT+9" (clock).
  var hm = { hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short" };
  var parts = {
    long: new Intl.DateTimeFormat(undefined, Object.assign({ weekday: "short", day: "numeric", month: "short" }, hm)),
    short: new Intl.DateTimeFormat(undefined, Object.assign({ weekday: "short" }, hm)),
    clock: new Intl.DateTimeFormat(undefined, Object.assign({ second: "2-digit" }, hm))
  };
  function text(fmt, d) {
    var p = {};
    fmt.formatToParts(d).forEach(function (x) { p[x.type] = x.value; });
    var out = [];
    if (p.weekday) out.push(p.weekday);
    if (p.day) out.push(p.day, p.month);
    out.push(p.hour + ":" + p.minute + (p.second ? ":" + p.second : ""), p.timeZoneName);
    return out.join(" ");
  }
  function localize(root) {
    var times = root.querySelectorAll("time[data-local]");
    for (var j = 0; j < times.length; j++) {
      var fmt = parts[times[j].getAttribute("data-local")];
      var when = new Date(times[j].getAttribute("datetime"));
      if (fmt && !isNaN(when)) times[j].textContent = text(fmt, when);
    }
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
