// Render markdown documents with every JavaScript renderer of the matrix, in one process.
//
// stdin:  a JSON list of markdown strings.
// stdout: a JSON object {renderer name: [html, ...]}, one html per input, in order. A renderer
//         that throws on an input gives ERROR_PREFIX + the message in that place.
// argv:   `--only a,b` renders with those renderers only; `--list` prints the names;
//         `--typeset` reads a JSON list of HTML pages instead and typesets each with MathJax.
//
// Each renderer is configured the way the place it stands for configures it (see RENDERERS).
// Driven by tests/renderers/matrix.py; run `npm ci --prefix tests/renderers` first.

import MarkdownIt from 'markdown-it';
import markdownItFootnote from 'markdown-it-footnote';
import texmath from 'markdown-it-texmath';
import { Marked } from 'marked';
import { gfmHeadingId } from 'marked-gfm-heading-id';
import { mangle } from 'marked-mangle';
import sanitizeHtml from 'sanitize-html';
import showdown from 'showdown';
import { unified } from 'unified';
import remarkParse from 'remark-parse';
import remarkGfm from 'remark-gfm';
import remarkMath from 'remark-math';
import remarkRehype from 'remark-rehype';
import rehypeStringify from 'rehype-stringify';
import { micromark } from 'micromark';
import { gfm, gfmHtml } from 'micromark-extension-gfm';
import { mystParse } from 'myst-parser';
import { mystToHtml } from 'myst-to-html';
import markdownItKatex from '@vscode/markdown-it-katex';
import { mathjax } from 'mathjax-full/js/mathjax.js';
import { TeX } from 'mathjax-full/js/input/tex.js';
import { liteAdaptor } from 'mathjax-full/js/adaptors/liteAdaptor.js';
import { RegisterHTMLHandler } from 'mathjax-full/js/handlers/html.js';
import { STATE } from 'mathjax-full/js/core/MathItem.js';

export const ERROR_PREFIX = '\u0000render-error: ';

