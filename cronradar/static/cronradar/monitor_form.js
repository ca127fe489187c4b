// The monitor form's live schedule preview: as the cron expression, the time zone or
// the semantics change, ask GET /api/v1/schedule-preview/ (the form's
// data-preview-url) after a pause in typing and show the words and the next fire
// times (or the engine's message) in the aria-live region #schedule-preview.
// Without JavaScript the form's "Preview the schedule" button does the same.
(function () {
  var form = document.getElementById("monitor-form");
  var out = document.getElementById("schedule-preview");
  if (!form || !out) return;
  var fields = ["f-schedule", "f-timezone", "f-semantics", "f-kind"].map(function (id) {
    return document.getElementById(id);
  });
  var timer = null, asked = 0;

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  }

  function shown(iso) { // "2026-03-29T03:00:00+02:00" -> "2026-03-29 03:00 +02:00"
    return iso.slice(0, 10) + " " + iso.slice(11, 16) + " " + iso.slice(19);
  }

  var MEANING = {offset_changed: "UTC offset changed", gap_end: "right after a skipped hour",
                 repeated: "a repeated hour"};

  function render(body) {
    var head = el("p");
    head.append(el("strong", body.description), " ", el("span", "(" + body.timezone + ")", "muted small"));
    var list = el("ol", "", "fires");
    body.fires.forEach(function (f) {
      var item = el("li"), when = el("time", shown(f.at));
      when.setAttribute("datetime", f.at);
      item.append(when, " · ", el("span", shown(f.caller_at), "muted"));
      if (f.dst.length) {
        var notes = f.dst.map(function (d) { return MEANING[d] || d; });
        if (f.fold !== null) notes[notes.length - 1] += f.fold === 0 ? ", first time" : ", second time";
        item.append(" ", el("strong", "DST: " + notes.join("; "), "dst"));
      }
      list.append(item);
    });
    // one replacement, so the page never lays out a shorter preview in between
    out.replaceChildren(head, el("p", "Next " + body.fires.length + " fire times, in " +
                                 body.timezone + " and in yours (" + body.caller_timezone + "):",
                                 "small"), list);
  }

  function refresh() {
    var values = {schedule: fields[0].value, timezone: fields[1].value, cron_semantics: fields[2].value};
    if (fields[3].value !== "cron" || !values.schedule.trim()) { out.replaceChildren(); return; }
    var mine = ++asked;
    fetch(form.dataset.previewUrl + "?" + new URLSearchParams(values), {
      credentials: "same-origin", headers: {Accept: "application/json"}
    }).then(function (r) {
      return r.json().then(function (body) { return {ok: r.ok, body: body}; });
    }).then(function (answer) {
      if (mine !== asked) return; // a later question is on its way
      if (answer.ok) { render(answer.body); return; }
      var messages = [];
      Object.keys(answer.body).forEach(function (k) { messages = messages.concat(answer.body[k]); });
      out.replaceChildren(el("p", messages.join(" "), "error"));
    }).catch(function () {});
  }

  fields.forEach(function (field) {
    if (!field) return;
    field.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(refresh, 300);
    });
  });
})();
