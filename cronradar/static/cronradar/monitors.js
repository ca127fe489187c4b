// The monitors list (templates/dashboard/monitors.html). Live refresh: fetch the
// rows again every 10 s while the tab is visible (the page works without it). The
// answer carries the time it is "as of", in the person's zone (X-As-Of); an answer
// without it is not the rows (the session ended and the sign-in page came back):
// reload, which shows the sign-in page. An error stops it. The counts per status
// (X-Counts: "new=0,up=5,...") and the title (X-Title) come with the rows.
function showCounts(counts, title) {
  var all = 0;
  counts.split(",").forEach(function (pair) {
    var parts = pair.split("="), el = document.querySelector('[data-count="' + parts[0] + '"]');
    if (parts.length !== 2 || !el) return;
    el.textContent = parts[1]; all += Number(parts[1]);
  });
  var total = document.querySelector('[data-count="all"]');
  if (total && counts) total.textContent = all;
  if (title) document.title = title + " · CronRadar";
}
var refresh = setInterval(function () {
  if (document.hidden) return;
  var url = new URL(location.href); url.searchParams.set("fragment", "rows");
  fetch(url, {credentials: "same-origin"}).then(function (r) {
    var asOf = r.headers.get("X-As-Of");
    if (r.ok && asOf && !r.redirected) {
      return r.text().then(function (html) {
        document.getElementById("monitor-rows").innerHTML = html;
        document.getElementById("as-of").textContent = asOf;
        showCounts(r.headers.get("X-Counts") || "", r.headers.get("X-Title"));
      });
    }
    clearInterval(refresh);
    if (r.redirected || r.ok || r.status === 401 || r.status === 403) { location.reload(); return; }
    document.getElementById("refresh-note").textContent =
      "Live refresh stopped (the server answered " + r.status + "): reload the page.";
  }).catch(function () {});  // the network: try again next time
}, 10000);
