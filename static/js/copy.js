// A button with data-copy="<id>" copies the text of the element with
// that id, and shows the note beside it (data-copied-note) for a moment.
// Without JavaScript, or without a clipboard, the text stays on the page
// to select by hand.
(function () {
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button[data-copy]");
    if (!button || !navigator.clipboard) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    navigator.clipboard.writeText(source.textContent).then(function () {
      var note = button.parentNode.querySelector("[data-copied-note]");
      if (!note) return;
      note.hidden = false;
      setTimeout(function () { note.hidden = true; }, 2000);
    });
  });
})();
