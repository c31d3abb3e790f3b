// The policy editor: modules to add, rename and remove, and a syntax check as one types. The check is
// the engine's own (POST /api/v1/policies/check/), which answers each problem's file, line and column.
(function () {
  "use strict";
  const form = document.getElementById("policy-editor");
  if (!form) return;
  const modules = document.getElementById("modules");
  const status = document.getElementById("syntax-status");
  const problemsList = document.getElementById("syntax-problems");
  const csrfToken = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  let timer = null;
  let sequence = 0;

  function moduleRows() {
    return Array.from(modules.querySelectorAll(".module"));
  }

  function draft() {
    let data = null;
    const rawData = form.elements["data"].value.trim();
    if (rawData) {
      try { data = JSON.parse(rawData); } catch (error) { return { error: "data: not valid JSON: " + error.message }; }
    }
    return {
      rego_version: form.elements["rego_version"].value,
      data: data,
      modules: moduleRows().map(function (row) {
        return { filename: row.querySelector("input.filename").value.trim(), source: row.querySelector("textarea").value };
      }),
    };
  }

  function show(problems, message) {
    problemsList.replaceChildren();
    moduleRows().forEach(function (row) { row.classList.remove("has-problem"); });
    if (message) {
      status.textContent = message;
      status.className = "bad";
      return;
    }
    if (!problems.length) {
      status.textContent = "no problems: the policy compiles";
      status.className = "ok";
      return;
    }
    status.textContent = problems.length === 1 ? "1 problem" : problems.length + " problems";
    status.className = "bad";
    problems.forEach(function (problem) {
      const where = [problem.file, problem.line, problem.column].filter(function (part) { return part !== null && part !== undefined; }).join(":");
      const item = document.createElement("li");
      item.className = "syntax-problem";
      item.dataset.file = problem.file || "";
      item.dataset.line = problem.line || "";
      item.dataset.column = problem.column || "";
      item.textContent = (where ? where + ": " : "") + problem.message;
      item.addEventListener("click", function () { reveal(problem); });
      problemsList.appendChild(item);
      const row = moduleRows().find(function (candidate) { return candidate.querySelector("input.filename").value.trim() === problem.file; });
      if (row) row.classList.add("has-problem");
    });
  }

  function reveal(problem) {
    const row = moduleRows().find(function (candidate) { return candidate.querySelector("input.filename").value.trim() === problem.file; });
    if (!row || !problem.line) return;
    const textarea = row.querySelector("textarea");
    const lines = textarea.value.split("\n");
    let offset = 0;
    for (let index = 0; index < problem.line - 1 && index < lines.length; index++) offset += lines[index].length + 1;
    offset += Math.max((problem.column || 1) - 1, 0);
    textarea.focus();
    textarea.setSelectionRange(offset, offset);
  }

  function check() {
    const body = draft();
    if (body.error) { show([], body.error); return; }
    const mine = ++sequence;
    status.textContent = "checking…";
    status.className = "";
    fetch(form.dataset.checkUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken },
      body: JSON.stringify(body),
    }).then(function (response) {
      if (response.status === 429) return { busy: true };
      return response.json().then(function (answer) { return { status: response.status, answer: answer }; });
    }).then(function (reply) {
      if (mine !== sequence) return; // a later keystroke already asked again
      if (reply.busy) { status.textContent = "the checker is busy; it will check again as you type"; status.className = ""; return; }
      if (reply.status !== 200) { show([], reply.answer.detail || "the check failed"); return; }
      show(reply.answer.problems, null);
    }).catch(function () {
      if (mine === sequence) show([], "the check could not reach the server");
    });
  }

  function scheduleCheck() {
    clearTimeout(timer);
    timer = setTimeout(check, 400);
  }

  function addModule() {
    const copy = document.getElementById("module-template").content.firstElementChild.cloneNode(true);
    const taken = new Set(moduleRows().map(function (row) { return row.querySelector("input.filename").value.trim(); }));
    let number = moduleRows().length + 1;
    while (taken.has("module" + number + ".rego")) number++;
    copy.querySelector("input.filename").value = "module" + number + ".rego";
    modules.appendChild(copy);
    copy.querySelector("input.filename").focus();
    scheduleCheck();
  }

  modules.addEventListener("click", function (event) {
    if (!event.target.classList.contains("remove-module")) return;
    event.target.closest(".module").remove();
    scheduleCheck();
  });
  modules.addEventListener("keydown", function (event) {
    // Tab indents inside a module instead of leaving it (Shift+Tab still moves on).
    if (event.key !== "Tab" || event.shiftKey || event.target.tagName !== "TEXTAREA") return;
    event.preventDefault();
    const area = event.target;
    const start = area.selectionStart;
    area.setRangeText("\t", start, area.selectionEnd, "end");
    scheduleCheck();
  });
  document.getElementById("add-module").addEventListener("click", addModule);
  form.addEventListener("input", scheduleCheck);
  form.addEventListener("change", scheduleCheck);
  check();
})();