function escapeHtml(text) {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

// ---------------------------------------------------------------------------------------------
// markdown-it
// ---------------------------------------------------------------------------------------------

// texmath wants a KaTeX-like engine. KaTeX's output is a self-contained <span> tree, so a stub
// that shows the TeX escaped in one <span> has the same effect on the document's structure,
// and is far faster.
const texEngine = {
  renderToString: (tex, options) =>
    `<span class="katex${options && options.displayMode ? ' katex-display' : ''}">` +
    `${escapeHtml(tex)}</span>`,
};

const mdCommonmark = MarkdownIt('commonmark');
// GitHub-like: the default preset with raw HTML, tables, strikethrough and linkify (bare URLs,
// `www.` and e-mail addresses become links).
const mdGfm = MarkdownIt('default', { html: true, linkify: true });
const mdFootnote = MarkdownIt('default', { html: true, linkify: true }).use(markdownItFootnote);
// VS Code's "Markdown+Math" and most markdown-it math setups: `$..$`, `$$..$$`, `\(..\)`, `\[..\]`.
const mdMath = MarkdownIt('default', { html: true, linkify: true }).use(texmath, {
  engine: texEngine,
  delimiters: ['dollars', 'brackets'],
});

// ---------------------------------------------------------------------------------------------
// marked, and marked as JupyterLab 4 drives it
// ---------------------------------------------------------------------------------------------

const marked = new Marked({ gfm: true });

// JupyterLab 4 (@jupyterlab/markedparser-extension): marked with `gfm: true` and the
// marked-gfm-heading-id and marked-mangle extensions. Its mermaid and highlighting hooks only
// replace fenced code blocks' contents, so they are left out here.
const jupyterMarked = new Marked({ gfm: true }, gfmHeadingId(), mangle());

// Before marked runs, @jupyterlab/rendermime hides the math from it (`removeMath` in latex.ts)
// and puts it back afterwards (`replaceMath`); MathJax typesets it later. What follows is an
// independent implementation of that behaviour: the same delimiters, the same rule that math
// does not run through a blank line, the same balanced braces, and the same protection of
// code (fences opened at column 0 and code spans) by rewriting their `$`.
const MATH_SPLIT =
  /(\$\$?|\\(?:begin|end)\{[a-z]*\*?\}|\\[{}$]|[{}]|(?:\n\s*)+|@@\d+@@|\\\\(?:\(|\)|\[|\]))/i;

function hideMath(source) {
  const stash = [];
  let text = source;
  let restore = (value) => value;
  if (text.includes('`') || text.includes('~~~')) {
    // `~` becomes `~T` so that `~D` can stand for a `$` inside code.
    text = text
      .replace(/~/g, '~T')
      .replace(/^(?<fence>`{3,}|(~T){3,})[^`\n]*\n([\s\S]*?)^\k<fence>`*$/gm, (code) =>
        code.replace(/\$/g, '~D'),
      )
      .replace(/(^|[^\\])(`+)([^\n]*?[^`\n])\2(?!`)/gm, (code) => code.replace(/\$/g, '~D'));
    restore = (value) => value.replace(/~([TD])/g, (_, kind) => (kind === 'T' ? '~' : '$'));
  }
  const parts = text.replace(/\r\n?/g, '\n').split(MATH_SPLIT);
  const stashRange = (first, last) => {
    const math = parts
      .slice(first, last + 1)
      .join('')
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;');
    for (let k = first + 1; k <= last; k++) parts[k] = '';
    parts[first] = `@@${stash.length}@@`;
    stash.push(restore(math));
  };
  let open = null; // index of the part that opened the current math
  let closer = null; // the delimiter that closes it
  let pending = null; // a closer seen while braces were unbalanced
  let braces = 0;
  for (let i = 1; i < parts.length; i += 2) {
    const part = parts[i];
    if (part.startsWith('@')) {
      // text that looks like a placeholder is stashed too, so it comes back unchanged
      parts[i] = `@@${stash.length}@@`;
      stash.push(part);
    } else if (open !== null) {
      if (part === closer) {
        if (braces) {
          pending = i;
        } else {
          stashRange(open, i);
          open = closer = pending = null;
        }
      } else if (/\n.*\n/.test(part)) {
        // a blank line: the math never closed; fall back to the last closer seen, if any
        if (pending !== null) {
          i = pending;
          stashRange(open, i);
        }
        open = closer = pending = null;
        braces = 0;
      } else if (part === '{') {
        braces++;
      } else if (part === '}' && braces) {
        braces--;
      }
    } else if (part === '$' || part === '$$') {
      [open, closer, braces] = [i, part, 0];
    } else if (part === '\\\\(' || part === '\\\\[') {
      [open, closer, braces] = [i, part.endsWith('(') ? '\\\\)' : '\\\\]', 0];
    } else if (part.slice(1, 6) === 'begin') {
      [open, closer, braces] = [i, `\\end${part.slice(6)}`, 0];
    }
  }
  if (open !== null && pending !== null) stashRange(open, pending);
  return { text: restore(parts.join('')), stash };
}

function showMath(html, stash) {
  return html.replace(/@@(\d+)@@/g, (_, n) => {
    const math = stash[Number(n)];
    for (const [open, close] of [
      ['(', ')'],
      ['[', ']'],
    ]) {
      if (math.startsWith(`\\\\${open}`) && math.endsWith(`\\\\${close}`)) {
        return `\\${open}${math.slice(3, -3)}\\${close}`;
      }
    }
    return math;
  });
}

// JupyterLab's sanitizer (@jupyterlab/apputils, sanitize-html underneath): an allow-list of
// tags and attributes, `rel="nofollow"` on links, URL schemes limited to sanitize-html's
// defaults (http, https, ftp, mailto, tel). Markdown cells are always rendered untrusted, so
// through it. Inline styles are dropped here (JupyterLab checks them against a CSS grammar):
// they cannot change the structure.
const JUPYTER_TAGS = (
  'a abbr acronym address area article aside audio b bdi bdo big blockquote br button canvas ' +
  'caption center cite code col colgroup colspan command data datalist dd del details dfn dir ' +
  'div dl dt em fieldset figcaption figure font footer form h1 h2 h3 h4 h5 h6 header hgroup hr ' +
  'i img input ins kbd label legend li map mark menu meter nav nobr ol optgroup option output p ' +
  'pre progress q rowspan s samp section select small source span strike strong sub summary ' +
  'sup table tbody td textarea tfoot th thead time tr track tt u ul var video wbr'
).split(' ');
const JUPYTER_SANITIZER = {
  allowedTags: JUPYTER_TAGS,
  allowedAttributes: {
    '*': ['class', 'dir', 'hidden', 'id', 'lang', 'title'],
    a: ['href', 'hreflang', 'name', 'rel', 'target', 'type'],
    area: ['alt', 'coords', 'href', 'shape'],
    img: ['align', 'alt', 'border', 'height', 'name', 'src', 'width'],
    input: ['checked', 'disabled', 'name', 'type', 'value'],
    li: ['type', 'value'],
    ol: ['reversed', 'start', 'type'],
    td: ['align', 'colspan', 'rowspan'],
    th: ['align', 'colspan', 'rowspan'],
    textarea: ['cols', 'name', 'rows'],
  },
  transformTags: {
    a: sanitizeHtml.simpleTransform('a', { rel: 'nofollow' }),
    input: sanitizeHtml.simpleTransform('input', { disabled: 'disabled' }),
  },
  allowedSchemesByTag: { img: sanitizeHtml.defaults.allowedSchemes.concat(['attachment']) },
  allowedSchemesAppliedToAttributes: ['href', 'cite'],
};

function jupyterlab(source, sanitize) {
  const { text, stash } = hideMath(source);
  const html = showMath(jupyterMarked.parse(text), stash);
  return sanitize ? sanitizeHtml(html, JUPYTER_SANITIZER) : html;
}

// ---------------------------------------------------------------------------------------------
// MathJax on the rendered page, as JupyterLab 4 (@jupyterlab/mathjax-extension, mathjax-full 3)
// and nbconvert's HTML (MathJax 2.7's tex2jax, whose rules MathJax 3's FindTeX carries over)
// configure it: `$` and `\(` inline, `$$` and `\[` display, environments and escapes on.
// It reads the page's text as a browser shows it, entities decoded, skipping <code> and <pre>,
// and math runs only within one element's text. Each math it finds is replaced as MathJax
// would, by an element of its own holding the TeX (here a <span class="mathjax">, standing in
// for the typeset <mjx-container>), and each escape (`\$`, `\\`) by the character it escapes.
// ---------------------------------------------------------------------------------------------

const liteDom = liteAdaptor();
RegisterHTMLHandler(liteDom);
const jupyterTex = new TeX({
  inlineMath: [
    ['$', '$'],
    ['\\(', '\\)'],
  ],
  displayMath: [
    ['$$', '$$'],
    ['\\[', '\\]'],
  ],
  processEscapes: true,
  processEnvironments: true,
});

function typeset(html) {
  const page = mathjax.document(html, { InputJax: jupyterTex });
  page.findMath();
  for (const item of Array.from(page.math).reverse()) {
    item.typesetRoot =
      item.display === null
        ? liteDom.text(item.math)
        : liteDom.node('span', { class: 'mathjax' }, [liteDom.text(item.math)]);
    item.state(STATE.TYPESET);
    item.updateDocument(page);
  }
  return liteDom.innerHTML(liteDom.body(page.document));
}

// VS Code's notebooks and preview (its built-in markdown-math extension): markdown-it with raw
// HTML and linkify, and @vscode/markdown-it-katex with `globalGroup`; the KaTeX stub above
// stands in for KaTeX, as for texmath.
const mdVscode = MarkdownIt('default', { html: true, linkify: true }).use(markdownItKatex.default, {
  globalGroup: true,
  katex: texEngine,
});

// ---------------------------------------------------------------------------------------------
// showdown, remark, micromark, mystmd
// ---------------------------------------------------------------------------------------------

const showdownDefault = new showdown.Converter();
const showdownGithub = new showdown.Converter();
showdownGithub.setFlavor('github');

const remark = unified()
  .use(remarkParse)
  .use(remarkGfm)
  .use(remarkMath)
  .use(remarkRehype, { allowDangerousHtml: true })
  .use(rehypeStringify, { allowDangerousHtml: true });

// ---------------------------------------------------------------------------------------------

export const RENDERERS = {
  // markdown-it as CommonMark: the repo's own checker reads the block this way (in Python).
  'markdown-it': (source) => mdCommonmark.render(source),
  'markdown-it-gfm': (source) => mdGfm.render(source),
  'markdown-it-footnote': (source) => mdFootnote.render(source),
  'markdown-it-texmath': (source) => mdMath.render(source),
  // MyST as mystmd / Jupyter Book 2 renders it: myst-parser to mdast, myst-to-html.
  mystmd: (source) => mystToHtml(mystParse(source)),
  marked: (source) => marked.parse(source),
  // A markdown cell, or any untrusted text/markdown output, in JupyterLab 4.
  jupyterlab: (source) => jupyterlab(source, true),
  // A trusted text/markdown output (a RecallResult's own _repr_markdown_ in a live notebook).
  'jupyterlab-trusted': (source) => jupyterlab(source, false),
  // A JupyterLab 4 markdown cell as the reader sees it: then MathJax typesets the page.
  'jupyterlab-mathjax': (source) => typeset(jupyterlab(source, true)),
  'vscode-notebook': (source) => mdVscode.render(source),
  showdown: (source) => showdownDefault.makeHtml(source),
  'showdown-github': (source) => showdownGithub.makeHtml(source),
  // remark with GFM and math, raw HTML passed through (as a site with rehype-raw shows it).
  remark: (source) => String(remark.processSync(source)),
  'micromark-gfm': (source) =>
    micromark(source, {
      allowDangerousHtml: true,
      extensions: [gfm()],
      htmlExtensions: [gfmHtml()],
    }),
};

function renderAll(sources, names) {
  const out = {};
  for (const name of names) {
    const render = RENDERERS[name];
    out[name] = sources.map((source) => {
      try {
        return render(source);
      } catch (error) {
        return ERROR_PREFIX + String(error && error.message ? error.message : error);
      }
    });
  }
  return out;
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function main(argv) {
  if (argv.includes('--list')) {
    process.stdout.write(JSON.stringify(Object.keys(RENDERERS)));
    return;
  }
  if (argv.includes('--typeset')) {
    // HTML a Python renderer made (nbconvert's), typeset by MathJax as its page would be.
    const pages = JSON.parse(await readStdin());
    process.stdout.write(JSON.stringify(pages.map(typeset)));
    return;
  }
  const only = argv.indexOf('--only');
  const names = only >= 0 ? argv[only + 1].split(',') : Object.keys(RENDERERS);
  const unknown = names.filter((name) => !(name in RENDERERS));
  if (unknown.length) throw new Error(`unknown renderer(s): ${unknown.join(', ')}`);
  const sources = JSON.parse(await readStdin());
  process.stdout.write(JSON.stringify(renderAll(sources, names)));
}

await main(process.argv.slice(2));
