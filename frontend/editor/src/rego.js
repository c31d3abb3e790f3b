// Rego for CodeMirror: a StreamLanguage tokenizer (CodeMirror ships no Rego mode). It only colours text;
// what the policy means is always the engine's answer (POST /api/v1/policies/check/).
import { StreamLanguage } from "@codemirror/language";

const KEYWORDS = new Set([
  "package", "import", "default", "if", "else", "contains", "some", "every", "in", "not", "with", "as",
]);
const ATOMS = new Set(["true", "false", "null"]);
const ROOTS = new Set(["input", "data"]);
// Imports that switch the language on rather than bring in a document.
const KEYWORD_IMPORTS = /^(?:future\.keywords(?:\.[A-Za-z_]+)?|rego\.v1)\b/;
const NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/;
const OPERATOR = /^(?::=|==|!=|<=|>=|[=<>+\-*\/%|&])/;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*/;

function quoted(stream) {
  // After the opening quote: up to the closing one, escapes skipped. A string never spans lines.
  let escaped = false;
  let next;
  while ((next = stream.next()) != null) {
    if (next === '"' && !escaped) return "string";
    escaped = !escaped && next === "\\";
  }
  return "string";
}

function raw(stream, state) {
  // Raw strings (`...`) have no escapes and may span lines.
  if (stream.skipTo("`")) {
    stream.next();
    state.inRaw = false;
  } else {
    stream.skipToEnd();
    state.inRaw = true;
  }
  return "string.special";
}

export const rego = StreamLanguage.define({
  name: "rego",
  startState: () => ({ inRaw: false, afterImport: false }),
  token(stream, state) {
    if (state.inRaw) return raw(stream, state);
    if (stream.sol()) state.afterImport = false;
    if (stream.eatSpace()) return null;
    if (stream.match("#")) {
      stream.skipToEnd();
      return "comment";
    }
    if (stream.eat('"')) return quoted(stream);
    if (stream.eat("`")) return raw(stream, state);
    if (state.afterImport && stream.match(KEYWORD_IMPORTS)) return "keyword";
    if (stream.match(NUMBER)) return "number";
    if (stream.match(OPERATOR)) return "operator";
    const column = stream.column();
    const word = stream.match(IDENTIFIER);
    if (word) {
      const text = word[0];
      if (KEYWORDS.has(text)) {
        state.afterImport = text === "import";
        return "keyword";
      }
      if (ATOMS.has(text)) return "atom";
      if (ROOTS.has(text)) return "variableName.special";
      // A rule's head starts its line: that is where the rule is defined.
      if (column === 0) return "variableName.definition";
      if (stream.peek() === "(") return "variableName.function";
      return "variableName";
    }
    if (stream.match(/^[{}\[\]()]/)) return "bracket";
    stream.next();
    return "punctuation";
  },
  languageData: { commentTokens: { line: "#" } },
});
