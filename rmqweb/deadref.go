package rmqweb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
)

// maxRawContent is the largest dead message content the topic page's forms
// carry whole (in URL-safe base64, field "content"); a larger one is named
// by its SHA-256 (field "sum"), so that the page does not grow with the
// contents it shows cut.
const maxRawContent = 1 << 10

// contentSum returns the hex SHA-256 of content, which names a large dead
// message in the forms.
func contentSum(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// deadBySum returns the content of the dead message of topic that sum
// names, in slot (-1: any), among those the topic page lists; nil when
// none of them is that message (gone, or no longer listed).
func (s *server) deadBySum(ctx context.Context, topic string, slot int, sum string) ([]byte, error) {
	want, err := hex.DecodeString(sum)
	if err != nil || len(want) != sha256.Size {
		return nil, &badInput{"sum is not a hex SHA-256"}
	}
	dead, err := s.c.DeadMessages(ctx, topic, deadShown)
	if err != nil {
		return nil, err
	}
	for _, d := range dead {
		if got := sha256.Sum256(d.Content); (slot < 0 || d.Slot == slot) && bytes.Equal(got[:], want) {
			return d.Content, nil
		}
	}
	return nil, nil
}
