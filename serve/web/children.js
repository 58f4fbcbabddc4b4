// Subagents: each child a session of its own, shown where its parent
// spawned it (under the spawn call's card) with its state, usage, answer
// and a link to its own view; its activity streams in while the card's
// "activity" is open. The sessions list nests children under parents.
'use strict';

// ---- subagent cards ----

class ChildCard {
  constructor(key, d) {
    this.key = key;
    this.child = '';
    this.stream = null;
    this.root = el('div', 'subagent');
    this.root.dataset.child = '';
    const head = el('div', 'card-head');
    head.appendChild(el('span', 'tool', 'subagent'));
    this.name = el('span', 'name', d.name || 'subagent');
    head.appendChild(this.name);
    this.status = el('span', 'pill', 'queued');
    head.appendChild(this.status);
    this.link = el('a', 'open', 'open');
    this.link.hidden = true;
    head.appendChild(this.link);
    this.root.appendChild(head);
    this.numbers = el('div', 'numbers');
    this.root.appendChild(this.numbers);
    this.answer = el('div', 'answer');
    this.root.appendChild(this.answer);
    this.activity = el('details', 'activity');
    this.activity.appendChild(el('summary', '', 'activity'));
    this.lines = el('div', 'lines');
    this.activity.appendChild(this.lines);
    this.activity.hidden = true;
    this.activity.addEventListener('toggle', () => (this.activity.open ? this.follow() : this.unfollow()));
    this.root.appendChild(this.activity);
  }

  setStatus(s) {
    this.status.textContent = s;
    this.status.className = 'pill ' + s.replace(/[^a-z]/g, '-');
    this.root.dataset.status = s;
  }

  queued(d) {
    this.setStatus('queued');
    this.numbers.textContent = 'waiting for a free slot (' + d.running + ' running)';
  }

  started(d) {
    this.child = d.child_session;
    this.root.dataset.child = d.child_session;
    if (d.name || !this.named) this.name.textContent = (d.name || 'subagent') + (d.fork ? ' (fork)' : '') + (d.depth > 1 ? ' · depth ' + d.depth : '');
    this.named = !!d.name;
    this.link.href = '#/s/' + d.child_session;
    this.link.hidden = false;
    this.activity.hidden = false;
    this.numbers.textContent = '';
    if (this.root.dataset.status !== 'completed') this.setStatus('running');
  }

  ended(d) {
    if (!this.child && d.child_session) this.started(d);
    this.setStatus(d.reason + (d.cause ? ' (' + d.cause + ')' : ''));
    const u = d.usage || {};
    const prompt = (u.input || 0) + (u.cache_read || 0) + (u.cache_write || 0);
    this.numbers.textContent = fmt.format(d.steps || 0) + ' steps · ' + fmt.format(prompt) + ' in · ' +
      fmt.format(u.output || 0) + ' out · $' + (d.cost || 0).toFixed(4);
    const text = d.answer || d.message || '';
    this.answer.replaceChildren();
    if (!text) return;
    const body = el('div', 'body');
    body.innerHTML = md.render(text);
    if (text.split('\n').length > LONG_LINES || text.length > LONG_CHARS) {
      const fold = el('details');
      fold.appendChild(el('summary', '', 'answer (' + fmt.format(text.length) + ' chars)'));
      fold.appendChild(body);
      this.answer.appendChild(fold);
    } else {
      this.answer.appendChild(body);
    }
  }

  handoff(d) {
    this.numbers.textContent += ' · handed over: ' + (d.resources || []).join(', ');
  }

  // follow streams the child's events into the activity lines; from the
  // start, so reopening shows it all again.
  follow() {
    if (this.stream || !this.child) return;
    this.lines.replaceChildren();
    this.stream = new Stream(this.child, (ev) => this.line(ev), () => {});
    this.stream.run();
  }

  unfollow() {
    if (this.stream) this.stream.close();
    this.stream = null;
  }

