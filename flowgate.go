package rmq

import "time"

// admit decides how many messages (at most want) a slot of t may pop now,
// whether that pop is a half-open breaker's probe, or else until when the
// topic's flow control holds it back: a pause (or flow control not read
// yet), an open breaker, or a rate limit without a token.
func (t *thread) admit(want int, now time.Time) (n int, probe bool, until time.Time) {
	f := &t.sub.flow
	if !f.known.Load() || f.paused.Load() {
		if f.known.Load() {
			f.heldPause.Add(1)
		}
		return 0, false, now.Add(controlRefresh) // a resume wakes every slot at once
	}
	if b := f.breaker; b != nil {
		ok, p, u := b.allow(now)
		if !ok {
			f.heldBreaker.Add(1)
			return 0, false, u
		}
		if p {
			want, probe = 1, true
		}
	}
	n, u := f.limiter.take(want, t.sub.share(), now)
	if n == 0 {
		if probe {
			f.breaker.probeDone()
		}
		f.heldLimit.Add(1)
		return 0, false, u
	}
	return n, probe, time.Time{}
}

// admitted returns what a pop admitted by admit did not use: the tokens of
// messages that were not due, and a probe that delivered nothing.
func (t *thread) admitted(n, popped int, probe bool) {
	f := &t.sub.flow
	f.limiter.giveBack(n - popped)
	if probe && popped == 0 {
		f.breaker.probeDone()
	}
}

// heldBack reports whether the topic's flow control stops deliveries now (a
// pause, or an open breaker): a batch in hand then hands its unstarted
// messages back.
func (s *subscription) heldBack() bool {
	f := &s.flow
	return f.paused.Load() || (f.breaker != nil && f.breaker.isOpen())
}
