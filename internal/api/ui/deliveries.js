// The webhooks UI's delivery pages: an endpoint's deliveries, the search across endpoints and the
// backlog (delivery.js has one delivery's pages). app.js calls window.webhooksDeliveryPages with its helpers (the same DOM
// building, API calls and router) and routes to the pages it returns.
'use strict';

window.webhooksDeliveryPages = function (ui) {
  const { mode, main, el, api, enc, render, fmtTime, fmtDuration, statusBadge, dl, button, flash, showError, route, APIError, Stale, plain, timeField, readTime } = ui;
  const fmt = window.webhooksFormat;

  // lastAnswer is a delivery's last answer in a list, for an HTTP endpoint ("503", "no answer") or a
  // broker (no status code: "taken", "not taken"), or "not attempted".
  function lastAnswer(d, broker) {
    if (d.attempts === 0) return 'not attempted';
    if (broker) return d.status === 'success' ? 'taken' : 'not taken';
    return d.last_status_code ? String(d.last_status_code) : d.last_error ? 'no answer' : '—';
  }

  async function deliveriesPage(id, params) {
    const status = params.get('status') || '';
    const cursor = params.get('cursor') || '';
    const q = new URLSearchParams({ limit: '20' });
    if (status) q.set('status', status);
    if (cursor) q.set('cursor', cursor);
    const [w, page] = await Promise.all([api('GET', '/webhooks/' + enc(id)), api('GET', '/webhooks/' + enc(id) + '/deliveries?' + q)]);
    const href = (st, cur) => {
      const p = new URLSearchParams();
      if (st) p.set('status', st);
      if (cur) p.set('cursor', cur);
      const s = p.toString();
      return '#/webhooks/' + enc(id) + '/deliveries' + (s ? '?' + s : '');
    };
    const select = el('select', { id: 'status-filter', name: 'status', onchange: () => { location.hash = href(select.value, ''); } },
      ['', 'pending', 'success', 'failed', 'skipped'].map((s) => el('option', { value: s, selected: s === status }, s || 'all')));
    const broker = fmt.destination(w.url).broker;
    const rows = page.deliveries.map((d) => el('tr', { 'data-id': d.id, 'data-status': d.status },
      el('td', { 'data-label': 'Created' }, el('a', { href: '#/deliveries/' + enc(d.id) }, fmtTime(d.created_at))),
      el('td', { 'data-label': 'Event' }, el('code', { text: d.event_type }), el('div', { class: 'muted', text: d.event_id })),
      el('td', { 'data-label': 'Status' }, statusBadge(d.status)),
      el('td', { 'data-label': 'Attempts', text: d.attempts }),
      el('td', { 'data-label': 'Last answer', title: d.why || '', text: lastAnswer(d, broker) }),
      el('td', { 'data-label': 'Next attempt', text: d.status === 'pending' ? fmtTime(d.next_attempt_at) : '—' }),
      el('td', { 'data-label': 'Why', class: 'muted why', text: d.why || '—' })));
    render('Deliveries',
      el('p', { class: 'crumbs' }, el('a', { href: '#/webhooks/' + enc(id) }, '← ' + w.url)),
      el('div', { class: 'bar' }, el('div', { class: 'toolbar' }, el('label', { for: 'status-filter', text: 'Status' }), select),
        button('Refresh', () => route(), { id: 'refresh' })),
      page.deliveries.length === 0 ? el('p', { class: 'empty', text: 'No deliveries' + (status ? ' with status ' + status : '') + '.' }) :
        el('div', { class: 'table-wrap' }, el('table', { class: 'list', id: 'deliveries' },
          el('thead', {}, el('tr', {}, ['Created', 'Event', 'Status', 'Attempts', 'Last answer', 'Next attempt', 'Why'].map((h) => el('th', { scope: 'col', text: h })))),
          el('tbody', {}, rows))),
      el('nav', { class: 'pager', 'aria-label': 'Pages' },
        cursor ? el('a', { class: 'button', href: href(status, ''), id: 'newest' }, '« Newest') : null,
        page.next_cursor ? el('a', { class: 'button', href: href(status, page.next_cursor), id: 'older' }, 'Older »') : null));
  }

  // searchPage is the deliveries of every endpoint in view, found by delivery or event id, status,
  // event type and when they were created (from, to: in UTC, as every time the UI shows).
  async function searchPage(params) {
    const q = new URLSearchParams({ limit: '50' });
    for (const k of ['id', 'status', 'event_type', 'from', 'to', 'cursor']) if (params.get(k)) q.set(k, params.get(k));
    const [{ webhooks }, { deliveries, next_cursor: next, stopped }] = await Promise.all([api('GET', '/webhooks'), api('GET', '/deliveries?' + q)]);
    const more = () => { // the same search, continued where this page stopped
      const p = new URLSearchParams(params);
      p.set('cursor', next);
      return '#/deliveries?' + p;
    };
    const urls = Object.fromEntries(webhooks.map((w) => [w.id, w.url]));
    const broker = (d) => fmt.destination(urls[d.webhook_id]).broker;
    const id = el('input', { id: 'search-id', name: 'id', value: params.get('id') || '', placeholder: 'dlv_… or an event id', size: 28 });
    const status = el('select', { id: 'search-status', name: 'status' },
      ['', 'pending', 'success', 'failed', 'skipped'].map((v) => el('option', { value: v, selected: v === (params.get('status') || '') }, v || 'any status')));
    const types = [...new Set(webhooks.flatMap((w) => w.events || []).filter((e) => !e.includes('*')))].sort();
    const type = el('input', { id: 'search-type', name: 'event_type', value: params.get('event_type') || '', placeholder: 'any event type', list: 'event-types', size: 18 });
    const field = (name) => (params.get(name) ? fmt.utcField(new Date(params.get(name))) : '');
    const from = timeField('search-from', field('from'));
    const to = timeField('search-to', field('to'), 'empty: now');
    const form = el('form', {
      class: 'toolbar', role: 'search', id: 'search-form', novalidate: true, onsubmit: (ev) => {
        ev.preventDefault();
        const p = new URLSearchParams();
        if (id.value.trim()) p.set('id', id.value.trim());
        if (status.value) p.set('status', status.value);
        if (type.value.trim()) p.set('event_type', type.value.trim());
        for (const [name, input] of [['from', from], ['to', to]]) {
          if (!input.value.trim()) continue;
          const t = readTime(input);
          if (!t) return;
          p.set(name, fmt.rfc3339(t));
        }
        location.hash = '#/deliveries' + (p.toString() ? '?' + p : '');
      },
    }, el('label', { for: 'search-id', text: 'Delivery or event id' }), id, el('label', { for: 'search-status', text: 'Status' }), status,
    el('label', { for: 'search-type', text: 'Event type' }), type, el('datalist', { id: 'event-types' }, types.map((t) => el('option', { value: t }))),
    el('label', { for: 'search-from', text: 'Created from (UTC)' }), from, el('label', { for: 'search-to', text: 'to (UTC)' }), to,
    el('button', { type: 'submit', id: 'search' }, 'Search'));
    const rows = deliveries.map((d) => el('tr', { 'data-id': d.id, 'data-status': d.status },
      el('td', { 'data-label': 'Created' }, el('a', { href: '#/deliveries/' + enc(d.id) }, fmtTime(d.created_at))),
      el('td', { 'data-label': 'Endpoint', class: 'url' }, el('a', { href: '#/webhooks/' + enc(d.webhook_id) }, urls[d.webhook_id] || d.webhook_id)),
      el('td', { 'data-label': 'Event' }, el('code', { text: d.event_type }), el('div', { class: 'muted', text: d.event_id })),
      el('td', { 'data-label': 'Status' }, statusBadge(d.status)),
      el('td', { 'data-label': 'Attempts', text: d.attempts }),
      el('td', { 'data-label': 'Last answer', title: d.why || '', text: lastAnswer(d, broker(d)) }),
      el('td', { 'data-label': 'Why', class: 'muted why', text: d.why || '—' })));
    const none = next ? 'No delivery matches among those examined so far.' : 'No delivery matches.';
    render('Deliveries', el('div', { class: 'bar' }, form),
      deliveries.length === 0 ? el('p', { class: 'empty', id: 'no-deliveries', text: none }) :
        el('div', { class: 'table-wrap' }, el('table', { class: 'list', id: 'all-deliveries' },
          el('thead', {}, el('tr', {}, ['Created', 'Endpoint', 'Event', 'Status', 'Attempts', 'Last answer', 'Why'].map((h) => el('th', { scope: 'col', text: h })))),
          el('tbody', {}, rows))),
      el('nav', { class: 'pager', 'aria-label': 'Pages' },
        params.get('cursor') ? el('a', { class: 'button', href: '#/deliveries?' + new URLSearchParams([...params].filter(([k]) => k !== 'cursor')), id: 'search-newest' }, '« Newest') : null,
        next ? el('a', { class: 'button', href: more(), id: 'search-more' }, 'More »') : null),
      stopped === 'budget' ? el('p', { class: 'muted', id: 'search-budget', text: 'This search stopped after examining as many deliveries as one search may; "More" continues it.' }) : null,
      el('p', { class: 'muted', text: 'Without an id, every endpoint\'s deliveries' + (params.get('to') ? ' created by ' + fmtTime(params.get('to')) : '') +
        ' are searched, newest first, 50 at a time. A delivery sent again later is listed by when it was sent again.' }));
  }

  // backlogPage is the delivery backlog (operator only): the deliveries due now are those waiting for a
  // worker and those their endpoint holds (paused, disabled, at its MaxConcurrency), each said so.
  async function backlogPage() {
    const b = await api('GET', '/backlog');
    const held = b.held || [];
    const heldDue = held.reduce((n, h) => n + h.due, 0);
    const waiting = Math.max(b.due - heldDue, 0);
    const age = b.oldest_due_age_ms >= 1000 ? (b.oldest_due_age_ms / 1000).toFixed(1) + ' s' : b.oldest_due_age_ms + ' ms';
    const oldest = !waiting ? (b.due ? 'nothing waits for a worker' : 'nothing is due') :
      fmtTime(b.oldest_due_at) + ' (' + age + ' behind' + (heldDue ? ', held deliveries included' : '') + ')';
    render('Backlog',
      el('section', { class: 'card', id: 'backlog' }, dl([
        ['Due now, waiting for a worker', el('strong', { id: 'backlog-due', text: String(waiting) })],
        heldDue && ['Due now, held by their endpoint', el('div', {}, el('strong', { id: 'backlog-held-due', text: String(heldDue) }),
          el('ul', { id: 'backlog-held' }, held.map((h) => el('li', { 'data-id': h.webhook_id },
            h.due + ' for ', el('a', { href: '#/webhooks/' + enc(h.webhook_id) }, h.url), ' held: ' + fmt.held(h)))))],
        ['Scheduled (a retry, or a paused endpoint\'s next try)', el('span', { id: 'backlog-scheduled', text: String(b.scheduled) })],
        ['In flight', String(b.leased)],
        ['Oldest due', el('span', { id: 'backlog-oldest', text: oldest })],
        ['Paused endpoints', el('span', { id: 'backlog-open', text: String(b.paused_endpoints) })],
        ['Queues holding deliveries', String(b.webhooks)],
        ['Counted at', fmtTime(b.at)],
        b.truncated && ['Note', 'Some shards had more to count than the bounds allow: these are lower bounds.'],
      ]), el('div', { class: 'actions' }, button('Refresh', () => route(), { id: 'refresh' }))));
  }

  return { deliveriesPage, searchPage, backlogPage };
};