  line(ev) {
    const d = ev.data || {};
    let text = '';
    let cls = 'line';
    switch (ev.type) {
      case 'user.message':
        text = 'task: ' + partsText(d.parts);
        break;
      case 'assistant.message':
        text = partsText(d.parts);
        cls += ' says';
        break;
      case 'tool.call':
        text = '→ ' + d.name;
        break;
      case 'tool.result':
        text = (d.is_error ? '✗ ' : '✓ ') + (d.name || d.call_id);
        break;
      case 'subagent.start':
        text = '⤷ subagent ' + (d.name || d.child_session);
        break;
      case 'turn.end':
        text = 'ended ' + d.reason;
        break;
    }
    if (text) this.lines.appendChild(el('div', cls, text));
  }

  close() {
    this.unfollow();
  }
}

// subagentEvent shows a subagent.* event of view's session.
function subagentEvent(view, type, d) {
  const key = d.call_id || d.child_session || d.name;
  let c = view.children.get(key) || (d.child_session && view.kids.get(d.child_session));
  if (!c) c = new ChildCard(key, d);
  if (view.children.get(key) !== c) {
    view.children.set(key, c);
    // Under the card of the call that spawned it, else in the transcript.
    const parent = d.call_id && view.cards.get(d.call_id);
    if (parent) parent.root.appendChild(c.root);
    else if (!c.root.parentNode) view.add(c.root);
  }
  if (d.child_session) view.kids.set(d.child_session, c);
  if (type === 'subagent.queued') c.queued(d);
  if (type === 'subagent.start') c.started(d);
  if (type === 'subagent.end') c.ended(d);
  if (type === 'subagent.handoff') c.handoff(d);
}

// adoptChildren shows the running children the sessions list has and the
// log has not announced yet (a parent's log records a spawn with the rest
// of its step): under the spawn call that runs, when only one does.
function adoptChildren(view, sessions) {
  const spawning = [...view.cards.values()].filter((c) => c.spawn && c.root.dataset.status === 'running');
  for (const s of sessions) {
    if (s.parent !== view.id || view.kids.has(s.id) || spawning.length === 0) continue;
    const c = new ChildCard(s.id, {});
    c.started({ child_session: s.id, name: 'subagent' });
    view.kids.set(s.id, c);
    if (spawning.length === 1) spawning[0].root.appendChild(c.root);
    else view.add(c.root);
  }
}

// ---- the sessions list, children nested under their parents ----

function sessionTree(sessions, current) {
  const ids = new Set(sessions.map((s) => s.id));
  const kids = new Map();
  for (const s of sessions) {
    if (s.parent && ids.has(s.parent)) {
      if (!kids.has(s.parent)) kids.set(s.parent, []);
      kids.get(s.parent).push(s);
    }
  }
  const render = (list) => {
    const ul = el('ul');
    for (const s of list) {
      const li = el('li', s.id === current ? 'current' : '');
      li.dataset.session = s.id;
      const a = el('a', '', s.title || '(untitled)');
      a.href = '#/s/' + s.id;
      li.appendChild(a);
      li.appendChild(el('div', 'meta', new Date(s.updated).toLocaleString() + (s.running ? ' · running' : '') + (s.waiting ? ' · waiting' : '')));
      if (kids.has(s.id)) {
        const sub = render(kids.get(s.id));
        sub.className = 'kids';
        li.appendChild(sub);
      }
      ul.appendChild(li);
    }
    return ul;
  };
  return render(sessions.filter((s) => !(s.parent && ids.has(s.parent))));
}

// kinLinks fills the box under a session's title: its parent, if it is a
// subagent, and its children.
function kinLinks(box, me, sessions) {
  box.replaceChildren();
  const byId = new Map(sessions.map((s) => [s.id, s]));
  const kids = sessions.filter((s) => s.parent === me.id);
  if (me.parent) {
    box.appendChild(el('span', '', 'subagent of '));
    const a = el('a', 'parent', (byId.get(me.parent) || {}).title || me.parent);
    a.href = '#/s/' + me.parent;
    box.appendChild(a);
  }
  if (kids.length) box.appendChild(el('span', '', 'children: '));
  for (const k of kids) {
    const a = el('a', 'kid', k.title || k.id);
    a.href = '#/s/' + k.id;
    box.appendChild(a);
  }
  box.hidden = !me.parent && kids.length === 0;
}
