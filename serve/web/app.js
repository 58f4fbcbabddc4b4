// The rein web page: a sessions list and a live view of one session, fed
// by the server's event stream (the session event vocabulary). Persisted
// events carry their seq as the SSE id; the stream is read with fetch so
// the bearer token can be sent, and a dropped connection is resumed with
// Last-Event-ID, so no event is lost or shown twice.
'use strict';

// ---- session view ----

class View {
  constructor(id) {
    this.id = id;
    this.t = $('transcript');
    this.t.replaceChildren();
    this.t.dataset.lastSeq = '0';
    this.t.dataset.events = '0';
    this.cards = new Map();
    this.children = new Map(); // subagent cards by spawn call
    this.kids = new Map(); // the same by child session
    this.kidsTimer = 0; // polls the sessions list while a spawn runs
    this.live = null; // the streaming block of the current response
    this.running = false;
    this.step = 0; // the step in progress
    this.finished = 0; // the last step whose response is shown in full
    this.summaryTimer = 0;
    this.summaryAt = 0;
    this.stream = new Stream(id, (ev) => this.onEvent(ev), (s) => setConn(s));
    this.stream.run();
    this.refreshSummary();
  }

  close() {
    this.stream.close();
    for (const c of this.kids.values()) c.close();
    clearTimeout(this.summaryTimer);
    clearInterval(this.kidsTimer);
  }

  add(node) {
    this.t.appendChild(node);
    node.scrollIntoView({ block: 'end' });
    return node;
  }

  onEvent(ev) {
    if (ev.seq > 0) {
      this.t.dataset.lastSeq = String(ev.seq);
      this.t.dataset.events = String(Number(this.t.dataset.events) + 1);
    }
    const d = ev.data || {};
    switch (ev.type) {
      case 'turn.start':
        this.step = 0;
        this.finished = 0;
        this.setRunning(true);
        this.add(el('div', 'sep', 'turn · ' + d.trigger));
        refreshSessions(); // a first prompt gives the session its title
        break;
      case 'turn.end':
        this.setRunning(false);
        this.endLive();
        this.add(el('div', 'sep end ' + d.reason, 'turn ' + d.reason + (d.cause ? ' (' + d.cause + ')' : '') + (d.message ? ': ' + d.message : '')));
        this.refreshSummary();
        refreshSessions();
        break;
      case 'user.message':
        this.message('user', d.source === 'follow-up' ? 'You (follow-up)' : 'You', partsText(d.parts));
        break;
      case 'steering.message':
        this.message('user steer', 'You (steer)', partsText(d.parts));
        break;
      case 'context.message':
        this.add(el('div', 'context', 'context from ' + (d.source || 'host')));
        break;
      case 'step.start':
        this.step = d.step;
        break;
      case 'assistant.chunk':
        // A delta of a response already shown in full is stale.
        if (ev.seq === 0 && d.step > this.finished) this.delta(d);
        break;
      case 'assistant.message':
        this.assistant(d);
        break;
      case 'approval.request':
        this.card({ id: d.call_id, name: d.tool, args: d.args }).ask(this, d);
        break;
      case 'hook.decision':
        if (d.point === 'approval' && d.call_id && this.cards.has(d.call_id)) this.cards.get(d.call_id).decided(d.decision);
        break;
      case 'tool.call':
        this.card({ id: d.call_id, name: d.name, args: d.args }).setStatus('running');
        this.watchKids();
        break;
      case 'tool.result':
        this.card({ id: d.call_id, name: d.name || '?', args: null }).result(d);
        break;
      case 'step.end':
        this.stepEnd(d);
        break;
      case 'compaction':
        this.add(el('div', 'sep', 'earlier conversation compacted'));
        break;
      case 'subagent.queued':
      case 'subagent.start':
      case 'subagent.end':
      case 'subagent.handoff':
        subagentEvent(this, ev.type, d);
        break;
      case 'prompt.blocked':
        this.add(el('div', 'sep end blocked', 'prompt blocked: ' + d.reason));
        break;
    }
  }

