// Every dashboard page (templates/dashboard/base.html). Static, never inline: the
// Content-Security-Policy runs scripts from this origin only (docs/multi-tenant.md).

// The project switch submits itself when a project is chosen (a button does without
// JavaScript).
document.querySelectorAll("select[data-submit]").forEach(function (select) {
  select.addEventListener("change", function () { select.form.submit(); });
});

// Copy buttons (rendered hidden: without JavaScript they could do nothing). The
// Clipboard API exists only in secure contexts (https, localhost); elsewhere the
// text is selected and copied with execCommand, or left selected to copy by hand.
document.querySelectorAll("[data-copy]").forEach(function (b) {
  var label = b.textContent;
  b.hidden = false;
  function select(el) {
    if (el.select) { el.focus(); el.select(); return; }
    var range = document.createRange(); range.selectNodeContents(el);
    var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
  }
  function shown(ok) {
    b.textContent = ok ? "Copied" : "Select and copy";
    if (ok) setTimeout(function () { b.textContent = label; }, 1500);
  }
  function fallback(el) {
    select(el);
    try { return document.execCommand("copy"); } catch (e) { return false; }
  }
  b.addEventListener("click", function () {
    var el = document.getElementById(b.dataset.copy);
    var text = el.value !== undefined ? el.value : el.textContent;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { shown(true); },
                                               function () { shown(fallback(el)); });
    } else {
      shown(fallback(el));
    }
  });
});

// A table too wide for the screen scrolls inside its .wrap container: that container
// is then reachable with the keyboard and named after the table's caption or the
// heading before it (WCAG: a scrollable region must be focusable and labelled).
function markScrollers() {
  document.querySelectorAll(".wrap").forEach(function (box) {
    if (box.scrollWidth <= box.clientWidth) return;
    var caption = box.querySelector("caption");
    var heading = box.previousElementSibling;
    var name = caption ? caption.textContent
      : (heading && /^H[1-6]$/.test(heading.tagName) ? heading.textContent : "table");
    box.tabIndex = 0;
    box.setAttribute("role", "region");
    box.setAttribute("aria-label", name.trim() + " (scrolls sideways)");
  });
}
markScrollers();
window.addEventListener("resize", markScrollers);
