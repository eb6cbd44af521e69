/**
 * Static assets of the approver inbox, served from `/approver/assets/` (no build step): the
 * stylesheet and one small script. The script (a) ticks every `[data-expires-at]` countdown and
 * `[data-since]` age once a second, and (b) polls `GET /approver/live` every 3 s; when the change
 * mark moved it re-fetches the page and swaps `#live`, unless the approver is typing a comment
 * or has ticked requests for a batch (then it shows a "new activity" notice instead), and (c) runs
 * the passkey ceremonies (register; approve where a step-up rule asks) with `@simplewebauthn/browser`,
 * served beside it as `webauthn.js`, and (d) compares a pasted value with a hidden value's digest
 * (WebCrypto, in the page). The pages work without it, except passkey step-up and the compare box.
 * Deliberately does not: use a framework, inline scripts (the CSP forbids them), or WebSockets.
 */

/** The stylesheet (`/approver/assets/inbox.css`). */
export const INBOX_CSS = `
:root{--ink:#1c2430;--muted:#5f6b7a;--line:#e3e7ee;--bg:#f6f7f9;--card:#fff;--accent:#1f5fbf;--ok:#1d7a46;--okbg:#e6f4ec;--bad:#b3261e;--badbg:#fbeaea;--warn:#8a5a00;--warnbg:#fff4dc}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
header.top{display:flex;align-items:center;gap:1.5rem;padding:.7rem 1.5rem;background:#14213d;color:#fff}
header.top .brand{font-weight:700;letter-spacing:.02em}
header.top nav a{color:#cfd8ea;margin-right:1rem}header.top nav a.on{color:#fff;font-weight:600}
header.top .who{margin-left:auto;display:flex;align-items:center;gap:.8rem;color:#cfd8ea;font-size:.9rem}
header.top .who button{background:transparent;border:1px solid #51607f;color:#fff;border-radius:4px;padding:.2rem .6rem;cursor:pointer}
.badge{display:inline-block;min-width:1.4em;padding:0 .45em;border-radius:999px;background:#e85d04;color:#fff;font-size:.8rem;font-weight:700;text-align:center}
.badge.zero{background:#d0d4d9;color:#555}
.pager{display:flex;gap:1em;align-items:center;margin:1em 0}
main{max-width:76rem;margin:1.5rem auto;padding:0 1.5rem}
h1{font-size:1.35rem;margin:.2rem 0 1rem}h2{font-size:1.05rem;margin:1.6rem 0 .6rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:1rem 1.2rem;margin-bottom:1rem}
table{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line);border-radius:8px;overflow:hidden}
th,td{text-align:left;padding:.55rem .7rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:.78rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);background:#fafbfc}
tr:last-child td{border-bottom:0}tbody tr:hover{background:#f9fbff}
td.num,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.88rem}
.muted{color:var(--muted);font-size:.88rem}
.pill{display:inline-block;padding:.05rem .55rem;border-radius:999px;font-size:.8rem;font-weight:600;background:#eef1f6;color:var(--muted)}
.pill.approved{background:var(--okbg);color:var(--ok)}.pill.denied,.pill.expired,.pill.cancelled{background:var(--badbg);color:var(--bad)}
.pill.pending{background:var(--warnbg);color:var(--warn)}.pill.you{background:#e8f0fe;color:var(--accent)}
.countdown.soon{color:var(--bad);font-weight:600}
.analytics .tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(11rem,1fr));gap:.8rem}
.analytics .tile{margin:0}.analytics .tile .value{font-size:1.45rem;font-weight:700;margin-top:.2rem}
.analytics h3{font-size:.95rem;margin:.8rem 0 .3rem}.analytics svg.chart{display:block;max-width:100%;height:auto}
.analytics details table{margin:.6rem 0}
.flash{padding:.65rem .9rem;border-radius:6px;margin-bottom:1rem;background:var(--okbg);border:1px solid #a9d8bc}
.flash.warn{background:var(--warnbg);border-color:#e8c77d}
.filters{display:flex;gap:.8rem;align-items:end;margin-bottom:.8rem;flex-wrap:wrap}
.filters label{display:flex;flex-direction:column;font-size:.8rem;color:var(--muted)}
select,input[type=text],input[type=password],textarea{font:inherit;padding:.35rem .5rem;border:1px solid #c8cfdb;border-radius:5px;background:#fff}
button{font:inherit;cursor:pointer}
.btn{padding:.45rem 1.1rem;border-radius:5px;border:1px solid #c8cfdb;background:#fff}
.btn.approve{background:var(--ok);border-color:var(--ok);color:#fff}.btn.deny{background:#fff;border-color:var(--bad);color:var(--bad)}
.btn.primary{background:var(--accent);border-color:var(--accent);color:#fff}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));gap:.9rem 1.5rem}
.grid dt{font-size:.76rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}.grid dd{margin:.1rem 0 0}
.hidden-field{margin:.5rem 0}.hidden-field .compare{margin-top:.3rem}.compare .ok{color:var(--ok);font-weight:600}.compare .bad{color:var(--bad);font-weight:600}
table.argrows td.name{width:1%;white-space:nowrap;vertical-align:top}section.headline h1{margin-bottom:.2rem}section.headline p{margin:.2rem 0}ul.facts{list-style:none;padding:0;margin:.2rem 0}details.technical{margin:1rem 0}table.argrows pre{margin:0;white-space:pre-wrap;word-break:break-word}
.pill.hint-destructive{background:var(--badbg);color:var(--bad)}.pill.hint-read-only{background:var(--okbg);color:var(--ok)}
pre.args{background:#0f1724;color:#e6edf6;padding:.9rem 1rem;border-radius:6px;overflow:auto;font-size:.86rem;margin:0}
.decide textarea{width:100%;min-height:4.2rem;margin:.4rem 0 .7rem}
.decide .actions{display:flex;gap:.7rem}
.progress{display:flex;gap:.3rem;align-items:center}.progress i{display:inline-block;width:.8rem;height:.8rem;border-radius:50%;border:2px solid var(--ok)}.progress i.on{background:var(--ok)}
.login{max-width:24rem;margin:4rem auto}.login label{display:block;margin:.7rem 0 .2rem;font-size:.9rem}.login input{width:100%}
.notice{position:fixed;bottom:1rem;right:1rem;background:#14213d;color:#fff;padding:.6rem .9rem;border-radius:6px;display:none}
.notice.show{display:block}
.empty{padding:1.4rem;text-align:center;color:var(--muted);background:var(--card);border:1px dashed var(--line);border-radius:8px}
`;

