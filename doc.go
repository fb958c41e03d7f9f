/*
Package webhooks delivers signed webhooks from a Go service, once per (webhook, event id) pair, however
often and however concurrently the event is dispatched, by any number of replicas sharing one Redis or
Redis Cluster. Requests follow [Standard Webhooks]; Redis holds all state.

This walk-through goes from an empty Redis to a delivered, verified webhook, then to tenants, ordered
events and running it in production. What the library guarantees, with the tests that prove each
promise, is in [docs/guarantees.md]; the README has the options and the other documents.

# Creating a Dispatcher

A [Dispatcher] is made from a go-redis client (redis.NewClient, redis.NewClusterClient or
redis.NewFailoverClient) and [Options]. The zero Options are the production defaults, and [New] does no
I/O: it fails only for options out of bounds.

	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	d, err := webhooks.New(rdb, webhooks.Options{})
	if err != nil {
		panic(err)
	}

# Registering a webhook

A [Webhook] is an endpoint URL and the event types it subscribes to: exact types, "prefix.*" at any
depth, or "*". Create returns it with its signing secret ("whsec_…"), which goes to the subscriber.

	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{
		URL:    "https://example.com/hooks",
		Events: []string{"invoice.*"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("give the subscriber", w.Secret)

By default the egress guard refuses private, loopback and metadata addresses; a test with a receiver on
loopback sets [Options.AllowPrivateNetworks].

# Dispatching an event

An [Event] carries your own id. Dispatch sends it to every subscribed webhook, making the first attempt
before it returns; dispatching the same id again is a duplicate and sends nothing.

	results, err := d.Dispatch(ctx, webhooks.Event{
		Type: "invoice.paid",
		ID:   "evt_1",
		Data: map[string]any{"invoice": "inv_42", "total": 120},
	})
	if errors.Is(err, webhooks.ErrNotAccepted) {
		// Some pair is not recorded (Redis failed): dispatch the same event again, which is safe.
	}
	for _, r := range results {
		if r.Accepted() {
			fmt.Println(r.WebhookID, r.Delivery.Status, r.Duplicate)
		}
	}

A nil error means every pair is durably recorded. An HTTP failure is not an error: the delivery is
pending, with its LastError and NextAttemptAt. A producer that emits many events calls
[Dispatcher.Enqueue] instead, which records the pairs and returns, leaving every attempt to the
worker.

# Running the worker

[Dispatcher.Run] makes the retries and the enqueued attempts. Every replica runs it; there is no leader.
Cancel its context to stop it: Run returns once the attempts in flight are recorded.

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := d.Run(ctx); err != nil {
		log.Print(err)
	}
	d.CloseIdleConnections()

A failed attempt is retried on [Options.RetrySchedule], over about a day by default; after the last
retry the delivery is failed, and only [Dispatcher.Redeliver] sends it again. A webhook that keeps
failing has its circuit opened, so it slows no one else.

# Verifying on the receiver

The subscriber checks each request with [Verify] and its secret, or with package
github.com/smartdrop/webhooks/verify, which imports the standard library only, takes several keys
during a rotation and has an http.Handler middleware. Every attempt of one delivery carries
the same webhook-id header, so a receiver can drop the rare repeat that a crash can cause.

	func handle(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := webhooks.Verify(secret, r.Header, body); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
	}

In your own tests, package webhookstest is a receiver that verifies, records and answers by script, and
checks that an event arrived exactly once.

# Tenants

A SaaS gives each customer its own endpoints. A webhook and an event with a Tenant meet only each other,
and event ids are scoped by tenant. A customer manages its own endpoints through the portal, with a token
signed by Options.PortalKey:

	d.Webhooks().Create(ctx, webhooks.Webhook{Tenant: "acme", URL: acmeURL, Events: []string{"order.*"}})
	d.Enqueue(ctx, webhooks.Event{Tenant: "acme", Type: "order.paid", ID: "ord_1", Data: order})
	token, err := d.PortalToken("acme", time.Hour)
	mux.Handle("/portal/", http.StripPrefix("/portal", d.Portal()))

A webhook's Filter selects events by their data, its Headers add request headers, and its Auth
authenticates requests to an endpoint behind a gateway.

# Event types

The catalog of event types ([Dispatcher.EventTypes]) tells subscribers what each type's data holds,
and holds producers to it: Dispatch and Enqueue refuse data that fails its type's JSON Schema, with
ErrInvalidEvent naming the path and keyword, before anything is claimed. Tenants read the catalog in
the portal; both handlers publish it as an OpenAPI 3.1 webhooks document ([docs/event-types.md]).

	d.EventTypes().Create(ctx, webhooks.EventType{Name: "order.paid", Schema: json.RawMessage(`{"required": ["total"]}`)})

# Ordered events

Events with the same OrderKey are delivered to each webhook one at a time, in the order accepted, each
after the one before it succeeded or failed for good; other keys never wait.

	d.Enqueue(ctx, webhooks.Event{Type: "invoice.created", ID: "evt_1", OrderKey: "inv_42"})
	d.Enqueue(ctx, webhooks.Event{Type: "invoice.paid", ID: "evt_2", OrderKey: "inv_42"}) // after evt_1

# Operating it

Redis must be set up to keep what it acknowledged ([docs/operations.md] says how). Then:

  - [Dispatcher.Handler] is an admin API and web UI for operators, to mount behind your own
    authentication; [Dispatcher.Portal] is the same for one tenant.
  - [Dispatcher.Stats] reads the backlog; [Options.Hooks] and [Options.Logger] report each outcome;
    the nested modules otelwebhooks and promwebhooks plug in OpenTelemetry and Prometheus.
  - [WebhookRepo.Health] shows a webhook's circuit; [Dispatcher.Recover] re-sends a window of failed
    deliveries; [Dispatcher.ReplayMissing] sends a new endpoint the events it missed.
  - [Options.OperationalEvents] tells your operators and customers, through webhooks, when a circuit
    opens or a delivery fails.

The runnable examples below show most of these; the package example QuickStart is the README's quick
start. Read on in [docs/delivery.md] (how delivery behaves), [docs/operations.md] (Redis, retention,
telemetry), [docs/failover.md] (Cluster), [docs/security.md], [docs/tenants.md] and [docs/admin.md].

[Standard Webhooks]: https://www.standardwebhooks.com/
[docs/guarantees.md]: https://github.com/smartdrop/webhooks/blob/main/docs/guarantees.md
[docs/delivery.md]: https://github.com/smartdrop/webhooks/blob/main/docs/delivery.md
[docs/operations.md]: https://github.com/smartdrop/webhooks/blob/main/docs/operations.md
[docs/failover.md]: https://github.com/smartdrop/webhooks/blob/main/docs/failover.md
[docs/security.md]: https://github.com/smartdrop/webhooks/blob/main/docs/security.md
[docs/tenants.md]: https://github.com/smartdrop/webhooks/blob/main/docs/tenants.md
[docs/admin.md]: https://github.com/smartdrop/webhooks/blob/main/docs/admin.md
[docs/event-types.md]: https://github.com/smartdrop/webhooks/blob/main/docs/event-types.md
*/
package webhooks
