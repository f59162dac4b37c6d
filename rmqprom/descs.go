package rmqprom

import "github.com/prometheus/client_golang/prometheus"

// descs are the descriptions of every metric the collector exposes; their
// names and labels are the package's contract.
type descs struct {
	sent, deliveries, redeliveries, dead *prometheus.Desc
	lateness, duration                   *prometheus.Desc
	backlog, oldestDue, owned, declined  *prometheus.Desc
	breaker, breakerOpened, heldBack     *prometheus.Desc
	breakerTransitions                   *prometheus.Desc
	paused, rateLimit                    *prometheus.Desc
	// The client's own counters (Client.Metrics), without labels.
	sendRetries, sendsAbandoned, redisErrors, fenced *prometheus.Desc
	sendWrites, sendsWritten, panics                 *prometheus.Desc
}

func newDescs() descs {
	topic := []string{"topic"}
	return descs{
		sent: prometheus.NewDesc("rmq_messages_sent_total",
			"Messages this process stored with Send and SendBatch.", topic, nil),
		deliveries: prometheus.NewDesc("rmq_deliveries_total",
			"Messages this process's consumers settled, by outcome: commit (the listener returned nil), fail (an error or a panic: rolled back), not_owner (ErrNotOwner: handed back unchanged), restored (popped but handed back unstarted).",
			[]string{"topic", "outcome"}, nil),
		redeliveries: prometheus.NewDesc("rmq_redeliveries_total",
			"Listener calls in this process for a message delivered before.", topic, nil),
		dead: prometheus.NewDesc("rmq_dead_total",
			"Messages that ran out of retries in this process's listeners.", topic, nil),
		lateness: prometheus.NewDesc("rmq_delivery_lateness_seconds",
			"Listener start minus due time, for first deliveries on RangeMerge and FixedTime topics in this process.", topic, nil),
		duration: prometheus.NewDesc("rmq_listener_duration_seconds",
			"How long this process's listener calls took.", topic, nil),
		backlog: prometheus.NewDesc("rmq_backlog_messages",
			"Messages the topic holds in Redis (every process of the namespace), by state: store (waiting or due), retry (waiting out a backoff), prepare (handed to a consumer), dead (out of retries).",
			[]string{"topic", "state"}, nil),
		oldestDue: prometheus.NewDesc("rmq_oldest_due_age_seconds",
			"How long the earliest due time still in store has passed, by the Redis clock (0 when nothing stored is due; always 0 on Priority topics).", topic, nil),
		owned: prometheus.NewDesc("rmq_owned_slots",
			"Slots of the topic this process consumes now.", topic, nil),
		declined: prometheus.NewDesc("rmq_declined_slots",
			"Slots of the topic this process declines now: their Redis Cluster master has not answered it for a few seconds, and the coordinator moves them to processes that reach it.", topic, nil),
		breaker: prometheus.NewDesc("rmq_breaker_state",
			"1 for the state this process's breaker of the topic is in (closed, open, half-open, off), 0 for the others.",
			[]string{"topic", "state"}, nil),
		breakerOpened: prometheus.NewDesc("rmq_breaker_opened_total",
			"Times this process's breaker of the topic opened (rmq_breaker_transitions_total{to=\"open\"}).", topic, nil),
		breakerTransitions: prometheus.NewDesc("rmq_breaker_transitions_total",
			"Moves of this process's breaker of the topic, by the state moved to: open (from closed, when the failures of the last 10 s pass the threshold; or from half-open, when a probe fails), half-open (the first slot turn once OpenFor has passed), closed (after 3 probes in a row succeeded).",
			[]string{"topic", "to"}, nil),
		heldBack: prometheus.NewDesc("rmq_held_back_total",
			"Slot turns held back: times a slot of the topic came up for a pop in this process and was not popped, by reason: pause, limit (no token of the rate limit), breaker (open, or half-open with its probe in flight). Counts turns, not messages: a paused slot counts about once a second whether or not messages wait in it.",
			[]string{"topic", "reason"}, nil),
		paused: prometheus.NewDesc("rmq_topic_paused",
			"1 while the topic is paused (PauseTopic, namespace-wide), else 0.", topic, nil),
		rateLimit: prometheus.NewDesc("rmq_rate_limit_per_second",
			"The topic's namespace-wide rate limit in messages per second (0: unlimited).", topic, nil),
		sendRetries: prometheus.NewDesc("rmq_send_retries_total",
			"Sends this process wrote again after a retryable failure (a broken connection, a redirection, a refusal such as LOADING).", nil, nil),
		sendsAbandoned: prometheus.NewDesc("rmq_sends_abandoned_total",
			"Sends of this process whose context ended while they waited to be written: they returned the context's error and stored nothing.", nil, nil),
		redisErrors: prometheus.NewDesc("rmq_consumer_redis_errors_total",
			"Failed Redis calls of this process's consumers (each followed by a backoff).", nil, nil),
		fenced: prometheus.NewDesc("rmq_fenced_pops_total",
			"Pops of this process that Redis refused because a newer owner holds the slot.", nil, nil),
		sendWrites: prometheus.NewDesc("rmq_send_writes_total",
			"Writes that put this process's queued Sends on the wire (one stream write or pipeline each; on a Cluster, one for all the masters a write reached; SendBatch not counted).", nil, nil),
		sendsWritten: prometheus.NewDesc("rmq_sends_written_total",
			"Sends those writes carried, retries included: its rate over rmq_send_writes_total's is the Sends per write.", nil, nil),
		panics: prometheus.NewDesc("rmq_listener_panics_total",
			"Listener calls of this process that panicked (counted as outcome fail in rmq_deliveries_total too).", nil, nil),
	}
}

// all returns every description.
func (d *descs) all() []*prometheus.Desc {
	return []*prometheus.Desc{d.sent, d.deliveries, d.redeliveries, d.dead, d.lateness, d.duration, d.backlog, d.oldestDue, d.owned, d.declined,
		d.breaker, d.breakerOpened, d.breakerTransitions, d.heldBack, d.paused, d.rateLimit,
		d.sendRetries, d.sendsAbandoned, d.redisErrors, d.fenced, d.sendWrites, d.sendsWritten, d.panics}
}
