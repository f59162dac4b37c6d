package failover_test

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// report logs the run (visible with -v): the deployment, a timeline per
// rowWidth, each slot's recovery, each group's rates and the totals.
func (r *failoverRun) report(rep *runReport) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, namespace %s, topic %q (%d slots), %d producers at %d msg/s, %d consumer threads",
		r.d.name, r.ns, topicName, topicSlots, producers, sendRate, consumeThreads)
	if r.v.replicaAck {
		fmt.Fprintf(&b, ", producer WithReplicaAck(1, %v)", replicaAckTimeout)
	}
	b.WriteString("\n")
	for _, n := range append(r.d.notes, r.notes...) {
		b.WriteString("  " + n + "\n")
	}
	fmt.Fprintf(&b, "  killed %s at %s; promotion of %s seen at %s (%s after the kill); producers stopped at %s; drain ended at %s; CPU steal %d jiffies\n",
		r.d.victim, secs(r.killed), r.newAddr, secs(r.promote), secs(r.promote-r.killed), secs(r.stopped), secs(r.drained), r.steal)
	b.WriteString(r.refusals())
	r.t.Log(b.String())
	r.t.Log(r.timeline(rep))
	r.t.Log(r.slotTable(rep))
	r.t.Log(r.totals(rep))
}

// timeline returns one row per rowWidth: Sends started, acknowledged and
// failed (by when they returned), deliveries (all and of the killed master's
// slots).
func (r *failoverRun) timeline(rep *runReport) string {
	rows := int(r.drained/rowWidth) + 1
	started, ok, okKilled, failed := make([]int, rows), make([]int, rows), make([]int, rows), make([]int, rows)
	in, inKilled := make([]int, rows), make([]int, rows)
	row := func(d time.Duration) int { return min(max(int(d/rowWidth), 0), rows-1) }
	for _, s := range rep.sends {
		started[row(r.since(s.start))]++
		i := row(r.since(s.end))
		switch {
		case s.err != nil:
			failed[i]++
		case rep.slots[s.slot].killed:
			ok[i]++
			okKilled[i]++
		default:
			ok[i]++
		}
	}
	for _, d := range rep.deliveries {
		i := row(r.since(d.at))
		in[i]++
		if rep.slots[d.slot].killed {
			inKilled[i]++
		}
	}
	refusedFrom, refusedTo, refused := r.states.window()
	if !refused {
		refusedFrom, refusedTo = never, never
	}
	var b strings.Builder
	b.WriteString("timeline (Sends acknowledged and failed by when they returned; deliveries by when the listener ran;\n")
	b.WriteString("in brackets: of the killed master's slots):\n")
	b.WriteString("      t   started     acknowledged    failed        delivered\n")
	for i := range rows {
		var marks []string
		from := time.Duration(i) * rowWidth
		for _, m := range []struct {
			at   time.Duration
			what string
		}{{r.killed, "KILL"}, {r.promote, "PROMOTION"}, {r.stopped, "producers stopped"},
			{refusedFrom, "cluster_state:fail"}, {refusedTo, "cluster_state:ok"}} {
			if m.at >= from && m.at < from+rowWidth {
				marks = append(marks, m.what+" at "+secs(m.at))
			}
		}
		mark := ""
		if len(marks) > 0 {
			mark = "  <- " + strings.Join(marks, ", ")
		}
		fmt.Fprintf(&b, "  %5.1fs %9d %7d (%5d) %9d %9d (%5d)%s\n",
			from.Seconds(), started[i], ok[i], okKilled[i], failed[i], in[i], inKilled[i], mark)
	}
	return b.String()
}

