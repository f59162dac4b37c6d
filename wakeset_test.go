package rmq

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq/internal/rdb"
)

// payloads maps each publication's channel to its payload.
func payloads(pubs []rdb.Publication) map[string]string {
	m := make(map[string]string, len(pubs))
	for _, p := range pubs {
		m[p.Channel] = string(p.Payload)
	}
	return m
}

// One wake-up per topic names each slot once, in order of first appearance,
// with its earliest due time, past the 32 slots where the set starts to
// index; a reused set starts afresh.
func TestWakeSetKeepsTheEarliestDuePerSlot(t *testing.T) {
	a := &topicInfo{wake: "wake:a"}
	b := &topicInfo{wake: "wake:b"}
	var reqs []*sendReq
	var want []string
	for slot := range 40 {
		reqs = append(reqs, &sendReq{topic: a, slot: slot, dueMs: int64(1000 + slot)})
		want = append(want, fmt.Sprintf("%d:%d", slot, 500+slot))
	}
	for slot := range 40 { // the same slots again, earlier
		reqs = append(reqs, &sendReq{topic: a, slot: slot, dueMs: int64(500 + slot)})
	}
	reqs = append(reqs, &sendReq{topic: b, slot: 3, dueMs: 0}, &sendReq{topic: a, slot: 7, dueMs: 9000})

	var ws wakeSet
	pubs, buf := ws.publications(reqs, nil, nil)
	assert.Equal(t, map[string]string{"wake:a": strings.Join(want, ","), "wake:b": "3:0"}, payloads(pubs))
	assert.Equal(t, payloads(pubs), payloads(wakePublications(reqs)), "the one-off and the reused builder agree")

	pubs, _ = ws.publications([]*sendReq{{topic: b, slot: 7, dueMs: 5}, {topic: b, slot: 3, dueMs: 9}}, pubs[:0], buf)
	assert.Equal(t, map[string]string{"wake:b": "7:5,3:9"}, payloads(pubs))
}
