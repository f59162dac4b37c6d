package rdb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// RESP2 encoding, the reply reading the send stream needs, and the pushes a
// sharded subscription reads. Commands are written as arrays of bulk
// strings; replies are read whole, and only their error, if any, is kept:
// every command the stream sends answers with an integer or OK.

// ReplyError is an error reply from Redis, such as "WRONGTYPE …" or "OOM …".
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// dropsConnection reports whether the reply says this server cannot take
// writes (a replica after a failover, a server loading or without master),
// so the connection must be dropped and dialled afresh.
func (e ReplyError) dropsConnection() bool {
	for _, p := range []string{"READONLY ", "LOADING ", "MASTERDOWN "} {
		if strings.HasPrefix(string(e), p) {
			return true
		}
	}
	return false
}

// errProtocol is a reply that is not valid RESP.
var errProtocol = errors.New("rdb: bad reply from redis")

func appendArrayHeader(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// appendBulk writes s as a bulk string.
func appendBulk[T string | []byte](b []byte, s T) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// appendBulkFloat writes f as Redis reads a score: the shortest decimal that
// parses back to f exactly.
func appendBulkFloat(b []byte, f float64) []byte {
	var num [32]byte
	return appendBulk(b, strconv.AppendFloat(num[:0], f, 'f', -1, 64))
}

// appendCommand writes one command of string arguments.
func appendCommand(b []byte, args ...string) []byte {
	b = appendArrayHeader(b, len(args))
	for _, a := range args {
		b = appendBulk(b, a)
	}
	return b
}

// appendZAdd writes ZADD key [NX] score member.
func appendZAdd(b []byte, e *Entry) []byte {
	if e.NX {
		b = appendArrayHeader(b, 5)
		b = append(b, "$4\r\nZADD\r\n"...)
		b = appendBulk(b, e.Key)
		b = append(b, "$2\r\nNX\r\n"...)
	} else {
		b = appendArrayHeader(b, 4)
		b = append(b, "$4\r\nZADD\r\n"...)
		b = appendBulk(b, e.Key)
	}
	b = appendBulkFloat(b, e.Score)
	return appendBulk(b, e.Member)
}

// appendWait writes WAIT replicas timeout-ms.
func appendWait(b []byte, a ReplicaAck) []byte {
	b = append(b, "*3\r\n$4\r\nWAIT\r\n"...)
	var num [20]byte
	b = appendBulk(b, strconv.AppendInt(num[:0], int64(a.Replicas), 10))
	return appendBulk(b, strconv.AppendInt(num[:0], a.Timeout.Milliseconds(), 10))
}

// appendPublish writes PUBLISH channel payload, or SPUBLISH shard payload
// when sharded and p has a sharded channel.
func appendPublish(b []byte, p *Publication, sharded bool) []byte {
	if sharded && p.Shard != "" {
		b = append(b, "*3\r\n$8\r\nSPUBLISH\r\n"...)
		b = appendBulk(b, p.Shard)
	} else {
		b = append(b, "*3\r\n$7\r\nPUBLISH\r\n"...)
		b = appendBulk(b, p.Channel)
	}
	return appendBulk(b, p.Payload)
}

// readReply reads one whole reply. n is the value of an integer reply (0 for
// any other); replyErr is the reply itself when it is an error reply; err is
// an I/O or protocol failure, after which the connection is unusable.
func readReply(rd *bufio.Reader) (n int64, replyErr error, err error) {
	line, err := readLine(rd)
	if err != nil {
		return 0, nil, err
	}
	switch line[0] {
	case '-':
		return 0, ReplyError(line[1:]), nil
	case '+':
		return 0, nil, nil
	case ':':
		v, ok := parseInteger(line[1:])
		if !ok {
			return 0, nil, fmt.Errorf("%w: %q", errProtocol, line)
		}
		return v, nil, nil
	case '$':
		size, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return 0, nil, fmt.Errorf("%w: %q", errProtocol, line)
		}
		if size >= 0 {
			if _, err := rd.Discard(size + 2); err != nil {
				return 0, nil, err
			}
		}
		return 0, nil, nil
	case '*':
		size, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return 0, nil, fmt.Errorf("%w: %q", errProtocol, line)
		}
		for range max(size, 0) {
			if _, _, err := readReply(rd); err != nil {
				return 0, nil, err
			}
		}
		return 0, nil, nil
	}
	return 0, nil, fmt.Errorf("%w: %q", errProtocol, line)
}

// parseInteger parses a RESP integer without allocating (every reply the
// stream reads is one).
func parseInteger(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// readLine returns the next line without its CRLF; the slice is valid until
// the next read.
func readLine(rd *bufio.Reader) ([]byte, error) {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: line longer than %d bytes", errProtocol, rd.Size())
		}
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: %q", errProtocol, line)
	}
	return line[:len(line)-2], nil
}

// readPush reads one push (an array of bulk strings and integers) into parts,
// the slices valid until the next read, and returns how many parts it had
// (those beyond len(parts) are read and dropped). An error reply is
// returned as a ReplyError.
func readPush(rd *bufio.Reader, parts [][]byte) (int, error) {
	line, err := readLine(rd)
	if err != nil {
		return 0, err
	}
	switch line[0] {
	case '-':
		return 0, ReplyError(line[1:])
	case '*':
	default:
		return 0, fmt.Errorf("%w: %q", errProtocol, line)
	}
	n, ok := parseInteger(line[1:])
	if !ok || n < 0 {
		return 0, fmt.Errorf("%w: %q", errProtocol, line)
	}
	for i := range int(n) {
		line, err := readLine(rd)
		if err != nil {
			return 0, err
		}
		var part []byte
		switch line[0] {
		case ':':
			part = slices.Clone(line[1:])
		case '$':
			size, ok := parseInteger(line[1:])
			if !ok || size < 0 {
				return 0, fmt.Errorf("%w: %q", errProtocol, line)
			}
			buf := make([]byte, size+2)
			if _, err := io.ReadFull(rd, buf); err != nil {
				return 0, err
			}
			part = buf[:size]
		default:
			return 0, fmt.Errorf("%w: %q", errProtocol, line)
		}
		if i < len(parts) {
			parts[i] = part
		}
	}
	return int(n), nil
}