// slotTable returns each slot's master and recovery, and each group's rates.
func (r *failoverRun) slotTable(rep *runReport) string {
	var b strings.Builder
	b.WriteString("per slot, from the promotion to the first acknowledged Send and to the first delivery:\n")
	b.WriteString("  slot  master            killed  first ack   first delivery  lost")
	if r.v.replicaAck {
		b.WriteString("  first ack after the rejoined replica was online")
	}
	b.WriteString("\n")
	for i, s := range rep.slots {
		k := ""
		if s.killed {
			k = "yes"
		}
		fmt.Fprintf(&b, "  %4d  %-16s  %-6s  %-10s  %-14s  %4d", i, s.master, k, ms(s.firstOK), ms(s.firstIn), s.lost)
		if r.v.replicaAck {
			fmt.Fprintf(&b, "  %s", ms(s.firstOKRejoined))
		}
		b.WriteString("\n")
	}
	b.WriteString("per master's slot group, deliveries/s before the kill, from the kill to the promotion and after it:\n")
	for _, g := range rep.groups {
		k := "survived"
		if g.killed {
			k = "KILLED"
		}
		share := "-"
		if g.pre > 0 {
			share = fmt.Sprintf("%.0f%%", 100*g.outage/g.pre)
		}
		after := "-"
		if g.pre > 0 {
			after = fmt.Sprintf("%.0f%%", 100*g.after/g.pre)
		}
		fmt.Fprintf(&b, "  %-16s %-8s slots %v: %.0f/s before, %.0f/s during the %s outage (%s), %.0f/s in the %s after the promotion (%s)\n",
			g.master, k, g.slots, g.pre, g.outage, secs(g.outageWindow), share, g.after, secs(g.afterWindow), after)
	}
	if r.d.refusesUncovered {
		b.WriteString("  (the survivors' share is reported, not checked: with cluster-require-full-coverage yes\n" +
			"  every node refuses every command while the killed master's slots have no master)\n")
	}
	return b.String()
}

// refusals returns the lines on the spans in which the watched Cluster
// nodes reported cluster_state:fail (refusing every command); "" if none
// were watched.
func (r *failoverRun) refusals() string {
	cs := r.states
	if len(cs.nodes) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  cluster_state of the surviving masters %v, polled every %v from the kill until the producers stopped:\n",
		cs.nodes, statePoll)
	for _, n := range cs.nodes {
		var spans []string
		for _, f := range cs.refusals {
			if f.node != n {
				continue
			}
			if f.to == never {
				spans = append(spans, "fail from "+secs(f.from)+", still when the producers stopped")
				continue
			}
			spans = append(spans, fmt.Sprintf("fail from %s to %s (%s)", secs(f.from), secs(f.to), ms(f.to-f.from)))
		}
		if len(spans) == 0 {
			spans = append(spans, "ok throughout")
		}
		fmt.Fprintf(&b, "    %s: %s; %d polls without a reply\n", n, strings.Join(spans, ", "), cs.noReply[n])
	}
	if from, to, ok := cs.window(); ok && to != never {
		fmt.Fprintf(&b, "  CLUSTERDOWN window (the cluster refused every command): %s, from %s after the kill to %+d ms from when the promotion was seen\n",
			ms(to-from), ms(from-r.killed), (to - r.promote).Milliseconds())
	} else if ok {
		fmt.Fprintf(&b, "  CLUSTERDOWN window: from %s after the kill, not over when the producers stopped\n", ms(from-r.killed))
	} else {
		b.WriteString("  CLUSTERDOWN window: none (no surviving master reported cluster_state:fail)\n")
	}
	return b.String()
}

// totals returns the counts of the run.
func (r *failoverRun) totals(rep *runReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "totals: %d Sends, %d acknowledged, %d failed, %d not made (producer at %d in flight)\n",
		len(rep.sends), rep.acked, rep.failed, rep.skipped, maxInFlight)
	kinds := slices.SortedFunc(maps.Keys(rep.errKinds), func(a, c string) int {
		return cmp.Or(rep.errKinds[c]-rep.errKinds[a], strings.Compare(a, c))
	})
	for i, k := range kinds {
		if i == 8 {
			fmt.Fprintf(&b, "    … %d more kinds\n", len(kinds)-8)
			break
		}
		fmt.Fprintf(&b, "    %6d × %s\n", rep.errKinds[k], k)
	}
	fmt.Fprintf(&b, "  delivered %d distinct messages in %d deliveries: %d duplicates; %d failed Sends were delivered anyway\n",
		rep.deliveredDistinct, len(rep.deliveries), rep.duplicates, rep.failedDelivered)
	fmt.Fprintf(&b, "  lost (acknowledged, never delivered): %d — %d acknowledged before the kill, %d during the outage, %d after the promotion",
		len(rep.lost), rep.lostBeforeKill, rep.lostOutage, len(rep.lostAfterPromo))
	if len(rep.lost) > 0 {
		fmt.Fprintf(&b, "; e.g. %v", firstSeqs(rep.lost, 10))
	}
	return b.String()
}

func firstSeqs(seqs []int, n int) []string {
	out := make([]string, 0, n)
	for _, s := range seqs[:min(len(seqs), n)] {
		out = append(out, content(s))
	}
	return out
}

// secs formats an offset from t0 in seconds.
func secs(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// ms formats a recovery time, "never" for never.
func ms(d time.Duration) string {
	if d == never {
		return "never"
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}
