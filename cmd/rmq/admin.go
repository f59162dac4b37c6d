package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/rmq-go/rmq"
)

// setupTopics defines "rmq topics".
func setupTopics(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		c, done, err := af.connect(ctx)
		if err != nil {
			return err
		}
		defer done()
		topics, err := c.Topics(ctx)
		if err != nil {
			return err
		}
		if len(topics) == 0 {
			e.out.printf("no topics in namespace %q\n", c.Namespace())
			return nil
		}
		rows := make([][]string, len(topics))
		for i, t := range topics {
			rows[i] = []string{t.Name, t.Type.String(), itoa(int64(t.SlotAmount))}
		}
		e.out.table([]string{"NAME", "TYPE", "SLOTS"}, rows)
		return nil
	}
}

// setupStats defines "rmq stats TOPIC".
func setupStats(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	all := fs.Bool("all", false, "list every slot, not only the non-empty ones")
	return func(ctx context.Context, e *env, args []string) error {
		topic, err := topicArg(args, false)
		if err != nil {
			return err
		}
		c, done, err := af.connect(ctx)
		if err != nil {
			return err
		}
		defer done()
		st, err := c.Stats(ctx, topic)
		if err != nil {
			return err
		}
		printStats(e.out, c.Namespace(), st, *all)
		return nil
	}
}

// printStats prints the totals of st and a table of its slots (the
// non-empty ones unless all).
func printStats(p *printer, namespace string, st rmq.Stats, all bool) {
	p.printf("topic %s (namespace %s, %d slots)\n", st.Topic, namespace, len(st.Slots))
	state := "consuming"
	if st.Paused {
		state = "PAUSED"
	}
	p.printf("%s; rate limit %s\n", state, st.RateLimit)
	p.table(nil, [][]string{
		{"store", itoa(st.Store), "waiting to be due, or due and not yet popped"},
		{"retry", itoa(st.Retry), "failed, waiting out a retry backoff"},
		{"prepare", itoa(st.Prepare), "handed to a consumer, not yet settled"},
		{"dead", itoa(st.Dead), "out of retries"},
	})
	var rows [][]string
	for _, s := range st.Slots {
		if all || s.Store+s.Retry+s.Prepare+s.Dead > 0 {
			rows = append(rows, []string{itoa(int64(s.Slot)), itoa(s.Store), itoa(s.Retry), itoa(s.Prepare), itoa(s.Dead)})
		}
	}
	p.printf("\n")
	if len(rows) == 0 {
		p.printf("every slot is empty\n")
		return
	}
	p.table([]string{"SLOT", "STORE", "RETRY", "PREPARE", "DEAD"}, rows)
}

// setupDead defines "rmq dead TOPIC".
func setupDead(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	limit := fs.Int("limit", 100, "list at most `N` messages (0: all)")
	return func(ctx context.Context, e *env, args []string) error {
		topic, err := topicArg(args, false)
		if err != nil {
			return err
		}
		if *limit < 0 {
			return usagef("-limit %d is negative", *limit)
		}
		c, done, err := af.connect(ctx)
		if err != nil {
			return err
		}
		defer done()
		dead, err := c.DeadMessages(ctx, topic, *limit)
		if err != nil {
			return err
		}
		printDead(e.out, dead)
		if *limit > 0 && len(dead) == *limit {
			e.out.printf("(stopped at -limit %d; -limit 0 lists all)\n", *limit)
		}
		return nil
	}
}

// printDead prints dead messages as a table.
func printDead(p *printer, dead []rmq.DeadMessage) {
	if len(dead) == 0 {
		p.printf("no dead messages\n")
		return
	}
	rows := make([][]string, len(dead))
	for i, d := range dead {
		rows[i] = []string{d.Topic, itoa(int64(d.Slot)), formatTime(d.Died), formatContent(d.Content)}
	}
	p.table([]string{"TOPIC", "SLOT", "DIED", "CONTENT"}, rows)
}

// setupRequeue defines "rmq requeue TOPIC [CONTENT…]".
func setupRequeue(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	return func(ctx context.Context, e *env, args []string) error {
		topic, err := topicArg(args, true)
		if err != nil {
			return err
		}
		var contents [][]byte
		for _, a := range args[1:] {
			contents = append(contents, []byte(a))
		}
		c, done, err := af.connect(ctx)
		if err != nil {
			return err
		}
		defer done()
		n, err := c.RequeueDead(ctx, topic, contents...)
		if err != nil {
			return err
		}
		e.out.printf("requeued %s of topic %s\n", plural(n, "dead message"), topic)
		return nil
	}
}

// setupPurge defines "rmq purge TOPIC".
func setupPurge(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	return func(ctx context.Context, e *env, args []string) error {
		topic, err := topicArg(args, false)
		if err != nil {
			return err
		}
		c, done, err := af.connect(ctx)
		if err != nil {
			return err
		}
		defer done()
		if !*yes {
			st, err := c.Stats(ctx, topic)
			if err != nil {
				return err
			}
			if st.Dead == 0 {
				e.out.printf("no dead messages in topic %s\n", topic)
				return nil
			}
			fmt.Fprintf(e.stderr, "Delete %s of topic %s in namespace %s? [y/N] ",
				plural(st.Dead, "dead message"), topic, c.Namespace())
			if !confirmed(e) {
				return errors.New("purge cancelled; nothing deleted")
			}
		}
		n, err := c.PurgeDead(ctx, topic)
		if err != nil {
			return err
		}
		e.out.printf("purged %s of topic %s\n", plural(n, "dead message"), topic)
		return nil
	}
}

// confirmed reads one line from stdin and reports whether it says yes.
func confirmed(e *env) bool {
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil {
		fmt.Fprintln(e.stderr) // end the prompt's line
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// topicArg returns the TOPIC argument; more arguments are allowed only when
// more is true.
func topicArg(args []string, more bool) (string, error) {
	switch {
	case len(args) == 0:
		return "", usagef("missing TOPIC")
	case len(args) > 1 && !more:
		return "", usagef("unexpected argument %q after TOPIC", args[1])
	}
	return args[0], nil
}
