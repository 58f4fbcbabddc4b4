// Tool calls as cards: arguments (a diff for file edits), status,
// duration, approval buttons, output folded when long.
'use strict';

// ---- tool cards ----

const LONG_LINES = 20;
const LONG_CHARS = 1500;

function partsText(parts) {
  return (parts || []).filter((p) => p.type === 'text').map((p) => p.text).join('');
}

function diffLines(out, sign, text) {
  for (const line of String(text || '').replace(/\n$/, '').split('\n')) {
    out.appendChild(el('div', sign === '+' ? 'add' : 'del', sign + ' ' + line));
  }
}

// argsView shows a call's arguments: a diff for file edits, else JSON.
function argsView(name, args) {
  const box = el('div', 'args');
  if (args && (name === 'write' || name === 'edit' || name === 'multi_edit') && args.path) {
    box.appendChild(el('div', 'path', args.path));
    const diff = el('pre', 'diff');
    if (name === 'write') diffLines(diff, '+', args.content);
    if (name === 'edit') {
      diffLines(diff, '-', args.old_string);
      diffLines(diff, '+', args.new_string);
    }
    if (name === 'multi_edit') {
      for (const e of args.edits || []) {
        diffLines(diff, '-', e.old_string);
        diffLines(diff, '+', e.new_string);
      }
    }
    box.appendChild(diff);
    return box;
  }
  box.appendChild(el('pre', 'json', JSON.stringify(args, null, 2)));
  return box;
}

class Card {
  constructor(call) {
    this.id = call.id;
    this.name = call.name;
    this.spawn = !!(call.args && typeof call.args.task === 'string'); // a subagent's spawn, by its arguments
    this.root = el('div', 'card');
    this.root.dataset.callId = call.id;
    const head = el('div', 'card-head');
    head.appendChild(el('span', 'tool', call.name));
    this.status = el('span', 'pill', 'requested');
    head.appendChild(this.status);
    this.dur = el('span', 'dur');
    head.appendChild(this.dur);
    this.root.appendChild(head);
    this.root.appendChild(argsView(call.name, call.args));
    this.approval = el('div', 'approval');
    this.approval.hidden = true;
    this.root.appendChild(this.approval);
    this.output = el('div', 'output');
    this.root.appendChild(this.output);
  }

  setStatus(s) {
    this.status.textContent = s;
    this.status.className = 'pill ' + s.replace(/[^a-z]/g, '-');
    this.root.dataset.status = s;
  }

  ask(view, w) {
    this.setStatus('waiting');
    this.approval.replaceChildren();
    const why = w.reason ? ' (' + w.reason + ')' : '';
    this.approval.appendChild(el('span', 'ask', 'Allow ' + w.tool + ' ' + (w.command || w.path || '') + '?' + why));
    for (const [decision, label] of [['allow', 'Allow'], ['always', 'Always'], ['deny', 'Deny']]) {
      const b = el('button', 'approve-' + decision, label);
      b.type = 'button';
      b.addEventListener('click', () => view.decide(this.id, decision, this));
      this.approval.appendChild(b);
    }
    this.approval.hidden = false;
  }

  decided(verdict) {
    this.approval.hidden = true;
    const s = this.root.dataset.status;
    if (s !== 'waiting' && s !== 'requested') return; // the call has moved on
    this.setStatus(verdict === 'allow' ? 'approved' : 'denied');
  }

  result(r) {
    this.approval.hidden = true;
    this.setStatus(r.is_error ? 'error' : 'done');
    if (r.duration) this.dur.textContent = (r.duration / 1e6).toFixed(r.duration < 1e7 ? 1 : 0) + ' ms';
    const text = partsText(r.parts);
    this.output.replaceChildren();
    const pre = el('pre', 'out', text);
    if (text.split('\n').length > LONG_LINES || text.length > LONG_CHARS) {
      const d = el('details');
      d.appendChild(el('summary', '', 'output (' + fmt.format(text.length) + ' chars)'));
      d.appendChild(pre);
      this.output.appendChild(d);
    } else {
      this.output.appendChild(pre);
    }
  }
}

