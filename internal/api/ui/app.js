// The webhooks UI: a small single-page app over the library's JSON admin API. It builds every element
// with the DOM API (never innerHTML), so no API value can become markup, and it runs under a strict
// Content-Security-Policy (no inline script or style). The same file serves the operator's view
// (Handler) and the tenant portal (Portal); the portal's token comes from the URL fragment
// (#token=…), is kept in sessionStorage and sent as "Authorization: Bearer". An operator's view whose
// server answers 401 (webhooksd, behind its -api-key) asks for the key once per tab, keeps it in
// sessionStorage and sends it the same way.
'use strict';

(function () {
  const mode = document.documentElement.dataset.mode === 'portal' ? 'portal' : 'operator';
  // The API is mounted where the UI is, less "/ui/…".
  const base = location.pathname.replace(/\/ui(\/.*)?$/, '');
  const tokenKey = mode === 'portal' ? 'webhooks.portalToken' : 'webhooks.operatorKey';
  const main = document.getElementById('main');
  const flashBox = document.getElementById('flash');

  // --- token (portal) -------------------------------------------------------------------------------
  // takeToken moves a token from the URL fragment into sessionStorage, and out of the address bar and
  // the history.
  // Only the portal takes tokens from a link: the operator's UI sends only a key typed into its form (a
  // link with #token= cannot make it send a bearer token of someone else's with every call). A token for
  // another tenant than the one this tab acts for is refused, in words, until the user forgets the
  // loaded one ("Forget token").
  function takeToken() {
    const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (!m) return;
    history.replaceState(null, '', location.pathname + location.search + '#/');
    if (mode !== 'portal') return;
    let next;
    try { next = decodeURIComponent(m[1]); } catch (e) { flash('This link\'s token is malformed.', 'error', true); return; }
    const cur = token();
    if (cur && cur !== next && tokenTenant(cur) !== tokenTenant(next)) {
      flash('This link is for tenant "' + tokenTenant(next) + '", but this tab acts for "' + tokenTenant(cur) +
        '". Choose "Forget token" first to switch.', 'error', true);
      return;
    }
    sessionStorage.setItem(tokenKey, next);
    showTenant();
  }
  function token() { return sessionStorage.getItem(tokenKey) || ''; }
  // tokenTenant is the tenant a portal token names ("wpt1." + base64url("tenant\nexpiry") + "." + mac),
  // as the page shows it; the server checks the token itself.
  function tokenTenant(t) {
    const parts = (t || '').split('.');
    if (parts.length !== 3) return '';
    try { return atob(parts[1].replace(/-/g, '+').replace(/_/g, '/')).split('\n')[0]; } catch (e) { return ''; }
  }
  // showTenant puts the portal's tenant beside its badge.
  function showTenant() {
    if (mode !== 'portal') return;
    const t = tokenTenant(token());
    document.getElementById('mode').textContent = t ? 'portal · ' + t : 'portal';
  }

  // --- DOM helpers ----------------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  const svgNS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(svgNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }
  // render shows a page: its title and its parts (a part that is null, undefined or false is left out:
  // replaceChildren would write it as text).
  function render(title, ...children) {
    document.title = title + ' · Webhooks';
    main.replaceChildren(el('h1', { text: title }), ...children.flat(Infinity).filter((c) => c !== undefined && c !== null && c !== false));
    main.focus({ preventScroll: true });
  }
  // flash shows a message until the next navigation; keep: also on the page the next navigation shows.
  function flash(message, kind, keep) {
    if (keep) flashBox.dataset.keep = '1';
    flashBox.replaceChildren(el('p', { class: 'flash ' + (kind || 'ok'), text: message }));
  }
  function clearFlash() { flashBox.replaceChildren(); delete flashBox.dataset.keep; }
  const fmt = window.webhooksFormat;
  const fmtTime = fmt.time, fmtDuration = fmt.duration;
  function statusBadge(s) { return el('span', { class: 'status s-' + s, text: s }); }
  function dl(pairs) {
    return el('dl', { class: 'facts' }, pairs.filter(Boolean).map(([k, v]) => [el('dt', { text: k }), el('dd', {}, v)]));
  }
  function button(label, onclick, attrs) {
    return el('button', Object.assign({ type: 'button', onclick }, attrs || {}), label);
  }
  // confirmButton is a two-step button: the first press asks, the second does it (no window.confirm).
  function confirmButton(label, question, action, attrs) {
    const b = button(label, async () => {
      if (b.dataset.armed !== '1') {
        b.dataset.armed = '1';
        b.textContent = question;
        b.classList.add('armed');
        return;
      }
      b.disabled = true;
      try { await action(); } finally { b.disabled = false; b.dataset.armed = ''; b.textContent = label; b.classList.remove('armed'); }
    }, attrs);
    b.addEventListener('blur', () => { b.dataset.armed = ''; b.textContent = label; b.classList.remove('armed'); });
    return b;
  }

  // --- API ------------------------------------------------------------------------------------------
  class APIError extends Error {
    constructor(status, code, message, field) { super(message); this.status = status; this.code = code; this.field = field; }
  }
  // Stale is thrown by api() when the answer arrives after the user went to another route: the page
  // that asked must not render over the newer one.
  class Stale extends Error {}
  async function api(method, path, body) {
    const asked = routing;
    const headers = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (token()) headers.Authorization = 'Bearer ' + token();
    const resp = await fetch(base + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin', cache: 'no-store',
    });
    if (resp.status === 204) return null;
    let data = null;
    try { data = await resp.json(); } catch (e) { /* not JSON */ }
    if (asked !== routing) throw new Stale('a newer route is on screen');
    if (!resp.ok) {
      const err = (data && data.error) || {};
      throw new APIError(resp.status, err.code || 'http_' + resp.status, err.message || resp.statusText, err.field);
    }
    return data;
  }
  const enc = encodeURIComponent;

  const plain = fmt.plain;
  // explain says in words what went wrong with a call to the API, and what to do about it; what names
  // what the page asked for ("endpoint wh_1") and gone why it may be gone, for an answer that it does
  // not exist. Never the API's code or a Go error as such.
  function explain(e, what, gone) {
    if (!(e instanceof APIError)) {
      return 'The server did not answer (' + String(e && e.message || e).replace(/^TypeError: /, '') + '): check that it is running and reachable, then try again.';
    }
    switch (e.code) {
      case 'not_found':
        return what ? 'There is no ' + what + (mode === 'portal' ? ' among yours' : '') + ': ' + (gone || 'it was deleted') + ', or the link is wrong.'
          : 'It no longer exists: it was deleted or has expired meanwhile. Reload the page.';
      case 'conflict':
        return 'Someone changed it at the same time: reload the page and try again.';
      case 'internal':
        return 'The server failed to answer (the reason is in its log). Try again in a moment; if it persists, tell the operator.';
      case 'unauthorized':
        return 'Your access was refused: open the link you were given again.';
    }
    return plain(e.message);
  }
  function showError(e) {
    if (e instanceof Stale) return;
    if (e instanceof APIError && e.status === 401) { tokenPage(); main.dataset.page = 'token'; return; }
    flash(explain(e), 'error');
  }

  // --- pages ----------------------------------------------------------------------------------------
  function tokenPage() {
    const input = el('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true });
    const refused = token() ? [el('p', { class: 'flash error', text: 'The server refused the ' + (mode === 'portal' ? 'token' : 'key') + ' this tab had.' })] : [];
    render(mode === 'portal' ? 'Portal token required' : 'Operator key required', ...refused,
      el('p', { text: mode === 'portal' ? 'This portal needs a valid token. Open the link your service gave you, or paste its token here.'
        : 'This server needs an operator key (its -api-key). It is kept for this browser tab only.' }),
      el('form', {
        class: 'card form', onsubmit: (ev) => {
          ev.preventDefault();
          sessionStorage.setItem(tokenKey, input.value.trim());
          showTenant();
          clearFlash();
          location.hash = '#/';
          route();
        },
      }, el('label', { for: 'token', text: mode === 'portal' ? 'Token' : 'Key' }), input, el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Open'))));
  }

  async function listPage(params) {
    const tenant = params.get('tenant') || '';
    const q = mode === 'operator' && params.has('tenant') ? '?tenant=' + enc(tenant) : '';
    const { webhooks } = await api('GET', '/webhooks' + q);
    const tools = [];
    if (mode === 'operator') {
      const t = el('input', { id: 'tenant-filter', name: 'tenant', value: tenant, placeholder: 'all tenants', size: 16 });
      tools.push(el('form', {
        class: 'toolbar', role: 'search', onsubmit: (ev) => {
          ev.preventDefault();
          location.hash = t.value.trim() ? '#/?tenant=' + enc(t.value.trim()) : '#/';
        },
      }, el('label', { for: 'tenant-filter', text: 'Tenant' }), t, el('button', { type: 'submit' }, 'Filter')));
    }
    tools.push(el('a', { class: 'button primary', href: '#/new', id: 'new-endpoint' }, 'New endpoint'));
    const rows = webhooks.map((w) => {
      const circuit = el('td', { 'data-label': 'State', text: '…' });
      const rate = el('td', { 'data-label': 'Success (24 h)', text: '…' });
      loadHealth(w.id, circuit, rate);
      return el('tr', { 'data-id': w.id },
        el('td', { 'data-label': 'URL', class: 'url' }, el('a', { href: '#/webhooks/' + enc(w.id) }, w.url),
          w.description ? el('div', { class: 'muted', text: w.description }) : null),
        el('td', { 'data-label': 'Destination', class: 'kind', text: fmt.destination(w.url).name }),
        mode === 'operator' ? el('td', { 'data-label': 'Tenant', text: w.tenant || '—' }) : null,
        el('td', { 'data-label': 'Events' }, (w.events || []).map((e) => el('code', { class: 'pill', text: e }))),
        el('td', { 'data-label': 'Filter', text: hasFilter(w) ? 'yes' : '—' }),
        el('td', { 'data-label': 'Headers', text: Object.keys(w.headers || {}).join(', ') || '—' }),
        el('td', { 'data-label': 'Enabled' }, enabledBadge(w)),
        circuit, rate);
    });
    render(mode === 'portal' ? 'Your endpoints' : 'Endpoints',
      el('div', { class: 'bar' }, tools),
      webhooks.length === 0 ? el('p', { class: 'empty', text: 'No endpoints yet.' }) :
        el('div', { class: 'table-wrap' }, el('table', { class: 'list', id: 'endpoints' },
          el('thead', {}, el('tr', {}, ['URL', 'Destination', mode === 'operator' ? 'Tenant' : null, 'Events', 'Filter', 'Headers', 'Enabled', 'State', 'Success (24 h)']
            .filter(Boolean).map((h) => el('th', { scope: 'col', text: h })))),
          el('tbody', {}, rows))));
  }
  function hasFilter(w) { return w.filter && JSON.stringify(w.filter) !== '{}'; }

  async function loadHealth(id, circuitCell, rateCell) {
    try {
      const [h, s, c] = await Promise.all([api('GET', '/webhooks/' + enc(id) + '/health'), api('GET', '/webhooks/' + enc(id) + '/stats'),
        api('GET', '/webhooks/' + enc(id) + '/counts')]);
      circuitCell.replaceChildren(circuitBadge(h, c), el('div', { class: 'muted counts', text: fmt.counts(c) }));
      rateCell.textContent = successRate(s.hours);
    } catch (e) {
      circuitCell.textContent = rateCell.textContent = '?';
    }
  }
  // circuitBadge is an endpoint's delivery state (fmt.circuit of its health h and counts c).
  function circuitBadge(h, c) {
    const s = fmt.circuit(h, c);
    return el('span', { class: 'status circuit ' + { ok: 's-success', warn: 's-pending', bad: 's-failed' }[s.tone], text: s.text });
  }
  // enabledBadge says whether an endpoint is enabled; a disabled one's reason follows, the same on
  // every page (the endpoint's own disabled_reason, never a circuit's count).
  function enabledBadge(w, id) {
    if (!w.disabled) return el('span', { class: 'status s-success', text: 'enabled' });
    return el('span', { class: 'disabled-why', id }, el('span', { class: 'status s-failed', text: 'disabled' }),
      ' ' + (w.disabled_reason || '') + (w.disabled_at ? ' (since ' + fmtTime(w.disabled_at) + ')' : ''));
  }
  const successRate = fmt.success;

  function formPage(w) {
    const editing = !!w;
    w = w || { url: '', description: '', events: ['*'], headers: {}, disabled: false };
    const f = {};
    const field = (id, label, input, hint) => el('div', { class: 'field' }, el('label', { for: id, text: label }), input, hint ? el('small', { class: 'muted', text: hint }) : null);
    f.url = el('input', { id: 'f-url', name: 'url', type: 'url', required: true, value: w.url, placeholder: 'https://example.com/webhooks', autocomplete: 'off' });
    f.description = el('input', { id: 'f-description', name: 'description', value: w.description || '' });
    f.events = el('input', { id: 'f-events', name: 'events', value: (w.events || []).join(', '), required: true });
    // The catalog of event types (GET /event-types): a pick adds a type to the field, which still takes
    // any pattern. Filled once the catalog answers; hidden while it is empty or cannot be read.
    f.pick = el('div', { class: 'field', hidden: true });
    const catalog = api('GET', '/event-types').then(({ event_types: types }) => types || []);
    catalog.then((types) => {
      if (!types.length) return;
      const select = el('select', { id: 'f-event-type-pick', 'aria-label': 'Add an event type from the catalog' },
        el('option', { value: '', text: 'Add an event type from the catalog…' }),
        types.map((t) => el('option', { value: t.name, title: t.description || '', text: t.name + (t.deprecated ? ' (deprecated)' : '') })));
      select.addEventListener('change', () => {
        const have = f.events.value.split(/[\s,]+/).filter(Boolean);
        if (select.value && !have.includes(select.value)) f.events.value = have.concat(select.value).join(', ');
        select.value = '';
        f.events.focus();
      });
      f.pick.append(select);
      f.pick.hidden = false;
    }).catch(() => {});
    f.filter = el('textarea', { id: 'f-filter', name: 'filter', rows: 3, placeholder: '{"data.amount": {"$gte": 100}}' });
    f.filter.value = hasFilter(w) ? JSON.stringify(w.filter, null, 1) : '';
    f.headers = el('textarea', { id: 'f-headers', name: 'headers', rows: 3, placeholder: 'X-Api-Key: secret' });
    // The API never sends header values (they are credentials): each set header comes back as "".
    // Its line shows the name only, and a line left without a value keeps the value set.
    f.headers.value = Object.keys(w.headers || {}).map((k) => k + ': ').join('\n');
    f.rate = el('input', { id: 'f-rate', name: 'rate_limit', type: 'number', min: 0, value: w.rate_limit || 0 });
    f.conc = el('input', { id: 'f-conc', name: 'max_concurrency', type: 'number', min: 0, value: w.max_concurrency || 0 });
    f.enabled = el('input', { id: 'f-enabled', name: 'enabled', type: 'checkbox', checked: !w.disabled });
    f.transform = transformUI.field(w, f.events, catalog);
    if (!editing) {
      f.asym = el('input', { id: 'f-asym', name: 'asymmetric', type: 'checkbox' });
      if (mode === 'operator') f.tenant = el('input', { id: 'f-tenant', name: 'tenant', placeholder: 'none' });
    }
    const inputs = { url: f.url, description: f.description, events: f.events, filter: f.filter, headers: f.headers, rate_limit: f.rate, max_concurrency: f.conc, tenant: f.tenant };
    // fieldError shows a message beside the field it is about (or, for none, in the banner).
    const fieldError = (name, message) => {
      if (name === 'transform') { f.transform.error(message); return; }
      const input = inputs[name];
      if (!input) { flash(message, 'error'); return; }
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', 'err-' + input.id);
      input.closest('.field').append(el('p', { class: 'field-error', id: 'err-' + input.id, text: message }));
      input.focus();
    };
    const submit = async (ev) => {
      ev.preventDefault();
      clearFlash();
      for (const p of main.querySelectorAll('.field-error, .transform-marker')) p.remove();
      for (const i of main.querySelectorAll('[aria-invalid]')) { i.removeAttribute('aria-invalid'); i.removeAttribute('aria-describedby'); }
      const body = {
        url: f.url.value.trim(), description: f.description.value,
        events: f.events.value.split(/[\s,]+/).filter(Boolean), rate_limit: Number(f.rate.value) || 0,
        max_concurrency: Number(f.conc.value) || 0,
        disabled: !f.enabled.checked,
      };
      const hdrs = {};
      for (const line of f.headers.value.split('\n')) {
        if (!line.trim()) continue;
        const i = line.indexOf(':');
        if (i < 1) { fieldError('headers', 'Write each header on its own line as "Name: value".'); return; }
        hdrs[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      body.headers = hdrs;
      const transform = f.transform.input.value.trim();
      if (transform || (editing && w.transform)) body.transform = transform; // "" removes it
      if (f.filter.value.trim()) {
        try { body.filter = JSON.parse(f.filter.value); } catch (e) { fieldError('filter', 'This is not valid JSON: ' + e.message); return; }
      } else if (editing && hasFilter(w)) {
        body.filter = {};
      }
      try {
        let saved;
        if (editing) {
          saved = await api('PATCH', '/webhooks/' + enc(w.id), body);
        } else {
          if (f.asym.checked) body.asymmetric = true;
          if (f.tenant && f.tenant.value.trim()) body.tenant = f.tenant.value.trim();
          saved = await api('POST', '/webhooks', body);
        }
        flash(editing ? 'Endpoint saved.' : 'Endpoint created. Its signing secret stays hidden until you reveal it.', 'ok', true);
        location.hash = '#/webhooks/' + enc(saved.id);
      } catch (e) {
        if (e instanceof APIError && e.status === 400) fieldError(e.field, e.field === 'transform' ? e.message : plain(e.message));
        else showError(e);
      }
    };
    render(editing ? 'Edit endpoint' : 'New endpoint',
      el('form', { class: 'card form', id: 'endpoint-form', onsubmit: submit, novalidate: true },
        field('f-url', 'URL', f.url),
        field('f-description', 'Description', f.description),
        field('f-events', 'Event types', f.events, 'Comma separated: an exact type, a prefix like order.*, or *'),
        f.pick,
        field('f-filter', 'Filter (JSON, optional)', f.filter, 'Only events matching it are delivered. Operators: $eq $neq $gt $gte $lt $lte $in $nin $exist $startsWith $endsWith $or $and $not'),
        field('f-headers', 'Extra headers (optional)', f.headers, editing ? 'One "Name: value" per line; values are never shown: leave one empty to keep it' : 'One "Name: value" per line'),
        field('f-rate', 'Rate limit (requests per second, 0 = none)', f.rate),
        field('f-conc', 'Max concurrency (requests at once, 0 = none)', f.conc),
        f.transform.node,
        f.tenant ? field('f-tenant', 'Tenant (optional)', f.tenant) : null,
        el('div', { class: 'field check' }, f.enabled, el('label', { for: 'f-enabled', text: 'Enabled' })),
        f.asym ? el('div', { class: 'field check' }, f.asym, el('label', { for: 'f-asym', text: 'Sign with ed25519 (v1a) instead of HMAC' })) : null,
        el('div', { class: 'actions' },
          el('button', { type: 'submit', class: 'primary', id: 'save' }, editing ? 'Save' : 'Create endpoint'),
          el('a', { class: 'button', href: editing ? '#/webhooks/' + enc(w.id) : '#/' }, 'Cancel'))));
    f.url.focus();
  }

  async function webhookPage(id) {
    const w = await api('GET', '/webhooks/' + enc(id));
    const [health, stats, counts] = await Promise.all([api('GET', '/webhooks/' + enc(id) + '/health'), api('GET', '/webhooks/' + enc(id) + '/stats'),
      api('GET', '/webhooks/' + enc(id) + '/counts')]);
    const kind = fmt.destination(w.url);
    // A disabled endpoint gets no attempt, whatever its circuit says: its page says so, not "next try".
    const state = el('span', { id: 'delivery-state' }, circuitBadge(w.disabled ? { state: 'disabled' } : health, counts));
    // Try now ends the pause: one waiting delivery is the endpoint's next try, at once.
    const probe = mode === 'operator' && health.state === 'open' && !w.disabled ? button('Try now', async () => {
      probe.disabled = true;
      try {
        const r = await api('POST', '/webhooks/' + enc(id) + '/probe');
        flash(r.deliveries_due ? 'Trying the endpoint now: ' + r.deliveries_due + ' waiting ' + (r.deliveries_due === 1 ? 'delivery is' : 'deliveries are') +
          ' due, and the first one is its next try.' : 'The pause has ended: the next delivery to this endpoint is its next try.');
        await followProbe(id, state, health.open_until, r.deliveries_due);
      } catch (e) {
        if (e instanceof APIError && e.status === 409) { flash(explain(e), 'error'); route(); } else showError(e);
      } finally { probe.disabled = false; }
    }, { id: 'probe-now', title: 'End the pause now: one waiting delivery is sent at once to see whether the endpoint has recovered' }) : null;
    const secretOut = el('code', { id: 'secret', class: 'secret', text: '••••••••••••••••' });
    let revealed = false;
    const reveal = button('Reveal', async () => {
      if (revealed) { secretOut.textContent = '••••••••••••••••'; reveal.textContent = 'Reveal'; revealed = false; return; }
      try {
        const s = await api('GET', '/webhooks/' + enc(id) + '/secret');
        secretOut.textContent = s.public_key ? s.secret + '  (receivers verify with ' + s.public_key + ')' : s.secret;
        reveal.textContent = 'Hide';
        revealed = true;
      } catch (e) { showError(e); }
    }, { id: 'reveal-secret' });
    const rotate = confirmButton('Rotate secret', 'Rotate now? The old secret signs for 24 h more', async () => {
      try {
        await api('POST', '/webhooks/' + enc(id) + '/rotate-secret', {});
        secretOut.textContent = '••••••••••••••••'; reveal.textContent = 'Reveal'; revealed = false;
        flash('Secret rotated. The previous secret keeps signing alongside it for 24 hours.');
      } catch (e) { showError(e); }
    }, { id: 'rotate-secret' });
    const sendTest = button('Send test event', async () => {
      sendTest.disabled = true;
      try {
        const d = await api('POST', '/webhooks/' + enc(id) + '/test');
        flash('Test event sent: delivery ' + d.id + ' is ' + d.status + (d.last_status_code && !kind.broker ? ' (HTTP ' + d.last_status_code + ')' : '') + '.');
        route();
      } catch (e) { showError(e); } finally { sendTest.disabled = false; }
    }, { id: 'send-test', class: 'primary' });
    const toggle = button(w.disabled ? 'Enable' : 'Disable', async () => {
      try {
        await api('PATCH', '/webhooks/' + enc(id), { disabled: !w.disabled });
        flash(w.disabled ? 'Endpoint enabled.' : 'Endpoint disabled.');
        route();
      } catch (e) { showError(e); }
    }, { id: 'toggle' });
    const del = confirmButton('Delete', 'Really delete?', async () => {
      try {
        await api('DELETE', '/webhooks/' + enc(id));
        flash('Endpoint deleted.', 'ok', true);
        location.hash = '#/';
      } catch (e) { showError(e); }
    }, { id: 'delete', class: 'danger' });

    // Recover: re-send the failed deliveries created in a time window (in UTC, as every time shown).
    const dayAgo = fmt.utcField(new Date(Date.now() - 24 * 3600e3));
    const since = timeField('r-since', dayAgo);
    const until = timeField('r-until', '', 'empty: now');
    const recover = el('form', {
      class: 'inline-form', id: 'recover-form', novalidate: true, onsubmit: async (ev) => {
        ev.preventDefault();
        const from = readTime(since), to = until.value.trim() ? readTime(until) : undefined;
        if (!from || to === null) return;
        if (from >= (to || new Date())) { flash('From is after to: write the window\'s start before its end, both in UTC.', 'error'); return; }
        try {
          const q = '?since=' + enc(fmt.rfc3339(from)) + (to ? '&until=' + enc(fmt.rfc3339(to)) : '');
          const r = await api('POST', '/webhooks/' + enc(id) + '/recover' + q);
          flash('Recover: ' + r.redelivered + ' failed deliveries sent again.');
          if (r.redelivered) await followCounts(id);
        } catch (e) { showError(e); }
      },
    }, el('label', { for: 'r-since', text: 'From (UTC)' }), since, el('label', { for: 'r-until', text: 'to (UTC; empty: now)' }), until,
    el('button', { type: 'submit', id: 'recover' }, 'Recover failed deliveries'));

    const replaySince = timeField('p-since', dayAgo);
    const replay = el('form', {
      class: 'inline-form', id: 'replay-form', novalidate: true, onsubmit: async (ev) => {
        ev.preventDefault();
        const from = readTime(replaySince);
        if (!from) return;
        try {
          const body = { since: fmt.rfc3339(from) };
          let scheduled = 0;
          for (let page = 0; page < 100; page++) { // each call reads at most one page of the event index
            const r = await api('POST', '/webhooks/' + enc(id) + '/replay', body);
            scheduled += r.scheduled;
            if (!r.next_cursor) break;
            body.cursor = r.next_cursor;
          }
          flash('Replay: ' + scheduled + ' missed events scheduled.');
        } catch (e) { showError(e); }
      },
    }, el('label', { for: 'p-since', text: 'Since (UTC)' }), replaySince,
    el('button', { type: 'submit', id: 'replay' }, 'Replay missed events'));

    render('Endpoint',
      el('p', { class: 'crumbs' }, el('a', { href: '#/' }, '← Endpoints')),
      el('section', { class: 'card' },
        dl([
          ['URL', el('code', { class: 'wrap', text: w.url })],
          ['Destination', el('span', { id: 'destination-kind', text: kind.name })],
          ['ID', el('code', { text: w.id })],
          mode === 'operator' && ['Tenant', w.tenant || '—'],
          ['Description', w.description || '—'],
          ['Events', (w.events || []).map((e) => el('code', { class: 'pill', text: e }))],
          ['Filter', hasFilter(w) ? el('code', { class: 'wrap', text: JSON.stringify(w.filter) }) : '—'],
          ['Transformation', w.transform ? el('pre', { class: 'transform-shown', id: 'endpoint-transform', text: w.transform })
            : el('span', { id: 'endpoint-transform', text: 'none: each event is sent as it is' })],
          ['Headers', Object.keys(w.headers || {}).join(', ') || '—'],
          ['Rate limit', w.rate_limit ? w.rate_limit + ' / s' : 'none'],
          ['Max concurrency', w.max_concurrency ? w.max_concurrency + ' at once' : 'none'],
          ['Enabled', enabledBadge(w, 'disabled-why')],
          ['Delivery state', el('span', { class: 'secret-row' }, state, probe)],
          ['Deliveries', [el('span', { id: 'delivery-counts', text: fmt.counts(counts) }), counts.failed ? [' ', el('a', {
            href: '#/webhooks/' + enc(id) + '/deliveries?status=failed' }, 'show failed')] : null]],
          ['Success (24 h)', el('span', { id: 'success-rate', text: successRate(stats.hours) })],
          ['Signing', w.public_key ? 'ed25519 (v1a)' : 'HMAC-SHA256 (v1)'],
          ['Secret', el('span', { class: 'secret-row' }, secretOut, reveal, rotate)],
        ]),
        el('div', { class: 'actions' }, sendTest,
          el('a', { class: 'button', href: '#/webhooks/' + enc(id) + '/deliveries', id: 'show-deliveries' }, 'Deliveries'),
          el('a', { class: 'button', href: '#/webhooks/' + enc(id) + '/edit', id: 'edit' }, 'Edit'), toggle, del)),
      el('section', { class: 'card' }, el('h2', { text: 'Attempts per hour, last 24 hours' }), chart(stats.hours)),
      el('section', { class: 'card' }, el('h2', { text: 'Recover' }),
        el('p', { class: 'muted', text: 'Send again every failed delivery created in a time window (e.g. after an outage).' }), recover),
      counts.replay_available ? el('section', { class: 'card' }, el('h2', { text: 'Replay' }),
        el('p', { class: 'muted', text: 'Send this endpoint the events it subscribes to that it never received, accepted since a time.' }), replay)
        : mode === 'operator' ? el('section', { class: 'card' }, el('h2', { text: 'Replay' }),
          el('p', { class: 'muted', id: 'replay-off', text: 'Replaying missed events needs Options.ReplayIndex, which is off: only events accepted while it is on can be replayed.' })) : null);
    const box = main.querySelector('.chart-scroll');
    box.scrollLeft = box.scrollWidth; // on a narrow screen the chart scrolls: show the latest hours
  }
  // followProbe shows the circuit while a probe now is decided: it reads it every half second, at most
  // 20 times, until it is closed or open again after the probe failed (then it says so); it stops when
  // the user leaves the page. Then the page is shown afresh.
  async function followProbe(id, state, openUntil, due) {
    for (let i = 0; i < 20; i++) {
      await new Promise((ok) => setTimeout(ok, 500));
      const h = await api('GET', '/webhooks/' + enc(id) + '/health');
      state.replaceChildren(circuitBadge(h, { parked: due }));
      if (h.state === 'closed') { flash('The endpoint answered: it is delivering again.'); route(); return; }
      if (h.state === 'open' && h.open_until && h.open_until !== openUntil && new Date(h.open_until) > new Date()) {
        flash('The endpoint still fails: paused again, next try ' + fmt.soon(h.open_until) + '.', 'error');
        route();
        return;
      }
    }
  }
  // followCounts shows an endpoint's delivery counts while deliveries sent again are decided: it reads
  // them at once, then every half second, at most 60 times, until none is pending; it stops when the
  // user leaves the page. Then the page is shown afresh (its chart and state too).
  async function followCounts(id) {
    for (let i = 0; i < 60; i++) {
      if (i) await new Promise((ok) => setTimeout(ok, 500));
      const out = document.getElementById('delivery-counts');
      if (!out) return;
      const c = await api('GET', '/webhooks/' + enc(id) + '/counts');
      out.textContent = fmt.counts(c);
      if (!c.pending) { route(); return; }
    }
  }
  // timeField is a field for a time in UTC, 24-hour, written as the UI shows times ("2026-12-03 12:40"):
  // the same on every page and in every browser, whatever its zone or locale.
  function timeField(id, value, title) {
    return el('input', { id, name: id, type: 'text', value, placeholder: 'YYYY-MM-DD HH:MM', size: 16, inputmode: 'numeric', autocomplete: 'off', title });
  }
  // readTime reads a time field (fmt.parseUTCField); one that holds no time is marked, and says how to
  // write it (null).
  function readTime(input) {
    const d = fmt.parseUTCField(input.value);
    if (d) { input.removeAttribute('aria-invalid'); return d; }
    input.setAttribute('aria-invalid', 'true');
    input.focus();
    flash('Write the time in UTC as year-month-day hours:minutes, e.g. ' + fmt.utcField(new Date()) + ' (it is ' + fmt.utcField(new Date()) + ' UTC now).', 'error');
    return null;
  }

  // chart draws the hourly attempts as stacked bars (successes below, failures above).
  function chart(hours) {
    const W = 720, H = 200, left = 36, bottom = 24, top = 8;
    // An even top, so that the middle line is a whole number of attempts, labelled exactly.
    const most = Math.max(1, ...hours.map((h) => h.success + h.failed));
    const max = most + (most % 2);
    const step = (W - left) / hours.length, bw = Math.max(2, step - 4);
    const y = (v) => (H - bottom) - (v / max) * (H - bottom - top);
    const g = svg('g', {});
    for (const t of [0, max / 2, max]) {
      g.append(svg('line', { x1: left, x2: W, y1: y(t), y2: y(t), class: 'grid' }));
      g.append(svg('text', { x: left - 6, y: y(t) + 4, class: 'axis', 'text-anchor': 'end' }, String(t)));
    }
    let ok = 0, bad = 0;
    hours.forEach((h, i) => {
      ok += h.success; bad += h.failed;
      const x = left + i * step + 2, d = new Date(h.hour);
      const label = fmt.clock(d).slice(0, 5) + ' UTC: ' + h.success + ' succeeded, ' + h.failed + ' failed';
      const bar = svg('g', { class: 'bar-hour' }, svg('title', {}, label));
      if (h.success) bar.append(svg('rect', { x, y: y(h.success), width: bw, height: (H - bottom) - y(h.success), class: 'ok' }));
      if (h.failed) bar.append(svg('rect', { x, y: y(h.success + h.failed), width: bw, height: y(h.success) - y(h.success + h.failed), class: 'bad' }));
      bar.append(svg('rect', { x, y: top, width: bw, height: H - bottom - top, class: 'hit' }));
      g.append(bar);
      if (i % 6 === 0 || i === hours.length - 1) {
        const anchor = i === 0 ? 'start' : i === hours.length - 1 ? 'end' : 'middle';
        g.append(svg('text', { x: i === 0 ? x : i === hours.length - 1 ? x + bw : x + bw / 2, y: H - 6, class: 'axis', 'text-anchor': anchor }, fmt.clock(d).slice(0, 5)));
      }
    });
    const s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'chart', id: 'chart', role: 'img',
      'aria-label': 'Attempts per hour over the last 24 hours: ' + ok + ' succeeded, ' + bad + ' failed' }, g);
    return el('figure', { class: 'chart-box' }, el('div', { class: 'chart-scroll' }, s),
      el('figcaption', { class: 'legend' }, el('span', { class: 'key ok' }), ' succeeded (' + ok + ')  ', el('span', { class: 'key bad' }), ' failed (' + bad + ')'));
  }

  const helpers = { mode, main, el, api, enc, render, fmtTime, fmtDuration, statusBadge, dl, button, flash, showError, route, APIError, Stale, plain,
    explain, timeField, readTime };
  const { deliveriesPage, searchPage, backlogPage } = window.webhooksDeliveryPages(helpers);
  const { deliveryPage, queuePage } = window.webhooksDeliveryDetail(helpers);
  const { eventTypesPage, eventTypePage } = window.webhooksCatalog(helpers);
  const transformUI = window.webhooksTransform(helpers);

  // --- router ---------------------------------------------------------------------------------------
  let routing = 0;
  async function route() {
    takeToken();
    const n = ++routing;
    const [path, query] = (location.hash.replace(/^#/, '') || '/').split('?');
    const params = new URLSearchParams(query || '');
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    main.dataset.page = '';
    let page = 'notfound';
    try {
      if (mode === 'portal' && !token()) { tokenPage(); main.dataset.page = 'token'; return; }
      if (parts.length === 0) { page = 'endpoints'; await listPage(params); }
      else if (parts[0] === 'new') { page = 'new'; formPage(null); }
      else if (parts[0] === 'webhooks' && parts.length === 2) { page = 'endpoint'; await webhookPage(parts[1]); }
      else if (parts[0] === 'webhooks' && parts[2] === 'edit') { page = 'edit'; formPage(await api('GET', '/webhooks/' + enc(parts[1]))); }
      else if (parts[0] === 'webhooks' && parts[2] === 'deliveries') { page = 'deliveries'; await deliveriesPage(parts[1], params); }
      else if (parts[0] === 'deliveries' && parts.length === 2) { page = 'delivery'; await deliveryPage(parts[1]); }
      else if (parts[0] === 'deliveries' && parts[2] === 'queue') { page = 'queue'; await queuePage(parts[1]); }
      else if (parts[0] === 'deliveries' && parts.length === 1) { page = 'search'; await searchPage(params); }
      else if (parts[0] === 'backlog' && mode === 'operator') { page = 'backlog'; await backlogPage(); }
      else if (parts[0] === 'event-types' && parts.length === 1) { page = 'event-types'; await eventTypesPage(); }
      else if (parts[0] === 'event-types' && parts.length === 2) { page = 'event-type'; await eventTypePage(parts[1]); }
      else render('Not found', el('p', {}, el('a', { href: '#/' }, 'Back to the endpoints')));
      if (n === routing) main.dataset.page = page;
    } catch (e) {
      if (n !== routing) return;
      if (e instanceof APIError && e.status === 401) { tokenPage(); main.dataset.page = 'token'; return; }
      main.dataset.page = 'error';
      // What the page asked for, for an answer that it does not exist.
      const [what, gone] = { endpoint: ['endpoint'], edit: ['endpoint'], deliveries: ['endpoint'],
        delivery: ['delivery', 'it has expired (a delivery is kept for its retention)'], queue: ['delivery', 'it has expired (a delivery is kept for its retention)'],
        'event-type': ['event type', 'it was removed from the catalog'] }[page] || [];
      const back = page === 'event-type' ? el('a', { href: '#/event-types' }, 'See the event types')
        : page === 'delivery' || page === 'queue' ? el('a', { href: '#/deliveries' }, 'Search the deliveries') : el('a', { href: '#/' }, 'See the endpoints');
      render(e instanceof APIError && e.status === 404 ? 'Not found' : 'Error',
        el('p', { class: 'flash error', id: 'error-words', text: explain(e, what && what + ' ' + parts[1], gone) }), el('p', {}, back));
    }
  }

  document.getElementById('mode').textContent = mode === 'portal' ? 'portal' : 'operator';
  showTenant();
  if (mode === 'portal') document.getElementById('nav-backlog').remove(); // operator only
  const signout = document.getElementById('signout');
  if (mode === 'portal') {
    signout.hidden = false;
    signout.addEventListener('click', () => { sessionStorage.removeItem(tokenKey); showTenant(); tokenPage(); });
  }
  // A link to the route on screen (e.g. "New endpoint" on the new-endpoint form) renders it afresh.
  document.addEventListener('click', (ev) => {
    const a = ev.target instanceof Element ? ev.target.closest('a[href^="#/"]') : null;
    if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    if (a.getAttribute('href') !== location.hash) return;
    ev.preventDefault();
    clearFlash();
    route();
  });
  window.addEventListener('hashchange', () => {
    if (flashBox.dataset.keep) delete flashBox.dataset.keep;
    else clearFlash();
    route();
  });
  route();
})();
