// Package events records the node agent's events.orch.io/v1 Events: rate limited by --event-qps and
// --event-burst on the injected clock, repeated occurrences folded into a series as Kubernetes'
// client-go tools/events recorder does, and written in call order to an injected Sink.
//
// Eventf decides everything at once under one lock (the limiter, the fold, the event's name and
// times) and queues the write; Step performs queued writes in order and the series bookkeeping that
// is due on the clock. No goroutine stands between Eventf and the sink, so the same calls at the
// same fake times give the same writes. NextDeadline and Idle tell a simulator when the recorder
// has work; Run is the production loop around Step.
//
// A simulator drives it without goroutines: components call Eventf as they work; after each round
// the simulator calls Step until Idle, and advances the fake clock no further than NextDeadline
// (there is none while no event is cached). OnDrop hears every occurrence the rate limit drops.
//
// Standalone mode writes through LogSink, one JSON line per write; the Sink interface is the shape
// of the events.orch.io/v1 REST client (POST to create, PUT to update) that API-server mode will use.
package events
