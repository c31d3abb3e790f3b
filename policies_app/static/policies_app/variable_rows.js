// "Add a row" for the variable editors of the environment form. Without this script the form still works:
// it always has a few empty rows, and saving shows new empty ones.
(function () {
  "use strict";
  document.querySelectorAll("fieldset.variables").forEach(function (fieldset) {
    var kind = fieldset.dataset.kind;
    var total = fieldset.querySelector('input[name="' + kind + '-TOTAL_FORMS"]');
    var body = fieldset.querySelector("tbody");
    var button = fieldset.querySelector("button.add-variable-row");
    if (!total || !body || !button) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var last = body.querySelector("tr:last-child");
      var index = parseInt(total.value, 10);
      var row = last.cloneNode(true);
      row.classList.remove("has-errors");
      row.querySelectorAll("input").forEach(function (input) {
        input.name = input.name.replace(/-\d+-/, "-" + index + "-");
        input.id = input.id.replace(/-\d+-/, "-" + index + "-");
        if (input.type === "checkbox") input.checked = false; else input.value = "";
        var label = input.getAttribute("aria-label");
        if (label) input.setAttribute("aria-label", label.replace(/\d+$/, String(index + 1)));
      });
      row.querySelector(".row-errors").textContent = "";
      body.appendChild(row);
      total.value = String(index + 1);
      row.querySelector("input").focus();
    });
  });
})();
