// The policy editor's component: CodeMirror 6 over a module's <textarea>, which stays the form field
// (without this script the form works as a plain textarea). Exposed as window.RegoEditor.
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { bracketMatching, indentOnInput, syntaxHighlighting } from "@codemirror/language";
import { lintGutter, setDiagnostics } from "@codemirror/lint";
import { EditorState } from "@codemirror/state";
import {
  EditorView, drawSelection, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers,
} from "@codemirror/view";
import { classHighlighter } from "@lezer/highlight";
import { rego } from "./rego.js";

function clampedLine(doc, number) {
  return doc.line(Math.min(Math.max(number || 1, 1), doc.lines));
}

// One engine problem as a diagnostic: from its line and column to the end of that line's word (or the
// whole line when the engine named no column).
function diagnostic(doc, problem) {
  const line = clampedLine(doc, problem.line);
  let from = line.from;
  let to = line.to;
  if (problem.column) {
    from = Math.min(line.from + problem.column - 1, line.to);
    const rest = doc.sliceString(from, line.to);
    const word = /^[^\s]*/.exec(rest)[0];
    to = from + Math.max(word.length, 1) > line.to ? line.to : from + Math.max(word.length, 1);
  }
  if (to <= from) { from = line.from; to = line.to; }
  return { from, to, severity: "error", message: problem.message, source: "policy check" };
}

export function mount(textarea, options = {}) {
  const onChange = options.onChange || function () {};
  const view = new EditorView({
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        highlightActiveLine(),
        rego,
        syntaxHighlighting(classHighlighter),
        lintGutter(),
        EditorState.tabSize.of(4),
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        // CodeMirror owns the editor's class attribute: the look's class is given through it.
        EditorView.editorAttributes.of({ class: "rego-editor" }),
        EditorView.contentAttributes.of({ "aria-label": textarea.getAttribute("aria-label") || "Rego source" }),
        EditorView.updateListener.of(function (update) {
          if (!update.docChanged) return;
          textarea.value = update.state.doc.toString(); // the form field always holds the editor's text
          onChange(update);
        }),
      ],
    }),
  });
  textarea.hidden = true;
  textarea.insertAdjacentElement("afterend", view.dom);
  if (textarea.form) {
    textarea.form.addEventListener("submit", function () { textarea.value = view.state.doc.toString(); });
  }
  return {
    view,
    text() { return view.state.doc.toString(); },
    setProblems(problems) {
      const doc = view.state.doc;
      view.dispatch(setDiagnostics(view.state, problems.map(function (p) { return diagnostic(doc, p); })));
    },
    reveal(line, column) {
      const target = clampedLine(view.state.doc, line);
      const at = Math.min(target.from + Math.max((column || 1) - 1, 0), target.to);
      view.dispatch({ selection: { anchor: at }, scrollIntoView: true });
      view.focus();
    },
    destroy() {
      view.destroy();
      textarea.hidden = false;
    },
  };
}

// For tests and scripts that need a module's editor from its DOM (EditorView.findFromDOM).
export { EditorView };