/** The script (`/approver/assets/inbox.js`). */
export const INBOX_JS = `
(function () {
  'use strict';
  function two(n) { return n < 10 ? '0' + n : String(n); }
  function left(ms) {
    if (ms <= 0) return 'expired';
    var s = Math.floor(ms / 1000);
    if (s < 3600) return Math.floor(s / 60) + 'm ' + two(s % 60) + 's left';
    var h = Math.floor(s / 3600);
    if (h < 24) return h + 'h ' + Math.floor((s % 3600) / 60) + 'm left';
    return Math.floor(h / 24) + 'd ' + (h % 24) + 'h left';
  }
  function age(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + 's';
    var m = Math.floor(s / 60);
    if (m < 60) return m + 'm';
    var h = Math.floor(m / 60);
    if (h < 24) return h + 'h ' + (m % 60) + 'm';
    return Math.floor(h / 24) + 'd ' + (h % 24) + 'h';
  }
  function tick() {
    var now = Date.now();
    document.querySelectorAll('[data-expires-at]').forEach(function (el) {
      var ms = Number(el.getAttribute('data-expires-at')) - now;
      el.textContent = left(ms);
      el.classList.toggle('soon', ms < 15 * 60 * 1000);
    });
    document.querySelectorAll('[data-since]').forEach(function (el) {
      el.textContent = age(now - Number(el.getAttribute('data-since')));
    });
  }
  var body = document.body;
  var mark = body.getAttribute('data-mark');
  var notice = document.getElementById('notice');
  function typing() {
    var a = document.activeElement;
    var busy = false;
    document.querySelectorAll('textarea').forEach(function (t) { if (t.value.trim() !== '') busy = true; });
    if (document.querySelector('input[name=ids]:checked')) busy = true;
    document.querySelectorAll('input[data-compare-input]').forEach(function (i) { if (i.value !== '') busy = true; });
    return busy || (a && (a.tagName === 'TEXTAREA' || a.tagName === 'INPUT' || a.tagName === 'SELECT'));
  }
  function refresh() {
    fetch(location.href, { credentials: 'same-origin', headers: { 'X-Inbox-Refresh': '1' } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (text) {
        if (text === null) return;
        var doc = new DOMParser().parseFromString(text, 'text/html');
        var fresh = doc.getElementById('live');
        var here = document.getElementById('live');
        if (fresh && here) here.innerHTML = fresh.innerHTML;
        var c = doc.getElementById('pending-count');
        var cc = document.getElementById('pending-count');
        if (c && cc) { cc.textContent = c.textContent; cc.className = c.className; }
        mark = doc.body.getAttribute('data-mark');
        body.setAttribute('data-mark', mark || '');
        tick();
      })
      .catch(function () {});
  }
  function poll() {
    fetch('/approver/live', { credentials: 'same-origin' })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (j) {
        if (!j || String(j.mark) === mark) return;
        if (typing()) { if (notice) notice.classList.add('show'); return; }
        refresh();
      })
      .catch(function () {});
  }
  // Passkeys (packages/approvals/src/inbox/passkeys.ts): register one, and approve with one where a step-up rule asks.
  function passkeyFailed(where, err) {
    var p = document.getElementById(where);
    if (p) { p.textContent = 'Passkey not used: ' + (err && err.message ? err.message : 'cancelled'); p.hidden = false; }
  }
  document.addEventListener('click', function (e) {
    var W = window.SimpleWebAuthnBrowser;
    var t = e.target;
    var reg = t && t.closest ? t.closest('[data-passkey-register]') : null;
    if (reg && W) {
      e.preventDefault();
      fetch('/approver/passkeys/registration-options', { credentials: 'same-origin' })
        .then(function (r) { return r.json(); })
        .then(function (opts) { return W.startRegistration({ optionsJSON: opts }); })
        .then(function (resp) {
          return fetch('/approver/passkeys', {
            method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ csrf: reg.getAttribute('data-csrf'), response: resp }),
          });
        })
        .then(function (r) { location.href = '/approver/passkeys?flash=' + (r.ok ? 'passkey-added' : 'passkey-refused'); })
        .catch(function (err) { passkeyFailed('passkey-error', err); });
      return;
    }
    var up = t && t.closest ? t.closest('[data-step-up]') : null;
    if (up && W) {
      e.preventDefault();
      var form = up.form;
      fetch(form.getAttribute('data-step-up-url'), { credentials: 'same-origin' })
        .then(function (r) { return r.json(); })
        .then(function (opts) { return W.startAuthentication({ optionsJSON: opts }); })
        .then(function (resp) {
          form.querySelector('input[name=webauthn]').value = JSON.stringify(resp);
          var d = document.createElement('input');
          d.type = 'hidden'; d.name = 'decision'; d.value = 'approve';
          form.appendChild(d);
          form.submit();
        })
        .catch(function (err) { passkeyFailed('passkey-error', err); });
    }
  });
  // Hidden values (request-page.tsx, redacted.ts): hash what the approver pastes, here in the browser, and
  // compare it with the request's digest: SHA-256 of the JCS form, as a string and, if it is JSON, as that value.
  function jcs(v) {
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    if (Array.isArray(v)) return '[' + v.map(jcs).join(',') + ']';
    return '{' + Object.keys(v).sort().map(function (k) { return JSON.stringify(k) + ':' + jcs(v[k]); }).join(',') + '}';
  }
  function sha256hex(text) {
    return crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)).then(function (buf) {
      return Array.prototype.map.call(new Uint8Array(buf), function (b) { return (b < 16 ? '0' : '') + b.toString(16); }).join('');
    });
  }
  function compare(field) {
    var input = field.querySelector('[data-compare-input]');
    var out = field.querySelector('[data-compare-result]');
    var text = input.value;
    var say = function (msg, cls) { out.textContent = msg; out.className = cls; };
    if (text === '') return say('Paste the value you were given first.', '');
    if (!window.crypto || !crypto.subtle) return say('Comparing needs the inbox over HTTPS (or on localhost).', 'bad');
    var forms = [JSON.stringify(text)];
    try { var j = jcs(JSON.parse(text)); if (forms.indexOf(j) < 0) forms.push(j); } catch (e) { /* a string only */ }
    Promise.all(forms.map(sha256hex)).then(function (digests) {
      if (digests.indexOf(field.getAttribute('data-redacted-digest')) >= 0) say('Match: this is the value in the request.', 'ok');
      else say('No match: the request holds a different value.', 'bad');
    });
  }
  document.addEventListener('click', function (e) {
    var b = e.target && e.target.closest ? e.target.closest('[data-compare]') : null;
    if (b) { e.preventDefault(); compare(b.closest('[data-redacted-digest]')); }
  });
  document.addEventListener('keydown', function (e) {
    var i = e.target && e.target.closest ? e.target.closest('[data-compare-input]') : null;
    if (i && e.key === 'Enter') { e.preventDefault(); compare(i.closest('[data-redacted-digest]')); }
  });
  tick();
  setInterval(tick, 1000);
  if (mark !== null) setInterval(poll, 3000);
})();
`;
