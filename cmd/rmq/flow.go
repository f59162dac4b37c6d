package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/rmq-go/rmq"
)

// setupPause defines "rmq pause TOPIC".
func setupPause(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	return af.topicCommand(func(ctx context.Context, e *env, c *rmq.Client, topic string) error {
		if err := c.PauseTopic(ctx, topic); err != nil {
			return err
		}
		e.out.printf("paused topic %s: its consumers stop popping within a second; sends go on\n", topic)
		return nil
	})
}

// setupResume defines "rmq resume TOPIC".
func setupResume(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	return af.topicCommand(func(ctx context.Context, e *env, c *rmq.Client, topic string) error {
		if err := c.ResumeTopic(ctx, topic); err != nil {
			return err
		}
		e.out.printf("resumed topic %s\n", topic)
		return nil
	})
}

// setupLimit defines "rmq limit TOPIC RATE[/BURST]".
func setupLimit(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) != 2 {
			return usagef("want TOPIC and RATE[/BURST] (RATE 0 or \"off\": unlimited)")
		}
		if err := checkTopic(args[0]); err != nil {
			return err
		}
		limit, err := parseLimit(args[1])
		if err != nil {
			return err
		}
		c, done, err := af.connect(ctx)
		if err != nil {
			return err
		}
		defer done()
		if err := c.SetRateLimit(ctx, args[0], limit); err != nil {
			return limitError(err)
		}
		e.out.printf("topic %s: rate limit %s, across every consumer of the namespace\n", args[0], limit)
		return nil
	}
}

// maxDefaultBurst caps the burst a rate gives by default: past it, the rate
// would not fit an int (1e19) or the limiter's float counting of tokens.
const maxDefaultBurst = 1 << 53

// parseLimit reads RATE[/BURST]; the burst defaults to the rate (at least 1,
// at most maxDefaultBurst), and 0 or "off" means unlimited. A limit that
// SetRateLimit would refuse (a negative rate, a zero burst with a rate) is
// refused here, before anything connects to Redis, as a usage error carrying
// ErrInvalidRateLimit's message; so is a rate too small for a float64, which
// would read as 0 (unlimited).
func parseLimit(s string) (rmq.RateLimit, error) {
	if s == "off" || s == "0" {
		return rmq.RateLimit{}, nil
	}
	rate, burst, hasBurst := strings.Cut(s, "/")
	r, err := strconv.ParseFloat(rate, 64)
	if err != nil {
		return rmq.RateLimit{}, usagef("rate %q is not a number", rate)
	}
	if r == 0 && underflows(rate) {
		return rmq.RateLimit{}, usagef("rate %q is too small to be told from 0 (unlimited)", rate)
	}
	if r == 0 && !hasBurst {
		return rmq.RateLimit{}, nil // "0.0" as "0"
	}
	l := rmq.RateLimit{PerSecond: r, Burst: int(min(max(1, r), maxDefaultBurst))}
	if hasBurst {
		if l.Burst, err = strconv.Atoi(burst); err != nil {
			return rmq.RateLimit{}, usagef("burst %q is not a whole number", burst)
		}
	}
	if err := l.Validate(); err != nil {
		return rmq.RateLimit{}, limitError(err)
	}
	return l, nil
}

// underflows reports whether the number s, which reads as 0 in a float64,
// is not 0 ("1e-400").
func underflows(s string) bool {
	f, _, err := big.ParseFloat(s, 0, 64, big.ToNearestEven)
	return err == nil && f.Sign() != 0
}

// limitError turns ErrInvalidRateLimit into a usage error (exit 2) with its
// message, still matching rmq.ErrInvalidRateLimit; other errors pass
// unchanged.
func limitError(err error) error {
	if errors.Is(err, rmq.ErrInvalidRateLimit) {
		return &usageError{msg: strings.TrimPrefix(err.Error(), "rmq: "), err: err}
	}
	return err
}

// setupDelete defines "rmq delete TOPIC".
func setupDelete(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	force := fs.Bool("force", false, "delete the topic even with messages in it, and them with it")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	return af.topicCommand(func(ctx context.Context, e *env, c *rmq.Client, topic string) error {
		if !*yes {
			st, err := c.Stats(ctx, topic)
			if err != nil {
				return err
			}
			what := "it is empty"
			if n := st.Pending() + st.Prepare + st.Dead; n > 0 {
				what = fmt.Sprintf("it holds %s", plural(n, "message"))
			}
			fmt.Fprintf(e.stderr, "Delete topic %s of namespace %s (%s)? [y/N] ", topic, c.Namespace(), what)
			if !confirmed(ctx, e) {
				return errors.New("delete cancelled; nothing deleted")
			}
		}
		var opts []rmq.DeleteOption
		if *force {
			opts = append(opts, rmq.Force())
		}
		if err := c.DeleteTopic(ctx, topic, opts...); err != nil {
			if errors.Is(err, rmq.ErrTopicNotEmpty) {
				return fmt.Errorf("%w (use -force)", err)
			}
			return err
		}
		e.out.printf("deleted topic %s\n", topic)
		return nil
	})
}