  // watchKids looks for new children every second while a spawn runs.
  watchKids() {
    const spawning = () => [...this.cards.values()].some((c) => c.spawn && c.root.dataset.status === 'running');
    if (this.kidsTimer || !spawning()) return;
    this.kidsTimer = setInterval(() => {
      if (!spawning()) {
        clearInterval(this.kidsTimer);
        this.kidsTimer = 0;
      }
      refreshSessions();
    }, 1000);
  }

  message(cls, who, text) {
    const m = el('div', 'msg ' + cls);
    m.appendChild(el('div', 'who', who));
    const body = el('div', 'body');
    body.innerHTML = md.render(text);
    m.appendChild(body);
    this.add(m);
  }

  // delta appends streamed text and reasoning to the live block.
  delta(d) {
    if (!this.live) {
      const m = el('div', 'msg assistant streaming');
      m.appendChild(el('div', 'who', 'Assistant'));
      const reasoning = el('details', 'reasoning');
      reasoning.appendChild(el('summary', '', 'reasoning'));
      const rtext = el('pre', 'rtext');
      reasoning.appendChild(rtext);
      reasoning.hidden = true;
      m.appendChild(reasoning);
      const body = el('div', 'body');
      m.appendChild(body);
      this.live = { m, reasoning, rtext, body, text: '' };
      this.add(m);
    }
    for (const x of d.deltas || []) {
      if (x.kind === 'text') {
        this.live.text += x.text || '';
        this.live.body.innerHTML = md.render(this.live.text);
      } else if (x.kind === 'reasoning') {
        this.live.reasoning.hidden = false;
        this.live.rtext.textContent += x.text || '';
      }
    }
  }

  endLive() {
    if (this.live) this.live.m.remove();
    this.live = null;
  }

  assistant(d) {
    this.endLive();
    this.finished = this.step;
    const parts = d.parts || [];
    const reasoning = parts.filter((p) => p.type === 'reasoning' && p.text).map((p) => p.text).join('\n');
    const text = partsText(parts);
    if (reasoning || text) {
      const m = el('div', 'msg assistant');
      m.appendChild(el('div', 'who', 'Assistant' + (d.interrupted ? ' (interrupted)' : '')));
      if (reasoning) {
        const r = el('details', 'reasoning');
        r.appendChild(el('summary', '', 'reasoning'));
        r.appendChild(el('pre', 'rtext', reasoning));
        m.appendChild(r);
      }
      const body = el('div', 'body');
      body.innerHTML = md.render(text);
      m.appendChild(body);
      this.add(m);
    }
    // An approval request can come before the message that made the call
    // (the log is written in batches): put each card after its message.
    for (const p of parts) {
      if (p.type === 'tool_call') this.add(this.card({ id: p.id, name: p.name, args: p.args }).root);
    }
  }

  card(call) {
    let c = this.cards.get(call.id);
    if (!c) {
      c = new Card(call);
      this.cards.set(call.id, c);
      this.add(c.root);
    }
    return c;
  }

  stepEnd(d) {
    const u = d.usage || {};
    const prompt = (u.input || 0) + (u.cache_read || 0) + (u.cache_write || 0);
    let s = 'step ' + d.step + ' · ' + fmt.format(prompt) + ' in · ' + fmt.format(u.output || 0) + ' out';
    if (prompt > 0 && u.cache_read) s += ' · cache read ' + Math.round((100 * u.cache_read) / prompt) + '%';
    this.add(el('div', 'step', s));
    this.summarySoon();
  }

  // summarySoon refreshes the totals after a step, at most every two
  // seconds: the summary is built from the whole log.
  summarySoon() {
    if (this.summaryTimer) return;
    const wait = Math.max(0, 2000 - (Date.now() - this.summaryAt));
    this.summaryTimer = setTimeout(() => {
      this.summaryTimer = 0;
      this.refreshSummary();
    }, wait);
  }

  async refreshSummary() {
    this.summaryAt = Date.now();
    try {
      const s = await api('GET', '/sessions/' + this.id + '/summary');
      const u = s.usage || {};
      const prompt = (u.input || 0) + (u.cache_read || 0) + (u.cache_write || 0);
      const ratio = prompt > 0 ? Math.round((100 * (u.cache_read || 0)) / prompt) : 0;
      const stats = $('stats');
      stats.replaceChildren();
      const add = (name, value) => {
        const item = el('span', 'stat');
        item.dataset.stat = name;
        item.appendChild(el('b', '', value));
        item.appendChild(document.createTextNode(' ' + name));
        stats.appendChild(item);
      };
      add('in', fmt.format(prompt));
      add('out', fmt.format(u.output || 0));
      add('cache read', ratio + '%');
      add('cost', '$' + (s.cost || 0).toFixed(4));
      add('steps', fmt.format(s.steps || 0));
    } catch (e) {
      // the next step will try again
    }
  }

