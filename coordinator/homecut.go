package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/rmq-go/rmq/internal/rdb"
)

// errHomeCut is the failure of a leave's call to the coordinator's master
// that was not tried, since an earlier one went unanswered (homeCall).
var errHomeCut = errors.New("rmq: redis coordinator: not tried; the coordinator's master left an earlier call of the leave unanswered")

// homeCall runs call, a call to the coordinator's master (the namespace's
// keys). While the run leaves, once one such call went unanswered (a
// deadline, a dropped or refused connection) the others are not tried: each
// would wait out the client's timeouts in turn (about 5 s with go-redis's
// defaults), and what they would tell the group, the membership's expiry
// tells it anyway. Before the leave every call is tried.
func (r *redisRun) homeCall(ctx context.Context, call func(ctx context.Context) error) error {
	if !r.isLeaving() {
		return call(ctx)
	}
	if r.homeCut != nil {
		return fmt.Errorf("%w (%w)", errHomeCut, r.homeCut)
	}
	err := call(ctx)
	if rdb.Unanswered(err) {
		r.homeCut = err
	}
	return err
}
