// The webhooks UI's pages of one delivery: its detail (facts, timeline, the request as rebuilt, the
// payload, the attempts) and, for an ordered delivery, its order key's queue. app.js calls
// window.webhooksDeliveryDetail with its helpers and routes to the pages it returns.
'use strict';

window.webhooksDeliveryDetail = function (ui) {
  const { el, api, enc, render, fmtTime, fmtDuration, statusBadge, dl, button, flash, showError, route, APIError, Stale, plain, explain } = ui;
  const fmt = window.webhooksFormat;
  // sentence is words from the API as a sentence: capitalized.
  const sentence = (s) => s.charAt(0).toUpperCase() + s.slice(1);

  // Where a request header's value comes from, in words (GET /deliveries/{id}/request's source).
  const headerNotes = {
    fixed: 'the same on every attempt',
    attempt: 'the latest attempt\'s',
    signed: 'computed for each attempt, not stored',
    endpoint: 'the endpoint\'s own setting as it is now; its value is never shown',
  };

  // timeline is a delivery's story, oldest first: created, each attempt kept (broker: to a broker,
  // whose attempts have no status code), each redelivery found, and what came of it (failed for good,
  // and why) or what comes next.
  function timeline(d, broker) {
    const first = d.attempts - (d.history || []).length + 1;
    const items = [{ at: d.created_at, what: 'Created' }];
    if (first > 1) items.push({ at: (d.history[0] || {}).at, what: (first - 1) + ' earlier attempts are no longer kept', muted: true });
    (d.history || []).forEach((a, i) => {
      const o = fmt.attempt(a, broker);
      items.push({ at: a.at, kind: o.ok ? 'ok' : 'bad', what: 'Attempt ' + (first + i) + ': ' + o.text + ' in ' + fmtDuration(a.duration_ms * 1e6) });
    });
    for (const at of d.redelivered_at || []) items.push({ at, what: 'Sent again (redelivered)', kind: 'redo' });
    items.sort((a, b) => new Date(a.at) - new Date(b.at) || (b.kind === 'redo') - (a.kind === 'redo')); // a redelivery before its attempt
    if (d.status === 'failed') {
      items.push({ at: d.updated_at, what: sentence(d.why || 'failed for good'), kind: 'bad', id: 'timeline-failed' });
    } else if (d.status === 'skipped') {
      items.push({ at: d.updated_at, what: sentence(d.why || 'skipped: nothing was sent'), muted: true });
    } else if (d.status === 'pending' && d.next_attempt_at) {
      const parked = /circuit open/.test(d.last_error || '');
      items.push({ at: d.next_attempt_at, what: parked ? 'Waiting for the endpoint\'s next try' : 'Next attempt', muted: true });
    } else if (d.status === 'pending') {
      items.push({ what: d.why || 'Waiting for the deliveries before it in its order key', muted: true });
    }
    return el('ol', { class: 'timeline', id: 'timeline' }, items.map((it) => el('li', { class: it.kind ? 't-' + it.kind : it.muted ? 'muted' : null, id: it.id },
      el('span', { class: 'when', text: it.at ? fmtTime(it.at) : '' }), ' ', it.what)));
  }

  // requestCard is the request as rebuilt: what the API can say exactly, and what it withholds. A
  // broker's message has no method (r.method is "").
  function requestCard(r) {
    const broker = !r.method;
    const rows = r.headers.map((h) => el('tr', { 'data-name': h.name, 'data-source': h.source },
      el('td', { 'data-label': 'Header' }, el('code', { text: h.name })),
      el('td', { 'data-label': 'Value' }, h.value ? el('code', { class: 'wrap', text: h.value }) :
        el('span', { class: 'muted', text: h.source === 'attempt' ? 'no attempt yet' : 'not shown' })),
      el('td', { 'data-label': 'Sent', class: 'muted', text: headerNotes[h.source] || h.source })));
    return el('section', { class: 'card', id: 'request' }, el('h2', { text: broker ? 'Message' : 'Request' }),
      el('p', { class: 'muted', text: 'Rebuilt, not stored: the service keeps no copy of the ' + (broker ? 'messages it published' : 'requests it sent') +
        '. Values shown are exactly what was sent; the endpoint\'s own headers are listed as they are configured now, which may differ from an earlier attempt.' }),
      dl([!broker && ['Method', el('code', { text: r.method })], ['URL', el('code', { class: 'wrap', text: r.url })]]),
      el('div', { class: 'table-wrap' }, el('table', { class: 'list', id: 'request-headers' },
        el('thead', {}, el('tr', {}, ['Header', 'Value', 'Sent'].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, rows))));
  }

  async function deliveryPage(id) {
    const d = await api('GET', '/deliveries/' + enc(id));
    let endpoint = null;
    try { endpoint = await api('GET', '/webhooks/' + enc(d.webhook_id)); } catch (e) { if (e instanceof Stale) throw e; /* deleted */ }
    const [{ payload, transformed, payload_expired: expired, payload_expired_at: expiredAt }, request, health] = await Promise.all([api('GET', '/deliveries/' + enc(id) + '/payload'),
      endpoint ? api('GET', '/deliveries/' + enc(id) + '/request') : null,
      endpoint ? api('GET', '/webhooks/' + enc(d.webhook_id) + '/health') : null]);
    // Retry now is not offered when it cannot work (the API would refuse it): the endpoint disabled or
    // paused, or an ordered delivery behind earlier ones of its key.
    const held = endpoint && endpoint.disabled ? 'The endpoint is disabled: nothing is sent to it'
      : health && (health.state === 'open' || health.state === 'probing') ? 'The endpoint is paused: its deliveries wait for its next try'
      : d.order_position > 0 ? 'It waits for the earlier deliveries of its order key' : '';
    const retry = d.status !== 'pending' ? null : button('Retry now', async () => {
      retry.disabled = true;
      try {
        await api('POST', '/deliveries/' + enc(id) + '/retry');
        flash('The delivery is due now: the next worker sends it.');
        route();
      } catch (e) {
        // Refused: the delivery or its endpoint changed since the page was read. Say why, and show the
        // page afresh: its button then says why it is not offered.
        if (e instanceof APIError && e.status === 409) { flash(explain(e), 'error'); route(); } else showError(e);
      } finally { retry.disabled = false; }
    }, { id: 'retry-now', class: 'primary', disabled: !!held, title: held || null });
    // A failed delivery is redelivered; one that succeeded (unordered) is sent once more, with the same
    // webhook-id, for a receiver that lost it.
    // A delivery whose payload expired (Options.PayloadRetention) has nothing to send again.
    const resendable = !expired && (d.status === 'failed' || (d.status === 'success' && !d.order_key));
    const redeliver = button(d.status === 'success' ? 'Send again' : 'Redeliver', async () => {
      redeliver.disabled = true;
      try {
        const r = await api('POST', '/deliveries/' + enc(id) + '/redeliver');
        flash(r.attempts > d.attempts ? 'Sent again: the delivery is now ' + r.status + '.'
          : 'Not sent again: the delivery is ' + r.status + (d.status === 'success' ? ' and was attempted moments ago.' : '.'));
        route();
      } catch (e) { showError(e); } finally { redeliver.disabled = false; }
    }, { id: 'redeliver', class: d.status === 'failed' ? 'primary' : '', disabled: !resendable,
      title: resendable ? null : expired ? 'Its payload expired: there is nothing to send again'
        : (d.order_key ? 'Only a failed ordered delivery is sent again' : 'A pending delivery is on its way: use Retry now') });
    // A broker's attempt has no status code: its outcome is taken or not, its answer a receipt.
    const broker = endpoint ? fmt.destination(endpoint.url).broker : request ? !request.method : !(d.history || []).some((a) => a.status_code);
    const outcome = broker ? 'Outcome' : 'Status code', answer = broker ? 'Receipt' : 'Response';
    const attempts = (d.history || []).map((a, i) => el('tr', {},
      el('td', { 'data-label': '#', text: d.attempts - (d.history.length - 1 - i) }),
      el('td', { 'data-label': 'At', text: fmtTime(a.at) }),
      el('td', { 'data-label': outcome }, broker ? el('span', { class: 'status ' + (a.error ? 's-failed' : 's-success'), text: a.error ? 'not taken' : 'taken' })
        : a.status_code ? el('span', { class: 'status ' + (a.status_code < 300 ? 's-success' : 's-failed'), text: a.status_code }) : '—'),
      el('td', { 'data-label': 'Duration', text: fmtDuration(a.duration_ms * 1e6) }),
      el('td', { 'data-label': 'Error', text: a.error || '—' }),
      el('td', { 'data-label': answer, class: 'resp' }, a.response ? el('pre', { text: a.response }) : '—')));
    const last = (d.history || [])[(d.history || []).length - 1];
    const position = d.order_position === 0 ? 'first in its order key' : d.order_position > 0 ? d.order_position + ' ahead of it' : 'no longer in its order key';
    render('Delivery',
      el('p', { class: 'crumbs' }, el('a', { href: '#/webhooks/' + enc(d.webhook_id) + '/deliveries' }, '← Deliveries')),
      el('section', { class: 'card' },
        dl([
          ['ID', el('code', { id: 'delivery-id', text: d.id })],
          ['Endpoint', endpoint ? [el('a', { href: '#/webhooks/' + enc(d.webhook_id), id: 'delivery-endpoint' }, endpoint.url), el('div', { class: 'muted', text: d.webhook_id })] : d.webhook_id + ' (deleted)'],
          ['Event', [el('code', { text: d.event_type }), ' ', el('span', { class: 'muted', text: d.event_id })]],
          ['Status', el('span', { id: 'delivery-status' }, statusBadge(d.status))],
          d.order_key && ['Order key', [el('code', { text: d.order_key }), ' ', el('span', { class: 'muted', id: 'delivery-position', text: position }), ' ',
            el('a', { href: '#/deliveries/' + enc(id) + '/queue', id: 'show-queue' }, 'See its queue')]],
          ['Attempts', String(d.attempts)],
          ['Next attempt', d.status === 'pending' ? fmtTime(d.next_attempt_at) : '—'],
          last && ['Last attempt', el('span', { id: 'delivery-last' }, fmt.attempt(last, broker).text + ', ' + fmtTime(last.at))],
          d.why && ['Why', el('span', { id: 'delivery-why', text: d.why })],
          ['Created', fmtTime(d.created_at)],
          ['Expires', fmtTime(d.expires_at)],
        ]),
        el('div', { class: 'actions' }, retry, redeliver)),
      el('section', { class: 'card' }, el('h2', { text: 'Timeline' }), timeline(d, broker),
        el('p', { class: 'muted', text: 'Redeliveries are found in the endpoint\'s list of deliveries between the attempts kept; one made long before its attempt may not show.' })),
      request ? requestCard(request) : null,
      payloadCard(d, endpoint, payload, transformed, last, expiredAt),
      el('section', { class: 'card' }, el('h2', { text: 'Attempts' }),
        attempts.length === 0 ? el('p', { class: 'empty', text: 'No attempt yet.' }) :
          el('div', { class: 'table-wrap' }, el('table', { class: 'list', id: 'attempts' },
            el('thead', {}, el('tr', {}, ['#', 'At', outcome, 'Duration', 'Error', answer].map((h) => el('th', { scope: 'col', text: h })))),
            el('tbody', {}, attempts)))));
  }

  // payloadCard is the body a delivery sends: the event, or, for an endpoint with a transformation, the
  // body it makes of the event (rebuilt with the transformation as it is now: the page says when the
  // endpoint changed after the last attempt); a skipped delivery's is the event it was given.
  function payloadCard(d, endpoint, payload, transformed, last, expiredAt) {
    const since = last ? last.at : d.created_at;
    const changed = transformed && endpoint.updated_at && new Date(endpoint.updated_at) > new Date(since);
    const note = transformed ? 'The event as its endpoint\'s transformation reshapes it: the body sent and signed. ' +
      (changed ? 'The endpoint was changed at ' + fmtTime(endpoint.updated_at) + ', after this delivery\'s last attempt: this body is rebuilt with its transformation as it is now, which may not be the one that ran.'
        : 'Rebuilt from the event with the endpoint\'s transformation, unchanged since the delivery\'s last attempt.')
      : d.status === 'skipped' ? 'Nothing was sent: the endpoint\'s transformation gave null for this event, shown here as it was given.'
      : endpoint && endpoint.transform ? 'The event as accepted: the endpoint\'s transformation fails on it now, so this is not a body it sends.' : null;
    return el('section', { class: 'card' }, el('h2', { text: transformed ? 'Body sent' : d.status === 'skipped' || (endpoint && endpoint.transform) ? 'Event' : 'Payload' }),
      payload ? [note ? el('p', { class: 'muted', id: 'payload-note', text: note }) : null,
        el('pre', { id: 'payload', class: 'payload', text: JSON.stringify(payload, null, 2) })] :
        el('p', { class: 'empty', id: 'payload', text: expiredAt ? 'Payload expired on ' + fmtTime(expiredAt) + '.' : 'The payload has expired.' }));
  }

  // headState is what the first delivery of an order key is doing, in words.
  function headState(d) {
    if (d.status === 'failed') return 'failed, and holds the deliveries behind it until it is redelivered';
    if (d.status === 'success') return 'delivered';
    if (/circuit open/.test(d.last_error || '')) return 'waiting for the endpoint\'s next try, ' + fmtTime(d.next_attempt_at);
    if (d.attempts === 0) return 'being sent';
    return 'retrying after ' + d.attempts + (d.attempts === 1 ? ' attempt' : ' attempts') + ', next ' + fmtTime(d.next_attempt_at);
  }

  // queuePage is the queue of an ordered delivery's order key: its deliveries in the order they are
  // sent, the first one's state in words.
  async function queuePage(id) {
    const q = await api('GET', '/deliveries/' + enc(id) + '/queue');
    const rows = q.deliveries.map((d, i) => el('tr', { 'data-id': d.id, class: d.id === id ? 'current' : null },
      el('td', { 'data-label': 'Place', text: i === 0 ? 'first' : String(i + 1) }),
      el('td', { 'data-label': 'Event' }, el('a', { href: '#/deliveries/' + enc(d.id) }, el('code', { text: d.event_type })), el('div', { class: 'muted', text: d.event_id })),
      el('td', { 'data-label': 'Status' }, statusBadge(d.status)),
      el('td', { 'data-label': 'State', text: i === 0 ? headState(d) : 'waits for the one before it' }),
      el('td', { 'data-label': 'Created', text: fmtTime(d.created_at) })));
    render('Order key ' + q.order_key,
      el('p', { class: 'crumbs' }, el('a', { href: '#/deliveries/' + enc(id) }, '← Delivery')),
      el('p', { class: 'muted', id: 'queue-summary', text: q.length === 0 ? 'Nothing waits in this order key: every delivery of it is done.' :
        q.length + (q.length === 1 ? ' delivery' : ' deliveries') + ' of this order key, sent one at a time in the order their events were accepted' +
        (q.length > q.deliveries.length ? ' (the first ' + q.deliveries.length + ' shown)' : '') + '.' }),
      q.deliveries.length === 0 ? null : el('div', { class: 'table-wrap' }, el('table', { class: 'list', id: 'queue' },
        el('thead', {}, el('tr', {}, ['Place', 'Event', 'Status', 'State', 'Created'].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, rows))),
      el('div', { class: 'actions' }, button('Refresh', () => route(), { id: 'refresh' })));
  }

  return { deliveryPage, queuePage };
};
