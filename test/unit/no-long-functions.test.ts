// No function in src/ is longer than 80 lines (issue #38): every function declaration, method, accessor,
// constructor, function expression and arrow function, counted from its first line to its last (the lines of a
// function nested in it count too, as they stand inside it). Read with the TypeScript compiler's parser.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The repository's root (this file runs as dist/test/unit/no-long-functions.test.js). */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The most lines a function of src/ may span. */
export const MAX_FUNCTION_LINES = 80;

/** One function of a file and the lines it spans. */
export interface FunctionSpan {
  name: string;
  line: number;
  lines: number;
}

/** Every .ts file under `dir`, as paths relative to the repository root. */
function tsFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
  );
}

/** A name to show for a function: its own, or that of what it is assigned to, or its kind. */
function nameOf(node: ts.FunctionLikeDeclaration, sf: ts.SourceFile): string {
  if (node.name) return node.name.getText(sf);
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name) return parent.name.getText(sf);
  if (ts.isCallExpression(parent)) return `callback of ${parent.expression.getText(sf).slice(0, 40)}`;
  return ts.SyntaxKind[node.kind];
}

/** Each function with a body in the source text, with its first line (1-based) and how many lines it spans. */
export function functionSpans(fileName: string, text: string): FunctionSpan[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const spans: FunctionSpan[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      spans.push({ name: nameOf(node as ts.FunctionLikeDeclaration, sf), line: first + 1, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return spans;
}

describe('no long functions in src/ (#38)', () => {
  it('counts the lines of every kind of function, nested ones too', () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = [
      `export function outer() {\n${body(3)}\n  const inner = () => {\n${body(2)}\n  };\n}`,
      `class C {\n  m(): void {\n${body(1)}\n  }\n}`,
      'const f = function () { return 1; };',
    ].join('\n');
    const spans = functionSpans('x.ts', text).map((s) => `${s.name}@${s.line}:${s.lines}`);
    assert.deepEqual(spans, ['outer@1:9', 'inner@5:4', 'm@11:3', 'f@15:1']);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const long = tsFiles('src')
      .filter((f) => !f.startsWith('src/gen/'))
      .flatMap((f) => functionSpans(f, readFileSync(path.join(root, f), 'utf8')).map((s) => ({ ...s, file: f })))
      .filter((s) => s.lines > MAX_FUNCTION_LINES)
      .map((s) => `${s.file}:${s.line} ${s.name} (${s.lines} lines)`);
    assert.deepEqual(long, [], `functions over ${MAX_FUNCTION_LINES} lines:\n${long.join('\n')}`);
  });
});
