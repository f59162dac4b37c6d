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
		if err != nil && !errors.Is(err, rmq.ErrUnreadableTopic) {
			return err
		}
		if len(topics) == 0 && err == nil {
			e.out.printf("no topics in namespace %q\n", c.Namespace())
			return nil
		}
		rows := make([][]string, len(topics))
		for i, t := range topics {
			rows[i] = []string{t.Name, t.Type.String(), itoa(int64(t.SlotAmount))}
		}
		e.out.table([]string{"NAME", "TYPE", "SLOTS"}, rows)
		return err // the topics it could read are listed; the error names the others
	}
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
	printed := fs.Bool("printed", false, "each CONTENT is written as \"rmq dead\" prints it: a Go-quoted string or hex:…")
	return func(ctx context.Context, e *env, args []string) error {
		topic, err := topicArg(args, true)
		if err != nil {
			return err
		}
		var contents [][]byte
		for _, a := range args[1:] {
			b := []byte(a)
			if *printed {
				if b, err = parseContent(a); err != nil {
					return err
				}
			}
			if len(b) == 0 {
				// no message has an empty content: a selection of nothing
				// (an unset shell variable) must not read as "requeue none"
				return usagef("CONTENT %d is empty (requeue every dead message with no CONTENT)", len(contents)+1)
			}
			contents = append(contents, b)
		}
		c, done, err := af.connect(ctx)
		if err != nil {
			return err
		}
		defer done()
		line := newProgressLine(e.stderr, "requeued")
		n, err := c.RequeueDeadProgress(ctx, topic, line.update, contents...)
		line.finish()
		if err != nil {
			return partly("requeued", n, topic, err)
		}
		e.out.printf("requeued %s of topic %s\n", plural(n, "dead message"), topic)
		return nil
	}
}

// setupPurge defines "rmq purge TOPIC".
func setupPurge(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	return af.topicCommand(func(ctx context.Context, e *env, c *rmq.Client, topic string) error {
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
			if !confirmed(ctx, e) {
				return errors.New("purge cancelled; nothing deleted")
			}
		}
		line := newProgressLine(e.stderr, "purged")
		n, err := c.PurgeDeadProgress(ctx, topic, line.update)
		line.finish()
		if err != nil {
			return partly("purged", n, topic, err)
		}
		e.out.printf("purged %s of topic %s\n", plural(n, "dead message"), topic)
		return nil
	})
}

// partly is the error of a requeue or purge (verb: "requeued", "purged")
// that failed after it had moved n dead messages of topic: it says how many,
// as a large one cut short (Ctrl-C, a lost connection) leaves them moved.
func partly(verb string, n int64, topic string, err error) error {
	if n <= 0 {
		return err
	}
	return fmt.Errorf("%s %s of topic %s before it failed (run it again for the rest): %w", verb, plural(n, "dead message"), topic, err)
}

// confirmed reads one line from stdin and reports whether it says yes; if
// ctx ends first (Ctrl-C at the prompt), it says no at once. The read goes
// on in the background then, until stdin ends or the process exits.
func confirmed(ctx context.Context, e *env) bool {
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		got <- answer{line, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-ctx.Done():
		a.err = ctx.Err()
	}
	if a.err != nil {
		fmt.Fprintln(e.stderr) // end the prompt's line
	}
	switch strings.ToLower(strings.TrimSpace(a.line)) {
	case "y", "yes":
		return true
	}
	return false
}

// topicArg returns the TOPIC argument; more arguments are allowed only when
// more is true. A name no topic can have is bad usage.
func topicArg(args []string, more bool) (string, error) {
	switch {
	case len(args) == 0:
		return "", usagef("missing TOPIC")
	case len(args) > 1 && !more:
		return "", usagef("unexpected argument %q after TOPIC", args[1])
	}
	return args[0], checkTopic(args[0])
}
