// Package churn is the bookkeeping of the churn test (test/churn): the log
// record each listener call of a worker process appends, reading the logs
// back, and the analyses run on them: overlapping owned calls of one slot,
// sent messages never processed, duplicate and not-owner counts, and how long
// each membership change took until every slot was served again.
//
// Times are wall-clock Unix nanoseconds: every worker runs on the same
// machine, so their clocks agree.
package churn
