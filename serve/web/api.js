// The page's helpers, its API calls and its event stream: persisted events
// carry their seq as the SSE id; the stream is read with fetch so the bearer
// token can be sent, and a dropped connection resumes with Last-Event-ID.
'use strict';

const $ = (id) => document.getElementById(id);
const md = window.reinMarkdown;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

const fmt = new Intl.NumberFormat('en');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- token and API ----

let token = '';

function readToken() {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    sessionStorage.setItem('rein-token', decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname + location.search);
  }
  return sessionStorage.getItem('rein-token') || '';
}

class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: 'Bearer ' + token }, cache: 'no-store' };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch('/v1' + path, opts);
  const text = await r.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (e) {
    data = null;
  }
  if (r.status === 401) showLogin();
  if (!r.ok) {
    const err = (data && data.error) || {};
    throw new APIError(r.status, err.code || 'http_' + r.status, err.message || r.statusText);
  }
  return data;
}

function showLogin() {
  $('login').hidden = false;
  $('empty').hidden = true;
  $('session').hidden = true;
}

// ---- event stream ----

class Stream {
  constructor(id, onEvent, onState) {
    this.id = id;
    this.onEvent = onEvent;
    this.onState = onState;
    this.last = 0;
    this.closed = false;
    this.ctrl = null;
  }

  async run() {
    let delay = 200;
    while (!this.closed) {
      this.ctrl = new AbortController();
      try {
        const headers = { Authorization: 'Bearer ' + token, Accept: 'text/event-stream' };
        if (this.last > 0) headers['Last-Event-ID'] = String(this.last);
        const r = await fetch('/v1/sessions/' + this.id + '/events', { headers, signal: this.ctrl.signal, cache: 'no-store' });
        if (r.status === 401) {
          showLogin();
          return;
        }
        if (r.status === 404) {
          this.onState('gone');
          return;
        }
        if (!r.ok) throw new Error('status ' + r.status);
        this.onState('live');
        delay = 200;
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const frame = buf.slice(0, i);
            buf = buf.slice(i + 2);
            this.frame(frame);
          }
        }
      } catch (e) {
        if (this.closed) return;
      }
      if (this.closed) return;
      this.onState('reconnecting');
      await sleep(delay);
      delay = Math.min(delay * 2, 5000);
    }
  }

  frame(text) {
    let id = null;
    let data = '';
    for (const line of text.split('\n')) {
      if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    if (!data) return;
    const ev = JSON.parse(data);
    if (id !== null) {
      const seq = Number(id);
      if (seq <= this.last) return; // already shown
      this.last = seq;
    }
    this.onEvent(ev);
  }

  // drop ends the connection as a network failure would; run reconnects.
  drop() {
    if (this.ctrl) this.ctrl.abort();
  }

  close() {
    this.closed = true;
    if (this.ctrl) this.ctrl.abort();
  }
}

