// A small Markdown renderer for the transcript: fenced and inline code,
// headings, emphasis, lists, quotes, links (http and https only) and
// paragraphs. Everything is escaped first, so model output can never
// become markup of its own.
'use strict';

(function () {
  function escape(s) {
    return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  }

  function inline(s) {
    const codes = [];
    s = escape(s).replace(/`([^`]+)`/g, (_, c) => {
      codes.push(c);
      return '\u0000' + (codes.length - 1) + '\u0000';
    });
    s = s.replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g, '<a href="$2" rel="noopener noreferrer" target="_blank">$1</a>');
    s = s.replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
    s = s.replace(/(^|[^*])\*([^*\s][^*]*)\*/g, '$1<em>$2</em>');
    s = s.replace(/(^|\W)_([^_\s][^_]*)_(?=\W|$)/g, '$1<em>$2</em>');
    return s.replace(/\u0000(\d+)\u0000/g, (_, i) => '<code>' + codes[Number(i)] + '</code>');
  }

  function render(src) {
    const lines = src.replace(/\r\n/g, '\n').split('\n');
    const out = [];
    let para = [];
    let list = null; // 'ul' or 'ol'
    const flush = () => {
      if (para.length) out.push('<p>' + para.map(inline).join('<br>') + '</p>');
      para = [];
    };
    const endList = () => {
      if (list) out.push('</' + list + '>');
      list = null;
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)/);
      if (fence) {
        flush();
        endList();
        const body = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) body.push(lines[i]);
        const lang = fence[2] ? ' data-lang="' + escape(fence[2]) + '"' : '';
        out.push('<pre' + lang + '><code>' + escape(body.join('\n')) + '</code></pre>');
        continue;
      }
      const head = line.match(/^(#{1,6})\s+(.*)$/);
      if (head) {
        flush();
        endList();
        const n = Math.min(head[1].length + 2, 6);
        out.push('<h' + n + '>' + inline(head[2]) + '</h' + n + '>');
        continue;
      }
      const item = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
      if (item) {
        flush();
        const kind = /\d/.test(item[1]) ? 'ol' : 'ul';
        if (list !== kind) {
          endList();
          out.push('<' + kind + '>');
          list = kind;
        }
        out.push('<li>' + inline(item[2]) + '</li>');
        continue;
      }
      const quote = line.match(/^>\s?(.*)$/);
      if (quote) {
        flush();
        endList();
        out.push('<blockquote>' + inline(quote[1]) + '</blockquote>');
        continue;
      }
      if (line.trim() === '') {
        flush();
        endList();
        continue;
      }
      endList();
      para.push(line);
    }
    flush();
    endList();
    return out.join('\n');
  }

  window.reinMarkdown = { render, escape };
})();
