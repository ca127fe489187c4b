// The welcome page (templates/dashboard/welcome.html): its latest pings, polled every
// 2 s from the script tag's data-poll URL, and the test ping sent without a reload.
(function () {
  var form = document.getElementById("test-ping"), list = document.getElementById("pings");
  var poll = document.currentScript.dataset.poll;
  function show(pings) {
    list.replaceChildren();
    if (!pings.length) { var none = document.createElement("li"); none.className = "muted"; none.textContent = "No ping yet."; list.append(none); }
    pings.forEach(function (p) {
      var li = document.createElement("li");
      li.textContent = p.at + " " + p.kind + " (" + p.method + (p.user_agent ? ", " + p.user_agent : "") + ")";
      list.append(li);
    });
  }
  function refresh() { fetch(poll, {headers: {Accept: "application/json"}}).then(function (r) { return r.ok ? r.json() : null; }).then(function (d) { if (d) { show(d.pings); } }); }
  document.getElementById("ping-live").hidden = false;
  setInterval(refresh, 2000);
  if (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      fetch(form.action, {method: "POST", body: new FormData(form), headers: {Accept: "application/json"}})
        .then(function (r) { return r.json(); }).then(function (d) { if (d.pings) { show(d.pings); } });
    });
  }
})();