  setRunning(on) {
    this.running = on;
    $('state').textContent = on ? 'running' : 'idle';
    $('state').className = 'pill ' + (on ? 'running' : 'idle');
    $('send').hidden = on;
    $('steer').hidden = !on;
    $('followup').hidden = !on;
    $('cancel').hidden = !on;
  }

  async decide(callId, decision, card) {
    try {
      await api('POST', '/sessions/' + this.id + '/approvals/' + encodeURIComponent(callId), { decision });
      card.decided(decision === 'deny' ? 'deny' : 'allow');
    } catch (e) {
      showError(e.message);
    }
  }
}

// ---- page ----

let view = null;

function setConn(s) {
  $('conn').textContent = s;
  $('conn').className = 'conn ' + s;
}

function showError(msg) {
  $('error').textContent = msg;
  $('error').hidden = !msg;
}

async function refreshSessions() {
  let list;
  try {
    list = await api('GET', '/sessions?limit=100');
  } catch (e) {
    return;
  }
  const nav = $('sessions');
  nav.replaceChildren(...sessionTree(list.sessions, view && view.id).childNodes);
  if (view) {
    const me = list.sessions.find((s) => s.id === view.id);
    if (me) {
      $('title').textContent = me.title || me.id;
      kinLinks($('children'), me, list.sessions);
      adoptChildren(view, list.sessions);
    }
  }
}

function route() {
  const m = location.hash.match(/^#\/s\/([\w.-]+)/);
  if (view && (!m || m[1] !== view.id)) {
    view.close();
    view = null;
  }
  if (!m) {
    $('session').hidden = true;
    $('empty').hidden = false;
    return;
  }
  if (!view) {
    $('empty').hidden = true;
    $('session').hidden = false;
    $('title').textContent = m[1];
    $('export').href = '#';
    view = new View(m[1]);
    view.setRunning(false);
    window.reinView = view;
    showError('');
  }
  refreshSessions();
}

async function send(path, body) {
  if (!view) return;
  showError('');
  try {
    await api('POST', '/sessions/' + view.id + path, body);
    $('input').value = '';
  } catch (e) {
    showError(e.message);
  }
}

function wire() {
  $('login').addEventListener('submit', (e) => {
    e.preventDefault();
    token = $('token').value.trim();
    sessionStorage.setItem('rein-token', token);
    $('login').hidden = true;
    route();
  });
  $('new').addEventListener('click', async () => {
    try {
      const s = await api('POST', '/sessions', {});
      location.hash = '#/s/' + s.id;
    } catch (e) {
      showError(e.message);
    }
  });
  $('compose').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('input').value.trim();
    if (text) send('/turns', { prompt: text });
  });
  $('steer').addEventListener('click', () => {
    const text = $('input').value.trim();
    if (text) send('/steer', { message: text });
  });
  $('followup').addEventListener('click', () => {
    const text = $('input').value.trim();
    if (text) send('/follow-up', { message: text });
  });
  $('cancel').addEventListener('click', () => send('/cancel'));
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) $('compose').requestSubmit();
  });
  $('export').addEventListener('click', async (e) => {
    e.preventDefault();
    if (!view) return;
    const r = await fetch('/v1/sessions/' + view.id + '/export?format=markdown', { headers: { Authorization: 'Bearer ' + token } });
    if (!r.ok) {
      showError('export failed: ' + r.status);
      return;
    }
    const url = URL.createObjectURL(await r.blob());
    const a = el('a');
    a.href = url;
    a.download = view.id + '.md';
    a.click();
    URL.revokeObjectURL(url);
  });
  window.addEventListener('hashchange', route);
}

token = readToken();
wire();
if (!token) showLogin();
else route();
setInterval(() => {
  if (token) refreshSessions();
}, 5000);
