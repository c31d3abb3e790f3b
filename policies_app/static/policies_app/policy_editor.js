// The policy editor: modules to add, rename and remove, each in a code editor (editor/editor.js,
// CodeMirror with line numbers and Rego highlighting, over the module's <textarea>, which stays the form
// field: without this script the form still works); a syntax check as one types, shown in a list and at
// its line in the module; and "Try it" on the text as it is, not saved. The check is the engine's own
// (POST /api/v1/policies/check/), which answers each problem's file, line and column; the try-it is
// POST /api/v1/policies/{id}/try-unsaved/.
(function () {
  "use strict";
  const form = document.getElementById("policy-editor");
  if (!form) return;
  const modules = document.getElementById("modules");
  const status = document.getElementById("syntax-status");
  const problemsList = document.getElementById("syntax-problems");
  const csrfToken = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const editors = new WeakMap(); // module row -> its code editor
  const TONES = { error: "bad", deny: "bad", pending: "waiting", warn: "warn", allow: "good" };
  let timer = null;
  let sequence = 0;

  function moduleRows() {
    return Array.from(modules.querySelectorAll(".module"));
  }

  function filenameOf(row) {
    return row.querySelector("input.filename").value.trim();
  }

  function enhance(row) {
    if (!window.RegoEditor || editors.has(row)) return;
    editors.set(row, window.RegoEditor.mount(row.querySelector("textarea"), { onChange: scheduleCheck }));
  }

  function content() {
    let data = null;
    const rawData = form.elements["data"].value.trim();
    if (rawData) {
      try { data = JSON.parse(rawData); } catch (error) { return { error: "data: not valid JSON: " + error.message }; }
    }
    return {
      rego_version: form.elements["rego_version"].value,
      enforcement: form.elements["enforcement"].value,
      data: data,
      modules: moduleRows().map(function (row) {
        return { filename: filenameOf(row), source: row.querySelector("textarea").value };
      }),
    };
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken },
      body: JSON.stringify(body),
    });
  }

  // The row a problem is in: its file, or the only module when the engine named no file.
  function rowOf(problem) {
    const rows = moduleRows();
    if (!problem.file) return rows.length === 1 ? rows[0] : null;
    return rows.find(function (row) { return filenameOf(row) === problem.file; }) || null;
  }

  function show(problems, message) {
    problemsList.replaceChildren();
    const atLine = new Map(moduleRows().map(function (row) { return [row, []]; }));
    moduleRows().forEach(function (row) { row.classList.remove("has-problem"); });
    if (message) {
      status.textContent = message;
      status.className = "bad";
    } else if (!problems.length) {
      status.textContent = "no problems: the policy compiles";
      status.className = "ok";
    } else {
      status.textContent = problems.length === 1 ? "1 problem" : problems.length + " problems";
      status.className = "bad";
    }
    (problems || []).forEach(function (problem) {
      const where = [problem.file, problem.line, problem.column].filter(function (part) { return part !== null && part !== undefined; }).join(":");
      const item = document.createElement("li");
      item.className = "syntax-problem";
      item.dataset.file = problem.file || "";
      item.dataset.line = problem.line || "";
      item.dataset.column = problem.column || "";
      item.textContent = (where ? where + ": " : "") + problem.message;
      item.addEventListener("click", function () { reveal(problem); });
      problemsList.appendChild(item);
      const row = rowOf(problem);
      if (!row) return;
      row.classList.add("has-problem");
      if (problem.line) atLine.get(row).push(problem);
    });
    atLine.forEach(function (found, row) {
      const editor = editors.get(row);
      if (editor) editor.setProblems(found);
    });
  }

  function reveal(problem) {
    const row = rowOf(problem);
    if (!row || !problem.line) return;
    const editor = editors.get(row);
    if (editor) { editor.reveal(problem.line, problem.column); return; }
    const textarea = row.querySelector("textarea");
    const lines = textarea.value.split("\n");
    let offset = 0;
    for (let index = 0; index < problem.line - 1 && index < lines.length; index++) offset += lines[index].length + 1;
    offset += Math.max((problem.column || 1) - 1, 0);
    textarea.focus();
    textarea.setSelectionRange(offset, offset);
  }

  function check() {
    const body = content();
    if (body.error) { show([], body.error); return; }
    delete body.enforcement;
    if (form.dataset.policy) body.policy = Number(form.dataset.policy);
    const mine = ++sequence;
    status.textContent = "checking…";
    status.className = "";
    post(form.dataset.checkUrl, body).then(function (response) {
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
    const taken = new Set(moduleRows().map(filenameOf));
    let number = moduleRows().length + 1;
    while (taken.has("module" + number + ".rego")) number++;
    copy.querySelector("input.filename").value = "module" + number + ".rego";
    modules.appendChild(copy);
    enhance(copy);
    copy.querySelector("input.filename").focus();
    scheduleCheck();
  }

  // "Try it" on the editor's text: the answer is drawn with textContent only (messages are the policy's).
  function tryIt() {
    const panel = document.getElementById("try-unsaved");
    const result = document.getElementById("try-unsaved-result");
    const body = content();
    result.replaceChildren();
    function say(text, className) {
      const line = document.createElement("p");
      line.textContent = text;
      if (className) line.className = className;
      result.appendChild(line);
    }
    if (body.error) { say(body.error, "alert"); return; }
    const deployment = panel.querySelector("select[name=try_deployment]").value;
    if (deployment) {
      body.deployment = Number(deployment);
    } else {
      try { body.input = JSON.parse(panel.querySelector("textarea[name=try_input]").value || "{}"); } catch (error) {
        say("input: not valid JSON: " + error.message, "alert");
        return;
      }
    }
    body.explain = true;
    say("running…", "muted small");
    post(panel.dataset.tryUrl, body).then(function (response) {
      return response.json().then(function (answer) { return { status: response.status, answer: answer }; });
    }).then(function (reply) {
      result.replaceChildren();
      if (reply.status !== 200) {
        const detail = reply.answer.detail || Object.entries(reply.answer).map(function (pair) { return pair[0] + ": " + [].concat(pair[1]).join(" "); }).join("; ");
        say(detail || "the try failed", "alert");
        return;
      }
      const answer = reply.answer;
      const heading = document.createElement("h3");
      heading.textContent = "Result of the text as it is: ";
      const badge = document.createElement("span");
      badge.className = "badge tone-" + (TONES[answer.decision] || "neutral");
      badge.id = "try-unsaved-decision";
      badge.textContent = answer.decision;
      heading.appendChild(badge);
      result.appendChild(heading);
      if (answer.error) say(answer.error, "error");
      const list = document.createElement("ul");
      list.className = "small";
      ["deny", "pending", "warn", "allow"].forEach(function (kind) {
        (answer[kind] || []).forEach(function (text) {
          const item = document.createElement("li");
          const tag = document.createElement("span");
          tag.className = "badge tone-" + TONES[kind];
          tag.textContent = kind;
          item.append(tag, " ", text);
          list.appendChild(item);
        });
      });
      if (list.children.length) result.appendChild(list);
      else say("No messages.", "muted small");
      const fired = (answer.fired || []).map(function (rule) { return rule.rule + " at " + rule.file + ":" + rule.line; });
      say("Rules that fired: " + (fired.length ? fired.join("; ") : "none (with no rule fired, env0 waits for approval)"), "small");
      if (answer.explanation_error) say(answer.explanation_error, "muted small");
    }).catch(function () {
      result.replaceChildren();
      say("the try could not reach the server", "alert");
    });
  }

  modules.addEventListener("click", function (event) {
    if (!event.target.classList.contains("remove-module")) return;
    const row = event.target.closest(".module");
    const editor = editors.get(row);
    if (editor) editor.destroy();
    row.remove();
    scheduleCheck();
  });
  modules.addEventListener("keydown", function (event) {
    // Tab indents inside a plain module textarea instead of leaving it (Shift+Tab still moves on); the
    // code editor handles Tab itself.
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
  const tryPanel = document.getElementById("try-unsaved");
  if (tryPanel) {
    tryPanel.hidden = false; // it needs this script: without it, save a draft and try it on the policy's page
    document.getElementById("try-unsaved-run").addEventListener("click", tryIt);
    const chosen = document.getElementById("try-deployment");
    const pasted = document.getElementById("try-input-row");
    const showPasted = function () { pasted.hidden = chosen.value !== ""; }; // a pasted input only without a deployment
    chosen.addEventListener("change", showPasted);
    showPasted();
  }
  moduleRows().forEach(enhance);
  check();
})();
