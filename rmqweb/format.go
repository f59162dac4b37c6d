package rmqweb

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// maxShownContent is how many bytes of a message content a page shows.
const maxShownContent = 120

// printable returns content as a Go-quoted string (non-printable bytes and
// runes escaped, invalid UTF-8 as \x..), cut after maxShownContent bytes at
// a rune boundary with "…" and the full size appended.
func printable(content []byte) string {
	if len(content) <= maxShownContent {
		return strconv.Quote(string(content))
	}
	cut := maxShownContent
	for cut > maxShownContent-utf8.UTFMax && !utf8.RuneStart(content[cut]) {
		cut--
	}
	return strconv.Quote(string(content[:cut])) + fmt.Sprintf("… (%d bytes)", len(content))
}

// humanDuration formats d compactly: "850µs", "12.3ms", "4.2s", "3m20s",
// "5h3m", "2d4h".
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// relative formats t against now: "in 3.0s", "4m02s ago", "now".
func relative(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d > -time.Millisecond && d < time.Millisecond:
		return "now"
	case d > 0:
		return "in " + humanDuration(d)
	}
	return humanDuration(d) + " ago"
}

// clockTime formats t as a wall-clock time to the millisecond, UTC.
func clockTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// count formats n with thousands separators: 12,345,678.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// processes formats a number of processes: "1 process", "2 processes".
func processes(n int) string {
	if n == 1 {
		return "1 process"
	}
	return count(int64(n)) + " processes"
}

// rate formats a per-second rate: "0", "0.25", "12.5", "1,234".
func rate(perSecond float64) string {
	switch {
	case perSecond == 0:
		return "0"
	case perSecond < 10:
		return strconv.FormatFloat(perSecond, 'f', 2, 64)
	case perSecond < 100:
		return strconv.FormatFloat(perSecond, 'f', 1, 64)
	}
	return count(int64(perSecond + 0.5))
}
