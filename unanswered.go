package rmq

import (
	"context"
	"errors"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// unansweredAfter is how long a failed call must have taken to count as
// unanswered whatever its error (unansweredNote).
const unansweredAfter = time.Second

// unansweredNote returns what a call that took took and ended with err says
// of whether Redis leaves calls unanswered, given the note so far (was). No
// when it succeeded or Redis answered with an error; yes when it failed for
// want of an answer (rdb.Unanswered) or in any way after unansweredAfter or
// more, since go-redis reports a cancellation only once the attempt under
// way ended; unchanged for a quicker cancellation, which says nothing. A
// shutdown skips the calls it could do without (the presence entry's
// removal, Close's last metrics flush) while the note says yes: each would
// wait out the client's timeouts whatever its ctx.
func unansweredNote(was bool, err error, took time.Duration) bool {
	switch {
	case err == nil:
		return false
	case rdb.Unanswered(err) || took >= unansweredAfter:
		return true
	case errors.Is(err, context.Canceled):
		return was
	}
	return false
}
