// harn board: live refresh over server-sent events, ages that keep
// counting, keyboard-friendly cards and confirmed actions. No framework.
(function () {
  'use strict';

  // A browser that sends no fetch metadata got the page at ?token=
  // without the redirect: the token still leaves the address bar.
  if (/[?&]token=/.test(location.search) && window.history && history.replaceState) {
    var q = new URLSearchParams(location.search);
    q.delete('token');
    var rest = q.toString();
    history.replaceState(null, '', location.pathname + (rest ? '?' + rest : '') + location.hash);
  }

  var main = document.getElementById('main');
  var root = document.getElementById('live-root');
  var live = document.getElementById('live');
  var meta = document.querySelector('meta[name="harn-csrf"]');
  var csrf = meta ? meta.content : '';
  var skew = 0; // client clock minus server clock, in ms
  var baseTitle = document.title;

  // The tab title counts the sessions that need someone: (2) harn board.
  function title() {
    var n = root && root.querySelector('[data-attention]');
    var k = n ? parseInt(n.dataset.attention, 10) : 0;
    document.title = (k > 0 ? '(' + k + ') ' : '') + baseTitle;
  }

  function setState(state, label) {
    if (!live) return;
    live.dataset.state = state;
    live.textContent = label;
  }

  // ---- ages ---------------------------------------------------------
  function age(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + 's';
    if (s < 3600) return Math.floor(s / 60) + 'm';
    if (s < 48 * 3600) return Math.floor(s / 3600) + 'h';
    return Math.floor(s / 86400) + 'd';
  }
  function readSkew() {
    var n = root && root.querySelector('[data-now]');
    if (n) {
      var t = Date.parse(n.dataset.now);
      if (!isNaN(t)) skew = Date.now() - t;
    }
  }
  function ages() {
    var now = Date.now() - skew;
    var els = document.querySelectorAll('time[data-age]');
    for (var i = 0; i < els.length; i++) {
      var t = Date.parse(els[i].getAttribute('datetime'));
      if (!isNaN(t)) els[i].textContent = age(now - t);
    }
  }

  // ---- live refresh -------------------------------------------------
  var url = main && main.dataset.live;
  var inflight = false, again = false;

  function swap(html) {
    // Keep the focus on the same card (or button) across the repaint.
    var a = document.activeElement, fid = null, fkind = null;
    if (a && root.contains(a)) {
      var c = a.closest('[data-id]');
      if (c) { fid = c.dataset.id; fkind = a.tagName === 'BUTTON' ? a.value : null; }
    }
    root.innerHTML = html;
    title();
    readSkew();
    ages();
    if (fid) {
      var cards = root.querySelectorAll('[data-id]');
      for (var i = 0; i < cards.length; i++) {
        if (cards[i].dataset.id !== fid) continue;
        var b = fkind && cards[i].querySelector('button[value="' + fkind + '"]');
        (b || cards[i]).focus({ preventScroll: true });
        break;
      }
    }
  }

  function refresh() {
    if (!url) return;
    if (inflight) { again = true; return; }
    inflight = true;
    fetch(url, { credentials: 'same-origin', cache: 'no-store', headers: { 'Accept': 'text/html' } })
      .then(function (r) {
        if (r.status === 401) { setState('error', 'signed out: run harn web open'); return null; }
        if (!r.ok && r.status !== 503) return null;
        return r.text();
      })
      .then(function (html) { if (html !== null && html !== undefined) swap(html); })
      .catch(function () { setState('reconnecting', 'reconnecting…'); })
      .then(function () {
        inflight = false;
        if (again) { again = false; refresh(); }
      });
  }

  var es = null, retry = null;
  function connect() {
    if (!url || !window.EventSource) return;
    es = new EventSource('/events');
    es.addEventListener('hello', function () { setState('live', 'live'); refresh(); });
    es.addEventListener('change', function () { setState('live', 'live'); refresh(); });
    es.onerror = function () {
      setState('reconnecting', 'reconnecting…');
      // The browser retries by itself unless the stream was refused
      // outright; then start over after a pause.
      if (es.readyState === 2 && !retry) {
        retry = setTimeout(function () { retry = null; connect(); }, 3000);
      }
    };
  }

  // ---- filters: apply on change ------------------------------------
  var filters = document.getElementById('filters');
  if (filters) {
    filters.addEventListener('change', function () {
      if (filters.requestSubmit) filters.requestSubmit(); else filters.submit();
    });
  }

  // ---- cards: Enter opens the detail page --------------------------
  document.addEventListener('keydown', function (e) {
    var t = e.target;
    if (e.key === 'Enter' && t && t.classList && t.classList.contains('card')) {
      var a = t.querySelector('a.name');
      if (a) { e.preventDefault(); a.click(); }
    }
  });

  // ---- actions: confirm in a dialog, then POST ----------------------
  var dlg = document.getElementById('confirm');
  var pending = null;
  var labels = { approve: 'Approve', approve_session: 'Approve for this session', deny: 'Deny', steer: 'Steer', follow_up: 'Follow-up', cancel: 'Cancel task' };

  function openDialog(form, btn) {
    var kind = btn.value;
    pending = { data: new URLSearchParams(new FormData(form)), kind: kind, opener: btn };
    document.getElementById('confirm-title').textContent = labels[kind] + '?';
    document.getElementById('confirm-what').textContent = labels[kind] + ' ' + (btn.dataset.what || '') + '.';
    var wrap = document.getElementById('confirm-text-wrap');
    var ta = document.getElementById('confirm-text');
    var needs = kind === 'steer' || kind === 'follow_up';
    var optional = kind === 'deny' || kind === 'cancel';
    wrap.hidden = !(needs || optional);
    ta.required = needs;
    ta.value = '';
    document.getElementById('confirm-text-label').textContent = needs ? 'Text' : 'Reason (optional)';
    var res = document.getElementById('confirm-result');
    res.textContent = '';
    res.className = '';
    var ok = document.getElementById('confirm-ok');
    ok.hidden = false;
    ok.disabled = false;
    ok.textContent = labels[kind];
    dlg.showModal();
    (needs || optional ? ta : ok).focus();
  }

  function send() {
    var p = pending;
    var body = p.data;
    body.set('kind', p.kind);
    body.set('text', document.getElementById('confirm-text').value);
    body.set('confirmed', '1');
    var ok = document.getElementById('confirm-ok');
    var res = document.getElementById('confirm-result');
    ok.disabled = true;
    res.textContent = 'sending…';
    fetch('/action', {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Accept': 'application/json', 'X-Harn-Csrf': csrf },
      body: body
    }).then(function (r) {
      return r.json().catch(function () { return { ok: false, message: 'HTTP ' + r.status }; });
    }).then(function (j) {
      res.textContent = j.message;
      res.className = j.ok ? 'ok' : 'err';
    }).catch(function (e) {
      res.textContent = 'failed: ' + e;
      res.className = 'err';
    }).then(function () {
      ok.hidden = true;
      document.getElementById('confirm-close').focus();
      refresh();
    });
  }

  if (dlg) {
    document.addEventListener('submit', function (e) {
      var f = e.target;
      if (!f.classList || !f.classList.contains('act-form') || !e.submitter) return;
      e.preventDefault();
      openDialog(f, e.submitter);
    });
    document.getElementById('confirm-form').addEventListener('submit', function (e) {
      if (e.submitter && e.submitter.value === 'ok') {
        e.preventDefault();
        if (!document.getElementById('confirm-form').reportValidity()) return;
        send();
      }
    });
    dlg.addEventListener('close', function () {
      // The close event comes a task after close(): when another action
      // has opened the dialog again meanwhile, the pending action is that
      // one's, not this one's.
      if (dlg.open) return;
      if (pending && pending.opener && document.contains(pending.opener)) pending.opener.focus();
      pending = null;
    });
  }

  // ---- a hosted terminal's screen, live -----------------------------
  var screen = document.getElementById('screen');
  if (screen && screen.dataset.poll) {
    setInterval(function () {
      fetch(screen.dataset.poll, { credentials: 'same-origin', cache: 'no-store', headers: { 'Accept': 'text/html' } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) { if (html !== null) screen.innerHTML = html; })
        .catch(function () {});
    }, 1000);
  }

  title();
  readSkew();
  ages();
  setInterval(ages, 10000);
  connect();
})();
